"""A Gymnasium ``Env`` for one flow of a simulation: the agent is one designated flow.

By default every flow of the scenario is an agent flow (``cc = "agent"``); the environment
exposes one of them (``flow``, default 0) to the learner and answers the decisions of the others
with a vectorised callable (default: keep the rate). With ``cc=None`` the scenario's own CC
tables are kept, so the other flows can run a classic CC. One ``step`` runs the simulation until the
designated flow's next decision (or its end). See ``docs/env.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from ccgym.env.bridge import AgentPool, Batch
from ccgym.env.spaces import action_space, keep_rate_actions, observation_space, to_bridge
from ccgym.scenario import ScenarioSpec

OtherPolicy = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``others(obs, flow) -> actions``: observations ``K x D`` (float32) and flow ids ``K`` of the
other flows' decision requests, one action per row (float32; a Discrete action as its index)."""


class CcFlowEnv(gym.Env[np.ndarray, Any]):
    """One agent flow of a scenario as a Gymnasium environment.

    Args:
        scenario: bundled name, TOML path or string, or dict.
        overrides: ``"dotted.key=value"`` strings applied to the scenario.
        agent: keys merged into the scenario's ``[agent]`` table (trigger, features, history,
            reward, action, policy_delay, ...). The spaces follow it: a Box observation of
            ``len(features) * history`` floats; a Box action (``multiplier``: [-1, 1],
            ``aurora``: +-1e6, ``rate``: [0, 1]) or Discrete for ``action = "discrete"``.
        flow: id of the flow the learner drives.
        others: policy of the other agent flows (see :data:`OtherPolicy`); default: keep the
            rate.
        seed: seed of the first episode (default: the scenario's ``seed``). Each ``reset()``
            without a seed uses the previous episode's seed plus one; ``reset(seed=s)`` runs
            the scenario with seed ``s``.
        cc: the CC every flow is switched to: ``"agent"`` (default; the other flows are then
            driven by ``others``) or ``None`` to keep the scenario's CC tables, e.g. the
            designated flow with ``cc = { algorithm = "agent" }`` and the others with a classic
            CC such as DCQCN (``others`` then only sees the other agent flows, if any).

    The observation is the flow's observation at a decision; the reward returned by
    ``step(a)`` is the outcome of ``a`` (measured over the monitor interval that closes at the
    flow's next decision). ``terminated``: the flow finished; ``truncated``: the simulation
    reached its duration with the flow still active.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        scenario: ScenarioSpec = "adpg-m2o-2",
        *,
        overrides: Sequence[str] | None = None,
        agent: Mapping[str, Any] | None = None,
        flow: int = 0,
        others: OtherPolicy | None = None,
        seed: int | None = None,
        cc: str | None = "agent",
    ) -> None:
        super().__init__()
        self.pool = AgentPool(
            scenario,
            overrides=overrides,
            agent=agent,
            seeds=None if seed is None else [seed],
            auto_reset=False,
            cc=cc,
        )
        if "queue" in self.pool.groups:
            raise ValueError(
                "CcFlowEnv drives one flow, but this scenario has switch-queue agents "
                "(agent.queues): use CcParallelEnv or CcRllibEnv, which expose them as agents"
            )
        self.config = self.pool.agent_config()
        self.observation_space = observation_space(self.pool.obs_dim)
        self.action_space = action_space(self.config)
        self.flow = int(flow)
        self.others = others
        first = self.pool.seed[0]
        self._next_seed = int(first) if first is not None else 0
        self._batch: Batch | None = None
        self._index = -1
        self._ended = True
        self._last_obs = np.zeros(self.pool.obs_dim, np.float32)
        self.episode_seed: int | None = None
        """Seed of the current episode."""

    def _other_actions(self, batch: Batch, skip: int = -1) -> np.ndarray:
        """Actions of every entry of ``batch`` from ``others`` (entry ``skip`` excluded: 0)."""
        rows = batch.request.copy()
        if skip >= 0:
            rows[skip] = False
        out = np.zeros(len(batch), np.float32)
        if not rows.any():
            return out
        obs, flows = batch.obs[rows], batch.flow[rows]
        if self.others is None:
            out[rows] = keep_rate_actions(self.config, obs)
            return out
        a = np.asarray(self.others(obs, flows), dtype=np.float32).reshape(-1)
        if a.shape != (len(obs),):
            raise ValueError(f"others() returned {a.shape[0]} actions for {len(obs)} rows")
        out[rows] = a
        return out

    def _advance(self) -> int:
        """Step the simulation until the designated flow has an entry; its index, or -1."""
        while True:
            batch = self.pool.step()
            if len(batch) == 0:
                if self.pool.all_over:
                    self._batch = batch
                    return -1
                continue
            mine = np.flatnonzero(batch.flow == self.flow)
            self._batch = batch
            if len(mine):
                return int(mine[0])
            self.pool.act(self._other_actions(batch))

    def _info(self, i: int) -> dict[str, Any]:
        b = self._batch
        assert b is not None
        return {"time_s": float(b.time_s[i]), "flow": self.flow, "seed": self.episode_seed}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode (a new simulation run) and run it to the flow's first decision."""
        super().reset(seed=seed)
        episode_seed = self._next_seed if seed is None else int(seed)
        self._next_seed = episode_seed + 1
        self.episode_seed = episode_seed
        self.pool.reset(0, seed=episode_seed)
        i = self._advance()
        b = self._batch
        assert b is not None
        if i < 0 or not b.request[i]:
            raise RuntimeError(
                f"flow {self.flow} made no decision in this episode (seed {episode_seed}): it "
                "does not exist, is not an agent flow, or starts or ends too late or too early"
            )
        self._index = i
        self._ended = False
        self._last_obs = b.obs[i].copy()
        return self._last_obs.copy(), self._info(i)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply ``action`` to the flow and run until its next decision or its end."""
        if self._ended or self._batch is None:
            raise RuntimeError("the episode is over: call reset()")
        b = self._batch
        actions = self._other_actions(b, skip=self._index)
        actions[self._index] = to_bridge(action, 1)[0]
        self.pool.act(actions)
        i = self._advance()
        b = self._batch
        if i < 0:
            # The simulation ended without a final entry for the flow (not expected).
            self._ended = True
            return self._last_obs.copy(), 0.0, False, True, {"flow": self.flow}
        self._index = i
        terminated = bool(b.done[i])
        truncated = bool(b.truncated[i])
        self._ended = terminated or truncated
        self._last_obs = b.obs[i].copy()
        return self._last_obs.copy(), float(b.reward[i]), terminated, truncated, self._info(i)


ENV_ID = "ccgym/CcFlow-v0"
"""Gymnasium id of :class:`CcFlowEnv`: ``gym.make("ccgym.env.gym_env:ccgym/CcFlow-v0", ...)``
(the module prefix imports this module, which registers it)."""

if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point="ccgym.env.gym_env:CcFlowEnv")
