"""Tests of the pure-Python layer: scenario loading, overrides, results, CLI errors.

Tests that need the native module ``ccgym._sim`` skip themselves when it is not built.
"""

from __future__ import annotations

import io
import json
import math
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import ccgym
from ccgym import Result, ScenarioError, load_scenario
from ccgym.cli import summary_table
from ccgym.perf import incast_layout, incast_scenario
from ccgym.scenario import (
    SCENARIO_DIR,
    WORKLOAD_DIR,
    apply_override,
    bundled_scenarios,
    bundled_workloads,
    parse_key,
    parse_override,
    parse_value,
)
from cli_helpers import run_ccgym

PYTHON_DIR = Path(ccgym.__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m ccgym ARGS`` in a subprocess (:func:`cli_helpers.run_ccgym`)."""
    return run_ccgym(*args, cwd=cwd, module="ccgym.cli")


# --------------------------------------------------------------------------- overrides


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("3", 3),
        ("0.5", 0.5),
        ("true", True),
        ("false", False),
        ('"quoted"', "quoted"),
        ("50ms", "50ms"),
        ("100Gbps", "100Gbps"),
        ('["1ms", "2ms"]', ["1ms", "2ms"]),
        ("{ enabled = true }", {"enabled": True}),
        ("  7  ", 7),
        ("", ""),
    ],
)
def test_parse_value(raw: str, expected: Any) -> None:
    assert parse_value(raw) == expected


def test_parse_key() -> None:
    assert parse_key("seed") == ["seed"]
    assert parse_key("switch.pfc.enabled") == ["switch", "pfc", "enabled"]
    assert parse_key("workload[1].load") == ["workload", 1, "load"]
    assert parse_key("workload.1.load") == ["workload", 1, "load"]
    assert parse_key("a[0][2]") == ["a", 0, 2]
    for bad in ["", "a..b", "a.[0]", "a b", "a[x]"]:
        with pytest.raises(ScenarioError):
            parse_key(bad)


def test_overrides_must_be_a_list_of_strings() -> None:
    # A lone string used to be applied one character at a time ('override "d": ...').
    with pytest.raises(TypeError, match=r"a list of key=value strings, e.g. \['seed=3'\]"):
        load_scenario("incast-16", "seed=3")
    with pytest.raises(TypeError, match="an override must be a key=value string, not 3"):
        load_scenario("incast-16", ["seed=3", 3])  # type: ignore[list-item]
    assert load_scenario("incast-16", ("seed=3",))[0]["seed"] == 3


def test_parse_override_needs_equals() -> None:
    with pytest.raises(ScenarioError, match="expected key=value"):
        parse_override("seed")
    with pytest.raises(ScenarioError, match="expected key=value"):
        parse_override("=3")
    assert parse_override("duration = 5ms") == (["duration"], "5ms")
    assert parse_override("name=a=b") == (["name"], "a=b")


def test_apply_override_nested() -> None:
    d: dict[str, Any] = {"seed": 1, "workload": [{"kind": "long"}]}
    apply_override(d, "seed=7")
    apply_override(d, "switch.pfc.enabled=false")
    apply_override(d, "workload[0].flows_per_host=4")
    apply_override(d, "workload[1].kind=poisson")
    apply_override(d, "metrics.window=['1ms', '2ms']")
    assert d == {
        "seed": 7,
        "switch": {"pfc": {"enabled": False}},
        "workload": [{"kind": "long", "flows_per_host": 4}, {"kind": "poisson"}],
        "metrics": {"window": ["1ms", "2ms"]},
    }


def test_apply_override_errors() -> None:
    d: dict[str, Any] = {"seed": 1, "workload": [{"kind": "long"}]}
    expected = r"index 5 out of range \(workload has 1 element; index 1 appends one\)"
    with pytest.raises(ScenarioError, match=expected):
        apply_override(d, "workload[5].kind=long")
    with pytest.raises(ScenarioError, match="seed is not a table"):
        apply_override(d, "seed.x=1")
    with pytest.raises(ScenarioError, match="workload\\[0\\] is not an array"):
        apply_override(d, "workload[0][1]=1")


def test_load_scenario_dict_is_copied_and_overridden(tmp_path: Path) -> None:
    original = {"name": "x", "seed": 1, "switch": {"pfc": {"enabled": True}}}
    data, base_dir = load_scenario(original, ["seed=2", "switch.pfc.enabled=false"])
    assert data["seed"] == 2 and data["switch"]["pfc"]["enabled"] is False
    assert original == {"name": "x", "seed": 1, "switch": {"pfc": {"enabled": True}}}
    assert base_dir == Path.cwd()


# --------------------------------------------------------------------------- scenarios


def test_bundled_lists() -> None:
    assert "incast-16" in bundled_scenarios()
    workloads = bundled_workloads()
    assert workloads == sorted(p.stem for p in WORKLOAD_DIR.glob("*.txt"))
    assert "websearch_dctcp2010_hpcc" in workloads
    assert len(workloads) >= 19


def test_bundled_workloads_are_valid_cdfs() -> None:
    for name in bundled_workloads():
        rows = [
            line.split()
            for line in (WORKLOAD_DIR / f"{name}.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
        probs = [float(r[-1]) for r in rows]
        assert all(b >= a for a, b in zip(probs, probs[1:], strict=False)), name
        assert math.isclose(probs[-1], 1.0), name


def test_load_bundled_scenario() -> None:
    data, base_dir = load_scenario("incast-16")
    assert data["name"] == "incast-16"
    assert data["duration"] == "10ms"
    assert data["metrics"] == {"window": ["1ms", "end"], "flow_series": True}
    assert data["topology"]["hosts"] == 17
    assert base_dir == SCENARIO_DIR


def test_incast16_matches_perf_scenario() -> None:
    data, _ = load_scenario("incast-16")
    perf = incast_scenario(16)
    perf.update(name="incast-16", duration="10ms")
    del perf["cc"]  # line rate is the default
    perf["metrics"] = {"window": ["1ms", "end"], "flow_series": True}
    assert data == perf


def test_load_toml_string_and_file(tmp_path: Path) -> None:
    data, base_dir = load_scenario('name = "s"\nseed = 3\n[topology]\nkind = "star"\n')
    assert data == {"name": "s", "seed": 3, "topology": {"kind": "star"}}
    assert base_dir == Path.cwd()
    path = tmp_path / "my-scenario.toml"
    path.write_text("seed = 4\n")
    data, base_dir = load_scenario(path)
    assert data == {"seed": 4, "name": "my-scenario"}
    assert base_dir == tmp_path.resolve()
    data, _ = load_scenario(str(path), ["seed=5"])
    assert data["seed"] == 5


def test_toml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\nseed = 1\nduration 100ms\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert str(path) in message
    assert "line 3" in message


def test_missing_file_and_unknown_name() -> None:
    with pytest.raises(ScenarioError, match="scenario file not found: nope/missing.toml"):
        load_scenario("nope/missing.toml")
    with pytest.raises(ScenarioError, match="scenario file not found"):
        load_scenario(Path("missing.toml"))
    with pytest.raises(ScenarioError, match=r'unknown scenario "no-such".*incast-16'):
        load_scenario("no-such")


def test_cdf_names_are_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine.txt").write_text("0 0\n100 1\n")
    spec = {
        "workload": [
            {"kind": "long"},
            {"kind": "poisson", "cdf": "websearch_dctcp2010_hpcc"},
            {"kind": "poisson", "cdf": "mine.txt"},
            {"kind": "poisson", "cdf": str(tmp_path / "mine.txt")},
        ]
    }
    data, _ = load_scenario(spec | {"workload": spec["workload"][:2]})
    resolved = Path(data["workload"][1]["cdf"])
    assert resolved.is_absolute() and resolved.is_file()
    assert resolved == WORKLOAD_DIR / "websearch_dctcp2010_hpcc.txt"
    # Paths are left for the simulator to resolve against base_dir, but must exist.
    with pytest.raises(
        ScenarioError, match=r'workload\[2\]\.cdf: value "mine.txt": file not found'
    ):
        load_scenario(spec)
    monkeypatch.chdir(tmp_path)
    data, _ = load_scenario(spec)
    assert data["workload"][2]["cdf"] == "mine.txt"


def test_unknown_cdf_name_lists_known_names() -> None:
    spec = {"workload": [{"kind": "long"}, {"kind": "poisson", "cdf": "websarch"}]}
    with pytest.raises(ScenarioError) as info:
        load_scenario(spec)
    message = str(info.value)
    assert message.startswith('workload[1].cdf: value "websarch"')
    assert "websearch_dctcp2010_hpcc" in message and "fb_hadoop_hpcc" in message


def test_cdf_override_is_resolved() -> None:
    data, _ = load_scenario({"workload": [{"kind": "poisson"}]}, ["workload[0].cdf=fb_hadoop_hpcc"])
    assert data["workload"][0]["cdf"] == str(WORKLOAD_DIR / "fb_hadoop_hpcc.txt")


# --------------------------------------------------------------------------- perf scenario


def test_incast_layout() -> None:
    assert incast_layout(16) == (16, 1)
    assert incast_layout(128) == (64, 2)
    assert incast_layout(1024) == (32, 32)
    assert incast_layout(8192) == (64, 128)
    assert incast_layout(8) == (8, 1)
    assert incast_layout(100) == (64, 2)
    with pytest.raises(ValueError):
        incast_layout(0)


def test_incast_scenario_is_the_contract_dict() -> None:
    assert incast_scenario(8192) == {
        "name": "perf-incast-8192",
        "seed": 1,
        "duration": "100ms",
        "topology": {"kind": "star", "hosts": 65, "link_rate": "100Gbps", "link_delay": "1us"},
        "switch": {"pfc": {"enabled": True}},
        "packets": {"payload": 1024},
        "workload": [
            {
                "kind": "long",
                "pattern": "many_to_one",
                "receiver": 0,
                "flows_per_host": 128,
                "start": "0s",
            }
        ],
        "cc": {"algorithm": "line_rate"},
        "metrics": {"flow_series": False},
    }
    assert incast_scenario(16, cc="dcqcn")["cc"] == {"algorithm": "dcqcn"}


def test_cc_switch_replaces_every_flow_cc() -> None:
    spec = {
        "cc": {"algorithm": "fixed_rate", "rate": "1Gbps"},
        "workload": [
            {"kind": "long", "cc": {"algorithm": "fixed_rate"}},
            {"kind": "flows", "flows": [{"src": 1, "dst": 0, "cc": {"algorithm": "x"}}]},
        ],
    }
    data, _ = load_scenario(spec, ["cc.rate=2Gbps"], cc="line_rate")
    assert data["cc"] == {"algorithm": "line_rate", "rate": "2Gbps"}
    assert "cc" not in data["workload"][0]
    assert "cc" not in data["workload"][1]["flows"][0]
    assert spec["workload"][0]["cc"] == {"algorithm": "fixed_rate"}  # input untouched


# --------------------------------------------------------------------------- results


SAMPLE_SUMMARY: dict[str, Any] = {
    "scenario": "sample",
    "seed": 1,
    "duration_s": 0.01,
    "window_s": [0.001, 0.01],
    "events": 123456,
    "packet_hops": 65432,
    "bottleneck": {
        "port": "sw0->h0",
        "utilization": 0.987,
        "queue_mean_kb": 12.5,
        "queue_p99_kb": 30.0,
        "queue_max_kb": 31.0,
        "queue_latency_mean_us": 1.0,
        "queue_latency_p99_us": None,
    },
    "network": {"drops_packets": 0, "drops_bytes": 0, "ecn_marks": 5, "pfc_pauses": 2},
    "flows": {
        "count": 16,
        "completed": 0,
        "throughput_gbps_mean": 6.2,
        "retransmitted_bytes": 2_500_000,
        "timeouts": 3,
        "jain": 0.999,
        "min_max": 0.98,
        "host_min_max": 0.98,
        "fct_us": None,
        "slowdown": None,
    },
    "paper": {"SU": 98.7, "FR": 98.0, "QL": 1.0, "drops_mb": 0.0},
    "conservation": {"sent_bytes": 10_000_000, "delivered_bytes": 9_000_000},
}


def test_summary_table_renders_with_nulls() -> None:
    from rich.console import Console

    console = Console(width=120, record=True, file=io.StringIO())
    console.print(summary_table(SAMPLE_SUMMARY, {"wall_s": 0.5, "setup_s": 0.01}))
    console.print(summary_table({}))
    text = console.export_text()
    assert "98.70 %" in text and "123,456" in text and "sw0->h0" in text
    # Retransmissions with their share of the bytes sent, so that a goodput collapse shows.
    assert "2.5 MB (25.0 % of sent)" in text
    assert re.search(r"timeouts\s+│\s+3\s", text), text


def test_result_save_load_roundtrip(tmp_path: Path) -> None:
    series = {
        "ports": {
            "time_s": np.array([0.0, 0.1]),
            "port_id": np.array([0, 0], dtype=np.uint32),
            "queue_bytes": np.array([0.0, 10.0]),
            "tx_gbps": np.array([99.0, 100.0]),
        },
        "port_info": {
            "port_id": np.array([0], dtype=np.uint32),
            "name": ["sw0->h0"],
            "node": np.array([0]),
            "rate_gbps": np.array([100.0]),
        },
    }
    scenario = {"name": "sample", "seed": 1}
    result = Result.from_native(json.dumps(SAMPLE_SUMMARY), series, scenario, {"wall_s": 1.0})
    assert isinstance(result.series["ports"], pd.DataFrame)
    assert "sample" in repr(result)
    out = result.save(tmp_path / "out")
    assert sorted(p.name for p in out.iterdir()) == [
        "port_info.parquet",
        "ports.parquet",
        "scenario.json",
        "summary.json",
        "timing.json",
    ]
    back = Result.load(out)
    assert back.summary == SAMPLE_SUMMARY
    assert back.scenario == scenario
    assert back.timing == {"wall_s": 1.0}
    pd.testing.assert_frame_equal(back.series["ports"], result.series["ports"])
    assert back.series["port_info"]["name"].tolist() == ["sw0->h0"]
    with pytest.raises(FileNotFoundError):
        Result.load(tmp_path)


# --------------------------------------------------------------------------- CLI


def test_cli_missing_file_is_one_red_line() -> None:
    proc = run_cli("run", "does/not/exist.toml")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: scenario file not found: does/not/exist.toml"
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_cdf_file_beside_the_scenario_needs_no_slash(tmp_path: Path) -> None:
    # `cdf = "my.cdf"` names the file next to the TOML file (docs/scenarios.md: a bundled name
    # or a file path, relative paths against the scenario's folder); it was taken for an
    # unknown bundled name.
    (tmp_path / "my.cdf").write_text("# sizes\n1000 0.5\n10000 1.0\n")
    path = tmp_path / "s.toml"
    path.write_text(
        'duration = "1ms"\n[topology]\nkind = "star"\nhosts = 3\n'
        '[[workload]]\nkind = "poisson"\nload = 0.5\ncdf = "my.cdf"\n'
    )
    result = ccgym.run(str(path))
    assert result.summary["flows"]["count"] > 0
    assert result.scenario["workload"][0]["cdf"] == str((tmp_path / "my.cdf").resolve())
    assert set(result.series["flow_info"]["size_bytes"]) <= set(range(1000, 10001))
    with pytest.raises(ccgym.ScenarioError, match="unknown workload CDF and no such file"):
        ccgym.run(str(path), overrides=["workload[0].cdf=other.cdf"])


def test_cli_bad_cdf_and_bad_override(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[[workload]]\nkind = "poisson"\ncdf = "nope"\n')
    proc = run_cli("run", str(path))
    assert proc.returncode == 2
    assert proc.stderr.startswith('error: workload[0].cdf: value "nope": unknown workload CDF')
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = run_cli("run", "incast-16", "--set", "seed")
    assert proc.returncode == 2
    assert "expected key=value" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_toml_syntax_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("seed = = 1\n")
    proc = run_cli("run", str(path))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {path}: invalid TOML")
    assert "line 1" in proc.stderr


def test_cli_debug_shows_traceback() -> None:
    proc = run_cli("--debug", "run", "does/not/exist.toml")
    assert proc.returncode != 0 and "Traceback" in proc.stderr
    proc = run_cli("run", "--debug", "does/not/exist.toml")
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_cli_list() -> None:
    proc = run_cli("list", "scenarios")
    assert proc.returncode == 0 and "incast-16" in proc.stdout
    proc = run_cli("list", "workloads")
    assert proc.returncode == 0
    for name in bundled_workloads():
        assert name in proc.stdout


def test_cli_list_suites_counts_the_runs_bench_plans() -> None:
    from ccgym.bench.runner import bundled_suites, load_suite, suite_jobs

    proc = run_cli("list", "suites")
    assert proc.returncode == 0
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    assert sorted(lines) == bundled_suites()
    quick = load_suite("quick")
    assert f" {len(suite_jobs(quick))} runs  {quick['description']}" in lines["quick"]


def test_cli_usage_error_exit_2() -> None:
    proc = run_cli("list", "things")
    assert proc.returncode == 2


# --------------------------------------------------------------------------- needs ccgym._sim


@pytest.fixture
def sim() -> Any:
    return pytest.importorskip("ccgym._sim")


def test_scenario_error_is_the_native_class(sim: Any) -> None:
    assert ScenarioError is sim.ScenarioError
    assert issubclass(ScenarioError, ValueError)


def test_run_bundled_incast(sim: Any, tmp_path: Path) -> None:
    result = ccgym.run("incast-16", overrides=["duration=2ms", "metrics.window=['0ms','2ms']"])
    assert result.summary["scenario"] == "incast-16"
    assert result.summary["events"] > 0
    assert set(result.series) >= {"ports", "port_info", "flow_info"}
    assert all(isinstance(t, pd.DataFrame) for t in result.series.values())
    back = Result.load(result.save(tmp_path / "r"))
    assert back.summary == json.loads(json.dumps(result.summary))


def test_cli_run_out(sim: Any, tmp_path: Path) -> None:
    out = tmp_path / "results"
    proc = run_cli(
        "run", "incast-16", "--set", "duration=2ms", "--set", "metrics.window=['0ms','2ms']",
        "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "utilisation" in proc.stdout and str(out) in proc.stdout
    assert (out / "summary.json").is_file() and (out / "ports.parquet").is_file()


def test_cli_run_out_fails_before_the_run(sim: Any, tmp_path: Path) -> None:
    # A results folder that cannot be made is reported before the simulation, not after it.
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = run_cli("run", "incast-16", "--set", "duration=2ms", "--out", str(blocker / "results"))
    assert proc.returncode == 2 and proc.stderr.startswith("error: "), proc.stderr
    assert str(blocker) in proc.stderr and "Traceback" not in proc.stderr
    assert "utilisation" not in proc.stdout  # the run did not happen
    # A run that fails leaves no empty folders behind; an existing folder stays.
    new = tmp_path / "new" / "deeper"
    proc = run_cli("run", "incast-16", "--set", "topology.link_rate=-5Gbps", "--out", str(new))
    assert proc.returncode == 2 and not (tmp_path / "new").exists()
    proc = run_cli("run", "incast-16", "--set", "topology.link_rate=-5Gbps", "--out", str(tmp_path))
    assert proc.returncode == 2 and tmp_path.is_dir()


def test_cli_native_scenario_error(sim: Any) -> None:
    proc = run_cli("run", "incast-16", "--set", "topology.link_rate=-5Gbps")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "link_rate" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_fit_table_keeps_every_cell_whole() -> None:
    """A 12-column perf table on a 100-column terminal: each column as wide as its widest cell,
    headers wrapped at their spaces, nothing cut to "…"; a table that fits is left alone."""
    from rich.console import Console

    from ccgym.cli.common import fit_table
    from ccgym.cli.perf import perf_table

    row = {"cc": "line_rate", "flows": 8192, "hosts": 64, "flows_per_host": 128,
           "sim_time_s": 0.1, "events": 81_862_130, "events_per_s": 2.42e7, "hops_per_s": 1.61e7,
           "ns_per_hop": 62.0, "ratio_ns_per_hop": 1.0, "ratio_vs_line_rate": 1.0,
           "setup_s": 0.0001752, "peak_rss_mb": 33, "packet_hops": 1}  # fmt: skip
    wide = perf_table([row])
    assert Console(width=10_000).measure(wide).maximum > 100
    console = Console(width=100, record=True)
    console.print(fit_table(wide, 100))
    text = console.export_text()
    assert "…" not in text and all(len(line) <= 100 for line in text.splitlines())
    for cell in ("line_rate", "8,192", "64×128", "81,862,130", "0.1752 ms", "33 MB"):
        assert cell in text
    narrow = perf_table([row])
    assert fit_table(narrow, 1_000) is narrow and narrow.box is not None and narrow.show_edge


def test_split_table_cuts_a_too_wide_table_into_parts_of_whole_columns() -> None:
    """On a terminal narrower than the fitted table, the table is printed in parts of whole
    columns, each repeating the key columns (scenario, method), the title once at the top and
    the caption once at the bottom; no cell is cut and no line is wider than the terminal."""
    from rich.console import Console
    from rich.table import Table

    from ccgym.cli.common import split_table

    table = Table(title="suite x", caption="* = Pareto front")
    table.add_column("scenario")
    table.add_column("method")
    for name in ("seeds", "SU %", "FR %", "Jain", "QL us", "drops MB"):
        table.add_column(name, justify="right")
    table.add_row("m2o 128", "policy:adpg-default *", "1", "100.0", "95.6", "1.000", "10.54",
                  "0.00", style="bold", end_section=True)  # fmt: skip
    table.add_row("m2o 8192", "timely", "3", "100.0", "37.5", "0.932", "838.81", "10793.35")
    parts = split_table(table, 54)
    assert len(parts) == 2
    console = Console(width=54, record=True)
    for part in parts:
        console.print(part)
    text = console.export_text()
    assert "…" not in text and all(len(line) <= 54 for line in text.splitlines())
    for cell in ("100.0", "95.6", "1.000", "838.81", "10793.35", "policy:adpg-default *"):
        assert cell in text
    assert text.count("m2o 8192") == 2 and text.count("timely") == 2
    assert text.count("suite x") == 1 and text.count("Pareto front") == 1
    assert text.index("suite x") < text.index("SU %") < text.index("drops") < text.index("Pareto")
    assert [p.rows[0].style for p in parts] == ["bold", "bold"]
    assert all(p.rows[0].end_section for p in parts)
    wide = Table()
    wide.add_column("a")
    wide.add_column("b", justify="right")
    wide.add_row("x", "1")
    assert split_table(wide, 80) == [wide]


def test_progress_bar_keeps_count_and_clock_whole_on_a_narrow_terminal() -> None:
    """At 60 columns the bench's bar shows the whole title, count and clock and cuts only the
    run's label (rich alone had cut the count to "7…" and the clock to "0:…")."""
    from rich.console import Console

    from ccgym._progress import progress_bar

    label = "m2o 128 · policy:adpg-default · seed 1"
    for width, whole_label in ((60, False), (120, True)):
        console = Console(width=width, record=True)
        bar = progress_bar("report quick", count_width=5, elastic="last", console=console)
        task = bar.add_task("x", total=29, completed=7, last=label)
        console.print(bar.make_tasks_table([bar.tasks[task]]))
        line = console.export_text().rstrip("\n")
        assert "\n" not in line and len(line) <= width
        assert line.startswith("report quick") and " 7/29 " in line
        assert line.endswith("0:00:00")
        assert (label in line) == whole_label and ("m2o 128" in line)


def test_run_refuses_a_hopass_experiment_and_says_how_to_run_it() -> None:
    """A file with a top-level [hopass] table is a HOPASS slow-layer experiment: ``ccgym run``
    used to fail with the simulator's misleading "hopass: unknown field `hopass`"."""
    pytest.importorskip("ccgym._sim")
    path = "python/ccgym/hopass/scenarios/overall.toml"
    proc = run_cli("run", path, "--quiet", cwd=PYTHON_DIR.parent)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "unknown field" not in err, err
    assert err.startswith(f"error: {path} is a HOPASS slow-layer experiment"), err
    assert f'ccgym.hopass.run_experiment(ccgym.load_scenario("{path}")[0], "hopass")' in err
    assert "ccgym bench --suite hopass-slow-layer" in err
