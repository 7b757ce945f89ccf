"""Long-short scores (ccgym.bench.longshort), their table, and the adpg-long-short suite."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ccgym
from ccgym import ScenarioError
from ccgym.bench.longshort import Recovery, busy_periods, recoveries, scores
from ccgym.bench.pareto import LONG_SHORT_METRICS, pareto_mask
from ccgym.bench.runner import load_suite, run_key, suite_jobs
from ccgym.bench.tables import (
    LONG_SHORT,
    build_rows,
    csv_text,
    load_published,
    markdown_table,
    paper_method,
    table_spec,
)
from ccgym.result import Result
from ccgym.scenario import load_scenario

# --------------------------------------------------------------------------- busy periods


def test_busy_periods_merge_overlapping_and_touching() -> None:
    starts = [5.0, 1.0, 1.5, 2.5, 9.0]
    ends = [6.0, 2.0, 2.5, 3.0, math.nan]
    assert busy_periods(starts, ends) == [(1.0, 3.0), (5.0, 6.0), (9.0, math.inf)]


def test_busy_periods_unfinished_message_swallows_later_ones() -> None:
    assert busy_periods([1.0, 2.0, 3.0], [math.nan, 2.5, 3.5]) == [(1.0, math.inf)]


def test_busy_periods_bad_input() -> None:
    assert busy_periods([], []) == []
    with pytest.raises(ValueError, match="differ in length"):
        busy_periods([1.0], [])
    with pytest.raises(ValueError, match="ends before it starts"):
        busy_periods([2.0], [1.0])


# --------------------------------------------------------------------------- recovery time

DT = 0.5  # binary fractions: every time below is exact in floating point
TIMES = np.arange(1, 17) * DT  # samples at 0.5 ... 8.0, each the mean over the previous 0.5


def _rates(high_from: dict[float, float]) -> np.ndarray:
    """100 everywhere, except 10 on the intervals that end in [start, stop) for each entry."""
    r = np.full(TIMES.size, 100.0)
    for start, stop in high_from.items():
        r[(TIMES >= start) & (TIMES < stop)] = 10.0
    return r


def test_known_recovery_time_is_exact() -> None:
    # busy 1.0-2.5; the long flow is low on the intervals ending 1.5 ... 3.0 and back at full
    # rate on (3.0, 3.5]: it recovered 0.5 after the end of the busy period.
    rates = _rates({1.5: 3.5})
    (rec,) = recoveries(
        TIMES, rates, [(1.0, 2.5)], window=(0.0, 8.0), sample_interval=DT, line_rate=100.0
    )
    assert rec == Recovery(end_s=2.5, horizon_s=8.0, rt_s=0.5, recovered=True)


def test_recovery_at_realistic_scale() -> None:
    # 50 us samples; the round ends at 11.0417 ms, the long flow is back from 11.35 ms.
    dt = 50e-6
    t = np.arange(1, 401) * dt
    rates = np.where((t > 11.0e-3) & (t <= 11.35e-3), 5.0, 99.0)
    (rec,) = recoveries(
        t, rates, [(11e-3, 11.0417e-3)], window=(5e-3, 20e-3), sample_interval=dt, line_rate=100
    )
    assert rec.recovered and rec.rt_s == pytest.approx(11.35e-3 - 11.0417e-3, abs=1e-12)


def test_recovery_threshold_is_inclusive_and_relative_to_line_rate() -> None:
    rates = _rates({1.5: 3.5})
    rates[TIMES == 3.0] = 45.0  # (2.5, 3.0] at exactly 90 % of a 50 line rate
    (rec,) = recoveries(
        TIMES, rates, [(1.0, 2.5)], window=(0.0, 8.0), sample_interval=DT, line_rate=50.0
    )
    assert rec.rt_s == 0.0 and rec.recovered  # the interval starts at the end: no delay
    (rec,) = recoveries(
        TIMES, rates, [(1.0, 2.5)], window=(0.0, 8.0), sample_interval=DT, line_rate=100.0
    )
    assert rec.rt_s == 0.5  # 45 is below 90 % of 100: the next interval counts


def test_no_yield_is_zero_recovery_time() -> None:
    rates = _rates({})  # never slowed down: the interval holding the end is already full
    (rec,) = recoveries(
        TIMES, rates, [(1.1, 2.2)], window=(0.0, 8.0), sample_interval=DT, line_rate=100.0
    )
    assert rec.rt_s == 0.0 and rec.recovered


def test_no_recovery_before_the_next_period_is_a_lower_bound() -> None:
    # low until 6.0; the next busy period starts at 5.0, so the first period never recovered
    rates = _rates({1.5: 6.5})
    recs = recoveries(
        TIMES,
        rates,
        [(1.0, 2.5), (5.0, 5.5)],
        window=(0.0, 8.0),
        sample_interval=DT,
        line_rate=100.0,
    )
    assert recs == [
        Recovery(2.5, 5.0, 2.5, False),
        Recovery(5.5, 8.0, 0.5, True),  # back on (6.0, 6.5]
    ]


def test_interval_straddling_the_next_period_does_not_count() -> None:
    # full rate only on (4.5, 5.0] ... but the next period starts at 4.75: not before it
    rates = _rates({1.5: 5.0, 5.5: 9.0})
    recs = recoveries(
        TIMES, rates, [(1.0, 2.5), (4.75, 6.0)], window=(0.0, 8.0), sample_interval=DT,
        line_rate=100.0,
    )  # fmt: skip
    assert recs[0] == Recovery(2.5, 4.75, 2.25, False)


def test_periods_outside_the_window_are_skipped() -> None:
    rates = _rates({})
    periods = [(0.2, 0.4), (1.0, 2.0), (7.0, 8.5), (9.0, math.inf)]
    recs = recoveries(TIMES, rates, periods, window=(0.5, 8.0), sample_interval=DT, line_rate=100.0)
    assert [r.end_s for r in recs] == [2.0]


def test_recoveries_bad_input() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        recoveries([1.0], [], [], window=(0, 1), sample_interval=1, line_rate=1)
    with pytest.raises(ValueError, match="positive"):
        recoveries([], [], [], window=(0, 1), sample_interval=0, line_rate=1)
    with pytest.raises(ValueError, match="threshold"):
        recoveries([], [], [], window=(0, 1), sample_interval=1, line_rate=1, threshold=1.5)


# --------------------------------------------------------------------------- scores of a result


def _synthetic_result(**changes: object) -> Result:
    """A hand-made long-short result with known scores (see test_scores_of_a_synthetic_run)."""
    payload, header = 1000, 250  # wire factor 1.25
    flows = pd.DataFrame(
        {
            "time_s": TIMES,
            "flow_id": np.zeros(TIMES.size, dtype=np.uint64),
            "rate_gbps": _rates({1.5: 3.5}) / 1.25,  # payload rate: 100 wire = 80 payload
        }
    )
    messages = pd.DataFrame(
        {
            "flow_id": np.array([1, 2, 1, 2], dtype=np.uint64),
            "start_s": [1.0, 1.5, 5.0, 7.0],
            "size_bytes": np.full(4, 1000, dtype=np.uint64),
            "fct_s": [1.0, 1.0, 0.25, math.nan],
        }
    )
    flow_info = pd.DataFrame(
        {
            "flow_id": np.array([0, 1, 2], dtype=np.uint64),
            "src": np.array([1, 2, 3], dtype=np.uint64),
            "dst": np.zeros(3, dtype=np.uint64),
            "window_gbps": [64.0, math.nan, math.nan],
        }
    )
    port_info = pd.DataFrame(
        {
            "port_id": np.arange(5, dtype=np.uint64),
            "name": ["h0->sw0", "h1->sw0", "h2->sw0", "h3->sw0", "sw0->h0"],
            "node": np.array([0, 1, 2, 3, 4], dtype=np.uint64),
            "rate_gbps": [100.0] * 5,
        }
    )
    series = {"flows": flows, "messages": messages, "flow_info": flow_info, "port_info": port_info}
    summary = {
        "window_s": [0.0, 8.0],
        "simulated_s": 8.0,
        "network": {"drops_bytes": 2_000_000_000},
        "bottleneck": {"utilization": 0.5},
    }
    scenario = {"packets": {"payload": payload, "header": header}}
    for name, value in changes.items():
        if value is None:
            series.pop(name)
        else:
            series[name] = value  # type: ignore[assignment]
    return Result(summary, series, scenario)


def test_scores_of_a_synthetic_run() -> None:
    s = scores(_synthetic_result())
    # busy periods: [1.0, 2.5] (two messages merged), [5.0, 5.25], [7.0, never]
    assert s["RT_periods"] == 2 and s["RT_recovered"] == 2
    assert s["RT"] == (0.5 + 0.0) / 2  # back on (3.0, 3.5]; full rate around 5.25
    assert s["DR"] == 2.0  # 2e9 bytes x 8 over 8 s = 2 Gb/s
    assert s["LBW"] == pytest.approx(80.0)  # 64 Gb/s of payload = 80 Gb/s on the wire
    assert s["LBW_goodput"] == pytest.approx(64.0)
    # FCTs 1, 1, 0.25 s and the unfinished one counted as 8 - 7 = 1 s
    assert s["FCT"] == 812_500.0
    assert s["FCT_p99"] == 1e6
    assert s["msgs_done"] == 75.0
    assert s["SU"] == 50.0


def test_scores_need_a_long_short_run() -> None:
    with pytest.raises(ScenarioError, match="no `messages` table"):
        scores(_synthetic_result(messages=None))
    with pytest.raises(ScenarioError, match="flow_series"):
        scores(_synthetic_result(flows=None))
    two_long = _synthetic_result().series["flow_info"].copy()
    two_long.loc[len(two_long)] = [7, 1, 0, 10.0]
    with pytest.raises(ScenarioError, match="exactly one flow without messages"):
        scores(_synthetic_result(flow_info=two_long))


def test_scores_of_a_real_run() -> None:
    # adpg-long-short-2 under HPCC, cut after the second round (11 ms): one measurable period.
    overrides = ["duration=16ms", "metrics.window=['5ms', '16ms']"]
    result = ccgym.run("adpg-long-short-2", cc="hpcc", overrides=overrides)
    s = scores(result)
    assert s["RT_periods"] == 1 and s["RT_recovered"] == 1
    assert 0 <= s["RT"] < 1e-3
    assert s["DR"] == 0.0
    # LBW agrees with the long flow's own rate series over the window
    flows = result.series["flows"]
    series = flows[(flows["flow_id"] == 0) & (flows["time_s"] > 0.005)]
    assert s["LBW"] == pytest.approx(series["rate_gbps"].mean() * 1072 / 1024, rel=0.01)
    assert 80 < s["LBW"] <= 101
    assert s["LBW_goodput"] == pytest.approx(s["LBW"] * 1024 / 1072)
    # one message in the window (11 ms), at least its 200 KiB serialisation time
    assert s["msgs_done"] == 100.0
    assert s["FCT"] == s["FCT_p99"] > 200 * 1024 * 8 / 100e9 * 1e6
    assert s["SU"] == pytest.approx(result.summary["bottleneck"]["utilization"] * 100)


# --------------------------------------------------------------------------- scenarios and suite


@pytest.mark.parametrize("flows", [2, 128, 1024, 2048])
def test_long_short_scenarios(flows: int) -> None:
    data, _ = load_scenario(f"adpg-long-short-{flows}")
    assert data["metrics"] == {"window": ["5ms", "end"], "sample_interval": "50us",
                               "flow_series": True}  # fmt: skip
    long_flow, *shorts = data["workload"]
    assert long_flow["kind"] == "long" and long_flow["senders"] == [1]
    assert long_flow["start"] == "0s" and "stop" not in long_flow and "size" not in long_flow
    per_host = {1: 1}
    for w in shorts:
        assert (w["kind"], w["size"], w["count"], w["period"], w["start"]) == (
            "messages", "200KiB", 6, "10ms", "1ms",
        )  # fmt: skip
        for h in w["senders"]:
            per_host[h] = per_host.get(h, 0) + w["flows_per_host"]
    assert sum(per_host.values()) == flows
    if flows > 2:  # the many-to-one layout: 64 sender hosts x flows per host
        assert sorted(per_host) == list(range(1, 65))
        assert set(per_host.values()) == {flows // 64}
        assert data["topology"]["hosts"] == 65


def test_long_short_suite() -> None:
    suite = load_suite("adpg-long-short")
    assert suite["table"] == "long-short"
    assert [s["scenario"] for s in suite["scenario"]] == [
        f"adpg-long-short-{n}" for n in (2, 128, 1024, 2048)
    ]
    classic = ["dcqcn", "hpcc", "swift", "timely", "dctcp", "policy:adpg-default"]
    assert suite["methods"][:6] == classic
    assert suite["methods"][6:] in ([], ["policy:rlcc-public"])  # with ../shared/anchors only
    jobs = suite_jobs(suite)
    assert len(jobs) == 4 * len(suite["methods"]) and {j.scores for j in jobs} == {"long-short"}
    # a long-short run is cached apart from the same run scored by the standard table
    data, _ = load_scenario("adpg-long-short-2", ["seed=1"])
    assert jobs[0].key == run_key(data, "dcqcn", 1, "long-short") != run_key(data, "dcqcn", 1)


def test_unknown_table(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('methods = ["dcqcn"]\ntable = "wide"\n[[scenario]]\nscenario = "adpg-m2o-2"\n')
    with pytest.raises(ScenarioError, match="unknown bench table 'wide'"):
        load_suite(path)
    with pytest.raises(ScenarioError, match="unknown bench table"):
        table_spec("wide")


# --------------------------------------------------------------------------- table


def _record(label: str, method: str, **metrics: float | None) -> dict:
    pub = {"long-short 2": "ls-2", "long-short 1024": "ls-1024"}.get(label)
    return {"label": label, "method": method, "seed": 1, "published": pub, "metrics": metrics}


def test_long_short_published_numbers() -> None:
    pub = load_published()
    assert pub["ls-2"] == {"adpg": [6e-7, 0, 97], "hpcc": [3e-5, 0, 90], "swift": [1e-3, 0, 97]}
    assert pub["ls-128"]["hpcc"] == [1e-2, 0.4, 75]
    assert pub["ls-1024"]["swift"] == [1e-2, 1.2, 83]
    assert pub["ls-2048"]["adpg"] == [3e-2, 2.7, 56]
    assert pub["ls-2048"]["dcqcn"] == "fails at scale"
    for n in (2, 128, 1024, 2048):
        assert all(len(v) == 3 for v in pub[f"ls-{n}"].values() if isinstance(v, list))


def test_published_numbers_only_for_the_bundled_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's policy file called adpg-*.json (or even adpg-default.json) is not the paper's ADPG:
    no published numbers beside it; the bundled adpg-default, by name or by path, keeps them."""
    from ccgym.policies import POLICY_DIR

    bundled = POLICY_DIR / "adpg-default.json"
    mine = tmp_path / "adpg-mine.json"
    mine.write_text(bundled.read_text())
    (tmp_path / "adpg-default.json").write_text(bundled.read_text())
    (tmp_path / "hpcc.json").write_text(bundled.read_text())
    methods = [
        f"policy:{mine}",
        f"policy:{tmp_path / 'adpg-default.json'}",
        f"policy:{tmp_path / 'hpcc.json'}",
        "policy:adpg-default",
        "policy:adpg-default.json",
        f"policy:{bundled}",
        "hpcc",
    ]
    records = [_record("long-short 2", m, RT=1e-3, LBW=97.0, DR=0.0) for m in methods]
    rows = build_rows(records, spec=LONG_SHORT)
    assert [r["published"] for r in rows] == [None, None, None, *[[6e-7, 0, 97]] * 3, [3e-5, 0, 90]]
    md = markdown_table(rows[:1], "ls", LONG_SHORT)
    assert "6e-07 / 0 / 97" not in md
    # A file in the working folder shadows the bundled name, as when the bench runs it.
    monkeypatch.chdir(tmp_path)
    assert paper_method("policy:adpg-default.json") is None
    assert paper_method("policy:adpg-mine") is None


def test_long_short_table() -> None:
    base = {"DR": 0.0, "FCT_p99": 60.0, "msgs_done": 100.0, "SU": 95.0}
    records = [
        _record("long-short 2", "hpcc", RT=3e-5, LBW=91.0, FCT=60.0, **base),
        # equal RT within the 50 us band, LBW better beyond 1 pp, FCT within 5 %: dominates
        _record("long-short 2", "swift", RT=6e-5, LBW=97.0, FCT=62.0, **base),
        # worse RT (beyond 10 % and 50 us) but much faster messages: on the front
        _record("long-short 2", "policy:adpg-default", RT=1e-3, LBW=97.0, FCT=40.0, **base),
        _record("long-short 1024", "dcqcn", RT=None, LBW=1.0, FCT=9e4, **base),
    ]
    rows = build_rows(records, spec=LONG_SHORT)
    assert [r["pareto"] for r in rows] == [False, True, True, True]
    assert rows[0]["published"] == [3e-5, 0, 90] and rows[2]["published"] == [6e-7, 0, 97]
    assert rows[3]["published"] == "fails at scale"
    md = markdown_table(rows, "ls", LONG_SHORT)
    assert "| scenario | method | seeds | RT s | DR Gb/s | LBW % | FCT us |" in md
    assert "| long-short 2 | hpcc | 1 | 3.0e-05 | 0.00 | 91.0 | 60 |" in md
    assert "6e-07 / 0 / 97" in md and "fails at scale" in md
    assert "RT ±max(5e-05, 10 %)" in md and "LBW higher" in md
    lines = csv_text(rows, LONG_SHORT).splitlines()
    assert lines[0].startswith("scenario,method,seeds,RT,RT_min,RT_max,DR,")
    assert lines[0].endswith(",pareto,paper_RT,paper_DR,paper_LBW,paper_note")
    assert lines[1].endswith(",0,3e-05,0,90,")
    assert lines[4].endswith(",1,,,,fails at scale")


def test_long_short_pareto_bands() -> None:
    m = LONG_SHORT_METRICS
    a = {"RT": 1.00e-2, "DR": 0.0, "LBW": 90.0, "FCT": 1000.0}
    b = {"RT": 1.08e-2, "DR": 0.05, "LBW": 90.5, "FCT": 1040.0}  # all within the bands
    assert pareto_mask([a, b], m) == [True, True]
    c = dict(b, FCT=1100.0)  # 10 % slower messages: dominated
    assert pareto_mask([a, c], m) == [True, False]
