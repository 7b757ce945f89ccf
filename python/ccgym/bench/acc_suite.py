"""The ``acc`` bench table: ACC's learned switch agents against the static presets and the
static oracle on the ACC scenarios (issue 18, deliverables 6 and 7; docs/acc.md).

Methods (``[methods.NAME]`` presets of ``suites/acc.toml``). A method is an ACC method (learned
switch agents) by its preset's ``acc`` key, never by its name; the name is only a label:

* ``SECN0``, ``SECN1``, ``SECN2`` (``method_grid = "acc-presets"``): static, DCQCN hosts;
* ``static oracle``: the best static template of the scenario's workload and load, as the
  ``acc-oracle`` suite found it (:data:`ORACLE_TEMPLATES`; for a switching run, the oracle of
  the workload it switches to), run as a static template;
* ``acc = "offline"`` (``ACC offline``): a Q-network, greedy, on every switch queue, run
  natively (``agent.queue_policy``, :func:`native_scenario`: the same choices at the same
  instants as the Python greedy driver :func:`ccgym.acc.training.run_policy`, without Python
  in the loop). The Q-network is the method's ``agent.queue_policy`` (a bundled name or a path,
  set by the preset's overrides, the suite's or ``ccgym bench --set``), by default the bundled
  :data:`ACC_POLICY` (``acc-default``: the bundled suite's ACC rows);
* ``acc = "online"`` (``ACC online``): the same policy learning on during the run (epsilon
  0.01, Adam at the config's ``online.lr``: :data:`ONLINE_CONFIG`);
* methods whose preset has ``cc = "policy:adpg-default"`` run the hosts with the ADPG policy
  instead of DCQCN, natively (``agent.policy``), the switches as their name says (``ACC
  offline``: both policies native in one run; ``ACC online``: the queue agents step from
  Python, so the ADPG flows are answered in Python with the native float32 arithmetic,
  :func:`ccgym.policies.forward`). ``ADPG hosts`` in the method's name is only a label; the
  preset's ``cc`` decides.

Every run is scored with :func:`ccgym.bench.acc.scores` plus, for ACC runs, the mean template
index (``template_mean``: per decision for a run stepped from Python; for a native run, in force
over the agents' queues and the run, time-weighted, from the ``ecn`` log) and, for a run stepped
from Python, the agents' mean reward and decision count (a native run leaves them empty). ACC
runs also keep the ECN settings over time per switch tier (:func:`ecn_tier_arrays`) beside
their series; the report draws them (:func:`report_section`).

Under the table, per scenario: how ACC compares with the best preset and the oracle (mice mean
and p99 FCT, utilisation), and the spread of mice p99 across the static methods against the
seed noise (:func:`ccgym.acc.validity.spread_check`).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ccgym._errors import ScenarioError
from ccgym.acc.templates import GRID, PRESETS, ecn_overrides, grid_index

SCORES_VERSION = 2
"""Bumped when the scores or the ACC runs change (part of the bench cache key)."""

ACC_POLICY = "acc-default"
"""The policy of the ACC methods (a bundled name or a path)."""

ORACLE_METHOD = "static oracle"
"""The name of the oracle method."""

ONLINE_CONFIG = "acc-default"
"""The training config whose ``[ddqn]`` and ``[online]`` tables the ``ACC online`` runs use
(configs/acc-default.toml: epsilon 0.01, Adam at 1e-4, one step per 8 transitions)."""

ORACLE_TEMPLATES: dict[tuple[str, float | None], str] = {
    ("acc-websearch", 0.3): "20K-160K-5%",
    ("acc-websearch", 0.5): "40K-320K-50%",
    ("acc-websearch", 0.7): "20K-160K-5%",
    ("acc-datamining", 0.3): "10K-80K-50%",
    ("acc-datamining", 0.5): "5K-40K-50%",
    ("acc-datamining", 0.7): "10K-80K-50%",
    ("acc-storage", 0.3): "20K-40K-5%",
    ("acc-storage", 0.5): "40K-80K-5%",
    ("acc-storage", 0.7): "20K-160K-5%",
    # switching runs: the oracle of the workload they switch to
    ("acc-switch-workload", None): "40K-80K-5%",  # -> storage 50 %
    ("acc-switch-load", None): "20K-160K-5%",  # -> WebSearch 70 %
    # the incasts (over WebSearch at 30 %; the acc-oracle suite, seeds 1 and 2)
    ("acc-incast-8x32", 0.3): "40K-80K-50%",
    ("acc-incast-15x8", 0.3): "80K-160K-50%",
    # the k = 8 fat tree (the acc-oracle-fattree suite: the full grid, seed 1 only)
    ("acc-fattree-websearch", 0.5): "20K-160K-5%",
    ("acc-fattree-datamining", 0.5): "40K-80K-5%",
    ("acc-fattree-storage", 0.5): "20K-160K-50%",
    ("acc-fattree-switch", None): "20K-160K-50%",  # -> storage 50 % on the fat tree
}
"""The static oracle per (scenario, load of its first workload), as ``ccgym bench --suite
acc-oracle`` chose it (35 templates, seeds 1 and 2; docs/acc.md, "Measured: the oracle and the
checks"), and on the fat tree ``ccgym bench --suite acc-oracle-fattree`` (35 templates, seed 1).
Rerun those suites and update this table when the scenarios or the grid change."""


SWITCHING_RUNS = ("acc-switch", "acc-fattree-switch")
"""Name prefixes of the switching runs: their oracle is keyed by the scenario alone (load
None), the oracle of the workload they switch to."""


ACC_MODES = ("offline", "online")
"""The values of a method preset's ``acc`` key."""


def acc_mode(preset: Mapping[str, Any] | None) -> str | None:
    """How a method runs the learned switch agents: its preset's ``acc`` key, ``"offline"`` or
    ``"online"``; None for a method without (static ECN, whatever its name)."""
    mode = (preset or {}).get("acc")
    return mode if isinstance(mode, str) else None


def is_acc(record: Mapping[str, Any]) -> bool:
    """Whether a run record (cache record or its row source) is of an ACC method:
    :func:`run_acc_job` marks them with ``acc``."""
    return isinstance(record.get("acc"), str)


def acc_policy(data: Mapping[str, Any]) -> str:
    """The Q-network of an ACC run of scenario ``data``: its ``agent.queue_policy`` when set (a
    bundled name or a path), else :data:`ACC_POLICY`."""
    agent = data.get("agent")
    spec = agent.get("queue_policy") if isinstance(agent, Mapping) else None
    return spec if isinstance(spec, str) and spec not in ("", "external") else ACC_POLICY


def learner_code_hash() -> str:
    """A hash of the ACC policy file, the learner and the driver (part of the cache key of an
    ACC run: the native module's hash does not cover them)."""
    import ccgym.acc
    from ccgym import policies
    from ccgym.agents import ddqn

    h = hashlib.sha256(policies.policy_path(ACC_POLICY).read_bytes())
    for path in sorted(Path(ccgym.acc.__file__).parent.glob("*.py")):
        h.update(path.read_bytes())
    h.update(Path(ddqn.__file__).read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update((Path(ddqn.__file__).parents[1] / "configs" / f"{ONLINE_CONFIG}.toml").read_bytes())
    return h.hexdigest()[:16]


def oracle_template(data: Mapping[str, Any]) -> str:
    """The oracle's template for a loaded scenario (its name and first workload's load)."""
    name = str(data.get("name"))
    workloads = data.get("workload") or [{}]
    load = None if name.startswith(SWITCHING_RUNS) else workloads[0].get("load")
    key = (name, None if load is None else round(float(load), 3))
    if key not in ORACLE_TEMPLATES:
        raise ScenarioError(
            f"{ORACLE_METHOD}: no oracle for {name} at load {load}; "
            f"known: {', '.join(f'{n} {x}' for n, x in ORACLE_TEMPLATES)}"
        )
    return ORACLE_TEMPLATES[key]


def _adpg_flow_policy(policy: str) -> tuple[dict[str, Any], Any]:
    """The ADPG ``[agent]`` table of ``policy`` and its float32 forward pass in Python."""
    import numpy as np

    from ccgym import policies

    pol = policies.load_policy(policies.policy_path(policy))

    def act(obs: np.ndarray) -> np.ndarray:
        return np.asarray(policies.forward(pol, obs), np.float32)[:, 0]

    return policies.agent_table(pol), act


def run_acc_job(
    scenario: str,
    overrides: Sequence[str],
    method: str,
    preset: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """One run of the ``acc`` table (in a worker process): metrics, summary and series."""
    import ccgym
    from ccgym import policies
    from ccgym.bench.acc import scores
    from ccgym.bench.series import compact_series, force_flow_series
    from ccgym.scenario import load_scenario, set_cc

    t0 = time.perf_counter()
    cc = (preset or {}).get("cc", method)
    extra = list((preset or {}).get("overrides") or [])
    adpg = cc.startswith("policy:")
    mode = acc_mode(preset)
    data, base = load_scenario(scenario, [*overrides, *extra], cc=None if adpg else cc)
    force_flow_series(data)
    if method == ORACLE_METHOD:
        template = oracle_template(data)
        data, base = load_scenario(data, ecn_overrides(GRID[grid_index(template)]))
    if mode is None:
        if adpg:
            data = policies.use_policy(data, cc[len("policy:") :])
        result = ccgym.run(data)
        metrics = scores(result.summary, result.series)
        if method == ORACLE_METHOD:
            metrics["oracle_index"] = float(grid_index(template))
        return {
            "metrics": metrics,
            "summary": result.summary,
            "wall_s": time.perf_counter() - t0,
            "series": compact_series(result),
        }
    online = mode == "online"
    policy = acc_policy(data)
    if isinstance(data.get("agent"), dict):  # the queue agents' table is built anew from it
        data["agent"].pop("queue_policy", None)
        if not data["agent"]:
            del data["agent"]
    marks = {"acc": mode, "acc_policy": str(policies.policy_path(policy))}
    if not online:  # greedy: the Q-network runs inside the simulator
        data = native_scenario(data, base, policy, cc[len("policy:") :] if adpg else None)
        result = ccgym.run(data)
        metrics = scores(result.summary, result.series)
        metrics["template_mean"] = ecn_template_mean(result.series)
        metrics["agent_reward"] = None
        metrics["decisions"] = None
        return {
            "metrics": metrics,
            "summary": result.summary,
            "wall_s": time.perf_counter() - t0,
            "series": {**compact_series(result), **ecn_tier_arrays(result.series)},
            **marks,
        }
    from ccgym.acc.training import run_policy
    from ccgym.train.config import read_config

    flow_policy = None
    if adpg:
        table, flow_policy = _adpg_flow_policy(cc[len("policy:") :])
        set_cc(data, "agent")
        data["agent"] = {**table, **dict(data.get("agent") or {})}
    run, _ = run_policy(
        policy,
        data,
        online=online,
        config=read_config(ONLINE_CONFIG) if online else None,
        flow_policy=flow_policy,
    )
    from ccgym.result import Result

    result = Result.from_run(_native_run(run.summary, run.series, data, time.perf_counter() - t0))
    return {
        "metrics": run.metrics,
        "summary": run.summary,
        "wall_s": time.perf_counter() - t0,
        "series": {**compact_series(result), **ecn_tier_arrays(run.series)},
        **marks,
    }


def native_scenario(
    data: Mapping[str, Any],
    base: str | Path,
    policy: str = ACC_POLICY,
    flow_policy: str | None = None,
) -> dict[str, Any]:
    """The scenario of a native ACC run: the queue agents of :func:`ccgym.acc.driver.
    acc_scenario` on every switch queue with the keys ``policy`` was trained with (as
    :func:`ccgym.acc.training.run_policy` builds them), answered by the simulator
    (``agent.queue_policy``); the flows keep their CC or, with ``flow_policy``, run that
    native host policy (its ``[agent]`` keys under the queue keys, as in the stepped run)."""
    from ccgym import policies
    from ccgym.acc.driver import acc_scenario
    from ccgym.acc.training import policy_agent

    if flow_policy is not None:
        data = policies.use_policy(data, flow_policy)
    out = acc_scenario(data, {**policy_agent(policy), "queues": "all"}, base)
    table = out["agent"]
    table["queue_policy"] = str(policies.policy_path(policy))
    if flow_policy is not None:
        table["policy"] = str(policies.policy_path(flow_policy))
    return out


ECN_PREFIX = "ecn_"
"""Prefix of the ECN-over-time arrays in an ACC run's stored series."""

ECN_POINTS = 600
"""Time bins of the stored ECN-over-time arrays (a 150 ms run at 100 us: 1,500 ticks)."""


def ecn_template_mean(series: Mapping[str, Any]) -> float | None:
    """The mean template index in force over the switch data queues and the run, weighted by
    time (NaN templates, profiles outside the grid, left out); None without an ``ecn`` log."""
    import numpy as np

    from ccgym.acc.ecn_series import tier_series

    try:
        tiers = tier_series(series, by="port")
    except ValueError:
        return None
    t = np.asarray(tiers["template"], float)
    return float(np.nanmean(t)) if np.any(np.isfinite(t)) else None


def ecn_tier_arrays(series: Mapping[str, Any]) -> dict[str, Any]:
    """The ECN settings over time per switch tier (:func:`ccgym.acc.ecn_series.tier_series`),
    averaged into :data:`ECN_POINTS` time bins, keyed ``ecn_<field>``; empty when the run has
    no ``ecn`` log."""
    import warnings

    import numpy as np

    from ccgym.acc.ecn_series import tier_series

    try:
        tiers = tier_series(series, by="tier")
    except ValueError:
        return {}
    times = np.asarray(tiers["time_s"], float)
    n = min(ECN_POINTS, len(times))
    out: dict[str, Any] = {f"{ECN_PREFIX}groups": np.asarray(tiers["groups"], dtype=str)}
    if n == 0:
        return out
    edges = np.linspace(0, len(times), n + 1).astype(int)
    out[f"{ECN_PREFIX}time_s"] = np.array(
        [times[a:b].mean() for a, b in zip(edges[:-1], edges[1:], strict=True)]
    )
    for key, arr in tiers.items():
        if key in ("time_s", "groups"):
            continue
        arr = np.asarray(arr, float)
        if arr.ndim == 2:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN bin stays NaN
                fn = np.nanmax if key == "queue_max_bytes" else np.nanmean
                arr = np.stack(
                    [fn(arr[:, a:b], axis=1) for a, b in zip(edges[:-1], edges[1:], strict=True)],
                    axis=1,
                )
        out[f"{ECN_PREFIX}{key}"] = arr.astype(np.float32)
    return out


def report_section(records: Sequence[Mapping[str, Any]], run_dir: str | Path) -> str:
    """The HTML report's section of ECN settings over time: per scenario and ACC method, the
    first seed's ECN profile in force per switch tier next to its queue
    (:func:`ccgym.bench.plots.ecn_figure`)."""
    import html

    from ccgym.bench.plots import ecn_figure, figure_png, png_data_uri
    from ccgym.bench.series import load_series, series_path

    first: dict[tuple[str, str], Mapping[str, Any]] = {}
    for rec in records:
        if is_acc(rec):
            key = (rec["label"], rec["method"])
            if key not in first or rec["seed"] < first[key]["seed"]:
                first[key] = rec
    figs = []
    for (label, method), rec in first.items():
        series = load_series(series_path(run_dir, rec["key"])) or {}
        tiers = {k[len(ECN_PREFIX) :]: v for k, v in series.items() if k.startswith(ECN_PREFIX)}
        if "time_s" not in tiers:
            continue
        name = f"{label} · {method} · seed {rec['seed']}"
        png = figure_png(ecn_figure(tiers, name))
        figs.append(
            f'<figure><img src="{png_data_uri(png)}" alt="{html.escape(name)}">'
            f"<figcaption>{html.escape(name)}</figcaption></figure>"
        )
    if not figs:
        return ""
    return "\n".join(
        [
            "<h2>ECN settings over time per switch tier</h2>",
            '<p class="note">Per scenario and ACC method, the first seed: per switch tier, the '
            "mean queue of its ports (solid) and the largest (thin), Kmin and Kmax in force "
            "(dashed: the mean over the tier's queues, shaded from the lowest to the highest), "
            f"Pmax (dotted, right axis); {ECN_POINTS} time bins.</p>",
            '<div class="runs">',
            *figs,
            "</div>",
        ]
    )


def _native_run(summary: dict[str, Any], series: dict[str, Any], data: Any, wall: float) -> Any:
    from ccgym.runner import NativeRun

    timing = {"setup_s": 0.0, "run_s": wall, "finish_s": 0.0, "wall_s": wall}
    timing["events_per_s"] = float("nan")
    return NativeRun(summary, series, data, timing)


# --------------------------------------------------------------------------------------------
# The table's notes
# --------------------------------------------------------------------------------------------


def _num(x: Any) -> float | None:
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return None if math.isnan(x) else float(x)


def _vs(row: Mapping[str, Any], ref: Mapping[str, Any]) -> str:
    parts = []
    for key, what in (("mice_mean_us", "mice mean"), ("mice_p99_us", "mice p99")):
        a, b = _num(row.get(key)), _num(ref.get(key))
        if a is not None and b:
            parts.append(f"{what} {100.0 * (a / b - 1.0):+.1f} %")
    a, b = _num(row.get("util")), _num(ref.get("util"))
    if a is not None and b is not None:
        parts.append(f"util {a - b:+.1f} points")
    return ", ".join(parts)


def derive_rows(
    rows: list[dict[str, Any]], records: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The rows as they are, with notes on each scenario's first row: each ACC method against
    the best preset (lowest mice p99) and the oracle, whether it meets the issue's bar (at or
    below every preset on mice mean and p99 with at most 1 point of utilisation lost, within
    5 % of the oracle's mice p99), and the spread of mice p99 across the static methods."""
    from ccgym.acc.validity import spread_check

    per_seed: dict[tuple[str, str], list[float]] = {}
    for rec in records:
        v = _num((rec.get("metrics") or {}).get("mice_p99_us"))
        if v is not None:
            per_seed.setdefault((rec["label"], rec["method"]), []).append(v)
    presets = {t.name for t in PRESETS}
    acc_methods = {(rec["label"], rec["method"]) for rec in records if is_acc(rec)}
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_scenario.setdefault(row["scenario"], []).append(row)
    for label, group in by_scenario.items():
        notes: list[str] = []
        static = [r for r in group if r["method"] in presets and "ADPG" not in r["method"]]
        oracle = next((r for r in group if r["method"] == ORACLE_METHOD), None)
        scored = [r for r in static if _num(r.get("mice_p99_us")) is not None]
        best = min(scored, key=lambda r: r["mice_p99_us"]) if scored else None
        for row in group:
            if (label, row["method"]) not in acc_methods or _num(row.get("mice_p99_us")) is None:
                continue
            text = f"{row['method']}:"
            if best is not None:
                text += f" vs best preset {best['method']}: {_vs(row, best)};"
            if oracle is not None:
                text += f" vs oracle: {_vs(row, oracle)};"
            text += " " + _bar(row, scored, oracle)
            notes.append(text)
        if len(scored) + (oracle is not None) >= 2:
            sp = spread_check(
                {
                    r["method"]: per_seed.get((label, r["method"]), [])
                    for r in [*scored, *([oracle] if oracle else [])]
                }
            )
            if sp is not None:
                notes.append(f"mice p99 across the static methods: {sp.verdict()}")
        if notes:
            group[0]["notes"] = notes
    return rows


def _bar(
    row: Mapping[str, Any], presets: Sequence[Mapping[str, Any]], oracle: Mapping[str, Any] | None
) -> str:
    """The issue's bar for one ACC row, as a verdict."""
    if not presets and oracle is None:  # a suite without static methods has no bar to meet
        return "no static method to compare with"
    misses = []
    for p in presets:
        for key in ("mice_mean_us", "mice_p99_us"):
            a, b = _num(row.get(key)), _num(p.get(key))
            if a is not None and b is not None and a > b:
                misses.append(f"{key.replace('_us', '')} above {p['method']}")
    util = _num(row.get("util"))
    best_util = max((_num(p.get("util")) or -math.inf for p in presets), default=None)
    if util is not None and best_util is not None and util < best_util - 1.0:
        misses.append(f"util {best_util - util:.1f} points below the best preset")
    if oracle is not None:
        a, b = _num(row.get("mice_p99_us")), _num(oracle.get("mice_p99_us"))
        if a is not None and b and a > 1.05 * b:
            misses.append(f"mice p99 {100.0 * (a / b - 1.0):.0f} % above the oracle")
    return "meets the bar" if not misses else "misses the bar: " + "; ".join(misses)


def table_notes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The lines under the table, ``"<scenario>: <note>"``."""
    return [f"{row['scenario']}: {note}" for row in rows for note in row.get("notes") or []]
