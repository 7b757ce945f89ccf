"""``ccgym bench``: benchmark suites (scenarios x methods x seeds), cached parallel runs, tables.

from ccgym.bench import load_suite, run_suite, build_rows, table_spec
suite = load_suite("quick")
records, stats = run_suite(suite, "results/bench/quick", jobs=2)   # or ray="local"
rows = build_rows(records, spec=table_spec(suite["table"]))
"""

from __future__ import annotations

from ccgym.bench.pareto import METRICS, pareto_front
from ccgym.bench.runner import RunStats, load_suite, run_suite
from ccgym.bench.tables import build_rows, load_published, table_spec

__all__ = [
    "METRICS",
    "RunStats",
    "build_rows",
    "load_published",
    "load_suite",
    "pareto_front",
    "run_suite",
    "table_spec",
]
