//! Test-only: the Kolmogorov-Smirnov statistic of a sample against a distribution's CDF,
//! and the normal CDF the delay tests need (by `libm::erf`: one function, where a
//! statistics crate would pull a linear-algebra library into every test build).

/// `c(alpha) = sqrt(-ln(alpha/2)/2)` for alpha = 0.001: a sample of `n` fits when its
/// statistic is below `KS_CRIT_001 / sqrt(n)`.
pub const KS_CRIT_001: f64 = 1.9495;

/// The largest distance between the sample's empirical CDF and `cdf`.
pub fn ks_statistic(mut v: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            (f - i as f64 / n).max((i + 1) as f64 / n - f)
        })
        .fold(0.0, f64::max)
}

/// P(X <= x) for X ~ N(mean, std²).
pub fn normal_cdf(x: f64, mean: f64, std: f64) -> f64 {
    0.5 * (1.0 + libm::erf((x - mean) / (std * std::f64::consts::SQRT_2)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_cdf_matches_known_values() {
        assert_eq!(normal_cdf(3.0, 3.0, 2.0), 0.5);
        assert!((normal_cdf(1.0, 0.0, 1.0) - 0.841_344_746_068_542_9).abs() < 1e-12);
        assert!((normal_cdf(0.0, 1.0, 5.0) - 0.420_740_290_560_897_1).abs() < 1e-12);
        assert!((normal_cdf(-3.0, 0.0, 1.0) - 0.001_349_898_031_630_094_6).abs() < 1e-12);
    }

    #[test]
    fn ks_statistic_of_a_perfect_grid_is_one_step() {
        let v: Vec<f64> = (0..100).map(|i| (i as f64 + 0.5) / 100.0).collect();
        assert!((ks_statistic(v.clone(), |x| x) - 0.005).abs() < 1e-12);
        assert!(ks_statistic(v, |x| x * x) > 0.2); // and tells a wrong CDF apart
    }
}
