//! Scenario fields for links that change: a rate schedule or a mahimahi
//! trace, random loss and a policer, per link direction.
//!
//! Scenario form (a top-level array of tables, `Scenario::link`; reference in
//! docs/scenarios.md):
//!
//! ```toml
//! [[link]]
//! from = "left"                  # node names; built-in topologies name hosts
//! to = "right"                   # h0, h1, ... and switches sw0, left, right,
//! both_directions = false        # leaf0/spine0, edge0/agg0/core0
//! schedule = [{ at = "0s", rate = "10Gbps" }, { at = "5ms", rate = "2Gbps" }]
//! loss = 0.001
//! policer = { rate = "1Gbps", burst = "64KiB" }
//!
//! [[link]]
//! from = "sw0"
//! to = "h0"
//! trace = "traces/lte-driving.down"    # relative to the scenario file
//! trace_opportunity = 1500             # bytes per line (mahimahi: 1500)
//! ```
//!
//! Each entry selects the direction `from -> to` of the link between two
//! adjacent nodes (both directions with `both_directions`), and sets any of
//! `schedule` or `trace` (not both), `loss` and `policer`; an entry that sets
//! none of them is an error. The scenario builder resolves the names to the
//! port of `from` facing `to` (an unknown name or non-adjacent pair is a
//! [`ConfigError`] on `link[i].from` / `link[i].to`; two entries for one
//! direction are an error on the second's `from`), calls
//! [`LinkModelConfig::build`] and stores the result in that port
//! (`build_link_models` in `sim/build.rs`). The topology's own rate of the
//! link is the rate before a schedule's first step.

use crate::config::{CfgResult, ConfigError};
use crate::net::link_model::{
    DeliveryTrace, LinkModel, LinkTiming, RandomLoss, RateSchedule, TokenBucket, TraceLink, TraceProcess,
    MAHIMAHI_OPPORTUNITY,
};
use crate::units::{fmt_time, Bytes, Duration, Rate, MS};
use serde::Deserialize;
use std::path::Path;

/// One `[[link]]` entry: a link direction and what changes on it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkModelConfig {
    /// Name of the node the direction leaves.
    pub from: String,
    /// Name of the adjacent node it reaches.
    pub to: String,
    /// Apply the same model, separately, to the reverse direction too.
    #[serde(default)]
    pub both_directions: bool,
    /// Piecewise-constant rate: from each step's `at` on, the link runs at its
    /// `rate`; before the first step, at the topology's rate.
    pub schedule: Option<Vec<RateStepConfig>>,
    /// A mahimahi trace file (one delivery time in ms per line), relative to
    /// the scenario's folder; it replaces the link's rate.
    pub trace: Option<String>,
    /// Bytes one line of `trace` can deliver (default 1500, as mahimahi).
    pub trace_opportunity: Option<Bytes>,
    /// Probability that the link loses a packet, 0 to 1.
    #[serde(default)]
    pub loss: f64,
    /// A token-bucket policer at the far end of the link.
    pub policer: Option<PolicerConfig>,
    /// A trace generated at build time instead of read from a file (Pantheon's
    /// constant-rate and Poisson-delivery traces); excludes `trace` and `schedule`.
    pub trace_process: Option<TraceProcessConfig>,
}

/// A generated mahimahi trace (`trace_process`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceProcessConfig {
    /// `"even"` (constant rate, whole-millisecond ticks) or `"poisson"`.
    pub kind: String,
    /// Mean rate the opportunities carry.
    pub rate: Rate,
    /// Length of the trace before it repeats, whole milliseconds (default 60 s,
    /// the length of Pantheon's trace files).
    pub period: Option<Duration>,
    /// Seed of a Poisson trace (default: the scenario's `seed`, so two entries
    /// with the same process give the same trace, as Pantheon uses one file in
    /// both directions).
    pub seed: Option<u64>,
}

/// Default `trace_process.period`: Pantheon's trace files are 60 s long.
pub const DEFAULT_TRACE_PERIOD_MS: u64 = 60_000;

impl TraceProcessConfig {
    fn process(&self, field: &str) -> CfgResult<TraceProcess> {
        match self.kind.as_str() {
            "even" => Ok(TraceProcess::Even),
            "poisson" => Ok(TraceProcess::Poisson),
            other => Err(ConfigError::new(
                format!("{field}.trace_process.kind"),
                format!("\"{other}\""),
                "expected \"even\" or \"poisson\"",
            )),
        }
    }

    fn period_ms(&self, field: &str) -> CfgResult<u64> {
        let Some(p) = self.period else { return Ok(DEFAULT_TRACE_PERIOD_MS) };
        if p.0 == 0 || p.0 % MS != 0 {
            return Err(ConfigError::new(
                format!("{field}.trace_process.period"),
                fmt_time(p.0),
                "must be a positive whole number of milliseconds",
            ));
        }
        Ok(p.0 / MS)
    }

    /// The trace it describes, `default_seed` standing in for a missing `seed`.
    pub fn generate(&self, field: &str, opportunity_bytes: u32, default_seed: u64) -> CfgResult<DeliveryTrace> {
        let process = self.process(field)?;
        let period = self.period_ms(field)?;
        DeliveryTrace::generate(process, self.rate.0, opportunity_bytes, period, self.seed.unwrap_or(default_seed))
            .map_err(|e| ConfigError::new(format!("{field}.trace_process"), "", e.to_string()))
    }
}

/// One step of a rate schedule.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStepConfig {
    /// When the rate takes effect.
    pub at: Duration,
    /// The rate from then on.
    pub rate: Rate,
}

/// A token-bucket policer.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicerConfig {
    /// Long-run rate it lets through.
    pub rate: Rate,
    /// Bytes it lets through at once after a quiet period.
    pub burst: Bytes,
}

impl LinkModelConfig {
    /// Checks the entry without reading files; `field` is its path in the
    /// scenario, e.g. `link[2]`.
    pub fn validate(&self, field: &str) -> CfgResult<()> {
        for (name, value) in [("from", &self.from), ("to", &self.to)] {
            if value.trim().is_empty() {
                return Err(ConfigError::new(format!("{field}.{name}"), "\"\"", "must name a node"));
            }
        }
        if self.from == self.to {
            return Err(ConfigError::new(
                format!("{field}.to"),
                format!("\"{}\"", self.to),
                "is the same node as `from`; a link joins two nodes",
            ));
        }
        if self.schedule.is_none()
            && self.trace.is_none()
            && self.trace_process.is_none()
            && self.loss == 0.0
            && self.policer.is_none()
        {
            return Err(ConfigError::new(
                field,
                "",
                "changes nothing; give schedule, trace, trace_process, loss or policer",
            ));
        }
        if let Some(tp) = &self.trace_process {
            if self.schedule.is_some() || self.trace.is_some() {
                return Err(ConfigError::new(
                    format!("{field}.trace_process"),
                    "",
                    "a link follows one of a rate schedule, a trace file or a generated trace",
                ));
            }
            tp.process(field)?;
            tp.period_ms(field)?;
        }
        if let (Some(_), Some(trace)) = (&self.schedule, &self.trace) {
            return Err(ConfigError::new(
                format!("{field}.trace"),
                format!("\"{trace}\""),
                "a link follows either a rate schedule or a trace, not both",
            ));
        }
        if let Some(steps) = &self.schedule {
            if steps.is_empty() {
                return Err(ConfigError::new(format!("{field}.schedule"), "[]", "needs at least one step"));
            }
            for (i, s) in steps.iter().enumerate() {
                if s.rate.0 == 0 {
                    return Err(ConfigError::new(format!("{field}.schedule[{i}].rate"), 0, "must be positive"));
                }
                if i > 0 && s.at <= steps[i - 1].at {
                    return Err(ConfigError::new(
                        format!("{field}.schedule[{i}].at"),
                        fmt_time(s.at.0),
                        format!("must be later than the previous step ({})", fmt_time(steps[i - 1].at.0)),
                    ));
                }
            }
        }
        if let Some(b) = self.trace_opportunity {
            if self.trace.is_none() && self.trace_process.is_none() {
                return Err(ConfigError::new(
                    format!("{field}.trace_opportunity"),
                    b.0,
                    "applies only to a link with a `trace` or `trace_process`",
                ));
            }
            if b.0 == 0 || b.0 > u32::MAX as u64 {
                return Err(ConfigError::new(
                    format!("{field}.trace_opportunity"),
                    b.0,
                    "must be a positive number of bytes",
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.loss) {
            return Err(ConfigError::new(format!("{field}.loss"), self.loss, "must be a probability from 0 to 1"));
        }
        if let Some(p) = &self.policer {
            if p.rate.0 == 0 {
                return Err(ConfigError::new(format!("{field}.policer.rate"), 0, "must be positive"));
            }
            if p.burst.0 == 0 {
                return Err(ConfigError::new(format!("{field}.policer.burst"), 0, "must be positive"));
            }
        }
        Ok(())
    }

    /// Builds the model of one direction: checks the entry, reads the trace
    /// from `base_dir`, and starts a schedule from `link_rate_bps`, the
    /// topology's rate of the link. `max_packet` is the largest packet on the
    /// wire: a policer burst smaller than it would drop every such packet.
    pub fn build(&self, field: &str, base_dir: &Path, link_rate_bps: u64, max_packet: u64) -> CfgResult<LinkModel> {
        self.build_seeded(field, base_dir, link_rate_bps, max_packet, 0)
    }

    /// [`build`](Self::build), with `seed` as the default seed of a generated
    /// Poisson trace (the scenario builder passes the scenario's `seed`).
    pub fn build_seeded(
        &self,
        field: &str,
        base_dir: &Path,
        link_rate_bps: u64,
        max_packet: u64,
        seed: u64,
    ) -> CfgResult<LinkModel> {
        self.validate(field)?;
        let timing = if let Some(steps) = &self.schedule {
            let steps: Vec<_> = steps.iter().map(|s| (s.at.0, s.rate.0)).collect();
            let s = RateSchedule::new(link_rate_bps, &steps)
                .map_err(|e| ConfigError::new(format!("{field}.schedule[{}]", e.step), "", e.message))?;
            Some(LinkTiming::Schedule(s))
        } else if let Some(path_s) = &self.trace {
            let trace_field = format!("{field}.trace");
            let path = base_dir.join(path_s);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                ConfigError::new(&trace_field, format!("\"{path_s}\""), format!("cannot read the file: {e}"))
            })?;
            let trace = DeliveryTrace::parse(&text).map_err(|e| {
                ConfigError::new(&trace_field, format!("\"{path_s}\""), format!("not a mahimahi trace: {e}"))
            })?;
            let bytes = self.trace_opportunity.map_or(MAHIMAHI_OPPORTUNITY, |b| b.0 as u32);
            Some(LinkTiming::Trace(TraceLink::new(trace, bytes)))
        } else if let Some(tp) = &self.trace_process {
            let bytes = self.trace_opportunity.map_or(MAHIMAHI_OPPORTUNITY, |b| b.0 as u32);
            Some(LinkTiming::Trace(TraceLink::new(tp.generate(field, bytes, seed)?, bytes)))
        } else {
            None
        };
        let loss = if self.loss > 0.0 {
            Some(RandomLoss::new(self.loss).map_err(|m| ConfigError::new(format!("{field}.loss"), self.loss, m))?)
        } else {
            None
        };
        let policer = match &self.policer {
            Some(p) => {
                if p.burst.0 < max_packet {
                    return Err(ConfigError::new(
                        format!("{field}.policer.burst"),
                        p.burst.0,
                        format!("is smaller than one full packet ({max_packet} bytes), which it would always drop"),
                    ));
                }
                Some(
                    TokenBucket::new(p.rate.0, p.burst.0)
                        .map_err(|m| ConfigError::new(format!("{field}.policer"), "", m))?,
                )
            }
            None => None,
        };
        Ok(LinkModel { timing, loss, policer })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MS;

    const G: u64 = 1_000_000_000;

    fn parse(json: &str) -> LinkModelConfig {
        serde_json::from_str(json).unwrap()
    }

    fn err(cfg: &LinkModelConfig) -> ConfigError {
        cfg.build("link[0]", Path::new("."), 10 * G, 1_072).unwrap_err()
    }

    #[test]
    fn a_schedule_with_loss_and_policer_builds() {
        let cfg = parse(
            r#"{"from": "left", "to": "right", "loss": 0.01,
                "schedule": [{"at": "1ms", "rate": "2Gbps"}, {"at": "3ms", "rate": "5Gbps"}],
                "policer": {"rate": "1Gbps", "burst": "64KiB"}}"#,
        );
        let m = cfg.build("link[0]", Path::new("."), 10 * G, 1_072).unwrap();
        let Some(LinkTiming::Schedule(s)) = &m.timing else { panic!("expected a schedule") };
        assert_eq!(s.steps(), [(0, 10 * G), (MS, 2 * G), (3 * MS, 5 * G)]);
        assert_eq!(m.loss.unwrap().probability(), 0.01);
        assert_eq!(m.policer.as_ref().unwrap().rate_bps(), G);
        assert_eq!(m.policer.unwrap().tokens_at(0), 65_536);
    }

    #[test]
    fn bad_values_name_their_field() {
        let base = r#""from": "a", "to": "b""#;
        let cases = [
            (r#""loss": -0.1"#, "link[0].loss"),
            (r#""loss": 1.5"#, "link[0].loss"),
            (r#""schedule": []"#, "link[0].schedule"),
            (
                r#""schedule": [{"at": "2ms", "rate": "1Gbps"}, {"at": "2ms", "rate": "2Gbps"}]"#,
                "link[0].schedule[1].at",
            ),
            (
                r#""schedule": [{"at": "2ms", "rate": "1Gbps"}, {"at": "1ms", "rate": "2Gbps"}]"#,
                "link[0].schedule[1].at",
            ),
            (r#""schedule": [{"at": 0, "rate": "1Gbps"}], "trace": "t""#, "link[0].trace"),
            (r#""trace_opportunity": 1500, "loss": 0.1"#, "link[0].trace_opportunity"),
            (r#""trace": "t", "trace_opportunity": 0"#, "link[0].trace_opportunity"),
            (r#""policer": {"rate": "1Gbps", "burst": 0}"#, "link[0].policer.burst"),
            (r#""policer": {"rate": "1Gbps", "burst": 1000}"#, "link[0].policer.burst"),
            (r#""trace": "no/such/trace""#, "link[0].trace"),
            (r#""trace_process": {"kind": "gauss", "rate": "1Mbps"}"#, "link[0].trace_process.kind"),
            (
                r#""trace_process": {"kind": "even", "rate": "1Mbps", "period": "1.5ms"}"#,
                "link[0].trace_process.period",
            ),
            (r#""trace_process": {"kind": "even", "rate": "1Mbps"}, "trace": "t""#, "link[0].trace_process"),
            (r#""trace_process": {"kind": "even", "rate": "1kbps", "period": "1ms"}"#, "link[0].trace_process"),
        ];
        for (extra, field) in cases {
            let e = err(&parse(&format!("{{{base}, {extra}}}")));
            assert_eq!(e.field, field, "{extra}: {e}");
        }
        assert!(err(&parse(&format!("{{{base}}}"))).message.contains("changes nothing"));
        assert_eq!(err(&parse(r#"{"from": "a", "to": "a", "loss": 0.1}"#)).field, "link[0].to");
        // A zero rate cannot come from a scenario file (the unit parser refuses it) but is
        // still refused when the struct is built in code.
        let zero = LinkModelConfig {
            schedule: Some(vec![RateStepConfig { at: Duration(0), rate: Rate(0) }]),
            ..parse(&format!("{{{base}}}"))
        };
        assert_eq!(err(&zero).field, "link[0].schedule[0].rate");
        assert!(serde_json::from_str::<LinkModelConfig>(r#"{"from": "a", "to": "b", "rate": 5}"#).is_err());
        assert!(serde_json::from_str::<LinkModelConfig>(
            r#"{"from": "a", "to": "b", "loss": 0.1,
            "policer": {"rate": "1Gbps", "burst": 1, "depth": 2}}"#
        )
        .is_err());
        let unread = err(&parse(&format!(r#"{{{base}, "trace": "no/such/trace"}}"#)));
        assert!(unread.message.starts_with("cannot read the file"), "{unread}");
    }

    #[test]
    fn a_trace_is_read_relative_to_the_scenario() {
        let dir = std::env::temp_dir().join(format!("ccgym-link-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("good.trace"), "1\n1\n4\n").unwrap();
        std::fs::write(dir.join("bad.trace"), "1\n3\n2\n").unwrap();
        let cfg = parse(r#"{"from": "sw0", "to": "h0", "trace": "good.trace", "trace_opportunity": "3KB"}"#);
        let mut m = cfg.build("link[1]", &dir, 10 * G, 1_072).unwrap();
        let Some(timing) = m.timing.as_mut() else { panic!("expected a trace") };
        // 3,000 B per opportunity: two 1,500 B packets share the first one at 1 ms.
        assert_eq!(timing.transmit_end(0, 0, 1_500), MS);
        assert_eq!(timing.transmit_end(MS, 0, 1_500), MS);
        assert_eq!(timing.transmit_end(MS, 0, 1_500), MS);
        assert_eq!(timing.transmit_end(MS, 0, 1_500), MS);
        assert_eq!(timing.transmit_end(MS, 0, 1_500), 4 * MS);
        let bad = parse(r#"{"from": "sw0", "to": "h0", "trace": "bad.trace"}"#);
        let e = bad.build("link[1]", &dir, 10 * G, 1_072).unwrap_err();
        assert_eq!(e.field, "link[1].trace");
        assert!(e.message.contains("line 3"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        // A generated trace: the scenario's seed unless the entry gives one.
        let gen = |seed: &str| {
            parse(&format!(
                r#"{{"from": "a", "to": "b", "trace_process": {{"kind": "poisson", "rate": "2.64Mbps"{seed}}}}}"#
            ))
        };
        let trace_of = |m: LinkModel| match m.timing {
            Some(LinkTiming::Trace(t)) => t.trace().clone(),
            _ => panic!("expected a trace"),
        };
        let a = trace_of(gen("").build_seeded("link[0]", Path::new("."), G, 1_072, 1).unwrap());
        let b = trace_of(gen("").build_seeded("link[0]", Path::new("."), G, 1_072, 2).unwrap());
        let c = trace_of(gen(r#", "seed": 1"#).build_seeded("link[0]", Path::new("."), G, 1_072, 2).unwrap());
        assert_ne!(a, b);
        assert_eq!(a, c);
        assert!(a.period() > 59 * crate::units::SEC);
        // Without timing fields the port keeps its fixed rate.
        let lossy = parse(r#"{"from": "a", "to": "b", "loss": 0.5}"#);
        assert!(lossy.build("link[0]", Path::new("."), G, 1_072).unwrap().timing.is_none());
    }
}
