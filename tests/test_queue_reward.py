"""The switch-queue agents' rewards (``agent.queue_reward``): the linear default and the
quadratic queue penalty, recomputed from the observation the agent is given with the reward."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

_sim = pytest.importorskip("ccgym._sim")

from ccgym.agent_defaults import QUEUE_FEATURES  # noqa: E402
from ccgym.runner import scenario_json  # noqa: E402

NF = len(QUEUE_FEATURES)
COL = {name: i for i, name in enumerate(QUEUE_FEATURES)}


def scenario(agent: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "queue-reward",
        "duration": "300us",
        "topology": {"kind": "star", "hosts": 4, "link_rate": "25Gbps", "link_delay": "1us"},
        "switch": {"ecn": {"kmin": "100KB", "kmax": "400KB", "pmax": 0.2}},
        "cc": {"algorithm": "dctcp"},
        "workload": [{"kind": "incast", "senders": [1, 2, 3], "receiver": 0, "size": "2MB"}],
        "agent": {
            "queues": ["sw0->h0"],
            "queue_interval": "20us",
            "queue_history": 1,
            "ecn_profiles": [{"kmin": "100KB", "kmax": "400KB", "pmax": 0.2}],
            **agent,
        },
    }


def rewards(agent: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(previous interval's feature row, reward) of every request after the first."""
    sim = _sim.Simulation(scenario_json(scenario(agent)), str(Path.cwd()))
    rows, rews = [], []
    over = False
    while not over:
        over, batch = sim.agent_step()
        q = batch["queue"]
        rows += list(q["obs"][:, -NF:])
        rews += list(q["reward"])
        if len(q["agent"]):
            sim.agent_act(np.zeros(len(q["agent"]), np.float32))
    return np.array(rows, dtype=np.float64), np.array(rews, dtype=np.float64)


def test_linear_reward_is_the_default() -> None:
    rows, rew = rewards({"reward_beta": 0.7, "reward_scale": 2.0})
    expect = 2.0 * (rows[:, COL["tx_rate"]] - 0.7 * rows[:, COL["queue"]])
    np.testing.assert_allclose(rew, expect, rtol=1e-5, atol=1e-6)
    same, rew_named = rewards({"reward_beta": 0.7, "reward_scale": 2.0, "queue_reward": "linear"})
    np.testing.assert_array_equal(rew, rew_named)


def test_quadratic_reward_penalises_the_peak_and_mean_queue() -> None:
    agent = {
        "queue_reward": "quadratic",
        "queue_ref": "10us",
        "queue_peak_weight": 0.3,
        "queue_mean_weight": 0.2,
        "reward_scale": 0.5,
    }
    rows, rew = rewards(agent)
    # Features are over the bytes of one 20 us interval; q_ref is 10 us of the same port.
    peak = rows[:, COL["max_queue"]] * 2.0
    mean = rows[:, COL["mean_queue"]] * 2.0
    expect = 0.5 * (rows[:, COL["tx_rate"]] - 0.3 * peak**2 - 0.2 * mean**2)
    np.testing.assert_allclose(rew, expect, rtol=1e-5, atol=1e-6)
    # The incast's queue (hundreds of KB under a 100 KB Kmin) costs far more than linearly.
    assert rew.min() < -1.0
    linear_rows, linear = rewards({"reward_scale": 0.5})
    assert rew.min() < linear.min()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"queue_reward": "cubic"}, "agent.queue_reward"),
        ({"queue_reward": "quadratic", "queue_ref": "0us"}, "agent.queue_ref"),
        ({"queue_reward": "quadratic", "queue_peak_weight": -1.0}, "agent.queue_peak_weight"),
        (
            {"queue_reward": "quadratic", "queue_mean_weight": float("nan")},
            "agent.queue_mean_weight",
        ),
    ],
)
def test_bad_queue_rewards_name_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        _sim.Simulation(scenario_json(scenario(change)), str(Path.cwd()))


def test_profiles_scale_with_the_port_rate_from_the_reference_rate() -> None:
    data = scenario({"ecn_reference_rate": "25Gbps"})
    data["topology"]["link_rate"] = "100Gbps"
    data["switch"]["ecn"] = {"kmin": "400KB", "kmax": "1600KB", "pmax": 0.2}
    data["agent"]["ecn_profiles"] = [
        {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01},
        {"kmin": "100KB", "kmax": "400KB", "pmax": 0.2},
    ]
    sim = _sim.Simulation(scenario_json(data), str(Path.cwd()))
    port, queue = sim.queue_agent_targets()[0]
    over, batch = sim.agent_step()
    # The switch's 400 KB / 1600 KB at 100 Gb/s is profile 1 written for 25 Gb/s.
    assert batch["queue"]["obs"][0, -1] == 1.0
    sim.agent_act(np.zeros(1, np.float32))
    sim.agent_step()
    assert sim.queue_ecn(port, queue) == (20_000, 800_000, 0.01)


def scope_rewards(
    scope: str | None, weight: float | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(agents, rewards) of every queue batch of a run with agents on all four server ports
    (one profile, so the actions cannot change the traffic between scopes)."""
    data = scenario({} if scope is None else {"queue_reward_scope": scope})
    if weight is not None:
        data["agent"]["queue_reward_fabric_weight"] = weight
    data["agent"]["queues"] = ["sw0->h0", "sw0->h1", "sw0->h2", "sw0->h3"]
    sim = _sim.Simulation(scenario_json(data), str(Path.cwd()))
    out = []
    over = False
    while not over:
        over, batch = sim.agent_step()
        q = batch["queue"]
        if len(q["agent"]):
            out.append((np.asarray(q["agent"]).copy(), np.asarray(q["reward"], np.float64)))
            sim.agent_act(np.zeros(len(q["agent"]), np.float32))
    return out


def test_fabric_reward_scope_gives_every_agent_the_mean_of_the_port_rewards() -> None:
    port = scope_rewards(None)
    np.testing.assert_array_equal(
        np.concatenate([r for _, r in port]), np.concatenate([r for _, r in scope_rewards("port")])
    )
    fabric = scope_rewards("fabric")
    assert len(port) == len(fabric) > 3
    spread = False
    for (agents_p, rew_p), (agents_f, rew_f) in zip(port, fabric, strict=True):
        np.testing.assert_array_equal(agents_p, agents_f)
        assert len(agents_f) == 4  # every agent asks at every tick
        np.testing.assert_allclose(rew_f, np.full(4, rew_p.mean()), rtol=1e-6, atol=1e-7)
        spread |= bool(np.ptp(rew_p) > 0.1)
    # The incast loads one port only, so the port rewards differ and the mean is not trivial.
    assert spread


def test_bad_queue_reward_scope_names_the_field() -> None:
    with pytest.raises(ValueError, match="agent.queue_reward_scope"):
        _sim.Simulation(scenario_json(scenario({"queue_reward_scope": "switch"})), str(Path.cwd()))


def test_mixed_reward_scope_blends_the_port_and_the_fabric_reward() -> None:
    port = scope_rewards("port")
    mixed = scope_rewards("mixed", 0.25)
    assert len(port) == len(mixed) > 3
    for (agents_p, rew_p), (agents_m, rew_m) in zip(port, mixed, strict=True):
        np.testing.assert_array_equal(agents_p, agents_m)
        np.testing.assert_allclose(rew_m, 0.75 * rew_p + 0.25 * rew_p.mean(), rtol=1e-6, atol=1e-7)
    # weight 1 is the fabric scope, weight 0 the port scope
    ends = [scope_rewards("mixed", 1.0), scope_rewards("fabric"), scope_rewards("mixed", 0.0)]
    for a, b in ((ends[0], ends[1]), (ends[2], port)):
        np.testing.assert_allclose(
            np.concatenate([r for _, r in a]), np.concatenate([r for _, r in b]), atol=1e-7
        )


@pytest.mark.parametrize("weight", [-0.1, 1.5, float("nan")])
def test_bad_mixed_reward_weight_names_the_field(weight: float) -> None:
    data = scenario({"queue_reward_scope": "mixed", "queue_reward_fabric_weight": weight})
    with pytest.raises(ValueError, match="agent.queue_reward_fabric_weight"):
        _sim.Simulation(scenario_json(data), str(Path.cwd()))
