//! HOPASS's fast layer end to end: the large-flow score of the paper's
//! worked example, small flows smallest remaining first at the receiver,
//! the weighted token back-off, and the paper's weighted dumbbell.

mod common;
use common::{build, conserved, port, workloads, HEADER, PAYLOAD, WIRE};

use ccgym_sim::cc::large_flow_score;
use ccgym_sim::units::US;
use ccgym_sim::Simulation;
use serde_json::{json, Value};

/// Payload flow `f` delivered in order inside the collection window, bit/s.
fn window_rate(sim: &Simulation, f: usize, seconds: f64) -> f64 {
    let d = sim.flows()[f].stats.received_at_window;
    (d[1].unwrap() - d[0].unwrap()) as f64 * 8.0 / seconds
}

/// The paper's dumbbell: senders h0, h1 and receivers h2, h3 at 10 Gb/s
/// (1 us links), 36 KB of buffer per switch port (108 KB shared by the 3
/// ports of a switch, dynamic threshold 1); four large flows of classes 1
/// to 4 weighted 1:1:2:4 and, with `small_load` > 0, Poisson small flows
/// (IMC10 sizes up to 100 KB) in class 5 among all four hosts. Switch queues
/// are WRR with the class weights and ECN per class at 1.5 KB + 3 KB x w
/// (a class served w packets per WRR round needs a deeper queue before its
/// marks mean it exceeds its share).
fn dumbbell(duration: &str, window_start: &str, small_load: f64, seed: u64) -> Value {
    let big = "1GB";
    let mut workload = vec![json!({"kind": "flows", "flows": [
        {"src": 0, "dst": 2, "size": big, "class": 1},
        {"src": 1, "dst": 3, "size": big, "class": 2},
        {"src": 0, "dst": 3, "size": big, "class": 3},
        {"src": 1, "dst": 2, "size": big, "class": 4},
    ]})];
    if small_load > 0.0 {
        workload.push(json!({"kind": "poisson", "load": small_load, "cdf": "imc10_benson_pfabric_pkts.txt",
                             "max_size": "100KB", "class": 5}));
    }
    json!({
        "seed": seed,
        "duration": duration,
        "topology": {"kind": "dumbbell", "left": 2, "right": 2, "link_rate": "10Gbps", "link_delay": "1us"},
        "switch": {"queues": 6, "scheduler": "wrr", "weights": [1, 1, 2, 4, 8],
                   "buffer": "108KB", "dt_alpha": 1.0,
                   "ecn": {"enabled": true, "pmax": 1.0, "at": "enqueue",
                           "queue_k": ["4.5KB", "4.5KB", "7.5KB", "13.5KB", "25.5KB"]}},
        "host": {"burst": WIRE, "hopass_weights": [1, 1, 2, 4, 8]},
        "packets": {"payload": PAYLOAD, "header": HEADER},
        "cc": {"algorithm": "hopass"},
        "metrics": {"window": [window_start, duration]},
        "workload": workload,
    })
}

#[test]
fn the_papers_worked_example_orders_f2_f1_f3() {
    // theta = 100; F1: OPT 1000, waiting since 0; F2, F3: OPT 200 and 900,
    // arriving at 300. At time 300:
    let theta = 100;
    let f1 = large_flow_score(1000, 300, theta);
    let f2 = large_flow_score(200, 0, theta);
    let f3 = large_flow_score(900, 0, theta);
    assert_eq!((f1, f2, f3), (2.5, 2.0, 9.0));
    let mut order = [("F1", f1), ("F2", f2), ("F3", f3)];
    order.sort_by(|a, b| a.1.total_cmp(&b.1));
    assert_eq!(order.map(|o| o.0), ["F2", "F1", "F3"]);
}

#[test]
fn small_flows_get_tokens_smallest_remaining_first() {
    // Three small flows (90, 30 and 60 KB) into h0 start together: after
    // their pioneers, every token goes to the 30 KB flow until it has one
    // per packet, then to the 60 KB flow, then to the 90 KB flow.
    let flows = json!([
        {"src": 1, "dst": 0, "size": "90KB"},
        {"src": 2, "dst": 0, "size": "30KB"},
        {"src": 3, "dst": 0, "size": "60KB"},
    ]);
    let mut sim = build(&json!({
        "duration": "5ms",
        "topology": {"kind": "star", "hosts": 4, "link_rate": "10Gbps", "link_delay": "1us"},
        "switch": {"buffer": "1MB"},
        "host": {"scheduler": "srpt", "burst": WIRE},
        "packets": {"payload": PAYLOAD, "header": HEADER},
        "cc": {"algorithm": "hopass"},
        "workload": [{"kind": "flows", "flows": flows}],
    }));
    let tokens = |sim: &Simulation, f: usize| sim.flows()[f].ph.as_ref().unwrap().tokens_sent;
    let pioneers = |sim: &Simulation, f: usize| sim.flows()[f].hp.as_ref().unwrap().pioneers;
    let pkts = |kb: u64| (kb * 1000).div_ceil(PAYLOAD);
    let (mut t, mut small_done, mut mid_done) = (0, false, false);
    while !(small_done && mid_done) {
        t += 50 * ccgym_sim::units::NS;
        sim.run_until(t);
        if !small_done && tokens(&sim, 1) >= pkts(30) {
            small_done = true;
            assert!(pioneers(&sim, 1) > 0, "pioneers went first");
            assert_eq!(tokens(&sim, 2), pioneers(&sim, 2), "the 60 KB flow waited for the 30 KB one");
            assert_eq!(tokens(&sim, 0), pioneers(&sim, 0), "the 90 KB flow waited for the 30 KB one");
        }
        if small_done && !mid_done && tokens(&sim, 2) >= pkts(60) {
            mid_done = true;
            assert_eq!(tokens(&sim, 0), pioneers(&sim, 0), "the 90 KB flow waited for the 60 KB one");
        }
        assert!(t < 2 * ccgym_sim::units::MS, "tokens stalled");
    }
    sim.run_until(u64::MAX);
    let end: Vec<_> = sim.flows().iter().map(|f| f.snd.finished.expect("every flow completes")).collect();
    assert!(end[1] < end[2] && end[2] < end[0], "completion order 30, 60, 90 KB: {end:?}");
    assert!(conserved(&sim));
}

/// Two large flows, h0 -> h2 in class 1 and h1 -> h3 in class 2, share one
/// FIFO at the bottleneck (a priority port with one data level: the switch
/// does not tell the classes apart), so only the receivers' weighted
/// back-off splits it. Returns (class 1, class 2) throughput, bit/s.
fn shared_fifo(weights: [f64; 2]) -> (f64, f64) {
    let mut sim = build(&json!({
        "duration": "30ms",
        "topology": {"kind": "dumbbell", "left": 2, "right": 2, "link_rate": "10Gbps", "link_delay": "1us"},
        "switch": {"queues": 3, "discipline": "priority", "priorities": 1, "buffer": "1MB",
                   "ecn": {"enabled": true, "kmin": "15KB", "kmax": "15KB", "pmax": 1.0, "at": "enqueue"}},
        "host": {"scheduler": "srpt", "burst": WIRE, "hopass_weights": weights},
        "packets": {"payload": PAYLOAD, "header": HEADER},
        "cc": {"algorithm": "hopass"},
        "metrics": {"window": ["5ms", "30ms"]},
        "workload": [{"kind": "flows", "flows": [
            {"src": 0, "dst": 2, "size": "1GB", "class": 1},
            {"src": 1, "dst": 3, "size": "1GB", "class": 2},
        ]}],
    }));
    sim.run_until(u64::MAX);
    assert!(sim.hopass_class(2, 1).unwrap().backoffs > 0, "the shared queue marks");
    (window_rate(&sim, 0, 25e-3), window_rate(&sim, 1, 25e-3))
}

#[test]
fn the_weighted_back_off_splits_a_shared_queue_by_weight() {
    let (a, b) = shared_fifo([1.0, 1.0]);
    let equal = b / a;
    let (a, b) = shared_fifo([1.0, 3.0]);
    let weighted = b / a;
    eprintln!(
        "equal weights: ratio {equal:.3}; weights 1:3: ratio {weighted:.3} ({:.2} + {:.2} Gb/s)",
        a / 1e9,
        b / 1e9
    );
    assert!((equal - 1.0).abs() < 0.1, "equal weights share equally: {equal}");
    // The back-off R(1 - alpha/2w) weights the split but does not fix it at exactly w: 3.37 to
    // 3.45 as the token scheduler's timing changed (pHost's wake-up on a reopened window).
    assert!((2.5..3.6).contains(&weighted), "weights 1:3 give the heavier class about 3 times: {weighted}");
    assert!(a + b > 8.5e9, "the bottleneck stays busy: {} Gb/s", (a + b) / 1e9);
}

#[test]
fn a_receiver_shares_its_token_budget_by_class_weight() {
    // Two endless large flows of classes 1 and 2 into one receiver: its
    // downlink is the bottleneck and its tokens (95 % of it) never build a
    // queue, so no mark comes; the budget is split by the class weights
    // (and follows them when they change at run time).
    let sc = json!({
        "duration": "20ms",
        "topology": {"kind": "star", "hosts": 3, "link_rate": "10Gbps", "link_delay": "1us"},
        "switch": {"queues": 3, "scheduler": "wrr", "buffer": "1MB"},
        "host": {"burst": WIRE, "hopass_weights": [1, 3]},
        "packets": {"payload": PAYLOAD, "header": HEADER},
        "cc": {"algorithm": "hopass"},
        "metrics": {"window": ["1ms", "10ms"]},
        "workload": [{"kind": "flows", "flows": [
            {"src": 1, "dst": 0, "size": "1GB", "class": 1},
            {"src": 2, "dst": 0, "size": "1GB", "class": 2},
        ]}],
    });
    let mut sim = build(&sc);
    sim.run_until(10 * ccgym_sim::units::MS);
    let (a, b) = (window_rate(&sim, 0, 9e-3), window_rate(&sim, 1, 9e-3));
    assert!((b / a - 3.0).abs() < 0.1, "weights 1:3 give 1:3: {a} {b}");
    assert!(a + b > 0.9 * 9.5e9 * PAYLOAD as f64 / WIRE as f64, "the budget is used: {}", a + b);
    sim.set_hopass_weights(&[2.0, 1.0]).unwrap();
    let received = |sim: &Simulation, f: usize| sim.flows()[f].ph.as_ref().unwrap().received;
    sim.run_until(11 * ccgym_sim::units::MS);
    let (a0, b0) = (received(&sim, 0), received(&sim, 1));
    sim.run_until(20 * ccgym_sim::units::MS);
    let ratio = (received(&sim, 0) - a0) as f64 / (received(&sim, 1) - b0) as f64;
    assert!((ratio - 2.0).abs() < 0.1, "weights 2:1 give 2:1: {ratio}");
}

#[test]
fn the_weighted_dumbbell_shares_1_1_2_4() {
    // The paper's Must-show with fewer small flows (about 1,200 in 100 ms
    // rather than 5,000; the bundled scenario hopass-weighted has those).
    let mut sim = build(&dumbbell("100ms", "2ms", 0.05, 1));
    sim.run_until(u64::MAX);
    let rates: Vec<f64> = (0..4).map(|f| window_rate(&sim, f, 98e-3)).collect();
    let total: f64 = rates.iter().sum();
    let target = [1.0, 1.0, 2.0, 4.0];
    let shares: Vec<f64> = rates.iter().map(|r| 8.0 * r / total).collect();
    let small = &sim.flows()[4..];
    let slow: Vec<f64> = small
        .iter()
        .filter_map(|f| f.snd.finished.map(|t| (t - f.path.start) as f64 / f.stats.ideal_fct as f64))
        .collect();
    let mean_slowdown = slow.iter().sum::<f64>() / slow.len() as f64;
    let bottleneck = &sim.ports()[port(&sim, "left->right")].stats;
    eprintln!(
        "large flows {:?} Gb/s, shares x8 {:?}; {} small flows, {} done, mean slowdown {mean_slowdown:.2}; \
         bottleneck drops {} ({} in the window)",
        rates.iter().map(|r| (r / 1e7).round() / 100.0).collect::<Vec<_>>(),
        shares.iter().map(|s| (s * 1000.0).round() / 1000.0).collect::<Vec<_>>(),
        small.len(),
        slow.len(),
        bottleneck.drops,
        bottleneck.win_drops
    );
    for (k, (s, t)) in shares.iter().zip(target).enumerate() {
        assert!((s / t - 1.0).abs() < 0.05, "class {}: share {s:.3} x 1/8 vs {t} x 1/8", k + 1);
    }
    assert!(small.len() > 1000 && slow.len() as f64 > 0.95 * small.len() as f64);
    assert!(mean_slowdown < 3.0, "small flows finish near their ideal: {mean_slowdown}");
    assert!(conserved(&sim));
}

#[test]
fn set_hopass_weights_checks_its_list() {
    let mut sim = build(&dumbbell("1ms", "0s", 0.0, 1));
    assert_eq!(sim.hopass_weights(), &[1.0, 1.0, 2.0, 4.0, 8.0]);
    assert!(sim.set_hopass_weights(&[1.0, 2.0]).unwrap_err().contains("one weight per data class 1 to 5"));
    assert!(sim.set_hopass_weights(&[1.0, 1.0, 0.0, 1.0, 1.0]).is_err());
    assert!(sim.set_hopass_weights(&[1.0, 1.0, f64::NAN, 1.0, 1.0]).is_err());
    assert_eq!(sim.hopass_weights(), &[1.0, 1.0, 2.0, 4.0, 8.0], "a wrong list changes nothing");
    sim.set_hopass_weights(&[4.0, 2.0, 1.0, 1.0, 8.0]).unwrap();
    assert_eq!(sim.hopass_weights(), &[4.0, 2.0, 1.0, 1.0, 8.0]);
    sim.run_until(500 * US);
    assert!(sim.hopass_class_rates(2).unwrap().iter().all(|&r| r > 0.0));
}

#[test]
fn bad_hopass_fields_are_config_errors() {
    let cases: [(&str, Value, &str); 7] = [
        ("hopass_weights", json!([1, 2]), "host.hopass_weights"),
        ("hopass_weights", json!([1, 1, -1, 1, 1]), "host.hopass_weights"),
        ("hopass_theta", json!(0), "host.hopass_theta"),
        ("hopass_headroom", json!(1.5), "host.hopass_headroom"),
        ("hopass_pioneers", json!(300), "host.hopass_pioneers"),
        ("hopass_window", json!(0), "host.hopass_window"),
        ("hopass_g", json!(0), "host.hopass_g"),
    ];
    for (field, value, path) in cases {
        let mut sc = dumbbell("1ms", "0s", 0.0, 1);
        sc["host"][field] = value;
        let err = Simulation::from_json(&sc.to_string(), &workloads()).err().expect("refused");
        assert_eq!(err.field, path);
    }
    let mut sc = dumbbell("1ms", "0s", 0.0, 1);
    sc["switch"]["ecn"]["queue_k"] = json!(["1KB"]);
    let err = Simulation::from_json(&sc.to_string(), &workloads()).err().expect("refused");
    assert_eq!(err.field, "switch.ecn.queue_k");
    let mut sc = dumbbell("1ms", "0s", 0.0, 1);
    sc["workload"][0]["flows"][0]["size"] = Value::Null;
    sc["workload"][0]["flows"][0]["stop"] = json!("1ms");
    let err = Simulation::from_json(&sc.to_string(), &workloads()).err().expect("refused");
    assert_eq!(err.field, "workload[0]");
    assert!(err.message.contains("moves finite flows only"), "{}", err.message);
}
