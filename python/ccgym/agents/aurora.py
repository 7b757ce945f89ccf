"""Aurora (PCC-RL, Jay et al., ICML 2019) ported to the datacenter (spec ``learning_cc.md`` s. 4).

Aurora is a per-flow rate controller trained with PPO. What makes it Aurora is its state,
action, reward and networks; the learner is :class:`ccgym.agents.ppo.PPO` with Aurora's
(stable-baselines PPO1) settings. CleanRL style: everything Aurora-specific is here.

State (4.1): per monitor interval (MI) the latency gradient (d RTT / d t within the MI, s/s),
the latency ratio (mean RTT of the MI / the smallest per-MI mean RTT so far; 0 for an MI
without RTT samples) and the send ratio (bytes sent / bytes acknowledged; 1 when undefined or
above 1000), with a history of 10 MIs, oldest first: 30 inputs, no normalisation. The bridge
fills the history of a new flow by repeating its first row (Aurora pads with about (0, 0, 1)).

Monitor interval: Aurora uses MI = 0.5 x the RTT measured in the previous MI. The bridge's
interval trigger has a fixed MI on a grid shared by all flows; we use **10 us**: the base RTT
of the ADPG scenarios is about 8.2-9 us, and with the queue that ECN starts to mark at
(150 KiB = 12.3 us at 100 Gb/s) the loaded RTT is about 20 us, so 10 us = 0.5 x a loaded RTT
(and 1.1-1.2 x the base RTT). Shorter MIs leave too few ACK RTT samples per flow for the latency
gradient once a few flows share the link (a flow at 1/16 of 100 Gb/s gets about 6 packets per
10 us); longer ones react slower than the queue builds.

Action (4.2): an unbounded Gaussian sample a used as is; rate <- rate (1 + alpha a) for a >= 0,
rate / (1 - alpha a) for a < 0, alpha = 0.025 (the paper's value; the public code's default is
0.05). The deterministic policy (the mean) is used at test time.

Reward (4.3): per MI ``10 throughput[packets/s] - 1000 latency[s] - 2000 loss`` with 1500-byte
packets (the bridge's ``reward = "aurora"``), times ``reward_scale``. Aurora multiplies by
0.001 on links of 100-500 packets/s, giving rewards of a few units. At 100 Gb/s a flow at line
rate delivers 8.3 M packets/s, so the throughput term is up to 8.3e7; ``reward_scale = 1e-7``
brings it back to a few units (the scaled reward is about the delivered rate in M packets/s).
In these units the latency term (1000 x 20 us = 0.02, i.e. 2e-9 after scaling) and the loss term
(at most 2e-4 after scaling) are negligible: taken literally, Aurora's reward is a throughput
reward in a datacenter. That is the faithful port; see ``docs/baselines.md``.

Learner (4.5): PPO1 with ``timesteps_per_actorbatch`` = 8192 (here: an update every 8192
transitions over all flows, with every open per-agent segment closed and bootstrapped, i.e.
on-policy batches but for the action per flow in flight at the update), ``optim_batchsize``
2048 (4 minibatches), 4 epochs, Adam 1e-3 (eps 1e-5), clip 0.2, entropy 0.01, GAE lambda
0.95, gamma 0.99, advantages standardised per batch, value loss ``mean (V - R)^2`` with weight 1
(``vf_coef`` = 2 in the 0.5-MSE convention of :class:`~ccgym.agents.ppo.PPO`), no gradient
clipping. Networks: separate policy and value
MLPs [32, 16] with tanh and biases (orthogonal init, gain sqrt 2; policy mean gain 0.01), and a
learned state-independent log-std (init 0). Per-agent segments are cut at 400 transitions (the
length of an Aurora training episode) and bootstrapped.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from ccgym.agents.ppo import PPO, make_ppo
from ccgym.train import loop
from ccgym.train.config import ConfigSource
from ccgym.train.networks import ActionSpec

ALGORITHM = "aurora"

MONITOR_INTERVAL = "10us"
"""Aurora's monitor interval at 100 Gb/s (0.5 x a loaded datacenter RTT; see the module doc)."""

REWARD_SCALE = 1e-7
"""Aurora reward factor at 100 Gb/s: line rate (8.3e7 unscaled) becomes about 8.3."""

DEFAULT_CONFIG: dict[str, Any] = {
    "train": {
        "algorithm": "aurora",
        "seed": 1,
        # 3.94 M steps in the paper (6 x 1600 x 410) / 8192 per update = 480 updates.
        "updates": 480,
        "episode": "20ms",
        "envs_per_scenario": 1,
        "device": "cpu",
        "torch_threads": 1,
        "checkpoint_every": 20,
        "max_wall_s": 0,  # stop (and save) after this much wall time; 0 = no limit
        "export_policy": True,
    },
    # Aurora trains on one sender over a random link; the datacenter port trains on a single
    # flow and on small many-to-one incasts (the ADPG training set), from the bundled scenarios.
    "scenario": [
        {"label": "single-1", "name": "adpg-m2o-2", "overrides": ["topology.hosts=2"]},
        {"label": "m2o-2x1", "name": "adpg-m2o-2"},
        {"label": "m2o-4x1", "name": "adpg-m2o-16", "overrides": ["topology.hosts=5"]},
        {"label": "m2o-8x1", "name": "adpg-m2o-16", "overrides": ["topology.hosts=9"]},
    ],
    "agent": {
        "trigger": "interval",
        "interval": MONITOR_INTERVAL,
        "features": ["latency_gradient", "latency_ratio", "send_ratio"],
        "history": 10,
        "reward": "aurora",
        "reward_scale": REWARD_SCALE,
        "action": "aurora",
        "aurora_alpha": 0.025,
    },
    "ppo": {
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip": 0.2,
        "ent_coef": 0.01,
        "vf_coef": 2.0,  # PPO1: mean (V - R)^2 with weight 1
        "lr": 1e-3,
        "adam_eps": 1e-5,
        "max_grad_norm": 0.0,  # PPO1 does not clip gradients
        "epochs": 4,
        "minibatches": 4,  # 8192 / 2048
        "norm_adv": True,
        "rollout_length": 400,
        "rollouts_per_update": 1,
        "max_rollouts_per_update": 1_000_000,
        "batch_steps": 8192,
    },
    "network": {
        "hidden": [32, 16],
        "activation": "tanh",
        "bias": True,
        "actor_out_layer": False,
        "log_std": "param",
        "init_log_std": 0.0,
        "log_std_min": -20.0,
        "log_std_max": 2.0,
        "hidden_gain": math.sqrt(2.0),
        "mean_gain": 0.01,
        "logits_gain": 0.01,
        "value_gain": 1.0,
    },
}
"""Defaults of ``ccgym train aurora``; a config file's tables are merged into a copy."""


def make_aurora(obs_dim: int, config: Mapping[str, Any]) -> PPO:
    """Aurora's learner: PPO with Aurora's networks and an unbounded Gaussian action."""
    if config["agent"].get("action") != "aurora":
        raise ValueError('Aurora needs [agent] action = "aurora"')
    return make_ppo(obs_dim, config, ActionSpec("identity"))


def train_from_config(
    config: ConfigSource | None,
    out_dir: str | os.PathLike[str],
    resume: bool = False,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Trains Aurora on the ccgym bridge (``ccgym train aurora --config FILE``); see
    :func:`ccgym.train.loop.train` for the run folder, ``resume`` and the result.

    Args:
        config: a config dict, TOML path or bundled config name merged over
            :data:`DEFAULT_CONFIG` (on resume, over the checkpoint's config): tables
            ``[train]``, ``[[scenario]]``, ``[agent]``, ``[ppo]`` (the learner), ``[network]``.
        out_dir: the run folder.
        resume: continue from ``out_dir/checkpoint.pt``.
        progress: show a progress bar (default: when stderr is a terminal).
    """
    return loop.train(
        ALGORITHM, DEFAULT_CONFIG, make_aurora, config, out_dir, resume=resume, progress=progress
    )


def export_checkpoint(
    path: str | os.PathLike[str], calibration_obs: Any = None, percentile: float | None = None
) -> dict[str, Any]:
    """Plug-in for ``ccgym export``: the native policy dict of an Aurora checkpoint (the
    Gaussian mean; Aurora's action map applies it to the rate)."""
    return loop.export_checkpoint(path, ALGORITHM, make_aurora, calibration_obs, percentile)


__all__ = [
    "ALGORITHM",
    "DEFAULT_CONFIG",
    "MONITOR_INTERVAL",
    "REWARD_SCALE",
    "export_checkpoint",
    "make_aurora",
    "train_from_config",
]
