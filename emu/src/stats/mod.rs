//! Statistics: the JSON-lines records dcemu writes.
pub mod record;

pub use record::{BearerRecord, DirRecord, EngineCounters, LegRecord, Record, RuntimeRecord};
