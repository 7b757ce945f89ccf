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
