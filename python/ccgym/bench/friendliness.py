"""The ``friendliness`` bench table: the share of a bottleneck one flow takes against flows of
another kind, and flows of one kind with different RTTs (the ``qtcp-friendliness`` suite;
docs/qtcp.md, "fairness between kinds").

A suite scenario of this table is a dumbbell whose ``flows`` list says which flows compete: a
flow with its own ``cc`` table keeps it (the competitors, e.g. NewReno or CUBIC), every flow
without one runs the suite's method (flow 0 always does: it is the flow under test). A method is
a CC name or a QTCP variant (:data:`ccgym.qtcp.VARIANTS`), whose flows learn online from fresh
learners through :func:`ccgym.qtcp.run_qtcp` while the others keep their CC. Two flows without a
``cc`` table on access links of different delays (``topology.host_delays``) measure the method's
RTT fairness against itself.

Scores (:func:`scores`, from the per-flow delivery rates after :data:`SKIP_S`): flow 0's share
of the flows' summed rate, that share over the fair share 1 / N (``share_ratio``: 1 is friendly,
above 1 takes more than its share; with two flows of one kind on different RTTs, above 1 means
the short-RTT flow 0 takes more), Jain's index over all the flows, the summed throughput and the
mean bottleneck queue.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ccgym.bench.pareto import HIGHER, LOWER, Band

if TYPE_CHECKING:
    from ccgym.result import Result

SCORES_VERSION = 1
"""Bumped when the scores change (part of the bench cache key)."""

SKIP_S = 100.0
"""Seconds left out at the start (slow start, a learner's first moves), at most half the run."""

FRIENDLINESS_METRICS: dict[str, Band] = {
    "jain": (HIGHER, 0.01),
    "thr_mbps": (HIGHER, 0.5),
    "queue_kb": (LOWER, 2.0),
}
"""Pareto metrics of the ``friendliness`` table: (direction, tolerance band)."""


def scores(result: Result) -> dict[str, float | None]:
    """The table's metrics of one run (see the module docstring)."""
    from ccgym.qtcp.phases import _bottleneck, _seconds, jain

    flows = result.series["flows"]
    ft = flows["time_s"].to_numpy(float)
    fid = flows["flow_id"].to_numpy(int)
    fr = flows["rate_gbps"].to_numpy(float) * 1e3
    lo = min(SKIP_S, 0.5 * _seconds(result.scenario["duration"]))
    n = int(result.summary["flows"]["count"])
    rates = [float(fr[(ft > lo) & (fid == f)].mean()) if ((ft > lo) & (fid == f)).any() else 0.0
             for f in range(n)]  # fmt: skip
    total = float(np.sum(rates))
    t, queue, _ = _bottleneck(result)
    share = rates[0] / total if total > 0 else None
    return {
        "share": share,
        "share_ratio": None if share is None else share * n,
        "jain": jain(rates) if total > 0 else None,
        "thr_mbps": total,
        "queue_kb": float(queue[t > lo].mean() / 1e3) if (t > lo).any() else None,
    }


def method_flows(data: dict[str, Any], method: str) -> str | None:
    """Puts ``method`` on every flow of ``data`` without a ``cc`` table (in place); returns the
    QTCP variant's name when the method is one (its flows become agent flows), else None."""
    from ccgym.qtcp import VARIANTS

    learned = method if method in VARIANTS else None
    table = {"algorithm": "agent" if learned else method}
    for w in data.get("workload") or []:
        if w.get("kind") != "flows":
            raise ValueError("friendliness: the workload must be explicit flows lists")
        for f in w["flows"]:
            f.setdefault("cc", dict(table))
    first = ((data.get("workload") or [{}])[0].get("flows") or [{}])[0]
    if first.get("cc") != table:
        raise ValueError("friendliness: flow 0 is the flow under test: give it no cc table")
    return learned


def run_friendliness_job(scenario: str, overrides: Sequence[str], method: str) -> dict[str, Any]:
    """One run of the ``friendliness`` table (in a worker process): metrics, summary, the
    figures' traces and the report's run series."""
    import ccgym
    from ccgym.bench.qtcp import traces
    from ccgym.bench.series import compact_series, force_flow_series
    from ccgym.qtcp import run_qtcp
    from ccgym.scenario import load_scenario

    t0 = time.perf_counter()
    data, _ = load_scenario(scenario, list(overrides))
    force_flow_series(data)
    learned = method_flows(data, method)
    log = None
    if learned is not None:
        run = run_qtcp(data, learned, cc=None)
        result, log = run.result, run.log
    else:
        result = ccgym.run(data)
    return {
        "metrics": scores(result),
        "summary": result.summary,
        "traces": traces(result, log),
        "wall_s": time.perf_counter() - t0,
        "series": compact_series(result),
    }
