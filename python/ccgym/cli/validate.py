"""``ccgym validate``: ccgym beside htsim and YAPS on the same scenarios
(:mod:`ccgym.validation`)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ccgym.cli.common import stdout

if TYPE_CHECKING:
    from rich.table import Table

    from ccgym.validation import Case, Check


def register(sub: Any, debug: argparse.ArgumentParser) -> None:
    """Adds ``validate``."""
    p = sub.add_parser(
        "validate",
        parents=[debug],
        help="run scenarios that htsim and YAPS ran, and compare (docs/validation.md)",
    )
    p.add_argument(
        "--only",
        nargs="+",
        metavar="TEXT",
        help="cases whose name contains any of these (e.g. ndp, yaps, 'incast 64'); --list shows "
        "the names",
    )
    p.add_argument("--list", action="store_true", help="list the cases and run nothing")
    p.add_argument("--json", action="store_true", help="print the comparisons as JSON")
    p.set_defaults(func=cmd_validate)


def _selected(only: list[str] | None) -> list[Case]:
    from ccgym._errors import ScenarioError
    from ccgym.validation import CASES

    if not only:
        return list(CASES)
    cases = [c for c in CASES if any(t.lower() in c.name.lower() for t in only)]
    if not cases:
        raise ScenarioError(
            f"no validation case matches {' or '.join(map(repr, only))}; "
            "`ccgym validate --list` shows them"
        )
    return cases


def cmd_validate(args: argparse.Namespace) -> int:
    """``ccgym validate``: exit status 0 when every statistic is within its tolerance, 1 if not."""
    from ccgym._progress import progress_bar
    from ccgym.validation import validate

    cases = _selected(args.only)
    if args.list:
        for case in cases:
            print(case.name)
        return 0
    bar = progress_bar(
        "validate", count_width=2 * len(str(len(cases))) + 1, elastic="case", transient=True
    )
    rows = []
    with bar:
        task = bar.add_task("validate", total=len(cases), case="")
        for case in cases:
            bar.update(task, case=case.name)
            rows += validate([case])
            bar.update(task, advance=1)
    if args.json:
        print(json.dumps([_as_json(c, m, checks) for c, m, checks in rows], indent=2))
    else:
        stdout().print(validation_table(rows))
    failed = [c.name for c, _, checks in rows if not all(k.within for k in checks)]
    if not args.json:
        n = sum(len(checks) for _, _, checks in rows)
        if failed:
            stdout().print(f"[red]outside tolerance: {', '.join(failed)}")
        else:
            cases = f"{len(rows)} case{'' if len(rows) == 1 else 's'}"
            stdout().print(f"{cases}, {n} statistics: all within tolerance")
    return 1 if failed else 0


def _as_json(case: Case, measured: dict[str, float], checks: list[Check]) -> dict[str, Any]:
    return {
        "case": case.name,
        "simulator": case.simulator,
        "transport": case.transport,
        "shape": case.shape,
        "measured": measured,
        "checks": [
            {
                "stat": k.stat,
                "reference": list(k.reference) if isinstance(k.reference, tuple) else k.reference,
                "ccgym": k.ccgym,
                "difference": k.difference,
                "tolerance": k.tolerance,
                "within": k.within,
            }
            for k in checks
        ],
    }


def _fig(x: float | tuple[float, float]) -> str:
    if isinstance(x, tuple):
        return f"{_fig(x[0])}-{_fig(x[1])}"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"


def validation_table(rows: list[tuple[Case, dict[str, float], list[Check]]]) -> Table:
    """One line per statistic compared: the reference, ccgym's figure, the difference and the
    tolerance."""
    from rich.table import Table

    table = Table(title="ccgym against htsim and YAPS (docs/validation.md)", title_style="bold")
    for name, justify in (
        ("case", "left"),
        ("stat", "left"),
        ("reference", "right"),
        ("ccgym", "right"),
        ("difference", "right"),
        ("tolerance", "right"),
        ("", "left"),
    ):
        table.add_column(name, justify=justify, no_wrap=name != "case")  # type: ignore[arg-type]
    for i, (case, _, checks) in enumerate(rows):
        for j, k in enumerate(checks):
            table.add_row(
                case.name if j == 0 else "",
                k.stat,
                _fig(k.reference),
                _fig(k.ccgym),
                f"{k.difference:+.2%}" if abs(k.difference) >= 5e-5 else "0.00%",
                f"{k.tolerance:.2%}",
                "[green]ok" if k.within else "[red]outside",
                end_section=j == len(checks) - 1 and i < len(rows) - 1,
            )
    return table
