"""HOPASS's fast layer from Python: the bundled ``hopass-weighted`` dumbbell (shortened) gives
the large flows 1:1:2:4 shares, and ``Simulation.set_hopass_weights`` with the switches' WRR
weights and ECN thresholds changes the shares mid-run (what the slow layer does)."""

from __future__ import annotations

import numpy as np
import pytest

import ccgym
from ccgym.runner import scenario_json
from ccgym.scenario import load_scenario

_sim = pytest.importorskip("ccgym._sim")

MS = 1_000_000_000  # picoseconds
TARGET = np.array([1.0, 1.0, 2.0, 4.0])


def shortened(duration: str = "100ms") -> list[str]:
    return [f"duration={duration}", f'metrics.window=["2ms", "{duration}"]']


def test_weighted_dumbbell_shares_follow_the_class_weights() -> None:
    result = ccgym.run("hopass-weighted", overrides=shortened())
    flows = result.series["flow_info"]
    rates = flows["window_gbps"].to_numpy()[:4]
    shares = 8 * rates / rates.sum()
    assert np.all(np.abs(shares / TARGET - 1) < 0.05), shares
    assert rates.sum() > 8.0, "the bottleneck carries the large flows"
    small = flows.iloc[4:]
    assert len(small) > 1000


def bottleneck_class_rates(
    sim: _sim.Simulation, ports: np.ndarray, queues: np.ndarray
) -> np.ndarray:
    """Bytes each class sent on the bottleneck since the last reset, as fractions of the four."""
    tx = sim.queue_stats(ports, queues)["tx_bytes"].astype(float)
    return 8 * tx / tx.sum()


def set_class_weights(sim: _sim.Simulation, weights: list[int]) -> None:
    """The slow layer's actuation: switch WRR weights, per-class ECN thresholds and the
    receivers' class weights, together."""
    qs = sim.switch_queues()
    w = np.array(weights)[qs["queue"] - 1]
    sim.set_weights(qs["port"], qs["queue"], w)
    k = 1500 + 3000 * w
    sim.set_ecn(qs["port"], qs["queue"], k, k, np.ones(len(k)))
    sim.set_hopass_weights([float(x) for x in weights])


def test_set_hopass_weights_changes_the_shares_mid_run() -> None:
    data, base_dir = load_scenario("hopass-weighted", shortened("60ms"))
    sim = _sim.Simulation(scenario_json(data), str(base_dir))
    qs = sim.switch_queues()
    on_bottleneck = (
        (np.array(qs["node"]) == "left") & (np.array(qs["peer"]) == "right") & (qs["queue"] <= 4)
    )
    ports, queues = qs["port"][on_bottleneck], qs["queue"][on_bottleneck]
    order = np.argsort(queues)
    ports, queues = ports[order], queues[order]
    assert queues.tolist() == [1, 2, 3, 4]

    sim.run_until(10 * MS)
    sim.queue_stats(ports, queues)  # start the interval
    sim.run_until(25 * MS)
    before = bottleneck_class_rates(sim, ports, queues)
    assert np.all(np.abs(before / TARGET - 1) < 0.1), before

    assert sim.hopass_weights() == [1.0, 1.0, 2.0, 4.0, 8.0]
    set_class_weights(sim, [4, 2, 1, 1, 8])
    assert sim.hopass_weights() == [4.0, 2.0, 1.0, 1.0, 8.0]
    sim.run_until(35 * MS)
    sim.queue_stats(ports, queues)
    sim.run_until(60 * MS)
    after = bottleneck_class_rates(sim, ports, queues)
    assert np.all(np.abs(after / np.array([4.0, 2.0, 1.0, 1.0]) - 1) < 0.1), after
    assert len(sim.hopass_rates()) == 4 and len(sim.hopass_rates()[0]) == 5


def test_set_hopass_weights_rejects_a_wrong_list() -> None:
    data, base_dir = load_scenario(
        "hopass-weighted", ["duration=1ms", 'metrics.window=["0ms", "1ms"]']
    )
    sim = _sim.Simulation(scenario_json(data), str(base_dir))
    with pytest.raises(ValueError, match="one weight per data class 1 to 5"):
        sim.set_hopass_weights([1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        sim.set_hopass_weights([1.0, 1.0, 0.0, 1.0, 1.0])
    assert sim.hopass_weights() == [1.0, 1.0, 2.0, 4.0, 8.0]
