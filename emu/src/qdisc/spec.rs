//! What a scenario asks of a queue's discipline, and the discipline built from it.

use super::codel::{Codel, CodelParams};
use super::fq_codel::{FqCodel, FqCodelParams};
use super::managed::Aqm;
#[cfg(doc)]
use super::managed::Managed;
use super::pie::{Pie, PieParams};
use crate::base::time::Nanos;

/// The largest packet an AQM reckons with (its backlog rules): an Ethernet MTU.
pub const AQM_MTU: u64 = 1500;

/// An AQM for a queue (a leg's rate stage, a cell's device queue), its times in
/// nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AqmSpec {
    Codel {
        target: Nanos,
        interval: Nanos,
        ecn: bool,
    },
    Pie {
        target: Nanos,
        t_update: Nanos,
        ecn: bool,
    },
    /// FQ-CoDel with RFC 8290's flows and quantum; the queue's packet limit is its limit
    /// ([`Managed::with_aqm`]).
    FqCodel {
        target: Nanos,
        interval: Nanos,
        ecn: bool,
    },
}

impl AqmSpec {
    /// The AQM itself, for packets of at most `mtu` bytes; PIE draws from `seed`.
    pub fn build(self, mtu: u64, seed: u64) -> Aqm {
        match self {
            AqmSpec::Codel {
                target,
                interval,
                ecn,
            } => Aqm::Codel(Codel::new(CodelParams::new(target, interval, mtu, ecn))),
            AqmSpec::Pie {
                target,
                t_update,
                ecn,
            } => {
                let p = PieParams {
                    target,
                    t_update,
                    ..PieParams::new(mtu, ecn)
                };
                Aqm::Pie(Pie::new(p, 0, seed))
            }
            AqmSpec::FqCodel {
                target,
                interval,
                ecn,
            } => {
                let codel = CodelParams::new(target, interval, mtu, ecn);
                Aqm::FqCodel(FqCodel::new(FqCodelParams::new(codel)))
            }
        }
    }
}
