"""ccgym bench --ray: the same jobs as Ray tasks give the serial run's numbers; clear errors."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from ccgym.bench import ray_runner
from ccgym.bench.runner import load_suite, run_suite
from ccgym.cli import main

# Two short scenarios (6 ms of long-short 2, the second with another seed and later messages),
# two methods, scored with the long-short table (the heaviest metrics path).
TINY = """
name = "tiny-ray"
seeds = [1]
methods = ["dcqcn", "policy:adpg-default"]
table = "long-short"
overrides = ["duration=6ms", "metrics.window=['0.5ms', '6ms']"]

[[scenario]]
label = "long-short 2"
scenario = "adpg-long-short-2"
published = "ls-2"

[[scenario]]
label = "long-short 2, other seed"
scenario = "adpg-long-short-2"
overrides = ["seed=7", "workload[1].start=2ms"]
"""


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny-ray.toml"
    path.write_text(TINY)
    return path


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _numbers(records: list[dict]) -> list[tuple]:
    return [(r["label"], r["method"], r["seed"], r["key"], r["metrics"]) for r in records]


@pytest.mark.xdist_group("ray")  # starts a local Ray instance (pyproject.toml)
def test_ray_local_equals_serial(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ray = pytest.importorskip("ray")
    suite = load_suite(tiny)
    serial, stats = run_suite(suite, tmp_path / "serial", jobs=1)
    assert stats.ran == 4

    out = tmp_path / "ray"
    args = ["bench", "--suite", str(tiny), "--ray", "local", "--jobs", "2", "--out", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "4 runs done, 0 from the cache" in text and "RT s" in text
    assert not ray.is_initialized()  # the private instance is shut down again

    # everything is in the cache now: the same records, bit for bit, as the serial run
    on_ray, stats = run_suite(suite, out, jobs=1)
    assert (stats.ran, stats.cached) == (0, 4)
    assert _numbers(on_ray) == _numbers(serial)
    assert (out / "table.md").read_text().count("long-short 2") >= 2


@pytest.mark.xdist_group("ray")  # starts a local Ray instance (pyproject.toml)
def test_ray_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A suite method with an unknown CC, run on Ray: the one-line error of a local run, naming
    the suite's run, not Ray's traceback of the worker."""
    pytest.importorskip("ray")
    path = tmp_path / "bad.toml"
    path.write_text(
        'name = "bad"\nseeds = [1]\nmethods = ["no-such-cc"]\n'
        "overrides = [\"duration=0.2ms\", \"metrics.window=['0ms', 'end']\"]\n"
        '[[scenario]]\nlabel = "incast"\nscenario = "incast-16"\n'
    )
    args = ["bench", "--suite", str(path), "--ray", "local", "--jobs", "1"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 2
    # Without a terminal the bench first prints a plain progress line ("bench bad: 1 runs to
    # do"); the error is the one line after it.
    err = "\n".join(
        line
        for line in capsys.readouterr().err.strip().splitlines()
        if not line.startswith("bench ")
    )
    assert err.startswith('error: suite run incast / no-such-cc / seed 1: cc.algorithm: value "no')
    assert "ray::" not in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_ray_not_installed(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'ccgym\[ray\]'"):
        ray_runner.import_ray()
    assert main(["bench", "--suite", str(tiny), "--ray", "local", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "error: --ray needs Ray" in err and "Traceback" not in err


def test_ray_unreachable_address(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("ray")
    address = f"127.0.0.1:{_closed_port()}"
    assert main(["bench", "--suite", str(tiny), "--ray", address, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"error: cannot reach the Ray cluster at {address}" in err and "Traceback" not in err
    with pytest.raises(ConnectionError, match="cannot reach"):
        ray_runner.check_reachable(f"ray://{address}", timeout=2)


def test_ray_auto_without_a_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray")
    import ray._private.services as services

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(services, "canonicalize_bootstrap_address", lambda *a, **k: None)
    with pytest.raises(ConnectionError, match="no Ray cluster is running"):
        ray_runner.connect("auto")


@pytest.mark.parametrize("address", ["nowhere", "host:", ":6379", "host:port", "h:70000"])
def test_ray_bad_address(address: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="bad Ray address"):
        ray_runner.check_address(address)
    with pytest.raises(SystemExit) as e:
        main(["bench", "--suite", "quick", "--ray", address])
    assert e.value.code == 2
    assert "bad Ray address" in capsys.readouterr().err


def test_ray_good_addresses() -> None:
    for address in ("local", "auto", "10.0.0.1:6379", "ray://head:10001", "[::1]:6379"):
        assert ray_runner.check_address(address) == address
