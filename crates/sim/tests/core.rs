//! Behaviour of the simulator core, each shown by a real simulation.

use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

fn run(scenario: Value) -> Simulation {
    let mut sim = Simulation::from_json(&scenario.to_string(), Path::new(".")).expect("valid scenario");
    sim.run_until(u64::MAX);
    sim
}

fn star(hosts: u32) -> Value {
    json!({"kind": "star", "hosts": hosts, "link_rate": "100Gbps", "link_delay": "1us"})
}

#[test]
fn single_flow_reaches_line_rate_and_measures_the_base_rtt() {
    let sim = run(json!({
        "duration": "5ms", "topology": star(2),
        "metrics": {"window": ["1ms", "5ms"]},
        "workload": [{"kind": "flows", "flows": [{"src": 1, "dst": 0}]}],
    }));
    let f = &sim.flows()[0];
    let goodput = (f.stats.received_at_window[1].unwrap() - f.stats.received_at_window[0].unwrap()) as f64 * 8.0 / 4e-3;
    let net_line = 100e9 * 1024.0 / (1024.0 + 48.0);
    assert!(goodput >= 0.99 * net_line, "goodput {goodput:.4e} < 99% of {net_line:.4e}");
    // Base RTT from the topology: 1072-B data packet serialized twice (host, switch),
    // 64-B ACK serialized twice, four 1 us propagation delays.
    let expected = 4_000_000 + 2 * 85_760 + 2 * 5_120;
    assert_eq!(f.ctl.base_rtt, expected);
    assert_eq!(f.stats.min_rtt, Some(expected));
}

fn conservation(sim: &Simulation) -> (u64, u64, u64, u64) {
    let s = sim.summary();
    let c = &s["conservation"];
    let g = |k: &str| c[k].as_u64().unwrap();
    (g("sent_bytes"), g("delivered_bytes"), g("dropped_bytes"), g("in_flight_bytes"))
}

#[test]
fn bytes_are_conserved_mid_run_and_at_the_end() {
    let scenario = json!({
        "duration": "30ms", "topology": star(17),
        "switch": {"queue_cap": "200KiB"},
        "workload": [{"kind": "long", "receiver": 0, "size": "1MB"}],
    });
    let mut sim = Simulation::from_json(&scenario.to_string(), Path::new(".")).unwrap();
    for t in [50_000_000u64, 333_333_333, 2_000_000_000, 30_000_000_000] {
        sim.run_until(t);
        let (sent, delivered, dropped, in_flight) = conservation(&sim);
        assert!(sent > 0);
        assert_eq!(sent, delivered + dropped + in_flight, "at t = {t} ps");
    }
    let (_, _, dropped, in_flight) = conservation(&sim);
    assert!(dropped > 0, "the 200 KiB queue cap should drop");
    assert_eq!(in_flight, 0);
}

fn poisson(seed: u64, cdf: &Path) -> Value {
    json!({
        "seed": seed, "duration": "2ms",
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4},
        "workload": [{"kind": "poisson", "load": 0.5, "cdf": cdf.to_str().unwrap()}],
    })
}

#[test]
fn same_seed_same_result_other_seed_other_result() {
    let dir = std::env::temp_dir().join(format!("ccgym-det-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cdf = dir.join("sizes.txt");
    std::fs::write(&cdf, "# test sizes\n1000 0\n10000 0.5\n200000 0.9\n1000000 1\n").unwrap();
    let a = run(poisson(7, &cdf));
    let b = run(poisson(7, &cdf));
    let c = run(poisson(8, &cdf));
    assert_eq!(a.event_count(), b.event_count());
    assert_eq!(a.summary(), b.summary());
    assert_ne!(a.summary()["flows"], c.summary()["flows"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn incast64(pfc: bool, recovery: &str) -> Value {
    json!({
        "duration": "60ms", "topology": star(65),
        "switch": {"pfc": {"enabled": pfc}},
        // Go-back-N recovers most losses by NACK; the timeout catches a flow
        // whose whole window was lost (nothing left to trigger a NACK).
        "host": {"rto": if pfc { "50ms" } else { "1ms" }, "loss_recovery": recovery},
        "workload": [{"kind": "long", "receiver": 0, "size": "3MB"}],
    })
}

#[test]
fn lossless_incast_of_64_line_rate_senders_drops_nothing() {
    let sim = run(incast64(true, "auto"));
    let s = sim.summary();
    assert_eq!(sim.ports().iter().map(|p| p.stats.drops).sum::<u64>(), 0);
    assert!(s["network"]["pfc_pauses"].as_u64().unwrap() > 0, "PFC should have paused the senders");
    assert!(sim.flows().iter().all(|f| f.snd.finished.is_some()), "every flow completes");
    // The bottleneck stays busy: the last flow ends close to total bytes / line rate.
    let last = sim.flows().iter().filter_map(|f| f.snd.finished).max().unwrap() as f64 * 1e-12;
    let ideal = 64.0 * 3e6 * (1024.0 + 48.0) / 1024.0 * 8.0 / 100e9;
    assert!(last < 1.03 * ideal, "last completion {last:.5} s, ideal {ideal:.5} s");
}

#[test]
fn lossy_incast_drops_and_go_back_n_delivers_every_byte() {
    check_lossy_recovery("go_back_n");
}

#[test]
fn lossy_incast_drops_and_tcp_recovery_delivers_every_byte() {
    check_lossy_recovery("tcp");
}

fn check_lossy_recovery(recovery: &str) {
    let sim = run(incast64(false, recovery));
    let drops: u64 = sim.ports().iter().map(|p| p.stats.drops).sum();
    assert!(drops > 0, "a 10 MiB queue cap under 40 MiB of outstanding data must drop");
    for f in sim.flows() {
        assert!(
            f.snd.finished.is_some(),
            "flow {}->{} did not finish: una {} nxt {} rcv {} nacks {} timeouts {}",
            f.path.src,
            f.path.dst,
            f.ctl.snd_una,
            f.ctl.snd_nxt,
            f.rcv.rcv_nxt,
            f.stats.nacks,
            f.stats.timeouts
        );
        assert_eq!(f.rcv.rcv_nxt, 3_000_000);
    }
    assert!(sim.flows().iter().map(|f| f.stats.retx_bytes).sum::<u64>() > 0);
}

/// Marked fraction against the configured ramp, with a 4-sigma binomial band.
fn check_ecn_profile(profile: &Value, kmin: f64, kmax: f64, pmax: f64) -> u64 {
    let mut seen_total = 0;
    for bin in profile.as_array().unwrap() {
        let (lo, hi) = (bin[0].as_f64().unwrap(), bin[1].as_f64().unwrap());
        let (seen, marked) = (bin[2].as_u64().unwrap(), bin[3].as_u64().unwrap());
        if seen < 200 {
            continue;
        }
        seen_total += seen;
        let p = |q: f64| {
            if q <= kmin {
                0.0
            } else if q > kmax {
                1.0
            } else {
                pmax * (q - kmin) / (kmax - kmin)
            }
        };
        // The marker's probability varies across the bin; allow its range.
        let (pl, ph) = (p(lo), p(hi).max(p(lo)));
        let frac = marked as f64 / seen as f64;
        let sigma = (0.25 / seen as f64).sqrt();
        assert!(
            frac >= pl - 4.0 * sigma && frac <= ph + 4.0 * sigma,
            "queue [{lo:.0}, {hi:.0}) B: marked {frac:.4}, ramp gives [{pl:.4}, {ph:.4}]"
        );
    }
    seen_total
}

#[test]
fn ecn_marking_follows_the_configured_ramp() {
    // Window-limited flows hold a standing queue of about n x window - BDP;
    // several window sizes put it below, inside and above the ramp.
    let (kmin, kmax, pmax) = (100_000.0, 400_000.0, 0.6);
    let mut seen = 0;
    for window in ["12KB", "20KB", "28KB", "36KB", "60KB"] {
        let sim = run(json!({
            "duration": "4ms", "topology": star(17),
            "switch": {"ecn": {"kmin": kmin, "kmax": kmax, "pmax": pmax, "at": "enqueue"}},
            "cc": {"algorithm": "fixed_rate", "rate": "100Gbps", "window": window},
            "metrics": {"window": ["1ms", "4ms"]},
            "workload": [{"kind": "long", "receiver": 0}],
        }));
        let s = sim.summary();
        let port = s["bottleneck"]["id"].as_u64().unwrap();
        let entry = s["ports"].as_array().unwrap().iter().find(|p| p["id"].as_u64() == Some(port)).unwrap();
        seen += check_ecn_profile(&entry["ecn_profile"], kmin, kmax, pmax);
    }
    assert!(seen > 50_000);
}

fn weighted(scheduler: &str) -> Vec<f64> {
    let sim = run(json!({
        "duration": "6ms", "topology": star(4),
        "switch": {"queues": 4, "scheduler": scheduler, "weights": [1, 2, 4], "quantum": 1500},
        "metrics": {"window": ["2ms", "6ms"]},
        "workload": [{"kind": "flows", "flows": [
            {"src": 1, "dst": 0, "class": 1}, {"src": 2, "dst": 0, "class": 2}, {"src": 3, "dst": 0, "class": 3}]}],
    }));
    let bytes: Vec<f64> = sim
        .flows()
        .iter()
        .map(|f| (f.stats.received_at_window[1].unwrap() - f.stats.received_at_window[0].unwrap()) as f64)
        .collect();
    let total: f64 = bytes.iter().sum();
    bytes.iter().map(|b| b / total).collect()
}

#[test]
fn wrr_and_drr_weights_1_2_4_give_shares_1_2_4() {
    for sched in ["wrr", "drr"] {
        let shares = weighted(sched);
        for (got, want) in shares.iter().zip([1.0 / 7.0, 2.0 / 7.0, 4.0 / 7.0]) {
            assert!((got / want - 1.0).abs() < 0.02, "{sched}: shares {shares:?}");
        }
    }
}

#[test]
fn ecmp_spreads_flows_over_all_equal_cost_paths() {
    let sim = run(json!({
        "duration": "1ms",
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 8,
                     "fabric_rate": "400Gbps"},
        "cc": {"algorithm": "fixed_rate", "rate": "20Mbps"},
        "workload": [{"kind": "long", "pattern": "many_to_one", "receiver": 8,
                      "senders": [0, 1, 2, 3, 4, 5, 6, 7], "flows_per_host": 4096}],
    }));
    let uplinks: Vec<f64> = (0..sim.ports().len() as u32)
        .filter(|&p| sim.port_name(p).starts_with("leaf0->spine"))
        .map(|p| sim.ports()[p as usize].tx_bytes as f64)
        .collect();
    assert_eq!(uplinks.len(), 4);
    let mean = uplinks.iter().sum::<f64>() / 4.0;
    for u in &uplinks {
        assert!((u / mean - 1.0).abs() < 0.04, "uplink bytes {uplinks:?}");
    }
}

fn error_of(scenario: Value) -> String {
    match Simulation::from_json(&scenario.to_string(), Path::new(".")) {
        Ok(_) => panic!("scenario should be rejected: {scenario}"),
        Err(e) => e.to_string(),
    }
}

fn base() -> Value {
    json!({"duration": "1ms", "topology": star(4), "workload": [{"kind": "long", "receiver": 0}]})
}

fn with(path: &[&str], v: Value) -> Value {
    let mut s = base();
    let mut cur = &mut s;
    for p in path {
        cur = if let Ok(i) = p.parse::<usize>() { &mut cur[i] } else { &mut cur[*p] };
    }
    *cur = v;
    s
}

#[test]
fn bad_inputs_get_one_clear_error_naming_field_and_value() {
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            with(&["topology", "link_rat"], json!("1Gbps")),
            "topology",
            "unknown field `link_rat`: did you mean `link_rate`?",
        ),
        (with(&["host", "phost_windw"], json!(3)), "host", "did you mean `phost_window`?"),
        (with(&["host", "zzz"], json!(3)), "host", "unknown field `zzz`, expected one of `burst`"),
        (with(&["topology", "link_rate"], json!("-5Gbps")), "topology.link_rate", "-5Gbps"),
        (with(&["topology", "link_delay"], json!("3 parsecs")), "topology.link_delay", "unknown time unit"),
        (with(&["workload", "0", "receiver"], json!(9)), "workload[0].receiver", "no such host"),
        (with(&["switch", "ecn", "kmin"], json!("2MB")), "switch.ecn.kmin", "must not exceed kmax"),
        (with(&["switch", "ecn", "pmax"], json!(1.5)), "switch.ecn.pmax", "probability"),
        (with(&["switch"], json!({"buffer": 0, "pfc": {"enabled": true}})), "switch.buffer", "lossless"),
        (with(&["topology", "kind"], json!("torus")), "topology.kind", "unknown topology"),
        (with(&["topology", "k"], json!(4)), "topology.k", "does not apply"),
        (with(&["cc", "algorithm"], json!("bbr9")), "cc.algorithm", "unknown congestion control"),
        (with(&["cc"], json!({"algorithm": "fixed_rate", "speed": 1})), "cc.speed", "unknown parameter"),
        (with(&["duration"], json!(0)), "duration", "must be positive"),
        (with(&["host", "tx_jitter"], json!(1.5)), "host.tx_jitter", "must be in [0, 1]"),
        (with(&["metrics", "window"], json!(["2ms", "1ms"])), "metrics.window", "start must be before end"),
        (with(&["workload", "0", "flows_per_host"], json!(0)), "workload[0].flows_per_host", "at least 1"),
        (with(&["workload", "0", "class"], json!(3)), "workload[0].class", "data queue"),
        (with(&["switch", "weights"], json!([1, 2])), "switch.weights", "one weight per data queue"),
        (
            with(&["workload", "0"], json!({"kind": "poisson", "load": 1.7, "cdf": "x.txt"})),
            "workload[0].load",
            "(0, 1]",
        ),
        (
            with(&["workload", "0"], json!({"kind": "poisson", "load": 0.5, "cdf": "/nonexistent/cdf.txt"})),
            "workload[0].cdf",
            "cannot read",
        ),
        (
            with(&["workload", "0"], json!({"kind": "flows", "flows": [{"src": 1, "dst": 1}]})),
            "workload[0].flows[0].dst",
            "same host",
        ),
        (
            json!({"duration": "1ms",
                   "topology": {"kind": "custom",
                                "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"},
                                          {"name": "s1", "kind": "switch"}, {"name": "s2", "kind": "switch"}],
                                "links": [{"a": "a", "b": "s1"}, {"a": "b", "b": "s2"}]},
                   "workload": [{"kind": "flows", "flows": [{"src": "a", "dst": "b"}]}]}),
            "workload[0]",
            "unreachable",
        ),
        (with(&["topology", "hosts"], json!(-3)), "topology.hosts", "invalid value"),
    ];
    assert!(cases.len() >= 12);
    for (scenario, field, text) in cases {
        let e = error_of(scenario);
        assert!(e.starts_with(field), "error `{e}` should start with `{field}`");
        assert!(e.contains(text), "error `{e}` should mention `{text}`");
    }
}

#[test]
fn cc_unit_parameters_name_their_value_once() {
    // The unit parsers name the value themselves; the parameter's error must
    // not say it twice (it read `value "0bps": value "0bps": ...`).
    for (params, field, value, text) in [
        (json!({"algorithm": "fixed_rate", "rate": "0bps"}), "cc.rate", "\"0bps\"", "must be positive"),
        (json!({"algorithm": "fixed_rate", "rate": 0}), "cc.rate", "0", "must be positive"),
        (json!({"algorithm": "hpcc", "base_rtt": "3 parsecs"}), "cc.base_rtt", "\"3 parsecs\"", "unknown time unit"),
        (json!({"algorithm": "fixed_rate", "window": "-1KB"}), "cc.window", "\"-1KB\"", "non-negative"),
    ] {
        let e = error_of(with(&["cc"], params));
        assert!(e.starts_with(&format!("{field}: value {value}: ")), "{e}");
        assert!(e.contains(text), "error `{e}` should mention `{text}`");
        assert_eq!(e.matches("value ").count(), 1, "{e}");
    }
    // A value of the wrong type is named once too.
    let e = error_of(with(&["cc"], json!({"algorithm": "fixed_rate", "rate": true})));
    assert!(e.starts_with("cc.rate: ") && e.contains("`true`") && e.contains("expected a rate"), "{e}");
    assert_eq!(e.matches("true").count(), 1, "{e}");
}

#[test]
fn non_monotone_cdf_file_is_rejected_with_its_line() {
    let dir = std::env::temp_dir().join(format!("ccgym-cdf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cdf = dir.join("bad.txt");
    std::fs::write(&cdf, "100 0.2\n200 0.1\n300 1\n").unwrap();
    let e = error_of(with(&["workload", "0"], json!({"kind": "poisson", "load": 0.5, "cdf": cdf.to_str().unwrap()})));
    assert!(e.starts_with("workload[0].cdf") && e.contains("line 2") && e.contains("not monotone"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn int_records_reach_the_sender_with_one_record_per_switch() {
    // A flow whose CC asks for INT (HPCC) crosses two switches on a dumbbell.
    let scenario = json!({
        "duration": "200us",
        "topology": {"kind": "dumbbell", "left": 1, "right": 1},
        "cc": {"algorithm": "hpcc"},
        "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": "100KB"}]}],
    });
    let mut sim = Simulation::from_json(&scenario.to_string(), Path::new(".")).unwrap();
    sim.run_until(u64::MAX);
    let f = &sim.flows()[0];
    assert!(f.snd.finished.is_some());
    assert_eq!(f.stats.last_int_hops, 2);
    // Data packets grew by the INT header, so more bytes went out than without INT.
    assert!(f.stats.sent_bytes >= 100_000 + 98 * (48 + 42));
}

#[test]
fn paced_flows_of_a_host_that_also_receives_are_not_starved_by_its_acks() {
    // All-to-all: every host both sends paced flows and answers incoming data
    // with ACKs, which its NIC serves first; the paced flows must still go out.
    let sim = run(json!({
        "duration": "3ms", "topology": star(4),
        "cc": {"algorithm": "fixed_rate", "rate": "20Gbps"},
        "metrics": {"window": ["1ms", "3ms"]},
        "workload": [{"kind": "long", "pattern": "all_to_all"}],
    }));
    for f in sim.flows() {
        let bytes = (f.stats.received_at_window[1].unwrap() - f.stats.received_at_window[0].unwrap()) as f64;
        let gbps = bytes * 8.0 / 2e-3 / 1e9;
        assert!(gbps > 0.9 * 20.0 * 1024.0 / 1072.0, "flow {}->{}: {gbps:.2} Gb/s", f.path.src, f.path.dst);
    }
}

/// Flows of a many-to-one start at line rate into a queue that stays full; returns how many
/// flows had not a single packet reach the receiver (no in-order data, no NACK) by the end.
fn locked_out_flows(tx_jitter: f64) -> usize {
    let sim = run(json!({
        "duration": "1ms", "seed": 3, "topology": star(33),
        "switch": {"queue_cap": "200KiB"},
        "host": {"rto": "50ms", "max_outstanding": "256KiB", "tx_jitter": tx_jitter},
        "workload": [{"kind": "long", "receiver": 0, "start": ["0us", "200us"]}],
    }));
    sim.flows().iter().filter(|f| f.rcv.rcv_nxt == 0 && f.stats.nacks == 0).count()
}

#[test]
fn tx_jitter_ends_drop_tail_lock_out_of_periodic_line_rate_senders() {
    // With exact timing, the slot each departure frees goes to the sender whose phase comes
    // first, so late senders lose every packet of their window (and then wait for a timeout).
    let exact = locked_out_flows(0.0);
    assert!(exact >= 4, "exact timing should lock senders out ({exact} of 32)");
    // Up to one packet time of uplink jitter shuffles the winners: every sender gets through.
    assert_eq!(locked_out_flows(1.0), 0);
}

#[test]
fn slowdown_is_at_least_one_when_the_bottleneck_is_mid_path_and_the_last_packet_is_short() {
    // h0 -> left (100G) -> right (25G) -> h1 (100G): the slowest link is not the last hop.
    // Flows far apart in time, each alone on the path, with a short last packet (and one
    // single-packet flow); the ideal used to charge that packet a full packet's time on
    // the last link and came out above the FCT of a flow alone on the network.
    let sizes = [10 * 1024 + 100, 1024 + 1, 3 * 1024 + 900, 100, 64 * 1024 + 7];
    let flows: Vec<Value> = sizes
        .iter()
        .enumerate()
        .map(|(i, &s)| json!({"src": 0, "dst": 2, "size": s, "start": format!("{}us", 100 * i)}))
        .collect();
    let sim = run(json!({
        "duration": "1ms",
        "topology": {"kind": "dumbbell", "left": 2, "right": 2, "link_rate": "100Gbps", "bottleneck_rate": "25Gbps"},
        "workload": [{"kind": "flows", "flows": flows}],
    }));
    for (f, size) in sim.flows().iter().zip(sizes) {
        let fct = f.snd.finished.expect("finished") - f.path.start;
        let slowdown = fct as f64 / f.stats.ideal_fct as f64;
        // Alone on an idle path, a flow at line rate takes exactly its ideal time, up to pacing.
        assert!((1.0..1.01).contains(&slowdown), "{size} B: FCT {fct} ps, ideal {} ps", f.stats.ideal_fct);
    }
}

#[test]
fn a_stop_before_the_start_is_rejected_naming_the_field() {
    let dir = std::env::temp_dir().join(format!("ccgym-stop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cdf = dir.join("sizes.txt");
    std::fs::write(&cdf, "1000 0\n10000 1\n").unwrap();
    let flow = |start: &str, stop: &str| json!({"kind": "flows", "flows": [{"src": 1, "dst": 0, "start": start, "stop": stop}]});
    let cases = [
        (with(&["workload", "0"], flow("500us", "200us")), "workload[0].flows[0].stop: value 200us", "(500us)"),
        (with(&["workload", "0"], flow("200us", "199us")), "workload[0].flows[0].stop", "must not be before the start"),
        (
            with(&["workload", "0"], json!({"kind": "long", "start": ["100us", "300us"], "stop": "200us"})),
            "workload[0].stop: value 200us",
            "must not be before the start of its flows (300us)",
        ),
        (
            with(
                &["workload", "0"],
                json!({"kind": "poisson", "load": 0.5, "cdf": cdf, "start": "400us", "stop": "0.3ms"}),
            ),
            "workload[0].stop",
            "(400us)",
        ),
    ];
    for (scenario, field, text) in cases {
        let e = error_of(scenario);
        assert!(
            e.starts_with(field) && e.contains(text),
            "error `{e}` should start with `{field}` and mention `{text}`"
        );
    }
    // A stop at or after every start is fine.
    run(with(&["workload", "0"], json!({"kind": "long", "start": ["100us", "300us"], "stop": "300us"})));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// NaN and infinities (which Python writes as `NaN` / `Infinity` in the JSON it hands the
/// core) are named as what they are, not "expected value"; integers too large for 64 bits are
/// echoed as written, not as floating point, and integer fields give their range.
#[test]
fn non_finite_numbers_and_huge_integers_are_reported_as_written() {
    let big = "123456789012345678901234567";
    let set = |path: &str, token: &str| -> String {
        let mut s = base();
        let parts: Vec<&str> = path.split('.').collect();
        let mut cur = &mut s;
        for p in &parts {
            cur = if let Ok(i) = p.parse::<usize>() { &mut cur[i] } else { &mut cur[*p] };
        }
        *cur = json!("@");
        let text = s.to_string().replace("\"@\"", token);
        match Simulation::from_json(&text, Path::new(".")) {
            Ok(_) => panic!("{path} = {token} should be rejected"),
            Err(e) => e.to_string(),
        }
    };
    let cases = [
        ("seed", "NaN", "seed: value NaN: is not a number; give a finite number"),
        ("host.min_rate_fraction", "Infinity", "host.min_rate_fraction: value Infinity: is infinite"),
        ("duration", "-Infinity", "duration: value -Infinity: is infinite"),
        ("workload.0.size", "NaN", "workload[0].size: value NaN: is not a number"),
        (
            "seed",
            big,
            &format!("seed: invalid value: integer `{big}`, expected an integer from 0 to 18446744073709551615"),
        ),
        (
            "topology.hosts",
            big,
            &format!("topology.hosts: invalid value: integer `{big}`, expected an integer from 0 to 4294967295"),
        ),
        (
            "topology.hosts",
            "5000000000",
            "topology.hosts: invalid value: integer `5000000000`, expected an integer from 0 to 4294967295",
        ),
        ("workload.0.size", big, &format!("workload[0].size: value {big}: is too large (over a petabyte)")),
        ("topology.link_rate", big, &format!("topology.link_rate: value {big}: rate is too large")),
    ];
    for (path, token, want) in cases {
        let e = set(path, token);
        assert!(e.starts_with(want), "{path} = {token}: error `{e}` should start with `{want}`");
    }
}

#[test]
fn slowdown_is_at_least_one_when_a_link_speeds_up_during_the_flow() {
    // The bottleneck runs at 10 Gb/s at first and at 100 Gb/s from 5 us on: the ideal must
    // use the rate the link reaches, not the one it starts with.
    let sim = run(json!({
        "duration": "1ms",
        "topology": {"kind": "dumbbell", "left": 1, "right": 1, "link_rate": "100Gbps", "bottleneck_rate": "10Gbps"},
        "link": [{"from": "left", "to": "right", "schedule": [{"at": "5us", "rate": "100Gbps"}]}],
        "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": 200_000}]}],
    }));
    let f = &sim.flows()[0];
    let fct = f.snd.finished.expect("finished") - f.path.start;
    assert!(fct >= f.stats.ideal_fct, "FCT {fct} ps, ideal {} ps", f.stats.ideal_fct);
}
