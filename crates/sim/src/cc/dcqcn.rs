//! DCQCN: the reaction point (sender NIC rate limiter) of Data Center QCN.
//!
//! Source: Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015, as written up in `shared/specs/rule_based_cc.md` section 1.
//! Where the paper is silent this file follows the DCQCN authors' own ns-3
//! code (bobzhuyb/ns3-rdma, "Zhu" below) for variant `paper`, and the
//! HPCC authors' ns-3 code (alibaba-edu/High-Precision-Congestion-Control,
//! `rdma-hw.cc`, the "Mellanox-style" DCQCN) for variant `mellanox`.
//!
//! The three roles of DCQCN live in three places of ccgym:
//! * congestion point: RED/ECN marking of the switch egress queue, configured
//!   by the scenario's `switch.ecn` (`kmin`, `kmax`, `pmax`, `at`);
//! * notification point: the receiver NIC of the core sends a CNP for a
//!   CE-marked data packet, at most one per flow per `host.cnp_interval`;
//! * reaction point: this file. DCQCN flows use go-back-N loss recovery.
//!
//! # Variant `paper` (spec 1.4; preset `paper`)
//!
//! On each CNP: `Rt = Rc` (see `clamp_target`), `Rc = max(R_min, Rc (1 -
//! alpha/2))`, `alpha = (1-g) alpha + g` (order: see `alpha_first`), both
//! increase counters and the byte counter reset, the increase timer restarts.
//! Alpha decays by `(1-g)` once per `alpha_interval` (K) without a CNP, the
//! period counted from the last CNP (Zhu's `ResumeAlpha` timer). Rate-increase
//! events come from the increase timer (period `rp_timer`, T; `T_cnt += 1`)
//! and from the byte counter (every `byte_counter` (B) wire bytes sent,
//! counted in `on_send`; `B_cnt += 1`). Each event: fast recovery
//! `Rc = (Rt + Rc)/2` while `max(T_cnt, B_cnt) < F`; additive increase
//! `Rt += R_AI` then `Rc = (Rt + Rc)/2` when exactly one counter is >= F;
//! hyper increase `Rt += i R_HAI`, `i = min(T_cnt, B_cnt) - F + 1`, then
//! `Rc = (Rt + Rc)/2` when both are >= F. `Rt` and `Rc` are capped at line
//! rate. Counters are incremented before the test (as in Zhu's code), so the
//! fast-recovery stage lasts `F - 1` events of a counter. A flow that was
//! never cut runs at line rate with no timer, as in Zhu's code.
//!
//! QCN options of spec 1.4, as parameters:
//! * `hyper_halving` (default off): in the hyper stage the timer period is
//!   T/2 and the byte counter B/2 (Zhu). The stage is the one the flow is in
//!   after the event that re-arms the counter.
//! * `target_reset` (default off): while either counter equals 1 (the first
//!   timer or byte event after a cut, Zhu's test), if `Rt > 10 Rc` then
//!   `Rt = Rt/8` instead of adding an increment.
//! * `clamp_target` (default on, the paper's pseudo-code and Zhu's
//!   `CLAMP_TARGET_RATE 1`): always `Rt = Rc` before a cut; off: only if a
//!   byte-counter event happened since the previous cut.
//! * `alpha_first` (default off, the paper's order: cut with the old alpha,
//!   then update); on: Zhu's order (update alpha, cut with the new one).
//! * `hyper_step` `linear` (default, `i R_HAI`) or `constant` (`R_HAI`).
//!
//! # Variant `mellanox` (spec 1.5; preset `mellanox`)
//!
//! No byte counter. A CNP only sets two flags, "CNP seen for alpha" and "CNP
//! seen for decrease". The first CNP of a flow sets `alpha = alpha_init` (1),
//! `Rt = Rc = Rc * rate_on_first_cnp` and starts two periodic grids: alpha
//! updates every `alpha_interval` (`alpha = (1-g) alpha + g` if the alpha
//! flag is set, else `(1-g) alpha`; flag cleared) and decrease checks every
//! `rate_decrease_interval`, 1 ns after the alpha grid (if the decrease flag
//! is set: `Rt = Rc` if `clamp_target` or the stage counter is not 0, `Rc =
//! max(R_min, Rc (1 - alpha/2))`, stage counter 0, flag cleared, increase
//! timer restarted). The increase timer (period `rp_timer`) with stage
//! counter `s`: `s < F` fast recovery, `s == F` additive increase (`Rt =
//! min(line, Rt + R_AI)`), `s > F` hyper increase (`Rt = min(line, Rt +
//! R_HAI)` with `hyper_step` constant), then `Rc = (Rc + Rt)/2` and `s += 1`.
//!
//! Mapping of HPCC-ns3's per-ACK CNP flag onto ccgym: HPCC-ns3 sends no
//! CNP packet; every ACK of a CE-marked packet carries a CNP flag that sets
//! both flags, and the 4 us decrease check (RATE_DECREASE_INTERVAL) limits
//! the cuts. Here each CNP packet arrival sets the flags, and the core's
//! receiver rate limit `host.cnp_interval` (default 4 us) plays the role of
//! RATE_DECREASE_INTERVAL: at most one CNP per flow per 4 us, checked 4 us
//! apart. Deliberate consequence: under persistent marking HPCC-ns3 sets the
//! alpha flag in every 1 us alpha period (alpha tends to 1) while here at
//! most one period in `cnp_interval / alpha_interval` gets it (alpha tends to
//! about 1/4 at 4 us / 1 us), so cuts are gentler than HPCC-ns3's under
//! heavy congestion. `ack_ecn = true` reproduces HPCC-ns3 exactly: ECN echoes
//! on ACKs set the flags too (set `host.cnp_interval = 0` to drop the CNPs).
//!
//! # Presets and the switch settings they expect
//!
//! `preset` picks every default; any parameter given next to it overrides it.
//!
//! | parameter | `paper` | `mellanox` |
//! |---|---|---|
//! | variant | paper | mellanox |
//! | g | 1/256 | 1/256 |
//! | alpha_init | 1 | 1 (set on the first CNP) |
//! | alpha_interval (K) | 55 us | 1 us |
//! | rp_timer (T) | 55 us | 300 us |
//! | byte_counter (B) | 10 MB | none |
//! | fast_recovery (F) | 5 | 1 |
//! | rate_ai | 40 Mb/s | 20 Mb/s (5 Mb/s x 100G/25G) |
//! | rate_hai | 200 Mb/s | 200 Mb/s (50 Mb/s x 100G/25G) |
//! | min_rate | 100 Mb/s | 1000 Mb/s |
//! | clamp_target | on | off |
//! | hyper_step | linear | constant |
//! | rate_decrease_interval | - | 4 us |
//!
//! B = 10 MB is the paper's value (spec marks it unverified); Zhu's
//! `mix/config.txt` uses 300 KB. At 100 Gb/s 10 MB takes 800 us at line rate,
//! so the paper preset is timer-driven in practice; set `byte_counter =
//! "300KB"` for Zhu's byte-counter-driven behaviour.
//!
//! ECN and CNP settings (scenario, not CC parameters) each preset expects:
//! * `paper`: the paper's testbed marks with Kmin 5 KB, Kmax 200 KB, Pmax 1 %
//!   (`switch.ecn = {kmin = "5KB", kmax = "200KB", pmax = 0.01}`) and sends at
//!   most one CNP per 50 us (`host.cnp_interval = "50us"`); Zhu's simulator
//!   uses 40 KB / 1000 KB / Pmax 1.0 (close to ccgym's default ramp of
//!   150 KiB / 1500 KiB / 1.0).
//! * `mellanox`: HPCC-ns3 at 100 Gb/s marks with Kmin 400 KB, Kmax 1600 KB,
//!   Pmax 0.2 (`switch.ecn = {kmin = "400KB", kmax = "1600KB", pmax = 0.2}`),
//!   scaled by link rate / 100 Gb/s for other rates; `host.cnp_interval`
//!   4 us (the default). Both mark at dequeue (the default `at`).
//!
//! # Timers and cost: what is exact and what is approximated
//!
//! The core gives one timer per flow; this file multiplexes the increase
//! timer and the decrease check on it and arms only the earliest deadline
//! that must run on time. A deadline that moves later (a CNP restarts the
//! increase timer) does not re-arm the core timer: the old one fires early,
//! finds nothing due and re-arms, so a burst of CNPs costs at most one extra
//! event per increase period rather than one per CNP.
//! * Alpha (both variants) is exact but lazy: it is stored with the index of
//!   the last alpha-grid tick it includes and brought up to date by `(1-g)^k`
//!   (after the pending "CNP seen" increase in `mellanox`) only when a CNP or
//!   a cut needs it. No alpha timer exists, whatever K is.
//! * The decrease check (`mellanox`) is armed only while a CNP is pending,
//!   at the next tick of its 1-ns-offset grid: the instants and outcome of
//!   the periodic timer, without its empty ticks. Cuts always run on time.
//! * Lazy rate increase (exact in rates and packet times): a rate increase
//!   only matters to the NIC when it lets the pacer release the flow's next
//!   packet earlier. This file tracks the pacer's release time as the core
//!   computes it (`max(release, now) + gap` per packet; the pending gap
//!   rescaled on each rate change) and arms the increase timer only if the
//!   next increase falls before that release time. Otherwise the increase
//!   events that come due are run, in order and each at its own instant,
//!   when the flow next transmits (before its byte counter counts the
//!   packet), receives a CNP or fires a timer. Since the core rescales the
//!   pending gap on a rate change (`gap += L/new - L/old`, which telescopes),
//!   the packet leaves at the same instant and with the same rate as under
//!   a timer that fires every T. A flow that sends slower than one packet per
//!   T, or waits behind PFC or the NIC's round robin, thus costs about one
//!   increase event per packet, not one per T. Runs with one flow per host
//!   are bit-identical to an always-armed timer; with several flows per host
//!   the NIC's round-robin order among flows whose release time has already
//!   passed can differ (the core re-queues a sleeping flow whose rate rises),
//!   which is an equally valid schedule. While a flow sends nothing, its
//!   reported `rate` may lag the algorithm's `Rc` until its next packet.
//! * Approximation: once `Rt` is at line rate and `Rc` within 0.01 % of it,
//!   `Rc` snaps to line rate and the increase timer and byte counter stop
//!   until the next CNP (the reference simulators keep halving a vanishing
//!   gap and counting events; neither affects any later decision, since a
//!   cut resets the counters and `Rt = Rc = line` either way). So a flow at
//!   line rate costs no event, whatever its alpha.
//!
//! Other deviations: none intended. The reference simulators' timers are in
//! whole microseconds; ccgym's are in picoseconds.

use super::{AckEvent, CcCtx, CcInfo, CongestionControl, ParamInfo, Params};
use crate::config::ConfigError;
use crate::units::{Time, NS, SEC, US};
use std::sync::Arc;

/// Which reaction-point algorithm runs (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The paper's (and Zhu's simulator's) reaction point, spec 1.4.
    Paper,
    /// HPCC-ns3's "Mellanox-style" reaction point, spec 1.5.
    Mellanox,
}

/// Size of a hyper-increase step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HyperStep {
    /// `i x R_HAI` with `i` the hyper-stage event count (paper, Zhu).
    Linear,
    /// `R_HAI` per event (HPCC-ns3).
    Constant,
}

/// DCQCN parameters, shared by all flows of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct DcqcnConfig {
    /// Reaction-point algorithm.
    pub variant: Variant,
    /// Alpha gain g, in (0, 1].
    pub g: f64,
    /// Initial alpha (`mellanox`: alpha set on the first CNP).
    pub alpha_init: f64,
    /// Alpha timer period K, ps.
    pub alpha_interval: Time,
    /// Rate-increase timer period T, ps.
    pub rp_timer: Time,
    /// Byte counter B in wire bytes (0 = none; `paper` only).
    pub byte_counter: u64,
    /// Fast-recovery steps F.
    pub fast_recovery: u32,
    /// Additive-increase step R_AI, bit/s.
    pub rate_ai: f64,
    /// Hyper-increase step R_HAI, bit/s.
    pub rate_hai: f64,
    /// Lowest rate a cut goes to, bit/s.
    pub min_rate: f64,
    /// Always set `Rt = Rc` before a cut.
    pub clamp_target: bool,
    /// Timer T/2 and byte counter B/2 in the hyper stage (`paper`).
    pub hyper_halving: bool,
    /// `Rt > 10 Rc` on a first event after a cut gives `Rt = Rt/8` (`paper`).
    pub target_reset: bool,
    /// Update alpha before cutting, with the new alpha (`paper`).
    pub alpha_first: bool,
    /// Hyper-increase step size.
    pub hyper_step: HyperStep,
    /// Period of the decrease check, ps (`mellanox`).
    pub rate_decrease_interval: Time,
    /// Factor applied to the rate on the first CNP (`mellanox`).
    pub rate_on_first_cnp: f64,
    /// ECN echoes on ACKs count as CNPs (`mellanox`, HPCC-ns3's CNP flag).
    pub ack_ecn: bool,
}

impl DcqcnConfig {
    /// Preset `paper`: DCQCN paper / Zhu's simulator values (spec 1.6).
    pub fn paper() -> Self {
        DcqcnConfig {
            variant: Variant::Paper,
            g: 1.0 / 256.0,
            alpha_init: 1.0,
            alpha_interval: 55 * US,
            rp_timer: 55 * US,
            byte_counter: 10_000_000,
            fast_recovery: 5,
            rate_ai: 40e6,
            rate_hai: 200e6,
            min_rate: 100e6,
            clamp_target: true,
            hyper_halving: false,
            target_reset: false,
            alpha_first: false,
            hyper_step: HyperStep::Linear,
            rate_decrease_interval: 4 * US,
            rate_on_first_cnp: 1.0,
            ack_ecn: false,
        }
    }

    /// Preset `mellanox`: HPCC-ns3 `dcqcn` values at 100 Gb/s (spec 1.5, 1.6).
    pub fn mellanox() -> Self {
        DcqcnConfig {
            variant: Variant::Mellanox,
            g: 1.0 / 256.0,
            alpha_init: 1.0,
            alpha_interval: US,
            rp_timer: 300 * US,
            byte_counter: 0,
            fast_recovery: 1,
            rate_ai: 20e6,
            rate_hai: 200e6,
            min_rate: 1000e6,
            clamp_target: false,
            hyper_halving: false,
            target_reset: false,
            alpha_first: false,
            hyper_step: HyperStep::Constant,
            rate_decrease_interval: 4 * US,
            rate_on_first_cnp: 1.0,
            ack_ecn: false,
        }
    }
}

/// Per-flow DCQCN state (reaction point).
#[derive(Clone, Debug)]
pub struct Dcqcn {
    cfg: Arc<DcqcnConfig>,
    /// Current rate Rc, bit/s.
    rc: f64,
    /// Target rate Rt, bit/s.
    rt: f64,
    /// Alpha as of alpha-grid tick `alpha_ticks`.
    alpha: f64,
    /// Origin of the alpha grid (last CNP in `paper`, first CNP in `mellanox`).
    alpha_origin: Time,
    /// Alpha-grid ticks already folded into `alpha`.
    alpha_ticks: u64,
    /// `mellanox`: a CNP arrived in the current alpha period.
    alpha_flag: bool,
    /// A CNP has been received (the grids exist).
    cnp_seen: bool,
    /// `mellanox`: a CNP waits for the decrease check at `check_at`.
    dec_flag: bool,
    /// Timer events since the last cut (`mellanox`: the stage counter).
    t_cnt: u32,
    /// Byte-counter events since the last cut.
    b_cnt: u32,
    /// Bytes left until the next byte-counter event.
    bc_left: i64,
    /// The byte counter is running.
    bc_on: bool,
    /// Next increase-timer deadline (`Time::MAX` = stopped).
    inc_at: Time,
    /// Next decrease check (`Time::MAX` = none pending).
    check_at: Time,
    /// The NIC pacer's release time of the flow's next packet, ps, tracked
    /// as the core computes it (see "Lazy rate increase").
    next_send: f64,
    /// Bits of the last packet sent (the core rescales its gap on a rate change).
    last_bits: f64,
    /// Picoseconds per bit at the pacer's current rate.
    ps_per_bit: f64,
}

const NONE: Time = Time::MAX;
/// An increase deadline this close after the pacer's release time still arms
/// the timer (covers rounding between this estimate and the core's).
const MARGIN: f64 = NS as f64;
/// `Rc` this close to line rate (relative) with `Rt` at line rate is line rate.
const SNAP: f64 = 1e-4;

const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "preset", default: "paper", help: "\"paper\" (DCQCN paper / Zhu's ns-3) or \"mellanox\" (HPCC-ns3 dcqcn at 100G); picks every default below" },
    ParamInfo { name: "variant", default: "paper (mellanox: mellanox)", help: "reaction point: \"paper\" (cut per CNP, timer + byte counter) or \"mellanox\" (CNP flags, periodic alpha and decrease check, timer only)" },
    ParamInfo { name: "g", default: "0.00390625", help: "alpha gain g in (0, 1]" },
    ParamInfo { name: "alpha_init", default: "1", help: "initial alpha in [0, 1] (mellanox: alpha set on the first CNP)" },
    ParamInfo { name: "alpha_interval", default: "55us (mellanox: 1us)", help: "alpha timer K: decay period without CNP (mellanox: alpha update period)" },
    ParamInfo { name: "rp_timer", default: "55us (mellanox: 300us)", help: "rate-increase timer T" },
    ParamInfo { name: "byte_counter", default: "10MB (mellanox: none)", help: "byte counter B: a rate-increase event per B wire bytes sent; 0 = none (paper variant only)" },
    ParamInfo { name: "fast_recovery", default: "5 (mellanox: 1)", help: "fast-recovery steps F (integer)" },
    ParamInfo { name: "rate_ai", default: "40Mbps (mellanox: 20Mbps)", help: "additive-increase step R_AI" },
    ParamInfo { name: "rate_hai", default: "200Mbps", help: "hyper-increase step R_HAI" },
    ParamInfo { name: "min_rate", default: "100Mbps (mellanox: 1000Mbps)", help: "R_min: lowest rate a cut goes to" },
    ParamInfo { name: "clamp_target", default: "true (mellanox: false)", help: "always Rt = Rc before a cut; false: only after an increase event (paper: byte-counter event) since the last cut" },
    ParamInfo { name: "hyper_step", default: "linear (mellanox: constant)", help: "hyper-increase step: \"linear\" (i x R_HAI) or \"constant\" (R_HAI)" },
    ParamInfo { name: "hyper_halving", default: "false", help: "paper variant: timer T/2 and byte counter B/2 in the hyper stage (QCN, Zhu)" },
    ParamInfo { name: "target_reset", default: "false", help: "paper variant: on a first event after a cut, Rt > 10 Rc gives Rt = Rt/8 (QCN, Zhu)" },
    ParamInfo { name: "alpha_first", default: "false", help: "paper variant: update alpha before the cut and cut with the new alpha (Zhu); false: paper order" },
    ParamInfo { name: "rate_decrease_interval", default: "4us", help: "mellanox variant: period of the decrease check (cuts at most once per period)" },
    ParamInfo { name: "rate_on_first_cnp", default: "1", help: "mellanox variant: Rt = Rc = Rc x this on the first CNP, in (0, 1]" },
    ParamInfo { name: "ack_ecn", default: "false", help: "mellanox variant: ECN echoes on ACKs set the CNP flags too (HPCC-ns3's per-ACK CNP flag)" },
];

impl Dcqcn {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        CcInfo {
            name: "dcqcn",
            summary: "DCQCN (Zhu et al., SIGCOMM 2015): rate-based, ECN/CNP driven; presets paper and mellanox",
            params: PARAMS,
        }
    }

    /// Builds it from scenario parameters.
    pub fn from_params(p: &Params) -> Result<Self, ConfigError> {
        Ok(Dcqcn::new(Arc::new(parse(p)?)))
    }

    /// A flow's state for configuration `cfg` (before `on_start`).
    pub fn new(cfg: Arc<DcqcnConfig>) -> Self {
        Dcqcn {
            alpha: cfg.alpha_init,
            cfg,
            rc: 0.0,
            rt: 0.0,
            alpha_origin: 0,
            alpha_ticks: 0,
            alpha_flag: false,
            cnp_seen: false,
            dec_flag: false,
            t_cnt: 0,
            b_cnt: 0,
            bc_left: 0,
            bc_on: false,
            inc_at: NONE,
            check_at: NONE,
            next_send: 0.0,
            last_bits: 0.0,
            ps_per_bit: 0.0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &DcqcnConfig {
        &self.cfg
    }

    /// Current rate Rc, bit/s.
    pub fn current_rate(&self) -> f64 {
        self.rc
    }

    /// Target rate Rt, bit/s.
    pub fn target_rate(&self) -> f64 {
        self.rt
    }

    /// Alpha at time `now` (without changing the state).
    pub fn alpha_at(&self, now: Time) -> f64 {
        self.alpha_ahead(now).0
    }

    /// Alpha with the alpha-grid ticks up to `now` folded in, and that tick count.
    fn alpha_ahead(&self, now: Time) -> (f64, u64) {
        if !self.cnp_seen {
            return (self.alpha, self.alpha_ticks);
        }
        let n = now.saturating_sub(self.alpha_origin) / self.cfg.alpha_interval;
        if n <= self.alpha_ticks {
            return (self.alpha, self.alpha_ticks);
        }
        let mut k = n - self.alpha_ticks;
        let keep = 1.0 - self.cfg.g;
        let mut a = self.alpha;
        if self.alpha_flag {
            a = keep * a + self.cfg.g;
            k -= 1;
        }
        if k > 0 {
            a *= keep.powi(k.min(i32::MAX as u64) as i32);
        }
        (a, n)
    }

    /// Folds the alpha-grid ticks up to `now` into `alpha`.
    fn advance_alpha(&mut self, now: Time) {
        let (a, n) = self.alpha_ahead(now);
        if n != self.alpha_ticks {
            self.alpha = a;
            self.alpha_ticks = n;
            self.alpha_flag = false;
        }
    }

    /// Restarts the alpha grid at `now` with the current (up-to-date) alpha.
    fn restart_alpha_grid(&mut self, now: Time) {
        self.alpha_origin = now;
        self.alpha_ticks = 0;
        self.alpha_flag = false;
    }

    /// Sets the pacer to `Rc`, following the core's rescaling of the pending
    /// gap in the estimate of the next release time.
    #[inline]
    fn apply_rate(&mut self, ctx: &mut CcCtx) {
        let old = ctx.flow.rate;
        ctx.set_rate(self.rc);
        let new = ctx.flow.rate;
        if new != old {
            let ps_per_bit = SEC as f64 / new;
            self.next_send += self.last_bits * (ps_per_bit - self.ps_per_bit);
            self.ps_per_bit = ps_per_bit;
        }
    }

    /// Runs every decrease check and increase event due at or before `now`,
    /// in time order, each at its own instant. The caller applies the final
    /// `Rc` to the pacer: no packet leaves in between, so one rescaling of
    /// the pending gap equals the sum of the intermediate ones.
    fn advance(&mut self, line: f64, now: Time) {
        loop {
            let at = self.check_at.min(self.inc_at);
            if at > now {
                return;
            }
            if self.check_at <= self.inc_at {
                self.mellanox_cut(line, at);
            } else {
                self.timer_event(line, at);
            }
        }
    }

    /// A CNP (or, with `ack_ecn`, an ECN echo) arrived.
    fn congestion(&mut self, ctx: &mut CcCtx) {
        let now = ctx.now;
        match self.cfg.variant {
            Variant::Paper => {
                self.advance(ctx.flow.line_rate, now);
                self.paper_cut(ctx);
            }
            Variant::Mellanox => {
                if !self.cnp_seen {
                    self.cnp_seen = true;
                    self.alpha = self.cfg.alpha_init;
                    self.restart_alpha_grid(now);
                    self.rc *= self.cfg.rate_on_first_cnp;
                    self.rt = self.rc;
                    self.apply_rate(ctx);
                    self.dec_flag = true;
                    self.check_at = now + NS + self.cfg.rate_decrease_interval;
                } else {
                    self.advance_alpha(now);
                    self.alpha_flag = true;
                    if !self.dec_flag {
                        self.dec_flag = true;
                        self.check_at = self.next_check(now);
                    }
                }
                self.rearm(ctx);
            }
        }
    }

    /// First tick of the decrease-check grid strictly after `now`.
    fn next_check(&self, now: Time) -> Time {
        let first = self.alpha_origin + NS + self.cfg.rate_decrease_interval;
        if now < first {
            return first;
        }
        let d = self.cfg.rate_decrease_interval;
        first + d * ((now - first) / d + 1)
    }

    /// Paper variant: rate cut on a CNP.
    fn paper_cut(&mut self, ctx: &mut CcCtx) {
        let now = ctx.now;
        self.advance_alpha(now);
        self.restart_alpha_grid(now);
        let c = &*self.cfg;
        let old = self.alpha;
        let new = (1.0 - c.g) * old + c.g;
        if c.clamp_target || self.b_cnt > 0 || !self.cnp_seen {
            self.rt = self.rc;
        }
        let a = if c.alpha_first { new } else { old };
        self.rc = (self.rc * (1.0 - a / 2.0)).max(c.min_rate).min(ctx.flow.line_rate);
        self.alpha = new;
        self.cnp_seen = true;
        self.t_cnt = 0;
        self.b_cnt = 0;
        self.inc_at = now + c.rp_timer;
        self.bc_on = c.byte_counter > 0;
        self.bc_left = c.byte_counter as i64;
        self.apply_rate(ctx);
        self.rearm(ctx);
    }

    /// Mellanox variant: the decrease check at `now` found a CNP.
    fn mellanox_cut(&mut self, line: f64, now: Time) {
        self.advance_alpha(now);
        let c = &*self.cfg;
        if c.clamp_target || self.t_cnt != 0 {
            self.rt = self.rc;
        }
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(c.min_rate).min(line);
        self.t_cnt = 0;
        self.dec_flag = false;
        self.check_at = NONE;
        self.inc_at = now + c.rp_timer;
    }

    /// Whether the paper variant is in the hyper-increase stage.
    #[inline]
    fn in_hyper(&self) -> bool {
        self.t_cnt.min(self.b_cnt) >= self.cfg.fast_recovery
    }

    /// Paper variant: one rate-increase event (counters already incremented).
    fn paper_increase(&mut self, line: f64) {
        let c = &*self.cfg;
        let f = c.fast_recovery;
        let (hi, lo) = (self.t_cnt.max(self.b_cnt), self.t_cnt.min(self.b_cnt));
        if c.target_reset && (self.t_cnt == 1 || self.b_cnt == 1) && self.rt > 10.0 * self.rc {
            self.rt /= 8.0;
        } else if hi < f {
            // Fast recovery: towards the target only.
        } else if lo < f {
            self.rt += c.rate_ai;
        } else {
            let i = match c.hyper_step {
                HyperStep::Linear => (lo - f + 1) as f64,
                HyperStep::Constant => 1.0,
            };
            self.rt += i * c.rate_hai;
        }
        self.rt = self.rt.min(line);
        self.rc = ((self.rt + self.rc) / 2.0).min(line);
    }

    /// Mellanox variant: one increase-timer event.
    fn mellanox_increase(&mut self, line: f64) {
        let c = &*self.cfg;
        let (s, f) = (self.t_cnt, c.fast_recovery);
        if s == f {
            self.rt = (self.rt + c.rate_ai).min(line);
        } else if s > f {
            let i = match c.hyper_step {
                HyperStep::Linear => (s - f) as f64,
                HyperStep::Constant => 1.0,
            };
            self.rt = (self.rt + i * c.rate_hai).min(line);
        }
        self.rc = ((self.rc + self.rt) / 2.0).min(line);
        self.t_cnt = s.saturating_add(1);
    }

    /// After an increase: snap to line rate and stop increasing once there.
    fn after_increase(&mut self, line: f64) {
        if self.rt >= line && line - self.rc <= SNAP * line {
            self.rc = line;
            self.inc_at = NONE;
            self.bc_on = false;
        }
    }

    /// Paper variant: the byte counter expired.
    fn byte_event(&mut self, line: f64) {
        self.b_cnt = self.b_cnt.saturating_add(1);
        self.paper_increase(line);
        let b = self.cfg.byte_counter;
        self.bc_left = if self.cfg.hyper_halving && self.in_hyper() { (b / 2).max(1) } else { b } as i64;
        self.after_increase(line);
    }

    /// The increase timer expires at `now`.
    fn timer_event(&mut self, line: f64, now: Time) {
        let t = self.cfg.rp_timer;
        match self.cfg.variant {
            Variant::Paper => {
                self.t_cnt = self.t_cnt.saturating_add(1);
                self.paper_increase(line);
                let period = if self.cfg.hyper_halving && self.in_hyper() { (t / 2).max(1) } else { t };
                self.inc_at = now + period;
            }
            Variant::Mellanox => {
                self.inc_at = now + t;
                self.mellanox_increase(line);
            }
        }
        self.after_increase(line);
    }

    /// Arms the core timer for the earliest deadline that must run on time:
    /// a pending decrease check, and the next increase only if it falls
    /// before the pacer releases the flow's next packet. A deadline that
    /// moved later keeps the earlier core timer (it fires, finds nothing due,
    /// re-arms).
    #[inline]
    fn rearm(&self, ctx: &mut CcCtx) {
        let inc = if (self.inc_at as f64) < self.next_send + MARGIN { self.inc_at } else { NONE };
        let want = inc.min(self.check_at);
        if want == NONE {
            if ctx.flow.timer.is_some() {
                ctx.cancel_timer();
            }
            return;
        }
        match ctx.flow.timer {
            Some(armed) if armed <= want => {}
            _ => ctx.set_timer(want),
        }
    }
}

/// Reads a string parameter.
fn string<'a>(p: &'a Params, name: &str, default: &'a str) -> Result<&'a str, ConfigError> {
    match p.raw(name) {
        None => Ok(default),
        Some(v) => v.as_str().ok_or_else(|| p.bad(name, "expected a string")),
    }
}

/// Reads a boolean parameter (true/false or 1/0).
fn flag(p: &Params, name: &str, default: bool) -> Result<bool, ConfigError> {
    match p.raw(name) {
        None => Ok(default),
        Some(serde_json::Value::Bool(b)) => Ok(*b),
        Some(v) if v.as_f64() == Some(1.0) => Ok(true),
        Some(v) if v.as_f64() == Some(0.0) => Ok(false),
        Some(_) => Err(p.bad(name, "expected true or false")),
    }
}

fn parse(p: &Params) -> Result<DcqcnConfig, ConfigError> {
    let mut c = match string(p, "preset", "paper")? {
        "paper" => DcqcnConfig::paper(),
        "mellanox" => DcqcnConfig::mellanox(),
        _ => return Err(p.bad("preset", "unknown preset; use \"paper\" or \"mellanox\"")),
    };
    c.variant = match string(p, "variant", if c.variant == Variant::Paper { "paper" } else { "mellanox" })? {
        "paper" => Variant::Paper,
        "mellanox" => Variant::Mellanox,
        _ => return Err(p.bad("variant", "unknown variant; use \"paper\" or \"mellanox\"")),
    };
    let name = |v: Variant| if v == Variant::Paper { "paper" } else { "mellanox" };
    let only = |names: &[&str], v: Variant| -> Result<(), ConfigError> {
        for &n in names {
            if c.variant != v && p.raw(n).is_some() {
                let msg = format!("applies to variant \"{}\" only (this flow uses \"{}\")", name(v), name(c.variant));
                return Err(p.bad(n, &msg));
            }
        }
        Ok(())
    };
    only(&["byte_counter", "hyper_halving", "target_reset", "alpha_first"], Variant::Paper)?;
    only(&["rate_decrease_interval", "rate_on_first_cnp", "ack_ecn"], Variant::Mellanox)?;
    if c.variant == Variant::Mellanox {
        c.byte_counter = 0;
    }
    c.g = p.f64("g", c.g)?;
    if !(c.g > 0.0 && c.g <= 1.0) {
        return Err(p.bad("g", "the alpha gain must be in (0, 1]"));
    }
    c.alpha_init = p.f64("alpha_init", c.alpha_init)?;
    if !(0.0..=1.0).contains(&c.alpha_init) {
        return Err(p.bad("alpha_init", "alpha must be in [0, 1]"));
    }
    c.alpha_interval = p.time("alpha_interval", c.alpha_interval)?;
    if c.alpha_interval == 0 {
        return Err(p.bad("alpha_interval", "must be positive"));
    }
    c.rp_timer = p.time("rp_timer", c.rp_timer)?;
    if c.rp_timer < 2 {
        return Err(p.bad("rp_timer", "must be positive"));
    }
    c.byte_counter = p.bytes("byte_counter", c.byte_counter)?;
    if c.byte_counter > i64::MAX as u64 / 2 {
        return Err(p.bad("byte_counter", "is too large"));
    }
    let f = p.f64("fast_recovery", c.fast_recovery as f64)?;
    if !(0.0..=1e6).contains(&f) || f.fract() != 0.0 {
        return Err(p.bad("fast_recovery", "must be a whole number of steps from 0 to 1000000"));
    }
    c.fast_recovery = f as u32;
    c.rate_ai = p.rate("rate_ai", c.rate_ai)?;
    c.rate_hai = p.rate("rate_hai", c.rate_hai)?;
    c.min_rate = p.rate("min_rate", c.min_rate)?;
    c.clamp_target = flag(p, "clamp_target", c.clamp_target)?;
    c.hyper_step = match string(p, "hyper_step", if c.hyper_step == HyperStep::Linear { "linear" } else { "constant" })?
    {
        "linear" => HyperStep::Linear,
        "constant" => HyperStep::Constant,
        _ => return Err(p.bad("hyper_step", "use \"linear\" or \"constant\"")),
    };
    c.hyper_halving = flag(p, "hyper_halving", c.hyper_halving)?;
    c.target_reset = flag(p, "target_reset", c.target_reset)?;
    c.alpha_first = flag(p, "alpha_first", c.alpha_first)?;
    c.rate_decrease_interval = p.time("rate_decrease_interval", c.rate_decrease_interval)?;
    if c.rate_decrease_interval == 0 {
        return Err(p.bad("rate_decrease_interval", "must be positive"));
    }
    c.rate_on_first_cnp = p.f64("rate_on_first_cnp", c.rate_on_first_cnp)?;
    if !(c.rate_on_first_cnp > 0.0 && c.rate_on_first_cnp <= 1.0) {
        return Err(p.bad("rate_on_first_cnp", "must be in (0, 1]"));
    }
    c.ack_ecn = flag(p, "ack_ecn", c.ack_ecn)?;
    Ok(c)
}

impl CongestionControl for Dcqcn {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let line = ctx.flow.line_rate;
        self.rc = line;
        self.rt = line;
        ctx.set_rate(line);
        self.next_send = ctx.now as f64;
        self.ps_per_bit = SEC as f64 / ctx.flow.rate;
    }

    #[inline]
    fn on_send(&mut self, ctx: &mut CcCtx, bytes: u32) {
        let now = ctx.now;
        // The core just set the pacer: release = max(release, now) + gap.
        self.last_bits = bytes as f64 * 8.0;
        self.next_send = self.next_send.max(now as f64) + self.last_bits * self.ps_per_bit;
        if self.inc_at <= now {
            self.advance(ctx.flow.line_rate, now);
        }
        if self.bc_on {
            self.bc_left -= bytes as i64;
            if self.bc_left <= 0 {
                self.byte_event(ctx.flow.line_rate);
            }
        }
        self.apply_rate(ctx);
        self.rearm(ctx);
    }

    #[inline]
    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        if ack.ecn_echo && self.cfg.ack_ecn {
            self.congestion(ctx);
        }
    }

    fn on_cnp(&mut self, ctx: &mut CcCtx) {
        self.congestion(ctx);
    }

    fn on_timer(&mut self, ctx: &mut CcCtx) {
        self.advance(ctx.flow.line_rate, ctx.now);
        self.apply_rate(ctx);
        self.rearm(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::FlowCtl;

    const LINE: f64 = 100e9;

    fn flow() -> FlowCtl {
        FlowCtl::at_line_rate(LINE, LINE * 64.0 / 1_048_576.0, 4 * US, 1024)
    }

    /// A started flow whose next packet waits in the pacer for ever, so that
    /// every increase event runs on its timer (see "Lazy rate increase").
    fn started(cfg: DcqcnConfig, fl: &mut FlowCtl) -> Dcqcn {
        let mut d = Dcqcn::new(Arc::new(cfg));
        d.on_start(&mut CcCtx { now: 0, flow: fl });
        d.next_send = 1e30;
        d
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    /// Fires the core timer the way the simulator does.
    fn fire(d: &mut Dcqcn, fl: &mut FlowCtl) -> Time {
        let at = fl.timer.take().expect("a timer is armed");
        d.on_timer(&mut CcCtx { now: at, flow: fl });
        at
    }

    #[test]
    fn paper_cut_then_fast_recovery_follow_the_formulas() {
        let mut fl = flow();
        let mut d = started(DcqcnConfig::paper(), &mut fl);
        let g = 1.0 / 256.0;
        // First CNP at 10 us: Rt = Rc = line, Rc = line (1 - 1/2), alpha = (1-g) + g = 1.
        d.on_cnp(&mut CcCtx { now: 10 * US, flow: &mut fl });
        assert!(close(d.rt, LINE));
        assert!(close(d.rc, 50e9));
        assert!(close(fl.rate, 50e9));
        assert!(close(d.alpha, 1.0));
        assert_eq!(fl.timer, Some(10 * US + 55 * US));
        // Second CNP 120 us later: two alpha periods (55 us) passed without CNP.
        let now = 130 * US;
        let a_old = (1.0 - g) * (1.0 - g);
        assert!(close(d.alpha_at(now), a_old));
        // The increase timer (due at 65 us) fires first: fast recovery, T_cnt = 1.
        assert_eq!(fire(&mut d, &mut fl), 65 * US);
        assert!(close(d.rc, 75e9) && close(d.rt, LINE));
        assert_eq!(fire(&mut d, &mut fl), 120 * US);
        assert!(close(d.rc, 87.5e9));
        d.on_cnp(&mut CcCtx { now, flow: &mut fl });
        // Paper order: Rt = Rc, cut with the old alpha, then update alpha.
        assert!(close(d.rt, 87.5e9));
        assert!(close(d.rc, 87.5e9 * (1.0 - a_old / 2.0)));
        assert!(close(d.alpha, (1.0 - g) * a_old + g));
        // The armed timer (175 us) is the earliest deadline: no re-arm needed
        // since the new one (130 + 55 = 185 us) is later; it fires early, re-arms.
        assert_eq!(fire(&mut d, &mut fl), 175 * US);
        assert!(close(d.rc, 87.5e9 * (1.0 - a_old / 2.0)), "nothing due at 175 us");
        assert_eq!(fl.timer, Some(185 * US));
        let rc = d.rc;
        fire(&mut d, &mut fl);
        assert!(close(d.rc, (rc + 87.5e9) / 2.0), "fast recovery towards Rt");
    }

    #[test]
    fn paper_stages_additive_and_hyper_increase() {
        let mut fl = flow();
        let cfg = DcqcnConfig { byte_counter: 10_000, ..DcqcnConfig::paper() };
        let mut d = started(cfg, &mut fl);
        d.on_cnp(&mut CcCtx { now: 0, flow: &mut fl });
        assert!(close(d.rc, 50e9));
        // Four timer events: fast recovery (T_cnt 1..4 < F = 5).
        for _ in 0..4 {
            fire(&mut d, &mut fl);
        }
        let rc = 50e9 + 50e9 * (1.0 - 1.0 / 16.0);
        assert!(close(d.rc, rc) && close(d.rt, LINE));
        // Pull Rt down to see the increments (a cut with clamp keeps Rt = Rc).
        d.rt = 60e9;
        d.rc = 40e9;
        fire(&mut d, &mut fl); // T_cnt = 5 >= F, B_cnt = 0: additive
        assert!(close(d.rt, 60e9 + 40e6));
        assert!(close(d.rc, (60.04e9 + 40e9) / 2.0));
        // Byte counter: 10 KB of sends per event (before the next timer event at 330 us).
        for _ in 0..4 {
            for _ in 0..10 {
                d.on_send(&mut CcCtx { now: 300 * US, flow: &mut fl }, 1000);
            }
        }
        assert_eq!(d.b_cnt, 4);
        let (rt, rc) = (d.rt, d.rc);
        for _ in 0..10 {
            d.on_send(&mut CcCtx { now: 300 * US, flow: &mut fl }, 1000);
        }
        // B_cnt = 5, T_cnt = 5: hyper, i = min - F + 1 = 1.
        assert!(close(d.rt, rt + 200e6));
        assert!(close(d.rc, (rt + 200e6 + rc) / 2.0));
        let rt = d.rt;
        fire(&mut d, &mut fl); // T_cnt = 6: i = min(6, 5) - 5 + 1 = 1
        assert!(close(d.rt, rt + 200e6));
        let rt = d.rt;
        for _ in 0..10 {
            d.on_send(&mut CcCtx { now: 350 * US, flow: &mut fl }, 1000);
        }
        assert!(close(d.rt, rt + 2.0 * 200e6), "B_cnt = 6: i = 2");
    }

    #[test]
    fn paper_options_alpha_first_target_reset_halving_no_clamp() {
        let mut fl = flow();
        let cfg = DcqcnConfig {
            alpha_first: true,
            target_reset: true,
            clamp_target: false,
            hyper_halving: true,
            fast_recovery: 1,
            byte_counter: 1000,
            alpha_init: 0.5,
            ..DcqcnConfig::paper()
        };
        let mut d = started(cfg, &mut fl);
        let g = 1.0 / 256.0;
        d.on_cnp(&mut CcCtx { now: 0, flow: &mut fl });
        let a = 0.5 * (1.0 - g) + g;
        assert!(close(d.rc, LINE * (1.0 - a / 2.0)), "cut with the updated alpha");
        // No clamp and no byte event since the cut: Rt stays at line rate.
        let rc = d.rc;
        d.on_cnp(&mut CcCtx { now: 0, flow: &mut fl });
        assert!(close(d.rt, LINE));
        let a2 = a * (1.0 - g) + g;
        assert!(close(d.rc, rc * (1.0 - a2 / 2.0)));
        // Force Rt > 10 Rc: the first event divides Rt by 8.
        d.rc = 5e9;
        d.on_send(&mut CcCtx { now: 0, flow: &mut fl }, 1000);
        assert!(close(d.rt, LINE / 8.0));
        assert!(close(d.rc, (LINE / 8.0 + 5e9) / 2.0));
        // Timer event 1 (T_cnt = 1, B_cnt = 1): still "first", Rt not > 10 Rc: hyper
        // (both >= F = 1), i = 1; next period T/2.
        let (rt, rc) = (d.rt, d.rc);
        let at = fire(&mut d, &mut fl);
        assert!(close(d.rt, rt + 200e6) && close(d.rc, (rt + 200e6 + rc) / 2.0));
        assert_eq!(fl.timer, Some(at + 55 * US / 2));
        assert_eq!(d.bc_left, 1000, "byte counter reloaded before the stage changed");
        d.on_send(&mut CcCtx { now: at, flow: &mut fl }, 1000);
        assert_eq!(d.bc_left, 500, "B/2 in the hyper stage");
        // With a byte event since the cut, no clamp still sets Rt = Rc.
        let rc = d.rc;
        d.on_cnp(&mut CcCtx { now: at + 1, flow: &mut fl });
        assert!(close(d.rt, rc));
    }

    #[test]
    fn paper_returns_to_line_rate_and_stops_its_timer() {
        let mut fl = flow();
        let mut d = started(DcqcnConfig::paper(), &mut fl);
        d.on_cnp(&mut CcCtx { now: 0, flow: &mut fl });
        let mut n = 0;
        while fl.timer.is_some() {
            fire(&mut d, &mut fl);
            n += 1;
            assert!(n < 100);
        }
        assert_eq!(d.rc, LINE);
        assert_eq!(fl.rate, LINE);
        assert!(!d.bc_on);
        assert!(n >= 13, "the gap halves each event: {n}");
        // Alpha keeps decaying lazily: 1 ms later it is (1-g)^18.
        let t = 1_000 * US;
        assert!(close(d.alpha_at(t), (1.0f64 - 1.0 / 256.0).powi(18)));
    }

    #[test]
    fn mellanox_first_cnp_alpha_grid_and_decrease_check() {
        let mut fl = flow();
        let mut d = started(DcqcnConfig::mellanox(), &mut fl);
        let g = 1.0 / 256.0;
        let t0 = 10 * US;
        // First CNP: alpha = 1, rate unchanged (RateOnFirstCnp = 1), check at +4 us + 1 ns.
        d.on_cnp(&mut CcCtx { now: t0, flow: &mut fl });
        assert_eq!(fl.rate, LINE);
        assert_eq!(fl.timer, Some(t0 + 4 * US + NS));
        // A second CNP at +2.5 us sets the alpha flag for period (2, 3].
        d.on_cnp(&mut CcCtx { now: t0 + 2_500_000, flow: &mut fl });
        assert_eq!(fire(&mut d, &mut fl), t0 + 4 * US + NS);
        // Alpha ticks at +1, +2 decay; +3 applies the flag; +4 decays.
        let a = (1.0 - g) * ((1.0 - g) * (1.0 - g) * (1.0 - g) + g);
        assert!(close(d.alpha, a), "{} vs {a}", d.alpha);
        // Stage counter 0 and no clamp: Rt stays; Rc = line (1 - alpha/2).
        assert!(close(d.rt, LINE));
        assert!(close(d.rc, LINE * (1.0 - a / 2.0)));
        assert!(close(fl.rate, d.rc));
        // Increase timer 300 us after the cut: fast recovery (s = 0 < F = 1).
        let cut = t0 + 4 * US + NS;
        assert_eq!(fl.timer, Some(cut + 300 * US));
        let rc = d.rc;
        fire(&mut d, &mut fl);
        assert!(close(d.rc, (rc + LINE) / 2.0) && d.t_cnt == 1);
        // Next CNP, at a non-tick time: check at the next tick of the 4 us grid.
        let now = cut + 300 * US + 123;
        d.on_cnp(&mut CcCtx { now, flow: &mut fl });
        let next = t0 + NS + 4 * US * ((now - t0 - NS) / (4 * US) + 1);
        assert_eq!(fl.timer, Some(next));
        let (rc, alpha) = (d.rc, d.alpha_at(next));
        fire(&mut d, &mut fl);
        // s = 1 != 0: Rt = Rc before the cut.
        assert!(close(d.rt, rc));
        assert!(close(d.rc, rc * (1.0 - alpha / 2.0)));
    }

    #[test]
    fn mellanox_increase_stages() {
        let mut fl = flow();
        let mut d = started(DcqcnConfig::mellanox(), &mut fl);
        d.on_cnp(&mut CcCtx { now: 0, flow: &mut fl });
        fire(&mut d, &mut fl);
        d.rt = 50e9;
        d.rc = 40e9;
        fire(&mut d, &mut fl); // s = 0: fast recovery
        assert!(close(d.rt, 50e9) && close(d.rc, 45e9));
        fire(&mut d, &mut fl); // s = 1 = F: additive
        assert!(close(d.rt, 50.02e9) && close(d.rc, (45e9 + 50.02e9) / 2.0));
        let (rt, rc) = (d.rt, d.rc);
        fire(&mut d, &mut fl); // s = 2 > F: constant hyper step
        assert!(close(d.rt, rt + 200e6) && close(d.rc, (rc + rt + 200e6) / 2.0));
        let rt = d.rt;
        fire(&mut d, &mut fl);
        assert!(close(d.rt, rt + 200e6));
    }

    #[test]
    fn lazy_increases_match_timer_driven_ones() {
        for cfg in [DcqcnConfig::paper(), DcqcnConfig::mellanox()] {
            let (mut fa, mut fb) = (flow(), flow());
            let mut eager = started(cfg.clone(), &mut fa);
            let mut lazy = Dcqcn::new(Arc::new(cfg));
            lazy.on_start(&mut CcCtx { now: 0, flow: &mut fb });
            // One packet at line rate: the pacer releases the next one 85.76 ns later.
            lazy.on_send(&mut CcCtx { now: 0, flow: &mut fb }, 1072);
            assert!((lazy.next_send - 85_760.0).abs() < 1e-6);
            eager.on_cnp(&mut CcCtx { now: US, flow: &mut fa });
            lazy.on_cnp(&mut CcCtx { now: US, flow: &mut fb });
            // Mellanox: the decrease check is armed in both; the cut runs on time.
            if lazy.cfg.variant == Variant::Mellanox {
                fire(&mut eager, &mut fa);
                assert_eq!(fire(&mut lazy, &mut fb), US + NS + 4 * US);
            }
            assert_eq!(fb.timer, None, "the next packet is already released: no increase timer");
            let mut t = 0;
            while fa.timer.is_some_and(|at| at <= 2_000 * US) {
                t = fire(&mut eager, &mut fa);
            }
            assert!(t > 300 * US);
            // The lazy flow sends its next packet at t: every increase due runs first.
            lazy.on_send(&mut CcCtx { now: t, flow: &mut fb }, 1072);
            assert_eq!((lazy.t_cnt, lazy.b_cnt), (eager.t_cnt, eager.b_cnt));
            assert!(close(lazy.rc, eager.rc) && close(lazy.rt, eager.rt), "{} {}", lazy.rc, eager.rc);
            assert_eq!(lazy.inc_at, eager.inc_at);
            assert!(close(fb.rate, fa.rate));
        }
    }

    fn params(v: serde_json::Value) -> Result<Dcqcn, ConfigError> {
        let cfg: crate::config::CcConfig = serde_json::from_value(v).unwrap();
        Dcqcn::from_params(&Params::new(&cfg, "cc", Dcqcn::info().params)?)
    }

    #[test]
    fn presets_and_overrides_parse_and_nonsense_is_rejected() {
        let d = params(serde_json::json!({"algorithm": "dcqcn"})).unwrap();
        assert_eq!(*d.config(), DcqcnConfig::paper());
        let d = params(serde_json::json!({"algorithm": "dcqcn", "preset": "mellanox", "rp_timer": "55us",
            "alpha_interval": "50us", "rate_decrease_interval": "50us"}))
        .unwrap();
        let c = d.config();
        assert_eq!(c.variant, Variant::Mellanox);
        assert_eq!((c.rp_timer, c.alpha_interval, c.rate_decrease_interval), (55 * US, 50 * US, 50 * US));
        assert_eq!(c.rate_ai, 20e6);
        let d = params(serde_json::json!({"algorithm": "dcqcn", "byte_counter": "300KB", "clamp_target": 0,
            "hyper_halving": true, "rate_ai": "5Mbps"}))
        .unwrap();
        assert_eq!(d.config().byte_counter, 300_000);
        assert!(!d.config().clamp_target && d.config().hyper_halving);
        for (k, v) in [
            ("g", serde_json::json!(0)),
            ("g", serde_json::json!(1.5)),
            ("alpha_init", serde_json::json!(2)),
            ("preset", serde_json::json!("dcqcn")),
            ("variant", serde_json::json!(3)),
            ("fast_recovery", serde_json::json!(2.5)),
            ("rp_timer", serde_json::json!("0us")),
            ("alpha_interval", serde_json::json!(0)),
            ("hyper_step", serde_json::json!("quadratic")),
            ("clamp_target", serde_json::json!("yes")),
            ("rate_decrease_interval", serde_json::json!("4us")),
            ("ack_ecn", serde_json::json!(true)),
        ] {
            let e = params(serde_json::json!({"algorithm": "dcqcn", k: v})).err();
            assert!(e.as_ref().is_some_and(|e| e.field == format!("cc.{k}")), "{k} = {v}: {e:?}");
        }
        let e = params(serde_json::json!({"algorithm": "dcqcn", "preset": "mellanox", "byte_counter": "1MB"}));
        assert!(e.err().unwrap().message.contains("paper"));
    }
}
