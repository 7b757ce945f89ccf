//! Physical units: simulated time, link rates and byte sizes.
//!
//! Simulated time is an integer count of picoseconds so that event ordering is
//! exact and runs are reproducible bit for bit. Scenario files may write every
//! quantity either as a plain number in base units (seconds, bit/s, bytes) or
//! as a string with a unit suffix ("1us", "100Gbps", "10MiB").

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// Simulated time in picoseconds.
pub type Time = u64;

/// Picoseconds in one nanosecond.
pub const NS: Time = 1_000;
/// Picoseconds in one microsecond.
pub const US: Time = 1_000_000;
/// Picoseconds in one millisecond.
pub const MS: Time = 1_000_000_000;
/// Picoseconds in one second.
pub const SEC: Time = 1_000_000_000_000;

/// Converts picoseconds to seconds.
pub fn ps_to_s(t: Time) -> f64 {
    t as f64 / SEC as f64
}

/// Formats a time for people: "2ms", "1.5us", "80ps".
pub fn fmt_time(t: Time) -> String {
    let (v, unit) = match t {
        0 => return "0s".into(),
        t if t >= SEC => (t as f64 / SEC as f64, "s"),
        t if t >= MS => (t as f64 / MS as f64, "ms"),
        t if t >= US => (t as f64 / US as f64, "us"),
        t if t >= NS => (t as f64 / NS as f64, "ns"),
        t => (t as f64, "ps"),
    };
    let s = format!("{v:.6}");
    format!("{}{unit}", s.trim_end_matches('0').trim_end_matches('.'))
}

/// Serialization time of `bytes` on a link of `rate_bps`, in picoseconds (rounded up so
/// that a link never transmits faster than its rate).
pub fn ser_time(bytes: u64, rate_bps: u64) -> Time {
    let num = bytes as u128 * 8 * SEC as u128;
    num.div_ceil(rate_bps as u128) as Time
}

/// A duration read from a scenario (stored in picoseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Duration(pub Time);

/// A link rate read from a scenario (stored in bit/s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate(pub u64);

/// A byte count read from a scenario.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    // "1e" followed by a unit letter would be mis-split; units never start with a digit so
    // retry without a trailing 'e'/'E' if the number does not parse.
    let (mut num, mut unit) = (&s[..end], &s[end..]);
    if num.parse::<f64>().is_err() && (num.ends_with('e') || num.ends_with('E')) {
        num = &s[..end - 1];
        unit = &s[end - 1..];
    }
    num.parse::<f64>().ok().map(|v| (v, unit.trim()))
}

/// Parses a time such as "1.5us", "10 ms", "2s", "500ns", "80ps" into picoseconds.
pub fn parse_time(s: &str) -> Result<Time, String> {
    let (v, unit) = split_number(s).ok_or_else(|| "expected a number with a unit (ps, ns, us, ms, s)".to_string())?;
    let scale = match unit {
        "ps" => 1.0,
        "ns" => NS as f64,
        "us" | "µs" => US as f64,
        "ms" => MS as f64,
        "s" | "" => SEC as f64,
        _ => return Err(format!("unknown time unit `{unit}` (use ps, ns, us, ms or s)")),
    };
    to_ps(v * scale)
}

fn to_ps(ps: f64) -> Result<Time, String> {
    if !ps.is_finite() {
        return Err("must be a finite number".into());
    }
    if ps < 0.0 {
        return Err("must not be negative".into());
    }
    if ps > 1.0e19 {
        return Err("is too large (more than 10^7 seconds)".into());
    }
    Ok(ps.round() as Time)
}

/// Parses a rate such as "100Gbps", "40 Mbps", "1e9" (bit/s) into bit/s.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (v, unit) =
        split_number(s).ok_or_else(|| "expected a number with a unit (bps, Kbps, Mbps, Gbps, Tbps)".to_string())?;
    if unit.contains('B') {
        return Err(format!("`{unit}` is bytes per second; write rates in bits (bps, Mbps, Gbps)"));
    }
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "bps" | "b/s" => 1.0,
        "kbps" | "kb/s" | "k" => 1e3,
        "mbps" | "mb/s" | "m" => 1e6,
        "gbps" | "gb/s" | "g" => 1e9,
        "tbps" | "tb/s" | "t" => 1e12,
        _ => return Err(format!("unknown rate unit `{unit}` (use bps, Kbps, Mbps, Gbps or Tbps)")),
    };
    positive_u64(v * scale, "rate")
}

/// Parses a size such as "10MiB", "150KiB", "1KB", "1500" into bytes.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (v, unit) =
        split_number(s).ok_or_else(|| "expected a number with a unit (B, KB, KiB, MB, MiB, GB, GiB)".to_string())?;
    let scale = match unit {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("unknown size unit `{unit}` (use B, KB, KiB, MB, MiB, GB or GiB)")),
    };
    let b = v * scale;
    if !b.is_finite() || b < 0.0 {
        return Err("must be a non-negative size".into());
    }
    if b > 1.0e15 {
        return Err("is too large (over a petabyte)".into());
    }
    Ok(b.round() as u64)
}

fn positive_u64(v: f64, what: &str) -> Result<u64, String> {
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("{what} must be positive"));
    }
    if v > 1.0e16 {
        return Err(format!("{what} is too large"));
    }
    Ok(v.round().max(1.0) as u64)
}

macro_rules! unit_deserialize {
    ($ty:ident, $expect:literal, $from_str:expr, $from_f64:expr) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($expect)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$ty, E> {
                        let conv: fn(&str) -> Result<u64, String> = $from_str;
                        conv(s).map($ty).map_err(|m| E::custom(format!("value \"{s}\": {m}")))
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$ty, E> {
                        let conv: fn(f64) -> Result<u64, String> = $from_f64;
                        conv(v).map($ty).map_err(|m| E::custom(format!("value {v}: {m}")))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$ty, E> {
                        self.visit_f64(v as f64)
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$ty, E> {
                        self.visit_f64(v as f64)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

unit_deserialize!(Duration, "a time: seconds as a number, or a string such as \"10us\"", parse_time, |v| to_ps(
    v * SEC as f64
));
unit_deserialize!(Rate, "a rate: bit/s as a number, or a string such as \"100Gbps\"", parse_rate, |v| {
    positive_u64(v, "rate")
});
unit_deserialize!(Bytes, "a size: bytes as a number, or a string such as \"64KiB\"", parse_bytes, |v| {
    if !v.is_finite() || v < 0.0 {
        Err("must be a non-negative size".to_string())
    } else if v > 1.0e15 {
        // As for a size given as a string; a larger number would saturate silently.
        Err("is too large (over a petabyte)".to_string())
    } else {
        Ok(v.round() as u64)
    }
});

/// A point in time of the run as a scenario writes it: from the start of the
/// run ("170ms", or seconds as a number), or relative to the run's
/// `duration` ("85%" of it, "end"), which moves along when `duration`
/// changes. Used by the metrics window and the workloads' start and stop
/// times, so that shortening a run is one setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RunTime {
    /// This long after the start of the run (picoseconds).
    At(Time),
    /// This percentage of the run's duration, from 0 to 100 ("end" is 100).
    OfRun(f64),
}

impl RunTime {
    /// The time from the start of a run of `duration`, in picoseconds.
    pub fn at(self, duration: Time) -> Time {
        match self {
            RunTime::At(t) => t,
            // Whole percentages of a duration in whole microseconds are exact: the
            // product stays far below 2^53 before the division.
            RunTime::OfRun(pct) => (duration as f64 * pct / 100.0).round() as Time,
        }
    }

    /// Whether this time is written relative to the run's duration.
    pub fn is_relative(self) -> bool {
        matches!(self, RunTime::OfRun(_))
    }
}

impl Default for RunTime {
    fn default() -> Self {
        RunTime::At(0)
    }
}

impl fmt::Display for RunTime {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match *self {
            RunTime::At(t) => f.write_str(&fmt_time(t)),
            RunTime::OfRun(100.0) => f.write_str("end"),
            RunTime::OfRun(pct) => write!(f, "{pct}%"),
        }
    }
}

/// Parses a time of the run: "end", a percentage of the run ("85%") or a time
/// from its start ("170ms", see [`parse_time`]).
pub fn parse_run_time(s: &str) -> Result<RunTime, String> {
    let t = s.trim();
    if t == "end" {
        return Ok(RunTime::OfRun(100.0));
    }
    let Some(num) = t.strip_suffix('%') else {
        return parse_time(t).map(RunTime::At).map_err(|m| {
            format!("{m}; or a time relative to the run: a percentage of its duration (\"85%\") or \"end\"")
        });
    };
    match num.trim().parse::<f64>() {
        Ok(pct) if (0.0..=100.0).contains(&pct) => Ok(RunTime::OfRun(pct)),
        Ok(_) => Err("a percentage of the run must be from 0% to 100% (\"end\")".into()),
        Err(_) => Err("expected a percentage of the run's duration such as \"85%\"".into()),
    }
}

impl<'de> Deserialize<'de> for RunTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RunTime;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a time of the run: seconds as a number, a string such as \"10us\", \"85%\" or \"end\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RunTime, E> {
                parse_run_time(s).map_err(|m| E::custom(format!("value \"{s}\": {m}")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RunTime, E> {
                to_ps(v * SEC as f64).map(RunTime::At).map_err(|m| E::custom(format!("value {v}: {m}")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RunTime, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RunTime, E> {
                self.visit_f64(v as f64)
            }
        }
        d.deserialize_any(V)
    }
}

// Scenario values serialise the way a user would write them, so that exported
// defaults (`ccgym._sim.agent_defaults()`) read like a scenario.
impl serde::Serialize for Duration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&fmt_time(self.0))
    }
}

impl serde::Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

// Bits per second, a number a scenario accepts as a rate.
impl serde::Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_time("1us").unwrap(), US);
        assert_eq!(parse_time("2.5 ms").unwrap(), 2_500_000_000);
        assert_eq!(parse_time("0").unwrap(), 0);
        assert_eq!(parse_rate("100Gbps").unwrap(), 100_000_000_000);
        assert_eq!(parse_rate("40Mbps").unwrap(), 40_000_000);
        assert_eq!(parse_bytes("10MiB").unwrap(), 10 * 1024 * 1024);
        assert_eq!(parse_bytes("1e3").unwrap(), 1000);
        assert!(parse_rate("-5Gbps").is_err());
        assert!(parse_time("5 parsecs").is_err());
        assert!(parse_time("-1us").is_err());
        assert!(parse_rate("100MBps").unwrap_err().contains("bytes per second"));
        assert_eq!(fmt_time(2 * MS), "2ms");
        assert_eq!(fmt_time(1_500_000), "1.5us");
    }

    #[test]
    fn run_times_follow_the_duration() {
        let d = 200 * MS;
        assert_eq!(parse_run_time("170ms").unwrap().at(d), 170 * MS);
        assert_eq!(parse_run_time("85%").unwrap().at(d), 170 * MS);
        assert_eq!(parse_run_time("25%").unwrap().at(d), 50 * MS);
        assert_eq!(parse_run_time("85%").unwrap().at(20 * MS), 17 * MS);
        assert_eq!(parse_run_time("end").unwrap().at(d), d);
        assert_eq!(parse_run_time(" 0% ").unwrap().at(d), 0);
        assert!(!parse_run_time("1ms").unwrap().is_relative());
        assert!(parse_run_time("end").unwrap().is_relative());
        assert!(parse_run_time("101%").unwrap_err().contains("from 0% to 100%"));
        assert!(parse_run_time("-5%").is_err());
        assert!(parse_run_time("x%").is_err());
        assert!(parse_run_time("5 parsecs").unwrap_err().contains("\"end\""));
        assert_eq!(parse_run_time("85%").unwrap().to_string(), "85%");
        assert_eq!(parse_run_time("end").unwrap().to_string(), "end");
        assert_eq!(parse_run_time("1500us").unwrap().to_string(), "1.5ms");
    }

    #[test]
    fn serialization_time_is_exact_at_100g() {
        assert_eq!(ser_time(1000, 100_000_000_000), 80_000);
        assert_eq!(ser_time(1, 3), 2_666_666_666_667);
    }
}
