"""The agent defaults and names exported by the core (``ccgym._sim``) agree with the Python
copies that still exist (``AGENT_DEFAULTS`` and ``neutral_action`` in ``ccgym.env.bridge``, the
bridge reward list of the PPO trainer), so the copies can be replaced by the exports safely."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ccgym import _sim
from ccgym.agents.ppo import BRIDGE_REWARDS
from ccgym.env.bridge import AGENT_DEFAULTS, neutral_action

_PS = {"ps": 1, "ns": 10**3, "us": 10**6, "ms": 10**9, "s": 10**12}


def _ps(value: object) -> int:
    """A scenario duration ("10us", "8.192us", 1e-6) in picoseconds."""
    if isinstance(value, (int, float)):
        return round(value * 10**12)
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(ps|ns|us|ms|s)\s*", str(value))
    assert m, f"not a duration: {value!r}"
    return round(float(m.group(1)) * _PS[m.group(2)])


DURATIONS = {"interval", "policy_delay", "rtt_norm", "probe_timeout"}


def test_exported_defaults_cover_and_agree_with_python_agent_defaults() -> None:
    core = _sim.agent_defaults()
    assert isinstance(core, dict)
    for key, value in AGENT_DEFAULTS.items():
        assert key in core, f"{key} is not a field of the core's [agent] table"
        if key in DURATIONS:
            assert _ps(core[key]) == _ps(value), key
        else:
            assert core[key] == value, key


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
    assert {"multiplier", "aurora", "discrete", "rate", "window", "per_ack"} == set(actions)
    assert AGENT_DEFAULTS["trigger"] in _sim.agent_trigger_names()
    assert set(_sim.agent_trigger_names()) == {"probe", "acks", "interval"}


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
