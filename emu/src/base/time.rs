//! Time as plain nanoseconds on a clock owned by whoever drives the core.

/// Nanoseconds since the driver's epoch (the start of the run, or 0 in virtual time).
pub type Nanos = u64;

pub const NS_PER_US: Nanos = 1_000;
pub const NS_PER_MS: Nanos = 1_000_000;
pub const NS_PER_S: Nanos = 1_000_000_000;

/// Milliseconds (possibly fractional) to nanoseconds, rounded to the nearest nanosecond.
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
}
