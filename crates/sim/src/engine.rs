//! Discrete-event engine: simulated clock and event queue.
//!
//! Events are ordered by (time, insertion sequence), so two events at the same
//! picosecond run in the order they were scheduled and a run is reproducible
//! bit for bit. The simulator keeps the network's pending set small (about one
//! event per port and per NIC), which is what keeps a binary heap cheap. CC
//! timers (up to one per flow, thousands with many flows) wait in a second
//! heap, so that they do not deepen the heap every packet event goes
//! through; `pop` takes the earlier head of the two, by (time, sequence), so
//! the order is exactly that of a single queue.

use crate::units::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Everything that can happen in the network at a point in time.
#[derive(Clone, Copy, Debug, PartialEq)]
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
    /// The action a policy chose for an agent flow takes effect. The action
    /// travels in its event, as a packet on a wire: a flow has at most one
    /// decision outstanding, so nothing else has to hold it meanwhile.
    ApplyAction {
        /// Flow id.
        flow: u32,
        /// The policy's action.
        action: f32,
    },
    /// Take one sample of the time series.
    Sample,
    /// Start of the collection window.
    WindowStart,
    /// End of the collection window.
    WindowEnd,
    /// A port's rate schedule reaches its next step: the port's reported
    /// rate (`rate_bps`, read by INT) follows it.
    LinkRate {
        /// Global port id.
        port: u32,
    },
    /// Switch-queue agents sample their queues (every `agent.queue_interval`).
    QueueTick,
    /// A policy's action for switch-queue agent `agent` takes effect.
    QueueAction {
        /// Queue-agent id.
        agent: u32,
        /// The action (an ECN-profile index).
        action: f32,
    },
    /// A host's receiver (grant) scheduler may send its next token.
    RecvWake {
        /// Host index.
        host: u32,
    },
}

/// A pending event. Its order key packs (time, insertion sequence) into one
/// `u128`, time in the high half: one wide comparison per heap step instead
/// of a tuple's two.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u128,
    event: Event,
}

impl Entry {
    #[inline]
    fn time(&self) -> Time {
        (self.key >> 64) as Time
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
    #[inline]
    fn lt(&self, other: &Self) -> bool {
        other.key < self.key
    }
    #[inline]
    fn le(&self, other: &Self) -> bool {
        other.key <= self.key
    }
    #[inline]
    fn gt(&self, other: &Self) -> bool {
        other.key > self.key
    }
    #[inline]
    fn ge(&self, other: &Self) -> bool {
        other.key >= self.key
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest (time, seq) is on top.
        other.key.cmp(&self.key)
    }
}

/// The pending events, earliest first.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    timers: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue {
    /// Schedules `event` at `time`.
    #[inline]
    pub fn push(&mut self, time: Time, event: Event) {
        self.seq += 1;
        let e = Entry { key: ((time as u128) << 64) | self.seq as u128, event };
        if matches!(event, Event::CcTimer { .. } | Event::ApplyAction { .. }) {
            self.timers.push(e);
        } else {
            self.heap.push(e);
        }
    }

    /// Whether the next event comes from the timer heap.
    #[inline]
    fn timer_first(&self) -> bool {
        match (self.heap.peek(), self.timers.peek()) {
            (_, None) => false,
            (None, Some(_)) => true,
            // `Entry` orders the earliest (time, seq) as the greatest.
            (Some(a), Some(b)) => b > a,
        }
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        if self.timer_first() {
            self.timers.peek().map(|e| e.time())
        } else {
            self.heap.peek().map(|e| e.time())
        }
    }

    /// Removes and returns the earliest pending event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        let e = if self.timer_first() { self.timers.pop() } else { self.heap.pop() };
        e.map(|e| (e.time(), e.event))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len() + self.timers.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.timers.is_empty()
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

    #[test]
    fn cc_timers_interleave_exactly_as_in_one_queue() {
        let mut q = EventQueue::default();
        let t = |flow| Event::CcTimer { flow, generation: 0 };
        q.push(5, t(1));
        q.push(3, Event::TxDone { port: 2 });
        q.push(5, Event::TxDone { port: 3 });
        q.push(3, t(2));
        q.push(1, t(3));
        assert_eq!(q.len(), 5);
        assert_eq!(q.peek_time(), Some(1));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![(1, t(3)), (3, Event::TxDone { port: 2 }), (3, t(2)), (5, t(1)), (5, Event::TxDone { port: 3 })]
        );
        assert!(q.is_empty());
    }
}
