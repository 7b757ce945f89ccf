"""ACC (automatic ECN tuning at the switches, Yan et al., SIGCOMM 2021): the ECN template grid,
the static presets scaled with link rate, and the validity checks of a static search.

* :mod:`ccgym.acc.templates`: the one definition of the template grid the static oracle searches
  and the switch agents act on, the SECN0/1/2 presets, the link-rate scaling rule;
* :mod:`ccgym.acc.validity`: the training reward computed from a run's queue series, the spread
  of mice p99 FCT across templates against seed noise, and the reward's rank correlation with it.

The bench side (the ``acc-oracle`` and ``acc-presets`` suites, the oracle row) is
:mod:`ccgym.bench.acc`; docs/acc.md describes all of it with measured numbers.
"""

from ccgym.acc.templates import (
    GRID,
    PRESETS,
    REFERENCE_RATE_BPS,
    EcnTemplate,
    ecn_overrides,
    grid_index,
    scaled,
)

__all__ = [
    "GRID",
    "PRESETS",
    "REFERENCE_RATE_BPS",
    "EcnTemplate",
    "ecn_overrides",
    "grid_index",
    "scaled",
]
