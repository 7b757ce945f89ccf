//! Discrete-event engine: simulated clock and event queue.
//!
//! Events are ordered by (time, insertion sequence), so two events at the same
//! picosecond run in the order they were scheduled and a run is reproducible
//! bit for bit. The simulator keeps the pending set small (about one event per
//! port and per NIC, plus CC timers), which is what keeps a binary heap cheap.

use crate::units::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Everything that can happen in the network at a point in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A port finished serializing its current packet and may start the next.
    TxDone {
        /// Global port id.
        port: u32,
    },
    /// The oldest packet on the wire leaving `port` reaches the far end.
    Arrive {
        /// Global port id of the transmitting end.
        port: u32,
    },
    /// A host NIC's earliest rate-limited flow becomes eligible again.
    NicWake {
        /// Host index.
        host: u32,
    },
    /// The next entry of the application data schedule is due.
    AppData,
    /// Periodic retransmission-timeout check of one host's flows.
    RtoSweep {
        /// Host index.
        host: u32,
    },
    /// A CC timer of one flow fires (stale if `generation` no longer matches).
    CcTimer {
        /// Flow id.
        flow: u32,
        /// Timer generation when it was armed.
        generation: u32,
    },
    /// Take one sample of the time series.
    Sample,
    /// Start of the collection window.
    WindowStart,
    /// End of the collection window.
    WindowEnd,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: Time,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest (time, seq) is on top.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// The pending events, earliest first.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue {
    /// Schedules `event` at `time`.
    #[inline]
    pub fn push(&mut self, time: Time, event: Event) {
        self.seq += 1;
        self.heap.push(Entry { time, seq: self.seq, event });
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }

    /// Removes and returns the earliest pending event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.heap.pop().map(|e| (e.time, e.event))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::default();
        q.push(5, Event::TxDone { port: 1 });
        q.push(3, Event::TxDone { port: 2 });
        q.push(5, Event::TxDone { port: 3 });
        q.push(3, Event::TxDone { port: 4 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (3, Event::TxDone { port: 2 }),
                (3, Event::TxDone { port: 4 }),
                (5, Event::TxDone { port: 1 }),
                (5, Event::TxDone { port: 3 }),
            ]
        );
    }
}
