"""Weighted-share scores: the ``weighted-shares`` bench table (the ``hopass-weighted`` suite).

The scenario's first workload lists the *weighted* flows (long flows, one per traffic class); the
others are background traffic. A weighted flow's target share of their total is its class's
weight over the sum of the weights of all weighted flows, the weight being the class's
``switch.weights`` entry (what the WRR at the switches gives it; HOPASS's receivers use the same
weights through ``host.hopass_weights``). The scores:

* ``s1`` .. ``s8``: each weighted flow's throughput in the metrics window, scaled so that the
  shares add up to the sum of the weights (the HOPASS paper's 1:1:2:4 reads as 1, 1, 2, 4);
* ``share_err``: the largest relative error of a share against its target, %;
* ``weighted_gbps``: the weighted flows' total throughput;
* ``small_mean``, ``small_p99``: FCT slowdown of the background flows that completed;
* ``drops``: switch drops, packets.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ccgym.bench.pareto import HIGHER, LOWER, Band

SHARES = 8
"""Share columns the table has room for (``s1`` .. ``s8``)."""

WEIGHTED_METRICS: dict[str, Band] = {
    "share_err": (LOWER, 0.5, 0.1),  # 0.5 percentage points or 10 %
    "small_mean": (LOWER, 0.02, 0.05),
    "weighted_gbps": (HIGHER, 0.1, 0.02),
}
"""The table's Pareto metrics: name -> band (see :mod:`ccgym.bench.pareto`)."""


def weighted_flow_count(scenario: Mapping[str, Any]) -> int:
    """How many flows the scenario's first workload lists (the weighted flows)."""
    workloads = scenario.get("workload") or []
    if not workloads or workloads[0].get("kind") != "flows":
        raise ValueError(
            "a weighted-shares table needs the weighted flows as the first workload, "
            'of kind "flows"'
        )
    return len(workloads[0]["flows"])


def class_weights(scenario: Mapping[str, Any], classes: np.ndarray) -> np.ndarray:
    """The WRR weight of each class in ``classes`` (``switch.weights``, default all 1)."""
    weights = (scenario.get("switch") or {}).get("weights") or []
    return np.array([float(weights[c - 1]) if c - 1 < len(weights) else 1.0 for c in classes])


def scores(scenario: Mapping[str, Any], summary: Mapping[str, Any], flows: Any) -> dict[str, Any]:
    """The table's metrics of one run; ``flows`` is the run's flow table (``flow_info``)."""
    n = weighted_flow_count(scenario)
    first = scenario["workload"][0]
    classes = np.array([int(e.get("class", first.get("class", 1))) for e in first["flows"]])
    target = class_weights(scenario, classes)
    rates = np.asarray(flows["window_gbps"], dtype=float)[:n]
    total = float(rates.sum())
    out: dict[str, Any] = {f"s{i + 1}": None for i in range(SHARES)}
    if total > 0:
        shares = rates / total * target.sum()
        for i, s in enumerate(shares[:SHARES]):
            out[f"s{i + 1}"] = float(s)
        out["share_err"] = float(np.max(np.abs(shares / target - 1.0)) * 100.0)
    else:
        out["share_err"] = None
    out["weighted_gbps"] = total
    slow = np.asarray(flows["slowdown"], dtype=float)[n:]
    slow = slow[np.isfinite(slow)]
    out["small_mean"] = float(slow.mean()) if slow.size else None
    out["small_p99"] = float(np.percentile(slow, 99)) if slow.size else None
    out["small_done"] = int(slow.size)
    out["drops"] = float((summary.get("network") or {}).get("drops_packets", 0))
    return out
