"""End-to-end tests of the simulator through the public Python API.

Every test runs real (small) simulations on the native module ``ccgym._sim``; the module skips
itself when the extension is not built. Each test stays well under two seconds.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

_sim = pytest.importorskip("ccgym._sim")

import ccgym  # noqa: E402
from ccgym import Result, ScenarioError  # noqa: E402
from ccgym._errors import InternalError  # noqa: E402
from ccgym.runner import scenario_json  # noqa: E402
from ccgym.scenario import bundled_scenarios, load_scenario, scenario_description  # noqa: E402

PYTHON_DIR = Path(ccgym.__file__).resolve().parent.parent

# The columns docs/results.md documents for each table, in order.
TABLE_COLUMNS: dict[str, list[str]] = {
    "ports": ["time_s", "port_id", "queue_bytes", "tx_gbps"],
    "port_info": [
        "port_id", "name", "node", "rate_gbps", "utilization", "drops_packets", "ecn_marks",
        "pfc_pauses",
    ],
    "flow_info": [
        "flow_id", "src", "dst", "size_bytes", "start_s", "fct_s", "slowdown", "base_rtt_us",
        "min_rtt_us", "delivered_bytes", "received_bytes", "sent_bytes", "retx_bytes", "nacks",
        "cnps", "timeouts", "window_gbps",
    ],
    "flows": ["time_s", "flow_id", "rate_gbps"],
    "messages": ["flow_id", "start_s", "size_bytes", "fct_s"],
}  # fmt: skip

SUMMARY_KEYS = {
    "scenario", "seed", "duration_s", "simulated_s", "window_s", "events", "packet_hops",
    "bottleneck", "network", "flows", "messages", "paper", "conservation", "ports",
}  # fmt: skip


def star(hosts: int, **extra: Any) -> dict[str, Any]:
    return {"kind": "star", "hosts": hosts, "link_rate": "100Gbps", "link_delay": "1us", **extra}


def poisson_scenario(seed: int) -> dict[str, Any]:
    """8 hosts exchanging Hadoop-sized flows at 50% load for 2 ms, lossy, with ECN."""
    return {
        "name": "poisson-8",
        "seed": seed,
        "duration": "2ms",
        "topology": star(8),
        "switch": {"queue_cap": "200KiB", "ecn": {"kmin": "20KiB", "kmax": "100KiB", "pmax": 0.2}},
        "host": {"rto": "200us"},
        "metrics": {"window": ["0.5ms", "2ms"], "sample_interval": "20us"},
        "workload": [{"kind": "poisson", "load": 0.5, "cdf": "fb_hadoop_hpcc"}],
    }


def mixed_scenario() -> dict[str, Any]:
    """A long flow, message trains and an incast: every result table is produced."""
    return {
        "name": "mixed",
        "duration": "3ms",
        "topology": star(6),
        "metrics": {"window": ["0.5ms", "3ms"], "sample_interval": "50us", "flow_series": True},
        "workload": [
            {"kind": "long", "senders": [1], "receiver": 0, "start": "0s", "stop": "2.5ms"},
            {
                "kind": "messages",
                "senders": [2, 3],
                "receiver": 0,
                "start": "0.2ms",
                "size": "64KiB",
                "count": 4,
                "period": "0.5ms",
            },
            {"kind": "incast", "senders": [4, 5], "receiver": 0, "size": "32KiB", "start": "1ms"},
        ],
    }


# --------------------------------------------------------------------------- (a) determinism


def test_same_seed_gives_identical_results_other_seed_differs() -> None:
    a = ccgym.run(poisson_scenario(seed=7))
    b = ccgym.run(poisson_scenario(seed=7))
    assert a.summary["flows"]["count"] > 50, "the scenario should generate a real workload"
    assert a.summary["events"] > 10_000
    assert a.summary == b.summary
    assert a.summary["events"] == b.summary["events"]
    for name, table in a.series.items():
        pd.testing.assert_frame_equal(table, b.series[name])

    c = ccgym.run(poisson_scenario(seed=8))
    assert c.summary != a.summary
    assert c.summary["flows"] != a.summary["flows"]
    assert not a.series["flow_info"].equals(c.series["flow_info"])


def test_chunked_advance_does_not_change_the_run() -> None:
    """Running in slices (as the progress bar does) gives the same run as one call."""
    data, base_dir = load_scenario(poisson_scenario(seed=3))
    whole = _sim.Simulation(scenario_json(data), str(base_dir))
    whole.run_until(whole.end_ps)
    sliced = _sim.Simulation(scenario_json(data), str(base_dir))
    step = sliced.end_ps // 37
    while not sliced.run_until(sliced.now_ps + step):
        json.loads(sliced.summary())  # reading the summary mid-run must not disturb it
    assert whole.events == sliced.events
    assert json.loads(whole.summary()) == json.loads(sliced.summary())


# --------------------------------------------------------------------------- (b) saved results


def test_save_writes_summary_and_documented_parquet_tables(tmp_path: Path) -> None:
    result = ccgym.run(mixed_scenario())
    assert set(result.series) == set(TABLE_COLUMNS)
    out = result.save(tmp_path / "run")
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        ["summary.json", "scenario.json", "timing.json"] + [f"{t}.parquet" for t in TABLE_COLUMNS]
    )

    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) == SUMMARY_KEYS
    assert summary == json.loads(json.dumps(result.summary))
    assert set(summary["paper"]) == {"SU", "FR", "QL", "drops_mb"}
    assert json.loads((out / "scenario.json").read_text())["name"] == "mixed"
    assert json.loads((out / "timing.json").read_text())["wall_s"] > 0

    for table, columns in TABLE_COLUMNS.items():
        df = pd.read_parquet(out / f"{table}.parquet")
        assert list(df.columns) == columns, table
        assert len(df) > 0, table
        pd.testing.assert_frame_equal(df, result.series[table], check_dtype=True)

    info = pd.read_parquet(out / "flow_info.parquet")
    assert len(info) == summary["flows"]["count"] == 1 + 2 + 2
    assert info["flow_id"].dtype == "uint64" and info["fct_s"].dtype == "float64"
    ports = pd.read_parquet(out / "ports.parquet")
    port_info = pd.read_parquet(out / "port_info.parquet")
    assert set(ports["port_id"]) <= set(port_info["port_id"])
    assert summary["bottleneck"]["port"] in set(port_info["name"])
    # Conservation of data bytes, as documented.
    c = summary["conservation"]
    assert c["sent_bytes"] == c["delivered_bytes"] + c["dropped_bytes"] + c["in_flight_bytes"]

    back = Result.load(out)
    assert back.summary == summary
    assert set(back.series) == set(TABLE_COLUMNS)


def test_save_into_a_used_folder_leaves_no_table_of_the_earlier_run(tmp_path: Path) -> None:
    # `ccgym run X --out d`, then the same with flow series off: `d/flows.parquet` of the first
    # run must not come back with the second's summary.
    first = ccgym.run(mixed_scenario())
    assert {"flows", "messages"} <= set(first.series)
    first.save(tmp_path / "run")
    second = ccgym.run(mixed_scenario(), overrides=["metrics.flow_series=false"])
    assert "flows" not in second.series
    second.save(tmp_path / "run")
    assert not (tmp_path / "run" / "flows.parquet").exists()
    (tmp_path / "run" / "mine.parquet").write_bytes(b"")  # a file of one's own stays
    second.save(tmp_path / "run")
    assert (tmp_path / "run" / "mine.parquet").exists()
    (tmp_path / "run" / "mine.parquet").unlink()
    assert set(Result.load(tmp_path / "run").series) == set(second.series)


# --------------------------------------------------------------------------- (c) bad inputs


def base(**changes: Any) -> dict[str, Any]:
    scenario: dict[str, Any] = {
        "name": "bad",
        "duration": "1ms",
        "topology": star(4),
        "workload": [{"kind": "long", "receiver": 0}],
    }
    scenario.update(changes)
    return scenario


def custom_disconnected() -> dict[str, Any]:
    return {
        "kind": "custom",
        "nodes": [
            {"name": "a", "kind": "host"},
            {"name": "b", "kind": "host"},
            {"name": "s1", "kind": "switch"},
            {"name": "s2", "kind": "switch"},
        ],
        "links": [{"a": "a", "b": "s1"}, {"a": "b", "b": "s2"}],
    }


NON_MONOTONE_CDF = "# size probability\n100 0.2\n200 0.5\n300 0.4\n400 1.0\n"

# (id, scenario or a function of a temporary folder, overrides, field the message starts with,
#  texts it must contain)
BAD_INPUTS: list[tuple[str, Any, list[str], str, list[str]]] = [
    ("unknown-field", base(), ["topology.link_rat=1Gbps"], "topology.link_rat",
     ["unknown field", "link_rate"]),
    ("negative-rate", base(), ["topology.link_rate=-5Gbps"], "topology.link_rate",
     ["-5Gbps", "positive"]),
    ("bad-time-unit", base(), ["topology.link_delay=3 parsecs"], "topology.link_delay",
     ["3 parsecs", "unknown time unit"]),
    ("bad-size-unit", base(), ["switch.buffer=10 MiBs"], "switch.buffer",
     ["10 MiBs", "unknown size unit"]),
    ("flow-to-missing-host",
     base(workload=[{"kind": "flows", "flows": [{"src": 1, "dst": 9}]}]), [],
     "workload[0].flows[0].dst", ["9", "no such host"]),
    ("receiver-missing-host", base(), ["workload[0].receiver=4"], "workload[0].receiver",
     ["4", "no such host"]),
    ("non-monotone-cdf",
     lambda d: base(workload=[{"kind": "poisson", "load": 0.5, "cdf": str(d / "bad.txt")}]), [],
     "workload[0].cdf", ["bad.txt", "line 4", "not monotone"]),
    ("unknown-cdf-name",
     base(workload=[{"kind": "poisson", "load": 0.5, "cdf": "websarch"}]), [],
     "workload[0].cdf", ["websarch", "unknown workload CDF"]),
    ("unreachable-destination",
     base(topology=custom_disconnected(),
          workload=[{"kind": "flows", "flows": [{"src": "a", "dst": "b"}]}]), [],
     "workload[0]", ["a -> b", "unreachable"]),
    ("zero-buffer-with-pfc", base(switch={"buffer": 0, "pfc": {"enabled": True}}), [],
     "switch.buffer", ["lossless"]),
    ("kmin-above-kmax", base(switch={"ecn": {"kmin": "2MB", "kmax": "1MB"}}), [],
     "switch.ecn.kmin", ["2000000", "must not exceed kmax"]),
    ("pmax-out-of-range", base(), ["switch.ecn.pmax=1.5"], "switch.ecn.pmax",
     ["1.5", "probability"]),
    ("unknown-cc", base(), ["cc.algorithm=bbr9"], "cc.algorithm",
     ["bbr9", "unknown congestion control"]),
    ("unknown-cc-parameter", base(cc={"algorithm": "fixed_rate", "speed": 1}), [], "cc.speed",
     ["unknown parameter", "fixed_rate"]),
    ("unknown-topology-kind", base(), ["topology.kind=torus"], "topology.kind",
     ["torus", "unknown topology"]),
    ("field-of-another-kind", base(), ["topology.k=4"], "topology.k", ["does not apply", "star"]),
    ("odd-fat-tree", base(topology={"kind": "fat_tree", "k": 5}), [], "topology.k",
     ["5", "even"]),
    ("window-beyond-duration", base(), ["metrics.window=['0ms', '2ms']"], "metrics.window",
     ["after the end of the run"]),
    ("class-out-of-range", base(), ["workload[0].class=3"], "workload[0].class",
     ["3", "data queue"]),
    ("load-out-of-range",
     base(workload=[{"kind": "poisson", "load": 1.7, "cdf": "fb_hadoop_hpcc"}]), [],
     "workload[0].load", ["1.7", "(0, 1]"]),
    ("field-of-another-workload", base(), ["workload[0].load=0.5"], "workload[0].load",
     ["does not apply", "long"]),
    ("zero-duration", base(duration=0), [], "duration", ["must be positive"]),
    ("unknown-loss-recovery", base(), ["host.loss_recovery=sack"], "host.loss_recovery",
     ["sack", "go_back_n"]),
    ("no-workload", base(workload=[]), [], "workload", ["at least one"]),
    ("stop-after-end", base(), ["workload[0].stop=5ms"], "workload[0].stop",
     ["5ms", "after the end"]),
    ("poisson-empty-window",
     base(workload=[{"kind": "poisson", "load": 0.5, "cdf": "fb_hadoop_hpcc", "start": "0.5ms",
                     "stop": "0.5ms"}]), [],
     "workload[0].stop", ["500us", "no time for arrivals"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("scenario", "overrides", "field", "texts"),
    [pytest.param(*case[1:], id=case[0]) for case in BAD_INPUTS],
)
def test_bad_input_names_field_and_value(
    tmp_path: Path, scenario: Any, overrides: list[str], field: str, texts: list[str]
) -> None:
    (tmp_path / "bad.txt").write_text(NON_MONOTONE_CDF)
    spec = scenario(tmp_path) if callable(scenario) else scenario
    with pytest.raises(ScenarioError) as info:
        ccgym.run(spec, overrides=overrides)
    assert not isinstance(info.value, InternalError)
    message = str(info.value)
    assert message.startswith(f"{field}:"), message
    for text in texts:
        assert text in message, f"{text!r} not in {message!r}"
    assert "\n" not in message
    for leak in ("panicked", "simulator failure", "RUST_BACKTRACE", ".rs:"):
        assert leak not in message, message


def test_bad_inputs_are_many_and_distinct() -> None:
    assert len(BAD_INPUTS) >= 12
    assert len({case[0] for case in BAD_INPUTS}) == len(BAD_INPUTS)
    assert len({case[3] for case in BAD_INPUTS}) >= 12  # at least 12 different fields


# --------------------------------------------------------------------------- (d) CLI


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the ``ccgym`` command (its console script if installed, else ``python -m ccgym``)."""
    script = Path(sys.executable).with_name("ccgym")
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "ccgym"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), env.get("PYTHONPATH")]))
    env["COLUMNS"] = "200"
    return subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, timeout=60)


def test_cli_bad_scenario_prints_one_error_line_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        'name = "bad"\nduration = "1ms"\n\n[topology]\nkind = "star"\nhosts = 4\n\n'
        '[switch]\necn = { kmin = "2MB", kmax = "1MB" }\n\n'
        '[[workload]]\nkind = "long"\nreceiver = 0\n'
    )
    proc = run_cli("run", str(path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: switch.ecn.kmin: value 2000000: must not exceed kmax")
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr

    proc = run_cli("run", "incast-16", "--set", "workload[0].flows_per_host=0", "--quiet")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: workload[0].flows_per_host: value 0: must be at least 1"


# --------------------------------------------------------------------------- (e) bundled


@pytest.mark.parametrize("name", bundled_scenarios())
def test_bundled_scenario_builds_and_starts(name: str) -> None:
    assert scenario_description(name), f"{name}.toml needs a first-line # comment"
    data, base_dir = load_scenario(name)
    assert data["name"] == name
    sim = _sim.Simulation(scenario_json(data), str(base_dir))
    assert sim.now_ps == 0 and sim.end_ps > 0
    # A few simulated milliseconds: past the ADPG start times, cheap even at 8192 flows.
    sim.run_until(min(sim.end_ps, 3_000_000_000))
    summary = json.loads(sim.summary())
    assert summary["flows"]["count"] > 0
    assert sim.events > 0


ADPG_FLOWS = {
    "adpg-m2o-2": 2, "adpg-m2o-16": 16, "adpg-m2o-128": 128, "adpg-m2o-1024": 1024,
    "adpg-m2o-8192": 8192, "adpg-a2a-4": 12, "adpg-a2a-8": 56, "adpg-long-short-2": 2,
    "adpg-long-short-128": 128, "adpg-long-short-1024": 1024, "adpg-long-short-2048": 2048,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ADPG_FLOWS))
def test_adpg_scenarios_follow_the_reference_setting(name: str) -> None:
    data, base_dir = load_scenario(name)
    topo, sw, host, pk = data["topology"], data["switch"], data["host"], data["packets"]
    assert (topo["kind"], topo["link_rate"]) == ("star", "100Gbps")
    assert (topo["uplink_delay"], topo["downlink_delay"]) == ("3us", "1us")
    assert sw["queue_cap"] == "10MiB" and sw["pfc"] == {"enabled": False}
    assert sw["ecn"] == {
        "enabled": True, "kmin": "150KiB", "kmax": "1500KiB", "pmax": 1.0, "at": "dequeue",
    }  # fmt: skip
    # The shared buffer must never be the limit: every output queue may hold its 10 MiB.
    assert int(sw["buffer"].removesuffix("MiB")) >= topo["hosts"] * 10
    assert (host["burst"], host["cnp_interval"], host["rto"]) == ("4KiB", "4us", "50ms")
    kind = name.split("-")[1]
    assert host["max_outstanding"] == {"m2o": "640KiB", "a2a": "480KiB", "long": "160KiB"}[kind]
    assert (pk["payload"], pk["ack"], pk["nack"], pk["cnp"], pk["probe"]) == (
        1024, 64, 64, 64, 128,
    )  # fmt: skip
    assert data["cc"] == {"algorithm": "line_rate"}
    assert data["duration"] == "200ms"
    long_flows = [w for w in data["workload"] if w["kind"] == "long"]
    if kind == "long":
        # long-short has its own protocol (learning_cc.md 1.8): statistics over 5-200 ms every
        # 0.05 ms, the long flow from t = 0 to the end of the run
        assert data["metrics"]["window"] == ["5ms", "end"]
        assert data["metrics"]["sample_interval"] == "50us"
        assert all(w["start"] == "0s" and "stop" not in w for w in long_flows)
    else:
        # 50 ms to 170 ms of the 200 ms run, written relative to the run so that a shorter
        # duration brings them along (docs/scenarios.md, "Times of the run")
        assert data["metrics"]["window"] == ["25%", "85%"]
        assert data["metrics"]["sample_interval"] == "100us"
        assert all(w["start"] == ["1ms", "2ms"] and w["stop"] == "85%" for w in long_flows)
    sim = _sim.Simulation(scenario_json(data), str(base_dir))
    summary = json.loads(sim.summary())
    assert summary["flows"]["count"] == ADPG_FLOWS[name]
    assert summary["window_s"] == ([0.005, 0.2] if kind == "long" else [0.05, 0.17])


# --------------------------------------------------------------------------- (f) long-short


def test_long_short_short_flows_send_six_messages_that_complete() -> None:
    # The real scenario, cut after the last message (51 ms) has had time to complete.
    result = ccgym.run(
        "adpg-long-short-2",
        overrides=["duration=60ms", "workload[0].stop=55ms", "metrics.window=['10ms', '60ms']"],
    )
    info = result.series["flow_info"]
    messages = result.series["messages"]
    assert len(info) == 2
    long_id = 0  # the first workload entry: the long flow
    short_ids = [i for i in info["flow_id"] if i != long_id]
    assert set(messages["flow_id"]) == set(short_ids)
    for fid in short_ids:
        m = messages[messages["flow_id"] == fid].sort_values("start_s")
        assert len(m) == 6
        assert (m["size_bytes"] == 200 * 1024).all()
        expected = [0.001 + 0.010 * k for k in range(6)]
        assert m["start_s"].tolist() == pytest.approx(expected, abs=1e-12)
        fct = m["fct_s"].to_numpy()
        assert all(math.isfinite(x) and 0 < x < 0.005 for x in fct), fct
        # 200 KiB take at least their serialisation time at 100 Gb/s.
        assert fct.min() > 200 * 1024 * 8 / 100e9
    # The long flow carries no messages and delivers most of the bottleneck's bandwidth.
    long_rate = info.loc[info["flow_id"] == long_id, "window_gbps"].item()
    assert long_rate > 80
    assert result.summary["messages"]["count"] == 6
    assert result.summary["messages"]["fct_us"]["p99"] is not None
