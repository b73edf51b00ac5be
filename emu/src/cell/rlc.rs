//! RLC as far as the cell's losses go: what happens to the packets of a transport block
//! that failed its last HARQ transmission.
//!
//! - **AM** (acknowledged mode, TS 38.322 §5.3; what an internet bearer uses): the
//!   receiving RLC notices the gap when later data arrives, waits `t-Reassembly`, and
//!   reports it in a STATUS PDU; the sender then sends the missing data again, ahead of
//!   new data. Here the block's packets go back into the air after
//!   [`RlcSpec::recovery_slots`] (`t-Reassembly`, then one HARQ round trip for the STATUS
//!   report on the uplink and the retransmission's scheduling), on the block's PRBs, with a
//!   fresh set of HARQ transmissions; after `max_retx` such retransmissions they are lost
//!   (a real RLC would declare a radio link failure). PDCP then sees a late packet, never a
//!   gap that only its t-Reordering timer ends.
//! - **UM** (unacknowledged mode): the block's packets are lost.
//!
//! The defaults are srsRAN Project's for a 5QI 9 data bearer (AM, `t-Reassembly` 20 ms,
//! `maxRetxThreshold` 32). Not modelled: `t-StatusProhibit` and polling (a STATUS report
//! goes as soon as `t-Reassembly` expires), re-segmentation (a resent block keeps its
//! PRBs, as a HARQ retransmission does), a limit on the AM window.

use thiserror::Error;

use crate::base::time::{Nanos, NS_PER_MS};

/// Largest `t-Reassembly`, ms (TS 38.331 `T-Reassembly`: ms0 to ms200).
pub const MAX_T_REASSEMBLY_MS: f64 = 200.0;
/// Largest `maxRetxThreshold` (TS 38.331: t1 to t32).
pub const MAX_RETX: u8 = 32;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RlcSpec {
    Um,
    Am {
        /// From a block's last failed HARQ transmission to the receiver's STATUS report.
        t_reassembly: Nanos,
        /// RLC retransmissions of a block at most, 1 to 32.
        max_retx: u8,
    },
}

impl Default for RlcSpec {
    fn default() -> Self {
        RlcSpec::Am {
            t_reassembly: 20 * NS_PER_MS,
            max_retx: MAX_RETX,
        }
    }
}

#[derive(Debug, Error, PartialEq)]
pub enum RlcError {
    #[error("RLC t-Reassembly of {0} ms: must be 0 to 200 ms")]
    TReassembly(f64),
    #[error("RLC retransmissions {0}: must be 1 to 32")]
    MaxRetx(u8),
}

impl RlcSpec {
    pub fn validate(&self) -> Result<(), RlcError> {
        if let RlcSpec::Am {
            t_reassembly,
            max_retx,
        } = *self
        {
            let ms = t_reassembly as f64 / NS_PER_MS as f64;
            if ms > MAX_T_REASSEMBLY_MS {
                return Err(RlcError::TReassembly(ms));
            }
            if !(1..=MAX_RETX).contains(&max_retx) {
                return Err(RlcError::MaxRetx(max_retx));
            }
        }
        Ok(())
    }

    /// AM: the slots from a block's last failed transmission to its packets' next one
    /// (`t-Reassembly` in whole slots, plus `harq_rtt_slots` for the STATUS report and
    /// the retransmission's scheduling), and how many times at most; `None` in UM.
    pub fn recovery(&self, tti: Nanos, harq_rtt_slots: u32) -> Option<Recovery> {
        match *self {
            RlcSpec::Um => None,
            RlcSpec::Am {
                t_reassembly,
                max_retx,
            } => Some(Recovery {
                slots: t_reassembly.div_ceil(tti.max(1)) + harq_rtt_slots as u64,
                max_retx,
            }),
        }
    }
}

/// What [`RlcSpec::recovery`] gives HARQ to work with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    pub slots: u64,
    pub max_retx: u8,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn am_waits_t_reassembly_and_a_round_trip_um_gives_up() {
        let slot = NS_PER_MS / 2;
        let am = RlcSpec::default();
        assert_eq!(am.validate(), Ok(()));
        assert_eq!(
            am.recovery(slot, 4),
            Some(Recovery {
                slots: 44,
                max_retx: 32
            }),
            "20 ms of 0.5 ms slots, then 4 slots"
        );
        let odd = RlcSpec::Am {
            t_reassembly: NS_PER_MS + 1,
            max_retx: 1,
        };
        assert_eq!(odd.recovery(NS_PER_MS, 1).unwrap().slots, 3, "rounded up");
        assert_eq!(RlcSpec::Um.recovery(slot, 4), None);
    }

    #[test]
    fn out_of_range_values_are_named() {
        let am = |ms: u64, max_retx| RlcSpec::Am {
            t_reassembly: ms * NS_PER_MS,
            max_retx,
        };
        assert_eq!(am(200, 32).validate(), Ok(()));
        assert_eq!(am(0, 1).validate(), Ok(()));
        assert_eq!(am(201, 4).validate(), Err(RlcError::TReassembly(201.0)));
        assert_eq!(am(20, 0).validate(), Err(RlcError::MaxRetx(0)));
        assert!(am(20, 33)
            .validate()
            .unwrap_err()
            .to_string()
            .contains("33"));
    }
}
