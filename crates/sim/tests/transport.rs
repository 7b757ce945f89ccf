//! The transport seam: smallest-remaining-first NIC order, the receiver's
//! grant scheduler and the credit gate of the minimal credit transport, and
//! the checks of their scenario fields. (Go-back-N and TCP results are pinned
//! by the golden test.)

use ccgym_sim::units::{ser_time, NS};
use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

fn build(scenario: &Value) -> Simulation {
    Simulation::from_json(&scenario.to_string(), Path::new(".")).expect("valid scenario")
}

/// Host 0 sends three flows to host 1: 30 kB, 10 kB and 20 kB, in that
/// order, all at once.
fn three_sizes(scheduler: &str) -> Value {
    json!({
        "duration": "1ms",
        "topology": {"kind": "star", "hosts": 2, "link_rate": "100Gbps", "link_delay": "1us"},
        "host": {"scheduler": scheduler},
        "workload": [{"kind": "flows", "flows": [
            {"src": 0, "dst": 1, "size": 30000, "start": "1us"},
            {"src": 0, "dst": 1, "size": 10000, "start": "1us"},
            {"src": 0, "dst": 1, "size": 20000, "start": "1us"},
        ]}],
    })
}

/// Steps `sim` 1 ns at a time until flow `fid` has put its last byte on the
/// wire; returns the data bytes each flow had sent by then.
fn sent_when_done(sim: &mut Simulation, fid: usize) -> Vec<u64> {
    let mut t = 0;
    while sim.flows()[fid].ctl.snd_nxt < sim.flows()[fid].ctl.size {
        t += NS;
        assert!(!sim.run_until(t), "flow {fid} never sent all its data");
    }
    sim.flows().iter().map(|f| f.stats.sent_bytes).collect()
}

#[test]
fn srpt_nic_sends_the_smallest_flow_first() {
    let burst = 4 * 1072; // the first pick's 4 KiB burst: four full packets
    let mut sim = build(&three_sizes("srpt"));
    // Flow 0 starts first and sends one burst alone; from then on the NIC
    // serves the smallest remaining flow: all of flow 1, then all of flow 2.
    let sent = sent_when_done(&mut sim, 1);
    assert_eq!(sent[0], burst as u64, "the 30 kB flow sent beyond its first burst: {sent:?}");
    assert_eq!(sent[2], 0, "the 20 kB flow sent before the 10 kB one was done: {sent:?}");
    let sent = sent_when_done(&mut sim, 2);
    assert_eq!(sent[0], burst as u64, "the 30 kB flow sent before the 20 kB one was done: {sent:?}");
    sim.run_until(u64::MAX);
    let done: Vec<u64> = sim.flows().iter().map(|f| f.snd.finished.expect("completes")).collect();
    assert!(done[1] < done[2] && done[2] < done[0], "completion order {done:?}");

    // Round robin (the default) interleaves them: the same check fails.
    let mut rr = build(&three_sizes("round_robin"));
    let sent = sent_when_done(&mut rr, 1);
    assert!(sent[2] > 0 && sent[0] > burst as u64, "round robin should interleave: {sent:?}");
}

/// Hosts 0 and 1 each send 8 packets to host 2 over the credit transport.
fn credit_incast() -> Value {
    json!({
        "duration": "1ms",
        "topology": {"kind": "star", "hosts": 3, "link_rate": "100Gbps", "link_delay": "1us"},
        "host": {"loss_recovery": "credit"},
        "workload": [{"kind": "flows", "class": 1, "flows": [
            {"src": 0, "dst": 2, "size": 8192},
            {"src": 1, "dst": 2, "size": 8192},
        ]}],
    })
}

#[test]
fn grant_scheduler_alternates_one_packet_per_token() {
    let mut sim = build(&credit_incast());
    let mut grants: Vec<(u64, usize, u64)> = Vec::new(); // (time, flow, granted offset)
    let mut last = [0u64; 2];
    let mut t = 0;
    while t < 20_000 * NS {
        t += NS;
        sim.run_until(t);
        for (i, f) in sim.flows().iter().enumerate() {
            // The credit gate: no data beyond what the receiver granted.
            assert!(f.snd.max_sent <= f.rcv.granted, "flow {i} sent {} beyond grant {}", f.snd.max_sent, f.rcv.granted);
            if f.rcv.granted != last[i] {
                grants.push((t, i, f.rcv.granted));
                last[i] = f.rcv.granted;
            }
        }
    }
    // Flow 1's RTS reaches host 2 one RTS time (5 ns) after flow 0's, just
    // after flow 0's first token, which put flow 0 back in the round ahead
    // of it. From then on the tokens alternate until flow 0 has all 8.
    let order: Vec<usize> = grants.iter().map(|g| g.1).collect();
    let mut expected = vec![0];
    expected.extend([0, 1].repeat(7));
    expected.push(1);
    assert_eq!(order, expected, "grant order {grants:?}");
    let mut per_flow = [0u64; 2];
    for g in &grants {
        per_flow[g.1] += 1024;
        assert_eq!(g.2, per_flow[g.1], "each token grants one more packet: {grants:?}");
    }
    // One token per packet time at the receiver's 100 Gb/s downlink.
    let token = ser_time(1024 + 48, 100_000_000_000);
    for w in grants.windows(2) {
        let gap = w[1].0 - w[0].0;
        assert!(gap.abs_diff(token) <= NS, "tokens {gap} ps apart, expected {token}: {grants:?}");
    }
    for (i, f) in sim.flows().iter().enumerate() {
        assert!(f.snd.finished.is_some(), "flow {i} did not complete");
        assert_eq!(f.snd.granted, 8192);
        assert_eq!(f.snd.grant_prio, 0, "by default a grant carries the class's priority (class - 1)");
        assert_eq!(f.stats.retx_bytes, 0);
    }
}

#[test]
fn credit_flow_waits_for_its_grant() {
    // Without a grant nothing is sent: by the time the first grant can be
    // back (RTS there, grant back: two one-way trips), no data has left.
    let mut sim = build(&credit_incast());
    sim.run_until(3_900 * NS);
    assert!(sim.flows().iter().all(|f| f.stats.sent_bytes == 0));
    sim.run_until(u64::MAX);
    assert!(sim.flows().iter().all(|f| f.snd.finished.is_some()));
}

#[test]
fn transport_fields_are_checked() {
    let base = credit_incast();
    let err = |patch: Value| {
        let mut sc = base.clone();
        for (table, fields) in patch.as_object().unwrap() {
            for (k, v) in fields.as_object().unwrap() {
                sc[table.as_str()][k.as_str()] = v.clone();
            }
        }
        Simulation::from_json(&sc.to_string(), Path::new(".")).err().expect("must be rejected")
    };
    assert_eq!(err(json!({"host": {"scheduler": "fifo"}})).field, "host.scheduler");
    assert_eq!(err(json!({"host": {"loss_recovery": "grants"}})).field, "host.loss_recovery");
    assert_eq!(err(json!({"packets": {"rts": 0}})).field, "packets.rts");
    assert_eq!(err(json!({"packets": {"grant": 70000}})).field, "packets.grant");
}

#[test]
fn credit_flow_recovers_losses_below_its_grant() {
    // Grants paced at the receiver's 100 Gb/s downlink overrun a 10 Gb/s
    // bottleneck with a small queue: data is lost, and go-back-N resends it
    // below the grant, without new grants, until the flow completes.
    let sc = json!({
        "duration": "10ms",
        "topology": {"kind": "dumbbell", "left": 1, "right": 1, "link_rate": "100Gbps",
                     "bottleneck_rate": "10Gbps", "link_delay": "1us"},
        "switch": {"queue_cap": 20000},
        "host": {"loss_recovery": "credit", "nack_interval": "20us"},
        "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": 200_000}]}],
    });
    let mut sim = build(&sc);
    let mut t = 0;
    while !sim.run_until(t) {
        t += 100 * NS;
        let f = &sim.flows()[0];
        assert!(f.snd.max_sent <= f.rcv.granted, "sent {} beyond grant {}", f.snd.max_sent, f.rcv.granted);
        if f.snd.finished.is_some() {
            break;
        }
    }
    let f = &sim.flows()[0];
    assert!(f.snd.finished.is_some(), "the credit flow did not complete");
    assert!(f.stats.retx_bytes > 0, "no loss: the test did not exercise recovery");
    assert_eq!(f.rcv.granted, 200_000, "grants beyond the flow's size");
}

/// The credit incast through strict-priority switch ports of 2 priorities,
/// its receiver granting `grant_priority` (or the default).
fn credit_incast_at_priority_port(grant_priority: Option<u8>) -> Simulation {
    let mut s = credit_incast();
    s["switch"] = json!({"discipline": "priority", "priorities": 2});
    if let Some(p) = grant_priority {
        s["host"]["grant_priority"] = json!(p);
    }
    let mut sim = build(&s);
    sim.run_until(u64::MAX);
    for (i, f) in sim.flows().iter().enumerate() {
        assert!(f.snd.finished.is_some(), "flow {i} did not complete");
    }
    sim
}

/// Bytes each data queue (priority 0, priority 1) of the switch port to host 2 sent.
fn bytes_by_priority(sim: &mut Simulation) -> [u64; 2] {
    let port = sim.data_queues().into_iter().find(|q| q.peer == sim.topology().nodes[2].name).unwrap().port;
    let st = sim.queue_stats(&[(port, 1), (port, 2)], false).unwrap();
    [st[0].tx_bytes, st[1].tx_bytes]
}

#[test]
fn data_sent_under_a_grant_carries_the_granted_priority() {
    let data = 16 * (1024 + 48);
    // By default the receiver grants the class's priority, 0: data in queue 1.
    let mut sim = credit_incast_at_priority_port(None);
    assert_eq!(bytes_by_priority(&mut sim), [data, 0]);
    // A receiver that grants priority 1 moves the same data to queue 2, though
    // the flows' class (1) alone would put it at priority 0.
    let mut sim = credit_incast_at_priority_port(Some(1));
    assert_eq!(bytes_by_priority(&mut sim), [0, data]);
    assert!(sim.flows().iter().all(|f| f.snd.grant_prio == 1));
    let mut bad = credit_incast();
    bad["host"]["grant_priority"] = json!(8);
    let err = match Simulation::from_json(&bad.to_string(), Path::new(".")) {
        Ok(_) => panic!("grant_priority 8 should be rejected"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("host.grant_priority"), "{err}");
}
