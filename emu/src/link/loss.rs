//! Random packet loss: independent (Bernoulli) or bursty (Gilbert-Elliott).
//!
//! Probabilities are fractions in [0, 1], not percent. Each `Loss` owns a seeded RNG so a
//! run is reproducible.

use anyhow::bail;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossModel {
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        p: f64,
    },
    /// Two-state Markov chain, starting in the good state. Per packet: the packet is lost
    /// with the loss probability of the current state, then the state moves
    /// (good -> bad with `p`, bad -> good with `r`). With `loss_good = 0, loss_bad = 1`,
    /// loss bursts are geometric with mean `1/r` and the loss rate is `p / (p + r)`.
    GilbertElliott {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
    },
}

impl LossModel {
    /// Checks that every probability is in [0, 1].
    pub fn validate(&self) -> anyhow::Result<()> {
        let probs: &[(&str, f64)] = match self {
            LossModel::None => &[],
            LossModel::Bernoulli { p } => &[("p", *p)],
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => &[
                ("p", *p),
                ("r", *r),
                ("loss_good", *loss_good),
                ("loss_bad", *loss_bad),
            ],
        };
        for &(name, v) in probs {
            if !(0.0..=1.0).contains(&v) {
                bail!(
                    "loss probability {name} = {v} is outside [0, 1] (use fractions, not percent)"
                );
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub struct Loss {
    model: LossModel,
    rng: SmallRng,
    /// Gilbert-Elliott state.
    bad: bool,
}

impl Loss {
    pub fn new(model: LossModel, seed: u64) -> Self {
        Loss {
            model,
            rng: SmallRng::seed_from_u64(seed),
            bad: false,
        }
    }

    /// Decides the fate of the next packet: `true` = drop it.
    pub fn lose(&mut self) -> bool {
        match self.model {
            LossModel::None => false,
            // gen::<f64>() is in [0, 1): p = 0 never loses, p = 1 always does.
            LossModel::Bernoulli { p } => self.rng.gen::<f64>() < p,
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                let lost = self.rng.gen::<f64>() < if self.bad { loss_bad } else { loss_good };
                let flip = self.rng.gen::<f64>() < if self.bad { r } else { p };
                self.bad ^= flip;
                lost
            }
        }
    }

    /// Changes the model for the following packets. The Gilbert-Elliott state is kept, so
    /// retuning a bursty channel mid-burst continues the burst.
    pub fn set_model(&mut self, model: LossModel) {
        if !matches!(model, LossModel::GilbertElliott { .. }) {
            self.bad = false;
        }
        self.model = model;
    }

    pub fn model(&self) -> &LossModel {
        &self.model
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// z for a two-sided 99.9% interval.
    const Z999: f64 = 3.2905;

    #[test]
    fn none_and_extremes() {
        let mut l = Loss::new(LossModel::None, 1);
        assert!((0..10_000).all(|_| !l.lose()));
        l.set_model(LossModel::Bernoulli { p: 0.0 });
        assert!((0..10_000).all(|_| !l.lose()));
        l.set_model(LossModel::Bernoulli { p: 1.0 });
        assert!((0..10_000).all(|_| l.lose()));
    }

    #[test]
    fn bernoulli_count_within_binomial_bounds() {
        for (p, seed) in [(0.01, 7), (0.3, 8), (0.0005, 9)] {
            let n = 1_000_000u64;
            let mut l = Loss::new(LossModel::Bernoulli { p }, seed);
            let k = (0..n).filter(|_| l.lose()).count() as f64;
            let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
            assert!(
                (k - mean).abs() <= Z999 * sd,
                "p={p}: {k} lost, expected {mean} +- {}",
                Z999 * sd
            );
        }
    }

    #[test]
    fn same_seed_same_losses() {
        let m = LossModel::GilbertElliott {
            p: 0.1,
            r: 0.5,
            loss_good: 0.01,
            loss_bad: 0.8,
        };
        let (mut a, mut b) = (Loss::new(m, 42), Loss::new(m, 42));
        assert!((0..10_000).all(|_| a.lose() == b.lose()));
    }

    #[test]
    fn gilbert_elliott_bursts_and_rate() {
        let (p, r) = (0.02, 0.3);
        let n = 2_000_000usize;
        let mut l = Loss::new(
            LossModel::GilbertElliott {
                p,
                r,
                loss_good: 0.0,
                loss_bad: 1.0,
            },
            3,
        );
        let lost: Vec<bool> = (0..n).map(|_| l.lose()).collect();
        // Loss rate: stationary share of the bad state. Its variance over a Markov chain is
        // inflated by (1 + lambda) / (1 - lambda), lambda = 1 - p - r.
        let pi = p / (p + r);
        let lambda = 1.0 - p - r;
        let sd = (pi * (1.0 - pi) * (1.0 + lambda) / (1.0 - lambda) / n as f64).sqrt();
        let rate = lost.iter().filter(|&&x| x).count() as f64 / n as f64;
        assert!(
            (rate - pi).abs() < 5.0 * sd,
            "loss rate {rate} vs {pi} (sd {sd})"
        );
        // Bursts (runs of losses) are geometric: mean 1/r, variance (1-r)/r^2; gaps mean 1/p.
        let runs = |want: bool| -> Vec<usize> {
            let mut v = Vec::new();
            let mut cur = 0;
            for &x in &lost {
                if x == want {
                    cur += 1;
                } else if cur > 0 {
                    v.push(cur);
                    cur = 0;
                }
            }
            v
        };
        let check = |v: Vec<usize>, q: f64, what: &str| {
            let mean = v.iter().sum::<usize>() as f64 / v.len() as f64;
            let sd = ((1.0 - q) / (q * q) / v.len() as f64).sqrt();
            assert!(
                (mean - 1.0 / q).abs() < 5.0 * sd,
                "{what}: mean {mean} vs {} (sd {sd})",
                1.0 / q
            );
        };
        check(runs(true), r, "burst length");
        check(runs(false), p, "gap length");
    }

    #[test]
    fn validate_rejects_percentages() {
        assert!(LossModel::Bernoulli { p: 0.5 }.validate().is_ok());
        let e = LossModel::Bernoulli { p: 5.0 }
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("percent"), "{e}");
        let m = LossModel::GilbertElliott {
            p: 0.1,
            r: f64::NAN,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        assert!(m.validate().unwrap_err().to_string().contains(" r "));
    }
}
