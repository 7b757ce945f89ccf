//! The ECN profile in force over time: what an operator looks at next to the
//! queue-length series to see what a tuner (ACC's switch-queue agents, or a
//! controller calling `set_ecn`) did to the fabric's marking.
//!
//! A change log rather than a sampled series: a profile is a step function
//! that changes at most once per agent interval, and most queues of a fabric
//! keep theirs for long stretches; logging changes costs nothing between them
//! and gives the exact instant of each, where a sample would blur it by up to
//! one sample interval. `start_ecn_log` writes each switch data queue's
//! starting profile at time 0; every later change (through `set_ecn`,
//! `set_ecn_many` or a queue agent's action) adds one row. A profile set to
//! what the queue already has adds none.
//!
//! `metrics.ecn_series`: `true`, `false`, or `"auto"` (on when the scenario
//! has switch-queue agents). Off, `set_ecn` pays one test of a boolean.
//! The rows become the result table `ecn` (`report.rs`).

use super::Simulation;
use crate::net::port::Red;
use crate::units::Time;

/// Changes of the ECN profile of switch data queues, in the order they happened.
#[derive(Clone, Debug, Default)]
pub struct EcnLog {
    /// Changes are recorded (`metrics.ecn_series`).
    pub on: bool,
    /// Time of each change.
    pub times: Vec<Time>,
    /// Switch port of each change (global id).
    pub ports: Vec<u32>,
    /// Data queue (1..) of each change.
    pub queues: Vec<u32>,
    /// The profile from then on (`None`: no marking).
    pub profiles: Vec<Option<Red>>,
    /// Its index in `agent.ecn_profiles` (`None`: not one of them).
    pub templates: Vec<Option<u32>>,
}

impl EcnLog {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    fn push(&mut self, time: Time, port: u32, queue: usize, red: Option<Red>, template: Option<usize>) {
        self.times.push(time);
        self.ports.push(port);
        self.queues.push(queue as u32);
        self.profiles.push(red);
        self.templates.push(template.map(|t| t as u32));
    }
}

impl Simulation {
    /// Turns the log on as `metrics.ecn_series` says (after the queue agents
    /// are built, for `"auto"`) and records every switch data queue's
    /// starting profile.
    pub(super) fn start_ecn_log(&mut self) {
        let on = match &self.scenario.metrics.ecn_series {
            serde_json::Value::Bool(b) => *b,
            _ => self.bridge.as_ref().is_some_and(|b| b.queues.len() > 0),
        };
        if !on {
            return;
        }
        let now = self.now;
        let mut log = EcnLog { on, ..EcnLog::default() };
        for (p, pt) in self.ports.iter().enumerate() {
            if pt.is_host {
                continue;
            }
            for (q, queue) in pt.queues.iter().enumerate().skip(1) {
                log.push(now, p as u32, q, queue.red, self.ecn_template(queue.red));
            }
        }
        self.series.ecn = log;
    }

    /// Records that data queue `queue` of switch port `port` now marks with
    /// `red` (it had `before`); `template` is the profile index when the
    /// caller knows it (a queue agent's action), else it is looked up.
    #[inline]
    pub(super) fn log_ecn(&mut self, port: u32, queue: usize, before: Option<Red>, template: Option<usize>) {
        if !self.series.ecn.on {
            return;
        }
        self.log_ecn_change(port, queue, before, template);
    }

    #[cold]
    #[inline(never)]
    fn log_ecn_change(&mut self, port: u32, queue: usize, before: Option<Red>, template: Option<usize>) {
        let red = self.ports[port as usize].queues[queue].red;
        if red == before {
            return;
        }
        let template = template.or_else(|| self.ecn_template(red));
        let now = self.now;
        self.series.ecn.push(now, port, queue, red, template);
    }

    /// The index of `red` among the queue agents' profiles (the first equal one).
    fn ecn_template(&self, red: Option<Red>) -> Option<usize> {
        let red = red?;
        self.bridge.as_ref()?.queues.profile_index(red)
    }

    /// The ECN profile log (empty unless `metrics.ecn_series` turned it on).
    pub fn ecn_log(&self) -> &EcnLog {
        &self.series.ecn
    }
}
