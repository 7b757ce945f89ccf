"""SACK (``host.sack``, RFC 6675) on the bundled Pantheon-like links, which turn it on: a
slow-start or Startup overshoot into the one-BDP buffer of ``mvfst-synthetic-100`` drops hundreds
of packets at once, and with SACK CUBIC and BBR still fill most of the link (without it, one hole
per round trip: about 1 Mb/s, docs/cc.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("ccgym._sim")

from ccgym.runner import simulate  # noqa: E402


def mbps(cc: str, *overrides: str) -> tuple[float, dict[str, int]]:
    s = simulate("mvfst-synthetic-100", overrides=["duration=10s", *overrides], cc=cc).summary
    f = s["flows"]
    return float(f["throughput_gbps_mean"]) * 1e3, {"timeouts": int(f["timeouts"])}


@pytest.mark.parametrize("cc", ["bbr", "cubic", "newreno"])
def test_loss_based_and_bbr_flows_fill_most_of_the_100_mbps_link_with_sack(cc: str) -> None:
    rate, stats = mbps(cc)
    # 100 Mb/s of 1500-byte packets carry 97.3 Mb/s of payload; the first second is slow start
    # and the recovery of its overshoot.
    assert rate > 80.0, (cc, rate, stats)
    assert stats["timeouts"] == 0, (cc, stats)


def test_without_sack_the_overshoot_is_repaired_one_hole_per_round_trip() -> None:
    # The link keeps carrying new data (the flow's rate counts what arrives, in order or not),
    # but the receiver's in-order point crawls one hole per round trip behind Startup's losses.
    result = simulate(
        "mvfst-synthetic-100", overrides=["duration=10s", "host.sack=false"], cc="bbr"
    )
    info = result.series["flow_info"]
    in_order_mbps = float(info["delivered_bytes"].sum()) * 8 / 10 / 1e6
    received_mbps = float(info["received_bytes"].sum()) * 8 / 10 / 1e6
    assert in_order_mbps < 10.0
    assert received_mbps > 50.0
