//! The NIC transmit scheduler: which flow of a host sends next, and the
//! packets a NIC builds.
//!
//! Each host NIC runs round robin with bursts over the flows that may send
//! (or smallest remaining first, `host.scheduler = "srpt"`: the `ready` set
//! is then a heap keyed by remaining bytes, see [`crate::host::ReadySet`]). A
//! flow is in exactly one [`SchedState`]: `Idle` (cannot send), `Ready` (in
//! the host's `ready` FIFO), `Sleeping` (its pacer says "not before t": in the
//! `sleeping` heap keyed by t, with one `NicWake` armed for the earliest),
//! `Parked` (its class is paused by PFC) or `Current` (sending its burst).
//! Only flows that can send are in either structure, so a decision is an
//! O(1) FIFO pop plus O(log s) heap work for paced flows, whatever the number
//! of idle or window-limited flows (htsim's NIC, an ordered map over all
//! flows, is 7-11x slower from 16 to 1024 flows).
//!
//! Control packets (ACK, NACK, CNP, probe replies, stand-alone probes) wait
//! in the NIC port's queue 0 and always go before data. Data packets are never
//! queued: [`Simulation::make_data`] builds one when the scheduler picks its
//! flow, so a sender's backlog costs a counter.
//!
//! Entry points: [`Simulation::host_try_send`] (the port's transmit
//! opportunity, from `link.rs`), [`Simulation::schedule_flow`] (a flow may
//! be able to send: after a CC change, an ACK, new application data, XON),
//! [`Simulation::send_control`] and [`Simulation::on_nic_wake`].
//!
//! The remaining handler cycle: `host_try_send` runs the CC's `on_send`
//! (`cc_glue.rs`), whose changes end in `schedule_flow`, which calls
//! `try_send` on the same port; that returns at once (the port has just
//! started a packet), so the cycle never recurses into `host_try_send`.
//! Likewise `schedule_flow` kicks the port as soon as a flow becomes ready
//! rather than leaving it to the caller: on XON the first unparked flow may
//! start sending before the others are re-queued, and that order is part of
//! the golden results.

use super::Simulation;
use crate::cc::Transport;
use crate::engine::Event;
use crate::host::SchedState;
use crate::packet::{Packet, PacketKind, PktId};
use crate::units::{Time, SEC};
use std::cmp::Reverse;

impl Simulation {
    /// The host a NIC port belongs to.
    pub(super) fn host_of_port(&self, port: u32) -> u32 {
        let pt = &self.ports[port as usize];
        debug_assert!(pt.is_host, "not a host port");
        pt.owner
    }

    /// Puts a flow that may be able to send into its NIC's scheduler.
    pub(super) fn schedule_flow(&mut self, fid: u32) {
        let f = &mut self.flows[fid as usize];
        f.drop_expired_tokens(self.now);
        if f.snd.sched != SchedState::Idle || !f.can_send(self.max_outstanding) {
            return;
        }
        let h = f.path.src as usize;
        let port = self.hosts[h].port;
        if self.ports[port as usize].is_paused(f.path.class) {
            f.snd.sched = SchedState::Parked;
            self.hosts[h].parked.push(fid);
            return;
        }
        let t = f.snd.next_avail.ceil() as Time;
        if t <= self.now {
            f.snd.sched = SchedState::Ready;
            let remaining = f.remaining();
            self.hosts[h].ready.push_back(fid, remaining);
            self.try_send(port);
        } else {
            f.snd.sched = SchedState::Sleeping;
            f.snd.sched_gen = f.snd.sched_gen.wrapping_add(1);
            self.hosts[h].sleeping.push(Reverse((t, fid, f.snd.sched_gen)));
            self.arm_nic(h as u32, t);
        }
    }

    /// The `NicWake` event: the earliest paced flow of host `h` may be
    /// eligible (stale if the host re-armed its wake-up since).
    #[inline]
    pub(super) fn on_nic_wake(&mut self, h: u32) {
        if self.hosts[h as usize].wake_at == self.now {
            self.hosts[h as usize].wake_at = Time::MAX;
            let p = self.hosts[h as usize].port;
            self.try_send(p);
        }
    }

    /// XON on host `h`'s NIC: its parked flows go back to the scheduler.
    pub(super) fn unpark_flows(&mut self, h: u32) {
        let parked = std::mem::take(&mut self.hosts[h as usize].parked);
        for f in parked {
            self.flows[f as usize].snd.sched = SchedState::Idle;
            self.schedule_flow(f);
        }
    }

    /// Makes sure host `h`'s NIC wakes up at `t` (keeps an earlier wake-up).
    fn arm_nic(&mut self, h: u32, t: Time) {
        let host = &mut self.hosts[h as usize];
        if t < host.wake_at {
            host.wake_at = t;
            self.events.push(t, Event::NicWake { host: h });
        }
    }

    /// Picks the flow whose packet goes next, or `None`.
    fn host_pick(&mut self, h: u32) -> Option<u32> {
        let now = self.now;
        let port = self.hosts[h as usize].port;
        if let Some(c) = self.hosts[h as usize].current {
            let f = &mut self.flows[c as usize];
            f.drop_expired_tokens(now);
            let paused = self.ports[port as usize].is_paused(f.path.class);
            if self.hosts[h as usize].burst_left > 0 && !paused && f.can_send(self.max_outstanding) {
                return Some(c);
            }
            self.hosts[h as usize].current = None;
            self.flows[c as usize].snd.sched = SchedState::Idle;
            self.schedule_flow(c);
        }
        let host = &mut self.hosts[h as usize];
        while let Some(&Reverse((t, fid, gen))) = host.sleeping.peek() {
            if t > now {
                break;
            }
            host.sleeping.pop();
            let f = &mut self.flows[fid as usize];
            if f.snd.sched == SchedState::Sleeping && f.snd.sched_gen == gen {
                f.snd.sched = SchedState::Ready;
                host.ready.push_back(fid, f.remaining());
            }
        }
        while let Some(fid) = host.ready.pop_front() {
            let f = &mut self.flows[fid as usize];
            if f.snd.sched != SchedState::Ready {
                continue;
            }
            if self.ports[port as usize].is_paused(f.path.class) {
                f.snd.sched = SchedState::Parked;
                host.parked.push(fid);
                continue;
            }
            f.drop_expired_tokens(now);
            if !f.can_send(self.max_outstanding) {
                f.snd.sched = SchedState::Idle;
                continue;
            }
            f.snd.sched = SchedState::Current;
            host.current = Some(fid);
            host.burst_left = self.burst;
            return Some(fid);
        }
        if let Some(&Reverse((t, _, _))) = host.sleeping.peek() {
            self.arm_nic(h, t);
        }
        None
    }

    /// A transmit opportunity of host NIC `port`: a PFC frame or control
    /// packet if any is waiting, otherwise the next data packet of the flow
    /// the scheduler picks.
    pub(super) fn host_try_send(&mut self, port: u32) {
        let pt = &mut self.ports[port as usize];
        let control = match pt.pfc_out.pop_front() {
            Some(pid) => Some(pid),
            None => pt.queues[0].pkts.pop_front().inspect(|&pid| {
                let size = self.pool.get(pid).size as u64;
                pt.queues[0].bytes -= size;
                pt.queued -= size;
            }),
        };
        if let Some(pid) = control {
            self.transmit(port, pid);
            // Control packets go first, so this opportunity did not look at the
            // flows waiting for their pacer: make sure the NIC wakes up for the
            // earliest of them, or a steady stream of ACKs could starve them.
            let h = self.host_of_port(port);
            let busy_until = self.ports[port as usize].busy_until;
            if let Some(&Reverse((t, _, _))) = self.hosts[h as usize].sleeping.peek() {
                self.arm_nic(h, t.max(busy_until));
            }
            return;
        }
        let h = self.host_of_port(port);
        let Some(fid) = self.host_pick(h) else { return };
        let pid = self.make_data(fid);
        let size = self.pool.get(pid).size;
        self.cons.sent_bytes += size as u64;
        self.transmit(port, pid);
        let burst_end = {
            let host = &mut self.hosts[h as usize];
            host.burst_left = host.burst_left.saturating_sub(size as u64);
            host.burst_left == 0
        };
        self.cc_sent(fid, size);
        let f = &self.flows[fid as usize];
        if (burst_end || !f.can_send(self.max_outstanding)) && self.hosts[h as usize].current == Some(fid) {
            self.hosts[h as usize].current = None;
            self.flows[fid as usize].snd.sched = SchedState::Idle;
            self.schedule_flow(fid);
        }
    }

    /// Builds the next data packet of flow `fid` and advances its sender state.
    fn make_data(&mut self, fid: u32) -> PktId {
        let pk = &self.scenario.packets;
        let int_header = self.scenario.switch.int_header;
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        // SACK flows are known by their pipe (in the flow's hot control
        // state), so that other flows never touch the boxed scoreboard.
        let sack = f.ctl.sack_pipe.is_some();
        let next = match (f.snd.retx.take(), sack) {
            (Some(s), _) => s,
            // SACK recovery's NextSeg: a lost segment first, then new data.
            (None, true) => f.sack.as_deref().and_then(|b| b.next_lost).map_or(f.ctl.snd_nxt, |(s, _)| s),
            (None, false) => f.ctl.snd_nxt,
        };
        let mut offered = f.ctl.app_limit.max(f.snd.max_sent);
        if let Some(b) = f.sack.as_deref().filter(|_| sack) {
            // A retransmission stops where the receiver's SACKed data begins.
            offered = offered.min(b.hole_end(next));
        }
        // What the transport decides for this packet: where it starts, the
        // end it may not pass, its switch priority and its token number.
        let (seq, end, prio, token) = match f.path.transport {
            Transport::PHost => {
                // The oldest unexpired token names the packet (the NIC
                // dropped the expired ones before it picked the flow).
                let (_, offset, number) = ph!(f).tokens.pop_front().expect("a pHost flow sends only on a token");
                let prio = super::grants::phost_data_prio(&self.scenario.host, f.ctl.size, pk.payload as u64);
                (offset, f.ctl.size, prio, number)
            }
            Transport::Hopass => {
                // A token (or a pioneer's free token) names the packet; the
                // switches queue it by its class, whatever its priority.
                let (_, offset, number) = ph!(f).tokens.pop_front().expect("a HOPASS flow sends only on a token");
                (offset, f.ctl.size, 0, number)
            }
            // Never beyond the grant (a message may have raised the
            // application limit past the last granted packet), and at the
            // priority the receiver granted.
            Transport::Credit => (next, offered.min(f.snd.granted), f.snd.grant_prio, 0),
            Transport::Homa => {
                let hp = self.homa.as_deref().expect("Homa flows have Homa parameters");
                let (seq, end, prio) = super::homa::next_data(f, hp.params(), pk.payload as u64);
                (seq, end, prio, 0)
            }
            Transport::GoBackN | Transport::Tcp | Transport::PFabric => {
                (next, offered, f.path.class.saturating_sub(1), 0)
            }
            // A packet to resend (NACKed) first, then new data.
            Transport::Ndp | Transport::Eqds => (super::ndp::next_data(f), offered, f.path.class.saturating_sub(1), 0),
        };
        let payload = end.saturating_sub(seq).min(pk.payload as u64) as u32;
        let size = payload + pk.header + if f.ctl.want_int { int_header } else { 0 } + f.ctl.pint_bytes as u32;
        if f.inflight() == 0 {
            f.snd.last_progress = now;
        }
        let pid = self.pool.alloc();
        let p = self.pool.get_mut(pid);
        p.kind = PacketKind::Data;
        p.flow = fid;
        p.dst = f.path.dst;
        p.seq = seq;
        p.payload = payload;
        p.size = size;
        p.class = f.path.class;
        p.ts_tx = now;
        // A fresh packet's flags are all clear: written in one store.
        p.flags = Packet::flag_if(Packet::FLAG_WANT_INT, f.ctl.want_int)
            | Packet::flag_if(Packet::FLAG_WANT_PINT, f.ctl.pint_bytes > 0);
        p.n_int = 0;
        // Scheduling hints for priority and rank switch ports: the class's
        // priority, or the one the receiver granted (credit-gated
        // transports), and a rank: the bytes the flow still has to send from
        // this packet on, or under pFabric's transport (whose ACKs count what
        // arrived out of order) the bytes not known to have arrived.
        p.prio = prio;
        let remaining = match f.path.transport {
            Transport::PFabric => offered.saturating_sub(f.ctl.snd_una.saturating_add(f.snd.sacked)),
            // EQDS's data carries its pull target here instead (`sim/eqds.rs`).
            Transport::Eqds => super::eqds::pull_target(f, seq, payload as u64, pk.payload as u64) & 0xffff_ffff,
            _ => offered.saturating_sub(seq),
        };
        p.rank = remaining.min(u32::MAX as u64) as u32;
        p.token = token;
        if f.ctl.probe_requested {
            f.ctl.probe_requested = false;
            p.flags |= Packet::FLAG_PROBE;
        }
        let resent = match f.path.transport {
            // Tokens name packets in any order (see `PHostFlow::sent`).
            Transport::PHost | Transport::Hopass => ph!(f).mark_sent(seq / pk.payload as u64),
            _ => seq < f.snd.max_sent,
        };
        if resent {
            f.stats.retx_bytes += payload as u64;
        }
        let new_data = seq == f.ctl.snd_nxt;
        if new_data {
            f.ctl.snd_nxt += payload as u64;
        } else if matches!(f.path.transport, Transport::PHost | Transport::Hopass) {
            f.ctl.snd_nxt = f.ctl.snd_nxt.max(seq + payload as u64);
        }
        f.snd.max_sent = f.snd.max_sent.max(f.ctl.snd_nxt);
        if let Some(b) = f.sack.as_deref_mut().filter(|_| sack) {
            super::transport::sack_sent(
                b,
                &mut f.ctl,
                f.tcp.recover.is_some(),
                seq,
                payload as u64,
                new_data,
                pk.payload as u64,
            );
        }
        f.stats.sent_bytes += size as u64;
        f.mi.bytes += size as u64;
        f.mi.pkts += 1;
        f.snd.last_pkt_bytes = size;
        let gap = size as f64 * 8.0 * SEC as f64 / f.ctl.rate;
        f.snd.next_avail = f.snd.next_avail.max(now as f64) + gap;
        pid
    }

    /// Queues a control packet on host `h`'s NIC (served before data).
    pub(super) fn send_control(&mut self, h: u32, pid: PktId) {
        let port = self.hosts[h as usize].port;
        let size = self.pool.get(pid).size as u64;
        let pt = &mut self.ports[port as usize];
        pt.queues[0].pkts.push_back(pid);
        pt.queues[0].bytes += size;
        pt.queued += size;
        self.try_send(port);
    }

    /// Makes a control packet of flow `fid` travelling from `from` to `to`.
    pub(super) fn control_packet(
        &mut self,
        fid: u32,
        kind: PacketKind,
        from: u32,
        to: u32,
        size: u32,
        seq: u64,
    ) -> PktId {
        let data_class = self.flows[fid as usize].path.class;
        let high = self.scenario.switch.ack_high_priority;
        let pid = self.pool.alloc();
        let p = self.pool.get_mut(pid);
        p.kind = kind;
        p.flow = fid;
        // A packet's source is not stored: it is its flow's sender or
        // receiver, by direction (see `Packet`).
        debug_assert!({
            let path = &self.flows[fid as usize].path;
            from == path.src || from == path.dst
        });
        p.dst = to;
        p.seq = seq;
        p.size = size;
        p.n_int = 0;
        // Most urgent at a rank port, where ACKs and NACKs in their flow's
        // data class queue (the slot's last rank would be arbitrary).
        p.rank = 0;
        p.class = match kind {
            PacketKind::Ack | PacketKind::Nack if !high => data_class,
            PacketKind::Probe => data_class,
            _ => 0,
        };
        pid
    }
}
