//! TCP NewReno in real simulations: the AIMD sawtooth on a small drop-tail
//! queue, and two flows on the classic 40 Mb/s, 120 ms dumbbell.

use ccgym_sim::cc::Cc;
use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;

/// One flow through a 1 Gb/s bottleneck fed by 10 Gb/s links, 100 us per
/// link (base RTT 615 us, BDP ~52 packets), drop-tail queue of 50 packets.
fn small_queue(cc: &str) -> Value {
    json!({
        "duration": "1s", "seed": 1,
        "topology": {"kind": "dumbbell", "left": 1, "right": 1, "link_rate": "10Gbps", "link_delay": "100us",
                     "bottleneck_rate": "1Gbps", "bottleneck_delay": "100us"},
        "switch": {"queue_cap": "75KB", "ecn": {"enabled": false}},
        "packets": {"payload": 1460, "header": 40},
        "host": {"max_outstanding": 0, "rto_min": "10ms", "cnp_interval": 0},
        "cc": {"algorithm": cc},
        "metrics": {"window": ["200ms", "1s"]},
        "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1}]}],
    })
}

/// Two flows on the 40 Mb/s, 120 ms RTT dumbbell: 100 Mb/s access links,
/// 100-packet (150 KB) drop-tail buffer, MSS 1460, min RTO 200 ms, no ECN.
pub fn dumbbell40(cc: &str) -> Value {
    json!({
        "duration": "60s", "seed": 1,
        "topology": {"kind": "dumbbell", "left": 2, "right": 2, "link_rate": "100Mbps", "link_delay": "5ms",
                     "bottleneck_rate": "40Mbps", "bottleneck_delay": "50ms"},
        "switch": {"queue_cap": "150KB", "ecn": {"enabled": false}},
        "packets": {"payload": 1460, "header": 40},
        "host": {"max_outstanding": 0, "rto_min": "200ms", "cnp_interval": 0},
        "cc": {"algorithm": cc},
        "metrics": {"window": ["12s", "60s"], "sample_interval": "10ms"},
        "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 2}, {"src": 1, "dst": 3}]}],
    })
}

/// Utilisation of synchronised AIMD (both flows halve together) between a
/// total window of `hi` packets and `hi/2`, with a pipe of `bdp` packets:
/// time-weighted, with the round trip growing with the queue above the pipe.
fn synchronised_aimd_utilisation(bdp: f64, hi: f64) -> f64 {
    let lo = hi / 2.0;
    let delivered = (hi * hi - lo * lo) / 2.0;
    let time = bdp * (bdp - lo) + (hi * hi - bdp * bdp) / 2.0;
    delivered / time
}

/// Utilisation of the dumbbell's bottleneck (left -> right) over the window.
fn bottleneck_utilization(sim: &Simulation) -> f64 {
    let p = (0..sim.ports().len() as u32).find(|&p| sim.port_name(p) == "left->right").expect("dumbbell");
    sim.port_utilization(p)
}

fn newreno(sim: &Simulation, f: usize) -> &ccgym_sim::cc::NewReno {
    match &sim.flows()[f].cc {
        Cc::NewReno(r) => r,
        other => panic!("not NewReno: {}", other.name()),
    }
}

#[test]
fn sawtooth_of_additive_increase_and_halving_on_a_small_drop_tail_queue() {
    let wall = Instant::now();
    let mut sim = Simulation::from_json(&small_queue("newreno").to_string(), Path::new(".")).unwrap();
    let mss = 1460.0;
    // Window samples every 0.5 ms outside fast recovery (where the window is
    // inflated by duplicate ACKs).
    let mut samples: Vec<(f64, f64)> = vec![];
    let mut t = 0u64;
    while !sim.run_until(t) {
        if t >= 200_000_000_000 && sim.flows()[0].tcp.recover.is_none() {
            samples.push((t as f64 * 1e-12, sim.flows()[0].ctl.window as f64 / mss));
        }
        t += 500_000_000;
    }
    // Cycles: a drop of more than 30% between consecutive samples.
    let mut peaks = vec![];
    let mut troughs = vec![];
    let mut slopes = vec![];
    let mut last_trough: Option<(f64, f64)> = None;
    // The queue never empties (troughs stay above the ~52-packet pipe), so the
    // round trip is W / C and +1 MSS per RTT means dW/dt = C / W: W^2 grows
    // by 2 C per second, C in packets per second.
    let c_pkts = 1e9 / 8.0 / 1500.0;
    for w in samples.windows(2) {
        let ((t0, a), (_, b)) = (w[0], w[1]);
        if b < 0.7 * a {
            if let Some((tt, wt)) = last_trough {
                slopes.push((a * a - wt * wt) / (2.0 * (t0 - tt)) / c_pkts);
            }
            peaks.push(a);
            troughs.push(b);
            last_trough = Some((w[1].0, b));
        }
    }
    let util = bottleneck_utilization(&sim);
    let r = newreno(&sim, 0);
    println!(
        "NewReno sawtooth: {} cycles after 200 ms, peaks {:.1}..{:.1} segments, troughs {:.1}..{:.1}, \
         growth {:.3}..{:.3} MSS per RTT, util {util:.4}, fast retransmits {}, timeouts {} (wall {:.2} s)",
        peaks.len(),
        peaks.iter().cloned().fold(f64::MAX, f64::min),
        peaks.iter().cloned().fold(0.0, f64::max),
        troughs.iter().cloned().fold(f64::MAX, f64::min),
        troughs.iter().cloned().fold(0.0, f64::max),
        slopes.iter().cloned().fold(f64::MAX, f64::min),
        slopes.iter().cloned().fold(0.0, f64::max),
        r.tcp.fast_retransmits,
        r.tcp.timeouts,
        wall.elapsed().as_secs_f64()
    );
    assert!(peaks.len() >= 8, "cycles: {}", peaks.len());
    // The pipe holds ~52 packets (1 Gb/s x 615 us / 1500 B) and the queue 50:
    // losses come at ~102 segments and halve the window.
    for (p, q) in peaks.iter().zip(&troughs) {
        assert!((95.0..=110.0).contains(p), "peak {p}");
        assert!((0.4..=0.6).contains(&(q / p)), "trough {q} after peak {p}");
    }
    for g in &slopes {
        assert!((0.9..=1.1).contains(g), "additive increase {g} MSS per RTT");
    }
    assert!(slopes.len() >= 5);
    assert_eq!(r.tcp.timeouts, 0);
    assert!(util > 0.9, "utilisation {util}");
}

#[test]
fn two_flows_on_the_40mbps_120ms_dumbbell() {
    let wall = Instant::now();
    let mut sim = Simulation::from_json(&dumbbell40("newreno").to_string(), Path::new(".")).unwrap();
    sim.run_until(u64::MAX);
    let s = sim.summary();
    let util = bottleneck_utilization(&sim);
    let jain = s["flows"]["jain"].as_f64().unwrap();
    // Synchronised halving between (BDP + buffer) and half of it, in 1500-B packets.
    let bdp = 40e6 * sim.flows()[0].ctl.base_rtt as f64 * 1e-12 / 8.0 / 1500.0;
    let model = synchronised_aimd_utilisation(bdp, bdp + 100.0);
    let (a, b) = (newreno(&sim, 0), newreno(&sim, 1));
    println!(
        "NewReno 2 flows, 40 Mb/s 120 ms dumbbell, window 12-60 s: util {util:.4} (synchronised-AIMD model \
         {model:.4}, BDP {bdp:.0} packets), Jain {jain:.4}, drops {}, fast retransmits {}+{}, timeouts {}+{}, \
         simulated 60 s in {:.2} s",
        s["network"]["drops_packets"],
        a.tcp.fast_retransmits,
        b.tcp.fast_retransmits,
        a.tcp.timeouts,
        b.tcp.timeouts,
        wall.elapsed().as_secs_f64()
    );
    // A 100-packet buffer is a quarter of the 402-packet pipe: two NewReno
    // flows that lose together cannot keep it full while their windows climb
    // back from half; the fluid model puts the ceiling at ~89%.
    assert!(util >= 0.85, "utilisation {util}");
    assert!((util - model).abs() < 0.04, "utilisation {util} vs model {model}");
    assert!(jain > 0.98, "Jain {jain}");
}

/// 32-to-1 incast of 4 MB flows into a 100 KB drop-tail queue at 100 Gb/s
/// (min RTO 1 ms): heavy loss, recovered by fast retransmit and timeouts.
pub fn lossy_incast(cc: &str, ecn: bool) -> Simulation {
    let sc = json!({
        "duration": "200ms", "seed": 1,
        "topology": {"kind": "star", "hosts": 33, "link_rate": "100Gbps", "link_delay": "1us"},
        "switch": {"queue_cap": "100KB",
                   "ecn": {"enabled": ecn, "kmin": "60KB", "kmax": "60KB", "pmax": 1.0, "at": "enqueue"}},
        "host": {"max_outstanding": 0, "rto_min": "1ms"},
        "cc": {"algorithm": cc},
        "workload": [{"kind": "long", "receiver": 0, "size": "4MB"}],
    });
    let mut sim = Simulation::from_json(&sc.to_string(), Path::new(".")).unwrap();
    sim.run_until(u64::MAX);
    sim
}

/// Completion times (ms), sorted, after checking that every flow delivered
/// every byte.
pub fn completions(sim: &Simulation) -> Vec<f64> {
    let mut fin: Vec<f64> = sim
        .flows()
        .iter()
        .map(|f| {
            assert_eq!(f.rcv.rcv_nxt, 4_000_000, "flow {}->{} delivered {}", f.path.src, f.path.dst, f.rcv.rcv_nxt);
            f.snd.finished.expect("flow completes") as f64 * 1e-9
        })
        .collect();
    fin.sort_by(|a, b| a.total_cmp(b));
    fin
}

#[test]
fn lossy_incast_recovers_every_byte_and_keeps_the_link_busy() {
    let sim = lossy_incast("newreno", false);
    let fin = completions(&sim);
    let s = sim.summary();
    // All 128 MB (plus headers) at 100 Gb/s.
    let ideal = 32.0 * 4e6 * (1024.0 + 48.0) / 1024.0 * 8.0 / 100e9 * 1e3;
    let drops = s["network"]["drops_packets"].as_u64().unwrap();
    println!(
        "NewReno 32-to-1 lossy incast: completions {:.2}/{:.2}/{:.2} ms (min/p90/max; all bytes at line rate \
         {ideal:.2} ms), drops {drops}, retransmitted {} B, timeouts {}",
        fin[0], fin[28], fin[31], s["flows"]["retransmitted_bytes"], s["flows"]["timeouts"]
    );
    assert!(drops > 1000);
    assert!(fin[28] <= 1.01 * ideal && fin[31] <= 1.1 * ideal, "completions {fin:?}");
}

#[test]
fn ecn_option_reacts_to_marks_instead_of_losses() {
    let plain = lossy_incast("newreno", true);
    let sc = json!({
        "duration": "200ms", "seed": 1,
        "topology": {"kind": "star", "hosts": 33, "link_rate": "100Gbps", "link_delay": "1us"},
        "switch": {"queue_cap": "100KB",
                   "ecn": {"enabled": true, "kmin": "60KB", "kmax": "60KB", "pmax": 1.0, "at": "enqueue"}},
        "host": {"max_outstanding": 0, "rto_min": "1ms"},
        "cc": {"algorithm": "newreno", "ecn": true},
        "workload": [{"kind": "long", "receiver": 0, "size": "4MB"}],
    });
    let mut sim = Simulation::from_json(&sc.to_string(), Path::new(".")).unwrap();
    sim.run_until(u64::MAX);
    completions(&sim);
    let (d0, d1) = (
        plain.summary()["network"]["drops_packets"].as_u64().unwrap(),
        sim.summary()["network"]["drops_packets"].as_u64().unwrap(),
    );
    let cuts: u64 = (0..32).map(|i| newreno(&sim, i).tcp.cuts).sum();
    println!("NewReno 32-to-1 with marks at 60 KB: drops {d0} ignoring ECN, {d1} with ecn = true ({cuts} ECN cuts)");
    assert!(cuts > 100);
    assert!(d1 * 5 < d0, "drops {d1} with ECN vs {d0} without");
}
