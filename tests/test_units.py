"""Times in Python are read by the core's own parser (``ccgym.units``), so a scenario, a training
config and the tools that read them never disagree on a unit."""

from __future__ import annotations

import pytest

pytest.importorskip("ccgym._sim")

from ccgym.units import parse_time_ps, parse_time_s  # noqa: E402


@pytest.mark.parametrize(
    ("value", "ps"),
    [
        ("20ms", 20_000_000_000),
        ("1.5 us", 1_500_000),
        ("1.5µs", 1_500_000),
        ("80ps", 80),
        ("2s", 2_000_000_000_000),
        ("0.5", 500_000_000_000),  # a string without a unit is seconds, as in scenario files
        (3, 3_000_000_000_000),  # and so is a number
        (1e-05, 10_000_000),
        ("1e3ns", 1_000_000),
    ],
)
def test_times_as_the_core_reads_them(value: object, ps: int) -> None:
    assert parse_time_ps(value) == ps
    assert parse_time_s(value) == ps / 1e12


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("30 parsecs", "unknown time unit"),
        ("fast", "expected a number"),
        ("-1ms", "negative"),
        (float("inf"), "expected a number"),
        (True, "must be a time"),
        ([1], "must be a time"),
    ],
)
def test_bad_times_say_why(value: object, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_time_ps(value)
