"""A Gymnasium ``VectorEnv`` whose sub-environments are the agent flows of one simulation.

Slot ``i`` is flow ``i``. One ``step`` answers the current batch of decision requests and runs
the simulation to its next batch (one bridge batch). Flows decide at different times, so not
every slot has a new observation at every step; the ``requested`` info mask says which do:

* ``infos["requested"][i]``: slot ``i`` has a new decision request; the action given for it in
  the next ``step`` is applied. The actions of the other slots are ignored.
* A slot without an entry in the batch repeats its last observation (zeros before its flow's
  first decision) with reward 0, ``terminated`` and ``truncated`` False.
* The first entry of a flow carries reward 0 (no action of it was measured yet).
* The reward of an action arrives with the slot's next entry (its next request or its end),
  so the sum of a slot's rewards from the step after it acted up to its next request is the
  outcome of that action.
* ``terminated[i]``: flow ``i`` finished; ``truncated[i]``: the simulation reached its
  duration with the flow active. A finished slot stays idle (not requested, reward 0) until
  the simulation restarts.
* Episodes are simulation runs. When the run is over (``infos["episode_over"]``), the next
  ``step`` starts the next run (seed + 1) and returns its first batch; its actions are ignored
  (Gymnasium's next-step autoreset).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ccgym.env.bridge import AgentPool, Batch
from ccgym.env.spaces import action_space, observation_space, to_bridge
from ccgym.scenario import ScenarioSpec


class CcFlowVectorEnv(VectorEnv):
    """The N agent flows of one simulation as N sub-environments (see the module docstring).

    Args:
        scenario: bundled name, TOML path or string, or dict.
        overrides: ``"dotted.key=value"`` strings applied to the scenario.
        agent: keys merged into the scenario's ``[agent]`` table.
        num_flows: number of slots (default: the scenario's flow count); flow ids must be
            below it.
        seed: seed of the first episode (default: the scenario's ``seed``); later episodes
            use the previous seed plus one, ``reset(seed=s)`` starts over from ``s``.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        scenario: ScenarioSpec = "adpg-m2o-2",
        *,
        overrides: Sequence[str] | None = None,
        agent: Mapping[str, Any] | None = None,
        num_flows: int | None = None,
        seed: int | None = None,
    ) -> None:
        self.pool = AgentPool(
            scenario,
            overrides=overrides,
            agent=agent,
            seeds=None if seed is None else [seed],
            auto_reset=False,
        )
        if "queue" in self.pool.groups:
            raise ValueError(
                "CcFlowVectorEnv's slots are flows, but this scenario has switch-queue agents "
                "(agent.queues): use CcParallelEnv or CcRllibEnv, which expose them as agents"
            )
        self.config = self.pool.agent_config()
        self.num_envs = int(num_flows if num_flows is not None else self.pool.num_flows())
        if self.num_envs < 1:
            raise ValueError("the scenario has no flows")
        self.single_observation_space = observation_space(self.pool.obs_dim)
        self.single_action_space = action_space(self.config)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        first = self.pool.seed[0]
        self._next_seed = int(first) if first is not None else 0
        n, d = self.num_envs, self.pool.obs_dim
        self._obs = np.zeros((n, d), np.float32)
        self._requested = np.zeros(n, bool)
        self._acted = np.zeros(n, bool)  # had a request this episode: its rewards count
        self._batch: Batch = Batch.empty(d)
        self._slot = np.zeros(0, np.intp)  # slot of each entry of the current batch
        self._episode_over = True
        self.episode_seed: int | None = None
        """Seed of the current episode."""

    # ----------------------------------------------------------------------------------------

    def _start_episode(self, seed: int) -> None:
        self.episode_seed = seed
        self._next_seed = seed + 1
        self.pool.reset(0, seed=seed)
        self._obs[:] = 0.0
        self._requested[:] = False
        self._acted[:] = False
        self._batch = Batch.empty(self.pool.obs_dim)
        self._slot = np.zeros(0, np.intp)
        self._episode_over = False

    def _advance(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Step the simulation one batch; fold it into the slot arrays."""
        batch = self.pool.step()
        n = self.num_envs
        slot = batch.flow.astype(np.intp)
        if len(slot) and int(slot.max()) >= n:
            raise ValueError(f"flow {int(slot.max())} has no slot (num_flows={n}); raise num_flows")
        rewards = np.zeros(n, np.float64)
        terminated = np.zeros(n, bool)
        truncated = np.zeros(n, bool)
        time_s = np.full(n, np.nan)
        self._obs[slot] = batch.obs
        rewards[slot] = np.where(self._acted[slot], batch.reward, 0.0)
        terminated[slot] = batch.done
        truncated[slot] = batch.truncated
        time_s[slot] = batch.time_s
        self._requested[:] = False
        self._requested[slot[batch.request]] = True
        self._acted |= self._requested
        self._batch, self._slot = batch, slot
        self._episode_over = bool(self.pool.over[0])
        return rewards, terminated, truncated, time_s

    def _infos(self, time_s: np.ndarray) -> dict[str, Any]:
        return {
            "requested": self._requested.copy(),
            "time_s": time_s,
            "episode_over": self._episode_over,
            "seed": self.episode_seed,
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a simulation run (seed ``seed`` or the next one) and run to its first batch."""
        super().reset(seed=seed)
        self._start_episode(self._next_seed if seed is None else int(seed))
        _, _, _, time_s = self._advance()
        return self._obs.copy(), self._infos(time_s)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Apply the actions of the requested slots and run to the next batch."""
        if self._episode_over:
            self._start_episode(self._next_seed)
        else:
            a = to_bridge(actions, self.num_envs)
            self.pool.act(a[self._slot])
        rewards, terminated, truncated, time_s = self._advance()
        return self._obs.copy(), rewards, terminated, truncated, self._infos(time_s)
