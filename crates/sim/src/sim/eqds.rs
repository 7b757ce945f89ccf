//! EQDS's transport (`Transport::Eqds`; Olteanu et al., NSDI 2022; spec
//! `rule_based_cc.md` 7.4, with the facts of htsim's `eqds.cpp`): the
//! receiver's demand-driven pull pacer. The switches are NDP's trimming
//! switches (`switch.trim`) and the sender shares NDP's machinery
//! (`sim/ndp.rs`: credit from cumulative pull numbers, NACKed packets resent
//! first, one ACK per packet); what differs is when credit comes.
//!
//! * **Sender.** At its start a flow may send its window (`host.eqds_window`,
//!   default one BDP of its path) speculatively, at line rate; the first
//!   feedback of any kind (ACK, NACK or PULL) ends the speculation and any
//!   speculative credit left. From then on it sends one packet per pull.
//!   Every data packet carries the flow's *pull target* (in `rank`): the
//!   highest pull number heard plus the pulls it still wants, `min(backlog,
//!   window)` packets less the credit it holds (htsim's rule, in packets
//!   rather than 512-byte quanta: one pull is one full packet of credit, as
//!   htsim's 4,096-byte pull is about one of its packets).
//! * **Receiver.** It keeps each flow's highest pull target and the pulls
//!   it has issued; a flow with a target above its pulls wants more. A cut
//!   header is NACKed and owes the flow one pull for its resend. The pacer
//!   (one pull per full-packet time at `host.ndp_pull_rate` of the
//!   downlink) serves first, round robin, the flows owed pulls for NACKed
//!   packets, then, round robin, the flows that want more; a pull of either
//!   kind counts against the target. When no flow wants one, it gives
//!   unrequested "slow" pulls, round robin, to the flows whose demand a pull
//!   met (htsim's idle senders), each up to a window beyond its target, as
//!   long as its data has not all arrived (`host.eqds_slow_pulls`). Unlike
//!   NDP, a pull is never carried by an ACK.
//! * **Timeout.** A flow that hears no new ACK for `host.rto` while data is
//!   unacknowledged resends its oldest unacknowledged packet without a pull
//!   (htsim requeues the oldest and asks for credit with an RTS if it has
//!   none).
//!
//! Not modelled (docs/cc.md): htsim's ACK coalescing (every 16 KB unless
//! asked) and SACK bitmaps, per-path penalties after NACKs, and the priority
//! of speculative packets at priority-aware queues.

use super::ndp::unwrap_pull;
use super::Simulation;
use crate::config::{CfgResult, ConfigError, Scenario};
use crate::flow::Flow;
use crate::host::GrantPolicy;
use crate::packet::{PacketKind, PktId};

/// Checks EQDS's field (`host.eqds_window`).
pub(super) fn validate(sc: &Scenario) -> CfgResult<()> {
    if let Some(n) = sc.host.eqds_window.filter(|n| !(1..=1000).contains(n)) {
        return Err(ConfigError::new("host.eqds_window", n, "must be from 1 to 1000 packets"));
    }
    Ok(())
}

/// The pull target EQDS flow `f` declares in a data packet of `payload`
/// bytes at `seq` that it is about to send: the highest pull number heard
/// plus the pulls it still wants (`min(backlog, window)` packets after this
/// one, less the credit it holds).
#[inline]
pub(super) fn pull_target(f: &Flow, seq: u64, payload: u64, mtu: u64) -> u64 {
    let n = f.nd.as_deref().expect("an EQDS flow has its state");
    let nxt = if seq == f.ctl.snd_nxt { seq + payload } else { f.ctl.snd_nxt };
    let backlog = f.ctl.app_limit.saturating_sub(nxt).div_ceil(mtu);
    n.max_pull + backlog.min(n.window as u64).saturating_sub(n.credit())
}

/// EQDS receiver: flow `f` wants a pull (owed for a cut packet, or its
/// target above the pulls issued) and its data has not all arrived.
fn wants_pull(f: &Flow) -> bool {
    let n = f.nd.as_deref().expect("an EQDS flow has its state");
    !f.received_all() && (n.pulls_queued > 0 || n.pull_target > n.pull_no)
}

impl Simulation {
    /// A data packet (`header`: a cut header) of EQDS flow `fid` reached its
    /// receiver `h`: ACK (NACK) it, note the pulls its sender wants, and wake
    /// the pacer if the flow wants any.
    // Out of line: the receiver's demultiplexer stays as small as before EQDS.
    #[inline(never)]
    pub(super) fn eqds_receive(&mut self, h: u32, pid: PktId, header: bool) {
        let (fid, seq, payload, target, ts) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.payload, p.rank, p.ts_tx)
        };
        self.pool.free(pid);
        let f = &mut self.flows[fid as usize];
        if !header {
            super::receiver::accept_range(&mut f.rcv, seq, seq + payload as u64);
        }
        let src = f.path.src;
        let n = nd!(f);
        if header {
            // The cut packet's resend needs a pull of its own.
            n.pulls_queued += 1;
        }
        // A cut header still carries its pull target.
        let target = unwrap_pull(n.pull_target, target);
        self.eqds_on_target(h, fid, target);
        // A pull is never carried by an ACK.
        self.ndp_reply(h, fid, src, header, (seq, payload, ts), 0);
    }

    /// Receiver `h` heard pull target `target` for EQDS flow `fid` (in its
    /// data, or in an RTS): the flow joins the pacer's list if it wants pulls.
    pub(super) fn eqds_on_target(&mut self, h: u32, fid: u32, target: u64) {
        let f = &mut self.flows[fid as usize];
        let n = nd!(f);
        n.pull_target = n.pull_target.max(target);
        if f.received_all() {
            nd!(f).pulls_queued = 0;
        }
        if wants_pull(f) {
            self.join_pull_queue(h, fid, GrantPolicy::Eqds);
        }
    }

    /// EQDS flow `fid` has data it has not sent and no credit to send it (its
    /// speculation ended before its window went out, or it timed out with
    /// nothing in flight): it declares the pulls it wants in an RTS. (htsim
    /// relies on its slow pulls here, which reach only flows a pull has
    /// served before; the RTS also covers a flow that never had one.)
    pub(super) fn eqds_declare(&mut self, fid: u32) {
        let mtu = self.scenario.packets.payload as u64;
        let f = &self.flows[fid as usize];
        let n = f.nd.as_deref().expect("an EQDS flow has its state");
        if f.snd.finished.is_some() || f.ctl.snd_nxt >= f.ctl.app_limit || n.credit() > 0 {
            return;
        }
        let target = pull_target(f, f.ctl.snd_nxt, 0, mtu);
        let (src, dst) = (f.path.src, f.path.dst);
        let size = self.scenario.packets.rts;
        let p = self.control_packet(fid, PacketKind::Rts, src, dst, size, target);
        self.send_control(src, p);
    }

    /// Host `h`'s EQDS pull pacer: one PULL to the first flow in turn owed a
    /// pull for a NACKed packet, else to the first that wants more, else (with
    /// `host.eqds_slow_pulls`) an unrequested one to the first idle flow;
    /// then the next slot one spacing later.
    pub(super) fn eqds_pull_next(&mut self, h: u32) {
        if !self.pull_slot_open(h) {
            return;
        }
        let now = self.now;
        let spacing = self.ndp_pull_spacing(h);
        let slow_pulls = self.scenario.host.eqds_slow_pulls;
        let flows = &mut self.flows;
        let grants = &mut self.hosts[h as usize].grants;
        let (waiting, idle) = (&mut grants.waiting, &mut grants.idle);
        // Flows that want nothing more (complete, or their target reached)
        // leave the list; a later arrival brings them back.
        waiting.retain(|&fid| {
            let f = &mut flows[fid as usize];
            let wants = wants_pull(f);
            if !wants {
                f.rcv.in_grant_queue = false;
            }
            wants
        });
        let owed =
            waiting.iter().position(|&fid| flows[fid as usize].nd.as_deref().is_some_and(|n| n.pulls_queued > 0));
        let (fid, slow) = match owed.or(if waiting.is_empty() { None } else { Some(0) }) {
            Some(i) => {
                let fid = waiting.remove(i).expect("index from the scan");
                // Round robin: the flow served goes to the back.
                waiting.push_back(fid);
                (fid, false)
            }
            // No flow wants a pull: the first idle flow whose data has not
            // all arrived gets one it did not ask for.
            None => loop {
                let Some(fid) = idle.pop_front() else { return };
                let f = &mut flows[fid as usize];
                if !f.received_all() {
                    break (fid, true);
                }
                nd!(f).slow_queued = false;
            },
        };
        let f = &mut flows[fid as usize];
        let src = f.path.src;
        let n = nd!(f);
        n.pulls_queued = n.pulls_queued.saturating_sub(1);
        n.pull_no += 1;
        let met = n.pulls_queued == 0 && n.pull_target <= n.pull_no;
        if slow {
            // Idle flows get at most a window of pulls beyond their target
            // (htsim's limit on this credit), and leave when they want again.
            if met && n.pull_no - n.pull_target < n.window as u64 {
                idle.push_back(fid);
            } else {
                n.slow_queued = false;
            }
        } else if slow_pulls && met && !n.slow_queued {
            // This pull met the flow's demand: it joins the idle flows.
            n.slow_queued = true;
            idle.push_back(fid);
        }
        let number = n.pull_no;
        self.hosts[h as usize].grants.next_token = now + spacing;
        self.arm_grants(h, now + spacing);
        let size = self.scenario.packets.grant;
        let p = self.control_packet(fid, PacketKind::Grant, h, src, size, number);
        self.send_control(h, p);
    }
}
