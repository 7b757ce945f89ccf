"""ADPG: analytic deterministic policy gradient for RL-CC (spec ``learning_cc.md`` section 1).

CleanRL style: ADPG's algorithm, top to bottom (the loop, the rollouts over the agent bridge,
checkpoints and logs are :mod:`ccgym.train`'s):

1. the configuration (defaults below, overridden by a TOML file such as
   ``ccgym/configs/adpg-default.toml``); the training scenarios are many-to-one incasts
   (``[env]`` and ``[[scenarios]]``, :func:`ccgym.train.rollout.many_to_one_scenarios`);
2. the shared deterministic policy :class:`Policy` (bias-free MLP [12, 12], ReLU, tanh output,
   orthogonal init with gain sqrt 2; the optional LSTM of the paper era is left out: the public
   config's MLP with history 2 is what is implemented);
3. :func:`adpg_loss`: discounted *average* reward-to-go ``D_t``, reward loss
   ``c_r (1/T) sum_t a_t D_t`` and action-smoothness regulariser ``c_a``;
4. :class:`ADPG`, the learner: a rollout is complete after 1024 events (decisions) for updates
   1-49, then when every live agent has >= 15 transitions, capped at 8000 events; per-agent
   sequences (the signal of action ``a_t`` is the ADPG error ``d`` measured at the agent's next
   decision, which the bridge delivers as that decision's reward; an agent's last observation
   waits for its signal across the update); one Adam step (lr 0.01, eps 1e-5) with
   element-wise gradient clipping at 0.5 per update;
5. :func:`train_from_config` and :func:`export_checkpoint`, the ``ccgym train`` / ``ccgym
   export`` plug-ins.

Spec constants are the public-code values ([C]); quirks of the public code that are *not*
copied: every flow's observation carries its own last multiplier (the bridge does this), and
reward-less transitions never enter the loss.

Run it with ``ccgym train adpg --config ccgym/configs/adpg-default.toml --out runs/adpg``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any

import numpy as np
import torch
from torch import nn

from ccgym import policies
from ccgym.train import loop
from ccgym.train.config import ConfigSource
from ccgym.train.rollout import many_to_one_scenarios
from ccgym.train.trajectories import AgentTrajectories, PolicyOutput, average_reward_to_go

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
        # [X] CleanRL option: lr falls linearly to 0 at the last update (a resume with more
        # updates goes on from the rate it had reached: anneal_fraction)
        "anneal_lr": False,
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
"""Defaults of ``ccgym train adpg``; a config file's tables are merged into a copy of these."""


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
# 3. The ADPG loss
# --------------------------------------------------------------------------------------------


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
# 4. The learner
# --------------------------------------------------------------------------------------------


def anneal_fraction(update: int, total: int, anchor: tuple[int, float] = (1, 1.0)) -> float:
    """The fraction of ``train.lr`` that ``anneal_lr`` gives update ``update`` (from 1) of a
    run of ``total`` updates: linear, ``anchor[1]`` at update ``anchor[0]``, 0 after update
    ``total``. A run's anchor is ``(1, 1.0)`` (``1 - (update - 1) / total``); a resume that
    changes ``total`` anchors at the checkpoint's last update and its rate, so that the rate
    keeps falling."""
    first, frac = anchor
    if first <= 1 and frac == 1.0:
        return 1.0 - (update - 1.0) / total
    return frac * (total + 1 - update) / max(total + 1 - first, 1)


class ADPG(loop.Learner):
    """ADPG's rollout schedule and update around :class:`Policy` and :func:`adpg_loss`."""

    segment_length = None  # an agent's sequence is everything since the last update
    progress_keys = ("mean_abs_D", "mean_abs_delta", "mean_action")

    def __init__(self, obs_dim: int, config: Mapping[str, Any]) -> None:
        self.config = config
        self.settings = config["train"]
        self.policy = Policy(obs_dim, self.settings["hidden"])
        self.model = self.policy
        self.optimizer = torch.optim.Adam(
            self.policy.parameters(), lr=float(self.settings["lr"]), eps=self.settings["adam_eps"]
        )
        self.weights = self.policy.numpy_weights()
        self.lr_anchor: tuple[int, float] = (1, 1.0)

    def extra_state(self) -> dict[str, Any]:
        """The ``anneal_lr`` schedule's anchor (see :func:`anneal_fraction`)."""
        return {"lr_anchor": list(self.lr_anchor)}

    def restore(self, checkpoint: Mapping[str, Any]) -> None:
        """Loads a checkpoint's model and optimiser (and the rollout's numpy weights). A
        resume that changes ``train.updates`` re-anchors the ``anneal_lr`` schedule: it goes on
        from the rate of the checkpoint's last update down to 0 after the new last update,
        instead of restarting over the new total (a jump up of the rate)."""
        super().restore(checkpoint)
        self.weights = self.policy.numpy_weights()
        saved = (checkpoint.get("extra") or {}).get("lr_anchor", (1, 1.0))
        anchor = (int(saved[0]), float(saved[1]))
        done = int(checkpoint["update"])
        saved_total = int(checkpoint["config"]["train"]["updates"])
        if int(self.settings["updates"]) != saved_total and done >= 1:
            anchor = (done, anneal_fraction(done, saved_total, anchor))
        self.lr_anchor = anchor

    def act(self, obs: np.ndarray, deterministic: bool = False) -> PolicyOutput:
        """The deterministic policy's actions (numpy forward pass; the loss recomputes them)."""
        a = numpy_act(self.weights, obs)
        zero = np.zeros(len(a), np.float32)
        return PolicyOutput(env_actions=a, raw=a, logp=zero, value=zero)

    def ready(self, traj: AgentTrajectories, update: int, decisions: int) -> bool:
        """Whether the rollout of update number ``update`` (from 1) is complete [C]."""
        s = self.settings
        if update < int(s["warmup_updates"]):
            return decisions >= int(s["warmup_length"])
        if decisions >= int(s["max_step_size"]):
            return True
        return decisions > 0 and traj.every_live_agent_has(int(s["rollout_length"]))

    def learn(
        self, traj: AgentTrajectories, update: int, rng: np.random.Generator
    ) -> dict[str, float]:
        """One ADPG step on every agent's transitions since the last update (on-policy)."""
        s = self.settings
        obs, deltas = agent_sequences(traj)
        if s.get("loss_batch", 0) and len(obs) > int(s["loss_batch"]):
            pick = rng.choice(len(obs), int(s["loss_batch"]), replace=False)
            obs, deltas = [obs[i] for i in pick], [deltas[i] for i in pick]
        t_cap = int(s["max_batch_size"])
        obs = [o[:t_cap] for o in obs]
        deltas = [d[:t_cap] for d in deltas]
        clip = float(s.get("signal_clip", 0.0) or 0.0)
        if clip > 0:
            deltas = [np.clip(d, -clip, clip) for d in deltas]
        loss, stats = adpg_loss(
            self.policy,
            obs,
            deltas,
            float(s["gamma"]),
            float(s["reward_coef"]),
            float(s["action_coef"]),
        )
        if s.get("anneal_lr", False):
            frac = anneal_fraction(update, int(s["updates"]), self.lr_anchor)
            for group in self.optimizer.param_groups:
                group["lr"] = frac * float(s["lr"])
        self.optimizer.zero_grad()
        if stats["agents"] > 0:
            loss.backward()
            nn.utils.clip_grad_value_(self.policy.parameters(), float(s["clip_value"]))
            self.optimizer.step()
        self.weights = self.policy.numpy_weights()
        stats["lr"] = float(self.optimizer.param_groups[0]["lr"])
        return stats

    def native_policy(self, config: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
        """The policy as a native file; its meta counts decisions as ``events`` (the public
        code's word, kept so that the bundled policy's file does not change)."""
        return export_policy(
            self.policy, config, meta={"update": meta["update"], "events": meta["decisions"]}
        )


def agent_sequences(traj: AgentTrajectories) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Every agent's transitions since the last update, agents in order of appearance:
    observations ``o_t`` (T x obs_dim) and signals ``delta_t`` (the reward delivered with the
    agent's next entry). A live agent keeps its latest observation, whose signal comes after
    the update."""
    traj.flush()
    segments = sorted(traj.take(), key=attrgetter("first_seen"))
    obs = [np.asarray(seg.obs, dtype=np.float32) for seg in segments]
    deltas = [np.asarray(seg.rewards, dtype=np.float32) for seg in segments]
    return obs, deltas


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


# --------------------------------------------------------------------------------------------
# 5. Plug-ins of ``ccgym train`` and ``ccgym export``
# --------------------------------------------------------------------------------------------


def train_from_config(
    config: ConfigSource | None,
    out_dir: str | os.PathLike[str],
    resume: bool = False,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Train ADPG as configured (``ccgym train adpg --config FILE``); see
    :func:`ccgym.train.loop.train` for the run folder, ``resume`` and the result.

    Args:
        config: a config dict, a TOML path or a bundled config name (``adpg-default``),
            merged over :data:`DEFAULT_CONFIG` (on resume, over the checkpoint's config).
        out_dir: the run folder.
        resume: continue from ``out_dir/checkpoint.pt``.
        progress: show a progress bar (default: when stderr is a terminal).
    """
    return loop.train(
        ALGORITHM,
        DEFAULT_CONFIG,
        ADPG,
        config,
        out_dir,
        resume=resume,
        progress=progress,
        scenarios=many_to_one_scenarios,
    )


def export_checkpoint(
    path: str | os.PathLike[str],
    calibration_obs: Any = None,
    percentile: float | None = None,
) -> dict[str, Any]:
    """Plug-in for ``ccgym export``: the native policy dict of a checkpoint."""
    return loop.export_checkpoint(path, ALGORITHM, ADPG, calibration_obs, percentile)


__all__ = [
    "ADPG",
    "ALGORITHM",
    "DEFAULT_CONFIG",
    "Policy",
    "adpg_loss",
    "agent_sequences",
    "anneal_fraction",
    "export_checkpoint",
    "export_policy",
    "numpy_act",
    "train_from_config",
]
