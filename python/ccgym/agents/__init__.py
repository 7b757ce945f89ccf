"""Learning algorithms for congestion control (PyTorch; ``pip install ccgym[train]``).

One readable file per algorithm (CleanRL style) holding only that algorithm (its defaults,
networks, loss and update); the training framework they share (config, rollouts over the agent
bridge, trajectories and returns, the loop with checkpoints, resume and TensorBoard) is
:mod:`ccgym.train`. Each file is a *trainer plug-in*: a module ``ccgym.agents.<name>`` with

* ``train_from_config(config, out_dir, resume=False)`` — used by ``ccgym train <name>``;
* optionally ``export_checkpoint(path, calibration_obs=None) -> dict`` — used by
  ``ccgym export`` to turn a checkpoint (a ``torch.save`` dict whose ``"algorithm"`` names the
  module) into a native policy (see :mod:`ccgym.policies`).

Importing this package does not import PyTorch; the trainer modules do.
"""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def trainer_names() -> list[str]:
    """The trainer plug-ins of this package: its modules that define ``train_from_config``,
    found by reading their source, so without importing them (and PyTorch)."""
    folder = Path(__file__).parent
    return sorted(
        p.stem
        for p in folder.glob("*.py")
        if _NAME.match(p.stem) and "\ndef train_from_config(" in p.read_text(encoding="utf-8")
    )


def trainer(name: str) -> ModuleType:
    """The trainer module ``ccgym.agents.<name>`` (imports PyTorch).

    Raises:
        ValueError: the name is not a valid module name.
        ImportError: no such trainer, or its dependencies (torch) are missing.
    """
    if not _NAME.match(name):
        raise ValueError(f"invalid trainer name {name!r}")
    try:
        return importlib.import_module(f"ccgym.agents.{name}")
    except ModuleNotFoundError as e:
        if e.name == f"ccgym.agents.{name}":
            raise ImportError(f'no trainer "{name}" (no module ccgym.agents.{name})') from None
        raise ImportError(
            f"trainer {name} needs {e.name}: install the training extras, "
            "pip install 'ccgym[train]'"
        ) from e


def checkpoint_algorithm(path: str | os.PathLike[str]) -> str:
    """The ``"algorithm"`` recorded in a training checkpoint (loads it with torch); a damaged
    file or one that is not a checkpoint raises :class:`~ccgym.CorruptFileError` naming it."""
    from ccgym.train.loop import read_checkpoint

    alg = read_checkpoint(path)["algorithm"]
    if not isinstance(alg, str):
        raise ValueError(f"{path}: not a ccgym training checkpoint (algorithm {alg!r})")
    return alg


def export_checkpoint(path: str | os.PathLike[str], calibration_obs: Any = None) -> dict:
    """A checkpoint as a native policy dict, through its trainer's ``export_checkpoint``."""
    alg = checkpoint_algorithm(path)
    mod = trainer(alg)
    fn = getattr(mod, "export_checkpoint", None)
    if fn is None:
        raise ValueError(f"the {alg} trainer cannot export checkpoints (no export_checkpoint)")
    return fn(path, calibration_obs=calibration_obs)


__all__ = ["checkpoint_algorithm", "export_checkpoint", "trainer"]
