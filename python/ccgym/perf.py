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
from collections.abc import Callable, Iterable
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


def native_decision_ns(
    policy: str | os.PathLike[str] | dict[str, Any] | None = None,
    iterations: int = 500_000,
    rounds: int = 5,
) -> dict[str, Any]:
    """Nanoseconds per native decision of ``policy`` (default :data:`NATIVE_POLICY`), in float32
    and (when the file has int8 calibration) int8.

    The precisions are timed alternately in this process, ``rounds`` times ``iterations``
    decisions each; per precision the minimum and the median over the rounds, and the int8 /
    float32 ratio of each: measured side by side, the ratio holds on a noisy machine where the
    absolute figures do not.
    """
    from ccgym import policies

    if iterations < 1 or rounds < 1:
        raise ValueError("iterations and rounds must be positive")
    sim_mod = native()
    loaded = policies.load_policy(policy if policy is not None else NATIVE_POLICY)
    text = json.dumps(loaded)
    precisions = ["float32"] + (["int8"] if loaded.get("int8") else [])
    times: dict[str, list[float]] = {p: [] for p in precisions}
    for _ in range(rounds):
        for p in precisions:
            times[p].append(float(sim_mod.bench_policy(text, iterations, p)))
    sizes = [len(loaded["layers"][0]["weight"][0])] + [len(la["weight"]) for la in loaded["layers"]]
    if policy is None:
        name = NATIVE_POLICY
    else:
        name = os.fspath(policy) if isinstance(policy, (str, os.PathLike)) else "policy"
    out: dict[str, Any] = {
        "policy": name,
        "layers": sizes,
        "iterations": iterations,
        "rounds": rounds,
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
"""The fabric entries of ``ccgym perf --fabric``, methods of :data:`FABRIC_SUITE`. An entry
whose preset is optional and whose CC this ccgym lacks (Homa until it is merged) is reported as
skipped; it is measured, with no change here, once the CC exists."""
FABRIC_INCAST_FLOWS = 16
"""The incast size measured beside the fabric entries by default (the per-hop reference)."""


def fabric_scenario(method: str, duration: str | float = DEFAULT_DURATION) -> dict[str, Any]:
    """The 144-host WebSearch scenario at 0.6 load under ``method``'s preset of the
    ``receiver-driven`` suite, ``duration`` long, summary window the whole run."""
    from ccgym.bench.runner import _preset_scenario, load_suite

    suite = load_suite(FABRIC_SUITE)
    presets = suite.get("presets") or {}
    if method not in presets:
        why = "its CC is not built in" if method in suite.get("skipped_methods", []) else "unknown"
        raise ValueError(f"no fabric perf entry {method!r} ({why}; known: {', '.join(presets)})")
    overrides = [f"workload[0].load={FABRIC_LOAD}", f"duration={duration}", "seed=1"]
    data = _preset_scenario(FABRIC_SCENARIO, overrides, method, presets[method])
    data["name"] = f"perf-fabric-{method}"
    data.setdefault("metrics", {}).pop("window", None)
    data["metrics"]["flow_series"] = False
    return data


def fabric_methods() -> tuple[list[str], list[str]]:
    """The fabric entries that can run here, and those skipped (their CC is missing)."""
    from ccgym.bench.runner import load_suite

    suite = load_suite(FABRIC_SUITE)
    presets = suite.get("presets") or {}
    runnable = [m for m in FABRIC_METHODS if m in presets]
    return runnable, [m for m in FABRIC_METHODS if m not in presets]


def measure_fabric(method: str, duration: str | float = DEFAULT_DURATION) -> dict[str, Any]:
    """Run the fabric entry ``method`` in this process and return its measurements, as
    :func:`measure` does, plus simulated time per CPU second and the CPU time 100 ms of
    simulated time take at that pace."""
    sim_mod = native()
    sim = sim_mod.Simulation(scenario_json(fabric_scenario(method, duration)), os.getcwd())
    end = int(sim.end_ps)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    advance(sim, end, max(end // PROGRESS_STEPS, 1))
    cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
    events, hops = int(sim.events), int(sim.packet_hops)
    sim_s = int(sim.now_ps) / 1e12
    return {
        "entry": "fabric",
        "method": method,
        "scenario": f"{FABRIC_SCENARIO} at load {FABRIC_LOAD}",
        "sim_time_s": sim_s,
        "events": events,
        "packet_hops": hops,
        "cpu_s": cpu_s,
        "wall_s": wall_s,
        **_speed(events, hops, cpu_s),
        "sim_per_cpu_s": sim_s / cpu_s if cpu_s > 0 else None,
        "cpu_s_per_100ms": cpu_s * 0.1 / sim_s if sim_s > 0 else None,
        "setup_s": float(sim.setup_seconds),
        "peak_rss_mb": _peak_rss_mb(),
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

    Returns ``{"incast": [rows of run_perf], "fabric": [rows], "skipped": [methods]}``; each
    fabric row gets ``ratio_vs_incast``: its ns per packet-hop over the mean of the incast rows',
    measured in the same invocation so that it holds on a noisy machine.
    """
    runnable, skipped = fabric_methods()
    chosen = list(methods) if methods is not None else runnable
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
    return {"incast": incast, "fabric": rows, "skipped": [m for m in skipped if m not in chosen]}
