"""The ``hpcc-pint`` bench suite: HPCC with INT against HPCC-PINT and DCQCN on a fat tree.

The end-to-end test runs the bundled suite's methods on the scenario's own small fat tree (k = 4,
16 hosts at 100 Gb/s, WebSearch at 0.5 load, 6 ms) and checks the table and the comparison the
suite is for: PINT's large flows move faster than INT's (its packets carry one byte of feedback
instead of 42) and both HPCCs keep the small flows' tail far below DCQCN's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ccgym.bench.report import write_report
from ccgym.bench.runner import load_suite, run_suite, suite_jobs
from ccgym.bench.tables import SLOWDOWN, build_rows, table_spec

pytest.importorskip("ccgym._sim")

METHODS = ["hpcc", "hpcc-pint", "hpcc-pint-2b", "dcqcn"]


def test_bundled_suite_compares_int_with_both_pint_fields() -> None:
    suite = load_suite("hpcc-pint")
    assert suite["methods"] == METHODS and table_spec(suite["table"]) is SLOWDOWN
    jobs = suite_jobs(suite)
    assert len(jobs) == 4 * len(METHODS) and len({j.key for j in jobs}) == len(jobs)
    presets = {j.method: j.preset for j in jobs}
    assert presets["hpcc"] == {"cc": "hpcc", "overrides": ["cc.variant=rate"]}
    assert presets["hpcc-pint-2b"] is not None
    assert "cc.pint_log_base=1.01" in presets["hpcc-pint-2b"]["overrides"]
    assert {"topology.k=8", "duration=20ms", "metrics.breakdown=true"} <= set(jobs[0].overrides)


def test_quick_suite_end_to_end(tmp_path: Path) -> None:
    suite = load_suite("hpcc-pint")
    suite["overrides"] = ["duration=6ms", "metrics.window=['1ms', '5ms']", "metrics.breakdown=true"]
    suite["scenario"] = [sc for sc in suite["scenario"] if sc["label"] == "websearch 0.5"]
    records, stats = run_suite(suite, tmp_path, jobs=2)
    assert stats.ran == len(METHODS)
    rows = build_rows(records, spec=SLOWDOWN)
    assert [r["method"] for r in rows] == METHODS
    by = {r["method"]: r for r in rows}
    for row in rows:
        assert row["sd0_mean"] >= 1.0 and row["drops"] == 0  # PFC: lossless
    for pint in ("hpcc-pint", "hpcc-pint-2b"):
        assert by[pint]["large_gbps"] > 1.03 * by["hpcc"]["large_gbps"], (pint, rows)
    for hpcc in ("hpcc", "hpcc-pint", "hpcc-pint-2b"):
        assert by[hpcc]["sd0_p99"] < 0.75 * by["dcqcn"]["sd0_p99"], (hpcc, rows)
    page = write_report(suite, records, tmp_path, stats=stats).read_text()
    assert "Slowdown against flow size" in page and "hpcc-pint-2b" in page
