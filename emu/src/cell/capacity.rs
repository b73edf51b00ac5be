//! What a capacity series (bits per TTI, from [`capacity_series`](super::capacity_series))
//! says: its mean and spread in Mbit/s, and the same capacity as a mahimahi trace (one line
//! per delivery opportunity of a fixed packet size, in ms).

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
    let per_s = NS_PER_S as f64 / tti as f64 / 1e6;
    let mut sorted = series.to_vec();
    sorted.sort_unstable();
    let pct = |p: f64| -> f64 {
        if sorted.is_empty() {
            return 0.0;
        }
        let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
        sorted[i] as f64 * per_s
    };
    let n = series.len().max(1) as f64;
    CapacitySummary {
        ttis: series.len() as u64,
        mean_mbps: series.iter().sum::<u64>() as f64 / n * per_s,
        p10_mbps: pct(0.1),
        p50_mbps: pct(0.5),
        p90_mbps: pct(0.9),
        outage: series.iter().filter(|&&b| b == 0).count() as f64 / n,
    }
}

/// The series as mahimahi delivery opportunities: TTI `n` ends at `(n + 1)·tti`; every
/// `packet_bytes` the capacity covers by then (bits carry over from TTI to TTI, as a
/// packet segmented over TTIs) is one opportunity at that instant, in whole ms (rounded
/// down; a TTI of 1 ms gives exact ms).
pub fn mahimahi_opportunities(series: &[u64], tti: Nanos, packet_bytes: u64) -> Vec<u64> {
    let per_packet = packet_bytes.max(1) * 8;
    let mut out = Vec::new();
    let mut bits = 0u64;
    for (n, &b) in series.iter().enumerate() {
        bits += b;
        let end_ms = (n as u64 + 1) * tti / NS_PER_MS;
        while bits >= per_packet {
            bits -= per_packet;
            out.push(end_ms);
        }
    }
    out
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
