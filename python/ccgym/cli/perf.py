"""``ccgym perf``: the standard incast benchmark, the agent bridge (``--agent``) and the cost of
one native policy decision (``--policy``)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ccgym.cli.common import num, path_arg, positive_int, stdout

if TYPE_CHECKING:
    from rich.table import Table


def register(sub: Any, debug: argparse.ArgumentParser) -> None:
    """Adds ``perf``."""
    p = sub.add_parser(
        "perf", parents=[debug], help="standard incast benchmark (events/s, ns per packet-hop)"
    )
    p.add_argument(
        "--flows",
        type=positive_int,
        nargs="+",
        metavar="N",
        help="flow counts (default: 16 128 1024 8192)",
    )
    # The default (ccgym.perf.DEFAULT_DURATION) is filled in by cmd_perf: building the parser
    # of every command must not import the benchmark.
    p.add_argument("--duration", metavar="T", help="simulated time")
    p.add_argument(
        "--cc",
        nargs="+",
        metavar="NAME",
        help="also run the benchmark under these CC algorithms (line rate is always measured)",
    )
    p.add_argument(
        "--agent",
        action="store_true",
        help="benchmark the agent bridge (decisions/s with a PyTorch policy) instead",
    )
    p.add_argument(
        "--delays",
        nargs="+",
        metavar="T",
        help="policy delays for --agent (default 0us 1us 5us 20us)",
    )
    p.add_argument(
        "--policy",
        nargs="?",
        const="adpg-default",
        metavar="NAME",
        help="time one native decision of this policy (default adpg-default), float32 and int8 "
        "side by side; with --agent, also measure the bridge with its weights and [agent] table",
    )
    p.add_argument(
        "--agent-duration",
        default="10ms",
        metavar="T",
        help="simulated time per --agent run (decisions after 2 ms are counted)",
    )
    p.add_argument(
        "--fabric",
        nargs="*",
        metavar="METHOD",
        type=fabric_method,
        help="the 144-host leaf-spine, WebSearch at 0.6 load, under these methods of the "
        "receiver-driven suite (default: pfabric and homa), beside the "
        "line-rate incast (--flows, default 16): ns per packet-hop and simulated time per CPU "
        "second",
    )
    p.add_argument(
        "--topologies",
        nargs="*",
        metavar="ENTRY",
        type=topology_entry,
        help="fat trees k = 8 and k = 16 (a permutation of long flows) and a 144-host leaf-spine "
        "(Poisson WebSearch at 0.5 load), 100 Gb/s, 1 us, 1 KiB packets, PFC, under line rate "
        "and --cc (default hpcc), beside the incast under the same CCs (--flows, default 16): "
        "ns per packet-hop and its ratio to the incast's; entries fat-tree-8, fat-tree-16, "
        "leaf-spine (default all)",
    )
    p.add_argument(
        "--topology-duration",
        metavar="T",
        help="simulated time of each --topologies entry (default: fat-tree-8 10ms, "
        "fat-tree-16 1ms, leaf-spine 5ms)",
    )
    p.add_argument(
        "--compare",
        type=path_arg,
        metavar="PATH",
        help="another build of the native module (a _sim*.so file, or a checkout, its python "
        "folder or its package folder): every run chosen by the other options runs in pairs, "
        "this build and that one (new then old, old then new, ...), each in its own process; "
        "prints new / old per run and whether the pairs agree (a sign test)",
    )
    p.add_argument(
        "--rounds",
        type=positive_int,
        default=2,
        metavar="N",
        help="pairs of runs per row with --compare (default 2; a change of a few per cent "
        "on a shared machine takes a few dozen)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_perf)


def topology_entry(text: str) -> str:
    """An entry of ``--topologies``, refused at once when unknown (exit status 2, as any
    mistake on the command line)."""
    from ccgym.perf import TOPOLOGY_ENTRIES

    if text not in TOPOLOGY_ENTRIES:
        raise argparse.ArgumentTypeError(
            f"no entry {text!r} (known: {', '.join(TOPOLOGY_ENTRIES)})"
        )
    return text


def fabric_method(text: str) -> str:
    """A method of ``--fabric``: one of the receiver-driven suite's presets, refused at once
    when unknown."""
    from ccgym.bench.runner import load_suite
    from ccgym.perf import FABRIC_SUITE

    presets = load_suite(FABRIC_SUITE).get("presets") or {}
    if text not in presets:
        raise argparse.ArgumentTypeError(
            f"no method {text!r} in the {FABRIC_SUITE} suite (known: {', '.join(presets)})"
        )
    return text


def cmd_perf(args: argparse.Namespace) -> int:
    """``ccgym perf``: the standard incast benchmark, one fresh process per size."""
    from rich.console import Console

    from ccgym._errors import PerfError
    from ccgym.perf import DEFAULT_DURATION, STANDARD_FLOWS, run_perf

    if args.duration is None:
        args.duration = DEFAULT_DURATION
    if args.compare is not None:
        return _perf_compare(args)
    if args.agent:
        return _perf_agent(args)
    if args.policy is not None:
        return _perf_policy(args)
    if args.topologies is not None:
        if args.fabric is not None:
            raise PerfError("give --topologies or --fabric, not both (--compare takes both)")
        return _perf_topologies(args)
    if args.fabric is not None:
        return _perf_fabric(args)
    flows = args.flows or list(STANDARD_FLOWS)
    ccs = ["line_rate"] + [c for c in args.cc or [] if c != "line_rate"]
    err = Console(stderr=True)
    with err.status("") as status:
        rows = run_perf(
            flows,
            args.duration,
            on_start=lambda label: status.update(f"perf: {label} ..."),
            ccs=ccs,
        )
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        stdout().print(perf_table(rows))
    return 0


def perf_table(rows: list[dict[str, Any]]) -> Table:
    """The rows of :func:`ccgym.perf.run_perf` as a rich table."""
    from rich.table import Table

    table = Table(title="ccgym perf: standard incast, rates per CPU second of the run loop")
    for title in (
        "cc",
        "flows",
        "hosts×flows",
        "sim time",
        "events",
        "events/s",
        "hops/s",
        "ns/hop",
        "vs N=16",
        "vs line rate",
        "set-up",
        "peak RSS",
    ):
        table.add_column(title, justify="right", no_wrap=True)
    for r in rows:
        table.add_row(
            str(r.get("cc", "line_rate")),
            num(r["flows"]),
            f"{r['hosts']}×{r['flows_per_host']}",
            num(r["sim_time_s"] * 1e3, unit="ms"),
            num(r["events"]),
            num(r["events_per_s"], ".1f", "M", scale=1e-6),
            num(r["hops_per_s"], ".1f", "M", scale=1e-6),
            num(r["ns_per_hop"], ".1f"),
            num(r.get("ratio_ns_per_hop"), ".2f", "×"),
            num(r.get("ratio_vs_line_rate"), ".2f", "×"),
            num(r["setup_s"], unit="ms", scale=1e3),
            num(r["peak_rss_mb"], ".0f", "MB"),
        )
    return table


def native_policy_table(row: dict[str, Any]) -> Table:
    """The native decision cost of a policy (:func:`ccgym.perf.native_decision_ns`)."""
    from rich.table import Table

    shape = "-".join(str(n) for n in row["layers"])
    table = Table(
        title=f"native decision cost: {row['policy']} ({shape})",
        caption=f"{row['rounds']} rounds × {row['iterations']:,} decisions, precisions alternated"
        + _budget_note(row),
    )
    for title in ("precision", "min ns", "median ns", "vs float32 (min / median)"):
        table.add_column(title, justify="right")
    ns = row["ns_per_decision"]
    for p, t in ns.items():
        ratio = " / ".join(f"{t[k] / ns['float32'][k]:.2f}×" for k in ("min", "median"))
        table.add_row(p, num(t["min"], ".1f"), num(t["median"], ".1f"), ratio)
    return table


def _budget_note(row: dict[str, Any]) -> str:
    """How the number of decisions per round was chosen (:func:`ccgym.perf.native_decision_ns`)."""
    from ccgym.perf import NATIVE_MAX_ITERATIONS

    cal = row.get("calibration")
    if not cal:
        return ""
    return (
        f"; about {row['budget_s']:g} s per round, at most {NATIVE_MAX_ITERATIONS:,} decisions "
        f"(calibrated on {cal['decisions']:,} at {cal['ns_per_decision']:,.1f} ns)"
    )


def _native_line(row: dict[str, Any]) -> str:
    ns = row["ns_per_decision"]
    text = f"native policy {row['policy']}: " + ", ".join(
        f"{p} {t['min']:.1f} ns/decision" for p, t in ns.items()
    )
    if "int8_vs_float32" in row:
        text += f" (int8 / float32 {row['int8_vs_float32']['min']:.2f})"
    return text


def _perf_policy(args: argparse.Namespace) -> int:
    """``ccgym perf --policy [NAME]``: native decision cost, float32 and int8 side by side."""
    from rich.console import Console

    from ccgym.perf import native_decision_ns

    with Console(stderr=True).status(f"perf --policy: {args.policy} ...") as status:
        row = native_decision_ns(
            args.policy,
            on_progress=lambda text: status.update(f"perf --policy: {args.policy}: {text} ..."),
        )
    if args.json:
        print(json.dumps(row, indent=2))
    else:
        stdout().print(native_policy_table(row))
    return 0


def _perf_agent(args: argparse.Namespace) -> int:
    """``ccgym perf --agent``: decisions per second through the bridge, native decision cost."""
    from rich.console import Console
    from rich.table import Table

    from ccgym.perf import AGENT_DELAYS, NATIVE_POLICY, measure_agent, native_decision_ns

    flows = (args.flows or [1024])[0]
    delays = args.delays or list(AGENT_DELAYS)
    policy_name = args.policy or NATIVE_POLICY
    err = Console(stderr=True)
    rows = []
    with err.status("") as status:
        for policy in (None, policy_name):
            for d in delays:
                status.update(f"perf --agent: {policy or 'controller'}, policy delay {d} ...")
                rows.append(
                    measure_agent(d, flows=flows, duration=args.agent_duration, policy=policy)
                )
        status.update("perf --agent: native policy ...")
        native_row = native_decision_ns(
            policy_name,
            on_progress=lambda text: status.update(f"perf --agent: native policy: {text} ..."),
        )
    if args.json:
        print(json.dumps({"bridge": rows, "native": native_row}, indent=2))
        return 0
    table = Table(title=f"ccgym perf --agent: PyTorch MLP policy, pool of 2 × {flows}-to-1 incasts")
    for title in (
        "policy",
        "trigger",
        "policy delay",
        "decisions",
        "batches",
        "mean batch",
        "wall",
        "decisions/s",
    ):
        table.add_column(title, justify="right")
    for r in rows:
        table.add_row(
            r["policy"],
            r["trigger"],
            r["policy_delay"],
            num(r["decisions"]),
            num(r["batches"]),
            num(r["mean_batch"], ".1f"),
            num(r["wall_s"], ".2f", "s"),
            num(r["decisions_per_s"], ",.0f"),
        )
    out = stdout()
    out.print(table)
    out.print(_native_line(native_row))
    return 0


def _perf_fabric(args: argparse.Namespace) -> int:
    """``ccgym perf --fabric [METHOD ...]``: the fabric entries beside the line-rate incast."""
    from rich.console import Console
    from rich.table import Table

    from ccgym.perf import FABRIC_INCAST_FLOWS, run_fabric_perf

    with Console(stderr=True).status("") as status:
        out = run_fabric_perf(
            args.fabric or None,
            args.duration,
            incast_flows=args.flows or [FABRIC_INCAST_FLOWS],
            on_start=lambda label: status.update(f"perf: {label} ..."),
        )
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    console = stdout()
    console.print(perf_table(out["incast"]))
    table = Table(
        title="ccgym perf --fabric: 144-host leaf-spine, WebSearch at 0.6 load, per CPU second"
    )
    for title in (
        "method",
        "sim time",
        "events",
        "hops",
        "events/s",
        "hops/s",
        "ns/hop",
        "vs incast",
        "sim ms per CPU s",
        "CPU s per 100 ms",
        "peak RSS",
    ):
        table.add_column(title, justify="right", no_wrap=True)
    for r in out["fabric"]:
        table.add_row(
            r["method"],
            num(r["sim_time_s"] * 1e3, unit="ms"),
            num(r["events"]),
            num(r["packet_hops"]),
            num(r["events_per_s"], ".1f", "M", scale=1e-6),
            num(r["hops_per_s"], ".1f", "M", scale=1e-6),
            num(r["ns_per_hop"], ".1f"),
            num(r.get("ratio_vs_incast"), ".2f", "×"),
            num(r["sim_per_cpu_s"], ".1f", scale=1e3),
            num(r["cpu_s_per_100ms"], ".2f", "s"),
            num(r["peak_rss_mb"], ".0f", "MB"),
        )
    console.print(table)
    return 0


def _topology_ccs(args: argparse.Namespace) -> list[str]:
    """Line rate, and ``--cc`` (default HPCC): the CCs of the topology entries."""
    return ["line_rate"] + [c for c in args.cc or ["hpcc"] if c != "line_rate"]


def topology_table(rows: list[dict[str, Any]]) -> Table:
    """The rows of :func:`ccgym.perf.run_topology_perf`'s ``topology`` as a rich table."""
    from rich.table import Table

    table = Table(
        title="ccgym perf --topologies: 100 Gb/s, 1 us, 1 KiB, PFC, per CPU second of the run loop"
    )
    for title in (
        "entry",
        "cc",
        "hosts",
        "sim time",
        "events",
        "hops",
        "hops/s",
        "ns/hop",
        "vs incast",
        "vs smaller tree",
        "set-up",
        "peak RSS",
    ):
        table.add_column(title, justify="right", no_wrap=True)
    for r in rows:
        table.add_row(
            r["entry"],
            r["cc"],
            num(r["hosts"]),
            num(r["sim_time_s"] * 1e3, unit="ms"),
            num(r["events"]),
            num(r["packet_hops"]),
            num(r["hops_per_s"], ".2f", "M", scale=1e-6),
            num(r["ns_per_hop"], ".1f"),
            num(r.get("ratio_vs_incast"), ".2f", "×"),
            num(r.get("ratio_vs_smaller_fat_tree"), ".2f", "×"),
            num(r["setup_s"], unit="ms", scale=1e3),
            num(r["peak_rss_mb"], ".0f", "MB"),
        )
    return table


def _perf_topologies(args: argparse.Namespace) -> int:
    """``ccgym perf --topologies [ENTRY ...]``: fat trees and a leaf-spine beside the incast."""
    from rich.console import Console

    from ccgym.perf import TOPOLOGY_ENTRIES, TOPOLOGY_FLOWS, run_topology_perf, topology_description

    with Console(stderr=True).status("") as status:
        out = run_topology_perf(
            args.topologies or None,
            args.topology_duration,
            ccs=_topology_ccs(args),
            incast_flows=args.flows or [TOPOLOGY_FLOWS],
            incast_duration=args.duration,
            on_start=lambda label: status.update(f"perf: {label} ..."),
        )
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    console = stdout()
    console.print(perf_table(out["incast"]))
    console.print(topology_table(out["topology"]))
    for entry in args.topologies or TOPOLOGY_ENTRIES:
        console.print(f"{entry}: {topology_description(entry)}", highlight=False)
    return 0


def compare_jobs(args: argparse.Namespace) -> list[tuple[str, ...]]:
    """The runs ``--compare`` alternates: the incast (``--flows``, default the standard sizes,
    or 16 beside ``--topologies``/``--fabric``) under line rate and ``--cc``, the topology
    entries and the fabric entries when asked for."""
    from ccgym.perf import (
        DEFAULT_DURATION,
        FABRIC_METHODS,
        STANDARD_FLOWS,
        TOPOLOGY_ENTRIES,
        TOPOLOGY_FLOWS,
    )

    duration = args.duration or DEFAULT_DURATION
    extra = args.topologies is not None or args.fabric is not None
    flows = args.flows or ([TOPOLOGY_FLOWS] if extra else list(STANDARD_FLOWS))
    if args.topologies is not None:
        ccs = _topology_ccs(args)
    else:
        ccs = ["line_rate"] + [c for c in args.cc or [] if c != "line_rate"]
    jobs = [("incast", str(n), str(duration), cc) for cc in ccs for n in flows]
    if args.topologies is not None:
        for cc in ccs:
            for entry in args.topologies or TOPOLOGY_ENTRIES:
                own = args.topology_duration or TOPOLOGY_ENTRIES[entry][1]
                jobs.append(("topology", entry, str(own), cc))
    if args.fabric is not None:
        methods = args.fabric or FABRIC_METHODS
        jobs += [("fabric", m, str(duration)) for m in methods]
    return jobs


def compare_table(rows: list[dict[str, Any]]) -> Table:
    """The rows of :func:`ccgym.perf.compare_builds` as a rich table."""
    from rich.table import Table

    first = rows[0] if rows else {"new": {}, "old": {}}
    builds = (f"{side}: {first[side].get('native_module')}" for side in ("new", "old"))
    table = Table(
        title="ccgym perf --compare: new / old ns per packet-hop",
        caption="\n".join(
            [
                "least: of each build's least; pairs: median (range) of the runs taken in pairs; "
                "verdict: sign test over the pairs (p < 0.05)",
                *builds,
            ]
        ),
    )
    titles = (
        "run",
        "pairs",
        "new ns/hop",
        "old ns/hop",
        "least",
        "pairs median (range)",
        "verdict",
        "RSS new / old",
        "same",
    )
    for title in titles:
        table.add_column(title, justify="right", no_wrap=True)
    for r in rows:
        spread = (
            f"{r['ratio_median']:.3f}× ({r['ratio_low']:.3f}-{r['ratio_high']:.3f})"
            if r.get("ratio_median") is not None
            else "–"
        )
        verdict = r.get("verdict") or "one pair"
        if r.get("sign_test_p") is not None and r.get("verdict"):
            verdict += f", p = {r['sign_test_p']:.2g}"
        table.add_row(
            r["label"],
            str(len(r["new"]["runs"])),
            num(r["new"]["ns_per_hop"], ".1f"),
            num(r["old"]["ns_per_hop"], ".1f"),
            num(r["ratio_ns_per_hop"], ".3f", "×"),
            spread,
            verdict,
            num(r["ratio_peak_rss"], ".2f", "×"),
            "yes" if r["same_counts"] else "NO",
        )
    return table


def _perf_compare(args: argparse.Namespace) -> int:
    """``ccgym perf --compare PATH``: this build and another alternated, new / old per run."""
    from rich.console import Console

    from ccgym._errors import PerfError
    from ccgym.perf import compare_builds

    if args.agent or args.policy is not None:
        raise PerfError(
            "--compare measures simulator runs (the incast, --topologies, --fabric), "
            "not --agent or --policy"
        )
    jobs = compare_jobs(args)
    with Console(stderr=True).status("") as status:
        rows = compare_builds(
            jobs,
            args.compare,
            rounds=args.rounds,
            on_start=lambda label: status.update(f"perf --compare: {label} ..."),
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    console = stdout()
    console.print(compare_table(rows))
    if not all(r["same_counts"] for r in rows):
        console.print(
            "same = NO: the builds simulated different numbers of events or packet-hops "
            "(their results differ)",
            highlight=False,
        )
    return 0
