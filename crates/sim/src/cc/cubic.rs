//! TCP CUBIC (Ha, Rhee, Xu 2008; RFC 9438, which obsoletes RFC 8312), with ns-3
//! `TcpCubic` / Linux semantics where the RFC leaves a choice (spec section 6.3).
//!
//! Window in segments, time in seconds:
//! * loss (third duplicate ACK): `W_max = cwnd (1 + beta)/2` if fast
//!   convergence is on and cwnd is below the previous `W_max`, else `W_max =
//!   cwnd`; `ssthresh = max(beta cwnd, 2 MSS)`; the epoch ends. Fast recovery
//!   itself is NewReno's (`cwnd = ssthresh + 3 MSS`, inflation, partial-ACK
//!   deflation, `cwnd = ssthresh` at the end: see `newreno.rs`).
//! * the first ACK in congestion avoidance starts an epoch at `t_epoch`:
//!   `K = cbrt((W_max - cwnd)/C)` and origin `W_max`, or, if cwnd is already
//!   at least `W_max`, `K = 0` and origin cwnd (Linux / ns-3); the Reno
//!   estimate `W_est` starts at cwnd.
//! * per ACK in congestion avoidance, `t = now - t_epoch`:
//!   `W_cubic(t) = C (t - K)^3 + W_max`; `target = W_cubic(t + RTT_min)`
//!   clamped to [cwnd, 1.5 cwnd]; cwnd grows by `(target - cwnd)/cwnd`
//!   segments, or by `1/(100 cwnd)` if target <= cwnd (Linux's minimum).
//! * Reno-friendly region (`tcp_friendliness`): `W_est += alpha *
//!   segments_acked / cwnd` with `alpha = 3(1 - beta)/(1 + beta)`, switched to
//!   1 once `W_est` reaches the window before the last reduction (RFC 9438
//!   4.3); if `W_cubic(t) < W_est`, cwnd = W_est.
//! * slow start: Reno's (`+min(acked, MSS)` per ACK).
//! * RTO (RFC 9438 4.8): `ssthresh = max(beta cwnd, 2 MSS)` (kept if the
//!   window was already reduced for the data in flight, e.g. a timeout during
//!   fast recovery, as for NewReno), cwnd = 1 MSS, the epoch is reset and
//!   `W_max` forgotten, so the first congestion avoidance after a timeout
//!   starts with K = 0 from the window it has then.
//!
//! HyStart (Ha & Rhee 2011, as in Linux before 5.x and ns-3: ACK-train and
//! delay-increase detection, which end slow start by setting ssthresh = cwnd)
//! is implemented but OFF by default (`hystart = false`): its thresholds are
//! WAN-scale (2 ms ACK spacing, 4 ms minimum delay increase) and would end slow
//! start at once on microsecond datacenter paths. Scale them before enabling.
//!
//! Deliberate deviations / choices:
//! * `ssthresh` and `W_max` use cwnd (Linux, ns-3), not the flight size.
//! * RTT in `W_cubic(t + RTT)` is the minimum RTT observed (ns-3 `m_delayMin`).
//! * The ns-3 ACK counter (`CntClamp`) is replaced by the exact per-ACK
//!   increment of RFC 9438; growth is per ACK, so with `host.ack_every > 1`
//!   the cubic part is slower, as in RFC 9438's per-ACK wording.
//! * Optional ECN response (`ecn = true`): an ECN echo is a congestion event
//!   like a loss without retransmission, at most once per window (RFC 9438 4.6).
//! * A NACK (only when `host.loss_recovery = "go_back_n"` is forced) is treated
//!   like an ECN echo.

use super::newreno::{
    param_bool, param_str, AckKind, TcpWindow, P_ECN, P_INIT_CWND, P_INIT_SSTHRESH, P_LIMITED_TRANSMIT,
};
use super::{AckEvent, CcCtx, CcInfo, CongestionControl, ParamInfo, Params, Transport};
use crate::config::ConfigError;
use crate::units::{Time, MS, SEC};

/// Which HyStart detectors run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HyStartDetect {
    /// ACK-train length detector.
    pub ack_train: bool,
    /// Delay-increase detector.
    pub delay: bool,
}

/// HyStart configuration and per-round state.
#[derive(Clone, Debug)]
pub struct HyStart {
    /// Enabled.
    pub on: bool,
    /// Detectors.
    pub detect: HyStartDetect,
    /// No detection below this window (segments).
    pub low_window: f64,
    /// RTT samples per round for the delay detector.
    pub min_samples: u32,
    /// Largest ACK spacing that still continues an ACK train.
    pub ack_delta: Time,
    /// Lower clamp of the delay-increase threshold.
    pub delay_min: Time,
    /// Upper clamp of the delay-increase threshold.
    pub delay_max: Time,
    /// A detector fired (until the next timeout).
    pub found: bool,
    round_start: Time,
    last_ack: Time,
    end_seq: u64,
    curr_rtt: Time,
    samples: u32,
}

/// TCP CUBIC state of one flow.
#[derive(Clone, Debug)]
pub struct Cubic {
    /// Window and NewReno loss recovery.
    pub tcp: TcpWindow,
    /// Cubic scaling constant C (segments/s^3).
    pub c: f64,
    /// Multiplicative decrease factor beta.
    pub beta: f64,
    /// Fast convergence.
    pub fast_convergence: bool,
    /// Reno-friendly region.
    pub tcp_friendliness: bool,
    /// React to ECN echoes.
    pub ecn: bool,
    /// HyStart.
    pub hystart: HyStart,
    /// W_max: window before the last reduction, after fast convergence (segments).
    pub w_max: f64,
    /// Window before the last reduction (segments).
    pub cwnd_prior: f64,
    /// Origin (plateau) of the current cubic curve (segments).
    pub origin: f64,
    /// K of the current epoch (seconds).
    pub k: f64,
    /// Start of the current epoch (congestion avoidance stage).
    pub epoch: Option<Time>,
    /// Reno-emulation window estimate (segments).
    pub w_est: f64,
    /// Reno-emulation additive increase (segments per window).
    pub alpha: f64,
    /// Smallest RTT seen (ps; `Time::MAX` before any sample).
    pub rtt_min: Time,
}

impl Cubic {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[
            ParamInfo { name: "c", default: "0.4", help: "cubic scaling constant C (segments/s^3)" },
            ParamInfo { name: "beta", default: "0.7", help: "multiplicative decrease factor, in (0, 1)" },
            ParamInfo {
                name: "fast_convergence",
                default: "true",
                help: "release bandwidth faster when W_max shrinks",
            },
            ParamInfo { name: "tcp_friendliness", default: "true", help: "Reno-friendly region (W_est)" },
            P_INIT_CWND,
            P_INIT_SSTHRESH,
            P_LIMITED_TRANSMIT,
            P_ECN,
            ParamInfo { name: "hystart", default: "false", help: "HyStart slow-start exit (WAN-scale defaults)" },
            ParamInfo { name: "hystart_detect", default: "both", help: "HyStart detectors: both, ack_train or delay" },
            ParamInfo {
                name: "hystart_low_window",
                default: "16",
                help: "HyStart inactive below this window (segments)",
            },
            ParamInfo {
                name: "hystart_min_samples",
                default: "8",
                help: "RTT samples per round for the delay detector",
            },
            ParamInfo { name: "hystart_ack_delta", default: "2ms", help: "largest ACK spacing within an ACK train" },
            ParamInfo {
                name: "hystart_delay_min",
                default: "4ms",
                help: "lower clamp of the delay-increase threshold",
            },
            ParamInfo {
                name: "hystart_delay_max",
                default: "1000ms",
                help: "upper clamp of the delay-increase threshold",
            },
        ];
        CcInfo { name: "cubic", summary: "TCP CUBIC (RFC 9438): cubic window growth after loss", params: P }
    }

    /// Builds it from scenario parameters.
    pub fn from_params(p: &Params) -> Result<Self, ConfigError> {
        let c = p.f64("c", 0.4)?;
        if c <= 0.0 {
            return Err(p.bad("c", "must be positive"));
        }
        let beta = p.f64("beta", 0.7)?;
        if !(beta > 0.0 && beta < 1.0) {
            return Err(p.bad("beta", "must be in (0, 1)"));
        }
        let detect = match param_str(p, "hystart_detect", "both")? {
            "both" => HyStartDetect { ack_train: true, delay: true },
            "ack_train" => HyStartDetect { ack_train: true, delay: false },
            "delay" => HyStartDetect { ack_train: false, delay: true },
            _ => return Err(p.bad("hystart_detect", "expected \"both\", \"ack_train\" or \"delay\"")),
        };
        let low_window = p.f64("hystart_low_window", 16.0)?;
        if low_window < 0.0 {
            return Err(p.bad("hystart_low_window", "must not be negative"));
        }
        let min_samples = p.f64("hystart_min_samples", 8.0)?;
        if min_samples < 1.0 || min_samples.fract() != 0.0 || min_samples > 1e6 {
            return Err(p.bad("hystart_min_samples", "must be a whole number >= 1"));
        }
        let ack_delta = p.time("hystart_ack_delta", 2 * MS)?;
        let delay_min = p.time("hystart_delay_min", 4 * MS)?;
        let delay_max = p.time("hystart_delay_max", 1000 * MS)?;
        if delay_min > delay_max {
            return Err(p.bad("hystart_delay_min", "must not exceed hystart_delay_max"));
        }
        Ok(Cubic {
            tcp: TcpWindow::from_params(p)?,
            c,
            beta,
            fast_convergence: param_bool(p, "fast_convergence", true)?,
            tcp_friendliness: param_bool(p, "tcp_friendliness", true)?,
            ecn: param_bool(p, "ecn", false)?,
            hystart: HyStart {
                on: param_bool(p, "hystart", false)?,
                detect,
                low_window,
                min_samples: min_samples as u32,
                ack_delta,
                delay_min,
                delay_max,
                found: false,
                round_start: 0,
                last_ack: 0,
                end_seq: 0,
                curr_rtt: Time::MAX,
                samples: 0,
            },
            w_max: 0.0,
            cwnd_prior: 0.0,
            origin: 0.0,
            k: 0.0,
            epoch: None,
            w_est: 0.0,
            alpha: 3.0 * (1.0 - beta) / (1.0 + beta),
            rtt_min: Time::MAX,
        })
    }

    /// `W_cubic(t)` of the current epoch, in segments (`t` in seconds).
    #[inline]
    pub fn w_cubic(&self, t: f64) -> f64 {
        let d = t - self.k;
        self.c * d * d * d + self.origin
    }

    /// A congestion event (loss, ECN echo): updates W_max, ends the epoch and
    /// returns the new ssthresh in bytes.
    fn congestion_event(&mut self) -> f64 {
        let segs = self.tcp.cwnd / self.tcp.mss;
        self.cwnd_prior = segs;
        self.w_max = if self.fast_convergence && segs < self.w_max { segs * (1.0 + self.beta) * 0.5 } else { segs };
        self.epoch = None;
        self.alpha = 3.0 * (1.0 - self.beta) / (1.0 + self.beta);
        (self.tcp.cwnd * self.beta).max(2.0 * self.tcp.mss)
    }

    /// Starts a congestion-avoidance epoch now.
    fn start_epoch(&mut self, now: Time) {
        let segs = self.tcp.cwnd / self.tcp.mss;
        self.epoch = Some(now);
        if self.w_max <= segs {
            self.k = 0.0;
            self.origin = segs;
        } else {
            self.k = ((self.w_max - segs) / self.c).cbrt();
            self.origin = self.w_max;
        }
        self.w_est = segs;
    }

    /// Congestion-avoidance growth for one ACK of `newly` bytes.
    #[inline]
    fn cubic_increase(&mut self, now: Time, newly: u64) {
        let mss = self.tcp.mss;
        if self.epoch.is_none() {
            self.start_epoch(now);
        }
        let epoch = self.epoch.unwrap_or(now);
        let segs = self.tcp.cwnd / mss;
        let t = (now - epoch) as f64 * (1.0 / SEC as f64);
        let rtt = if self.rtt_min == Time::MAX { 0.0 } else { self.rtt_min as f64 * (1.0 / SEC as f64) };
        let target = self.w_cubic(t + rtt).clamp(segs, 1.5 * segs);
        let inc = if target > segs { (target - segs) / segs } else { 0.01 / segs };
        let mut cwnd = self.tcp.cwnd + inc * mss;
        if self.tcp_friendliness {
            self.w_est += self.alpha * (newly as f64 / mss) / segs;
            if self.w_est >= self.cwnd_prior {
                self.alpha = 1.0;
            }
            if self.w_cubic(t) < self.w_est {
                cwnd = cwnd.max(self.w_est * mss);
            }
        }
        self.tcp.cwnd = cwnd.min(1e15);
    }

    /// HyStart on one ACK in slow start.
    fn hystart_update(&mut self, ctx: &CcCtx, ack: &AckEvent) {
        let now = ctx.now;
        let h = &mut self.hystart;
        if ack.ack_seq > h.end_seq {
            // A new round of slow start.
            h.round_start = now;
            h.last_ack = now;
            h.end_seq = ctx.flow.snd_nxt;
            h.curr_rtt = Time::MAX;
            h.samples = 0;
        }
        if h.found || self.tcp.cwnd < h.low_window * self.tcp.mss || self.rtt_min == Time::MAX {
            return;
        }
        let delay_min = self.rtt_min;
        if h.detect.ack_train && now - h.last_ack <= h.ack_delta {
            h.last_ack = now;
            if now - h.round_start > delay_min / 2 {
                h.found = true;
            }
        }
        if h.detect.delay && !h.found {
            if h.samples < h.min_samples {
                h.curr_rtt = h.curr_rtt.min(ack.rtt);
                h.samples += 1;
            } else if h.curr_rtt > delay_min + (delay_min / 8).clamp(h.delay_min, h.delay_max) {
                h.found = true;
            }
        }
        if h.found {
            self.tcp.ssthresh = self.tcp.cwnd;
        }
    }
}

impl CongestionControl for Cubic {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        self.tcp.start(ctx);
        self.hystart.end_seq = ctx.flow.snd_nxt;
    }

    #[inline]
    fn on_send(&mut self, ctx: &mut CcCtx, _bytes: u32) {
        self.tcp.high_nxt = ctx.flow.snd_nxt;
    }

    #[inline]
    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        if ack.rtt < self.rtt_min {
            self.rtt_min = ack.rtt;
        }
        if self.tcp.ack(ctx, ack) == AckKind::New {
            if self.tcp.in_slow_start() {
                self.tcp.slow_start(ack.newly_acked);
                if self.hystart.on {
                    self.hystart_update(ctx, ack);
                }
            } else {
                self.cubic_increase(ctx.now, ack.newly_acked);
            }
        }
        if self.ecn && ack.ecn_echo && self.tcp.may_reduce() {
            let ss = self.congestion_event();
            self.tcp.reduce(ctx, ss, 2.0 * self.tcp.mss);
        }
        self.tcp.apply(ctx, ack.dup_acks);
    }

    fn on_fast_retransmit(&mut self, ctx: &mut CcCtx) {
        let ss = self.congestion_event();
        self.tcp.enter_recovery(ss);
        self.tcp.apply(ctx, 0);
    }

    fn on_timeout(&mut self, ctx: &mut CcCtx) {
        // Reduce only if this window was not reduced already (a timeout in
        // fast recovery keeps its ssthresh; the cwnd there is inflated).
        let ss = (!self.tcp.already_reduced(ctx)).then(|| self.congestion_event());
        self.epoch = None;
        self.w_max = 0.0;
        self.hystart.found = false;
        self.hystart.end_seq = ctx.flow.snd_nxt;
        self.tcp.enter_loss(ctx, ss);
        self.tcp.apply(ctx, 0);
    }

    fn on_nack(&mut self, ctx: &mut CcCtx, _expected: u64, _rtt: Time) {
        if self.tcp.may_reduce() {
            let ss = self.congestion_event();
            self.tcp.reduce(ctx, ss, 2.0 * self.tcp.mss);
            self.tcp.apply(ctx, 0);
        }
    }

    fn transport(&self) -> Transport {
        Transport::Tcp
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::newreno::tests::{ack, cfg, flow};
    use crate::cc::FlowCtl;
    use crate::units::US;
    use serde_json::json;

    fn build(json: serde_json::Value) -> Result<Cubic, ConfigError> {
        let c = cfg(json);
        Cubic::from_params(&Params::new(&c, "cc", Cubic::info().params)?)
    }

    fn started() -> (Cubic, FlowCtl) {
        let mut c = build(json!({"algorithm": "cubic"})).unwrap();
        let mut f = flow();
        c.on_start(&mut CcCtx { now: 0, flow: &mut f });
        (c, f)
    }

    #[test]
    fn loss_sets_w_max_and_cuts_to_beta_with_fast_convergence() {
        let (mut c, mut f) = started();
        c.tcp.cwnd = 100_000.0;
        f.snd_nxt = 100_000;
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        c.on_fast_retransmit(&mut ctx);
        assert_eq!(c.w_max, 100.0);
        assert!((c.tcp.ssthresh - 70_000.0).abs() < 1e-6);
        assert!((c.tcp.cwnd - 73_000.0).abs() < 1e-6, "Reno recovery: ssthresh + 3 MSS");
        // A second loss below W_max: fast convergence releases more.
        c.tcp.in_recovery = false;
        c.tcp.cwnd = 80_000.0;
        c.on_fast_retransmit(&mut ctx);
        assert!((c.w_max - 80.0 * 1.7 / 2.0).abs() < 1e-9);
        assert!((c.tcp.ssthresh - 56_000.0).abs() < 1e-6);
    }

    /// After a loss at W_max = 1000 segments with an RTT of 10 ms, the window
    /// follows W(t) = C (t - K)^3 + W_max: concave up to W_max at t = K, then convex.
    #[test]
    fn window_after_a_loss_follows_the_cubic_curve() {
        let (mut c, mut f) = started();
        c.tcp_friendliness = false;
        let mss = 1000.0;
        let w_max = 1000.0;
        c.tcp.cwnd = w_max * mss;
        let rtt: Time = 10 * crate::units::MS;
        f.snd_una = 0;
        f.snd_nxt = (w_max * mss) as u64;
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        let mut a = ack(0, 0);
        a.rtt = rtt;
        c.on_ack(&mut ctx, &a);
        c.on_fast_retransmit(&mut ctx);
        let mut e = ack(1, 1);
        e.recovery_ended = true;
        c.on_ack(&mut ctx, &e);
        assert_eq!(c.tcp.cwnd, 700_000.0);
        let k = (w_max * 0.3 / 0.4_f64).cbrt();
        // Feed one ACK per segment of the window, spread over each RTT.
        let mut now: Time = 0;
        let mut seq = 1u64;
        let mut worst: f64 = 0.0;
        while now < 12 * crate::units::SEC {
            let w = c.tcp.cwnd;
            let n = (w / mss) as u64;
            for i in 0..n {
                let t = now + rtt * i / n;
                seq += 1000;
                let mut a = ack(seq, 1000);
                a.rtt = rtt;
                let mut ctx = CcCtx { now: t, flow: &mut f };
                ctx.flow.snd_nxt = seq + w as u64;
                c.on_ack(&mut ctx, &a);
            }
            now += rtt;
            let t = now as f64 / SEC as f64;
            let want = 0.4 * (t - k).powi(3) + w_max;
            let got = c.tcp.cwnd / mss;
            if want < 1.5 * w_max {
                worst = worst.max((got - want).abs() / want);
            }
        }
        assert!(worst < 0.02, "largest relative deviation from W(t): {worst}");
        assert!((c.k - k).abs() < 1e-9);
    }

    #[test]
    fn reno_friendly_region_grows_like_aimd_when_the_cubic_is_slower() {
        // Tiny C makes the cubic curve flat: W_est must take over.
        let mut c = build(json!({"algorithm": "cubic", "c": 1e-9})).unwrap();
        let mut f = flow();
        c.on_start(&mut CcCtx { now: 0, flow: &mut f });
        c.tcp.cwnd = 100_000.0;
        f.snd_nxt = 100_000;
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        c.on_fast_retransmit(&mut ctx);
        let mut e = ack(1, 1);
        e.recovery_ended = true;
        c.on_ack(&mut ctx, &e);
        let start = c.tcp.cwnd / 1000.0;
        // Ten windows of ACKs: W_est grows by 3(1-b)/(1+b) = 0.529 segments per window.
        let mut seq = 1;
        for r in 0..10u64 {
            let n = (c.tcp.cwnd / 1000.0) as u64;
            for _ in 0..n {
                seq += 1000;
                let mut ctx = CcCtx { now: r * 100 * US, flow: &mut f };
                c.on_ack(&mut ctx, &ack(seq, 1000));
            }
        }
        let grown = c.tcp.cwnd / 1000.0 - start;
        assert!((grown - 10.0 * 0.9 / 1.7).abs() < 0.3, "grew {grown} segments in 10 windows");
    }

    #[test]
    fn timeout_forgets_w_max_and_restarts_from_one_segment() {
        let (mut c, mut f) = started();
        c.tcp.cwnd = 50_000.0;
        c.w_max = 80.0;
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        c.on_timeout(&mut ctx);
        assert_eq!(c.tcp.cwnd, 1000.0);
        assert!((c.tcp.ssthresh - 35_000.0).abs() < 1e-6);
        assert_eq!(c.w_max, 0.0);
        assert!(c.epoch.is_none());
    }

    #[test]
    fn hystart_delay_detector_ends_slow_start() {
        let mut c = build(json!({"algorithm": "cubic", "hystart": true, "hystart_detect": "delay",
                                  "hystart_low_window": 0, "hystart_delay_min": "1us", "hystart_delay_max": "1ms"}))
        .unwrap();
        let mut f = flow();
        c.on_start(&mut CcCtx { now: 0, flow: &mut f });
        let mut seq = 0;
        let mut now = 0;
        // A round of 20 ACKs at 10 us, then RTT samples of 30 us.
        f.snd_nxt = 20_000;
        for i in 0..60 {
            seq += 1000;
            now += US;
            let mut a = ack(seq, 1000);
            a.rtt = if i < 20 { 10 * US } else { 30 * US };
            let mut ctx = CcCtx { now, flow: &mut f };
            if i == 20 {
                ctx.flow.snd_nxt = 60_000;
            }
            c.on_ack(&mut ctx, &a);
        }
        assert!(c.hystart.found);
        assert!(c.tcp.ssthresh.is_finite());
        assert!(!c.tcp.in_slow_start());
    }

    #[test]
    fn hystart_ack_train_detector_ends_slow_start_after_half_a_min_rtt_of_acks() {
        let mut c = build(json!({"algorithm": "cubic", "hystart": true, "hystart_detect": "ack_train",
                                  "hystart_low_window": 0, "hystart_ack_delta": "2us"}))
        .unwrap();
        let mut f = flow();
        c.on_start(&mut CcCtx { now: 0, flow: &mut f });
        f.snd_nxt = 1_000_000;
        // ACKs 1 us apart, RTT 100 us: the train passes half the RTT at the 52nd ACK.
        let mut now = 0;
        for i in 1..=60u64 {
            now += US;
            let mut a = ack(i * 1000, 1000);
            a.rtt = 100 * US;
            c.on_ack(&mut CcCtx { now, flow: &mut f }, &a);
            if i <= 51 {
                assert!(!c.hystart.found, "found at ACK {i}");
            }
        }
        assert!(c.hystart.found);
        // Found on ACK 52 (51 us after the round began), with cwnd = 10 + 52 segments.
        assert!((c.tcp.ssthresh - 62_000.0).abs() < 1e-9, "ssthresh = cwnd when found: {}", c.tcp.ssthresh);
        // A gap in the train (ACKs more than ack_delta apart) does not count.
        let mut c2 = build(json!({"algorithm": "cubic", "hystart": true, "hystart_detect": "ack_train",
                                   "hystart_low_window": 0, "hystart_ack_delta": "2us"}))
        .unwrap();
        let mut f2 = flow();
        c2.on_start(&mut CcCtx { now: 0, flow: &mut f2 });
        f2.snd_nxt = 1_000_000;
        for i in 1..=60u64 {
            let mut a = ack(i * 1000, 1000);
            a.rtt = 100 * US;
            c2.on_ack(&mut CcCtx { now: i * 3 * US, flow: &mut f2 }, &a);
        }
        assert!(!c2.hystart.found);
    }

    #[test]
    fn bad_parameters_are_rejected() {
        for (j, field) in [
            (json!({"algorithm": "cubic", "beta": 1.0}), "cc.beta"),
            (json!({"algorithm": "cubic", "c": 0}), "cc.c"),
            (json!({"algorithm": "cubic", "hystart_detect": "all"}), "cc.hystart_detect"),
            (json!({"algorithm": "cubic", "hystart_min_samples": 0.5}), "cc.hystart_min_samples"),
            (json!({"algorithm": "cubic", "fast_convergence": 1}), "cc.fast_convergence"),
            (json!({"algorithm": "cubic", "hystart_delay_min": "2s"}), "cc.hystart_delay_min"),
        ] {
            assert_eq!(build(j).unwrap_err().field, field);
        }
    }
}
