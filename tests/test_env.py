"""Tests of the environment adapters over the agent bridge (``ccgym.env``).

Every test runs real simulations of a few simulated milliseconds on small stars (2 or 4 senders
to one receiver at 100 Gb/s, from the bundled ``adpg-m2o-2``). Gymnasium and PettingZoo are
required (the ``rl`` extra); the RLlib test skips itself when Ray is not installed.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from typing import Any

import numpy as np
import pytest

_sim = pytest.importorskip("ccgym._sim")
gym = pytest.importorskip("gymnasium")

from ccgym.env import AgentPool, Batch, make_key, split_key  # noqa: E402
from ccgym.env.bridge import is_zero_duration  # noqa: E402

SCENARIO = "adpg-m2o-2"


def star(senders: int = 2, duration: str = "2ms", stop: str | None = None) -> list[str]:
    """Overrides turning adpg-m2o-2 into a short star with ``senders`` long flows."""
    return [
        f"topology.hosts={senders + 1}",
        f"duration={duration}",
        f"metrics.window=['0ms', '{duration}']",
        f"workload[0].stop='{stop or duration}'",
        "workload[0].start=['0us', '20us']",
    ]


INTERVAL = {"trigger": "interval", "interval": "20us", "policy_delay": "0s"}


def run_pool(pool: AgentPool, action: float = 0.0, max_batches: int = 100_000) -> list[Batch]:
    """Step ``pool`` until it is over, answering with ``action``; the batches."""
    out = []
    for _ in range(max_batches):
        if pool.all_over:
            break
        b = pool.step()
        out.append(b)
        pool.act(np.full(len(b), action, np.float32))
    return out


# ------------------------------------------------------------------------------------------
# AgentPool


def test_import_needs_no_optional_dependency() -> None:
    code = (
        "import sys, ccgym.env\n"
        "bad = [m for m in ('gymnasium', 'pettingzoo', 'ray', 'torch') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_keys_round_trip() -> None:
    sim = np.array([0, 1, 4095], np.uint32)
    ep = np.array([0, 7, (1 << 20) - 1], np.uint32)
    flow = np.array([0, 8191, (1 << 32) - 1], np.uint64).astype(np.uint32)
    key = make_key(sim, ep, flow)
    assert key.dtype == np.uint64 and len(np.unique(key)) == 3
    s, e, f = split_key(key)
    assert (s == sim).all() and (e == ep).all() and (f == flow).all()
    assert is_zero_duration("0s") and is_zero_duration(0) and not is_zero_duration("1us")


def test_pool_batch_arrays_and_counters() -> None:
    pool = AgentPool(SCENARIO, overrides=star(4, "1ms"), agent=INTERVAL, auto_reset=False)
    assert pool.obs_dim == 4  # default features ["action", "adpg"] x history 2
    assert pool.num_flows() == 4
    batches = run_pool(pool, action=-0.2)
    first = batches[0]
    assert first.sim.dtype == np.uint32 and first.flow.dtype == np.uint32
    assert first.key.dtype == np.uint64 and first.obs.dtype == np.float32
    assert first.obs.shape == (len(first), 4) and first.time_s.dtype == np.float64
    assert first.done.dtype == bool and first.truncated.dtype == bool
    for b in batches:
        assert len(np.unique(b.key)) == len(b)  # every agent at most once per batch
    requests = sum(int(b.request.sum()) for b in batches)
    assert pool.decisions == requests > 0
    assert pool.batches == len(batches) and pool.episodes == 1
    assert pool.simulated_s == pytest.approx(1e-3)
    # Interval trigger, blocking: the requests of one batch share one grid instant.
    for b in batches:
        t = b.time_s[b.request]
        if len(t):
            assert np.ptp(t) == 0 and round(t[0] / 20e-6, 6) == round(t[0] / 20e-6)
    last = batches[-1]
    assert last.truncated.all() and sorted(last.flow.tolist()) == [0, 1, 2, 3]


def test_policy_delay_gathers_requests_of_several_flows() -> None:
    agent = {"trigger": "acks", "every_acks": 4}
    sizes = {}
    for delay in ("0s", "5us"):
        pool = AgentPool(SCENARIO, overrides=star(4, "1ms"), agent={**agent, "policy_delay": delay})
        pool.auto_reset = False
        batches = run_pool(pool)
        spread = [np.ptp(b.time_s[b.request]) for b in batches if b.request.sum() > 1]
        sizes[delay] = (max(int(b.request.sum()) for b in batches), spread)
    # Blocking: one instant per batch. Delayed: requests over up to 5 us in one batch.
    assert all(s == 0 for s in sizes["0s"][1])
    assert sizes["5us"][0] >= 3
    assert max(sizes["5us"][1]) > 0 and max(sizes["5us"][1]) < 5e-6


def test_two_simulations_in_one_pool() -> None:
    pool = AgentPool(
        [SCENARIO, SCENARIO],
        seeds=[[1], [2]],
        overrides=star(2, "1ms"),
        agent={"policy_delay": "2us", "trigger": "acks", "every_acks": 8},
        auto_reset=False,
    )
    assert len(pool) == 2
    both = 0
    for b in run_pool(pool):
        both += len(np.unique(b.sim)) == 2
        assert len(np.unique(b.key)) == len(b)
    assert both > 0
    assert pool.over.all() and pool.episodes == 2
    assert pool.summary(1)["seed"] == 2


def test_a_pooled_simulation_runs_as_it_does_alone() -> None:
    # The pool steps its simulations in parallel or one after the other, as the last step's
    # work suggests; neither may change what a simulation does.
    agent = {"policy_delay": "2us", "trigger": "acks", "every_acks": 4}

    def per_sim(seeds: list[int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        pool = AgentPool(
            [SCENARIO] * len(seeds),
            seeds=[[s] for s in seeds],
            overrides=star(4, "1ms"),
            agent=agent,
            auto_reset=False,
        )
        rows: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {s: [] for s in seeds}
        while not pool.all_over:
            b = pool.step()
            for i, s in enumerate(seeds):
                rows[s].append((b.time_s[b.sim == i], b.obs[b.sim == i]))
            # Each row's action depends on that row alone, so it is the same in any batch.
            pool.act(np.tanh(b.obs.sum(axis=1) * 0.3 - 0.1).astype(np.float32))
        return {
            s: (np.concatenate([t for t, _ in r]), np.concatenate([o for _, o in r]))
            for s, r in rows.items()
        }

    pooled = per_sim([1, 2, 3])
    for seed in (1, 2, 3):
        alone = per_sim([seed])[seed]
        assert len(alone[0]) > 50
        assert np.array_equal(pooled[seed][0], alone[0])
        assert np.array_equal(pooled[seed][1], alone[1])


def test_pool_auto_reset_and_determinism() -> None:
    def trajectory() -> tuple[AgentPool, list[Batch]]:
        pool = AgentPool(SCENARIO, seeds=[5, 6], overrides=star(2, "0.5ms"), agent=INTERVAL)
        out = []
        while pool.episodes < 3:
            b = pool.step()
            out.append(b)
            pool.act(np.linspace(-1, 1, len(b)))
        return pool, out

    pool, batches = trajectory()
    episodes = np.concatenate([b.episode for b in batches])
    assert episodes.min() == 0 and episodes.max() >= 2
    assert np.all(np.diff(episodes.astype(int)) >= 0)  # episodes follow each other
    # Each episode ends with its truncations; the next one's keys differ.
    for e in range(2):
        ends = np.concatenate([b.truncated[b.episode == e] for b in batches])
        assert ends[-2:].all()
    keys0 = {int(k) for b in batches for k in b.key[b.episode == 0]}
    keys1 = {int(k) for b in batches for k in b.key[b.episode == 1]}
    assert keys0 and keys1 and not keys0 & keys1
    assert pool.seed == [5]  # episode 2 cycles back to the first seed
    assert pool.simulated_s >= 3 * 0.5e-3
    _, again = trajectory()
    assert len(again) == len(batches)
    for a, b in zip(again, batches, strict=True):
        assert np.array_equal(a.key, b.key) and np.array_equal(a.obs, b.obs)


def test_pool_seed_lists_and_explicit_reset() -> None:
    pool = AgentPool(
        SCENARIO, seeds=[[4, 5]], overrides=star(2, "0.3ms"), agent=INTERVAL, repeat_seeds=False
    )
    batches = run_pool(pool)
    assert pool.all_over and pool.seed == [5] and pool.episodes == 2
    assert {int(e) for b in batches for e in b.episode} == {0, 1}
    assert len(pool.step()) == 0  # the list is used up: no third run
    pool.reset(0, seed=9)  # an explicit new run
    b = pool.step()
    assert pool.seed == [9] and (b.episode == 2).all() and b.request.all()
    pool.reset(0, seed=10)  # mid-episode: the open batch is answered first
    b = pool.step()
    assert pool.seed == [10] and (b.episode == 3).all()


def test_prepared_scenarios_seed_function_and_eager_restart() -> None:
    """The trainers' use: scenarios prepared beforehand, seeds drawn as episodes start, and
    the next episode started right after the batch in which one ended (with its summary)."""
    from ccgym.env.bridge import PreparedScenario, prepare_scenario

    data, base = prepare_scenario(SCENARIO, star(2, "0.3ms"), INTERVAL)
    data["name"] = "prepared"
    calls: list[tuple[int, int]] = []

    def seed(sim: int, episode: int) -> int:
        calls.append((sim, episode))
        return 100 + 10 * sim + episode

    pool = AgentPool(
        [PreparedScenario(data, base), PreparedScenario(data, base)],
        seeds=seed,
        overrides=["topology.hosts=9"],  # not applied: a prepared scenario is used as is
        auto_reset=False,
    )
    assert calls == [(0, 0), (1, 0)] and pool.seed == [100, 110]
    ended = []
    while len(ended) < 4:
        b = pool.step()
        pool.act(np.zeros(len(b), np.float32))
        for end in pool.start_next_episodes():
            ended.append(end)
            # restarted at once: fresh, not over, next episode number, next seed drawn
            assert not pool.over[end.sim] and pool.episode[end.sim] == end.episode + 1
    assert [(e.sim, e.episode) for e in ended] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert [e.summary["seed"] for e in ended] == [100, 110, 101, 111]
    assert all(e.summary["flows"]["count"] == 2 for e in ended)  # 2 senders, not 8
    assert calls == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]  # once per episode
    assert pool.summary(0)["scenario"] == "prepared"


# ------------------------------------------------------------------------------------------
# Gymnasium Env


def test_gym_env_passes_check_env() -> None:
    from gymnasium.utils.env_checker import check_env

    from ccgym.env import CcFlowEnv

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(infinity|spec).*")
        env = CcFlowEnv(SCENARIO, overrides=star(2), agent={"policy_delay": "1us"})
        assert env.action_space == gym.spaces.Box(-1, 1, (1,), np.float32)
        check_env(env, skip_render_check=True)
        discrete = CcFlowEnv(SCENARIO, overrides=star(2), agent={**INTERVAL, "action": "discrete"})
        assert discrete.action_space == gym.spaces.Discrete(6)
        check_env(discrete, skip_render_check=True)


def test_gym_env_episode() -> None:
    from ccgym.env import CcFlowEnv

    seen: list[np.ndarray] = []

    def others(obs: np.ndarray, flow: np.ndarray) -> np.ndarray:
        seen.append(flow.copy())
        return np.full(len(obs), -1.0, np.float32)

    env = CcFlowEnv(
        SCENARIO,
        overrides=star(4, "1ms"),
        agent={**INTERVAL, "features": ["rate", "rtt_inflation"], "history": 3},
        flow=2,
        others=others,
    )
    assert env.observation_space.shape == (6,)
    obs, info = env.reset(seed=3)
    assert obs.shape == (6,) and obs.dtype == np.float32 and info["flow"] == 2
    steps, ret = 0, 0.0
    while True:
        obs, reward, terminated, truncated, info = env.step(np.array([0.5], np.float32))
        steps += 1
        ret += reward
        if terminated or truncated:
            break
    assert truncated and not terminated and info["time_s"] == pytest.approx(1e-3)
    assert steps >= 40 and np.isfinite(ret)
    flows = np.concatenate(seen)
    assert 2 not in flows and set(flows.tolist()) == {0, 1, 3}
    with pytest.raises(RuntimeError):
        env.step(np.zeros(1, np.float32))
    env2 = CcFlowEnv(SCENARIO, overrides=star(4, "1ms", stop="0.5ms"), agent=INTERVAL, flow=1)
    env2.reset()
    while True:
        *_, terminated, truncated, _ = env2.step(env2.action_space.sample())
        if terminated or truncated:
            break
    assert terminated  # the flow stopped at 0.5 ms and finished


def test_gym_env_one_agent_among_classic_flows() -> None:
    from gymnasium.utils.env_checker import check_env

    from ccgym.env import CcFlowEnv

    scenario = {
        "name": "mixed",
        "duration": "1ms",
        "topology": {"kind": "star", "hosts": 4, "link_rate": "100Gbps"},
        "cc": {"algorithm": "dcqcn"},
        "workload": [
            {
                "kind": "flows",
                "flows": [
                    {"src": 1, "dst": 0, "cc": {"algorithm": "agent"}},
                    {"src": 2, "dst": 0},
                    {"src": 3, "dst": 0},
                ],
            }
        ],
    }

    def others(obs: np.ndarray, flow: np.ndarray) -> np.ndarray:
        raise AssertionError("flows 1 and 2 run DCQCN, not the bridge")

    env = CcFlowEnv(scenario, cc=None, agent=INTERVAL, others=others)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*infinity.*")
        check_env(env, skip_render_check=True)
    env.reset(seed=1)
    steps = 0
    while True:
        *_, terminated, truncated, info = env.step(np.array([0.2], np.float32))
        steps += 1
        if terminated or truncated:
            break
    # Decisions at 20, 40, ..., 980 us, and the truncated entry closes 980-1000 us: 49 steps of
    # 20 us each (no decision at the end itself, where it could not act).
    assert truncated and steps == 49
    assert env.pool.num_flows() == 3


def test_gym_env_spaces_follow_agent_config() -> None:
    from ccgym.env import CcFlowEnv

    rate = CcFlowEnv(SCENARIO, overrides=star(2, "0.5ms"), agent={**INTERVAL, "action": "rate"})
    assert rate.action_space == gym.spaces.Box(0, 1, (1,), np.float32)
    aurora = CcFlowEnv(SCENARIO, overrides=star(2, "0.5ms"), agent={"action": "aurora"})
    assert aurora.action_space.high[0] == 1e6
    with pytest.raises(RuntimeError, match="no decision"):
        CcFlowEnv(SCENARIO, overrides=star(2, "0.5ms"), agent=INTERVAL, flow=7).reset()


# ------------------------------------------------------------------------------------------
# Vector env


def test_vector_env_shapes_autoreset_determinism() -> None:
    from ccgym.env import CcFlowVectorEnv

    def make() -> Any:
        return CcFlowVectorEnv(
            SCENARIO, overrides=star(4, "0.4ms"), agent={"trigger": "acks", "every_acks": 8}
        )

    env = make()
    assert env.num_envs == 4
    assert env.observation_space.shape == (4, 4) and env.action_space.shape == (4, 1)
    obs, info = env.reset(seed=11)
    assert obs.dtype == np.float32 and env.observation_space.contains(obs)
    assert info["requested"].dtype == bool and info["requested"].any()
    rng = np.random.default_rng(0)
    log: list[tuple[np.ndarray, ...]] = []
    episodes_over = 0
    saw_reset_step = False
    for _ in range(3000):
        was_over = episodes_over
        obs, rew, term, trunc, info = env.step(rng.uniform(-1, 1, (4, 1)).astype(np.float32))
        assert obs.shape == (4, 4) and rew.shape == (4,) and rew.dtype == np.float64
        assert term.dtype == bool and trunc.dtype == bool
        # Slots without an entry: reward 0, no end.
        idle = np.isnan(info["time_s"])
        assert (rew[idle] == 0).all() and not (term[idle] | trunc[idle]).any()
        log.append((obs, rew, term, trunc, info["requested"]))
        if info["episode_over"]:
            episodes_over += 1
            assert (trunc | term).any()
        elif was_over and not saw_reset_step:
            saw_reset_step = True  # the autoreset step: a new run, nothing ended
            assert info["seed"] == 12 and not (term | trunc).any()
        if episodes_over == 2:
            break
    assert episodes_over == 2 and saw_reset_step
    # Same seed and actions: the same trajectory.
    env2 = make()
    env2.reset(seed=11)
    rng = np.random.default_rng(0)
    for obs, rew, term, trunc, req in log:
        o, r, te, tr, inf = env2.step(rng.uniform(-1, 1, (4, 1)).astype(np.float32))
        assert np.array_equal(o, obs) and np.array_equal(r, rew)
        assert np.array_equal(te, term) and np.array_equal(tr, trunc)
        assert np.array_equal(inf["requested"], req)


# ------------------------------------------------------------------------------------------
# PettingZoo


def test_pettingzoo_parallel_api() -> None:
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_api_test

    from ccgym.env import CcParallelEnv

    env = CcParallelEnv(SCENARIO, overrides=star(4, "1ms", stop="0.6ms"), interval="20us")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the test's own warnings mean broken conventions
        parallel_api_test(env, num_cycles=1000)
    obs, infos = env.reset(seed=2)
    assert set(obs) == set(env.agents) and env.agents
    appeared, finished, terminated = set(env.agents), set(), set()
    while env.agents:
        times = {infos[a]["time_s"] for a in env.agents}
        assert len(times) == 1  # all live agents decide at one grid instant
        live = list(env.agents)
        obs, rew, term, trunc, infos = env.step({a: np.array([0.1], np.float32) for a in live})
        finished |= {a for a in term if term[a] or trunc[a]}
        terminated |= {a for a in term if term[a]}
        appeared |= set(env.agents)
    assert appeared == finished == set(env.possible_agents)
    assert terminated == finished  # the flows stopped at 0.6 ms and finished before the end
    with pytest.raises(ValueError, match="policy_delay"):
        CcParallelEnv(SCENARIO, overrides=star(2), agent={"policy_delay": "1us"})


# ------------------------------------------------------------------------------------------
# RLlib


def test_rllib_multi_agent_env() -> None:
    pytest.importorskip("ray.rllib")
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    from ccgym.env import CcRllibEnv

    config = {
        "scenario": SCENARIO,
        "overrides": star(2, "1ms", stop="0.7ms"),
        "agent": {"trigger": "acks", "every_acks": 8, "policy_delay": "2us"},
    }
    env = CcRllibEnv(config)
    assert isinstance(env, MultiAgentEnv)
    check_multiagent_environments(env)
    obs, _ = env.reset(seed=1)
    counts: dict[str, int] = {}
    ended: set[str] = set()
    for _ in range(20_000):
        actions = {a: env.action_spaces[a].sample() for a in obs if a not in ended}
        obs, rew, term, trunc, _ = env.step(actions)
        assert set(obs) == set(rew) == set(term) - {"__all__"}
        for a in obs:
            counts[a] = counts.get(a, 0) + 1
            if term[a] or trunc[a]:
                ended.add(a)
        if term["__all__"] or trunc["__all__"]:
            break
    assert term["__all__"] and not trunc["__all__"]  # both flows finished before the end
    assert ended == {"flow_0", "flow_1"} and min(counts.values()) > 10
