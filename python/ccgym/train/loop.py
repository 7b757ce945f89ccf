"""The training loop every learner of ``ccgym.agents`` runs: collect, update, log, checkpoint.

A learner (:class:`Learner`) brings its algorithm: how it acts, when its rollout is complete,
how it updates, and how its policy is exported. :func:`train` does the rest, the same way for
all of them:

* the config (:mod:`ccgym.train.config`): the trainer's defaults merged with the given config,
  or, on resume, the checkpoint's own config with the given one merged over it;
* seeding: Python, NumPy and PyTorch from ``train.seed``, plus the run's generator
  (``numpy.random.Generator``) that draws every episode's seed and the learners' random
  choices;
* collection through :class:`~ccgym.train.rollout.TrainingRollout` into
  :class:`~ccgym.train.trajectories.AgentTrajectories` until the learner is ready, then one
  update;
* logs: TensorBoard (``tb/``: ``train/*`` per update, ``episode/<label>/*`` per finished
  training episode), ``history.jsonl`` (the ``train/*`` values, one line per update), a
  progress bar when stderr is a terminal (plain lines in a log file under ``ccgym train``:
  :func:`ccgym._progress.plain_lines`);
* checkpoints (``checkpoint.pt``, the latest, and ``checkpoints/ckpt-u<update>-d<decisions>.pt``
  every ``train.checkpoint_every`` updates and at the end) with model, optimiser, learner
  state, counters, config and every RNG state, written atomically (a temporary file, synced,
  then renamed), and ``resume`` (a config given then that would change the checkpoint's network
  is an error naming the keys and both values);
* interruption: Ctrl-C and SIGTERM save a checkpoint (after the update in progress) and raise
  :class:`TrainingInterrupted`, whose message says how to resume;
* damaged files on resume: a ``checkpoint.pt`` that cannot be loaded is replaced by the newest
  kept checkpoint that can (with a warning), a torn last line of ``history.jsonl`` is dropped
  (with a warning); anything else raises :class:`~ccgym.CorruptFileError` naming the file;
* ``policy.json``, the trained policy as a native file, at the end.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ccgym import policies
from ccgym._errors import CorruptFileError, CorruptFileWarning, ResumeConfigWarning, ScenarioError
from ccgym.agent_defaults import AGENT_DEFAULTS
from ccgym.train.config import ConfigSource, load_config, merge_config
from ccgym.train.networks import policy_step
from ccgym.train.rollout import (
    AgentTable,
    FinishedEpisode,
    TrainingRollout,
    TrainingScenario,
    scenario_entries,
)
from ccgym.train.trajectories import AgentTrajectories, PolicyOutput, RolloutSettings, Segment

__all__ = [
    "Learner",
    "MakeLearner",
    "TrainingInterrupted",
    "export_checkpoint",
    "load_learner",
    "read_checkpoint",
    "rng_state",
    "seed_everything",
    "set_rng_state",
    "train",
]


class Learner:
    """What the loop needs from a learning algorithm (subclass it).

    Attributes:
        model: every trained parameter (saved and restored by checkpoints).
        optimizer: its optimiser.
        segment_length: per-agent segments are cut after this many transitions (None: only at
            an agent's end and at ``flush``).
        progress_keys: statistics shown on the progress bar.
    """

    model: nn.Module
    optimizer: torch.optim.Optimizer
    segment_length: int | None = None
    progress_keys: tuple[str, ...] = ()

    def act(self, obs: np.ndarray, deterministic: bool = False) -> PolicyOutput:
        """The policy's actions (and what the update needs of them) at a batch of obs."""
        raise NotImplementedError

    def ready(self, traj: AgentTrajectories, update: int, decisions: int) -> bool:
        """Whether the rollout of update number ``update`` (from 1) is complete, after
        ``decisions`` decisions since the last update."""
        raise NotImplementedError

    def learn(
        self, traj: AgentTrajectories, update: int, rng: np.random.Generator
    ) -> dict[str, float]:
        """Update number ``update`` on what ``traj`` holds (taking it out); returns the
        ``train/*`` statistics. ``rng`` is the run's generator."""
        raise NotImplementedError

    def native_policy(self, config: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
        """The trained policy as a native ``ccgym-mlp`` dict; ``meta`` has ``algorithm``,
        ``update`` and ``decisions``. Raises ValueError when the format cannot express it."""
        raise NotImplementedError

    def extra_state(self) -> dict[str, Any]:
        """Learner state beyond the model and optimiser (for checkpoints)."""
        return {}

    def restore(self, checkpoint: Mapping[str, Any]) -> None:
        """Loads the model, optimiser and extra state of a checkpoint."""
        self.model.load_state_dict(checkpoint["model"])
        self.optimizer.load_state_dict(checkpoint["optimizer"])


class SegmentLearner(Learner):
    """A learner that acts with an actor-critic (``model.actor``, ``model.critic``) and updates
    once :class:`RolloutSettings` holds enough complete segments (PPO, REINFORCE)."""

    rollout: RolloutSettings
    device: torch.device

    def act(self, obs: np.ndarray, deterministic: bool = False) -> PolicyOutput:
        """Samples actions at ``obs`` with their log-probabilities and values."""
        return policy_step(self.model.actor, self.model.critic, obs, deterministic, self.device)

    def ready(self, traj: AgentTrajectories, update: int, decisions: int) -> bool:
        """Whether enough segments are complete (see :class:`RolloutSettings`)."""
        return self.rollout.ready(traj)

    def learn(
        self, traj: AgentTrajectories, update: int, rng: np.random.Generator
    ) -> dict[str, float]:
        """One update on the segments :class:`RolloutSettings` takes."""
        return self.update(self.rollout.take(traj, rng))

    def update(self, segments: list[Segment]) -> dict[str, float]:
        """The algorithm's update on complete segments."""
        raise NotImplementedError


MakeLearner = Callable[[int, Mapping[str, Any]], Learner]
"""``make_learner(obs_dim, config)``: a learner for a merged config."""

ScenarioBuilder = Callable[[Mapping[str, Any], AgentTable], list[TrainingScenario]]
"""How a trainer's config names its training scenarios (see :mod:`ccgym.train.rollout`)."""


# --------------------------------------------------------------------------------------------
# Seeding and checkpoints


def seed_everything(seed: int) -> None:
    """Seeds Python's, NumPy's global and PyTorch's generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state(rng: np.random.Generator) -> dict[str, Any]:
    """Every generator's state: Python, NumPy global, the run's generator, PyTorch."""
    return {
        "python": random.getstate(),
        "numpy_global": np.random.get_state(),
        "numpy": rng.bit_generator.state,
        "torch": torch.get_rng_state(),
    }


def set_rng_state(state: Mapping[str, Any], rng: np.random.Generator) -> None:
    """Restores :func:`rng_state`."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy_global"])
    rng.bit_generator.state = state["numpy"]
    torch.set_rng_state(state["torch"])


CHECKPOINT_KEYS = (
    "algorithm",
    "update",
    "decisions",
    "episodes",
    "wall_s",
    "model",
    "optimizer",
    "extra",
    "rng",
    "config",
    "obs_dim",
)
"""What a checkpoint written by :func:`train` holds."""

TORCH_MAGIC = (b"PK\x03\x04", b"\x80")
"""How a file written by ``torch.save`` starts: a zip archive (the default), or a pickle (the
legacy format). A file starting otherwise is not a checkpoint (rather than a damaged one)."""

TAGGED_CHECKPOINT = re.compile(r"ckpt-u(\d+)-d(\d+)\.pt")
"""The name of a kept checkpoint, ``checkpoints/ckpt-u<update>-d<decisions>.pt``."""


def read_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A checkpoint written by :func:`train`, as a dict.

    Raises:
        FileNotFoundError: there is no such file.
        CorruptFileError: the file cannot be loaded (truncated, overwritten, not written by
            torch) or lacks what a checkpoint holds; the message names it.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    with open(path, "rb") as f:
        head = f.read(4)
    if head and not head.startswith(TORCH_MAGIC):  # empty: a checkpoint cut short
        raise CorruptFileError(
            f"{path} is not a ccgym training checkpoint (not a file written by torch.save: "
            "give the .pt file `ccgym train` wrote, e.g. RUN/checkpoint.pt)"
        )
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:  # a damaged file fails anywhere in torch's zip and pickle readers
        reason = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        raise CorruptFileError(
            f"checkpoint {path} is damaged and cannot be loaded ({reason})"
        ) from e
    missing = [k for k in CHECKPOINT_KEYS if k not in ckpt] if isinstance(ckpt, dict) else None
    if missing is None or missing:
        what = f"lacks {', '.join(missing)}" if missing else f"holds a {type(ckpt).__name__}"
        raise CorruptFileError(f"{path} is not a ccgym training checkpoint (it {what})")
    return ckpt


def _load(path: Path, name: str, what: str) -> dict[str, Any]:
    ckpt = read_checkpoint(path)
    if ckpt["algorithm"] != name:
        raise ValueError(f"{what}: {path} is a {ckpt['algorithm']} checkpoint, not {name}")
    return ckpt


def save_atomic(path: Path, state: Mapping[str, Any]) -> None:
    """Write a checkpoint ``state`` to ``path`` so that an interruption (Ctrl-C, a kill, a power
    cut) leaves the old file or the new one, never a truncated file."""
    # Complete on disk before it replaces the previous one: a temporary file, flushed to the
    # device, then renamed.
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            torch.save(dict(state), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _tagged_checkpoints(out: Path) -> list[Path]:
    """The kept checkpoints of a run folder, newest (highest update) first."""
    found = []
    for p in (out / "checkpoints").glob("ckpt-u*-d*.pt"):
        m = TAGGED_CHECKPOINT.fullmatch(p.name)
        if m:
            found.append(((int(m.group(1)), int(m.group(2))), p))
    return [p for _, p in sorted(found, reverse=True)]


def _resume_checkpoint(out: Path, name: str) -> dict[str, Any]:
    """The newest good checkpoint of run folder ``out``: ``checkpoint.pt``, or, when that one
    is missing or damaged, the newest loadable ``checkpoints/ckpt-*.pt`` (with a warning)."""
    latest = out / "checkpoint.pt"
    damaged: dict[Path, str] = {}
    for path in [latest, *_tagged_checkpoints(out)]:
        if not path.is_file():
            continue
        try:
            ckpt = _load(path, name, "resume")
        except CorruptFileError as e:
            damaged[path] = str(e)
            continue
        if path != latest:
            why = damaged.pop(latest, f"{latest} is missing")
            also = f" ({len(damaged)} newer kept ones are damaged too)" if damaged else ""
            warnings.warn(
                f"{why}; resuming from {path} (update {ckpt['update']}) instead{also}",
                CorruptFileWarning,
                stacklevel=3,
            )
        return ckpt
    if not damaged:
        raise FileNotFoundError(f"resume: no checkpoint at {latest}")
    raise CorruptFileError(
        f"resume: no usable checkpoint in {out}: {'; '.join(damaged.values())}; "
        "start the run again without --resume"
    )


def load_learner(
    path: str | os.PathLike[str], name: str, make_learner: MakeLearner
) -> tuple[Learner, dict[str, Any], dict[str, Any]]:
    """``(learner, config, checkpoint)`` from a checkpoint written by :func:`train`."""
    ckpt = _load(Path(path), name, "load")
    config = ckpt["config"]
    learner = make_learner(int(ckpt["obs_dim"]), config)
    learner.restore(ckpt)
    return learner, config, ckpt


def export_checkpoint(
    path: str | os.PathLike[str],
    name: str,
    make_learner: MakeLearner,
    calibration_obs: Any = None,
    percentile: float | None = None,
) -> dict[str, Any]:
    """The native policy dict of a checkpoint (``ccgym export``), int8-calibrated on
    ``calibration_obs`` if given (observations as the policy sees them)."""
    learner, config, ckpt = load_learner(path, name, make_learner)
    meta = {"algorithm": name, "update": ckpt["update"], "decisions": ckpt["decisions"]}
    policy = learner.native_policy(config, meta)
    if calibration_obs is not None:
        policy = policies.with_calibration(policy, calibration_obs, percentile)
    return policy


def _trim_history(path: Path, update: int) -> None:
    """Keeps the lines of ``history.jsonl`` up to update ``update`` (those after it are redone).

    Training appends one line per update, so an interruption can only cut the last line short:
    such a line is dropped with a warning. Any other line that is not a record is corruption
    this function cannot repair: :class:`CorruptFileError` names the file and the line.
    """
    lines = path.read_bytes().split(b"\n")
    last = max((i for i, ln in enumerate(lines) if ln.strip()), default=-1)
    kept = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            u = rec["update"]
            if not isinstance(u, int) or isinstance(u, bool):
                raise TypeError(f"update is {u!r}")
        except (ValueError, KeyError, TypeError) as e:
            reason = f"{type(e).__name__}: {e}"
            if i == last:
                warnings.warn(
                    f"{path}: the last line ({i + 1}) is cut short, as an interrupted write "
                    f"leaves it ({reason}): dropped",
                    CorruptFileWarning,
                    stacklevel=3,
                )
                continue
            raise CorruptFileError(
                f"{path}: line {i + 1} is not a history record ({reason}); delete or repair "
                "that line and resume again"
            ) from None
        if u <= update:
            kept.append(line.decode("utf-8") + "\n")
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    tmp.write_text("".join(kept), encoding="utf-8")
    os.replace(tmp, path)


# --------------------------------------------------------------------------------------------
# Resume: the checkpoint's network, the given config's settings


_UNSET: Any = object()
"""A key one of two configs does not set (see :func:`_config_changes`)."""


def _config_changes(
    saved: Mapping[str, Any], given: Mapping[str, Any], prefix: str = ""
) -> dict[str, tuple[Any, Any]]:
    """``{dotted key: (saved value, given value)}`` for every value that differs (tables are
    compared key by key, anything else whole; a key only one config sets has :data:`_UNSET`
    on the other side)."""
    changes: dict[str, tuple[Any, Any]] = {}
    for key in list(saved) + [k for k in given if k not in saved]:
        a, b = saved.get(key, _UNSET), given.get(key, _UNSET)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            changes.update(_config_changes(a, b, f"{prefix}{key}."))
        elif a != b:
            changes[f"{prefix}{key}"] = (a, b)
    return changes


def warn_config_changes(
    saved: Mapping[str, Any], config: Mapping[str, Any], where: Path, stacklevel: int = 3
) -> dict[str, tuple[Any, Any]]:
    """On resume: warns (one line) listing every setting of ``config`` (the checkpoint's config
    with the given one merged over it) that differs from the checkpoint's own; returns them."""
    changes = _config_changes(saved, config)
    if changes:
        listed = "; ".join(f"{k} = {_show(a)} -> {_show(b)}" for k, (a, b) in changes.items())
        warnings.warn(
            f"resume: the config given changes settings of the checkpoint in {where}: {listed}",
            ResumeConfigWarning,
            stacklevel=stacklevel,
        )
    return changes


def _with_value(config: Mapping[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """A copy of ``config`` with the value at ``dotted`` (``agent.action``) set to ``value``."""
    *tables, leaf = dotted.split(".")
    override: dict[str, Any] = {leaf: value}
    for table in reversed(tables):
        override = {table: override}
    return merge_config(config, override)


def _parameter_shapes(state: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in state.items()}


def _network_shapes(config: Mapping[str, Any], make_learner: MakeLearner) -> Any:
    """The parameter shapes of the learner ``config`` builds (None: it cannot build one)."""
    try:
        table = AgentTable(config["agent"])
        return _parameter_shapes(make_learner(table.obs_dim, config).model.state_dict())
    except Exception:  # the key cannot change alone: it is part of the change
        return None


def _show(value: Any) -> str:
    return "not set" if value is _UNSET else json.dumps(value, default=str)


def _network_interface(agent: Mapping[str, Any]) -> dict[str, Any]:
    """What a trained network's inputs and outputs mean, by ``[agent]`` key: the observation's
    features and history, the action and, for a discrete one, its table. Changing one of them
    may keep the parameters' shapes (``multiplier`` and ``aurora`` both have a Gaussian head)
    while the trained weights no longer fit it."""
    action = agent.get("action", AGENT_DEFAULTS["action"])
    interface = {
        "agent.features": list(agent.get("features", AGENT_DEFAULTS["features"])),
        "agent.history": agent.get("history", AGENT_DEFAULTS["history"]),
        "agent.action": action,
    }
    if action == "discrete":
        interface["agent.discrete"] = list(agent.get("discrete", AGENT_DEFAULTS["discrete"]))
    return interface


def _check_same_network(
    ckpt: Mapping[str, Any],
    config: Mapping[str, Any],
    learner: Learner,
    make_learner: MakeLearner,
    where: Path,
) -> None:
    """Raises a :class:`~ccgym.ScenarioError` when ``config`` (the checkpoint's config with the
    given one merged over it) changes the checkpoint's network: its inputs or outputs (see
    :func:`_network_interface`) or the shape of a parameter. The message names each config
    key responsible with its value in both configs.

    For parameter shapes, a key is named when changing it alone in the checkpoint's config
    already changes them; if only a combination does, every changed key is named.
    """
    saved_io = _network_interface(ckpt["config"]["agent"])
    given_io = _network_interface(config["agent"])
    culprits = {  # a discrete table counts only if both actions are discrete
        key: (saved_io[key], given_io[key])
        for key in saved_io
        if key in given_io and saved_io[key] != given_io[key]
    }
    saved = _parameter_shapes(ckpt["model"])
    built = _parameter_shapes(learner.model.state_dict())
    if saved == built and not culprits:
        return
    parameters = ""
    if saved != built:
        changes = _config_changes(ckpt["config"], config)
        shaping: dict[str, tuple[Any, Any]] = {}
        for key, (_, given) in changes.items():
            alone = _with_value(ckpt["config"], key, given)
            if key not in culprits and _network_shapes(alone, make_learner) != saved:
                shaping[key] = changes[key]
        culprits.update(shaping if shaping or culprits else changes)
        differences = [
            f"{name} {list(saved[name]) if name in saved else 'absent'} in the checkpoint, "
            f"{list(built[name]) if name in built else 'absent'} now"
            for name in sorted(set(saved) | set(built))
            if saved.get(name) != built.get(name)
        ]
        if len(differences) > 3:
            differences = [*differences[:3], f"and {len(differences) - 3} more"]
        parameters = f" (network parameters: {'; '.join(differences)})"
    if not culprits:  # the same config, yet another network: ccgym's networks changed
        raise ScenarioError(
            f"resume: the checkpoint in {where} holds a network that its own config no longer "
            f"builds (written by another version of ccgym?){parameters}"
        )
    keys = "; ".join(
        f"{key} = {_show(a)} in the checkpoint's config, {_show(b)} in the config given"
        for key, (a, b) in culprits.items()
    )
    one = len(culprits) == 1
    raise ScenarioError(
        f"resume: the config given changes the network of the checkpoint in {where}: {keys}"
        f"{parameters}. A run resumes with its own network: leave "
        f"{'this key' if one else 'these keys'} out of the config given (or set "
        f"{'it' if one else 'them'} to the checkpoint's {'value' if one else 'values'}), or "
        "train the new network in another run folder"
    )


def _optimizer_settings(optimizer: torch.optim.Optimizer) -> list[dict[str, Any]]:
    """The settings of each parameter group (learning rate, eps, ...), without its tensors."""
    return [{k: v for k, v in g.items() if k != "params"} for g in optimizer.param_groups]


# --------------------------------------------------------------------------------------------
# Interruption


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped on Ctrl-C (SIGINT) or SIGTERM after saving a checkpoint.

    Attributes:
        checkpoint: the checkpoint saved (``out_dir/checkpoint.pt``).
        update: the number of updates it holds.
    """

    def __init__(self, name: str, checkpoint: Path, update: int) -> None:
        super().__init__(
            f"training interrupted: update {update} saved in {checkpoint}; continue with "
            f"`ccgym train {name} --out {checkpoint.parent} --resume`"
        )
        self.checkpoint = checkpoint
        self.update = update


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """While training, SIGTERM (``kill PID``, a batch scheduler's stop) acts like Ctrl-C: the
    loop saves a checkpoint and stops. The previous handler is put back afterwards; a SIGTERM
    ignored on purpose stays ignored. Only the main thread can handle signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN or previous is None:  # None: not installed from Python
        yield
        return
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Holds Ctrl-C and SIGTERM back during the block (an update, a checkpoint written), so
    that it is never cut short; a signal that came in is raised again after it, to whatever
    handled it before."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        caught.append(signum)

    held = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) not in (signal.SIG_IGN, None):
            held[sig] = signal.signal(sig, hold)
    try:
        yield
    finally:
        for sig, handler in held.items():
            signal.signal(sig, handler)
    for sig in dict.fromkeys(caught):
        signal.raise_signal(sig)


# --------------------------------------------------------------------------------------------
# Logging


def _log_episode(writer: Any, episode: FinishedEpisode, update: int) -> None:
    """Metrics of a finished training episode (its statistics window), per scenario label."""
    s = episode.summary
    bn = s.get("bottleneck") or {}
    for tag, v in (
        ("utilization", bn.get("utilization")),
        ("queue_latency_us", bn.get("queue_latency_mean_us")),
        ("jain", (s.get("flows") or {}).get("jain")),
        ("drops_packets", (s.get("network") or {}).get("drops_packets")),
        ("reward_per_step", episode.reward_per_step),
    ):
        if isinstance(v, (int, float)) and math.isfinite(v):
            writer.add_scalar(f"episode/{episode.label}/{tag}", v, update)


def _progress(name: str, show: bool | None, total: int) -> Any:
    from rich.console import Console

    from ccgym._progress import progress_bar

    console = Console(stderr=True)
    enabled = console.is_terminal if show is None else show
    width = 2 * len(str(total)) + 1
    return progress_bar(
        name, count_width=width, elastic="info", console=console, disable=not enabled
    )


# --------------------------------------------------------------------------------------------
# The loop


def train(
    name: str,
    defaults: Mapping[str, Any],
    make_learner: MakeLearner,
    config: ConfigSource | None,
    out_dir: str | os.PathLike[str],
    *,
    resume: bool = False,
    progress: bool | None = None,
    scenarios: ScenarioBuilder = scenario_entries,
) -> dict[str, Any]:
    """Trains learner ``name`` (the module name of ``ccgym.agents``) as configured.

    Args:
        name: the trainer's name, recorded in checkpoints as ``"algorithm"``.
        defaults: the trainer's ``DEFAULT_CONFIG``.
        make_learner: builds the learner for an observation length and a merged config.
        config: a config dict, a TOML (or JSON) path or a bundled config name, merged over
            ``defaults``; on resume merged over the checkpoint's config instead (None: the
            checkpoint's config as it is). On resume it may change anything but the network
            (the optimiser's settings such as ``lr`` apply to the restored optimiser).
        out_dir: the run folder (see the module docstring for what it receives).
        resume: continue from ``out_dir/checkpoint.pt`` (if it is damaged or missing, from
            the newest good ``checkpoints/ckpt-*.pt``): model, optimiser, learner state,
            update and decision counters, every RNG state. The simulations in flight are not
            saved: they restart with seeds drawn from the restored generator, and partial
            per-agent trajectories are lost.
        progress: show a progress bar (default: when stderr is a terminal).
        scenarios: how the config names its training scenarios.

    Returns:
        ``algorithm``, ``updates``, ``decisions``, ``episodes``, ``complete`` (false when
        ``train.max_wall_s`` stopped the run before ``train.updates``; ``stopped`` then says
        ``"max_wall_s"``), ``wall_s``, the ``stats`` of the last update and the paths written
        (``checkpoint``, ``policy`` when exported).

    Raises:
        TrainingInterrupted: Ctrl-C or SIGTERM, after the checkpoint was saved.
        CorruptFileError: on resume, no checkpoint can be loaded, or ``history.jsonl`` is
            damaged before its last line.
        ScenarioError: on resume, the config given changes the checkpoint's network (a
            parameter's shape, the observation's features or history, the action); the
            message names each such key with its value in both configs.
    """
    from torch.utils.tensorboard import SummaryWriter

    out = Path(out_dir)
    ckpt_path = out / "checkpoint.pt"
    ckpt: dict[str, Any] | None = None
    if resume:
        ckpt = _resume_checkpoint(out, name)
        # The checkpoint's own config rebuilds the networks it saved.
        cfg = load_config(config, ckpt["config"])
        warn_config_changes(ckpt["config"], cfg, out)
    else:
        cfg = load_config(config, defaults)
    train_cfg = cfg["train"]
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(int(train_cfg.get("torch_threads", 1)))
    seed = int(train_cfg["seed"])
    seed_everything(seed)
    rng = np.random.default_rng(seed)

    table = AgentTable(cfg["agent"])
    learner = make_learner(table.obs_dim, cfg)
    update, decisions, episodes, wall_before = 0, 0, 0, 0.0
    if ckpt is not None:
        _check_same_network(ckpt, cfg, learner, make_learner, out)
        settings = _optimizer_settings(learner.optimizer)
        learner.restore(ckpt)
        # The optimiser's state (moments, step counts) continues; its settings are the merged
        # config's, so that a resumed run given a new ``lr`` uses it (loading the optimiser's
        # state dict would bring back the checkpoint's).
        for group, given in zip(learner.optimizer.param_groups, settings, strict=True):
            group.update(given)
        set_rng_state(ckpt["rng"], rng)
        update, decisions = int(ckpt["update"]), int(ckpt["decisions"])
        episodes, wall_before = int(ckpt["episodes"]), float(ckpt["wall_s"])
    rollout = TrainingRollout(scenarios(cfg, table), table, rng)
    traj = AgentTrajectories(learner.segment_length)

    (out / "config.json").write_text(json.dumps(cfg, indent=2, default=str) + "\n")
    hist_path = out / "history.jsonl"
    if resume and hist_path.is_file():  # drop the updates that will be redone
        _trim_history(hist_path, update)
    elif hist_path.is_file():
        hist_path.unlink()
    writer = SummaryWriter(str(out / "tb"), purge_step=update + 1 if resume else None)

    target = int(train_cfg["updates"])
    every = int(train_cfg.get("checkpoint_every", 0) or 0)
    max_wall = float(train_cfg.get("max_wall_s", 0) or 0)
    t0 = time.perf_counter()

    def wall() -> float:
        return wall_before + time.perf_counter() - t0

    def save(tag: bool) -> None:
        state = {
            "algorithm": name,
            "update": update,
            "decisions": decisions,
            "episodes": episodes,
            "wall_s": wall(),
            "model": learner.model.state_dict(),
            "optimizer": learner.optimizer.state_dict(),
            "extra": learner.extra_state(),
            "rng": rng_state(rng),
            "config": cfg,
            "obs_dim": table.obs_dim,
        }
        with _signals_deferred():
            save_atomic(ckpt_path, state)
            if tag:
                save_atomic(out / "checkpoints" / f"ckpt-u{update:05d}-d{decisions}.pt", state)

    stats: dict[str, float] = {}
    stopped: str | None = None
    interrupted = False
    try:
        with _sigterm_interrupts(), _progress(name, progress, target) as bar:
            task = bar.add_task("update", total=target, completed=update, info="")
            while update < target:
                # ---- collect until the learner's rollout is complete
                t_rollout = time.perf_counter()
                n_decisions = 0
                while not learner.ready(traj, update + 1, n_decisions):
                    n, finished = rollout.step(learner.act, traj)
                    n_decisions += n
                    for episode in finished:
                        episodes += 1
                        _log_episode(writer, episode, update + 1)
                # ---- one update
                t_update = time.perf_counter()
                # Applied whole or not at all: Ctrl-C waits for the end of the update, so that
                # a checkpoint never holds half an optimiser step nor misses a history line.
                with _signals_deferred():
                    stats = learner.learn(traj, update + 1, rng)
                    update += 1
                    decisions += n_decisions
                    now = time.perf_counter()
                    stats.update(
                        decisions=float(n_decisions),
                        decisions_total=float(decisions),
                        rollout_s=t_update - t_rollout,
                        update_s=now - t_update,
                        decisions_per_s=n_decisions / max(t_update - t_rollout, 1e-9),
                        wall_s=wall(),
                    )
                    for k, v in stats.items():
                        writer.add_scalar(f"train/{k}", v, update)
                    with open(hist_path, "a", encoding="utf-8") as f:
                        f.write(json.dumps({"update": update, **stats}) + "\n")
                info = "  ".join(f"{k} {stats[k]:.3g}" for k in learner.progress_keys if k in stats)
                bar.update(task, completed=update, info=f"decisions {decisions:,}  {info}")
                if max_wall > 0 and wall() >= max_wall:
                    if update < target:
                        stopped = "max_wall_s"
                    break
                if every > 0 and update % every == 0 and update < target:
                    save(tag=True)
    except KeyboardInterrupt:  # saved below: the run continues with --resume
        interrupted = True
    save(tag=True)
    writer.close()
    if interrupted:
        raise TrainingInterrupted(name, ckpt_path, update)

    result: dict[str, Any] = {
        "algorithm": name,
        "updates": update,
        "decisions": decisions,
        "episodes": episodes,
        # A run that train.max_wall_s stopped before train.updates does not look complete.
        "complete": stopped is None,
        **({"stopped": stopped} if stopped is not None else {}),
        "wall_s": wall(),
        "checkpoint": str(ckpt_path),
        "stats": stats,
    }
    if train_cfg.get("export_policy", True):
        meta = {"algorithm": name, "update": update, "decisions": decisions}
        try:
            policy = learner.native_policy(cfg, meta)
        except ValueError:  # the native format cannot express this policy
            policy = None
        if policy is not None:
            result["policy"] = str(policies.save_policy(policy, out / "policy.json"))
    return result
