//! The scenario file (TOML): what it may say, its defaults (the reference testbed's), and
//! validation that names the offending field and the allowed range before anything starts.
//!
//! Parsing is two steps: serde reads the file into the `*File` structs of [`schema`]
//! (unknown fields and wrong types are rejected with their path), then
//! [`validate()`] checks ranges and cross references and produces the validated [`scenario`] the
//! engine is built from. [`load()`] ties the steps together; [`trace_file`] reads the
//! bandwidth traces a scenario names; [`input`] is how every file dcemu is given is read
//! (regular files below a size limit) and how a message cuts what it echoes.

pub mod input;
pub mod load;
pub mod scenario;
pub mod schema;
pub mod trace_file;
pub mod validate;

pub use input::{
    clip, clip_echoes, clip_plain, read_input, read_toml_input, ECHO_LIMIT, INPUT_LIMIT, TOML_LIMIT,
};
pub use load::{load, parse, parse_toml};
pub use scenario::{
    Bearer, CellLeg, Change, ChangeKind, FlowSpec, HoldSpec, Leg, Pdcp, Rule, Scenario, SnEvent,
    Split, SplitPolicy,
};
pub use schema::{
    default_toml, BearerFile, BearerMode, CellDeviceFile, CellFile, ChangeFile, DelayFile,
    DirectionFile, DirectionName, InfWord, LegFile, LossFile, MatchFile, MsOrInf, PdcpFile,
    PortValue, RateValue, ScenarioFile, SplitChangeFile, SplitFile, StatsFile, TopologyFile,
    TraceFile,
};
pub use trace_file::{load_csv, load_mahimahi, parse_csv, parse_mahimahi};
pub use validate::{fmt_num, parse_rate, validate, FieldError, LIMITS, MAX_T_REORDERING_MS};
