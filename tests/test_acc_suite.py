"""The ``acc`` bench suite (ccgym.bench.acc_suite), cut down: every method of the bundled suite
on a 4 ms WebSearch run, one seed; and the oracle table's lookups."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

pytest.importorskip("ccgym._sim")

from ccgym.acc.templates import GRID, grid_index  # noqa: E402
from ccgym.bench import acc_suite  # noqa: E402
from ccgym.bench.report import write_report  # noqa: E402
from ccgym.bench.runner import load_suite, run_suite  # noqa: E402
from ccgym.bench.tables import build_rows, markdown_table, table_spec  # noqa: E402

SUITE = Path(acc_suite.__file__).parent / "suites" / "acc.toml"


def test_oracle_templates_are_grid_templates() -> None:
    names = {t.name for t in GRID}
    assert set(acc_suite.ORACLE_TEMPLATES.values()) <= names
    assert acc_suite.oracle_template({"name": "acc-websearch", "workload": [{"load": 0.7}]}) == (
        "20K-160K-5%"
    )
    assert acc_suite.oracle_template({"name": "acc-switch-workload", "workload": [{}]}) == (
        "40K-80K-5%"
    )
    with pytest.raises(ValueError, match="no oracle for acc-websearch at load 0.4"):
        acc_suite.oracle_template({"name": "acc-websearch", "workload": [{"load": 0.4}]})


def test_cut_down_acc_suite_runs_every_method(tmp_path: Path) -> None:
    suite = tomllib.loads(SUITE.read_text())
    suite["seeds"] = [1]
    suite["overrides"] = ["duration=4ms", "metrics.window=['1ms', '4ms']"]
    suite["scenario"] = suite["scenario"][:1]  # websearch 0.5
    path = tmp_path / "acc-tiny.toml"
    path.write_text(_toml(suite))
    loaded = load_suite(path)
    records, stats = run_suite(loaded, tmp_path / "out", jobs=1)
    methods = [r["method"] for r in records]
    assert methods == loaded["methods"] and stats.ran == len(methods) == 8
    by = {r["method"]: r["metrics"] for r in records}
    oracle = grid_index(acc_suite.ORACLE_TEMPLATES[("acc-websearch", 0.5)])
    assert by["static oracle"]["oracle_index"] == oracle
    # stepped from Python: 32 switch ports, one decision per 100 us from 0.1 ms to 3.9 ms
    assert by["ACC online"]["decisions"] == 32 * 39
    for name in ("ACC offline", "ACC offline, ADPG hosts"):  # native: no decision count
        assert by[name]["decisions"] is None, name
    for name in ("ACC offline", "ACC online", "ACC offline, ADPG hosts"):
        assert 0 <= by[name]["template_mean"] < len(GRID), name
        assert by[name]["mice_p99_us"] is not None and by[name]["util"] > 0
    assert by["SECN1, ADPG hosts"]["util"] > 0
    spec = table_spec("acc")
    rows = build_rows(records, spec=spec)
    text = markdown_table(rows, "acc", spec)
    assert "ACC offline: vs best preset" in text and "vs oracle" in text
    assert "the bar" in text
    _, again = run_suite(loaded, tmp_path / "out", jobs=1)
    assert again.ran == 0
    # the report draws the ECN settings over time of the ACC runs (and only theirs)
    page = write_report(loaded, records, tmp_path / "out").read_text()
    section = page.split("ECN settings over time per switch tier", 1)[1].split("<h2>", 1)[0]
    assert section.count("<figure>") == 3
    assert "websearch 0.5 · ACC offline · seed 1" in section and "SECN1 ·" not in section


def test_native_acc_offline_equals_the_python_driver() -> None:
    """The ACC offline rows run natively; the same run stepped from Python (the greedy
    Q-network) gives the same metrics."""
    import ccgym
    from ccgym.acc.training import run_policy
    from ccgym.bench.acc import scores
    from ccgym.scenario import load_scenario

    data, base = load_scenario("acc-websearch", ["duration=2ms", "metrics.window=['0.5ms', '2ms']"])
    native = ccgym.run(acc_suite.native_scenario(data, base))
    stepped, _ = run_policy(acc_suite.ACC_POLICY, data)
    got = scores(native.summary, native.series)
    assert got == {k: stepped.metrics[k] for k in got}
    assert acc_suite.ecn_template_mean(native.series) is not None


def test_cache_key_follows_the_policy_file_contents(tmp_path: Path) -> None:
    """A policy retrained under the same path gives its runs a new cache key."""
    from ccgym import policies
    from ccgym.bench.runner import run_key

    path = tmp_path / "acc.json"
    path.write_bytes(policies.policy_path(acc_suite.ACC_POLICY).read_bytes())
    data = {"name": "acc-websearch", "agent": {"queue_policy": str(path)}}
    first = run_key(data, "dcqcn", 1)
    assert run_key(data, "dcqcn", 1) == first
    path.write_bytes(path.read_bytes().replace(b"]", b" ]", 1))  # same JSON, other bytes
    assert run_key(data, "dcqcn", 1) != first


def _toml(d: dict) -> str:
    """A small TOML writer for the suite dict (strings, numbers, lists, tables of tables)."""

    def val(v: object) -> str:
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return repr(v)

    lines = [
        f"{k} = {val(v)}"
        for k, v in d.items()
        if not isinstance(v, (dict, list))
        or (isinstance(v, list) and not any(isinstance(x, dict) for x in v))
    ]
    for name, table in d.get("methods", {}).items():
        lines.append(f'[methods."{name}"]')
        lines += [f"{k} = {val(v)}" for k, v in table.items()]
    for sc in d["scenario"]:
        lines.append("[[scenario]]")
        lines += [f"{k} = {val(v)}" for k, v in sc.items()]
    return "\n".join(lines) + "\n"


def test_the_bar_needs_a_static_method() -> None:
    row = {"method": "ACC offline", "mice_mean_us": 9.0, "mice_p99_us": 40.0, "util": 20.0}
    assert acc_suite._bar(row, [], None) == "no static method to compare with"
    secn1 = {"method": "SECN1", "mice_mean_us": 9.5, "mice_p99_us": 39.0, "util": 20.0}
    assert acc_suite._bar(row, [secn1], None) == "misses the bar: mice_p99 above SECN1"
    assert acc_suite._bar(row, [{**secn1, "mice_p99_us": 41.0}], None) == "meets the bar"


@pytest.mark.parametrize("name", ["acc", "acc-fattree"])
def test_suite_files_load_and_every_scenario_has_an_oracle(name: str) -> None:
    """The acc suite and its fat-tree companion: the file loads, its methods resolve to the
    presets, the oracle and the ACC rows, and every scenario's static oracle is in
    ORACLE_TEMPLATES (a missing entry would fail only at run time, minutes in)."""
    from ccgym.scenario import load_scenario

    suite = load_suite(name)
    assert suite["table"] == "acc"
    assert suite["methods"][:5] == ["SECN0", "SECN1", "SECN2", "static oracle", "ACC offline"]
    names = {t.name for t in GRID}
    for sc in suite["scenario"]:
        data, _ = load_scenario(sc["scenario"], list(sc.get("overrides") or []))
        assert acc_suite.oracle_template(data) in names, sc["label"]
    labels = [sc["label"] for sc in suite["scenario"]]
    if name == "acc":
        assert {"incast 8x32", "incast 15x8"} <= set(labels)
    else:
        assert all(label.startswith("fattree") for label in labels) and len(labels) == 4


def _fixed_template_policy(path: Path, index: int) -> Path:
    """A copy of acc-default whose greedy choice is always template ``index`` (last layer:
    weights zero, bias one-hot)."""
    import json

    from ccgym import policies

    pol = json.loads(policies.policy_path(acc_suite.ACC_POLICY).read_text())
    last = pol["layers"][-1]
    last["weight"] = [[0.0] * len(row) for row in last["weight"]]
    last["bias"] = [10.0 if i == index else 0.0 for i in range(len(last["bias"]))]
    path.write_text(json.dumps(pol))
    return path


def test_acc_methods_are_declared_and_run_their_own_policy(tmp_path: Path) -> None:
    """A method is an ACC method by ``acc = "offline"|"online"``, not by a name starting with
    "ACC"; an ACC method runs the queue policy its overrides give (here one that always picks
    template 3), not always the bundled acc-default."""
    from ccgym import ScenarioError

    mine = _fixed_template_policy(tmp_path / "mine.json", 3)
    text = f"""
name = "acc-mine"
seeds = [1]
table = "acc"
overrides = ["duration=2ms", "metrics.window=['0.5ms', '2ms']"]

[methods."ACC mine"]
cc = "dcqcn"
acc = "offline"
overrides = ["agent.queue_policy={mine}"]

[methods."ACC mine online"]
cc = "dcqcn"
acc = "online"
overrides = ["agent.queue_policy={mine}"]

[methods."ACC offline"]
cc = "dcqcn"
acc = "offline"

[methods."ACC by name only"]
cc = "dcqcn"

[[scenario]]
label = "websearch 0.5"
scenario = "acc-websearch"
overrides = ["workload[0].load=0.5"]
"""
    path = tmp_path / "suite.toml"
    path.write_text(text)
    suite = load_suite(path)
    records, _ = run_suite(suite, tmp_path / "out", jobs=1)
    by = {r["method"]: r for r in records}
    assert by["ACC mine"]["acc"] == "offline" and by["ACC mine online"]["acc"] == "online"
    assert by["ACC mine"]["acc_policy"] == by["ACC mine online"]["acc_policy"] == str(mine)
    assert by["ACC offline"]["acc_policy"].endswith("acc-default.json")
    # (time-weighted: before the first decision, at 0.1 ms, the scenario's own ECN is in force)
    assert by["ACC mine"]["metrics"]["template_mean"] == pytest.approx(3.0, abs=0.15)
    assert by["ACC mine online"]["metrics"]["decisions"] > 0
    assert by["ACC offline"]["metrics"]["template_mean"] != pytest.approx(3.0, abs=0.15)
    assert "acc" not in by["ACC by name only"]  # static ECN: its name is only a label
    assert "template_mean" not in by["ACC by name only"]["metrics"]
    assert len({r["key"] for r in records}) == 4
    rows = build_rows(records, spec=table_spec("acc"))
    notes = "\n".join(table_spec("acc").notes(rows))
    assert "ACC mine:" in notes and "ACC offline:" in notes and "ACC by name only:" not in notes

    path.write_text(text.replace('acc = "online"', 'acc = "greedy"'))
    with pytest.raises(ScenarioError, match='acc in methods.ACC mine online must be "offline"'):
        load_suite(path)
    path.write_text(text.replace('table = "acc"', 'table = "standard"'))
    with pytest.raises(ScenarioError, match='in table "acc" only'):
        load_suite(path)
