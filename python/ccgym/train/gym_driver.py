"""Driving a learner on a plain Gymnasium environment (the tests' sanity tasks).

The learners of ``ccgym.agents`` are written for the agent bridge; here one Gymnasium
environment goes through the same :class:`~ccgym.train.trajectories.AgentTrajectories` and
the same ``ready`` / ``learn`` calls: each episode is one agent, a step's reward is delivered
with the next observation, termination is ``done`` and time-limit truncation is
``truncated``. A learner that learns here and fails on congestion control fails because of the
method, not because of its plumbing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ccgym.train.loop import Learner
from ccgym.train.trajectories import AgentTrajectories

__all__ = ["evaluate_gym", "train_gym"]


def train_gym(
    learner: Learner,
    env: Any,
    total_steps: int,
    seed: int = 0,
    on_update: Callable[[int, dict[str, float]], None] | None = None,
) -> list[float]:
    """Trains ``learner`` on one Gymnasium environment for ``total_steps`` steps.

    Returns the undiscounted return of every finished episode, in order.
    """
    rng = np.random.default_rng(seed)
    traj = AgentTrajectories(learner.segment_length)
    episode, ep_return, returns = 0, 0.0, []
    obs, _ = env.reset(seed=seed)
    zero, false = np.zeros(1, np.float32), np.zeros(1, bool)
    out = learner.act(obs[None])
    traj.record([episode], obs[None], zero, false, false, out)
    updates, decisions = 0, 0
    for _ in range(total_steps):
        obs, reward, terminated, truncated, _ = env.step(_gym_action(env, out.env_actions[0]))
        ep_return += float(reward)
        ended = terminated or truncated
        out = learner.act(obs[None])
        traj.record(
            [episode],
            obs[None],
            np.array([reward], np.float32),
            np.array([terminated]),
            np.array([truncated and not terminated]),
            out,
        )
        decisions += 1
        if ended:
            returns.append(ep_return)
            episode, ep_return = episode + 1, 0.0
            obs, _ = env.reset()
            out = learner.act(obs[None])
            traj.record([episode], obs[None], zero, false, false, out)
        if learner.ready(traj, updates + 1, decisions):
            updates += 1
            stats = learner.learn(traj, updates, rng)
            decisions = 0
            if on_update is not None:
                on_update(updates, stats)
    return returns


def _gym_action(env: Any, a: np.floating | float) -> Any:
    import gymnasium as gym

    if isinstance(env.action_space, gym.spaces.Discrete):
        return int(a)
    return np.asarray([a], dtype=np.float32)


def evaluate_gym(learner: Learner, env: Any, episodes: int, seed: int = 0) -> float:
    """Mean undiscounted return of the deterministic policy over ``episodes`` episodes."""
    total = 0.0
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        done = False
        while not done:
            a = learner.act(obs[None], deterministic=True).env_actions[0]
            obs, reward, terminated, truncated, _ = env.step(_gym_action(env, a))
            total += float(reward)
            done = terminated or truncated
    return total / episodes
