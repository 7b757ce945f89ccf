//! Run-time control of switches, for switch-side agents and slow controllers:
//! ECN marking and scheduler weights changed while the simulation runs.
//!
//! Both take effect at the next packet: ECN decisions read the queue's ramp
//! when they are made, and the scheduler reads the weights when it visits a
//! queue. Errors (no such port or queue, a host port, a zero weight) come
//! back as messages, never as panics.

use super::Simulation;
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
