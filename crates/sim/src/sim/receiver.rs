//! The receiver: what a host does with the packets that arrive at it.
//!
//! [`Simulation::host_receive`] is a host's demultiplexer. The receiver half
//! of a flow handles what the sender sent: data (ACK, NACK, CNP, probe reply)
//! and stand-alone RTT probes (a probe reply). Feedback for the host's own
//! sending flows goes to their sender half: ACKs and NACKs to the transport
//! (`transport.rs`), CNPs and probe replies to the CC (`cc_glue.rs`); PFC
//! frames to the link (`link.rs`).
//!
//! The receiver acknowledges cumulatively, one ACK per `host.ack_every`
//! in-order packets and always at the end of a flow or message, for a packet
//! that fills a hole or carries a probe. An ACK echoes the data packet's send
//! time, CE mark, hop count and INT records. Out of order, a go-back-N
//! receiver drops the packet and sends a NACK (at most one per
//! `host.nack_interval` for the same expected byte); a TCP receiver keeps the
//! range and answers with a duplicate ACK (with `host.sack`, every ACK of a
//! TCP flow also reports up to 3 held ranges, `crate::sack`). A CE mark makes a go-back-N
//! receiver send a CNP, at most one per flow per `host.cnp_interval` (the
//! DCQCN notification point). Replies go out through the NIC's control queue
//! (`send_control`), ahead of data.
//!
//! Where transports differ (out-of-order data, CNPs) the code matches on the
//! flow's [`Transport`]; the credit transport's receiver behaves as
//! go-back-N here and adds grants (`grants.rs`): a request-to-send arriving
//! at a host goes to its grant scheduler, a grant arriving at the sender
//! opens its credit gate. pHost's receiver half is in `grants.rs` too: it
//! keeps data in any order and acknowledges once, at the end.

use super::Simulation;
use crate::cc::Transport;
use crate::packet::{Packet, PacketKind, PktId};

impl Simulation {
    /// Packet `pid` arrived at host `h` through its NIC port `in_port`.
    pub(super) fn host_receive(&mut self, h: u32, in_port: u32, pid: PktId) {
        let kind = self.pool.get(pid).kind;
        match kind {
            PacketKind::Pfc => self.apply_pfc(in_port, pid),
            PacketKind::Data => {
                let size = self.pool.get(pid).size as u64;
                self.cons.delivered_bytes += size;
                let fid = self.pool.get(pid).flow;
                match self.flows[fid as usize].path.transport {
                    Transport::PHost => self.phost_receive_data(h, pid),
                    Transport::Homa => self.homa_receive_data(h, pid),
                    Transport::Hopass => self.hopass_receive_data(h, pid),
                    Transport::Ndp => self.ndp_receive(h, pid, false),
                    Transport::Eqds => self.eqds_receive(h, pid, false),
                    _ => self.receive_data(h, pid),
                }
            }
            PacketKind::Header => self.receive_header(h, pid),
            PacketKind::Probe => self.answer_probe(h, pid),
            PacketKind::Ack => self.on_ack(pid),
            PacketKind::Nack => self.on_nack(pid),
            PacketKind::Cnp => self.on_cnp(pid),
            PacketKind::ProbeReply => self.on_probe_reply(pid),
            PacketKind::Rts => self.on_rts(h, pid),
            PacketKind::Grant => self.on_grant(pid),
            PacketKind::Resend => self.homa_on_resend(pid),
            PacketKind::Busy => self.homa_on_busy(pid),
        }
    }

    /// A header cut from a data packet by a trimming switch reached host `h`:
    /// only NDP's and EQDS's receivers answer it; to any other transport it is
    /// a lost packet.
    #[cold]
    #[inline(never)]
    fn receive_header(&mut self, h: u32, pid: PktId) {
        let fid = self.pool.get(pid).flow;
        match self.flows[fid as usize].path.transport {
            Transport::Ndp => self.ndp_receive(h, pid, true),
            Transport::Eqds => self.eqds_receive(h, pid, true),
            _ => self.pool.free(pid),
        }
    }

    /// A stand-alone RTT probe reached host `h`: answer with a probe reply
    /// that echoes its send time.
    fn answer_probe(&mut self, h: u32, pid: PktId) {
        let (fid, ts) = {
            let p = self.pool.get(pid);
            (p.flow, p.ts_tx)
        };
        // A stand-alone probe goes from its flow's sender (`cc_glue::after_cc`).
        let src = self.flows[fid as usize].path.src;
        self.pool.free(pid);
        let size = self.scenario.packets.probe;
        let r = self.control_packet(fid, PacketKind::ProbeReply, h, src, size, 0);
        self.pool.get_mut(r).ts_tx = ts;
        self.send_control(h, r);
    }

    /// A data packet of its flow reached the receiving host `h`.
    #[inline(always)]
    fn receive_data(&mut self, h: u32, pid: PktId) {
        let (fid, seq, payload, ce, probe, ts, hops, n_int, pint) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.payload as u64, p.ce, p.probe(), p.ts_tx, p.hops, p.n_int, p.pint)
        };
        let pk = self.scenario.packets.clone();
        let host_cfg = &self.scenario.host;
        let (ack_every, cnp_interval, nack_interval) =
            (host_cfg.ack_every.max(1), host_cfg.cnp_interval.0, host_cfg.nack_interval.0);
        let now = self.now;
        if self.in_window {
            if let Some(h) = &mut self.one_way_delay {
                h.add(now.saturating_sub(ts));
            }
        }
        let f = &mut self.flows[fid as usize];
        let src = f.path.src;
        let transport = f.path.transport;
        let mut send_ack = false;
        let mut send_nack = None;
        if seq == f.rcv.rcv_nxt {
            f.rcv.rcv_nxt += payload;
            f.rcv.unacked_pkts += 1;
            let mut filled = false;
            while let Some(&(a, b)) = f.rcv.ooo.first() {
                if a > f.rcv.rcv_nxt {
                    break;
                }
                f.rcv.rcv_nxt = f.rcv.rcv_nxt.max(b);
                f.rcv.ooo.remove(0);
                filled = true;
            }
            // The receiving application knows where its messages end.
            let msg_end = f.snd.messages.iter().any(|m| m.1 == f.rcv.rcv_nxt);
            send_ack = f.rcv.unacked_pkts >= ack_every || f.rcv.rcv_nxt == f.ctl.size || msg_end || probe || filled;
        } else if seq > f.rcv.rcv_nxt {
            // Out of order: what to do is the transport's receiver half.
            match transport {
                Transport::Tcp | Transport::PFabric => {
                    // Keep the segment and answer with a duplicate ACK at once.
                    insert_range(&mut f.rcv.ooo, seq, seq + payload);
                    send_ack = true;
                }
                Transport::GoBackN
                | Transport::Credit
                | Transport::PHost
                | Transport::Homa
                | Transport::Hopass
                | Transport::Ndp
                | Transport::Eqds => {
                    let expected = f.rcv.rcv_nxt;
                    let recent = matches!(f.rcv.last_nack, Some((t, s)) if s == expected && now < t + nack_interval);
                    if !recent {
                        f.rcv.last_nack = Some((now, expected));
                        send_nack = Some(expected);
                    }
                }
            }
        } else {
            // A duplicate after go-back-N: re-acknowledge so the sender catches up.
            send_ack = true;
        }
        // TCP receivers send no CNPs; evaluated only for CE-marked packets.
        let send_cnp = ce
            && matches!(transport, Transport::GoBackN | Transport::Credit)
            && cnp_interval > 0
            && f.rcv.last_cnp.is_none_or(|t| now >= t + cnp_interval);
        if send_cnp {
            f.rcv.last_cnp = Some(now);
        }
        let rcv_nxt = f.rcv.rcv_nxt;
        // pFabric's SACK, reduced to what its sender uses: how many bytes
        // beyond the cumulative ACK have arrived (they lower its rank).
        let sacked = if transport == Transport::PFabric { f.rcv.ooo.iter().map(|&(a, b)| b - a).sum() } else { 0 };
        // A SACK flow's ACK reports the out-of-order ranges held (RFC 2018).
        let sack_blocks =
            (send_ack && f.ctl.sack_pipe.is_some()).then(|| crate::sack::receiver_blocks(&f.rcv.ooo, seq));
        if send_ack {
            f.rcv.unacked_pkts = 0;
            let a = self.control_packet(fid, PacketKind::Ack, h, src, pk.ack, rcv_nxt);
            let p = self.pool.get_mut(a);
            p.flags = Packet::flag_if(Packet::FLAG_ECN_ECHO, ce) | Packet::flag_if(Packet::FLAG_PROBE, probe);
            p.ts_tx = ts;
            p.hops = hops;
            p.pint = pint;
            p.payload = sacked.min(u32::MAX as u64) as u32;
            if n_int > 0 {
                self.pool.move_int(pid, a);
            }
            if let Some(blocks) = sack_blocks {
                self.pool.set_sack(a, blocks);
            }
            self.send_control(h, a);
        }
        if let Some(expected) = send_nack {
            let n = self.control_packet(fid, PacketKind::Nack, h, src, pk.nack, expected);
            // The NACK echoes the timestamp of the packet that revealed the gap,
            // as an ACK would (an RTT sample through the same queues).
            self.pool.get_mut(n).ts_tx = ts;
            self.send_control(h, n);
        }
        if send_cnp {
            let c = self.control_packet(fid, PacketKind::Cnp, h, src, pk.cnp, 0);
            self.send_control(h, c);
        }
        if probe {
            let r = self.control_packet(fid, PacketKind::ProbeReply, h, src, pk.probe, 0);
            self.pool.get_mut(r).ts_tx = ts;
            self.send_control(h, r);
        }
        self.pool.free(pid);
    }
}

/// Takes the bytes [seq, end) into a receiver that keeps out-of-order data
/// (pHost's, Homa's and HOPASS's): advances `rcv_nxt` over them and over the
/// held ranges they join, or holds them as a range of their own. False if
/// every byte was already there (a duplicate).
pub(super) fn accept_range(r: &mut crate::flow::Receiver, seq: u64, end: u64) -> bool {
    take_range(&mut r.rcv_nxt, &mut r.ooo, seq, end)
}

/// Takes [seq, end) into a cumulative point `next` and the sorted ranges
/// `held` beyond it: advances `next` over them and over the held ranges they
/// join, or holds them as a range of their own. False for a duplicate. (A
/// receiver's `rcv_nxt`, or an NDP sender's `snd_una` and the packets its
/// ACKs named out of order.)
pub(super) fn take_range(next: &mut u64, held: &mut Vec<(u64, u64)>, seq: u64, end: u64) -> bool {
    if end <= *next {
        false
    } else if seq <= *next {
        *next = end;
        while let Some(&(a, b)) = held.first() {
            if a > *next {
                break;
            }
            *next = (*next).max(b);
            held.remove(0);
        }
        true
    } else if held.iter().any(|&(a, b)| a <= seq && end <= b) {
        false
    } else {
        insert_range(held, seq, end);
        true
    }
}

/// Adds [a, b) to a sorted list of disjoint ranges, merging neighbours.
pub(super) fn insert_range(ranges: &mut Vec<(u64, u64)>, a: u64, b: u64) {
    let i = ranges.partition_point(|r| r.1 < a);
    let mut lo = a;
    let mut hi = b;
    let mut j = i;
    while j < ranges.len() && ranges[j].0 <= hi {
        lo = lo.min(ranges[j].0);
        hi = hi.max(ranges[j].1);
        j += 1;
    }
    ranges.splice(i..j, [(lo, hi)]);
}
