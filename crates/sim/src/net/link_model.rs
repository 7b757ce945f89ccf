//! Links that change: a rate that follows a schedule, trace-driven delivery
//! opportunities (mahimahi), Bernoulli random loss and a token-bucket policer.
//!
//! These are the elements QTCP's varying-bandwidth experiments and MVFST-RL's
//! emulated links need. Each is a small value a port owns, called once per
//! packet, with integer-picosecond time and no allocation.
//!
//! * [`RateSchedule`]: piecewise-constant rate steps. A packet that straddles a
//!   step is charged by integrating across it: its bits before the step go at
//!   the old rate, the rest at the new one, in exact integer arithmetic. The
//!   end is rounded up to the picosecond, like [`ser_time`](crate::units::ser_time),
//!   which it equals when no step intervenes.
//! * [`DeliveryTrace`] and [`TraceLink`]: mahimahi's link shell (`mm-link`). A
//!   trace is a list of millisecond timestamps, one per line, non-decreasing,
//!   its last one positive; each is a delivery opportunity for
//!   [`MAHIMAHI_OPPORTUNITY`] bytes, and the list repeats with a period equal
//!   to its last timestamp (so "0, 5" gives opportunities at 0, 5, 5, 10, 10,
//!   15 ms ...). Accounting is by bytes: several small packets share one
//!   opportunity and a large one spans several; a packet leaves at the
//!   opportunity that carries its last byte. Bytes of an opportunity that no
//!   queued packet can use at that instant are lost, and opportunities at or
//!   before the instant a packet joins the queue are spent before it arrives
//!   (mahimahi serves due opportunities before it enqueues an arrival), so a
//!   packet never uses an opportunity at its own arrival time; nor one before
//!   the port started to send it (a paused port loses its opportunities). The
//!   trace is the transmitter: there is no separate serialisation time.
//! * [`RandomLoss`]: each packet is lost with a fixed probability, drawn from
//!   the simulation's one seeded generator; probability 0 draws nothing, so a
//!   link without loss leaves every other random draw of a run unchanged.
//! * [`TokenBucket`]: a policer of `rate` and `burst` bytes. Tokens are kept
//!   in bit-picoseconds (a byte is 8 x 10^12 units; each picosecond adds
//!   `rate` units), so refilling is exact at any event spacing and never
//!   drifts. A packet that finds too few tokens is dropped (not delayed); the
//!   bucket starts full.
//!
//! # Wiring
//!
//! A port gets `model: Option<Box<LinkModel>>` (boxed: most ports have none,
//! and the port stays small). `None` takes today's path untouched, so results
//! of existing scenarios and their random draws do not change.
//!
//! * `transmit`: when the model has [`LinkModel::timing`], the serialisation
//!   end is [`LinkTiming::transmit_end`]`(now, queued_at, size)` instead of
//!   `now + ser_time(size, rate)`; `busy_until` and the wire arrival follow from
//!   it as today (arrival = end + delay). `queued_at` is the packet's
//!   `enq_time` at a switch port; a host NIC passes `now`, or any earlier time
//!   (say the previous packet's start) when it had the packet ready while the
//!   previous one was being sent. The port's `rate_bps`
//!   (reported in INT records) is refreshed from [`RateSchedule::rate_at`] by
//!   a `LinkRate` event at each [`RateSchedule::next_change`] (a trace port
//!   reports [`TraceLink::mean_rate_bps`]); `ps_per_byte` is 0 on such a port.
//! * `on_arrive`, before the receiving node sees the packet:
//!   [`LinkModel::filter`]`(now, size, &mut rng)` returns why the link lost
//!   it, if it did; the port counts the drop (a new per-port `link_drops`) and
//!   frees the packet. PFC frames skip the filter: they are link-local and
//!   their loss would model a broken switch, not a lossy path.
//! * Run-time control: `set_link_rate(port, rate)` calls
//!   [`RateSchedule::set_rate_from`]`(now, rate)` (a port without a schedule
//!   gets one starting from its fixed rate); a packet already on the wire keeps
//!   its end.
//!
//! The scenario fields that configure these are in
//! [`link_config`](crate::net::link_config).

use crate::units::{Time, MS, SEC};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fmt;
use std::sync::Arc;

/// Bytes one mahimahi delivery opportunity carries, as its manual defines it
/// (an MTU-sized packet; its code allows up to 1504, the largest TUN payload).
pub const MAHIMAHI_OPPORTUNITY: u32 = 1_500;

/// Bit-picoseconds per byte: the unit of [`RateSchedule`] and [`TokenBucket`] sums.
const BYTE: u128 = 8 * SEC as u128;

/// Why a rate schedule is invalid: which step and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleError {
    /// Index of the offending step.
    pub step: usize,
    /// What is wrong.
    pub message: String,
}

/// A piecewise-constant link rate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateSchedule {
    /// (start time, rate in bit/s), strictly increasing in time, the first at 0.
    steps: Vec<(Time, u64)>,
}

impl RateSchedule {
    /// A rate of `initial_bps` from time 0, changed to `rate` at each `(time,
    /// rate)` of `steps` (strictly increasing times; a step at 0 replaces the
    /// initial rate).
    pub fn new(initial_bps: u64, steps: &[(Time, u64)]) -> Result<RateSchedule, ScheduleError> {
        if steps.is_empty() {
            return Err(ScheduleError { step: 0, message: "a schedule needs at least one step".into() });
        }
        let mut all = Vec::with_capacity(steps.len() + 1);
        if steps[0].0 > 0 {
            if initial_bps == 0 {
                return Err(ScheduleError { step: 0, message: "the link's rate before the first step is 0".into() });
            }
            all.push((0, initial_bps));
        }
        for (i, &(t, rate)) in steps.iter().enumerate() {
            if rate == 0 {
                return Err(ScheduleError { step: i, message: "rate must be positive".into() });
            }
            if i > 0 && t <= steps[i - 1].0 {
                return Err(ScheduleError { step: i, message: "step times must be strictly increasing".into() });
            }
            all.push((t, rate));
        }
        Ok(RateSchedule { steps: all })
    }

    /// The steps, (start time, bit/s), the first at time 0.
    pub fn steps(&self) -> &[(Time, u64)] {
        &self.steps
    }

    #[inline]
    fn step_at(&self, t: Time) -> usize {
        // steps[0] starts at 0, so at least one step starts at or before t.
        self.steps.partition_point(|&(start, _)| start <= t) - 1
    }

    /// Rate in bit/s at time `t`.
    #[inline]
    pub fn rate_at(&self, t: Time) -> u64 {
        self.steps[self.step_at(t)].1
    }

    /// The first rate change after time `t`, if any.
    pub fn next_change(&self, t: Time) -> Option<Time> {
        self.steps.get(self.step_at(t) + 1).map(|s| s.0)
    }

    /// When the last bit of `bytes` bytes that start at `start` leaves,
    /// integrating the rate across any steps the packet straddles.
    #[inline]
    pub fn transmit_end(&self, start: Time, bytes: u64) -> Time {
        let mut i = self.step_at(start);
        let mut t = start;
        let mut need = bytes as u128 * BYTE;
        loop {
            let rate = self.steps[i].1 as u128;
            if let Some(&(next, _)) = self.steps.get(i + 1) {
                let room = rate * (next - t) as u128;
                if need > room {
                    need -= room;
                    t = next;
                    i += 1;
                    continue;
                }
            }
            return t + need.div_ceil(rate) as Time;
        }
    }

    /// Bits the link can carry in `[a, b)` under this schedule.
    pub fn bits_between(&self, a: Time, b: Time) -> f64 {
        if b <= a {
            return 0.0;
        }
        let mut bits = 0.0;
        for (i, &(start, rate)) in self.steps.iter().enumerate().skip(self.step_at(a)) {
            if start >= b {
                break;
            }
            let end = self.steps.get(i + 1).map_or(b, |s| s.0.min(b));
            bits += rate as f64 * (end - start.max(a)) as f64 / crate::units::SEC as f64;
        }
        bits
    }

    /// Sets the rate to `rate_bps` from time `t` on, forgetting later steps
    /// (run-time control). Returns an error for a zero rate.
    pub fn set_rate_from(&mut self, t: Time, rate_bps: u64) -> Result<(), String> {
        if rate_bps == 0 {
            return Err("rate must be positive".into());
        }
        let keep = self.steps.partition_point(|&(start, _)| start < t).max(1);
        self.steps.truncate(keep);
        if self.steps[0].0 == t {
            self.steps[0].1 = rate_bps;
        } else {
            self.steps.push((t, rate_bps));
        }
        Ok(())
    }
}

/// A mahimahi trace that cannot be used: which line and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// Line number, from 1 (0 for the trace as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

/// A mahimahi delivery trace: opportunity times within one period.
/// Cloning shares the times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryTrace {
    /// Opportunity times in picoseconds, non-decreasing, the last one the period.
    times: Arc<[Time]>,
}

impl DeliveryTrace {
    /// Reads a trace file's text: one integer millisecond timestamp per line.
    pub fn parse(text: &str) -> Result<DeliveryTrace, TraceError> {
        let mut ms = Vec::new();
        let lines: Vec<&str> = text.lines().collect();
        // A blank last line is an editor's trailing newline, not a timestamp.
        let n = lines.iter().rposition(|l| !l.trim().is_empty()).map_or(0, |i| i + 1);
        for (i, line) in lines[..n].iter().enumerate() {
            let s = line.trim();
            let err = |message: String| TraceError { line: i + 1, message };
            if s.is_empty() {
                return Err(err("empty line (each line is one delivery time in ms)".into()));
            }
            let v: u64 = s.parse().map_err(|_| err(format!("`{s}` is not a whole number of milliseconds")))?;
            ms.push(v);
        }
        DeliveryTrace::from_ms(&ms)
    }

    /// A trace from its millisecond timestamps.
    pub fn from_ms(ms: &[u64]) -> Result<DeliveryTrace, TraceError> {
        let Some(&last) = ms.last() else {
            return Err(TraceError { line: 0, message: "the trace has no delivery times".into() });
        };
        if let Some(i) = ms.windows(2).position(|w| w[1] < w[0]) {
            return Err(TraceError {
                line: i + 2,
                message: format!("{} ms comes after {} ms; times must not decrease", ms[i + 1], ms[i]),
            });
        }
        if last == 0 {
            return Err(TraceError {
                line: ms.len(),
                message: "the last time is 0; it is the trace's period and must be positive".into(),
            });
        }
        if last > Time::MAX / MS / 1_000 {
            return Err(TraceError { line: ms.len(), message: format!("{last} ms is too long a trace") });
        }
        Ok(DeliveryTrace { times: ms.iter().map(|&t| t * MS).collect() })
    }

    /// Length of one repetition (the last timestamp).
    pub fn period(&self) -> Time {
        *self.times.last().expect("a trace is never empty")
    }

    /// Delivery opportunities per period.
    pub fn opportunities(&self) -> usize {
        self.times.len()
    }

    /// Time of opportunity `k`, counted from the first one at time 0.
    #[inline]
    pub fn opportunity_time(&self, k: u64) -> Time {
        let n = self.times.len() as u64;
        self.times[(k % n) as usize] + (k / n) * self.period()
    }

    /// The first opportunity strictly after time `t`.
    #[inline]
    fn first_after(&self, t: Time) -> u64 {
        let period = self.period();
        let rep = t / period;
        let within = t - rep * period;
        // Earlier repetitions end at or before rep x period <= t.
        let i = self.times.partition_point(|&x| x <= within) as u64;
        rep * self.times.len() as u64 + i
    }
}

/// How a generated trace places its delivery opportunities (see
/// [`DeliveryTrace::generate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceProcess {
    /// Spread as evenly as whole milliseconds allow, as Pantheon's constant-rate
    /// traces (`12mbps`: one line `1`; `60mbps`: five; `100.42mbps`: 502,100
    /// lines over 60 s, 8 or 9 per millisecond).
    Even,
    /// A Poisson process (exponential gaps) with its times rounded down to the
    /// millisecond, so several opportunities may share one, as Pantheon's
    /// calibrated cellular traces (`0.57mbps-poisson` ...).
    Poisson,
}

impl DeliveryTrace {
    /// A trace of `period_ms` milliseconds whose opportunities of
    /// `opportunity_bytes` bytes carry `rate_bps` on average.
    ///
    /// * [`TraceProcess::Even`]: `n = round(rate x period / opportunity)`
    ///   opportunities, the `k`-th (from 1) at `ceil(k x period / n)` ms, so the
    ///   last one is the period and every millisecond holds the floor or the
    ///   ceiling of the mean count (12 Mb/s over 1 ms is one line `1`, 60 Mb/s
    ///   five). `seed` is not used.
    /// * [`TraceProcess::Poisson`]: exponential gaps of mean
    ///   `opportunity x 8 / rate` drawn from a generator seeded with `seed`,
    ///   cumulated in continuous time and each rounded down to the millisecond;
    ///   opportunities at or after `period_ms` are left out, so the period is
    ///   the last one kept. The same arguments give the same trace.
    ///
    /// Errors: a zero rate or period, or a rate too low to place one
    /// opportunity after time 0 within the period.
    pub fn generate(
        process: TraceProcess,
        rate_bps: u64,
        opportunity_bytes: u32,
        period_ms: u64,
        seed: u64,
    ) -> Result<DeliveryTrace, TraceError> {
        if rate_bps == 0 || period_ms == 0 || opportunity_bytes == 0 {
            return Err(TraceError { line: 0, message: "rate, period and opportunity size must be positive".into() });
        }
        // Opportunities per millisecond.
        let per_ms = rate_bps as f64 / (opportunity_bytes as f64 * 8.0 * 1_000.0);
        let ms: Vec<u64> = match process {
            TraceProcess::Even => {
                let n = (per_ms * period_ms as f64).round() as u64;
                if n == 0 {
                    return Err(TraceError {
                        line: 0,
                        message: format!(
                            "{rate_bps} bit/s gives no opportunity in {period_ms} ms; lengthen the period"
                        ),
                    });
                }
                (1..=n).map(|k| (k as u128 * period_ms as u128).div_ceil(n as u128) as u64).collect()
            }
            TraceProcess::Poisson => {
                use rand::SeedableRng;
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                let mean_gap = 1.0 / per_ms;
                let mut t = 0.0f64;
                let mut ms = Vec::with_capacity((per_ms * period_ms as f64 * 1.1) as usize + 16);
                loop {
                    // 1 - u is in (0, 1], so the logarithm is finite.
                    t += -(1.0 - rng.random::<f64>()).ln() * mean_gap;
                    if t >= period_ms as f64 {
                        break;
                    }
                    ms.push(t as u64);
                }
                ms
            }
        };
        if ms.last().is_none_or(|&l| l == 0) {
            return Err(TraceError {
                line: 0,
                message: format!(
                    "{rate_bps} bit/s places no opportunity after 0 ms in {period_ms} ms; lengthen the period"
                ),
            });
        }
        DeliveryTrace::from_ms(&ms)
    }
}

/// A link direction whose transmitter is a mahimahi trace.
#[derive(Clone, Debug)]
pub struct TraceLink {
    trace: DeliveryTrace,
    opportunity_bytes: u64,
    /// The first opportunity no packet has used.
    next: u64,
    /// Unused bytes of the last used opportunity...
    carry: u64,
    /// ...which happened at this time.
    carry_time: Time,
}

impl TraceLink {
    /// A link driven by `trace`, each opportunity carrying `opportunity_bytes`
    /// (mahimahi: [`MAHIMAHI_OPPORTUNITY`]); the trace's time 0 is the
    /// simulation's.
    ///
    /// # Panics
    ///
    /// If `opportunity_bytes` is 0 (the scenario check rejects it).
    pub fn new(trace: DeliveryTrace, opportunity_bytes: u32) -> TraceLink {
        assert!(opportunity_bytes > 0, "a delivery opportunity carries at least one byte");
        TraceLink { trace, opportunity_bytes: opportunity_bytes as u64, next: 0, carry: 0, carry_time: 0 }
    }

    /// The trace.
    pub fn trace(&self) -> &DeliveryTrace {
        &self.trace
    }

    /// Mean rate the trace offers, in bit/s.
    pub fn mean_rate_bps(&self) -> u64 {
        let bits = self.trace.opportunities() as u128 * self.opportunity_bytes as u128 * 8;
        (bits * SEC as u128 / self.trace.period() as u128) as u64
    }

    /// When a packet of `bytes` bytes leaves that the port starts to send at
    /// `start`, having queued it at `queued_at`. Packets are passed in the
    /// order they leave, each started no earlier than the previous departure.
    ///
    /// The packet can use the opportunities from `start` on, but one at
    /// `start` itself only if it was already waiting (`queued_at < start`): as
    /// in mahimahi, opportunities due when a packet arrives are spent first.
    /// Likewise it may use the bytes the previous packet left of the last
    /// opportunity if it was waiting when that opportunity came.
    pub fn depart(&mut self, start: Time, queued_at: Time, bytes: u32) -> Time {
        let waited = queued_at < start;
        let mut left = (bytes as u64).max(1);
        if self.carry > 0 && self.carry_time >= start && queued_at < self.carry_time {
            let used = left.min(self.carry);
            self.carry -= used;
            left -= used;
            if left == 0 {
                return self.carry_time;
            }
        }
        let eligible = if waited { self.trace.first_after(start - 1) } else { self.trace.first_after(start) };
        let first = self.next.max(eligible);
        let spent = left.div_ceil(self.opportunity_bytes);
        let last = first + spent - 1;
        self.next = last + 1;
        self.carry = spent * self.opportunity_bytes - left;
        self.carry_time = self.trace.opportunity_time(last);
        self.carry_time
    }
}

/// Bernoulli loss: each packet is lost with probability `p`, independently.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomLoss {
    p: f64,
}

impl RandomLoss {
    /// Loss with probability `p`, from 0 to 1.
    pub fn new(p: f64) -> Result<RandomLoss, String> {
        if !(0.0..=1.0).contains(&p) {
            return Err("a loss probability must be a number from 0 to 1".into());
        }
        Ok(RandomLoss { p })
    }

    /// The loss probability.
    pub fn probability(&self) -> f64 {
        self.p
    }

    /// Draws whether the next packet is lost. Probabilities 0 and 1 draw
    /// nothing from `rng`.
    #[inline]
    pub fn drops(&self, rng: &mut Xoshiro256PlusPlus) -> bool {
        self.p >= 1.0 || (self.p > 0.0 && rng.random::<f64>() < self.p)
    }
}

/// A token-bucket policer: packets beyond `rate` with bursts over `burst`
/// bytes are dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    rate_bps: u64,
    /// Bucket depth in bit-picoseconds.
    depth: u128,
    /// Tokens in bit-picoseconds at `last`.
    tokens: u128,
    last: Time,
}

impl TokenBucket {
    /// A full bucket of `burst_bytes`, refilled at `rate_bps`.
    pub fn new(rate_bps: u64, burst_bytes: u64) -> Result<TokenBucket, String> {
        if rate_bps == 0 {
            return Err("a policer's rate must be positive".into());
        }
        if burst_bytes == 0 {
            return Err("a policer's burst must be positive".into());
        }
        let depth = burst_bytes as u128 * BYTE;
        Ok(TokenBucket { rate_bps, depth, tokens: depth, last: 0 })
    }

    /// The refill rate in bit/s.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Whole bytes of tokens at time `now` (without taking any).
    pub fn tokens_at(&self, now: Time) -> u64 {
        (self.refilled(now) / BYTE) as u64
    }

    #[inline]
    fn refilled(&self, now: Time) -> u128 {
        let dt = now.saturating_sub(self.last) as u128;
        (self.tokens + dt * self.rate_bps as u128).min(self.depth)
    }

    /// Whether a packet of `bytes` bytes at time `now` conforms; if it does,
    /// its tokens are taken. Calls must not go back in time.
    #[inline]
    pub fn admit(&mut self, now: Time, bytes: u64) -> bool {
        self.tokens = self.refilled(now);
        self.last = self.last.max(now);
        let need = bytes as u128 * BYTE;
        if self.tokens < need {
            return false;
        }
        self.tokens -= need;
        true
    }
}

/// How a link times its transmissions when its rate is not fixed.
#[derive(Clone, Debug)]
pub enum LinkTiming {
    /// Piecewise-constant rate.
    Schedule(RateSchedule),
    /// mahimahi delivery opportunities.
    Trace(TraceLink),
}

impl LinkTiming {
    /// When the transmission of `bytes` bytes that starts at `start` ends;
    /// `queued_at` is when the packet joined the port's queue (a trace needs
    /// it, see [`TraceLink::depart`]).
    #[inline]
    pub fn transmit_end(&mut self, start: Time, queued_at: Time, bytes: u32) -> Time {
        match self {
            LinkTiming::Schedule(s) => s.transmit_end(start, bytes as u64),
            LinkTiming::Trace(t) => t.depart(start, queued_at, bytes),
        }
    }
}

/// Why a link lost a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkDrop {
    /// Random loss.
    Loss,
    /// The policer found too few tokens.
    Policed,
}

/// Everything that makes one link direction differ from a fixed-rate,
/// lossless wire.
#[derive(Clone, Debug, Default)]
pub struct LinkModel {
    /// Rate schedule or trace; `None` keeps the port's fixed rate.
    pub timing: Option<LinkTiming>,
    /// Random loss on the wire.
    pub loss: Option<RandomLoss>,
    /// Policer at the far end of the wire.
    pub policer: Option<TokenBucket>,
}

impl LinkModel {
    /// Whether the link loses a packet of `bytes` bytes arriving at `now`:
    /// first the wire's random loss, then the policer, whose tokens only
    /// packets that survived the wire take.
    #[inline]
    pub fn filter(&mut self, now: Time, bytes: u64, rng: &mut Xoshiro256PlusPlus) -> Option<LinkDrop> {
        if let Some(loss) = &self.loss {
            if loss.drops(rng) {
                return Some(LinkDrop::Loss);
            }
        }
        if let Some(policer) = &mut self.policer {
            if !policer.admit(now, bytes) {
                return Some(LinkDrop::Policed);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{ser_time, US};
    use rand::SeedableRng;

    const G: u64 = 1_000_000_000;

    #[test]
    fn rate_change_mid_run_changes_delivery_rate_at_its_instant() {
        // 8 Gb/s is one byte per ns: a 1,000-byte packet takes 1 us. At 10 us the
        // rate halves.
        let s = RateSchedule::new(8 * G, &[(10 * US, 4 * G)]).unwrap();
        // Back to back from 0: ends at 1, 2, ..., 10 us, then every 2 us.
        let mut t = 0;
        let mut ends = vec![];
        for _ in 0..13 {
            t = s.transmit_end(t, 1_000);
            ends.push(t / US);
        }
        assert_eq!(ends, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16]);
        // A packet ending exactly at the change is charged the old rate only.
        assert_eq!(s.transmit_end(9 * US, 1_000), 10 * US);
        // One that straddles it: 500 bytes at 8 Gb/s by 10 us, 500 at 4 Gb/s -> 11 us.
        assert_eq!(s.transmit_end(9 * US + US / 2, 1_000), 11 * US);
        // Starting 1 ps later leaves 1 ps worth of 8 Gb/s for after the change,
        // which takes 2 ps at 4 Gb/s.
        assert_eq!(s.transmit_end(9 * US + 1, 1_000), 10 * US + 2);
        assert_eq!(s.rate_at(10 * US - 1), 8 * G);
        assert_eq!(s.rate_at(10 * US), 4 * G);
        assert_eq!(s.next_change(0), Some(10 * US));
        assert_eq!(s.next_change(10 * US), None);
    }

    #[test]
    fn capacity_is_integrated_across_steps() {
        // 10 Gb/s, then 1 Gb/s from 1 us, then 4 Gb/s from 3 us.
        let s = RateSchedule::new(10_000_000_000, &[(US, 1_000_000_000), (3 * US, 4_000_000_000)]).unwrap();
        assert_eq!(s.bits_between(0, US), 10_000.0);
        assert_eq!(s.bits_between(US / 2, 2 * US), 5_000.0 + 1_000.0);
        assert_eq!(s.bits_between(0, 5 * US), 10_000.0 + 2_000.0 + 8_000.0);
        assert_eq!(s.bits_between(4 * US, 4 * US), 0.0);
    }

    #[test]
    fn a_packet_straddling_several_steps_is_integrated_across_them() {
        // 1 Gb/s, then 10 Gb/s for 1 us, then 2 Gb/s.
        let s = RateSchedule::new(G, &[(US, 10 * G), (2 * US, 2 * G)]).unwrap();
        // From 0.5 us: 62.5 B by 1 us, 1,250 B by 2 us, the last 187.5 B at 2 Gb/s take 750 ns.
        assert_eq!(s.transmit_end(US / 2, 1_500), 2 * US + 750_000);
        // Without steps the schedule is exactly ser_time.
        let flat = RateSchedule::new(7 * G, &[(0, 3 * G)]).unwrap();
        for b in [1, 64, 1_000, 1_500, 9_000] {
            assert_eq!(flat.transmit_end(12_345, b), 12_345 + ser_time(b, 3 * G));
        }
    }

    #[test]
    fn schedules_are_checked_and_can_be_reset_at_run_time() {
        assert_eq!(RateSchedule::new(G, &[]).unwrap_err().step, 0);
        assert_eq!(RateSchedule::new(G, &[(5, G), (5, 2 * G)]).unwrap_err().step, 1);
        assert_eq!(RateSchedule::new(G, &[(5, G), (9, 0)]).unwrap_err().step, 1);
        assert_eq!(RateSchedule::new(0, &[(5, G)]).unwrap_err().step, 0);
        let mut s = RateSchedule::new(G, &[(10 * US, 2 * G), (20 * US, 3 * G)]).unwrap();
        s.set_rate_from(15 * US, 5 * G).unwrap();
        assert_eq!(s.steps(), [(0, G), (10 * US, 2 * G), (15 * US, 5 * G)]);
        s.set_rate_from(0, 4 * G).unwrap();
        assert_eq!(s.steps(), [(0, 4 * G)]);
        assert!(s.set_rate_from(3, 0).is_err());
    }

    /// Departures of packets (queued at, size) from a FIFO port served by `link`:
    /// each starts when it is queued or when the previous one left.
    fn departures(link: &mut TraceLink, pkts: &[(Time, u32)]) -> Vec<Time> {
        let mut free_at = 0;
        pkts.iter()
            .map(|&(at, size)| {
                free_at = link.depart(at.max(free_at), at, size);
                free_at
            })
            .collect()
    }

    #[test]
    fn trace_departures_match_mahimahi() {
        // Opportunities at 2, 2, 5 ms, repeating every 5 ms: 2, 2, 5, 7, 7, 10, ...
        let trace = DeliveryTrace::parse("2\n2\n5\n").unwrap();
        assert_eq!(trace.period(), 5 * MS);
        let ms = |v: &[Time]| v.iter().map(|t| t / MS).collect::<Vec<_>>();

        // Full packets queued at 0 take one opportunity each.
        let mut l = TraceLink::new(trace.clone(), 1_500);
        assert_eq!(ms(&departures(&mut l, &[(0, 1_500); 5])), [2, 2, 5, 7, 7]);

        // Byte accounting: three 1,000 B packets fit the two 2 ms opportunities
        // (the second spans them); the fourth waits for 5 ms.
        let mut l = TraceLink::new(trace.clone(), 1_500);
        assert_eq!(ms(&departures(&mut l, &[(0, 1_000); 4])), [2, 2, 2, 5]);

        // A packet queued after an opportunity cannot use its leftover bytes,
        // and one queued exactly at an opportunity's instant cannot use it.
        let mut l = TraceLink::new(trace.clone(), 1_500);
        assert_eq!(ms(&departures(&mut l, &[(0, 1_000), (3 * MS, 400), (5 * MS, 100), (7 * MS, 100)])), [2, 5, 7, 10]);

        // After a long idle time the right repetition is found: 101.5 ms -> 102 ms.
        let mut l = TraceLink::new(trace.clone(), 1_500);
        assert_eq!(departures(&mut l, &[(101 * MS + MS / 2, 1_500)]), [102 * MS]);

        // A packet larger than an opportunity spans several: 4,000 B from 0 uses 2, 2 and 5 ms;
        // the next 500 B, queued before 5 ms, takes the 500 B left of the 5 ms one.
        let mut l = TraceLink::new(trace.clone(), 1_500);
        assert_eq!(ms(&departures(&mut l, &[(0, 4_000), (MS, 500), (MS, 1)])), [5, 5, 7]);

        // A trace starting at 0 repeats its last and first opportunities together:
        // "0, 5" gives 0, 5, 5, 10, 10; a packet at 0 cannot use the one at 0.
        let mut l = TraceLink::new(DeliveryTrace::parse("0\n5").unwrap(), 1_500);
        assert_eq!(ms(&departures(&mut l, &[(0, 1_500); 4])), [5, 5, 10, 10]);

        // A packet queued at 0 that the port only starts at 3 ms (paused, say)
        // cannot go back to the 2 ms opportunities.
        let mut l = TraceLink::new(trace.clone(), 1_500);
        assert_eq!(l.depart(3 * MS, 0, 1_500), 5 * MS);
        // A packet waiting when the port starts it may use an opportunity at that instant.
        let mut t = LinkTiming::Trace(TraceLink::new(trace, 1_500));
        assert_eq!(t.transmit_end(0, 0, 1_500), 2 * MS);
        assert_eq!(t.transmit_end(2 * MS, 0, 1_500), 2 * MS);
        assert_eq!(t.transmit_end(2 * MS, 2 * MS, 1_500), 5 * MS);
    }

    #[test]
    fn trace_mean_rate() {
        // 12 opportunities of 1,500 B per 12 ms: 12 Mb/s.
        let l = TraceLink::new(DeliveryTrace::from_ms(&(1..=12).collect::<Vec<_>>()).unwrap(), 1_500);
        assert_eq!(l.mean_rate_bps(), 12_000_000);
    }

    #[test]
    fn trace_parse_errors_name_the_line() {
        let e = |t: &str| DeliveryTrace::parse(t).unwrap_err();
        assert_eq!(e(""), TraceError { line: 0, message: "the trace has no delivery times".into() });
        assert_eq!(e("1\n\n3").line, 2);
        assert_eq!(e("1\n2.5\n3").line, 2);
        assert!(e("1\nfoo").message.contains("`foo`"));
        assert_eq!(e("1\n4\n3").line, 3);
        assert!(e("1\n4\n3").to_string().starts_with("line 3: 3 ms comes after 4 ms"));
        assert_eq!(e("0\n0").line, 2);
        assert_eq!(e("-1").line, 1);
        // Surrounding spaces, CRLF line ends and a final newline are fine.
        assert_eq!(DeliveryTrace::parse(" 1\r\n2 \r\n").unwrap().opportunities(), 2);
    }

    #[test]
    fn random_loss_rate_is_within_its_statistical_band() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let loss = RandomLoss::new(0.01).unwrap();
        let n = 1_000_000;
        let lost = (0..n).filter(|_| loss.drops(&mut rng)).count() as f64;
        // Binomial: mean 10,000, standard deviation 99.5; allow 4 of them.
        assert!((lost - 10_000.0).abs() < 400.0, "{lost} lost");
        // No loss draws nothing: the generator's stream is untouched.
        let mut a = Xoshiro256PlusPlus::seed_from_u64(9);
        let b = a.clone();
        assert!(!(0..100).any(|_| RandomLoss::new(0.0).unwrap().drops(&mut a)));
        assert!((0..100).all(|_| RandomLoss::new(1.0).unwrap().drops(&mut a)));
        assert_eq!(a, b);
        assert!(RandomLoss::new(-0.1).is_err());
        assert!(RandomLoss::new(1.5).is_err());
        assert!(RandomLoss::new(f64::NAN).is_err());
    }

    #[test]
    fn policer_passes_its_burst_then_its_rate() {
        // 1 Gb/s refills 1,500 B every 12 us; the bucket holds ten such packets.
        let mut p = TokenBucket::new(G, 15_000).unwrap();
        let passed = (0..11).filter(|_| p.admit(0, 1_500)).count();
        assert_eq!(passed, 10);
        assert!(!p.admit(12 * US - 1, 1_500));
        assert!(p.admit(12 * US, 1_500));
        assert_eq!(p.tokens_at(12 * US), 0);
        // Idle for a long time: the bucket is full again, never fuller.
        assert_eq!(p.tokens_at(SEC), 15_000);
    }

    #[test]
    fn policer_caps_long_run_throughput_at_its_rate() {
        // Offer 1,000 B packets at 10 Gb/s (every 800 ns) plus an odd 7 ps jitter,
        // for 100 ms, to a 1 Gb/s policer with a 64 KiB burst.
        let (rate, burst) = (G, 64 * 1_024);
        let mut p = TokenBucket::new(rate, burst).unwrap();
        let run = 100 * MS;
        let (mut t, mut i, mut passed) = (0, 0u64, 0u64);
        while t < run {
            if p.admit(t, 1_000) {
                passed += 1_000;
            }
            i += 1;
            t = i * 800_000 + (i % 3) * 7;
        }
        // At most burst + rate x time, and within one packet of it: no drift.
        let cap = burst + rate / 8 * run / SEC;
        assert!(passed <= cap && passed + 1_000 > cap, "passed {passed}, cap {cap}");
        assert!(TokenBucket::new(0, 1).is_err());
        assert!(TokenBucket::new(1, 0).is_err());
    }

    #[test]
    fn even_traces_match_pantheons_constant_rate_files() {
        let ms =
            |t: &DeliveryTrace| (0..t.opportunities() as u64).map(|k| t.opportunity_time(k) / MS).collect::<Vec<_>>();
        // `12mbps` is one line `1`, `60mbps` five, `108mbps` nine.
        let t12 = DeliveryTrace::generate(TraceProcess::Even, 12_000_000, 1_500, 1, 0).unwrap();
        assert_eq!(ms(&t12), [1]);
        let t60 = DeliveryTrace::generate(TraceProcess::Even, 60_000_000, 1_500, 1, 0).unwrap();
        assert_eq!(ms(&t60), [1; 5]);
        assert_eq!(DeliveryTrace::generate(TraceProcess::Even, 108_000_000, 1_500, 1, 0).unwrap().opportunities(), 9);
        // `100.42mbps`: 502,100 lines over 60 s, 8 or 9 in every millisecond.
        let t = DeliveryTrace::generate(TraceProcess::Even, 100_420_000, 1_500, 60_000, 0).unwrap();
        assert_eq!(t.opportunities(), 502_100);
        assert_eq!(t.period(), 60 * SEC);
        let mut per_ms = vec![0u32; 60_001];
        for k in 0..t.opportunities() as u64 {
            per_ms[(t.opportunity_time(k) / MS) as usize] += 1;
        }
        assert!(per_ms[1..].iter().all(|&c| c == 8 || c == 9), "{:?}", &per_ms[..20]);
        // Bytes over the period: opportunities x 1,500 B.
        assert_eq!(TraceLink::new(t, 1_500).mean_rate_bps(), 100_420_000);
        // Too slow for its period.
        assert!(DeliveryTrace::generate(TraceProcess::Even, 1_000, 1_500, 1, 0).is_err());
        assert!(DeliveryTrace::generate(TraceProcess::Even, 0, 1_500, 1, 0).is_err());
    }

    #[test]
    fn poisson_traces_have_the_rate_and_exponential_gaps_of_their_process() {
        for (rate, seed) in [(570_000u64, 1u64), (2_640_000, 2), (3_040_000, 3)] {
            let t = DeliveryTrace::generate(TraceProcess::Poisson, rate, 1_500, 60_000, seed).unwrap();
            let n = t.opportunities() as u64;
            let mean = TraceLink::new(t.clone(), 1_500).mean_rate_bps() as f64;
            // n is Poisson with mean rate x 60 s / 12,000 bit: 2,850 to 15,200; 4 sigma < 8 %.
            assert!((mean / rate as f64 - 1.0).abs() < 0.08, "{rate}: {mean}");
            // Gaps (in ms, from the times rounded down): coefficient of variation ~ 1.
            let gaps: Vec<f64> =
                (1..n).map(|k| (t.opportunity_time(k) - t.opportunity_time(k - 1)) as f64 / MS as f64).collect();
            let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let sd = (gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / (gaps.len() - 1) as f64).sqrt();
            assert!((sd / m - 1.0).abs() < 0.1, "{rate}: CoV {}", sd / m);
            // Several opportunities can share a millisecond (rounding down).
            assert!(gaps.contains(&0.0));
            // Seeded: the same seed gives the same trace, another seed another.
            assert_eq!(t, DeliveryTrace::generate(TraceProcess::Poisson, rate, 1_500, 60_000, seed).unwrap());
            assert_ne!(t, DeliveryTrace::generate(TraceProcess::Poisson, rate, 1_500, 60_000, seed + 10).unwrap());
        }
    }

    #[test]
    fn policer_loses_nothing_below_its_rate_and_half_at_twice_it() {
        // 12 Mb/s with a 1,500 B bucket: a packet every 1 ms fits exactly.
        let offer = |gap: Time| {
            let mut p = TokenBucket::new(12_000_000, 1_500).unwrap();
            let n = 10_000u64;
            (1..=n).filter(|&i| !p.admit(i * gap, 1_500)).count() as f64 / n as f64
        };
        // 0.9 r: gaps of 1/0.9 ms.
        assert_eq!(offer(MS * 10 / 9), 0.0);
        // 2 r: every other packet finds the bucket empty.
        let lost = offer(MS / 2);
        assert!((lost - 0.5).abs() < 0.01, "{lost}");
    }

    #[test]
    fn link_model_filters_loss_before_the_policer() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut m = LinkModel {
            timing: None,
            loss: Some(RandomLoss::new(1.0).unwrap()),
            policer: Some(TokenBucket::new(G, 1_500).unwrap()),
        };
        assert_eq!(m.filter(0, 1_500, &mut rng), Some(LinkDrop::Loss));
        // The lost packet took no tokens.
        m.loss = None;
        assert_eq!(m.filter(0, 1_500, &mut rng), None);
        assert_eq!(m.filter(0, 1_500, &mut rng), Some(LinkDrop::Policed));
        assert_eq!(LinkModel::default().filter(0, 1_500, &mut rng), None);
    }
}
