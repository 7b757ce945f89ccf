//! MVFST-RL's environment (Sivakumar et al., arXiv 1910.04054; the
//! paper-era code at facebookresearch/mvfst-rl 525435b): per-event network
//! state aggregated over the decision interval, the action history, the
//! window steps and the reward.
//!
//! Every ACK and every loss event of the flow yields one state of
//! [`FIELDS`] values (in [`FIELD_NAMES`] order, mvfst-rl's): times in ms /
//! [`NORM_MS`], bytes / [`NORM_BYTES`], counts raw. Over the interval they
//! are summarised as sum, mean, std (unbiased when there are two or more
//! states, else 0), min and max, block after block (the `mvfst_state`
//! feature, [`STATE_WIDTH`] values); sums of the RTT-type fields and of
//! cwnd, in-flight and writable mean nothing and are 0. The statistics run
//! with Welford's update, O(1) per event and no buffer.
//!
//! QUIC fields on ccgym's TCP (docs/env.md names each mapping):
//! * `rtt_min`: a 10 s windowed min of the RTT samples (mvfst's min-RTT
//!   filter); `rtt_standing`: a windowed min over srtt / 2;
//! * `srtt`, `rtt_var`: RFC 6298's estimators over the ACKs' samples;
//! * `received`: wire bytes of the ACKs and NACKs heard since the last state;
//! * `pto_count`: retransmission timeouts in a row (the RTO back-off count);
//!   `total_pto_delta`: timeouts since the last state;
//! * `rtx_count`, `timeout_based_rtx_count`: data packets retransmitted since
//!   the last state, and those of them that repair a timeout;
//! * `lost`: one segment per fast retransmit or NACK, everything outstanding
//!   at a timeout;
//! * `persistent_congestion`: 1 on a retransmission timeout (TCP's timeout
//!   collapses the window as QUIC's persistent congestion does).
//!
//! State is kept only for agents with an `mvfst_*` feature or the `mvfst`
//! reward (boxed in `AgentCc::mv`), so other agents pay nothing per event.

use super::spec::Feature;
use super::AgentCc;
use crate::cc::CcCtx;
use crate::units::{Time, SEC};

/// Fields of one per-event state.
pub const FIELDS: usize = 20;
/// The `mvfst` actions: unchanged, /2, -10 packets, +10 packets, x2.
pub const ACTIONS: usize = 5;
/// Values of the `mvfst_state` feature: sum, mean, std, min, max of every field.
pub const STATE_WIDTH: usize = 5 * FIELDS;
/// Names of the per-event fields, in observation order.
pub const FIELD_NAMES: [&str; FIELDS] = [
    "rtt_min",
    "rtt_standing",
    "lrtt",
    "srtt",
    "rtt_var",
    "delay",
    "cwnd",
    "in_flight",
    "writable",
    "sent",
    "received",
    "retransmitted",
    "pto_count",
    "total_pto_delta",
    "rtx_count",
    "timeout_based_rtx_count",
    "acked",
    "throughput",
    "lost",
    "persistent_congestion",
];
/// Names of the aggregates, in block order.
pub const AGGREGATES: [&str; 5] = ["sum", "mean", "std", "min", "max"];
/// Time normaliser, ms (mvfst-rl's normMs).
pub const NORM_MS: f64 = 100.0;
/// Byte normaliser (mvfst-rl's normBytes).
pub const NORM_BYTES: f64 = 1000.0;
/// Fields whose sum over the interval means nothing: the RTT-type fields and
/// cwnd, in-flight and writable (the first nine).
const NO_SUM: usize = 9;
const DELAY: usize = 5;
/// Window of the min-RTT filter (mvfst's kMinRTTWindowLength).
const MIN_RTT_WINDOW: Time = 10 * SEC;
/// QUIC's initial window, packets (the `mvfst` action's start without `initial_window`).
pub const INITIAL_CWND_PACKETS: u64 = 10;

/// A windowed minimum over time kept in three samples (the best, and the
/// best of the later quarter and half of the window), so that an expired
/// minimum is replaced by the next best without a buffer.
#[derive(Clone, Copy, Debug)]
struct WindowedMin {
    s: [(f64, Time); 3],
}

impl WindowedMin {
    const EMPTY: WindowedMin = WindowedMin { s: [(f64::INFINITY, 0); 3] };

    fn get(&self) -> Option<f64> {
        self.s[0].0.is_finite().then_some(self.s[0].0)
    }

    fn update(&mut self, v: f64, now: Time, window: Time) {
        let fresh = (v, now);
        if v <= self.s[0].0 || now.saturating_sub(self.s[2].1) > window {
            self.s = [fresh; 3];
            return;
        }
        if v <= self.s[1].0 {
            self.s[1] = fresh;
            self.s[2] = fresh;
        } else if v <= self.s[2].0 {
            self.s[2] = fresh;
        }
        let age = now.saturating_sub(self.s[0].1);
        if age > window {
            // The best expired: the later candidates move up.
            self.s = [self.s[1], self.s[2], fresh];
            if now.saturating_sub(self.s[0].1) > window {
                self.s = [self.s[1], self.s[2], fresh];
            }
        } else if self.s[1].1 == self.s[0].1 && age > window / 4 {
            // A quarter of the window passed with no second choice: take one.
            self.s[1] = fresh;
            self.s[2] = fresh;
        } else if self.s[2].1 == self.s[1].1 && age > window / 2 {
            self.s[2] = fresh;
        }
    }
}

/// Per-flow MVFST-RL state: the interval's statistics, the connection's
/// RTT estimators and counters, and the action history.
#[derive(Clone, Debug)]
pub(crate) struct MvfstState {
    /// States in the interval.
    n: u32,
    mean: [f64; FIELDS],
    m2: [f64; FIELDS],
    min: [f64; FIELDS],
    max: [f64; FIELDS],
    /// ACK states in the interval and their summed throughput estimate (MB/s).
    acks: u32,
    thr_sum: f64,
    /// Largest lrtt - rtt_min of the interval (ms) and bytes lost in it.
    max_delay_ms: f64,
    lost_bytes: f64,
    min_rtt: WindowedMin,
    standing: WindowedMin,
    /// RFC 6298 estimators and the latest sample (ps; 0 before the first).
    srtt: f64,
    rttvar: f64,
    lrtt: f64,
    /// Highest sequence sent (a send below it is a retransmission).
    high_nxt: u64,
    /// Retransmissions up to this sequence repair a timeout.
    rto_high: u64,
    /// Counters since the last state.
    sent: u64,
    received: u64,
    retx_bytes: u64,
    retx_pkts: u32,
    timeout_retx_pkts: u32,
    rtos: u32,
    /// Retransmission timeouts in a row (reset by an ACK of new data).
    rtos_in_a_row: u32,
    /// The last `action_history` actions: one-hot, then the window after / NORM_BYTES.
    history: Vec<f32>,
}

impl MvfstState {
    pub(crate) fn new(k: usize) -> Self {
        MvfstState {
            n: 0,
            mean: [0.0; FIELDS],
            m2: [0.0; FIELDS],
            min: [0.0; FIELDS],
            max: [0.0; FIELDS],
            acks: 0,
            thr_sum: 0.0,
            max_delay_ms: 0.0,
            lost_bytes: 0.0,
            min_rtt: WindowedMin::EMPTY,
            standing: WindowedMin::EMPTY,
            srtt: 0.0,
            rttvar: 0.0,
            lrtt: 0.0,
            high_nxt: 0,
            rto_high: 0,
            sent: 0,
            received: 0,
            retx_bytes: 0,
            retx_pkts: 0,
            timeout_retx_pkts: 0,
            rtos: 0,
            rtos_in_a_row: 0,
            history: vec![0.0; k * (ACTIONS + 1)],
        }
    }

    /// States recorded in the interval.
    pub(crate) fn events(&self) -> u32 {
        self.n
    }

    /// Forgets the interval's states (a new interval, or a skipped one).
    pub(crate) fn reset_window(&mut self) {
        self.n = 0;
        self.acks = 0;
        self.thr_sum = 0.0;
        self.max_delay_ms = 0.0;
        self.lost_bytes = 0.0;
    }

    fn record(&mut self, x: &[f64; FIELDS]) {
        self.n += 1;
        let n = self.n as f64;
        for (i, &v) in x.iter().enumerate() {
            if self.n == 1 {
                self.mean[i] = v;
                self.m2[i] = 0.0;
                self.min[i] = v;
                self.max[i] = v;
            } else {
                let d = v - self.mean[i];
                self.mean[i] += d / n;
                self.m2[i] += d * (v - self.mean[i]);
                self.min[i] = self.min[i].min(v);
                self.max[i] = self.max[i].max(v);
            }
        }
    }

    /// Pushes an action (index) and the window after it (bytes) into the history.
    pub(crate) fn push_action(&mut self, action: usize, cwnd: f64) {
        let w = ACTIONS + 1;
        if self.history.is_empty() {
            return;
        }
        self.history.copy_within(w.., 0);
        let n = self.history.len();
        let entry = &mut self.history[n - w..];
        entry.fill(0.0);
        entry[action.min(ACTIONS - 1)] = 1.0;
        entry[ACTIONS] = (cwnd / NORM_BYTES) as f32;
    }

    /// Fills the history with no-op entries at window `cwnd` (bytes).
    fn start_history(&mut self, cwnd: f64) {
        for entry in self.history.chunks_mut(ACTIONS + 1) {
            entry.fill(0.0);
            entry[0] = 1.0;
            entry[ACTIONS] = (cwnd / NORM_BYTES) as f32;
        }
    }

    /// Writes the `mvfst_state` aggregates (block-major: sums, means, stds, mins, maxes).
    fn write_state(&self, row: &mut [f32]) {
        row.fill(0.0);
        if self.n == 0 {
            return;
        }
        let n = self.n as f64;
        for i in 0..FIELDS {
            if i >= NO_SUM {
                row[i] = (self.mean[i] * n) as f32;
            }
            row[FIELDS + i] = self.mean[i] as f32;
            row[2 * FIELDS + i] = if self.n > 1 { (self.m2[i] / (n - 1.0)).max(0.0).sqrt() as f32 } else { 0.0 };
            row[3 * FIELDS + i] = self.min[i] as f32;
            row[4 * FIELDS + i] = self.max[i] as f32;
        }
    }

    /// The interval's reward terms: mean throughput estimate (MB/s), largest
    /// delay (ms), bytes lost.
    fn reward_terms(&self) -> (f64, f64, f64) {
        let thr = if self.acks > 0 { self.thr_sum / self.acks as f64 } else { 0.0 };
        (thr, self.max_delay_ms, self.lost_bytes)
    }
}

/// ps to normalised ms.
fn norm_ms(ps: f64) -> f64 {
    ps / 1e9 / NORM_MS
}

impl AgentCc {
    /// The `mvfst` action's starting window (bytes): `initial_window`, else
    /// QUIC's 10 packets, within the action's bounds.
    pub(super) fn mvfst_initial_window(&self, ctx: &CcCtx) -> f64 {
        let mss = ctx.flow.mtu.max(1) as f64;
        let init = if self.spec.initial_window > 0 {
            self.spec.initial_window as f64
        } else {
            INITIAL_CWND_PACKETS as f64 * mss
        };
        let (lo, hi) = self.spec.cwnd_packets;
        init.clamp(lo as f64 * mss, hi as f64 * mss)
    }

    /// The flow starts: the history holds no-op entries at the starting window.
    pub(super) fn mv_start(&mut self, ctx: &CcCtx) {
        let cwnd = self.cwnd;
        if let Some(m) = self.mv.as_mut() {
            m.start_history(cwnd);
            m.high_nxt = ctx.flow.snd_nxt;
        }
    }

    /// Applies `mvfst` action `i` to the window (bytes, bounded) and records it.
    pub(super) fn mv_apply(&mut self, ctx: &mut CcCtx, i: usize) {
        let mss = ctx.flow.mtu.max(1) as f64;
        let (lo, hi) = self.spec.cwnd_packets;
        let old = self.cwnd;
        let new = match i {
            0 => old,
            1 => (old / 2.0).round(),
            2 => old - 10.0 * mss,
            3 => old + 10.0 * mss,
            _ => (old * 2.0).round(),
        };
        self.set_cwnd(ctx, new.clamp(lo as f64 * mss, hi as f64 * mss));
        self.last_multiplier = if old > 0.0 { self.cwnd / old } else { 1.0 };
        if let Some(tcp) = &mut self.tcp {
            tcp.cwnd = self.cwnd;
        }
        let cwnd = self.cwnd;
        if let Some(m) = self.mv.as_mut() {
            m.push_action(i, cwnd);
        }
    }

    /// A data packet of `bytes` wire bytes went out.
    #[inline]
    pub(super) fn mv_on_send(&mut self, ctx: &CcCtx, bytes: u32) {
        let Some(m) = self.mv.as_mut() else { return };
        m.sent += bytes as u64;
        let nxt = ctx.flow.snd_nxt;
        if nxt <= m.high_nxt {
            m.retx_bytes += bytes as u64;
            m.retx_pkts += 1;
            if nxt <= m.rto_high {
                m.timeout_retx_pkts += 1;
            }
        } else {
            m.high_nxt = nxt;
        }
    }

    /// An ACK arrived: the RTT estimators move and an ACK state is recorded.
    pub(super) fn mv_on_ack(&mut self, ctx: &CcCtx, rtt: Time, newly_acked: u64) {
        let ack_bytes = self.spec.ack_bytes as u64;
        let Some(m) = self.mv.as_mut() else { return };
        m.received += ack_bytes;
        if newly_acked > 0 {
            m.rtos_in_a_row = 0;
        }
        if rtt > 0 {
            let r = rtt as f64;
            if m.srtt == 0.0 {
                m.srtt = r;
                m.rttvar = r / 2.0;
            } else {
                m.rttvar = 0.75 * m.rttvar + 0.25 * (m.srtt - r).abs();
                m.srtt = 0.875 * m.srtt + 0.125 * r;
            }
            m.lrtt = r;
            m.min_rtt.update(r, ctx.now, MIN_RTT_WINDOW);
            m.standing.update(r, ctx.now, (m.srtt / 2.0) as Time);
        }
        self.mv_record(ctx, true, newly_acked as f64, 0.0, false);
    }

    /// A loss was detected (`lost` bytes presumed lost; `timeout`: by the
    /// retransmission timer); `nack`: the loss came in a NACK packet.
    pub(super) fn mv_on_loss(&mut self, ctx: &CcCtx, lost: f64, timeout: bool, nack: bool) {
        let ack_bytes = self.spec.ack_bytes as u64;
        let Some(m) = self.mv.as_mut() else { return };
        if nack {
            m.received += ack_bytes;
        }
        if timeout {
            m.rtos += 1;
            m.rtos_in_a_row += 1;
            m.rto_high = m.high_nxt;
        }
        self.mv_record(ctx, false, 0.0, lost, timeout);
    }

    /// Bytes outstanding when a timeout fired (all presumed lost).
    pub(super) fn mv_outstanding(&self, ctx: &CcCtx) -> f64 {
        self.mv.as_ref().map_or(0.0, |m| m.high_nxt.saturating_sub(ctx.flow.snd_una) as f64)
    }

    /// Records one state (mvfst-rl skips states before the first RTT sample).
    fn mv_record(&mut self, ctx: &CcCtx, ack: bool, acked: f64, lost: f64, persistent: bool) {
        let Some(m) = self.mv.as_mut() else { return };
        let (Some(rtt_min), Some(standing)) = (m.min_rtt.get(), m.standing.get()) else { return };
        let f = &ctx.flow;
        let cwnd = if f.window == u64::MAX { 0.0 } else { f.window as f64 };
        let in_flight = f.snd_nxt.saturating_sub(f.snd_una) as f64;
        let writable = (cwnd - in_flight).max(0.0);
        let delay = (m.lrtt - rtt_min).max(0.0);
        let throughput = if ack { (cwnd / NORM_BYTES) / norm_ms(standing) } else { 0.0 };
        let x = [
            norm_ms(rtt_min),
            norm_ms(standing),
            norm_ms(m.lrtt),
            norm_ms(m.srtt),
            norm_ms(m.rttvar),
            norm_ms(delay),
            cwnd / NORM_BYTES,
            in_flight / NORM_BYTES,
            writable / NORM_BYTES,
            m.sent as f64 / NORM_BYTES,
            m.received as f64 / NORM_BYTES,
            m.retx_bytes as f64 / NORM_BYTES,
            m.rtos_in_a_row as f64,
            m.rtos as f64,
            m.retx_pkts as f64,
            m.timeout_retx_pkts as f64,
            acked / NORM_BYTES,
            throughput,
            lost / NORM_BYTES,
            if persistent { 1.0 } else { 0.0 },
        ];
        m.record(&x);
        m.sent = 0;
        m.received = 0;
        m.retx_bytes = 0;
        m.retx_pkts = 0;
        m.timeout_retx_pkts = 0;
        m.rtos = 0;
        if ack {
            m.acks += 1;
            // cwnd / rtt_standing in MB/s.
            m.thr_sum += cwnd / (standing / SEC as f64) / 1e6;
        }
        m.max_delay_ms = m.max_delay_ms.max(x[DELAY] * NORM_MS);
        m.lost_bytes += lost;
    }

    /// Writes the block feature `feat` into `row` (its width); false for a
    /// one-value feature, which the caller writes.
    pub(super) fn mv_write(&self, feat: Feature, row: &mut [f32]) -> bool {
        match feat {
            Feature::MvfstState => match &self.mv {
                Some(m) => m.write_state(row),
                None => row.fill(0.0),
            },
            Feature::MvfstHistory => match &self.mv {
                Some(m) => row.copy_from_slice(&m.history),
                None => row.fill(0.0),
            },
            _ => return false,
        }
        true
    }

    /// The `mvfst` reward of the interval (before `reward_scale`).
    pub(super) fn mv_reward(&self) -> f64 {
        let Some(m) = &self.mv else { return 0.0 };
        let (thr, delay_ms, lost) = m.reward_terms();
        thr - self.spec.reward_beta * delay_ms - self.spec.reward_loss * lost * 8.0 / 1e6
    }

    /// Whether a decision at an interval tick has nothing to observe (an
    /// interval without ACK or loss states makes no observation, as in mvfst-rl).
    pub(super) fn mv_empty(&self) -> bool {
        self.mv.as_ref().is_some_and(|m| m.events() == 0)
    }
}
