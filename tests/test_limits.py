"""Limits and budgets (issue 16, classes 1, 2, 3 and 9) through the Python package.

Scenarios that would exhaust memory, never end, or promise switch buffers the switch does not
have raise ``ScenarioError`` naming the field before anything is built; ``[limits]`` is the
opt-in; ``ccgym.estimate`` reports the cost, ``ccgym.run`` warns about large runs and
``ccgym run`` prints the estimate. Every bundled scenario and bench suite stays within the
default budgets. On the code before these checks, the refused scenarios below were accepted (the
first one then killed the interpreter).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import ccgym
from ccgym import ScenarioError, load_scenario

_sim = pytest.importorskip("ccgym._sim")

PYTHON_DIR = Path(ccgym.__file__).resolve().parent.parent

SHORT = ["duration=2ms", 'metrics.window=["0ms", "2ms"]', "workload[0].stop=2ms"]


def field_of(err: pytest.ExceptionInfo[ScenarioError]) -> str:
    """The field a ScenarioError names (its message starts with it)."""
    return str(err.value).split(":", 1)[0]


def test_a_billion_messages_raise_instead_of_killing_the_interpreter() -> None:
    overrides = ["workload[1].count=1000000000", "workload[1].period=1ps"]
    with pytest.raises(ScenarioError) as err:
        ccgym.run("adpg-long-short-2", overrides=overrides)
    assert field_of(err) == "workload[1].count"
    assert "limits.max_messages" in str(err.value)
    est = ccgym.estimate("adpg-long-short-2", overrides=overrides)
    assert est["messages"] > 10**8 and est["refused"].startswith("workload[1].count")


def test_a_picosecond_decision_interval_is_refused() -> None:
    overrides = [*SHORT, 'agent.trigger="interval"', "agent.interval=5ps"]
    with pytest.raises(ScenarioError) as err:
        ccgym.run("adpg-m2o-16", overrides=overrides, cc="agent")
    assert field_of(err) == "agent.interval"
    assert "serialisation time" in str(err.value)


def test_the_event_budget_names_the_field_and_accepts_an_opt_in() -> None:
    overrides = ["duration=100s", "metrics.flow_series=false", 'metrics.sample_interval="1ms"']
    with pytest.raises(ScenarioError) as err:
        load_and_build("incast-16", overrides)
    assert field_of(err) == "duration"
    assert "limits.max_events" in str(err.value)
    load_and_build("incast-16", [*overrides, "limits.max_events=1e12"])


def test_impossible_pfc_buffers_are_refused() -> None:
    with pytest.raises(ScenarioError) as err:
        ccgym.run("incast-16", overrides=["topology.hosts=8193", *SHORT[:2]])
    assert field_of(err) == "switch.buffer"
    assert "8193 ports" in str(err.value) and "headroom" in str(err.value)


def test_a_lossy_buffer_smaller_than_a_packet_is_refused() -> None:
    with pytest.raises(ScenarioError) as err:
        ccgym.run("adpg-m2o-16", overrides=[*SHORT, "switch.buffer=1000"])
    assert field_of(err) == "switch.buffer"
    assert "one full packet" in str(err.value)


def test_per_flow_series_beyond_the_memory_budget_are_refused_before_the_run() -> None:
    overrides = ["duration=20s", "workload[0].stop=20s", 'metrics.window=["50ms", "20s"]']
    est = ccgym.estimate("adpg-m2o-1024", overrides=overrides)
    assert 8 * 2**30 < est["memory_bytes"] < 14 * 2**30
    assert est["memory_by_part"]["tables"] > est["memory_by_part"]["flows"]
    with pytest.raises(ScenarioError) as err:
        ccgym.run("adpg-m2o-1024", overrides=overrides)
    assert field_of(err) == "metrics.flow_series"
    assert "limits.max_memory" in str(err.value)


class _Stopped(Exception):
    """Raised in place of the (long) run once set-up is over."""


def test_a_large_run_warns_before_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    # 1,024 flows with per-flow series for 4 s: about 2 GiB estimated.
    import ccgym.runner as runner

    def no_run(*_args: Any, **_kwargs: Any) -> None:
        raise _Stopped

    monkeypatch.setattr(runner, "advance", no_run)
    overrides = ["duration=4s", "workload[0].stop=4s", 'metrics.window=["50ms", "4s"]']
    seen: list[dict[str, Any]] = []
    with pytest.warns(ccgym.LargeRunWarning, match="GiB of memory"), pytest.raises(_Stopped):
        ccgym.run("adpg-m2o-1024", overrides=overrides, on_estimate=seen.append)
    assert seen and seen[0]["memory_bytes"] > seen[0]["warn_memory"]
    # A small run does not warn.
    with warnings.catch_warnings():
        warnings.simplefilter("error", ccgym.LargeRunWarning)
        with pytest.raises(_Stopped):
            ccgym.run("adpg-m2o-16", overrides=SHORT)


def load_and_build(name: str, overrides: list[str]) -> Any:
    """Build (not run) a bundled scenario with overrides."""
    from ccgym.runner import native, scenario_json

    data, base = load_scenario(name, overrides)
    return native().Simulation(scenario_json(data), str(base))


@pytest.mark.parametrize("name", ccgym.bundled_scenarios())
def test_every_bundled_scenario_is_within_the_default_budgets(name: str) -> None:
    est = ccgym.estimate(name)
    assert est["refused"] is None, est["refused"]
    assert est["memory_bytes"] < est["warn_memory"]
    load_and_build(name, [])


def test_every_bench_suite_run_is_within_the_default_budgets() -> None:
    from ccgym import policies
    from ccgym.bench.runner import POLICY_PREFIX, bundled_suites, load_suite, suite_jobs
    from ccgym.bench.series import force_flow_series
    from ccgym.runner import native, scenario_json

    checked = set()
    for suite_name in bundled_suites():
        for job in suite_jobs(load_suite(suite_name)):
            kind = "policy" if job.method.startswith(POLICY_PREFIX) else "cc"
            key = (job.scenario, tuple(job.overrides[:-1]), kind)
            if key in checked:
                continue
            checked.add(key)
            data, base = load_scenario(job.scenario, job.overrides)
            force_flow_series(data)  # what run_job does
            if job.scores.startswith("hopass"):  # a HOPASS experiment: its [hopass] table out
                from ccgym.hopass.experiment import job_scenario

                data = job_scenario(data, job.method)
            elif kind == "policy":
                data = policies.use_policy(data, job.method[len(POLICY_PREFIX) :])
            elif job.scores == "qtcp" and job.method in ("qtcp", "qtcp-aimd", "qtcp-mimd"):
                from ccgym.qtcp import VARIANTS, agent_table  # learnt TCP

                data, base = load_scenario(data, cc="agent")
                data["agent"] = agent_table(VARIANTS[job.method], data["packets"]["payload"])
            elif job.scores == "mvfst-history":  # a training run: its link, the MVFST-RL agent
                data, base = load_scenario(data, ["agent.preset=mvfst"], cc="agent")
            elif job.preset is not None and job.preset["cc"].startswith(POLICY_PREFIX):
                data, base = load_scenario(data, job.preset["overrides"])  # mvfst-default
                data = policies.use_policy(data, job.preset["cc"][len(POLICY_PREFIX) :])
            elif job.scores == "friendliness":  # the method on flows without a cc table
                from ccgym.bench.friendliness import method_flows
                from ccgym.qtcp import VARIANTS, agent_table

                learned = method_flows(data, job.method)
                if learned is not None:
                    data["agent"] = agent_table(VARIANTS[learned], data["packets"]["payload"])
            elif job.preset is not None:  # a method preset (e.g. an ACC ECN template): its run
                cc = job.preset["cc"]
                data, base = load_scenario(data, job.preset["overrides"], cc=cc)
            else:
                data, base = load_scenario(data, cc=job.method)
            est = ccgym.estimate(data)
            assert est["refused"] is None, (suite_name, job.label, est["refused"])
            native().Simulation(scenario_json(data), str(base))
    assert len(checked) >= 10


def test_describe_estimate_says_how_long() -> None:
    from ccgym.runner import describe_estimate

    est = {"flows": 16, "messages": 0, "events": 9e5, "memory_bytes": 4 << 20}
    assert "(under a second)" in describe_estimate({**est, "seconds_at_15M_events_per_s": 0.06})
    assert "(about 20 s or less)" in describe_estimate({**est, "seconds_at_15M_events_per_s": 20})
    line = describe_estimate({**est, "seconds_at_15M_events_per_s": 600})
    assert "(about 10 min or less)" in line and line.endswith("about 4 MiB of memory")


def test_cli_run_prints_the_estimate_and_names_the_field(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), env.get("PYTHONPATH")]))
    env["COLUMNS"] = "300"
    cmd = [sys.executable, "-m", "ccgym.cli", "run", "incast-16", "--set", "duration=0.2ms"]
    cmd += ["--set", 'metrics.window=["0ms", "0.2ms"]']
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "estimate: 16 flows" in proc.stderr and "(under a second)" in proc.stderr
    bad = [*cmd, "--set", "topology.hosts=8193"]
    proc = subprocess.run(bad, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2
    assert "switch.buffer" in proc.stderr and "Traceback" not in proc.stderr
