//! Homa's transport (`Transport::Homa`; Montazeri et al., SIGCOMM 2018,
//! spec `rule_based_cc.md` 7.3, the Homa simulator's configuration): both
//! halves, on the receiver-driven seam of `grants.rs` (one grant scheduler
//! and one `RecvWake` per host, the sender's credit gate `Sender::granted`).
//! The run's parameters are [`HomaParams`] (from `host.homa_*`, the workload's
//! CDF and the paths, resolved by [`Simulation::homa_setup`]).
//!
//! * **Sender.** A message (a finite flow) sends its first
//!   `min(size, RTTbytes)` bytes at once, unscheduled, each packet at the
//!   unscheduled level of the bytes its message has left from it on
//!   (graduated cutoffs); the rest only below the offset its receiver has
//!   granted, at the grant's priority. No window, no pacing beyond the NIC
//!   (the CC keeps line rate); the NIC's smallest-remaining-first order
//!   (`host.scheduler = "srpt"`, keyed by bytes not yet sent) is Homa's SRPT
//!   across the host's messages. A RESEND's range goes before new data; a
//!   RESEND that finds the NIC serving a message with fewer bytes left is
//!   answered with BUSY. A sender that hears nothing (grant, RESEND, ACK)
//!   for `host.rto` sends its first packet again: the message may be unknown
//!   to its receiver (all unscheduled packets lost) or its final ACK lost.
//! * **Receiver.** The first data packet of a message (any packet: each
//!   carries the message's size) makes it known. At each data arrival and
//!   at each wake-up, the receiver ranks its messages that still need grants
//!   by the bytes they have left to receive, keeps the best message of each
//!   sender, and grants to the best `k` (overcommitment): each gets grants
//!   of one packet while less than `RTTbytes` of it are granted (or
//!   unscheduled) and not yet received, at most one per full-packet time of
//!   the receiver's downlink; the best active message gets the highest
//!   scheduled level, the next the next one, and with fewer than `P_s`
//!   active messages the lowest levels are used. A message that has bytes
//!   outstanding and hears nothing for `homa_resend_timeout` gets one RESEND
//!   per missing range below its granted offset (at most 8), and the timer
//!   restarts; a BUSY restarts it too. Out-of-order data is kept; one ACK
//!   goes when everything has arrived (again for data of a complete message).
//!   RESENDs also re-grant, so lost grants are recovered by the same timeout.
//!   Messages are never aborted: ccgym has no host failures, so an abort
//!   would only lose a message the network can still deliver.
//!
//! Each data arrival scans the receiver's incomplete messages (tens at a
//! busy receiver) and sorts those needing grants, into buffers kept across
//! calls (no allocation once warm).

use super::Simulation;
use crate::cc::Transport;
use crate::config::{CfgResult, ConfigError, HostConfig};
use crate::engine::Event;
use crate::flow::Flow;
use crate::homa::{unsched_cutoffs, unsched_levels, unsched_share, HomaParams};
use crate::host::GrantPolicy;
use crate::packet::{PacketKind, PktId};
use crate::units::{ser_time, Time, MS, SEC};
use crate::workload::Cdf;
use std::path::Path;

/// The Homa message state of flow `f`, borrowing only that field.
macro_rules! hm {
    ($f:expr) => {
        $f.homa.as_deref_mut().expect("a Homa flow has its message state")
    };
}

/// Most RESEND packets one timeout sends for one message (one per missing range).
const MAX_RESEND_RANGES: usize = 8;

/// Homa's run-wide state: its parameters and the scheduler's buffers.
#[derive(Debug)]
pub(crate) struct HomaState {
    /// The run's parameters.
    params: HomaParams,
    /// Messages needing grants at one receiver: (bytes left to receive,
    /// start, flow, sender).
    ranked: Vec<(u64, Time, u32, u32)>,
    /// The active messages of one pass: (flow, sender).
    active: Vec<(u32, u32)>,
    /// Grants of one pass: (flow, granted offset, priority).
    grants: Vec<(u32, u64, u8)>,
    /// Messages whose RESEND timer expired in one pass.
    silent: Vec<u32>,
}

/// Checks Homa's fields (`host.homa_*`).
pub(super) fn validate_homa(h: &HostConfig) -> CfgResult<()> {
    if let Some(b) = h.homa_rtt_bytes {
        if b.0 == 0 || b.0 > 1 << 30 {
            return Err(ConfigError::new("host.homa_rtt_bytes", b.0, "must be from 1 byte to 1 GiB"));
        }
    }
    if let Some(k) = h.homa_overcommit {
        if k == 0 || k > 1024 {
            return Err(ConfigError::new("host.homa_overcommit", k, "must be from 1 to 1024 messages"));
        }
    }
    if let Some(c) = &h.homa_unsched_cutoffs {
        if c.len() > 6 {
            // n cutoffs make n + 1 unscheduled levels, and at least one of a
            // port's at most 8 levels must be left for scheduled data.
            return Err(ConfigError::new(
                "host.homa_unsched_cutoffs",
                c.len(),
                "at most 6 cutoffs (they make one unscheduled level more than their number, and of at most 8 \
                 priority levels one must stay scheduled)",
            ));
        }
        if c.first().is_some_and(|b| b.0 == 0) || c.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(ConfigError::new(
                "host.homa_unsched_cutoffs",
                format!("{:?}", c.iter().map(|b| b.0).collect::<Vec<_>>()),
                "cutoffs must be positive byte counts in increasing order",
            ));
        }
    }
    if let Some(t) = h.homa_resend_timeout {
        if t.0 == 0 {
            return Err(ConfigError::new("host.homa_resend_timeout", 0, "must be positive"));
        }
    }
    Ok(())
}

/// What a Homa flow's next data packet is: (first byte, end it may not
/// pass, priority). A range a RESEND asked for goes first; then new data
/// below the grant, unscheduled packets at the level of the bytes left from
/// them on, scheduled ones at the last grant's priority.
#[inline(never)]
pub(super) fn next_data(f: &mut Flow, p: &HomaParams, mtu: u64) -> (u64, u64, u8) {
    let size = f.ctl.size;
    let hm = hm!(f);
    if let Some(&(a, b, prio)) = hm.resend.front() {
        let end = (a + mtu).min(b);
        if end >= b {
            hm.resend.pop_front();
        } else if let Some(r) = hm.resend.front_mut() {
            r.0 = end;
        }
        return (a, b, prio);
    }
    let seq = f.ctl.snd_nxt;
    let end = f.snd.granted.min(size);
    let prio = if seq < p.unsched_bytes(size) { p.unsched_prio(size - seq) } else { f.snd.grant_prio };
    // The sender's SRPT key: what is left to send after this packet.
    f.snd.peer_remaining = size - (seq + mtu).min(end);
    (seq, end, prio)
}

impl HomaState {
    /// The run's parameters.
    #[inline]
    pub(super) fn params(&self) -> &HomaParams {
        &self.params
    }
}

impl Simulation {
    /// Homa's parameters of this run (`None` without Homa flows).
    pub fn homa_params(&self) -> Option<&HomaParams> {
        self.homa.as_deref().map(|s| &s.params)
    }

    /// Resolves Homa's parameters once the flows exist (their paths give
    /// the default `RTTbytes`); nothing without Homa flows.
    pub(super) fn homa_setup(&mut self, base_dir: &Path) -> CfgResult<()> {
        let homa: Vec<&Flow> = self.flows.iter().filter(|f| f.path.transport == Transport::Homa).collect();
        if homa.is_empty() {
            return Ok(());
        }
        let h = &self.scenario.host;
        let levels = self.scenario.switch.priorities;
        if levels < 2 {
            return Err(ConfigError::new(
                "switch.priorities",
                levels,
                "Homa needs at least 2 data priorities (unscheduled and scheduled)",
            ));
        }
        let max_rtt = homa.iter().map(|f| f.ctl.base_rtt).max().unwrap_or(0);
        let path_bytes =
            homa.iter().map(|f| (f.ctl.base_rtt as f64 * f.ctl.line_rate / 8.0 / SEC as f64).ceil() as u64).max();
        let rtt_bytes = h.homa_rtt_bytes.map(|b| b.0).or(path_bytes).unwrap_or(10_000).max(1);
        let by_k = h.homa_overcommit.map(|k| levels - k.min(levels as u32 - 1) as u8);
        let (unsched, cutoffs) = match &h.homa_unsched_cutoffs {
            Some(list) => {
                if list.len() + 1 >= levels as usize {
                    return Err(ConfigError::new(
                        "host.homa_unsched_cutoffs",
                        list.len(),
                        format!(
                            "{} cutoffs make {} unscheduled levels and leave no scheduled level of switch.priorities \
                             = {levels}: at most {} cutoffs",
                            list.len(),
                            list.len() + 1,
                            levels.saturating_sub(2)
                        ),
                    ));
                }
                (list.len() as u8 + 1, list.iter().map(|b| b.0).collect())
            }
            None => match self.homa_workload_cdf(base_dir)? {
                Some(cdf) => {
                    let pu = by_k.unwrap_or_else(|| unsched_levels(unsched_share(&cdf, rtt_bytes), levels));
                    (pu, unsched_cutoffs(&cdf, rtt_bytes, pu))
                }
                None => (by_k.unwrap_or(1), Vec::new()),
            },
        };
        let params = HomaParams {
            rtt_bytes,
            levels,
            unsched_levels: unsched,
            overcommit: h.homa_overcommit.unwrap_or((levels - unsched) as u32),
            cutoffs,
            resend_timeout: h.homa_resend_timeout.map(|d| d.0).unwrap_or((10 * max_rtt).max(MS)),
            boost_tail: h.homa_boost_tail,
        };
        for f in self.flows.iter_mut().filter(|f| f.path.transport == Transport::Homa) {
            f.homa = Some(Box::default());
        }
        self.homa = Some(Box::new(HomaState {
            params,
            ranked: Vec::new(),
            active: Vec::new(),
            grants: Vec::new(),
            silent: Vec::new(),
        }));
        Ok(())
    }

    /// The CDF of the scenario's first Poisson workload, if any (the
    /// message sizes the unscheduled cutoffs are computed from).
    fn homa_workload_cdf(&self, base_dir: &Path) -> CfgResult<Option<Cdf>> {
        let Some((i, w)) = self.scenario.workload.iter().enumerate().find(|(_, w)| w.kind == "poisson") else {
            return Ok(None);
        };
        let Some(path_s) = w.cdf.as_ref() else { return Ok(None) };
        let field = format!("workload[{i}].cdf");
        let text = std::fs::read_to_string(base_dir.join(path_s))
            .map_err(|e| ConfigError::new(&field, format!("\"{path_s}\""), format!("cannot read the file: {e}")))?;
        let step = w.sampling.as_deref() == Some("step");
        Cdf::parse(&text, step, &field, path_s).map(Some)
    }

    fn homa_params_ref(&self) -> &HomaParams {
        &self.homa.as_deref().expect("Homa flows have Homa parameters").params
    }

    /// Homa message `fid` starts: its unscheduled bytes are granted at once.
    #[inline(never)]
    pub(super) fn homa_start(&mut self, fid: u32) {
        let unsched = self.homa_params_ref().unsched_bytes(self.flows[fid as usize].ctl.size);
        let f = &mut self.flows[fid as usize];
        f.snd.granted = unsched;
        f.snd.peer_remaining = f.ctl.size;
        f.snd.last_progress = self.now;
    }

    /// A grant reached the sender of Homa message `fid`.
    #[inline(never)]
    pub(super) fn homa_on_grant(&mut self, pid: PktId) {
        let (fid, offset, prio) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.grant_prio)
        };
        self.pool.free(pid);
        let f = &mut self.flows[fid as usize];
        if f.snd.finished.is_some() {
            return;
        }
        f.snd.last_progress = self.now;
        if offset > f.snd.granted {
            f.snd.granted = offset.min(f.ctl.size);
            f.snd.grant_prio = prio;
        }
        self.schedule_flow(fid);
    }

    /// A RESEND reached the sender: the range goes again (what was never
    /// sent is simply granted), and BUSY answers if the NIC serves
    /// messages with fewer bytes left first.
    #[inline(never)]
    pub(super) fn homa_on_resend(&mut self, pid: PktId) {
        let (fid, from, len, prio) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.payload as u64, p.grant_prio)
        };
        self.pool.free(pid);
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        if f.snd.finished.is_some() {
            return;
        }
        f.snd.last_progress = now;
        let to = (from + len).min(f.ctl.size);
        if to > f.snd.granted {
            // The grants for these bytes were lost.
            f.snd.granted = to;
            f.snd.grant_prio = prio;
        }
        let sent_to = to.min(f.ctl.snd_nxt);
        let hm = hm!(f);
        if from < sent_to && !hm.resend.iter().any(|r| r.0 <= from && sent_to <= r.1) {
            hm.resend.push_back((from, sent_to, prio));
        }
        let (src, dst) = (f.path.src, f.path.dst);
        self.schedule_flow(fid);
        let mine = self.flows[fid as usize].remaining();
        let host = &self.hosts[src as usize];
        let busy = host.current.is_some_and(|c| c != fid && self.flows[c as usize].remaining() < mine)
            || host.ready.best_remaining().is_some_and(|r| r < mine);
        if busy {
            hm!(self.flows[fid as usize]).busy_sent += 1;
            let size = self.scenario.packets.grant;
            let b = self.control_packet(fid, PacketKind::Busy, src, dst, size, 0);
            self.send_control(src, b);
        }
    }

    /// A BUSY reached the receiver: the sender is alive, the RESEND timer
    /// restarts.
    #[inline(never)]
    pub(super) fn homa_on_busy(&mut self, pid: PktId) {
        let fid = self.pool.get(pid).flow;
        self.pool.free(pid);
        let now = self.now;
        let hm = hm!(self.flows[fid as usize]);
        hm.last_heard = now;
        hm.busy_heard += 1;
    }

    /// The sender of Homa message `fid` heard nothing for its timeout: its
    /// first packet (which announces the message) goes again.
    #[inline(never)]
    pub(super) fn homa_sender_timeout(&mut self, fid: u32) {
        let mtu = self.scenario.packets.payload as u64;
        let prio = self.homa_params_ref().unsched_prio(self.flows[fid as usize].ctl.size);
        let f = &mut self.flows[fid as usize];
        let first = mtu.min(f.ctl.size).min(f.ctl.snd_nxt);
        let hm = hm!(f);
        if first > 0 && !hm.resend.iter().any(|r| r.0 == 0) {
            hm.resend.push_back((0, first, prio));
        }
        self.schedule_flow(fid);
    }

    /// A data packet of a Homa message reached its receiver `h`: kept
    /// whatever its order; the message becomes known; the ACK goes when all
    /// data has arrived; then the grant scheduler runs.
    #[inline(never)]
    pub(super) fn homa_receive_data(&mut self, h: u32, pid: PktId) {
        let (fid, seq, payload, ts) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.payload as u64, p.ts_tx)
        };
        self.pool.free(pid);
        let now = self.now;
        let unsched = self.homa_params_ref().unsched_bytes(self.flows[fid as usize].ctl.size);
        let f = &mut self.flows[fid as usize];
        let size = f.ctl.size;
        if f.rcv.rcv_nxt >= size {
            // Data of a complete message: its ACK may have been lost.
            self.final_ack(h, fid, ts);
            return;
        }
        let r = &mut f.rcv;
        let new = super::receiver::accept_range(r, seq, seq + payload);
        let hm = hm!(f);
        hm.last_heard = now;
        if new {
            hm.received += payload;
        }
        if !hm.known {
            hm.known = true;
            f.rcv.granted = f.rcv.granted.max(unsched);
            f.rcv.in_grant_queue = true;
            let g = &mut self.hosts[h as usize].grants;
            g.policy = GrantPolicy::Homa;
            g.waiting.push_back(fid);
        }
        if f.rcv.rcv_nxt >= size {
            self.final_ack(h, fid, ts);
        }
        self.homa_schedule(h);
    }

    /// Host `h`'s Homa receiver: RESENDs for messages gone silent, then one
    /// grant to each of the best `k` messages that has less than `RTTbytes`
    /// outstanding and whose last grant is a packet time old; then a
    /// wake-up for the next grant or timeout.
    #[inline(never)]
    pub(super) fn homa_schedule(&mut self, h: u32) {
        let now = self.now;
        let mtu = self.scenario.packets.payload as u64;
        let header = self.scenario.packets.header as u64;
        let nic = self.hosts[h as usize].port as usize;
        let t_pkt = ser_time(mtu + header, self.ports[self.ports[nic].peer as usize].rate_bps);
        let mut st = self.homa.take().expect("Homa flows have Homa parameters");
        let HomaState { params: p, ranked, active, grants, silent } = &mut *st;
        ranked.clear();
        active.clear();
        grants.clear();
        silent.clear();
        let mut wake = Time::MAX;
        let flows = &mut self.flows;
        self.hosts[h as usize].grants.waiting.retain(|&fid| {
            let f = &mut flows[fid as usize];
            let size = f.ctl.size;
            if f.rcv.rcv_nxt >= size {
                f.rcv.in_grant_queue = false;
                return false;
            }
            let granted = f.rcv.granted;
            let hm = hm!(f);
            if granted > hm.received {
                // Data is expected: the RESEND timer runs.
                let mut due = hm.last_heard + p.resend_timeout;
                if now >= due {
                    silent.push(fid);
                    hm.last_heard = now;
                    due = now + p.resend_timeout;
                }
                wake = wake.min(due);
            }
            if granted < size {
                ranked.push((size - hm.received, f.path.start, fid, f.path.src));
            }
            true
        });
        ranked.sort_unstable();
        for &(_, _, fid, src) in ranked.iter() {
            if active.len() >= p.overcommit as usize {
                break;
            }
            if !active.iter().any(|&(_, s)| s == src) {
                active.push((fid, src));
            }
        }
        let n = active.len();
        for (rank, &(fid, _)) in active.iter().enumerate() {
            let f = &mut flows[fid as usize];
            let size = f.ctl.size;
            let granted = f.rcv.granted;
            let hm = hm!(f);
            if granted.saturating_sub(hm.received) >= p.rtt_bytes {
                continue;
            }
            if hm.next_grant_at > now {
                wake = wake.min(hm.next_grant_at);
                continue;
            }
            let mut prio = p.sched_prio(rank, n);
            let left = size - granted;
            if p.boost_tail && left < p.rtt_bytes {
                prio = prio.min(p.unsched_prio(left));
            }
            let offset = (granted + mtu).min(size);
            f.rcv.granted = offset;
            hm.next_grant_at = now + t_pkt;
            // The RESEND timer runs from the last data or grant: a message
            // that waited for grants has not gone silent.
            hm.last_heard = now;
            hm.grants += 1;
            hm.grant_prio = prio;
            grants.push((fid, offset, prio));
            if offset < size && offset - hm.received < p.rtt_bytes {
                wake = wake.min(hm.next_grant_at);
            }
        }
        // RESENDs: one per missing range below the granted offset.
        let mut resends: Vec<(u32, u64, u64, u8)> = Vec::new();
        for &fid in silent.iter() {
            let f = &mut flows[fid as usize];
            let (size, granted) = (f.ctl.size, f.rcv.granted);
            let unsched = p.unsched_bytes(size);
            let mut from = f.rcv.rcv_nxt;
            let mut n_ranges = 0;
            for &(a, b) in f.rcv.ooo.iter().chain(std::iter::once(&(granted, granted))) {
                let to = a.min(granted);
                if to > from && n_ranges < MAX_RESEND_RANGES {
                    let prio = if from < unsched { p.unsched_prio(size - from) } else { hm!(f).grant_prio };
                    resends.push((fid, from, to - from, prio));
                    n_ranges += 1;
                }
                from = from.max(b);
            }
            hm!(f).resends += n_ranges as u64;
        }
        let sends = std::mem::take(grants);
        self.homa = Some(st);
        let size = self.scenario.packets.grant;
        for &(fid, offset, prio) in &sends {
            let src = self.flows[fid as usize].path.src;
            let g = self.control_packet(fid, PacketKind::Grant, h, src, size, offset);
            self.pool.get_mut(g).grant_prio = prio;
            self.send_control(h, g);
        }
        for &(fid, from, len, prio) in &resends {
            let src = self.flows[fid as usize].path.src;
            let r = self.control_packet(fid, PacketKind::Resend, h, src, size, from);
            let pk = self.pool.get_mut(r);
            pk.payload = len.min(u32::MAX as u64) as u32;
            pk.grant_prio = prio;
            self.send_control(h, r);
        }
        if let Some(st) = self.homa.as_deref_mut() {
            st.grants = sends;
        }
        if wake != Time::MAX {
            self.homa_arm(h, wake);
        }
    }

    /// Makes sure host `h`'s grant scheduler wakes up at `t` (keeps an
    /// earlier wake-up).
    fn homa_arm(&mut self, h: u32, t: Time) {
        let g = &mut self.hosts[h as usize].grants;
        if t < g.wake_at {
            g.wake_at = t;
            self.events.push(t, Event::RecvWake { host: h });
        }
    }
}
