"""A PettingZoo ``ParallelEnv`` over one simulation, in interval mode.

The ``[agent]`` table is forced to ``trigger = "interval"`` and ``policy_delay = 0``: every
active flow decides at the multiples of ``interval`` (a grid shared by all flows), and the
network waits for the actions (blocking), so one ``step`` is one grid instant at which all live
agents act together. Agents (``"flow_<id>"``) appear at their flow's first decision and
disappear when the flow finishes (``terminated``) or the run reaches its duration
(``truncated``). Switch-queue agents (``agent.queues``) are agents too, named by their port and
queue (``"queue_sw0->h0_q1"``, :func:`ccgym.env.bridge.queue_agent_name`), with their own
observation space (``queue_obs_dim`` floats) and action space (Discrete over
``agent.ecn_profiles``); they decide every ``agent.queue_interval``. See ``docs/env.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

from ccgym.env.bridge import AgentPool, Batch, is_zero_duration
from ccgym.env.spaces import (
    action_space,
    named_actions,
    named_queue_actions,
    observation_space,
    queue_action_space,
)
from ccgym.scenario import ScenarioSpec

AgentID = str


def agent_name(flow: int) -> AgentID:
    """The agent name of a flow id: ``"flow_<id>"``."""
    return f"flow_{flow}"


def interval_agent(agent: Mapping[str, Any] | None, interval: str | None) -> dict[str, Any]:
    """``agent`` with ``trigger = "interval"`` and ``policy_delay = 0`` (conflicts raise)."""
    cfg = dict(agent or {})
    if cfg.get("trigger", "interval") != "interval":
        raise ValueError(f'interval mode needs agent.trigger = "interval", not {cfg["trigger"]!r}')
    if "policy_delay" in cfg and not is_zero_duration(cfg["policy_delay"]):
        raise ValueError(f"interval mode needs agent.policy_delay = 0, not {cfg['policy_delay']!r}")
    cfg["trigger"] = "interval"
    cfg["policy_delay"] = "0s"
    if interval is not None:
        cfg["interval"] = interval
    return cfg


class CcParallelEnv(ParallelEnv[AgentID, np.ndarray, Any]):
    """The agent flows of one simulation as a PettingZoo parallel environment.

    Args:
        scenario: bundled name, TOML path or string, or dict.
        overrides: ``"dotted.key=value"`` strings applied to the scenario.
        agent: keys merged into the scenario's ``[agent]`` table; ``trigger`` and
            ``policy_delay`` are set to ``"interval"`` and 0.
        interval: the decision interval (e.g. ``"20us"``; default: ``agent.interval`` or the
            simulator's default, 10 us).
        num_flows: size of ``possible_agents`` (default: the scenario's flow count).
        seed: seed of the first episode (default: the scenario's ``seed``); later resets
            without a seed use the previous seed plus one.

    At each step the returned dicts hold every agent that was live before it and every agent
    that appeared during it. The reward of an agent is the outcome of its previous action
    (0 at its first appearance). A live agent without a decision at this instant (not
    expected on the shared grid) repeats its last observation with reward 0 and
    ``infos[agent]["requested"] = False``; its next action is then ignored.
    """

    metadata: dict[str, Any] = {
        "name": "ccgym_interval_v0",
        "render_modes": [],
        "is_parallelizable": True,
    }

    def __init__(
        self,
        scenario: ScenarioSpec = "adpg-m2o-2",
        *,
        overrides: Sequence[str] | None = None,
        agent: Mapping[str, Any] | None = None,
        interval: str | None = None,
        num_flows: int | None = None,
        seed: int | None = None,
    ) -> None:
        self.pool = AgentPool(
            scenario,
            overrides=overrides,
            agent=interval_agent(agent, interval),
            seeds=None if seed is None else [seed],
            auto_reset=False,
        )
        self.config = self.pool.agent_config()
        n = int(num_flows if num_flows is not None else self.pool.num_flows())
        flows = [agent_name(i) for i in range(n)]
        queues = self.pool.queue_agent_names() if "queue" in self.pool.groups else []
        self.possible_agents: list[AgentID] = flows + queues
        self.agents: list[AgentID] = []
        self._obs_space = observation_space(self.pool.obs_dim)
        self._act_space = action_space(self.config)
        self.observation_spaces = dict.fromkeys(flows, self._obs_space)
        self.action_spaces = dict.fromkeys(flows, self._act_space)
        if queues:
            self.observation_spaces.update(
                dict.fromkeys(queues, observation_space(self.pool.queue_obs_dim))
            )
            self.action_spaces.update(dict.fromkeys(queues, queue_action_space(self.config)))
        self._queue_names = np.asarray(queues, dtype=object)
        self._order = {a: i for i, a in enumerate(self.possible_agents)}
        first = self.pool.seed[0]
        self._next_seed = int(first) if first is not None else 0
        self._last_obs: dict[AgentID, np.ndarray] = {}
        self.episode_seed: int | None = None
        """Seed of the current episode."""

    def observation_space(self, agent: AgentID) -> gym.Space[Any]:  # type: ignore[override]
        """The observation space of ``agent`` (one object for all flow agents, one for all
        queue agents)."""
        return self.observation_spaces.get(agent, self._obs_space)

    def action_space(self, agent: AgentID) -> gym.Space[Any]:  # type: ignore[override]
        """The action space of ``agent`` (one object for all flow agents, one for all queue
        agents)."""
        return self.action_spaces.get(agent, self._act_space)

    @functools.cached_property
    def _name_of(self) -> np.ndarray:
        return np.asarray(self.possible_agents, dtype=object)

    def _names(self, flows: np.ndarray) -> list[AgentID]:
        if len(flows) and int(flows.max()) >= len(self.possible_agents):
            raise ValueError(
                f"flow {int(flows.max())} is not among possible_agents; raise num_flows"
            )
        return self._name_of[flows.astype(np.intp)].tolist()

    def _group_names(self, group: str, batch: Batch) -> list[AgentID]:
        """The agent names of the entries of one batch group."""
        if group == "flow":
            return self._names(batch.flow)
        return self._queue_names[batch.flow.astype(np.intp)].tolist()

    def _entries(self) -> list[tuple[AgentID, Batch, int]]:
        """Every entry of the last step's batch groups: (agent name, its group's batch, index)."""
        out = []
        for group, batch in self.pool.last_batches.items():
            out += [(a, batch, i) for i, a in enumerate(self._group_names(group, batch))]
        return out

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, np.ndarray], dict[AgentID, dict[str, Any]]]:
        """Start a simulation run and run it to the first grid instant with decisions."""
        episode_seed = self._next_seed if seed is None else int(seed)
        self._next_seed = episode_seed + 1
        self.episode_seed = episode_seed
        self.pool.reset(0, seed=episode_seed)
        self._last_obs = {}
        self.agents = []
        while True:
            batches = self.pool.step_groups()
            if any(b.request.any() for b in batches.values()) or self.pool.all_over:
                break
            # Only ends of flows that never decided: nothing to report.
        requests = [(a, b, i) for a, b, i in self._entries() if b.request[i]]
        obs = {a: b.obs[i] for a, b, i in requests}
        infos = {a: {"time_s": float(b.time_s[i]), "requested": True} for a, b, i in requests}
        self._last_obs = dict(obs)
        self.agents = [a for a, _, _ in requests]
        return obs, infos

    def step(
        self, actions: Mapping[AgentID, Any]
    ) -> tuple[
        dict[AgentID, np.ndarray],
        dict[AgentID, float],
        dict[AgentID, bool],
        dict[AgentID, bool],
        dict[AgentID, dict[str, Any]],
    ]:
        """All live agents act; the simulation runs to the next grid instant."""
        b = self.pool.last_batch
        names = self._names(b.flow[np.flatnonzero(b.request)])
        flow_actions = named_actions(self.config, b, list(names), actions, live=self.agents)
        if "queue" in self.pool.groups:
            q = self.pool.last_batches["queue"]
            q_names = self._group_names("queue", q.select(q.request))
            queue_actions = named_queue_actions(self.config, q, q_names, actions)
            self.pool.act({"flow": flow_actions, "queue": queue_actions})
        else:
            self.pool.act(flow_actions)
        live = self.agents
        live_set = set(live)
        while True:
            batches = self.pool.step_groups()
            if any(len(batch) for batch in batches.values()) or self.pool.all_over:
                break
        over = self.pool.all_over
        obs: dict[AgentID, np.ndarray] = {}
        rewards: dict[AgentID, float] = {}
        terms: dict[AgentID, bool] = {}
        truncs: dict[AgentID, bool] = {}
        infos: dict[AgentID, dict[str, Any]] = {}
        alive: set[AgentID] = set()
        for name, batch, i in self._entries():
            known = name in live_set
            ended = bool(batch.done[i] or batch.truncated[i])
            if not known and ended:
                continue  # a flow that ended before its first decision never appeared
            if not ended:
                alive.add(name)
            obs[name] = batch.obs[i]
            rewards[name] = float(batch.reward[i]) if known else 0.0
            terms[name] = bool(batch.done[i])
            truncs[name] = bool(batch.truncated[i])
            infos[name] = {"time_s": float(batch.time_s[i]), "requested": not ended}
        for name in live:
            if name not in obs:
                # No decision at this instant: repeat the last observation.
                obs[name] = self._last_obs[name]
                rewards[name] = 0.0
                terms[name] = False
                truncs[name] = over  # the run ended without an entry for it
                infos[name] = {"requested": False}
                if not over:
                    alive.add(name)
        self.agents = sorted(alive, key=self._order.__getitem__)
        self._last_obs = {n: obs[n] for n in self.agents}
        return obs, rewards, terms, truncs, infos
