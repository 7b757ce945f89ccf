//! Selective acknowledgements for TCP flows (RFC 2018) and the sender's
//! SACK-based loss recovery (RFC 6675), on with `host.sack = true`.
//!
//! Without SACK a TCP sender learns of one hole per round trip (NewReno), so
//! a slow-start or Startup overshoot that drops hundreds of segments at once
//! takes hundreds of round trips to repair. With SACK:
//!
//! * the receiver (`sim/receiver.rs`) puts up to [`SACK_BLOCKS`] of the
//!   out-of-order ranges it holds on every ACK: first the one holding the
//!   segment that triggered the ACK, then the others from the highest down
//!   (the most recently received, as RFC 2018 asks, when the network keeps
//!   order). An ACK carries them in the packet pool's side table
//!   ([`crate::packet::PacketPool::set_sack`]), so packets of other flows do
//!   not grow;
//! * the sender keeps a [`SackBoard`] (boxed in `Flow::sack`, present only on
//!   SACK flows): the SACKed ranges above the cumulative ACK, merged, and from
//!   them RFC 6675's quantities: `IsLost` (more than `(DupThresh - 1) x MSS`
//!   bytes SACKed above a byte, DupThresh 3), the `pipe` (bytes sent and not
//!   cumulatively acknowledged, less the SACKed ones, less the lost ones,
//!   plus the retransmitted ones) and `NextSeg` (the lowest lost byte above
//!   `HighRxt`, else new data);
//! * the transport (`sim/transport.rs`) enters recovery on the third
//!   duplicate ACK or as soon as the first unacknowledged byte is lost,
//!   once per window (`RecoveryPoint` = the highest byte sent), retransmits
//!   the first segment at once and then sends `NextSeg` whenever `pipe <
//!   cwnd` (the NIC's gate, `Flow::can_send`, reads the pipe rather than the
//!   bytes in flight); a timeout clears the board (the receiver may have
//!   reneged, RFC 2018) and no new recovery starts before the data sent
//!   before it is acknowledged (RFC 6675 5.1);
//! * the congestion control reads the pipe (`FlowCtl::sack_pipe`) and, per
//!   ACK, the bytes it newly delivered, SACKed or cumulatively acknowledged
//!   (`AckEvent::delivered`), and the highest byte it newly SACKed
//!   (`AckEvent::sack_high`, the most recently sent segment delivered, for
//!   BBR's delivery-rate samples).
//!
//! Beyond RFC 6675, which leaves a lost retransmission to the timeout: a
//! segment still missing once more than two segments' worth of data sent
//! after its retransmission is SACKed is resent at once, before other lost
//! segments ([`SackBoard::find_lost_retransmissions`], after Linux's
//! lost-retransmission detection). Without it, a Startup overshoot that also drops
//! retransmissions costs a timeout each time, and a timeout resets BBR's
//! full-pipe test, so BBR never left Startup on a one-BDP buffer.
//!
//! Not modelled: D-SACK, the rescue retransmission and rule 3 of `NextSeg`
//! (a flow that runs out of new data does not resend unlost holes).
//!
//! Cost: the board's work per ACK is linear in the number of SACKed ranges
//! (one or a few after a burst loss, about the number of losses of one
//! window with random loss); its vectors keep their memory, so steady state
//! allocates nothing. Flows without SACK are told apart by
//! `FlowCtl::sack_pipe` (in the hot control state) and never touch the box;
//! what they still pay (the pipe's `match` in the NIC's gate, two more
//! `AckEvent` fields) measured +0.9 % instructions per packet-hop on the
//! golden DCQCN many-to-one and +1.2 % on the DCTCP one (callgrind,
//! `run_scenario`, against the parent commit).

/// SACK blocks an ACK carries (TCP's option space holds 3 with timestamps, 4 without).
pub const SACK_BLOCKS: usize = 3;

/// RFC 6675's DupThresh: a byte is lost once more than `DUP_THRESH - 1`
/// segments' worth of data above it has been SACKed.
pub const DUP_THRESH: u64 = 3;

/// The SACK blocks of one ACK: byte ranges `[start, end)` the receiver holds
/// beyond the cumulative ACK; unused entries are `(0, 0)`.
pub type SackBlocks = [(u64, u64); SACK_BLOCKS];

/// A SACK sender's scoreboard (RFC 6675 section 3).
#[derive(Clone, Debug, Default)]
pub struct SackBoard {
    /// SACKed ranges above the cumulative ACK: sorted, disjoint, not adjacent.
    pub blocks: Vec<(u64, u64)>,
    /// Bytes in `blocks`.
    pub sacked: u64,
    /// `HighRxt`: the end of the highest retransmission of this recovery.
    pub high_rxt: u64,
    /// Every byte below this that is not SACKed is lost (`IsLost`).
    pub lost_below: u64,
    /// `NextSeg` rule 1 in recovery: the first lost byte above `HighRxt` and
    /// the end of its hole (the next SACKed byte).
    pub next_lost: Option<(u64, u64)>,
    /// After a timeout: no recovery starts until the cumulative ACK reaches
    /// this (the highest byte sent before the timeout; RFC 6675 5.1).
    pub rto_recover: u64,
    /// Retransmissions not yet known delivered, in the order they left:
    /// each one's sequence number and `snd_nxt` when it left. Data sent
    /// after a retransmission that arrives (is SACKed) while the segment is
    /// still missing shows that the retransmission was lost too.
    pub rxt: std::collections::VecDeque<(u64, u64)>,
    /// Segments whose retransmission was lost: `NextSeg` sends them first.
    pub relost: std::collections::VecDeque<u64>,
}

impl SackBoard {
    /// Takes the blocks of an ACK whose cumulative ACK is `snd_una`: forgets
    /// what the cumulative ACK now covers and merges the new blocks. Returns
    /// (bytes SACKed before and now cumulatively acknowledged, bytes newly
    /// SACKed, end of the highest newly SACKed range or 0).
    pub fn on_ack(&mut self, snd_una: u64, blocks: &SackBlocks) -> (u64, u64, u64) {
        let mut covered = 0;
        let gone = self.blocks.partition_point(|r| r.1 <= snd_una);
        for r in &self.blocks[..gone] {
            covered += r.1 - r.0;
        }
        self.blocks.drain(..gone);
        if let Some(first) = self.blocks.first_mut() {
            if first.0 < snd_una {
                covered += snd_una - first.0;
                first.0 = snd_una;
            }
        }
        self.sacked -= covered;
        let mut newly = 0;
        let mut high = 0;
        for &(a, b) in blocks {
            let a = a.max(snd_una);
            if b <= a {
                continue;
            }
            let added = self.insert(a, b);
            if added > 0 {
                newly += added;
                high = high.max(b);
            }
        }
        (covered, newly, high)
    }

    /// Merges `[a, b)` into the ranges; returns the bytes that were not SACKed yet.
    fn insert(&mut self, a: u64, b: u64) -> u64 {
        let i = self.blocks.partition_point(|r| r.1 < a);
        let (mut lo, mut hi, mut already) = (a, b, 0);
        let mut j = i;
        while j < self.blocks.len() && self.blocks[j].0 <= b {
            let (ra, rb) = self.blocks[j];
            already += rb.min(b).saturating_sub(ra.max(a));
            lo = lo.min(ra);
            hi = hi.max(rb);
            j += 1;
        }
        let added = (b - a) - already;
        if added == 0 {
            return 0;
        }
        if j == i {
            self.blocks.insert(i, (lo, hi));
        } else {
            self.blocks[i] = (lo, hi);
            self.blocks.drain(i + 1..j);
        }
        self.sacked += added;
        added
    }

    /// Bytes SACKed below `x`.
    pub fn sacked_below(&self, x: u64) -> u64 {
        let mut n = 0;
        for &(a, b) in &self.blocks {
            if a >= x {
                break;
            }
            n += b.min(x) - a;
        }
        n
    }

    /// Bytes in `[snd_una, x)` neither SACKed nor cumulatively acknowledged.
    fn unsacked_below(&self, snd_una: u64, x: u64) -> u64 {
        x.saturating_sub(snd_una).saturating_sub(self.sacked_below(x))
    }

    /// Recomputes `IsLost`'s frontier and `NextSeg` after an ACK or a
    /// retransmission; returns the pipe. `in_recovery`: the flow is in SACK
    /// loss recovery (outside it, the pipe is the bytes in flight that are not
    /// SACKed, and nothing is resent).
    pub fn update(&mut self, snd_una: u64, snd_nxt: u64, mss: u64, in_recovery: bool) -> u64 {
        let mut above = 0;
        self.lost_below = snd_una;
        for &(a, b) in self.blocks.iter().rev() {
            above += b - a;
            if above > (DUP_THRESH - 1) * mss {
                self.lost_below = a;
                break;
            }
        }
        let outstanding = snd_nxt.saturating_sub(snd_una);
        let sacked = self.sacked_below(snd_nxt);
        self.next_lost = None;
        if !in_recovery {
            return outstanding - sacked;
        }
        let lost_below = self.lost_below.min(snd_nxt);
        let lost = self.unsacked_below(snd_una, lost_below);
        let retransmitted = self.unsacked_below(snd_una, self.high_rxt.min(snd_nxt));
        while self.relost.front().is_some_and(|&r| r < snd_una || self.sacked_at(r).is_some()) {
            self.relost.pop_front();
        }
        // Lost retransmissions count in `retransmitted` but have left the network.
        let relost = (self.relost.len() as u64 * mss).min(retransmitted);
        if let Some(&r) = self.relost.front() {
            self.next_lost = Some((r, self.hole_end(r)));
            return (outstanding - sacked - lost) + retransmitted - relost;
        }
        let mut x = self.high_rxt.max(snd_una);
        let mut hole_end = u64::MAX;
        for &(a, b) in &self.blocks {
            if b <= x {
                continue;
            }
            if a <= x {
                x = b;
            } else {
                hole_end = a;
                break;
            }
        }
        if x < lost_below {
            self.next_lost = Some((x, hole_end));
        }
        (outstanding - sacked - lost) + retransmitted - relost
    }

    /// Whether byte `seq` is SACKed; if so, the end of its range.
    pub fn sacked_at(&self, seq: u64) -> Option<u64> {
        let i = self.blocks.partition_point(|r| r.1 <= seq);
        self.blocks.get(i).filter(|r| r.0 <= seq).map(|r| r.1)
    }

    /// Where the hole holding `seq` ends: the start of the next SACKed range
    /// (`u64::MAX` if none is above `seq`).
    pub fn hole_end(&self, seq: u64) -> u64 {
        let i = self.blocks.partition_point(|r| r.1 <= seq);
        self.blocks.get(i).map_or(u64::MAX, |r| if r.0 > seq { r.0 } else { u64::MAX })
    }

    /// Whether the last retransmission of the first unacknowledged byte
    /// `snd_una` was lost: more than `(DUP_THRESH - 1) x mss` bytes sent
    /// after it have been SACKed while it is still missing (a path that keeps
    /// order delivers a retransmission before what is sent after it; Linux's
    /// lost-retransmission detection). Forgets the retransmission once the
    /// cumulative ACK has passed it.
    /// Finds the retransmissions that were lost: a segment still missing
    /// once more than `(DUP_THRESH - 1) x mss` bytes sent after its
    /// retransmission are SACKed (a path that keeps order delivers a
    /// retransmission before what is sent after it; Linux's
    /// lost-retransmission detection). They go to `relost`. The
    /// retransmissions are checked in the order they left, up to the first
    /// one that may still be on its way.
    pub fn find_lost_retransmissions(&mut self, snd_una: u64, mss: u64) {
        while let Some(&(seq, sent_before)) = self.rxt.front() {
            if seq < snd_una || self.sacked_at(seq).is_some() {
                self.rxt.pop_front();
            } else if self.sacked - self.sacked_below(sent_before) > (DUP_THRESH - 1) * mss {
                self.rxt.pop_front();
                self.relost.push_back(seq);
            } else {
                break;
            }
        }
    }

    /// A retransmission of `seq` left when the highest byte sent was
    /// `snd_nxt`; a segment that `NextSeg` took from `relost` leaves it.
    pub fn retransmitted(&mut self, seq: u64, snd_nxt: u64) {
        if self.relost.front() == Some(&seq) {
            self.relost.pop_front();
        }
        self.rxt.push_back((seq, snd_nxt));
    }

    /// A retransmission timeout: forget the SACKed ranges; `high` is the
    /// highest byte sent before it.
    pub fn timeout(&mut self, high: u64) {
        self.blocks.clear();
        self.sacked = 0;
        self.high_rxt = 0;
        self.lost_below = 0;
        self.next_lost = None;
        self.rto_recover = high;
        self.rxt.clear();
        self.relost.clear();
    }
}

/// The SACK blocks a receiver holding the out-of-order ranges `ooo` (sorted,
/// above its cumulative ACK) reports in an ACK triggered by the segment at
/// `seq`: the range holding `seq` first, then the others from the highest down.
pub fn receiver_blocks(ooo: &[(u64, u64)], seq: u64) -> SackBlocks {
    let mut out = [(0, 0); SACK_BLOCKS];
    let mut n = 0;
    let first = ooo.iter().position(|&(a, b)| a <= seq && seq < b);
    if let Some(i) = first {
        out[0] = ooo[i];
        n = 1;
    }
    for (i, &r) in ooo.iter().enumerate().rev() {
        if n == SACK_BLOCKS {
            break;
        }
        if Some(i) != first {
            out[n] = r;
            n += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn blocks(list: &[(u64, u64)]) -> SackBlocks {
        let mut b = [(0, 0); SACK_BLOCKS];
        b[..list.len()].copy_from_slice(list);
        b
    }

    #[test]
    fn blocks_merge_and_count_only_new_bytes() {
        let mut s = SackBoard::default();
        assert_eq!(s.on_ack(0, &blocks(&[(1000, 2000)])), (0, 1000, 2000));
        assert_eq!(s.on_ack(0, &blocks(&[(1000, 3000)])), (0, 1000, 3000));
        assert_eq!(s.on_ack(0, &blocks(&[(5000, 6000), (1000, 3000)])), (0, 1000, 6000));
        assert_eq!(s.blocks, vec![(1000, 3000), (5000, 6000)]);
        // A block bridging the gap joins both ranges.
        assert_eq!(s.on_ack(0, &blocks(&[(3000, 5000)])), (0, 2000, 5000));
        assert_eq!((s.blocks.clone(), s.sacked), (vec![(1000, 6000)], 5000));
        // The cumulative ACK passes part of the range: those bytes were SACKed before.
        assert_eq!(s.on_ack(2000, &blocks(&[])), (1000, 0, 0));
        assert_eq!((s.blocks.clone(), s.sacked), (vec![(2000, 6000)], 4000));
        assert_eq!(s.sacked_at(2500), Some(6000));
        assert_eq!(s.sacked_at(6000), None);
        // Reported bytes below the cumulative ACK are ignored.
        assert_eq!(s.on_ack(7000, &blocks(&[(6500, 8000)])), (4000, 1000, 8000));
        assert_eq!(s.blocks, vec![(7000, 8000)]);
    }

    #[test]
    fn is_lost_pipe_and_next_seg_follow_rfc_6675() {
        // 0..10 sent, segments 1, 2 and 4 lost, 3 and 5..9 SACKed.
        let mut s = SackBoard::default();
        s.on_ack(1000, &blocks(&[(5000, 10_000), (3000, 4000)]));
        // Outside recovery the pipe is the unSACKed bytes in flight: 1, 2, 4.
        assert_eq!(s.update(1000, 10_000, MSS, false), 3000);
        assert_eq!(s.next_lost, None);
        // More than 2 MSS SACKed above 4000: every hole below 5000 is lost.
        s.high_rxt = 1000;
        assert_eq!(s.update(1000, 10_000, MSS, true), 0);
        assert_eq!(s.lost_below, 5000);
        assert_eq!(s.next_lost, Some((1000, 3000)));
        // Segment 1 retransmitted: it counts in the pipe, NextSeg moves on.
        s.high_rxt = 2000;
        assert_eq!(s.update(1000, 10_000, MSS, true), 1000);
        assert_eq!(s.next_lost, Some((2000, 3000)));
        s.high_rxt = 3000;
        assert_eq!(s.update(1000, 10_000, MSS, true), 2000);
        assert_eq!(s.next_lost, Some((4000, 5000)), "the SACKed segment 3 is skipped");
        s.high_rxt = 5000;
        assert_eq!(s.update(1000, 10_000, MSS, true), 3000);
        assert_eq!(s.next_lost, None);
        // One segment SACKed above a hole is not enough to call it lost.
        let mut t = SackBoard::default();
        t.on_ack(0, &blocks(&[(1000, 2000)]));
        assert_eq!(t.update(0, 3000, MSS, true), 2000);
        assert_eq!((t.lost_below, t.next_lost), (0, None));
    }

    #[test]
    fn the_receiver_reports_the_newest_range_first_then_the_highest() {
        let ooo = [(10, 20), (30, 40), (50, 60), (70, 80)];
        assert_eq!(receiver_blocks(&ooo, 35), [(30, 40), (70, 80), (50, 60)]);
        assert_eq!(receiver_blocks(&ooo, 75), [(70, 80), (50, 60), (30, 40)]);
        // An in-order arrival: the highest ranges.
        assert_eq!(receiver_blocks(&ooo[..1], 0), [(10, 20), (0, 0), (0, 0)]);
    }
}
