"""The bundled policy `adpg-default` meets the ADPG targets on the paper's small many-to-one
scenarios (full evaluation protocol: 200 ms, statistics over 50-170 ms), natively in float32 and
int8; its int8 calibration keeps the rate multipliers within 1% of float32."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ccgym
import ccgym.policies as P

# The 4-to-1 and 16-to-1 of the ADPG many-to-one suite (python/ccgym/bench/suites).
SCALES = {
    4: ["topology.hosts=5", 'switch.buffer="50MiB"'],
    16: [],  # the bundled adpg-m2o-16
}


def _scenario(flows: int) -> str:
    return "adpg-m2o-16" if flows == 16 else "adpg-m2o-2"


def _paper(result: Any) -> dict[str, float]:
    s = result.summary
    return {**s["paper"], "jain": s["flows"]["jain"], "drops": s["network"]["drops_bytes"]}


@pytest.fixture(scope="module")
def dcqcn() -> dict[int, dict[str, float]]:
    return {
        n: _paper(ccgym.run(_scenario(n), overrides=ov, cc="dcqcn")) for n, ov in SCALES.items()
    }


@pytest.mark.parametrize(("flows", "precision"), [(4, "float32"), (16, "float32"), (16, "int8")])
def test_adpg_default_fills_the_link_fairly_with_less_queue_than_dcqcn(
    flows: int, precision: str, dcqcn: dict[int, dict[str, float]]
) -> None:
    got = _paper(
        P.evaluate("adpg-default", _scenario(flows), overrides=SCALES[flows], precision=precision)
    )
    assert got["SU"] >= 90.0, got
    assert got["jain"] >= 0.9, got
    assert got["drops"] == 0, got
    assert got["QL"] < dcqcn[flows]["QL"], (got, dcqcn[flows])


def test_adpg_default_int8_multipliers_within_one_percent_of_float32() -> None:
    pol = P.load_policy("adpg-default")
    assert pol["int8"]["input_amax"], "the bundled policy carries its int8 calibration"
    obs = P.record_observations(
        pol,
        ["adpg-m2o-16"],
        overrides=["duration=20ms", 'workload[0].stop="20ms"', 'metrics.window=["0ms", "20ms"]'],
        max_obs=5000,
    )
    assert len(obs) > 1000
    m32 = P.multiplier(P.forward(pol, obs)[:, 0])
    m8 = P.multiplier(P.forward(pol, obs, "int8")[:, 0])
    rel = np.abs(m8 - m32) / m32
    assert rel.mean() < 0.01 and np.percentile(rel, 90) < 0.01, (
        rel.mean(),
        np.percentile(rel, 90),
    )


def _message_fcts_us(*overrides: str) -> np.ndarray:
    result = P.evaluate(
        "adpg-default",
        "adpg-long-short-2",
        overrides=["duration=62ms", 'metrics.window=["0ms", "62ms"]', *overrides],
    )
    return result.series["messages"]["fct_s"].to_numpy() * 1e6


def test_a_short_flow_starts_each_message_at_a_rate_that_fits_the_path() -> None:
    # Long-short at 2 flows: the short flow's six 200 KiB messages (1, 11, ..., 51 ms) each take
    # about 43 us at half the link. An idle flow probes the path and decides on the reply
    # (`idle_probe`); one that decided in its 10 ms gaps on the last RTT of its previous message
    # cut its rate about thirty times and took 250-580 us.
    fct_us = _message_fcts_us()
    assert len(fct_us) == 6 and not np.isnan(fct_us).any(), fct_us
    assert fct_us.max() < 50.0, fct_us
    # Without the probes the flow keeps the cut its previous message ended with: each message
    # starts slower than the one before (measured 42.5, 50.4, 57.9, 71.2, 85.4, 104.5 us).
    ratchet = _message_fcts_us("agent.idle_probe=false")
    assert ratchet[-1] > 1.5 * ratchet[0], ratchet
