//! Bandwidth traces that drive a rate stage.
//!
//! Two shapes exist because the sources differ in kind:
//! - mahimahi traces list *delivery opportunities* (one 1500-byte packet may leave at each
//!   listed millisecond), so they are kept as opportunities and served that way;
//! - the UCC (Raca et al.) CSVs give a *bit rate* per row, kept as piecewise-constant steps.
//!
//! Reading trace files is the config level's job (`src/config/trace_file.rs`): the link
//! only ever sees a trace already in memory.

use crate::base::time::{Nanos, NS_PER_MS};

/// Bytes one mahimahi delivery opportunity may carry.
pub const OPPORTUNITY_BYTES: u64 = 1500;

#[derive(Debug, Clone, PartialEq)]
pub enum RateTrace {
    /// mahimahi: each entry is a millisecond (since trace start, non-decreasing) at which
    /// [`OPPORTUNITY_BYTES`] may leave; repeated values are several opportunities in that
    /// millisecond. When looping, opportunity `k` is at
    /// `(k / n) * period_ms + times_ms[k % n]`.
    Opportunities {
        times_ms: Vec<u64>,
        /// The last timestamp; mahimahi loops with this period.
        period_ms: u64,
    },
    /// Piecewise-constant rate: consecutive `(duration, bit/s)` steps.
    Steps { steps: Vec<(Nanos, u64)> },
}

impl RateTrace {
    /// Length of one pass over the trace.
    pub fn duration(&self) -> Nanos {
        match self {
            RateTrace::Opportunities { period_ms, .. } => period_ms * NS_PER_MS,
            RateTrace::Steps { steps } => steps.iter().map(|s| s.0).sum(),
        }
    }

    /// Mean rate over one pass, bit/s (for reports and sanity checks).
    pub fn mean_bps(&self) -> f64 {
        let d = self.duration();
        if d == 0 {
            return 0.0;
        }
        let bits: f64 = match self {
            RateTrace::Opportunities { times_ms, .. } => {
                (times_ms.len() as u64 * OPPORTUNITY_BYTES * 8) as f64
            }
            RateTrace::Steps { steps } => steps
                .iter()
                .map(|&(dur, bps)| dur as f64 * bps as f64 / 1e9)
                .sum(),
        };
        bits * 1e9 / d as f64
    }
}
