"""Per-phase scores of a dumbbell run whose senders join and leave (the QTCP-AIMD evaluation):
bottleneck throughput, mean queue, RTT and Jain's index over the senders active in each phase,
and Jain's index over time. They read only a run's result (summary and series), so they score
any CC the same way: QTCP flows from :func:`ccgym.qtcp.run_qtcp` (``run.result``) and classic
ones from ``ccgym.run``. The building blocks of the ``qtcp`` bench table and figures.

    from ccgym.qtcp.phases import phase_table
    rows = phase_table(ccgym.run("qtcp-aimd-dumbbell", cc="newreno"))
    [(r["senders"], r["jain"]) for r in rows]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ccgym.result import Result
from ccgym.units import parse_time_s as _seconds

__all__ = ["Phase", "jain", "jain_over_time", "phase_table", "phases"]

Phase = tuple[float, float, tuple[int, ...]]
"""(start s, end s, ids of the flows active throughout)."""


def jain(x: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index of the values ``x`` (1 = equal; NaN for none)."""
    a = np.asarray(x, dtype=np.float64)
    if len(a) == 0 or not np.any(a):
        return float("nan")
    return float(a.sum() ** 2 / (len(a) * (a**2).sum()))


def phases(scenario: Mapping[str, Any]) -> list[Phase]:
    """The phases of a scenario whose senders are an explicit ``flows`` list: the intervals
    between consecutive start and stop times, each with the flows active throughout it (flow ids
    in workload order). Phases without a flow are left out."""
    duration = _seconds(scenario["duration"])
    spans: list[tuple[float, float]] = []
    for w in scenario.get("workload") or []:
        if w.get("kind") != "flows":
            raise ValueError("phases: the workload must be explicit flows lists")
        for f in w["flows"]:
            start = _seconds(f.get("start", 0))
            stop = _seconds(f["stop"]) if "stop" in f else duration
            spans.append((start, min(stop, duration)))
    cuts = sorted({0.0, duration, *(t for s in spans for t in s if 0.0 < t < duration)})
    out: list[Phase] = []
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        active = tuple(i for i, (s, e) in enumerate(spans) if s <= a and e >= b)
        if active:
            out.append((a, b, active))
    return out


def _bottleneck(result: Result) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample times, queue bytes and transmit rate (b/s) of the run's bottleneck port."""
    port = int(result.summary["bottleneck"]["id"])
    ports = result.series["ports"]
    sel = ports[ports["port_id"] == port]
    return (
        sel["time_s"].to_numpy(float),
        sel["queue_bytes"].to_numpy(float),
        sel["tx_gbps"].to_numpy(float) * 1e9,
    )


def phase_table(
    result: Result,
    scenario: Mapping[str, Any] | None = None,
    skip_s: float = 0.0,
    skip_fraction: float = 1.0,
) -> list[dict[str, Any]]:
    """One row per phase of ``scenario`` (default: the result's own): ``start_s``, ``end_s``,
    ``senders``, ``throughput_mbps`` (bottleneck), ``queue_kb`` (time mean), ``rtt_ms`` (the
    flows' mean base RTT plus the mean queueing delay, each queue sample over the rate the port
    sent at while it stood), ``flow_mbps`` (each active flow's mean delivery rate: distinct
    bytes received, in order or not, so a recovery that fills a hole adds only the resent bytes)
    and ``jain`` (over those rates).
    The first ``skip_s`` seconds of each phase, at most ``skip_fraction`` of it, are left out
    (convergence); ``skip_from_s`` says where each row's measurement starts.
    Needs the run's series (``metrics.sample_interval``; per-flow rates are on up to 1024 flows).
    """
    data = scenario if scenario is not None else result.scenario
    t, queue, rate = _bottleneck(result)
    flows = result.series["flows"]
    ft = flows["time_s"].to_numpy(float)
    fid = flows["flow_id"].to_numpy(int)
    fr = flows["rate_gbps"].to_numpy(float) * 1e3
    info = result.series["flow_info"]
    base_ms = float(np.mean(info["base_rtt_us"].to_numpy(float))) / 1e3
    # A sample covers the interval that ends at its time.
    delay_ms = np.where(rate > 0, queue * 8.0 / np.maximum(rate, 1.0), 0.0) * 1e3
    rows = []
    for a, b, active in phases(data):
        lo = a + min(skip_s, skip_fraction * (b - a))
        sel = (t > lo) & (t <= b)
        per_flow = [float(fr[(ft > lo) & (ft <= b) & (fid == f)].mean()) for f in active]
        rows.append(
            {
                "start_s": a,
                "end_s": b,
                "skip_from_s": lo,
                "senders": len(active),
                "flows": list(active),
                "throughput_mbps": float(rate[sel].mean() / 1e6) if sel.any() else float("nan"),
                "queue_kb": float(queue[sel].mean() / 1e3) if sel.any() else float("nan"),
                "rtt_ms": base_ms + float(delay_ms[sel].mean()) if sel.any() else float("nan"),
                "flow_mbps": per_flow,
                "jain": jain(per_flow),
            }
        )
    return rows


def jain_over_time(
    result: Result, scenario: Mapping[str, Any] | None = None, window_s: float = 10.0
) -> tuple[np.ndarray, np.ndarray]:
    """Jain's index over the flows active at each time, from their delivery rates averaged over
    windows of ``window_s``: (window end times, index). The figure of the QTCP-AIMD paper."""
    data = scenario if scenario is not None else result.scenario
    flows = result.series["flows"]
    ft = flows["time_s"].to_numpy(float)
    fid = flows["flow_id"].to_numpy(int)
    fr = flows["rate_gbps"].to_numpy(float)
    ph = phases(data)
    ends = np.arange(window_s, _seconds(data["duration"]) + 1e-9, window_s)
    out = np.full(len(ends), np.nan)
    for k, e in enumerate(ends):
        s = e - window_s
        # The flows active over the whole window (a window that straddles a change is skipped).
        active = next((f for a, b, f in ph if a <= s and e <= b), None)
        if active is None:
            continue
        sel = (ft > s) & (ft <= e)
        out[k] = jain([fr[sel & (fid == f)].mean() for f in active])
    return ends, out
