//! Link emulation stages: what one direction of one radio leg does to packets.
//!
//! Stage order follows the reference testbed (two stacked netem qdiscs):
//! rate stage (serialization + drop-tail queue) -> loss -> delay stage (jitter + limit).
//! Every stage is pure: methods take `now`, stages report their next deadline, and
//! departures carry their exact instants so late polling changes nothing. `now` must
//! never decrease from one call to the next.

pub mod codel;
pub mod delay;
pub mod direction;
pub mod fq_codel;
pub mod loss;
pub mod pie;
pub mod queue;
pub mod rate;
pub mod trace;

pub use delay::{DelayDist, DelayStage};
pub use direction::{sub_seed, LinkCounters, LinkDirection, LinkSpec, LinkTail, Served};
pub use loss::{Loss, LossModel};
pub use queue::DropTail;
pub use rate::{Aqm, RateSpec, RateStage, Refused};
pub use trace::{RateTrace, OPPORTUNITY_BYTES};

/// What a queue's AQM (CoDel, PIE, or CoDel over FQ-CoDel's flows) did, cumulative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AqmCounters {
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    pub marked_packets: u64,
}

impl std::ops::AddAssign for AqmCounters {
    fn add_assign(&mut self, o: AqmCounters) {
        self.dropped_packets += o.dropped_packets;
        self.dropped_bytes += o.dropped_bytes;
        self.marked_packets += o.marked_packets;
    }
}
