"""Golden results through the Python package: the scenario each case resolves to and its summary.

The core-only half of this check is ``crates/sim/tests/golden.rs``; the cases and how to
regenerate them are in ``tests/golden/cases.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "golden"))

import cases  # noqa: E402


def _differences(want: object, got: object, path: str = "") -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}.{k}: missing" for k in want if k not in got]
        out += [f"{path}.{k}: unexpected" for k in got if k not in want]
        for k in want.keys() & got.keys():
            out += _differences(want[k], got[k], f"{path}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        pairs = enumerate(zip(want, got, strict=True))
        return [d for i, (a, b) in pairs for d in _differences(a, b, f"{path}[{i}]")]
    return [] if want == got else [f"{path}: {want!r} != {got!r}"]


def test_every_case_has_a_golden_file() -> None:
    stored = sorted(p.stem for p in cases.GOLDEN_DIR.glob("*.json"))
    assert stored == sorted(cases.CASES)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_golden_case(name: str) -> None:
    record = json.loads(cases.path(name).read_text(encoding="utf-8"))
    assert record["source"] == json.loads(json.dumps(cases.CASES[name]))
    data = cases.scenario(name)
    assert _differences(record["scenario"], data, "scenario") == []
    fresh = cases.run(name, data)
    diffs = _differences({k: record[k] for k in fresh}, fresh)
    assert diffs == [], "golden results changed (expected != got):\n" + "\n".join(diffs[:20])
