"""Homa end to end through the Python API: the bundled ``homa-websearch-small`` scenario,
shortened, runs with ``ccgym.run``; small messages finish near their ideal completion time, and
bad ``host.homa_*`` values come back as ScenarioError naming the field."""

from __future__ import annotations

import pytest

pytest.importorskip("ccgym._sim")

import ccgym  # noqa: E402
from ccgym import ScenarioError  # noqa: E402
from ccgym.scenario import load_scenario  # noqa: E402


def test_homa_websearch_runs_end_to_end() -> None:
    # The bundled 32-host WebSearch scenario, arrivals for 3 ms, run to 6 ms.
    data, _ = load_scenario("homa-websearch-small")
    assert data["cc"]["algorithm"] == "homa"
    result = ccgym.run(
        "homa-websearch-small",
        overrides=["duration=6ms", "workload[0].stop=3ms", 'metrics.window=["0ms","6ms"]'],
    )
    flows = result.series["flow_info"]
    done = flows[flows.fct_s.notna()]
    assert len(flows) > 20 and len(done) > 0.8 * len(flows)
    small = done[done.size_bytes <= 100_000]
    assert len(small) > 10
    # Unscheduled bytes at the top priority and SRPT grants: small messages barely wait.
    assert small.slowdown.mean() < 1.3, small.slowdown.describe()
    # Large buffers and grants that never ask for more than the downlink takes: no loss.
    assert result.summary["network"]["drops_packets"] == 0


def test_homa_fields_are_checked() -> None:
    with pytest.raises(ScenarioError, match="host.homa_overcommit"):
        ccgym.run("homa-websearch-small", overrides=["host.homa_overcommit=0"])
    with pytest.raises(ScenarioError, match="host.homa_unsched_cutoffs"):
        ccgym.run("homa-websearch-small", overrides=["host.homa_unsched_cutoffs=[9000, 3000]"])
