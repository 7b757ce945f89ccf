//! The agent bridge: batching, delayed actions, flow ends, native policies.

use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

fn scenario(agent: Value, workload: Value, duration: &str) -> Value {
    json!({
        "duration": duration,
        "topology": {"kind": "star", "hosts": 5, "link_rate": "100Gbps",
                     "uplink_delay": "3us", "downlink_delay": "1us"},
        "switch": {"queue_cap": "10MiB", "buffer": "64MiB"},
        "cc": {"algorithm": "agent"},
        "agent": agent,
        "metrics": {"window": ["500us", duration]},
        "workload": [workload],
    })
}

fn long4() -> Value {
    json!({"kind": "long", "receiver": 0, "start": ["0us", "100us"]})
}

/// A hand-made proportional controller on the ADPG signal (the last feature).
fn controller(obs: &[f32]) -> f32 {
    let d = obs[obs.len() - 1];
    (-0.5 * d).clamp(-1.0, 1.0)
}

fn drive(sim: &mut Simulation, mut policy: impl FnMut(&[f32]) -> f32) -> (u64, usize, usize) {
    let (mut steps, mut done, mut truncated) = (0u64, 0usize, 0usize);
    loop {
        let over = sim.agent_step().unwrap();
        let b = sim.batch().unwrap().clone();
        let dim = if b.is_empty() { 0 } else { b.obs.len() / b.len() };
        let actions: Vec<f32> = (0..b.len()).map(|i| policy(&b.obs[i * dim..(i + 1) * dim])).collect();
        done += b.done.iter().filter(|d| **d).count();
        truncated += b.truncated.iter().filter(|d| **d).count();
        sim.agent_act(&actions).unwrap();
        steps += 1;
        if over {
            return (steps, done, truncated);
        }
    }
}

fn build(s: &Value) -> Simulation {
    Simulation::from_json(&s.to_string(), Path::new(".")).unwrap()
}

#[test]
fn blocking_batches_hold_simultaneous_requests_and_control_works() {
    let mut sim = build(&scenario(json!({"policy_delay": 0}), long4(), "6ms"));
    let (steps, done, truncated) = drive(&mut sim, controller);
    assert!(steps > 500, "only {steps} batches");
    assert_eq!((done, truncated), (0, 4));
    let s = sim.summary();
    let u = s["bottleneck"]["utilization"].as_f64().unwrap();
    let jain = s["flows"]["jain"].as_f64().unwrap();
    assert!(u > 0.9 && jain > 0.95, "utilisation {u}, Jain {jain}");
    assert_eq!(s["network"]["drops_packets"], 0);
}

#[test]
fn with_a_policy_delay_a_batch_spans_the_delay_and_actions_land_later() {
    let mut sim = build(&scenario(json!({"policy_delay": "20us"}), long4(), "3ms"));
    let mut widest = 0;
    loop {
        let over = sim.agent_step().unwrap();
        let b = sim.batch().unwrap().clone();
        if let (Some(a), Some(z)) = (b.times.first(), b.times.last()) {
            assert!(z - a < 20_000_000, "a batch must not span more than the policy delay");
            widest = widest.max(b.len());
        }
        let n = b.len();
        sim.agent_act(&vec![0.0; n]).unwrap();
        if over {
            break;
        }
    }
    assert!(widest >= 4, "a 20 us delay should gather requests of several flows, got {widest}");
}

#[test]
fn stepping_twice_without_acting_is_an_error() {
    let mut sim = build(&scenario(json!({}), long4(), "1ms"));
    sim.agent_step().unwrap();
    assert!(sim.agent_step().unwrap_err().contains("agent_act"));
    let n = sim.batch().unwrap().len();
    assert!(sim.agent_act(&vec![0.0; n + 1]).unwrap_err().contains("expected"));
}

#[test]
fn flows_that_finish_report_done_once() {
    let w = json!({"kind": "long", "receiver": 0, "size": "200KB", "start": ["0us", "300us"]});
    let mut sim = build(&scenario(json!({}), w, "3ms"));
    let (_, done, truncated) = drive(&mut sim, controller);
    assert_eq!((done, truncated), (4, 0));
    assert!(sim.flows().iter().all(|f| f.snd.finished.is_some()));
}

fn native_file(dir: &Path) -> String {
    // a = tanh(-0.5 d): input [m_prev, d_prev, m, d], one linear layer, tanh output.
    let policy = json!({"format": "ccgym-mlp", "version": 1,
        "layers": [{"weight": [[0.0, 0.0, 0.0, -0.5]], "activation": "none"}],
        "output": "tanh", "int8": {"input_amax": [20.0]}});
    let path = dir.join("p.json");
    std::fs::write(&path, policy.to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_native_policy_matches_the_same_policy_through_the_bridge() {
    let dir = std::env::temp_dir().join(format!("ccgym-native-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = native_file(&dir);
    let mut native = build(&scenario(json!({"policy": path}), long4(), "3ms"));
    native.run_until(u64::MAX);
    let mut external = build(&scenario(json!({}), long4(), "3ms"));
    drive(&mut external, |o| (-0.5 * o[3]).tanh());
    assert_eq!(native.summary()["flows"], external.summary()["flows"]);
    assert_eq!(native.event_count(), external.event_count());
    let int8 = {
        let mut s = build(&scenario(json!({"policy": path, "precision": "int8"}), long4(), "3ms"));
        s.run_until(u64::MAX);
        s.summary()["bottleneck"]["utilization"].as_f64().unwrap()
    };
    assert!(int8 > 0.9, "int8 utilisation {int8}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_agent_settings_are_reported() {
    let e = Simulation::from_json(
        &scenario(json!({"policy": "/nonexistent/policy.json"}), long4(), "1ms").to_string(),
        Path::new("."),
    )
    .err()
    .unwrap();
    assert!(e.to_string().starts_with("agent.policy"), "{e}");
    let mut s = scenario(json!({}), long4(), "1ms");
    s.as_object_mut().unwrap().remove("agent");
    let e = Simulation::from_json(&s.to_string(), Path::new(".")).err().unwrap();
    assert!(e.to_string().starts_with("cc.algorithm") && e.to_string().contains("[agent]"), "{e}");
}

#[test]
fn a_probe_lost_with_a_dropped_packet_is_sent_again() {
    // A tiny queue cap makes the line-rate start drop packets, probes among them;
    // every flow must keep deciding to the end of the run.
    // (Without re-probing after losses, flows whose probe was dropped stop deciding.)
    // timeout_rate 1: a flow restarted at the rate floor would send (and probe) only every few
    // milliseconds, which is not what this test is about.
    let mut s = scenario(json!({"policy_delay": 0, "timeout_rate": 1.0}), long4(), "4ms");
    s["switch"]["queue_cap"] = json!("60KB");
    s["host"] = json!({"rto": "1ms"});
    let mut sim = build(&s);
    let mut last = [0u64; 8];
    loop {
        let over = sim.agent_step().unwrap();
        let b = sim.batch().unwrap().clone();
        for (i, &f) in b.flows.iter().enumerate() {
            if !b.done[i] && !b.truncated[i] {
                last[f as usize] = b.times[i];
            }
        }
        let dim = if b.is_empty() { 0 } else { b.obs.len() / b.len() };
        let actions: Vec<f32> = (0..b.len()).map(|i| controller(&b.obs[i * dim..(i + 1) * dim])).collect();
        sim.agent_act(&actions).unwrap();
        if over {
            break;
        }
    }
    let drops: u64 = sim.ports().iter().map(|p| p.stats.drops).sum();
    assert!(drops > 20, "the scenario must drop packets ({drops})");
    for (f, fl) in sim.flows().iter().enumerate() {
        assert!(
            last[f] > 3_500_000_000,
            "flow {f} stopped deciding at {} ps: nacks {} timeouts {} rcv {} una {} nxt {} rate {}",
            last[f],
            fl.stats.nacks,
            fl.stats.timeouts,
            fl.rcv.rcv_nxt,
            fl.ctl.snd_una,
            fl.ctl.snd_nxt,
            fl.ctl.rate
        );
    }
}

#[test]
fn after_a_timeout_an_agent_flow_restarts_at_timeout_rate() {
    // Line-rate senders with small windows into a tiny queue lose the tails of
    // their windows and can only recover by timeout. The policy holds every rate
    // (a = 0), so the rate a flow ends with is the one it restarted at.
    let run = |timeout_rate: f64| {
        let agent = json!({"trigger": "interval", "interval": "20us", "timeout_rate": timeout_rate});
        let mut s = scenario(agent, json!({"kind": "long", "receiver": 0, "flows_per_host": 8, "start": "0us"}), "3ms");
        s["switch"]["queue_cap"] = json!("20KB");
        s["host"] = json!({"rto": "500us", "max_outstanding": "32KiB"});
        let mut sim = build(&s);
        drive(&mut sim, |_| 0.0);
        sim.flows().iter().map(|f| (f.stats.timeouts, f.ctl.rate, f.ctl.min_rate, f.ctl.line_rate)).collect::<Vec<_>>()
    };
    // Flows that timed out hold the restart rate; the others keep line rate.
    let check = |timeout_rate: f64| {
        let flows = run(timeout_rate);
        let timed_out = flows.iter().filter(|f| f.0 > 0).count();
        assert!(timed_out > 0, "some flow must time out in this scenario: {flows:?}");
        for (timeouts, rate, min_rate, line) in flows {
            let expect = if timeouts == 0 || timeout_rate == 1.0 { line } else { (timeout_rate * line).max(min_rate) };
            assert_eq!(rate, expect, "timeout_rate {timeout_rate}, {timeouts} timeouts");
        }
    };
    check(0.0);
    check(0.25);
    check(1.0);
    let bad = scenario(json!({"timeout_rate": 1.5}), long4(), "1ms");
    let e = Simulation::from_json(&bad.to_string(), Path::new(".")).err().unwrap();
    assert!(e.to_string().starts_with("agent.timeout_rate"), "{e}");
}

#[test]
fn hold_ticks_skips_ticks_with_nothing_sent_or_heard() {
    // One flow held at 10 Mb/s sends a 4 KiB burst every 3.3 ms; a 20 us grid has 500 ticks
    // in 10 ms. Without news, a tick would only repeat the last measurement.
    let decisions = |hold: u32| {
        let agent = json!({"trigger": "interval", "interval": "20us", "initial_rate": 1e-4,
                           "hold_ticks": hold});
        let w = json!({"kind": "flows", "flows": [{"src": 1, "dst": 0}]});
        let mut sim = build(&scenario(agent, w, "10ms"));
        let mut n = 0usize;
        loop {
            let over = sim.agent_step().unwrap();
            let b = sim.batch().unwrap().clone();
            n += b.done.iter().zip(&b.truncated).filter(|(d, t)| !**d && !**t).count();
            sim.agent_act(&vec![0.0; b.len()]).unwrap();
            if over {
                return n;
            }
        }
    };
    let every_tick = decisions(0);
    assert!(every_tick >= 490, "{every_tick} decisions on a 20 us grid over 10 ms");
    // News only: the tick after each burst (sent) and after its ACKs, about 3 bursts.
    let with_news = decisions(u32::MAX);
    assert!((3..=12).contains(&with_news), "{with_news} decisions with news only");
    // At most 9 ticks held in a row: one decision in 10 ticks without news, about 50.
    let held = decisions(9);
    assert!((45..=60).contains(&held), "{held} decisions holding up to 9 ticks");
}

/// The `window` actuator drives throughput through the window: 4 flows held at
/// 2 packets each (about 8 KiB per RTT of ~10 us) use a small part of a 100 Gb/s
/// bottleneck; at 64 packets each they fill it.
#[test]
fn window_action_limits_a_flow_by_its_window() {
    let util = |pkts: f32| {
        let agent = json!({"trigger": "interval", "interval": "10us", "action": "window",
                           "window_unit": "packets", "policy_delay": "1us"});
        let mut sim = build(&scenario(agent, long4(), "1ms"));
        drive(&mut sim, |_| pkts);
        sim.summary()["bottleneck"]["utilization"].as_f64().unwrap()
    };
    let (small, large) = (util(2.0), util(64.0));
    assert!(small < 0.3, "2-packet windows use {small}");
    assert!(large > 0.9, "64-packet windows use {large}");
}

/// A switch-queue agent: its own batch group (7 features x 3 intervals), one
/// request per sampling interval, and its ECN-profile choice in force exactly
/// `policy_delay` after the request.
#[test]
fn queue_agent_sets_its_queues_ecn_profile_after_the_policy_delay() {
    let s = json!({
        "duration": "100us",
        "topology": {"kind": "star", "hosts": 4, "link_rate": "100Gbps", "link_delay": "1us"},
        "switch": {"ecn": {"kmin": "5KiB", "kmax": "20KiB", "pmax": 0.1}},
        "cc": {"algorithm": "dctcp"},
        "workload": [{"kind": "long", "receiver": 0}],
        "agent": {"queues": ["sw0->h0"], "queue_interval": "10us", "queue_history": 3, "policy_delay": "2us",
                  "ecn_profiles": [{"kmin": "5KiB", "kmax": "20KiB", "pmax": 0.1},
                                   {"kmin": "60KiB", "kmax": "90KiB", "pmax": 1.0}]},
    });
    let mut sim = build(&s);
    assert_eq!((sim.queue_agents(), sim.queue_obs_dim()), (1, 21));
    let (port, queue) = sim.queue_agent_target(0).unwrap();
    assert!(!sim.agent_step().unwrap());
    let qb = sim.queue_batch().unwrap().clone();
    assert_eq!((qb.len(), qb.obs.len(), qb.times[0]), (1, 21, 10_000_000));
    assert!(sim.batch().unwrap().is_empty(), "no flow agents");
    sim.agent_act(&[1.0]).unwrap();
    let red = |sim: &Simulation| sim.ports()[port as usize].queues[queue].red.unwrap().kmin;
    sim.run_until(11_999_999);
    assert_eq!(red(&sim), 5 * 1024);
    sim.run_until(12_000_000);
    assert_eq!(red(&sim), 60 * 1024);
    // Every later interval asks again; the run ends with one truncated entry.
    let mut requests = 1;
    loop {
        let over = sim.agent_step().unwrap();
        let qb = sim.queue_batch().unwrap().clone();
        requests += qb.done.iter().zip(&qb.truncated).filter(|(d, t)| !**d && !**t).count();
        sim.agent_act(&vec![1.0; qb.len()]).unwrap();
        if over {
            assert_eq!(qb.truncated, vec![true]);
            break;
        }
    }
    assert_eq!(requests, 9, "one request per 10 us before the end at 100 us");
}

/// The bridge rejects what it cannot honour, naming the agent and what is valid, and a
/// rejected answer changes nothing: the same batch can then be answered correctly, once.
#[test]
fn out_of_range_non_finite_and_repeated_actions_are_rejected() {
    let agent = json!({"action": "discrete", "discrete": [0.5, 1.0, 2.0]});
    let mut sim = build(&scenario(agent, long4(), "1ms"));
    assert!(sim.agent_act(&[]).unwrap_err().contains("call agent_step() first"));
    sim.agent_step().unwrap();
    let b = sim.batch().unwrap().clone();
    assert!(!b.is_empty());
    let flow = b.flows[0];
    let mut actions = vec![1.0; b.len()];
    for bad in [3.0, -1.0, 1.5, f32::NAN, f32::INFINITY] {
        actions[0] = bad;
        let e = sim.agent_act(&actions).unwrap_err();
        assert!(e.starts_with(&format!("flow {flow}: action {bad} ")), "{e}");
        let why =
            if bad.is_finite() { "not an index into agent.discrete: give an integer from 0 to 2" } else { "finite" };
        assert!(e.contains(why), "{e}");
    }
    actions[0] = 2.0;
    sim.agent_act(&actions).unwrap();
    assert!(sim.agent_act(&actions).unwrap_err().contains("already answered"));
    sim.agent_step().unwrap();

    // Continuous actions clamp to their range, but NaN and infinities are errors.
    let mut sim = build(&scenario(json!({}), long4(), "1ms"));
    sim.agent_step().unwrap();
    let n = sim.batch().unwrap().len();
    for bad in [f32::NAN, f32::NEG_INFINITY] {
        let e = sim.agent_act(&vec![bad; n]).unwrap_err();
        assert!(e.contains(&format!("action {bad} is")) && e.contains("give a finite action"), "{e}");
    }
    sim.agent_act(&vec![5.0; n]).unwrap();
}

#[test]
fn a_queue_agent_action_outside_the_profiles_is_rejected() {
    let s = json!({
        "duration": "50us",
        "topology": {"kind": "star", "hosts": 4, "link_rate": "100Gbps", "link_delay": "1us"},
        "cc": {"algorithm": "dctcp"},
        "workload": [{"kind": "long", "receiver": 0}],
        "agent": {"queues": ["sw0->h0"], "queue_interval": "10us",
                  "ecn_profiles": [{"kmin": "5KiB", "kmax": "20KiB", "pmax": 0.1},
                                   {"kmin": "60KiB", "kmax": "90KiB", "pmax": 1.0}]},
    });
    let mut sim = build(&s);
    sim.agent_step().unwrap();
    let e = sim.agent_act(&[2.0]).unwrap_err();
    assert_eq!(e, "queue agent 0: action 2 is not an index into agent.ecn_profiles: give an integer from 0 to 1");
    sim.agent_act(&[1.0]).unwrap();
}

/// A native policy whose output width does not fit the action map is a scenario error: an
/// argmax over 3 scores indexing a 6-entry table, or 2 scores read as a multiplier, used to be
/// clamped into something without a word.
#[test]
fn a_native_policy_must_give_one_score_per_discrete_entry() {
    let dir = std::env::temp_dir().join(format!("ccgym-native-width-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = |outputs: usize| {
        let path = dir.join(format!("p{outputs}.json"));
        let layer = json!({"weight": vec![vec![0.1f32; 4]; outputs], "activation": "none"});
        std::fs::write(&path, json!({"format": "ccgym-mlp", "version": 1, "layers": [layer]}).to_string()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let error = |agent: Value| match Simulation::from_json(&scenario(agent, long4(), "1ms").to_string(), Path::new("."))
    {
        Ok(_) => panic!("should be rejected"),
        Err(e) => e.to_string(),
    };
    let e = error(json!({"policy": policy(3), "action": "discrete"}));
    assert!(e.starts_with("agent.policy") && e.contains("has 3 outputs") && e.contains("agent.discrete (6)"), "{e}");
    let e = error(json!({"policy": policy(2)}));
    assert!(e.contains("has 2 outputs") && e.contains("needs one output"), "{e}");
    let mut ok = build(&scenario(json!({"policy": policy(6), "action": "discrete"}), long4(), "1ms"));
    ok.run_until(u64::MAX);
    std::fs::remove_dir_all(&dir).unwrap();
}
