"""The ``receiver-driven`` bench suite: method presets, the slowdown-by-size table and report.

The end-to-end test runs the bundled suite's presets on a small variant of its fabric (32 hosts:
2 racks of 16 under 2 spines, WebSearch at 0.6 load, 10 ms) and checks the table's shape and the
papers' first claim: pFabric's smallest flows finish closer to their ideal than DCTCP's.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from ccgym._errors import ScenarioError
from ccgym.bench.report import write_report
from ccgym.bench.runner import known_ccs, load_suite, run_key, run_suite, suite_jobs
from ccgym.bench.slowdown import scores, size_profile
from ccgym.bench.tables import SLOWDOWN, build_rows, csv_text, markdown_table
from ccgym.scenario import load_scenario

METHODS = ["pfabric", "phost", "dctcp", "dcqcn", "newreno", "homa", "hopass", "ndp", "eqds"]
QUICK = [
    "topology.leaves=2",
    "topology.spines=2",
    "duration=10ms",
    "metrics.window=['1ms', '8ms']",
]


def _suite(tmp_path: Path, methods: str, top: str = "") -> Path:
    path = tmp_path / "s.toml"
    path.write_text(f'{top}\n[[scenario]]\nscenario = "receiver-driven-websearch"\n{methods}\n')
    return path


def test_bundled_suite_methods_are_presets() -> None:
    suite = load_suite("receiver-driven")
    ccs = known_ccs()
    assert {"homa", "hopass", "ndp", "eqds"} <= set(ccs)
    assert suite["methods"] == METHODS and suite["skipped_methods"] == []
    assert suite["table"] == "slowdown" and len(suite["scenario"]) == 9
    jobs = suite_jobs(suite)
    assert len(jobs) == 9 * len(suite["methods"]) and len({j.key for j in jobs}) == len(jobs)
    pf = next(j for j in jobs if j.method == "pfabric")
    assert pf.preset is not None and pf.preset["cc"] == "pfabric"
    assert "switch.discipline=rank" in pf.preset["overrides"]
    ph = next(j for j in jobs if j.method == "phost")
    assert ph.preset is not None
    assert {"host.scheduler=srpt", "host.burst=1500"} <= set(ph.preset["overrides"])
    # YAPS's control packets are a bare 40-byte header, for both designs.
    assert {"packets.ack=40", "packets.rts=40", "packets.grant=40"} <= set(ph.preset["overrides"])
    assert "packets.ack=40" in pf.preset["overrides"]
    nd = next(j for j in jobs if j.method == "ndp")
    assert nd.preset is not None and nd.preset["cc"] == "ndp"
    assert {"switch.trim=true", "switch.load_balancing=packet"} <= set(nd.preset["overrides"])


def test_preset_overrides_come_after_the_cc_and_the_scenario(tmp_path: Path) -> None:
    # The preset's cc.PARAM tunes its CC (set first, as --cc does), and its switch setting wins
    # over the scenario's override of the same field.
    path = _suite(
        tmp_path,
        'overrides = ["switch.port_buffer=100KB"]',
        '[methods.tuned]\ncc = "dctcp"\n'
        'overrides = ["cc.g=0.125", "switch.buffer_model=static", "switch.port_buffer=50KB"]\n',
    )
    suite = load_suite(path)
    (job,) = suite_jobs(suite)
    assert job.method == "tuned"
    from ccgym.bench.runner import _preset_scenario

    assert job.preset is not None
    data = _preset_scenario(job.scenario, job.overrides, job.method, job.preset)
    assert data["cc"] == {"algorithm": "dctcp", "g": 0.125}
    assert data["switch"]["port_buffer"] == "50KB"


def test_cache_key_holds_the_preset(tmp_path: Path) -> None:
    def key(methods: str) -> str:
        (job,) = suite_jobs(load_suite(_suite(tmp_path, "", methods)))
        return job.key

    a = key('[methods.a]\ncc = "dctcp"\n')
    assert key('[methods.a]\ncc = "dctcp"\noverrides = ["switch.ecn.kmin=10KB"]\n') != a
    assert key('[methods.b]\ncc = "dctcp"\n') != a  # the name too: records carry it
    assert key('[methods.a]\ncc = "newreno"\n') != a
    # The list form keeps the key it had before presets existed.
    (job,) = suite_jobs(load_suite(_suite(tmp_path, "", 'methods = ["dctcp"]')))
    data, _ = load_scenario("receiver-driven-websearch", ["seed=1"])
    assert job.key == run_key(data, "dctcp", 1)


@pytest.mark.parametrize(
    ("methods", "message"),
    [
        ('[methods.x]\ncc = "nosuchcc"\n', r"methods\.x: no CC 'nosuchcc' in this ccgym"),
        ("[methods.x]\noverrides = []\n", r"methods\.x needs cc = NAME"),
        ('[methods.x]\ncc = "dctcp"\noverides = []\n', r"unknown key 'overides' in methods\.x"),
        ('[methods.x]\ncc = "dctcp"\noverrides = "a=b"\n', r"overrides in methods\.x must be"),
        ('[methods.x]\ncc = "dctcp"\noptional = "yes"\n', r"optional in methods\.x must be"),
        ("[methods]\nx = 3\n", r"methods\.x must be a table"),
        ('[methods.x]\ncc = "dctcp"\noverrides = ["switch"]\n', r"method 'x': .*switch"),
        ('[methods.x]\ncc = "nosuchcc"\noptional = true\n', r"every method is optional"),
    ],
    ids=[
        "unknown-cc",
        "no-cc",
        "typo",
        "str-overrides",
        "str-optional",
        "not-table",
        "bad-ov",
        "none",
    ],
)
def test_preset_mistakes_are_named(tmp_path: Path, methods: str, message: str) -> None:
    path = _suite(tmp_path, "", methods)
    with pytest.raises(ScenarioError, match=message):
        suite_jobs(load_suite(path))


def test_optional_presets_are_skipped_when_their_cc_is_missing(tmp_path: Path) -> None:
    methods = '[methods.a]\ncc = "dctcp"\n[methods.later]\ncc = "nosuchcc"\noptional = true\n'
    suite = load_suite(_suite(tmp_path, "", methods))
    assert suite["methods"] == ["a"] and suite["skipped_methods"] == ["later"]


def test_scores_and_profile_without_breakdown_are_empty() -> None:
    assert all(v is None for v in scores({"flows": {}}).values())
    empty = {"size_bytes": [], "start_s": [], "slowdown": []}
    assert size_profile(empty, (0.0, 1.0))["mean"] == []


def test_quick_suite_end_to_end(tmp_path: Path) -> None:
    suite = load_suite("receiver-driven")
    suite["scenario"] = [sc for sc in suite["scenario"] if sc["label"] == "websearch 0.6"]
    suite["overrides"] = QUICK
    suite["methods"] = METHODS
    records, stats = run_suite(suite, tmp_path, jobs=2)
    assert stats.ran == len(METHODS)
    assert {r["summary"]["scenario"] for r in records} == {"receiver-driven-websearch"}
    rows = build_rows(records, spec=SLOWDOWN)
    assert [r["method"] for r in rows] == METHODS
    by = {r["method"]: r for r in rows}
    for row in rows:
        for key, _, _ in SLOWDOWN.columns:
            assert key in row
        assert row["sd0_mean"] is not None and row["sd0_mean"] >= 1.0
        assert row["sd0_p99"] >= row["sd0_mean"] * 0.999
    # pFabric's smallest flows beat DCTCP's, on the mean and on the tail.
    assert by["pfabric"]["sd0_mean"] < by["dctcp"]["sd0_mean"]
    # the bar for pFabric: flows up to 100 KB at mean slowdown below 1.5
    assert by["pfabric"]["sd0_mean"] < 1.5 and by["pfabric"]["sd1_mean"] < 1.5
    assert by["pfabric"]["sd0_p99"] < by["dctcp"]["sd0_p99"]
    # Homa's too, and they stay near their ideal (unscheduled first RTT at the top priority).
    assert by["homa"]["sd0_mean"] < 1.3 and by["homa"]["sd0_p99"] < by["dctcp"]["sd0_p99"]
    assert by["hopass"]["sd0_p99"] < by["dctcp"]["sd0_p99"]
    assert any(r["pareto"] for r in rows)
    # NDP's too: its switches cut packets rather than drop them.
    assert by["ndp"]["sd0_p99"] < by["dctcp"]["sd0_p99"]
    assert by["ndp"]["trimmed"] > 0 and by["ndp"]["drops"] == 0
    assert by["eqds"]["sd0_p99"] < by["dctcp"]["sd0_p99"] and by["eqds"]["drops"] == 0
    assert by["pfabric"]["trimmed"] is None
    # pFabric's drops include evictions; PFC keeps DCQCN lossless.
    assert by["pfabric"]["evicted"] > 0 and by["dcqcn"]["drops"] == 0
    header = markdown_table(rows, "t", SLOWDOWN).splitlines()[2]
    assert "<=10KB mean" in header and "large Gb/s" in header and "drops" in header
    assert "cut" in header
    table = list(csv.DictReader(io.StringIO(csv_text(rows, SLOWDOWN))))
    assert len(table) == len(METHODS) and "sd3_p50" in table[0] and "done0" in table[0]
    assert all(r.get("size_profile", {}).get("mean") for r in records)
    page = write_report(suite, records, tmp_path, stats=stats).read_text()
    assert "Slowdown against flow size" in page


def test_fabric_perf_entries() -> None:
    from ccgym.bench.runner import load_suite
    from ccgym.perf import FABRIC_METHODS, FABRIC_SUITE, fabric_presets, fabric_scenario

    # Every default entry is a method of the suite, with its preset.
    assert FABRIC_METHODS == ("pfabric", "homa")
    assert set(FABRIC_METHODS) <= set(load_suite(FABRIC_SUITE)["presets"])
    # The presets as perf reads them (unchecked, for --compare with older builds) are the suite's.
    assert fabric_presets() == load_suite(FABRIC_SUITE)["presets"]
    data = fabric_scenario("pfabric", "1ms")
    assert data["cc"]["algorithm"] == "pfabric" and data["switch"]["discipline"] == "rank"
    assert data["workload"][0]["load"] == 0.6 and data["topology"]["leaves"] == 9
    assert "window" not in data["metrics"]
    with pytest.raises(ValueError, match="no fabric perf entry 'nosuch'"):
        fabric_scenario("nosuch")
