//! A leg's service rate as the node serving it estimates it for flow control: the bytes it
//! could serve over the time it had data to serve (a link: what it served; a cell: its
//! blocks with the idle resource blocks it could have had). Dividing by busy time rather
//! than wall time keeps the estimate of a leg the split starves at its capacity, not at
//! what it was given (which would ask for less and starve it more).

use crate::base::time::{Nanos, NS_PER_MS, NS_PER_S};

/// Busy time under which an estimate is not renewed (the counters keep accumulating):
/// a few packets' worth says little about the rate.
pub const MIN_BUSY: Nanos = NS_PER_MS;

/// The estimator over a leg's cumulative counters.
#[derive(Debug, Clone, Default)]
pub struct ServiceRate {
    served_bytes: u64,
    busy: Nanos,
    rate_bps: Option<f64>,
}

impl ServiceRate {
    /// A rate known before any service (a fixed-rate link's), or `None`.
    pub fn new(initial_bps: Option<f64>) -> Self {
        ServiceRate {
            rate_bps: initial_bps,
            ..Default::default()
        }
    }

    /// Takes the leg's cumulative `served_bytes` (what it could serve while busy) and
    /// `busy` time; renews the estimate once the leg was busy for [`MIN_BUSY`] since the
    /// last renewal.
    pub fn update(&mut self, served_bytes: u64, busy: Nanos) -> Option<f64> {
        let dt = busy.saturating_sub(self.busy);
        if dt >= MIN_BUSY {
            let bytes = served_bytes.saturating_sub(self.served_bytes);
            self.rate_bps = Some(bytes as f64 * 8.0 * NS_PER_S as f64 / dt as f64);
            self.served_bytes = served_bytes;
            self.busy = busy;
        }
        self.rate_bps
    }

    /// Forgets the estimate (a new node serves the leg), keeping the counters' baseline.
    pub fn restart(&mut self, initial_bps: Option<f64>) {
        self.rate_bps = initial_bps;
    }

    /// The estimate in bit/s; `None` before the leg was first busy long enough.
    pub fn bps(&self) -> Option<f64> {
        self.rate_bps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = NS_PER_MS;

    #[test]
    fn the_rate_is_bytes_over_busy_time() {
        let mut r = ServiceRate::new(None);
        assert_eq!(r.update(0, 0), None);
        // 12 500 bytes in 0.5 ms busy: too short to tell.
        assert_eq!(r.update(12_500, MS / 2), None);
        // 25 000 bytes over 2 ms busy (of however much wall time): 100 Mbit/s.
        assert_eq!(r.update(25_000, 2 * MS), Some(100e6));
        // Idle since: the estimate stands.
        assert_eq!(r.update(25_000, 2 * MS), Some(100e6));
        // Busy 4 ms more serving nothing (a leg in outage): 0.
        assert_eq!(r.update(25_000, 6 * MS), Some(0.0));
        assert_eq!(ServiceRate::new(Some(5e6)).bps(), Some(5e6));
    }
}
