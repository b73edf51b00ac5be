//! A split that keeps every leg's queue, the master's included, within a queue-delay
//! target: a PDU may go to a leg only if the queue it will find there, with it, drains in
//! `max_delay` at the leg's rate; among the legs it fits, it takes the one where it is
//! expected at the device first. When it fits none, it waits in the master's PDCP before
//! it is numbered (`pdcp/hold.rs`).
//!
//! The goal is that of the capacity- and congestion-aware window of Pupiales et al. (IEEE
//! Access 2021; docs/endc.md): both legs governed by their queueing delay. The means differ:
//! their window is renewed every period from each leg's reported capacity and delay, and what
//! exceeds it waits after numbering; here a secondary's queue is predicted between reports
//! ([`Predicted`]: its last report's queue and every PDU sent since, arriving after the hop,
//! drained at its reported rate), so room is known at every instant, and what waits has no
//! COUNT yet.

use crate::base::time::{Nanos, NS_PER_S};

/// A leg as the policy sees it when it places a PDU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TargetView {
    /// The bytes a PDU sent now finds in the leg's queue when it gets there.
    pub ahead_bytes: u64,
    /// The leg's service rate estimate, bit/s (`None`: unknown yet).
    pub rate_bps: Option<f64>,
    /// Before the queue (the X2/Xn hop of a secondary), and after it (propagation).
    pub hop: Nanos,
    pub delay: Nanos,
    /// What the leg's queue can hold, where known.
    pub limit_bytes: Option<u64>,
}

impl TargetView {
    fn rate(&self) -> Option<f64> {
        self.rate_bps.filter(|r| r.is_finite() && *r > 0.0)
    }

    /// The instant a PDU of `len` bytes sent at `now` is expected at the device; `None`
    /// with no rate.
    pub fn expected_delivery(&self, now: Nanos, len: u32) -> Option<Nanos> {
        let r = self.rate()?;
        let wait = ((self.ahead_bytes + len as u64) as f64 * 8.0 * NS_PER_S as f64 / r) as Nanos;
        Some(now + self.hop + wait + self.delay)
    }
}

/// The leg's limits: its queue may hold what drains in `max_delay` at its rate, and
/// `min_bytes` while its rate is unknown (so that it can be measured) or very low.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    pub max_delay: Nanos,
    pub min_bytes: u64,
}

fn bytes_in(rate_bps: f64, t: Nanos) -> f64 {
    rate_bps / 8.0 * t as f64 / NS_PER_S as f64
}

impl Target {
    /// The bytes leg `v`'s queue may hold (never more than its limit).
    pub fn allowance(&self, v: &TargetView) -> u64 {
        let by_rate = match v.rate() {
            Some(r) => (bytes_in(r, self.max_delay) as u64).max(self.min_bytes),
            None => self.min_bytes,
        };
        by_rate.min(v.limit_bytes.unwrap_or(u64::MAX))
    }

    /// Whether a PDU of `len` bytes fits leg `v` now. One that finds the queue empty
    /// always does (a PDU larger than the allowance must still go somewhere).
    pub fn fits(&self, v: &TargetView, len: u32) -> bool {
        v.ahead_bytes == 0 || v.ahead_bytes + len as u64 <= self.allowance(v)
    }

    /// How long from now until a PDU of `len` bytes fits leg `v`, its queue draining at
    /// its rate meanwhile with nothing more arriving; `None` with no rate.
    pub fn until_fits(&self, v: &TargetView, len: u32) -> Option<Nanos> {
        let r = v.rate()?;
        let room = self.allowance(v).saturating_sub(len as u64);
        // It fits once the queue is down to `room` (or empty).
        let excess = v.ahead_bytes.saturating_sub(room);
        Some((excess as f64 * 8.0 * NS_PER_S as f64 / r).ceil() as Nanos)
    }

    /// The index of the leg for a PDU of `len` bytes at `now`, or `None` when it fits no
    /// leg (it waits). A leg of unknown rate that fits is taken first, to be measured;
    /// otherwise the earliest expected delivery among those it fits (the first on ties).
    pub fn place(&self, views: &[TargetView], now: Nanos, len: u32) -> Option<usize> {
        let mut earliest: Option<(Nanos, usize)> = None;
        for (i, v) in views.iter().enumerate() {
            if !self.fits(v, len) {
                continue;
            }
            match v.expected_delivery(now, len) {
                None => return Some(i),
                Some(t) if earliest.is_none_or(|(e, _)| t < e) => earliest = Some((t, i)),
                Some(_) => {}
            }
        }
        earliest.map(|(_, i)| i)
    }
}

/// A secondary's queue as the master predicts it: a fluid queue drained at the reported
/// rate, started from a report's queue at the instant it was made and grown by every PDU
/// sent since at the instant it reaches the secondary. The X2/Xn hop is one fixed delay,
/// so arrivals come in the order the master sent them and each prediction is O(1).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Predicted {
    bytes: f64,
    /// The instant `bytes` is for: the report's, or the last arrival's.
    at: Nanos,
}

impl Predicted {
    /// The queue a report gave: `bytes` at `at`.
    pub fn restart(bytes: u64, at: Nanos) -> Self {
        Predicted {
            bytes: bytes as f64,
            at,
        }
    }

    /// The queue at `t` (no earlier than the last arrival) at `rate_bps`.
    pub fn bytes_at(&self, t: Nanos, rate_bps: f64) -> u64 {
        let drained = bytes_in(rate_bps.max(0.0), t.saturating_sub(self.at));
        (self.bytes - drained).max(0.0) as u64
    }

    /// A PDU of `len` bytes reaches the queue at `at`.
    pub fn arrive(&mut self, at: Nanos, len: u32, rate_bps: f64) {
        if at > self.at {
            self.bytes = (self.bytes - bytes_in(rate_bps.max(0.0), at - self.at)).max(0.0);
            self.at = at;
        }
        self.bytes += len as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::NS_PER_MS;

    const MS: Nanos = NS_PER_MS;
    const TARGET: Target = Target {
        max_delay: 20 * MS,
        min_bytes: 15_000,
    };

    fn view(ahead: u64, mbps: Option<f64>, hop_ms: u64, delay_ms: u64) -> TargetView {
        TargetView {
            ahead_bytes: ahead,
            rate_bps: mbps.map(|m| m * 1e6),
            hop: hop_ms * MS,
            delay: delay_ms * MS,
            limit_bytes: None,
        }
    }

    #[test]
    fn a_leg_holds_what_drains_in_the_target() {
        // 100 Mbit/s × 20 ms = 250 kB; unknown or slow: the floor; never over the limit.
        assert_eq!(TARGET.allowance(&view(0, Some(100.0), 0, 0)), 250_000);
        assert_eq!(TARGET.allowance(&view(0, None, 0, 0)), 15_000);
        assert_eq!(TARGET.allowance(&view(0, Some(1.0), 0, 0)), 15_000);
        let limited = TargetView {
            limit_bytes: Some(100_000),
            ..view(0, Some(100.0), 0, 0)
        };
        assert_eq!(TARGET.allowance(&limited), 100_000);
        assert!(TARGET.fits(&view(248_500, Some(100.0), 0, 0), 1500));
        assert!(!TARGET.fits(&view(248_501, Some(100.0), 0, 0), 1500));
        // An empty queue takes anything.
        let tiny = Target {
            min_bytes: 0,
            ..TARGET
        };
        assert!(tiny.fits(&view(0, None, 0, 0), 1500));
    }

    #[test]
    fn the_wait_until_a_pdu_fits_is_the_excess_at_the_rate() {
        // 260 kB at 100 Mbit/s, room 248.5 kB: 11.5 kB to drain, 0.92 ms.
        let v = view(260_000, Some(100.0), 5, 0);
        assert_eq!(TARGET.until_fits(&v, 1500), Some(920_000));
        assert_eq!(
            TARGET.until_fits(&view(1000, Some(100.0), 0, 0), 1500),
            Some(0)
        );
        assert_eq!(TARGET.until_fits(&view(1000, None, 0, 0), 1500), None);
    }

    #[test]
    fn a_pdu_takes_the_earliest_leg_it_fits() {
        // The master: 10 Mbit/s, 20 ms away, empty (there in 21.2 ms); the secondary:
        // 100 Mbit/s behind a 5 ms hop, 5 ms away, 60 kB ahead (there in 14.92 ms).
        let master = view(0, Some(10.0), 0, 20);
        let secondary = view(60_000, Some(100.0), 5, 5);
        assert_eq!(master.expected_delivery(0, 1500), Some(21_200_000));
        assert_eq!(secondary.expected_delivery(0, 1500), Some(14_920_000));
        assert_eq!(TARGET.place(&[master, secondary], 0, 1500), Some(1));
        // The secondary full: the master, though later.
        let full = view(249_000, Some(100.0), 5, 5);
        assert_eq!(TARGET.place(&[master, full], 0, 1500), Some(0));
        // Both full: it waits.
        let master_full = view(25_000, Some(10.0), 0, 20);
        assert_eq!(TARGET.place(&[master_full, full], 0, 1500), None);
        // A leg of unknown rate with room is measured first.
        let unknown = view(0, None, 5, 5);
        assert_eq!(TARGET.place(&[master, unknown], 0, 1500), Some(1));
        assert_eq!(
            TARGET.place(&[master, view(15_000, None, 5, 5)], 0, 1500),
            Some(0)
        );
    }

    #[test]
    fn the_prediction_drains_at_the_rate_and_grows_with_arrivals() {
        // 100 kB reported at 10 ms, 100 Mbit/s (12.5 kB a ms).
        let mut p = Predicted::restart(100_000, 10 * MS);
        assert_eq!(p.bytes_at(14 * MS, 100e6), 50_000);
        assert_eq!(p.bytes_at(30 * MS, 100e6), 0);
        // 1500 bytes arrive at 12 ms (75 kB then), more at 12 ms and at 20 ms (empty by then).
        p.arrive(12 * MS, 1500, 100e6);
        p.arrive(12 * MS, 1500, 100e6);
        assert_eq!(p.bytes_at(12 * MS, 100e6), 78_000);
        p.arrive(20 * MS, 1500, 100e6);
        assert_eq!(p.bytes_at(20 * MS, 100e6), 1500);
    }

    /// Virtual time: legs of 40 and 10 Mbit/s, the 10 Mbit/s one behind a 10 ms hop whose
    /// queue the master predicts, offered 80 Mbit/s of 1500-byte PDUs. Every queue stays
    /// within its 20 ms target (plus one PDU), both legs stay busy, and the excess waits
    /// (here: is counted as left over) instead of overflowing a queue.
    #[test]
    fn both_queues_stay_within_the_target_under_overload() {
        let rates = [40e6, 10e6];
        let hops = [0, 10 * MS];
        let pdu = 1500u32;
        let gap = (pdu as f64 * 8.0 / 80e6 * 1e9) as Nanos;
        // Each leg: PDUs on the hop (their arrival), the queue's bytes.
        let mut hop: [Vec<Nanos>; 2] = [Vec::new(), Vec::new()];
        let mut queue = [0f64; 2];
        let mut served = [0f64; 2];
        let mut peak = [0f64; 2];
        let mut predicted = Predicted::default();
        let (mut held, mut t) = (0u64, 0);
        while t < 2000 * MS {
            for l in 0..2 {
                let arrived = hop[l].iter().filter(|&&a| a <= t).count();
                hop[l].retain(|&a| a > t);
                queue[l] += (arrived as u32 * pdu) as f64;
                peak[l] = peak[l].max(queue[l]);
                let drain = (rates[l] / 8.0 * gap as f64 / 1e9).min(queue[l]);
                queue[l] -= drain;
                served[l] += drain;
            }
            // The master sees its own queue, and predicts the other's.
            let views = [
                TargetView {
                    ahead_bytes: queue[0] as u64,
                    ..view(0, Some(40.0), 0, 5)
                },
                TargetView {
                    ahead_bytes: predicted.bytes_at(t + hops[1], rates[1]),
                    ..view(0, Some(10.0), 10, 5)
                },
            ];
            match TARGET.place(&views, t, pdu) {
                Some(l) => {
                    hop[l].push(t + hops[l]);
                    if l == 1 {
                        predicted.arrive(t + hops[1], pdu, rates[1]);
                    }
                }
                None => held += 1,
            }
            t += gap;
        }
        for l in 0..2 {
            let limit = bytes_in(rates[l], TARGET.max_delay) + pdu as f64;
            assert!(peak[l] <= limit, "leg {l}: peak {} over {limit}", peak[l]);
            let mbps = served[l] * 8.0 / 2.0 / 1e6;
            assert!(mbps > 0.97 * rates[l] / 1e6, "leg {l} busy: {mbps} Mbit/s");
        }
        // About 30 of the 80 Mbit/s found no room.
        let share = held as f64 * pdu as f64 * 8.0 / 2.0 / 80e6;
        assert!((share - 30.0 / 80.0).abs() < 0.02, "held share {share}");
    }
}
