"""Property-based fuzzing of scenarios and of the agent bridge (issue 16; docs/limits.md).

Generated scenarios (``tests/fuzz/strategies.py``) and bridge call sequences run in a worker
process (``tests/fuzz/worker.py``), so a case that aborts or hangs is a failed case, not a dead
pytest. The properties:

* a scenario either raises ``ScenarioError`` whose message starts with the field it is about,
  or runs to its end within the wall-clock budget, without killing the process;
* a finished run conserves bytes (sent = delivered + dropped + in flight), no port is more than
  100% utilised, no flow completes faster than its ideal (slowdown >= 1), and a second run with
  the same seed gives the same summary and tables;
* a bridge call sequence never raises ``InternalError`` or kills the process, refuses what it
  cannot honour (a wrong number of actions, a second answer to one batch, an index outside the
  action table) and leaves a summary that conserves bytes.

Profiles (``CCGYM_FUZZ``): ``fixed`` (the default, in ``make test``: derandomised, a fixed number
of cases, about a minute on two cores) and ``long`` (``make fuzz``: random, thousands of cases;
``CCGYM_FUZZ_EXAMPLES`` sets the number of scenario cases). ``CCGYM_FUZZ_COLLECT=FILE`` records
every failing case in FILE (JSON lines) instead of stopping at the first, for surveys.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ccgym._sim")
pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

sys.path.insert(0, str(Path(__file__).with_name("fuzz")))
import harness  # noqa: E402
import reproducers  # noqa: E402
import strategies  # noqa: E402

PROFILE = os.environ.get("CCGYM_FUZZ", "fixed")
COLLECT = os.environ.get("CCGYM_FUZZ_COLLECT")
LONG = PROFILE == "long"
SCENARIO_CASES = int(os.environ.get("CCGYM_FUZZ_EXAMPLES", "3000" if LONG else "300"))
BRIDGE_CASES = max(SCENARIO_CASES // 3, 10)
CASE_TIMEOUT_S = float(os.environ.get("CCGYM_FUZZ_TIMEOUT", "60" if LONG else "20"))
EXCLUDE = frozenset() if LONG else strategies.PENDING_CLASSES
if os.environ.get("CCGYM_FUZZ_EXCLUDE") is not None:  # e.g. "1,2" or "" (classes to leave out)
    EXCLUDE = frozenset(int(c) for c in os.environ["CCGYM_FUZZ_EXCLUDE"].split(",") if c)

_common = {
    "deadline": None,
    "database": None,
    "derandomize": not LONG,
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],  # fmt: skip
    # No shrinking: a generated case is already small, and shrinking a case that hangs or
    # aborts would repeat its wall-clock budget many times. A failure prints the case as JSON.
    "phases": [Phase.explicit, Phase.generate],
}
settings.register_profile("ccgym-fixed", max_examples=SCENARIO_CASES, **_common)
settings.register_profile("ccgym-long", max_examples=SCENARIO_CASES, **_common)
PROFILE_SETTINGS = settings.get_profile("ccgym-long" if LONG else "ccgym-fixed")

STATS: dict[str, int] = {}


@pytest.fixture(scope="module")
def worker() -> Iterator[harness.Worker]:
    w = harness.Worker(timeout_s=CASE_TIMEOUT_S)
    t0 = time.perf_counter()
    yield w
    w.close()
    STATS["seconds"] = int(time.perf_counter() - t0)
    sys.stderr.write(f"\nfuzz ({PROFILE}): {w.cases} cases, {w.restarts} worker restarts, "
                     f"{STATS}\n")  # fmt: skip


def _verdict(kind: str, case: dict[str, Any], reply: dict[str, Any], bad: list[str]) -> None:
    status = reply.get("status")
    STATS[f"{kind}:{status}"] = STATS.get(f"{kind}:{status}", 0) + 1
    if os.environ.get("CCGYM_FUZZ_LOG"):
        with open(os.environ["CCGYM_FUZZ_LOG"], "a") as f:
            f.write(
                json.dumps(
                    {
                        "kind": kind,
                        "status": status,
                        "elapsed_s": reply.get("elapsed_s"),
                        "tags": case.get("tags"),
                        "failures": len(bad),
                    }
                )
                + "\n"
            )
    if not bad:
        return
    if COLLECT:
        with open(COLLECT, "a") as f:
            f.write(json.dumps({"kind": kind, "case": case, "failures": bad,
                                "elapsed_s": reply.get("elapsed_s"),
                                "reply": {k: v for k, v in reply.items() if k != "runs"}},
                               default=str) + "\n")  # fmt: skip
        return
    raise AssertionError(f"{kind} case {json.dumps(case, default=str)}: " + "; ".join(bad))


def _scenario(
    worker: harness.Worker,
    name: str,
    case: dict[str, Any],
    runs: int,
    checks: tuple[str, ...],
    outcome: bool,
) -> None:
    reply = worker.request({"op": "scenario", "scenario": case["scenario"], "runs": runs})
    _verdict(name, case, reply, harness.check_scenario(reply, checks, outcome, case))


@PROFILE_SETTINGS
@given(case=strategies.scenario_case(hostile=True, exclude=EXCLUDE))
def test_scenarios_are_rejected_naming_a_field_or_finish_within_budget(
    worker: harness.Worker, case: dict[str, Any]
) -> None:
    _scenario(worker, "outcome", case, 1, (), outcome=True)


# The classes whose hostile cases abort or hang until their budgets are in place: judged by the
# outcome property above, left out of the properties of finished runs (where a hang would only
# cost its wall-clock budget).
BUDGET_CLASSES = frozenset({1, 2, 9})


@PROFILE_SETTINGS
@given(case=strategies.scenario_case(hostile=True, exclude=EXCLUDE | BUDGET_CLASSES))
def test_finished_runs_conserve_bytes_stay_in_their_buffers_and_repeat_with_their_seed(
    worker: harness.Worker, case: dict[str, Any]
) -> None:
    _scenario(worker, "consistency", case, 2, ("consistency", "buffer"), outcome=False)


@PROFILE_SETTINGS
@given(case=strategies.scenario_case(hostile=False))
def test_no_port_is_more_than_fully_utilised(worker: harness.Worker, case: dict[str, Any]) -> None:
    _scenario(worker, "utilisation", case, 1, ("utilisation",), outcome=False)


@PROFILE_SETTINGS
@given(case=strategies.scenario_case(hostile=False))
def test_no_flow_completes_faster_than_its_ideal(
    worker: harness.Worker, case: dict[str, Any]
) -> None:
    _scenario(worker, "slowdown", case, 1, ("slowdown",), outcome=False)


@settings(PROFILE_SETTINGS, max_examples=BRIDGE_CASES)
@given(scenario=strategies.agent_scenario(), calls=strategies.native_calls())
def test_native_bridge_calls_never_crash_and_refuse_what_they_cannot_honour(
    worker: harness.Worker, scenario: dict[str, Any], calls: list[list[Any]]
) -> None:
    case = {"scenario": scenario, "calls": calls}
    reply = worker.request({"op": "native_bridge", **case})
    _verdict("native_bridge", case, reply, harness.check_bridge(reply))


@settings(PROFILE_SETTINGS, max_examples=BRIDGE_CASES)
@given(scenario=strategies.agent_scenario(), calls=strategies.pool_calls())
def test_agent_pool_calls_never_crash_and_refuse_what_they_cannot_honour(
    worker: harness.Worker, scenario: dict[str, Any], calls: list[list[Any]]
) -> None:
    scenario.get("agent", {}).pop("queues", None)  # AgentPool drives flow agents
    case = {"scenario": scenario, "calls": calls}
    reply = worker.request({"op": "pool", **case})
    _verdict("pool", case, reply, harness.check_bridge(reply))


@settings(PROFILE_SETTINGS, max_examples=max(BRIDGE_CASES // 2, 10))
@given(scenario=strategies.agent_scenario(), calls=strategies.parallel_calls())
def test_pettingzoo_steps_never_crash_and_refuse_unknown_agents(
    worker: harness.Worker, scenario: dict[str, Any], calls: list[list[Any]]
) -> None:
    pytest.importorskip("pettingzoo")
    case = {"scenario": scenario, "calls": calls}
    reply = worker.request({"op": "parallel", **case})
    _verdict("parallel", case, reply, harness.check_bridge(reply))


def test_worker_reports_a_dead_process_and_a_timeout_as_failures() -> None:
    """The harness itself: an abort and an overrun become replies, and the next case runs."""
    w = harness.Worker(timeout_s=5)
    try:
        died = w.request({"op": "scenario", "scenario": {"abort": True}, "runs": 1,
                          "_test_abort": True})  # fmt: skip
        assert died["status"] == "died" and harness.check_scenario(died)
        slow = w.request({"op": "scenario", "scenario": {}, "_test_sleep": 30}, timeout_s=1)
        assert slow["status"] == "timeout" and harness.check_scenario(slow)
        ok = w.request(
            {
                "op": "scenario",
                "runs": 2,
                "scenario": {
                    "duration": "50us",
                    "topology": {"kind": "star", "hosts": 3},
                    "workload": [{"kind": "long", "receiver": 0, "size": 20_000}],
                },
            }
        )
        assert ok["status"] == "ok" and harness.check_scenario(ok) == []
        bad = w.request(
            {
                "op": "scenario",
                "runs": 1,
                "scenario": {
                    "duration": "50us",
                    "topology": {"kind": "star", "hosts": 0},
                    "workload": [{"kind": "long", "receiver": 0}],
                },
            }
        )
        assert bad["status"] == "rejected" and harness.check_scenario(bad) == []
    finally:
        w.close()


# --------------------------------------------------------------------------- reproducers

_PROPERTY_CHECKS = {"outcome": (), "reject": (), "buffer": ("buffer",), "slowdown": ("slowdown",),
                    "utilisation": ("utilisation",)}  # fmt: skip


@pytest.mark.parametrize(
    ("prop", "scenario"),
    [pytest.param(p, sc, id=f"class{c}-{name}") for name, c, p, sc in reproducers.SCENARIOS],
)
def test_reproducers_of_failures_found_on_main(
    worker: harness.Worker, prop: str, scenario: dict[str, Any]
) -> None:
    """The minimal cases of the failures the fuzzer found (issue 16; class 0: not one of its
    nine classes), each checked for the property it broke."""
    case = {
        "scenario": scenario,
        "expect_reject": prop if prop == "reject" else None,
        "exact_int": True,
    }
    reply = worker.request({"op": "scenario", "scenario": scenario, "runs": 1}, timeout_s=15)
    bad = harness.check_scenario(reply, _PROPERTY_CHECKS[prop], True, case)
    assert not bad, "; ".join(bad)


@pytest.mark.parametrize(
    ("op", "scenario", "calls"),
    [
        pytest.param(op, sc, calls, id=f"class{c}-{name}")
        for name, c, op, sc, calls in reproducers.BRIDGE
    ],
)
def test_bridge_reproducers_of_failures_found_on_main(
    worker: harness.Worker, op: str, scenario: dict[str, Any], calls: list[list[Any]]
) -> None:
    reply = worker.request({"op": op, "scenario": scenario, "calls": calls})
    assert any(o.get("expect") for o in reply.get("outcomes", [])), reply  # the case still bites
    bad = harness.check_bridge(reply)
    assert not bad, "; ".join(bad)
