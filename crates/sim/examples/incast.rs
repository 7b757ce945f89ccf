//! Standard incast benchmark from Rust: `cargo run --release --example incast -- FLOWS [MS]`.
//! (The user-facing benchmark is `ccgym perf`; this one is for profiling the core alone.)

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flows: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(16);
    let ms: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let cc = args.get(3).cloned().unwrap_or_else(|| "line_rate".into());
    let (hosts, per) = match flows {
        16 => (16, 1),
        128 => (64, 2),
        1024 => (32, 32),
        8192 => (64, 128),
        n => (n.min(64), n.div_ceil(n.min(64))),
    };
    let json = format!(
        r#"{{"name": "perf", "duration": "{ms}ms",
            "topology": {{"kind": "star", "hosts": {}, "link_rate": "100Gbps", "link_delay": "1us"}},
            "switch": {{"pfc": {{"enabled": true}}}}, "cc": {{"algorithm": "{cc}"}},
            "workload": [{{"kind": "long", "receiver": 0, "flows_per_host": {per}}}],
            "metrics": {{"flow_series": false}}}}"#,
        hosts + 1
    );
    eprintln!(
        "sizeof Flow {} Packet {} Port {} Event {}",
        std::mem::size_of::<ccgym_sim::flow::Flow>(),
        std::mem::size_of::<ccgym_sim::packet::Packet>(),
        std::mem::size_of::<ccgym_sim::net::port::Port>(),
        std::mem::size_of::<ccgym_sim::engine::Event>()
    );
    let t0 = Instant::now();
    let mut sim = ccgym_sim::Simulation::from_json(&json, std::path::Path::new(".")).expect("scenario");
    let setup = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    sim.run_until(u64::MAX);
    let run = t1.elapsed().as_secs_f64();
    let s = sim.summary();
    println!(
        "flows {flows}: setup {setup:.3}s run {run:.3}s events {} hops {} ns/hop {:.1} ns/event {:.1} util {:.4} drops {} pauses {}",
        sim.event_count(),
        sim.packet_hops(),
        run * 1e9 / sim.packet_hops() as f64,
        run * 1e9 / sim.event_count() as f64,
        s["bottleneck"]["utilization"],
        s["network"]["drops_packets"],
        s["network"]["pfc_pauses"]
    );
}
#[allow(dead_code)]
fn sizes() {}
