"""Long-short scores: RT, DR, LBW and the short messages' completion times.

The ADPG paper scores its long-short benchmark (one long flow interrupted by rounds of short
messages, ``adpg-long-short-*``) by RT (recovery time of the long flow, s), DR (drop rate) and LBW
(long-flow bandwidth, %), and the reference simulator also reports the short messages' completion
time. The paper does not define them beyond their names; ccgym computes them from a finished run
as follows (``w0``, ``w1``: the run's statistics window ``metrics.window``, 5-200 ms in the bundled
scenarios; ``R``: the line rate of the long flow's sending host).

**LBW**, % of line rate: the long flow's window rate (``flow_info.window_gbps``: payload received
in the window over the time it was active in it) counted at its wire size, i.e. times
``(payload + header) / payload``, over ``R``, x 100. Wire size because ``R`` is a wire rate and the
reference's data packets are 1 KiB on the wire: a flow alone at line rate scores 100 in both
simulators (ccgym's 1024 B payload carries a 48 B header, so its payload share tops at 95.5 %, kept
as ``LBW_goodput``). Only distinct payload counts: retransmissions are not bandwidth.

**DR**, Gb/s: dropped bandwidth, the wire bytes refused by switch buffers in the window
(``network.drops_bytes``) x 8 over the window length. Gb/s because the reference simulator's
scalar output (shared/specs/learning_cc.md section 1.8) has "dropped bandwidth (Gb/s)" next to MB
dropped, and the paper's DR values (0 ... 2.7) fit a bandwidth at 100 Gb/s, not MB over 195 ms. At
the bundled scenarios' 100 Gb/s bottleneck the number equals DR in % of the bottleneck's rate.

**RT**, s: how long the long flow takes to get back to line rate once the short messages are done,
averaged over interruptions. An interruption is a *busy period*: the union of the short messages'
lifetimes (arrival at the sender to the acknowledgement of the last byte), overlapping lifetimes
merged, so that rounds that back up into each other (1024 and 2048 flows) form one period. For each
busy period that ends at ``e`` with ``w0 <= e < w1``:

* its horizon ``h`` is the start of the next busy period, or ``w1``;
* the long flow's rate series (``flows`` table; sample ``i`` at ``t_i`` is the mean rate over
  ``(t_i - dt, t_i]``, ``dt`` = ``metrics.sample_interval``), counted at wire size like LBW, is
  searched for the first interval that ends after ``e`` and not after ``h`` and whose rate is at
  least ``threshold`` x ``R`` (``threshold`` = 0.9);
* found: ``RT_k = max(0, t_i - dt - e)``, the time from ``e`` to the start of that interval (0 when
  the interval that contains ``e`` is already at 90 %); not found: the long flow did not recover
  before the next interruption or the window's end, and ``RT_k = h - e`` (a lower bound).

``RT`` is the mean of the ``RT_k``; ``RT_periods`` counts them and ``RT_recovered`` those that did
recover. A busy period that has not ended by ``w1`` (messages still unfinished) has no recovery to
measure; with no measurable period RT is None. The resolution is one sample interval (50 us in the
bundled scenarios): a long flow that recovers within an RTT scores between 0 and ``dt``.

**FCT** and **FCT_p99**, us: mean and 99th percentile (linear interpolation) of the completion
times of the short messages that arrive inside the window. A message that never completes counts
with the time it had waited at the end of the run (a lower bound), so that a method cannot look
fast by leaving messages unfinished; ``msgs_done`` is the % of those messages that completed.

**SU** is the standard switch utilisation (``bottleneck.utilization`` x 100).

Which flow is the long flow: the only flow of the run that carries no messages (every flow of a
``messages`` workload appears in the ``messages`` table); any other layout is an error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ccgym._errors import ScenarioError

if TYPE_CHECKING:
    from ccgym.result import Result

SCORES_VERSION = 1
"""Bumped whenever a definition below changes, so that cached bench runs are redone."""

THRESHOLD = 0.9
"""RT: the long flow has recovered when it is back to this fraction of line rate."""

DEFAULT_PAYLOAD = 1024
DEFAULT_HEADER = 48
"""The scenario defaults of ``[packets]`` (docs/scenarios.md), used when a scenario omits them."""


@dataclass(frozen=True)
class Recovery:
    """The long flow's recovery after one busy period of short messages."""

    end_s: float
    """When the busy period ended (its last message was acknowledged)."""
    horizon_s: float
    """Start of the next busy period, or the end of the window."""
    rt_s: float
    """Recovery time; ``horizon_s - end_s`` (a lower bound) when not ``recovered``."""
    recovered: bool


def busy_periods(starts: Sequence[float], ends: Sequence[float]) -> list[tuple[float, float]]:
    """Merge the intervals ``[starts[k], ends[k]]`` into disjoint busy periods, in time order.

    An end that is NaN (a message that never completed) is taken as infinity. Intervals that
    touch (one starts exactly when another ends) are merged.
    """
    a = np.asarray(starts, dtype=float)
    b = np.asarray(ends, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"starts and ends differ in length: {a.size} and {b.size}")
    b = np.where(np.isnan(b), math.inf, b)
    if np.any(b < a):
        raise ValueError("an interval ends before it starts")
    periods: list[tuple[float, float]] = []
    for s, e in sorted(zip(a.tolist(), b.tolist(), strict=True)):
        if periods and s <= periods[-1][1]:
            periods[-1] = (periods[-1][0], max(periods[-1][1], e))
        else:
            periods.append((s, e))
    return periods


def recoveries(
    times_s: Sequence[float],
    rates: Sequence[float],
    periods: Sequence[tuple[float, float]],
    *,
    window: tuple[float, float],
    sample_interval: float,
    line_rate: float,
    threshold: float = THRESHOLD,
) -> list[Recovery]:
    """The long flow's recovery after every busy period that ends inside ``window``.

    Args:
        times_s: sample times of the long flow's rate series, increasing.
        rates: its rate over ``(t - sample_interval, t]`` at each sample time, in the unit of
            ``line_rate`` (already counted at wire size).
        periods: busy periods (:func:`busy_periods`), in time order.
        window: ``(w0, w1)``, the statistics window.
        sample_interval: the series' sampling period ``dt``.
        line_rate: the long flow's line rate ``R``.
        threshold: recovered means at least ``threshold`` x ``line_rate``.

    See the module docstring for the rule.
    """
    t = np.asarray(times_s, dtype=float)
    r = np.asarray(rates, dtype=float)
    if t.shape != r.shape:
        raise ValueError(f"times and rates differ in length: {t.size} and {r.size}")
    if sample_interval <= 0 or line_rate <= 0 or not 0 < threshold <= 1:
        raise ValueError("sample_interval and line_rate must be positive, threshold in (0, 1]")
    w0, w1 = window
    target = threshold * line_rate
    out = []
    for k, (_, end) in enumerate(periods):
        if not w0 <= end < w1:
            continue
        horizon = min(periods[k + 1][0], w1) if k + 1 < len(periods) else w1
        # intervals (t_i - dt, t_i] that end after `end` and not after the next interruption
        candidates = np.flatnonzero((t > end) & (t <= horizon) & (r >= target))
        if candidates.size:
            start_of_interval = t[candidates[0]] - sample_interval
            out.append(Recovery(end, horizon, max(0.0, start_of_interval - end), True))
        else:
            out.append(Recovery(end, horizon, horizon - end, False))
    return out


def _long_flow(result: Result) -> int:
    info = result.series.get("flow_info")
    messages = result.series.get("messages")
    if info is None or messages is None or messages.empty:
        raise ScenarioError(
            "long-short scores need a run with short messages (a `messages` workload with "
            "count > 1) and one long flow; this run has no `messages` table"
        )
    long_ids = sorted(set(info["flow_id"].tolist()) - set(messages["flow_id"].tolist()))
    if len(long_ids) != 1:
        raise ScenarioError(
            f"long-short scores need exactly one flow without messages (the long flow); this "
            f"run has {len(long_ids)}"
        )
    return int(long_ids[0])


def _line_rate_gbps(result: Result, host: int) -> float:
    ports = result.series["port_info"]
    rates = ports.loc[ports["node"] == host, "rate_gbps"]
    if rates.empty:
        raise ScenarioError(f"long-short scores: host {host} of the long flow has no port")
    return float(rates.max())


def _wire_factor(scenario: dict[str, Any]) -> float:
    packets = scenario.get("packets") or {}
    payload = int(packets.get("payload", DEFAULT_PAYLOAD))
    header = int(packets.get("header", DEFAULT_HEADER))
    return (payload + header) / payload


def _sample_interval(times: np.ndarray) -> float:
    if times.size < 2:
        raise ScenarioError("long-short scores: the long flow's rate series has < 2 samples")
    return float(np.median(np.diff(times)))


def scores(result: Result, *, threshold: float = THRESHOLD) -> dict[str, Any]:
    """The long-short scores of a finished run (see the module docstring for every definition).

    Returns a dict: ``RT`` (s), ``RT_periods``, ``RT_recovered``, ``DR`` (Gb/s), ``LBW`` (%),
    ``LBW_goodput`` (%), ``FCT`` and ``FCT_p99`` (us), ``msgs_done`` (%), ``SU`` (%); a value that
    cannot be measured is None.

    Raises:
        ScenarioError: the run is not a long-short run (no messages, not exactly one long flow,
            or no rate series for the long flow: set ``metrics.flow_series = true``).
    """
    s = result.summary
    w0, w1 = (float(x) for x in s["window_s"])
    long_id = _long_flow(result)
    info = result.series["flow_info"].set_index("flow_id")
    src = int(info.at[long_id, "src"])
    line_rate = _line_rate_gbps(result, src)
    wire = _wire_factor(result.scenario)

    flows = result.series.get("flows")
    if flows is None:
        raise ScenarioError(
            "long-short scores need the long flow's rate series: set metrics.flow_series = true "
            '("auto" drops it above 1024 flows)'
        )
    series = flows[flows["flow_id"] == long_id].sort_values("time_s")
    times = series["time_s"].to_numpy(dtype=float)
    rates = series["rate_gbps"].to_numpy(dtype=float) * wire

    msgs = result.series["messages"]
    periods = busy_periods(msgs["start_s"].to_numpy(), (msgs["start_s"] + msgs["fct_s"]).to_numpy())
    recs = recoveries(
        times,
        rates,
        periods,
        window=(w0, w1),
        sample_interval=_sample_interval(times),
        line_rate=line_rate,
        threshold=threshold,
    )

    window_gbps = float(info.at[long_id, "window_gbps"])
    lbw = None if math.isnan(window_gbps) else window_gbps * wire / line_rate * 100
    drops = (s.get("network") or {}).get("drops_bytes")
    dr = None if drops is None else drops * 8 / (w1 - w0) / 1e9

    in_window = msgs[(msgs["start_s"] >= w0) & (msgs["start_s"] < w1)]
    end_of_run = float(s["simulated_s"])
    fct = in_window["fct_s"].to_numpy(dtype=float)
    done = ~np.isnan(fct)
    # unfinished messages: the time they had waited by the end of the run (a lower bound)
    fct = np.where(done, fct, end_of_run - in_window["start_s"].to_numpy(dtype=float))
    util = (s.get("bottleneck") or {}).get("utilization")
    return {
        "RT": float(np.mean([x.rt_s for x in recs])) if recs else None,
        "RT_periods": len(recs),
        "RT_recovered": sum(x.recovered for x in recs),
        "DR": dr,
        "LBW": lbw,
        "LBW_goodput": None if lbw is None else lbw / wire,
        "FCT": float(fct.mean() * 1e6) if fct.size else None,
        "FCT_p99": float(np.percentile(fct, 99) * 1e6) if fct.size else None,
        "msgs_done": float(done.mean() * 100) if fct.size else None,
        "SU": None if util is None else util * 100,
    }
