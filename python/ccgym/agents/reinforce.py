"""REINFORCE baseline for learned congestion control (spec ``learning_cc.md`` section 7.3).

CleanRL style: REINFORCE's algorithm is in this file; the networks, the per-agent segments over
the agent bridge and the training loop are :mod:`ccgym.train`'s, the configuration is PPO's
(:mod:`ccgym.agents.ppo`) with a ``[reinforce]`` table instead of ``[ppo]``.

Settings (spec 7.3 is tagged [X]: a reconstruction of the paper's baseline, not checked code):

* the same observation, reward and actor network as the PPO baseline (section 7.2): features
  ``[action, cnp_ratio, nack_ratio]`` x history 2, the "general" reward, actor MLP [32, 16]
  ReLU without bias plus a 16 -> 16 linear layer, Gaussian (tanh multiplier) or discrete
  (6 multipliers, ``[agent] action = "discrete"``) head;
* per-agent segments of L = 64 transitions; G_t = sum_k gamma^k r_{t+k} *within* the segment
  (no bootstrap: REINFORCE is a Monte-Carlo method), gamma = 0.99;
* loss ``-(1/N) sum log pi(a_t | o_t) (G_t - b_t) - c_H H[pi]``, c_H = 0.01, with the baseline
  b either a running mean of G (``baseline = "mean"``, the default: an exponential moving
  average over updates, updated after the gradient step so that it does not depend on the
  batch it is subtracted from), a learned value network V(o) (``baseline = "value"``, trained
  with ``vf_coef * 0.5 mean (G - V)^2``), or none;
* Adam 2.5e-4 (eps 1e-5), gradient-norm clip 0.5; one gradient step per update, on the
  complete segments available once ``rollouts_per_update`` (4) are complete.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

from ccgym.agents.ppo import DEFAULT_CONFIG as PPO_DEFAULT_CONFIG
from ccgym.train import loop
from ccgym.train.config import ConfigSource, merge_config
from ccgym.train.networks import ActionSpec, Actor, Critic, action_spec, actor_policy
from ccgym.train.rollout import AgentTable
from ccgym.train.trajectories import (
    RolloutSettings,
    Segment,
    discounted_returns,
    segment_arrays,
)

ALGORITHM = "reinforce"

DEFAULT_CONFIG: dict[str, Any] = merge_config(
    {k: v for k, v in PPO_DEFAULT_CONFIG.items() if k != "ppo"},
    {
        "train": {"algorithm": "reinforce"},
        "reinforce": {
            "gamma": 0.99,
            "ent_coef": 0.01,
            "baseline": "mean",  # "mean" (running mean of G), "value" (learned V(o)) or "none"
            "baseline_momentum": 0.9,  # "mean": b <- m b + (1 - m) mean(G of the batch)
            "vf_coef": 0.5,  # "value": times 0.5 mean (G - V)^2
            "lr": 2.5e-4,
            "adam_eps": 1e-5,
            "max_grad_norm": 0.5,
            "rollout_length": 64,
            "rollouts_per_update": 4,
            "max_rollouts_per_update": 64,
            "batch_steps": 0,
        },
    },
)
"""Defaults of ``ccgym train reinforce``: PPO's scenarios, [agent] and [network] tables, plus a
``[reinforce]`` table."""


@dataclass
class ReinforceSettings:
    """REINFORCE hyper-parameters (the ``[reinforce]`` table)."""

    gamma: float = 0.99
    ent_coef: float = 0.01
    baseline: str = "mean"
    baseline_momentum: float = 0.9
    vf_coef: float = 0.5
    lr: float = 2.5e-4
    adam_eps: float = 1e-5
    max_grad_norm: float = 0.5

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ReinforceSettings:
        """Picks the REINFORCE keys out of a table (rollout keys are ignored)."""
        s = cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})
        if s.baseline not in ("mean", "value", "none"):
            raise ValueError(
                f'reinforce.baseline: use "mean", "value" or "none", not {s.baseline!r}'
            )
        return s


class PolicyWithBaseline(nn.Module):
    """The actor, and a value network when the baseline is learned."""

    def __init__(
        self, obs_dim: int, action: ActionSpec, net: Mapping[str, Any], value: bool
    ) -> None:
        super().__init__()
        self.actor = Actor(obs_dim, action, net)
        self.critic = Critic(obs_dim, net) if value else None


class Reinforce(loop.SegmentLearner):
    """The REINFORCE learner: acts on batches of observations, updates on complete segments."""

    progress_keys = ("reward_mean", "return_mean", "entropy")

    def __init__(
        self,
        obs_dim: int,
        action: ActionSpec,
        net: Mapping[str, Any],
        settings: ReinforceSettings,
        rollout: RolloutSettings,
        device: str | torch.device = "cpu",
    ) -> None:
        self.settings = settings
        self.rollout = rollout
        self.segment_length = rollout.rollout_length
        self.device = torch.device(device)
        self.model = PolicyWithBaseline(obs_dim, action, net, settings.baseline == "value")
        self.model.to(self.device)
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=settings.lr, eps=settings.adam_eps
        )
        self.running_mean: float | None = None

    def update(self, segments: list[Segment]) -> dict[str, float]:
        """One policy-gradient step on the transitions of ``segments``."""
        s = self.settings
        obs_np, act_np, _ = segment_arrays(segments)
        obs = torch.as_tensor(obs_np, device=self.device)
        act = torch.as_tensor(act_np, device=self.device)
        g_np = np.concatenate([discounted_returns(seg, s.gamma) for seg in segments])
        g = torch.as_tensor(g_np, dtype=torch.float32, device=self.device)
        dist = self.model.actor.distribution(obs)
        a = act.long() if isinstance(dist, Categorical) else act
        logp = dist.log_prob(a)
        entropy = dist.entropy().mean()
        value_loss = torch.zeros((), device=self.device)
        if s.baseline == "value":
            assert self.model.critic is not None
            v = self.model.critic(obs)
            baseline = v.detach()
            value_loss = 0.5 * (v - g).pow(2).mean()
        elif s.baseline == "mean":
            if self.running_mean is None:
                self.running_mean = float(g_np.mean())
            baseline = torch.full_like(g, self.running_mean)
        else:
            baseline = torch.zeros_like(g)
        pg = -(logp * (g - baseline)).mean()
        loss = pg - s.ent_coef * entropy + s.vf_coef * value_loss
        self.optimizer.zero_grad()
        loss.backward()
        limit = s.max_grad_norm if s.max_grad_norm > 0 else float("inf")
        grad_norm = nn.utils.clip_grad_norm_(self.model.parameters(), limit)
        self.optimizer.step()
        if s.baseline == "mean":
            m = s.baseline_momentum
            self.running_mean = m * float(self.running_mean) + (1 - m) * float(g_np.mean())
        return {
            "policy_loss": pg.item(),
            "value_loss": value_loss.item(),
            "entropy": entropy.item(),
            "loss": loss.item(),
            "grad_norm": float(grad_norm),
            "return_mean": float(g_np.mean()),
            "baseline_mean": float(baseline.mean()),
            "samples": float(len(g_np)),
            "segments": float(len(segments)),
            "reward_mean": float(np.mean([r for seg in segments for r in seg.rewards])),
        }

    def extra_state(self) -> dict[str, Any]:
        """The running-mean baseline."""
        return {"running_mean": self.running_mean}

    def restore(self, checkpoint: Mapping[str, Any]) -> None:
        """Loads a checkpoint's model, optimiser and running-mean baseline."""
        super().restore(checkpoint)
        self.running_mean = checkpoint["extra"]["running_mean"]

    def native_policy(self, config: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
        """The deterministic actor (Gaussian mean or argmax) as a native policy."""
        return actor_policy(self.model.actor, AgentTable(config["agent"]).policy_table, meta)


def make_reinforce(
    obs_dim: int, config: Mapping[str, Any], action: ActionSpec | None = None
) -> Reinforce:
    """A :class:`Reinforce` learner from a merged config."""
    algo = config["reinforce"]
    return Reinforce(
        obs_dim,
        action or action_spec(config["agent"]),
        config["network"],
        ReinforceSettings.from_dict(algo),
        RolloutSettings.from_dict(algo),
        config["train"].get("device", "cpu"),
    )


def train_from_config(
    config: ConfigSource | None,
    out_dir: str | os.PathLike[str],
    resume: bool = False,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Trains the REINFORCE baseline on the ccgym bridge (``ccgym train reinforce``); see
    :func:`ccgym.train.loop.train` for the run folder, ``resume`` and the result.

    Args:
        config: a config dict, TOML path or bundled config name merged over
            :data:`DEFAULT_CONFIG` (on resume, over the checkpoint's config): tables
            ``[train]``, ``[[scenario]]``, ``[agent]``, ``[reinforce]``, ``[network]``.
        out_dir: the run folder.
        resume: continue from ``out_dir/checkpoint.pt`` (with the running-mean baseline).
        progress: show a progress bar (default: when stderr is a terminal).
    """
    return loop.train(
        ALGORITHM, DEFAULT_CONFIG, make_reinforce, config, out_dir, resume=resume, progress=progress
    )


def export_checkpoint(
    path: str | os.PathLike[str], calibration_obs: Any = None, percentile: float | None = None
) -> dict[str, Any]:
    """Plug-in for ``ccgym export``: the native policy dict of a REINFORCE checkpoint."""
    return loop.export_checkpoint(path, ALGORITHM, make_reinforce, calibration_obs, percentile)


__all__ = [
    "ALGORITHM",
    "DEFAULT_CONFIG",
    "Reinforce",
    "ReinforceSettings",
    "export_checkpoint",
    "make_reinforce",
    "train_from_config",
]
