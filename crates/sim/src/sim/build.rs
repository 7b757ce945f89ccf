//! Building a simulation from a scenario: checks, ports, switch memory, flows.
//!
//! The scenario has been parsed strictly (`config.rs`); [`validate`] rejects
//! values that parse but make no sense, with a [`ConfigError`] naming the
//! field, and the topology and workload builders check their own tables.
//! Then the network is built once: ports with their queues, schedulers and
//! ECN ramps, one memory manager per switch (PFC headroom computed from the
//! link when not given), one NIC per host, and the flows, each with its CC
//! (built by [`Cc::from_config`], the `agent` algorithm from the scenario's
//! `[agent]` table), its ECMP path both ways, base RTT, BDP and ideal
//! completion time. Everything random is drawn here in workload order, from
//! the run's one generator, before the first event.

use super::app::AppAction;
use super::bridge::build_bridge;
use super::metrics::{Conservation, Series};
use super::Simulation;
use crate::cc::{Cc, CcBuild, CongestionControl, FlowCtl, Transport};
use crate::config::{parse_scenario, CfgResult, ConfigError, Scenario};
use crate::engine::{Event, EventQueue};
use crate::flow::{Flow, FlowPath, FlowStats, MonitorInterval, Receiver, Sender, TcpRecovery};
use crate::host::{Host, NicOrder, ReadySet, SchedState};
use crate::net::buffer::{BufferModel, StaticBuffer};
use crate::net::link_model::{LinkModel, LinkTiming};
use crate::net::port::{Discipline, Port, PortStats, Queue, Red, SchedKind};
use crate::net::rank_queue::RankQueue;
use crate::net::switch::Mmu;
use crate::packet::PacketPool;
use crate::topology::{flow_hash, reverse_hash, NodeKind, Topology};
use crate::units::{ser_time, Time, SEC, US};
use crate::workload::{FlowSpec, WorkloadBuilder, UNLIMITED};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::path::Path;

impl Simulation {
    /// Parses, checks and builds a scenario given as JSON; relative file paths
    /// in it are resolved against `base_dir`.
    pub fn from_json(json: &str, base_dir: &Path) -> CfgResult<Simulation> {
        let scenario = parse_scenario(json)?;
        Simulation::new(scenario, base_dir)
    }

    /// Builds a checked scenario.
    pub fn new(sc: Scenario, base_dir: &Path) -> CfgResult<Simulation> {
        validate(&sc)?;
        let topo = Topology::build(&sc.topology)?;
        validate_disciplines(&sc, &topo)?;
        validate_buffers(&sc, &topo)?;
        let estimate = crate::limits::estimate_and_check(&sc, &topo, base_dir)?;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(sc.seed);
        let end = sc.duration.0;
        let specs = WorkloadBuilder::new(&topo, end, &sc.cc, base_dir, sc.switch.queues)
            .with_max_flows(sc.limits.max_flows)
            .build(&sc.workload, &mut rng)?;
        let window = match sc.metrics.window {
            Some([a, b]) => (a.at(end), b.at(end)),
            None => (0, end),
        };
        let sw = &sc.switch;
        let sched = match sw.scheduler.as_str() {
            "strict" => SchedKind::Strict,
            "rr" => SchedKind::RoundRobin,
            "wrr" => SchedKind::Wrr,
            "drr" => SchedKind::Drr,
            _ => unreachable!("checked by validate"),
        };
        let ecn_red = sw.ecn.enabled.then_some(Red { kmin: sw.ecn.kmin.0, kmax: sw.ecn.kmax.0, pmax: sw.ecn.pmax });
        // A data queue's own step threshold, if the scenario gives one, scaled to
        // the port's rate when the scenario gives a reference rate.
        let queue_red = |q: usize, rate_bps: u64| {
            ecn_red.map(|r| {
                let r = match sw.ecn.queue_k.get(q - 1) {
                    Some(k) => Red { kmin: k.0, kmax: k.0, pmax: r.pmax },
                    None => r,
                };
                match sw.ecn.reference_rate {
                    Some(reference) => Red {
                        kmin: scale_threshold(r.kmin, rate_bps, reference.0),
                        kmax: scale_threshold(r.kmax, rate_bps, reference.0),
                        pmax: r.pmax,
                    },
                    None => r,
                }
            })
        };
        let mut port_local = vec![0u16; topo.ports.len()];
        for n in &topo.nodes {
            for (i, &p) in n.ports.iter().enumerate() {
                port_local[p as usize] = i as u16;
            }
        }
        let ports: Vec<Port> = topo
            .ports
            .iter()
            .map(|ps| {
                let is_host = matches!(topo.nodes[ps.node as usize].kind, NodeKind::Host(_));
                let nq = if is_host { 1 } else { switch_queues(sw) };
                let qs = (0..nq)
                    .map(|q| Queue {
                        red: if q > 0 { queue_red(q, ps.rate_bps) } else { None },
                        weight: if q > 0 { sw.weights.get(q - 1).copied().unwrap_or(1) } else { 1 },
                        ..Queue::default()
                    })
                    .collect();
                Port {
                    node: ps.node,
                    peer: ps.peer,
                    rate_bps: ps.rate_bps,
                    ps_per_byte: if (8 * SEC).is_multiple_of(ps.rate_bps) { 8 * SEC / ps.rate_bps } else { 0 },
                    delay: ps.delay + if is_host { 0 } else { sw.latency.0 },
                    is_host,
                    owner: match topo.nodes[ps.node as usize].kind {
                        NodeKind::Host(h) => h,
                        NodeKind::Switch(s) => s,
                    },
                    queues: qs,
                    queued: 0,
                    sched: if sw.discipline == "priority" { SchedKind::Strict } else { sched },
                    sched_cur: 1,
                    sched_fresh: true,
                    quantum: sw.quantum.0,
                    ecn_at_dequeue: sw.ecn.at == "dequeue",
                    busy_until: 0,
                    tx_pending: false,
                    paused: 0,
                    paused_since: 0,
                    held: 0,
                    pfc_out: Default::default(),
                    wire: Default::default(),
                    tx_bytes: 0,
                    stats: PortStats::default(),
                    model: None,
                    discipline: if is_host {
                        Discipline::Fifo
                    } else {
                        let sw_ports = topo.nodes[ps.node as usize].ports.len();
                        switch_discipline(sw, sw_ports)
                    },
                }
            })
            .collect();
        let mtu_wire = (sc.packets.payload + sc.packets.header) as u64;
        let mmus = topo
            .nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Switch(_)))
            .map(|n| {
                let headroom = n.ports.iter().map(|&p| pfc_headroom(sw, &topo, p, mtu_wire)).collect();
                if sw.buffer_model == "static" {
                    let nq = switch_queues(sw);
                    let budget = data_queue_budget(sw, n.ports.len(), nq - 1);
                    return BufferModel::Static(StaticBuffer::new(n.ports.len(), nq, budget));
                }
                BufferModel::Shared(Mmu::new(
                    sw.buffer.0,
                    sw.queue_cap.0,
                    sw.dt_alpha,
                    sw.pfc.enabled,
                    sw.pfc.alpha,
                    sw.pfc.reserve.0,
                    sw.pfc.resume_offset.0,
                    switch_queues(sw),
                    headroom,
                ))
            })
            .collect();
        let nic_order = if sc.host.scheduler == "srpt" { NicOrder::Srpt } else { NicOrder::RoundRobin };
        let hosts = (0..topo.n_hosts)
            .map(|h| Host {
                port: topo.host_port(h),
                wake_at: Time::MAX,
                ready: ReadySet::new(nic_order),
                ..Host::default()
            })
            .collect();
        let mut sim = Simulation {
            max_outstanding: if sc.host.max_outstanding.0 == 0 { u64::MAX } else { sc.host.max_outstanding.0 },
            burst: sc.host.burst.0.max(1),
            sample_interval: sc.metrics.sample_interval.0,
            ecn_red,
            bridge: None,
            hopass: Default::default(),
            topo,
            ports,
            hosts,
            mmus,
            port_local,
            flows: Vec::new(),
            ecmp_hashes: Vec::new(),
            pool: PacketPool::default(),
            events: EventQueue::default(),
            rng,
            tx_jitter: sc.host.tx_jitter,
            spray: sc.switch.load_balancing == "packet",
            trim: sc.switch.trim,
            trim_header_limit: super::ndp::header_queue_limit(&sc),
            now: 0,
            end,
            window,
            in_window: false,
            app: Vec::new(),
            app_next: 0,
            event_count: 0,
            packet_hops: 0,
            cons: Conservation::default(),
            series: Series::default(),
            scenario: sc,
            estimate,
            homa: None,
            sweep: Default::default(),
            one_way_delay: None,
            pint: None,
        };
        if sim.scenario.metrics.one_way_delay {
            sim.one_way_delay = Some(Box::default());
        }
        sim.build_link_models(base_dir)?;
        sim.bridge = build_bridge(&sim.scenario, base_dir)?;
        sim.create_flows(specs)?;
        sim.ecmp_hashes = sim.flows.iter().map(|f| [f.path.hash, reverse_hash(f.path.hash)]).collect();
        sim.homa_setup(base_dir)?;
        sim.schedule_initial();
        sim.reserve_series()?;
        sim.build_queue_agents()?;
        sim.start_ecn_log();
        sim.build_hopass();
        Ok(sim)
    }

    /// Creates the flows the workloads generated: their CC, path, base RTT
    /// and ideal completion time, and their entries in the application schedule.
    fn create_flows(&mut self, specs: Vec<FlowSpec>) -> CfgResult<()> {
        let pk = &self.scenario.packets;
        let (payload, header, ack) = (pk.payload as u64, pk.header as u64, pk.ack as u64);
        let min_frac = self.scenario.host.min_rate_fraction;
        // The `agent` algorithm is configured by the scenario's `[agent]` table.
        let build = CcBuild { agent: self.bridge.as_ref().map(|b| b.spec()) };
        // Flows that share a CC configuration share its parsed form.
        let mut cc_cache: Vec<(&crate::config::CcConfig, Cc)> = Vec::new();
        // The big vectors are reserved fallibly: a failure is an error, not an abort.
        let mut built: Vec<Cc> = Vec::new();
        crate::limits::try_reserve(&mut built, specs.len(), "workload")?;
        crate::limits::try_reserve(&mut self.flows, specs.len(), "workload")?;
        let app_entries = specs.iter().map(|s| 2 + s.messages.len()).sum();
        crate::limits::try_reserve(&mut self.app, app_entries, "workload")?;
        for s in &specs {
            let cc = match cc_cache.iter().find(|(c, _)| **c == s.cc) {
                Some((_, cc)) => cc.clone(),
                None => {
                    let cc = Cc::from_config(&s.cc, &s.cc_field, &build)?;
                    cc_cache.push((&s.cc, cc.clone()));
                    cc
                }
            };
            built.push(cc);
        }
        // HPCC-PINT: one window T (the largest of its flows') and one log base for all switches.
        let mut pint: Option<(Time, crate::net::pint::PintCodec, String)> = None;
        // The receiver-driven transport of each host's grant scheduler (one per host), and the
        // field of the first flow that chose it.
        let mut receiver_of: std::collections::HashMap<u32, (Transport, String)> = Default::default();
        for (id, (s, cc)) in specs.iter().zip(built).enumerate() {
            let hash = flow_hash(id as u32, s.src, s.dst);
            let fwd = self.topo.path(s.src, s.dst, hash);
            let rev = self.topo.path(s.dst, s.src, reverse_hash(hash));
            let line = self.ports[self.hosts[s.src as usize].port as usize].rate_bps as f64;
            let full = payload + header;
            let prop: Time = fwd.iter().chain(rev.iter()).map(|&p| self.ports[p as usize].delay).sum();
            let ser_fwd: Time = fwd.iter().map(|&p| ser_time(full, self.ports[p as usize].rate_bps)).sum();
            let ser_rev: Time = rev.iter().map(|&p| ser_time(ack, self.ports[p as usize].rate_bps)).sum();
            let base_rtt = prop + ser_fwd + ser_rev;
            if let Cc::Hpcc(h) = &cc {
                if let Some((t, codec)) = h.pint_setup(base_rtt) {
                    match &mut pint {
                        None => pint = Some((t, codec, s.cc_field.clone())),
                        Some((t_max, c, _)) if c.base() == codec.base() => *t_max = (*t_max).max(t),
                        Some((_, c, first)) => {
                            return Err(ConfigError::new(
                                format!("{}.pint_log_base", s.cc_field),
                                codec.base(),
                                format!(
                                    "every HPCC-PINT flow must use one log base (switches encode for all of \
                                     them): {first}.pint_log_base is {}",
                                    c.base()
                                ),
                            ));
                        }
                    }
                }
            }
            let ideal_fct = if s.size == UNLIMITED {
                0
            } else {
                // Each link at the fastest it can ever go, so the ideal stays a lower
                // bound: a schedule's peak rate; a trace link has no serialisation
                // time of its own (several opportunities may fall at one instant).
                let link = |&p: &u32| {
                    let port = &self.ports[p as usize];
                    let rate = match port.model.as_deref().and_then(|m| m.timing.as_ref()) {
                        Some(LinkTiming::Schedule(s)) => s.steps().iter().fold(port.rate_bps, |r, x| r.max(x.1)),
                        Some(LinkTiming::Trace(_)) => u64::MAX,
                        None => port.rate_bps,
                    };
                    (rate, port.delay)
                };
                // Sprayed packets cross each hop through any of its equal-cost
                // links: the packets between the first and the last at up to
                // the sum of their rates.
                let aggregate: Vec<u64> = if self.spray {
                    let hops = self.topo.paths_by_hop(s.src, s.dst);
                    hops.iter().map(|ports| ports.iter().map(|p| link(p).0).fold(0u64, u64::saturating_add)).collect()
                } else {
                    fwd.iter().map(|p| link(p).0).collect()
                };
                let fwd_links = fwd.iter().zip(&aggregate).map(|(p, &a)| {
                    let (rate, delay) = link(p);
                    (rate, delay, a)
                });
                crate::metrics::ideal_fct_sprayed(s.size, payload, header, ack, fwd_links, rev.iter().map(link))
            };
            let first_msg =
                if s.messages.is_empty() { s.size } else { s.size - s.messages.iter().map(|m| m.1).sum::<u64>() };
            let mut messages = Vec::new();
            if s.stream {
                let mut end = first_msg;
                messages.push((s.start, end, None));
                for &(t, b) in &s.messages {
                    end += b;
                    messages.push((t, end, None));
                }
            }
            let switches = fwd.len().saturating_sub(1) as u32;
            let transport = match self.scenario.host.loss_recovery.as_str() {
                "go_back_n" => Transport::GoBackN,
                "tcp" => Transport::Tcp,
                "credit" => Transport::Credit,
                "pfabric" => Transport::PFabric,
                "phost" => Transport::PHost,
                "homa" => Transport::Homa,
                "hopass" => Transport::Hopass,
                "ndp" => Transport::Ndp,
                "eqds" => Transport::Eqds,
                _ => cc.transport(),
            };
            if transport.uses_receiver_scheduler() {
                let (first, field) =
                    receiver_of.entry(s.dst).or_insert_with(|| (transport, s.cc_field.clone())).clone();
                if first != transport {
                    return Err(ConfigError::new(
                        format!("{}.algorithm", s.cc_field),
                        format!("\"{}\"", cc.name()),
                        format!(
                            "host {} receives flows of two receiver-driven transports ({} from {field}, {} here); \
                             a host's receiver scheduler serves one: give them other receivers or one transport",
                            s.dst,
                            first.name(),
                            transport.name()
                        ),
                    ));
                }
            }
            if matches!(transport, Transport::Homa | Transport::PHost | Transport::Hopass)
                && (s.size == UNLIMITED || s.stream || !s.messages.is_empty())
            {
                // Homa's first packet announces its message's size, and pHost's
                // and HOPASS's tokens name packets of a known size: all three
                // move finite flows. The mistake is in the workload, so name
                // it, and say where the transport came from.
                let what = if s.size == UNLIMITED { "a flow without a size" } else { "a message stream" };
                let from = if self.scenario.host.loss_recovery == "auto" {
                    format!("the transport of {}.algorithm = \"{}\"", s.cc_field, cc.name())
                } else {
                    "host.loss_recovery".to_string()
                };
                return Err(ConfigError::new(
                    format!("workload[{}]", s.workload),
                    format!("\"{what}\""),
                    format!(
                        "{} ({from}) moves finite flows only: give the flows a size, without a stream or messages, \
                         or pick another algorithm",
                        transport.name()
                    ),
                ));
            }
            if transport == Transport::PFabric && self.scenario.host.rto.0 == 0 {
                // Its only repair is the timeout: without one a lost packet
                // is never resent and its flow never completes, silently.
                return Err(ConfigError::new(
                    "host.rto",
                    "0",
                    "pFabric repairs lost packets only when its timeout fires, so it needs one (its papers use \
                     about 3 base RTTs)",
                ));
            }
            let rto = match transport {
                // Until RTT samples exist, never time out before a round trip is possible.
                Transport::Tcp => self.scenario.host.rto.0.max(2 * base_rtt),
                Transport::GoBackN
                | Transport::Credit
                | Transport::PFabric
                | Transport::PHost
                | Transport::Homa
                | Transport::Hopass
                | Transport::Ndp
                | Transport::Eqds => self.scenario.host.rto.0,
            };
            let sack = transport == Transport::Tcp && self.scenario.host.sack;
            self.flows.push(Flow {
                snd: Sender {
                    next_avail: 0.0,
                    sched: SchedState::Idle,
                    sched_gen: 0,
                    last_pkt_bytes: full as u32,
                    timer_gen: 0,
                    started: false,
                    finished: None,
                    retx: None,
                    max_sent: 0,
                    last_progress: 0,
                    rto,
                    timer_at: None,
                    messages,
                    msg_next: 0,
                    granted: 0,
                    grant_prio: 0,
                    sacked: 0,
                    timeouts_in_row: 0,
                    probing: false,
                    peer_remaining: s.size,
                },
                ctl: FlowCtl {
                    rate: line,
                    window: u64::MAX,
                    line_rate: line,
                    min_rate: (line * min_frac).max(1.0),
                    base_rtt,
                    bdp: (line / 8.0 * base_rtt as f64 / SEC as f64) as u64,
                    mtu: payload as u32,
                    hops: switches,
                    snd_nxt: 0,
                    snd_una: 0,
                    size: s.size,
                    app_limit: 0,
                    timer: None,
                    probe_requested: false,
                    want_int: false,
                    pint_bytes: 0,
                    decision_due: false,
                    paused: false,
                    sack_pipe: sack.then_some(0),
                },
                path: FlowPath {
                    src: s.src,
                    dst: s.dst,
                    class: s.class,
                    hash,
                    start: s.start,
                    stop: s.stop,
                    transport,
                },
                mi: MonitorInterval::default(),
                stats: FlowStats { ideal_fct, ..FlowStats::default() },
                tcp: TcpRecovery {
                    first_partial_ack_timer: self.scenario.host.newreno_timer == "first_partial_ack",
                    ..TcpRecovery::default()
                },
                rcv: Receiver::default(),
                cc,
                ph: matches!(transport, Transport::PHost | Transport::Hopass).then(Box::default),
                homa: None,
                hp: (transport == Transport::Hopass).then(Box::default),
                sack: sack.then(Box::default),
                nd: matches!(transport, Transport::Ndp | Transport::Eqds).then(Box::default),
            });
            let id = id as u32;
            self.app.push((s.start, id, AppAction::Start));
            for &(t, b) in &s.messages {
                self.app.push((t, id, AppAction::Message(b)));
            }
            if let Some(t) = s.stop {
                self.app.push((t.max(s.start), id, AppAction::Stop));
            }
        }
        if let Some((t, codec, _)) = pint {
            self.pint = Some(Box::new(crate::net::pint::PintPorts::new(self.ports.len(), t, codec)));
        }
        // Stable sort keeps generation order among equal times: deterministic.
        self.app.sort_by_key(|a| a.0);
        Ok(())
    }

    /// Pushes the first events of the run (their order fixes the order of
    /// same-time events, so it is part of the results).
    fn schedule_initial(&mut self) {
        if let Some(&(t, _, _)) = self.app.first() {
            self.events.push(t, Event::AppData);
        }
        self.start_metrics();
        if self.scenario.host.rto.0 > 0 {
            let period = self.rto_sweep_period();
            self.events.push(period, Event::RtoSweep { host: 0 });
        }
    }
}

impl Simulation {
    /// Builds the scenario's `[[link]]` entries into the ports they name
    /// (the direction `from -> to`, and `to -> from` too with
    /// `both_directions`; every parallel link between the two nodes). A port
    /// with a timing model reports its initial rate, and a schedule arms a
    /// `LinkRate` event for its next step. Entries are checked here so that
    /// the errors name the entry; no random draw happens.
    fn build_link_models(&mut self, base_dir: &Path) -> CfgResult<()> {
        if self.scenario.link.is_empty() {
            return Ok(());
        }
        let pk = &self.scenario.packets;
        let max_packet =
            [pk.payload + pk.header, pk.ack, pk.nack, pk.cnp, pk.probe, pk.pfc].into_iter().max().expect("non-empty")
                as u64;
        let node_id = |field: String, name: &str, topo: &Topology| -> CfgResult<u32> {
            topo.nodes.iter().position(|n| n.name == name).map(|i| i as u32).ok_or_else(|| {
                ConfigError::new(
                    field,
                    format!("\"{name}\""),
                    "no node of that name (built-in topologies name hosts h0, h1, ... and switches sw0, left, \
                     right, leaf0, spine0, edge0, agg0, core0, ...)",
                )
            })
        };
        // Which entry configured each port, to refuse a second one.
        let mut owner: Vec<Option<usize>> = vec![None; self.ports.len()];
        for i in 0..self.scenario.link.len() {
            let field = format!("link[{i}]");
            let cfg = self.scenario.link[i].clone();
            cfg.validate(&field)?;
            let from = node_id(format!("{field}.from"), &cfg.from, &self.topo)?;
            let to = node_id(format!("{field}.to"), &cfg.to, &self.topo)?;
            let mut directions = vec![(from, to)];
            if cfg.both_directions {
                directions.push((to, from));
            }
            for (a, b) in directions {
                let ports: Vec<u32> = self.topo.nodes[a as usize]
                    .ports
                    .iter()
                    .copied()
                    .filter(|&p| self.ports[self.ports[p as usize].peer as usize].node == b)
                    .collect();
                if ports.is_empty() {
                    return Err(ConfigError::new(
                        format!("{field}.to"),
                        format!("\"{}\"", cfg.to),
                        format!("is not adjacent to \"{}\"; a [[link]] entry names the two ends of one link", cfg.from),
                    ));
                }
                for p in ports {
                    if let Some(prev) = owner[p as usize] {
                        return Err(ConfigError::new(
                            format!("{field}.from"),
                            format!("\"{}\"", cfg.from),
                            format!("link {} is already configured by link[{prev}]", self.port_name(p)),
                        ));
                    }
                    owner[p as usize] = Some(i);
                    let rate = self.ports[p as usize].rate_bps;
                    let model = cfg.build_seeded(&field, base_dir, rate, max_packet, self.scenario.seed)?;
                    self.install_link_model(p, model);
                }
            }
        }
        Ok(())
    }

    /// Gives port `p` its link model: a timing model takes over from the
    /// fixed rate (the `ps_per_byte` shortcut is off, the reported rate is
    /// the schedule's at time 0 or the trace's mean), and a schedule with a
    /// later step arms its `LinkRate` event.
    fn install_link_model(&mut self, p: u32, model: LinkModel) {
        let pt = &mut self.ports[p as usize];
        match &model.timing {
            Some(LinkTiming::Schedule(s)) => {
                pt.rate_bps = s.rate_at(0);
                pt.ps_per_byte = 0;
                if let Some(t) = s.next_change(0) {
                    self.events.push(t, Event::LinkRate { port: p });
                }
            }
            Some(LinkTiming::Trace(t)) => {
                pt.rate_bps = t.mean_rate_bps().max(1);
                pt.ps_per_byte = 0;
            }
            None => {}
        }
        pt.model = Some(Box::new(model));
    }
}

/// Checks values that parse but make no sense.
fn validate(sc: &Scenario) -> CfgResult<()> {
    let e = |f: &str, v: &dyn std::fmt::Display, m: &str| Err(ConfigError::new(f, v, m));
    if sc.duration.0 == 0 {
        return e("duration", &"0", "must be positive");
    }
    let pk = &sc.packets;
    if pk.payload == 0 || pk.payload > 65_536 {
        return e("packets.payload", &pk.payload, "must be from 1 to 65536 bytes");
    }
    for (name, v) in [("ack", pk.ack), ("nack", pk.nack), ("cnp", pk.cnp), ("probe", pk.probe), ("pfc", pk.pfc)] {
        if v == 0 || v > 65_536 {
            return e(&format!("packets.{name}"), &v, "must be from 1 to 65536 bytes");
        }
    }
    let sw = &sc.switch;
    if sw.queues < 2 || sw.queues > 8 {
        return e("switch.queues", &sw.queues, "must be from 2 to 8 (queue 0 is the control queue)");
    }
    if !["strict", "rr", "wrr", "drr"].contains(&sw.scheduler.as_str()) {
        return e("switch.scheduler", &format!("\"{}\"", sw.scheduler), "use strict, rr, wrr or drr");
    }
    if !sw.weights.is_empty() && sw.weights.len() != sw.queues as usize - 1 {
        return e(
            "switch.weights",
            &format!("{:?}", sw.weights),
            &format!("needs one weight per data queue ({} for switch.queues = {})", sw.queues - 1, sw.queues),
        );
    }
    if sw.weights.contains(&0) {
        return e("switch.weights", &format!("{:?}", sw.weights), "weights must be positive");
    }
    if sw.scheduler == "drr" && (sw.quantum.0 as u32) < pk.payload + pk.header {
        return e("switch.quantum", &sw.quantum.0, "a DRR quantum must be at least one full packet");
    }
    if sw.buffer.0 == 0 {
        let what = if sw.pfc.enabled { "a lossless (PFC) switch needs a buffer" } else { "must be positive" };
        return e("switch.buffer", &"0", what);
    }
    if sw.queue_cap.0 == 0 {
        return e("switch.queue_cap", &"0", "must be positive");
    }
    if !(0.0..=1024.0).contains(&sw.dt_alpha) || !sw.dt_alpha.is_finite() {
        return e("switch.dt_alpha", &sw.dt_alpha, "must be from 0 (off) to 1024");
    }
    let ecn = &sw.ecn;
    if ecn.kmin.0 > ecn.kmax.0 {
        return e("switch.ecn.kmin", &ecn.kmin.0, &format!("must not exceed kmax ({} bytes)", ecn.kmax.0));
    }
    if !(0.0..=1.0).contains(&ecn.pmax) {
        return e("switch.ecn.pmax", &ecn.pmax, "must be a probability in [0, 1]");
    }
    if !ecn.queue_k.is_empty() && ecn.queue_k.len() != switch_queues(sw) - 1 {
        return e(
            "switch.ecn.queue_k",
            &format!("{} thresholds", ecn.queue_k.len()),
            &format!("needs one threshold per data queue ({}), or none", switch_queues(sw) - 1),
        );
    }
    if ecn.at != "enqueue" && ecn.at != "dequeue" {
        return e("switch.ecn.at", &format!("\"{}\"", ecn.at), "use \"enqueue\" or \"dequeue\"");
    }
    let pfc = &sw.pfc;
    if pfc.enabled {
        if !(pfc.alpha > 0.0 && pfc.alpha <= 64.0) {
            return e("switch.pfc.alpha", &pfc.alpha, "must be in (0, 64]");
        }
        let mtu = (pk.payload + pk.header) as u64;
        if sw.buffer.0 < 16 * mtu {
            return e("switch.buffer", &sw.buffer.0, "a lossless (PFC) switch needs room for at least 16 full packets");
        }
    }
    let h = &sc.host;
    if !["auto", "go_back_n", "tcp", "credit", "pfabric", "phost", "homa", "hopass", "ndp", "eqds"]
        .contains(&h.loss_recovery.as_str())
    {
        return e(
            "host.loss_recovery",
            &format!("\"{}\"", h.loss_recovery),
            "use \"auto\", \"go_back_n\", \"tcp\", \"credit\", \"pfabric\", \"phost\", \"homa\", \"hopass\", \"ndp\" or \"eqds\"",
        );
    }
    if h.ack_every == 0 {
        return e("host.ack_every", &0, "must be at least 1");
    }
    if !(h.min_rate_fraction > 0.0 && h.min_rate_fraction <= 1.0) {
        return e("host.min_rate_fraction", &h.min_rate_fraction, "must be in (0, 1]");
    }
    if !(0.0..=1.0).contains(&h.tx_jitter) {
        return e("host.tx_jitter", &h.tx_jitter, "must be in [0, 1] (a fraction of a packet's serialization time)");
    }
    validate_transport(sc)?;
    super::run_times::validate(sc)?;
    let m = &sc.metrics;
    if m.sample_interval.0 == 0 {
        return e("metrics.sample_interval", &"0", "must be positive");
    }
    if sc.duration.0 / m.sample_interval.0 > 2_000_000 {
        return e(
            "metrics.sample_interval",
            &m.sample_interval.0,
            "gives more than 2 million samples; use a longer interval",
        );
    }
    match &m.flow_series {
        serde_json::Value::Bool(_) => {}
        serde_json::Value::String(s) if s == "auto" => {}
        v => return e("metrics.flow_series", v, "use true, false or \"auto\""),
    }
    match &m.ecn_series {
        serde_json::Value::Bool(_) => {}
        serde_json::Value::String(s) if s == "auto" => {}
        v => return e("metrics.ecn_series", v, "use true, false or \"auto\""),
    }
    validate_size_buckets(m)?;
    Ok(())
}

/// Checks `metrics.size_buckets`: 1 to 16 positive edges, strictly increasing.
fn validate_size_buckets(m: &crate::config::MetricsConfig) -> CfgResult<()> {
    let e = |f: &str, v: &dyn std::fmt::Display, m: &str| Err(ConfigError::new(f, v, m));
    let Some(edges) = &m.size_buckets else { return Ok(()) };
    let shown = || format!("[{}]", edges.iter().map(|b| b.0.to_string()).collect::<Vec<_>>().join(", "));
    if edges.is_empty() || edges.len() > 16 {
        return e("metrics.size_buckets", &shown(), "give 1 to 16 bucket edges (bytes)");
    }
    if edges[0].0 == 0 || edges.windows(2).any(|w| w[0].0 >= w[1].0) {
        return e("metrics.size_buckets", &shown(), "edges must be positive and strictly increasing");
    }
    Ok(())
}

/// Checks the fields of the transport seam: the NIC order and the sizes of
/// the receiver-driven control packets.
fn validate_transport(sc: &Scenario) -> CfgResult<()> {
    let h = &sc.host;
    if !["round_robin", "srpt"].contains(&h.scheduler.as_str()) {
        return Err(ConfigError::new(
            "host.scheduler",
            format!("\"{}\"", h.scheduler),
            "use \"round_robin\" or \"srpt\" (smallest remaining first)",
        ));
    }
    validate_phost(h)?;
    super::homa::validate_homa(h)?;
    super::hopass::validate(sc)?;
    super::ndp::validate(sc)?;
    super::eqds::validate(sc)?;
    if h.pfabric_probe_after == 0 {
        return Err(ConfigError::new("host.pfabric_probe_after", 0, "must be at least 1 timeout"));
    }
    if let Some(p) = h.grant_priority.filter(|&p| p > 7) {
        return Err(ConfigError::new("host.grant_priority", p, "must be from 0 (most urgent) to 7"));
    }
    let pk = &sc.packets;
    for (name, v) in [("rts", pk.rts), ("grant", pk.grant)] {
        if v == 0 || v > 65_536 {
            return Err(ConfigError::new(format!("packets.{name}"), v, "must be from 1 to 65536 bytes"));
        }
    }
    Ok(())
}

/// Checks pHost's fields (`host.phost_*`).
fn validate_phost(h: &crate::config::HostConfig) -> CfgResult<()> {
    for (name, v) in [
        ("phost_token_ttl", h.phost_token_ttl),
        ("phost_resend_timeout", h.phost_resend_timeout),
        ("phost_window_timeout", h.phost_window_timeout),
    ] {
        if !(v > 0.0 && v <= 1e6) {
            return Err(ConfigError::new(format!("host.{name}"), v, "must be a positive number of packet times"));
        }
    }
    if h.phost_window == 0 {
        return Err(ConfigError::new("host.phost_window", 0, "must be at least 1 token"));
    }
    if !["every_partial_ack", "first_partial_ack"].contains(&h.newreno_timer.as_str()) {
        return Err(ConfigError::new(
            "host.newreno_timer",
            format!("\"{}\"", h.newreno_timer),
            "use \"every_partial_ack\" (each partial ACK restarts the timer) or \"first_partial_ack\" (RFC 6582, ns-3)",
        ));
    }
    if !["adaptive", "yaps"].contains(&h.phost_hold.as_str()) {
        return Err(ConfigError::new(
            "host.phost_hold",
            format!("\"{}\"", h.phost_hold),
            "use \"adaptive\" (shortened by the receiver's idle time) or \"yaps\" (YAPS's token slots)",
        ));
    }
    if h.phost_free_tokens > 255 {
        return Err(ConfigError::new("host.phost_free_tokens", h.phost_free_tokens, "must be from 0 to 255 packets"));
    }
    Ok(())
}

// ---- Queue disciplines and buffer models (`switch.discipline`, `switch.buffer_model`)

/// Queues per switch port, control queue 0 included.
/// An ECN threshold of `bytes` at `reference_bps`, scaled to a port of
/// `rate_bps` (proportional to the rate, rounded to the nearest byte).
pub(super) fn scale_threshold(bytes: u64, rate_bps: u64, reference_bps: u64) -> u64 {
    let scaled = (bytes as u128 * rate_bps as u128 + reference_bps as u128 / 2) / reference_bps.max(1) as u128;
    scaled.min(u64::MAX as u128) as u64
}

fn switch_queues(sw: &crate::config::SwitchConfig) -> usize {
    match sw.discipline.as_str() {
        "priority" => 1 + sw.priorities as usize,
        "rank" => 2,
        _ => sw.queues as usize,
    }
}

/// Bytes of one data queue of a switch with `ports` ports and `data_queues`
/// data queues per port: `switch.port_buffer`, or the buffer split evenly.
fn data_queue_budget(sw: &crate::config::SwitchConfig, ports: usize, data_queues: usize) -> u64 {
    if sw.port_buffer.0 > 0 {
        sw.port_buffer.0
    } else {
        sw.buffer.0 / (ports * data_queues).max(1) as u64
    }
}

/// The discipline of a port of a switch with `ports` ports.
fn switch_discipline(sw: &crate::config::SwitchConfig, ports: usize) -> Discipline {
    match sw.discipline.as_str() {
        "priority" => Discipline::Priority { levels: sw.priorities },
        "rank" => Discipline::Rank(Box::new(RankQueue::new(data_queue_budget(sw, ports, 1)))),
        _ => Discipline::Fifo,
    }
}

/// Checks the discipline and buffer-model fields against each other, PFC and
/// the switches of the topology (a budget must hold a full packet).
fn validate_disciplines(sc: &Scenario, topo: &Topology) -> CfgResult<()> {
    let e = |f: &str, v: &dyn std::fmt::Display, m: &str| Err(ConfigError::new(f, v, m));
    let sw = &sc.switch;
    if !["fifo", "priority", "rank"].contains(&sw.discipline.as_str()) {
        return e("switch.discipline", &format!("\"{}\"", sw.discipline), "use \"fifo\", \"priority\" or \"rank\"");
    }
    if !(1..=8).contains(&sw.priorities) {
        return e("switch.priorities", &sw.priorities, "must be from 1 to 8 data priorities");
    }
    if !["flow", "packet"].contains(&sw.load_balancing.as_str()) {
        return e(
            "switch.load_balancing",
            &format!("\"{}\"", sw.load_balancing),
            "use \"flow\" (ECMP by flow hash) or \"packet\" (packet spraying)",
        );
    }
    if !["shared", "static"].contains(&sw.buffer_model.as_str()) {
        return e("switch.buffer_model", &format!("\"{}\"", sw.buffer_model), "use \"shared\" or \"static\"");
    }
    if sw.pfc.enabled && sw.buffer_model == "static" {
        return e(
            "switch.buffer_model",
            &"\"static\"",
            "a static buffer is lossy; PFC (switch.pfc.enabled) needs the shared buffer",
        );
    }
    if sw.pfc.enabled && sw.discipline != "fifo" {
        return e(
            "switch.discipline",
            &format!("\"{}\"", sw.discipline),
            "PFC (switch.pfc.enabled) pauses per class and needs the fifo discipline",
        );
    }
    let mtu = (sc.packets.payload + sc.packets.header) as u64;
    let budgeted = sw.buffer_model == "static" || sw.discipline == "rank";
    for n in topo.nodes.iter().filter(|n| matches!(n.kind, NodeKind::Switch(_))) {
        let data_queues = switch_queues(sw) - 1;
        let per_queue = if sw.buffer_model == "static" { data_queues } else { 1 };
        let budget = data_queue_budget(sw, n.ports.len(), per_queue);
        if budgeted && budget < mtu {
            let what =
                format!("gives switch {} {budget} bytes per queue, less than one full packet ({mtu} bytes)", n.name);
            let field = if sw.port_buffer.0 > 0 { "switch.port_buffer" } else { "switch.buffer" };
            return e(field, &budget, &what);
        }
    }
    Ok(())
}

// ---- Switch buffers that can hold what they promise (issue 16, class 3)

/// PFC headroom of switch port `p`: `switch.pfc.headroom`, or everything that
/// can still arrive after an XOFF: a cable round trip, a packet in flight each
/// way and 1 us of response time.
fn pfc_headroom(sw: &crate::config::SwitchConfig, topo: &Topology, p: u32, mtu_wire: u64) -> u64 {
    if sw.pfc.headroom.0 > 0 {
        sw.pfc.headroom.0
    } else {
        let ps = &topo.ports[p as usize];
        let back = topo.ports[ps.peer as usize].delay;
        let bytes_per_ps = ps.rate_bps as f64 / 8.0 / SEC as f64;
        (bytes_per_ps * (ps.delay + back + US) as f64) as u64 + 2 * mtu_wire
    }
}

/// Refuses switch buffers that cannot hold what the configuration promises:
/// PFC reserves and headroom that do not fit in the buffer (the shared pool
/// would be negative and the switch would hold more than it has), static or
/// rank budgets that add up to more than the buffer, and lossy buffers, queue
/// caps or dynamic thresholds smaller than one full packet (every data packet
/// would be dropped).
fn validate_buffers(sc: &Scenario, topo: &Topology) -> CfgResult<()> {
    let sw = &sc.switch;
    let mtu = (sc.packets.payload + sc.packets.header) as u64;
    let mib = |b: u64| format!("{:.2} MiB", b as f64 / (1u64 << 20) as f64);
    let lossy_fifo = !sw.pfc.enabled && sw.buffer_model == "shared" && sw.discipline != "rank";
    if lossy_fifo {
        let small = |f: &str, v: u64, what: &str| {
            Err(ConfigError::new(
                f,
                v,
                format!("{what} is smaller than one full packet ({mtu} bytes): every data packet would be dropped"),
            ))
        };
        if sw.buffer.0 < mtu {
            return small("switch.buffer", sw.buffer.0, "the switch buffer");
        }
        if sw.queue_cap.0 < mtu {
            return small("switch.queue_cap", sw.queue_cap.0, "the queue cap");
        }
        if sw.dt_alpha > 0.0 && sw.dt_alpha * (sw.buffer.0 as f64) < mtu as f64 {
            return Err(ConfigError::new(
                "switch.dt_alpha",
                sw.dt_alpha,
                format!(
                    "the dynamic threshold of an empty buffer (dt_alpha x switch.buffer = {:.0} bytes) is smaller \
                     than one full packet ({mtu} bytes): every data packet would be dropped",
                    sw.dt_alpha * sw.buffer.0 as f64
                ),
            ));
        }
    }
    for n in topo.nodes.iter().filter(|n| matches!(n.kind, NodeKind::Switch(_))) {
        let ports = n.ports.len() as u64;
        if sw.pfc.enabled {
            let classes = switch_queues(sw) as u64 - 1;
            let reserve = sw.pfc.reserve.0.saturating_mul(ports * classes);
            let headroom: u64 = n.ports.iter().map(|&p| pfc_headroom(sw, topo, p, mtu)).sum();
            let need = reserve.saturating_add(headroom);
            if need > sw.buffer.0 {
                let how = if sw.pfc.headroom.0 > 0 {
                    format!("switch.pfc.headroom = {} bytes per port", sw.pfc.headroom.0)
                } else {
                    "computed from the links: rate x (2 x delay + 1 us) + 2 packets per port".to_string()
                };
                return Err(ConfigError::new(
                    "switch.buffer",
                    sw.buffer.0,
                    format!(
                        "switch {} has {ports} ports; its PFC reserves (switch.pfc.reserve = {} bytes x {ports} ports \
                         x {classes} classes = {}) plus headroom ({how}: {}) need {}, more than the buffer ({}). \
                         Raise switch.buffer to at least {need} bytes, or lower switch.pfc.reserve or \
                         switch.pfc.headroom",
                        n.name,
                        sw.pfc.reserve.0,
                        mib(reserve),
                        mib(headroom),
                        mib(need),
                        mib(sw.buffer.0)
                    ),
                ));
            }
        }
        if sw.port_buffer.0 > 0 && (sw.buffer_model == "static" || sw.discipline == "rank") {
            let queues = if sw.buffer_model == "static" { switch_queues(sw) as u64 - 1 } else { 1 };
            let need = sw.port_buffer.0.saturating_mul(ports * queues);
            if need > sw.buffer.0 {
                return Err(ConfigError::new(
                    "switch.port_buffer",
                    sw.port_buffer.0,
                    format!(
                        "x {ports} ports x {queues} data queues of switch {} is {need} bytes, more than the switch \
                         buffer (switch.buffer = {} bytes); raise switch.buffer or lower switch.port_buffer",
                        n.name, sw.buffer.0
                    ),
                ));
            }
        }
    }
    Ok(())
}

impl Simulation {
    /// What a scenario (JSON) would cost, without building it: the checks up
    /// to the budgets run (a scenario they refuse is an error), the workloads
    /// are counted but not generated, and the budgets of `[limits]` are
    /// compared: `"refused"` holds the error a build would raise, or null.
    pub fn estimate_json(json: &str, base_dir: &Path) -> CfgResult<serde_json::Value> {
        let sc = parse_scenario(json)?;
        validate(&sc)?;
        let topo = Topology::build(&sc.topology)?;
        validate_disciplines(&sc, &topo)?;
        validate_buffers(&sc, &topo)?;
        let builder = WorkloadBuilder::new(&topo, sc.duration.0, &sc.cc, base_dir, sc.switch.queues);
        let traffic = builder.estimate(&sc.workload)?;
        let est = crate::limits::estimate(&sc, &topo, &traffic);
        let refused = crate::limits::check_intervals(&sc, &topo, &traffic)
            .and_then(|_| crate::limits::check(&sc, &traffic, &est))
            .err()
            .map(|e| e.to_string());
        let mut v = est.to_json(&sc.limits);
        v["refused"] = serde_json::json!(refused);
        Ok(v)
    }
}
