//! Window agents on TCP flows (QTCP's actuator): the per-ACK rule an action
//! selects changes the window by exactly its step on every ACK of new data,
//! and NewReno's loss recovery runs underneath.

use ccgym_sim::cc::Cc;
use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

const MSS: u64 = 1460;

/// The QTCP-AIMD dumbbell (40 Mb/s bottleneck, 100 Mb/s access, RTT 120 ms)
/// with `flows` senders, a `buffer`-packet drop-tail queue and a per-ACK agent.
fn dumbbell(flows: usize, buffer: u64, agent: Value, duration: &str) -> Value {
    let list: Vec<Value> = (0..flows).map(|i| json!({"src": i, "dst": flows + i})).collect();
    json!({
        "duration": duration,
        "topology": {"kind": "dumbbell", "left": flows, "right": flows, "link_rate": "100Mbps",
                     "link_delay": "1ms", "bottleneck_rate": "40Mbps", "bottleneck_delay": "58ms"},
        "switch": {"queue_cap": format!("{}B", buffer * 1500), "ecn": {"enabled": false}, "pfc": {"enabled": false}},
        "host": {"loss_recovery": "tcp", "rto": "1s", "rto_min": "200ms", "max_outstanding": 0},
        "packets": {"payload": 1460, "header": 40},
        "cc": {"algorithm": "agent"},
        "agent": agent,
        "workload": [{"kind": "flows", "flows": list}],
    })
}

fn agent(per_ack: Value, initial_window: u64) -> Value {
    json!({"trigger": "interval", "interval": "230ms", "policy_delay": 0, "action": "per_ack",
           "per_ack": per_ack, "loss_response": "newreno", "initial_window": initial_window,
           "features": ["send_gap_over_min", "ack_gap_over_min", "rtt_ewma_over_min"], "history": 1,
           "reward": "log_utility", "timeout_rate": 1.0})
}

fn build(s: &Value) -> Simulation {
    Simulation::from_json(&s.to_string(), Path::new(".")).unwrap()
}

fn loss_events(sim: &Simulation, flow: usize) -> (u64, u64) {
    match &sim.flows()[flow].cc {
        Cc::Agent(a) => a.loss_events().expect("newreno loss response"),
        _ => panic!("not an agent"),
    }
}

/// Runs one flow with action `action` at every decision; at each decision after
/// the first, checks `rule(window before, ACKs since)` against the window now.
fn check_rule(per_ack: Value, action: f32, initial: u64, rule: impl Fn(f64, u64) -> f64) -> usize {
    let mut sim = build(&dumbbell(1, 1000, agent(per_ack, initial), "3s"));
    let mut last: Option<(u64, u64)> = None; // (window, snd_una) when the action took effect
    let mut checked = 0;
    loop {
        let over = sim.agent_step().unwrap();
        let n = sim.batch().unwrap().len();
        let end = sim.batch().unwrap().truncated.iter().any(|t| *t);
        let f = &sim.flows()[0].ctl;
        if let (Some((w0, una0)), false) = (last, end) {
            // Every packet is acknowledged on its own (host.ack_every = 1) and
            // none is lost, so the ACKs of new data are the segments acknowledged.
            let acks = (f.snd_una - una0) / MSS;
            assert_eq!((f.snd_una - una0) % MSS, 0);
            assert!(acks > 10, "only {acks} ACKs in a decision interval");
            let want = rule(w0 as f64, acks);
            assert!(
                (f.window as f64 - want).abs() <= 1.0,
                "window {} after {acks} ACKs from {w0}: want {want}",
                f.window
            );
            checked += 1;
        }
        last = Some((f.window, f.snd_una));
        sim.agent_act(&vec![action; n]).unwrap();
        if over {
            break;
        }
    }
    assert_eq!(loss_events(&sim, 0), (0, 0), "no loss expected");
    assert_eq!(sim.summary()["network"]["drops_packets"], 0);
    checked
}

#[test]
fn qtcp_plus_ten_bytes_per_ack_grows_the_window_by_ten_bytes_per_ack() {
    let n = check_rule(json!([10, 0, -1]), 0.0, 20 * MSS, |w0, acks| w0 + 10.0 * acks as f64);
    assert!(n >= 10, "{n} intervals checked");
}

#[test]
fn qtcp_minus_one_byte_and_hold_are_exact_too() {
    check_rule(json!([10, 0, -1]), 2.0, 20 * MSS, |w0, acks| w0 - acks as f64);
    check_rule(json!([10, 0, -1]), 1.0, 20 * MSS, |w0, _| w0);
}

#[test]
fn qtcp_aimd_reno_rule_adds_about_one_segment_per_window_of_acks() {
    // +MSS x MSS / cwnd per ACK: the recurrence itself, then about one MSS per RTT.
    check_rule(json!(["reno", 0, -5]), 0.0, 20 * MSS, |w0, acks| {
        let mut w = w0;
        for _ in 0..acks {
            w += (MSS * MSS) as f64 / w;
        }
        w
    });
}

/// Runs two senders with action 0 throughout; returns (bottleneck utilisation,
/// peak and final window of flow 0).
fn two_senders(loss_response: &str) -> (f64, u64, u64, Simulation) {
    let mut a = agent(json!([100, 0, -1]), 150 * MSS);
    a["loss_response"] = json!(loss_response);
    let mut sim = build(&dumbbell(2, 100, a, "20s"));
    let mut peak = 0;
    loop {
        let over = sim.agent_step().unwrap();
        let n = sim.batch().unwrap().len();
        peak = peak.max(sim.flows()[0].ctl.window);
        sim.agent_act(&vec![0.0; n]).unwrap();
        if over {
            break;
        }
    }
    let u = sim.summary()["bottleneck"]["utilization"].as_f64().unwrap();
    let w = sim.flows()[0].ctl.window;
    (u, peak, w, sim)
}

/// Two senders at +100 bytes per ACK (about 7% per RTT) into a 100-packet
/// buffer: the queue overflows. NewReno underneath halves the windows (fast
/// retransmit) and the flows keep the bottleneck busy; without it the windows
/// only grow and the flows lose far more.
#[test]
fn losses_halve_a_per_ack_agent_window_through_newreno() {
    let (u, peak, w, sim) = two_senders("newreno");
    let (fr, _to) = loss_events(&sim, 0);
    assert!(fr >= 1, "no fast retransmit");
    assert!(w < peak, "the window came down from its peak {peak}");
    let (u_none, peak_none, w_none, _) = two_senders("none");
    assert_eq!(w_none, peak_none, "without a loss response the window never comes down");
    assert!(u > 0.5 && u > u_none + 0.1, "utilisation {u} with NewReno underneath, {u_none} without");
}
