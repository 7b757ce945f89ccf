//! Copa and BBR v1 in real simulations: the characteristic behaviours of the
//! spec `wan_cc.md` 1.9 (Copa) and 2.7 (BBR) on a WAN dumbbell.
//!
//! The network: n senders and n receivers on a dumbbell whose access links run
//! at 1 Gb/s with no delay and whose middle link is the bottleneck (12 Mb/s
//! unless said, 30 ms one way, so the minimum RTT is 60 ms and one BDP is
//! 90 KB = 60 packets of 1,500 bytes), with a deep drop-tail buffer (1 MB).

use ccgym_sim::cc::{BbrMode, Cc};
use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

const MS: u64 = 1_000_000_000;
const SEC: u64 = 1_000 * MS;
const PKT: f64 = 1_500.0;
/// Payload share of a 1,500-byte packet (1,460 B of payload).
const PAYLOAD: f64 = 1_460.0 / 1_500.0;

fn wan(flows: usize, cc: Value, duration: &str, window: &str) -> Value {
    let list: Vec<Value> = (0..flows).map(|i| json!({"src": i, "dst": flows + i})).collect();
    json!({
        "duration": duration, "seed": 1,
        "topology": {"kind": "dumbbell", "left": flows, "right": flows, "link_rate": "1Gbps", "link_delay": "0s",
                     "bottleneck_rate": "12Mbps", "bottleneck_delay": "30ms"},
        "switch": {"queue_cap": "1MB", "ecn": {"enabled": false}, "pfc": {"enabled": false}},
        "host": {"loss_recovery": "tcp", "rto": "1s", "rto_min": "200ms", "max_outstanding": 0, "burst": 1500},
        "packets": {"payload": 1460, "header": 40},
        "cc": cc,
        "metrics": {"window": [window, "end"], "sample_interval": "10ms"},
        "workload": [{"kind": "flows", "flows": list}],
    })
}

fn build(s: &Value) -> Simulation {
    Simulation::from_json(&s.to_string(), Path::new(".")).unwrap()
}

fn bottleneck(sim: &Simulation) -> u32 {
    (0..sim.ports().len() as u32).find(|&p| sim.port_name(p) == "left->right").expect("dumbbell")
}

/// Bottleneck utilisation and mean queue (packets) over the window.
fn util_and_queue(sim: &Simulation) -> (f64, f64) {
    let s = sim.summary();
    let p = s["ports"].as_array().unwrap().iter().find(|p| p["name"] == "left->right").unwrap();
    (sim.port_utilization(bottleneck(sim)), p["queue_mean_kb"].as_f64().unwrap() * 1e3 / PKT)
}

/// The bottleneck's sampled queue (bytes) at each sample time from `from` on.
fn queue_samples(sim: &Simulation, from: u64) -> Vec<(u64, f64)> {
    let series = sim.series();
    let col = series.ports.iter().position(|&p| p == bottleneck(sim)).expect("sampled");
    let n = series.ports.len();
    series
        .times
        .iter()
        .enumerate()
        .filter(|(_, &t)| t >= from)
        .map(|(k, &t)| (t, series.queue[k * n + col] as f64))
        .collect()
}

/// Mean delivery rate (Gb/s) of flow `f` in the samples from `from` on.
fn mean_rate(sim: &Simulation, f: usize, from: u64) -> f64 {
    let series = sim.series();
    let n = sim.flows().len();
    let rates: Vec<f64> = series
        .times
        .iter()
        .enumerate()
        .filter(|(_, &t)| t >= from)
        .map(|(k, _)| series.flow_gbps[k * n + f] as f64)
        .collect();
    rates.iter().sum::<f64>() / rates.len().max(1) as f64
}

fn copa(sim: &Simulation, f: usize) -> &ccgym_sim::cc::Copa {
    match &sim.flows()[f].cc {
        Cc::Copa(c) => c,
        other => panic!("not Copa: {}", other.name()),
    }
}

fn bbr(sim: &Simulation, f: usize) -> &ccgym_sim::cc::Bbr {
    match &sim.flows()[f].cc {
        Cc::Bbr(b) => b,
        other => panic!("not BBR: {}", other.name()),
    }
}

// ---------------------------------------------------------------- Copa (1.9)

/// 1.9 tests 1 and 2: one flow keeps a standing queue of a few times 1/delta
/// packets, fills the link, and the queue empties in every 5-RTT window;
/// halving delta roughly doubles the queue.
#[test]
fn copa_keeps_about_one_over_delta_packets_queued_and_empties_the_queue() {
    let mut queues = vec![];
    for delta in [0.5, 0.25] {
        let mut sim = build(&wan(1, json!({"algorithm": "copa", "delta": delta}), "20s", "5s"));
        sim.run_until(u64::MAX);
        let (util, queue) = util_and_queue(&sim);
        let c = copa(&sim, 0);
        println!("Copa delta {delta}: util {util:.3}, mean queue {queue:.2} packets, velocity max {}", c.max_velocity);
        assert!(util > 0.9, "delta {delta}: utilisation {util}");
        let target = 1.0 / delta;
        assert!(queue > 0.5 * target && queue < 4.0 * target, "delta {delta}: mean queue {queue} packets");
        // Every 5 RTTs (300 ms) the queue is nearly empty at least once.
        let q = queue_samples(&sim, 5 * SEC);
        for w in q.chunks_exact(30) {
            let min = w.iter().map(|&(_, b)| b).fold(f64::INFINITY, f64::min);
            assert!(min <= 2.0 * PKT, "delta {delta}: the queue stayed at {min} B from {} ms", w[0].0 / MS);
        }
        queues.push(queue);
    }
    let ratio = queues[1] / queues[0];
    assert!((1.4..3.0).contains(&ratio), "halving delta: queue x {ratio}");
}

/// 1.9 test 3: same-RTT flows converge to equal shares; total queue ~ n/delta.
#[test]
fn copa_flows_share_the_link_equally() {
    let mut sim = build(&wan(3, json!({"algorithm": "copa"}), "30s", "10s"));
    sim.run_until(u64::MAX);
    let s = sim.summary();
    let jain = s["flows"]["jain"].as_f64().unwrap();
    let (util, queue) = util_and_queue(&sim);
    println!("Copa 3 flows: Jain {jain:.4}, util {util:.3}, queue {queue:.1} packets");
    assert!(jain > 0.95, "Jain {jain}");
    assert!(util > 0.9, "utilisation {util}");
    assert!(queue > 2.0 && queue < 24.0, "queue {queue} packets for n/delta = 6");
}

/// 1.9 test 4: near equilibrium v stays 1 (cwnd moves ~1/delta packets per
/// RTT); after the capacity quadruples, the direction holds and v doubles.
#[test]
fn copa_velocity_is_one_at_equilibrium_and_grows_after_a_capacity_step() {
    let mut s = wan(1, json!({"algorithm": "copa"}), "16s", "2s");
    s["link"] = json!([{"from": "left", "to": "right", "schedule": [{"at": "10s", "rate": "96Mbps"}]}]);
    let mut sim = build(&s);
    let (mut at_one, mut samples) = (0, 0);
    let mut t = 4 * SEC;
    while t < 10 * SEC {
        sim.run_until(t);
        samples += 1;
        at_one += (copa(&sim, 0).velocity == 1.0) as u32;
        t += 10 * MS;
    }
    let mut after: f64 = 0.0;
    while t < 16 * SEC {
        sim.run_until(t);
        after = after.max(copa(&sim, 0).velocity);
        t += 10 * MS;
    }
    println!("Copa velocity: 1 in {at_one}/{samples} samples at equilibrium (4-10 s); up to {after} after the step");
    assert!(at_one as f64 >= 0.8 * samples as f64, "v = 1 in only {at_one} of {samples} samples");
    assert!(after >= 8.0, "max velocity after the step {after}");
    // And the flow gets to the new rate within the 6 s.
    let rate = mean_rate(&sim, 0, 15 * SEC + 500 * MS);
    assert!(rate * 1e3 > 0.8 * 96.0 * PAYLOAD, "rate in the last 0.5 s: {} Mb/s", rate * 1e3);
}

/// 1.9 test 8: 2 % Bernoulli loss does not collapse default-mode throughput
/// (CUBIC's does). The core's TCP has no SACK, so a lost retransmission costs
/// a timeout: the share kept is below Copa's with SACK.
#[test]
fn copa_throughput_survives_random_loss() {
    let run = |cc: &str| {
        let mut s = wan(1, json!({"algorithm": cc}), "20s", "5s");
        s["link"] = json!([{"from": "left", "to": "right", "loss": 0.02}]);
        let mut sim = build(&s);
        sim.run_until(u64::MAX);
        sim.summary()["flows"]["throughput_gbps_mean"].as_f64().unwrap() * 1e3
    };
    let (copa, cubic) = (run("copa"), run("cubic"));
    println!("2 % loss: Copa {copa:.2} Mb/s, CUBIC {cubic:.2} Mb/s");
    assert!(copa > 0.6 * 12.0 * PAYLOAD, "Copa {copa} Mb/s");
    assert!(copa > 2.5 * cubic, "Copa {copa} vs CUBIC {cubic}");
}

/// 1.9 test 7: in `auto` mode Copa alone stays in default mode; next to a
/// CUBIC flow in a deep buffer it goes competitive and gets a real share
/// (default mode starves), and it returns to default mode (delta reset) when
/// the competitor leaves.
#[test]
fn copa_competitive_mode_holds_its_own_against_cubic() {
    let two = |mode: &str| {
        let mut s = wan(2, json!({"algorithm": "copa", "mode": mode}), "40s", "5s");
        s["workload"] = json!([{"kind": "flows", "flows": [
            {"src": 0, "dst": 2},
            {"src": 1, "dst": 3, "stop": "25s", "cc": {"algorithm": "cubic"}},
        ]}]);
        // Five BDPs of buffer, which CUBIC fills.
        s["switch"]["queue_cap"] = json!("450KB");
        let mut sim = build(&s);
        // Time in competitive mode while CUBIC runs (sampled every 10 ms from 5 s).
        let (mut competitive, mut samples, mut first) = (0, 0, None);
        let mut t = 0;
        while t < 25 * SEC {
            sim.run_until(t);
            if copa(&sim, 0).competitive {
                first.get_or_insert(t);
            }
            if t >= 5 * SEC {
                samples += 1;
                competitive += copa(&sim, 0).competitive as u32;
            }
            t += 10 * MS;
        }
        println!("Copa {mode}: first competitive at {:?} ms", first.map(|t| t / MS));
        let (a, b) = (mean_rate(&sim, 0, 5 * SEC), mean_rate(&sim, 1, 5 * SEC));
        (sim, a / (a + b), competitive as f64 / samples as f64)
    };
    let (_, share_default, _) = two("default");
    let (mut sim, share_auto, competitive) = two("auto");
    println!(
        "Copa vs CUBIC: share {share_default:.3} in default mode, {share_auto:.3} in auto ({} entries, competitive \
         {:.0} % of the time)",
        copa(&sim, 0).competitive_entries,
        competitive * 100.0
    );
    assert!(competitive > 0.6, "competitive {competitive}");
    assert!(share_auto > 0.3 && share_auto > 2.0 * share_default, "{share_default} -> {share_auto}");
    sim.run_until(u64::MAX);
    let c = copa(&sim, 0);
    assert!(!c.competitive && c.delta == 0.5, "after CUBIC left: competitive {} delta {}", c.competitive, c.delta);
    // Alone from the start it never leaves default mode.
    let mut alone = build(&wan(1, json!({"algorithm": "copa", "mode": "auto"}), "20s", "5s"));
    alone.run_until(u64::MAX);
    assert_eq!(copa(&alone, 0).competitive_entries, 0);
}

// ----------------------------------------------------------------- BBR (2.7)

/// 2.7 tests 1 and 2: Startup finds the bottleneck, Drain empties its queue,
/// BtlBw converges to the link rate and the flow delivers ~99 % of it.
#[test]
fn bbr_bandwidth_estimate_converges_to_the_link_rate() {
    let mut sim = build(&wan(1, json!({"algorithm": "bbr"}), "20s", "5s"));
    sim.run_until(3 * SEC);
    assert_eq!(bbr(&sim, 0).mode, BbrMode::ProbeBw);
    assert!(bbr(&sim, 0).filled_pipe);
    sim.run_until(u64::MAX);
    let b = bbr(&sim, 0);
    let bw = b.btl_bw_bps().unwrap() / 1e6;
    let link = 12.0 * PAYLOAD; // payload Mb/s
    let (util, queue) = util_and_queue(&sim);
    println!("BBR: BtlBw {bw:.3} Mb/s (payload capacity {link:.3}), util {util:.3}, queue {queue:.1} packets");
    assert!((bw / link - 1.0).abs() < 0.03, "BtlBw {bw} Mb/s");
    assert!(util > 0.95, "utilisation {util}");
    // The queue Startup built (up to ~1.9 BDP) is gone: the standing queue is a small part of one BDP.
    assert!(queue < 15.0, "mean queue {queue} packets (one BDP = 60)");
}

/// 2.7 test 3: ProbeBW's pacing gains follow 1.25, 0.75, then six phases at
/// 1, each about RTprop long, a cycle ~ 8 RTprop.
#[test]
fn bbr_cycles_through_eight_gain_phases() {
    let mut sim = build(&wan(1, json!({"algorithm": "bbr"}), "8s", "0s"));
    sim.run_until(3 * SEC);
    let mut gains: Vec<(u64, f64)> = vec![];
    let mut t = 3 * SEC;
    while t < 8 * SEC {
        sim.run_until(t);
        let g = bbr(&sim, 0).pacing_gain;
        if gains.last().is_none_or(|&(_, last)| last != g) {
            gains.push((t, g));
        }
        t += MS;
    }
    // Phase changes: every 1.25 is followed by 0.75, then 1.0, which lasts
    // six phases (no visible change between equal gains): about 6 RTprop.
    let starts: Vec<u64> = gains.iter().filter(|&&(_, g)| g == 1.25).map(|&(t, _)| t).collect();
    assert!(starts.len() >= 8, "{gains:?}");
    for w in gains.windows(3) {
        if w[0].1 == 1.25 {
            assert_eq!((w[1].1, w[2].1), (0.75, 1.0), "{gains:?}");
            let probe = (w[1].0 - w[0].0) as f64 / MS as f64;
            let drain = (w[2].0 - w[1].0) as f64 / MS as f64;
            assert!((55.0..80.0).contains(&probe), "1.25 phase {probe} ms");
            assert!(drain <= 75.0, "0.75 phase {drain} ms");
        }
    }
    let cycles: Vec<f64> = starts.windows(2).map(|w| (w[1] - w[0]) as f64 / MS as f64).collect();
    let mean = cycles.iter().sum::<f64>() / cycles.len() as f64;
    println!("BBR gain cycle: {} cycles of mean {mean:.1} ms (8 RTprop = 480 ms)", cycles.len());
    assert!((440.0..560.0).contains(&mean), "cycle {mean} ms: {cycles:?}");
}

/// 2.7 test 4: ProbeRTT every ~10 s, cwnd 4 packets for at least 200 ms.
#[test]
fn bbr_probes_rtt_every_ten_seconds() {
    let mut sim = build(&wan(1, json!({"algorithm": "bbr"}), "35s", "0s"));
    let mut t = 0;
    let mut min_cwnd_in_probe = f64::INFINITY;
    let mut probe_time = 0;
    while t < 35 * SEC {
        sim.run_until(t);
        let b = bbr(&sim, 0);
        if b.mode == BbrMode::ProbeRtt {
            min_cwnd_in_probe = min_cwnd_in_probe.min(b.cwnd);
            probe_time += 5 * MS;
            assert!(b.cwnd <= 4.0 * 1460.0);
        }
        t += 5 * MS;
    }
    let times: Vec<f64> = bbr(&sim, 0).probe_rtt_times.iter().map(|&t| t as f64 / SEC as f64).collect();
    println!("BBR ProbeRTT at {times:?} s; {} ms in ProbeRTT", probe_time / MS);
    assert!(times.len() == 3, "{times:?}");
    assert!((10.0..11.0).contains(&times[0]), "{times:?}");
    for w in times.windows(2) {
        assert!((10.0..10.8).contains(&(w[1] - w[0])), "{times:?}");
    }
    // About 200 ms plus the time to drain to 4 packets, each time.
    assert!((600..1_200).contains(&(probe_time / MS)), "{} ms", probe_time / MS);
}

/// 2.7 test 5: with 1 % random loss BBR keeps most of the link (no
/// multiplicative cut), where CUBIC does not. (Without SACK in the core, each
/// lost retransmission costs a timeout, so "link x (1 - p)" is not reached.)
#[test]
fn bbr_tolerates_random_loss() {
    let run = |cc: &str| {
        let mut s = wan(1, json!({"algorithm": cc}), "20s", "5s");
        s["link"] = json!([{"from": "left", "to": "right", "loss": 0.01}]);
        let mut sim = build(&s);
        sim.run_until(u64::MAX);
        sim.summary()["flows"]["throughput_gbps_mean"].as_f64().unwrap() * 1e3
    };
    let (b, c) = (run("bbr"), run("cubic"));
    println!("1 % loss: BBR {b:.2} Mb/s, CUBIC {c:.2} Mb/s");
    assert!(b > 0.8 * 12.0 * PAYLOAD, "BBR {b} Mb/s");
    assert!(b > 2.5 * c, "BBR {b} vs CUBIC {c}");
}
