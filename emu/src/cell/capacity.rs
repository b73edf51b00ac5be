//! What a capacity series (bits per TTI, from [`capacity_series`](super::capacity_series))
//! says: its mean and spread in Mbit/s, and the same capacity as a mahimahi trace (one line
//! per delivery opportunity of a fixed packet size, in ms).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::base::time::{Nanos, NS_PER_MS, NS_PER_S};

/// A capacity series in Mbit/s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacitySummary {
    pub ttis: u64,
    pub mean_mbps: f64,
    pub p10_mbps: f64,
    pub p50_mbps: f64,
    pub p90_mbps: f64,
    /// Share of TTIs with no capacity (CQI 0: out of range).
    pub outage: f64,
}

/// Mean, percentiles (nearest rank) and outage of `series`, each TTI `tti` long.
pub fn summarize(series: &[u64], tti: Nanos) -> CapacitySummary {
    let mut s = Summary::default();
    series.iter().for_each(|&b| s.add(b));
    s.finish(tti)
}

/// [`summarize`] fed one TTI at a time: it keeps a count per distinct value (a cell's
/// transport block sizes, a few dozen), so a day of TTIs takes no more memory than a second.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    counts: BTreeMap<u64, u64>,
    n: u64,
    sum: u128,
}

impl Summary {
    /// One TTI's bits.
    pub fn add(&mut self, bits: u64) {
        *self.counts.entry(bits).or_default() += 1;
        self.n += 1;
        self.sum += bits as u128;
    }

    /// The summary of what was added, each TTI `tti` long.
    pub fn finish(&self, tti: Nanos) -> CapacitySummary {
        let per_s = NS_PER_S as f64 / tti as f64 / 1e6;
        // Nearest rank: the value at 0-based rank ceil(p·n) - 1 of the sorted series.
        let pct = |p: f64| -> f64 {
            if self.n == 0 {
                return 0.0;
            }
            let rank = ((p * self.n as f64).ceil() as u64).clamp(1, self.n) - 1;
            let mut below = 0;
            for (&v, &c) in &self.counts {
                below += c;
                if rank < below {
                    return v as f64 * per_s;
                }
            }
            unreachable!("rank {rank} within the {} values counted", self.n)
        };
        let n = self.n.max(1) as f64;
        CapacitySummary {
            ttis: self.n,
            mean_mbps: self.sum as f64 / n * per_s,
            p10_mbps: pct(0.1),
            p50_mbps: pct(0.5),
            p90_mbps: pct(0.9),
            outage: self.counts.get(&0).copied().unwrap_or(0) as f64 / n,
        }
    }
}

/// The series as mahimahi delivery opportunities: TTI `n` ends at `(n + 1)·tti`; every
/// `packet_bytes` the capacity covers by then (bits carry over from TTI to TTI, as a
/// packet segmented over TTIs) is one opportunity at that instant, in whole ms (rounded
/// down; a TTI of 1 ms gives exact ms).
pub fn mahimahi_opportunities(series: &[u64], tti: Nanos, packet_bytes: u64) -> Vec<u64> {
    let mut o = Opportunities::new(tti, packet_bytes);
    let mut out = Vec::new();
    for &b in series {
        let (ms, k) = o.push(b);
        out.extend(std::iter::repeat_n(ms, k as usize));
    }
    out
}

/// [`mahimahi_opportunities`] one TTI at a time, for a trace written as it is made.
#[derive(Debug, Clone)]
pub struct Opportunities {
    tti: Nanos,
    per_packet: u64,
    bits: u64,
    n: u64,
}

impl Opportunities {
    pub fn new(tti: Nanos, packet_bytes: u64) -> Self {
        Opportunities {
            tti,
            per_packet: packet_bytes.max(1) * 8,
            bits: 0,
            n: 0,
        }
    }

    /// The next TTI's bits: the instant it ends (ms) and the opportunities it completes.
    pub fn push(&mut self, bits: u64) -> (u64, u64) {
        self.bits += bits;
        self.n += 1;
        let k = self.bits / self.per_packet;
        self.bits -= k * self.per_packet;
        (self.n * self.tti / NS_PER_MS, k)
    }
}

#[cfg(test)]
mod tests {
    use super::super::amc;
    use super::super::cell::{capacity_series, device_seed, DeviceSpec};
    use super::super::fading::FadingModel;
    use super::*;

    #[test]
    fn summary_and_opportunities_of_a_constant_series() {
        // 18 000 bits per 1 ms TTI = 18 Mbit/s = 1.5 packets of 1500 bytes per ms.
        let s = vec![18_000; 4];
        let sum = summarize(&s, NS_PER_MS);
        assert_eq!((sum.mean_mbps, sum.p50_mbps, sum.outage), (18.0, 18.0, 0.0));
        assert_eq!(
            mahimahi_opportunities(&s, NS_PER_MS, 1500),
            [1, 2, 2, 3, 4, 4]
        );
        let sum = summarize(&[0, 0, 0, 1000], NS_PER_MS);
        assert_eq!((sum.outage, sum.p90_mbps, sum.mean_mbps), (0.75, 1.0, 0.25));
    }

    /// The counting summary gives what sorting the whole series gives.
    #[test]
    fn percentiles_by_counts_are_those_of_the_sorted_series() {
        let d = DeviceSpec::new(10.0, 5.0, FadingModel::Rayleigh);
        let s = capacity_series(20.0, &d, NS_PER_MS, device_seed(3, 0), 20_000).unwrap();
        let mut sorted = s.clone();
        sorted.sort_unstable();
        let rank = |p: f64| sorted[((p * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
        let sum = summarize(&s, NS_PER_MS);
        let mbps = |bits: u64| bits as f64 * (NS_PER_S as f64 / NS_PER_MS as f64 / 1e6);
        assert_eq!(
            (sum.p10_mbps, sum.p50_mbps, sum.p90_mbps),
            (mbps(rank(0.1)), mbps(rank(0.5)), mbps(rank(0.9)))
        );
        assert_eq!(sum.ttis, 20_000);
        assert!(sum.p10_mbps < sum.p50_mbps && sum.p50_mbps < sum.p90_mbps);
        assert_eq!(summarize(&[], NS_PER_MS).p50_mbps, 0.0);
    }

    /// The mean capacity of one device with all 100 RBs of a 20 MHz cell, pedestrian
    /// Rayleigh fading (5 Hz), at the mean SINRs of dclab's `--link lte` levels
    /// (dclab/lte.py derives them and quotes these numbers): the mean over 8 seeds of one
    /// hour each. The AR(1) channel at 5 Hz remembers for about 1 / (1 - ρ) = 4000 TTIs,
    /// so one seed's hour still differs from another's by a few percent.
    #[test]
    fn mean_capacity_of_the_lte_levels() {
        for (sinr_db, want) in [(32.5, 64.1), (14.6, 23.9), (3.3, 4.05), (-5.1, 0.30)] {
            let d = DeviceSpec::new(sinr_db, 5.0, FadingModel::Rayleigh);
            let runs: Vec<CapacitySummary> = (1..=8)
                .map(|seed| {
                    let s = capacity_series(20.0, &d, NS_PER_MS, device_seed(seed, 0), 3_600_000);
                    summarize(&s.unwrap(), NS_PER_MS)
                })
                .collect();
            let mean = runs.iter().map(|r| r.mean_mbps).sum::<f64>() / 8.0;
            let lo = runs.iter().map(|r| r.mean_mbps).fold(f64::MAX, f64::min);
            let hi = runs.iter().map(|r| r.mean_mbps).fold(0.0, f64::max);
            let outage = runs.iter().map(|r| r.outage).sum::<f64>() / 8.0;
            let flat = amc::tb_bits(amc::cqi_from_sinr_db(sinr_db), 100) as f64 / 1e3;
            println!(
                "{sinr_db} dB: mean {mean:.2} Mbit/s (seeds {lo:.2} to {hi:.2}), outage \
                 {outage:.3}; without fading {flat:.2}"
            );
            assert!(
                (mean / want - 1.0).abs() < 0.03,
                "{sinr_db} dB: {mean} vs {want}"
            );
        }
    }
}
