//! Discrete-event engine: simulated clock and event queue.
//!
//! Events are ordered by (time, insertion sequence), so two events at the same
//! picosecond run in the order they were scheduled and a run is reproducible
//! bit for bit. The simulator keeps the network's pending set small (about one
//! event per port and per NIC), which is what keeps a binary heap cheap; see
//! [`EventQueue`] for how its entries are kept small.

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

/// Bits of a packed key that hold the event's kind and id (see [`EventQueue`]).
const CODE_BITS: u32 = 28;
/// Bits of a packed key that hold the id of a port or host.
const ID_BITS: u32 = 26;
/// The largest insertion sequence a packed key can hold (36 bits: 68 billion events).
const SEQ_LIMIT: u64 = 1 << (64 - CODE_BITS);

/// A pending event that does not fit a packed key. Its order key is the
/// same (time, sequence) layout as the packed keys', with the code bits zero.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u128,
    event: Event,
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
///
/// The events of every packet-hop (a port's `TxDone` and `Arrive`) and the
/// NIC and receiver wake-ups wait as packed 16-byte keys (in a heap, or a
/// calendar when many are pending; see `HopQueue`): time in
/// the high 64 bits, then a 36-bit insertion sequence, then the event's kind
/// (2 bits) and its port or host id (26 bits). Four keys share a cache line,
/// so the few hundred events pending on a large fabric stay in L1 beside the
/// ports and packets they name; 32-byte entries spilled out of it (about
/// four L1 misses per hop on the 144-host leaf-spine). Everything else (CC
/// timers, up to one per flow; applied actions; the periodic sweeps and
/// samples) waits in a second heap of full entries, so it neither deepens
/// nor widens the first. `pop` takes the earlier head of the two by (time,
/// sequence): the order is exactly that of a single queue. When the sequence
/// would outgrow its 36 bits, the pending events are renumbered in order
/// (once per 68 billion events).
pub struct EventQueue {
    hops: HopQueue,
    other: BinaryHeap<Entry>,
    seq: u64,
    seq_limit: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue { hops: HopQueue::default(), other: BinaryHeap::new(), seq: 0, seq_limit: SEQ_LIMIT }
    }
}

/// log2 of a calendar bucket's width in picoseconds (1.024 ns: a 1 KiB
/// packet at 100 Gb/s takes 80 buckets to serialise).
const BUCKET_SHIFT: u32 = 10;
/// Calendar buckets (a power of two). With [`BUCKET_SHIFT`] they span 2.1 us,
/// past a data-centre link's serialisation plus propagation delay, so the
/// events of every packet-hop land in the calendar.
const BUCKETS: usize = 2048;
/// How many upcoming packet-hop events [`EventQueue::upcoming_ports`] names.
pub const UPCOMING: usize = 5;
/// Keys a calendar bucket holds at first (a k = 8 fat tree's ports, running
/// nearly in step, put 8-15 keys in most buckets), and at most.
const NEAR_CAP_MIN: usize = 16;
const NEAR_CAP_MAX: usize = 256;
/// Pushes between two reviews of the bucket capacity, and the share of them
/// (one in this many) that may find their bucket full before it doubles.
const REVIEW_PUSHES: u32 = 1 << 16;
const SPILL_RATIO: u64 = 64;
/// Pending hop events above which the heap hands over to the calendar.
/// Measured back to back (Rust core alone): at 512 the 144-host leaf-spine
/// (about 450 pending) stayed in the heap; at 128 it runs 0.82-0.85x the
/// time (pFabric and HPCC), the incasts and the k = 8 fat tree unchanged.
const TO_CALENDAR: usize = 128;
/// Pending hop events below which the calendar hands back to the heap.
const TO_HEAP: usize = 32;

/// The packed keys of the packet-hop events, earliest first: a binary heap
/// while few are pending, a calendar queue when many are.
///
/// A heap's pop walks one level more each time the pending set doubles, and
/// on a large fabric (800 events pending on a k = 8 fat tree) most of those
/// levels miss the cache. A calendar's push and pop cost the same at 500
/// pending events or 50,000, but its buckets are spread over more memory than
/// a small heap: on a 16-sender incast (about 40 pending) it doubles the
/// first-level cache misses. So the heap serves small pending sets and hands
/// its keys to the calendar past [`TO_CALENDAR`] (and takes them back below
/// [`TO_HEAP`]; the gap keeps a set near the threshold from switching back
/// and forth). Keys are unique, so both give exactly one order.
///
/// The calendar: keys whose time falls within [`BUCKETS`] buckets of the
/// current one wait unsorted in their bucket (up to its capacity, which
/// doubles when too many pushes find their bucket full); those further out,
/// and those that found their bucket full, wait in `far`, a heap. The
/// current bucket's keys (and any key pushed for a time at or before it) are
/// in `front`, sorted latest first, so the earliest key is its last. When
/// `front` runs empty, the next bucket that holds a key (a scan of the
/// occupancy bitmap, or the head of `far` if that is earlier) becomes current
/// and its keys are sorted into `front`.
///
/// Invariants in calendar mode: every key in `front` is below every key
/// elsewhere; a key in `near` has a bucket in (`cur`, `cur` + [`BUCKETS`]),
/// and `far` may hold keys of those buckets too (`advance` takes them with
/// the rest of their bucket);
/// `front` is empty only when the whole queue is.
struct HopQueue {
    /// Whether the calendar (rather than `heap`) holds the keys.
    calendar: bool,
    /// Heap mode: the keys, complemented (the max-heap's top is the earliest).
    heap: BinaryHeap<u128>,
    /// Bucket number (time >> [`BUCKET_SHIFT`]) of the current bucket.
    cur: u64,
    /// The current bucket's keys, latest first.
    front: Vec<u128>,
    /// Keys of the buckets after the current one, by bucket number modulo
    /// [`BUCKETS`]: bucket `i` holds `near_len[i]` keys from `near[i * near_cap]`.
    /// One flat array, where a vector per bucket made every push load the
    /// bucket's header from a 48 KB table that does not stay in L1.
    near: Box<[u128]>,
    /// Keys in each bucket of `near`.
    near_len: Box<[u16]>,
    /// Keys a bucket of `near` holds; a push to a full bucket goes to `far`.
    near_cap: usize,
    /// Pushes, and those of them that found their bucket full, since the
    /// bucket capacity was last reviewed (see [`HopQueue::review_capacity`]).
    pushes: u32,
    spills: u32,
    /// One bit per bucket of `near`: set when it holds a key.
    occupied: [u64; BUCKETS / 64],
    /// Keys beyond the calendar's span, complemented.
    far: BinaryHeap<u128>,
    /// Keys held in calendar mode.
    len: usize,
}

impl Default for HopQueue {
    fn default() -> Self {
        HopQueue {
            calendar: false,
            heap: BinaryHeap::new(),
            cur: 0,
            front: Vec::new(),
            near: Box::new([]),
            near_len: Box::new([]),
            near_cap: 0,
            pushes: 0,
            spills: 0,
            occupied: [0; BUCKETS / 64],
            far: BinaryHeap::new(),
            len: 0,
        }
    }
}

/// The calendar bucket of a packed key.
#[inline]
fn bucket_of(key: u128) -> u64 {
    ((key >> 64) as u64) >> BUCKET_SHIFT
}

impl HopQueue {
    /// The earliest key, if any.
    #[inline]
    fn peek(&self) -> Option<u128> {
        if self.calendar {
            self.front.last().copied()
        } else {
            self.heap.peek().map(|&k| !k)
        }
    }

    #[inline]
    fn push(&mut self, key: u128) {
        if self.calendar {
            self.calendar_push(key);
        } else {
            self.heap.push(!key);
            if self.heap.len() > TO_CALENDAR {
                self.switch_to_calendar();
            }
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<u128> {
        if !self.calendar {
            return self.heap.pop().map(|k| !k);
        }
        let key = self.front.pop()?;
        self.len -= 1;
        if self.front.is_empty() {
            if self.len < TO_HEAP {
                self.switch_to_heap();
            } else {
                self.advance();
            }
        }
        Some(key)
    }

    #[inline]
    fn calendar_push(&mut self, key: u128) {
        self.len += 1;
        let b = bucket_of(key);
        if self.front.is_empty() {
            // Empty calendar: this key's bucket becomes the current one.
            self.cur = b;
            self.front.push(key);
        } else if b <= self.cur {
            let at = self.front.partition_point(|&k| k > key);
            self.front.insert(at, key);
        } else if b - self.cur < BUCKETS as u64 {
            let slot = b as usize & (BUCKETS - 1);
            let n = self.near_len[slot] as usize;
            self.pushes += 1;
            if n < self.near_cap {
                self.near[slot * self.near_cap + n] = key;
                self.near_len[slot] = n as u16 + 1;
                self.occupied[slot / 64] |= 1 << (slot % 64);
            } else {
                // A full bucket: `far` keeps the key in order, and `advance`
                // takes it from there with the rest of its bucket.
                self.spills += 1;
                self.far.push(!key);
            }
        } else {
            self.far.push(!key);
        }
    }

    /// Moves every key from the heap into the calendar, earliest first (so the
    /// first one's bucket becomes the current one).
    #[cold]
    #[inline(never)]
    fn switch_to_calendar(&mut self) {
        if self.near.is_empty() {
            self.near_len = vec![0; BUCKETS].into_boxed_slice();
            self.size_near(NEAR_CAP_MIN);
        }
        let keys: Vec<u128> = self.heap.drain().map(|k| !k).collect();
        self.calendar = true;
        self.fill_calendar(keys);
    }

    /// Pushes `keys` (the calendar is empty) earliest first, so that the
    /// first one's bucket becomes the current one, and starts the count of
    /// pushes and spills afresh.
    fn fill_calendar(&mut self, mut keys: Vec<u128>) {
        keys.sort_unstable();
        for k in keys {
            self.calendar_push(k);
        }
        self.pushes = 0;
        self.spills = 0;
    }

    /// Moves every key from the calendar back into the heap.
    #[cold]
    #[inline(never)]
    fn switch_to_heap(&mut self) {
        let keys = self.drain();
        self.calendar = false;
        self.heap.extend(keys.into_iter().map(|k| !k));
    }

    /// Doubles the buckets' capacity if more than one push in
    /// [`SPILL_RATIO`] found its bucket full since the last review, moving
    /// every key into the larger buckets; returns whether it did. A spilled
    /// key costs a heap push and pop instead of an array write.
    #[cold]
    #[inline(never)]
    fn review_capacity(&mut self) -> bool {
        let grow = self.spills as u64 * SPILL_RATIO > self.pushes as u64 && self.near_cap < NEAR_CAP_MAX;
        self.pushes = 0;
        self.spills = 0;
        if !grow {
            return false;
        }
        let keys = self.drain();
        self.size_near(self.near_cap * 2);
        self.fill_calendar(keys);
        true
    }

    /// Makes `near` empty buckets of `cap` keys each.
    fn size_near(&mut self, cap: usize) {
        self.near_cap = cap;
        self.near = vec![0; BUCKETS * cap].into_boxed_slice();
    }

    /// Makes the next bucket that holds a key current (`front` is empty).
    #[cold]
    #[inline(never)]
    fn advance(&mut self) {
        if self.pushes >= REVIEW_PUSHES && self.review_capacity() {
            return;
        }
        let near = self.next_occupied();
        let far = self.far.peek().map(|&k| bucket_of(!k));
        let b = match (near, far) {
            (Some(n), Some(f)) => n.min(f),
            (Some(n), None) => n,
            (None, Some(f)) => f,
            (None, None) => unreachable!("advance on an empty calendar"),
        };
        self.cur = b;
        while let Some(&k) = self.far.peek() {
            if bucket_of(!k) != b {
                break;
            }
            self.far.pop();
            self.front.push(!k);
        }
        let mut from = 0..0;
        if near == Some(b) {
            let slot = b as usize & (BUCKETS - 1);
            self.occupied[slot / 64] &= !(1 << (slot % 64));
            from = slot * self.near_cap..slot * self.near_cap + self.near_len[slot] as usize;
            self.near_len[slot] = 0;
        }
        sort_bucket_into(&self.near[from], &mut self.front);
    }

    /// Bucket number of the first occupied bucket after the current one.
    #[inline]
    fn next_occupied(&self) -> Option<u64> {
        const WORDS: usize = BUCKETS / 64;
        let start = (self.cur as usize + 1) & (BUCKETS - 1);
        let (w0, bit0) = (start / 64, start % 64);
        // The first word from `start`'s bit on, the others whole, then the
        // first word's bits before `start` (the calendar wraps around).
        for i in 0..=WORDS {
            let w = (w0 + i) % WORDS;
            let mut bits = self.occupied[w];
            if i == 0 {
                bits &= !0u64 << bit0;
            } else if i == WORDS {
                bits &= (1u64 << bit0).wrapping_sub(1);
            }
            if bits != 0 {
                let slot = w * 64 + bits.trailing_zeros() as usize;
                let ahead = (slot + BUCKETS - start) % BUCKETS;
                return Some(self.cur + 1 + ahead as u64);
            }
        }
        None
    }

    /// The next keys, as far as cheaply known (the calendar's current bucket;
    /// two in heap mode): hints for prefetching, not an order guarantee.
    #[inline]
    fn upcoming(&self) -> [Option<u128>; UPCOMING] {
        if self.calendar {
            let n = self.front.len();
            std::array::from_fn(|i| n.checked_sub(i + 1).map(|j| self.front[j]))
        } else {
            let h = self.heap.as_slice();
            let second = match (h.get(1), h.get(2)) {
                (Some(&a), Some(&b)) => Some(!a.max(b)),
                (Some(&a), None) => Some(!a),
                _ => None,
            };
            let mut next = [None; UPCOMING];
            next[0] = h.first().map(|&k| !k);
            next[1] = second;
            next
        }
    }

    /// Removes every key, in no particular order.
    fn drain(&mut self) -> Vec<u128> {
        let mut all: Vec<u128> = self.heap.drain().map(|k| !k).collect();
        all.append(&mut self.front);
        for (slot, n) in self.near_len.iter_mut().enumerate() {
            let from = slot * self.near_cap;
            all.extend_from_slice(&self.near[from..from + *n as usize]);
            *n = 0;
        }
        self.occupied = [0; BUCKETS / 64];
        all.extend(self.far.drain().map(|k| !k));
        self.len = 0;
        all
    }

    fn len(&self) -> usize {
        if self.calendar {
            self.len
        } else {
            self.heap.len()
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Keys of one bucket that [`sort_bucket_into`] orders by counting;
/// a larger bucket goes to the standard sort.
const COUNT_SORT_MAX: usize = 32;

/// Adds the keys `near` to `front` (both of one calendar bucket; `front`
/// holds the bucket's keys taken from `far`, usually none) and sorts them,
/// largest first.
///
/// A bucket's keys share their time's bits above the bucket width, so the
/// time's low bits and the sequence (46 bits) order them: each key's place
/// is the number of keys above it. The counts have no branches to mispredict,
/// where an insertion sort of a dozen keys arriving in nearly random order
/// (a fat tree's ports run in step) mispredicts about once per key. The keys
/// are written straight to their places, without a copy into `front` first
/// (for a dozen keys, a call to `memmove`).
#[inline]
fn sort_bucket_into(near: &[u128], front: &mut Vec<u128>) {
    let n = near.len() + front.len();
    if n == 1 && front.is_empty() {
        // Sparse calendars (a leaf-spine under a Poisson workload) mostly
        // hold one key per bucket.
        front.push(near[0]);
        return;
    }
    if n > COUNT_SORT_MAX || n <= 2 {
        front.extend_from_slice(near);
        front.sort_unstable_by(|a, b| b.cmp(a));
        return;
    }
    debug_assert!(near.is_empty() || front.iter().chain(near).all(|&k| bucket_of(k) == bucket_of(near[0])));
    // Not zeroed: only the first `n` entries are written and read.
    let mut rank = [std::mem::MaybeUninit::<u64>::uninit(); COUNT_SORT_MAX];
    let mut copy = [std::mem::MaybeUninit::<u128>::uninit(); COUNT_SORT_MAX];
    for (i, &k) in front.iter().chain(near).enumerate() {
        rank[i].write(((k >> CODE_BITS) as u64) & ((1u64 << (BUCKET_SHIFT + 64 - CODE_BITS)) - 1));
        copy[i].write(k);
    }
    // SAFETY: entries 0..n were written just above.
    let rank: &[u64] = unsafe { std::slice::from_raw_parts(rank.as_ptr().cast(), n) };
    front.clear();
    front.reserve(n);
    let places = &mut front.spare_capacity_mut()[..n];
    for (i, &r) in rank.iter().enumerate() {
        let above: usize = rank.iter().map(|&o| (o > r) as usize).sum();
        // SAFETY: as above, i < n.
        places[above].write(unsafe { copy[i].assume_init() });
    }
    // SAFETY: the keys' ranks are distinct, so their places are 0..n, each
    // written once above.
    unsafe { front.set_len(n) };
}

/// The order key of (time, sequence) with empty code bits.
#[inline]
fn order_key(time: Time, seq: u64) -> u128 {
    ((time as u128) << 64) | ((seq as u128) << CODE_BITS)
}

/// The packed code of an event of the first heap: kind and id, or `None`.
#[inline]
fn hop_code(event: Event) -> Option<u128> {
    let (kind, id) = match event {
        Event::TxDone { port } => (0u32, port),
        Event::Arrive { port } => (1, port),
        Event::NicWake { host } => (2, host),
        Event::RecvWake { host } => (3, host),
        _ => return None,
    };
    (id < 1 << ID_BITS).then_some(((kind << ID_BITS) | id) as u128)
}

/// The event a packed key holds.
#[inline]
fn hop_event(key: u128) -> Event {
    let id = (key as u32) & ((1 << ID_BITS) - 1);
    match (key as u32) >> ID_BITS & 3 {
        0 => Event::TxDone { port: id },
        1 => Event::Arrive { port: id },
        2 => Event::NicWake { host: id },
        _ => Event::RecvWake { host: id },
    }
}

impl EventQueue {
    /// Schedules `event` at `time`.
    ///
    /// Always inlined: at each call site the event's kind is known, so the
    /// choice of heap and the key's code fold away; called out of line, the
    /// match on the kind was an indirect jump that mispredicted about once
    /// per packet-hop.
    #[inline(always)]
    pub fn push(&mut self, time: Time, event: Event) {
        if self.seq + 1 >= self.seq_limit {
            self.renumber();
        }
        self.seq += 1;
        let key = order_key(time, self.seq);
        match hop_code(event) {
            Some(code) => self.hops.push(key | code),
            None => self.other.push(Entry { key, event }),
        }
    }

    /// Gives the pending events the sequences 1, 2, ... in their order, so
    /// that the sequence fits its bits again; the order is unchanged.
    #[cold]
    fn renumber(&mut self) {
        let mut all: Vec<(u128, Event)> = self.hops.drain().into_iter().map(|k| (k, hop_event(k))).collect();
        all.extend(self.other.drain().map(|e| (e.key, e.event)));
        all.sort_unstable_by_key(|&(k, _)| k >> CODE_BITS);
        self.seq = 0;
        for (key, event) in all {
            self.seq += 1;
            let key = order_key((key >> 64) as Time, self.seq);
            match hop_code(event) {
                Some(code) => self.hops.push(key | code),
                None => self.other.push(Entry { key, event }),
            }
        }
    }

    /// The earliest key of each heap (`u128::MAX` when empty).
    #[inline]
    fn heads(&self) -> (u128, u128) {
        (self.hops.peek().unwrap_or(u128::MAX), self.other.peek().map_or(u128::MAX, |e| e.key))
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        let (h, o) = self.heads();
        let first = h.min(o);
        (first != u128::MAX).then_some((first >> 64) as Time)
    }

    /// Removes and returns the earliest pending event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.pop_due(Time::MAX)
    }

    /// Removes and returns the earliest pending event if it is due at or
    /// before `t` (one look at the two heads, where `peek_time` then `pop`
    /// would take two).
    #[inline]
    pub fn pop_due(&mut self, t: Time) -> Option<(Time, Event)> {
        let (h, o) = self.heads();
        if (h.min(o) >> 64) as Time > t {
            return None;
        }
        if h < o {
            self.hops.pop();
            Some(((h >> 64) as Time, hop_event(h)))
        } else {
            self.other.pop().map(|e| ((e.key >> 64) as Time, e.event))
        }
    }

    /// The ports of the next [`UPCOMING`] packet-hop events (`TxDone` or
    /// `Arrive`), as `(port, is_arrive)`, as far as cheaply known: hints to
    /// prefetch the state they will touch.
    #[inline]
    pub fn upcoming_ports(&self) -> [Option<(u32, bool)>; UPCOMING] {
        let port = |k: Option<u128>| {
            k.and_then(|k| match hop_event(k) {
                Event::TxDone { port } => Some((port, false)),
                Event::Arrive { port } => Some((port, true)),
                _ => None,
            })
        };
        self.hops.upcoming().map(port)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.hops.len() + self.other.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.hops.is_empty() && self.other.is_empty()
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

    /// Drains the queue into (time, event) pairs.
    fn drain(q: &mut EventQueue) -> Vec<(Time, Event)> {
        std::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn every_kind_round_trips_in_one_order() {
        let mut q = EventQueue::default();
        let big = 1u32 << ID_BITS; // too large to pack: waits in the second heap
        let events = [
            (7, Event::Arrive { port: (1 << ID_BITS) - 1 }),
            (7, Event::RecvWake { host: 3 }),
            (2, Event::NicWake { host: 0 }),
            (7, Event::TxDone { port: big }),
            (2, Event::Sample),
            (7, Event::ApplyAction { flow: 9, action: 0.5 }),
            (2, Event::Arrive { port: 5 }),
        ];
        for &(t, e) in &events {
            q.push(t, e);
        }
        assert!(!q.hops.is_empty() && !q.other.is_empty());
        let mut expected: Vec<(usize, (Time, Event))> = events.iter().copied().enumerate().collect();
        expected.sort_by_key(|&(i, (t, _))| (t, i));
        assert_eq!(drain(&mut q), expected.into_iter().map(|(_, e)| e).collect::<Vec<_>>());
    }

    #[test]
    fn renumbering_keeps_the_order() {
        // A tiny sequence limit renumbers many times; the order must be that of
        // a queue that never renumbers.
        let mut small = EventQueue { seq_limit: 64, ..EventQueue::default() };
        let mut reference = EventQueue::default();
        let mut out_small = Vec::new();
        let mut out_ref = Vec::new();
        let mut x: u64 = 12345;
        for step in 0..4_000u32 {
            // Bursts of 20 pushes, then 20 pops: up to 20 events pending.
            if step % 40 >= 20 {
                out_small.push(small.pop());
                out_ref.push(reference.pop());
                continue;
            }
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let t = step as Time / 3 + (x >> 60) as Time;
            let e = match (x >> 40) % 4 {
                0 => Event::TxDone { port: step % 7 },
                1 => Event::CcTimer { flow: step, generation: 1 },
                2 => Event::Arrive { port: step % 5 },
                _ => Event::RtoSweep { host: 1 },
            };
            small.push(t, e);
            reference.push(t, e);
        }
        out_small.extend(drain(&mut small).into_iter().map(Some));
        out_ref.extend(drain(&mut reference).into_iter().map(Some));
        // Renumbered: 2,000 pushes, yet the sequence stays within its limit.
        assert!(small.seq < 64 && reference.seq == 2_000);
        assert_eq!(out_small, out_ref);
    }

    #[test]
    fn pop_due_stops_at_the_bound() {
        let mut q = EventQueue::default();
        assert_eq!(q.pop_due(10), None);
        q.push(7, Event::Sample);
        q.push(5, Event::TxDone { port: 1 });
        assert_eq!(q.pop_due(4), None);
        assert_eq!(q.pop_due(5), Some((5, Event::TxDone { port: 1 })));
        assert_eq!(q.pop_due(6), None);
        assert_eq!(q.pop_due(7), Some((7, Event::Sample)));
        assert!(q.is_empty());
    }
    #[test]
    fn hop_queue_pops_in_key_order_at_every_distance_and_size() {
        // Pushes at the current time, within a bucket, across the calendar and
        // far beyond it, interleaved with pops, while the pending set grows to
        // thousands (calendar mode) and shrinks to a few (heap mode) again and
        // again: the order must be exactly a sorted set's.
        let mut q = HopQueue::default();
        let mut reference = std::collections::BTreeSet::new();
        let (mut now, mut x, mut seq, mut switches) = (0u64, 99u64, 0u128, 0);
        for step in 0..400_000u32 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Pops 3 times in 8 while growing, 7 times in 8 while shrinking.
            let pop_below = if (step / 20_000) % 2 == 0 { 3 } else { 7 };
            if (x >> 61) < pop_below && !reference.is_empty() {
                let was = q.calendar;
                let got = q.pop();
                assert_eq!(got, reference.pop_first(), "step {step}");
                now = (got.unwrap() >> 64) as u64;
                switches += usize::from(was != q.calendar);
            } else {
                let spans = [0u64, 1 << BUCKET_SHIFT, (BUCKETS as u64) << BUCKET_SHIFT, 1 << 40];
                let span = spans[(x >> 20) as usize % 4];
                let t = now + if span == 0 { 0 } else { (x >> 24) % span };
                seq += 1;
                let key = ((t as u128) << 64) | (seq << CODE_BITS);
                let was = q.calendar;
                q.push(key);
                reference.insert(key);
                switches += usize::from(was != q.calendar);
            }
            assert_eq!(q.len(), reference.len());
            assert_eq!(q.peek(), reference.first().copied());
        }
        while let Some(k) = reference.pop_first() {
            assert_eq!(q.pop(), Some(k));
        }
        assert!(q.is_empty() && q.pop().is_none());
        assert!(switches >= 10, "the test must cross the heap/calendar thresholds ({switches} switches)");
    }

    #[test]
    fn hop_queue_keeps_order_through_full_buckets_and_their_growth() {
        // Ports running in step: each pop is followed by pushes a packet time
        // ahead into a few crowded buckets, first a dozen keys per bucket
        // (sorted by counting), then a hundred (full buckets spill to `far`
        // until the capacity doubles; buckets past the counting size take
        // the standard sort).
        let mut q = HopQueue::default();
        let mut reference = std::collections::BTreeSet::new();
        let (mut x, mut seq) = (7u64, 0u128);
        let mut max_front = 0;
        for (ports, steps) in [(12u64, 200_000u32), (100, 400_000)] {
            for _ in 0..steps {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let now = reference.first().map_or(0, |&k| (k >> 64) as u64);
                if reference.len() as u64 >= ports * 16 {
                    assert!(q.calendar);
                    let got = q.pop();
                    assert_eq!(got, reference.pop_first());
                    max_front = max_front.max(q.front.len());
                    continue;
                }
                // One of 16 buckets, 80 buckets on, anywhere within it.
                let t = ((now >> BUCKET_SHIFT) + 80 + (x >> 60)) << BUCKET_SHIFT | ((x >> 20) & 1023);
                seq += 1;
                let key = ((t as u128) << 64) | (seq << CODE_BITS);
                q.push(key);
                reference.insert(key);
                assert_eq!(q.peek(), reference.first().copied());
            }
        }
        while let Some(k) = reference.pop_first() {
            assert_eq!(q.pop(), Some(k));
        }
        assert!(q.calendar || q.is_empty());
        assert!(q.near_cap > NEAR_CAP_MIN, "full buckets must grow the capacity (cap {})", q.near_cap);
        assert!(max_front > COUNT_SORT_MAX, "a bucket must exceed the counting sort ({max_front})");
    }
}
