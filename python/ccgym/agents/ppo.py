"""PPO baseline for learned congestion control (spec ``learning_cc.md`` section 7.2).

CleanRL style: PPO's algorithm, top to bottom (the loop, the rollouts over the agent bridge,
per-agent segments, the networks, checkpoints and logs are :mod:`ccgym.train`'s):

1. the configuration (defaults below, overridden by ``ccgym/configs/ppo-*.toml``);
2. the networks: separate actor and critic MLPs (:mod:`ccgym.train.networks`; Gaussian or
   discrete head);
3. :class:`PPO`, the learner: GAE, clipped surrogate, value loss, entropy bonus, epochs of
   minibatches over complete per-agent segments;
4. :func:`train_from_config` and :func:`export_checkpoint`, the ``ccgym train`` / ``ccgym
   export`` plug-ins.

Aurora (:mod:`ccgym.agents.aurora`) is this learner with Aurora's settings.

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

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

from ccgym.train import loop
from ccgym.train.config import ConfigSource
from ccgym.train.networks import ActionSpec, Actor, Critic, action_spec, actor_policy
from ccgym.train.rollout import AgentTable
from ccgym.train.trajectories import (
    RolloutSettings,
    Segment,
    gae,
    segment_arrays,
)

ALGORITHM = "ppo"

# --------------------------------------------------------------------------------------------
# 1. Configuration
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
    # computed in Python (ccgym.train.rollout.PYTHON_REWARDS).
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


# --------------------------------------------------------------------------------------------
# 2. Networks
# --------------------------------------------------------------------------------------------


class ActorCritic(nn.Module):
    """Separate actor and critic networks."""

    def __init__(self, obs_dim: int, action: ActionSpec, net: Mapping[str, Any]) -> None:
        super().__init__()
        self.actor = Actor(obs_dim, action, net)
        self.critic = Critic(obs_dim, net)


# --------------------------------------------------------------------------------------------
# 3. The learner
# --------------------------------------------------------------------------------------------


class PPO(loop.SegmentLearner):
    """The PPO learner: acts on batches of observations and updates on complete segments."""

    progress_keys = ("reward_mean", "entropy", "approx_kl")

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
        self.segment_length = rollout.rollout_length
        self.device = torch.device(device)
        self.model = ActorCritic(obs_dim, action, net).to(self.device)
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=settings.lr, eps=settings.adam_eps
        )

    def update(self, segments: list[Segment]) -> dict[str, float]:
        """PPO epochs over the transitions of ``segments``."""
        s = self.settings
        obs, act, old_logp = (
            torch.as_tensor(x, device=self.device) for x in segment_arrays(segments)
        )
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

    def native_policy(self, config: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
        """The deterministic actor (Gaussian mean or argmax) as a native policy."""
        return actor_policy(self.model.actor, AgentTable(config["agent"]).policy_table, meta)


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
# 4. Plug-ins of ``ccgym train`` and ``ccgym export``
# --------------------------------------------------------------------------------------------


def train_from_config(
    config: ConfigSource | None,
    out_dir: str | os.PathLike[str],
    resume: bool = False,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Trains the PPO baseline on the ccgym bridge (``ccgym train ppo --config FILE``); see
    :func:`ccgym.train.loop.train` for the run folder, ``resume`` and the result.

    Args:
        config: a config dict, TOML path or bundled config name (``ppo-gaussian``,
            ``ppo-discrete``, ...) merged over :data:`DEFAULT_CONFIG` (on resume, over the
            checkpoint's config): tables ``[train]``, ``[[scenario]]``, ``[agent]``,
            ``[ppo]``, ``[network]``. With ``[agent] action = "discrete"`` the policy has the
            categorical head.
        out_dir: the run folder.
        resume: continue from ``out_dir/checkpoint.pt``.
        progress: show a progress bar (default: when stderr is a terminal).
    """
    return loop.train(
        ALGORITHM, DEFAULT_CONFIG, make_ppo, config, out_dir, resume=resume, progress=progress
    )


def export_checkpoint(
    path: str | os.PathLike[str], calibration_obs: Any = None, percentile: float | None = None
) -> dict[str, Any]:
    """Plug-in for ``ccgym export``: the native policy dict of a PPO checkpoint."""
    return loop.export_checkpoint(path, ALGORITHM, make_ppo, calibration_obs, percentile)


__all__ = [
    "ALGORITHM",
    "DEFAULT_CONFIG",
    "PPO",
    "ActorCritic",
    "PPOSettings",
    "export_checkpoint",
    "make_ppo",
    "train_from_config",
]
