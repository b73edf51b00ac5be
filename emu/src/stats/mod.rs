//! Statistics: the JSON-lines records dcemu writes, and the histogram they use.
pub mod histogram;
pub mod record;

pub use histogram::{HistSummary, Histogram};
pub use record::{BearerRecord, DirRecord, EngineCounters, LegRecord, Record, RuntimeRecord};
