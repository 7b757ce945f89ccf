"""The agent bridge rejects what it cannot honour (issue 16, class 7).

Out-of-range or non-integer discrete actions, NaN and infinite actions, a second answer to the
same batch and actions for agents that do not exist used to be clamped or ignored without a
word. Each is now an error that names the agent and what is valid, and a rejected answer leaves
the batch waiting for a correct one. Small stars from the bundled ``adpg-m2o-2``.
"""

from __future__ import annotations

import numpy as np
import pytest

_sim = pytest.importorskip("ccgym._sim")

from ccgym.env import AgentPool  # noqa: E402
from ccgym.runner import scenario_json  # noqa: E402

SCENARIO = "adpg-m2o-2"
OVERRIDES = [
    "topology.hosts=3",
    "duration=1ms",
    "metrics.window=['0ms', '1ms']",
    "workload[0].stop='1ms'",
    "workload[0].start=['0us', '20us']",
]
DISCRETE = {
    "trigger": "interval",
    "interval": "20us",
    "policy_delay": "0s",
    "action": "discrete",
    "discrete": [0.5, 1.0, 2.0],
}


def first_requests(pool: AgentPool) -> np.ndarray:
    """Step ``pool`` to its first batch with a request; that batch's request mask."""
    while True:
        b = pool.step()
        if b.request.any():
            return b.request
        pool.act(np.zeros(len(b), np.float32))


@pytest.mark.parametrize("single_thread", [True, False])
def test_bad_discrete_actions_are_rejected_naming_the_flow_and_the_range(
    single_thread: bool,
) -> None:
    pool = AgentPool(
        [SCENARIO] * (1 if single_thread else 2),
        overrides=OVERRIDES,
        agent=DISCRETE,
        single_thread=single_thread,
    )
    req = first_requests(pool)
    i = int(np.flatnonzero(req)[-1])
    flow = int(pool.last_batch.flow[i])
    sim = int(pool.last_batch.sim[i])
    where = "" if single_thread else f"simulation {sim}: "
    for bad in (3.0, -1.0, 0.5):
        actions = np.ones(len(req), np.float32)
        actions[i] = bad
        with pytest.raises(ValueError) as e:
            pool.act(actions)
        assert str(e.value).startswith(f"{where}flow {flow}: action {bad:g} is not an index")
        assert "agent.discrete: give an integer from 0 to 2" in str(e.value)
    # Nothing was applied: the same batch takes a correct answer, once.
    pool.act(np.ones(len(req), np.float32))
    with pytest.raises(RuntimeError, match="already answered"):
        pool.act(np.ones(len(req), np.float32))
    pool.step()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_actions_are_rejected(bad: float) -> None:
    pool = AgentPool(SCENARIO, overrides=OVERRIDES)  # multiplier actions: clamped, but finite
    req = first_requests(pool)
    with pytest.raises(ValueError, match="give a finite action"):
        pool.act(np.where(req, bad, 0.0).astype(np.float32))
    pool.act(np.where(req, 5.0, 0.0).astype(np.float32))  # out of [-1, 1]: clamped


def test_the_native_simulation_takes_one_answer_per_batch() -> None:
    from ccgym.env.bridge import prepare_scenario

    data, base = prepare_scenario(SCENARIO, OVERRIDES, DISCRETE)
    sim = _sim.Simulation(scenario_json(data), str(base))
    with pytest.raises(ValueError, match=r"call agent_step\(\) first"):
        sim.agent_act(np.zeros(0, np.float32))
    while True:
        _, batch = sim.agent_step()
        n = len(batch["flow"])
        sim.agent_act(np.ones(n, np.float32))
        if n:
            break
    with pytest.raises(ValueError, match="already answered"):
        sim.agent_act(np.ones(n, np.float32))


def test_an_agent_pool_answer_before_any_step_is_an_error() -> None:
    pool = AgentPool(SCENARIO, overrides=OVERRIDES)
    with pytest.raises(RuntimeError, match=r"call step\(\) first"):
        pool.act(np.zeros(0, np.float32))


def test_pettingzoo_actions_for_unknown_agents_are_rejected() -> None:
    pytest.importorskip("pettingzoo")
    from ccgym.env import CcParallelEnv

    env = CcParallelEnv(SCENARIO, overrides=OVERRIDES, interval="20us")
    env.reset(seed=1)
    live = list(env.agents)
    actions = {a: np.array([0.1], np.float32) for a in live}
    for name in ("flow_7", "flow0", 3):
        with pytest.raises(ValueError, match=f"unknown agent\\(s\\) {name!r}"):
            env.step({**actions, name: np.array([0.1], np.float32)})
    env.step(actions)  # the rejected step changed nothing
