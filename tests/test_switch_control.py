"""Run-time control of switch queues from Python (``ccgym._sim.Simulation``):
listing data queues, interval counters, vectorised ``set_ecn`` and ``set_weights``."""

from __future__ import annotations

import json

import numpy as np
import pytest

_sim = pytest.importorskip("ccgym._sim")

US = 1_000_000  # picoseconds


def two_senders(switch: dict, classes: tuple[int, int] = (1, 1)) -> _sim.Simulation:
    """Hosts 1 and 2 send at line rate to host 0 of a 3-host star: the switch
    port to host 0 stays backlogged."""
    scenario = {
        "duration": "1ms",
        "topology": {"kind": "star", "hosts": 3, "link_rate": "100Gbps", "link_delay": "1us"},
        "switch": switch,
        "workload": [
            {
                "kind": "flows",
                "flows": [
                    {"src": 1, "dst": 0, "size": "20MB", "class": classes[0]},
                    {"src": 2, "dst": 0, "size": "20MB", "class": classes[1]},
                ],
            }
        ],
    }
    return _sim.Simulation(json.dumps(scenario), ".")


def test_switch_queues_lists_every_data_queue() -> None:
    sim = two_senders({"queues": 3})
    qs = sim.switch_queues()
    assert qs["port"].dtype == np.int64 and qs["queue"].dtype == np.int64
    assert len(qs["port"]) == len(qs["queue"]) == len(qs["node"]) == len(qs["peer"]) == 3 * 2
    assert set(qs["queue"].tolist()) == {1, 2}
    assert len(set(qs["node"])) == 1, "one switch"
    assert len(set(qs["peer"])) == 3, "one port per host"


def test_set_ecn_mid_run_changes_the_marked_fraction() -> None:
    sim = two_senders({})
    qs = sim.switch_queues()
    sim.run_until(50 * US)
    # The backlogged queue is the one holding bytes.
    now = sim.queue_stats(qs["port"], qs["queue"], reset=True)
    hot = int(np.argmax(now["bytes"]))
    assert now["bytes"][hot] > 100_000
    port, queue = qs["port"][[hot]], qs["queue"][[hot]]

    # Kmax far above the queue: a gentle ramp marks a small fraction.
    sim.set_ecn(port, queue, [0], [100_000_000], [1.0])
    sim.run_until(150 * US)
    gentle = sim.queue_stats(port, queue)
    frac_gentle = gentle["ecn_bytes"][0] / gentle["tx_bytes"][0]
    assert gentle["tx_bytes"][0] > 1_000_000
    assert frac_gentle < 0.05

    # Kmax lowered below the queue mid-run: every departing packet is marked.
    sim.set_ecn(port, queue, np.array([0]), np.array([1_000]), np.array([1.0]))
    sim.run_until(250 * US)
    steep = sim.queue_stats(port, queue)
    frac_steep = steep["ecn_bytes"][0] / steep["tx_bytes"][0]
    assert frac_steep > 0.99
    assert steep["interval_s"][0] == pytest.approx(100e-6)
    assert steep["mean_bytes"][0] > 1_000 and steep["max_bytes"][0] >= steep["mean_bytes"][0]


def test_set_weights_vectorised_changes_the_share() -> None:
    sim = two_senders({"queues": 3, "scheduler": "wrr", "ecn": {"enabled": False}}, classes=(1, 2))
    qs = sim.switch_queues()
    sim.run_until(50 * US)
    st = sim.queue_stats(qs["port"], qs["queue"])
    hot_port = qs["port"][int(np.argmax(st["bytes"]))]
    ports = np.array([hot_port, hot_port])
    queues = np.array([1, 2])

    sim.run_until(150 * US)
    even = sim.queue_stats(ports, queues)["tx_bytes"]
    assert even[0] / even[1] == pytest.approx(1.0, rel=0.02)

    sim.set_weights(ports, queues, np.array([3, 1]))
    sim.run_until(250 * US)
    skewed = sim.queue_stats(ports, queues)["tx_bytes"]
    assert skewed[0] / skewed[1] == pytest.approx(3.0, rel=0.02)
    assert skewed.sum() == pytest.approx(even.sum(), rel=0.01), "the link stays fully used"


def test_bad_ids_and_values_raise_value_errors() -> None:
    sim = two_senders({"queues": 3})
    qs = sim.switch_queues()
    p, q = qs["port"][:1], qs["queue"][:1]
    with pytest.raises(ValueError, match="kmin"):
        sim.set_ecn(p, q, [5_000], [1_000], [0.5])
    with pytest.raises(ValueError, match="pmax"):
        sim.set_ecn(p, q, [0], [1_000], [1.5])
    with pytest.raises(ValueError, match="same length"):
        sim.set_ecn(p, q, [0, 0], [1_000], [0.5])
    with pytest.raises(ValueError, match="byte counts"):
        sim.set_ecn(p, q, [-1], [1_000], [0.5])
    with pytest.raises(ValueError, match="data queues 1 to 2"):
        sim.queue_stats(p, [3])
    with pytest.raises(ValueError, match="data queues 1 to 2"):
        sim.set_weights(p, [0], [1])
    with pytest.raises(ValueError, match="no port"):
        sim.queue_stats([10_000], [1])
    with pytest.raises(ValueError, match="no switch queue"):
        sim.queue_stats([-1], [1])
    with pytest.raises(ValueError, match="weight"):
        sim.set_weights(np.concatenate([p, p]), np.array([1, 2]), np.array([2, 0]))
    all_ports = set(range(6))  # 3 links, one port per direction
    host_port = min(all_ports - set(qs["port"].tolist()))
    with pytest.raises(ValueError, match="host"):
        sim.set_weights([host_port], [1], [1])
