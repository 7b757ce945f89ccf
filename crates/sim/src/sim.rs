//! The simulation: builds the network from a scenario and runs its events.
//!
//! Event handlers follow a packet's life: a host NIC picks a flow and
//! transmits (`host_try_send`), the port serializes and puts the packet on the
//! wire (`transmit`), it arrives at the peer (`on_arrive`), a switch admits,
//! marks and queues it (`switch_receive`) and later dequeues it
//! (`switch_try_send`), and the destination host consumes it
//! (`host_receive`), answering with ACK/NACK/CNP/probe replies that travel
//! back the same way.

use crate::agent::{ActionMap, AgentCc, AgentSpec};
use crate::cc::{AckEvent, Cc, CcCtx, CongestionControl, FlowCtl, ProbeEvent, Transport};
use crate::config::{parse_scenario, CfgResult, ConfigError, Scenario};
use crate::engine::{Event, EventQueue};
use crate::host::{Flow, Host, SchedState};
use crate::net::port::{Port, PortStats, Queue, Red, SchedKind};
use crate::net::switch::{Admit, Mmu};
use crate::packet::{IntHop, PacketKind, PacketPool, PktId};
use crate::policy::{Mlp, Precision};
use crate::topology::{ecmp_index, NodeKind, Topology};
use crate::units::{fmt_time, ser_time, Time, SEC, US};
use crate::workload::{FlowSpec, WorkloadBuilder, UNLIMITED};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::cmp::Reverse;
use std::path::Path;
use std::sync::Arc;

/// An item of the application data schedule.
#[derive(Clone, Copy, Debug)]
enum AppAction {
    Start,
    Message(u64),
    Stop,
}

/// Network-wide packet accounting for the conservation check.
#[derive(Clone, Debug, Default)]
pub struct Conservation {
    /// Data wire bytes transmitted by host NICs (including retransmissions).
    pub sent_bytes: u64,
    /// Data wire bytes that reached their destination host.
    pub delivered_bytes: u64,
    /// Data wire bytes dropped in switches.
    pub dropped_bytes: u64,
}

/// Samples of the time series.
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Sample times.
    pub times: Vec<Time>,
    /// Switch ports sampled (global ids).
    pub ports: Vec<u32>,
    /// Per sample, per sampled port: queue bytes.
    pub queue: Vec<f32>,
    /// Per sample, per sampled port: transmit rate since the previous sample (Gb/s).
    pub tx_gbps: Vec<f32>,
    /// Whether per-flow rates are recorded.
    pub flows_on: bool,
    /// Per sample, per flow: delivery rate since the previous sample (Gb/s).
    pub flow_gbps: Vec<f32>,
    last_tx: Vec<u64>,
}

/// A running simulation.
pub struct Simulation {
    /// The scenario it runs.
    pub scenario: Scenario,
    /// The network graph.
    pub topo: Topology,
    /// All ports.
    pub ports: Vec<Port>,
    /// Host NICs.
    pub hosts: Vec<Host>,
    /// Switch buffers, indexed by switch.
    pub mmus: Vec<Mmu>,
    /// Local index of each port within its node.
    port_local: Vec<u16>,
    /// All flows.
    pub flows: Vec<Flow>,
    /// Packet pool.
    pub pool: PacketPool,
    events: EventQueue,
    rng: Xoshiro256PlusPlus,
    /// `host.tx_jitter` (read on every host transmission).
    tx_jitter: f64,
    now: Time,
    end: Time,
    window: (Time, Time),
    in_window: bool,
    app: Vec<(Time, u32, AppAction)>,
    app_next: usize,
    /// Events processed.
    pub event_count: u64,
    /// Packet transmissions over links.
    pub packet_hops: u64,
    /// Conservation counters.
    pub cons: Conservation,
    /// Sampled time series.
    pub series: Series,
    sample_interval: Time,
    max_outstanding: u64,
    burst: u64,
    ecn_red: Option<Red>,
    /// The agent bridge, when the scenario has an `[agent]` table.
    pub bridge: Option<Bridge>,
}

/// Decision requests (and ends) of agent flows, in the order they arose.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// Flow (agent) ids.
    pub flows: Vec<u32>,
    /// Simulated time of each request.
    pub times: Vec<Time>,
    /// Observations, one row of `dim` values per entry.
    pub obs: Vec<f32>,
    /// Reward of each agent's previous action.
    pub rewards: Vec<f32>,
    /// The flow ended (its data is all delivered or it stopped): no action needed.
    pub done: Vec<bool>,
    /// The run ended with the flow still active: no action needed.
    pub truncated: Vec<bool>,
}

impl Batch {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    fn clear(&mut self) {
        self.flows.clear();
        self.times.clear();
        self.obs.clear();
        self.rewards.clear();
        self.done.clear();
        self.truncated.clear();
    }
}

/// The simulator side of the agent bridge (see `crate::agent`).
pub struct Bridge {
    /// The checked `[agent]` table.
    pub spec: Arc<AgentSpec>,
    /// Observation length.
    pub dim: usize,
    /// The batch being collected or waiting for actions.
    pub batch: Batch,
    /// A batch is out and waits for `agent_act`.
    awaiting: bool,
    /// The stepping API is in use (otherwise external decisions keep the rate).
    stepping: bool,
    /// Truncation entries were emitted.
    ended: bool,
    /// Native policy and its scratch space.
    native: Option<(Mlp, Vec<f32>)>,
    /// Decisions requested so far.
    pub decisions: u64,
}

fn build_err<T>(r: CfgResult<T>) -> CfgResult<T> {
    r
}

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
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(sc.seed);
        let end = sc.duration.0;
        let specs = build_err(
            WorkloadBuilder::new(&topo, end, &sc.cc, base_dir, sc.switch.queues).build(&sc.workload, &mut rng),
        )?;
        let window = match sc.metrics.window {
            Some([a, b]) => (a.0, b.0),
            None => (0, end),
        };
        let sw = &sc.switch;
        let queues = sw.queues as usize;
        let sched = match sw.scheduler.as_str() {
            "strict" => SchedKind::Strict,
            "rr" => SchedKind::RoundRobin,
            "wrr" => SchedKind::Wrr,
            "drr" => SchedKind::Drr,
            _ => unreachable!("checked by validate"),
        };
        let ecn_red = sw.ecn.enabled.then_some(Red { kmin: sw.ecn.kmin.0, kmax: sw.ecn.kmax.0, pmax: sw.ecn.pmax });
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
                let nq = if is_host { 1 } else { queues };
                let qs = (0..nq)
                    .map(|q| Queue {
                        red: if q > 0 { ecn_red } else { None },
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
                    queues: qs,
                    queued: 0,
                    sched,
                    sched_cur: 1,
                    sched_fresh: true,
                    quantum: sw.quantum.0,
                    ecn_at_dequeue: sw.ecn.at == "dequeue",
                    busy_until: 0,
                    tx_pending: false,
                    paused: 0,
                    paused_since: 0,
                    pfc_out: Default::default(),
                    wire: Default::default(),
                    tx_bytes: 0,
                    stats: PortStats::default(),
                }
            })
            .collect();
        let mtu_wire = (sc.packets.payload + sc.packets.header) as u64;
        let mmus = topo
            .nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Switch(_)))
            .map(|n| {
                let headroom = n
                    .ports
                    .iter()
                    .map(|&p| {
                        if sw.pfc.headroom.0 > 0 {
                            sw.pfc.headroom.0
                        } else {
                            // Everything that can still arrive after XOFF: a cable round
                            // trip, a packet in flight each way and 1 us of response time.
                            let ps = &topo.ports[p as usize];
                            let back = topo.ports[ps.peer as usize].delay;
                            let bytes_per_ps = ps.rate_bps as f64 / 8.0 / SEC as f64;
                            (bytes_per_ps * (ps.delay + back + US) as f64) as u64 + 2 * mtu_wire
                        }
                    })
                    .collect();
                Mmu::new(
                    sw.buffer.0,
                    sw.queue_cap.0,
                    sw.dt_alpha,
                    sw.pfc.enabled,
                    sw.pfc.alpha,
                    sw.pfc.reserve.0,
                    sw.pfc.resume_offset.0,
                    queues,
                    headroom,
                )
            })
            .collect();
        let hosts = (0..topo.n_hosts)
            .map(|h| Host { port: topo.host_port(h), wake_at: Time::MAX, ..Host::default() })
            .collect();
        let mut sim = Simulation {
            max_outstanding: if sc.host.max_outstanding.0 == 0 { u64::MAX } else { sc.host.max_outstanding.0 },
            burst: sc.host.burst.0.max(1),
            sample_interval: sc.metrics.sample_interval.0,
            ecn_red,
            bridge: None,
            topo,
            ports,
            hosts,
            mmus,
            port_local,
            flows: Vec::with_capacity(specs.len()),
            pool: PacketPool::default(),
            events: EventQueue::default(),
            rng,
            tx_jitter: sc.host.tx_jitter,
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
        };
        sim.bridge = build_bridge(&sim.scenario, base_dir)?;
        sim.create_flows(specs)?;
        sim.schedule_initial();
        Ok(sim)
    }

    fn create_flows(&mut self, specs: Vec<FlowSpec>) -> CfgResult<()> {
        let pk = &self.scenario.packets;
        let (payload, header, ack) = (pk.payload as u64, pk.header as u64, pk.ack as u64);
        let min_frac = self.scenario.host.min_rate_fraction;
        // Flows that share a CC configuration share its parsed form.
        let mut cc_cache: Vec<(&crate::config::CcConfig, Cc)> = Vec::new();
        let mut built: Vec<Cc> = Vec::with_capacity(specs.len());
        for s in &specs {
            let cc = match cc_cache.iter().find(|(c, _)| **c == s.cc) {
                Some((_, cc)) => cc.clone(),
                None if s.cc.algorithm == "agent" => {
                    let field = &s.cc_field;
                    let Some(bridge) = &self.bridge else {
                        return Err(ConfigError::new(
                            format!("{field}.algorithm"),
                            "\"agent\"",
                            "agent flows need an [agent] table in the scenario",
                        ));
                    };
                    if let Some(k) = s.cc.params.keys().next() {
                        return Err(ConfigError::new(
                            format!("{field}.{k}"),
                            "",
                            "the agent CC takes no parameters here; configure it in [agent]",
                        ));
                    }
                    let cc = Cc::Agent(Box::new(AgentCc::new(bridge.spec.clone())));
                    cc_cache.push((&s.cc, cc.clone()));
                    cc
                }
                None => {
                    let cc = Cc::from_config(&s.cc, &s.cc_field)?;
                    cc_cache.push((&s.cc, cc.clone()));
                    cc
                }
            };
            built.push(cc);
        }
        for (id, (s, cc)) in specs.iter().zip(built).enumerate() {
            let hash = mix32(id as u32 ^ (s.src << 16) ^ s.dst.rotate_left(8));
            let fwd = self.topo.path(s.src, s.dst, hash);
            let rev = self.topo.path(s.dst, s.src, reverse_hash(hash));
            let line = self.ports[self.hosts[s.src as usize].port as usize].rate_bps as f64;
            let full = payload + header;
            let prop: Time = fwd.iter().chain(rev.iter()).map(|&p| self.ports[p as usize].delay).sum();
            let ser_fwd: Time = fwd.iter().map(|&p| ser_time(full, self.ports[p as usize].rate_bps)).sum();
            let ser_rev: Time = rev.iter().map(|&p| ser_time(ack, self.ports[p as usize].rate_bps)).sum();
            let base_rtt = prop + ser_fwd + ser_rev;
            let min_rate = fwd.iter().map(|&p| self.ports[p as usize].rate_bps).min().unwrap_or(1);
            let ideal_fct = if s.size == UNLIMITED {
                0
            } else {
                let pkts = s.size.div_ceil(payload);
                let wire = s.size + pkts * header;
                let first = s.size.min(payload) + header;
                let first_trip: Time = fwd
                    .iter()
                    .map(|&p| ser_time(first, self.ports[p as usize].rate_bps) + self.ports[p as usize].delay)
                    .sum();
                let back: Time = rev
                    .iter()
                    .map(|&p| ser_time(ack, self.ports[p as usize].rate_bps) + self.ports[p as usize].delay)
                    .sum();
                first_trip + ser_time(wire - first, min_rate) + back
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
                _ => cc.transport(),
            };
            let rto = match transport {
                // Until RTT samples exist, never time out before a round trip is possible.
                Transport::Tcp => self.scenario.host.rto.0.max(2 * base_rtt),
                Transport::GoBackN => self.scenario.host.rto.0,
            };
            self.flows.push(Flow {
                src: s.src,
                dst: s.dst,
                class: s.class,
                start: s.start,
                stop: s.stop,
                hash,
                cc,
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
                    decision_due: false,
                },
                next_avail: 0.0,
                sched: SchedState::Idle,
                sched_gen: 0,
                last_pkt_bytes: full as u32,
                last_progress: 0,
                timer_gen: 0,
                timer_at: None,
                started: false,
                finished: None,
                rcv_nxt: 0,
                unacked_pkts: 0,
                last_cnp: None,
                last_nack: None,
                mi_start: 0,
                mi_bytes: 0,
                mi_pkts: 0,
                mi_nacks: 0,
                mi_cnps: 0,
                messages,
                msg_next: 0,
                sent_bytes: 0,
                retx_bytes: 0,
                nacks: 0,
                cnps: 0,
                timeouts: 0,
                last_int_hops: 0,
                transport,
                ooo: Vec::new(),
                dup_acks: 0,
                recover: None,
                retx: None,
                srtt: None,
                rto,
                min_rtt: None,
                max_sent: 0,
                delivered_at_window: [None; 2],
                delivered_at_sample: 0,
                ideal_fct,
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
        // Stable sort keeps generation order among equal times: deterministic.
        self.app.sort_by_key(|a| a.0);
        Ok(())
    }

    fn schedule_initial(&mut self) {
        if let Some(&(t, _, _)) = self.app.first() {
            self.events.push(t, Event::AppData);
        }
        if self.window.0 == 0 {
            self.window_start();
        } else {
            self.events.push(self.window.0, Event::WindowStart);
        }
        self.events.push(self.window.1, Event::WindowEnd);
        let flows_on = match &self.scenario.metrics.flow_series {
            serde_json::Value::Bool(b) => *b,
            _ => self.flows.len() <= 1024,
        };
        self.series.flows_on = flows_on;
        self.series.ports = (0..self.ports.len() as u32).filter(|&p| !self.ports[p as usize].is_host).collect();
        self.series.last_tx = vec![0; self.series.ports.len()];
        if self.sample_interval > 0 {
            self.events.push(self.sample_interval.min(self.end), Event::Sample);
        }
        if self.scenario.host.rto.0 > 0 {
            let period = self.rto_sweep_period();
            self.events.push(period, Event::RtoSweep { host: 0 });
        }
    }

    /// Current simulated time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// End of the run.
    pub fn end(&self) -> Time {
        self.end
    }

    /// Pending events (for diagnostics).
    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    /// Runs every event up to and including time `t` (capped at the end of the
    /// run); returns true when the run is over.
    pub fn run_until(&mut self, t: Time) -> bool {
        let t = t.min(self.end);
        while let Some(et) = self.events.peek_time() {
            if et > t {
                break;
            }
            let (time, ev) = self.events.pop().expect("peeked");
            self.now = time;
            self.event_count += 1;
            self.dispatch(ev);
        }
        self.now = self.now.max(t);
        self.now >= self.end
    }

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::TxDone { port } => {
                let pt = &mut self.ports[port as usize];
                pt.tx_pending = false;
                self.try_send(port);
            }
            Event::Arrive { port } => self.on_arrive(port),
            Event::NicWake { host } => {
                if self.hosts[host as usize].wake_at == self.now {
                    self.hosts[host as usize].wake_at = Time::MAX;
                    let p = self.hosts[host as usize].port;
                    self.try_send(p);
                }
            }
            Event::AppData => self.on_app_data(),
            Event::RtoSweep { .. } => self.rto_sweep(),
            Event::CcTimer { flow, generation } => {
                let f = &mut self.flows[flow as usize];
                if f.timer_gen == generation && f.finished.is_none() {
                    f.timer_at = None;
                    f.ctl.timer = None;
                    self.cc_event(flow, |cc, ctx| cc.on_timer(ctx));
                }
            }
            Event::ApplyAction { flow } => self.on_apply_action(flow),
            Event::Sample => self.take_sample(),
            Event::WindowStart => self.window_start(),
            Event::WindowEnd => self.window_end(),
        }
    }

    // ---------------------------------------------------------------- links

    /// Starts transmitting `pid` on `port` now.
    #[inline]
    fn transmit(&mut self, port: u32, pid: PktId) {
        let size = self.pool.get(pid).size as u64;
        let pt = &mut self.ports[port as usize];
        let ser = if pt.ps_per_byte > 0 { size * pt.ps_per_byte } else { ser_time(size, pt.rate_bps) };
        pt.busy_until = self.now + ser;
        pt.tx_bytes += size;
        let mut arrival = self.now + ser + pt.delay;
        if pt.is_host && self.tx_jitter > 0.0 {
            arrival += (self.rng.random::<f64>() * self.tx_jitter * ser as f64) as Time;
            if let Some(&(last, _)) = pt.wire.back() {
                arrival = arrival.max(last);
            }
        }
        let first = pt.wire.is_empty();
        pt.wire.push_back((arrival, pid));
        // A port with nothing else to send needs no wake-up when this packet
        // ends; a later packet arms one (see `try_send`). ACK paths are mostly
        // like this, which saves an event per hop there. (Host ids equal node ids.)
        let more = pt.queued > 0
            || !pt.pfc_out.is_empty()
            || (pt.is_host && {
                let h = &self.hosts[pt.node as usize];
                h.current.is_some() || !h.ready.is_empty()
            });
        if more {
            pt.tx_pending = true;
            self.events.push(self.now + ser, Event::TxDone { port });
        }
        if first {
            self.events.push(arrival, Event::Arrive { port });
        }
        self.packet_hops += 1;
    }

    fn try_send(&mut self, port: u32) {
        let pt = &mut self.ports[port as usize];
        if pt.tx_pending {
            return;
        }
        if pt.busy_until > self.now {
            pt.tx_pending = true;
            self.events.push(pt.busy_until, Event::TxDone { port });
            return;
        }
        if pt.is_host {
            self.host_try_send(port);
        } else {
            self.switch_try_send(port);
        }
    }

    fn on_arrive(&mut self, port: u32) {
        let pt = &mut self.ports[port as usize];
        let (_, pid) = pt.wire.pop_front().expect("arrival without a packet on the wire");
        if let Some(&(t, _)) = pt.wire.front() {
            self.events.push(t, Event::Arrive { port });
        }
        let in_port = pt.peer;
        let node = self.ports[in_port as usize].node;
        match self.topo.nodes[node as usize].kind {
            NodeKind::Host(h) => self.host_receive(h, in_port, pid),
            NodeKind::Switch(s) => self.switch_receive(s, in_port, pid),
        }
    }

    /// Applies a PFC frame that arrived on `port` (it pauses that port's transmitter).
    fn apply_pfc(&mut self, port: u32, pid: PktId) {
        let (class, pause) = {
            let p = self.pool.get(pid);
            (p.class, p.pause)
        };
        self.pool.free(pid);
        let in_window = self.in_window;
        let now = self.now;
        let pt = &mut self.ports[port as usize];
        let bit = 1u8 << class;
        if pause {
            if pt.paused == 0 {
                pt.paused_since = now;
            }
            pt.paused |= bit;
        } else if pt.paused & bit != 0 {
            pt.paused &= !bit;
            if in_window && pt.paused == 0 {
                let since = pt.paused_since.max(self.window.0);
                pt.stats.win_paused_time += now.saturating_sub(since);
            }
            if pt.is_host {
                let h = match self.topo.nodes[pt.node as usize].kind {
                    NodeKind::Host(h) => h,
                    NodeKind::Switch(_) => unreachable!(),
                };
                let parked = std::mem::take(&mut self.hosts[h as usize].parked);
                for f in parked {
                    self.flows[f as usize].sched = SchedState::Idle;
                    self.schedule_flow(f);
                }
            }
            self.try_send(port);
        }
    }

    /// Queues a PFC frame on `port` (sent before any queued packet).
    fn send_pfc(&mut self, port: u32, class: u8, pause: bool) {
        let pid = self.pool.alloc();
        let size = self.scenario.packets.pfc;
        let p = self.pool.get_mut(pid);
        p.kind = PacketKind::Pfc;
        p.class = class;
        p.pause = pause;
        p.size = size;
        let pt = &mut self.ports[port as usize];
        pt.pfc_out.push_back(pid);
        if pause {
            pt.stats.pfc_pauses_sent += 1;
            if self.in_window {
                pt.stats.win_pfc_pauses_sent += 1;
            }
        }
        self.try_send(port);
    }

    // ------------------------------------------------------------- switches

    fn switch_receive(&mut self, s: u32, in_port: u32, pid: PktId) {
        let (kind, flow, dst, class, size) = {
            let p = self.pool.get(pid);
            (p.kind, p.flow, p.dst, p.class, p.size as u64)
        };
        if kind == PacketKind::Pfc {
            self.apply_pfc(in_port, pid);
            return;
        }
        let hash = if kind == PacketKind::Data || kind == PacketKind::Probe {
            self.flows[flow as usize].hash
        } else {
            reverse_hash(self.flows[flow as usize].hash)
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

    fn switch_try_send(&mut self, port: u32) {
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

    // ---------------------------------------------------------------- hosts

    fn host_of_port(&self, port: u32) -> u32 {
        match self.topo.nodes[self.ports[port as usize].node as usize].kind {
            NodeKind::Host(h) => h,
            NodeKind::Switch(_) => unreachable!("not a host port"),
        }
    }

    /// Puts a flow that may be able to send into its NIC's scheduler.
    fn schedule_flow(&mut self, fid: u32) {
        let f = &mut self.flows[fid as usize];
        if f.sched != SchedState::Idle || !f.can_send(self.max_outstanding) {
            return;
        }
        let h = f.src as usize;
        let port = self.hosts[h].port;
        if self.ports[port as usize].is_paused(f.class) {
            f.sched = SchedState::Parked;
            self.hosts[h].parked.push(fid);
            return;
        }
        let t = f.next_avail.ceil() as Time;
        if t <= self.now {
            f.sched = SchedState::Ready;
            self.hosts[h].ready.push_back(fid);
            self.try_send(port);
        } else {
            f.sched = SchedState::Sleeping;
            f.sched_gen = f.sched_gen.wrapping_add(1);
            self.hosts[h].sleeping.push(Reverse((t, fid, f.sched_gen)));
            self.arm_nic(h as u32, t);
        }
    }

    fn arm_nic(&mut self, h: u32, t: Time) {
        let host = &mut self.hosts[h as usize];
        if t < host.wake_at {
            host.wake_at = t;
            self.events.push(t, Event::NicWake { host: h });
        }
    }

    /// Picks the flow whose packet goes next, or `None`.
    fn host_pick(&mut self, h: u32) -> Option<u32> {
        let now = self.now;
        let port = self.hosts[h as usize].port;
        if let Some(c) = self.hosts[h as usize].current {
            let f = &self.flows[c as usize];
            let paused = self.ports[port as usize].is_paused(f.class);
            if self.hosts[h as usize].burst_left > 0 && !paused && f.can_send(self.max_outstanding) {
                return Some(c);
            }
            self.hosts[h as usize].current = None;
            self.flows[c as usize].sched = SchedState::Idle;
            self.schedule_flow(c);
        }
        let host = &mut self.hosts[h as usize];
        while let Some(&Reverse((t, fid, gen))) = host.sleeping.peek() {
            if t > now {
                break;
            }
            host.sleeping.pop();
            let f = &mut self.flows[fid as usize];
            if f.sched == SchedState::Sleeping && f.sched_gen == gen {
                f.sched = SchedState::Ready;
                host.ready.push_back(fid);
            }
        }
        while let Some(fid) = host.ready.pop_front() {
            let f = &mut self.flows[fid as usize];
            if f.sched != SchedState::Ready {
                continue;
            }
            if self.ports[port as usize].is_paused(f.class) {
                f.sched = SchedState::Parked;
                host.parked.push(fid);
                continue;
            }
            if !f.can_send(self.max_outstanding) {
                f.sched = SchedState::Idle;
                continue;
            }
            f.sched = SchedState::Current;
            host.current = Some(fid);
            host.burst_left = self.burst;
            return Some(fid);
        }
        if let Some(&Reverse((t, _, _))) = host.sleeping.peek() {
            self.arm_nic(h, t);
        }
        None
    }

    fn host_try_send(&mut self, port: u32) {
        let pt = &mut self.ports[port as usize];
        let control = match pt.pfc_out.pop_front() {
            Some(pid) => Some(pid),
            None => pt.queues[0].pkts.pop_front().inspect(|&pid| {
                let size = self.pool.get(pid).size as u64;
                pt.queues[0].bytes -= size;
                pt.queued -= size;
            }),
        };
        if let Some(pid) = control {
            self.transmit(port, pid);
            // Control packets go first, so this opportunity did not look at the
            // flows waiting for their pacer: make sure the NIC wakes up for the
            // earliest of them, or a steady stream of ACKs could starve them.
            let h = self.host_of_port(port);
            let busy_until = self.ports[port as usize].busy_until;
            if let Some(&Reverse((t, _, _))) = self.hosts[h as usize].sleeping.peek() {
                self.arm_nic(h, t.max(busy_until));
            }
            return;
        }
        let h = self.host_of_port(port);
        let Some(fid) = self.host_pick(h) else { return };
        let pid = self.make_data(fid);
        let size = self.pool.get(pid).size;
        self.cons.sent_bytes += size as u64;
        self.transmit(port, pid);
        let burst_end = {
            let host = &mut self.hosts[h as usize];
            host.burst_left = host.burst_left.saturating_sub(size as u64);
            host.burst_left == 0
        };
        // The most frequent CC event: skip the bookkeeping when it changed nothing.
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        let (old_rate, old_timer) = (f.ctl.rate, f.ctl.timer);
        f.cc.on_send(&mut CcCtx { now, flow: &mut f.ctl }, size);
        if f.ctl.rate != old_rate || f.ctl.timer != old_timer || f.ctl.probe_requested || f.ctl.decision_due {
            self.after_cc(fid, old_rate, old_timer);
        }
        let f = &self.flows[fid as usize];
        if (burst_end || !f.can_send(self.max_outstanding)) && self.hosts[h as usize].current == Some(fid) {
            self.hosts[h as usize].current = None;
            self.flows[fid as usize].sched = SchedState::Idle;
            self.schedule_flow(fid);
        }
    }

    /// Builds the next data packet of flow `fid` and advances its sender state.
    fn make_data(&mut self, fid: u32) -> PktId {
        let pk = &self.scenario.packets;
        let int_header = self.scenario.switch.int_header;
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        let seq = f.retx.take().unwrap_or(f.ctl.snd_nxt);
        let payload = (f.ctl.app_limit.max(f.max_sent) - seq).min(pk.payload as u64) as u32;
        let size = payload + pk.header + if f.ctl.want_int { int_header } else { 0 };
        if f.inflight() == 0 {
            f.last_progress = now;
        }
        let pid = self.pool.alloc();
        let p = self.pool.get_mut(pid);
        p.kind = PacketKind::Data;
        p.flow = fid;
        p.src = f.src;
        p.dst = f.dst;
        p.seq = seq;
        p.payload = payload;
        p.size = size;
        p.class = f.class;
        p.ts_tx = now;
        p.want_int = f.ctl.want_int;
        p.n_int = 0;
        if f.ctl.probe_requested {
            f.ctl.probe_requested = false;
            p.probe = true;
        }
        if seq < f.max_sent {
            f.retx_bytes += payload as u64;
        }
        if seq == f.ctl.snd_nxt {
            f.ctl.snd_nxt += payload as u64;
        }
        f.max_sent = f.max_sent.max(f.ctl.snd_nxt);
        f.sent_bytes += size as u64;
        f.mi_bytes += size as u64;
        f.mi_pkts += 1;
        f.last_pkt_bytes = size;
        let gap = size as f64 * 8.0 * SEC as f64 / f.ctl.rate;
        f.next_avail = f.next_avail.max(now as f64) + gap;
        pid
    }

    /// Queues a control packet on host `h`'s NIC (served before data).
    fn send_control(&mut self, h: u32, pid: PktId) {
        let port = self.hosts[h as usize].port;
        let size = self.pool.get(pid).size as u64;
        let pt = &mut self.ports[port as usize];
        pt.queues[0].pkts.push_back(pid);
        pt.queues[0].bytes += size;
        pt.queued += size;
        self.try_send(port);
    }

    /// Makes a control packet of flow `fid` travelling from `from` to `to`.
    fn control_packet(&mut self, fid: u32, kind: PacketKind, from: u32, to: u32, size: u32, seq: u64) -> PktId {
        let data_class = self.flows[fid as usize].class;
        let high = self.scenario.switch.ack_high_priority;
        let pid = self.pool.alloc();
        let p = self.pool.get_mut(pid);
        p.kind = kind;
        p.flow = fid;
        p.src = from;
        p.dst = to;
        p.seq = seq;
        p.size = size;
        p.n_int = 0;
        p.class = match kind {
            PacketKind::Ack | PacketKind::Nack if !high => data_class,
            PacketKind::Probe => data_class,
            _ => 0,
        };
        pid
    }

    fn host_receive(&mut self, h: u32, in_port: u32, pid: PktId) {
        let kind = self.pool.get(pid).kind;
        match kind {
            PacketKind::Pfc => self.apply_pfc(in_port, pid),
            PacketKind::Data => {
                let size = self.pool.get(pid).size as u64;
                self.cons.delivered_bytes += size;
                self.receive_data(h, pid);
            }
            PacketKind::Probe => {
                let (fid, src, ts) = {
                    let p = self.pool.get(pid);
                    (p.flow, p.src, p.ts_tx)
                };
                self.pool.free(pid);
                let size = self.scenario.packets.probe;
                let r = self.control_packet(fid, PacketKind::ProbeReply, h, src, size, 0);
                self.pool.get_mut(r).ts_tx = ts;
                self.send_control(h, r);
            }
            PacketKind::Ack => self.on_ack(pid),
            PacketKind::Nack => {
                let (fid, seq, ts) = {
                    let p = self.pool.get(pid);
                    (p.flow, p.seq, p.ts_tx)
                };
                self.pool.free(pid);
                let rtt = self.now.saturating_sub(ts);
                let f = &mut self.flows[fid as usize];
                f.nacks += 1;
                f.mi_nacks += 1;
                if seq >= f.ctl.snd_una && f.finished.is_none() {
                    // Everything below `seq` has arrived: go back to it.
                    if seq > f.ctl.snd_una {
                        f.ctl.snd_una = seq;
                        f.last_progress = self.now;
                    }
                    f.ctl.snd_nxt = seq;
                }
                self.cc_event(fid, |cc, ctx| cc.on_nack(ctx, seq, rtt));
                self.after_progress(fid);
            }
            PacketKind::Cnp => {
                let fid = self.pool.get(pid).flow;
                self.pool.free(pid);
                let f = &mut self.flows[fid as usize];
                f.cnps += 1;
                f.mi_cnps += 1;
                self.cc_event(fid, |cc, ctx| cc.on_cnp(ctx));
            }
            PacketKind::ProbeReply => {
                let (fid, ts) = {
                    let p = self.pool.get(pid);
                    (p.flow, p.ts_tx)
                };
                self.pool.free(pid);
                let now = self.now;
                let f = &mut self.flows[fid as usize];
                let ev = ProbeEvent {
                    rtt: now - ts,
                    bytes_sent: f.mi_bytes,
                    packets_sent: f.mi_pkts,
                    nacks: f.mi_nacks,
                    cnps: f.mi_cnps,
                    rate: f.ctl.rate,
                    interval: now - f.mi_start,
                };
                f.mi_start = now;
                f.mi_bytes = 0;
                f.mi_pkts = 0;
                f.mi_nacks = 0;
                f.mi_cnps = 0;
                self.cc_event(fid, |cc, ctx| cc.on_probe(ctx, &ev));
            }
        }
    }

    fn receive_data(&mut self, h: u32, pid: PktId) {
        let (fid, seq, payload, ce, probe, ts, hops, n_int) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.payload as u64, p.ce, p.probe, p.ts_tx, p.hops, p.n_int)
        };
        let pk = self.scenario.packets.clone();
        let host_cfg = &self.scenario.host;
        let (ack_every, cnp_interval, nack_interval) =
            (host_cfg.ack_every.max(1), host_cfg.cnp_interval.0, host_cfg.nack_interval.0);
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        let src = f.src;
        let tcp = f.transport == Transport::Tcp;
        let mut send_ack = false;
        let mut send_nack = None;
        if seq == f.rcv_nxt {
            f.rcv_nxt += payload;
            f.unacked_pkts += 1;
            let mut filled = false;
            while let Some(&(a, b)) = f.ooo.first() {
                if a > f.rcv_nxt {
                    break;
                }
                f.rcv_nxt = f.rcv_nxt.max(b);
                f.ooo.remove(0);
                filled = true;
            }
            let msg_end = f.messages.iter().any(|m| m.1 == f.rcv_nxt);
            send_ack = f.unacked_pkts >= ack_every || f.rcv_nxt == f.ctl.size || msg_end || probe || filled;
        } else if seq > f.rcv_nxt && tcp {
            // Keep the segment and answer with a duplicate ACK at once.
            insert_range(&mut f.ooo, seq, seq + payload);
            send_ack = true;
        } else if seq > f.rcv_nxt {
            let expected = f.rcv_nxt;
            let recent = matches!(f.last_nack, Some((t, s)) if s == expected && now < t + nack_interval);
            if !recent {
                f.last_nack = Some((now, expected));
                send_nack = Some(expected);
            }
        } else {
            // A duplicate after go-back-N: re-acknowledge so the sender catches up.
            send_ack = true;
        }
        let send_cnp = ce && !tcp && cnp_interval > 0 && f.last_cnp.is_none_or(|t| now >= t + cnp_interval);
        if send_cnp {
            f.last_cnp = Some(now);
        }
        let rcv_nxt = f.rcv_nxt;
        if send_ack {
            f.unacked_pkts = 0;
            let a = self.control_packet(fid, PacketKind::Ack, h, src, pk.ack, rcv_nxt);
            let p = self.pool.get_mut(a);
            p.ecn_echo = ce;
            p.ts_tx = ts;
            p.hops = hops;
            p.probe = probe;
            if n_int > 0 {
                self.pool.move_int(pid, a);
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

    fn on_ack(&mut self, pid: PktId) {
        let now = self.now;
        let (fid, seq, ecn, ts, hops) = {
            let p = self.pool.get(pid);
            (p.flow, p.seq, p.ecn_echo, p.ts_tx, p.hops)
        };
        let rto_min = self.scenario.host.rto_min.0;
        let f = &mut self.flows[fid as usize];
        let rtt = now - ts;
        f.min_rtt = Some(f.min_rtt.map_or(rtt, |m| m.min(rtt)));
        let newly = seq.saturating_sub(f.ctl.snd_una);
        let tcp = f.transport == Transport::Tcp;
        let mut recovery_ended = false;
        let mut fast_retransmit = false;
        if newly > 0 {
            f.ctl.snd_una = seq;
            f.last_progress = now;
            if f.ctl.snd_nxt < seq {
                f.ctl.snd_nxt = seq;
            }
        }
        if tcp {
            // RFC 6298 estimator; the ACK echoes the send time of the very
            // packet it answers, so retransmissions give valid samples too.
            let r = rtt as f64;
            let (srtt, var) = match f.srtt {
                None => (r, r / 2.0),
                Some((s, v)) => (0.875 * s + 0.125 * r, 0.75 * v + 0.25 * (s - r).abs()),
            };
            f.srtt = Some((srtt, var));
            if newly > 0 {
                f.rto = ((srtt + 4.0 * var) as Time).max(rto_min);
                f.dup_acks = 0;
                if let Some(rec) = f.recover {
                    if seq >= rec {
                        f.recover = None;
                        recovery_ended = true;
                    } else {
                        // NewReno partial ACK: the next hole is lost too.
                        f.retx = Some(seq);
                    }
                }
            } else if f.inflight() > 0 && f.finished.is_none() {
                f.dup_acks += 1;
                if f.dup_acks == 3 && f.recover.is_none() {
                    f.recover = Some(f.ctl.snd_nxt);
                    f.retx = Some(f.ctl.snd_una);
                    fast_retransmit = true;
                }
            }
        }
        if f.finished.is_none() {
            let old_rate = f.ctl.rate;
            let old_timer = f.ctl.timer;
            let int = self.pool.int_records(pid);
            f.last_int_hops = int.len() as u8;
            let ev = AckEvent {
                ack_seq: seq,
                newly_acked: newly,
                dup_acks: f.dup_acks,
                in_recovery: f.recover.is_some(),
                recovery_ended,
                ecn_echo: ecn,
                rtt,
                hops: hops as u32,
                int,
            };
            let mut ctx = CcCtx { now, flow: &mut f.ctl };
            f.cc.on_ack(&mut ctx, &ev);
            if fast_retransmit {
                f.cc.on_fast_retransmit(&mut ctx);
            }
            self.after_cc(fid, old_rate, old_timer);
        }
        self.pool.free(pid);
        self.after_progress(fid);
    }

    /// Bookkeeping after the cumulative ACK may have moved: completions and rescheduling.
    fn after_progress(&mut self, fid: u32) {
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        while f.msg_next < f.messages.len() && f.ctl.snd_una >= f.messages[f.msg_next].1 {
            f.messages[f.msg_next].2 = Some(now);
            f.msg_next += 1;
        }
        if f.finished.is_none() && f.ctl.snd_una >= f.ctl.app_limit && f.ctl.app_limit == f.ctl.size {
            f.finished = Some(now);
            f.timer_gen = f.timer_gen.wrapping_add(1);
            self.agent_ended(fid, false);
            return;
        }
        self.schedule_flow(fid);
    }

    // ---------------------------------------------------------- agent bridge

    /// A decision of agent flow `fid` is due: answer it natively or queue it.
    #[cold]
    #[inline(never)]
    fn on_decision(&mut self, fid: u32) {
        let now = self.now;
        let Some(bridge) = self.bridge.as_mut() else { return };
        let Cc::Agent(agent) = &mut self.flows[fid as usize].cc else { return };
        bridge.decisions += 1;
        let action = if let Some((mlp, scratch)) = bridge.native.as_mut() {
            let mut out = [0f32; 64];
            let n = mlp.outputs().min(64);
            mlp.forward(agent.observation(), &mut out[..n], scratch);
            if n > 1 {
                // Several outputs: a discrete policy's scores; take the best.
                (0..n).max_by(|&i, &j| out[i].total_cmp(&out[j])).unwrap_or(0) as f32
            } else {
                out[0]
            }
        } else if bridge.stepping {
            let b = &mut bridge.batch;
            b.flows.push(fid);
            b.times.push(now);
            b.obs.extend_from_slice(agent.observation());
            b.rewards.push(agent.last_reward);
            b.done.push(false);
            b.truncated.push(false);
            return;
        } else {
            // Nobody is stepping this simulation: hold the rate.
            neutral_action(&bridge.spec.action)
        };
        self.schedule_action(fid, now, action);
    }

    /// Applies `action` for the request made at `at` once the policy delay has passed.
    fn schedule_action(&mut self, fid: u32, at: Time, action: f32) {
        let delay = self.bridge.as_ref().map_or(0, |b| b.spec.policy_delay);
        if delay == 0 {
            self.cc_event(fid, |cc, ctx| {
                if let Cc::Agent(a) = cc {
                    a.apply(ctx, action)
                }
            });
        } else {
            if let Cc::Agent(a) = &mut self.flows[fid as usize].cc {
                a.pending_action = action;
            }
            self.events.push(at + delay, Event::ApplyAction { flow: fid });
        }
    }

    #[cold]
    #[inline(never)]
    fn on_apply_action(&mut self, fid: u32) {
        let f = &self.flows[fid as usize];
        if f.finished.is_some() {
            return;
        }
        let Cc::Agent(a) = &f.cc else { return };
        let action = a.pending_action;
        self.cc_event(fid, |cc, ctx| {
            if let Cc::Agent(a) = cc {
                a.apply(ctx, action)
            }
        });
    }

    /// Reports the end of agent flow `fid` to the policy (done or truncated).
    #[cold]
    #[inline(never)]
    fn agent_ended(&mut self, fid: u32, truncated: bool) {
        let now = self.now;
        let Some(bridge) = self.bridge.as_mut() else { return };
        if !bridge.stepping || bridge.native.is_some() {
            return;
        }
        let f = &mut self.flows[fid as usize];
        let Cc::Agent(agent) = &mut f.cc else { return };
        let ctx = CcCtx { now, flow: &mut f.ctl };
        let reward = agent.finish(&ctx);
        let b = &mut bridge.batch;
        b.flows.push(fid);
        b.times.push(now);
        b.obs.extend_from_slice(agent.observation());
        b.rewards.push(reward);
        b.done.push(!truncated);
        b.truncated.push(truncated);
    }

    /// Runs until the policy must answer: returns a batch of decision
    /// requests (see [`Simulation::batch`]) and whether the run is over.
    ///
    /// With `policy_delay` 0 a batch holds the requests made at one instant
    /// (blocking semantics); with a positive delay the simulation keeps going
    /// until the first request's action is due, so the batch gathers every
    /// request made meanwhile.
    pub fn agent_step(&mut self) -> Result<bool, String> {
        let Some(bridge) = self.bridge.as_mut() else {
            return Err("this scenario has no [agent] table".into());
        };
        if bridge.native.is_some() {
            return Err("this scenario's agents use a native policy; run it with run_until".into());
        }
        if bridge.awaiting {
            return Err("answer the last batch with agent_act() before stepping again".into());
        }
        bridge.stepping = true;
        bridge.batch.clear();
        let delay = bridge.spec.policy_delay;
        loop {
            let first = {
                let b = &self.bridge.as_ref().expect("bridge").batch;
                (0..b.len()).find(|&i| !b.done[i] && !b.truncated[i]).map(|i| b.times[i])
            };
            let Some(t) = self.events.peek_time().filter(|&t| t <= self.end) else { break };
            if let Some(t0) = first {
                if (delay == 0 && t > t0) || (delay > 0 && t >= t0 + delay) {
                    let bridge = self.bridge.as_mut().expect("bridge");
                    bridge.awaiting = true;
                    return Ok(false);
                }
            }
            let (time, ev) = self.events.pop().expect("peeked");
            self.now = time;
            self.event_count += 1;
            self.dispatch(ev);
        }
        // Out of events before the end, or at the end: the run is over.
        self.now = self.end;
        if !self.bridge.as_ref().expect("bridge").ended {
            self.bridge.as_mut().expect("bridge").ended = true;
            for fid in 0..self.flows.len() as u32 {
                let f = &self.flows[fid as usize];
                if f.started && f.finished.is_none() && matches!(f.cc, Cc::Agent(_)) {
                    self.agent_ended(fid, true);
                }
            }
        }
        let bridge = self.bridge.as_mut().expect("bridge");
        bridge.awaiting = bridge.batch.done.iter().zip(&bridge.batch.truncated).any(|(d, t)| !d && !t);
        Ok(true)
    }

    /// The batch returned by the last [`Simulation::agent_step`].
    pub fn batch(&self) -> Option<&Batch> {
        self.bridge.as_ref().map(|b| &b.batch)
    }

    /// Answers the last batch: one action per entry (entries that are done or
    /// truncated take none; their value is ignored).
    pub fn agent_act(&mut self, actions: &[f32]) -> Result<(), String> {
        let Some(bridge) = self.bridge.as_mut() else {
            return Err("this scenario has no [agent] table".into());
        };
        let n = bridge.batch.len();
        if actions.len() != n {
            return Err(format!("expected {n} actions (one per batch entry), got {}", actions.len()));
        }
        if !bridge.awaiting {
            return Ok(());
        }
        bridge.awaiting = false;
        let batch = std::mem::take(&mut bridge.batch);
        for (i, &a) in actions.iter().enumerate() {
            if batch.done[i] || batch.truncated[i] {
                continue;
            }
            self.schedule_action(batch.flows[i], batch.times[i], a);
        }
        self.bridge.as_mut().expect("bridge").batch = batch;
        Ok(())
    }

    /// Runs one CC callback on flow `fid` and applies what it changed.
    fn cc_event(&mut self, fid: u32, call: impl FnOnce(&mut Cc, &mut CcCtx)) {
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        let old_rate = f.ctl.rate;
        let old_timer = f.ctl.timer;
        let mut ctx = CcCtx { now, flow: &mut f.ctl };
        call(&mut f.cc, &mut ctx);
        self.after_cc(fid, old_rate, old_timer);
    }

    fn after_cc(&mut self, fid: u32, old_rate: f64, old_timer: Option<Time>) {
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        if f.ctl.rate != old_rate {
            // Rescale the wait for the last packet so the new rate applies at once.
            let per_bit = 8.0 * SEC as f64 * f.last_pkt_bytes as f64;
            f.next_avail += per_bit / f.ctl.rate - per_bit / old_rate;
            if f.sched == SchedState::Sleeping && f.ctl.rate > old_rate {
                f.sched = SchedState::Idle;
            }
        }
        if f.ctl.timer != old_timer || (f.ctl.timer.is_some() && f.timer_at != f.ctl.timer) {
            f.timer_gen = f.timer_gen.wrapping_add(1);
            f.timer_at = f.ctl.timer;
            if let Some(t) = f.ctl.timer {
                self.events.push(t, Event::CcTimer { flow: fid, generation: f.timer_gen });
            }
        }
        if f.ctl.decision_due {
            f.ctl.decision_due = false;
            self.on_decision(fid);
        }
        let f = &mut self.flows[fid as usize];
        if f.ctl.probe_requested && !f.can_send(self.max_outstanding) && f.started && f.finished.is_none() {
            f.ctl.probe_requested = false;
            let (src, dst) = (f.src, f.dst);
            let size = self.scenario.packets.probe;
            let p = self.control_packet(fid, PacketKind::Probe, src, dst, size, 0);
            self.pool.get_mut(p).ts_tx = now;
            self.send_control(src, p);
        }
        self.schedule_flow(fid);
    }

    // ----------------------------------------------------------- workloads

    fn on_app_data(&mut self) {
        while self.app_next < self.app.len() && self.app[self.app_next].0 <= self.now {
            let (_, fid, action) = self.app[self.app_next];
            self.app_next += 1;
            let f = &mut self.flows[fid as usize];
            match action {
                AppAction::Start => {
                    f.started = true;
                    f.mi_start = self.now;
                    f.ctl.app_limit = if f.ctl.size == UNLIMITED {
                        UNLIMITED
                    } else if f.messages.is_empty() {
                        f.ctl.size
                    } else {
                        f.messages[0].1
                    };
                    f.next_avail = self.now as f64;
                    self.cc_event(fid, |cc, ctx| cc.on_start(ctx));
                }
                AppAction::Message(b) => {
                    f.ctl.app_limit = f.ctl.app_limit.saturating_add(b).min(f.ctl.size);
                    self.schedule_flow(fid);
                }
                AppAction::Stop => {
                    if f.finished.is_none() {
                        // Stop offering data; what was sent still completes.
                        f.ctl.app_limit = f.ctl.app_limit.min(f.ctl.snd_nxt.max(f.max_sent));
                        f.ctl.size = f.ctl.app_limit;
                        f.messages.retain(|m| m.1 <= f.ctl.app_limit);
                        self.after_progress(fid);
                    }
                }
            }
        }
        if let Some(&(t, _, _)) = self.app.get(self.app_next) {
            self.events.push(t, Event::AppData);
        }
    }

    /// Timeouts are checked by one periodic sweep over the flows rather than a
    /// timer per flow: thousands of armed timers would bloat the event queue,
    /// while a sweep costs a few ns per flow and fires within a quarter of
    /// the timeout of its deadline.
    fn rto_sweep_period(&self) -> Time {
        let h = &self.scenario.host;
        let tcp = self.flows.iter().any(|f| f.transport == Transport::Tcp);
        let shortest = if tcp { h.rto.0.min(h.rto_min.0) } else { h.rto.0 };
        (shortest / 4).max(US)
    }

    fn rto_sweep(&mut self) {
        let now = self.now;
        for fid in 0..self.flows.len() as u32 {
            let f = &mut self.flows[fid as usize];
            if !f.started || f.finished.is_some() || f.inflight() == 0 || now < f.last_progress + f.rto {
                continue;
            }
            f.timeouts += 1;
            f.last_progress = now;
            f.ctl.snd_nxt = f.ctl.snd_una;
            if f.transport == Transport::Tcp {
                f.rto = (f.rto * 2).min(64 * SEC);
                f.dup_acks = 0;
                f.recover = None;
                f.retx = None;
            }
            self.cc_event(fid, |cc, ctx| cc.on_timeout(ctx));
            self.schedule_flow(fid);
        }
        let period = self.rto_sweep_period();
        self.events.push(now + period, Event::RtoSweep { host: 0 });
    }

    // -------------------------------------------------------------- metrics

    fn take_sample(&mut self) {
        let now = self.now;
        let dt = self.sample_interval as f64 / SEC as f64;
        self.series.times.push(now);
        for (i, &p) in self.series.ports.iter().enumerate() {
            let pt = &self.ports[p as usize];
            self.series.queue.push(pt.queued as f32);
            let d = pt.tx_bytes - self.series.last_tx[i];
            self.series.last_tx[i] = pt.tx_bytes;
            self.series.tx_gbps.push((d as f64 * 8.0 / dt / 1e9) as f32);
        }
        if self.series.flows_on {
            for f in &mut self.flows {
                let d = f.rcv_nxt - f.delivered_at_sample;
                f.delivered_at_sample = f.rcv_nxt;
                self.series.flow_gbps.push((d as f64 * 8.0 / dt / 1e9) as f32);
            }
        }
        if now + self.sample_interval <= self.end {
            self.events.push(now + self.sample_interval, Event::Sample);
        }
    }

    fn window_start(&mut self) {
        self.in_window = true;
        for pt in &mut self.ports {
            pt.stats.tx_at_window[0] = pt.tx_bytes;
        }
        for f in &mut self.flows {
            f.delivered_at_window[0] = Some(f.rcv_nxt);
        }
    }

    fn window_end(&mut self) {
        if !self.in_window {
            return;
        }
        self.in_window = false;
        let now = self.now;
        let start = self.window.0;
        for pt in &mut self.ports {
            pt.stats.tx_at_window[1] = pt.tx_bytes;
            if pt.paused != 0 {
                pt.stats.win_paused_time += now.saturating_sub(pt.paused_since.max(start));
            }
        }
        for f in &mut self.flows {
            f.delivered_at_window[1] = Some(f.rcv_nxt);
        }
    }

    /// Collection window (start, end).
    pub fn window(&self) -> (Time, Time) {
        self.window
    }

    /// Data wire bytes queued in switches or on links now.
    pub fn in_flight_data_bytes(&self) -> u64 {
        let mut total = 0;
        for pt in &self.ports {
            for q in &pt.queues {
                for &pid in &q.pkts {
                    let p = self.pool.get(pid);
                    if p.kind == PacketKind::Data {
                        total += p.size as u64;
                    }
                }
            }
            for &(_, pid) in &pt.wire {
                let p = self.pool.get(pid);
                if p.kind == PacketKind::Data {
                    total += p.size as u64;
                }
            }
        }
        total
    }

    // ------------------------------------------------- run-time switch control

    /// Sets ECN marking of data queue `queue` on switch port `port` while running.
    pub fn set_ecn(&mut self, port: u32, queue: usize, red: Option<Red>) -> Result<(), String> {
        let pt = self.ports.get_mut(port as usize).ok_or_else(|| format!("no port {port}"))?;
        if pt.is_host || queue == 0 || queue >= pt.queues.len() {
            return Err(format!("port {port} has no data queue {queue}"));
        }
        pt.queues[queue].red = red;
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
}

/// The action that leaves an agent's rate unchanged.
fn neutral_action(map: &ActionMap) -> f32 {
    match map {
        ActionMap::Discrete(t) => {
            t.iter().enumerate().min_by(|a, b| (a.1 - 1.0).abs().total_cmp(&(b.1 - 1.0).abs())).map_or(0, |(i, _)| i)
                as f32
        }
        ActionMap::Rate => f32::NAN,
        _ => 0.0,
    }
}

/// Builds the agent bridge of a scenario, loading its native policy if any.
fn build_bridge(sc: &Scenario, base_dir: &Path) -> CfgResult<Option<Bridge>> {
    let Some(cfg) = &sc.agent else { return Ok(None) };
    let spec = AgentSpec::from_config(cfg)?;
    let dim = spec.obs_dim();
    let native = if cfg.policy == "external" {
        None
    } else {
        let precision = match cfg.precision.as_str() {
            "float32" => Precision::Float32,
            "int8" => Precision::Int8,
            other => {
                return Err(ConfigError::new("agent.precision", format!("\"{other}\""), "use \"float32\" or \"int8\""))
            }
        };
        let path = base_dir.join(&cfg.policy);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            ConfigError::new("agent.policy", format!("\"{}\"", cfg.policy), format!("cannot read the policy file: {e}"))
        })?;
        let mlp = Mlp::from_json(&text, precision)
            .map_err(|e| ConfigError::new("agent.policy", format!("\"{}\"", cfg.policy), e))?;
        if mlp.inputs() != dim {
            return Err(ConfigError::new(
                "agent.policy",
                format!("\"{}\"", cfg.policy),
                format!("the policy takes {} inputs but [agent] observations have {dim}", mlp.inputs()),
            ));
        }
        let scratch = vec![0.0; mlp.scratch_len()];
        Some((mlp, scratch))
    };
    Ok(Some(Bridge {
        spec: Arc::new(spec),
        dim,
        batch: Batch::default(),
        awaiting: false,
        stepping: false,
        ended: false,
        native,
        decisions: 0,
    }))
}

/// Adds [a, b) to a sorted list of disjoint ranges, merging neighbours.
fn insert_range(ranges: &mut Vec<(u64, u64)>, a: u64, b: u64) {
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

/// Murmur3 finaliser: spreads flow identities over 32 bits for ECMP.
fn mix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// Hash of a flow's reverse direction (ACKs, NACKs, CNPs).
#[inline]
fn reverse_hash(h: u32) -> u32 {
    mix32(h ^ 0x5bd1_e995)
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
    if !["auto", "go_back_n", "tcp"].contains(&h.loss_recovery.as_str()) {
        return e("host.loss_recovery", &format!("\"{}\"", h.loss_recovery), "use \"auto\", \"go_back_n\" or \"tcp\"");
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
    let m = &sc.metrics;
    if let Some([a, b]) = m.window {
        if a.0 >= b.0 {
            return e("metrics.window", &format!("[{}, {}]", fmt_time(a.0), fmt_time(b.0)), "start must be before end");
        }
        if b.0 > sc.duration.0 {
            return e(
                "metrics.window",
                &format!("[{}, {}]", fmt_time(a.0), fmt_time(b.0)),
                &format!("ends after the end of the run (duration = {})", fmt_time(sc.duration.0)),
            );
        }
    }
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
    Ok(())
}
