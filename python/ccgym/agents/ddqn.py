"""Double DQN for ACC's switch-queue agents (spec ``learning_cc.md`` 2.5; DQN baseline 7.4).

CleanRL style: the whole algorithm in one file, top to bottom:

1. :class:`DDQNSettings`, the hyper-parameters (spec 2.5's defaults);
2. :class:`QNetwork`, one MLP shared by every agent (one output per action);
3. :class:`ReplayBuffer`, one global uniform replay that every agent's transitions go into;
4. :class:`DDQN`, the learner: epsilon-greedy acting, Double-DQN targets, Huber loss, target
   network;
5. the queue-agent driver: :func:`ecn_profiles` (ACC's template grid as a scenario's
   ``agent.ecn_profiles``) and :func:`run_queue_episode` (one simulation whose switch-queue
   agents all act through one learner and all feed its replay).

Choices (``[X]`` in the spec, written down here):

* Q-network: MLP, 2 hidden layers of 64 ReLU, a linear output per action (template index).
* Target: ``y = r + gamma (1 - terminal) Q_target(s', argmax_a' Q_online(s', a'))`` (online
  network picks, target network evaluates); gamma 0.9 (ECN acts within a few RTTs). A run's end
  is a truncation, not a terminal state: the last transition is bootstrapped.
* Huber loss (``smooth_l1``, delta 1) on the taken action's Q; Adam, gradient-norm clip 10.
* Target network: a hard copy every ``target_every`` learner steps (1000, spec 2.5) by default;
  ``tau`` in (0, 1) switches to Polyak averaging ``target <- tau online + (1 - tau) target``
  after every learner step instead.
* Exploration: epsilon-greedy from ``eps_start`` to ``eps_end``, ``linear`` over
  ``eps_decay_steps`` agent decisions or ``exponential`` with that time constant
  (``eps_end + (eps_start - eps_end) exp(-t / eps_decay_steps)``, the DQN baseline's 7.4 form).
  The count is of decisions (all agents), not learner steps.
* Replay: uniform over the last ``buffer_size`` transitions of all agents; learning starts after
  ``learning_starts`` transitions, then ``updates_per_step`` gradient steps follow every
  ``train_every`` transitions pushed (so more agents mean more updates per simulated interval).

Queue agents: one agent per data queue listed in the scenario's ``agent.queues``; its action is
an index into :data:`ccgym.acc.templates.GRID` (35 templates, the static presets SECN0/1/2 at
indices 0-2), applied as ``agent.ecn_profiles`` = the grid scaled to the ports' rate with
:func:`ccgym.acc.templates.scaled` (the run-time profiles are absolute bytes). The reward is the
core's queue-agent reward ``reward_scale x (tx_rate - reward_beta x queue)`` (docs/env.md).

The driver pairs each queue agent's entries in order: an entry's reward is the outcome of that
agent's previous action, and its observation is both that transition's s' and the next decision's
s. With ``policy_delay`` at or above ``queue_interval`` an agent skips requests while its action
is pending, so a transition then spans more than one interval.

Around it (issue 18): ``ccgym train ddqn`` (section 6, the loop in :mod:`ccgym.acc.training`:
a seeded mixture of ACC workloads and loads, checkpoints, resume, export), the online phase
(:func:`ccgym.acc.training.policy_learner` with ``online``: epsilon <= 0.01, a lower learning
rate), the ACC driver (:mod:`ccgym.acc.driver`: an agent on every switch port, the grid scaled to
each port's rate by ``agent.ecn_reference_rate``), the bundled ``acc-default`` policy and the
``acc`` suite. Not here: native (Rust) inference of the Q-network (another part of issue 18) and
host agents for the 7.4 DQN baseline (the learner is generic over ``(obs_dim, n_actions)``; only
the queue-agent driver is written).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ccgym.acc.templates import GRID, EcnTemplate, scaled

ALGORITHM = "ddqn"

PROGRESS_UNIT = "episode"
"""What ``ccgym train ddqn``'s plain progress lines count (:func:`ccgym._progress.plain_lines`)."""

# --------------------------------------------------------------------------------------------
# 1. Settings
# --------------------------------------------------------------------------------------------


@dataclass
class DDQNSettings:
    """DDQN hyper-parameters; the defaults are spec 2.5's (offline phase)."""

    hidden: Sequence[int] = field(default_factory=lambda: (64, 64))
    gamma: float = 0.9
    lr: float = 1e-3
    adam_eps: float = 1e-8
    max_grad_norm: float = 10.0
    buffer_size: int = 100_000
    batch_size: int = 128
    learning_starts: int = 1_000
    train_every: int = 1
    updates_per_step: int = 1
    target_every: int = 1_000
    tau: float = 1.0  # 1 = hard copies every target_every steps; (0, 1) = Polyak every step
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_decay: str = "linear"  # "linear" or "exponential"
    eps_decay_steps: int = 100_000
    seed: int = 1

    def __post_init__(self) -> None:
        if self.eps_decay not in ("linear", "exponential"):
            raise ValueError(f"eps_decay must be 'linear' or 'exponential', not {self.eps_decay!r}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], not {self.tau!r}")
        if not 0.0 <= self.eps_end <= self.eps_start <= 1.0:
            raise ValueError("epsilon needs 0 <= eps_end <= eps_start <= 1")
        for name in ("buffer_size", "batch_size", "target_every", "eps_decay_steps", "train_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DDQNSettings:
        """Picks the known keys out of a table (a ``[ddqn]`` config table)."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


# --------------------------------------------------------------------------------------------
# 2. The Q-network
# --------------------------------------------------------------------------------------------


class QNetwork(nn.Module):
    """MLP from an observation to one Q-value per action; shared by all agents."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: Sequence[int]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = obs_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, n_actions))
        self.net = nn.Sequential(*layers)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Q-values, shape (batch, n_actions)."""
        return self.net(obs)


# --------------------------------------------------------------------------------------------
# 3. The global replay
# --------------------------------------------------------------------------------------------


class ReplayBuffer:
    """Ring buffer of (s, a, r, s', terminal) from every agent; uniform sampling."""

    def __init__(self, obs_dim: int, size: int) -> None:
        self.size = size
        self.obs = np.zeros((size, obs_dim), np.float32)
        self.next_obs = np.zeros((size, obs_dim), np.float32)
        self.actions = np.zeros(size, np.int64)
        self.rewards = np.zeros(size, np.float32)
        self.terminal = np.zeros(size, np.float32)
        self.pos = 0
        self.full = False

    def __len__(self) -> int:
        return self.size if self.full else self.pos

    def add(
        self,
        obs: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        next_obs: np.ndarray,
        terminal: np.ndarray,
    ) -> None:
        """Appends a batch of transitions (one row per agent), overwriting the oldest."""
        for i in range(len(actions)):
            p = self.pos
            self.obs[p] = obs[i]
            self.next_obs[p] = next_obs[i]
            self.actions[p] = actions[i]
            self.rewards[p] = rewards[i]
            self.terminal[p] = terminal[i]
            self.pos = (p + 1) % self.size
            self.full = self.full or self.pos == 0

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        """``n`` transitions drawn uniformly with replacement."""
        idx = rng.integers(0, len(self), n)
        return (
            self.obs[idx],
            self.actions[idx],
            self.rewards[idx],
            self.next_obs[idx],
            self.terminal[idx],
        )


# --------------------------------------------------------------------------------------------
# 4. The learner
# --------------------------------------------------------------------------------------------


class DDQN:
    """Double DQN over any number of agents that share one Q-network and one replay."""

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        settings: DDQNSettings | None = None,
        device: str | torch.device = "cpu",
    ) -> None:
        self.s = settings or DDQNSettings()
        self.obs_dim, self.n_actions = obs_dim, n_actions
        self.device = torch.device(device)
        torch.manual_seed(self.s.seed)
        self.rng = np.random.default_rng(self.s.seed)
        self.q = QNetwork(obs_dim, n_actions, self.s.hidden).to(self.device)
        self.q_target = copy.deepcopy(self.q)
        self.q_target.requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.q.parameters(), lr=self.s.lr, eps=self.s.adam_eps)
        self.replay = ReplayBuffer(obs_dim, self.s.buffer_size)
        self.decisions = 0  # agent decisions so far (drives epsilon)
        self.learner_steps = 0
        self.pending = 0  # transitions since the last due update
        self.last_loss = float("nan")

    def epsilon(self) -> float:
        """The exploration rate at the current decision count."""
        s, t = self.s, self.decisions
        if s.eps_decay == "linear":
            frac = min(t / s.eps_decay_steps, 1.0)
            return s.eps_start + frac * (s.eps_end - s.eps_start)
        return s.eps_end + (s.eps_start - s.eps_end) * math.exp(-t / s.eps_decay_steps)

    def set_learning_rate(self, lr: float) -> None:
        """Changes Adam's rate (the online phase learns more slowly than the offline one)."""
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    @torch.no_grad()
    def greedy(self, obs: np.ndarray) -> np.ndarray:
        """argmax_a Q(obs, a), one per row."""
        if len(obs) == 0:
            return np.zeros(0, np.int64)
        q = self.q(torch.as_tensor(obs, dtype=torch.float32, device=self.device))
        return q.argmax(dim=1).cpu().numpy()

    def act(self, obs: np.ndarray, explore: bool = True) -> np.ndarray:
        """Epsilon-greedy actions for a batch of agents; each row counts as one decision."""
        actions = self.greedy(obs)
        if explore and len(actions):
            eps = self.epsilon()
            random = self.rng.random(len(actions)) < eps
            actions[random] = self.rng.integers(0, self.n_actions, int(random.sum()))
            self.decisions += len(actions)
        return actions

    def observe(
        self,
        obs: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        next_obs: np.ndarray,
        terminal: np.ndarray,
    ) -> None:
        """Pushes transitions into the global replay and learns when due."""
        self.replay.add(obs, actions, rewards, next_obs, terminal)
        if len(self.replay) < max(self.s.learning_starts, self.s.batch_size):
            return
        # Replay ratio: updates_per_step gradient steps per train_every transitions.
        self.pending += len(actions)
        due = self.pending // self.s.train_every
        self.pending -= due * self.s.train_every
        for _ in range(due * self.s.updates_per_step):
            self.update()

    def update(self) -> float:
        """One gradient step on a uniform minibatch; returns the Huber loss."""
        s = self.s
        obs, act, rew, nxt, term = (
            torch.as_tensor(x, device=self.device)
            for x in self.replay.sample(s.batch_size, self.rng)
        )
        with torch.no_grad():
            # Double DQN: the online network chooses a', the target network values it.
            best = self.q(nxt).argmax(dim=1, keepdim=True)
            next_q = self.q_target(nxt).gather(1, best).squeeze(1)
            target = rew + s.gamma * (1.0 - term) * next_q
        q = self.q(obs).gather(1, act.unsqueeze(1)).squeeze(1)
        loss = F.smooth_l1_loss(q, target)
        self.optimizer.zero_grad()
        loss.backward()
        if s.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(self.q.parameters(), s.max_grad_norm)
        self.optimizer.step()
        self.learner_steps += 1
        if s.tau < 1.0:
            with torch.no_grad():
                for p_t, p in zip(self.q_target.parameters(), self.q.parameters(), strict=True):
                    p_t.lerp_(p, s.tau)
        elif self.learner_steps % s.target_every == 0:
            self.q_target.load_state_dict(self.q.state_dict())
        self.last_loss = loss.item()
        return self.last_loss

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: networks, optimizer, counters."""
        return {
            "q": self.q.state_dict(),
            "q_target": self.q_target.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "decisions": self.decisions,
            "learner_steps": self.learner_steps,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict` (the replay is not saved)."""
        self.q.load_state_dict(state["q"])
        self.q_target.load_state_dict(state["q_target"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.decisions = int(state["decisions"])
        self.learner_steps = int(state["learner_steps"])


# --------------------------------------------------------------------------------------------
# 5. Switch-queue agents
# --------------------------------------------------------------------------------------------


def ecn_profiles(
    port_rate_bps: float, templates: Sequence[EcnTemplate] = GRID
) -> list[dict[str, Any]]:
    """``agent.ecn_profiles`` for ports of ``port_rate_bps``: profile i is ``templates[i]``
    (ACC's grid by default, so an action is a grid index) scaled from the grid's 25 Gb/s."""
    out = []
    for t in templates:
        s = scaled(t, port_rate_bps)
        out.append({"kmin": s.kmin, "kmax": s.kmax, "pmax": s.pmax})
    return out


@dataclass
class EpisodeStats:
    """What one queue-agent episode did."""

    decisions: int = 0
    transitions: int = 0
    reward_sum: float = 0.0
    actions: list[int] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    """The run's summary (with ``finish``)."""
    series: dict[str, Any] | None = None
    """The run's tables (with ``finish``)."""
    action_times: list[float] = field(default_factory=list)
    """Simulated time (s) of each decision in ``actions`` (with ``finish``)."""
    action_agents: list[int] = field(default_factory=list)
    """Queue agent of each decision in ``actions`` (with ``finish``)."""

    @property
    def mean_reward(self) -> float:
        """Mean reward per transition (per agent interval)."""
        return self.reward_sum / max(self.transitions, 1)


def run_queue_episode(
    scenario: Mapping[str, Any],
    learner: DDQN,
    train: bool = True,
    base_dir: str | Path = ".",
    *,
    flow_policy: Callable[[np.ndarray], np.ndarray] | None = None,
    finish: bool = False,
) -> EpisodeStats:
    """Runs ``scenario`` (with ``agent.queues`` and ``agent.ecn_profiles``) to its end, every
    queue agent acting through ``learner``: epsilon-greedy and learning when ``train``, greedy
    and frozen otherwise. Flow agents are refused unless ``flow_policy`` (observations ->
    actions) answers them (learned hosts under learned switches). With ``finish`` the stats
    carry the run's summary and tables and the time and agent of every decision."""
    from ccgym import _sim
    from ccgym.runner import scenario_json

    sim = _sim.Simulation(scenario_json(dict(scenario)), str(base_dir))
    if sim.queue_obs_dim != learner.obs_dim:
        raise ValueError(
            f"the scenario's queue observation has {sim.queue_obs_dim} values, "
            f"the learner expects {learner.obs_dim}"
        )
    n_agents = len(sim.queue_agent_targets())
    last_obs = np.zeros((n_agents, learner.obs_dim), np.float32)
    last_act = np.full(n_agents, -1, np.int64)
    stats = EpisodeStats()
    over = False
    while not over:
        over, batch = sim.agent_step()
        flow_actions = np.zeros(0, np.float32)
        if len(batch["flow"]):
            if flow_policy is None:
                raise ValueError(
                    "run_queue_episode drives queue agents only; the scenario has flow agents"
                )
            ended_flows = np.asarray(batch["done"], bool) | np.asarray(batch["truncated"], bool)
            flow_actions = np.zeros(len(batch["flow"]), np.float32)
            if (~ended_flows).any():
                obs_flows = np.asarray(batch["obs"], np.float32)[~ended_flows]
                flow_actions[~ended_flows] = np.asarray(flow_policy(obs_flows), np.float32)
        q = batch["queue"]
        agents = np.asarray(q["agent"], np.int64)
        obs = np.asarray(q["obs"], np.float32)
        ended = np.asarray(q["done"], bool) | np.asarray(q["truncated"], bool)
        # The entry's reward is the outcome of the agent's previous action.
        had = last_act[agents] >= 0
        if had.any():
            a = agents[had]
            rew = np.asarray(q["reward"], np.float32)[had]
            stats.transitions += int(had.sum())
            stats.reward_sum += float(rew.sum())
            if train:
                # Truncation (end of the run) is not terminal; a queue agent is never done early.
                term = np.asarray(q["done"], np.float32)[had]
                learner.observe(last_obs[a], last_act[a], rew, obs[had], term)
        # Ended entries are answered (with 0) but take no decision and count none.
        actions = np.zeros(len(agents), np.int64)
        actions[~ended] = learner.act(obs[~ended], explore=train)
        last_obs[agents] = obs
        last_act[agents] = np.where(ended, -1, actions)
        stats.decisions += int((~ended).sum())
        stats.actions += actions[~ended].tolist()
        if finish:
            stats.action_times += np.asarray(q["time_s"], float)[~ended].tolist()
            stats.action_agents += agents[~ended].tolist()
        if len(agents) or len(flow_actions):
            sim.agent_act(np.concatenate([flow_actions, actions.astype(np.float32)]))
    if finish:
        import json

        summary, series = sim.finish()
        stats.summary = json.loads(summary)
        stats.series = dict(series)
    return stats


# --------------------------------------------------------------------------------------------
# 6. Plug-ins of ``ccgym train`` and ``ccgym export`` (the ACC training loop: ccgym.acc.training)
# --------------------------------------------------------------------------------------------


def train_from_config(
    config: Any,
    out_dir: str | Path,
    resume: bool = False,
    progress: bool | None = None,
) -> dict[str, Any]:
    """``ccgym train ddqn --config FILE --out DIR``: ACC's queue agents trained offline over a
    mixture of workloads and loads (:func:`ccgym.acc.training.train`)."""
    from ccgym.acc.training import train

    return train(config, out_dir, resume=resume, progress=progress)


def export_checkpoint(path: str | Path, calibration_obs: Any = None) -> dict[str, Any]:
    """``ccgym export``: a ddqn checkpoint as a ``ccgym-mlp`` policy (argmax over outputs)."""
    from ccgym.acc.training import export_policy, obs_dim
    from ccgym.train.loop import read_checkpoint

    ckpt = read_checkpoint(path)
    config = ckpt["config"]
    learner = DDQN(obs_dim(config["agent"]), len(GRID), DDQNSettings.from_dict(config["ddqn"]))
    learner.load_state_dict(ckpt["model"])
    meta = {"episodes": ckpt["episodes"], "learner_steps": ckpt["update"]}
    meta["decisions"] = ckpt["decisions"]
    policy = export_policy(learner, config, meta)
    if calibration_obs is not None:
        from ccgym import policies

        policy = policies.with_calibration(policy, calibration_obs)
    return policy


__all__ = [
    "ALGORITHM",
    "DDQN",
    "DDQNSettings",
    "EpisodeStats",
    "QNetwork",
    "ReplayBuffer",
    "ecn_profiles",
    "export_checkpoint",
    "run_queue_episode",
    "train_from_config",
]
