"""Native (Rust) inference of ACC's Q-network for switch-queue agents (``agent.queue_policy``)
and the ECN profile log (``metrics.ecn_series``, the result table ``ecn``).

A 3-to-1 DCTCP incast on a star, the switch port towards the receiver an agent that chooses
among three ECN profiles every 10 us. The Q-network is a DDQN ``QNetwork`` with hand-set
weights whose greedy choice follows the queue (so that the choices change during the run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

_sim = pytest.importorskip("ccgym._sim")

from ccgym import policies  # noqa: E402
from ccgym.agent_defaults import QUEUE_FEATURES  # noqa: E402
from ccgym.runner import scenario_json  # noqa: E402
from ccgym.scenario import load_scenario  # noqa: E402

NF = len(QUEUE_FEATURES)
HISTORY = 3

PROFILES = [
    {"kmin": 5 * 1024, "kmax": 20 * 1024, "pmax": 0.1},
    {"kmin": 50 * 1024, "kmax": 200 * 1024, "pmax": 0.5},
    {"kmin": 20 * 1024, "kmax": 80 * 1024, "pmax": 0.2},
]


def scenario(agent: dict[str, Any] | None = None) -> dict[str, Any]:
    table: dict[str, Any] = {
        "queues": ["sw0->h0"],
        "queue_interval": "10us",
        "queue_history": HISTORY,
        "ecn_profiles": PROFILES,
        "policy_delay": "3us",
    }
    table.update(agent or {})
    return {
        "name": "queue-policy",
        "duration": "300us",
        "topology": {"kind": "star", "hosts": 4, "link_rate": "100Gbps", "link_delay": "1us"},
        "switch": {"ecn": {"kmin": "5KiB", "kmax": "20KiB", "pmax": 0.1}},
        "cc": {"algorithm": "dctcp"},
        "workload": [
            {"kind": "incast", "senders": [1, 2, 3], "receiver": 0, "size": "600KB"},
            {"kind": "incast", "senders": [1, 2], "receiver": 0, "size": "300KB", "start": "150us"},
        ],
        "agent": table,
    }


def q_weights() -> list[tuple[np.ndarray, np.ndarray, str]]:
    """A 21 -> 4 -> 3 Q-network: profile 1 (deep) while the newest queue sample is long,
    profile 2 while the port sends near line rate with a short queue, profile 0 otherwise."""
    w1 = np.zeros((4, NF * HISTORY), np.float32)
    queue, tx = NF * (HISTORY - 1), NF * (HISTORY - 1) + QUEUE_FEATURES.index("tx_rate")
    w1[0, queue] = 1.0
    w1[1, tx] = 1.0
    w1[2, queue - NF] = 1.0  # the previous interval's queue
    b1 = np.array([0.0, 0.0, 0.0, 1.0], np.float32)
    w2 = np.array([[0.0, 0.0, 0.0, 0.5], [6.0, 0.0, 1.0, 0.0], [-4.0, 0.8, 0.0, 0.0]], np.float32)
    b2 = np.zeros(3, np.float32)
    return [(w1, b1, "relu"), (w2, b2, "none")]


def q_network() -> Any:
    torch = pytest.importorskip("torch")
    from ccgym.agents.ddqn import QNetwork

    net = QNetwork(NF * HISTORY, len(PROFILES), hidden=(4,))
    with torch.no_grad():
        for lin, (w, b, _) in zip([net.net[0], net.net[2]], q_weights(), strict=True):
            lin.weight.copy_(torch.from_numpy(w))
            lin.bias.copy_(torch.from_numpy(b))
    return net


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "q.json"
    policies.save_policy(policies.mlp_policy(q_weights(), "none", meta={"algorithm": "ddqn"}), path)
    return path


def build(data: dict[str, Any]) -> Any:
    return _sim.Simulation(scenario_json(data), str(Path.cwd()))


def stepped(data: dict[str, Any], choose: Any) -> tuple[dict[str, Any], dict[str, Any], list]:
    """Runs ``data`` with every queue decision made in Python by ``choose(obs) -> indices``;
    returns the summary, the tables and the (time, obs, action) of every decision."""
    sim = build(data)
    decisions = []
    over = False
    while not over:
        over, batch = sim.agent_step()
        q = batch["queue"]
        live = ~(q["done"] | q["truncated"])
        actions = np.zeros(len(q["agent"]), np.float32)
        if live.any():
            actions[live] = choose(q["obs"][live])
            for t, o, a in zip(q["time_s"][live], q["obs"][live], actions[live], strict=True):
                decisions.append((float(t), o.copy(), int(a)))
        if len(actions) or len(batch["flow"]):
            sim.agent_act(actions)
    summary, tables = sim.finish()
    return json.loads(summary), tables, decisions


def native(data: dict[str, Any], policy: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    data = json.loads(json.dumps(data))
    data["agent"]["queue_policy"] = str(policy)
    summary, tables = build(data).finish()
    return json.loads(summary), tables


def ecn_rows(tables: dict[str, Any]) -> list[tuple]:
    t = tables["ecn"]
    cols = ("time_s", "port_id", "queue", "kmin_bytes", "kmax_bytes", "pmax", "template")
    return list(zip(*(np.asarray(t[c]).tolist() for c in cols), strict=True))


def test_native_run_equals_the_run_stepped_with_the_greedy_q_network(policy_file: Path) -> None:
    pytest.importorskip("torch")
    from ccgym.agents.ddqn import DDQN, DDQNSettings

    learner = DDQN(NF * HISTORY, len(PROFILES), DDQNSettings(hidden=(4,)))
    learner.q.load_state_dict(q_network().state_dict())
    data = scenario()
    s_summary, s_tables, decisions = stepped(data, learner.greedy)
    n_summary, n_tables = native(data, policy_file)
    # The stepped run chose every profile at some point: the comparison means something.
    assert {a for _, _, a in decisions} == {0, 1, 2}
    # Same profiles at the same instants, and the same run.
    assert ecn_rows(n_tables) == ecn_rows(s_tables)
    assert len(ecn_rows(n_tables)) > 4
    assert n_summary == s_summary
    # The native choices are the greedy ones on the same observations (numpy, torch, Rust).
    obs = np.stack([o for _, o, _ in decisions])
    greedy = np.array([a for _, _, a in decisions])
    assert (policies.greedy_templates(policies.load_policy(policy_file), obs) == greedy).all()
    scores = policies.native_forward(policy_file, obs)
    assert (np.argmax(scores, axis=1) == greedy).all()


def test_random_q_network_native_argmax_equals_ddqn_greedy(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from ccgym.agents.ddqn import QNetwork

    torch.manual_seed(3)
    net = QNetwork(NF * HISTORY, 35, hidden=(64, 64))
    path = tmp_path / "q.json"
    policy = policies.export_q_network(net, path, agent=scenario()["agent"])
    assert policy["output"] == "none" and policy["meta"]["algorithm"] == "ddqn"
    assert policy["meta"]["agent"]["queue_history"] == HISTORY
    obs = np.random.default_rng(1).uniform(0, 2, (500, NF * HISTORY)).astype(np.float32)
    with torch.no_grad():
        want = net(torch.from_numpy(obs)).argmax(dim=1).numpy()
    assert (policies.greedy_templates(policy, obs) == want).all()
    assert (np.argmax(policies.native_forward(path, obs), axis=1) == want).all()


def test_policy_delay_zero_native_run_applies_the_choice_at_the_tick(policy_file: Path) -> None:
    n_summary, n_tables = native(scenario({"policy_delay": "0s"}), policy_file)
    rows = ecn_rows(n_tables)
    # Changes happen on the agent's 10 us grid only (no delay).
    changes = [r for r in rows if r[0] > 0]
    assert changes
    for t, *_ in changes:
        assert round(t * 1e6, 6) % 10 == 0


def test_native_queue_agents_never_join_the_batch(policy_file: Path) -> None:
    data = scenario()
    data["agent"]["queue_policy"] = str(policy_file)
    sim = build(data)
    over, batch = sim.agent_step()
    assert over and len(batch["queue"]["agent"]) == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"queue_history": 2}, "takes 21 inputs but a queue agent's observation has 14"),
        ({"ecn_profiles": PROFILES[:2]}, "has 3 outputs but agent.ecn_profiles has 2"),
        ({"queues": []}, "agent.queues is empty"),
        ({"queue_policy": "no-such-file.json"}, "cannot read the policy file"),
    ],
)
def test_a_policy_that_does_not_fit_is_a_config_error(
    policy_file: Path, change: dict[str, Any], message: str
) -> None:
    data = scenario({"queue_policy": str(policy_file), **change})
    with pytest.raises(ValueError, match="agent.queue_policy") as e:
        build(data)
    assert message in str(e.value)


def test_bundled_names_resolve_and_unknown_names_are_refused(policy_file: Path) -> None:
    data = scenario({"queue_policy": "adpg-default"})
    loaded, _ = load_scenario(data)
    assert loaded["agent"]["queue_policy"] == str(policies.policy_path("adpg-default"))
    with pytest.raises(ValueError, match='agent.queue_policy: value "nope"'):
        load_scenario(scenario({"queue_policy": "nope"}))


def test_use_queue_policy_fills_the_queue_keys_from_meta(tmp_path: Path) -> None:
    agent = scenario()["agent"]
    path = tmp_path / "q.json"
    policies.save_policy(
        policies.mlp_policy(q_weights(), "none", meta={"agent": dict(agent, queue_history=3)}),
        path,
    )
    base = scenario()
    del base["agent"]["ecn_profiles"]
    base["agent"]["policy_delay"] = "5us"
    data = policies.use_queue_policy(base, path)
    assert data["agent"]["ecn_profiles"] == PROFILES  # from meta
    assert data["agent"]["policy_delay"] == "5us"  # the scenario's own wins
    assert data["agent"]["queue_policy"] == str(path.resolve())
    summary, tables = build(data).finish()
    assert len(tables["ecn"]["time_s"]) > 1


def test_ecn_series_is_off_without_queue_agents_and_logs_set_ecn_when_on() -> None:
    data = scenario()
    del data["agent"]
    _, tables = build(data).finish()
    assert "ecn" not in tables
    info = tables["port_info"]
    port = int(info["port_id"][list(info["name"]).index("sw0->h0")])
    data["metrics"] = {"ecn_series": True}
    sim = build(data)
    sim.run_until(50_000_000)
    sim.set_ecn([port], [1], [10_000], [40_000], [0.3])
    sim.set_ecn([port], [1], [10_000], [40_000], [0.3])  # no change: no row
    _, tables = sim.finish()
    rows = ecn_rows(tables)
    start = [r for r in rows if r[0] == 0.0]
    assert len(start) == 4  # every switch port's data queue, at time 0
    assert all(r[3:6] == (5120.0, 20480.0, 0.1) for r in start)
    later = [r for r in rows if r[0] > 0]
    assert len(later) == 1
    t, p, q, kmin, kmax, pmax, template = later[0]
    assert (t, p, q, kmin, kmax, pmax) == (50e-6, port, 1, 10_000.0, 40_000.0, 0.3)
    assert np.isnan(template)
    data["metrics"] = {"ecn_series": "sometimes"}
    with pytest.raises(ValueError, match="metrics.ecn_series"):
        build(data)


def test_tier_series_and_figure_follow_the_log(policy_file: Path) -> None:
    pytest.importorskip("matplotlib")
    from ccgym.acc.ecn_series import port_group, tier_series
    from ccgym.bench.plots import ecn_figure, figure_png

    data = scenario({"queue_policy": str(policy_file)})
    data["metrics"] = {"sample_interval": "5us"}
    _, tables = build(data).finish()
    tiers = tier_series(tables)
    assert list(tiers["groups"]) == ["sw"]
    agent_port = int(build(data).queue_agent_targets()[0][0])
    log = [r for r in ecn_rows(tables) if r[1] == agent_port]
    times = tiers["time_s"]
    # The agent's queue is the only one that changes; at each sample time the tier's largest
    # Kmax is the agent's profile in force then (the other queues keep the 20 KiB start).
    for k, t in enumerate(times):
        in_force = [r for r in log if r[0] <= t + 1e-15][-1]
        assert tiers["kmax_hi_bytes"][0, k] == max(in_force[4], 20 * 1024)
    assert tiers["changes"][0] == len(log) - 1 > 0
    # The queue columns are the ports table's samples of the tier.
    ports = tables["ports"]
    k = len(times) // 3
    at = np.asarray(ports["time_s"]) == times[k]
    assert tiers["queue_max_bytes"][0, k] == np.asarray(ports["queue_bytes"])[at].max()
    assert port_group("leaf1->spine0", "link") == "leaf->spine"
    assert port_group("edge12->h3") == "edge"
    by_link = tier_series(tables, by="link")
    assert list(by_link["groups"]) == ["sw->h"]
    fig = ecn_figure(tiers, "test")
    # Queue (a few kB) and thresholds (up to MBs) on one log axis, linear below 1 kB.
    assert fig.axes[0].get_yscale() == "symlog" and fig.axes[0].get_ylabel() == "kB (log scale)"
    png = figure_png(fig)
    assert png[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="ecn_series"):
        tier_series({"ports": tables["ports"], "port_info": tables["port_info"]})


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [
        ("all", ["sw0->h0", "sw0->h1", "sw0->h2", "sw0->h3"]),
        (None, ["sw0->h0", "sw0->h1", "sw0->h2", "sw0->h3"]),
        (["sw0->h2"], ["sw0->h2"]),
    ],
)
def test_use_queue_policy_fills_the_queues_the_policy_was_trained_on(
    tmp_path: Path, recorded: Any, expected: list[str]
) -> None:
    """A scenario without agent.queues gets the policy's recorded queues; a recorded "all" (what
    ccgym train ddqn records by default), or nothing, is every switch port, which the simulator
    takes (it refuses the string "all")."""
    from ccgym.runner import run

    meta_agent = {k: v for k, v in scenario()["agent"].items() if k != "queues"}
    if recorded is not None:
        meta_agent["queues"] = recorded
    path = tmp_path / "q.json"
    policies.save_policy(policies.mlp_policy(q_weights(), "none", meta={"agent": meta_agent}), path)
    base = scenario()
    del base["agent"]
    data = policies.use_queue_policy(base, path)
    loaded, _ = load_scenario(data)
    assert loaded["agent"]["queues"] == expected
    result = run(data)
    # The policy changes the receiver port's profile during the run (sw0->h2 carries nothing).
    assert (result.series["ecn"]["time_s"] > 0).any() == ("sw0->h0" in expected)
    # The scenario's own choice wins, a tier name included.
    mine, _ = load_scenario(policies.use_queue_policy(base, path, agent={"queues": "sw0"}))
    assert mine["agent"]["queues"] == ["sw0->h0", "sw0->h1", "sw0->h2", "sw0->h3"]
