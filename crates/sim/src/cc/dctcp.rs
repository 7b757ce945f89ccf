//! DCTCP (Alizadeh et al., SIGCOMM 2010; RFC 8257), spec section 5.
//!
//! Two variants, chosen by `variant`:
//!
//! **`window`** (default): the paper / RFC 8257 sender on top of NewReno
//! (`newreno.rs`, TCP transport: duplicate ACKs, fast recovery, adaptive RTO).
//! * Per ACK: `bytes_acked += newly acked`; if the ACK echoes CE,
//!   `bytes_marked += newly acked`.
//! * When the cumulative ACK passes `window_end` (spec 0.4 / RFC 8257:
//!   `ack_seq > window_end`, initially 0), about once per RTT:
//!   `F = bytes_marked / bytes_acked`, `alpha = (1 - g) alpha + g F`,
//!   counters reset, `window_end = snd_nxt`.
//! * On an ECN echo, at most once per window (CWR until the cumulative ACK
//!   passes `snd_nxt` at the time of the cut) and not during loss recovery:
//!   `cwnd = max(cwnd (1 - alpha/2), min_cwnd)`, `ssthresh = cwnd`.
//! * Otherwise standard TCP: slow start, +1 MSS per RTT, halving on loss
//!   (`ssthresh = max(2 MSS, flight/2)`, NewReno recovery), RTO to 1 MSS.
//!   Growth continues during CWR (as in htsim); only further cuts wait.
//! * The receiver echoes the CE bit of the packet each ACK answers. With the
//!   default per-packet ACKs (`host.ack_every = 1`) this is exactly the
//!   paper's "ECE = CE of the packet being acknowledged"; the delayed-ACK
//!   state machine of the paper (5.2) is not modelled: with `ack_every = m >
//!   1`, an ACK carries the CE bit of the last of its m packets.
//!
//! **`rate`**: the HPCC-ns3 DCTCP (`CC_MODE 8`, spec 5.4), the HPCC paper's
//! DCTCP baseline, on the RDMA go-back-N transport. Rate starts at line rate,
//! window = BDP x rate / line rate (`var_win = true`, HPCC-ns3 VAR_WIN) or BDP.
//! Per ACK, in HPCC-ns3's order: count ECE ACKs; when `ack_seq > last_update_seq`
//! (the first time only: initialise `last_update_seq = snd_nxt` and the batch
//! `snd_nxt/MTU + 1`), `alpha = (1 - g) alpha + g min(1, ece_acks / batch)`,
//! `batch = (snd_nxt - ack_seq)/MTU + 1`, `last_update_seq = snd_nxt`; leave
//! CWR when `ack_seq > high_seq`; on ECE outside CWR `rate = max(min_rate,
//! rate (1 - alpha/2))`, enter CWR with `high_seq = snd_nxt`; outside CWR, at
//! each new batch, `rate = min(line, rate + rate_ai)`. NACKs run the same
//! update as an ACK without ECE (HPCC-ns3 calls its DCTCP handler for both).
//! Deviation: the base window is the flow's own path BDP, not the BDP of the
//! longest path in the network as in HPCC-ns3.
//!
//! **Switch side** (both variants): `switch.ecn` with `kmin = kmax = K`,
//! `pmax = 1`, and `at = "enqueue"` for the paper's marking of arriving packets
//! (HPCC-ns3 marks at dequeue). Recommended K: HPCC-ns3 uses 30 KB x C / 10
//! Gb/s, i.e. **K = 300 KB at 100 Gb/s** (1200 KB at 400 Gb/s); the paper's
//! guideline is K > C x RTT / 7 (20 packets at 1 Gb/s, 65 at 10 Gb/s).
//!
//! Defaults: g = 1/16, alpha starts at 1 (RFC 8257, Linux, ns-3, HPCC-ns3;
//! htsim uses 0), window floor 2 MSS (usual TCP floor; htsim uses 1),
//! initial window 10 segments, rate additive increase 615 Mb/s (HPCC-ns3).

use super::newreno::{param_bool, param_str, AckKind, TcpWindow, P_INIT_CWND, P_INIT_SSTHRESH, P_LIMITED_TRANSMIT};
use super::{AckEvent, CcCtx, CcInfo, CongestionControl, ParamInfo, Params, Transport};
use crate::config::ConfigError;
use crate::units::Time;

/// Which DCTCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DctcpVariant {
    /// Window-based DCTCP over TCP (paper, RFC 8257).
    Window,
    /// Rate-based DCTCP of HPCC-ns3 over go-back-N.
    Rate,
}

/// DCTCP state of one flow.
#[derive(Clone, Debug)]
pub struct Dctcp {
    /// Window or rate variant.
    pub variant: DctcpVariant,
    /// Window and loss recovery (window variant).
    pub tcp: TcpWindow,
    /// EWMA gain g.
    pub g: f64,
    /// Estimate of the fraction of marked packets.
    pub alpha: f64,
    /// Window floor after an ECN cut, in segments.
    pub min_cwnd: f64,
    /// Bytes acknowledged in the current observation window.
    pub bytes_acked: u64,
    /// Bytes acknowledged with ECE in the current observation window.
    pub bytes_marked: u64,
    /// End of the current observation window (`snd_nxt` at its start).
    pub window_end: u64,
    /// Lifetime bytes acknowledged (statistics).
    pub total_acked: u64,
    /// Lifetime bytes acknowledged with ECE (statistics).
    pub total_marked: u64,
    /// Rate variant: additive increase per batch (bit/s).
    pub rate_ai: f64,
    /// Rate variant: window = BDP x rate / line rate (else BDP).
    pub var_win: bool,
    /// Rate variant: ECE ACKs in the current batch.
    pub ecn_acks: u64,
    /// Rate variant: packets expected in the current batch.
    pub batch: u64,
    /// Rate variant: end of the current batch.
    pub last_update_seq: u64,
    /// Rate variant: in CWR (no further cut, no increase).
    pub in_cwr: bool,
    /// Rate variant: CWR ends when the cumulative ACK passes this.
    pub high_seq: u64,
}

impl Dctcp {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[
            ParamInfo {
                name: "variant",
                default: "window",
                help: "window (paper, RFC 8257, TCP recovery) or rate (HPCC-ns3 CC_MODE 8, go-back-N)",
            },
            ParamInfo { name: "g", default: "0.0625", help: "EWMA gain of alpha, in (0, 1]" },
            ParamInfo { name: "alpha_init", default: "1", help: "initial alpha, in [0, 1]" },
            ParamInfo { name: "min_cwnd", default: "2", help: "window: floor of an ECN cut, in segments (>= 1)" },
            P_INIT_CWND,
            P_INIT_SSTHRESH,
            P_LIMITED_TRANSMIT,
            ParamInfo { name: "rate_ai", default: "615Mbps", help: "rate: additive increase per RTT (DCTCP_RATE_AI)" },
            ParamInfo { name: "var_win", default: "true", help: "rate: window = BDP x rate/line rate (else BDP)" },
        ];
        CcInfo { name: "dctcp", summary: "DCTCP (Alizadeh et al., SIGCOMM 2010): ECN-fraction window cut", params: P }
    }

    /// Builds it from scenario parameters.
    pub fn from_params(p: &Params) -> Result<Self, ConfigError> {
        let variant = match param_str(p, "variant", "window")? {
            "window" => DctcpVariant::Window,
            "rate" => DctcpVariant::Rate,
            _ => return Err(p.bad("variant", "expected \"window\" or \"rate\"")),
        };
        let g = p.f64("g", 0.0625)?;
        if !(g > 0.0 && g <= 1.0) {
            return Err(p.bad("g", "must be in (0, 1]"));
        }
        let alpha = p.f64("alpha_init", 1.0)?;
        if !(0.0..=1.0).contains(&alpha) {
            return Err(p.bad("alpha_init", "must be in [0, 1]"));
        }
        let min_cwnd = p.f64("min_cwnd", 2.0)?;
        if min_cwnd < 1.0 {
            return Err(p.bad("min_cwnd", "must be at least 1 segment"));
        }
        let rate_ai = p.rate("rate_ai", 615e6)?;
        if rate_ai <= 0.0 {
            return Err(p.bad("rate_ai", "must be positive"));
        }
        Ok(Dctcp {
            variant,
            tcp: TcpWindow::from_params(p)?,
            g,
            alpha,
            min_cwnd,
            bytes_acked: 0,
            bytes_marked: 0,
            window_end: 0,
            total_acked: 0,
            total_marked: 0,
            rate_ai,
            var_win: param_bool(p, "var_win", true)?,
            ecn_acks: 0,
            batch: 1,
            last_update_seq: 0,
            in_cwr: false,
            high_seq: 0,
        })
    }

    /// Fraction of acknowledged bytes that carried an ECN echo over the
    /// flow's lifetime (0 before any ACK).
    pub fn marked_fraction(&self) -> f64 {
        if self.total_acked == 0 {
            0.0
        } else {
            self.total_marked as f64 / self.total_acked as f64
        }
    }

    /// Window variant: the alpha estimator for one ACK.
    #[inline]
    fn observe(&mut self, ctx: &CcCtx, ack: &AckEvent) {
        self.bytes_acked += ack.newly_acked;
        self.total_acked += ack.newly_acked;
        if ack.ecn_echo {
            self.bytes_marked += ack.newly_acked;
            self.total_marked += ack.newly_acked;
        }
        if ack.ack_seq > self.window_end {
            if self.bytes_acked > 0 {
                let f = self.bytes_marked as f64 / self.bytes_acked as f64;
                self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
            }
            self.bytes_acked = 0;
            self.bytes_marked = 0;
            self.window_end = ctx.flow.snd_nxt;
        }
    }

    /// Rate variant: the HPCC-ns3 handler for an ACK (or a NACK, `ece` false).
    #[inline]
    fn rate_update(&mut self, ctx: &mut CcCtx, ack_seq: u64, ece: bool) {
        let mtu = ctx.flow.mtu.max(1) as u64;
        let snd_nxt = ctx.flow.snd_nxt;
        self.ecn_acks += ece as u64;
        let mut new_batch = false;
        if ack_seq > self.last_update_seq {
            new_batch = true;
            if self.last_update_seq == 0 {
                self.last_update_seq = snd_nxt;
                self.batch = snd_nxt / mtu + 1;
            } else {
                let frac = (self.ecn_acks as f64 / self.batch as f64).min(1.0);
                self.alpha = (1.0 - self.g) * self.alpha + self.g * frac;
                self.last_update_seq = snd_nxt;
                self.ecn_acks = 0;
                self.batch = snd_nxt.saturating_sub(ack_seq) / mtu + 1;
            }
        }
        if self.in_cwr && ack_seq > self.high_seq {
            self.in_cwr = false;
        }
        let old = ctx.flow.rate;
        if ece && !self.in_cwr {
            ctx.set_rate(old * (1.0 - self.alpha * 0.5));
            self.in_cwr = true;
            self.high_seq = snd_nxt;
            self.tcp.cuts += 1;
        }
        if !self.in_cwr && new_batch {
            ctx.set_rate(ctx.flow.rate + self.rate_ai);
        }
        if ctx.flow.rate != old {
            self.rate_window(ctx);
        }
    }

    /// Rate variant: the window that goes with the rate.
    fn rate_window(&self, ctx: &mut CcCtx) {
        let bdp = ctx.flow.bdp.max(1) as f64;
        let w = if self.var_win { bdp * ctx.flow.rate / ctx.flow.line_rate } else { bdp };
        ctx.set_window(w as u64);
    }

    /// Window variant: halving for a loss event.
    #[inline]
    fn half(&self, x: f64) -> f64 {
        (x * 0.5).max(2.0 * self.tcp.mss)
    }
}

impl CongestionControl for Dctcp {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        match self.variant {
            DctcpVariant::Window => {
                self.tcp.start(ctx);
                self.window_end = ctx.flow.snd_nxt;
            }
            DctcpVariant::Rate => {
                let line = ctx.flow.line_rate;
                ctx.set_rate(line);
                self.rate_window(ctx);
            }
        }
    }

    #[inline]
    fn on_send(&mut self, ctx: &mut CcCtx, _bytes: u32) {
        self.tcp.high_nxt = ctx.flow.snd_nxt;
    }

    #[inline]
    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        if self.variant == DctcpVariant::Rate {
            self.rate_update(ctx, ack.ack_seq, ack.ecn_echo);
            return;
        }
        let kind = self.tcp.ack(ctx, ack);
        self.observe(ctx, ack);
        if kind == AckKind::New {
            if self.tcp.in_slow_start() {
                self.tcp.slow_start(ack.newly_acked);
            } else {
                self.tcp.reno_increase();
            }
        }
        if ack.ecn_echo && self.tcp.may_reduce() {
            let w = self.tcp.cwnd * (1.0 - self.alpha * 0.5);
            self.tcp.reduce(ctx, w, self.min_cwnd * self.tcp.mss);
        }
        self.tcp.apply(ctx, ack.dup_acks);
    }

    fn on_fast_retransmit(&mut self, ctx: &mut CcCtx) {
        if self.variant == DctcpVariant::Window {
            let ss = self.half(self.tcp.loss_flight(ctx));
            self.tcp.enter_recovery(ss);
            self.tcp.apply(ctx, 0);
        }
    }

    fn on_timeout(&mut self, ctx: &mut CcCtx) {
        if self.variant == DctcpVariant::Window {
            let ss = (!self.tcp.already_reduced(ctx)).then(|| self.half(self.tcp.flight_before_timeout(ctx)));
            self.tcp.enter_loss(ctx, ss);
            self.tcp.apply(ctx, 0);
        }
    }

    fn on_nack(&mut self, ctx: &mut CcCtx, expected: u64, _rtt: Time) {
        match self.variant {
            DctcpVariant::Rate => self.rate_update(ctx, expected, false),
            DctcpVariant::Window => {
                if self.tcp.may_reduce() {
                    let w = self.half(self.tcp.cwnd);
                    self.tcp.reduce(ctx, w, self.min_cwnd * self.tcp.mss);
                    self.tcp.apply(ctx, 0);
                }
            }
        }
    }

    fn transport(&self) -> Transport {
        match self.variant {
            DctcpVariant::Window => Transport::Tcp,
            DctcpVariant::Rate => Transport::GoBackN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::newreno::tests::{ack, cfg, flow};
    use crate::cc::FlowCtl;
    use serde_json::json;

    fn build(j: serde_json::Value) -> Result<Dctcp, ConfigError> {
        let c = cfg(j);
        Dctcp::from_params(&Params::new(&c, "cc", Dctcp::info().params)?)
    }

    fn started(j: serde_json::Value) -> (Dctcp, FlowCtl) {
        let mut d = build(j).unwrap();
        let mut f = flow();
        d.on_start(&mut CcCtx { now: 0, flow: &mut f });
        (d, f)
    }

    /// One ACK of the next segment, with the sender keeping 19 more segments
    /// in flight (so every observation window is exactly 20 ACKs long).
    fn ack_one(d: &mut Dctcp, f: &mut FlowCtl, marked: bool) {
        let seq = f.snd_una + 1000;
        f.snd_una = seq;
        f.snd_nxt = seq + 19_000;
        let mut a = ack(seq, 1000);
        a.ecn_echo = marked;
        d.on_ack(&mut CcCtx { now: 0, flow: f }, &a);
    }

    #[test]
    fn alpha_is_an_ewma_of_the_marked_fraction_per_window() {
        let (mut d, mut f) = started(json!({"algorithm": "dctcp"}));
        // window_end starts at 0 (spec 0.4), so the first ACK closes a
        // one-ACK window (unmarked): alpha = (1 - g) x 1.
        ack_one(&mut d, &mut f, false);
        let mut want = 1.0 - 1.0 / 16.0;
        assert!((d.alpha - want).abs() < 1e-12);
        // From then on a window closes on the first ACK beyond the snd_nxt of
        // the previous close: 20 ACKs here. Mark the first k of each window.
        for fr in [0.5, 0.0, 1.0, 0.25, 0.75, 0.1, 0.0, 0.05] {
            let marked = (fr * 20.0_f64).round() as usize;
            for i in 0..20 {
                assert!((d.alpha - want).abs() < 1e-12, "alpha changes only when a window closes");
                ack_one(&mut d, &mut f, i < marked);
            }
            want = (1.0 - 1.0 / 16.0) * want + fr / 16.0;
            assert!((d.alpha - want).abs() < 1e-12, "after a window marked {fr}: alpha {} want {want}", d.alpha);
        }
    }

    #[test]
    fn alpha_converges_to_a_constant_marked_fraction() {
        let (mut d, mut f) = started(json!({"algorithm": "dctcp", "alpha_init": 0}));
        ack_one(&mut d, &mut f, false);
        for _ in 0..300 {
            for i in 0..20 {
                ack_one(&mut d, &mut f, i % 10 < 3);
            }
        }
        assert!((d.alpha - 0.3).abs() < 1e-6, "alpha {}", d.alpha);
        assert!((d.marked_fraction() - 0.3).abs() < 1e-3);
    }

    #[test]
    fn ece_cuts_by_alpha_over_two_once_per_window_with_a_floor() {
        let (mut d, mut f) = started(json!({"algorithm": "dctcp", "alpha_init": 0.5}));
        d.tcp.cwnd = 40_000.0;
        d.window_end = u64::MAX; // freeze alpha
        f.snd_nxt = 40_000;
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        let mut a = ack(1000, 1000);
        a.ecn_echo = true;
        d.on_ack(&mut ctx, &a);
        // Slow start first (+1000), then the cut by alpha/2 = 0.25.
        assert_eq!(d.tcp.cwnd, 41_000.0 * 0.75);
        assert_eq!(d.tcp.ssthresh, d.tcp.cwnd);
        let after = d.tcp.cwnd;
        let mut b = ack(2000, 1000);
        b.ecn_echo = true;
        d.on_ack(&mut ctx, &b);
        assert!(d.tcp.cwnd > after, "no second cut in the same window");
        // Past the window: cut again; repeated cuts stop at the floor.
        d.alpha = 1.0;
        for _ in 0..20 {
            let seq = ctx.flow.snd_nxt + 1;
            ctx.flow.snd_nxt = seq + 10_000;
            let mut c = ack(seq, 1000);
            c.ecn_echo = true;
            d.on_ack(&mut ctx, &c);
        }
        assert_eq!(d.tcp.cwnd, 2000.0);
    }

    #[test]
    fn loss_halves_like_newreno() {
        let (mut d, mut f) = started(json!({"algorithm": "dctcp"}));
        d.tcp.cwnd = 30_000.0;
        f.snd_nxt = 30_000;
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        d.on_fast_retransmit(&mut ctx);
        assert_eq!(d.tcp.ssthresh, 15_000.0);
        assert_eq!(d.tcp.cwnd, 18_000.0);
        assert_eq!(d.transport(), Transport::Tcp);
    }

    #[test]
    fn rate_variant_follows_hpcc_ns3() {
        let (mut d, mut f) = started(json!({"algorithm": "dctcp", "variant": "rate"}));
        assert_eq!(d.transport(), Transport::GoBackN);
        assert_eq!(f.rate, 100e9);
        assert_eq!(f.window, 125_000);
        // First ACK: initialise the batch, increase (capped at line rate).
        f.snd_nxt = 20_000;
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        d.rate_update(&mut ctx, 1000, false);
        assert_eq!(d.last_update_seq, 20_000);
        assert_eq!(d.batch, 21);
        // ECE: alpha = 1 -> halve, enter CWR; window follows the rate.
        d.rate_update(&mut ctx, 2000, true);
        assert_eq!(ctx.flow.rate, 50e9);
        assert!(d.in_cwr);
        assert_eq!(ctx.flow.window, 62_500);
        // Batch end with 1 ECE of 21: alpha update; still in CWR (high_seq 20000).
        ctx.flow.snd_nxt = 30_000;
        d.rate_update(&mut ctx, 20_001, false);
        let want = 15.0 / 16.0 + 1.0 / 21.0 / 16.0;
        assert!((d.alpha - want).abs() < 1e-12);
        assert!(!d.in_cwr, "20001 > high_seq 20000 ends CWR");
        assert_eq!(ctx.flow.rate, 50e9 + 615e6, "additive increase at the new batch");
        assert_eq!(d.batch, (30_000 - 20_001) / 1000 + 1);
    }

    #[test]
    fn bad_parameters_are_rejected() {
        for (j, field) in [
            (json!({"algorithm": "dctcp", "g": 0}), "cc.g"),
            (json!({"algorithm": "dctcp", "g": 1.5}), "cc.g"),
            (json!({"algorithm": "dctcp", "alpha_init": -0.1}), "cc.alpha_init"),
            (json!({"algorithm": "dctcp", "variant": "hybrid"}), "cc.variant"),
            (json!({"algorithm": "dctcp", "min_cwnd": 0}), "cc.min_cwnd"),
            (json!({"algorithm": "dctcp", "rate_ai": 0}), "cc.rate_ai"),
        ] {
            assert_eq!(build(j).unwrap_err().field, field);
        }
    }
}
