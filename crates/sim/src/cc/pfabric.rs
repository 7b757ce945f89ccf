//! pFabric's "minimal rate control" at the end hosts (Alizadeh et al.,
//! SIGCOMM 2013; spec `rule_based_cc.md` section 7.1).
//!
//! pFabric leaves scheduling to the switches (rank ports that serve the
//! packet of the flow with the least remaining bytes and evict the one with
//! the most) and keeps the hosts almost passive: a flow starts at line rate
//! with a window of about one BDP, grows it by TCP's rules up to a small
//! maximum, and reacts only to timeouts. This file is the window; the
//! transport (`Transport::PFabric`: per-packet cumulative ACKs that also
//! count the bytes received out of order, a fixed timeout that goes back to
//! the first unacknowledged byte, probe mode after repeated timeouts) is in
//! the core.
//!
//! * start: `cwnd = init_cwnd` packets (12 in the paper and YAPS), no pacing;
//! * per ACK of new data: `+1` packet while `cwnd < ssthresh`, else
//!   `+1/cwnd` packets, capped at `max_cwnd` packets (YAPS 15);
//! * duplicate ACKs: nothing (losses are repaired by the timeout alone);
//! * timeout: `ssthresh = max(cwnd / 2, 2)` packets, `cwnd = 1` packet.
//!
//! A packet here is the scenario's full payload (`packets.payload`).

use super::{AckEvent, CcCtx, CcInfo, CongestionControl, ParamInfo, Params, Transport};
use crate::config::ConfigError;

/// State of one pFabric sender; windows in packets.
#[derive(Clone, Debug)]
pub struct PFabric {
    init_cwnd: f64,
    max_cwnd: f64,
    cwnd: f64,
    ssthresh: f64,
}

impl PFabric {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[
            ParamInfo { name: "init_cwnd", default: "12", help: "initial window in packets (about one BDP)" },
            ParamInfo { name: "max_cwnd", default: "15", help: "largest window in packets" },
        ];
        CcInfo {
            name: "pfabric",
            summary: "pFabric end hosts: line rate, BDP window, timeouts only (use with switch.discipline = \"rank\")",
            params: P,
        }
    }

    /// Builds it from its `[cc]` parameters.
    pub fn from_params(p: &Params) -> Result<Self, ConfigError> {
        let init_cwnd = p.f64("init_cwnd", 12.0)?;
        let max_cwnd = p.f64("max_cwnd", 15.0)?;
        if !(init_cwnd >= 1.0 && init_cwnd.is_finite()) {
            return Err(p.bad("init_cwnd", "must be at least 1 packet"));
        }
        if !(max_cwnd >= init_cwnd && max_cwnd.is_finite()) {
            return Err(p.bad("max_cwnd", "must be at least init_cwnd"));
        }
        Ok(PFabric { init_cwnd, max_cwnd, cwnd: init_cwnd, ssthresh: f64::INFINITY })
    }

    /// Current congestion window in packets.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    fn apply(&self, ctx: &mut CcCtx) {
        let mtu = ctx.flow.mtu as f64;
        ctx.set_window((self.cwnd * mtu).round() as u64);
    }
}

impl CongestionControl for PFabric {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        self.cwnd = self.init_cwnd;
        self.ssthresh = f64::INFINITY;
        let line = ctx.flow.line_rate;
        ctx.set_rate(line);
        self.apply(ctx);
    }

    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        if ack.newly_acked == 0 {
            return;
        }
        self.cwnd += if self.cwnd < self.ssthresh { 1.0 } else { 1.0 / self.cwnd };
        self.cwnd = self.cwnd.min(self.max_cwnd);
        self.apply(ctx);
    }

    fn on_timeout(&mut self, ctx: &mut CcCtx) {
        self.ssthresh = (self.cwnd / 2.0).max(2.0);
        self.cwnd = 1.0;
        self.apply(ctx);
    }

    fn transport(&self) -> Transport {
        Transport::PFabric
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{test_config, Cc, CcBuild, FlowCtl};
    use crate::units::US;

    fn pfabric(params: serde_json::Value) -> (PFabric, FlowCtl) {
        let cfg = test_config("pfabric", params);
        let Cc::PFabric(p) = Cc::from_config(&cfg, "cc", &CcBuild::default()).expect("valid") else {
            panic!("not pfabric")
        };
        (p, FlowCtl::at_line_rate(10e9, 1e6, 12 * US, 1460))
    }

    fn ack(newly: u64) -> AckEvent<'static> {
        AckEvent { newly_acked: newly, ..Default::default() }
    }

    #[test]
    fn starts_at_line_rate_with_the_initial_window() {
        let (mut p, mut f) = pfabric(serde_json::json!({}));
        p.on_start(&mut CcCtx { now: 0, flow: &mut f });
        assert_eq!(f.rate, 10e9);
        assert_eq!(f.window, 12 * 1460);
    }

    #[test]
    fn grows_to_the_cap_ignores_duplicates_and_collapses_on_timeout() {
        let (mut p, mut f) = pfabric(serde_json::json!({}));
        let ctx = &mut CcCtx { now: 0, flow: &mut f };
        p.on_start(ctx);
        p.on_ack(ctx, &ack(0));
        assert_eq!(p.cwnd(), 12.0, "a duplicate ACK changes nothing");
        for _ in 0..10 {
            p.on_ack(ctx, &ack(1460));
        }
        assert_eq!(p.cwnd(), 15.0, "slow start stops at max_cwnd");
        p.on_timeout(ctx);
        assert_eq!(p.cwnd(), 1.0);
        assert_eq!(ctx.flow.window, 1460);
        // Slow start up to ssthresh = 7.5, then +1/cwnd per ACK.
        for _ in 0..7 {
            p.on_ack(ctx, &ack(1460));
        }
        assert_eq!(p.cwnd(), 8.0);
        p.on_ack(ctx, &ack(1460));
        assert!((p.cwnd() - (8.0 + 1.0 / 8.0)).abs() < 1e-12);
    }

    #[test]
    fn rejects_a_cap_below_the_initial_window() {
        let cfg = test_config("pfabric", serde_json::json!({"init_cwnd": 12, "max_cwnd": 4}));
        let err = Cc::from_config(&cfg, "cc", &CcBuild::default()).unwrap_err();
        assert!(err.to_string().contains("cc.max_cwnd"), "{err}");
    }
}
