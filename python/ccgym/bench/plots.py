"""Bench plots: a time-series figure per run and metric-versus-scale charts per suite.

Figures are built on :class:`matplotlib.figure.Figure` directly and rendered by the Agg canvas,
never through ``pyplot``: no GUI backend is chosen, no global figure registry fills up while a
report draws hundreds of runs, and importing this module changes nothing for a user's own
``pyplot`` session.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from ccgym.bench.series import heavy_flows

DPI = 90
"""Resolution of the report's PNGs: sharp on screen, about 20-30 kB per run figure."""
PNG_COLORS = 128
"""Palette size of the report's PNGs (see :func:`figure_png`)."""

SCALE_METRICS: tuple[tuple[str, str], ...] = (
    ("SU", "switch utilisation SU (%)"),
    ("FR", "fairness FR (%)"),
    ("QL", "queue latency QL (µs)"),
    ("drops_mb", "drops (MB)"),
)
"""(row key, axis label) of the metric-versus-scale panels; SU, FR, QL also have paper values."""

# Kinds whose flows are fixed by the scenario (a scale); poisson flow counts depend on the draw.
_STATIC_KINDS = frozenset({"long", "flows", "messages", "incast"})
_WINDOW_COLOR = "0.93"
_LINE_COLOR = "tab:blue"


# --------------------------------------------------------------------------- rendering


def figure_png(fig: Figure, dpi: int = DPI, colors: int | None = PNG_COLORS) -> bytes:
    """Render ``fig`` to PNG bytes with the Agg canvas.

    With ``colors``, the image is reduced to a palette of that many colours: line charts on a
    white background lose nothing visible and the PNG shrinks about threefold, which is what
    keeps a report of a hundred runs a few MB. Pillow comes with matplotlib.
    """
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    if colors is None:
        return buf.getvalue()
    from PIL import Image

    buf.seek(0)
    with Image.open(buf) as img:
        small = img.convert("RGB").quantize(colors=colors)
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True)
    return out.getvalue()


def png_data_uri(png: bytes) -> str:
    """A ``data:`` URI for embedding PNG bytes in HTML."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def method_colors(methods: Sequence[str]) -> dict[str, str]:
    """One colour per method, stable across every chart of a report (suite order)."""
    palette = [f"tab:{c}" for c in ("blue", "orange", "green", "red", "purple", "brown")]
    palette += [f"tab:{c}" for c in ("pink", "gray", "olive", "cyan")]
    return {m: palette[i % len(palette)] for i, m in enumerate(methods)}


# --------------------------------------------------------------------------- per run


def _shade_window(ax: Any, series: Mapping[str, np.ndarray], label: bool) -> None:
    w0, w1 = (float(x) for x in series["window_s"])
    if math.isfinite(w0) and math.isfinite(w1) and w1 > w0:
        name = "metrics window" if label else None
        ax.axvspan(w0 * 1e3, w1 * 1e3, color=_WINDOW_COLOR, zorder=0, label=name)


def _note(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.4")


def run_figure(series: Mapping[str, np.ndarray], title: str = "") -> Figure:
    """Three panels over time: bottleneck queue, per-flow rates, bottleneck utilisation (two
    when the run recorded no per-flow rates).

    ``series`` is what :func:`ccgym.bench.series.load_series` returns. The metrics window is
    shaded. The queue has a second axis in µs (the time the queue takes to drain at the
    bottleneck's line rate); a peak outside the window that dwarfs the window's queue is clipped
    and written on the panel (:func:`_clip_outside_peak`). Up to 16 flows are drawn one line
    each; more as percentile bands across flows (min-max, p10-p90, p25-p75), the median, the
    mean, and on their own lines the heavy flows
    (:func:`ccgym.bench.series.heavy_flows`), or flow 0 when none is heavy. Rates are in Mb/s
    below 1 Gb/s.
    """
    t_ms = np.asarray(series["time_s"], dtype=float) * 1e3
    # A suite that does not record per-flow rates (metrics.flow_series = false) gets no empty
    # panel for them: the queue and the utilisation only, with a note in the queue's title.
    rates = np.asarray(series["flow_sample_gbps"]).shape[0] == len(t_ms) > 0
    if rates:
        fig = Figure(figsize=(8.0, 6.6), layout="constrained")
        ax_q, ax_r, ax_u = fig.subplots(3, 1, sharex=True)
    else:
        fig = Figure(figsize=(8.0, 4.6), layout="constrained")
        ax_q, ax_u = fig.subplots(2, 1, sharex=True)
        ax_r = None
    port = str(series["bottleneck_port"])
    rate = float(series["bottleneck_rate_gbps"])
    for ax in (ax_q, ax_r, ax_u):
        if ax is None:
            continue
        _shade_window(ax, series, label=ax is ax_q)
        ax.grid(True, color="0.85", linewidth=0.6)

    queue_kb = np.asarray(series["queue_bytes"], dtype=float) / 1e3
    if port and len(t_ms):
        ax_q.plot(t_ms, queue_kb, color=_LINE_COLOR, linewidth=1.0, label="queue")
        note = "" if rates else " (per-flow rates not recorded: metrics.flow_series = false)"
        ax_q.set_title(f"bottleneck {port}: queue length{note}", fontsize="medium", loc="left")
        ax_q.set_ylim(bottom=0)
        _clip_outside_peak(ax_q, series, t_ms, queue_kb)
        if math.isfinite(rate) and rate > 0:
            # kB -> µs at line rate: kB * 1e3 * 8 bit / (rate * 1e9 bit/s) * 1e6 = kB * 8 / rate;
            # in ms where a slow link's queue takes that long (a WAN trace: seconds).
            worst_us = float(np.nanmax(queue_kb)) * 8.0 / rate if np.isfinite(queue_kb).any() else 0
            unit, per = ("ms", 1e3) if worst_us >= 10_000 else ("µs", 1.0)
            sec = ax_q.secondary_yaxis(
                "right",
                functions=(lambda kb: kb * 8.0 / rate / per, lambda t: t * per * rate / 8.0),
            )
            sec.set_ylabel(f"drain time ({unit})")
        ax_q.legend(loc="upper right", fontsize="x-small")
    else:
        _note(ax_q, "no switch port transmitted: no bottleneck")
    ax_q.set_ylabel("queue (kB)")

    # Rates in Mb/s where the bottleneck (or, without one, every flow) runs below 1 Gb/s: a WAN
    # trace's 0.57 Mb/s reads badly as 0.000569 Gb/s.
    fastest = rate if math.isfinite(rate) and rate > 0 else _largest_rate(series)
    rate_unit, per_gbps = ("Mb/s", 1e3) if 0 < fastest < 1 else ("Gb/s", 1.0)
    if ax_r is not None:
        _rates_panel(ax_r, series, t_ms, rate_unit, per_gbps)

    if port and len(t_ms) and math.isfinite(rate) and rate > 0:
        util = np.asarray(series["tx_gbps"], dtype=float) / rate * 100.0
        ax_u.plot(t_ms, util, color=_LINE_COLOR, linewidth=1.0)
        top = np.nanmax(util) if np.isfinite(util).any() else 100.0
        ax_u.set_ylim(0, max(105.0, top * 1.05))
        ax_u.set_title(
            f"bottleneck {port}: utilisation of {rate * per_gbps:.4g} {rate_unit}",
            fontsize="medium",
            loc="left",
        )
    else:
        _note(ax_u, "no bottleneck utilisation")
    ax_u.set_ylabel("utilisation (%)")
    ax_u.set_xlabel("time (ms)")
    if len(t_ms):
        ax_u.set_xlim(0, t_ms[-1])
    if title:
        fig.suptitle(title, fontsize="large")
    return fig


PEAK_CLIP_RATIO = 3.0
"""The queue panel clips a peak outside the metrics window that exceeds this many times the
largest queue inside it (see :func:`_clip_outside_peak`)."""


def _clip_outside_peak(
    ax: Any, series: Mapping[str, np.ndarray], t_ms: np.ndarray, queue_kb: np.ndarray
) -> None:
    """Scales the queue panel to the metrics window when a peak outside it (a start-up burst,
    most often) is more than :data:`PEAK_CLIP_RATIO` times the window's largest queue, and
    writes the clipped peak on the panel: the metrics describe the window, and the burst
    would flatten it to the axis."""
    w0, w1 = (float(x) * 1e3 for x in series["window_s"])
    if not (math.isfinite(w0) and math.isfinite(w1) and w1 > w0) or not np.isfinite(queue_kb).any():
        return
    inside = (t_ms >= w0) & (t_ms <= w1) & np.isfinite(queue_kb)
    if not inside.any():
        return
    window_max = float(queue_kb[inside].max())
    peak_at = int(np.nanargmax(queue_kb))
    peak = float(queue_kb[peak_at])
    if window_max <= 0 or peak <= PEAK_CLIP_RATIO * window_max:
        return
    ax.set_ylim(0, window_max * 1.3)
    ax.text(
        0.01,
        0.97,
        f"clipped: {peak:,.0f} kB at {t_ms[peak_at]:.1f} ms, outside the metrics window",
        transform=ax.transAxes,
        ha="left",
        va="top",
        fontsize="x-small",
        color="0.3",
        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1.0},
    )


_HEAVY_COLORS = ("tab:orange", "tab:red", "tab:green", "tab:purple", "tab:brown", "tab:pink",
                 "tab:olive", "tab:cyan")  # fmt: skip
"""Line colours of the heavy flows, apart from the blue bands."""


def _largest_rate(series: Mapping[str, np.ndarray]) -> float:
    """The largest per-flow rate sampled (Gb/s), 0 without any."""
    sample = np.asarray(series["flow_sample_gbps"], dtype=float)
    return float(np.nanmax(sample)) if sample.size and np.isfinite(sample).any() else 0.0


def _rates_panel(
    ax: Any,
    series: Mapping[str, np.ndarray],
    t_ms: np.ndarray,
    unit: str = "Gb/s",
    per_gbps: float = 1.0,
) -> None:
    count = int(series["flow_count"])
    sample = np.asarray(series["flow_sample_gbps"], dtype=float) * per_gbps
    ids = np.asarray(series["flow_sample_ids"])
    ax.set_ylabel(f"rate ({unit})")  # run_figure calls this only with a rate per sample
    if count <= len(ids):
        for j, fid in enumerate(ids):
            ax.plot(t_ms, sample[:, j], linewidth=0.9, label=f"flow {fid}")
        ax.set_title(
            f"per-flow delivery rate: {count} flow{'s' if count != 1 else ''}",
            fontsize="medium",
            loc="left",
        )
        if count <= 8:
            ax.legend(loc="upper right", fontsize="x-small", ncols=min(count, 4))
            top = float(np.nanmax(sample)) if np.isfinite(sample).any() else 0.0
            if top > 0:  # room for the legend above a flow at line rate
                ax.set_ylim(0, top * 1.25)
                return
    else:
        pct = np.asarray(series["flow_rate_pct"], dtype=float) * per_gbps
        col = {float(p): j for j, p in enumerate(series["flow_percentiles"])}
        bands = ((0.0, 100.0, 0.15, "min–max"), (10.0, 90.0, 0.3, "p10–p90"))
        bands += ((25.0, 75.0, 0.5, "p25–p75"),)
        for lo, hi, alpha, label in bands:
            if lo in col and hi in col:
                lower, upper = pct[:, col[lo]], pct[:, col[hi]]
                ax.fill_between(
                    t_ms, lower, upper, color=_LINE_COLOR, alpha=alpha, linewidth=0, label=label
                )
        if 50.0 in col:
            ax.plot(t_ms, pct[:, col[50.0]], color="navy", linewidth=1.0, label="median")
        mean = np.asarray(series["flow_rate_mean"], dtype=float) * per_gbps
        ax.plot(t_ms, mean, color="black", linewidth=0.9, linestyle="--", label="mean")
        heavy = heavy_flows(series)
        if heavy:
            # Flows that carried a large share of the bytes (a weighted experiment's large
            # flows, long-short's long flow) are the story: each gets its own line.
            for (j, fid, share), color in zip(heavy, _HEAVY_COLORS, strict=False):
                label = f"flow {fid} ({share * 100:.0f} %)"
                ax.plot(t_ms, sample[:, j], color=color, linewidth=0.9, label=label)
        elif len(ids) and ids[0] == 0:
            # One flow's own trace shows what the bands hide (oscillation, starvation); flow 0
            # is the first workload's first flow: long-short's long flow, a sender in incast.
            ax.plot(t_ms, sample[:, 0], color="tab:orange", linewidth=0.8, label="flow 0")
        ax.legend(loc="upper right", fontsize="x-small", ncols=6)
        ax.set_title(
            f"per-flow delivery rate across {count} flows (active flows at each sample)",
            fontsize="medium",
            loc="left",
        )
        drawn = [pct, sample[:, [j for j, _, _ in heavy]] if heavy else sample[:, :1]]
        top = max(
            (float(np.nanmax(a)) for a in drawn if a.size and np.isfinite(a).any()), default=0
        )
        if top > 0:
            ax.set_ylim(0, top * 1.4)  # room for the legend above the lines
            return
    ax.set_ylim(bottom=0)


# --------------------------------------------------------------------------- against scale


def _workload_flows(w: Mapping[str, Any], hosts: int | None) -> int | None:
    """Flows a workload generates, if the scenario alone fixes it; None otherwise."""
    kind = w.get("kind")
    per_host = int(w.get("flows_per_host", 1))
    senders = w.get("senders")
    if kind == "flows":
        return len(w.get("flows") or [])
    if kind == "long" and w.get("pattern", "many_to_one") == "all_to_all":
        n = len(senders) if senders is not None else hosts
        return None if n is None else n * (n - 1) * per_host
    if kind in ("long", "messages"):
        n = len(senders) if senders is not None else (None if hosts is None else hosts - 1)
        return None if n is None else n * per_host
    return None  # incast: bursts at or after the end are left out; the summary knows


def scenario_flow_count(
    data: Mapping[str, Any], summary: Mapping[str, Any] | None = None
) -> int | None:
    """The scale of a scenario: the flows its workloads generate (sum of senders x flows).

    Counted from the scenario for ``long``, ``messages`` and ``flows`` workloads (hosts from a
    star topology's ``hosts``); otherwise taken from the run's ``summary["flows"]["count"]``.
    None when a workload is ``poisson``: its flow count follows from the load and the draw, it
    is not a scale.
    """
    workloads = data.get("workload") or []
    if not workloads or any(w.get("kind") not in _STATIC_KINDS for w in workloads):
        return None
    topo = data.get("topology") or {}
    hosts = topo.get("hosts") if topo.get("kind", "star") == "star" else None
    counts = [_workload_flows(w, hosts) for w in workloads]
    if all(c is not None for c in counts):
        return int(sum(c for c in counts if c is not None))
    count = ((summary or {}).get("flows") or {}).get("count")
    return int(count) if isinstance(count, int) and count > 0 else None


def scenario_family(data: Mapping[str, Any]) -> str:
    """What must match for scenarios to sit on one scale axis: topology kind and traffic mix.

    E.g. ``"star: long many_to_one"``; long-short with 2 and with 128 flows share
    ``"star: long many_to_one + messages"`` although one has more message workloads.
    """
    parts: list[str] = []
    for w in data.get("workload") or []:
        kind = str(w.get("kind"))
        part = f"{kind} {w.get('pattern', 'many_to_one')}" if kind == "long" else kind
        if part not in parts:
            parts.append(part)
    topo = (data.get("topology") or {}).get("kind", "star")
    return f"{topo}: " + " + ".join(parts)


@dataclass
class ScaleGroup:
    """Scenarios of one family with a flow count each: the x axis of one scale chart."""

    family: str
    flows: dict[str, int] = field(default_factory=dict)
    """Scenario label -> flow count."""


def scale_groups(
    scenarios: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Any] | None]],
) -> list[ScaleGroup]:
    """Group scenario labels by family; keep families with at least two distinct flow counts.

    Args:
        scenarios: label -> (scenario dict, a run's summary or None), in suite order.
    """
    groups: dict[str, ScaleGroup] = {}
    for label, (data, summary) in scenarios.items():
        n = scenario_flow_count(data, summary)
        if n is None:
            continue
        fam = scenario_family(data)
        groups.setdefault(fam, ScaleGroup(fam)).flows[label] = n
    return [g for g in groups.values() if len(set(g.flows.values())) >= 2]


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else math.nan


OUTLIER_RATIO = 20.0
"""A scale panel goes to a log scale when its largest value exceeds this many times the
third quartile of its values (see :func:`outlier_scale`)."""


def outlier_scale(values: Sequence[float]) -> float | None:
    """The linear threshold of a symmetric-log y axis for a scale panel whose largest value
    dwarfs the rest (above :data:`OUTLIER_RATIO` times their third quartile, e.g. one method's
    collapse), so that the others stay readable; None for a linear axis. The threshold is the
    power of ten at or below the smallest positive value (at least 0.001), so that zeros still
    show and everything above is logarithmic."""
    finite = np.array([v for v in values if math.isfinite(v)], dtype=float)
    positive = finite[finite > 0]
    # With one positive value (the rest zero) a log scale shows nothing a linear one does not.
    if positive.size < 2 or positive.min() == positive.max():
        return None
    if finite.max() <= OUTLIER_RATIO * float(np.percentile(finite, 75)):
        return None
    return max(1e-3, 10.0 ** math.floor(math.log10(positive.min())))


def scale_figure(
    rows: Sequence[Mapping[str, Any]],
    group: ScaleGroup,
    *,
    colors: Mapping[str, str] | None = None,
    title: str = "",
    metrics: Sequence[tuple[str, str]] = SCALE_METRICS,
    published_fields: Sequence[str] = ("SU", "FR", "QL"),
    paper_label: str = "paper (ADPG Table 2/3)",
) -> Figure:
    """Four metrics against the flow count, one line per method: by default SU, FR, QL and
    drops; a suite with a table of its own passes its first four columns (``metrics``: row key
    and axis label), e.g. long-short's RT, DR, LBW and FCT.

    ``rows`` are :func:`ccgym.bench.tables.build_rows` rows (mean and min/max over seeds);
    error bars span min-max over seeds when a row has more than one. The paper's numbers,
    where the row has them, are drawn as crosses in the method's colour on the panel whose key
    is the same entry of ``published_fields``. Percentages run from 0 to 105; another panel
    goes to a symmetric-log axis when one value dwarfs the rest (:func:`outlier_scale`).
    """
    methods = list(dict.fromkeys(r["method"] for r in rows if r["scenario"] in group.flows))
    colors = dict(colors or method_colors(methods))
    fig = Figure(figsize=(9.0, 6.4), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True).ravel()
    ticks = sorted(set(group.flows.values()))
    pub_index = {field: i for i, field in enumerate(published_fields)}
    any_paper = False
    panels = list(metrics)[:4]
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    for ax, (key, label) in zip(axes, panels, strict=False):
        percent = key in ("SU", "FR") or label.rstrip().endswith("%")
        for method in methods:
            mine = [r for r in rows if r["method"] == method and r["scenario"] in group.flows]
            pts = sorted(((group.flows[r["scenario"]], r) for r in mine), key=lambda p: p[0])
            x = np.array([p[0] for p in pts], dtype=float)
            y = np.array([_num(p[1].get(key)) for p in pts])
            lo = np.array([_num(p[1].get(f"{key}_min")) for p in pts])
            hi = np.array([_num(p[1].get(f"{key}_max")) for p in pts])
            err = np.vstack([np.nan_to_num(y - lo), np.nan_to_num(hi - y)]).clip(min=0)
            ok = np.isfinite(y)
            ax.errorbar(
                x[ok],
                y[ok],
                yerr=err[:, ok],
                marker="o",
                markersize=4,
                capsize=3,
                linewidth=1.2,
                color=colors.get(method),
                label=method,
            )
            if key in pub_index:
                px, py = [], []
                for n, r in pts:
                    pub = r.get("published")
                    if isinstance(pub, list) and len(pub) > pub_index[key]:
                        px.append(n)
                        py.append(float(pub[pub_index[key]]))
                if px:
                    any_paper = True
                    ax.scatter(px, py, marker="x", s=40, color=colors.get(method), zorder=3)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.grid(True, color="0.85", linewidth=0.6)
        values = [
            _num(r.get(key))
            for r in rows
            if r["method"] in methods and r["scenario"] in group.flows
        ]
        linthresh = outlier_scale(values) if not percent else None
        if percent:
            ax.set_ylim(0, 105)
        elif linthresh is not None:
            ax.set_yscale("symlog", linthresh=linthresh)
            # Headroom of a factor of two above the largest point (autoscale leaves none here).
            highs = [
                _num(r.get(f"{key}_max"))
                for r in rows
                if r["method"] in methods and r["scenario"] in group.flows
            ]
            ax.set_ylim(0, 2.0 * max(v for v in [*values, *highs] if math.isfinite(v)))
        else:
            ax.set_ylim(bottom=0)
        ax.set_ylabel(label if linthresh is None else f"{label}, log scale")
    for ax in axes[2:]:
        ax.set_xlabel("flows (log scale)")
    handles, labels = axes[0].get_legend_handles_labels()
    if any_paper:
        handles.append(axes[0].scatter([], [], marker="x", color="0.3"))
        labels.append(paper_label)
    ncols = min(len(labels), 4)
    fig.legend(handles, labels, loc="outside lower center", ncols=ncols, fontsize="small")
    fig.suptitle(title or group.family, fontsize="large")
    return fig


# --------------------------------------------------------------------------- slowdown by size


def _leading_2_3_5(v: float, _pos: Any) -> str:
    """Minor tick labels of a log axis at 2, 3 and 5 times a power of ten only (all nine crowd)."""
    if v <= 0:
        return ""
    lead = v / 10 ** math.floor(math.log10(v) + 1e-9)
    return f"{v:g}" if any(abs(lead - d) < 1e-6 for d in (2, 3, 5)) else ""


def slowdown_size_figure(
    profiles: Mapping[str, Mapping[str, Sequence[float | None]]],
    *,
    colors: Mapping[str, str] | None = None,
    edges: Sequence[float] = (),
    title: str = "",
) -> Figure:
    """Mean and p99 FCT slowdown against flow size, one line per method (two panels).

    ``profiles``: method -> its run's :func:`ccgym.bench.slowdown.size_profile` (log bins of
    flow size); ``edges``: the size buckets' edges (bytes), drawn as dotted lines.
    """
    colors = dict(colors or method_colors(list(profiles)))
    fig = Figure(figsize=(10.0, 4.2), layout="constrained")
    axes = fig.subplots(1, 2, sharex=True)
    panels = (("mean", "mean slowdown"), ("p99", "p99 slowdown"))
    for ax, (stat, label) in zip(axes, panels, strict=True):
        for method, prof in profiles.items():
            x = np.array([_num(v) for v in prof.get("size_bytes") or []])
            y = np.array([_num(v) for v in prof.get(stat) or []])
            ok = np.isfinite(x) & np.isfinite(y)
            if ok.any():
                ax.plot(
                    x[ok],
                    y[ok],
                    marker="o",
                    markersize=3,
                    linewidth=1.2,
                    color=colors.get(method),
                    label=method,
                )
        for e in edges:
            ax.axvline(e, color="0.6", linestyle=":", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        # plain numbers (1.5, 2, 4), not 10^x powers, on the slowdown axis
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(_leading_2_3_5))
        ax.set_xlabel("flow size (bytes, log scale)")
        ax.set_ylabel(f"{label} (log scale)")
        ax.grid(True, color="0.85", linewidth=0.6)
    handles, labels = axes[0].get_legend_handles_labels()
    if labels:
        ncols = min(len(labels), 6)
        fig.legend(handles, labels, loc="outside lower center", ncols=ncols, fontsize="small")
    else:
        _note(axes[0], "no completed flows in the window")
    fig.suptitle(title, fontsize="large")
    return fig


# --------------------------------------------------------------------------- ECN over time


def ecn_figure(tiers: Mapping[str, np.ndarray], title: str = "") -> Figure:
    """The ECN settings in force over time, one panel per switch tier, next to its queue.

    ``tiers`` is what :func:`ccgym.acc.ecn_series.tier_series` returns. Queue and thresholds
    share one axis in kB, so the panel shows where the queue sits against the marking ramp:
    the tier's mean queue (solid) and largest (thin), Kmin and Kmax in force (dashed, the mean
    over the tier's queues, shaded between the lowest and highest when queues differ), on a log
    scale (linear below 1 kB), and
    Pmax (dotted, right axis). The title of each panel names the most common template at the
    end of the run and how many profile changes the tier saw.
    """
    groups = [str(g) for g in np.asarray(tiers["groups"]).reshape(-1)]
    n = max(len(groups), 1)
    fig = Figure(figsize=(8.0, 1.0 + 2.1 * n), layout="constrained")
    axes = np.atleast_1d(fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0])
    t_ms = np.asarray(tiers["time_s"], dtype=float) * 1e3
    if not groups:
        _note(axes[0], "no switch data queues")
    for g, (ax, name) in enumerate(zip(axes, groups, strict=False)):
        kb = {
            k: np.asarray(tiers[k], dtype=float)[g] / 1e3
            for k in (
                "queue_mean_bytes",
                "queue_max_bytes",
                "kmin_bytes",
                "kmin_lo_bytes",
                "kmin_hi_bytes",
                "kmax_bytes",
                "kmax_lo_bytes",
                "kmax_hi_bytes",
            )
        }
        ax.plot(t_ms, kb["queue_mean_bytes"], color=_LINE_COLOR, linewidth=1.0, label="queue mean")
        ax.plot(
            t_ms,
            kb["queue_max_bytes"],
            color=_LINE_COLOR,
            linewidth=0.5,
            alpha=0.6,
            label="queue max",
        )
        for key, color in (("kmin", "tab:green"), ("kmax", "tab:red")):
            ax.step(
                t_ms,
                kb[f"{key}_bytes"],
                where="post",
                color=color,
                linestyle="--",
                linewidth=1.0,
                label=key.capitalize(),
            )
            lo, hi = kb[f"{key}_lo_bytes"], kb[f"{key}_hi_bytes"]
            if np.any(np.isfinite(lo) & (hi > lo)):
                ax.fill_between(t_ms, lo, hi, step="post", color=color, alpha=0.12, linewidth=0)
        # Log scale (linear below 1 kB): a queue of a few kB and thresholds of hundreds to
        # thousands of kB on one linear axis left the queue a flat line at the bottom.
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("kB (log scale)")
        ax.grid(True, color="0.85", linewidth=0.6)
        pmax = np.asarray(tiers["pmax"], dtype=float)[g]
        ax_p = ax.twinx()
        ax_p.step(t_ms, pmax, where="post", color="0.35", linestyle=":", linewidth=1.0)
        ax_p.set_ylim(0, 1.05)
        ax_p.set_ylabel("Pmax", color="0.35")
        template = np.asarray(tiers["template"], dtype=float)[g]
        last = template[np.isfinite(template)]
        changes = int(np.asarray(tiers["changes"]).reshape(-1)[g])
        what = f"template {int(last[-1])} at the end" if len(last) else "no template"
        ax.set_title(
            f"{name}: queue and ECN profile ({what}, {changes} changes)",
            fontsize="medium",
            loc="left",
        )
        if g == 0:
            ax.legend(loc="upper right", fontsize="x-small", ncols=4)
    axes[-1].set_xlabel("time (ms)")
    if len(t_ms):
        axes[-1].set_xlim(0, t_ms[-1])
    if title:
        fig.suptitle(title, fontsize="large")
    return fig
