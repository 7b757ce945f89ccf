"""The agent bridge's core defaults as Python needs them, in one module.

The simulator owns the ``[agent]`` table (``AgentConfig`` in ``crates/sim/src/config.rs``; names
and checks in ``crates/sim/src/cc/agent/spec.rs``): its defaults, reward names and action
mappings. Python needs a few of them before any simulation
exists: to shape Gymnasium spaces, to pick the action that keeps a flow's rate, to tell a
simulator reward from one a trainer computes. They are copied here and nowhere else, so that
taking them from ``ccgym._sim`` instead is a change to this file only.

Needs only numpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = [
    "AGENT_DEFAULTS",
    "AURORA_ACTION_BOUND",
    "BRIDGE_REWARDS",
    "keep_rate_actions",
    "neutral_action",
]

AGENT_DEFAULTS: dict[str, Any] = {
    "trigger": "probe",
    "every_acks": 16,
    "interval": "10us",
    "features": ["action", "adpg"],
    "history": 2,
    "reward": "adpg_signal",
    "action": "multiplier",
    "multiplier_inc": 0.2,
    "multiplier_dec": 0.2,
    "aurora_alpha": 0.025,
    "discrete": [0.8, 0.95, 1.0, 1.05, 1.1, 1.2],
    "policy_delay": "1us",
    "policy": "external",
}
"""Defaults of the ``[agent]`` keys the Python side reads (``AgentConfig::default``); the
simulator applies its own, these only shape spaces and neutral actions."""

BRIDGE_REWARDS: tuple[str, ...] = (
    "adpg",
    "adpg_signal",
    "aurora",
    "throughput_delay",
    "log_utility",
)
"""Rewards the simulator computes (``[agent] reward``; ``REWARDS`` in ``cc/agent/spec.rs``)."""

AURORA_ACTION_BOUND = 1e6
"""The simulator clamps an ``aurora`` action to +-this."""


def neutral_action(cfg: Mapping[str, Any]) -> float:
    """The action that keeps a flow's rate under the action mapping of ``cfg``.

    ``multiplier`` and ``aurora``: 0; ``discrete``: the index of the multiplier closest to 1;
    ``rate``: NaN (there is no rate-keeping value; callers that need one use the ``rate``
    feature of the observation instead, see :func:`keep_rate_actions`).
    """
    kind = cfg.get("action", AGENT_DEFAULTS["action"])
    if kind == "discrete":
        table = np.asarray(cfg.get("discrete", AGENT_DEFAULTS["discrete"]), dtype=np.float64)
        return float(np.argmin(np.abs(table - 1.0)))
    if kind == "rate":
        return float("nan")
    return 0.0


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
