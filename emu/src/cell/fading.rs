//! Flat block fading of one device's channel: one complex gain `h` per TTI.
//!
//! [`FadingModel::Rayleigh`]: `h` is a circularly symmetric complex Gaussian of unit mean
//! power (`E|h|² = 1`, so the envelope `|h|` is Rayleigh and the power `|h|²` is
//! exponential with mean 1), correlated in time as a first-order autoregressive process
//! (AR(1), a common stand-in for Jakes' model):
//!
//! `h[n+1] = ρ·h[n] + sqrt(1 - ρ²)·w[n]`, `w` i.i.d. CN(0, 1), `ρ = J0(2π·f_d·T)`,
//!
//! with `f_d` the maximum Doppler shift (Hz) and `T` the TTI: the lag-1 correlation equals
//! that of Jakes' spectrum (Clarke's model). Longer lags decay as `ρ^k` instead of
//! `J0(2π·f_d·k·T)` (no oscillation): that is the AR(1) approximation.
//!
//! Jumping `k` TTIs at once is exact: `h[n+k] = ρ^k·h[n] + sqrt(1 - ρ^{2k})·w` has the
//! same distribution as `k` single steps, so an idle cell costs nothing however long it
//! idles. The realization, though, depends on where the process was sampled (the random
//! numbers are drawn per sample), so a device's path depends on when its cell was busy;
//! its statistics do not.
//!
//! [`FadingModel::None`]: `h = 1` forever (the SINR is the mean SINR).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

use crate::base::time::{Nanos, NS_PER_S};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FadingModel {
    /// Constant unit gain.
    #[default]
    None,
    /// Rayleigh block fading, AR(1) in time (see the module docs).
    Rayleigh,
}

/// Bessel function of the first kind of order 0: the power series up to |x| = 12, the
/// Hankel asymptotic expansion beyond (both accurate to about 1e-10 there).
pub fn bessel_j0(x: f64) -> f64 {
    let x = x.abs();
    if x <= 12.0 {
        // sum_m (-1)^m (x²/4)^m / (m!)²
        let q = x * x / 4.0;
        let (mut term, mut sum) = (1.0f64, 1.0f64);
        for m in 1..200 {
            term *= -q / (m as f64 * m as f64);
            sum += term;
            if term.abs() < 1e-17 {
                break;
            }
        }
        sum
    } else {
        // J0(x) = sqrt(2/(πx)) (P cos χ - Q sin χ), χ = x - π/4, with
        // a_k = a_{k-1}·(-(2k-1)²)/(8k), P = Σ_even (-1)^(k/2) a_k/x^k,
        // Q = Σ_odd (-1)^((k-1)/2) a_k/x^k, summed while the terms shrink.
        let (mut p, mut q) = (1.0f64, 0.0f64);
        let mut a = 1.0f64; // a_k / x^k
        let mut last = f64::INFINITY;
        for k in 1..100u32 {
            let kk = k as f64;
            a *= -((2.0 * kk - 1.0) * (2.0 * kk - 1.0)) / (8.0 * kk * x);
            if a.abs() >= last || a.abs() < 1e-18 {
                break;
            }
            last = a.abs();
            let sign = if (k / 2) % 2 == 0 { 1.0 } else { -1.0 };
            if k % 2 == 0 {
                p += sign * a;
            } else {
                q += sign * a;
            }
        }
        let chi = x - std::f64::consts::FRAC_PI_4;
        (2.0 / (std::f64::consts::PI * x)).sqrt() * (p * chi.cos() - q * chi.sin())
    }
}

/// The AR(1) coefficient `ρ = J0(2π·f_d·T)` for a Doppler of `doppler_hz` and a TTI of
/// `tti` ns.
pub fn ar1_coefficient(doppler_hz: f64, tti: Nanos) -> f64 {
    bessel_j0(2.0 * std::f64::consts::PI * doppler_hz * tti as f64 / NS_PER_S as f64)
}

/// One device's channel gain, sampled at TTI indices that never decrease.
#[derive(Debug, Clone)]
pub struct Fading {
    model: FadingModel,
    rho: f64,
    /// ln|ρ| (−∞ for ρ = 0), for exact jumps.
    ln_abs_rho: f64,
    re: f64,
    im: f64,
    index: u64,
    rng: SmallRng,
}

impl Fading {
    /// A channel at TTI index 0, drawn from the stationary distribution.
    pub fn new(model: FadingModel, doppler_hz: f64, tti: Nanos, seed: u64) -> Self {
        let rho = ar1_coefficient(doppler_hz, tti);
        let mut f = Fading {
            model,
            rho,
            ln_abs_rho: rho.abs().ln(),
            re: 1.0,
            im: 0.0,
            index: 0,
            rng: SmallRng::seed_from_u64(seed),
        };
        if model == FadingModel::Rayleigh {
            (f.re, f.im) = f.draw();
        }
        f
    }

    /// A CN(0, 1) sample: real and imaginary parts N(0, 1/2).
    fn draw(&mut self) -> (f64, f64) {
        let s = std::f64::consts::FRAC_1_SQRT_2;
        let re: f64 = self.rng.sample(StandardNormal);
        let im: f64 = self.rng.sample(StandardNormal);
        (re * s, im * s)
    }

    /// Moves the channel to TTI `index` (no-op if it is not ahead): one exact AR(1) jump.
    pub fn advance_to(&mut self, index: u64) {
        if index <= self.index {
            return;
        }
        let k = index - self.index;
        self.index = index;
        if self.model == FadingModel::None {
            return;
        }
        // ρ^k and 1 - ρ^{2k}, precise also for ρ near 1 and for huge k.
        let (a, var) = if k == 1 {
            (self.rho, 1.0 - self.rho * self.rho)
        } else {
            let mag = (k as f64 * self.ln_abs_rho).exp();
            let sign = if self.rho < 0.0 && k % 2 == 1 {
                -1.0
            } else {
                1.0
            };
            (sign * mag, -(2.0 * k as f64 * self.ln_abs_rho).exp_m1())
        };
        let (wr, wi) = self.draw();
        let s = var.max(0.0).sqrt();
        self.re = a * self.re + s * wr;
        self.im = a * self.im + s * wi;
    }

    /// One TTI forward.
    pub fn step(&mut self) {
        self.advance_to(self.index + 1);
    }

    /// The TTI index the gain belongs to.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The AR(1) coefficient per TTI.
    pub fn rho(&self) -> f64 {
        self.rho
    }

    /// The complex gain (real, imaginary).
    pub fn gain(&self) -> (f64, f64) {
        (self.re, self.im)
    }

    /// The power gain `|h|²` (1 without fading).
    pub fn power(&self) -> f64 {
        self.re * self.re + self.im * self.im
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::ks::{ks_statistic as ks, KS_CRIT_001};
    use crate::base::time::NS_PER_MS;

    /// J0 by its integral (1/π)∫₀^π cos(x sin θ) dθ; the trapezoid rule is spectrally
    /// accurate for this smooth periodic integrand.
    fn j0_integral(x: f64) -> f64 {
        let n = 2000;
        let h = std::f64::consts::PI / n as f64;
        (0..n)
            .map(|i| (x * (i as f64 * h).sin()).cos())
            .sum::<f64>()
            / n as f64
    }

    #[test]
    fn j0_matches_its_integral_and_known_values() {
        let mut x = 0.0;
        while x < 60.0 {
            let (a, b) = (bessel_j0(x), j0_integral(x));
            assert!((a - b).abs() < 1e-9, "J0({x}) = {a}, integral {b}");
            x += 0.0371;
        }
        assert_eq!(bessel_j0(0.0), 1.0);
        assert!((bessel_j0(1.0) - 0.765_197_686_557_966_6).abs() < 1e-14);
        assert!((bessel_j0(10.0) + 0.245_935_764_451_348_2).abs() < 1e-12);
        assert!(bessel_j0(2.404_825_557_695_773).abs() < 1e-13, "first zero");
        // Both branches agree where they meet.
        assert!((bessel_j0(12.0) - bessel_j0(12.000_000_1)).abs() < 1e-7);
        assert!((bessel_j0(12.0) - 0.047_689_310_796_833_5).abs() < 1e-10);
        assert_eq!(bessel_j0(-3.0), bessel_j0(3.0));
        // 100 Hz at 1 ms: J0(0.2π) ≈ 0.9037.
        assert!((ar1_coefficient(100.0, NS_PER_MS) - 0.9037).abs() < 1e-4);
        assert_eq!(ar1_coefficient(0.0, NS_PER_MS), 1.0);
    }

    fn path(doppler: f64, seed: u64, n: usize) -> Vec<(f64, f64)> {
        let mut f = Fading::new(FadingModel::Rayleigh, doppler, NS_PER_MS, seed);
        (0..n)
            .map(|_| {
                let g = f.gain();
                f.step();
                g
            })
            .collect()
    }

    #[test]
    fn rayleigh_has_unit_power_and_a_rayleigh_envelope() {
        let p = path(100.0, 42, 400_000);
        let mean_power = p.iter().map(|g| g.0 * g.0 + g.1 * g.1).sum::<f64>() / p.len() as f64;
        assert!((mean_power - 1.0).abs() < 0.03, "mean power {mean_power}");
        // Every 100th sample (ρ^100 ≈ 4e-5 at 100 Hz: independent for the test) against
        // the Rayleigh CDF of unit mean power, P(|h| <= r) = 1 - exp(-r²).
        let env: Vec<f64> = p.iter().step_by(100).map(|g| g.0.hypot(g.1)).collect();
        let exp1 = |x: f64| 1.0 - (-x.max(0.0)).exp(); // Exp(1)'s CDF
        let crit = KS_CRIT_001 / (env.len() as f64).sqrt();
        let d = ks(env.clone(), |r| exp1(r * r));
        assert!(d < crit, "KS D = {d} >= {crit}");
        // The check has teeth: a Rayleigh of 1.5x the power is rejected.
        let d_wrong = ks(env, |r| exp1(r * r / 1.5));
        assert!(d_wrong > 2.0 * crit, "KS D = {d_wrong} should reject");
    }

    #[test]
    fn lag_one_autocorrelation_is_rho() {
        for doppler in [10.0, 100.0, 300.0, 500.0] {
            let p = path(doppler, 7, 300_000);
            let rho = ar1_coefficient(doppler, NS_PER_MS);
            // Re E[h[n+1]·conj(h[n])] / E|h|².
            let num: f64 = p
                .windows(2)
                .map(|w| w[1].0 * w[0].0 + w[1].1 * w[0].1)
                .sum();
            let den: f64 = p.iter().map(|g| g.0 * g.0 + g.1 * g.1).sum();
            let est = num / den;
            assert!(
                (est - rho).abs() < 0.015,
                "{doppler} Hz: lag-1 {est} vs rho {rho}"
            );
        }
        // 500 Hz at 1 ms: 2π·0.5 = 3.14 is past J0's first zero, so ρ < 0.
        assert!(ar1_coefficient(500.0, NS_PER_MS) < -0.3);
    }

    /// From a fixed start, the sample mean and variance of Re h and Im h after `k` TTIs,
    /// reached by one jump or by `k` steps, over many seeds.
    fn after_k(k: u64, doppler: f64, jump: bool) -> [f64; 4] {
        let n = 20_000;
        let mut s = [0.0; 4];
        for seed in 0..n {
            let mut f = Fading::new(FadingModel::Rayleigh, doppler, NS_PER_MS, seed);
            (f.re, f.im) = (1.0, 0.0);
            if jump {
                f.advance_to(k);
            } else {
                for _ in 0..k {
                    f.step();
                }
            }
            assert_eq!(f.index(), k);
            s[0] += f.re;
            s[1] += f.re * f.re;
            s[2] += f.im;
            s[3] += f.im * f.im;
        }
        let n = n as f64;
        let (mr, mi) = (s[0] / n, s[2] / n);
        [mr, s[1] / n - mr * mr, mi, s[3] / n - mi * mi]
    }

    #[test]
    fn jumping_k_ttis_matches_stepping() {
        for (k, doppler) in [(10, 100.0), (3, 500.0), (40, 20.0)] {
            let rho: f64 = ar1_coefficient(doppler, NS_PER_MS);
            let a = rho.powi(k as i32);
            let var = (1.0 - a * a) / 2.0;
            let want = [a, var, 0.0, var];
            for jump in [true, false] {
                let got = after_k(k, doppler, jump);
                for (g, w) in got.iter().zip(want) {
                    // Standard errors are below 0.005 for 20000 samples.
                    assert!(
                        (g - w).abs() < 0.02,
                        "k {k}, {doppler} Hz, jump {jump}: {got:?} vs {want:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn huge_jumps_and_degenerate_models() {
        let mut f = Fading::new(FadingModel::Rayleigh, 50.0, NS_PER_MS, 1);
        f.advance_to(u64::MAX / 2);
        assert!(f.power().is_finite() && f.index() == u64::MAX / 2);
        // No Doppler: ρ = 1, the gain never changes.
        let mut f = Fading::new(FadingModel::Rayleigh, 0.0, NS_PER_MS, 3);
        let g = f.gain();
        f.step();
        f.advance_to(1_000_000);
        assert_eq!(f.gain(), g);
        // No fading: unit gain whatever happens.
        let mut f = Fading::new(FadingModel::None, 100.0, NS_PER_MS, 3);
        f.advance_to(77);
        assert_eq!((f.power(), f.index()), (1.0, 77));
        f.advance_to(5); // never backwards
        assert_eq!(f.index(), 77);
    }

    #[test]
    fn same_seed_same_path() {
        assert_eq!(path(100.0, 9, 1000), path(100.0, 9, 1000));
        assert_ne!(path(100.0, 9, 1000), path(100.0, 10, 1000));
    }
}
