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

mod config;

pub use config::{DcqcnConfig, HyperStep, Variant};

use super::{AckEvent, CcCtx, CcInfo, CongestionControl, Params};
use crate::config::ConfigError;
use crate::units::{Time, NS, SEC};
use config::{parse, PARAMS};
use std::sync::Arc;

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
mod tests;
