//! The receiver's grant scheduler and the credit gate: the seam that
//! receiver-driven transports (pFabric's hosts, pHost, Homa, HOPASS) plug
//! into.
//!
//! A receiver-driven flow announces its data with a request-to-send
//! (`PacketKind::Rts`, carrying the bytes its application has handed over);
//! the receiving host keeps per-flow receiver state (`Flow::rcv`:
//! `requested`, `granted`) and one [`GrantScheduler`](crate::host::GrantScheduler)
//! per host, woken by one `RecvWake` event per host (as the NIC's
//! `NicWake`), which paces grants (`PacketKind::Grant`: the byte offset the
//! sender may send up to, and a priority for that data) over its flows. The
//! sender records the grant in its credit gate (`Sender::granted`), which
//! [`Flow::can_send`](crate::flow::Flow::can_send) checks for credit-gated
//! transports only, in addition to rate and window.
//!
//! The one receiver-driven transport today is `Transport::Credit`, a minimal
//! transport for tests and teaching (not pHost): the receiver grants one
//! packet per token, round robin over its flows that have bytes left to
//! grant, one token per packet time at its downlink rate (the time the
//! granted packet takes on the host's own link, so grants never ask for more
//! than the downlink carries). A grant's priority is `host.grant_priority`,
//! by default the flow's class priority (`class - 1`, what its data would
//! carry without grants); the sender's data packets carry the priority of
//! the last grant (`make_data`), so the receiver chooses the priority of
//! the data it schedules, as Homa's receivers do. RTS and grants are control packets: they travel in the control
//! queue and are never dropped, so the scheduler needs no loss recovery of
//! its own; lost data is resent below the grant by go-back-N.

use super::Simulation;
use crate::engine::Event;
use crate::packet::{PacketKind, PktId};
use crate::units::{ser_time, Time};

impl Simulation {
    /// Sends a request-to-send for flow `fid`: its application has handed
    /// over `app_limit` bytes in all (at the start, on each message and when
    /// the application stops, which may lower it).
    pub(super) fn send_rts(&mut self, fid: u32) {
        let f = &self.flows[fid as usize];
        let (src, dst, announced) = (f.path.src, f.path.dst, f.ctl.app_limit);
        let size = self.scenario.packets.rts;
        let p = self.control_packet(fid, PacketKind::Rts, src, dst, size, announced);
        self.send_control(src, p);
    }

    /// A request-to-send reached the receiving host `h`: the flow joins its
    /// grant scheduler if it has bytes left to grant.
    pub(super) fn on_rts(&mut self, h: u32, pid: PktId) {
        let (fid, announced) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq)
        };
        self.pool.free(pid);
        let f = &mut self.flows[fid as usize];
        f.rcv.requested = announced;
        if f.rcv.granted < f.rcv.requested && !f.rcv.in_grant_queue {
            f.rcv.in_grant_queue = true;
            let g = &mut self.hosts[h as usize].grants;
            g.waiting.push_back(fid);
            if g.wake_at == Time::MAX {
                let t = g.next_token.max(self.now);
                self.arm_grants(h, t);
            }
        }
    }

    /// The `RecvWake` event: host `h`'s grant scheduler may send its next
    /// token (stale if it re-armed since).
    pub(super) fn on_recv_wake(&mut self, h: u32) {
        if self.hosts[h as usize].grants.wake_at != self.now {
            return;
        }
        self.hosts[h as usize].grants.wake_at = Time::MAX;
        self.grant_next(h);
    }

    /// Grants one packet to the flow at the front of host `h`'s scheduler and
    /// arms the next token one packet time (at the downlink rate) later.
    fn grant_next(&mut self, h: u32) {
        let mtu = self.scenario.packets.payload as u64;
        let header = self.scenario.packets.header as u64;
        let grant_prio = self.scenario.host.grant_priority;
        let now = self.now;
        while let Some(fid) = self.hosts[h as usize].grants.waiting.pop_front() {
            let f = &mut self.flows[fid as usize];
            let left = f.rcv.requested.saturating_sub(f.rcv.granted);
            if left == 0 {
                // The application stopped below what was granted.
                f.rcv.in_grant_queue = false;
                continue;
            }
            let bytes = left.min(mtu);
            f.rcv.granted += bytes;
            let prio = grant_prio.unwrap_or(f.path.class.saturating_sub(1));
            let (offset, src) = (f.rcv.granted, f.path.src);
            let g = &mut self.hosts[h as usize].grants;
            if offset < f.rcv.requested {
                g.waiting.push_back(fid);
            } else {
                f.rcv.in_grant_queue = false;
            }
            let nic = self.hosts[h as usize].port as usize;
            let downlink = self.ports[self.ports[nic].peer as usize].rate_bps;
            let next = now + ser_time(bytes + header, downlink);
            self.hosts[h as usize].grants.next_token = next;
            if !self.hosts[h as usize].grants.waiting.is_empty() {
                self.arm_grants(h, next);
            }
            let size = self.scenario.packets.grant;
            let p = self.control_packet(fid, PacketKind::Grant, h, src, size, offset);
            self.pool.get_mut(p).grant_prio = prio;
            self.send_control(h, p);
            return;
        }
    }

    /// Makes sure host `h`'s grant scheduler wakes up at `t` (keeps an
    /// earlier wake-up).
    fn arm_grants(&mut self, h: u32, t: Time) {
        let g = &mut self.hosts[h as usize].grants;
        if t < g.wake_at {
            g.wake_at = t;
            self.events.push(t, Event::RecvWake { host: h });
        }
    }

    /// A grant reached the sender of its flow: the credit gate opens up to
    /// its offset (grants of one flow travel one path in order, but a stale
    /// one never closes the gate).
    pub(super) fn on_grant(&mut self, pid: PktId) {
        let (fid, offset, prio) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.grant_prio)
        };
        self.pool.free(pid);
        let f = &mut self.flows[fid as usize];
        f.snd.granted = f.snd.granted.max(offset);
        f.snd.grant_prio = prio;
        self.schedule_flow(fid);
    }
}
