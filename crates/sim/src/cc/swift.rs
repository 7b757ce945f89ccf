//! Swift (Kumar et al., "Swift: Delay is Simple and Effective for Congestion
//! Control in the Datacenter", SIGCOMM 2020): window-based AIMD on delay
//! against a target delay that grows with the path's hop count and shrinks
//! with the flow's window (flow scaling). Specification: section 3 of
//! `shared/specs/rule_based_cc.md`. Where the paper is silent (parameter
//! values, the exact order of the per-ACK steps, pacing below one packet,
//! reactions to loss) this follows htsim's `swift.cpp` (Broadcom/csg-htsim).
//!
//! Per ACK carrying delay `d` and `num_acked` newly acknowledged packets:
//! `can_decrease = now - t_last_decrease >= srtt` (srtt before this sample,
//! as htsim); then additive increase `cwnd += ai * num_acked / cwnd` (or
//! `ai * num_acked` below one packet) when `d < target`, else, at most once
//! per RTT, `cwnd *= max(1 - beta * (d - target) / d, 1 - max_mdf)`; clamp to
//! [`min_cwnd`, `max_cwnd`]; a window that went down (strictly) records
//! `t_last_decrease = now`. The fabric target is
//! `base_target + hops * h + clamp(fs_alpha / sqrt(fcwnd) + fs_beta, 0, fs_range)`
//! with `fs_alpha = fs_range / (1/sqrt(fs_min_cwnd) - 1/sqrt(fs_max_cwnd))`
//! and `fs_beta = -fs_alpha / sqrt(fs_max_cwnd)`, evaluated with the current
//! fabric window (htsim). Windows are in packets (fractional) and become bytes
//! through the payload size (MTU). Below one packet the flow is paced at one
//! packet per `srtt / cwnd`.
//!
//! Deliberate choices and deviations:
//! * **Endpoint delay is zero.** The simulator's receiver acknowledges each
//!   packet at once (its ACK waits at most behind the data packet its NIC is
//!   serializing, which Swift counts as fabric delay anyway), so fabric delay
//!   = RTT of the acknowledged packet. The endpoint window `ecwnd` and its
//!   target (`endpoint_target`, no scaling) are kept and run the same AIMD,
//!   fed with an endpoint delay of 0: it only ever grows, never falls below
//!   the fabric window and so never binds. It is there so that a host model
//!   can feed it later.
//! * **Default base target derives from the path.** htsim's 20 µs suits
//!   htsim's topologies, not a 100 Gb/s one-switch network with a 4-9 µs
//!   base RTT. Unless `base_target` is set, it is the flow's base RTT +
//!   `target_margin` (3 µs); `h` (per-hop term) defaults to `base_target /
//!   h_div` and `fs_range` to `5 x base_target`, as in htsim, so they follow.
//! * **Hop count** is the number of switches the data packet crossed
//!   (`AckEvent::hops`), not a TTL difference.
//! * **Loss.** A retransmission timeout raises `retransmit_cnt` and cuts the
//!   window by `max_mdf` if it may decrease (to `min_cwnd` after
//!   `retx_reset_threshold` timeouts in a row). A go-back-N NACK (the
//!   datacenter NIC's loss signal, the default transport) and a TCP fast
//!   retransmit (`host.loss_recovery = "tcp"`) are the "fast recovery" event:
//!   `retransmit_cnt = 0` and the same `max_mdf` cut if it may decrease. The
//!   cut is applied when the loss is detected; htsim applies it when fast
//!   recovery ends. Loss reactions apply to the fabric window only (hosts
//!   never drop). A timeout's decrease also sets `t_last_decrease` (spec;
//!   htsim does not).
//! * **Timeouts themselves** are the NIC's: `host.rto` for go-back-N flows, the
//!   adaptive srtt + 4 rttvar bounded below by `host.rto_min` for TCP-style
//!   flows. Swift's own smoothed RTT (gain 1/8) serves pacing and the
//!   once-per-RTT decrease. htsim's 100 µs minimum RTO is a scenario setting
//!   (`host.rto` / `host.rto_min`).
//! * **Sending rule.** A packet is sent only when it fits entirely in the
//!   window (htsim: `last_acked + cwnd >= highest_sent + mss`), i.e. at most
//!   `floor(cwnd)` packets in flight. Below one packet the window is one
//!   packet and the NIC pacer runs at `cwnd x packet / srtt`; at or above one
//!   packet the flow is window-limited at line rate (no pacing). htsim's pacer
//!   ignores the window; with a gap of `srtt / cwnd > srtt` the difference
//!   only shows when the RTT jumps.
//! * The initial window defaults to the path's BDP (htsim leaves it to the
//!   experiment). Hundreds of flows starting within a millisecond then bring
//!   hundreds of BDPs at once: 256 flows fit a 10 MiB queue, 1024 overflow
//!   it; set `init_cwnd` (e.g. 2 packets) for such incasts.
//! * PLB (path switching) is out of scope.

use super::{AckEvent, CcCtx, CcInfo, CongestionControl, ParamInfo, Params, Transport};
use crate::config::ConfigError;
use crate::units::{Time, SEC, US};

/// Smoothing gain of srtt (RFC 6298, htsim).
const SRTT_GAIN: f64 = 0.125;

/// State of Swift for one flow.
#[derive(Clone, Debug)]
pub struct Swift {
    // ---- configuration
    ai: f64,
    beta: f64,
    max_mdf: f64,
    /// Base target in ps; `None` = base RTT + `target_margin`.
    base_target_cfg: Option<f64>,
    target_margin: f64,
    /// Per-hop target in ps; `None` = base target / `h_div`.
    h_cfg: Option<f64>,
    h_div: f64,
    /// Flow-scaling range in ps; `None` = 5 x base target.
    fs_range_cfg: Option<f64>,
    fs_min_cwnd: f64,
    fs_max_cwnd: f64,
    min_cwnd: f64,
    max_cwnd: f64,
    /// Initial window in packets; `None` = the path's BDP.
    init_cwnd: Option<f64>,
    retx_reset_threshold: u32,
    endpoint_target: f64,
    // ---- derived when the flow starts
    base_target: f64,
    h: f64,
    fs_range: f64,
    fs_alpha: f64,
    fs_beta: f64,
    mtu: f64,
    inv_mtu: f64,
    /// Wire bytes of a full data packet (largest seen), for the pacing rate.
    pkt_wire: f64,
    // ---- state
    fcwnd: f64,
    ecwnd: f64,
    f_last_decrease: Time,
    e_last_decrease: Time,
    retransmit_cnt: u32,
    srtt: f64,
    have_srtt: bool,
    target: f64,
}

const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "ai", default: "1.0", help: "additive increment, packets per RTT" },
    ParamInfo { name: "beta", default: "0.8", help: "multiplicative decrease constant, in (0, 1]" },
    ParamInfo { name: "max_mdf", default: "0.5", help: "largest multiplicative decrease per decision, in (0, 1)" },
    ParamInfo {
        name: "base_target",
        default: "auto",
        help: "fabric base target delay; auto = the flow's base RTT + target_margin",
    },
    ParamInfo { name: "target_margin", default: "3us", help: "added to the base RTT when base_target is auto" },
    ParamInfo { name: "h", default: "auto", help: "target added per switch hop; auto = base_target / h_div" },
    ParamInfo { name: "h_div", default: "6.55", help: "divisor giving h from base_target (htsim)" },
    ParamInfo {
        name: "fs_range",
        default: "auto",
        help: "flow-scaling target at fs_min_cwnd (0 at fs_max_cwnd); auto = 5 x base_target",
    },
    ParamInfo { name: "fs_min_cwnd", default: "0.1", help: "window (packets) that gets the full fs_range" },
    ParamInfo { name: "fs_max_cwnd", default: "100", help: "window (packets) from which flow scaling adds nothing" },
    ParamInfo { name: "min_cwnd", default: "0.001", help: "smallest window, packets" },
    ParamInfo { name: "max_cwnd", default: "1000", help: "largest window, packets" },
    ParamInfo { name: "init_cwnd", default: "auto", help: "initial window in packets; auto = the path's BDP" },
    ParamInfo {
        name: "retx_reset_threshold",
        default: "5",
        help: "consecutive timeouts after which the window drops to min_cwnd",
    },
    ParamInfo {
        name: "endpoint_target",
        default: "10us",
        help: "target of the endpoint window (endpoint delay is 0 in this simulator)",
    },
];

/// A time parameter that may be absent or `"auto"` (`None`), in ps.
fn time_or_auto(p: &Params, name: &str) -> Result<Option<f64>, ConfigError> {
    match p.text(name) {
        Ok(None) => Ok(None),
        Ok(Some("auto")) => Ok(None),
        _ => Ok(Some(p.time(name, 0)? as f64)),
    }
}

/// A number parameter that may be absent or `"auto"` (`None`).
fn f64_or_auto(p: &Params, name: &str) -> Result<Option<f64>, ConfigError> {
    match p.text(name) {
        Ok(None) => Ok(None),
        Ok(Some("auto")) => Ok(None),
        _ => Ok(Some(p.f64(name, 0.0)?)),
    }
}

impl Swift {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        CcInfo {
            name: "swift",
            summary: "Swift (Kumar et al., SIGCOMM 2020): delay-target AIMD window",
            params: PARAMS,
        }
    }

    /// Builds it from scenario parameters, rejecting values that make no sense.
    pub fn from_params(p: &Params) -> Result<Self, ConfigError> {
        let ai = p.f64("ai", 1.0)?;
        if ai <= 0.0 {
            return Err(p.bad("ai", "must be positive"));
        }
        let beta = p.f64("beta", 0.8)?;
        if !(beta > 0.0 && beta <= 1.0) {
            return Err(p.bad("beta", "must be in (0, 1]"));
        }
        let max_mdf = p.f64("max_mdf", 0.5)?;
        if !(max_mdf > 0.0 && max_mdf < 1.0) {
            return Err(p.bad("max_mdf", "must be in (0, 1)"));
        }
        let base_target_cfg = time_or_auto(p, "base_target")?;
        if base_target_cfg == Some(0.0) {
            return Err(p.bad("base_target", "must be positive (or \"auto\")"));
        }
        let target_margin = p.time("target_margin", 3 * US)? as f64;
        let h_cfg = time_or_auto(p, "h")?;
        let h_div = p.f64("h_div", 6.55)?;
        if h_div <= 0.0 {
            return Err(p.bad("h_div", "must be positive"));
        }
        let fs_range_cfg = time_or_auto(p, "fs_range")?;
        let fs_min_cwnd = p.f64("fs_min_cwnd", 0.1)?;
        if fs_min_cwnd <= 0.0 {
            return Err(p.bad("fs_min_cwnd", "must be positive"));
        }
        let fs_max_cwnd = p.f64("fs_max_cwnd", 100.0)?;
        if fs_max_cwnd <= fs_min_cwnd {
            return Err(p.bad("fs_max_cwnd", "must be larger than fs_min_cwnd"));
        }
        let min_cwnd = p.f64("min_cwnd", 0.001)?;
        if min_cwnd <= 0.0 {
            return Err(p.bad("min_cwnd", "must be positive (packets)"));
        }
        let max_cwnd = p.f64("max_cwnd", 1000.0)?;
        if max_cwnd < min_cwnd {
            return Err(p.bad("max_cwnd", "must be at least min_cwnd"));
        }
        let init_cwnd = f64_or_auto(p, "init_cwnd")?;
        if init_cwnd.is_some_and(|w| w <= 0.0) {
            return Err(p.bad("init_cwnd", "must be positive (packets) or \"auto\""));
        }
        let retx = p.f64("retx_reset_threshold", 5.0)?;
        if !(retx >= 1.0 && retx.fract() == 0.0 && retx <= u32::MAX as f64) {
            return Err(p.bad("retx_reset_threshold", "must be a whole number >= 1"));
        }
        let endpoint_target = p.time("endpoint_target", 10 * US)? as f64;
        if endpoint_target <= 0.0 {
            return Err(p.bad("endpoint_target", "must be positive"));
        }
        Ok(Swift {
            ai,
            beta,
            max_mdf,
            base_target_cfg,
            target_margin,
            h_cfg,
            h_div,
            fs_range_cfg,
            fs_min_cwnd,
            fs_max_cwnd,
            min_cwnd,
            max_cwnd,
            init_cwnd,
            retx_reset_threshold: retx as u32,
            endpoint_target,
            base_target: 0.0,
            h: 0.0,
            fs_range: 0.0,
            fs_alpha: 0.0,
            fs_beta: 0.0,
            mtu: 1.0,
            inv_mtu: 1.0,
            pkt_wire: 1.0,
            fcwnd: 1.0,
            ecwnd: 1.0,
            f_last_decrease: 0,
            e_last_decrease: 0,
            retransmit_cnt: 0,
            srtt: 0.0,
            have_srtt: false,
            target: 0.0,
        })
    }

    /// Effective window in packets: min(fabric, endpoint).
    pub fn cwnd(&self) -> f64 {
        self.fcwnd.min(self.ecwnd)
    }

    /// Fabric window in packets.
    pub fn fabric_cwnd(&self) -> f64 {
        self.fcwnd
    }

    /// Endpoint window in packets.
    pub fn endpoint_cwnd(&self) -> f64 {
        self.ecwnd
    }

    /// Fabric target delay computed at the last ACK, in ps.
    pub fn target(&self) -> f64 {
        self.target
    }

    /// Fabric target delay for the current window and `hops` switches, in ps.
    #[inline]
    pub fn target_for(&self, hops: u32) -> f64 {
        let fs = (self.fs_alpha / self.fcwnd.sqrt() + self.fs_beta).clamp(0.0, self.fs_range);
        self.base_target + hops as f64 * self.h + fs
    }

    /// Smoothed RTT in ps.
    pub fn srtt(&self) -> f64 {
        self.srtt
    }

    /// Base target in ps (after resolving `auto`; 0 before the flow starts).
    pub fn base_target(&self) -> f64 {
        self.base_target
    }

    /// Consecutive retransmission timeouts.
    pub fn retransmit_cnt(&self) -> u32 {
        self.retransmit_cnt
    }

    #[inline]
    fn can_decrease(&self, now: Time, last: Time) -> bool {
        now.saturating_sub(last) as f64 >= self.srtt
    }

    /// One AIMD step of a window (3.3 steps 3-4); returns the new, clamped window.
    #[inline]
    fn aimd(&self, cwnd: f64, delay: f64, target: f64, acked: f64, can_decrease: bool) -> f64 {
        let w = if delay < target {
            if cwnd >= 1.0 {
                cwnd + self.ai * acked / cwnd
            } else {
                cwnd + self.ai * acked
            }
        } else if can_decrease {
            // delay >= target > 0 here, so the division is safe.
            cwnd * (1.0 - self.beta * (delay - target) / delay).max(1.0 - self.max_mdf)
        } else {
            cwnd
        };
        w.clamp(self.min_cwnd, self.max_cwnd)
    }

    /// Cuts the fabric window after a loss (timeout or fast recovery).
    fn loss_decrease(&mut self, now: Time, reset: bool) {
        let prev = self.fcwnd;
        if reset {
            self.fcwnd = self.min_cwnd;
        } else if self.can_decrease(now, self.f_last_decrease) {
            self.fcwnd *= 1.0 - self.max_mdf;
        }
        self.fcwnd = self.fcwnd.clamp(self.min_cwnd, self.max_cwnd);
        if self.fcwnd < prev {
            self.f_last_decrease = now;
        }
    }

    /// Hands the window to the NIC: a byte window at line rate, or below one
    /// packet a one-packet window and a pacing rate of cwnd packets per srtt.
    #[inline]
    fn apply(&self, ctx: &mut CcCtx) {
        let cwnd = self.cwnd();
        if cwnd < 1.0 {
            // One packet at a time (a window of one byte admits a packet only
            // when nothing is in flight), spaced srtt / cwnd apart.
            ctx.set_window(1);
            ctx.set_rate(cwnd * self.pkt_wire * 8.0 * SEC as f64 / self.srtt);
        } else {
            // A packet goes only if it fits: inflight + mtu <= cwnd x mtu.
            ctx.set_window(((cwnd - 1.0) * self.mtu) as u64 + 1);
            let line = ctx.flow.line_rate;
            ctx.set_rate(line);
        }
    }
}

impl CongestionControl for Swift {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let f = &*ctx.flow;
        let base_rtt = f.base_rtt as f64;
        self.base_target = self.base_target_cfg.unwrap_or(base_rtt + self.target_margin);
        self.h = self.h_cfg.unwrap_or(self.base_target / self.h_div);
        self.fs_range = self.fs_range_cfg.unwrap_or(5.0 * self.base_target);
        self.fs_alpha = self.fs_range / (1.0 / self.fs_min_cwnd.sqrt() - 1.0 / self.fs_max_cwnd.sqrt());
        self.fs_beta = -self.fs_alpha / self.fs_max_cwnd.sqrt();
        self.mtu = f.mtu.max(1) as f64;
        self.inv_mtu = 1.0 / self.mtu;
        self.pkt_wire = self.pkt_wire.max(self.mtu);
        let init = self.init_cwnd.unwrap_or(f.bdp as f64 * self.inv_mtu);
        self.fcwnd = init.clamp(self.min_cwnd, self.max_cwnd);
        self.ecwnd = self.fcwnd;
        self.srtt = base_rtt.max(1.0);
        self.have_srtt = false;
        self.f_last_decrease = ctx.now;
        self.e_last_decrease = ctx.now;
        self.retransmit_cnt = 0;
        self.target = self.target_for(f.hops);
        self.apply(ctx);
    }

    #[inline]
    fn on_send(&mut self, _ctx: &mut CcCtx, bytes: u32) {
        // Remember the full packet size on the wire (for the pacing rate).
        let b = bytes as f64;
        if b > self.pkt_wire {
            self.pkt_wire = b;
        }
    }

    #[inline]
    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        let now = ctx.now;
        // Fabric delay = RTT - endpoint delay; the endpoint delay is 0 here.
        let delay = ack.rtt as f64;
        let endpoint_delay = 0.0;
        let acked = ack.newly_acked as f64 * self.inv_mtu;
        // Decided with the srtt before this sample (htsim).
        let f_can = self.can_decrease(now, self.f_last_decrease);
        let e_can = self.can_decrease(now, self.e_last_decrease);
        if delay > 0.0 {
            if self.have_srtt {
                self.srtt += SRTT_GAIN * (delay - self.srtt);
            } else {
                self.srtt = delay;
                self.have_srtt = true;
            }
        }
        self.retransmit_cnt = 0;
        self.target = self.target_for(ack.hops);
        let prev = self.fcwnd;
        self.fcwnd = self.aimd(prev, delay, self.target, acked, f_can);
        if self.fcwnd < prev {
            self.f_last_decrease = now;
        }
        let prev = self.ecwnd;
        self.ecwnd = self.aimd(prev, endpoint_delay, self.endpoint_target, acked, e_can);
        if self.ecwnd < prev {
            self.e_last_decrease = now;
        }
        self.apply(ctx);
    }

    fn on_nack(&mut self, ctx: &mut CcCtx, _expected: u64, _rtt: Time) {
        // Go-back-N's loss signal: Swift's fast-recovery reaction.
        self.retransmit_cnt = 0;
        self.loss_decrease(ctx.now, false);
        self.apply(ctx);
    }

    fn on_fast_retransmit(&mut self, ctx: &mut CcCtx) {
        self.retransmit_cnt = 0;
        self.loss_decrease(ctx.now, false);
        self.apply(ctx);
    }

    fn on_timeout(&mut self, ctx: &mut CcCtx) {
        self.retransmit_cnt = self.retransmit_cnt.saturating_add(1);
        let reset = self.retransmit_cnt >= self.retx_reset_threshold;
        self.loss_decrease(ctx.now, reset);
        self.apply(ctx);
    }

    fn transport(&self) -> Transport {
        Transport::GoBackN
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::FlowCtl;
    use serde_json::json;

    fn build(params: serde_json::Value) -> Result<Swift, ConfigError> {
        let cfg = crate::cc::test_config("swift", params);
        Swift::from_params(&Params::new(&cfg, "cc", Swift::info().params)?)
    }

    fn flow() -> FlowCtl {
        FlowCtl::at_line_rate(100e9, 100e9 / 16384.0, 4_181_760, 1000)
    }

    fn ack(rtt: Time, newly: u64) -> AckEvent<'static> {
        AckEvent {
            ack_seq: 0,
            newly_acked: newly,
            dup_acks: 0,
            in_recovery: false,
            recovery_ended: false,
            ecn_echo: false,
            rtt,
            hops: 1,
            int: &[],
            pint: 0,
            delivered: 0,
            sack_high: 0,
        }
    }

    /// Started flow with explicit targets: base 20 us, h 3 us, no flow scaling
    /// beyond fs_range 10 us.
    fn started(f: &mut FlowCtl, init: f64) -> Swift {
        let mut s = build(json!({"base_target": "20us", "h": "3us", "fs_range": "10us", "init_cwnd": init})).unwrap();
        s.on_start(&mut CcCtx { now: 0, flow: f });
        s
    }

    #[test]
    fn target_has_base_hop_and_flow_scaling_terms() {
        let mut f = flow();
        let s = started(&mut f, 10.0);
        let alpha = 10e6 / (1.0 / 0.1f64.sqrt() - 0.1);
        let beta = -alpha / 10.0;
        let fs = alpha / 10f64.sqrt() + beta;
        assert!((s.target_for(1) - (20e6 + 3e6 + fs)).abs() < 1.0);
        assert!((s.target_for(3) - (20e6 + 9e6 + fs)).abs() < 1.0);
        // fs is fs_range at fs_min_cwnd and 0 at fs_max_cwnd.
        let mut t = s.clone();
        t.fcwnd = 0.1;
        assert!((t.target_for(0) - 30e6).abs() < 1.0);
        t.fcwnd = 0.01;
        assert!((t.target_for(0) - 30e6).abs() < 1.0, "clamped to fs_range");
        t.fcwnd = 100.0;
        assert!((t.target_for(0) - 20e6).abs() < 1.0);
        t.fcwnd = 400.0;
        assert!((t.target_for(0) - 20e6).abs() < 1.0, "never negative");
    }

    #[test]
    fn auto_targets_follow_the_base_rtt() {
        let mut f = flow();
        let mut s = build(json!({})).unwrap();
        s.on_start(&mut CcCtx { now: 0, flow: &mut f });
        let bt = 4_181_760.0 + 3e6;
        assert_eq!(s.base_target(), bt);
        assert!((s.h - bt / 6.55).abs() < 1e-6);
        assert!((s.fs_range - 5.0 * bt).abs() < 1e-6);
        // Initial window = BDP, in packets.
        assert!((s.cwnd() - 52.272).abs() < 1e-9);
        assert_eq!(f.window, (51.272f64 * 1000.0) as u64 + 1);
    }

    #[test]
    fn one_additive_increase_step() {
        let mut f = flow();
        let mut s = started(&mut f, 10.0);
        let target = s.target_for(1);
        // Two packets acknowledged below target: cwnd += ai * 2 / cwnd.
        s.on_ack(&mut CcCtx { now: 50 * US, flow: &mut f }, &ack((target * 0.5) as Time, 2000));
        assert!((s.fabric_cwnd() - 10.2).abs() < 1e-12, "{}", s.fabric_cwnd());
        assert_eq!(f.window, (9.2f64 * 1000.0) as u64 + 1);
        assert_eq!(f.rate, 100e9);
        // Below one packet: cwnd += ai * num_acked.
        let mut s = started(&mut f, 0.5);
        s.on_ack(&mut CcCtx { now: 50 * US, flow: &mut f }, &ack(5 * US, 250));
        assert!((s.fabric_cwnd() - 0.75).abs() < 1e-12);
    }

    #[test]
    fn one_multiplicative_decrease_step_then_none_within_an_rtt() {
        let mut f = flow();
        let mut s = started(&mut f, 10.0);
        let target = s.target_for(1);
        let d = 1.25 * target;
        let now = 100 * US;
        s.on_ack(&mut CcCtx { now, flow: &mut f }, &ack(d as Time, 1000));
        // cwnd x (1 - beta (d - t) / d) = 10 x (1 - 0.8 x 0.2) = 8.4 (d is rounded to ps).
        let dd = (d as Time) as f64;
        let expect = 10.0 * (1.0 - 0.8 * (dd - target) / dd);
        assert!((s.fabric_cwnd() - expect).abs() < 1e-9, "{} vs {expect}", s.fabric_cwnd());
        assert!((s.fabric_cwnd() - 8.4).abs() < 1e-4);
        assert_eq!(s.f_last_decrease, now);
        // Within srtt of the decrease: no further decrease, window unchanged.
        let w = s.fabric_cwnd();
        let later = now + (s.srtt() as Time) - 1;
        s.on_ack(&mut CcCtx { now: later, flow: &mut f }, &ack((3.0 * target) as Time, 1000));
        assert_eq!(s.fabric_cwnd(), w);
        assert_eq!(s.f_last_decrease, now, "an unchanged window must not postpone the next decrease");
        // A huge delay is cut by at most max_mdf.
        let much_later = later + 10 * s.srtt() as Time;
        s.on_ack(&mut CcCtx { now: much_later, flow: &mut f }, &ack((100.0 * target) as Time, 1000));
        assert!((s.fabric_cwnd() - 0.5 * w).abs() < 1e-12);
    }

    #[test]
    fn below_one_packet_the_flow_is_paced() {
        let mut f = flow();
        let mut s = started(&mut f, 0.25);
        assert_eq!(f.window, 1, "one packet at a time");
        // Rate = cwnd x packet / srtt (srtt = base RTT before samples; packet = MTU before any send).
        let want = 0.25 * 1000.0 * 8.0 / 4_181_760e-12;
        assert!((f.rate - want).abs() < 1e-3 * want, "{} vs {want}", f.rate);
        s.on_send(&mut CcCtx { now: 0, flow: &mut f }, 1048);
        s.on_ack(&mut CcCtx { now: 40 * US, flow: &mut f }, &ack(40 * US, 0));
        let want = s.cwnd() * 1048.0 * 8.0 / (s.srtt() * 1e-12);
        assert!((f.rate - want).abs() < 1e-6 * want);
        // Back above one packet: line rate, window-limited.
        s.fcwnd = 2.0;
        s.ecwnd = 2.0;
        s.on_ack(&mut CcCtx { now: 41 * US, flow: &mut f }, &ack(5 * US, 1000));
        assert_eq!(f.rate, 100e9);
        assert!(f.window > 1000);
    }

    #[test]
    fn losses_cut_the_fabric_window() {
        let mut f = flow();
        let mut s = started(&mut f, 16.0);
        s.on_nack(&mut CcCtx { now: 100 * US, flow: &mut f }, 0, 0);
        assert_eq!(s.fabric_cwnd(), 8.0);
        // Not again within an RTT.
        s.on_timeout(&mut CcCtx { now: 101 * US, flow: &mut f });
        assert_eq!(s.fabric_cwnd(), 8.0);
        assert_eq!(s.retransmit_cnt(), 1);
        s.on_timeout(&mut CcCtx { now: 200 * US, flow: &mut f });
        assert_eq!(s.fabric_cwnd(), 4.0);
        for k in 0..3 {
            s.on_timeout(&mut CcCtx { now: (300 + k) * US, flow: &mut f });
        }
        assert_eq!(s.retransmit_cnt(), 5);
        assert_eq!(s.fabric_cwnd(), 0.001, "reset to min_cwnd after 5 timeouts");
        // The endpoint window is untouched by losses.
        assert_eq!(s.endpoint_cwnd(), 16.0);
        assert_eq!(s.cwnd(), 0.001);
    }

    #[test]
    fn nonsense_values_are_rejected() {
        for (p, field) in [
            (json!({"beta": 0.0}), "cc.beta"),
            (json!({"beta": 1.5}), "cc.beta"),
            (json!({"max_mdf": 1.0}), "cc.max_mdf"),
            (json!({"ai": -1}), "cc.ai"),
            (json!({"min_cwnd": 0}), "cc.min_cwnd"),
            (json!({"max_cwnd": 0.0001}), "cc.max_cwnd"),
            (json!({"fs_max_cwnd": 0.05}), "cc.fs_max_cwnd"),
            (json!({"base_target": 0}), "cc.base_target"),
            (json!({"base_target": "soon"}), "cc.base_target"),
            (json!({"retx_reset_threshold": 2.5}), "cc.retx_reset_threshold"),
            (json!({"init_cwnd": "lots"}), "cc.init_cwnd"),
            (json!({"gain": 1}), "cc.gain"),
        ] {
            let e = build(p.clone()).expect_err(&p.to_string());
            assert_eq!(e.field, field, "{p}: {e}");
        }
        assert!(build(json!({"base_target": "25us", "h": "auto", "init_cwnd": 4})).is_ok());
    }
}
