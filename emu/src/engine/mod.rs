//! The emulator core: the engine that wires classifier, PDCP and legs together, the bearer
//! classifier, and the stats records the engine fills in. Built from a validated
//! [`crate::config::Scenario`]; clock-free like everything below it.

pub mod classifier;
// The room is named after its main part; classifier and records sit beside it.
#[allow(clippy::module_inception)]
pub mod engine;
pub mod record;

pub use classifier::{five_tuple, Classifier, Dir, FiveTuple};
pub use engine::{Engine, Output};
pub use record::{BearerRecord, DirRecord, EngineCounters, LegRecord, Record, RuntimeRecord};
