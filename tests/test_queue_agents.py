"""Switch-queue agents through the batched bridge (the ``queue`` batch group).

A 3-to-1 incast of DCTCP flows on a star; the switch port towards the receiver is an agent
(one data queue) that samples every 10 us. Each test runs a small real simulation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

_sim = pytest.importorskip("ccgym._sim")

from ccgym.agent_defaults import QUEUE_FEATURES  # noqa: E402
from ccgym.runner import scenario_json  # noqa: E402

NF = len(QUEUE_FEATURES)

PROFILES = [
    {"kmin": "5KiB", "kmax": "20KiB", "pmax": 0.1},
    {"kmin": "50KiB", "kmax": "200KiB", "pmax": 0.5},
]


def scenario(agent: dict[str, Any] | None = None) -> dict[str, Any]:
    table: dict[str, Any] = {
        "queues": ["sw0->h0"],
        "queue_interval": "10us",
        "queue_history": 3,
        "ecn_profiles": PROFILES,
        "policy_delay": "3us",
    }
    table.update(agent or {})
    return {
        "name": "queue-agent",
        "duration": "200us",
        "topology": {"kind": "star", "hosts": 4, "link_rate": "100Gbps", "link_delay": "1us"},
        "switch": {"ecn": {"kmin": "5KiB", "kmax": "20KiB", "pmax": 0.1}},
        "cc": {"algorithm": "dctcp"},
        "workload": [{"kind": "incast", "senders": [1, 2, 3], "receiver": 0, "size": "2MB"}],
        "agent": table,
    }


def build(data: dict[str, Any]) -> Any:
    return _sim.Simulation(scenario_json(data), str(Path.cwd()))


def test_queue_group_has_its_own_width_and_the_action_lands_after_policy_delay() -> None:
    sim = build(scenario())
    assert sim.queue_obs_dim == NF * 3
    targets = sim.queue_agent_targets()
    assert len(targets) == 1
    port, queue = targets[0]
    assert sim.queue_ecn(port, queue) == (5 * 1024, 20 * 1024, 0.1)
    over, batch = sim.agent_step()
    assert not over
    group = batch["queue"]
    assert group["obs"].shape == (1, NF * 3)
    assert list(group["agent"]) == [0]
    t0 = float(group["time_s"][0])
    assert t0 == pytest.approx(10e-6)
    # The incast fills the queue: the first interval saw bytes sent and a standing queue.
    newest = dict(zip(QUEUE_FEATURES, group["obs"][0, -NF:], strict=True))
    assert newest["tx_rate"] > 0.5, "the queue sent most of the port's line rate"
    assert newest["max_queue"] >= newest["mean_queue"] > 0.0
    assert newest["marked_rate"] > 0.0
    assert newest["ecn_profile"] == 0.0, "the switch's configuration is profile 0"
    # The flow group is there too, with today's keys (no flow agents: empty).
    assert batch["obs"].shape == (0, sim.obs_dim)
    sim.agent_act(np.array([1.0], np.float32))
    # Not yet applied: the action is due 3 us after the request.
    sim.run_until(int(t0 * 1e12) + 2_999_999)
    assert sim.queue_ecn(port, queue) == (5 * 1024, 20 * 1024, 0.1)
    sim.run_until(int(t0 * 1e12) + 3_000_000)
    assert sim.queue_ecn(port, queue) == (50 * 1024, 200 * 1024, 0.5)
    # The next sample reports the new profile.
    over, batch = sim.agent_step()
    assert batch["queue"]["obs"][0, -1] == 1.0


def test_queue_agents_change_marking() -> None:
    """Holding the shallow profile marks more than switching to the deep one."""

    def marks(action: float) -> int:
        sim = build(scenario())
        over = False
        while not over:
            over, batch = sim.agent_step()
            n = len(batch["queue"]["agent"]) + len(batch["flow"])
            sim.agent_act(np.full(n, action, np.float32))
        return int(sum(p["ecn_marks"] for p in json.loads(sim.summary())["ports"]))

    shallow, deep = marks(0.0), marks(1.0)
    assert shallow > deep >= 0


def test_flow_only_scenarios_keep_todays_dict() -> None:
    data = scenario()
    data["agent"] = {}
    data["cc"] = {"algorithm": "agent"}
    sim = build(data)
    assert sim.queue_obs_dim == 0
    _, batch = sim.agent_step()
    assert set(batch) == {"flow", "time_s", "obs", "reward", "done", "truncated"}


def test_queue_agents_in_a_pool() -> None:
    pool = _sim.Pool([(scenario_json(scenario()), str(Path.cwd()))] * 2)
    batch = pool.step()
    group = batch["queue"]
    assert group["obs"].shape == (2, NF * 3)
    assert sorted(group["sim"]) == [0, 1]
    pool.act(np.zeros(len(batch["flow"]) + 2, np.float32))
    batch = pool.step()
    assert batch["queue"]["obs"].shape == (2, NF * 3)
    with pytest.raises(ValueError, match="expected 2 actions"):
        pool.act(np.zeros(len(batch["flow"]) + 3, np.float32))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"queues": ["sw0->nowhere"]}, "agent.queues[0]"),
        ({"ecn_profiles": []}, "agent.ecn_profiles"),
        ({"queue_history": 0}, "agent.queue_history"),
        ({"queues": ["sw0->h0", "sw0->h0"]}, "agent.queues[1]"),
        (
            {"ecn_profiles": [{"kmin": "20KiB", "kmax": "5KiB", "pmax": 0.1}]},
            "agent.ecn_profiles[0]",
        ),
    ],
)
def test_bad_queue_agent_tables_name_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        build(scenario(change))


def test_flow_and_queue_groups_together_take_flow_actions_first() -> None:
    data = scenario({"trigger": "interval", "interval": "10us"})
    data["cc"] = {"algorithm": "agent"}
    sim = build(data)
    port, queue = sim.queue_agent_targets()[0]
    over, batch = sim.agent_step()
    nf, nq = len(batch["flow"]), len(batch["queue"]["agent"])
    assert nf == 3 and nq == 1
    assert batch["obs"].shape == (3, sim.obs_dim)
    assert batch["queue"]["obs"].shape == (1, sim.queue_obs_dim) != batch["obs"].shape
    with pytest.raises(ValueError, match="expected 4 actions"):
        sim.agent_act(np.zeros(3, np.float32))
    # Flow actions (multiplier 0: keep) first, then the queue's profile index.
    sim.agent_act(np.array([0.0, 0.0, 0.0, 1.0], np.float32))
    t0 = int(round(float(batch["queue"]["time_s"][0]) * 1e12))
    sim.run_until(t0 + 3_000_000)
    assert sim.queue_ecn(port, queue) == (50 * 1024, 200 * 1024, 0.5)
