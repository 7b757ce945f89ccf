//! Host NIC state: flows (queue pairs) and the transmit scheduler.
//!
//! The scheduler is round robin over eligible flows with bursts: a flow that
//! may send (it has data, window room and its pacer allows it) waits in the
//! `ready` FIFO; one whose pacer says "not before t" waits in `sleeping`, a
//! heap keyed by t. A picked flow sends up to `burst` bytes back to back.
//! Only flows that can send are in either structure, so a decision costs the
//! same with 16 flows or 8192.

use crate::cc::{Cc, FlowCtl};
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

/// A flow: sender and receiver state of one queue pair.
#[derive(Clone, Debug)]
pub struct Flow {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Traffic class (switch queue).
    pub class: u8,
    /// Start time.
    pub start: Time,
    /// Stop time, if any.
    pub stop: Option<Time>,
    /// ECMP hash of the forward direction (the reverse direction uses a variant).
    pub hash: u32,
    /// Congestion control state.
    pub cc: Cc,
    /// What the CC controls, and facts about the path.
    pub ctl: FlowCtl,
    /// Earliest time the pacer lets the flow send (fractional picoseconds).
    pub next_avail: f64,
    /// Scheduler state.
    pub sched: SchedState,
    /// Generation of the scheduler entry (stale heap entries are skipped).
    pub sched_gen: u32,
    /// Wire bytes of the last data packet (to rescale the pacer on rate change).
    pub last_pkt_bytes: u32,
    /// Last time the cumulative ACK advanced (or sending restarted).
    pub last_progress: Time,
    /// Generation of the CC timer.
    pub timer_gen: u32,
    /// Deadline of the scheduled CC timer.
    pub timer_at: Option<Time>,
    /// The flow has started.
    pub started: bool,
    /// All its data is acknowledged (finite flows) — time of completion.
    pub finished: Option<Time>,
    /// Receiver: next expected byte.
    pub rcv_nxt: u64,
    /// Receiver: data packets received since the last ACK.
    pub unacked_pkts: u32,
    /// Receiver: time of the last CNP sent.
    pub last_cnp: Option<Time>,
    /// Receiver: time and expected sequence of the last NACK.
    pub last_nack: Option<(Time, u64)>,
    /// Monitor interval: start time and counters since the last probe reply.
    pub mi_start: Time,
    /// Monitor interval: data wire bytes sent.
    pub mi_bytes: u64,
    /// Monitor interval: data packets sent.
    pub mi_pkts: u64,
    /// Monitor interval: NACKs received.
    pub mi_nacks: u32,
    /// Monitor interval: CNPs received.
    pub mi_cnps: u32,
    /// Message boundaries: (arrival time, end sequence, completion time).
    pub messages: Vec<(Time, u64, Option<Time>)>,
    /// Index of the first incomplete message.
    pub msg_next: usize,
    /// Statistics: data wire bytes sent, including retransmissions.
    pub sent_bytes: u64,
    /// Statistics: payload bytes retransmitted.
    pub retx_bytes: u64,
    /// Statistics: NACKs, CNPs and timeouts received.
    pub nacks: u64,
    /// CNPs received.
    pub cnps: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// INT records carried by the last ACK (0 if the flow does not ask for INT).
    pub last_int_hops: u8,
    /// Loss recovery of this flow.
    pub transport: crate::cc::Transport,
    /// TCP receiver: out-of-order byte ranges held beyond `rcv_nxt`, sorted.
    pub ooo: Vec<(u64, u64)>,
    /// TCP sender: consecutive duplicate ACKs.
    pub dup_acks: u32,
    /// TCP sender: in fast recovery until the cumulative ACK reaches this.
    pub recover: Option<u64>,
    /// TCP sender: segment to retransmit before any new data.
    pub retx: Option<u64>,
    /// TCP sender: smoothed RTT and its variation (ps), once sampled.
    pub srtt: Option<(f64, f64)>,
    /// Current retransmission timeout (ps), backed off after timeouts.
    pub rto: Time,
    /// Smallest RTT measured.
    pub min_rtt: Option<Time>,
    /// Highest byte ever sent (to count retransmissions).
    pub max_sent: u64,
    /// Payload delivered in order at the start and end of the window.
    pub delivered_at_window: [Option<u64>; 2],
    /// Payload delivered at the previous sample.
    pub delivered_at_sample: u64,
    /// Ideal completion time in an empty network (finite flows).
    pub ideal_fct: Time,
}

impl Flow {
    /// Bytes sent and not yet acknowledged.
    #[inline]
    pub fn inflight(&self) -> u64 {
        self.ctl.snd_nxt.saturating_sub(self.ctl.snd_una)
    }

    /// Whether the flow may put a data packet on the wire now (pacer aside).
    #[inline]
    pub fn can_send(&self, max_outstanding: u64) -> bool {
        self.started
            && self.finished.is_none()
            && (self.retx.is_some()
                || (self.ctl.snd_nxt < self.ctl.app_limit && self.inflight() < self.ctl.window.min(max_outstanding)))
    }
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
