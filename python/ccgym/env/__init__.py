"""Environment adapters over the agent bridge.

* :class:`AgentPool` (numpy only): several simulations stepped in batches of decisions.
* :class:`CcFlowEnv`: a Gymnasium ``Env`` for one flow (``ccgym.env.gym_env``).
* :class:`CcFlowVectorEnv`: a Gymnasium ``VectorEnv`` whose sub-environments are the agent
  flows of one simulation (``ccgym.env.vector``).
* :class:`CcParallelEnv`: a PettingZoo ``ParallelEnv`` in interval mode
  (``ccgym.env.pettingzoo_env``).
* :class:`CcRllibEnv`: an RLlib ``MultiAgentEnv`` in event mode (``ccgym.env.rllib_env``).

``import ccgym.env`` needs only numpy; Gymnasium, PettingZoo and Ray are imported when the
adapter that needs them is first used. See ``docs/env.md``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ccgym.env.bridge import AgentPool, Batch, make_key, prepare_scenario, split_key

if TYPE_CHECKING:
    from ccgym.env.gym_env import CcFlowEnv
    from ccgym.env.pettingzoo_env import CcParallelEnv
    from ccgym.env.rllib_env import CcRllibEnv
    from ccgym.env.vector import CcFlowVectorEnv

__all__ = [
    "AgentPool",
    "Batch",
    "CcFlowEnv",
    "CcFlowVectorEnv",
    "CcParallelEnv",
    "CcRllibEnv",
    "make_key",
    "prepare_scenario",
    "split_key",
]

_LAZY = {
    "CcFlowEnv": "ccgym.env.gym_env",
    "CcFlowVectorEnv": "ccgym.env.vector",
    "CcParallelEnv": "ccgym.env.pettingzoo_env",
    "CcRllibEnv": "ccgym.env.rllib_env",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ccgym.env' has no attribute {name!r}")
