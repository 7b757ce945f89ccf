//! TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the
//! Datacenter", SIGCOMM 2015): rate control on the RTT and its gradient.
//! Specification: section 4 of `shared/specs/rule_based_cc.md`. The default
//! behaviour is the HPCC-ns3 implementation (alibaba-edu/High-Precision-
//! Congestion-Control, `rdma-hw.cc`, CC mode 7), which is what the HPCC paper
//! compared against at 100 Gb/s.
//!
//! Every ACK carries the RTT of the packet it acknowledges, but the rate is
//! updated only on ACKs that close an RTT epoch (section 0.4: the cumulative
//! ACK passed the `snd_nxt` recorded at the previous update); intra-epoch ACKs
//! are ignored. The first epoch only records the RTT. At an update with RTT
//! sample `rtt` (the paper's rule, 4.2):
//! `rtt_diff = (1 - alpha) rtt_diff + alpha (rtt - prev_rtt)`,
//! `gradient = rtt_diff / min_rtt`; below `t_low` the rate increases, above
//! `t_high` it is multiplied by `1 - beta (1 - t_high / rtt)`; in between a
//! gradient <= 0 increases it and a positive one multiplies it by
//! `max(0, 1 - beta x gradient)`. An increase adds `rai`, or `rhai` once
//! `hai_thresh` (5) increases in a row have happened (HPCC-ns3's `incStage`,
//! reset by any decrease). The rate stays within [`min_rate`, line rate].
//!
//! Presets (individual parameters override them):
//! * `hpcc_ns3` (default): alpha 0.875, beta 0.8; rai = line rate / 1000,
//!   rhai = line rate / 200, min_rate = line rate / 100 (HPCC-ns3's 10 and
//!   50 Mb/s per 10 Gb/s of line rate and 1 Gb/s at 100 Gb/s); one update
//!   per RTT epoch; HAI counts every increase, those below `t_low` included.
//!   **Thresholds scaled to the path**: HPCC-ns3 uses t_low 50 µs, t_high
//!   500 µs and min_rtt 20 µs on its fat tree. Here, unless set, they are
//!   multiples of the flow's base RTT: `t_low` = 2.5 x, `t_high` = 25 x (HPCC-
//!   ns3's 1 : 10 band) and `min_rtt` = 3.5 x base RTT, i.e. 10.5, 105 and
//!   14.6 µs on a 100 Gb/s one-switch star with 1 µs links (20.5, 205 and
//!   28.6 µs with the ADPG network's 8.2 µs). `min_rtt` is deliberately
//!   larger than the base RTT: the decrease in the band cuts the aggregate
//!   rate by about `beta x rtt / min_rtt` times the excess, so HPCC-ns3's
//!   ratio (t_low = 2.5 x min_rtt) gives a loop gain of 2 at t_low, which
//!   overshoots: measured with 2 flows on the star, min_rtt = base RTT keeps
//!   the RTT below t_low 90% of the time at 89% utilisation, while 3.5 x base
//!   RTT (gain 0.57 at t_low) keeps it in the band with full utilisation.
//!   Set `t_low`, `t_high` and `min_rtt` for fixed values.
//! * `paper`: the values attributed to the paper (10 GbE): rai 10 Mb/s,
//!   rhai 5 x rai (N = 5), min_rtt 20 µs, t_low 50 µs, t_high 500 µs; the
//!   paper gives no rate floor, so min_rate is line rate / 100 as in both
//!   reference simulators (HPCC-ns3: 1 Gb/s at 100 Gb/s; DCQCN-ns3: 0.01 C);
//!   one update per `segment` = 16 KB acknowledged
//!   (a completion event); hyperactive increase only after 5 consecutive
//!   non-positive gradients inside [t_low, t_high] (increases below `t_low`
//!   always add rai and do not count).
//!
//! Deliberate choices and deviations:
//! * The RTT is the NIC-measured RTT of one packet (per-packet ACKs), so no
//!   segment serialization time is subtracted (HPCC-ns3 does the same).
//! * A rate change takes effect at once through the NIC pacer's rescaling of
//!   the pending gap (spec 0.3.3); HPCC-ns3's TIMELY sets the rate without
//!   rescaling. No window (HPCC-ns3 `timely`, not `timely_vwin`).
//! * NACKs and timeouts do not change the rate (HPCC-ns3); go-back-N is the
//!   default transport.
//! * Start-up at scale (behaviour, not a deviation): flows start at line rate
//!   and the first epoch only records the RTT, so a synchronised start of
//!   many flows fills the queue before the first decrease. HPCC-ns3 runs
//!   TIMELY over PFC; on a lossy fabric with a deep queue the go-back-N
//!   retransmissions then stretch the epochs (16 flows on the ADPG network,
//!   10 MiB queue cap: about 10 ms to drain). Enable PFC or lower `init_rate`.

use super::{AckEvent, CcCtx, CcInfo, CongestionControl, ParamInfo, Params, Transport};
use crate::config::ConfigError;
use crate::units::{Time, US};

const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "preset", default: "hpcc_ns3", help: "parameter set: hpcc_ns3 or paper" },
    ParamInfo { name: "alpha", default: "0.875", help: "EWMA weight of the newest RTT difference, in (0, 1]" },
    ParamInfo { name: "beta", default: "0.8", help: "multiplicative decrease factor, in (0, 1]" },
    ParamInfo {
        name: "t_low",
        default: "auto",
        help: "RTT below which the rate always increases; auto = 2.5 x base RTT (paper: 50us)",
    },
    ParamInfo {
        name: "t_high",
        default: "auto",
        help: "RTT above which the rate decreases by RTT; auto = 25 x base RTT (paper: 500us)",
    },
    ParamInfo {
        name: "min_rtt",
        default: "auto",
        help: "RTT normalising the gradient; auto = 3.5 x base RTT (paper: 20us)",
    },
    ParamInfo { name: "rai", default: "auto", help: "additive increase step; auto = line rate / 1000 (paper: 10Mbps)" },
    ParamInfo {
        name: "rhai",
        default: "auto",
        help: "hyperactive increase step; auto = line rate / 200 (paper: 5 x rai)",
    },
    ParamInfo { name: "hai_thresh", default: "5", help: "increases in a row before steps of rhai" },
    ParamInfo { name: "min_rate", default: "auto", help: "rate floor (R_min); auto = line rate / 100" },
    ParamInfo { name: "init_rate", default: "auto", help: "starting rate; auto = line rate" },
    ParamInfo {
        name: "segment",
        default: "auto",
        help: "bytes acknowledged per update; 0 = once per RTT epoch; auto = 0 (paper: 16KB)",
    },
];

/// State of TIMELY for one flow.
#[derive(Clone, Debug)]
pub struct Timely {
    // ---- configuration (None = derived when the flow starts)
    paper: bool,
    alpha: f64,
    beta: f64,
    t_low_cfg: Option<f64>,
    t_high_cfg: Option<f64>,
    min_rtt_cfg: Option<f64>,
    rai_cfg: Option<f64>,
    rhai_cfg: Option<f64>,
    min_rate_cfg: Option<f64>,
    init_rate_cfg: Option<f64>,
    hai_thresh: u32,
    segment: u64,
    // ---- derived when the flow starts
    t_low: f64,
    t_high: f64,
    inv_min_rtt: f64,
    rai: f64,
    rhai: f64,
    r_min: f64,
    r_max: f64,
    // ---- state
    rate: f64,
    prev_rtt: f64,
    rtt_diff: f64,
    inc_stage: u32,
    last_update_seq: u64,
    primed: bool,
    updates: u64,
}

/// Reads a parameter that may be absent or `"auto"` (`None`) with `read`.
fn or_auto<T>(p: &Params, name: &str, read: impl FnOnce() -> Result<T, ConfigError>) -> Result<Option<T>, ConfigError> {
    match p.text(name) {
        Ok(None) | Ok(Some("auto")) => Ok(None),
        _ => read().map(Some),
    }
}

impl Timely {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        CcInfo {
            name: "timely",
            summary: "TIMELY (Mittal et al., SIGCOMM 2015): RTT-gradient rate control",
            params: PARAMS,
        }
    }

    /// Builds it from scenario parameters, rejecting values that make no sense.
    pub fn from_params(p: &Params) -> Result<Self, ConfigError> {
        let paper = match p.text("preset")? {
            None | Some("hpcc_ns3") => false,
            Some("paper") => true,
            Some(_) => return Err(p.bad("preset", "unknown preset; use \"hpcc_ns3\" or \"paper\"")),
        };
        let alpha = p.f64("alpha", 0.875)?;
        if !(alpha > 0.0 && alpha <= 1.0) {
            return Err(p.bad("alpha", "must be in (0, 1]"));
        }
        let beta = p.f64("beta", 0.8)?;
        if !(beta > 0.0 && beta <= 1.0) {
            return Err(p.bad("beta", "must be in (0, 1]"));
        }
        let time = |name: &str, paper_default: Time| -> Result<Option<f64>, ConfigError> {
            let v = or_auto(p, name, || p.time(name, 0))?;
            let v = if paper { Some(v.unwrap_or(paper_default)) } else { v };
            if v == Some(0) {
                return Err(p.bad(name, "must be positive (or \"auto\")"));
            }
            Ok(v.map(|t| t as f64))
        };
        let t_low_cfg = time("t_low", 50 * US)?;
        let t_high_cfg = time("t_high", 500 * US)?;
        let min_rtt_cfg = time("min_rtt", 20 * US)?;
        if let (Some(lo), Some(hi)) = (t_low_cfg, t_high_cfg) {
            if lo >= hi {
                return Err(p.bad("t_high", "must be above t_low"));
            }
        }
        let rate = |name: &str| -> Result<Option<f64>, ConfigError> {
            let v = or_auto(p, name, || p.rate(name, 0.0))?;
            if v == Some(0.0) {
                return Err(p.bad(name, "must be positive (or \"auto\")"));
            }
            Ok(v)
        };
        let mut rai_cfg = rate("rai")?;
        let mut rhai_cfg = rate("rhai")?;
        let min_rate_cfg = rate("min_rate")?;
        let init_rate_cfg = rate("init_rate")?;
        if paper {
            rai_cfg = Some(rai_cfg.unwrap_or(10e6));
            rhai_cfg = Some(rhai_cfg.unwrap_or(5.0 * rai_cfg.unwrap_or(10e6)));
        }
        let hai = p.f64("hai_thresh", 5.0)?;
        if !(hai >= 0.0 && hai.fract() == 0.0 && hai <= u32::MAX as f64) {
            return Err(p.bad("hai_thresh", "must be a whole number >= 0"));
        }
        let segment = or_auto(p, "segment", || p.bytes("segment", 0))?.unwrap_or(if paper { 16_384 } else { 0 });
        Ok(Timely {
            paper,
            alpha,
            beta,
            t_low_cfg,
            t_high_cfg,
            min_rtt_cfg,
            rai_cfg,
            rhai_cfg,
            min_rate_cfg,
            init_rate_cfg,
            hai_thresh: hai as u32,
            segment,
            t_low: 0.0,
            t_high: 0.0,
            inv_min_rtt: 0.0,
            rai: 0.0,
            rhai: 0.0,
            r_min: 0.0,
            r_max: 0.0,
            rate: 0.0,
            prev_rtt: 0.0,
            rtt_diff: 0.0,
            inc_stage: 0,
            last_update_seq: 0,
            primed: false,
            updates: 0,
        })
    }

    /// Current rate (the algorithm's, before the NIC's clamping), bit/s.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Smoothed RTT difference, ps.
    pub fn rtt_diff(&self) -> f64 {
        self.rtt_diff
    }

    /// Consecutive increases so far (HAI counter).
    pub fn inc_stage(&self) -> u32 {
        self.inc_stage
    }

    /// Thresholds in use: (t_low, t_high, min_rtt), ps.
    pub fn thresholds(&self) -> (f64, f64, f64) {
        (self.t_low, self.t_high, 1.0 / self.inv_min_rtt)
    }

    /// Rate updates done so far.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// One rate update with RTT sample `rtt` (ps): the rule of spec 4.2 with
    /// HPCC-ns3's HAI counter.
    fn update(&mut self, rtt: f64) {
        let new_diff = rtt - self.prev_rtt;
        self.prev_rtt = rtt;
        self.rtt_diff = (1.0 - self.alpha) * self.rtt_diff + self.alpha * new_diff;
        let gradient = self.rtt_diff * self.inv_min_rtt;
        self.updates += 1;
        if rtt < self.t_low {
            if self.paper {
                self.rate += self.rai;
            } else {
                self.increase();
            }
        } else if rtt > self.t_high {
            self.decrease(1.0 - self.beta * (1.0 - self.t_high / rtt));
        } else if gradient <= 0.0 {
            self.increase();
        } else {
            self.decrease((1.0 - self.beta * gradient).max(0.0));
        }
        self.rate = self.rate.clamp(self.r_min, self.r_max);
    }

    #[inline]
    fn increase(&mut self) {
        self.rate += if self.inc_stage < self.hai_thresh { self.rai } else { self.rhai };
        self.inc_stage = self.inc_stage.saturating_add(1);
    }

    #[inline]
    fn decrease(&mut self, c: f64) {
        self.rate *= c;
        self.inc_stage = 0;
    }
}

impl CongestionControl for Timely {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let f = &*ctx.flow;
        let base = f.base_rtt.max(1) as f64;
        let line = f.line_rate;
        self.t_low = self.t_low_cfg.unwrap_or(2.5 * base);
        self.t_high = self.t_high_cfg.unwrap_or(25.0 * base).max(self.t_low);
        self.inv_min_rtt = 1.0 / self.min_rtt_cfg.unwrap_or(3.5 * base);
        self.rai = self.rai_cfg.unwrap_or(line / 1000.0);
        self.rhai = self.rhai_cfg.unwrap_or(line / 200.0);
        self.r_max = line;
        self.r_min = self.min_rate_cfg.unwrap_or(line / 100.0).min(line);
        self.rate = self.init_rate_cfg.unwrap_or(line).clamp(self.r_min, self.r_max);
        self.prev_rtt = 0.0;
        self.rtt_diff = 0.0;
        self.inc_stage = 0;
        self.last_update_seq = 0;
        self.primed = false;
        let r = self.rate;
        ctx.set_rate(r);
    }

    #[inline]
    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        let seq = ack.ack_seq;
        // Only an ACK that closes an epoch (or a segment) updates the rate.
        if seq <= self.last_update_seq || seq < self.last_update_seq.saturating_add(self.segment) {
            return;
        }
        let rtt = ack.rtt as f64;
        if self.primed {
            self.update(rtt);
            let r = self.rate;
            ctx.set_rate(r);
        } else {
            // First epoch: no update, only the RTT (HPCC-ns3).
            self.primed = true;
            self.prev_rtt = rtt;
        }
        self.last_update_seq = if self.segment == 0 { self.last_update_seq.max(ctx.flow.snd_nxt) } else { seq };
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

    fn build(params: serde_json::Value) -> Result<Timely, ConfigError> {
        let cfg = crate::cc::test_config("timely", params);
        Timely::from_params(&Params::new(&cfg, "cc", Timely::info().params)?)
    }

    fn flow() -> FlowCtl {
        FlowCtl::at_line_rate(100e9, 100e9 / 16384.0, 8 * US, 1000)
    }

    fn ack(seq: u64, rtt: Time) -> AckEvent<'static> {
        AckEvent {
            ack_seq: seq,
            newly_acked: 1000,
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

    /// Feeds an epoch-closing ACK with `rtt` (in us) and returns the new rate.
    fn epoch(t: &mut Timely, f: &mut FlowCtl, rtt_us: f64) -> f64 {
        f.snd_nxt += 10_000;
        let seq = f.snd_nxt - 5_000;
        t.on_ack(&mut CcCtx { now: 0, flow: f }, &ack(seq, (rtt_us * 1e6) as Time));
        t.rate()
    }

    /// Started flow at `rate`, thresholds 50/500 us, min RTT 20 us, rates 100M/500M/1G, primed at `rtt0` us.
    fn started(f: &mut FlowCtl, rate: f64, rtt0: f64) -> Timely {
        let mut t = build(json!({"t_low": "50us", "t_high": "500us", "min_rtt": "20us", "init_rate": rate})).unwrap();
        t.on_start(&mut CcCtx { now: 0, flow: f });
        assert_eq!(epoch(&mut t, f, rtt0), rate, "the first epoch only records the RTT");
        t
    }

    #[test]
    fn auto_values_scale_with_base_rtt_and_line_rate() {
        let mut f = flow();
        let mut t = build(json!({})).unwrap();
        t.on_start(&mut CcCtx { now: 0, flow: &mut f });
        let (lo, hi, mr) = t.thresholds();
        assert_eq!((lo, hi), (20e6, 200e6));
        assert!((mr - 28e6).abs() < 1e-3, "{mr}");
        assert_eq!((t.rai, t.rhai, t.r_min, t.rate()), (100e6, 500e6, 1e9, 100e9));
        assert_eq!(t.segment, 0);
        let mut p = build(json!({"preset": "paper"})).unwrap();
        p.on_start(&mut CcCtx { now: 0, flow: &mut f });
        assert_eq!(p.thresholds(), (50e6, 500e6, 20e6));
        assert_eq!((p.rai, p.rhai, p.segment), (10e6, 50e6, 16_384));
        let p = build(json!({"preset": "paper", "rai": "20Mbps", "t_low": "30us"})).unwrap();
        assert_eq!((p.rai_cfg, p.rhai_cfg, p.t_low_cfg), (Some(20e6), Some(100e6), Some(30e6)));
    }

    #[test]
    fn gradient_rule_each_branch() {
        let mut f = flow();
        // Below T_low: additive increase whatever the gradient.
        let mut t = started(&mut f, 50e9, 30.0);
        assert_eq!(epoch(&mut t, &mut f, 45.0), 50e9 + 100e6);
        // Above T_high: rate x (1 - beta (1 - T_high / rtt)).
        let mut t = started(&mut f, 50e9, 100.0);
        let r = epoch(&mut t, &mut f, 800.0);
        let want = 50e9 * (1.0 - 0.8 * (1.0 - 500.0 / 800.0));
        assert!((r - want).abs() < 1.0, "{r} vs {want}");
        assert_eq!(t.inc_stage(), 0);
        // In between, positive gradient: rtt_diff = alpha x (new - prev) from 0;
        // rate x (1 - beta x rtt_diff / min_rtt).
        let mut t = started(&mut f, 50e9, 100.0);
        let r = epoch(&mut t, &mut f, 104.0);
        let diff = 0.875 * 4.0;
        assert!((t.rtt_diff() - diff * 1e6).abs() < 1e-3);
        let want = 50e9 * (1.0 - 0.8 * diff / 20.0);
        assert!((r - want).abs() < 1.0, "{r} vs {want}");
        // The EWMA carries over: a flat next RTT still has a positive rtt_diff.
        let r2 = epoch(&mut t, &mut f, 104.0);
        let diff2 = 0.125 * diff;
        assert!((t.rtt_diff() - diff2 * 1e6).abs() < 1e-3);
        assert!((r2 - r * (1.0 - 0.8 * diff2 / 20.0)).abs() < 1.0);
        // Negative gradient in the band: additive increase.
        let r3 = epoch(&mut t, &mut f, 90.0);
        assert!(t.rtt_diff() < 0.0);
        assert!((r3 - (r2 + 100e6)).abs() < 1e-3);
        // A gradient above 1/beta floors c at 0: the rate drops to R_min.
        let mut t = started(&mut f, 50e9, 100.0);
        assert_eq!(epoch(&mut t, &mut f, 200.0), 1e9);
    }

    #[test]
    fn hyperactive_increase_after_five_increases_in_a_row() {
        let mut f = flow();
        let mut t = started(&mut f, 10e9, 100.0);
        let mut r = 10e9;
        let mut rtt = 100.0;
        for k in 0..8 {
            rtt -= 1.0; // falling RTT in the band: negative gradient
            let n = epoch(&mut t, &mut f, rtt);
            let step = if k < 5 { 100e6 } else { 500e6 };
            assert!((n - r - step).abs() < 1e-3, "increase {k}: {} ", n - r);
            r = n;
        }
        assert_eq!(t.inc_stage(), 8);
        // A decrease resets the stage: the next increase is small again.
        epoch(&mut t, &mut f, rtt + 10.0);
        assert_eq!(t.inc_stage(), 0);
        let r = t.rate();
        assert!((epoch(&mut t, &mut f, 40.0) - r - 100e6).abs() < 1e-3);
    }

    #[test]
    fn paper_preset_hai_only_counts_band_increases() {
        let mut f = flow();
        let mut t = build(json!({"preset": "paper", "segment": 0, "init_rate": "5Gbps"})).unwrap();
        t.on_start(&mut CcCtx { now: 0, flow: &mut f });
        epoch(&mut t, &mut f, 30.0);
        for _ in 0..7 {
            let r = t.rate();
            assert!((epoch(&mut t, &mut f, 30.0) - r - 10e6).abs() < 1e-3, "below T_low: always delta");
        }
        assert_eq!(t.inc_stage(), 0);
    }

    #[test]
    fn only_epoch_closing_acks_update() {
        let mut f = flow();
        let mut t = started(&mut f, 50e9, 30.0);
        let n = t.updates();
        // snd_nxt recorded at the last update is the epoch's end.
        let end = t.last_update_seq;
        for seq in [end - 2000, end - 1000, end] {
            t.on_ack(&mut CcCtx { now: 0, flow: &mut f }, &ack(seq, 5 * US));
        }
        assert_eq!(t.updates(), n);
        f.snd_nxt += 1000;
        t.on_ack(&mut CcCtx { now: 0, flow: &mut f }, &ack(end + 1000, 5 * US));
        assert_eq!(t.updates(), n + 1);
        assert_eq!(t.last_update_seq, f.snd_nxt);
        assert_eq!(f.rate, 50e9 + 100e6);
    }

    #[test]
    fn nonsense_values_are_rejected() {
        for (p, field) in [
            (json!({"preset": "fast"}), "cc.preset"),
            (json!({"preset": 3}), "cc.preset"),
            (json!({"alpha": 0}), "cc.alpha"),
            (json!({"beta": 2}), "cc.beta"),
            (json!({"t_low": "60us", "t_high": "50us"}), "cc.t_high"),
            (json!({"min_rtt": 0}), "cc.min_rtt"),
            (json!({"rai": "fast"}), "cc.rai"),
            (json!({"rai": 0}), "cc.rai"),
            (json!({"hai_thresh": -1}), "cc.hai_thresh"),
            (json!({"segment": "big"}), "cc.segment"),
        ] {
            let e = build(p.clone()).expect_err(&p.to_string());
            assert_eq!(e.field, field, "{p}: {e}");
        }
    }
}
