"""HOPASS slow-layer experiments: a scenario with a ``[hopass]`` table, run in slots.

A HOPASS experiment is a ccgym scenario (switches with one data queue per objective class under
``scheduler = "wrr"``, flows of a ``flows`` workload tagged with their ``class``) plus a
``[hopass]`` table that the simulator never sees::

    [hopass]
    transport = "dctcp"           # the flows' CC when the slow layer runs; "hopass" = fast layer
    classes = [                   # one per data class, in class order (utility.py)
        { utility = "prop", weight = 1000 },
        { utility = "alpha", weight = 1e5, alpha = 2 },
        { utility = "min_fct", weight = 1e4, size = "200MB" },
    ]
    slot = "2ms"                  # SlowLayerConfig fields (times as ccgym times)
    tail = 5                      # decision slots averaged for the final allocation
    traffic = { pattern = "permutation", flows_per_host = 1 }   # optional: generated flows
    [[hopass.change]]             # optional demand changes
    at = "100ms"
    class = 3
    size = "50MB"                 # new outstanding bytes of a min-FCT class

Methods (:func:`run_experiment`): ``"hopass"`` runs the slow layer over ``transport``; any other
name is a classic CC run over the same switches with their configured weights, and no slow
layer (the DCTCP and NewReno baselines). Both are measured the same way, in slots.

Measurement: a class's rate is its bytes leaving switches towards hosts (every switch port that
faces a host, the class's data queue), so every delivered byte counts once, at wire size; Mb/s.
``n_k``, a class's flow count in its utility, is the number of its flows that have started.

The exact optimum (:func:`ccgym.hopass.optimum.network_optimum`) has one variable per flow and
one constraint per host link (up and down, ``topology.link_rate``): the fabric counts as
non-blocking, which the spec's topologies are (40 Gb/s fabric links). It is recomputed for each
demand regime (between changes and flow arrivals).
"""

from __future__ import annotations

import copy
import json
import math
import random
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ccgym._errors import ScenarioError
from ccgym.hopass.optimum import Optimum, network_optimum
from ccgym.hopass.slow_layer import SlowLayer, SlowLayerConfig, wrr_weights
from ccgym.hopass.utility import (
    ClassUtility,
    class_from_table,
    parse_size_bytes,
    total_utility,
)
from ccgym.units import parse_time_s

SLOW_LAYER_METHOD = "hopass"
"""The method name that runs the slow layer (others are plain CC runs)."""

CONVERGENCE_TOLERANCE = 0.01
"""Converged: every later decision slot's utility within 1 % of the optimum's."""

ALLOCATION_TOLERANCE = 0.05
"""Allocation converged: every later decision slot's class rates within 5 % of the capacity into
the receivers (their downlinks) of the optimum's."""

_TIME_FIELDS = {"slot", "settle"}
MIN_TAIL_RUNS = 2
"""A regime should hold at least this many times ``tail`` decision slots: its final allocation
(the mean of the last ``tail``) then leaves out the start of the search."""


class ShortRegimeWarning(UserWarning):
    """A demand regime of a HOPASS experiment holds fewer than about ``2 x tail`` decision slots:
    its final allocation averages the start of the search (not converged); a longer run or a
    shorter ``hopass.slot`` is needed."""


_CONFIG_FIELDS = {f.name for f in fields(SlowLayerConfig)}
_TOP_KEYS = {"transport", "classes", "tail", "traffic", "change"} | _CONFIG_FIELDS


@dataclass(frozen=True)
class Flow:
    """One flow of the experiment: hosts (indices), class (1-based) and start time (s)."""

    src: int
    dst: int
    cls: int
    start: float


@dataclass(frozen=True)
class Change:
    """A demand change: at time ``at`` (s), class ``cls`` (1-based) gets new utility fields."""

    at: float
    cls: int
    fields: dict[str, Any]


@dataclass
class Experiment:
    """A parsed ``[hopass]`` table with the scenario it goes with."""

    scenario: dict[str, Any]
    classes: list[ClassUtility]
    config: SlowLayerConfig
    transport: str
    flows: list[Flow]
    changes: list[Change]
    link_mbps: float
    hosts: int
    tail: int = 5


def _rate_bps(value: Any) -> float:
    """A ccgym rate (docs/scenarios.md, "Units"): bit/s, or ``"10Gbps"``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip().replace("b/s", "").replace("bps", "")
    scale = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    if text and text[-1].upper() in scale:
        return float(text[:-1]) * scale[text[-1].upper()]
    return float(text)


def _host_count(topo: Mapping[str, Any]) -> int:
    kind = topo.get("kind")
    if kind == "leaf_spine":
        return int(topo["leaves"]) * int(topo["hosts_per_leaf"])
    if kind == "star":
        return int(topo["hosts"])
    if kind == "dumbbell":
        return int(topo["left"]) + int(topo["right"])
    if kind == "fat_tree":
        return int(topo["k"]) ** 3 // 4
    raise ValueError(
        f"hopass: topology kind {kind!r} is not supported (use leaf_spine, star, dumbbell or "
        "fat_tree: every host link at topology.link_rate)"
    )


def _host_index(value: Any, hosts: int) -> int:
    if isinstance(value, str) and value.startswith("h") and value[1:].isdigit():
        value = int(value[1:])
    if not isinstance(value, int) or not 0 <= value < hosts:
        raise ValueError(f"hopass: flow host {value!r} is not a host of the topology")
    return value


def _generated_flows(traffic: Mapping[str, Any], hosts: int, n_cls: int, seed: int) -> list[dict]:
    """Long-lived flows of ``traffic = { pattern = ..., flows_per_host = 1, start = "0s" }``,
    random parts seeded by the scenario's seed:

    * ``"receivers"`` (default): the hosts fall into ``K + 1`` groups by index modulo ``K + 1``;
      group 0 receives, group ``k`` sends class ``k``, and every receiver gets
      ``flows_per_host`` flows of every class, each from its own sender of that class's group
      (a random matching per class), so that every receiver's downlink is shared by all classes
      and no sender's uplink is. With a classic CC the switches' WRR then sets the class shares
      (a sender NIC serves its flows round robin, whatever their class).
    * ``"permutation"``: for each class, every host sends ``flows_per_host`` flows to the host a
      random derangement gives it: every host link carries every class, senders included (for
      transports that weight classes at the sender, such as HOPASS's tokens).
    """
    unknown = set(traffic) - {"pattern", "flows_per_host", "start"}
    if unknown:
        raise ValueError(f"hopass.traffic: unknown key(s) {sorted(unknown)}")
    pattern = traffic.get("pattern", "receivers")
    per_host = int(traffic.get("flows_per_host", 1))
    start = traffic.get("start", "0s")
    flows = []
    if pattern == "receivers":
        groups = [list(range(g, hosts, n_cls + 1)) for g in range(n_cls + 1)]
        receivers = groups[0][: min(len(g) for g in groups)]
        for k in range(1, n_cls + 1):
            senders = groups[k][: len(receivers)]
            random.Random(seed * 1000 + k).shuffle(senders)
            for src, dst in zip(senders, receivers, strict=True):
                for _ in range(per_host):
                    flows.append({"src": src, "dst": dst, "class": k, "start": start})
        return flows
    if pattern != "permutation":
        raise ValueError(f'hopass.traffic.pattern: "receivers" or "permutation", not {pattern!r}')
    for k in range(1, n_cls + 1):
        rng = random.Random(seed * 1000 + k)
        while True:  # a derangement: nobody sends to itself
            perm = list(range(hosts))
            rng.shuffle(perm)
            if all(perm[i] != i for i in range(hosts)):
                break
        for src in range(hosts):
            for _ in range(per_host):
                flows.append({"src": src, "dst": perm[src], "class": k, "start": start})
    return flows


def load_experiment(data: Mapping[str, Any], method: str = SLOW_LAYER_METHOD) -> Experiment:
    """Split a scenario dict with a ``[hopass]`` table into the simulator's scenario (the CC set
    for ``method``, generated flows added) and the experiment's parameters.

    Raises:
        ScenarioError: the ``[hopass]`` table or the scenario does not fit (the message names
            the key).
    """
    try:
        return _load_experiment(data, method)
    except ScenarioError:
        raise
    except (ValueError, TypeError, KeyError) as e:
        what = f"missing key {e}" if isinstance(e, KeyError) else str(e)
        raise ScenarioError(what if what.startswith("hopass") else f"hopass: {what}") from None


def _load_experiment(data: Mapping[str, Any], method: str) -> Experiment:
    scenario = copy.deepcopy(dict(data))
    table = scenario.pop("hopass", None)
    if not isinstance(table, dict):
        raise ValueError("a HOPASS experiment needs a [hopass] table")
    unknown = set(table) - _TOP_KEYS
    if unknown:
        raise ValueError(f"hopass: unknown key(s) {sorted(unknown)}; known: {sorted(_TOP_KEYS)}")
    raw_classes = table.get("classes")
    if not isinstance(raw_classes, list) or len(raw_classes) < 2:
        raise ValueError("hopass.classes: give at least two classes")
    classes = [class_from_table(c, f"hopass.classes[{i}]") for i, c in enumerate(raw_classes)]
    n_cls = len(classes)
    switch = scenario.get("switch") or {}
    if int(switch.get("queues", 2)) - 1 != n_cls:
        raise ValueError(f"hopass: switch.queues must be {n_cls + 1} (one data queue per class)")
    cfg_args: dict[str, Any] = {}
    for name in _CONFIG_FIELDS & set(table):
        value = table[name]
        cfg_args[name] = parse_time_s(value) if name in _TIME_FIELDS else value
    for name in ("ecn_floor", "ecn_per_share"):
        if name in cfg_args:
            cfg_args[name] = parse_size_bytes(cfg_args[name])
    config = SlowLayerConfig(**cfg_args)
    transport = str(table.get("transport", "dctcp"))
    topo = scenario.get("topology") or {}
    hosts = _host_count(topo)
    link_mbps = _rate_bps(topo.get("link_rate", "100Gbps")) / 1e6

    if "traffic" in table:
        gen = _generated_flows(table["traffic"], hosts, n_cls, int(scenario.get("seed", 1)))
        scenario.setdefault("workload", []).append({"kind": "flows", "flows": gen})
    flows: list[Flow] = []
    for w in scenario.get("workload") or []:
        if w.get("kind") != "flows":
            raise ValueError('hopass: every workload must be kind = "flows" (long-lived flows)')
        for f in w["flows"]:
            if "size" in f or "stop" in f:
                raise ValueError("hopass: flows are long-lived (no size, no stop)")
            cls = int(f.get("class", w.get("class", 1)))
            if not 1 <= cls <= n_cls:
                raise ValueError(f"hopass: flow class {cls} is not one of 1 to {n_cls}")
            start = parse_time_s(f.get("start", 0))
            src, dst = _host_index(f["src"], hosts), _host_index(f["dst"], hosts)
            flows.append(Flow(src, dst, cls, start))
    for k in range(1, n_cls + 1):
        if not any(f.cls == k and f.start == 0 for f in flows):
            raise ValueError(f"hopass: class {k} needs a flow from the start")

    changes = []
    for i, ch in enumerate(table.get("change") or []):
        ch = dict(ch)
        at, cls = parse_time_s(ch.pop("at")), int(ch.pop("class"))
        if not 1 <= cls <= n_cls:
            raise ValueError(f"hopass.change[{i}]: no class {cls}")
        if set(ch) - {"size", "weight"}:
            raise ValueError(f"hopass.change[{i}]: give size or weight (flows arrive as flows)")
        new: dict[str, Any] = {}
        if "size" in ch and classes[cls - 1].kind != "min_fct":
            raise ValueError(
                f"hopass.change[{i}]: size is for 'min_fct' classes; class {cls} is"
                f" {classes[cls - 1].kind!r}"
            )
        if "size" in ch:
            new["size_mb"] = parse_size_bytes(ch["size"]) * 8e-6
        if "weight" in ch:
            new["weight"] = float(ch["weight"])
        changes.append(Change(at, cls, new))
    changes.sort(key=lambda c: c.at)

    if method == SLOW_LAYER_METHOD:
        cc = transport
    else:
        cc = method
    scenario["cc"] = {"algorithm": cc}
    # HOPASS's fast layer moves finite flows only: each long-lived flow gets a size it cannot
    # send within the run (twice what its host link carries in the run)
    duration = parse_time_s(scenario.get("duration", 0))
    endless = max(int(2 * link_mbps * 1e6 / 8 * duration), 1)
    for w in scenario.get("workload") or []:
        w.pop("cc", None)
        for f in w.get("flows") or []:
            f.pop("cc", None)
            if cc == "hopass":
                f["size"] = endless
    tail = int(table.get("tail", 5))
    return Experiment(scenario, classes, config, transport, flows, changes, link_mbps, hosts, tail)


def job_scenario(data: Mapping[str, Any], method: str) -> dict[str, Any]:
    """The scenario the simulator runs for ``method`` (no ``[hopass]`` table)."""
    return load_experiment(data, method).scenario


def demand_at(exp: Experiment, t: float) -> list[ClassUtility]:
    """The classes' utilities at time ``t``: flow counts of the flows started by then, and the
    changes that happened."""
    classes = list(exp.classes)
    for ch in exp.changes:
        if ch.at <= t:
            classes[ch.cls - 1] = classes[ch.cls - 1].with_changes(**ch.fields)
    for k in range(len(classes)):
        n = sum(1 for f in exp.flows if f.cls == k + 1 and f.start <= t)
        classes[k] = classes[k].with_changes(flows=n)
    return classes


def optimum_at(exp: Experiment, t: float) -> Optimum:
    """The exact optimum for the demand at time ``t`` (flows started by then)."""
    active = [f for f in exp.flows if f.start <= t]
    up = {h: i for i, h in enumerate(sorted({f.src for f in active}))}
    down = {h: len(up) + i for i, h in enumerate(sorted({f.dst for f in active}))}
    links = [[up[f.src], down[f.dst]] for f in active]
    caps = [exp.link_mbps] * (len(up) + len(down))
    opt, _ = network_optimum(demand_at(exp, t), [f.cls - 1 for f in active], links, caps)
    return opt


@dataclass
class SlotRecord:
    """One slot: start time (s), kind ("decision", "probe" or "fixed"), shares applied, rates
    measured (Mb/s), utility (with the demand of the slot) and the optimum's utility."""

    t: float
    kind: str
    shares: list[float]
    rates: list[float]
    utility: float
    optimum: float
    link_util: float


@dataclass
class ExperimentResult:
    """What :func:`run_experiment` measured, per regime (between demand changes)."""

    method: str
    slots: list[SlotRecord]
    regimes: list[dict[str, Any]] = field(default_factory=list)
    goodput_pct: float | None = None
    """In-order delivered bytes of every flow over the whole run, counted at wire size, in % of
    the capacity into the receivers (their downlinks) over the run."""
    summary_json: str = ""
    series: Any = None
    wall_s: float = 0.0


def _time_text(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:g} {unit}"
    return f"{seconds * 1e9:g} ns"


def check_slots(
    exp: Experiment, data: Mapping[str, Any], end_ps: int, method: str = SLOW_LAYER_METHOD
) -> None:
    """Before a run of ``end_ps``: a :class:`ScenarioError` when no decision slot fits in it
    (``hopass.slot`` longer than the run: a bare number is seconds, so ``slot = 2`` is 2 s), a
    :class:`ShortRegimeWarning` for each demand regime holding fewer than ``2 x tail`` decision
    slots (slots without a slow layer), whose final allocation then averages the unconverged
    start of the search."""
    slot_ps = round(exp.config.slot * 1e12)
    n_slots = end_ps // slot_ps if slot_ps > 0 else 0
    raw = (data.get("hopass") or {}).get("slot", exp.config.slot)
    given = f"{raw!r}" + (" (seconds)" if not isinstance(raw, str) else "")
    duration = _time_text(end_ps * 1e-12)
    if n_slots < 1:
        raise ScenarioError(
            f"hopass.slot: value {given}: longer than the run (duration {duration}), so no"
            f' decision slot fits; a bare number is seconds ("2ms" for 2 milliseconds)'
        )
    cycle = len(exp.classes) + 1 if method == SLOW_LAYER_METHOD else 1
    starts = _regime_starts(exp)
    bounds = [*starts[1:], end_ps * 1e-12]
    slot_s = slot_ps * 1e-12
    for start, stop in zip(starts, bounds, strict=True):
        if start >= stop:  # a change after the end: no regime
            continue
        decided = sum(1 for i in range(0, n_slots, cycle) if start <= i * slot_s < stop)
        if decided < MIN_TAIL_RUNS * exp.tail:
            warnings.warn(
                f"hopass: the demand regime from {_time_text(start) if start else '0 s'} holds"
                f" {decided} decision slot(s) of {_time_text(slot_s)} (hopass.slot), fewer than"
                f" {MIN_TAIL_RUNS} x tail = {MIN_TAIL_RUNS * exp.tail}: its final allocation"
                f" (the mean of the last {exp.tail}) includes the unconverged start of the"
                " search; run longer or use shorter slots",
                ShortRegimeWarning,
                stacklevel=3,
            )


def _regime_starts(exp: Experiment) -> list[float]:
    """Times where the demand changes: changes and flow arrivals after 0."""
    times = {ch.at for ch in exp.changes} | {f.start for f in exp.flows if f.start > 0}
    return [0.0, *sorted(times)]


def _host_ports(qs: Mapping[str, Any], hosts: int) -> tuple[np.ndarray, np.ndarray]:
    """(ports, queues) of every data queue of a switch port that sends to a host."""
    names = {f"h{i}" for i in range(hosts)}
    idx = [i for i, peer in enumerate(qs["peer"]) if peer in names]
    return np.asarray(qs["port"])[idx], np.asarray(qs["queue"])[idx]


def run_experiment(
    data: Mapping[str, Any],
    method: str = SLOW_LAYER_METHOD,
    *,
    base_dir: str = ".",
    on_slot: Callable[[Any, SlotRecord], None] | None = None,
) -> ExperimentResult:
    """Run the experiment ``data`` (a scenario dict with ``[hopass]``) with ``method``.

    Args:
        data: the scenario with its ``[hopass]`` table (:func:`ccgym.load_scenario`).
        method: ``"hopass"`` (the slow layer) or a classic CC name (no slow layer).
        base_dir: where relative paths of the scenario are resolved.
        on_slot: called after every slot with the running ``ccgym._sim.Simulation`` and the
            slot's record, while the slot's weights and ECN thresholds are still in place.
    """
    from ccgym.runner import native, scenario_json

    t0 = time.perf_counter()
    exp = load_experiment(data, method)
    cfg = exp.config
    n_cls = len(exp.classes)
    # the fast layer's receivers take the class weights too (issue 17, deliverable 4)
    fast_layer = method == SLOW_LAYER_METHOD and exp.transport == "hopass"
    if fast_layer and not hasattr(native().Simulation, "set_hopass_weights"):
        raise ScenarioError(
            'hopass.transport = "hopass" needs a ccgym built with the HOPASS fast layer '
            "(Simulation.set_hopass_weights); use a classic CC such as dctcp"
        )
    sim = native().Simulation(scenario_json(exp.scenario), base_dir)
    end_s = sim.end_ps * 1e-12
    check_slots(exp, data, sim.end_ps, method)
    qs = sim.switch_queues()
    all_ports, all_queues = np.asarray(qs["port"]), np.asarray(qs["queue"])
    ports, queues = _host_ports(qs, exp.hosts)
    cls_of = queues - 1  # data queue q carries class q
    _, port_of = np.unique(ports, return_inverse=True)

    layer: SlowLayer | None = None
    if method == SLOW_LAYER_METHOD:

        def utility_now(rates: np.ndarray) -> float:
            # the demand of the slot that is ending (now_s, set by the loop below)
            return total_utility(demand_at(exp, now_s), rates)

        layer = SlowLayer(n_cls, utility_now, cfg)

    configured = (exp.scenario.get("switch") or {}).get("weights") or [1] * n_cls
    fixed_shares = np.asarray(configured, dtype=float) / float(sum(configured))
    optima: dict[float, Optimum] = {}
    starts = _regime_starts(exp)

    def optimum_of(t: float) -> Optimum:
        key = max(s for s in starts if s <= t)
        if key not in optima:
            optima[key] = optimum_at(exp, key)
        return optima[key]

    slots: list[SlotRecord] = []
    slot_ps = round(cfg.slot * 1e12)
    settle_ps = round(cfg.settle * 1e12)
    # a whole number of WRR rounds of a host link: a cut round would bias the class rates
    packets = exp.scenario.get("packets") or {}
    wire_bytes = int(packets.get("payload", 1024)) + int(packets.get("header", 48))
    round_ps = cfg.weight_scale * wire_bytes * 8 / (exp.link_mbps * 1e6) * 1e12
    measure_ps = slot_ps - settle_ps
    if measure_ps > round_ps:
        measure_ps = int(measure_ps // round_ps * round_ps)
    now_s = 0.0
    t_ps = 0
    while t_ps + slot_ps <= sim.end_ps:
        now_s = t_ps * 1e-12
        kind = "fixed"
        shares = None
        if layer is not None:
            kind = "decision" if layer.is_decision_slot() else "probe"
            shares = layer.next_shares()
            weights = wrr_weights(shares, cfg.weight_scale)
            sim.set_weights(all_ports, all_queues, [weights[q - 1] for q in all_queues])
            kth = [int(cfg.ecn_floor + shares[q - 1] * cfg.ecn_per_share) for q in all_queues]
            sim.set_ecn(all_ports, all_queues, kth, kth, [1.0] * len(all_queues))
            if fast_layer:
                w = np.asarray(weights, dtype=float)
                sim.set_hopass_weights((w / w.min()).tolist())
        sim.run_until(t_ps + settle_ps)
        sim.queue_stats(ports, queues)  # the measurement starts after the settling time
        sim.run_until(t_ps + settle_ps + measure_ps)
        st = sim.queue_stats(ports, queues)
        sim.run_until(t_ps + slot_ps)
        interval = float(np.max(st["interval_s"]))
        bits = np.bincount(cls_of, weights=st["tx_bytes"] * 8.0, minlength=n_cls)
        rates = bits / interval / 1e6
        demand = demand_at(exp, now_s)
        opt = optimum_of(now_s)
        if shares is None:
            shares = fixed_shares
        # utilisation of the host links that carry data (the flows' last hops)
        per_port = np.bincount(port_of, weights=st["tx_bytes"] * 8.0)
        busy = max(int(np.count_nonzero(per_port)), 1)
        link_util = float(rates.sum() / (exp.link_mbps * busy))
        slots.append(
            SlotRecord(now_s, kind, [float(s) for s in shares], [float(r) for r in rates],
                       total_utility(demand, rates), opt.utility, link_util)
        )  # fmt: skip
        if on_slot is not None:
            on_slot(sim, slots[-1])
        if layer is not None:
            layer.record(rates)
        t_ps += slot_ps
    summary_json, series = sim.finish()
    res = ExperimentResult(method, slots, summary_json=summary_json, series=series)
    res.regimes = _regimes(exp, slots, starts, optima, end_s)
    delivered = np.asarray(series.get("flow_info", {}).get("delivered_bytes", []), dtype=float)
    receivers = len({f.dst for f in exp.flows})
    if len(delivered) and end_s > 0:
        payload = int(packets.get("payload", 1024))
        bits = delivered.sum() * 8.0 * wire_bytes / payload
        res.goodput_pct = float(bits / (end_s * receivers * exp.link_mbps * 1e6) * 100)
    res.wall_s = time.perf_counter() - t0
    return res


def _regimes(
    exp: Experiment,
    slots: list[SlotRecord],
    starts: list[float],
    optima: dict[float, Optimum],
    end_s: float,
) -> list[dict[str, Any]]:
    """Per demand regime: final allocation (mean of the last ``tail`` decision slots, or of the
    last ``tail`` slots without a slow layer), its utility, the optimum, the errors and the
    (re-)convergence time."""
    out = []
    bounds = [*starts[1:], end_s]
    for start, stop in zip(starts, bounds, strict=True):
        inside = [s for s in slots if start <= s.t < stop]
        if not inside or start not in optima:
            continue
        opt = optima[start]
        decided = [s for s in inside if s.kind != "probe"]
        tail = decided[-exp.tail :]
        rates = np.mean([s.rates for s in tail], axis=0)
        demand = demand_at(exp, start)
        util = total_utility(demand, rates)
        scale = abs(opt.utility) or 1.0
        opt_rates = np.asarray(opt.rates_mbps)
        times = [d.t - start for d in decided]
        converged = _first_staying(
            times, [abs(d.utility - d.optimum) <= CONVERGENCE_TOLERANCE * scale for d in decided]
        )
        # the allocation error in % of the capacity into the receivers (one link per receiver)
        receivers = len({f.dst for f in exp.flows if f.start <= start})
        capacity = exp.link_mbps * receivers
        alloc_tol = ALLOCATION_TOLERANCE * capacity
        alloc_converged = _first_staying(
            times, [bool(np.max(np.abs(np.asarray(d.rates) - opt_rates)) <= alloc_tol)
                    for d in decided],
        )  # fmt: skip
        out.append(
            {
                "start_s": start,
                "rates_mbps": [float(x) for x in rates],
                "utility": float(util),
                "optimum_rates_mbps": list(opt.rates_mbps),
                "optimum_utility": float(opt.utility),
                "error_pct": float((opt.utility - util) / scale * 100),
                "alloc_error_pct": float(np.max(np.abs(rates - opt_rates)) / capacity * 100),
                "convergence_s": converged,
                "alloc_convergence_s": alloc_converged,
                "link_util_pct": float(np.mean([s.link_util for s in tail]) * 100),
                "slots": len(inside),
            }
        )
    return out


def _first_staying(times: list[float], ok: list[bool]) -> float | None:
    """The first of ``times`` from which ``ok`` holds to the end (None if it never does)."""
    first = None
    for t, good in zip(times, ok, strict=True):
        if not good:
            first = None
        elif first is None:
            first = t
    return first


def result_json(res: ExperimentResult) -> dict[str, Any]:
    """The result as plain JSON data (slots as columns)."""
    return {
        "method": res.method,
        "regimes": res.regimes,
        "slots": {
            "t": [s.t for s in res.slots],
            "kind": [s.kind for s in res.slots],
            "shares": [s.shares for s in res.slots],
            "rates": [s.rates for s in res.slots],
            "utility": [s.utility for s in res.slots],
            "optimum": [s.optimum for s in res.slots],
            "link_util": [s.link_util for s in res.slots],
        },
        "summary": json.loads(res.summary_json) if res.summary_json else {},
        "goodput_pct": res.goodput_pct,
        "wall_s": res.wall_s,
    }


def finite(x: float | None) -> float | None:
    """``x`` if it is a finite number, else None."""
    return x if x is not None and math.isfinite(x) else None
