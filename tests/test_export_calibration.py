"""``ccgym export --calibrate``: the flows act as the policy would natively while observations
are recorded (argmax of a discrete policy's scores), and a recurrent policy, which has no int8
form, is refused up front with one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ccgym import ScenarioError
from ccgym import policies as P
from cli_helpers import run_ccgym  # noqa: E402

PYTHON_DIR = Path(__file__).resolve().parent.parent / "python"
SHORT = ["duration=4ms", 'workload[0].start=["0us", "20us"]']


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m ccgym ARGS`` in a subprocess (:func:`cli_helpers.run_ccgym`)."""
    return run_ccgym(*args, cwd=cwd)


def test_chosen_actions_are_the_simulators() -> None:
    scores = np.array([[0.1, 0.7, 0.7], [np.nan, -1.0, -2.0], [3.0, 2.0, 1.0]], np.float32)
    assert P.chosen_actions({}, scores).tolist() == [1.0, 1.0, 0.0]
    # Only the action's outputs count (a value head stacked under the logits is not a choice).
    stacked = np.array([[0.1, 0.2, 9.0]], np.float32)
    assert P.chosen_actions({"action_outputs": 2}, stacked).tolist() == [1.0]
    # One output: the continuous action itself.
    assert P.chosen_actions({}, np.array([[0.25], [-0.5]], np.float32)).tolist() == [0.25, -0.5]


def test_export_calibrates_a_discrete_ppo_policy(tmp_path: Path) -> None:
    from ccgym.agents import ppo

    cfg = {
        "train": {"seed": 3, "updates": 1, "episode": "2ms", "checkpoint_every": 1},
        "scenario": [{"name": "adpg-m2o-2", "overrides": ['workload[0].start=["0us", "20us"]']}],
        "agent": {"action": "discrete"},
        "ppo": {"rollout_length": 16, "rollouts_per_update": 2},
    }
    ppo.train_from_config(cfg, tmp_path / "run", progress=False)
    out = tmp_path / "x.json"
    args = ["export", str(tmp_path / "run" / "checkpoint.pt"), "--out", str(out)]
    args += ["--calibrate", "adpg-m2o-2"]
    for o in SHORT:
        args += ["--calibrate-set", o]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    policy = json.loads(out.read_text())
    assert len(policy["layers"][-1]["bias"] or policy["layers"][-1]["weight"]) == 6
    assert len(policy["int8"]["input_amax"]) == len(policy["layers"])
    assert policy["meta"]["int8_calibration"]["observations"] > 0


def test_record_observations_refuses_a_recurrent_policy() -> None:
    with pytest.raises(ScenarioError, match="float32 only"):
        P.record_observations("mvfst-default", ["dumbbell-wan"], overrides=SHORT)
    with pytest.raises(ScenarioError, match="float32 only"):
        P.with_calibration(P.load_policy("mvfst-default"), np.zeros((4, 221), np.float32))


def test_export_refuses_to_calibrate_an_impala_checkpoint(tmp_path: Path) -> None:
    """The MVFST-RL network (LSTM) runs in float32 only: one ``error:`` line, status 2, and no
    simulation run with a meaningless action."""
    from ccgym.agents.impala import ALGORITHM, DEFAULT_CONFIG
    from ccgym.agents.impala_model import MvfstNet
    from ccgym.train.loop import save_atomic

    net = MvfstNet(5, 3, hidden=[4], lstm=True)
    cfg = {**DEFAULT_CONFIG, "network": {"hidden": [4], "lstm": True}}
    state = {
        "algorithm": ALGORITHM,
        "update": 1,
        "decisions": 10,
        "episodes": 0,
        "wall_s": 1.0,
        "model": net.state_dict(),
        "optimizer": {},
        "extra": {"input_dim": 5, "num_actions": 3},
        "rng": {},
        "config": cfg,
        "obs_dim": 4,
    }
    ckpt = tmp_path / "checkpoint.pt"
    save_atomic(ckpt, state)
    out = tmp_path / "x.json"
    proc = run_cli("export", str(ckpt), "--out", str(out), "--calibrate", "dumbbell-wan")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ccgym export --calibrate:"), lines
    assert "float32 only" in lines[0]
    assert not out.exists()
