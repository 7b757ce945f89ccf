"""The ``mvfst-blocking`` bench table: how many bytes a sender loses when it blocks on its policy.

MVFST-RL's argument for non-blocking agents (Sivakumar et al. 2019, shared/specs/scenarios.md
section 5): a sender that stops for 25 ms or 50 ms at every decision (actions every 100 ms) sends
1.1% or 11.4% fewer bytes over 60 s on the Mexico cellular link than one that keeps sending while
its policy thinks. A suite with ``table = "mvfst-blocking"`` runs methods that are ``agent``
presets differing only in their timing keys (``agent.timing``, ``agent.policy_delay``,
``agent.delay_mode``; docs/env.md, "Timing modes") and scores each run by the bytes its flows
delivered.

Metrics of a run: ``mb`` (bytes delivered by all flows over the run, MB), ``mbps`` (their mean
rate, Mb/s) and, derived per scenario, ``fewer_pct``: how many fewer bytes than the method's
non-blocking reference delivered, in % (the reference of a method named ``"X blocking D"`` is
``"X nonblocking D"`` when the suite has it, else ``"X nonblocking"``; a non-blocking method is
its own; of any other method, the scenario's first method). The report adds a
cumulative-bytes figure per scenario (first seed).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ccgym.bench.pareto import HIGHER, Band

SCORES_VERSION = 2
"""Bumped when the scores change (part of the bench cache key)."""

TABLE = "mvfst-blocking"
"""The suite table this module scores."""

CURVE_POINTS = 601
"""Samples of the cumulative-bytes curve kept in a run's record."""

PUBLISHED_FEWER_PCT = {"25ms": 1.1, "50ms": 11.4}
"""MVFST-RL's published loss of bytes for blocking 25 ms and 50 ms per decision, %."""

MVFST_METRICS: dict[str, Band] = {"mb": (HIGHER, 0.01)}
"""Pareto metrics of the table: (direction, tolerance band)."""


def delivered_curve(result: Any) -> tuple[np.ndarray, np.ndarray]:
    """Times (s) and cumulative bytes delivered by all flows (MB) of a run, from its per-flow
    rate samples (``metrics.flow_series``)."""
    flows = result.series.get("flows")
    if flows is None or len(flows) == 0:
        return np.zeros(1), np.zeros(1)
    t = flows["time_s"].to_numpy()
    grid, inv = np.unique(t, return_inverse=True)
    rate = np.zeros(len(grid))
    np.add.at(rate, inv, np.nan_to_num(flows["rate_gbps"].to_numpy(dtype=np.float64)))
    # A sample's rate covers the interval that ends at it.
    dt = np.diff(np.concatenate([[0.0], grid]))
    mb = np.cumsum(rate * 1e9 / 8 * dt) / 1e6
    return np.concatenate([[0.0], grid]), np.concatenate([[0.0], mb])


def scores(result: Any) -> dict[str, float | None]:
    """The table's metrics of one run (see the module docstring)."""
    t, mb = delivered_curve(result)
    total = float(mb[-1])
    span = float(t[-1])
    return {"mb": total, "mbps": total * 8 / span if span > 0 else None}


def curve(result: Any) -> list[list[float]]:
    """The run's cumulative-bytes curve, resampled to :data:`CURVE_POINTS` points ``[t_s, MB]``
    (stored in its record for the report's figure)."""
    t, mb = delivered_curve(result)
    grid = np.linspace(0.0, float(t[-1]), CURVE_POINTS)
    return [[float(a), float(b)] for a, b in zip(grid, np.interp(grid, t, mb), strict=True)]


def reference_method(method: str, methods: Sequence[str]) -> str:
    """The non-blocking reference of ``method`` among ``methods`` (see the module docstring)."""
    words = method.split()
    if "nonblocking" in words and method in methods:
        return method  # its own reference: a band's non-blocking rows all read 0
    if "blocking" in words:
        i = words.index("blocking")
        same_delay = " ".join([*words[:i], "nonblocking", *words[i + 1 :]])
        any_delay = " ".join([*words[:i], "nonblocking"])
        for ref in (same_delay, any_delay):
            if ref in methods:
                return ref
    return methods[0]


def _published(method: str) -> float | None:
    """MVFST-RL's published loss for a ``"... blocking 25ms"`` / ``"... blocking 50ms"`` method."""
    words = method.split()
    for delay, pct in PUBLISHED_FEWER_PCT.items():
        if "blocking" in words and delay in words:
            return pct
    return None


def derive_rows(
    rows: list[dict[str, Any]], records: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Adds ``fewer_pct`` (and its per-seed range) against each row's non-blocking reference on
    the same scenario; seeds are paired (the same seed of both methods)."""
    by_run: dict[tuple[str, str, int], float] = {}
    for rec in records:
        v = (rec.get("metrics") or {}).get("mb")
        if isinstance(v, (int, float)):
            by_run[(rec["label"], rec["method"], rec["seed"])] = float(v)
    methods: dict[str, list[str]] = {}
    for row in rows:
        methods.setdefault(row["scenario"], []).append(row["method"])
    for row in rows:
        label, method = row["scenario"], row["method"]
        ref = reference_method(method, methods[label])
        pcts = []
        for (lab, m, seed), v in by_run.items():
            base = by_run.get((label, ref, seed))
            if lab == label and m == method and base:
                pcts.append((1.0 - v / base) * 100.0)
        row["fewer_pct"] = float(np.mean(pcts)) if pcts else None
        row["fewer_pct_min"] = min(pcts) if pcts else None
        row["fewer_pct_max"] = max(pcts) if pcts else None
        row["reference"] = ref
        published = _published(method)
        row["published"] = None if published is None else [published]
    return rows


def curve_figure(recs: Sequence[Mapping[str, Any]], title: str, colors: Mapping[str, str]) -> Any:
    """Cumulative bytes against time, one line per method (its record's ``cum_mb`` curve)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    for rec in recs:
        pts = np.asarray(rec.get("cum_mb") or [], dtype=np.float64)
        if pts.size:
            ax.plot(pts[:, 0], pts[:, 1], label=rec["method"], color=colors.get(rec["method"]))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("bytes delivered (MB)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def report_section(
    records: Sequence[Mapping[str, Any]], colors: Mapping[str, str], suite_name: str
) -> str:
    """The HTML report's cumulative-bytes figures: one per scenario, the first seed."""
    from ccgym.bench.plots import figure_png, png_data_uri

    if not records:
        return ""
    first = records[0].get("seed")
    by_label: dict[str, list[Mapping[str, Any]]] = {}
    for rec in records:
        if rec.get("seed") == first:
            by_label.setdefault(rec["label"], []).append(rec)
    parts = [
        "<h2>Cumulative bytes</h2>",
        '<p class="note">Per scenario, the first seed: bytes delivered since the start, one '
        "line per method. A blocking sender sends nothing while its action is outstanding "
        "(docs/env.md, timing modes).</p>",
    ]
    for label, recs in by_label.items():
        title = f"{suite_name}: {label}, cumulative bytes"
        png = figure_png(curve_figure(recs, title, colors), colors=None)
        parts.append(
            f'<figure><img src="{png_data_uri(png)}" alt="{html.escape(title)}">'
            f"<figcaption>{html.escape(label)}</figcaption></figure>"
        )
    return "\n".join(parts)
