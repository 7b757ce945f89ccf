"""ACC's switch agents on an ACC scenario: the ``[agent]`` table that puts one queue agent on
every data queue of every switch port, and one run of it scored like the static templates.

* :data:`QUEUE_AGENT` — the queue-agent keys ACC runs with (interval, history, reward, the
  grid at 25 Gb/s scaled to each port's rate); a training config's ``[agent]`` table is merged
  over it, and the exported policy's ``meta.agent`` is the result;
* :func:`switch_ports` — the names (``"leaf0->h3"``) of a scenario's switch egress ports, all
  of them or one tier;
* :func:`acc_scenario` — a scenario dict with the queue agents added;
* :func:`run_acc` — one run with the agents acting through a DDQN learner (greedy, learning
  online, or learning offline) or a fixed template, scored with :func:`ccgym.bench.acc.scores`
  plus the agents' own mean reward.

Ports of several rates share one action table: the grid is written for 25 Gb/s
(:data:`ccgym.acc.templates.REFERENCE_RATE_BPS`) and ``agent.ecn_reference_rate`` scales each
port's thresholds with its rate, as ``switch.ecn.reference_rate`` does for the static presets,
so action ``i`` on a 100 Gb/s fabric port is template ``i`` of the oracle runs there too.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ccgym.acc.templates import GRID, REFERENCE_RATE_BPS, EcnTemplate

QUEUE_AGENT: dict[str, Any] = {
    "queue_interval": "100us",
    "queue_history": 3,
    "policy_delay": "1us",
    "queue_reward": "linear",
    "reward_beta": 1.0,
    "reward_scale": 1.0,
    "queue_ref": "10us",
    "queue_peak_weight": 0.5,
    "queue_mean_weight": 0.5,
    "ecn_reference_rate": REFERENCE_RATE_BPS,
}
"""ACC's queue-agent keys: one decision per 100 us (spec 2.5: tens of RTTs, 100 us to 1 ms),
the last 3 intervals observed (spec 2.2's k), 1 us from request to the new profile, and the
template grid written for 25 Gb/s. ``queues`` and ``ecn_profiles`` are added per scenario."""

TIERS = ("all", "leaf", "spine", "edge", "agg", "core")
"""Values of ``queues`` besides an explicit list: every switch port, or those of switches whose
name starts with the tier's name (``leaf0``, ``spine1``; ``edge``/``agg``/``core`` on a fat
tree)."""


def grid_profiles(templates: Sequence[EcnTemplate] = GRID) -> list[dict[str, Any]]:
    """``agent.ecn_profiles``: the templates as written (at 25 Gb/s), in action order."""
    return [t.profile() for t in templates]


def switch_ports(
    data: Mapping[str, Any], base_dir: str | Path = ".", which: Any = "all"
) -> list[str]:
    """Names ``"switch->peer"`` of the scenario's switch egress ports that carry data, in port
    order: all of them (``"all"``), one tier (a switch-name prefix such as ``"leaf"``), or the
    given list (checked by the core when the agents are built)."""
    if not isinstance(which, str):
        return [str(n) for n in which]
    from ccgym import _sim
    from ccgym.runner import scenario_json

    bare = copy.deepcopy(dict(data))
    bare.pop("agent", None)
    bare["cc"] = {"algorithm": "dcqcn"}
    for w in bare.get("workload") or []:
        if isinstance(w, dict):
            w.pop("cc", None)
    qs = _sim.Simulation(scenario_json(bare), str(base_dir)).switch_queues()
    names: list[str] = []
    for node, peer in zip(qs["node"], qs["peer"], strict=True):
        name = f"{node}->{peer}"
        if name not in names and (which == "all" or str(node).startswith(which)):
            names.append(name)
    if not names:
        raise ValueError(f"agent.queues = {which!r}: no switch port matches")
    return names


def acc_scenario(
    data: Mapping[str, Any], agent: Mapping[str, Any] | None = None, base_dir: str | Path = "."
) -> dict[str, Any]:
    """A copy of the scenario with ACC's queue agents: :data:`QUEUE_AGENT` updated with
    ``agent`` (whose ``queues`` may be ``"all"``, a tier or a list), the grid as
    ``ecn_profiles`` and ``policy = "external"``. An ``[agent]`` table the scenario has (flow
    agents of learned hosts) is kept and the queue keys are added to it."""
    out = copy.deepcopy(dict(data))
    table = dict(out.get("agent") or {})
    queue_keys = {**QUEUE_AGENT, **dict(agent or {})}
    which = queue_keys.pop("queues", "all")
    table.update(queue_keys)
    table["queues"] = switch_ports(out, base_dir, which)
    table["ecn_profiles"] = grid_profiles()
    table["policy"] = "external"
    out["agent"] = table
    return out


class FixedTemplate:
    """A static setting in the agents' loop: every agent always picks template ``index``
    (duck-types the learner's ``act``)."""

    def __init__(self, index: int, obs_dim: int) -> None:
        self.index = index
        self.obs_dim = obs_dim

    def act(self, obs: np.ndarray, explore: bool = True) -> np.ndarray:
        """The template's index for every row."""
        return np.full(len(obs), self.index, np.int64)


@dataclass
class AccRun:
    """One ACC run: the table's metrics, the agents' decisions and the run itself."""

    metrics: dict[str, float | None]
    """:func:`ccgym.bench.acc.scores` plus ``agent_reward`` (mean over the agents' transitions),
    ``decisions`` and ``template_mean`` (the mean action index, a coarse summary)."""
    summary: dict[str, Any]
    series: dict[str, Any]
    actions: np.ndarray
    """Template index of every decision, in order."""
    action_times: np.ndarray
    """Simulated time (s) of every decision."""
    action_agents: np.ndarray
    """Queue agent of every decision."""


def run_acc(
    data: Mapping[str, Any],
    learner: Any,
    *,
    train: bool = False,
    base_dir: str | Path = ".",
    flow_policy: Callable[[np.ndarray], np.ndarray] | None = None,
) -> AccRun:
    """Runs an :func:`acc_scenario` dict to its end with every queue agent acting through
    ``learner`` (a :class:`~ccgym.agents.ddqn.DDQN`, or :class:`FixedTemplate`): greedy when not
    ``train``, epsilon-greedy and learning when ``train`` (the online phase uses a learner whose
    epsilon and learning rate are already lowered). ``flow_policy`` answers flow agents."""
    from ccgym.agents.ddqn import run_queue_episode
    from ccgym.bench.acc import scores

    stats = run_queue_episode(
        data, learner, train=train, base_dir=base_dir, flow_policy=flow_policy, finish=True
    )
    assert stats.summary is not None and stats.series is not None
    metrics = scores(stats.summary, stats.series)
    metrics["agent_reward"] = stats.mean_reward
    metrics["decisions"] = float(stats.decisions)
    metrics["template_mean"] = float(np.mean(stats.actions)) if stats.actions else None
    return AccRun(
        metrics,
        stats.summary,
        stats.series,
        np.asarray(stats.actions, np.int64),
        np.asarray(stats.action_times, float),
        np.asarray(stats.action_agents, np.int64),
    )


__all__ = [
    "QUEUE_AGENT",
    "TIERS",
    "AccRun",
    "FixedTemplate",
    "acc_scenario",
    "grid_profiles",
    "run_acc",
    "switch_ports",
]
