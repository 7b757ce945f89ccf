"""IMPALA with V-trace and an LSTM policy on RLlib: MVFST-RL's learner (spec ``learning_cc.md``
sections 5.5 and 5.6; docs/mvfst.md).

``ccgym train impala --config mvfst-default --out DIR [--ray ADDRESS]``. RLlib's IMPALA (the new
API stack of Ray 2.x: ``RLModule``, ``Learner``, ``EnvRunner``) does the distribution: its
EnvRunners are Ray actors, each stepping ccgym simulations through the RLlib adapter
(:class:`~ccgym.env.rllib_env.CcRllibEnv`) and sending trajectories of ``unroll`` steps, with the
LSTM state at their start, to the learner. On one machine Ray starts locally; with ``--ray
ADDRESS`` the same config runs on a cluster. What this file adds to RLlib, top to bottom:

1. the configuration (defaults below, overridden by ``ccgym/configs/mvfst-default.toml``);
2. :class:`MvfstTrainingEnv`: the adapter over the config's scenarios, one after the other,
   with the clipped reward delivered with each observation appended to it (the model's
   "last reward" input; RLlib's ``PrevActionsPrevRewards`` connector would do the same in
   the EnvRunner but not in a native policy, which reads the observation only);
3. :class:`MvfstRLModule`: :class:`~ccgym.agents.impala_model.MvfstNet` as a stateful RLModule
   (RLlib stores its state with each step and hands the learner the state at the start of
   each sequence);
4. :class:`MvfstImpalaLearner`: RLlib's IMPALA learner with the paper's loss (summed over T x B
   instead of RLlib's means) and RMSProp (lr 1e-5, smoothing 0.99, eps 0.01, no momentum);
5. :func:`train_from_config`, :func:`export_checkpoint`: the ``ccgym train`` / ``ccgym export``
   plug-ins (checkpoints, ``history.jsonl``, ``torch.export`` and native export).
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ccgym._progress import plain_reporter
from ccgym.agents.impala_model import (
    MvfstNet,
    StepPolicy,
    impala_losses,
    net_from_config,
    with_last_reward,
)
from ccgym.train.config import ConfigSource, load_config

ALGORITHM = "impala"
MODULE_ID = "mvfst"
"""The one RLModule every agent flow maps to."""

# --------------------------------------------------------------------------------------------
# 1. Configuration
# --------------------------------------------------------------------------------------------

DEFAULT_CONFIG: dict[str, Any] = {
    "train": {
        "algorithm": "impala",
        "seed": 1,
        "env_steps": 1_000_000,  # spec 5.6: 10^6 environment steps
        "env_runners": 2,  # Ray actors stepping simulations (the paper: 40 actors)
        "envs_per_runner": 8,  # simulations per actor, acted on in one batch
        "episode": "",  # simulated duration of one training episode ("" = the scenario's)
        "torch_threads": 1,
        "checkpoint_every": 50,  # training iterations between kept checkpoints
        "max_wall_s": 0,  # stop (and save) after this much wall time; 0 = no limit
        "stall_s": 600,  # raise when the learner trains nothing for this long; 0 = wait
        "min_time_s_per_iteration": 2,  # RLlib iterations (history.jsonl lines) last this long
        "export_policy": True,
    },
    # Training scenarios: bundled names or files with overrides, cycled through by every env
    # runner (runner i starts at entry i).
    "scenario": [{"label": "dumbbell-wan", "name": "dumbbell-wan", "overrides": []}],
    "agent": {},
    "impala": {
        "lr": 1e-5,
        "rmsprop_alpha": 0.99,  # smoothing
        "rmsprop_eps": 0.01,
        "momentum": 0.0,
        "grad_clip": 40.0,
        "gamma": 0.99,
        "entropy_cost": 0.01,
        "baseline_cost": 0.5,
        "unroll": 80,  # T: steps per trajectory
        "batch": 1,  # B: trajectories per update
        "rho_bar": 1.0,
        "c_bar": 1.0,  # RLlib's V-trace fixes c_bar at 1 (the paper's value)
        "reduce": "sum",  # "sum" (the paper, torchbeast) or "mean" (RLlib's default)
    },
    "network": {"hidden": [512, 512], "lstm": True},
}
"""Defaults of ``ccgym train impala``; a config file's tables are merged into a copy."""


# --------------------------------------------------------------------------------------------
# 2. The environment
# --------------------------------------------------------------------------------------------


def _rllib_env_base() -> type:
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

    return MultiAgentEnv


def _training_scenarios(cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The config's ``[[scenario]]`` entries as RLlib adapter configs."""
    entries = cfg.get("scenario") or []
    if not entries:
        raise ValueError("impala: the config names no [[scenario]]")
    episode = str(cfg["train"].get("episode") or "")
    out = []
    for i, e in enumerate(entries):
        if "name" not in e:
            raise ValueError(f"impala: scenario[{i}] has no name")
        overrides = list(e.get("overrides", []))
        if episode:
            overrides.append(f"duration={episode}")
        out.append(
            {
                "label": str(e.get("label", e["name"])),
                "scenario": e["name"],
                "overrides": overrides,
                "agent": dict(cfg.get("agent") or {}),
            }
        )
    return out


class MvfstTrainingEnv(_rllib_env_base()):  # type: ignore[misc]
    """The config's scenarios as one RLlib multi-agent environment, one episode (one
    simulation run) at a time: episode k of env runner i uses scenario (i + k) mod n.

    Each observation is the adapter's followed by one column, the reward delivered with it
    clipped to [-1, 1] (0 at an agent's first decision), as :class:`MvfstNet` expects. The
    rewards returned are the adapter's, unclipped (spec 5.6: no reward clipping).

    RLlib's env config: ``scenarios`` (a list of ``{label, scenario, overrides, agent}``),
    ``seed``, ``envs_per_runner``.
    """

    _made = 0
    """Instances made in this process (the index of an env within its runner)."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        from ccgym.env.rllib_env import CcRllibEnv
        from ccgym.env.spaces import observation_space

        super().__init__()
        cfg = dict(config or {})
        self._entries = list(cfg["scenarios"])
        # RLlib gives every env of one runner the same context: count them in the process.
        worker = int(getattr(config, "worker_index", 0) or 0)
        per_runner = int(cfg.get("envs_per_runner", 1))
        self._offset = max(worker - 1, 0) * per_runner + MvfstTrainingEnv._made % per_runner
        MvfstTrainingEnv._made += 1
        self._episode = 0
        seed = int(cfg.get("seed", 1))
        # Distinct seeds per runner: runner i draws seeds seed + 1000 i, seed + 1000 i + 1, ...
        self._next_seed = seed + 1000 * self._offset
        self._envs: dict[int, Any] = {}
        self._make = lambda e: CcRllibEnv(
            {"scenario": e["scenario"], "overrides": e["overrides"], "agent": e["agent"]}
        )
        first = self._env(0)
        self.possible_agents = list(first.possible_agents)
        self.agents: list[str] = []
        obs_space = observation_space(first.pool.obs_dim + 1)
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space)
        self.action_spaces = dict(first.action_spaces)
        self._current = first
        self._last: dict[str, float] = {}
        self.label = self._entries[0]["label"]

    def _env(self, i: int) -> Any:
        if i not in self._envs:
            env = self._make(self._entries[i])
            if self._envs and env.pool.obs_dim != next(iter(self._envs.values())).pool.obs_dim:
                raise ValueError(
                    f"impala: scenario {self._entries[i]['label']} gives another observation "
                    "width than the first; every training scenario needs the same [agent] table"
                )
            self._envs[i] = env
        return self._envs[i]

    def _with_reward(self, obs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {a: with_last_reward(o, self._last.get(a, 0.0)) for a, o in obs.items()}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The next scenario's run, to its first decisions."""
        i = (self._offset + self._episode) % len(self._entries)
        self._episode += 1
        self._current = self._env(i)
        self.label = self._entries[i]["label"]
        episode_seed = self._next_seed if seed is None else int(seed)
        self._next_seed = episode_seed + 1
        obs, infos = self._current.reset(seed=episode_seed)
        self.agents = list(self._current.agents)
        self._last = {}
        return self._with_reward(obs), infos

    def step(self, action_dict: Mapping[str, Any]) -> tuple[Any, Any, Any, Any, Any]:
        """Applies the actions and runs to the next decisions (see ``CcRllibEnv.step``)."""
        obs, rewards, terms, truncs, infos = self._current.step(action_dict)
        self._last.update(rewards)
        self.agents = list(self._current.agents)
        return self._with_reward(obs), rewards, terms, truncs, infos


# --------------------------------------------------------------------------------------------
# 3. The RLModule
# --------------------------------------------------------------------------------------------


def _rl_module_bases() -> tuple[type, ...]:
    from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
    from ray.rllib.core.rl_module.torch import TorchRLModule

    return TorchRLModule, ValueFunctionAPI


class MvfstRLModule(*_rl_module_bases()):  # type: ignore[misc]
    """:class:`MvfstNet` as an RLlib module. ``model_config``: ``hidden``, ``lstm`` (and RLlib's
    ``max_seq_len``, the learner's sequence length: the unroll plus one, so that one trajectory
    with the step RLlib adds for its bootstrap value is one sequence)."""

    def setup(self) -> None:
        """Builds the network for the (observation + last reward) width and Discrete(n)."""
        self.net: MvfstNet = net_from_config(
            int(self.observation_space.shape[0]), int(self.action_space.n), self.model_config
        )

    def get_initial_state(self) -> dict[str, np.ndarray]:
        """Zero LSTM state (none without LSTM: RLlib then treats the module as stateless)."""
        if not self.net.stateful:
            return {}
        zeros = np.zeros(self.net.core_dim, np.float32)
        return {"h": zeros, "c": zeros.copy()}

    def _core(self, batch: Mapping[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        from ray.rllib.core.columns import Columns

        x = batch[Columns.OBS]
        if not self.net.stateful:  # B x D (no time axis for stateless modules)
            h, c = self.net.initial_state(x.shape[0])
            core, _, _ = self.net.core(x.unsqueeze(1), h, c)
            return core.squeeze(1), {}
        state = batch[Columns.STATE_IN]
        core, h, c = self.net.core(x, state["h"], state["c"])
        return core, {"h": h, "c": c}

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        from ray.rllib.core.columns import Columns

        core, state = self._core(batch)
        out: dict[str, Any] = {Columns.ACTION_DIST_INPUTS: self.net.policy(core)}
        if state:
            out[Columns.STATE_OUT] = state
        return out

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        from ray.rllib.core.columns import Columns

        core, state = self._core(batch)
        out: dict[str, Any] = {
            Columns.ACTION_DIST_INPUTS: self.net.policy(core),
            Columns.EMBEDDINGS: core,
        }
        if state:
            out[Columns.STATE_OUT] = state
        return out

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        """V(x) from the core features (computed again if not given)."""
        if embeddings is None:
            embeddings, _ = self._core(batch)
        return self.net.baseline(embeddings).squeeze(-1)


# --------------------------------------------------------------------------------------------
# 4. The learner: the paper's loss and optimiser on RLlib's IMPALA learner
# --------------------------------------------------------------------------------------------


def _learner_base() -> type:
    from ray.rllib.algorithms.impala.torch.impala_torch_learner import IMPALATorchLearner

    return IMPALATorchLearner


def time_major_logits(logits: torch.Tensor, unroll: int, recurrent: bool) -> torch.Tensor:
    """Logits as T x B x A, the layout of RLlib's other time-major tensors: a recurrent
    module's are B x T x A already; a stateless one's are (B T) x A, cut into rows of
    ``unroll`` steps, the last one padded with zeros (RLlib's ``make_time_major`` pads 1-D
    tensors only; the padding is masked out of the loss)."""
    if recurrent:
        return logits.transpose(0, 1)
    n = logits.shape[-1]
    flat = logits.reshape(-1, n)
    pad = (-flat.shape[0]) % unroll
    if pad:
        flat = torch.cat([flat, flat.new_zeros(pad, n)])
    return flat.reshape(-1, unroll, n).transpose(0, 1)


class MvfstImpalaLearner(_learner_base()):  # type: ignore[misc]
    """RLlib's IMPALA learner with spec 5.6's loss (:func:`impala_losses`: summed over the
    steps, or averaged with ``reduce = "mean"``) and RMSProp."""

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        """RMSProp (spec 5.6: smoothing 0.99, eps 0.01, momentum 0) at ``config.lr``."""
        extra = config.learner_config_dict
        params = self.get_parameters(self._module[module_id])
        optimizer = torch.optim.RMSprop(
            params,
            lr=config.lr,
            alpha=float(extra["rmsprop_alpha"]),
            eps=float(extra["rmsprop_eps"]),
            momentum=float(extra["momentum"]),
        )
        self.register_optimizer(
            module_id=module_id, optimizer=optimizer, params=params, lr_or_lr_schedule=config.lr
        )

    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> torch.Tensor:
        """The IMPALA loss on one batch of trajectories (time-major as RLlib's learner)."""
        from ray.rllib.algorithms.impala.torch.vtrace_torch_v2 import make_time_major
        from ray.rllib.core.columns import Columns
        from ray.rllib.core.learner.learner import ENTROPY_KEY

        module = self.module[module_id].unwrapped()
        extra = config.learner_config_dict
        seq = batch.get("seq_lens")
        frag = config.get_rollout_fragment_length()

        def tm(x: torch.Tensor) -> torch.Tensor:
            return make_time_major(x, trajectory_len=frag, recurrent_seq_len=seq)

        mask = tm(batch[Columns.LOSS_MASK].float())
        logits = fwd_out[Columns.ACTION_DIST_INPUTS]
        values = tm(module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS)))
        # The value of the first step of the next row bootstraps each row (RLlib's +1 step:
        # a trajectory's last row ends with the extra step whose only use is its value).
        bootstrap = torch.cat([values[0][1:], values[0][0:1]], dim=0)
        terminated = tm(batch[Columns.TERMINATEDS].float())
        discounts = (1.0 - terminated) * config.gamma * mask
        logits_tm = time_major_logits(logits, frag, recurrent=seq is not None)
        parts = impala_losses(
            logits_tm,
            tm(batch[Columns.ACTIONS]),
            tm(batch[Columns.ACTION_LOGP]),
            values,
            bootstrap,
            tm(batch[Columns.REWARDS].float()),
            discounts,
            mask,
            baseline_cost=float(extra["baseline_cost"]),
            entropy_cost=float(extra["entropy_cost"]),
            rho_bar=config.vtrace_clip_rho_threshold,
            pg_rho_bar=config.vtrace_clip_pg_rho_threshold,
        )
        loss = parts["loss"]
        if extra.get("reduce", "sum") == "mean":
            loss = loss / mask.sum().clamp(min=1.0)
        self.metrics.log_dict(
            {
                "pi_loss": parts["pg_loss"],
                "vf_loss": parts["baseline_loss"],
                ENTROPY_KEY: parts["entropy"],
                "total_loss": loss,
            },
            key=module_id,
            window=1,
        )
        return loss


# --------------------------------------------------------------------------------------------
# 5. The algorithm, training, checkpoints and export
# --------------------------------------------------------------------------------------------


def algorithm_config(cfg: Mapping[str, Any], env_runners: int | None = None) -> Any:
    """RLlib's ``IMPALAConfig`` for a merged ccgym config."""
    from ray.rllib.algorithms.impala import IMPALAConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    train, algo, net = cfg["train"], cfg["impala"], cfg["network"]
    unroll = int(algo["unroll"])
    if float(algo.get("c_bar", 1.0)) != 1.0:
        raise ValueError("impala.c_bar: RLlib's V-trace fixes c_bar at 1.0")
    if algo.get("reduce", "sum") not in ("sum", "mean"):
        raise ValueError(f"impala.reduce: 'sum' or 'mean', not {algo.get('reduce')!r}")
    runners = int(train["env_runners"]) if env_runners is None else env_runners
    per_runner = int(train["envs_per_runner"])
    model_config = {
        "hidden": [int(h) for h in net["hidden"]],
        "lstm": bool(net["lstm"]),
        "max_seq_len": unroll + 1,
    }
    config = (
        IMPALAConfig()
        .environment(
            MvfstTrainingEnv,
            env_config={
                "scenarios": _training_scenarios(cfg),
                "seed": int(train["seed"]),
                "envs_per_runner": per_runner,
            },
            disable_env_checking=True,
        )
        .framework("torch")
        .env_runners(
            num_env_runners=runners,
            num_envs_per_env_runner=per_runner,
            rollout_fragment_length=unroll,
            num_cpus_per_env_runner=1,
        )
        .learners(num_learners=0)
        .multi_agent(policies={MODULE_ID}, policy_mapping_fn=lambda agent_id, *a, **k: MODULE_ID)
        .rl_module(
            rl_module_spec=RLModuleSpec(module_class=MvfstRLModule, model_config=model_config)
        )
        .training(
            learner_class=MvfstImpalaLearner,
            lr=float(algo["lr"]),
            gamma=float(algo["gamma"]),
            grad_clip=float(algo["grad_clip"]),
            grad_clip_by="global_norm",
            vf_loss_coeff=float(algo["baseline_cost"]),
            entropy_coeff=float(algo["entropy_cost"]),
            vtrace_clip_rho_threshold=float(algo["rho_bar"]),
            vtrace_clip_pg_rho_threshold=float(algo["rho_bar"]),
            train_batch_size_per_learner=unroll * int(algo["batch"]),
            learner_config_dict={
                k: algo[k]
                for k in (
                    "rmsprop_alpha",
                    "rmsprop_eps",
                    "momentum",
                    "baseline_cost",
                    "entropy_cost",
                    "reduce",
                )
            },  # fmt: skip
        )
        .reporting(min_time_s_per_iteration=float(train.get("min_time_s_per_iteration", 0)))
        .debugging(seed=int(train["seed"]), log_level="ERROR")
    )
    return config


def _connect_ray(address: str | None, runners: int) -> None:
    """Joins the Ray cluster at ``address``, or starts Ray on this machine."""
    import ray

    if ray.is_initialized():
        return
    if address:
        # The driver's ccgym (Python and its native module) goes to every node with the job,
        # so that the cluster's workers run the same code whatever is installed there (they
        # need Python, Ray, PyTorch and NumPy of the same versions, on the same platform).
        import ccgym

        package = str(Path(ccgym.__file__).resolve().parent)
        ray.init(
            address=address,
            log_to_driver=False,
            runtime_env={"py_modules": [package], "excludes": ["__pycache__"]},
        )
        return
    # Ray lowers its workers' priority (nice 15) below the driver's; here the env runners are
    # the training's main work, so on a shared machine any other job would starve them.
    # They keep the trainer's priority unless the user set RAY_worker_niceness.
    os.environ.setdefault("RAY_worker_niceness", "0")
    # Each env runner asks Ray for one CPU; allow as many runners as asked for even on a
    # machine with fewer cores (they then share them).
    ray.init(
        num_cpus=max(runners, os.cpu_count() or 1),
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )


def _module_state(algo: Any) -> dict[str, torch.Tensor]:
    """The learner's network parameters (``MvfstNet`` keys, without the module's ``net.``)."""
    weights = algo.learner_group.get_weights([MODULE_ID])[MODULE_ID]
    return {k.removeprefix("net."): torch.as_tensor(np.asarray(v)) for k, v in weights.items()}


def _spaces(cfg: Mapping[str, Any]) -> tuple[int, int]:
    """(policy input width = observation + 1, number of actions) of the first scenario."""
    env = MvfstTrainingEnv({"scenarios": _training_scenarios(cfg)[:1]})
    agent = env.possible_agents[0]
    space = env.action_spaces[agent]
    if not hasattr(space, "n"):
        raise ValueError(
            f"impala: the [agent] table gives a {type(space).__name__} action; IMPALA's policy "
            'here is categorical (use the MVFST-RL actions, agent.preset = "mvfst", or '
            'action = "discrete")'
        )
    return int(env.observation_spaces[agent].shape[0]), int(space.n)


def _resume_checkpoint(out: Path) -> dict[str, Any]:
    """The ``checkpoint.pt`` of run folder ``out``, written with its ``rllib/`` state."""
    from ccgym.train.loop import read_checkpoint

    path = out / "checkpoint.pt"
    if not path.is_file():
        raise FileNotFoundError(f"resume: no run in {out} (no checkpoint.pt)")
    ckpt = read_checkpoint(path)
    if ckpt["algorithm"] != ALGORITHM:
        raise ValueError(f"resume: {path} is a {ckpt['algorithm']} checkpoint, not {ALGORITHM}")
    return ckpt


def _check_same_network(
    ckpt: Mapping[str, Any], cfg: Mapping[str, Any], dims: tuple[int, int], out: Path
) -> None:
    """Raises a :class:`~ccgym.ScenarioError` naming the keys of ``cfg`` (the checkpoint's
    config with the given one merged over it) that change the checkpoint's network: the
    ``[network]`` sizes, or an ``[agent]`` key that changes the observation's width (features,
    history, ``action_history``) or the actions, as ``ccgym train ppo --resume`` does."""
    from types import SimpleNamespace

    from ccgym.train import loop

    def make_learner(obs_dim: int, config: Mapping[str, Any]) -> Any:
        width, actions = dims if config is cfg else _spaces(config)
        return SimpleNamespace(model=net_from_config(width, actions, config["network"]))

    loop._check_same_network(ckpt, cfg, make_learner(0, cfg), make_learner, out)


def _result_stats(result: Mapping[str, Any]) -> dict[str, float]:
    """What ``history.jsonl`` keeps of one RLlib training iteration."""
    runners = result.get("env_runners") or {}
    learners = result.get("learners") or {}
    learner = learners.get(MODULE_ID) or {}
    out: dict[str, float] = {}
    for key, value in (
        ("env_steps", result.get("num_env_steps_sampled_lifetime")),
        # Steps the learner took in: IMPALA drops what arrives while its queue is full.
        (
            "env_steps_trained",
            (learners.get("__all_modules__") or {}).get("num_env_steps_trained_lifetime"),
        ),
        ("episode_return_mean", runners.get("episode_return_mean")),
        ("episode_len_mean", runners.get("episode_len_mean")),
        ("episodes", runners.get("num_episodes_lifetime")),
        ("pg_loss", learner.get("pi_loss")),
        ("baseline_loss", learner.get("vf_loss")),
        ("entropy", learner.get("entropy")),
        ("loss", learner.get("total_loss")),
        ("grad_norm", learner.get("gradients_default_optimizer_global_norm")),
    ):
        try:
            v = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if np.isfinite(v):
            out[key] = v
    if out.get("episode_len_mean"):
        out["reward_per_step"] = out.get("episode_return_mean", 0.0) / out["episode_len_mean"]
    return out


END_KEYS = ("complete", "stopped")
"""What the result and the final ``progress.json`` say of the run's end: ``complete`` (it
reached ``train.env_steps``) and, when not, ``stopped`` (``"max_wall_s"``)."""


def _save_checkpoint(
    out: Path, cfg: Mapping[str, Any], algo: Any, counters: Mapping[str, Any], dims: tuple
) -> Path:
    """``checkpoint.pt`` (the network and the config, what ``ccgym export`` reads) and the
    full RLlib state under ``rllib/`` (what ``--resume`` restores)."""
    from ccgym.train.loop import save_atomic

    algo.save_to_path(str((out / "rllib").resolve()))
    state = {
        "algorithm": ALGORITHM,
        "update": int(counters["iterations"]),
        "decisions": int(counters["env_steps"]),
        "episodes": int(counters.get("episodes", 0)),
        "wall_s": float(counters["wall_s"]),
        "model": _module_state(algo),
        "optimizer": {},  # RLlib's optimiser state is in rllib/
        "extra": {"input_dim": dims[0], "num_actions": dims[1]},
        "rng": {},
        "config": dict(cfg),
        "obs_dim": dims[0] - 1,
    }
    path = out / "checkpoint.pt"
    save_atomic(path, state)
    return path


def train_from_config(
    config: ConfigSource | None,
    out_dir: str | os.PathLike[str],
    resume: bool = False,
    progress: bool | None = None,
    ray_address: str | None = None,
) -> dict[str, Any]:
    """Trains MVFST-RL's policy with RLlib's IMPALA (``ccgym train impala --config FILE``).

    Args:
        config: a config dict, TOML path or bundled config name (``mvfst-default``) merged over
            :data:`DEFAULT_CONFIG` (on resume, over the run's ``config.json``).
        out_dir: the run folder: ``config.json``, ``history.jsonl`` (one line per RLlib
            iteration: environment steps, mean episode return and reward per step, losses),
            ``checkpoint.pt`` (the network, for ``ccgym export``), ``rllib/`` (the algorithm's
            full state), ``policy.pt2`` (``torch.export``) and ``policy.json`` (native) at the
            end.
        resume: continue from ``out_dir/rllib`` (network, optimiser, counters). Ctrl-C saves
            both checkpoints and raises :class:`~ccgym.train.loop.TrainingInterrupted`.
        progress: print one line per iteration to stderr (default: when stderr is a terminal).
        ray_address: a Ray cluster to run on (``ray start --head`` prints it); None starts Ray
            on this machine. Nothing else changes.

    Returns:
        ``algorithm``, ``iterations``, ``env_steps``, ``complete`` (false when
        ``train.max_wall_s`` ended the run before ``train.env_steps``; ``stopped`` then says
        ``"max_wall_s"``), ``wall_s``, ``steps_per_s``, the last iteration's ``stats`` and the
        paths written.
    """
    import sys

    out = Path(out_dir)
    ckpt: dict[str, Any] | None = None
    if resume:
        ckpt = _resume_checkpoint(out)
        # The checkpoint's config is the one the RLlib state was saved with (config.json is
        # rewritten only once a resume has restored it).
        cfg = load_config(config, ckpt["config"])
        from ccgym.train.loop import warn_config_changes

        # As the other trainers do: one warning line listing each setting given that differs.
        warn_config_changes(ckpt["config"], cfg, out)
    else:
        cfg = load_config(config, DEFAULT_CONFIG)
    train = cfg["train"]
    torch.set_num_threads(int(train.get("torch_threads", 1)))
    dims = _spaces(cfg)
    if ckpt is not None:  # before anything is written: a refused resume leaves the run as it was
        _check_same_network(ckpt, cfg, dims, out)
    out.mkdir(parents=True, exist_ok=True)
    if not resume:
        (out / "config.json").write_text(json.dumps(cfg, indent=2, default=str) + "\n")
    runners = int(train["env_runners"])
    _connect_ray(ray_address, runners)
    with warnings.catch_warnings():
        # RLlib registers its multi-agent wrapper with Gymnasium at every build, so a second
        # training in one process (a resume, a notebook) makes Gymnasium warn about its own id.
        warnings.filterwarnings("ignore", message=r".*rllib-multi-agent-env-v0 already in registry")
        algo = algorithm_config(cfg).build_algo()
    counters: dict[str, Any] = {"iterations": 0, "env_steps": 0, "wall_s": 0.0, "episodes": 0}
    hist_path = out / "history.jsonl"
    if resume:
        try:
            algo.restore_from_path(str((out / "rllib").resolve()))
            counters.update(json.loads((out / "progress.json").read_text()))
            for key in END_KEYS:  # how the last session ended, not this one
                counters.pop(key, None)
        except BaseException:
            algo.stop()
            raise
        (out / "config.json").write_text(json.dumps(cfg, indent=2, default=str) + "\n")
    elif hist_path.is_file():
        hist_path.unlink()
    show = sys.stderr.isatty() if progress is None else progress
    # A log file under ``ccgym train``: a plain line at most every 10 s instead of one per
    # iteration on a terminal.
    plain = plain_reporter(ALGORITHM) if progress is None and not show else None
    plain_task = (
        plain.add_task("env steps", total=int(train["env_steps"]), completed=counters["env_steps"])
        if plain
        else 0
    )
    target = int(train["env_steps"])
    every = int(train.get("checkpoint_every", 0) or 0)
    max_wall = float(train.get("max_wall_s", 0) or 0)
    t0, wall0, steps0 = time.perf_counter(), float(counters["wall_s"]), int(counters["env_steps"])
    stats: dict[str, float] = {}
    stopped: str | None = None
    stall_s = float(train.get("stall_s", 600) or 0)
    trained, trained_at = -1.0, time.perf_counter()
    try:
        while counters["env_steps"] < target:
            result = algo.train()
            stats = _result_stats(result)
            # RLlib's learner runs in a thread of its own here; when it dies (its traceback
            # is in the log) sampling goes on and nothing learns: stop instead of hanging.
            now = time.perf_counter()
            if stats.get("env_steps_trained", -1.0) > trained:
                trained, trained_at = stats["env_steps_trained"], now
            elif stall_s > 0 and now - trained_at > stall_s:
                raise RuntimeError(
                    f"impala: the learner took no steps for {now - trained_at:.0f} s "
                    "(train.stall_s); its error, if any, is in the log above"
                )
            counters["iterations"] += 1
            counters["env_steps"] = int(stats.get("env_steps", counters["env_steps"]))
            counters["episodes"] = int(stats.get("episodes", counters["episodes"]))
            counters["wall_s"] = wall0 + time.perf_counter() - t0
            stats["wall_s"] = counters["wall_s"]
            with open(hist_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"iteration": counters["iterations"], **stats}) + "\n")
            if plain is not None:
                plain.update(
                    plain_task,
                    completed=counters["env_steps"],
                    info=f"iteration {counters['iterations']}  reward/step "
                    f"{stats.get('reward_per_step', float('nan')):.3f}",
                )
            if show:
                print(
                    f"impala: iteration {counters['iterations']}  steps {counters['env_steps']:,}"
                    f"  reward/step {stats.get('reward_per_step', float('nan')):.3f}"
                    f"  entropy {stats.get('entropy', float('nan')):.3f}",
                    file=sys.stderr,
                )
            if every and counters["iterations"] % every == 0:
                _save_checkpoint(out, cfg, algo, counters, dims)
                (out / "progress.json").write_text(json.dumps(counters) + "\n")
            if max_wall > 0 and counters["wall_s"] >= max_wall:
                if counters["env_steps"] < target:
                    stopped = "max_wall_s"
                break
    except KeyboardInterrupt:  # Ctrl-C: keep what was learnt, say how to go on
        from ccgym.train.loop import TrainingInterrupted

        ckpt = _save_checkpoint(out, cfg, algo, counters, dims)
        (out / "progress.json").write_text(json.dumps(counters) + "\n")
        algo.stop()
        raise TrainingInterrupted(ALGORITHM, ckpt, int(counters["iterations"])) from None
    except BaseException:
        algo.stop()
        raise
    # Whether the run reached train.env_steps, or why not ("max_wall_s"): in the result and
    # in progress.json, so that a run stopped early does not look complete.
    end: dict[str, Any] = {"complete": stopped is None}
    if stopped is not None:
        end["stopped"] = stopped
    try:
        ckpt = _save_checkpoint(out, cfg, algo, counters, dims)
        (out / "progress.json").write_text(json.dumps({**counters, **end}) + "\n")
    finally:
        algo.stop()
    elapsed = counters["wall_s"] - wall0
    result_out: dict[str, Any] = {
        "algorithm": ALGORITHM,
        "iterations": counters["iterations"],
        "env_steps": counters["env_steps"],
        **end,
        "wall_s": counters["wall_s"],
        "steps_per_s": (counters["env_steps"] - steps0) / elapsed if elapsed > 0 else 0.0,
        "checkpoint": str(ckpt),
        "stats": stats,
    }
    if train.get("export_policy", True):
        result_out["exported_program"] = str(export_program(ckpt, out / "policy.pt2"))
        from ccgym import policies

        try:
            native = policies.save_policy(export_checkpoint(ckpt), out / "policy.json")
            result_out["policy"] = str(native)
        except ValueError as e:  # a ccgym without the native LSTM layer (format version 2)
            result_out["policy_not_exported"] = str(e)
    return result_out


# --------------------------------------------------------------------------------------------
# Export: torch.export and the native format


def load_net(path: str | os.PathLike[str]) -> tuple[MvfstNet, dict[str, Any]]:
    """The trained network of a checkpoint written by :func:`train_from_config`, and its
    config."""
    from ccgym.train.loop import read_checkpoint

    ckpt = read_checkpoint(path)
    if ckpt["algorithm"] != ALGORITHM:
        raise ValueError(f"{path} is a {ckpt['algorithm']} checkpoint, not {ALGORITHM}")
    extra = ckpt["extra"]
    net = net_from_config(
        int(extra["input_dim"]), int(extra["num_actions"]), ckpt["config"]["network"]
    )
    net.load_state_dict(ckpt["model"])
    net.eval()
    return net, ckpt


def export_program(checkpoint: str | os.PathLike[str], path: str | os.PathLike[str]) -> Path:
    """Writes the policy of a checkpoint as a ``torch.export`` program (:class:`StepPolicy`),
    batch size free: ``m = torch.export.load(path).module()``, then
    ``m(x, h, c) -> logits, value, h, c`` with ``x`` = observation + the clipped last reward;
    ``h``, ``c`` start at zeros of B x ``int(m.state_size)``. (TorchScript, which this
    replaced, is deprecated in PyTorch.)"""
    net, _ = load_net(checkpoint)
    policy = StepPolicy(net)
    example = (
        torch.zeros(2, policy.input_dim),
        torch.zeros(2, policy.state_dim),
        torch.zeros(2, policy.state_dim),
    )
    # Exported with a symbolic batch: the one shape test in `MvfstNet.core` (one step or a
    # sequence) reads the time axis, which is always 1 here, so the program takes one step.
    batch = torch.export.Dim("batch")
    with torch.no_grad():
        program = torch.export.export(
            policy, example, dynamic_shapes=({0: batch}, {0: batch}, {0: batch})
        )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.export.save(program, path)
    return path


def native_policy(net: MvfstNet, meta: Mapping[str, Any]) -> dict[str, Any]:
    """The network as a ``ccgym-mlp`` version-2 dict (docs/mvfst.md; the contract of the
    native LSTM layer): dense layers, the clipped last reward appended, the LSTM, then the
    policy and value heads stacked (``action_outputs`` = the number of actions)."""

    def rows(t: torch.Tensor) -> list:
        return t.detach().double().tolist()

    layers: list[dict[str, Any]] = []
    for layer in net.fc:
        if isinstance(layer, torch.nn.Linear):
            layers.append(
                {"weight": rows(layer.weight), "bias": rows(layer.bias), "activation": "relu"}
            )
    layers.append({"kind": "concat", "source": "reward", "size": 1, "clip": [-1.0, 1.0]})
    if net.lstm is not None:
        layers.append(
            {
                "kind": "lstm",
                "weight_ih": rows(net.lstm.weight_ih_l0),
                "weight_hh": rows(net.lstm.weight_hh_l0),
                "bias_ih": rows(net.lstm.bias_ih_l0),
                "bias_hh": rows(net.lstm.bias_hh_l0),
            }
        )
    heads_w = torch.cat([net.policy.weight, net.baseline.weight], dim=0)
    heads_b = torch.cat([net.policy.bias, net.baseline.bias], dim=0)
    layers.append({"weight": rows(heads_w), "bias": rows(heads_b), "activation": "none"})
    return {
        "format": "ccgym-mlp",
        "version": 2,
        "layers": layers,
        "output": "none",
        "action_outputs": int(net.policy.out_features),
        "meta": dict(meta),
    }


def export_checkpoint(
    path: str | os.PathLike[str], calibration_obs: Any = None, percentile: float | None = None
) -> dict[str, Any]:
    """Plug-in for ``ccgym export``: the native (version-2, float32) policy of a checkpoint."""
    if calibration_obs is not None:
        raise ValueError("impala: the LSTM policy is float32 only (no int8 calibration)")
    net, ckpt = load_net(path)
    meta = {
        "algorithm": ALGORITHM,
        "update": ckpt["update"],
        "decisions": ckpt["decisions"],
        "agent": ckpt["config"].get("agent", {}),
    }
    return native_policy(net, meta)


__all__ = [
    "ALGORITHM",
    "DEFAULT_CONFIG",
    "MODULE_ID",
    "MvfstImpalaLearner",
    "MvfstRLModule",
    "MvfstTrainingEnv",
    "algorithm_config",
    "export_checkpoint",
    "export_program",
    "load_net",
    "native_policy",
    "train_from_config",
]
