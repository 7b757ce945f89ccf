"""Gymnasium spaces of an ``[agent]`` configuration, and turning actions into bridge floats."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ccgym.agent_defaults import (
    AGENT_DEFAULTS,
    AURORA_ACTION_BOUND,
    MVFST_ACTIONS,
    keep_profile_actions,
    keep_rate_actions,
)

__all__ = [
    "AURORA_ACTION_BOUND",
    "action_space",
    "keep_profile_actions",
    "keep_rate_actions",
    "observation_space",
    "to_bridge",
    "named_actions",
    "named_queue_actions",
    "queue_action_space",
]


def observation_space(obs_dim: int) -> gym.spaces.Box:
    """An observation: ``history`` rows of ``features``, flattened (oldest row first)."""
    return gym.spaces.Box(-np.inf, np.inf, shape=(obs_dim,), dtype=np.float32)


def action_space(cfg: Mapping[str, Any]) -> gym.Space[Any]:
    """The action space of an ``[agent]`` table (completed with defaults).

    ``multiplier``: Box([-1, 1]); ``aurora``: Box([-1e6, 1e6]); ``rate``: Box([0, 1]) (fraction
    of line rate); ``discrete``: Discrete(len(discrete)) (an index into the multipliers);
    ``mvfst``: Discrete(5) (MVFST-RL's window steps).
    """
    kind = cfg.get("action", AGENT_DEFAULTS["action"])
    if kind == "discrete":
        return gym.spaces.Discrete(len(cfg.get("discrete", AGENT_DEFAULTS["discrete"])))
    if kind == "mvfst":
        # MVFST-RL's window steps: unchanged, /2, -10, +10, x2 (packets).
        return gym.spaces.Discrete(MVFST_ACTIONS)
    if kind == "rate":
        low, high = 0.0, 1.0
    elif kind == "aurora":
        low, high = -AURORA_ACTION_BOUND, AURORA_ACTION_BOUND
    else:
        low, high = -1.0, 1.0
    return gym.spaces.Box(low, high, shape=(1,), dtype=np.float32)


def to_bridge(actions: Any, n: int) -> np.ndarray:
    """``n`` actions (Box ``(n, 1)`` / ``(n,)`` or Discrete indices) as the bridge's float32."""
    a = np.asarray(actions, dtype=np.float32).reshape(-1)
    if a.shape != (n,):
        raise ValueError(f"expected {n} actions, got shape {np.shape(actions)}")
    return a


def named_actions(
    cfg: Mapping[str, Any],
    batch: Any,
    names: list[Any],
    actions: Mapping[Any, Any],
    live: Collection[Any] | None = None,
) -> np.ndarray:
    """The bridge action vector of a batch from a dict of actions keyed by agent name.

    ``names`` are the agent names of the batch's requesting entries (``batch.request``), in
    order. Entries whose agent gave no action (and non-requesting entries) keep their rate.
    ``live`` are the names an action may be given for (default: ``names``); an action for any
    other name is an error (a typo or a stale agent would otherwise be ignored silently).

    Raises:
        ValueError: an action keyed by a name outside ``live``, naming it.
    """
    allowed = set(names) if live is None else set(live)
    unknown = [k for k in actions if k not in allowed]
    if unknown:
        shown = ", ".join(repr(k) for k in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        raise ValueError(
            f"actions for unknown agent(s) {shown}: the live agents are "
            f"{sorted(allowed, key=str)[:10]}{' ...' if len(allowed) > 10 else ''}"
        )
    return _fill_named(keep_rate_actions(cfg, batch.obs), batch, names, actions)


def queue_action_space(cfg: Mapping[str, Any]) -> gym.spaces.Discrete:
    """A switch-queue agent's action space: Discrete over ``agent.ecn_profiles`` (the index of
    the ECN profile its queue takes)."""
    return gym.spaces.Discrete(len(cfg.get("ecn_profiles") or []))


def named_queue_actions(
    cfg: Mapping[str, Any], batch: Any, names: list[Any], actions: Mapping[Any, Any]
) -> np.ndarray:
    """The bridge action vector of a queue-agent batch from a dict of actions keyed by agent
    name (``names``: those of the batch's requesting entries, in order). A queue whose agent
    gave no action keeps its profile (:func:`keep_profile_actions`)."""
    return _fill_named(keep_profile_actions(cfg, batch.obs), batch, names, actions)


def _fill_named(
    out: np.ndarray, batch: Any, names: list[Any], actions: Mapping[Any, Any]
) -> np.ndarray:
    """``out`` (the keeping actions of ``batch``) with the given actions of its requesting
    entries, named in order by ``names``, written in."""
    idx = np.flatnonzero(batch.request)
    for i, name in zip(idx, names, strict=True):
        if name in actions:
            out[i] = to_bridge(actions[name], 1)[0]
    return out
