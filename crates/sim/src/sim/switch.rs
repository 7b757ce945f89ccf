//! The switch datapath: forwarding, buffer admission, ECN marking, queueing,
//! scheduling and INT.
//!
//! A switch is a set of output-queued ports plus one memory manager for the
//! whole switch (`net/switch.rs`: shared buffer with dynamic thresholds, PFC
//! accounting per ingress port and class). An arriving packet
//! ([`Simulation::switch_receive`]) is routed by ECMP over the precomputed
//! equal-cost next hops (a per-flow hash, a second hash for the reverse
//! direction), admitted or dropped by the memory manager (control packets
//! in queue 0 bypass admission), ECN-marked at enqueue if so configured, and
//! appended to its class's queue of the egress port; an admission that
//! crosses the XOFF threshold sends a pause frame upstream. When the port can
//! transmit ([`Simulation::switch_try_send`]) its scheduler picks a queue
//! (`net/port.rs`), the packet is ECN-marked at dequeue if so configured,
//! gets an INT record if its flow asked for one, releases its buffer charge
//! (which may send the XON) and goes to the wire.
//!
//! The port's [`Discipline`] decides which queue a data packet joins and
//! which packet leaves next: FIFO queues per class under the port's
//! scheduler (default), strict priority by the packet's `prio`, or one rank
//! queue (pFabric) that admits by its own byte capacity and evicts the least
//! urgent packet when full; evicted packets are dropped like refused ones
//! (port and queue counters, conservation). The switch's buffer model
//! (`net/buffer.rs`: shared with dynamic thresholds, or static per queue)
//! admits FIFO and priority queues; a rank port only charges it. Every
//! departure or eviction updates its queue's interval counters
//! ([`QueueCounters`](crate::net::port::QueueCounters)).

use super::metrics::Conservation;
use super::Simulation;
use crate::net::buffer::BufferModel;
use crate::net::port::{Discipline, Port, PortStats};
use crate::net::rank_queue::{RankAdmit, RankedPkt};
use crate::net::switch::Admit;
use crate::packet::{IntHop, Packet, PacketKind, PacketPool, PktId};
use crate::topology::{ecmp_index, spray_hash};
use crate::units::Time;

/// Counts a dropped packet of `size` bytes on a port.
#[inline]
fn count_drop(st: &mut PortStats, size: u64, in_window: bool) {
    st.drops += 1;
    st.drop_bytes += size;
    if in_window {
        st.win_drops += 1;
        st.win_drop_bytes += size;
    }
}

/// Whether port `pt`'s control queue has room for a cut header of `size`
/// bytes under the trimming switches' header-queue `limit`.
#[inline(always)]
fn header_room(pt: &Port, size: u64, limit: u64) -> bool {
    pt.queues[0].bytes + size <= limit
}

/// Offers data packet `pkt` to the rank queue of `pt`. Evicted packets leave
/// queue 1's bytes and the buffer, count as drops and are freed; the arrival,
/// if admitted, is charged to the buffer (its queue bytes are added by the
/// caller once ECN has seen the queue without it).
#[allow(clippy::too_many_arguments)]
fn rank_admit(
    pt: &mut Port,
    pool: &mut PacketPool,
    buf: &mut BufferModel,
    cons: &mut Conservation,
    now: Time,
    in_window: bool,
    pkt: RankedPkt,
) -> Admit {
    let Port { discipline, queues, queued, stats, .. } = pt;
    let Discipline::Rank(rq) = discipline else { unreachable!("caller checked the discipline") };
    let res = rq.enqueue(pkt, |v| {
        let vs = v.size as u64;
        let dq = &mut queues[1];
        dq.ctr.depart(now, pool.get(v.pkt).enq_time, vs);
        dq.bytes -= vs;
        dq.ctr.drops += 1;
        dq.ctr.drop_bytes += vs;
        *queued -= vs;
        count_drop(stats, vs, in_window);
        stats.evictions += 1;
        if in_window {
            stats.win_evictions += 1;
            stats.win_eviction_bytes += vs;
        }
        buf.release_control(vs);
        // ACKs and NACKs in their flow's data class (`switch.ack_high_priority
        // = false`) share the rank queue; only data counts in the balance.
        if pool.get(v.pkt).kind == PacketKind::Data {
            cons.dropped_bytes += vs;
        }
        pool.free(v.pkt);
    });
    match res {
        RankAdmit::Queued { .. } => {
            buf.hold_control(pkt.size as u64);
            Admit::Accept { pause: false }
        }
        RankAdmit::Dropped => Admit::Drop,
    }
}

impl Simulation {
    /// The port of switch `s` that a packet of `kind` of flow `flow` to host
    /// `dst` leaves by (`seq`: its sequence number, for packet spraying), or
    /// `None` if `s` has no route to `dst`. ECMP: a hash of the flow, one for
    /// each direction, picks among the equal-cost next hops.
    #[inline]
    pub(super) fn egress_port(&self, s: u32, kind: PacketKind, flow: u32, dst: u32, seq: u64) -> Option<u32> {
        let hops = self.topo.next_hops(s, dst);
        match hops.len() {
            0 => None,
            // One way on: no hash to read (a single switch's hosts, a fat
            // tree's way down).
            1 => Some(hops[0]),
            n => {
                let [forward, reverse] = self.ecmp_hashes[flow as usize];
                let hash = if kind == PacketKind::Data || kind == PacketKind::Probe { forward } else { reverse };
                // Packet spraying: each packet of a flow (and each ACK, by the byte
                // it acknowledges) takes its own equal-cost path, deterministically.
                let hash = if self.spray { spray_hash(hash, seq) } else { hash };
                Some(hops[ecmp_index(hash, s, n)])
            }
        }
    }

    /// Packet `pid` arrived at switch `s` through port `in_port`.
    pub(super) fn switch_receive(&mut self, s: u32, in_port: u32, pid: PktId) {
        let (kind, flow, dst, class, size, prio, rank, seq) = {
            let p = self.pool.get(pid);
            (p.kind, p.flow, p.dst, p.class, p.size as u64, p.prio, p.rank, p.seq)
        };
        if kind == PacketKind::Pfc {
            self.apply_pfc(in_port, pid);
            return;
        }
        let out = self.egress_port(s, kind, flow, dst, seq).expect("every host is reachable (checked at build)");
        let now = self.now;
        let buf = &mut self.mmus[s as usize];
        let pt = &mut self.ports[out as usize];
        let q = match pt.discipline {
            _ if class == 0 => 0,
            Discipline::Fifo => class as usize,
            Discipline::Priority { levels } => 1 + prio.min(levels - 1) as usize,
            Discipline::Rank(_) => 1,
        };
        let in_rank = q != 0 && matches!(pt.discipline, Discipline::Rank(_));
        let mut admit = if q == 0 {
            if kind == PacketKind::Header && !header_room(pt, size, self.trim_header_limit) {
                // A trimming port's header queue is full (htsim drops the header).
                count_drop(&mut pt.stats, size, self.in_window);
                self.pool.free(pid);
                return;
            }
            // Control packets bypass admission (HPCC-ns3): they are tiny and
            // must not be lost to the data they regulate.
            buf.hold_control(size);
            Admit::Accept { pause: false }
        } else if in_rank {
            let pkt = RankedPkt { pkt: pid, rank: rank as u64, flow, size: size as u32 };
            rank_admit(pt, &mut self.pool, buf, &mut self.cons, now, self.in_window, pkt)
        } else {
            // Looked up here, not for every packet: control and rank-queue
            // packets never need the local port numbers.
            let inp = self.port_local[in_port as usize] as usize;
            let out_local = self.port_local[out as usize] as usize;
            buf.admit(inp, out_local, q, size, pt.queues[q].bytes)
        };
        if self.trim && matches!(admit, Admit::Drop) && kind == PacketKind::Data && !in_rank {
            // NDP: a full data queue cuts a packet instead of dropping it.
            // A fair coin picks the last packet queued (the arrival is then
            // offered again) or the arrival.
            if !self.trim_tail(s, out, q) {
                self.trim_to_header(s, out, q, pid);
                return;
            }
            let inp = self.port_local[in_port as usize] as usize;
            let out_local = self.port_local[out as usize] as usize;
            let qbytes = self.ports[out as usize].queues[q].bytes;
            admit = self.mmus[s as usize].admit(inp, out_local, q, size, qbytes);
            if matches!(admit, Admit::Drop) {
                self.trim_to_header(s, out, q, pid);
                return;
            }
        }
        match admit {
            Admit::Drop => {
                let pt = &mut self.ports[out as usize];
                count_drop(&mut pt.stats, size, self.in_window);
                pt.queues[q].ctr.drops += 1;
                pt.queues[q].ctr.drop_bytes += size;
                if kind == PacketKind::Data {
                    self.cons.dropped_bytes += size;
                }
                self.pool.free(pid);
            }
            Admit::Accept { pause } => {
                let p = self.pool.get_mut(pid);
                p.in_port = in_port;
                p.enq_time = now;
                let pt = &mut self.ports[out as usize];
                if kind == PacketKind::Data && !pt.ecn_at_dequeue && pt.ecn_decide(q, &mut self.rng, self.in_window) {
                    self.pool.get_mut(pid).ce = true;
                }
                if !in_rank {
                    pt.queues[q].pkts.push_back(pid);
                }
                pt.count_enqueue(q, size, self.in_window);
                if pause {
                    self.send_pfc(in_port, class, true);
                }
                self.try_send(out);
            }
        }
    }

    /// A trimming port `out` of switch `s` refused a data packet for its
    /// queue `q`: on a fair coin, cuts the last packet queued there (which
    /// frees its place for the arrival) and returns true; otherwise, or with
    /// nothing queued, returns false.
    #[cold]
    #[inline(never)]
    fn trim_tail(&mut self, s: u32, out: u32, q: usize) -> bool {
        if !rand::Rng::random::<bool>(&mut self.rng) {
            return false;
        }
        let now = self.now;
        let pt = &mut self.ports[out as usize];
        let Some(victim) = pt.queues[q].pkts.pop_back() else { return false };
        let (size, in_port, enq_time) = {
            let p = self.pool.get(victim);
            (p.size as u64, p.in_port, p.enq_time)
        };
        let qu = &mut pt.queues[q];
        qu.ctr.depart(now, enq_time, size);
        qu.bytes -= size;
        pt.queued -= size;
        let inp = self.port_local[in_port as usize] as usize;
        let out_local = self.port_local[out as usize] as usize;
        let resume = self.mmus[s as usize].release(inp, out_local, q, size);
        if resume {
            self.send_pfc(in_port, q as u8, false);
        }
        self.ports[out as usize].stats.trims_queued += 1;
        self.trim_to_header(s, out, q, victim);
        true
    }

    /// Cuts data packet `pid` to its header at port `out` of switch `s`
    /// (its data queue `q` refused it, or it was the last one queued): the
    /// payload counts as dropped, and the header joins the port's control
    /// queue, unless that already holds the header queue's limit.
    #[cold]
    #[inline(never)]
    fn trim_to_header(&mut self, s: u32, out: u32, q: usize, pid: PktId) {
        let now = self.now;
        let header = self.scenario.packets.header;
        let p = self.pool.get_mut(pid);
        let cut = p.size as u64;
        p.kind = PacketKind::Header;
        p.size = header;
        p.class = 0;
        p.enq_time = now;
        self.cons.dropped_bytes += cut;
        let pt = &mut self.ports[out as usize];
        pt.stats.trims += 1;
        if self.in_window {
            pt.stats.win_trims += 1;
            pt.stats.win_trim_bytes += cut;
        }
        pt.queues[q].ctr.drops += 1;
        pt.queues[q].ctr.drop_bytes += cut;
        let size = header as u64;
        if !header_room(pt, size, self.trim_header_limit) {
            count_drop(&mut pt.stats, size, self.in_window);
            self.pool.free(pid);
            return;
        }
        self.mmus[s as usize].hold_control(size);
        pt.queues[0].pkts.push_back(pid);
        pt.count_enqueue(0, size, self.in_window);
        self.try_send(out);
    }

    /// A transmit opportunity of switch port `port`: a PFC frame if one is
    /// waiting, otherwise the packet its discipline picks.
    pub(super) fn switch_try_send(&mut self, port: u32) {
        if let Some(pid) = self.ports[port as usize].pfc_out.pop_front() {
            self.transmit(port, pid);
            return;
        }
        let pool = &self.pool;
        let pt = &mut self.ports[port as usize];
        let rank_turn = pt.queues[0].pkts.is_empty() && matches!(pt.discipline, Discipline::Rank(_));
        let (q, pid) = if rank_turn {
            let Discipline::Rank(rq) = &mut pt.discipline else { unreachable!() };
            let Some(p) = rq.dequeue() else { return };
            (1, p.pkt)
        } else {
            let Some(q) = pt.pick_queue(|id| pool.get(id).size as u64) else { return };
            let pkts = &mut pt.queues[q].pkts;
            let pid = pkts.pop_front().expect("picked queue is non-empty");
            // The packet behind it leaves one serialisation from now, most
            // likely, and has waited out of the cache behind a deep queue.
            if let Some(&next) = pkts.front() {
                super::prefetch::prefetch_lines(pool.get(next), 1);
            }
            (q, pid)
        };
        let now = self.now;
        let (size, kind, in_port, enq_time, flags, ce) = {
            let p = self.pool.get(pid);
            (p.size as u64, p.kind, p.in_port, p.enq_time, p.flags, p.ce)
        };
        let qu = &mut pt.queues[q];
        qu.ctr.depart(now, enq_time, size);
        qu.bytes -= size;
        qu.ctr.tx_bytes += size;
        pt.queued -= size;
        let s = pt.owner;
        if kind == PacketKind::Data {
            if self.in_window {
                pt.stats.latency.add(now - enq_time);
            }
            // The mark is written with the hop count below: one pool access
            // per dequeued packet instead of three.
            let marked = pt.ecn_at_dequeue && pt.ecn_decide(q, &mut self.rng, self.in_window);
            if ce || marked {
                pt.queues[q].ctr.ecn_bytes += size;
            }
            let (rate, txb, qlen) = (pt.rate_bps, pt.tx_bytes, pt.queued);
            if flags & Packet::FLAG_WANT_INT != 0 {
                self.pool.push_int(pid, IntHop { rate_bps: rate, ts: now, tx_bytes: txb, qlen });
            }
            let p = self.pool.get_mut(pid);
            p.ce |= marked;
            p.hops = p.hops.saturating_add(1);
        }
        if let Some(pint) = self.pint.as_deref_mut() {
            let pint_data = kind == PacketKind::Data && flags & Packet::FLAG_WANT_PINT != 0;
            let d = crate::net::pint::Dequeue { size, rate_bps: pt.rate_bps, queued: pt.queued, pint_data };
            if let Some(code) = pint.dequeue(port, now, d, &mut self.rng) {
                let p = self.pool.get_mut(pid);
                p.pint = p.pint.max(code);
            }
        }
        let resume = if q == 0 || rank_turn {
            self.mmus[s as usize].release_control(size);
            false
        } else {
            let inp = self.port_local[in_port as usize] as usize;
            let out_local = self.port_local[port as usize] as usize;
            self.mmus[s as usize].release(inp, out_local, q, size)
        };
        self.transmit(port, pid);
        if resume {
            self.send_pfc(in_port, q as u8, false);
        }
    }
}
