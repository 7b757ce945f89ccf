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
