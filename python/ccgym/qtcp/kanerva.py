"""Q-learning over generalisation-based Kanerva coding: QTCP's learner, in one file.

QTCP (Li, Zhou, Chowdhury, Meleis, IEEE TNSE 2019) learns which per-ACK window rule to hold for
the next decision interval with online Q-learning; its three-dimensional continuous state is
coded by a set of *prototypes*, each with a receptive field, and the coding adapts while it
learns (shared/specs/learning_cc.md section 3.4). Pure numpy; no PyTorch.

Coding. A state ``s`` (QTCP: EWMA inter-send time and EWMA inter-ACK time over the min RTT, EWMA
RTT over the min RTT) is first scaled into the unit cube (:func:`scale_state`: the two intervals
on a log scale, the RTT ratio's queueing part, ratio - 1, on a log scale too, all clipped).
Prototype ``p`` has a centre ``c_p`` and a radius ``r_p``; it is *active* for ``x`` when every
coordinate is within ``r_p`` of the centre (Chebyshev distance). If none is active (a pruned
region), the one nearest relative to its radius stands in, so that every state has a value.

Value. ``Q(s, a) = sum_{p active} theta[p, a] / |active(s)|``. TD update (Q-learning):
``delta = r + gamma max_a' Q(s', a') - Q(s, a)``, then ``theta[p, a] += alpha delta`` for each
active ``p`` (which moves ``Q(s, a)`` by ``alpha delta``).

Adaptation ("generalisation-based"). Each prototype counts the signs of the TD errors it took
part in. One whose updates disagree too often (the majority sign holds for fewer than ``beta``
= 80% of them, after at least ``split_min_updates``) generalises badly: it spans states whose
values differ. It is replaced by its ``2^d`` children of half its radius, which tile its field
and inherit its weights. The number of prototypes is capped (``max_prototypes``); when a split
does not fit, prototypes never activated during ``prune_age`` updates are deleted to make room
(rarely visited regions keep a coarse value through the nearest-prototype fallback). A
prototype does not split below ``min_radius``.

Schedules (QTCP's published constants). Learning rate ``alpha = lr * lr_decay ** t`` and
exploration ``epsilon = exploration * exploration_decay ** t``, ``t`` = seconds of the
learner's experience (simulated time since its first step, summed over the runs it took part
in; QTCP: 0.95 x 0.995^t and 0.1 x 0.9995^t; QTCP-AIMD's paper gives
``lr`` 0.1). Exploration is epsilon-greedy. Learning is online: one update per decision, no
episodes.

State save/restore: :meth:`KanervaQLearner.state_dict` holds the prototypes, weights, counters,
clock and the random generator's state; :meth:`save` / :meth:`load` write it to a ``.npz`` file
so that a later run continues where this one stopped.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from itertools import product
from typing import Any

import numpy as np

__all__ = ["KanervaConfig", "KanervaQLearner", "scale_state"]


@dataclass(frozen=True)
class KanervaConfig:
    """Hyper-parameters of :class:`KanervaQLearner` (defaults: QTCP's, learning_cc.md 3.4)."""

    lr: float = 0.95
    """Initial learning rate alpha (QTCP 0.95; QTCP-AIMD 0.1)."""
    lr_decay: float = 0.995
    """alpha is multiplied by this per second of the learner's experience."""
    exploration: float = 0.1
    """Initial epsilon of epsilon-greedy."""
    exploration_decay: float = 0.9995
    """epsilon is multiplied by this per second."""
    discount: float = 0.9
    """gamma."""
    beta: float = 0.8
    """Generalisation tolerance: a prototype whose TD-error signs agree for fewer than this
    fraction of its updates is split."""
    grid: int = 4
    """Initial prototypes per dimension (a uniform grid of ``grid ** dims``)."""
    max_prototypes: int = 300
    """Prototype budget."""
    min_radius: float = 1.0 / 32.0
    """No split below this radius (in the unit cube)."""
    split_min_updates: int = 30
    """Updates a prototype must have taken part in before it may be judged."""
    prune_age: int = 2000
    """Updates after which a never-activated prototype may be deleted to make room."""

    def __post_init__(self) -> None:
        checks = {
            "lr": 0.0 < self.lr <= 1.0,
            "lr_decay": 0.0 < self.lr_decay <= 1.0,
            "exploration": 0.0 <= self.exploration <= 1.0,
            "exploration_decay": 0.0 < self.exploration_decay <= 1.0,
            "discount": 0.0 <= self.discount < 1.0,
            "beta": 0.5 <= self.beta <= 1.0,
            "grid": self.grid >= 1,
            "min_radius": self.min_radius > 0.0,
            "split_min_updates": self.split_min_updates >= 1,
            "prune_age": self.prune_age >= 1,
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"KanervaConfig.{name} = {getattr(self, name)!r} is out of range")


# State scaling: (log10 low, log10 high) of the two intervals over the min RTT (1e-5: 100,000
# packets per min RTT; 1: one packet per min RTT) and of the queueing delay over the min RTT
# (RTT ratio - 1; 1e-3: a tenth of a packet time on a 400-packet path, 1: the RTT doubled). A
# linear ratio over [1, 2] put a whole 100-packet buffer at 120 ms (ratio 1 to 1.25) inside one
# initial prototype, so the learner could not tell an empty queue from a full one (docs/qtcp.md).
GAP_LOG10_RANGE = (-5.0, 0.0)
QUEUE_LOG10_RANGE = (-3.0, 0.0)

# The per-prototype arrays (one row each), in save order.
_PER_PROTOTYPE = ("centres", "radii", "theta", "n_updates", "n_positive", "visits", "born", "ids")


def scale_state(obs: np.ndarray) -> np.ndarray:
    """QTCP's raw state rows ``(send gap / min RTT, ACK gap / min RTT, RTT / min RTT)`` (K x 3
    or 3) in the unit cube: the intervals on a log10 scale over :data:`GAP_LOG10_RANGE` (an
    interval of 0, before two packets were seen, maps to the low end), the RTT ratio's queueing
    part ``ratio - 1`` on a log10 scale over :data:`QUEUE_LOG10_RANGE` (no queueing maps to the
    low end); everything clipped to [0, 1]."""
    obs = np.asarray(obs, dtype=np.float64)
    x = np.empty_like(obs)
    lo, hi = GAP_LOG10_RANGE
    gaps = np.log10(np.maximum(obs[..., :2], 10.0**lo))
    x[..., :2] = (gaps - lo) / (hi - lo)
    lo, hi = QUEUE_LOG10_RANGE
    queueing = np.log10(np.maximum(obs[..., 2] - 1.0, 10.0**lo))
    x[..., 2] = (queueing - lo) / (hi - lo)
    return np.clip(x, 0.0, 1.0)


class KanervaQLearner:
    """Online Q-learning over adaptive Kanerva prototypes (see the module docstring).

    Args:
        n_actions: number of actions.
        dims: dimensions of the (scaled) state.
        config: hyper-parameters.
        seed: seed of the learner's own random generator (exploration).
    """

    def __init__(
        self, n_actions: int, dims: int = 3, config: KanervaConfig | None = None, seed: int = 0
    ) -> None:
        if n_actions < 1 or dims < 1:
            raise ValueError("KanervaQLearner needs at least one action and one dimension")
        self.config = config or KanervaConfig()
        self.n_actions = n_actions
        self.dims = dims
        g = self.config.grid
        axis = (np.arange(g) + 0.5) / g
        self.centres = np.array(list(product(axis, repeat=dims)), dtype=np.float64)
        # Radius of one grid spacing: each state activates up to 2^dims prototypes, which is
        # what lets a coarse coding generalise between neighbouring states.
        self.radii = np.full(len(self.centres), 1.0 / g)
        self.theta = np.zeros((len(self.centres), n_actions))
        self._fresh_stats(len(self.centres))
        self.rng = np.random.default_rng(seed)
        self.updates = 0
        """TD updates so far."""
        self.splits = 0
        """Prototypes split so far."""
        self.pruned = 0
        """Prototypes deleted so far."""
        self.elapsed_s = 0.0
        """Seconds of experience: simulated time since the learner's first step, summed over the
        runs it took part in (the schedules' clock)."""
        self.last_s: float | None = None
        """Simulated time of its last step (a time earlier than this starts a new run)."""

    def _fresh_stats(self, n: int) -> None:
        self.n_updates = np.zeros(n, np.int64)
        self.n_positive = np.zeros(n, np.int64)
        self.visits = np.zeros(n, np.int64)
        self.born = np.zeros(n, np.int64)
        self.ids = np.arange(n, dtype=np.int64)
        self.next_id = n

    # --------------------------------------------------------------------------------------
    # schedules

    def _elapsed(self, now_s: float) -> float:
        # A restored learner keeps its clock: a new run's time starts from 0 again, which
        # adds nothing.
        if self.last_s is not None and now_s > self.last_s:
            self.elapsed_s += now_s - self.last_s
        self.last_s = now_s
        return self.elapsed_s

    def learning_rate(self, now_s: float) -> float:
        """alpha at simulated time ``now_s``."""
        c = self.config
        return c.lr * c.lr_decay ** self._elapsed(now_s)

    def epsilon(self, now_s: float) -> float:
        """Exploration probability at simulated time ``now_s``."""
        c = self.config
        return c.exploration * c.exploration_decay ** self._elapsed(now_s)

    # --------------------------------------------------------------------------------------
    # coding and values

    def active(self, x: np.ndarray) -> np.ndarray:
        """Indices of the prototypes whose receptive field holds ``x`` (scaled state); the
        nearest one (relative to its radius) when none does."""
        d = np.max(np.abs(self.centres - x), axis=1)
        idx = np.flatnonzero(d <= self.radii)
        return idx if len(idx) else np.array([int(np.argmin(d / self.radii))])

    def q_values(self, x: np.ndarray) -> np.ndarray:
        """Q(x, a) for every action."""
        return self.theta[self.active(x)].mean(axis=0)

    def act(self, x: np.ndarray, now_s: float) -> int:
        """Epsilon-greedy action for scaled state ``x`` (ties: the lowest index)."""
        if self.rng.random() < self.epsilon(now_s):
            return int(self.rng.integers(self.n_actions))
        return int(np.argmax(self.q_values(x)))

    def greedy(self, x: np.ndarray) -> int:
        """The greedy action (no exploration)."""
        return int(np.argmax(self.q_values(x)))

    # --------------------------------------------------------------------------------------
    # learning

    def update(self, x: np.ndarray, a: int, r: float, x_next: np.ndarray, now_s: float) -> float:
        """One Q-learning step on the transition ``(x, a, r, x_next)``; returns the TD error."""
        act = self.active(x)
        q = self.theta[act, a].mean()
        target = r + self.config.discount * float(self.q_values(x_next).max())
        delta = target - q
        self.theta[act, a] += self.learning_rate(now_s) * delta
        self.updates += 1
        self.visits[act] += 1
        if delta != 0.0:
            self.n_updates[act] += 1
            self.n_positive[act] += delta > 0.0
        self._adapt(act)
        return float(delta)

    def _agreement(self, p: np.ndarray) -> np.ndarray:
        n = self.n_updates[p]
        pos = self.n_positive[p]
        return np.maximum(pos, n - pos) / np.maximum(n, 1)

    def _adapt(self, act: np.ndarray) -> None:
        """Splits the active prototypes that generalise badly, within the budget."""
        c = self.config
        judged = act[self.n_updates[act] >= c.split_min_updates]
        bad = judged[(self._agreement(judged) < c.beta) & (self.radii[judged] / 2 >= c.min_radius)]
        extra = 2**self.dims - 1
        for ident in self.ids[bad].tolist():
            # Splits and deletions move the others: find each one by its identity.
            p = int(np.flatnonzero(self.ids == ident)[0])
            if len(self.centres) + extra > c.max_prototypes and not self._make_room(extra, p):
                # No room: restart its judgement rather than testing it at every update.
                self.n_updates[p] = self.n_positive[p] = 0
                continue
            self._split(int(np.flatnonzero(self.ids == ident)[0]))

    def _make_room(self, extra: int, keep: int) -> bool:
        """Deletes up to the needed number of prototypes never activated in ``prune_age``
        updates (not ``keep``); returns whether the split now fits."""
        need = len(self.centres) + extra - self.config.max_prototypes
        stale = np.flatnonzero(
            (self.visits == 0) & (self.updates - self.born >= self.config.prune_age)
        )
        stale = stale[stale != keep][:need]
        if len(stale) < need:
            return False
        self._delete(stale)
        return True

    def _delete(self, idx: np.ndarray) -> None:
        keep = np.ones(len(self.centres), bool)
        keep[idx] = False
        for name in _PER_PROTOTYPE:
            setattr(self, name, getattr(self, name)[keep])
        self.pruned += len(idx)

    def _split(self, p: int) -> None:
        r = self.radii[p] / 2
        offsets = np.array(list(product((-r, r), repeat=self.dims)))
        centres = self.centres[p] + offsets
        theta = np.repeat(self.theta[p : p + 1], len(offsets), axis=0)
        self._delete(np.array([p]))
        self.pruned -= 1  # a split is not a deletion
        n = len(offsets)
        self.centres = np.vstack([self.centres, centres])
        self.radii = np.concatenate([self.radii, np.full(n, r)])
        self.theta = np.vstack([self.theta, theta])
        self.n_updates = np.concatenate([self.n_updates, np.zeros(n, np.int64)])
        self.n_positive = np.concatenate([self.n_positive, np.zeros(n, np.int64)])
        self.visits = np.concatenate([self.visits, np.zeros(n, np.int64)])
        self.born = np.concatenate([self.born, np.full(n, self.updates, np.int64)])
        self.ids = np.concatenate([self.ids, self.next_id + np.arange(n, dtype=np.int64)])
        self.next_id += n
        self.splits += 1

    # --------------------------------------------------------------------------------------
    # save and restore

    def state_dict(self) -> dict[str, np.ndarray]:
        """Everything needed to continue learning: prototypes, weights, counters, clock,
        configuration and the random generator's state (as arrays, for ``np.savez``)."""
        meta = {
            "n_actions": self.n_actions,
            "dims": self.dims,
            "config": asdict(self.config),
            "updates": self.updates,
            "splits": self.splits,
            "pruned": self.pruned,
            "elapsed_s": self.elapsed_s,
            "last_s": self.last_s,
            "next_id": self.next_id,
            "rng": self.rng.bit_generator.state,
        }
        state = {name: getattr(self, name) for name in _PER_PROTOTYPE}
        state["meta"] = np.array(json.dumps(meta))
        return state

    @classmethod
    def from_state_dict(cls, state: Any) -> KanervaQLearner:
        """A learner restored from :meth:`state_dict` (or an opened ``.npz`` of it)."""
        meta = json.loads(str(state["meta"]))
        known = {f.name for f in fields(KanervaConfig)}
        config = KanervaConfig(**{k: v for k, v in meta["config"].items() if k in known})
        learner = cls(int(meta["n_actions"]), int(meta["dims"]), config)
        for name in _PER_PROTOTYPE:
            setattr(learner, name, np.array(state[name]))
        learner.next_id = int(meta["next_id"])
        learner.updates = int(meta["updates"])
        learner.splits = int(meta["splits"])
        learner.pruned = int(meta["pruned"])
        learner.elapsed_s = float(meta["elapsed_s"])
        learner.last_s = meta["last_s"]
        learner.rng.bit_generator.state = meta["rng"]
        return learner

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes :meth:`state_dict` to ``path`` (``.npz``)."""
        np.savez(path, **self.state_dict())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> KanervaQLearner:
        """A learner saved with :meth:`save`."""
        with np.load(path) as z:
            return cls.from_state_dict(z)

    def __repr__(self) -> str:
        return (
            f"KanervaQLearner({self.n_actions} actions, {len(self.centres)} prototypes, "
            f"{self.updates} updates, {self.splits} splits)"
        )
