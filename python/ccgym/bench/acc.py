"""ACC bench tables: static ECN templates on the ACC scenarios, the static oracle, validity checks.

Two suites use the ``acc-oracle`` table:

* ``acc-oracle``: every template of the ACC grid (:data:`ccgym.acc.templates.GRID`, the three
  presets included) on WebSearch, DataMining and Alibaba storage at 30 %, 50 % and 70 % load;
  its methods come from ``method_grid = "acc"`` (:func:`method_grid`), so the grid is written
  once, in :mod:`ccgym.acc.templates`;
* ``acc-presets``: SECN0, SECN1, SECN2 (``method_grid = "acc-presets"``) on every ACC scenario
  (incasts, switching workloads, the k = 8 fat tree).

Per run (:func:`scores`), over the metrics window: mice (flows of at most 100 KB) mean and p99
FCT, mice p99 FCT of the flows that start in the window's second half (the new phase of a
switching run), elephant mean FCT (completed flows above 100 KB), delivered throughput and its
share of the hosts' capacity, mean and p99 queue over the switch ports' samples, PFC pauses, the
incast messages' mean and p99 FCT, and ACC's training reward
(:func:`ccgym.acc.validity.run_reward`).

The **static oracle** (:func:`oracle_choice`) is a derived row per scenario that has every grid
template: among the templates whose mean utilisation (delivered throughput over the servers'
capacity, %) is at least the best preset's (SECN0/1/2) minus :data:`ORACLE_UTIL_SLACK`
percentage points, the one with the lowest mean mice p99 FCT (ties: lower mice mean FCT). An
operator tunes ECN for the tail of short flows but will not pay for it in utilisation against
the settings run today (the issue's bar for ACC: no more than 1 % of utilisation lost). The
reference is the presets', not the best template's: deep thresholds always let elephants deliver
a little more within the window, and a rule against them chose, at WebSearch 70 %, a template
worse on mice p99 than SECN1 (270 us against 246) for one point of utilisation. The seeds of
different templates share their flows (arrivals and sizes are drawn before the run), so
templates are compared on the same traffic.

The **validity checks** (:func:`ccgym.acc.validity.spread_check`, ``reward_correlation``) are
printed under the table, one line each per scenario.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ccgym._errors import ScenarioError
from ccgym.acc.templates import GRID, PRESETS, EcnTemplate, ecn_overrides
from ccgym.acc.validity import reward_correlation, run_reward, spread_check
from ccgym.bench.pareto import HIGHER, LOWER, Band

SCORES_VERSION = 1
"""Version of :func:`scores`; part of the cache key of ``acc-oracle`` runs."""

MICE_BYTES = 100_000
"""Flows of at most this size are mice (the summary's first ``by_size`` bucket)."""

ORACLE_UTIL_SLACK = 1.0
"""The oracle's utilisation constraint, percentage points: a template qualifies when its mean
utilisation is at least the best preset's minus this, on the same scenario."""

ORACLE_PREFIX = "oracle: "
"""The method name of the derived oracle row is this plus the chosen template's name."""

ACC_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("mice_mean_us", "mice mean us", ".1f"),
    ("mice_p99_us", "mice p99 us", ".0f"),
    ("eleph_mean_us", "eleph mean us", ".0f"),
    ("tput_gbps", "Gb/s", ".1f"),
    ("util", "util %", ".1f"),
    ("q_mean_kb", "q mean KB", ".2f"),
    ("q_p99_kb", "q p99 KB", ".1f"),
    ("pfc_pauses", "PFC", ".0f"),
    ("reward", "reward", ".4f"),
)
"""(metric key, column title, format) of the ``acc-oracle`` table."""

ACC_EXTRA: tuple[str, ...] = ("mice_p99_late_us", "mice_done", "msg_mean_us", "msg_p99_us")
"""Further metrics of the table, in the CSV only."""

ACC_METRICS: dict[str, Band] = {
    "mice_mean_us": (LOWER, 1.0, 0.03),  # 1 us or 3 %
    "mice_p99_us": (LOWER, 5.0, 0.05),  # 5 us or 5 %
    "util": (HIGHER, 1.0),  # percentage points of the servers' capacity
}
"""The table's Pareto metrics: name -> band (see :mod:`ccgym.bench.pareto`)."""


def method_grid(name: str, where: Path | str = "") -> dict[str, dict[str, Any]]:
    """The method presets of a suite's ``method_grid``: ``"acc"`` (every template of
    :data:`~ccgym.acc.templates.GRID`) or ``"acc-presets"`` (SECN0, SECN1, SECN2), each DCQCN
    with the template's ECN profile scaled from 25 Gb/s."""
    grids: dict[str, Sequence[EcnTemplate]] = {"acc": GRID, "acc-presets": PRESETS}
    if name not in grids:
        raise ScenarioError(
            f"{where}: unknown method_grid {name!r}; use one of {', '.join(map(repr, grids))}"
        )
    return {
        t.name: {
            "cc": "dcqcn",
            "overrides": ecn_overrides(t),
            "description": f"DCQCN, ECN {t.kmin} B / {t.kmax} B / {t.pmax:g} at 25 Gb/s",
        }
        for t in grids[name]
    }


def _get(d: Any, *path: Any) -> Any:
    for key in path:
        if isinstance(d, Mapping):
            d = d.get(key)
        elif isinstance(d, list) and isinstance(key, int) and -len(d) <= key < len(d):
            d = d[key]
        else:
            return None
    return d


def scores(summary: Mapping[str, Any], series: Mapping[str, Any]) -> dict[str, float | None]:
    """The ``acc-oracle`` table's metrics of one run (a ``size_buckets = ["100KB"]`` scenario).

    Args:
        summary: the run's summary.
        series: the run's tables (``ports``, ``port_info``, ``flow_info``).
    """
    window = summary.get("window_s") or [0.0, float("inf")]
    mice = _get(summary, "by_size", "buckets", 0) or {}
    if mice.get("max_bytes") != MICE_BYTES:
        raise ScenarioError(
            f'acc tables need metrics.size_buckets = ["100KB"] (mice up to {MICE_BYTES} bytes)'
        )
    eleph = _get(summary, "by_size", "buckets", 1) or {}
    out: dict[str, float | None] = {
        "mice_mean_us": _get(mice, "fct_us", "mean"),
        "mice_p99_us": _get(mice, "fct_us", "p99"),
        "mice_done": 100.0 * mice["completed"] / mice["flows"] if mice.get("flows") else None,
        "eleph_mean_us": _get(eleph, "fct_us", "mean"),
        "pfc_pauses": _get(summary, "network", "pfc_pauses"),
        "msg_mean_us": _get(summary, "messages", "fct_us", "mean"),
        "msg_p99_us": _get(summary, "messages", "fct_us", "p99"),
    }
    tput = sum(c.get("throughput_gbps") or 0.0 for c in summary.get("by_class") or [])
    out["tput_gbps"] = tput
    switch_ports = {int(p["id"]) for p in summary.get("ports") or []}
    info = series["port_info"]
    ids = np.asarray(info["port_id"], dtype=np.int64)
    rates = np.asarray(info["rate_gbps"], dtype=float) * 1e9
    host_capacity = float(rates[~np.isin(ids, list(switch_ports))].sum())
    out["util"] = 100.0 * tput * 1e9 / host_capacity if host_capacity > 0 else None
    ports = series["ports"]
    t = np.asarray(ports["time_s"], dtype=float)
    pid = np.asarray(ports["port_id"], dtype=np.int64)
    keep = (t > window[0]) & (t <= window[1]) & np.isin(pid, list(switch_ports))
    q = np.asarray(ports["queue_bytes"], dtype=float)[keep]
    out["q_mean_kb"] = float(q.mean()) / 1e3 if q.size else None
    out["q_p99_kb"] = float(np.percentile(q, 99)) / 1e3 if q.size else None
    port_rates = {int(i): float(r) for i, r in zip(ids, rates, strict=True) if i in switch_ports}
    out["reward"] = run_reward(ports, port_rates, window)
    out["mice_p99_late_us"] = _late_mice_p99(series["flow_info"], window)
    return out


def _late_mice_p99(flow_info: Mapping[str, Any], window: Sequence[float]) -> float | None:
    """p99 FCT (us) of the mice that start in the second half of the window and complete: the
    new phase of a switching run."""
    size = np.asarray(flow_info["size_bytes"], dtype=float)
    start = np.asarray(flow_info["start_s"], dtype=float)
    fct = np.asarray(flow_info["fct_s"], dtype=float)
    mid = (window[0] + window[1]) / 2
    sel = (size <= MICE_BYTES) & (start >= mid) & (start <= window[1]) & np.isfinite(fct)
    return float(np.percentile(fct[sel], 99)) * 1e6 if sel.any() else None


def _finite(x: Any) -> float | None:
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return None if math.isnan(x) else float(x)


def oracle_choice(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The static oracle's row among one scenario's template rows (see the module doc): the
    lowest mean mice p99 FCT among rows whose utilisation is at least the best preset row's
    (the best row's, without preset rows) minus :data:`ORACLE_UTIL_SLACK` percentage points;
    None when no row has both numbers."""
    scored = [
        r
        for r in rows
        if _finite(r.get("mice_p99_us")) is not None and _finite(r.get("util")) is not None
    ]
    if not scored:
        return None
    presets = {t.name for t in PRESETS}
    reference = [r for r in scored if r["method"] in presets] or scored
    best_util = max(float(r["util"]) for r in reference)
    eligible = [r for r in scored if r["util"] >= best_util - ORACLE_UTIL_SLACK]
    return min(
        eligible,
        key=lambda r: (r["mice_p99_us"], _finite(r.get("mice_mean_us")) or math.inf),
    )


def derive_rows(
    rows: list[dict[str, Any]], records: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The table's rows plus, per scenario, the oracle row (after the scenario's last row, when
    the scenario has a row for every grid template) and the validity notes (``notes`` of the
    scenario's first row: the mice p99 spread against seed noise, the reward's correlation)."""
    templates = {t.name for t in GRID}
    per_seed: dict[tuple[str, str], list[float]] = {}
    for rec in records:
        v = _finite((rec.get("metrics") or {}).get("mice_p99_us"))
        if v is not None:
            per_seed.setdefault((rec["label"], rec["method"]), []).append(v)
    out: list[dict[str, Any]] = []
    order: list[str] = []
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["scenario"] not in by_scenario:
            order.append(row["scenario"])
        by_scenario.setdefault(row["scenario"], []).append(row)
    for label in order:
        group = by_scenario[label]
        static = [r for r in group if r["method"] in templates]
        notes: list[str] = []
        spread = spread_check({r["method"]: per_seed.get((label, r["method"]), []) for r in static})
        if spread is not None:
            notes.append(f"mice p99 FCT across {spread.templates} templates: {spread.verdict()}")
        corr = reward_correlation(
            {r["method"]: r.get("reward") for r in static},
            {r["method"]: r.get("mice_p99_us") for r in static},
        )
        if corr is not None:
            notes.append(f"training reward vs mice p99 FCT: {corr.verdict()}")
        out.extend(group)
        if templates <= {r["method"] for r in static}:
            choice = oracle_choice(static)
            if choice is not None:
                oracle = {**choice, "method": ORACLE_PREFIX + choice["method"], "oracle": True}
                out.append(oracle)
                notes.insert(0, f"static oracle: {choice['method']}")
                headroom = _headroom(choice, static, per_seed, label)
                if headroom is not None:
                    notes.insert(1, headroom)
        if notes:
            group[0]["notes"] = notes
    return out


def _headroom(
    choice: Mapping[str, Any],
    static: Sequence[Mapping[str, Any]],
    per_seed: Mapping[tuple[str, str], list[float]],
    label: str,
) -> str | None:
    """How much lower the oracle's mice p99 FCT is than the best preset's, against the seed
    noise of the two (the mean of their seed ranges): what a learner could gain over the best of
    today's static settings, if a fixed setting were all it learnt."""
    presets = [r for r in static if r["method"] in {t.name for t in PRESETS}]
    presets = [r for r in presets if _finite(r.get("mice_p99_us")) is not None]
    if not presets or _finite(choice.get("mice_p99_us")) is None:
        return None
    best = min(presets, key=lambda r: r["mice_p99_us"])
    gap = 100.0 * (choice["mice_p99_us"] / best["mice_p99_us"] - 1.0)
    text = f"oracle vs best preset ({best['method']}): mice p99 {gap:+.1f} %"
    seeds = [per_seed.get((label, r["method"]), []) for r in (choice, best)]
    if all(len(v) > 1 for v in seeds):
        noise = 100.0 * float(np.mean([max(v) - min(v) for v in seeds])) / best["mice_p99_us"]
        verdict = "within" if abs(gap) <= noise else "beyond"
        text += f", seed noise {noise:.1f} %: {verdict} noise"
    return text


def table_notes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The validity lines under the table, ``"<scenario>: <note>"``."""
    return [f"{row['scenario']}: {note}" for row in rows for note in row.get("notes") or []]
