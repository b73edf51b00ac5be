//! The simulation mode: the unchanged engine (classifier, PDCP, legs, stats) driven in
//! virtual time, with modelled endpoints (`crate::model`) on both sides instead of real
//! stacks behind TUN devices. It runs as fast as the CPU allows and is deterministic for a
//! scenario's seed; it writes the same stats records as `dcemu run`, then one line per
//! flow.
//!
//! - [`workload`]: the workload file: which flows, their stacks and hosts.
//! - [`driver`]: the event loop joining the engine, the endpoints and the receiving hosts.

pub mod driver;
pub mod workload;

pub use driver::{run, Controllers, FlowResult, SimSummary, DEFAULT_HORIZON_S};
pub use workload::{load_workload, parse_workload, FlowSpec, Transport, Workload};
