"""Pareto marking of result rows over metrics with directions and tolerance bands.

Row A dominates row B when A is at least as good as B on every metric (values within the
metric's tolerance count as equal) and strictly better, beyond the tolerance, on at least one.
A missing metric (None or NaN) is the worst possible value; two missing values are equal.

A metric's tolerance band is absolute, ``(direction, tol)``, or absolute and relative,
``(direction, tol, rel)``: two values are equal when they differ by at most
``max(tol, rel x the larger magnitude)``. The relative band suits metrics that span orders of
magnitude across scenarios (completion times, recovery times).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

HIGHER = "higher"
LOWER = "lower"

Band: TypeAlias = tuple[str, float] | tuple[str, float, float]
"""A metric's direction and tolerance band: ``(direction, tol)`` or ``(direction, tol, rel)``."""

METRICS: dict[str, Band] = {
    "SU": (HIGHER, 1.0),  # switch utilisation, percentage points
    "FR": (HIGHER, 2.0),  # fairness (min/max of per-host bandwidth), percentage points
    "QL": (LOWER, 0.5),  # queue latency, us
    "drops_mb": (LOWER, 0.01),  # dropped MB
}
"""The ADPG benchmark's Pareto metrics: name -> (direction, absolute tolerance)."""

LONG_SHORT_METRICS: dict[str, Band] = {
    "RT": (LOWER, 5e-5, 0.1),  # recovery time, s: one 50 us sample interval or 10 %
    "DR": (LOWER, 0.1),  # dropped bandwidth, Gb/s
    "LBW": (HIGHER, 1.0),  # long flow's bandwidth, percentage points
    "FCT": (LOWER, 1.0, 0.05),  # short messages' mean completion time, us: 1 us or 5 %
}
"""The long-short benchmark's Pareto metrics (see :mod:`ccgym.bench.longshort`)."""


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def compare(a: Any, b: Any, direction: str, tol: float = 0.0, rel: float = 0.0) -> int:
    """+1 if ``a`` is better than ``b`` beyond the band, -1 if worse, 0 if equal within it.

    The band is ``max(tol, rel * max(|a|, |b|))``.
    """
    if direction not in (HIGHER, LOWER):
        raise ValueError(f"direction must be {HIGHER!r} or {LOWER!r}, not {direction!r}")
    if tol < 0 or rel < 0:
        raise ValueError(f"tolerances must not be negative, got tol={tol}, rel={rel}")
    ma, mb = _missing(a), _missing(b)
    if ma or mb:
        return 0 if ma and mb else (-1 if ma else 1)
    tol = max(tol, rel * max(abs(float(a)), abs(float(b))))
    diff = float(a) - float(b)
    if direction == LOWER:
        diff = -diff
    if diff > tol:
        return 1
    if diff < -tol:
        return -1
    return 0


def dominates(a: Mapping[str, Any], b: Mapping[str, Any], metrics: Mapping[str, Band]) -> bool:
    """Whether row ``a`` dominates row ``b`` over ``metrics`` (name -> band)."""
    better = False
    for name, band in metrics.items():
        c = compare(a.get(name), b.get(name), *band)
        if c < 0:
            return False
        better = better or c > 0
    return better


def pareto_mask(
    rows: Sequence[Mapping[str, Any]], metrics: Mapping[str, Band] | None = None
) -> list[bool]:
    """For every row, True when no other row dominates it."""
    metrics = METRICS if metrics is None else metrics
    return [
        not any(j != i and dominates(other, row, metrics) for j, other in enumerate(rows))
        for i, row in enumerate(rows)
    ]


def pareto_front(
    rows: Sequence[Mapping[str, Any]], metrics: Mapping[str, Band] | None = None
) -> list[Mapping[str, Any]]:
    """The rows that no other row dominates, in their original order."""
    return [row for row, keep in zip(rows, pareto_mask(rows, metrics), strict=True) if keep]
