"""The ``ccgym`` command line: ``run``, ``perf``, ``list``, ``train``, ``export`` and ``eval``.

User mistakes (a bad scenario, a missing file) print one red ``error: ...`` line on stderr and
exit with status 2; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ccgym._errors import InternalError, ScenarioError
from ccgym.perf import PerfError

EXIT_USER_ERROR = 2
EXIT_FAILURE = 1

DASH = "–"


# --------------------------------------------------------------------------- formatting


def _get(d: Any, *keys: str | int) -> Any:
    """``d[k0][k1]...``, or None when any level is missing or null."""
    for k in keys:
        if d is None:
            return None
        try:
            d = d[k]
        except (KeyError, IndexError, TypeError):
            return None
    return d


def _num(x: Any, spec: str = "auto", unit: str = "", scale: float = 1.0) -> str:
    """Format a number (None or NaN -> dash); ints get thousands separators.

    ``spec`` is a format spec, or ``"auto"``: thousands separators from 1000 up, otherwise four
    significant digits.
    """
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return DASH if x is None else str(x)
    if x != x:  # NaN
        return DASH
    if isinstance(x, int) and scale == 1.0:
        text = f"{x:,}"
    elif spec == "auto":
        v = x * scale
        text = f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    else:
        text = format(x * scale, spec)
    return f"{text} {unit}".rstrip()


def _nums(
    d: Any, keys: Sequence[str], spec: str = "auto", unit: str = "", scale: float = 1.0
) -> str:
    values = " / ".join(_num(_get(d, k), spec, scale=scale) for k in keys)
    return f"{values} {unit}".rstrip()


def _pct(x: Any) -> str:
    """A fraction as a percentage."""
    return _num(x, ".2f", "%", scale=100.0)


def summary_table(summary: dict[str, Any], timing: dict[str, Any] | None = None) -> Table:
    """The summary of a run as a two-column rich table."""
    s, t = summary, timing or {}
    bn, net, fl, paper = s.get("bottleneck"), s.get("network"), s.get("flows"), s.get("paper")
    window = _get(s, "window_s") or []
    table = Table(
        title=f"ccgym run: {s.get('scenario', '?')}", show_header=False, title_justify="left"
    )
    table.add_column("metric", style="cyan", no_wrap=True)
    table.add_column("value")

    def section(rows: list[tuple[str, str]]) -> None:
        for name, value in rows:
            table.add_row(name, value)
        table.add_section()

    section(
        [
            ("seed", _num(s.get("seed"))),
            ("duration", _num(s.get("duration_s"), unit="s")),
            ("window", " – ".join(_num(w) for w in window) + " s" if window else DASH),
        ]
    )
    section(
        [
            ("bottleneck port", str(_get(bn, "port") or DASH)),
            ("utilisation", _pct(_get(bn, "utilization"))),
            ("queue mean / p99 / max", _nums(bn, _QUEUE, unit="KB")),
            ("queue latency mean / p99", _nums(bn, _QUEUE_LAT, unit="us")),
        ]
    )
    section(
        [
            ("fairness: Jain", _num(_get(fl, "jain"), ".4f")),
            ("fairness: min/max flows", _num(_get(fl, "min_max"), ".4f")),
            ("fairness: min/max hosts", _num(_get(fl, "host_min_max"), ".4f")),
        ]
    )
    drops_bytes = _get(net, "drops_bytes")
    section(
        [
            (
                "drops",
                f"{_num(_get(net, 'drops_packets'))} packets "
                f"({_num(drops_bytes, unit='MB', scale=1e-6)})",
            ),
            ("ECN marks", _num(_get(net, "ecn_marks"))),
            ("PFC pauses", _num(_get(net, "pfc_pauses"))),
        ]
    )
    section(
        [
            ("flows (completed)", f"{_num(_get(fl, 'count'))} ({_num(_get(fl, 'completed'))})"),
            ("throughput per flow, mean", _num(_get(fl, "throughput_gbps_mean"), unit="Gbps")),
            ("FCT mean / p50 / p95 / p99", _nums(_get(fl, "fct_us"), _STATS, unit="us")),
            ("slowdown mean / p50 / p95 / p99", _nums(_get(fl, "slowdown"), _STATS)),
        ]
    )
    section(
        [
            (
                "paper: SU / FR / QL / drops",
                f"{_num(_get(paper, 'SU'), '.2f', '%')} / {_num(_get(paper, 'FR'), '.2f', '%')}"
                f" / {_num(_get(paper, 'QL'), unit='us')}"
                f" / {_num(_get(paper, 'drops_mb'), unit='MB')}",
            ),
        ]
    )
    rows = [
        ("events", _num(s.get("events"))),
        ("packet hops", _num(s.get("packet_hops"))),
    ]
    if t:
        rows += [
            ("wall time", _num(t.get("wall_s"), ".3f", "s")),
            ("set-up time", _num(t.get("setup_s"), unit="ms", scale=1e3)),
            ("simulated events/s", _num(t.get("events_per_s"), ",.0f")),
        ]
    for name, value in rows:
        table.add_row(name, value)
    return table


_QUEUE = ("queue_mean_kb", "queue_p99_kb", "queue_max_kb")
_QUEUE_LAT = ("queue_latency_mean_us", "queue_latency_p99_us")
_STATS = ("mean", "p50", "p95", "p99")


def perf_table(rows: list[dict[str, Any]]) -> Table:
    """The rows of :func:`ccgym.perf.run_perf` as a rich table."""
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
            _num(r["flows"]),
            f"{r['hosts']}×{r['flows_per_host']}",
            _num(r["sim_time_s"] * 1e3, unit="ms"),
            _num(r["events"]),
            _num(r["events_per_s"], ".1f", "M", scale=1e-6),
            _num(r["hops_per_s"], ".1f", "M", scale=1e-6),
            _num(r["ns_per_hop"], ".1f"),
            _num(r.get("ratio_ns_per_hop"), ".2f", "×"),
            _num(r.get("ratio_vs_line_rate"), ".2f", "×"),
            _num(r["setup_s"], unit="ms", scale=1e3),
            _num(r["peak_rss_mb"], ".0f", "MB"),
        )
    return table


def _stdout() -> Console:
    """A console for tables; as wide as the table needs when stdout is not a terminal."""
    console = Console()
    return console if console.is_terminal else Console(width=200)


# --------------------------------------------------------------------------- commands


def cmd_run(args: argparse.Namespace) -> int:
    """``ccgym run``: simulate a scenario, print its summary, optionally save the results."""
    from ccgym.runner import run

    overrides = list(args.set or [])
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    out = _stdout()
    progress = not args.quiet and Console(stderr=True).is_terminal
    result = run(args.scenario, overrides=overrides, cc=args.cc, progress=progress)
    if not args.quiet:
        out.print(summary_table(result.summary, result.timing))
    if args.out is not None:
        path = result.save(args.out)
        out.print(f"results: {path}", highlight=False, soft_wrap=True)
    return 0


def cmd_perf(args: argparse.Namespace) -> int:
    """``ccgym perf``: the standard incast benchmark, one fresh process per size."""
    from ccgym.perf import STANDARD_FLOWS, run_perf

    if args.agent:
        return _perf_agent(args)
    if args.policy is not None:
        return _perf_policy(args)
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
        _stdout().print(perf_table(rows))
    return 0


def cc_table(catalogue: list[tuple[str, str, list[tuple[str, str, str]]]]) -> Table:
    """The congestion-control algorithms with their parameters and defaults."""
    table = Table(title="congestion control (use with --cc NAME, tune with --set cc.PARAM=V)")
    for title in ("algorithm", "parameter", "default", "meaning"):
        table.add_column(title, overflow="fold")
    for name, summary, params in catalogue:
        table.add_row(f"[bold]{name}[/bold]", "", "", summary)
        for pname, default, help_text in params:
            table.add_row("", pname, default, help_text)
        table.add_section()
    return table


def native_policy_table(row: dict[str, Any]) -> Table:
    """The native decision cost of a policy (:func:`ccgym.perf.native_decision_ns`)."""
    shape = "-".join(str(n) for n in row["layers"])
    table = Table(
        title=f"native decision cost: {row['policy']} ({shape})",
        caption=f"{row['rounds']} rounds × {row['iterations']:,} decisions, precisions alternated",
    )
    for title in ("precision", "min ns", "median ns", "vs float32 (min / median)"):
        table.add_column(title, justify="right")
    ns = row["ns_per_decision"]
    for p, t in ns.items():
        ratio = " / ".join(f"{t[k] / ns['float32'][k]:.2f}×" for k in ("min", "median"))
        table.add_row(p, _num(t["min"], ".1f"), _num(t["median"], ".1f"), ratio)
    return table


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
    from ccgym.perf import native_decision_ns

    with Console(stderr=True).status(f"perf --policy: {args.policy} ..."):
        row = native_decision_ns(args.policy)
    if args.json:
        print(json.dumps(row, indent=2))
    else:
        _stdout().print(native_policy_table(row))
    return 0


def _perf_agent(args: argparse.Namespace) -> int:
    """``ccgym perf --agent``: decisions per second through the bridge, native decision cost."""
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
        native_row = native_decision_ns(policy_name)
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
            _num(r["decisions"]),
            _num(r["batches"]),
            _num(r["mean_batch"], ".1f"),
            _num(r["wall_s"], ".2f", "s"),
            _num(r["decisions_per_s"], ",.0f"),
        )
    out = _stdout()
    out.print(table)
    out.print(_native_line(native_row))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """``ccgym list scenarios|workloads|cc``: what ships with the package."""
    from ccgym import scenario as sc

    if args.what == "cc":
        from ccgym.runner import native

        _stdout().print(cc_table(native().cc_catalogue()))
        return 0
    if args.what == "scenarios":
        rows = [(name, sc.scenario_description(name)) for name in sc.bundled_scenarios()]
    else:
        rows = [(name, sc.workload_description(name)) for name in sc.bundled_workloads()]
    width = max((len(name) for name, _ in rows), default=0)
    for name, description in rows:
        print(f"{name:<{width}}  {description}".rstrip())
    return 0


# --------------------------------------------------------------------------- learned CC


def cmd_train(args: argparse.Namespace) -> int:
    """``ccgym train NAME``: run the trainer ``ccgym.agents.NAME`` on a config."""
    from pathlib import Path

    from ccgym.agents import trainer

    module = trainer(args.name)
    if args.config is None and not args.resume:
        raise ScenarioError("ccgym train: give --config FILE (or --resume with --out DIR)")
    out = Path(args.out) if args.out else Path("runs") / args.name
    # --resume without --config: the trainer takes the config saved in its checkpoint.
    result = module.train_from_config(args.config, out, resume=args.resume)
    summary = {k: v for k, v in dict(result or {}).items() if k != "history"}
    print(json.dumps(summary, indent=2, default=str))
    return 0


def _record(policy: dict[str, Any], scenarios: Sequence[str], sets: Sequence[str]) -> Any:
    from ccgym.policies import record_observations

    return record_observations(policy, scenarios, overrides=list(sets or []))


def cmd_export(args: argparse.Namespace) -> int:
    """``ccgym export CHECKPOINT --out FILE.json``: a checkpoint as a native policy file."""
    from ccgym import policies
    from ccgym.agents import export_checkpoint

    policy = export_checkpoint(args.checkpoint)
    if args.calibrate:
        obs = _record(policy, args.calibrate, args.calibrate_set)
        policy = policies.with_calibration(policy, obs)
        policy["meta"]["int8_calibration"]["scenarios"] = list(args.calibrate)
    path = policies.save_policy(policy, args.out)
    print(f"policy: {path}" + (" (with int8 calibration)" if "int8" in policy else ""))
    return 0


def eval_table(rows: list[tuple[str, str, dict[str, Any]]]) -> Table:
    """One line per (scenario, controller) run: the ADPG paper's metrics."""
    table = Table(title="ccgym eval")
    for title in (
        "scenario", "controller", "utilisation", "Jain", "min/max", "queue lat. mean / p99",
        "queue max", "drops",
    ):  # fmt: skip
        table.add_column(title, justify="right" if title not in ("scenario",) else "left")
    for scenario, controller, s in rows:
        bn, fl, net = s.get("bottleneck"), s.get("flows"), s.get("network")
        table.add_row(
            scenario,
            controller,
            _pct(_get(bn, "utilization")),
            _num(_get(fl, "jain"), ".4f"),
            _num(_get(fl, "min_max"), ".3f"),
            _nums(bn, _QUEUE_LAT, ".2f", "us"),
            _num(_get(bn, "queue_max_kb"), ".0f", "KB"),
            _num(_get(net, "drops_packets")),
        )
    return table


def cmd_eval(args: argparse.Namespace) -> int:
    """``ccgym eval POLICY SCENARIO...``: run scenarios with a native policy."""
    from pathlib import Path

    from ccgym import policies
    from ccgym.runner import run

    overrides = list(args.set or [])
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    path = policies.policy_path(args.policy)
    label = f"{args.policy} ({args.precision})"
    out = _stdout()
    progress = not args.quiet and Console(stderr=True).is_terminal
    rows = []
    for scenario in args.scenarios:
        result = policies.evaluate(
            path, scenario, overrides=overrides, precision=args.precision, progress=progress
        )
        if not args.quiet:
            out.print(summary_table(result.summary, result.timing))
        rows.append((scenario, label, result.summary))
        if args.out is not None:
            result.save(Path(args.out) / f"{Path(scenario).stem}-policy")
        for cc in args.baseline or []:
            base = run(scenario, overrides=overrides, cc=cc, progress=progress)
            rows.append((scenario, cc, base.summary))
            if args.out is not None:
                base.save(Path(args.out) / f"{Path(scenario).stem}-{cc}")
    out.print(eval_table(rows))
    return 0


def _add_learning_commands(sub: Any, debug: argparse.ArgumentParser) -> None:
    """``train``, ``export`` and ``eval`` (learned congestion control)."""
    p = sub.add_parser(
        "train", parents=[debug], help="train a learned CC (needs the training extras: torch)"
    )
    p.add_argument("name", help="trainer: a module of ccgym.agents, e.g. adpg")
    p.add_argument("--config", metavar="FILE", help="training config (TOML)")
    p.add_argument("--out", metavar="DIR", help="run folder (default: runs/NAME)")
    p.add_argument(
        "--resume", action="store_true", help="continue from the run folder's checkpoint.pt"
    )
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "export", parents=[debug], help="write a training checkpoint as a native policy (JSON)"
    )
    p.add_argument("checkpoint", help="checkpoint file (.pt) written by `ccgym train`")
    p.add_argument("--out", required=True, metavar="FILE.json", help="policy file to write")
    p.add_argument(
        "--calibrate",
        action="append",
        metavar="SCENARIO",
        help="record observations on this scenario (repeatable) for int8 calibration",
    )
    p.add_argument(
        "--calibrate-set",
        action="append",
        metavar="KEY=VALUE",
        help="override in the calibration scenarios, e.g. duration=20ms (repeatable)",
    )
    p.set_defaults(func=cmd_export)

    p = sub.add_parser(
        "eval", parents=[debug], help="run scenarios with a native policy (no torch needed)"
    )
    p.add_argument("policy", help="policy file, or bundled name (adpg-default, rlcc-public)")
    p.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="TOML file or bundled name")
    p.add_argument("--precision", choices=["float32", "int8"], default="float32")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario value")
    p.add_argument("--seed", type=int, metavar="N", help="shorthand for --set seed=N")
    p.add_argument(
        "--baseline",
        action="append",
        metavar="CC",
        help="also run each scenario with this classic CC, e.g. dcqcn (repeatable)",
    )
    p.add_argument("--out", metavar="DIR", help="save every run's results under DIR")
    p.add_argument("--quiet", action="store_true", help="only the final comparison table")
    p.set_defaults(func=cmd_eval)


def cmd_bench(args: argparse.Namespace) -> int:
    """``ccgym bench``: run a suite (cached, in parallel) and print its table."""
    from pathlib import Path

    from ccgym.bench.runner import load_suite, run_suite
    from ccgym.bench.tables import build_rows, rich_table, table_spec, write_tables

    suite = load_suite(args.suite)
    out_dir = Path(args.out or Path("results") / "bench" / suite["name"])
    progress = Console(stderr=True).is_terminal
    if args.report_only:
        from ccgym.bench.report import rebuild_report

        path, found, missing = rebuild_report(suite, out_dir, progress=progress)
        line = f"{found} runs from the cache, {missing} missing; report: {path.resolve()}"
        _stdout().print(line, highlight=False, soft_wrap=True)
        return 0
    records, stats = run_suite(suite, out_dir, jobs=args.jobs, progress=progress, ray=args.ray)
    spec = table_spec(suite.get("table"))
    rows = build_rows(records, spec=spec)
    title = f"ccgym bench {suite['name']}: {suite.get('description', '')}".rstrip(": ")
    out = _stdout()
    out.print(rich_table(rows, title, spec))
    paths = write_tables(rows, out_dir, title, spec)
    out.print(
        f"{stats.ran} runs done, {stats.cached} from the cache, {stats.wall_s:.1f} s; "
        f"* = Pareto front per scenario; tables: {', '.join(map(str, paths))}",
        highlight=False,
        soft_wrap=True,
    )
    if not args.no_report:
        from ccgym.bench.report import write_report

        path = write_report(suite, records, out_dir, stats=stats, progress=progress)
        out.print(f"report: {path.resolve()}", highlight=False, soft_wrap=True)
    return 0


# --------------------------------------------------------------------------- entry point


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _ray_address(text: str) -> str:
    from ccgym.bench.ray_runner import check_address

    try:
        return check_address(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ccgym`` command."""
    from ccgym import __version__
    from ccgym.perf import DEFAULT_DURATION

    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks"
    )
    parser = argparse.ArgumentParser(
        prog="ccgym", description="Datacenter congestion-control simulator.", parents=[debug]
    )
    parser.add_argument("--version", action="version", version=f"ccgym {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", parents=[debug], help="run a scenario and print its summary")
    p.add_argument("scenario", help="TOML file or bundled scenario name (see `ccgym list`)")
    p.add_argument("--out", metavar="DIR", help="save summary, scenario and Parquet series here")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scenario value, e.g. --set workload[0].load=0.3 (repeatable)",
    )
    p.add_argument(
        "--cc",
        metavar="NAME",
        help="run every flow with this congestion control (see `ccgym list cc`); "
        "tune it with --set cc.PARAM=VALUE",
    )
    p.add_argument("--seed", type=int, metavar="N", help="shorthand for --set seed=N")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary table")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "perf", parents=[debug], help="standard incast benchmark (events/s, ns per packet-hop)"
    )
    p.add_argument(
        "--flows",
        type=_positive_int,
        nargs="+",
        metavar="N",
        help="flow counts (default: 16 128 1024 8192)",
    )
    p.add_argument("--duration", default=DEFAULT_DURATION, metavar="T", help="simulated time")
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
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_perf)

    p = sub.add_parser(
        "list", parents=[debug], help="list bundled scenarios, workloads or CC algorithms"
    )
    p.add_argument("what", choices=["scenarios", "workloads", "cc"])
    p.set_defaults(func=cmd_list)
    _add_learning_commands(sub, debug)

    p = sub.add_parser(
        "bench", parents=[debug], help="run a benchmark suite (cached, parallel) and tabulate it"
    )
    p.add_argument(
        "--suite",
        required=True,
        metavar="NAME|FILE",
        help="bundled suite (quick, adpg-many-to-one, adpg-all-to-all, adpg-long-short) "
        "or a suite TOML file",
    )
    p.add_argument(
        "--jobs", type=_positive_int, metavar="N", help="parallel runs (default: CPU count)"
    )
    p.add_argument(
        "--out", metavar="DIR", help="results, cache and tables (default results/bench/SUITE)"
    )
    p.add_argument("--no-report", action="store_true", help="do not write DIR/report.html")
    p.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: rebuild the tables and report.html from the runs cached in DIR",
    )
    p.add_argument(
        "--ray",
        type=_ray_address,
        metavar="ADDRESS",
        help="run the jobs as Ray tasks: local (a private local Ray, --jobs CPUs), auto (the "
        "cluster running on this machine), HOST:PORT or ray://HOST:PORT; needs ccgym[ray]",
    )
    p.set_defaults(func=cmd_bench)
    return parser


def _error(message: str) -> None:
    line = " ".join(part.strip() for part in str(message).strip().splitlines())
    Console(stderr=True, highlight=False, soft_wrap=True).print(Text(line, style="red"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ccgym`` command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    if getattr(args, "debug", False):
        return func(args)
    try:
        return func(args)
    except KeyboardInterrupt:
        _error("error: interrupted")
        return 130
    except (ScenarioError, OSError) as e:
        _error(f"error: {e}")
        return EXIT_USER_ERROR
    except (ImportError, PerfError) as e:
        _error(f"error: {e}")
        return EXIT_FAILURE
    except InternalError as e:
        _error(f"internal error: {e} (a bug in ccgym; --debug shows the traceback)")
        return EXIT_FAILURE
    except Exception as e:
        _error(f"error: {type(e).__name__}: {e} (--debug shows the traceback)")
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
