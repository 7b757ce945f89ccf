//! Measurement helpers: histograms, percentiles and fairness indices.

/// Histogram of durations (picoseconds) in logarithmic buckets, 16 per
/// octave (about 4% resolution), up to 2^48 ps (about 280 s).
#[derive(Clone, Debug)]
pub struct LogHist {
    counts: Vec<u64>,
    /// Number of samples.
    pub n: u64,
    /// Sum of samples.
    pub sum: f64,
    /// Largest sample.
    pub max: u64,
    /// Smallest sample.
    pub min: u64,
}

const BUCKETS: usize = 48 * 16;

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
        LogHist { counts: vec![0; BUCKETS], n: 0, sum: 0.0, max: 0, min: u64::MAX }
    }
}

impl LogHist {
    /// Adds one sample.
    #[inline]
    pub fn add(&mut self, v: u64) {
        // Octave from the leading bit, then the next 4 bits: 16 buckets per octave.
        let b = if v < 16 {
            v as usize
        } else {
            let octave = 63 - v.leading_zeros() as usize;
            let sub = ((v >> (octave - 4)) & 15) as usize;
            (octave * 16 + sub).min(BUCKETS - 1)
        };
        self.counts[b] += 1;
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
        for (b, &c) in self.counts.iter().enumerate() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fairness_indices() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), Some(1.0));
        assert!((jain(&[1.0, 0.0]).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(min_max(&[2.0, 4.0]), Some(0.5));
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
