//! SACK recovery (`host.sack`, RFC 6675) end to end: a slow-start overshoot
//! drops a burst of packets in one window; with SACK the sender repairs them
//! all in about one round trip, without it (NewReno) one per round trip.

use ccgym_sim::sim::Simulation;
use ccgym_sim::units::MS;
use serde_json::{json, Value};
use std::path::Path;

/// One flow of `cc` on a 12 Mb/s, 60 ms RTT path with a 30-packet buffer:
/// slow start overflows it by tens of packets in one window.
fn overshoot(sack: bool, cc: &str) -> Value {
    overshoot_with_timer(sack, cc, "every_partial_ack")
}

/// [`overshoot`] with `host.newreno_timer`.
fn overshoot_with_timer(sack: bool, cc: &str, timer: &str) -> Value {
    json!({
        "duration": "4s", "seed": 1,
        "topology": {"kind": "dumbbell", "left": 1, "right": 1, "link_rate": "1Gbps", "link_delay": "0s",
                     "bottleneck_rate": "12Mbps", "bottleneck_delay": "30ms"},
        "switch": {"queue_cap": 45000, "ecn": {"enabled": false}, "pfc": {"enabled": false}},
        "host": {"loss_recovery": "tcp", "rto": "1s", "rto_min": "200ms", "max_outstanding": 0, "burst": 1500,
                 "sack": sack, "newreno_timer": timer},
        "packets": {"payload": 1460, "header": 40},
        "cc": {"algorithm": cc},
        "metrics": {"sample_interval": "10ms"},
        "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1}]}],
    })
}

/// The first loss recovery of flow 0: (segments retransmitted in it, its
/// length in ms, or until the end of the run if it does not end, timeouts
/// by its end).
fn first_recovery(sack: bool, cc: &str) -> (u64, f64, u64) {
    first_recovery_of(overshoot(sack, cc))
}

/// [`first_recovery`] of any scenario.
fn first_recovery_of(scenario: Value) -> (u64, f64, u64) {
    let mut sim = Simulation::from_json(&scenario.to_string(), Path::new(".")).unwrap();
    let mut start = None;
    let mut t = 0;
    while t < sim.end() {
        t += MS;
        sim.run_until(t);
        let f = &sim.flows()[0];
        match (start, f.tcp.recover.is_some()) {
            (None, true) => start = Some(t),
            (Some(s), false) => {
                let segments = f.stats.retx_bytes / 1460;
                return (segments, (t - s) as f64 / MS as f64, f.stats.timeouts);
            }
            _ => {}
        }
    }
    let f = &sim.flows()[0];
    let s = start.expect("a loss recovery");
    (f.stats.retx_bytes / 1460, (t - s) as f64 / MS as f64, f.stats.timeouts)
}

#[test]
fn sack_repairs_a_burst_loss_in_about_one_round_trip() {
    for cc in ["newreno", "cubic"] {
        let (lost, ms, timeouts) = first_recovery(true, cc);
        eprintln!("{cc} sack: {lost} segments resent, recovery {ms} ms, {timeouts} timeouts");
        assert!(lost >= 10, "{cc}: the overshoot should drop a burst, dropped {lost}");
        // The losses are found together and resent in the first round trip of
        // recovery; the recovery ends when the last resend is acknowledged. The
        // RTT is 60 ms plus 30 ms with the 30-packet queue full.
        assert!(ms < 3.0 * 90.0, "{cc}: recovery took {ms} ms for {lost} segments");
        assert_eq!(timeouts, 0, "{cc}");
        // NewReno without SACK repairs one hole per round trip.
        let (lost_nr, ms_nr, _) = first_recovery(false, cc);
        eprintln!("{cc} no sack: {lost_nr} segments resent, recovery {ms_nr} ms");
        assert!(ms_nr > 5.0 * ms, "{cc}: without SACK {ms_nr} ms, with {ms} ms");
    }
}

#[test]
fn with_the_first_partial_ack_timer_newreno_times_out_instead_of_crawling() {
    // The same burst loss without SACK. With every partial ACK restarting the
    // timer, NewReno repairs one hole per round trip and never times out;
    // with only the first restarting it (RFC 6582, ns-3), the timer fires a
    // timeout after that ACK and the sender goes back to its first hole:
    // the recovery ends in a timeout, sooner.
    let (lost, ms, timeouts) = first_recovery(false, "newreno");
    assert!(lost >= 10, "the overshoot should drop a burst, dropped {lost}");
    assert_eq!(timeouts, 0, "each partial ACK restarts the timer");
    let (_, ms_first, timeouts_first) = first_recovery_of(overshoot_with_timer(false, "newreno", "first_partial_ack"));
    eprintln!("newreno: {ms} ms, 0 timeouts; first partial ACK only: {ms_first} ms, {timeouts_first} timeouts");
    assert!(timeouts_first >= 1, "the timer fires during the recovery");
    assert!(ms_first < 0.5 * ms, "first partial ACK only: {ms_first} ms, every partial ACK: {ms} ms");
    // With SACK the option changes nothing: the scoreboard repairs the burst.
    let sack = |timer| first_recovery_of(overshoot_with_timer(true, "newreno", timer));
    assert_eq!(sack("every_partial_ack"), sack("first_partial_ack"));
}
