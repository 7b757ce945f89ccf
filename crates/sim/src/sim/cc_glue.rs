//! CC glue: running a congestion-control callback and applying what it changed.
//!
//! A CC algorithm never touches the NIC. It sees a flow through [`CcCtx`] and
//! acts by writing the flow's [`FlowCtl`](crate::cc::FlowCtl): a rate, a
//! window, a timer deadline, a probe request, a decision request (agent
//! flows). After every callback this module turns those writes into NIC
//! actions, in a fixed order that the golden results depend on:
//!
//! 1. a new rate rescales the pacer's wait for the last packet, so it applies
//!    at once (and wakes a sleeping flow whose rate rose);
//! 2. a new timer deadline arms a `CcTimer` event (older ones go stale by
//!    generation);
//! 3. a decision request goes to the agent bridge, which returns the action
//!    when it is due at once (native policy, or nobody stepping, with no
//!    policy delay); the action is applied and steps 1-3 run again for what
//!    it changed. The bridge never calls back into this module for it, which
//!    is what keeps the decision path a loop here instead of a recursion
//!    through the bridge;
//! 4. a probe the flow cannot carry on a data packet goes alone;
//! 5. the flow is offered to its NIC's scheduler.
//!
//! Step 5 can start a transmission (`try_send`), and a transmission runs the
//! CC's `on_send` and comes back here: that is the one cycle left between the
//! NIC and this module (see `nic.rs`).
//!
//! The congestion signals that only a CC consumes (CNPs, RTT-probe replies,
//! the CC's own timer) are handled here too; ACKs and NACKs also move the
//! transport's sequence state and are handled in `transport.rs`.

use super::Simulation;
use crate::cc::agent::Trigger;
use crate::cc::{Cc, CcCtx, CongestionControl, ProbeEvent};
use crate::engine::Event;
use crate::host::SchedState;
use crate::packet::{PacketKind, PktId};
use crate::units::{Time, SEC};

impl Simulation {
    /// Runs one CC callback on flow `fid` and applies what it changed.
    pub(super) fn cc_event(&mut self, fid: u32, call: impl FnOnce(&mut Cc, &mut CcCtx)) {
        let (old_rate, old_timer) = self.cc_call(fid, call);
        self.after_cc(fid, old_rate, old_timer);
    }

    /// Runs one CC callback on flow `fid`; returns the rate and timer it had
    /// before, for [`Simulation::after_cc`].
    #[inline]
    fn cc_call(&mut self, fid: u32, call: impl FnOnce(&mut Cc, &mut CcCtx)) -> (f64, Option<Time>) {
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        let old = (f.ctl.rate, f.ctl.timer);
        call(&mut f.cc, &mut CcCtx { now, flow: &mut f.ctl });
        old
    }

    /// The CC hears that flow `fid` transmitted a data packet of `bytes` wire
    /// bytes. The most frequent CC event, so the bookkeeping is skipped when
    /// the callback changed nothing.
    #[inline]
    pub(super) fn cc_sent(&mut self, fid: u32, bytes: u32) {
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        let (old_rate, old_timer) = (f.ctl.rate, f.ctl.timer);
        f.cc.on_send(&mut CcCtx { now, flow: &mut f.ctl }, bytes);
        if f.ctl.rate != old_rate || f.ctl.timer != old_timer || f.ctl.probe_requested || f.ctl.decision_due {
            self.after_cc(fid, old_rate, old_timer);
        }
    }

    /// Applies a policy's `action` to agent flow `fid` (and what it changed).
    pub(super) fn apply_action(&mut self, fid: u32, action: f32) {
        self.cc_event(fid, |cc, ctx| {
            if let Cc::Agent(a) = cc {
                a.apply(ctx, action)
            }
        });
    }

    /// Applies what a CC callback changed on flow `fid`, given the rate and
    /// timer from before the callback (steps 1 to 5 of the module doc).
    pub(super) fn after_cc(&mut self, fid: u32, mut old_rate: f64, mut old_timer: Option<Time>) {
        let now = self.now;
        loop {
            let f = &mut self.flows[fid as usize];
            if f.ctl.rate != old_rate {
                // Rescale the wait for the last packet so the new rate applies at once.
                let per_bit = 8.0 * SEC as f64 * f.snd.last_pkt_bytes as f64;
                f.snd.next_avail += per_bit / f.ctl.rate - per_bit / old_rate;
                if f.snd.sched == SchedState::Sleeping && f.ctl.rate > old_rate {
                    f.snd.sched = SchedState::Idle;
                }
            }
            if f.ctl.timer != old_timer || (f.ctl.timer.is_some() && f.snd.timer_at != f.ctl.timer) {
                f.snd.timer_gen = f.snd.timer_gen.wrapping_add(1);
                f.snd.timer_at = f.ctl.timer;
                if let Some(t) = f.ctl.timer {
                    self.events.push(t, Event::CcTimer { flow: fid, generation: f.snd.timer_gen });
                }
            }
            if !f.ctl.decision_due {
                break;
            }
            f.ctl.decision_due = false;
            let Some(action) = self.request_decision(fid) else { break };
            (old_rate, old_timer) = self.cc_call(fid, |cc, ctx| {
                if let Cc::Agent(a) = cc {
                    a.apply(ctx, action)
                }
            });
        }
        let f = &mut self.flows[fid as usize];
        if f.ctl.probe_requested && !f.can_send(self.max_outstanding) && f.snd.started && f.snd.finished.is_none() {
            f.ctl.probe_requested = false;
            let (src, dst) = (f.path.src, f.path.dst);
            let size = self.scenario.packets.probe;
            let p = self.control_packet(fid, PacketKind::Probe, src, dst, size, 0);
            self.pool.get_mut(p).ts_tx = now;
            self.send_control(src, p);
        }
        self.schedule_flow(fid);
    }

    /// The `CcTimer` event: the flow's CC timer fires unless it was re-armed
    /// or cancelled since (a newer generation) or the flow is finished.
    pub(super) fn on_cc_timer(&mut self, fid: u32, generation: u32) {
        if self.now >= self.end && self.interval_tick_at_the_end(fid) {
            // The run ends at this tick: a decision asked of a stepping policy
            // now would never act, and the truncated entry that follows at the
            // same instant would cover an empty interval (no state, reward 0).
            // Without it, the truncated entry closes the last real interval.
            // (Queue agents skip their tick at the end likewise.)
            return;
        }
        let f = &mut self.flows[fid as usize];
        if f.snd.timer_gen == generation && f.snd.finished.is_none() {
            f.snd.timer_at = None;
            f.ctl.timer = None;
            self.cc_event(fid, |cc, ctx| cc.on_timer(ctx));
        }
    }

    /// Flow `fid`'s CC is an agent deciding on a fixed grid of ticks whose
    /// decisions a policy stepping from Python answers (not a native one).
    fn interval_tick_at_the_end(&self, fid: u32) -> bool {
        self.python_steps_agents()
            && matches!(&self.flows[fid as usize].cc, Cc::Agent(a) if matches!(a.spec().trigger, Trigger::Interval(_)))
    }

    /// A CNP reached the sender of its flow.
    pub(super) fn on_cnp(&mut self, pid: PktId) {
        let fid = self.pool.get(pid).flow;
        self.pool.free(pid);
        let f = &mut self.flows[fid as usize];
        f.stats.cnps += 1;
        f.mi.cnps += 1;
        self.cc_event(fid, |cc, ctx| cc.on_cnp(ctx));
    }

    /// An RTT-probe reply reached the sender: it closes the monitor interval,
    /// whose counters go to the CC with the RTT.
    pub(super) fn on_probe_reply(&mut self, pid: PktId) {
        let (fid, ts) = {
            let p = self.pool.get(pid);
            (p.flow, p.ts_tx)
        };
        self.pool.free(pid);
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        if f.snd.probing {
            // pFabric probe mode ends: the path works again.
            f.snd.probing = false;
            f.snd.timeouts_in_row = 0;
            f.snd.last_progress = now;
        }
        let ev = ProbeEvent {
            rtt: now - ts,
            bytes_sent: f.mi.bytes,
            packets_sent: f.mi.pkts,
            nacks: f.mi.nacks,
            cnps: f.mi.cnps,
            rate: f.ctl.rate,
            interval: now - f.mi.start,
        };
        f.mi.start = now;
        f.mi.bytes = 0;
        f.mi.pkts = 0;
        f.mi.nacks = 0;
        f.mi.cnps = 0;
        self.cc_event(fid, |cc, ctx| cc.on_probe(ctx, &ev));
    }
}
