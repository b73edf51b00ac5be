//! A fixed-size latency histogram (log-linear buckets, 8 per octave, about 12% wide), so
//! recording on the hot path is a few instructions and never allocates.

use serde::Serialize;

const SUB: u32 = 8; // linear sub-buckets per power of two
const LINEAR: u64 = 2 * SUB as u64; // values below this get one bucket each
const BUCKETS: usize = (LINEAR as usize) + (64 - 4) * SUB as usize;

#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    count: u64,
    sum: u128,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: Box::new([0; BUCKETS]),
            count: 0,
            sum: 0,
            max: 0,
        }
    }
}

fn index(v: u64) -> usize {
    if v < LINEAR {
        return v as usize;
    }
    let octave = 63 - v.leading_zeros(); // >= 4
    let sub = (v >> (octave - 3)) & (SUB as u64 - 1);
    LINEAR as usize + (octave as usize - 4) * SUB as usize + sub as usize
}

/// Smallest value that falls in bucket `i`.
fn lower(i: usize) -> u64 {
    if i < LINEAR as usize {
        return i as u64;
    }
    let k = i - LINEAR as usize;
    let octave = (k / SUB as usize) as u32 + 4;
    let sub = (k % SUB as usize) as u64;
    (1u64 << octave) + (sub << (octave - 3))
}

impl Histogram {
    pub fn record(&mut self, v: u64) {
        self.counts[index(v)] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.max = self.max.max(v);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// Value at quantile `q` (0..=1): the middle of the bucket holding it, capped at max.
    pub fn quantile(&self, q: f64) -> u64 {
        self.quantiles([q])[0]
    }

    /// [`Histogram::quantile`] of each of `qs` (ascending), in one pass over the buckets:
    /// records summarise several histograms every interval.
    pub fn quantiles<const N: usize>(&self, qs: [f64; N]) -> [u64; N] {
        let mut out = [self.max; N];
        if self.count == 0 {
            return [0; N];
        }
        let rank = |q: f64| ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut next = 0;
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            if *c == 0 {
                continue;
            }
            seen += c;
            while next < N && seen >= rank(qs[next]) {
                let (lo, hi) = (lower(i), lower(i + 1));
                out[next] = ((lo + hi - 1) / 2).min(self.max);
                next += 1;
            }
            if next == N {
                break;
            }
        }
        out
    }

    /// Summary in microseconds, for a histogram of nanosecond values.
    pub fn summary_us(&self) -> HistSummary {
        self.summary_us_with(true)
    }

    /// [`Histogram::summary_us`], its buckets only `with_buckets` (not listing them saves
    /// a pass and an allocation: records summarise histograms every interval).
    pub fn summary_us_with(&self, with_buckets: bool) -> HistSummary {
        let us = |ns: u64| ns as f64 / 1000.0;
        let [p50, p90, p99, p999] = self.quantiles([0.5, 0.9, 0.99, 0.999]);
        HistSummary {
            count: self.count,
            mean_us: self.mean() / 1000.0,
            p50_us: us(p50),
            p90_us: us(p90),
            p99_us: us(p99),
            p999_us: us(p999),
            max_us: us(self.max),
            buckets: if with_buckets {
                self.counts
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| **c > 0)
                    .map(|(i, c)| (us(lower(i)), *c))
                    .collect()
            } else {
                Vec::new()
            },
        }
    }
}

/// A histogram is written out as its summary.
impl Serialize for Histogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.summary_us().serialize(s)
    }
}

/// What the stats records carry for a histogram. `buckets` lists (lower bound in us,
/// count) for non-empty buckets.
#[derive(Clone, Debug, Serialize)]
pub struct HistSummary {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// Empty (and not written) in a summary without buckets.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub buckets: Vec<(f64, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_ordered() {
        for i in 0..BUCKETS - 1 {
            assert!(lower(i) < lower(i + 1));
            assert_eq!(index(lower(i)), i);
            assert_eq!(index(lower(i + 1) - 1), i);
        }
    }

    #[test]
    fn quantiles_within_bucket_width() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 10);
        }
        for q in [0.5, 0.9, 0.99] {
            let exact = q * 1_000_000.0;
            let got = h.quantile(q) as f64;
            assert!(
                (got - exact).abs() / exact < 0.07,
                "q={q} got {got} exact {exact}"
            );
        }
        assert_eq!(h.max(), 1_000_000);
        assert!((h.mean() - 500_005.0).abs() < 1.0);
    }

    /// The rank's bucket found by a scan of its own, for each quantile alone.
    fn one_by_one(h: &Histogram, q: f64) -> u64 {
        let rank = ((q * h.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in h.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return ((lower(i) + lower(i + 1) - 1) / 2).min(h.max);
            }
        }
        h.max
    }

    #[test]
    fn one_pass_quantiles_equal_a_scan_per_quantile() {
        let qs = [0.0, 0.5, 0.9, 0.99, 0.999, 1.0];
        assert_eq!(Histogram::default().quantiles(qs), [0; 6]);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for n in [1u64, 2, 7, 100, 5_000] {
            let mut h = Histogram::default();
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // heavy-tailed values, so ranks fall in sparse buckets too
                h.record((x % 1000) << (x % 24));
            }
            let want = qs.map(|q| one_by_one(&h, q));
            assert_eq!(h.quantiles(qs), want, "n={n}");
            assert_eq!(h.quantile(0.99), want[3]);
        }
    }
}
