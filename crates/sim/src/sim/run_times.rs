//! The times of a run against its `duration`: the metrics window and the
//! workloads' start and stop times.
//!
//! Each of them may be written from the start of the run ("170ms") or
//! relative to it ("85%", "end", see [`RunTime`]); relative ones follow
//! `duration`, so a run is shortened by changing that one setting. Absolute
//! ones past the end are a mistake, usually of a shortened `duration`, which
//! leaves several of them behind at once: the error names every one, with a
//! value that would work, so that one correction is enough.

use crate::config::{CfgResult, ConfigError, Scenario, StartTime};
use crate::units::{fmt_time, RunTime, Time};

/// A time of the scenario that lies past the end of the run.
struct Late {
    /// Dotted path of the field.
    field: String,
    /// Its value as written.
    value: String,
    /// What is wrong with it.
    what: &'static str,
    /// A value that would work (TOML), or what it must be.
    fix: String,
}

/// Checks the metrics window's order and that no time of the run lies past
/// its end; the error names the first such field and lists every one.
pub(super) fn validate(sc: &Scenario) -> CfgResult<()> {
    let d = sc.duration.0;
    if let Some([a, b]) = sc.metrics.window {
        if a.at(d) >= b.at(d) {
            return Err(ConfigError::new(
                "metrics.window",
                format!("[{a}, {b}]"),
                format!("start must be before end (here {} and {})", fmt_time(a.at(d)), fmt_time(b.at(d))),
            ));
        }
    }
    let late = late_times(sc);
    let Some(first) = late.first() else { return Ok(()) };
    let latest = latest_time(sc);
    let every = late.iter().map(|l| format!("{} = {} (would work: {})", l.field, l.value, l.fix)).collect::<Vec<_>>();
    Err(ConfigError::new(
        first.field.clone(),
        &first.value,
        format!(
            "{} (duration = {}). Every time past the end: {}. Write times relative to the run (\"85%\", \"end\") \
             to make them follow duration, or make duration at least {}",
            first.what,
            fmt_time(d),
            every.join(", "),
            fmt_time(latest),
        ),
    ))
}

/// The times past the end of the run, in the order of the scenario.
fn late_times(sc: &Scenario) -> Vec<Late> {
    let d = sc.duration.0;
    let past = |t: RunTime| t.at(d) > d;
    let quoted = |t: RunTime| format!("\"{t}\"");
    let before_end = || format!("a time before {}", fmt_time(d));
    let mut late = vec![];
    if let Some([a, b]) = sc.metrics.window {
        if past(b) {
            // A window that starts past the end cannot keep its start: the whole run is
            // the window that surely works.
            let start = if past(a) || a.at(d) == d { "\"0s\"".to_string() } else { quoted(a) };
            late.push(Late {
                field: "metrics.window".into(),
                value: format!("[{a}, {b}]"),
                what: "ends after the end of the run",
                fix: format!("[{start}, \"end\"]"),
            });
        }
    }
    for (i, w) in sc.workload.iter().enumerate() {
        let f = format!("workload[{i}]");
        match w.start {
            Some(StartTime::At(t)) if past(t) => late.push(Late {
                field: format!("{f}.start"),
                value: t.to_string(),
                what: "is after the end of the run",
                fix: before_end(),
            }),
            Some(StartTime::Uniform([a, b])) if past(a) || past(b) => late.push(Late {
                field: format!("{f}.start"),
                value: format!("[{a}, {b}]"),
                what: "is after the end of the run",
                fix: if past(a) {
                    format!("a range before {}", fmt_time(d))
                } else {
                    format!("[{}, \"end\"]", quoted(a))
                },
            }),
            _ => {}
        }
        if let Some(t) = w.stop.filter(|&t| past(t)) {
            late.push(stop_late(format!("{f}.stop"), t));
        }
        for (j, fl) in w.flows.iter().flatten().enumerate() {
            let ff = format!("{f}.flows[{j}]");
            if past(fl.start) {
                late.push(Late {
                    field: format!("{ff}.start"),
                    value: fl.start.to_string(),
                    what: "is after the end of the run",
                    fix: before_end(),
                });
            }
            if let Some(t) = fl.stop.filter(|&t| past(t)) {
                late.push(stop_late(format!("{ff}.stop"), t));
            }
        }
    }
    late
}

/// A stop past the end: stopping at the end is what the run does anyway.
fn stop_late(field: String, t: RunTime) -> Late {
    Late { field, value: t.to_string(), what: "is after the end of the run", fix: "\"end\"".into() }
}

/// The latest time the scenario writes: the shortest `duration` that fits
/// every time as written.
fn latest_time(sc: &Scenario) -> Time {
    let d = sc.duration.0;
    let mut times: Vec<RunTime> = sc.metrics.window.map_or(vec![], |w| w.to_vec());
    for w in &sc.workload {
        match w.start {
            Some(StartTime::At(t)) => times.push(t),
            Some(StartTime::Uniform(r)) => times.extend(r),
            None => {}
        }
        times.extend(w.stop);
        for fl in w.flows.iter().flatten() {
            times.push(fl.start);
            times.extend(fl.stop);
        }
    }
    times.into_iter().filter(|t| !t.is_relative()).map(|t| t.at(d)).max().unwrap_or(d).max(d)
}
