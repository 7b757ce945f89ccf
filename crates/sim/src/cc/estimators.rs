//! Estimators shared by the WAN algorithms (Copa, BBR): an exact windowed
//! extremum and the packets a TCP sender without SACK knows have left the
//! network.
//!
//! * [`Windowed`]: the minimum (or maximum) of the samples whose key (a time,
//!   or BBR's round count) lies within a window of the newest key. Exact: a
//!   monotone deque keeps only the samples that can still become the extremum
//!   (each newer sample removes the older ones it beats), so an update is
//!   amortised O(1) and the memory is bounded by the samples of one window.
//!   Linux and mvfst approximate the same quantity with three samples
//!   (Nichols' `win_minmax`); the exact form is simpler to state and to test.
//! * [`DupAckPipe`]: the core's TCP receiver acknowledges cumulatively (no
//!   SACK), so a loss holds `snd_una` back while later segments arrive. Each
//!   duplicate ACK reports one more segment delivered above the hole; this
//!   counts them (as NewReno's window inflation does, RFC 5681 3.2) so that a
//!   window CC can keep `bytes in flight - delivered above the hole` at its
//!   window (RFC 6675's "pipe") instead of stalling for a round trip per
//!   loss, and so that BBR's delivery-rate samples see those deliveries when
//!   they happen rather than in one lump at the cumulative ACK.

use super::AckEvent;
use std::collections::VecDeque;

/// Which extremum a [`Windowed`] filter keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extremum {
    /// The smallest sample.
    Min,
    /// The largest sample.
    Max,
}

/// The minimum or maximum of the samples within a window of keys.
#[derive(Clone, Debug)]
pub struct Windowed {
    kind: Extremum,
    /// (key, value), keys non-decreasing; values strictly improving from the
    /// back to the front (the front is the extremum).
    samples: VecDeque<(u64, f64)>,
}

impl Windowed {
    /// An empty filter.
    pub fn new(kind: Extremum) -> Windowed {
        Windowed { kind, samples: VecDeque::new() }
    }

    #[inline]
    fn beats(&self, a: f64, b: f64) -> bool {
        match self.kind {
            Extremum::Min => a <= b,
            Extremum::Max => a >= b,
        }
    }

    /// Adds `value` at `key` (keys never decrease) and forgets samples whose
    /// key is more than `window` older than `key`.
    #[inline]
    pub fn update(&mut self, key: u64, value: f64, window: u64) {
        while let Some(&(_, v)) = self.samples.back() {
            if self.beats(value, v) {
                self.samples.pop_back();
            } else {
                break;
            }
        }
        self.samples.push_back((key, value));
        self.expire(key, window);
    }

    /// Forgets samples more than `window` older than `key`, keeping the newest.
    #[inline]
    pub fn expire(&mut self, key: u64, window: u64) {
        while self.samples.len() > 1 && self.samples.front().is_some_and(|&(k, _)| key.saturating_sub(k) > window) {
            self.samples.pop_front();
        }
    }

    /// The extremum, or `None` before the first sample.
    #[inline]
    pub fn get(&self) -> Option<f64> {
        self.samples.front().map(|&(_, v)| v)
    }

    /// Key of the current extremum.
    pub fn key(&self) -> Option<u64> {
        self.samples.front().map(|&(k, _)| k)
    }

    /// Forgets every sample.
    pub fn clear(&mut self) {
        self.samples.clear();
    }
}

/// Bytes known delivered above the first hole, from duplicate ACKs.
#[derive(Clone, Copy, Debug, Default)]
pub struct DupAckPipe {
    /// Bytes reported delivered by duplicate ACKs and not yet cumulatively
    /// acknowledged.
    pub above_hole: u64,
    /// After a timeout the sender resends from `snd_una`, and segments the
    /// receiver already holds come back as duplicate ACKs that deliver
    /// nothing new: they are ignored until `snd_una` passes this (the highest
    /// byte sent before the timeout).
    pub resend_until: Option<u64>,
}

impl DupAckPipe {
    /// Accounts for one ACK of `mss`-byte segments; returns the bytes this
    /// ACK newly delivered (a duplicate: one segment; an advancing ACK: what
    /// it acknowledged less what duplicates already reported).
    #[inline]
    pub fn on_ack(&mut self, ack: &AckEvent, snd_una: u64, mss: u64) -> u64 {
        let (newly_acked, dup_acks, recovery_ended) = (ack.newly_acked, ack.dup_acks, ack.recovery_ended);
        if let Some(end) = self.resend_until {
            if snd_una >= end {
                self.resend_until = None;
            } else if newly_acked == 0 {
                return 0;
            }
        }
        if newly_acked == 0 {
            if dup_acks == 0 {
                return 0;
            }
            self.above_hole += mss;
            return mss;
        }
        // The ACK covers the segment that filled the hole (never reported)
        // and possibly segments above it that duplicates reported.
        let credited = self.above_hole.min(newly_acked.saturating_sub(mss));
        self.above_hole -= credited;
        if recovery_ended {
            self.above_hole = 0;
        }
        newly_acked - credited
    }

    /// A timeout: the sender goes back to `snd_una`, forgetting what it knew;
    /// `high` is the highest byte it had sent.
    pub fn timeout(&mut self, high: u64) {
        self.above_hole = 0;
        self.resend_until = Some(high);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windowed_min_and_max_are_exact() {
        let mut min = Windowed::new(Extremum::Min);
        let mut max = Windowed::new(Extremum::Max);
        let xs = [5.0, 3.0, 4.0, 6.0, 2.0, 7.0, 7.0, 1.0, 8.0];
        for (k, &x) in xs.iter().enumerate() {
            min.update(k as u64, x, 2);
            max.update(k as u64, x, 2);
            let lo = k.saturating_sub(2);
            let win = &xs[lo..=k];
            assert_eq!(min.get().unwrap(), win.iter().cloned().fold(f64::INFINITY, f64::min), "min at {k}");
            assert_eq!(max.get().unwrap(), win.iter().cloned().fold(f64::NEG_INFINITY, f64::max), "max at {k}");
        }
        // Expiry without a sample keeps the newest.
        max.expire(100, 2);
        assert_eq!(max.get(), Some(8.0));
        assert_eq!(max.key(), Some(8));
        max.clear();
        assert_eq!(max.get(), None);
    }

    fn a(newly: u64, dup: u32, ended: bool) -> AckEvent<'static> {
        AckEvent { newly_acked: newly, dup_acks: dup, recovery_ended: ended, ..AckEvent::default() }
    }

    #[test]
    fn duplicate_acks_count_once_whatever_the_cumulative_ack_covers() {
        let mut p = DupAckPipe::default();
        // Segment 0 lost; 1, 2, 3 arrive: three duplicates.
        let d: u64 = (1..=3).map(|n| p.on_ack(&a(0, n, false), 0, 1000)).sum();
        assert_eq!((d, p.above_hole), (3000, 3000));
        // Partial ACK: the retransmitted 0 and 1..2 (4 and 5 lost too): 3 KB acked, 2 KB
        // of it already counted.
        assert_eq!(p.on_ack(&a(3000, 0, false), 3000, 1000), 1000);
        assert_eq!(p.above_hole, 1000);
        // The ACK that ends recovery covers 3 (counted) and the new 4 ... 9.
        assert_eq!(p.on_ack(&a(7000, 0, true), 10_000, 1000), 6000);
        assert_eq!(p.above_hole, 0);
        // Ordinary ACKs pass through.
        assert_eq!(p.on_ack(&a(1000, 0, false), 11_000, 1000), 1000);
        assert_eq!(p.on_ack(&a(0, 0, false), 11_000, 1000), 0);
        // After a timeout, duplicates of resent data deliver nothing until snd_una
        // passes what was sent before it.
        p.timeout(20_000);
        assert_eq!(p.on_ack(&a(0, 1, false), 11_000, 1000), 0);
        assert_eq!(p.on_ack(&a(5000, 0, false), 16_000, 1000), 5000);
        assert_eq!(p.on_ack(&a(4000, 0, false), 20_000, 1000), 4000);
        assert_eq!(p.on_ack(&a(0, 1, false), 20_000, 1000), 1000);
    }
}
