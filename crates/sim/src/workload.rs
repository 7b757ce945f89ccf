//! Workloads: turning the scenario's traffic sources into flows and the
//! times at which their applications hand data to the NIC.
//!
//! All flows are generated when the simulation is built, from the run's one
//! random generator, so a scenario and seed fix the traffic exactly.

use crate::config::{CcConfig, CfgResult, ConfigError, HostRef, StartTime, WorkloadConfig};
use crate::topology::Topology;
use crate::units::{RunTime, Time, SEC};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::path::Path;

/// Size meaning "unlimited": the flow sends until it is stopped.
pub const UNLIMITED: u64 = u64::MAX;

/// One flow (queue pair) to create.
#[derive(Clone, Debug)]
pub struct FlowSpec {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Total bytes ([`UNLIMITED`] for long-lived flows).
    pub size: u64,
    /// Start time.
    pub start: Time,
    /// Time after which the application offers no more data.
    pub stop: Option<Time>,
    /// Traffic class.
    pub class: u8,
    /// Congestion control.
    pub cc: CcConfig,
    /// Path of `cc` in the scenario, for error messages.
    pub cc_field: String,
    /// Extra messages: (arrival time, bytes) appended to the flow's data.
    pub messages: Vec<(Time, u64)>,
    /// The flow is a message stream: each message's completion is recorded.
    pub stream: bool,
    /// Index of the workload entry that made it.
    pub workload: u32,
}

/// A flow-size distribution read from a CDF file.
#[derive(Clone, Debug)]
pub struct Cdf {
    points: Vec<(f64, f64)>,
    step: bool,
}

impl Cdf {
    /// Parses `size cumulative_probability` lines; `#` starts a comment.
    pub fn parse(text: &str, step: bool, field: &str, path: &str) -> CfgResult<Cdf> {
        let mut points = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |m: &str| ConfigError::new(field, format!("\"{path}\""), format!("line {}: {m}", i + 1));
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() != 2 {
                return Err(bad("expected two columns: size_bytes cumulative_probability"));
            }
            let x: f64 = cols[0].parse().map_err(|_| bad("size is not a number"))?;
            let c: f64 = cols[1].parse().map_err(|_| bad("probability is not a number"))?;
            if !(x.is_finite() && x >= 0.0) {
                return Err(bad("size must be a non-negative number"));
            }
            if !(0.0..=1.0).contains(&c) {
                return Err(bad("cumulative probability must be in [0, 1]"));
            }
            if let Some(&(px, pc)) = points.last() {
                if x < px {
                    return Err(bad(&format!("sizes must not decrease ({x} after {px})")));
                }
                if c < pc {
                    return Err(bad(&format!("the CDF is not monotone ({c} after {pc})")));
                }
            }
            points.push((x, c));
        }
        match points.last() {
            None => Err(ConfigError::new(field, format!("\"{path}\""), "the CDF file has no points")),
            Some(&(_, c)) if (c - 1.0).abs() > 1e-9 => Err(ConfigError::new(
                field,
                format!("\"{path}\""),
                format!("the last cumulative probability is {c}, not 1"),
            )),
            _ => Ok(Cdf { points, step }),
        }
    }

    /// Draws one size from uniform `u` in [0, 1).
    pub fn sample(&self, u: f64) -> f64 {
        let p = &self.points;
        let i = p.partition_point(|&(_, c)| c < u);
        if i >= p.len() {
            return p[p.len() - 1].0;
        }
        if self.step || i == 0 {
            return p[i].0;
        }
        let (x0, c0) = p[i - 1];
        let (x1, c1) = p[i];
        if c1 <= c0 {
            x1
        } else {
            x0 + (x1 - x0) * (u - c0) / (c1 - c0)
        }
    }

    /// The CDF's points: (size in bytes, cumulative probability), in order.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// Whether sizes are drawn as steps (the smallest tabulated size whose
    /// probability reaches the draw) rather than interpolated.
    pub fn is_step(&self) -> bool {
        self.step
    }

    /// Mean size under the chosen sampling convention.
    pub fn mean(&self) -> f64 {
        self.mean_capped(f64::INFINITY)
    }

    /// Mean of min(size, cap): the mean flow size when samples are capped.
    pub fn mean_capped(&self, cap: f64) -> f64 {
        let p = &self.points;
        let mut m = p[0].0.min(cap) * p[0].1;
        for w in p.windows(2) {
            let ((x0, c0), (x1, c1)) = (w[0], w[1]);
            let dc = c1 - c0;
            m += if self.step {
                x1.min(cap) * dc
            } else if x1 <= cap {
                0.5 * (x0 + x1) * dc
            } else if x0 >= cap {
                cap * dc
            } else {
                // Linear segment cut at the cap: the part below averages (x0 + cap) / 2.
                let f = (cap - x0) / (x1 - x0);
                f * dc * 0.5 * (x0 + cap) + (1.0 - f) * dc * cap
            };
        }
        m
    }
}

/// Context for resolving hosts and checking reachability.
pub struct WorkloadBuilder<'a> {
    topo: &'a Topology,
    duration: Time,
    default_cc: &'a CcConfig,
    base_dir: &'a Path,
    queues: u8,
    /// Most flows the entries may generate together (`limits.max_flows`).
    max_flows: u64,
}

fn host_ref(topo: &Topology, r: &HostRef, field: &str) -> CfgResult<u32> {
    match r {
        HostRef::Index(i) if *i >= 0 && (*i as u64) < topo.n_hosts as u64 => Ok(*i as u32),
        HostRef::Index(i) => {
            Err(ConfigError::new(field, i, format!("no such host; hosts are numbered 0 to {}", topo.n_hosts - 1)))
        }
        HostRef::Name(n) => {
            topo.host_by_name(n).ok_or_else(|| ConfigError::new(field, format!("\"{n}\""), "no host of that name"))
        }
    }
}

impl<'a> WorkloadBuilder<'a> {
    /// Prepares to build flows on `topo`.
    pub fn new(topo: &'a Topology, duration: Time, default_cc: &'a CcConfig, base_dir: &'a Path, queues: u8) -> Self {
        WorkloadBuilder { topo, duration, default_cc, base_dir, queues, max_flows: crate::limits::DEFAULT_MAX_FLOWS }
    }

    /// Sets the most flows the entries may generate together (`limits.max_flows`).
    pub fn with_max_flows(mut self, max_flows: u64) -> Self {
        self.max_flows = max_flows;
        self
    }

    /// Builds every flow of every workload entry.
    pub fn build(&self, workloads: &[WorkloadConfig], rng: &mut Xoshiro256PlusPlus) -> CfgResult<Vec<FlowSpec>> {
        if workloads.is_empty() {
            return Err(ConfigError::new("workload", "", "a scenario needs at least one [[workload]] entry"));
        }
        let mut flows = Vec::new();
        for (i, w) in workloads.iter().enumerate() {
            let f = format!("workload[{i}]");
            let before = flows.len();
            self.one(i as u32, &f, w, rng, &mut flows)?;
            for fl in &flows[before..] {
                if fl.src == fl.dst {
                    return Err(ConfigError::new(
                        f.to_string(),
                        fl.src,
                        "a flow's source and destination are the same host",
                    ));
                }
                if !self.topo.reachable(fl.src, fl.dst) {
                    return Err(ConfigError::new(
                        f.to_string(),
                        format!(
                            "{} -> {}",
                            self.topo.nodes[fl.src as usize].name, self.topo.nodes[fl.dst as usize].name
                        ),
                        "destination host is unreachable from the source",
                    ));
                }
            }
        }
        if flows.len() as u64 > self.max_flows {
            return Err(ConfigError::new(
                "workload",
                flows.len(),
                format!(
                    "more than limits.max_flows = {} flows; shorten the run, lower the load or raise \
                     limits.max_flows",
                    self.max_flows
                ),
            ));
        }
        Ok(flows)
    }

    fn allowed(&self, f: &str, w: &WorkloadConfig, allowed: &[&str]) -> CfgResult<()> {
        let present = [
            ("pattern", w.pattern.is_some()),
            ("receiver", w.receiver.is_some()),
            ("senders", w.senders.is_some()),
            ("flows_per_host", w.flows_per_host.is_some()),
            ("start", w.start.is_some()),
            ("stop", w.stop.is_some()),
            ("size", w.size.is_some()),
            ("flows", w.flows.is_some()),
            ("count", w.count.is_some()),
            ("period", w.period.is_some()),
            ("load", w.load.is_some()),
            ("cdf", w.cdf.is_some()),
            ("sampling", w.sampling.is_some()),
            ("hosts", w.hosts.is_some()),
            ("max_size", w.max_size.is_some()),
            ("fan_in", w.fan_in.is_some()),
        ];
        for (name, set) in present {
            if set && !allowed.contains(&name) {
                return Err(ConfigError::new(
                    format!("{f}.{name}"),
                    "",
                    format!("does not apply to kind \"{}\" (it takes: {}, class, cc)", w.kind, allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    fn class(&self, f: &str, c: Option<u8>) -> CfgResult<u8> {
        let c = c.unwrap_or(1);
        if c == 0 || c >= self.queues {
            return Err(ConfigError::new(
                format!("{f}.class"),
                c,
                format!(
                    "must be a data queue from 1 to {} (switch.queues = {}; queue 0 is for control)",
                    self.queues - 1,
                    self.queues
                ),
            ));
        }
        Ok(c)
    }

    fn time_in_run(&self, field: &str, t: RunTime) -> CfgResult<Time> {
        let t = t.at(self.duration);
        if t > self.duration {
            return Err(ConfigError::new(
                field,
                crate::units::fmt_time(t),
                format!("is after the end of the run (duration = {})", crate::units::fmt_time(self.duration)),
            ));
        }
        Ok(t)
    }

    fn start(&self, f: &str, s: Option<StartTime>, rng: &mut Xoshiro256PlusPlus) -> CfgResult<Time> {
        match s.unwrap_or(StartTime::At(RunTime::At(0))) {
            StartTime::At(t) => self.time_in_run(&format!("{f}.start"), t),
            StartTime::Uniform([a, b]) => {
                let (a, b) = (a.at(self.duration), b.at(self.duration));
                if b < a {
                    return Err(ConfigError::new(
                        format!("{f}.start"),
                        format!("[{}, {}]", crate::units::fmt_time(a), crate::units::fmt_time(b)),
                        "range end is before its start",
                    ));
                }
                self.time_in_run(&format!("{f}.start"), RunTime::At(b))?;
                Ok(if b == a { a } else { rng.random_range(a..=b) })
            }
        }
    }

    /// A stop time must not precede the latest time its flows may start: a
    /// flow stopped before it started would still send when it starts.
    fn stop_after_start(&self, field: &str, stop: Option<Time>, latest_start: Time) -> CfgResult<()> {
        match stop {
            Some(t) if t < latest_start => Err(ConfigError::new(
                field,
                crate::units::fmt_time(t),
                format!("must not be before the start of its flows ({})", crate::units::fmt_time(latest_start)),
            )),
            _ => Ok(()),
        }
    }

    fn senders(&self, f: &str, w: &WorkloadConfig, receiver: Option<u32>) -> CfgResult<Vec<u32>> {
        match &w.senders {
            Some(list) => {
                if list.is_empty() {
                    return Err(ConfigError::new(format!("{f}.senders"), "[]", "must name at least one host"));
                }
                list.iter().enumerate().map(|(j, r)| host_ref(self.topo, r, &format!("{f}.senders[{j}]"))).collect()
            }
            None => Ok((0..self.topo.n_hosts).filter(|&h| Some(h) != receiver).collect()),
        }
    }

    fn cc(&self, f: &str, w: &Option<CcConfig>) -> (CcConfig, String) {
        match w {
            Some(c) => (c.clone(), format!("{f}.cc")),
            None => (self.default_cc.clone(), "cc".into()),
        }
    }

    fn count(&self, field: &str, v: Option<u32>, default: u32) -> CfgResult<u32> {
        let v = v.unwrap_or(default);
        if v == 0 {
            return Err(ConfigError::new(field, v, "must be at least 1"));
        }
        Ok(v)
    }

    fn one(
        &self,
        idx: u32,
        f: &str,
        w: &WorkloadConfig,
        rng: &mut Xoshiro256PlusPlus,
        out: &mut Vec<FlowSpec>,
    ) -> CfgResult<()> {
        let class = self.class(f, w.class)?;
        let (cc, cc_field) = self.cc(f, &w.cc);
        let stop = match w.stop {
            Some(t) => Some(self.time_in_run(&format!("{f}.stop"), t)?),
            None => None,
        };
        let base = FlowSpec {
            src: 0,
            dst: 0,
            size: UNLIMITED,
            start: 0,
            stop,
            class,
            cc,
            cc_field,
            messages: vec![],
            stream: false,
            workload: idx,
        };
        match w.kind.as_str() {
            "long" => {
                self.allowed(f, w, &["pattern", "receiver", "senders", "flows_per_host", "start", "stop", "size"])?;
                let per = self.count(&format!("{f}.flows_per_host"), w.flows_per_host, 1)?;
                let size = w.size.map(|s| s.0).unwrap_or(UNLIMITED);
                if size == 0 {
                    return Err(ConfigError::new(format!("{f}.size"), 0, "must be at least 1 byte"));
                }
                let latest_start = match w.start {
                    None => 0,
                    Some(StartTime::At(t)) => t.at(self.duration),
                    Some(StartTime::Uniform([a, b])) => a.at(self.duration).max(b.at(self.duration)),
                };
                self.stop_after_start(&format!("{f}.stop"), stop, latest_start)?;
                let pattern = w.pattern.as_deref().unwrap_or("many_to_one");
                let pairs: Vec<(u32, u32)> = match pattern {
                    "many_to_one" => {
                        let r = host_ref(
                            self.topo,
                            w.receiver.as_ref().unwrap_or(&HostRef::Index(0)),
                            &format!("{f}.receiver"),
                        )?;
                        self.senders(f, w, Some(r))?.into_iter().map(|s| (s, r)).collect()
                    }
                    "all_to_all" => {
                        if w.receiver.is_some() {
                            return Err(ConfigError::new(
                                format!("{f}.receiver"),
                                "",
                                "does not apply to pattern \"all_to_all\"",
                            ));
                        }
                        let hosts = self.senders(f, w, None)?;
                        let mut v = vec![];
                        for &a in &hosts {
                            for &b in &hosts {
                                if a != b {
                                    v.push((a, b));
                                }
                            }
                        }
                        v
                    }
                    other => {
                        return Err(ConfigError::new(
                            format!("{f}.pattern"),
                            format!("\"{other}\""),
                            "unknown pattern; use many_to_one or all_to_all",
                        ))
                    }
                };
                for (s, d) in pairs {
                    for _ in 0..per {
                        let start = self.start(f, w.start, rng)?;
                        out.push(FlowSpec { src: s, dst: d, size, start, ..base.clone() });
                    }
                }
            }
            "flows" => {
                self.allowed(f, w, &["flows"])?;
                let list = w
                    .flows
                    .as_ref()
                    .ok_or_else(|| ConfigError::new(format!("{f}.flows"), "", "is required for kind \"flows\""))?;
                if list.is_empty() {
                    return Err(ConfigError::new(format!("{f}.flows"), "[]", "must list at least one flow"));
                }
                for (j, fl) in list.iter().enumerate() {
                    let ff = format!("{f}.flows[{j}]");
                    let src = host_ref(self.topo, &fl.src, &format!("{ff}.src"))?;
                    let dst = host_ref(self.topo, &fl.dst, &format!("{ff}.dst"))?;
                    if src == dst {
                        return Err(ConfigError::new(format!("{ff}.dst"), &fl.dst, "is the same host as src"));
                    }
                    let size = fl.size.map(|s| s.0).unwrap_or(UNLIMITED);
                    if size == 0 {
                        return Err(ConfigError::new(format!("{ff}.size"), 0, "must be at least 1 byte"));
                    }
                    let start = self.time_in_run(&format!("{ff}.start"), fl.start)?;
                    let stop = match fl.stop {
                        Some(t) => Some(self.time_in_run(&format!("{ff}.stop"), t)?),
                        None => None,
                    };
                    self.stop_after_start(&format!("{ff}.stop"), stop, start)?;
                    let (cc, cc_field) = self.cc(&ff, &fl.cc);
                    out.push(FlowSpec {
                        src,
                        dst,
                        size,
                        start,
                        stop,
                        class: self.class(&ff, fl.class.or(w.class))?,
                        cc: if fl.cc.is_some() { cc } else { base.cc.clone() },
                        cc_field: if fl.cc.is_some() { cc_field } else { base.cc_field.clone() },
                        ..base.clone()
                    });
                }
            }
            "messages" => {
                self.allowed(f, w, &["receiver", "senders", "flows_per_host", "start", "count", "period", "size"])?;
                let r =
                    host_ref(self.topo, w.receiver.as_ref().unwrap_or(&HostRef::Index(0)), &format!("{f}.receiver"))?;
                let per = self.count(&format!("{f}.flows_per_host"), w.flows_per_host, 1)?;
                let count = self.count(&format!("{f}.count"), w.count, 1)?;
                let size = w
                    .size
                    .map(|s| s.0)
                    .ok_or_else(|| ConfigError::new(format!("{f}.size"), "", "is required for kind \"messages\""))?;
                if size == 0 {
                    return Err(ConfigError::new(format!("{f}.size"), 0, "must be at least 1 byte"));
                }
                let period = w.period.map(|p| p.0).unwrap_or(0);
                if count > 1 && period == 0 {
                    return Err(ConfigError::new(format!("{f}.period"), 0, "must be positive when count > 1"));
                }
                for s in self.senders(f, w, Some(r))? {
                    for _ in 0..per {
                        let start = self.start(f, w.start, rng)?;
                        // Arrival times only grow, so stop at the first one past the
                        // end (or past the time range) instead of filtering all `count`.
                        let msgs: Vec<(Time, u64)> = (1..count)
                            .map_while(|k| {
                                let t = (k as u64).checked_mul(period).and_then(|o| start.checked_add(o))?;
                                (t < self.duration).then_some((t, size))
                            })
                            .collect();
                        let total = size + msgs.iter().map(|m| m.1).sum::<u64>();
                        out.push(FlowSpec {
                            src: s,
                            dst: r,
                            size: total,
                            start,
                            messages: msgs,
                            stream: true,
                            ..base.clone()
                        });
                    }
                }
            }
            "poisson" => {
                self.allowed(f, w, &["load", "cdf", "sampling", "hosts", "start", "stop", "max_size"])?;
                self.poisson(f, w, base, rng, out)?;
            }
            "incast" => {
                self.allowed(f, w, &["receiver", "senders", "fan_in", "size", "start", "count", "period"])?;
                let r =
                    host_ref(self.topo, w.receiver.as_ref().unwrap_or(&HostRef::Index(0)), &format!("{f}.receiver"))?;
                let size = w
                    .size
                    .map(|s| s.0)
                    .ok_or_else(|| ConfigError::new(format!("{f}.size"), "", "is required for kind \"incast\""))?;
                if size == 0 {
                    return Err(ConfigError::new(format!("{f}.size"), 0, "must be at least 1 byte"));
                }
                let count = self.count(&format!("{f}.count"), w.count, 1)?;
                let period = w.period.map(|p| p.0).unwrap_or(0);
                if count > 1 && period == 0 {
                    return Err(ConfigError::new(format!("{f}.period"), 0, "must be positive when count > 1"));
                }
                let pool = self.senders(f, w, Some(r))?;
                if let Some(k) = w.fan_in {
                    if k == 0 || k as usize > pool.len() {
                        return Err(ConfigError::new(
                            format!("{f}.fan_in"),
                            k,
                            format!("must be from 1 to {} (the available senders)", pool.len()),
                        ));
                    }
                }
                let first = self.start(f, w.start, rng)?;
                for b in 0..count {
                    let t = match (b as u64).checked_mul(period).and_then(|o| first.checked_add(o)) {
                        Some(t) if t < self.duration => t,
                        _ => break,
                    };
                    let chosen: Vec<u32> = match w.fan_in {
                        Some(k) => {
                            rand::seq::index::sample(rng, pool.len(), k as usize).into_iter().map(|i| pool[i]).collect()
                        }
                        None => pool.clone(),
                    };
                    for s in chosen {
                        out.push(FlowSpec { src: s, dst: r, size, start: t, ..base.clone() });
                    }
                }
            }
            other => {
                return Err(ConfigError::new(
                    format!("{f}.kind"),
                    format!("\"{other}\""),
                    "unknown workload; use long, flows, messages, poisson or incast",
                ))
            }
        }
        Ok(())
    }

    fn poisson(
        &self,
        f: &str,
        w: &WorkloadConfig,
        base: FlowSpec,
        rng: &mut Xoshiro256PlusPlus,
        out: &mut Vec<FlowSpec>,
    ) -> CfgResult<()> {
        let load =
            w.load.ok_or_else(|| ConfigError::new(format!("{f}.load"), "", "is required for kind \"poisson\""))?;
        if !(load > 0.0 && load <= 1.0) {
            return Err(ConfigError::new(format!("{f}.load"), load, "must be in (0, 1]"));
        }
        let step = match w.sampling.as_deref().unwrap_or("interpolate") {
            "interpolate" => false,
            "step" => true,
            other => {
                return Err(ConfigError::new(
                    format!("{f}.sampling"),
                    format!("\"{other}\""),
                    "use \"interpolate\" or \"step\"",
                ))
            }
        };
        let cdf_field = format!("{f}.cdf");
        let path_s =
            w.cdf.as_ref().ok_or_else(|| ConfigError::new(&cdf_field, "", "is required for kind \"poisson\""))?;
        let path = self.base_dir.join(path_s);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| ConfigError::new(&cdf_field, format!("\"{path_s}\""), format!("cannot read the file: {e}")))?;
        let cdf = Cdf::parse(&text, step, &cdf_field, path_s)?;
        let cap = w.max_size.map(|s| s.0 as f64).unwrap_or(f64::INFINITY);
        let mean = cdf.mean_capped(cap).max(1.0);
        let hosts: Vec<u32> = match &w.hosts {
            Some(list) => list
                .iter()
                .enumerate()
                .map(|(j, r)| host_ref(self.topo, r, &format!("{f}.hosts[{j}]")))
                .collect::<CfgResult<_>>()?,
            None => (0..self.topo.n_hosts).collect(),
        };
        if hosts.len() < 2 {
            return Err(ConfigError::new(format!("{f}.hosts"), hosts.len(), "need at least 2 hosts"));
        }
        let start = match w.start {
            None => 0,
            Some(StartTime::At(t)) => self.time_in_run(&format!("{f}.start"), t)?,
            Some(StartTime::Uniform(_)) => {
                return Err(ConfigError::new(format!("{f}.start"), "[..]", "poisson takes one start time, not a range"))
            }
        };
        self.stop_after_start(&format!("{f}.stop"), base.stop, start)?;
        let end = base.stop.unwrap_or(self.duration);
        // An empty arrival window would make no flows at all: almost certainly a mistake
        // (a stop equal to the start, or a start at the end of the run), so say so.
        if end <= start {
            return Err(ConfigError::new(
                format!("{f}.stop"),
                crate::units::fmt_time(end),
                format!(
                    "leaves no time for arrivals: it must be after the start ({}); without a stop the run's duration counts",
                    crate::units::fmt_time(start)
                ),
            ));
        }
        for &h in &hosts {
            let port = self.topo.host_port(h);
            let rate = self.topo.ports[port as usize].rate_bps as f64;
            let mean_gap_s = mean * 8.0 / (rate * load);
            let mut t = start as f64;
            loop {
                let u: f64 = rng.random();
                t += -(1.0 - u).ln() * mean_gap_s * SEC as f64;
                if t >= end as f64 {
                    break;
                }
                let mut d = hosts[rng.random_range(0..hosts.len() - 1)];
                if d == h {
                    d = hosts[hosts.len() - 1];
                }
                let size = cdf.sample(rng.random::<f64>()).min(cap).round().max(1.0) as u64;
                out.push(FlowSpec { src: h, dst: d, size, start: t as Time, stop: None, ..base.clone() });
            }
        }
        Ok(())
    }
}

// ---- Counting before generating (`[limits]`, see `crate::limits`)

/// What one workload entry will generate, counted from its fields before
/// anything is drawn or allocated, so that an absurd request is refused
/// instead of exhausting memory.
#[derive(Clone, Debug, Default)]
pub struct TrafficEstimate {
    /// Flows it creates (Poisson: the expected number).
    pub flows: u64,
    /// Messages beyond each flow's first (kind `messages`).
    pub messages: u64,
    /// Flows of it whose congestion control is the learned `agent`.
    pub agent_flows: u64,
    /// Upper bound of the bytes it offers (infinite for unlimited flows).
    pub bytes: f64,
    /// Upper bound of the rate it offers at the senders' NICs, in bit/s.
    pub offered_bps: f64,
    /// Hosts that send (deduplicated, ascending).
    pub senders: Vec<u32>,
    /// Hosts that receive (deduplicated, ascending).
    pub receivers: Vec<u32>,
    /// First instant it may send.
    pub start: Time,
    /// Instant after which it offers nothing new.
    pub end: Time,
    /// The field that sets the flow count, for errors.
    pub flows_field: String,
    /// Why there are that many flows, for errors.
    pub flows_why: String,
    /// The field that sets the message count, for errors.
    pub messages_field: String,
    /// Why there are that many messages, for errors.
    pub messages_why: String,
    /// The shortest CC timer period its flows set explicitly (for example
    /// DCQCN's `rp_timer`), which makes one event per period and flow.
    pub cc_timer: Option<(Time, String)>,
}

/// CC parameters that are timer periods: each arms one timer event per
/// period and flow while it runs.
const CC_TIMER_PARAMS: [&str; 3] = ["rp_timer", "rate_decrease_interval", "alpha_interval"];

/// The shortest timer period `cc` sets explicitly, with its field.
fn cc_timer(cc: &CcConfig, field: &str) -> Option<(Time, String)> {
    CC_TIMER_PARAMS
        .iter()
        .filter_map(|name| {
            let t = match cc.params.get(*name)? {
                serde_json::Value::String(s) => crate::units::parse_time(s).ok()?,
                serde_json::Value::Number(n) => (n.as_f64()? * crate::units::SEC as f64) as Time,
                _ => return None,
            };
            (t > 0).then(|| (t, format!("{field}.{name}")))
        })
        .min_by_key(|x| x.0)
}

fn sorted_hosts(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v.dedup();
    v
}

impl WorkloadBuilder<'_> {
    /// Counts what every workload entry will generate, without drawing a
    /// random number or building a flow. Host references that do not resolve
    /// are left out here: [`build`](Self::build) reports them. The one error
    /// raised here is a Poisson size distribution that averages under a byte,
    /// which would make the flow count meaningless.
    pub fn estimate(&self, workloads: &[WorkloadConfig]) -> CfgResult<Vec<TrafficEstimate>> {
        workloads.iter().enumerate().map(|(i, w)| self.estimate_one(&format!("workload[{i}]"), w)).collect()
    }

    fn hosts_or_all_but(&self, list: &Option<Vec<HostRef>>, but: Option<u32>) -> Vec<u32> {
        match list {
            Some(l) => sorted_hosts(l.iter().filter_map(|r| host_ref(self.topo, r, "").ok()).collect()),
            None => (0..self.topo.n_hosts).filter(|&h| Some(h) != but).collect(),
        }
    }

    fn uplinks_bps(&self, hosts: &[u32]) -> f64 {
        hosts.iter().map(|&h| self.topo.ports[self.topo.host_port(h) as usize].rate_bps as f64).sum()
    }

    fn estimate_one(&self, f: &str, w: &WorkloadConfig) -> CfgResult<TrafficEstimate> {
        let d = self.duration;
        let start_min = match w.start {
            Some(StartTime::At(t)) => t.at(d),
            Some(StartTime::Uniform([a, _])) => a.at(d),
            None => 0,
        }
        .min(d);
        let stop = w.stop.map_or(d, |t| t.at(d).min(d));
        let receiver = || host_ref(self.topo, w.receiver.as_ref().unwrap_or(&HostRef::Index(0)), "").ok();
        let algorithm = w.cc.as_ref().unwrap_or(self.default_cc).algorithm.as_str();
        let cc_field = if w.cc.is_some() { format!("{f}.cc") } else { "cc".to_string() };
        let entry_timer = cc_timer(w.cc.as_ref().unwrap_or(self.default_cc), &cc_field);
        let per = w.flows_per_host.unwrap_or(1) as u64;
        let mut e = TrafficEstimate { start: start_min, end: stop, ..TrafficEstimate::default() };
        match w.kind.as_str() {
            "long" => {
                let all = w.pattern.as_deref() == Some("all_to_all");
                let r = if all { None } else { receiver() };
                e.senders = self.hosts_or_all_but(&w.senders, r);
                let n = e.senders.len() as u64;
                let pairs = if all { n.saturating_mul(n.saturating_sub(1)) } else { n };
                e.receivers = if all { e.senders.clone() } else { r.into_iter().collect() };
                e.flows = pairs.saturating_mul(per);
                (e.flows_field, e.flows_why) = if per > 1 {
                    (format!("{f}.flows_per_host"), format!("{pairs} sender-receiver pairs x {per} flows each"))
                } else if all {
                    (format!("{f}.pattern"), format!("all_to_all over {n} hosts: {pairs} pairs"))
                } else {
                    (format!("{f}.senders"), format!("{n} senders"))
                };
                e.bytes = w.size.map_or(f64::INFINITY, |s| s.0 as f64 * e.flows as f64);
            }
            "flows" => {
                let list = w.flows.as_deref().unwrap_or(&[]);
                e.senders = sorted_hosts(list.iter().filter_map(|x| host_ref(self.topo, &x.src, "").ok()).collect());
                e.receivers = sorted_hosts(list.iter().filter_map(|x| host_ref(self.topo, &x.dst, "").ok()).collect());
                e.flows = list.len() as u64;
                e.start = list.iter().map(|x| x.start.at(d)).min().unwrap_or(0).min(d);
                e.end = list.iter().map(|x| x.stop.map_or(d, |t| t.at(d).min(d))).max().unwrap_or(d);
                e.bytes = list.iter().map(|x| x.size.map_or(f64::INFINITY, |s| s.0 as f64)).sum();
                (e.flows_field, e.flows_why) = (format!("{f}.flows"), format!("{} listed flows", list.len()));
                // Per-flow algorithms: count the agent flows one by one.
                e.agent_flows = list
                    .iter()
                    .filter(|x| x.cc.as_ref().map_or(algorithm, |c| c.algorithm.as_str()) == "agent")
                    .count() as u64;
                e.cc_timer = list
                    .iter()
                    .enumerate()
                    .filter_map(|(j, x)| match &x.cc {
                        Some(c) => cc_timer(c, &format!("{f}.flows[{j}].cc")),
                        None => entry_timer.clone(),
                    })
                    .min_by_key(|x| x.0);
            }
            "messages" => {
                let r = receiver();
                e.senders = self.hosts_or_all_but(&w.senders, r);
                e.receivers = r.into_iter().collect();
                let n = e.senders.len() as u64;
                e.flows = n.saturating_mul(per);
                (e.flows_field, e.flows_why) = if per > 1 {
                    (format!("{f}.flows_per_host"), format!("{n} senders x {per} flows each"))
                } else {
                    (format!("{f}.senders"), format!("{n} senders"))
                };
                let count = w.count.unwrap_or(1).max(1) as u64;
                let period = w.period.map_or(0, |p| p.0);
                // Message k >= 1 of a flow arrives at start + k x period, if before the end of the run.
                let fit = d.saturating_sub(start_min).saturating_sub(1).checked_div(period).unwrap_or(0);
                let per_flow = (count - 1).min(fit);
                e.messages = e.flows.saturating_mul(per_flow);
                (e.messages_field, e.messages_why) = if count - 1 <= fit {
                    (format!("{f}.count"), format!("{count} messages per flow x {} flows", e.flows))
                } else {
                    (
                        format!("{f}.period"),
                        format!(
                            "one message every {} until the end of the run ({}): {} per flow x {} flows",
                            crate::units::fmt_time(period),
                            crate::units::fmt_time(d),
                            per_flow + 1,
                            e.flows
                        ),
                    )
                };
                let size = w.size.map_or(0, |s| s.0) as f64;
                e.bytes = size * (e.flows as f64 + e.messages as f64);
            }
            "incast" => {
                let r = receiver();
                e.senders = self.hosts_or_all_but(&w.senders, r);
                e.receivers = r.into_iter().collect();
                let count = w.count.unwrap_or(1).max(1) as u64;
                let period = w.period.map_or(0, |p| p.0);
                let fit = d.saturating_sub(start_min).saturating_sub(1).checked_div(period).map_or(1, |n| n + 1);
                let bursts = count.min(fit);
                let fan = w.fan_in.map_or(e.senders.len() as u64, |k| k as u64);
                e.flows = bursts.saturating_mul(fan);
                (e.flows_field, e.flows_why) = if count <= fit {
                    (format!("{f}.count"), format!("{bursts} bursts x {fan} senders"))
                } else {
                    (
                        format!("{f}.period"),
                        format!("one burst every {}: {bursts} bursts x {fan} senders", crate::units::fmt_time(period)),
                    )
                };
                e.bytes = w.size.map_or(0, |s| s.0) as f64 * e.flows as f64;
            }
            "poisson" => {
                let hosts = self.hosts_or_all_but(&w.hosts, None);
                let load = w.load.unwrap_or(0.0);
                let load = if load.is_finite() { load.clamp(0.0, 1.0) } else { 0.0 };
                let mean = self.poisson_mean(f, w)?;
                let span = stop.saturating_sub(start_min) as f64 / crate::units::SEC as f64;
                e.offered_bps = self.uplinks_bps(&hosts) * load;
                e.bytes = e.offered_bps / 8.0 * span;
                let expected = mean.map_or(0.0, |m| e.bytes / m);
                e.flows = if expected >= u64::MAX as f64 { u64::MAX } else { expected.ceil() as u64 };
                e.flows_field = format!("{f}.load");
                e.flows_why = format!(
                    "Poisson arrivals at load {load} on {} hosts for {}, mean flow size {:.1} bytes",
                    hosts.len(),
                    crate::units::fmt_time(stop.saturating_sub(start_min)),
                    mean.unwrap_or(0.0)
                );
                e.senders = hosts.clone();
                e.receivers = hosts;
            }
            _ => {}
        }
        if e.offered_bps == 0.0 {
            e.offered_bps = self.uplinks_bps(&e.senders);
        }
        if w.kind != "flows" {
            if algorithm == "agent" {
                e.agent_flows = e.flows;
            }
            e.cc_timer = entry_timer;
        }
        Ok(e)
    }

    /// Mean flow size of a Poisson entry's CDF after `max_size` (None when the
    /// file cannot be read or parsed: [`build`](Self::build) reports that).
    fn poisson_mean(&self, f: &str, w: &WorkloadConfig) -> CfgResult<Option<f64>> {
        let Some(path_s) = w.cdf.as_ref() else { return Ok(None) };
        let step = w.sampling.as_deref() == Some("step");
        let Ok(text) = std::fs::read_to_string(self.base_dir.join(path_s)) else { return Ok(None) };
        let Ok(cdf) = Cdf::parse(&text, step, &format!("{f}.cdf"), path_s) else { return Ok(None) };
        let cap = w.max_size.map(|s| s.0 as f64).unwrap_or(f64::INFINITY);
        let mean = cdf.mean_capped(cap);
        if mean < 1.0 {
            let (field, value) = match w.max_size {
                Some(m) if cdf.mean() >= 1.0 => (format!("{f}.max_size"), m.0.to_string()),
                _ => (format!("{f}.cdf"), format!("\"{path_s}\"")),
            };
            return Err(ConfigError::new(
                field,
                value,
                format!(
                    "the flow sizes average {mean} bytes, under one byte: every flow would be cut to 1 byte and \
                     the arrival rate would be absurd; give sizes in bytes"
                ),
            ));
        }
        Ok(Some(mean))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_conventions_have_the_documented_means() {
        let text = "100 0.5\n200 0.5\n300 1.0\n";
        let lin = Cdf::parse(text, false, "f", "p").unwrap();
        let step = Cdf::parse(text, true, "f", "p").unwrap();
        assert!((lin.mean() - (100.0 * 0.5 + 250.0 * 0.5)).abs() < 1e-9);
        assert!((step.mean() - (100.0 * 0.5 + 300.0 * 0.5)).abs() < 1e-9);
        assert_eq!(step.sample(0.7), 300.0);
        assert!((lin.sample(0.75) - 250.0).abs() < 1e-9);
    }

    #[test]
    fn non_monotone_cdf_is_rejected() {
        let e = Cdf::parse("1 0.5\n2 0.4\n3 1\n", false, "workload[0].cdf", "x.txt").unwrap_err();
        assert_eq!(e.field, "workload[0].cdf");
        assert!(e.message.contains("not monotone"));
    }
}
