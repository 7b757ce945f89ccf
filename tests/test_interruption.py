"""Issue 16, class 6: interruption.

* ``ccgym bench`` killed by SIGKILL: its pool workers die with it (they used to live for good);
* Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops ``ccgym bench`` at
  once (it used to wait for every queued run);
* training interrupted by Ctrl-C or SIGTERM saves a checkpoint holding every finished update
  and says how to resume (SIGTERM used to lose everything since the last kept checkpoint).

The bench runs here are long (3 s of simulated time each, tens of seconds of wall time), so
that the old behaviour cannot pass by finishing in time; every process a test starts is killed
at the end whatever happens.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads process states from /proc"
)

LONG_RUNS = """
name = "long-runs"
seeds = [1, 2, 3, 4]
methods = ["dcqcn"]
overrides = ["duration=3s", "metrics.window=['0.5ms', '3s']", "workload[0].stop=3s"]

[[scenario]]
scenario = "adpg-m2o-2"
"""

START_TIMEOUT_S = 60.0
"""How long the bench may take to start its two workers (imports, on a loaded machine)."""


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry))
    return kids


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (a dead process nobody has reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_until(condition: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.fixture()
def bench(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], list[int]]]:
    """``ccgym bench --jobs 2`` on four long runs, in its own session (process group), with its
    two pool workers started; everything in the group is killed afterwards."""
    suite = tmp_path / "long-runs.toml"
    suite.write_text(LONG_RUNS)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "python")}
    cmd = [sys.executable, "-m", "ccgym", "bench", "--suite", str(suite)]
    cmd += ["--out", str(tmp_path / "out"), "--jobs", "2", "--no-report"]
    with open(tmp_path / "stderr.txt", "wb") as err:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
            start_new_session=True,
            # a terminal's Ctrl-C: SIGINT must not be inherited as ignored (it is when the
            # tests themselves run in the background)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    try:
        assert _wait_until(lambda: len(_children(proc.pid)) >= 2, START_TIMEOUT_S), (
            tmp_path / "stderr.txt"
        ).read_text()
        time.sleep(0.5)  # the workers are inside their first runs
        yield proc, _children(proc.pid)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


def test_bench_workers_die_with_a_killed_parent(
    bench: tuple[subprocess.Popen[bytes], list[int]],
) -> None:
    proc, workers = bench
    proc.kill()
    proc.wait(timeout=10)
    assert _wait_until(lambda: not any(_running(w) for w in workers), 5.0), (
        f"pool workers {[w for w in workers if _running(w)]} outlived their parent"
    )


def test_ctrl_c_stops_bench_at_once(bench: tuple[subprocess.Popen[bytes], list[int]]) -> None:
    proc, workers = bench
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    try:
        code = proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        pytest.fail("ccgym bench still running 5 s after Ctrl-C")
    assert code == 130, code
    assert time.monotonic() - t0 < 5.0
    assert not any(_running(w) for w in workers)


ORPHAN = """
import os, sys, time
from ccgym.bench import runner

parent = os.getpid()
child = os.fork()
if child == 0:
    if sys.argv[1] == "poll":  # the fallback where prctl is missing (macOS, BSD)
        sys.platform = "darwin"
    runner.die_with_parent(parent)
    print(os.getpid(), flush=True)
    time.sleep(60)
    os._exit(0)
sys.stdin.readline()  # the test says when the parent is to end
os._exit(0)
"""


@pytest.mark.parametrize("mode", ["pdeathsig", "poll"])
def test_die_with_parent(mode: str, tmp_path: Path) -> None:
    """A process that called die_with_parent ends soon after its parent is gone, with the
    kernel's death signal and with the polling fallback."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "python")}
    proc = subprocess.Popen(
        [sys.executable, "-c", ORPHAN, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        child = int(proc.stdout.readline())
        assert _running(child)
        proc.stdin.write("exit\n")
        proc.stdin.flush()
        proc.wait(timeout=10)
        assert _wait_until(lambda: not _running(child), 5.0), f"{mode}: {child} outlived its parent"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


# --------------------------------------------------------------------------- training

torch = pytest.importorskip("torch")

from ccgym.agents import ppo  # noqa: E402


def _endless_config() -> dict[str, object]:
    """PPO on a 2-to-1 incast: many updates, no kept checkpoint before the end; max_wall_s
    ends it if the interruption under test never comes."""
    return {
        "train": {
            "seed": 3,
            "updates": 1_000_000,
            "episode": "2ms",
            "checkpoint_every": 0,
            "max_wall_s": 60,
        },
        "scenario": [{"name": "adpg-m2o-2", "overrides": ['workload[0].start=["0us", "20us"]']}],
        "ppo": {"rollout_length": 16, "rollouts_per_update": 2},
    }


@contextlib.contextmanager
def _interrupt_after(run: Path, updates: int, signum: int) -> Iterator[list[int]]:
    """Sends ``signum`` to this process, from a thread, once ``updates`` lines are in the run's
    history (SIGTERM only if the trainer took it over, since the handler found here may end
    pytest; SIGINT otherwise). Yields the list of signals sent; nothing is sent after the block
    ends (training ended before it got there)."""
    sent: list[int] = []
    stop = threading.Event()
    sigterm_before = signal.getsignal(signal.SIGTERM)

    def watch() -> None:
        hist = run / "history.jsonl"
        while not stop.wait(0.02):
            if hist.is_file() and len(hist.read_text().splitlines()) >= updates:
                sig = signum
                if sig == signal.SIGTERM and signal.getsignal(signal.SIGTERM) is sigterm_before:
                    sig = signal.SIGINT
                sent.append(sig)
                os.kill(os.getpid(), sig)
                return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield sent
    finally:
        stop.set()
        thread.join(timeout=5)


@pytest.fixture()
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt here even if the tests were started with it ignored."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_training_checkpoints_on_interrupt(
    signum: int, tmp_path: Path, ctrl_c_raises: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from ccgym.cli import main

    run = tmp_path / "run"
    config = tmp_path / "ppo.json"
    cfg = _endless_config()
    config.write_text(json.dumps(cfg))
    sigterm_before = signal.getsignal(signal.SIGTERM)  # Ray, if an earlier test started it
    with _interrupt_after(run, 2, signum) as sent:
        code = main(["train", "ppo", "--config", str(config), "--out", str(run)])
    assert sent == [signum], "the trainer did not take over SIGTERM"
    assert code == 130
    err = capsys.readouterr().err
    assert f"ccgym train ppo --out {run} --resume" in err
    # every update in the history is in the checkpoint: none is lost
    done = len((run / "history.jsonl").read_text().splitlines())
    assert done >= 2
    assert torch.load(run / "checkpoint.pt", weights_only=False)["update"] == done
    assert signal.getsignal(signal.SIGTERM) is sigterm_before  # handed back after training
    # and the run goes on from there
    cfg["train"]["updates"] = done + 1  # type: ignore[index]
    assert ppo.train_from_config(cfg, run, resume=True, progress=False)["updates"] == done + 1


def test_interrupted_training_raises_training_interrupted(
    tmp_path: Path, ctrl_c_raises: None
) -> None:
    from ccgym.train.loop import TrainingInterrupted

    cfg = _endless_config()
    with _interrupt_after(tmp_path, 1, signal.SIGINT), pytest.raises(TrainingInterrupted) as info:
        ppo.train_from_config(cfg, tmp_path, progress=False)
    assert isinstance(info.value, KeyboardInterrupt)  # callers catching Ctrl-C still do
    assert info.value.checkpoint == tmp_path / "checkpoint.pt"
    assert info.value.update == len((tmp_path / "history.jsonl").read_text().splitlines())


def test_a_run_stopped_by_max_wall_s_says_so(tmp_path: Path) -> None:
    """train.max_wall_s ends a run before train.updates: its result says it is not complete
    and why; the run then resumes to the end, complete."""
    cfg = _endless_config()
    cfg["train"].update(updates=3, max_wall_s=1e-9)  # type: ignore[union-attr]
    stopped = ppo.train_from_config(cfg, tmp_path, progress=False)
    assert stopped["updates"] == 1
    assert stopped["complete"] is False and stopped["stopped"] == "max_wall_s"
    from ccgym._errors import ResumeConfigWarning

    with pytest.warns(ResumeConfigWarning, match="train.max_wall_s"):
        resumed = ppo.train_from_config(
            {"train": {"updates": 2, "max_wall_s": 0}}, tmp_path, resume=True, progress=False
        )
    assert resumed["updates"] == 2
    assert resumed["complete"] is True and "stopped" not in resumed
