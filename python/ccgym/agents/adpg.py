"""ADPG: analytic deterministic policy gradient for RL-CC (spec ``learning_cc.md`` section 1).

CleanRL style: everything ADPG needs is in this file, top to bottom:

1. the configuration (defaults below, overridden by a TOML file such as
   ``ccgym/configs/adpg-default.toml``);
2. the shared deterministic policy :class:`Policy` (bias-free MLP [12, 12], ReLU, tanh output,
   orthogonal init with gain sqrt 2; the optional LSTM of the paper era is left out: the public
   config's MLP with history 2 is what is implemented);
3. :class:`TrainingPool`: many-to-one training scenarios stepped together through
   ``ccgym._sim.Pool``, each episode long, and restarted with a new seed when it ends;
4. :class:`Rollout`: per-agent sequences keyed by ``(simulation slot, episode, flow)``, with the
   alignment of the spec (the signal of action ``a_t`` is the ADPG error ``d`` measured at the
   agent's next decision, which the bridge delivers as that decision's reward);
5. :func:`adpg_loss`: discounted *average* reward-to-go ``D_t``, reward loss
   ``c_r (1/T) sum_t a_t D_t`` and action-smoothness regulariser ``c_a``;
6. :func:`train_from_config`: the on-policy loop (warm-up of 1024 events per update for updates
   1-49, then until every live agent has >= 15 transitions, capped at 8000 events), Adam
   (lr 0.01, eps 1e-5), element-wise gradient clipping at 0.5, TensorBoard logs, checkpoints
   every N updates, ``resume``, a progress bar, and the export of the native policy.

Spec constants are the public-code values ([C]); quirks of the public code that are *not*
copied: every flow's observation carries its own last multiplier (the bridge does this), and
reward-less transitions never enter the loss.

Run it with ``ccgym train adpg --config ccgym/configs/adpg-default.toml --out runs/adpg``.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ccgym import policies

ALGORITHM = "adpg"

# --------------------------------------------------------------------------------------------
# 1. Configuration
# --------------------------------------------------------------------------------------------

DEFAULT_CONFIG: dict[str, Any] = {
    "train": {
        "seed": 1,
        "updates": 1000,  # max_num_updates [C]
        "warmup_updates": 50,  # updates 1..49 follow warmup_length events [C]
        "warmup_length": 1024,  # events per warm-up update [C]
        "rollout_length": 15,  # main stage: every live agent has >= 15 transitions [C]
        "max_step_size": 8000,  # ... capped at 8000 events per update [C]
        "max_batch_size": 8192,  # per-agent sequences truncated to T <= 8192 [C]
        "loss_batch": 0,  # agents per loss (random subset); 0 = all [C: optional]
        "gamma": 0.99,  # [C]
        "lr": 0.01,  # Adam [C]
        "anneal_lr": False,  # [X] CleanRL option: lr falls linearly to 0 at the last update
        "adam_eps": 1e-5,  # [C]
        "clip_value": 0.5,  # element-wise gradient clipping [C]
        "reward_coef": 1.0,  # c_r [C]
        "action_coef": 1.0,  # c_a [C]
        # Clip the signal delta to [-signal_clip, signal_clip] before D_t; 0 = off (spec).
        # [X] option, not in the public code: bounds the weight of overflow transients.
        "signal_clip": 0.0,
        "hidden": [12, 12],  # [C]
        "checkpoint_every": 25,
        "max_wall_s": 0,  # stop (and save) after this much wall time; 0 = no limit
        "torch_threads": 1,
    },
    "agent": dict(policies.ADPG_AGENT),  # the [agent] table of every training scenario
    # [agent] keys added to the exported policy's meta.agent only: how the policy is deployed
    # (evaluated), not how it is trained (e.g. hold_ticks, which matters at thousands of flows).
    "deploy_agent": {},
    "env": {
        "base": "adpg-m2o-2",  # scenario the training scenarios are derived from
        "episode": "30ms",  # simulated time per episode; then a new seed (restart)
        "start": ["1ms", "2ms"],  # flows start uniformly in this range [C]
        "window_start": "5ms",  # statistics window of the episode summaries (TensorBoard)
        "overrides": [],  # further overrides for every training scenario
    },
    # Training scenarios: many-to-one, `hosts` senders x `flows_per_host` flows, `count` copies
    # (each with its own seed); optional `overrides` (scenario) and `agent` (entries over the
    # [agent] table for this scenario only). The public config trains on small scales.
    "scenarios": [
        {"hosts": 2, "flows_per_host": 1, "count": 1},
        {"hosts": 4, "flows_per_host": 1, "count": 1},
        {"hosts": 8, "flows_per_host": 1, "count": 1},
        {"hosts": 32, "flows_per_host": 1, "count": 1},
        {"hosts": 4, "flows_per_host": 16, "count": 1},
        {"hosts": 8, "flows_per_host": 8, "count": 1},
    ],
}


def merge_config(base: Mapping[str, Any], override: Mapping[str, Any] | None) -> dict[str, Any]:
    """Deep-merge ``override`` into a copy of ``base`` (tables merge, other values replace)."""
    out = copy.deepcopy(dict(base))
    for k, v in (override or {}).items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = merge_config(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def load_config(config: Mapping[str, Any] | str | os.PathLike[str] | None) -> dict[str, Any]:
    """The full config: defaults merged with a dict, a TOML (or JSON) file, or a bundled config
    name (``adpg-default`` -> ``ccgym/configs/adpg-default.toml``)."""
    if config is None:
        return merge_config(DEFAULT_CONFIG, {})
    if isinstance(config, Mapping):
        return merge_config(DEFAULT_CONFIG, config)
    path = Path(config)
    if not path.is_file():
        bundled = Path(__file__).resolve().parent.parent / "configs" / f"{config}.toml"
        if "/" in str(config) or not bundled.is_file():
            raise FileNotFoundError(f"training config not found: {config}")
        path = bundled
    if path.suffix == ".json":  # e.g. the config.json of a run folder
        return merge_config(DEFAULT_CONFIG, json.loads(path.read_text(encoding="utf-8")))
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    with open(path, "rb") as f:
        data = tomllib.load(f)
    return merge_config(DEFAULT_CONFIG, data)


# --------------------------------------------------------------------------------------------
# 2. The shared deterministic policy
# --------------------------------------------------------------------------------------------


class Policy(nn.Module):
    """mu_theta(o) = tanh(W_out relu(W_2 relu(W_1 o))): bias-free MLP, scalar tanh output.

    Parameter names follow the public RL-CC checkpoint (``net.0``, ``net.2``, ``output_layer``)
    so that its weights load as they are. All weights are orthogonal with gain sqrt 2 [C].
    """

    output_activation = "tanh"
    """Read by :func:`ccgym.policies.export_module`."""

    def __init__(self, obs_dim: int, hidden: Sequence[int] = (12, 12)) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        last = obs_dim
        for h in hidden:
            layers += [nn.Linear(last, int(h), bias=False), nn.ReLU()]
            last = int(h)
        self.net = nn.Sequential(*layers)
        self.output_layer = nn.Linear(last, 1, bias=False)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.orthogonal_(m.weight, gain=math.sqrt(2))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Actions in (-1, 1), shape ``obs.shape[:-1]``."""
        return torch.tanh(self.output_layer(self.net(obs))).squeeze(-1)

    def numpy_weights(self) -> list[np.ndarray]:
        """The weight matrices (float32 copies) for the fast numpy rollout forward pass."""
        return [
            m.weight.detach().cpu().numpy().astype(np.float32).copy()
            for m in self.modules()
            if isinstance(m, nn.Linear)
        ]


def numpy_act(weights: Sequence[np.ndarray], obs: np.ndarray) -> np.ndarray:
    """The policy's actions for a batch of observations, in numpy (rollouts need no autograd)."""
    x = obs
    for w in weights[:-1]:
        x = np.maximum(x @ w.T, 0.0)
    return np.tanh(x @ weights[-1].T)[:, 0].astype(np.float32)


# --------------------------------------------------------------------------------------------
# 3. Training scenarios
# --------------------------------------------------------------------------------------------


def _ms(text: str) -> float:
    """A time string (``"30ms"``, ``"500us"``, ``"1s"``) in milliseconds."""
    t = str(text).strip()
    for unit, scale in (("ms", 1.0), ("us", 1e-3), ("ns", 1e-6), ("s", 1e3)):
        if t.endswith(unit):
            return float(t[: -len(unit)]) * scale
    return float(t) * 1e3


def training_scenario(
    config: Mapping[str, Any], spec: Mapping[str, Any], seed: int
) -> tuple[dict[str, Any], str]:
    """One training scenario: the ADPG many-to-one setting (scenarios.md section 1) with
    ``spec["hosts"]`` senders x ``spec["flows_per_host"]`` flows, one episode long."""
    from ccgym.scenario import load_scenario

    env = config["env"]
    hosts, q = int(spec["hosts"]), int(spec.get("flows_per_host", 1))
    ep = env["episode"]
    window = [env.get("window_start", "0ms"), ep]
    if _ms(window[0]) >= _ms(ep):
        window[0] = "0ms"
    start = env.get("start", ["1ms", "2ms"])
    overrides = [
        f"seed={seed}",
        f"duration={ep}",
        f"topology.hosts={hosts + 1}",
        # every output queue keeps its own 10 MiB (the base scenario's convention)
        f'switch.buffer="{(hosts + 2) * 10}MiB"',
        f"workload[0].flows_per_host={q}",
        f"workload[0].start={json.dumps(start)}",
        f'workload[0].stop="{ep}"',
        f"metrics.window={json.dumps(window)}",
        "metrics.flow_series=false",
        'metrics.sample_interval="1ms"',
        *env.get("overrides", []),
        *spec.get("overrides", []),
    ]
    data, base_dir = load_scenario(env.get("base", "adpg-m2o-2"), overrides, cc="agent")
    data["name"] = f"train-m2o-{hosts}x{q}"
    agent = {**config["agent"], **(spec.get("agent") or {})}
    data["agent"] = {k: v for k, v in agent.items() if k not in ("policy", "precision")}
    return data, str(base_dir)


class TrainingPool:
    """The training scenarios, stepped together in a ``ccgym._sim.Pool``.

    Every slot runs one scenario for ``env.episode`` of simulated time; when it is over, the slot
    restarts with a new seed (its episode counter grows, so agent keys never mix episodes).
    """

    def __init__(self, config: Mapping[str, Any], rng: np.random.Generator) -> None:
        from ccgym.runner import native, scenario_json

        self.config = config
        self.rng = rng
        self.specs = [s for s in config["scenarios"] for _ in range(int(s.get("count", 1)))]
        if not self.specs:
            raise ValueError("the config has no training scenarios")
        self.names = [f"m2o-{s['hosts']}x{s.get('flows_per_host', 1)}" for s in self.specs]
        self.episode = [0] * len(self.specs)
        built = [self._build(i) for i in range(len(self.specs))]
        self._json = scenario_json
        self.pool = native().Pool([b for b in built])
        self.obs_dim = int(self.pool.obs_dim)

    def _build(self, i: int) -> tuple[str, str]:
        from ccgym.runner import scenario_json

        seed = int(self.rng.integers(1, 2**31 - 1))
        data, base_dir = training_scenario(self.config, self.specs[i], seed)
        return scenario_json(data), base_dir

    def step(self) -> dict[str, np.ndarray]:
        """The next pooled batch (see ``ccgym._sim.Pool.step``)."""
        return self.pool.step()

    def act(self, actions: np.ndarray) -> None:
        """Answer the last batch."""
        self.pool.act(np.ascontiguousarray(actions, dtype=np.float32))

    def restart_finished(self) -> list[tuple[int, dict[str, Any]]]:
        """Restart every slot whose episode is over; returns (slot, summary) of those."""
        ended = []
        for i, over in enumerate(self.pool.over):
            if over:
                ended.append((i, json.loads(self.pool.summary(i))))
                self.episode[i] += 1
                j, d = self._build(i)
                self.pool.reset(i, j, d)
        return ended


# --------------------------------------------------------------------------------------------
# 4. Per-agent rollouts
# --------------------------------------------------------------------------------------------


@dataclass
class AgentSeq:
    """One agent's stored observations and signals: ``deltas[t]`` is the signal of ``obs[t]``'s
    action; ``obs`` may hold one more (the latest observation, its signal still to come)."""

    obs: list[np.ndarray] = field(default_factory=list)
    deltas: list[float] = field(default_factory=list)
    alive: bool = True


class Rollout:
    """Collects per-agent sequences from pooled batches (on-policy: emptied at every update).

    Agent key: ``(simulation slot, episode of that slot, flow id)``. An entry of the bridge
    carries the observation o_{t+1} of one agent and, as its reward, the ADPG error d measured
    over the interval that followed the agent's previous action a_t; that d is delta_t.
    """

    def __init__(self, rollout_length: int) -> None:
        self.rollout_length = rollout_length
        self.agents: dict[tuple[int, int, int], AgentSeq] = {}
        self.events = 0
        self.short = 0  # live agents with fewer than rollout_length transitions

    def _short(self, a: AgentSeq) -> bool:
        return a.alive and len(a.deltas) < self.rollout_length

    def add(self, keys: Sequence[tuple[int, int, int]], batch: Mapping[str, np.ndarray]) -> None:
        """Record one pooled batch; ``keys`` gives the agent key of every entry."""
        obs, rew = batch["obs"], batch["reward"]
        ended = batch["done"] | batch["truncated"]
        for i, key in enumerate(keys):
            a = self.agents.get(key)
            if a is None:
                a = self.agents[key] = AgentSeq()
                self.short += 1
            was_short = self._short(a)
            if len(a.obs) > len(a.deltas):  # the previous action's signal arrives
                a.deltas.append(float(rew[i]))
            if ended[i]:
                a.alive = False
            else:
                a.obs.append(obs[i])
                self.events += 1
            if was_short and not self._short(a):
                self.short -= 1

    def forget_slot(self, slot: int) -> None:
        """The episode of ``slot`` ended: its agents need no more transitions."""
        for key, a in self.agents.items():
            if key[0] == slot and a.alive:
                if self._short(a):
                    self.short -= 1
                a.alive = False

    def ready(self, update: int, cfg: Mapping[str, Any]) -> bool:
        """Whether the rollout of update number ``update`` (from 1) is complete [C]."""
        if update < int(cfg["warmup_updates"]):
            return self.events >= int(cfg["warmup_length"])
        if self.events >= int(cfg["max_step_size"]):
            return True
        return self.events > 0 and self.short == 0

    def take(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The complete transitions (obs, deltas) of every agent, and a fresh rollout that
        keeps each live agent's latest observation (its signal arrives after the update)."""
        obs, deltas = [], []
        carry: dict[tuple[int, int, int], AgentSeq] = {}
        for key, a in self.agents.items():
            t = len(a.deltas)
            if t > 0:
                obs.append(np.asarray(a.obs[:t], dtype=np.float32))
                deltas.append(np.asarray(a.deltas, dtype=np.float32))
            if a.alive and len(a.obs) > t:
                carry[key] = AgentSeq(obs=[a.obs[t]])
        self.agents = carry
        self.events = 0
        self.short = len(carry)
        return obs, deltas


# --------------------------------------------------------------------------------------------
# 5. The ADPG loss
# --------------------------------------------------------------------------------------------


def average_reward_to_go(delta: np.ndarray, gamma: float) -> np.ndarray:
    """D_t = (1 / (T - t)) sum_{k=0}^{T-1-t} gamma^k delta_{t+k}; plain mean of the remaining
    signals when gamma is 0 or 1 (as the public code does)."""
    t_len = len(delta)
    g = 1.0 if gamma in (0.0, 1.0) else gamma
    acc = np.zeros(t_len, dtype=np.float64)
    run = 0.0
    for t in range(t_len - 1, -1, -1):
        run = float(delta[t]) + g * run
        acc[t] = run
    return (acc / np.arange(t_len, 0, -1)).astype(np.float32)


def adpg_loss(
    policy: Policy,
    obs: Sequence[np.ndarray],
    deltas: Sequence[np.ndarray],
    gamma: float,
    reward_coef: float,
    action_coef: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    """L = (1/|I|) sum_i (L_r^i + L_a^i) over the agents with at least 2 signals.

    * L_r^i = c_r (1/T) sum_t a_t D_t, D_t the discounted average reward-to-go (a constant);
    * L_a^i = (1/T) sum_{t=0}^{T-2} (1/(T-t)) sum_{j=t+1}^{T-1} (c_a/2) (a_t - a_j)^2;
    * a_t = mu_theta(o_t), recomputed with the current parameters.

    Minimising L_r moves a_t against the sign of D_t: when the flow's future x is above the
    target (d > 0) it slows down, below the target it speeds up.
    """
    seqs = [(o, d) for o, d in zip(obs, deltas, strict=True) if len(d) >= 2]
    if not seqs:
        zero = torch.zeros((), requires_grad=True)
        return zero, {"agents": 0.0}
    n = len(seqs)
    t_max = max(len(d) for _, d in seqs)
    dim = seqs[0][0].shape[1]
    o_pad = np.zeros((n, t_max, dim), dtype=np.float32)
    d_pad = np.zeros((n, t_max), dtype=np.float32)
    mask = np.zeros((n, t_max), dtype=np.float32)
    lens = np.zeros(n, dtype=np.float32)
    for i, (o, d) in enumerate(seqs):
        t = len(d)
        o_pad[i, :t] = o
        d_pad[i, :t] = average_reward_to_go(d, gamma)
        mask[i, :t] = 1.0
        lens[i] = t
    o_t, big_d = torch.from_numpy(o_pad), torch.from_numpy(d_pad)
    m, length = torch.from_numpy(mask), torch.from_numpy(lens)
    a = policy(o_t) * m  # (n, T)
    loss_r = reward_coef * (a * big_d).sum(1) / length
    # Smoothness: sum_{j>t} (a_t - a_j)^2 = n_t a_t^2 - 2 a_t S1_t + S2_t with suffix sums.
    s1 = torch.flip(torch.cumsum(torch.flip(a, [1]), 1), [1]) - a
    s2 = torch.flip(torch.cumsum(torch.flip(a * a, [1]), 1), [1]) - a * a
    idx = torch.arange(t_max, dtype=torch.float32).unsqueeze(0)
    n_after = (length.unsqueeze(1) - 1.0 - idx).clamp(min=0.0)
    pair = n_after * a * a - 2.0 * a * s1 + s2
    weight = m * (n_after > 0).float() / (length.unsqueeze(1) - idx).clamp(min=1.0)
    loss_a = (action_coef / 2.0) * (pair * weight).sum(1) / length
    loss = (loss_r + loss_a).mean()
    valid = m.bool()
    stats = {
        "agents": float(n),
        "loss": float(loss.detach()),
        "loss_reward": float(loss_r.mean().detach()),
        "loss_action": float(loss_a.mean().detach()),
        "mean_abs_D": float(big_d[valid].abs().mean()),
        "mean_delta": float(np.concatenate([d for _, d in seqs]).mean()),
        "mean_abs_delta": float(np.abs(np.concatenate([d for _, d in seqs])).mean()),
        "mean_action": float(a.detach()[valid].mean()),
        "transitions": float(lens.sum()),
    }
    return loss, stats


# --------------------------------------------------------------------------------------------
# 6. Training
# --------------------------------------------------------------------------------------------


def _rng_state(np_rng: np.random.Generator) -> dict[str, Any]:
    return {
        "python": random.getstate(),
        "numpy_global": np.random.get_state(),
        "numpy": np_rng.bit_generator.state,
        "torch": torch.get_rng_state(),
    }


def _set_rng_state(state: Mapping[str, Any], np_rng: np.random.Generator) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy_global"])
    np_rng.bit_generator.state = state["numpy"]
    torch.set_rng_state(state["torch"])


def _save_checkpoint(path: Path, state: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(dict(state), tmp)
    os.replace(tmp, path)


def export_policy(
    policy: Policy,
    config: Mapping[str, Any],
    *,
    calibration_obs: np.ndarray | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The policy as a native ``ccgym-mlp`` dict; ``meta.agent`` is the training [agent] table
    (so that evaluation uses the same features, trigger and action map) updated with the
    config's ``[deploy_agent]`` table."""
    agent = {k: v for k, v in config["agent"].items() if k not in ("policy", "precision")}
    agent.update(config.get("deploy_agent") or {})
    info = {"algorithm": ALGORITHM, "agent": agent, **dict(meta or {})}
    return policies.export_module(policy, calibration_obs=calibration_obs, meta=info)


def load_checkpoint(path: str | os.PathLike[str]) -> tuple[Policy, dict[str, Any], dict]:
    """``(policy, config, checkpoint)`` from an ADPG checkpoint file."""
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    if ckpt.get("algorithm") != ALGORITHM:
        raise ValueError(f"{path} is not an ADPG checkpoint (algorithm {ckpt.get('algorithm')})")
    config = ckpt["config"]
    policy = Policy(int(ckpt["obs_dim"]), config["train"]["hidden"])
    policy.load_state_dict(ckpt["model"])
    return policy, config, ckpt


def export_checkpoint(
    path: str | os.PathLike[str],
    calibration_obs: Any = None,
    percentile: float | None = None,
) -> dict[str, Any]:
    """Plug-in for ``ccgym export``: the native policy dict of a checkpoint."""
    policy, config, ckpt = load_checkpoint(path)
    meta = {"update": ckpt["update"], "events": ckpt["events"]}
    out = export_policy(policy, config, meta=meta)
    if calibration_obs is not None:
        out = policies.with_calibration(out, calibration_obs, percentile)
    return out


def train_from_config(
    config: Mapping[str, Any] | str | os.PathLike[str] | None,
    out_dir: str | os.PathLike[str],
    resume: bool = False,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Train ADPG as configured; returns a summary dict.

    Args:
        config: a config dict, a TOML path, or a bundled config name (merged over
            :data:`DEFAULT_CONFIG`).
        out_dir: receives ``config.json``, TensorBoard event files (``tb/``),
            ``checkpoints/ckpt-u<update>-e<events>.pt`` every ``train.checkpoint_every``
            updates plus ``checkpoint.pt`` (the latest), ``history.jsonl`` (the per-update
            statistics of TensorBoard's ``train/`` tags) and ``policy.json`` (native float32).
        resume: continue from ``out_dir/checkpoint.pt``: model, optimiser, update and event
            counters, RNG states (with ``config=None``, also the checkpoint's config; a given
            config may, e.g., raise ``train.updates``). The simulations in flight are not
            saved: they restart with new seeds drawn from the restored generator.
        progress: show a progress bar (default: when stderr is a terminal).
    """
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from torch.utils.tensorboard import SummaryWriter

    cfg = load_config(config)
    train = cfg["train"]
    out = Path(out_dir)
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    ckpt_path = out / "checkpoint.pt"
    torch.set_num_threads(int(train.get("torch_threads", 1)))
    seed = int(train["seed"])
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    np_rng = np.random.default_rng(seed)

    update, events, wall_before = 1, 0, 0.0
    ckpt: dict[str, Any] | None = None
    if resume:
        if not ckpt_path.is_file():
            raise FileNotFoundError(f"resume: no checkpoint at {ckpt_path}")
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        if ckpt.get("algorithm") != ALGORITHM:
            raise ValueError(f"resume: {ckpt_path} is a {ckpt.get('algorithm')} checkpoint")
        if config is None:
            cfg = ckpt["config"]
            train = cfg["train"]
        _set_rng_state(ckpt["rng"], np_rng)
        update, events = int(ckpt["update"]) + 1, int(ckpt["events"])
        wall_before = float(ckpt.get("wall_s", 0.0))
    (out / "config.json").write_text(json.dumps(cfg, indent=2, default=str) + "\n")
    hist_path = out / "history.jsonl"
    if resume and hist_path.is_file():  # drop the updates that will be redone
        lines = hist_path.read_text(encoding="utf-8").splitlines()
        kept = [ln for ln in lines if ln.strip() and json.loads(ln)["update"] < update]
        hist_path.write_text("".join(ln + "\n" for ln in kept), encoding="utf-8")
    elif hist_path.is_file():
        hist_path.unlink()

    envs = TrainingPool(cfg, np_rng)
    policy = Policy(envs.obs_dim, train["hidden"])
    optimizer = torch.optim.Adam(policy.parameters(), lr=float(train["lr"]), eps=train["adam_eps"])
    if ckpt is not None:
        policy.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
    weights = policy.numpy_weights()
    writer = SummaryWriter(str(out / "tb"), purge_step=update if resume else None)
    rollout = Rollout(int(train["rollout_length"]))
    n_updates = int(train["updates"])
    max_wall = float(train.get("max_wall_s", 0) or 0)
    t0 = time.perf_counter()

    def wall() -> float:
        return wall_before + time.perf_counter() - t0

    def save(tag: bool) -> None:
        state = {
            "algorithm": ALGORITHM,
            "model": policy.state_dict(),
            "optimizer": optimizer.state_dict(),
            "update": update,
            "events": events,
            "obs_dim": envs.obs_dim,
            "config": cfg,
            "rng": _rng_state(np_rng),
            "wall_s": wall(),
        }
        _save_checkpoint(ckpt_path, state)
        if tag:
            _save_checkpoint(out / "checkpoints" / f"ckpt-u{update:05d}-e{events}.pt", state)

    show = Console(stderr=True).is_terminal if progress is None else progress
    columns = (
        TextColumn("[bold]adpg"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
    )
    history: list[dict[str, float]] = []
    ended_episodes = 0
    last_stats: dict[str, float] = {}
    with Progress(*columns, console=Console(stderr=True), disable=not show) as bar:
        task = bar.add_task("train", total=n_updates, completed=update - 1, info="")
        t_rollout = time.perf_counter()
        while update <= n_updates:
            # ---- collect until the rollout of this update is complete
            while not rollout.ready(update, train):
                batch = envs.step()
                n = len(batch["flow"])
                if n:
                    slots = batch["sim"]
                    keys = [
                        (int(s), envs.episode[int(s)], int(f))
                        for s, f in zip(slots, batch["flow"], strict=True)
                    ]
                    rollout.add(keys, batch)
                    envs.act(numpy_act(weights, batch["obs"]))
                for slot, summary in envs.restart_finished():
                    rollout.forget_slot(slot)
                    ended_episodes += 1
                    _log_episode(writer, envs.names[slot], summary, update)
            n_events = rollout.events
            events += n_events
            obs, deltas = rollout.take()
            t_update = time.perf_counter()
            # ---- one ADPG step
            if train.get("loss_batch", 0) and len(obs) > int(train["loss_batch"]):
                pick = np_rng.choice(len(obs), int(train["loss_batch"]), replace=False)
                obs, deltas = [obs[i] for i in pick], [deltas[i] for i in pick]
            t_cap = int(train["max_batch_size"])
            obs = [o[:t_cap] for o in obs]
            deltas = [d[:t_cap] for d in deltas]
            clip = float(train.get("signal_clip", 0.0) or 0.0)
            if clip > 0:
                deltas = [np.clip(d, -clip, clip) for d in deltas]
            loss, stats = adpg_loss(
                policy,
                obs,
                deltas,
                float(train["gamma"]),
                float(train["reward_coef"]),
                float(train["action_coef"]),
            )
            if train.get("anneal_lr", False):
                frac = 1.0 - (update - 1.0) / n_updates
                for group in optimizer.param_groups:
                    group["lr"] = frac * float(train["lr"])
            optimizer.zero_grad()
            if stats["agents"] > 0:
                loss.backward()
                nn.utils.clip_grad_value_(policy.parameters(), float(train["clip_value"]))
                optimizer.step()
            weights = policy.numpy_weights()
            now = time.perf_counter()
            stats.update(
                lr=float(optimizer.param_groups[0]["lr"]),
                events=float(n_events),
                events_total=float(events),
                rollout_s=t_update - t_rollout,
                update_s=now - t_update,
                events_per_s=n_events / max(t_update - t_rollout, 1e-9),
                wall_s=wall(),
            )
            t_rollout = now
            for k, v in stats.items():
                writer.add_scalar(f"train/{k}", v, update)
            history.append({"update": float(update), **stats})
            with open(hist_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"update": update, **stats}) + "\n")
            last_stats = stats
            bar.update(
                task,
                completed=update,
                info=f"events {events:,}  |D| {stats.get('mean_abs_D', float('nan')):.3f}  "
                f"|d| {stats.get('mean_abs_delta', float('nan')):.3f}  "
                f"a {stats.get('mean_action', float('nan')):+.3f}",
            )
            every = int(train.get("checkpoint_every", 0) or 0)
            stop = max_wall > 0 and wall() >= max_wall
            if (every and update % every == 0) or update == n_updates or stop:
                save(tag=True)
            if stop:
                break
            update += 1
    done_update = min(update, n_updates)
    policy_dict = export_policy(policy, cfg, meta={"update": done_update, "events": events})
    policies.save_policy(policy_dict, out / "policy.json")
    writer.close()
    return {
        "updates": done_update,
        "events": events,
        "episodes": ended_episodes,
        "wall_s": wall(),
        "checkpoint": str(ckpt_path),
        "policy": str(out / "policy.json"),
        "last": last_stats,
        "history": history,
    }


def _log_episode(writer: Any, name: str, summary: Mapping[str, Any], update: int) -> None:
    """Per-scenario episode metrics (statistics window of the episode)."""
    bn = summary.get("bottleneck") or {}
    fl = summary.get("flows") or {}
    net = summary.get("network") or {}
    for tag, v in (
        ("utilization", bn.get("utilization")),
        ("queue_latency_us", bn.get("queue_latency_mean_us")),
        ("jain", fl.get("jain")),
        ("drops_packets", net.get("drops_packets")),
    ):
        if isinstance(v, (int, float)) and math.isfinite(v):
            writer.add_scalar(f"episode/{name}/{tag}", v, update)


__all__ = [
    "DEFAULT_CONFIG",
    "Policy",
    "Rollout",
    "TrainingPool",
    "adpg_loss",
    "average_reward_to_go",
    "export_checkpoint",
    "export_policy",
    "load_checkpoint",
    "load_config",
    "train_from_config",
]
