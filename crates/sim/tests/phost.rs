//! pHost end to end: free tokens for the first packets, then one token per
//! packet time from the receiver, smallest remaining flow first, tokens that
//! expire, lost packets asked for again by later tokens.

use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

const PAYLOAD: u64 = 1460;
const HEADER: u64 = 40;
const WIRE: u64 = PAYLOAD + HEADER;

/// A star of `hosts` at 10 Gb/s with pHost's switch ports (strict priority,
/// 36 KB per port, no ECN) and pHost hosts (per-packet SRPT at the NIC).
fn phost(hosts: u32, flows: Value) -> Value {
    json!({
        "duration": "20ms",
        "topology": {"kind": "star", "hosts": hosts, "link_rate": "10Gbps", "link_delay": "2us"},
        "switch": {"discipline": "priority", "priorities": 2, "buffer_model": "static", "port_buffer": 36864,
                   "ecn": {"enabled": false}},
        "host": {"scheduler": "srpt", "burst": WIRE},
        "packets": {"payload": PAYLOAD, "header": HEADER},
        "cc": {"algorithm": "phost"},
        "workload": [{"kind": "flows", "flows": flows}],
    })
}

fn build(scenario: &Value) -> Simulation {
    Simulation::from_json(&scenario.to_string(), Path::new(".")).expect("valid scenario")
}

fn conserved(sim: &Simulation) -> bool {
    let s = sim.summary();
    let c = &s["conservation"];
    let g = |k: &str| c[k].as_u64().unwrap();
    g("sent_bytes") == g("delivered_bytes") + g("dropped_bytes") + g("in_flight_bytes")
}

fn port(sim: &Simulation, name: &str) -> usize {
    (0..sim.ports().len() as u32).find(|&p| sim.port_name(p) == name).expect("port exists") as usize
}

#[test]
fn incast_drops_only_unscheduled_packets_and_keeps_the_queue_short() {
    // 64 senders of 200 KB into one receiver. Each sends its first 8
    // packets on free tokens at once: the receiver's 36 KB port must drop
    // most of them. From then on the receiver's tokens pace the data.
    let flows: Vec<Value> = (1..=64).map(|i| json!({"src": i, "dst": 0, "size": "200KB"})).collect();
    let mut sc = phost(65, json!(flows));
    // Free tokens expire after 9.5 packet times (11.4 us); the last free
    // packets have left the switch by about 70 us (the port holds 24 full
    // packets). The window starts after that.
    sc["metrics"] = json!({"window": ["100us", "20ms"]});
    let mut sim = build(&sc);
    sim.run_until(u64::MAX);
    let down = &sim.ports()[port(&sim, "sw0->h0")];
    assert!(down.stats.drops > 0, "64 x 8 free packets cannot all fit in 36 KB");
    assert_eq!(down.stats.win_drops, 0, "scheduled data is never dropped");
    let bdp = sim.flows()[0].ctl.bdp;
    assert!(down.stats.win_max_queue <= 2 * bdp + WIRE, "queue {} B vs BDP {bdp} B", down.stats.win_max_queue);
    for f in sim.flows() {
        assert!(f.snd.finished.is_some(), "every flow completes");
        assert_eq!(f.stats.timeouts, 0, "losses are repaired by tokens, not timeouts");
    }
    // The receiver's downlink stays busy: the last flow ends within 10% of
    // the time its bytes need at 10 Gb/s (plus the lost free packets).
    let last = sim.flows().iter().map(|f| f.snd.finished.unwrap()).max().unwrap();
    let bytes = 64 * 200_000u64.div_ceil(PAYLOAD) * WIRE;
    let line_time = bytes as f64 * 8.0 / 10e9 * 1e12;
    assert!((last as f64) < 1.1 * line_time, "last completion {last} ps vs {line_time} ps at line rate");
    assert!(conserved(&sim));
}
