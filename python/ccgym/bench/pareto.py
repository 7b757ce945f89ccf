"""Pareto marking of result rows over metrics with directions and tolerance bands.

Row A dominates row B when A is at least as good as B on every metric (values within the
metric's tolerance count as equal) and strictly better, beyond the tolerance, on at least one.
A missing metric (None or NaN) is the worst possible value; two missing values are equal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

HIGHER = "higher"
LOWER = "lower"

METRICS: dict[str, tuple[str, float]] = {
    "SU": (HIGHER, 1.0),  # switch utilisation, percentage points
    "FR": (HIGHER, 2.0),  # fairness (min/max of per-host bandwidth), percentage points
    "QL": (LOWER, 0.5),  # queue latency, us
    "drops_mb": (LOWER, 0.01),  # dropped MB
}
"""The ADPG benchmark's Pareto metrics: name -> (direction, absolute tolerance)."""


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def compare(a: Any, b: Any, direction: str, tol: float = 0.0) -> int:
    """+1 if ``a`` is better than ``b`` beyond ``tol``, -1 if worse, 0 if equal within ``tol``."""
    if direction not in (HIGHER, LOWER):
        raise ValueError(f"direction must be {HIGHER!r} or {LOWER!r}, not {direction!r}")
    ma, mb = _missing(a), _missing(b)
    if ma or mb:
        return 0 if ma and mb else (-1 if ma else 1)
    diff = float(a) - float(b)
    if direction == LOWER:
        diff = -diff
    if diff > tol:
        return 1
    if diff < -tol:
        return -1
    return 0


def dominates(
    a: Mapping[str, Any], b: Mapping[str, Any], metrics: Mapping[str, tuple[str, float]]
) -> bool:
    """Whether row ``a`` dominates row ``b`` over ``metrics`` (name -> (direction, tol))."""
    better = False
    for name, (direction, tol) in metrics.items():
        c = compare(a.get(name), b.get(name), direction, tol)
        if c < 0:
            return False
        better = better or c > 0
    return better


def pareto_mask(
    rows: Sequence[Mapping[str, Any]], metrics: Mapping[str, tuple[str, float]] | None = None
) -> list[bool]:
    """For every row, True when no other row dominates it."""
    metrics = METRICS if metrics is None else metrics
    return [
        not any(j != i and dominates(other, row, metrics) for j, other in enumerate(rows))
        for i, row in enumerate(rows)
    ]


def pareto_front(
    rows: Sequence[Mapping[str, Any]], metrics: Mapping[str, tuple[str, float]] | None = None
) -> list[Mapping[str, Any]]:
    """The rows that no other row dominates, in their original order."""
    return [row for row, keep in zip(rows, pareto_mask(rows, metrics), strict=True) if keep]
