//! CC glue.

use super::Simulation;
use crate::cc::{Cc, CcCtx};
use crate::engine::Event;
use crate::host::SchedState;
use crate::packet::PacketKind;
use crate::units::{Time, SEC};

impl Simulation {
    /// Runs one CC callback on flow `fid` and applies what it changed.
    pub(super) fn cc_event(&mut self, fid: u32, call: impl FnOnce(&mut Cc, &mut CcCtx)) {
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        let old_rate = f.ctl.rate;
        let old_timer = f.ctl.timer;
        let mut ctx = CcCtx { now, flow: &mut f.ctl };
        call(&mut f.cc, &mut ctx);
        self.after_cc(fid, old_rate, old_timer);
    }

    pub(super) fn after_cc(&mut self, fid: u32, old_rate: f64, old_timer: Option<Time>) {
        let now = self.now;
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
        if f.ctl.decision_due {
            f.ctl.decision_due = false;
            self.on_decision(fid);
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
}
