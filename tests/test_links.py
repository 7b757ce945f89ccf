"""Links that change, through the Python API: ``[[link]]`` tables in a scenario file (a trace
read relative to it, bad entries refused with ScenarioError) and ``Simulation.set_link_rate``
mid-run."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

_sim = pytest.importorskip("ccgym._sim")

import ccgym  # noqa: E402
from ccgym import ScenarioError  # noqa: E402
from ccgym.runner import scenario_json  # noqa: E402
from ccgym.scenario import load_scenario  # noqa: E402

MS = 1_000_000_000  # picoseconds

UPLINK_TOML = """
duration = "3ms"
[topology]
kind = "star"
hosts = 2
link_rate = "10Gbps"
link_delay = "1us"
[cc]
algorithm = "line_rate"
[[workload]]
kind = "flows"
flows = [{ src = 1, dst = 0 }]
"""


def uplink(**extra: Any) -> dict[str, Any]:
    """One flow h1 -> h0 at its 10 Gb/s line rate, so the h1 uplink is always busy."""
    data, _ = load_scenario(UPLINK_TOML)
    data.update(extra)
    return data


def delivered(sim: Any) -> int:
    return int(json.loads(sim.summary())["conservation"]["delivered_bytes"])


def test_set_link_rate_mid_run_changes_the_delivery_rate() -> None:
    sim = _sim.Simulation(scenario_json(uplink()), ".")
    sim.run_until(MS // 2)
    a = delivered(sim)
    sim.run_until(MS)
    b = delivered(sim)
    sim.set_link_rate("h1->sw0", 2e9)
    # Packets already sent at 10 Gb/s are still arriving for a few microseconds.
    sim.run_until(MS + MS // 10)
    c = delivered(sim)
    sim.run_until(MS + 6 * MS // 10)
    d = delivered(sim)
    # 0.5 ms at 10 Gb/s is 625 kB; at 2 Gb/s, 125 kB (a few packets either way).
    assert abs((b - a) - 625_000) < 3 * 1_072
    assert abs((d - c) - 125_000) < 3 * 1_072
    # By id as well: port ids are those of the port_info table.
    sim.set_link_rate(0, 5e9)


@pytest.mark.parametrize(
    ("port", "rate", "match"),
    [
        ("h1->sw0", 0.0, "positive"),
        ("h1->sw0", -1e9, "positive"),
        ("h1->sw0", float("nan"), "positive"),
        ("h1->h0", 1e9, "no link direction"),
        (10_000, 1e9, "no port"),
        (1.5, 1e9, "port must be"),
    ],
)
def test_set_link_rate_refuses_bad_input(port: Any, rate: float, match: str) -> None:
    sim = _sim.Simulation(scenario_json(uplink()), ".")
    with pytest.raises(ValueError, match=match):
        sim.set_link_rate(port, rate)


def test_a_trace_is_read_relative_to_the_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    # One 1,500 B opportunity per ms: 12 Mb/s.
    (tmp_path / "traces" / "flat.trace").write_text("1\n")
    path = tmp_path / "trace-link.toml"
    path.write_text(
        UPLINK_TOML.replace('"3ms"', '"20ms"')
        + '\n[[link]]\nfrom = "sw0"\nto = "h0"\ntrace = "traces/flat.trace"\n'
    )
    result = ccgym.run(str(path))
    sent = result.summary["conservation"]["delivered_bytes"]
    assert abs(sent - 20 * 1_500) <= 1_500 + 1_072
    with pytest.raises(ScenarioError, match="link\\[0\\].trace"):
        _sim.Simulation(
            scenario_json(uplink(link=[{"from": "sw0", "to": "h0", "trace": "traces/flat.trace"}])),
            str(tmp_path / "elsewhere"),
        )
    with pytest.raises(ValueError, match="trace"):
        sim = _sim.Simulation(scenario_json(load_scenario(path)[0]), str(tmp_path))
        sim.set_link_rate("sw0->h0", 1e9)


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"from": "h7", "to": "sw0", "loss": 0.1}, "link[0].from"),
        ({"from": "h0", "to": "h1", "loss": 0.1}, "link[0].to"),
        ({"from": "h1", "to": "sw0", "loss": 2}, "link[0].loss"),
        (
            {"from": "h1", "to": "sw0", "policer": {"rate": "1Gbps", "burst": 10}},
            "link[0].policer.burst",
        ),
    ],
)
def test_bad_link_entries_raise_scenario_error(entry: dict[str, Any], field: str) -> None:
    with pytest.raises(ScenarioError, match=field.replace("[", "\\[").replace("]", "\\]")):
        ccgym.run(uplink(link=[entry]))


def test_a_schedule_step_after_the_end_is_named_in_a_warning() -> None:
    # dumbbell-wan-varying drops its bottleneck to 20 Mb/s at 8 s and back at 14 s: a 3 s run
    # reaches neither step. It runs (a quick look at a shortened scenario is not a mistake),
    # but says which steps never apply; a run long enough for them says nothing.
    short = ["duration=3s", "metrics.window=['0s', 'end']"]
    with pytest.warns(ccgym.LateScheduleWarning, match=r"link\[0\]\.schedule\[0\]\.at = 8s"):
        ccgym.run("dumbbell-wan-varying", overrides=short)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ccgym.LateScheduleWarning)
        ccgym.run(
            "dumbbell-wan-varying", overrides=["duration=15s", "metrics.window=['0s', 'end']"]
        )
