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
//! The observation is deliberately small, computed from today's port state,
//! so that ACC's full feature set plugs in later by extending [`QUEUE_FEATURES`]
//! and [`QueueAgents::sample`] alone. One row, with `B` the bytes the port
//! sends in one interval at line rate:
//!
//! | feature | value |
//! |---|---|
//! | `queue` | the queue's length now / B |
//! | `tx_rate` | bytes the port sent over the interval / B |
//! | `marked_rate` | packets the port ECN-marked over the interval x MTU / B |
//! | `ecn_profile` | index of the profile in force / (profiles - 1) (0 with one profile) |
//!
//! The transmitted bytes and ECN marks are the port's counters: exact for a
//! port with one data queue, shared by the queues of a port with several
//! (until per-queue interval counters take their place). Reward:
//! `tx_rate - reward_beta x queue`, times `reward_scale`.
//!
//! Requests are answered only through the stepping API: a queue agent never
//! has a native policy, and with nobody stepping its profile is left alone.

use super::Simulation;
use crate::config::{AgentConfig, CfgResult, ConfigError};
use crate::engine::Event;
use crate::net::port::Red;
use crate::units::Time;

/// Names of one queue-agent feature row, in order.
pub const QUEUE_FEATURES: &[&str] = &["queue", "tx_rate", "marked_rate", "ecn_profile"];

/// Per-agent state of one switch queue.
#[derive(Clone, Debug)]
struct QueueAgent {
    port: u32,
    queue: usize,
    /// Port counters at the start of the interval.
    tx_at: u64,
    marks_at: u64,
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
    /// Bytes wire MTU (to turn marked packets into bytes).
    mtu: u64,
    reward_beta: f64,
    reward_scale: f64,
}

impl QueueAgents {
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
}

impl Simulation {
    /// Resolves `agent.queues` into agents (after the ports exist) and starts
    /// their sampling; a scenario without queue agents is left untouched.
    pub(super) fn build_queue_agents(&mut self) -> CfgResult<()> {
        let Some(cfg) = self.scenario.agent.clone() else { return Ok(()) };
        if cfg.queues.is_empty() {
            return Ok(());
        }
        let qa = self.check_queue_agents(&cfg)?;
        let first = qa.interval;
        self.bridge.as_mut().expect("an [agent] table builds a bridge").queues = qa;
        self.events.push(first, Event::QueueTick);
        Ok(())
    }

    fn check_queue_agents(&self, c: &AgentConfig) -> CfgResult<QueueAgents> {
        let bad = |f: &str, v: &dyn std::fmt::Display, m: &str| Err(ConfigError::new(format!("agent.{f}"), v, m));
        if c.policy != "external" {
            return bad("queues", &format!("{:?}", c.queues), "switch-queue agents need policy = \"external\"");
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
            let pt = &self.ports[port as usize];
            let current = pt.queues.get(1).and_then(|q| q.red);
            // The profile in force at the start: the template equal to the switch's
            // configured marking, else the first (an observation, not an action).
            let profile = profiles.iter().position(|p| Some(*p) == current).unwrap_or(0);
            for queue in 1..pt.queues.len() {
                agents.push(QueueAgent {
                    port,
                    queue,
                    tx_at: pt.tx_bytes,
                    marks_at: pt.stats.ecn_marks,
                    profile,
                    history: vec![0.0; width],
                    filled: false,
                    reward: 0.0,
                    outstanding: false,
                });
            }
        }
        let pk = &self.scenario.packets;
        Ok(QueueAgents {
            agents,
            profiles,
            interval: c.queue_interval.0,
            mtu: (pk.payload + pk.header) as u64,
            reward_beta: c.reward_beta,
            reward_scale: c.reward_scale,
        })
    }

    /// The `QueueTick` event: every queue agent closes its interval; with the
    /// stepping API in use, each one whose last action has taken effect asks
    /// for a new one.
    #[cold]
    #[inline(never)]
    pub(super) fn on_queue_tick(&mut self) {
        let now = self.now;
        let Some(bridge) = self.bridge.as_mut() else { return };
        let qa = &mut bridge.queues;
        let nf = QUEUE_FEATURES.len();
        let denom = |rate_bps: u64| (rate_bps as f64 / 8.0 * qa.interval as f64 / crate::units::SEC as f64).max(1.0);
        let last = qa.profiles.len().saturating_sub(1).max(1) as f64;
        for (id, a) in qa.agents.iter_mut().enumerate() {
            let pt = &self.ports[a.port as usize];
            let b = denom(pt.rate_bps);
            let row = [
                pt.queues[a.queue].bytes as f64 / b,
                (pt.tx_bytes - a.tx_at) as f64 / b,
                ((pt.stats.ecn_marks - a.marks_at) * qa.mtu) as f64 / b,
                a.profile as f64 / last,
            ];
            a.tx_at = pt.tx_bytes;
            a.marks_at = pt.stats.ecn_marks;
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
            a.reward = ((row[1] as f64 - qa.reward_beta * row[0] as f64) * qa.reward_scale) as f32;
            if bridge.stepping && !a.outstanding {
                a.outstanding = true;
                bridge.queue_batch.push(id as u32, now, &a.history, a.reward, false, false);
            }
        }
        // No sample at the end itself: the run ends there, and the truncated entry closes it.
        if now + qa.interval < self.end {
            self.events.push(now + qa.interval, Event::QueueTick);
        }
    }

    /// Routes the action answering queue agent `agent`'s request made at `at`.
    pub(super) fn queue_action_due(&mut self, agent: u32, at: Time, action: f32) {
        let delay = self.bridge.as_ref().map_or(0, |b| b.spec().policy_delay);
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
        if !action.is_finite() {
            return;
        }
        let i = (action.round().max(0.0) as usize).min(n - 1);
        a.profile = i;
        let (port, queue, red) = (a.port, a.queue, qa.profiles[i]);
        self.set_ecn(port, queue, Some(red)).expect("queue agents target switch data queues");
    }

    /// Reports the end of the run to every queue agent (truncated entries).
    pub(super) fn queue_agents_truncated(&mut self) {
        let now = self.now;
        let Some(bridge) = self.bridge.as_mut() else { return };
        for (id, a) in bridge.queues.agents.iter().enumerate() {
            bridge.queue_batch.push(id as u32, now, &a.history, a.reward, false, true);
        }
    }
}
