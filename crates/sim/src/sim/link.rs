//! Links and PFC.

use super::Simulation;
use crate::engine::Event;
use crate::host::SchedState;
use crate::packet::{PacketKind, PktId};
use crate::topology::NodeKind;
use crate::units::{ser_time, Time};
use rand::Rng;

impl Simulation {
    /// Starts transmitting `pid` on `port` now.
    #[inline]
    pub(super) fn transmit(&mut self, port: u32, pid: PktId) {
        let size = self.pool.get(pid).size as u64;
        let pt = &mut self.ports[port as usize];
        let ser = if pt.ps_per_byte > 0 { size * pt.ps_per_byte } else { ser_time(size, pt.rate_bps) };
        pt.busy_until = self.now + ser;
        pt.tx_bytes += size;
        let mut arrival = self.now + ser + pt.delay;
        if pt.is_host && self.tx_jitter > 0.0 {
            arrival += (self.rng.random::<f64>() * self.tx_jitter * ser as f64) as Time;
            if let Some(&(last, _)) = pt.wire.back() {
                arrival = arrival.max(last);
            }
        }
        let first = pt.wire.is_empty();
        pt.wire.push_back((arrival, pid));
        // A port with nothing else to send needs no wake-up when this packet
        // ends; a later packet arms one (see `try_send`). ACK paths are mostly
        // like this, which saves an event per hop there. (Host ids equal node ids.)
        let more = pt.queued > 0
            || !pt.pfc_out.is_empty()
            || (pt.is_host && {
                let h = &self.hosts[pt.node as usize];
                h.current.is_some() || !h.ready.is_empty()
            });
        if more {
            pt.tx_pending = true;
            self.events.push(self.now + ser, Event::TxDone { port });
        }
        if first {
            self.events.push(arrival, Event::Arrive { port });
        }
        self.packet_hops += 1;
    }

    pub(super) fn try_send(&mut self, port: u32) {
        let pt = &mut self.ports[port as usize];
        if pt.tx_pending {
            return;
        }
        if pt.busy_until > self.now {
            pt.tx_pending = true;
            self.events.push(pt.busy_until, Event::TxDone { port });
            return;
        }
        if pt.is_host {
            self.host_try_send(port);
        } else {
            self.switch_try_send(port);
        }
    }

    pub(super) fn on_arrive(&mut self, port: u32) {
        let pt = &mut self.ports[port as usize];
        let (_, pid) = pt.wire.pop_front().expect("arrival without a packet on the wire");
        if let Some(&(t, _)) = pt.wire.front() {
            self.events.push(t, Event::Arrive { port });
        }
        let in_port = pt.peer;
        let node = self.ports[in_port as usize].node;
        match self.topo.nodes[node as usize].kind {
            NodeKind::Host(h) => self.host_receive(h, in_port, pid),
            NodeKind::Switch(s) => self.switch_receive(s, in_port, pid),
        }
    }

    /// Applies a PFC frame that arrived on `port` (it pauses that port's transmitter).
    pub(super) fn apply_pfc(&mut self, port: u32, pid: PktId) {
        let (class, pause) = {
            let p = self.pool.get(pid);
            (p.class, p.pause)
        };
        self.pool.free(pid);
        let in_window = self.in_window;
        let now = self.now;
        let pt = &mut self.ports[port as usize];
        let bit = 1u8 << class;
        if pause {
            if pt.paused == 0 {
                pt.paused_since = now;
            }
            pt.paused |= bit;
        } else if pt.paused & bit != 0 {
            pt.paused &= !bit;
            if in_window && pt.paused == 0 {
                let since = pt.paused_since.max(self.window.0);
                pt.stats.win_paused_time += now.saturating_sub(since);
            }
            if pt.is_host {
                let h = match self.topo.nodes[pt.node as usize].kind {
                    NodeKind::Host(h) => h,
                    NodeKind::Switch(_) => unreachable!(),
                };
                let parked = std::mem::take(&mut self.hosts[h as usize].parked);
                for f in parked {
                    self.flows[f as usize].snd.sched = SchedState::Idle;
                    self.schedule_flow(f);
                }
            }
            self.try_send(port);
        }
    }

    /// Queues a PFC frame on `port` (sent before any queued packet).
    pub(super) fn send_pfc(&mut self, port: u32, class: u8, pause: bool) {
        let pid = self.pool.alloc();
        let size = self.scenario.packets.pfc;
        let p = self.pool.get_mut(pid);
        p.kind = PacketKind::Pfc;
        p.class = class;
        p.pause = pause;
        p.size = size;
        let pt = &mut self.ports[port as usize];
        pt.pfc_out.push_back(pid);
        if pause {
            pt.stats.pfc_pauses_sent += 1;
            if self.in_window {
                pt.stats.win_pfc_pauses_sent += 1;
            }
        }
        self.try_send(port);
    }
}
