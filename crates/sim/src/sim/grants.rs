//! The receiver's grant scheduler and the credit gate: the seam that
//! receiver-driven transports (pFabric's hosts, pHost, Homa, HOPASS) plug
//! into.
//!
//! A receiver-driven flow announces its data with a request-to-send
//! (`PacketKind::Rts`, carrying the bytes its application has handed over);
//! the receiving host keeps per-flow receiver state (`Flow::rcv`:
//! `requested`, `granted`) and one [`GrantScheduler`](crate::host::GrantScheduler)
//! per host, woken by one `RecvWake` event per host (as the NIC's
//! `NicWake`), which paces grants (`PacketKind::Grant`: the byte offset the
//! sender may send up to, and a priority for that data) over its flows. The
//! sender records the grant in its credit gate (`Sender::granted`), which
//! [`Flow::can_send`](crate::flow::Flow::can_send) checks for credit-gated
//! transports only, in addition to rate and window.
//!
//! The one receiver-driven transport today is `Transport::Credit`, a minimal
//! transport for tests and teaching (not pHost): the receiver grants one
//! packet per token, round robin over its flows that have bytes left to
//! grant, one token per packet time at its downlink rate (the time the
//! granted packet takes on the host's own link, so grants never ask for more
//! than the downlink carries). A grant's priority is `host.grant_priority`,
//! by default the flow's class priority (`class - 1`, what its data would
//! carry without grants); the sender's data packets carry the priority of
//! the last grant (`make_data`), so the receiver chooses the priority of
//! the data it schedules, as Homa's receivers do. RTS and grants are control packets: they travel in the control
//! queue and are never dropped, so the scheduler needs no loss recovery of
//! its own; lost data is resent below the grant by go-back-N.
//!
//! pHost (`Transport::PHost`, Gao et al., CoNEXT 2015; spec
//! `rule_based_cc.md` 7.2, YAPS's configuration) uses the same structure
//! with its own policy ([`GrantPolicy::PHost`]). A token names one packet
//! (`seq`: its byte offset; `payload`: the token's number; `rank`: the bytes
//! the receiver still misses). With `t_pkt` the time of a full packet on the
//! link in question (`host.phost_*` timers are multiples of it):
//!
//! * the sender sends an RTS at its start and spends free tokens on its first
//!   `phost_free_tokens` packets (every flow, as in the paper; only flows
//!   that fit in them with `phost_free_short_only`, as in YAPS); they
//!   expire `phost_free_tokens + phost_token_ttl` packet times after the
//!   start;
//! * the receiver sends one token per `t_pkt` of its downlink to the
//!   eligible flow with the fewest bytes not yet received (ties: the earlier
//!   start), naming the next packet not yet received after the last one it
//!   named, wrapping to the first hole: tokens re-request lost packets;
//! * a flow is not eligible while more than `phost_window` of its tokens are
//!   outstanding (issued and not seen in data), unless its last token is
//!   `phost_window_timeout` packet times old (the outstanding count then
//!   drops to the window: one probe token, as YAPS relaxes the gap); nor,
//!   once it has had one token per
//!   packet, for `phost_resend_timeout` packet times, after which it gets
//!   tokens for what is still missing; a flow whose RTS shows that all its
//!   packets were free waits `2 x free` packet times;
//! * the RTS of a flow with free tokens makes the receiver hold its tokens
//!   for as many packet times from now, less the part of the last base RTT
//!   (the flow's) in which it sent no token: the free packets meet at the
//!   downlink the data of tokens sent within the last RTT, while tokens sent
//!   now bring data an RTT later, so an idle receiver does not hold at all
//!   (holds of flows arriving together overlap rather than add, since with
//!   small buffers many of those packets are dropped); with
//!   `host.phost_hold = "yaps"`, YAPS's rule instead: the next `free` token
//!   slots pass without a token, each RTS restarting the count;
//! * with no flow eligible, the scheduler sleeps until the earliest time one
//!   becomes eligible: the end of a pause or a downgrade, or the arrival of
//!   data that brings a flow back inside its window (a path whose RTT
//!   exceeds `phost_window` packet times would otherwise stall for the
//!   downgrade at every window);
//! * the sender keeps its tokens in expiry order (a token that arrives while
//!   longer-lived free tokens are held goes before them, as YAPS's heap by
//!   timeout does), discards expired ones and spends the first; the NIC serves flows holding tokens in its order
//!   (`host.scheduler = "srpt"` keys them by the receiver's remaining bytes);
//! * the receiver keeps out-of-order data and sends one ACK, when all data
//!   has arrived; a sender that hears nothing for its timeout (`host.rto`)
//!   resends its RTS, and the RTS of a complete flow is answered with the
//!   ACK again.
//!
//! The receiver scans its active flows for each token (O(flows at the
//! receiver) per token, not per data packet); a receiver rarely has more
//! than tens of active flows, and the scan needs no re-keying when a flow's
//! remaining bytes change at each arrival.

use super::Simulation;
use crate::cc::Transport;
use crate::engine::Event;
use crate::host::GrantPolicy;
use crate::packet::{PacketKind, PktId};
use crate::units::{ser_time, Time};

impl Simulation {
    /// Sends a request-to-send for flow `fid`: its application has handed
    /// over `app_limit` bytes in all (at the start, on each message and when
    /// the application stops, which may lower it).
    pub(super) fn send_rts(&mut self, fid: u32) {
        let f = &self.flows[fid as usize];
        let (src, dst, announced) = (f.path.src, f.path.dst, f.ctl.app_limit);
        let size = self.scenario.packets.rts;
        let p = self.control_packet(fid, PacketKind::Rts, src, dst, size, announced);
        self.send_control(src, p);
    }

    /// A request-to-send reached the receiving host `h`: the flow joins its
    /// grant scheduler if it has bytes left to grant.
    pub(super) fn on_rts(&mut self, h: u32, pid: PktId) {
        let (fid, announced) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq)
        };
        self.pool.free(pid);
        if self.flows[fid as usize].path.transport == Transport::PHost {
            self.phost_downlink_control(h, self.scenario.packets.rts as u64);
            self.phost_on_rts(h, fid, announced);
            return;
        }
        if self.flows[fid as usize].path.transport == Transport::Hopass {
            self.hopass_on_rts(h, fid, announced);
            return;
        }
        if self.flows[fid as usize].path.transport == Transport::Eqds {
            self.eqds_on_target(h, fid, announced);
            return;
        }
        let f = &mut self.flows[fid as usize];
        f.rcv.requested = announced;
        if f.rcv.granted < f.rcv.requested && !f.rcv.in_grant_queue {
            f.rcv.in_grant_queue = true;
            let g = &mut self.hosts[h as usize].grants;
            g.waiting.push_back(fid);
            if g.wake_at == Time::MAX {
                let t = g.next_token.max(self.now);
                self.arm_grants(h, t);
            }
        }
    }

    /// The `RecvWake` event: host `h`'s grant scheduler may send its next
    /// token (stale if it re-armed since).
    pub(super) fn on_recv_wake(&mut self, h: u32) {
        if self.hosts[h as usize].grants.wake_at != self.now {
            return;
        }
        self.hosts[h as usize].grants.wake_at = Time::MAX;
        match self.hosts[h as usize].grants.policy {
            GrantPolicy::RoundRobin => self.grant_next(h),
            GrantPolicy::PHost => self.phost_token_next(h),
            GrantPolicy::Homa => self.homa_schedule(h),
            GrantPolicy::Hopass => self.hopass_token_next(h),
            GrantPolicy::Ndp => self.ndp_pull_next(h),
            GrantPolicy::Eqds => self.eqds_pull_next(h),
        }
    }

    /// Grants one packet to the flow at the front of host `h`'s scheduler and
    /// arms the next token one packet time (at the downlink rate) later.
    fn grant_next(&mut self, h: u32) {
        let mtu = self.scenario.packets.payload as u64;
        let header = self.scenario.packets.header as u64;
        let grant_prio = self.scenario.host.grant_priority;
        let now = self.now;
        while let Some(fid) = self.hosts[h as usize].grants.waiting.pop_front() {
            let f = &mut self.flows[fid as usize];
            let left = f.rcv.requested.saturating_sub(f.rcv.granted);
            if left == 0 {
                // The application stopped below what was granted.
                f.rcv.in_grant_queue = false;
                continue;
            }
            let bytes = left.min(mtu);
            f.rcv.granted += bytes;
            let prio = grant_prio.unwrap_or(f.path.class.saturating_sub(1));
            let (offset, src) = (f.rcv.granted, f.path.src);
            let g = &mut self.hosts[h as usize].grants;
            if offset < f.rcv.requested {
                g.waiting.push_back(fid);
            } else {
                f.rcv.in_grant_queue = false;
            }
            let nic = self.hosts[h as usize].port as usize;
            let downlink = self.ports[self.ports[nic].peer as usize].rate_bps;
            let next = now + ser_time(bytes + header, downlink);
            self.hosts[h as usize].grants.next_token = next;
            if !self.hosts[h as usize].grants.waiting.is_empty() {
                self.arm_grants(h, next);
            }
            let size = self.scenario.packets.grant;
            let p = self.control_packet(fid, PacketKind::Grant, h, src, size, offset);
            self.pool.get_mut(p).grant_prio = prio;
            self.send_control(h, p);
            return;
        }
    }

    /// Makes sure host `h`'s grant scheduler wakes up at `t` (keeps an
    /// earlier wake-up).
    pub(super) fn arm_grants(&mut self, h: u32, t: Time) {
        let g = &mut self.hosts[h as usize].grants;
        if t < g.wake_at {
            g.wake_at = t;
            self.events.push(t, Event::RecvWake { host: h });
        }
    }

    /// A grant reached the sender of its flow: the credit gate opens up to
    /// its offset (grants of one flow travel one path in order, but a stale
    /// one never closes the gate).
    pub(super) fn on_grant(&mut self, pid: PktId) {
        let (fid, offset, prio) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.grant_prio)
        };
        if self.flows[fid as usize].path.transport == Transport::PHost {
            self.phost_on_token(pid);
            return;
        }
        if self.flows[fid as usize].path.transport == Transport::Homa {
            self.homa_on_grant(pid);
            return;
        }
        if self.flows[fid as usize].path.transport == Transport::Hopass {
            self.hopass_on_token(pid);
            return;
        }
        if matches!(self.flows[fid as usize].path.transport, Transport::Ndp | Transport::Eqds) {
            self.ndp_on_pull(pid);
            return;
        }
        self.pool.free(pid);
        let f = &mut self.flows[fid as usize];
        f.snd.granted = f.snd.granted.max(offset);
        f.snd.grant_prio = prio;
        self.schedule_flow(fid);
    }
}

// ---- pHost

/// pHost: how many of a flow's first packets its free tokens cover.
pub(super) fn phost_free_packets(h: &crate::config::HostConfig, size: u64, payload: u64) -> u64 {
    let pkts = size.div_ceil(payload);
    let free = h.phost_free_tokens as u64;
    if h.phost_free_short_only && pkts > free {
        0
    } else {
        pkts.min(free)
    }
}

/// pHost: the data priority of a flow of `size` bytes (0 most urgent):
/// short flows above long ones with three levels, one data level otherwise.
pub(super) fn phost_data_prio(h: &crate::config::HostConfig, size: u64, payload: u64) -> u8 {
    u8::from(h.phost_third_level && size.div_ceil(payload) > h.phost_prio_threshold as u64)
}

impl Simulation {
    /// A full packet's time at the rate of host `h`'s downlink (the
    /// receiver's pHost time unit).
    pub(super) fn downlink_t_pkt(&self, h: u32) -> Time {
        let full = (self.scenario.packets.payload + self.scenario.packets.header) as u64;
        let nic = self.hosts[h as usize].port as usize;
        ser_time(full, self.ports[self.ports[nic].peer as usize].rate_bps)
    }

    /// A full packet's time at flow `fid`'s line rate (the sender's pHost
    /// time unit).
    fn sender_t_pkt(&self, fid: u32) -> Time {
        let full = (self.scenario.packets.payload + self.scenario.packets.header) as u64;
        ser_time(full, self.flows[fid as usize].ctl.line_rate as u64)
    }

    /// A pHost control packet of `bytes` bytes (a token or an RTS) arrived
    /// at host `h`: its downlink carried it in time the receiver's token
    /// clock counted as free for data, so the next token waits that much
    /// longer (only while tokens are being paced: an idle downlink had room).
    fn phost_downlink_control(&mut self, h: u32, bytes: u64) {
        if !self.scenario.host.phost_count_control {
            return;
        }
        let g = &self.hosts[h as usize].grants;
        if g.policy != GrantPolicy::PHost || g.next_token <= self.now {
            return;
        }
        let nic = self.hosts[h as usize].port as usize;
        let t = ser_time(bytes, self.ports[self.ports[nic].peer as usize].rate_bps);
        self.hosts[h as usize].grants.next_token += t;
    }

    /// pHost flow `fid` starts: its free tokens, then its request-to-send.
    pub(super) fn phost_start(&mut self, fid: u32) {
        let payload = self.scenario.packets.payload as u64;
        let t_pkt = self.sender_t_pkt(fid);
        let h = &self.scenario.host;
        let f = &mut self.flows[fid as usize];
        let free = phost_free_packets(h, f.ctl.size, payload);
        let expiry = self.now + ((free as f64 + h.phost_token_ttl) * t_pkt as f64) as Time;
        ph!(f).tokens.clear();
        for i in 0..free {
            ph!(f).tokens.push_back((expiry, i * payload, (i + 1) as u8));
        }
        f.snd.peer_remaining = f.ctl.size;
        f.snd.last_progress = self.now;
        self.send_rts(fid);
    }

    /// The RTS of pHost flow `fid` reached its receiver `h`: the flow joins
    /// the token scheduler (a repeated RTS only updates the size; the RTS of
    /// a complete flow gets its ACK again: the first one may have been lost).
    fn phost_on_rts(&mut self, h: u32, fid: u32, announced: u64) {
        let payload = self.scenario.packets.payload as u64;
        let t_pkt = self.downlink_t_pkt(h);
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        if f.received_all() {
            self.final_ack(h, fid, now);
            return;
        }
        let first = f.rcv.requested == 0 && ph!(f).tokens_sent == 0;
        f.rcv.requested = announced;
        if !first || f.rcv.in_grant_queue {
            return;
        }
        let free = phost_free_packets(&self.scenario.host, f.ctl.size, payload);
        let pkts = f.ctl.size.div_ceil(payload);
        let base_rtt = f.ctl.base_rtt;
        ph!(f).tokens_sent = free;
        ph!(f).token_goal = pkts;
        ph!(f).last_token_at = now;
        ph!(f).token_cursor = free * payload;
        if free == pkts {
            // Every packet was free: treated as fully tokened.
            ph!(f).paused_until = now + 2 * free * t_pkt;
        }
        f.rcv.in_grant_queue = true;
        let g = &mut self.hosts[h as usize].grants;
        g.policy = GrantPolicy::PHost;
        g.waiting.push_back(fid);
        // The free packets meet at the downlink the data of the tokens
        // issued within the last base RTT; tokens issued from now on bring
        // data a base RTT from now. So the hold covers the free packets'
        // time minus the part of the last base RTT in which no token went
        // out: a receiver idle for a base RTT does not hold (holds of flows
        // arriving together overlap rather than add: with small buffers
        // many of those packets are dropped).
        if self.scenario.host.phost_hold == "yaps" {
            // YAPS: the next `free` token slots pass without a token, from
            // this RTS on, whatever hold was running.
            g.hold_slots = free;
        } else {
            let idle = now.saturating_sub(g.next_token.saturating_sub(t_pkt));
            let hold = (free * t_pkt).saturating_sub(idle.min(base_rtt));
            if hold > 0 {
                g.next_token = g.next_token.max(now + hold);
            }
        }
        let t = g.next_token.max(now);
        self.arm_grants(h, t);
    }

    /// Host `h`'s pHost scheduler: one token to the best eligible flow, then
    /// the next token one packet time later; or sleep until a flow becomes
    /// eligible.
    fn phost_token_next(&mut self, h: u32) {
        let now = self.now;
        let g = &self.hosts[h as usize].grants;
        if now < g.next_token {
            let t = g.next_token;
            self.arm_grants(h, t);
            return;
        }
        let payload = self.scenario.packets.payload as u64;
        let t_pkt = self.downlink_t_pkt(h);
        let g = &mut self.hosts[h as usize].grants;
        if g.hold_slots > 0 {
            // A slot of an RTS's hold (`host.phost_hold = "yaps"`).
            g.hold_slots -= 1;
            g.next_token = now + t_pkt;
            self.arm_grants(h, now + t_pkt);
            return;
        }
        let hc = &self.scenario.host;
        let window = hc.phost_window as u64;
        let window_timeout = (hc.phost_window_timeout * t_pkt as f64) as Time;
        let resend_timeout = (hc.phost_resend_timeout * t_pkt as f64) as Time;
        let flows = &mut self.flows;
        let g = &mut self.hosts[h as usize].grants;
        let mut best: Option<(u64, Time, u32)> = None;
        let mut wake = Time::MAX;
        g.waiting.retain(|&fid| {
            let f = &mut flows[fid as usize];
            let missing = match token_due(f, now, payload) {
                TokenDue::Done => return false,
                TokenDue::Paused(until) => {
                    wake = wake.min(until);
                    return true;
                }
                TokenDue::Missing(missing) => missing,
            };
            if ph!(f).tokens_sent - ph!(f).token_seen.min(ph!(f).tokens_sent) > window {
                let relax_at = ph!(f).last_token_at + window_timeout;
                if now < relax_at {
                    wake = wake.min(relax_at);
                    return true;
                }
                // Downgrade over: one more token probes the sender (YAPS's
                // relax: the outstanding count drops to the window, not to
                // zero, so a sender still busy elsewhere wastes one token per
                // timeout rather than a window of them).
                ph!(f).token_seen = ph!(f).tokens_sent - window;
            }
            let key = (missing, f.path.start, fid);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
            true
        });
        let Some((missing, _, fid)) = best else {
            if wake != Time::MAX {
                let t = wake.max(g.next_token);
                self.arm_grants(h, t);
            }
            return;
        };
        let f = &mut self.flows[fid as usize];
        let offset = next_missing(&f.rcv, ph!(f).token_cursor, f.ctl.size);
        ph!(f).token_cursor = offset + payload;
        ph!(f).tokens_sent += 1;
        ph!(f).last_token_at = now;
        if ph!(f).tokens_sent == ph!(f).token_goal {
            ph!(f).paused_until = now + resend_timeout;
        }
        let (number, src) = (ph!(f).tokens_sent, f.path.src);
        let next = now + t_pkt;
        let g = &mut self.hosts[h as usize].grants;
        g.next_token = next;
        if !g.waiting.is_empty() {
            self.arm_grants(h, next);
        }
        self.send_token(h, fid, src, offset, number, missing);
    }

    /// Receiver `h` sends flow `fid`'s sender (host `src`) token `number`
    /// for the packet at `offset`; `missing`: the bytes it still misses.
    pub(super) fn send_token(&mut self, h: u32, fid: u32, src: u32, offset: u64, number: u64, missing: u64) {
        let size = self.scenario.packets.grant;
        let p = self.control_packet(fid, PacketKind::Grant, h, src, size, offset);
        let pk = self.pool.get_mut(p);
        pk.payload = number as u32;
        pk.rank = missing.min(u32::MAX as u64) as u32;
        self.send_control(h, p);
    }

    /// A pHost token reached its sender: kept until it expires.
    fn phost_on_token(&mut self, pid: PktId) {
        let (fid, offset, number, missing) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.payload, p.rank as u64)
        };
        let size = self.pool.get(pid).size as u64;
        self.pool.free(pid);
        let src = self.flows[fid as usize].path.src;
        self.phost_downlink_control(src, size);
        let ttl = (self.scenario.host.phost_token_ttl * self.sender_t_pkt(fid) as f64) as Time;
        self.keep_token(fid, self.now + ttl, offset, number, missing);
    }

    /// The sender of flow `fid` keeps a token until `expiry` (`Time::MAX`:
    /// never), in expiry order: a token that arrives while free tokens
    /// (which live longer) are still held is spent before them.
    pub(super) fn keep_token(&mut self, fid: u32, expiry: Time, offset: u64, number: u32, missing: u64) {
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        if f.snd.finished.is_some() {
            return;
        }
        let tokens = &mut ph!(f).tokens;
        let at = tokens.partition_point(|t| t.0 <= expiry);
        tokens.insert(at, (expiry, offset, number as u8));
        f.snd.peer_remaining = missing;
        f.snd.last_progress = now;
        self.schedule_flow(fid);
    }

    /// A pHost data packet reached its receiver `h`: kept whatever its
    /// order, its token noted; the ACK goes when all data has arrived.
    pub(super) fn phost_receive_data(&mut self, h: u32, pid: PktId) {
        let (fid, seq, payload, token, ts) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.payload as u64, p.token, p.ts_tx)
        };
        self.pool.free(pid);
        let f = &mut self.flows[fid as usize];
        let r = &mut f.rcv;
        let new = super::receiver::accept_range(r, seq, seq + payload);
        // The latest token issued whose number has these low bits: tokens
        // are spent within their lifetime, far fewer than 256 tokens later.
        let back = (ph!(f).tokens_sent as u8).wrapping_sub(token) as u64;
        let seen = ph!(f).tokens_sent.saturating_sub(back);
        let window_moved = seen > ph!(f).token_seen;
        ph!(f).token_seen = ph!(f).token_seen.max(seen);
        if new {
            ph!(f).received += payload;
            if r.rcv_nxt >= f.ctl.size {
                self.final_ack(h, fid, ts);
                return;
            }
        }
        if window_moved && f.rcv.in_grant_queue {
            // The flow may be back inside its token window: a scheduler
            // asleep until a downgrade ends wakes at its next token slot.
            let t = self.hosts[h as usize].grants.next_token.max(self.now);
            self.arm_grants(h, t);
        }
    }

    /// The ACK that ends a flow whose receiver acknowledges once (pHost,
    /// Homa, HOPASS): everything has arrived.
    pub(super) fn final_ack(&mut self, h: u32, fid: u32, ts: Time) {
        let f = &self.flows[fid as usize];
        let (src, rcv_nxt) = (f.path.src, f.rcv.rcv_nxt);
        let size = self.scenario.packets.ack;
        let a = self.control_packet(fid, PacketKind::Ack, h, src, size, rcv_nxt);
        self.pool.get_mut(a).ts_tx = ts;
        self.send_control(h, a);
    }
}

/// Where a flow stands in a receiver's token scan (pHost and HOPASS).
pub(super) enum TokenDue {
    /// Every byte has arrived: the flow leaves the waiting list.
    Done,
    /// Every token it was due is out and its resend timeout runs until then.
    Paused(Time),
    /// It may be given a token; the bytes it still misses.
    Missing(u64),
}

/// The first steps of a receiver's token scan for flow `f` at `now`: a flow whose bytes have all
/// arrived is done; a flow that has had every token it was due waits for its resend timeout and
/// is then owed tokens again for what is still missing (`payload` bytes per token).
#[inline]
pub(super) fn token_due(f: &mut crate::flow::Flow, now: Time, payload: u64) -> TokenDue {
    let size = f.ctl.size;
    if f.rcv.rcv_nxt >= size {
        f.rcv.in_grant_queue = false;
        return TokenDue::Done;
    }
    let p = ph!(f);
    let missing = size.saturating_sub(p.received);
    if p.tokens_sent >= p.token_goal {
        if p.paused_until > now {
            return TokenDue::Paused(p.paused_until);
        }
        p.token_goal = p.tokens_sent + missing.div_ceil(payload);
    }
    TokenDue::Missing(missing)
}

/// The byte offset of the next packet not yet received at or after
/// `cursor`, wrapping to the first hole past the end (the flow is incomplete,
/// so `rcv_nxt` is a hole).
pub(super) fn next_missing(r: &crate::flow::Receiver, cursor: u64, size: u64) -> u64 {
    let mut c = cursor.max(r.rcv_nxt);
    for &(a, b) in &r.ooo {
        if b <= c {
            continue;
        }
        if a > c {
            break;
        }
        c = b;
    }
    if c >= size {
        r.rcv_nxt
    } else {
        c
    }
}
