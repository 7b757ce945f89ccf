"""PPO baseline for learned congestion control (spec ``learning_cc.md`` section 7.2).

CleanRL style: this one file holds everything PPO needs, top to bottom:

1. the networks (separate actor and critic MLPs; Gaussian or discrete head);
2. :class:`AgentTrajectories`, which turns the agent bridge's batches (many flows of many
   simulations, each deciding at its own times) into per-agent segments of transitions;
3. the learning core, :class:`PPO` (GAE, clipped surrogate, value loss, entropy bonus);
4. a driver for a plain Gymnasium environment (:func:`train_gym`), which the tests use to show
   that the learner learns, so that a failure on CC is the method's and not a bug;
5. the ccgym trainer :func:`train_from_config` (a :class:`ccgym._sim.Pool` of training
   scenarios, TensorBoard logs, checkpoints, resume), used by ``ccgym train ppo``.

REINFORCE (:mod:`ccgym.agents.reinforce`) and Aurora (:mod:`ccgym.agents.aurora`) reuse parts
2, 4 and 5 and bring their own learning core or settings.

Settings (spec 7.2, the ADPG work's PPO; ``[C]`` = checked in the authors' code):

* observation ``[action, cnp_ratio, nack_ratio]`` x history 2 (6 inputs);
* reward "general": ``(m - 1) - 0.1 rtt_inflation - cnp_ratio - 1000 [nack_ratio > 0]``,
  computed here from the newest observation row (the bridge has no such reward);
* actor and critic: MLP [32, 16], ReLU, no bias, orthogonal init (gain sqrt 2); the actor ends
  in a 16 -> 16 linear layer without activation, then the head;
* Gaussian head: mean and log-std linear in the features (gain 1, zero bias); u ~ N(mu, sigma),
  action a = tanh(u) for the bridge's multiplier map; log-prob of u (no tanh correction: the
  correction does not depend on the parameters once u is drawn, so the gradient is the same);
* discrete head: 6 logits (gain 0.01) indexing m in {0.8, 0.95, 1, 1.05, 1.1, 1.2};
* per-agent rollouts of 64 transitions bootstrapped with V(next state), updates once 4 rollouts
  are complete; returns with gamma 0.99 and GAE off (lambda = 1: A = R - V), no advantage
  normalisation; loss ``-clip-surrogate - 0.01 H + 0.5 * 0.5 mean (R - V)^2``; Adam 2.5e-4
  (eps 1e-5), gradient-norm clip 0.5, 4 epochs of 4 minibatches over all samples (the public
  code's quirk of drawing minibatches from the first 64 samples only is not copied).
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, Normal

# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------

DEFAULT_CONFIG: dict[str, Any] = {
    "train": {
        "algorithm": "ppo",
        "seed": 1,
        "updates": 1000,
        # Simulated time of one training episode; a finished simulation restarts with the next
        # seed (the reference trains on endless runs; per-agent trajectories are bootstrapped
        # at the end of an episode, so the cut does not bias the returns).
        "episode": "20ms",
        "envs_per_scenario": 1,
        "device": "cpu",
        "torch_threads": 1,
        "checkpoint_every": 50,
        "max_wall_s": 0,  # stop (and save) after this much wall time; 0 = no limit
        "export_policy": True,
    },
    # Training scenarios (spec 7.2, legacy names m2o H x Q and a2a H x QPP), built from the
    # bundled ADPG scenarios with overrides; flows start in [1, 2] ms and run to the end.
    "scenario": [
        {"label": "m2o-4x1", "name": "adpg-m2o-16", "overrides": ["topology.hosts=5"]},
        {
            "label": "m2o-4x16",
            "name": "adpg-m2o-16",
            "overrides": ["topology.hosts=5", "workload[0].flows_per_host=16"],
        },
        {"label": "m2o-8x1", "name": "adpg-m2o-16", "overrides": ["topology.hosts=9"]},
        {"label": "m2o-32x1", "name": "adpg-m2o-16", "overrides": ["topology.hosts=33"]},
        {"label": "a2a-4x16", "name": "adpg-a2a-4", "overrides": ["workload[0].flows_per_host=16"]},
        {"label": "a2a-8x8", "name": "adpg-a2a-8", "overrides": ["workload[0].flows_per_host=8"]},
        {"label": "a2a-8x16", "name": "adpg-a2a-8", "overrides": ["workload[0].flows_per_host=16"]},
    ],
    # The scenarios' [agent] table (see docs/env.md); `reward` may also name a reward
    # computed here (PYTHON_REWARDS).
    "agent": {
        "trigger": "probe",
        "features": ["action", "cnp_ratio", "nack_ratio"],
        "history": 2,
        "reward": "general",
        "action": "multiplier",
        "discrete": [0.8, 0.95, 1.0, 1.05, 1.1, 1.2],
    },
    "ppo": {
        "gamma": 0.99,
        "gae_lambda": 1.0,  # 1 = GAE off (A = R - V, spec 7.2); 0.95 to turn it on
        "clip": 0.2,
        "ent_coef": 0.01,
        "vf_coef": 0.5,  # times 0.5 mean (R - V)^2
        "lr": 2.5e-4,
        "adam_eps": 1e-5,
        "max_grad_norm": 0.5,
        "epochs": 4,
        "minibatches": 4,
        "norm_adv": False,
        "rollout_length": 64,
        "rollouts_per_update": 4,
        "max_rollouts_per_update": 64,
        "batch_steps": 0,  # > 0: update every batch_steps transitions instead (PPO1 style)
    },
    "network": {
        "hidden": [32, 16],
        "activation": "relu",
        "bias": False,
        "actor_out_layer": True,
        "log_std": "state",  # "state" (linear in the features) or "param" (learned constant)
        "init_log_std": 0.0,
        "log_std_min": -5.0,
        "log_std_max": 2.0,
        "hidden_gain": math.sqrt(2.0),
        "mean_gain": 1.0,
        "logits_gain": 0.01,
        "value_gain": 1.0,
    },
}
"""Defaults of ``ccgym train ppo``; a config file's tables are merged into a copy of these."""


def merge_config(base: Mapping[str, Any], override: Mapping[str, Any] | None) -> dict[str, Any]:
    """Deep-merge ``override`` into a copy of ``base`` (tables merge, other values replace)."""
    out = copy.deepcopy(dict(base))
    for key, value in (override or {}).items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_config(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
"""Bundled training configs (``ccgym/configs/<name>.toml``)."""


def load_config(
    config: Mapping[str, Any] | str | os.PathLike[str] | None, defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """A config dict, TOML path or bundled config name (``ppo-gaussian`` ->
    ``ccgym/configs/ppo-gaussian.toml``), merged over ``defaults``."""
    if config is None:
        return merge_config(defaults, None)
    if isinstance(config, Mapping):
        return merge_config(defaults, config)
    path = Path(config)
    if not path.is_file():
        bundled = CONFIG_DIR / f"{config}.toml"
        if "/" in str(config) or not bundled.is_file():
            raise FileNotFoundError(f"training config not found: {config}")
        path = bundled
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    with open(path, "rb") as f:
        return merge_config(defaults, tomllib.load(f))


# --------------------------------------------------------------------------------------------
# 1. Networks
# --------------------------------------------------------------------------------------------


def layer_init(layer: nn.Linear, gain: float) -> nn.Linear:
    """Orthogonal weights with ``gain``, zero bias (the CleanRL / ADPG initialisation)."""
    nn.init.orthogonal_(layer.weight, gain)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)
    return layer


def _activation(name: str) -> type[nn.Module]:
    return {"relu": nn.ReLU, "tanh": nn.Tanh}[name]


def mlp(in_dim: int, net: Mapping[str, Any], out_layer: bool) -> tuple[nn.Sequential, int]:
    """Hidden layers of ``net`` (with activation), plus a same-width linear layer if asked."""
    layers: list[nn.Module] = []
    width = in_dim
    for h in net["hidden"]:
        layers += [layer_init(nn.Linear(width, h, bias=net["bias"]), net["hidden_gain"])]
        layers += [_activation(net["activation"])()]
        width = h
    if out_layer:
        layers += [layer_init(nn.Linear(width, width, bias=net["bias"]), net["hidden_gain"])]
    return nn.Sequential(*layers), width


@dataclass(frozen=True)
class ActionSpec:
    """What the policy outputs and how it becomes an environment action.

    ``kind``: ``"discrete"`` (``n`` choices; the index is the action), ``"tanh"`` (Gaussian u,
    action ``scale * tanh(u)``: the ADPG multiplier map) or ``"identity"`` (Gaussian u used as
    is: Aurora).
    """

    kind: str
    n: int = 1
    scale: float = 1.0

    @property
    def discrete(self) -> bool:
        """True for a categorical head."""
        return self.kind == "discrete"


class Actor(nn.Module):
    """Policy network: MLP features, then a categorical or Gaussian head."""

    def __init__(self, obs_dim: int, action: ActionSpec, net: Mapping[str, Any]) -> None:
        super().__init__()
        self.action = action
        self.body, width = mlp(obs_dim, net, net["actor_out_layer"])
        self.log_std_mode = net["log_std"]
        self.log_std_bounds = (float(net["log_std_min"]), float(net["log_std_max"]))
        if action.discrete:
            self.logits = layer_init(nn.Linear(width, action.n), net["logits_gain"])
        else:
            self.mean = layer_init(nn.Linear(width, 1), net["mean_gain"])
            if self.log_std_mode == "state":
                self.log_std = layer_init(nn.Linear(width, 1), net["mean_gain"])
            elif self.log_std_mode == "param":
                self.log_std_param = nn.Parameter(torch.full((1,), float(net["init_log_std"])))
            else:
                raise ValueError(
                    f'network.log_std: use "state" or "param", not {self.log_std_mode!r}'
                )

    def distribution(self, obs: torch.Tensor) -> Categorical | Normal:
        """The action distribution at ``obs`` (a batch)."""
        z = self.body(obs)
        if self.action.discrete:
            return Categorical(logits=self.logits(z))
        mu = self.mean(z).squeeze(-1)
        if self.log_std_mode == "state":
            log_std = self.log_std(z).squeeze(-1)
        else:
            log_std = self.log_std_param.expand_as(mu)
        log_std = log_std.clamp(*self.log_std_bounds)
        return Normal(mu, log_std.exp())

    def mode(self, obs: torch.Tensor) -> torch.Tensor:
        """The deterministic action (before the env mapping): argmax or the Gaussian mean."""
        dist = self.distribution(obs)
        if isinstance(dist, Categorical):
            return dist.probs.argmax(-1)
        return dist.mean

    def to_env(self, raw: torch.Tensor) -> torch.Tensor:
        """Raw sample (index or u) -> environment action."""
        if self.action.kind == "tanh":
            return self.action.scale * torch.tanh(raw)
        if self.action.kind == "identity":
            return self.action.scale * raw
        return raw

    def native_layers(self) -> tuple[list[dict[str, Any]], str]:
        """The deterministic policy as ``ccgym-mlp`` layers and output activation."""
        layers: list[dict[str, Any]] = []
        mods = list(self.body)
        for i, m in enumerate(mods):
            if isinstance(m, nn.Linear):
                nxt = mods[i + 1] if i + 1 < len(mods) else None
                act = (
                    "relu"
                    if isinstance(nxt, nn.ReLU)
                    else "tanh"
                    if isinstance(nxt, nn.Tanh)
                    else "none"
                )
                layers.append(_linear_json(m, act))
        head = self.logits if self.action.discrete else self.mean
        layers.append(_linear_json(head, "none"))
        output = "tanh" if self.action.kind == "tanh" else "none"
        if self.action.scale != 1.0:
            raise ValueError("native export needs an action scale of 1")
        return layers, output


def _linear_json(m: nn.Linear, activation: str) -> dict[str, Any]:
    return {
        "weight": m.weight.detach().cpu().tolist(),
        "bias": None if m.bias is None else m.bias.detach().cpu().tolist(),
        "activation": activation,
    }


class Critic(nn.Module):
    """Value network: MLP features, then a scalar linear output."""

    def __init__(self, obs_dim: int, net: Mapping[str, Any]) -> None:
        super().__init__()
        self.body, width = mlp(obs_dim, net, False)
        self.out = layer_init(nn.Linear(width, 1), net["value_gain"])

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """V(obs), shape (batch,)."""
        return self.out(self.body(obs)).squeeze(-1)


# --------------------------------------------------------------------------------------------
# 2. Per-agent trajectories
# --------------------------------------------------------------------------------------------


@dataclass
class PolicyOutput:
    """One forward pass over a batch of observations."""

    env_actions: np.ndarray  # what the environment receives (float32)
    raw: np.ndarray  # what the log-probability refers to (u, or the index)
    logp: np.ndarray
    value: np.ndarray


@dataclass
class Segment:
    """Consecutive transitions of one agent, with the value that bootstraps its tail.

    ``rewards[t]`` is the reward of ``actions[t]`` taken at ``obs[t]`` (on the bridge it arrives
    with the agent's next request). ``bootstrap`` is V(s_T) of the state after the last
    transition, 0 when ``terminal``.
    """

    obs: list[np.ndarray] = field(default_factory=list)
    actions: list[float] = field(default_factory=list)
    logps: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    bootstrap: float = 0.0
    terminal: bool = False

    def __len__(self) -> int:
        return len(self.rewards)


class AgentTrajectories:
    """Turns bridge-style batches into per-agent segments.

    Each call to :meth:`record` takes one batch: for every entry the agent key (on the bridge:
    (simulation slot, episode, flow)), its observation, the reward of its *previous* action,
    its done/truncated flags, and the policy's output at that observation. The previous
    (obs, action) of the same agent is paired with the reward to make a transition. A segment
    is complete after ``rollout_length`` transitions (bootstrapped with V of the new
    observation), when the agent is done (terminal, no bootstrap) or truncated (bootstrapped).
    """

    def __init__(self, rollout_length: int) -> None:
        if rollout_length < 1:
            raise ValueError("rollout_length must be at least 1")
        self.rollout_length = rollout_length
        self.pending: dict[Hashable, tuple[np.ndarray, float, float, float]] = {}
        self.open: dict[Hashable, Segment] = {}
        self.complete: list[Segment] = []
        self.open_steps = 0
        """Transitions in segments not yet complete."""

    @property
    def complete_steps(self) -> int:
        """Transitions in complete segments."""
        return sum(len(s) for s in self.complete)

    def record(
        self,
        keys: Sequence[Hashable],
        obs: np.ndarray,
        rewards: np.ndarray,
        done: np.ndarray,
        truncated: np.ndarray,
        out: PolicyOutput,
    ) -> None:
        """Adds one batch (see the class docstring)."""
        for i, key in enumerate(keys):
            prev = self.pending.pop(key, None)
            if prev is not None:
                seg = self.open.get(key)
                if seg is None:
                    seg = self.open[key] = Segment()
                p_obs, p_act, p_logp, p_val = prev
                seg.obs.append(p_obs)
                seg.actions.append(p_act)
                seg.logps.append(p_logp)
                seg.values.append(p_val)
                seg.rewards.append(float(rewards[i]))
                self.open_steps += 1
                if done[i]:
                    seg.terminal = True
                    self._close(key, 0.0)
                elif truncated[i] or len(seg) >= self.rollout_length:
                    self._close(key, float(out.value[i]))
            if done[i] or truncated[i]:
                self._drop(key)
            else:
                self.pending[key] = (
                    np.array(obs[i], dtype=np.float32),
                    float(out.raw[i]),
                    float(out.logp[i]),
                    float(out.value[i]),
                )

    def _drop(self, key: Hashable) -> None:
        seg = self.open.pop(key, None)
        if seg is not None:
            self.open_steps -= len(seg)

    def _close(self, key: Hashable, bootstrap: float) -> None:
        seg = self.open.pop(key)
        self.open_steps -= len(seg)
        seg.bootstrap = 0.0 if seg.terminal else bootstrap
        self.complete.append(seg)

    def flush(self) -> None:
        """Completes every open segment, bootstrapped with V of the agent's pending state."""
        for key in list(self.open):
            p = self.pending.get(key)
            self._close(key, p[3] if p is not None else 0.0)

    def take(self, limit: int | None = None, rng: random.Random | None = None) -> list[Segment]:
        """Removes and returns the complete segments (a random subset of ``limit`` if more)."""
        segs, self.complete = self.complete, []
        if limit is not None and len(segs) > limit:
            segs = (rng or random).sample(segs, limit)
        return segs

    def forget(self, keep: Callable[[Hashable], bool]) -> None:
        """Drops pending state and open segments of agents for which ``keep`` is false."""
        for key in [k for k in self.pending if not keep(k)]:
            del self.pending[key]
        for key in [k for k in self.open if not keep(k)]:
            self._drop(key)


# --------------------------------------------------------------------------------------------
# 3. The learning core
# --------------------------------------------------------------------------------------------


def gae(segment: Segment, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimates and returns of one segment.

    With ``lam = 1`` the advantage is R_t - V(s_t), R_t the bootstrapped discounted return
    (R_t = r_t + gamma R_{t+1}, R_T = V(s_T)), which is the spec's default for PPO.
    """
    n = len(segment)
    values = np.asarray(segment.values, dtype=np.float64)
    rewards = np.asarray(segment.rewards, dtype=np.float64)
    adv = np.zeros(n, dtype=np.float64)
    next_value = segment.bootstrap
    last = 0.0
    for t in range(n - 1, -1, -1):
        delta = rewards[t] + gamma * next_value - values[t]
        last = delta + gamma * lam * last
        adv[t] = last
        next_value = values[t]
    return adv, adv + values


def segment_returns(segment: Segment, gamma: float) -> np.ndarray:
    """Discounted returns within a segment, without bootstrap (REINFORCE)."""
    out = np.zeros(len(segment), dtype=np.float64)
    g = 0.0
    for t in range(len(segment) - 1, -1, -1):
        g = segment.rewards[t] + gamma * g
        out[t] = g
    return out


@dataclass
class RolloutSettings:
    """When an update happens.

    Segment mode (``batch_steps`` = 0): once ``rollouts_per_update`` per-agent segments of up to
    ``rollout_length`` transitions are complete, update on all complete segments (a random
    ``max_rollouts_per_update`` of them if more). Batch mode (``batch_steps`` > 0, PPO1 /
    Aurora): once complete and open segments hold ``batch_steps`` transitions, close every open
    segment (bootstrapped) and update on everything: on-policy except for the one action per
    agent in flight at the update, which starts the agent's next segment.
    """

    rollout_length: int = 64
    rollouts_per_update: int = 4
    max_rollouts_per_update: int = 64
    batch_steps: int = 0

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RolloutSettings:
        """Picks the rollout keys out of an algorithm table."""
        return cls(**{k: int(d[k]) for k in cls.__dataclass_fields__ if k in d})

    def ready(self, traj: AgentTrajectories) -> bool:
        """Whether ``traj`` holds enough data for an update."""
        if self.batch_steps > 0:
            return traj.complete_steps + traj.open_steps >= self.batch_steps
        return len(traj.complete) >= self.rollouts_per_update

    def take(self, traj: AgentTrajectories, rng: random.Random) -> list[Segment]:
        """The segments of the next update."""
        if self.batch_steps > 0:
            traj.flush()
            return traj.take()
        return traj.take(self.max_rollouts_per_update, rng)


class Learner(Protocol):
    """What the drivers need from a learning algorithm."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    rollout: RolloutSettings

    def act(self, obs: np.ndarray, deterministic: bool = False) -> PolicyOutput:
        """Policy (and value) at a batch of observations."""
        ...

    def update(self, segments: list[Segment]) -> dict[str, float]:
        """One update on complete segments; returns scalar statistics."""
        ...

    def extra_state(self) -> dict[str, Any]:
        """Learner state beyond the model and optimiser (for checkpoints)."""
        ...

    def load_extra_state(self, state: Mapping[str, Any]) -> None:
        """Restores :meth:`extra_state`."""
        ...


class ActorCritic(nn.Module):
    """Separate actor and critic networks."""

    def __init__(self, obs_dim: int, action: ActionSpec, net: Mapping[str, Any]) -> None:
        super().__init__()
        self.actor = Actor(obs_dim, action, net)
        self.critic = Critic(obs_dim, net)


def policy_step(
    actor: Actor, critic: Critic | None, obs: np.ndarray, deterministic: bool, device: torch.device
) -> PolicyOutput:
    """Samples (or takes the mode of) the policy at ``obs``; values are 0 without a critic."""
    with torch.no_grad():
        x = torch.as_tensor(np.asarray(obs, dtype=np.float32), device=device)
        dist = actor.distribution(x)
        raw = actor.mode(x) if deterministic else dist.sample()
        logp = dist.log_prob(raw)
        value = critic(x) if critic is not None else torch.zeros_like(logp)
        env = actor.to_env(raw.float())
    return PolicyOutput(
        env_actions=env.cpu().numpy().astype(np.float32),
        raw=raw.float().cpu().numpy(),
        logp=logp.cpu().numpy(),
        value=value.cpu().numpy(),
    )


def stack_segments(segments: Sequence[Segment], device: torch.device) -> tuple[torch.Tensor, ...]:
    """Observations, actions and old log-probabilities of ``segments`` as tensors."""
    obs = torch.as_tensor(np.stack([o for s in segments for o in s.obs]), device=device)
    act = torch.as_tensor(
        np.array([a for s in segments for a in s.actions], np.float32), device=device
    )
    logp = torch.as_tensor(
        np.array([p for s in segments for p in s.logps], np.float32), device=device
    )
    return obs, act, logp


@dataclass
class PPOSettings:
    """PPO hyper-parameters (the ``[ppo]`` table)."""

    gamma: float = 0.99
    gae_lambda: float = 1.0
    clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    lr: float = 2.5e-4
    adam_eps: float = 1e-5
    max_grad_norm: float = 0.5
    epochs: int = 4
    minibatches: int = 4
    norm_adv: bool = False

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PPOSettings:
        """Picks the PPO keys out of a table (rollout keys are ignored)."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


class PPO:
    """The PPO learning core: acts on batches of observations and updates on segments."""

    def __init__(
        self,
        obs_dim: int,
        action: ActionSpec,
        net: Mapping[str, Any],
        settings: PPOSettings,
        rollout: RolloutSettings,
        device: str | torch.device = "cpu",
    ) -> None:
        self.settings = settings
        self.rollout = rollout
        self.device = torch.device(device)
        self.model = ActorCritic(obs_dim, action, net).to(self.device)
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=settings.lr, eps=settings.adam_eps
        )

    def act(self, obs: np.ndarray, deterministic: bool = False) -> PolicyOutput:
        """Samples actions at ``obs`` and returns them with log-probabilities and values."""
        return policy_step(self.model.actor, self.model.critic, obs, deterministic, self.device)

    def update(self, segments: list[Segment]) -> dict[str, float]:
        """PPO epochs over the transitions of ``segments``."""
        s = self.settings
        obs, act, old_logp = stack_segments(segments, self.device)
        advs, rets = zip(*(gae(seg, s.gamma, s.gae_lambda) for seg in segments), strict=True)
        adv = torch.as_tensor(np.concatenate(advs), dtype=torch.float32, device=self.device)
        ret = torch.as_tensor(np.concatenate(rets), dtype=torch.float32, device=self.device)
        old_v = torch.as_tensor(
            np.array([v for seg in segments for v in seg.values], np.float32), device=self.device
        )
        if s.norm_adv and len(adv) > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        n = len(ret)
        mb = max(1, math.ceil(n / s.minibatches))
        stats: dict[str, list[float]] = {
            k: [] for k in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "loss")
        }
        for _ in range(s.epochs):
            perm = torch.randperm(n, device=self.device)
            for start in range(0, n, mb):
                idx = perm[start : start + mb]
                dist = self.model.actor.distribution(obs[idx])
                a = act[idx].long() if isinstance(dist, Categorical) else act[idx]
                logp = dist.log_prob(a)
                entropy = dist.entropy().mean()
                v = self.model.critic(obs[idx])
                log_ratio = logp - old_logp[idx]
                ratio = log_ratio.exp()
                a_mb = adv[idx]
                pg = -torch.min(ratio * a_mb, ratio.clamp(1 - s.clip, 1 + s.clip) * a_mb).mean()
                v_loss = 0.5 * (v - ret[idx]).pow(2).mean()
                loss = pg - s.ent_coef * entropy + s.vf_coef * v_loss
                self.optimizer.zero_grad()
                loss.backward()
                if s.max_grad_norm > 0:
                    nn.utils.clip_grad_norm_(self.model.parameters(), s.max_grad_norm)
                self.optimizer.step()
                with torch.no_grad():
                    stats["approx_kl"].append(float(((ratio - 1) - log_ratio).mean()))
                    stats["clipfrac"].append(float(((ratio - 1).abs() > s.clip).float().mean()))
                stats["policy_loss"].append(pg.item())
                stats["value_loss"].append(v_loss.item())
                stats["entropy"].append(entropy.item())
                stats["loss"].append(loss.item())
        out = {k: float(np.mean(v)) for k, v in stats.items()}
        var = float(ret.var()) if n > 1 else 0.0
        out["explained_variance"] = (
            float("nan") if var == 0 else 1.0 - float((ret - old_v).var()) / var
        )
        out["samples"] = float(n)
        out["segments"] = float(len(segments))
        out["reward_mean"] = float(np.mean([r for seg in segments for r in seg.rewards]))
        return out

    def extra_state(self) -> dict[str, Any]:
        """PPO has no state beyond the model and the optimiser."""
        return {}

    def load_extra_state(self, state: Mapping[str, Any]) -> None:
        """Nothing to restore."""


def action_spec(agent: Mapping[str, Any]) -> ActionSpec:
    """The policy head implied by the ``[agent]`` table's ``action``."""
    kind = agent.get("action", "multiplier")
    if kind == "discrete":
        return ActionSpec("discrete", n=len(agent.get("discrete", DEFAULT_DISCRETE)))
    if kind == "multiplier":
        return ActionSpec("tanh")
    if kind == "aurora":
        return ActionSpec("identity")
    raise ValueError(
        f'agent.action = "{kind}": these baselines support multiplier, discrete, aurora'
    )


DEFAULT_DISCRETE = [0.8, 0.95, 1.0, 1.05, 1.1, 1.2]


def make_ppo(obs_dim: int, config: Mapping[str, Any], action: ActionSpec | None = None) -> PPO:
    """A :class:`PPO` learner from a merged config (``[ppo]``, ``[network]``, ``[agent]``)."""
    algo = config["ppo"]
    return PPO(
        obs_dim,
        action or action_spec(config["agent"]),
        config["network"],
        PPOSettings.from_dict(algo),
        RolloutSettings.from_dict(algo),
        config["train"].get("device", "cpu"),
    )


# --------------------------------------------------------------------------------------------
# 4. Plain Gymnasium driver
# --------------------------------------------------------------------------------------------


def train_gym(
    learner: Learner,
    env: Any,
    total_steps: int,
    seed: int = 0,
    on_update: Callable[[int, dict[str, float]], None] | None = None,
) -> list[float]:
    """Trains ``learner`` on one Gymnasium environment for ``total_steps`` steps.

    The environment goes through the same :class:`AgentTrajectories` as the bridge: each
    episode is one agent, a step's reward is delivered with the next observation, termination
    is ``done`` and time-limit truncation is ``truncated``. Returns the undiscounted return of
    every finished episode, in order.
    """
    rng = random.Random(seed)
    traj = AgentTrajectories(learner.rollout.rollout_length)
    episode, ep_return, returns = 0, 0.0, []
    obs, _ = env.reset(seed=seed)
    zero, false = np.zeros(1, np.float32), np.zeros(1, bool)
    out = learner.act(obs[None])
    traj.record([episode], obs[None], zero, false, false, out)
    updates = 0
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
        if ended:
            returns.append(ep_return)
            episode, ep_return = episode + 1, 0.0
            obs, _ = env.reset()
            out = learner.act(obs[None])
            traj.record([episode], obs[None], zero, false, false, out)
        if learner.rollout.ready(traj):
            stats = learner.update(learner.rollout.take(traj, rng))
            updates += 1
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


# --------------------------------------------------------------------------------------------
# 5. The ccgym trainer
# --------------------------------------------------------------------------------------------

BRIDGE_REWARDS = ("adpg", "adpg_signal", "aurora", "throughput_delay", "log_utility")
"""Rewards computed by the simulator (``[agent] reward``)."""

PYTHON_REWARDS: dict[str, tuple[tuple[str, ...], Callable[[dict[str, np.ndarray]], np.ndarray]]] = {
    # spec 7.1 "general": (m - 1) - 0.1 rtt_inflation - cnp_ratio - 1000 [nack_ratio > 0]
    "general": (
        ("action", "rtt_inflation", "cnp_ratio", "nack_ratio"),
        lambda f: (
            (f["action"] - 1.0)
            - 0.1 * f["rtt_inflation"]
            - f["cnp_ratio"]
            - 1000.0 * (f["nack_ratio"] > 0)
        ),
    ),
    # spec 7.1 "constrained": -1 if cnp_ratio > 2 else (m - 1) - 0.1 rtt_inflation
    "constrained": (
        ("action", "rtt_inflation", "cnp_ratio"),
        lambda f: np.where(
            f["cnp_ratio"] > 2.0, -1.0, (f["action"] - 1.0) - 0.1 * f["rtt_inflation"]
        ),
    ),
}
"""Rewards of the ADPG work's baselines that the bridge lacks, computed from the newest
observation row (the monitor interval that followed the action being rewarded)."""

PY_ONLY_AGENT_KEYS = ("reward",)


class BridgeAgentTable:
    """Splits the config's ``[agent]`` table into what the simulator gets and what the policy
    sees: a Python-side reward adds the features it needs to the simulator's list, and the
    policy's observation keeps only the configured features."""

    def __init__(self, agent: Mapping[str, Any]) -> None:
        self.policy_table = dict(agent)
        self.features: list[str] = list(agent.get("features", ["action", "adpg"]))
        self.history = int(agent.get("history", 2))
        self.reward = str(agent.get("reward", "adpg_signal"))
        self.reward_scale = float(agent.get("reward_scale", 1.0))
        bridge = dict(agent)
        self.python_reward = None
        sim_features = list(self.features)
        if self.reward in PYTHON_REWARDS:
            needed, fn = PYTHON_REWARDS[self.reward]
            self.python_reward = fn
            sim_features += [f for f in needed if f not in sim_features]
            bridge["reward"] = "adpg"  # any; unused
            bridge["reward_scale"] = 1.0
            # The exported policy's table: a bridge reward (irrelevant for evaluation).
            self.policy_table["reward"] = "adpg"
        elif self.reward not in BRIDGE_REWARDS:
            known = ", ".join((*BRIDGE_REWARDS, *PYTHON_REWARDS))
            raise ValueError(f'agent.reward = "{self.reward}": unknown (known: {known})')
        bridge["features"] = sim_features
        self.sim_table = bridge
        nf = len(sim_features)
        self.policy_columns = np.array(
            [h * nf + sim_features.index(f) for h in range(self.history) for f in self.features]
        )
        self.newest = {f: (self.history - 1) * nf + i for i, f in enumerate(sim_features)}
        self.obs_dim = len(self.features) * self.history
        self.identity = len(sim_features) == len(self.features)

    def policy_obs(self, obs: np.ndarray) -> np.ndarray:
        """Columns of the simulator's observation that the policy sees."""
        return obs if self.identity else obs[:, self.policy_columns]

    def rewards(self, obs: np.ndarray, bridge_rewards: np.ndarray) -> np.ndarray:
        """The reward of each entry (the bridge's, or the Python-side one from ``obs``)."""
        if self.python_reward is None:
            return bridge_rewards
        cols = {f: obs[:, i].astype(np.float64) for f, i in self.newest.items()}
        return (self.python_reward(cols) * self.reward_scale).astype(np.float32)


def training_scenario(
    entry: Mapping[str, Any], agent_table: Mapping[str, Any], episode: str, seed: int
) -> tuple[str, str]:
    """JSON and base directory of one training episode of a ``[[scenario]]`` entry.

    The scenario runs for ``episode`` of simulated time with the given seed, every flow is an
    agent, statistics cover the whole episode, per-flow series are off and workload ``stop``
    times are removed (flows run to the end of the episode).
    """
    from ccgym.runner import scenario_json
    from ccgym.scenario import load_scenario

    data, base_dir = load_scenario(entry["name"], overrides=entry.get("overrides", []), cc="agent")
    data["duration"] = episode
    data["seed"] = int(seed)
    metrics = dict(data.get("metrics") or {})
    metrics["window"] = ["0s", episode]
    metrics["flow_series"] = False
    data["metrics"] = metrics
    for w in data.get("workload") or []:
        if isinstance(w, dict):
            w.pop("stop", None)
    data["agent"] = dict(agent_table)
    return scenario_json(data), str(base_dir)


class BridgeRollouts:
    """A pool of training simulations stepped through the agent bridge.

    Slot ``i`` runs scenario entry ``i // envs_per_scenario``; when its episode is over it
    restarts with a fresh seed. Agent keys are (slot, episode, flow).
    """

    def __init__(self, config: Mapping[str, Any], seed: int) -> None:
        from ccgym.runner import native

        self.sim = native()
        train = config["train"]
        self.table = BridgeAgentTable(config["agent"])
        self.episode = str(train["episode"])
        entries = config.get("scenario") or []
        if not entries:
            raise ValueError("the config names no [[scenario]] to train on")
        self.entries = [e for e in entries for _ in range(int(train.get("envs_per_scenario", 1)))]
        self.labels = [str(e.get("label") or e["name"]) for e in self.entries]
        self.seed = seed
        self.episodes = [0] * len(self.entries)
        self.pool = self.sim.Pool([self._scenario(i) for i in range(len(self.entries))])
        expected = len(self.table.sim_table["features"]) * self.table.history
        if self.pool.obs_dim != expected:
            raise RuntimeError(f"pool observation length {self.pool.obs_dim}, expected {expected}")
        self.ep_reward = np.zeros(len(self.entries))
        self.ep_steps = np.zeros(len(self.entries), dtype=np.int64)
        self.sim_steps = 0

    def _scenario(self, slot: int) -> tuple[str, str]:
        seed = self.seed * 1_000_003 + slot * 10_007 + self.episodes[slot]
        return training_scenario(self.entries[slot], self.table.sim_table, self.episode, seed)

    def step(self, learner: Learner, traj: AgentTrajectories) -> list[tuple[str, dict[str, Any]]]:
        """One pooled batch: act on it, record it; returns (label, summary) of every finished
        episode (the summary has ``_reward_per_step``, the mean reward of its decisions)."""
        b = self.pool.step()
        n = len(b["flow"])
        finished: list[tuple[str, dict[str, Any]]] = []
        if n:
            obs = self.table.policy_obs(b["obs"])
            rewards = self.table.rewards(b["obs"], b["reward"])
            out = learner.act(obs)
            slots = b["sim"]
            keys = [
                (int(s), self.episodes[s], int(f)) for s, f in zip(slots, b["flow"], strict=True)
            ]
            traj.record(keys, obs, rewards, b["done"], b["truncated"], out)
            self.pool.act(out.env_actions)
            self.sim_steps += n
            np.add.at(self.ep_steps, slots, 1)
            np.add.at(self.ep_reward, slots, rewards)
        for i, over in enumerate(self.pool.over):
            if over:
                summary = json.loads(self.pool.summary(i))
                summary["_reward_per_step"] = float(self.ep_reward[i] / max(self.ep_steps[i], 1))
                finished.append((self.labels[i], summary))
                # Every agent of the episode has ended (done or truncated); drop any leftover.
                old = (i, self.episodes[i])
                traj.forget(lambda k, old=old: (k[0], k[1]) != old)
                self.episodes[i] += 1
                self.ep_reward[i], self.ep_steps[i] = 0.0, 0
                self.pool.reset(i, *self._scenario(i))
        return finished


def seed_everything(seed: int) -> None:
    """Seeds Python, NumPy and PyTorch."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def export_native(actor: Actor, agent_table: Mapping[str, Any], meta: Mapping[str, Any]) -> dict:
    """The deterministic policy of ``actor`` as a native ``ccgym-mlp`` policy (float32).

    ``meta.agent`` is the [agent] table to evaluate it with (the policy's own features; a
    Python-side training reward is replaced by a bridge one, irrelevant for evaluation).
    """
    layers, output = actor.native_layers()
    table = {k: v for k, v in agent_table.items() if k not in ("policy", "precision")}
    return {
        "format": "ccgym-mlp",
        "version": 1,
        "layers": layers,
        "output": output,
        "meta": {**meta, "agent": table},
    }


def load_learner(
    path: str | os.PathLike[str],
    name: str,
    make_learner: Callable[[int, Mapping[str, Any]], Learner],
) -> tuple[Learner, dict[str, Any], dict[str, Any]]:
    """``(learner, config, checkpoint)`` from a checkpoint written by :func:`run_training`."""
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    if not isinstance(ckpt, dict) or ckpt.get("algorithm") != name:
        alg = ckpt.get("algorithm") if isinstance(ckpt, dict) else None
        raise ValueError(f"{path} is not a {name} checkpoint (algorithm {alg})")
    config = ckpt["config"]
    learner = make_learner(int(ckpt["obs_dim"]), config)
    learner.model.load_state_dict(ckpt["model"])
    return learner, config, ckpt


def export_checkpoint_with(
    path: str | os.PathLike[str],
    name: str,
    make_learner: Callable[[int, Mapping[str, Any]], Learner],
    calibration_obs: Any = None,
    percentile: float | None = None,
) -> dict[str, Any]:
    """The native policy dict of a checkpoint (``ccgym export``), int8-calibrated on
    ``calibration_obs`` if given (observations as the policy sees them)."""
    learner, config, ckpt = load_learner(path, name, make_learner)
    table = BridgeAgentTable(config["agent"])
    meta = {"algorithm": name, "update": ckpt["update"], "env_steps": ckpt["env_steps"]}
    policy = export_native(learner.model.actor, table.policy_table, meta)  # type: ignore[attr-defined]
    if calibration_obs is not None:
        from ccgym import policies

        policy = policies.with_calibration(policy, calibration_obs, percentile)
    return policy


def _save(path: Path, state: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(dict(state), tmp)
    os.replace(tmp, path)


def run_training(
    name: str,
    config: Mapping[str, Any],
    out_dir: str | os.PathLike[str],
    resume: bool,
    make_learner: Callable[[int, Mapping[str, Any]], Learner],
    use_checkpoint_config: bool = False,
) -> dict[str, Any]:
    """The bridge training loop shared by PPO, REINFORCE and Aurora.

    Writes to ``out_dir`` (the layout of the ADPG trainer): ``config.json`` (the merged
    config), TensorBoard event files in ``tb/`` (``train/*`` per update, ``episode/<label>/*``
    per finished training episode), ``history.jsonl`` (the ``train/*`` statistics, one line per
    update), ``checkpoint.pt`` (the latest: model, optimiser, update and step counters, RNG
    states, config) plus ``checkpoints/ckpt-u<update>-s<steps>.pt`` every
    ``train.checkpoint_every`` updates and at the end, and ``policy.json`` (the deterministic
    policy as a native ``ccgym-mlp`` file).

    With ``resume`` it continues from ``out_dir/checkpoint.pt``; with ``use_checkpoint_config``
    the checkpoint's config replaces ``config``. Simulations in flight are not saved: they
    restart with new seeds (which move on with the update counter), and partial per-agent
    segments are lost.
    """
    from torch.utils.tensorboard import SummaryWriter

    out = Path(out_dir)
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    ckpt_path = out / "checkpoint.pt"
    ckpt: dict[str, Any] | None = None
    if resume:
        if not ckpt_path.is_file():
            raise FileNotFoundError(f"resume: no checkpoint at {ckpt_path}")
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        if ckpt.get("algorithm") != name:
            raise ValueError(f"resume: {ckpt_path} is a {ckpt.get('algorithm')} checkpoint")
        if use_checkpoint_config:
            config = ckpt["config"]
    train = config["train"]
    torch.set_num_threads(int(train.get("torch_threads", 1)))
    seed = int(train["seed"])
    seed_everything(seed)
    table = BridgeAgentTable(config["agent"])
    learner = make_learner(table.obs_dim, config)
    update, env_steps, episodes, wall_before = 0, 0, 0, 0.0
    if ckpt is not None:
        learner.model.load_state_dict(ckpt["model"])
        learner.optimizer.load_state_dict(ckpt["optimizer"])
        learner.load_extra_state(ckpt.get("extra", {}))
        update, env_steps = int(ckpt["update"]), int(ckpt["env_steps"])
        episodes, wall_before = int(ckpt.get("episodes", 0)), float(ckpt.get("wall_s", 0.0))
        _set_rng_state(ckpt.get("rng"))
    (out / "config.json").write_text(json.dumps(config, indent=2, default=str) + "\n")
    writer = SummaryWriter(str(out / "tb"), purge_step=update + 1 if resume else None)
    rng = random.Random(seed + update)
    rollouts = BridgeRollouts(config, seed + 7919 * update)
    traj = AgentTrajectories(learner.rollout.rollout_length)
    target = int(train["updates"])
    ckpt_every = int(train.get("checkpoint_every", 0) or 0)
    max_wall = float(train.get("max_wall_s", 0) or 0)
    t0 = time.perf_counter()
    last: dict[str, float] = {}

    def wall() -> float:
        return wall_before + time.perf_counter() - t0

    def save(tag: bool) -> None:
        state = {
            "algorithm": name,
            "update": update,
            "env_steps": env_steps,
            "episodes": episodes,
            "wall_s": wall(),
            "model": learner.model.state_dict(),
            "optimizer": learner.optimizer.state_dict(),
            "extra": learner.extra_state(),
            "rng": _rng_state(),
            "config": copy.deepcopy(dict(config)),
            "obs_dim": table.obs_dim,
        }
        _save(ckpt_path, state)
        if tag:
            _save(out / "checkpoints" / f"ckpt-u{update:05d}-s{env_steps}.pt", state)

    t_rollout = time.perf_counter()
    steps_rollout = 0
    interrupted = False
    try:
        while update < target and not (max_wall > 0 and wall() >= max_wall):
            before = rollouts.sim_steps
            for label, summary in rollouts.step(learner, traj):
                episodes += 1
                _log_episode(writer, label, summary, update)
            env_steps += rollouts.sim_steps - before
            steps_rollout += rollouts.sim_steps - before
            if not learner.rollout.ready(traj):
                continue
            t_update = time.perf_counter()
            last = learner.update(learner.rollout.take(traj, rng))
            update += 1
            now = time.perf_counter()
            last.update(
                env_steps=float(env_steps),
                rollout_s=t_update - t_rollout,
                update_s=now - t_update,
                steps_per_s=steps_rollout / max(now - t_rollout, 1e-9),
                wall_s=wall(),
            )
            t_rollout, steps_rollout = now, 0
            for k, v in last.items():
                writer.add_scalar(f"train/{k}", v, update)
            with open(out / "history.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps({"update": update, **last}) + "\n")
            if ckpt_every > 0 and update % ckpt_every == 0 and update < target:
                save(tag=True)
    except KeyboardInterrupt:
        interrupted = True
    save(tag=True)
    writer.close()
    if interrupted:
        raise KeyboardInterrupt
    result: dict[str, Any] = {
        "algorithm": name,
        "updates": update,
        "env_steps": env_steps,
        "episodes": episodes,
        "wall_s": wall(),
        "checkpoint": str(ckpt_path),
        "stats": last,
    }
    if train.get("export_policy", True):
        try:
            meta = {"algorithm": name, "update": update, "env_steps": env_steps}
            policy = export_native(learner.model.actor, table.policy_table, meta)  # type: ignore[attr-defined]
        except ValueError:
            policy = None
        if policy is not None:
            (out / "policy.json").write_text(json.dumps(policy))
            result["policy"] = str(out / "policy.json")
    return result


def _log_episode(writer: Any, label: str, summary: Mapping[str, Any], update: int) -> None:
    """Metrics of a finished training episode (whole episode), per scenario label."""
    bn = summary.get("bottleneck") or {}
    for tag, v in (
        ("utilization", bn.get("utilization")),
        ("queue_latency_us", bn.get("queue_latency_mean_us")),
        ("jain", (summary.get("flows") or {}).get("jain")),
        ("drops_packets", (summary.get("network") or {}).get("drops_packets")),
        ("reward_per_step", summary.get("_reward_per_step")),
    ):
        if isinstance(v, (int, float)) and math.isfinite(v):
            writer.add_scalar(f"episode/{label}/{tag}", v, update)


def _rng_state() -> dict[str, Any]:
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }


def _set_rng_state(state: Mapping[str, Any] | None) -> None:
    if not state:
        return
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def train_with(
    name: str,
    defaults: Mapping[str, Any],
    make_learner: Callable[[int, Mapping[str, Any]], Learner],
    config: Mapping[str, Any] | str | os.PathLike[str] | None,
    out_dir: str | os.PathLike[str],
    resume: bool,
) -> dict[str, Any]:
    """``train_from_config`` of a trainer: resuming with ``config=None`` takes the
    checkpoint's config, otherwise ``config`` is merged over ``defaults``."""
    cfg = load_config(config, defaults)
    return run_training(name, cfg, out_dir, resume, make_learner, resume and config is None)


def train_from_config(
    config: Mapping[str, Any] | str | os.PathLike[str] | None,
    out_dir: str | os.PathLike[str],
    resume: bool = False,
) -> dict[str, Any]:
    """Trains the PPO baseline on the ccgym bridge (``ccgym train ppo --config FILE``).

    Args:
        config: a config dict, TOML path or bundled config name (``ppo-gaussian``,
            ``ppo-discrete``, ...) merged over :data:`DEFAULT_CONFIG`: tables ``[train]``,
            ``[[scenario]]``, ``[agent]``, ``[ppo]``, ``[network]``. With
            ``[agent] action = "discrete"`` the policy has the categorical head.
        out_dir: receives ``config.json``, ``tb/`` (TensorBoard), ``history.jsonl``,
            ``checkpoint.pt``, ``checkpoints/`` and ``policy.json`` (see :func:`run_training`).
        resume: continue from ``out_dir/checkpoint.pt`` (model, optimiser, update and step
            counters, RNG states; with ``config=None`` also the checkpoint's config).

    Returns:
        A dict with the number of updates, environment steps, episodes, the last update's
        statistics and the paths written.
    """
    return train_with("ppo", DEFAULT_CONFIG, make_ppo, config, out_dir, resume)


def export_checkpoint(
    path: str | os.PathLike[str], calibration_obs: Any = None, percentile: float | None = None
) -> dict[str, Any]:
    """Plug-in for ``ccgym export``: the native policy dict of a PPO checkpoint."""
    return export_checkpoint_with(path, "ppo", make_ppo, calibration_obs, percentile)


__all__ = [
    "DEFAULT_CONFIG",
    "PPO",
    "ActionSpec",
    "Actor",
    "ActorCritic",
    "AgentTrajectories",
    "BridgeAgentTable",
    "BridgeRollouts",
    "Critic",
    "PPOSettings",
    "PolicyOutput",
    "RolloutSettings",
    "Segment",
    "evaluate_gym",
    "export_checkpoint",
    "export_checkpoint_with",
    "export_native",
    "load_learner",
    "train_with",
    "seed_everything",
    "gae",
    "make_ppo",
    "merge_config",
    "load_config",
    "run_training",
    "train_from_config",
    "train_gym",
]
