//! dcemu: a Dual Connectivity emulator.
//!
//! The core (`base`, `link`, `pdcp`, `engine`) is pure: every component takes `now` (nanoseconds of
//! a clock it never reads) and reports its next deadline, so the same code runs in real
//! time (`io`) and in virtual time (tests, `pdcp-replay`).

pub mod base;
pub mod config;
pub mod engine;
pub mod io;
pub mod link;
pub mod pdcp;
pub mod replay;
