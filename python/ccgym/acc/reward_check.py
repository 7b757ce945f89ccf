"""Which queue-agent reward tracks tail FCT? The validity check of the agents' own rewards.

Every static template of the grid is run on a scenario with ACC's queue agents on every switch
port, all holding that template (so the run is the static run, byte for byte: the agents only
observe). From the agents' feature rows over the metrics window it takes the terms of the
rewards of ``sim/queue_agent.rs`` (mean over agents and intervals):

* ``tx`` (``tx_rate``), ``queue`` (the queue at the sample), both over the bytes of one
  interval at line rate: the ``linear`` reward is ``tx - reward_beta x queue``;
* ``peak2`` and ``mean2``, the squares of the interval's peak and mean queue over ``q_ref``: the
  ``quadratic`` reward is ``tx - queue_peak_weight x peak2 - queue_mean_weight x mean2``.

Since every reward is linear in these means, one run per template gives the run reward of any
weights. :func:`correlations` ranks the templates by each reward and by mice p99 FCT
(Spearman's rho, :func:`ccgym.acc.validity.reward_correlation`): a reward worth training on has
rho < 0. ``python -m ccgym.acc.reward_check`` runs it (cached per run as JSON under ``--out``);
docs/acc.md gives the numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ccgym.acc.driver import QUEUE_AGENT, acc_scenario
from ccgym.acc.templates import GRID, ecn_overrides
from ccgym.acc.validity import reward_correlation
from ccgym.agent_defaults import QUEUE_FEATURES
from ccgym.units import parse_time_s as _seconds

COL = {name: i for i, name in enumerate(QUEUE_FEATURES)}

REWARDS: dict[str, dict[str, float]] = {
    "linear": {"beta": 1.0},
    "quadratic": {"peak": 0.5, "mean": 0.5},
    "quadratic-peak": {"peak": 1.0, "mean": 0.0},
    "quadratic-mean": {"peak": 0.0, "mean": 1.0},
}
"""The rewards compared: name -> weights (``linear``: ``beta``; ``quadratic*``: peak and mean
weights). ``quadratic`` is the core's default weights."""


def template_run(
    scenario: str, overrides: Sequence[str], index: int, agent: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One static run of template ``index`` with observing agents: the bench metrics
    (:func:`ccgym.bench.acc.scores`) and the reward terms."""
    from ccgym import _sim
    from ccgym.bench.acc import scores
    from ccgym.runner import scenario_json
    from ccgym.scenario import load_scenario

    data, base = load_scenario(scenario, [*overrides, *ecn_overrides(GRID[index])])
    data = acc_scenario(data, agent, base)
    keys = data["agent"]
    ratio = _seconds(str(keys["queue_interval"])) / _seconds(str(keys["queue_ref"]))
    sim = _sim.Simulation(scenario_json(data), str(base))
    window = [_seconds(str(w)) for w in data["metrics"]["window"]]
    nf = len(QUEUE_FEATURES)
    rows = []
    over = False
    while not over:
        over, batch = sim.agent_step()
        q = batch["queue"]
        t = np.asarray(q["time_s"], float)
        keep = (t > window[0]) & (t <= window[1]) & ~np.asarray(q["truncated"], bool)
        rows.append(np.asarray(q["obs"], np.float64)[keep, -nf:])
        if len(q["agent"]):
            sim.agent_act(np.full(len(q["agent"]), float(index), np.float32))
    summary, series = sim.finish()
    feats = np.concatenate(rows)
    metrics = scores(json.loads(summary), dict(series))
    peak = feats[:, COL["max_queue"]] * ratio
    mean = feats[:, COL["mean_queue"]] * ratio
    terms = {
        "tx": float(feats[:, COL["tx_rate"]].mean()),
        "queue": float(feats[:, COL["queue"]].mean()),
        "peak2": float((peak**2).mean()),
        "mean2": float((mean**2).mean()),
        "samples": int(len(feats)),
    }
    return {"template": GRID[index].name, "metrics": metrics, "terms": terms}


def reward_of(terms: Mapping[str, float], name: str) -> float:
    """The run reward called ``name`` (:data:`REWARDS`) from a run's terms."""
    w = REWARDS[name]
    if name == "linear":
        return terms["tx"] - w["beta"] * terms["queue"]
    return terms["tx"] - w["peak"] * terms["peak2"] - w["mean"] * terms["mean2"]


def correlations(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per reward (the spec's, ``spec``, and :data:`REWARDS`): Spearman's rho and p of the
    run reward against mice p99 FCT across templates, seeds averaged per template."""
    by_t: dict[str, list[Mapping[str, Any]]] = {}
    for r in runs:
        by_t.setdefault(r["template"], []).append(r)

    def mean(vals: list[float | None]) -> float | None:
        ok = [v for v in vals if v is not None and math.isfinite(v)]
        return float(np.mean(ok)) if ok else None

    p99 = {t: mean([r["metrics"]["mice_p99_us"] for r in rs]) for t, rs in by_t.items()}
    out: dict[str, Any] = {}
    rewards = {"spec": {t: mean([r["metrics"]["reward"] for r in rs]) for t, rs in by_t.items()}}
    for name in REWARDS:
        rewards[name] = {
            t: mean([reward_of(r["terms"], name) for r in rs]) for t, rs in by_t.items()
        }
    for name, rew in rewards.items():
        c = reward_correlation(rew, p99)
        out[name] = None if c is None else {"rho": c.rho, "p": c.p, "templates": c.templates}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ccgym.acc.reward_check``: every template on the given scenarios, cached."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", action="append", required=True, metavar="NAME[:LOAD]")
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--out", default="results/acc-reward-check")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {}
    for spec in args.scenario:
        name, _, load = spec.partition(":")
        runs = []
        for seed in [int(s) for s in args.seeds.split(",")]:
            overrides = [*args.set, f"seed={seed}"]
            if load:
                overrides.append(f"workload[0].load={load}")
            for i in range(len(GRID)):
                ident = json.dumps([name, overrides, i, QUEUE_AGENT], sort_keys=True)
                key = hashlib.sha256(ident.encode()).hexdigest()[:20]
                path = out / f"{key}.json"
                if path.is_file():
                    runs.append(json.loads(path.read_text()))
                    continue
                run = template_run(name, overrides, i)
                path.write_text(json.dumps(run))
                runs.append(run)
        report[spec] = correlations(runs)
        print(spec, json.dumps(report[spec]), flush=True)
    (out / "report.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
