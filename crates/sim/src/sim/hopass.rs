//! HOPASS's fast layer (`Transport::Hopass`; Lei et al., JNCA 2021; spec
//! `learning_cc.md` 6.4 with 6.4b's facts from the paper overriding the [X]
//! choices): receiver-driven tokens per traffic class, on the receiver-driven
//! seam of `grants.rs` (request-to-send, one grant scheduler and one
//! `RecvWake` per host) and with pHost's token machinery (`Flow::ph`: a token
//! names one packet, the receiver cycles through the packets still missing,
//! re-asks after a resend timeout, skips a flow with too many tokens
//! outstanding, acknowledges once at the end).
//!
//! * **Sender.** At its start a flow sends an RTS (carrying its size and,
//!   through the flow, its class) and up to one BDP of *pioneer* packets
//!   (`host.hopass_pioneers`, default one BDP of its path) at line rate
//!   without tokens; afterwards one packet per token. Tokens do not expire
//!   (the paper has no expiry; the outstanding-token window bounds what a
//!   sender can hold). Pioneers travel like scheduled data: in the flow's
//!   class queue at priority 0. The paper's switches have one FIFO per class
//!   and no lower level to demote them to, and a demoted pioneer would delay
//!   exactly the small flows that pioneers exist to finish in one RTT.
//! * **Receiver.** Its pending flows form two queues: *small* (size at most
//!   `host.hopass_small_threshold`, 100 KB), served smallest remaining bytes
//!   first, and *large*, served by the smallest score OPT / (t_wait + theta)
//!   ([`large_flow_score`]: OPT the flow's ideal completion time alone in the
//!   network, t_wait the time since its RTS arrived, theta
//!   `host.hopass_theta`, 100 us). The receiver sends one token per packet
//!   time at `hopass_headroom` (0.95) of its downlink and picks the queue by
//!   WRR (`hopass_wrr_small` : `hopass_wrr_large`, 2 : 1): a kind with no
//!   eligible flow gives its slot to the other, so a kind alone gets every
//!   slot. A large flow is eligible only when its class's token rate allows
//!   (a per-(receiver, class) pacer at R_k); small flows are paced by the
//!   receiver's budget only. Among the classes with an eligible large flow,
//!   the large queue's token goes by start-time fair queueing weighted by
//!   the class weights, then to the class's smallest score: when the
//!   receiver's own downlink is the bottleneck (its tokens build no queue,
//!   so no mark comes) the classes share its budget by weight, and the score
//!   orders flows within a class.
//! * **Rates.** R_k starts at the budget and follows [`ClassRate`]: per
//!   receiver and class, once per token round trip (estimated from the data's
//!   one-way delay plus half the base RTT, smoothed), F = marked / received
//!   data of the class, alpha <- (1 - g) alpha + g F, and R_k <- R_k max(1 -
//!   alpha / (2 w_k), 0.5) if F > 0 (w_k the class weight normalised so that
//!   the smallest is 1), else R_k + `hopass_increase` x downlink, at most the
//!   budget, at least one increase step.
//! * **Weights.** `host.hopass_weights` (one per data class, default all 1),
//!   changed at run time by [`Simulation::set_hopass_weights`] (the slow
//!   layer, which writes the switches' WRR weights and ECN thresholds with
//!   `set_weights_many` / `set_ecn_many` at the same time).
//! * **Switches** are the ordinary FIFO discipline with one data queue per
//!   class (`switch.queues`), `switch.scheduler = "wrr"` with the class
//!   weights, ECN per queue (`switch.ecn`).
//!
//! The receiver scans its active flows per token, as pHost's does (tens of
//! flows at a receiver; no re-keying when scores change with time).

use super::grants::{next_missing, token_due, TokenDue};
use super::Simulation;
use crate::cc::{large_flow_score, normalised_weights, ClassRate, RateLaw, Transport};
use crate::config::{CfgResult, ConfigError, Scenario};
use crate::host::GrantPolicy;
use crate::packet::PktId;
use crate::units::{Time, SEC};

/// HOPASS's state shared by the receivers: the class weights and, per host,
/// the token rate of each class.
#[derive(Clone, Debug, Default)]
pub(super) struct HopassState {
    /// Class weights, class `c` at `c - 1`.
    weights: Vec<f64>,
    /// The weights normalised so that the smallest is 1.
    norm: Vec<f64>,
    /// Per host (empty when no flow uses HOPASS).
    receivers: Vec<HopassReceiver>,
}

/// One host's HOPASS receiver.
#[derive(Clone, Debug)]
struct HopassReceiver {
    /// Token rate and ECN estimator per class, class `c` at `c - 1`.
    classes: Vec<ClassRate>,
    /// The rate law's constants (the budget follows the host's downlink).
    law: RateLaw,
    /// Position in the small/large WRR cycle: slots below
    /// `hopass_wrr_small` are the small queue's.
    slot: u32,
    /// Start-time fair queueing of the large queue's tokens over the
    /// classes: each class's virtual start tag, class `c` at `c - 1`.
    tags: Vec<f64>,
    /// The virtual time: the start tag of the last class served.
    vtime: f64,
    /// Scratch of one token decision: the best eligible large flow of each
    /// class (score, start, flow), reused so that a token allocates nothing.
    best: Vec<Option<(f64, Time, u32)>>,
}

/// Pioneer packets of a flow of `size` bytes whose path has a BDP of `bdp`
/// bytes: `host.hopass_pioneers`, or one BDP, never more than the flow.
fn pioneers(h: &crate::config::HostConfig, bdp: u64, size: u64, payload: u64) -> u64 {
    let n = h.hopass_pioneers.map_or(bdp.div_ceil(payload), u64::from).min(255);
    size.div_ceil(payload).min(n)
}

/// Checks HOPASS's fields (`host.hopass_*`).
pub(super) fn validate(sc: &Scenario) -> CfgResult<()> {
    let h = &sc.host;
    let err = |name: &str, v: &dyn std::fmt::Display, msg: &str| Err(ConfigError::new(format!("host.{name}"), v, msg));
    if h.hopass_theta.0 == 0 {
        return err("hopass_theta", &"0", "must be a positive time");
    }
    if h.hopass_wrr_small + h.hopass_wrr_large == 0 || h.hopass_wrr_small.max(h.hopass_wrr_large) > 1000 {
        return err(
            "hopass_wrr_small",
            &format!("{}:{}", h.hopass_wrr_small, h.hopass_wrr_large),
            "small and large WRR weights must be from 0 to 1000, not both 0",
        );
    }
    if !(h.hopass_headroom > 0.0 && h.hopass_headroom <= 1.0) {
        return err("hopass_headroom", &h.hopass_headroom, "must be a fraction of the downlink in (0, 1]");
    }
    if !(h.hopass_g > 0.0 && h.hopass_g <= 1.0) {
        return err("hopass_g", &h.hopass_g, "must be in (0, 1]");
    }
    if !(h.hopass_increase > 0.0 && h.hopass_increase <= 1.0) {
        return err("hopass_increase", &h.hopass_increase, "must be a fraction of the downlink in (0, 1]");
    }
    if let Some(n) = h.hopass_pioneers.filter(|&n| n > 255) {
        return err("hopass_pioneers", &n, "must be from 0 to 255 packets");
    }
    if !(1..=200).contains(&h.hopass_window) {
        return err("hopass_window", &h.hopass_window, "must be from 1 to 200 tokens");
    }
    if !(h.hopass_resend_timeout > 0.0 && h.hopass_resend_timeout <= 1e6) {
        return err("hopass_resend_timeout", &h.hopass_resend_timeout, "must be a positive number of packet times");
    }
    let classes = sc.switch.queues.saturating_sub(1) as usize;
    if !h.hopass_weights.is_empty() {
        check_weights(&h.hopass_weights, classes)
            .map_err(|m| ConfigError::new("host.hopass_weights", format!("{:?}", h.hopass_weights), m))?;
    }
    Ok(())
}

/// Checks a list of class weights: one per data class, each positive.
fn check_weights(weights: &[f64], classes: usize) -> Result<(), String> {
    if weights.len() != classes {
        return Err(format!(
            "needs one weight per data class 1 to {classes} (switch.queues - 1), got {}",
            weights.len()
        ));
    }
    if let Some(w) = weights.iter().find(|w| !(w.is_finite() && **w > 0.0)) {
        return Err(format!("weights must be positive numbers, got {w}"));
    }
    Ok(())
}

/// Packets a receiver keeps on a flow's list of losses to ask for again
/// (more are found by the next pass over the holes).
const MAX_LOST: usize = 256;

/// Whether the packet at byte offset `o` has not arrived yet.
fn missing_at(r: &crate::flow::Receiver, o: u64) -> bool {
    o >= r.rcv_nxt && !r.ooo.iter().any(|&(a, b)| a <= o && o < b)
}

impl Simulation {
    /// Sets up HOPASS's class weights and, when a flow uses HOPASS, each
    /// host's class rates at its budget.
    pub(super) fn build_hopass(&mut self) {
        let classes = self.scenario.switch.queues.saturating_sub(1) as usize;
        let h = &self.scenario.host;
        let weights = if h.hopass_weights.is_empty() { vec![1.0; classes] } else { h.hopass_weights.clone() };
        let mut st = HopassState { norm: normalised_weights(&weights), weights, receivers: Vec::new() };
        if self.flows.iter().any(|f| f.path.transport == Transport::Hopass) {
            st.receivers = (0..self.hosts.len())
                .map(|host| {
                    let nic = self.hosts[host].port as usize;
                    let downlink = self.ports[self.ports[nic].peer as usize].rate_bps as f64;
                    let budget = h.hopass_headroom * downlink;
                    let step = h.hopass_increase * downlink;
                    let law = RateLaw { g: h.hopass_g, increase: step, max_rate: budget, min_rate: step.min(budget) };
                    HopassReceiver {
                        classes: vec![ClassRate::new(budget); classes],
                        law,
                        slot: 0,
                        tags: vec![0.0; classes],
                        vtime: 0.0,
                        best: vec![None; classes],
                    }
                })
                .collect();
        }
        self.hopass = st;
    }

    /// Sets the HOPASS class weights of every receiver, one per data class
    /// 1..queues-1, each positive; they take effect at the next back-off.
    /// The slow layer calls it with the switches' WRR weights
    /// (`set_weights_many`) and ECN thresholds (`set_ecn_many`).
    pub fn set_hopass_weights(&mut self, weights: &[f64]) -> Result<(), String> {
        let classes = self.scenario.switch.queues.saturating_sub(1) as usize;
        check_weights(weights, classes)?;
        self.hopass.norm = normalised_weights(weights);
        self.hopass.weights = weights.to_vec();
        Ok(())
    }

    /// The HOPASS class weights in force, class `c` at `c - 1`.
    pub fn hopass_weights(&self) -> &[f64] {
        &self.hopass.weights
    }

    /// The token rate (bit/s) of each class at host `h`'s HOPASS receiver,
    /// class `c` at `c - 1`; `None` if no flow uses HOPASS or there is no
    /// such host.
    pub fn hopass_class_rates(&self, h: u32) -> Option<Vec<f64>> {
        self.hopass.receivers.get(h as usize).map(|r| r.classes.iter().map(|c| c.rate).collect())
    }

    /// The class state (rate, alpha, windows) of class `class` at host `h`'s
    /// HOPASS receiver, if any.
    pub fn hopass_class(&self, h: u32, class: u8) -> Option<&ClassRate> {
        self.hopass.receivers.get(h as usize)?.classes.get((class as usize).checked_sub(1)?)
    }

    /// HOPASS flow `fid` starts: its pioneers (free tokens for its first
    /// packets), then its request-to-send.
    pub(super) fn hopass_start(&mut self, fid: u32) {
        let payload = self.scenario.packets.payload as u64;
        let h = &self.scenario.host;
        let f = &mut self.flows[fid as usize];
        let n = pioneers(h, f.ctl.bdp, f.ctl.size, payload);
        let p = ph!(f);
        p.tokens.clear();
        for i in 0..n {
            p.tokens.push_back((Time::MAX, i * payload, (i + 1) as u8));
        }
        f.hp.as_deref_mut().expect("a HOPASS flow has its receiver state").pioneers = n;
        f.snd.peer_remaining = f.ctl.size;
        f.snd.last_progress = self.now;
        self.send_rts(fid);
    }

    /// The RTS of HOPASS flow `fid` reached its receiver `h`: the flow joins
    /// the token scheduler, its wait starts (a repeated RTS only updates the
    /// size; the RTS of a complete flow gets its ACK again).
    pub(super) fn hopass_on_rts(&mut self, h: u32, fid: u32, announced: u64) {
        let payload = self.scenario.packets.payload as u64;
        let t_pkt = self.downlink_t_pkt(h);
        let resend = (self.scenario.host.hopass_resend_timeout * t_pkt as f64) as Time;
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        if f.received_all() {
            self.final_ack(h, fid, now);
            return;
        }
        f.rcv.requested = announced;
        let hp = f.hp.as_deref_mut().expect("a HOPASS flow has its receiver state");
        if hp.arrived.is_some() || f.rcv.in_grant_queue {
            return;
        }
        hp.arrived = Some(now);
        let free = hp.pioneers;
        let pkts = f.ctl.size.div_ceil(payload);
        let p = ph!(f);
        p.tokens_sent = free;
        p.token_goal = pkts;
        p.last_token_at = now;
        p.token_cursor = free * payload;
        if free == pkts {
            // Every packet was a pioneer: re-ask only after they had time to come.
            p.paused_until = now + free * t_pkt + resend;
        }
        f.rcv.in_grant_queue = true;
        let g = &mut self.hosts[h as usize].grants;
        g.policy = GrantPolicy::Hopass;
        g.waiting.push_back(fid);
        if free > 0 {
            // The downlink carries the pioneers (holds of flows arriving
            // together overlap rather than add, as pHost's).
            g.next_token = g.next_token.max(now + free * t_pkt);
        }
        let t = g.next_token.max(now);
        self.arm_grants(h, t);
    }

    /// Host `h`'s HOPASS scheduler: one token per packet time of its budget,
    /// to the small or the large queue by WRR; or sleep until a flow or a
    /// class becomes eligible.
    pub(super) fn hopass_token_next(&mut self, h: u32) {
        let now = self.now;
        let g = &self.hosts[h as usize].grants;
        if now < g.next_token {
            let t = g.next_token;
            self.arm_grants(h, t);
            return;
        }
        let pk = &self.scenario.packets;
        let (payload, full) = (pk.payload as u64, (pk.payload + pk.header) as u64);
        let t_pkt = self.downlink_t_pkt(h);
        let hc = &self.scenario.host;
        let window = hc.hopass_window as u64;
        let resend = (hc.hopass_resend_timeout * t_pkt as f64) as Time;
        let (small_max, theta) = (hc.hopass_small_threshold.0, hc.hopass_theta.0);
        let (w_small, w_large) = (hc.hopass_wrr_small, hc.hopass_wrr_large);
        let budget_gap = (t_pkt as f64 / hc.hopass_headroom) as Time;
        let HopassState { weights, receivers, .. } = &mut self.hopass;
        let rcv = &mut receivers[h as usize];
        let flows = &mut self.flows;
        let g = &mut self.hosts[h as usize].grants;
        let mut small: Option<(u64, Time, u32)> = None;
        let best = &mut rcv.best;
        let mut wake = Time::MAX;
        g.waiting.retain(|&fid| {
            let f = &mut flows[fid as usize];
            let size = f.ctl.size;
            let missing = match token_due(f, now, payload) {
                TokenDue::Done => return false,
                TokenDue::Paused(until) => {
                    wake = wake.min(until);
                    return true;
                }
                TokenDue::Missing(missing) => missing,
            };
            let p = ph!(f);
            if p.tokens_sent - p.token_seen.min(p.tokens_sent) > window {
                let relax_at = p.last_token_at + resend;
                if now < relax_at {
                    wake = wake.min(relax_at);
                    return true;
                }
                // Skipped long enough: forget the outstanding tokens.
                p.token_seen = p.tokens_sent;
            }
            if size <= small_max {
                let key = (missing, f.path.start, fid);
                if small.is_none_or(|b| key < b) {
                    small = Some(key);
                }
                return true;
            }
            let c = f.path.class as usize - 1;
            let class = &rcv.classes[c];
            if class.next_token > now {
                wake = wake.min(class.next_token);
                return true;
            }
            let arrived = f.hp.as_deref().and_then(|x| x.arrived).unwrap_or(now);
            let score = large_flow_score(f.stats.ideal_fct, now - arrived, theta);
            let better =
                best[c].is_none_or(|(s, start, id)| score < s || (score == s && (f.path.start, fid) < (start, id)));
            if better {
                best[c] = Some((score, f.path.start, fid));
            }
            true
        });
        // The large queue's token goes to the class with the smallest
        // virtual start tag (start-time fair queueing weighted by the class
        // weights: when the receiver's budget binds, the classes share it by
        // weight), and within the class to the smallest score.
        let mut large: Option<(f64, usize, u32)> = None;
        for (c, b) in rcv.best.iter_mut().enumerate() {
            if let Some((_, _, fid)) = b.take() {
                let start = rcv.tags[c].max(rcv.vtime);
                if large.is_none_or(|(s, _, _)| start < s) {
                    large = Some((start, c, fid));
                }
            }
        }
        let small_turn = rcv.slot < w_small;
        let (fid, is_large) = match (small, large) {
            (Some(s), Some(l)) => {
                if small_turn {
                    (s.2, false)
                } else {
                    (l.2, true)
                }
            }
            (Some(s), None) => (s.2, false),
            (None, Some(l)) => (l.2, true),
            (None, None) => {
                if wake != Time::MAX {
                    let t = wake.max(g.next_token);
                    self.arm_grants(h, t);
                }
                return;
            }
        };
        rcv.slot = (rcv.slot + 1) % (w_small + w_large);
        if let (true, Some((start, c, _))) = (is_large, large) {
            rcv.tags[c] = start + 1.0 / weights[c];
            rcv.vtime = start;
        }
        let f = &mut self.flows[fid as usize];
        let size = f.ctl.size;
        let p = f.ph.as_deref_mut().expect("a HOPASS flow has its token state");
        let hp = f.hp.as_deref_mut().expect("a HOPASS flow has its receiver state");
        let class_rtt = rcv.classes[f.path.class as usize - 1].rtt as Time;
        if hp.stalled.0 != f.rcv.rcv_nxt {
            hp.stalled = (f.rcv.rcv_nxt, now, hp.high_end);
        } else if !f.rcv.ooo.is_empty() && now >= hp.stalled.1 + resend.max(2 * class_rtt) {
            // The holes below the mark have outlived a resend timeout (at
            // least two token round trips) since they were asked for: their
            // retransmissions were lost too.
            hp.lost.clear();
            let mark = hp.stalled.2;
            let mut gap = f.rcv.rcv_nxt;
            for &(a, b) in f.rcv.ooo.iter().chain(std::iter::once(&(mark, mark))) {
                let mut o = gap;
                while o < a.min(mark) && hp.lost.len() < MAX_LOST {
                    hp.lost.push_back(o);
                    o += payload;
                }
                gap = b;
                if gap >= mark {
                    break;
                }
            }
            hp.stalled = (f.rcv.rcv_nxt, now, hp.high_end);
        }
        // A packet found lost is named first (one more token than planned);
        // otherwise the next one not yet named, as pHost's.
        let offset = loop {
            match hp.lost.pop_front() {
                Some(o) if missing_at(&f.rcv, o) => {
                    p.token_goal += 1;
                    break o;
                }
                Some(_) => continue,
                None => {
                    let o = next_missing(&f.rcv, p.token_cursor, size);
                    p.token_cursor = o + payload;
                    break o;
                }
            }
        };
        p.tokens_sent += 1;
        p.last_token_at = now;
        if p.tokens_sent == p.token_goal {
            p.paused_until = now + resend;
        }
        let (number, missing, src) = (p.tokens_sent, size.saturating_sub(p.received), f.path.src);
        if is_large {
            let class = &mut rcv.classes[f.path.class as usize - 1];
            let gap = (full as f64 * 8.0 * SEC as f64 / class.rate) as Time;
            class.next_token = class.next_token.max(now) + gap;
        }
        let next = now + budget_gap;
        g.next_token = next;
        if !g.waiting.is_empty() {
            self.arm_grants(h, next);
        }
        self.send_token(h, fid, src, offset, number, missing);
    }

    /// A HOPASS token reached its sender: kept until spent (no expiry).
    pub(super) fn hopass_on_token(&mut self, pid: PktId) {
        let (fid, offset, number, missing) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.payload, p.rank as u64)
        };
        self.pool.free(pid);
        self.keep_token(fid, Time::MAX, offset, number, missing);
    }

    /// A HOPASS data packet reached its receiver `h`: it counts for its
    /// class's ECN window (which may adapt the class's token rate), then is
    /// kept as pHost's data is.
    pub(super) fn hopass_receive_data(&mut self, h: u32, pid: PktId) {
        let (fid, ce, ts, seq, payload) = {
            let p = self.pool.get(pid);
            (p.flow, p.ce, p.ts_tx, p.seq, p.payload as u64)
        };
        let now = self.now;
        let mtu = self.scenario.packets.payload as u64;
        let f = &mut self.flows[fid as usize];
        let hp = f.hp.as_deref_mut().expect("a HOPASS flow has its receiver state");
        if seq > hp.high_end {
            // The packets named before this one and not arrived are lost (a
            // bounded list: the resend timeout catches what it misses).
            let mut o = hp.high_end;
            while o < seq && hp.lost.len() < MAX_LOST {
                hp.lost.push_back(o);
                o += mtu;
            }
        }
        hp.high_end = hp.high_end.max(seq + payload);
        let f = &self.flows[fid as usize];
        let c = f.path.class as usize - 1;
        // The token's round trip: the data's way (measured, queues included)
        // plus about half the base round trip for the token's way.
        let sample = now.saturating_sub(ts) as f64 + f.ctl.base_rtt as f64 / 2.0;
        let weight = self.hopass.norm[c];
        let rcv = &mut self.hopass.receivers[h as usize];
        let law = rcv.law;
        rcv.classes[c].on_data(now, ce, sample, &law, weight);
        self.phost_receive_data(h, pid);
    }
}
