//! Host NIC state: the transmit scheduler over the host's flows.
//!
//! The scheduler is round robin over eligible flows with bursts: a flow that
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
    /// Flows that may send now, in round-robin order.
    pub ready: VecDeque<u32>,
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
}
