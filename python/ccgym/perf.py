"""The standard incast benchmark behind ``ccgym perf``.

Each size runs in a fresh Python process (``python -m ccgym.perf N``) so that the peak memory
reported is that of one size alone. The child prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ccgym._errors import PerfError
from ccgym.runner import PROGRESS_STEPS, advance, native, scenario_json
from ccgym.scenario import parse_value

STANDARD_FLOWS: tuple[int, ...] = (16, 128, 1024, 8192)
"""Flow counts measured by ``ccgym perf`` when none are given."""

DEFAULT_DURATION = "100ms"

_LAYOUT: dict[int, tuple[int, int]] = {16: (16, 1), 128: (64, 2), 1024: (32, 32), 8192: (64, 128)}


def incast_layout(flows: int) -> tuple[int, int]:
    """``(sender hosts, flows per host)`` of the standard incast with ``flows`` flows."""
    if flows < 1:
        raise ValueError(f"number of flows must be positive, got {flows}")
    if flows in _LAYOUT:
        return _LAYOUT[flows]
    hosts = min(flows, 64)
    return hosts, math.ceil(flows / hosts)


def incast_scenario(
    flows: int, duration: str | float = DEFAULT_DURATION, cc: str = "line_rate"
) -> dict[str, Any]:
    """The standard incast benchmark scenario for ``flows`` flows under congestion control ``cc``.

    N senders -> 1 receiver through one switch, 100 Gb/s, 1 us links, 1 KiB packets, PFC on.
    """
    hosts, per_host = incast_layout(flows)
    return {
        "name": f"perf-incast-{flows}",
        "seed": 1,
        "duration": duration,
        "topology": {
            "kind": "star",
            "hosts": hosts + 1,
            "link_rate": "100Gbps",
            "link_delay": "1us",
        },
        "switch": {"pfc": {"enabled": True}},
        "packets": {"payload": 1024},
        "workload": [
            {
                "kind": "long",
                "pattern": "many_to_one",
                "receiver": 0,
                "flows_per_host": per_host,
                "start": "0s",
            }
        ],
        "cc": {"algorithm": cc},
        "metrics": {"flow_series": False},
    }


def _peak_rss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return rss / 1e6 if sys.platform == "darwin" else rss * 1024 / 1e6


def _speed(events: int, hops: int, cpu_s: float) -> dict[str, float | None]:
    """Events and packet-hops per CPU second, and CPU nanoseconds per packet-hop."""
    return {
        "events_per_s": events / cpu_s if cpu_s > 0 else None,
        "hops_per_s": hops / cpu_s if cpu_s > 0 else None,
        "ns_per_hop": cpu_s * 1e9 / hops if hops else None,
    }


def measure(
    flows: int, duration: str | float = DEFAULT_DURATION, cc: str = "line_rate"
) -> dict[str, Any]:
    """Run the benchmark for ``flows`` flows in this process and return its measurements.

    CPU time (``time.process_time``) covers the run loop only; set-up is the simulator's own
    ``setup_seconds``; rates are per CPU second.
    """
    sim_mod = native()
    hosts, per_host = incast_layout(flows)
    sim = sim_mod.Simulation(scenario_json(incast_scenario(flows, duration, cc)), os.getcwd())
    end = int(sim.end_ps)

    cpu0, wall0 = time.process_time(), time.perf_counter()
    advance(sim, end, max(end // PROGRESS_STEPS, 1))
    cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0

    t_finish = time.perf_counter()
    sim.finish()
    finish_s = time.perf_counter() - t_finish

    events, hops = int(sim.events), int(sim.packet_hops)
    return {
        "cc": cc,
        "flows": flows,
        "hosts": hosts,
        "flows_per_host": per_host,
        "sim_time_s": int(sim.now_ps) / 1e12,
        "events": events,
        "packet_hops": hops,
        "cpu_s": cpu_s,
        "wall_s": wall_s,
        **_speed(events, hops, cpu_s),
        "setup_s": float(sim.setup_seconds),
        "finish_s": finish_s,
        "peak_rss_mb": _peak_rss_mb(),
    }


def measure_in_subprocess(
    flows: int, duration: str | float = DEFAULT_DURATION, cc: str = "line_rate"
) -> dict[str, Any]:
    """Run :func:`measure` in a fresh Python process and return its measurements."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "ccgym.perf", str(flows), "--duration", str(duration)]
    cmd += ["--cc", cc]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        reason = lines[-1].removeprefix("error: ")
        raise PerfError(f"perf run with {flows} flows ({cc}) failed: {reason}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_perf(
    flows: Iterable[int] = STANDARD_FLOWS,
    duration: str | float = DEFAULT_DURATION,
    on_start: Callable[[str], None] | None = None,
    ccs: Iterable[str] = ("line_rate",),
) -> list[dict[str, Any]]:
    """Measure each size (and each CC) in its own process.

    Adds ``ratio_ns_per_hop`` (relative to N=16 under the same CC) and ``ratio_vs_line_rate``
    (relative to the line-rate run of the same size, when it was measured): both are measured
    in the same invocation, so they hold on a noisy machine where absolute figures do not.
    """
    rows = []
    for cc in ccs:
        for n in flows:
            if on_start is not None:
                on_start(f"{n} flows" + ("" if cc == "line_rate" else f", {cc}"))
            rows.append(measure_in_subprocess(n, duration, cc))
    for r in rows:
        base = next(
            (b["ns_per_hop"] for b in rows if b["flows"] == 16 and b["cc"] == r["cc"]), None
        )
        line = next(
            (b["ns_per_hop"] for b in rows if b["flows"] == r["flows"] and b["cc"] == "line_rate"),
            None,
        )
        ok = r["ns_per_hop"] is not None
        r["ratio_ns_per_hop"] = r["ns_per_hop"] / base if ok and base else None
        r["ratio_vs_line_rate"] = r["ns_per_hop"] / line if ok and line else None
    return rows


def main(argv: list[str] | None = None) -> int:
    """Child entry point: ``python -m ccgym.perf N [--duration T]`` prints one JSON line."""
    parser = argparse.ArgumentParser(prog="python -m ccgym.perf", description=__doc__)
    parser.add_argument("flows", type=int)
    parser.add_argument("--duration", default=DEFAULT_DURATION)
    parser.add_argument("--cc", default="line_rate")
    args = parser.parse_args(argv)
    try:
        row = measure(args.flows, parse_value(args.duration), args.cc)
    except (ValueError, ImportError) as e:  # ValueError includes ScenarioError
        print(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, ValueError) else 1
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())


# --------------------------------------------------------------------------- agent bridge

AGENT_DELAYS: tuple[str, ...] = ("0us", "1us", "5us", "20us")
"""Policy delays measured by ``ccgym perf --agent`` (the default delay is 1 us)."""


def agent_scenario(
    flows: int,
    duration: str | float,
    policy_delay: str,
    seed: int = 1,
    agent: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The standard incast with every flow driven by an external policy (ADPG features, or the
    ``agent`` table given)."""
    scenario = incast_scenario(flows, duration, cc="agent")
    scenario["seed"] = seed
    # Start at the fair share: the all-at-line-rate start of an incast would fill the queue for
    # tens of milliseconds, with few decisions (one per long RTT).
    table = dict(agent or {})
    table.pop("policy", None)
    table.pop("precision", None)
    table.update(policy_delay=policy_delay, initial_rate=1.0 / flows)
    scenario["agent"] = table
    return scenario


def measure_agent(
    policy_delay: str,
    flows: int = 1024,
    sims: int = 2,
    duration: str | float = "10ms",
    warmup_s: float = 0.002,
    policy: str | None = None,
) -> dict[str, Any]:
    """Decisions per second of wall time through the bridge with a PyTorch MLP policy.

    A pool of ``sims`` incast simulations (``flows`` flows each) is stepped; every batch goes
    through a [12, 12] MLP (the RL-CC network shape) in PyTorch and back. Flows start at their
    fair share; batches of the first ``warmup_s`` of simulated time are not counted. With
    ``policy`` (a bundled name or a file, e.g. ``"adpg-default"``) the MLP carries that policy's
    weights and the scenario its ``[agent]`` table (trigger, features); otherwise the weights
    implement a proportional controller on the ADPG signal with the default ``[agent]`` table.
    """
    try:
        import torch
    except ImportError as e:
        raise ImportError("`ccgym perf --agent` needs PyTorch (pip install 'ccgym[train]')") from e
    sim_mod = native()
    # As in the trainers: a 12-unit layer gains nothing from intra-op threads, and their
    # spinning takes the cores the pool's simulations run on (measured: half the decisions/s).
    torch.set_num_threads(1)
    policy_net = torch.nn.Sequential(
        torch.nn.Linear(4, 12, bias=False),
        torch.nn.ReLU(),
        torch.nn.Linear(12, 12, bias=False),
        torch.nn.ReLU(),
        torch.nn.Linear(12, 1, bias=False),
        torch.nn.Tanh(),
    )
    agent: dict[str, Any] | None = None
    with torch.no_grad():
        if policy is not None:
            from ccgym import policies

            loaded = policies.load_policy(policy)
            agent = policies.agent_table(loaded)
            linears = [policy_net[i] for i in (0, 2, 4)]
            for layer, spec in zip(linears, loaded["layers"], strict=True):
                layer.weight.copy_(torch.tensor(spec["weight"], dtype=torch.float32))
        else:
            # A proportional controller on the ADPG signal, a = tanh(-0.5 d), so the network
            # runs in the controlled regime a trained policy gives (short queues, decisions
            # every few microseconds) rather than the saturated one of random weights.
            for i in (0, 2, 4):
                policy_net[i].weight.zero_()
            policy_net[0].weight[0, 3], policy_net[0].weight[1, 3] = 1.0, -1.0
            policy_net[2].weight[0, 0], policy_net[2].weight[1, 1] = 1.0, 1.0
            policy_net[4].weight[0, 0], policy_net[4].weight[0, 1] = -0.5, 0.5
    specs = [
        (scenario_json(agent_scenario(flows, duration, policy_delay, seed, agent)), os.getcwd())
        for seed in range(1, sims + 1)
    ]
    pool = sim_mod.Pool(specs)
    decisions = batches = 0
    t0 = cpu0 = None
    with torch.inference_mode():
        while not all(pool.over):
            batch = pool.step()
            obs = torch.from_numpy(batch["obs"])
            actions = policy_net(obs)[:, 0].numpy()
            pool.act(actions)
            if t0 is None:
                if len(actions) and batch["time_s"].min() >= warmup_s:
                    t0, cpu0 = time.perf_counter(), time.process_time()
                continue
            decisions += len(actions)
            batches += 1
    if t0 is None or cpu0 is None:
        raise PerfError("the agent benchmark ended before its warm-up; use a longer duration")
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {
        "policy": policy or "proportional controller",
        "trigger": (agent or {}).get("trigger", "probe"),
        "policy_delay": policy_delay,
        "flows": flows,
        "sims": sims,
        "decisions": decisions,
        "batches": batches,
        "mean_batch": decisions / batches if batches else 0.0,
        "wall_s": wall,
        "cpu_s": cpu,
        "decisions_per_s": decisions / wall if wall > 0 else None,
    }


NATIVE_POLICY = "adpg-default"
"""The policy whose native decision cost ``ccgym perf --policy`` measures by default."""


NATIVE_MAX_ITERATIONS = 500_000
"""The most decisions of one timed round of :func:`native_decision_ns` (what a round of a
policy of a few dozen nanoseconds per decision gets; slower ones get their time budget)."""
NATIVE_CALIBRATION_S = 0.02
"""Timed seconds the calibration of :func:`native_decision_ns` aims at before it sizes rounds."""


def _layer_sizes(policy: Mapping[str, Any]) -> list[int]:
    """Input width, then each layer's output width (dense, ``concat``, ``lstm``)."""
    layers = policy["layers"]
    sizes = [len(layers[0]["weight"][0])]
    for la in layers:
        kind = la.get("kind", "dense")
        if kind == "concat":
            sizes.append(sizes[-1] + int(la["size"]))
        elif kind == "lstm":
            sizes.append(len(la["weight_hh"][0]))
        else:
            sizes.append(len(la["weight"]))
    return sizes


def native_decision_ns(
    policy: str | os.PathLike[str] | dict[str, Any] | None = None,
    iterations: int | None = None,
    rounds: int = 5,
    *,
    budget_s: float = 1.0,
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Nanoseconds per native decision of ``policy`` (default :data:`NATIVE_POLICY`), in float32
    and (when the file has int8 calibration) int8.

    The precisions are timed alternately in this process, ``rounds`` times ``iterations``
    decisions each; per precision the minimum and the median over the rounds, and the int8 /
    float32 ratio of each: measured side by side, the ratio holds on a noisy machine where the
    absolute figures do not.

    Without ``iterations``, a few float32 decisions first measure the policy's cost (about
    :data:`NATIVE_CALIBRATION_S` of timed decisions), then each round runs enough decisions
    for about ``budget_s`` seconds, at most :data:`NATIVE_MAX_ITERATIONS` (a decision of an
    MLP costs tens of nanoseconds, one of an LSTM policy such as ``mvfst-default`` a
    millisecond). Each timing call also loads the policy (not timed; a large policy takes
    a fraction of a second). ``on_progress`` receives a line saying what is measured.
    """
    from ccgym import policies

    if (iterations is not None and iterations < 1) or rounds < 1:
        raise ValueError("iterations and rounds must be positive")
    if not budget_s > 0:
        raise ValueError(f"budget_s must be positive, got {budget_s}")
    say = on_progress or (lambda text: None)
    sim_mod = native()
    loaded = policies.load_policy(policy if policy is not None else NATIVE_POLICY)
    text = json.dumps(loaded)
    precisions = ["float32"] + (["int8"] if loaded.get("int8") else [])
    calibration: dict[str, float] | None = None
    if iterations is None:
        n = 1
        while True:
            say(f"calibrating: {n:,} decisions")
            ns = float(sim_mod.bench_policy(text, n, "float32"))
            timed = n * ns * 1e-9
            if timed >= NATIVE_CALIBRATION_S or n >= NATIVE_MAX_ITERATIONS:
                break
            # Aim past the target (a first, cold call is slow), at most 1000 times more.
            aim = 1.5 * NATIVE_CALIBRATION_S / max(timed, 1e-9)
            n = min(NATIVE_MAX_ITERATIONS, max(n + 1, int(n * min(aim, 1000.0))))
        iterations = max(1, min(NATIVE_MAX_ITERATIONS, round(budget_s * 1e9 / ns)))
        calibration = {"decisions": n, "ns_per_decision": ns}
    times: dict[str, list[float]] = {p: [] for p in precisions}
    for r in range(rounds):
        for p in precisions:
            say(f"round {r + 1} of {rounds}: {iterations:,} {p} decisions")
            times[p].append(float(sim_mod.bench_policy(text, iterations, p)))
    if policy is None:
        name = NATIVE_POLICY
    else:
        name = os.fspath(policy) if isinstance(policy, (str, os.PathLike)) else "policy"
    out: dict[str, Any] = {
        "policy": name,
        "layers": _layer_sizes(loaded),
        "iterations": iterations,
        "rounds": rounds,
        "budget_s": budget_s if calibration is not None else None,
        "calibration": calibration,
        "ns_per_decision": {
            p: {"min": min(ts), "median": statistics.median(ts)} for p, ts in times.items()
        },
    }
    if "int8" in times:
        f32, i8 = out["ns_per_decision"]["float32"], out["ns_per_decision"]["int8"]
        out["int8_vs_float32"] = {k: i8[k] / f32[k] for k in ("min", "median")}
    return out


# --------------------------------------------------------------------------- fabric entries

FABRIC_SUITE = "receiver-driven"
"""The bench suite whose method presets configure the fabric entries."""
FABRIC_SCENARIO = "receiver-driven-websearch"
"""The fabric entries' scenario: 144-host leaf-spine, Poisson WebSearch (docs/bench.md)."""
FABRIC_LOAD = 0.6
FABRIC_METHODS: tuple[str, ...] = ("pfabric", "homa")
"""The default fabric entries of ``ccgym perf --fabric``, methods of :data:`FABRIC_SUITE`."""
FABRIC_INCAST_FLOWS = 16
"""The incast size measured beside the fabric entries by default (the per-hop reference)."""


def fabric_presets() -> dict[str, dict[str, Any]]:
    """The method presets of the ``receiver-driven`` suite, ``{name: {"cc", "overrides"}}``,
    read without checking that every method's CC is built in: ``--compare`` runs them with an
    older build, which may predate methods other than the one it runs."""
    from ccgym.bench.runner import SUITE_DIR, tomllib

    text = (SUITE_DIR / f"{FABRIC_SUITE}.toml").read_text(encoding="utf-8")
    methods = tomllib.loads(text).get("methods") or {}
    return {
        name: {"cc": entry["cc"], "overrides": list(entry.get("overrides") or [])}
        for name, entry in methods.items()
    }


def fabric_scenario(method: str, duration: str | float = DEFAULT_DURATION) -> dict[str, Any]:
    """The 144-host WebSearch scenario at 0.6 load under ``method``'s preset of the
    ``receiver-driven`` suite, ``duration`` long, summary window the whole run."""
    from ccgym.bench.runner import _preset_scenario

    presets = fabric_presets()
    if method not in presets:
        raise ValueError(f"no fabric perf entry {method!r} (known: {', '.join(presets)})")
    overrides = [f"workload[0].load={FABRIC_LOAD}", f"duration={duration}", "seed=1"]
    data = _preset_scenario(FABRIC_SCENARIO, overrides, method, presets[method])
    data["name"] = f"perf-fabric-{method}"
    data.setdefault("metrics", {}).pop("window", None)
    data["metrics"]["flow_series"] = False
    return data


def measure_fabric(method: str, duration: str | float = DEFAULT_DURATION) -> dict[str, Any]:
    """Run the fabric entry ``method`` in this process and return its measurements, as
    :func:`measure` does, plus simulated time per CPU second and the CPU time 100 ms of
    simulated time take at that pace."""
    row = measure_scenario(fabric_scenario(method, duration))
    sim_s, cpu_s = row["sim_time_s"], row["cpu_s"]
    return {
        "entry": "fabric",
        "method": method,
        "scenario": f"{FABRIC_SCENARIO} at load {FABRIC_LOAD}",
        **row,
        "cpu_s_per_100ms": cpu_s * 0.1 / sim_s if sim_s > 0 else None,
    }


def _fabric_child() -> int:
    """Child entry point of a fabric entry: ``METHOD DURATION`` in argv, one JSON line out."""
    method, duration = sys.argv[1], sys.argv[2]
    try:
        row = measure_fabric(method, parse_value(duration))
    except (ValueError, ImportError) as e:  # ValueError includes ScenarioError
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(row))
    return 0


def run_fabric_perf(
    methods: Iterable[str] | None = None,
    duration: str | float = DEFAULT_DURATION,
    incast_flows: Iterable[int] = (FABRIC_INCAST_FLOWS,),
    on_start: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The fabric entries beside the line-rate incast, each in its own process.

    Returns ``{"incast": [rows of run_perf], "fabric": [rows]}``; each
    fabric row gets ``ratio_vs_incast``: its ns per packet-hop over the mean of the incast rows',
    measured in the same invocation so that it holds on a noisy machine.
    """
    chosen = list(methods) if methods is not None else list(FABRIC_METHODS)
    incast = run_perf(incast_flows, duration, on_start=on_start)
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    code = "import sys; from ccgym.perf import _fabric_child; sys.exit(_fabric_child())"
    rows = []
    for method in chosen:
        if on_start is not None:
            on_start(f"fabric, {method}")
        cmd = [sys.executable, "-c", code, method, str(duration)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
            raise PerfError(
                f"fabric perf entry {method} failed: {lines[-1].removeprefix('error: ')}"
            )
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    ref = [r["ns_per_hop"] for r in incast if r["ns_per_hop"]]
    base = sum(ref) / len(ref) if ref else None
    for r in rows:
        r["ratio_vs_incast"] = r["ns_per_hop"] / base if base and r["ns_per_hop"] else None
    return {"incast": incast, "fabric": rows}


# --------------------------------------------------------------------------- topology entries

TOPOLOGY_FLOWS = 16
"""The incast size measured beside the topology entries by default (the per-hop reference)."""
TOPOLOGY_CCS: tuple[str, ...] = ("line_rate", "hpcc")
"""The CCs of ``ccgym perf --topologies`` by default (issue 21's comparison with htsim: line rate
with PFC, and HPCC)."""
POISSON_CDF = "websearch_dctcp2010_hpcc"
"""The flow sizes of the leaf-spine entry (the DCTCP WebSearch CDF as HPCC used it)."""
POISSON_LOAD = 0.5


def permutation_flows(hosts: int, seed: int = 1) -> list[dict[str, Any]]:
    """One long flow from every host to the host a random derangement (seeded) gives it: the
    permutation traffic of htsim's fat-tree runs, every host sending and receiving one flow."""
    import random

    if hosts < 2:
        raise ValueError(f"a permutation needs at least 2 hosts, got {hosts}")
    rng = random.Random(seed)
    while True:  # uniform among derangements: about e shuffles on average
        perm = list(range(hosts))
        rng.shuffle(perm)
        if all(dst != src for src, dst in enumerate(perm)):
            break
    return [{"src": src, "dst": dst, "start": "0s"} for src, dst in enumerate(perm)]


def _fat_tree_permutation(k: int) -> dict[str, Any]:
    return {
        "topology": {"kind": "fat_tree", "k": k},
        "workload": [{"kind": "flows", "flows": permutation_flows(k**3 // 4)}],
        "description": f"fat tree k = {k} ({k**3 // 4} hosts), permutation of long flows",
    }


def _leaf_spine_poisson() -> dict[str, Any]:
    return {
        # 144 hosts in 9 racks of 16 under 4 spines, full bisection: the receiver-driven suite's
        # fabric at 100 Gb/s hosts and 400 Gb/s uplinks.
        "topology": {
            "kind": "leaf_spine",
            "leaves": 9,
            "spines": 4,
            "hosts_per_leaf": 16,
            "fabric_rate": "400Gbps",
        },
        "workload": [
            {"kind": "poisson", "load": POISSON_LOAD, "cdf": POISSON_CDF, "sampling": "interpolate"}
        ],
        "description": f"leaf-spine, 144 hosts, Poisson WebSearch at {POISSON_LOAD} load",
    }


TOPOLOGY_ENTRIES: dict[str, tuple[Callable[[], dict[str, Any]], str]] = {
    "fat-tree-8": (lambda: _fat_tree_permutation(8), "10ms"),
    "fat-tree-16": (lambda: _fat_tree_permutation(16), "1ms"),
    "leaf-spine": (_leaf_spine_poisson, "5ms"),
}
"""The entries of ``ccgym perf --topologies``: name -> (topology and workload, default simulated
time). The k = 16 fat tree has 1,024 hosts and runs 1 ms by default (20-30 s of CPU on the
machines of docs/performance.md)."""


def topology_scenario(
    entry: str, duration: str | float | None = None, cc: str = "line_rate"
) -> dict[str, Any]:
    """The scenario of the topology entry ``entry`` under ``cc``, ``duration`` long (default the
    entry's own), with the incast's settings: 100 Gb/s, 1 us links, 1 KiB payloads, PFC, summary
    window the whole run, no per-flow series."""
    if entry not in TOPOLOGY_ENTRIES:
        raise ValueError(f"no topology perf entry {entry!r} (known: {', '.join(TOPOLOGY_ENTRIES)})")
    make, default_duration = TOPOLOGY_ENTRIES[entry]
    parts = make()
    topology = {"link_rate": "100Gbps", "link_delay": "1us", **parts["topology"]}
    return {
        "name": f"perf-{entry}",
        "seed": 1,
        "duration": default_duration if duration is None else duration,
        "topology": topology,
        "switch": {"pfc": {"enabled": True}},
        "packets": {"payload": 1024},
        "workload": parts["workload"],
        "cc": {"algorithm": cc},
        "metrics": {"flow_series": False},
    }


def topology_description(entry: str) -> str:
    """One line describing the topology entry ``entry``."""
    if entry not in TOPOLOGY_ENTRIES:
        raise ValueError(f"no topology perf entry {entry!r} (known: {', '.join(TOPOLOGY_ENTRIES)})")
    return str(TOPOLOGY_ENTRIES[entry][0]()["description"])


def measure_scenario(data: dict[str, Any]) -> dict[str, Any]:
    """Run the scenario dict ``data`` in this process and return what :func:`measure` reports
    for the incast (run-loop CPU, rates per CPU second, set-up, peak memory) plus simulated time
    per CPU second and the native module that ran it."""
    from ccgym.scenario import load_scenario

    resolved, base_dir = load_scenario(data)  # bare workload CDF names -> the package's files
    sim_mod = native()
    sim = sim_mod.Simulation(scenario_json(resolved), str(base_dir))
    end = int(sim.end_ps)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    advance(sim, end, max(end // PROGRESS_STEPS, 1))
    cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
    events, hops = int(sim.events), int(sim.packet_hops)
    sim_s = int(sim.now_ps) / 1e12
    return {
        "sim_time_s": sim_s,
        "events": events,
        "packet_hops": hops,
        "cpu_s": cpu_s,
        "wall_s": wall_s,
        **_speed(events, hops, cpu_s),
        "sim_per_cpu_s": sim_s / cpu_s if cpu_s > 0 else None,
        "setup_s": float(sim.setup_seconds),
        "peak_rss_mb": _peak_rss_mb(),
        "native_module": str(getattr(sim_mod, "__file__", "")),
    }


def measure_topology(
    entry: str, duration: str | float | None = None, cc: str = "line_rate"
) -> dict[str, Any]:
    """Run the topology entry ``entry`` under ``cc`` in this process; see
    :func:`measure_scenario`."""
    data = topology_scenario(entry, duration, cc)
    row = {"entry": entry, "cc": cc, "hosts": _hosts(data["topology"])}
    row["flows"] = len(data["workload"][0].get("flows", [])) or None
    return {**row, **measure_scenario(data)}


def _hosts(topology: dict[str, Any]) -> int:
    if topology["kind"] == "fat_tree":
        return int(topology["k"]) ** 3 // 4
    return int(topology["leaves"]) * int(topology["hosts_per_leaf"])


# Every benchmark child starts with this code (``python -c``): with CCGYM_PERF_NATIVE set, it
# loads that build of the native module as ``ccgym._sim`` before the package imports its own
# (``ccgym perf --compare``); the rest of the child is this checkout's Python.
_CHILD_CODE = """
import os, sys
path = os.environ.get("CCGYM_PERF_NATIVE")
if path:
    import importlib.util
    spec = importlib.util.spec_from_file_location("ccgym._sim", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["ccgym._sim"] = module
    spec.loader.exec_module(module)
from ccgym.perf import _child
sys.exit(_child(sys.argv[1:]))
"""
NATIVE_ENV = "CCGYM_PERF_NATIVE"
"""The environment variable naming the native module file a benchmark child loads."""


def _child(argv: list[str]) -> int:
    """A benchmark child: ``incast N DURATION CC``, ``topology ENTRY DURATION CC`` or
    ``fabric METHOD DURATION``; prints one JSON line (with the native module that ran it)."""
    kind, name, duration = argv[0], argv[1], parse_value(argv[2])
    try:
        if kind == "incast":
            row = measure(int(name), duration, argv[3])
            row["native_module"] = str(getattr(native(), "__file__", ""))
        elif kind == "topology":
            row = measure_topology(name, duration, argv[3])
        elif kind == "fabric":
            row = measure_fabric(name, duration)
            row["native_module"] = str(getattr(native(), "__file__", ""))
        else:
            raise ValueError(f"unknown benchmark kind {kind!r}")
    except (ValueError, ImportError) as e:  # ValueError includes ScenarioError
        print(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, ValueError) else 1
    print(json.dumps(row))
    return 0


PerfJob = tuple[str, ...]
"""One benchmark child's arguments: ``("incast", N, DURATION, CC)``, ``("topology", ENTRY,
DURATION, CC)`` or ``("fabric", METHOD, DURATION)``."""


def run_child(job: PerfJob, native_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Run one benchmark child in a fresh process, with this checkout's native module or, with
    ``native_path``, that file; returns its row."""
    env = dict(os.environ)
    env.pop(NATIVE_ENV, None)
    if native_path is not None:
        env[NATIVE_ENV] = os.fspath(native_path)
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD_CODE, *job], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        build = f" with {os.fspath(native_path)}" if native_path is not None else ""
        raise PerfError(
            f"perf run {' '.join(job)}{build} failed: {lines[-1].removeprefix('error: ')}"
        )
    row: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return row


def run_topology_perf(
    entries: Iterable[str] | None = None,
    duration: str | float | None = None,
    ccs: Iterable[str] = TOPOLOGY_CCS,
    incast_flows: Iterable[int] = (TOPOLOGY_FLOWS,),
    incast_duration: str | float = DEFAULT_DURATION,
    on_start: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The topology entries (default all of :data:`TOPOLOGY_ENTRIES`, each ``duration`` long or
    its own default) under each CC, beside the incast under the same CCs, each in its own
    process.

    Returns ``{"incast": [rows of run_perf], "topology": [rows]}``. Each topology row gets
    ``ratio_vs_incast`` (its ns per packet-hop over the mean of the incast rows' under the same
    CC) and, for a fat tree larger than another measured under the same CC,
    ``ratio_vs_smaller_fat_tree`` (over the smallest one's): both measured in the same
    invocation, so that they hold on a noisy machine.
    """
    chosen = list(entries) if entries is not None else list(TOPOLOGY_ENTRIES)
    for entry in chosen:
        topology_description(entry)  # an unknown entry fails before anything runs
    ccs = list(dict.fromkeys(ccs))
    incast = run_perf(incast_flows, incast_duration, on_start=on_start, ccs=ccs)
    rows = []
    for cc in ccs:
        for entry in chosen:
            if on_start is not None:
                on_start(f"{entry}, {cc}")
            d = TOPOLOGY_ENTRIES[entry][1] if duration is None else duration
            rows.append(run_child(("topology", entry, str(d), cc)))
    for r in rows:
        ref = [b["ns_per_hop"] for b in incast if b["cc"] == r["cc"] and b["ns_per_hop"]]
        base = sum(ref) / len(ref) if ref else None
        r["ratio_vs_incast"] = r["ns_per_hop"] / base if base and r["ns_per_hop"] else None
        trees = [
            b
            for b in rows
            if b["cc"] == r["cc"] and b["entry"].startswith("fat-tree") and b["ns_per_hop"]
        ]
        smallest = min(trees, key=lambda b: b["hosts"], default=None)
        ok = r["entry"].startswith("fat-tree") and smallest is not None and r["ns_per_hop"]
        r["ratio_vs_smaller_fat_tree"] = (
            r["ns_per_hop"] / smallest["ns_per_hop"]
            if ok and smallest is not None and smallest["hosts"] < r["hosts"]
            else None
        )
    return {"incast": incast, "topology": rows}


# --------------------------------------------------------------------------- two builds


def find_native(path: str | os.PathLike[str]) -> Path:
    """The native module file of another build: ``path`` itself when it is a file, else the
    ``_sim*.so`` (or ``.pyd``) in ``path``, ``path/ccgym`` or ``path/python/ccgym`` (a checkout,
    its ``python`` folder or its package folder).

    Raises:
        PerfError: no such file, or several candidates in the first folder that has any.
    """
    p = Path(path)
    if p.is_file():
        return p.resolve()
    if not p.exists():
        raise PerfError(f"--compare: no such file or folder: {p}")
    for folder in (p, p / "ccgym", p / "python" / "ccgym"):
        found = sorted(folder.glob("_sim*.so")) + sorted(folder.glob("_sim*.pyd"))
        if len(found) == 1:
            return found[0].resolve()
        if found:
            names = ", ".join(f.name for f in found)
            raise PerfError(f"--compare: several native modules in {folder} ({names}); give one")
    raise PerfError(f"--compare: no native module (_sim*.so) in {p}, {p}/ccgym or {p}/python/ccgym")


def job_label(job: PerfJob) -> str:
    """A benchmark child's arguments for humans: ``incast 16, line_rate``."""
    kind, name = job[0], job[1]
    if kind == "incast":
        return f"incast {name} flows, {job[3]}"
    if kind == "topology":
        return f"{name}, {job[3]}"
    return f"fabric {name}"


SIGNIFICANCE = 0.05
"""Largest two-sided sign-test p-value that ``compare_builds`` calls faster or slower."""


def sign_test(wins: int, losses: int) -> float:
    """Two-sided p-value of the sign test: the chance that a fair coin tossed ``wins + losses``
    times comes out at least as lopsided (ties are left out before). Six pairs that all agree
    give 0.031; five cannot reach 0.05."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2.0 * tail)


def paired_verdict(
    new_runs: list[dict[str, Any]], old_runs: list[dict[str, Any]]
) -> dict[str, Any]:
    """The ratios new / old ns per packet-hop of runs taken in pairs (``new_runs[i]`` beside
    ``old_runs[i]``): ``paired_ratios``, their median (``ratio_median``), extremes
    (``ratio_low``, ``ratio_high``) and ``verdict`` (see :func:`compare_builds`)."""
    ratios = [
        n["ns_per_hop"] / o["ns_per_hop"]
        for n, o in zip(new_runs, old_runs, strict=True)
        if n.get("ns_per_hop") and o.get("ns_per_hop")
    ]
    if not ratios:
        return {
            "paired_ratios": [],
            "ratio_median": None,
            "ratio_low": None,
            "ratio_high": None,
            "sign_test_p": None,
            "verdict": None,
        }
    median = statistics.median(ratios)
    p = sign_test(sum(r < 1.0 for r in ratios), sum(r > 1.0 for r in ratios))
    if len(ratios) < 2:
        verdict = None
    elif p < SIGNIFICANCE:
        verdict = "faster" if median < 1.0 else "slower"
    else:
        verdict = "within noise"
    return {
        "paired_ratios": ratios,
        "ratio_median": median,
        "ratio_low": min(ratios),
        "ratio_high": max(ratios),
        "sign_test_p": p,
        "verdict": verdict,
    }


def compare_builds(
    jobs: Iterable[PerfJob],
    other: str | os.PathLike[str],
    rounds: int = 2,
    on_start: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Each job with this build (``new``) and with the native module ``other`` (``old``, a file
    or a folder, see :func:`find_native`), ``rounds`` pairs of runs per job, each run in its own
    process. The order alternates from pair to pair (new then old, old then new, ...), so that a
    machine slowing down or speeding up over a pair favours neither build.

    One row per job: per side its runs, the least ns per packet-hop and peak memory among them
    and the native module it loaded; ``ratio_ns_per_hop`` and ``ratio_peak_rss`` are new / old of
    those; ``same_counts`` says whether both builds simulated the same events and packet-hops
    (an optimisation should not change them).

    Each pair also gives a ratio of its own (``paired_ratios``, new / old ns per hop): two runs a
    second apart share the machine's load far more than two runs minutes apart. Their median
    is ``ratio_median`` and their extremes ``ratio_low`` and ``ratio_high``. ``verdict`` is
    ``"faster"`` or ``"slower"`` when a sign test over the pairs (``sign_test_p``) says the
    pairs lean one way more often than chance would (p below :data:`SIGNIFICANCE`), otherwise
    ``"within noise"``; None with one pair. That takes at least six pairs; on a shared machine,
    where single runs move by 10 % and more, a change of a few per cent takes a few dozen.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be positive, got {rounds}")
    old_path = find_native(other)
    out = []
    for job in jobs:
        runs: dict[str, list[dict[str, Any]]] = {"new": [], "old": []}
        sides: tuple[tuple[str, Path | None], ...] = (("new", None), ("old", old_path))
        for i in range(rounds):
            for side, path in sides if i % 2 == 0 else sides[::-1]:
                if on_start is not None:
                    on_start(f"{job_label(job)}: {side} build, round {i + 1} of {rounds}")
                runs[side].append(run_child(job, path))
        row: dict[str, Any] = {"job": list(job), "label": job_label(job)}
        for side, side_runs in runs.items():
            per_hop = [r["ns_per_hop"] for r in side_runs if r["ns_per_hop"]]
            row[side] = {
                "native_module": side_runs[0]["native_module"],
                "ns_per_hop": min(per_hop) if per_hop else None,
                "peak_rss_mb": min(r["peak_rss_mb"] for r in side_runs),
                "runs": side_runs,
            }
        new, old = row["new"], row["old"]
        row["ratio_ns_per_hop"] = (
            new["ns_per_hop"] / old["ns_per_hop"]
            if new["ns_per_hop"] and old["ns_per_hop"]
            else None
        )
        row["ratio_peak_rss"] = new["peak_rss_mb"] / old["peak_rss_mb"]
        row.update(paired_verdict(runs["new"], runs["old"]))
        counts = {(r["events"], r["packet_hops"]) for s in runs.values() for r in s}
        row["same_counts"] = len(counts) == 1
        out.append(row)
    return out
