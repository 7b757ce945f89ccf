"""Issue 16, class 5: one damaged file must not block everything.

A bench cache record of the wrong shape, a torn last line of a training history and a truncated
checkpoint are each detected, named, and skipped, repaired or replaced by an earlier good copy;
what cannot be repaired raises ``CorruptFileError`` naming the file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import ccgym
from ccgym.bench.runner import load_suite, run_suite
from ccgym.bench.tables import build_rows
from ccgym.cli import main

# One short run (2 ms of a 2-to-1 incast under DCQCN, well under a second).
ONE_RUN = """
name = "one-run"
seeds = [1]
methods = ["dcqcn"]
overrides = ["duration=2ms", "metrics.window=['0.5ms', '2ms']", "workload[0].stop=2ms",
             "workload[0].start=['0.1ms', '0.2ms']", "metrics.sample_interval=50us"]

[[scenario]]
label = "m2o 2"
scenario = "adpg-m2o-2"
"""


@pytest.fixture(scope="module")
def cached_bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A suite file and an output folder holding its one cached run."""
    root = tmp_path_factory.mktemp("bench")
    suite = root / "one-run.toml"
    suite.write_text(ONE_RUN)
    _, stats = run_suite(load_suite(suite), root / "out", jobs=1)
    assert stats.ran == 1
    return suite, root / "out"


def _copy_out(cached_bench: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path, Path]:
    suite, out = cached_bench
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    (record,) = sorted((copy / "runs").glob("*.json"))
    return suite, copy, record


def _damage(record: Path, how: str) -> None:
    rec = json.loads(record.read_text())
    if how == "metrics-not-an-object":  # the record of the issue: every later bench failed
        rec["metrics"] = [rec["metrics"]["SU"]]
    elif how == "another-runs-record":  # copied over from another run: silently wrong numbers
        rec["key"] = "0" * 24
    elif how == "metric-not-a-number":
        rec["metrics"]["SU"] = "high"
    elif how == "no-summary":
        del rec["summary"]
    if how == "truncated":
        record.write_text(record.read_text()[:100])
    elif how == "not-utf8":
        record.write_bytes(b"\xff\xfe" + record.read_bytes())
    elif how == "json-list":
        record.write_text("[1, 2]")
    else:
        record.write_text(json.dumps(rec))


DAMAGE = [
    "metrics-not-an-object",
    "another-runs-record",
    "metric-not-a-number",
    "no-summary",
    "truncated",
    "not-utf8",
    "json-list",
]


@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_bench_record_is_named_and_run_again(
    how: str, cached_bench: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, out, record = _copy_out(cached_bench, tmp_path)
    good = json.loads(record.read_text())
    _damage(record, how)
    with pytest.warns(ccgym.CorruptFileWarning, match=f"bench cache {record}"):
        records, stats = run_suite(load_suite(suite), out, jobs=1)
    assert (stats.ran, stats.cached) == (1, 0)
    assert records[0]["metrics"] == good["metrics"]  # the run again, deterministic
    assert json.loads(record.read_text())["metrics"] == good["metrics"]  # the file repaired
    assert build_rows(records)[0]["SU"] == good["metrics"]["SU"]


def test_damaged_bench_record_in_the_cli_and_the_report(
    cached_bench: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ccgym.bench.report import cached_records

    suite, out, record = _copy_out(cached_bench, tmp_path)
    _damage(record, "metrics-not-an-object")
    with pytest.warns(ccgym.CorruptFileWarning, match=str(record)):
        found, missing = cached_records(load_suite(suite), out)
    assert (found, missing) == ([], 1)  # --report-only: counted as missing, not a crash
    assert main(["bench", "--suite", str(suite), "--out", str(out), "--no-report"]) == 0
    captured = capsys.readouterr()
    assert f"warning: bench cache {record} is not a bench record" in captured.err
    assert "1 runs done, 0 from the cache" in captured.out


# --------------------------------------------------------------------------- training files

torch = pytest.importorskip("torch")

from ccgym.agents import ppo  # noqa: E402
from ccgym.train import loop  # noqa: E402


def _config(updates: int) -> dict[str, Any]:
    return {
        "train": {"seed": 3, "updates": updates, "episode": "2ms", "checkpoint_every": 1},
        "scenario": [{"name": "adpg-m2o-2", "overrides": ['workload[0].start=["0us", "20us"]']}],
        "ppo": {"rollout_length": 16, "rollouts_per_update": 2},
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PPO run folder after 2 updates, a kept checkpoint after each."""
    run = tmp_path_factory.mktemp("train") / "run"
    ppo.train_from_config(_config(2), run, progress=False)
    return run


def _copy_run(trained: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    return run


def _history(run: Path) -> list[int]:
    return [json.loads(line)["update"] for line in (run / "history.jsonl").read_text().splitlines()]


def test_torn_last_history_line_is_dropped_on_resume(trained: Path, tmp_path: Path) -> None:
    run = _copy_run(trained, tmp_path)
    with open(run / "history.jsonl", "a") as f:  # what a kill during the append leaves
        f.write('{"update": 3, "policy_lo')
    with pytest.warns(ccgym.CorruptFileWarning, match=r"history\.jsonl: the last line \(3\)"):
        result = ppo.train_from_config(_config(3), run, resume=True, progress=False)
    assert result["updates"] == 3
    assert _history(run) == [1, 2, 3]


def test_damaged_history_line_before_the_last_is_named(trained: Path, tmp_path: Path) -> None:
    run = _copy_run(trained, tmp_path)
    lines = (run / "history.jsonl").read_text().splitlines()
    (run / "history.jsonl").write_text("\n".join(["{oops", *lines[1:]]) + "\n")
    with pytest.raises(ccgym.CorruptFileError, match=r"history\.jsonl: line 1 is not"):
        ppo.train_from_config(_config(3), run, resume=True, progress=False)


def test_truncated_checkpoint_falls_back_to_the_newest_good_one(
    trained: Path, tmp_path: Path
) -> None:
    run = _copy_run(trained, tmp_path)
    latest = run / "checkpoint.pt"
    latest.write_bytes(latest.read_bytes()[: latest.stat().st_size // 2])
    (newest,) = (run / "checkpoints").glob("ckpt-u00002-*.pt")
    newest.write_bytes(b"")  # the newest kept one is damaged too: the one before it is used
    with pytest.warns(ccgym.CorruptFileWarning, match=r"checkpoint\.pt is damaged.*ckpt-u00001"):
        result = ppo.train_from_config(_config(2), run, resume=True, progress=False)
    assert result["updates"] == 2  # update 2 done again from the checkpoint of update 1
    assert _history(run) == [1, 2]
    assert loop.read_checkpoint(latest)["update"] == 2


def test_missing_latest_checkpoint_resumes_from_the_newest_kept_one(
    trained: Path, tmp_path: Path
) -> None:
    run = _copy_run(trained, tmp_path)
    (run / "checkpoint.pt").unlink()
    with pytest.warns(ccgym.CorruptFileWarning, match=r"checkpoint\.pt is missing.*ckpt-u00002"):
        result = ppo.train_from_config(_config(3), run, resume=True, progress=False)
    assert result["updates"] == 3 and _history(run) == [1, 2, 3]


def test_no_good_checkpoint_is_a_clear_error(trained: Path, tmp_path: Path) -> None:
    run = _copy_run(trained, tmp_path)
    for path in [run / "checkpoint.pt", *(run / "checkpoints").glob("*.pt")]:
        path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ccgym.CorruptFileError, match="without --resume") as err:
        ppo.train_from_config(_config(3), run, resume=True, progress=False)
    assert str(run / "checkpoint.pt") in str(err.value)
    # ccgym export names the file instead of "[Errno 22] Invalid argument"
    with pytest.raises(ccgym.CorruptFileError, match=f"checkpoint {run / 'checkpoint.pt'} is"):
        ppo.export_checkpoint(run / "checkpoint.pt")
    assert main(["export", str(run / "checkpoint.pt"), "--out", str(tmp_path / "p.json")]) == 2


def test_export_of_a_missing_checkpoint_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No such file, or a folder: one line naming the path, not an errno or a torch error."""
    for path in (tmp_path / "nowhere.pt", tmp_path):
        with pytest.raises(FileNotFoundError, match=f"checkpoint not found: {path}$"):
            loop.read_checkpoint(path)
        assert main(["export", str(path), "--out", str(tmp_path / "p.json")]) == 2
        assert capsys.readouterr().err.strip() == f"error: checkpoint not found: {path}"


def test_export_of_a_file_that_is_not_a_checkpoint_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A training config given by mistake is "not a checkpoint", not a "damaged" one."""
    path = tmp_path / "tiny.toml"
    path.write_text("[train]\nepisodes = 2\n")
    with pytest.raises(ccgym.CorruptFileError, match="is not a ccgym training checkpoint"):
        loop.read_checkpoint(path)
    assert main(["export", str(path), "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path} is not a ccgym training checkpoint") and "\n" not in err
    assert "damaged" not in err


def test_checkpoint_write_is_atomic(
    trained: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save cut short (here torch.save failing half-way) leaves the previous checkpoint
    whole and no temporary file behind."""
    run = _copy_run(trained, tmp_path)
    latest = run / "checkpoint.pt"
    before = latest.read_bytes()

    def torn_save(obj: Any, f: Any) -> None:
        f.write(before[:100])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(loop.torch, "save", torn_save)
    with pytest.raises(OSError, match="No space"):
        loop.save_atomic(latest, {"update": 3})
    assert latest.read_bytes() == before
    assert sorted(p.name for p in run.iterdir() if "tmp" in p.name) == []
