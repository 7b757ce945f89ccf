"""The agent bridge's core defaults as Python needs them, in one module.

The simulator owns the ``[agent]`` table (``AgentConfig`` in ``crates/sim/src/config.rs``; names
and checks in ``crates/sim/src/cc/agent/spec.rs``): its defaults, reward names and action
mappings. Python needs a few of them before any simulation exists: to shape Gymnasium spaces, to
pick the action that keeps a flow's rate, to tell a simulator reward from one a trainer computes.
They are read from the core (``ccgym._sim.agent_defaults()`` and the name lists) when this module
is imported, so they cannot drift from it.

Needs only numpy and the native module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ccgym.runner import native

__all__ = [
    "AGENT_DEFAULTS",
    "AGENT_ACTIONS",
    "AGENT_FEATURES",
    "AGENT_TRIGGERS",
    "QUEUE_FEATURES",
    "AURORA_ACTION_BOUND",
    "BRIDGE_REWARDS",
    "MVFST_ACTIONS",
    "keep_profile_actions",
    "keep_rate_actions",
    "neutral_action",
    "expand_preset",
]

_core = native()

AGENT_DEFAULTS: dict[str, Any] = dict(_core.agent_defaults())
"""Every ``[agent]`` key with the core's default (``AgentConfig::default``; durations as text such
as ``"10us"``). The simulator applies its own defaults; Python reads these to shape spaces and
neutral actions."""

BRIDGE_REWARDS: tuple[str, ...] = tuple(_core.agent_reward_names())
"""Rewards the simulator computes (``[agent] reward``)."""

AGENT_FEATURES: tuple[str, ...] = tuple(_core.agent_feature_names())
"""Observation features the simulator computes (``[agent] features``)."""

AGENT_ACTIONS: tuple[str, ...] = tuple(_core.agent_action_names())
"""Action mappings the simulator applies (``[agent] action``)."""

AGENT_TRIGGERS: tuple[str, ...] = tuple(_core.agent_trigger_names())
"""What starts a flow agent's decision (``[agent] trigger``)."""

QUEUE_FEATURES: tuple[str, ...] = tuple(_core.agent_queue_feature_names())
"""Features of one switch-queue agent observation row (``[agent] queues``), in order; an
observation is ``queue_history`` such rows, oldest first."""

MVFST_ACTIONS: int = int(_core.MVFST_ACTIONS)
"""MVFST-RL's window actions (``[agent] action = "mvfst"``): unchanged, /2, -10, +10, x2 packets."""

AURORA_ACTION_BOUND: float = float(_core.AURORA_ACTION_BOUND)
"""The simulator clamps an ``aurora`` action to +-this (a constant of the core, not a setting)."""


def neutral_action(cfg: Mapping[str, Any]) -> float:
    """The action that keeps a flow's rate (or window) under the action mapping of ``cfg``,
    as the core chooses it for a decision nobody answers.

    ``multiplier`` and ``aurora``: 0; ``discrete``: the index of the multiplier closest to 1;
    ``per_ack``: the index of the fixed per-ACK step closest to 0 (the first rule if none is
    fixed); ``rate`` and ``window``: NaN, as there is no keeping value (the bridge refuses NaN;
    for ``rate`` callers use the ``rate`` feature of the observation instead, see
    :func:`keep_rate_actions`).
    """
    kind = cfg.get("action", AGENT_DEFAULTS["action"])
    if kind == "discrete":
        table = np.asarray(cfg.get("discrete", AGENT_DEFAULTS["discrete"]), dtype=np.float64)
        return float(np.argmin(np.abs(table - 1.0)))
    if kind == "per_ack":
        steps = list(cfg.get("per_ack", AGENT_DEFAULTS["per_ack"]))
        fixed = [(abs(float(s)), i) for i, s in enumerate(steps) if not isinstance(s, str)]
        return float(min(fixed)[1]) if fixed else 0.0
    if kind in ("rate", "window"):
        return float("nan")
    return 0.0


def keep_profile_actions(cfg: Mapping[str, Any], obs: np.ndarray) -> np.ndarray:
    """For every row of queue-agent observations ``obs``, the index of the ECN profile its
    queue has now (the answer that changes nothing), read from the ``ecn_profile`` feature of
    the newest observation row (the index over ``len(agent.ecn_profiles) - 1``)."""
    n = len(cfg.get("ecn_profiles") or [])
    obs = np.asarray(obs, np.float64)
    obs = obs.reshape(len(obs), -1)
    if n <= 1 or obs.shape[1] == 0:
        return np.zeros(len(obs), np.float32)
    nf = len(QUEUE_FEATURES)
    col = obs.shape[1] - nf + QUEUE_FEATURES.index("ecn_profile")
    return np.clip(np.rint(obs[:, col] * (n - 1)), 0, n - 1).astype(np.float32)


def keep_rate_actions(cfg: Mapping[str, Any], obs: np.ndarray) -> np.ndarray:
    """Actions that keep each flow's rate (float32, one per row of ``obs``).

    The :func:`neutral_action` of ``cfg``; for the ``rate`` mapping the flow's current rate,
    read from the ``rate`` feature of the newest observation row when the observation has it,
    otherwise line rate (1.0).
    """
    n = len(obs)
    if cfg.get("action", AGENT_DEFAULTS["action"]) != "rate":
        return np.full(n, neutral_action(cfg), np.float32)
    features = list(cfg.get("features", AGENT_DEFAULTS["features"]))
    if "rate" not in features or n == 0:
        return np.ones(n, np.float32)
    newest = obs[:, obs.shape[1] - len(features) :]
    return np.clip(newest[:, features.index("rate")], 0.0, 1.0).astype(np.float32)


def expand_preset(table: Mapping[str, Any]) -> dict[str, Any]:
    """``table`` (an ``[agent]`` table) with the keys of its ``preset`` filled in where it gives
    none, as the core does when it reads the scenario (``ccgym._sim.agent_preset``); a table
    without a preset is returned as a copy.

    Raises:
        ValueError: an unknown preset name, naming the known ones.
    """
    out = dict(table)
    name = out.get("preset") or ""
    if name:
        for key, value in _core.agent_preset(str(name)).items():
            out.setdefault(key, value)
    return out
