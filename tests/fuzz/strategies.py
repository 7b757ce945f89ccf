"""Hypothesis strategies for the fuzzer: scenarios and bridge call sequences.

A generated scenario starts from one of the bundled scenarios (``python/ccgym/scenarios``), shrunk
so that a valid case runs in well under a second: a few hosts, at most a millisecond of
simulated time chosen from a packet budget, start, stop, window and message times placed as
fractions of that duration. Then valid mutations change topology sizes, rates, delays, buffer
models and sizes, PFC, ECN, queue disciplines, transports, the CC algorithm and its parameters,
workloads (long, explicit flows, message trains, Poisson from a CDF, incast), the metrics
window, ``[[link]]`` entries (rate schedules, loss, policers) and native-policy agents. With
some probability one *hostile* mutation follows: one field set to zero, a negative, huge, NaN or
infinite number, a wrong type, or one of the known failure patterns of issue 16 (absurd flow or
message counts, picosecond decision intervals, impossible buffers, stop before start, ...).

Every case carries ``tags``: the hostile mutation it got and, when the mutation is one of the
issue's classes, ``class N``. ``PENDING_CLASSES`` lists classes whose generators the fixed
profile leaves out while their fixes are not merged (empty once they are).
"""

from __future__ import annotations

import atexit
import copy
import json
import math
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
SCENARIO_DIR = ROOT / "python" / "ccgym" / "scenarios"
POLICY = ROOT / "python" / "ccgym" / "policies" / "adpg-default.json"

BUNDLED: dict[str, dict[str, Any]] = {
    p.stem: tomllib.loads(p.read_text()) for p in sorted(SCENARIO_DIR.glob("*.toml"))
}

PENDING_CLASSES: frozenset[int] = frozenset()
"""Issue-16 classes whose hostile generators are kept out of the fixed profile (see the
module doc); the long profile always includes them."""

PACKET_BUDGET = 60_000
"""Data packets a valid case may offer per host link, which bounds its run time: the duration is
chosen from it, the link rate and the packet size."""

# A CDF whose sizes are all zero (class 1: "sizes average zero"), written once per session.
_TMP = Path(tempfile.mkdtemp(prefix="ccgym-fuzz-"))
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
ZERO_CDF = _TMP / "zero.cdf"
ZERO_CDF.write_text("0 0.5\n0 1.0\n")
TINY_CDF = _TMP / "tiny.cdf"
TINY_CDF.write_text("1 0.1\n2000 1.0\n")  # small flows, but not millions of them

HOSTILE_NUMBERS = [0, -1, -0.5, 1e300, -1e300, math.nan, math.inf, -math.inf, 2**64, 2**63,
                   -(2**63), 10**30, 0.5]  # fmt: skip
HOSTILE_VALUES = HOSTILE_NUMBERS + ["", "abc", "1e999", "-5us", "NaN", "inf", True, [], {}, None,
                                    [1, 2], "10 parsecs"]  # fmt: skip

CC_NAMES = ["line_rate", "fixed_rate", "dcqcn", "hpcc", "swift", "timely", "dctcp", "newreno",
            "cubic", "ndp", "eqds"]  # fmt: skip


def _ns(x: float) -> str:
    return f"{max(int(round(x)), 0)}ns"


def n_hosts(topo: dict[str, Any]) -> int:
    kind = topo.get("kind")
    if kind == "star":
        return int(topo["hosts"])
    if kind == "dumbbell":
        return int(topo["left"]) + int(topo["right"])
    if kind == "leaf_spine":
        return int(topo["leaves"]) * int(topo["hosts_per_leaf"])
    if kind == "fat_tree":
        return int(topo["k"]) ** 3 // 4
    return sum(1 for n in topo.get("nodes", []) if n.get("kind") == "host")


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """Set ``a.b[2].c`` in nested dicts and lists, creating missing tables."""
    parts: list[str | int] = []
    for piece in path.split("."):
        if "[" in piece:
            name, idx = piece[:-1].split("[")
            parts += [name, int(idx)]
        else:
            parts.append(piece)
    node: Any = data
    for key in parts[:-1]:
        if isinstance(key, int):
            node = node[key]
        else:
            if not isinstance(node.get(key), (dict, list)):
                node[key] = {}
            node = node[key]
    node[parts[-1]] = value


# ------------------------------------------------------------------------------ value pools

rates = st.sampled_from(["1Gbps", "10Gbps", "25Gbps", "40Gbps", "100Gbps", "200Gbps", "400Gbps",
                         "100Mbps", 5e9])  # fmt: skip
delays = st.sampled_from(["0s", "100ns", "1us", "2us", "5us", "20us", "100us", 1e-6])
sizes = st.sampled_from(["1KB", "4KiB", "64KiB", "150KiB", "1MiB", "10MiB", "32MiB", 2048, 100_000])
small_sizes = st.sampled_from([1, 100, 1000, 1024, 1500, 4096, 10_000, 65_536, 200_000, "256KiB"])


@st.composite
def cc_table(draw: st.DrawFn) -> dict[str, Any]:
    """A CC algorithm with some of its parameters drawn around their kinds of value."""
    algo = draw(st.sampled_from(CC_NAMES))
    table: dict[str, Any] = {"algorithm": algo}
    params = CC_PARAMS.get(algo, {})
    for name in draw(st.lists(st.sampled_from(sorted(params)), max_size=3, unique=True)) \
            if params else []:  # fmt: skip
        table[name] = draw(params[name])
    return table


_unit = st.floats(0.01, 1.0)
CC_PARAMS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "fixed_rate": {"rate": rates, "window": st.sampled_from([0, 1000, 64_000, "1MiB"])},
    "dcqcn": {"preset": st.sampled_from(["paper", "mellanox"]), "g": _unit,
              "rate_ai": st.sampled_from(["5Mbps", "40Mbps", "1Gbps"]),
              "min_rate": st.sampled_from(["10Mbps", "100Mbps", "1Gbps"]),
              "rp_timer": st.sampled_from(["1us", "55us", "300us"]),
              "fast_recovery": st.integers(0, 10), "clamp_target": st.booleans()},
    "hpcc": {"variant": st.sampled_from(["window", "rate", "pint"]), "eta": st.floats(0.5, 1.0),
             "max_stage": st.integers(0, 5), "fast_react": st.booleans(),
             "r_min": st.sampled_from(["100Mbps", "1Gbps"])},
    "swift": {"ai": st.floats(0.1, 5), "beta": _unit, "max_mdf": st.floats(0.1, 0.9),
              "min_cwnd": st.floats(0.001, 1), "max_cwnd": st.floats(10, 2000)},
    "timely": {"preset": st.sampled_from(["hpcc_ns3", "paper"]), "alpha": _unit, "beta": _unit,
               "hai_thresh": st.integers(1, 10)},
    "dctcp": {"variant": st.sampled_from(["window", "rate"]), "g": _unit,
              "init_cwnd": st.integers(1, 50), "min_cwnd": st.integers(1, 4)},
    "newreno": {"init_cwnd": st.integers(1, 50), "ecn": st.booleans()},
    "cubic": {"c": st.floats(0.1, 2), "beta": st.floats(0.1, 0.9), "hystart": st.booleans(),
              "ecn": st.booleans()},
}  # fmt: skip


# ------------------------------------------------------------------------------ base scenarios


class Plan:
    """Times of a scenario as fractions of its duration, set once the duration is chosen."""

    def __init__(self) -> None:
        self.times: list[tuple[str, Any]] = []

    def at(self, path: str, frac: float | list[float]) -> None:
        self.times.append((path, frac))

    def apply(self, data: dict[str, Any], duration_ns: int) -> None:
        for path, frac in self.times:
            value: Any = ([_ns(f * duration_ns) for f in frac] if isinstance(frac, list)
                          else _ns(frac * duration_ns))  # fmt: skip
            set_path(data, path, value)


fractions = st.floats(0.0, 0.6)


@st.composite
def shrink_topology(draw: st.DrawFn, topo: dict[str, Any]) -> dict[str, Any]:
    topo = dict(topo)
    kind = topo["kind"]
    if kind == "star":
        topo["hosts"] = draw(st.integers(2, 9))
    elif kind == "dumbbell":
        topo["left"], topo["right"] = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        topo["link_delay"] = draw(delays)
        topo["bottleneck_delay"] = draw(delays)
        topo["bottleneck_rate"] = draw(rates)
    elif kind == "leaf_spine":
        topo["leaves"], topo["spines"] = draw(st.integers(1, 3)), draw(st.integers(1, 2))
        topo["hosts_per_leaf"] = draw(st.integers(2, 3))
    elif kind == "fat_tree":
        topo["k"] = draw(st.sampled_from([2, 4]))
    return topo


@st.composite
def workload_entry(
    draw: st.DrawFn,
    kind: str,
    hosts: int,
    index: int,
    plan: Plan,
    template: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A workload of ``kind`` on ``hosts`` hosts (from the bundled ``template`` if given)."""
    w: dict[str, Any] = {"kind": kind}
    if template:
        w.update(
            {
                k: v
                for k, v in template.items()
                if k in ("pattern", "cdf", "sampling", "load", "size", "fan_in", "class")
            }
        )
    where = f"workload[{index}]"
    host = st.integers(0, hosts - 1)
    if kind == "long":
        pattern = w.get("pattern", draw(st.sampled_from(["many_to_one", "all_to_all"])))
        w["pattern"] = pattern
        if pattern == "many_to_one":
            w["receiver"] = draw(host)
        w["flows_per_host"] = draw(st.integers(1, 2))
        if draw(st.booleans()):
            a, b = sorted(draw(st.lists(fractions, min_size=2, max_size=2)))
            plan.at(f"{where}.start", [a, b])
        if draw(st.booleans()):
            w["size"] = draw(small_sizes)
        elif draw(st.booleans()):
            plan.at(f"{where}.stop", draw(st.floats(0.7, 1.0)))
    elif kind == "flows":
        flows = []
        for j in range(draw(st.integers(1, 4))):
            src = draw(host)
            dst = draw(host.filter(lambda d, s=src: d != s))
            f: dict[str, Any] = {"src": src, "dst": dst}
            if draw(st.booleans()):
                f["size"] = draw(small_sizes)
            plan.at(f"{where}.flows[{j}].start", draw(fractions))
            flows.append(f)
        w["flows"] = flows
    elif kind in ("messages", "incast"):
        w["receiver"] = draw(host)
        w["size"] = draw(small_sizes)
        count = draw(st.integers(1, 4))
        w["count"] = count
        plan.at(f"{where}.start", draw(st.floats(0.0, 0.3)))
        if count > 1:
            plan.at(f"{where}.period", draw(st.floats(0.05, 0.6 / count)))
        if kind == "messages":
            w["flows_per_host"] = draw(st.integers(1, 2))
        elif hosts > 2 and draw(st.booleans()):
            w["fan_in"] = draw(st.integers(1, hosts - 1))
        else:
            w.pop("fan_in", None)
    elif kind == "poisson":
        w.setdefault("cdf", draw(st.sampled_from(["fb_hadoop_hpcc", "websearch_dctcp2010_hpcc",
                                                  str(TINY_CDF)])))  # fmt: skip
        w["load"] = draw(st.floats(0.05, 1.0))
        w["sampling"] = draw(st.sampled_from(["interpolate", "step"]))
        w["max_size"] = draw(st.sampled_from(["20KB", "200KB", "1MB"]))
        plan.at(f"{where}.start", draw(st.floats(0.0, 0.3)))
        if draw(st.booleans()):
            plan.at(f"{where}.stop", draw(st.floats(0.5, 1.0)))
    if draw(st.integers(0, 5)) == 0:
        w["cc"] = draw(cc_table())
    return w


@st.composite
def base_scenario(draw: st.DrawFn) -> tuple[dict[str, Any], Plan]:
    """A bundled scenario shrunk to a few hosts; its times are left in the plan."""
    name = draw(st.sampled_from(sorted(BUNDLED)))
    sc = copy.deepcopy(BUNDLED[name])
    plan = Plan()
    sc["topology"] = draw(shrink_topology(sc["topology"]))
    if "uplink_delay" in sc["topology"] and draw(st.booleans()):
        sc["topology"]["uplink_delay"] = draw(delays)
    hosts = n_hosts(sc["topology"])
    workloads = []
    for i, w in enumerate(sc["workload"][:2]):
        kind = w["kind"] if hosts > 2 or w["kind"] != "messages" else "flows"
        workloads.append(draw(workload_entry(kind, hosts, i, plan, template=w)))
    sc["workload"] = workloads
    sc.pop("metrics", None)
    sc["metrics"] = {"flow_series": draw(st.sampled_from([True, False, "auto"]))}
    w0 = draw(st.sampled_from([0.0, 0.1, 0.5]))
    plan.at("metrics.window", [w0, 1.0])
    plan.at("metrics.sample_interval", draw(st.sampled_from([0.01, 0.05, 0.2])))
    for i, link in enumerate(sc.get("link", [])):
        steps = link.get("schedule", [])
        for j, _ in enumerate(steps):  # spread inside the run: a step past its end is an error
            plan.at(f"link[{i}].schedule[{j}].at", 0.9 * (j + 1) / (len(steps) + 1))
    # Bundled timeouts are milliseconds to seconds; keep some so that timeouts can fire.
    if draw(st.booleans()):
        sc.setdefault("host", {})["rto"] = draw(st.sampled_from(["20us", "100us", "1ms"]))
    return sc, plan


# ------------------------------------------------------------------------------ valid mutations


def _valid_mutations(hosts: int, kind: str) -> list[tuple[str, st.SearchStrategy[Any]]]:
    muts: list[tuple[str, st.SearchStrategy[Any]]] = [
        ("seed", st.integers(0, 2**32)),
        ("topology.link_rate", rates),
        ("topology.link_delay", delays),
        ("switch.buffer", sizes),
        ("switch.queue_cap", sizes),
        ("switch.dt_alpha", st.sampled_from([0.0, 0.25, 1.0, 8.0])),
        ("switch.queues", st.integers(2, 8)),
        ("switch.scheduler", st.sampled_from(["strict", "rr", "wrr", "drr"])),
        ("switch.discipline", st.sampled_from(["fifo", "priority", "rank"])),
        ("switch.priorities", st.integers(1, 8)),
        ("switch.buffer_model", st.sampled_from(["shared", "static"])),
        ("switch.port_buffer", st.sampled_from([0, "36KiB", "150KiB", 10_000])),
        ("switch.latency", delays),
        ("switch.ack_high_priority", st.booleans()),
        (
            "switch.ecn",
            st.fixed_dictionaries(
                {
                    "enabled": st.booleans(),
                    "kmin": st.sampled_from(["5KB", "100KB"]),
                    "kmax": st.sampled_from(["100KB", "400KB", "1500KiB"]),
                    "pmax": st.floats(0.0, 1.0),
                    "at": st.sampled_from(["dequeue", "enqueue"]),
                }
            ),
        ),
        (
            "switch.pfc",
            st.fixed_dictionaries(
                {"enabled": st.booleans()},
                optional={
                    "alpha": st.sampled_from([0.0625, 0.125, 1.0]),
                    "reserve": st.sampled_from([0, 1024, 4096]),
                    "headroom": st.sampled_from([0, "50KB"]),
                },
            ),
        ),
        ("host.burst", st.sampled_from(["1KiB", "4KiB", "64KiB"])),
        ("host.ack_every", st.integers(1, 4)),
        ("host.cnp_interval", st.sampled_from(["0s", "4us", "50us"])),
        (
            "host.loss_recovery",
            st.sampled_from(["auto", "go_back_n", "tcp", "credit", "ndp", "eqds"]),
        ),
        # NDP's switches and hosts: trimming (with any transport), the header queue, the
        # initial window and the pull pacer.
        ("switch.trim", st.booleans()),
        ("switch.trim_header_queue", st.sampled_from([0, 200, "10KB"])),
        ("host.ndp_iw", st.sampled_from([1, 4, 16])),
        ("host.ndp_pull_rate", st.sampled_from([0.5, 0.99, 1.0])),
        ("host.ndp_pull_order", st.sampled_from(["round_robin", "srpt"])),
        ("host.eqds_window", st.sampled_from([1, 4, 64])),
        ("host.eqds_slow_pulls", st.booleans()),
        ("host.phost_hold", st.sampled_from(["adaptive", "yaps"])),
        ("host.newreno_timer", st.sampled_from(["every_partial_ack", "first_partial_ack"])),
        ("host.max_outstanding", st.sampled_from([0, "64KiB", "640KiB"])),
        ("host.tx_jitter", st.sampled_from([0.0, 0.5, 1.0])),
        ("host.scheduler", st.sampled_from(["round_robin", "srpt"])),
        ("host.rto", st.sampled_from(["0s", "50us", "1ms"])),
        ("packets.payload", st.sampled_from([256, 1000, 1024, 1460, 4096, 9000])),
        ("packets.header", st.sampled_from([0, 40, 48, 64])),
        ("cc", cc_table()),
        ("workload[0].class", st.integers(1, 2)),
    ]
    if kind == "star":
        muts.append(("topology.hosts", st.integers(2, 9)))
    elif kind == "dumbbell":
        muts.append(("topology.bottleneck_rate", rates))
    elif kind in ("leaf_spine", "fat_tree"):
        muts += [("topology.fabric_rate", rates), ("topology.fabric_delay", delays)]
    return muts


@st.composite
def link_entry(draw: st.DrawFn, sc: dict[str, Any], plan: Plan) -> dict[str, Any] | None:
    """A ``[[link]]`` entry on a host uplink (every topology has one named ``h0 -> switch``)."""
    topo = sc["topology"]
    first_switch = {"star": "sw0", "dumbbell": "left", "leaf_spine": "leaf0",
                    "fat_tree": "edge0"}.get(topo["kind"])  # fmt: skip
    if first_switch is None:
        return None
    h = "h0"
    frm, to = draw(st.sampled_from([(h, first_switch), (first_switch, h)]))
    entry: dict[str, Any] = {"from": frm, "to": to, "both_directions": draw(st.booleans())}
    index = len(sc.get("link", []))
    if draw(st.booleans()):
        steps = draw(st.integers(1, 3))
        entry["schedule"] = [{"rate": draw(rates)} for _ in range(steps)]
        for j in range(steps):
            plan.at(f"link[{index}].schedule[{j}].at", (j + 1) / (steps + 1))
    if draw(st.booleans()):
        entry["loss"] = draw(st.sampled_from([0.0, 0.001, 0.05, 0.5]))
    if draw(st.booleans()) or len(entry) == 3:
        entry["policer"] = {"rate": draw(rates), "burst": draw(st.sampled_from(["16KiB", "1MB"]))}
    return entry


def _native_agent(sc: dict[str, Any], precision: str) -> None:
    """Every flow an agent driven by the bundled native policy (no Python in the loop)."""
    meta = json.loads(POLICY.read_text())["meta"]["agent"]
    sc["cc"] = {"algorithm": "agent"}
    for w in sc["workload"]:
        w.pop("cc", None)
        for f in w.get("flows", []):
            f.pop("cc", None)
    sc["agent"] = {**meta, "policy": str(POLICY), "precision": precision}


# ------------------------------------------------------------------------------ hostile mutations


@st.composite
def hostile_mutation(
    draw: st.DrawFn, sc: dict[str, Any], d_ns: int, exclude: frozenset[int]
) -> tuple[str, int | None]:
    """Apply one hostile change to ``sc``; return its description and issue-16 class (or None).
    A description that starts with ``reject:`` is a scenario that cannot work as written and
    must be refused; ``exact-int:`` marks an integer too large for a double's mantissa."""
    hosts = n_hosts(sc["topology"])
    known: list[tuple[int, str]] = [
        (1, "messages_count"), (1, "incast_count"), (1, "flows_per_host"), (1, "zero_cdf"),
        (2, "agent_interval"), (3, "pfc_reserves"), (3, "tiny_lossy_buffer"),
        (7, "stop_before_start"), (8, "nan_number"), (8, "huge_int"), (9, "series_memory"),
    ]  # fmt: skip
    choices = [name for cls, name in known if cls not in exclude] + ["field"] * 6
    choice = draw(st.sampled_from(choices))
    cls = next((c for c, n in known if n == choice), None)
    w0 = sc["workload"][0]
    if choice == "messages_count":
        sc["workload"][0] = {"kind": "messages", "receiver": 0, "size": 1000,
                             "count": draw(st.sampled_from([10**7, 10**9, 2**40])),
                             "period": draw(st.sampled_from(["1ps", "1ns"]))}  # fmt: skip
    elif choice == "incast_count":
        sc["workload"][0] = {
            "kind": "incast",
            "receiver": 0,
            "size": 1000,
            "count": draw(st.sampled_from([10**7, 10**9])),
            "period": "1ps",
        }
    elif choice == "flows_per_host":
        sc["workload"][0] = {
            "kind": "long",
            "receiver": 0,
            "flows_per_host": draw(st.sampled_from([10**7, 10**9, 2**40])),
        }
    elif choice == "zero_cdf":
        sc["workload"][0] = {"kind": "poisson", "load": 1.0, "cdf": str(ZERO_CDF)}
    elif choice == "agent_interval":
        sc["cc"] = {"algorithm": "agent"}
        for w in sc["workload"]:
            w.pop("cc", None)
            for f in w.get("flows", []):
                f.pop("cc", None)
        sc["agent"] = {**json.loads(POLICY.read_text())["meta"]["agent"], "policy": str(POLICY),
                       "trigger": "interval", "hold_ticks": 0,
                       "interval": draw(st.sampled_from(["1ps", "3ps", "10ps"]))}  # fmt: skip
        sc["duration"] = "2ms"
        set_path(sc, "metrics.window", ["0s", "2ms"])
        set_path(sc, "metrics.sample_interval", "100us")
    elif choice == "pfc_reserves":
        # Reserves and headroom of every ingress port may not fit: the run must then be refused,
        # or its queues must stay within the buffer (the buffer property checks it).
        sc["switch"] = {
            **sc.get("switch", {}),
            "pfc": {"enabled": True},
            "buffer": draw(st.sampled_from(["64KiB", "256KiB", "1MiB"])),
            "buffer_model": "shared",
            "discipline": "fifo",
        }
    elif choice == "tiny_lossy_buffer":
        # Smaller than the smallest full packet the strategies make (256 bytes of payload).
        sc["switch"] = {
            **sc.get("switch", {}),
            "pfc": {"enabled": False},
            "buffer": draw(st.sampled_from([1, 100, 200])),
        }
        return f"reject: {choice}", cls
    elif choice == "stop_before_start":
        src, dst = (1 % hosts), 0
        sc["workload"][0] = {
            "kind": "flows",
            "flows": [{"src": src, "dst": dst, "start": _ns(0.5 * d_ns), "stop": _ns(0.2 * d_ns)}],
        }
        return f"reject: {choice}", cls
    elif choice == "nan_number":
        path = draw(st.sampled_from(["switch.dt_alpha", "switch.ecn.pmax", "host.tx_jitter",
                                     "workload[0].load", "topology.link_rate", "duration",
                                     "switch.buffer", "host.min_rate_fraction"]))  # fmt: skip
        set_path(sc, path, draw(st.sampled_from([math.nan, math.inf, -math.inf])))
        return f"reject: {choice} {path}", cls
    elif choice == "huge_int":
        path = draw(
            st.sampled_from(
                [
                    "seed",
                    "switch.queues",
                    "packets.payload",
                    "switch.buffer",
                    "host.ack_every",
                    "workload[0].flows_per_host",
                ]
            )
        )
        set_path(sc, path, draw(st.sampled_from([2**64, 2**70, -(2**64)])))
        return f"reject: exact-int: {choice} {path}", cls
    elif choice == "series_memory":
        sc["workload"] = [{"kind": "long", "receiver": 0, "flows_per_host": 50_000,
                           "start": "1s"}]  # fmt: skip
        sc["duration"] = "1s"
        sc["metrics"] = {"window": ["0s", "1s"], "sample_interval": "1us", "flow_series": True}
        for table in ("link",):
            sc.pop(table, None)
    else:
        path = draw(st.sampled_from(HOSTILE_FIELDS + [f"workload[0].{k}" for k in w0
                                                      if k not in ("kind",)]))  # fmt: skip
        # Half a second is a valid duration, only a long one: not a hostile value there.
        pool = [v for v in HOSTILE_VALUES if v != 0.5] if path == "duration" else HOSTILE_VALUES
        value = draw(st.sampled_from(pool))
        try:
            set_path(sc, path, value)
        except (IndexError, TypeError, KeyError, AttributeError):
            return f"field {path} (not applicable)", None
        exact = isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**53
        return ("exact-int: " if exact else "") + f"field {path} = {value!r}", None
    return choice, cls


HOSTILE_FIELDS = [
    "seed", "duration", "name", "topology.kind", "topology.link_rate", "topology.link_delay",
    "switch.buffer", "switch.queue_cap", "switch.dt_alpha", "switch.queues", "switch.scheduler",
    "switch.weights", "switch.quantum", "switch.discipline", "switch.priorities",
    "switch.buffer_model", "switch.port_buffer", "switch.latency", "switch.int_header",
    "switch.ecn.kmin", "switch.ecn.kmax", "switch.ecn.pmax", "switch.ecn.at", "switch.pfc.alpha",
    "switch.pfc.enabled", "switch.pfc.headroom", "switch.pfc.reserve", "switch.pfc.resume_offset",
    "host.burst", "host.ack_every", "host.cnp_interval", "host.nack_interval", "host.rto",
    "host.rto_min", "host.loss_recovery", "host.max_outstanding", "host.min_rate_fraction",
    "host.tx_jitter", "host.scheduler", "host.ndp_iw", "host.ndp_pull_rate", "host.eqds_window",
    "host.eqds_slow_pulls", "host.phost_hold", "host.newreno_timer", "switch.trim",
    "switch.trim_header_queue",
    "packets.payload", "packets.header", "packets.ack", "packets.probe", "packets.pfc",
    "cc.algorithm", "cc.rate", "cc.g", "metrics.window", "metrics.sample_interval",
    "metrics.flow_series", "workload", "topology", "switch", "cc", "agent", "link",
]  # fmt: skip


# ------------------------------------------------------------------------------ full cases


@st.composite
def scenario_case(
    draw: st.DrawFn, hostile: bool = True, exclude: frozenset[int] = frozenset()
) -> dict[str, Any]:
    """A case: ``scenario`` (the dict to run) and ``tags`` (what was done to it)."""
    sc, plan = draw(base_scenario())
    tags: list[str] = [f"base {sc.get('name')}"]
    kind = sc["topology"]["kind"]
    for path, strategy in draw(st.lists(st.sampled_from(_valid_mutations(n_hosts(sc["topology"]),
                                                                          kind)),
                                        max_size=4)):  # fmt: skip
        set_path(sc, path, draw(strategy))
        tags.append(f"set {path}")
    hosts = n_hosts(sc["topology"])
    if hosts != n_hosts(BUNDLED[sc["name"]]["topology"]) and "topology.hosts" in " ".join(tags):
        # The host count changed after the workloads were drawn: redraw them on the new count.
        plan = Plan()
        sc["workload"] = [draw(workload_entry(w["kind"], hosts, i, plan))
                          for i, w in enumerate(sc["workload"])]  # fmt: skip
        plan.at("metrics.window", [0.0, 1.0])
        plan.at("metrics.sample_interval", 0.05)
        sc.pop("link", None)
    if draw(st.integers(0, 3)) == 0:
        kind_w = draw(st.sampled_from(["long", "flows", "messages", "incast", "poisson"]))
        if kind_w != "poisson" or hosts >= 2:
            sc["workload"].append(draw(workload_entry(kind_w, hosts, len(sc["workload"]), plan)))
            tags.append(f"add workload {kind_w}")
    if draw(st.integers(0, 3)) == 0:
        entry = draw(link_entry(sc, plan))
        if entry is not None:
            sc.setdefault("link", []).append(entry)
            tags.append("add link")
    if draw(st.integers(0, 5)) == 0:
        _native_agent(sc, draw(st.sampled_from(["float32", "int8"])))
        tags.append("native agent")
    # The duration comes last, from the packet budget: the fastest host link at line rate
    # offers PACKET_BUDGET packets of the smallest payload at most.
    payload = (sc.get("packets") or {}).get("payload", 1024)
    rate = _rate_bps(sc["topology"].get("link_rate", "100Gbps"))
    wire = max(int(payload), 64) if isinstance(payload, int) else 1024
    d_max_ns = max(int(PACKET_BUDGET * wire * 8 / rate * 1e9), 20_000)
    d_ns = draw(st.integers(10_000, min(d_max_ns, 1_000_000)))
    sc["duration"] = _ns(d_ns)
    plan.apply(sc, d_ns)
    case: dict[str, Any] = {"scenario": sc, "tags": tags}
    if hostile and draw(st.integers(0, 9)) < 4:
        what, cls = draw(hostile_mutation(sc, d_ns, exclude))
        tags.append(f"hostile {what}" + (f" (class {cls})" if cls else ""))
        if what.startswith("reject: "):
            what = what.removeprefix("reject: ")
            case["expect_reject"] = what
        if what.startswith("exact-int: "):
            # An integer beyond 2^53: an error must not call it a floating-point number.
            case["exact_int"] = True
    return case


def _rate_bps(value: Any) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    units = {"T": 1e12, "G": 1e9, "M": 1e6, "K": 1e3}
    text = str(value).strip().rstrip("bps").rstrip("b/s")
    return float(text[:-1]) * units[text[-1].upper()] if text[-1:].upper() in units \
        else float(text)  # fmt: skip


def case_class(case: dict[str, Any]) -> int | None:
    """The issue-16 class of a case's hostile mutation, if it has one."""
    for tag in case["tags"]:
        if "(class " in tag:
            return int(tag.split("(class ")[1].rstrip(")"))
    return None


# ------------------------------------------------------------------------------ bridge cases


@st.composite
def agent_scenario(draw: st.DrawFn) -> dict[str, Any]:
    """A small star whose flows are external agents, with a drawn ``[agent]`` table."""
    hosts = draw(st.integers(2, 5))
    d_us = draw(st.integers(30, 300))
    action = draw(st.sampled_from(["multiplier", "aurora", "discrete", "rate", "window",
                                   "per_ack"]))  # fmt: skip
    agent: dict[str, Any] = {
        "trigger": draw(st.sampled_from(["probe", "acks", "interval"])),
        "interval": draw(st.sampled_from(["5us", "10us", "20us"])),
        "policy_delay": draw(st.sampled_from(["0s", "1us", "5us"])),
        "action": action,
        "history": draw(st.integers(1, 3)),
        "features": draw(
            st.sampled_from(
                [
                    ["action", "adpg"],
                    ["rtt_mean", "acked_sum"],
                    ["action", "rtt_over_min", "window"],
                ]
            )
        ),  # fmt: skip
    }
    if draw(st.booleans()):
        agent["queues"] = ["sw0->h0"]
        agent["ecn_profiles"] = [{"kmin": 10_000, "kmax": 100_000, "pmax": 0.5},
                                 {"kmin": 50_000, "kmax": 400_000, "pmax": 1.0}]  # fmt: skip
    workload: list[dict[str, Any]] = [{"kind": "long", "receiver": 0,
                                       "flows_per_host": draw(st.integers(1, 2))}]  # fmt: skip
    if draw(st.booleans()):
        workload.append({"kind": "flows", "flows": [{"src": 1, "dst": 0, "size": 20_000,
                                                     "start": f"{d_us // 3}us"}]})  # fmt: skip
    return {
        "name": "fuzz-bridge",
        "seed": draw(st.integers(0, 1000)),
        "duration": f"{d_us}us",
        "topology": {"kind": "star", "hosts": hosts, "link_rate": draw(rates)},
        "cc": {"algorithm": "agent"},
        "agent": agent,
        "metrics": {"sample_interval": "10us"},
        "workload": workload,
    }


action_values = st.lists(
    st.one_of(
        st.floats(-2, 2),
        st.sampled_from([0.0, 1.0, -1.0, 3.0, -7.0, 1e9, -1e9, math.nan, math.inf, -math.inf, 2.5]),
    ),  # fmt: skip
    min_size=1,
    max_size=4,
)
action_spec = st.one_of(
    st.fixed_dictionaries({"values": action_values}),
    st.fixed_dictionaries(
        {
            "values": action_values,
            "len_delta": st.integers(-2, 2),
            "dtype": st.sampled_from(["float32", "float64", "int64", "2d", "list"]),
        }
    ),  # fmt: skip
    st.sampled_from([None, "abc", {"x": 1}, [[1.0, 2.0]]]),
)


@st.composite
def native_calls(draw: st.DrawFn) -> list[list[Any]]:
    calls: list[list[Any]] = []
    for _ in range(draw(st.integers(1, 25))):
        op = draw(st.sampled_from(["agent_step"] * 4 + ["agent_act"] * 4 +
                                  ["run_until", "set_link_rate", "set_ecn", "set_weights",
                                   "queue_stats"]))  # fmt: skip
        if op == "agent_step":
            calls.append([op])
        elif op == "agent_act":
            calls.append([op, draw(action_spec)])
        elif op == "run_until":
            calls.append([op, draw(st.one_of(st.floats(0, 1.5), st.sampled_from([0, 2**63])))])
        elif op == "set_link_rate":
            calls.append(
                [
                    op,
                    draw(
                        st.sampled_from([0, 1, 3, 10**6, "sw0->h0", "h0->sw0", "nowhere", -1])
                    ),  # fmt: skip
                    draw(st.sampled_from([1e9, 1.0, 0.0, -5.0, 1e30, 4e11, 1e15])),
                ]
            )
        elif op == "set_ecn":
            calls.append(
                [
                    op,
                    [draw(st.integers(-1, 12))],
                    [draw(st.integers(-1, 3))],
                    [draw(st.sampled_from([0, 1000, 2**62]))],
                    [draw(st.sampled_from([0, 100_000, 2**62]))],
                    [draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0]))],
                ]
            )
        elif op == "set_weights":
            calls.append(
                [
                    op,
                    [draw(st.integers(-1, 12))],
                    [draw(st.integers(-1, 3))],
                    [draw(st.sampled_from([0, 1, 5, 2**40, -3]))],
                ]
            )
        else:
            calls.append([op, [draw(st.integers(-1, 12))], [draw(st.integers(-1, 3))]])
    return calls


@st.composite
def pool_calls(draw: st.DrawFn) -> list[list[Any]]:
    calls: list[list[Any]] = []
    for _ in range(draw(st.integers(1, 25))):
        op = draw(st.sampled_from(["step"] * 4 + ["act"] * 4 + ["reset"]))
        if op == "step":
            calls.append([op])
        elif op == "act":
            calls.append([op, draw(action_spec)])
        else:
            calls.append([op, draw(st.sampled_from([None, 0, 1, 7, 2**31]))])
    return calls


@st.composite
def parallel_calls(draw: st.DrawFn) -> list[list[Any]]:
    """PettingZoo calls: ``reset`` and ``step`` with actions for some live agents and maybe for
    agents that do not exist."""
    calls: list[list[Any]] = [["reset", draw(st.integers(0, 100))]]
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.integers(0, 7)) == 0:
            calls.append(["reset", draw(st.sampled_from([None, 0, 5]))])
            continue
        calls.append(
            [
                "step",
                {
                    "drop": draw(st.integers(0, 2)),
                    "extra": draw(
                        st.lists(
                            st.sampled_from(["flow_999", "nobody", "flow_-1"]),
                            max_size=2 if draw(st.integers(0, 3)) == 0 else 0,
                        )
                    ),
                    "value": draw(st.sampled_from([0.0, 0.5, -1.0, 1.0])),
                },
            ]
        )
    return calls
