//! Ports: the transmitting end of a link, with its queues, scheduler, ECN
//! marker and the packets on the wire.
//!
//! A link is two ports, one per direction. The packets a port has put on the
//! wire arrive in order, so they wait in a FIFO and only the oldest has a
//! pending arrival event: one event per port, however many packets fly.

use crate::net::link_model::{LinkModel, LinkTiming};
use crate::net::rank_queue::RankQueue;
use crate::packet::PktId;
use crate::units::Time;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;

/// RED-style ECN marking on the instantaneous queue length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Red {
    /// No marking at or below this many bytes.
    pub kmin: u64,
    /// Marking probability reaches `pmax` here; above it every packet is marked.
    pub kmax: u64,
    /// Marking probability at `kmax`.
    pub pmax: f64,
}

impl Red {
    /// Marking probability at queue length `q` bytes.
    #[inline]
    pub fn probability(&self, q: u64) -> f64 {
        if q <= self.kmin {
            0.0
        } else if q > self.kmax {
            1.0
        } else if self.kmax == self.kmin {
            self.pmax
        } else {
            self.pmax * (q - self.kmin) as f64 / (self.kmax - self.kmin) as f64
        }
    }

    /// Checks that the ramp is well formed: `kmin <= kmax` and `pmax` a
    /// probability. The probability is computed from these three numbers at
    /// every decision (nothing is cached), so a ramp changed mid-run applies
    /// from the next packet on.
    pub fn check(&self) -> Result<(), String> {
        if self.kmin > self.kmax {
            return Err(format!("ECN kmin ({}) must not exceed kmax ({})", self.kmin, self.kmax));
        }
        if !(0.0..=1.0).contains(&self.pmax) {
            return Err(format!("ECN pmax ({}) must be a probability in [0, 1]", self.pmax));
        }
        Ok(())
    }

    /// Decides whether to mark a packet seen at queue length `q`.
    #[inline]
    pub fn mark(&self, q: u64, rng: &mut Xoshiro256PlusPlus) -> bool {
        let p = self.probability(q);
        p >= 1.0 || (p > 0.0 && rng.random::<f64>() < p)
    }
}

/// One FIFO queue of a port.
#[derive(Clone, Debug, Default)]
// Two cache lines per queue, both read by every enqueue and dequeue: the
// counters (exactly one line), then the FIFO, its length and the ECN ramp up
// to `kmax` (`pmax`, read only on the ramp, starts the third line).
#[repr(C, align(64))]
pub struct Queue {
    /// Interval counters (run-time control and switch agents).
    pub ctr: QueueCounters,
    /// Packets waiting, oldest first.
    pub pkts: VecDeque<PktId>,
    /// Bytes waiting.
    pub bytes: u64,
    /// ECN marking, if enabled on this queue.
    pub red: Option<Red>,
    /// DRR deficit / WRR credit left in the current round.
    pub credit: u64,
    /// Scheduling weight (WRR packets per round, DRR quanta).
    pub weight: u32,
}

/// Counters of one queue, read over intervals by independent readers
/// ([`CounterReader`]: the caller of [`crate::sim::Simulation::queue_stats`]
/// and the queue's switch agent), so that one reader closing its interval
/// never shortens another's.
///
/// The datapath only adds: bytes, marks, drops and the queueing integral
/// count from the start of the run, and a reader's interval is the
/// difference from the values it noted when its interval began
/// ([`CounterMark`]). The integral is the sum, over the packets, of size x
/// time queued; a departing (or evicted) packet adds its share here, and a
/// reader adds the share of the packets still queued, which costs one
/// multiply per departure instead of an update at every change of length.
/// The maximum length cannot be differenced: the datapath keeps the largest
/// length since any reader last closed an interval, and a reader closing its
/// interval first folds it into every other reader's own maximum.
#[derive(Clone, Debug, Default)]
// Exactly one cache line, the integral first (see `Queue`).
#[repr(C)]
pub struct QueueCounters {
    /// Byte-picoseconds queued by the packets that left, since the start.
    pub area: u128,
    /// Bytes transmitted since the start.
    pub tx_bytes: u64,
    /// Largest queue length in bytes since a reader last closed an interval.
    pub max_bytes: u64,
    /// Bytes transmitted that carried a CE mark, since the start.
    pub ecn_bytes: u64,
    /// Packets dropped (admission drops and rank-queue evictions) or cut to
    /// their header (trimming ports), since the start.
    pub drops: u64,
    /// Bytes dropped, since the start.
    pub drop_bytes: u64,
    /// Where each reader's interval began (boxed: the datapath never reads it).
    pub marks: Box<[CounterMark; READERS]>,
}

/// Number of [`CounterReader`]s.
pub const READERS: usize = 2;

/// Who reads a queue's interval counters; each has an interval of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterReader {
    /// The user of the run-time control API (`queue_stats`).
    Caller = 0,
    /// The queue's switch agent (`agent.queues`), at its `QueueTick`s.
    Agent = 1,
}

/// The counters of a queue when a reader's interval began.
#[derive(Clone, Copy, Debug, Default)]
pub struct CounterMark {
    /// Start of the interval.
    pub since: Time,
    /// [`QueueCounters::tx_bytes`] then.
    pub tx_bytes: u64,
    /// [`QueueCounters::ecn_bytes`] then.
    pub ecn_bytes: u64,
    /// [`QueueCounters::drops`] then.
    pub drops: u64,
    /// [`QueueCounters::drop_bytes`] then.
    pub drop_bytes: u64,
    /// The queueing integral (departed and queued packets) then.
    pub area: u128,
    /// Largest length of the interval folded in so far (see [`QueueCounters`]).
    pub max_bytes: u64,
}

impl QueueCounters {
    /// Accounts the queueing of a `size`-byte packet queued at `enq_time`
    /// that leaves (is sent or evicted) at `now`.
    #[inline]
    pub fn depart(&mut self, now: Time, enq_time: Time, size: u64) {
        self.area += size as u128 * (now - enq_time) as u128;
    }
}

/// How a switch port orders its data packets; one `match` per packet.
#[derive(Clone, Debug)]
pub enum Discipline {
    /// FIFO queues per class, chosen by the port's scheduler (today's ports).
    Fifo,
    /// Strict priority: data packet of priority `p` joins queue
    /// `1 + min(p, levels - 1)`, served lowest index first.
    Priority {
        /// Data priorities, 1 to 8.
        levels: u8,
    },
    /// One queue ordered by packet rank that evicts the least urgent packet
    /// when full (pFabric); it is data queue 1 for counters and ECN.
    Rank(Box<RankQueue>),
}

/// How a port chooses among its data queues (queue 0 is always served first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedKind {
    /// Lowest-index non-empty queue first.
    Strict,
    /// One packet per queue in turn.
    RoundRobin,
    /// Up to `weight` packets per queue per round.
    Wrr,
    /// Deficit round robin with quantum x weight bytes per round.
    Drr,
}

/// Per-port counters.
#[derive(Clone, Debug, Default)]
// The fields every enqueue updates first (see `Port`).
#[repr(C)]
pub struct PortStats {
    /// Largest queue length seen (bytes, all queues), over the whole run.
    pub max_queue: u64,
    /// Largest queue length seen inside the window.
    pub win_max_queue: u64,
    /// Queue latency of data packets dequeued in the window (histogram). On
    /// the same line as the two maxima: every dequeue in the window adds to it.
    pub latency: crate::metrics::LogHist,
    /// Packets ECN-marked (all time).
    pub ecn_marks: u64,
    /// Packets ECN-marked inside the window.
    pub win_ecn_marks: u64,
    /// Queue length spanned by the ECN profile bins, fixed when the profile
    /// starts so that a Kmax changed mid-run does not re-label earlier bins.
    pub ecn_span: u64,
    /// ECN profile inside the window: per queue-length bin (see [`ECN_BINS`]),
    /// data packets that met the marker and packets it marked.
    pub ecn_profile: Vec<[u64; 2]>,
    /// Packets dropped at admission (all time).
    pub drops: u64,
    /// Bytes dropped (all time).
    pub drop_bytes: u64,
    /// Packets dropped inside the collection window.
    pub win_drops: u64,
    /// Bytes dropped inside the collection window.
    pub win_drop_bytes: u64,
    /// PFC pause frames sent by this port upstream (all time).
    pub pfc_pauses_sent: u64,
    /// PFC pause frames sent inside the window.
    pub win_pfc_pauses_sent: u64,
    /// Time inside the window during which the peer paused at least one class of this port.
    pub win_paused_time: Time,
    /// Transmitted bytes at window start / end (for utilisation).
    pub tx_at_window: [u64; 2],
    /// Bytes of the packet in serialisation at window start / end that were
    /// still to go onto the wire ([`Port::unsent_bytes`]): `tx_bytes` counts a
    /// packet when it starts, so these make utilisation count bits sent
    /// inside the window only.
    pub unsent_at_window: [f64; 2],
    /// Packets the link model lost on this port's wire (random loss or
    /// policer; all time).
    pub link_drops: u64,
    /// Bytes of those packets.
    pub link_drop_bytes: u64,
    /// Packets the link model lost inside the window.
    pub win_link_drops: u64,
    /// Bytes of those packets.
    pub win_link_drop_bytes: u64,
    /// Of the drops, packets a rank queue evicted after admitting them (all
    /// time); the rest of `drops` were refused on arrival.
    pub evictions: u64,
    /// Evicted packets inside the window (counted in `win_drops` too).
    pub win_evictions: u64,
    /// Bytes of those packets.
    pub win_eviction_bytes: u64,
    /// Data packets cut to their header (trimming switches; all time). Not
    /// drops: the header goes on.
    pub trims: u64,
    /// Of the cuts, packets that were queued when a later arrival found
    /// the queue full and the coin picked them (all time); the rest were
    /// cut on arrival.
    pub trims_queued: u64,
    /// Packets cut inside the window.
    pub win_trims: u64,
    /// Their bytes before the cut.
    pub win_trim_bytes: u64,
}

/// Number of queue-length bins of the ECN profile; they span [0, 1.25 kmax].
pub const ECN_BINS: usize = 20;

/// The transmitting end of one link direction.
///
/// The fields are laid out by hand (`repr(C)`, cache-line aligned), hot
/// ones first: line 0 holds what enqueue, dequeue and the arrival at the
/// peer read (busy time, queued bytes, the queues, the discipline, owner and
/// flags), line 1 the wire and PFC FIFOs, line 2 what `transmit` reads
/// (rate, propagation, link model) and the scheduler's cursor, line 3 the
/// counters every enqueue updates ([`PortStats`] starts with them). With
/// the compiler's layout a switch hop touched six or seven lines of a
/// 472-byte port; on the 144-host fabric the ports do not stay in L1.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Port {
    /// Transmitter is serializing until this time.
    pub busy_until: Time,
    /// Bytes queued over all queues.
    pub queued: u64,
    /// Queues; 0 is the strict-priority control queue.
    pub queues: Vec<Queue>,
    /// Queue discipline of a switch port (hosts: FIFO).
    pub discipline: Discipline,
    /// Index of the owner among the hosts (if `is_host`) or the switches.
    /// Kept here so that a hop needs no lookup in the topology's node table.
    pub owner: u32,
    /// A `TxDone` event is pending.
    pub tx_pending: bool,
    /// Owned by a host NIC (data comes from the NIC's flow scheduler).
    pub is_host: bool,
    /// Whether ECN is evaluated at dequeue (true) or enqueue.
    pub ecn_at_dequeue: bool,
    /// Classes paused by the peer's PFC (bit per class).
    pub paused: u8,
    /// Packets on the wire: (arrival time at the peer, packet).
    pub wire: VecDeque<(Time, PktId)>,
    /// PFC frames to send before anything else.
    pub pfc_out: VecDeque<PktId>,
    /// Bytes transmitted so far.
    pub tx_bytes: u64,
    /// Serialization time per byte when it is a whole number of picoseconds
    /// (0 otherwise), which spares a 128-bit division per packet.
    pub ps_per_byte: u64,
    /// Propagation delay.
    pub delay: Time,
    /// What makes this link direction differ from a fixed-rate lossless wire
    /// (`[[link]]` tables, `set_link_rate`); `None` on most ports.
    pub model: Option<Box<LinkModel>>,
    /// Rate in bit/s.
    pub rate_bps: u64,
    /// The port at the other end of the link.
    pub peer: u32,
    /// Node owning the port.
    pub node: u32,
    /// Queue the scheduler serves now (round-robin family).
    pub sched_cur: usize,
    /// Scheduler among data queues.
    pub sched: SchedKind,
    /// The current queue has just been reached (WRR/DRR refill its credit).
    pub sched_fresh: bool,
    /// Counters.
    pub stats: PortStats,
    /// Bytes of credit one unit of DRR weight adds per round.
    pub quantum: u64,
    /// Since when at least one class has been paused (valid while `paused != 0`).
    pub paused_since: Time,
    /// Data queues held by their switch-queue agent (bit per queue): a
    /// blocking agent's queue sends nothing until its action lands.
    pub held: u8,
}

impl Port {
    /// Counts `size` bytes that joined queue `q` (the caller queued the
    /// packet): the queue's and the port's lengths and their maxima.
    #[inline(always)]
    pub fn count_enqueue(&mut self, q: usize, size: u64, in_window: bool) {
        let qu = &mut self.queues[q];
        qu.bytes += size;
        qu.ctr.max_bytes = qu.ctr.max_bytes.max(qu.bytes);
        self.queued += size;
        self.stats.max_queue = self.stats.max_queue.max(self.queued);
        if in_window {
            self.stats.win_max_queue = self.stats.win_max_queue.max(self.queued);
        }
    }

    /// Bytes of the packet being serialised at `t` that are still to go onto
    /// the wire (0 when idle). A trace-driven link's packet waits for its
    /// delivery opportunity rather than being serialised, so it counts as
    /// sent when it starts.
    pub fn unsent_bytes(&self, t: Time) -> f64 {
        if self.busy_until <= t {
            return 0.0;
        }
        match self.model.as_deref().and_then(|m| m.timing.as_ref()) {
            None => self.rate_bps as f64 * (self.busy_until - t) as f64 / crate::units::SEC as f64 / 8.0,
            Some(LinkTiming::Schedule(s)) => s.bits_between(t, self.busy_until) / 8.0,
            Some(LinkTiming::Trace(_)) => 0.0,
        }
    }

    /// Bits the port can carry in `[a, b)`: its rate over the interval,
    /// following its schedule if it has one (a trace-driven link: its mean
    /// rate).
    pub fn capacity_bits(&self, a: Time, b: Time) -> f64 {
        match self.model.as_deref().and_then(|m| m.timing.as_ref()) {
            Some(LinkTiming::Schedule(s)) => s.bits_between(a, b),
            _ => self.rate_bps as f64 * b.saturating_sub(a) as f64 / crate::units::SEC as f64,
        }
    }

    /// Runs the ECN marker of queue `q` for a data packet that sees the queue
    /// at its current length; returns whether to mark it.
    #[inline]
    pub fn ecn_decide(&mut self, q: usize, rng: &mut Xoshiro256PlusPlus, in_window: bool) -> bool {
        let Some(red) = self.queues[q].red else { return false };
        let len = self.queues[q].bytes;
        let mark = red.mark(len, rng);
        if mark {
            self.stats.ecn_marks += 1;
        }
        if in_window {
            self.stats.win_ecn_marks += mark as u64;
            if self.stats.ecn_profile.is_empty() {
                self.stats.ecn_profile = vec![[0; 2]; ECN_BINS];
                self.stats.ecn_span = (red.kmax + red.kmax / 4).max(1);
            }
            let span = self.stats.ecn_span;
            let bin = ((len as u128 * ECN_BINS as u128 / span as u128) as usize).min(ECN_BINS - 1);
            self.stats.ecn_profile[bin][0] += 1;
            self.stats.ecn_profile[bin][1] += mark as u64;
        }
        mark
    }

    /// Whether class `c` is paused by the peer.
    #[inline]
    pub fn is_paused(&self, c: u8) -> bool {
        c != 0 && ((self.paused | self.held) as u32) & (1u32 << c) != 0
    }

    #[inline]
    fn eligible(&self, q: usize) -> bool {
        !self.queues[q].pkts.is_empty() && !self.is_paused(q as u8)
    }

    /// Chooses the queue to serve next, or `None` if nothing may be sent.
    pub fn pick_queue(&mut self, size_of: impl Fn(PktId) -> u64) -> Option<usize> {
        if !self.queues[0].pkts.is_empty() {
            return Some(0);
        }
        let n = self.queues.len();
        if n < 2 || !(1..n).any(|q| self.eligible(q)) {
            return None;
        }
        let next = |i: usize| if i + 1 >= n { 1 } else { i + 1 };
        match self.sched {
            SchedKind::Strict => (1..n).find(|&q| self.eligible(q)),
            SchedKind::RoundRobin => {
                let mut i = self.sched_cur.max(1);
                for _ in 0..n {
                    i = next(i);
                    if self.eligible(i) {
                        self.sched_cur = i;
                        return Some(i);
                    }
                }
                None
            }
            SchedKind::Wrr => loop {
                let i = self.sched_cur.max(1);
                if self.eligible(i) {
                    if self.sched_fresh {
                        self.queues[i].credit = self.queues[i].weight.max(1) as u64;
                        self.sched_fresh = false;
                    }
                    if self.queues[i].credit > 0 {
                        self.queues[i].credit -= 1;
                        return Some(i);
                    }
                }
                self.sched_cur = next(i);
                self.sched_fresh = true;
            },
            SchedKind::Drr => loop {
                let i = self.sched_cur.max(1);
                if self.eligible(i) {
                    if self.sched_fresh {
                        self.queues[i].credit += self.quantum * self.queues[i].weight.max(1) as u64;
                        self.sched_fresh = false;
                    }
                    let head = size_of(*self.queues[i].pkts.front().expect("eligible queue is non-empty"));
                    if head <= self.queues[i].credit {
                        self.queues[i].credit -= head;
                        return Some(i);
                    }
                } else if self.queues[i].pkts.is_empty() {
                    self.queues[i].credit = 0;
                }
                self.sched_cur = next(i);
                self.sched_fresh = true;
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn hot_fields_share_cache_lines() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(size_of::<QueueCounters>(), 64);
        assert_eq!(align_of::<Queue>(), 64);
        assert_eq!(offset_of!(Queue, red), 104, "the ECN ramp starts on the FIFO's line");
        assert_eq!(align_of::<Port>(), 64);
        assert!(offset_of!(Port, paused) < 64 && offset_of!(Port, owner) < 64);
        assert!(offset_of!(Port, pfc_out) + 32 <= 128);
        assert!(offset_of!(Port, sched_fresh) < 192);
        assert!(offset_of!(Port, stats) + offset_of!(PortStats, win_max_queue) + 8 <= 256);
        assert_eq!(offset_of!(Port, stats) % 64, 0);
        assert_eq!(offset_of!(PortStats, latency) + size_of::<crate::metrics::LogHist>(), 64);
    }

    #[test]
    fn red_ramp() {
        let r = Red { kmin: 100, kmax: 200, pmax: 0.5 };
        assert_eq!(r.probability(100), 0.0);
        assert!((r.probability(150) - 0.25).abs() < 1e-12);
        assert_eq!(r.probability(201), 1.0);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let marks = (0..100_000).filter(|_| r.mark(150, &mut rng)).count();
        assert!((marks as f64 / 1e5 - 0.25).abs() < 0.01);
    }
}
