"""The agent defaults and names exported by the core (``ccgym._sim``): what Python reads through
``ccgym.agent_defaults``, and the bundled ``[agent]`` tables use only keys the core knows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from ccgym import _sim
from ccgym.agent_defaults import AGENT_DEFAULTS, BRIDGE_REWARDS, QUEUE_FEATURES, neutral_action
from ccgym.scenario import tomllib  # tomli on Python 3.10

_PS = {"ps": 1, "ns": 10**3, "us": 10**6, "ms": 10**9, "s": 10**12}


def _ps(value: object) -> int:
    """A scenario duration ("10us", "8.192us", 1e-6) in picoseconds."""
    if isinstance(value, (int, float)):
        return round(value * 10**12)
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(ps|ns|us|ms|s)\s*", str(value))
    assert m, f"not a duration: {value!r}"
    return round(float(m.group(1)) * _PS[m.group(2)])


PACKAGE = Path(__file__).resolve().parents[1] / "python" / "ccgym"


def _bundled_agent_tables() -> list[tuple[str, dict]]:
    tables = []
    for path in sorted((PACKAGE / "configs").glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for key in ("agent", "deploy_agent"):
            if isinstance(data.get(key), dict):
                tables.append((f"{path.name} [{key}]", data[key]))
    for path in sorted((PACKAGE / "policies").glob("*.json")):
        meta = json.loads(path.read_text(encoding="utf-8")).get("meta") or {}
        if isinstance(meta.get("agent"), dict):
            tables.append((f"{path.name} meta.agent", meta["agent"]))
    return tables


def test_python_reads_the_core_defaults() -> None:
    assert AGENT_DEFAULTS == _sim.agent_defaults()
    assert AGENT_DEFAULTS["action"] == "multiplier"
    assert AGENT_DEFAULTS["trigger"] == "probe"
    assert AGENT_DEFAULTS["discrete"] == [0.8, 0.95, 1.0, 1.05, 1.1, 1.2]


def test_bundled_agent_tables_use_only_core_keys() -> None:
    tables = _bundled_agent_tables()
    assert tables, "expected [agent] tables in the bundled configs and policies"
    for where, table in tables:
        unknown = sorted(set(table) - set(AGENT_DEFAULTS))
        assert not unknown, f"{where}: keys the core does not know: {unknown}"


def test_exported_durations_read_back_exactly() -> None:
    core = _sim.agent_defaults()
    assert _ps(core["interval"]) == 10 * 10**6
    assert _ps(core["rtt_norm"]) == 8192 * 10**3
    assert _ps(core["probe_timeout"]) == 10**9


def test_exported_names() -> None:
    assert tuple(_sim.agent_reward_names()) == BRIDGE_REWARDS
    features = _sim.agent_feature_names()
    assert {"action", "adpg", "rtt_inflation", "rate"} <= set(features)
    assert len(features) == len(set(features))
    for name in AGENT_DEFAULTS["features"]:
        assert name in features
    actions = _sim.agent_action_names()
    assert AGENT_DEFAULTS["action"] in actions
    known = {"multiplier", "aurora", "discrete", "rate", "window", "per_ack", "mvfst"}
    assert known == set(actions)
    assert AGENT_DEFAULTS["trigger"] in _sim.agent_trigger_names()
    assert set(_sim.agent_trigger_names()) == {"probe", "acks", "interval"}


def test_exported_queue_agent_features() -> None:
    assert QUEUE_FEATURES == tuple(_sim.agent_queue_feature_names())
    assert set(QUEUE_FEATURES) == {
        "queue",
        "mean_queue",
        "max_queue",
        "tx_rate",
        "marked_rate",
        "drop_rate",
        "ecn_profile",
    }


@pytest.mark.parametrize("action", ["multiplier", "aurora", "discrete", "rate"])
def test_python_neutral_action_matches_the_defaults_it_reads(action: str) -> None:
    cfg = dict(_sim.agent_defaults())
    cfg["action"] = action
    got = neutral_action(cfg)
    if action == "discrete":
        assert got == float(np.argmin(np.abs(np.asarray(cfg["discrete"]) - 1.0)))
    elif action == "rate":
        assert np.isnan(got)
    else:
        assert got == 0.0


def test_aurora_bound_is_the_cores() -> None:
    from ccgym.agent_defaults import AURORA_ACTION_BOUND
    from ccgym.env.spaces import action_space

    assert AURORA_ACTION_BOUND == _sim.AURORA_ACTION_BOUND == 1e6
    space = action_space({**AGENT_DEFAULTS, "action": "aurora"})
    assert float(space.high[0]) == pytest.approx(_sim.AURORA_ACTION_BOUND)
    assert float(space.low[0]) == pytest.approx(-_sim.AURORA_ACTION_BOUND)


@pytest.mark.parametrize(
    ("steps", "neutral"), [([10, 0, -1], 1), (["reno", 3, -5], 1), (["reno"], 0), ([-2, 5], 0)]
)
def test_per_ack_neutral_is_the_fixed_step_closest_to_zero(steps: list, neutral: int) -> None:
    # As the core's AgentSpec::neutral_action: the rule that changes the window least.
    assert neutral_action({"action": "per_ack", "per_ack": steps}) == neutral


def test_window_has_no_neutral_value() -> None:
    assert np.isnan(neutral_action({"action": "window"}))
