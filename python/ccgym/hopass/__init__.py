"""HOPASS's slow layer (shared/specs/learning_cc.md section 6): objective-class utilities, the
exact optimum of the multi-objective problem, the online search over class shares, and the
experiments that run it against a simulation (WRR weights and ECN thresholds written into the
switches while it runs). See docs/hopass.md.

from ccgym.hopass import run_experiment
res = run_experiment(scenario_dict_with_a_hopass_table, "hopass")
res.regimes[0]["error_pct"]
"""

from __future__ import annotations

from ccgym.hopass.experiment import (
    ExperimentResult,
    ShortRegimeWarning,
    load_experiment,
    run_experiment,
)
from ccgym.hopass.optimum import Optimum, network_optimum, single_link_optimum
from ccgym.hopass.slow_layer import SlowLayer, SlowLayerConfig, project_to_simplex, wrr_weights
from ccgym.hopass.utility import ClassUtility, total_utility

__all__ = [
    "ClassUtility",
    "ExperimentResult",
    "Optimum",
    "SlowLayer",
    "ShortRegimeWarning",
    "SlowLayerConfig",
    "load_experiment",
    "network_optimum",
    "project_to_simplex",
    "run_experiment",
    "single_link_optimum",
    "total_utility",
    "wrr_weights",
]
