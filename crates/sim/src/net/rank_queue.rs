//! pFabric's port queue: one logical queue ordered by a per-packet rank,
//! whose admission evicts the least urgent queued packets.
//!
//! Rules (pFabric, Alizadeh et al. 2013; `shared/specs/rule_based_cc.md` 7.1):
//!
//! * A packet's rank is its flow's remaining bytes when it was sent; a smaller
//!   rank is more urgent. Control packets (ACKs) carry rank 0.
//! * Admission: a packet that fits in the byte capacity is queued. When it does
//!   not fit, the queued packets with the largest ranks are evicted, largest
//!   first, for as long as their rank is strictly larger than the arrival's,
//!   until the arrival fits. Among equal ranks the latest-queued packet goes
//!   first, and an arrival whose rank equals the largest queued rank is itself
//!   the one dropped: this is the reference rule "append, then drop the
//!   largest rank found last". The decision is all or nothing: if evicting every
//!   less urgent packet would still not make room, nothing is evicted and the
//!   arrival is dropped (evicting and then dropping the arrival too would lose
//!   packets for nothing). With equal packet sizes, as in the pFabric paper, at
//!   most one packet is evicted.
//! * Dequeue: take the flow of the smallest-rank packet (ties: the earliest
//!   queued) and send that flow's earliest-queued packet, even if a later
//!   packet of the flow has the smaller rank. This keeps each flow in order and
//!   cannot starve a flow's head.
//!
//! # Cost
//!
//! Packets live in a slab. Two binary heaps over the slab, keyed by
//! (rank, arrival), give the most urgent packet (dequeue) and the least urgent
//! one (eviction); each slab entry records its heap positions, so any packet
//! can leave either heap in O(log n). Each flow's packets are chained in
//! arrival order, so the earliest packet of the most urgent flow is one lookup
//! away. Only an enqueue needs the chain of an arbitrary flow id; flow ids are
//! global, so instead of a per-port array indexed by them a small
//! open-addressing table (at most half full) maps the flows that have queued
//! packets to their chains.
//!
//! Measured with callgrind (release build; per packet one enqueue plus one
//! dequeue in steady state, random ranks, n/4 flows; the harness's own cost
//! subtracted): about 515, 560 and 600 instructions per packet at n = 24
//! (36 KB of 1500 B packets, pFabric's size), 240 and 2,400 queued packets.
//! A linear scan over the packets in arrival order (the plain reading of the
//! rules) costs 550, 5,150 and 72,500, and two index arrays kept sorted by
//! (rank, arrival) and (flow, arrival) cost 550, 970 and 6,950 (their
//! `memmove`s grow with n). So
//! this costs what a scan costs at pFabric's size and stays flat when a
//! scenario gives the port a large buffer. Nothing is allocated per packet
//! once the arrays have grown to the largest occupancy seen
//! ([`RankQueue::reserve`] pre-sizes them).
//!
//! # Wiring
//!
//! A port whose discipline is `rank` (`switch.discipline = "rank"`) holds a
//! `RankQueue` in [`Discipline::Rank`](crate::net::port::Discipline) for its
//! data; control packets keep queue 0, served first. `switch_receive`
//! (`sim/switch.rs`) offers each data packet with its `rank` and flow; the
//! eviction closure releases the evicted packet's bytes from the switch
//! buffer, counts it as a drop of the port and of its queue (and in the
//! conservation counters) and frees it. The capacity is `switch.port_buffer`
//! (pFabric: 36 KiB) or the switch buffer split over its ports; the buffer
//! model is charged without being asked. `switch_try_send` calls
//! [`RankQueue::dequeue`] when queue 0 is empty. For ECN and the queue
//! counters the rank queue is the port's queue 1, whose byte count mirrors
//! [`RankQueue::bytes`]. Senders set the rank (`make_data`: the flow's
//! remaining bytes from the packet on).

use crate::packet::PktId;

/// A packet as the rank queue sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankedPkt {
    /// The packet.
    pub pkt: PktId,
    /// Urgency: smaller is served first (pFabric: the flow's remaining bytes).
    pub rank: u64,
    /// The flow the packet belongs to (packets of one flow leave in order).
    pub flow: u32,
    /// Bytes the packet occupies in the buffer.
    pub size: u32,
}

/// "No slot": the end of a flow's chain, an empty table entry, a slot in no heap.
const NONE: u32 = u32::MAX;

/// A queued packet: its arrival number breaks ties; it is linked to the
/// packets of its flow in arrival order.
#[derive(Clone, Copy, Debug)]
struct Slot {
    pkt: RankedPkt,
    seq: u64,
    prev: u32,
    next: u32,
    /// Index of its flow's record in [`FlowTable::recs`].
    rec: u32,
}

/// The queued packets of one flow, oldest first.
#[derive(Clone, Copy, Debug)]
struct FlowRec {
    flow: u32,
    head: u32,
    tail: u32,
}

/// A binary heap of slots keyed by (rank, arrival): the most urgent on top
/// when `MAX` is false, the least urgent when it is true. It records each
/// slot's position so that any slot can be removed.
#[derive(Clone, Debug, Default)]
struct SlotHeap<const MAX: bool> {
    /// (rank, seq, slot).
    heap: Vec<(u64, u64, u32)>,
    /// Position in `heap` of each slot (`NONE` when absent).
    pos: Vec<u32>,
}

impl<const MAX: bool> SlotHeap<MAX> {
    #[inline]
    fn above(a: &(u64, u64, u32), b: &(u64, u64, u32)) -> bool {
        if MAX {
            (a.0, a.1) > (b.0, b.1)
        } else {
            (a.0, a.1) < (b.0, b.1)
        }
    }

    #[inline]
    fn top(&self) -> Option<u32> {
        self.heap.first().map(|e| e.2)
    }

    fn push(&mut self, rank: u64, seq: u64, slot: u32) {
        if self.pos.len() <= slot as usize {
            self.pos.resize(slot as usize + 1, NONE);
        }
        self.heap.push((rank, seq, slot));
        self.sift_up(self.heap.len() - 1);
    }

    fn remove(&mut self, slot: u32) {
        let i = self.pos[slot as usize] as usize;
        self.pos[slot as usize] = NONE;
        let last = self.heap.pop().expect("slot is in the heap");
        if i < self.heap.len() {
            self.heap[i] = last;
            self.pos[last.2 as usize] = i as u32;
            if i > 0 && Self::above(&last, &self.heap[(i - 1) / 2]) {
                self.sift_up(i);
            } else {
                self.sift_down(i);
            }
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            if !Self::above(&e, &self.heap[parent]) {
                break;
            }
            self.heap[i] = self.heap[parent];
            self.pos[self.heap[i].2 as usize] = i as u32;
            i = parent;
        }
        self.heap[i] = e;
        self.pos[e.2 as usize] = i as u32;
    }

    fn sift_down(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let c = if l + 1 < n && Self::above(&self.heap[l + 1], &self.heap[l]) { l + 1 } else { l };
            if !Self::above(&self.heap[c], &e) {
                break;
            }
            self.heap[i] = self.heap[c];
            self.pos[self.heap[i].2 as usize] = i as u32;
            i = c;
        }
        self.heap[i] = e;
        self.pos[e.2 as usize] = i as u32;
    }
}

/// The flows with queued packets: records plus an open-addressing index from
/// flow id to record (linear probing, at most half full). Flow ids are global,
/// so a port cannot index an array by them; it is consulted once per enqueue.
#[derive(Clone, Debug, Default)]
struct FlowTable {
    recs: Vec<FlowRec>,
    free: Vec<u32>,
    /// Record per bucket, `NONE` if empty; the length is a power of two.
    index: Vec<u32>,
    active: usize,
}

impl FlowTable {
    #[inline]
    fn bucket(&self, flow: u32) -> usize {
        // Fibonacci hashing: consecutive flow ids spread over the table.
        let bits = self.index.len().trailing_zeros();
        (flow.wrapping_mul(0x9E37_79B9) as u64 >> (32 - bits)) as usize
    }

    /// The record of `flow`, created empty if the flow has no queued packet.
    fn get_or_insert(&mut self, flow: u32) -> u32 {
        if 2 * (self.active + 1) > self.index.len() {
            self.grow();
        }
        let mask = self.index.len() - 1;
        let mut b = self.bucket(flow);
        loop {
            let r = self.index[b];
            if r == NONE {
                break;
            }
            if self.recs[r as usize].flow == flow {
                return r;
            }
            b = (b + 1) & mask;
        }
        let rec = FlowRec { flow, head: NONE, tail: NONE };
        let r = match self.free.pop() {
            Some(r) => {
                self.recs[r as usize] = rec;
                r
            }
            None => {
                self.recs.push(rec);
                (self.recs.len() - 1) as u32
            }
        };
        self.index[b] = r;
        self.active += 1;
        r
    }

    /// Forgets record `r` (its flow has no queued packet left).
    fn remove(&mut self, r: u32) {
        let mask = self.index.len() - 1;
        let mut b = self.bucket(self.recs[r as usize].flow);
        while self.index[b] != r {
            b = (b + 1) & mask;
        }
        // Backward-shift deletion: pull later entries of the probe run into the
        // hole unless that would put them before their home bucket.
        let mut hole = b;
        let mut j = b;
        loop {
            j = (j + 1) & mask;
            let e = self.index[j];
            if e == NONE {
                break;
            }
            let home = self.bucket(self.recs[e as usize].flow);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.index[hole] = e;
                hole = j;
            }
        }
        self.index[hole] = NONE;
        self.free.push(r);
        self.active -= 1;
    }

    fn grow(&mut self) {
        let n = (self.index.len() * 2).max(16);
        self.index = vec![NONE; n];
        let mask = n - 1;
        for (r, rec) in self.recs.iter().enumerate() {
            if rec.head == NONE {
                continue;
            }
            let mut b = self.bucket(rec.flow);
            while self.index[b] != NONE {
                b = (b + 1) & mask;
            }
            self.index[b] = r as u32;
        }
    }
}

/// A pFabric priority queue with a byte capacity (see the module doc).
#[derive(Clone, Debug)]
pub struct RankQueue {
    capacity: u64,
    bytes: u64,
    next_seq: u64,
    slots: Vec<Slot>,
    free: Vec<u32>,
    most_urgent: SlotHeap<false>,
    least_urgent: SlotHeap<true>,
    flows: FlowTable,
    /// Eviction candidates while admission decides (kept to reuse its memory).
    victims: Vec<u32>,
}

/// What [`RankQueue::enqueue`] did with the arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankAdmit {
    /// Queued, after evicting this many less urgent packets.
    Queued {
        /// Packets evicted to make room (each was passed to the eviction closure).
        evicted: u32,
    },
    /// Not queued: the caller frees and counts the arriving packet.
    Dropped,
}

impl RankQueue {
    /// An empty queue holding at most `capacity` bytes.
    pub fn new(capacity: u64) -> RankQueue {
        RankQueue {
            capacity,
            bytes: 0,
            next_seq: 0,
            slots: Vec::new(),
            free: Vec::new(),
            most_urgent: SlotHeap::default(),
            least_urgent: SlotHeap::default(),
            flows: FlowTable::default(),
            victims: Vec::new(),
        }
    }

    /// Pre-sizes the queue for `packets` queued packets, so that no enqueue
    /// allocates until it holds more.
    pub fn reserve(&mut self, packets: usize) {
        self.slots.reserve(packets.saturating_sub(self.slots.len()));
        self.free.reserve(packets);
        for pos in [&mut self.most_urgent.pos, &mut self.least_urgent.pos] {
            pos.resize(pos.len().max(packets), NONE);
        }
        self.most_urgent.heap.reserve(packets);
        self.least_urgent.heap.reserve(packets);
        self.flows.recs.reserve(packets);
        self.flows.free.reserve(packets);
        while self.flows.index.len() < 2 * packets {
            self.flows.grow();
        }
    }

    /// Byte capacity.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Changes the byte capacity. Packets already queued stay; a smaller
    /// capacity only constrains later admissions.
    pub fn set_capacity(&mut self, capacity: u64) {
        self.capacity = capacity;
    }

    /// Bytes queued.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.most_urgent.heap.len()
    }

    /// Whether no packet is queued.
    pub fn is_empty(&self) -> bool {
        self.most_urgent.heap.is_empty()
    }

    /// Offers `p` to the queue. Each evicted packet is passed to `evicted`,
    /// largest rank first, so that the caller can release its buffer charge,
    /// count the drop and free it; a dropped arrival is only reported in the
    /// return value.
    pub fn enqueue(&mut self, p: RankedPkt, mut evicted: impl FnMut(RankedPkt)) -> RankAdmit {
        let size = p.size as u64;
        if size > self.capacity {
            return RankAdmit::Dropped;
        }
        let mut n_evicted = 0;
        if self.bytes + size > self.capacity {
            let need = self.bytes + size - self.capacity;
            let mut freed = 0;
            // Take candidates off the least-urgent heap; put them back if they
            // cannot make room.
            while freed < need {
                match self.least_urgent.top() {
                    Some(s) if self.slots[s as usize].pkt.rank > p.rank => {
                        self.least_urgent.remove(s);
                        self.victims.push(s);
                        freed += self.slots[s as usize].pkt.size as u64;
                    }
                    _ => {
                        for s in self.victims.drain(..) {
                            let v = &self.slots[s as usize];
                            self.least_urgent.push(v.pkt.rank, v.seq, s);
                        }
                        return RankAdmit::Dropped;
                    }
                }
            }
            for i in 0..self.victims.len() {
                let s = self.victims[i];
                self.most_urgent.remove(s);
                let victim = self.unlink(s);
                evicted(victim);
            }
            n_evicted = self.victims.len() as u32;
            self.victims.clear();
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let r = self.flows.get_or_insert(p.flow);
        let tail = self.flows.recs[r as usize].tail;
        let slot = Slot { pkt: p, seq, prev: tail, next: NONE, rec: r };
        let s = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = slot;
                s
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        let rec = &mut self.flows.recs[r as usize];
        if tail == NONE {
            rec.head = s;
        } else {
            self.slots[tail as usize].next = s;
        }
        rec.tail = s;
        self.most_urgent.push(p.rank, seq, s);
        self.least_urgent.push(p.rank, seq, s);
        self.bytes += size;
        RankAdmit::Queued { evicted: n_evicted }
    }

    /// Takes slot `s` (already out of both heaps) out of its flow's chain and
    /// returns its packet.
    fn unlink(&mut self, s: u32) -> RankedPkt {
        let Slot { pkt, prev, next, rec, .. } = self.slots[s as usize];
        if prev == NONE {
            self.flows.recs[rec as usize].head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NONE {
            self.flows.recs[rec as usize].tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
        if prev == NONE && next == NONE {
            self.flows.remove(rec);
        }
        self.free.push(s);
        self.bytes -= pkt.size as u64;
        pkt
    }

    /// The slot [`dequeue`](Self::dequeue) would take.
    #[inline]
    fn next_slot(&self) -> Option<u32> {
        let best = self.most_urgent.top()?;
        Some(self.flows.recs[self.slots[best as usize].rec as usize].head)
    }

    /// The queued packets, in no particular order.
    pub fn packets(&self) -> impl Iterator<Item = PktId> + '_ {
        self.most_urgent.heap.iter().map(|e| self.slots[e.2 as usize].pkt.pkt)
    }

    /// The packet [`dequeue`](Self::dequeue) would return, left in place.
    pub fn peek(&self) -> Option<RankedPkt> {
        self.next_slot().map(|s| self.slots[s as usize].pkt)
    }

    /// Removes the next packet to send: the earliest-queued packet of the flow
    /// that holds the smallest rank.
    pub fn dequeue(&mut self) -> Option<RankedPkt> {
        let s = self.next_slot()?;
        self.most_urgent.remove(s);
        self.least_urgent.remove(s);
        Some(self.unlink(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pFabric's port buffer (YAPS `queue_size`) and full packet (1460 + 40 B).
    const PORT: u64 = 36_864;
    const MTU: u32 = 1_500;

    fn pkt(pkt: PktId, rank: u64, flow: u32, size: u32) -> RankedPkt {
        RankedPkt { pkt, rank, flow, size }
    }

    fn drain(q: &mut RankQueue) -> Vec<PktId> {
        std::iter::from_fn(|| q.dequeue()).map(|p| p.pkt).collect()
    }

    #[test]
    fn full_queue_evicts_the_largest_rank_latest_first() {
        let mut q = RankQueue::new(PORT);
        // 24 full packets fill 36,000 of 36,864 bytes; ranks 100..=123, one flow each,
        // and two more packets tie with the largest rank 123 (ids 24 then 25) later.
        for i in 0..22u32 {
            assert_eq!(q.enqueue(pkt(i, 100 + i as u64, i, MTU), |_| panic!()), RankAdmit::Queued { evicted: 0 });
        }
        q.enqueue(pkt(24, 123, 24, MTU), |_| panic!());
        q.enqueue(pkt(25, 123, 25, MTU), |_| panic!());
        assert_eq!(q.bytes(), 24 * MTU as u64);
        let mut out = vec![];
        // More urgent arrival: evicts the largest rank, and of the two 123s the later one.
        assert_eq!(q.enqueue(pkt(30, 5, 30, MTU), |p| out.push(p.pkt)), RankAdmit::Queued { evicted: 1 });
        assert_eq!(out, [25]);
        assert_eq!(q.enqueue(pkt(31, 6, 31, MTU), |p| out.push(p.pkt)), RankAdmit::Queued { evicted: 1 });
        assert_eq!(out, [25, 24]);
        // An arrival tying with the largest queued rank (121) is the one dropped.
        assert_eq!(q.enqueue(pkt(32, 121, 32, MTU), |p| out.push(p.pkt)), RankAdmit::Dropped);
        // ...and so is a less urgent one.
        assert_eq!(q.enqueue(pkt(33, 500, 33, MTU), |p| out.push(p.pkt)), RankAdmit::Dropped);
        assert_eq!(out, [25, 24]);
        assert_eq!(q.len(), 24);
        assert_eq!(q.bytes(), 24 * MTU as u64);
    }

    #[test]
    fn eviction_frees_several_small_packets_or_none() {
        let mut q = RankQueue::new(4_000);
        // 3,000 bytes of small, non-urgent packets plus one urgent 1,000-byte packet.
        for i in 0..6u32 {
            q.enqueue(pkt(i, 1_000 + i as u64, 7, 500), |_| panic!());
        }
        q.enqueue(pkt(6, 1, 8, 1_000), |_| panic!());
        assert_eq!(q.bytes(), 4_000);
        let mut out = vec![];
        // A 1,400-byte arrival of rank 1,003 may only evict ranks 1,004 and 1,005 (1,000 bytes):
        // not enough, so nothing is evicted and the arrival is dropped.
        assert_eq!(q.enqueue(pkt(10, 1_003, 9, 1_400), |p| out.push(p.pkt)), RankAdmit::Dropped);
        assert!(out.is_empty());
        assert_eq!(q.bytes(), 4_000);
        // The same size with rank 2 evicts three packets, largest rank first.
        assert_eq!(q.enqueue(pkt(11, 2, 9, 1_400), |p| out.push(p.pkt)), RankAdmit::Queued { evicted: 3 });
        assert_eq!(out, [5, 4, 3]);
        assert_eq!(q.bytes(), 4_000 - 1_500 + 1_400);
        // Larger than the whole capacity: dropped without touching the queue.
        assert_eq!(q.enqueue(pkt(12, 0, 9, 4_001), |p| out.push(p.pkt)), RankAdmit::Dropped);
        assert_eq!(drain(&mut q), [6, 11, 0, 1, 2]);
        assert_eq!(q.bytes(), 0);
    }

    #[test]
    fn dequeue_sends_the_earliest_packet_of_the_most_urgent_flow() {
        let mut q = RankQueue::new(PORT);
        // Flow 1's remaining size shrinks as it sends: ranks 9000, 7500, 6000.
        // Flow 2 is at rank 7000. The best rank (6000) is flow 1's last packet,
        // but flow 1's earliest packet leaves first although its rank (9000) is the worst.
        q.enqueue(pkt(10, 9_000, 1, MTU), |_| ());
        q.enqueue(pkt(20, 7_000, 2, MTU), |_| ());
        q.enqueue(pkt(11, 7_500, 1, MTU), |_| ());
        q.enqueue(pkt(12, 6_000, 1, MTU), |_| ());
        assert_eq!(q.peek().map(|p| p.pkt), Some(10));
        assert_eq!(q.dequeue().map(|p| p.pkt), Some(10));
        assert_eq!(q.dequeue().map(|p| p.pkt), Some(11));
        assert_eq!(q.dequeue().map(|p| p.pkt), Some(12));
        // Flow 1 gone: flow 2.
        assert_eq!(q.dequeue().map(|p| p.pkt), Some(20));
        assert_eq!(q.dequeue(), None);
        assert_eq!(q.bytes(), 0);
    }

    #[test]
    fn equal_ranks_are_served_in_arrival_order() {
        let mut q = RankQueue::new(PORT);
        // Three flows at the same rank: the flow whose packet came first wins; ACKs (rank 0) first.
        q.enqueue(pkt(1, 4_000, 3, MTU), |_| ());
        q.enqueue(pkt(2, 4_000, 1, MTU), |_| ());
        q.enqueue(pkt(3, 4_000, 2, MTU), |_| ());
        q.enqueue(pkt(4, 4_000, 3, MTU), |_| ());
        q.enqueue(pkt(5, 0, 9, 64), |_| ());
        q.enqueue(pkt(6, 0, 8, 64), |_| ());
        assert_eq!(drain(&mut q), [5, 6, 1, 2, 3, 4]);
    }

    #[test]
    fn capacity_is_accounted_in_bytes() {
        let mut q = RankQueue::new(3_000);
        assert!(matches!(q.enqueue(pkt(1, 10, 1, 1_500), |_| ()), RankAdmit::Queued { .. }));
        assert!(matches!(q.enqueue(pkt(2, 10, 1, 1_436), |_| ()), RankAdmit::Queued { .. }));
        // 2,936 queued: a 64-byte packet fits exactly, a 65-byte one does not.
        assert!(matches!(q.enqueue(pkt(3, 10, 1, 64), |_| ()), RankAdmit::Queued { evicted: 0 }));
        assert_eq!(q.bytes(), 3_000);
        assert_eq!(q.enqueue(pkt(4, 10, 1, 1), |_| ()), RankAdmit::Dropped);
        q.dequeue();
        assert_eq!(q.bytes(), 1_500);
        assert_eq!(q.len(), 2);
        // Freed slots are reused; the counts stay exact after many rounds of an
        // urgent packet that comes and goes.
        for round in 0..1_000u32 {
            q.enqueue(pkt(100 + round, 0, 100 + round, 700), |_| ());
            assert_eq!(q.dequeue().map(|p| p.pkt), Some(100 + round));
        }
        assert_eq!(q.len(), 2);
        assert_eq!(q.bytes(), 1_500);
        assert!(q.slots.len() <= 4);
    }

    /// The rules written as plainly as possible: packets in arrival order.
    struct Reference {
        capacity: u64,
        queued: Vec<RankedPkt>,
    }

    impl Reference {
        fn bytes(&self) -> u64 {
            self.queued.iter().map(|p| p.size as u64).sum()
        }

        fn enqueue(&mut self, p: RankedPkt, evicted: &mut Vec<PktId>) -> bool {
            if p.size as u64 > self.capacity {
                return false;
            }
            let mut kept = self.queued.clone();
            let mut out = vec![];
            while kept.iter().map(|p| p.size as u64).sum::<u64>() + p.size as u64 > self.capacity {
                // Largest rank, the latest of equals (`max_by_key` keeps the last maximum).
                let Some((i, worst)) = kept.iter().enumerate().max_by_key(|(_, q)| q.rank) else {
                    return false;
                };
                if worst.rank <= p.rank {
                    return false;
                }
                out.push(worst.pkt);
                kept.remove(i);
            }
            kept.push(p);
            self.queued = kept;
            evicted.extend(out);
            true
        }

        fn dequeue(&mut self) -> Option<PktId> {
            // First minimum in arrival order, then that flow's first packet.
            let best = self.queued.iter().min_by_key(|p| p.rank)?.flow;
            let i = self.queued.iter().position(|p| p.flow == best)?;
            Some(self.queued.remove(i).pkt)
        }
    }

    #[test]
    fn matches_the_plain_rules_on_random_traffic() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(15);
        let mut q = RankQueue::new(20_000);
        let mut r = Reference { capacity: 20_000, queued: vec![] };
        let (mut evictions, mut drops) = (0, 0);
        for id in 0..20_000u32 {
            if rng.random_bool(0.55) {
                let p = pkt(id, rng.random_range(0..40), rng.random_range(0..12), rng.random_range(64..=1_500));
                let mut got = vec![];
                let mut want = vec![];
                let admitted = matches!(q.enqueue(p, |v| got.push(v.pkt)), RankAdmit::Queued { .. });
                assert_eq!(admitted, r.enqueue(p, &mut want), "packet {id}");
                assert_eq!(got, want, "evictions for packet {id}");
                evictions += got.len();
                drops += !admitted as usize;
            } else {
                assert_eq!(q.dequeue().map(|p| p.pkt), r.dequeue());
            }
            assert_eq!(q.bytes(), r.bytes());
            assert_eq!(q.len(), r.queued.len());
        }
        // The run exercised both kinds of loss.
        assert!(evictions > 1_000 && drops > 100, "{evictions} evictions, {drops} drops");
    }
}
