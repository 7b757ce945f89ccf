"""Off-the-shelf learners on ``CcFlowEnv``: Stable-Baselines3 and CleanRL-style scripts.

The environment as an SB3 or CleanRL user takes it: SB3's own ``check_env`` for every action
kind, PPO with SB3's default hyper-parameters learning a single flow through a bottleneck once
the reward is scaled with ``agent.reward_scale``, DQN, SAC and TD3 running, and the Gymnasium
wrapper chain of CleanRL's PPO scripts over ``gym.make``. The SB3 tests skip themselves when
``stable_baselines3`` is not installed (it is in the ``test`` extra).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ccgym._sim")
gym = pytest.importorskip("gymnasium")

from ccgym.env import CcFlowEnv  # noqa: E402

# One flow, 100 Gb/s NICs, a 50 Gb/s bottleneck between the two switches: the flow starts at
# 10 % of its line rate and has to find the bottleneck's rate. 200 decisions per episode.
SINGLE_FLOW = {
    "duration": "2ms",
    "topology": {"kind": "dumbbell", "left": 1, "right": 1, "bottleneck_rate": "50Gbps"},
    "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1}]}],
}
DECIDE = {"trigger": "interval", "interval": "10us", "policy_delay": "0s", "initial_rate": 0.1}
# Aurora's reward, 10 x packets/s - 1000 x latency[s] - 2000 x loss, is about 1e7 per step
# here: scaled by 1e-7 it is of order 1, what SB3's defaults (and most learners) expect.
AURORA_SCALE = 1e-7
AURORA = {**DECIDE, "reward": "aurora", "reward_scale": AURORA_SCALE}


def _one_thread() -> None:
    torch = pytest.importorskip("torch")
    # Small networks gain nothing from intra-op threads, which spin on the cores the
    # simulation and the other tests use.
    torch.set_num_threads(1)


def evaluate(model: Any, seed: int = 100) -> tuple[float, float]:
    """``(reward per step, bottleneck utilisation)`` of ``model``'s deterministic policy over
    one episode of :data:`SINGLE_FLOW` with seed ``seed``, the reward without the scale."""
    env = CcFlowEnv(SINGLE_FLOW, agent=AURORA)
    obs, _ = env.reset(seed=seed)
    rewards = []
    while True:
        action, _ = model.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, _ = env.step(action)
        rewards.append(reward / AURORA_SCALE)
        if terminated or truncated:
            break
    return float(np.mean(rewards)), float(env.pool.summary(0)["bottleneck"]["utilization"])


def _quiet_logger(model: Any) -> None:
    """Gives ``model`` a logger that writes nothing: without one, every ``learn`` makes an empty
    ``SB3-<date>`` folder in the system's temporary directory."""
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))


def train_ppo(seed: int, steps: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """Evaluations (see :func:`evaluate`) of SB3 PPO with its default hyper-parameters before
    and after ``steps`` steps of training on :data:`SINGLE_FLOW`."""
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", CcFlowEnv(SINGLE_FLOW, agent=AURORA), seed=seed, device="cpu")
    _quiet_logger(model)
    before = evaluate(model)
    model.learn(total_timesteps=steps)
    return before, evaluate(model)


def test_reward_scale_multiplies_every_reward() -> None:
    rewards = {}
    for scale in (1.0, AURORA_SCALE):
        env = CcFlowEnv(SINGLE_FLOW, agent={**DECIDE, "reward": "aurora", "reward_scale": scale})
        env.reset(seed=1)
        rewards[scale] = [env.step(np.array([a], np.float32))[1] for a in (1.0, 0.5, -1.0, 0.0)]
    assert abs(rewards[1.0][0]) > 1e6  # unscaled: packets per second
    np.testing.assert_allclose(
        np.array(rewards[AURORA_SCALE]), np.array(rewards[1.0]) * AURORA_SCALE, rtol=1e-5
    )


def test_reward_offset_is_added_before_the_scale() -> None:
    rewards = {}
    for offset, scale in ((0.0, 1.0), (12.0, 10.0)):
        agent = {**DECIDE, "reward": "log_utility", "reward_offset": offset, "reward_scale": scale}
        env = CcFlowEnv(SINGLE_FLOW, agent=agent)
        env.reset(seed=1)
        rewards[offset] = [env.step(np.array([a], np.float32))[1] for a in (1.0, 0.5, -1.0, 0.0)]
    np.testing.assert_allclose(
        np.array(rewards[12.0]), (np.array(rewards[0.0]) + 12.0) * 10.0, rtol=1e-5
    )
    with pytest.raises(ValueError, match="reward_offset"):
        CcFlowEnv(SINGLE_FLOW, agent={**DECIDE, "reward_offset": float("nan")}).reset(seed=1)


ACTIONS = ["multiplier", "aurora", "rate", "discrete"]


@pytest.mark.parametrize("action", ACTIONS)
def test_sb3_check_env_passes_for_every_action(action: str) -> None:
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_checker import check_env

    env = CcFlowEnv(SINGLE_FLOW, agent={**AURORA, "action": action})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    # SB3 only recommends a [-1, 1] Box for the aurora (+-1e6) and rate ([0, 1]) actions.
    messages = [str(w.message) for w in caught]
    assert [m for m in messages if "symmetric and normalized" not in m] == []


@pytest.mark.parametrize("algorithm", ["DQN", "SAC", "TD3"])
def test_sb3_off_policy_learners_run(algorithm: str) -> None:
    """DQN on the discrete action, SAC and TD3 on the continuous one: a few hundred steps with
    their default hyper-parameters (updates start after 200 steps to keep this short)."""
    sb3 = pytest.importorskip("stable_baselines3")
    _one_thread()
    action = "discrete" if algorithm == "DQN" else "multiplier"
    env = CcFlowEnv(SINGLE_FLOW, agent={**AURORA, "action": action})
    model = getattr(sb3, algorithm)("MlpPolicy", env, seed=0, device="cpu", learning_starts=200)
    _quiet_logger(model)
    model.learn(total_timesteps=300)
    assert model.num_timesteps == 300
    obs, _ = env.reset(seed=5)
    assert env.action_space.contains(model.predict(obs, deterministic=True)[0])


def test_sb3_ppo_learns_a_single_flow() -> None:
    """PPO as SB3 ships it, on one flow behind a 50 Gb/s bottleneck with the scaled Aurora
    reward: 8192 steps (4 rollouts) take the deterministic policy from about 20 % of the
    bottleneck (it keeps the starting rate, 10 Gb/s) to above 80 % of it. Training seeds 0-4
    gave 7.4-8.8e6 reward per step and 19-22 % untrained, 3.78-3.81e7 and 95-96 % trained."""
    pytest.importorskip("stable_baselines3")
    _one_thread()
    (reward_before, util_before), (reward_after, util_after) = train_ppo(seed=0, steps=8192)
    assert util_before < 0.3 and reward_before < 1.0e7
    assert util_after > 0.8 and reward_after > 3 * reward_before


def test_cleanrl_style_vector_env_and_wrappers() -> None:
    """The wrapper chain of CleanRL's ppo_continuous_action over ``gym.make`` in a
    ``SyncVectorEnv``: episodes end, restart and are recorded."""
    import ccgym.env.gym_env  # noqa: F401  (registers ccgym/CcFlow-v0)

    def make_env(i: int) -> Any:
        def thunk() -> Any:
            env = gym.make("ccgym/CcFlow-v0", scenario=SINGLE_FLOW, agent=AURORA, seed=10 * i)
            env = gym.wrappers.FlattenObservation(env)
            env = gym.wrappers.RecordEpisodeStatistics(env)
            env = gym.wrappers.ClipAction(env)
            env = gym.wrappers.NormalizeObservation(env)
            env = gym.wrappers.TransformObservation(
                env, lambda o: np.clip(o, -10, 10), env.observation_space
            )
            env = gym.wrappers.NormalizeReward(env, gamma=0.99)
            return gym.wrappers.TransformReward(env, lambda r: float(np.clip(r, -10, 10)))

        return thunk

    envs = gym.vector.SyncVectorEnv([make_env(i) for i in range(2)])
    obs, _ = envs.reset(seed=1)
    assert obs.shape == (2, 4)
    lengths = []
    for _ in range(450):
        obs, reward, terminated, truncated, infos = envs.step(envs.action_space.sample())
        assert np.isfinite(obs).all() and np.isfinite(reward).all()
        if "episode" in infos:
            lengths += list(infos["episode"]["l"][infos["_episode"]])
    envs.close()
    # 199 decisions of one interval each; the run's end asks for none (it could not act), and
    # the truncated entry closes the last interval.
    assert lengths and all(n == 199 for n in lengths)
