"""`ccgym train impala` end to end on RLlib (a local Ray, the sampling in the driver): the
training env, a short run, its run folder, resume, and the exports (docs/mvfst.md)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("ray.rllib")

from ccgym import ScenarioError  # noqa: E402
from ccgym._errors import ResumeConfigWarning  # noqa: E402
from ccgym.agents import impala  # noqa: E402
from test_impala import SMALL_AGENT, SMALL_LINK  # noqa: E402


def _config(steps: int) -> dict:
    return {
        "train": {
            "env_steps": steps,
            "env_runners": 0,  # sample in the driver: no actor to start in a test
            "envs_per_runner": 2,
            "min_time_s_per_iteration": 0,
            "checkpoint_every": 0,
        },
        "scenario": [
            {"label": "a", "name": SMALL_LINK},
            {"label": "b", "name": SMALL_LINK, "overrides": ["duration=500us"]},
        ],
        "agent": SMALL_AGENT,
        "network": {"hidden": [16, 16], "lstm": True},
        "impala": {"unroll": 20, "lr": 1e-3},
    }


def test_training_env_appends_the_clipped_reward_and_cycles_scenarios() -> None:
    cfg = impala.load_config(_config(100), impala.DEFAULT_CONFIG)
    env = impala.MvfstTrainingEnv({"scenarios": impala._training_scenarios(cfg)})
    assert env.observation_spaces["flow_0"].shape == (2 * 2 + 1,)
    labels = []
    for _ in range(3):
        obs, _ = env.reset()
        labels.append(env.label)
        assert obs["flow_0"][-1] == 0.0  # no reward before the first action
        obs, rewards, *_ = env.step({"flow_0": 4})
        assert obs["flow_0"][-1] == pytest.approx(np.clip(rewards["flow_0"], -1, 1))
    assert labels == ["a", "b", "a"]


def test_resume_warns_of_the_settings_it_changes(tmp_path) -> None:
    """``--resume`` with a config lists the settings that differ from the checkpoint's, as the
    other trainers do (here before the network change stops it, so no Ray is started)."""
    from ccgym.agents.impala_model import net_from_config
    from ccgym.train.loop import save_atomic

    cfg = impala.load_config(_config(200), impala.DEFAULT_CONFIG)
    width, actions = impala._spaces(cfg)
    net = net_from_config(width, actions, cfg["network"])
    save_atomic(
        tmp_path / "checkpoint.pt",
        {"algorithm": "impala", "update": 1, "decisions": 200, "episodes": 1, "wall_s": 1.0,
         "model": net.state_dict(), "optimizer": {}, "rng": {}, "config": cfg,
         "extra": {"input_dim": width, "num_actions": actions}, "obs_dim": width - 1},
    )  # fmt: skip
    change = {"train": {"env_steps": 400}, "network": {"hidden": [64, 64]}}
    with (
        pytest.warns(ResumeConfigWarning, match=r"train\.env_steps = 200 -> 400; network\.hidden"),
        pytest.raises(ScenarioError, match="changes the network"),
    ):
        impala.train_from_config(change, tmp_path, resume=True, progress=False)


@pytest.mark.xdist_group("ray")  # starts a local Ray instance (pyproject.toml)
def test_train_resume_and_export(tmp_path) -> None:
    """A short RLlib IMPALA run writes its run folder; resume continues its step count; the
    checkpoint exports with torch.export and to the native layout."""
    import torch

    out = tmp_path / "run"
    result = impala.train_from_config(_config(200), out, progress=False)
    assert result["env_steps"] >= 200
    history = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    trained = [h for h in history if "loss" in h]
    assert trained and all(np.isfinite(h["loss"]) for h in trained)
    assert all(0.0 < h["entropy"] <= np.log(5) + 1e-6 for h in trained)
    loaded = torch.export.load(result["exported_program"]).module()
    n = int(loaded.state_size)
    logits, value, h, c = loaded(torch.zeros(1, 5), torch.zeros(1, n), torch.zeros(1, n))
    assert logits.shape == (1, 5) and h.shape == (1, 17)
    net, ckpt = impala.load_net(result["checkpoint"])
    assert ckpt["config"]["agent"] == SMALL_AGENT
    policy = impala.export_checkpoint(result["checkpoint"])
    assert policy["action_outputs"] == 5 and policy["meta"]["agent"] == SMALL_AGENT
    # A resume that changes the network is refused before anything is written, with the key
    # named; the run then resumes as it was (its config.json was not replaced).
    saved = (out / "config.json").read_text()
    for change, key in (
        ({"network": {"hidden": [64, 64]}}, "network.hidden"),
        ({"agent": {"history": 3}}, "agent.history"),
    ):
        with (
            pytest.raises(ScenarioError, match=rf"changes the network .*{key} = ") as e,
            pytest.warns(ResumeConfigWarning, match=key),
        ):
            impala.train_from_config(change, out, resume=True, progress=False)
        assert "\n" not in str(e.value) and "size mismatch" not in str(e.value)
        assert (out / "config.json").read_text() == saved
    assert result["complete"] is True and "stopped" not in result
    # train.max_wall_s stops the resumed run after its first iteration, before env_steps:
    # the result and progress.json say so; the next resume goes on and is complete.
    with pytest.warns(ResumeConfigWarning, match=r"train\.env_steps = 200 -> 100000"):
        cut = impala.train_from_config(
            {"train": {"env_steps": 100_000, "max_wall_s": 1e-9}}, out, resume=True, progress=False
        )
    assert cut["complete"] is False and cut["stopped"] == "max_wall_s"
    assert cut["iterations"] == result["iterations"] + 1
    progress = json.loads((out / "progress.json").read_text())
    assert progress["complete"] is False and progress["stopped"] == "max_wall_s"
    with pytest.warns(ResumeConfigWarning, match=r"train\.env_steps = 100000 -> 400"):
        again = impala.train_from_config(
            {"train": {"env_steps": 400, "max_wall_s": 0}}, out, resume=True, progress=False
        )
    assert json.loads((out / "config.json").read_text())["train"]["env_steps"] == 400
    assert again["env_steps"] >= 400 and again["iterations"] > cut["iterations"]
    assert again["complete"] is True and "stopped" not in again
    progress = json.loads((out / "progress.json").read_text())
    assert progress["complete"] is True and "stopped" not in progress


@pytest.fixture(scope="module", autouse=True)
def _stop_ray():
    """Ray started by these tests stops with them (its processes would outlive the module)."""
    yield
    import ray

    ray.shutdown()


def test_a_local_ray_runs_the_env_runners_at_the_trainer_s_priority(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Ray nices its workers to 15 by default; the env runners carry the training's work.
    import ray

    calls: list[dict] = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    # setenv first, so that the teardown restores the variable's state before the test.
    monkeypatch.setenv("RAY_worker_niceness", "")
    monkeypatch.delenv("RAY_worker_niceness")
    impala._connect_ray(None, 2)
    assert calls and "address" not in calls[0]
    assert os.environ["RAY_worker_niceness"] == "0"
    monkeypatch.setenv("RAY_worker_niceness", "7")  # a user's choice stays
    impala._connect_ray(None, 2)
    assert os.environ["RAY_worker_niceness"] == "7"
