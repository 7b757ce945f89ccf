//! HPCC: High Precision Congestion Control (Li et al., "HPCC: High Precision
//! Congestion Control", SIGCOMM 2019), as specified in section 2 of
//! `shared/specs/rule_based_cc.md`.
//!
//! Every data packet collects one INT record per switch egress (link rate,
//! dequeue timestamp, cumulative transmitted bytes, queue length); the ACK
//! echoes them. Per ACK the sender estimates the normalised inflight of the
//! most loaded hop,
//!
//! ```text
//! u_i = min(qLen, qLen_prev) / (B_i x T) + txRate_i / B_i,  txRate_i = dTxBytes / dts
//! U   = (1 - tau/T) U + (tau/T) max_i u_i                   (tau = dts of that hop, <= T)
//! ```
//!
//! and sets its window from the *reference* window `Wc`, which changes only
//! once per RTT (when the cumulative ACK passes `lastUpdateSeq`, which is then
//! set to `snd_nxt`):
//!
//! ```text
//! U >= eta or incStage >= maxStage:  W = Wc / (U / eta) + W_AI   (stage -> 0)
//! otherwise:                         W = Wc + W_AI               (stage -> stage + 1)
//! ```
//!
//! Three variants (parameter `variant`):
//!
//! * `window` (the paper, Algorithm 1): the control variable is the window W
//!   (bytes), bounded to [R_min x T, W_init]; the flow is paced at W / T.
//! * `rate` (HPCC-ns3, `rdma-hw.cc` CC_MODE 3, what the paper's simulations
//!   ran): the control variable is the rate R (bit/s), `Rc` plays the role of
//!   `Wc`, the additive step is R_AI, R is bounded to [R_min, line rate], and
//!   the window is derived from it: `win = W_init x R / R_line` (HAS_WIN = 1,
//!   VAR_WIN = 1). The queue term uses `qLen x R_line / (B x W_init)`, which
//!   equals the paper's `qLen / (B x T)` when W_init = R_line x T.
//! * `pint` (HPCC-PINT, HPCC-ns3 CC_MODE 10, spec 2.6): the rate variant,
//!   but data packets carry one 1- or 2-byte field instead of INT records:
//!   each switch egress port keeps its own EWMA of the utilisation and
//!   writes it, encoded as a power of `pint_log_base`, when it is larger
//!   than the field's ([`crate::net::pint`]). Per ACK U is the decoded
//!   field itself (no EWMA at the sender); the rest is the rate variant's
//!   update. The switches use one T for all PINT flows, the largest of
//!   theirs (with `base_rtt` unset, the largest base RTT among them).
//!
//! Where the paper is silent this follows HPCC-ns3: U starts at 1; the first
//! ACK of a flow only stores the INT records (and starts the first RTT epoch,
//! `lastUpdateSeq = snd_nxt`); without fast reaction (`fast_react = false`)
//! intra-epoch ACKs are ignored entirely (their INT is not stored either, so
//! the next full update differences over the whole epoch); with
//! `sample_feedback` fast reactions skip hops whose qLen is 0; the reference
//! value and stage change only on a full update where at least one hop gave a
//! sample. T defaults to the flow's own base RTT; HPCC-ns3 uses one T for all
//! flows (the largest base RTT over all host pairs, GLOBAL_T = 1): set
//! `base_rtt` to reproduce that. W_init defaults to line rate x T.
//!
//! Deliberate deviations and choices:
//!
//! * Like htsim, the stored records are reset (no update from that ACK)
//!   whenever the number of INT records in an ACK differs from the stored
//!   one; HPCC-ns3 assumes a fixed path length.
//! * INT carries full-precision values (no INT_MULTI quantisation, no 24-bit
//!   timestamp wrap). The sender keeps txBytes modulo 2^32 and differences it
//!   modulo 2^32 (exact unless 4 GiB pass between two samples) and qLen
//!   saturated at 4 GiB, to keep the per-flow state small. A hop whose
//!   timestamp did not advance is skipped rather than dividing by zero.
//! * The window variant bounds W below by R_min x T (so that its pacing rate
//!   W / T respects R_min like the rate variant) and at least one byte.
//! * MULTI_RATE (per-hop rates) is not implemented.
//! * ACKs without INT records (a path without switches) leave the flow alone.
//! * The window limits unacknowledged *payload* bytes (the NIC's window is
//!   `snd_nxt - snd_una`), while INT counts wire bytes, exactly as in
//!   HPCC-ns3; the pacer (W / T or R) is the binding limit in steady state.

use super::{AckEvent, CcCtx, CcInfo, CongestionControl, ParamInfo, Params, Transport};
use crate::config::ConfigError;
use crate::net::pint::PintCodec;
use crate::packet::{IntHop, MAX_INT_HOPS};
use crate::units::{Time, SEC};
use std::sync::Arc;

/// Which quantity HPCC controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The paper: window W, paced at W / T.
    Window,
    /// HPCC-ns3 (CC_MODE 3): rate R, window W_init x R / R_line.
    Rate,
    /// HPCC-PINT (HPCC-ns3 CC_MODE 10): the rate variant driven by the
    /// utilisation the switches encode in one field ([`crate::net::pint`]).
    Pint,
}

/// Parameters only needed when a flow starts (shared by the flows of one
/// configuration, which keeps the per-flow state small).
#[derive(Debug)]
struct StartParams {
    r_ai: Option<f64>,
    w_ai: Option<u64>,
    t: Option<Time>,
    w_init: Option<u64>,
    r_min: f64,
    /// The PINT field's encoding (read by the `pint` variant only).
    pint: PintCodec,
    /// `pint` variant: the share of ACKs used, as a threshold on a 53-bit draw
    /// (`2^53` = every ACK).
    pint_sample: u64,
}

/// State of HPCC for one flow.
#[derive(Clone, Debug)]
pub struct Hpcc {
    // ---- configuration
    start: Arc<StartParams>,
    variant: Variant,
    fast_react: bool,
    sample_feedback: bool,
    use_window: bool,
    max_stage: u32,
    eta: f64,
    // ---- derived when the flow starts
    /// T in ps.
    t: f64,
    /// Additive step: bytes (window variant) or bit/s (rate variant).
    ai: f64,
    /// Time (ps) normalising the queue term: u_q = qLen x 8 / (B x q_den).
    q_den: f64,
    /// Bounds of the control variable.
    lo: f64,
    hi: f64,
    /// Window bytes per unit of the control variable (1, or W_init / R_line).
    win_per_unit: f64,
    // ---- dynamic state
    u: f64,
    /// Wc (bytes) or Rc (bit/s).
    reference: f64,
    /// W (bytes) or R (bit/s) last set.
    current: f64,
    last_update_seq: u64,
    inc_stage: u32,
    /// Records stored in the `last_*` arrays (0 = none yet).
    n_hops: u8,
    /// Previous INT record per hop: timestamp, txBytes (modulo 2^32, as the
    /// 20-bit field of real INT is modulo its width), qLen (saturated).
    last_ts: [Time; MAX_INT_HOPS],
    last_tx: [u32; MAX_INT_HOPS],
    last_q: [u32; MAX_INT_HOPS],
}

const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "variant",
        default: "window",
        help: "\"window\" (paper: window W, paced at W/T), \"rate\" (HPCC-ns3 CC_MODE 3: rate R, window W_init x R/R_line) or \"pint\" (HPCC-PINT, CC_MODE 10: the rate variant on one encoded utilisation per packet)",
    },
    ParamInfo {
        name: "pint_prob",
        default: "1.0",
        help: "variant pint: share of ACKs used (PINT_PROB); the others change nothing",
    },
    ParamInfo {
        name: "pint_log_base",
        default: "1.05",
        help: "variant pint: log base of the encoded utilisation (1.05: a 1-byte field, 1.01: 2 bytes); one for all flows",
    },
    ParamInfo { name: "eta", default: "0.95", help: "target utilisation eta (U_TARGET), in (0, 1]" },
    ParamInfo {
        name: "max_stage",
        default: "0",
        help: "additive-increase stages before a multiplicative step (MI_THRESH); HPCC-ns3 runs used 0, paper text 5",
    },
    ParamInfo {
        name: "r_ai",
        default: "line rate / 2500 (40Mbps at 100G)",
        help: "additive increase as a rate (R_AI = 10 Mb/s x C/25G); window variant: W_AI = R_AI x T",
    },
    ParamInfo {
        name: "w_ai",
        default: "r_ai x T",
        help: "additive increase in bytes per update (W_AI); give r_ai or w_ai, not both",
    },
    ParamInfo {
        name: "base_rtt",
        default: "the flow's base RTT",
        help: "T, the base RTT of the control law (HPCC-ns3: the largest base RTT over all host pairs)",
    },
    ParamInfo { name: "w_init", default: "line rate x T", help: "initial and largest window W_init (bytes)" },
    ParamInfo {
        name: "r_min",
        default: "1Gbps",
        help: "lowest rate R_min (HPCC-ns3 MIN_RATE); the window variant keeps W >= R_min x T",
    },
    ParamInfo { name: "fast_react", default: "true", help: "react to every ACK, not only once per RTT (FAST_REACT)" },
    ParamInfo {
        name: "sample_feedback",
        default: "false",
        help: "fast reactions ignore hops whose queue is empty (SAMPLE_FEEDBACK)",
    },
    ParamInfo {
        name: "use_window",
        default: "true",
        help: "enforce the window (rate variant: W_init x R/R_line, HAS_WIN/VAR_WIN); false = pacing only",
    },
];

fn bool_param(p: &Params, name: &str, default: bool) -> Result<bool, ConfigError> {
    match p.raw(name) {
        None => Ok(default),
        Some(v) => v.as_bool().ok_or_else(|| p.bad(name, "expected true or false")),
    }
}

impl Hpcc {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        CcInfo {
            name: "hpcc",
            summary: "HPCC (Li et al., SIGCOMM 2019): INT-driven window and rate; HPCC-PINT (variant pint)",
            params: PARAMS,
        }
    }

    /// Builds it from scenario parameters, rejecting values that make no sense.
    pub fn from_params(p: &Params) -> Result<Self, ConfigError> {
        let variant = match p.raw("variant") {
            None => Variant::Window,
            Some(v) => match v.as_str() {
                Some("window") => Variant::Window,
                Some("rate") => Variant::Rate,
                Some("pint") => Variant::Pint,
                _ => {
                    return Err(p.bad("variant", "use \"window\" (paper), \"rate\" (HPCC-ns3) or \"pint\" (HPCC-PINT)"))
                }
            },
        };
        let eta = p.f64("eta", 0.95)?;
        if !(eta > 0.0 && eta <= 1.0) {
            return Err(p.bad("eta", "the target utilisation must be in (0, 1]"));
        }
        let ms = p.f64("max_stage", 0.0)?;
        if !(0.0..=1e6).contains(&ms) || ms.fract() != 0.0 {
            return Err(p.bad("max_stage", "must be a whole number from 0 to 1000000"));
        }
        let r_ai = match p.raw("r_ai") {
            None => None,
            Some(_) => Some(p.rate("r_ai", 0.0)?),
        };
        let w_ai = match p.raw("w_ai") {
            None => None,
            Some(_) => Some(p.bytes("w_ai", 0)?),
        };
        if r_ai.is_some() && w_ai.is_some() {
            return Err(p.bad("w_ai", "give the additive increase either as r_ai (a rate) or as w_ai (bytes)"));
        }
        if r_ai == Some(0.0) {
            return Err(p.bad("r_ai", "must be positive"));
        }
        if w_ai == Some(0) {
            return Err(p.bad("w_ai", "must be positive"));
        }
        let t_param = match p.raw("base_rtt") {
            None => None,
            Some(_) => Some(p.time("base_rtt", 0)?),
        };
        if t_param == Some(0) {
            return Err(p.bad("base_rtt", "must be positive"));
        }
        let w_init_param = match p.raw("w_init") {
            None => None,
            Some(_) => Some(p.bytes("w_init", 0)?),
        };
        if w_init_param == Some(0) {
            return Err(p.bad("w_init", "must be positive"));
        }
        let pint = PintCodec::new(p.f64("pint_log_base", 1.05)?).map_err(|e| p.bad("pint_log_base", e))?;
        let pint_prob = p.f64("pint_prob", 1.0)?;
        if !(pint_prob > 0.0 && pint_prob <= 1.0) {
            return Err(p.bad("pint_prob", "the share of ACKs used must be in (0, 1]"));
        }
        for name in ["pint_log_base", "pint_prob"] {
            if variant != Variant::Pint && p.raw(name).is_some() {
                return Err(p.bad(name, "applies to variant = \"pint\" only"));
            }
        }
        let pint_sample = (pint_prob * (1u64 << 53) as f64) as u64;
        let r_min = p.rate("r_min", 1e9)?;
        if r_min <= 0.0 {
            return Err(p.bad("r_min", "must be positive"));
        }
        Ok(Hpcc {
            start: Arc::new(StartParams { r_ai, w_ai, t: t_param, w_init: w_init_param, r_min, pint, pint_sample }),
            variant,
            fast_react: bool_param(p, "fast_react", true)?,
            sample_feedback: bool_param(p, "sample_feedback", false)?,
            use_window: bool_param(p, "use_window", true)?,
            max_stage: ms as u32,
            eta,
            t: 1.0,
            ai: 0.0,
            q_den: 1.0,
            lo: 0.0,
            hi: 1.0,
            win_per_unit: 1.0,
            u: 1.0,
            reference: 1.0,
            current: 1.0,
            last_update_seq: 0,
            inc_stage: 0,
            n_hops: 0,
            last_ts: [0; MAX_INT_HOPS],
            last_tx: [0; MAX_INT_HOPS],
            last_q: [0; MAX_INT_HOPS],
        })
    }

    /// The variant in use.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The `pint` variant: the window T it will use on a path of base RTT
    /// `base_rtt` and the field's encoding, which the switches must share.
    pub fn pint_setup(&self, base_rtt: Time) -> Option<(Time, PintCodec)> {
        (self.variant == Variant::Pint).then(|| (self.window_t(base_rtt), self.start.pint))
    }

    /// T on a path of base RTT `base_rtt`: `base_rtt` unless the parameter sets it.
    fn window_t(&self, base_rtt: Time) -> Time {
        self.start.t.unwrap_or(base_rtt).max(1)
    }

    /// Smoothed normalised inflight U of the most loaded hop.
    pub fn utilisation(&self) -> f64 {
        self.u
    }

    /// Reference value updated once per RTT: Wc in bytes (window variant) or
    /// Rc in bit/s (rate variant).
    pub fn reference(&self) -> f64 {
        self.reference
    }

    /// Control value last set: W in bytes (window variant) or R in bit/s (rate variant).
    pub fn current(&self) -> f64 {
        self.current
    }

    /// Additive-increase stage counter.
    pub fn inc_stage(&self) -> u32 {
        self.inc_stage
    }

    /// Stores the INT records of `int` as the previous samples.
    fn store(&mut self, int: &[IntHop]) {
        for (i, h) in int.iter().enumerate().take(MAX_INT_HOPS) {
            self.last_ts[i] = h.ts;
            self.last_tx[i] = h.tx_bytes as u32;
            self.last_q[i] = h.qlen.min(u32::MAX as u64) as u32;
        }
        self.n_hops = int.len() as u8;
    }

    /// MeasureInflight: folds the ACK's INT records into U; stores them.
    /// Returns false if no hop gave a sample.
    fn measure_inflight(&mut self, int: &[IntHop], fast: bool) -> bool {
        let mut best_u = 0.0;
        let mut best_tau = 0.0;
        let mut any = false;
        for (i, h) in int.iter().enumerate().take(MAX_INT_HOPS) {
            if self.sample_feedback && fast && h.qlen == 0 {
                continue;
            }
            any = true;
            let q = h.qlen.min(u32::MAX as u64) as u32;
            let tau = h.ts.saturating_sub(self.last_ts[i]) as f64;
            let bytes = (h.tx_bytes as u32).wrapping_sub(self.last_tx[i]) as f64;
            let qmin = q.min(self.last_q[i]) as f64;
            self.last_ts[i] = h.ts;
            self.last_tx[i] = h.tx_bytes as u32;
            self.last_q[i] = q;
            if tau <= 0.0 || h.rate_bps == 0 {
                continue;
            }
            let u = (bytes / tau + qmin / self.q_den) * (8 * SEC) as f64 / h.rate_bps as f64;
            if u > best_u {
                best_u = u;
                best_tau = tau;
            }
        }
        if any {
            let tau = if best_tau > self.t { self.t } else { best_tau };
            self.u = (self.u * (self.t - tau) + best_u * tau) / self.t;
        }
        any
    }

    /// HPCC-PINT's update (HPCC-ns3 `UpdateRateHpPint`): U is the decoded
    /// field as it is, with no EWMA at the sender (the switches keep it), and
    /// the first ACK only starts the first RTT epoch.
    fn on_pint_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        if ack.hops == 0 {
            return; // no switch on the path wrote the field
        }
        // PINT_PROB: an unsampled ACK changes nothing. The draw hashes the ACK's arrival
        // time and sequence number (reproducible, no generator state per flow).
        let sample = self.start.pint_sample;
        if sample < 1 << 53 && crate::cc::splitmix(ctx.now ^ ack.ack_seq.rotate_left(32)) >> 11 >= sample {
            return;
        }
        let full = ack.ack_seq > self.last_update_seq;
        if self.last_update_seq == 0 {
            self.last_update_seq = ctx.flow.snd_nxt;
            return;
        }
        if !full && !self.fast_react {
            return;
        }
        self.u = self.start.pint.decode(ack.pint);
        let (x, stage) = self.compute();
        if full {
            self.reference = x;
            self.inc_stage = stage;
            self.last_update_seq = ctx.flow.snd_nxt;
        }
        self.apply(ctx, x);
    }

    /// ComputeWind (or its rate form): the new control value from U and the
    /// reference, and the stage it would move to.
    fn compute(&self) -> (f64, u32) {
        let c = self.u / self.eta;
        let (x, stage) = if c >= 1.0 || self.inc_stage >= self.max_stage {
            // c may be ~0 when the path went idle; the clamp below caps the result.
            (self.reference / c.max(1e-9) + self.ai, 0)
        } else {
            (self.reference + self.ai, self.inc_stage + 1)
        };
        (x.clamp(self.lo, self.hi), stage)
    }

    /// Applies control value `x` to the flow.
    fn apply(&mut self, ctx: &mut CcCtx, x: f64) {
        self.current = x;
        match self.variant {
            Variant::Window => {
                ctx.set_rate(x * (8 * SEC) as f64 / self.t);
                if self.use_window {
                    ctx.set_window((self.win_per_unit * x) as u64);
                }
            }
            Variant::Rate | Variant::Pint => {
                ctx.set_rate(x);
                if self.use_window {
                    ctx.set_window((self.win_per_unit * x) as u64);
                }
            }
        }
    }
}

impl CongestionControl for Hpcc {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        if self.variant == Variant::Pint {
            ctx.request_pint(self.start.pint.bytes());
        } else {
            ctx.request_int();
        }
        let line = ctx.flow.line_rate;
        let sp = &self.start;
        let t = self.window_t(ctx.flow.base_rtt) as f64;
        // Bytes a rate moves in T: rate x t_bytes.
        let t_bytes = t / (8 * SEC) as f64;
        let w_init = sp.w_init.map_or(line * t / (8 * SEC) as f64, |w| w as f64).max(1.0);
        let r_ai = sp.r_ai.unwrap_or(line / 2500.0);
        let r_min = sp.r_min.min(line);
        let w_ai = sp.w_ai;
        self.t = t;
        match self.variant {
            Variant::Window => {
                self.ai = w_ai.map_or(r_ai * t_bytes, |w| w as f64);
                self.win_per_unit = 1.0;
                self.q_den = t;
                self.hi = w_init;
                self.lo = (r_min * t_bytes).clamp(1.0, w_init);
            }
            Variant::Rate | Variant::Pint => {
                self.ai = w_ai.map_or(r_ai, |w| w as f64 / t_bytes);
                self.win_per_unit = w_init / line;
                self.q_den = w_init / line * (8 * SEC) as f64;
                self.hi = line;
                self.lo = r_min;
            }
        }
        self.u = 1.0;
        self.inc_stage = 0;
        self.last_update_seq = 0;
        self.n_hops = 0;
        self.reference = self.hi;
        self.apply(ctx, self.hi);
        if !self.use_window {
            ctx.clear_window();
        }
    }

    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        if self.variant == Variant::Pint {
            self.on_pint_ack(ctx, ack);
            return;
        }
        let int = ack.int;
        if int.is_empty() {
            return;
        }
        let full = ack.ack_seq > self.last_update_seq;
        if self.n_hops as usize != int.len() {
            // First ACK, or the path length changed: nothing to difference against.
            self.store(int);
            if full {
                self.last_update_seq = ctx.flow.snd_nxt;
            }
            return;
        }
        if !full && !self.fast_react {
            return;
        }
        let updated = self.measure_inflight(int, !full);
        if updated {
            let (x, stage) = self.compute();
            if full {
                self.reference = x;
                self.inc_stage = stage;
            }
            self.apply(ctx, x);
        }
        if full {
            self.last_update_seq = ctx.flow.snd_nxt;
        }
    }

    fn transport(&self) -> Transport {
        Transport::GoBackN
    }
}

#[cfg(test)]
mod tests;
