//! Links and PFC: a port serialises a packet onto its wire, the wire delivers
//! it to the peer, and pause frames stop and restart a transmitter.
//!
//! A full-duplex link is two ports, one per direction; a port is the
//! transmitting end of one direction. Serialisation and propagation are both
//! paid on the wire: [`Simulation::transmit`] appends `(arrival, packet)` to
//! the port's wire FIFO, and since a port sends one packet at a time over a
//! constant delay, arrivals leave in the order they entered, so only the
//! oldest needs an `Arrive` event. However many packets a long link holds, it
//! costs one pending event.
//!
//! A port's transmit opportunity ([`Simulation::try_send`]) is the seam to
//! what feeds it: a host port asks its NIC scheduler (`nic.rs`), a switch
//! port its queue discipline (`switch.rs`). A port with nothing more to send
//! arms no `TxDone`; the next packet that wants to go schedules it at
//! `busy_until` (one event per hop saved on ACK paths).
//!
//! PFC frames are link-level: they are queued ahead of everything on the
//! port that sends them and act on the port they arrive at, pausing its
//! transmitter for one traffic class until the XON.

use super::Simulation;
use crate::engine::Event;
use crate::net::link_model::LinkTiming;
use crate::packet::{PacketKind, PktId};
use crate::units::{ser_time, Time};
use rand::Rng;

impl Simulation {
    /// The `TxDone` event: `port` finished serialising and may start the next packet.
    #[inline]
    pub(super) fn on_tx_done(&mut self, port: u32) {
        self.ports[port as usize].tx_pending = false;
        self.try_send(port);
    }

    /// Starts transmitting `pid` on `port` now.
    #[inline]
    pub(super) fn transmit(&mut self, port: u32, pid: PktId) {
        let p = self.pool.get(pid);
        let size = p.size as u64;
        let pt = &mut self.ports[port as usize];
        let ser = match pt.model.as_deref_mut().and_then(|m| m.timing.as_mut()) {
            None if pt.ps_per_byte > 0 => size * pt.ps_per_byte,
            None => ser_time(size, pt.rate_bps),
            Some(timing) => {
                // When the packet joined the port's queue, for a trace's
                // delivery opportunities (see `LinkTiming::transmit_end`).
                let queued_at = if pt.is_host || p.kind == PacketKind::Pfc {
                    // A NIC packet sent the instant the previous one ended had
                    // been waiting behind it; any other was made just now.
                    if pt.busy_until == self.now && self.now > 0 {
                        self.now - 1
                    } else {
                        self.now
                    }
                } else {
                    p.enq_time
                };
                timing.transmit_end(self.now, queued_at, size as u32) - self.now
            }
        };
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

    /// A transmit opportunity of `port`: if it is idle, its NIC or switch
    /// queues pick the next packet; if it is busy, a `TxDone` is armed for the
    /// end of the current packet (at most one pending per port).
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

    /// The `Arrive` event: the oldest packet on the wire of `port` reaches
    /// the peer port's node (store and forward: its last bit has arrived).
    pub(super) fn on_arrive(&mut self, port: u32) {
        let pt = &mut self.ports[port as usize];
        let (_, pid) = pt.wire.pop_front().expect("arrival without a packet on the wire");
        if let Some(&(t, _)) = pt.wire.front() {
            self.events.push(t, Event::Arrive { port });
        }
        if let Some(model) = pt.model.as_deref_mut() {
            // PFC frames are link-local: losing one would model a broken
            // switch, not a lossy path.
            let (kind, size) = {
                let p = self.pool.get(pid);
                (p.kind, p.size as u64)
            };
            if kind != PacketKind::Pfc && model.filter(self.now, size, &mut self.rng).is_some() {
                let st = &mut pt.stats;
                st.link_drops += 1;
                st.link_drop_bytes += size;
                if self.in_window {
                    st.win_link_drops += 1;
                    st.win_link_drop_bytes += size;
                }
                if kind == PacketKind::Data {
                    self.cons.dropped_bytes += size;
                }
                self.pool.free(pid);
                return;
            }
        }
        let in_port = pt.peer;
        let peer = &self.ports[in_port as usize];
        if peer.is_host {
            self.host_receive(peer.owner, in_port, pid);
        } else {
            self.switch_receive(peer.owner, in_port, pid);
        }
    }

    /// Applies a PFC frame that arrived on `port` (it pauses that port's transmitter).
    pub(super) fn apply_pfc(&mut self, port: u32, pid: PktId) {
        let (class, pause) = {
            let p = self.pool.get(pid);
            (p.class, p.seq == 1)
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
                let h = self.host_of_port(port);
                self.unpark_flows(h);
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
        p.seq = pause as u64;
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

impl Simulation {
    /// The `LinkRate` event: `port`'s rate schedule reached a step, so the
    /// rate the port reports (INT, port tables) follows it, and the next step
    /// is armed. After `set_link_rate` forgot the later steps, a pending
    /// event finds the rate unchanged and arms nothing.
    pub(super) fn on_link_rate(&mut self, port: u32) {
        let now = self.now;
        let pt = &mut self.ports[port as usize];
        if let Some(LinkTiming::Schedule(s)) = pt.model.as_deref().and_then(|m| m.timing.as_ref()) {
            pt.rate_bps = s.rate_at(now);
            if let Some(t) = s.next_change(now) {
                self.events.push(t, Event::LinkRate { port });
            }
        }
    }
}
