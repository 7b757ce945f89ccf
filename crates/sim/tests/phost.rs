//! pHost end to end: free tokens for the first packets, then one token per
//! packet time from the receiver, smallest remaining flow first, tokens that
//! expire, lost packets asked for again by later tokens.

mod common;
use common::{build, conserved, port, HEADER, PAYLOAD, WIRE};

use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

/// A star of `hosts` at 10 Gb/s with pHost's switch ports (strict priority,
/// 36 KB per port, no ECN) and pHost hosts (per-packet SRPT at the NIC).
fn phost(hosts: u32, flows: Value) -> Value {
    phost_with_delay(hosts, flows, "1.5us")
}

/// [`phost`] with another link delay.
fn phost_with_delay(hosts: u32, flows: Value, link_delay: &str) -> Value {
    json!({
        "duration": "20ms",
        "topology": {"kind": "star", "hosts": hosts, "link_rate": "10Gbps", "link_delay": link_delay},
        "switch": {"discipline": "priority", "priorities": 2, "buffer_model": "static", "port_buffer": 36864,
                   "ecn": {"enabled": false}},
        "host": {"scheduler": "srpt", "burst": WIRE},
        "packets": {"payload": PAYLOAD, "header": HEADER},
        "cc": {"algorithm": "phost"},
        "workload": [{"kind": "flows", "flows": flows}],
    })
}

/// [`phost`] on a leaf-spine of 2 x 6 hosts and 4 spines, all links 10 Gb/s,
/// with packet spraying: tokens and data reach their ends out of order.
fn sprayed_leaf_spine(flows: Value) -> Value {
    let mut sc = phost(2, flows);
    sc["topology"] = json!({"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 6,
                            "link_rate": "10Gbps", "link_delay": "1us",
                            "fabric_rate": "10Gbps", "fabric_delay": "1us"});
    sc["switch"]["load_balancing"] = json!("packet");
    sc
}

#[test]
fn incast_drops_only_unscheduled_packets_and_keeps_the_queue_short() {
    // 64 senders of 200 KB into one receiver. Each sends its first 8
    // packets on free tokens at once: the receiver's 36 KB port must drop
    // most of them. From then on the receiver's tokens pace the data.
    let flows: Vec<Value> = (1..=64).map(|i| json!({"src": i, "dst": 0, "size": "200KB"})).collect();
    // Links of 2 us: a base RTT of about 10 us, one BDP of about 8.75
    // packets, as in the paper's 10 Gb/s setting.
    let mut sc = phost_with_delay(65, json!(flows), "2us");
    // Free tokens expire after 9.5 packet times (11.4 us); the last free
    // packets have left the switch by about 70 us (the port holds 24 full
    // packets). The window starts after that.
    sc["metrics"] = json!({"window": ["100us", "20ms"]});
    let mut sim = build(&sc);
    sim.run_until(u64::MAX);
    let down = &sim.ports()[port(&sim, "sw0->h0")];
    assert!(down.stats.drops > 0, "64 x 8 free packets cannot all fit in 36 KB");
    assert_eq!(down.stats.win_drops, 0, "scheduled data is never dropped");
    let bdp = sim.flows()[0].ctl.bdp;
    assert!(down.stats.win_max_queue <= 2 * bdp + WIRE, "queue {} B vs BDP {bdp} B", down.stats.win_max_queue);
    for f in sim.flows() {
        assert!(f.snd.finished.is_some(), "every flow completes");
        assert_eq!(f.stats.timeouts, 0, "losses are repaired by tokens, not timeouts");
    }
    // The receiver's downlink stays busy: the last flow ends within 10% of
    // the time its bytes need at 10 Gb/s (plus the lost free packets).
    let last = sim.flows().iter().map(|f| f.snd.finished.unwrap()).max().unwrap();
    let bytes = 64 * 200_000u64.div_ceil(PAYLOAD) * WIRE;
    let line_time = bytes as f64 * 8.0 / 10e9 * 1e12;
    assert!((last as f64) < 1.1 * line_time, "last completion {last} ps vs {line_time} ps at line rate");
    assert!(conserved(&sim));
}

#[test]
fn tokens_go_to_the_smaller_flow_first_then_back_to_the_larger() {
    // Links of 1.5 us: the BDP (about 7 packets) fits in the token window
    // of 8, so the small flow never stalls on its window (were it larger,
    // the receiver would downgrade the small flow for a while and serve the
    // large one meanwhile, as pHost means it to).
    // A 300 KB flow is under way when a 30 KB flow to the same receiver
    // starts: once the small flow's RTS is in, every token goes to it, and
    // the large flow gets tokens again only when the small one is complete.
    let mut sim = build(&phost(
        3,
        json!([{"src": 1, "dst": 0, "size": "300KB"}, {"src": 2, "dst": 0, "size": "30KB", "start": "50us"}]),
    ));
    let step = 100 * ccgym_sim::units::NS;
    let mut t = 0;
    let mut received_when_small_started = None;
    let mut small_done = None;
    let mut small_tokened = None;
    while small_done.is_none() {
        t += step;
        sim.run_until(t);
        let (large, small) = (&sim.flows()[0], &sim.flows()[1]);
        // Tokens already on their way to the large flow (its window) still
        // arrive: measure from an RTT and a window of packets after the start.
        if t >= 70 * ccgym_sim::units::US && received_when_small_started.is_none() {
            received_when_small_started = Some(large.ph.as_ref().unwrap().received);
        }
        if small_tokened.is_none() && small.ph.as_ref().unwrap().tokens_sent >= small.ctl.size.div_ceil(PAYLOAD) {
            small_tokened = Some(large.ph.as_ref().unwrap().received);
        }
        if small.rcv.rcv_nxt >= small.ctl.size {
            small_done = Some((t, large.ph.as_ref().unwrap().received));
        }
    }
    let (done_at, large_at_done) = small_done.unwrap();
    let before = received_when_small_started.expect("the small flow outlives 20 us");
    assert!(large_at_done < 300_000 && before > 0);
    assert_eq!(large_at_done, before, "the large flow got data while the small flow had tokens to take");
    // Then the large flow resumes and completes.
    sim.run_until(u64::MAX);
    assert!(sim.flows()[0].ph.as_ref().unwrap().received > large_at_done);
    assert!(sim.flows().iter().all(|f| f.snd.finished.is_some()));
    assert!(sim.flows()[1].snd.finished.unwrap() < sim.flows()[0].snd.finished.unwrap());
    assert!(done_at < 100 * ccgym_sim::units::US, "the small flow finishes quickly: {done_at}");
    assert!(conserved(&sim));
}

#[test]
fn a_lost_packet_is_asked_for_again_by_a_later_token() {
    // The sender's uplink loses 3% of packets: lost data (free or
    // tokened) is named again by tokens after the resend timeout; the flow
    // completes without any sender timeout.
    let mut sc = phost(2, json!([{"src": 1, "dst": 0, "size": "300KB"}]));
    sc["link"] = json!([{"from": "h1", "to": "sw0", "loss": 0.03}]);
    let mut sim = build(&sc);
    sim.run_until(u64::MAX);
    let f = &sim.flows()[0];
    let lost = sim.summary()["conservation"]["dropped_bytes"].as_u64().unwrap();
    assert!(lost > 0, "some data must be lost");
    assert!(f.snd.finished.is_some(), "the flow completes");
    assert!(f.stats.retx_bytes > 0, "lost packets are sent again");
    assert_eq!(f.stats.timeouts, 0, "tokens, not the sender's timeout, recover them");
    assert_eq!(f.ph.as_ref().unwrap().received, 300_000);
    // Tokens beyond one per packet were issued: one per lost packet.
    let pkts = 300_000u64.div_ceil(PAYLOAD);
    assert_eq!(f.ph.as_ref().unwrap().tokens_sent, pkts + lost / WIRE, "one token per packet plus one per lost packet");
    assert!(conserved(&sim));
}

#[test]
fn expired_tokens_are_dropped_unspent() {
    // One sender, two receivers: each receiver sends a token per packet
    // time, but the sender's NIC spends one per packet time in all, so
    // about half the tokens expire; every token is either spent, expired or
    // still held when the flow ends.
    let sizes = 100 * PAYLOAD;
    let mut sim = build(&phost(3, json!([{"src": 0, "dst": 1, "size": sizes}, {"src": 0, "dst": 2, "size": sizes}])));
    sim.run_until(u64::MAX);
    let mut expired = 0;
    for f in sim.flows() {
        assert!(f.snd.finished.is_some(), "every flow completes");
        let sent = f.stats.sent_bytes / WIRE;
        assert_eq!(f.stats.sent_bytes % WIRE, 0);
        assert_eq!(
            sent + f.stats.expired_tokens + f.ph.as_ref().unwrap().tokens.len() as u64,
            f.ph.as_ref().unwrap().tokens_sent,
            "each token is spent, expired or held"
        );
        assert_eq!(f.stats.sent_bytes, f.ctl.size / PAYLOAD * WIRE, "no packet is sent twice: nothing is lost");
        expired += f.stats.expired_tokens;
    }
    assert!(expired > 10, "the busy sender lets tokens expire: {expired}");
    // A longer lifetime lets the sender spend more of them.
    let mut sc = phost(3, json!([{"src": 0, "dst": 1, "size": sizes}, {"src": 0, "dst": 2, "size": sizes}]));
    sc["host"]["phost_token_ttl"] = json!(20.0);
    let mut long = build(&sc);
    long.run_until(u64::MAX);
    let long_expired: u64 = long.flows().iter().map(|f| f.stats.expired_tokens).sum();
    assert!(long_expired < expired, "{long_expired} vs {expired}");
}

#[test]
fn phost_fields_are_checked() {
    let flows = json!([{"src": 1, "dst": 0, "size": "10KB"}]);
    for (field, value, needle) in [
        ("phost_window", json!(0), "host.phost_window"),
        ("phost_token_ttl", json!(0.0), "host.phost_token_ttl"),
        ("phost_resend_timeout", json!(-1.0), "host.phost_resend_timeout"),
        ("phost_free_tokens", json!(300), "host.phost_free_tokens"),
        ("phost_hold", json!("never"), "host.phost_hold"),
    ] {
        let mut sc = phost(2, flows.clone());
        sc["host"][field] = value;
        let err = Simulation::from_json(&sc.to_string(), Path::new(".")).err().expect("refused");
        assert!(err.to_string().contains(needle), "{err}");
    }
    // A pHost setting put under `cc` points to where such settings live.
    let mut sc = phost(2, flows.clone());
    sc["cc"]["phost_window"] = json!(16);
    let err = Simulation::from_json(&sc.to_string(), Path::new(".")).err().expect("refused");
    assert!(err.to_string().contains("host.phost_*"), "{err}");
    // A flow without a size: the workload is at fault, and the message says
    // where pHost came from (the CC's transport, not a host setting).
    let sc = phost(2, json!([{"src": 1, "dst": 0}]));
    let err = Simulation::from_json(&sc.to_string(), Path::new(".")).err().expect("refused");
    assert_eq!(err.field, "workload[0]", "{err}");
    assert!(err.to_string().contains("phost (the transport of cc.algorithm = \"phost\") moves finite flows"), "{err}");
}

#[test]
fn yaps_free_tokens_go_only_to_flows_that_fit_in_them() {
    // The paper's rule (default): every flow sends its first 8 packets at
    // once. YAPS's (`phost_free_short_only`): a 100 KB flow waits for the
    // receiver's tokens, a 10 KB flow (7 packets) still sends at once.
    let flows = json!([{"src": 1, "dst": 0, "size": "100KB"}, {"src": 2, "dst": 0, "size": "10KB"}]);
    let sent_at_2us = |short_only: bool| {
        let mut sc = phost(3, flows.clone());
        sc["host"]["phost_free_short_only"] = json!(short_only);
        let mut sim = build(&sc);
        sim.run_until(2 * ccgym_sim::units::US);
        let sent: Vec<u64> = sim.flows().iter().map(|f| f.stats.sent_bytes).collect();
        sim.run_until(u64::MAX);
        assert!(sim.flows().iter().all(|f| f.snd.finished.is_some()));
        assert!(conserved(&sim));
        sent
    };
    let paper = sent_at_2us(false);
    assert!(paper[0] > 0 && paper[1] > 0, "{paper:?}");
    let yaps = sent_at_2us(true);
    assert_eq!(yaps[0], 0, "the large flow waits for a token");
    assert!(yaps[1] > 0);
}

#[test]
fn a_stopped_flow_completes_with_what_it_sent() {
    // The application stops a 1 MB flow at 100 us: the receiver stops asking
    // beyond what was sent and the flow completes at its new size.
    let mut sim = build(&phost(2, json!([{"src": 1, "dst": 0, "size": "1MB", "stop": "100us"}])));
    sim.run_until(u64::MAX);
    let f = &sim.flows()[0];
    assert!(f.snd.finished.is_some(), "the stopped flow completes");
    assert!(
        f.ctl.size < 1_000_000 && f.ph.as_ref().unwrap().received == f.ctl.size,
        "{} of {}",
        f.ph.as_ref().unwrap().received,
        f.ctl.size
    );
    assert!(conserved(&sim));
}

/// Completion time of flow `i` over its ideal (alone in the network).
fn slowdown(sim: &Simulation, i: usize) -> f64 {
    let f = &sim.flows()[i];
    (f.snd.finished.expect("the flow completes") - f.path.start) as f64 / f.stats.ideal_fct as f64
}

#[test]
fn a_flow_whose_rtt_exceeds_the_token_window_is_not_stalled() {
    // Links of 2.5 us: a base RTT of about 12.5 us, 10 packet times, more
    // than the 8 tokens a flow may have outstanding. The receiver skips the
    // flow while its window is full and must take it up again as soon as
    // its data shows up (which reopens the window), not sleep until the
    // downgrade ends 25 packet times after the last token.
    let mut sim = build(&phost_with_delay(2, json!([{"src": 1, "dst": 0, "size": "300KB"}]), "2.5us"));
    sim.run_until(u64::MAX);
    let f = &sim.flows()[0];
    assert!(f.ctl.base_rtt > 9 * ccgym_sim::units::ser_time(WIRE, 10_000_000_000), "the pipe exceeds the window");
    let sd = slowdown(&sim, 0);
    // About 9 tokens per 10 packet times of pipe (1.16); the old sleep: 3.4.
    assert!(sd < 1.2, "a lone flow runs near line rate: slowdown {sd:.3}");
    assert_eq!(f.stats.expired_tokens, 0);
    assert!(conserved(&sim));
}

#[test]
fn tokened_data_follows_the_free_packets_without_a_gap() {
    // A 50 KB flow to an idle receiver: its 8 free packets are about one
    // BDP, so tokens sent as soon as its RTS arrives bring data just as the
    // free packets end. Holding the tokens for the free packets' time (as
    // if the downlink were busy) left it idle for an RTT (slowdown 1.17).
    let mut sim = build(&phost_with_delay(3, json!([{"src": 1, "dst": 0, "size": "50KB", "start": "100us"}]), "2us"));
    sim.run_until(u64::MAX);
    let sd = slowdown(&sim, 0);
    assert!(sd < 1.05, "slowdown {sd:.3}");
    assert!(conserved(&sim));
}

#[test]
fn tokens_leave_room_for_the_control_packets_on_the_downlink() {
    // Host 0 receives long flows from hosts 1 and 3 while it sends one to
    // host 2: its downlink carries the data of the tokens host 0 issues
    // (one per packet time) and host 2's tokens for host 0's own flow (64
    // bytes per packet time). With one token per full-packet time whatever
    // else arrives (YAPS's pacing), the downlink is 4 % oversubscribed: its
    // queue grows by a token's bytes per packet time, held back only by the
    // flows' token windows (16 here, two flows' worth), until the 36 KB
    // port drops scheduled data (measured: 71 drops). Counting the control
    // packets keeps the queue near empty (measured: 6 KB).
    let run = |count_control: bool| {
        let flows = json!([
            {"src": 1, "dst": 0, "size": "3MB"},
            {"src": 3, "dst": 0, "size": "3MB"},
            {"src": 0, "dst": 2, "size": "3MB"}
        ]);
        let mut sc = phost(4, flows);
        sc["host"]["phost_count_control"] = json!(count_control);
        sc["host"]["phost_window"] = json!(16); // the receiver-driven suite's preset
        sc["metrics"] = json!({"window": ["100us", "20ms"]});
        let mut sim = build(&sc);
        sim.run_until(u64::MAX);
        assert!(sim.flows().iter().all(|f| f.snd.finished.is_some()));
        assert!(conserved(&sim));
        let down = &sim.ports()[port(&sim, "sw0->h0")];
        (down.stats.win_drops, down.stats.win_max_queue, sim.flows()[0].ctl.bdp)
    };
    let (drops, queue, bdp) = run(true);
    assert_eq!(drops, 0, "scheduled data is never dropped");
    assert!(queue <= 2 * bdp + WIRE, "queue {queue} B vs BDP {bdp} B");
    // The old pacing (now `phost_count_control = false`): a standing queue up
    // to the 36 KB port, then drops.
    let (drops, queue, _) = run(false);
    assert!(drops > 0 && queue > 30_000, "YAPS's pacing overfills the downlink: {drops} drops, queue {queue} B");
}

#[test]
fn only_packets_sent_twice_count_as_retransmitted() {
    // Tokens cross a leaf-spine with packet spraying, so they reach the
    // senders out of order and a packet below the highest one sent may
    // still be a first transmission. Every packet is full (sizes in whole
    // payloads), so a flow's transmissions are its sent bytes over the wire
    // size, and its retransmitted bytes must be the payloads beyond one per
    // packet: no more (reordered first transmissions) and no less.
    let flows: Vec<Value> = (0..12)
        .map(|i| {
            let size = (40 + 30 * (i % 4)) * PAYLOAD;
            json!({"src": i % 6, "dst": 6 + (i % 5) % 6, "size": size, "start": format!("{}us", 3 * i)})
        })
        .collect();
    let sc = sprayed_leaf_spine(json!(flows));
    let mut sim = build(&sc);
    sim.run_until(u64::MAX);
    let mut resent = 0;
    for (i, f) in sim.flows().iter().enumerate() {
        assert!(f.snd.finished.is_some(), "every flow completes");
        assert_eq!(f.stats.sent_bytes % WIRE, 0, "full packets only");
        let extra = f.stats.sent_bytes / WIRE - f.ctl.size / PAYLOAD;
        assert_eq!(f.stats.retx_bytes, extra * PAYLOAD, "flow {i}: resent packets");
        resent += extra;
    }
    assert!(resent > 0, "the setting must resend some packets (its spine ports are shared)");
    assert!(conserved(&sim));
}

#[test]
fn an_rts_with_free_packets_holds_the_tokens_by_the_chosen_rule() {
    // A 100 KB flow into an idle receiver sends its first 8 packets on free
    // tokens; its RTS tells the receiver, which holds its tokens while those
    // packets take its downlink. YAPS's rule (`phost_hold = "yaps"`) passes
    // 8 token slots (8 full-packet times) from the RTS; ccgym's default
    // (`"adaptive"`) takes off the time the receiver had been idle, up to a
    // base RTT, since the free packets meet no earlier tokens' data.
    let first_token_after_rts = |hold: &str| {
        let mut sc = phost(2, json!([{"src": 1, "dst": 0, "size": "100KB"}]));
        sc["host"]["phost_hold"] = json!(hold);
        let mut sim = build(&sc);
        let step = 10 * ccgym_sim::units::NS;
        let (mut t, mut rts_at) = (0, None);
        loop {
            t += step;
            sim.run_until(t);
            let f = &sim.flows()[0];
            if rts_at.is_none() && f.rcv.requested > 0 {
                rts_at = Some(t);
            }
            if f.ph.as_ref().unwrap().tokens_sent > 8 {
                break;
            }
        }
        sim.run_until(u64::MAX);
        assert!(sim.flows()[0].snd.finished.is_some());
        assert!(conserved(&sim));
        (t - rts_at.unwrap()) as f64 / ccgym_sim::units::US as f64
    };
    let t_pkt_us = WIRE as f64 * 8.0 / 10e9 * 1e6;
    let yaps = first_token_after_rts("yaps");
    assert!((yaps - 8.0 * t_pkt_us).abs() < 0.02, "YAPS holds 8 slots of {t_pkt_us} us: {yaps} us");
    let adaptive = first_token_after_rts("adaptive");
    assert!(adaptive < yaps - 1.0, "an idle receiver holds for less: {adaptive} against {yaps} us");
}

#[test]
fn a_flow_receiving_out_of_order_is_counted_at_its_arrival_rate() {
    // Six senders start at once into each of two receivers across a
    // leaf-spine with packet spraying. Their free packets overflow the
    // receivers' 36 KB ports, and pHost asks for a lost packet again only
    // after its tokens have cycled through the rest, so a flow holds most of
    // its bytes beyond its first hole. Its throughput must count those bytes
    // as they arrive: the in-order point alone stands still and then jumps
    // by everything held, over a short interval a rate above the link's.
    let flows: Vec<Value> = (0..12)
        .map(|i| json!({"src": i % 6, "dst": 6 + i % 2, "size": 300 * PAYLOAD, "start": format!("{}ns", 50 * i)}))
        .collect();
    let mut sc = sprayed_leaf_spine(json!(flows));
    sc["metrics"] = json!({"window": ["200us", "600us"]});
    let mut sim = build(&sc);
    let step = 10 * ccgym_sim::units::US;
    // The most a 10 Gb/s link delivers in one step, plus one packet that was
    // on the wire when the step began.
    let most = 10e9 / 8.0 * 10e-6 * PAYLOAD as f64 / WIRE as f64 + PAYLOAD as f64;
    let n = sim.flows().len();
    let (mut received, mut in_order) = (vec![0u64; n], vec![0u64; n]);
    let (mut held_seen, mut in_order_jumps) = (false, 0);
    let mut t = 0;
    while t < 3 * ccgym_sim::units::MS {
        t += step;
        sim.run_until(t);
        for (i, f) in sim.flows().iter().enumerate() {
            let r = f.rcv.received_bytes();
            assert!(r >= f.rcv.rcv_nxt && r <= f.ctl.size, "flow {i}: {r} received of {}", f.ctl.size);
            held_seen |= r > f.rcv.rcv_nxt;
            assert!((r - received[i]) as f64 <= most, "flow {i}: {} B in 10 us at {t} ps", r - received[i]);
            if (f.rcv.rcv_nxt - in_order[i]) as f64 > most {
                in_order_jumps += 1;
            }
            received[i] = r;
            in_order[i] = f.rcv.rcv_nxt;
        }
    }
    assert!(held_seen, "spraying must reorder some data");
    assert!(in_order_jumps > 0, "the in-order point jumps above the line rate in this setting");
    // The window's rate is the same count, and stays within the host link.
    for (i, f) in sim.flows().iter().enumerate() {
        let [Some(a), Some(b)] = f.stats.received_at_window else { panic!("window not reached") };
        let gbps = (b - a) as f64 * 8.0 / 400e-6 / 1e9;
        assert!(gbps <= 10.0 * PAYLOAD as f64 / WIRE as f64 + 0.05, "flow {i}: {gbps} Gb/s in the window");
    }
    assert!(conserved(&sim));
}
