//! The MVFST-RL environment (`agent.preset = "mvfst"`) and the timing modes
//! of the agent bridge (blocking, fixed, measured and drawn delays).

use ccgym_sim::cc::Cc;
use ccgym_sim::units::MS;
use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

const MSS: f64 = 1460.0;
const FIELDS: usize = 20;

/// The Mexico cellular link of MVFST-RL's Pantheon set: 2.64 Mb/s, 88 ms
/// RTT, a 130-packet drop-tail queue; one TCP sender driven by `agent`.
fn mexico(agent: Value, duration: &str) -> Value {
    json!({
        "duration": duration,
        "topology": {"kind": "dumbbell", "left": 1, "right": 1, "link_rate": "100Mbps",
                     "link_delay": "1ms", "bottleneck_rate": "2.64Mbps", "bottleneck_delay": "42ms"},
        "switch": {"queue_cap": "195000B", "ecn": {"enabled": false}, "pfc": {"enabled": false}},
        "host": {"loss_recovery": "tcp", "rto": "1s", "rto_min": "200ms", "max_outstanding": 0},
        "packets": {"payload": 1460, "header": 40},
        "cc": {"algorithm": "agent"},
        "agent": agent,
        "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1}]}],
    })
}

fn build(s: &Value) -> Simulation {
    Simulation::from_json(&s.to_string(), Path::new(".")).unwrap()
}

/// One observation's block `agg` (0 sum .. 4 max), field `field`.
fn stat(obs: &[f32], agg: usize, field: usize) -> f32 {
    obs[agg * FIELDS + field]
}

fn skipped(sim: &Simulation) -> u64 {
    match &sim.flows()[0].cc {
        Cc::Agent(a) => a.skipped_decisions(),
        _ => panic!("not an agent"),
    }
}

#[test]
fn preset_gives_the_220_value_observation_and_its_layout() {
    let mut sim = build(&mexico(json!({"preset": "mvfst"}), "1s"));
    assert_eq!(sim.obs_dim(), 220);
    let mut seen = 0;
    loop {
        let over = sim.agent_step().unwrap();
        let b = sim.batch().unwrap().clone();
        for i in 0..b.len() {
            if b.done[i] || b.truncated[i] {
                continue;
            }
            let o = &b.obs[i * 220..(i + 1) * 220];
            // Sums of the RTT-type fields and of cwnd / in-flight / writable are 0.
            for f in 0..9 {
                assert_eq!(stat(o, 0, f), 0.0, "sum of field {f}");
            }
            for f in 0..FIELDS {
                let (mean, std, min, max) = (stat(o, 1, f), stat(o, 2, f), stat(o, 3, f), stat(o, 4, f));
                assert!(std >= 0.0 && min <= mean + 1e-4 && mean <= max + 1e-4, "field {f}: {mean} {std} {min} {max}");
            }
            // rtt_min is at least the 88 ms base RTT, in units of 100 ms.
            assert!(stat(o, 3, 0) >= 0.88, "rtt_min {}", stat(o, 3, 0));
            // delay = lrtt - rtt_min >= 0; acked bytes are counted.
            assert!(stat(o, 3, 5) >= 0.0);
            assert!(stat(o, 0, 16) > 0.0, "acked bytes in the window");
            let hist = &o[100..];
            if seen == 0 {
                // History starts as 20 no-ops at the initial window (10 packets).
                for e in hist.chunks(6) {
                    assert_eq!(&e[..5], &[1.0, 0.0, 0.0, 0.0, 0.0]);
                    assert!((e[5] - (10.0 * MSS / 1000.0) as f32).abs() < 1e-4);
                }
                // The window seen by the ACKs is the initial one (mean cwnd field).
                assert!((stat(o, 1, 6) - 14.6).abs() < 1e-3, "cwnd {}", stat(o, 1, 6));
            } else {
                // The newest entry: the last action (+10 packets, index 3) and the
                // window after it, 10 packets above the entry before.
                let e = &hist[hist.len() - 6..];
                let before = hist[hist.len() - 7];
                assert_eq!(&e[..5], &[0.0, 0.0, 0.0, 1.0, 0.0]);
                assert!((e[5] - before - 14.6).abs() < 1e-3, "{} after {before}", e[5]);
                // The ACKs of the window saw the window the previous action set.
                assert!(stat(o, 4, 6) <= e[5] + 1e-3, "cwnd max {} above {}", stat(o, 4, 6), e[5]);
            }
            seen += 1;
        }
        let n = b.len();
        sim.agent_act(&vec![3.0; n]).unwrap();
        if over {
            break;
        }
    }
    // One observation per 100 ms window (the first tick may see no ACK yet).
    assert!((8..=10).contains(&seen), "{seen} observations in 1 s");
}

#[test]
fn mvfst_actions_step_the_window_in_packets_within_its_bounds() {
    let agent = json!({"preset": "mvfst", "policy_delay": 0, "min_cwnd_packets": 2, "max_cwnd_packets": 40});
    let mut sim = build(&mexico(agent, "3s"));
    let mut expect = 10.0 * MSS;
    let script = [3.0f32, 3.0, 2.0, 4.0, 4.0, 4.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0];
    let mut k = 0;
    loop {
        let over = sim.agent_step().unwrap();
        let b = sim.batch().unwrap().clone();
        let mut acts = vec![0.0; b.len()];
        for (i, a) in acts.iter_mut().enumerate() {
            if !(b.done[i] || b.truncated[i]) {
                *a = script[k.min(script.len() - 1)];
            }
        }
        sim.agent_act(&acts).unwrap();
        if !(b.is_empty() || b.done[0] || b.truncated[0]) {
            let a = script[k.min(script.len() - 1)] as usize;
            expect = match a {
                0 => expect,
                1 => (expect / 2.0).round(),
                2 => expect - 10.0 * MSS,
                3 => expect + 10.0 * MSS,
                _ => expect * 2.0,
            }
            .clamp(2.0 * MSS, 40.0 * MSS);
            assert_eq!(sim.flows()[0].ctl.window, expect as u64, "after action {a} (step {k})");
            k += 1;
        }
        if over {
            break;
        }
    }
    assert!(k >= script.len(), "{k} decisions");
    // The last halvings reached the floor of 2 packets.
    assert_eq!(sim.flows()[0].ctl.window, (2.0 * MSS) as u64);
    // An index outside the 5 actions is refused.
    let mut sim = build(&mexico(json!({"preset": "mvfst"}), "1s"));
    sim.agent_step().unwrap();
    let n = sim.batch().unwrap().len();
    assert!(sim.agent_act(&vec![5.0; n]).unwrap_err().contains("mvfst actions"));
}

#[test]
fn reward_is_throughput_minus_beta_max_delay() {
    // A constant 10-packet window on an empty 88 ms path: cwnd / rtt_standing
    // = 14600 B / ~0.0935 s (RTT plus serialisation) ~ 0.156 MB/s, and
    // almost no delay above the minimum.
    let mut sim = build(&mexico(json!({"preset": "mvfst", "features": ["mvfst_state", "last_reward"]}), "1s"));
    assert_eq!(sim.obs_dim(), 101);
    let mut rewards = vec![];
    loop {
        let over = sim.agent_step().unwrap();
        let b = sim.batch().unwrap().clone();
        for i in 0..b.len() {
            rewards.push(b.rewards[i]);
            // The last_reward feature is the reward, clipped to [-1, 1].
            assert_eq!(b.obs[i * 101 + 100], b.rewards[i].clamp(-1.0, 1.0));
        }
        sim.agent_act(&vec![0.0; b.len()]).unwrap();
        if over {
            break;
        }
    }
    let r = rewards[2];
    assert!((0.12..0.17).contains(&r), "reward {r} ({rewards:?})");
    // With beta = 1000 the delay term (max over the window, in ms) dominates.
    let mut sim = build(&mexico(json!({"preset": "mvfst", "reward_beta": 1000.0}), "1s"));
    let mut rewards = vec![];
    loop {
        let over = sim.agent_step().unwrap();
        let b = sim.batch().unwrap().clone();
        rewards.extend_from_slice(&b.rewards);
        sim.agent_act(&vec![4.0; b.len()]).unwrap();
        if over {
            break;
        }
    }
    let low = rewards.iter().fold(f32::INFINITY, |m, r| m.min(*r));
    assert!(low < -10.0, "doubling the window queues packets: {rewards:?}");
}

#[test]
fn an_observation_is_skipped_while_an_action_is_outstanding() {
    // Actions take 250 ms, windows are 100 ms: two of every three windows are skipped.
    let mut sim = build(&mexico(json!({"preset": "mvfst", "policy_delay": "250ms"}), "3s"));
    let mut decisions = 0;
    loop {
        let over = sim.agent_step().unwrap();
        let n = sim.batch().unwrap().len();
        decisions +=
            sim.batch().unwrap().done.iter().zip(&sim.batch().unwrap().truncated).filter(|(d, t)| !**d && !**t).count();
        sim.agent_act(&vec![0.0; n]).unwrap();
        if over {
            break;
        }
    }
    assert!((9..=11).contains(&decisions), "{decisions} decisions");
    assert!(skipped(&sim) >= 18, "{} skipped", skipped(&sim));
}

/// Runs a native random policy in 1 ms steps; returns (bytes sent, ms paused, ms
/// during which a paused sender sent something).
fn run_timing(timing: &str) -> (u64, u32, u32) {
    let agent = json!({"preset": "mvfst", "policy": "random", "timing": timing, "policy_delay": "50ms"});
    let mut sim = build(&mexico(agent, "3s"));
    let (mut paused_ms, mut leaks) = (0, 0);
    let mut t = 0;
    loop {
        let before = sim.flows()[0].stats.sent_bytes;
        let was = sim.flows()[0].ctl.paused;
        t += MS;
        let over = sim.run_until(t);
        let f = &sim.flows()[0];
        if was && f.ctl.paused {
            paused_ms += 1;
            if f.stats.sent_bytes != before {
                leaks += 1;
            }
        }
        if over {
            return (f.stats.sent_bytes, paused_ms, leaks);
        }
    }
}

#[test]
fn a_blocking_sender_sends_nothing_while_it_waits() {
    let (blocked_bytes, paused, leaks) = run_timing("blocking");
    assert_eq!(leaks, 0, "a paused sender sent data");
    // 50 ms of every 100 ms window is spent waiting (minus the 1 ms steps at the edges).
    assert!((1200..=1500).contains(&paused), "{paused} ms paused");
    let (free_bytes, paused, _) = run_timing("nonblocking");
    assert_eq!(paused, 0);
    assert!(blocked_bytes < free_bytes, "{blocked_bytes} vs {free_bytes}");
}

#[test]
fn a_nonblocking_sender_keeps_its_window_until_the_action_lands() {
    // A given delay (samples = [30 ms]) lands each action exactly 30 ms after its request.
    let agent = json!({"preset": "mvfst", "delay_mode": "samples", "policy_delay_samples": ["30ms"]});
    let mut sim = build(&mexico(agent, "2s"));
    let mut checked = 0;
    loop {
        let over = sim.agent_step().unwrap();
        let b = sim.batch().unwrap().clone();
        let open = b.len() == 1 && !b.done[0] && !b.truncated[0];
        sim.agent_act(&vec![3.0; b.len()]).unwrap();
        if over {
            break;
        }
        if open {
            let (t0, w0) = (b.times[0], sim.flows()[0].ctl.window);
            sim.run_until(t0 + 30 * MS - 1);
            assert_eq!(sim.flows()[0].ctl.window, w0, "window changed before the action landed");
            assert!(!sim.flows()[0].ctl.paused);
            sim.run_until(t0 + 30 * MS);
            assert_eq!(sim.flows()[0].ctl.window as f64, w0 as f64 + 10.0 * MSS);
            checked += 1;
        }
    }
    assert!(checked >= 15, "{checked}");
}

#[test]
fn measured_delay_lands_actions_after_the_policy_wall_clock() {
    let agent = json!({"preset": "mvfst", "delay_mode": "measured"});
    let mut sim = build(&mexico(agent, "1s"));
    let mut checked = 0;
    loop {
        let over = sim.agent_step().unwrap();
        let b = sim.batch().unwrap().clone();
        let open = b.len() == 1 && !b.done[0] && !b.truncated[0];
        // The "policy" thinks for 20 ms of wall clock.
        std::thread::sleep(std::time::Duration::from_millis(20));
        sim.agent_act(&vec![3.0; b.len()]).unwrap();
        if over {
            break;
        }
        if open {
            let (t0, w0) = (b.times[0], sim.flows()[0].ctl.window);
            sim.run_until(t0 + 20 * MS - 1);
            assert_eq!(sim.flows()[0].ctl.window, w0, "landed before the measured 20 ms");
            sim.run_until(t0 + 95 * MS);
            assert_eq!(sim.flows()[0].ctl.window as f64, w0 as f64 + 10.0 * MSS, "not landed 95 ms later");
            checked += 1;
        }
    }
    assert!(checked >= 5, "{checked}");
}

#[test]
fn drawn_delays_are_repeatable_and_within_their_range() {
    let run = |seed: u64| {
        let agent = json!({"preset": "mvfst", "policy": "random", "delay_mode": "uniform",
                           "policy_delay_min": "10ms", "policy_delay": "40ms"});
        let mut s = mexico(agent, "2s");
        s["seed"] = json!(seed);
        let mut sim = build(&s);
        sim.run_until(sim.end());
        (sim.flows()[0].stats.sent_bytes, sim.flows()[0].ctl.window)
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
    let bad = mexico(
        json!({"preset": "mvfst", "delay_mode": "uniform", "policy_delay_min": "50ms",
                            "policy_delay": "40ms"}),
        "1s",
    );
    let err = Simulation::from_json(&bad.to_string(), Path::new(".")).err().unwrap().to_string();
    assert!(err.contains("agent.policy_delay_min"), "{err}");
}

#[test]
fn bad_mvfst_keys_are_named() {
    for (agent, field) in [
        (json!({"preset": "quic"}), "agent.preset"),
        (json!({"preset": "mvfst", "timing": "sometimes"}), "agent.timing"),
        (json!({"preset": "mvfst", "delay_mode": "normal"}), "agent.delay_mode"),
        (json!({"preset": "mvfst", "min_cwnd_packets": 0}), "agent.min_cwnd_packets"),
        (json!({"preset": "mvfst", "action": "discrete"}), "agent.features"),
        (
            json!({"preset": "mvfst", "policy": "random", "action": "multiplier", "features": ["mvfst_state"]}),
            "agent.policy",
        ),
        (json!({"preset": "mvfst", "delay_mode": "samples"}), "agent.policy_delay_samples"),
    ] {
        let err = Simulation::from_json(&mexico(agent.clone(), "1s").to_string(), Path::new("."))
            .err()
            .unwrap_or_else(|| panic!("{agent} accepted"))
            .to_string();
        assert!(err.contains(field), "{agent}: {err}");
    }
    // The preset fills only what the table does not give.
    let sim = build(&mexico(json!({"preset": "mvfst", "action_history": 0}), "1s"));
    assert_eq!(sim.obs_dim(), 100);
}

fn queue_scenario(timing: &str) -> Value {
    json!({
        "duration": "2ms",
        "topology": {"kind": "star", "hosts": 3, "link_rate": "10Gbps", "link_delay": "1us"},
        "cc": {"algorithm": "line_rate"},
        "agent": {"queues": ["sw0->h2"], "queue_interval": "10us", "policy_delay": "5us", "timing": timing,
                  "ecn_profiles": [{"kmin": 10000, "kmax": 100000, "pmax": 0.1}]},
        "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 2}, {"src": 1, "dst": 2}]}],
    })
}

/// Steps a queue agent answering profile 0; returns the bytes its port sent
/// and whether the queue was held whenever a batch waited.
fn run_queue(timing: &str) -> (u64, bool) {
    let mut sim = build(&queue_scenario(timing));
    let port = sim.queue_agent_target(0).unwrap().0 as usize;
    let mut held_while_waiting = true;
    loop {
        let over = sim.agent_step().unwrap();
        let n = sim.batch().unwrap().len() + sim.queue_batch().unwrap().len();
        let open = sim.queue_batch().unwrap().truncated.iter().any(|t| !t);
        if open {
            held_while_waiting &= sim.ports()[port].held & 2 != 0;
        }
        sim.agent_act(&vec![0.0; n]).unwrap();
        if over {
            break;
        }
    }
    (sim.ports()[port].tx_bytes, held_while_waiting)
}

#[test]
fn a_blocking_queue_agent_holds_its_queue_until_the_action_lands() {
    let (blocked, held) = run_queue("blocking");
    assert!(held, "the queue was not held while its agent waited");
    let (free, held) = run_queue("nonblocking");
    assert!(!held);
    // The queue is held 5 us of every 10 us: about half the bytes go out.
    let ratio = blocked as f64 / free as f64;
    assert!((0.4..0.65).contains(&ratio), "{blocked} / {free} = {ratio}");
}

#[test]
fn a_timeout_leaves_an_mvfst_agent_pacing_at_its_rate() {
    // A window far above what the path holds (a 2-packet queue): the queue
    // overflows and the sender times out; its pacing rate must stay where it was (the policy
    // sets only the window).
    let agent = json!({"preset": "mvfst", "policy": "random", "min_cwnd_packets": 200});
    let mut s = mexico(agent, "20s");
    s["switch"]["queue_cap"] = json!("3000B");
    let mut sim = build(&s);
    let rate = sim.flows()[0].ctl.line_rate;
    sim.run_until(sim.end());
    let f = &sim.flows()[0];
    assert!(f.stats.timeouts > 0, "no timeout");
    assert_eq!(f.ctl.rate, rate);
}
