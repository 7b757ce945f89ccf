"""``ccgym run`` (simulate a scenario) and ``ccgym list`` (what ships with the package)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccgym._errors import ScenarioError
from ccgym.cli.common import path_arg, results_folder, stdout, summary_table

if TYPE_CHECKING:
    from rich.table import Table


def register(sub: Any, debug: argparse.ArgumentParser) -> None:
    """Adds ``run`` and ``list``."""
    p = sub.add_parser("run", parents=[debug], help="run a scenario and print its summary")
    p.add_argument(
        "scenario", type=path_arg, help="TOML file or bundled scenario name (see `ccgym list`)"
    )
    p.add_argument(
        "--out", type=path_arg, metavar="DIR", help="save summary, scenario and Parquet series here"
    )
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
        "list",
        parents=[debug],
        help="list bundled scenarios, workloads, CC algorithms or bench suites",
    )
    p.add_argument("what", choices=["scenarios", "workloads", "cc", "suites"])
    p.set_defaults(func=cmd_list)


def cmd_run(args: argparse.Namespace) -> int:
    """``ccgym run``: simulate a scenario, print its summary, optionally save the results.

    The series are built (and NumPy and pandas imported) only with ``--out``, to be written.
    """
    with results_folder(Path(args.out) if args.out is not None else None):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The run of :func:`cmd_run` once the results folder, if any, exists."""
    from ccgym.runner import simulate

    overrides = list(args.set or [])
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    progress = False
    if not args.quiet:
        from rich.console import Console

        progress = Console(stderr=True).is_terminal
    try:
        raw = simulate(
            args.scenario,
            overrides=overrides,
            cc=args.cc,
            progress=progress,
            on_estimate=None if args.quiet else _print_estimate,
            tables=args.out is not None,
        )
    except ScenarioError:
        _refuse_experiment(args.scenario)
        raise
    if not args.quiet:
        stdout().print(summary_table(raw.summary, raw.timing))
    if args.out is not None:
        from ccgym.result import Result

        path = Result.from_run(raw).save(args.out)
        stdout().print(f"results: {path}", highlight=False, soft_wrap=True)
    return 0


def _refuse_experiment(scenario: str) -> None:
    """When a run of ``scenario`` failed: if it is a HOPASS experiment (a top-level ``[hopass]``
    table, which the simulator does not know), the error says so and how to run it, instead of
    the simulator's "unknown field 'hopass'". Looked at only after a failure, so a run that
    works parses its file once."""
    from ccgym.scenario import load_scenario

    try:
        data, _ = load_scenario(scenario)
    except ScenarioError:
        return
    if "hopass" not in data:
        return
    raise ScenarioError(
        f"{scenario} is a HOPASS slow-layer experiment (its [hopass] table is read by"
        " ccgym.hopass, not by the simulator), so `ccgym run` cannot run it. From Python:"
        f' ccgym.hopass.run_experiment(ccgym.load_scenario("{scenario}")[0], "hopass") (or a'
        ' classic CC such as "dctcp" for the baseline); or as a bench suite: ccgym bench'
        " --suite hopass-slow-layer or --suite hopass-overall. See docs/hopass.md"
    ) from None


def _print_estimate(est: dict[str, Any]) -> None:
    """Print the cost estimate of a run on stderr before it starts (yellow when large)."""
    from rich.console import Console

    from ccgym.runner import describe_estimate

    large = est["memory_bytes"] > est["warn_memory"]
    style = "yellow" if large else "dim"
    Console(stderr=True, highlight=False, soft_wrap=True).print(describe_estimate(est), style=style)


def cc_table(catalogue: list[tuple[str, str, list[tuple[str, str, str]]]]) -> Table:
    """The congestion-control algorithms with their parameters and defaults."""
    from rich.table import Table

    table = Table(title="congestion control (use with --cc NAME, tune with --set cc.PARAM=V)")
    for title in ("algorithm", "parameter", "default", "meaning"):
        table.add_column(title, overflow="fold")
    for name, summary, params in catalogue:
        table.add_row(f"[bold]{name}[/bold]", "", "", summary)
        for pname, default, help_text in params:
            table.add_row("", pname, default, help_text)
        table.add_section()
    return table


def cmd_list(args: argparse.Namespace) -> int:
    """``ccgym list scenarios|workloads|cc|suites``: what ships with the package."""
    from ccgym import scenario as sc

    if args.what == "cc":
        from ccgym.runner import native

        stdout().print(cc_table(native().cc_catalogue()))
        return 0
    if args.what == "suites":
        rows = _suite_rows()
    elif args.what == "scenarios":
        rows = [(name, sc.scenario_description(name)) for name in sc.bundled_scenarios()]
    else:
        rows = [(name, sc.workload_description(name)) for name in sc.bundled_workloads()]
    width = max((len(name) for name, _ in rows), default=0)
    for name, description in rows:
        print(f"{name:<{width}}  {description}".rstrip())
    return 0


def _suite_rows() -> list[tuple[str, str]]:
    """Each bundled suite with its number of runs (scenarios x methods x seeds, as ``ccgym
    bench`` plans them) and its description."""
    from ccgym.bench.runner import bundled_suites, load_suite, planned_runs

    rows = []
    for name in bundled_suites():
        suite = load_suite(name)
        rows.append((name, f"{planned_runs(suite):>4} runs  {suite.get('description', '')}"))
    return rows
