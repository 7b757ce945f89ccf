//! Run-time control of switches, for switch-side agents and slow controllers:
//! ECN marking and scheduler weights changed while the simulation runs; and
//! of links: a link direction's rate ([`Simulation::set_link_rate`]).
//!
//! Both take effect at the next packet: ECN decisions read the queue's ramp
//! when they are made, and the scheduler reads the weights when it visits a
//! queue. Errors (no such port or queue, a host port, a zero weight) come
//! back as messages, never as panics.

use super::Simulation;
use crate::net::link_model::{LinkTiming, RateSchedule};
use crate::net::port::Red;

impl Simulation {
    /// Sets ECN marking of data queue `queue` on switch port `port` while running.
    pub fn set_ecn(&mut self, port: u32, queue: usize, red: Option<Red>) -> Result<(), String> {
        let pt = self.ports.get_mut(port as usize).ok_or_else(|| format!("no port {port}"))?;
        if pt.is_host || queue == 0 || queue >= pt.queues.len() {
            return Err(format!("port {port} has no data queue {queue}"));
        }
        pt.queues[queue].red = red;
        Ok(())
    }

    /// Sets the scheduling weights of the data queues of switch port `port` while running.
    pub fn set_weights(&mut self, port: u32, weights: &[u32]) -> Result<(), String> {
        let pt = self.ports.get_mut(port as usize).ok_or_else(|| format!("no port {port}"))?;
        if pt.is_host || weights.len() + 1 != pt.queues.len() || weights.contains(&0) {
            return Err(format!("port {port} needs {} positive weights", pt.queues.len().saturating_sub(1)));
        }
        for (q, &w) in weights.iter().enumerate() {
            pt.queues[q + 1].weight = w;
        }
        Ok(())
    }

    /// Default ECN marking configured for data queues.
    pub fn default_ecn(&self) -> Option<Red> {
        self.ecn_red
    }

    /// Human-readable name of a port: `node->peer`.
    pub fn port_name(&self, p: u32) -> String {
        let pt = &self.ports[p as usize];
        let peer_node = self.ports[pt.peer as usize].node;
        format!("{}->{}", self.topo.nodes[pt.node as usize].name, self.topo.nodes[peer_node as usize].name)
    }
}

impl Simulation {
    /// Sets the rate of link direction `port` (the port that transmits on
    /// it) to `rate_bps` from now on, forgetting later steps of its schedule.
    /// A packet being serialised keeps its end; the next one goes at the new
    /// rate. A port without a schedule gets one, its fixed rate until now.
    /// Errors: no such port, a zero rate, a port whose timing is a trace.
    pub fn set_link_rate(&mut self, port: u32, rate_bps: u64) -> Result<(), String> {
        let now = self.now;
        let pt = self.ports.get_mut(port as usize).ok_or_else(|| format!("no port {port}"))?;
        if rate_bps == 0 {
            return Err(format!("port {port}: a link rate must be positive"));
        }
        let model = pt.model.get_or_insert_with(Default::default);
        match &mut model.timing {
            Some(LinkTiming::Schedule(s)) => s.set_rate_from(now, rate_bps)?,
            Some(LinkTiming::Trace(_)) => {
                return Err(format!("port {port} follows a mahimahi trace; its rate cannot be set"));
            }
            None => {
                let s = RateSchedule::new(pt.rate_bps, &[(now, rate_bps)]).map_err(|e| e.message)?;
                model.timing = Some(LinkTiming::Schedule(s));
                pt.ps_per_byte = 0;
            }
        }
        pt.rate_bps = rate_bps;
        Ok(())
    }
}
