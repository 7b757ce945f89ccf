"""MVFST-RL's policy network and IMPALA's V-trace loss, in plain PyTorch (no Ray).

Kept apart from :mod:`ccgym.agents.impala` (the RLlib trainer) so that evaluation, export and
the tests need PyTorch only:

* :class:`MvfstNet`: input -> FC 512 (ReLU) -> FC 512 (ReLU), concatenated with the clipped
  last reward (513) -> one LSTM layer (513 -> 513) -> policy logits and value (spec
  ``learning_cc.md`` 5.5). The policy input is the observation followed by one column, the
  reward delivered with it clipped to [-1, 1] (:func:`with_last_reward`). Without the LSTM
  (``lstm = false``, the ``mvfst-history`` comparison) the heads read the 513 features directly.
* :func:`vtrace_direct`: V-trace targets from the formula of spec 5.6, term by term (the tests'
  reference; O(T^2));
* :func:`impala_losses`: the IMPALA loss of spec 5.6 summed over T x B (torchbeast's), on
  RLlib's V-trace recursion;
* :class:`StepPolicy`: the network one decision at a time (``forward(x, h, c) -> logits,
  value, h, c``), what a training run exports with ``torch.export`` as ``policy.pt2``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

__all__ = [
    "MvfstNet",
    "StepPolicy",
    "impala_losses",
    "vtrace_direct",
    "with_last_reward",
]

REWARD_CLIP = 1.0
"""The last reward is clipped to [-REWARD_CLIP, REWARD_CLIP] before it enters the core."""


def with_last_reward(obs: np.ndarray, reward: float | np.ndarray) -> np.ndarray:
    """The policy input: ``obs`` (D or K x D) followed by the clipped last reward."""
    r = np.clip(np.asarray(reward, np.float32), -REWARD_CLIP, REWARD_CLIP)
    if obs.ndim == 1:
        return np.concatenate([obs.astype(np.float32), r.reshape(1)])
    return np.concatenate([obs.astype(np.float32), r.reshape(-1, 1)], axis=1)


class MvfstNet(nn.Module):
    """The MVFST-RL actor-critic (spec 5.5).

    Args:
        input_dim: observation width plus one (the last-reward column, the input's last).
        num_actions: logits of the policy head.
        hidden: widths of the fully connected layers (spec: [512, 512]).
        lstm: put the LSTM (width ``hidden[-1] + 1``) between the features and the heads.
    """

    def __init__(
        self,
        input_dim: int,
        num_actions: int,
        hidden: Sequence[int] = (512, 512),
        lstm: bool = True,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = input_dim - 1
        for h in hidden:
            layers += [nn.Linear(width, int(h)), nn.ReLU()]
            width = int(h)
        self.fc = nn.Sequential(*layers)
        self.core_dim = width + 1
        self.lstm = nn.LSTM(self.core_dim, self.core_dim) if lstm else None
        self.policy = nn.Linear(self.core_dim, num_actions)
        self.baseline = nn.Linear(self.core_dim, 1)

    @property
    def stateful(self) -> bool:
        """Whether the network carries an LSTM state."""
        return self.lstm is not None

    def initial_state(self, batch: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """Zero (h, c), each B x core_dim (empty for a network without LSTM)."""
        n = self.core_dim if self.lstm is not None else 0
        return torch.zeros(batch, n), torch.zeros(batch, n)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """FC layers on the observation, concatenated with the clipped last reward."""
        obs, reward = x[..., :-1], x[..., -1:]
        return torch.cat([self.fc(obs), reward.clamp(-REWARD_CLIP, REWARD_CLIP)], dim=-1)

    def core(
        self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The features the heads read: B x T x core_dim for ``x`` B x T x input_dim (batch
        first), and the LSTM state after the last step (``h``, ``c`` given back unchanged
        without LSTM)."""
        core = self.features(x)
        if self.lstm is None:
            return core, h, c
        if core.shape[1] == 1:
            h, c = self.lstm_step(core[:, 0], h, c)
            return h.unsqueeze(1), h, c
        out, (h1, c1) = self.lstm(core.transpose(0, 1), (h.unsqueeze(0), c.unsqueeze(0)))
        return out.transpose(0, 1), h1.squeeze(0), c1.squeeze(0)

    def lstm_step(
        self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of the LSTM (``nn.LSTM``'s arithmetic, gate order i, f, g, o) for B x in
        inputs. Acting is one step per call, and there ``nn.LSTM``'s CPU kernel (oneDNN) costs
        about 7x these few operations on one thread (its set-up per call dominates)."""
        assert self.lstm is not None
        lstm = self.lstm
        gates = nn.functional.linear(x, lstm.weight_ih_l0, lstm.bias_ih_l0)
        gates = gates + nn.functional.linear(h, lstm.weight_hh_l0, lstm.bias_hh_l0)
        i, f, g, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c

    def forward(
        self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``x``: B x T x input_dim (batch first), ``h``, ``c``: B x core_dim, the state
        before the first step. Returns logits (B x T x A), values (B x T) and the state after
        the last step."""
        core, h, c = self.core(x, h, c)
        return self.policy(core), self.baseline(core).squeeze(-1), h, c


class StepPolicy(nn.Module):
    """One decision at a time, for export: ``forward(x, h, c)`` with ``x`` B x input_dim
    returns (logits B x A, value B, h, c). Start with zero ``h``, ``c`` of B x
    ``state_dim`` (0 columns without LSTM) and feed back what it returns; the greedy action is
    the argmax of the logits (spec 5.5: argmax at test). The widths are also buffers, which a
    loaded exported program keeps: ``int(m.state_size)``, ``int(m.input_size)``."""

    def __init__(self, net: MvfstNet) -> None:
        super().__init__()
        self.net = net
        self.state_dim = net.core_dim if net.lstm is not None else 0
        first = next(m for m in net.fc if isinstance(m, nn.Linear))
        self.input_dim = int(first.in_features) + 1
        self.register_buffer("state_size", torch.tensor(self.state_dim))
        self.register_buffer("input_size", torch.tensor(self.input_dim))

    def forward(
        self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step for a batch of B agents."""
        logits, value, h, c = self.net(x.unsqueeze(1), h, c)
        return logits.squeeze(1), value.squeeze(1), h, c


# --------------------------------------------------------------------------------------------
# V-trace and the IMPALA loss


def vtrace_direct(
    log_rhos: np.ndarray,
    discounts: np.ndarray,
    rewards: np.ndarray,
    values: np.ndarray,
    bootstrap: np.ndarray,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """V-trace targets v_s and policy-gradient advantages, straight from the formula (spec 5.6).

    ``v_s = V(x_s) + sum_{t=s}^{T-1} (prod_{i=s}^{t-1} gamma_i c_i) rho_t delta_t`` with
    ``delta_t = r_t + gamma_t V(x_{t+1}) - V(x_t)``, ``rho_t = min(rho_bar, pi/mu)``,
    ``c_i = min(c_bar, pi/mu)``, ``V(x_T)`` = ``bootstrap``; the advantage is
    ``rho_s (r_s + gamma_s v_{s+1} - V(x_s))`` with ``v_T = V(x_T)``. ``gamma_t`` is the
    discount of step t (0 after a terminal step), so ``gamma^{t-s}`` of the formula is the
    product of the discounts. Arrays are T x B (``bootstrap``: B), float64 inside.
    """
    lr, g, r, v = (np.asarray(a, np.float64) for a in (log_rhos, discounts, rewards, values))
    n = lr.shape[0]
    ratio = np.exp(lr)
    rho = np.minimum(rho_bar, ratio)
    cs = np.minimum(c_bar, ratio)
    v_next = np.concatenate([v[1:], np.asarray(bootstrap, np.float64)[None]], axis=0)
    delta = r + g * v_next - v
    vs = np.empty_like(v)
    for s in range(n):
        total = np.zeros_like(v[s])
        weight = np.ones_like(v[s])  # prod_{i=s}^{t-1} gamma_i c_i
        for t in range(s, n):
            total += weight * rho[t] * delta[t]
            weight = weight * g[t] * cs[t]
        vs[s] = v[s] + total
    vs_next = np.concatenate([vs[1:], np.asarray(bootstrap, np.float64)[None]], axis=0)
    adv = rho * (r + g * vs_next - v)
    return vs, adv


def impala_losses(
    logits: torch.Tensor,
    actions: torch.Tensor,
    behaviour_logp: torch.Tensor,
    values: torch.Tensor,
    bootstrap: torch.Tensor,
    rewards: torch.Tensor,
    discounts: torch.Tensor,
    mask: torch.Tensor,
    *,
    baseline_cost: float = 0.5,
    entropy_cost: float = 0.01,
    rho_bar: float = 1.0,
    pg_rho_bar: float = 1.0,
) -> dict[str, torch.Tensor]:
    """IMPALA's loss (spec 5.6), **summed** over the T x B steps where ``mask`` is 1.

    Time-major inputs: ``logits`` T x B x A, the rest T x B (``bootstrap``: B). V-trace is
    RLlib's recursion (``vtrace_torch``; the tests check it against :func:`vtrace_direct`).

    Returns ``loss`` = pg + baseline_cost x 0.5 sum (v_s - V)^2 + entropy_cost x sum pi log pi,
    its parts, the V-trace targets ``vs`` and the policy-gradient advantages.
    """
    from ray.rllib.algorithms.impala.torch.vtrace_torch_v2 import vtrace_torch

    logp_all = torch.log_softmax(logits, dim=-1)
    target_logp = logp_all.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    vs, pg_adv = vtrace_torch(
        target_action_log_probs=target_logp.detach(),
        behaviour_action_log_probs=behaviour_logp,
        discounts=discounts,
        rewards=rewards,
        values=values.detach(),
        bootstrap_values=bootstrap.detach(),
        clip_rho_threshold=rho_bar,
        clip_pg_rho_threshold=pg_rho_bar,
    )
    pg = -torch.sum(target_logp * pg_adv * mask)
    baseline = 0.5 * torch.sum((vs - values).pow(2) * mask)
    neg_entropy = torch.sum((logp_all.exp() * logp_all).sum(-1) * mask)
    loss = pg + baseline_cost * baseline + entropy_cost * neg_entropy
    return {
        "loss": loss,
        "pg_loss": pg,
        "baseline_loss": baseline,
        "entropy": -neg_entropy / mask.sum().clamp(min=1.0),
        "vs": vs,
        "pg_advantages": pg_adv,
    }


def net_from_config(input_dim: int, num_actions: int, network: Mapping[str, Any]) -> MvfstNet:
    """:class:`MvfstNet` from a ``[network]`` table (``hidden``, ``lstm``)."""
    return MvfstNet(
        input_dim,
        num_actions,
        hidden=[int(h) for h in network.get("hidden", [512, 512])],
        lstm=bool(network.get("lstm", True)),
    )
