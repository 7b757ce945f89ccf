//! Learned congestion control: the flow side of the agent bridge.
//!
//! A flow whose CC is `agent` is driven by a policy outside the usual CC
//! rules. At each decision point (an RTT-probe reply, every N ACKs, or a fixed
//! monitor interval) it turns what it measured over the monitor interval into
//! a feature row, keeps the last `history` rows as its observation, computes
//! the reward of its previous action, and asks for an action by raising
//! [`FlowCtl::decision_due`](super::FlowCtl::decision_due). The simulator's
//! bridge batches these requests (see `Simulation::agent_step`) or answers
//! them at once with a native policy; the action takes effect `policy_delay`
//! later, while the flow keeps sending at its old rate.
//!
//! It is built by [`Cc::from_config`](super::Cc::from_config) like any other
//! algorithm, from the scenario's checked `[agent]` table handed over in the
//! [`CcBuild`](super::CcBuild) context. The bridge sees it only through four
//! methods: [`AgentCc::observation`] and [`AgentCc::reward`] (what a decision
//! request carries), [`AgentCc::apply`] (an action takes effect) and
//! [`AgentCc::finish`] (the flow ended: its last observation and reward).
//!
//! Files: `agent/spec.rs` checks the `[agent]` table (triggers, features,
//! rewards, action maps); `agent/features.rs` measures a monitor interval into
//! a feature row and a reward; this file is the per-flow state machine.

mod features;
mod mvfst;
mod spec;
#[cfg(test)]
mod tests;

pub use mvfst::{
    ACTIONS as MVFST_ACTIONS, AGGREGATES as MVFST_AGGREGATES, FIELD_NAMES as MVFST_FIELDS, NORM_BYTES, NORM_MS,
};
pub use spec::{check_finite, check_index};
pub use spec::{preset_table, DelayMode, DELAY_MODES, PRESETS, TIMINGS};
pub use spec::{
    ActionMap, AgentSpec, Agg, Feature, PerAck, Reward, Trigger, WindowUnit, ACTIONS, AURORA_ACTION_BOUND, FEATURES,
    REWARDS, TRIGGERS,
};

use super::newreno::{AckKind, TcpWindow};
use super::{AckEvent, CcCtx, CongestionControl, ProbeEvent};
use crate::units::{Time, SEC};
use std::sync::Arc;

/// Per-flow agent state: monitor-interval statistics, observation history and
/// the decision in flight.
#[derive(Clone, Debug)]
pub struct AgentCc {
    spec: Arc<AgentSpec>,
    mi_start: Time,
    sent_bytes: u64,
    sent_pkts: u64,
    acked_bytes: u64,
    acked_pkts: u64,
    nacks: u32,
    cnps: u32,
    losses: u32,
    rtt_n: u32,
    rtt_sum: f64,
    // Sums for the least-squares slope of RTT over time (Aurora's gradient).
    t_sum: f64,
    tt_sum: f64,
    tr_sum: f64,
    probe_rtt: Option<Time>,
    last_sample: Time,
    last_rtt: Option<f64>,
    min_mean_rtt: f64,
    acks_since: u32,
    /// A probe was requested and its reply has not come back.
    probe_pending: bool,
    /// Interval ticks skipped in a row for want of news (`hold_ticks`).
    held: u32,
    history: Vec<f32>,
    filled: bool,
    /// Multiplier applied by the last action (1 before the first).
    last_multiplier: f64,
    /// A decision was requested and its action has not been applied yet.
    outstanding: bool,
    /// Decisions skipped because the previous one was still outstanding.
    skipped: u64,
    /// Reward computed at the last decision.
    last_reward: f32,
    /// Per-ACK RTT samples of the MI, in ps (only with a per-event feature).
    rtt_stat: EventStat,
    /// Bytes newly acknowledged per ACK over the MI (only with a per-event feature).
    acked_stat: EventStat,
    /// Time of the last data packet sent and EWMA of the gaps between sends (ps).
    last_send: Option<Time>,
    send_gap: f64,
    /// Time of the last ACK and EWMA of the gaps between ACKs (ps).
    last_ack: Option<Time>,
    ack_gap: f64,
    /// Smallest RTT sample heard so far (ps).
    min_rtt: Time,
    /// `window` / `per_ack` actions: the window in bytes, fractional so that
    /// increments smaller than a byte per ACK (Reno's MSS^2/cwnd) accumulate.
    cwnd: f64,
    /// `per_ack` action: the rule in force until the next action.
    per_ack: Option<PerAck>,
    /// EWMA of the RTT samples (ps; 0 before the first), with `rtt_ewma_over_min`.
    rtt_ewma: f64,
    /// The `interval` trigger's period for this flow (`interval_rtts` base RTTs
    /// or the configured interval).
    period: Time,
    /// `loss_response = "newreno"`: NewReno's window and loss recovery under
    /// the policy (boxed: only window agents on TCP carry it).
    tcp: Option<Box<TcpWindow>>,
    /// MVFST-RL's per-event state and action history (boxed: only agents
    /// with an `mvfst_*` feature or the `mvfst` reward carry it).
    mv: Option<Box<mvfst::MvfstState>>,
}

/// Running sum, sum of squares, min and max of one per-event field over a
/// monitor interval: O(1) per event, no buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EventStat {
    n: u32,
    sum: f64,
    sumsq: f64,
    min: f64,
    max: f64,
}

impl EventStat {
    const EMPTY: EventStat = EventStat { n: 0, sum: 0.0, sumsq: 0.0, min: f64::INFINITY, max: f64::NEG_INFINITY };

    #[inline]
    fn add(&mut self, x: f64) {
        self.n += 1;
        self.sum += x;
        self.sumsq += x * x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// The aggregate `agg` of the samples (0 for an empty interval).
    pub(crate) fn get(&self, agg: Agg) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let n = self.n as f64;
        match agg {
            Agg::Sum => self.sum,
            Agg::Mean => self.sum / n,
            Agg::Std => (self.sumsq / n - (self.sum / n).powi(2)).max(0.0).sqrt(),
            Agg::Min => self.min,
            Agg::Max => self.max,
        }
    }
}

impl AgentCc {
    /// A fresh agent following `spec`.
    pub fn new(spec: Arc<AgentSpec>) -> Self {
        let n = spec.obs_dim();
        let mv = spec.mvfst.then(|| Box::new(mvfst::MvfstState::new(spec.action_history)));
        AgentCc {
            spec,
            mi_start: 0,
            sent_bytes: 0,
            sent_pkts: 0,
            acked_bytes: 0,
            acked_pkts: 0,
            nacks: 0,
            cnps: 0,
            losses: 0,
            rtt_n: 0,
            rtt_sum: 0.0,
            t_sum: 0.0,
            tt_sum: 0.0,
            tr_sum: 0.0,
            probe_rtt: None,
            last_sample: 0,
            last_rtt: None,
            min_mean_rtt: f64::INFINITY,
            acks_since: 0,
            probe_pending: false,
            held: 0,
            history: vec![0.0; n],
            filled: false,
            last_multiplier: 1.0,
            outstanding: false,
            skipped: 0,
            last_reward: 0.0,
            rtt_stat: EventStat::EMPTY,
            acked_stat: EventStat::EMPTY,
            last_send: None,
            send_gap: 0.0,
            last_ack: None,
            ack_gap: 0.0,
            min_rtt: Time::MAX,
            cwnd: 0.0,
            per_ack: None,
            rtt_ewma: 0.0,
            period: 0,
            tcp: None,
            mv,
        }
    }

    /// The agent's configuration.
    pub fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    fn rtt_sample(&mut self, now: Time, rtt: Time) {
        let t = (now - self.mi_start) as f64 / SEC as f64;
        let r = rtt as f64 / SEC as f64;
        self.rtt_n += 1;
        self.rtt_sum += rtt as f64;
        self.min_rtt = self.min_rtt.min(rtt.max(1));
        self.last_sample = rtt;
        self.t_sum += t;
        self.tt_sum += t * t;
        self.tr_sum += t * r;
        if self.spec.rtt_ewma {
            self.rtt_ewma = self.ewma(self.rtt_ewma, rtt as f64);
        }
    }

    fn reset_mi(&mut self, now: Time) {
        self.mi_start = now;
        self.sent_bytes = 0;
        self.sent_pkts = 0;
        self.acked_bytes = 0;
        self.acked_pkts = 0;
        self.nacks = 0;
        self.cnps = 0;
        self.losses = 0;
        self.rtt_n = 0;
        self.rtt_sum = 0.0;
        self.t_sum = 0.0;
        self.tt_sum = 0.0;
        self.tr_sum = 0.0;
        self.probe_rtt = None;
        self.acks_since = 0;
        self.rtt_stat = EventStat::EMPTY;
        self.acked_stat = EventStat::EMPTY;
    }

    fn ewma(&self, avg: f64, sample: f64) -> f64 {
        if avg == 0.0 {
            sample
        } else {
            avg + self.spec.ewma_gain * (sample - avg)
        }
    }

    /// Sets the window of a `window` / `per_ack` agent to `bytes`, not below the floor.
    fn set_cwnd(&mut self, ctx: &mut CcCtx, bytes: f64) {
        let floor = if self.spec.min_window > 0 { self.spec.min_window } else { ctx.flow.mtu.max(1) as u64 };
        self.cwnd = bytes.max(floor as f64);
        ctx.set_window(self.cwnd as u64);
    }

    /// The current observation (history rows, oldest first): what a decision
    /// request shows the policy.
    pub fn observation(&self) -> &[f32] {
        &self.history
    }

    /// The reward of the previous action, measured when the current decision
    /// was requested.
    pub fn reward(&self) -> f32 {
        self.last_reward
    }

    /// Decision points skipped because the policy had not answered the
    /// previous request yet.
    pub fn skipped_decisions(&self) -> u64 {
        self.skipped
    }

    fn probe(&mut self, ctx: &mut CcCtx) {
        self.probe_pending = true;
        ctx.request_probe();
        if self.spec.probe_timeout > 0 {
            ctx.set_timer(ctx.now + self.spec.probe_timeout);
        }
    }

    /// A loss was detected (NACK, timeout, fast retransmit): the packet that
    /// carried the probe may be among the lost ones, and a lost probe would
    /// stop this flow's decisions for good, so the probe rides again on the
    /// retransmission. (A duplicate reply only adds an RTT sample.)
    fn reprobe_after_loss(&mut self, ctx: &mut CcCtx) {
        if self.spec.trigger == Trigger::Probe && self.probe_pending {
            ctx.request_probe();
        }
    }

    fn decide(&mut self, ctx: &mut CcCtx) {
        if self.outstanding {
            // The policy has not answered the previous request: skip this
            // decision point (MVFST-RL); the interval keeps accumulating.
            self.skipped += 1;
            if self.spec.trigger == Trigger::Probe {
                self.probe(ctx);
            }
            if let Some(m) = self.mv.as_mut() {
                // mvfst-rl drops the skipped window's states with its observation.
                m.reset_window();
            }
            return;
        }
        if self.mv_empty() {
            // No ACK or loss in the window: nothing to observe (mvfst-rl).
            return;
        }
        self.close_interval(ctx);
        self.outstanding = true;
        ctx.flow.decision_due = true;
        if self.spec.blocking {
            // Blocking timing: the sender waits for the action.
            ctx.flow.paused = true;
        }
        if self.spec.trigger == Trigger::Probe {
            self.probe(ctx);
        }
    }

    /// Measures a final interval for a flow that ends (its last observation and reward).
    pub fn finish(&mut self, ctx: &CcCtx) -> f32 {
        self.close_interval(ctx)
    }

    /// Applies action `a` to the flow's rate (a NaN action keeps the rate).
    pub fn apply(&mut self, ctx: &mut CcCtx, a: f32) {
        self.outstanding = false;
        ctx.flow.paused = false;
        if !a.is_finite() {
            // No usable action (NaN): keep the rate.
            self.last_multiplier = 1.0;
            return;
        }
        let a = a as f64;
        let rate = ctx.flow.rate;
        let line = ctx.flow.line_rate;
        let new_rate = match &self.spec.action {
            ActionMap::Multiplier { inc, dec } => {
                let a = a.clamp(-1.0, 1.0);
                let m = if a >= 0.0 { 1.0 + inc * a } else { 1.0 / (1.0 - dec * a) };
                self.last_multiplier = m;
                (rate * m).min(line)
            }
            ActionMap::Aurora { alpha } => {
                let a = a.clamp(-AURORA_ACTION_BOUND, AURORA_ACTION_BOUND);
                let m = if a >= 0.0 { 1.0 + alpha * a } else { 1.0 / (1.0 - alpha * a) };
                self.last_multiplier = m;
                rate * m
            }
            ActionMap::Discrete(table) => {
                let i = (a.round().max(0.0) as usize).min(table.len() - 1);
                self.last_multiplier = table[i];
                (rate * table[i]).min(line)
            }
            ActionMap::Rate => {
                self.last_multiplier = if rate > 0.0 { a.clamp(0.0, 1.0) * line / rate } else { 1.0 };
                a.clamp(0.0, 1.0) * line
            }
            ActionMap::Window { unit } => {
                let per = match unit {
                    WindowUnit::Bytes => 1.0,
                    WindowUnit::Packets => ctx.flow.mtu.max(1) as f64,
                };
                let old = self.cwnd;
                self.set_cwnd(ctx, a.clamp(0.0, 1e15) * per);
                self.last_multiplier = if old > 0.0 { self.cwnd / old } else { 1.0 };
                if let Some(tcp) = &mut self.tcp {
                    tcp.cwnd = self.cwnd;
                }
                return;
            }
            ActionMap::PerAck(table) => {
                let i = (a.round().max(0.0) as usize).min(table.len() - 1);
                self.per_ack = Some(table[i]);
                self.last_multiplier = 1.0;
                return;
            }
            ActionMap::Mvfst => {
                let i = (a.round().max(0.0) as usize).min(mvfst::ACTIONS - 1);
                self.mv_apply(ctx, i);
                return;
            }
        };
        ctx.set_rate(new_rate);
    }
}

impl CongestionControl for AgentCc {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let line = ctx.flow.line_rate;
        ctx.set_rate(line * self.spec.initial_rate);
        if self.spec.action.sets_window() {
            let init = if self.spec.action == ActionMap::Mvfst {
                self.mvfst_initial_window(ctx)
            } else if self.spec.initial_window > 0 {
                self.spec.initial_window as f64
            } else {
                ctx.flow.bdp as f64
            };
            self.set_cwnd(ctx, init);
            if self.spec.newreno {
                self.start_newreno(ctx);
            }
        }
        if self.mv.is_some() {
            self.mv_start(ctx);
        }
        self.reset_mi(ctx.now);
        match self.spec.trigger {
            Trigger::Probe => self.probe(ctx),
            Trigger::Interval(t) => {
                self.period = if self.spec.interval_rtts > 0.0 {
                    ((self.spec.interval_rtts * ctx.flow.base_rtt as f64).round() as Time).max(1)
                } else {
                    t
                };
                ctx.set_timer(next_tick(ctx.now, self.period))
            }
            Trigger::Acks(_) => {}
        }
    }

    fn on_send(&mut self, ctx: &mut CcCtx, bytes: u32) {
        if let Some(tcp) = &mut self.tcp {
            tcp.high_nxt = ctx.flow.snd_nxt;
        }
        self.sent_bytes += bytes as u64;
        self.sent_pkts += 1;
        if self.mv.is_some() {
            self.mv_on_send(ctx, bytes);
        }
        if self.spec.send_ewma {
            if let Some(t) = self.last_send {
                self.send_gap = self.ewma(self.send_gap, (ctx.now - t) as f64);
            }
            self.last_send = Some(ctx.now);
        }
    }

    fn on_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        self.acked_bytes += ack.newly_acked;
        self.acked_pkts += ack.newly_acked.div_ceil(ctx.flow.mtu.max(1) as u64);
        if self.spec.trigger != Trigger::Probe {
            self.rtt_sample(ctx.now, ack.rtt);
        }
        if self.mv.is_some() {
            self.mv_on_ack(ctx, ack.rtt, ack.newly_acked);
        }
        if self.spec.per_event {
            self.rtt_stat.add(ack.rtt as f64);
            self.acked_stat.add(ack.newly_acked as f64);
            if let Some(t) = self.last_ack {
                self.ack_gap = self.ewma(self.ack_gap, (ctx.now - t) as f64);
            }
            self.last_ack = Some(ctx.now);
        }
        if self.tcp.is_some() {
            self.newreno_ack(ctx, ack);
        } else if let Some(rule) = self.per_ack {
            // The rule in force adds its increment on every ACK until the next action.
            let inc = self.rule_increment(ctx, rule);
            self.set_cwnd(ctx, self.cwnd + inc);
        }
        if let Trigger::Acks(n) = self.spec.trigger {
            self.acks_since += 1;
            if self.acks_since >= n {
                self.decide(ctx);
            }
        }
    }

    fn on_nack(&mut self, ctx: &mut CcCtx, _expected: u64, rtt: Time) {
        self.nacks += 1;
        if self.mv.is_some() {
            self.mv_on_loss(ctx, ctx.flow.mtu as f64, false, true);
        }
        // The NACK's RTT sample (interval and ACK triggers): without it, a flow
        // that loses most of its packets in a full queue hears no RTT and keeps
        // judging the path by its last (or base) RTT.
        if self.spec.trigger != Trigger::Probe && rtt > 0 {
            self.rtt_sample(ctx.now, rtt);
        }
        self.reprobe_after_loss(ctx);
    }

    fn on_cnp(&mut self, _ctx: &mut CcCtx) {
        self.cnps += 1;
    }

    fn on_probe(&mut self, ctx: &mut CcCtx, probe: &ProbeEvent) {
        if self.spec.trigger != Trigger::Probe {
            if self.spec.idle_probe {
                self.probe_rtt = Some(probe.rtt);
                self.rtt_sample(ctx.now, probe.rtt);
            }
            return;
        }
        {
            self.probe_rtt = Some(probe.rtt);
            self.rtt_sample(ctx.now, probe.rtt);
            if self.probe_pending {
                self.probe_pending = false;
                self.decide(ctx);
            }
        }
    }

    fn on_timer(&mut self, ctx: &mut CcCtx) {
        if self.spec.trigger == Trigger::Probe {
            if self.probe_pending {
                // The probe (or its reply) is presumed lost: ask again. The loss
                // re-requests do not restart this timeout: in a full queue the NACKs
                // keep coming while every retransmission carrying the probe is
                // dropped, and a timeout restarted by each of them never fires
                // (measured: rlcc-public on 128-to-1 stalled again, 2.1 GB dropped).
                self.probe(ctx);
            }
            return;
        }
        if let Trigger::Interval(_) = self.spec.trigger {
            ctx.set_timer(next_tick(ctx.now, self.period));
            let news = self.rtt_n > 0 || self.sent_pkts > 0 || self.nacks > 0;
            if !news && ctx.flow.is_idle() {
                // Between messages there is nothing to measure or pace: a decision
                // would repeat the last RTT of the previous message (often a full
                // queue) every tick and cut an idle flow's rate for the whole gap.
                // The flow keeps its rate and its next interval starts with its
                // next message.
                if self.spec.idle_probe {
                    self.held += 1;
                    if self.held > self.spec.hold_ticks {
                        self.held = 0;
                        ctx.request_probe();
                    }
                    return;
                }
                self.held = 0;
                self.reset_mi(ctx.now);
                return;
            }
            if !news && self.held < self.spec.hold_ticks {
                self.held += 1;
                return;
            }
            self.held = 0;
            self.decide(ctx);
        }
    }

    fn on_timeout(&mut self, ctx: &mut CcCtx) {
        self.losses += 1;
        if self.mv.is_some() {
            let lost = self.mv_outstanding(ctx);
            self.mv_on_loss(ctx, lost, true, false);
        }
        if self.tcp.is_some() {
            // The window is the response (one segment, slow start); the pacing
            // rate stays where it was.
            self.newreno_timeout(ctx);
            self.reprobe_after_loss(ctx);
            return;
        }
        // A timeout means the flow heard nothing for a whole RTO: whatever rate it
        // holds was chosen blind (an interval agent that sees no ACKs sees no
        // congestion either and climbs to line rate). Restarting every such flow at
        // that rate at once overflows the queue again, so, like TCP's loss window,
        // the flow restarts low and the policy climbs back on fresh feedback.
        // A policy that sets only the window (`window`, `per_ack`, `mvfst`) never
        // sets the rate: a cut here would never be undone (the flow would pace at
        // the NIC's floor for the rest of the run), and a window sender's loss
        // response belongs to its window (`loss_response`).
        if self.spec.timeout_rate < 1.0 && !self.spec.action.sets_window() {
            ctx.set_rate(self.spec.timeout_rate * ctx.flow.line_rate);
        }
        self.reprobe_after_loss(ctx);
    }

    fn on_fast_retransmit(&mut self, ctx: &mut CcCtx) {
        self.losses += 1;
        if self.mv.is_some() {
            self.mv_on_loss(ctx, ctx.flow.mtu as f64, false, false);
        }
        if self.tcp.is_some() {
            self.newreno_fast_retransmit(ctx);
        }
        self.reprobe_after_loss(ctx);
    }
}

/// The first multiple of `period` after `now`.
fn next_tick(now: Time, period: Time) -> Time {
    (now / period + 1) * period
}

/// `loss_response = "newreno"`: TCP NewReno's loss recovery under a window
/// policy. The policy's rule replaces congestion avoidance (and slow start,
/// unless `slow_start`); fast retransmit, fast recovery (window inflation,
/// partial-ACK deflation) and the timeout's one-segment window with slow start
/// back to ssthresh are NewReno's ([`TcpWindow`], shared with the `newreno`
/// algorithm). Without it a window agent on a TCP flow keeps its window
/// through losses, which no TCP sender does (QTCP runs on ns-3's TCP).
impl AgentCc {
    fn start_newreno(&mut self, ctx: &mut CcCtx) {
        let mss = ctx.flow.mtu.max(1) as f64;
        self.tcp = Some(Box::new(TcpWindow {
            mss,
            cwnd: self.cwnd,
            // No slow start unless asked for: the rule drives the window from the start.
            ssthresh: if self.spec.slow_start { f64::INFINITY } else { 0.0 },
            in_recovery: false,
            cwr_end: None,
            high_nxt: ctx.flow.snd_nxt,
            loss_end: None,
            init_cwnd: self.cwnd / mss,
            init_ssthresh: f64::INFINITY,
            limited_transmit: true,
            fast_retransmits: 0,
            timeouts: 0,
            cuts: 0,
            sack: ctx.flow.sack_pipe.is_some(),
        }));
    }

    /// The increment of `rule` for one ACK, in bytes.
    #[inline]
    fn rule_increment(&self, ctx: &CcCtx, rule: PerAck) -> f64 {
        match rule {
            PerAck::Bytes(b) => b,
            PerAck::Reno => {
                let mss = ctx.flow.mtu.max(1) as f64;
                mss * mss / self.cwnd.max(1.0)
            }
        }
    }

    /// Hands NewReno's window to the flow (with the limited-transmit allowance of
    /// `dup_acks`), not below the agent's floor.
    fn newreno_apply(&mut self, ctx: &mut CcCtx, dup_acks: u32) {
        let floor = if self.spec.min_window > 0 { self.spec.min_window } else { ctx.flow.mtu.max(1) as u64 };
        let Some(tcp) = self.tcp.as_mut() else { return };
        tcp.cwnd = tcp.cwnd.max(floor as f64);
        self.cwnd = tcp.cwnd;
        tcp.apply(ctx, dup_acks);
    }

    fn newreno_ack(&mut self, ctx: &mut CcCtx, ack: &AckEvent) {
        let Some(tcp) = self.tcp.as_mut() else { return };
        if tcp.ack(ctx, ack) == AckKind::New {
            if tcp.in_slow_start() {
                tcp.slow_start(ack.newly_acked);
            } else if let Some(rule) = self.per_ack {
                let inc = self.rule_increment(ctx, rule);
                let tcp = self.tcp.as_mut().expect("checked above");
                tcp.cwnd += inc;
                if tcp.cwnd < tcp.ssthresh {
                    // The policy's decrease is its window, not a loss: with ssthresh
                    // left above it, the next ACK would count as slow start and undo
                    // the decrease at once (a window pinned at the ssthresh of the
                    // last recovery, whatever the policy chose).
                    tcp.ssthresh = tcp.cwnd;
                }
            }
        }
        self.newreno_apply(ctx, ack.dup_acks);
    }

    fn newreno_fast_retransmit(&mut self, ctx: &mut CcCtx) {
        let Some(tcp) = self.tcp.as_mut() else { return };
        let ss = (tcp.loss_flight(ctx) * 0.5).max(2.0 * tcp.mss);
        tcp.enter_recovery(ss);
        self.newreno_apply(ctx, 0);
    }

    fn newreno_timeout(&mut self, ctx: &mut CcCtx) {
        let Some(tcp) = self.tcp.as_mut() else { return };
        let ss = (!tcp.already_reduced(ctx)).then(|| (tcp.flight_before_timeout(ctx) * 0.5).max(2.0 * tcp.mss));
        tcp.enter_loss(ctx, ss);
        self.newreno_apply(ctx, 0);
    }

    /// With `loss_response = "newreno"`: (fast retransmits, timeouts) seen.
    pub fn loss_events(&self) -> Option<(u64, u64)> {
        self.tcp.as_ref().map(|t| (t.fast_retransmits, t.timeouts))
    }
}
