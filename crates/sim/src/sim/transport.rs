//! Transports: the sender half of loss recovery.
//!
//! A transport is a variant of [`Transport`], chosen per flow at creation
//! (`FlowPath::transport`); its sender half is here (what an ACK, a NACK and
//! a timeout do to the sequence state), its receiver half in `receiver.rs`
//! (what arriving data makes the receiver send) and, for receiver-driven
//! transports, `grants.rs` (request-to-send, the receiver's grant scheduler,
//! and the grant that opens the sender's credit gate).
//! Each half dispatches with a `match` on the variant where the transports
//! differ: no trait object, no per-packet indirection.
//!
//! The transports share one sequence space per flow (`snd_una`, `snd_nxt`
//! in [`FlowCtl`](crate::cc::FlowCtl)) and differ in how they learn of a loss
//! and what they resend:
//!
//! * go-back-N (RDMA): a NACK names the expected byte and the sender goes back
//!   to it; the timeout is fixed (`host.rto`);
//! * TCP (NewReno, RFC 6582): three duplicate ACKs retransmit the first
//!   unacknowledged segment and start fast recovery, where a partial ACK
//!   retransmits the next hole; the timeout is RFC 6298's `srtt + 4 rttvar`,
//!   at least `host.rto_min`, doubled on every timeout. With `host.sack`,
//!   selective acknowledgements and RFC 6675 recovery instead of NewReno's
//!   (`crate::sack`; [`tcp_sack_on_ack`], [`sack_sent`]);
//! * pFabric: the receiver keeps out-of-order data and ACKs every packet
//!   with the count of bytes it holds beyond the cumulative ACK (the sender
//!   lowers its packets' rank by them); duplicate ACKs trigger nothing; the
//!   fixed timeout (`host.rto`) goes back to the first unacknowledged byte,
//!   and after `host.pfabric_probe_after` timeouts in a row the flow sends a
//!   header-size probe per timeout instead of data until an ACK or the
//!   probe's reply arrives;
//! * pHost: tokens name the packets to send, so the receiver re-requests
//!   what it misses (`grants.rs`); the receiver acknowledges once, at the
//!   end; the sender's timeout only resends its RTS;
//! * Homa (`homa.rs`): the receiver asks for what it misses with RESEND
//!   after its own timeout; it acknowledges once, at the end; the sender's
//!   timeout only resends its first packet (which announces the message);
//! * credit (test/teaching): go-back-N recovery, plus a credit gate: data
//!   goes only below the offset the receiver has granted
//!   ([`Flow::transport_allows`]); a go-back resends below the grant.
//!
//! The receiver half is in `receiver.rs`. ACK and NACK handling here move the
//! sequence state first and then run the CC's callbacks (`cc_glue.rs`), so an
//! algorithm sees the flow as the transport left it.
//!
//! Timeouts are not timers: one `RtoSweep` event runs every quarter of the
//! shortest timeout and checks every flow. A per-flow timer would need a heap
//! push per ACK (or thousands of stale entries) and one pending event per flow;
//! the sweep costs a few nanoseconds per flow per period, and a timeout fires
//! between 1 and 1.25 timeouts after the last progress. The sweep visits only
//! the flows that have started and not finished ([`SweepSet`]), in flow-id
//! order as a scan of all flows would: a Poisson workload creates every flow
//! of the run at set-up, and scanning thousands of idle 900-byte flows every
//! period cost the 144-host fabric about 3 cache misses to memory per packet-hop.

use super::Simulation;
use crate::cc::{AckEvent, CcCtx, CongestionControl, Transport};
use crate::engine::Event;
use crate::flow::Flow;
use crate::packet::PktId;
use crate::sack::{SackBlocks, SackBoard, DUP_THRESH};
use crate::units::{Time, SEC, US};

/// The flows the timeout sweep visits: every flow that has started and had
/// not finished when the sweep last looked, by flow id. A flow joins when it
/// starts (`app.rs`) and leaves at the first sweep after it finished, so the
/// sweep's cost follows the flows in progress, not all the flows of the run.
#[derive(Clone, Debug, Default)]
pub(crate) struct SweepSet {
    /// Flow ids, ascending unless `unsorted`.
    flows: Vec<u32>,
    /// A flow started out of id order since the last sweep.
    unsorted: bool,
    /// The sweep period, computed at the first sweep (it depends on the flows'
    /// transports only, which do not change).
    period: Time,
}

impl SweepSet {
    /// Flow `fid` started.
    #[inline]
    pub(crate) fn started(&mut self, fid: u32) {
        self.unsorted |= self.flows.last().is_some_and(|&l| l > fid);
        self.flows.push(fid);
    }
}

impl Simulation {
    /// An ACK reached the sender of its flow.
    pub(super) fn on_ack(&mut self, pid: PktId) {
        let now = self.now;
        let (fid, seq, ecn, ts, hops, sacked, pint) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.ecn_echo(), p.ts_tx, p.hops, p.payload as u64, p.pint)
        };
        if matches!(self.flows[fid as usize].path.transport, Transport::Ndp | Transport::Eqds) {
            // Its ACK names one packet, not a cumulative point.
            self.ndp_on_ack(pid);
            return;
        }
        let rto_min = self.scenario.host.rto_min.0;
        let sack_blocks = self.flows[fid as usize].ctl.sack_pipe.is_some().then(|| self.pool.sack(pid));
        let mss = self.scenario.packets.payload as u64;
        let f = &mut self.flows[fid as usize];
        let rtt = now - ts;
        f.stats.min_rtt = Some(f.stats.min_rtt.map_or(rtt, |m| m.min(rtt)));
        let newly = seq.saturating_sub(f.ctl.snd_una);
        // `host.newreno_timer = "first_partial_ack"` (RFC 6582 section 3.2,
        // step 5; ns-3): in NewReno recovery only the first partial ACK
        // restarts the timer, so a window with more holes than a timeout's
        // worth of round trips ends in a timeout instead of being repaired
        // one hole per round trip.
        // (The transport first: other flows never read `f.tcp`'s line here.)
        let impatient = f.path.transport == Transport::Tcp
            && f.tcp.first_partial_ack_timer
            && sack_blocks.is_none()
            && f.tcp.partial_acked
            && f.tcp.recover.is_some_and(|r| seq < r);
        if newly > 0 {
            f.ctl.snd_una = seq;
            if !impatient {
                f.snd.last_progress = now;
            }
            if f.ctl.snd_nxt < seq {
                f.ctl.snd_nxt = seq;
            }
        }
        // The transport's own sender bookkeeping.
        let mut sack_delivery = (0, 0);
        let (recovery_ended, fast_retransmit) = match f.path.transport {
            Transport::Tcp => match &sack_blocks {
                None => tcp_on_ack(f, seq, newly, rtt, rto_min),
                Some(blocks) => {
                    let (ended, fr, delivered, high) = tcp_sack_on_ack(f, seq, newly, rtt, rto_min, blocks, mss);
                    sack_delivery = (delivered, high);
                    (ended, fr)
                }
            },
            Transport::PFabric => {
                // Any ACK shows the path works: probe mode (if on) ends.
                f.snd.sacked = sacked;
                f.snd.timeouts_in_row = 0;
                f.snd.probing = false;
                (false, false)
            }
            Transport::GoBackN
            | Transport::Credit
            | Transport::PHost
            | Transport::Homa
            | Transport::Hopass
            | Transport::Ndp
            | Transport::Eqds => (false, false),
        };
        if f.snd.finished.is_none() {
            let old_rate = f.ctl.rate;
            let old_timer = f.ctl.timer;
            let int = self.pool.int_records(pid);
            f.stats.last_int_hops = int.len() as u8;
            let ev = AckEvent {
                ack_seq: seq,
                newly_acked: newly,
                dup_acks: f.tcp.dup_acks,
                in_recovery: f.tcp.recover.is_some(),
                recovery_ended,
                ecn_echo: ecn,
                rtt,
                hops: hops as u32,
                int,
                pint,
                delivered: sack_delivery.0,
                sack_high: sack_delivery.1,
            };
            let mut ctx = CcCtx { now, flow: &mut f.ctl };
            f.cc.on_ack(&mut ctx, &ev);
            if fast_retransmit {
                f.cc.on_fast_retransmit(&mut ctx);
            }
            self.after_cc(fid, old_rate, old_timer);
        }
        self.pool.free(pid);
        self.after_progress(fid);
    }

    /// A NACK reached the sender of its flow: go back to the byte it expects.
    pub(super) fn on_nack(&mut self, pid: PktId) {
        let (fid, seq, ts) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.ts_tx)
        };
        if matches!(self.flows[fid as usize].path.transport, Transport::Ndp | Transport::Eqds) {
            // Its NACK names a cut packet to resend, not a point to go back to.
            self.ndp_on_nack(pid);
            return;
        }
        self.pool.free(pid);
        let rtt = self.now.saturating_sub(ts);
        let f = &mut self.flows[fid as usize];
        f.stats.nacks += 1;
        f.mi.nacks += 1;
        if seq >= f.ctl.snd_una && f.snd.finished.is_none() {
            // Everything below `seq` has arrived: go back to it.
            if seq > f.ctl.snd_una {
                f.ctl.snd_una = seq;
                f.snd.last_progress = self.now;
            }
            f.ctl.snd_nxt = seq;
        }
        self.cc_event(fid, |cc, ctx| cc.on_nack(ctx, seq, rtt));
        self.after_progress(fid);
    }

    /// Bookkeeping after the cumulative ACK may have moved: completions and rescheduling.
    pub(super) fn after_progress(&mut self, fid: u32) {
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        while f.snd.msg_next < f.snd.messages.len() && f.ctl.snd_una >= f.snd.messages[f.snd.msg_next].1 {
            f.snd.messages[f.snd.msg_next].2 = Some(now);
            f.snd.msg_next += 1;
        }
        if f.snd.finished.is_none() && f.ctl.snd_una >= f.ctl.app_limit && f.ctl.app_limit == f.ctl.size {
            f.snd.finished = Some(now);
            f.snd.timer_gen = f.snd.timer_gen.wrapping_add(1);
            self.agent_ended(fid, false);
            return;
        }
        self.schedule_flow(fid);
    }

    /// Period of the timeout sweep: a quarter of the shortest timeout any flow
    /// can have (at least 1 us).
    pub(super) fn rto_sweep_period(&self) -> Time {
        let h = &self.scenario.host;
        let tcp = self.flows.iter().any(|f| f.path.transport == Transport::Tcp);
        let shortest = if tcp { h.rto.0.min(h.rto_min.0) } else { h.rto.0 };
        (shortest / 4).max(US)
    }

    /// The `RtoSweep` event: every flow with data in flight and no progress
    /// for its timeout goes back to its first unacknowledged byte.
    pub(super) fn rto_sweep(&mut self) {
        let now = self.now;
        let probe_after = self.scenario.host.pfabric_probe_after;
        // Same order and same checks as a scan of every flow: flows that have
        // not started or have finished are skipped below in either case.
        let mut visit = std::mem::take(&mut self.sweep.flows);
        if std::mem::take(&mut self.sweep.unsorted) {
            visit.sort_unstable();
        }
        visit.retain(|&fid| self.flows[fid as usize].snd.finished.is_none());
        for &fid in &visit {
            let f = &mut self.flows[fid as usize];
            // A probing flow has nothing in flight but its probe, which may be
            // lost too; a pHost flow may wait for tokens with nothing in flight.
            if !f.snd.started
                || f.snd.finished.is_some()
                || (f.inflight() == 0
                    && !f.snd.probing
                    && !matches!(f.path.transport, Transport::PHost | Transport::Hopass | Transport::Eqds))
                || now < f.snd.last_progress + f.snd.rto
            {
                continue;
            }
            // An EQDS flow with nothing in flight lost nothing: it waits for
            // pulls, and only declares its demand again below.
            if f.path.transport != Transport::Eqds || f.inflight() > 0 {
                f.stats.timeouts += 1;
            }
            f.snd.last_progress = now;
            if matches!(f.path.transport, Transport::PHost | Transport::Hopass) {
                // Nothing heard for a timeout: the RTS, the tokens or the
                // final ACK may be lost; asking again recovers each.
                self.send_rts(fid);
                continue;
            }
            if f.path.transport == Transport::Homa {
                // Nothing heard for a timeout: the message may be unknown to
                // its receiver, or its final ACK lost.
                self.homa_sender_timeout(fid);
                continue;
            }
            if matches!(f.path.transport, Transport::Ndp | Transport::Eqds) {
                // A header dropped by a full header queue (or a packet lost
                // on a link) got no NACK: resend what is unacknowledged.
                self.ndp_timeout(fid);
                continue;
            }
            f.ctl.snd_nxt = f.ctl.snd_una;
            match f.path.transport {
                Transport::Tcp => {
                    f.snd.rto = (f.snd.rto * 2).min(64 * SEC);
                    f.tcp.dup_acks = 0;
                    f.tcp.recover = None;
                    f.snd.retx = None;
                    if let Some(b) = f.sack.as_deref_mut() {
                        b.timeout(f.snd.max_sent);
                        f.ctl.sack_pipe = Some(0);
                    }
                }
                Transport::PFabric => {
                    f.snd.timeouts_in_row += 1;
                    if f.snd.timeouts_in_row >= probe_after {
                        // Probe mode: the CC's reaction below sends the probe
                        // (`after_cc` sends a requested probe alone when the
                        // flow may not send data).
                        f.snd.probing = true;
                        f.ctl.probe_requested = true;
                    }
                }
                // The fixed timeout stays; a credit flow resends below its grant.
                Transport::GoBackN
                | Transport::Credit
                | Transport::PHost
                | Transport::Homa
                | Transport::Hopass
                | Transport::Ndp
                | Transport::Eqds => {}
            }
            self.cc_event(fid, |cc, ctx| cc.on_timeout(ctx));
            self.schedule_flow(fid);
        }
        // Flows cannot start during the sweep (only `AppData` starts them),
        // but keep any that did, after the visited ones.
        let started = std::mem::replace(&mut self.sweep.flows, visit);
        for fid in started {
            self.sweep.started(fid);
        }
        if self.sweep.period == 0 {
            self.sweep.period = self.rto_sweep_period();
        }
        self.events.push(now + self.sweep.period, Event::RtoSweep { host: 0 });
    }
}

/// TCP's part of an ACK (RFC 6298 estimator, NewReno duplicate ACKs and
/// recovery), after the cumulative ACK moved `newly` bytes to `seq`: returns
/// (recovery ended, fast retransmit now).
#[inline(always)]
fn tcp_on_ack(f: &mut Flow, seq: u64, newly: u64, rtt: Time, rto_min: Time) -> (bool, bool) {
    let mut recovery_ended = false;
    let mut fast_retransmit = false;
    // RFC 6298 estimator; the ACK echoes the send time of the very
    // packet it answers, so retransmissions give valid samples too.
    let r = rtt as f64;
    let (srtt, var) = match f.tcp.srtt {
        None => (r, r / 2.0),
        Some((s, v)) => (0.875 * s + 0.125 * r, 0.75 * v + 0.25 * (s - r).abs()),
    };
    f.tcp.srtt = Some((srtt, var));
    if newly > 0 {
        f.snd.rto = ((srtt + 4.0 * var) as Time).max(rto_min);
        f.tcp.dup_acks = 0;
        if let Some(rec) = f.tcp.recover {
            if seq >= rec {
                f.tcp.recover = None;
                recovery_ended = true;
            } else {
                // NewReno partial ACK: the next hole is lost too.
                f.snd.retx = Some(seq);
                f.tcp.partial_acked = true;
            }
        }
    } else if f.inflight() > 0 && f.snd.finished.is_none() {
        f.tcp.dup_acks += 1;
        if f.tcp.dup_acks == 3 && f.tcp.recover.is_none() {
            f.tcp.recover = Some(f.ctl.snd_nxt);
            f.tcp.partial_acked = false;
            f.snd.retx = Some(f.ctl.snd_una);
            fast_retransmit = true;
        }
    }
    (recovery_ended, fast_retransmit)
}

/// TCP's part of an ACK on a SACK flow (RFC 6675): the RFC 6298 estimator,
/// the scoreboard, entry into and exit from loss recovery. Returns (recovery
/// ended, fast retransmit now, bytes newly delivered, end of the highest
/// newly SACKed range).
#[inline]
fn tcp_sack_on_ack(
    f: &mut Flow,
    seq: u64,
    newly: u64,
    rtt: Time,
    rto_min: Time,
    blocks: &SackBlocks,
    mss: u64,
) -> (bool, bool, u64, u64) {
    let r = rtt as f64;
    let (srtt, var) = match f.tcp.srtt {
        None => (r, r / 2.0),
        Some((s, v)) => (0.875 * s + 0.125 * r, 0.75 * v + 0.25 * (s - r).abs()),
    };
    f.tcp.srtt = Some((srtt, var));
    let Some(b) = f.sack.as_deref_mut() else { return (false, false, 0, 0) };
    let (was_sacked, newly_sacked, high) = b.on_ack(f.ctl.snd_una, blocks);
    let delivered = newly.saturating_sub(was_sacked) + newly_sacked;
    let mut recovery_ended = false;
    let mut fast_retransmit = false;
    if newly > 0 {
        f.snd.rto = ((srtt + 4.0 * var) as Time).max(rto_min);
        f.tcp.dup_acks = 0;
        if f.tcp.recover.is_some_and(|rec| seq >= rec) {
            f.tcp.recover = None;
            recovery_ended = true;
        }
    } else if f.ctl.snd_nxt > f.ctl.snd_una && f.snd.finished.is_none() {
        f.tcp.dup_acks += 1;
    }
    // After a timeout, go on past data the receiver reports it holds.
    if let Some(end) = b.sacked_at(f.ctl.snd_nxt) {
        f.ctl.snd_nxt = end;
    }
    let (una, nxt) = (f.ctl.snd_una, f.ctl.snd_nxt);
    if f.tcp.recover.is_some() {
        b.find_lost_retransmissions(una, mss);
    }
    let mut pipe = b.update(una, nxt, mss, f.tcp.recover.is_some());
    // RFC 6675 section 5: recovery starts on the third duplicate ACK or as
    // soon as the first unacknowledged byte is lost, once per window, and
    // not before the data sent before a timeout is acknowledged.
    if f.tcp.recover.is_none()
        && !recovery_ended
        && una >= b.rto_recover
        && nxt > una
        && f.snd.finished.is_none()
        && (f.tcp.dup_acks >= DUP_THRESH as u32 || b.lost_below > una)
    {
        f.tcp.recover = Some(nxt);
        b.high_rxt = una;
        f.snd.retx = Some(una);
        fast_retransmit = true;
        pipe = b.update(una, nxt, mss, true);
    }
    f.ctl.sack_pipe = Some(pipe);
    (recovery_ended, fast_retransmit, delivered, high)
}

/// A SACK flow sent `payload` bytes at `seq` (`new_data`: at `snd_nxt`, which
/// has advanced): the pipe grows, a retransmission moves `HighRxt` and
/// `NextSeg` on, and new data skips what the receiver already holds.
#[inline]
pub(super) fn sack_sent(
    b: &mut SackBoard,
    ctl: &mut crate::cc::FlowCtl,
    in_recovery: bool,
    seq: u64,
    payload: u64,
    new_data: bool,
    mss: u64,
) {
    if new_data {
        if let Some(end) = b.sacked_at(ctl.snd_nxt) {
            ctl.snd_nxt = end;
        }
        ctl.sack_pipe = Some(ctl.sack_pipe.unwrap_or(0) + payload);
    } else if in_recovery {
        b.retransmitted(seq, ctl.snd_nxt);
        b.high_rxt = b.high_rxt.max(seq + payload);
        ctl.sack_pipe = Some(b.update(ctl.snd_una, ctl.snd_nxt, mss, true));
    } else {
        ctl.sack_pipe = Some(ctl.sack_pipe.unwrap_or(0) + payload);
    }
}
