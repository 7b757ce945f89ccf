"""The ``qtcp`` bench table: QTCP, QTCP-AIMD, NewReno and CUBIC on the QTCP papers' dumbbells,
scored per phase (shared/specs/scenarios.md section 4; docs/qtcp.md).

A run of a method in :data:`QTCP_METHODS` is an online-learning run of :func:`ccgym.qtcp.run_qtcp`
(fresh learners, the job's seed); any other method is a classic CC run with ``ccgym.run``. Both are
scored from their result alone (:mod:`ccgym.qtcp.phases`): bottleneck throughput, mean queue and
RTT averaged over the phases (each weighted by its length, the first :data:`SKIP_S` seconds of
each, at most a fifth of it, left out), Jain's index over the active senders in the first phase
with k senders (k = 1 to 4: the joining half of qtcp-aimd-dumbbell) and the lowest Jain's index
of any phase with two senders or more.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ccgym.bench.pareto import HIGHER, LOWER, Band

if TYPE_CHECKING:
    from ccgym.result import Result

SCORES_VERSION = 1
"""Bumped when the scores change (part of the bench cache key)."""

QTCP_METHODS = ("qtcp", "qtcp-aimd")
"""Bench methods that run the learnt variants (:data:`ccgym.qtcp.VARIANTS`)."""

SKIP_S = 100.0
"""Seconds left out at the start of each phase (learning and convergence after a change), at
most :data:`SKIP_FRACTION` of the phase."""

SKIP_FRACTION = 0.2
"""The largest part of a phase left out at its start."""

MAX_SENDERS = 4
"""Senders of the largest phase scored on its own (``jain1`` ... ``jain4``)."""

QTCP_METRICS: dict[str, Band] = {
    "thr_mbps": (HIGHER, 0.5),  # bottleneck throughput, Mb/s
    "queue_kb": (LOWER, 2.0),  # mean bottleneck queue, KB
    "jain_min": (HIGHER, 0.01),  # the least fair phase
}
"""Pareto metrics of the ``qtcp`` table: (direction, tolerance band)."""


def learner_code_hash() -> str:
    """A hash of the learner's and the driver's source (part of the cache key of a learnt run:
    the native module's hash does not cover them)."""
    import ccgym.qtcp

    h = hashlib.sha256()
    for path in sorted(Path(ccgym.qtcp.__file__).parent.glob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def scores(result: Result) -> dict[str, float | None]:
    """The ``qtcp`` table's metrics of one run (see the module docstring)."""
    from ccgym.qtcp.phases import phase_table

    rows = phase_table(result, skip_s=SKIP_S, skip_fraction=SKIP_FRACTION)
    weights = np.array([r["end_s"] - r["skip_from_s"] for r in rows])

    def mean(key: str) -> float | None:
        vals = np.array([r[key] for r in rows], dtype=float)
        ok = np.isfinite(vals) & (weights > 0)
        return float(np.average(vals[ok], weights=weights[ok])) if ok.any() else None

    out: dict[str, float | None] = {
        "thr_mbps": mean("throughput_mbps"),
        "queue_kb": mean("queue_kb"),
        "rtt_ms": mean("rtt_ms"),
    }
    for k in range(1, MAX_SENDERS + 1):
        first = next((r for r in rows if r["senders"] == k), None)
        out[f"jain{k}"] = None if first is None or not np.isfinite(first["jain"]) else first["jain"]
    multi = [r["jain"] for r in rows if r["senders"] >= 2 and np.isfinite(r["jain"])]
    out["jain_min"] = min(multi) if multi else None
    return out


def run_qtcp_job(scenario: str, overrides: Sequence[str], method: str) -> dict[str, Any]:
    """One run of the ``qtcp`` table (in a worker process): metrics, summary and the series of
    the report's run figures."""
    import ccgym
    from ccgym.bench.series import compact_series, force_flow_series
    from ccgym.qtcp import run_qtcp
    from ccgym.scenario import load_scenario

    t0 = time.perf_counter()
    data, _ = load_scenario(scenario, list(overrides))
    force_flow_series(data)
    if method in QTCP_METHODS:
        result = run_qtcp(data, method).result
    else:
        result = ccgym.run(data, cc=method)
    return {
        "metrics": scores(result),
        "summary": result.summary,
        "wall_s": time.perf_counter() - t0,
        "series": compact_series(result),
    }
