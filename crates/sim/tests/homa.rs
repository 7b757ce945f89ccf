//! Homa end to end: unscheduled cutoffs from a size CDF, grants to at most
//! `k` senders at a time, a short message past long ones near its ideal
//! completion time, and lost data asked for again with RESEND.

mod common;
use common::{build, conserved, HEADER, PAYLOAD, WIRE};

use ccgym_sim::homa::{unsched_cutoffs, unsched_levels, unsched_share};
use ccgym_sim::workload::Cdf;
use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

const US: u64 = 1_000_000;

/// A star of `hosts` at 10 Gb/s with Homa's switch ports (8 strict
/// priorities, large buffers, no ECN) and Homa hosts (per-packet SRPT at the
/// NIC).
fn homa(hosts: u32, flows: Value) -> Value {
    json!({
        "duration": "20ms",
        "topology": {"kind": "star", "hosts": hosts, "link_rate": "10Gbps", "link_delay": "1us"},
        "switch": {"discipline": "priority", "priorities": 8, "ecn": {"enabled": false}},
        "host": {"scheduler": "srpt", "burst": WIRE},
        "packets": {"payload": PAYLOAD, "header": HEADER},
        "cc": {"algorithm": "homa"},
        "workload": [{"kind": "flows", "flows": flows}],
    })
}

fn cdf(text: &str, step: bool) -> Cdf {
    Cdf::parse(text, step, "test", "test.txt").expect("valid CDF")
}

#[test]
fn unscheduled_cutoffs_of_a_small_cdf_are_the_hand_computed_ones() {
    // Step CDF: 1000 B (p 0.5), 3000 B (0.25), 6000 B (0.15), 30000 B (0.1);
    // with RTTbytes = 10000 the unscheduled bytes per message are 1000,
    // 3000, 6000 and 10000, weighted 500 + 750 + 900 + 1000 = 3150.
    let c = cdf("1000 0.5\n3000 0.75\n6000 0.9\n30000 1\n", true);
    // Two levels: half is 1575; sizes up to 3000 carry 1250, up to 6000 2150.
    assert_eq!(unsched_cutoffs(&c, 10_000, 2), vec![6000]);
    // Three levels: thirds 1050 and 2100 -> 3000 (1250) and 6000 (2150).
    assert_eq!(unsched_cutoffs(&c, 10_000, 3), vec![3000, 6000]);
    // Unscheduled share 3150 / 5150 of all bytes: 4.9 of 8 levels -> 5.
    assert!((unsched_share(&c, 10_000) - 3150.0 / 5150.0).abs() < 1e-12);
    assert_eq!(unsched_levels(unsched_share(&c, 10_000), 8), 5);
    // Interpolated: sizes uniform on [0, 20000]. Capped bytes below x are
    // x^2 / 40000 up to 10000 (2500 there), then 2500 + (x - 10000) / 2;
    // 7500 in all. Thirds 2500 and 5000 -> 10000 and 15000.
    let u = cdf("0 0\n20000 1\n", false);
    assert_eq!(unsched_cutoffs(&u, 10_000, 3), vec![10_000, 15_000]);
    // Quarters 1875 -> sqrt(1875 * 40000) = 8660.25 (rounded up), 3750 -> 12500, 5625 -> 16250.
    assert_eq!(unsched_cutoffs(&u, 10_000, 4), vec![8661, 12_500, 16_250]);
    assert_eq!(unsched_levels(0.75, 8), 6);
    // Everything scheduled or everything unscheduled still leaves one level of each.
    assert_eq!(unsched_levels(0.0, 8), 1);
    assert_eq!(unsched_levels(1.0, 8), 7);
}

#[test]
fn websearch_gets_one_unscheduled_level_and_seven_scheduled() {
    // WebSearch's messages are mostly long: under 1% of its bytes go
    // unscheduled, so P_u = 1 and k = P_s = 7 (the Homa simulator's W5
    // setting), and no cutoff is needed.
    let cdf_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/ccgym/data/workloads/websearch_pfabric_pkts.txt");
    if !cdf_path.exists() {
        panic!("bundled CDF missing at {}", cdf_path.display());
    }
    let mut sc = homa(4, json!([]));
    sc["workload"] = json!([{"kind": "poisson", "load": 0.5, "cdf": cdf_path.to_str().unwrap(), "stop": "1ms"}]);
    let sim = build(&sc);
    let p = sim.homa_params().expect("Homa flows");
    assert_eq!((p.unsched_levels, p.overcommit), (1, 7));
    assert!(p.cutoffs.is_empty());
    // One base RTT at 10 Gb/s on a star with 1 us links (4 us of wire, two
    // full packets and an ACK serialised): about 6.5 us, 8.1 KB.
    assert!(p.rtt_bytes > 7_500 && p.rtt_bytes < 8_500, "rtt_bytes {}", p.rtt_bytes);
    // With k given, P_s = k and the cutoffs split the unscheduled bytes
    // over the other levels.
    sc["host"]["homa_overcommit"] = json!(4);
    let sim = build(&sc);
    let p = sim.homa_params().unwrap();
    assert_eq!((p.unsched_levels, p.overcommit, p.cutoffs.len()), (4, 4, 3));
    assert!(p.cutoffs.windows(2).all(|w| w[0] <= w[1]));
}

/// Senders that hold scheduled grants at receiver `dst`: granted bytes
/// beyond the unscheduled ones that have not arrived yet, for a message the
/// receiver still grants to (a fully granted message leaves the scheduler,
/// and its last `RTTbytes` arriving while the next message's grants begin
/// is what keeps the downlink busy at the hand-over).
fn senders_holding_grants(sim: &Simulation, dst: u32) -> Vec<u32> {
    let rtt = sim.homa_params().unwrap().rtt_bytes;
    let mut s: Vec<u32> = sim
        .flows()
        .iter()
        .filter(|f| f.path.dst == dst && f.snd.finished.is_none())
        .filter(|f| {
            let h = f.homa.as_ref().unwrap();
            let granted = f.rcv.granted;
            h.known && granted < f.ctl.size && granted > f.ctl.size.min(rtt) && granted > h.received
        })
        .map(|f| f.path.src)
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

#[test]
fn with_overcommitment_k_at_most_k_senders_hold_grants() {
    for k in [1u32, 2, 4] {
        // An incast of 8 senders of 200 KB each (two messages each from
        // senders 1 and 2, to check one message per sender).
        let mut flows: Vec<Value> = (1..=8).map(|i| json!({"src": i, "dst": 0, "size": "200KB"})).collect();
        flows.push(json!({"src": 1, "dst": 0, "size": "150KB"}));
        flows.push(json!({"src": 2, "dst": 0, "size": "250KB"}));
        let mut sc = homa(9, json!(flows));
        sc["host"]["homa_overcommit"] = json!(k);
        let mut sim = build(&sc);
        let mut most = 0;
        let mut t = 0;
        while !sim.run_until(t) {
            let held = senders_holding_grants(&sim, 0);
            most = most.max(held.len());
            if sim.flows().iter().all(|f| f.snd.finished.is_some()) {
                break;
            }
            t += US / 2;
        }
        assert_eq!(most, k as usize, "k = {k}: at most k senders hold grants, and k do");
        sim.run_until(u64::MAX);
        for f in sim.flows() {
            assert!(f.snd.finished.is_some(), "k = {k}: every message completes");
            assert_eq!(f.stats.retx_bytes, 0, "k = {k}: nothing is lost or resent");
        }
        // The receiver's downlink stays busy: the last message ends within
        // 5% of the time its bytes need at 10 Gb/s.
        let bytes: u64 = sim.flows().iter().map(|f| f.ctl.size.div_ceil(PAYLOAD) * WIRE).sum();
        let last = sim.flows().iter().map(|f| f.snd.finished.unwrap()).max().unwrap();
        let line_time = bytes as f64 * 8.0 / 10e9 * 1e12;
        assert!((last as f64) < 1.05 * line_time, "k = {k}: last completion {last} ps vs {line_time} ps");
        assert!(conserved(&sim));
    }
}

#[test]
fn grants_go_to_the_shortest_messages_at_the_highest_scheduled_levels() {
    // Three senders into one receiver, 100, 200 and 300 KB: with k = 2 the
    // receiver serves them in SRPT order, so they finish smallest first,
    // the smallest within about its own line-rate time plus the others'
    // unscheduled bytes (16 KB, which share the downlink at the start).
    let flows = json!([
        {"src": 1, "dst": 0, "size": "300KB"},
        {"src": 2, "dst": 0, "size": "200KB"},
        {"src": 3, "dst": 0, "size": "100KB"},
    ]);
    let mut sc = homa(4, flows);
    sc["host"]["homa_overcommit"] = json!(2);
    let mut sim = build(&sc);
    // Once all three are known, the 100 KB message holds the highest
    // scheduled level (6 of 0..7 with P_s = 2) and the 200 KB one the next;
    // the 300 KB one, granted while it was the only one known, waits.
    sim.run_until(10 * US);
    let grants = |sim: &Simulation, i: usize| sim.flows()[i].homa.as_ref().unwrap().grants;
    let before = grants(&sim, 0);
    sim.run_until(30 * US);
    let prio = |i: usize| sim.flows()[i].homa.as_ref().unwrap().grant_prio;
    assert_eq!((prio(2), prio(1)), (6, 7));
    assert_eq!(grants(&sim, 0), before, "the largest message waits");
    assert!(grants(&sim, 2) > 5 && grants(&sim, 1) > 5);
    sim.run_until(u64::MAX);
    let done: Vec<u64> = sim.flows().iter().map(|f| f.snd.finished.unwrap()).collect();
    assert!(done[2] < done[1] && done[1] < done[0], "completions {done:?}");
    let f = &sim.flows()[2];
    assert!((done[2] as f64) < 1.25 * f.stats.ideal_fct as f64, "fct {} vs ideal {}", done[2], f.stats.ideal_fct);
}

#[test]
fn the_receiver_grants_to_one_message_per_sender() {
    // Sender 1 has two messages (100 and 150 KB), sender 2 one of 300 KB;
    // k = 2. By size alone the two best are sender 1's; one per sender makes
    // them sender 1's 100 KB and sender 2's 300 KB.
    let flows = json!([
        {"src": 1, "dst": 0, "size": "100KB"},
        {"src": 1, "dst": 0, "size": "150KB"},
        {"src": 2, "dst": 0, "size": "300KB"},
    ]);
    let mut sc = homa(3, flows);
    sc["host"]["homa_overcommit"] = json!(2);
    let mut sim = build(&sc);
    sim.run_until(40 * US);
    let grants = |i: usize| sim.flows()[i].homa.as_ref().unwrap().grants;
    // The 300 KB message holds the lower scheduled level: its data mostly
    // waits behind the 100 KB message's at the downlink, so it gets fewer.
    assert!(grants(0) > 10 && grants(2) > 0, "grants {} and {}", grants(0), grants(2));
    assert_eq!(grants(1), 0, "sender 1's second message waits for its first");
    sim.run_until(u64::MAX);
    assert!(sim.flows().iter().all(|f| f.snd.finished.is_some()));
}

#[test]
fn a_short_message_among_long_ones_finishes_near_its_ideal_time() {
    // Four 2 MB messages keep the receiver's downlink full; a 5 KB message
    // arriving later goes unscheduled at the highest level and overtakes
    // their scheduled packets at every queue.
    let mut flows: Vec<Value> = (1..=4).map(|i| json!({"src": i, "dst": 0, "size": "2MB"})).collect();
    flows.push(json!({"src": 5, "dst": 0, "size": "5KB", "start": "300us"}));
    let mut sim = build(&homa(6, json!(flows)));
    sim.run_until(u64::MAX);
    let f = &sim.flows()[4];
    let fct = f.snd.finished.unwrap() - f.path.start;
    let slowdown = fct as f64 / f.stats.ideal_fct as f64;
    assert!(slowdown < 1.3, "short message slowdown {slowdown:.3} (fct {fct} ps, ideal {} ps)", f.stats.ideal_fct);
    for f in sim.flows() {
        assert!(f.snd.finished.is_some());
    }
    assert!(conserved(&sim));
}

#[test]
fn lost_data_is_asked_for_again_with_resend() {
    // The sender's uplink loses 3% of packets: the receiver's RESEND timer
    // (set short here) names the missing ranges; the message completes.
    let mut sc = homa(2, json!([{"src": 1, "dst": 0, "size": "300KB"}]));
    sc["link"] = json!([{"from": "h1", "to": "sw0", "loss": 0.03}]);
    sc["host"]["homa_resend_timeout"] = json!("20us");
    let mut sim = build(&sc);
    sim.run_until(u64::MAX);
    let f = &sim.flows()[0];
    let h = f.homa.as_ref().unwrap();
    let lost = sim.summary()["conservation"]["dropped_bytes"].as_u64().unwrap();
    assert!(lost > 0, "some data must be lost");
    assert!(f.snd.finished.is_some(), "the message completes");
    assert!(h.resends > 0, "the receiver asked again");
    assert!(f.stats.retx_bytes > 0, "lost packets are sent again");
    assert_eq!(h.received, 300_000);
    assert!(conserved(&sim));
}

#[test]
fn an_incast_into_a_tiny_buffer_completes_through_resend() {
    // 16 senders each send 10 KB unscheduled at once into a receiver port
    // of 8 packets: most of the burst is dropped, and RESENDs recover it.
    let flows: Vec<Value> = (1..=16).map(|i| json!({"src": i, "dst": 0, "size": "40KB"})).collect();
    let mut sc = homa(17, json!(flows));
    sc["switch"]["buffer_model"] = json!("static");
    sc["switch"]["port_buffer"] = json!(8 * WIRE);
    sc["host"]["homa_rtt_bytes"] = json!(10_000);
    sc["host"]["homa_resend_timeout"] = json!("50us");
    // Senders whose whole unscheduled burst is lost are unknown to the
    // receiver: they send their first packet again after `host.rto`.
    sc["host"]["rto"] = json!("200us");
    let mut sim = build(&sc);
    sim.run_until(u64::MAX);
    let drops = sim.summary()["network"]["drops_packets"].as_u64().unwrap();
    assert!(drops > 0, "the burst overflows the port");
    let resends: u64 = sim.flows().iter().map(|f| f.homa.as_ref().unwrap().resends).sum();
    assert!(resends > 0, "the receiver asks for what it misses");
    assert!(sim.flows().iter().any(|f| f.stats.timeouts > 0), "unknown messages announce themselves again");
    for f in sim.flows() {
        assert!(f.snd.finished.is_some(), "every message completes");
        assert_eq!(f.homa.as_ref().unwrap().received, 40_000);
    }
    assert!(conserved(&sim));
}

#[test]
fn homa_fields_are_checked() {
    let base = homa(2, json!([{"src": 1, "dst": 0, "size": "10KB"}]));
    for (field, value, name) in [
        ("homa_overcommit", json!(0), "host.homa_overcommit"),
        ("homa_rtt_bytes", json!(0), "host.homa_rtt_bytes"),
        ("homa_unsched_cutoffs", json!([5000, 3000]), "host.homa_unsched_cutoffs"),
        ("homa_unsched_cutoffs", json!([1, 2, 3, 4, 5, 6, 7]), "host.homa_unsched_cutoffs"),
        ("homa_resend_timeout", json!("0us"), "host.homa_resend_timeout"),
    ] {
        let mut sc = base.clone();
        sc["host"][field] = value;
        let e = Simulation::from_json(&sc.to_string(), Path::new(".")).err().expect("rejected");
        assert_eq!(e.field, name, "{e}");
    }
    // Homa moves messages of a known size.
    let sc = homa(2, json!([{"src": 1, "dst": 0}]));
    let e = Simulation::from_json(&sc.to_string(), Path::new(".")).err().expect("rejected");
    assert_eq!(e.field, "workload[0]");
    // The limit on cutoffs that both messages state is the real one: with 8
    // levels, 6 cutoffs run and 7 are refused.
    let mut sc = base.clone();
    sc["switch"]["priorities"] = json!(8);
    sc["host"]["homa_unsched_cutoffs"] = json!([1000, 2000, 3000, 4000, 5000, 6000]);
    assert_eq!(build(&sc).homa_params().unwrap().unsched_levels, 7);
    sc["host"]["homa_unsched_cutoffs"] = json!([1000, 2000, 3000, 4000, 5000, 6000, 7000]);
    let e = Simulation::from_json(&sc.to_string(), Path::new(".")).err().expect("rejected");
    assert!(e.to_string().contains("at most 6 cutoffs"), "{e}");
    sc["switch"]["priorities"] = json!(4);
    sc["host"]["homa_unsched_cutoffs"] = json!([1000, 2000, 3000]);
    let e = Simulation::from_json(&sc.to_string(), Path::new(".")).err().expect("rejected");
    assert!(e.to_string().contains("at most 2 cutoffs"), "{e}");
    // Explicit cutoffs set the unscheduled levels.
    let mut sc = base.clone();
    sc["host"]["homa_unsched_cutoffs"] = json!([2000, 8000]);
    let sim = build(&sc);
    let p = sim.homa_params().unwrap();
    assert_eq!((p.unsched_levels, p.overcommit, p.cutoffs.clone()), (3, 5, vec![2000, 8000]));
    assert_eq!(
        (p.unsched_prio(1500), p.unsched_prio(2000), p.unsched_prio(2001), p.unsched_prio(1 << 20)),
        (0, 0, 1, 2)
    );
}
