//! HARQ as the cell's scheduler sees it: each transport block fails with probability
//! `bler` (the link adaptation's target: a CQI is the entry a device receives at a block
//! error rate of at most 0.1, TS 38.214 §5.2.2.1), and a failed block is sent again
//! `rtt_slots` later on the same number of PRBs, ahead of new data, up to `max_tx`
//! transmissions in all. A block that fails its last transmission is lost in RLC UM; in
//! RLC AM it is sent again, with a fresh set of transmissions, once the receiver's STATUS
//! report has asked for it (`super::rlc`).
//!
//! Simplifications: every transmission fails with the same probability (no chase
//! combining gain); retransmissions use the CQI of their slot only to be sent, not to size
//! the block; no limit on HARQ processes (16 in NR, 8 in LTE FDD).
//!
//! [`Harq`] keeps the blocks waiting for a retransmission with the packets whose last byte
//! they carry; the cell emits a packet when the block with its last byte is received, so
//! a retransmitted packet arrives after later ones, as NR's RLC delivers it to PDCP (which
//! reorders).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use thiserror::Error;

use super::rlc::Recovery;
use crate::base::packet::Pkt;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HarqSpec {
    /// Probability that a transmission fails, in [0, 0.5].
    pub bler: f64,
    /// Slots from a transmission to its retransmission (>= 1).
    pub rtt_slots: u32,
    /// Transmissions of a block at most, 1 to 8 (1 = no retransmission).
    pub max_tx: u8,
}

#[derive(Debug, Error, PartialEq)]
pub enum HarqError {
    #[error("HARQ block error rate {0}: must be between 0 and 0.5")]
    Bler(f64),
    #[error("HARQ round trip of {0} slots: must be 1 to 1000")]
    Rtt(u32),
    #[error("HARQ transmissions {0}: must be 1 to 8")]
    MaxTx(u8),
}

impl HarqSpec {
    pub fn validate(&self) -> Result<(), HarqError> {
        if !(0.0..=0.5).contains(&self.bler) {
            return Err(HarqError::Bler(self.bler));
        }
        if !(1..=1000).contains(&self.rtt_slots) {
            return Err(HarqError::Rtt(self.rtt_slots));
        }
        if !(1..=8).contains(&self.max_tx) {
            return Err(HarqError::MaxTx(self.max_tx));
        }
        Ok(())
    }
}

/// What becomes of a block that failed a transmission.
#[derive(Debug, PartialEq)]
pub enum Failed {
    /// HARQ sends it again a round trip later.
    Retry,
    /// HARQ gave up; RLC AM sends it again after its recovery.
    Recover,
    /// Lost: its packets, for the caller to drop.
    Lost(Vec<Pkt>),
}

/// A block waiting for its retransmission.
#[derive(Debug)]
pub struct Pending {
    /// The first slot it may go in.
    pub due: u64,
    pub device: usize,
    pub prbs: u32,
    /// HARQ transmissions so far of this RLC transmission (0: an RLC retransmission not
    /// yet sent).
    pub tx: u8,
    /// RLC retransmissions so far.
    pub rlc_retx: u8,
    /// Packets whose last byte it carries.
    pub pkts: Vec<Pkt>,
}

#[derive(Debug)]
pub struct Harq {
    spec: HarqSpec,
    /// RLC AM's recovery of a block HARQ gave up on (`None`: RLC UM, the block is lost).
    recovery: Option<Recovery>,
    rng: SmallRng,
    pending: Vec<Pending>,
    /// Emptied packet lists, reused so that steady state does not allocate.
    spare: Vec<Vec<Pkt>>,
}

impl Harq {
    pub fn new(spec: HarqSpec, recovery: Option<Recovery>, seed: u64) -> Self {
        Harq {
            spec,
            recovery,
            rng: SmallRng::seed_from_u64(seed),
            pending: Vec::new(),
            spare: Vec::new(),
        }
    }

    pub fn spec(&self) -> &HarqSpec {
        &self.spec
    }

    /// Whether the next transmission fails (one draw per transmission).
    pub fn fails(&mut self) -> bool {
        self.spec.bler > 0.0 && self.rng.gen::<f64>() < self.spec.bler
    }

    /// An empty packet list to fill.
    pub fn list(&mut self) -> Vec<Pkt> {
        self.spare.pop().unwrap_or_default()
    }

    /// Gives back a list whose packets were handed on.
    pub fn recycle(&mut self, mut pkts: Vec<Pkt>) {
        pkts.clear();
        self.spare.push(pkts);
    }

    /// A block sent in slot `n` failed its `tx`-th transmission: it waits for slot
    /// `n + rtt` if it has transmissions left, or (RLC AM, retransmissions left) for RLC's
    /// recovery; otherwise its list comes back for the caller to drop.
    pub fn failed(&mut self, n: u64, mut p: Pending) -> Failed {
        let outcome = if p.tx < self.spec.max_tx {
            p.due = n + self.spec.rtt_slots as u64;
            Failed::Retry
        } else {
            match self.recovery {
                Some(r) if p.rlc_retx < r.max_retx => {
                    p.due = n + r.slots;
                    p.tx = 0;
                    p.rlc_retx += 1;
                    Failed::Recover
                }
                _ => return Failed::Lost(p.pkts),
            }
        };
        self.pending.push(p);
        outcome
    }

    /// Whether any block waits.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Takes out the blocks due by slot `n`, oldest first, into `out` (cleared first).
    pub fn take_due(&mut self, n: u64, out: &mut Vec<Pending>) {
        out.clear();
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].due <= n {
                out.push(self.pending.remove(i));
            } else {
                i += 1;
            }
        }
    }

    /// Puts back a block that found no room in its slot: it goes in the next one.
    pub fn defer(&mut self, n: u64, mut p: Pending) {
        p.due = n + 1;
        self.pending.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(device: usize, tx: u8) -> Pending {
        Pending {
            due: 0,
            device,
            prbs: 10,
            tx,
            rlc_retx: 0,
            pkts: vec![Pkt::new(device as u32, 100, 0)],
        }
    }

    #[test]
    fn failures_follow_the_bler_and_blocks_come_back_after_the_round_trip() {
        let spec = HarqSpec {
            bler: 0.1,
            rtt_slots: 8,
            max_tx: 4,
        };
        assert_eq!(spec.validate(), Ok(()));
        let mut h = Harq::new(spec, None, 7);
        let fails = (0..100_000).filter(|_| h.fails()).count();
        assert!((9_600..10_400).contains(&fails), "{fails}");
        assert_eq!(h.failed(5, block(0, 1)), Failed::Retry);
        assert_eq!(h.failed(6, block(1, 3)), Failed::Retry);
        let mut due = Vec::new();
        h.take_due(12, &mut due);
        assert!(due.is_empty());
        h.take_due(13, &mut due);
        assert_eq!((due.len(), due[0].device, due[0].due), (1, 0, 13));
        h.defer(13, due.pop().unwrap());
        h.take_due(14, &mut due);
        let devices: Vec<_> = due.iter().map(|p| p.device).collect();
        assert_eq!(
            devices,
            [1, 0],
            "the deferred block after the one due at 14"
        );
        let last = due.remove(0);
        assert_eq!(last.tx, 3);
        let mut last = last;
        last.tx = 4;
        assert!(
            matches!(h.failed(14, last), Failed::Lost(p) if p.len() == 1),
            "its fourth failure drops it (RLC UM)"
        );
        assert!(h.is_empty());
    }

    #[test]
    fn rlc_am_sends_a_given_up_block_again_after_its_recovery_until_its_last_retx() {
        let spec = HarqSpec {
            bler: 0.1,
            rtt_slots: 4,
            max_tx: 2,
        };
        let recovery = Recovery {
            slots: 44,
            max_retx: 2,
        };
        let mut h = Harq::new(spec, Some(recovery), 3);
        let mut due = Vec::new();
        assert_eq!(h.failed(10, block(0, 1)), Failed::Retry);
        h.take_due(14, &mut due);
        let mut b = due.pop().unwrap();
        b.tx += 1;
        assert_eq!(
            h.failed(14, b),
            Failed::Recover,
            "HARQ gave up: RLC resends"
        );
        h.take_due(57, &mut due);
        assert!(due.is_empty(), "not before the recovery");
        h.take_due(58, &mut due);
        let b = due.pop().unwrap();
        assert_eq!((b.tx, b.rlc_retx), (0, 1), "a fresh set of transmissions");
        let (mut b, mut n) = (b, 58);
        for retx in 1..=2 {
            b.tx = 2;
            let got = h.failed(n, b);
            if retx == 2 {
                assert!(
                    matches!(got, Failed::Lost(ref p) if p.len() == 1),
                    "after its second RLC retransmission: lost"
                );
                break;
            }
            assert_eq!(got, Failed::Recover);
            n += 44;
            h.take_due(n, &mut due);
            b = due.pop().unwrap();
            assert_eq!(b.rlc_retx, 2);
        }
        assert!(h.is_empty());
    }

    #[test]
    fn no_errors_at_zero_and_bad_specs_are_named() {
        let mut h = Harq::new(
            HarqSpec {
                bler: 0.0,
                rtt_slots: 1,
                max_tx: 1,
            },
            None,
            1,
        );
        assert!((0..10_000).all(|_| !h.fails()));
        let bad = |bler, rtt_slots, max_tx| {
            HarqSpec {
                bler,
                rtt_slots,
                max_tx,
            }
            .validate()
            .unwrap_err()
            .to_string()
        };
        assert!(bad(0.6, 8, 4).contains("0.6"));
        assert!(bad(f64::NAN, 8, 4).contains("NaN"));
        assert!(bad(0.1, 0, 4).contains("0 slots"));
        assert!(bad(0.1, 8, 9).contains("transmissions 9"));
    }
}
