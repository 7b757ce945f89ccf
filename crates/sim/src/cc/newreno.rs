//! TCP NewReno (RFC 5681 congestion control, RFC 6582 fast recovery), with the
//! window machinery that CUBIC and window DCTCP reuse ([`TcpWindow`]).
//!
//! Source: RFC 5681 / RFC 6582 / RFC 3042 / RFC 3168 as summarised in the
//! spec (`rule_based_cc.md` section 6.1-6.2), with ns-3 semantics where the
//! RFCs leave a choice (initial window 10 segments, initial ssthresh
//! unlimited, congestion avoidance `+max(1, MSS*MSS/cwnd)` bytes per ACK).
//!
//! Division of labour with the core: the NIC (`Transport::Tcp`) detects loss
//! (three duplicate ACKs), retransmits the first unacknowledged segment,
//! retransmits the next hole on each partial ACK, ends recovery on the ACK that
//! covers everything outstanding at the loss, and times out adaptively. This
//! file only sets the window (`ctx.set_window`, in bytes; the rate stays at
//! line rate: no pacing):
//! * slow start (cwnd < ssthresh): `cwnd += min(newly acked, MSS)` per ACK;
//! * congestion avoidance: `cwnd += max(1, MSS*MSS/cwnd)` per ACK;
//! * third duplicate ACK: `ssthresh = max(2 MSS, flight/2)` (flight without
//!   the limited-transmit segments, i.e. at most cwnd), `cwnd = ssthresh
//!   + 3 MSS`; `+1 MSS` per further duplicate ACK; a partial ACK deflates cwnd
//!   by the bytes it acknowledges and adds back one MSS if that was at least
//!   one MSS (RFC 6582 3.2 step 5); the full ACK sets `cwnd = ssthresh`;
//! * retransmission timeout: `ssthresh = max(2 MSS, flight/2)` with the flight
//!   before the timeout, `cwnd = 1 MSS`, slow start again. If the window was
//!   already reduced for the data in flight (a timeout during fast recovery,
//!   within an ECN reduction, or a repeated timeout before the data of the
//!   previous one is acknowledged), ssthresh is kept, as in Linux
//!   `tcp_enter_loss` and RFC 5681 (repeated timeouts): otherwise the window
//!   inflated by fast recovery would set a far too high ssthresh;
//! * limited transmit (RFC 3042, on by default as in ns-3): the first and
//!   second duplicate ACK each let one new segment out (window = cwnd + n MSS).
//!
//! MSS = the scenario's data payload (`packets.payload`, `ctx.flow.mtu`).
//!
//! Deliberate deviations / choices:
//! * No SACK by default (the core's receiver sends cumulative ACKs only), so
//!   several losses in one window cost one round trip each (classic
//!   NewReno). With `host.sack` the core recovers by RFC 6675 instead
//!   (`crate::sack`) and this window follows it: `cwnd = ssthresh` from the
//!   third duplicate ACK to the end of recovery, no inflation, deflation or
//!   limited transmit (the NIC's gate is the pipe).
//! * No delayed ACKs of our own: the receiver acknowledges every
//!   `host.ack_every` packets (1 by default), each ACK counting once in
//!   congestion avoidance as in ns-3.
//! * No PRR (ns-3 >= 3.32 default); classic NewReno recovery as the brief asks.
//! * cwnd is not validated against application-limited periods (RFC 7661).
//! * Optional ECN response (`ecn = true`, RFC 3168): on ECE, at most once per
//!   window and not during loss recovery, `ssthresh = cwnd = max(2 MSS,
//!   cwnd/2)`. Off by default: classic NewReno ignores marks (switches here
//!   mark rather than drop, so with `switch.ecn.enabled` a non-ECN TCP just
//!   sees no signal until `switch.queue_cap` drops).
//! * If the scenario forces `host.loss_recovery = "go_back_n"`, a NACK is
//!   treated like an ECN echo (halve at most once per window).
//! * The window the NIC enforces is also capped by `host.max_outstanding`
//!   (640 KB by default): set it to 0 for long-haul scenarios.

use super::{AckEvent, CcCtx, CcInfo, CongestionControl, ParamInfo, Params, Transport};
use crate::config::ConfigError;
use crate::units::Time;

/// Largest congestion window (bytes), against runaway growth of unlimited
/// flows that never see loss.
const MAX_CWND: f64 = 1e15;

/// `init_cwnd` parameter, shared by the TCP-style algorithms.
pub(super) const P_INIT_CWND: ParamInfo =
    ParamInfo { name: "init_cwnd", default: "10", help: "initial window in segments (MSS = packets.payload)" };
/// `init_ssthresh` parameter.
pub(super) const P_INIT_SSTHRESH: ParamInfo =
    ParamInfo { name: "init_ssthresh", default: "0", help: "initial slow-start threshold in bytes; 0 = unlimited" };
/// `limited_transmit` parameter.
pub(super) const P_LIMITED_TRANSMIT: ParamInfo = ParamInfo {
    name: "limited_transmit",
    default: "true",
    help: "RFC 3042: one new segment on each of the first two duplicate ACKs",
};
/// `ecn` parameter (classic RFC 3168 response).
pub(super) const P_ECN: ParamInfo = ParamInfo {
    name: "ecn",
    default: "false",
    help: "react to ECN echoes like a loss (RFC 3168), at most once per window",
};

/// A boolean parameter.
pub(super) fn param_bool(p: &Params, name: &str, default: bool) -> Result<bool, ConfigError> {
    match p.raw(name) {
        None => Ok(default),
        Some(v) => v.as_bool().ok_or_else(|| p.bad(name, "expected true or false")),
    }
}

/// A string parameter.
pub(super) fn param_str<'a>(p: &'a Params, name: &str, default: &'a str) -> Result<&'a str, ConfigError> {
    match p.raw(name) {
        None => Ok(default),
        Some(v) => v.as_str().ok_or_else(|| p.bad(name, "expected a string")),
    }
}

/// What an ACK meant for loss recovery (see [`TcpWindow::ack`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckKind {
    /// A duplicate ACK (nothing new acknowledged).
    Duplicate,
    /// A partial ACK during fast recovery (window deflated).
    Partial,
    /// The ACK that ended fast recovery (window set to ssthresh).
    RecoveryEnd,
    /// An ACK of new data outside recovery: the window may grow.
    New,
}

/// Congestion window, slow-start threshold and NewReno loss reaction: the
/// part shared by NewReno, CUBIC and window DCTCP. Sizes in bytes.
#[derive(Clone, Debug)]
pub struct TcpWindow {
    /// Segment size (payload bytes of a full packet), set at flow start.
    pub mss: f64,
    /// Congestion window.
    pub cwnd: f64,
    /// Slow-start threshold (`f64::INFINITY` = unlimited).
    pub ssthresh: f64,
    /// In NewReno fast recovery.
    pub in_recovery: bool,
    /// After a window reduction without loss (ECN echo, NACK): no further
    /// reduction until the cumulative ACK passes this sequence.
    pub cwr_end: Option<u64>,
    /// The flow's `snd_nxt` as last seen (before a timeout reset it).
    pub high_nxt: u64,
    /// After a timeout: the loss episode lasts until the cumulative ACK
    /// reaches this (`snd_nxt` when the timer fired).
    pub loss_end: Option<u64>,
    /// Initial window in segments.
    pub init_cwnd: f64,
    /// Initial slow-start threshold.
    pub init_ssthresh: f64,
    /// RFC 3042 limited transmit.
    pub limited_transmit: bool,
    /// Fast retransmits (loss events) seen.
    pub fast_retransmits: u64,
    /// Retransmission timeouts seen.
    pub timeouts: u64,
    /// Reductions without loss (ECN echoes, NACKs).
    pub cuts: u64,
    /// The flow has SACK (`host.sack`, seen at its start): the NIC sends
    /// while RFC 6675's pipe is below cwnd, so recovery keeps cwnd at
    /// ssthresh, with neither NewReno's inflation and deflation nor limited
    /// transmit (the pipe already leaves out what duplicate ACKs SACK).
    pub sack: bool,
}

impl TcpWindow {
    /// Reads `init_cwnd`, `init_ssthresh` and `limited_transmit`.
    pub fn from_params(p: &Params) -> Result<Self, ConfigError> {
        let init_cwnd = p.f64("init_cwnd", 10.0)?;
        if init_cwnd < 1.0 {
            return Err(p.bad("init_cwnd", "must be at least 1 segment"));
        }
        let ss = p.bytes("init_ssthresh", 0)?;
        Ok(TcpWindow {
            mss: 1.0,
            cwnd: init_cwnd,
            ssthresh: f64::INFINITY,
            in_recovery: false,
            cwr_end: None,
            high_nxt: 0,
            loss_end: None,
            init_cwnd,
            init_ssthresh: if ss == 0 { f64::INFINITY } else { ss as f64 },
            limited_transmit: param_bool(p, "limited_transmit", true)?,
            fast_retransmits: 0,
            timeouts: 0,
            cuts: 0,
            sack: false,
        })
    }

    /// Flow start: line rate, initial window.
    pub fn start(&mut self, ctx: &mut CcCtx) {
        self.mss = ctx.flow.mtu.max(1) as f64;
        self.cwnd = self.init_cwnd * self.mss;
        self.ssthresh = self.init_ssthresh;
        self.high_nxt = ctx.flow.snd_nxt;
        self.sack = ctx.flow.sack_pipe.is_some();
        let line = ctx.flow.line_rate;
        ctx.set_rate(line);
        self.apply(ctx, 0);
    }

    /// Whether the flow is in slow start.
    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Hands the window to the NIC; `dup_acks` of the last ACK opens the
    /// limited-transmit allowance.
    #[inline]
    pub fn apply(&self, ctx: &mut CcCtx, dup_acks: u32) {
        let mut w = self.cwnd;
        if self.limited_transmit && !self.sack && !self.in_recovery && (dup_acks == 1 || dup_acks == 2) {
            w += dup_acks as f64 * self.mss;
        }
        ctx.set_window(w as u64);
    }

    /// Loss-recovery bookkeeping of an ACK (inflation, partial-ACK deflation,
    /// end of recovery, end of a reduction period). Growth is the caller's
    /// business when this returns [`AckKind::New`].
    #[inline]
    pub fn ack(&mut self, ctx: &CcCtx, ack: &AckEvent) -> AckKind {
        self.high_nxt = ctx.flow.snd_nxt;
        if let Some(end) = self.cwr_end {
            if ack.ack_seq > end {
                self.cwr_end = None;
            }
        }
        if ack.newly_acked == 0 {
            if self.in_recovery && ack.in_recovery && !self.sack {
                // Each further duplicate ACK: a segment left the network.
                self.cwnd = (self.cwnd + self.mss).min(MAX_CWND);
            }
            return AckKind::Duplicate;
        }
        if self.in_recovery {
            if ack.in_recovery {
                if self.sack {
                    return AckKind::Partial;
                }
                // RFC 6582 3.2 step 5: deflate by what was acknowledged, add
                // one MSS back if that was at least one segment.
                let newly = ack.newly_acked as f64;
                let back = if newly >= self.mss { self.mss } else { 0.0 };
                self.cwnd = (self.cwnd - newly + back).max(self.mss);
                return AckKind::Partial;
            }
            self.in_recovery = false;
            self.cwnd = self.ssthresh;
            return AckKind::RecoveryEnd;
        }
        AckKind::New
    }

    /// Slow-start growth for `newly` acknowledged bytes.
    #[inline]
    pub fn slow_start(&mut self, newly: u64) {
        self.cwnd = (self.cwnd + (newly as f64).min(self.mss)).min(MAX_CWND);
    }

    /// Reno congestion-avoidance growth for one ACK: `max(1, MSS*MSS/cwnd)` bytes.
    #[inline]
    pub fn reno_increase(&mut self) {
        self.cwnd = (self.cwnd + (self.mss * self.mss / self.cwnd).max(1.0)).min(MAX_CWND);
    }

    /// Bytes in flight now.
    #[inline]
    pub fn flight(ctx: &CcCtx) -> f64 {
        ctx.flow.snd_nxt.saturating_sub(ctx.flow.snd_una) as f64
    }

    /// FlightSize for the ssthresh of a fast retransmit: the bytes in flight,
    /// without what limited transmit sent beyond cwnd (RFC 5681 3.2 step 2).
    #[inline]
    pub fn loss_flight(&self, ctx: &CcCtx) -> f64 {
        Self::flight(ctx).min(self.cwnd)
    }

    /// Bytes that were in flight when the retransmission timer expired (the
    /// NIC has already gone back to `snd_una`).
    pub fn flight_before_timeout(&self, ctx: &CcCtx) -> f64 {
        self.high_nxt.max(ctx.flow.snd_nxt).saturating_sub(ctx.flow.snd_una) as f64
    }

    /// Third duplicate ACK: enters fast recovery with threshold `ssthresh`
    /// (floored at 2 MSS) and window `ssthresh + 3 MSS`.
    pub fn enter_recovery(&mut self, ssthresh: f64) {
        self.ssthresh = ssthresh.max(2.0 * self.mss);
        // NewReno inflates by the three segments the duplicates reported; a
        // SACK flow's pipe has already left them out.
        self.cwnd = self.ssthresh + if self.sack { 0.0 } else { 3.0 * self.mss };
        self.in_recovery = true;
        self.cwr_end = None;
        self.fast_retransmits += 1;
    }

    /// Whether the window was already reduced for the data now in flight: in
    /// fast recovery, within the window of an ECN reduction, or in the loss
    /// episode of an earlier timeout. A timeout then keeps ssthresh (Linux
    /// `tcp_enter_loss`; RFC 5681 keeps it for repeated timeouts), so that an
    /// inflated recovery window or a backed-off retransmission does not set it.
    pub fn already_reduced(&self, ctx: &CcCtx) -> bool {
        self.in_recovery || self.cwr_end.is_some() || self.loss_end.is_some_and(|e| ctx.flow.snd_una < e)
    }

    /// Retransmission timeout: threshold `ssthresh` (floored at 2 MSS; `None`
    /// keeps the current one), window 1 MSS, slow start.
    pub fn enter_loss(&mut self, ctx: &CcCtx, ssthresh: Option<f64>) {
        if let Some(ss) = ssthresh {
            self.ssthresh = ss.max(2.0 * self.mss);
        }
        self.loss_end = Some(self.high_nxt.max(ctx.flow.snd_nxt));
        self.cwnd = self.mss;
        self.in_recovery = false;
        self.cwr_end = None;
        self.timeouts += 1;
    }

    /// Whether a reduction without loss may happen now (not in recovery, not
    /// within the window of the previous reduction).
    #[inline]
    pub fn may_reduce(&self) -> bool {
        !self.in_recovery && self.cwr_end.is_none()
    }

    /// Reduction without loss: `ssthresh = cwnd = max(new_cwnd, floor)`; no
    /// other reduction until what is in flight now is acknowledged.
    pub fn reduce(&mut self, ctx: &CcCtx, new_cwnd: f64, floor: f64) {
        self.cwnd = new_cwnd.max(floor).min(self.cwnd.max(floor));
        self.ssthresh = self.cwnd;
        self.cwr_end = Some(ctx.flow.snd_nxt);
        self.cuts += 1;
    }
}

/// TCP NewReno state of one flow.
#[derive(Clone, Debug)]
pub struct NewReno {
    /// Window and loss recovery.
    pub tcp: TcpWindow,
    /// React to ECN echoes (RFC 3168).
    pub ecn: bool,
}

impl NewReno {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[P_INIT_CWND, P_INIT_SSTHRESH, P_LIMITED_TRANSMIT, P_ECN];
        CcInfo { name: "newreno", summary: "TCP NewReno (RFC 5681/6582): loss-based AIMD window", params: P }
    }

    /// Builds it from scenario parameters.
    pub fn from_params(p: &Params) -> Result<Self, ConfigError> {
        Ok(NewReno { tcp: TcpWindow::from_params(p)?, ecn: param_bool(p, "ecn", false)? })
    }

    /// Halving of a loss event or ECN echo: `max(2 MSS, x/2)`.
    #[inline]
    fn half(&self, x: f64) -> f64 {
        (x * 0.5).max(2.0 * self.tcp.mss)
    }
}

impl CongestionControl for NewReno {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        self.tcp.start(ctx);
    }

    #[inline]
    fn on_send(&mut self, ctx: &mut CcCtx, _bytes: u32) {
        self.tcp.high_nxt = ctx.flow.snd_nxt;
    }

    #[inline]
    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        if self.tcp.ack(ctx, ack) == AckKind::New {
            if self.tcp.in_slow_start() {
                self.tcp.slow_start(ack.newly_acked);
            } else {
                self.tcp.reno_increase();
            }
        }
        if self.ecn && ack.ecn_echo && self.tcp.may_reduce() {
            let w = self.half(self.tcp.cwnd);
            self.tcp.reduce(ctx, w, 2.0 * self.tcp.mss);
        }
        self.tcp.apply(ctx, ack.dup_acks);
    }

    fn on_fast_retransmit(&mut self, ctx: &mut CcCtx) {
        let ss = self.half(self.tcp.loss_flight(ctx));
        self.tcp.enter_recovery(ss);
        self.tcp.apply(ctx, 0);
    }

    fn on_timeout(&mut self, ctx: &mut CcCtx) {
        let ss = (!self.tcp.already_reduced(ctx)).then(|| self.half(self.tcp.flight_before_timeout(ctx)));
        self.tcp.enter_loss(ctx, ss);
        self.tcp.apply(ctx, 0);
    }

    fn on_nack(&mut self, ctx: &mut CcCtx, _expected: u64, _rtt: Time) {
        if self.tcp.may_reduce() {
            let w = self.half(self.tcp.cwnd);
            self.tcp.reduce(ctx, w, 2.0 * self.tcp.mss);
            self.tcp.apply(ctx, 0);
        }
    }

    fn transport(&self) -> Transport {
        Transport::Tcp
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::cc::FlowCtl;
    use crate::config::CcConfig;
    use crate::units::US;

    /// A flow context for unit tests: 100 Gb/s, 1000-B segments.
    pub fn flow() -> FlowCtl {
        FlowCtl::at_line_rate(100e9, 1e6, 10 * US, 1000)
    }

    /// A plain ACK event.
    pub fn ack(ack_seq: u64, newly: u64) -> AckEvent<'static> {
        AckEvent {
            ack_seq,
            newly_acked: newly,
            dup_acks: 0,
            in_recovery: false,
            recovery_ended: false,
            ecn_echo: false,
            rtt: 10 * US,
            hops: 1,
            int: &[],
            pint: 0,
            delivered: 0,
            sack_high: 0,
        }
    }

    /// Parses a CC configuration given as JSON.
    pub fn cfg(json: serde_json::Value) -> CcConfig {
        serde_json::from_value(json).unwrap()
    }

    fn build(json: serde_json::Value) -> Result<NewReno, ConfigError> {
        let c = cfg(json);
        NewReno::from_params(&Params::new(&c, "cc", NewReno::info().params)?)
    }

    fn started() -> (NewReno, FlowCtl) {
        let mut r = build(serde_json::json!({"algorithm": "newreno"})).unwrap();
        let mut f = flow();
        r.on_start(&mut CcCtx { now: 0, flow: &mut f });
        (r, f)
    }

    #[test]
    fn starts_with_ten_segments_at_line_rate_and_unlimited_ssthresh() {
        let (r, f) = started();
        assert_eq!(f.window, 10_000);
        assert_eq!(f.rate, 100e9);
        assert!(r.tcp.ssthresh.is_infinite());
        assert_eq!(r.transport(), Transport::Tcp);
    }

    #[test]
    fn slow_start_adds_min_acked_mss_and_avoidance_adds_mss_squared_over_cwnd() {
        let (mut r, mut f) = started();
        f.snd_nxt = 10_000;
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        r.on_ack(&mut ctx, &ack(1000, 1000));
        assert_eq!(r.tcp.cwnd, 11_000.0);
        r.on_ack(&mut ctx, &ack(1500, 500));
        assert_eq!(r.tcp.cwnd, 11_500.0);
        r.tcp.ssthresh = 5000.0;
        r.on_ack(&mut ctx, &ack(2500, 1000));
        assert!((r.tcp.cwnd - (11_500.0 + 1e6 / 11_500.0)).abs() < 1e-9);
        assert_eq!(ctx.flow.window, r.tcp.cwnd as u64);
    }

    #[test]
    fn fast_recovery_follows_rfc6582() {
        let (mut r, mut f) = started();
        r.tcp.cwnd = 40_000.0;
        f.snd_una = 100_000;
        f.snd_nxt = 140_000;
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        // Two duplicates: limited transmit opens the window by one MSS each.
        let mut d = ack(100_000, 0);
        d.dup_acks = 1;
        r.on_ack(&mut ctx, &d);
        assert_eq!(ctx.flow.window, 41_000);
        d.dup_acks = 2;
        r.on_ack(&mut ctx, &d);
        assert_eq!(ctx.flow.window, 42_000);
        // The NIC sent two new segments; they do not count in FlightSize.
        ctx.flow.snd_nxt = 142_000;
        // Third: on_ack (no change) then on_fast_retransmit.
        d.dup_acks = 3;
        d.in_recovery = true;
        r.on_ack(&mut ctx, &d);
        r.on_fast_retransmit(&mut ctx);
        assert_eq!(r.tcp.ssthresh, 20_000.0);
        assert_eq!(r.tcp.cwnd, 23_000.0);
        assert_eq!(ctx.flow.window, 23_000);
        // Further duplicates inflate by one MSS.
        d.dup_acks = 4;
        r.on_ack(&mut ctx, &d);
        assert_eq!(r.tcp.cwnd, 24_000.0);
        // Partial ACK of 5 segments: deflate by 5000, add back 1000.
        ctx.flow.snd_una = 105_000;
        let mut p = ack(105_000, 5000);
        p.in_recovery = true;
        r.on_ack(&mut ctx, &p);
        assert_eq!(r.tcp.cwnd, 20_000.0);
        // Full ACK: cwnd = ssthresh, no growth on that ACK.
        ctx.flow.snd_una = 140_000;
        let mut e = ack(140_000, 35_000);
        e.recovery_ended = true;
        r.on_ack(&mut ctx, &e);
        assert_eq!(r.tcp.cwnd, 20_000.0);
        assert!(!r.tcp.in_recovery);
        // Then congestion avoidance.
        ctx.flow.snd_nxt = 160_000;
        r.on_ack(&mut ctx, &ack(141_000, 1000));
        assert!((r.tcp.cwnd - 20_050.0).abs() < 1e-9);
    }

    #[test]
    fn timeout_halves_the_flight_before_it_and_restarts_from_one_segment() {
        let (mut r, mut f) = started();
        r.tcp.cwnd = 30_000.0;
        f.snd_una = 10_000;
        f.snd_nxt = 40_000;
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        r.on_send(&mut ctx, 1048);
        // The NIC goes back to snd_una before calling on_timeout.
        ctx.flow.snd_nxt = 10_000;
        r.on_timeout(&mut ctx);
        assert_eq!(r.tcp.ssthresh, 15_000.0);
        assert_eq!(r.tcp.cwnd, 1000.0);
        assert_eq!(ctx.flow.window, 1000);
        // A second timeout of the same data keeps ssthresh (RFC 5681).
        ctx.flow.snd_nxt = 11_000;
        r.on_send(&mut ctx, 1048);
        ctx.flow.snd_nxt = 10_000;
        r.on_timeout(&mut ctx);
        assert_eq!(r.tcp.ssthresh, 15_000.0);
        // Once the episode is over (everything sent before it acknowledged),
        // a new timeout halves the flight again.
        ctx.flow.snd_una = 40_000;
        ctx.flow.snd_nxt = 44_000;
        r.on_send(&mut ctx, 1048);
        ctx.flow.snd_nxt = 40_000;
        r.on_timeout(&mut ctx);
        assert_eq!(r.tcp.ssthresh, 2000.0);
        // A timeout during fast recovery keeps the ssthresh of the recovery.
        ctx.flow.snd_una = 50_000;
        ctx.flow.snd_nxt = 90_000;
        r.tcp.cwnd = 40_000.0;
        r.on_fast_retransmit(&mut ctx);
        assert_eq!(r.tcp.ssthresh, 20_000.0);
        r.on_send(&mut ctx, 1048);
        ctx.flow.snd_nxt = 50_000;
        r.on_timeout(&mut ctx);
        assert_eq!(r.tcp.ssthresh, 20_000.0);
        assert_eq!(r.tcp.cwnd, 1000.0);
        assert!(!r.tcp.in_recovery);
    }

    #[test]
    fn ecn_option_halves_once_per_window() {
        let mut r = build(serde_json::json!({"algorithm": "newreno", "ecn": true})).unwrap();
        let mut f = flow();
        r.on_start(&mut CcCtx { now: 0, flow: &mut f });
        r.tcp.cwnd = 40_000.0;
        f.snd_nxt = 40_000;
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        let mut a = ack(1000, 1000);
        a.ecn_echo = true;
        r.on_ack(&mut ctx, &a);
        assert_eq!(r.tcp.cwnd, 20_500.0);
        assert_eq!(r.tcp.ssthresh, r.tcp.cwnd);
        let mut b = ack(2000, 1000);
        b.ecn_echo = true;
        r.on_ack(&mut ctx, &b);
        assert!(r.tcp.cwnd > 20_500.0, "no second cut within the window");
        let mut c = ack(40_001, 38_001);
        c.ecn_echo = true;
        r.on_ack(&mut ctx, &c);
        assert!(r.tcp.cwnd < 11_000.0, "cut again once the window passed");
    }

    #[test]
    fn bad_parameters_are_rejected() {
        for (json, field) in [
            (serde_json::json!({"algorithm": "newreno", "init_cwnd": 0.5}), "cc.init_cwnd"),
            (serde_json::json!({"algorithm": "newreno", "ecn": "yes"}), "cc.ecn"),
            (serde_json::json!({"algorithm": "newreno", "init_ssthresh": "-3KB"}), "cc.init_ssthresh"),
            (serde_json::json!({"algorithm": "newreno", "cwnd": 3}), "cc.cwnd"),
        ] {
            let e = build(json).unwrap_err();
            assert_eq!(e.field, field, "{e}");
        }
    }
}
