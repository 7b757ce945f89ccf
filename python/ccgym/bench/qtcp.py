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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ccgym.bench.pareto import HIGHER, LOWER, Band

if TYPE_CHECKING:
    from ccgym.result import Result

SCORES_VERSION = 2
"""Bumped when the scores change (part of the bench cache key)."""

QTCP_METHODS = ("qtcp", "qtcp-aimd", "qtcp-mimd")
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


TRACE_POINTS = 1000
"""Most time bins of a run's traces (the figures): bins of ``max(1 s, duration / 1000)``."""

JAIN_WINDOW_S = 10.0
"""Window of Jain's index over time (:func:`ccgym.qtcp.phases.jain_over_time`)."""


def _binned(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> list[float | None]:
    """Mean of ``v`` per bin of ``edges`` (by sample time ``t``); None for an empty bin."""
    k = np.searchsorted(edges, t, side="right") - 1
    ok = (k >= 0) & (k < len(edges) - 1) & np.isfinite(v)
    total = np.bincount(k[ok], weights=v[ok], minlength=len(edges) - 1)
    count = np.bincount(k[ok], minlength=len(edges) - 1)
    return [float(x / c) if c else None for x, c in zip(total, count, strict=True)]


def traces(result: Result, log: Mapping[str, np.ndarray] | None = None) -> dict[str, Any]:
    """The time series of the QTCP papers' figures for one run, binned (:data:`TRACE_POINTS`)
    so that they fit a cache record: per flow the window (``cwnd_pk``, packets, from the
    decision log of a learnt run; absent for classic CCs, whose window the core does not
    sample) and the delivery rate (``thr_mbps``), the bottleneck queue (``queue_pk``, packets)
    and Jain's index over the active flows in windows of :data:`JAIN_WINDOW_S` (``jain_t_s``,
    ``jain``). Bins where a flow is not active hold None."""
    from ccgym.qtcp.phases import _bottleneck, _seconds, jain_over_time

    data = result.scenario
    duration = _seconds(data["duration"])
    width = max(1.0, duration / TRACE_POINTS)
    edges = np.arange(0.0, duration + width / 2, width)
    packets = data.get("packets") or {}
    pkt_bytes = float(packets.get("payload", 1024)) + float(packets.get("header", 64))
    t, queue, _ = _bottleneck(result)
    flows = result.series["flows"]
    ft = flows["time_s"].to_numpy(float)
    fid = flows["flow_id"].to_numpy(int)
    fr = flows["rate_gbps"].to_numpy(float) * 1e3
    ids = sorted(set(fid.tolist()))
    out: dict[str, Any] = {
        "t_s": [float(x) for x in (edges[:-1] + edges[1:]) / 2],
        "queue_pk": _binned(t, queue / pkt_bytes, edges),
        "thr_mbps": {str(f): _binned(ft[fid == f], fr[fid == f], edges) for f in ids},
    }
    if log is not None and len(log["time_s"]):
        lt, lf = np.asarray(log["time_s"]), np.asarray(log["flow"])
        cw = np.asarray(log["cwnd_bytes"]) / float(packets.get("payload", 1024))
        out["cwnd_pk"] = {
            str(f): _binned(lt[lf == f], cw[lf == f], edges) for f in sorted(set(lf.tolist()))
        }
    jt, jv = jain_over_time(result, window_s=JAIN_WINDOW_S)
    out["jain_t_s"] = [float(x) for x in jt]
    out["jain"] = [float(x) if np.isfinite(x) else None for x in jv]
    return out


def _cut_after_peak(ax: Any, values: np.ndarray) -> str:
    """Scales ``ax`` (from 0) to the per-flow ``values`` (flows x samples) after their highest
    peak, when that peak would flatten them: a slow start's overshoot and the windows NewReno's
    recovery inflates after it reach thousands of packets (and a burst hundreds of Mb/s) for a
    few seconds, and scaled to them the learnt windows would be a flat line at the bottom.
    Returns the note for the panel's title ("" when nothing is cut)."""
    ax.set_ylim(bottom=0)
    if not np.isfinite(values).any():
        return ""
    peak = int(np.nanargmax(np.nanmax(values, axis=0)))
    later = values[:, peak + 1 :]
    basis = later if np.isfinite(later).sum() >= 10 else values
    top = max(1.25 * float(np.nanpercentile(basis, 95)), 1.0)
    if np.nanmax(values) <= top:
        return ""
    ax.set_ylim(0, top)
    return f" (axis cut at {top:.0f}: slow start and its recovery go beyond)"


def trace_figure(rec: Mapping[str, Any], title: str = "") -> Any:
    """The QTCP-AIMD paper's figures for one run record (its ``traces``): each flow's window,
    each flow's throughput, the bottleneck queue and Jain's index over time, stacked on one
    time axis (a :class:`matplotlib.figure.Figure`, drawn without ``pyplot``)."""
    from matplotlib.figure import Figure

    tr = rec["traces"]
    t = np.asarray(tr["t_s"], dtype=float)

    def arr(v: Sequence[float | None]) -> np.ndarray:
        return np.array([np.nan if x is None else x for x in v], dtype=float)

    fig = Figure(figsize=(8.0, 8.0), layout="constrained")
    ax_w, ax_r, ax_q, ax_j = fig.subplots(4, 1, sharex=True)
    for ax in (ax_w, ax_r, ax_q, ax_j):
        ax.grid(True, color="0.85", linewidth=0.6)
    cwnd = tr.get("cwnd_pk")
    if cwnd:
        windows = np.vstack([arr(v) for v in cwnd.values()])  # (flows, T)
        for f, v in cwnd.items():
            ax_w.plot(t, arr(v), linewidth=0.9, label=f"flow {f}")
        ax_w.legend(loc="upper right", fontsize="x-small", ncols=4)
        ax_w.set_title(
            "window of each flow" + _cut_after_peak(ax_w, windows), fontsize="medium", loc="left"
        )
    else:
        ax_w.text(
            0.5, 0.5, "window not sampled for classic CCs (rates below)",
            transform=ax_w.transAxes, ha="center", va="center", color="0.4",
        )  # fmt: skip
    ax_w.set_ylabel("cwnd (packets)")
    for f, v in tr["thr_mbps"].items():
        ax_r.plot(t, arr(v), linewidth=0.9, label=f"flow {f}")
    rates = np.vstack([arr(v) for v in tr["thr_mbps"].values()]) if tr["thr_mbps"] else None
    cut = _cut_after_peak(ax_r, rates) if rates is not None else ""
    ax_r.set_ylabel("throughput (Mb/s)")
    ax_r.set_title("delivery rate of each flow" + cut, fontsize="medium", loc="left")
    ax_q.plot(t, arr(tr["queue_pk"]), color="tab:blue", linewidth=0.9)
    ax_q.set_ylim(bottom=0)
    ax_q.set_ylabel("queue (packets)")
    ax_q.set_title("bottleneck queue", fontsize="medium", loc="left")
    jt = np.asarray(tr["jain_t_s"], dtype=float)
    ax_j.plot(jt, arr(tr["jain"]), color="black", linewidth=0.9, marker=".", markersize=2)
    ax_j.set_ylim(0, 1.05)
    ax_j.set_ylabel("Jain's index")
    ax_j.set_title(
        f"Jain's index over the active flows ({JAIN_WINDOW_S:g} s windows)",
        fontsize="medium",
        loc="left",
    )
    ax_j.set_xlabel("time (s)")
    if len(t):
        ax_j.set_xlim(0, t[-1] + (t[1] - t[0] if len(t) > 1 else 1.0) / 2)
    if title:
        fig.suptitle(title, fontsize="large")
    return fig


def report_section(records: Sequence[Mapping[str, Any]]) -> str:
    """The HTML report's section of the papers' figures: per scenario and method, the first
    seed's window, throughput, queue and Jain's index over time."""
    import html

    from ccgym.bench.plots import figure_png, png_data_uri

    first: dict[tuple[str, str], Mapping[str, Any]] = {}
    for rec in records:
        if rec.get("traces"):
            key = (rec["label"], rec["method"])
            if key not in first or rec["seed"] < first[key]["seed"]:
                first[key] = rec
    if not first:
        return ""
    parts = [
        "<h2>Windows, throughput, queue and fairness over time</h2>",
        '<p class="note">The QTCP-AIMD paper\'s figures, per scenario and method, first seed: '
        "each flow's window (learnt methods: from their decision log), each flow's delivery "
        f"rate and the bottleneck queue (means over {TRACE_POINTS}-point bins), and Jain's "
        f"index over the active flows in {JAIN_WINDOW_S:g} s windows (windows that straddle a "
        "sender joining or leaving are left out).</p>",
    ]
    for (label, method), rec in first.items():
        name = f"{label} · {method} · seed {rec['seed']}"
        png = figure_png(trace_figure(rec, name))
        parts.append(
            f'<figure><img src="{png_data_uri(png)}" alt="{html.escape(name)}">'
            f"<figcaption>{html.escape(name)}</figcaption></figure>"
        )
    return "\n".join(parts)


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
    log = None
    if method in QTCP_METHODS:
        run = run_qtcp(data, method)
        result, log = run.result, run.log
    else:
        result = ccgym.run(data, cc=method)
    return {
        "metrics": scores(result),
        "summary": result.summary,
        "traces": traces(result, log),
        "wall_s": time.perf_counter() - t0,
        "series": compact_series(result),
    }
