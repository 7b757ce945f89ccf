"""The bench report: one self-contained HTML file, ``<out>/report.html``.

Inline CSS, PNGs embedded as base64, no script and no other file needed to view it: it can be
mailed or attached to an issue as it is. It holds the suite's facts (description, run counts,
wall time), the table (as ``table.md``: mean and min–max over seeds, Pareto marks, the paper's
numbers), the metric-versus-scale charts and, per scenario, each method's time series.

from ccgym.bench import load_suite, run_suite
from ccgym.bench.report import write_report
records, stats = run_suite(load_suite("quick"), "results/bench/quick")
write_report(load_suite("quick"), records, "results/bench/quick", stats=stats)
"""

from __future__ import annotations

import datetime as _dt
import html
import os
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ccgym._errors import ScenarioError
from ccgym.bench.pareto import HIGHER
from ccgym.bench.plots import (
    figure_png,
    method_colors,
    png_data_uri,
    run_figure,
    scale_figure,
    scale_groups,
    slowdown_size_figure,
)
from ccgym.bench.runner import RunStats, _load_cached, code_version, progress_bar, suite_jobs
from ccgym.bench.series import load_series, series_path
from ccgym.bench.tables import (
    PARETO_MARK,
    STANDARD,
    TableSpec,
    build_rows,
    table_cells,
    table_spec,
    write_tables,
)
from ccgym.scenario import load_scenario

REPORT_FILE = "report.html"

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       margin: 2em auto; max-width: 1500px; padding: 0 1.5em; background: #fff; }
h1 { font-size: 1.7em; margin-bottom: 0.2em; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
h3 { font-size: 1.1em; margin: 0.4em 0; display: inline; }
.desc { color: #555; margin-top: 0; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1.2em; }
dl.facts dt { color: #666; }
dl.facts dd { margin: 0; }
table.bench { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: 13px; }
table.bench th, table.bench td { padding: 0.3em 0.7em; text-align: right; white-space: nowrap; }
table.bench th { background: #f2f2f2; border-bottom: 2px solid #bbb; }
table.bench td.l, table.bench th.l { text-align: left; }
table.bench tr.first td { border-top: 1px solid #bbb; }
table.bench tr.pareto td { font-weight: 600; }
table.bench td.paper { color: #666; }
.note { color: #666; font-size: 12.5px; max-width: 70em; }
figure { margin: 1em 0; }
figcaption { color: #555; font-size: 12.5px; }
details { margin: 0.6em 0; border: 1px solid #ddd; border-radius: 4px; padding: 0.4em 0.8em; }
details > summary { cursor: pointer; }
.wide { overflow-x: auto; }
.runs { display: flex; flex-wrap: wrap; gap: 0.5em 1.5em; }
.runs figure { flex: 1 1 560px; max-width: 720px; }
img { max-width: 100%; height: auto; }
.missing { color: #a60; }
"""


def cached_records(
    suite: Mapping[str, Any], out: str | os.PathLike[str]
) -> tuple[list[dict[str, Any]], int]:
    """The cached records of ``suite`` under ``out/runs``, in suite order, and how many are missing.

    Like :func:`ccgym.bench.runner.run_suite`, but runs nothing: for rebuilding the report.
    """
    run_dir = Path(out) / "runs"
    records: list[dict[str, Any]] = []
    missing = 0
    for job in suite_jobs(dict(suite)):
        rec = _load_cached(run_dir / f"{job.key}.json", job.key)
        if rec is None:
            missing += 1
            continue
        # label and published as the suite says now, as run_suite does
        records.append({**rec, "label": job.label, "published": job.published, "seed": job.seed})
    return records, missing


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (bytes 16-24), for the <img> attributes."""
    width, height = struct.unpack(">II", png[16:24])
    return int(width), int(height)


def _img(png: bytes, alt: str) -> str:
    w, h = _png_size(png)
    alt = html.escape(alt)
    return f'<img src="{png_data_uri(png)}" alt="{alt}" width="{w}" height="{h}">'


def _fmt(x: Any, spec: str) -> str:
    return "–" if not isinstance(x, (int, float)) or x != x else format(x, spec)


def _table_html(rows: Sequence[Mapping[str, Any]], spec: TableSpec) -> str:
    # Without published numbers for any row, no paper column: the note under the table says why.
    header, cells = table_cells(rows, spec, paper=None)
    has_paper = header[-1] == spec.published_title
    out = ['<div class="wide"><table class="bench">', "<thead><tr>"]
    out += [
        f'<th class="{"l" if i < 2 else ""}">{html.escape(h)}</th>' for i, h in enumerate(header)
    ]
    out.append("</tr></thead><tbody>")
    for i, (row, line) in enumerate(zip(rows, cells, strict=True)):
        classes = []
        if i == 0 or row["scenario"] != rows[i - 1]["scenario"]:
            classes.append("first")
        if row.get("pareto"):
            classes.append("pareto")
        attrs = (
            f' class="{" ".join(classes)}" data-scenario="{html.escape(str(row["scenario"]))}"'
            f' data-method="{html.escape(str(row["method"]))}"'
        )
        tds = []
        for j, c in enumerate(line):
            cls = "l" if j < 2 else ("paper" if has_paper and j == len(line) - 1 else "")
            tds.append(f'<td class="{cls}">{html.escape(c)}</td>')
        out.append(f"<tr{attrs}>{''.join(tds)}</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _facts(
    suite: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    stats: RunStats | None,
    missing: int,
) -> str:
    unique = {r["key"]: r for r in records}
    n_sc, n_m, n_s = len(suite["scenario"]), len(suite["methods"]), len(suite["seeds"])
    sim_s = sum(float(r.get("wall_s") or 0.0) for r in unique.values())
    facts = [
        ("suite file", html.escape(str(suite.get("path", "")))),
        (
            "runs",
            f"{len(unique)} ({n_sc} scenario{'s' * (n_sc != 1)} × {n_m} method"
            f"{'s' * (n_m != 1)} × {n_s} seed{'s' * (n_s != 1)})",
        ),
    ]
    if stats is not None:
        facts.append(
            (
                "this invocation",
                f"{stats.ran} runs done, {stats.cached} from the cache, "
                f"wall time {stats.wall_s:.1f} s",
            )
        )
    if missing:
        facts.append(
            (
                "missing",
                f'<span class="missing">{missing} runs not in the cache '
                "(run <code>ccgym bench</code> without <code>--report-only</code>)</span>",
            )
        )
    facts += [
        ("simulation time", f"{sim_s:.1f} s, the runs' wall times summed (all workers)"),
        ("code", html.escape(code_version())),
        ("generated", _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")),
    ]
    return '<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"


def _run_caption(rec: Mapping[str, Any], spec: TableSpec = STANDARD) -> str:
    """One run's seed, the metrics its suite's table shows, and its cache record."""
    m = rec.get("metrics") or {}
    key = html.escape(str(rec["key"]))
    own = [(k, title, fmt) for k, title, fmt in spec.columns if k in m]
    if spec.name == STANDARD.name or not own:
        metrics = (
            f"SU {_fmt(m.get('SU'), '.1f')} %, FR {_fmt(m.get('FR'), '.1f')} %, "
            f"QL {_fmt(m.get('QL'), '.2f')} µs, drops {_fmt(m.get('drops_mb'), '.2f')} MB"
        )
    else:  # the suite's own columns (a weighted run's shares, not its fairness)
        metrics = ", ".join(f"{html.escape(title)} {_fmt(m.get(k), fmt)}" for k, title, fmt in own)
    return f'seed {rec["seed"]}: {metrics}; <a href="runs/{key}.json">runs/{key}.json</a>'


def _directions(spec: TableSpec) -> str:
    """``"SU, FR higher and QL, drops_mb lower"``: which way each Pareto metric is better."""
    higher = [k for k, band in spec.metrics.items() if band[0] == HIGHER]
    lower = [k for k, band in spec.metrics.items() if band[0] != HIGHER]
    parts = [f"{', '.join(higher)} higher" if higher else "", f"{', '.join(lower)} lower"]
    return " and ".join(p for p in parts if p)


def _slowdown_size_html(
    suite: Mapping[str, Any],
    shown: Mapping[str, Mapping[str, Mapping[str, Any]]],
    colors: Mapping[str, str],
) -> list[str]:
    """Per scenario, the slowdown-against-size figure of its methods (``slowdown`` tables: the
    runs' ``size_profile``, :mod:`ccgym.bench.slowdown`)."""
    out = []
    for label, by_method in shown.items():
        profiles = {m: r["size_profile"] for m, r in by_method.items() if r.get("size_profile")}
        if not profiles:
            continue
        first = next(iter(by_method.values()))
        edges = ((first.get("summary") or {}).get("by_size") or {}).get("edges_bytes") or []
        title = f"{suite['name']}: {label}, slowdown against flow size"
        png = figure_png(slowdown_size_figure(profiles, colors=colors, edges=edges, title=title))
        out.append(
            f"<figure>{_img(png, title)}<figcaption>Flows that started in the metrics window "
            "and completed, in log bins of size (4 per decade), first seed; dotted lines: the "
            "table's size buckets.</figcaption></figure>"
        )
    return out


def write_report(
    suite: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    out: str | os.PathLike[str],
    *,
    stats: RunStats | None = None,
    missing: int = 0,
    progress: bool = False,
) -> Path:
    """Write ``<out>/report.html`` for the ``records`` of ``suite`` and return its path.

    Args:
        suite: the suite dict (:func:`ccgym.bench.runner.load_suite`).
        records: its run records (:func:`~ccgym.bench.runner.run_suite` or
            :func:`cached_records`); runs without a ``<key>.series.npz`` get no figure.
        out: the suite's output folder (its ``runs/`` holds the cache and the series).
        stats: what this invocation ran, shown when given.
        missing: runs of the suite absent from ``records``, shown when > 0.
        progress: show a progress bar on stderr while drawing.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    run_dir = out / "runs"
    spec = table_spec(suite.get("table"))
    rows = build_rows(records, spec=spec)
    colors = method_colors(list(suite["methods"]))

    # one figure per (scenario, method): the first seed's, so that size grows with the suite,
    # not with its seeds (the table and the scale charts cover every seed)
    shown: dict[str, dict[str, Mapping[str, Any]]] = {}
    for rec in records:
        shown.setdefault(rec["label"], {}).setdefault(rec["method"], rec)
    scenarios: dict[str, tuple[Mapping[str, Any], Mapping[str, Any] | None]] = {}
    for label, by_method in shown.items():
        rec = next(iter(by_method.values()))
        try:
            data, _ = load_scenario(rec["scenario"], rec["overrides"])
        except (ScenarioError, OSError):
            continue  # the scenario file moved: no flow count, no scale chart for it
        scenarios[label] = (data, rec.get("summary"))
    groups = scale_groups(scenarios)

    total = len(groups) + sum(len(v) for v in shown.values())
    step = progress_bar(f"report {suite['name']}", total) if progress else None
    try:
        scale_html = []
        for g in groups:
            title = f"{suite['name']}: metrics against scale, {g.family}"
            if spec.name == STANDARD.name:
                fig = scale_figure(rows, g, colors=colors, title=title)
                paper = "the ADPG paper's numbers where it has them (measured over 200 ms; for "
                paper += "orientation)"
            else:  # the suite's own metrics, and its paper's numbers on the matching panels
                fig = scale_figure(
                    rows,
                    g,
                    colors=colors,
                    title=title,
                    metrics=[(k, t) for k, t, _ in spec.columns[:4]],
                    published_fields=spec.published_fields,
                    paper_label="paper",
                )
                paper = f"{html.escape(spec.published_source)}, where it has them"
            png = figure_png(fig)
            scale_html.append(
                f"<figure>{_img(png, title)}<figcaption>Mean over seeds"
                f"{'; error bars: min–max over seeds' if len(suite['seeds']) > 1 else ''}; "
                f"crosses: {paper}. A panel whose largest value dwarfs the rest (one method's "
                "collapse) has a log scale, linear near zero.</figcaption></figure>"
            )
            if step:
                step(g.family)
        size_html = _slowdown_size_html(suite, shown, colors) if spec.name == "slowdown" else []
        sections = []
        for i, (label, by_method) in enumerate(shown.items()):
            figs = []
            for method, rec in by_method.items():
                series = load_series(series_path(run_dir, rec["key"]))
                name = f"{label} · {method} · seed {rec['seed']}"
                if series is None:
                    body = (
                        '<p class="missing">no time series stored for this run (cached before '
                        f"ccgym stored them: delete runs/{html.escape(rec['key'])}.json to rerun "
                        "it)</p>"
                    )
                else:
                    body = _img(figure_png(run_figure(series, name)), name)
                caption = f"<b>{html.escape(method)}</b>, {_run_caption(rec, spec)}"
                figs.append(f"<figure>{body}<figcaption>{caption}</figcaption></figure>")
                if step:
                    step(name)
            sid = "scenario-" + "".join(c if c.isalnum() else "-" for c in label)
            sections.append(
                f'<details id="{html.escape(sid)}"{" open" if i == 0 else ""}><summary><h3>'
                f"{html.escape(label)}</h3> ({len(by_method)} methods)</summary>"
                f'<div class="runs">{"".join(figs)}</div></details>'
            )
    finally:
        if step:
            step(None)

    title = f"ccgym bench {suite['name']}"
    links = [f'<a href="{f}">{f}</a>' for f in ("table.md", "table.csv") if (out / f).is_file()]
    links.append('<a href="runs/">runs/</a> (the cache: a JSON record per run)')
    tol = ", ".join(
        f"{k} ±{b[1]:g}" + (f" or {b[2]:.0%}" if len(b) > 2 else "")
        for k, b in spec.metrics.items()
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="desc">{html.escape(str(suite.get("description", "")))}</p>',
        _facts(suite, records, stats, missing),
        f"<p>Files: {' · '.join(links)}</p>",
        "<h2>Results</h2>",
        _table_html(rows, spec),
        f'<p class="note">Mean over seeds, (min–max) when more than one. '
        f"{html.escape(PARETO_MARK)} and bold = not dominated by another method on the same "
        f"scenario ({html.escape(_directions(spec))} are better; tolerance bands "
        f"{html.escape(tol)}). Paper: {html.escape(spec.published_source)}, where "
        "it has the entry.</p>",
    ]
    if spec.notes is not None:  # e.g. the ACC validity checks
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in spec.notes(rows))
        parts.append(f'<ul class="note">{notes}</ul>')
    if spec.name == "mvfst-links":  # Pantheon's throughput-delay scatter per link
        from ccgym.bench.mvfst_links import scatter_section

        parts.append(scatter_section(rows, records, colors))
    if spec.name == "mvfst-history":  # the training reward curves
        from ccgym.bench.mvfst_links import curves_section

        parts.append(curves_section(records, colors))
    if spec.name.startswith("hopass"):  # the slow layer's shares and utility over time
        from ccgym.bench.hopass_slow import report_section

        parts.append(report_section(records))
    if spec.name == "mvfst-blocking":  # the cumulative bytes of each timing mode
        from ccgym.bench.mvfst import report_section as mvfst_section

        parts.append(mvfst_section(records, colors, suite["name"]))
    if spec.name in ("qtcp", "friendliness"):  # the QTCP-AIMD paper's figures
        from ccgym.bench.qtcp import report_section as qtcp_section

        parts.append(qtcp_section(records))
    if spec.name == "acc":  # the ECN settings over time per switch tier, next to the queue
        from ccgym.bench.acc_suite import report_section as acc_section

        parts.append(acc_section(records, run_dir))
    if scale_html:
        parts += ["<h2>Metrics against scale</h2>", *scale_html]
    if size_html:
        parts += ["<h2>Slowdown against flow size</h2>", *size_html]
    parts += [
        "<h2>Time series per run</h2>",
        '<p class="note">Per scenario and method, the first seed: the bottleneck\'s queue '
        "(right axis: the time it takes to drain at line rate), the flows' delivery rates "
        "when the suite records them (one line per flow up to 16 flows, else percentiles "
        "across the active flows and a line for each flow that carried a large share of the "
        "bytes), the bottleneck's utilisation; the metrics window is shaded.</p>",
        *sections,
        "</body></html>",
    ]
    path = out / REPORT_FILE
    tmp = path.with_name(f"{REPORT_FILE}.tmp{os.getpid()}")
    tmp.write_text("\n".join(p for p in parts if p) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def rebuild_report(
    suite: Mapping[str, Any], out: str | os.PathLike[str], *, progress: bool = False
) -> tuple[Path, int, int]:
    """Rewrite the tables and the report of ``suite`` from the cache under ``out``; run nothing.

    Returns the report's path, the runs found in the cache and the runs missing.
    """
    records, missing = cached_records(suite, out)
    title = f"ccgym bench {suite['name']}: {suite.get('description', '')}".rstrip(": ")
    spec = table_spec(suite.get("table"))
    write_tables(build_rows(records, spec=spec), out, title, spec)
    path = write_report(suite, records, out, missing=missing, progress=progress)
    return path, len({r["key"] for r in records}), missing
