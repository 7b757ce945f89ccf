"""Pantheon-like links (spec wan_cc.md 3.7) through the bundled ``mvfst-*`` scenarios: every one
runs; the droptail queue holds N packets as mahimahi's does; the Poisson link delivers its rate;
mm-delay adds exactly its delay; loss hits the data direction only; the policer adds no delay,
passes a sender below its rate untouched and drops about half of one at twice its rate."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("ccgym._sim")

from ccgym.runner import simulate  # noqa: E402

MVFST = [
    "mvfst-nepal-india",
    "mvfst-mexico-cellular",
    "mvfst-brazil-colombia",
    "mvfst-india-india",
    "mvfst-korea-china",
    "mvfst-synthetic-12",
    "mvfst-synthetic-50",
    "mvfst-synthetic-60",
    "mvfst-synthetic-100",
    "mvfst-synthetic-108",
    "mvfst-policer",
]


def summary(name: str, *overrides: str, cc: str | None = None) -> dict[str, Any]:
    return simulate(name, overrides=list(overrides), cc=cc).summary


def port(s: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in s["ports"] if p["name"] == name)


def mbps(s: dict[str, Any]) -> float:
    return float(s["flows"]["throughput_gbps_mean"]) * 1e3


@pytest.mark.parametrize("name", MVFST)
def test_every_mvfst_link_runs_with_cubic_and_reports_one_way_delay(name: str) -> None:
    s = summary(name, "duration=2s", cc="cubic")
    owd = s["flows"]["one_way_delay_ms"]
    assert owd["packets"] > 0 and owd["p95"] >= owd["p50"] > 0
    assert mbps(s) > 0


def test_droptail_queue_holds_n_packets_like_mahimahi() -> None:
    # CUBIC fills Mexico's 130-packet queue: 129 wait in the queue, one for its opportunity.
    s = summary("mvfst-mexico-cellular", "duration=10s", cc="cubic")
    b = s["bottleneck"]
    assert b["port"] == "left->right"
    assert b["queue_max_kb"] == pytest.approx(129 * 1.5)
    assert s["network"]["drops_packets"] > 0


def test_poisson_link_delivers_its_rate() -> None:
    # A sender far above the link whose window (100 packets) fits the 130-packet queue: the
    # link is never idle and never drops, and delivers the trace's 2.64 Mb/s.
    s = summary(
        "mvfst-mexico-cellular",
        "cc.rate=20Mbps",
        "cc.window=146000",
        "duration=30s",
        cc="fixed_rate",
    )
    assert s["network"]["drops_packets"] == 0
    assert mbps(s) * 1500 / 1460 == pytest.approx(2.64, rel=0.04)


def test_mm_delay_adds_exactly_its_delay_each_way() -> None:
    # 12 Mb/s at half rate: no queue; one-way delay = 30 ms + the wait for a 1 ms opportunity tick.
    s = summary("mvfst-synthetic-12", "cc.rate=6Mbps", "duration=3s", cc="fixed_rate")
    owd = s["flows"]["one_way_delay_ms"]
    assert 30.0 <= owd["p50"] <= 31.1 and owd["p99"] <= 31.1


def test_loss_is_bernoulli_on_the_data_direction_only() -> None:
    # Nepal: 4.77 % uplink loss, after the queue: of the packets that left the queue.
    s = summary(
        "mvfst-nepal-india", "cc.rate=0.3Mbps", "cc.window=100000", "duration=60s", cc="fixed_rate"
    )
    data_lost = port(s, "left->right")["link_drops_packets"]
    assert port(s, "right->left")["link_drops_packets"] == 0
    left_queue = s["conservation"]["sent_bytes"] / 1500 - s["network"]["drops_packets"]
    # About 1,400 packets: the binomial's standard deviation is 0.57 % of them.
    assert data_lost / left_queue == pytest.approx(0.0477, abs=0.02)


def test_policer_adds_no_delay_and_drops_only_what_exceeds_its_rate() -> None:
    below = summary("mvfst-policer", "cc.rate=10.8Mbps", "duration=3s", cc="fixed_rate")
    assert port(below, "left->right")["link_drops_packets"] == 0
    assert below["flows"]["one_way_delay_ms"]["p99"] < 10.1
    above = summary(
        "mvfst-policer", "cc.rate=24Mbps", "cc.window=1000000", "duration=3s", cc="fixed_rate"
    )
    offered = above["conservation"]["sent_bytes"] / 1500
    lost = port(above, "left->right")["link_drops_packets"] / offered
    # Half of what a 2 r sender offers, less the first bucket's 20 packets.
    assert lost == pytest.approx(0.5, abs=0.03)
