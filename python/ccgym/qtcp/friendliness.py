"""Friendliness: the share of a bottleneck one flow takes against K flows of another CC.

"X against K flows of Y" on the ``friendliness-dumbbell`` scenario (the QTCP-AIMD dumbbell: 40
Mb/s bottleneck, 100 Mb/s access links, RTT 120 ms, 100-packet drop-tail buffer), every sender
starting at once. X and Y are any CC the core knows (``"newreno"``, ``"cubic"``, or a ``cc``
table such as ``{"algorithm": "cubic", "beta": 0.8}``), a native policy
(``"policy:NAME-OR-PATH"``, run in the core as ``ccgym bench`` runs ``policy:`` methods), or a
QTCP variant (``"qtcp"``, ``"qtcp-aimd"`` or any :class:`~ccgym.qtcp.QtcpConfig`), which learns
online through :func:`~ccgym.qtcp.run_qtcp` while the other flows keep their CC. The score reads
only the run's result, so it is the same for every kind of flow: each flow's mean delivery rate
after a warm-up, the share of their sum flow 0 takes, that share over the fair share 1 / (K + 1),
and Jain's index over all the flows.

    from ccgym.qtcp.friendliness import friendliness
    f = friendliness("qtcp-aimd", "cubic", competitors=1, duration="300s")
    f.share, f.share / f.fair_share, f.jain

From the command line (one row per kind of competitor and K, mean over the seeds)::

    python -m ccgym.qtcp friendliness qtcp-aimd --against newreno cubic -k 1 3 --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ccgym._errors import ScenarioError
from ccgym.qtcp.driver import VARIANTS, QtcpConfig, qtcp_scenario, run_qtcp
from ccgym.qtcp.phases import _seconds, jain
from ccgym.result import Result
from ccgym.runner import native, run, scenario_json
from ccgym.scenario import load_scenario

__all__ = [
    "Friendliness",
    "check_friendliness",
    "friendliness",
    "friendliness_scenario",
    "friendliness_table",
]

SCENARIO = "friendliness-dumbbell"
"""The bundled scenario the family is built from."""

Kind = str | Mapping[str, Any] | QtcpConfig
"""A flow kind: a CC name, a ``cc`` table, ``"policy:NAME-OR-PATH"``, a QTCP variant name or a
:class:`QtcpConfig`."""

POLICY_PREFIX = "policy:"
"""Prefix of a native policy kind (as in ``ccgym bench`` suites)."""


def _policy(kind: Kind) -> str | None:
    """The policy name or path of a ``policy:`` kind, or None."""
    if isinstance(kind, str) and kind.startswith(POLICY_PREFIX):
        return kind[len(POLICY_PREFIX) :]
    return None


def _learned(kind: Kind) -> QtcpConfig | None:
    """The QTCP variant ``kind`` names, or None for a classic CC."""
    if isinstance(kind, QtcpConfig):
        return kind
    if isinstance(kind, str):
        return VARIANTS.get(kind)
    return None


def _agent(kind: Kind) -> QtcpConfig | str | None:
    """What drives a kind's flows as agents (a QTCP variant or a policy spec), or None."""
    learned = _learned(kind)
    return learned if learned is not None else _policy(kind)


def _variant(test: Kind, against: Kind) -> QtcpConfig | str | None:
    """The agent the run drives, a QTCP variant or a policy (None: all classic CCs). All agent
    flows of a run share one ``[agent]`` table, so two different agents are an error."""
    a, b = _agent(test), _agent(against)
    if a is not None and b is not None and a != b:
        raise ScenarioError(
            f"friendliness: {_label(test)!r} against {_label(against)!r}: one run drives one"
            " learned variant or policy; put a classic CC on one side"
        )
    return a if a is not None else b


def _cc_table(kind: Kind) -> dict[str, Any]:
    """The per-flow ``cc`` table of a kind (``agent`` for a learned one or a policy)."""
    if _agent(kind) is not None:
        return {"algorithm": "agent"}
    if isinstance(kind, str):
        return {"algorithm": kind}
    if isinstance(kind, Mapping):
        if "algorithm" not in kind:
            raise ScenarioError(
                f"friendliness: a cc table needs an 'algorithm' key: {dict(kind)!r}"
            )
        return dict(kind)
    raise TypeError(f"friendliness: not a CC name, cc table or QtcpConfig: {kind!r}")


def _label(kind: Kind) -> str:
    if isinstance(kind, QtcpConfig):
        return kind.name
    if isinstance(kind, Mapping):
        return str(kind.get("algorithm"))
    return str(kind)


def friendliness_scenario(
    test: Kind,
    against: Kind = "newreno",
    competitors: int = 1,
    *,
    scenario: Any = SCENARIO,
    overrides: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The scenario of "``test`` against ``competitors`` flows of ``against``": ``scenario``'s
    dumbbell (default ``friendliness-dumbbell``, after ``overrides``) with ``competitors + 1``
    senders on each side, flow 0 (h0 -> h(K+1)) of kind ``test`` and flows 1..K of kind
    ``against``, all from the start to the end. Either kind may be an agent (a QTCP variant or
    a policy), but not two different ones: one run drives one (the same one on both sides
    measures it against itself; QTCP flows each have their own learner). A policy's
    ``[agent]`` table is set here; a QTCP variant's by :func:`~ccgym.qtcp.run_qtcp`."""
    if competitors < 1:
        raise ScenarioError(f"friendliness: competitors = {competitors}: must be at least 1")
    _variant(test, against)
    data, _ = load_scenario(scenario, overrides)
    data = copy.deepcopy(data)
    topo = data.get("topology") or {}
    if topo.get("kind") != "dumbbell":
        raise ScenarioError("friendliness: the scenario must be a dumbbell")
    n = competitors + 1
    topo["left"] = n
    topo["right"] = n
    kinds = [test] + [against] * competitors
    data["workload"] = [
        {
            "kind": "flows",
            "flows": [
                {"src": i, "dst": n + i, "start": "0s", "cc": _cc_table(k)}
                for i, k in enumerate(kinds)
            ],
        }
    ]
    policy = _policy(test) or _policy(against)
    if policy is not None:
        from ccgym.policies import agent_table, load_policy, policy_path

        path = policy_path(policy)
        own = data.get("agent")
        table = agent_table(load_policy(path), **(dict(own) if isinstance(own, Mapping) else {}))
        table["policy"] = str(path)
        data["agent"] = table
    data["name"] = f"{data.get('name', SCENARIO)}:{_label(test)}-vs-{competitors}x{_label(against)}"
    return data


@dataclass(frozen=True)
class Friendliness:
    """What :func:`friendliness` returns."""

    test: str
    """Label of the flow under test (flow 0)."""
    against: str
    """Label of the competitors (flows 1..K)."""
    competitors: int
    """K."""
    flow_mbps: tuple[float, ...]
    """Mean delivery rate of each flow after the warm-up, flow 0 first (Mb/s)."""
    throughput_mbps: float
    """Their sum."""
    share: float
    """Flow 0's share of that sum."""
    fair_share: float
    """1 / (K + 1)."""
    jain: float
    """Jain's index over all the flows' rates."""
    from_s: float
    """Start of the measurement (the warm-up left out), seconds."""
    result: Result
    """The run."""

    @property
    def share_ratio(self) -> float:
        """``share / fair_share``: 1 is friendly, above 1 takes more than its share."""
        return self.share / self.fair_share

    def row(self) -> dict[str, Any]:
        """The numbers as a flat dict (a table row)."""
        return {
            "test": self.test,
            "against": self.against,
            "competitors": self.competitors,
            "share": self.share,
            "fair_share": self.fair_share,
            "share_ratio": self.share_ratio,
            "jain": self.jain,
            "throughput_mbps": self.throughput_mbps,
            "flow_mbps": list(self.flow_mbps),
        }


def score(result: Result, competitors: int, skip_s: float) -> tuple[list[float], float]:
    """Each flow's mean delivery rate (Mb/s) over the samples after ``skip_s`` (at most half the
    run), flow 0 first, and where the measurement starts."""
    flows = result.series["flows"]
    ft = flows["time_s"].to_numpy(float)
    fid = flows["flow_id"].to_numpy(int)
    fr = flows["rate_gbps"].to_numpy(float) * 1e3
    lo = min(skip_s, 0.5 * _seconds(result.scenario["duration"]))
    rates = []
    for f in range(competitors + 1):
        sel = (ft > lo) & (fid == f)
        rates.append(float(fr[sel].mean()) if sel.any() else 0.0)
    return rates, lo


def _prepared(
    test: Kind,
    against: Kind,
    competitors: int,
    duration: str | None,
    seed: int | None,
    scenario: Any,
    overrides: Sequence[str] | None,
) -> tuple[dict[str, Any], QtcpConfig | str | None]:
    """The scenario :func:`friendliness` runs and the agent that drives it."""
    data = friendliness_scenario(test, against, competitors, scenario=scenario, overrides=overrides)
    if duration is not None:
        data["duration"] = duration
    if seed is not None:
        data["seed"] = seed
    return data, _variant(test, against)


def check_friendliness(
    test: Kind,
    against: Kind = "newreno",
    competitors: int = 1,
    *,
    duration: str | None = None,
    seed: int | None = None,
    scenario: Any = SCENARIO,
    overrides: Sequence[str] | None = None,
    **_: Any,
) -> None:
    """Raises the :class:`ScenarioError` that :func:`friendliness` with these arguments would
    raise on its scenario (an unknown CC, a bad override or duration), without running it:
    the simulation is built, not stepped."""
    data, learned = _prepared(test, against, competitors, duration, seed, scenario, overrides)
    if isinstance(learned, QtcpConfig):
        data, _ = qtcp_scenario(data, learned, cc=None)
    native().Simulation(scenario_json(data), ".")


def friendliness(
    test: Kind,
    against: Kind = "newreno",
    competitors: int = 1,
    *,
    duration: str | None = None,
    seed: int | None = None,
    skip_s: float = 30.0,
    scenario: Any = SCENARIO,
    overrides: Sequence[str] | None = None,
) -> Friendliness:
    """Runs ``test`` against ``competitors`` flows of ``against`` on one bottleneck and scores
    the share ``test`` takes.

    Args:
        test: the flow under test: a CC name or ``cc`` table, ``"policy:NAME-OR-PATH"`` (a
            native policy), or a QTCP variant (``"qtcp"``, ``"qtcp-aimd"``, a
            :class:`QtcpConfig`), which learns online from a fresh learner.
        against: the competitors' kind, as ``test`` (an agent, learned or a policy, must be the
            same as ``test``'s if that is one too).
        competitors: K, the number of competing flows.
        duration: the run's length (default: the scenario's, 300 s).
        seed: the run's seed (default: the scenario's).
        skip_s: warm-up left out of the rates (slow start, a learner's first moves), at most
            half the run.
        scenario: the dumbbell to build from (default ``friendliness-dumbbell``).
        overrides: ``"dotted.key=value"`` strings applied to it first (e.g.
            ``"switch.queue_cap=300KB"``, ``"topology.bottleneck_rate=20Mbps"``).
    """
    data, learned = _prepared(test, against, competitors, duration, seed, scenario, overrides)
    if isinstance(learned, QtcpConfig):
        result = run_qtcp(data, learned, cc=None).result
    else:
        result = run(data)
    rates, lo = score(result, competitors, skip_s)
    total = float(np.sum(rates))
    return Friendliness(
        test=_label(test),
        against=_label(against),
        competitors=competitors,
        flow_mbps=tuple(rates),
        throughput_mbps=total,
        share=rates[0] / total if total > 0 else float("nan"),
        fair_share=1.0 / (competitors + 1),
        jain=jain(rates),
        from_s=lo,
        result=result,
    )


def friendliness_table(
    tests: Sequence[Kind],
    against: Sequence[Kind] = ("newreno", "cubic"),
    competitors: Sequence[int] = (1, 3),
    seeds: Sequence[int] = (1, 2, 3),
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """One row per (test, against, K): the mean over ``seeds`` of the share, its ratio to the
    fair share, Jain's index and the bottleneck throughput, with the range of the ratio over the
    seeds (``share_ratio_min``, ``share_ratio_max``). ``kwargs`` go to :func:`friendliness`."""
    for t in tests:  # every mistake before the first run, not after the runs before it
        for a in against:
            for k in competitors:
                check_friendliness(t, a, k, **kwargs)
    rows = []
    for t in tests:
        for a in against:
            for k in competitors:
                runs = [friendliness(t, a, k, seed=s, **kwargs) for s in seeds]
                ratios = [r.share_ratio for r in runs]
                rows.append(
                    {
                        "test": runs[0].test,
                        "against": runs[0].against,
                        "competitors": k,
                        "seeds": len(runs),
                        "share": float(np.mean([r.share for r in runs])),
                        "fair_share": runs[0].fair_share,
                        "share_ratio": float(np.mean(ratios)),
                        "share_ratio_min": float(np.min(ratios)),
                        "share_ratio_max": float(np.max(ratios)),
                        "jain": float(np.mean([r.jain for r in runs])),
                        "throughput_mbps": float(np.mean([r.throughput_mbps for r in runs])),
                    }
                )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ccgym.qtcp friendliness TEST ...``: prints a :func:`friendliness_table`.
    Mistakes (an unknown CC, a bad override) print one ``error: ...`` line before any run and
    return 2, as the ``ccgym`` command does; ``--debug`` shows the traceback instead."""
    from ccgym.cli import run_command
    from ccgym.cli.common import positive_int

    p = argparse.ArgumentParser(
        prog="python -m ccgym.qtcp friendliness",
        description="share of a 40 Mb/s bottleneck one flow takes against K flows of a CC",
    )
    p.add_argument("test", nargs="+", help="CC names or QTCP variants (qtcp, qtcp-aimd)")
    p.add_argument("--against", nargs="+", default=["newreno", "cubic"], metavar="CC")
    p.add_argument("-k", "--competitors", nargs="+", type=positive_int, default=[1, 3], metavar="K")
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--duration", default=None, help="e.g. 300s (the scenario's default)")
    p.add_argument("--skip", type=float, default=30.0, help="warm-up left out, seconds")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override")
    p.add_argument("--json", action="store_true", help="one JSON object per row")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    args = p.parse_args(argv)
    args.func = _table
    return run_command(args)


def _table(args: argparse.Namespace) -> int:
    """The work of :func:`main` once its arguments are parsed."""
    rows = friendliness_table(
        args.test,
        args.against,
        args.competitors,
        args.seeds,
        duration=args.duration,
        skip_s=args.skip,
        overrides=args.set,
    )
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    print(
        f"{'test':<10} {'against':<10} {'K':>2} {'share':>6} {'fair':>6} {'ratio (range)':>20} "
        f"{'Jain':>6} {'Mb/s':>6}"
    )
    for r in rows:
        rng = f"{r['share_ratio']:.2f} ({r['share_ratio_min']:.2f}-{r['share_ratio_max']:.2f})"
        print(
            f"{r['test']:<10} {r['against']:<10} {r['competitors']:>2} {r['share']:>6.3f} "
            f"{r['fair_share']:>6.3f} {rng:>20} {r['jain']:>6.3f} {r['throughput_mbps']:>6.1f}"
        )
    return 0
