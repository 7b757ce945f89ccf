"""MVFST-RL's environment from Python (``agent.preset = "mvfst"``, ``ccgym.env.mvfst``), the
native ``random`` baseline and the ``mvfst-blocking`` suite. The core's side (observation
layout, actions, reward, timing modes) is checked in crates/sim/tests/mvfst_env.rs."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import ccgym
from ccgym import _sim
from ccgym.agent_defaults import expand_preset
from ccgym.bench.mvfst import reference_method
from ccgym.bench.report import write_report
from ccgym.bench.runner import load_suite, run_suite
from ccgym.bench.tables import MVFST_BLOCKING, build_rows
from ccgym.env import AgentPool, mvfst, prepare_scenario
from ccgym.env.spaces import action_space


def mexico(duration: str = "2s") -> dict:
    """A link like MVFST-RL's Mexico cellular one: 2.64 Mb/s, 88 ms one way, 130 packets."""
    return {
        "duration": duration,
        "topology": {
            "kind": "dumbbell",
            "left": 1,
            "right": 1,
            "link_rate": "100Mbps",
            "link_delay": "0s",
            "bottleneck_rate": "2.64Mbps",
            "bottleneck_delay": "88ms",
        },
        "switch": {"queue_cap": "193500B", "ecn": {"enabled": False}, "pfc": {"enabled": False}},
        "host": {"loss_recovery": "tcp", "rto": "1s", "rto_min": "200ms", "max_outstanding": 0},
        "packets": {"payload": 1460, "header": 40},
        "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1}]}],
    }


def test_the_preset_expands_where_the_table_is_silent() -> None:
    table = expand_preset({"preset": "mvfst", "reward_beta": 0.5})
    assert table["action"] == "mvfst" and table["interval"] == "100ms"
    assert table["reward_beta"] == 0.5  # given keys win
    assert table["features"] == ["mvfst_state", "mvfst_history"]
    assert _sim.agent_preset("mvfst")["action_history"] == 20
    with pytest.raises(ValueError, match="known: mvfst"):
        expand_preset({"preset": "quic"})
    data, _ = prepare_scenario(mexico(), agent=mvfst.AGENT)
    assert action_space(data["agent"]) == gym.spaces.Discrete(5)
    assert mvfst.obs_dim(20) == 220 and mvfst.obs_dim(0) == 100
    assert mvfst.FIELDS[6] == "cwnd" and mvfst.AGGREGATES == ("sum", "mean", "std", "min", "max")
    assert mvfst.state_index("cwnd", "mean") == 26
    assert mvfst.history_slice(20) == slice(100, 220)


def test_a_pool_steps_the_environment_with_the_random_driver_policy() -> None:
    pool = AgentPool(mexico(), agent=mvfst.AGENT, seeds=[1], repeat_seeds=False)
    assert pool.obs_dim == 220
    policy = mvfst.random_policy(seed=3)
    cwnd, hist = mvfst.state_index("cwnd", "mean"), mvfst.history_slice(20)
    steps = 0
    while not pool.all_over:
        batch = pool.step()
        req = batch.request
        if req.any():
            obs = batch.obs[req]
            # The window the ACKs saw is never above the largest the history recorded.
            entries = obs[:, hist].reshape(len(obs), 20, 6)
            assert np.all(entries[:, :, :5].sum(axis=2) == 1.0)  # one-hot actions
            assert np.all(obs[:, cwnd] <= entries[:, :, 5].max(axis=1) + 1e-3)
            steps += int(req.sum())
        pool.act(policy(batch.obs))
    # One decision per 100 ms window with ACKs (the first ACK comes after 176 ms).
    assert 15 <= steps <= 19


@pytest.mark.parametrize("duration", ["1s", "1.05s"])
def test_the_truncated_entry_measures_the_interval_since_the_last_decision(duration) -> None:
    # docs/env.md: no decision is asked at the run's end, where it could not act, so the
    # truncated entry closes the last real window: a whole one when the run ends on a window
    # tick (the last request at 0.9 s), a partial one off the tick (the last request at 1.0 s).
    pool = AgentPool(mexico(duration), agent=mvfst.AGENT, seeds=[1], repeat_seeds=False)
    policy = mvfst.random_policy(seed=3)
    state = slice(0, mvfst.STATE_WIDTH)
    while not pool.all_over:
        batch = pool.step()
        if batch.request.any():
            last_request = (float(batch.time_s[batch.request][-1]), batch.obs[batch.request])
        pool.act(policy(batch.obs))
    assert batch.truncated.all() and batch.time_s[0] == pytest.approx(float(duration[:-1]))
    assert np.any(last_request[1][:, state] != 0)
    assert last_request[0] == pytest.approx(0.9 if duration == "1s" else 1.0)
    assert np.any(batch.obs[:, state] != 0) and np.all(batch.reward != 0)


def _random_run(seed: int) -> dict:
    data, _ = prepare_scenario(mexico("3s"), agent={**mvfst.AGENT, "policy": "random"})
    data["seed"] = seed
    return ccgym.run(data).summary["network"]


def test_the_native_random_policy_is_seeded() -> None:
    assert _random_run(1) == _random_run(1)
    assert _random_run(1) != _random_run(2)


def _bias_policy(path: Path, bias: list[float]) -> str:
    """A native MVFST-RL policy whose scores are ``bias`` whatever it observes."""
    layer = {"weight": [[0.0] * mvfst.obs_dim(20)] * 5, "bias": bias, "activation": "none"}
    path.write_text(
        json.dumps({"format": "ccgym-mlp", "version": 1, "output": "none", "layers": [layer]})
    )
    return str(path)


def _policy_run(policy: str, sampling: str, seed: int = 1) -> dict:
    agent = {**mvfst.AGENT, "policy": policy, "policy_sampling": sampling}
    data, _ = prepare_scenario(mexico("3s"), agent=agent)
    data["seed"] = seed
    return ccgym.run(data).summary["network"]


def test_a_sampled_native_policy_draws_from_its_scores(tmp_path: Path) -> None:
    # One score far above the others: sampling picks it every time, as greedy does.
    sure = _bias_policy(tmp_path / "sure.json", [0.0, 0.0, 0.0, 60.0, 0.0])
    assert _policy_run(sure, "sample") == _policy_run(sure, "greedy")
    # Equal scores: greedy always takes index 0 (keep the window); sampling moves it, the
    # same way for the same seed and differently for another.
    flat = _bias_policy(tmp_path / "flat.json", [0.0] * 5)
    sampled = _policy_run(flat, "sample")
    assert sampled != _policy_run(flat, "greedy")
    assert sampled == _policy_run(flat, "sample")
    assert sampled != _policy_run(flat, "sample", seed=2)
    with pytest.raises(ValueError, match="agent.policy_sampling"):
        _policy_run(flat, "softmax")
    with pytest.raises(ValueError, match="agent.policy_sampling"):
        _policy_run("random", "sample")


def test_reference_methods_pair_blocking_with_nonblocking() -> None:
    methods = ["p nonblocking 25ms", "p nonblocking", "p blocking 25ms", "p blocking 50ms", "q"]
    assert reference_method("p blocking 25ms", methods) == "p nonblocking 25ms"
    assert reference_method("p blocking 50ms", methods) == "p nonblocking"
    assert reference_method("q", methods) == "p nonblocking 25ms"
    assert reference_method("p nonblocking", methods) == "p nonblocking"  # its own
    assert reference_method("blocking 25ms", ["nonblocking 25ms", "blocking 25ms"]) == (
        "nonblocking 25ms"
    )


def test_mvfst_blocking_suite_end_to_end(tmp_path: Path) -> None:
    suite = load_suite("mvfst-blocking")
    assert suite["table"] == "mvfst-blocking" and len(suite["methods"]) == 8
    suite["seeds"] = [1]
    # The near-BDP band, where a pause is not hidden by a standing queue.
    suite["methods"] = [m for m in suite["methods"] if m.startswith("near-BDP ")]
    # The constant-rate link: on the Poisson one the random stand-in's seed noise hides the modes.
    suite["scenario"] = [s for s in suite["scenario"] if s["label"].startswith("constant")]
    assert len(suite["scenario"]) == 1
    suite["overrides"] = [o for o in suite["overrides"] if not o.startswith("duration")]
    suite["overrides"].append("duration=6s")
    records, stats = run_suite(suite, tmp_path, jobs=1)
    assert stats.ran == 4
    by = {r["method"]: r for r in build_rows(records, spec=MVFST_BLOCKING)}
    # Blocking loses bytes against the same policy without blocking, 50 ms more than 25 ms.
    b25, b50 = by["near-BDP blocking 25ms"], by["near-BDP blocking 50ms"]
    assert b25["reference"] == "near-BDP nonblocking 25ms"
    assert b50["reference"] == "near-BDP nonblocking 50ms"
    assert 0 < b25["fewer_pct"] < b50["fewer_pct"]
    assert by["near-BDP nonblocking 50ms"]["fewer_pct"] == 0
    assert b50["published"] == [11.4] and by["near-BDP nonblocking 50ms"]["published"] is None
    curve = np.asarray(records[0]["cum_mb"])
    assert curve[-1, 1] == pytest.approx(records[0]["metrics"]["mb"], rel=1e-6)
    assert np.all(np.diff(curve[:, 1]) >= 0)
    report = write_report(suite, records, tmp_path)
    assert "Cumulative bytes" in report.read_text()
