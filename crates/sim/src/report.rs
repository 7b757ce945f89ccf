//! Results of a run: the summary (the papers' metrics) and the time series.

use crate::metrics::{jain, min_max, quantile};
use crate::sim::Simulation;
use crate::units::{ps_to_s, Time};
use crate::workload::UNLIMITED;
use serde_json::{json, Value};

/// A column of a result table.
#[derive(Clone, Debug)]
pub enum Column {
    /// Floating-point values.
    F64(Vec<f64>),
    /// Unsigned integers.
    U64(Vec<u64>),
    /// Text.
    Str(Vec<String>),
}

/// A result table in long format.
#[derive(Clone, Debug)]
pub struct Table {
    /// Table name (`ports`, `port_info`, `flows`, `flow_info`, `messages`).
    pub name: &'static str,
    /// Named columns of equal length.
    pub columns: Vec<(&'static str, Column)>,
}

fn opt(v: Option<f64>) -> Value {
    match v {
        Some(x) if x.is_finite() => json!(x),
        _ => Value::Null,
    }
}

fn pcts(v: &[f64], scale: f64) -> Value {
    let mean = (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    json!({
        "mean": opt(mean.map(|m| m * scale)),
        "p50": opt(quantile(v, 0.5).map(|m| m * scale)),
        "p95": opt(quantile(v, 0.95).map(|m| m * scale)),
        "p99": opt(quantile(v, 0.99).map(|m| m * scale)),
    })
}

impl Simulation {
    /// Length of the collection window run so far (`None` before it starts).
    fn window_len(&self) -> Option<Time> {
        let (a, b) = self.window();
        let len = b.min(self.now()).saturating_sub(a);
        (len > 0).then_some(len)
    }

    /// Bytes port `p` transmitted inside the collection window so far.
    fn port_window_bytes(&self, p: u32) -> u64 {
        let pt = &self.ports()[p as usize];
        let end = if self.now() >= self.window().1 { pt.stats.tx_at_window[1] } else { pt.tx_bytes };
        end.saturating_sub(pt.stats.tx_at_window[0])
    }

    /// Utilisation of port `p` over the collection window so far (NaN before
    /// it starts): the bits it put on the wire inside the window over the bits
    /// its rate (or rate schedule) allowed there. A trace-driven link is
    /// measured against its trace's mean rate, which a window shorter than
    /// the trace's period can exceed.
    pub fn port_utilization(&self, p: u32) -> f64 {
        let Some(len) = self.window_len() else { return f64::NAN };
        let pt = &self.ports()[p as usize];
        let start = self.window().0;
        let unsent_end =
            if self.now() >= self.window().1 { pt.stats.unsent_at_window[1] } else { pt.unsent_bytes(self.now()) };
        let sent = self.port_window_bytes(p) as f64 - unsent_end + pt.stats.unsent_at_window[0];
        sent.max(0.0) * 8.0 / pt.capacity_bits(start, start + len)
    }

    /// Queue-length samples of switch port index `i` (in `series.ports`) inside the window.
    fn queue_samples(&self, i: usize) -> Vec<f64> {
        let n = self.series().ports.len();
        let (a, b) = self.window();
        self.series()
            .times
            .iter()
            .enumerate()
            .filter(|(_, &t)| t >= a && t <= b)
            .map(|(k, _)| self.series().queue[k * n + i] as f64)
            .collect()
    }

    /// Payload bytes flow `f` received inside the window (in order or not:
    /// [`Receiver::received_bytes`](crate::flow::Receiver::received_bytes)),
    /// and the time it was active there.
    fn flow_window(&self, fid: usize) -> Option<(f64, f64)> {
        let f = &self.flows()[fid];
        let (a, b) = self.window();
        let b = b.min(self.now());
        let start = f.path.start.max(a);
        let end = f.snd.finished.unwrap_or(b).min(f.path.stop.unwrap_or(b)).min(b);
        if !f.snd.started || end <= start {
            return None;
        }
        let d0 = f.stats.received_at_window[0].unwrap_or(0);
        let d1 = if self.now() >= self.window().1 {
            f.stats.received_at_window[1].unwrap_or_else(|| f.rcv.received_bytes())
        } else {
            f.rcv.received_bytes()
        };
        Some((d1.saturating_sub(d0) as f64, ps_to_s(end - start)))
    }

    /// The summary of the run so far.
    pub fn summary(&self) -> Value {
        let sc = &self.scenario();
        let (wa, wb) = self.window();
        // Bottleneck: the most utilised switch port in the window (ties: more bytes).
        let mut best: Option<(u32, f64, u64)> = None;
        if self.window_len().is_some() {
            for &p in &self.series().ports {
                let (u, b) = (self.port_utilization(p), self.port_window_bytes(p));
                if b > 0 && best.is_none_or(|(_, bu, bb)| u > bu + 1e-9 || (u >= bu - 1e-9 && b > bb)) {
                    best = Some((p, u, b));
                }
            }
        }
        let mut ports_json = vec![];
        let (mut drops, mut drop_bytes, mut marks, mut pauses) = (0u64, 0u64, 0u64, 0u64);
        for (i, &p) in self.series().ports.iter().enumerate() {
            let pt = &self.ports()[p as usize];
            let st = &pt.stats;
            drops += st.win_drops;
            drop_bytes += st.win_drop_bytes;
            marks += st.win_ecn_marks;
            pauses += st.win_pfc_pauses_sent;
            if pt.tx_bytes == 0 && st.drops == 0 {
                continue;
            }
            let q = self.queue_samples(i);
            let mut entry = json!({
                "id": p,
                "name": self.port_name(p),
                "utilization": self.port_utilization(p),
                "queue_mean_kb": opt(q.iter().sum::<f64>().checked_div_len(q.len()).map(|v| v / 1e3)),
                "queue_p99_kb": opt(quantile(&q, 0.99).map(|v| v / 1e3)),
                "queue_max_kb": st.win_max_queue as f64 / 1e3,
                "queue_latency_mean_us": opt(st.latency.mean().map(|v| v / 1e6)),
                "queue_latency_p99_us": opt(st.latency.quantile(0.99).map(|v| v / 1e6)),
                "drops_packets": st.win_drops,
                "drops_bytes": st.win_drop_bytes,
                "ecn_marks": st.win_ecn_marks,
                "pfc_pauses": st.win_pfc_pauses_sent,
                "ecn_profile": ecn_profile_json(pt),
                "paused_fraction": opt(self.window_len().map(|len| {
                    ps_to_s(self.ports()[pt.peer as usize].stats.win_paused_time) / ps_to_s(len)
                })),
            });
            if pt.model.is_some() {
                entry["link_drops_packets"] = json!(st.win_link_drops);
                entry["link_drops_bytes"] = json!(st.win_link_drop_bytes);
            }
            ports_json.push(entry);
        }
        let bottleneck = best.map(|(p, _, _)| {
            let i = self.series().ports.iter().position(|&x| x == p).expect("sampled port");
            let pt = &self.ports()[p as usize];
            let q = self.queue_samples(i);
            json!({
                "port": self.port_name(p),
                "id": p,
                "utilization": self.port_utilization(p),
                "queue_mean_kb": opt(q.iter().sum::<f64>().checked_div_len(q.len()).map(|v| v / 1e3)),
                "queue_p99_kb": opt(quantile(&q, 0.99).map(|v| v / 1e3)),
                "queue_max_kb": pt.stats.win_max_queue as f64 / 1e3,
                "queue_latency_mean_us": opt(pt.stats.latency.mean().map(|v| v / 1e6)),
                "queue_latency_p99_us": opt(pt.stats.latency.quantile(0.99).map(|v| v / 1e6)),
            })
        });
        // Fairness over flows active in the window, and over sending hosts.
        let mut rates = vec![];
        let mut host_bytes = vec![0.0f64; self.topology().n_hosts as usize];
        let mut host_active = vec![false; self.topology().n_hosts as usize];
        // Message streams are left out: their rate is their application's, not a share.
        for fid in 0..self.flows().len() {
            if !self.flows()[fid].snd.messages.is_empty() {
                continue;
            }
            if let Some((bytes, secs)) = self.flow_window(fid) {
                rates.push(bytes * 8.0 / secs / 1e9);
                let src = self.flows()[fid].path.src as usize;
                host_bytes[src] += bytes;
                host_active[src] = true;
            }
        }
        let host_rates: Vec<f64> = host_bytes.iter().zip(&host_active).filter(|(_, &a)| a).map(|(b, _)| *b).collect();
        // FCT of finite flows that started inside the window; messages separately.
        let mut fct = vec![];
        let mut slow = vec![];
        let mut msg_fct = vec![];
        let (mut completed, mut messages, mut messages_done) = (0, 0, 0);
        for f in self.flows() {
            if let Some(t) = f.snd.finished {
                completed += 1;
                let counted = f.path.start >= wa && f.path.start < wb && f.path.stop.is_none();
                if f.ctl.size != UNLIMITED && f.snd.messages.is_empty() && f.stats.ideal_fct > 0 && counted {
                    let d = (t - f.path.start) as f64;
                    fct.push(d);
                    slow.push(d / f.stats.ideal_fct as f64);
                }
            }
            for &(arr, _, done) in &f.snd.messages {
                messages += 1;
                if let Some(d) = done {
                    messages_done += 1;
                    msg_fct.push((d - arr) as f64);
                }
            }
        }
        let su = bottleneck.as_ref().and_then(|b| b["utilization"].as_f64());
        let ql = bottleneck.as_ref().and_then(|b| b["queue_latency_mean_us"].as_f64());
        let mean_rate = (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64);
        let mut summary = json!({
            "scenario": sc.name,
            "seed": sc.seed,
            "duration_s": ps_to_s(self.end()),
            "simulated_s": ps_to_s(self.now()),
            "window_s": [ps_to_s(wa), ps_to_s(wb)],
            "events": self.event_count(),
            "packet_hops": self.packet_hops(),
            "bottleneck": bottleneck.unwrap_or(Value::Null),
            "network": {
                "drops_packets": drops,
                "drops_bytes": drop_bytes,
                "ecn_marks": marks,
                "pfc_pauses": pauses,
            },
            "flows": {
                "count": self.flows().len(),
                "completed": completed,
                "active_in_window": rates.len(),
                "throughput_gbps_mean": opt(mean_rate),
                "jain": opt(jain(&rates)),
                "min_max": opt(min_max(&rates)),
                "host_min_max": opt(min_max(&host_rates)),
                "host_jain": opt(jain(&host_rates)),
                "fct_us": pcts(&fct, 1e-6),
                "slowdown": pcts(&slow, 1.0),
                "retransmitted_bytes": self.flows().iter().map(|f| f.stats.retx_bytes).sum::<u64>(),
                "timeouts": self.flows().iter().map(|f| f.stats.timeouts).sum::<u64>(),
            },
            "messages": {
                "count": messages,
                "completed": messages_done,
                "fct_us": pcts(&msg_fct, 1e-6),
            },
            "paper": {
                "SU": opt(su.map(|v| v * 100.0)),
                "FR": opt(min_max(&host_rates).map(|v| v * 100.0)),
                "QL": opt(ql),
                "drops_mb": drop_bytes as f64 / 1e6,
            },
            "conservation": {
                "sent_bytes": self.conservation().sent_bytes,
                "delivered_bytes": self.conservation().delivered_bytes,
                "dropped_bytes": self.conservation().dropped_bytes,
                "in_flight_bytes": self.in_flight_data_bytes(),
            },
            "ports": ports_json,
        });
        // Losses on lossy or policed links (`[[link]]`), over every port that
        // has a link model; the key is absent when none has one.
        if self.ports().iter().any(|pt| pt.model.is_some()) {
            let (n, b) = self
                .ports()
                .iter()
                .fold((0, 0), |(n, b), pt| (n + pt.stats.win_link_drops, b + pt.stats.win_link_drop_bytes));
            summary["network"]["link_drops_packets"] = json!(n);
            summary["network"]["link_drops_bytes"] = json!(b);
        }
        // Pantheon's delay metric (`metrics.one_way_delay`): the key is absent
        // when it is off.
        if let Some(h) = self.one_way_delays() {
            let ms = |v: Option<f64>| opt(v.map(|x| x / 1e9));
            summary["flows"]["one_way_delay_ms"] = json!({
                "packets": h.n,
                "mean": ms(h.mean()),
                "p50": ms(h.quantile(0.5)),
                "p95": ms(h.quantile(0.95)),
                "p99": ms(h.quantile(0.99)),
            });
        }
        if sc.metrics.breakdown_on() {
            self.add_breakdown(&mut summary);
        }
        summary
    }

    /// Adds the breakdown blocks (`[metrics] breakdown` or `size_buckets`):
    ///
    /// * `by_size`: per flow-size bucket, the flows that started in the
    ///   window (finite flows, not message streams, not stopped), how many
    ///   completed, and the slowdown and FCT (mean, median, p99) of those
    ///   that did; `large_flows`: the flows above the last edge, with their
    ///   goodput (mean over completed flows of size / FCT) and the rate at
    ///   which they received inside the window (all of them, finished or
    ///   not: under SRPT-like schedulers large flows starve rather than
    ///   finish late, and the completed ones alone would hide it).
    /// * `by_class`: per traffic class, the flows and the aggregate rate of
    ///   reception inside the window (Gb/s; bytes in order or not).
    /// * `losses`: the window's switch drops split into packets refused on
    ///   arrival and packets a rank queue (pFabric) evicted after admitting them.
    fn add_breakdown(&self, summary: &mut Value) {
        let (wa, wb) = self.window();
        let edges = self.scenario().metrics.size_bucket_edges();
        let bucket_of = |size: u64| edges.iter().position(|&e| size <= e).unwrap_or(edges.len());
        let n = edges.len() + 1;
        let (mut started, mut slow, mut fct) = (vec![0u64; n], vec![vec![]; n], vec![vec![]; n]);
        let mut large_goodput = vec![];
        let mut large_window_bytes = 0.0;
        for (fid, f) in self.flows().iter().enumerate() {
            if f.ctl.size == UNLIMITED || !f.snd.messages.is_empty() || f.path.stop.is_some() {
                continue;
            }
            if f.path.start < wa || f.path.start >= wb {
                continue;
            }
            let b = bucket_of(f.ctl.size);
            started[b] += 1;
            if b == n - 1 {
                large_window_bytes += self.flow_window(fid).map_or(0.0, |(bytes, _)| bytes);
            }
            let Some(t) = f.snd.finished else { continue };
            let d = (t - f.path.start) as f64;
            if f.stats.ideal_fct > 0 {
                slow[b].push(d / f.stats.ideal_fct as f64);
                fct[b].push(d);
            }
            if b == n - 1 && d > 0.0 {
                large_goodput.push(f.ctl.size as f64 * 8.0 / ps_to_s(t - f.path.start) / 1e9);
            }
        }
        let stats = |v: &[f64], scale: f64| {
            let mean = (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            json!({
                "mean": opt(mean.map(|m| m * scale)),
                "p50": opt(quantile(v, 0.5).map(|m| m * scale)),
                "p99": opt(quantile(v, 0.99).map(|m| m * scale)),
            })
        };
        let buckets: Vec<Value> = (0..n)
            .map(|b| {
                json!({
                    "min_bytes": if b == 0 { 0 } else { edges[b - 1] },
                    "max_bytes": edges.get(b).map_or(Value::Null, |&e| json!(e)),
                    "flows": started[b],
                    "completed": slow[b].len(),
                    "slowdown": stats(&slow[b], 1.0),
                    "fct_us": stats(&fct[b], 1e-6),
                })
            })
            .collect();
        let win_s = self.window_len().map(ps_to_s);
        let rate = |bytes: f64| opt(win_s.map(|s| bytes * 8.0 / s / 1e9));
        let large_mean =
            (!large_goodput.is_empty()).then(|| large_goodput.iter().sum::<f64>() / large_goodput.len() as f64);
        summary["by_size"] = json!({
            "edges_bytes": edges,
            "buckets": buckets,
            "large_flows": {
                "min_bytes": edges[edges.len() - 1],
                "flows": started[n - 1],
                "completed": large_goodput.len(),
                "goodput_gbps_mean": opt(large_mean),
                "window_gbps": rate(large_window_bytes),
            },
        });
        let mut classes: std::collections::BTreeMap<u8, (u64, f64)> = Default::default();
        for (fid, f) in self.flows().iter().enumerate() {
            let e = classes.entry(f.path.class).or_default();
            e.0 += 1;
            e.1 += self.flow_window(fid).map_or(0.0, |(bytes, _)| bytes);
        }
        summary["by_class"] = Value::Array(
            classes
                .into_iter()
                .map(|(class, (flows, bytes))| json!({"class": class, "flows": flows, "throughput_gbps": rate(bytes)}))
                .collect(),
        );
        let (mut drops, mut drop_bytes, mut ev, mut ev_bytes) = (0u64, 0u64, 0u64, 0u64);
        // The switch ports, as `network.drops_packets` counts them.
        for &p in &self.series().ports {
            let pt = &self.ports()[p as usize];
            drops += pt.stats.win_drops;
            drop_bytes += pt.stats.win_drop_bytes;
            ev += pt.stats.win_evictions;
            ev_bytes += pt.stats.win_eviction_bytes;
        }
        summary["losses"] = json!({
            "drops_packets": drops,
            "drops_bytes": drop_bytes,
            "refused_packets": drops - ev,
            "evicted_packets": ev,
            "evicted_bytes": ev_bytes,
        });
        if self.scenario().switch.trim {
            // Only runs that trim report it, so that other runs' summaries
            // keep their keys.
            let (mut cut, mut cut_bytes) = (0u64, 0u64);
            for &p in &self.series().ports {
                let pt = &self.ports()[p as usize];
                cut += pt.stats.win_trims;
                cut_bytes += pt.stats.win_trim_bytes;
            }
            summary["losses"]["trimmed_packets"] = json!(cut);
            summary["losses"]["trimmed_bytes"] = json!(cut_bytes);
        }
    }

    /// The time series and per-port / per-flow tables.
    pub fn tables(&self) -> Vec<Table> {
        let s = &self.series();
        let n = s.ports.len();
        let active: Vec<usize> = (0..n).filter(|&i| self.ports()[s.ports[i] as usize].tx_bytes > 0).collect();
        let mut t = vec![];
        let mut id = vec![];
        let mut q = vec![];
        let mut g = vec![];
        for (k, &time) in s.times.iter().enumerate() {
            for &i in &active {
                t.push(ps_to_s(time));
                id.push(s.ports[i] as u64);
                q.push(s.queue[k * n + i] as f64);
                g.push(s.tx_gbps[k * n + i] as f64);
            }
        }
        let ports = Table {
            name: "ports",
            columns: vec![
                ("time_s", Column::F64(t)),
                ("port_id", Column::U64(id)),
                ("queue_bytes", Column::F64(q)),
                ("tx_gbps", Column::F64(g)),
            ],
        };
        let all: Vec<u32> = (0..self.ports().len() as u32).collect();
        let port_info = Table {
            name: "port_info",
            columns: vec![
                ("port_id", Column::U64(all.iter().map(|&p| p as u64).collect())),
                ("name", Column::Str(all.iter().map(|&p| self.port_name(p)).collect())),
                ("node", Column::U64(all.iter().map(|&p| self.ports()[p as usize].node as u64).collect())),
                (
                    "rate_gbps",
                    Column::F64(all.iter().map(|&p| self.ports()[p as usize].rate_bps as f64 / 1e9).collect()),
                ),
                ("utilization", Column::F64(all.iter().map(|&p| self.port_utilization(p)).collect())),
                ("drops_packets", Column::U64(all.iter().map(|&p| self.ports()[p as usize].stats.drops).collect())),
                ("ecn_marks", Column::U64(all.iter().map(|&p| self.ports()[p as usize].stats.ecn_marks).collect())),
                (
                    "pfc_pauses",
                    Column::U64(all.iter().map(|&p| self.ports()[p as usize].stats.pfc_pauses_sent).collect()),
                ),
            ],
        };
        let fl = &self.flows();
        let nan = f64::NAN;
        let flow_info = Table {
            name: "flow_info",
            columns: vec![
                ("flow_id", Column::U64((0..fl.len() as u64).collect())),
                ("src", Column::U64(fl.iter().map(|f| f.path.src as u64).collect())),
                ("dst", Column::U64(fl.iter().map(|f| f.path.dst as u64).collect())),
                (
                    "size_bytes",
                    Column::F64(
                        fl.iter().map(|f| if f.ctl.size == UNLIMITED { nan } else { f.ctl.size as f64 }).collect(),
                    ),
                ),
                ("start_s", Column::F64(fl.iter().map(|f| ps_to_s(f.path.start)).collect())),
                (
                    "fct_s",
                    Column::F64(fl.iter().map(|f| f.snd.finished.map_or(nan, |t| ps_to_s(t - f.path.start))).collect()),
                ),
                (
                    "slowdown",
                    Column::F64(
                        fl.iter()
                            .map(|f| match f.snd.finished {
                                Some(t) if f.stats.ideal_fct > 0 && f.snd.messages.is_empty() => {
                                    (t - f.path.start) as f64 / f.stats.ideal_fct as f64
                                }
                                _ => nan,
                            })
                            .collect(),
                    ),
                ),
                ("base_rtt_us", Column::F64(fl.iter().map(|f| f.ctl.base_rtt as f64 / 1e6).collect())),
                (
                    "min_rtt_us",
                    Column::F64(fl.iter().map(|f| f.stats.min_rtt.map_or(nan, |r| r as f64 / 1e6)).collect()),
                ),
                ("delivered_bytes", Column::U64(fl.iter().map(|f| f.rcv.rcv_nxt).collect())),
                ("received_bytes", Column::U64(fl.iter().map(|f| f.rcv.received_bytes()).collect())),
                ("sent_bytes", Column::U64(fl.iter().map(|f| f.stats.sent_bytes).collect())),
                ("retx_bytes", Column::U64(fl.iter().map(|f| f.stats.retx_bytes).collect())),
                ("nacks", Column::U64(fl.iter().map(|f| f.stats.nacks).collect())),
                ("cnps", Column::U64(fl.iter().map(|f| f.stats.cnps).collect())),
                ("timeouts", Column::U64(fl.iter().map(|f| f.stats.timeouts).collect())),
                (
                    "window_gbps",
                    Column::F64(
                        (0..fl.len()).map(|i| self.flow_window(i).map_or(nan, |(b, s)| b * 8.0 / s / 1e9)).collect(),
                    ),
                ),
            ],
        };
        let mut out = vec![ports, port_info, flow_info];
        if s.flows_on && !fl.is_empty() {
            let nf = fl.len();
            let mut t = vec![];
            let mut id = vec![];
            let mut r = vec![];
            for (k, &time) in s.times.iter().enumerate() {
                for (j, f) in fl.iter().enumerate() {
                    if !f.snd.started
                        || f.path.start > time
                        || f.snd.finished.is_some_and(|d| d + self_interval(self) < time)
                    {
                        continue;
                    }
                    t.push(ps_to_s(time));
                    id.push(j as u64);
                    r.push(s.flow_gbps[k * nf + j] as f64);
                }
            }
            out.push(Table {
                name: "flows",
                columns: vec![("time_s", Column::F64(t)), ("flow_id", Column::U64(id)), ("rate_gbps", Column::F64(r))],
            });
        }
        let mut mf = vec![];
        let mut ms = vec![];
        let mut msz = vec![];
        let mut mfct = vec![];
        for (j, f) in fl.iter().enumerate() {
            let mut prev = 0;
            for &(arr, end, done) in &f.snd.messages {
                mf.push(j as u64);
                ms.push(ps_to_s(arr));
                msz.push(end - prev);
                mfct.push(done.map_or(nan, |d| ps_to_s(d - arr)));
                prev = end;
            }
        }
        if s.ecn.on {
            out.push(ecn_table(&s.ecn));
        }
        if !mf.is_empty() {
            out.push(Table {
                name: "messages",
                columns: vec![
                    ("flow_id", Column::U64(mf)),
                    ("start_s", Column::F64(ms)),
                    ("size_bytes", Column::U64(msz)),
                    ("fct_s", Column::F64(mfct)),
                ],
            });
        }
        out
    }
}

/// The ECN profile log (`sim/ecn_log.rs`) as the table `ecn`: one row per
/// change, NaN marking fields for a queue that does not mark and a NaN
/// template for a profile that is none of `agent.ecn_profiles`.
fn ecn_table(log: &crate::sim::EcnLog) -> Table {
    let nan = f64::NAN;
    let red = |f: fn(&crate::net::port::Red) -> f64| -> Vec<f64> {
        log.profiles.iter().map(|r| r.as_ref().map_or(nan, f)).collect()
    };
    Table {
        name: "ecn",
        columns: vec![
            ("time_s", Column::F64(log.times.iter().map(|&t| ps_to_s(t)).collect())),
            ("port_id", Column::U64(log.ports.iter().map(|&p| p as u64).collect())),
            ("queue", Column::U64(log.queues.iter().map(|&q| q as u64).collect())),
            ("kmin_bytes", Column::F64(red(|r| r.kmin as f64))),
            ("kmax_bytes", Column::F64(red(|r| r.kmax as f64))),
            ("pmax", Column::F64(red(|r| r.pmax))),
            ("template", Column::F64(log.templates.iter().map(|t| t.map_or(nan, |t| t as f64)).collect())),
        ],
    }
}

/// ECN profile of a port: per queue-length bin, [bin start in bytes, bin end,
/// packets seen, packets marked] (empty without ECN).
fn ecn_profile_json(pt: &crate::net::port::Port) -> Value {
    let Some(red) = pt.queues.iter().find_map(|q| q.red) else { return json!([]) };
    let span = if pt.stats.ecn_span > 0 { pt.stats.ecn_span } else { (red.kmax + red.kmax / 4).max(1) } as f64;
    let n = crate::net::port::ECN_BINS as f64;
    Value::Array(
        pt.stats
            .ecn_profile
            .iter()
            .enumerate()
            .map(|(i, c)| json!([span * i as f64 / n, span * (i + 1) as f64 / n, c[0], c[1]]))
            .collect(),
    )
}

fn self_interval(sim: &Simulation) -> Time {
    sim.scenario().metrics.sample_interval.0
}

trait CheckedDivLen {
    fn checked_div_len(self, n: usize) -> Option<f64>;
}

impl CheckedDivLen for f64 {
    fn checked_div_len(self, n: usize) -> Option<f64> {
        (n > 0).then(|| self / n as f64)
    }
}
