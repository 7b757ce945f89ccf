"""Bench tables: one row per (scenario, method), mean and min-max over seeds, Pareto marks,
published numbers beside ccgym's; rich (terminal), Markdown and CSV."""

from __future__ import annotations

import csv
import io
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ccgym.bench.pareto import METRICS, pareto_mask

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PUBLISHED_FILE = Path(__file__).parent / "published.toml"

COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("SU", "SU %", ".1f"),
    ("FR", "FR %", ".1f"),
    ("jain", "Jain", ".3f"),
    ("QL", "QL us", ".2f"),
    ("drops_mb", "drops MB", ".2f"),
)
"""(metric key, column title, format) of the table's metric columns."""

PARETO_MARK = "*"


def load_published(path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The paper's numbers: ``{"m2o-128": {"dcqcn": [SU, FR, QL] or "packet loss"}, ...}``."""
    return tomllib.loads(Path(path or PUBLISHED_FILE).read_text())


def paper_method(method: str) -> str:
    """The published method a ccgym method compares with: ``policy:adpg-*`` -> ``adpg``."""
    name = method.split(":", 1)[1] if method.startswith("policy:") else method
    name = Path(name).stem.lower()
    return "adpg" if name.startswith("adpg") else name


def _finite(x: Any) -> float | None:
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return None if math.isnan(x) else float(x)


def build_rows(
    records: Iterable[Mapping[str, Any]],
    *,
    published: Mapping[str, Mapping[str, Any]] | None = None,
    metrics: Mapping[str, tuple[str, float]] | None = None,
) -> list[dict[str, Any]]:
    """Aggregate run records into one row per (scenario label, method), in suite order.

    A row has ``scenario``, ``method``, ``seeds``, for every metric ``M`` the mean ``M`` and
    ``M_min`` / ``M_max`` over seeds (None when no seed has it), ``pareto`` (not dominated by
    another method on the same scenario, over the means) and ``published`` (the paper's
    [SU, FR, QL], ``"packet loss"``, or None).
    """
    published = load_published() if published is None else published
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for rec in records:
        groups.setdefault((rec["label"], rec["method"]), []).append(rec)
    rows = []
    for (label, method), recs in groups.items():
        row: dict[str, Any] = {"scenario": label, "method": method, "seeds": len(recs)}
        for key, _, _ in COLUMNS:
            vals = [v for v in (_finite(r["metrics"].get(key)) for r in recs) if v is not None]
            row[key] = sum(vals) / len(vals) if vals else None
            row[f"{key}_min"] = min(vals) if vals else None
            row[f"{key}_max"] = max(vals) if vals else None
        table = published.get(recs[0].get("published") or "", {})
        row["published"] = table.get(paper_method(method))
        rows.append(row)
    by_scenario: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_scenario.setdefault(row["scenario"], []).append(i)
    for idx in by_scenario.values():
        mask = pareto_mask([rows[i] for i in idx], metrics or METRICS)
        for i, keep in zip(idx, mask, strict=True):
            rows[i]["pareto"] = keep
    return rows


def _cell(row: Mapping[str, Any], key: str, spec: str) -> str:
    mean = row.get(key)
    if mean is None:
        return "–"
    text = format(mean, spec)
    lo, hi = row.get(f"{key}_min"), row.get(f"{key}_max")
    if row.get("seeds", 1) > 1 and lo is not None and hi is not None:
        text += f" ({format(lo, spec)}–{format(hi, spec)})"
    return text


def published_text(pub: Any) -> str:
    """``"92 / 95 / 8"``, ``"packet loss"`` or ``""``."""
    if pub is None:
        return ""
    if isinstance(pub, str):
        return pub
    return " / ".join(f"{x:g}" for x in pub)


def table_cells(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Header and string cells of the table (mean, and (min–max) over seeds when > 1)."""
    header = ["scenario", "method", "seeds", *(t for _, t, _ in COLUMNS), "Pareto"]
    header.append("paper SU / FR / QL")
    cells = []
    for row in rows:
        cells.append(
            [
                row["scenario"],
                row["method"],
                str(row["seeds"]),
                *(_cell(row, k, spec) for k, _, spec in COLUMNS),
                PARETO_MARK if row.get("pareto") else "",
                published_text(row.get("published")),
            ]
        )
    return header, cells


def rich_table(rows: Sequence[Mapping[str, Any]], title: str = "") -> Any:
    """The table as a :class:`rich.table.Table`; a rule between scenarios."""
    from rich.table import Table

    header, cells = table_cells(rows)
    table = Table(title=title or None, title_justify="left")
    for i, col in enumerate(header):
        table.add_column(col, justify="left" if i < 2 else "right", no_wrap=True)
    for i, (row, line) in enumerate(zip(rows, cells, strict=True)):
        if i and row["scenario"] != rows[i - 1]["scenario"]:
            table.add_section()
        table.add_row(*line, style="bold" if row.get("pareto") else None)
    return table


def markdown_table(rows: Sequence[Mapping[str, Any]], title: str = "") -> str:
    """The table as GitHub Markdown."""
    header, cells = table_cells(rows)
    lines = [f"## {title}", ""] if title else []
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" if i < 2 else "---:" for i in range(len(header))) + "|")
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in cells]
    lines += [
        "",
        f"{PARETO_MARK} = not dominated by another method on the same scenario "
        "(SU, FR higher and QL, drops lower are better; tolerance bands "
        + ", ".join(f"{k} ±{tol:g}" for k, (_, tol) in METRICS.items())
        + "). Paper: the ADPG paper's Table 2/3 (SU % / FR % / QL us), where it has the entry.",
    ]
    return "\n".join(lines) + "\n"


def csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table as CSV with raw numbers (mean, min, max per metric)."""
    fields = ["scenario", "method", "seeds"]
    for key, _, _ in COLUMNS:
        fields += [key, f"{key}_min", f"{key}_max"]
    fields += ["pareto", "paper_SU", "paper_FR", "paper_QL", "paper_note"]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        out = {f: row.get(f) for f in fields if f in row}
        out["pareto"] = int(bool(row.get("pareto")))
        pub = row.get("published")
        if isinstance(pub, list):
            out.update(paper_SU=pub[0], paper_FR=pub[1], paper_QL=pub[2])
        elif isinstance(pub, str):
            out["paper_note"] = pub
        writer.writerow(out)
    return buf.getvalue()


def write_tables(rows: Sequence[Mapping[str, Any]], out: str | Path, title: str = "") -> list[Path]:
    """Write ``table.md`` and ``table.csv`` under ``out``; return their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md, cs = out / "table.md", out / "table.csv"
    md.write_text(markdown_table(rows, title))
    cs.write_text(csv_text(rows))
    return [md, cs]
