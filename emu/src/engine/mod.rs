//! The emulator core: the engine that wires classifier, PDCP and legs together, the bearer
//! classifier, the PDCP entities' processing delay, and the stats records the engine fills in, and a cell leg's downlink. Built from a validated
//! [`crate::config::Scenario`]; clock-free like everything below it.

pub mod cell_leg;
pub mod classifier;
pub mod delivered;
// The room is named after its main part; classifier and records sit beside it.
#[allow(clippy::module_inception)]
pub mod engine;
pub mod flow_control;
pub mod processing;
pub mod record;
pub mod secondary;
mod state;

pub use cell_leg::{CellDirection, Downlink};
pub use classifier::{five_tuple, Classifier, Dir, FiveTuple};
pub use engine::{Engine, LegExit, Output};
pub use record::{
    BearerRecord, CellRecord, DeviceRecord, DirRecord, EngineCounters, LegRecord, Record,
    RuntimeRecord,
};
