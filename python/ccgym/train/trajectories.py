"""Per-agent trajectories and the returns computed from them (numpy only).

On the agent bridge many flows of many simulations decide, each at its own times, in shared
batches; the reward delivered with an agent's entry is the outcome of that agent's *previous*
action. :class:`AgentTrajectories` pairs each (observation, action) with the next reward of
the same agent and cuts the result into per-agent :class:`Segment` s. Every learner of
``ccgym.agents`` collects through it, on the bridge and on plain Gymnasium environments
(:mod:`ccgym.train.gym_driver`) alike.

Returns: :func:`gae` (generalised advantage estimation, PPO), :func:`discounted_returns`
(reward-to-go within a segment, REINFORCE) and :func:`average_reward_to_go` (ADPG's discounted
*average* reward-to-go). :class:`RolloutSettings` is the update schedule of the segment-based
learners.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "AgentTrajectories",
    "PolicyOutput",
    "RolloutSettings",
    "Segment",
    "average_reward_to_go",
    "discounted_returns",
    "gae",
    "segment_arrays",
]


@dataclass
class PolicyOutput:
    """One forward pass of a policy over a batch of observations."""

    env_actions: np.ndarray
    """What the environment receives (float32; a discrete action is its index)."""
    raw: np.ndarray
    """What the log-probability refers to (the Gaussian sample u, or the index)."""
    logp: np.ndarray
    """log pi(raw | obs)."""
    value: np.ndarray
    """V(obs), 0 without a critic."""


@dataclass
class Segment:
    """Consecutive transitions of one agent, with the value that bootstraps its tail.

    ``rewards[t]`` is the reward of ``actions[t]`` taken at ``obs[t]`` (on the bridge it arrives
    with the agent's next entry). ``bootstrap`` is V(s_T) of the state after the last
    transition, 0 when ``terminal``.
    """

    obs: list[np.ndarray] = field(default_factory=list)
    actions: list[float] = field(default_factory=list)
    logps: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    bootstrap: float = 0.0
    terminal: bool = False
    first_seen: int = 0
    """Serial number of the agent's first entry: sorting by it lists agents in the order they
    appeared."""

    def __len__(self) -> int:
        return len(self.rewards)


class AgentTrajectories:
    """Turns batches of agent entries into per-agent segments.

    Each call to :meth:`record` takes one batch: for every entry the agent key (on the bridge:
    the pool's uint64 key of (simulation, episode, flow)), its observation, the reward of its
    *previous* action, its done/truncated flags, and the policy's output at that observation.
    The previous (obs, action) of the same agent is paired with the reward to make a transition.
    A segment is complete after ``segment_length`` transitions (bootstrapped with V of the new
    observation; ``None``: never cut), when the agent is done (terminal, no bootstrap) or
    truncated (bootstrapped), and at :meth:`flush`.

    An agent is *live* while it waits for the reward of an action (it has a pending entry).
    """

    def __init__(self, segment_length: int | None) -> None:
        if segment_length is not None and segment_length < 1:
            raise ValueError("segment_length must be at least 1 (or None: never cut)")
        self.segment_length = segment_length
        self.pending: dict[Hashable, tuple[np.ndarray, float, float, float, int]] = {}
        """Per live agent: (obs, raw action, log-prob, value, first_seen) of its last entry."""
        self.open: dict[Hashable, Segment] = {}
        self.complete: list[Segment] = []
        self.open_steps = 0
        """Transitions in segments not yet complete."""
        self._next_serial = 0

    @property
    def complete_steps(self) -> int:
        """Transitions in complete segments."""
        return sum(len(s) for s in self.complete)

    def record(
        self,
        keys: Sequence[Hashable],
        obs: np.ndarray,
        rewards: np.ndarray,
        done: np.ndarray,
        truncated: np.ndarray,
        out: PolicyOutput,
    ) -> None:
        """Adds one batch (see the class docstring)."""
        # Python scalars and row views (of one copy per batch) for the per-entry loop, which
        # runs for every decision of every agent.
        rows = np.array(obs, dtype=np.float32)
        pending, open_ = self.pending, self.open
        limit = self.segment_length or sys.maxsize
        added = 0
        for key, row, reward, is_done, is_trunc, raw, logp, value in zip(
            keys,
            rows,
            rewards.tolist(),
            done.tolist(),
            truncated.tolist(),
            out.raw.tolist(),
            out.logp.tolist(),
            out.value.tolist(),
            strict=True,
        ):
            prev = pending.pop(key, None)
            if prev is None:
                first_seen = self._next_serial
                self._next_serial += 1
            else:
                first_seen = prev[4]
                seg = open_.get(key)
                if seg is None:
                    seg = open_[key] = Segment(first_seen=first_seen)
                seg.obs.append(prev[0])
                seg.actions.append(prev[1])
                seg.logps.append(prev[2])
                seg.values.append(prev[3])
                seg.rewards.append(reward)
                added += 1
                if is_done:
                    seg.terminal = True
                    self._close(key, 0.0)
                elif is_trunc or len(seg.rewards) >= limit:
                    self._close(key, value)
            if is_done or is_trunc:
                self._drop(key)
            else:
                pending[key] = (row, raw, logp, value, first_seen)
        self.open_steps += added

    def _drop(self, key: Hashable) -> None:
        seg = self.open.pop(key, None)
        if seg is not None:
            self.open_steps -= len(seg)

    def _close(self, key: Hashable, bootstrap: float) -> None:
        seg = self.open.pop(key)
        self.open_steps -= len(seg)
        seg.bootstrap = 0.0 if seg.terminal else bootstrap
        self.complete.append(seg)

    def flush(self) -> None:
        """Completes every open segment, bootstrapped with V of the agent's pending state."""
        pending = self.pending
        for key, seg in self.open.items():  # open segments are never terminal
            p = pending.get(key)
            seg.bootstrap = p[3] if p is not None else 0.0
            self.complete.append(seg)
        self.open = {}
        self.open_steps = 0

    def end_agents(self, where: Callable[[Hashable], bool]) -> None:
        """The agents for which ``where(key)`` holds are gone without an end entry (their
        simulation's episode ended): their open segments complete as truncated and they are no
        longer live. The bridge sends every active agent an end entry, so normally there are
        none."""
        for key in [k for k in self.open if where(k)]:
            p = self.pending.get(key)
            self._close(key, p[3] if p is not None else 0.0)
        for key in [k for k in self.pending if where(k)]:
            del self.pending[key]

    def every_live_agent_has(self, transitions: int) -> bool:
        """Whether every live agent's open segment holds at least ``transitions``."""
        open_ = self.open
        for key in self.pending:
            seg = open_.get(key)
            if (0 if seg is None else len(seg)) < transitions:
                return False
        return True

    def take(
        self, limit: int | None = None, rng: np.random.Generator | None = None
    ) -> list[Segment]:
        """Removes and returns the complete segments (a random ``limit`` of them if more)."""
        segs, self.complete = self.complete, []
        if limit is not None and len(segs) > limit:
            if rng is None:
                raise ValueError("take: a limit needs a random generator to pick segments")
            segs = [segs[i] for i in rng.choice(len(segs), size=limit, replace=False)]
        return segs


def segment_arrays(segments: Sequence[Segment]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observations (float32, one row per transition), actions and old log-probabilities
    (float32) of ``segments``, transitions in order."""
    obs = np.stack([o for s in segments for o in s.obs])
    actions = np.array([a for s in segments for a in s.actions], np.float32)
    logps = np.array([p for s in segments for p in s.logps], np.float32)
    return obs, actions, logps


# --------------------------------------------------------------------------------------------
# Returns


def gae(segment: Segment, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimates and returns of one segment.

    With ``lam = 1`` the advantage is R_t - V(s_t), R_t the bootstrapped discounted return
    (R_t = r_t + gamma R_{t+1}, R_T = V(s_T)).
    """
    n = len(segment)
    values = np.asarray(segment.values, dtype=np.float64)
    rewards = np.asarray(segment.rewards, dtype=np.float64)
    adv = np.zeros(n, dtype=np.float64)
    next_value = segment.bootstrap
    last = 0.0
    for t in range(n - 1, -1, -1):
        delta = rewards[t] + gamma * next_value - values[t]
        last = delta + gamma * lam * last
        adv[t] = last
        next_value = values[t]
    return adv, adv + values


def discounted_returns(segment: Segment, gamma: float) -> np.ndarray:
    """Reward-to-go G_t = sum_k gamma^k r_{t+k} within a segment, without bootstrap."""
    out = np.zeros(len(segment), dtype=np.float64)
    g = 0.0
    for t in range(len(segment) - 1, -1, -1):
        g = segment.rewards[t] + gamma * g
        out[t] = g
    return out


def average_reward_to_go(delta: np.ndarray, gamma: float) -> np.ndarray:
    """ADPG's D_t = (1 / (T - t)) sum_{k=0}^{T-1-t} gamma^k delta_{t+k}; the plain mean of the
    remaining signals when gamma is 0 or 1 (as the public code does). float32."""
    t_len = len(delta)
    g = 1.0 if gamma in (0.0, 1.0) else gamma
    acc = np.zeros(t_len, dtype=np.float64)
    run = 0.0
    for t in range(t_len - 1, -1, -1):
        run = float(delta[t]) + g * run
        acc[t] = run
    return (acc / np.arange(t_len, 0, -1)).astype(np.float32)


# --------------------------------------------------------------------------------------------
# The update schedule of segment-based learners


@dataclass
class RolloutSettings:
    """When a segment-based learner (PPO, REINFORCE, Aurora) updates, and on what.

    Segment mode (``batch_steps`` = 0): once ``rollouts_per_update`` per-agent segments of up to
    ``rollout_length`` transitions are complete, update on all complete segments (a random
    ``max_rollouts_per_update`` of them if more). Batch mode (``batch_steps`` > 0, PPO1 /
    Aurora): once complete and open segments hold ``batch_steps`` transitions, close every open
    segment (bootstrapped) and update on everything: on-policy except for the one action per
    agent in flight at the update, which starts the agent's next segment.
    """

    rollout_length: int = 64
    rollouts_per_update: int = 4
    max_rollouts_per_update: int = 64
    batch_steps: int = 0

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RolloutSettings:
        """Picks the rollout keys out of an algorithm table."""
        return cls(**{k: int(d[k]) for k in cls.__dataclass_fields__ if k in d})

    def ready(self, traj: AgentTrajectories) -> bool:
        """Whether ``traj`` holds enough data for an update."""
        if self.batch_steps > 0:
            return traj.complete_steps + traj.open_steps >= self.batch_steps
        return len(traj.complete) >= self.rollouts_per_update

    def take(self, traj: AgentTrajectories, rng: np.random.Generator) -> list[Segment]:
        """The segments of the next update."""
        if self.batch_steps > 0:
            traj.flush()
            return traj.take()
        return traj.take(self.max_rollouts_per_update, rng)
