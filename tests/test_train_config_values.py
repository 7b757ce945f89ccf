"""Training configs: the numeric settings of every trainer's tables are checked for type and
range when the config is read; a bad one is one ``error:`` line naming the file, the key and the
value, with exit status 2 (and nothing trained nor written)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from ccgym import ScenarioError
from ccgym.train.config import check_values, load_config, parse_time_ps
from cli_helpers import run_ccgym  # noqa: E402

PYTHON_DIR = Path(__file__).resolve().parent.parent / "python"

PPO_LIKE: dict[str, Any] = {
    "train": {"seed": 1, "updates": 10, "episode": "20ms", "checkpoint_every": 5, "max_wall_s": 0},
    "ppo": {"gamma": 0.99, "lr": 2.5e-4, "epochs": 4, "norm_adv": False},
    "network": {"hidden": [32, 16]},
}


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m ccgym ARGS`` in a subprocess (:func:`cli_helpers.run_ccgym`)."""
    return run_ccgym(*args, cwd=cwd)


@pytest.mark.parametrize(
    ("trainer", "toml", "key", "shown"),
    [
        ("ppo", "[train]\nupdates = 0\n", "train.updates", "0"),
        ("reinforce", "[train]\nupdates = -3\n", "train.updates", "-3"),
        ("ppo", "[ppo]\ngamma = 1.5\n", "ppo.gamma", "1.5"),
        ("ppo", '[ppo]\nlr = "fast"\n', "ppo.lr", '"fast"'),
        ("aurora", '[train]\nepisode = "30 parsecs"\n', "train.episode", '"30 parsecs"'),
        ("adpg", "[train]\nupdates = 0\n", "train.updates", "0"),
        ("adpg", '[env]\nepisode = "soon"\n', "env.episode", '"soon"'),
        ("impala", "[impala]\nunroll = 0\n", "impala.unroll", "0"),
        ("ddqn", "[ddqn]\ngamma = 2.0\n", "ddqn.gamma", "2.0"),
        ("ddqn", "[train]\nepisodes = 0\n", "train.episodes", "0"),
    ],
)
def test_cli_refuses_a_bad_value_with_one_line(
    trainer: str, toml: str, key: str, shown: str, tmp_path: Path
) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(toml)
    proc = run_cli("train", trainer, "--config", str(cfg), "--out", "run", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: training config {cfg}: {key} = {shown}: "), lines[0]
    assert "ValueError" not in lines[0]
    assert not (tmp_path / "run" / "policy.json").exists()


@pytest.mark.parametrize(
    ("table", "value", "why"),
    [
        ({"train": {"updates": 0}}, 0, "integer >= 1"),
        ({"train": {"updates": 2.5}}, 2.5, "integer >= 1"),
        ({"train": {"updates": True}}, True, "integer >= 1"),
        ({"train": {"checkpoint_every": -1}}, -1, "integer >= 0"),
        ({"train": {"seed": "one"}}, "one", "integer >= 0"),
        ({"ppo": {"gamma": -0.1}}, -0.1, "[0, 1]"),
        ({"ppo": {"lr": 0}}, 0, "> 0"),
        ({"ppo": {"lr": float("nan")}}, float("nan"), "> 0"),
        ({"ppo": {"norm_adv": 1}}, 1, "true or false"),
        ({"train": {"episode": "0ms"}}, "0ms", "longer than 0"),
        ({"train": {"episode": "-2ms"}}, "-2ms", "not negative"),
        ({"train": {"max_wall_s": -5}}, -5, ">= 0"),
        ({"network": {"hidden": [32, 0]}}, [32, 0], "layer widths"),
    ],
)
def test_check_values_names_table_key_and_value(table: Any, value: Any, why: str) -> None:
    with pytest.raises(ScenarioError, match="training config c.toml: ") as e:
        check_values(table, PPO_LIKE, "c.toml")
    section, key = next((s, k) for s, t in table.items() for k in t)
    assert f"{section}.{key} = " in str(e.value) and why.split()[-1] in str(e.value)


def test_good_values_pass_and_merge() -> None:
    cfg = load_config(
        {
            "train": {"updates": 3, "episode": 0.002, "checkpoint_every": 0, "max_wall_s": 1.5},
            "ppo": {"gamma": 1, "lr": 1e-3, "epochs": 2.0},
        },
        PPO_LIKE,
    )
    assert cfg["train"]["updates"] == 3 and cfg["ppo"]["gamma"] == 1
    # impala: "" keeps the scenario's own duration.
    check_values({"train": {"episode": ""}}, {"train": {"episode": ""}}, "c.toml")
    with pytest.raises(ScenarioError, match="train.episode"):
        check_values({"train": {"episode": ""}}, PPO_LIKE, "c.toml")


def test_times_are_the_scenario_units() -> None:
    assert parse_time_ps("20ms") == 20e9
    assert parse_time_ps("1.5 us") == 1.5e6
    assert parse_time_ps("1e3ms") == 1e12
    assert parse_time_ps(0.002) == 2e9
    assert parse_time_ps("3") == 3e12
    for bad in ("30 parsecs", "-1ms", "ms", True, [1]):
        with pytest.raises(ValueError):
            parse_time_ps(bad)
