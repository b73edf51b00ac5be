//! The RTT estimator of RFC 9002 §5: latest, minimum and smoothed RTT and its variation,
//! with the peer's ACK delay taken off the sample when that keeps it above the minimum.

use crate::base::time::{Nanos, NS_PER_MS};

/// RFC 9002 §6.2.2: the initial RTT before any sample.
pub const INITIAL_RTT: Nanos = 333 * NS_PER_MS;
/// RFC 9002 §6.1.2: the timer granularity.
pub const GRANULARITY: Nanos = NS_PER_MS;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    latest: Nanos,
    min: Nanos,
    smoothed: Nanos,
    var: Nanos,
    has_sample: bool,
    /// aioquic 1.7's arithmetic (aioquic/quic/recovery.py, `on_ack_received`): samples
    /// at least 1 ms, the variation taken against the minimum rather than the smoothed RTT,
    /// and the stored latest RTT is the adjusted one.
    aioquic: bool,
}

impl Default for RttEstimator {
    fn default() -> Self {
        Self::new(INITIAL_RTT)
    }
}

impl RttEstimator {
    pub fn new(initial: Nanos) -> Self {
        Self {
            latest: initial,
            min: initial,
            smoothed: initial,
            var: initial / 2,
            has_sample: false,
            aioquic: false,
        }
    }

    /// The estimator as aioquic 1.7 computes it (see the `aioquic` field).
    pub fn aioquic(initial: Nanos) -> Self {
        Self {
            aioquic: true,
            ..Self::new(initial)
        }
    }

    /// Takes one sample: `rtt` measured from the newest acknowledged packet's send time,
    /// `ack_delay` as the peer reported it (already capped at its max_ack_delay once the
    /// handshake is confirmed, RFC 9002 §5.3).
    pub fn update(&mut self, rtt: Nanos, ack_delay: Nanos) {
        if self.aioquic {
            self.update_aioquic(rtt, ack_delay);
            return;
        }
        self.latest = rtt;
        if !self.has_sample {
            self.has_sample = true;
            self.min = rtt;
            self.smoothed = rtt;
            self.var = rtt / 2;
            return;
        }
        self.min = self.min.min(rtt);
        let adjusted = if rtt >= self.min + ack_delay {
            rtt - ack_delay
        } else {
            rtt
        };
        self.var = (3 * self.var + self.smoothed.abs_diff(adjusted)) / 4;
        self.smoothed = (7 * self.smoothed + adjusted) / 8;
    }

    fn update_aioquic(&mut self, rtt: Nanos, ack_delay: Nanos) {
        let mut latest = rtt.max(NS_PER_MS);
        if !self.has_sample || latest < self.min {
            self.min = latest;
        }
        if latest > self.min + ack_delay {
            latest -= ack_delay;
        }
        self.latest = latest;
        if !self.has_sample {
            self.has_sample = true;
            self.var = rtt / 2;
            self.smoothed = rtt;
        } else {
            self.var = (3 * self.var + self.min.abs_diff(latest)) / 4;
            self.smoothed = (7 * self.smoothed + latest) / 8;
        }
    }

    pub fn latest(&self) -> Nanos {
        self.latest
    }
    pub fn min(&self) -> Nanos {
        self.min
    }
    pub fn smoothed(&self) -> Nanos {
        self.smoothed
    }
    pub fn var(&self) -> Nanos {
        self.var
    }
    pub fn has_sample(&self) -> bool {
        self.has_sample
    }

    /// RFC 9002 §6.2.1: the probe timeout's base, without the peer's max_ack_delay.
    pub fn pto_base(&self) -> Nanos {
        self.smoothed + (4 * self.var).max(GRANULARITY)
    }

    /// RFC 9002 §6.1.2: how long after a later packet was acknowledged an earlier one is
    /// declared lost: 9/8 of the larger of smoothed and latest RTT, at least 1 ms.
    pub fn loss_delay(&self) -> Nanos {
        (self.smoothed.max(self.latest) * 9 / 8).max(GRANULARITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_sets_everything_then_ewma() {
        let mut r = RttEstimator::default();
        assert_eq!(r.smoothed(), 333 * NS_PER_MS);
        r.update(100 * NS_PER_MS, 0);
        assert_eq!(
            (r.min(), r.smoothed(), r.var()),
            (100 * NS_PER_MS, 100 * NS_PER_MS, 50 * NS_PER_MS)
        );
        // 7/8 * 100 + 1/8 * 180 = 110; var: 3/4 * 50 + 1/4 * 80 = 57.5
        r.update(180 * NS_PER_MS, 0);
        assert_eq!(r.smoothed(), 110 * NS_PER_MS);
        assert_eq!(r.var(), 57_500_000);
        assert_eq!(r.min(), 100 * NS_PER_MS);
    }

    #[test]
    fn ack_delay_is_taken_off_only_above_the_minimum() {
        let mut r = RttEstimator::default();
        r.update(100 * NS_PER_MS, 0);
        r.update(120 * NS_PER_MS, 25 * NS_PER_MS); // 120 - 25 = 95 < min 100: not adjusted
        assert_eq!(r.smoothed(), (7 * 100 + 120) * NS_PER_MS / 8);
        let s = r.smoothed();
        r.update(140 * NS_PER_MS, 25 * NS_PER_MS); // 115 >= 100: adjusted
        assert_eq!(r.smoothed(), (7 * s + 115 * NS_PER_MS) / 8);
    }

    #[test]
    fn aioquic_takes_the_variation_against_the_minimum() {
        let mut r = RttEstimator::aioquic(INITIAL_RTT);
        r.update(100 * NS_PER_MS, 0);
        assert_eq!((r.smoothed(), r.var()), (100 * NS_PER_MS, 50 * NS_PER_MS));
        r.update(180 * NS_PER_MS, 0); // var: 3/4 * 50 + 1/4 * |100 - 180| = 57.5, as RFC here
        r.update(120 * NS_PER_MS, 0); // var: 3/4 * 57.5 + 1/4 * |100 - 120| = 48.125 (RFC: against 110)
        assert_eq!(r.var(), 48_125_000);
        assert_eq!(r.smoothed(), (7 * 110 + 120) * NS_PER_MS / 8);
        let mut tiny = RttEstimator::aioquic(INITIAL_RTT);
        tiny.update(200_000, 0);
        tiny.update(200_000, 0);
        assert_eq!(tiny.latest(), NS_PER_MS, "samples are at least 1 ms");
    }

    #[test]
    fn loss_delay_and_pto() {
        let mut r = RttEstimator::default();
        r.update(80 * NS_PER_MS, 0);
        assert_eq!(r.loss_delay(), 90 * NS_PER_MS);
        assert_eq!(r.pto_base(), 80 * NS_PER_MS + 4 * 40 * NS_PER_MS);
    }
}
