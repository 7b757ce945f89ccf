"""The friendliness family (ccgym.qtcp.friendliness): one flow against K flows of another CC on
the friendliness-dumbbell bottleneck, the share it takes and Jain's index; short runs."""

from __future__ import annotations

import json

import pytest

from ccgym.qtcp import QTCP_AIMD, friendliness, friendliness_scenario, friendliness_table
from ccgym.qtcp.friendliness import score


@pytest.mark.parametrize("k", [1, 3])
def test_newreno_against_newreno_gets_its_fair_share(k: int) -> None:
    f = friendliness("newreno", "newreno", k, duration="90s")
    assert f.fair_share == pytest.approx(1 / (k + 1))
    assert f.share == pytest.approx(f.fair_share, abs=0.05)
    assert f.jain > 0.97
    assert len(f.flow_mbps) == k + 1
    assert 30.0 < f.throughput_mbps <= 40.5  # a 40 Mb/s bottleneck, well used


def test_cubic_takes_more_than_its_share_from_newreno() -> None:
    """CUBIC's window grows faster than Reno's at this BDP (about 400 packets) and backs off
    less (beta 0.7), so it takes more than half; the reverse is the same run seen from the
    other side."""
    f = friendliness("cubic", "newreno", 1, duration="90s")
    g = friendliness("newreno", "cubic", 1, duration="90s")
    assert f.share_ratio > 1.2
    assert g.share_ratio < 0.8
    assert f.share + g.share == pytest.approx(1.0, abs=0.05)
    assert f.jain < 0.95


def test_the_scenario_puts_the_test_flow_first_and_the_competitors_after() -> None:
    data = friendliness_scenario("cubic", {"algorithm": "newreno"}, 3)
    assert data["topology"]["left"] == 4 and data["topology"]["right"] == 4
    flows = data["workload"][0]["flows"]
    assert [(f["src"], f["dst"]) for f in flows] == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert [f["cc"]["algorithm"] for f in flows] == ["cubic", "newreno", "newreno", "newreno"]
    learned = friendliness_scenario("qtcp", "cubic", 1)
    assert learned["workload"][0]["flows"][0]["cc"] == {"algorithm": "agent"}


def test_mistakes_are_named() -> None:
    with pytest.raises(ValueError, match="competitors = 0"):
        friendliness_scenario("cubic", "newreno", 0)
    with pytest.raises(ValueError, match="one learned variant"):
        friendliness_scenario("qtcp", "qtcp-aimd", 1)
    with pytest.raises(ValueError, match="'algorithm'"):
        friendliness_scenario({"beta": 0.5}, "newreno", 1)
    with pytest.raises(TypeError, match="not a CC name"):
        friendliness_scenario(3, "newreno", 1)  # type: ignore[arg-type]


def test_a_learned_flow_runs_against_classic_ones() -> None:
    """QTCP-AIMD (a fresh learner) against two NewReno flows: only flow 0 is an agent, the
    score covers all three, and the shares add up."""
    f = friendliness(QTCP_AIMD, "newreno", 2, duration="40s", skip_s=10.0)
    assert f.test == "qtcp-aimd" and f.against == "newreno"
    assert f.result.summary["flows"]["count"] == 3
    assert len(f.flow_mbps) == 3 and min(f.flow_mbps) > 0
    assert 0.0 < f.share < 1.0 and 0.0 < f.jain <= 1.0
    assert f.from_s == 10.0
    rates, _ = score(f.result, 2, 10.0)
    assert f.share == pytest.approx(rates[0] / sum(rates))
    assert f.throughput_mbps > 25.0


def test_table_averages_over_seeds() -> None:
    rows = friendliness_table(["newreno"], ["cubic"], [1], seeds=[1, 2], duration="40s")
    assert len(rows) == 1
    r = rows[0]
    assert r["seeds"] == 2 and r["test"] == "newreno" and r["against"] == "cubic"
    assert r["share_ratio_min"] <= r["share_ratio"] <= r["share_ratio_max"]
    assert r["share"] == pytest.approx(r["share_ratio"] * r["fair_share"])


def test_a_learned_variant_against_itself_learns_on_every_flow() -> None:
    f = friendliness("qtcp-aimd", QTCP_AIMD, 1, duration="30s", skip_s=10.0)
    assert f.test == f.against == "qtcp-aimd"
    flows = f.result.scenario["workload"][0]["flows"]
    assert [x["cc"]["algorithm"] for x in flows] == ["agent", "agent"]
    assert min(f.flow_mbps) > 0 and 0.0 < f.share < 1.0


def test_command_line_prints_one_row_per_pair(capsys: pytest.CaptureFixture[str]) -> None:
    from ccgym.qtcp.__main__ import main

    argv = ["friendliness", "newreno", "--against", "newreno", "-k", "1", "--seeds", "1"]
    assert main([*argv, "--duration", "30s", "--skip", "10", "--json"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    row = json.loads(lines[0])
    assert row["test"] == row["against"] == "newreno" and row["competitors"] == 1
    assert row["share"] == pytest.approx(0.5, abs=0.05)


def test_a_native_policy_can_be_the_flow_under_test() -> None:
    """A bundled policy (ADPG's, a datacenter policy: it is only run here, not judged) in the
    test place: flow 0 is an agent running it in the core, the competitor stays NewReno. Its
    default decision interval is shorter than one packet time at 100 Mb/s, so an override sets
    it; the scenario's own [agent] entries win over the policy's, as in ccgym bench."""
    f = friendliness(
        "policy:adpg-default",
        "newreno",
        1,
        duration="10s",
        skip_s=2.0,
        overrides=["agent.interval=1ms"],
    )
    agent = f.result.scenario["agent"]
    assert agent["policy"].endswith("adpg-default.json") and agent["interval"] == "1ms"
    flows = f.result.scenario["workload"][0]["flows"]
    assert [x["cc"]["algorithm"] for x in flows] == ["agent", "newreno"]
    assert f.test == "policy:adpg-default" and f.flow_mbps[1] > 0
    with pytest.raises(ValueError, match="one learned variant or policy"):
        friendliness_scenario("policy:adpg-default", "qtcp", 1)


# ------------------------------------------------------------------------------------------
# the qtcp-friendliness suite (ccgym.bench.friendliness)


def test_the_friendliness_suite_puts_the_method_on_flows_without_a_cc_table() -> None:
    from ccgym.bench.friendliness import method_flows
    from ccgym.bench.runner import load_suite, suite_jobs
    from ccgym.scenario import load_scenario

    suite = load_suite("qtcp-friendliness")
    jobs = suite_jobs(suite)
    assert len(jobs) == 5 * 4 * 3 and {j.scores for j in jobs} == {"friendliness"}
    assert len({j.key for j in jobs}) == len(jobs)
    three = next(j for j in jobs if j.label == "against 3 CUBIC")
    data, _ = load_scenario(three.scenario, three.overrides)
    assert method_flows(data, "qtcp-aimd") == "qtcp-aimd"
    ccs = [f["cc"]["algorithm"] for f in data["workload"][0]["flows"]]
    assert ccs == ["agent", "cubic", "cubic", "cubic"] and data["duration"] == "800s"
    assert method_flows(load_scenario(three.scenario, three.overrides)[0], "newreno") is None
    with pytest.raises(ValueError, match="flow 0 is the flow under test"):
        method_flows(load_scenario("friendliness-dumbbell")[0], "cubic")


def test_reno_flows_on_different_rtts_share_unfairly_and_the_job_scores_it() -> None:
    """Two NewReno flows, 120 ms and 240 ms (topology.host_delays): the short-RTT one grows its
    window twice as often and takes more than half (Reno's RTT unfairness)."""
    from ccgym.bench.friendliness import run_friendliness_job

    over = [
        "duration=200s",
        'topology.host_delays=["1ms", "31ms", "1ms", "31ms"]',
        "workload[0].flows=[{src=0, dst=2}, {src=1, dst=3}]",
    ]
    out = run_friendliness_job("friendliness-dumbbell", over, "newreno")
    m = out["metrics"]
    assert m["share_ratio"] > 1.1 and m["jain"] < 0.99, m
    assert m["share"] == pytest.approx(m["share_ratio"] / 2)
    assert 30.0 < m["thr_mbps"] <= 40.5
    import ccgym

    short = ccgym.run("friendliness-dumbbell", overrides=[*over[1:], "duration=1s"])
    rtts = sorted(short.series["flow_info"]["base_rtt_us"] / 1e3)
    assert rtts == pytest.approx([120, 240], abs=2)  # plus serialisation
