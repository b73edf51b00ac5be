//! Link emulation stages: what one direction of one radio leg does to packets.
//!
//! Stage order follows the reference testbed (two stacked netem qdiscs):
//! rate stage (serialization + drop-tail queue) -> loss -> delay stage (jitter + limit).
//! Every stage is pure: methods take `now`, stages report their next deadline, and
//! departures carry their exact instants so late polling changes nothing. `now` must
//! never decrease from one call to the next.

pub mod delay;
pub mod direction;
pub mod loss;
pub mod rate;
pub mod trace;

pub use delay::{DelayDist, DelayStage};
pub use direction::{sub_seed, LinkCounters, LinkDirection, LinkSpec, LinkTail, Served};
pub use loss::{Loss, LossModel};
pub use rate::{RateSpec, RateStage};
pub use trace::{RateTrace, OPPORTUNITY_BYTES};
