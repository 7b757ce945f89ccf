//! The application: when flows start, hand over messages and stop.
//!
//! The workloads are turned into one schedule at build time, sorted by time
//! (a stable sort, so generation order breaks ties), and one `AppData` event
//! walks it: a start runs the CC's `on_start`, a message raises the flow's
//! application limit, a stop caps the flow at what it has sent (what was sent
//! still completes). One pending event, however many flows. A flow of a
//! receiver-driven transport announces each of these to its receiver with a
//! request-to-send (`grants.rs`).

use super::Simulation;
use crate::cc::{CongestionControl, Transport};
use crate::engine::Event;
use crate::workload::UNLIMITED;

/// An item of the application data schedule.
#[derive(Clone, Copy, Debug)]
pub(super) enum AppAction {
    /// The flow starts.
    Start,
    /// The application hands the flow this many more bytes.
    Message(u64),
    /// The application stops offering data.
    Stop,
}

impl Simulation {
    /// The `AppData` event: runs every schedule entry that is due.
    pub(super) fn on_app_data(&mut self) {
        while self.app_next < self.app.len() && self.app[self.app_next].0 <= self.now {
            let (_, fid, action) = self.app[self.app_next];
            self.app_next += 1;
            let f = &mut self.flows[fid as usize];
            match action {
                AppAction::Start => {
                    f.snd.started = true;
                    self.sweep.started(fid);
                    f.mi.start = self.now;
                    f.ctl.app_limit = if f.ctl.size == UNLIMITED {
                        UNLIMITED
                    } else if f.snd.messages.is_empty() {
                        f.ctl.size
                    } else {
                        f.snd.messages[0].1
                    };
                    f.snd.next_avail = self.now as f64;
                    let credit = f.path.transport == Transport::Credit;
                    if f.path.transport == Transport::PHost {
                        // Free tokens and the RTS before the first data.
                        self.phost_start(fid);
                    }
                    if self.flows[fid as usize].path.transport == Transport::Homa {
                        // The unscheduled bytes are granted before the first data.
                        self.homa_start(fid);
                    }
                    if self.flows[fid as usize].path.transport == Transport::Hopass {
                        // Pioneers and the RTS before the first data.
                        self.hopass_start(fid);
                    }
                    if matches!(self.flows[fid as usize].path.transport, Transport::Ndp | Transport::Eqds) {
                        // The initial (or speculative) window before the first data.
                        self.ndp_start(fid);
                    }
                    self.cc_event(fid, |cc, ctx| cc.on_start(ctx));
                    if credit {
                        self.send_rts(fid);
                    }
                }
                AppAction::Message(b) => {
                    f.ctl.app_limit = f.ctl.app_limit.saturating_add(b).min(f.ctl.size);
                    if f.path.transport == Transport::Credit {
                        self.send_rts(fid);
                    }
                    self.schedule_flow(fid);
                }
                AppAction::Stop => {
                    if f.snd.finished.is_none() {
                        // Stop offering data; what was sent still completes.
                        f.ctl.app_limit = f.ctl.app_limit.min(f.ctl.snd_nxt.max(f.snd.max_sent));
                        f.ctl.size = f.ctl.app_limit;
                        f.snd.messages.retain(|m| m.1 <= f.ctl.app_limit);
                        let end = f.ctl.size;
                        // pHost tokens beyond the new end name nothing to send.
                        if let Some(ph) = f.ph.as_deref_mut() {
                            ph.tokens.retain(|t| t.1 < end);
                        }
                        if matches!(f.path.transport, Transport::Credit | Transport::PHost | Transport::Hopass) {
                            // The receiver stops granting beyond the new end.
                            self.send_rts(fid);
                        }
                        self.after_progress(fid);
                    }
                }
            }
        }
        if let Some(&(t, _, _)) = self.app.get(self.app_next) {
            self.events.push(t, Event::AppData);
        }
    }
}
