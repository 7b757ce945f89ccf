//! Queue disciplines, buffer models and run-time control of switch queues,
//! each shown by a running simulation.

use ccgym_sim::sim::QueueStats;
use ccgym_sim::topology::NodeKind;
use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

fn build(scenario: Value) -> Simulation {
    Simulation::from_json(&scenario.to_string(), Path::new(".")).expect("valid scenario")
}

fn build_err(scenario: Value) -> String {
    match Simulation::from_json(&scenario.to_string(), Path::new(".")) {
        Ok(_) => panic!("scenario should be rejected"),
        Err(e) => e.to_string(),
    }
}

fn star(hosts: u32) -> Value {
    json!({"kind": "star", "hosts": hosts, "link_rate": "100Gbps", "link_delay": "1us"})
}

/// The data queue (port, queue) of the switch port that sends to host `name`.
fn queue_to(sim: &Simulation, name: &str) -> (u32, usize) {
    let q = sim.data_queues().into_iter().find(|q| q.peer == name).expect("a switch port to the host");
    (q.port, q.queue)
}

fn conserved(sim: &Simulation) -> bool {
    let s = sim.summary();
    let c = &s["conservation"];
    let g = |k: &str| c[k].as_u64().unwrap();
    g("sent_bytes") == g("delivered_bytes") + g("dropped_bytes") + g("in_flight_bytes")
}

/// A long flow (host 1, 2 MB) and, once it runs, a short one (host 2,
/// 30 KiB) into host 0 through a switch port of 8 packets' worth of buffer.
fn long_and_short(discipline: &str) -> Simulation {
    let mut sim = build(json!({
        "duration": "3ms", "topology": star(3),
        "switch": {"discipline": discipline, "buffer_model": "static", "port_buffer": 9000,
                   "ecn": {"enabled": false}},
        // Jitter shuffles which sender's packet finds the full queue (without
        // it, periodic senders lock each other out in FIFO order).
        "host": {"tx_jitter": 1.0},
        "workload": [{"kind": "flows", "flows": [
            {"src": 1, "dst": 0, "size": "2MB"},
            {"src": 2, "dst": 0, "size": "30KiB", "start": "50us"},
        ]}],
    }));
    sim.run_until(u64::MAX);
    sim
}

#[test]
fn a_full_rank_port_drops_the_largest_rank_not_the_arrival() {
    let sim = long_and_short("rank");
    let (long, short) = (&sim.flows()[0], &sim.flows()[1]);
    let (port, q) = queue_to(&sim, &sim.topology().nodes[0].name);
    let drops = sim.ports()[port as usize].stats.drops;
    assert!(drops > 0, "two line-rate senders must overflow 8 packets of buffer");
    // Every loss fell on the long flow (largest rank); the short flow's
    // arrivals pushed its packets out and were never lost themselves.
    assert_eq!((short.stats.retx_bytes, short.stats.nacks, short.stats.timeouts), (0, 0, 0));
    assert!(long.stats.retx_bytes > 0);
    assert!(sim.ports()[port as usize].queues[q].ctr.drops == drops);
    assert!(conserved(&sim));
    // The same buffer in FIFO order drops whatever arrives to a full queue,
    // the short flow's packets included.
    let fifo = long_and_short("fifo");
    assert!(fifo.flows()[1].stats.retx_bytes > 0, "tail drop should hit the short flow too");
    assert!(conserved(&fifo));
}

/// Four line-rate senders into host 0 of a 5-port switch with 400 kB of buffer.
fn incast(model: &str) -> (Simulation, QueueStats) {
    let mut sim = build(json!({
        "duration": "2ms", "topology": star(5),
        "switch": {"buffer": 400_000, "buffer_model": model, "ecn": {"enabled": false}},
        "workload": [{"kind": "flows", "flows": [
            {"src": 1, "dst": 0, "size": "300KB"}, {"src": 2, "dst": 0, "size": "300KB"},
            {"src": 3, "dst": 0, "size": "300KB"}, {"src": 4, "dst": 0, "size": "300KB"},
        ]}],
    }));
    sim.run_until(u64::MAX);
    let to0 = queue_to(&sim, &sim.topology().nodes[0].name);
    let st = sim.queue_stats(&[to0], false).unwrap()[0];
    (sim, st)
}

#[test]
fn a_static_buffer_caps_a_queue_at_its_budget_and_the_shared_one_does_not() {
    // Static: 400 kB over 5 ports x 1 data queue = 80 kB per queue.
    let (st_sim, st) = incast("static");
    assert!(st.max_bytes <= 80_000 && st.max_bytes > 80_000 - 1072, "static max queue {}", st.max_bytes);
    assert!(st.drops > 0);
    assert!(conserved(&st_sim));
    // Shared: the hot queue takes most of the switch's buffer.
    let (sh_sim, sh) = incast("shared");
    assert!(sh.max_bytes > 300_000, "shared max queue {}", sh.max_bytes);
    assert!(sh.drops < st.drops);
    assert!(conserved(&sh_sim));
}

#[test]
fn queue_counters_match_a_hand_count() {
    // Ten 1072-byte packets at 100 Gb/s (T = 85,760 ps apart) into a 64 Gb/s
    // port (134,000 ps each): packet j waits j x 48,240 ps. ECN marks at
    // dequeue whenever the packet leaves a packet behind: packet 1 leaves at
    // 1.5625 T, before packet 2 arrives; packets 2 to 8 each leave one behind;
    // packet 9 is the last. The queue peaks at 4 packets, when packet 9
    // arrives (6 have left by 9 T).
    let mut sim = build(json!({
        "duration": "1ms",
        "topology": {"kind": "custom", "link_rate": "100Gbps", "link_delay": "1us",
            "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}, {"name": "s", "kind": "switch"}],
            "links": [{"a": "a", "b": "s"}, {"a": "s", "b": "b", "rate": "64Gbps"}]},
        "switch": {"ecn": {"kmin": 0, "kmax": 0, "pmax": 1.0}},
        "workload": [{"kind": "flows", "flows": [{"src": "a", "dst": "b", "size": 10_240}]}],
    }));
    let to_b = queue_to(&sim, "b");
    sim.run_until(500_000_000);
    let st = sim.queue_stats(&[to_b, to_b], true).unwrap();
    assert_eq!(st[0], st[1], "a pair listed twice reads the same values");
    let st = st[0];
    let pkt = 1072u64;
    assert_eq!(st.interval, 500_000_000);
    assert_eq!(st.tx_bytes, 10 * pkt);
    assert_eq!(st.ecn_bytes, 7 * pkt);
    assert_eq!((st.drops, st.drop_bytes, st.bytes), (0, 0, 0));
    assert_eq!(st.max_bytes, 4 * pkt);
    let area = (pkt * 48_240 * 45) as f64;
    assert!((st.mean_bytes - area / 500_000_000.0).abs() < 1e-9, "mean {}", st.mean_bytes);
    // Reset: the next interval starts empty.
    sim.run_until(600_000_000);
    let st = sim.queue_stats(&[to_b], true).unwrap()[0];
    assert_eq!((st.interval, st.tx_bytes, st.ecn_bytes, st.max_bytes, st.mean_bytes), (100_000_000, 0, 0, 0, 0.0));
}

#[test]
fn vectorised_weights_and_ecn_are_checked_and_applied_together() {
    let mut sim = build(json!({
        "duration": "1ms", "topology": star(3),
        "switch": {"queues": 3, "scheduler": "wrr"},
        "workload": [{"kind": "flows", "flows": [{"src": 1, "dst": 0, "size": "10KB"}]}],
    }));
    let qs = sim.data_queues();
    assert_eq!(qs.len(), 3 * 2, "3 switch ports x 2 data queues");
    let topo = sim.topology();
    let switch = topo.nodes.iter().find(|n| matches!(n.kind, NodeKind::Switch(_))).unwrap();
    assert!(qs.iter().all(|q| q.node == switch.name && q.queue >= 1 && q.queue <= 2));
    let mut peers: Vec<&str> = qs.iter().map(|q| q.peer.as_str()).collect();
    peers.dedup();
    assert_eq!(peers.len(), 3, "one port per host: {peers:?}");
    let pairs: Vec<(u32, usize)> = qs.iter().map(|q| (q.port, q.queue)).collect();
    let weights: Vec<u32> = (1..=pairs.len() as u32).collect();
    sim.set_weights_many(&pairs, &weights).unwrap();
    for (&(p, q), &w) in pairs.iter().zip(&weights) {
        assert_eq!(sim.weight_of(p, q).unwrap(), w);
    }
    // One bad entry (a zero weight, a control queue, a host port) changes nothing.
    let mut bad = weights.clone();
    bad[3] = 0;
    assert!(sim.set_weights_many(&pairs, &vec![9; pairs.len()][..pairs.len() - 1]).is_err());
    assert!(sim.set_weights_many(&pairs, &bad).unwrap_err().contains("positive"));
    assert!(sim.set_weights_many(&[(pairs[0].0, 0)], &[2]).is_err());
    let host_port = sim.topology().host_port(0);
    assert!(sim.set_weights_many(&[(host_port, 1)], &[2]).unwrap_err().contains("host"));
    assert_eq!(sim.weight_of(pairs[3].0, pairs[3].1).unwrap(), 4);
    // ECN ramps: Kmin > Kmax and pmax outside [0, 1] are refused.
    use ccgym_sim::net::port::Red;
    let ok = Some(Red { kmin: 1_000, kmax: 5_000, pmax: 0.2 });
    assert!(sim.set_ecn_many(&pairs[..1], &[Some(Red { kmin: 6_000, kmax: 5_000, pmax: 0.2 })]).is_err());
    assert!(sim.set_ecn_many(&pairs[..1], &[Some(Red { kmin: 0, kmax: 5_000, pmax: 1.5 })]).is_err());
    assert!(sim.set_ecn_many(&pairs[..1], &[Some(Red { kmin: 0, kmax: 5_000, pmax: f64::NAN })]).is_err());
    assert!(sim.set_ecn(pairs[0].0, pairs[0].1, Some(Red { kmin: 2, kmax: 1, pmax: 0.5 })).is_err());
    sim.set_ecn_many(&pairs[..2], &[ok, None]).unwrap();
    assert_eq!(sim.ecn_of(pairs[0].0, pairs[0].1).unwrap(), ok);
    assert_eq!(sim.ecn_of(pairs[1].0, pairs[1].1).unwrap(), None);
}

#[test]
fn strict_priority_serves_the_packet_priority_not_the_class_order() {
    // Two line-rate flows share the port to host 0; host 2's flow is class 2,
    // so its packets carry priority 1 and wait while priority 0 has packets.
    let mut sim = build(json!({
        "duration": "1ms", "topology": star(3),
        "switch": {"queues": 3, "discipline": "priority", "priorities": 4, "ecn": {"enabled": false}},
        "workload": [{"kind": "flows", "flows": [
            {"src": 1, "dst": 0, "size": "200KB", "class": 1},
            {"src": 2, "dst": 0, "size": "200KB", "class": 2},
        ]}],
    }));
    let (port, _) = queue_to(&sim, &sim.topology().nodes[0].name);
    assert_eq!(sim.ports()[port as usize].queues.len(), 5, "control + 4 priorities");
    sim.run_until(10_000_000);
    let st = sim.queue_stats(&[(port, 1), (port, 2)], false).unwrap();
    // 10 us in, both flows are sending: priority 0 took the link.
    assert!(st[0].tx_bytes > 8 * st[1].tx_bytes, "{:?}", st);
    assert!(st[1].bytes > 0);
}

#[test]
fn discipline_and_buffer_fields_are_checked() {
    let base = |sw: Value| {
        json!({"duration": "1ms", "topology": star(2), "switch": sw,
               "workload": [{"kind": "flows", "flows": [{"src": 1, "dst": 0}]}]})
    };
    assert!(build_err(base(json!({"discipline": "wfq"}))).contains("switch.discipline"));
    assert!(build_err(base(json!({"buffer_model": "split"}))).contains("switch.buffer_model"));
    assert!(build_err(base(json!({"discipline": "priority", "priorities": 9}))).contains("switch.priorities"));
    let e = build_err(base(json!({"buffer_model": "static", "pfc": {"enabled": true}})));
    assert!(e.contains("switch.buffer_model") && e.contains("PFC"), "{e}");
    assert!(build_err(base(json!({"discipline": "rank", "pfc": {"enabled": true}}))).contains("switch.discipline"));
    assert!(build_err(base(json!({"discipline": "rank", "port_buffer": 1000}))).contains("switch.port_buffer"));
    assert!(build_err(base(json!({"buffer_model": "static", "buffer": 2000}))).contains("switch.buffer"));
}
