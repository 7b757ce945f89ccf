//! Host NIC state: the transmit scheduler over the host's flows, and the
//! receiver's grant scheduler.
//!
//! The scheduler is round robin (or smallest remaining first, see
//! [`ReadySet`]) over eligible flows with bursts: a flow that
//! may send (it has data, window room and its pacer allows it) waits in the
//! `ready` FIFO; one whose pacer says "not before t" waits in `sleeping`, a
//! heap keyed by t. A picked flow sends up to `burst` bytes back to back.
//! Only flows that can send are in either structure, so a decision costs the
//! same with 16 flows or 8192.

use crate::units::Time;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Where a flow is in its NIC's scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedState {
    /// Not schedulable (no data, window full, not started, finished).
    Idle,
    /// In the `ready` FIFO.
    Ready,
    /// In the `sleeping` heap (pacer).
    Sleeping,
    /// Parked: its class is paused by PFC.
    Parked,
    /// Currently sending a burst.
    Current,
}

/// A host NIC.
#[derive(Clone, Debug, Default)]
pub struct Host {
    /// The NIC port.
    pub port: u32,
    /// Flows that may send now, in the NIC's order (round robin or
    /// smallest remaining first).
    pub ready: ReadySet,
    /// Flows waiting for their pacer: (time, flow, generation).
    pub sleeping: BinaryHeap<Reverse<(Time, u32, u32)>>,
    /// Flows whose class is paused by PFC.
    pub parked: Vec<u32>,
    /// Pending wake-up time of the NIC (`Time::MAX` if none).
    pub wake_at: Time,
    /// Flow sending its burst now.
    pub current: Option<u32>,
    /// Bytes left in the current burst.
    pub burst_left: u64,
    /// The receiver half: grants to the flows arriving at this host
    /// (receiver-driven transports only; empty otherwise).
    pub grants: GrantScheduler,
}

/// The order in which a NIC serves its ready flows (`host.scheduler`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NicOrder {
    /// Round robin: a FIFO, a flow goes to the back after its burst (today's NIC).
    #[default]
    RoundRobin,
    /// Smallest remaining first (SRPT): the ready flow with the fewest
    /// unacknowledged bytes of its size goes first.
    Srpt,
}

/// The flows of a NIC that may send now.
///
/// Round robin keeps a FIFO. Smallest-remaining-first keeps a binary heap
/// keyed by (remaining bytes, arrival number, flow): a decision costs
/// O(log r) in the r ready flows, never a scan, whatever the number of idle
/// flows. The key is taken when the flow becomes ready (a flow's remaining
/// bytes only shrink while it waits, and it is re-keyed after each burst).
/// Ties go to the flow that became ready first, which makes flows of equal
/// remaining size (and all long-lived flows) share the NIC round robin.
#[derive(Clone, Debug, Default)]
pub struct ReadySet {
    order: NicOrder,
    fifo: VecDeque<u32>,
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    arrivals: u64,
}

impl ReadySet {
    /// An empty set served in `order`.
    pub fn new(order: NicOrder) -> Self {
        ReadySet { order, ..ReadySet::default() }
    }

    /// The order this set serves flows in.
    pub fn order(&self) -> NicOrder {
        self.order
    }

    /// Adds flow `fid`, which has `remaining` bytes left (read only by
    /// smallest-remaining-first).
    #[inline]
    pub fn push_back(&mut self, fid: u32, remaining: u64) {
        match self.order {
            NicOrder::RoundRobin => self.fifo.push_back(fid),
            NicOrder::Srpt => {
                self.arrivals += 1;
                self.heap.push(Reverse((remaining, self.arrivals, fid)));
            }
        }
    }

    /// Takes the flow that goes next. Only one of the two structures is
    /// ever used, so the FIFO is tried first without looking at the order:
    /// round robin pays what a bare FIFO costs.
    #[inline]
    pub fn pop_front(&mut self) -> Option<u32> {
        match self.fifo.pop_front() {
            Some(fid) => Some(fid),
            None => self.heap.pop().map(|Reverse((_, _, fid))| fid),
        }
    }

    /// Smallest-remaining-first: the remaining bytes of the flow that goes
    /// next (`None` if none waits, or in round-robin order).
    pub fn best_remaining(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((remaining, _, _))| *remaining)
    }

    /// No flow is waiting.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.fifo.is_empty() && self.heap.is_empty()
    }
}

/// A host's receiver scheduler: the flows arriving at the host that wait for
/// grants, served by one `RecvWake` event per host (as the NIC's `NicWake`).
///
/// The minimal credit transport grants one packet per token, round robin
/// over `waiting`, paced at the host's downlink rate; receiver-driven
/// protocols replace the order and the pacing rule, not the structure
/// (pHost: `policy` says so, and each token goes to the best eligible flow
/// of `waiting`, smallest remaining first).
#[derive(Clone, Debug)]
pub struct GrantScheduler {
    /// Flows with bytes left to grant (round robin: in their order).
    pub waiting: VecDeque<u32>,
    /// How the next token is chosen (set by the first flow that asks).
    pub policy: GrantPolicy,
    /// Earliest time the next token may go (the last grant's packet time
    /// at the downlink rate after the previous token).
    pub next_token: Time,
    /// Pending `RecvWake` time (`Time::MAX` if none).
    pub wake_at: Time,
    /// EQDS: flows whose demand a pull has met, in turn for unrequested
    /// pulls when no flow wants one (`host.eqds_slow_pulls`).
    pub idle: VecDeque<u32>,
    /// pHost with `host.phost_hold = "yaps"`: token slots still to pass
    /// without a token (YAPS's `hold_on`).
    pub hold_slots: u64,
}

impl Default for GrantScheduler {
    fn default() -> Self {
        GrantScheduler {
            waiting: VecDeque::new(),
            policy: GrantPolicy::RoundRobin,
            next_token: 0,
            wake_at: Time::MAX,
            idle: VecDeque::new(),
            hold_slots: 0,
        }
    }
}

/// How a host's receiver scheduler chooses the flow of its next token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GrantPolicy {
    /// The credit transport: one packet per token, round robin.
    #[default]
    RoundRobin,
    /// pHost: the eligible flow with the fewest bytes not yet received
    /// (ties: earlier start), skipping flows with a full token window or
    /// in their resend timeout.
    PHost,
    /// Homa: grants to the `k` messages (one per sender) with the fewest
    /// bytes left, keeping `RTTbytes` outstanding for each, and RESENDs
    /// for messages gone silent.
    Homa,
    /// HOPASS's fast layer: WRR between the small flows (smallest remaining
    /// first) and the large flows (smallest OPT / (wait + theta) among those
    /// whose class's token rate allows a token), `sim/hopass.rs`.
    Hopass,
    /// NDP's pull pacer: one pull per packet time, round robin over the
    /// flows with pulls waiting (`sim/ndp.rs`).
    Ndp,
    /// EQDS's pull pacer: one pull per packet time, first round robin over
    /// the flows owed pulls for NACKed packets, then over the flows whose
    /// pull target is above the pulls they have had (`sim/eqds.rs`).
    Eqds,
}
