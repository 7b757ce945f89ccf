//! Switch-queue agents: the second agent kind of the bridge (ACC-style ECN tuning).
//!
//! An agent is one data queue of a switch egress port named in `agent.queues`.
//! Every `agent.queue_interval` one `QueueTick` event samples all of them at
//! once: each closes its interval into a feature row, keeps the last
//! `queue_history` rows as its observation, computes the reward of its
//! previous action and joins the queue-agent batch group (its own observation
//! width, next to the flow group). Its action, an index into
//! `agent.ecn_profiles`, sets the queue's RED profile `policy_delay` after the
//! request (carried by a `QueueAction` event) through `Simulation::set_ecn`.
//!
//! The observation follows ACC (Yan et al., SIGCOMM 2021): what the queue
//! itself sent, marked, dropped and held over the interval, from its own
//! interval counters ([`QueueCounters`](crate::net::port::QueueCounters),
//! read as the agent's reader, so the intervals of `queue_stats` callers are
//! left alone). One row, with `B` the bytes the port sends in one interval
//! at its current line rate, so every byte count is a fraction of what the
//! port could have sent:
//!
//! | feature | value |
//! |---|---|
//! | `queue` | the queue's length now / B |
//! | `mean_queue` | the queue's time-weighted mean length over the interval / B |
//! | `max_queue` | the queue's largest length over the interval / B |
//! | `tx_rate` | bytes the queue sent over the interval / B |
//! | `marked_rate` | bytes the queue sent carrying a CE mark (set here or upstream) / B |
//! | `drop_rate` | bytes the queue dropped (refused or evicted) over the interval / B |
//! | `ecn_profile` | index of the profile in force / (profiles - 1) (0 with one profile) |
//!
//! Reward ([`QueueReward`], `agent.queue_reward`), times `reward_scale`:
//! `linear` (the default) is `tx_rate - reward_beta x queue`; `quadratic` is
//! `tx_rate - queue_peak_weight x (max_queue / q_ref)^2 - queue_mean_weight x
//! (mean_queue / q_ref)^2` with `q_ref` the bytes the port sends in
//! `agent.queue_ref`: a penalty that grows with the square of the interval's
//! peak and mean queue, so that the bursts behind tail FCT cost more than a
//! steady shallow queue. With `agent.queue_reward_scope = "fabric"` every
//! agent gets the mean of all agents' rewards of the tick instead of its own
//! (a team reward); with `"mixed"` it gets `(1 - w) x` its own plus `w x`
//! that mean, `w` = `agent.queue_reward_fabric_weight`. A new feature is one
//! more name in [`QUEUE_FEATURES`] and one more value in the row of
//! `on_queue_tick`.
//!
//! Requests are answered through the stepping API, or, with
//! `agent.queue_policy` naming a native policy file, by the simulator itself:
//! the network (a `ccgym-mlp` Q-network, one output per profile) scores the
//! agent's observation at its tick and the best profile (ties to the lowest
//! index, as `numpy.argmax`) takes effect through the same `QueueAction`
//! path, `policy_delay` later. Natively answered agents never join the
//! queue batch. With neither, a queue's profile is left alone.

use super::Simulation;
use crate::config::{AgentConfig, CfgResult, ConfigError};
use crate::engine::Event;
use crate::net::port::{CounterReader, Red};
use crate::policy::{Mlp, Precision};
use crate::units::Time;
use std::path::Path;

/// Names of one queue-agent feature row, in order.
pub const QUEUE_FEATURES: &[&str] =
    &["queue", "mean_queue", "max_queue", "tx_rate", "marked_rate", "drop_rate", "ecn_profile"];

/// Where `queue` and `tx_rate` sit in a row (the reward reads them).
const QUEUE: usize = 0;
const MEAN_QUEUE: usize = 1;
const MAX_QUEUE: usize = 2;
const TX_RATE: usize = 3;

/// The reward of a switch-queue agent's interval (`agent.queue_reward`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) enum QueueReward {
    /// `tx_rate - reward_beta x queue` (the queue at the sample).
    #[default]
    Linear,
    /// `tx_rate - peak_weight x (max_queue / q_ref)^2 - mean_weight x
    /// (mean_queue / q_ref)^2`.
    Quadratic {
        /// `q_ref` over the bytes of one interval at line rate: the queue
        /// features are fractions of the latter, so this is `queue_ref /
        /// queue_interval`, the same at every port rate.
        q_ref: f64,
        peak_weight: f64,
        mean_weight: f64,
    },
}

impl QueueReward {
    /// The reward of one feature row (before `reward_scale`).
    fn of(self, row: &[f32], beta: f64) -> f64 {
        match self {
            QueueReward::Linear => row[TX_RATE] as f64 - beta * row[QUEUE] as f64,
            QueueReward::Quadratic { q_ref, peak_weight, mean_weight } => {
                let peak = row[MAX_QUEUE] as f64 / q_ref;
                let mean = row[MEAN_QUEUE] as f64 / q_ref;
                row[TX_RATE] as f64 - peak_weight * peak * peak - mean_weight * mean * mean
            }
        }
    }
}

/// Per-agent state of one switch queue.
#[derive(Clone, Debug)]
struct QueueAgent {
    port: u32,
    queue: usize,
    /// Profile in force (index into the templates).
    profile: usize,
    /// Observation: `history` rows, oldest first.
    history: Vec<f32>,
    filled: bool,
    reward: f32,
    /// A request is out and its action has not taken effect.
    outstanding: bool,
}

/// All switch-queue agents of a simulation.
#[derive(Clone, Debug, Default)]
pub(super) struct QueueAgents {
    agents: Vec<QueueAgent>,
    profiles: Vec<Red>,
    interval: Time,
    reward_beta: f64,
    reward_scale: f64,
    reward: QueueReward,
    /// `agent.ecn_reference_rate` (bit/s): profiles are scaled to each port's rate.
    reference_bps: Option<u64>,
    /// The native policy every agent answers itself with (`agent.queue_policy`).
    native: Option<NativeQueuePolicy>,
    /// The fabric-wide mean reward's share in each agent's: `None` for the
    /// `"port"` scope, 1 for `"fabric"`, `agent.queue_reward_fabric_weight` for
    /// `"mixed"`.
    fabric_weight: Option<f64>,
}

/// A loaded `agent.queue_policy`, with the buffers one evaluation uses (kept
/// here so that a decision allocates nothing).
#[derive(Clone, Debug)]
struct NativeQueuePolicy {
    mlp: Mlp,
    scratch: Vec<f32>,
    /// One score per ECN profile.
    scores: Vec<f32>,
    /// The file as given in the scenario (for messages).
    name: String,
    /// A recurrent network's state, per agent (`state_len` floats each, zero
    /// at the start of the run); empty for a network without memory.
    state: Vec<f32>,
}

impl NativeQueuePolicy {
    /// The profile index the network chooses for agent `agent`'s observation
    /// `obs` (and its last `reward`, for a recurrent network's `concat` step):
    /// the argmax of its scores, ties (and NaN scores, which never win) to the
    /// lowest index.
    fn choose(&mut self, agent: usize, obs: &[f32], reward: f32) -> usize {
        let memory = self.mlp.state_len();
        if memory > 0 || self.mlp.extra_inputs() > 0 {
            let at = agent * memory;
            if self.state.len() < at + memory {
                self.state.resize(at + memory, 0.0);
            }
            let extra = [reward; crate::policy::MAX_EXTRA];
            let state = &mut self.state[at..at + memory];
            self.mlp.forward_step(obs, &extra, state, &mut self.scores, &mut self.scratch);
        } else {
            self.mlp.forward(obs, &mut self.scores, &mut self.scratch);
        }
        crate::policy::argmax(&self.scores)
    }
}

impl QueueAgents {
    /// Profile `i` at a port of `rate_bps` (scaled when a reference rate is given).
    fn profile_at(&self, i: usize, rate_bps: u64) -> Red {
        let p = self.profiles[i];
        match self.reference_bps {
            Some(reference) => Red {
                kmin: super::build::scale_threshold(p.kmin, rate_bps, reference),
                kmax: super::build::scale_threshold(p.kmax, rate_bps, reference),
                pmax: p.pmax,
            },
            None => p,
        }
    }

    /// Observation width of one agent.
    pub(super) fn dim(&self) -> usize {
        self.agents.first().map_or(0, |a| a.history.len())
    }

    /// Number of agents.
    pub(super) fn len(&self) -> usize {
        self.agents.len()
    }

    /// The port and data queue of agent `i`.
    pub(super) fn target(&self, i: u32) -> (u32, usize) {
        let a = &self.agents[i as usize];
        (a.port, a.queue)
    }

    /// Checks an action given through the bridge: an index into `agent.ecn_profiles`.
    pub(super) fn check_action(&self, a: f32) -> Result<(), String> {
        crate::cc::agent::check_index(a, self.profiles.len(), "agent.ecn_profiles")
    }

    /// Queue agents before `agent.queues` is resolved: only the native policy
    /// of `agent.queue_policy`, loaded (relative to `base_dir`) and checked
    /// on its own; its widths are checked against the agents when they are
    /// built.
    pub(super) fn with_policy(cfg: &AgentConfig, base_dir: &Path) -> CfgResult<QueueAgents> {
        if cfg.queue_policy.is_empty() {
            return Ok(QueueAgents::default());
        }
        let shown = format!("\"{}\"", cfg.queue_policy);
        let precision = match cfg.precision.as_str() {
            "float32" => Precision::Float32,
            "int8" => Precision::Int8,
            other => {
                return Err(ConfigError::new("agent.precision", format!("\"{other}\""), "use \"float32\" or \"int8\""))
            }
        };
        let text = std::fs::read_to_string(base_dir.join(&cfg.queue_policy))
            .map_err(|e| ConfigError::new("agent.queue_policy", &shown, format!("cannot read the policy file: {e}")))?;
        let mlp = Mlp::from_json(&text, precision).map_err(|e| ConfigError::new("agent.queue_policy", &shown, e))?;
        let native = NativeQueuePolicy {
            scratch: vec![0.0; mlp.scratch_len()],
            scores: vec![0.0; mlp.outputs()],
            mlp,
            name: cfg.queue_policy.clone(),
            state: vec![],
        };
        Ok(QueueAgents { native: Some(native), ..QueueAgents::default() })
    }

    /// The index of the first profile equal to `red`.
    pub(super) fn profile_index(&self, red: Red) -> Option<usize> {
        self.profiles.iter().position(|p| *p == red)
    }

    /// Whether the agents answer themselves (`agent.queue_policy`).
    pub(super) fn native(&self) -> bool {
        self.native.is_some()
    }
}

impl Simulation {
    /// Resolves `agent.queues` into agents (after the ports exist) and starts
    /// their sampling; a scenario without queue agents is left untouched.
    pub(super) fn build_queue_agents(&mut self) -> CfgResult<()> {
        let Some(cfg) = self.scenario.agent.clone() else { return Ok(()) };
        let native = self.bridge.as_mut().and_then(|b| b.queues.native.take());
        if cfg.queues.is_empty() {
            if native.is_some() {
                return Err(ConfigError::new(
                    "agent.queue_policy",
                    format!("\"{}\"", cfg.queue_policy),
                    "there are no switch-queue agents to run it (agent.queues is empty)",
                ));
            }
            return Ok(());
        }
        let mut qa = self.check_queue_agents(&cfg)?;
        if let Some(n) = &native {
            let width = QUEUE_FEATURES.len() * cfg.queue_history as usize;
            let shown = format!("\"{}\"", n.name);
            if n.mlp.inputs() != width {
                return Err(ConfigError::new(
                    "agent.queue_policy",
                    shown,
                    format!(
                        "the policy takes {} inputs but a queue agent's observation has {width} ({} features x agent.queue_history = {})",
                        n.mlp.inputs(),
                        QUEUE_FEATURES.len(),
                        cfg.queue_history
                    ),
                ));
            }
            if n.mlp.outputs() != qa.profiles.len() {
                return Err(ConfigError::new(
                    "agent.queue_policy",
                    shown,
                    format!(
                        "the policy has {} outputs but agent.ecn_profiles has {} profiles (one Q-value per profile)",
                        n.mlp.outputs(),
                        qa.profiles.len()
                    ),
                ));
            }
        }
        qa.native = native;
        let first = qa.interval;
        self.bridge.as_mut().expect("an [agent] table builds a bridge").queues = qa;
        self.events.push(first, Event::QueueTick);
        Ok(())
    }

    fn check_queue_agents(&self, c: &AgentConfig) -> CfgResult<QueueAgents> {
        let bad = |f: &str, v: &dyn std::fmt::Display, m: &str| Err(ConfigError::new(format!("agent.{f}"), v, m));
        if c.policy != "external" && c.queue_policy.is_empty() {
            return bad(
                "queues",
                &format!("{:?}", c.queues),
                "switch-queue agents stepped from Python need policy = \"external\" (or a native agent.queue_policy)",
            );
        }
        if c.queue_interval.0 == 0 {
            return bad("queue_interval", &"0", "must be positive");
        }
        if c.queue_history == 0 || c.queue_history > 64 {
            return bad("queue_history", &c.queue_history, "must be from 1 to 64");
        }
        if c.ecn_profiles.is_empty() {
            return bad("ecn_profiles", &"[]", "switch-queue agents need at least one ECN profile to choose from");
        }
        let reward = match c.queue_reward.as_str() {
            "linear" => QueueReward::Linear,
            "quadratic" => {
                if c.queue_ref.0 == 0 {
                    return bad("queue_ref", &"0", "the quadratic queue reward needs a positive reference delay");
                }
                for (f, w) in [("queue_peak_weight", c.queue_peak_weight), ("queue_mean_weight", c.queue_mean_weight)] {
                    if !(w.is_finite() && w >= 0.0) {
                        return bad(f, &w, "must be a finite number >= 0");
                    }
                }
                QueueReward::Quadratic {
                    q_ref: c.queue_ref.0 as f64 / c.queue_interval.0 as f64,
                    peak_weight: c.queue_peak_weight,
                    mean_weight: c.queue_mean_weight,
                }
            }
            other => return bad("queue_reward", &format!("\"{other}\""), "use \"linear\" or \"quadratic\""),
        };
        let fabric_weight = match c.queue_reward_scope.as_str() {
            "port" => None,
            "fabric" => Some(1.0),
            "mixed" => {
                let w = c.queue_reward_fabric_weight;
                if !(0.0..=1.0).contains(&w) {
                    return bad("queue_reward_fabric_weight", &w, "must be a number in [0, 1]");
                }
                Some(w)
            }
            other => {
                return bad("queue_reward_scope", &format!("\"{other}\""), "use \"port\", \"fabric\" or \"mixed\"");
            }
        };
        let mut profiles = vec![];
        for (i, p) in c.ecn_profiles.iter().enumerate() {
            if p.kmin.0 > p.kmax.0 || !(p.pmax > 0.0 && p.pmax <= 1.0) {
                return Err(ConfigError::new(
                    format!("agent.ecn_profiles[{i}]"),
                    format!("{{kmin = {}, kmax = {}, pmax = {}}}", p.kmin.0, p.kmax.0, p.pmax),
                    "needs kmin <= kmax and pmax in (0, 1]",
                ));
            }
            profiles.push(Red { kmin: p.kmin.0, kmax: p.kmax.0, pmax: p.pmax });
        }
        // Cold, once: names of every switch port.
        let names: Vec<(String, u32)> = (0..self.ports.len() as u32)
            .filter(|&p| !self.ports[p as usize].is_host)
            .map(|p| (self.port_name(p), p))
            .collect();
        let width = QUEUE_FEATURES.len() * c.queue_history as usize;
        let mut agents = vec![];
        for (i, name) in c.queues.iter().enumerate() {
            let Some(&(_, port)) = names.iter().find(|(n, _)| n == name) else {
                return Err(ConfigError::new(
                    format!("agent.queues[{i}]"),
                    format!("\"{name}\""),
                    "no switch port of that name (use \"switch->peer\", as in the port table)",
                ));
            };
            // One agent per queue: each queue has one agent interval.
            if c.queues[..i].contains(name) {
                return Err(ConfigError::new(format!("agent.queues[{i}]"), format!("\"{name}\""), "listed twice"));
            }
            let pt = &self.ports[port as usize];
            let current = pt.queues.get(1).and_then(|q| q.red);
            // The profile in force at the start: the template equal to the switch's
            // configured marking, else the first (an observation, not an action).
            let at_rate = |p: &Red| match c.ecn_reference_rate {
                Some(r) => Red {
                    kmin: super::build::scale_threshold(p.kmin, pt.rate_bps, r.0),
                    kmax: super::build::scale_threshold(p.kmax, pt.rate_bps, r.0),
                    pmax: p.pmax,
                },
                None => *p,
            };
            let profile = profiles.iter().position(|p| Some(at_rate(p)) == current).unwrap_or(0);
            for queue in 1..pt.queues.len() {
                agents.push(QueueAgent {
                    port,
                    queue,
                    profile,
                    history: vec![0.0; width],
                    filled: false,
                    reward: 0.0,
                    outstanding: false,
                });
            }
        }
        Ok(QueueAgents {
            agents,
            profiles,
            interval: c.queue_interval.0,
            reward_beta: c.reward_beta,
            reward_scale: c.reward_scale,
            reward,
            reference_bps: c.ecn_reference_rate.map(|r| r.0),
            native: None,
            fabric_weight,
        })
    }

    /// The `QueueTick` event: every queue agent closes its interval; with the
    /// stepping API in use, each one whose last action has taken effect asks
    /// for a new one. With `queue_reward_scope = "fabric"` or `"mixed"` every agent closes
    /// its interval first and all of them get the mean reward before any asks.
    #[cold]
    #[inline(never)]
    pub(super) fn on_queue_tick(&mut self) {
        let Some(n) = self.bridge.as_ref().map(|b| b.queues.len()) else { return };
        if let Some(w) = self.bridge.as_ref().expect("checked above").queues.fabric_weight {
            for id in 0..n {
                self.close_queue_interval(id);
            }
            let qa = &mut self.bridge.as_mut().expect("checked above").queues;
            if n > 0 {
                let mean = qa.agents.iter().map(|a| a.reward as f64).sum::<f64>() / n as f64;
                for a in &mut qa.agents {
                    // The fabric scope takes the mean as it is (no rounding through the mix).
                    a.reward = if w == 1.0 { mean as f32 } else { ((1.0 - w) * a.reward as f64 + w * mean) as f32 };
                }
            }
            for id in 0..n {
                self.request_queue_action(id);
            }
        } else {
            // Port scope: one agent after the other, as before the fabric scope existed
            // (an action landing at once may move the next agents' counters).
            for id in 0..n {
                self.close_queue_interval(id);
                self.request_queue_action(id);
            }
        }
        // No sample at the end itself: the run ends there, and the truncated entry closes it.
        let interval = self.bridge.as_ref().expect("checked above").queues.interval;
        if self.now + interval < self.end {
            self.events.push(self.now + interval, Event::QueueTick);
        }
    }

    /// Queue agent `id` closes its interval: the feature row, the observation
    /// and its own (port) reward.
    fn close_queue_interval(&mut self, id: usize) {
        let nf = QUEUE_FEATURES.len();
        let (port, queue) = self.bridge.as_ref().expect("queue agents need the bridge").queues.target(id as u32);
        let st = self.queue_interval(port, queue, CounterReader::Agent, true);
        let rate_bps = self.ports[port as usize].rate_bps;
        let bridge = self.bridge.as_mut().expect("queue agents need the bridge");
        let qa = &mut bridge.queues;
        let b = (rate_bps as f64 / 8.0 * qa.interval as f64 / crate::units::SEC as f64).max(1.0);
        let last = qa.profiles.len().saturating_sub(1).max(1) as f64;
        let a = &mut qa.agents[id];
        let row = [
            st.bytes as f64 / b,
            st.mean_bytes / b,
            st.max_bytes as f64 / b,
            st.tx_bytes as f64 / b,
            st.ecn_bytes as f64 / b,
            st.drop_bytes as f64 / b,
            a.profile as f64 / last,
        ];
        let row = row.map(|v| v as f32);
        if a.filled {
            a.history.copy_within(nf.., 0);
            let n = a.history.len();
            a.history[n - nf..].copy_from_slice(&row);
        } else {
            for chunk in a.history.chunks_mut(nf) {
                chunk.copy_from_slice(&row);
            }
            a.filled = true;
        }
        a.reward = (qa.reward.of(&row, qa.reward_beta) * qa.reward_scale) as f32;
    }

    /// Queue agent `id`, if its last action has taken effect, asks for a new
    /// one: from its native policy, or through the stepping API.
    fn request_queue_action(&mut self, id: usize) {
        let now = self.now;
        let bridge = self.bridge.as_mut().expect("queue agents need the bridge");
        let qa = &mut bridge.queues;
        let a = &mut qa.agents[id];
        let mut native_choice = None;
        if let Some(policy) = qa.native.as_mut() {
            if !a.outstanding {
                a.outstanding = true;
                let started = std::time::Instant::now();
                let choice = policy.choose(id, &a.history, a.reward);
                let (port, queue) = (a.port, a.queue);
                let delay = bridge.native_answer_delay(started);
                if bridge.spec().blocking && delay > 0 {
                    // Blocking timing: the queue sends nothing until its action lands.
                    self.ports[port as usize].held |= 1 << queue;
                }
                native_choice = Some((choice, delay));
            }
        } else if bridge.stepping && !a.outstanding {
            a.outstanding = true;
            bridge.queue_batch.push(id as u32, now, &a.history, a.reward, false, false);
            let (port, queue) = (a.port, a.queue);
            bridge.queue_request(now);
            if bridge.spec().blocking {
                // Blocking timing: the queue sends nothing until its action lands.
                self.ports[port as usize].held |= 1 << queue;
            }
        }
        if let Some((choice, delay)) = native_choice {
            self.queue_action_due(id as u32, now, delay, choice as f32);
        }
    }

    /// Routes the action answering queue agent `agent`'s request made at `at`.
    pub(super) fn queue_action_due(&mut self, agent: u32, at: Time, delay: Time, action: f32) {
        if delay == 0 {
            self.on_queue_action(agent, action);
        } else {
            self.events.push(at + delay, Event::QueueAction { agent, action });
        }
    }

    /// The `QueueAction` event: the selected ECN profile takes effect on the
    /// agent's queue (a NaN action keeps the current one).
    #[cold]
    #[inline(never)]
    pub(super) fn on_queue_action(&mut self, agent: u32, action: f32) {
        let Some(bridge) = self.bridge.as_mut() else { return };
        let qa = &mut bridge.queues;
        let n = qa.profiles.len();
        let a = &mut qa.agents[agent as usize];
        a.outstanding = false;
        let (port, queue) = (a.port, a.queue);
        if self.ports[port as usize].held & (1 << queue) != 0 {
            // A blocked queue resumes.
            self.ports[port as usize].held &= !(1 << queue);
            self.try_send(port);
        }
        let Some(bridge) = self.bridge.as_mut() else { return };
        let qa = &mut bridge.queues;
        let a = &mut qa.agents[agent as usize];
        if !action.is_finite() {
            return;
        }
        let i = (action.round().max(0.0) as usize).min(n - 1);
        a.profile = i;
        let (port, queue) = (a.port, a.queue);
        let red = qa.profile_at(i, self.ports[port as usize].rate_bps);
        self.set_ecn_template(port, queue, Some(red), Some(i)).expect("queue agents target switch data queues");
    }

    /// Reports the end of the run to every queue agent (truncated entries).
    pub(super) fn queue_agents_truncated(&mut self) {
        let now = self.now;
        let Some(bridge) = self.bridge.as_mut() else { return };
        if bridge.queues.native() {
            return;
        }
        for (id, a) in bridge.queues.agents.iter().enumerate() {
            bridge.queue_batch.push(id as u32, now, &a.history, a.reward, false, true);
        }
        for _ in 0..bridge.queues.agents.len() {
            bridge.queue_closed();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::NativeQueuePolicy;
    use crate::policy::argmax;
    use crate::policy::{Mlp, Precision};

    /// A one-layer network whose scores are its inputs (3 in, 3 out).
    fn identity() -> NativeQueuePolicy {
        let text = r#"{"format": "ccgym-mlp", "version": 1, "output": "none",
            "layers": [{"weight": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "bias": null}]}"#;
        let mlp = Mlp::from_json(text, Precision::Float32).expect("valid");
        NativeQueuePolicy {
            scratch: vec![0.0; mlp.scratch_len()],
            scores: vec![0.0; 3],
            mlp,
            name: "id".into(),
            state: vec![],
        }
    }

    #[test]
    fn the_best_score_wins_and_ties_go_to_the_lowest_index() {
        let mut p = identity();
        assert_eq!(p.choose(0, &[0.1, 0.7, 0.2], 0.0), 1);
        assert_eq!(p.choose(0, &[0.5, 0.5, 0.5], 0.0), 0);
        assert_eq!(p.choose(0, &[0.1, 0.9, 0.9], 0.0), 1);
        assert_eq!(p.choose(0, &[-1.0, -2.0, -0.5], 0.0), 2);
        // A NaN score never wins over a number.
        assert_eq!(argmax(&[f32::NAN, 0.3, 0.3]), 1);
        assert_eq!(argmax(&[0.3, f32::NAN, 0.4]), 2);
    }
}
