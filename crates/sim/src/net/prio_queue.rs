//! Strict priority over up to eight data priorities plus a control band, as
//! Homa and pHost expect of commodity switches (and of a NIC's priority queues).
//!
//! Every packet carries a priority (0 is the most urgent data priority, up to
//! 7); control packets (grants, tokens, ACKs; PFC frames keep their own path
//! ahead of every queue) go to the control band, which is always served first
//! and is never paused. Within a band, packets leave in arrival order. A port with fewer than eight levels maps
//! the priorities it lacks onto its lowest level, as Homa's scheduler caps
//! `rank + P - P_s` at `P - 1`.
//!
//! PFC: the `paused` argument of [`PrioQueue::next`] is the 802.1Qbb class
//! vector, bit `p` set when the peer paused data priority `p`. The next band is
//! the lowest set bit of (non-empty & !paused), one instruction, whatever the
//! number of levels.
//!
//! # Wiring
//!
//! Not wired into switch ports: a `priority` port (`switch.discipline =
//! "priority"`) keeps one FIFO `Queue` per band in the port's `queues`
//! (queue 0 = control, queue `1 + p` = data priority `p`, as [`Band::queue`]
//! numbers them) served by the strict scheduler, so that per-queue RED,
//! counters, run-time control and buffer accounting index one structure for
//! every discipline (docs/architecture.md, "Queue disciplines and buffer
//! models"). This type remains the building block for places with their own
//! storage, such as a NIC's priority queues.

use crate::packet::PktId;
use std::collections::VecDeque;

/// Data priorities a port can have at most (IEEE 802.1Q traffic classes).
pub const MAX_PRIORITIES: usize = 8;

/// A band of a priority port: the control band or one data priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Band {
    /// Control packets, served before any data and never paused.
    Control,
    /// Data priority 0 (most urgent) to 7.
    Data(u8),
}

impl Band {
    /// The port queue number of this band: 0 for control, `1 + p` for data
    /// priority `p` (the numbering of today's ports).
    pub fn queue(self) -> usize {
        match self {
            Band::Control => 0,
            Band::Data(p) => 1 + p as usize,
        }
    }
}

/// The queues of one strict-priority port.
#[derive(Clone, Debug)]
pub struct PrioQueue {
    control: VecDeque<(PktId, u32)>,
    control_bytes: u64,
    data: [VecDeque<(PktId, u32)>; MAX_PRIORITIES],
    data_bytes: [u64; MAX_PRIORITIES],
    /// Bit `p` set when data priority `p` holds packets.
    nonempty: u8,
    levels: u8,
}

impl PrioQueue {
    /// An empty port with `levels` data priorities, 1 to [`MAX_PRIORITIES`].
    ///
    /// # Panics
    ///
    /// If `levels` is 0 or more than 8; the scenario check rejects such a value
    /// before anything is built.
    pub fn new(levels: u8) -> PrioQueue {
        assert!((1..=MAX_PRIORITIES as u8).contains(&levels), "a priority port has 1 to 8 data priorities");
        PrioQueue {
            control: VecDeque::new(),
            control_bytes: 0,
            data: Default::default(),
            data_bytes: [0; MAX_PRIORITIES],
            nonempty: 0,
            levels,
        }
    }

    /// Data priorities of this port.
    pub fn levels(&self) -> u8 {
        self.levels
    }

    /// The band a data packet of priority `prio` joins: priorities the port
    /// lacks share its lowest level.
    #[inline]
    pub fn band_of(&self, prio: u8) -> Band {
        Band::Data(prio.min(self.levels - 1))
    }

    /// Queues a data packet of priority `prio` and `size` bytes; returns the
    /// band it joined.
    #[inline]
    pub fn push(&mut self, prio: u8, pkt: PktId, size: u32) -> Band {
        let band = self.band_of(prio);
        self.push_band(band, pkt, size);
        band
    }

    /// Queues a control packet.
    #[inline]
    pub fn push_control(&mut self, pkt: PktId, size: u32) {
        self.push_band(Band::Control, pkt, size);
    }

    #[inline]
    fn push_band(&mut self, band: Band, pkt: PktId, size: u32) {
        match band {
            Band::Control => {
                self.control.push_back((pkt, size));
                self.control_bytes += size as u64;
            }
            Band::Data(p) => {
                let p = p as usize;
                self.data[p].push_back((pkt, size));
                self.data_bytes[p] += size as u64;
                self.nonempty |= 1 << p;
            }
        }
    }

    /// The band to serve next, or `None` if every non-empty data priority is
    /// paused (bit `p` of `paused`) and the control band is empty.
    #[inline]
    pub fn next(&self, paused: u8) -> Option<Band> {
        if !self.control.is_empty() {
            return Some(Band::Control);
        }
        let ready = self.nonempty & !paused;
        (ready != 0).then(|| Band::Data(ready.trailing_zeros() as u8))
    }

    /// Removes the oldest packet of `band`; returns it with its size.
    #[inline]
    pub fn pop(&mut self, band: Band) -> Option<(PktId, u32)> {
        match band {
            Band::Control => {
                let (pkt, size) = self.control.pop_front()?;
                self.control_bytes -= size as u64;
                Some((pkt, size))
            }
            Band::Data(p) => {
                let p = p as usize;
                let (pkt, size) = self.data.get_mut(p)?.pop_front()?;
                self.data_bytes[p] -= size as u64;
                if self.data[p].is_empty() {
                    self.nonempty &= !(1 << p);
                }
                Some((pkt, size))
            }
        }
    }

    /// Serves the port once: the band [`next`](Self::next) picks and its oldest
    /// packet with its size.
    #[inline]
    pub fn pop_next(&mut self, paused: u8) -> Option<(Band, PktId, u32)> {
        let band = self.next(paused)?;
        let (pkt, size) = self.pop(band)?;
        Some((band, pkt, size))
    }

    /// The oldest packet of `band`, left in place.
    pub fn head(&self, band: Band) -> Option<PktId> {
        match band {
            Band::Control => self.control.front().map(|e| e.0),
            Band::Data(p) => self.data.get(p as usize)?.front().map(|e| e.0),
        }
    }

    /// Bytes queued in `band`.
    #[inline]
    pub fn band_bytes(&self, band: Band) -> u64 {
        match band {
            Band::Control => self.control_bytes,
            Band::Data(p) => self.data_bytes.get(p as usize).copied().unwrap_or(0),
        }
    }

    /// Packets queued in `band`.
    pub fn band_len(&self, band: Band) -> usize {
        match band {
            Band::Control => self.control.len(),
            Band::Data(p) => self.data.get(p as usize).map_or(0, |q| q.len()),
        }
    }

    /// Bytes queued over all bands.
    pub fn bytes(&self) -> u64 {
        self.control_bytes + self.data_bytes.iter().sum::<u64>()
    }

    /// Whether no band holds a packet.
    pub fn is_empty(&self) -> bool {
        self.nonempty == 0 && self.control.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(q: &mut PrioQueue, paused: u8) -> Vec<PktId> {
        std::iter::from_fn(|| q.pop_next(paused)).map(|(_, p, _)| p).collect()
    }

    #[test]
    fn control_first_then_priorities_in_order_fifo_within() {
        let mut q = PrioQueue::new(8);
        q.push(5, 1, 1_000);
        q.push(2, 2, 1_000);
        q.push(5, 3, 500);
        q.push(0, 4, 1_500);
        q.push_control(5, 64);
        q.push(2, 6, 700);
        assert_eq!(q.next(0), Some(Band::Control));
        assert_eq!(drain(&mut q, 0), [5, 4, 2, 6, 1, 3]);
        assert!(q.is_empty());
        assert_eq!(q.bytes(), 0);
    }

    #[test]
    fn bytes_are_counted_per_band() {
        let mut q = PrioQueue::new(8);
        q.push(3, 1, 1_000);
        q.push(3, 2, 400);
        q.push(7, 3, 1_500);
        q.push_control(4, 64);
        assert_eq!(q.band_bytes(Band::Data(3)), 1_400);
        assert_eq!(q.band_len(Band::Data(3)), 2);
        assert_eq!(q.band_bytes(Band::Data(7)), 1_500);
        assert_eq!(q.band_bytes(Band::Control), 64);
        assert_eq!(q.band_bytes(Band::Data(0)), 0);
        assert_eq!(q.bytes(), 2_964);
        assert_eq!(q.pop(Band::Data(3)), Some((1, 1_000)));
        assert_eq!(q.band_bytes(Band::Data(3)), 400);
        assert_eq!(q.head(Band::Data(3)), Some(2));
        assert_eq!(q.pop(Band::Data(3)), Some((2, 400)));
        assert_eq!(q.pop(Band::Data(3)), None);
        assert_eq!(q.bytes(), 1_564);
    }

    #[test]
    fn paused_priorities_are_skipped_but_control_never_is() {
        let mut q = PrioQueue::new(8);
        q.push(1, 10, 1_000);
        q.push(4, 40, 1_000);
        q.push(6, 60, 1_000);
        // Priorities 1 and 4 paused: 6 goes first although it is less urgent.
        let paused = 0b0001_0010;
        assert_eq!(q.next(paused), Some(Band::Data(6)));
        assert_eq!(q.pop_next(paused), Some((Band::Data(6), 60, 1_000)));
        assert_eq!(q.next(paused), None);
        // Control is served while everything is paused.
        q.push_control(99, 64);
        assert_eq!(q.pop_next(0xff), Some((Band::Control, 99, 64)));
        assert_eq!(q.next(0xff), None);
        // Resuming priority 4 only.
        assert_eq!(q.pop_next(0b0000_0010), Some((Band::Data(4), 40, 1_000)));
        assert_eq!(q.pop_next(0), Some((Band::Data(1), 10, 1_000)));
        assert!(q.is_empty());
    }

    #[test]
    fn missing_levels_share_the_lowest() {
        let mut q = PrioQueue::new(3);
        assert_eq!(q.push(7, 1, 100), Band::Data(2));
        assert_eq!(q.push(2, 2, 100), Band::Data(2));
        assert_eq!(q.push(1, 3, 100), Band::Data(1));
        assert_eq!(q.band_bytes(Band::Data(2)), 200);
        assert_eq!(Band::Data(2).queue(), 3);
        assert_eq!(Band::Control.queue(), 0);
        assert_eq!(drain(&mut q, 0), [3, 1, 2]);
    }
}
