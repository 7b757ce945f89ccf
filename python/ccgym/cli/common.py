"""What the command groups of the ``ccgym`` command line share: number formatting, the
console for tables, the run-summary table (``run`` and ``eval``) and argument types.

rich is imported by the functions that draw (it is a good part of a short run's start-up, and
``ccgym run --quiet`` draws nothing)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

DASH = "–"


@contextlib.contextmanager
def results_folder(folder: Path | None) -> Iterator[None]:
    """Makes ``folder`` (and its missing parents) before the work inside, so that a place
    where no folder can be made fails at once, not after a long run (:class:`OSError`, naming
    it); if the work fails, the folders made here go again while they are empty. ``None``:
    nothing to make."""
    if folder is None:
        yield
        return
    made = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    try:
        yield
    except BaseException:
        for p in made:  # innermost first
            with contextlib.suppress(OSError):
                p.rmdir()
        raise


def get(d: Any, *keys: str | int) -> Any:
    """``d[k0][k1]...``, or None when any level is missing or null."""
    for k in keys:
        if d is None:
            return None
        try:
            d = d[k]
        except (KeyError, IndexError, TypeError):
            return None
    return d


def num(x: Any, spec: str = "auto", unit: str = "", scale: float = 1.0) -> str:
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


def nums(
    d: Any, keys: Sequence[str], spec: str = "auto", unit: str = "", scale: float = 1.0
) -> str:
    """The values of ``keys`` in ``d`` as :func:`num` formats them, joined by " / "."""
    values = " / ".join(num(get(d, k), spec, scale=scale) for k in keys)
    return f"{values} {unit}".rstrip()


def pct(x: Any) -> str:
    """A fraction as a percentage."""
    return num(x, ".2f", "%", scale=100.0)


def retransmitted(resent: Any, conservation: Any) -> str:
    """Bytes sent again, with their share of all bytes sent: a go-back-N flow that loses most of
    its packets keeps its bottleneck busy with data the receiver discards (goodput collapse), which
    utilisation alone does not show."""
    text = num(resent, unit="MB", scale=1e-6)
    sent = get(conservation, "sent_bytes")
    if isinstance(resent, (int, float)) and isinstance(sent, (int, float)) and sent > 0:
        text += f" ({100.0 * resent / sent:.1f} % of sent)"
    return text


def summary_table(summary: dict[str, Any], timing: dict[str, Any] | None = None) -> Table:
    """The summary of a run as a two-column rich table."""
    from rich.table import Table

    s, t = summary, timing or {}
    bn, net, fl, paper = s.get("bottleneck"), s.get("network"), s.get("flows"), s.get("paper")
    window = get(s, "window_s") or []
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
            ("seed", num(s.get("seed"))),
            ("duration", num(s.get("duration_s"), unit="s")),
            ("window", " – ".join(num(w) for w in window) + " s" if window else DASH),
        ]
    )
    section(
        [
            ("bottleneck port", str(get(bn, "port") or DASH)),
            ("utilisation", pct(get(bn, "utilization"))),
            ("queue mean / p99 / max", nums(bn, QUEUE, unit="KB")),
            ("queue latency mean / p99", nums(bn, QUEUE_LAT, unit="us")),
        ]
    )
    section(
        [
            ("fairness: Jain", num(get(fl, "jain"), ".4f")),
            ("fairness: min/max flows", num(get(fl, "min_max"), ".4f")),
            ("fairness: min/max hosts", num(get(fl, "host_min_max"), ".4f")),
        ]
    )
    drops_bytes = get(net, "drops_bytes")
    section(
        [
            (
                "drops",
                f"{num(get(net, 'drops_packets'))} packets "
                f"({num(drops_bytes, unit='MB', scale=1e-6)})",
            ),
            ("retransmitted", retransmitted(get(fl, "retransmitted_bytes"), s.get("conservation"))),
            ("timeouts", num(get(fl, "timeouts"))),
            ("ECN marks", num(get(net, "ecn_marks"))),
            ("PFC pauses", num(get(net, "pfc_pauses"))),
        ]
    )
    section(
        [
            ("flows (completed)", f"{num(get(fl, 'count'))} ({num(get(fl, 'completed'))})"),
            ("throughput per flow, mean", num(get(fl, "throughput_gbps_mean"), unit="Gbps")),
            ("FCT mean / p50 / p95 / p99", nums(get(fl, "fct_us"), STATS, unit="us")),
            ("slowdown mean / p50 / p95 / p99", nums(get(fl, "slowdown"), STATS)),
        ]
    )
    breakdown = breakdown_rows(s)
    if breakdown:
        section(breakdown)
    section(
        [
            (
                "paper: SU / FR / QL / drops",
                f"{num(get(paper, 'SU'), '.2f', '%')} / {num(get(paper, 'FR'), '.2f', '%')}"
                f" / {num(get(paper, 'QL'), unit='us')}"
                f" / {num(get(paper, 'drops_mb'), unit='MB')}",
            ),
        ]
    )
    rows = [
        ("events", num(s.get("events"))),
        ("packet hops", num(s.get("packet_hops"))),
    ]
    if t:
        rows += [
            ("wall time", num(t.get("wall_s"), ".3f", "s")),
            ("set-up time", num(t.get("setup_s"), unit="ms", scale=1e3)),
            ("simulated events/s", num(t.get("events_per_s"), ",.0f")),
        ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def size_label(lo: Any, hi: Any) -> str:
    """A flow-size bucket as text: ``"<= 10 KB"``, ``"10 KB-100 KB"``, ``"> 1 MB"``."""

    def text(b: float) -> str:
        for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
            if b >= scale:
                return f"{b / scale:g} {unit}"
        return f"{b:g} B"

    if hi is None:
        return f"> {text(lo)}"
    return f"<= {text(hi)}" if not lo else f"{text(lo)}-{text(hi)}"


def breakdown_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows of the summary's breakdown blocks (``[metrics] breakdown``): slowdown by flow size,
    large-flow goodput, throughput per class, drops and evictions; empty when it has none."""
    rows: list[tuple[str, str]] = []
    for b in get(summary, "by_size", "buckets") or []:
        label = size_label(b.get("min_bytes"), b.get("max_bytes"))
        rows.append(
            (
                f"slowdown {label}: mean / p50 / p99",
                f"{nums(b.get('slowdown'), SIZE_STATS)} "
                f"({num(b.get('completed'))} of {num(b.get('flows'))} flows done)",
            )
        )
    large = get(summary, "by_size", "large_flows")
    if large:
        rows.append(
            (
                f"large flows ({size_label(large.get('min_bytes'), None)}): goodput",
                f"{num(large.get('goodput_gbps_mean'), unit='Gbps')} mean of completed, "
                f"{num(large.get('window_gbps'), unit='Gbps')} delivered in window",
            )
        )
    for c in get(summary, "by_class") or []:
        rows.append(
            (
                f"class {c.get('class')} throughput",
                f"{num(c.get('throughput_gbps'), unit='Gbps')} ({num(c.get('flows'))} flows)",
            )
        )
    losses = get(summary, "losses")
    if losses:
        rows.append(
            (
                "drops: refused / evicted",
                f"{num(losses.get('refused_packets'))} / {num(losses.get('evicted_packets'))} "
                "packets",
            )
        )
        if "trimmed_packets" in losses:  # runs with trimming switches (NDP)
            rows.append(
                (
                    "cut to header (not drops)",
                    f"{num(losses.get('trimmed_packets'))} packets "
                    f"({num(losses.get('trimmed_bytes'), unit='MB', scale=1e-6)} before the cut)",
                )
            )
    return rows


QUEUE = ("queue_mean_kb", "queue_p99_kb", "queue_max_kb")
SIZE_STATS = ("mean", "p50", "p99")
QUEUE_LAT = ("queue_latency_mean_us", "queue_latency_p99_us")
STATS = ("mean", "p50", "p95", "p99")


def table_width(table: Table) -> int:
    """Columns ``table`` takes when nothing limits it."""
    from rich.console import Console

    return Console(width=10_000).measure(table).maximum


def fit_table(table: Table, width: int) -> Table:
    """``table`` made to fit ``width`` columns when it is wider, without cutting a cell: each
    column exactly as wide as its widest cell or longest header word (headers wrap at their
    spaces) and a frame without rules between columns. Rich's own shrinking cuts numbers to
    "10…" instead. A table that fits is returned as it is; one whose whole cells do not fit
    side by side is still squeezed by rich when printed."""
    from rich import box

    if table_width(table) <= width:
        return table
    # The frame's blank divider is the only space between two columns (no padding, no edges).
    table.box = box.SIMPLE_HEAD
    table.padding = (0, 0)
    table.show_edge = False
    for column in table.columns:
        words = [len(w) for w in str(column.header).split()] or [1]
        cells = [len(str(c)) for c in column.cells]
        column.width = max([*words, *cells])
        column.no_wrap = False
    return table


def split_table(table: Table, width: int) -> list[Table]:
    """``table`` fitted to ``width`` columns (:func:`fit_table`) and, when its whole cells still
    do not fit side by side, cut into parts of whole columns printed one under the other, each
    part repeating the row's key columns (the leading ones not aligned right: a scenario and a
    method, say). The title goes with the first part, the caption with the last; row styles and
    section breaks are kept. Only a key plus one column wider than ``width`` is left to rich."""
    from rich.table import Table as RichTable

    table = fit_table(table, width)
    if table_width(table) <= width or len(table.columns) < 2:
        return [table]
    columns = table.columns
    n_keys = 0
    while n_keys < len(columns) - 1 and columns[n_keys].justify != "right":
        n_keys += 1
    n_keys = max(n_keys, 1)
    # The frame puts one blank between two columns (fit_table: no padding, no edges).
    keys_width = sum(c.width or 0 for c in columns[:n_keys]) + n_keys - 1
    groups: list[list[int]] = [[]]
    used = keys_width
    for i in range(n_keys, len(columns)):
        w = (columns[i].width or 0) + 1
        if groups[-1] and used + w > width:
            groups.append([])
            used = keys_width
        groups[-1].append(i)
        used += w
    rows = table.rows
    cells = [list(c.cells) for c in columns]
    parts = []
    for k, group in enumerate(groups):
        part = RichTable(
            title=table.title if k == 0 else None,
            caption=table.caption if k == len(groups) - 1 else None,
            title_justify=table.title_justify,
            caption_justify=table.caption_justify,
            box=table.box,
            padding=table.padding,
            show_edge=table.show_edge,
            header_style=table.header_style,
            title_style=table.title_style,
            caption_style=table.caption_style,
        )
        chosen = [*range(n_keys), *group]
        for i in chosen:
            c = columns[i]
            part.add_column(
                c.header, justify=c.justify, style=c.style, header_style=c.header_style,
                width=c.width, no_wrap=c.no_wrap,
            )  # fmt: skip
        for r, row in enumerate(rows):
            part.add_row(
                *(cells[i][r] for i in chosen), style=row.style, end_section=row.end_section
            )
        parts.append(part)
    return parts


def stdout() -> Console:
    """A console for tables: on a terminal, a table wider than it is fitted to it
    (:func:`split_table`); off a terminal, as wide as the table needs."""
    from rich.console import Console
    from rich.table import Table

    class TableConsole(Console):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            if not self.is_terminal or not any(isinstance(o, Table) for o in objects):
                super().print(*objects, **kwargs)
                return
            for o in objects:  # a table cut into parts prints them one under the other
                parts = split_table(o, self.width) if isinstance(o, Table) else [o]
                for n, part in enumerate(parts):
                    if n:
                        super().print()
                    super().print(part, **kwargs)

    console = TableConsole()
    # Off a terminal nothing limits the width: a wide table is printed whole, not cut at 200.
    return console if console.is_terminal else Console(width=1000)


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def path_arg(text: str) -> str:
    """argparse type: a file or folder path; an empty one is refused (``--out ''`` would write
    into the current directory, ``--config ''`` read the defaults, without a word)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    return text
