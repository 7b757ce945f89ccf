"""``ccgym train ddqn`` (ccgym.acc.training): offline training learns, resumes exactly, exports
a native Q-network; the online phase keeps learning within its bounds.

The scenario is test_ddqn's: a 3-to-1 DCTCP incast on a 25 Gb/s star whose receiver port is
one queue agent choosing among ACC's 35 templates every 20 us (2 ms episodes, 99 decisions).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

pytest.importorskip("ccgym._sim")

from ccgym import policies  # noqa: E402
from ccgym.acc.templates import GRID  # noqa: E402
from ccgym.acc.training import (  # noqa: E402
    kept_path,
    policy_learner,
    run_policy,
    train,
)
from ccgym.agents.ddqn import export_checkpoint, run_queue_episode  # noqa: E402
from ccgym.runner import run  # noqa: E402
from ccgym.train.loop import read_checkpoint  # noqa: E402

torch.set_num_threads(1)


def incast() -> dict[str, Any]:
    return {
        "name": "acc-train-incast",
        "duration": "2ms",
        "topology": {"kind": "star", "hosts": 4, "link_rate": "25Gbps", "link_delay": "1us"},
        "switch": {"ecn": {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}},
        "cc": {"algorithm": "dctcp"},
        "metrics": {"size_buckets": ["100KB"]},
        "workload": [{"kind": "incast", "senders": [1, 2, 3], "receiver": 0, "size": "100MB"}],
    }


def config(episodes: int, seed: int = 1) -> dict[str, Any]:
    return {
        "train": {
            "seed": seed,
            "episodes": episodes,
            "duration": "2ms",
            "warmup": "0ms",
            "checkpoint_every": 2,
        },
        "ddqn": {
            "batch_size": 64,
            "learning_starts": 64,
            "target_every": 100,
            "eps_decay_steps": 400,
        },
        "agent": {"queues": ["sw0->h0"], "queue_interval": "20us"},
        "scenarios": [{"scenario": incast()}],
    }


def rewards(out: Path) -> list[float]:
    lines = (out / "history.jsonl").read_text().splitlines()
    return [json.loads(x)["mean_reward"] for x in lines]


def test_training_learns_resumes_exactly_and_exports_the_q_network(tmp_path: Path) -> None:
    full = tmp_path / "full"
    result = train(config(6), full, progress=False)
    curve = rewards(full)
    assert result["episodes"] == len(curve) == 6
    # The reward rises: the last two episodes (epsilon 0.05) against the first (mostly random);
    # test_ddqn measured rises of 0.5-0.8 on this incast.
    assert np.mean(curve[-2:]) > curve[0] + 0.4, np.round(curve, 3)

    # Interrupted after 4 episodes and resumed: the same episodes and weights as in one go.
    part = tmp_path / "part"
    train(config(4), part, progress=False)
    train(config(6), part, resume=True, progress=False)
    assert rewards(part) == curve
    a, b = read_checkpoint(full / "checkpoint.pt"), read_checkpoint(part / "checkpoint.pt")
    for name, tensor in a["model"]["q"].items():
        assert torch.equal(tensor, b["model"]["q"][name]), name

    # The policy file: ccgym-mlp, no output activation, argmax = the learner's greedy choice.
    pol = policies.load_policy(full / "policy.json")
    assert pol["output"] == "none" and pol["meta"]["algorithm"] == "ddqn"
    assert pol["meta"]["agent"]["queue_interval"] == "20us"
    assert len(pol["meta"]["agent"]["ecn_profiles"]) == len(GRID)
    learner = policy_learner(pol)
    obs = np.random.default_rng(0).random((50, learner.obs_dim), np.float32)
    greedy = np.argmax(policies.forward(pol, obs), axis=1)
    np.testing.assert_array_equal(greedy, learner.greedy(obs))


def test_keep_checkpoints_keeps_every_periodic_checkpoint(tmp_path: Path) -> None:
    # Episodes 2, 4 (periodic) and 5 (the end) each keep their own file, holding that episode's
    # weights: checkpoint.pt moves on, the kept ones stay.
    cfg = config(5)
    cfg["train"]["keep_checkpoints"] = True
    out = tmp_path / "keep"
    train(cfg, out, progress=False)
    kept = sorted((out / "checkpoints").iterdir())
    assert kept == [kept_path(out, e) for e in (2, 4, 5)]
    steps = [read_checkpoint(k)["update"] for k in kept]
    assert [read_checkpoint(k)["episodes"] for k in kept] == [2, 4, 5]
    assert steps == sorted(steps) and len(set(steps)) == 3

    def weights(path: Path) -> list[torch.Tensor]:
        return list(read_checkpoint(path)["model"]["q"].values())

    last, early = weights(out / "checkpoint.pt"), weights(kept[0])
    assert all(torch.equal(x, y) for x, y in zip(last, weights(kept[2]), strict=True))
    assert not all(torch.equal(x, y) for x, y in zip(last, early, strict=True))
    # A kept checkpoint exports like checkpoint.pt (ccgym export).
    assert export_checkpoint(kept[0])["meta"]["episodes"] == 2
    # Off (the default): no folder.
    train(config(2), tmp_path / "plain", progress=False)
    assert not (tmp_path / "plain" / "checkpoints").exists()


def test_export_calibrates_a_queue_policy_on_queue_observations(tmp_path: Path) -> None:
    """``ccgym export --calibrate`` on a ddqn checkpoint records the queue agents' observations
    (7 x queue_history wide), not flow observations, and the int8 policy then runs natively."""
    from ccgym.cli import main
    from ccgym.scenario import load_scenario

    out = tmp_path / "run"
    train(config(1), out, progress=False)
    pol = export_checkpoint(out / "checkpoint.pt")
    obs = policies.record_observations(pol, [incast()])
    assert obs.shape[1] == policies.policy_inputs(pol) and len(obs) > 50
    scen = tmp_path / "incast.toml"  # incast() as a file
    scen.write_text(
        'name = "acc-train-incast"\nduration = "2ms"\ncc = { algorithm = "dctcp" }\n'
        '[topology]\nkind = "star"\nhosts = 4\nlink_rate = "25Gbps"\nlink_delay = "1us"\n'
        '[switch.ecn]\nkmin = "5KB"\nkmax = "200KB"\npmax = 0.01\n'
        '[[workload]]\nkind = "incast"\nsenders = [1, 2, 3]\nreceiver = 0\nsize = "100MB"\n'
    )
    policy_file = tmp_path / "q.json"
    code = main(
        ["export", str(out / "checkpoint.pt"), "--out", str(policy_file)]
        + ["--calibrate", str(scen), "--calibrate-set", "duration=1ms"]
    )
    assert code == 0
    calibrated = policies.load_policy(policy_file)
    assert calibrated["meta"]["int8_calibration"]["observations"] > 0
    data, _ = load_scenario(incast())
    runs = {}
    for precision in ("float32", "int8"):
        agent = {"queues": ["sw0->h0"], "precision": precision}
        result = run(policies.use_queue_policy(data, policy_file, agent=agent))
        runs[precision] = result.summary["bottleneck"]["utilization"]
    assert runs["int8"] == pytest.approx(runs["float32"], abs=0.05)


def test_train_refuses_a_run_folder_holding_another_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --resume, a non-empty --out is refused in one line (exit 2) naming it, so that
    another run's history and checkpoints are never mixed with the new ones; --force clears
    it first; an empty folder is fine."""
    from ccgym.cli import main

    cfg = tmp_path / "tiny.json"
    cfg.write_text(json.dumps(config(1)))
    out = tmp_path / "run"
    stale = out / "checkpoints" / "ckpt-ep0099.pt"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old run")
    (out / "history.jsonl").write_text('{"episode": 1}\n')
    argv = ["train", "ddqn", "--config", str(cfg), "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: ccgym train: the run folder {out} is not empty")
    assert "--resume" in err and "--out" in err and "\n" not in err
    assert stale.is_file()  # untouched
    assert main([*argv, "--resume", "--force"]) == 2
    capsys.readouterr()
    assert main([*argv, "--force"]) == 0
    assert not stale.exists()
    assert len((out / "history.jsonl").read_text().splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["train", "ddqn", "--config", str(cfg), "--out", str(empty)]) == 0


def test_online_phase_keeps_learning_within_its_bounds(tmp_path: Path) -> None:
    out = tmp_path / "run"
    train(config(3, seed=2), out, progress=False)
    policy = out / "policy.json"
    online_config = {"ddqn": {"batch_size": 32}, "online": {"learning_starts": 32}}
    online = policy_learner(policy, online_config, online=True)
    assert online.epsilon() <= 0.01
    assert online.optimizer.param_groups[0]["lr"] < 1e-3
    before = [p.detach().clone() for p in online.q.parameters()]
    run, learner = run_policy(
        policy,
        incast(),
        online=True,
        config=online_config,
        queues=["sw0->h0"],
    )
    assert learner.learner_steps > 0
    assert learner.epsilon() <= 0.01
    moved = [p for p in learner.q.parameters()]
    assert any(not torch.equal(x, y) for x, y in zip(before, moved, strict=True))
    assert run.metrics["decisions"] == 99
    # Offline-only (greedy): the weights stay as loaded.
    run, frozen = run_policy(policy, incast(), queues=["sw0->h0"])
    assert frozen.learner_steps == 0
    for x, y in zip(before, frozen.q.parameters(), strict=True):
        assert torch.equal(x, y)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"online": {"epsilon": 0.05}}, "online.epsilon"),
        ({"online": {"lr": 0.01}}, "online.lr"),
        ({"train": {"episodes": 0}}, "train.episodes"),
        ({"ddqn": {"learning_rate": 0.1}}, "ddqn"),
        ({"scenarios": []}, "scenarios"),
        ({"train": {"keep_checkpoints": "yes"}}, "train.keep_checkpoints"),
    ],
)
def test_bad_configs_name_the_key(change: dict[str, Any], field: str, tmp_path: Path) -> None:
    cfg = config(1)
    for k, v in change.items():
        cfg[k] = {**cfg.get(k, {}), **v} if isinstance(v, dict) else v
    with pytest.raises(ValueError, match=field):
        train(cfg, tmp_path / "bad", progress=False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[train]\nepisdoes = 1\n",
            "unknown key in [train]: 'episdoes' (did you mean 'episodes'?)",
        ),
        ("[trian]\nepisodes = 1\n", "unknown section 'trian' (did you mean 'train'?)"),
        ("[onlin]\nlr = 1e-5\n", "unknown section 'onlin' (did you mean 'online'?)"),
        ("[ddqn]\nlearning_rat = 0.1\n", "unknown keys (did you mean 'learning_starts'?)"),
    ],
)
def test_unknown_config_sections_and_keys_are_refused(
    text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every trainer's config is strict (one line naming the file and the key, and the closest
    known one), not only [ddqn]: a typo would otherwise silently train with the default."""
    from ccgym.cli import main

    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    for trainer in ("ddqn", "ppo") if "ddqn" not in text else ("ddqn",):
        if trainer == "ppo" and "onlin" in text:
            continue
        code = main(["train", trainer, "--config", str(cfg), "--out", str(tmp_path / trainer)])
        err = capsys.readouterr().err.strip()
        assert code != 0 and "\n" not in err, err
        if trainer == "ddqn":
            assert message in err and (str(cfg) in err or "ddqn config" in err), err
        else:
            assert str(cfg) in err and "did you mean" in err, err
    assert not (tmp_path / "ddqn" / "history.jsonl").exists()


def test_resume_warns_of_changed_settings_and_names_a_network_change(tmp_path: Path) -> None:
    """--resume with a config: a warning lists the settings that differ from the checkpoint's;
    one that changes the Q-network (queue_history) is a one-line error naming it, not torch's
    size mismatch."""
    from ccgym._errors import ResumeConfigWarning, ScenarioError

    out = tmp_path / "run"
    train(config(1), out, progress=False)
    with pytest.warns(ResumeConfigWarning, match=r"train\.episodes = 1 -> 2"):
        train({"train": {"episodes": 2}}, out, resume=True, progress=False)
    changed = {"agent": {"queue_history": 2}}
    with (
        pytest.raises(ScenarioError, match=r"agent\.queue_history = 3 in the checkpoint, 2 now"),
        pytest.warns(ResumeConfigWarning),
    ):
        train(changed, out, resume=True, progress=False)


def test_the_episode_loop_answers_flow_agents_through_a_flow_policy() -> None:
    """Learned hosts under learned switches: flow agents answered by a Python policy."""
    from ccgym.acc.driver import acc_scenario

    data = incast()
    data["cc"] = {"algorithm": "agent"}
    data["agent"] = {"trigger": "interval", "interval": "20us"}
    data = acc_scenario(data, {"queues": ["sw0->h0"], "queue_interval": "20us"})
    learner = policy_learner(policies.mlp_policy([(np.zeros((35, 21)), np.zeros(35), "none")]))
    seen = []

    def keep_rate(obs: np.ndarray) -> np.ndarray:
        seen.append(len(obs))
        return np.zeros(len(obs), np.float32)

    stats = run_queue_episode(data, learner, train=False, flow_policy=keep_rate)
    assert stats.decisions == 99 and sum(seen) > 0


def test_acc_eval_online_uses_the_policys_own_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ccgym acc-eval --online` without --config: the bundled acc-default learns with its own
    config's [online] (learning_starts 2000, as the acc suite's ACC online), not the built-in
    256; a run folder's policy.json with its config.json; any other file with the defaults and a
    one-line warning saying which."""
    from types import SimpleNamespace

    import ccgym.acc.training as training
    from ccgym.bench.acc_suite import ONLINE_CONFIG
    from ccgym.cli import main
    from ccgym.train.config import read_config

    seen: list[Any] = []

    def fake_run_policy(policy: Any, scenario: Any, overrides: Any, **kw: Any) -> Any:
        seen.append(kw["config"])
        return SimpleNamespace(metrics={}), SimpleNamespace(learner_steps=0)

    monkeypatch.setattr(training, "run_policy", fake_run_policy)
    bundled = policies.POLICY_DIR / "acc-default.json"
    for spec in ("acc-default", str(bundled)):
        assert main(["acc-eval", "acc-websearch", "--online", "--policy", spec]) == 0
        on = training.online_settings(seen[-1])
        assert on == training.online_settings(read_config(ONLINE_CONFIG))
        assert on["learning_starts"] == 2000
        assert "warning" not in capsys.readouterr().err

    run = tmp_path / "run"
    run.mkdir()
    (run / "policy.json").write_text(bundled.read_text())
    (run / "config.json").write_text(json.dumps({"online": {"learning_starts": 77}}))
    assert (
        main(["acc-eval", "acc-websearch", "--online", "--policy", str(run / "policy.json")]) == 0
    )
    assert training.online_settings(seen[-1])["learning_starts"] == 77
    assert "warning" not in capsys.readouterr().err

    mine = tmp_path / "mine.json"
    mine.write_text(bundled.read_text())
    assert main(["acc-eval", "acc-websearch", "--online", "--policy", str(mine)]) == 0
    assert seen[-1] is None
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "built-in [online] defaults" in err and "learning_starts 256" in err
    # Greedy runs need no config and say nothing.
    assert main(["acc-eval", "acc-websearch", "--policy", str(mine)]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            "[ddqn]\neps_start = 0.2\neps_end = 0.5\n",
            "ddqn.eps_end = 0.5 is above ddqn.eps_start = 0.2",
        ),
        # eps_end's default (0.05) above the one given: compared over DDQNSettings' defaults
        ("[ddqn]\neps_start = 0.01\n", "ddqn.eps_end = 0.05 is above ddqn.eps_start = 0.01"),
        ("[train]\ncheckpoint_every = -1\n", "train.checkpoint_every = -1"),
    ],
)
def test_epsilon_order_and_checkpoint_every_are_config_errors(
    toml: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """eps_end above eps_start is refused by the config check, naming both keys, with one
    ``error:`` line and exit status 2 (not DDQNSettings' ValueError, status 1)."""
    from ccgym.cli import main

    cfg = tmp_path / "bad.toml"
    cfg.write_text(toml)
    code = main(["train", "ddqn", "--config", str(cfg), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and message in err, (code, err)
    assert not (tmp_path / "run" / "history.jsonl").exists()


def test_checkpoint_every_0_means_the_last_checkpoint_only(tmp_path: Path) -> None:
    """train.checkpoint_every = 0, as in the other trainers: no periodic checkpoints, the one
    at the end (which --resume and export read)."""
    cfg = config(1)
    cfg["train"]["checkpoint_every"] = 0
    cfg["train"]["keep_checkpoints"] = True
    out = tmp_path / "run"
    result = train(cfg, out, progress=False)
    assert result["episodes"] == 1
    assert read_checkpoint(out / "checkpoint.pt")["episodes"] == 1
    assert [p.name for p in (out / "checkpoints").iterdir()] == ["ckpt-ep0001.pt"]
