//! Queue disciplines, buffer models and run-time control of switch queues,
//! each shown by a running simulation.

mod common;
use common::conserved;

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

/// Two flows through a 64 Gb/s port with two data queues: ten packets in
/// class 1 from `a` at 0, five in class 2 from `c` at 200 us. Each queue
/// alone is the hand-counted pattern of `queue_counters_match_a_hand_count`:
/// packet j of a line-rate burst waits j x 48,240 ps, and at dequeue ECN
/// marks every packet that leaves one behind (packets 2 to n-2). Both queues
/// are switch agents sampled every 500 us; a user reads the same queues in
/// between with `queue_stats`.
fn two_class_queues() -> Simulation {
    build(json!({
        "duration": "1.2ms",
        "topology": {"kind": "custom", "link_rate": "100Gbps", "link_delay": "1us",
            "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"},
                      {"name": "c", "kind": "host"}, {"name": "s", "kind": "switch"}],
            "links": [{"a": "a", "b": "s"}, {"a": "c", "b": "s"}, {"a": "s", "b": "b", "rate": "64Gbps"}]},
        "switch": {"queues": 3, "ecn": {"kmin": 0, "kmax": 0, "pmax": 1.0}},
        "workload": [{"kind": "flows", "flows": [
            {"src": "a", "dst": "b", "size": 10_240, "class": 1},
            {"src": "c", "dst": "b", "size": 5_120, "class": 2, "start": "200us"},
        ]}],
        "agent": {"queues": ["s->b"], "queue_interval": "500us", "queue_history": 2,
                  "ecn_profiles": [{"kmin": 0, "kmax": 0, "pmax": 1.0}]},
    }))
}

#[test]
fn a_queue_agent_observes_its_own_queues_counters() {
    let mut sim = two_class_queues();
    let nf = ccgym_sim::sim::QUEUE_FEATURES.len();
    assert_eq!((sim.queue_agents(), sim.queue_obs_dim()), (2, 2 * nf));
    let targets: Vec<_> = (0..2).map(|i| sim.queue_agent_target(i).unwrap()).collect();
    let (port, _) = targets[0];
    assert_eq!(targets, vec![(port, 1), (port, 2)]);
    assert!(!sim.agent_step().unwrap());
    let qb = sim.queue_batch().unwrap().clone();
    assert_eq!((qb.flows.clone(), qb.times.clone()), (vec![0, 1], vec![500_000_000; 2]));
    // B: what the port sends in 500 us at 64 Gb/s.
    let b = 64e9 / 8.0 * 500e-6;
    let pkt = 1072.0;
    let interval = 500e6;
    let row = |n: f64, marked: f64, max: f64| {
        let area = pkt * 48_240.0 * (n - 1.0) * n / 2.0;
        [0.0, area / interval / b, max * pkt / b, n * pkt / b, marked * pkt / b, 0.0, 0.0]
    };
    // Queue 1: 10 packets, 7 marked, 4 queued at most (when packet 9 arrives);
    // queue 2: 5 packets, 2 marked, 2 queued at most (packets 3 and 4).
    let want = [row(10.0, 7.0, 4.0), row(5.0, 2.0, 2.0)];
    for (agent, want) in want.iter().enumerate() {
        let obs = &qb.obs[agent * 2 * nf..(agent + 1) * 2 * nf];
        // The first sample fills the history.
        for (got, w) in obs.iter().zip(want.iter().chain(want)) {
            assert!((*got as f64 - w).abs() < 1e-6, "agent {agent}: {obs:?} vs {want:?}");
        }
    }
    // The port's counters mix both queues; each agent saw only its own.
    assert_eq!(sim.ports()[port as usize].tx_bytes, 15 * 1072);
    sim.agent_act(&[0.0, 0.0]).unwrap();
}

#[test]
fn queue_agents_and_queue_stats_callers_keep_separate_intervals() {
    let mut sim = two_class_queues();
    let (port, _) = sim.queue_agent_target(0).unwrap();
    let (q1, q2) = ((port, 1), (port, 2));
    let pkt = 1072u64;
    // The user closes an interval of queue 1 at 150 us, inside the agents' first.
    sim.run_until(150_000_000);
    let st = sim.queue_stats(&[q1], true).unwrap()[0];
    assert_eq!((st.interval, st.tx_bytes, st.ecn_bytes, st.max_bytes), (150_000_000, 10 * pkt, 7 * pkt, 4 * pkt));
    // The agents' interval [0, 500 us) still holds everything.
    assert!(!sim.agent_step().unwrap());
    let nf = ccgym_sim::sim::QUEUE_FEATURES.len();
    let obs = sim.queue_batch().unwrap().obs.clone();
    let b = 64e9 / 8.0 * 500e-6;
    let newest = |agent: usize| &obs[agent * 2 * nf + nf..(agent + 1) * 2 * nf];
    assert!((newest(0)[3] as f64 - 10.0 * 1072.0 / b).abs() < 1e-6, "tx_rate of queue 1: {:?}", newest(0));
    assert!((newest(0)[2] as f64 - 4.0 * 1072.0 / b).abs() < 1e-6, "max_queue of queue 1: {:?}", newest(0));
    assert!((newest(1)[3] as f64 - 5.0 * 1072.0 / b).abs() < 1e-6, "tx_rate of queue 2: {:?}", newest(1));
    sim.agent_act(&[0.0, 0.0]).unwrap();
    // The agents closed their interval at 500 us; the user's intervals go on:
    // queue 1's from 150 us (nothing since), queue 2's from the start.
    sim.run_until(600_000_000);
    let st = sim.queue_stats(&[q1, q2], false).unwrap();
    assert_eq!((st[0].interval, st[0].tx_bytes, st[0].max_bytes), (450_000_000, 0, 0));
    assert_eq!(
        (st[1].interval, st[1].tx_bytes, st[1].ecn_bytes, st[1].max_bytes),
        (600_000_000, 5 * pkt, 2 * pkt, 2 * pkt)
    );
    let area = (pkt * 48_240 * 10) as f64;
    assert!((st[1].mean_bytes - area / 600e6).abs() < 1e-9, "mean {}", st[1].mean_bytes);
    // And the agents' next interval [500 us, 1 ms) saw nothing: the user's
    // read at 600 us took nothing from it either.
    assert!(!sim.agent_step().unwrap());
    let qb = sim.queue_batch().unwrap().clone();
    assert_eq!(qb.times, vec![1_000_000_000; 2]);
    for a in qb.obs.chunks(2 * nf) {
        assert!(a[nf..].iter().all(|&v| v == 0.0), "second interval: {a:?}");
        assert!(a[3] > 0.0, "the older row is the first interval's");
    }
}

/// `switch.ecn.reference_rate` scales each port's thresholds by its own rate:
/// 25 Gb/s host ports keep the thresholds as written, 100 Gb/s fabric ports
/// get four times them; without it every port has them as written.
#[test]
fn ecn_thresholds_scale_with_the_port_rate_from_a_reference_rate() {
    let scenario = |reference: Option<&str>| {
        let mut ecn = json!({"kmin": "5KB", "kmax": "200KB", "pmax": 0.01, "queue_k": []});
        if let Some(r) = reference {
            ecn["reference_rate"] = json!(r);
        }
        build(json!({
            "duration": "10us",
            "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 1,
                         "link_rate": "25Gbps", "fabric_rate": "100Gbps"},
            "switch": {"ecn": ecn},
            "workload": [{"kind": "long", "receiver": 0}],
        }))
    };
    let scaled = scenario(Some("25Gbps"));
    let plain = scenario(None);
    for q in scaled.data_queues() {
        let red = scaled.ecn_of(q.port, q.queue).expect("a data queue").expect("ECN on");
        let rate = scaled.ports()[q.port as usize].rate_bps;
        let factor = rate / 25_000_000_000;
        assert!(factor == 1 || factor == 4, "host ports at 25G, fabric at 100G");
        assert_eq!((red.kmin, red.kmax, red.pmax), (5_000 * factor, 200_000 * factor, 0.01));
        let red = plain.ecn_of(q.port, q.queue).expect("a data queue").expect("ECN on");
        assert_eq!((red.kmin, red.kmax), (5_000, 200_000));
    }
    // The default profile the agents and the report start from stays as written.
    assert_eq!(scaled.default_ecn().map(|r| r.kmax), Some(200_000));
}
