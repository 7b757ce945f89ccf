"""Issue 16, classes 7 and 8, for the files and options the Python layer reads.

* Suite files are strict: an unknown key (a typo in ``overrides`` used to run the default
  protocol) or a value of the wrong type is an error naming the file, the table and the key.
* Decode errors in suite, training config and policy files name the file, with the line and
  column where the parser gives them.
* Empty path options (``--out ''`` used to write into the current directory) are refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccgym._errors import ScenarioError
from ccgym.bench.runner import load_suite
from ccgym.cli import main

SUITE = """
name = "strict"
methods = ["dcqcn"]
{top}

[[scenario]]
scenario = "adpg-m2o-2"
{scenario}
"""


def _suite(tmp_path: Path, top: str = "", scenario: str = "") -> Path:
    path = tmp_path / "strict.toml"
    path.write_text(SUITE.format(top=top, scenario=scenario))
    return path


def test_a_suite_without_mistakes_loads(tmp_path: Path) -> None:
    top = 'description = "d"\nseeds = [1, 2]\noverrides = ["duration=1ms"]\ntable = "standard"'
    suite = load_suite(_suite(tmp_path, top, 'label = "l"\noverrides = []\npublished = "x"'))
    assert suite["seeds"] == [1, 2] and suite["scenario"][0]["label"] == "l"


@pytest.mark.parametrize(
    ("top", "scenario", "message"),
    [
        (
            'overides = ["duration=1ms"]',
            "",
            r"unknown key 'overides' in the top level \(did you mean 'overrides'\?\)",
        ),
        (
            "",
            'overides = ["duration=1ms"]',
            r"unknown key 'overides' in scenario\[0\] \(did you mean 'overrides'\?\)",
        ),
        ("", 'lable = "x"', r"unknown key 'lable' in scenario\[0\] \(did you mean 'label'\?\)"),
        ("colour = 3", "", r"unknown key 'colour' in the top level; known keys: name,"),
        (
            'overrides = "duration=1ms"',
            "",
            r"overrides in the top level must be a list of KEY=VALUE strings",
        ),
        ("", "overrides = [1]", r"overrides in scenario\[0\] must be a list of KEY=VALUE"),
        ("", "published = 3", r"published in scenario\[0\] must be a string"),
    ],
    ids=[
        "top-typo",
        "scenario-typo",
        "label-typo",
        "unknown",
        "str-overrides",
        "int-override",
        "int-published",
    ],
)
def test_suite_mistakes_are_named(tmp_path: Path, top: str, scenario: str, message: str) -> None:
    path = _suite(tmp_path, top, scenario)
    with pytest.raises(ScenarioError, match=message) as err:
        load_suite(path)
    assert str(err.value).startswith(f"{path}: ")


def test_bench_cli_rejects_a_suite_typo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _suite(tmp_path, "", 'overides = ["cc.algorithm=hpcc"]')
    assert main(["bench", "--suite", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "unknown key 'overides' in scenario[0]" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing ran


# --------------------------------------------------------------------------- decode errors

NOT_UTF8 = b'name = "x"\nmethods = [\xff]\n'


def test_suite_decode_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_bytes(NOT_UTF8)
    with pytest.raises(ScenarioError, match=r"s\.toml: not UTF-8 text \(byte 0xff at line 2, col"):
        load_suite(path)
    path.write_text('methods = ["dcqcn"]\nseeds = [1,,]\n')
    with pytest.raises(ScenarioError, match=r"s\.toml: invalid TOML: .*\(at line 2, column 12\)"):
        load_suite(path)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("c.toml", NOT_UTF8, r"not UTF-8 text \(byte 0xff at line 2, column 12\)"),
        ("c.toml", b"[train]\nupdates = \n", r"invalid TOML: .*\(at line 2, column 11\)"),
        ("c.json", b'{"train": {"updates": 3,}}', r"invalid JSON: .*\(at line 1, column 25\)"),
        ("c.json", b"[1, 2]", "holds a list, not a table of tables"),
    ],
    ids=["not-utf8", "bad-toml", "bad-json", "json-list"],
)
def test_training_config_decode_errors_name_the_file(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    from ccgym.train.config import read_config

    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ScenarioError, match=f"training config {path}: {message}"):
        read_config(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"format": "ccgym-mlp", "layers": [', r"invalid JSON: .*\(at line 1, column 36\)"),
        (b'{"format": "ccgym-mlp",\n "x": "\xff"}', r"not UTF-8 text \(byte 0xff at line 2,"),
        (b"[1]", "holds a JSON list, not an object"),
        (b'{"format": "ccgym-mlp", "version": 1, "layers": [1]}', "layer 0: not an object"),
        (b'{"format": "other"}', "not a ccgym-mlp v1 policy"),
    ],
    ids=["bad-json", "not-utf8", "json-list", "bad-layer", "other-format"],
)
def test_policy_decode_errors_name_the_file(
    tmp_path: Path, content: bytes, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from ccgym import policies

    path = tmp_path / "policy.json"
    path.write_bytes(content)
    with pytest.raises(ScenarioError, match=f"policy file {path}: {message}"):
        policies.load_policy(path)
    assert main(["eval", str(path), "adpg-m2o-2", "--quiet"]) == 2
    assert f"error: policy file {path}: " in capsys.readouterr().err


# --------------------------------------------------------------------------- empty paths


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "no-such.toml", "--out", ""],
        ["run", ""],
        ["bench", "--suite", "no-such-suite", "--out", ""],
        ["bench", "--suite", ""],
        ["train", "ppo", "--config", "no-such.toml", "--out", ""],
        ["train", "ppo", "--config", ""],
        ["export", "no-such.pt", "--out", ""],
        ["export", "", "--out", "p.json"],
        ["eval", "no-such.json", "no-such.toml", "--out", ""],
        ["eval", "", "adpg-m2o-2"],
        ["eval", "adpg-default", ""],
        ["export", "no-such.pt", "--out", "p.json", "--calibrate", " "],
    ],
)
def test_empty_paths_are_refused(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # where an empty --out used to write
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "expected a path, got an empty string" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_json_policy_round_trip_still_loads(tmp_path: Path) -> None:
    """The stricter policy loader still reads what save_policy writes."""
    from ccgym import policies

    pol = policies.load_policy("adpg-default")
    path = policies.save_policy(pol, tmp_path / "p.json")
    assert policies.load_policy(path) == json.loads(path.read_text())


# --------------------------------------------------------------------------- results places


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "incast-16", "--set", "duration=1ms"],
        ["eval", "adpg-default", "adpg-m2o-2", "--set", "duration=1ms", "--quiet"],
    ],
    ids=["run", "eval"],
)
def test_a_results_folder_that_cannot_be_made_fails_before_any_run(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main([*argv, "--out", str(blocker / "results")]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ") and str(blocker) in captured.err
    assert captured.out == ""  # no run, so no table


def test_acc_eval_refuses_a_folder_for_its_metrics_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    assert main(["acc-eval", "acc-incast-15x8", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--out names a folder, not a file for the metrics" in err and str(tmp_path) in err


# --------------------------------------------------------------------------- trainer names


def test_an_unknown_trainer_is_a_mistake_naming_the_trainers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["train", "ppo2", "--config", "x.toml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith('error: ccgym train: no trainer "ppo2" (trainers: adpg, aurora, ')
    assert "impala_model" not in err  # a helper module, not a trainer


def test_trainer_names_are_the_modules_with_a_config_trainer() -> None:
    pytest.importorskip("torch")
    import importlib
    import pkgutil

    import ccgym.agents

    found = ccgym.agents.trainer_names()
    for m in pkgutil.iter_modules(ccgym.agents.__path__):
        module = importlib.import_module(f"ccgym.agents.{m.name}")
        assert (m.name in found) == hasattr(module, "train_from_config"), m.name
