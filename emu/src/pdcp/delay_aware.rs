//! A delay-aware split: each PDU goes to the leg where it is expected to reach the device
//! first, from the leg's backlog, rate and delay (for a secondary, as its last flow-control
//! report gave them, aged by what it has drained since and grown by what the master sent
//! it that the report had not seen).
//!
//! A leg whose rate is unknown (no report with a rate yet) is never the earliest: the
//! caller sends to it on the flow-control credit until it has one
//! (`engine/flow_control.rs`).

use crate::base::time::{Nanos, NS_PER_S};

/// What the master knows of one leg when it places a PDU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LegView {
    /// Bytes ahead of a new PDU at the leg's queue when it arrives there.
    pub backlog_bytes: u64,
    /// The leg's service rate estimate, bit/s.
    pub rate_bps: Option<f64>,
    /// Before the PDU reaches the leg's queue (the X2/Xn hop of a secondary).
    pub hop: Nanos,
    /// After the queue: the leg's propagation delay.
    pub delay: Nanos,
}

impl LegView {
    /// The instant a PDU of `len` bytes sent at `now` is expected at the device; `None`
    /// with no rate (or a rate of 0).
    pub fn expected_delivery(&self, now: Nanos, len: u32) -> Option<Nanos> {
        let rate = self.rate_bps.filter(|r| *r > 0.0)?;
        let ns = |bytes: u64| (bytes as f64 * 8.0 * NS_PER_S as f64 / rate) as Nanos;
        // The queue drains while the PDU crosses the hop.
        let wait = self.hop.max(ns(self.backlog_bytes));
        Some(now + wait + ns(len as u64) + self.delay)
    }
}

/// A secondary's backlog as the master estimates it: the report's `queued_bytes` (made
/// `age` ago) less what `rate_bps` drained since, plus `unseen_bytes` sent after it.
pub fn secondary_backlog(queued_bytes: u64, rate_bps: f64, age: Nanos, unseen_bytes: u64) -> u64 {
    let drained = (rate_bps.max(0.0) / 8.0 * age as f64 / NS_PER_S as f64) as u64;
    queued_bytes.saturating_sub(drained) + unseen_bytes
}

/// The index of the view with the earliest expected delivery (the first on ties), or
/// `None` when no view has a rate.
pub fn earliest(views: &[LegView], now: Nanos, len: u32) -> Option<usize> {
    views
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.expected_delivery(now, len).map(|t| (t, i)))
        .min()
        .map(|(_, i)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::NS_PER_MS;

    const MS: Nanos = NS_PER_MS;

    fn view(backlog: u64, mbps: f64, hop_ms: u64, delay_ms: u64) -> LegView {
        LegView {
            backlog_bytes: backlog,
            rate_bps: Some(mbps * 1e6),
            hop: hop_ms * MS,
            delay: delay_ms * MS,
        }
    }

    #[test]
    fn the_delivery_counts_the_hop_the_queue_and_the_delay() {
        // 125 000 bytes at 100 Mbit/s: 10 ms; a 1250-byte PDU 0.1 ms; 5 ms delay.
        let v = view(125_000, 100.0, 0, 5);
        assert_eq!(v.expected_delivery(0, 1250), Some(15_100_000));
        // A hop of 3 ms overlaps the queue's 10 ms; one of 12 ms does not.
        assert_eq!(
            view(125_000, 100.0, 3, 5).expected_delivery(0, 1250),
            Some(15_100_000)
        );
        assert_eq!(
            view(125_000, 100.0, 12, 5).expected_delivery(0, 1250),
            Some(17_100_000)
        );
        assert_eq!(
            LegView {
                rate_bps: None,
                ..v
            }
            .expected_delivery(0, 1),
            None
        );
        assert_eq!(
            LegView {
                rate_bps: Some(0.0),
                ..v
            }
            .expected_delivery(0, 1),
            None
        );
    }

    #[test]
    fn the_backlog_ages_and_grows() {
        // 100 kB reported 4 ms ago at 100 Mbit/s (50 kB drained), 20 kB sent since.
        assert_eq!(secondary_backlog(100_000, 100e6, 4 * MS, 20_000), 70_000);
        assert_eq!(secondary_backlog(10_000, 100e6, 4 * MS, 20_000), 20_000);
    }

    #[test]
    fn the_earliest_leg_wins_and_ties_go_first() {
        let fast_far = view(0, 1000.0, 5, 10);
        let slow_near = view(0, 10.0, 0, 1);
        assert_eq!(earliest(&[slow_near, fast_far], 0, 1500), Some(0));
        // 100 kB queued on the slow leg: 80 ms there, against 15 ms.
        assert_eq!(
            earliest(&[view(100_000, 10.0, 0, 1), fast_far], 0, 1500),
            Some(1)
        );
        assert_eq!(earliest(&[slow_near, slow_near], 0, 1500), Some(0));
        let unknown = LegView {
            rate_bps: None,
            ..slow_near
        };
        assert_eq!(earliest(&[unknown, unknown], 0, 1500), None);
    }

    /// Virtual time: two legs of 40 and 10 Mbit/s with equal delays, the master placing
    /// 1500-byte PDUs at 60 Mbit/s with exact views. The split follows the rates (4:1) and
    /// the queues hold the same time's worth, where a fixed half would fill the slow leg's
    /// while the fast one idles.
    #[test]
    fn the_split_follows_the_rates_and_keeps_queues_short() {
        let rates = [40e6, 10e6];
        let pdu = 1500u32;
        let gap = (pdu as f64 * 8.0 / 60e6 * 1e9) as Nanos;
        let mut queues = [0f64; 2];
        let mut sent = [0u64; 2];
        let mut t: Nanos = 0;
        while t < 2000 * MS {
            for (q, r) in queues.iter_mut().zip(rates) {
                *q = (*q - r / 8.0 * gap as f64 / 1e9).max(0.0);
            }
            let views: Vec<LegView> = (0..2)
                .map(|i| LegView {
                    backlog_bytes: queues[i] as u64,
                    rate_bps: Some(rates[i]),
                    hop: 0,
                    delay: 10 * MS,
                })
                .collect();
            let leg = earliest(&views, t, pdu).unwrap();
            queues[leg] += pdu as f64;
            sent[leg] += 1;
            t += gap;
        }
        let share = sent[0] as f64 / (sent[0] + sent[1]) as f64;
        assert!((share - 0.8).abs() < 0.01, "share of the fast leg {share}");
        // Offered 60 over 50 Mbit/s: the queues grow together, each holding the same
        // time's worth (4:1 in bytes), never one overflowing while the other idles.
        let ratio = queues[0] / queues[1];
        assert!((ratio - 4.0).abs() < 0.2, "queues {queues:?}");
    }
}
