//! Time as plain nanoseconds on a clock owned by whoever drives the core.

/// Nanoseconds since the driver's epoch (the start of the run, or 0 in virtual time).
pub type Nanos = u64;

pub const NS_PER_US: Nanos = 1_000;
pub const NS_PER_MS: Nanos = 1_000_000;
pub const NS_PER_S: Nanos = 1_000_000_000;

/// The longest time an input may name (a run's duration, a replayed arrival, a trace's
/// length): 10 years of 365 days, in ms. Far below `Nanos::MAX` (about 584 years), so
/// sums of such times and of the shorter configured durations never overflow.
pub const MAX_TIME_MS: u64 = 10 * 365 * 86_400 * 1_000;
/// [`MAX_TIME_MS`] in seconds.
pub const MAX_TIME_S: u64 = MAX_TIME_MS / 1_000;

/// Milliseconds (possibly fractional) to nanoseconds, rounded to the nearest nanosecond.
/// Saturates: negative values and NaN give 0, values beyond `Nanos::MAX` ns give
/// `Nanos::MAX` (inputs are range-checked before they get here; this never wraps).
pub fn from_ms(ms: f64) -> Nanos {
    (ms * NS_PER_MS as f64).round().max(0.0) as Nanos
}

/// Nanoseconds to milliseconds as f64.
pub fn to_ms(ns: Nanos) -> f64 {
    ns as f64 / NS_PER_MS as f64
}

/// Formats nanoseconds as milliseconds with no trailing zeros ("5", "5.5", "0.000001").
pub fn fmt_ms(ns: Nanos) -> String {
    let whole = ns / NS_PER_MS;
    let frac = ns % NS_PER_MS;
    if frac == 0 {
        return whole.to_string();
    }
    let s = format!("{whole}.{frac:06}");
    s.trim_end_matches('0').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_formatting_is_minimal() {
        assert_eq!(fmt_ms(5 * NS_PER_MS), "5");
        assert_eq!(fmt_ms(5_500_000), "5.5");
        assert_eq!(fmt_ms(1), "0.000001");
        assert_eq!(from_ms(0.25), 250_000);
    }

    #[test]
    fn from_ms_saturates() {
        assert_eq!(from_ms(-1.0), 0);
        assert_eq!(from_ms(f64::NAN), 0);
        assert_eq!(from_ms(f64::NEG_INFINITY), 0);
        assert_eq!(from_ms(1e300), Nanos::MAX);
        assert_eq!(from_ms(f64::INFINITY), Nanos::MAX);
        assert_eq!(
            from_ms(MAX_TIME_MS as f64),
            MAX_TIME_MS * NS_PER_MS,
            "10 years fit"
        );
        assert!(MAX_TIME_MS.checked_mul(NS_PER_MS).unwrap() < Nanos::MAX / 50);
    }
}
