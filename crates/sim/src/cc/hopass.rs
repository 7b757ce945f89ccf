//! HOPASS's fast layer at the end hosts (Lei et al., "HOPASS: A two-layer
//! control framework for bandwidth and delay guarantee in datacenters",
//! JNCA 196, 2021; spec `learning_cc.md` 6.4, with 6.4b's facts from the
//! paper overriding its [X] choices). Like pHost, a HOPASS sender has no
//! congestion control of its own: it sends at line rate with no window, a
//! request-to-send and one BDP of pioneer packets at its start, then one
//! packet per token; what it sends and when is the receiver's decision
//! (`Transport::Hopass`, wired in `sim/hopass.rs`, configured by
//! `host.hopass_*`).
//!
//! This file holds the receiver's two rules as plain functions, so that
//! they can be checked against the paper's numbers without a network:
//!
//! * [`large_flow_score`]: the order of large flows, m = OPT / (t_wait +
//!   theta), smallest first;
//! * [`ClassRate`]: the per-(receiver, class) token rate with the
//!   ECN-weighted back-off R <- R (1 - alpha / (2 w)) once per token round
//!   trip, and the same additive increase for every class.

use crate::units::Time;

line_rate_transport!(
    /// State of a HOPASS sender (none: tokens decide).
    Hopass,
    "hopass",
    "HOPASS fast layer end hosts: RTS + pioneers, then receiver tokens per class (host.hopass_*; \
     use with switch.scheduler = \"wrr\", one queue per class, ECN)",
    Hopass,
    "host.hopass_*"
);

/// The score of a large flow at its receiver: its ideal completion time
/// alone in the network (`opt`) over the time it has waited plus `theta`.
/// The smallest score is served first: short flows before long ones, and a
/// flow that has waited long before a newcomer of similar size (aging).
/// All three in the same time unit.
#[inline]
pub fn large_flow_score(opt: Time, waited: Time, theta: Time) -> f64 {
    opt as f64 / (waited as f64 + theta as f64).max(1.0)
}

/// The token rate of one traffic class at one receiver, and its DCTCP-style
/// ECN estimator.
///
/// The receiver counts the data packets of the class it receives and those
/// that arrive CE-marked. Once per token round trip ([`ClassRate::on_data`]
/// closes the window) it computes F = marked / received, updates
/// alpha <- (1 - g) alpha + g F, and then, if F > 0, backs off
/// R <- R max(1 - alpha / (2 w), 0.5), with w the class weight normalised so
/// that the smallest class weight is 1 (heavier classes back off less);
/// otherwise it adds the same step to every class, up to `R_max`.
#[derive(Clone, Debug)]
pub struct ClassRate {
    /// Token rate of the class's large flows, bit/s.
    pub rate: f64,
    /// EWMA of the marked fraction.
    pub alpha: f64,
    /// Data packets of the class received in the current window.
    pub received: u32,
    /// Of those, CE-marked.
    pub marked: u32,
    /// Start of the current window (`None` before the class's first data).
    pub window_start: Option<Time>,
    /// Estimated token round trip (the window length), ps.
    pub rtt: f64,
    /// Earliest time of the class's next large-flow token.
    pub next_token: Time,
    /// Windows closed so far (diagnostics).
    pub windows: u64,
    /// Windows that backed off.
    pub backoffs: u64,
}

impl ClassRate {
    /// A class starting at `rate` bit/s with no congestion seen.
    pub fn new(rate: f64) -> Self {
        ClassRate {
            rate,
            alpha: 0.0,
            received: 0,
            marked: 0,
            window_start: None,
            rtt: 0.0,
            next_token: 0,
            windows: 0,
            backoffs: 0,
        }
    }

    /// A data packet of the class arrived at `now`, CE-marked or not, with
    /// `rtt_sample` ps as an estimate of its token's round trip. Closes the
    /// window and adapts the rate when the window is one round trip old:
    /// returns whether it did.
    pub fn on_data(&mut self, now: Time, ce: bool, rtt_sample: f64, law: &RateLaw, weight: f64) -> bool {
        self.received += 1;
        self.marked += u32::from(ce);
        // Round trips vary with queueing: a smoothed estimate (1/8, as TCP's
        // srtt) keeps one window per round trip without reacting twice to
        // the marks of one round.
        self.rtt = if self.rtt == 0.0 { rtt_sample } else { 0.875 * self.rtt + 0.125 * rtt_sample };
        let start = *self.window_start.get_or_insert(now);
        if ((now - start) as f64) < self.rtt {
            return false;
        }
        self.end_window(law, weight);
        self.window_start = Some(now);
        true
    }

    /// Closes the window: the alpha update and the weighted back-off or the
    /// additive increase; the counters restart.
    pub fn end_window(&mut self, law: &RateLaw, weight: f64) {
        let f = if self.received == 0 { 0.0 } else { self.marked as f64 / self.received as f64 };
        self.alpha = (1.0 - law.g) * self.alpha + law.g * f;
        if f > 0.0 {
            let factor = (1.0 - self.alpha / (2.0 * weight)).max(0.5);
            self.rate = (self.rate * factor).max(law.min_rate);
            self.backoffs += 1;
        } else {
            self.rate = (self.rate + law.increase).min(law.max_rate);
        }
        self.windows += 1;
        self.received = 0;
        self.marked = 0;
    }
}

/// The constants of a receiver's token-rate law (the same for every class).
#[derive(Clone, Copy, Debug)]
pub struct RateLaw {
    /// EWMA gain of alpha (1/16).
    pub g: f64,
    /// Additive increase per window, bit/s (the same for every class).
    pub increase: f64,
    /// Largest rate, bit/s (the receiver's token budget).
    pub max_rate: f64,
    /// Smallest rate, bit/s (a class never stops).
    pub min_rate: f64,
}

/// Class weights normalised so that the smallest is 1 (the paper's w >= 1).
pub fn normalised_weights(weights: &[f64]) -> Vec<f64> {
    let min = weights.iter().copied().fold(f64::INFINITY, f64::min);
    weights.iter().map(|&w| w / min).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn law() -> RateLaw {
        RateLaw { g: 1.0 / 16.0, increase: 1e8, max_rate: 9.5e9, min_rate: 1e8 }
    }

    #[test]
    fn marks_back_off_by_weight_and_no_marks_add_the_same_step() {
        let mut light = ClassRate::new(8e9);
        let mut heavy = ClassRate::new(8e9);
        light.alpha = 1.0;
        heavy.alpha = 1.0;
        for c in [&mut light, &mut heavy] {
            c.received = 10;
            c.marked = 10;
        }
        light.end_window(&law(), 1.0);
        heavy.end_window(&law(), 4.0);
        assert_eq!(light.rate, 4e9, "weight 1 at alpha 1 halves");
        assert_eq!(heavy.rate, 7e9, "weight 4 at alpha 1 loses an eighth");
        light.received = 5;
        heavy.received = 5;
        light.end_window(&law(), 1.0);
        heavy.end_window(&law(), 4.0);
        assert_eq!(light.rate, 4.1e9);
        assert_eq!(heavy.rate, 7.1e9);
    }

    #[test]
    fn a_small_weight_never_cuts_below_half() {
        let mut c = ClassRate::new(8e9);
        c.alpha = 1.0;
        c.received = 1;
        c.marked = 1;
        c.end_window(&law(), 0.25);
        assert_eq!(c.rate, 4e9);
    }
}
