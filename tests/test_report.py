"""ccgym bench report: per-run series files, plots, report.html, and its rendering in Chromium."""

from __future__ import annotations

import base64
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ccgym.bench.plots import (
    figure_png,
    outlier_scale,
    run_figure,
    scale_figure,
    scale_groups,
    scenario_family,
    scenario_flow_count,
)
from ccgym.bench.report import REPORT_FILE, cached_records, write_report
from ccgym.bench.runner import load_suite, run_suite
from ccgym.bench.series import (
    MAX_SAMPLED_FLOWS,
    RATE_PERCENTILES,
    compact_series,
    force_flow_series,
    heavy_flows,
    load_series,
    save_series,
    series_path,
)
from ccgym.bench.tables import build_rows, write_tables
from ccgym.scenario import load_scenario

TINY = """
name = "report-tiny"
description = "two many-to-one scales, 6 ms runs"
seeds = [1]
methods = ["dcqcn", "policy:adpg-default"]
overrides = ["duration=6ms", "metrics.window=['2ms', '6ms']", "workload[0].stop=6ms"]

[[scenario]]
label = "m2o 2"
scenario = "adpg-m2o-2"

[[scenario]]
label = "m2o 16"
scenario = "adpg-m2o-16"
published = "m2o-128"
"""
PAIRS = {(s, m) for s in ("m2o 2", "m2o 16") for m in ("dcqcn", "policy:adpg-default")}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The tiny suite, run once (4 runs of 6 ms), with its tables and report."""
    root = tmp_path_factory.mktemp("report")
    (root / "tiny.toml").write_text(TINY)
    suite = load_suite(root / "tiny.toml")
    out = root / "out"
    records, stats = run_suite(suite, out, jobs=1)
    rows = build_rows(records)
    write_tables(rows, out, "tiny")
    report = write_report(suite, records, out, stats=stats)
    return SimpleNamespace(suite=suite, out=out, records=records, rows=rows, report=report)


# --------------------------------------------------------------------------- series files


def test_every_run_stores_its_series(bench: SimpleNamespace) -> None:
    assert len(bench.records) == 4
    for rec in bench.records:
        assert "series" not in rec  # kept out of the JSON record
        path = series_path(bench.out / "runs", rec["key"])
        assert path.is_file() and path.stat().st_size < 50_000
        s = load_series(path)
        assert s is not None
        n = 60  # 6 ms sampled every 100 us
        assert s["time_s"].shape == (n,) and s["queue_bytes"].shape == (n,)
        assert str(s["bottleneck_port"]) == "sw0->h0" and float(s["bottleneck_rate_gbps"]) == 100
        assert np.nanmin(s["queue_bytes"]) >= 0
        assert 0 <= np.nanmax(s["tx_gbps"]) <= 110
        flows = 2 if rec["label"] == "m2o 2" else 16
        assert int(s["flow_count"]) == flows
        assert s["flow_sample_gbps"].shape == (n, flows)
        assert s["flow_rate_pct"].shape == (n, len(RATE_PERCENTILES))
        assert s["flow_active"].max() == flows
        np.testing.assert_array_equal(s["window_s"], [0.002, 0.006])


def test_cached_runs_are_reused_and_series_optional(bench: SimpleNamespace, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(bench.out, out)
    victim = bench.records[0]["key"]
    series_path(out / "runs", victim).unlink()
    records, stats = run_suite(bench.suite, out, jobs=1)
    assert (stats.ran, stats.cached) == (0, 4)  # a cache entry without its series is not redone
    assert not series_path(out / "runs", victim).exists()
    html_text = write_report(bench.suite, records, out).read_text()
    assert "no time series stored for this run" in html_text
    assert html_text.count('<img src="data:image/png;base64,') == 4  # 1 scale chart + 3 runs


def _fake_result(n_flows: int, times: list[float], with_flows: bool = True) -> Any:
    """A Result-like object with hand-made tables: flow j active from sample j % len(times)."""
    ports = pd.DataFrame(
        {
            "time_s": np.repeat(times, 2),
            "port_id": np.tile([1, 3], len(times)).astype(np.uint64),
            "queue_bytes": np.arange(2 * len(times), dtype=float) * 1000,
            "tx_gbps": np.full(2 * len(times), 50.0),
        }
    )
    info = pd.DataFrame({"port_id": np.array([1, 3], dtype=np.uint64), "rate_gbps": [100.0, 25.0]})
    rows = [
        (t, j, float(j + k))
        for k, t in enumerate(times)
        for j in range(n_flows)
        if j % len(times) <= k
    ]
    series = {"ports": ports, "port_info": info}
    if with_flows:
        series["flows"] = pd.DataFrame(rows, columns=["time_s", "flow_id", "rate_gbps"])
    summary = {
        "bottleneck": {"id": 3, "port": "sw0->h1"},
        "flows": {"count": n_flows},
        "window_s": [0.0, times[-1]],
    }
    return SimpleNamespace(summary=summary, series=series)


def test_compact_series_many_flows() -> None:
    times = [1e-4, 2e-4, 3e-4, 4e-4]
    res = _fake_result(40, times)
    s = compact_series(res)
    np.testing.assert_array_equal(s["time_s"], times)
    # the bottleneck is port 3 (every second port row), at 25 Gb/s
    np.testing.assert_array_equal(s["queue_bytes"], [1000, 3000, 5000, 7000])
    assert float(s["bottleneck_rate_gbps"]) == 25.0 and str(s["bottleneck_port"]) == "sw0->h1"
    flows = res.series["flows"]
    for k, t in enumerate(times):
        rates = flows[flows.time_s == t].rate_gbps.to_numpy()
        assert s["flow_active"][k] == len(rates)
        np.testing.assert_allclose(s["flow_rate_pct"][k], np.percentile(rates, RATE_PERCENTILES))
        np.testing.assert_allclose(s["flow_rate_mean"][k], rates.mean(), rtol=1e-6)
    ids = s["flow_sample_ids"]
    assert len(ids) == MAX_SAMPLED_FLOWS and ids[0] == 0 and ids[-1] == 39
    # flow 39 (39 % 4 == 3) is active only at the last sample: NaN before
    assert np.isnan(s["flow_sample_gbps"][:3, -1]).all() and s["flow_sample_gbps"][3, -1] == 42


def test_heavy_flows_are_sampled_and_drawn() -> None:
    """Four large flows weighted 1:1:2:4 among 2,000 small ones: all four are kept whatever
    their ids, found heavy with their shares, and drawn on their own lines; among 40 flows of
    similar size none is heavy."""
    times = [1e-4 * (k + 1) for k in range(6)]
    large = {777: 1.0, 1234: 1.0, 1500: 2.0, 1999: 4.0}  # Gb/s
    rows = [
        (t, j, large.get(j, 0.001)) for t in times for j in range(2_000)
    ]  # every flow active at every sample
    res = _fake_result(2_000, times)
    res.series["flows"] = pd.DataFrame(rows, columns=["time_s", "flow_id", "rate_gbps"])
    s = compact_series(res)
    ids = list(s["flow_sample_ids"])
    assert len(ids) <= MAX_SAMPLED_FLOWS and set(large) <= set(ids) and ids[0] == 0
    total = 8.0 + 1996 * 0.001
    found = {fid: share for _, fid, share in heavy_flows(s)}
    assert list(found) == [1999, 1500, 777, 1234]  # largest first (ties: lower column first)
    for fid, share in found.items():
        assert share == pytest.approx(large[fid] / total, rel=1e-4)
    ax = run_figure(s).axes[1]
    labels = [line.get_label() for line in ax.get_lines()]
    assert "flow 1999 (40 %)" in labels and "flow 777 (10 %)" in labels
    assert "flow 0" not in labels
    assert heavy_flows(compact_series(_fake_result(40, times))) == []


def test_run_caption_shows_the_suites_own_metrics() -> None:
    """A weighted run's caption gives its shares, not the standard SU / FR / QL."""
    from ccgym.bench.report import _run_caption
    from ccgym.bench.tables import table_spec

    rec = {
        "key": "k1",
        "seed": 2,
        "metrics": {"SU": 96.1, "FR": 7.7, "QL": 35.1, "drops_mb": 24.0, "s1": 0.973, "s4": 4.055},
    }
    standard = _run_caption(rec)
    assert standard.startswith("seed 2: SU 96.1 %, FR 7.7 %, QL 35.10 µs, drops 24.00 MB; ")
    weighted = _run_caption(rec, table_spec("weighted-shares"))
    assert weighted.startswith("seed 2: share 1 0.973, share 4 4.055; ")
    assert "FR" not in weighted and 'href="runs/k1.json"' in weighted
    # A suite table none of whose columns the run has: the standard metrics, not nothing.
    bare = {**rec, "metrics": {"SU": 96.1}}
    assert _run_caption(bare, table_spec("weighted-shares")).startswith("seed 2: SU 96.1 %, FR –")


def test_results_table_leaves_out_an_empty_paper_column() -> None:
    """The HTML table has the paper column only when some row has published numbers."""
    from ccgym.bench.report import _table_html
    from ccgym.bench.tables import STANDARD

    recs = [{"label": "s", "method": m, "seed": 1, "metrics": {"SU": 90.0}} for m in "ab"]
    rows = build_rows(recs, published={})
    assert "paper SU / FR / QL" not in _table_html(rows, STANDARD)
    rows[0]["published"] = [92.0, 95.0, 8.0]
    page = _table_html(rows, STANDARD)
    assert "paper SU / FR / QL" in page and '<td class="paper">92 / 95 / 8</td>' in page


def test_run_figure_of_a_slow_link_uses_mb_and_ms() -> None:
    """A WAN trace's 0.57 Mb/s bottleneck: rates in Mb/s and the drain time in ms, not
    0.000569 Gb/s and 280,000 µs."""
    times = [1e-3 * (k + 1) for k in range(4)]
    s = compact_series(_fake_result(3, times))
    s = {**s, "bottleneck_rate_gbps": np.asarray(0.0005695),
         "flow_sample_gbps": s["flow_sample_gbps"] * 1e-4,
         "queue_bytes": np.full(len(times), 20_000.0)}  # fmt: skip
    fig = run_figure(s)
    ax_q, ax_r, ax_u = fig.axes[:3]
    assert ax_r.get_ylabel() == "rate (Mb/s)"
    assert ax_u.get_title(loc="left").endswith("utilisation of 0.5695 Mb/s")
    assert [a.get_ylabel() for a in ax_q.child_axes] == ["drain time (ms)"]
    fast = run_figure(compact_series(_fake_result(3, times))).axes
    assert fast[1].get_ylabel() == "rate (Gb/s)"
    assert [a.get_ylabel() for a in fast[0].child_axes] == ["drain time (µs)"]


def test_compact_series_without_flow_table() -> None:
    s = compact_series(_fake_result(4000, [1e-4, 2e-4], with_flows=False))
    assert s["flow_sample_gbps"].shape == (0, 0) and s["flow_rate_pct"].shape[0] == 0
    assert int(s["flow_count"]) == 4000
    fig = run_figure(s, "no flows")
    main = [ax for ax in fig.axes if ax.get_ylabel() in ("queue (kB)", "rate (Gb/s)",
                                                          "utilisation (%)")]  # fmt: skip
    assert [ax.get_ylabel() for ax in main] == ["queue (kB)", "utilisation (%)"]  # no empty panel
    assert "per-flow rates not recorded" in main[0].get_title(loc="left")


def test_save_load_and_bad_files(tmp_path: Path) -> None:
    s = compact_series(_fake_result(3, [1e-4, 2e-4]))
    path = save_series(tmp_path / "k.series.npz", s)
    assert path.name == "k.series.npz" and list(tmp_path.iterdir()) == [path]
    back = load_series(path)
    assert back is not None and set(back) == set(s)
    np.testing.assert_array_equal(back["flow_sample_gbps"], s["flow_sample_gbps"])
    assert load_series(tmp_path / "missing.series.npz") is None
    (tmp_path / "bad.series.npz").write_bytes(b"not a zip")
    assert load_series(tmp_path / "bad.series.npz") is None
    save_series(tmp_path / "old.series.npz", {**s, "version": np.asarray(0)})
    assert load_series(tmp_path / "old.series.npz") is None


def test_force_flow_series() -> None:
    data: dict[str, Any] = {"metrics": {"flow_series": "auto"}}
    force_flow_series(data)
    assert data["metrics"]["flow_series"] is True
    data = {}
    force_flow_series(data)
    assert data["metrics"]["flow_series"] is True
    data = {"metrics": {"flow_series": False}}
    force_flow_series(data)
    assert data["metrics"]["flow_series"] is False


# --------------------------------------------------------------------------- plots


def _scenario(name: str, overrides: list[str] | None = None) -> dict[str, Any]:
    return load_scenario(name, overrides)[0]


def test_scenario_flow_count_and_family() -> None:
    assert scenario_flow_count(_scenario("adpg-m2o-2")) == 2
    assert scenario_flow_count(_scenario("adpg-m2o-16")) == 16
    assert scenario_flow_count(_scenario("adpg-m2o-8192")) == 8192
    assert scenario_flow_count(_scenario("adpg-a2a-4")) == 12  # 4 x 3 pairs
    assert scenario_flow_count(_scenario("adpg-long-short-2")) == 2
    assert scenario_flow_count(_scenario("adpg-long-short-128")) == 128
    over = ["topology.hosts=65", "workload[0].flows_per_host=128"]
    assert scenario_flow_count(_scenario("adpg-m2o-2", over)) == 8192
    assert scenario_flow_count(_scenario("fat-tree-websearch")) is None  # poisson: no scale
    # a topology without `hosts`: the summary's count
    incast = _scenario("incast-burst")
    assert scenario_flow_count(incast, {"flows": {"count": 77}}) == 77
    assert scenario_family(_scenario("adpg-m2o-2")) == "star: long many_to_one"
    assert scenario_family(_scenario("adpg-long-short-2")) == scenario_family(
        _scenario("adpg-long-short-128")
    )
    groups = scale_groups(
        {
            "m2o 2": (_scenario("adpg-m2o-2"), None),
            "m2o 16": (_scenario("adpg-m2o-16"), None),
            "a2a 4": (_scenario("adpg-a2a-4"), None),  # alone in its family: no chart
            "web": (_scenario("fat-tree-websearch"), None),
        }
    )
    assert [(g.family, g.flows) for g in groups] == [
        ("star: long many_to_one", {"m2o 2": 2, "m2o 16": 16})
    ]


def test_run_figure(bench: SimpleNamespace) -> None:
    rec = next(r for r in bench.records if r["label"] == "m2o 16")
    s = load_series(series_path(bench.out / "runs", rec["key"]))
    assert s is not None
    fig = run_figure(s, "m2o 16 · dcqcn")
    main = fig.axes[:3]
    assert [ax.get_ylabel() for ax in main] == ["queue (kB)", "rate (Gb/s)", "utilisation (%)"]
    assert main[2].get_xlabel() == "time (ms)"
    assert [ax.get_ylabel() for ax in main[0].child_axes] == ["drain time (µs)"]
    assert len(main[1].get_lines()) == 16  # one line per flow up to 16 flows
    png = figure_png(fig)
    assert png.startswith(PNG_MAGIC) and 10_000 < len(png) < 250_000


def test_run_figure_clips_a_peak_outside_the_window(bench: SimpleNamespace) -> None:
    """A start-up burst 50 times the window's largest queue is clipped and written on the panel;
    without it the panel keeps its full range."""
    rec = next(r for r in bench.records if r["label"] == "m2o 16")
    s = load_series(series_path(bench.out / "runs", rec["key"]))
    assert s is not None
    t_ms = np.asarray(s["time_s"]) * 1e3
    w0, w1 = (float(x) * 1e3 for x in s["window_s"])
    inside = (t_ms >= w0) & (t_ms <= w1)
    queue = np.zeros_like(np.asarray(s["queue_bytes"], dtype=float))
    queue[inside] = 2_000.0  # 2 kB throughout the window
    queue[1] = 100_000.0  # 100 kB at the second sample, before the window
    clipped = run_figure({**s, "queue_bytes": queue}).axes[0]
    assert clipped.get_ylim() == pytest.approx((0.0, 2.6))
    assert [t.get_text() for t in clipped.texts] == [
        f"clipped: 100 kB at {t_ms[1]:.1f} ms, outside the metrics window"
    ]
    queue[1] = 5_000.0  # 2.5 times the window's queue: shown whole
    whole = run_figure({**s, "queue_bytes": queue}).axes[0]
    assert whole.get_ylim()[1] >= 5.0 and not whole.texts


def test_scale_figure(bench: SimpleNamespace) -> None:
    (group,) = scale_groups(
        {"m2o 2": (_scenario("adpg-m2o-2"), None), "m2o 16": (_scenario("adpg-m2o-16"), None)}
    )
    fig = scale_figure(bench.rows, group, title="tiny")
    axes = fig.axes[:4]
    assert [ax.get_ylabel() for ax in axes] == [
        "switch utilisation SU (%)",
        "fairness FR (%)",
        "queue latency QL (µs)",
        "drops (MB)",
    ]
    for ax in axes:
        assert ax.get_xscale() == "log" and list(ax.get_xticks()) == [2, 16]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:2] == ["dcqcn", "policy:adpg-default"] and "paper" in labels[2]
    assert figure_png(fig).startswith(PNG_MAGIC)


def test_scale_figure_of_a_suite_with_its_own_table() -> None:
    """Long-short's scale chart shows its own metrics (RT, DR, LBW, FCT), and the paper's
    [RT, DR, LBW] land on those panels, not on SU / FR / QL as they once did."""
    from ccgym.bench.tables import table_spec

    spec = table_spec("long-short")
    (group,) = scale_groups(
        {"ls 2": (_scenario("adpg-long-short-2"), None),
         "ls 128": (_scenario("adpg-long-short-128"), None)}
    )  # fmt: skip
    rows = [
        {"scenario": sc, "method": "hpcc", "RT": rt, "DR": 0.0, "LBW": lbw, "FCT": fct,
         "published": [3e-05, 0.0, 90.0] if sc == "ls 2" else None}
        for sc, rt, lbw, fct in (("ls 2", 3.4e-05, 91.4, 86.0), ("ls 128", 3.6e-05, 85.5, 11664.0))
    ]  # fmt: skip
    fig = scale_figure(
        rows, group, metrics=[(k, t) for k, t, _ in spec.columns[:4]],
        published_fields=spec.published_fields, paper_label="paper",
    )  # fmt: skip
    axes = fig.axes[:4]
    assert [ax.get_ylabel() for ax in axes] == ["RT s", "DR Gb/s", "LBW %", "FCT us"]
    assert axes[2].get_ylim() == (0.0, 105.0)  # a percentage
    from matplotlib.collections import PathCollection

    crosses = {
        ax.get_ylabel(): [c.get_offsets().tolist() for c in ax.collections
                          if isinstance(c, PathCollection) and len(c.get_offsets())]
        for ax in axes
    }  # fmt: skip
    assert crosses["FCT us"] == []  # the paper has no FCT
    assert crosses["RT s"] == [[[2.0, 3e-05]]] and crosses["LBW %"] == [[[2.0, 90.0]]]
    assert "paper" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_outlier_scale() -> None:
    """A log axis only where one value dwarfs the rest, linear below the smallest positive."""
    assert outlier_scale([0.10, 0.37, 3.2, 4.8, 11.5, 16.1, 838.8]) == pytest.approx(0.1)
    assert outlier_scale([2.9, 6.1, 10.5, 14.6, 61.2]) is None  # spread, but nothing dwarfs
    assert outlier_scale([0.0, 0.0, 0.0, 10793.35]) is None  # one positive: linear shows it
    assert outlier_scale([0.0, 0.0, 0.0004, 0.5, 120.0]) == pytest.approx(1e-3)  # the floor
    assert outlier_scale([0.0, 0.0]) is None and outlier_scale([float("nan")]) is None


def test_scale_figure_with_a_collapse(bench: SimpleNamespace) -> None:
    """One method's queue latency a hundred times the others': that panel goes to a symmetric
    log scale (and says so), the drops panel, zero but for that method, stays linear."""
    (group,) = scale_groups(
        {"m2o 2": (_scenario("adpg-m2o-2"), None), "m2o 16": (_scenario("adpg-m2o-16"), None)}
    )
    rows = []
    for method, ql, drops in (
        ("a", [1.0, 2.0], 0.0),
        ("b", [3.0, 5.0], 0.0),
        ("c", [4.0, 900.0], 50.0),
    ):
        for scenario, q in zip(("m2o 2", "m2o 16"), ql, strict=True):
            rows.append(
                {"scenario": scenario, "method": method, "SU": 99.0, "FR": 95.0, "QL": q,
                 "drops_mb": drops if scenario == "m2o 16" else 0.0}
            )  # fmt: skip
    axes = scale_figure(rows, group, title="collapse").axes[:4]
    assert [ax.get_yscale() for ax in axes] == ["linear", "linear", "symlog", "linear"]
    assert axes[2].get_ylabel() == "queue latency QL (µs), log scale"
    assert axes[2].get_ylim() == pytest.approx((0.0, 1800.0))
    assert axes[3].get_ylabel() == "drops (MB)"


# --------------------------------------------------------------------------- report


class _Dom(HTMLParser):
    """Collects the table rows (data-scenario, data-method) and the images of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, str]] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self.details = 0
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and "data-scenario" in a:
            self.rows.append((a["data-scenario"] or "", a.get("data-method") or ""))
        elif tag == "img":
            self.images.append(a.get("src") or "")
        elif tag == "a":
            self.links.append(a.get("href") or "")
        elif tag == "details":
            self.details += 1
        elif tag in ("script", "link", "iframe"):
            self.scripts += 1


def _check_dom(text: str) -> _Dom:
    dom = _Dom()
    dom.feed(text)
    assert len(dom.rows) == 4 and set(dom.rows) == PAIRS  # one row per scenario x method
    assert len(dom.images) == 5  # the scale chart and one figure per run
    for src in dom.images:
        assert src.startswith("data:image/png;base64,")  # embedded: no external file
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG_MAGIC)
    assert dom.details == 2 and dom.scripts == 0
    assert {"table.md", "table.csv"} <= set(dom.links)
    return dom


def test_report_html(bench: SimpleNamespace) -> None:
    assert bench.report == bench.out / REPORT_FILE
    text = bench.report.read_text()
    _check_dom(text)
    assert "report-tiny" in text and "two many-to-one scales" in text
    assert "4 runs done, 0 from the cache" in text
    assert "100 / 56 / 11" in text  # the published numbers beside (m2o-128's dcqcn entry)
    assert "Metrics against scale" in text and "star: long many_to_one" in text
    assert 100_000 < len(text) < 1_500_000


def test_cached_records(bench: SimpleNamespace, tmp_path: Path) -> None:
    records, missing = cached_records(bench.suite, bench.out)
    assert missing == 0 and [r["key"] for r in records] == [r["key"] for r in bench.records]
    records, missing = cached_records(bench.suite, tmp_path)
    assert (records, missing) == ([], 4)


def test_cli_report(
    bench: SimpleNamespace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ccgym.cli import main

    suite_file = str(bench.suite["path"])
    out = tmp_path / "out"
    shutil.copytree(bench.out / "runs", out / "runs")
    assert main(["bench", "--suite", suite_file, "--out", str(out), "--no-report"]) == 0
    assert "report:" not in capsys.readouterr().out and not (out / REPORT_FILE).exists()

    assert main(["bench", "--suite", suite_file, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "0 runs done, 4 from the cache" in text
    assert f"report: {(out / REPORT_FILE).resolve()}" in text
    _check_dom((out / REPORT_FILE).read_text())

    (out / REPORT_FILE).unlink()
    (out / "table.md").unlink()
    assert main(["bench", "--suite", suite_file, "--out", str(out), "--report-only"]) == 0
    text = capsys.readouterr().out
    assert "4 runs from the cache, 0 missing" in text and "report: " in text
    assert (out / "table.md").is_file()
    _check_dom((out / REPORT_FILE).read_text())


# --------------------------------------------------------------------------- Chromium

CHROMIUM = next(
    (
        shutil.which(name)
        for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
        if shutil.which(name)
    ),
    None,
)


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium binary on PATH (`make test` installs Debian's chromium when run as root)",
)
def test_report_renders_in_chromium(bench: SimpleNamespace, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    url = bench.report.resolve().as_uri()
    # --no-sandbox: Chromium refuses to run as root with its sandbox (CI runs as root)
    base = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    shot = tmp_path / "report.png"
    width, height = 1400, 2200
    run = subprocess.run(
        [*base, f"--window-size={width},{height}", f"--screenshot={shot}", url],
        capture_output=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-2000:]
    assert shot.is_file() and shot.stat().st_size > 20_000

    from matplotlib.image import imread

    img = imread(shot)[..., :3]
    assert img.shape[:2] == (height, width)
    ink = np.any(img < 0.9, axis=2)  # anything not (nearly) white
    assert ink.mean() > 0.03, "the screenshot is (nearly) blank"
    colors = np.unique((img.reshape(-1, 3) * 255).astype(np.uint8), axis=0)
    assert len(colors) > 100  # text, table and plots, not a flat error page

    dom = subprocess.run([*base, "--dump-dom", url], capture_output=True, timeout=180, check=False)
    assert dom.returncode == 0, dom.stderr.decode(errors="replace")[-2000:]
    _check_dom(dom.stdout.decode())
