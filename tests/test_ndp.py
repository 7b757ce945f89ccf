"""NDP end to end through the Python API: the bundled ``ndp-incast`` scenario (64 senders into
one receiver at 100 Gb/s, trimming switches) finishes near the time its bytes need at line rate,
cutting packets rather than dropping them, under NDP and under EQDS; DCTCP in the same setting
does not; bad ``host.ndp_*``, ``host.eqds_window`` and ``switch.trim`` values come back as
ScenarioError naming the field."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("ccgym._sim")

import ccgym  # noqa: E402
from ccgym import ScenarioError  # noqa: E402


def test_ndp_incast_finishes_at_line_rate_without_drops() -> None:
    result = ccgym.run("ndp-incast")
    s = result.summary
    flows = result.series["flow_info"]
    assert len(flows) == 64 and flows.fct_s.notna().all()
    # 64 x 256 KB in 9 KB packets (8,936 B of payload each) at 100 Gb/s.
    wire = 64 * math.ceil(256_000 / 8936) * 9000
    line = wire * 8 / 100e9
    assert flows.fct_s.max() < 1.03 * line, (flows.fct_s.max(), line)
    assert s["network"]["drops_packets"] == 0 and s["flows"]["timeouts"] == 0
    assert s["losses"]["trimmed_packets"] > 100  # the first windows meet an 8-packet port


def test_eqds_in_the_ndp_incast_finishes_at_line_rate_too() -> None:
    result = ccgym.run("ndp-incast", cc="eqds")
    flows = result.series["flow_info"]
    wire = 64 * math.ceil(256_000 / 8936) * 9000
    assert flows.fct_s.max() < 1.03 * wire * 8 / 100e9
    assert result.summary["network"]["drops_packets"] == 0
    assert result.summary["losses"]["trimmed_packets"] > 100


def test_dctcp_in_the_ndp_incast_loses_cut_packets_to_timeouts() -> None:
    # The same switches cut DCTCP's packets too; to TCP a cut packet is a loss, and with 64
    # senders many are only recovered by the 1 ms minimum timeout.
    result = ccgym.run("ndp-incast", cc="dctcp", overrides=["switch.ecn.enabled=true"])
    flows = result.series["flow_info"]
    assert result.summary["flows"]["timeouts"] > 0
    assert flows.fct_s.notna().sum() < 32


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("host.ndp_iw=0", "host.ndp_iw"),
        ("host.ndp_pull_rate=2", "host.ndp_pull_rate"),
        ("host.ndp_pull_order='lifo'", "host.ndp_pull_order"),
        ("switch.discipline='rank'", "switch.trim"),
        ("host.eqds_window=0", "host.eqds_window"),
    ],
)
def test_ndp_fields_are_checked(override: str, field: str) -> None:
    with pytest.raises(ScenarioError, match=field):
        ccgym.run("ndp-incast", overrides=[override])
