//! Fixed log2 histogram of the time SDUs wait in the reordering buffer.
//!
//! Buckets are in microseconds: bucket 0 holds waits below 1 us, bucket k (k >= 1) holds
//! [2^(k-1), 2^k) us, and the last bucket also takes everything longer. A plain array so
//! that recording never allocates.

use crate::core::time::{Nanos, NS_PER_US};
use serde::Serialize;

/// Number of buckets; the last one starts at 2^30 us (about 18 minutes).
pub const WAIT_BUCKETS: usize = 32;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WaitHistogram {
    /// Count per log2 bucket of the wait in microseconds (see the module doc).
    pub buckets_us_log2: [u64; WAIT_BUCKETS],
    /// Sum of all recorded waits in nanoseconds, for the mean.
    pub sum_ns: u64,
}

impl WaitHistogram {
    /// Bucket index for a wait.
    pub fn bucket_of(wait: Nanos) -> usize {
        let us = wait / NS_PER_US;
        // 64 - leading_zeros is the bit length: 0 -> 0, 1 -> 1, 2..3 -> 2, ...
        let k = (u64::BITS - us.leading_zeros()) as usize;
        k.min(WAIT_BUCKETS - 1)
    }

    /// Lower and upper bounds of bucket `k` in nanoseconds (upper is exclusive).
    pub fn bucket_bounds(k: usize) -> (Nanos, Nanos) {
        let lo = if k == 0 {
            0
        } else {
            (1u64 << (k - 1)) * NS_PER_US
        };
        (lo, (1u64 << k) * NS_PER_US)
    }

    pub fn record(&mut self, wait: Nanos) {
        self.buckets_us_log2[Self::bucket_of(wait)] += 1;
        self.sum_ns = self.sum_ns.saturating_add(wait);
    }

    /// Number of recorded waits.
    pub fn count(&self) -> u64 {
        self.buckets_us_log2.iter().sum()
    }

    /// Mean wait in nanoseconds, or `None` if nothing was recorded.
    pub fn mean_ns(&self) -> Option<f64> {
        let n = self.count();
        (n > 0).then(|| self.sum_ns as f64 / n as f64)
    }

    /// Estimate of the `p`-th percentile (0..=100) in nanoseconds, interpolating linearly
    /// inside the bucket that holds it. `None` if nothing was recorded.
    pub fn percentile_ns(&self, p: f64) -> Option<Nanos> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = (p.clamp(0.0, 100.0) / 100.0) * n as f64;
        let mut below = 0u64;
        for (k, &c) in self.buckets_us_log2.iter().enumerate() {
            if c == 0 {
                continue;
            }
            if (below + c) as f64 >= rank {
                let (lo, hi) = Self::bucket_bounds(k);
                let frac = ((rank - below as f64) / c as f64).clamp(0.0, 1.0);
                return Some(lo + ((hi - lo) as f64 * frac) as Nanos);
            }
            below += c;
        }
        // Only reachable through rounding; the top of the last used bucket.
        let k = self.buckets_us_log2.iter().rposition(|&c| c > 0)?;
        Some(Self::bucket_bounds(k).1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::NS_PER_MS;

    #[test]
    fn bucket_edges() {
        assert_eq!(WaitHistogram::bucket_of(0), 0);
        assert_eq!(WaitHistogram::bucket_of(999), 0);
        assert_eq!(WaitHistogram::bucket_of(1_000), 1);
        assert_eq!(WaitHistogram::bucket_of(1_999), 1);
        assert_eq!(WaitHistogram::bucket_of(2_000), 2);
        assert_eq!(WaitHistogram::bucket_of(3_999), 2);
        assert_eq!(WaitHistogram::bucket_of(4_000), 3);
        assert_eq!(WaitHistogram::bucket_of(u64::MAX), WAIT_BUCKETS - 1);
        for k in 0..WAIT_BUCKETS {
            let (lo, hi) = WaitHistogram::bucket_bounds(k);
            assert_eq!(WaitHistogram::bucket_of(lo), k);
            if k < WAIT_BUCKETS - 1 {
                assert_eq!(WaitHistogram::bucket_of(hi - 1), k);
                assert_eq!(WaitHistogram::bucket_of(hi), k + 1);
            }
        }
    }

    #[test]
    fn mean_and_percentiles() {
        let mut h = WaitHistogram::default();
        assert_eq!(h.percentile_ns(50.0), None);
        assert_eq!(h.mean_ns(), None);
        for _ in 0..90 {
            h.record(0);
        }
        for _ in 0..10 {
            h.record(100 * NS_PER_MS); // 100_000 us -> bucket 17 [65536, 131072) us
        }
        assert_eq!(h.count(), 100);
        assert_eq!(h.mean_ns(), Some(10.0 * NS_PER_MS as f64));
        assert!(h.percentile_ns(50.0).unwrap() < NS_PER_US);
        let p99 = h.percentile_ns(99.0).unwrap();
        assert!(
            (65_536 * NS_PER_US..131_072 * NS_PER_US).contains(&p99),
            "{p99}"
        );
        assert_eq!(h.percentile_ns(100.0), Some(131_072 * NS_PER_US));
    }

    #[test]
    fn serializes_as_array() {
        let mut h = WaitHistogram::default();
        h.record(1_500);
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["buckets_us_log2"].as_array().unwrap().len(), WAIT_BUCKETS);
        assert_eq!(v["buckets_us_log2"][1], 1);
        assert_eq!(v["sum_ns"], 1_500);
    }
}
