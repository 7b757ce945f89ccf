"""``make run`` installs only the package's own dependencies: ``import ccgym`` and the commands
of the main job (``run``, ``perf`` without ``--agent``, ``bench``, ``eval``) must never import
PyTorch, TensorBoard, Gymnasium, PettingZoo or Ray.

Each check runs in a subprocess whose ``PYTHONPATH`` starts with stand-in packages of those
names: importing one records its name in a log file and fails. The log catches an import even
where the code would swallow the ImportError; child processes (perf's per-size runs, bench's
workers) inherit the environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ccgym._sim")

BLOCKED = ("torch", "tensorboard", "gymnasium", "pettingzoo", "ray")
PYTHON_DIR = Path(__file__).resolve().parent.parent / "python"

STUB = """import os
with open(os.environ["CCGYM_BLOCKED_LOG"], "a", encoding="utf-8") as log:
    log.write("{name}\\n")
raise ImportError("{name} is blocked in this test")
"""


@pytest.fixture
def light(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment in which the heavy packages cannot be imported, and its log."""
    stubs = tmp_path / "stubs"
    for name in BLOCKED:
        (stubs / name).mkdir(parents=True)
        (stubs / name / "__init__.py").write_text(STUB.format(name=name), encoding="utf-8")
    log = tmp_path / "blocked-imports.log"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(stubs), str(PYTHON_DIR)])
    env["CCGYM_BLOCKED_LOG"] = str(log)
    return env, log


def _run(env: dict[str, str], log: Path, *args: str, cwd: Path | None = None) -> None:
    proc = subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    imported = log.read_text(encoding="utf-8").split() if log.exists() else []
    assert not imported, f"{' '.join(args)} imported {sorted(set(imported))}"


def test_the_stubs_catch_an_import(light: tuple[dict[str, str], Path]) -> None:
    env, log = light
    code = "import ccgym.agents; ccgym.agents.trainer('adpg')"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and "torch" in log.read_text(encoding="utf-8").split()


def test_import_ccgym_and_its_light_modules(light: tuple[dict[str, str], Path]) -> None:
    env, log = light
    modules = (
        "ccgym ccgym.cli ccgym.env ccgym.agents ccgym.train ccgym.train.config "
        "ccgym.train.trajectories ccgym.train.rollout ccgym.policies ccgym.perf "
        "ccgym.bench.runner ccgym.bench.report"
    ).split()
    _run(env, log, "-c", "import " + ", ".join(modules))


def test_run_perf_eval(light: tuple[dict[str, str], Path], tmp_path: Path) -> None:
    env, log = light
    short = ["--set", "duration=1ms", "--set", 'metrics.window=["0ms", "1ms"]']
    _run(env, log, "-m", "ccgym", "run", "incast-16", *short, "--quiet", cwd=tmp_path)
    _run(env, log, "-m", "ccgym", "perf", "--flows", "16", "--duration", "1ms", "--json")
    short = ["--set", "duration=3ms", "--set", 'metrics.window=["0ms", "3ms"]']
    short += ["--set", 'workload[0].stop="3ms"']  # flows start in [1, 2] ms
    _run(env, log, "-m", "ccgym", "eval", "adpg-default", "adpg-m2o-2", *short, "--quiet")


def test_bench(light: tuple[dict[str, str], Path], tmp_path: Path) -> None:
    """A small suite with a classic CC and the bundled native policy (the quick suite's kinds
    of methods), its tables and report; and the quick suite itself, loaded."""
    env, log = light
    suite = tmp_path / "tiny.toml"
    suite.write_text(
        'name = "tiny"\n'
        'methods = ["dcqcn", "policy:adpg-default"]\n'
        "overrides = ['duration=2ms', 'metrics.window=[\"1ms\", \"2ms\"]', "
        "'workload[0].stop=\"2ms\"']\n"
        "[[scenario]]\n"
        'scenario = "adpg-m2o-2"\n',
        encoding="utf-8",
    )
    bench = ("-m", "ccgym", "bench", "--suite")
    _run(env, log, *bench, str(suite), "--jobs", "2", "--out", "tiny", cwd=tmp_path)
    assert (tmp_path / "tiny" / "report.html").is_file()
    _run(env, log, *bench, "quick", "--report-only", "--out", "q", cwd=tmp_path)
