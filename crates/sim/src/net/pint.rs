//! HPCC-PINT's switch side: a per-port utilisation estimate, encoded into a
//! one- or two-byte field of each data packet (Ben Basat et al., "PINT:
//! Probabilistic In-band Network Telemetry", SIGCOMM 2020; HPCC-ns3's
//! `CC_MODE 10`; section 2.6 of `shared/specs/rule_based_cc.md`).
//!
//! Where HPCC's INT gives the sender four numbers per hop and lets it compute
//! each hop's utilisation, PINT has every switch egress port keep that
//! estimate itself and the packet carry only the largest one, as the power of
//! a log base. At each dequeue, with `dt` the time since the port's previous
//! packet (capped at `T`), `B` the link rate, `qLen` the bytes still queued and
//! `last` the previous packet's size:
//!
//! ```text
//! U <- U (T - dt) / T + qLen dt / (B T^2) + last / (B T)
//! p  = randomised rounding of log_base(ceil(U x 512))      (512 = max_concurrent)
//! field <- max(field, p);   the sender decodes U = base^p / 512
//! ```
//!
//! That is the EWMA, with weight `dt / T`, of `qLen / (B T) + (last / dt) / B`:
//! HPCC's per-hop `u` with the queue and the transmit rate seen at this port.
//!
//! Deliberate choices:
//!
//! * Exact arithmetic: HPCC-ns3 evaluates the three terms through integer
//!   `log2` approximations (hardware-like fixed point, queue lengths in units
//!   of 256 bytes); ccgym computes them in `f64`. The encoding's randomised
//!   rounding, which is what PINT specifies, is kept.
//! * One `T` and one log base for the whole network, as in HPCC-ns3: the
//!   largest `T` of the HPCC-PINT flows and their common `pint_log_base`
//!   (flows that disagree on the base are refused).
//! * The estimate moves only when a PINT data packet leaves the port; the
//!   previous packet's time and size follow every packet the port dequeues
//!   (ACKs and other control packets included), as HPCC-ns3's do. PFC frames,
//!   which skip the queues, are not counted.
//! * Every ACK carries the field back; the sender uses a share `pint_prob`
//!   of them (`PINT_PROB`, 1 by default as in HPCC-ns3), drawn from a hash
//!   of the ACK's arrival time and sequence number.

use crate::units::{Time, SEC};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Largest number of flows a port is expected to share (HPCC-ns3's
/// `max_concurrent`): the encoding's resolution is 1 / 512 of the line rate.
pub const MAX_CONCURRENT: f64 = 512.0;

/// Utilisations as powers of a log base: the field a PINT packet carries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PintCodec {
    base: f64,
    ln_base: f64,
}

impl PintCodec {
    /// The codec of log base `base`; `Err` (a reason) unless `base` is a number
    /// in (1, 2] whose codes fit two bytes.
    pub fn new(base: f64) -> Result<PintCodec, &'static str> {
        if !(base > 1.0 && base <= 2.0) {
            return Err("the log base must be above 1 and at most 2");
        }
        let codec = PintCodec { base, ln_base: base.ln() };
        if codec.bits() > 16 {
            return Err("a log base this close to 1 needs more than 16 bits per code");
        }
        Ok(codec)
    }

    /// The log base.
    pub fn base(&self) -> f64 {
        self.base
    }

    /// Bits of the largest code, that of U = 512 (HPCC-ns3's `get_n_bits`).
    pub fn bits(&self) -> u32 {
        ((MAX_CONCURRENT * MAX_CONCURRENT).ln() / self.ln_base).log2().ceil() as u32
    }

    /// Bytes the field takes in every data packet: 1 for base 1.05, 2 for 1.01.
    pub fn bytes(&self) -> u8 {
        self.bits().div_ceil(8).max(1) as u8
    }

    /// The code of utilisation `u`, rounded to one of the two powers around
    /// `ceil(u x 512)` with the probability that makes it exact on average;
    /// `draw` is uniform in [0, 1).
    pub fn encode(&self, u: f64, draw: f64) -> u16 {
        self.encode_with(u, draw, &[])
    }

    /// [`PintCodec::encode`] with the powers `base^k` for `k` below `powers.len()` looked up
    /// ([`PintCodec::powers`]) instead of computed: the same code, two `powf` fewer.
    #[inline]
    pub fn encode_with(&self, u: f64, draw: f64, powers: &[f64]) -> u16 {
        let scaled = (u * MAX_CONCURRENT).ceil().max(1.0);
        let power = scaled.ln() / self.ln_base;
        let lower = power.floor();
        let k = lower as usize;
        let (lo, hi) = match (powers.get(k), powers.get(k + 1)) {
            (Some(&lo), Some(&hi)) => (lo, hi),
            _ => (self.base.powf(lower), self.base.powf(lower + 1.0)),
        };
        let up = draw < (scaled - lo) / (hi - lo);
        (lower + up as u8 as f64).min(u16::MAX as f64) as u16
    }

    /// `base^k` for every code up to that of U = 512 and one more, computed as
    /// [`PintCodec::encode`] computes them (so a lookup gives the same bits).
    pub fn powers(&self) -> Vec<f64> {
        let top = ((MAX_CONCURRENT * MAX_CONCURRENT).ln() / self.ln_base).ceil() as usize + 2;
        (0..top).map(|k| self.base.powf(k as f64)).collect()
    }

    /// The utilisation a code stands for.
    pub fn decode(&self, code: u16) -> f64 {
        self.base.powi(code as i32) / MAX_CONCURRENT
    }
}

/// What a port's dequeue tells the estimate.
#[derive(Clone, Copy, Debug)]
pub struct Dequeue {
    /// Bytes of the packet that left.
    pub size: u64,
    /// The port's link rate (bit/s).
    pub rate_bps: u64,
    /// Bytes still queued at the port after it.
    pub queued: u64,
    /// It is a data packet that asks for PINT feedback.
    pub pint_data: bool,
}

/// One egress port's estimate.
#[derive(Clone, Copy, Debug, Default)]
struct PortEstimate {
    u: f64,
    last_time: Time,
    last_size: u64,
}

/// The estimates of every port of a network whose flows use HPCC-PINT.
#[derive(Clone, Debug)]
pub struct PintPorts {
    codec: PintCodec,
    /// The codec's powers (`PintCodec::powers`), looked up at every encoding.
    powers: Vec<f64>,
    t: Time,
    ports: Vec<PortEstimate>,
}

impl PintPorts {
    /// Estimates for `ports` ports, with window `t` (ps, above 0) and `codec`.
    pub fn new(ports: usize, t: Time, codec: PintCodec) -> PintPorts {
        PintPorts { codec, powers: codec.powers(), t: t.max(1), ports: vec![PortEstimate::default(); ports] }
    }

    /// The window `T` of the estimates (ps).
    pub fn window(&self) -> Time {
        self.t
    }

    /// The codec the switches encode with.
    pub fn codec(&self) -> PintCodec {
        self.codec
    }

    /// The current estimate of port `port`.
    pub fn utilisation(&self, port: u32) -> f64 {
        self.ports[port as usize].u
    }

    /// Port `port` dequeued packet `d` at `now`. For a packet that asks for PINT
    /// (`d.pint_data`) the estimate moves and its code is returned, for the
    /// caller to keep in the packet if larger than what it holds.
    #[inline]
    pub fn dequeue(&mut self, port: u32, now: Time, d: Dequeue, rng: &mut Xoshiro256PlusPlus) -> Option<u16> {
        let Dequeue { size, rate_bps, queued, pint_data } = d;
        let t = self.t;
        let e = &mut self.ports[port as usize];
        let code = pint_data.then(|| {
            let dt = now.saturating_sub(e.last_time).min(t) as f64;
            let t = t as f64;
            let bytes_per_ps = rate_bps as f64 / 8.0 / SEC as f64;
            e.u = e.u * (t - dt) / t
                + queued as f64 * dt / (bytes_per_ps * t * t)
                + e.last_size as f64 / (bytes_per_ps * t);
            self.codec.encode_with(e.u, rng.random::<f64>(), &self.powers)
        });
        e.last_time = now;
        e.last_size = size;
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{NS, US};
    use rand::SeedableRng;

    #[test]
    fn field_widths_are_hpcc_ns3s() {
        assert_eq!(PintCodec::new(1.05).unwrap().bits(), 8);
        assert_eq!(PintCodec::new(1.05).unwrap().bytes(), 1);
        assert_eq!(PintCodec::new(1.01).unwrap().bits(), 11);
        assert_eq!(PintCodec::new(1.01).unwrap().bytes(), 2);
        for bad in [1.0, 0.9, 2.5, f64::NAN, 1.000_01] {
            assert!(PintCodec::new(bad).is_err(), "{bad}");
        }
    }

    /// Each code decodes to within one step of the base of the utilisation,
    /// and the randomised rounding is exact on average.
    #[test]
    fn codes_are_within_one_step_and_unbiased() {
        let c = PintCodec::new(1.05).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        for &u in &[0.01, 0.3, 0.95, 1.0, 1.7, 40.0] {
            let n = 20_000;
            let mut sum = 0.0;
            for _ in 0..n {
                let d = c.decode(c.encode(u, rng.random::<f64>()));
                let scaled = (u * MAX_CONCURRENT).ceil() / MAX_CONCURRENT;
                assert!(d >= scaled / 1.05 - 1e-12 && d <= scaled * 1.05 + 1e-12, "u {u} decoded {d}");
                sum += d * MAX_CONCURRENT;
            }
            let mean = sum / n as f64;
            let want = (u * MAX_CONCURRENT).ceil();
            assert!((mean / want - 1.0).abs() < 0.003, "u {u}: mean {mean} want {want}");
        }
        // Below 1/512 every utilisation is the smallest code.
        assert_eq!(c.encode(0.0, 0.5), 0);
        assert_eq!(c.decode(0), 1.0 / MAX_CONCURRENT);
    }

    /// Looking the powers up gives the codes computing them gives, beyond the table too.
    #[test]
    fn looked_up_powers_give_the_same_codes() {
        for base in [1.05, 1.01, 1.3] {
            let c = PintCodec::new(base).unwrap();
            let powers = c.powers();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
            for i in 0..20_000 {
                let u = (i as f64 / 20_000.0).powi(3) * 2000.0;
                let draw = rng.random::<f64>();
                assert_eq!(c.encode_with(u, draw, &powers), c.encode(u, draw), "base {base} u {u}");
            }
        }
    }

    /// The estimate follows the formula of the module documentation.
    #[test]
    fn estimate_is_the_ewma_of_queue_and_rate() {
        let t = 10 * US;
        let mut p = PintPorts::new(2, t, PintCodec::new(1.05).unwrap());
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let rate = 100_000_000_000; // 12.5 bytes per ns
                                    // The first packet only records its time and size.
        assert!(p
            .dequeue(0, 0, Dequeue { size: 1000, rate_bps: rate, queued: 0, pint_data: false }, &mut rng)
            .is_none());
        assert_eq!(p.utilisation(0), 0.0);
        // 1000 bytes in 80 ns at 12.5 B/ns is line rate; 25 kB queued is 2 us
        // of the 10 us window: u = 1 + 0.2, weighted 80 ns / 10 us.
        p.dequeue(0, 80 * NS, Dequeue { size: 1000, rate_bps: rate, queued: 25_000, pint_data: true }, &mut rng)
            .unwrap();
        let w = 80.0 / 10_000.0;
        let want = w * (1.0 + 0.2);
        assert!((p.utilisation(0) / want - 1.0).abs() < 1e-12, "{} vs {want}", p.utilisation(0));
        // A gap longer than T forgets the past: u = the instant value.
        p.dequeue(0, 80 * NS + 2 * t, Dequeue { size: 500, rate_bps: rate, queued: 0, pint_data: true }, &mut rng)
            .unwrap();
        let want = 1000.0 / (12.5 * 10_000.0);
        assert!((p.utilisation(0) / want - 1.0).abs() < 1e-12);
        // Steady line rate with a standing queue converges to 1 + q / (B T).
        for k in 1..=5000u64 {
            p.dequeue(
                1,
                k * 80 * NS,
                Dequeue { size: 1000, rate_bps: rate, queued: 12_500, pint_data: true },
                &mut rng,
            );
        }
        assert!((p.utilisation(1) - 1.1).abs() < 1e-6, "{}", p.utilisation(1));
        // Control packets move the time and size, not the estimate.
        let before = p.utilisation(1);
        assert!(p
            .dequeue(1, 5001 * 80 * NS, Dequeue { size: 64, rate_bps: rate, queued: 0, pint_data: false }, &mut rng)
            .is_none());
        assert_eq!(p.utilisation(1), before);
    }
}
