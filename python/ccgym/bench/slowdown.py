"""Slowdown-by-size scores: the ``slowdown`` bench table (the ``receiver-driven`` suite).

A run's scores come from its summary's breakdown blocks (``[metrics] breakdown``, see
docs/scenarios.md): per flow-size bucket ``i`` (0 = the smallest flows) the mean, median and p99
FCT slowdown of the flows that started in the window and completed (``sd{i}_mean``,
``sd{i}_p50``, ``sd{i}_p99``) and the share of them that completed (``done{i}``, %); the large
flows' goodput (``large_gbps``: mean over completed large flows of size / FCT) and the rate at
which all large flows delivered in the window (``large_window_gbps``); switch drops in packets
(``drops``) and, of them, rank-queue evictions (``evicted``); data packets cut to their header
by trimming switches (``trimmed``: NDP; not drops, None in runs that do not trim).

Beside the scores, :func:`size_profile` bins every scored flow's slowdown by size on a log
scale, finer than the buckets, for the slowdown-against-size plots
(:func:`ccgym.bench.plots.slowdown_size_figure`); it is stored in the run record as
``size_profile``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ccgym.bench.pareto import HIGHER, LOWER, Band

BUCKETS = 4
"""Buckets the table shows: the default edges 10 KB, 100 KB, 1 MB give four."""

BUCKET_TITLES: tuple[str, ...] = ("<=10KB", "10-100KB", "0.1-1MB", ">1MB")
"""Column titles of the buckets for the default edges."""

SLOWDOWN_METRICS: dict[str, Band] = {
    "sd0_mean": (LOWER, 0.02, 0.05),  # smallest flows' mean slowdown: 0.02 or 5 %
    "sd0_p99": (LOWER, 0.05, 0.1),  # and their p99: 0.05 or 10 %
    "large_gbps": (HIGHER, 0.1, 0.05),  # large flows' goodput, Gb/s: 0.1 or 5 %
}
"""The table's Pareto metrics: name -> band (see :mod:`ccgym.bench.pareto`)."""

PROFILE_BINS_PER_DECADE = 4
"""Log bins of flow size per decade in :func:`size_profile`."""


def _num(x: Any) -> float | None:
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return None if math.isnan(x) else float(x)


def scores(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """The ``slowdown`` table's metrics of one run, from its summary (all None without the
    breakdown blocks)."""
    by_size = summary.get("by_size") or {}
    buckets = by_size.get("buckets") or []
    out: dict[str, float | None] = {}
    for i in range(BUCKETS):
        b = buckets[i] if i < len(buckets) else {}
        sd = b.get("slowdown") or {}
        for stat in ("mean", "p50", "p99"):
            out[f"sd{i}_{stat}"] = _num(sd.get(stat))
        flows, done = _num(b.get("flows")), _num(b.get("completed"))
        out[f"done{i}"] = done / flows * 100 if flows and done is not None else None
    large = by_size.get("large_flows") or {}
    out["large_gbps"] = _num(large.get("goodput_gbps_mean"))
    out["large_window_gbps"] = _num(large.get("window_gbps"))
    losses = summary.get("losses") or {}
    out["drops"] = _num(losses.get("drops_packets"))
    out["evicted"] = _num(losses.get("evicted_packets"))
    out["trimmed"] = _num(losses.get("trimmed_packets"))
    return out


def size_profile(
    flow_info: Any, window_s: tuple[float, float], bins_per_decade: int = PROFILE_BINS_PER_DECADE
) -> dict[str, list[float | None]]:
    """Slowdown against flow size: the flows that started in the window and completed, binned
    by size on a log scale (``bins_per_decade`` bins per decade of bytes).

    Returns ``{"size_bytes": [geometric centre of each bin], "flows": [...], "mean": [...],
    "p99": [...]}`` over the bins that hold at least one flow (JSON-ready lists).
    """
    size = np.asarray(flow_info["size_bytes"], dtype=float)
    start = np.asarray(flow_info["start_s"], dtype=float)
    slow = np.asarray(flow_info["slowdown"], dtype=float)
    ok = np.isfinite(size) & np.isfinite(slow) & (start >= window_s[0]) & (start < window_s[1])
    size, slow = size[ok], slow[ok]
    out: dict[str, list[float | None]] = {"size_bytes": [], "flows": [], "mean": [], "p99": []}
    if not len(size):
        return out
    idx = np.floor(np.log10(np.maximum(size, 1.0)) * bins_per_decade).astype(int)
    for k in np.unique(idx):
        sel = slow[idx == k]
        out["size_bytes"].append(float(10 ** ((k + 0.5) / bins_per_decade)))
        out["flows"].append(float(len(sel)))
        out["mean"].append(float(sel.mean()))
        out["p99"].append(float(np.quantile(sel, 0.99)))
    return out
