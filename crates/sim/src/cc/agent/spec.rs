//! The checked `[agent]` table: what triggers a decision, what an agent
//! observes, how it is rewarded and how its action becomes a rate.

use crate::config::{AgentConfig, CfgResult, ConfigError, PerAckStep};
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
    /// An aggregate of the per-ACK RTT samples of the MI, in `rtt_norm` units
    /// (MVFST-RL); 0 for an MI without ACKs.
    Rtt(Agg),
    /// An aggregate of the bytes each ACK of the MI newly acknowledged, in
    /// packets of the flow's MTU (MVFST-RL's delivered bytes); 0 without ACKs.
    Acked(Agg),
    /// EWMA of the time between two data packets sent, in `rtt_norm` units (gain `ewma_gain`).
    SendGapEwma,
    /// EWMA of the time between two ACKs heard, in `rtt_norm` units (gain `ewma_gain`).
    AckGapEwma,
    /// The MI's RTT (as for `rtt_inflation`) / the smallest RTT sample the flow has heard.
    RttOverMin,
    /// The flow's window / its BDP (0 when the window is unlimited).
    Window,
    /// EWMA of the time between two data packets sent / the smallest RTT
    /// sample heard (the base RTT before the first sample); QTCP's avg_send.
    SendGapOverMin,
    /// EWMA of the time between two ACKs / the smallest RTT sample; QTCP's avg_ack.
    AckGapOverMin,
    /// EWMA (gain `ewma_gain`) of the RTT samples / the smallest RTT sample;
    /// runs across MIs (QTCP's avg_rtt ratio). 1 before the first sample.
    RttEwmaOverMin,
    /// The flow's window in packets of its MTU (0 when unlimited): QTCP's cwnd plots.
    WindowPackets,
    /// MVFST-RL's state: 20 per-ACK/per-loss fields aggregated over the
    /// interval as sum, mean, std, min and max (100 values; see `agent/mvfst.rs`).
    MvfstState,
    /// MVFST-RL's action history: the last `action_history` actions as a
    /// one-hot over the 5 `mvfst` actions plus the window after each (6 per action).
    MvfstHistory,
    /// The reward delivered with this observation, clipped to [-1, 1]
    /// (MVFST-RL feeds it to its LSTM).
    LastReward,
}

/// How the per-event samples of one monitor interval are summarised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    /// Sum of the samples.
    Sum,
    /// Mean.
    Mean,
    /// Population standard deviation.
    Std,
    /// Smallest sample.
    Min,
    /// Largest sample.
    Max,
}

impl Feature {
    /// Whether the feature needs per-ACK samples aggregated (kept only then, so
    /// today's features cost nothing more per ACK).
    pub fn per_event(self) -> bool {
        matches!(self, Feature::Rtt(_) | Feature::Acked(_) | Feature::AckGapEwma | Feature::AckGapOverMin)
    }

    /// Values the feature adds to a row (`action_history` = k).
    pub fn width(self, action_history: usize) -> usize {
        match self {
            Feature::MvfstState => super::mvfst::STATE_WIDTH,
            Feature::MvfstHistory => action_history * (super::mvfst::ACTIONS + 1),
            _ => 1,
        }
    }
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
    ("rtt_sum", Feature::Rtt(Agg::Sum)),
    ("rtt_mean", Feature::Rtt(Agg::Mean)),
    ("rtt_std", Feature::Rtt(Agg::Std)),
    ("rtt_min", Feature::Rtt(Agg::Min)),
    ("rtt_max", Feature::Rtt(Agg::Max)),
    ("acked_sum", Feature::Acked(Agg::Sum)),
    ("acked_mean", Feature::Acked(Agg::Mean)),
    ("acked_std", Feature::Acked(Agg::Std)),
    ("acked_min", Feature::Acked(Agg::Min)),
    ("acked_max", Feature::Acked(Agg::Max)),
    ("send_gap_ewma", Feature::SendGapEwma),
    ("ack_gap_ewma", Feature::AckGapEwma),
    ("rtt_over_min", Feature::RttOverMin),
    ("window", Feature::Window),
    ("send_gap_over_min", Feature::SendGapOverMin),
    ("ack_gap_over_min", Feature::AckGapOverMin),
    ("rtt_ewma_over_min", Feature::RttEwmaOverMin),
    ("window_packets", Feature::WindowPackets),
    ("mvfst_state", Feature::MvfstState),
    ("mvfst_history", Feature::MvfstHistory),
    ("last_reward", Feature::LastReward),
];

/// Action mappings accepted in `agent.action`.
pub const ACTIONS: &[&str] = &["multiplier", "aurora", "discrete", "rate", "window", "per_ack", "mvfst"];

/// An `aurora` action is clamped to +-this before it scales the rate: past
/// it the multiplier would overflow to infinity or collapse to zero.
pub const AURORA_ACTION_BOUND: f64 = 1e6;

/// Decision triggers accepted in `agent.trigger`.
pub const TRIGGERS: &[&str] = &["probe", "acks", "interval"];

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
    /// MVFST-RL: throughput [MB/s] - beta x max delay [ms] - reward_loss x lost [Mbit]
    /// over the interval (see `agent/mvfst.rs`).
    Mvfst,
}

/// Reward names accepted in `agent.reward`.
pub const REWARDS: &[(&str, Reward)] = &[
    ("adpg", Reward::Adpg),
    ("adpg_signal", Reward::AdpgSignal),
    ("aurora", Reward::Aurora),
    ("throughput_delay", Reward::ThroughputDelay),
    ("log_utility", Reward::LogUtility),
    ("mvfst", Reward::Mvfst),
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
    /// The action is the window, in units of `unit` bytes (1 or the MTU).
    Window {
        /// Bytes per action unit.
        unit: WindowUnit,
    },
    /// The action is an index into a table of per-ACK window rules, each held
    /// until the next action takes effect (QTCP).
    PerAck(Vec<PerAck>),
    /// MVFST-RL's window steps, an index into: unchanged, /2, -10 packets,
    /// +10 packets, x2; the window stays within [`min_cwnd_packets`,
    /// `max_cwnd_packets`] packets.
    Mvfst,
}

/// The unit of a `window` action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowUnit {
    /// Bytes.
    Bytes,
    /// Packets of the flow's MTU.
    Packets,
}

/// A per-ACK window rule (`per_ack` action).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PerAck {
    /// Add this many bytes per ACK (negative shrinks).
    Bytes(f64),
    /// Add MSS x MSS / cwnd per ACK (Reno's congestion avoidance, QTCP-AIMD).
    Reno,
}

impl ActionMap {
    /// Checks an action given through the bridge: finite, and for the
    /// index maps (`discrete`, `per_ack`) an integer index into the table.
    /// Continuous maps clamp to their range, as their action spaces say; an
    /// index outside the table has no meaning, so it is an error, not a clamp.
    pub fn check(&self, a: f32) -> Result<(), String> {
        match self {
            ActionMap::Discrete(t) => check_index(a, t.len(), "agent.discrete"),
            ActionMap::PerAck(t) => check_index(a, t.len(), "agent.per_ack"),
            ActionMap::Mvfst => check_index(a, super::mvfst::ACTIONS, "the mvfst actions"),
            _ => check_finite(a),
        }
    }

    /// Whether the action drives the window (the flow then starts with `initial_window`).
    pub fn sets_window(&self) -> bool {
        matches!(self, ActionMap::Window { .. } | ActionMap::PerAck(_) | ActionMap::Mvfst)
    }
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
    /// Added to the reward before `reward_scale`.
    pub reward_offset: f64,
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
    /// `window` / `per_ack`: the smallest window in bytes (0 = one MTU).
    pub min_window: u64,
    /// `window` / `per_ack`: the starting window in bytes (0 = the flow's BDP).
    pub initial_window: u64,
    /// Gain of the EWMA features.
    pub ewma_gain: f64,
    /// Some feature needs per-ACK samples (see [`Feature::per_event`]).
    pub per_event: bool,
    /// Some feature needs the inter-send EWMA.
    pub send_ewma: bool,
    /// Window actions: NewReno's loss recovery underneath the policy.
    pub newreno: bool,
    /// With `newreno`: start in slow start.
    pub slow_start: bool,
    /// `interval` trigger: the interval in base RTTs (0 = `trigger`'s interval).
    pub interval_rtts: f64,
    /// Some feature needs the EWMA of the RTT samples.
    pub rtt_ewma: bool,
    /// MVFST-RL's per-event state is kept (an `mvfst_*` feature or reward).
    pub mvfst: bool,
    /// `mvfst_history`: actions remembered (k).
    pub action_history: usize,
    /// Values of one observation row (the features' widths summed).
    pub row_width: usize,
    /// `mvfst` action: window bounds in packets.
    pub cwnd_packets: (u32, u32),
    /// `mvfst` reward: weight of the lost Mbit.
    pub reward_loss: f64,
    /// ACK wire bytes (MVFST-RL's "received" field counts them); set from
    /// `packets.ack` when the bridge is built.
    pub ack_bytes: u32,
    /// `timing = "blocking"`: the sender sends nothing while its action is outstanding.
    pub blocking: bool,
    /// How long an action takes to land.
    pub delay: DelayMode,
}

/// Where the delay between a decision request and its action comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum DelayMode {
    /// `policy_delay`, always.
    Fixed(Time),
    /// The policy's wall-clock time (external: from `agent_step` returning to
    /// `agent_act`; native: the inference call), times this factor.
    Measured(f64),
    /// Uniform in [low, high].
    Uniform(Time, Time),
    /// Exponential with this mean.
    Exponential(Time),
    /// One of these, uniformly.
    Samples(Vec<Time>),
}

/// Timing modes accepted in `agent.timing`.
pub const TIMINGS: &[&str] = &["nonblocking", "blocking"];

/// Delay sources accepted in `agent.delay_mode`.
pub const DELAY_MODES: &[&str] = &["fixed", "measured", "uniform", "exponential", "samples"];

/// Named presets of `agent.preset`: the keys each fills when the table does
/// not give them (as JSON, the scenario's form).
pub const PRESETS: &[(&str, &str)] = &[(
    "mvfst",
    r#"{"trigger": "interval", "interval": "100ms", "features": ["mvfst_state", "mvfst_history"],
        "history": 1, "action": "mvfst", "reward": "mvfst", "reward_beta": 0.2, "reward_loss": 0.0,
        "action_history": 20, "min_cwnd_packets": 2, "max_cwnd_packets": 2000}"#,
)];

/// The keys of preset `name` (a JSON object), or `None` for an unknown name.
pub fn preset_table(name: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let (_, text) = PRESETS.iter().find(|(n, _)| *n == name)?;
    match serde_json::from_str(text) {
        Ok(serde_json::Value::Object(m)) => Some(m),
        _ => None,
    }
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
            "window" => ActionMap::Window {
                unit: match c.window_unit.as_str() {
                    "bytes" => WindowUnit::Bytes,
                    "packets" => WindowUnit::Packets,
                    other => return bad("window_unit", &format!("\"{other}\""), "use \"bytes\" or \"packets\""),
                },
            },
            "per_ack" => {
                if c.per_ack.is_empty() {
                    return bad("per_ack", &"[]", "name at least one per-ACK rule");
                }
                let mut rules = vec![];
                for (i, step) in c.per_ack.iter().enumerate() {
                    rules.push(match step {
                        PerAckStep::Bytes(b) if b.is_finite() => PerAck::Bytes(*b),
                        PerAckStep::Named(n) if n == "reno" => PerAck::Reno,
                        other => {
                            return Err(ConfigError::new(
                                format!("agent.per_ack[{i}]"),
                                format!("{other:?}"),
                                "use a finite number of bytes per ACK or \"reno\"",
                            ))
                        }
                    });
                }
                ActionMap::PerAck(rules)
            }
            "mvfst" => ActionMap::Mvfst,
            other => {
                let known = ACTIONS.iter().map(|a| format!("\"{a}\"")).collect::<Vec<_>>().join(", ");
                return bad("action", &format!("\"{other}\""), &format!("use one of {known}"));
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
        if !c.reward_offset.is_finite() {
            return bad("reward_offset", &c.reward_offset, "must be finite");
        }
        let rtt_last = match c.rtt_estimate.as_str() {
            "mean" => false,
            "last" => true,
            other => return bad("rtt_estimate", &format!("\"{other}\""), "use \"mean\" or \"last\""),
        };
        if !(c.ewma_gain > 0.0 && c.ewma_gain <= 1.0) {
            return bad("ewma_gain", &c.ewma_gain, "must be in (0, 1]");
        }
        if c.initial_window.0 > 0 && c.initial_window.0 < c.min_window.0 {
            return bad("initial_window", &c.initial_window.0, "must not be below agent.min_window");
        }
        let newreno = match c.loss_response.as_str() {
            "none" => false,
            "newreno" if action.sets_window() => true,
            "newreno" => {
                return bad("loss_response", &"\"newreno\"", "needs a window action (\"window\" or \"per_ack\")")
            }
            other => return bad("loss_response", &format!("\"{other}\""), "use \"none\" or \"newreno\""),
        };
        if c.slow_start && !newreno {
            return bad("slow_start", &true, "needs agent.loss_response = \"newreno\"");
        }
        if !(c.interval_rtts.is_finite() && c.interval_rtts >= 0.0) {
            return bad("interval_rtts", &c.interval_rtts, "must be a finite number of RTTs >= 0");
        }
        if !c.preset.is_empty() && preset_table(&c.preset).is_none() {
            let known = PRESETS.iter().map(|(n, _)| format!("\"{n}\"")).collect::<Vec<_>>().join(", ");
            return bad("preset", &format!("\"{}\"", c.preset), &format!("unknown preset; known: {known}"));
        }
        if c.action_history > 256 {
            return bad("action_history", &c.action_history, "must be from 0 to 256");
        }
        if features.contains(&Feature::MvfstHistory) && action != ActionMap::Mvfst {
            return bad("features", &"\"mvfst_history\"", "needs agent.action = \"mvfst\" (it records mvfst actions)");
        }
        if !(1..=c.max_cwnd_packets).contains(&c.min_cwnd_packets) {
            return bad(
                "min_cwnd_packets",
                &c.min_cwnd_packets,
                "must be at least 1 and not above agent.max_cwnd_packets",
            );
        }
        if !(c.reward_loss.is_finite()) {
            return bad("reward_loss", &c.reward_loss, "must be finite");
        }
        let blocking = match c.timing.as_str() {
            "nonblocking" => false,
            "blocking" => true,
            other => return bad("timing", &format!("\"{other}\""), "use \"nonblocking\" or \"blocking\""),
        };
        let delay = match c.delay_mode.as_str() {
            "fixed" => DelayMode::Fixed(c.policy_delay.0),
            "measured" if c.measured_scale.is_finite() && c.measured_scale >= 0.0 => {
                DelayMode::Measured(c.measured_scale)
            }
            "measured" => return bad("measured_scale", &c.measured_scale, "must be a finite factor >= 0"),
            "uniform" if c.policy_delay_min.0 <= c.policy_delay.0 => {
                DelayMode::Uniform(c.policy_delay_min.0, c.policy_delay.0)
            }
            "uniform" => return bad("policy_delay_min", &c.policy_delay_min.0, "must not exceed agent.policy_delay"),
            "exponential" => DelayMode::Exponential(c.policy_delay.0),
            "samples" if !c.policy_delay_samples.is_empty() => {
                DelayMode::Samples(c.policy_delay_samples.iter().map(|d| d.0).collect())
            }
            "samples" => return bad("policy_delay_samples", &"[]", "give at least one delay to draw from"),
            other => {
                let known = DELAY_MODES.iter().map(|a| format!("\"{a}\"")).collect::<Vec<_>>().join(", ");
                return bad("delay_mode", &format!("\"{other}\""), &format!("use one of {known}"));
            }
        };
        let action_history = c.action_history as usize;
        let row_width = features.iter().map(|f| f.width(action_history)).sum();
        if row_width == 0 {
            return bad(
                "features",
                &format!("{:?}", c.features),
                "the features give an empty row (action_history = 0?)",
            );
        }
        Ok(AgentSpec {
            mvfst: features.iter().any(|f| matches!(f, Feature::MvfstState | Feature::MvfstHistory))
                || reward == Reward::Mvfst,
            action_history,
            row_width,
            cwnd_packets: (c.min_cwnd_packets, c.max_cwnd_packets),
            reward_loss: c.reward_loss,
            ack_bytes: crate::config::PacketConfig::default().ack,
            blocking,
            delay,
            per_event: features.iter().any(|f| f.per_event()),
            send_ewma: features.iter().any(|f| matches!(f, Feature::SendGapEwma | Feature::SendGapOverMin)),
            rtt_ewma: features.contains(&Feature::RttEwmaOverMin),
            newreno,
            slow_start: c.slow_start,
            interval_rtts: c.interval_rtts,
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
            reward_offset: c.reward_offset,
            initial_rate: c.initial_rate,
            timeout_rate: c.timeout_rate,
            hold_ticks: c.hold_ticks,
            probe_timeout: c.probe_timeout.0,
            idle_probe: c.idle_probe,
            rtt_last,
            min_window: c.min_window.0,
            initial_window: c.initial_window.0,
            ewma_gain: c.ewma_gain,
        })
    }

    /// Length of one observation.
    pub fn obs_dim(&self) -> usize {
        self.row_width * self.history
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
            ActionMap::Rate | ActionMap::Window { .. } => f32::NAN,
            // The rule closest to "no change"; a table without a fixed step holds with its first rule.
            ActionMap::PerAck(t) => t
                .iter()
                .enumerate()
                .filter_map(|(i, r)| match r {
                    PerAck::Bytes(b) => Some((i, b.abs())),
                    PerAck::Reno => None,
                })
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map_or(0, |(i, _)| i) as f32,
            _ => 0.0,
        }
    }
}

/// An action must be a number: NaN (a diverged policy) or an infinity would
/// otherwise be applied as "keep" or clamped without a word.
pub fn check_finite(a: f32) -> Result<(), String> {
    if a.is_nan() {
        Err("is not a number (NaN); give a finite action".into())
    } else if a.is_infinite() {
        Err(format!("is infinite ({a}); give a finite action"))
    } else {
        Ok(())
    }
}

/// An index action must be an integer in `0..len` (`table` names the list it indexes).
pub fn check_index(a: f32, len: usize, table: &str) -> Result<(), String> {
    check_finite(a)?;
    if a.fract() != 0.0 || a < 0.0 || a >= len as f32 {
        return Err(format!("is not an index into {table}: give an integer from 0 to {}", len.saturating_sub(1)));
    }
    Ok(())
}
