"""Validity checks of a static ECN search: is there anything to learn, and does the reward know?

* :func:`interval_rewards` / :func:`run_reward`: ACC's training reward (shared/specs/learning_cc.md
  2.4), ``r = w x T + (1 - w) x L`` per switch queue and interval, with ``T`` the interval's output
  rate over the port's rate and ``L = 1 - min(qlen / q_ref, 1)``, computed from a run's queue
  series (queue length at each sample, bytes sent in the interval before it) and averaged over
  the switch ports and the intervals of the metrics window.
* :func:`spread_check`: how far apart the static templates are on a score (mice p99 FCT) compared
  with how far the same template moves between seeds. If the templates' spread is within that
  noise, no ECN setting is better than another there, and a learner has nothing to learn.
* :func:`reward_correlation`: Spearman's rank correlation between the reward and the score across
  templates. A reward worth training on ranks templates the way the score does (high reward, low
  FCT: a negative correlation); the one independent ACC re-implementation found the paper-style
  linear reward ranking them the opposite way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ccgym.acc.templates import REFERENCE_RATE_BPS

REWARD_Q_REF_BYTES = 32_000
"""``q_ref`` of the reward at the reference rate (25 Gb/s), bytes: about one bandwidth-delay
product of the ACC testbed's longest path (4 links of 1 us each way plus serialisation: a base
RTT near 10 us, 31 KB at 25 Gb/s); scaled with each port's rate like the ECN thresholds."""

MIN_TEMPLATES_FOR_TEST = 5
"""Fewest templates for which the rank correlation's verdict is a test (with 3 the exact
one-sided p of a perfect rank is 1/6)."""

ANOVA_ALPHA = 0.05
"""Significance level of the ANOVA in :func:`spread_check`."""

REWARD_THROUGHPUT_WEIGHT = 0.5
"""``w_1`` of the reward (``w_2 = 1 - w_1``): the spec's default."""


def interval_rewards(
    tx_bps: np.ndarray,
    rate_bps: np.ndarray,
    queue_bytes: np.ndarray,
    *,
    q_ref_bytes: float = REWARD_Q_REF_BYTES,
    weight: float = REWARD_THROUGHPUT_WEIGHT,
) -> np.ndarray:
    """The reward of each (queue, interval): ``weight x T + (1 - weight) x L``.

    Args:
        tx_bps: output rate of the queue over the interval, bit/s.
        rate_bps: the port's line rate, bit/s (broadcast against ``tx_bps``).
        queue_bytes: queue length at the end of the interval, bytes.
        q_ref_bytes: ``q_ref`` at the reference rate; each port's is scaled with its rate.
        weight: ``w_1``, the throughput weight, in [0, 1].
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight must be in [0, 1], not {weight!r}")
    if not q_ref_bytes > 0:
        raise ValueError(f"q_ref_bytes must be positive, not {q_ref_bytes!r}")
    tx = np.asarray(tx_bps, dtype=float)
    rate = np.asarray(rate_bps, dtype=float)
    q_ref = q_ref_bytes * rate / REFERENCE_RATE_BPS
    throughput = np.clip(tx / rate, 0.0, 1.0)
    latency = 1.0 - np.minimum(np.asarray(queue_bytes, dtype=float) / q_ref, 1.0)
    return weight * throughput + (1.0 - weight) * latency


def run_reward(
    series_ports: Mapping[str, np.ndarray],
    port_rates_bps: Mapping[int, float],
    window_s: Sequence[float],
    *,
    q_ref_bytes: float = REWARD_Q_REF_BYTES,
    weight: float = REWARD_THROUGHPUT_WEIGHT,
) -> float | None:
    """The mean training reward of a run over its switch ports and the sample intervals that end
    in the metrics window.

    Args:
        series_ports: the run's ``ports`` series (columns ``time_s``, ``port_id``,
            ``queue_bytes``, ``tx_gbps``; a DataFrame or a dict of arrays).
        port_rates_bps: line rate of each switch port to score, by port id; ports of the series
            not in it (host uplinks) are left out.
        window_s: ``[start, end]`` of the metrics window, seconds.
    """
    t = np.asarray(series_ports["time_s"], dtype=float)
    port = np.asarray(series_ports["port_id"], dtype=np.int64)
    ids = np.fromiter(port_rates_bps, dtype=np.int64)
    keep = (t > window_s[0]) & (t <= window_s[1]) & np.isin(port, ids)
    if not keep.any():
        return None
    lookup = dict(port_rates_bps)
    rate = np.array([lookup[int(p)] for p in port[keep]], dtype=float)
    tx = np.asarray(series_ports["tx_gbps"], dtype=float)[keep] * 1e9
    q = np.asarray(series_ports["queue_bytes"], dtype=float)[keep]
    r = interval_rewards(tx, rate, q, q_ref_bytes=q_ref_bytes, weight=weight)
    return float(r.mean())


@dataclass(frozen=True)
class Spread:
    """How a score varies across static templates against its seed-to-seed noise."""

    best: str
    """The template with the lowest mean score."""
    worst: str
    """The template with the highest mean score."""
    spread: float
    """(worst - best) / best of the templates' mean scores."""
    noise: float | None
    """The mean over templates of (max - min) over seeds, relative to the best mean; None with
    one seed per template (no noise estimate)."""
    within_noise: bool | None
    """Whether the spread is at most the noise (None: no noise estimate)."""
    anova_p: float | None
    """p-value of a one-way ANOVA of the score on the template (None with one seed)."""
    templates: int
    """How many templates had a score."""

    def verdict(self) -> str:
        """One line for the table notes."""
        text = f"spread {self.spread * 100:.1f} % (best {self.best}, worst {self.worst})"
        if self.noise is None:
            return text + "; one seed: no noise estimate"
        text += f", seed noise {self.noise * 100:.1f} %"
        if self.anova_p is not None:
            text += f", ANOVA p = {self.anova_p:.2g}"
        if self.within_noise:
            return text + ": WITHIN NOISE, nothing to learn here"
        if self.anova_p is not None and self.anova_p >= ANOVA_ALPHA:
            return text + ": beyond the seed range but not significant, more seeds needed"
        return text + ": beyond noise"


def spread_check(scores: Mapping[str, Sequence[float]]) -> Spread | None:
    """Compare the spread of a score across templates with its noise across seeds.

    Args:
        scores: per template, the score of each seed (e.g. mice p99 FCT); lower is better.
            Templates without a finite score are left out.

    The spread is the gap between the best and the worst template's mean; the noise is the mean,
    over templates, of the gap between a template's best and worst seed. The spread is "within
    noise" when it is not larger than that: a template's own seeds disagree as much as the
    templates do. A one-way ANOVA of the score on the template asks the same with a test; when
    the spread exceeds the noise but the p-value is :data:`ANOVA_ALPHA` or more (few seeds, few
    templates), the verdict says that more seeds are needed.
    Returns None with fewer than two templates.
    """
    clean = {
        name: [float(v) for v in vals if v is not None and math.isfinite(v)]
        for name, vals in scores.items()
    }
    clean = {name: vals for name, vals in clean.items() if vals}
    if len(clean) < 2:
        return None
    means = {name: float(np.mean(vals)) for name, vals in clean.items()}
    best = min(means, key=means.__getitem__)
    worst = max(means, key=means.__getitem__)
    base = abs(means[best]) or 1.0
    spread = (means[worst] - means[best]) / base
    multi = [vals for vals in clean.values() if len(vals) > 1]
    if not multi:
        return Spread(best, worst, spread, None, None, None, len(clean))
    noise = float(np.mean([max(v) - min(v) for v in multi])) / base
    anova_p = None
    if all(len(v) > 1 for v in clean.values()) and any(np.ptp(v) > 0 for v in clean.values()):
        from scipy.stats import f_oneway

        anova_p = float(f_oneway(*clean.values()).pvalue)
    return Spread(best, worst, spread, noise, spread <= noise, anova_p, len(clean))


@dataclass(frozen=True)
class Correlation:
    """Spearman's rank correlation of the reward with a score across templates."""

    rho: float
    p: float
    templates: int

    def verdict(self, score: str = "mice p99 FCT") -> str:
        """One line for the table notes: a good reward has rho < 0 (high reward, low FCT)."""
        if self.templates < MIN_TEMPLATES_FOR_TEST:
            # scipy's p-value is an approximation that says 0 for a perfect rank of 3 points
            return f"Spearman rho = {self.rho:+.2f} ({self.templates} templates: too few to test)"
        if self.rho < 0 and self.p < 0.05:
            how = f"the reward ranks templates like {score} (higher reward, lower FCT)"
        elif self.rho > 0 and self.p < 0.05:
            how = f"the reward ranks templates OPPOSITE to {score}"
        else:
            how = f"no significant rank relation with {score}"
        return (
            f"Spearman rho = {self.rho:+.2f} (p = {self.p:.2g}, {self.templates} templates): {how}"
        )


def reward_correlation(
    rewards: Mapping[str, float | None], scores: Mapping[str, float | None]
) -> Correlation | None:
    """Spearman's rho between the reward and the score over the templates that have both
    (None with fewer than three, or when either is constant)."""
    names = [
        n
        for n in rewards
        if n in scores
        and rewards[n] is not None
        and scores[n] is not None
        and math.isfinite(float(rewards[n]))  # type: ignore[arg-type]
        and math.isfinite(float(scores[n]))  # type: ignore[arg-type]
    ]
    if len(names) < 3:
        return None
    r = np.array([rewards[n] for n in names], dtype=float)
    s = np.array([scores[n] for n in names], dtype=float)
    if np.ptp(r) == 0 or np.ptp(s) == 0:
        return None
    from scipy.stats import spearmanr

    res = spearmanr(r, s)
    return Correlation(float(res.statistic), float(res.pvalue), len(names))
