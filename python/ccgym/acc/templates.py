"""The ACC ECN template grid and the static presets, defined once for the oracle and the agents.

A template is a RED/ECN marking profile (Kmin, Kmax, Pmax) given at the **reference rate**
(:data:`REFERENCE_RATE_BPS`, 25 Gb/s: the ACC testbed's server links). A port of rate ``C`` uses
``Kmin x C / 25 Gb/s`` and ``Kmax x C / 25 Gb/s`` and the same ``Pmax``: the HPCC authors' rule
(their ns-3 configurations key KMIN/KMAX by port rate: 100/400 KB at 25G, 200/800 at 50G,
400/1600 at 100G, 1600/6400 at 400G; shared/specs/rule_based_cc.md 1.6 and 8.2). A queue drains
``K`` bytes in ``K / C`` seconds, so scaling keeps the marking delay of every port the same. In a
scenario the rule is ``switch.ecn.reference_rate = "25Gbps"`` (:func:`ecn_overrides`).

The presets (shared/specs/scenarios.md section 2), as given for 25 Gb/s:

* ``SECN0`` (DCTCP style): Kmin = Kmax = 18 KB, Pmax 1 (a step: every packet above 18 KB marked);
* ``SECN1`` (the DCQCN paper): 5 KB / 200 KB / 1 %;
* ``SECN2`` (the HPCC paper's DCQCN setting): 100 KB / 400 KB / 20 %.

The grid (shared/specs/learning_cc.md 2.3, pruned to 35 actions): the three presets first (indices
0, 1, 2), then Kmin in {5, 10, 20, ..., 640} KB (5 KB x 2^n, n = 0..7), Kmax in {2, 8} x Kmin
(capped at :data:`KMAX_CAP` bytes) and Pmax in {5 %, 50 %}, in that nesting order. The spec's
full grid (Kmax in {2, 4, 8} x Kmin, Pmax in {1, 5, 10, 20, 50} %) has 120; its own advice is to
prune to 30-60 templates for DDQN, and every static template costs the oracle one run per
workload, load and seed. The two ratios keep a steep and a gentle ramp at each Kmin; the two
probabilities a gentle and an aggressive one.
"""

from __future__ import annotations

from dataclasses import dataclass

REFERENCE_RATE_BPS = 25_000_000_000
"""The link rate at which templates and presets are written (bit/s)."""

KMAX_CAP = 2_000_000
"""Largest Kmax of a grid template at the reference rate, bytes (8 MB at 100 Gb/s, half of the
ACC scenarios' 16 MiB switch buffer: beyond it PFC pauses long before the ramp ends)."""

GRID_KMIN_KB = (5, 10, 20, 40, 80, 160, 320, 640)
"""Kmin values of the grid, KB at the reference rate (5 KB x 2^n)."""
GRID_KMAX_RATIOS = (2, 8)
"""Kmax / Kmin of the grid."""
GRID_PMAX = (0.05, 0.5)
"""Pmax values of the grid."""


@dataclass(frozen=True)
class EcnTemplate:
    """A RED/ECN marking profile at the reference rate: no marks up to ``kmin`` bytes, the
    probability rising linearly to ``pmax`` at ``kmax``, every packet marked above ``kmax``."""

    name: str
    kmin: int
    kmax: int
    pmax: float

    def profile(self) -> dict[str, float | int]:
        """``{"kmin", "kmax", "pmax"}`` at the reference rate (an ``agent.ecn_profiles`` entry)."""
        return {"kmin": self.kmin, "kmax": self.kmax, "pmax": self.pmax}


def _template_name(kmin: int, kmax: int, pmax: float) -> str:
    return f"{kmin // 1000}K-{kmax // 1000}K-{pmax * 100:g}%"


PRESETS: tuple[EcnTemplate, ...] = (
    EcnTemplate("SECN0", 18_000, 18_000, 1.0),
    EcnTemplate("SECN1", 5_000, 200_000, 0.01),
    EcnTemplate("SECN2", 100_000, 400_000, 0.2),
)
"""The static presets SECN0, SECN1, SECN2 at the reference rate (the first three templates)."""


def _grid() -> tuple[EcnTemplate, ...]:
    out = list(PRESETS)
    for kmin_kb in GRID_KMIN_KB:
        for ratio in GRID_KMAX_RATIOS:
            for pmax in GRID_PMAX:
                kmin = kmin_kb * 1000
                kmax = min(ratio * kmin, KMAX_CAP)
                out.append(EcnTemplate(_template_name(kmin, kmax, pmax), kmin, kmax, pmax))
    return tuple(out)


GRID: tuple[EcnTemplate, ...] = _grid()
"""Every template, in action order: the presets, then the exponential grid (35 in all). The
index of a template here is the action of a switch agent that selects it."""


def grid_index(name: str) -> int:
    """The action index of the template called ``name`` (``"SECN1"``, ``"20K-160K-5%"``)."""
    for i, t in enumerate(GRID):
        if t.name == name:
            return i
    raise KeyError(f"no ECN template {name!r}; known: {', '.join(t.name for t in GRID)}")


def scaled(template: EcnTemplate, rate_bps: float) -> EcnTemplate:
    """``template`` for a port of ``rate_bps``: thresholds x rate / reference rate, rounded to the
    byte as the simulator rounds them (``switch.ecn.reference_rate``); Pmax unchanged."""
    if not rate_bps > 0:
        raise ValueError(f"rate_bps must be positive, not {rate_bps!r}")

    def scale(k: int) -> int:
        # the simulator's integer rounding: (k * rate + ref / 2) // ref
        return (k * int(rate_bps) + REFERENCE_RATE_BPS // 2) // REFERENCE_RATE_BPS

    return EcnTemplate(template.name, scale(template.kmin), scale(template.kmax), template.pmax)


def ecn_overrides(template: EcnTemplate) -> list[str]:
    """Scenario overrides that put ``template`` on every data queue of every switch, scaled with
    each port's rate from the reference rate."""
    return [
        "switch.ecn.enabled=true",
        f"switch.ecn.kmin={template.kmin}",
        f"switch.ecn.kmax={template.kmax}",
        f"switch.ecn.pmax={template.pmax!r}",
        f"switch.ecn.reference_rate={REFERENCE_RATE_BPS}",
    ]
