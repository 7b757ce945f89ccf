//! Run-time control of switches, for switch-side agents and slow controllers:
//! ECN marking and scheduler weights changed while the simulation runs,
//! per-queue counters read over the caller's interval, and a link
//! direction's rate ([`Simulation::set_link_rate`]).
//!
//! Changes take effect at the next packet: ECN decisions read the queue's
//! ramp when they are made (nothing derived from it is cached; the ECN
//! profile of the report keeps the bin span it started the window with), and
//! the scheduler reads the weights when it visits a queue. The vectorised
//! calls check every (port, queue) pair first and change nothing if one is
//! wrong. Errors (no such port or queue, a host port, a zero weight, a bad
//! ramp) come back as messages, never as panics.

use super::Simulation;
use crate::net::link_model::{LinkTiming, RateSchedule};
use crate::net::port::{CounterMark, CounterReader, Discipline, Red};
use crate::units::Time;

/// A data-carrying switch queue, as listed by [`Simulation::data_queues`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueId {
    /// Global port id.
    pub port: u32,
    /// Queue of the port (1.. are data queues).
    pub queue: usize,
    /// Name of the switch owning the port.
    pub node: String,
    /// Name of the node at the other end of the link.
    pub peer: String,
}

/// Counters of one queue over the interval since they were last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueStats {
    /// Length of the interval.
    pub interval: Time,
    /// Bytes transmitted.
    pub tx_bytes: u64,
    /// Bytes transmitted carrying a CE mark (set here or upstream).
    pub ecn_bytes: u64,
    /// Packets dropped (refused or evicted).
    pub drops: u64,
    /// Bytes dropped.
    pub drop_bytes: u64,
    /// Time-weighted mean queue length in bytes (the current length if the
    /// interval is empty).
    pub mean_bytes: f64,
    /// Largest queue length in bytes.
    pub max_bytes: u64,
    /// Queue length now.
    pub bytes: u64,
}

impl Simulation {
    /// Sets ECN marking of data queue `queue` on switch port `port` while running.
    pub fn set_ecn(&mut self, port: u32, queue: usize, red: Option<Red>) -> Result<(), String> {
        self.set_ecn_template(port, queue, red, None)
    }

    /// [`Simulation::set_ecn`], saying which `agent.ecn_profiles` entry `red`
    /// is (for the ECN log; `None`: look it up).
    pub(super) fn set_ecn_template(
        &mut self,
        port: u32,
        queue: usize,
        red: Option<Red>,
        template: Option<usize>,
    ) -> Result<(), String> {
        self.check_data_queue(port, queue)?;
        if let Some(r) = &red {
            r.check()?;
        }
        let before = std::mem::replace(&mut self.ports[port as usize].queues[queue].red, red);
        self.log_ecn(port, queue, before, template);
        Ok(())
    }

    /// Sets the scheduling weights of the data queues of switch port `port` while running.
    pub fn set_weights(&mut self, port: u32, weights: &[u32]) -> Result<(), String> {
        let pt = self.ports.get_mut(port as usize).ok_or_else(|| format!("no port {port}"))?;
        if pt.is_host || weights.len() + 1 != pt.queues.len() || weights.contains(&0) {
            return Err(format!("port {port} needs {} positive weights", pt.queues.len().saturating_sub(1)));
        }
        for (q, &w) in weights.iter().enumerate() {
            pt.queues[q + 1].weight = w;
        }
        Ok(())
    }

    /// Default ECN marking configured for data queues.
    pub fn default_ecn(&self) -> Option<Red> {
        self.ecn_red
    }

    /// Human-readable name of a port: `node->peer`.
    pub fn port_name(&self, p: u32) -> String {
        let pt = &self.ports[p as usize];
        let peer_node = self.ports[pt.peer as usize].node;
        format!("{}->{}", self.topo.nodes[pt.node as usize].name, self.topo.nodes[peer_node as usize].name)
    }

    /// Checks that `queue` is a data queue of switch port `port`.
    fn check_data_queue(&self, port: u32, queue: usize) -> Result<(), String> {
        let pt = self.ports.get(port as usize).ok_or_else(|| format!("no port {port}"))?;
        if pt.is_host {
            return Err(format!("port {port} belongs to a host, not a switch"));
        }
        if queue == 0 || queue >= pt.queues.len() {
            return Err(format!("port {port} has data queues 1 to {}, not {queue}", pt.queues.len() - 1));
        }
        Ok(())
    }

    /// Every data-carrying switch queue, by port then queue.
    pub fn data_queues(&self) -> Vec<QueueId> {
        let mut out = Vec::new();
        for (p, pt) in self.ports.iter().enumerate() {
            if pt.is_host {
                continue;
            }
            let peer = self.ports[pt.peer as usize].node;
            for queue in 1..pt.queues.len() {
                out.push(QueueId {
                    port: p as u32,
                    queue,
                    node: self.topo.nodes[pt.node as usize].name.clone(),
                    peer: self.topo.nodes[peer as usize].name.clone(),
                });
            }
        }
        out
    }

    /// Counters of the given (port, queue) pairs since each was last reset
    /// (or since the start); with `reset`, each starts a new interval now.
    /// A pair listed twice reads the same values. Reading visits the packets
    /// queued in each listed queue (their share of the mean length). The
    /// interval is the caller's own: switch agents reading the same queue
    /// keep theirs (see [`QueueCounters`](crate::net::port::QueueCounters)).
    pub fn queue_stats(&mut self, pairs: &[(u32, usize)], reset: bool) -> Result<Vec<QueueStats>, String> {
        for &(p, q) in pairs {
            self.check_data_queue(p, q)?;
        }
        let stats: Vec<QueueStats> =
            pairs.iter().map(|&(p, q)| self.queue_interval(p, q, CounterReader::Caller, false)).collect();
        if reset {
            for &(p, q) in pairs {
                self.queue_interval(p, q, CounterReader::Caller, true);
            }
        }
        Ok(stats)
    }

    /// Counters of queue `queue` of port `port` over `reader`'s interval;
    /// with `close`, that reader's next interval starts now. The caller has
    /// checked the pair.
    pub(super) fn queue_interval(&mut self, port: u32, queue: usize, reader: CounterReader, close: bool) -> QueueStats {
        let now = self.now;
        let pt = &self.ports[port as usize];
        let qu = &pt.queues[queue];
        let c = &qu.ctr;
        // The queueing integral up to now: the packets that left plus the
        // share of those still queued (a rank port keeps its data packets in
        // the rank queue, which is queue 1).
        let queued_share = |pid: crate::packet::PktId| {
            let pk = self.pool.get(pid);
            pk.size as u128 * (now - pk.enq_time) as u128
        };
        let mut area = c.area + qu.pkts.iter().map(|&pid| queued_share(pid)).sum::<u128>();
        if let (Discipline::Rank(rq), 1) = (&pt.discipline, queue) {
            area += rq.packets().map(queued_share).sum::<u128>();
        }
        let m = &c.marks[reader as usize];
        let interval = now - m.since;
        let stats = QueueStats {
            interval,
            tx_bytes: c.tx_bytes - m.tx_bytes,
            ecn_bytes: c.ecn_bytes - m.ecn_bytes,
            drops: c.drops - m.drops,
            drop_bytes: c.drop_bytes - m.drop_bytes,
            mean_bytes: if interval > 0 { (area - m.area) as f64 / interval as f64 } else { qu.bytes as f64 },
            max_bytes: m.max_bytes.max(c.max_bytes).max(qu.bytes),
            bytes: qu.bytes,
        };
        if close {
            let bytes = qu.bytes;
            let c = &mut self.ports[port as usize].queues[queue].ctr;
            // The datapath's maximum restarts now: the other readers keep
            // what it held in their own interval's maximum.
            for (r, other) in c.marks.iter_mut().enumerate() {
                if r != reader as usize {
                    other.max_bytes = other.max_bytes.max(c.max_bytes);
                }
            }
            c.max_bytes = bytes;
            c.marks[reader as usize] = CounterMark {
                since: now,
                tx_bytes: c.tx_bytes,
                ecn_bytes: c.ecn_bytes,
                drops: c.drops,
                drop_bytes: c.drop_bytes,
                area,
                max_bytes: bytes,
            };
        }
        stats
    }

    /// Sets the ECN ramp of many (port, queue) pairs at once (`None` turns
    /// marking off). All pairs and ramps are checked before any is applied.
    pub fn set_ecn_many(&mut self, pairs: &[(u32, usize)], reds: &[Option<Red>]) -> Result<(), String> {
        if pairs.len() != reds.len() {
            return Err(format!("{} queues but {} ECN ramps", pairs.len(), reds.len()));
        }
        for (&(p, q), red) in pairs.iter().zip(reds) {
            self.check_data_queue(p, q)?;
            if let Some(r) = red {
                r.check().map_err(|m| format!("port {p} queue {q}: {m}"))?;
            }
        }
        for (&(p, q), &red) in pairs.iter().zip(reds) {
            let before = std::mem::replace(&mut self.ports[p as usize].queues[q].red, red);
            self.log_ecn(p, q, before, None);
        }
        Ok(())
    }

    /// Sets the scheduling weight of many (port, queue) pairs at once. All
    /// pairs and weights are checked before any is applied.
    pub fn set_weights_many(&mut self, pairs: &[(u32, usize)], weights: &[u32]) -> Result<(), String> {
        if pairs.len() != weights.len() {
            return Err(format!("{} queues but {} weights", pairs.len(), weights.len()));
        }
        for (&(p, q), &w) in pairs.iter().zip(weights) {
            self.check_data_queue(p, q)?;
            if w == 0 {
                return Err(format!("port {p} queue {q}: weights must be positive"));
            }
        }
        for (&(p, q), &w) in pairs.iter().zip(weights) {
            self.ports[p as usize].queues[q].weight = w;
        }
        Ok(())
    }

    /// ECN ramp of data queue `queue` of switch port `port`.
    pub fn ecn_of(&self, port: u32, queue: usize) -> Result<Option<Red>, String> {
        self.check_data_queue(port, queue)?;
        Ok(self.ports[port as usize].queues[queue].red)
    }

    /// Scheduling weight of data queue `queue` of switch port `port`.
    pub fn weight_of(&self, port: u32, queue: usize) -> Result<u32, String> {
        self.check_data_queue(port, queue)?;
        Ok(self.ports[port as usize].queues[queue].weight)
    }
}

impl Simulation {
    /// Sets the rate of link direction `port` (the port that transmits on
    /// it) to `rate_bps` from now on, forgetting later steps of its schedule.
    /// A packet being serialised keeps its end; the next one goes at the new
    /// rate. A port without a schedule gets one, its fixed rate until now.
    /// What the endpoints took from their NIC's rate at set-up stays: a
    /// sender's CC keeps its `line_rate` (its rate cap, the base of its BDP)
    /// and the receiver-driven transports (pHost, Homa, HOPASS) their
    /// downlink budgets, so on a host's own port this models the path
    /// changing beyond the NIC, not another NIC.
    /// Errors: no such port, a zero rate, a port whose timing is a trace.
    pub fn set_link_rate(&mut self, port: u32, rate_bps: u64) -> Result<(), String> {
        let now = self.now;
        let pt = self.ports.get_mut(port as usize).ok_or_else(|| format!("no port {port}"))?;
        if rate_bps == 0 {
            return Err(format!("port {port}: a link rate must be positive"));
        }
        let model = pt.model.get_or_insert_with(Default::default);
        match &mut model.timing {
            Some(LinkTiming::Schedule(s)) => s.set_rate_from(now, rate_bps)?,
            Some(LinkTiming::Trace(_)) => {
                return Err(format!("port {port} follows a mahimahi trace; its rate cannot be set"));
            }
            None => {
                let s = RateSchedule::new(pt.rate_bps, &[(now, rate_bps)]).map_err(|e| e.message)?;
                model.timing = Some(LinkTiming::Schedule(s));
                pt.ps_per_byte = 0;
            }
        }
        pt.rate_bps = rate_bps;
        Ok(())
    }
}
