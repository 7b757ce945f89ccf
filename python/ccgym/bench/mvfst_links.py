"""The ``mvfst-links`` and ``mvfst-history`` bench tables: Pantheon's metrics per link (spec
``learning_cc.md`` 5.7; docs/mvfst.md) and short trainings by action history.

One run = one method on one single-flow link for one seed. Scored from the result alone:

* ``thr_mbps``: what the bottleneck link sent over the metrics window, Mb/s (its utilisation
  times its rate). Pantheon measures throughput the same way, from the emulated link's egress
  log, retransmissions included (random loss, like ``mm-loss`` around ``mm-link``, comes after
  that log, so lost packets count). On a link with a token-bucket policer, what the policer
  drops is taken off: a policer limits what the link carries, and counting the bytes it
  discards would credit a sender for flooding it. ``goodput_mbps`` (CSV only) is the flow's
  delivery rate (distinct bytes received, in order or not);
* ``delay_p95_ms``: the 95th percentile of the packets' one-way delay, Pantheon's delay metric:
  the summary's ``flows.one_way_delay_ms.p95`` when the scenario records it
  (``metrics.one_way_delay = true``, as the bundled ``mvfst-*`` links do); otherwise an
  approximation at the sampling interval: the path's base one-way delay (half the flow's base
  RTT: the dumbbells are symmetric) plus the bottleneck queue's drain time at each sample (queue
  bytes / link rate), each sample weighted by the bytes the bottleneck sent in it, so that the
  percentile is over packets, not over time;
* ``loss_pct``: bytes lost (queue drops and random loss) over bytes sent, in percent.

Methods are names: a classic CC (``cubic``, ``newreno``, ``copa``, ``bbr``), a native policy
(``policy:mvfst-default``), or a preset of the suite (``random``: the MVFST-RL agent with the
uniform random native policy). :func:`scatter_section` draws Pantheon's throughput-delay
scatter per link for the HTML report.

``mvfst-history`` runs short trainings instead (:func:`run_history_job`): a method is
``k<K>-lstm`` or ``k<K>-fc`` (action history k, with or without the LSTM), a scenario is the
training link, and the report draws the reward curves (:func:`curves_section`).
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ccgym.bench.pareto import HIGHER, LOWER, Band

if TYPE_CHECKING:
    from ccgym.result import Result

SCORES_VERSION = 1
"""Bumped when the scores change (part of the bench cache key)."""

LINKS_METRICS: dict[str, Band] = {
    "thr_mbps": (HIGHER, 0.05, 0.02),  # 0.05 Mb/s or 2 %
    "delay_p95_ms": (LOWER, 1.0, 0.02),  # 1 ms or 2 %
}
"""Pareto metrics of the ``mvfst-links`` table: (direction, tolerance band)."""

LINKS_COLUMNS = (
    ("thr_mbps", "throughput Mb/s", ".2f"),
    ("delay_p95_ms", "p95 one-way delay ms", ".1f"),
    ("loss_pct", "loss %", ".2f"),
)
"""(metric key, column title, format) of the table."""


def weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The ``q`` quantile (0-1) of ``values`` where each counts ``weights`` times: the smallest
    value whose cumulative weight reaches ``q`` of the total."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    cum = np.cumsum(w)
    if cum.size == 0 or cum[-1] <= 0:
        return float("nan")
    return float(v[np.searchsorted(cum, q * cum[-1], side="left")])


def _policed(scenario: dict[str, Any]) -> bool:
    """Whether a ``[[link]]`` of the scenario polices its traffic (its only link drops are then
    the policer's: the bundled policer link has no random loss)."""
    links = scenario.get("link") or []
    return any(isinstance(lk, dict) and lk.get("policer") for lk in links)


def scores(result: Result) -> dict[str, float | None]:
    """The ``mvfst-links`` metrics of one single-flow run (see the module docstring)."""
    s = result.summary
    flows = result.series["flow_info"]
    window = s.get("window_s") or [0.0, float("inf")]
    goodput = float(flows["window_gbps"].iloc[0]) * 1000.0 if len(flows) else None
    base_ms = float(flows["base_rtt_us"].iloc[0]) / 2000.0 if len(flows) else 0.0
    bn = s.get("bottleneck") or {}
    delay = thr = None
    ports, info = result.series.get("ports"), result.series.get("port_info")
    if bn.get("id") is not None and ports is not None and info is not None:
        rate = info.loc[info["port_id"] == bn["id"], "rate_gbps"]
        p = ports[(ports["port_id"] == bn["id"])]
        p = p[(p["time_s"] >= window[0]) & (p["time_s"] <= window[1])]
        if len(rate) and bn.get("utilization") is not None:
            thr = float(bn["utilization"]) * float(rate.iloc[0]) * 1000.0
            if _policed(result.scenario):
                span = float(window[1]) - float(window[0])
                dropped = float((s.get("network") or {}).get("link_drops_bytes") or 0)
                if span > 0:
                    thr = max(thr - dropped * 8.0 / span / 1e6, 0.0)
        if len(rate) and len(p):
            drain_ms = p["queue_bytes"].to_numpy() * 8.0 / (float(rate.iloc[0]) * 1e9) * 1e3
            sent = p["tx_gbps"].to_numpy()
            delay = base_ms + weighted_percentile(drain_ms, sent, 0.95)
            if not np.isfinite(delay):
                delay = None
    recorded = ((s.get("flows") or {}).get("one_way_delay_ms") or {}).get("p95")
    if recorded is not None:
        delay = float(recorded)
    cons = s.get("conservation") or {}
    sent_b = cons.get("sent_bytes") or 0
    loss = 100.0 * (cons.get("dropped_bytes") or 0) / sent_b if sent_b else None
    return {"thr_mbps": thr, "delay_p95_ms": delay, "loss_pct": loss, "goodput_mbps": goodput}


def run_mvfst_job(
    scenario: str, overrides: Sequence[str], method: str, preset: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One run of the ``mvfst-links`` table (in a worker process): metrics, summary and the
    series of the report's run figures."""
    import ccgym
    from ccgym import policies
    from ccgym.bench.runner import POLICY_PREFIX, _preset_scenario
    from ccgym.bench.series import compact_series, force_flow_series
    from ccgym.scenario import load_scenario

    t0 = time.perf_counter()
    cc = preset["cc"] if preset is not None else method
    if preset is not None:
        data = _preset_scenario(scenario, list(overrides), method, preset)
    else:
        data, _ = load_scenario(scenario, list(overrides))
    force_flow_series(data)
    if cc.startswith(POLICY_PREFIX):
        result = ccgym.run(policies.use_policy(data, cc[len(POLICY_PREFIX) :]))
    elif preset is not None:
        result = ccgym.run(data)
    else:
        result = ccgym.run(data, cc=method)
    return {
        "metrics": scores(result),
        "summary": result.summary,
        "wall_s": time.perf_counter() - t0,
        "series": compact_series(result),
    }


def scatter_section(
    rows: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]], colors: Any
) -> str:
    """The HTML of Pantheon's throughput-delay scatter, one panel per link: each run a small
    dot, each method's mean over seeds a large one; the delay axis reversed (better is up and
    to the right, as Pantheon draws it)."""
    from ccgym.bench.plots import figure_png
    from ccgym.bench.report import _img

    labels = list(dict.fromkeys(r["label"] for r in records))
    if not labels:
        return ""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    cols = min(3, len(labels))
    nrows = (len(labels) + cols - 1) // cols
    fig = Figure(figsize=(4.2 * cols, 3.4 * nrows))
    for i, label in enumerate(labels):
        ax = fig.add_subplot(nrows, cols, i + 1)
        for method in dict.fromkeys(r["method"] for r in records):
            pts = [
                (r["metrics"].get("delay_p95_ms"), r["metrics"].get("thr_mbps"))
                for r in records
                if r["label"] == label and r["method"] == method
            ]
            pts = [(d, t) for d, t in pts if d is not None and t is not None]
            if not pts:
                continue
            d, t = np.array(pts).T
            color = colors.get(method) if isinstance(colors, Mapping) else None
            ax.scatter(d, t, s=12, alpha=0.5, color=color)
            ax.scatter([d.mean()], [t.mean()], s=60, color=color, label=method, edgecolors="k")
        ax.invert_xaxis()
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("95th percentile one-way delay (ms)")
        ax.set_ylabel("mean throughput (Mb/s)")
        ax.grid(alpha=0.3)
        if i == 0:
            ax.legend(fontsize=7)
    fig.tight_layout()
    png = figure_png(fig)
    title = "throughput against 95th-percentile one-way delay, per link"
    return (
        f"<h2>Throughput and delay per link</h2><figure>{_img(png, title)}<figcaption>"
        f"{html.escape(title)}: small dots are runs, large dots the mean over seeds; the delay "
        "axis is reversed, as Pantheon draws it (better: up and right).</figcaption></figure>"
    )


# --------------------------------------------------------------------------------------------
# mvfst-history: short trainings with action histories k and with or without the LSTM

HISTORY_METRICS: dict[str, Band] = {
    "reward_last": (HIGHER, 0.02, 0.05),
}
"""Pareto metric of the ``mvfst-history`` table: the reward per step at the end of training."""

HISTORY_COLUMNS = (
    ("reward_first", "reward/step, first 10 %", ".3f"),
    ("reward_last", "reward/step, last 10 %", ".3f"),
    ("env_steps", "env steps", ".0f"),
    ("steps_per_s", "steps/s", ".0f"),
)
"""(metric key, column title, format) of the ``mvfst-history`` table."""

HISTORY_ENV_STEPS = 60_000
"""Environment steps of one ``mvfst-history`` training (short: the curves' first part): the
default of the suite file's ``env_steps`` key, which is part of each run's cache key."""


def history_method(method: str) -> tuple[int, bool]:
    """``(k, lstm)`` of an ``mvfst-history`` method name: ``k<K>-lstm`` or ``k<K>-fc``
    (FC 512, FC 512 and the last reward straight into the heads)."""
    import re

    m = re.fullmatch(r"k(\d+)-(lstm|fc)", method)
    if m is None:
        raise ValueError(
            f"mvfst-history: method {method!r} is not k<K>-lstm or k<K>-fc (e.g. k20-lstm)"
        )
    return int(m.group(1)), m.group(2) == "lstm"


def history_config(
    scenario: str, overrides: Sequence[str], method: str, env_steps: int | None = None
) -> dict[str, Any]:
    """The ``ccgym train impala`` config of one ``mvfst-history`` run: ``mvfst-default``'s,
    on one link, with the method's k and network, for ``env_steps`` steps (default
    :data:`HISTORY_ENV_STEPS`, read at the call); the seed is the
    last ``seed=`` of ``overrides``."""
    from ccgym.train.config import read_config

    k, lstm = history_method(method)
    seed = 1
    rest = []
    for o in overrides:
        if o.startswith("seed="):
            seed = int(o.split("=", 1)[1])
        else:
            rest.append(o)
    cfg = read_config("mvfst-default")
    steps = HISTORY_ENV_STEPS if env_steps is None else env_steps
    cfg["train"].update(
        seed=seed, env_steps=steps, checkpoint_every=0, export_policy=False, env_runners=1
    )
    cfg["scenario"] = [{"label": str(scenario), "name": scenario, "overrides": rest}]
    cfg["agent"]["action_history"] = k
    cfg["network"]["lstm"] = lstm
    return cfg


def run_history_job(
    scenario: str, overrides: Sequence[str], method: str, env_steps: int | None = None
) -> dict[str, Any]:
    """One short training of the ``mvfst-history`` table (RLlib's IMPALA, a local Ray) of
    ``env_steps`` steps (the suite's ``env_steps``; default :data:`HISTORY_ENV_STEPS`): its
    reward curve (``curve``: environment steps and reward per step per iteration) and the
    first and last tenth's mean reward per step."""
    import tempfile

    from ccgym.agents import impala

    t0 = time.perf_counter()
    cfg = history_config(scenario, overrides, method, env_steps)
    with tempfile.TemporaryDirectory(prefix="mvfst-history-") as tmp:
        result = impala.train_from_config(cfg, tmp, progress=False)
        lines = (Path(tmp) / "history.jsonl").read_text().splitlines()
    import json

    hist = [json.loads(line) for line in lines]
    pts = [(h["env_steps"], h["reward_per_step"]) for h in hist if "reward_per_step" in h]
    steps = [p[0] for p in pts]
    rewards = [p[1] for p in pts]
    tenth = max(1, len(rewards) // 10)
    metrics = {
        "reward_first": float(np.mean(rewards[:tenth])) if rewards else None,
        "reward_last": float(np.mean(rewards[-tenth:])) if rewards else None,
        "env_steps": float(result["env_steps"]),
        "steps_per_s": float(result["steps_per_s"]),
    }
    return {
        "metrics": metrics,
        "summary": {},
        "wall_s": time.perf_counter() - t0,
        "curve": {"env_steps": steps, "reward_per_step": rewards},
    }


def curves_section(records: Sequence[Mapping[str, Any]], colors: Any) -> str:
    """The HTML of the training reward curves, one panel per link, one line per method (the
    mean over seeds at each iteration index)."""
    from ccgym.bench.plots import figure_png
    from ccgym.bench.report import _img

    labels = list(dict.fromkeys(r["label"] for r in records))
    if not labels:
        return ""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 3.6 * len(labels)))
    for i, label in enumerate(labels):
        ax = fig.add_subplot(len(labels), 1, i + 1)
        for method in dict.fromkeys(r["method"] for r in records):
            curves = [
                r.get("curve") or {}
                for r in records
                if r["label"] == label and r["method"] == method
            ]
            curves = [c for c in curves if c.get("reward_per_step")]
            if not curves:
                continue
            n = min(len(c["reward_per_step"]) for c in curves)
            x = np.asarray(curves[0]["env_steps"][:n], float)
            y = np.mean([c["reward_per_step"][:n] for c in curves], axis=0)
            color = colors.get(method) if isinstance(colors, Mapping) else None
            ax.plot(x, y, label=method, color=color, lw=1.2)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("environment steps")
        ax.set_ylabel("reward per step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    title = "training reward per step against environment steps"
    return (
        f"<h2>Training curves</h2><figure>{_img(figure_png(fig), title)}<figcaption>"
        f"{html.escape(title)}, mean over seeds; k = the action history, lstm or fc = with or "
        "without the LSTM (published: k = 0 or 1 struggles).</figcaption></figure>"
    )


__all__ = [
    "HISTORY_COLUMNS",
    "HISTORY_ENV_STEPS",
    "HISTORY_METRICS",
    "curves_section",
    "history_config",
    "history_method",
    "run_history_job",
    "LINKS_COLUMNS",
    "LINKS_METRICS",
    "SCORES_VERSION",
    "run_mvfst_job",
    "scatter_section",
    "scores",
    "weighted_percentile",
]
