//! A flow: one queue pair, the state both of its ends keep.
//!
//! A flow's state is split by who uses it, the way a transport splits into a
//! sender half and a receiver half:
//!
//! * [`FlowPath`]: what is fixed when the flow is created (endpoints, traffic
//!   class, ECMP hash, start and stop, loss recovery);
//! * [`Sender`]: the sending NIC's state (pacer, place in the NIC scheduler,
//!   retransmission point, timers, the application's messages);
//! * [`FlowCtl`]: what the congestion control sets (rate, window) and reads
//!   (path facts, sequence numbers);
//! * [`Receiver`]: the receiving NIC's state (next expected byte, out-of-order
//!   ranges, ACK coalescing, CNP and NACK pacing);
//! * [`TcpRecovery`]: NewReno's duplicate-ACK and fast-recovery state and the
//!   RTT estimator behind the adaptive timeout;
//! * [`MonitorInterval`]: what the sender measured since the last RTT-probe
//!   reply (the ADPG agent's observation);
//! * [`FlowStats`]: counters for the results.
//!
//! Every data packet a sender builds touches `snd`, `ctl`, `path`, `mi` and
//! `stats`; they come first, and `Flow` is `repr(C)` so that this order is
//! the memory order (the compiler would otherwise be free to interleave the
//! parts). The receiver's state, used at the other end, comes after them.

use crate::cc::{Cc, FlowCtl, Transport};
use crate::host::SchedState;
use crate::units::Time;
use std::collections::VecDeque;

/// A flow: sender and receiver state of one queue pair.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Flow {
    /// The sending NIC's state.
    pub snd: Sender,
    /// What the CC controls, and facts about the path.
    pub ctl: FlowCtl,
    /// Endpoints, class, ECMP hash, schedule and transport.
    pub path: FlowPath,
    /// Sender counters since the last RTT-probe reply.
    pub mi: MonitorInterval,
    /// Counters for the results.
    pub stats: FlowStats,
    /// TCP loss-recovery state (unused by go-back-N flows).
    pub tcp: TcpRecovery,
    /// The receiving NIC's state.
    pub rcv: Receiver,
    /// Congestion control state.
    pub cc: Cc,
    /// pHost's token state (`Some` on pHost flows only).
    pub ph: Option<Box<PHostFlow>>,
    /// Homa's message state (`Some` on Homa flows only).
    pub homa: Option<Box<crate::homa::HomaFlow>>,
    /// HOPASS's receiver state (`Some` on HOPASS flows only; their tokens
    /// are in `ph`, the same machinery as pHost's).
    pub hp: Option<Box<HopassFlow>>,
    /// The SACK scoreboard (`Some` on TCP flows with `host.sack` only).
    pub sack: Option<Box<crate::sack::SackBoard>>,
    /// NDP's (or EQDS's) state, both halves (`Some` on their flows only).
    pub nd: Option<Box<NdpFlow>>,
}

/// What is fixed when a flow is created.
#[derive(Clone, Debug)]
pub struct FlowPath {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Traffic class (switch queue).
    pub class: u8,
    /// ECMP hash of the forward direction (the reverse direction uses a variant).
    pub hash: u32,
    /// Start time.
    pub start: Time,
    /// Stop time, if any.
    pub stop: Option<Time>,
    /// Loss recovery of this flow.
    pub transport: Transport,
}

/// The sending NIC's state of a flow.
#[derive(Clone, Debug)]
pub struct Sender {
    /// Earliest time the pacer lets the flow send (fractional picoseconds).
    pub next_avail: f64,
    /// Scheduler state.
    pub sched: SchedState,
    /// Generation of the scheduler entry (stale heap entries are skipped).
    pub sched_gen: u32,
    /// Wire bytes of the last data packet (to rescale the pacer on rate change).
    pub last_pkt_bytes: u32,
    /// Generation of the CC timer.
    pub timer_gen: u32,
    /// The flow has started.
    pub started: bool,
    /// All its data is acknowledged (finite flows): time of completion. It
    /// lives here rather than with the statistics because every scheduling
    /// decision reads it.
    pub finished: Option<Time>,
    /// Segment to retransmit before any new data (TCP fast retransmit and
    /// NewReno partial ACKs).
    pub retx: Option<u64>,
    /// Highest byte ever sent (to count retransmissions).
    pub max_sent: u64,
    /// Last time the cumulative ACK advanced (or sending restarted).
    pub last_progress: Time,
    /// Current retransmission timeout (ps): fixed for go-back-N, adaptive and
    /// backed off for TCP recovery.
    pub rto: Time,
    /// Deadline of the scheduled CC timer.
    pub timer_at: Option<Time>,
    /// Message boundaries: (arrival time, end sequence, completion time).
    pub messages: Vec<(Time, u64, Option<Time>)>,
    /// Index of the first incomplete message.
    pub msg_next: usize,
    /// Credit gate of receiver-driven transports: the flow may send bytes
    /// below this offset (the last grant). Unused by other transports.
    pub granted: u64,
    /// Priority the last grant asked the granted data to use.
    pub grant_prio: u8,
    /// pFabric: bytes the receiver holds beyond `snd_una` (its last ACK).
    pub sacked: u64,
    /// pFabric: timeouts since the last ACK.
    pub timeouts_in_row: u32,
    /// pFabric probe mode: no data leaves until a probe is answered.
    pub probing: bool,
    /// pHost: bytes the receiver still misses, as its last token said (the
    /// key of the sender's smallest-remaining-first order).
    pub peer_remaining: u64,
}

/// The receiving NIC's state of a flow.
#[derive(Clone, Debug, Default)]
pub struct Receiver {
    /// Next expected byte.
    pub rcv_nxt: u64,
    /// Data packets received since the last ACK.
    pub unacked_pkts: u32,
    /// Time of the last CNP sent.
    pub last_cnp: Option<Time>,
    /// Time and expected sequence of the last NACK.
    pub last_nack: Option<(Time, u64)>,
    /// TCP: out-of-order byte ranges held beyond `rcv_nxt`, sorted.
    pub ooo: Vec<(u64, u64)>,
    /// Receiver-driven transports: bytes the sender announced (its last RTS).
    pub requested: u64,
    /// Receiver-driven transports: bytes granted so far (the offset of the
    /// last grant).
    pub granted: u64,
    /// Receiver-driven transports: the flow waits in its host's grant scheduler.
    pub in_grant_queue: bool,
}

/// pHost's token state of a flow, both halves. Boxed in [`Flow::ph`] and
/// present on pHost flows only, so that flows of other transports carry 8
/// bytes for it rather than about 90 (every byte of `Flow` costs cache
/// misses at thousands of flows).
#[derive(Clone, Debug, Default)]
pub struct PHostFlow {
    /// Sender: unspent tokens in expiry order: (expiry, byte offset of the
    /// packet the token names, token number modulo 256).
    pub tokens: VecDeque<(Time, u64, u8)>,
    /// Receiver: distinct payload bytes received (in order or not).
    pub received: u64,
    /// Receiver: tokens issued to the flow so far, free ones included (the
    /// number of the last token).
    pub tokens_sent: u64,
    /// Receiver: the highest token number seen in the flow's data.
    pub token_seen: u64,
    /// Receiver: when the last token was sent.
    pub last_token_at: Time,
    /// Receiver: tokens to issue before the resend timeout (one per packet,
    /// raised by what is missing after each timeout).
    pub token_goal: u64,
    /// Receiver: no token before this time (resend timeout).
    pub paused_until: Time,
    /// Receiver: the byte offset where the search for the next missing packet
    /// resumes (cycling through the holes).
    pub token_cursor: u64,
    /// Sender: one bit per packet (byte offset / payload) already sent.
    /// Tokens reach the sender out of order (sprayed paths, expiry order),
    /// so a packet below the highest one sent may still be a first
    /// transmission; this tells a resend from it.
    pub sent: Vec<u64>,
}

impl PHostFlow {
    /// Records that packet `index` went out; true if it had gone out before.
    pub fn mark_sent(&mut self, index: u64) -> bool {
        let (word, bit) = ((index / 64) as usize, 1u64 << (index % 64));
        if word >= self.sent.len() {
            self.sent.resize(word + 1, 0);
        }
        let before = self.sent[word] & bit != 0;
        self.sent[word] |= bit;
        before
    }
}

/// HOPASS's per-flow receiver state beyond the tokens (which a HOPASS flow
/// keeps in [`Flow::ph`], as pHost does). Boxed in [`Flow::hp`], present on
/// HOPASS flows only.
#[derive(Clone, Debug, Default)]
pub struct HopassFlow {
    /// When the receiver first heard of the flow (its RTS): the start of
    /// its wait in the large-flow score.
    pub arrived: Option<Time>,
    /// Pioneer packets the sender sent without tokens.
    pub pioneers: u64,
    /// The end of the highest data received: packets are named and sent in
    /// increasing order on one FIFO path, so a packet arriving beyond it
    /// reveals that the packets between were lost.
    pub high_end: u64,
    /// Byte offsets of packets found lost that the next tokens name first.
    pub lost: std::collections::VecDeque<u64>,
    /// The first missing byte as last seen when naming a packet, since when
    /// it has not moved, and the highest data received then: a hole below
    /// that mark that outlives a resend timeout had its retransmission lost
    /// too, and is named again.
    pub stalled: (u64, Time, u64),
}

/// NDP's per-flow state, both halves. Boxed in [`Flow::nd`], present on NDP
/// flows only.
#[derive(Clone, Debug, Default)]
pub struct NdpFlow {
    /// Sender: packets it may still send without a pull (the initial window,
    /// and after a timeout the packets it resends at once).
    pub unpulled: u32,
    /// Sender: the highest pull number heard (pull numbers count a flow's
    /// pulls, so a lost pull is made good by the next one).
    pub max_pull: u64,
    /// Sender: pulls spent so far.
    pub pulls_spent: u64,
    /// Sender: byte offsets of packets to resend before new data (NACKed, or
    /// unacknowledged at a timeout), lowest first.
    pub resend: std::collections::BTreeSet<u64>,
    /// Sender: ranges acknowledged beyond `snd_una`, sorted (each ACK names
    /// one packet, so the cumulative point moves when the holes fill).
    pub acked: Vec<(u64, u64)>,
    /// Receiver: pulls released so far (the number the last one carried).
    pub pull_no: u64,
    /// Receiver: pulls requested and not yet released by the host's pacer
    /// (NDP); pulls owed for NACKed packets (EQDS).
    pub pulls_queued: u32,
    /// EQDS sender: still speculating (no feedback heard yet); `unpulled`
    /// is then its speculative credit, which the first feedback ends.
    pub speculating: bool,
    /// EQDS receiver: the highest pull target heard in the flow's data (the
    /// pull number up to which its sender wants pulls).
    pub pull_target: u64,
    /// EQDS sender: its window in packets (`host.eqds_window`, or one BDP):
    /// the speculative credit at its start, and the most pulls its data
    /// asks for beyond the credit it holds.
    pub window: u32,
    /// EQDS receiver: in the pacer's list of idle flows, which get
    /// unrequested pulls (`host.eqds_slow_pulls`).
    pub slow_queued: bool,
}

impl NdpFlow {
    /// Sender: packets it may send now (the initial window's, then pulls').
    #[inline]
    pub fn credit(&self) -> u64 {
        self.unpulled as u64 + self.max_pull.saturating_sub(self.pulls_spent)
    }
}

/// TCP sender loss-recovery state (RFC 6582 NewReno, RFC 6298 estimator).
#[derive(Clone, Debug, Default)]
pub struct TcpRecovery {
    /// Consecutive duplicate ACKs.
    pub dup_acks: u32,
    /// In fast recovery until the cumulative ACK reaches this.
    pub recover: Option<u64>,
    /// NewReno (no SACK): a partial ACK has come in this recovery.
    pub partial_acked: bool,
    /// `host.newreno_timer = "first_partial_ack"`: after the first partial
    /// ACK of a recovery, later ones leave the retransmission timer running.
    pub first_partial_ack_timer: bool,
    /// Smoothed RTT and its variation (ps), once sampled.
    pub srtt: Option<(f64, f64)>,
}

/// What the sender measured since the last RTT-probe reply.
#[derive(Clone, Debug, Default)]
pub struct MonitorInterval {
    /// Start of the interval.
    pub start: Time,
    /// Data wire bytes sent.
    pub bytes: u64,
    /// Data packets sent.
    pub pkts: u64,
    /// NACKs received.
    pub nacks: u32,
    /// CNPs received.
    pub cnps: u32,
}

/// Per-flow counters for the results.
#[derive(Clone, Debug, Default)]
pub struct FlowStats {
    /// Data wire bytes sent, including retransmissions.
    pub sent_bytes: u64,
    /// Payload bytes retransmitted.
    pub retx_bytes: u64,
    /// NACKs received.
    pub nacks: u64,
    /// CNPs received.
    pub cnps: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// INT records carried by the last ACK (0 if the flow does not ask for INT).
    pub last_int_hops: u8,
    /// Smallest RTT measured.
    pub min_rtt: Option<Time>,
    /// Payload received (in order or not, [`Receiver::received_bytes`]) at
    /// the start and end of the window.
    pub received_at_window: [Option<u64>; 2],
    /// Payload received at the previous sample.
    pub received_at_sample: u64,
    /// Ideal completion time in an empty network (finite flows).
    pub ideal_fct: Time,
    /// pHost: tokens that expired at the sender unspent.
    pub expired_tokens: u64,
}

impl Receiver {
    /// Distinct payload bytes received so far, in order or not: `rcv_nxt`
    /// plus the out-of-order ranges held beyond it. The flow's throughput is
    /// counted from this rather than from `rcv_nxt`, because transports that
    /// take packets out of order (pHost's tokens over sprayed paths, Homa,
    /// SACK) would otherwise show a large flow's bytes only when its first
    /// hole fills, as a burst above the line rate.
    pub fn received_bytes(&self) -> u64 {
        self.rcv_nxt + self.ooo.iter().map(|&(a, b)| b - a).sum::<u64>()
    }
}

impl Flow {
    /// Receiver: every byte of the flow has arrived (a receiver-driven
    /// transport then grants, tokens or pulls nothing more for it).
    #[inline]
    pub fn received_all(&self) -> bool {
        self.rcv.rcv_nxt >= self.ctl.size
    }

    /// Bytes sent and not yet acknowledged.
    #[inline]
    pub fn inflight(&self) -> u64 {
        self.ctl.snd_nxt.saturating_sub(self.ctl.snd_una)
    }

    /// Bytes the sender counts against its window: RFC 6675's pipe on SACK
    /// flows, the bytes in flight otherwise.
    #[inline]
    pub fn pipe(&self) -> u64 {
        match self.ctl.sack_pipe {
            Some(p) => p,
            None => self.inflight(),
        }
    }

    /// Whether the flow may put a data packet on the wire now (pacer aside).
    #[inline(always)]
    pub fn can_send(&self, max_outstanding: u64) -> bool {
        self.snd.started
            && self.snd.finished.is_none()
            && !self.ctl.paused
            && (self.snd.retx.is_some()
                || (self.ctl.snd_nxt < self.ctl.app_limit && self.pipe() < self.ctl.window.min(max_outstanding))
                || (self.ctl.sack_pipe.is_some()
                    && self
                        .sack
                        .as_ref()
                        .is_some_and(|b| b.next_lost.is_some() && self.pipe() < self.ctl.window.min(max_outstanding)))
                || matches!(
                    self.path.transport,
                    Transport::PHost | Transport::Homa | Transport::Hopass | Transport::Ndp | Transport::Eqds
                ))
            && self.transport_allows()
    }

    /// The transport's own gate, evaluated only when everything else already
    /// allows sending: a credit-gated transport sends only below the offset
    /// its receiver has granted, a pFabric flow in probe mode sends no data;
    /// other transports are never gated.
    #[inline]
    pub fn transport_allows(&self) -> bool {
        match self.path.transport {
            Transport::GoBackN | Transport::Tcp => true,
            Transport::Credit => self.ctl.snd_nxt < self.snd.granted,
            Transport::PFabric => !self.snd.probing,
            Transport::PHost | Transport::Hopass => self.ph.as_ref().is_some_and(|p| !p.tokens.is_empty()),
            // Granted new data, or a range a RESEND asked for.
            Transport::Homa => {
                self.ctl.snd_nxt < self.snd.granted || self.homa.as_ref().is_some_and(|h| !h.resend.is_empty())
            }
            Transport::Ndp | Transport::Eqds => self.pull_allows(),
        }
    }

    /// NDP and EQDS: credit (the initial window or a pull) and a packet to
    /// resend or new data. Out of line, so that the gate of every other
    /// transport stays small enough to inline where flows are scheduled.
    #[inline(never)]
    fn pull_allows(&self) -> bool {
        self.nd
            .as_ref()
            .is_some_and(|n| n.credit() > 0 && (!n.resend.is_empty() || self.ctl.snd_nxt < self.ctl.app_limit))
    }

    /// pHost: discards the tokens that expired before `now` (a token that
    /// cannot be spent in time is wasted; the receiver asks again later).
    /// Called before every "may it send?" of the NIC; other transports return
    /// at the tag.
    #[inline]
    pub fn drop_expired_tokens(&mut self, now: Time) {
        if self.path.transport != Transport::PHost {
            return;
        }
        let Some(ph) = self.ph.as_deref_mut() else { return };
        while let Some(&(expiry, _, _)) = ph.tokens.front() {
            if expiry >= now {
                break;
            }
            ph.tokens.pop_front();
            self.stats.expired_tokens += 1;
        }
    }

    /// Bytes of the flow not yet acknowledged (the key of the
    /// smallest-remaining-first NIC order); `u64::MAX` for long-lived flows,
    /// so that they rank last and equal to each other. A pHost flow's is
    /// what its receiver still misses (its last token says); a Homa
    /// message's the bytes it has not yet sent.
    #[inline]
    pub fn remaining(&self) -> u64 {
        if matches!(self.path.transport, Transport::PHost | Transport::Homa | Transport::Hopass) {
            self.snd.peer_remaining
        } else if self.ctl.size == u64::MAX {
            u64::MAX
        } else {
            self.ctl.size.saturating_sub(self.ctl.snd_una)
        }
    }
}
