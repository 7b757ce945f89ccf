//! DCTCP in real simulations: queue held near K at full utilisation, alpha
//! tracking the marked fraction at the bottleneck.

use ccgym_sim::cc::Cc;
use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;

const K: f64 = 300_000.0; // HPCC-ns3's K at 100 Gb/s: 30 KB x 100/10

fn incast16(k: f64, cc: Value, at: &str) -> Value {
    json!({
        "duration": "20ms", "seed": 3,
        "topology": {"kind": "star", "hosts": 17, "link_rate": "100Gbps", "link_delay": "1us"},
        "switch": {"ecn": {"enabled": true, "kmin": k, "kmax": k, "pmax": 1.0, "at": at}},
        "host": {"max_outstanding": 0},
        "cc": cc,
        "metrics": {"window": ["5ms", "20ms"], "sample_interval": "10us"},
        "workload": [{"kind": "long", "receiver": 0}],
    })
}

fn bottleneck_marked_fraction(s: &Value) -> f64 {
    let port = s["bottleneck"]["id"].as_u64().unwrap();
    let entry = s["ports"].as_array().unwrap().iter().find(|p| p["id"].as_u64() == Some(port)).unwrap();
    let (mut seen, mut marked) = (0u64, 0u64);
    for bin in entry["ecn_profile"].as_array().unwrap() {
        seen += bin[2].as_u64().unwrap();
        marked += bin[3].as_u64().unwrap();
    }
    marked as f64 / seen as f64
}

fn alphas(sim: &Simulation) -> Vec<f64> {
    sim.flows()
        .iter()
        .map(|f| match &f.cc {
            Cc::Dctcp(d) => d.alpha,
            other => panic!("not DCTCP: {}", other.name()),
        })
        .collect()
}

/// Runs the 16-to-1 incast, sampling every flow's alpha every 50 us inside
/// the collection window; returns the simulation and the mean sampled alpha.
fn run_sampling_alpha(scenario: Value) -> (Simulation, f64) {
    let mut sim = Simulation::from_json(&scenario.to_string(), Path::new(".")).expect("valid scenario");
    let (a, b) = sim.window();
    let (mut sum, mut n) = (0.0, 0);
    let mut t = a;
    while t < b {
        sim.run_until(t);
        for x in alphas(&sim) {
            sum += x;
            n += 1;
        }
        t += 50_000_000;
    }
    sim.run_until(u64::MAX);
    (sim, sum / n as f64)
}

#[test]
fn sixteen_to_one_keeps_the_queue_near_k_at_full_utilisation_and_alpha_tracks_marks() {
    let wall = Instant::now();
    let (sim, mean_alpha) = run_sampling_alpha(incast16(K, json!({"algorithm": "dctcp"}), "enqueue"));
    let s = sim.summary();
    let util = s["bottleneck"]["utilization"].as_f64().unwrap();
    let q = s["bottleneck"]["queue_mean_kb"].as_f64().unwrap() * 1e3;
    let q99 = s["bottleneck"]["queue_p99_kb"].as_f64().unwrap() * 1e3;
    let jain = s["flows"]["jain"].as_f64().unwrap();
    let frac = bottleneck_marked_fraction(&s);
    let final_alpha = alphas(&sim).iter().sum::<f64>() / 16.0;
    let acked_frac: f64 =
        sim.flows().iter().map(|f| if let Cc::Dctcp(d) = &f.cc { d.marked_fraction() } else { 0.0 }).sum::<f64>()
            / 16.0;
    println!(
        "DCTCP 16-to-1, K {K} B: util {util:.4}, queue mean {q:.0} B ({:.2} K), p99 {q99:.0} B, Jain {jain:.4}, \
         drops {}, timeouts {}, marked fraction at the bottleneck {frac:.4}, mean alpha over the window \
         {mean_alpha:.4}, final mean alpha {final_alpha:.4}, ECE fraction of acked bytes {acked_frac:.4} \
         (wall {:.2} s)",
        q / K,
        s["network"]["drops_packets"],
        s["flows"]["timeouts"],
        wall.elapsed().as_secs_f64()
    );
    assert!(util >= 0.95, "utilisation {util}");
    assert!((0.5 * K..=2.0 * K).contains(&q), "mean queue {q} B vs K {K}");
    assert_eq!(s["network"]["drops_packets"].as_u64(), Some(0));
    assert!(jain > 0.95, "Jain {jain}");
    // alpha estimates the fraction of marked packets (spec 10).
    assert!(frac > 0.02, "the queue should sit at K and be marked: {frac}");
    assert!((mean_alpha / frac - 1.0).abs() < 0.15, "mean alpha {mean_alpha} vs marked fraction {frac}");
    assert!((final_alpha / frac - 1.0).abs() < 0.3, "final alpha {final_alpha} vs marked fraction {frac}");
}

#[test]
fn queue_follows_k() {
    // A smaller K moves the queue with it.
    for k in [60_000.0, 150_000.0] {
        let mut sim =
            Simulation::from_json(&incast16(k, json!({"algorithm": "dctcp"}), "enqueue").to_string(), Path::new("."))
                .unwrap();
        sim.run_until(u64::MAX);
        let s = sim.summary();
        let util = s["bottleneck"]["utilization"].as_f64().unwrap();
        let q = s["bottleneck"]["queue_mean_kb"].as_f64().unwrap() * 1e3;
        println!("DCTCP 16-to-1, K {k} B: util {util:.4}, queue mean {q:.0} B ({:.2} K)", q / k);
        assert!(util >= 0.95, "K {k}: utilisation {util}");
        assert!((0.5 * k..=2.0 * k).contains(&q), "K {k}: mean queue {q} B");
    }
}

#[test]
fn rate_variant_of_hpcc_ns3_holds_the_queue_with_go_back_n() {
    let mut sim = Simulation::from_json(
        &incast16(K, json!({"algorithm": "dctcp", "variant": "rate"}), "dequeue").to_string(),
        Path::new("."),
    )
    .unwrap();
    sim.run_until(u64::MAX);
    let s = sim.summary();
    let util = s["bottleneck"]["utilization"].as_f64().unwrap();
    let q = s["bottleneck"]["queue_mean_kb"].as_f64().unwrap() * 1e3;
    let jain = s["flows"]["jain"].as_f64().unwrap();
    let frac = bottleneck_marked_fraction(&s);
    let a = alphas(&sim).iter().sum::<f64>() / 16.0;
    println!(
        "DCTCP rate variant 16-to-1, K {K} B: util {util:.4}, queue mean {q:.0} B ({:.2} K), Jain {jain:.4}, \
         marked {frac:.4}, mean alpha {a:.4}",
        q / K
    );
    assert!(sim.flows().iter().all(|f| f.path.transport == ccgym_sim::cc::Transport::GoBackN));
    assert!(util >= 0.95, "utilisation {util}");
    assert!(q <= 2.0 * K, "mean queue {q} B");
}

/// 32-to-1 incast of 4 MB flows into a 100 KB drop-tail queue marking at
/// K = 60 KB (min RTO 1 ms).
fn lossy_incast(cc: &str) -> Simulation {
    let sc = json!({
        "duration": "200ms", "seed": 1,
        "topology": {"kind": "star", "hosts": 33, "link_rate": "100Gbps", "link_delay": "1us"},
        "switch": {"queue_cap": "100KB",
                   "ecn": {"enabled": true, "kmin": "60KB", "kmax": "60KB", "pmax": 1.0, "at": "enqueue"}},
        "host": {"max_outstanding": 0, "rto_min": "1ms"},
        "cc": {"algorithm": cc},
        "workload": [{"kind": "long", "receiver": 0, "size": "4MB"}],
    });
    let mut sim = Simulation::from_json(&sc.to_string(), Path::new(".")).unwrap();
    sim.run_until(u64::MAX);
    sim
}

#[test]
fn shallow_buffer_incast_loses_far_less_than_newreno_and_completes() {
    let d = lossy_incast("dctcp");
    let r = lossy_incast("newreno");
    let drops = |s: &Simulation| s.summary()["network"]["drops_packets"].as_u64().unwrap();
    let mut fin: Vec<f64> = d
        .flows()
        .iter()
        .map(|f| {
            assert_eq!(f.rcv.rcv_nxt, 4_000_000);
            f.snd.finished.expect("flow completes") as f64 * 1e-9
        })
        .collect();
    fin.sort_by(|a, b| a.total_cmp(b));
    let ideal = 32.0 * 4e6 * (1024.0 + 48.0) / 1024.0 * 8.0 / 100e9 * 1e3;
    println!(
        "32-to-1 incast, 100 KB buffer, K 60 KB: DCTCP drops {} (timeouts {}), NewReno drops {} (timeouts {}); \
         DCTCP completions {:.2}/{:.2}/{:.2} ms (min/p50/max; all bytes at line rate {ideal:.2} ms)",
        drops(&d),
        d.summary()["flows"]["timeouts"],
        drops(&r),
        r.summary()["flows"]["timeouts"],
        fin[0],
        fin[16],
        fin[31]
    );
    assert!(drops(&d) * 10 < drops(&r));
    assert!(fin[31] <= 1.01 * ideal, "completions {fin:?}");
}
