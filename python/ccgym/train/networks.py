"""Networks of the stochastic-policy learners (PPO, REINFORCE, Aurora) and native export.

* :func:`mlp`: hidden layers as a ``[network]`` table describes them (orthogonal init);
* :class:`ActionSpec` / :func:`action_spec`: the policy head an ``[agent] action`` implies;
* :class:`Actor` (categorical or Gaussian head) and :class:`Critic` (scalar value);
* :func:`policy_step`: one sampled (or deterministic) forward pass as a
  :class:`~ccgym.train.trajectories.PolicyOutput`;
* :func:`actor_policy`: the deterministic actor as a native ``ccgym-mlp`` policy
  (:mod:`ccgym.policies`), which the simulator evaluates without Python.

ADPG's deterministic policy has its own network (:class:`ccgym.agents.adpg.Policy`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, Normal

from ccgym import policies
from ccgym.agent_defaults import AGENT_DEFAULTS
from ccgym.train.trajectories import PolicyOutput

__all__ = [
    "ActionSpec",
    "Actor",
    "Critic",
    "action_spec",
    "actor_policy",
    "layer_init",
    "mlp",
    "policy_step",
]


def layer_init(layer: nn.Linear, gain: float) -> nn.Linear:
    """Orthogonal weights with ``gain``, zero bias (the CleanRL / ADPG initialisation)."""
    nn.init.orthogonal_(layer.weight, gain)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)
    return layer


def _activation(name: str) -> type[nn.Module]:
    return {"relu": nn.ReLU, "tanh": nn.Tanh}[name]


def mlp(in_dim: int, net: Mapping[str, Any], out_layer: bool) -> tuple[nn.Sequential, int]:
    """Hidden layers of ``net`` (``hidden`` widths, ``activation``, ``bias``, ``hidden_gain``),
    plus a same-width linear layer without activation if ``out_layer``; returns the layers and
    their output width."""
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


def action_spec(agent: Mapping[str, Any]) -> ActionSpec:
    """The policy head implied by the ``[agent]`` table's ``action``."""
    kind = agent.get("action", AGENT_DEFAULTS["action"])
    if kind == "discrete":
        return ActionSpec("discrete", n=len(agent.get("discrete", AGENT_DEFAULTS["discrete"])))
    if kind == "multiplier":
        return ActionSpec("tanh")
    if kind == "aurora":
        return ActionSpec("identity")
    raise ValueError(
        f'agent.action = "{kind}": these learners support multiplier, discrete, aurora'
    )


class Actor(nn.Module):
    """Policy network: MLP features, then a categorical or Gaussian head.

    ``[network]`` keys: the :func:`mlp` keys, ``actor_out_layer``, ``log_std`` (``"state"``:
    linear in the features; ``"param"``: a learned constant from ``init_log_std``), clamped to
    [``log_std_min``, ``log_std_max``]; init gains ``mean_gain`` and ``logits_gain``.
    """

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


class Critic(nn.Module):
    """Value network: MLP features, then a scalar linear output."""

    def __init__(self, obs_dim: int, net: Mapping[str, Any]) -> None:
        super().__init__()
        self.body, width = mlp(obs_dim, net, False)
        self.out = layer_init(nn.Linear(width, 1), net["value_gain"])

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """V(obs), shape (batch,)."""
        return self.out(self.body(obs)).squeeze(-1)


def policy_step(
    actor: Actor,
    critic: Critic | None,
    obs: np.ndarray,
    deterministic: bool,
    device: torch.device,
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


def actor_policy(
    actor: Actor, agent_table: Mapping[str, Any], meta: Mapping[str, Any]
) -> dict[str, Any]:
    """The deterministic policy of ``actor`` as a native ``ccgym-mlp`` policy (float32): the
    body's layers, then the mean (or logits) layer; tanh output for the multiplier head (the
    native core takes the argmax of several outputs). ``meta.agent`` is ``agent_table`` (the
    :attr:`~ccgym.train.rollout.AgentTable.policy_table` to evaluate it with).

    Raises:
        ValueError: an action scale other than 1 (the native format cannot express it).
    """
    if actor.action.scale != 1.0:
        raise ValueError("native export needs an action scale of 1")
    layers = policies.module_layers(actor.body)
    head = actor.logits if actor.action.discrete else actor.mean
    layers += policies.module_layers(head)
    output = "tanh" if actor.action.kind == "tanh" else "none"
    table = {k: v for k, v in agent_table.items() if k not in ("policy", "precision")}
    return policies.mlp_policy(layers, output, meta={**meta, "agent": table})
