"""Golden results: bundled scenarios whose summaries must not change by accident.

Each case names a bundled scenario, the congestion control or native policy it runs and the
overrides that shorten it. ``python tests/golden/cases.py`` (re)writes ``tests/golden/<case>.json``
with the scenario exactly as the core receives it (paths relative to the repository), the event
count and the summary. Two tests compare fresh runs with these files exactly: the Rust test
``crates/sim/tests/golden.rs`` (core only, from the stored scenario) and ``tests/test_golden.py``
(through the Python package, which must also produce the stored scenario).

A change that alters a golden file is a bug or a deliberate fix; regenerate the files in a commit
of their own that says why (``python tests/golden/cases.py [CASE ...]``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
GOLDEN_DIR = Path(__file__).resolve().parent

# The ADPG scenarios run 200 ms; 12 ms with the window and the stops moved keeps every phase
# (staggered starts at 1-2 ms, convergence, steady state) at a tenth of the cost.
SHORT_ADPG = ["duration=12ms", 'metrics.window=["4ms", "12ms"]', "workload[0].stop=12ms"]

# The WAN dumbbell runs 20 s; 3 s cover slow start and the first loss episodes.
SHORT_WAN = ["duration=3s", 'metrics.window=["1s", "3s"]']

# The MVFST-RL links run 30 s; 2 s cover the start-up and the trace's first changes.
SHORT_MVFST = ["duration=2s", 'metrics.window=["0.5s", "2s"]']

# The receiver-driven scenarios run 100 ms of Poisson arrivals; 3 ms with a 1 ms warm-up.
SHORT_RECEIVER_DRIVEN = ["duration=3ms", 'metrics.window=["1ms", "3ms"]']

CASES: dict[str, dict[str, Any]] = {
    # Lossless switch (PFC), INT, window-based HPCC.
    "incast16-hpcc": {
        "scenario": "incast-16",
        "cc": "hpcc",
        "overrides": ["duration=3ms", 'metrics.window=["1ms", "3ms"]'],
    },
    # Uncontrolled senders into a lossless switch: PFC pauses and resumes.
    "incast16-line-rate-pfc": {
        "scenario": "incast-16",
        "overrides": ["duration=2ms", 'metrics.window=["0.5ms", "2ms"]', "switch.buffer=2MiB"],
    },
    # Lossy switch, ECN at dequeue, CNPs, NACKs with go-back-N: the ADPG benchmark setting.
    "m2o16-dcqcn": {"scenario": "adpg-m2o-16", "cc": "dcqcn", "overrides": SHORT_ADPG},
    "m2o16-dcqcn-mellanox": {
        "scenario": "adpg-m2o-16",
        "cc": "dcqcn",
        "overrides": SHORT_ADPG + ['cc.preset="mellanox"'],
    },
    "m2o16-hpcc-rate": {
        "scenario": "adpg-m2o-16",
        "cc": "hpcc",
        "overrides": SHORT_ADPG + ['cc.variant="rate"'],
    },
    "m2o16-swift": {"scenario": "adpg-m2o-16", "cc": "swift", "overrides": SHORT_ADPG},
    "m2o16-timely": {"scenario": "adpg-m2o-16", "cc": "timely", "overrides": SHORT_ADPG},
    "m2o16-dctcp": {"scenario": "adpg-m2o-16", "cc": "dctcp", "overrides": SHORT_ADPG},
    "m2o16-dctcp-rate": {
        "scenario": "adpg-m2o-16",
        "cc": "dctcp",
        "overrides": SHORT_ADPG + ['cc.variant="rate"'],
    },
    "m2o2-fixed-rate": {
        "scenario": "adpg-m2o-2",
        "cc": "fixed_rate",
        "overrides": SHORT_ADPG + ['cc.rate="60Gbps"'],
    },
    # On a WAN dumbbell: TCP loss recovery (duplicate ACKs, fast retransmit, adaptive timeout)
    # under NewReno and CUBIC, delay-based Copa and model-based BBR.
    **{
        f"wan-{cc}": {"scenario": "dumbbell-wan", "cc": cc, "overrides": SHORT_WAN}
        for cc in ("newreno", "cubic", "copa", "bbr")
    },
    # Multi-tier topologies with ECMP, PFC and CDF-driven Poisson traffic.
    "leaf-spine-dcqcn": {
        "scenario": "leaf-spine-hadoop",
        "cc": "dcqcn",
        "overrides": ["duration=2ms", 'metrics.window=["0.5ms", "2ms"]'],
    },
    "fat-tree-hpcc": {
        "scenario": "fat-tree-websearch",
        "cc": "hpcc",
        "overrides": ["duration=1.5ms", 'metrics.window=["0.5ms", "1.5ms"]'],
    },
    # HPCC-PINT: per-port utilisation estimates, randomly rounded codes in one packet field.
    "fat-tree-hpcc-pint": {
        "scenario": "fat-tree-websearch",
        "cc": "hpcc",
        "overrides": ["duration=1.5ms", 'metrics.window=["0.5ms", "1.5ms"]', 'cc.variant="pint"'],
    },
    # Uncontrolled line-rate bursts into a lossy switch: drops and go-back-N recovery.
    "incast-burst-line-rate": {
        "scenario": "incast-burst",
        "overrides": ["duration=3ms", 'metrics.window=["0ms", "3ms"]', "workload[0].count=5"],
    },
    # Agent flows driven by the bundled native policy (interval trigger, idle probes, messages).
    "m2o16-adpg-default": {
        "scenario": "adpg-m2o-16",
        "policy": "adpg-default",
        "overrides": SHORT_ADPG,
    },
    "m2o16-adpg-default-int8": {
        "scenario": "adpg-m2o-16",
        "policy": "adpg-default",
        "precision": "int8",
        "overrides": SHORT_ADPG,
    },
    "long-short-2-adpg-default": {
        "scenario": "adpg-long-short-2",
        "policy": "adpg-default",
        "overrides": [
            "duration=12ms",
            'metrics.window=["4ms", "12ms"]',
            "workload[0].stop=12ms",
        ],
    },
    # Receiver-driven transports on the 144-host leaf-spine (10/40 Gb/s, Poisson WebSearch), each
    # with its preset of the receiver-driven suite: rank queues and evictions (pFabric), RTS and
    # paced tokens (pHost), grants, overcommitment and priorities (Homa), the HOPASS fast layer,
    # trimming switches and paced pulls (NDP, EQDS).
    **{
        f"rd-{method}": {
            "scenario": "receiver-driven-websearch",
            "preset": ["receiver-driven", method],
            "overrides": SHORT_RECEIVER_DRIVEN,
        }
        for method in ("pfabric", "phost", "homa", "hopass", "ndp", "eqds")
    },
    # HOPASS's weighted classes: WRR switch queues, per-class token rates at the receivers.
    "hopass-weighted": {
        "scenario": "hopass-weighted",
        "overrides": ["duration=15ms", 'metrics.window=["5ms", "15ms"]'],
    },
    # A trace-driven cellular link (Pantheon-like, SACK recovery) under CUBIC, and the MVFST-RL
    # LSTM policy trained on it, native (delayed actions, action history).
    **{
        f"mvfst-mexico-{name}": {
            "scenario": "mvfst-mexico-cellular",
            **method,
            "overrides": SHORT_MVFST,
        }
        for name, method in (
            ("cubic", {"cc": "cubic"}),
            ("mvfst-log-mexico", {"policy": "mvfst-log-mexico"}),
        )
    },
    # Switch-queue agents answered natively (ACC's bundled DDQN policy on every queue, DCQCN hosts).
    "acc-websearch-acc-default": {
        "scenario": "acc-websearch",
        "cc": "dcqcn",
        "acc_policy": "acc-default",
        "overrides": ["duration=6ms", 'metrics.window=["1ms", "6ms"]'],
    },
    # Window agents answered by QTCP-AIMD's Kanerva Q-learners in Python, learning online
    # (two senders sharing a 40 Mb/s bottleneck). Python only: the Rust test skips it.
    "qtcp-aimd-fixed": {
        "scenario": "qtcp-fixed",
        "qtcp": "qtcp-aimd",
        "overrides": ["duration=20s", 'metrics.window=["5s", "20s"]'],
    },
    # Agent flows driven from Python through the batched bridge (probe trigger, 1 us delay),
    # with a fixed, deterministic rule in place of a policy. Python only: the Rust test skips it.
    "m2o2-bridge-probe": {
        "scenario": "adpg-m2o-2",
        "bridge": True,
        "overrides": SHORT_ADPG,
    },
}


def _relative(value: Any) -> Any:
    """The scenario with absolute paths inside the repository made relative to it."""
    if isinstance(value, dict):
        return {k: _relative(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_relative(v) for v in value]
    if isinstance(value, str) and value.startswith(str(REPO) + "/"):
        return str(Path(value).relative_to(REPO))
    return value


def scenario(name: str) -> dict[str, Any]:
    """The scenario dict of a case, as the core receives it, with repository-relative paths."""
    from ccgym.policies import use_policy
    from ccgym.scenario import load_scenario

    case = CASES[name]
    cc = case.get("cc")
    if case.get("bridge"):
        cc = "agent"
    if "preset" in case:
        # As `ccgym bench` builds a preset's run.
        from ccgym.bench.runner import _preset_scenario, load_suite

        suite, method = case["preset"]
        preset = load_suite(suite)["presets"][method]
        data = _preset_scenario(case["scenario"], case["overrides"], method, preset)
    elif "qtcp" in case:
        from ccgym.qtcp import qtcp_scenario

        data, _ = qtcp_scenario(case["scenario"], case["qtcp"], overrides=case["overrides"])
    else:
        data, base = load_scenario(case["scenario"], case.get("overrides"), cc=cc)
        if "acc_policy" in case:
            from ccgym.bench.acc_suite import native_scenario

            data = native_scenario(data, base, policy=case["acc_policy"])
    if "policy" in case:
        data = use_policy(data, case["policy"], precision=case.get("precision", "float32"))
    if case.get("bridge"):
        from ccgym.policies import agent_table

        data["agent"] = agent_table(trigger="probe")
    return json.loads(json.dumps(_relative(data), default=str))


def bridge_action(obs: Any) -> Any:
    """The deterministic rule that answers the bridge case: cut when the last feature is high."""
    import numpy as np

    return np.clip(np.float32(0.5) - obs[:, -1], -1.0, 1.0).astype(np.float32)


def run(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """Runs a case's scenario on ``ccgym._sim`` from the repository root; returns its record."""
    import numpy as np

    from ccgym import _sim

    if "qtcp" in CASES[name]:
        from ccgym.qtcp.driver import run_qtcp

        qtcp = run_qtcp(data, CASES[name]["qtcp"])
        log = qtcp.log
        learnt = {
            "decisions": len(log["flow"]),
            "reward_sum": float(np.nansum(log["reward"], dtype=np.float64)),
            "actions": [int(np.sum(log["action"] == a)) for a in range(-1, 3)],
        }
        summary = qtcp.summary
        # "bridge" marks a case driven from Python, which the Rust test skips.
        return {"events": summary["events"], "bridge": learnt, "summary": summary}
    sim = _sim.Simulation(json.dumps(data), str(REPO))
    record: dict[str, Any] = {}
    if CASES[name].get("bridge"):
        batches = decisions = 0
        reward_sum = 0.0
        over = False
        while not over:
            over, batch = sim.agent_step()
            obs = batch["obs"]
            if len(obs):
                batches += 1
                live = ~(batch["done"] | batch["truncated"])
                decisions += int(live.sum())
                reward_sum += float(np.sum(batch["reward"], dtype=np.float64))
                sim.agent_act(np.ascontiguousarray(bridge_action(obs)))
        record["bridge"] = {"batches": batches, "decisions": decisions, "reward_sum": reward_sum}
    else:
        sim.run_until(int(sim.end_ps))
    summary_json, _ = sim.finish()
    summary = json.loads(summary_json)
    return {"events": summary["events"], **record, "summary": summary}


def path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.json"


def write(name: str) -> None:
    data = scenario(name)
    record = {"case": name, "source": CASES[name], "scenario": data, **run(name, data)}
    path(name).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{name}: {record['events']} events")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "python"))
    for case in sys.argv[1:] or list(CASES):
        write(case)
