//! Budgets: what a scenario will cost, estimated before anything is built.
//!
//! A scenario can ask for more than a machine has: a billion messages, an
//! agent deciding every picosecond, per-flow series over a long run. Checked
//! after the fact, such a request either exhausts memory (and the allocator
//! aborts the process, taking a Python interpreter with it) or runs for hours.
//! So the cost is computed from the scenario's fields first, with arithmetic
//! only (no flow is generated, no random number drawn), and compared with the
//! budgets of the scenario's `[limits]` table:
//!
//! * **flows** and **messages** the workloads will generate (Poisson: the
//!   expected number);
//! * **events** over the run: an upper bound from the traffic (every data
//!   packet two events per hop, its ACK likewise; the senders' NICs at most
//!   at line rate, the receivers' downlinks at most at theirs), plus agent
//!   decisions, RTT probes, switch-queue agent ticks, samples and timeout
//!   sweeps;
//! * **memory**: flows, messages, packets in flight (bounded by the switch
//!   buffers and the wires), the sampled series and the result tables built
//!   from them at the end (counted twice: the core's columns and pandas').
//!
//! A scenario beyond a budget is refused with a [`ConfigError`] naming the
//! field that makes it expensive (`workload[0].count`, `agent.interval`,
//! `metrics.flow_series`, ...), the estimate and the budget to raise; raising
//! it in `[limits]` is the explicit opt-in. The estimate is exported
//! ([`Estimate::to_json`], `ccgym.estimate`) so a front end can print it
//! before a run.
//!
//! Separately from the budgets, decision intervals shorter than one packet's
//! serialisation time are refused outright: between two such decisions the
//! agent cannot have observed anything new.

use crate::config::{CfgResult, ConfigError, Scenario};
use crate::flow::Flow;
use crate::packet::Packet;
use crate::topology::{NodeKind, Topology};
use crate::units::{fmt_time, ser_time, Bytes, Time, SEC, US};
use crate::workload::{FlowSpec, TrafficEstimate, WorkloadBuilder};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::Path;

/// The scenario's `[limits]` table: budgets a scenario must stay within.
/// Raising one is the explicit opt-in to a bigger run.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Most flows the workloads may generate.
    #[serde(deserialize_with = "count")]
    pub max_flows: u64,
    /// Most messages (beyond each flow's first) the workloads may generate.
    #[serde(deserialize_with = "count")]
    pub max_messages: u64,
    /// Most events the run may be estimated to take.
    #[serde(deserialize_with = "count")]
    pub max_events: u64,
    /// Most memory the run may be estimated to need (flows, messages,
    /// packets, series and result tables).
    pub max_memory: Bytes,
}

/// Default `limits.max_flows` (the limit the workload builder always had).
pub const DEFAULT_MAX_FLOWS: u64 = 5_000_000;
/// Default `limits.max_messages` (about 5 GB of message records).
pub const DEFAULT_MAX_MESSAGES: u64 = 50_000_000;
/// Default `limits.max_events`: at 10-20 million events per second, 10 to
/// 20 minutes of simulation.
pub const DEFAULT_MAX_EVENTS: u64 = 10_000_000_000;
/// Default `limits.max_memory`.
pub const DEFAULT_MAX_MEMORY: u64 = 4 << 30;
/// Above this estimated memory a front end should warn before running.
pub const WARN_MEMORY: u64 = 1 << 30;

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_flows: DEFAULT_MAX_FLOWS,
            max_messages: DEFAULT_MAX_MESSAGES,
            max_events: DEFAULT_MAX_EVENTS,
            max_memory: Bytes(DEFAULT_MAX_MEMORY),
        }
    }
}

/// A count written as an integer or as a whole floating-point number (`1e11`).
fn count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = f64::deserialize(d)?;
    if !(v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19) {
        return Err(serde::de::Error::custom(format!("expected a whole number of at least 0, got {v}")));
    }
    Ok(v as u64)
}

/// Events per second the messages below assume to turn events into time.
const EVENTS_PER_SECOND: f64 = 15e6;

/// What a scenario is estimated to cost, computed before anything is built.
#[derive(Clone, Debug, Default)]
pub struct Estimate {
    /// Flows the workloads generate (Poisson: expected).
    pub flows: u64,
    /// Messages beyond each flow's first.
    pub messages: u64,
    /// Upper bound of the data packets the senders transmit.
    pub data_packets: u64,
    /// Samples of the time series.
    pub samples: u64,
    /// Whether per-flow series are recorded.
    pub flow_series: bool,
    /// Events over the run, by cause (name, events, field to blame).
    pub events: Vec<(&'static str, u64, String)>,
    /// Memory, by part (name, bytes, field to blame).
    pub memory: Vec<(&'static str, u64, String)>,
}

impl Estimate {
    /// Events over the whole run.
    pub fn total_events(&self) -> u64 {
        self.events.iter().fold(0u64, |a, e| a.saturating_add(e.1))
    }

    /// Bytes of memory the run needs at its peak (the end, when the result
    /// tables are built).
    pub fn total_memory(&self) -> u64 {
        self.memory.iter().fold(0u64, |a, e| a.saturating_add(e.1))
    }

    /// The estimate as a JSON object (what `ccgym.estimate` returns).
    pub fn to_json(&self, limits: &LimitsConfig) -> Value {
        let events: serde_json::Map<String, Value> =
            self.events.iter().map(|e| (e.0.to_string(), json!(e.1))).collect();
        let memory: serde_json::Map<String, Value> =
            self.memory.iter().map(|e| (e.0.to_string(), json!(e.1))).collect();
        json!({
            "flows": self.flows,
            "messages": self.messages,
            "data_packets": self.data_packets,
            "samples": self.samples,
            "flow_series": self.flow_series,
            "events": self.total_events(),
            "events_by_cause": events,
            "memory_bytes": self.total_memory(),
            "memory_by_part": memory,
            "seconds_at_15M_events_per_s": self.total_events() as f64 / EVENTS_PER_SECOND,
            "limits": {
                "max_flows": limits.max_flows,
                "max_messages": limits.max_messages,
                "max_events": limits.max_events,
                "max_memory": limits.max_memory.0,
            },
            "warn_memory": WARN_MEMORY,
        })
    }
}

fn gb(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

fn wall(events: u64) -> String {
    let s = events as f64 / EVENTS_PER_SECOND;
    if s >= 3600.0 {
        format!("{:.1} hours", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.0} minutes", s / 60.0)
    } else {
        format!("{s:.0} seconds")
    }
}

/// Serialisation time of a full data packet on the fastest host link: the
/// shortest time in which anything new can happen at a NIC.
fn packet_time(sc: &Scenario, topo: &Topology) -> Time {
    let mtu = (sc.packets.payload + sc.packets.header) as u64;
    let fastest = (0..topo.n_hosts).map(|h| topo.ports[topo.host_port(h) as usize].rate_bps).max().unwrap_or(1);
    ser_time(mtu, fastest.max(1))
}

/// Refuses decision intervals shorter than one packet's serialisation time.
pub fn check_intervals(sc: &Scenario, topo: &Topology, traffic: &[TrafficEstimate]) -> CfgResult<()> {
    let Some(a) = &sc.agent else { return Ok(()) };
    let pkt = packet_time(sc, topo);
    let agent_flows: u64 = traffic.iter().map(|t| t.agent_flows).sum();
    let too_short = |field: &str, t: Time| {
        Err(ConfigError::new(
            field,
            fmt_time(t),
            format!(
                "is shorter than one packet's serialisation time ({}: {} bytes at the fastest host link); \
                 nothing new can be observed between two decisions. Use at least {}",
                fmt_time(pkt),
                sc.packets.payload + sc.packets.header,
                fmt_time(pkt)
            ),
        ))
    };
    if agent_flows > 0 && a.trigger == "interval" && a.interval.0 > 0 && a.interval.0 < pkt {
        return too_short("agent.interval", a.interval.0);
    }
    if !a.queues.is_empty() && a.queue_interval.0 > 0 && a.queue_interval.0 < pkt {
        return too_short("agent.queue_interval", a.queue_interval.0);
    }
    Ok(())
}

/// Ports crossed by the longest of a few sampled paths of the workloads, and
/// the shortest round trip (propagation plus one packet per hop) among them.
fn path_shape(sc: &Scenario, topo: &Topology, traffic: &[TrafficEstimate]) -> (u64, Time) {
    let mut hops = 0u64;
    let mut rtt = Time::MAX;
    let latency = sc.switch.latency.0;
    let mtu = (sc.packets.payload + sc.packets.header) as u64;
    let one_way = |path: &[u32]| -> Time {
        path.iter()
            .map(|&p| {
                let ps = &topo.ports[p as usize];
                let sw = !matches!(topo.nodes[ps.node as usize].kind, NodeKind::Host(_));
                ps.delay + if sw { latency } else { 0 } + ser_time(mtu, ps.rate_bps.max(1))
            })
            .sum()
    };
    for t in traffic {
        let (s, r) = (&t.senders, &t.receivers);
        if s.is_empty() || r.is_empty() {
            continue;
        }
        for (a, b) in [(s[0], r[r.len() - 1]), (s[s.len() - 1], r[0]), (s[s.len() / 2], r[0])] {
            if a == b || !topo.reachable(a, b) || !topo.reachable(b, a) {
                continue;
            }
            let fwd = topo.path(a, b, 0);
            let rev = topo.path(b, a, 0);
            hops = hops.max(fwd.len() as u64);
            rtt = rtt.min(one_way(&fwd) + one_way(&rev));
        }
    }
    (hops.max(1), if rtt == Time::MAX { US } else { rtt.max(1) })
}

/// Estimates what the scenario will cost. `traffic` is the workloads' count
/// ([`WorkloadBuilder::estimate`]).
pub fn estimate(sc: &Scenario, topo: &Topology, traffic: &[TrafficEstimate]) -> Estimate {
    let dur = sc.duration.0;
    let dur_s = dur as f64 / SEC as f64;
    let mtu = (sc.packets.payload + sc.packets.header) as f64;
    let flows = traffic.iter().fold(0u64, |a, t| a.saturating_add(t.flows));
    let messages = traffic.iter().fold(0u64, |a, t| a.saturating_add(t.messages));
    let n = topo.n_hosts as usize;
    let (mut sends, mut recvs) = (vec![false; n], vec![false; n]);
    for t in traffic {
        t.senders.iter().for_each(|&h| sends[h as usize] = true);
        t.receivers.iter().for_each(|&h| recvs[h as usize] = true);
    }
    let uplink = |h: usize| topo.ports[topo.host_port(h as u32) as usize].rate_bps as f64;
    let downlink = |h: usize| {
        let p = &topo.ports[topo.host_port(h as u32) as usize];
        topo.ports[p.peer as usize].rate_bps as f64
    };
    let send_cap: f64 = (0..n).filter(|&h| sends[h]).map(uplink).sum();
    let recv_cap: f64 = (0..n).filter(|&h| recvs[h]).map(downlink).sum();
    let offered: f64 = traffic
        .iter()
        .map(|t| t.bytes.min(t.offered_bps / 8.0 * t.end.saturating_sub(t.start) as f64 / SEC as f64))
        .sum();
    let sent = offered.min(send_cap / 8.0 * dur_s);
    let delivered = sent.min(recv_cap / 8.0 * dur_s);
    // Every flow and message may end in a short packet.
    let short = flows as f64 + messages as f64;
    let p_send = sent / mtu + short;
    let p_del = p_send.min(delivered / mtu + short);
    let (hops, rtt) = path_shape(sc, topo, traffic);
    let h = hops as f64;
    let acks = p_del / sc.host.ack_every.max(1) as f64;
    let sat = |x: f64| if x >= u64::MAX as f64 { u64::MAX } else { x.max(0.0).ceil() as u64 };
    let main_flows_field = traffic.iter().max_by_key(|t| t.flows).map_or("workload".into(), |t| t.flows_field.clone());
    let main_msgs_field =
        traffic.iter().max_by_key(|t| t.messages).map_or("workload".into(), |t| t.messages_field.clone());

    let mut events = vec![
        ("packets", sat(2.0 * (p_send + p_del * (h - 1.0)) + 2.0 * acks * h), "duration".to_string()),
        (
            "applications",
            sat(4.0 * short),
            if messages > flows { main_msgs_field.clone() } else { main_flows_field.clone() },
        ),
    ];
    if let Some(a) = &sc.agent {
        let agent_span: f64 =
            traffic.iter().map(|t| t.agent_flows as f64 * t.end.saturating_sub(t.start) as f64 / SEC as f64).sum();
        let agent_flows: u64 = traffic.iter().map(|t| t.agent_flows).sum();
        match a.trigger.as_str() {
            "interval" if a.interval.0 > 0 => {
                let per_s = SEC as f64 / a.interval.0 as f64;
                events.push(("agent_decisions", sat(2.0 * agent_span * per_s), "agent.interval".into()));
            }
            "probe" if agent_flows > 0 => {
                // One probe per round trip and flow, each crossing the path both ways.
                let probes = agent_span * SEC as f64 / rtt as f64;
                events.push(("agent_probes", sat(probes * (2.0 + 4.0 * h)), "agent.trigger".into()));
            }
            "acks" if agent_flows > 0 => {
                events.push((
                    "agent_decisions",
                    sat(2.0 * acks / a.every_acks.max(1) as f64),
                    "agent.every_acks".into(),
                ));
            }
            _ => {}
        }
        if a.trigger == "probe" && a.probe_timeout.0 > 0 && agent_flows > 0 {
            // A probe whose reply is late is asked for again every probe_timeout.
            let per_s = SEC as f64 / a.probe_timeout.0 as f64;
            events.push(("agent_probe_timeouts", sat(agent_span * per_s), "agent.probe_timeout".into()));
        }
        if !a.queues.is_empty() && a.queue_interval.0 > 0 {
            let data_queues = match sc.switch.discipline.as_str() {
                "priority" => sc.switch.priorities as u64,
                "rank" => 1,
                _ => sc.switch.queues.saturating_sub(1) as u64,
            };
            let agents = a.queues.len() as u64 * data_queues;
            let ticks = (dur / a.queue_interval.0) as f64;
            events.push(("queue_agents", sat(ticks * (1.0 + agents as f64)), "agent.queue_interval".into()));
        }
    }
    // Explicit CC timer periods: one event per period and flow.
    let timers: Vec<(f64, &String)> = traffic
        .iter()
        .filter_map(|t| {
            let (period, field) = t.cc_timer.as_ref()?;
            Some((t.flows as f64 * t.end.saturating_sub(t.start) as f64 / *period as f64, field))
        })
        .collect();
    if let Some((_, field)) = timers.iter().max_by(|a, b| a.0.total_cmp(&b.0)) {
        events.push(("cc_timers", sat(timers.iter().map(|x| x.0).sum()), field.to_string()));
    }
    let sample = sc.metrics.sample_interval.0.max(1);
    let samples = dur / sample + 1;
    let switch_ports =
        topo.ports.iter().filter(|p| !matches!(topo.nodes[p.node as usize].kind, NodeKind::Host(_))).count() as u64;
    let flow_series = match &sc.metrics.flow_series {
        Value::Bool(b) => *b,
        _ => flows <= 1024,
    };
    // A sample visits every switch port and, with flow series, every flow:
    // about 16 of those visits cost one event.
    let per_sample = 1 + (switch_ports + if flow_series { flows } else { 0 }) / 16;
    events.push(("samples", samples.saturating_mul(per_sample), "metrics.sample_interval".into()));
    if sc.host.rto.0 > 0 {
        let shortest =
            if sc.host.loss_recovery == "go_back_n" { sc.host.rto.0 } else { sc.host.rto.0.min(sc.host.rto_min.0) };
        let sweeps = dur / (shortest / 4).max(US);
        // A sweep checks every flow; about 16 checks cost one event.
        events.push(("timeout_sweeps", sweeps.saturating_mul(1 + flows / 16), "host.rto".into()));
    }

    // Memory. The flow and message records exist several times over a run's
    // life (the generated spec, the flow, the application schedule, the
    // result rows).
    let per_flow = (std::mem::size_of::<Flow>() + std::mem::size_of::<FlowSpec>() + 96 + 2 * 24 + 128) as u64;
    let per_msg = (16 + 32 + 24 + 32) as u64;
    let buffers: f64 = sc.switch.buffer.0 as f64 * topo.n_switches as f64;
    let wires: f64 = topo.ports.iter().map(|p| p.rate_bps as f64 / 8.0 * p.delay as f64 / SEC as f64).sum();
    // Packets alive at once: what the buffers and wires hold, twice for the
    // ACKs, never more than the run sends.
    let live = (2.0 * (buffers + wires) / mtu).min(2.0 * p_send) + 1024.0;
    let series_flows = if flow_series { flows } else { 0 };
    let series = samples.saturating_mul(8 + 8 * switch_ports + 4 * series_flows);
    // Result rows (time, id, value: 24 bytes; ports 32) in the core and again in pandas.
    let tables = samples.saturating_mul(2 * (32 * switch_ports + 24 * series_flows));
    let series_field = if series_flows > switch_ports { "metrics.flow_series" } else { "metrics.sample_interval" };
    let memory = vec![
        ("flows", flows.saturating_mul(per_flow), main_flows_field),
        ("messages", messages.saturating_mul(per_msg), main_msgs_field),
        ("packets", sat(live * std::mem::size_of::<Packet>() as f64), "switch.buffer".to_string()),
        ("series", series, series_field.to_string()),
        ("tables", tables, series_field.to_string()),
    ];
    Estimate { flows, messages, data_packets: sat(p_send), samples, flow_series, events, memory }
}

/// Refuses a scenario whose estimate exceeds a budget of `[limits]`,
/// naming the field that makes it expensive.
pub fn check(sc: &Scenario, traffic: &[TrafficEstimate], est: &Estimate) -> CfgResult<()> {
    let lim = &sc.limits;
    if est.flows > lim.max_flows {
        let t = traffic.iter().max_by_key(|t| t.flows).expect("flows come from workloads");
        return Err(ConfigError::new(
            &t.flows_field,
            "",
            format!(
                "asks for about {} flows ({}), more than limits.max_flows = {}; generate fewer flows, or raise \
                 max_flows in a [limits] table if the machine can take it",
                est.flows, t.flows_why, lim.max_flows
            ),
        ));
    }
    if est.messages > lim.max_messages {
        let t = traffic.iter().max_by_key(|t| t.messages).expect("messages come from workloads");
        return Err(ConfigError::new(
            &t.messages_field,
            "",
            format!(
                "asks for about {} messages ({}), more than limits.max_messages = {}; send fewer messages, or \
                 raise max_messages in a [limits] table if the machine can take it",
                est.messages, t.messages_why, lim.max_messages
            ),
        ));
    }
    let mem = est.total_memory();
    if mem > lim.max_memory.0 {
        let (part, bytes, field) = est.memory.iter().max_by_key(|m| m.1).expect("parts");
        let parts = est.memory.iter().map(|m| format!("{} {}", m.0, gb(m.1))).collect::<Vec<_>>().join(", ");
        let hint = match *part {
            "series" | "tables" => "record fewer series (metrics.flow_series = false, a longer \
                                    metrics.sample_interval) or shorten the run"
                .to_string(),
            _ => "shrink the scenario".to_string(),
        };
        return Err(ConfigError::new(
            field,
            "",
            format!(
                "the run would need about {} of memory ({parts}; the largest part, {part}, is {}), more than \
                 limits.max_memory = {}; {hint}, or raise max_memory in a [limits] table if the machine has it",
                gb(mem),
                gb(*bytes),
                gb(lim.max_memory.0)
            ),
        ));
    }
    let total = est.total_events();
    if total > lim.max_events {
        let (cause, n, field) = est.events.iter().max_by_key(|e| e.1).expect("causes");
        return Err(ConfigError::new(
            field,
            "",
            format!(
                "the run would take about {total:.3e} events ({cause}: {n:.3e}), more than limits.max_events = \
                 {:.3e} (about {} at 15 million events per second); shorten the run or make it cheaper, or \
                 raise max_events in a [limits] table to run it anyway",
                lim.max_events as f64,
                wall(total)
            ),
        ));
    }
    Ok(())
}

/// Counts the workloads, estimates the cost and checks the budgets and the
/// decision intervals: everything that can be refused before generation.
pub fn estimate_and_check(sc: &Scenario, topo: &Topology, base_dir: &Path) -> CfgResult<Estimate> {
    let builder = WorkloadBuilder::new(topo, sc.duration.0, &sc.cc, base_dir, sc.switch.queues);
    let traffic = builder.estimate(&sc.workload)?;
    check_intervals(sc, topo, &traffic)?;
    let est = estimate(sc, topo, &traffic);
    check(sc, &traffic, &est)?;
    Ok(est)
}

/// Reserves room for `n` more items in `v`, turning an allocation failure
/// into an error that names `field` instead of an abort.
pub fn try_reserve<T>(v: &mut Vec<T>, n: usize, field: &str) -> CfgResult<()> {
    v.try_reserve_exact(n).map_err(|_| {
        ConfigError::new(
            field,
            "",
            format!(
                "cannot allocate {} for {n} records: the machine does not have the memory",
                gb((n as u64).saturating_mul(std::mem::size_of::<T>() as u64))
            ),
        )
    })
}
