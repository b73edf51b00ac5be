//! dcemu: a Dual Connectivity emulator.
//!
//! The code is in rooms stacked by level; a room imports only from rooms on lower levels
//! (`emu/check-levels.sh` enforces it), so the pure core never depends on the drivers:
//!
//! | level | rooms                        | what                                                    |
//! |-------|------------------------------|---------------------------------------------------------|
//! | 0     | [`base`]                     | time, packet descriptor, packet pool, histogram         |
//! | 1     | [`qdisc`]                    | queue disciplines: drop-tail, CoDel, PIE, FQ-CoDel      |
//! | 2     | [`link`], [`pdcp`], [`cell`] | link stages (rate, delay, loss); PDCP tx, rx;           |
//! |       |                              | an LTE cell's downlink (queues, scheduler, fading)      |
//! | 2     | [`model`]                    | modelled endpoints of the simulation mode (RTT, cc, ...) |
//! | 3     | [`config`]                   | scenario file schema, validation, model, trace files    |
//! | 4     | [`engine`]                   | the engine built from a `Scenario`, classifier, records |
//! | 5     | [`io`], [`replay`], [`sim`]  | the real-time driver; the offline `pdcp-replay` driver; |
//! |       |                              | the virtual-time driver with modelled endpoints         |
//!
//! `main.rs` and `src/bin/` sit on top. `base`, `qdisc`, `link`, `pdcp`, `cell` and `engine` are
//! pure: every component takes `now` (nanoseconds of a clock it never reads) and reports its
//! next deadline, and none of them touches files, so the same code runs in real time (`io`)
//! and in virtual time (tests, `pdcp-replay`).

// Only the OS-facing I/O may use `unsafe` (syscalls; see the allows in `src/io/mod.rs`).
#![deny(unsafe_code)]

pub mod base;
pub mod cell;
pub mod config;
pub mod engine;
pub mod io;
pub mod link;
pub mod model;
pub mod pdcp;
pub mod qdisc;
pub mod replay;
pub mod sim;
