//! TCP CUBIC in real simulations: regrowth along W(t) = C (t - K)^3 + W_max
//! after each loss, the beta cut, and two flows filling the 40 Mb/s, 120 ms
//! dumbbell.

use ccgym_sim::cc::{Cc, Cubic};
use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;

/// Two flows on the 40 Mb/s, 120 ms RTT dumbbell: 100 Mb/s access links,
/// 100-packet (150 KB) drop-tail buffer, MSS 1460, min RTO 200 ms, no ECN.
fn dumbbell40(cc: Value) -> Value {
    json!({
        "duration": "60s", "seed": 1,
        "topology": {"kind": "dumbbell", "left": 2, "right": 2, "link_rate": "100Mbps", "link_delay": "5ms",
                     "bottleneck_rate": "40Mbps", "bottleneck_delay": "50ms"},
        "switch": {"queue_cap": "150KB", "ecn": {"enabled": false}},
        "packets": {"payload": 1460, "header": 40},
        "host": {"max_outstanding": 0, "rto_min": "200ms", "cnp_interval": 0},
        "cc": cc,
        "metrics": {"window": ["12s", "60s"], "sample_interval": "10ms"},
        "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 2}, {"src": 1, "dst": 3}]}],
    })
}

/// Utilisation of the dumbbell's bottleneck (left -> right) over the window.
fn bottleneck_utilization(sim: &Simulation) -> f64 {
    let p = (0..sim.ports().len() as u32).find(|&p| sim.port_name(p) == "left->right").expect("dumbbell");
    sim.port_utilization(p)
}

fn cubic(sim: &Simulation, f: usize) -> &Cubic {
    match &sim.flows()[f].cc {
        Cc::Cubic(c) => c,
        other => panic!("not CUBIC: {}", other.name()),
    }
}

#[test]
fn two_flows_fill_the_40mbps_120ms_dumbbell() {
    let wall = Instant::now();
    let mut sim =
        Simulation::from_json(&dumbbell40(json!({"algorithm": "cubic"})).to_string(), Path::new(".")).unwrap();
    sim.run_until(u64::MAX);
    let s = sim.summary();
    let util = bottleneck_utilization(&sim);
    let jain = s["flows"]["jain"].as_f64().unwrap();
    let (a, b) = (cubic(&sim, 0), cubic(&sim, 1));
    println!(
        "CUBIC 2 flows, 40 Mb/s 120 ms dumbbell, window 12-60 s: util {util:.4}, Jain {jain:.4}, queue mean {:.1} KB, \
         drops {}, fast retransmits {}+{}, timeouts {}+{}, simulated 60 s in {:.2} s",
        s["ports"].as_array().unwrap().iter().find(|p| p["name"] == "left->right").unwrap()["queue_mean_kb"]
            .as_f64()
            .unwrap(),
        s["network"]["drops_packets"],
        a.tcp.fast_retransmits,
        b.tcp.fast_retransmits,
        a.tcp.timeouts,
        b.tcp.timeouts,
        wall.elapsed().as_secs_f64()
    );
    assert!(util >= 0.9, "utilisation {util}");
    assert!(jain > 0.98, "Jain {jain}");
    assert_eq!(a.tcp.timeouts + b.tcp.timeouts, 0);
}

/// Samples flow 0's window every 50 ms and checks it against the cubic curve
/// of its current epoch: concave up to the plateau W_max at t = K, convex after.
#[test]
fn window_regrows_along_the_cubic_curve_after_each_loss() {
    let mut sim =
        Simulation::from_json(&dumbbell40(json!({"algorithm": "cubic"})).to_string(), Path::new(".")).unwrap();
    let mss = 1460.0;
    let mut t = 0u64;
    let mut worst: f64 = 0.0;
    let mut checked = 0;
    let mut epochs: Vec<(u64, f64, f64)> = vec![]; // (start, K, W_max) of epochs with a plateau
    let (mut concave, mut convex) = (0, 0);
    let mut plateau_hits = 0;
    while !sim.run_until(t) {
        t += 50_000_000_000;
        let c = cubic(&sim, 0);
        let Some(e) = c.epoch else { continue };
        if c.tcp.in_recovery || c.tcp.in_slow_start() || c.k <= 0.0 {
            continue;
        }
        let dt = (sim.now() - e) as f64 * 1e-12;
        if dt < 0.5 {
            continue; // the first round trips of the epoch
        }
        if epochs.last().is_none_or(|x| x.0 != e) {
            epochs.push((e, c.k, c.origin));
        }
        let want = c.w_cubic(dt);
        let got = c.tcp.cwnd / mss;
        worst = worst.max((got - want).abs() / want);
        checked += 1;
        if dt < c.k {
            concave += 1;
        } else {
            convex += 1;
        }
        if (dt - c.k).abs() < 0.3 && (got / c.origin - 1.0).abs() < 0.02 {
            plateau_hits += 1;
        }
    }
    let c = cubic(&sim, 0);
    println!(
        "CUBIC regrowth: {} epochs with K > 0 (K {:?} s, W_max {:?} segments), {checked} samples ({concave} \
         concave, {convex} convex), largest deviation from W(t) {:.2}%, {plateau_hits} samples on the plateau, \
         fast convergence: last W_max {:.1}, cwnd_prior {:.1}",
        epochs.len(),
        epochs.iter().map(|x| (x.1 * 100.0).round() / 100.0).collect::<Vec<_>>(),
        epochs.iter().map(|x| x.2.round()).collect::<Vec<_>>(),
        worst * 100.0,
        c.w_max,
        c.cwnd_prior
    );
    assert!(epochs.len() >= 3, "epochs {}", epochs.len());
    assert!(concave >= 30 && convex >= 10, "concave {concave} convex {convex}");
    assert!(worst < 0.03, "window strays {:.2}% from W(t)", worst * 100.0);
    assert!(plateau_hits >= 3, "the window sits at W_max around t = K");
    // K = cbrt((W_max - cwnd at the epoch start) / C): the epoch starts at beta
    // x the window at the loss, and fast convergence lowers every other W_max.
    for &(_, k, w_max) in &epochs {
        assert!(k > 3.0 && k < 7.0, "K {k} s for W_max {w_max}");
    }
}

/// On a small drop-tail queue with a ~1 ms RTT, the cubic curve is far slower
/// than Reno (K is seconds): CUBIC runs in its Reno-friendly region, cutting
/// by beta = 0.7 and regrowing at 3(1 - beta)/(1 + beta) MSS per RTT.
#[test]
fn beta_sawtooth_in_the_reno_friendly_region() {
    let sc = json!({
        "duration": "1s", "seed": 1,
        "topology": {"kind": "dumbbell", "left": 1, "right": 1, "link_rate": "10Gbps", "link_delay": "100us",
                     "bottleneck_rate": "1Gbps", "bottleneck_delay": "100us"},
        "switch": {"queue_cap": "75KB", "ecn": {"enabled": false}},
        "packets": {"payload": 1460, "header": 40},
        "host": {"max_outstanding": 0, "rto_min": "10ms", "cnp_interval": 0},
        "cc": {"algorithm": "cubic"},
        "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1}]}],
    });
    let mut sim = Simulation::from_json(&sc.to_string(), Path::new(".")).unwrap();
    let mut samples: Vec<(f64, f64)> = vec![];
    let mut t = 0u64;
    while !sim.run_until(t) {
        if t >= 100_000_000_000 && sim.flows()[0].tcp.recover.is_none() {
            samples.push((t as f64 * 1e-12, sim.flows()[0].ctl.window as f64 / 1460.0));
        }
        t += 500_000_000;
    }
    let c_pkts = 1e9 / 8.0 / 1500.0;
    let (mut cuts, mut slopes) = (vec![], vec![]);
    let mut last: Option<(f64, f64)> = None;
    for w in samples.windows(2) {
        let ((t0, a), (t1, b)) = (w[0], w[1]);
        if b < 0.85 * a {
            if let Some((tt, wt)) = last {
                // Queue never empty: RTT = W / C, so +g MSS per RTT makes W^2 grow by 2 g C per second.
                slopes.push((a * a - wt * wt) / (2.0 * (t0 - tt)) / c_pkts);
            }
            cuts.push(b / a);
            last = Some((t1, b));
        }
    }
    println!(
        "CUBIC on a small queue: {} cuts, ratios {:.3}..{:.3}, regrowth {:.3}..{:.3} MSS per RTT (Reno-friendly \
         0.529)",
        cuts.len(),
        cuts.iter().cloned().fold(f64::MAX, f64::min),
        cuts.iter().cloned().fold(0.0, f64::max),
        slopes.iter().cloned().fold(f64::MAX, f64::min),
        slopes.iter().cloned().fold(0.0, f64::max)
    );
    assert!(cuts.len() >= 10, "cuts {}", cuts.len());
    for r in &cuts {
        assert!((0.66..=0.74).contains(r), "cut ratio {r}");
    }
    for g in &slopes {
        assert!((0.45..=0.65).contains(g), "regrowth {g} MSS per RTT");
    }
}

#[test]
fn lossy_incast_recovers_every_byte() {
    // 32-to-1 incast of 4 MB flows into a 100 KB drop-tail queue at 100 Gb/s, min RTO 1 ms.
    let sc = json!({
        "duration": "200ms", "seed": 1,
        "topology": {"kind": "star", "hosts": 33, "link_rate": "100Gbps", "link_delay": "1us"},
        "switch": {"queue_cap": "100KB", "ecn": {"enabled": false}},
        "host": {"max_outstanding": 0, "rto_min": "1ms"},
        "cc": {"algorithm": "cubic"},
        "workload": [{"kind": "long", "receiver": 0, "size": "4MB"}],
    });
    let mut sim = Simulation::from_json(&sc.to_string(), Path::new(".")).unwrap();
    sim.run_until(u64::MAX);
    let mut fin: Vec<f64> = sim
        .flows()
        .iter()
        .map(|f| {
            assert_eq!(f.rcv.rcv_nxt, 4_000_000);
            f.snd.finished.expect("flow completes") as f64 * 1e-9
        })
        .collect();
    fin.sort_by(|a, b| a.total_cmp(b));
    let s = sim.summary();
    let ideal = 32.0 * 4e6 * (1024.0 + 48.0) / 1024.0 * 8.0 / 100e9 * 1e3;
    let timeouts: Vec<u64> = sim.flows().iter().map(|f| f.stats.timeouts).collect();
    println!(
        "CUBIC 32-to-1 lossy incast: completions {:.2}/{:.2}/{:.2} ms (min/p90/max; all bytes at line rate \
         {ideal:.2} ms), drops {}, timeouts per flow {timeouts:?}",
        fin[0], fin[28], fin[31], s["network"]["drops_packets"]
    );
    // Most flows finish with the bulk; a flow hit by repeated timeouts (1, 2,
    // 4 ms backed off) trails.
    assert!(fin[28] <= 1.01 * ideal, "completions {fin:?}");
    assert!(fin[31] <= 2.0 * ideal, "completions {fin:?}");
}
