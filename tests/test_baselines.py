"""Tests of the RL baselines (PPO, REINFORCE, Aurora): each learning core learns a simple
control task with fixed seeds and a small budget, so that a failure on congestion control is
the method's and not a bug; and each trains a few updates on the agent bridge without error."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
gym = pytest.importorskip("gymnasium")
pytest.importorskip("torch.utils.tensorboard")

from ccgym.agent_defaults import BRIDGE_REWARDS  # noqa: E402
from ccgym.agents import aurora, ppo, reinforce  # noqa: E402
from ccgym.runner import scenario_json  # noqa: E402
from ccgym.train.config import load_config, merge_config  # noqa: E402
from ccgym.train.gym_driver import evaluate_gym, train_gym  # noqa: E402
from ccgym.train.loop import seed_everything  # noqa: E402
from ccgym.train.networks import ActionSpec  # noqa: E402
from ccgym.train.rollout import AgentTable, scenario_entries  # noqa: E402
from ccgym.train.trajectories import (  # noqa: E402
    AgentTrajectories,
    PolicyOutput,
    Segment,
    gae,
)


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


class TrackingEnv(gym.Env):
    """A tiny 1-D rate-tracking task shaped like rate-based CC.

    The state is z = log(rate / target), observed; an action multiplies the rate (the ADPG
    multiplier map, or Aurora's with step ``alpha`` on an unbounded action) and z moves by
    the log of the multiplier plus a little noise; the reward is -z^2; 64 steps per episode.
    Starting at |z| <= 1.5, holding the rate scores about -50 to -200; steering to the target
    and holding it there scores about -1.5.
    """

    def __init__(self, mode: str = "multiplier", alpha: float = 0.2, horizon: int = 64) -> None:
        self.mode, self.alpha, self.horizon = mode, alpha, horizon
        self.observation_space = gym.spaces.Box(-5.0, 5.0, (1,), np.float32)
        hi = 1.0 if mode == "multiplier" else 1e6
        self.action_space = gym.spaces.Box(-hi, hi, (1,), np.float32)
        self.z, self.t = 0.0, 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.z, self.t = float(self.np_random.uniform(-1.5, 1.5)), 0
        return np.array([self.z], np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        a = float(np.asarray(action).reshape(-1)[0])
        if self.mode == "multiplier":
            a = min(max(a, -1.0), 1.0)
        m = 1 + self.alpha * a if a >= 0 else 1 / (1 - self.alpha * a)
        self.z = float(np.clip(self.z + math.log(m) + 0.02 * self.np_random.normal(), -5, 5))
        self.t += 1
        return np.array([self.z], np.float32), -(self.z**2), False, self.t >= self.horizon, {}


def _learns(learner: Any, env: Any, eval_env: Any, steps: int, episodes: int) -> tuple[float, ...]:
    before = evaluate_gym(learner, eval_env, episodes, seed=1000)
    t0 = time.perf_counter()
    returns = train_gym(learner, env, steps, seed=0)
    after = evaluate_gym(learner, eval_env, episodes, seed=1000)
    first, last = float(np.mean(returns[:10])), float(np.mean(returns[-10:]))
    print(
        f"deterministic return before {before:.1f} after {after:.1f}; training episodes: first 10 "
        f"{first:.1f}, last 10 {last:.1f}; {time.perf_counter() - t0:.1f} s"
    )
    return before, after, first, last


def _ppo_config(**ppo_overrides: Any) -> dict[str, Any]:
    # The CC settings of spec 7.2 (rollouts of 64, 4 per update, GAE off, no advantage
    # normalisation, 4 epochs x 4 minibatches, clip 0.2, gradient clip 0.5) with a larger step
    # size for a small budget.
    return merge_config(ppo.DEFAULT_CONFIG, {"ppo": ppo_overrides})


# ---------------------------------------------------------------- the learners learn


def test_ppo_gaussian_learns_tracking() -> None:
    seed_everything(0)
    learner = ppo.make_ppo(1, _ppo_config(lr=3e-3), ActionSpec("tanh"))
    before, after, first, last = _learns(learner, TrackingEnv(), TrackingEnv(), 8000, 10)
    assert after > -5.0 and after > before + 20
    assert last > first + 10


def test_ppo_discrete_learns_cartpole() -> None:
    seed_everything(0)
    learner = ppo.make_ppo(4, _ppo_config(lr=1e-3), ActionSpec("discrete", n=2))
    env, eval_env = gym.make("CartPole-v1"), gym.make("CartPole-v1")
    before, after, first, last = _learns(learner, env, eval_env, 12000, 5)
    assert after >= 150 and after >= before + 100
    assert last > 2 * first


def test_ppo_discrete_head_uses_the_six_multipliers() -> None:
    learner = ppo.make_ppo(6, merge_config(ppo.DEFAULT_CONFIG, {"agent": {"action": "discrete"}}))
    out = learner.act(np.zeros((256, 6), np.float32))
    assert set(np.unique(out.env_actions)) <= set(range(6))
    assert learner.model.actor.logits.out_features == 6


def test_reinforce_learns_cartpole() -> None:
    seed_everything(0)
    cfg = merge_config(
        reinforce.DEFAULT_CONFIG,
        # Whole episodes as segments (REINFORCE is Monte Carlo); 4 episodes per update.
        {"reinforce": {"lr": 1e-2, "rollout_length": 500, "rollouts_per_update": 4}},
    )
    learner = reinforce.make_reinforce(4, cfg, ActionSpec("discrete", n=2))
    env, eval_env = gym.make("CartPole-v1"), gym.make("CartPole-v1")
    before, after, first, last = _learns(learner, env, eval_env, 12000, 5)
    assert after >= 150 and after >= before + 100
    assert last > 2 * first


@pytest.mark.parametrize(
    ("baseline", "steps", "threshold"),
    # The learned baseline starts at V = 0 and Adam moves it by about lr per step, so with
    # returns of about -50 it needs more steps before it helps.
    [("mean", 8000, -6.0), ("value", 12000, -20.0)],
)
def test_reinforce_gaussian_learns_tracking(baseline: str, steps: int, threshold: float) -> None:
    seed_everything(0)
    cfg = merge_config(reinforce.DEFAULT_CONFIG, {"reinforce": {"lr": 3e-3, "baseline": baseline}})
    learner = reinforce.make_reinforce(1, cfg, ActionSpec("tanh"))
    before, after, first, last = _learns(learner, TrackingEnv(), TrackingEnv(), steps, 10)
    assert after > threshold and after > before + 20
    assert last > first + 10


def test_aurora_learner_learns_tracking() -> None:
    # Aurora's own learner settings (PPO1: tanh [32, 16] networks, state-independent log-std,
    # Adam 1e-3, GAE 0.95, standardised advantages, unbounded action) with batches of 512
    # instead of 8192 steps, on the tracking task with Aurora's action map.
    seed_everything(0)
    cfg = merge_config(aurora.DEFAULT_CONFIG, {"ppo": {"batch_steps": 512, "rollout_length": 64}})
    learner = aurora.make_aurora(1, cfg)
    env, eval_env = TrackingEnv("aurora", alpha=0.1), TrackingEnv("aurora", alpha=0.1)
    before, after, first, last = _learns(learner, env, eval_env, 8000, 10)
    assert after > -5.0 and after > before + 20
    assert last > first + 10


# ---------------------------------------------------------------- bookkeeping


def _out(n: int, value: float = 0.0) -> PolicyOutput:
    return PolicyOutput(
        env_actions=np.zeros(n, np.float32),
        raw=np.arange(n, dtype=np.float32),
        logp=np.zeros(n, np.float32),
        value=np.full(n, value, np.float32),
    )


def test_trajectories_pair_each_action_with_the_next_reward_of_the_same_agent() -> None:
    traj = AgentTrajectories(segment_length=3)
    f = np.zeros(2, bool)
    # Two agents interleaved; an entry's reward belongs to that agent's previous action.
    obs = lambda *v: np.array([[x] for x in v], np.float32)  # noqa: E731
    traj.record(["a", "b"], obs(0, 100), np.array([9.0, 9.0]), f, f, _out(2))  # first: ignored
    traj.record(["a"], obs(1), np.array([1.0]), f[:1], f[:1], _out(1))
    traj.record(["b", "a"], obs(101, 2), np.array([101.0, 2.0]), f, f, _out(2))
    traj.record(["a"], obs(3), np.array([3.0]), f[:1], f[:1], _out(1, value=7.0))
    # "a" made 3 transitions: a complete segment bootstrapped with V(obs 3) = 7.
    (seg,) = traj.take()
    assert [o[0] for o in seg.obs] == [0, 1, 2] and seg.rewards == [1.0, 2.0, 3.0]
    assert seg.bootstrap == 7.0 and not seg.terminal
    # "b" is truncated (bootstrapped), "a" is done (terminal, no bootstrap).
    traj.record(
        ["b", "a"],
        obs(102, 4),
        np.array([102.0, 4.0]),
        np.array([False, True]),
        np.array([True, False]),
        _out(2, value=5.0),
    )
    b, a = traj.take()
    assert b.rewards == [101.0, 102.0] and b.bootstrap == 5.0 and not b.terminal
    assert a.rewards == [4.0] and a.terminal and a.bootstrap == 0.0
    assert not traj.pending and not traj.open and traj.open_steps == 0


def test_flush_closes_open_segments_bootstrapped_with_the_pending_value() -> None:
    traj = AgentTrajectories(segment_length=64)
    f = np.zeros(2, bool)
    for t in range(3):
        traj.record(["a", "b"], np.full((2, 1), t, np.float32), np.ones(2), f, f, _out(2, t))
    assert traj.open_steps == 4 and not traj.complete
    traj.flush()
    segs = traj.take()
    assert [len(s) for s in segs] == [2, 2] and all(s.bootstrap == 2.0 for s in segs)
    assert traj.open_steps == 0 and set(traj.pending) == {"a", "b"}


def test_gae_with_lambda_one_is_the_bootstrapped_return_minus_the_value() -> None:
    seg = Segment(
        obs=[np.zeros(1)] * 3,
        actions=[0.0] * 3,
        logps=[0.0] * 3,
        values=[0.5, -1.0, 2.0],
        rewards=[1.0, 2.0, 3.0],
        bootstrap=10.0,
    )
    adv, ret = gae(seg, 0.9, 1.0)
    expect = [1 + 0.9 * 2 + 0.81 * 3 + 0.729 * 10, 2 + 0.9 * 3 + 0.81 * 10, 3 + 0.9 * 10]
    assert np.allclose(ret, expect)
    assert np.allclose(adv, np.array(expect) - seg.values)


def test_general_reward_is_computed_from_the_newest_row_and_hidden_from_the_policy() -> None:
    table = AgentTable(ppo.DEFAULT_CONFIG["agent"])
    assert table.sim_table["features"] == ["action", "cnp_ratio", "nack_ratio", "rtt_inflation"]
    assert table.sim_table["reward"] in BRIDGE_REWARDS and table.obs_dim == 6
    # rows: (action, cnp, nack, rtt_inflation), oldest first
    obs = np.array(
        [[1.0, 0.5, 0.0, 9.0, 1.2, 0.25, 0.0, 3.0], [1.0, 0.0, 0.0, 1.0, 0.8, 0.0, 0.1, 2.0]],
        np.float32,
    )
    assert np.array_equal(table.policy_obs(obs), obs[:, [0, 1, 2, 4, 5, 6]])
    r = table.rewards(obs, np.zeros(2, np.float32))
    assert np.allclose(r, [0.2 - 0.3 - 0.25, -0.2 - 0.2 - 0.0 - 1000.0])


# ---------------------------------------------------------------- the bridge

BUNDLED = {
    "ppo-gaussian": ppo,
    "ppo-discrete": ppo,
    "ppo-gaussian-adpg-reward": ppo,
    "reinforce-gaussian": reinforce,
    "reinforce-discrete": reinforce,
    "aurora-default": aurora,
}


@pytest.mark.parametrize("name", list(BUNDLED))
def test_bundled_configs_build_their_learner_and_scenarios(name: str) -> None:
    module = BUNDLED[name]
    cfg = load_config(name, module.DEFAULT_CONFIG)
    table = AgentTable(cfg["agent"])
    make = {
        "ppo": ppo.make_ppo,
        "reinforce": reinforce.make_reinforce,
        "aurora": aurora.make_aurora,
    }
    learner = make[module.__name__.rsplit(".", 1)[1]](table.obs_dim, cfg)
    out = learner.act(np.zeros((3, table.obs_dim), np.float32))
    assert out.env_actions.shape == (3,) and np.isfinite(out.logp).all()
    from ccgym import _sim

    scenarios = scenario_entries(merge_config(cfg, {"train": {"episode": "3ms"}}), table)
    assert len(scenarios) == len(cfg["scenario"])
    for i, s in enumerate(scenarios):
        sim = _sim.Simulation(scenario_json({**s.data, "seed": i}), s.base_dir)
        assert sim.obs_dim == table.sim_obs_dim == len(table.sim_table["features"]) * table.history
    if name.startswith(("ppo-gaussian", "aurora")) and not name.endswith("reward"):
        assert cfg == merge_config(module.DEFAULT_CONFIG, {})  # the file spells the defaults


def _bridge_config(algo_table: str, algo: dict[str, Any], **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "train": {"seed": 3, "updates": 3, "episode": "2ms", "checkpoint_every": 1},
        "scenario": [{"name": "adpg-m2o-2", "overrides": ['workload[0].start=["0us", "20us"]']}],
        algo_table: algo,
    }
    cfg.update(extra)
    return cfg


BRIDGE_CASES = {
    "ppo-gaussian": (ppo, _bridge_config("ppo", {"rollout_length": 16, "rollouts_per_update": 2})),
    "ppo-discrete": (
        ppo,
        _bridge_config(
            "ppo", {"rollout_length": 16, "rollouts_per_update": 2}, agent={"action": "discrete"}
        ),
    ),
    "reinforce": (
        reinforce,
        _bridge_config("reinforce", {"rollout_length": 16, "rollouts_per_update": 2}),
    ),
    "aurora": (aurora, _bridge_config("ppo", {"batch_steps": 256, "rollout_length": 64})),
}


@pytest.mark.parametrize("case", list(BRIDGE_CASES))
def test_trains_a_few_updates_on_the_bridge(case: str, tmp_path: Path) -> None:
    module, cfg = BRIDGE_CASES[case]
    result = module.train_from_config(cfg, tmp_path)
    assert result["updates"] == 3 and result["decisions"] > 0
    for k in ("policy_loss", "entropy", "loss", "reward_mean"):
        assert math.isfinite(result["stats"][k]), (k, result["stats"])
    assert (tmp_path / "checkpoint.pt").is_file() and len(list(tmp_path.glob("checkpoints/*"))) == 3
    assert list(tmp_path.glob("tb/events.out.tfevents.*"))
    history = [json.loads(x) for x in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert [h["update"] for h in history] == [1, 2, 3]
    policy = json.loads((tmp_path / "policy.json").read_text())
    assert policy["format"] == "ccgym-mlp"
    # The ``ccgym export`` plug-in gives the same policy from the checkpoint.
    exported = module.export_checkpoint(tmp_path / "checkpoint.pt")
    assert (
        exported["layers"] == policy["layers"]
        and exported["meta"]["agent"] == policy["meta"]["agent"]
    )
    # The exported policy runs natively in the simulator with its [agent] table.
    import ccgym
    from ccgym.scenario import load_scenario

    data, _ = load_scenario("adpg-m2o-2", cc="agent", overrides=["duration=3ms"])
    data["metrics"]["window"] = ["0ms", "3ms"]
    data["workload"][0].pop("stop", None)
    data["agent"] = {**policy["meta"]["agent"], "policy": str(tmp_path / "policy.json")}
    assert ccgym.run(data).summary["flows"]["count"] == 2


def test_resume_restores_model_optimiser_and_update_counter(tmp_path: Path) -> None:
    cfg = _bridge_config("ppo", {"rollout_length": 16, "rollouts_per_update": 2})
    cfg["train"]["updates"] = 2
    ppo.train_from_config(cfg, tmp_path)
    first = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert first["update"] == 2
    # Resuming at the target trains nothing: what is saved again is exactly what was loaded.
    ppo.train_from_config(cfg, tmp_path, resume=True)
    again = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    for k, v in first["model"].items():
        assert torch.equal(v, again["model"][k])
    assert again["optimizer"]["state"].keys() == first["optimizer"]["state"].keys()
    for i, st in first["optimizer"]["state"].items():
        assert torch.equal(st["exp_avg"], again["optimizer"]["state"][i]["exp_avg"])
    # Resuming with a larger target continues from the counter.
    cfg["train"]["updates"] = 4
    result = ppo.train_from_config(cfg, tmp_path, resume=True)
    assert result["updates"] == 4
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=False)["update"] == 4
    with pytest.raises(ValueError, match="checkpoint"):
        reinforce.train_from_config(cfg, tmp_path, resume=True)
    with pytest.raises(FileNotFoundError):
        ppo.train_from_config(cfg, tmp_path / "nothing", resume=True)


def test_resume_rebuilds_the_network_of_the_checkpoint(tmp_path: Path) -> None:
    """Resuming with only the keys to change (here the number of updates) continues the saved
    run: its config, so its network (the discrete head, not the defaults' Gaussian one) and its
    scenarios."""
    cfg = _bridge_config(
        "ppo", {"rollout_length": 16, "rollouts_per_update": 2}, agent={"action": "discrete"}
    )
    cfg["train"]["updates"] = 1
    ppo.train_from_config(cfg, tmp_path)
    result = ppo.train_from_config({"train": {"updates": 2}}, tmp_path, resume=True)
    assert result["updates"] == 2
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert "actor.logits.weight" in state["model"]
    assert state["config"]["agent"]["action"] == "discrete"
    assert state["config"]["scenario"] == cfg["scenario"]
    assert state["config"]["train"]["updates"] == 2
    # ccgym train ppo --out DIR --resume (no config): the checkpoint's config as it is
    assert ppo.train_from_config(None, tmp_path, resume=True)["updates"] == 2


NETWORK_CHANGES = {
    # the head's parameters differ
    "action": ({"agent": {"action": "multiplier"}}, 'agent.action = "discrete" .* "multiplier"'),
    "hidden": ({"network": {"hidden": [8]}}, r"network.hidden = \[32, 16\] .* \[8\]"),
    "history": ({"agent": {"history": 3}}, r"agent.history = 2 .* 3 "),
    # the same shapes, but the trained weights no longer fit the observation or the action
    "features": (
        {"agent": {"features": ["action", "cnp_ratio", "adpg"]}},
        r'agent.features = \["action", "cnp_ratio", "nack_ratio"\] .* "adpg"\]',
    ),
    "discrete": (
        {"agent": {"discrete": [0.5, 0.9, 1.0, 1.1, 1.5, 2.0]}},
        r"agent.discrete = \[0.8, .* \[0.5, ",
    ),
}


def test_resume_with_a_config_that_changes_the_network_names_the_keys(tmp_path: Path) -> None:
    """A config given on resume that changes the checkpoint's network (its architecture, its
    inputs or its action) is an error naming each responsible key with its value in the
    checkpoint's config and in the given one, not a PyTorch load error nor a silent run; the
    run folder is left as it was."""
    from ccgym import ScenarioError

    cfg = _bridge_config(
        "ppo", {"rollout_length": 16, "rollouts_per_update": 2}, agent={"action": "discrete"}
    )
    cfg["train"]["updates"] = 1
    ppo.train_from_config(cfg, tmp_path)
    before = {p: p.read_bytes() for p in (tmp_path / "checkpoint.pt", tmp_path / "config.json")}
    for change, expected in NETWORK_CHANGES.values():
        with pytest.raises(ScenarioError, match=expected) as err:
            ppo.train_from_config({**change, "train": {"updates": 2}}, tmp_path, resume=True)
        message = str(err.value)
        assert "in the checkpoint's config" in message and "in the config given" in message
        assert "train.updates" not in message  # only the keys that change the network
    assert {p: p.read_bytes() for p in before} == before
    # A change that keeps the network resumes: the reward, the scenarios, PPO's settings.
    result = ppo.train_from_config(
        {"train": {"updates": 2}, "agent": {"reward": "constrained"}}, tmp_path, resume=True
    )
    assert result["updates"] == 2


def test_resume_uses_the_settings_given_for_the_optimiser(tmp_path: Path) -> None:
    """The checkpoint's optimiser state continues, but a learning rate given on resume is the
    one used (loading the optimiser's state alone would bring back the checkpoint's)."""
    cfg = _bridge_config("ppo", {"rollout_length": 16, "rollouts_per_update": 2})
    cfg["train"]["updates"] = 1
    ppo.train_from_config(cfg, tmp_path)
    first = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert first["optimizer"]["param_groups"][0]["lr"] == 2.5e-4
    ppo.train_from_config({"train": {"updates": 2}, "ppo": {"lr": 1e-3}}, tmp_path, resume=True)
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert state["config"]["ppo"]["lr"] == 1e-3
    assert [g["lr"] for g in state["optimizer"]["param_groups"]] == [1e-3]
    assert state["optimizer"]["state"][0]["step"] > first["optimizer"]["state"][0]["step"]
