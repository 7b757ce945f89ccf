//! Learned congestion control: the flow side of the agent bridge.
//!
//! A flow whose CC is `agent` is driven by a policy outside the usual CC
//! rules. At each decision point (an RTT-probe reply, every N ACKs, or a fixed
//! monitor interval) it turns what it measured over the monitor interval into
//! a feature row, keeps the last `history` rows as its observation, computes
//! the reward of its previous action, and asks for an action. The simulator
//! batches these requests (see `Simulation::agent_step`) or answers them at
//! once with a native policy; the action takes effect `policy_delay` later,
//! while the flow keeps sending at its old rate.

use crate::cc::{AckEvent, CcCtx, CongestionControl, ProbeEvent};
use crate::config::{CfgResult, ConfigError};
use crate::units::{Duration, Time, NS, SEC};
use serde::Deserialize;
use std::sync::Arc;

/// The scenario's `[agent]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// When a flow asks for a decision: `probe` (RTT-probe reply), `acks` or `interval`.
    pub trigger: String,
    /// `acks` trigger: ACKs per decision.
    pub every_acks: u32,
    /// `interval` trigger: monitor-interval length.
    pub interval: Duration,
    /// Feature names, in observation order (see [`FEATURES`]).
    pub features: Vec<String>,
    /// Feature rows per observation (oldest first).
    pub history: u32,
    /// Reward name (see [`REWARDS`]).
    pub reward: String,
    /// Action mapping: `multiplier`, `aurora`, `discrete` or `rate`.
    pub action: String,
    /// `multiplier`: m = 1 + inc x a for a >= 0.
    pub multiplier_inc: f64,
    /// `multiplier`: m = 1 / (1 - dec x a) for a < 0.
    pub multiplier_dec: f64,
    /// `aurora`: rate x (1 + alpha a) or / (1 - alpha a).
    pub aurora_alpha: f64,
    /// `discrete`: the multipliers an action index selects.
    pub discrete: Vec<f64>,
    /// Time between a decision request and its action taking effect (default
    /// 1 us; 0 = blocking: the network waits for the policy).
    pub policy_delay: Duration,
    /// `external` (actions come from Python) or the path of a native policy file.
    pub policy: String,
    /// Native policy arithmetic: `float32` or `int8`.
    pub precision: String,
    /// RTT normaliser (RTT inflation = RTT / rtt_norm); 0 = the flow's base RTT.
    pub rtt_norm: Duration,
    /// ADPG signal: RTT-inflation offset beta.
    pub adpg_beta: f64,
    /// ADPG signal: target of max(R - beta, 0) x sqrt(rate).
    pub adpg_target: f64,
    /// ADPG signal: scale s.
    pub adpg_scale: f64,
    /// Delay weight of the `throughput_delay` and `log_utility` rewards.
    pub reward_beta: f64,
    /// Factor applied to every reward.
    pub reward_scale: f64,
    /// Rate an agent flow starts at, as a fraction of line rate.
    pub initial_rate: f64,
    /// Rate a flow restarts at after a retransmission timeout, as a fraction of
    /// line rate (0 = the NIC's rate floor; 1 = keep the rate the agent had set).
    pub timeout_rate: f64,
    /// `interval` trigger: a tick at which the flow has neither sent a packet
    /// nor heard an ACK or NACK since its last decision is skipped (its monitor
    /// interval goes on), at most this many ticks in a row; 0 = decide at
    /// every tick.
    pub hold_ticks: u32,
    /// `probe` trigger: a probe whose reply has not come back after this long
    /// is requested again (0 = never).
    pub probe_timeout: Duration,
    /// `interval` trigger: an idle flow (between messages) sends a standalone
    /// RTT probe every `hold_ticks + 1` ticks and decides on its reply; false =
    /// an idle flow makes no decisions and keeps its rate.
    pub idle_probe: bool,
    /// RTT of an ACK-measured interval: `mean` of its samples or the `last` one.
    pub rtt_estimate: String,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            trigger: "probe".into(),
            every_acks: 16,
            interval: Duration(10 * crate::units::US),
            features: vec!["action".into(), "adpg".into()],
            history: 2,
            reward: "adpg_signal".into(),
            action: "multiplier".into(),
            multiplier_inc: 0.2,
            multiplier_dec: 0.2,
            aurora_alpha: 0.025,
            discrete: vec![0.8, 0.95, 1.0, 1.05, 1.1, 1.2],
            policy_delay: Duration(crate::units::US),
            policy: "external".into(),
            precision: "float32".into(),
            rtt_norm: Duration(8192 * NS),
            adpg_beta: 1.5,
            adpg_target: 0.064,
            adpg_scale: 12.5,
            reward_beta: 1.0,
            reward_scale: 1.0,
            initial_rate: 1.0,
            timeout_rate: 0.0,
            hold_ticks: 0,
            probe_timeout: Duration(crate::units::MS),
            idle_probe: false,
            rtt_estimate: "mean".into(),
        }
    }
}

/// What starts a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Each RTT-probe reply (ADPG / RL-CC); the next probe is requested at once.
    Probe,
    /// Every N ACKs.
    Acks(u32),
    /// Every fixed monitor interval (Aurora, MVFST-RL), on a grid shared by all
    /// flows (multiples of the interval), so that decisions of all flows
    /// coincide (PettingZoo's parallel mode). An idle flow (everything its
    /// application handed over is acknowledged) skips the ticks of its gap.
    Interval(Time),
}

/// Observation features, per monitor interval (MI).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// RTT / rtt_norm.
    RttInflation,
    /// Current rate / line rate.
    Rate,
    /// NACKs / data packets sent.
    NackRatio,
    /// CNPs / data packets sent.
    CnpRatio,
    /// Wire bytes sent / MI length, as a fraction of line rate.
    Bandwidth,
    /// The multiplier last applied (1 before the first decision).
    Action,
    /// The ADPG error signal d = s (max(R - beta, 0) sqrt(rate) - target).
    Adpg,
    /// Slope of RTT over time within the MI (Aurora's latency gradient).
    LatencyGradient,
    /// Mean RTT / smallest per-MI mean RTT so far (Aurora).
    LatencyRatio,
    /// Send rate / delivery rate (Aurora), 1 when undefined or above 1000.
    SendRatio,
    /// Acknowledged bytes / MI length, as a fraction of line rate.
    Throughput,
    /// (RTT - base RTT) / rtt_norm.
    Delay,
    /// Lost packets / (lost + acknowledged).
    Loss,
}

/// Feature names accepted in `agent.features`.
pub const FEATURES: &[(&str, Feature)] = &[
    ("rtt_inflation", Feature::RttInflation),
    ("rate", Feature::Rate),
    ("nack_ratio", Feature::NackRatio),
    ("cnp_ratio", Feature::CnpRatio),
    ("bandwidth", Feature::Bandwidth),
    ("action", Feature::Action),
    ("adpg", Feature::Adpg),
    ("latency_gradient", Feature::LatencyGradient),
    ("latency_ratio", Feature::LatencyRatio),
    ("send_ratio", Feature::SendRatio),
    ("throughput", Feature::Throughput),
    ("delay", Feature::Delay),
    ("loss", Feature::Loss),
];

/// Rewards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reward {
    /// The ADPG paper's -(x - target)^2.
    Adpg,
    /// The ADPG code's signed error signal d (what the ADPG trainer consumes).
    AdpgSignal,
    /// Aurora: 10 throughput[pkt/s] - 1000 latency[s] - 2000 loss.
    Aurora,
    /// throughput (fraction of line rate) - beta x delay (in rtt_norm units).
    ThroughputDelay,
    /// ln(throughput) - beta x ln(RTT / base RTT).
    LogUtility,
}

/// Reward names accepted in `agent.reward`.
pub const REWARDS: &[(&str, Reward)] = &[
    ("adpg", Reward::Adpg),
    ("adpg_signal", Reward::AdpgSignal),
    ("aurora", Reward::Aurora),
    ("throughput_delay", Reward::ThroughputDelay),
    ("log_utility", Reward::LogUtility),
];

/// How an action becomes a rate.
#[derive(Clone, Debug, PartialEq)]
pub enum ActionMap {
    /// Log-symmetric multiplier of a in [-1, 1] (ADPG).
    Multiplier {
        /// Increase scale.
        inc: f64,
        /// Decrease scale.
        dec: f64,
    },
    /// Aurora's rate update with step alpha.
    Aurora {
        /// Step size.
        alpha: f64,
    },
    /// Index into a table of multipliers.
    Discrete(Vec<f64>),
    /// The action is the rate as a fraction of line rate.
    Rate,
}

/// The checked, shared form of an [`AgentConfig`].
#[derive(Clone, Debug)]
pub struct AgentSpec {
    /// Decision trigger.
    pub trigger: Trigger,
    /// Features of one row.
    pub features: Vec<Feature>,
    /// Rows per observation.
    pub history: usize,
    /// Reward.
    pub reward: Reward,
    /// Action mapping.
    pub action: ActionMap,
    /// Request-to-effect delay.
    pub policy_delay: Time,
    /// RTT normaliser in ps (0 = per-flow base RTT).
    pub rtt_norm: f64,
    /// ADPG constants (beta, target, scale).
    pub adpg: (f64, f64, f64),
    /// Reward delay weight and overall scale.
    pub reward_beta: f64,
    /// Overall reward factor.
    pub reward_scale: f64,
    /// Starting rate as a fraction of line rate.
    pub initial_rate: f64,
    /// Rate after a retransmission timeout, as a fraction of line rate (0 = floor, 1 = keep).
    pub timeout_rate: f64,
    /// Interval ticks at which the flow has neither sent nor heard anything
    /// since its last decision are skipped, up to this many in a row.
    ///
    /// Why: a flow far below its share (thousands of flows on one port) sends
    /// a burst every few milliseconds; deciding at every tick would repeat one
    /// stale measurement dozens of times and compound its action (1.2^40), so
    /// that all such flows overshoot together.
    pub hold_ticks: u32,
    /// `probe` trigger: re-request a probe unanswered for this long (0 = never).
    ///
    /// Why: the probe rides on a data packet, and in a full lossy queue that
    /// packet and every later one of the window can be dropped with no NACK to
    /// re-request it; the flow would then make no decision until its
    /// retransmission timeout, while it keeps overfilling the queue.
    pub probe_timeout: Time,
    /// `interval` trigger: idle flows probe the path and decide on the reply.
    pub idle_probe: bool,
    /// Use the interval's last RTT sample instead of their mean.
    pub rtt_last: bool,
}

impl AgentSpec {
    /// Checks an `[agent]` table.
    pub fn from_config(c: &AgentConfig) -> CfgResult<AgentSpec> {
        let bad = |f: &str, v: &dyn std::fmt::Display, m: &str| Err(ConfigError::new(format!("agent.{f}"), v, m));
        let trigger = match c.trigger.as_str() {
            "probe" => Trigger::Probe,
            "acks" if c.every_acks > 0 => Trigger::Acks(c.every_acks),
            "acks" => return bad("every_acks", &0, "must be at least 1"),
            "interval" if c.interval.0 > 0 => Trigger::Interval(c.interval.0),
            "interval" => return bad("interval", &"0", "must be positive"),
            other => return bad("trigger", &format!("\"{other}\""), "use \"probe\", \"acks\" or \"interval\""),
        };
        if c.features.is_empty() {
            return bad("features", &"[]", "name at least one feature");
        }
        let mut features = vec![];
        for (i, name) in c.features.iter().enumerate() {
            match FEATURES.iter().find(|(n, _)| n == name) {
                Some((_, f)) => features.push(*f),
                None => {
                    let known: Vec<_> = FEATURES.iter().map(|(n, _)| *n).collect();
                    return Err(ConfigError::new(
                        format!("agent.features[{i}]"),
                        format!("\"{name}\""),
                        format!("unknown feature; known: {}", known.join(", ")),
                    ));
                }
            }
        }
        if c.history == 0 || c.history > 64 {
            return bad("history", &c.history, "must be from 1 to 64");
        }
        let reward = match REWARDS.iter().find(|(n, _)| *n == c.reward) {
            Some((_, r)) => *r,
            None => {
                let known: Vec<_> = REWARDS.iter().map(|(n, _)| *n).collect();
                return bad(
                    "reward",
                    &format!("\"{}\"", c.reward),
                    &format!("unknown reward; known: {}", known.join(", ")),
                );
            }
        };
        let action = match c.action.as_str() {
            "multiplier" => {
                if !(c.multiplier_inc > 0.0 && c.multiplier_inc < 10.0) {
                    return bad("multiplier_inc", &c.multiplier_inc, "must be in (0, 10)");
                }
                if !(c.multiplier_dec > 0.0 && c.multiplier_dec < 10.0) {
                    return bad("multiplier_dec", &c.multiplier_dec, "must be in (0, 10)");
                }
                ActionMap::Multiplier { inc: c.multiplier_inc, dec: c.multiplier_dec }
            }
            "aurora" => {
                if !(c.aurora_alpha > 0.0 && c.aurora_alpha < 1.0) {
                    return bad("aurora_alpha", &c.aurora_alpha, "must be in (0, 1)");
                }
                ActionMap::Aurora { alpha: c.aurora_alpha }
            }
            "discrete" => {
                if c.discrete.is_empty() || c.discrete.iter().any(|m| !(*m > 0.0 && m.is_finite())) {
                    return bad("discrete", &format!("{:?}", c.discrete), "needs positive finite multipliers");
                }
                ActionMap::Discrete(c.discrete.clone())
            }
            "rate" => ActionMap::Rate,
            other => {
                return bad(
                    "action",
                    &format!("\"{other}\""),
                    "use \"multiplier\", \"aurora\", \"discrete\" or \"rate\"",
                )
            }
        };
        if !(c.initial_rate > 0.0 && c.initial_rate <= 1.0) {
            return bad("initial_rate", &c.initial_rate, "must be a fraction of line rate in (0, 1]");
        }
        if !(0.0..=1.0).contains(&c.timeout_rate) {
            return bad("timeout_rate", &c.timeout_rate, "must be a fraction of line rate in [0, 1]");
        }
        if !(c.reward_scale.is_finite() && c.reward_beta.is_finite() && c.adpg_scale.is_finite()) {
            return bad("reward_scale", &c.reward_scale, "reward constants must be finite");
        }
        let rtt_last = match c.rtt_estimate.as_str() {
            "mean" => false,
            "last" => true,
            other => return bad("rtt_estimate", &format!("\"{other}\""), "use \"mean\" or \"last\""),
        };
        Ok(AgentSpec {
            trigger,
            features,
            history: c.history as usize,
            reward,
            action,
            policy_delay: c.policy_delay.0,
            rtt_norm: c.rtt_norm.0 as f64,
            adpg: (c.adpg_beta, c.adpg_target, c.adpg_scale),
            reward_beta: c.reward_beta,
            reward_scale: c.reward_scale,
            initial_rate: c.initial_rate,
            timeout_rate: c.timeout_rate,
            hold_ticks: c.hold_ticks,
            probe_timeout: c.probe_timeout.0,
            idle_probe: c.idle_probe,
            rtt_last,
        })
    }

    /// Length of one observation.
    pub fn obs_dim(&self) -> usize {
        self.features.len() * self.history
    }
}

/// Per-flow agent state: monitor-interval statistics, observation history and
/// the decision in flight.
#[derive(Clone, Debug)]
pub struct AgentCc {
    spec: Arc<AgentSpec>,
    mi_start: Time,
    sent_bytes: u64,
    sent_pkts: u64,
    acked_bytes: u64,
    acked_pkts: u64,
    nacks: u32,
    cnps: u32,
    losses: u32,
    rtt_n: u32,
    rtt_sum: f64,
    // Sums for the least-squares slope of RTT over time (Aurora's gradient).
    t_sum: f64,
    tt_sum: f64,
    tr_sum: f64,
    probe_rtt: Option<Time>,
    last_sample: Time,
    last_rtt: Option<f64>,
    min_mean_rtt: f64,
    acks_since: u32,
    /// A probe was requested and its reply has not come back.
    probe_pending: bool,
    /// Interval ticks skipped in a row for want of news (`hold_ticks`).
    held: u32,
    history: Vec<f32>,
    filled: bool,
    /// Multiplier applied by the last action (1 before the first).
    pub last_multiplier: f64,
    /// A decision was requested and its action has not been applied yet.
    pub outstanding: bool,
    /// Action waiting to be applied at its due time.
    pub pending_action: f32,
    /// Decisions skipped because the previous one was still outstanding.
    pub skipped: u64,
    /// Reward computed at the last decision.
    pub last_reward: f32,
}

impl AgentCc {
    /// A fresh agent following `spec`.
    pub fn new(spec: Arc<AgentSpec>) -> Self {
        let n = spec.obs_dim();
        AgentCc {
            spec,
            mi_start: 0,
            sent_bytes: 0,
            sent_pkts: 0,
            acked_bytes: 0,
            acked_pkts: 0,
            nacks: 0,
            cnps: 0,
            losses: 0,
            rtt_n: 0,
            rtt_sum: 0.0,
            t_sum: 0.0,
            tt_sum: 0.0,
            tr_sum: 0.0,
            probe_rtt: None,
            last_sample: 0,
            last_rtt: None,
            min_mean_rtt: f64::INFINITY,
            acks_since: 0,
            probe_pending: false,
            held: 0,
            history: vec![0.0; n],
            filled: false,
            last_multiplier: 1.0,
            outstanding: false,
            pending_action: 0.0,
            skipped: 0,
            last_reward: 0.0,
        }
    }

    /// The agent's configuration.
    pub fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    fn rtt_sample(&mut self, now: Time, rtt: Time) {
        let t = (now - self.mi_start) as f64 / SEC as f64;
        let r = rtt as f64 / SEC as f64;
        self.rtt_n += 1;
        self.rtt_sum += rtt as f64;
        self.last_sample = rtt;
        self.t_sum += t;
        self.tt_sum += t * t;
        self.tr_sum += t * r;
    }

    fn reset_mi(&mut self, now: Time) {
        self.mi_start = now;
        self.sent_bytes = 0;
        self.sent_pkts = 0;
        self.acked_bytes = 0;
        self.acked_pkts = 0;
        self.nacks = 0;
        self.cnps = 0;
        self.losses = 0;
        self.rtt_n = 0;
        self.rtt_sum = 0.0;
        self.t_sum = 0.0;
        self.tt_sum = 0.0;
        self.tr_sum = 0.0;
        self.probe_rtt = None;
        self.acks_since = 0;
    }

    /// Measures the monitor interval ending now: a feature row and the reward.
    fn measure(&mut self, ctx: &CcCtx, row: &mut [f32]) -> f32 {
        let sp = &*self.spec;
        let f = &ctx.flow;
        let mi = (ctx.now.saturating_sub(self.mi_start)).max(1) as f64;
        let mi_s = mi / SEC as f64;
        let base = f.base_rtt.max(1) as f64;
        let norm = if sp.rtt_norm > 0.0 { sp.rtt_norm } else { base };
        let mean_rtt = (self.rtt_n > 0).then(|| self.rtt_sum / self.rtt_n as f64);
        let est = if sp.rtt_last { (self.rtt_n > 0).then_some(self.last_sample as f64) } else { mean_rtt };
        let rtt = match (self.probe_rtt, est) {
            (Some(p), _) => p as f64,
            (None, Some(m)) => m,
            (None, None) => self.last_rtt.unwrap_or(base),
        };
        self.last_rtt = Some(rtt);
        if let Some(m) = mean_rtt {
            self.min_mean_rtt = self.min_mean_rtt.min(m);
        }
        let line = f.line_rate.max(1.0);
        let rate = f.rate / line;
        let inflation = rtt / norm;
        let (beta, target, scale) = sp.adpg;
        let x = (inflation - beta).max(0.0) * rate.sqrt();
        let d = scale * (x - target);
        let pkts = self.sent_pkts.max(1) as f64;
        let throughput = self.acked_bytes as f64 * 8.0 / mi_s / line;
        let lost = (self.nacks + self.losses) as f64;
        let loss = if lost + self.acked_pkts as f64 > 0.0 { lost / (lost + self.acked_pkts as f64) } else { 0.0 };
        let delay = (rtt - base).max(0.0) / norm;
        for (v, feat) in row.iter_mut().zip(&sp.features) {
            *v = match feat {
                Feature::RttInflation => inflation,
                Feature::Rate => rate,
                Feature::NackRatio => self.nacks as f64 / pkts,
                Feature::CnpRatio => self.cnps as f64 / pkts,
                Feature::Bandwidth => self.sent_bytes as f64 * 8.0 / mi_s / line,
                Feature::Action => self.last_multiplier,
                Feature::Adpg => d,
                Feature::LatencyGradient => {
                    let n = self.rtt_n as f64;
                    let var = self.tt_sum - self.t_sum * self.t_sum / n.max(1.0);
                    if self.rtt_n >= 2 && var > 0.0 {
                        let cov = self.tr_sum - self.t_sum * (self.rtt_sum / SEC as f64) / n;
                        cov / var
                    } else {
                        0.0
                    }
                }
                Feature::LatencyRatio => match mean_rtt {
                    Some(m) if self.min_mean_rtt.is_finite() => m / self.min_mean_rtt,
                    _ => 0.0,
                },
                Feature::SendRatio => {
                    let r = self.sent_bytes as f64 / self.acked_bytes as f64;
                    if self.acked_bytes == 0 || r > 1000.0 {
                        1.0
                    } else {
                        r
                    }
                }
                Feature::Throughput => throughput,
                Feature::Delay => delay,
                Feature::Loss => loss,
            } as f32;
        }
        let r = match sp.reward {
            Reward::Adpg => -(x - target) * (x - target),
            Reward::AdpgSignal => d,
            Reward::Aurora => {
                let pps = self.acked_bytes as f64 / 1500.0 / mi_s;
                10.0 * pps - 1000.0 * rtt / SEC as f64 - 2000.0 * loss
            }
            Reward::ThroughputDelay => throughput - sp.reward_beta * delay,
            Reward::LogUtility => throughput.max(1e-6).ln() - sp.reward_beta * (rtt / base).max(1.0).ln(),
        };
        (r * sp.reward_scale) as f32
    }

    /// Closes the monitor interval: pushes a feature row into the history and
    /// returns the reward of the previous action.
    fn close_interval(&mut self, ctx: &CcCtx) -> f32 {
        let nf = self.spec.features.len();
        let mut row = [0f32; 16];
        let mut big;
        let row: &mut [f32] = if nf <= 16 {
            &mut row[..nf]
        } else {
            big = vec![0f32; nf];
            &mut big
        };
        let reward = self.measure(ctx, row);
        if self.filled {
            self.history.copy_within(nf.., 0);
            let n = self.history.len();
            self.history[n - nf..].copy_from_slice(row);
        } else {
            // First row: repeat it over the whole history.
            for chunk in self.history.chunks_mut(nf) {
                chunk.copy_from_slice(row);
            }
            self.filled = true;
        }
        self.reset_mi(ctx.now);
        self.last_reward = reward;
        reward
    }

    /// The current observation (history rows, oldest first).
    pub fn observation(&self) -> &[f32] {
        &self.history
    }

    fn probe(&mut self, ctx: &mut CcCtx) {
        self.probe_pending = true;
        ctx.request_probe();
        if self.spec.probe_timeout > 0 {
            ctx.set_timer(ctx.now + self.spec.probe_timeout);
        }
    }

    /// A loss was detected (NACK, timeout, fast retransmit): the packet that
    /// carried the probe may be among the lost ones, and a lost probe would
    /// stop this flow's decisions for good, so the probe rides again on the
    /// retransmission. (A duplicate reply only adds an RTT sample.)
    fn reprobe_after_loss(&mut self, ctx: &mut CcCtx) {
        if self.spec.trigger == Trigger::Probe && self.probe_pending {
            ctx.request_probe();
        }
    }

    fn decide(&mut self, ctx: &mut CcCtx) {
        if self.outstanding {
            // The policy has not answered the previous request: skip this
            // decision point (MVFST-RL); the interval keeps accumulating.
            self.skipped += 1;
            if self.spec.trigger == Trigger::Probe {
                self.probe(ctx);
            }
            return;
        }
        self.close_interval(ctx);
        self.outstanding = true;
        ctx.flow.decision_due = true;
        if self.spec.trigger == Trigger::Probe {
            self.probe(ctx);
        }
    }

    /// Measures a final interval for a flow that ends (its last observation and reward).
    pub fn finish(&mut self, ctx: &CcCtx) -> f32 {
        self.close_interval(ctx)
    }

    /// Applies action `a` to the flow's rate (a NaN action keeps the rate).
    pub fn apply(&mut self, ctx: &mut CcCtx, a: f32) {
        self.outstanding = false;
        if !a.is_finite() {
            // No usable action (NaN): keep the rate.
            self.last_multiplier = 1.0;
            return;
        }
        let a = a as f64;
        let rate = ctx.flow.rate;
        let line = ctx.flow.line_rate;
        let new_rate = match &self.spec.action {
            ActionMap::Multiplier { inc, dec } => {
                let a = a.clamp(-1.0, 1.0);
                let m = if a >= 0.0 { 1.0 + inc * a } else { 1.0 / (1.0 - dec * a) };
                self.last_multiplier = m;
                (rate * m).min(line)
            }
            ActionMap::Aurora { alpha } => {
                let a = a.clamp(-1e6, 1e6);
                let m = if a >= 0.0 { 1.0 + alpha * a } else { 1.0 / (1.0 - alpha * a) };
                self.last_multiplier = m;
                rate * m
            }
            ActionMap::Discrete(table) => {
                let i = (a.round().max(0.0) as usize).min(table.len() - 1);
                self.last_multiplier = table[i];
                (rate * table[i]).min(line)
            }
            ActionMap::Rate => {
                self.last_multiplier = if rate > 0.0 { a.clamp(0.0, 1.0) * line / rate } else { 1.0 };
                a.clamp(0.0, 1.0) * line
            }
        };
        ctx.set_rate(new_rate);
    }
}

impl CongestionControl for AgentCc {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let line = ctx.flow.line_rate;
        ctx.set_rate(line * self.spec.initial_rate);
        self.reset_mi(ctx.now);
        match self.spec.trigger {
            Trigger::Probe => self.probe(ctx),
            Trigger::Interval(t) => ctx.set_timer(next_tick(ctx.now, t)),
            Trigger::Acks(_) => {}
        }
    }

    fn on_send(&mut self, _ctx: &mut CcCtx, bytes: u32) {
        self.sent_bytes += bytes as u64;
        self.sent_pkts += 1;
    }

    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        self.acked_bytes += ack.newly_acked;
        self.acked_pkts += ack.newly_acked.div_ceil(ctx.flow.mtu.max(1) as u64);
        if self.spec.trigger != Trigger::Probe {
            self.rtt_sample(ctx.now, ack.rtt);
        }
        if let Trigger::Acks(n) = self.spec.trigger {
            self.acks_since += 1;
            if self.acks_since >= n {
                self.decide(ctx);
            }
        }
    }

    fn on_nack(&mut self, ctx: &mut CcCtx, _expected: u64, rtt: Time) {
        self.nacks += 1;
        // The NACK's RTT sample (interval and ACK triggers): without it, a flow
        // that loses most of its packets in a full queue hears no RTT and keeps
        // judging the path by its last (or base) RTT.
        if self.spec.trigger != Trigger::Probe && rtt > 0 {
            self.rtt_sample(ctx.now, rtt);
        }
        self.reprobe_after_loss(ctx);
    }

    fn on_cnp(&mut self, _ctx: &mut CcCtx) {
        self.cnps += 1;
    }

    fn on_probe(&mut self, ctx: &mut CcCtx, probe: &ProbeEvent) {
        if self.spec.trigger != Trigger::Probe {
            if self.spec.idle_probe {
                self.probe_rtt = Some(probe.rtt);
                self.rtt_sample(ctx.now, probe.rtt);
            }
            return;
        }
        {
            self.probe_rtt = Some(probe.rtt);
            self.rtt_sample(ctx.now, probe.rtt);
            if self.probe_pending {
                self.probe_pending = false;
                self.decide(ctx);
            }
        }
    }

    fn on_timer(&mut self, ctx: &mut CcCtx) {
        if self.spec.trigger == Trigger::Probe {
            if self.probe_pending {
                // The probe (or its reply) is presumed lost: ask again. The loss
                // re-requests do not restart this timeout: in a full queue the NACKs
                // keep coming while every retransmission carrying the probe is
                // dropped, and a timeout restarted by each of them never fires
                // (measured: rlcc-public on 128-to-1 stalled again, 2.1 GB dropped).
                self.probe(ctx);
            }
            return;
        }
        if let Trigger::Interval(t) = self.spec.trigger {
            ctx.set_timer(next_tick(ctx.now, t));
            let news = self.rtt_n > 0 || self.sent_pkts > 0 || self.nacks > 0;
            if !news && ctx.flow.is_idle() {
                // Between messages there is nothing to measure or pace: a decision
                // would repeat the last RTT of the previous message (often a full
                // queue) every tick and cut an idle flow's rate for the whole gap.
                // The flow keeps its rate and its next interval starts with its
                // next message.
                if self.spec.idle_probe {
                    self.held += 1;
                    if self.held > self.spec.hold_ticks {
                        self.held = 0;
                        ctx.request_probe();
                    }
                    return;
                }
                self.held = 0;
                self.reset_mi(ctx.now);
                return;
            }
            if !news && self.held < self.spec.hold_ticks {
                self.held += 1;
                return;
            }
            self.held = 0;
            self.decide(ctx);
        }
    }

    fn on_timeout(&mut self, ctx: &mut CcCtx) {
        self.losses += 1;
        // A timeout means the flow heard nothing for a whole RTO: whatever rate it
        // holds was chosen blind (an interval agent that sees no ACKs sees no
        // congestion either and climbs to line rate). Restarting every such flow at
        // that rate at once overflows the queue again, so, like TCP's loss window,
        // the flow restarts low and the policy climbs back on fresh feedback.
        if self.spec.timeout_rate < 1.0 {
            ctx.set_rate(self.spec.timeout_rate * ctx.flow.line_rate);
        }
        self.reprobe_after_loss(ctx);
    }

    fn on_fast_retransmit(&mut self, ctx: &mut CcCtx) {
        self.losses += 1;
        self.reprobe_after_loss(ctx);
    }
}

/// The first multiple of `period` after `now`.
fn next_tick(now: Time, period: Time) -> Time {
    (now / period + 1) * period
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::FlowCtl;

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
}
