"""Switch-queue agents through the batched bridge (the ``queue`` batch group).

A 3-to-1 incast of DCTCP flows on a star; the switch port towards the receiver is an agent
(one data queue) that samples every 10 us. Each test runs a small real simulation.
"""

from __future__ import annotations

import json
import re
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


# ------------------------------------------------------------------------------------------
# The Python rollout path: AgentPool and the multi-agent adapters


def test_agent_pool_steps_both_groups_with_a_random_policy() -> None:
    from ccgym.env.bridge import QUEUE_AGENT_BIT, AgentPool, split_key

    rng = np.random.default_rng(0)
    pool = AgentPool([scenario(), scenario()], seeds=[1, 2], auto_reset=False, single_thread=False)
    assert pool.groups == ("flow", "queue")
    assert pool.queue_obs_dim == NF * 3 != pool.obs_dim
    assert pool.queue_agent_names(1) == ["queue_sw0->h0_q1"]
    seen_queue_keys: set[int] = set()
    for _ in range(8):
        batches = pool.step_groups()
        flows, queues = batches["flow"], batches["queue"]
        assert flows.obs.shape[1] == pool.obs_dim and queues.obs.shape[1] == pool.queue_obs_dim
        _, _, agent = split_key(queues.key)
        assert (agent & QUEUE_AGENT_BIT).all() and not (
            split_key(flows.key)[2] & QUEUE_AGENT_BIT
        ).any()
        seen_queue_keys |= set(queues.key.tolist())
        if queues.request.any():
            with pytest.raises(ValueError, match="queue-agent requests"):
                pool.act(np.zeros(len(flows), np.float32))
        pool.act(
            {
                "flow": rng.uniform(-1, 1, len(flows)).astype(np.float32),
                "queue": rng.integers(0, len(PROFILES), len(queues)).astype(np.float32),
            }
        )
    assert len(seen_queue_keys) == 2, "one queue agent per simulation, one key each"
    assert pool.decisions > 8


def test_agent_pool_runs_an_episode_to_every_queue_agents_end() -> None:
    """Queue agents only (the flows keep DCTCP): each request is answered with a profile and
    the run ends with one truncated entry per queue agent; a key never repeats in a batch."""
    from ccgym.env.bridge import AgentPool

    pool = AgentPool(scenario(), cc=None, auto_reset=False)
    requests, ends = 0, []
    while not pool.all_over:
        batches = pool.step_groups()
        q = batches["queue"]
        assert len(batches["flow"]) == 0
        assert len(set(q.key.tolist())) == len(q)
        requests += int(q.request.sum())
        ends += q.key[q.truncated].tolist()
        if len(q):
            pool.act({"queue": np.ones(len(q), np.float32)})
    assert requests == 19, "one request per 10 us before the end at 200 us"
    assert len(ends) == 1
    # Holding the deep profile: the queue never marked at the shallow one's threshold.
    assert pool.summary()["duration_s"] == pytest.approx(200e-6)


def test_pettingzoo_adapter_exposes_queue_agents() -> None:
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_api_test

    from ccgym.env import CcParallelEnv

    env = CcParallelEnv(scenario(), interval="10us")
    queue = "queue_sw0->h0_q1"
    assert env.possible_agents == ["flow_0", "flow_1", "flow_2", queue]
    assert env.observation_space(queue).shape == (NF * 3,)
    assert env.observation_space("flow_0").shape == (env.pool.obs_dim,)
    assert env.action_space(queue).n == len(PROFILES)
    parallel_api_test(env, num_cycles=50)
    obs, _ = env.reset(seed=3)
    assert set(obs) == set(env.possible_agents)
    queue_entries, queue_end = 1, None
    while env.agents:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        obs, rew, term, trunc, infos = env.step(actions)
        if queue in obs:
            assert obs[queue].shape == (NF * 3,)
            queue_entries += 1
            if trunc[queue]:
                queue_end = infos[queue]["time_s"]
    # A request every 10 us from 10 us to 190 us, then the end of the run.
    assert queue_entries == 20 and queue_end == pytest.approx(200e-6)


def test_rllib_adapter_exposes_queue_agents() -> None:
    pytest.importorskip("ray.rllib")
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    from ccgym.env import CcRllibEnv

    env = CcRllibEnv({"scenario": scenario(), "agent": {"trigger": "interval", "interval": "20us"}})
    queue = "queue_sw0->h0_q1"
    assert queue in env.possible_agents
    assert env.observation_spaces[queue].shape == (NF * 3,)
    assert env.action_spaces[queue].n == len(PROFILES)
    check_multiagent_environments(env)
    obs, _ = env.reset(seed=1)
    queue_entries = int(queue in obs)
    for _ in range(6):
        actions = {a: env.action_spaces[a].sample() for a in obs}
        obs, rew, term, trunc, _ = env.step(actions)
        assert set(obs) == set(rew) and set(obs) <= set(env.possible_agents)
        for a, o in obs.items():
            assert env.observation_spaces[a].contains(o), a
        queue_entries += int(queue in obs)
    assert queue_entries >= 3


def test_single_flow_envs_refuse_queue_agents() -> None:
    from ccgym.env import CcFlowEnv, CcFlowVectorEnv

    with pytest.raises(ValueError, match="switch-queue agents"):
        CcFlowEnv(scenario())
    with pytest.raises(ValueError, match="switch-queue agents"):
        CcFlowVectorEnv(scenario())


def test_keep_profile_actions_read_the_profile_in_force() -> None:
    """The answer that changes nothing (an omitted PettingZoo/RLlib action, a settled batch)
    is the index of the profile each queue has now, read from its newest observation row."""
    from ccgym.agent_defaults import keep_profile_actions
    from ccgym.env.bridge import AgentPool

    cfg = scenario()["agent"]
    pool = AgentPool(scenario(), cc=None, auto_reset=False)
    seen = []
    for step in range(6):
        q = pool.step_groups()["queue"]
        if not len(q):
            continue
        seen.append(int(keep_profile_actions(cfg, q.obs)[0]))
        # Profile 1 from the first answer on; it lands 3 us later, before the next sample.
        pool.act({"queue": np.full(len(q), 1.0 if step == 0 else keep_profile_actions(cfg, q.obs))})
    assert seen[0] == 0 and seen[1:] == [1] * (len(seen) - 1), seen
    three = [*PROFILES, {"kmin": "1KiB", "kmax": "2KiB", "pmax": 1.0}]
    obs = np.zeros((3, NF * 2), np.float32)
    obs[:, -NF + QUEUE_FEATURES.index("ecn_profile")] = [0.0, 0.5, 1.0]
    assert keep_profile_actions({"ecn_profiles": three}, obs).tolist() == [0.0, 1.0, 2.0]


def test_pettingzoo_errors_name_queue_agents_as_env_agents_does() -> None:
    """A refused queue-agent action names the agent as ``env.agents`` does
    (``queue_sw0->h0_q1``), not by the simulator's index (``queue agent 0``)."""
    pytest.importorskip("pettingzoo")
    from ccgym.env import CcParallelEnv

    env = CcParallelEnv(scenario(), interval="10us")
    env.reset(seed=3)
    queue = "queue_sw0->h0_q1"
    assert queue in env.agents
    for bad, why in ((5, "is not an index into agent.ecn_profiles"), (float("nan"), "NaN")):
        actions = {a: 0 for a in env.agents}
        actions[queue] = bad
        with pytest.raises(ValueError, match=f"^agent {re.escape(queue)}: action .*{why}") as e:
            env.step(actions)
        assert "queue agent 0" not in str(e.value)
    env.step({a: 0 for a in env.agents})  # nothing was applied: the batch is answered now


def test_pool_errors_name_the_queue_agent_of_each_simulation() -> None:
    from ccgym.env.bridge import AgentPool

    pool = AgentPool([scenario(), scenario({"queues": ["sw0->h1"]})], agent=None)
    pool.step()
    while not (pool.last_batches["queue"].request & (pool.last_batches["queue"].sim == 1)).any():
        groups = pool.last_batches
        pool.act({g: np.zeros(len(b), np.float32) for g, b in groups.items()})
        pool.step()
    queue = pool.last_batches["queue"]
    actions = np.zeros(len(queue), np.float32)
    actions[queue.sim == 1] = 7
    with pytest.raises(ValueError, match=r"^simulation 1: agent queue_sw0->h1_q1: action 7"):
        pool.act({"flow": np.zeros(len(pool.last_batch), np.float32), "queue": actions})
