"""``ccgym perf --topologies`` (fat-tree permutations, a Poisson leaf-spine) and ``--compare``
(another build of the native module, alternated with this one): the scenarios, the ratios, and
the plumbing that makes a child process run the other build. Durations are tiny: these test what
is measured and how it is reported, not how fast it is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ccgym._sim")

from ccgym import perf  # noqa: E402
from ccgym._errors import PerfError  # noqa: E402
from ccgym.cli import build_parser, main  # noqa: E402
from ccgym.cli.perf import compare_jobs  # noqa: E402

OWN_NATIVE = Path(perf.native().__file__).resolve()


@pytest.fixture
def other_build(tmp_path: Path) -> Path:
    """A copy of this build's native module at another path (a checkout-like folder)."""
    folder = tmp_path / "other" / "python" / "ccgym"
    folder.mkdir(parents=True)
    return Path(shutil.copy(OWN_NATIVE, folder / OWN_NATIVE.name))


# --------------------------------------------------------------------------- scenarios


def test_permutation_is_a_seeded_derangement() -> None:
    flows = perf.permutation_flows(128)
    assert [f["src"] for f in flows] == list(range(128))
    dsts = [f["dst"] for f in flows]
    assert sorted(dsts) == list(range(128))  # every host receives exactly one flow
    assert all(f["src"] != f["dst"] for f in flows)
    assert flows == perf.permutation_flows(128) and flows != perf.permutation_flows(128, seed=2)
    with pytest.raises(ValueError, match="at least 2 hosts"):
        perf.permutation_flows(1)


@pytest.mark.parametrize(
    ("entry", "kind", "hosts", "duration"),
    [
        ("fat-tree-8", "fat_tree", 128, "10ms"),
        ("fat-tree-16", "fat_tree", 1024, "1ms"),
        ("leaf-spine", "leaf_spine", 144, "5ms"),
    ],
)
def test_topology_scenarios(entry: str, kind: str, hosts: int, duration: str) -> None:
    data = perf.topology_scenario(entry, cc="hpcc")
    assert data["duration"] == duration and data["cc"] == {"algorithm": "hpcc"}
    topo = data["topology"]
    assert topo["kind"] == kind and perf._hosts(topo) == hosts
    assert (topo["link_rate"], topo["link_delay"]) == ("100Gbps", "1us")
    assert data["packets"] == {"payload": 1024} and data["switch"]["pfc"]["enabled"]
    (workload,) = data["workload"]
    if kind == "fat_tree":
        assert topo["k"] ** 3 // 4 == hosts
        assert workload["kind"] == "flows" and len(workload["flows"]) == hosts
        assert "size" not in workload["flows"][0]  # long flows
    else:
        assert workload["kind"] == "poisson" and workload["cdf"] == perf.POISSON_CDF
    assert perf.topology_scenario(entry, "0.1ms")["duration"] == "0.1ms"
    with pytest.raises(ValueError, match="no topology perf entry 'ring'"):
        perf.topology_scenario("ring")


def test_topology_child_runs_the_entry() -> None:
    row = perf.run_child(("topology", "fat-tree-8", "0.01ms", "hpcc"))
    assert (row["entry"], row["cc"], row["hosts"], row["flows"]) == ("fat-tree-8", "hpcc", 128, 128)
    assert row["sim_time_s"] == pytest.approx(1e-5)
    assert row["packet_hops"] > 0 and row["ns_per_hop"] > 0
    assert Path(row["native_module"]).resolve() == OWN_NATIVE
    row = perf.run_child(("topology", "leaf-spine", "0.02ms", "line_rate"))
    assert row["hosts"] == 144 and row["events"] > 0


def _fake_row(**fields: Any) -> dict[str, Any]:
    return {"ns_per_hop": None, **fields}


def test_topology_ratios(monkeypatch: pytest.MonkeyPatch) -> None:
    """ratio_vs_incast divides by the mean of the same CC's incast rows; the larger fat tree is
    divided by the smaller one of the same CC."""
    incast = [
        _fake_row(cc="line_rate", flows=16, ns_per_hop=100.0),
        _fake_row(cc="line_rate", flows=128, ns_per_hop=120.0),
        _fake_row(cc="hpcc", flows=16, ns_per_hop=150.0),
        _fake_row(cc="hpcc", flows=128, ns_per_hop=150.0),
    ]
    per_hop = {
        ("fat-tree-8", "line_rate"): 330.0,
        ("fat-tree-16", "line_rate"): 660.0,
        ("leaf-spine", "line_rate"): 220.0,
        ("fat-tree-8", "hpcc"): 300.0,
        ("fat-tree-16", "hpcc"): 1200.0,
        ("leaf-spine", "hpcc"): 150.0,
    }
    calls: list[tuple[str, ...]] = []

    def fake_run_perf(flows: Any, duration: Any, on_start: Any = None, ccs: Any = ()) -> Any:
        assert list(flows) == [16, 128] and duration == "1ms" and list(ccs) == ["line_rate", "hpcc"]
        return incast

    def fake_child(job: tuple[str, ...], native_path: Any = None) -> dict[str, Any]:
        calls.append(job)
        kind, entry, _duration, cc = job
        data = perf.topology_scenario(entry)
        return _fake_row(
            entry=entry, cc=cc, hosts=perf._hosts(data["topology"]), ns_per_hop=per_hop[entry, cc]
        )

    monkeypatch.setattr(perf, "run_perf", fake_run_perf)
    monkeypatch.setattr(perf, "run_child", fake_child)
    out = perf.run_topology_perf(
        None, None, ccs=["line_rate", "hpcc"], incast_flows=[16, 128], incast_duration="1ms"
    )
    assert out["incast"] is incast
    assert [c[1:] for c in calls[:3]] == [
        ("fat-tree-8", "10ms", "line_rate"),
        ("fat-tree-16", "1ms", "line_rate"),
        ("leaf-spine", "5ms", "line_rate"),
    ]
    by = {(r["entry"], r["cc"]): r for r in out["topology"]}
    assert by["fat-tree-8", "line_rate"]["ratio_vs_incast"] == pytest.approx(3.0)  # 330 / 110
    assert by["leaf-spine", "line_rate"]["ratio_vs_incast"] == pytest.approx(2.0)
    assert by["fat-tree-16", "hpcc"]["ratio_vs_incast"] == pytest.approx(8.0)
    assert by["fat-tree-16", "line_rate"]["ratio_vs_smaller_fat_tree"] == pytest.approx(2.0)
    assert by["fat-tree-16", "hpcc"]["ratio_vs_smaller_fat_tree"] == pytest.approx(4.0)
    assert by["fat-tree-8", "hpcc"]["ratio_vs_smaller_fat_tree"] is None
    assert by["leaf-spine", "hpcc"]["ratio_vs_smaller_fat_tree"] is None
    with pytest.raises(ValueError, match="no topology perf entry"):
        perf.run_topology_perf(["fat-tree-4"])


def test_cli_topologies_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["perf", "--topologies", "fat-tree-8", "--topology-duration", "0.01ms"]
    args += ["--flows", "16", "--duration", "0.2ms", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["flows"], r["cc"]) for r in out["incast"]] == [(16, "line_rate"), (16, "hpcc")]
    rows = out["topology"]
    assert [(r["entry"], r["cc"]) for r in rows] == [
        ("fat-tree-8", "line_rate"),
        ("fat-tree-8", "hpcc"),
    ]
    for r in rows:
        ref = next(i["ns_per_hop"] for i in out["incast"] if i["cc"] == r["cc"])
        assert r["ratio_vs_incast"] == pytest.approx(r["ns_per_hop"] / ref)


@pytest.mark.parametrize("extra", [[], ["--compare", "."]])
def test_cli_refuses_an_unknown_topology_at_once(
    extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # A mistake on the command line: argparse's one line and status 2, before anything runs
    # (it was a ValueError from inside the run, and with --compare a KeyError).
    with pytest.raises(SystemExit) as exit_info:
        main(["perf", "--topologies", "fat-tree-8", "fat-tree-9", *extra])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --topologies: no entry 'fat-tree-9'" in err
    assert "fat-tree-8, fat-tree-16, leaf-spine" in err and "Traceback" not in err


def test_cli_refuses_an_unknown_fabric_method_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["perf", "--fabric", "pfabric", "phast"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --fabric: no method 'phast' in the receiver-driven suite" in err
    assert "pfabric" in err and "homa" in err and "Traceback" not in err


# --------------------------------------------------------------------------- two builds


def test_find_native(tmp_path: Path, other_build: Path) -> None:
    checkout = other_build.parent.parent.parent
    for given in (other_build, other_build.parent, other_build.parent.parent, checkout):
        assert perf.find_native(given) == other_build.resolve()
    with pytest.raises(PerfError, match="no such file"):
        perf.find_native(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PerfError, match="no native module"):
        perf.find_native(tmp_path / "empty")
    shutil.copy(other_build, other_build.parent / "_sim.cpython-311-x86_64-linux-gnu.so")
    with pytest.raises(PerfError, match="several native modules"):
        perf.find_native(checkout)


def test_compare_alternates_the_builds(other_build: Path) -> None:
    """Each side's runs ran in a child that loaded that side's native module, in pairs whose
    order alternates (new old, old new); the ratio is new / old of each side's least ns per hop,
    and each pair gives a ratio of its own."""
    order: list[str] = []
    jobs = [("incast", "16", "0.2ms", "line_rate"), ("topology", "fat-tree-8", "0.005ms", "hpcc")]
    rows = perf.compare_builds(jobs, other_build.parent.parent, rounds=2, on_start=order.append)
    assert [label.split(": ")[1].split(" ")[0] for label in order] == [
        "new",
        "old",
        "old",
        "new",
    ] * 2
    assert [r["job"] for r in rows] == [list(j) for j in jobs]
    for row in rows:
        new, old = row["new"], row["old"]
        assert len(new["runs"]) == len(old["runs"]) == 2
        assert {Path(r["native_module"]).resolve() for r in new["runs"]} == {OWN_NATIVE}
        assert {r["native_module"] for r in old["runs"]} == {str(other_build.resolve())}
        assert new["ns_per_hop"] == min(r["ns_per_hop"] for r in new["runs"])
        assert old["ns_per_hop"] == min(r["ns_per_hop"] for r in old["runs"])
        assert row["ratio_ns_per_hop"] == pytest.approx(new["ns_per_hop"] / old["ns_per_hop"])
        assert row["ratio_peak_rss"] == pytest.approx(new["peak_rss_mb"] / old["peak_rss_mb"])
        assert row["same_counts"]  # the same build simulates the same run
        pairs = [
            n["ns_per_hop"] / o["ns_per_hop"] for n, o in zip(new["runs"], old["runs"], strict=True)
        ]
        assert row["paired_ratios"] == pytest.approx(pairs)
        assert row["ratio_median"] == pytest.approx(sum(pairs) / 2)
        assert row["verdict"] == "within noise"  # two pairs can never be significant
    assert rows[1]["new"]["runs"][0]["entry"] == "fat-tree-8"


def test_sign_test_and_paired_verdict() -> None:
    """Hand-computed sign tests, and the verdict they give over pairs of runs."""
    assert perf.sign_test(6, 0) == pytest.approx(2 / 64)
    assert perf.sign_test(0, 5) == pytest.approx(2 / 32)
    assert perf.sign_test(9, 1) == pytest.approx(2 * 11 / 1024)
    assert perf.sign_test(3, 3) == 1.0 and perf.sign_test(0, 0) == 1.0

    def runs(*ns: float) -> list[dict[str, float]]:
        return [{"ns_per_hop": n} for n in ns]

    old = runs(100, 110, 95, 120, 100, 105)
    faster = perf.paired_verdict(runs(90, 100, 90, 100, 95, 100), old)
    assert faster["verdict"] == "faster" and faster["ratio_high"] < 1
    assert faster["sign_test_p"] == pytest.approx(2 / 64)
    slower = perf.paired_verdict(runs(110, 120, 100, 130, 101, 106), old)
    assert slower["verdict"] == "slower" and slower["ratio_low"] > 1
    # Five pairs leaning one way, one the other: p = 0.22, not a verdict.
    mixed = perf.paired_verdict(runs(90, 100, 100, 100, 95, 100), old)
    assert mixed["verdict"] == "within noise"
    assert mixed["sign_test_p"] == pytest.approx(2 * 7 / 64)
    assert perf.paired_verdict(runs(90), runs(100))["verdict"] is None
    assert perf.paired_verdict([], [])["verdict"] is None


def test_compare_reports_a_build_that_cannot_load(tmp_path: Path) -> None:
    broken = tmp_path / "_sim.abi3.so"
    broken.write_bytes(b"not a shared object")
    with pytest.raises(PerfError, match=f"with {broken}"):
        perf.compare_builds([("incast", "16", "0.1ms", "line_rate")], broken, rounds=1)


def test_cli_compare(other_build: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["perf", "--compare", str(other_build), "--flows", "16", "--duration", "0.2ms"]
    assert main([*args, "--rounds", "1", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["label"] == "incast 16 flows, line_rate" and row["same_counts"]
    assert row["old"]["native_module"] == str(other_build.resolve())
    assert main([*args, "--rounds", "1"]) == 0
    table = capsys.readouterr().out
    assert "new / old" in table and str(other_build.resolve()) in table.replace("\n", "")
    assert main([*args, "--agent"]) == 1
    assert "--compare measures simulator runs" in capsys.readouterr().err
    assert main(["perf", "--topologies", "--fabric"]) == 1


def test_compare_jobs() -> None:
    def jobs(*argv: str) -> list[tuple[str, ...]]:
        return compare_jobs(build_parser().parse_args(["perf", "--compare", "x", *argv]))

    assert [j[1:3] for j in jobs()] == [(n, "100ms") for n in ("16", "128", "1024", "8192")]
    assert jobs("--duration", "1ms", "--flows", "16", "--cc", "dcqcn") == [
        ("incast", "16", "1ms", "line_rate"),
        ("incast", "16", "1ms", "dcqcn"),
    ]
    got = jobs("--duration", "1ms", "--topologies", "fat-tree-8", "--topology-duration", "2ms")
    assert got == [
        ("incast", "16", "1ms", "line_rate"),
        ("incast", "16", "1ms", "hpcc"),
        ("topology", "fat-tree-8", "2ms", "line_rate"),
        ("topology", "fat-tree-8", "2ms", "hpcc"),
    ]
    got = jobs("--duration", "1ms", "--fabric", "pfabric")
    assert got == [("incast", "16", "1ms", "line_rate"), ("fabric", "pfabric", "1ms")]
