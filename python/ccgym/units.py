"""Times as scenario files and training configs write them (docs/scenarios.md, "Units"), read
by the simulator's own parser so that Python and the core never disagree on a unit."""

from __future__ import annotations

from typing import Any


def parse_time_ps(value: Any) -> int:
    """A time in picoseconds: a number of seconds, or a string such as ``"20ms"``, ``"1.5 us"``
    or ``"2s"`` (a string without a unit is seconds too).

    Raises:
        ValueError: not a time (no number, an unknown unit, negative, infinite, too large); the
            message says which.
    """
    from ccgym._sim import parse_time_ps as core_parse

    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError('must be a time such as "20ms"')
    # repr keeps every digit of a float ("1e-05"), which the core's parser reads back exactly.
    return int(core_parse(value if isinstance(value, str) else repr(float(value))))


def parse_time_s(value: Any) -> float:
    """A time (:func:`parse_time_ps`) in seconds."""
    return parse_time_ps(value) / 1e12
