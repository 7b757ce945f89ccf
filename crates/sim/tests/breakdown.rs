//! The summary's breakdown blocks (`[metrics] breakdown` / `size_buckets`):
//! slowdown by flow-size bucket, large flows, throughput per class, drops
//! split into refused and evicted packets.

use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

/// Eight flows into host 0 of a 10 Gb/s star: three of 5 KB, two of 50 KB,
/// two of 500 KB, one of 2 MB (class 2), all at once, through pFabric's
/// rank ports of `port_buffer` bytes.
fn incast(port_buffer: u64, metrics: Value) -> Value {
    let sizes = [5_000, 5_000, 5_000, 50_000, 50_000, 500_000, 500_000, 2_000_000];
    let flows: Vec<Value> =
        sizes.iter().enumerate().map(|(i, s)| json!({"src": i + 1, "dst": 0, "size": s, "start": "10us"})).collect();
    json!({
        "duration": "5ms",
        "topology": {"kind": "star", "hosts": 9, "link_rate": "10Gbps", "link_delay": "1us"},
        "switch": {"discipline": "rank", "buffer_model": "static", "port_buffer": port_buffer, "queues": 3,
                   "ecn": {"enabled": false}},
        "host": {"rto": "20us"},
        "packets": {"payload": 1460, "header": 40},
        "cc": {"algorithm": "pfabric"},
        "metrics": metrics,
        "workload": [
            {"kind": "flows", "flows": flows[..7]},
            {"kind": "flows", "class": 2, "flows": flows[7..]},
        ],
    })
}

fn summary(scenario: Value) -> Value {
    let mut sim = Simulation::from_json(&scenario.to_string(), Path::new(".")).expect("valid scenario");
    sim.run_until(u64::MAX);
    sim.summary()
}

#[test]
fn breakdown_is_absent_unless_asked_for() {
    let s = summary(incast(36_000, json!({})));
    for key in ["by_size", "by_class", "losses"] {
        assert!(s.get(key).is_none(), "{key} without [metrics] breakdown");
    }
}

#[test]
fn flows_fall_into_their_size_buckets() {
    let s = summary(incast(36_000, json!({"breakdown": true})));
    let by = &s["by_size"];
    assert_eq!(by["edges_bytes"], json!([10_000, 100_000, 1_000_000]));
    let counts: Vec<u64> = by["buckets"].as_array().unwrap().iter().map(|b| b["flows"].as_u64().unwrap()).collect();
    assert_eq!(counts, [3, 2, 2, 1]);
    for b in by["buckets"].as_array().unwrap() {
        assert_eq!(b["completed"], b["flows"], "every flow finishes in 5 ms");
        let sd = &b["slowdown"];
        assert!(sd["mean"].as_f64().unwrap() >= 1.0 && sd["p99"].as_f64().unwrap() >= sd["p50"].as_f64().unwrap());
    }
    // pFabric serves the smallest flows first: the 5 KB flows beat the 2 MB flow's slowdown.
    let small = by["buckets"][0]["slowdown"]["mean"].as_f64().unwrap();
    assert!(small < 2.0, "5 KB flows' mean slowdown {small}");
    let large = &by["large_flows"];
    assert_eq!((large["flows"].as_u64(), large["completed"].as_u64()), (Some(1), Some(1)));
    let goodput = large["goodput_gbps_mean"].as_f64().unwrap();
    assert!(goodput > 1.0 && goodput < 10.0, "2 MB flow's goodput {goodput} Gb/s");
    // Explicit edges turn the breakdown on: one edge, two buckets, the 2 MB flow alone above it.
    let s = summary(incast(36_000, json!({"size_buckets": ["600KB"]})));
    let counts: Vec<u64> =
        s["by_size"]["buckets"].as_array().unwrap().iter().map(|b| b["flows"].as_u64().unwrap()).collect();
    assert_eq!(counts, [7, 1]);
}

#[test]
fn class_throughput_adds_up_to_the_delivered_bytes() {
    let s = summary(incast(36_000, json!({"breakdown": true})));
    let classes = s["by_class"].as_array().unwrap();
    assert_eq!(classes.iter().map(|c| c["class"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(classes.iter().map(|c| c["flows"].as_u64().unwrap()).collect::<Vec<_>>(), [7, 1]);
    let total_gbps: f64 = classes.iter().map(|c| c["throughput_gbps"].as_f64().unwrap()).sum();
    let payload: f64 = 3.0 * 5e3 + 2.0 * 5e4 + 2.0 * 5e5 + 2e6;
    let want = payload * 8.0 / s["duration_s"].as_f64().unwrap() / 1e9;
    assert!((total_gbps - want).abs() < 1e-9 * want.max(1.0), "{total_gbps} Gb/s, want {want}");
}

#[test]
fn evictions_are_counted_apart_from_refused_arrivals() {
    // A 6 KB rank port (four packets) cannot hold the first windows of eight flows.
    let s = summary(incast(6_000, json!({"breakdown": true})));
    let l = &s["losses"];
    let (drops, refused, evicted) = (
        l["drops_packets"].as_u64().unwrap(),
        l["refused_packets"].as_u64().unwrap(),
        l["evicted_packets"].as_u64().unwrap(),
    );
    assert_eq!(drops, s["network"]["drops_packets"].as_u64().unwrap());
    assert_eq!(drops, refused + evicted);
    assert!(evicted > 0 && refused > 0, "refused {refused}, evicted {evicted}");
    assert_eq!(l["evicted_bytes"].as_u64().unwrap(), evicted * 1_500, "full packets are evicted");
}
