//! Homa (Montazeri et al., SIGCOMM 2018; spec `rule_based_cc.md` 7.3): its
//! configuration, resolved once per run, and the per-message state both ends
//! keep. The protocol itself runs in `sim/homa.rs`; the end-host CC (line
//! rate, no window) is `cc/homa.rs`.
//!
//! Priorities are numbered as on a `priority` switch port: 0 is the most
//! urgent. Of the `P` data levels (`switch.priorities`, 8 as on commodity
//! switches), the highest `P_u` carry unscheduled packets and the lowest
//! `P_s = P - P_u` scheduled ones.
//!
//! Unscheduled priorities come from size cutoffs computed from the
//! workload's message-size CDF ([`unsched_cutoffs`]): the `P_u - 1` cutoffs
//! split the workload's unscheduled bytes (each message counted with at most
//! `RTTbytes`) into equal shares, smaller messages at higher priority (the
//! Homa simulator's `STATIC_CBF_GRADUATED` mode with
//! `unschedPrioUsageWeight` 1); a packet's level is looked up with the
//! bytes its message has left from that packet on (graduated). The split
//! `P_u` vs `P_s` follows the workload's share of unscheduled bytes
//! ([`unsched_levels`]) unless the overcommitment `k` is given, in which
//! case `P_s = k` as in the simulator (`adaptiveSchedPrioLevels =
//! numSendersToKeepGranted`).

use crate::units::Time;
use crate::workload::Cdf;
use std::collections::VecDeque;

/// Homa's parameters for one run (from `host.homa_*`, the workload's CDF
/// and the paths of the Homa flows).
#[derive(Clone, Debug, PartialEq)]
pub struct HomaParams {
    /// Bytes a sender may send in one round trip at line rate: sent
    /// unscheduled at a message's start, and kept granted-but-not-received
    /// per active message by the receiver.
    pub rtt_bytes: u64,
    /// Data priority levels `P` (the switches' `switch.priorities`).
    pub levels: u8,
    /// Levels for unscheduled packets `P_u` (the highest ones, 0 to `P_u - 1`).
    pub unsched_levels: u8,
    /// Overcommitment `k`: messages (one per sender) a receiver grants to at once.
    pub overcommit: u32,
    /// The `P_u - 1` unscheduled cutoffs, ascending: a packet whose message
    /// has `r` bytes left from it on uses the number of cutoffs below `r`.
    pub cutoffs: Vec<u64>,
    /// Receiver: time without data for a message that has granted (or
    /// unscheduled) bytes outstanding after which it sends a RESEND.
    pub resend_timeout: Time,
    /// `boostTailBytesPrio`: once less than `rtt_bytes` are left to grant, a
    /// grant uses the unscheduled level of the message's remaining bytes if
    /// that is more urgent than its scheduled level.
    pub boost_tail: bool,
}

impl HomaParams {
    /// Bytes of a message of `size` bytes sent unscheduled.
    #[inline]
    pub fn unsched_bytes(&self, size: u64) -> u64 {
        size.min(self.rtt_bytes)
    }

    /// Priority of an unscheduled packet whose message has `remaining`
    /// bytes left from that packet on.
    #[inline]
    pub fn unsched_prio(&self, remaining: u64) -> u8 {
        let below = self.cutoffs.partition_point(|&c| c < remaining);
        below.min(self.unsched_levels as usize - 1) as u8
    }

    /// Priority a receiver grants to the message of rank `rank` (0 best)
    /// among `active` messages it grants to: the highest scheduled level
    /// to the best one, the next level to the next, capped at the lowest;
    /// with fewer active messages than scheduled levels, the lowest levels
    /// (a shorter message arriving later can then get a higher one without
    /// moving the others).
    #[inline]
    pub fn sched_prio(&self, rank: usize, active: usize) -> u8 {
        let sched = (self.levels - self.unsched_levels) as usize;
        let level = self.unsched_levels as usize + rank + sched.saturating_sub(active);
        level.min(self.levels as usize - 1) as u8
    }
}

/// The unscheduled cutoffs of a workload: `levels - 1` message sizes that
/// split the bytes sent unscheduled (each message's first `rtt_bytes` at
/// most) into `levels` equal shares, smaller messages first.
///
/// Cutoff `j` (1-based) is the smallest size `x` whose messages of at most
/// `x` bytes carry at least `j / levels` of the unscheduled bytes. A step
/// CDF puts whole point masses on one side (a cutoff is one of its sizes,
/// and two cutoffs may coincide); an interpolated CDF spreads a segment's
/// probability uniformly over its sizes, so a cutoff may fall inside it
/// (rounded up to a whole byte).
pub fn unsched_cutoffs(cdf: &Cdf, rtt_bytes: u64, levels: u8) -> Vec<u64> {
    let cap = rtt_bytes as f64;
    let total = capped_bytes_upto(cdf, cap, f64::INFINITY);
    let pts = cdf.points();
    let mut cutoffs = Vec::with_capacity(levels.saturating_sub(1) as usize);
    for j in 1..levels as usize {
        let target = total * j as f64 / levels as f64;
        // Tolerance for the sums' rounding: a point exactly at the target counts.
        let reached = |x: f64| capped_bytes_upto(cdf, cap, x) >= target * (1.0 - 1e-12);
        let i = pts.iter().position(|&(x, _)| reached(x)).unwrap_or(pts.len() - 1);
        let (xi, _) = pts[i];
        let lo = if i == 0 { 0.0 } else { pts[i - 1].0 };
        let x = if cdf.is_step() || i == 0 || lo >= xi || reached(lo) {
            xi
        } else {
            // Inside the segment (lo, xi]: the capped bytes grow continuously.
            let (mut a, mut b) = (lo, xi);
            for _ in 0..100 {
                let m = 0.5 * (a + b);
                if reached(m) {
                    b = m;
                } else {
                    a = m;
                }
            }
            b
        };
        cutoffs.push((x - 1e-6).ceil().max(0.0) as u64);
    }
    cutoffs
}

/// Share of a workload's bytes sent unscheduled (each message's first
/// `rtt_bytes` at most).
pub fn unsched_share(cdf: &Cdf, rtt_bytes: u64) -> f64 {
    let mean = cdf.mean();
    if mean <= 0.0 {
        return 1.0;
    }
    cdf.mean_capped(rtt_bytes as f64) / mean
}

/// Unscheduled levels `P_u` of `levels` data levels for a workload whose
/// unscheduled bytes are `share` of all: in proportion, at least one level
/// for each kind.
pub fn unsched_levels(share: f64, levels: u8) -> u8 {
    let p = levels as f64;
    ((share * p).round() as i64).clamp(1, levels as i64 - 1) as u8
}

/// Expected bytes of `min(size, cap)` over the messages of at most `x`
/// bytes (the unnormalised cumulative-bytes function of the CDF).
fn capped_bytes_upto(cdf: &Cdf, cap: f64, x: f64) -> f64 {
    // The integral of min(s, cap) over s in [a, b].
    let integral = |a: f64, b: f64| -> f64 {
        if b <= cap {
            0.5 * (b * b - a * a)
        } else if a >= cap {
            cap * (b - a)
        } else {
            0.5 * (cap * cap - a * a) + cap * (b - cap)
        }
    };
    let mut g = 0.0;
    let (mut px, mut pc) = (0.0, 0.0);
    for (i, &(xi, ci)) in cdf.points().iter().enumerate() {
        let dc = ci - pc;
        if cdf.is_step() || i == 0 || xi <= px {
            // A point mass at xi.
            if xi <= x {
                g += xi.min(cap) * dc;
            }
        } else if x > px && dc > 0.0 {
            // Uniform over (px, xi].
            let hi = xi.min(x);
            g += dc / (xi - px) * integral(px, hi);
        }
        px = xi;
        pc = ci;
    }
    g
}

/// Homa's state of one message (a flow), both halves. Boxed in
/// [`Flow::homa`](crate::flow::Flow::homa) and present on Homa flows only.
#[derive(Clone, Debug, Default)]
pub struct HomaFlow {
    /// Sender: ranges to send again before new data, asked for by RESENDs
    /// (or the sender's own timeout): (from, to, priority).
    pub resend: VecDeque<(u64, u64, u8)>,
    /// Sender: BUSY packets sent (a RESEND arrived while the NIC served
    /// messages with fewer bytes left).
    pub busy_sent: u64,
    /// Receiver: a data packet has arrived, so the receiver knows the
    /// message (its size and unscheduled bytes).
    pub known: bool,
    /// Receiver: distinct payload bytes received (in order or not).
    pub received: u64,
    /// Receiver: the last data packet, grant or BUSY of the message (the
    /// RESEND timer runs from it).
    pub last_heard: Time,
    /// Receiver: no grant before this time (one grant per packet time).
    pub next_grant_at: Time,
    /// Receiver: grants sent.
    pub grants: u64,
    /// Receiver: the priority of the last grant.
    pub grant_prio: u8,
    /// Receiver: RESEND packets sent.
    pub resends: u64,
    /// Receiver: BUSY packets received.
    pub busy_heard: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(unsched_levels: u8, cutoffs: Vec<u64>) -> HomaParams {
        HomaParams {
            rtt_bytes: 10_000,
            levels: 8,
            unsched_levels,
            overcommit: 9,
            cutoffs,
            resend_timeout: 1,
            boost_tail: true,
        }
    }

    #[test]
    fn scheduled_levels_follow_the_rank_from_the_lowest_ones_up() {
        let p = params(1, vec![]);
        // One active message: the lowest level; three: the three lowest.
        assert_eq!(p.sched_prio(0, 1), 7);
        assert_eq!((0..3).map(|r| p.sched_prio(r, 3)).collect::<Vec<_>>(), vec![5, 6, 7]);
        // P_s = 7 active: levels 1 to 7; more than P_s: the extra ones share the lowest.
        assert_eq!((0..7).map(|r| p.sched_prio(r, 7)).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6, 7]);
        assert_eq!((0..9).map(|r| p.sched_prio(r, 9)).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6, 7, 7, 7]);
        // P_u = 6: the scheduled levels are 6 and 7.
        let p = params(6, vec![100, 200, 300, 400, 500]);
        assert_eq!((p.sched_prio(0, 2), p.sched_prio(1, 2), p.sched_prio(0, 1)), (6, 7, 7));
    }

    #[test]
    fn unscheduled_levels_count_the_cutoffs_below_the_remaining_bytes() {
        let p = params(3, vec![1000, 5000]);
        assert_eq!([1, 1000, 1001, 5000, 5001, 1 << 40].map(|r| p.unsched_prio(r)), [0, 0, 1, 1, 2, 2]);
        assert_eq!((p.unsched_bytes(3000), p.unsched_bytes(30_000)), (3000, 10_000));
    }
}
