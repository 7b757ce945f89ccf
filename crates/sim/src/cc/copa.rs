//! Copa (Arun & Balakrishnan, "Copa: Practical Delay-Based Congestion Control
//! for the Internet", NSDI 2018): a delay-based window with pacing that keeps
//! about `1/delta` packets per flow queued at the bottleneck.
//!
//! Source: the spec `shared/specs/wan_cc.md` section 1 (the paper as far as it
//! could be read, the author's genericCC code that Pantheon runs, and mvfst's
//! `Copa.*`), section by section:
//!
//! * **Estimators (1.1).** `RTTmin` = the minimum RTT over 10 s; `RTTstanding`
//!   = the minimum RTT over the last `srtt/2`; `srtt` an EWMA of weight 1/8
//!   (mvfst's QUIC srtt; genericCC uses 1/16). Queueing delay `dq =
//!   RTTstanding - RTTmin` (the paper's, not mvfst's default of latest RTT -
//!   RTTmin). Both minima are exact sliding windows ([`Windowed`]).
//! * **Per-ACK update (1.2).** Target rate `1/(delta dq)` packets/s, current
//!   rate `cwnd/RTTstanding`: if the current rate is at most the target (or
//!   `dq = 0`), cwnd grows by `v/(delta cwnd)` packets per packet
//!   acknowledged, else it shrinks by as much; never below 2 packets.
//! * **Velocity (1.3).** `v` starts at 1. Once per `srtt` (mvfst's period; the
//!   paper says once per window) the cwnd is compared with its value at the
//!   start of the period: up or down. While the direction stays the same, `v`
//!   doubles from the third period on (the paper's 3-RTT wait; mvfst doubles
//!   when its counter reaches 3); a change of direction resets `v` to 1, and so
//!   does, at once, a per-ACK decision against the current direction while
//!   `v > 1` (mvfst). `v` is halved while it exceeds `delta cwnd` (genericCC), so
//!   no ACK moves cwnd by more than one packet per packet acknowledged.
//! * **Slow start (1.4).** cwnd grows by the bytes acknowledged (doubling per
//!   RTT) while the decision is "increase"; the first "decrease" ends it for
//!   good. Initial cwnd 10 packets.
//! * **Pacing (1.5).** The NIC's pacer runs at `2 cwnd / RTTstanding` (paper,
//!   genericCC; mvfst uses srtt); the window still caps the bytes in flight.
//!   Before the first RTT sample the initial window goes at line rate.
//! * **Losses (1.6).** The default mode ignores them (paper, mvfst). A
//!   retransmission timeout (the core's stand-in for QUIC's persistent
//!   congestion) sets cwnd to 2 packets and `v` to 1, as mvfst.
//! * **Competitive mode (1.7, `mode = "auto"`, the paper's section 3 and
//!   genericCC's "auto").** The queue is "nearly empty" when the minimum RTT
//!   over the last `4 srtt` is below `RTTmin + 0.1 (RTTmax - RTTmin)`, RTTmax
//!   being the maximum RTT over the same `4 srtt`. Copa stays in default mode
//!   while it saw a nearly empty queue within the last `5 srtt`, else it
//!   switches to competitive mode, where `1/delta` follows AIMD: +1 once per
//!   `srtt` without loss, halved on a loss (a fast retransmit or a timeout, at
//!   most once per `srtt`), never below the default's `1/delta`. Back in
//!   default mode `delta` is reset.
//!
//! Deliberate deviations / choices:
//! * `delta` defaults to 0.5, the paper's default-mode value, which Pantheon's
//!   wrapper ran (`do_ss:auto:0.5`) when MVFST-RL compared against it; mvfst
//!   ships 0.05 and Pantheon changed to 0.1 in 2020: set `delta`.
//! * `mode` defaults to `"default"` (mvfst has no competitive mode); `"auto"`
//!   adds the paper's competitive mode.
//! * genericCC's safety valve (cwnd x 0.7 when more than 30 % of packets are
//!   lost) and its first-two-windows probe period are not modelled.
//! * The core's TCP receiver sends cumulative ACKs only (no SACK): each
//!   duplicate ACK counts one packet delivered above the hole
//!   ([`DupAckPipe`]), which both drives the per-ACK update and lets one more
//!   packet out (the window is `cwnd` + those packets, RFC 6675's pipe), so a
//!   loss does not stall the sender for a round trip. Retransmission itself
//!   is the core's (NewReno fast retransmit, adaptive timeout). With
//!   `host.sack` the core's SACK recovery does this instead: the per-ACK
//!   update counts the bytes each ACK SACKs or newly acknowledges
//!   (`AckEvent::delivered`) and the NIC's gate is RFC 6675's pipe.
//! * A cumulative ACK of several packets applies the per-ACK change once per
//!   packet it acknowledges (mvfst counts acknowledged packets too).

use super::estimators::{DupAckPipe, Extremum, Windowed};
use super::newreno::{param_str, P_INIT_CWND};
use super::{AckEvent, CcCtx, CcInfo, CongestionControl, ParamInfo, Params, Transport};
use crate::config::ConfigError;
use crate::units::{Time, SEC};

/// Window of the minimum RTT (`RTTmin`).
const MIN_RTT_WINDOW: Time = 10 * SEC;
/// Smallest congestion window, in packets.
const MIN_CWND_PKTS: f64 = 2.0;

/// Copa's state for one flow. Sizes in bytes, times in ps.
#[derive(Clone, Debug)]
pub struct Copa {
    /// `delta` in force (competitive mode changes it).
    pub delta: f64,
    /// The configured `delta` of default mode.
    pub default_delta: f64,
    /// Competitive mode may be entered (`mode = "auto"`).
    pub auto_mode: bool,
    /// In competitive mode now.
    pub competitive: bool,
    /// Initial window in packets.
    pub init_cwnd: f64,
    /// Segment size.
    pub mss: f64,
    /// Congestion window.
    pub cwnd: f64,
    /// Smoothed RTT (0 before the first sample).
    pub srtt: f64,
    /// Minimum RTT over 10 s.
    pub rtt_min: Windowed,
    /// Minimum RTT over the last srtt/2.
    pub rtt_standing: Windowed,
    /// In slow start.
    pub slow_start: bool,
    /// Velocity.
    pub velocity: f64,
    /// Direction of the last finished velocity period (true = up).
    pub direction_up: Option<bool>,
    /// Consecutive periods in that direction.
    pub same_direction: u32,
    /// Start of the current velocity period and cwnd then.
    pub period_start: Time,
    period_cwnd: f64,
    /// Packets delivered above the first hole (duplicate ACKs).
    pub pipe: DupAckPipe,
    /// Competitive-mode detector: min and max RTT over the last 4 srtt.
    recent_min: Windowed,
    recent_max: Windowed,
    /// Last time the queue looked nearly empty.
    pub last_empty: Time,
    /// Last `1/delta` increase and cut in competitive mode.
    last_inv_increase: Time,
    last_inv_cut: Time,
    /// Highest velocity reached (a diagnostic for tests and plots).
    pub max_velocity: f64,
    /// Switches into competitive mode.
    pub competitive_entries: u64,
    /// Highest byte sent (the NIC goes back on a timeout).
    high_nxt: u64,
}

impl Copa {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[
            ParamInfo {
                name: "delta",
                default: "0.5",
                help: "target queue of 1/delta packets per flow (paper default mode 0.5; mvfst 0.05; Pantheon since 2020 0.1)",
            },
            ParamInfo {
                name: "mode",
                default: "default",
                help: "\"default\" (delay only, as mvfst) or \"auto\" (switch to the paper's competitive mode next to buffer-filling flows)",
            },
            ParamInfo { name: "slow_start", default: "true", help: "double cwnd per RTT until the first decrease" },
            P_INIT_CWND,
        ];
        CcInfo {
            name: "copa",
            summary: "Copa (NSDI 2018): delay-based window, 1/delta packets queued, paced",
            params: P,
        }
    }

    /// Builds it from scenario parameters.
    pub fn from_params(p: &Params) -> Result<Self, ConfigError> {
        let delta = p.f64("delta", 0.5)?;
        if !(delta > 0.0 && delta <= 1.0) {
            return Err(p.bad("delta", "must be in (0, 1]"));
        }
        let auto_mode = match param_str(p, "mode", "default")? {
            "default" => false,
            "auto" => true,
            _ => return Err(p.bad("mode", "expected \"default\" or \"auto\"")),
        };
        let init_cwnd = p.f64("init_cwnd", 10.0)?;
        if init_cwnd < MIN_CWND_PKTS {
            return Err(p.bad("init_cwnd", "must be at least 2 segments"));
        }
        Ok(Copa {
            delta,
            default_delta: delta,
            auto_mode,
            competitive: false,
            init_cwnd,
            mss: 1.0,
            cwnd: init_cwnd,
            srtt: 0.0,
            rtt_min: Windowed::new(Extremum::Min),
            rtt_standing: Windowed::new(Extremum::Min),
            slow_start: super::newreno::param_bool(p, "slow_start", true)?,
            velocity: 1.0,
            direction_up: None,
            same_direction: 0,
            period_start: 0,
            period_cwnd: 0.0,
            pipe: DupAckPipe::default(),
            recent_min: Windowed::new(Extremum::Min),
            recent_max: Windowed::new(Extremum::Max),
            last_empty: 0,
            last_inv_increase: 0,
            last_inv_cut: 0,
            max_velocity: 1.0,
            competitive_entries: 0,
            high_nxt: 0,
        })
    }

    /// Queueing delay `RTTstanding - RTTmin` (ps), once there are samples.
    pub fn queueing_delay(&self) -> Option<f64> {
        Some((self.rtt_standing.get()? - self.rtt_min.get()?).max(0.0))
    }

    /// Whether the current rate `cwnd/RTTstanding` is at most the target
    /// `1/(delta dq)`: the per-ACK decision.
    pub fn should_increase(&self) -> bool {
        match (self.rtt_standing.get(), self.queueing_delay()) {
            (Some(st), Some(dq)) => dq <= 0.0 || (self.cwnd / self.mss) * self.delta * dq <= st,
            _ => true,
        }
    }

    /// Pacing rate in bit/s: `2 cwnd / RTTstanding`.
    pub fn pacing_rate(&self) -> Option<f64> {
        let st = self.rtt_standing.get()?;
        (st > 0.0).then(|| 2.0 * self.cwnd * 8.0 * SEC as f64 / st)
    }

    fn apply(&self, ctx: &mut CcCtx) {
        if let Some(r) = self.pacing_rate() {
            ctx.set_rate(r);
        }
        ctx.set_window((self.cwnd + self.pipe.above_hole as f64) as u64);
    }

    fn on_rtt(&mut self, now: Time, rtt: Time) {
        let r = rtt as f64;
        self.srtt = if self.srtt == 0.0 { r } else { 0.875 * self.srtt + 0.125 * r };
        self.rtt_min.update(now, r, MIN_RTT_WINDOW);
        self.rtt_standing.update(now, r, (self.srtt / 2.0) as Time);
        if self.auto_mode {
            let w = (4.0 * self.srtt) as Time;
            self.recent_min.update(now, r, w);
            self.recent_max.update(now, r, w);
        }
    }

    /// Competitive-mode detector and `1/delta` growth (once per srtt).
    fn update_mode(&mut self, now: Time) {
        let (Some(lo), Some(hi), Some(min)) = (self.recent_min.get(), self.recent_max.get(), self.rtt_min.get()) else {
            return;
        };
        if lo < min + 0.1 * (hi - min) || hi <= min {
            self.last_empty = now;
        }
        let competitive = (now - self.last_empty.min(now)) as f64 > 5.0 * self.srtt;
        if competitive && !self.competitive {
            self.competitive_entries += 1;
            self.last_inv_increase = now;
        }
        if !competitive {
            self.delta = self.default_delta;
        }
        self.competitive = competitive;
        if competitive && (now - self.last_inv_increase) as f64 >= self.srtt {
            self.last_inv_increase = now;
            self.delta = 1.0 / (1.0 / self.delta + 1.0);
        }
    }

    /// Velocity bookkeeping for a per-ACK decision `up`.
    fn update_velocity(&mut self, now: Time, up: bool) {
        if self.velocity > 1.0 && self.direction_up.is_some_and(|d| d != up) {
            self.velocity = 1.0;
            self.same_direction = 0;
        }
        if (now - self.period_start) as f64 >= self.srtt {
            let dir = self.cwnd > self.period_cwnd;
            if self.direction_up == Some(dir) {
                self.same_direction += 1;
                if self.same_direction >= 3 {
                    self.velocity *= 2.0;
                }
            } else {
                self.same_direction = 1;
                self.velocity = 1.0;
            }
            self.direction_up = Some(dir);
            self.period_start = now;
            self.period_cwnd = self.cwnd;
        }
        let cap = (self.delta * self.cwnd / self.mss).max(1.0);
        while self.velocity > cap {
            self.velocity = (self.velocity / 2.0).max(1.0);
            if self.velocity == 1.0 {
                break;
            }
        }
        self.max_velocity = self.max_velocity.max(self.velocity);
    }

    fn loss_signal(&mut self, now: Time) {
        if self.competitive && (now - self.last_inv_cut.min(now)) as f64 >= self.srtt {
            self.last_inv_cut = now;
            let inv = (1.0 / self.delta / 2.0).max(1.0 / self.default_delta);
            self.delta = 1.0 / inv;
        }
    }
}

impl CongestionControl for Copa {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        self.mss = ctx.flow.mtu.max(1) as f64;
        self.cwnd = self.init_cwnd * self.mss;
        self.period_start = ctx.now;
        self.period_cwnd = self.cwnd;
        self.last_empty = ctx.now;
        let line = ctx.flow.line_rate;
        ctx.set_rate(line);
        self.apply(ctx);
    }

    fn on_send(&mut self, ctx: &mut CcCtx, _bytes: u32) {
        self.high_nxt = self.high_nxt.max(ctx.flow.snd_nxt);
    }

    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        let now = ctx.now;
        let delivered = if ctx.flow.sack_pipe.is_some() {
            ack.delivered
        } else {
            self.pipe.on_ack(ack, ctx.flow.snd_una, self.mss as u64)
        };
        if ack.rtt > 0 {
            self.on_rtt(now, ack.rtt);
        }
        if delivered == 0 || self.rtt_standing.get().is_none() {
            self.apply(ctx);
            return;
        }
        if self.auto_mode {
            self.update_mode(now);
        }
        let up = self.should_increase();
        let acked_pkts = delivered as f64 / self.mss;
        if self.slow_start {
            if up {
                self.cwnd += delivered as f64;
                self.apply(ctx);
                return;
            }
            self.slow_start = false;
            self.period_start = now;
            self.period_cwnd = self.cwnd;
        }
        self.update_velocity(now, up);
        let step = self.velocity / (self.delta * self.cwnd / self.mss) * acked_pkts * self.mss;
        let floor = MIN_CWND_PKTS * self.mss;
        self.cwnd = if up { self.cwnd + step } else { (self.cwnd - step).max(floor) };
        self.apply(ctx);
    }

    fn on_fast_retransmit(&mut self, ctx: &mut CcCtx) {
        self.loss_signal(ctx.now);
        self.apply(ctx);
    }

    fn on_timeout(&mut self, ctx: &mut CcCtx) {
        self.loss_signal(ctx.now);
        self.pipe.timeout(self.high_nxt.max(ctx.flow.snd_nxt));
        self.cwnd = MIN_CWND_PKTS * self.mss;
        self.velocity = 1.0;
        self.same_direction = 0;
        self.direction_up = None;
        self.period_start = ctx.now;
        self.period_cwnd = self.cwnd;
        self.apply(ctx);
    }

    fn transport(&self) -> Transport {
        Transport::Tcp
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::newreno::tests::{ack, cfg};
    use crate::cc::FlowCtl;
    use crate::units::MS;

    fn copa(params: serde_json::Value) -> Result<Copa, ConfigError> {
        let mut json = params;
        json["algorithm"] = "copa".into();
        let c = cfg(json);
        Copa::from_params(&Params::new(&c, "cc", Copa::info().params)?)
    }

    /// 12 Mb/s, 1000-byte segments, 60 ms path.
    fn started(params: serde_json::Value) -> (Copa, FlowCtl) {
        let mut c = copa(params).unwrap();
        let mut f = FlowCtl::at_line_rate(1e9, 1e5, 60 * MS, 1000);
        c.on_start(&mut CcCtx { now: 0, flow: &mut f });
        (c, f)
    }

    fn rtt_ack(seq: u64, newly: u64, rtt: Time) -> AckEvent<'static> {
        AckEvent { rtt, ..ack(seq, newly) }
    }

    #[test]
    fn slow_start_doubles_per_rtt_and_ends_at_the_first_decrease() {
        let (mut c, mut f) = started(serde_json::json!({}));
        assert_eq!(f.window, 10_000);
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        // One RTT of ACKs at the base RTT: no queue, dq = 0, always increase.
        for i in 1..=10 {
            ctx.now = 60 * MS + i;
            c.on_ack(&mut ctx, &rtt_ack(i * 1000, 1000, 60 * MS));
        }
        assert_eq!(c.cwnd, 20_000.0);
        assert!(c.slow_start);
        // Pacing: 2 cwnd / RTTstanding = 2 x 20 KB / 60 ms.
        assert!((ctx.flow.rate - 2.0 * 20_000.0 * 8.0 / 0.060).abs() < 1.0, "{}", ctx.flow.rate);
        // A queue builds: RTT 70 ms. The older samples have left the srtt/2
        // window, so RTTstanding = 70 ms and dq = 10 ms; target cwnd =
        // RTTstanding / (delta dq) = 14 packets < 20: decrease, slow start over.
        ctx.now = 200 * MS;
        c.on_ack(&mut ctx, &rtt_ack(11_000, 1000, 70 * MS));
        assert_eq!(c.queueing_delay(), Some((10 * MS) as f64));
        assert!(!c.slow_start);
        assert!(c.cwnd < 20_000.0);
        // It does not come back, even with the queue gone.
        ctx.now = 400 * MS;
        c.on_ack(&mut ctx, &rtt_ack(12_000, 1000, 60 * MS));
        assert!(c.should_increase() && !c.slow_start);
    }

    #[test]
    fn per_ack_step_is_velocity_over_delta_cwnd() {
        let (mut c, mut f) = started(serde_json::json!({"slow_start": false}));
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        ctx.now = 60 * MS;
        c.on_ack(&mut ctx, &rtt_ack(1000, 1000, 60 * MS));
        // dq = 0: +1/(0.5 x 10) packets = 200 bytes.
        assert!((c.cwnd - 10_200.0).abs() < 1e-6, "{}", c.cwnd);
        // Queueing delay 40 ms with 10 packets: target 100/(0.5 x 40) = 5 packets: decrease.
        ctx.now = 200 * MS;
        c.on_ack(&mut ctx, &rtt_ack(2000, 1000, 100 * MS));
        ctx.now = 300 * MS;
        let before = c.cwnd;
        c.on_ack(&mut ctx, &rtt_ack(3000, 1000, 100 * MS));
        assert!(!c.should_increase());
        let expect = before - c.velocity / (0.5 * before / 1000.0) * 1000.0;
        assert!((c.cwnd - expect).abs() < 1e-6, "{} vs {expect}", c.cwnd);
    }

    #[test]
    fn cwnd_never_goes_below_two_packets() {
        // With delta = 1 and dq close to RTTstanding the target is about one packet.
        let (mut c, mut f) = started(serde_json::json!({"slow_start": false, "delta": 1.0}));
        let mut ctx = CcCtx { now: 60 * MS, flow: &mut f };
        c.on_ack(&mut ctx, &rtt_ack(1000, 1000, 60 * MS));
        c.cwnd = 2_100.0;
        ctx.now = 1_000 * MS;
        c.on_ack(&mut ctx, &rtt_ack(2000, 1000, 1_000 * MS));
        assert!(!c.should_increase());
        assert_eq!(c.cwnd, 2_000.0);
    }

    #[test]
    fn duplicate_acks_open_the_window_and_a_timeout_resets_it() {
        let (mut c, mut f) = started(serde_json::json!({}));
        let mut ctx = CcCtx { now: 60 * MS, flow: &mut f };
        let mut d = rtt_ack(0, 0, 60 * MS);
        d.dup_acks = 1;
        c.on_ack(&mut ctx, &d);
        assert_eq!(ctx.flow.window as f64, c.cwnd + 1000.0);
        c.on_timeout(&mut ctx);
        assert_eq!(c.cwnd, 2_000.0);
        assert_eq!(ctx.flow.window, 2_000);
    }

    #[test]
    fn bad_parameters_are_rejected() {
        for (json, field) in [
            (serde_json::json!({"delta": 0}), "cc.delta"),
            (serde_json::json!({"delta": 2}), "cc.delta"),
            (serde_json::json!({"mode": "fast"}), "cc.mode"),
            (serde_json::json!({"init_cwnd": 1}), "cc.init_cwnd"),
            (serde_json::json!({"gain": 1}), "cc.gain"),
        ] {
            assert_eq!(copa(json).unwrap_err().field, field);
        }
    }
}
