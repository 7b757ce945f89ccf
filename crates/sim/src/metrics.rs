//! Measurement helpers: histograms, percentiles, fairness indices and the
//! ideal completion time that slowdowns are measured against.

use crate::units::{ser_time, Time};

/// Histogram of durations (picoseconds) in logarithmic buckets, 16 per
/// octave (about 4% resolution), up to 2^48 ps (about 280 s).
///
/// 48 bytes: a switch port adds a sample per data packet it sends, so the
/// port keeps the histogram beside its hot counters (see `PortStats`), and
/// the counts are 8-bit (see [`Counts`]).
#[derive(Clone, Debug)]
pub struct LogHist {
    counts: Counts,
    /// Number of samples.
    pub n: u64,
    /// Sum of samples.
    pub sum: f64,
    /// Largest sample.
    pub max: u64,
    /// Smallest sample.
    pub min: u64,
}

/// The bucket counts of a [`LogHist`]: the low 8 bits of each count, and
/// the rest in a 64-bit array made when a count first passes 255.
///
/// A port's samples spread over a few octaves, one cache line each with
/// 32-bit counts; with 8-bit counts four octaves share a line, and a k = 16
/// fat tree's 6,144 histograms take 4.7 MB instead of 18.9 MB (cachegrind:
/// slightly fewer instructions, misses about the same). The carry array is
/// written once per 256 adds to a bucket.
#[derive(Clone, Debug)]
struct Counts {
    low: Box<[u8; BUCKETS]>,
    carry: Option<Box<[u64; BUCKETS]>>,
}

impl Counts {
    /// Count of bucket `b`.
    #[inline]
    fn get(&self, b: usize) -> u64 {
        self.low[b] as u64 + self.carry.as_ref().map_or(0, |c| c[b])
    }

    /// Adds one to bucket `b`.
    #[inline]
    fn bump(&mut self, b: usize) {
        let (low, wrapped) = self.low[b].overflowing_add(1);
        self.low[b] = low;
        if wrapped {
            self.carry_out(b);
        }
    }

    #[cold]
    #[inline(never)]
    fn carry_out(&mut self, b: usize) {
        self.carry.get_or_insert_with(|| Box::new([0; BUCKETS]))[b] += 256;
    }
}

const BUCKETS: usize = 48 * 16;

/// The histogram bucket of `v`: the octave from the leading bit, then the
/// next 4 bits (16 buckets per octave).
#[inline]
fn bucket(v: u64) -> usize {
    if v < 16 {
        v as usize
    } else {
        let octave = 63 - v.leading_zeros() as usize;
        let sub = ((v >> (octave - 4)) & 15) as usize;
        (octave * 16 + sub).min(BUCKETS - 1)
    }
}

/// Value range [lo, hi) of histogram bucket `b`.
fn bucket_bounds(b: usize) -> (f64, f64) {
    if b < 16 {
        return (b as f64, b as f64 + 1.0);
    }
    let octave = b / 16;
    let sub = (b % 16) as f64;
    let unit = 2f64.powi(octave as i32 - 4);
    ((16.0 + sub) * unit, (17.0 + sub) * unit)
}

impl Default for LogHist {
    fn default() -> Self {
        LogHist { counts: Counts { low: Box::new([0; BUCKETS]), carry: None }, n: 0, sum: 0.0, max: 0, min: u64::MAX }
    }
}

impl LogHist {
    /// Adds one sample.
    #[inline]
    pub fn add(&mut self, v: u64) {
        self.counts.bump(bucket(v));
        self.n += 1;
        self.sum += v as f64;
        self.max = self.max.max(v);
        self.min = self.min.min(v);
    }

    /// Mean of the samples, or `None` without samples.
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }

    /// Approximate quantile `q` in [0, 1], or `None`: interpolated by rank
    /// inside its bucket and kept within the observed [min, max].
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let target = (q.clamp(0.0, 1.0) * self.n as f64).max(1.0);
        let mut acc = 0u64;
        for b in 0..BUCKETS {
            let c = self.counts.get(b);
            if c > 0 && (acc + c) as f64 >= target {
                let (lo, hi) = bucket_bounds(b);
                let lo = lo.max(self.min as f64);
                let hi = hi.min(self.max as f64).max(lo);
                let frac = (target - acc as f64) / c as f64;
                return Some(lo + (hi - lo) * frac);
            }
            acc += c;
        }
        Some(self.max as f64)
    }
}

/// Exact quantile of a slice (sorted internally), linear interpolation.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let i = pos.floor() as usize;
    let frac = pos - i as f64;
    Some(if i + 1 < v.len() { v[i] * (1.0 - frac) + v[i + 1] * frac } else { v[i] })
}

/// Jain's fairness index: (sum x)^2 / (n sum x^2); 1 is perfectly fair.
pub fn jain(x: &[f64]) -> Option<f64> {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    (!x.is_empty() && s2 > 0.0).then(|| s * s / (x.len() as f64 * s2))
}

/// Smallest over largest value; 1 is perfectly fair.
pub fn min_max(x: &[f64]) -> Option<f64> {
    let mx = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mn = x.iter().cloned().fold(f64::INFINITY, f64::min);
    (!x.is_empty() && mx > 0.0).then(|| mn / mx)
}

/// Ideal completion time of a transfer of `size` payload bytes (ps): the
/// instant its last byte is acknowledged if it had the network to itself and
/// sent at line rate from the start.
///
/// The data goes as `ceil(size / payload)` packets of `payload + header`
/// bytes, the last one carrying the remainder, back to back through
/// store-and-forward links `fwd` (each `(rate bit/s, delay ps)`, in path
/// order); the ACK of the last packet, `ack` bytes, returns through `rev`.
/// A packet leaves link `j` once it has arrived there and the packet before
/// it has left, so the arrival of the last packet is the longest path
/// through the grid of (packet, link) serialisation times. With every packet
/// full but the last, that path carries the first packet up to some link,
/// every full packet across the slowest link so far, the last full packet up
/// to a link `m`, and the short last packet from `m` on:
///
/// `max over m of [ sum_{j<=m} F_j + (n-2) max_{k<=m} F_k + L_m + sum_{j>m} L_j ]`
///
/// plus the delays, with `F_j` and `L_j` the serialisation times of a full
/// and of the last packet on link `j`. This is exactly what an idle network
/// does, so any real run takes at least as long (the slowdown is at least 1).
/// Charging a full packet on the links after the bottleneck, as a
/// "first packet, then the rest at the bottleneck rate" formula does, is not
/// a lower bound when the last packet is short. Saturates at `Time::MAX`.
pub fn ideal_fct<I, J>(size: u64, payload: u64, header: u64, ack: u64, fwd: I, rev: J) -> Time
where
    I: IntoIterator<Item = (u64, Time)>,
    I::IntoIter: Clone,
    J: IntoIterator<Item = (u64, Time)>,
{
    ideal_fct_sprayed(size, payload, header, ack, fwd.into_iter().map(|(r, d)| (r, d, r)), rev)
}

/// [`ideal_fct`] for a flow whose packets may cross each hop through
/// several parallel links (packet spraying): each forward hop is (rate,
/// delay, the hop's aggregate rate, the sum of its parallel links' rates).
///
/// Up to the first hop of parallel links, the packets keep their order and
/// [`ideal_fct`]'s grid holds. From that hop on they may be reordered, and a
/// short last packet may overtake full ones, so the bound takes the largest
/// of three that hold in any order:
///
/// * the first full packet's own path (`sum_j F_j`);
/// * at each hop `i`, every byte of the flow crossing it at its aggregate
///   rate (`W / R_i`), from the first arrival there (the first full packet's
///   `sum_{j<i} F_j`, or, if sooner, the last packet's, which leaves the
///   sender's own link after all the others), and then the rest of the path
///   at the last packet's size;
/// * [`ideal_fct`]'s grid for the links before the first parallel hop.
///
/// With every aggregate equal to its rate this is [`ideal_fct`].
pub fn ideal_fct_sprayed<I, J>(size: u64, payload: u64, header: u64, ack: u64, fwd: I, rev: J) -> Time
where
    I: IntoIterator<Item = (u64, Time, u64)>,
    I::IntoIter: Clone,
    J: IntoIterator<Item = (u64, Time)>,
{
    if size == 0 || payload == 0 {
        return 0;
    }
    let fwd = fwd.into_iter();
    let n = size.div_ceil(payload) as u128;
    let full = payload + header;
    let last = size - (n as u64 - 1) * payload + header;
    // Sums in u128: a huge transfer on a slow link overflows picoseconds in u64.
    let delays: u128 = fwd.clone().map(|(_, d, _)| d as u128).sum();
    let last_total: u128 = fwd.clone().map(|(r, _, _)| ser_time(last, r) as u128).sum();
    let parallel = fwd.clone().any(|(r, _, a)| a > r);
    let data = if n == 1 {
        last_total
    } else {
        let (mut best, mut full_before, mut last_before, mut slowest) = (0u128, 0u128, 0u128, 0u128);
        let mut in_order = true;
        // The last packet leaves the sender's link after the n - 1 full ones.
        let mut last_arrival = 0u128;
        for (i, (rate, _, aggregate)) in fwd.enumerate() {
            let (f, l) = (ser_time(full, rate) as u128, ser_time(last, rate) as u128);
            let first_arrival = if i == 0 { 0 } else { full_before.min(last_arrival) };
            in_order &= aggregate <= rate;
            full_before += f;
            slowest = slowest.max(f);
            last_before += l;
            last_arrival = if i == 0 { (n - 1) * f + l } else { last_arrival + l };
            if in_order {
                best = best.max(full_before + (n - 2) * slowest + l + (last_total - last_before));
            }
            if parallel {
                // All the bytes through this hop, at its aggregate rate.
                let bytes = (n as u64 - 1).saturating_mul(full).saturating_add(last);
                let work = ser_time(bytes, aggregate.max(rate)) as u128;
                best = best.max(first_arrival + work + (last_total - last_before));
            }
        }
        if parallel {
            best = best.max(full_before);
        }
        best
    };
    let back: u128 = rev.into_iter().map(|(r, d)| ser_time(ack, r) as u128 + d as u128).sum();
    (data + delays + back).min(Time::MAX as u128) as Time
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arrival of the last packet at the far end, by simulating the
    /// store-and-forward pipeline packet by packet (no return path).
    fn pipeline(size: u64, payload: u64, header: u64, links: &[(u64, Time)]) -> Time {
        let mut left = vec![0; links.len()]; // when the previous packet left each link
        let mut sent = 0;
        let mut arrival = 0;
        while sent < size {
            let bytes = payload.min(size - sent) + header;
            sent += payload.min(size - sent);
            let mut at = 0; // this packet reaches link j at `at`
            for (j, &(rate, delay)) in links.iter().enumerate() {
                left[j] = at.max(left[j]) + ser_time(bytes, rate);
                at = left[j] + delay;
            }
            arrival = at;
        }
        arrival
    }

    #[test]
    fn a_sprayed_hop_carries_the_packets_at_its_aggregate_rate() {
        // 400 Gb/s host links around a 40 Gb/s fabric hop of two parallel
        // links: 100 full packets of 1,000 bytes.
        let ns = crate::units::NS;
        let links = [(400_000_000_000, 0), (40_000_000_000, 0), (400_000_000_000, 0)];
        let single = ideal_fct(100_000, 1000, 0, 0, links, []);
        let same = ideal_fct_sprayed(100_000, 1000, 0, 0, links.map(|(r, d)| (r, d, r)), []);
        assert_eq!(single, same);
        assert_eq!(single, pipeline(100_000, 1000, 0, &links));
        // Two links of 40 Gb/s at the fabric hop. Packet by packet,
        // alternating links, the 100th leaves its fabric link at 40 + 50 x
        // 200 ns and the far host link 20 ns after the 99th: 10,060 ns, where
        // one path would take 20 + 100 x 200 + 20. The bound: all 100 packets
        // through the fabric hop at 80 Gb/s (10,000 ns) from the first
        // arrival (20 ns), then the far host link (20 ns).
        let sprayed = [
            (400_000_000_000, 0, 400_000_000_000),
            (40_000_000_000, 0, 80_000_000_000),
            (400_000_000_000, 0, 400_000_000_000),
        ];
        let t = ideal_fct_sprayed(100_000, 1000, 0, 0, sprayed, []);
        assert_eq!(t, (20 + 10_000 + 20) * ns);
        assert!(t <= 10_060 * ns);
        assert!(t < single);
        // Two packets, the second short: over parallel links it may pass the
        // first and cross the far link first, so a flow ends when the first
        // full packet does (20 + 200 + 20 ns), not a short packet later.
        let two = ideal_fct_sprayed(1100, 1000, 0, 0, sprayed, []);
        assert_eq!(two, 240 * ns);
        assert!(two < ideal_fct(1100, 1000, 0, 0, links, []));
    }

    #[test]
    fn ideal_fct_of_a_short_last_packet_behind_a_middle_bottleneck() {
        // 100, 25, 100 Gb/s; one 1000-byte and one 100-byte packet (no header):
        // the first leaves the links at 80, 400, 480 ns, the second at 88, 432,
        // 488 ns. Charging the second a full packet on the last link says 560 ns.
        let ns = 1000;
        let links = [(100_000_000_000, 0), (25_000_000_000, 0), (100_000_000_000, 0)];
        assert_eq!(ideal_fct(1100, 1000, 0, 0, links, []), 488 * ns);
        assert_eq!(pipeline(1100, 1000, 0, &links), 488 * ns);
        // Delays and the ACK's way back add up; a single packet just crosses.
        let delayed = [(100_000_000_000, 1000 * ns), (25_000_000_000, 2000 * ns)];
        let back = [(25_000_000_000, 3000 * ns)];
        assert_eq!(ideal_fct(100, 1000, 0, 10, delayed, back), (8 + 32 + 1000 + 2000 + 3000) * ns + 3200);
    }

    #[test]
    fn ideal_fct_equals_an_idle_pipeline_on_every_small_case() {
        let rates = [10_000_000_000, 25_000_000_000, 40_000_000_000, 100_000_000_000, 400_000_000_000];
        let mut case = 0u64;
        for hops in 1..=4usize {
            for pattern in 0..rates.len().pow(hops as u32) {
                let links: Vec<(u64, Time)> = (0..hops)
                    .map(|j| (rates[pattern / rates.len().pow(j as u32) % rates.len()], 1000 * j as Time))
                    .collect();
                for size in [1, 999, 1000, 1001, 2500, 3000, 7777] {
                    case += 1;
                    let header = case % 3 * 24;
                    let want = pipeline(size, 1000, header, &links);
                    let got = ideal_fct(size, 1000, header, 0, links.iter().copied(), []);
                    assert_eq!(got, want, "size {size}, header {header}, links {links:?}");
                }
            }
        }
    }

    #[test]
    fn fairness_indices() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), Some(1.0));
        assert!((jain(&[1.0, 0.0]).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(min_max(&[2.0, 4.0]), Some(0.5));
    }

    #[test]
    fn histogram_counts_carry_past_eight_bits() {
        let mut h = LogHist::default();
        let mut other = LogHist::default();
        for _ in 0..1000 {
            h.add(100);
        }
        other.add(100);
        other.add(5_000);
        for _ in 0..700 {
            h.add(5_000);
        }
        let b = (0..BUCKETS).find(|&b| h.counts.get(b) == 1000).expect("a bucket of 1000");
        assert!(h.counts.carry.is_some() && other.counts.carry.is_none());
        assert_eq!(h.counts.low[b], (1000 % 256) as u8);
        assert_eq!((0..BUCKETS).map(|b| h.counts.get(b)).sum::<u64>(), 1700);
        // Bucket [100, 104) holds the median at rank 850 of its 1000.
        assert!((h.quantile(0.5).unwrap() - 103.4).abs() < 1e-9, "{:?}", h.quantile(0.5));
        assert!(h.quantile(0.9).unwrap() > 4_000.0);
        assert_eq!(std::mem::size_of::<LogHist>(), 48);
    }

    #[test]
    fn histogram_quantiles_are_close() {
        let mut h = LogHist::default();
        for v in 1..=10_000u64 {
            h.add(v * 1000);
        }
        let p50 = h.quantile(0.5).unwrap();
        assert!((p50 / 5_000_000.0 - 1.0).abs() < 0.02, "{p50}");
        let mut flat = LogHist::default();
        for _ in 0..100 {
            flat.add(838_800);
        }
        assert_eq!(flat.quantile(0.99), Some(838_800.0));
        assert!((h.mean().unwrap() - 5_000_500.0).abs() < 1.0);
    }
}
