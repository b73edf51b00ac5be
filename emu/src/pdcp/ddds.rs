//! Flow control of a split bearer between the master node's PDCP and a secondary node, as
//! TS 38.425 (NR user plane protocol) carries it: the secondary sends DL DATA DELIVERY
//! STATUS reports ([`Ddds`], §5.5.2.2) every reporting period over X2/Xn, and the master
//! sends it no more than the report asks for.
//!
//! 3GPP fixes the report's fields, not what either node does with them. dcemu's policy:
//!
//! - the secondary ([`desired_buffer_bytes`]) asks for what it will drain at its rate
//!   estimate until the master's next PDUs can reach it (a reporting period and the X2
//!   round trip) plus a queue of `target_delay`, less what it already holds (at least
//!   `min_bytes`, so a secondary that has drained is never silent);
//! - the master ([`DddsCredit`]) may send the report's desired size, less what it sent that
//!   the report had not yet seen (PDUs after the report's highest transmitted COUNT: still
//!   on the X2 hop, or sent after the report left). Whatever does not fit goes to the
//!   master's own leg.
//!
//! dcemu numbers PDUs by COUNT, which never wraps, where TS 38.425 reports NR PDCP SNs.

use std::collections::VecDeque;

use crate::base::time::{Nanos, NS_PER_S};

/// A DL DATA DELIVERY STATUS report: the fields the master uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ddds {
    /// The desired buffer size for the bearer, in bytes.
    pub desired_buffer_bytes: u64,
    /// The highest COUNT the secondary has passed to its lower layers (TS 38.425's
    /// "highest transmitted NR PDCP SN"); `None`: none yet.
    pub highest_transmitted: Option<u32>,
    /// The secondary's rate estimate in bytes per second (TS 38.425's "desired data
    /// rate"); 0: none yet.
    pub desired_rate: u64,
    /// What the secondary holds for the bearer, and what its queue can hold, in bytes:
    /// not TS 38.425 fields (dcemu additions the delay-aware and delay-target policies
    /// read, `pdcp/delay_aware.rs`, `pdcp/delay_target.rs`).
    pub queued_bytes: u64,
    pub limit_bytes: Option<u64>,
    /// The highest COUNT the secondary has served (TS 38.425's "highest delivered NR PDCP
    /// SN", `pdcp/outage.rs`), and whether it is in a radio link outage (the report's
    /// cause value): read where the split sends PDUs again on an outage.
    pub highest_served: Option<u32>,
    pub outage: bool,
}

/// The secondary's desired buffer size: `rate_bps × target_delay` (at least `min_bytes`)
/// less the `queued_bytes` it holds.
pub fn desired_buffer_bytes(
    rate_bps: f64,
    target_delay: Nanos,
    min_bytes: u64,
    queued_bytes: u64,
) -> u64 {
    let want = (rate_bps.max(0.0) / 8.0 * target_delay as f64 / NS_PER_S as f64) as u64;
    want.max(min_bytes).saturating_sub(queued_bytes)
}

/// The master's view of what it may send the secondary.
#[derive(Debug, Clone)]
pub struct DddsCredit {
    /// PDUs sent to the secondary after the last report's highest transmitted COUNT:
    /// (COUNT, bytes, when sent), in COUNT order.
    unseen: VecDeque<(u32, u32, Nanos)>,
    unseen_bytes: u64,
    credit: u64,
    reports: u64,
}

impl DddsCredit {
    /// Before the first report the master may send `initial_bytes`.
    pub fn new(initial_bytes: u64) -> Self {
        DddsCredit {
            unseen: VecDeque::new(),
            unseen_bytes: 0,
            credit: initial_bytes,
            reports: 0,
        }
    }

    /// Whether a PDU of `len` bytes fits the credit.
    pub fn fits(&self, len: u32) -> bool {
        self.credit >= len as u64
    }

    /// The PDU `count` of `len` bytes went to the secondary at `at`.
    pub fn sent(&mut self, count: u32, len: u32, at: Nanos) {
        self.credit = self.credit.saturating_sub(len as u64);
        self.unseen.push_back((count, len, at));
        self.unseen_bytes += len as u64;
    }

    /// A report arrived: the credit becomes its desired size less what it has not seen.
    pub fn on_report(&mut self, r: &Ddds) {
        if let Some(h) = r.highest_transmitted {
            while let Some(&(c, len, _)) = self.unseen.front() {
                if c > h {
                    break;
                }
                self.unseen.pop_front();
                self.unseen_bytes -= len as u64;
            }
        }
        self.credit = r.desired_buffer_bytes.saturating_sub(self.unseen_bytes);
        self.reports += 1;
    }

    pub fn credit(&self) -> u64 {
        self.credit
    }

    /// Bytes sent that no report has seen yet.
    pub fn unseen_bytes(&self) -> u64 {
        self.unseen_bytes
    }

    /// The PDUs sent that no report has seen yet: (COUNT, bytes, when sent), in order.
    pub fn unseen(&self) -> impl Iterator<Item = (u32, u32, Nanos)> + '_ {
        self.unseen.iter().copied()
    }

    pub fn reports(&self) -> u64 {
        self.reports
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::NS_PER_MS;

    const MS: Nanos = NS_PER_MS;
    const REPORT: Ddds = Ddds {
        desired_buffer_bytes: 0,
        highest_transmitted: None,
        desired_rate: 0,
        queued_bytes: 0,
        limit_bytes: None,
        highest_served: None,
        outage: false,
    };

    #[test]
    fn the_desired_size_is_the_target_queue_less_what_is_held() {
        // 100 Mbit/s × 20 ms = 250 000 bytes.
        assert_eq!(desired_buffer_bytes(100e6, 20 * MS, 3000, 0), 250_000);
        assert_eq!(desired_buffer_bytes(100e6, 20 * MS, 3000, 200_000), 50_000);
        assert_eq!(desired_buffer_bytes(100e6, 20 * MS, 3000, 300_000), 0);
        assert_eq!(
            desired_buffer_bytes(0.0, 20 * MS, 3000, 0),
            3000,
            "never silent"
        );
    }

    #[test]
    fn the_credit_counts_what_the_report_had_not_seen() {
        let mut c = DddsCredit::new(3000);
        assert!(c.fits(1500) && !DddsCredit::new(1000).fits(1500));
        for count in 0..2 {
            c.sent(count, 1500, 0);
        }
        assert!(!c.fits(1));
        // A report that saw COUNT 0 only: 1500 bytes still unseen.
        c.on_report(&Ddds {
            desired_buffer_bytes: 10_000,
            highest_transmitted: Some(0),
            ..REPORT
        });
        assert_eq!((c.credit(), c.unseen_bytes()), (8500, 1500));
        c.on_report(&Ddds {
            desired_buffer_bytes: 1000,
            highest_transmitted: Some(1),
            ..REPORT
        });
        assert_eq!((c.credit(), c.unseen_bytes(), c.reports()), (1000, 0, 2));
    }

    /// Virtual time: a secondary queue drained at 50 Mbit/s behind an X2 hop of 5 ms,
    /// reporting every 10 ms with a 10 ms target; the master offers 200 Mbit/s. The credit
    /// keeps the secondary's queue near its target (62.5 kB) and its link busy, where a
    /// static half of 100 Mbit/s overflows it.
    #[test]
    fn a_flow_controlled_secondary_queue_stays_near_its_target() {
        let (rate, x2, period, target) = (50e6, 5 * MS, 10 * MS, 10 * MS);
        let pdu = 1500u32;
        let gap = (pdu as f64 * 8.0 / 200e6 * 1e9) as Nanos; // 60 µs between PDUs
        let run = |controlled: bool| {
            let mut credit = DddsCredit::new(pdu as u64 * 10);
            let mut x2_flight: VecDeque<(Nanos, u32)> = VecDeque::new();
            let mut reports: VecDeque<(Nanos, Ddds)> = VecDeque::new();
            let (mut queued, mut served, mut highest) = (0f64, 0f64, None);
            let mut queue: VecDeque<(u32, u32)> = VecDeque::new(); // (COUNT, bytes left)
            let (mut peak, mut sum_q, mut samples) = (0f64, 0f64, 0u64);
            let (mut next_report, mut count, mut t) = (period, 0u32, 0);
            while t < 2000 * MS {
                // The secondary drains its queue for one PDU gap.
                let mut budget = rate / 8.0 * gap as f64 / 1e9;
                while budget > 0.0 {
                    let Some(front) = queue.front_mut() else {
                        break;
                    };
                    let take = budget.min(front.1 as f64);
                    front.1 -= take as u32;
                    budget -= take;
                    queued -= take;
                    served += take;
                    if front.1 == 0 {
                        queue.pop_front();
                    }
                    if take < 1.0 {
                        break;
                    }
                }
                while let Some(&(at, c)) = x2_flight.front().filter(|f| f.0 <= t) {
                    let _ = at;
                    x2_flight.pop_front();
                    queue.push_back((c, pdu));
                    queued += pdu as f64;
                    highest = Some(c);
                }
                if t >= next_report {
                    let d =
                        desired_buffer_bytes(rate, target + period + 2 * x2, 3000, queued as u64);
                    reports.push_back((
                        t + x2,
                        Ddds {
                            desired_buffer_bytes: d,
                            highest_transmitted: highest,
                            ..REPORT
                        },
                    ));
                    next_report += period;
                }
                while let Some(&(at, r)) = reports.front().filter(|r| r.0 <= t) {
                    let _ = at;
                    reports.pop_front();
                    credit.on_report(&r);
                }
                let to_secondary = if controlled {
                    credit.fits(pdu)
                } else {
                    count % 2 == 1
                };
                if to_secondary {
                    credit.sent(count, pdu, t);
                    x2_flight.push_back((t + x2, count));
                }
                count += 1;
                if t > 500 * MS {
                    peak = peak.max(queued);
                    sum_q += queued;
                    samples += 1;
                }
                t += gap;
            }
            (peak, sum_q / samples as f64, served * 8.0 / 2.0 / 1e6)
        };
        let (peak, mean, mbps) = run(true);
        // Near the target: 62 500 bytes, with one report period of overshoot at most.
        assert!(mean > 30_000.0 && mean < 95_000.0, "mean queue {mean}");
        assert!(peak < 160_000.0, "peak queue {peak}");
        assert!(mbps > 48.0, "the secondary stays busy: {mbps} Mbit/s");
        let (peak, _, _) = run(false);
        assert!(peak > 5_000_000.0, "a static half overflows it: {peak}");
    }
}
