"""``ccgym train`` in a log file (stderr not a terminal): plain progress lines, at most one every
10 s, instead of nothing; the terminal keeps its bar."""

from __future__ import annotations

import io
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ccgym._progress import PlainProgress, plain_lines, plain_reporter, progress_bar
from cli_helpers import run_ccgym  # noqa: E402

PYTHON_DIR = Path(__file__).resolve().parent.parent / "python"


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m ccgym ARGS`` in a subprocess (:func:`cli_helpers.run_ccgym`)."""
    return run_ccgym(*args, cwd=cwd)


PPO: dict[str, Any] = {
    "train": {"seed": 3, "updates": 2, "episode": "2ms", "checkpoint_every": 1},
    "scenario": [{"name": "adpg-m2o-2", "overrides": ['workload[0].start=["0us", "20us"]']}],
    "ppo": {"rollout_length": 16, "rollouts_per_update": 2},
}

DDQN: dict[str, Any] = {
    "train": {"seed": 1, "episodes": 2, "duration": "2ms", "warmup": "0ms", "checkpoint_every": 2},
    "ddqn": {"batch_size": 64, "learning_starts": 64, "target_every": 100, "eps_decay_steps": 400},
    "agent": {"queues": ["sw0->h0"], "queue_interval": "20us"},
    "scenarios": [
        {
            "scenario": {
                "name": "acc-train-incast",
                "duration": "2ms",
                "topology": {
                    "kind": "star",
                    "hosts": 4,
                    "link_rate": "25Gbps",
                    "link_delay": "1us",
                },
                "switch": {"ecn": {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}},
                "cc": {"algorithm": "dctcp"},
                "metrics": {"size_buckets": ["100KB"]},
                "workload": [
                    {"kind": "incast", "senders": [1, 2, 3], "receiver": 0, "size": "100MB"}
                ],
            }
        }
    ],
}

CLOCK = r"\d+:\d\d:\d\d"


@pytest.mark.parametrize(
    ("trainer", "config", "first", "last"),
    [
        ("ppo", PPO, rf"ppo: update 1/2, {CLOCK}, decisions \d", rf"ppo: update 2/2, {CLOCK}, "),
        ("ddqn", DDQN, rf"ddqn: episode 1/2, {CLOCK}, r [-+]\d", rf"ddqn: episode 2/2, {CLOCK}, "),
    ],
)
def test_train_prints_plain_progress_into_a_log(
    trainer: str, config: dict[str, Any], first: str, last: str, tmp_path: Path
) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(config))
    proc = run_cli("train", trainer, "--config", str(cfg), "--out", "run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.startswith(f"{trainer}: ")]
    # The first report, then at most one every 10 s (a tiny run: none), then the last one.
    assert len(lines) == 2, proc.stderr
    assert re.match(first, lines[0]) and re.match(last, lines[1]), lines
    assert "\x1b[" not in proc.stderr  # no terminal control codes in the log
    assert json.loads(proc.stdout)["policy"]


def test_plain_lines_are_throttled_and_the_last_always_shown() -> None:
    out = io.StringIO()
    bar = PlainProgress("ppo", every_s=1000, stream=out)
    with bar:
        task = bar.add_task("update", total=5, completed=1, info="")
        for k in range(2, 6):
            bar.update(task, completed=k, info=f"reward_mean {k / 10:.3g}")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert re.fullmatch(rf"ppo: update 2/5, {CLOCK}, reward_mean 0.2", lines[0])
    assert re.fullmatch(rf"ppo: update 5/5, {CLOCK}, reward_mean 0.5", lines[1])
    out = io.StringIO()
    bar = PlainProgress("impala", every_s=0, unit="env steps", stream=out)
    task = bar.add_task("x", total=20000)
    bar.update(task, completed=12000, info="iteration 3")
    assert re.fullmatch(rf"impala: env steps 12,000/20,000, {CLOCK}, iteration 3\n", out.getvalue())


def test_only_ccgym_train_turns_an_off_bar_into_plain_lines() -> None:
    from rich.console import Console

    log = Console(file=io.StringIO())  # not a terminal
    # The library as before: an off bar stays off (rich's Progress), nothing printed.
    assert not isinstance(progress_bar("ppo", console=log, disable=True), PlainProgress)
    assert plain_reporter("impala") is None
    with plain_lines(unit="episode"):
        bar = progress_bar("ddqn", elastic="info", console=log, disable=True)
        assert isinstance(bar, PlainProgress) and bar.unit == "episode"
        assert bar.info_field == "info"
        # A bar that is on (a terminal, or asked for) stays rich's.
        assert not isinstance(progress_bar("ppo", console=log, disable=False), PlainProgress)
        # pytest captures stderr: not a terminal.
        assert isinstance(plain_reporter("impala"), PlainProgress)
