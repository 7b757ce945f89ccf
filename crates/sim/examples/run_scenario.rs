//! Runs a scenario JSON from Rust, for profiling the core alone:
//! `cargo run --release --example run_scenario -- SCENARIO.json [UNTIL_US] [SUMMARY_OUT]`.
//! Prints events and packet-hops; with `SUMMARY_OUT`, writes the summary JSON
//! and the result tables there (to compare the results of two builds byte for byte).

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("scenario JSON path");
    let until_us: Option<u64> = args.get(2).and_then(|s| s.parse().ok());
    let json = std::fs::read_to_string(path).expect("readable scenario");
    let mut sim = ccgym_sim::Simulation::from_json(&json, std::path::Path::new(".")).expect("scenario");
    let t0 = Instant::now();
    sim.run_until(until_us.map_or(u64::MAX, |us| us * 1_000_000));
    let run = t0.elapsed().as_secs_f64();
    println!(
        "events {} hops {} run {run:.3}s ns/hop {:.1}",
        sim.event_count(),
        sim.packet_hops(),
        run * 1e9 / sim.packet_hops().max(1) as f64
    );
    if let Some(out) = args.get(3) {
        sim.run_until(u64::MAX);
        let s = sim.summary();
        let mut text = serde_json::to_string_pretty(&s).expect("summary serialises");
        for t in sim.tables() {
            text += &format!("\n{t:?}");
        }
        std::fs::write(out, text).expect("writable");
    }
}
