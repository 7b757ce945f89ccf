//! pFabric end to end: rank switch ports that serve the flow with the least
//! remaining bytes and evict the packet with the most, and hosts that start
//! at line rate with a BDP window and repair losses by timeout alone.

mod common;
use common::{conserved, HEADER, PAYLOAD};

use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

/// A star of `hosts` at 10 Gb/s with pFabric's switch ports (36 KB rank
/// queues, no ECN) and pFabric hosts (timeout 20 us, about 3 RTTs here).
fn pfabric(hosts: u32, port_buffer: u64, flows: Value, extra_host: Value) -> Value {
    let mut host = json!({"rto": "20us"});
    for (k, v) in extra_host.as_object().unwrap() {
        host[k] = v.clone();
    }
    json!({
        "duration": "5ms",
        "topology": {"kind": "star", "hosts": hosts, "link_rate": "10Gbps", "link_delay": "1us"},
        "switch": {"discipline": "rank", "buffer_model": "static", "port_buffer": port_buffer,
                   "ecn": {"enabled": false}},
        "host": host,
        "packets": {"payload": PAYLOAD, "header": HEADER},
        "cc": {"algorithm": "pfabric"},
        "workload": [{"kind": "flows", "flows": flows}],
    })
}

fn run(scenario: Value) -> Simulation {
    let mut sim = Simulation::from_json(&scenario.to_string(), Path::new(".")).expect("valid scenario");
    sim.run_until(u64::MAX);
    sim
}

#[test]
fn the_shortest_flow_finishes_first_and_near_its_ideal() {
    // Four flows of very different sizes start together into one receiver.
    let sizes = ["1MB", "200KB", "50KB", "10KB"];
    let flows: Vec<Value> = sizes.iter().enumerate().map(|(i, s)| json!({"src": i + 1, "dst": 0, "size": s})).collect();
    let sim = run(pfabric(5, 36864, json!(flows), json!({})));
    let fct: Vec<u64> =
        sim.flows().iter().map(|f| f.snd.finished.expect("every flow finishes") - f.path.start).collect();
    // SRPT: completion in the order of size, smallest first.
    assert!(fct[3] < fct[2] && fct[2] < fct[1] && fct[1] < fct[0], "completion times {fct:?}");
    let short = &sim.flows()[3];
    let slowdown = fct[3] as f64 / short.stats.ideal_fct as f64;
    assert!(slowdown < 1.5, "the 10 KB flow is served first, slowdown {slowdown}");
    // The whole transfer keeps the receiver's link busy: the last flow ends
    // within 15% of the time the bytes need at 10 Gb/s.
    let total: u64 = [1_000_000u64, 200_000, 50_000, 10_000].iter().map(|b| b.div_ceil(PAYLOAD) * HEADER + b).sum();
    let line_time = total as f64 * 8.0 / 10e9 * 1e12;
    assert!((fct[0] as f64) < 1.15 * line_time, "last completion {} ps vs {line_time} ps at line rate", fct[0]);
    assert!(conserved(&sim));
}

#[test]
fn losses_are_repaired_by_timeouts_alone() {
    // Eight 100 KB flows into a 6-packet rank port: the port must evict.
    let flows: Vec<Value> = (1..=8).map(|i| json!({"src": i, "dst": 0, "size": "100KB"})).collect();
    let sim = run(pfabric(9, 9000, json!(flows), json!({})));
    let drops: u64 = sim.ports().iter().map(|p| p.stats.drops).sum();
    assert!(drops > 0, "eight BDP windows cannot fit in six packets");
    for f in sim.flows() {
        assert!(f.snd.finished.is_some(), "every flow completes");
        assert_eq!(f.stats.nacks, 0, "pFabric receivers never NACK");
        if f.stats.retx_bytes > 0 {
            assert!(f.stats.timeouts > 0, "a resend happens only after a timeout");
        }
    }
    assert!(conserved(&sim));
    // Without a timeout nothing would repair them: refused, not run.
    let flows: Vec<Value> = (1..=8).map(|i| json!({"src": i, "dst": 0, "size": "100KB"})).collect();
    let sc = pfabric(9, 9000, json!(flows), json!({"rto": "0s"}));
    let err = Simulation::from_json(&sc.to_string(), Path::new(".")).err().expect("refused");
    assert_eq!(err.field, "host.rto", "{err}");
}

#[test]
fn repeated_timeouts_switch_to_probes_instead_of_data() {
    // The receiver's downlink loses everything: after `pfabric_probe_after`
    // timeouts the sender stops resending data and only probes.
    let lossy = |probe_after: u32| {
        let mut sc = pfabric(
            2,
            36864,
            json!([{"src": 1, "dst": 0, "size": "100KB"}]),
            json!({"pfabric_probe_after": probe_after}),
        );
        sc["duration"] = json!("1ms");
        sc["link"] = json!([{"from": "sw0", "to": "h0", "loss": 1.0}]);
        run(sc)
    };
    let wire = PAYLOAD + HEADER;
    let sim = lossy(3);
    let f = &sim.flows()[0];
    assert!(f.stats.timeouts >= 20, "timeouts keep firing: {}", f.stats.timeouts);
    // The initial window of 12 packets, then one packet on each of the first
    // two timeouts (cwnd 1); from the third on, probes only.
    assert_eq!(f.stats.sent_bytes, (12 + 2) * wire);
    // Without probe mode every timeout resends a packet.
    let no_probe = lossy(1_000_000);
    let g = &no_probe.flows()[0];
    assert_eq!(g.stats.sent_bytes, (12 + g.stats.timeouts) * wire);
}

#[test]
fn probe_mode_ends_when_the_path_delivers_again() {
    // The receiver's downlink crawls at 1 Mb/s for the first 300 us: packets
    // are late, not lost, so timeouts pile up and the sender probes; once the
    // link is back to 10 Gb/s an answer arrives and the flow completes.
    let mut sc = pfabric(2, 36864, json!([{"src": 1, "dst": 0, "size": "100KB"}]), json!({"pfabric_probe_after": 2}));
    sc["link"] = json!([{"from": "sw0", "to": "h0",
                         "schedule": [{"at": "0us", "rate": "1Mbps"}, {"at": "300us", "rate": "10Gbps"}]}]);
    let sim = run(sc);
    let f = &sim.flows()[0];
    assert!(f.stats.timeouts >= 2, "the slow link must time the flow out: {}", f.stats.timeouts);
    assert!(f.snd.finished.is_some(), "the flow resumes and completes");
    assert!(!f.snd.probing);
    assert!(conserved(&sim));
}

/// Data bytes each leaf0 -> spine uplink carried in a 2-leaf, 4-spine fabric
/// where one pFabric flow goes from a host of leaf0 to a host of leaf1.
fn uplink_bytes(load_balancing: &str) -> (Vec<u64>, Simulation) {
    let mut sc = pfabric(4, 36864, json!([{"src": 0, "dst": 2, "size": "300KB"}]), json!({}));
    sc["topology"] = json!({"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 2,
                            "link_rate": "10Gbps", "link_delay": "1us"});
    sc["switch"]["load_balancing"] = json!(load_balancing);
    let sim = run(sc);
    let up: Vec<u64> = (0..sim.ports().len() as u32)
        .filter(|&p| sim.port_name(p).starts_with("leaf0->spine"))
        .map(|p| sim.ports()[p as usize].tx_bytes)
        .collect();
    assert_eq!(up.len(), 4);
    (up, sim)
}

#[test]
fn packet_spraying_spreads_one_flow_over_every_spine() {
    let (by_flow, _) = uplink_bytes("flow");
    assert_eq!(by_flow.iter().filter(|&&b| b > 0).count(), 1, "ECMP keeps a flow on one path: {by_flow:?}");
    let (sprayed, sim) = uplink_bytes("packet");
    let total: u64 = sprayed.iter().sum();
    for b in &sprayed {
        // 206 packets over 4 paths: each gets a fair share, within a wide band.
        assert!(*b as f64 > 0.15 * total as f64, "every spine carries part of the flow: {sprayed:?}");
    }
    // Reordering costs a pFabric flow nothing: no timeout, no resend.
    let f = &sim.flows()[0];
    assert!(f.snd.finished.is_some());
    assert_eq!((f.stats.timeouts, f.stats.retx_bytes), (0, 0));
    assert!(conserved(&sim));
}
