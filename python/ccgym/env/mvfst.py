"""MVFST-RL's environment on the agent bridge: names and index ranges of its observation, and
the ``random`` baseline for the Python driver.

The environment itself is in the core (``agent.preset = "mvfst"``; ``crates/sim/src/cc/agent/
mvfst.rs``). Its observation, for ``action_history`` = k (default 20), is ``100 + 6 k`` floats:

* ``[0, 100)``: the 20 per-event fields (:data:`FIELDS`) aggregated over the 100 ms window, one
  block of 20 per aggregate (:data:`AGGREGATES`: sum, mean, std, min, max);
* ``[100, 100 + 6 k)``: the last k actions, oldest first, each a one-hot over the 5 actions and
  the window after it in bytes / 1000.

See docs/env.md ("MVFST-RL environment") and /work/contracts/mvfst-env.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ccgym.agent_defaults import MVFST_ACTIONS
from ccgym.runner import native

__all__ = [
    "AGENT",
    "AGGREGATES",
    "ACTION_NAMES",
    "FIELDS",
    "MVFST_ACTIONS",
    "history_slice",
    "random_policy",
    "state_index",
    "obs_dim",
]

FIELDS: tuple[str, ...]
AGGREGATES: tuple[str, ...]
_fields, _aggs = native().agent_mvfst_names()
FIELDS = tuple(_fields)
"""The per-event fields, in observation order (mvfst-rl's)."""
AGGREGATES = tuple(_aggs)
"""The aggregates, in block order: sum, mean, std, min, max."""

ACTION_NAMES: tuple[str, ...] = ("unchanged", "/2", "-10", "+10", "x2")
"""What each action index does to the window (packets)."""

AGENT: dict[str, Any] = {"preset": "mvfst"}
"""The ``agent`` dict that selects the environment (give more keys to override the preset)."""

STATE_WIDTH = len(FIELDS) * len(AGGREGATES)


def obs_dim(k: int = 20) -> int:
    """Observation length for action history ``k`` (220 for the default 20)."""
    return STATE_WIDTH + (MVFST_ACTIONS + 1) * k


def state_index(field: str, aggregate: str) -> int:
    """Index of ``aggregate`` (``"sum"`` ... ``"max"``) of ``field`` (e.g. ``"cwnd"``) in the
    observation."""
    return AGGREGATES.index(aggregate) * len(FIELDS) + FIELDS.index(field)


def history_slice(k: int = 20) -> slice:
    """Where the action history sits in the observation (``k`` entries of 6 floats)."""
    return slice(STATE_WIDTH, STATE_WIDTH + (MVFST_ACTIONS + 1) * k)


def random_policy(seed: int) -> Callable[[np.ndarray], np.ndarray]:
    """The ``random`` baseline for the Python driver: a uniform action index per observation
    row, from a generator seeded with ``seed`` (float32, as the bridge takes them).

    Without Python in the loop, ``agent.policy = "random"`` does the same natively (its own
    stream, seeded from the scenario seed).
    """
    rng = np.random.default_rng(seed)

    def policy(obs: np.ndarray) -> np.ndarray:
        return rng.integers(0, MVFST_ACTIONS, size=len(obs)).astype(np.float32)

    return policy
