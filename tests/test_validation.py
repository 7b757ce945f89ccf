"""ccgym against htsim and YAPS on the same scenarios (:mod:`ccgym.validation`,
docs/validation.md): every case of ``ccgym validate`` within its tolerance, the few claims of
the page that are not a tolerance (which way ccgym differs, and why), and the command itself.

A change to a transport, the switches or the fabric that moves ccgym away from htsim or YAPS
fails here, beside the golden tests that catch any change at all. The reference figures are data
measured beside ccgym on 2026-11-29 (the module's doc says with which programs)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("ccgym._sim")

import ccgym  # noqa: E402
from ccgym.cli import main  # noqa: E402
from ccgym.validation import CASES, YAPS_PHOST_SETTINGS, Case, compare, measure  # noqa: E402

EQDS_PERMUTATION = next(c for c in CASES if c.transport == "eqds" and "permutation" in c.shape)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_agrees_within_its_tolerance(case: Case) -> None:
    measured = measure(case)
    outside = [k for k in compare(case, measured) if not k.within]
    assert not outside, outside


def test_ndp_with_its_own_pull_spacing_is_ahead_of_htsim_by_the_spacing() -> None:
    """ccgym's default spacing (one pull per data packet at 0.99 of the link) pulls 0.7 %
    faster than htsim's (per data packet and ACK), and the incast finishes that much earlier."""
    case = Case("htsim", "ndp", "incast 64 x 223", {"mean": 10411.8}, {"mean": 0.01})
    ahead = 1 - measure(case)["mean"] / 10411.8
    assert 0.004 < ahead < 0.01, ahead


def test_eqds_permutation_cuts_come_from_slow_pulls() -> None:
    """With nothing left to pull, htsim's pacer hands each sender up to a window of unrequested
    ("slow") pulls, whose data is cut at the last hop (htsim: 1,060 packets). ccgym's slow pulls
    (the default) cut 100, and its last completion comes before htsim's; without them it cuts a
    handful, and its median and mean are within 0.5 % of htsim's."""
    slow = measure(EQDS_PERMUTATION)
    assert 50 < slow["cut"] < 1060 and slow["max"] <= 197.0, slow
    on_demand = measure(EQDS_PERMUTATION, eqds_slow_pulls=False)
    assert on_demand["cut"] < 10 and on_demand["p50"] > slow["p50"], on_demand
    for stat in ("p50", "mean"):
        assert abs(on_demand[stat] / EQDS_PERMUTATION.reference[stat] - 1) < 0.005, on_demand


def test_hpccs_first_completions_differ_from_htsims() -> None:
    """The median and last completions agree (a case above); htsim's mean is lower because one
    of its flows finishes at a third of the others' time, which ccgym's HPCC does not reproduce:
    htsim keeps the first ACK's INT record as the reference for good and updates U only when a
    whole T has passed (docs/validation.md)."""
    case = next(c for c in CASES if c.transport == "hpcc")
    assert measure(case)["mean"] > 2293.7 * 1.05


def test_phost_with_yapss_settings_agrees_with_yaps_woken_on_data() -> None:
    """pHost with YAPS's settings (its window of 8 is ccgym's 7, free tokens only for flows that
    fit in them, one data priority, tokens paced without counting control, YAPS's RTS hold)
    against a copy of YAPS patched to wake its token scheduler on data (unpatched, it sleeps a
    window timeout after every window on these 1 us links): every bucket's mean slowdown within
    1.5 % (docs/validation.md, "pFabric and pHost against YAPS")."""
    woken = {"<=10K mean": 1.271, "10-100K mean": 1.589, "0.1-1M mean": 1.507,
             ">1M mean": 2.117, "all mean": 1.677}  # fmt: skip
    case = Case("yaps", "phost", "websearch", woken, dict.fromkeys(woken, 0.015))
    settings = {**YAPS_PHOST_SETTINGS, "phost_window": 7}
    outside = [k for k in compare(case, measure(case, **settings)) if not k.within]
    assert not outside, outside


def test_bundled_ndp_fat_tree_incast_is_the_documented_case() -> None:
    """``ndp-fat-tree-incast`` (an ``incast`` workload) is the ``incast 64 x 30`` case (explicit
    flows): the same completions and cuts to the nanosecond."""
    result = ccgym.run("ndp-fat-tree-incast")
    fct = result.series["flow_info"].fct_s.to_numpy() * 1e6
    ours = measure(Case("htsim", "ndp", "incast 64 x 30", {}, {}))
    assert len(fct) == ours["flows"] and np.isfinite(fct).all()
    assert abs(float(fct.max()) - ours["max"]) < 1e-3
    assert abs(float(np.median(fct)) - ours["p50"]) < 1e-3
    assert result.summary["losses"]["trimmed_packets"] == ours["cut"]


def test_compare_reads_ranges_and_unfinished_flows() -> None:
    case = Case(
        "htsim", "roce", "incast 2 x 1", {"p50": (10.0, 20.0), "cut": 0}, {"p50": 0.1, "cut": 0.0}
    )
    inside = compare(case, {"flows": 2, "done": 2, "p50": 15.0, "cut": 0})
    assert [(k.stat, k.difference, k.within) for k in inside] == [
        ("p50", 0.0, True),
        ("cut", 0.0, True),
    ]
    above = compare(case, {"flows": 2, "done": 2, "p50": 23.0, "cut": 1})
    assert above[0].difference == pytest.approx(0.15) and not above[0].within
    assert above[1].difference == 1.0 and not above[1].within  # against 1 when the reference is 0
    unfinished = compare(case, {"flows": 2, "done": 1, "p50": 15.0, "cut": 0})
    assert unfinished[0].stat == "completed" and not unfinished[0].within


def test_validate_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--only", "hpcc", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["case"] == "htsim hpcc incast 16 x 223"
    assert [k["stat"] for k in row["checks"]] == ["p50", "max"] and all(
        k["within"] for k in row["checks"]
    )
    assert main(["validate", "--only", "hpcc"]) == 0
    assert "1 case, 2 statistics: all within tolerance" in capsys.readouterr().out
    assert main(["validate", "--list"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(CASES)
    assert main(["validate", "--only", "no such case"]) == 2
    assert "ccgym validate --list" in capsys.readouterr().err
