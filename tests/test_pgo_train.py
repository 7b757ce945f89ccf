"""The profile-guided build's training runs (scripts/pgo_train.py) reach every CC: code no run
reaches is laid out as cold and would run slower than in a plain build."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ccgym.bench.runner import load_suite
from ccgym.perf import FABRIC_SUITE
from ccgym.runner import native

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "pgo_train.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("pgo_train", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_training_runs_reach_every_cc() -> None:
    script = _load_script()
    labels = [label for label, _ in script._runs()]
    fabric_methods = set(load_suite(FABRIC_SUITE).get("presets") or {})
    for cc, _, _ in native().cc_catalogue():
        if cc == "agent":
            assert any(label.startswith("adpg ") for label in labels)
        elif cc in script._NOT_ON_INCAST:
            assert cc in fabric_methods and f"fabric {cc}" in labels, cc
        else:
            assert f"incast 16 {cc}" in labels, cc
    # The structures that only large networks use: the calendar of pending hops and the
    # deeper prefetch chain of networks from 4,096 ports.
    assert any(label.startswith("fat-tree-16 ") for label in labels)
    assert any(label.startswith("fat-tree-8 ") for label in labels)
