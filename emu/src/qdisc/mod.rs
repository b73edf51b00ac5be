//! Queue disciplines: the drop-tail FIFO and the active queue managements (CoDel, RFC
//! 8289; PIE, RFC 8033; FQ-CoDel, RFC 8290) that a leg's rate stage (`link/rate.rs`) and a
//! cell's per-device queues (`cell/cell.rs`) run. Each is sans-IO: it is handed the
//! instant of every enqueue and dequeue and never reads a clock.

pub mod codel;
pub mod drop_tail;
pub mod fq_codel;
pub mod managed;
pub mod pie;
pub mod spec;

pub use drop_tail::DropTail;
pub use managed::{Aqm, Managed, Refused};
pub use spec::{AqmSpec, AQM_MTU};

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
