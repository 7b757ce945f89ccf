"""The ``hopass-weighted`` bench suite and its ``weighted-shares`` table: the weighted flows'
shares against their class weights, and the background flows' slowdown."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ccgym.bench.runner import load_suite, run_suite
from ccgym.bench.tables import WEIGHTED_SHARES, build_rows, markdown_table
from ccgym.bench.weighted import scores


def test_scores_scale_shares_to_the_weights_and_split_background_flows() -> None:
    scenario = {
        "switch": {"weights": [1, 3, 1]},
        "workload": [
            {
                "kind": "flows",
                "flows": [{"src": 0, "dst": 1, "class": 1}, {"src": 0, "dst": 1, "class": 2}],
            },
            {"kind": "poisson", "class": 3},
        ],
    }
    flows = pd.DataFrame(
        {"window_gbps": [2.0, 6.6, 0.1, 0.1], "slowdown": [np.nan, np.nan, 1.0, 3.0]}
    )
    got = scores(scenario, {"network": {"drops_packets": 7}}, flows)
    # 2 : 6.6 of 8.6 Gb/s, scaled to the weights' sum 4: 0.93 and 3.07
    assert got["s1"] == pytest.approx(4 * 2 / 8.6) and got["s2"] == pytest.approx(4 * 6.6 / 8.6)
    assert got["share_err"] == pytest.approx((1 - 4 * 2 / 8.6) * 100)
    assert got["s3"] is None and got["weighted_gbps"] == pytest.approx(8.6)
    assert got["small_mean"] == pytest.approx(2.0) and got["small_done"] == 2
    assert got["drops"] == 7


def test_scores_need_the_weighted_flows_first() -> None:
    with pytest.raises(ValueError, match="first workload"):
        scores({"workload": [{"kind": "poisson"}]}, {}, pd.DataFrame())


def test_hopass_weighted_suite_end_to_end(tmp_path: Path) -> None:
    suite = load_suite("hopass-weighted")
    assert suite["methods"] == ["hopass", "dctcp"] and suite["table"] == "weighted-shares"
    suite["seeds"] = [1]
    suite["overrides"] = ["duration=60ms", "metrics.window=['5ms', '60ms']"]
    records, stats = run_suite(suite, tmp_path, jobs=2)
    assert stats.ran == 2
    by = {r["method"]: r for r in build_rows(records, spec=WEIGHTED_SHARES)}
    # HOPASS's large flows follow 1:1:2:4 and its small flows finish near their ideal FCT
    hopass = by["hopass"]
    assert [hopass[f"s{i}"] for i in range(1, 5)] == pytest.approx([1, 1, 2, 4], rel=0.06)
    assert hopass["share_err"] < 6 and hopass["weighted_gbps"] > 8
    assert hopass["small_mean"] < by["dctcp"]["small_mean"]
    assert "share err %" in markdown_table(list(by.values()), "t", WEIGHTED_SHARES)
