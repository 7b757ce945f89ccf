"""Minimal reproducers of the failures the fuzzer found on main (issue 16 at 73f714a, and later).

Each entry is one small case and the property it broke there; ``tests/test_fuzz.py`` runs them
all through the worker, so they pass once the issue's fixes are in. The ``cls`` is the issue's
class (``0``: not one of its nine classes).
"""

from __future__ import annotations

import atexit
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
POLICY = str(ROOT / "python" / "ccgym" / "policies" / "adpg-default.json")

_TMP = Path(tempfile.mkdtemp(prefix="ccgym-repro-"))
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
ZERO_CDF = _TMP / "zero.cdf"
ZERO_CDF.write_text("0 0.5\n0 1.0\n")
TINY_CDF = _TMP / "tiny.cdf"
TINY_CDF.write_text("1 0.5\n64 1.0\n")
SMALL_CDF = _TMP / "small.cdf"
SMALL_CDF.write_text("1 0.1\n2000 1.0\n")


def _star(hosts: int, **extra: Any) -> dict[str, Any]:
    return {"kind": "star", "hosts": hosts, **extra}


def _long(**extra: Any) -> list[dict[str, Any]]:
    return [{"kind": "long", "receiver": 0, **extra}]


_poisson_trace = {"kind": "poisson", "rate": "3.04Mbps"}


def _flow(**extra: Any) -> list[dict[str, Any]]:
    return [{"kind": "flows", "flows": [{"src": 0, "dst": 1, **extra}]}]


# (id, class, property, case). The property is one of "outcome" (refused naming a field, or
# finished within budget), "reject" (must be refused), "buffer", "slowdown", "utilisation".
SCENARIOS: list[tuple[str, int, str, dict[str, Any]]] = [
    ("messages-count", 1, "outcome", {"duration": "1ms", "topology": _star(2), "workload": [
        {"kind": "messages", "receiver": 0, "size": 1000, "count": 10**9, "period": "1ps"}]}),
    ("incast-count", 1, "outcome", {"duration": "1ms", "topology": _star(3), "workload": [
        {"kind": "incast", "receiver": 0, "size": 1000, "count": 10**9, "period": "1ps"}]}),
    ("zero-mean-cdf", 1, "outcome", {"duration": "1ms", "topology": _star(2), "workload": [
        {"kind": "poisson", "load": 1.0, "cdf": str(ZERO_CDF)}]}),
    # About 1.9 million flows (under the 5 million limit) of about 1.4 kB each: 2.7 GB at set-up.
    ("poisson-2M-flows", 1, "outcome", {"duration": "300us", "topology": _star(9), "workload": [
        {"kind": "poisson", "load": 1.0, "cdf": str(TINY_CDF)}]}),
    ("agent-interval-1ps", 2, "outcome", {
        "duration": "2ms", "topology": _star(3), "cc": {"algorithm": "agent"},
        "agent": {"policy": POLICY, "trigger": "interval", "interval": "1ps",
                  "features": ["action", "adpg"], "history": 2},
        "workload": _long()}),
    ("pfc-reserves-exceed-buffer", 3, "buffer", {
        "duration": "100us", "topology": _star(17),
        "switch": {"buffer": "256KiB", "pfc": {"enabled": True}}, "workload": _long()}),
    # EQDS receivers pace pulls at 10 Gb/s back across a 100 Mb/s link: the pulls (control,
    # outside admission) pile up there on top of a full buffer of data. The data alone stays
    # within the buffer, which is what the check now bounds for pull transports (class 0).
    ("eqds-pulls-over-a-slow-link", 0, "buffer", {
        "duration": "1ms",
        "topology": {"kind": "dumbbell", "left": 2, "right": 2, "link_rate": "10Gbps",
                     "bottleneck_rate": "100Mbps"},
        "switch": {"buffer": "108KB"}, "cc": {"algorithm": "eqds"},
        "workload": [{"kind": "flows", "flows": [{"src": 2, "dst": 0, "size": 65536},
                                                 {"src": 3, "dst": 1, "size": 65536}]},
                     {"kind": "flows", "flows": [{"src": 0, "dst": 2}, {"src": 1, "dst": 3}]}]}),
    # The same with HOPASS's tokens (paced at 25 Gb/s) across a 100 Mb/s link.
    ("hopass-tokens-over-a-slow-link", 0, "buffer", {
        "duration": "500us",
        "topology": {"kind": "dumbbell", "left": 2, "right": 1, "link_rate": "25Gbps",
                     "bottleneck_rate": "100Mbps", "bottleneck_delay": "20us"},
        "switch": {"buffer": "108KB"}, "cc": {"algorithm": "hopass"},
        "workload": [{"kind": "poisson", "load": 1.0, "cdf": "imc10_benson_pfabric_pkts",
                      "max_size": "20KB"}]}),
    ("lossy-buffer-below-one-packet", 3, "reject", {
        "duration": "100us", "topology": _star(3), "switch": {"buffer": 500},
        "workload": _long()}),
    ("short-last-packet-after-bottleneck", 4, "slowdown", {
        "duration": "100us",
        "topology": {"kind": "dumbbell", "left": 1, "right": 1, "link_rate": "100Gbps",
                     "bottleneck_rate": "10Gbps"},
        "workload": _flow(size=1100)}),
    # The ideal uses the topology's rates; a [[link]] schedule can make a link faster.
    ("schedule-above-topology-rate", 4, "slowdown", {
        "duration": "100us", "topology": _star(2, link_rate="25Gbps"),
        "workload": _flow(size=200_000),
        "link": [{"from": "h0", "to": "sw0", "schedule": [{"at": "1us", "rate": "100Gbps"}]},
                 {"from": "sw0", "to": "h1", "schedule": [{"at": "1us", "rate": "100Gbps"}]}]}),
    ("stop-before-start", 7, "reject", {
        "duration": "100us", "topology": _star(2), "workload": _flow(start="50us", stop="20us")}),
    ("nan-number", 8, "outcome", {
        "duration": "100us", "topology": _star(2), "switch": {"dt_alpha": math.nan},
        "workload": _long()}),
    ("huge-integer", 8, "outcome", {
        "duration": "100us", "seed": 2**64, "topology": _star(2), "workload": _long()}),
    ("huge-integer-accepted", 8, "reject", {
        "duration": "100us", "topology": _star(2), "switch": {"buffer": 2**70},
        "workload": _long()}),
    # 100,000 flows that start at the end: nothing to simulate, but a per-flow series of a
    # million samples (400 GB) is accepted.
    ("flow-series-memory", 9, "outcome", {
        "duration": "1s", "topology": _star(3),
        "metrics": {"sample_interval": "1us", "flow_series": True},
        "workload": _long(flows_per_host=50_000, start="1s")}),
    # Bytes are counted when a packet starts serialising: one packet in a short window.
    ("utilisation-counted-at-serialisation-start", 0, "utilisation", {
        "duration": "20us", "topology": _star(2, link_rate="100Mbps"), "workload": _flow()}),
    # Utilisation is relative to the rate at the end of the window.
    ("utilisation-after-rate-step", 0, "utilisation", {
        "duration": "20us", "topology": _star(2), "workload": _flow(),
        "link": [{"from": "h0", "to": "sw0", "schedule": [{"at": "10us", "rate": "10Gbps"}]}]}),
    # Found on main at 400161f (NDP's session). A sprayed flow crosses a 40 Gbps fabric over four
    # spines at once: its ideal must not assume one path's rate.
    ("sprayed-flow-over-slow-fabric", 0, "slowdown", {
        "duration": "200us",
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 1,
                     "link_rate": "400Gbps", "fabric_rate": "40Gbps"},
        "switch": {"load_balancing": "packet"}, "host": {"loss_recovery": "pfabric"},
        "cc": {"algorithm": "fixed_rate", "rate": "150Gbps"},
        "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": 1_000_000}]}]}),
    # A short last packet sprayed over another spine passes the first one and crosses the far
    # link first: a pipeline over one path is not a lower bound (slowdown 0.987 at 400161f).
    ("sprayed-short-packet-overtakes", 0, "slowdown", {
        "duration": "83274ns",
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                     "link_rate": "10Gbps", "link_delay": "1us", "fabric_rate": "40Gbps",
                     "fabric_delay": "1us"},
        "switch": {"discipline": "priority", "priorities": 3, "load_balancing": "packet",
                   "ecn": {"enabled": False}},
        "host": {"scheduler": "srpt", "burst": 1500, "homa_overcommit": 7, "rto": "100us"},
        "packets": {"payload": 1460, "header": 40}, "cc": {"algorithm": "homa"},
        "workload": [
            {"kind": "poisson", "load": 0.7369793469897714, "cdf": "websearch_pfabric_pkts",
             "sampling": "step", "max_size": "200KB",
             "cc": {"algorithm": "hpcc", "r_min": "1Gbps", "max_stage": 0},
             "start": "23613ns", "stop": "75583ns"},
            {"kind": "poisson", "cdf": str(SMALL_CDF), "load": 0.41396180809086663,
             "sampling": "interpolate", "max_size": "200KB", "start": "0ns"}],
        "metrics": {"window": ["8327ns", "83274ns"], "sample_interval": "4164ns"}}),
    # Cut headers queue as control; with a shared buffer and no port_buffer they had no limit,
    # and 173 of them (6,920 B) stood in a 2,048-byte switch behind a 3 Mb/s trace link.
    ("cut-headers-without-a-port-budget", 0, "buffer", {
        "duration": "229631ns",
        "topology": {"kind": "dumbbell", "left": 1, "right": 3, "link_rate": "10Gbps",
                     "link_delay": "20us", "bottleneck_rate": "40Gbps", "bottleneck_delay": "20us"},
        "switch": {"buffer": 2048, "trim": True, "ecn": {"enabled": False}},
        "host": {"loss_recovery": "tcp", "sack": True, "rto": "1s", "rto_min": "200ms",
                 "max_outstanding": 0, "burst": 1500},
        "packets": {"payload": 1460, "header": 40}, "cc": {"algorithm": "cubic"},
        "workload": [{"kind": "flows", "cc": {"algorithm": "eqds"}, "flows": [
            {"src": 0, "dst": 2}, {"src": 3, "dst": 0, "size": 1000, "start": "135907ns"},
            {"src": 2, "dst": 3, "size": 1024, "start": "25629ns"}]}],
        "link": [{"from": "left", "to": "right", "trace_process": _poisson_trace},
                 {"from": "right", "to": "left", "trace_process": _poisson_trace}],
        "metrics": {"window": ["114816ns", "229631ns"], "sample_interval": "45926ns"}}),
    # ACKs in their flow's data class queue in a rank port: they are not data in flight.
    ("acks-in-a-rank-queue", 0, "buffer", {
        "duration": "20us", "topology": _star(5, uplink_delay="3us", downlink_delay="1us"),
        "switch": {"discipline": "rank", "ack_high_priority": False},
        "workload": [{"kind": "long", "pattern": "many_to_one", "receiver": 1,
                      "flows_per_host": 2},
                     {"kind": "messages", "size": "256KiB", "receiver": 3, "count": 4,
                      "flows_per_host": 2, "start": "10086ns", "period": "5898ns"}]}),
    # One host's receiver scheduler serves one receiver-driven transport: pHost and Homa flows
    # into one host made Homa's scheduler read pHost flows (a panic); now refused.
    ("two-receiver-driven-transports-at-one-host", 0, "outcome", {
        "duration": "1ms", "topology": _star(3), "workload": [
            {"kind": "flows", "flows": [{"src": 1, "dst": 0, "size": 100_000}],
             "cc": {"algorithm": "phost"}},
            {"kind": "flows", "flows": [{"src": 2, "dst": 0, "size": 100_000}],
             "cc": {"algorithm": "homa"}}]}),
]  # fmt: skip


def _agents(**agent: Any) -> dict[str, Any]:
    return {"duration": "200us", "topology": _star(3), "cc": {"algorithm": "agent"},
            "agent": {"trigger": "interval", "interval": "10us", **agent},
            "workload": _long()}  # fmt: skip


# (id, class, op, scenario, calls): every call the worker marks as one to refuse must raise.
BRIDGE: list[tuple[str, int, str, dict[str, Any], list[list[Any]]]] = [
    ("second-act-native", 7, "native_bridge", _agents(),
     [["agent_step"], ["agent_act", {"values": [0.0]}], ["agent_act", {"values": [0.0]}]]),
    ("discrete-out-of-range-native", 7, "native_bridge", _agents(action="discrete"),
     [["agent_step"], ["agent_act", {"values": [99.0]}]]),
    ("ecn-profile-out-of-range-native", 7, "native_bridge",
     _agents(queues=["sw0->h0"], ecn_profiles=[{"kmin": 1000, "kmax": 9000, "pmax": 0.5}]),
     [["agent_step"], ["agent_act", {"values": [5.0]}]]),
    # The network runs on while a blocking decision waits, and the batch grows: agent_act then
    # wants more actions than agent_step returned.
    ("run-until-while-a-batch-waits", 7, "native_bridge", _agents(policy_delay="0s"),
     [["agent_step"], ["run_until", 1.0], ["agent_act", {"values": [0.0]}]]),
    ("second-act-pool", 7, "pool", _agents(),
     [["step"], ["act", {"values": [0.0]}], ["act", {"values": [0.0]}]]),
    ("unknown-pettingzoo-agent", 7, "parallel", _agents(),
     [["reset", 1], ["step", {"drop": 0, "extra": ["flow_999"], "value": 0.0}]]),
]  # fmt: skip
