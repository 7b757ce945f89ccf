"""Bench tables: one row per (scenario, method), mean and min-max over seeds, Pareto marks,
published numbers beside ccgym's; rich (terminal), Markdown and CSV.

Two layouts (:class:`TableSpec`), chosen by a suite's ``table`` key: ``standard`` (SU / FR / Jain /
QL / drops, the paper's Table 2/3 beside) for many-to-one and all-to-all, and ``long-short`` (RT /
DR / LBW / short-message FCT, :mod:`ccgym.bench.longshort`, the paper's long-short table beside).
"""

from __future__ import annotations

import csv
import io
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccgym._errors import ScenarioError
from ccgym.bench import acc, acc_suite, mvfst
from ccgym.bench.friendliness import FRIENDLINESS_METRICS
from ccgym.bench.mvfst_links import HISTORY_COLUMNS, HISTORY_METRICS, LINKS_COLUMNS, LINKS_METRICS
from ccgym.bench.pareto import HIGHER, LONG_SHORT_METRICS, LOWER, METRICS, Band, pareto_mask
from ccgym.bench.qtcp import QTCP_METRICS
from ccgym.bench.slowdown import BUCKET_TITLES, SLOWDOWN_METRICS
from ccgym.bench.weighted import SHARES, WEIGHTED_METRICS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PUBLISHED_FILE = Path(__file__).parent / "published.toml"


Derive = Callable[[list[dict[str, Any]], list[Mapping[str, Any]]], list[dict[str, Any]]]
"""A table's derived rows: ``(rows, run records) -> rows to show``."""


@dataclass(frozen=True)
class TableSpec:
    """What a bench table shows and how it marks the Pareto front."""

    name: str
    columns: tuple[tuple[str, str, str], ...]
    """(metric key, column title, format) of the metric columns, in order."""
    metrics: Mapping[str, Band]
    """Pareto metrics: name -> (direction, tolerance band); see :mod:`ccgym.bench.pareto`."""
    published_fields: tuple[str, ...]
    """What the entries of a published list are, e.g. ``("SU", "FR", "QL")``."""
    published_title: str
    """Title of the published column."""
    published_source: str
    """Where the published numbers come from, for the Markdown note."""
    extra: tuple[str, ...] = ()
    """Further metrics aggregated like the columns, written to the CSV only."""
    derive: Derive | None = None
    """Optional: rows derived from the aggregated rows and the run records (e.g. the ACC static
    oracle), called last by :func:`build_rows`; returns the rows to show."""
    notes: Callable[[Sequence[Mapping[str, Any]]], list[str]] | None = None
    """Optional: lines printed under the table (e.g. the ACC validity checks)."""


STANDARD = TableSpec(
    name="standard",
    columns=(
        ("SU", "SU %", ".1f"),
        ("FR", "FR %", ".1f"),
        ("jain", "Jain", ".3f"),
        ("QL", "QL us", ".2f"),
        ("drops_mb", "drops MB", ".2f"),
    ),
    metrics=METRICS,
    published_fields=("SU", "FR", "QL"),
    published_title="paper SU / FR / QL",
    published_source="the ADPG paper's Table 2/3 (SU % / FR % / QL us)",
)

LONG_SHORT = TableSpec(
    name="long-short",
    columns=(
        ("RT", "RT s", ".1e"),
        ("DR", "DR Gb/s", ".2f"),
        ("LBW", "LBW %", ".1f"),
        ("FCT", "FCT us", ".0f"),
        ("FCT_p99", "FCT p99 us", ".0f"),
        ("msgs_done", "done %", ".0f"),
        ("SU", "SU %", ".1f"),
    ),
    metrics=LONG_SHORT_METRICS,
    published_fields=("RT", "DR", "LBW"),
    published_title="paper RT / DR / LBW",
    published_source="the ADPG paper's long-short table (RT s / DR / LBW %)",
    extra=("RT_periods", "RT_recovered", "LBW_goodput"),
)

TABLES: dict[str, TableSpec] = {spec.name: spec for spec in (STANDARD, LONG_SHORT)}
"""The table layouts by name (a suite's ``table`` key)."""

# HOPASS slow layer (ccgym.bench.hopass_slow): per-class allocation against the exact optimum.
HOPASS_SLOW = TableSpec(
    name="hopass-slow-layer",
    columns=(
        ("x1", "prop Mb/s", ".0f"),
        ("x2", "alpha Mb/s", ".0f"),
        ("x3", "min-FCT Mb/s", ".0f"),
        ("U", "utility", ".1f"),
        ("U_opt", "optimum", ".1f"),
        ("err", "error %", ".3f"),
        ("alloc_err", "alloc err %", ".2f"),
        ("conv_ms", "conv ms", ".0f"),
        ("alloc_conv_ms", "alloc conv ms", ".0f"),
        ("reconv_ms", "re-conv ms", ".0f"),
        ("realloc_ms", "re-alloc ms", ".0f"),
        ("err_after", "error % after", ".3f"),
        ("util", "util %", ".2f"),
        ("goodput", "goodput %", ".2f"),
    ),
    metrics={"err": (LOWER, 0.05), "err_after": (LOWER, 0.05), "goodput": (HIGHER, 0.5)},
    published_fields=("x1", "x2", "x3", "U", "x1_opt", "x2_opt", "x3_opt", "U_opt", "err"),
    published_title="paper x1 / x2 / x3 / U, optimum x1 / x2 / x3 / U, error %",
    published_source="the HOPASS paper's Table 3 (its own utility parameters, unpublished)",
    extra=("alloc_err_after", "drops_mb"),
)

HOPASS_OVERALL = TableSpec(
    name="hopass-overall",
    columns=(
        ("util", "util %", ".2f"),
        ("goodput", "goodput %", ".2f"),
        ("U", "utility", ".0f"),
        ("U_opt", "optimum", ".0f"),
        ("err", "gap %", ".2f"),
        ("x1", "prop Gb/s", ".1f"),
        ("x2", "alpha Gb/s", ".1f"),
        ("x3", "min-FCT Gb/s", ".1f"),
        ("conv_ms", "conv ms", ".0f"),
        ("drops_mb", "drops MB", ".2f"),
    ),
    metrics={"goodput": (HIGHER, 0.5), "err": (LOWER, 0.1), "drops_mb": (LOWER, 0.01)},
    published_fields=(),
    published_title="paper",
    published_source="none: the HOPASS paper gives no numbers for this experiment",
    extra=("alloc_err",),
)
TABLES.update({spec.name: spec for spec in (HOPASS_SLOW, HOPASS_OVERALL)})

SLOWDOWN = TableSpec(
    name="slowdown",
    columns=(
        *(
            col
            for i, title in enumerate(BUCKET_TITLES)
            for col in ((f"sd{i}_mean", f"{title} mean", ".2f"), (f"sd{i}_p99", "p99", ".2f"))
        ),
        ("large_gbps", "large Gb/s", ".2f"),
        ("large_window_gbps", "large agg Gb/s", ".0f"),
        ("drops", "drops", ".0f"),
        ("trimmed", "cut", ".0f"),
    ),
    metrics=SLOWDOWN_METRICS,
    published_fields=(),
    published_title="paper",
    # Shared by the receiver-driven (pFabric, pHost, Homa) and hpcc-pint (PINT) suites.
    published_source="none embedded: the papers give these results as plots (see the suite file)",
    extra=(
        *(f"sd{i}_p50" for i in range(len(BUCKET_TITLES))),
        *(f"done{i}" for i in range(len(BUCKET_TITLES))),
        "evicted",
    ),
)
"""Slowdown by flow size (:mod:`ccgym.bench.slowdown`): mean and p99 FCT slowdown per size
bucket, large-flow goodput (mean per completed flow, and aggregate in the window), drops, and
packets cut by trimming switches (NDP)."""

TABLES[SLOWDOWN.name] = SLOWDOWN

WEIGHTED_SHARES = TableSpec(
    name="weighted-shares",
    columns=(
        *((f"s{i + 1}", f"share {i + 1}", ".3f") for i in range(4)),
        ("share_err", "share err %", ".1f"),
        ("weighted_gbps", "weighted Gb/s", ".2f"),
        ("small_mean", "small mean", ".2f"),
        ("small_p99", "small p99", ".2f"),
        ("drops", "drops", ".0f"),
    ),
    metrics=WEIGHTED_METRICS,
    published_fields=(),
    published_title="paper",
    published_source="none embedded: the HOPASS paper shows its weighted dumbbell as plots",
    extra=(*(f"s{i + 1}" for i in range(4, SHARES)), "small_done"),
)
"""Weighted flows' shares against their class weights (:mod:`ccgym.bench.weighted`): the
shares scaled to the weights' sum, the largest error against the targets, the background
flows' slowdown, drops."""

TABLES[WEIGHTED_SHARES.name] = WEIGHTED_SHARES

QTCP_TABLE = TableSpec(
    name="qtcp",
    columns=(
        ("thr_mbps", "throughput Mb/s", ".1f"),
        ("queue_kb", "queue KB", ".1f"),
        ("rtt_ms", "RTT ms", ".1f"),
        *((f"jain{k}", f"Jain {k}", ".3f") for k in range(1, 5)),
        ("jain_min", "Jain min", ".3f"),
    ),
    metrics=QTCP_METRICS,
    published_fields=(),
    published_title="paper",
    published_source=(
        "none embedded: the QTCP-AIMD paper shows its results as plots; QTCP's +59.5% "
        "throughput over NewReno (varying bandwidth) is its one published number"
    ),
)
"""QTCP, QTCP-AIMD and the TCP baselines per phase (:mod:`ccgym.bench.qtcp`): bottleneck
throughput, mean queue and RTT over the phases, Jain's index with 1 to 4 senders and the least
fair phase."""

TABLES[QTCP_TABLE.name] = QTCP_TABLE

MVFST_BLOCKING = TableSpec(
    name=mvfst.TABLE,
    columns=(
        ("mb", "bytes MB", ".2f"),
        ("mbps", "Mb/s", ".3f"),
        ("fewer_pct", "fewer bytes %", ".1f"),
    ),
    metrics=mvfst.MVFST_METRICS,
    published_fields=("fewer bytes %",),
    published_title="paper",
    published_source=(
        "MVFST-RL (Sivakumar et al. 2019): blocking 25 ms / 50 ms send 1.1% / 11.4% fewer bytes"
    ),
    derive=mvfst.derive_rows,
)
"""Bytes a sender delivers when it blocks on its policy against when it does not
(:mod:`ccgym.bench.mvfst`): bytes over the run, mean rate, and the loss against the
non-blocking reference, beside MVFST-RL's published loss."""

TABLES[MVFST_BLOCKING.name] = MVFST_BLOCKING

FRIENDLINESS_TABLE = TableSpec(
    name="friendliness",
    columns=(
        ("share", "flow 0 share", ".3f"),
        ("share_ratio", "share / fair", ".2f"),
        ("jain", "Jain", ".3f"),
        ("thr_mbps", "throughput Mb/s", ".1f"),
        ("queue_kb", "queue KB", ".1f"),
    ),
    metrics=FRIENDLINESS_METRICS,
    published_fields=(),
    published_title="paper",
    published_source="none embedded: the QTCP papers publish no friendliness numbers",
)
"""Flow 0 (the method) against flows of another CC, or flows of one kind on different RTTs
(:mod:`ccgym.bench.friendliness`): flow 0's share and its ratio to the fair share, Jain's index,
throughput, mean queue."""

TABLES[FRIENDLINESS_TABLE.name] = FRIENDLINESS_TABLE


ACC_ORACLE = TableSpec(
    name="acc-oracle",
    columns=acc.ACC_COLUMNS,
    metrics=acc.ACC_METRICS,
    published_fields=(),
    published_title="paper",
    published_source="none embedded: the ACC paper gives no per-setting numbers",
    extra=acc.ACC_EXTRA,
    derive=acc.derive_rows,
    notes=acc.table_notes,
)
"""Static ECN templates on the ACC scenarios (:mod:`ccgym.bench.acc`): mice and elephant FCT,
throughput, queues, PFC pauses, the training reward; the static oracle as a derived row and the
validity checks under the table."""

TABLES[ACC_ORACLE.name] = ACC_ORACLE

MVFST_LINKS = TableSpec(
    name="mvfst-links",
    columns=LINKS_COLUMNS,
    metrics=LINKS_METRICS,
    published_fields=(),
    published_title="paper",
    published_source=(
        "none embedded: the MVFST-RL paper shows its Pantheon results as plots "
        "(spec learning_cc.md 5.7)"
    ),
    extra=("goodput_mbps",),
)
"""MVFST-RL against the classic CCs per Pantheon-like link (:mod:`ccgym.bench.mvfst_links`): mean
throughput, 95th-percentile one-way delay, loss."""

TABLES[MVFST_LINKS.name] = MVFST_LINKS

MVFST_HISTORY = TableSpec(
    name="mvfst-history",
    columns=HISTORY_COLUMNS,
    metrics=HISTORY_METRICS,
    published_fields=(),
    published_title="paper",
    published_source="none embedded: the MVFST-RL paper shows its training curves as plots",
)
"""Short MVFST-RL trainings by action history k, with and without the LSTM
(:mod:`ccgym.bench.mvfst_links`): reward per step at the start and at the end."""

TABLES[MVFST_HISTORY.name] = MVFST_HISTORY

ACC_TABLE = TableSpec(
    name="acc",
    columns=(*acc.ACC_COLUMNS[:-1], ("mice_p99_late_us", "late p99 us", ".0f")),
    metrics=acc.ACC_METRICS,
    published_fields=(),
    published_title="paper",
    published_source="none embedded: the ACC paper's per-workload FCT tables were not retrieved",
    extra=(*acc.ACC_EXTRA, "reward", "agent_reward", "template_mean", "decisions"),
    derive=acc_suite.derive_rows,
    notes=acc_suite.table_notes,
)
"""ACC's learned switch agents against the static presets and the static oracle
(:mod:`ccgym.bench.acc_suite`): the acc-oracle table's metrics plus the mice p99 FCT of the
window's second half; ACC against the best preset and the oracle under the table."""

TABLES[ACC_TABLE.name] = ACC_TABLE

COLUMNS = STANDARD.columns
"""(metric key, column title, format) of the standard table's metric columns."""

PARETO_MARK = "*"


def table_spec(name: str | None) -> TableSpec:
    """The table layout called ``name`` (None: ``standard``)."""
    try:
        return TABLES[name or STANDARD.name]
    except KeyError:
        raise ScenarioError(
            f"unknown bench table {name!r}; use one of {', '.join(map(repr, TABLES))}"
        ) from None


def load_published(path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The paper's numbers: ``{"m2o-128": {"dcqcn": [SU, FR, QL] or "packet loss"}, ...}``.

    Long-short tables (``ls-N``) hold ``[RT, DR, LBW]`` instead.
    """
    return tomllib.loads(Path(path or PUBLISHED_FILE).read_text())


PAPER_POLICIES = {"adpg-default": "adpg"}
"""Bundled policies that stand for a published method: bundled name -> published method. Only
these files get the paper's numbers; a user's policy never does, whatever its file is called."""


def bundled_policy_name(spec: str) -> str | None:
    """The bundled policy a ``policy:`` method's ``NAME|PATH`` runs, or None for a user's file.

    Resolved as :func:`ccgym.policies.policy_path` does: an existing file first (bundled only when
    it is the package's own file), else a bundled name with or without ``.json``.
    """
    from ccgym.policies import POLICY_DIR

    path = Path(spec)
    if path.is_file():
        path = path.resolve()
        return path.stem if path.parent == POLICY_DIR.resolve() else None
    name = spec.removesuffix(".json")
    if "/" in spec or "\\" in spec or not (POLICY_DIR / f"{name}.json").is_file():
        return None
    return name


def paper_method(method: str) -> str | None:
    """The published method a ccgym method compares with: a CC name in lower case, the bundled
    ``policy:adpg-default`` -> ``adpg``; None for any other ``policy:`` method (a user's policy,
    even one called ``adpg-*.json``, has no published numbers)."""
    if not method.startswith("policy:"):
        return method.lower()
    return PAPER_POLICIES.get(bundled_policy_name(method.split(":", 1)[1]) or "")


def _finite(x: Any) -> float | None:
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return None if math.isnan(x) else float(x)


def build_rows(
    records: Iterable[Mapping[str, Any]],
    *,
    published: Mapping[str, Mapping[str, Any]] | None = None,
    metrics: Mapping[str, Band] | None = None,
    spec: TableSpec = STANDARD,
) -> list[dict[str, Any]]:
    """Aggregate run records into one row per (scenario label, method), in suite order.

    A row has ``scenario``, ``method``, ``seeds``, for every metric ``M`` of ``spec`` the mean
    ``M`` and ``M_min`` / ``M_max`` over seeds (None when no seed has it), ``pareto`` (not
    dominated by another method on the same scenario, over the means, on ``metrics``, by default
    ``spec.metrics``) and ``published`` (the paper's list, e.g. [SU, FR, QL], a note such as
    ``"packet loss"``, or None).
    """
    published = load_published() if published is None else published
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for rec in records:
        groups.setdefault((rec["label"], rec["method"]), []).append(rec)
    rows = []
    for (label, method), recs in groups.items():
        row: dict[str, Any] = {"scenario": label, "method": method, "seeds": len(recs)}
        for key in (*(k for k, _, _ in spec.columns), *spec.extra):
            vals = [v for v in (_finite(r["metrics"].get(key)) for r in recs) if v is not None]
            row[key] = sum(vals) / len(vals) if vals else None
            row[f"{key}_min"] = min(vals) if vals else None
            row[f"{key}_max"] = max(vals) if vals else None
        table = published.get(recs[0].get("published") or "", {})
        paper = paper_method(method)
        row["published"] = None if paper is None else table.get(paper)
        rows.append(row)
    by_scenario: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_scenario.setdefault(row["scenario"], []).append(i)
    for idx in by_scenario.values():
        mask = pareto_mask([rows[i] for i in idx], metrics or spec.metrics)
        for i, keep in zip(idx, mask, strict=True):
            rows[i]["pareto"] = keep
    if spec.derive is not None:
        rows = spec.derive(rows, [r for recs in groups.values() for r in recs])
    return rows


def _cell(row: Mapping[str, Any], key: str, spec: str, ranges: bool = True) -> str:
    mean = row.get(key)
    if mean is None:
        return "–"
    text = format(mean, spec)
    lo, hi = row.get(f"{key}_min"), row.get(f"{key}_max")
    if ranges and row.get("seeds", 1) > 1 and lo is not None and hi is not None:
        text += f" ({format(lo, spec)}–{format(hi, spec)})"
    return text


def published_text(pub: Any) -> str:
    """``"92 / 95 / 8"``, ``"6e-07 / 0 / 97"``, ``"packet loss"`` or ``""``."""
    if pub is None:
        return ""
    if isinstance(pub, str):
        return pub
    return " / ".join(f"{x:g}" for x in pub)


def table_cells(
    rows: Sequence[Mapping[str, Any]],
    spec: TableSpec = STANDARD,
    ranges: bool = True,
    paper: bool | None = True,
) -> tuple[list[str], list[list[str]]]:
    """Header and string cells of the table (mean, and with ``ranges`` (min–max) over seeds
    when > 1). ``paper``: the published column always (True: the files), never (False), or
    only when some row has published numbers (None: the report and the terminal)."""
    if paper is None:
        paper = any(row.get("published") for row in rows)
    header = ["scenario", "method", "seeds", *(t for _, t, _ in spec.columns), "Pareto"]
    if paper:
        header.append(spec.published_title)
    cells = []
    for row in rows:
        cells.append(
            [
                row["scenario"],
                row["method"],
                str(row["seeds"]),
                *(_cell(row, key, fmt, ranges) for key, _, fmt in spec.columns),
                PARETO_MARK if row.get("pareto") else "",
                *([published_text(row.get("published"))] if paper else []),
            ]
        )
    return header, cells


def rich_table(
    rows: Sequence[Mapping[str, Any]],
    title: str = "",
    spec: TableSpec = STANDARD,
    *,
    ranges: bool = True,
    paper: bool | None = None,
) -> Any:
    """The table as a :class:`rich.table.Table`; a rule between scenarios. ``ranges`` False:
    the means only, and the Pareto mark after the method's name instead of a column of its own
    (for a narrow terminal: ``ccgym.cli.bench.bench_table``). ``paper`` as in
    :func:`table_cells` (by default, the published column only when some row has numbers)."""
    from rich.table import Table

    header, cells = table_cells(rows, spec, ranges, paper)
    if not ranges:
        pareto = header.index("Pareto")
        del header[pareto]
        for line in cells:
            mark = line.pop(pareto)
            line[1] += f" {mark}" if mark else ""
    table = Table(title=title or None, title_justify="left")
    for i, col in enumerate(header):
        table.add_column(col, justify="left" if i < 2 else "right", no_wrap=True)
    for i, (row, line) in enumerate(zip(rows, cells, strict=True)):
        if i and row["scenario"] != rows[i - 1]["scenario"]:
            table.add_section()
        table.add_row(*line, style="bold" if row.get("pareto") else None)
    return table


def _band_text(band: Band) -> str:
    tol = f"±{band[1]:g}"
    if len(band) > 2 and band[2]:
        tol = f"±max({band[1]:g}, {band[2] * 100:g} %)"
    return tol


def pareto_note(spec: TableSpec = STANDARD) -> str:
    """One sentence: which directions are better and the tolerance bands of ``spec``."""
    higher = [k for k, band in spec.metrics.items() if band[0] == HIGHER]
    lower = [k for k, band in spec.metrics.items() if band[0] != HIGHER]
    parts = [f"{', '.join(higher)} higher" if higher else "", f"{', '.join(lower)} lower"]
    return (
        f"{PARETO_MARK} = not dominated by another method on the same scenario "
        f"({' and '.join(p for p in parts if p)} are better; tolerance bands "
        + ", ".join(f"{k} {_band_text(band)}" for k, band in spec.metrics.items())
        + ")."
    )


def markdown_table(
    rows: Sequence[Mapping[str, Any]], title: str = "", spec: TableSpec = STANDARD
) -> str:
    """The table as GitHub Markdown."""
    header, cells = table_cells(rows, spec)
    lines = [f"## {title}", ""] if title else []
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" if i < 2 else "---:" for i in range(len(header))) + "|")
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in cells]
    lines += [
        "",
        f"{pareto_note(spec)} Paper: {spec.published_source}, where it has the entry.",
    ]
    if spec.notes is not None:
        lines += ["", *(f"* {note}" for note in spec.notes(rows))]
    return "\n".join(lines) + "\n"


def csv_text(rows: Sequence[Mapping[str, Any]], spec: TableSpec = STANDARD) -> str:
    """The table as CSV with raw numbers (mean, min, max per metric)."""
    fields = ["scenario", "method", "seeds"]
    for key in (*(k for k, _, _ in spec.columns), *spec.extra):
        fields += [key, f"{key}_min", f"{key}_max"]
    paper = [f"paper_{f}" for f in spec.published_fields]
    fields += ["pareto", *paper, "paper_note"]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        out = {f: row.get(f) for f in fields if f in row}
        out["pareto"] = int(bool(row.get("pareto")))
        pub = row.get("published")
        if isinstance(pub, list):
            out.update(zip(paper, pub, strict=True))
        elif isinstance(pub, str):
            out["paper_note"] = pub
        writer.writerow(out)
    return buf.getvalue()


def write_tables(
    rows: Sequence[Mapping[str, Any]], out: str | Path, title: str = "", spec: TableSpec = STANDARD
) -> list[Path]:
    """Write ``table.md`` and ``table.csv`` under ``out``; return their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md, cs = out / "table.md", out / "table.csv"
    md.write_text(markdown_table(rows, title, spec))
    cs.write_text(csv_text(rows, spec))
    return [md, cs]
