"""ccgym bench: Pareto marking, suites, cached parallel runs, tables, published numbers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ccgym._errors import ScenarioError
from ccgym.bench.pareto import HIGHER, LOWER, METRICS, compare, dominates, pareto_front, pareto_mask
from ccgym.bench.runner import bundled_suites, load_suite, run_suite, suite_jobs
from ccgym.bench.tables import (
    STANDARD,
    build_rows,
    csv_text,
    load_published,
    markdown_table,
    paper_method,
)
from ccgym.cli.bench import bench_table

# --------------------------------------------------------------------------- Pareto

M = {"SU": (HIGHER, 1.0), "QL": (LOWER, 0.5)}


def test_compare_directions_and_tolerance() -> None:
    assert compare(90, 80, HIGHER) == 1
    assert compare(90, 80, LOWER) == -1
    assert compare(90.5, 90, HIGHER, 1.0) == 0
    assert compare(91.5, 90, HIGHER, 1.0) == 1
    with pytest.raises(ValueError):
        compare(1, 2, "sideways")


def test_clear_domination() -> None:
    rows = [{"SU": 95, "QL": 2}, {"SU": 90, "QL": 5}, {"SU": 99, "QL": 10}]
    assert pareto_mask(rows, M) == [True, False, True]
    assert pareto_front(rows, M) == [rows[0], rows[2]]


def test_ties_inside_tolerance_band() -> None:
    # B is slightly better on SU but within the tolerance: the rows are equal, both kept.
    a, b = {"SU": 95.0, "QL": 2.0}, {"SU": 95.8, "QL": 2.3}
    assert not dominates(b, a, M) and not dominates(a, b, M)
    assert pareto_mask([a, b], M) == [True, True]
    # Equal within tolerance on SU, strictly better beyond tolerance on QL: dominates.
    c = {"SU": 95.5, "QL": 1.0}
    assert dominates(c, a, M)
    assert pareto_front([a, b, c], M) == [c]


def test_exact_ties() -> None:
    rows = [{"SU": 90, "QL": 3}, {"SU": 90, "QL": 3}]
    assert pareto_mask(rows, M) == [True, True]
    assert pareto_mask(rows, {"SU": (HIGHER, 0.0), "QL": (LOWER, 0.0)}) == [True, True]


def test_single_row_and_empty() -> None:
    assert pareto_front([{"SU": 1, "QL": 100}], M) == [{"SU": 1, "QL": 100}]
    assert pareto_front([], M) == []


def test_missing_metrics_are_worst() -> None:
    good = {"SU": 50.0, "QL": 50.0}
    for missing in (None, math.nan):
        assert dominates(good, {"SU": missing, "QL": 50.0}, M)
        assert dominates(good, {"SU": 50.0, "QL": missing}, M)
    assert pareto_mask([{"SU": None, "QL": 1.0}, {"SU": 10.0}], M) == [True, True]
    # both missing count as equal; the other metric decides
    assert dominates({"SU": None, "QL": 1.0}, {"SU": math.nan, "QL": 9.0}, M)


def test_default_metrics() -> None:
    assert set(METRICS) == {"SU", "FR", "QL", "drops_mb"}
    rows = [
        {"SU": 95, "FR": 90, "QL": 5, "drops_mb": 0.0},
        {"SU": 95, "FR": 90, "QL": 5, "drops_mb": 3.0},
    ]
    assert pareto_mask(rows) == [True, False]


# --------------------------------------------------------------------------- suites and runs

TINY = """
name = "tiny"
seeds = [1]
methods = ["dcqcn", "policy:adpg-default"]
overrides = ["duration=2ms", "metrics.window=['0.5ms', '2ms']", "workload[0].stop=2ms",
             "workload[0].start=['0.1ms', '0.2ms']", "metrics.sample_interval=50us"]

[[scenario]]
label = "m2o 2"
scenario = "adpg-m2o-2"

[[scenario]]
label = "a2a 4"
scenario = "adpg-a2a-4"
published = "a2a-4"
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("suite") / "tiny.toml"
    path.write_text(TINY)
    return path


def _metrics(records: list[dict]) -> list[tuple]:
    return [(r["label"], r["method"], r["seed"], r["key"], r["metrics"]) for r in records]


def test_bundled_suites_load() -> None:
    assert {"quick", "adpg-many-to-one", "adpg-all-to-all", "adpg-long-short"} <= set(
        bundled_suites()
    )
    m2o = load_suite("adpg-many-to-one")
    assert len(m2o["scenario"]) == 12
    quick = load_suite("quick")
    assert "policy:adpg-default" in quick["methods"]
    assert len(suite_jobs(quick)) == 4 * len(quick["methods"])
    classic = ["dcqcn", "hpcc", "swift", "timely", "dctcp", "policy:adpg-default"]
    assert quick["methods"][:6] == classic


def test_optional_methods_join_only_when_they_can_run(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        'methods = ["dcqcn"]\n'
        'optional_methods = ["policy:no-such-policy", "hpcc", "dcqcn", "policy:adpg-default"]\n'
        '[[scenario]]\nscenario = "adpg-m2o-2"\n'
    )
    assert load_suite(path)["methods"] == ["dcqcn", "hpcc", "policy:adpg-default"]
    path.write_text('methods = ["a"]\noptional_methods = "hpcc"\n[[scenario]]\nscenario = "x"\n')
    with pytest.raises(ScenarioError, match="optional_methods"):
        load_suite(path)


def test_unknown_suite() -> None:
    from ccgym import ScenarioError

    with pytest.raises(ScenarioError, match="no suite"):
        load_suite("no-such-suite")


@pytest.mark.parametrize("jobs", [1, 2])
def test_bad_input_in_a_run_names_the_run(tmp_path: Path, jobs: int) -> None:
    """A suite's method with an unknown CC: the error names the suite's scenario, method and
    seed, not only the field (in the worker pool as in one process)."""
    from ccgym import ScenarioError

    path = tmp_path / "bad.toml"
    path.write_text(
        'name = "bad"\nseeds = [1]\nmethods = ["line_rate", "no-such-cc"]\n'
        "overrides = [\"duration=0.2ms\", \"metrics.window=['0ms', 'end']\"]\n"
        '[[scenario]]\nlabel = "incast"\nscenario = "incast-16"\n'
    )
    expected = r'suite run incast / no-such-cc / seed 1: cc.algorithm: value "no-such-cc"'
    with pytest.raises(ScenarioError, match=expected):
        run_suite(load_suite(path), tmp_path / "out", jobs=jobs, progress=False)


def test_resume_and_parallel_equals_serial(tiny: Path, tmp_path: Path) -> None:
    suite = load_suite(tiny)
    serial, stats = run_suite(suite, tmp_path / "serial", jobs=1)
    assert (stats.ran, stats.cached) == (4, 0)
    files = sorted((tmp_path / "serial" / "runs").glob("*.json"))
    assert len(files) == 4
    mtimes = [f.stat().st_mtime_ns for f in files]

    again, stats2 = run_suite(suite, tmp_path / "serial", jobs=2)
    assert (stats2.ran, stats2.cached) == (0, 4)  # resume: nothing redone
    assert [f.stat().st_mtime_ns for f in files] == mtimes
    assert _metrics(again) == _metrics(serial)

    parallel, stats3 = run_suite(suite, tmp_path / "parallel", jobs=2)
    assert stats3.ran == 4
    assert _metrics(parallel) == _metrics(serial)  # determinism

    # a changed override is a different run; the others stay cached
    suite["scenario"][0]["overrides"] = ["workload[0].stop=1.5ms"]
    _, stats4 = run_suite(suite, tmp_path / "serial", jobs=1)
    assert (stats4.ran, stats4.cached) == (2, 2)


def test_tables(tiny: Path, tmp_path: Path) -> None:
    records, _ = run_suite(load_suite(tiny), tmp_path, jobs=2)
    rows = build_rows(records)
    assert [(r["scenario"], r["method"]) for r in rows] == [
        ("m2o 2", "dcqcn"),
        ("m2o 2", "policy:adpg-default"),
        ("a2a 4", "dcqcn"),
        ("a2a 4", "policy:adpg-default"),
    ]
    for r in rows:
        assert r["seeds"] == 1 and r["SU"] is not None and r["SU_min"] == r["SU_max"] == r["SU"]
        assert isinstance(r["pareto"], bool)
    for scenario in ("m2o 2", "a2a 4"):
        assert any(r["pareto"] for r in rows if r["scenario"] == scenario)
    assert rows[0]["published"] is None
    assert rows[2]["published"] == [89, 93, 4] and rows[3]["published"] == [94, 77, 6]
    md = markdown_table(rows, "tiny")
    assert "| a2a 4 | policy:adpg-default |" in md and "94 / 77 / 6" in md
    lines = csv_text(rows).splitlines()
    assert lines[0].startswith("scenario,method,seeds,SU,SU_min,SU_max")
    assert len(lines) == 5 and ",89,93,4," in lines[3]


def test_seed_spread() -> None:
    recs = [
        {"label": "s", "method": "m", "seed": i, "metrics": {"SU": su, "FR": 50.0}}
        for i, su in enumerate((90.0, 94.0, 98.0))
    ]
    (row,) = build_rows(recs, published={})
    assert (row["SU"], row["SU_min"], row["SU_max"], row["seeds"]) == (94.0, 90.0, 98.0, 3)
    assert row["QL"] is None and row["pareto"]
    assert "94.0 (90.0–98.0)" in markdown_table([row])


def test_terminal_table_fits_a_narrow_terminal() -> None:
    """On a terminal an empty published column is left out; too wide for the terminal, the
    table also drops the (min–max) over seeds, says so, and never cuts a method's name."""
    from rich.console import Console

    recs = [
        {"label": "a long scenario label", "method": f"policy:method-{m}", "seed": i,
         "metrics": {"SU": 90.0 + i, "FR": 50.0 + m, "jain": 0.9, "QL": 1.5 * i, "drops_mb": 0.0}}
        for m in range(3)
        for i in range(3)
    ]  # fmt: skip
    rows = build_rows(recs, published={})

    def render(width: int) -> str:
        console = Console(width=width, record=True)
        console.print(bench_table(rows, "title", STANDARD, width=width))
        return console.export_text()

    wide = render(300)
    assert "91.0 (90.0–92.0)" in wide and "min–max" not in wide
    assert "paper SU / FR / QL" not in wide  # no row has published numbers
    assert "paper SU / FR / QL" in markdown_table(rows)  # the file keeps the column
    narrow = render(100)
    assert "(90.0–92.0)" not in narrow and "paper SU" not in narrow
    assert "min–max in table.md" in narrow and "* after a method: Pareto front" in narrow
    for m in range(3):
        assert f"policy:method-{m}" in narrow
    assert "policy:method-2 *" in narrow and "Pareto" not in narrow.splitlines()[2]
    # With the paper's numbers and still too wide, they go to table.md too.
    rows[0]["published"] = [92.0, 95.0, 8.0]
    assert "92 / 95 / 8" in render(120)
    tight = render(78)
    assert "92 / 95 / 8" not in tight and "min–max and the paper's numbers in table.md" in tight
    assert all(len(line) <= 78 for line in tight.splitlines())
    assert all(len(line) <= 100 for line in narrow.splitlines())


def test_published_numbers_load() -> None:
    pub = load_published()
    assert pub["m2o-128"]["adpg"] == [92, 95, 8]
    assert pub["m2o-8192"]["hpcc"] == "packet loss"
    assert pub["m2o-4096"]["reinforce"] == [53, 45, 22]
    assert pub["a2a-8"]["swift"] == [92, 100, 11]
    for key in ("m2o-128", "m2o-1024", "m2o-4096", "m2o-8192"):
        assert set(pub[key]) == {"dcqcn", "hpcc", "swift", "adpg", "reinforce", "ppo", "aurora"}
    for key in ("a2a-4", "a2a-8"):
        assert set(pub[key]) == {"dcqcn", "hpcc", "swift", "adpg"}
    assert paper_method("policy:adpg-default") == "adpg"
    assert paper_method("DCQCN") == "dcqcn"


def test_cli_bench(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ccgym.cli import main

    assert main(["bench", "--suite", str(tiny), "--jobs", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "a2a 4" in out and "4 runs done" in out
    assert (tmp_path / "table.md").is_file() and (tmp_path / "table.csv").is_file()
    assert main(["bench", "--suite", str(tiny), "--out", str(tmp_path)]) == 0
    assert "0 runs done, 4 from the cache" in capsys.readouterr().out


TINY1 = """
name = "tiny1"
seeds = [1]
methods = ["dcqcn", "hpcc"]
overrides = ["duration=2ms", "metrics.window=['0.5ms', '2ms']", "workload[0].stop=2ms",
             "workload[0].start=['0.1ms', '0.2ms']", "metrics.sample_interval=50us"]

[[scenario]]
label = "m2o 2"
scenario = "adpg-m2o-2"
"""


def test_cli_bench_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``ccgym bench --set KEY=VALUE``: an override for every run, after the suite's own, in
    the cache key (a run cached without it is not reused); a bad one is a one-line error."""
    import json

    from ccgym.cli import main

    suite = tmp_path / "tiny1.toml"
    suite.write_text(TINY1)
    out = tmp_path / "out"
    base = ["bench", "--suite", str(suite), "--jobs", "1", "--out", str(out), "--no-report"]
    assert main(base) == 0
    assert "2 runs done, 0 from the cache" in capsys.readouterr().out
    sets = ["--set", "workload[0].stop=1.5ms", "--set", "switch.port_buffer=64KB"]
    assert main([*base, *sets]) == 0
    assert "2 runs done, 0 from the cache" in capsys.readouterr().out  # not the cached runs
    assert main([*base, *sets]) == 0
    assert "0 runs done, 2 from the cache" in capsys.readouterr().out
    records = [json.loads(p.read_text()) for p in (out / "runs").glob("*.json")]
    assert len(records) == 4
    with_set = [r for r in records if "switch.port_buffer=64KB" in r["overrides"]]
    assert len(with_set) == 2
    for r in with_set:  # after the suite's overrides (stop=2ms), so the --set value wins
        assert r["overrides"][-3:] == [
            "workload[0].stop=1.5ms",
            "switch.port_buffer=64KB",
            "seed=1",
        ]
        assert r["overrides"].index("workload[0].stop=2ms") < r["overrides"].index(
            "workload[0].stop=1.5ms"
        )

    for bad, expected in (
        ("no_such_key=1", "unknown field `no_such_key`"),
        ("duration", 'override "duration": expected key=value'),
        ("duration=abc", 'duration: value "abc"'),
    ):
        assert main([*base, "--set", bad]) == 2
        # (stderr is no terminal here: the progress lines "bench tiny1: ..." come first)
        err = [x for x in capsys.readouterr().err.splitlines() if not x.startswith("bench ")]
        assert len(err) == 1 and err[0].startswith("error: ") and expected in err[0], err


def test_plain_progress_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """Without a terminal: one line per finished run, at most every ``every_s``, the last
    always."""
    from ccgym.bench.runner import plain_progress

    step = plain_progress("bench x", 3, every_s=0.0)
    for label in ("a", "b", "c"):
        step(label)
    step(None)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(", ")[0] for line in lines] == [
        "bench x: 1/3 runs done",
        "bench x: 2/3 runs done",
        "bench x: 3/3 runs done",
    ]
    assert lines[1].endswith(", last: b")
    step = plain_progress("bench x", 3, every_s=3600.0)
    for label in ("a", "b", "c"):
        step(label)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(", ")[0] for line in lines] == [
        "bench x: 1/3 runs done",
        "bench x: 3/3 runs done",
    ]


def test_cli_bench_progress_without_a_terminal(tmp_path: Path) -> None:
    """``ccgym bench`` with stderr a pipe (nohup, a log file) says what it does: the runs to do,
    then a line per finished run; no bar's control codes."""
    import os
    import subprocess
    import sys

    suite = tmp_path / "tiny1.toml"
    suite.write_text(TINY1)
    cmd = [sys.executable, "-m", "ccgym", "bench", "--suite", str(suite), "--jobs", "1"]
    cmd += ["--out", str(tmp_path / "out"), "--no-report"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "python")}
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "bench tiny1: 2 runs to do, 0 from the cache"
    assert lines[1].startswith("bench tiny1: 1/2 runs done, 0:00:")
    assert lines[1].endswith(", last: m2o 2 / dcqcn / seed 1")
    assert lines[-1].startswith("bench tiny1: 2/2 runs done, ")
    assert lines[-1].endswith(", last: m2o 2 / hpcc / seed 1")
    assert "\x1b" not in proc.stderr
