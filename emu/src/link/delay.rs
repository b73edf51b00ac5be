//! The delay stage: per-packet propagation delay with jitter (netem `delay ... limit N`).
//!
//! Each packet draws its own delay; negative draws clamp to 0. With `jitter_reorders`
//! (netem's behaviour, the default) packets leave in order of their own send time
//! `arrival + sample`, ties in arrival order, so jitter larger than the gap between packets
//! reorders them. Without it a packet never overtakes the one before it:
//! `send = max(arrival + sample, previous send)` (order-preserving jitter).
//!
//! `limit` bounds the packets waiting in the stage (netem's `limit`, which counts packets
//! still waiting out their delay); an arrival that would exceed it is dropped.
//!
//! Like the rate stage, `enqueue` first releases the packets due by `now` (to an output
//! buffer emitted by the next `poll`), so the limit check is exact whenever `poll` runs.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use anyhow::bail;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

use crate::base::packet::Pkt;
use crate::base::time::{from_ms, Nanos};

/// Delay distributions, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DelayDist {
    Constant {
        ms: f64,
    },
    Normal {
        mean_ms: f64,
        std_ms: f64,
    },
    /// Uniform on [min_ms, max_ms].
    Uniform {
        min_ms: f64,
        max_ms: f64,
    },
    /// `mean + std·z`, z a standardized (mean 0, std 1) Pareto of shape 3: a heavy right
    /// tail, bounded below at `mean - 0.577·std` (netem's `distribution pareto`).
    Pareto {
        mean_ms: f64,
        std_ms: f64,
    },
    /// `mean + std·(0.25·z_normal + 0.75·z_pareto) / sqrt(0.25² + 0.75²)`: netem's
    /// "paretonormal" mix (a quarter normal, three quarters Pareto). We normalize the mix
    /// so that `mean_ms` and `std_ms` are the true mean and standard deviation.
    ParetoNormal {
        mean_ms: f64,
        std_ms: f64,
    },
}

/// Shape of the Pareto used for `Pareto` / `ParetoNormal`.
const PARETO_SHAPE: f64 = 3.0;

impl DelayDist {
    /// The distribution's mean in ms.
    pub fn mean_ms(&self) -> f64 {
        match *self {
            DelayDist::Constant { ms } => ms,
            DelayDist::Normal { mean_ms, .. }
            | DelayDist::Pareto { mean_ms, .. }
            | DelayDist::ParetoNormal { mean_ms, .. } => mean_ms,
            DelayDist::Uniform { min_ms, max_ms } => (min_ms + max_ms) / 2.0,
        }
    }

    /// One delay sample in ms (may be negative; the stage clamps it).
    pub fn sample_ms(&self, rng: &mut SmallRng) -> f64 {
        match *self {
            DelayDist::Constant { ms } => ms,
            DelayDist::Normal { mean_ms, std_ms } => {
                mean_ms + std_ms * rng.sample::<f64, _>(StandardNormal)
            }
            DelayDist::Uniform { min_ms, max_ms } => min_ms + (max_ms - min_ms) * rng.gen::<f64>(),
            DelayDist::Pareto { mean_ms, std_ms } => mean_ms + std_ms * std_pareto(rng),
            DelayDist::ParetoNormal { mean_ms, std_ms } => {
                let z = 0.25 * rng.sample::<f64, _>(StandardNormal) + 0.75 * std_pareto(rng);
                mean_ms + std_ms * z / (0.25f64 * 0.25 + 0.75 * 0.75).sqrt()
            }
        }
    }

    /// Checks the parameters are finite and sensible (std >= 0, min <= max).
    pub fn validate(&self) -> anyhow::Result<()> {
        let (a, b) = match *self {
            DelayDist::Constant { ms } => (ms, 0.0),
            DelayDist::Normal { mean_ms, std_ms }
            | DelayDist::Pareto { mean_ms, std_ms }
            | DelayDist::ParetoNormal { mean_ms, std_ms } => (mean_ms, std_ms),
            DelayDist::Uniform { min_ms, max_ms } => {
                // Written to also reject NaN.
                if min_ms.partial_cmp(&max_ms).is_none_or(|o| o.is_gt()) {
                    bail!("uniform delay: min {min_ms} ms must be <= max {max_ms} ms");
                }
                (min_ms, max_ms - min_ms)
            }
        };
        if !a.is_finite() || !b.is_finite() || b < 0.0 {
            bail!("delay parameters must be finite with a non-negative spread: {self:?}");
        }
        Ok(())
    }
}

/// A Pareto variate of shape 3 standardized to mean 0, std 1.
fn std_pareto(rng: &mut SmallRng) -> f64 {
    // Scale 1, shape a: mean a/(a-1) = 1.5, std sqrt(a/(a-2))/(a-1) = sqrt(3)/2.
    let u = 1.0 - rng.gen::<f64>(); // (0, 1]: avoids an infinite draw
    let x = u.powf(-1.0 / PARETO_SHAPE);
    (x - 1.5) / (3f64.sqrt() / 2.0)
}

/// A packet waiting out its delay; ordered so the heap pops the earliest send first.
#[derive(Debug)]
struct Waiting {
    send: Nanos,
    /// Arrival sequence number: breaks ties in arrival order.
    seq: u64,
    pkt: Pkt,
}

impl PartialEq for Waiting {
    fn eq(&self, o: &Self) -> bool {
        (self.send, self.seq) == (o.send, o.seq)
    }
}
impl Eq for Waiting {}
impl PartialOrd for Waiting {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Waiting {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        (o.send, o.seq).cmp(&(self.send, self.seq))
    }
}

#[derive(Debug)]
pub struct DelayStage {
    dist: DelayDist,
    limit: Option<u32>,
    jitter_reorders: bool,
    rng: SmallRng,
    waiting: BinaryHeap<Waiting>,
    /// Released packets not yet handed out by `poll`, in departure order.
    ready: VecDeque<(Nanos, Pkt)>,
    seq: u64,
    /// Latest send time assigned (order-preserving mode).
    last_send: Nanos,
}

impl DelayStage {
    pub fn new(dist: DelayDist, limit: Option<u32>, jitter_reorders: bool, seed: u64) -> Self {
        let cap = limit.map_or(1024, |l| (l as usize).min(16 * 1024));
        DelayStage {
            dist,
            limit,
            jitter_reorders,
            rng: SmallRng::seed_from_u64(seed),
            waiting: BinaryHeap::with_capacity(cap),
            ready: VecDeque::with_capacity(64),
            seq: 0,
            last_send: 0,
        }
    }

    /// Accepts `p` arriving at `now`, or gives it back if the stage holds `limit` packets.
    pub fn enqueue(&mut self, now: Nanos, p: Pkt) -> Result<(), Pkt> {
        self.release(now);
        if self.limit.is_some_and(|l| self.waiting.len() >= l as usize) {
            return Err(p);
        }
        let mut send = now.saturating_add(from_ms(self.dist.sample_ms(&mut self.rng)));
        if !self.jitter_reorders {
            send = send.max(self.last_send);
        }
        self.last_send = self.last_send.max(send);
        self.waiting.push(Waiting {
            send,
            seq: self.seq,
            pkt: p,
        });
        self.seq += 1;
        Ok(())
    }

    /// The earliest instant at which `poll` has something to emit.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.ready
            .front()
            .map(|r| r.0)
            .or_else(|| self.waiting.peek().map(|w| w.send))
    }

    /// Emits, in send order, every packet whose send time is `<= now`, with that time.
    pub fn poll(&mut self, now: Nanos, out: &mut impl FnMut(Nanos, Pkt)) {
        self.release(now);
        // Only up to `now`: an earlier `enqueue` may have released later departures.
        while let Some(&(t, p)) = self.ready.front().filter(|r| r.0 <= now) {
            self.ready.pop_front();
            out(t, p);
        }
    }

    /// Changes the distribution for packets arriving from now on.
    pub fn set_dist(&mut self, dist: DelayDist) {
        self.dist = dist;
    }

    /// Packets waiting out their delay (what `limit` bounds).
    pub fn len(&self) -> u32 {
        self.waiting.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    fn release(&mut self, now: Nanos) {
        while self.waiting.peek().is_some_and(|w| w.send <= now) {
            let w = self.waiting.pop().expect("peeked");
            self.ready.push_back((w.send, w.pkt));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::ks::{ks_statistic, normal_cdf, KS_CRIT_001};
    use crate::base::time::NS_PER_MS;

    fn pkt(id: u32) -> Pkt {
        Pkt::new(id, 1500, 0)
    }

    /// Feeds `n` packets 10 us apart through a stage; returns each packet's delay in ms.
    fn delays(dist: DelayDist, n: u32, seed: u64) -> Vec<f64> {
        let mut s = DelayStage::new(dist, None, true, seed);
        let gap = 10_000;
        let mut out = vec![f64::NAN; n as usize];
        let mut sink =
            |t: Nanos, p: Pkt| out[p.id as usize] = (t - p.id as Nanos * gap) as f64 / 1e6;
        for i in 0..n {
            s.enqueue(i as Nanos * gap, pkt(i)).unwrap();
            if i % 1024 == 0 {
                s.poll(i as Nanos * gap, &mut sink);
            }
        }
        s.poll(Nanos::MAX, &mut sink);
        assert!(s.is_empty());
        out
    }

    fn mean_std(v: &[f64]) -> (f64, f64) {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        (
            m,
            (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)).sqrt(),
        )
    }

    /// Kolmogorov-Smirnov: asserts the sample fits `cdf` at the 0.1% level.
    fn assert_ks(v: Vec<f64>, cdf: impl Fn(f64) -> f64, what: &str) {
        let crit = KS_CRIT_001 / (v.len() as f64).sqrt();
        let d = ks_statistic(v, cdf);
        assert!(d < crit, "{what}: KS D = {d} >= {crit}");
    }

    const N: u32 = 200_000;

    #[test]
    fn constant_delay_is_exact_and_fifo() {
        let mut s = DelayStage::new(DelayDist::Constant { ms: 10.5 }, None, true, 1);
        for i in 0..5 {
            s.enqueue(0, pkt(i)).unwrap(); // ties leave in arrival order
        }
        s.enqueue(7, pkt(5)).unwrap();
        assert_eq!(s.next_deadline(), Some(10_500_000));
        let mut out = Vec::new();
        s.poll(20 * NS_PER_MS, &mut |t, p| out.push((t, p.id)));
        let want: Vec<_> = (0..5)
            .map(|i| (10_500_000, i))
            .chain([(10_500_007, 5)])
            .collect();
        assert_eq!(out, want);
        assert_eq!(s.next_deadline(), None);
    }

    #[test]
    fn normal_fits() {
        let v = delays(
            DelayDist::Normal {
                mean_ms: 10.0,
                std_ms: 1.0,
            },
            N,
            11,
        );
        let (m, sd) = mean_std(&v);
        let n = v.len() as f64;
        assert!((m - 10.0).abs() < 5.0 / n.sqrt(), "mean {m}");
        assert!((sd - 1.0).abs() < 5.0 / (2.0 * n).sqrt(), "std {sd}");
        assert_ks(v, |x| normal_cdf(x, 10.0, 1.0), "normal");
    }

    #[test]
    fn uniform_fits() {
        let v = delays(
            DelayDist::Uniform {
                min_ms: 2.0,
                max_ms: 8.0,
            },
            N,
            12,
        );
        assert!(v.iter().all(|&x| (2.0..=8.0).contains(&x)));
        let (m, sd) = mean_std(&v);
        let (m0, sd0) = (5.0, 6.0 / 12f64.sqrt());
        let n = v.len() as f64;
        assert!((m - m0).abs() < 5.0 * sd0 / n.sqrt(), "mean {m}");
        assert!((sd - sd0).abs() < 5.0 * sd0 * (0.2 / n).sqrt(), "std {sd}");
        assert_ks(v, |x| ((x - 2.0) / 6.0).clamp(0.0, 1.0), "uniform");
    }

    #[test]
    fn pareto_fits() {
        let (mean, std) = (20.0, 5.0);
        let v = delays(
            DelayDist::Pareto {
                mean_ms: mean,
                std_ms: std,
            },
            N,
            13,
        );
        let (m, sd) = mean_std(&v);
        let n = v.len() as f64;
        assert!((m - mean).abs() < 5.0 * std / n.sqrt(), "mean {m}");
        // The sample variance of a shape-3 Pareto converges slowly (infinite 4th moment).
        assert!((sd - std).abs() < 0.1 * std, "std {sd}");
        let lo = mean + std * (1.0 - 1.5) / (3f64.sqrt() / 2.0); // x >= 1
        assert!(
            v.iter().all(|&x| x >= lo - 1e-6),
            "below the Pareto's minimum"
        );
        // Back to the unit-scale Pareto of shape 3 (CDF 1 - x^-3 for x >= 1):
        // x = 1.5 + z·sqrt(3)/2.
        let unit_pareto = |x: f64| if x < 1.0 { 0.0 } else { 1.0 - x.powi(-3) };
        assert_ks(
            v,
            |d| unit_pareto(1.5 + (d - mean) / std * 3f64.sqrt() / 2.0),
            "pareto",
        );
    }

    #[test]
    fn pareto_normal_moments() {
        let (mean, std) = (20.0, 4.0);
        let v = delays(
            DelayDist::ParetoNormal {
                mean_ms: mean,
                std_ms: std,
            },
            N,
            14,
        );
        let (m, sd) = mean_std(&v);
        let n = v.len() as f64;
        assert!((m - mean).abs() < 5.0 * std / n.sqrt(), "mean {m}");
        assert!((sd - std).abs() < 0.1 * std, "std {sd}");
        // Right-skewed: the median sits below the mean.
        let mut s = v.clone();
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert!(s[s.len() / 2] < mean - 0.1 * std);
    }

    #[test]
    fn negative_samples_clamp_to_zero() {
        let v = delays(
            DelayDist::Normal {
                mean_ms: 1.0,
                std_ms: 5.0,
            },
            N,
            15,
        );
        assert!(v.iter().all(|&x| x >= 0.0));
        let zero = v.iter().filter(|&&x| x == 0.0).count() as f64 / v.len() as f64;
        let p = normal_cdf(0.0, 1.0, 5.0); // 0.4207
        assert!(
            (zero - p).abs() < 5.0 * (p * (1.0 - p) / v.len() as f64).sqrt(),
            "{zero} vs {p}"
        );
    }

    /// Runs packets 100 us apart through a stage; returns (departure, id) in output order.
    fn run(reorders: bool, seed: u64, n: u32) -> Vec<(Nanos, u32)> {
        let mut s = DelayStage::new(
            DelayDist::Normal {
                mean_ms: 10.0,
                std_ms: 1.0,
            },
            None,
            reorders,
            seed,
        );
        let mut out = Vec::new();
        for i in 0..n {
            let now = i as Nanos * 100_000;
            s.poll(now, &mut |t, p| out.push((t, p.id)));
            s.enqueue(now, pkt(i)).unwrap();
        }
        s.poll(Nanos::MAX, &mut |t, p| out.push((t, p.id)));
        out
    }

    #[test]
    fn jitter_reorders_in_send_order() {
        let out = run(true, 5, 20_000);
        assert_eq!(out.len(), 20_000);
        assert!(
            out.windows(2).all(|w| w[0].0 <= w[1].0),
            "departures must be sorted"
        );
        // Jitter (std 1 ms) far exceeds the 0.1 ms gap: many packets overtake others.
        let overtaken = out.windows(2).filter(|w| w[1].1 < w[0].1).count();
        assert!(overtaken > 5_000, "{overtaken}");
    }

    #[test]
    fn order_preserving_jitter() {
        // Same seed, so the same samples: the order-preserving send time of packet i is the
        // running maximum of the reordering stage's send times.
        let mut own = run(true, 5, 20_000);
        own.sort_by_key(|o| o.1);
        let kept = run(false, 5, 20_000);
        let mut running = 0;
        for (i, &(t, id)) in kept.iter().enumerate() {
            assert_eq!(id as usize, i, "order must be preserved");
            running = running.max(own[i].0);
            assert_eq!(t, running);
            assert!(t >= own[i].0, "never earlier than arrival + sample");
        }
    }

    #[test]
    fn limit_counts_waiting_packets() {
        let mut s = DelayStage::new(DelayDist::Constant { ms: 10.0 }, Some(3), true, 1);
        for i in 0..3 {
            s.enqueue(i as Nanos, pkt(i)).unwrap();
        }
        assert_eq!(s.enqueue(5, pkt(3)), Err(pkt(3)));
        assert_eq!(s.len(), 3);
        // At 10 ms packet 0 has left (no poll needed) and frees a slot.
        s.enqueue(10 * NS_PER_MS, pkt(4)).unwrap();
        assert!(s.enqueue(10 * NS_PER_MS, pkt(5)).is_err());
        let mut out = Vec::new();
        s.poll(Nanos::MAX, &mut |_, p| out.push(p.id));
        assert_eq!(out, vec![0, 1, 2, 4]);
    }

    #[test]
    fn set_dist_applies_to_later_packets() {
        let mut s = DelayStage::new(DelayDist::Constant { ms: 10.0 }, None, true, 1);
        s.enqueue(0, pkt(0)).unwrap();
        s.set_dist(DelayDist::Constant { ms: 1.0 });
        s.enqueue(0, pkt(1)).unwrap();
        let mut out = Vec::new();
        s.poll(Nanos::MAX, &mut |t, p| out.push((t, p.id)));
        assert_eq!(out, vec![(NS_PER_MS, 1), (10 * NS_PER_MS, 0)]);
    }

    #[test]
    fn validate_catches_bad_parameters() {
        assert!(DelayDist::Normal {
            mean_ms: 10.0,
            std_ms: 1.0
        }
        .validate()
        .is_ok());
        assert!(DelayDist::Normal {
            mean_ms: 10.0,
            std_ms: -1.0
        }
        .validate()
        .is_err());
        assert!(DelayDist::Uniform {
            min_ms: 3.0,
            max_ms: 1.0
        }
        .validate()
        .is_err());
        assert!(DelayDist::Constant { ms: f64::INFINITY }
            .validate()
            .is_err());
    }
}
