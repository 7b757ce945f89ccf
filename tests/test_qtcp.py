"""QTCP and QTCP-AIMD (ccgym.qtcp): the Kanerva Q-learner, its save/restore, the driver that
steps window agents through the bridge, and the bundled qtcp-* scenarios. The per-ACK rules
themselves are checked exactly in crates/sim/tests/agent_window_tcp.rs."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from ccgym import ScenarioError
from ccgym.bench.qtcp import report_section as qtcp_report_section
from ccgym.bench.qtcp import trace_figure
from ccgym.qtcp import (
    QTCP,
    QTCP_AIMD,
    QTCP_MIMD,
    KanervaConfig,
    KanervaQLearner,
    QtcpConfig,
    agent_table,
    load_learners,
    run_qtcp,
    save_learners,
    scale_state,
    utility_reward,
    with_learner,
)
from ccgym.scenario import load_scenario


def one_flow(duration: str = "150s") -> dict:
    """qtcp-fixed (40 Mb/s, RTT 120 ms, 200 packets) with one sender."""
    data, _ = load_scenario("qtcp-fixed")
    data["workload"][0]["flows"] = data["workload"][0]["flows"][:1]
    data["duration"] = duration
    return data


def fifths(run, flow: int = 0) -> tuple[float, float]:
    """Mean utility of the first and the last fifth of a flow's decisions."""
    u = run.flow_log(flow)["utility"]
    k = len(u) // 5
    return float(u[1:k].mean()), float(u[-k:].mean())


# ------------------------------------------------------------------------------------------
# the learner


def test_scale_state_maps_log_intervals_and_log_queueing_into_the_unit_cube() -> None:
    x = scale_state(np.array([[1e-5, 1.0, 1.0], [1e-3, 0.0, 1.01], [10.0, 1e-9, 7.0]]))
    np.testing.assert_allclose(x, [[0.0, 1.0, 0.0], [0.4, 0.0, 1 / 3], [1.0, 0.0, 1.0]])
    # A 100-packet buffer at 120 ms (RTT ratio 1 to 1.25) spans most of the queueing axis.
    low, full = scale_state(np.array([[0.01, 0.01, 1.0025], [0.01, 0.01, 1.25]]))[:, 2]
    assert full - low > 0.5


def test_q_learning_finds_the_better_action_of_each_region() -> None:
    # A contextual bandit on one dimension: action 0 pays below 0.5, action 1 above.
    cfg = KanervaConfig(
        lr=0.3, lr_decay=1.0, exploration=0.3, exploration_decay=1.0, discount=0.0, grid=4
    )
    q = KanervaQLearner(2, dims=1, config=cfg, seed=3)
    rng = np.random.default_rng(0)
    for k in range(3000):
        x = rng.random(1)
        a = q.act(x, k * 0.1)
        r = 1.0 if (a == 0) == (x[0] < 0.5) else -1.0
        q.update(x, a, r, x, k * 0.1)
    probes = np.linspace(0.02, 0.98, 25)
    greedy = [q.greedy(np.array([p])) for p in probes]
    wrong = sum(g != (0 if p < 0.5 else 1) for p, g in zip(probes, greedy, strict=True))
    assert wrong <= 2, greedy


def test_a_prototype_with_disagreeing_updates_splits_into_children_that_tile_it() -> None:
    cfg = KanervaConfig(grid=1, split_min_updates=10, beta=0.8, max_prototypes=100)
    q = KanervaQLearner(1, dims=2, config=cfg, seed=0)
    # One prototype at the centre with a radius of 1; its children: the corners, radius 1/2.
    assert len(q.centres) == 1 and q.radii[0] == 1.0
    x = np.array([0.3, 0.7])
    for k in range(10):
        q.update(x, 0, 1.0 if k % 2 else -1.0, x, 0.0)  # half the TD errors each sign
    assert q.splits == 1 and len(q.centres) == 4
    np.testing.assert_allclose(q.radii, 0.5)
    np.testing.assert_allclose(sorted(map(tuple, q.centres)), [(0, 0), (0, 1), (1, 0), (1, 1)])
    assert len(set(q.ids.tolist())) == 4
    # Consistent updates do not split.
    for _ in range(50):
        q.update(x, 0, 5.0, x, 0.0)
    assert q.splits == 1


def test_the_prototype_budget_holds_and_stale_prototypes_make_room() -> None:
    cfg = KanervaConfig(
        grid=2, split_min_updates=4, max_prototypes=12, prune_age=5, min_radius=1e-3
    )
    q = KanervaQLearner(1, dims=2, config=cfg, seed=0)
    rng = np.random.default_rng(1)
    for _ in range(400):
        x = np.array([0.1, 0.1]) + 0.05 * rng.random(2)  # one corner only
        q.update(x, 0, rng.choice([-1.0, 1.0]), x, 0.0)
        assert len(q.centres) <= 12
    assert q.splits >= 2 and q.pruned >= 1
    # Every state still has a value (the nearest prototype stands in where none covers it).
    assert np.isfinite(q.q_values(np.array([0.9, 0.9]))).all()


def test_schedules_decay_per_second_of_experience_across_runs() -> None:
    q = KanervaQLearner(3, config=KanervaConfig(), seed=0)
    assert q.learning_rate(5.0) == pytest.approx(0.95)
    assert q.learning_rate(105.0) == pytest.approx(0.95 * 0.995**100)
    assert q.epsilon(105.0) == pytest.approx(0.1 * 0.9995**100)
    # A new run starts its clock at 0 again: the experience goes on from 100 s.
    assert q.learning_rate(0.23) == pytest.approx(0.95 * 0.995**100)
    assert q.learning_rate(10.23) == pytest.approx(0.95 * 0.995**110)


def test_state_is_saved_and_restored_exactly(tmp_path) -> None:
    cfg = KanervaConfig(grid=2, split_min_updates=5)
    q = KanervaQLearner(3, config=cfg, seed=7)
    rng = np.random.default_rng(2)
    for k in range(300):
        x, y = rng.random(3), rng.random(3)
        q.update(x, q.act(x, k * 0.23), float(rng.normal()), y, k * 0.23)
    q.save(tmp_path / "q.npz")
    r = KanervaQLearner.load(tmp_path / "q.npz")
    for name in ("centres", "radii", "theta", "n_updates", "n_positive", "visits", "born", "ids"):
        np.testing.assert_array_equal(getattr(q, name), getattr(r, name))
    assert (r.updates, r.splits, r.pruned, r.next_id, r.config) == (
        q.updates,
        q.splits,
        q.pruned,
        q.next_id,
        q.config,
    )
    # Same random stream and schedules: both go on identically.
    for k in range(300, 400):
        x = rng.random(3)
        assert q.act(x, k * 0.23) == r.act(x, k * 0.23)
        assert q.update(x, 1, 1.0, x, k * 0.23) == r.update(x, 1, 1.0, x, k * 0.23)


def test_bad_hyper_parameters_name_the_field() -> None:
    with pytest.raises(ValueError, match="beta"):
        KanervaConfig(beta=1.5)
    with pytest.raises(ValueError, match="discount"):
        KanervaConfig(discount=1.0)
    with pytest.raises(ValueError, match="step_unit"):
        QtcpConfig(step_unit="packets")
    with pytest.raises(ValueError, match=r"per_ack\[1\]"):
        QtcpConfig(per_ack=(10, "cubic"))


# ------------------------------------------------------------------------------------------
# actions, reward, agent table


def test_agent_table_turns_steps_into_bytes_per_ack() -> None:
    t = agent_table(QTCP, 1460)
    assert t["per_ack"] == [10.0, 0.0, -1.0] and t["action"] == "per_ack"
    assert t["loss_response"] == "newreno" and t["interval"] == "230ms" and t["reward_beta"] == 1.0
    a = agent_table(QTCP_AIMD, 1460)
    assert a["per_ack"] == ["reno", 0.0, -5.0] and a["reward_beta"] == 10.0
    s = agent_table(dataclasses.replace(QTCP, step_unit="segments", per_ack=(1, 0, -0.5)), 1000)
    assert s["per_ack"] == [1000.0, 0.0, -500.0]


def test_the_variants_learn_as_their_papers_say() -> None:
    # QTCP: its paper's decays; QTCP-AIMD: 3.7's constant learning rate and exploration (0.1);
    # QTCP-MIMD: QTCP-AIMD with QTCP's moves, nothing else (the paper's ablation).
    assert (QTCP.learner.lr, QTCP.learner.lr_decay, QTCP.learner.exploration_decay) == (
        0.95,
        0.995,
        0.9995,
    )
    aimd = QTCP_AIMD.learner
    assert (aimd.lr, aimd.lr_decay, aimd.exploration, aimd.exploration_decay) == (0.1, 1, 0.1, 1)
    assert QTCP_MIMD.per_ack == QTCP.per_ack
    assert dataclasses.replace(QTCP_MIMD, name="qtcp-aimd", per_ack=QTCP_AIMD.per_ack) == QTCP_AIMD


def test_reward_is_the_sign_of_the_utility_change_with_a_dead_band() -> None:
    cfg = dataclasses.replace(QTCP, dead_band=0.05)
    np.testing.assert_array_equal(
        utility_reward(np.array([0.2, 0.05, 0.0, -0.04, -0.3]), cfg), [2, 0, 0, 0, -2]
    )
    np.testing.assert_array_equal(utility_reward(np.array([1e-9, -1e-9, 0.0]), QTCP), [2, -2, 0])


# ------------------------------------------------------------------------------------------
# the driver


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_qtcp_learns_on_a_fixed_rate_link(seed: int) -> None:
    """One QTCP flow from a 10-segment window on 40 Mb/s, 150 s (about 650 decisions): its
    utility rises over the run, and well above what the same flow reaches choosing its
    actions at random (whose +3 bytes per ACK on average also lets the window grow)."""
    cfg = dataclasses.replace(QTCP, slow_start=False)
    run = run_qtcp(one_flow(), cfg, seed=seed)
    first, last = fifths(run)
    rand = run_qtcp(
        one_flow(), with_learner(cfg, exploration=1.0, exploration_decay=1.0), seed=seed
    )
    _, last_random = fifths(rand)
    # Measured (seeds 1-7): rises of 2.8 to 3.2; last fifth -0.96 to -1.23 against -2.08 to -2.43.
    assert last - first > 2.0, (first, last)
    assert last - last_random > 0.5, (last, last_random)
    assert run.learners[0].updates == len(run.flow_log(0)["time_s"]) - 1


def test_qtcp_aimd_learns_to_fill_the_link() -> None:
    cfg = dataclasses.replace(QTCP_AIMD, slow_start=False)
    learnt = run_qtcp(one_flow(), cfg, seed=4).summary["bottleneck"]["utilization"]
    rand = run_qtcp(one_flow(), with_learner(cfg, exploration=1.0, exploration_decay=1.0), seed=4)
    # Measured (seeds 1-7): 0.82-0.84 against 0.34-0.37.
    assert learnt > rand.summary["bottleneck"]["utilization"] + 0.3


def test_runs_are_deterministic_and_learners_resume(tmp_path) -> None:
    a = run_qtcp(one_flow("20s"), QTCP, seed=5)
    b = run_qtcp(one_flow("20s"), QTCP, seed=5)
    for k in a.log:
        np.testing.assert_array_equal(a.log[k], b.log[k])
    save_learners(tmp_path / "l.npz", a.learners)
    restored = load_learners(tmp_path / "l.npz")
    np.testing.assert_array_equal(restored[0].theta, a.learners[0].theta)
    c = run_qtcp(one_flow("20s"), QTCP, seed=5, learners=restored)
    assert c.learners[0] is restored[0]
    assert restored[0].updates == 2 * a.learners[0].updates
    assert restored[0].elapsed_s == pytest.approx(2 * a.learners[0].elapsed_s)


def test_a_shared_learner_serves_every_flow() -> None:
    data, _ = load_scenario("qtcp-fixed")
    data["duration"] = "10s"
    run = run_qtcp(data, dataclasses.replace(QTCP, shared=True), seed=1)
    assert run.learners[0] is run.learners[1]
    decisions = len(run.log["time_s"])
    assert (
        run.learners[0].updates == decisions - 2
    )  # one transition per decision after each flow's first


def test_only_agent_flows_learn_when_the_scenario_keeps_its_cc() -> None:
    data, _ = load_scenario("qtcp-fixed")
    data["duration"] = "10s"
    data["workload"][0]["flows"][0]["cc"] = {"algorithm": "agent"}  # flow 1 stays NewReno
    run = run_qtcp(data, QTCP_AIMD, cc=None, seed=1)
    assert set(run.log["flow"].tolist()) == {0}
    assert run.summary["flows"]["count"] == 2


def test_per_ack_actions_reach_the_flows_window() -> None:
    """Holding +10 bytes per ACK (greedy on a learner that only knows action 0), the window
    recorded at each decision never falls outside loss recovery's reach: it grows by about
    10 bytes per packet acknowledged in between (the exact check is the Rust test)."""
    cfg = dataclasses.replace(QTCP, slow_start=False)
    q = KanervaQLearner(3, config=cfg.learner, seed=0)
    q.theta[:, 0] = 1.0
    run = run_qtcp(one_flow("10s"), cfg, learners={0: q}, learn=False)
    log = run.flow_log(0)
    assert (log["action"][:-1] == 0).all()
    grow = np.diff(log["cwnd_bytes"][:-1])
    assert (grow > 0).all()
    # 10-segment window, ~12 ACKs per 0.23 s at first: about 120 bytes per interval.
    assert 80 < grow[1] < 400, grow[:4]


# ------------------------------------------------------------------------------------------
# scenarios


def test_bundled_qtcp_scenarios_hold_the_papers_settings() -> None:
    d, _ = load_scenario("qtcp-aimd-dumbbell")
    assert d["duration"] == "3500s" and d["switch"]["queue_cap"] == "150KB"
    t = d["topology"]
    assert (t["bottleneck_rate"], t["link_rate"]) == ("40Mbps", "100Mbps")
    flows = d["workload"][0]["flows"]
    assert [f["start"] for f in flows] == ["0s", "500s", "1000s", "1500s"]
    assert [f["stop"] for f in flows] == ["2000s", "2500s", "3000s", "3500s"]
    f, _ = load_scenario("qtcp-fixed")
    assert (f["duration"], f["switch"]["queue_cap"], len(f["workload"][0]["flows"])) == (
        "800s",
        "300KB",
        2,
    )
    v, _ = load_scenario("qtcp-varying")
    steps = v["link"][0]["schedule"]
    assert v["topology"]["bottleneck_rate"] == "60Mbps" and len(steps) == 31
    assert steps[:3] == [
        {"at": "40s", "rate": "30Mbps"},
        {"at": "50s", "rate": "60Mbps"},
        {"at": "90s", "rate": "30Mbps"},
    ]


def test_the_command_line_runs_saves_and_resumes(tmp_path, capsys) -> None:
    from ccgym.qtcp.__main__ import main

    learners = tmp_path / "q.npz"
    args = ["qtcp-fixed", "--variant", "qtcp", "--set", "duration=5s", "--seed", "2"]
    assert main([*args, "--save-learners", str(learners), "--out", str(tmp_path / "run")]) == 0
    assert "decisions" in capsys.readouterr().out
    log = np.load(tmp_path / "run" / "decisions.npz")
    assert set(log.files) >= {"time_s", "flow", "cwnd_bytes", "utility", "action"}
    assert main([*args, "--learners", str(learners)]) == 0
    assert load_learners(learners)[0].updates > 0


# ------------------------------------------------------------------------------------------
# per-phase scores


def scaled_dumbbell(scale: float = 0.02) -> dict:
    """qtcp-aimd-dumbbell with every time multiplied by ``scale`` (500 s phases -> 10 s)."""
    data, _ = load_scenario("qtcp-aimd-dumbbell")
    data["duration"] = f"{3500 * scale}s"
    for f in data["workload"][0]["flows"]:
        f["start"] = f"{float(f['start'][:-1]) * scale}s"
        f["stop"] = f"{float(f['stop'][:-1]) * scale}s"
    return data


def test_phases_follow_the_joins_and_leaves() -> None:
    from ccgym.qtcp.phases import jain, phases

    ph = phases(load_scenario("qtcp-aimd-dumbbell")[0])
    assert [(a, b) for a, b, _ in ph] == [(500.0 * k, 500.0 * (k + 1)) for k in range(7)]
    assert [f for _, _, f in ph] == [(0,), (0, 1), (0, 1, 2), (0, 1, 2, 3), (1, 2, 3), (2, 3), (3,)]
    assert [f for _, _, f in phases(load_scenario("qtcp-fixed")[0])] == [(0, 1)]
    assert jain([1, 1, 1]) == pytest.approx(1.0) and jain([1, 0]) == pytest.approx(0.5)


def test_phase_table_scores_a_classic_cc_and_qtcp_alike() -> None:
    import ccgym
    from ccgym.qtcp.phases import jain_over_time, phase_table

    data = scaled_dumbbell()
    # 10 s phases: too short for NewReno to converge (a joining flow's slow start overshoots
    # and recovers one hole per RTT), but enough to check the bookkeeping.
    rows = phase_table(ccgym.run(data, cc="newreno"), skip_s=3.0)
    assert [r["senders"] for r in rows] == [1, 2, 3, 4, 3, 2, 1]
    for r in rows:
        assert 10 < r["throughput_mbps"] <= 40.5, r
        assert r["rtt_ms"] >= 120.0 and r["queue_kb"] <= 150.0
        assert 1 / r["senders"] - 1e-9 <= r["jain"] <= 1.0 and len(r["flow_mbps"]) == r["senders"]
    run = run_qtcp(data, QTCP_AIMD, seed=1)
    q = phase_table(run.result, skip_s=3.0)
    assert [r["senders"] for r in q] == [1, 2, 3, 4, 3, 2, 1]
    assert all(np.isfinite(r["jain"]) and len(r["flow_mbps"]) == r["senders"] for r in q)
    ends, index = jain_over_time(run.result, window_s=5.0)
    assert len(ends) == 14 and np.nanmin(index) > 0.25 and np.nanmax(index) <= 1.0


# ------------------------------------------------------------------------------------------
# the qtcp bench table


SCALED = [
    "duration=70s",
    *(f"workload[0].flows[{i}].start={10 * i}s" for i in range(4)),
    *(f"workload[0].flows[{i}].stop={40 + 10 * i}s" for i in range(4)),
]
"""qtcp-aimd-dumbbell with 10 s phases, as overrides."""


def test_qtcp_suite_jobs_score_learnt_and_classic_methods_per_phase() -> None:
    from ccgym.bench.runner import load_suite, run_job, run_key, suite_jobs
    from ccgym.bench.tables import build_rows, markdown_table, table_spec

    suite = load_suite("qtcp")
    assert suite["methods"] == ["qtcp", "qtcp-mimd", "qtcp-aimd", "newreno", "cubic"]
    jobs = suite_jobs(suite)
    assert len(jobs) == 3 * 5 * 3 and {j.scores for j in jobs} == {"qtcp"}
    assert len({j.key for j in jobs}) == len(jobs)
    records = []
    for method in ("qtcp-aimd", "newreno"):
        out = run_job("qtcp-aimd-dumbbell", SCALED, method, "qtcp")
        m = out["metrics"]
        assert m["jain1"] == pytest.approx(1.0)
        assert all(0.25 < m[f"jain{k}"] <= 1.0 for k in (2, 3, 4)), m
        assert m["jain_min"] <= min(m["jain2"], m["jain3"], m["jain4"])
        assert 10 < m["thr_mbps"] <= 40.5 and m["rtt_ms"] >= 120.0
        assert "ports" in out["series"] or out["series"]
        # The papers' figures: per-flow windows (learnt runs only), rates, queue, Jain's index.
        tr = out["traces"]
        assert len(tr["t_s"]) == len(tr["queue_pk"]) and set(tr["thr_mbps"]) == {"0", "1", "2", "3"}
        assert ("cwnd_pk" in tr) == (method == "qtcp-aimd")
        if method == "qtcp-aimd":
            w = np.array([np.nan if x is None else x for x in tr["cwnd_pk"]["3"]])
            t = np.array(tr["t_s"])
            assert np.isnan(w[t < 30]).all() and np.isfinite(w[t > 31]).all()  # joins at 30 s
            assert np.nanmin(w) >= 1.0
        assert 0.25 < np.nanmean([x for x in tr["jain"] if x is not None]) <= 1.0
        json.dumps(tr, allow_nan=False)  # a cache record is strict JSON
        records.append({"label": "scaled", "method": method, "metrics": m, "seed": 1, "traces": tr})
    rows = build_rows(records, spec=table_spec("qtcp"), published={})
    text = markdown_table(rows, spec=table_spec("qtcp"))
    assert "Jain 4" in text and "qtcp-aimd" in text
    html = qtcp_report_section(records)
    assert html.count("<img") == 2 and "scaled · qtcp-aimd · seed 1" in html
    data, _ = load_scenario("qtcp-fixed")
    assert run_key(data, "qtcp", 1, "qtcp") != run_key(data, "newreno", 1, "qtcp")


def test_trace_figure_cuts_the_slow_start_peak() -> None:
    """A slow start to 30,000 packets, then windows of 200-600: the window axis follows the
    windows after the peak (and says it is cut), the rates likewise; the figure's title is the
    run's, not a panel's."""
    n = 200
    t = [float(i) for i in range(n)]
    w0 = [30_000.0 if i == 20 else (100.0 * i if i < 20 else 200.0) for i in range(n)]
    w1 = [600.0 if i > 20 else 50.0 * i for i in range(n)]
    rates = {"0": [400.0 if i == 20 else 15.0 for i in range(n)], "1": [25.0] * n}
    tr = {"t_s": t, "cwnd_pk": {"0": w0, "1": w1}, "thr_mbps": rates, "queue_pk": [50.0] * n,
          "jain_t_s": [10.0, 20.0], "jain": [1.0, 0.9]}  # fmt: skip
    fig = trace_figure({"traces": tr}, "2 senders · qtcp · seed 1")
    ax_w, ax_r = fig.axes[:2]
    assert fig.get_suptitle() == "2 senders · qtcp · seed 1"
    assert ax_w.get_ylim() == pytest.approx((0.0, 750.0))  # 1.25 x the windows after the peak
    assert "axis cut at 750" in ax_w.get_title(loc="left")
    assert ax_r.get_ylim() == pytest.approx((0.0, 31.25))
    assert "axis cut at 31" in ax_r.get_title(loc="left")
    flat = trace_figure(
        {"traces": {**tr, "cwnd_pk": {"0": [200.0] * n}, "thr_mbps": {"0": [9.0] * n}}}
    )
    assert "cut" not in flat.axes[0].get_title(loc="left") and flat.axes[0].get_ylim()[0] == 0.0


# ------------------------------------------------------------------------------------------
# the command line's mistakes: one line, status 2 (as the ccgym command), --debug traceback


def _qtcp_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from ccgym.qtcp.__main__ import main

    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["qtcp-fixed", "--learners", "{tmp}/nope.npz"], "nope.npz"),
        (["qtcp-fixed", "--learners", "{tmp}/text.npz"], "not a QTCP learner file"),
        (["no-such-scenario"], 'unknown scenario "no-such-scenario"'),
        (["qtcp-fixed", "--set", "duraton=5s"], "duraton: unknown field"),
        (["qtcp-fixed", "--save-learners", "{tmp}/no/such/folder/q.npz"], "no such folder"),
        (
            ["friendliness", "newreno", "--against", "newreno", "newrenoo", "--seeds", "1"],
            'value "newrenoo": unknown congestion control',
        ),
    ],
)
def test_the_command_line_reports_mistakes_in_one_line(
    argv: list[str], expected: str, tmp_path, capsys
) -> None:
    """Each mistake fails before any simulation (no result line, no friendliness row: the
    learners of a long run would be lost if --save-learners failed at its end)."""
    (tmp_path / "text.npz").write_text("not an archive\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    status, out, err = _qtcp_cli([*argv, "--set", "duration=60s"], capsys)
    assert status == 2, err
    assert out == ""
    assert err.startswith("error: ") and expected in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_command_line_refuses_no_competitors(capsys) -> None:
    from ccgym.qtcp.__main__ import main

    with pytest.raises(SystemExit) as e:
        main(["friendliness", "newreno", "-k", "0"])
    assert e.value.code == 2
    assert "expected a positive integer, got '0'" in capsys.readouterr().err


def test_the_command_line_shows_the_traceback_with_debug(capsys) -> None:
    from ccgym import ScenarioError
    from ccgym.qtcp.__main__ import main

    with pytest.raises(ScenarioError, match="duraton"):
        main(["qtcp-fixed", "--set", "duraton=5s", "--debug"])
    with pytest.raises(ScenarioError, match="newrenoo"):
        main(["--debug", "friendliness", "newreno", "--against", "newrenoo", "--seeds", "1"])


def test_learners_of_another_variant_are_refused(tmp_path, capsys) -> None:
    """A learner file records its variant; loaded for another one it is refused (the
    API and the command line). A file without the record (written without a config, as
    before) is checked by its learners' settings: a warning."""
    from ccgym import ScenarioError
    from ccgym.qtcp import LearnerMismatchWarning, saved_variant

    path = tmp_path / "q.npz"
    learners = {0: KanervaQLearner(3, 3, QTCP.learner, seed=1)}
    save_learners(path, learners, QTCP)
    assert saved_variant(path)["name"] == "qtcp"
    assert load_learners(path, "qtcp")[0].n_actions == 3
    with pytest.raises(ScenarioError, match="learners of QTCP variant 'qtcp', not 'qtcp-aimd'"):
        load_learners(path, QTCP_AIMD)
    status, out, err = _qtcp_cli(
        ["qtcp-fixed", "--variant", "qtcp-aimd", "--learners", str(path)], capsys
    )
    assert status == 2 and out == "" and "not 'qtcp-aimd'" in err

    old = tmp_path / "old.npz"
    save_learners(old, learners)
    assert saved_variant(old) is None
    with pytest.warns(LearnerMismatchWarning, match="hyper-parameters are not those"):
        load_learners(old, QTCP_AIMD)
    with pytest.raises(ScenarioError, match="3 actions, QTCP variant 'two' has 2"):
        load_learners(old, dataclasses.replace(QTCP, name="two", per_ack=(1.0, -1.0)))


def test_keep_cc_without_agent_flows_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """cc=None (``--keep-cc``) on a scenario none of whose flows is an agent flow would run with
    no decision at all: it is refused before the run, in one line naming the way out."""
    from ccgym.qtcp.__main__ import main
    from ccgym.qtcp.driver import has_agent_flows

    data, _ = load_scenario("qtcp-fixed")
    assert not has_agent_flows(data)
    with pytest.raises(ScenarioError, match='no flow with cc = "agent"'):
        run_qtcp(data, QTCP_AIMD, cc=None, seed=1)
    assert main(["qtcp-fixed", "--keep-cc", "--set", "duration=1s"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--keep-cc" in err
    data["workload"][0]["flows"][1]["cc"] = {"algorithm": "agent"}
    assert has_agent_flows(data)
    data["workload"][0]["flows"][1].pop("cc")
    data["workload"][0]["cc"] = {"algorithm": "agent"}
    assert has_agent_flows(data)
    data["workload"][0]["flows"][0]["cc"] = {"algorithm": "cubic"}
    assert has_agent_flows(data)  # flow 1 still takes the workload's agent
