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

use super::Simulation;
use crate::net::switch::Admit;
use crate::packet::{IntHop, PacketKind, PktId};
use crate::topology::{ecmp_index, reverse_hash, NodeKind};

impl Simulation {
    /// Packet `pid` arrived at switch `s` through port `in_port`.
    pub(super) fn switch_receive(&mut self, s: u32, in_port: u32, pid: PktId) {
        let (kind, flow, dst, class, size) = {
            let p = self.pool.get(pid);
            (p.kind, p.flow, p.dst, p.class, p.size as u64)
        };
        if kind == PacketKind::Pfc {
            self.apply_pfc(in_port, pid);
            return;
        }
        let hash = if kind == PacketKind::Data || kind == PacketKind::Probe {
            self.flows[flow as usize].path.hash
        } else {
            reverse_hash(self.flows[flow as usize].path.hash)
        };
        let hops = self.topo.next_hops(s, dst);
        let out = hops[ecmp_index(hash, s, hops.len())];
        let inp = self.port_local[in_port as usize] as usize;
        let q = class as usize;
        let mmu = &mut self.mmus[s as usize];
        let pt = &self.ports[out as usize];
        let (admit, charge) = if q == 0 {
            // Control packets bypass admission (HPCC-ns3): they are tiny and
            // must not be lost to the data they regulate.
            mmu.used += size;
            (Admit::Accept { pause: false }, Default::default())
        } else {
            mmu.admit(inp, q, size, pt.queues[q].bytes)
        };
        match admit {
            Admit::Drop => {
                let st = &mut self.ports[out as usize].stats;
                st.drops += 1;
                st.drop_bytes += size;
                if self.in_window {
                    st.win_drops += 1;
                    st.win_drop_bytes += size;
                }
                if kind == PacketKind::Data {
                    self.cons.dropped_bytes += size;
                }
                self.pool.free(pid);
            }
            Admit::Accept { pause } => {
                let now = self.now;
                let p = self.pool.get_mut(pid);
                p.charge = charge;
                p.in_port = in_port;
                p.enq_time = now;
                let pt = &mut self.ports[out as usize];
                if kind == PacketKind::Data && !pt.ecn_at_dequeue && pt.ecn_decide(q, &mut self.rng, self.in_window) {
                    self.pool.get_mut(pid).ce = true;
                }
                pt.queues[q].pkts.push_back(pid);
                pt.queues[q].bytes += size;
                pt.queued += size;
                pt.stats.max_queue = pt.stats.max_queue.max(pt.queued);
                if self.in_window {
                    pt.stats.win_max_queue = pt.stats.win_max_queue.max(pt.queued);
                }
                if pause {
                    self.send_pfc(in_port, class, true);
                }
                self.try_send(out);
            }
        }
    }

    /// A transmit opportunity of switch port `port`: a PFC frame if one is
    /// waiting, otherwise the packet its scheduler picks.
    pub(super) fn switch_try_send(&mut self, port: u32) {
        if let Some(pid) = self.ports[port as usize].pfc_out.pop_front() {
            self.transmit(port, pid);
            return;
        }
        let pool = &self.pool;
        let pt = &mut self.ports[port as usize];
        let Some(q) = pt.pick_queue(|id| pool.get(id).size as u64) else { return };
        let pid = pt.queues[q].pkts.pop_front().expect("picked queue is non-empty");
        let now = self.now;
        let (size, kind, in_port, charge, enq_time, want_int) = {
            let p = self.pool.get(pid);
            (p.size as u64, p.kind, p.in_port, p.charge, p.enq_time, p.want_int)
        };
        pt.queues[q].bytes -= size;
        pt.queued -= size;
        let s = match self.topo.nodes[pt.node as usize].kind {
            NodeKind::Switch(s) => s,
            NodeKind::Host(_) => unreachable!(),
        };
        if kind == PacketKind::Data {
            if self.in_window {
                pt.stats.latency.add(now - enq_time);
            }
            if pt.ecn_at_dequeue && pt.ecn_decide(q, &mut self.rng, self.in_window) {
                self.pool.get_mut(pid).ce = true;
            }
            let (rate, txb, qlen) = (pt.rate_bps, pt.tx_bytes, pt.queued);
            if want_int {
                self.pool.push_int(pid, IntHop { rate_bps: rate, ts: now, tx_bytes: txb, qlen });
            }
            let p = self.pool.get_mut(pid);
            p.hops = p.hops.saturating_add(1);
        }
        let resume = if q == 0 {
            self.mmus[s as usize].used -= size;
            false
        } else {
            let inp = self.port_local[in_port as usize] as usize;
            self.mmus[s as usize].release(inp, q, size, charge)
        };
        self.transmit(port, pid);
        if resume {
            self.send_pfc(in_port, q as u8, false);
        }
    }
}
