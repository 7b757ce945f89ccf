"""``ccgym bench``: a suite of runs (cached, in parallel), its tables and HTML report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccgym.cli.common import fit_table, path_arg, positive_int, stdout, table_width

if TYPE_CHECKING:
    from rich.table import Table

    from ccgym.bench.tables import TableSpec


def _bundled_suites() -> list[str]:
    """The bundled suites' names, read from the package without importing the bench runner."""
    suites = Path(__file__).parent.parent / "bench" / "suites"
    return sorted(p.stem for p in suites.glob("*.toml"))


def register(sub: Any, debug: argparse.ArgumentParser) -> None:
    """Adds ``bench``."""
    p = sub.add_parser(
        "bench", parents=[debug], help="run a benchmark suite (cached, parallel) and tabulate it"
    )
    p.add_argument(
        "--suite",
        required=True,
        type=path_arg,
        metavar="NAME|FILE",
        help=f"bundled suite ({', '.join(_bundled_suites())}) or a suite TOML file",
    )
    p.add_argument(
        "--jobs", type=positive_int, metavar="N", help="parallel runs (default: CPU count)"
    )
    p.add_argument(
        "--out",
        type=path_arg,
        metavar="DIR",
        help="results, cache and tables (default results/bench/SUITE)",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scenario value in every run of the suite, e.g. --set duration=20ms "
        "(repeatable; applied after the suite's top-level overrides, before each scenario's "
        "and each method's own)",
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


def _ray_address(text: str) -> str:
    from ccgym.bench.ray_runner import check_address

    try:
        return check_address(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def cmd_bench(args: argparse.Namespace) -> int:
    """``ccgym bench``: run a suite (cached, in parallel) and print its table."""
    from pathlib import Path

    from rich.console import Console

    from ccgym.bench.runner import load_suite, run_suite
    from ccgym.bench.tables import build_rows, table_spec, write_tables

    suite = load_suite(args.suite)
    if args.set:  # as the suite file's top-level overrides, after them; in every run's cache key
        suite["overrides"] = [*(suite.get("overrides") or []), *args.set]
    out_dir = Path(args.out or Path("results") / "bench" / suite["name"])
    progress = Console(stderr=True).is_terminal
    if suite.get("skipped_methods"):  # optional presets whose CC this ccgym does not have
        skipped = ", ".join(suite["skipped_methods"])
        print(f"skipped optional methods (no such CC here): {skipped}", file=sys.stderr)
    if args.report_only:
        from ccgym.bench.report import rebuild_report

        path, found, missing = rebuild_report(suite, out_dir, progress=progress)
        line = f"{found} runs from the cache, {missing} missing; report: {path.resolve()}"
        stdout().print(line, highlight=False, soft_wrap=True)
        return 0
    # a bar on a terminal; plain lines in a log file (nohup, a redirect), not hours of silence
    records, stats = run_suite(
        suite, out_dir, jobs=args.jobs, progress=progress or "plain", ray=args.ray
    )
    spec = table_spec(suite.get("table"))
    rows = build_rows(records, spec=spec)
    title = f"ccgym bench {suite['name']}: {suite.get('description', '')}".rstrip(": ")
    out = stdout()
    out.print(bench_table(rows, title, spec, width=out.width if out.is_terminal else None))
    if spec.notes is not None:  # e.g. the ACC validity checks
        for note in spec.notes(rows):
            out.print(note, highlight=False, soft_wrap=True)
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


def bench_table(
    rows: Sequence[Mapping[str, Any]], title: str, spec: TableSpec, width: int | None = None
) -> Table:
    """The bench table for a terminal ``width`` columns wide (None: no limit). Whole when it
    fits; otherwise the means only with the Pareto mark after the method, and if still too wide
    without the paper's numbers, each fitted to the width (:func:`fit_table`) and saying in its
    caption what is left to table.md. So no cell is cut to "ho…"; the files keep everything.
    A terminal narrower still prints it in parts (:func:`~ccgym.cli.common.split_table`)."""
    from ccgym.bench.tables import PARETO_MARK, rich_table

    table = rich_table(rows, title, spec)
    if width is None or table_width(table) <= width:
        return table
    moved = ["min–max"] if any(row.get("seeds", 1) > 1 for row in rows) else []
    table = fit_table(rich_table(rows, title, spec, ranges=False), width)
    if table_width(table) > width and any(row.get("published") for row in rows):
        table = fit_table(rich_table(rows, title, spec, ranges=False, paper=False), width)
        moved.append("the paper's numbers")
    where = f" {' and '.join(moved)} in table.md;" if moved else ""
    table.caption = f"means over seeds;{where} {PARETO_MARK} after a method: Pareto front"
    table.caption_justify = "left"
    return table
