//! NDP's transport (`Transport::Ndp`; Handley et al., SIGCOMM 2017; spec
//! `rule_based_cc.md` 7.4, with the facts of htsim's `ndp.cpp`): both end
//! hosts' halves and the receiver's pull pacer. The switches' half, packet
//! trimming, is in `switch.rs` (`switch.trim`).
//!
//! * **Sender.** At its start a flow may send its initial window
//!   (`host.ndp_iw`, default one BDP of its path) at line rate; after that it
//!   sends one packet per pull. A pull carries the flow's pull number (its
//!   count of pulls), so the sender's credit is the highest number heard
//!   minus the pulls it spent, and a lost pull is made good by the next one.
//!   A NACK puts its packet in the resend set, sent before any new data; with
//!   no credit, or nothing to send, the sender waits (credit is kept).
//! * **Receiver.** Every data packet is acknowledged at once (the ACK names
//!   that packet), every cut header is NACKed, and each of them asks the
//!   pull pacer for one pull. Data is kept in any order.
//! * **Pull pacer.** One per host (the host's grant scheduler with
//!   [`GrantPolicy::Ndp`]): one pull per full-packet time at
//!   `host.ndp_pull_rate` (0.99) of the host's downlink, round robin over
//!   the flows with pulls waiting (htsim's fair pull queue). When no pull is
//!   waiting and the pacer's slot has come, the pull rides on the ACK or
//!   NACK itself instead of a PULL packet of its own. A flow whose data has
//!   all arrived asks for no more pulls, and its waiting pulls are dropped.
//! * **Timeout.** htsim's NDP does not resend on a timeout (its switches lose
//!   only headers, and only when a header queue overflows). Here a flow that
//!   hears no new ACK for `host.rto` while data is unacknowledged resends all
//!   of it at once, without pulls (htsim's `RESEND_ON_TIMEOUT` variant), so
//!   that a header dropped by a full header queue, or a packet lost on an
//!   emulated link, cannot stall it.
//!
//! An ACK and a NACK carry the data's `seq` and `payload` and, in `rank`,
//! the low 32 bits of a pull number (0: no pull), restored at the sender
//! ([`unwrap_pull`]); a PULL is a `Grant` whose `seq` is the pull number.
//!
//! Packets of a flow take paths by the switches' rule (`switch.load_balancing
//! = "packet"` sprays them by sequence number, so a resent packet takes the
//! path of the first copy; htsim picks a new path for it).

use super::Simulation;
use crate::cc::{AckEvent, CcCtx, CongestionControl, Transport};
use crate::config::{CfgResult, ConfigError, Scenario};
use crate::host::GrantPolicy;
use crate::packet::{PacketKind, PktId};
use crate::units::{ser_time, Time};
use crate::workload::UNLIMITED;

/// Checks NDP's fields (`host.ndp_*`, `switch.trim*`).
pub(super) fn validate(sc: &Scenario) -> CfgResult<()> {
    let h = &sc.host;
    if let Some(n) = h.ndp_iw.filter(|n| !(1..=1000).contains(n)) {
        return Err(ConfigError::new("host.ndp_iw", n, "must be from 1 to 1000 packets"));
    }
    if !(h.ndp_pull_rate > 0.0 && h.ndp_pull_rate <= 1.0) {
        return Err(ConfigError::new(
            "host.ndp_pull_rate",
            h.ndp_pull_rate,
            "must be a fraction of the downlink in (0, 1]",
        ));
    }
    if !["round_robin", "srpt"].contains(&h.ndp_pull_order.as_str()) {
        return Err(ConfigError::new(
            "host.ndp_pull_order",
            format!("\"{}\"", h.ndp_pull_order),
            "use \"round_robin\" (htsim) or \"srpt\" (fewest bytes missing first)",
        ));
    }
    if sc.switch.trim && sc.switch.discipline == "rank" {
        return Err(ConfigError::new(
            "switch.trim",
            "true",
            "rank ports (switch.discipline = \"rank\") evict rather than trim; use \"fifo\" or \"priority\"",
        ));
    }
    Ok(())
}

/// The header-queue limit of trimming switches, in bytes: `trim_header_queue`,
/// or twice a port's data budget (htsim's rule), which is `port_buffer` or,
/// without one, the switch's whole `buffer`.
pub(super) fn header_queue_limit(sc: &Scenario) -> u64 {
    let s = &sc.switch;
    match (s.trim_header_queue.0, s.port_buffer.0) {
        (0, 0) => s.buffer.0.saturating_mul(2),
        (0, port) => port.saturating_mul(2),
        (limit, _) => limit,
    }
}

/// The full pull number of one whose low 32 bits are `low`, given the highest
/// number `max` heard so far: pulls of one flow arrive nearly in order, so the
/// number is the one within 2^31 of `max`.
pub(super) fn unwrap_pull(max: u64, low: u32) -> u64 {
    let behind = (max as u32).wrapping_sub(low);
    if behind < 1 << 31 {
        max.saturating_sub(behind as u64)
    } else {
        max + low.wrapping_sub(max as u32) as u64
    }
}

impl Simulation {
    /// NDP (or EQDS) flow `fid` starts: its initial (speculative) window.
    pub(super) fn ndp_start(&mut self, fid: u32) {
        let payload = self.scenario.packets.payload as u64;
        let f = &mut self.flows[fid as usize];
        let eqds = f.path.transport == Transport::Eqds;
        let set = if eqds { self.scenario.host.eqds_window } else { self.scenario.host.ndp_iw };
        let bdp_pkts = f.ctl.bdp.div_ceil(payload).max(1);
        let window = set.map_or(bdp_pkts, u64::from);
        let pkts = if f.ctl.size == UNLIMITED { window } else { window.min(f.ctl.size.div_ceil(payload)) };
        let n = nd!(f);
        n.unpulled = pkts as u32;
        n.window = window as u32;
        n.speculating = eqds;
        f.snd.last_progress = self.now;
    }

    /// The time between two pulls of host `h`'s pacer: a full packet at
    /// `host.ndp_pull_rate` of its downlink.
    pub(super) fn ndp_pull_spacing(&self, h: u32) -> Time {
        let full = (self.scenario.packets.payload + self.scenario.packets.header) as u64;
        let nic = self.hosts[h as usize].port as usize;
        let downlink = self.ports[self.ports[nic].peer as usize].rate_bps;
        (ser_time(full, downlink) as f64 / self.scenario.host.ndp_pull_rate) as Time
    }

    /// A data packet (`header`: a cut header) of NDP flow `fid` reached its
    /// receiver `h`: ACK (NACK) it, and ask the pacer for a pull.
    // Out of line: the receiver's demultiplexer stays as small as before NDP.
    #[inline(never)]
    pub(super) fn ndp_receive(&mut self, h: u32, pid: PktId, header: bool) {
        let (fid, seq, payload, ts) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.payload, p.ts_tx)
        };
        self.pool.free(pid);
        let f = &mut self.flows[fid as usize];
        if !header {
            super::receiver::accept_range(&mut f.rcv, seq, seq + payload as u64);
        }
        let src = f.path.src;
        let pull = if f.received_all() {
            // Everything has arrived: no more pulls, and none still waiting.
            nd!(f).pulls_queued = 0;
            0
        } else {
            self.ndp_request_pull(h, fid)
        };
        self.ndp_reply(h, fid, src, header, (seq, payload, ts), pull);
    }

    /// Receiver `h` answers a packet of flow `fid` (from host `src`) that
    /// reached it: an ACK naming the data (`seq`, `payload`, its send time
    /// `ts` echoed), or a NACK for a cut header, carrying pull number `pull`
    /// (0: none). NDP's and EQDS's receivers answer alike.
    pub(super) fn ndp_reply(&mut self, h: u32, fid: u32, src: u32, header: bool, data: (u64, u32, Time), pull: u64) {
        let (seq, payload, ts) = data;
        let (kind, size) = if header {
            (PacketKind::Nack, self.scenario.packets.nack)
        } else {
            (PacketKind::Ack, self.scenario.packets.ack)
        };
        let a = self.control_packet(fid, kind, h, src, size, seq);
        let p = self.pool.get_mut(a);
        p.payload = payload;
        p.rank = pull as u32;
        p.ts_tx = ts;
        self.send_control(h, a);
    }

    /// Flow `fid` joins host `h`'s pull queue under `policy` (if not in it
    /// already), and the pacer wakes at its next slot.
    pub(super) fn join_pull_queue(&mut self, h: u32, fid: u32, policy: GrantPolicy) {
        let f = &mut self.flows[fid as usize];
        let g = &mut self.hosts[h as usize].grants;
        g.policy = policy;
        if !f.rcv.in_grant_queue {
            f.rcv.in_grant_queue = true;
            g.waiting.push_back(fid);
        }
        let t = g.next_token.max(self.now);
        self.arm_grants(h, t);
    }

    /// Receiver `h` asks its pacer for one pull for flow `fid`: the pull
    /// number to carry on the ACK or NACK at once (the pacer is idle and its
    /// slot has come), or 0 when the pull waits for the pacer.
    fn ndp_request_pull(&mut self, h: u32, fid: u32) -> u64 {
        let now = self.now;
        let spacing = self.ndp_pull_spacing(h);
        let g = &mut self.hosts[h as usize].grants;
        g.policy = GrantPolicy::Ndp;
        let f = &mut self.flows[fid as usize];
        if g.waiting.is_empty() && now >= g.next_token {
            g.next_token = now + spacing;
            let n = nd!(f);
            n.pull_no += 1;
            return n.pull_no;
        }
        nd!(f).pulls_queued += 1;
        self.join_pull_queue(h, fid, GrantPolicy::Ndp);
        0
    }

    /// Whether host `h`'s pull pacer may send a pull now; if not, it wakes
    /// again at its next slot.
    pub(super) fn pull_slot_open(&mut self, h: u32) -> bool {
        let next_slot = self.hosts[h as usize].grants.next_token;
        if self.now < next_slot {
            self.arm_grants(h, next_slot);
            return false;
        }
        true
    }

    /// Host `h`'s pull pacer: one PULL to the next flow in turn, then the
    /// next slot one spacing later.
    pub(super) fn ndp_pull_next(&mut self, h: u32) {
        if !self.pull_slot_open(h) {
            return;
        }
        let now = self.now;
        let spacing = self.ndp_pull_spacing(h);
        if self.scenario.host.ndp_pull_order == "srpt" {
            self.ndp_pull_srpt_first(h);
        }
        while let Some(fid) = self.hosts[h as usize].grants.waiting.pop_front() {
            let f = &mut self.flows[fid as usize];
            let complete = f.received_all();
            let n = nd!(f);
            if n.pulls_queued == 0 || complete {
                n.pulls_queued = 0;
                f.rcv.in_grant_queue = false;
                continue;
            }
            n.pulls_queued -= 1;
            n.pull_no += 1;
            let (number, more) = (n.pull_no, n.pulls_queued > 0);
            let src = f.path.src;
            if !more {
                f.rcv.in_grant_queue = false;
            }
            let g = &mut self.hosts[h as usize].grants;
            if more {
                g.waiting.push_back(fid);
            }
            g.next_token = now + spacing;
            if !g.waiting.is_empty() {
                self.arm_grants(h, now + spacing);
            }
            let size = self.scenario.packets.grant;
            let p = self.control_packet(fid, PacketKind::Grant, h, src, size, number);
            self.send_control(h, p);
            return;
        }
    }

    /// Moves the flow of host `h`'s pull queue with the fewest bytes not yet
    /// received (ties: the earlier in the queue) to its front.
    fn ndp_pull_srpt_first(&mut self, h: u32) {
        let flows = &self.flows;
        let waiting = &mut self.hosts[h as usize].grants.waiting;
        let missing = |fid: u32| {
            let f = &flows[fid as usize];
            let held: u64 = f.rcv.ooo.iter().map(|&(a, b)| b - a).sum();
            f.ctl.size.saturating_sub(f.rcv.rcv_nxt + held)
        };
        let best = waiting.iter().enumerate().min_by_key(|&(i, &fid)| (missing(fid), i)).map(|(i, _)| i);
        if let Some(i) = best.filter(|&i| i > 0) {
            let fid = waiting.remove(i).expect("index from the scan");
            waiting.push_front(fid);
        }
    }

    /// A PULL reached the sender of NDP flow `fid`: more credit.
    // Out of line: the receiver's demultiplexer stays as small as before NDP.
    #[inline(never)]
    pub(super) fn ndp_on_pull(&mut self, pid: PktId) {
        let (fid, number) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq)
        };
        self.pool.free(pid);
        let f = &mut self.flows[fid as usize];
        let n = nd!(f);
        // Credit comes with the pull: the data it sends declares the rest.
        end_speculation(n);
        n.max_pull = n.max_pull.max(number);
        self.schedule_flow(fid);
    }

    /// An ACK reached the sender of NDP flow `fid`: the packet it names has
    /// arrived; a pull may ride on it.
    // Out of line: the receiver's demultiplexer stays as small as before NDP.
    #[inline(never)]
    pub(super) fn ndp_on_ack(&mut self, pid: PktId) {
        let now = self.now;
        let (fid, seq, payload, pull, ts, ecn) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.payload as u64, p.rank, p.ts_tx, p.ecn_echo())
        };
        self.pool.free(pid);
        let f = &mut self.flows[fid as usize];
        let rtt = now.saturating_sub(ts);
        f.stats.min_rtt = Some(f.stats.min_rtt.map_or(rtt, |m| m.min(rtt)));
        let n = nd!(f);
        let ended = end_speculation(n);
        if pull != 0 {
            n.max_pull = n.max_pull.max(unwrap_pull(n.max_pull, pull));
        }
        n.resend.remove(&seq);
        let old_una = f.ctl.snd_una;
        super::receiver::take_range(&mut f.ctl.snd_una, &mut n.acked, seq, seq + payload);
        let newly = f.ctl.snd_una - old_una;
        if newly > 0 {
            f.snd.last_progress = now;
        }
        if f.snd.finished.is_none() {
            let ev = AckEvent { ack_seq: f.ctl.snd_una, newly_acked: newly, ecn_echo: ecn, rtt, ..AckEvent::default() };
            let (old_rate, old_timer) = (f.ctl.rate, f.ctl.timer);
            f.cc.on_ack(&mut CcCtx { now, flow: &mut f.ctl }, &ev);
            self.after_cc(fid, old_rate, old_timer);
        }
        self.after_progress(fid);
        if ended {
            self.eqds_declare(fid);
        }
    }

    /// A NACK reached the sender of NDP flow `fid`: the packet it names was
    /// cut on the way; it goes into the resend set (a pull may ride on it).
    // Out of line: the receiver's demultiplexer stays as small as before NDP.
    #[inline(never)]
    pub(super) fn ndp_on_nack(&mut self, pid: PktId) {
        let (fid, seq, pull) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.rank)
        };
        self.pool.free(pid);
        let f = &mut self.flows[fid as usize];
        f.stats.nacks += 1;
        f.mi.nacks += 1;
        let una = f.ctl.snd_una;
        let done = f.snd.finished.is_some();
        let n = nd!(f);
        let ended = end_speculation(n);
        if pull != 0 {
            n.max_pull = n.max_pull.max(unwrap_pull(n.max_pull, pull));
        }
        let acked = seq < una || n.acked.iter().any(|&(a, b)| a <= seq && seq < b);
        if !done && !acked {
            n.resend.insert(seq);
        }
        self.schedule_flow(fid);
        if ended {
            self.eqds_declare(fid);
        }
    }

    /// NDP flow `fid` heard no new ACK for its timeout: every packet sent and
    /// not acknowledged goes into the resend set, and may go without pulls.
    /// An EQDS flow resends only its oldest unacknowledged packet (htsim).
    // Out of line: the receiver's demultiplexer stays as small as before NDP.
    #[inline(never)]
    pub(super) fn ndp_timeout(&mut self, fid: u32) {
        let payload = self.scenario.packets.payload as u64;
        let f = &mut self.flows[fid as usize];
        let eqds = f.path.transport == Transport::Eqds;
        if eqds && f.inflight() == 0 {
            // Nothing to resend: data waits for pulls the receiver does not
            // know it owes.
            self.eqds_declare(fid);
            return;
        }
        let f = &mut self.flows[fid as usize];
        let una = f.ctl.snd_una;
        let nxt = if eqds { f.ctl.snd_nxt.min(una - una % payload + payload) } else { f.ctl.snd_nxt };
        let n = nd!(f);
        // Packets start at multiples of the payload: every packet is full
        // but a flow's last.
        let mut at = una - una % payload;
        let mut holes = n.acked.iter().copied().peekable();
        while at < nxt {
            while holes.peek().is_some_and(|r| r.1 <= at) {
                holes.next();
            }
            if holes.peek().is_none_or(|r| r.0 > at) {
                n.resend.insert(at);
            }
            at += payload;
        }
        n.unpulled = n.unpulled.max(n.resend.len().min(u32::MAX as usize) as u32);
        self.schedule_flow(fid);
    }
}

/// The first feedback of any kind ends an EQDS sender's speculation: from
/// then on it sends only on pulls (NDP flows never speculate). Returns
/// whether it did.
#[inline]
fn end_speculation(n: &mut crate::flow::NdpFlow) -> bool {
    let was = n.speculating;
    if was {
        n.speculating = false;
        n.unpulled = 0;
    }
    was
}

/// The packet NDP flow `f` sends next: the lowest one to resend, or new
/// data; spends one unit of credit (the initial window's first).
#[inline]
pub(super) fn next_data(f: &mut crate::flow::Flow) -> u64 {
    let nxt = f.ctl.snd_nxt;
    let n = nd!(f);
    if n.unpulled > 0 {
        n.unpulled -= 1;
    } else {
        n.pulls_spent += 1;
    }
    n.resend.pop_first().unwrap_or(nxt)
}

#[cfg(test)]
mod tests {
    use super::unwrap_pull;

    #[test]
    fn pull_numbers_are_restored_from_their_low_bits() {
        assert_eq!(unwrap_pull(0, 1), 1);
        assert_eq!(unwrap_pull(10, 7), 7, "an older pull");
        assert_eq!(unwrap_pull(10, 12), 12);
        let max = (1u64 << 32) + 5;
        assert_eq!(unwrap_pull(max, 9), max + 4, "a newer pull across the 32-bit wrap");
        assert_eq!(unwrap_pull(max, 2), max - 3, "an older one");
        assert_eq!(unwrap_pull(max, u32::MAX), (1u64 << 32) - 1, "older, before the wrap");
    }
}
