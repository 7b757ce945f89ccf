//! NDP end to end: trimming switches cut what a full queue cannot hold, the
//! receiver NACKs the headers and paces its pulls at its downlink rate, the
//! senders resend cut packets first and send one packet per pull.

mod common;
use common::{conserved, port, run_to_end as run, trimming_star, HEADER, PAYLOAD, WIRE};

use ccgym_sim::units::US;
use ccgym_sim::Simulation;
use serde_json::{json, Value};

/// The trimming star with NDP hosts.
fn ndp(hosts: u32, flows: Value) -> Value {
    trimming_star(hosts, flows, "ndp")
}

#[test]
fn incast_cuts_packets_instead_of_dropping_them_and_keeps_the_link_busy() {
    // 32 senders of 200 KB into one receiver: their initial windows (one
    // BDP each, about 9 packets) meet at a port that holds 8 packets, so
    // most are cut; the headers reach the receiver, which NACKs them and
    // pulls them again. Nothing is dropped and no sender times out.
    let flows: Vec<Value> = (1..=32).map(|i| json!({"src": i, "dst": 0, "size": "200KB"})).collect();
    let sim = run(&ndp(33, json!(flows)));
    let down = &sim.ports()[port(&sim, "sw0->h0")];
    assert!(down.stats.trims > 100, "32 initial windows into 8 packets: {} cut", down.stats.trims);
    assert_eq!(down.stats.drops, 0, "a trimming port drops nothing here");
    assert!(down.stats.max_queue <= 8 * WIRE + 32 * 9 * HEADER, "queue {} B", down.stats.max_queue);
    let mut nacks = 0;
    for f in sim.flows() {
        assert!(f.snd.finished.is_some(), "every flow completes");
        assert_eq!(f.stats.timeouts, 0, "cut packets are resent on NACKs, not timeouts");
        nacks += f.stats.nacks;
    }
    assert_eq!(nacks, down.stats.trims, "one NACK per cut header");
    // After the first round trip the pulls pace the data: the receiver's
    // link stays busy, and the last flow ends within 3% of the time all the
    // bytes need at 10 Gb/s (1.2% in this run: cut packets cost the
    // downlink a header each).
    let last = sim.flows().iter().map(|f| f.snd.finished.unwrap()).max().unwrap();
    let bytes = 32 * 200_000u64.div_ceil(PAYLOAD) * WIRE;
    let line = bytes as f64 * 8.0 / 10e9 * 1e12;
    assert!((last as f64) < 1.03 * line, "last completion {last} ps vs {line} ps at line rate");
    assert!(conserved(&sim));
}

#[test]
fn a_cut_packet_is_resent_before_new_data_and_the_queue_stays_within_the_window() {
    // After the initial windows, every packet in flight was pulled by the
    // receiver at its link rate: from then on the receiver's port never
    // holds much more than the packets the initial windows left there.
    let flows: Vec<Value> = (1..=8).map(|i| json!({"src": i, "dst": 0, "size": "1MB"})).collect();
    let mut sc = ndp(9, json!(flows));
    sc["metrics"] = json!({"window": ["200us", "50ms"]});
    let sim = run(&sc);
    let down = &sim.ports()[port(&sim, "sw0->h0")];
    assert_eq!(down.stats.win_trims, 0, "pulled data is never cut");
    assert!(down.stats.win_max_queue <= 8 * WIRE, "queue {} B after the first RTTs", down.stats.win_max_queue);
    let retx: u64 = sim.flows().iter().map(|f| f.stats.retx_bytes).sum();
    let cut = down.stats.trims;
    assert!(cut > 0);
    // Each cut packet was resent once, and nothing else.
    let cut_payload = cut * PAYLOAD;
    assert!(retx <= cut_payload && retx + PAYLOAD * 8 >= cut_payload, "resent {retx} B for {cut} cut packets");
    assert!(sim.flows().iter().all(|f| f.snd.finished.is_some()));
}

#[test]
fn pulls_share_the_receiver_equally_between_long_flows() {
    // Two long flows into one receiver: the pull pacer serves them in turn,
    // so their rates are equal, together the receiver's 10 Gb/s (less the
    // pacer's 1% and the headers).
    let sc = {
        let mut sc = ndp(3, json!([{"src": 1, "dst": 0}, {"src": 2, "dst": 0}]));
        sc["duration"] = json!("5ms");
        sc["metrics"] = json!({"window": ["1ms", "5ms"]});
        sc
    };
    let sim = run(&sc);
    let rates: Vec<f64> = sim
        .flows()
        .iter()
        .map(|f| {
            let [Some(start), Some(end)] = f.stats.received_at_window else { panic!("window not reached") };
            (end - start) as f64 * 8.0 / 4e-3 / 1e9
        })
        .collect();
    let (a, b) = (rates[0], rates[1]);
    assert!((a - b).abs() / (a + b) < 0.01, "shares {a:.3} and {b:.3} Gb/s");
    let ideal = 10.0 * 0.99 * PAYLOAD as f64 / WIRE as f64;
    assert!(a + b > 0.97 * ideal && a + b <= ideal * 1.001, "total {} Gb/s vs {ideal:.3}", a + b);
}

#[test]
fn srpt_pulls_speed_up_the_smaller_flow_as_far_as_its_window_allows() {
    // A 2 MB flow is under way when a 200 KB flow to the same receiver
    // starts. Round-robin pulls share the link between them. SRPT pulls
    // (`host.ndp_pull_order = "srpt"`) serve the small flow's pull requests
    // first, but an NDP flow keeps its initial window in flight (each arrival
    // pulls one packet), so the small flow's second window adds a standing
    // queue at the receiver's port that only the pacer's 1 % margin drains:
    // its round trip grows by that queue, its rate is its window per round
    // trip, and the large flow takes the slots left. Measured: 337 us round
    // robin, 301 us SRPT, 164 us alone.
    let fct = |order: &str| {
        let mut sc = ndp(
            3,
            json!([{"src": 1, "dst": 0, "size": "2MB"}, {"src": 2, "dst": 0, "size": "200KB", "start": "100us"}]),
        );
        sc["host"] = json!({"ndp_pull_order": order});
        let sim = run(&sc);
        let small = &sim.flows()[1];
        (small.snd.finished.unwrap() - small.path.start) as f64
    };
    let (rr, srpt) = (fct("round_robin"), fct("srpt"));
    let alone = 200_000u64.div_ceil(PAYLOAD) as f64 * WIRE as f64 * 8.0 / 10e9 * 1e12;
    assert!(rr > 1.9 * alone, "round robin: {rr} ps vs {alone} ps alone");
    assert!(srpt < 0.93 * rr, "srpt {srpt} ps vs round robin {rr} ps");
}

#[test]
fn the_pull_pacer_spaces_pulls_by_a_packet_time_at_the_downlink() {
    // One 2 MB flow with an initial window of twice its BDP: after that
    // window, data arrives at the pacer's rate, 0.99 x 10 Gb/s, not at the
    // sender's line rate. (Each arrival pulls one packet, so the packets in
    // flight stay at the initial window: a window below one BDP would
    // limit the flow to a window per round trip, as in NDP.)
    let mut sc = ndp(2, json!([{"src": 1, "dst": 0, "size": "2MB"}]));
    sc["host"] = json!({"ndp_iw": 16});
    let sim = run(&sc);
    let f = &sim.flows()[0];
    let fct = f.snd.finished.unwrap() as f64;
    let pkts = 2_000_000u64.div_ceil(PAYLOAD) as f64;
    let t_pkt = WIRE as f64 * 8.0 / 10e9 * 1e12;
    // (pkts - iw) pulled packets at one per t_pkt / 0.99.
    let paced = (pkts - 16.0) * t_pkt / 0.99;
    assert!(fct > paced && fct < paced + 20.0 * US as f64, "FCT {fct} ps vs paced {paced} ps");
    assert_eq!(sim.ports()[port(&sim, "sw0->h0")].stats.trims, 0, "one flow never fills the port");
}

#[test]
fn a_full_header_queue_drops_headers_and_the_timeout_recovers() {
    // A header queue of two headers: in a 32-sender incast most cut headers
    // are dropped, their packets are neither NACKed nor pulled again, and
    // only the sender's timeout resends them.
    let flows: Vec<Value> = (1..=32).map(|i| json!({"src": i, "dst": 0, "size": "50KB"})).collect();
    let mut sc = ndp(33, json!(flows));
    sc["switch"]["trim_header_queue"] = json!(2 * HEADER);
    sc["host"] = json!({"rto": "200us"});
    let sim = run(&sc);
    let down = &sim.ports()[port(&sim, "sw0->h0")];
    assert!(down.stats.drops > 0, "headers beyond two are dropped");
    let timeouts: u64 = sim.flows().iter().map(|f| f.stats.timeouts).sum();
    assert!(timeouts > 0);
    assert!(sim.flows().iter().all(|f| f.snd.finished.is_some()), "the timeout repairs every loss");
    assert!(conserved(&sim));
}

#[test]
fn a_tcp_flow_through_trimming_ports_takes_a_cut_packet_as_a_loss() {
    // Trimming is a switch setting: a NewReno flow's cut packets reach its
    // receiver as headers, which it ignores; its own recovery resends them.
    let mut sc = ndp(3, json!([{"src": 1, "dst": 0, "size": "2MB"}, {"src": 2, "dst": 0, "size": "2MB"}]));
    sc["cc"] = json!({"algorithm": "newreno"});
    let sim = run(&sc);
    assert!(sim.ports()[port(&sim, "sw0->h0")].stats.trims > 0);
    assert!(sim.flows().iter().all(|f| f.snd.finished.is_some()));
    assert!(conserved(&sim));
}

#[test]
fn the_coin_cuts_queued_packets_as_often_as_arrivals() {
    // With the queue full, a fair coin picks the packet queued last or the
    // arrival (htsim's rule, which keeps senders' phases from deciding who
    // is cut): about half the cuts take a queued packet.
    let flows = || json!((1..=16).map(|i| json!({"src": i, "dst": 0, "size": "100KB"})).collect::<Vec<_>>());
    let sim = run(&ndp(17, flows()));
    let down = &sim.ports()[port(&sim, "sw0->h0")];
    let (cut, queued) = (down.stats.trims, down.stats.trims_queued);
    assert!(cut > 50, "{cut} cuts");
    let share = queued as f64 / cut as f64;
    assert!((0.35..0.65).contains(&share), "{queued} of {cut} cuts took a queued packet");
    assert!(sim.flows().iter().all(|f| f.snd.finished.is_some()));
    // A deterministic run: the same scenario gives the same cuts.
    let again = run(&ndp(17, flows()));
    assert_eq!(again.ports()[port(&again, "sw0->h0")].stats.trims_queued, queued);
}

#[test]
fn bad_ndp_settings_are_refused_with_the_field_named() {
    for (host, switch, field) in [
        (json!({"ndp_iw": 0}), json!({}), "host.ndp_iw"),
        (json!({"ndp_iw": 5000}), json!({}), "host.ndp_iw"),
        (json!({"ndp_pull_rate": 0.0}), json!({}), "host.ndp_pull_rate"),
        (json!({"ndp_pull_rate": 1.5}), json!({}), "host.ndp_pull_rate"),
        (json!({"ndp_pull_order": "fifo"}), json!({}), "host.ndp_pull_order"),
        (json!({}), json!({"trim": true, "discipline": "rank"}), "switch.trim"),
    ] {
        let mut sc = ndp(3, json!([{"src": 1, "dst": 0, "size": "10KB"}]));
        sc["host"] = host;
        for (k, v) in switch.as_object().unwrap() {
            sc["switch"][k] = v.clone();
        }
        let err = Simulation::from_json(&sc.to_string(), std::path::Path::new(".")).err().expect("refused");
        assert!(err.to_string().contains(field), "{err} should name {field}");
    }
}

#[test]
fn one_receiver_serves_one_receiver_driven_transport() {
    // A host's pull pacer and a pHost or HOPASS token scheduler are the same
    // scheduler: flows of two such transports into one host are refused,
    // naming the second workload's CC.
    let mut sc = ndp(3, json!([{"src": 1, "dst": 0, "size": "10KB"}]));
    sc["workload"] = json!([
        {"kind": "flows", "flows": [{"src": 1, "dst": 0, "size": "10KB"}]},
        {"kind": "flows", "flows": [{"src": 2, "dst": 0, "size": "10KB"}], "cc": {"algorithm": "phost"}},
    ]);
    let err = Simulation::from_json(&sc.to_string(), std::path::Path::new(".")).err().expect("refused");
    let text = err.to_string();
    assert!(text.contains("workload[1].cc.algorithm") && text.contains("ndp") && text.contains("phost"), "{text}");
    // Other receivers, or a transport without a receiver scheduler, are fine.
    sc["workload"][1]["flows"][0]["dst"] = json!(1);
    sc["workload"][1]["flows"][0]["src"] = json!(2);
    assert!(Simulation::from_json(&sc.to_string(), std::path::Path::new(".")).is_ok());
    sc["workload"][1]["flows"][0]["dst"] = json!(0);
    sc["workload"][1]["cc"] = json!({"algorithm": "newreno"});
    assert!(Simulation::from_json(&sc.to_string(), std::path::Path::new(".")).is_ok());
}
