//! Unit tests of the agent CC.

use super::*;
use crate::cc::FlowCtl;
use crate::config::AgentConfig;
use crate::units::{Duration, NS};

fn ctl() -> FlowCtl {
    FlowCtl::at_line_rate(100e9, 1e6, 8192 * NS, 1024)
}

#[test]
fn adpg_signal_and_multiplier_follow_the_reference_formulas() {
    let spec = Arc::new(AgentSpec::from_config(&AgentConfig::default()).unwrap());
    let mut a = AgentCc::new(spec);
    let mut f = ctl();
    f.rate = 0.25e9 * 100.0 / 100.0 * 100.0; // 25 Gb/s
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    a.on_start(&mut ctx);
    ctx.set_rate(25e9);
    ctx.now = 20_000_000;
    // RTT = 3 x 8192 ns: R = 3, x = (3 - 1.5) * sqrt(0.25) = 0.75, d = 12.5 (0.75 - 0.064).
    a.on_probe(&mut ctx, &ProbeEvent { rtt: 3 * 8192 * NS, ..Default::default() });
    assert!(ctx.flow.decision_due);
    let d = 12.5 * (0.75 - 0.064);
    assert!((a.last_reward as f64 - d).abs() < 1e-4);
    assert_eq!(a.observation(), &[1.0, d as f32, 1.0, d as f32]);
    a.apply(&mut ctx, -0.5);
    assert!((ctx.flow.rate - 25e9 / 1.1).abs() < 1.0);
    assert!(!a.outstanding);
    assert!((a.last_multiplier - 1.0 / 1.1).abs() < 1e-12);
}

/// An agent whose flow sent one 4 KiB message, heard its ACKs over a deep queue
/// (RTT = 5 x 8192 ns), decided at the 10 us tick and cut its rate; now idle.
fn after_one_message(cfg: AgentConfig) -> (AgentCc, FlowCtl) {
    let mut a = AgentCc::new(Arc::new(AgentSpec::from_config(&cfg).unwrap()));
    let mut f = ctl();
    f.app_limit = 4096;
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    a.on_start(&mut ctx);
    a.on_send(&mut ctx, 4096);
    ctx.flow.snd_nxt = 4096;
    ctx.flow.snd_una = 4096;
    a.on_ack(&mut ctx, &AckEvent { newly_acked: 4096, rtt: 5 * 8192 * NS, ..Default::default() });
    ctx.now = 10_000_000;
    a.on_timer(&mut ctx);
    assert!(ctx.flow.decision_due, "the interval with the message's ACKs is measured");
    a.apply(&mut ctx, -1.0);
    ctx.flow.decision_due = false;
    (a, f)
}

#[test]
fn an_idle_interval_agent_keeps_its_rate_until_its_next_message() {
    let cfg =
        AgentConfig { trigger: "interval".into(), interval: Duration(10 * crate::units::US), ..Default::default() };
    let (mut a, mut f) = after_one_message(cfg);
    let mut ctx = CcCtx { now: 10_000_000, flow: &mut f };
    let rate = ctx.flow.rate;
    // Idle ticks: no decision, no stale cut.
    for k in 2..50 {
        ctx.now = k * 10_000_000;
        a.on_timer(&mut ctx);
        assert!(!ctx.flow.decision_due);
    }
    assert_eq!(ctx.flow.rate, rate);
    // The next message: its interval starts when it does.
    ctx.flow.app_limit = 8192;
    ctx.now = 495_000_000;
    a.on_send(&mut ctx, 1024);
    ctx.now = 500_000_000;
    a.on_timer(&mut ctx);
    assert!(ctx.flow.decision_due);
}

#[test]
fn an_idle_interval_agent_with_idle_probe_decides_on_its_probe_replies() {
    let cfg = AgentConfig {
        trigger: "interval".into(),
        interval: Duration(10 * crate::units::US),
        features: vec!["rtt_inflation".into()],
        history: 1,
        hold_ticks: 2,
        idle_probe: true,
        ..Default::default()
    };
    let (mut a, mut f) = after_one_message(cfg);
    let mut ctx = CcCtx { now: 10_000_000, flow: &mut f };
    // Idle: a probe every hold_ticks + 1 = 3 ticks, no decision without a reply.
    let mut probes = vec![];
    for k in 2..8 {
        ctx.now = k * 10_000_000;
        a.on_timer(&mut ctx);
        assert!(!ctx.flow.decision_due);
        if std::mem::take(&mut ctx.flow.probe_requested) {
            probes.push(k);
        }
    }
    assert_eq!(probes, vec![4, 7]);
    // The reply shows an empty path; the next tick decides on it, not on the old queue.
    ctx.now = 75_000_000;
    a.on_probe(&mut ctx, &ProbeEvent { rtt: 8192 * NS, ..Default::default() });
    ctx.now = 80_000_000;
    a.on_timer(&mut ctx);
    assert!(ctx.flow.decision_due);
    assert_eq!(a.observation(), &[1.0]);
}

#[test]
fn a_nack_gives_interval_agents_an_rtt_sample_but_not_probe_agents() {
    let cfg = AgentConfig {
        trigger: "interval".into(),
        interval: Duration(10 * crate::units::US),
        features: vec!["rtt_inflation".into()],
        history: 1,
        ..Default::default()
    };
    let mut a = AgentCc::new(Arc::new(AgentSpec::from_config(&cfg).unwrap()));
    let mut f = ctl();
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    a.on_start(&mut ctx);
    ctx.now = 10_000_000;
    // No ACK in the interval, one NACK whose packet waited in a queue: RTT = 5 x 8192 ns.
    a.on_nack(&mut ctx, 0, 5 * 8192 * NS);
    a.on_timer(&mut ctx);
    assert_eq!(a.observation(), &[5.0]);
    let mut p = AgentCc::new(Arc::new(AgentSpec::from_config(&AgentConfig::default()).unwrap()));
    p.on_nack(&mut ctx, 0, 5 * 8192 * NS);
    assert_eq!(p.rtt_n, 0);
}

#[test]
fn a_probe_without_reply_is_requested_again_after_the_probe_timeout() {
    let mut a = AgentCc::new(Arc::new(AgentSpec::from_config(&AgentConfig::default()).unwrap()));
    let mut f = ctl();
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    a.on_start(&mut ctx);
    assert!(ctx.flow.probe_requested);
    assert_eq!(ctx.flow.timer, Some(crate::units::MS));
    // The probe leaves on a data packet that a full queue drops; no NACK follows.
    ctx.flow.probe_requested = false;
    ctx.now = crate::units::MS;
    a.on_timer(&mut ctx);
    assert!(ctx.flow.probe_requested, "the lost probe is requested again");
    assert_eq!(ctx.flow.timer, Some(2 * crate::units::MS));
    assert!(!ctx.flow.decision_due, "a lost probe is not a decision");
    // Its reply comes back: one decision, the next probe, the timer re-armed from now.
    ctx.flow.probe_requested = false;
    ctx.now = 1_500_000_000;
    a.on_probe(&mut ctx, &ProbeEvent { rtt: 8192 * NS, ..Default::default() });
    assert!(ctx.flow.decision_due && ctx.flow.probe_requested);
    assert_eq!(ctx.flow.timer, Some(2_500_000_000));
    // probe_timeout = 0: no timer, the old behaviour.
    let cfg = AgentConfig { probe_timeout: Duration(0), ..Default::default() };
    let mut b = AgentCc::new(Arc::new(AgentSpec::from_config(&cfg).unwrap()));
    let mut g = ctl();
    let mut ctx = CcCtx { now: 0, flow: &mut g };
    b.on_start(&mut ctx);
    assert_eq!(ctx.flow.timer, None);
}

#[test]
fn bad_agent_tables_name_the_field() {
    let c = AgentConfig { features: vec!["action".into(), "bogus".into()], ..Default::default() };
    let e = AgentSpec::from_config(&c).unwrap_err();
    assert_eq!(e.field, "agent.features[1]");
    let c = AgentConfig { trigger: "sometimes".into(), ..Default::default() };
    assert_eq!(AgentSpec::from_config(&c).unwrap_err().field, "agent.trigger");
    let c = AgentConfig { rtt_estimate: "median".into(), ..Default::default() };
    assert_eq!(AgentSpec::from_config(&c).unwrap_err().field, "agent.rtt_estimate");
}

#[test]
fn rtt_estimate_last_measures_the_interval_by_its_newest_ack() {
    let inflation = |estimate: &str| {
        let cfg = AgentConfig {
            trigger: "interval".into(),
            interval: Duration(10 * crate::units::US),
            features: vec!["rtt_inflation".into()],
            history: 1,
            rtt_estimate: estimate.into(),
            ..Default::default()
        };
        let mut a = AgentCc::new(Arc::new(AgentSpec::from_config(&cfg).unwrap()));
        let mut f = ctl();
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        a.on_start(&mut ctx);
        // A queue that drained during the interval: RTT 5, 3, then 1 x 8192 ns.
        for r in [5, 3, 1] {
            a.on_ack(&mut ctx, &AckEvent { newly_acked: 1024, rtt: r * 8192 * NS, ..Default::default() });
        }
        ctx.now = 10_000_000;
        a.on_timer(&mut ctx);
        a.observation()[0]
    };
    assert_eq!(inflation("mean"), 3.0);
    assert_eq!(inflation("last"), 1.0);
}

#[test]
fn the_cc_factory_builds_agents_from_the_agent_table_only() {
    use crate::cc::{Cc, CcBuild};
    use crate::config::CcConfig;
    let agent = CcConfig { algorithm: "agent".into(), ..CcConfig::default() };
    let spec = Arc::new(AgentSpec::from_config(&AgentConfig::default()).unwrap());
    let built = Cc::from_config(&agent, "cc", &CcBuild { agent: Some(&spec) }).unwrap();
    assert!(matches!(&built, Cc::Agent(a) if a.spec().obs_dim() == 4));
    let e = Cc::from_config(&agent, "workload[1].cc", &CcBuild::default()).unwrap_err();
    assert_eq!(e.field, "workload[1].cc.algorithm");
    let mut with_param = agent.clone();
    with_param.params.insert("gain".into(), serde_json::json!(2));
    let e = Cc::from_config(&with_param, "cc", &CcBuild { agent: Some(&spec) }).unwrap_err();
    assert_eq!(e.field, "cc.gain");
}

fn started(cfg: AgentConfig) -> (AgentCc, FlowCtl) {
    let mut a = AgentCc::new(Arc::new(AgentSpec::from_config(&cfg).unwrap()));
    let mut f = ctl();
    f.app_limit = u64::MAX;
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    a.on_start(&mut ctx);
    (a, f)
}

fn ack(a: &mut AgentCc, ctx: &mut CcCtx, bytes: u64, rtt: Time) {
    a.on_ack(ctx, &AckEvent { newly_acked: bytes, rtt, ..Default::default() });
}

#[test]
fn per_ack_rule_adds_its_increment_on_every_ack_until_the_next_action() {
    use crate::config::PerAckStep;
    let cfg = AgentConfig {
        trigger: "acks".into(),
        every_acks: 1000,
        action: "per_ack".into(),
        per_ack: vec![PerAckStep::Bytes(10.0), PerAckStep::Bytes(0.0), PerAckStep::Bytes(-300.0)],
        initial_window: crate::units::Bytes(20_000),
        min_window: crate::units::Bytes(4096),
        ..Default::default()
    };
    let (mut a, mut f) = started(cfg);
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    assert_eq!(ctx.flow.window, 20_000);
    // Before any action no rule is in force.
    ack(&mut a, &mut ctx, 1024, 10 * NS);
    assert_eq!(ctx.flow.window, 20_000);
    a.apply(&mut ctx, 0.0); // +10 bytes per ACK
    for k in 1..=7 {
        ack(&mut a, &mut ctx, 1024, 10 * NS);
        assert_eq!(ctx.flow.window, 20_000 + 10 * k);
    }
    a.apply(&mut ctx, 1.0); // hold
    ack(&mut a, &mut ctx, 1024, 10 * NS);
    assert_eq!(ctx.flow.window, 20_070);
    a.apply(&mut ctx, 2.0); // -300 bytes per ACK, down to the floor
    for k in 1..=60u64 {
        ack(&mut a, &mut ctx, 1024, 10 * NS);
        assert_eq!(ctx.flow.window, (20_070 - 300 * k as i64).max(4096) as u64);
    }
    assert_eq!(ctx.flow.window, 4096);
}

#[test]
fn per_ack_reno_rule_adds_mss_squared_over_cwnd() {
    use crate::config::PerAckStep;
    let cfg = AgentConfig {
        action: "per_ack".into(),
        per_ack: vec![PerAckStep::Named("reno".into())],
        initial_window: crate::units::Bytes(10 * 1024),
        ..Default::default()
    };
    let (mut a, mut f) = started(cfg);
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    a.apply(&mut ctx, 0.0);
    let mut w = 10.0 * 1024.0;
    for _ in 0..10 {
        ack(&mut a, &mut ctx, 1024, 10 * NS);
        w += 1024.0 * 1024.0 / w;
    }
    assert_eq!(ctx.flow.window, w as u64);
    // About one MSS per window of ACKs.
    assert!(ctx.flow.window > 11 * 1024 - 100 && ctx.flow.window < 11 * 1024);
}

#[test]
fn window_action_sets_the_window_in_bytes_or_packets_with_a_floor() {
    let bytes = AgentConfig { action: "window".into(), ..Default::default() };
    let (mut a, mut f) = started(bytes);
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    assert_eq!(ctx.flow.window, ctx.flow.bdp, "starts with the BDP");
    a.apply(&mut ctx, 50_000.0);
    assert_eq!(ctx.flow.window, 50_000);
    a.apply(&mut ctx, 10.0);
    assert_eq!(ctx.flow.window, 1024, "not below one MTU");
    let w = ctx.flow.window;
    a.apply(&mut ctx, f32::NAN);
    assert_eq!(ctx.flow.window, w, "NaN keeps the window");
    let pkts = AgentConfig { action: "window".into(), window_unit: "packets".into(), ..Default::default() };
    let (mut a, mut f) = started(pkts);
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    a.apply(&mut ctx, 12.0);
    assert_eq!(ctx.flow.window, 12 * 1024);
    let bad = AgentConfig { action: "window".into(), window_unit: "segments".into(), ..Default::default() };
    assert!(AgentSpec::from_config(&bad).unwrap_err().to_string().contains("agent.window_unit"));
    let bad = AgentConfig { action: "per_ack".into(), per_ack: vec![], ..Default::default() };
    assert!(AgentSpec::from_config(&bad).unwrap_err().to_string().contains("agent.per_ack"));
    let bad = AgentConfig {
        action: "per_ack".into(),
        per_ack: vec![crate::config::PerAckStep::Named("cubic".into())],
        ..Default::default()
    };
    assert!(AgentSpec::from_config(&bad).unwrap_err().to_string().contains("agent.per_ack[0]"));
}

#[test]
fn event_aggregators_match_hand_computed_values() {
    let names = [
        "rtt_sum",
        "rtt_mean",
        "rtt_std",
        "rtt_min",
        "rtt_max",
        "acked_sum",
        "acked_mean",
        "acked_std",
        "acked_min",
        "acked_max",
        "ack_gap_ewma",
        "send_gap_ewma",
        "rtt_over_min",
    ];
    let cfg = AgentConfig {
        trigger: "acks".into(),
        every_acks: 4,
        history: 1,
        features: names.iter().map(|s| s.to_string()).collect(),
        rtt_norm: Duration(1000 * NS),
        ewma_gain: 0.5,
        ..Default::default()
    };
    let (mut a, mut f) = started(cfg);
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    // Sends at 0, 100, 300, 700 ns: gaps 100, 200, 400 -> EWMA(0.5) 100, 150, 275 ns.
    for t in [0, 100, 300, 700] {
        ctx.now = t * NS;
        a.on_send(&mut ctx, 1024);
    }
    // ACKs at 1000, 1200, 1600, 1700 ns (gaps 200, 400, 100 -> 200, 300, 200 ns),
    // RTTs 1, 2, 3, 6 us, acked 1024, 2048, 1024, 4096 bytes.
    let acks = [(1000, 1024, 1000), (1200, 2048, 2000), (1600, 1024, 3000), (1700, 4096, 6000)];
    for (t, bytes, rtt) in acks {
        ctx.now = t * NS;
        ack(&mut a, &mut ctx, bytes, rtt * NS);
    }
    assert!(ctx.flow.decision_due);
    // RTT in rtt_norm (1 us) units: 1, 2, 3, 6. Acked in 1024-byte packets: 1, 2, 1, 4.
    let rtt_std = ((1.0f64 + 4.0 + 9.0 + 36.0) / 4.0 - 3.0f64 * 3.0).sqrt();
    let acked_std = ((1.0f64 + 4.0 + 1.0 + 16.0) / 4.0 - 2.0f64 * 2.0).sqrt();
    // The interval RTT is the mean (3 us); the smallest sample 1 us.
    let want = [12.0, 3.0, rtt_std, 1.0, 6.0, 8.0, 2.0, acked_std, 1.0, 4.0, 0.2, 0.275, 3.0];
    let obs = a.observation();
    for ((name, got), want) in names.iter().zip(obs).zip(want) {
        assert!((*got as f64 - want).abs() < 1e-5, "{name}: {got} != {want}");
    }
    // The next interval starts empty: the per-event aggregates restart at 0.
    a.apply(&mut ctx, 0.0);
    ctx.flow.decision_due = false;
    for t in [1800, 1900, 2000, 2100] {
        ctx.now = t * NS;
        ack(&mut a, &mut ctx, 1024, 500 * NS);
    }
    assert_eq!(a.observation()[0], 2.0, "rtt_sum of the second interval only");
    assert_eq!(a.observation()[3], 0.5);
    assert_eq!(a.observation()[12], 1.0, "rtt_over_min: the mean 0.5 us over the new minimum 0.5 us");
}

/// A QTCP-style agent: `per_ack` [+10, 0, -1] bytes with NewReno's loss recovery underneath.
fn qtcp_cfg() -> AgentConfig {
    AgentConfig {
        trigger: "interval".into(),
        interval: Duration(crate::units::MS),
        action: "per_ack".into(),
        loss_response: "newreno".into(),
        initial_window: crate::units::Bytes(20 * 1024),
        ..Default::default()
    }
}

fn dup(a: &mut AgentCc, ctx: &mut CcCtx, ack_seq: u64, n: u32, in_recovery: bool) {
    a.on_ack(ctx, &AckEvent { ack_seq, newly_acked: 0, dup_acks: n, in_recovery, rtt: 10 * NS, ..Default::default() });
}

#[test]
fn newreno_underneath_a_per_ack_rule_halves_on_loss_and_resumes_the_rule() {
    let (mut a, mut f) = started(qtcp_cfg());
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    ctx.flow.snd_nxt = 40 * 1024;
    ctx.flow.snd_una = 20 * 1024;
    a.apply(&mut ctx, 0.0); // +10 bytes per ACK
    for k in 1..=5u64 {
        let seq = ctx.flow.snd_una + 1024;
        ctx.flow.snd_una = seq;
        a.on_ack(&mut ctx, &AckEvent { ack_seq: seq, newly_acked: 1024, rtt: 10 * NS, ..Default::default() });
        assert_eq!(ctx.flow.window, 20 * 1024 + 10 * k);
    }
    // Duplicate ACKs: no rule; the first two open the limited-transmit allowance.
    let una = ctx.flow.snd_una;
    dup(&mut a, &mut ctx, una, 1, false);
    assert_eq!(ctx.flow.window, 20 * 1024 + 50 + 1024);
    dup(&mut a, &mut ctx, una, 2, false);
    assert_eq!(ctx.flow.window, 20 * 1024 + 50 + 2048);
    // Third: fast retransmit. ssthresh = min(flight, cwnd) / 2, cwnd = ssthresh + 3 MSS.
    a.on_fast_retransmit(&mut ctx);
    let cwnd = (20 * 1024 + 50) as f64;
    let flight = (ctx.flow.snd_nxt - ctx.flow.snd_una) as f64;
    let ss = (flight.min(cwnd) / 2.0).max(2048.0);
    assert_eq!(ctx.flow.window, (ss + 3072.0) as u64);
    assert_eq!(a.loss_events(), Some((1, 0)));
    // Further duplicates inflate by one MSS each, the rule does not apply.
    dup(&mut a, &mut ctx, una, 4, true);
    assert_eq!(ctx.flow.window, (ss + 4096.0) as u64);
    // The ACK that ends recovery: cwnd = ssthresh; the next new ACK applies the rule again.
    let end = ctx.flow.snd_nxt;
    ctx.flow.snd_una = end;
    a.on_ack(&mut ctx, &AckEvent { ack_seq: end, newly_acked: end - una, rtt: 10 * NS, ..Default::default() });
    assert_eq!(ctx.flow.window, ss as u64);
    ctx.flow.snd_nxt += 4096;
    ctx.flow.snd_una += 1024;
    let una = ctx.flow.snd_una;
    a.on_ack(&mut ctx, &AckEvent { ack_seq: una, newly_acked: 1024, rtt: 10 * NS, ..Default::default() });
    assert_eq!(ctx.flow.window, ss as u64 + 10);
}

#[test]
fn newreno_underneath_a_per_ack_rule_slow_starts_after_a_timeout() {
    let (mut a, mut f) = started(qtcp_cfg());
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    let rate = ctx.flow.rate;
    a.apply(&mut ctx, 2.0); // -1 byte per ACK
    ctx.flow.snd_nxt = 20 * 1024;
    a.on_send(&mut ctx, 1024);
    ctx.flow.snd_nxt = 0; // the NIC went back to snd_una
    a.on_timeout(&mut ctx);
    assert_eq!(ctx.flow.window, 1024, "one segment");
    assert_eq!(ctx.flow.rate, rate, "the pacing rate is not cut (timeout_rate does not apply)");
    assert_eq!(a.loss_events(), Some((0, 1)));
    // Slow start (+1 MSS per ACK) up to ssthresh = 10 KiB, then the rule (-1 byte per ACK).
    let mut seq = 0;
    let mut w = 1024;
    while w < 10 * 1024 {
        seq += 1024;
        ctx.flow.snd_nxt = ctx.flow.snd_nxt.max(seq + 1024);
        ctx.flow.snd_una = seq;
        a.on_ack(&mut ctx, &AckEvent { ack_seq: seq, newly_acked: 1024, rtt: 10 * NS, ..Default::default() });
        w += 1024;
        assert_eq!(ctx.flow.window, w);
    }
    seq += 1024;
    ctx.flow.snd_una = seq;
    a.on_ack(&mut ctx, &AckEvent { ack_seq: seq, newly_acked: 1024, rtt: 10 * NS, ..Default::default() });
    assert_eq!(ctx.flow.window, 10 * 1024 - 1);
    // Below ssthresh by the policy's own decrease, not by a loss: no slow start, the rule
    // goes on (slow start would add a segment and pin the window at ssthresh).
    for k in 2..=5u64 {
        seq += 1024;
        ctx.flow.snd_una = seq;
        a.on_ack(&mut ctx, &AckEvent { ack_seq: seq, newly_acked: 1024, rtt: 10 * NS, ..Default::default() });
        assert_eq!(ctx.flow.window, 10 * 1024 - k);
    }
}

#[test]
fn loss_response_none_keeps_the_window_through_losses() {
    let cfg = AgentConfig { loss_response: "none".into(), ..qtcp_cfg() };
    let (mut a, mut f) = started(cfg);
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    a.on_fast_retransmit(&mut ctx);
    assert_eq!(ctx.flow.window, 20 * 1024);
    assert_eq!(a.loss_events(), None);
}

#[test]
fn slow_start_from_the_initial_window_until_the_first_loss() {
    let cfg = AgentConfig { slow_start: true, ..qtcp_cfg() };
    let (mut a, mut f) = started(cfg);
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    a.apply(&mut ctx, 0.0);
    ctx.flow.snd_nxt = 100 * 1024;
    for k in 1..=3u64 {
        ctx.flow.snd_una = k * 1024;
        a.on_ack(&mut ctx, &AckEvent { ack_seq: k * 1024, newly_acked: 1024, rtt: 10 * NS, ..Default::default() });
        assert_eq!(ctx.flow.window, (20 + k) * 1024);
    }
}

#[test]
fn interval_rtts_sets_a_per_flow_decision_grid() {
    let cfg = AgentConfig { interval_rtts: 2.5, ..qtcp_cfg() };
    let (mut a, mut f) = started(cfg);
    let period = 2.5 * (8192 * NS) as f64;
    assert_eq!(f.timer, Some(period as Time));
    let mut ctx = CcCtx { now: period as Time, flow: &mut f };
    ctx.flow.snd_una = 1024;
    a.on_ack(&mut ctx, &AckEvent { ack_seq: 1024, newly_acked: 1024, rtt: 10 * NS, ..Default::default() });
    a.on_timer(&mut ctx);
    assert!(ctx.flow.decision_due);
    assert_eq!(ctx.flow.timer, Some(2 * period as Time));
}

#[test]
fn qtcp_features_are_ewmas_over_the_min_rtt() {
    let cfg = AgentConfig {
        features: vec![
            "send_gap_over_min".into(),
            "ack_gap_over_min".into(),
            "rtt_ewma_over_min".into(),
            "window_packets".into(),
        ],
        history: 1,
        ..qtcp_cfg()
    };
    let (mut a, mut f) = started(cfg);
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    // Sends 100 ns apart, then 200 ns: EWMA 100 + (200 - 100) / 8 = 112.5 ns.
    for t in [0, 100, 200, 400] {
        ctx.now = t * NS;
        a.on_send(&mut ctx, 1024);
    }
    // ACKs 1000 ns apart with RTTs 1000, 2000, 1000 ns: min 1000; RTT EWMA 1000 + 1000/8 - 1125/8.
    for (i, rtt) in [1000u64, 2000, 1000].iter().enumerate() {
        ctx.now = (1000 + 1000 * i as u64) * NS;
        let seq = 1024 * (i as u64 + 1);
        a.on_ack(&mut ctx, &AckEvent { ack_seq: seq, newly_acked: 1024, rtt: rtt * NS, ..Default::default() });
    }
    ctx.now = crate::units::MS;
    a.on_timer(&mut ctx);
    let ewma = 1125.0 + (1000.0 - 1125.0) / 8.0;
    let want = [112.5 / 1000.0, 1.0, ewma / 1000.0, 20.0];
    for (got, want) in a.observation().iter().zip(want) {
        assert!((*got as f64 - want).abs() < 1e-6, "{:?} vs {want:?}", a.observation());
    }
}

#[test]
fn loss_response_and_interval_rtts_are_checked() {
    let e = |cfg: AgentConfig| AgentSpec::from_config(&cfg).unwrap_err().field;
    assert_eq!(e(AgentConfig { loss_response: "cubic".into(), ..qtcp_cfg() }), "agent.loss_response");
    assert_eq!(e(AgentConfig { loss_response: "newreno".into(), ..Default::default() }), "agent.loss_response");
    assert_eq!(e(AgentConfig { slow_start: true, loss_response: "none".into(), ..qtcp_cfg() }), "agent.slow_start");
    assert_eq!(e(AgentConfig { interval_rtts: -1.0, ..qtcp_cfg() }), "agent.interval_rtts");
    assert_eq!(e(AgentConfig { interval_rtts: f64::NAN, ..qtcp_cfg() }), "agent.interval_rtts");
}

#[test]
fn a_timeout_cuts_the_rate_of_rate_agents_only() {
    // Window agents without NewReno underneath: their policy never sets the rate,
    // so a timeout's cut to the floor would last for the rest of the run.
    let window = |action: &str| AgentConfig {
        trigger: "interval".into(),
        interval: Duration(crate::units::MS),
        action: action.into(),
        initial_window: crate::units::Bytes(20 * 1024),
        ..Default::default()
    };
    for cfg in [window("window"), window("per_ack")] {
        assert_eq!(cfg.loss_response, "none");
        assert!(cfg.timeout_rate < 1.0);
        let (mut a, mut f) = started(cfg.clone());
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        let (rate, window) = (ctx.flow.rate, ctx.flow.window);
        a.on_send(&mut ctx, 1024);
        a.on_timeout(&mut ctx);
        assert_eq!(ctx.flow.rate, rate, "{}: the pacing rate is kept", cfg.action);
        assert_eq!(ctx.flow.window, window, "{}: no loss response, the window is the policy's", cfg.action);
    }
    // A rate agent restarts at timeout_rate (the floor by default).
    let cfg = AgentConfig { trigger: "interval".into(), interval: Duration(crate::units::MS), ..Default::default() };
    let (mut a, mut f) = started(cfg);
    let mut ctx = CcCtx { now: 0, flow: &mut f };
    let rate = ctx.flow.rate;
    a.on_timeout(&mut ctx);
    assert!(ctx.flow.rate < rate * 1e-3, "{} -> {}", rate, ctx.flow.rate);
}
