"""HOPASS's slow layer: online search for the class shares that maximise the total utility.

Following the paper's text (shared/specs/learning_cc.md section 6.4b, which overrides the
section 6.3 reconstruction): time runs in equal slots, and a control cycle is K exploration
slots (K = number of classes) and one decision slot.

* Exploration slot ``k``: class ``k``'s share is raised by ``delta`` and every other class's
  lowered by ``delta / (K - 1)`` (shares always sum to 1); the slot's per-class rates are
  measured.
* Decision slot: the best exploration direction is taken, with a step proportional to its
  utility gain and capped at ``step_cap``, only if its utility beats that of the previous
  decision (the allocation measured in the last decision slot); otherwise the allocation
  stays. The decision slot then runs the (new) allocation and measures it: that is the utility
  the next cycle must beat.

Choices where the paper is silent (named parameters of :class:`SlowLayerConfig`):

* The step along the winning direction is ``step_cap * gain / spread`` in share units: the
  utility gain over the previous decision, normalised by the spread of the cycle's utilities
  (largest minus smallest over the K probes and the previous decision). That makes it
  independent of the utilities' units, and it shrinks by itself near the optimum: far from it
  the previous decision lies between the probes and the step is a good part of the cap; near
  it the probes' curvature dominates the spread and the gain is small against it. (A factor
  fixed at the first move, with a Vivace-style amplifier, was tried: the first cycle's gain,
  far from the optimum, made every later step too small, and the amplifier overshot.)
* The probe ``delta`` halves (down to ``delta_min``) after a cycle without a move and doubles
  (up to ``delta_max``) after a move as long as the cap: coarse probes find the region
  quickly, fine ones settle near the optimum instead of hovering a probe width away.
* The controller keeps the measured *rates* of each slot and evaluates the utilities when it
  decides, with the demand it knows then: after a demand change (flows join, a class's
  outstanding bytes change), the previous decision's rates are judged by the new utility.
* Shares have a floor ``min_share``: no class is starved of the scheduler entirely.

This module is the search only, with no simulator in it; :mod:`ccgym.hopass.experiment` runs it
against a simulation (WRR weights and ECN thresholds written into the switches each slot).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SlowLayerConfig:
    """Parameters of the slow layer's search and of how shares become switch settings."""

    slot: float = 2e-3
    """Slot length, s."""
    settle: float = 0.25e-3
    """Start of each slot not measured (the queues adapt to the new weights), s."""
    delta: float = 0.05
    """Initial exploration step, in share units."""
    delta_min: float = 0.02
    """Smallest exploration step (at least two WRR weight units: a finer probe rounds to the
    same integer weights and measures nothing)."""
    delta_max: float = 0.1
    """Largest exploration step."""
    step_cap: float = 0.15
    """Largest move of one decision, in share units (largest share change of one class)."""
    min_share: float = 0.01
    """Floor of every class's share."""
    weight_scale: int = 100
    """WRR weights: the shares times this, rounded (packets per round of the scheduler)."""
    ecn_floor: float = 20e3
    """ECN threshold of a class's queue at share 0, bytes."""
    ecn_per_share: float = 100e3
    """ECN threshold added per unit of share, bytes (a class's buffer covers its own rate)."""

    def __post_init__(self) -> None:
        checks = [
            (self.slot > 0, "slot must be positive"),
            (0 <= self.settle < self.slot, "settle must be in [0, slot)"),
            (0 < self.delta_min <= self.delta <= self.delta_max < 1, "need 0 < delta_min <= "
             "delta <= delta_max < 1"),
            (0 < self.step_cap <= 1, "step_cap must be in (0, 1]"),
            (0 <= self.min_share < 0.5, "min_share must be in [0, 0.5)"),
            (self.weight_scale >= 2, "weight_scale must be at least 2"),
            (self.ecn_floor >= 0 and self.ecn_per_share >= 0, "ECN thresholds must be >= 0"),
        ]  # fmt: skip
        for ok, message in checks:
            if not ok:
                raise ValueError(f"slow layer: {message}")


def project_to_simplex(v: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """The point of ``{s : s_k >= floor, sum s = 1}`` nearest to ``v`` (Euclidean)."""
    v = np.asarray(v, dtype=float)
    k = len(v)
    budget = 1.0 - k * floor
    if budget < 0:
        raise ValueError(f"a floor of {floor} leaves no room for {k} classes")
    u = np.sort(v - floor)[::-1]
    cum = np.cumsum(u) - budget
    idx = np.arange(1, k + 1)
    rho = int(np.nonzero(u - cum / idx > 0)[0][-1])
    theta = cum[rho] / (rho + 1)
    return np.maximum(v - floor - theta, 0.0) + floor


def exploration_direction(k: int, n: int) -> np.ndarray:
    """Unit exploration step of class ``k`` among ``n``: +1 for ``k``, -1/(n-1) for the rest."""
    d = np.full(n, -1.0 / (n - 1))
    d[k] = 1.0
    return d


def wrr_weights(shares: Sequence[float], scale: int) -> list[int]:
    """Integer WRR weights for ``shares`` summing to ``scale``, each at least 1 (largest
    remainder, so that the weights' shares are the nearest the integers allow)."""
    s = np.asarray(shares, dtype=float)
    raw = s / s.sum() * scale
    w = np.maximum(np.floor(raw).astype(int), 1)
    for i in np.argsort(-(raw - np.floor(raw))):
        if w.sum() >= scale:
            break
        w[i] += 1
    while w.sum() > scale and w.max() > 1:  # floors of 1 pushed the sum over
        w[int(np.argmax(w))] -= 1
    return [int(x) for x in w]


@dataclass
class Decision:
    """What one decision did: the utilities compared and the move taken (0 if none)."""

    base_utility: float
    best_utility: float
    best_class: int
    step: float
    delta: float


class SlowLayer:
    """The search over class shares (see the module doc).

    Use: ``shares = layer.next_shares()`` gives the shares of the coming slot; after the slot,
    ``layer.record(rates)`` hands back the rates measured in it. ``utility`` evaluates measured
    rates with the demand known at that moment (it may change between calls).
    """

    def __init__(
        self,
        n_classes: int,
        utility: Callable[[np.ndarray], float],
        config: SlowLayerConfig | None = None,
        shares: Sequence[float] | None = None,
    ) -> None:
        if n_classes < 2:
            raise ValueError("the slow layer needs at least two classes")
        self.n = n_classes
        self.utility = utility
        self.config = config or SlowLayerConfig()
        start = np.full(n_classes, 1.0 / n_classes) if shares is None else np.asarray(shares)
        self.shares = project_to_simplex(start, self.config.min_share)
        self.delta = self.config.delta
        # the cycle starts with a decision slot: it measures the first allocation
        self.phase = n_classes
        self.base_rates: np.ndarray | None = None
        self.probe_rates: list[np.ndarray | None] = [None] * n_classes
        self.decisions: list[Decision] = []

    def is_decision_slot(self) -> bool:
        """Whether the coming slot runs the decided allocation (not a probe)."""
        return self.phase == self.n

    def next_shares(self) -> np.ndarray:
        """The shares of the coming slot (the decided allocation or a probe around it)."""
        if self.is_decision_slot():
            return self.shares.copy()
        probe = self.shares + self.delta * exploration_direction(self.phase, self.n)
        return project_to_simplex(probe, self.config.min_share)

    def record(self, rates: Sequence[float]) -> None:
        """The per-class rates measured in the slot just run (the one :meth:`next_shares`
        described); after the last exploration slot, decides."""
        r = np.asarray(rates, dtype=float)
        if self.is_decision_slot():
            self.base_rates = r
            self.phase = 0
            return
        self.probe_rates[self.phase] = r
        self.phase += 1
        if self.phase == self.n:
            self._decide()

    def _decide(self) -> None:
        cfg = self.config
        probes = [self.utility(r) for r in self.probe_rates if r is not None]
        best = int(np.argmax(probes))
        base = -np.inf if self.base_rates is None else self.utility(self.base_rates)
        gain = probes[best] - base
        step = 0.0
        if gain > 0 and np.isfinite(gain):
            spread = max(probes[best], base) - min(*probes, base)
            step = cfg.step_cap * gain / spread
            move = step * exploration_direction(best, self.n)
            self.shares = project_to_simplex(self.shares + move, cfg.min_share)
            if step >= cfg.step_cap:  # far from the optimum: coarser probes see further
                self.delta = min(self.delta * 2, cfg.delta_max)
        elif gain > 0:  # no previous decision to beat: take the probe itself
            step = self.delta
            self.shares = project_to_simplex(
                self.shares + step * exploration_direction(best, self.n), cfg.min_share
            )
        else:
            self.delta = max(self.delta / 2, cfg.delta_min)
        self.decisions.append(Decision(float(base), float(probes[best]), best, step, self.delta))
