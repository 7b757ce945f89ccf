"""An RLlib ``MultiAgentEnv`` over one simulation, in event mode.

Each ``step`` is one batch of the agent bridge: the observation dict holds exactly the agents
(``"flow_<id>"``) that requested a decision in it, plus those that ended (with
``terminateds``/``truncateds`` set). Any trigger and policy delay work. Switch-queue agents
(``agent.queues``) are agents too, named by their port and queue (``"queue_sw0->h0_q1"``), with
their own observation space and a Discrete action space over ``agent.ecn_profiles``. Ray is
imported by this module only (``import ccgym.env`` does not need it). See ``docs/env.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from ccgym.env.bridge import AgentPool, Batch
from ccgym.env.spaces import (
    action_space,
    named_actions,
    named_queue_actions,
    observation_space,
    queue_action_space,
)

AgentID = str


class CcRllibEnv(MultiAgentEnv):
    """The agent flows of one simulation as an RLlib multi-agent environment (event mode).

    Args:
        config: RLlib's env config (a dict), with optional keys ``scenario`` (bundled name,
            TOML path or string, or dict; default ``"adpg-m2o-2"``), ``overrides`` (list of
            ``"dotted.key=value"``), ``agent`` (dict merged into ``[agent]``), ``num_flows``
            (size of ``possible_agents``; default the scenario's flow count) and ``seed``
            (first episode's seed; later resets use the previous seed plus one).
        **kwargs: the same keys, overriding ``config``.

    ``step(action_dict)`` applies the actions of the agents of the last observation dict (a
    missing action keeps the rate) and returns the next batch: the agents in it, their
    rewards (the outcome of their previous action; 0 at an agent's first appearance),
    ``terminateds`` (the flow finished), ``truncateds`` (the run reached its duration),
    and ``"__all__"`` when the simulation run is over. ``agents`` holds the agents that have
    appeared and not ended before the last step (an agent that ends stays listed until the
    next ``step``, so that the dicts' keys are always among ``agents``).
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        cfg = dict(config or {})
        cfg.update(kwargs)
        unknown = set(cfg) - {"scenario", "overrides", "agent", "num_flows", "seed"}
        if unknown:
            raise ValueError(f"unknown CcRllibEnv config keys: {sorted(unknown)}")
        seed = cfg.get("seed")
        self.pool = AgentPool(
            cfg.get("scenario", "adpg-m2o-2"),
            overrides=cfg.get("overrides"),
            agent=cfg.get("agent"),
            seeds=None if seed is None else [int(seed)],
            auto_reset=False,
        )
        self.config = self.pool.agent_config()
        n = int(cfg["num_flows"]) if cfg.get("num_flows") is not None else self.pool.num_flows()
        flows = [f"flow_{i}" for i in range(n)]
        queues = self.pool.queue_agent_names() if "queue" in self.pool.groups else []
        self.possible_agents = flows + queues
        self.agents = []
        self._agent_ids = set(self.possible_agents)
        self._names = np.asarray(flows, dtype=object)
        self._queue_names = np.asarray(queues, dtype=object)
        obs_space = observation_space(self.pool.obs_dim)
        act_space = action_space(self.config)
        self.observation_spaces = dict.fromkeys(flows, obs_space)
        self.action_spaces = dict.fromkeys(flows, act_space)
        if queues:
            self.observation_spaces.update(
                dict.fromkeys(queues, observation_space(self.pool.queue_obs_dim))
            )
            self.action_spaces.update(dict.fromkeys(queues, queue_action_space(self.config)))
        super().__init__()
        first = self.pool.seed[0]
        self._next_seed = int(first) if first is not None else 0
        self._seen: set[AgentID] = set()
        self._ended: set[AgentID] = set()
        self.episode_seed: int | None = None
        """Seed of the current episode."""

    def _name_list(self, flows: np.ndarray) -> list[AgentID]:
        if len(flows) and int(flows.max()) >= len(self.possible_agents):
            raise ValueError(
                f"flow {int(flows.max())} is not among possible_agents; raise num_flows"
            )
        return self._names[flows.astype(np.intp)].tolist()

    def _group_names(self, group: str, batch: Batch) -> list[AgentID]:
        """The agent names of the entries of one batch group."""
        if group == "flow":
            return self._name_list(batch.flow)
        return self._queue_names[batch.flow.astype(np.intp)].tolist()

    def _next_batch(self) -> list[tuple[AgentID, Batch, int]]:
        """Steps to the next non-empty batch: every entry of its groups as (agent name, its
        group's batch, index)."""
        while True:
            batches = self.pool.step_groups()
            if any(len(b) for b in batches.values()) or self.pool.all_over:
                break
        out = []
        for group, batch in batches.items():
            out += [(a, batch, i) for i, a in enumerate(self._group_names(group, batch))]
        return out

    def _answer(self, actions: Mapping[AgentID, Any]) -> None:
        """Answers the last batch from a dict of actions by agent name (missing: keep)."""
        b = self.pool.last_batch
        names = self._name_list(b.flow[np.flatnonzero(b.request)])
        flow_actions = named_actions(self.config, b, list(names), actions, live=self.agents)
        if "queue" not in self.pool.groups:
            self.pool.act(flow_actions)
            return
        q = self.pool.last_batches["queue"]
        q_names = self._group_names("queue", q.select(q.request))
        self.pool.act(
            {"flow": flow_actions, "queue": named_queue_actions(self.config, q, q_names, actions)}
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, np.ndarray], dict[AgentID, dict[str, Any]]]:
        """Start a simulation run and run it to its first batch of requests."""
        super().reset(seed=seed, options=options)
        episode_seed = self._next_seed if seed is None else int(seed)
        self._next_seed = episode_seed + 1
        self.episode_seed = episode_seed
        self.pool.reset(0, seed=episode_seed)
        self._seen = set()
        self._ended = set()
        self.agents = []
        while True:
            entries = self._next_batch()
            requests = [(a, b, i) for a, b, i in entries if b.request[i]]
            if requests or self.pool.all_over:
                break
            self._answer({})
        names = [a for a, _, _ in requests]
        self._seen.update(names)
        self.agents = list(names)
        obs = {a: b.obs[i] for a, b, i in requests}
        infos = {a: {"time_s": float(b.time_s[i])} for a, b, i in requests}
        return obs, infos

    def step(
        self, action_dict: Mapping[AgentID, Any]
    ) -> tuple[
        dict[AgentID, np.ndarray],
        dict[AgentID, float],
        dict[AgentID, bool],
        dict[AgentID, bool],
        dict[AgentID, dict[str, Any]],
    ]:
        """Apply the requested agents' actions and run to the next batch."""
        self._answer(action_dict)
        if self._ended:
            self.agents = [n for n in self.agents if n not in self._ended]
            self._ended = set()
        entries = self._next_batch()
        obs: dict[AgentID, np.ndarray] = {}
        rewards: dict[AgentID, float] = {}
        terms: dict[AgentID, bool] = {}
        truncs: dict[AgentID, bool] = {}
        infos: dict[AgentID, dict[str, Any]] = {}
        for name, batch, i in entries:
            ended = bool(batch.done[i] or batch.truncated[i])
            known = name in self._seen
            if ended and not known:
                continue  # a flow that ended before its first decision never appeared
            if not known:
                self._seen.add(name)
                self.agents.append(name)
            obs[name] = batch.obs[i]
            rewards[name] = float(batch.reward[i]) if known else 0.0
            terms[name] = bool(batch.done[i])
            truncs[name] = bool(batch.truncated[i])
            infos[name] = {"time_s": float(batch.time_s[i])}
            if ended:
                self._ended.add(name)
        over = self.pool.all_over
        if over:
            # Agents still listed that got no final entry (not expected) are truncated.
            for name in self.agents:
                if name not in self._ended and name not in obs:
                    truncs[name] = True
                    terms[name] = False
                    rewards[name] = 0.0
        any_trunc = over and any(truncs.values())
        terms["__all__"] = over and not any_trunc
        truncs["__all__"] = any_trunc
        return obs, rewards, terms, truncs, infos
