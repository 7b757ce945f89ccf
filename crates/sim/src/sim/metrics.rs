//! Metrics: the time series and the collection window.
//!
//! Port and flow counters are plain integers updated by the handlers where
//! things happen; this module only snapshots them. Every `sample_interval` a
//! `Sample` event records queue length and transmit rate per switch port and,
//! when enabled, delivery rate per flow. `WindowStart` and `WindowEnd` snapshot
//! transmitted bytes per port and delivered bytes per flow, and bracket the
//! "in window" counters (drops, marks, pauses, queueing latency) that the
//! summary reports (`report.rs`). Sampling events are ordinary events: they
//! count in the event total and take their place in the event order.

use super::Simulation;
use crate::engine::Event;
use crate::packet::PacketKind;
use crate::units::{Time, SEC};

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
    /// Per sampled port: bytes transmitted at the previous sample.
    last_tx: Vec<u64>,
    /// Changes of the ECN profile of switch data queues (`ecn_log.rs`).
    pub ecn: super::ecn_log::EcnLog,
}

impl Simulation {
    /// Sets up the time series and pushes the first metrics events: the
    /// window's start (or starts it now) and end, and the first sample.
    pub(super) fn start_metrics(&mut self) {
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
    }

    /// Reserves the time series for the whole run at once, fallibly: an
    /// allocation the machine cannot make is an error naming the field, not
    /// an abort in the middle of the run.
    pub(super) fn reserve_series(&mut self) -> crate::config::CfgResult<()> {
        if self.sample_interval == 0 {
            return Ok(());
        }
        let samples = (self.end / self.sample_interval + 1) as usize;
        let ports = self.series.ports.len();
        let s = &mut self.series;
        crate::limits::try_reserve(&mut s.times, samples, "metrics.sample_interval")?;
        crate::limits::try_reserve(&mut s.queue, samples.saturating_mul(ports), "metrics.sample_interval")?;
        crate::limits::try_reserve(&mut s.tx_gbps, samples.saturating_mul(ports), "metrics.sample_interval")?;
        if s.flows_on {
            let n = samples.saturating_mul(self.flows.len());
            crate::limits::try_reserve(&mut s.flow_gbps, n, "metrics.flow_series")?;
        }
        Ok(())
    }

    /// The `Sample` event.
    pub(super) fn take_sample(&mut self) {
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
                let received = f.rcv.received_bytes();
                let d = received - f.stats.received_at_sample;
                f.stats.received_at_sample = received;
                self.series.flow_gbps.push((d as f64 * 8.0 / dt / 1e9) as f32);
            }
        }
        if now + self.sample_interval <= self.end {
            self.events.push(now + self.sample_interval, Event::Sample);
        }
    }

    /// The `WindowStart` event.
    pub(super) fn window_start(&mut self) {
        self.in_window = true;
        let now = self.now;
        for pt in &mut self.ports {
            pt.stats.tx_at_window[0] = pt.tx_bytes;
            pt.stats.unsent_at_window[0] = pt.unsent_bytes(now);
        }
        for f in &mut self.flows {
            f.stats.received_at_window[0] = Some(f.rcv.received_bytes());
        }
    }

    /// The `WindowEnd` event.
    pub(super) fn window_end(&mut self) {
        if !self.in_window {
            return;
        }
        self.in_window = false;
        let now = self.now;
        let start = self.window.0;
        for pt in &mut self.ports {
            pt.stats.tx_at_window[1] = pt.tx_bytes;
            pt.stats.unsent_at_window[1] = pt.unsent_bytes(now);
            if pt.paused != 0 {
                pt.stats.win_paused_time += now.saturating_sub(pt.paused_since.max(start));
            }
        }
        for f in &mut self.flows {
            f.stats.received_at_window[1] = Some(f.rcv.received_bytes());
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
            if let crate::net::port::Discipline::Rank(rq) = &pt.discipline {
                // ACKs and NACKs queue here too when they travel in their
                // flow's data class (`switch.ack_high_priority = false`).
                let data = rq.packets().map(|pid| self.pool.get(pid)).filter(|p| p.kind == PacketKind::Data);
                total += data.map(|p| p.size as u64).sum::<u64>();
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
}
