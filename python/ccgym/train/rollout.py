"""The trainers' one rollout path: training scenarios stepped through the bridge's agent pool.

Every learner of ``ccgym.agents`` collects experience the same way:

1. the config names its training scenarios (:func:`scenario_entries` for ``[[scenario]]``
   entries, :func:`many_to_one_scenarios` for ADPG's ``[env]`` and ``[[scenarios]]``), each run
   for one episode of simulated time and then restarted with a new seed;
2. :class:`AgentTable` splits the config's ``[agent]`` table into what the simulator gets and
   what the policy sees (a reward computed here, from :data:`PYTHON_REWARDS`, adds the features
   it needs to the simulator's observation and hides them from the policy);
3. :class:`TrainingRollout` steps them together in one :class:`ccgym.env.AgentPool` (so one
   episode and agent-key bookkeeping for the adapters and the trainers alike): one pooled batch
   per :meth:`TrainingRollout.step`, answered by the learner's policy and recorded in the
   :class:`~ccgym.train.trajectories.AgentTrajectories`; a simulation whose episode is over
   starts its next one at once, with a seed drawn from the run's generator.

Needs only numpy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ccgym.agent_defaults import AGENT_DEFAULTS, BRIDGE_REWARDS
from ccgym.env.bridge import FLOW_BITS, AgentPool, PreparedScenario, make_key
from ccgym.train.trajectories import AgentTrajectories, PolicyOutput
from ccgym.units import parse_time_s

__all__ = [
    "PYTHON_REWARDS",
    "AgentTable",
    "FinishedEpisode",
    "TrainingRollout",
    "TrainingScenario",
    "many_to_one_scenario",
    "many_to_one_scenarios",
    "scenario_entries",
]

# --------------------------------------------------------------------------------------------
# The [agent] table: simulator side and policy side

PYTHON_REWARDS: dict[str, tuple[tuple[str, ...], Callable[[dict[str, np.ndarray]], np.ndarray]]] = {
    # spec 7.1 "general": (m - 1) - 0.1 rtt_inflation - cnp_ratio - 1000 [nack_ratio > 0]
    "general": (
        ("action", "rtt_inflation", "cnp_ratio", "nack_ratio"),
        lambda f: (
            (f["action"] - 1.0)
            - 0.1 * f["rtt_inflation"]
            - f["cnp_ratio"]
            - 1000.0 * (f["nack_ratio"] > 0)
        ),
    ),
    # spec 7.1 "constrained": -1 if cnp_ratio > 2 else (m - 1) - 0.1 rtt_inflation
    "constrained": (
        ("action", "rtt_inflation", "cnp_ratio"),
        lambda f: np.where(
            f["cnp_ratio"] > 2.0, -1.0, (f["action"] - 1.0) - 0.1 * f["rtt_inflation"]
        ),
    ),
}
"""Rewards of the ADPG work's baselines that the simulator lacks, computed here from the newest
observation row (the monitor interval that followed the action being rewarded): name ->
(features needed, function of those feature columns)."""


class AgentTable:
    """The config's ``[agent]`` table as the simulator gets it and as the policy sees it.

    A reward of :data:`PYTHON_REWARDS` adds the features it needs to the simulator's feature
    list (the simulator computes some bridge reward, unused); the policy's observation keeps
    only the configured features. With a simulator reward both views are the same.
    """

    def __init__(self, agent: Mapping[str, Any]) -> None:
        self.policy_table = dict(agent)
        """The table to evaluate a trained policy with (exported as its ``meta.agent``)."""
        self.features: list[str] = list(agent.get("features", AGENT_DEFAULTS["features"]))
        self.history = int(agent.get("history", AGENT_DEFAULTS["history"]))
        self.reward = str(agent.get("reward", AGENT_DEFAULTS["reward"]))
        self.reward_scale = float(agent.get("reward_scale", 1.0))
        self.reward_offset = float(agent.get("reward_offset", 0.0))
        sim = dict(agent)
        self.python_reward: Callable[[dict[str, np.ndarray]], np.ndarray] | None = None
        sim_features = list(self.features)
        if self.reward in PYTHON_REWARDS:
            needed, fn = PYTHON_REWARDS[self.reward]
            self.python_reward = fn
            sim_features += [f for f in needed if f not in sim_features]
            sim["reward"] = "adpg"  # any simulator reward; unused
            sim["reward_scale"] = 1.0
            sim["reward_offset"] = 0.0
            # Evaluation needs a reward the simulator knows (its value does not matter there).
            self.policy_table["reward"] = "adpg"
        elif self.reward not in BRIDGE_REWARDS:
            known = ", ".join((*BRIDGE_REWARDS, *PYTHON_REWARDS))
            raise ValueError(f'agent.reward = "{self.reward}": unknown (known: {known})')
        sim["features"] = sim_features
        self.sim_table = sim
        """The ``[agent]`` table of the training scenarios."""
        nf = len(sim_features)
        self.sim_obs_dim = nf * self.history
        """Observation length the simulator produces."""
        self.obs_dim = len(self.features) * self.history
        """Observation length the policy sees."""
        self.policy_columns = np.array(
            [h * nf + sim_features.index(f) for h in range(self.history) for f in self.features]
        )
        self.newest = {f: (self.history - 1) * nf + i for i, f in enumerate(sim_features)}
        self.identity = nf == len(self.features)

    def policy_obs(self, obs: np.ndarray) -> np.ndarray:
        """Columns of the simulator's observation that the policy sees."""
        return obs if self.identity else obs[:, self.policy_columns]

    def rewards(self, obs: np.ndarray, bridge_rewards: np.ndarray) -> np.ndarray:
        """The reward of each entry (the bridge's, or the Python-side one from ``obs``)."""
        if self.python_reward is None:
            return bridge_rewards
        cols = {f: obs[:, i].astype(np.float64) for f, i in self.newest.items()}
        shifted = self.python_reward(cols) + self.reward_offset
        return (shifted * self.reward_scale).astype(np.float32)


# --------------------------------------------------------------------------------------------
# Training scenarios


@dataclass(frozen=True)
class TrainingScenario:
    """One simulation of the training pool: its scenario (every episode the same but for the
    seed) and the label of its TensorBoard ``episode/<label>/*`` tags."""

    label: str
    data: dict[str, Any]
    base_dir: str


def _sim_agent_table(table: AgentTable, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The scenarios' ``[agent]`` table: the simulator's view, without the keys that would make
    the simulator evaluate a policy of its own."""
    agent = {**table.sim_table, **(extra or {})}
    return {k: v for k, v in agent.items() if k not in ("policy", "precision")}


def scenario_entries(config: Mapping[str, Any], table: AgentTable) -> list[TrainingScenario]:
    """The ``[[scenario]]`` entries of a config, ``train.envs_per_scenario`` simulations each.

    An entry has ``name`` (a bundled scenario or a path), optional ``overrides`` (``--set``
    strings) and ``label``. Every flow is an agent; an episode runs ``train.episode`` of
    simulated time, statistics cover all of it, per-flow series are off and workload ``stop``
    times are removed (flows run to the end of the episode).
    """
    from ccgym.scenario import load_scenario

    train = config["train"]
    entries = config.get("scenario") or []
    if not entries:
        raise ValueError("the config names no [[scenario]] to train on")
    episode = str(train["episode"])
    out = []
    for entry in entries:
        data, base_dir = load_scenario(entry["name"], entry.get("overrides", []), cc="agent")
        data["duration"] = episode
        metrics = dict(data.get("metrics") or {})
        metrics["window"] = ["0s", episode]
        metrics["flow_series"] = False
        data["metrics"] = metrics
        for w in data.get("workload") or []:
            if isinstance(w, dict):
                w.pop("stop", None)
        data["agent"] = _sim_agent_table(table)
        label = str(entry.get("label") or entry["name"])
        out += [TrainingScenario(label, data, str(base_dir))] * int(
            train.get("envs_per_scenario", 1)
        )
    return out


def _ms(text: str) -> float:
    """A time string (``"30ms"``, ``"500us"``, ``"1s"``) in milliseconds."""
    return parse_time_s(text) * 1e3


def many_to_one_scenario(
    config: Mapping[str, Any], spec: Mapping[str, Any], table: AgentTable
) -> TrainingScenario:
    """One many-to-one training scenario of ADPG's kind (scenarios.md section 1):
    ``spec["hosts"]`` senders x ``spec["flows_per_host"]`` flows into one receiver, built from
    ``env.base`` and one ``env.episode`` long, flows starting in ``env.start``; ``spec`` may add
    ``overrides`` and an ``agent`` table over the config's for this scenario only."""
    from ccgym.scenario import load_scenario

    env = config["env"]
    hosts, q = int(spec["hosts"]), int(spec.get("flows_per_host", 1))
    ep = env["episode"]
    window = [env.get("window_start", "0ms"), ep]
    if _ms(window[0]) >= _ms(ep):
        window[0] = "0ms"
    start = env.get("start", ["1ms", "2ms"])
    overrides = [
        f"duration={ep}",
        f"topology.hosts={hosts + 1}",
        # every output queue keeps its own 10 MiB (the base scenario's convention)
        f'switch.buffer="{(hosts + 2) * 10}MiB"',
        f"workload[0].flows_per_host={q}",
        f"workload[0].start={json.dumps(start)}",
        f'workload[0].stop="{ep}"',
        f"metrics.window={json.dumps(window)}",
        "metrics.flow_series=false",
        'metrics.sample_interval="1ms"',
        *env.get("overrides", []),
        *spec.get("overrides", []),
    ]
    data, base_dir = load_scenario(env.get("base", "adpg-m2o-2"), overrides, cc="agent")
    data["name"] = f"train-m2o-{hosts}x{q}"
    data["agent"] = _sim_agent_table(table, spec.get("agent"))
    return TrainingScenario(f"m2o-{hosts}x{q}", data, str(base_dir))


def many_to_one_scenarios(config: Mapping[str, Any], table: AgentTable) -> list[TrainingScenario]:
    """ADPG's training set: every ``[[scenarios]]`` entry (``hosts``, ``flows_per_host``,
    ``count`` copies) as :func:`many_to_one_scenario`."""
    specs = [s for s in config.get("scenarios") or [] for _ in range(int(s.get("count", 1)))]
    if not specs:
        raise ValueError("the config has no training scenarios ([[scenarios]])")
    return [many_to_one_scenario(config, spec, table) for spec in specs]


# --------------------------------------------------------------------------------------------
# Stepping


@dataclass(frozen=True)
class FinishedEpisode:
    """A training episode that ended (its simulation has already started the next one)."""

    label: str
    summary: dict[str, Any]
    """The run's summary (statistics window as the scenario sets it)."""
    reward_per_step: float
    """Mean reward of the episode's entries."""


class TrainingRollout:
    """The training scenarios, stepped together through one :class:`~ccgym.env.AgentPool`.

    Each simulation runs its scenario for one episode; it then restarts at once with a seed
    drawn from ``rng`` (the run's generator, saved in checkpoints), so agent keys never mix
    episodes.
    """

    def __init__(
        self, scenarios: list[TrainingScenario], table: AgentTable, rng: np.random.Generator
    ) -> None:
        if not scenarios:
            raise ValueError("no training scenarios")
        self.labels = [s.label for s in scenarios]
        self.table = table
        self.rng = rng
        self.pool = AgentPool(
            [PreparedScenario(s.data, s.base_dir) for s in scenarios],
            seeds=self._draw_seed,
            auto_reset=False,
            defer_duplicates=False,  # an agent's request and its end may share a batch
        )
        if "queue" in self.pool.groups:
            raise ValueError(
                "the trainers learn flow agents only; the training scenarios have switch-queue "
                "agents (agent.queues)"
            )
        if self.pool.obs_dim != table.sim_obs_dim:
            raise RuntimeError(
                f"pool observation length {self.pool.obs_dim}, expected {table.sim_obs_dim}"
            )
        n = len(scenarios)
        self._reward_sum = np.zeros(n)
        self._entries = np.zeros(n, dtype=np.int64)

    def _draw_seed(self, sim: int, episode: int) -> int:
        return int(self.rng.integers(1, 2**31 - 1))

    def step(
        self, act: Callable[[np.ndarray], PolicyOutput], traj: AgentTrajectories
    ) -> tuple[int, list[FinishedEpisode]]:
        """One pooled batch: ``act`` on its observations, answer it, record it in ``traj``;
        then restart every simulation whose episode is over.

        Returns the number of decisions answered (requests, not end entries) and the episodes
        that ended.
        """
        batch = self.pool.step()
        decisions = 0
        if len(batch):
            obs = self.table.policy_obs(batch.obs)
            rewards = self.table.rewards(batch.obs, batch.reward)
            out = act(obs)
            traj.record(batch.key.tolist(), obs, rewards, batch.done, batch.truncated, out)
            self.pool.act(out.env_actions)
            decisions = int(np.count_nonzero(batch.request))
            np.add.at(self._reward_sum, batch.sim, rewards)
            np.add.at(self._entries, batch.sim, 1)
        finished = []
        for end in self.pool.start_next_episodes():
            # Every agent of the episode has sent its end entry; close any that has not.
            prefix = int(make_key(end.sim, end.episode, 0)) >> FLOW_BITS
            traj.end_agents(lambda key, prefix=prefix: key >> FLOW_BITS == prefix)
            mean = float(self._reward_sum[end.sim] / max(self._entries[end.sim], 1))
            finished.append(FinishedEpisode(self.labels[end.sim], end.summary, mean))
            self._reward_sum[end.sim], self._entries[end.sim] = 0.0, 0
        return decisions, finished
