//! Links that change (`[[link]]`, `set_link_rate`), each shown by a real
//! simulation: rate steps take effect at their instant, random loss has its
//! rate and transports recover from it, a policer caps throughput, a mahimahi
//! trace delivers at its mean rate, and bad entries name their field.

use ccgym_sim::units::{MS, SEC, US};
use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

const G: u64 = 1_000_000_000;
/// A full data packet on the wire (1,024 B payload + 48 B header).
const PKT: u64 = 1_072;

fn build(scenario: Value) -> Simulation {
    Simulation::from_json(&scenario.to_string(), Path::new(".")).expect("valid scenario")
}

/// Port id of the link direction `from -> to`.
fn port(sim: &Simulation, from: &str, to: &str) -> u32 {
    (0..sim.ports().len() as u32).find(|&p| sim.port_name(p) == format!("{from}->{to}")).expect("no such link")
}

/// One long flow h1 -> h0 over a 2-host star whose h1 -> sw0 link starts at
/// 10 Gb/s; the flow sends at that line rate with no congestion control, so
/// the h1 uplink is the bottleneck and is always busy.
fn uplink_scenario(link: Value) -> Value {
    json!({
        "duration": "3ms",
        "topology": {"kind": "star", "hosts": 2, "link_rate": "10Gbps", "link_delay": "1us"},
        "cc": {"algorithm": "line_rate"},
        "workload": [{"kind": "flows", "flows": [{"src": 1, "dst": 0}]}],
        "link": link,
    })
}

/// Bytes port `p` starts sending in each of the given consecutive intervals.
fn bytes_between(sim: &mut Simulation, p: u32, times: &[u64]) -> Vec<u64> {
    let mut out = vec![];
    sim.run_until(times[0]);
    let mut last = sim.ports()[p as usize].tx_bytes;
    for &t in &times[1..] {
        sim.run_until(t);
        let now = sim.ports()[p as usize].tx_bytes;
        out.push(now - last);
        last = now;
    }
    out
}

/// A busy 10 Gb/s port whose rate drops to 2 Gb/s at 1 ms sends 62.5 kB in
/// the 50 us before and 12.5 kB in the 50 us after, each within a packet or
/// two (a packet straddles each boundary), and reports the new rate from then.
fn assert_rate_step_at_1ms(sim: &mut Simulation, p: u32) {
    let t = [MS - 100 * US, MS - 50 * US, MS, MS + 50 * US, MS + 100 * US];
    sim.run_until(t[0]);
    assert_eq!(sim.ports()[p as usize].rate_bps, 10 * G);
    let b = bytes_between(sim, p, &t);
    let at = |rate: u64| rate / 8 * 50 * US / SEC;
    for (i, want) in [at(10 * G), at(10 * G), at(2 * G), at(2 * G)].into_iter().enumerate() {
        assert!(b[i].abs_diff(want) <= 2 * PKT, "interval {i}: {} bytes, expected {want} +- 2 packets", b[i]);
    }
    assert_eq!(sim.ports()[p as usize].rate_bps, 2 * G);
}

#[test]
fn a_scheduled_rate_change_takes_effect_at_its_instant() {
    let scenario = uplink_scenario(json!([
        {"from": "h1", "to": "sw0", "schedule": [{"at": "1ms", "rate": "2Gbps"}]}
    ]));
    let mut sim = build(scenario.clone());
    let p = port(&sim, "h1", "sw0");
    assert_rate_step_at_1ms(&mut sim, p);

    // The packet that straddles the step is charged by integrating across it:
    // its bits before 1 ms at 10 Gb/s, the rest at 2 Gb/s. The sender is
    // back to back, so each packet starts when the previous one ends.
    let mut sim = build(scenario);
    sim.run_until(MS - 5 * US);
    let (mut start, mut end) = (0, sim.ports()[p as usize].busy_until);
    while end <= MS {
        sim.run_until(end);
        (start, end) = (end, sim.ports()[p as usize].busy_until);
    }
    assert!(start < MS, "no packet straddles the step");
    let before = (MS - start) as u128 * 10 * G as u128; // bit-picoseconds sent by 1 ms
    let rest = (PKT as u128 * 8 * SEC as u128 - before).div_ceil(2 * G as u128) as u64;
    assert_eq!(end, MS + rest, "straddling packet started at {start}");
    // The reverse direction is untouched.
    assert_eq!(sim.ports()[port(&sim, "sw0", "h1") as usize].rate_bps, 10 * G);
}

#[test]
fn set_link_rate_mid_run_takes_effect_from_now() {
    let mut sim = build(uplink_scenario(json!([])));
    let p = port(&sim, "h1", "sw0");
    sim.run_until(MS);
    sim.set_link_rate(p, 2 * G).unwrap();
    // Same measurement as the schedule's, on a fresh run paused at 1 ms.
    let mut fresh = build(uplink_scenario(json!([])));
    fresh.run_until(MS - 100 * US);
    let before = bytes_between(&mut fresh, p, &[MS - 100 * US, MS - 50 * US, MS]);
    fresh.set_link_rate(p, 2 * G).unwrap();
    let after = bytes_between(&mut fresh, p, &[MS, MS + 50 * US, MS + 100 * US]);
    for (i, (b, rate)) in before.iter().zip([10 * G; 2]).chain(after.iter().zip([2 * G; 2])).enumerate() {
        let want = rate / 8 * 50 * US / SEC;
        assert!(b.abs_diff(want) <= 2 * PKT, "interval {i}: {b} bytes, expected {want}");
    }
    assert_eq!(fresh.ports()[p as usize].rate_bps, 2 * G);
    // Errors are messages, not panics.
    assert!(sim.set_link_rate(p, 0).is_err());
    assert!(sim.set_link_rate(9_999, G).is_err());
    // Raising it again later works as well; the whole run conserves bytes.
    sim.run_until(2 * MS);
    sim.set_link_rate(p, 5 * G).unwrap();
    let b = bytes_between(&mut sim, p, &[2 * MS + 10 * US, 2 * MS + 110 * US]);
    assert!(b[0].abs_diff(5 * G / 8 * 100 * US / SEC) <= 2 * PKT, "{b:?}");
    // The sender's CC keeps the line rate of its NIC at set-up (documented:
    // the call changes the path, not the NIC).
    assert_eq!(sim.flows()[0].ctl.line_rate, (10 * G) as f64);
}

/// A 100 Gb/s star with one long flow h1 -> h0, 1% loss on sw0 -> h0 (data
/// only: ACKs go the other way) and the given loss recovery.
fn lossy(recovery: &str, cc: &str, size: &str) -> Simulation {
    let mut sim = build(json!({
        "duration": "200ms", "seed": 5,
        "topology": {"kind": "star", "hosts": 2, "link_rate": "100Gbps", "link_delay": "1us"},
        "host": {"loss_recovery": recovery, "rto": "1ms"},
        "cc": {"algorithm": cc},
        "workload": [{"kind": "flows", "flows": [{"src": 1, "dst": 0, "size": size}]}],
        "link": [{"from": "sw0", "to": "h0", "loss": 0.01}],
    }));
    // Conservation holds while packets are being lost.
    for t in [MS / 3, 2 * MS, 7 * MS] {
        sim.run_until(t);
        let c = &sim.summary()["conservation"];
        let g = |k: &str| c[k].as_u64().unwrap();
        assert_eq!(g("sent_bytes"), g("delivered_bytes") + g("dropped_bytes") + g("in_flight_bytes"), "t = {t}");
    }
    sim.run_until(u64::MAX);
    sim
}

/// The loss fraction on sw0 -> h0 is 1% within 4 binomial sigmas.
fn assert_loss_fraction(sim: &Simulation) {
    let p = port(sim, "sw0", "h0") as usize;
    let st = &sim.ports()[p].stats;
    // Every packet on this direction is a full data packet.
    let n = (sim.ports()[p].tx_bytes / PKT) as f64;
    let lost = st.link_drops as f64;
    let sigma = (n * 0.01 * 0.99).sqrt();
    assert!(n > 30_000.0, "only {n} packets");
    assert!((lost - 0.01 * n).abs() < 4.0 * sigma, "{lost} lost of {n} (expected {} +- {})", 0.01 * n, 4.0 * sigma);
    assert_eq!(st.link_drop_bytes, st.link_drops * PKT);
    // Lost data is counted as dropped, and only there: the switch dropped nothing.
    assert_eq!(sim.conservation().dropped_bytes, st.link_drop_bytes);
    let s = sim.summary();
    assert_eq!(s["network"]["link_drops_packets"].as_u64(), Some(st.win_link_drops));
    assert_eq!(s["network"]["drops_packets"].as_u64(), Some(0));
}

#[test]
fn random_loss_has_its_rate_and_tcp_recovers() {
    let sim = lossy("tcp", "newreno", "40MB");
    assert_loss_fraction(&sim);
    let f = &sim.flows()[0];
    assert!(f.snd.finished.is_some(), "the TCP flow did not complete");
    assert!(f.stats.retx_bytes > 0);
}

#[test]
fn random_loss_has_its_rate_and_go_back_n_recovers() {
    let sim = lossy("go_back_n", "dcqcn", "40MB");
    assert_loss_fraction(&sim);
    let f = &sim.flows()[0];
    assert!(f.snd.finished.is_some(), "the go-back-N flow did not complete");
    assert!(f.stats.nacks > 0);
}

#[test]
fn a_policer_caps_long_run_throughput_at_its_rate() {
    // 100 Gb/s offered (no congestion control, no limit on bytes in flight)
    // through a 10 Gb/s policer with a 64 KiB burst.
    let run = 20 * MS;
    let mut sim = build(json!({
        "duration": "20ms",
        "topology": {"kind": "star", "hosts": 2, "link_rate": "100Gbps", "link_delay": "1us"},
        "host": {"max_outstanding": 0},
        "cc": {"algorithm": "line_rate"},
        "workload": [{"kind": "flows", "flows": [{"src": 1, "dst": 0}]}],
        "link": [{"from": "sw0", "to": "h0", "policer": {"rate": "10Gbps", "burst": "64KiB"}}],
    }));
    sim.run_until(u64::MAX);
    let delivered = sim.conservation().delivered_bytes;
    let cap = 65_536 + 10 * G / 8 * (run / MS) / 1_000;
    assert!(delivered <= cap, "delivered {delivered} > cap {cap}");
    assert!(delivered as f64 > 0.98 * cap as f64, "delivered {delivered}, far below cap {cap}");
    let st = &sim.ports()[port(&sim, "sw0", "h0") as usize].stats;
    assert!(st.link_drops > 0);
    let c = sim.conservation();
    assert_eq!(c.sent_bytes, c.delivered_bytes + c.dropped_bytes + sim.in_flight_data_bytes());
}

#[test]
fn a_mahimahi_trace_link_delivers_at_the_trace_average_rate() {
    // 12 opportunities of 1,500 B per 10 ms, bunched: a mean of 14.4 Mb/s.
    let dir = std::env::temp_dir().join(format!("ccgym-links-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bursty.trace"), "1\n1\n1\n2\n3\n3\n5\n7\n7\n7\n8\n10\n").unwrap();
    let scenario = json!({
        "duration": "500ms",
        "topology": {"kind": "star", "hosts": 2, "link_rate": "1Gbps", "link_delay": "1us"},
        "cc": {"algorithm": "line_rate"},
        "workload": [{"kind": "flows", "flows": [{"src": 1, "dst": 0}]}],
        "link": [{"from": "sw0", "to": "h0", "trace": "bursty.trace"}],
    });
    let mut sim = Simulation::from_json(&scenario.to_string(), &dir).expect("valid scenario");
    let mut bursts = Simulation::from_json(&scenario.to_string(), &dir).expect("valid scenario");
    std::fs::remove_dir_all(&dir).unwrap();
    let p = port(&sim, "sw0", "h0") as usize;
    assert_eq!(sim.ports()[p].rate_bps, 14_400_000);
    sim.run_until(u64::MAX);
    // 50 periods of 18,000 B, less what is still on the 1 us wire or
    // straddles the last opportunity: within one opportunity and a packet.
    let delivered = sim.conservation().delivered_bytes;
    let want = 50 * 12 * 1_500;
    assert!(delivered.abs_diff(want) <= 1_500 + PKT, "delivered {delivered}, expected {want}");

    // Deliveries happen at the trace's opportunities only: none between 3 and
    // 5 ms of a period, three opportunities' worth at 7 ms (mean-rate
    // serialisation would deliver steadily).
    let at = |sim: &mut Simulation, t: u64| {
        sim.run_until(t);
        sim.conservation().delivered_bytes
    };
    let period = 10 * MS;
    let sim = &mut bursts;
    let (a, b) = (at(sim, period + 3 * MS + 2 * US), at(sim, period + 5 * MS));
    assert_eq!(a, b, "delivered between opportunities");
    let (c, d) = (at(sim, period + 7 * MS - 1), at(sim, period + 7 * MS + 2 * US));
    assert!(d - c >= 3 * 1_500 - PKT && d - c <= 3 * 1_500 + PKT, "7 ms burst delivered {} bytes", d - c);
}

fn config_error(link: Value) -> ccgym_sim::config::ConfigError {
    match Simulation::from_json(&uplink_scenario(link).to_string(), Path::new(".")) {
        Ok(_) => panic!("the scenario should be refused"),
        Err(e) => e,
    }
}

#[test]
fn bad_link_entries_name_their_field() {
    let cases = [
        (json!([{"from": "h9", "to": "sw0", "loss": 0.1}]), "link[0].from"),
        (json!([{"from": "h1", "to": "nowhere", "loss": 0.1}]), "link[0].to"),
        // Both hosts exist but no link joins them.
        (json!([{"from": "h0", "to": "h1", "loss": 0.1}]), "link[0].to"),
        (json!([{"from": "h1", "to": "sw0", "loss": 1.5}]), "link[0].loss"),
        (json!([{"from": "h1", "to": "sw0"}]), "link[0]"),
        (
            json!([{"from": "h1", "to": "sw0", "schedule": [{"at": "2ms", "rate": "1Gbps"}, {"at": "1ms", "rate": "2Gbps"}]}]),
            "link[0].schedule[1].at",
        ),
        (json!([{"from": "h1", "to": "sw0", "policer": {"rate": "1Gbps", "burst": "1KB"}}]), "link[0].policer.burst"),
        (json!([{"from": "h1", "to": "sw0", "trace": "no/such.trace"}]), "link[0].trace"),
        // The same direction twice: the second entry is refused.
        (
            json!([{"from": "h1", "to": "sw0", "loss": 0.1}, {"from": "sw0", "to": "h1", "loss": 0.2, "both_directions": true}]),
            "link[1].from",
        ),
    ];
    for (link, field) in cases {
        let e = config_error(link.clone());
        assert_eq!(e.field, field, "{link}: {e}");
    }
    assert!(config_error(json!([{"from": "h0", "to": "h1", "loss": 0.1}])).message.contains("not adjacent"));
    // Unknown keys are refused by the parser.
    let e = config_error(json!([{"from": "h1", "to": "sw0", "rate": "1Gbps"}]));
    assert!(e.to_string().contains("rate"), "{e}");
}
