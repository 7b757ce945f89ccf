//! Helpers shared by the end-to-end transport tests (`mod common;` in each):
//! building a scenario, the conservation check and port lookup by name.
//! Each test file uses a subset, hence the `dead_code` allowance.
#![allow(dead_code)]

use ccgym_sim::Simulation;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Payload of a full data packet in these tests, bytes.
pub const PAYLOAD: u64 = 1460;
/// Header bytes of every packet in these tests.
pub const HEADER: u64 = 40;
/// A full data packet on the wire, bytes.
pub const WIRE: u64 = PAYLOAD + HEADER;

/// The bundled flow-size CDFs, for scenarios that name one.
pub fn workloads() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/ccgym/data/workloads")
}

/// Builds `scenario`, resolving CDF names against the bundled workloads.
pub fn build(scenario: &Value) -> Simulation {
    Simulation::from_json(&scenario.to_string(), &workloads()).expect("valid scenario")
}

/// Every byte sent was delivered, dropped or is still in flight.
pub fn conserved(sim: &Simulation) -> bool {
    let s = sim.summary();
    let c = &s["conservation"];
    let g = |k: &str| c[k].as_u64().unwrap();
    g("sent_bytes") == g("delivered_bytes") + g("dropped_bytes") + g("in_flight_bytes")
}

/// The index of the port called `name` (e.g. `"sw0->h0"`).
pub fn port(sim: &Simulation, name: &str) -> usize {
    (0..sim.ports().len() as u32).find(|&p| sim.port_name(p) == name).expect("port exists") as usize
}

/// A star of `hosts` at 10 Gb/s, 2 us links, with NDP's trimming switch
/// ports (8 full packets of data per port, no ECN), 50 ms, and `cc` hosts
/// (`ndp`, `eqds`, or another CC crossing trimming ports).
pub fn trimming_star(hosts: u32, flows: Value, cc: &str) -> Value {
    serde_json::json!({
        "duration": "50ms",
        "topology": {"kind": "star", "hosts": hosts, "link_rate": "10Gbps", "link_delay": "2us"},
        "switch": {"buffer_model": "static", "port_buffer": 8 * WIRE, "trim": true, "ecn": {"enabled": false}},
        "packets": {"payload": PAYLOAD, "header": HEADER},
        "cc": {"algorithm": cc},
        "workload": [{"kind": "flows", "flows": flows}],
    })
}

/// Builds `scenario` and runs it to its end.
pub fn run_to_end(scenario: &Value) -> Simulation {
    let mut sim = build(scenario);
    sim.run_until(u64::MAX);
    sim
}
