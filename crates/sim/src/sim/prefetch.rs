//! Hints for the cache: the state of the packet-hop events due next.
//!
//! How far ahead pays depends on the network's size (measured back to back,
//! HPCC permutations, docs/performance.md): a network of fewer than
//! [`MIN_PORTS`] ports stays in the first-level cache and is not prefetched;
//! up to [`DEEP_MIN_PORTS`] (the k = 8 fat tree's 768 ports) the next two
//! events are prefetched ([`Simulation::prefetch_near`]); beyond, where the
//! state no longer fits the second-level cache (the k = 16 fat tree's 6,144
//! ports), the next five, one link of each chain of loads
//! ([`Simulation::prefetch_deep`]).
//!
//! On a large fabric a packet-hop waits on one cache miss after another, and
//! each address is known only once the load before it is done: the port, the
//! slot of its wire or queue, the packet, the route, the egress port, its
//! queue and the switch's buffer account. The events due next are known in
//! advance (the calendar's current bucket holds dozens on a fat tree), so
//! while one event runs, [`Simulation::prefetch_deep`] asks the cache for
//! one link of that chain for each of the next [`UPCOMING`] events: the
//! first link for the last of them, the next link (whose address the lines
//! asked for one event earlier give) for the one before, and so on. Each
//! event then finds its state in the cache instead of waiting on each load
//! in turn. A prefetch only reads, so results do not change.

use super::Simulation;
use crate::engine::UPCOMING;
use crate::net::buffer::BufferModel;
use crate::packet::{PacketKind, PktId, NO_INT};

/// Ports from which `run_until` prefetches the state of upcoming packet-hop
/// events. A port is eight cache lines: 256 of them (128 KB) no longer stay
/// in a core's first-level cache beside the packets and queues. Measured
/// back to back on a loaded machine: the k = 8 fat tree (768 ports) ran
/// 20-35% faster with prefetching (two events ahead), the 16-sender incast
/// (34 ports) 10% slower.
pub(super) const MIN_PORTS: usize = 256;

/// Ports from which `run_until` prefetches five events ahead instead of two.
/// On the k = 16 fat tree (6,144 ports) five ahead ran about 0.9x the time
/// of two ahead; on the k = 8 fat tree (768 ports) 1.2-1.3x (there the extra
/// work and lines cost more than the misses they spare).
pub(super) const DEEP_MIN_PORTS: usize = 4096;

/// How far ahead `run_until` prefetches, by the network's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Depth {
    /// Not at all (fewer than [`MIN_PORTS`] ports).
    Off,
    /// Two events ahead.
    Near,
    /// [`UPCOMING`] events ahead.
    Deep,
}

impl Depth {
    /// The depth for a network of `ports` ports.
    pub(super) fn for_ports(ports: usize) -> Depth {
        if ports >= DEEP_MIN_PORTS {
            Depth::Deep
        } else if ports >= MIN_PORTS {
            Depth::Near
        } else {
            Depth::Off
        }
    }
}

impl Simulation {
    /// Asks the cache for what the next two packet-hop events will read:
    /// the port of the event after next (its first four lines: see
    /// [`Port`](crate::net::port::Port)'s layout), and the packet arriving
    /// next on the next event's wire (its port was asked for one event ago).
    #[inline]
    pub(super) fn prefetch_near(&self) {
        let [next, after, ..] = self.events.upcoming_ports();
        if let Some(pt) = after.and_then(|(p, _)| self.ports.get(p as usize)) {
            prefetch_lines(pt, 4);
        }
        if let Some((port, true)) = next {
            if let Some(&(_, pid)) = self.ports.get(port as usize).and_then(|pt| pt.wire.front()) {
                prefetch_lines(self.pool.get(pid), 1);
            }
        }
    }

    /// Asks the cache for the next link of each upcoming packet-hop event's
    /// chain of loads (see the module's documentation). An arrival (`Arrive`)
    /// reads its port, the wire's oldest slot, the packet, then at a switch
    /// the egress port and its queue and buffer account; a transmit
    /// opportunity (`TxDone`) its port, the data queue, the queue's oldest
    /// slot, the packet, then the packet's INT stack.
    #[inline]
    pub(super) fn prefetch_deep(&self) {
        const _: () = assert!(UPCOMING == 5, "one event per link of the chain");
        let [e1, e2, e3, e4, e5] = self.events.upcoming_ports();
        let port = |e: Option<(u32, bool)>| e.and_then(|(p, arrive)| Some((self.ports.get(p as usize)?, arrive)));
        if let Some((pt, _)) = port(e5) {
            prefetch_lines(pt, 4);
        }
        match port(e4) {
            Some((pt, true)) => {
                if let Some(slot) = pt.wire.front() {
                    prefetch_lines(slot, 1);
                }
                if let Some(peer) = self.ports.get(pt.peer as usize) {
                    prefetch_lines(peer, 1);
                }
            }
            Some((pt, false)) => {
                if let Some(q) = pt.queues.get(1) {
                    prefetch_lines(q, 2);
                }
            }
            None => {}
        }
        match port(e3) {
            Some((pt, true)) => {
                if let Some(&(_, pid)) = pt.wire.front() {
                    prefetch_lines(self.pool.get(pid), 1);
                }
            }
            Some((pt, false)) => {
                if let Some(slot) = pt.queues.get(1).and_then(|q| q.pkts.front()) {
                    prefetch_lines(slot, 1);
                }
            }
            None => {}
        }
        match port(e2) {
            Some((pt, true)) => {
                if let Some(&(_, pid)) = pt.wire.front() {
                    if let Some((s, out, _)) = self.forwarding(pt.peer, pid) {
                        prefetch_lines(&self.ports[out as usize], 4);
                        if let Some(BufferModel::Shared(mmu)) = self.mmus.get(s as usize) {
                            prefetch_lines(mmu, 2);
                        }
                    }
                }
            }
            Some((pt, false)) => {
                if let Some(&pid) = pt.queues.get(1).and_then(|q| q.pkts.front()) {
                    prefetch_lines(self.pool.get(pid), 1);
                }
            }
            None => {}
        }
        match port(e1) {
            Some((pt, true)) => {
                if let Some(&(_, pid)) = pt.wire.front() {
                    if let Some((_, out, class)) = self.forwarding(pt.peer, pid) {
                        if let Some(q) = self.ports[out as usize].queues.get(class as usize) {
                            prefetch_lines(q, 2);
                        }
                    }
                }
            }
            Some((pt, false)) if !pt.is_host => {
                if let Some(&pid) = pt.queues.get(1).and_then(|q| q.pkts.front()) {
                    self.prefetch_release(pt.owner, pid);
                }
            }
            Some((_, false)) => {}
            None => {}
        }
    }

    /// Where packet `pid`, arriving through `in_port`, will be forwarded:
    /// `(switch, egress port, class)`, or `None` if it arrives at a host or
    /// is a PFC frame.
    #[inline]
    fn forwarding(&self, in_port: u32, pid: PktId) -> Option<(u32, u32, u8)> {
        let inp = self.ports.get(in_port as usize)?;
        let p = self.pool.get(pid);
        if inp.is_host || p.kind == PacketKind::Pfc {
            return None;
        }
        let out = self.egress_port(inp.owner, p.kind, p.flow, p.dst, p.seq)?;
        Some((inp.owner, out, p.class))
    }

    /// What the departure of packet `pid` from a port of switch `s` writes
    /// besides its port: the packet's INT stack and its ingress account.
    #[inline]
    fn prefetch_release(&self, s: u32, pid: PktId) {
        let p = self.pool.get(pid);
        if p.want_int() && p.int_slot != NO_INT {
            if let Some(stack) = self.pool.int_stack(p.int_slot) {
                prefetch_lines(stack, 3);
            }
        }
        if let (Some(BufferModel::Shared(mmu)), Some(&local)) =
            (self.mmus.get(s as usize), self.port_local.get(p.in_port as usize))
        {
            if let Some(acct) = mmu.ingress.get(local as usize * mmu.classes + p.class as usize) {
                prefetch_lines(acct, 1);
            }
        }
    }
}

/// Asks for the first `lines` cache lines of `*x`.
#[inline(always)]
pub(super) fn prefetch_lines<T>(x: &T, lines: usize) {
    let base = (x as *const T).cast::<u8>();
    for line in 0..lines {
        prefetch(base.wrapping_add(line * 64));
    }
}

/// Hints the CPU to bring the cache line at `p` into L1. A prefetch never
/// faults and has no effect on results, whatever the address.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache; it reads nothing the
    // program sees and cannot fault, even on an invalid address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prefetch only reads: the same fat-tree run at every depth (here on
    /// 80 switches, where `run_until` alone would prefetch two ahead) gives
    /// byte-identical results, and the deep chain runs on every kind of hop
    /// (host and switch ports, arrivals and departures, INT, PFC accounts).
    #[test]
    fn every_depth_gives_the_same_results() {
        // Every host sends to the host 37 places on (a permutation across pods).
        let flows: Vec<String> =
            (0..128).map(|h| format!(r#"{{"src": {h}, "dst": {}, "start": "0s"}}"#, (h + 37) % 128)).collect();
        let json = format!(
            r#"{{"name": "prefetch", "seed": 3, "duration": "40us",
            "topology": {{"kind": "fat_tree", "k": 8, "link_rate": "100Gbps", "link_delay": "1us"}},
            "switch": {{"pfc": {{"enabled": true}}}}, "packets": {{"payload": 1024}},
            "workload": [{{"kind": "flows", "flows": [{}]}}],
            "cc": {{"algorithm": "hpcc"}}, "metrics": {{"flow_series": false}}}}"#,
            flows.join(", ")
        );
        let runs: Vec<String> = [Depth::Off, Depth::Near, Depth::Deep]
            .into_iter()
            .map(|depth| {
                let mut sim = Simulation::from_json(&json, std::path::Path::new(".")).expect("scenario");
                assert!(sim.ports.len() >= MIN_PORTS);
                sim.run_events(u64::MAX, depth);
                assert!(sim.packet_hops() > 100_000, "{} hops", sim.packet_hops());
                format!("{:?}{:?}", serde_json::to_string(&sim.summary()).unwrap(), sim.tables())
            })
            .collect();
        assert_eq!(runs[0], runs[1]);
        assert_eq!(runs[0], runs[2]);
    }
}
