//! The checked `[agent]` table: what triggers a decision, what an agent
//! observes, how it is rewarded and how its action becomes a rate.

use crate::config::{AgentConfig, CfgResult, ConfigError};
use crate::units::Time;

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
    /// Aurora: `10 throughput[pkt/s] - 1000 latency[s] - 2000 loss`.
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

    /// The action that leaves an agent's rate unchanged (what a decision
    /// gets when nobody is there to answer it).
    pub fn neutral_action(&self) -> f32 {
        match &self.action {
            ActionMap::Discrete(t) => t
                .iter()
                .enumerate()
                .min_by(|a, b| (a.1 - 1.0).abs().total_cmp(&(b.1 - 1.0).abs()))
                .map_or(0, |(i, _)| i) as f32,
            ActionMap::Rate => f32::NAN,
            _ => 0.0,
        }
    }
}
