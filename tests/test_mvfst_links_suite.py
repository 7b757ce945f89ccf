"""The mvfst-links and mvfst-history bench tables (python/ccgym/bench/mvfst_links.py;
docs/mvfst.md): the scores of a run, the weighted percentile, the method names, the tables'
registration."""

from __future__ import annotations

import numpy as np
import pytest

from ccgym.bench import mvfst_links as mvfst
from ccgym.bench.tables import table_spec

LINK = {  # a 2.64 Mb/s, 88 ms one-way, 130-packet link (the Mexico cellular link's numbers)
    "duration": "4s",
    "topology": {
        "kind": "dumbbell", "left": 1, "right": 1, "link_rate": "1Gbps", "link_delay": "0us",
        "bottleneck_rate": "2.64Mbps", "bottleneck_delay": "88ms",
    },
    "switch": {"queue_cap": "195000B", "ecn": {"enabled": False}, "pfc": {"enabled": False}},
    "host": {"loss_recovery": "tcp", "rto": "1s", "rto_min": "200ms", "max_outstanding": 0},
    "packets": {"payload": 1460, "header": 40},
    "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1}]}],
}  # fmt: skip


def test_weighted_percentile() -> None:
    v = np.array([5.0, 1.0, 3.0, 2.0])
    assert mvfst.weighted_percentile(v, np.ones(4), 0.5) == 2.0
    assert mvfst.weighted_percentile(v, np.array([0.0, 0.0, 0.0, 1.0]), 0.95) == 2.0
    assert mvfst.weighted_percentile(v, np.array([1.0, 1.0, 1.0, 97.0]), 0.95) == 2.0
    assert mvfst.weighted_percentile(v, np.array([10.0, 1.0, 1.0, 1.0]), 0.95) == 5.0
    assert np.isnan(mvfst.weighted_percentile(v, np.zeros(4), 0.5))


def test_scores_of_a_cubic_run_fill_the_queue() -> None:
    """CUBIC keeps the drop-tail queue of a 2.64 Mb/s link near full: the link runs near its
    rate and the p95 one-way delay is the base delay plus about a full queue's drain time."""
    import ccgym

    result = ccgym.run(LINK, cc="cubic")
    s = mvfst.scores(result)
    assert 2.0 < s["thr_mbps"] <= 2.64 + 1e-9
    full_queue_ms = 195000 * 8 / 2.64e6 * 1e3  # 591 ms
    base_ms = 88.0 + 1500 * 8 / 2.64e6 * 1e3  # one way: propagation and one serialisation
    assert base_ms + 0.5 * full_queue_ms < s["delay_p95_ms"] < base_ms + full_queue_ms + 20
    assert s["loss_pct"] > 0 and 0 < s["goodput_mbps"] <= s["thr_mbps"]
    # A delay the simulator recorded per packet wins over the approximation.
    result.summary["flows"]["one_way_delay_ms"] = {"p95": 123.0}
    assert mvfst.scores(result)["delay_p95_ms"] == 123.0


def test_history_method_names() -> None:
    assert mvfst.history_method("k20-lstm") == (20, True)
    assert mvfst.history_method("k0-fc") == (0, False)
    with pytest.raises(ValueError, match="k<K>-lstm"):
        mvfst.history_method("k-lstm")
    from ccgym.train.config import CONFIG_DIR

    if not (CONFIG_DIR / "mvfst-default.toml").is_file():
        pytest.skip("the mvfst-default config comes with the MVFST-RL environment (agent.preset)")
    cfg = mvfst.history_config("mvfst-mexico-cellular", ["seed=3"], "k1-fc", env_steps=100)
    assert cfg["agent"]["action_history"] == 1 and cfg["network"]["lstm"] is False
    assert cfg["train"]["seed"] == 3 and cfg["train"]["env_steps"] == 100
    assert cfg["scenario"] == [
        {"label": "mvfst-mexico-cellular", "name": "mvfst-mexico-cellular", "overrides": []}
    ]


def test_tables_are_registered() -> None:
    assert [c[0] for c in table_spec("mvfst-links").columns] == [
        "thr_mbps", "delay_p95_ms", "loss_pct",
    ]  # fmt: skip
    assert "reward_last" in table_spec("mvfst-history").metrics


def test_the_log_utility_config_trains_on_the_five_links_with_a_centred_reward() -> None:
    from ccgym.env import CcFlowEnv
    from ccgym.train.config import CONFIG_DIR, read_config

    path = CONFIG_DIR / "mvfst-log-utility.toml"
    if not path.is_file():
        pytest.skip("the log-utility config comes with the MVFST-RL environment")
    cfg = read_config(path)
    base = read_config(CONFIG_DIR / "mvfst-default.toml")
    assert [s["name"] for s in cfg["scenario"]] == [s["name"] for s in base["scenario"]]
    agent = cfg["agent"]
    assert agent["reward"] == "log_utility" and agent["reward_offset"] == 9.0
    env = CcFlowEnv("mvfst-mexico-cellular", overrides=["duration=3s"], agent=agent, seed=1)
    env.reset(seed=1)
    rewards = []
    for _ in range(20):
        _, r, term, trunc, _ = env.step(0)
        rewards.append(r)
        if term or trunc:
            break
    # ln(2.64 Mb/s / line rate) is about -6 before queueing: offset and scale centre it.
    assert all(np.isfinite(rewards)) and -60.0 < float(np.mean(rewards)) < 60.0


def test_a_policer_s_drops_do_not_count_as_throughput() -> None:
    """A line-rate sender through a 1 Mb/s policer on the 2.64 Mb/s link: the bottleneck port
    runs at its rate and the policer discards most of it; the link's throughput is what the
    policer let through (about its rate), not what the port sent."""
    import ccgym

    policed = {
        **LINK,
        "link": [{"from": "left", "to": "right", "policer": {"rate": "1Mbps", "burst": "15KB"}}],
    }
    result = ccgym.run(policed, cc="line_rate")
    assert result.summary["bottleneck"]["utilization"] > 0.99  # the port ran at 2.64 Mb/s
    s = mvfst.scores(result)
    assert 0.95 < s["thr_mbps"] < 1.1
    # Without a policer the same sender is credited with the port's rate.
    assert abs(mvfst.scores(ccgym.run(LINK, cc="line_rate"))["thr_mbps"] - 2.64) < 0.01


def test_the_history_suite_reads_env_steps_into_its_jobs_and_cache_keys(
    tmp_path, monkeypatch
) -> None:
    """mvfst-history's step count is the suite file's env_steps (default HISTORY_ENV_STEPS),
    handed to each training and part of its cache key: a short run is never reused by a full
    one. Other tables refuse the key. (No training runs here.)"""
    from ccgym import ScenarioError
    from ccgym.bench import runner

    bundled = (runner.SUITE_DIR / "mvfst-history.toml").read_text()
    short = tmp_path / "short.toml"
    short.write_text("env_steps = 5000\nseeds = [1]\n" + bundled.replace("seeds = [1, 2]\n", ""))
    full = runner.load_suite("mvfst-history")
    assert full["settings"] == {"env_steps": mvfst.HISTORY_ENV_STEPS}
    cut = runner.load_suite(short)
    assert cut["settings"] == {"env_steps": 5000}
    full_jobs = {(j.method, j.seed): j for j in runner.suite_jobs(full)}
    for job in runner.suite_jobs(cut):
        assert job.settings == {"env_steps": 5000}
        assert job.key != full_jobs[(job.method, job.seed)].key
    # the default follows the constant (read when the suite is loaded), and so does the key
    monkeypatch.setattr(mvfst, "HISTORY_ENV_STEPS", 5000)
    patched = runner.suite_jobs(runner.load_suite("mvfst-history"))
    assert patched[0].key == runner.suite_jobs(cut)[0].key != full_jobs[(patched[0].method, 1)].key
    # the job hands the count to the training
    seen = {}

    def fake(scenario, overrides, method, env_steps=None):
        seen["env_steps"] = env_steps
        return {"metrics": {}}

    monkeypatch.setattr(mvfst, "run_history_job", fake)
    job = runner.suite_jobs(cut)[0]
    runner.run_job(*runner._job_args(job))
    assert seen == {"env_steps": 5000}
    # another table, or a count below 1, is refused
    other = tmp_path / "other.toml"
    other.write_text(
        'env_steps = 5\nmethods = ["cubic"]\n[[scenario]]\nscenario = "dumbbell-wan"\n'
    )
    with pytest.raises(ScenarioError, match="read by table 'mvfst-history' only"):
        runner.load_suite(other)
    short.write_text(short.read_text().replace("env_steps = 5000", "env_steps = 0"))
    with pytest.raises(ScenarioError, match="env_steps must be an integer >= 1"):
        runner.load_suite(short)
