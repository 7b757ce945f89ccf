//! BBR v1 (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM
//! Queue 14(5), 2016; draft-cardwell-iccrg-bbr-congestion-control-00): a model
//! of the path's bottleneck bandwidth (BtlBw) and round-trip propagation time
//! (RTprop) sets a pacing rate and a window.
//!
//! Source: the spec `shared/specs/wan_cc.md` section 2 (the paper, the draft,
//! Linux `tcp_bbr.c` / `tcp_rate.c`, mvfst and ns-3 as summarised there):
//!
//! * **Delivery-rate sampling (2.2).** The flow counts `delivered` bytes and
//!   the time of the last delivery. Each new data segment sent gets a snapshot
//!   (delivered, delivered time, first-sent time, its send time, app-limited);
//!   if nothing was in flight, first-sent and delivered times restart at now.
//!   On an ACK, the most recently sent of the newly acknowledged segments (P)
//!   gives `rate = (delivered - P.delivered) / max(P.sent - P.first_sent, now -
//!   P.delivered_time)`; samples whose interval is below RTprop are discarded
//!   (Linux). A flow with nothing more to send marks `delivered + inflight` as
//!   the end of an app-limited period; segments sent before it is passed are
//!   tagged.
//! * **Model (2.1).** BtlBw = the maximum of accepted samples (not app-limited,
//!   or at least the current maximum) over the last 10 round trips; rounds are
//!   counted by delivered bytes (a round ends when a segment sent after the
//!   previous round started is acknowledged). RTprop = a minimum RTT with its
//!   timestamp: a sample replaces it if smaller, or if 10 s have passed.
//! * **State machine (2.3).** Startup (pacing and cwnd gain `2/ln 2`) until the
//!   "full pipe" test (BtlBw has not grown by 25 % for 3 rounds, on round starts
//!   with a non-app-limited sample); Drain (pacing gain `ln 2 / 2`) until the
//!   bytes in flight are at most one BDP; ProbeBW, cycling pacing gains 1.25,
//!   0.75, 1 x 6 with cwnd gain 2, each phase about one RTprop (1.25 lasts at
//!   least one RTprop and until a loss or 1.25 BDP in flight; 0.75 ends after
//!   one RTprop or as soon as inflight <= BDP), the first phase drawn among
//!   the seven that are not 0.75; ProbeRTT when RTprop is 10 s old: cwnd 4
//!   packets, held 200 ms and one round once inflight <= 4 packets, then RTprop
//!   is re-stamped, cwnd restored, and ProbeBW (or Startup) resumes.
//! * **Outputs (2.4).** Pacing rate = pacing gain x BtlBw x 0.99 (Linux's 1 %
//!   margin); before the first sample, `2/ln 2 x` initial window / RTT; in
//!   Startup the rate never goes down. cwnd target = cwnd gain x BDP + 3 send
//!   quanta (the draft's and mvfst's quanta: 1 MSS below 1.2 Mb/s, 2 MSS below
//!   24 Mb/s, else pacing rate x 1 ms up to 64 KB); with the pipe full cwnd =
//!   min(cwnd + acked, target), before it cwnd grows by acked while below the
//!   target; at least 4 packets, at most 4 in ProbeRTT. Initial cwnd 10.
//! * **Loss (2.5, Linux).** No multiplicative cut. Fast recovery: the cwnd is
//!   saved and set to the packets in flight plus one (packet conservation) for
//!   the first round, `max(cwnd, inflight + acked)` during it; at the end of
//!   recovery cwnd = max(cwnd, saved). A retransmission timeout saves cwnd,
//!   sets it to the minimum, resets the full-pipe counter's reference
//!   (`full_bw`) and starts a round; once the data outstanding at the timeout
//!   is acknowledged, cwnd = max(cwnd, saved).
//!
//! Deliberate deviations / choices:
//! * With `host.sack` the flow's bytes in flight are RFC 6675's pipe
//!   (`FlowCtl::sack_pipe`: without SACKed and lost segments, with
//!   retransmissions), `delivered` grows by what each ACK SACKs or newly
//!   acknowledges, and a rate sample's segment P is the most recently sent
//!   one the ACK reports delivered (the highest newly SACKed, as Linux's
//!   `tcp_rate` does). Without SACK, the paragraph below.
//! * The core's TCP receiver sends cumulative ACKs only (no SACK). A duplicate
//!   ACK counts one segment delivered ([`DupAckPipe`]): it adds to `delivered`
//!   and lets one more segment out (the window handed to the NIC is cwnd + the
//!   segments known delivered above the hole), as SACK would; only advancing
//!   ACKs give rate samples and RTprop samples come from every ACK.
//! * The 1.25 and 0.75 phase tests compare inflight with gain x BDP (Linux
//!   adds its quantisation budget). Linux's ACK-aggregation allowance, TSO
//!   quantisation, idle restart and its long-term policer detector (2.5) are
//!   not modelled; ProbeRTT's "not in idle restart" is therefore always true.
//! * Per-ACK losses are unknown to the CC (the core reports the third
//!   duplicate ACK, not each lost segment), so Linux's `cwnd -= losses` is
//!   replaced by the conservation window at the start of recovery.
//! * The random first ProbeBW phase is drawn from a hash of the time and the
//!   flow's next sequence number (the CC has no generator of its own; the run
//!   stays deterministic).
//! * Before the first RTT sample the pacing rate uses the path's base RTT
//!   (what a handshake would have measured), or 1 ms if unknown (Linux).
//! * BtlBw counts payload bytes (what ACKs acknowledge) while the core's pacer
//!   charges wire bytes (headers included), so the pacing rate is scaled by
//!   the wire size over the payload of the flow's full segments; otherwise a
//!   1500-byte packet with 40 bytes of headers would pace 2.7 % below the link.

use super::estimators::{DupAckPipe, Extremum, Windowed};
use super::newreno::P_INIT_CWND;
use super::{AckEvent, CcCtx, CcInfo, CongestionControl, ParamInfo, Params, Transport};
use crate::config::ConfigError;
use crate::units::{Time, MS, SEC};
use std::collections::VecDeque;

/// Startup's gain, `2/ln 2`: the smallest that doubles the delivery rate per round.
pub const HIGH_GAIN: f64 = 2.885;
/// ProbeBW's pacing gains, one per phase.
pub const GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Rounds over which BtlBw is the maximum sample.
const BW_WINDOW_ROUNDS: u64 = 10;
/// Age after which RTprop is refreshed by ProbeRTT.
const RTPROP_WINDOW: Time = 10 * SEC;
/// Time ProbeRTT holds cwnd at its minimum.
const PROBE_RTT_TIME: Time = 200 * MS;
/// Smallest cwnd and ProbeRTT's cwnd, in packets.
const MIN_CWND_PKTS: f64 = 4.0;

/// BBR's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    /// Exponential search for the bottleneck rate.
    Startup,
    /// Empties the queue Startup built.
    Drain,
    /// Steady state: the eight-phase gain cycle.
    ProbeBw,
    /// cwnd of 4 packets to measure RTprop again.
    ProbeRtt,
}

/// The delivery-rate snapshot of one sent segment.
#[derive(Clone, Copy, Debug)]
struct Sent {
    /// Sequence number just past the segment.
    end: u64,
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    sent_time: Time,
    app_limited: bool,
}

/// BBR v1 state for one flow. Sizes in bytes, times in ps, rates in bytes/s.
#[derive(Clone, Debug)]
pub struct Bbr {
    /// Initial window in packets.
    pub init_cwnd: f64,
    /// Fraction below BtlBw at which the pacer runs (Linux: 1 %).
    pub pacing_margin: f64,
    /// Segment size.
    pub mss: f64,
    /// State.
    pub mode: BbrMode,
    /// Pacing gain in force.
    pub pacing_gain: f64,
    /// cwnd gain in force.
    pub cwnd_gain: f64,
    /// Congestion window.
    pub cwnd: f64,
    /// Pacing rate in force, bit/s.
    pub pacing_rate_bps: f64,
    /// Bytes delivered so far (cumulative ACKs plus duplicates).
    pub delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    /// End of the app-limited period (`delivered` value), 0 = none.
    app_limited_until: u64,
    sent: VecDeque<Sent>,
    last_end: u64,
    /// Segments known delivered above the first hole.
    pub pipe: DupAckPipe,
    /// BtlBw filter (key: round count).
    btl_bw: Windowed,
    /// RTprop and when it was last set.
    pub rt_prop: Option<Time>,
    rt_prop_stamp: Time,
    /// Rounds counted.
    pub round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    full_bw: f64,
    full_bw_count: u32,
    /// The full-pipe test has fired.
    pub filled_pipe: bool,
    /// ProbeBW phase and its start.
    pub cycle_index: usize,
    cycle_stamp: Time,
    probe_rtt_done: Option<Time>,
    probe_rtt_round_done: bool,
    prior_cwnd: f64,
    in_recovery: bool,
    packet_conservation: bool,
    loss_end: Option<u64>,
    loss_this_ack: bool,
    /// ProbeRTT entries so far (a diagnostic for tests and plots).
    pub probe_rtt_entries: u64,
    /// Time of each ProbeRTT entry (the first 64).
    pub probe_rtt_times: Vec<Time>,
    /// Wire bytes per payload byte of a full segment (headers).
    wire_ratio: f64,
}

impl Bbr {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[
            P_INIT_CWND,
            ParamInfo {
                name: "pacing_margin",
                default: "0.01",
                help: "pace this fraction below the bandwidth estimate (Linux 1 %; 0 = the paper)",
            },
        ];
        CcInfo {
            name: "bbr",
            summary: "BBR v1 (ACM Queue 2016): bottleneck bandwidth and RTprop model, gain cycle, paced",
            params: P,
        }
    }

    /// Builds it from scenario parameters.
    pub fn from_params(p: &Params) -> Result<Self, ConfigError> {
        let init_cwnd = p.f64("init_cwnd", 10.0)?;
        if init_cwnd < 1.0 {
            return Err(p.bad("init_cwnd", "must be at least 1 segment"));
        }
        let pacing_margin = p.f64("pacing_margin", 0.01)?;
        if !(0.0..0.5).contains(&pacing_margin) {
            return Err(p.bad("pacing_margin", "must be in [0, 0.5)"));
        }
        Ok(Bbr {
            init_cwnd,
            pacing_margin,
            mss: 1.0,
            mode: BbrMode::Startup,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            cwnd: init_cwnd,
            pacing_rate_bps: 0.0,
            delivered: 0,
            delivered_time: 0,
            first_sent_time: 0,
            app_limited_until: 0,
            sent: VecDeque::new(),
            last_end: 0,
            pipe: DupAckPipe::default(),
            btl_bw: Windowed::new(Extremum::Max),
            rt_prop: None,
            rt_prop_stamp: 0,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            full_bw: 0.0,
            full_bw_count: 0,
            filled_pipe: false,
            cycle_index: 0,
            cycle_stamp: 0,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0.0,
            in_recovery: false,
            packet_conservation: false,
            loss_end: None,
            loss_this_ack: false,
            probe_rtt_entries: 0,
            probe_rtt_times: Vec::new(),
            wire_ratio: 1.0,
        })
    }

    /// The bottleneck-bandwidth estimate in bit/s, once there is a sample.
    pub fn btl_bw_bps(&self) -> Option<f64> {
        self.btl_bw.get().map(|b| b * 8.0)
    }

    /// BDP x `gain` in bytes, or `None` before the model has both estimates.
    fn inflight_target(&self, gain: f64) -> Option<f64> {
        let bw = self.btl_bw.get()?;
        let rt = self.rt_prop? as f64 / SEC as f64;
        Some(gain * bw * rt)
    }

    /// Bytes in flight, without the segments known delivered above a hole.
    fn inflight(&self, ctx: &CcCtx) -> f64 {
        if let Some(pipe) = ctx.flow.sack_pipe {
            return pipe as f64;
        }
        ctx.flow.snd_nxt.saturating_sub(ctx.flow.snd_una).saturating_sub(self.pipe.above_hole) as f64
    }

    fn save_cwnd(&self) -> f64 {
        if self.in_recovery || self.mode == BbrMode::ProbeRtt {
            self.prior_cwnd.max(self.cwnd)
        } else {
            self.cwnd
        }
    }

    fn enter_probe_bw(&mut self, now: Time, salt: u64) {
        self.mode = BbrMode::ProbeBw;
        self.cwnd_gain = 2.0;
        // Uniformly one of the seven phases other than 0.75 (index 1).
        let r = (super::splitmix(now ^ salt.rotate_left(29)) % 7) as usize;
        self.cycle_index = (r + 2) % GAIN_CYCLE.len();
        self.pacing_gain = GAIN_CYCLE[self.cycle_index];
        self.cycle_stamp = now;
    }

    /// The delivery-rate sample of an ACK: (rate, P's delivered count, P app-limited).
    fn rate_sample(&mut self, now: Time, ack_seq: u64) -> Option<(Option<f64>, u64, bool)> {
        let mut p = None;
        while self.sent.front().is_some_and(|s| s.end <= ack_seq) {
            p = self.sent.pop_front();
        }
        let p = p?;
        self.first_sent_time = p.sent_time;
        let send_elapsed = p.sent_time.saturating_sub(p.first_sent_time);
        let ack_elapsed = now.saturating_sub(p.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        let too_short = interval == 0 || self.rt_prop.is_some_and(|rt| interval < rt);
        let rate =
            (!too_short).then(|| self.delivered.saturating_sub(p.delivered) as f64 * SEC as f64 / interval as f64);
        Some((rate, p.delivered, p.app_limited))
    }

    /// Round counting, the BtlBw filter, the gain cycle, the full-pipe test
    /// and Drain's exit (Linux `bbr_update_model` without RTprop).
    fn update_model(&mut self, ctx: &CcCtx, sample: Option<(Option<f64>, u64, bool)>, prior_inflight: f64) {
        let now = ctx.now;
        self.round_start = false;
        let mut app_limited_sample = true;
        if let Some((rate, p_delivered, app_limited)) = sample {
            if p_delivered >= self.next_round_delivered {
                self.next_round_delivered = self.delivered;
                self.round_count += 1;
                self.round_start = true;
                self.btl_bw.expire(self.round_count, BW_WINDOW_ROUNDS);
            }
            if let Some(rate) = rate {
                app_limited_sample = app_limited;
                if !app_limited || self.btl_bw.get().is_none_or(|m| rate >= m) {
                    self.btl_bw.update(self.round_count, rate, BW_WINDOW_ROUNDS);
                }
            }
        }
        if self.mode == BbrMode::ProbeBw && self.next_phase(now, prior_inflight) {
            self.cycle_index = (self.cycle_index + 1) % GAIN_CYCLE.len();
            self.cycle_stamp = now;
            self.pacing_gain = GAIN_CYCLE[self.cycle_index];
        }
        if !self.filled_pipe && self.round_start && !app_limited_sample {
            let bw = self.btl_bw.get().unwrap_or(0.0);
            if bw >= self.full_bw * 1.25 {
                self.full_bw = bw;
                self.full_bw_count = 0;
            } else {
                self.full_bw_count += 1;
                if self.full_bw_count >= 3 {
                    self.filled_pipe = true;
                }
            }
        }
        if self.mode == BbrMode::Startup && self.filled_pipe {
            self.mode = BbrMode::Drain;
            self.pacing_gain = 1.0 / HIGH_GAIN;
            self.cwnd_gain = HIGH_GAIN;
        }
        if self.mode == BbrMode::Drain && self.inflight(ctx) <= self.inflight_target(1.0).unwrap_or(f64::MAX) {
            self.enter_probe_bw(now, ctx.flow.snd_nxt);
        }
    }

    /// Whether the current ProbeBW phase is over.
    fn next_phase(&self, now: Time, prior_inflight: f64) -> bool {
        let full_length = self.rt_prop.is_some_and(|rt| now - self.cycle_stamp > rt);
        let g = self.pacing_gain;
        if g > 1.0 {
            full_length && (self.loss_this_ack || self.inflight_target(g).is_some_and(|t| prior_inflight >= t))
        } else if g < 1.0 {
            full_length || self.inflight_target(1.0).is_some_and(|t| prior_inflight <= t)
        } else {
            full_length
        }
    }

    /// RTprop and ProbeRTT (Linux `bbr_update_min_rtt`).
    fn update_rt_prop(&mut self, ctx: &mut CcCtx, rtt: Time) {
        let now = ctx.now;
        let expired = now > self.rt_prop_stamp + RTPROP_WINDOW;
        if rtt > 0 && (self.rt_prop.is_none_or(|m| rtt < m) || expired) {
            self.rt_prop = Some(rtt);
            self.rt_prop_stamp = now;
        }
        if expired && self.mode != BbrMode::ProbeRtt && self.rt_prop.is_some() {
            self.mode = BbrMode::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.prior_cwnd = self.save_cwnd();
            self.probe_rtt_done = None;
            self.probe_rtt_entries += 1;
            if self.probe_rtt_times.len() < 64 {
                self.probe_rtt_times.push(now);
            }
        }
        if self.mode == BbrMode::ProbeRtt {
            match self.probe_rtt_done {
                None if self.inflight(ctx) <= MIN_CWND_PKTS * self.mss => {
                    self.probe_rtt_done = Some(now + PROBE_RTT_TIME);
                    self.probe_rtt_round_done = false;
                    self.next_round_delivered = self.delivered;
                }
                Some(done) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done && now >= done {
                        self.rt_prop_stamp = now;
                        self.cwnd = self.cwnd.max(self.prior_cwnd);
                        if self.filled_pipe {
                            self.enter_probe_bw(now, ctx.flow.snd_nxt);
                        } else {
                            self.mode = BbrMode::Startup;
                            self.pacing_gain = HIGH_GAIN;
                            self.cwnd_gain = HIGH_GAIN;
                        }
                    }
                }
                None => {}
            }
        }
    }

    /// Send quantum of the draft and mvfst (bytes).
    fn send_quantum(&self) -> f64 {
        let r = self.pacing_rate_bps;
        if r < 1.2e6 {
            self.mss
        } else if r < 24e6 {
            2.0 * self.mss
        } else {
            (r / 8.0 * 1e-3).min(65_536.0)
        }
    }

    fn set_pacing(&mut self, ctx: &mut CcCtx) {
        let rate = match self.btl_bw.get() {
            Some(bw) => self.pacing_gain * bw * 8.0 * self.wire_ratio * (1.0 - self.pacing_margin),
            None => return,
        };
        if self.filled_pipe || rate > self.pacing_rate_bps {
            self.pacing_rate_bps = rate;
        }
        ctx.set_rate(self.pacing_rate_bps);
    }

    fn set_cwnd(&mut self, ctx: &mut CcCtx, acked: f64) {
        let floor = MIN_CWND_PKTS * self.mss;
        let target = match self.inflight_target(self.cwnd_gain) {
            Some(bdp) => bdp + 3.0 * self.send_quantum(),
            None => self.init_cwnd * self.mss,
        };
        if self.packet_conservation {
            self.cwnd = self.cwnd.max(self.inflight(ctx) + acked);
        } else if self.filled_pipe {
            self.cwnd = (self.cwnd + acked).min(target);
        } else if self.cwnd < target || (self.delivered as f64) < self.init_cwnd * self.mss {
            self.cwnd += acked;
        }
        self.cwnd = self.cwnd.max(floor);
        if self.mode == BbrMode::ProbeRtt {
            self.cwnd = self.cwnd.min(floor);
        }
        self.apply_window(ctx);
    }

    fn apply_window(&self, ctx: &mut CcCtx) {
        ctx.set_window((self.cwnd + self.pipe.above_hole as f64) as u64);
    }
}

impl CongestionControl for Bbr {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        self.mss = ctx.flow.mtu.max(1) as f64;
        self.cwnd = self.init_cwnd * self.mss;
        self.last_end = ctx.flow.snd_nxt;
        self.delivered_time = ctx.now;
        self.first_sent_time = ctx.now;
        self.rt_prop_stamp = ctx.now;
        let rtt = if ctx.flow.base_rtt > 0 { ctx.flow.base_rtt } else { MS };
        self.pacing_rate_bps = HIGH_GAIN * self.cwnd * 8.0 * SEC as f64 / rtt as f64;
        ctx.set_rate(self.pacing_rate_bps);
        self.apply_window(ctx);
    }

    fn on_send(&mut self, ctx: &mut CcCtx, bytes: u32) {
        let nxt = ctx.flow.snd_nxt;
        if nxt <= self.last_end {
            return; // a retransmission
        }
        if nxt - self.last_end == self.mss as u64 {
            self.wire_ratio = bytes as f64 / self.mss;
        }
        if self.last_end <= ctx.flow.snd_una {
            // Nothing was in flight: the sampling intervals restart now.
            self.first_sent_time = ctx.now;
            self.delivered_time = ctx.now;
        }
        self.last_end = nxt;
        if nxt >= ctx.flow.app_limit {
            let inflight = self.inflight(ctx) as u64;
            self.app_limited_until = (self.delivered + inflight).max(1);
        }
        self.sent.push_back(Sent {
            end: nxt,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            sent_time: ctx.now,
            app_limited: self.app_limited_until > 0,
        });
    }

    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        let now = ctx.now;
        let sack = ctx.flow.sack_pipe.is_some();
        let newly = if sack { ack.delivered } else { self.pipe.on_ack(ack, ctx.flow.snd_una, self.mss as u64) };
        let prior_inflight = self.inflight(ctx) + if sack { newly } else { ack.newly_acked } as f64;
        if newly > 0 {
            self.delivered += newly;
            self.delivered_time = now;
        }
        if self.app_limited_until > 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        // With SACK, the most recently sent segment delivered may lie above a hole.
        let sample = if sack && newly > 0 {
            self.rate_sample(now, ack.ack_seq.max(ack.sack_high))
        } else if !sack && ack.newly_acked > 0 {
            self.rate_sample(now, ack.ack_seq)
        } else {
            None
        };
        if self.in_recovery && ack.recovery_ended {
            self.in_recovery = false;
            self.packet_conservation = false;
            self.cwnd = self.cwnd.max(self.prior_cwnd);
        }
        if self.loss_end.is_some_and(|e| ctx.flow.snd_una >= e) {
            self.loss_end = None;
            self.cwnd = self.cwnd.max(self.prior_cwnd);
        }
        self.update_model(ctx, sample, prior_inflight);
        if self.packet_conservation && self.round_start {
            self.packet_conservation = false;
        }
        self.update_rt_prop(ctx, ack.rtt);
        self.loss_this_ack = false;
        self.set_pacing(ctx);
        self.set_cwnd(ctx, newly as f64);
    }

    fn on_fast_retransmit(&mut self, ctx: &mut CcCtx) {
        self.prior_cwnd = self.save_cwnd();
        self.in_recovery = true;
        self.packet_conservation = true;
        self.loss_this_ack = true;
        // The conservation round starts now.
        self.next_round_delivered = self.delivered;
        self.cwnd = (self.inflight(ctx) + self.mss).max(MIN_CWND_PKTS * self.mss);
        self.apply_window(ctx);
    }

    fn on_timeout(&mut self, ctx: &mut CcCtx) {
        self.prior_cwnd = self.save_cwnd();
        self.loss_end = Some(self.last_end.max(ctx.flow.snd_nxt));
        self.in_recovery = false;
        self.packet_conservation = false;
        // What the sender resends now was sent before: no new snapshots
        // (a cumulative ACK may then cover long-received data in one jump).
        self.pipe.timeout(self.last_end.max(ctx.flow.snd_nxt));
        self.sent.clear();
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        self.next_round_delivered = self.delivered;
        self.cwnd = MIN_CWND_PKTS * self.mss;
        self.apply_window(ctx);
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

    fn bbr(params: serde_json::Value) -> Result<Bbr, ConfigError> {
        let mut json = params;
        json["algorithm"] = "bbr".into();
        let c = cfg(json);
        Bbr::from_params(&Params::new(&c, "cc", Bbr::info().params)?)
    }

    #[test]
    fn delivery_rate_sample_follows_the_send_and_ack_intervals() {
        let mut b = bbr(serde_json::json!({})).unwrap();
        let mut f = FlowCtl::at_line_rate(1e9, 1e5, 10 * MS, 1000);
        let mut ctx = CcCtx { now: 0, flow: &mut f };
        b.on_start(&mut ctx);
        // Ten segments sent 1 ms apart from t = 0, then an ACK clock: at each
        // ms from 10 ms one segment is acknowledged and one more sent.
        for i in 1..=10u64 {
            ctx.now = (i - 1) * MS;
            ctx.flow.snd_nxt = i * 1000;
            b.on_send(&mut ctx, 1040);
        }
        let mut rates = vec![];
        for k in 1..=40u64 {
            ctx.now = (9 + k) * MS;
            ctx.flow.snd_una = k * 1000;
            b.on_ack(&mut ctx, &AckEvent { rtt: 10 * MS, ..ack(k * 1000, 1000) });
            rates.push(b.btl_bw_bps().unwrap_or(0.0));
            ctx.flow.snd_nxt = (10 + k) * 1000;
            b.on_send(&mut ctx, 1040);
        }
        // The first round's samples count from the start (delivered time 0), so
        // they are low; from the second round on, 10 segments per 10 ms: 8 Mb/s.
        assert!(rates[0] < 1e6, "{rates:?}");
        assert!(rates[19..].iter().all(|&r| (r - 8e6).abs() < 1.0), "{rates:?}");
        assert_eq!(b.delivered, 40_000);
        assert_eq!(b.round_count, 4);
    }

    #[test]
    fn probe_bw_never_starts_with_the_draining_phase() {
        let mut b = bbr(serde_json::json!({})).unwrap();
        for t in 0..2_000u64 {
            b.enter_probe_bw(t * 7_919, t);
            assert_ne!(b.cycle_index, 1);
        }
        // All seven other phases occur.
        let mut seen = [false; 8];
        for t in 0..2_000u64 {
            b.enter_probe_bw(t * 7_919, t);
            seen[b.cycle_index] = true;
        }
        assert_eq!(seen, [true, false, true, true, true, true, true, true]);
    }

    #[test]
    fn bad_parameters_are_rejected() {
        for (json, field) in [
            (serde_json::json!({"pacing_margin": 0.7}), "cc.pacing_margin"),
            (serde_json::json!({"init_cwnd": 0}), "cc.init_cwnd"),
            (serde_json::json!({"high_gain": 3}), "cc.high_gain"),
        ] {
            assert_eq!(bbr(json).unwrap_err().field, field);
        }
    }
}
