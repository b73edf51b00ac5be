//! An LTE or NR cell's downlink shared by several devices (UEs): a drop-tail queue per device at
//! the base station, a MAC scheduler every TTI of 1 ms (round robin or proportional fair),
//! and per device a capacity that follows its channel: mean SINR × a flat Rayleigh fading
//! gain per TTI -> CQI (ns-3 LENA's PiroEW2010 AMC) -> bits per resource block (CQI table
//! efficiency × 120 data resource elements). Pure and seeded like the link stages: methods
//! take `now`, the cell reports its next deadline, departures carry exact instants, and the
//! same seed gives the same output however often it is polled.
//!
//! - [`amc`]: CQI table, SINR -> CQI, bits per RB and TTI, RBs per bandwidth, RBG size.
//! - [`fading`]: Rayleigh block fading, AR(1) in time with `ρ = J0(2π f_d T)`, exact jumps.
//! - [`scheduler`]: round robin and proportional fair over RBs / RBGs.
//! - [`cell`](mod@cell): the cell: specs, queues, TTI loop, counters, capacity series.
//! - [`capacity`]: a capacity series' mean and spread, and as a mahimahi trace.
//! - [`nr`]: an NR carrier: numerology, PRBs, TS 38.214 MCS, CQI and TBS, layers, TDD.
//! - [`phy`]: LTE or NR, as the TTI loop asks for them.
//! - [`harq`]: block errors at a target rate and retransmissions a round trip later.
//! - [`rlc`]: what a block HARQ gave up on becomes: sent again after RLC AM's recovery, or
//!   lost (UM).
//! - [`blockage`]: line-of-sight blockage, a two-state process or fixed periods.
//!
//! An NR cell runs the same loop with the carrier's slot as its TTI, its PRBs, MCS and
//! TBS, HARQ on (by default) and optional blockage; `docs/endc.md` says what is 3GPP and
//! what is simplified.
//!
//! Limits (what it does not model): no HARQ in an LTE cell unless given (every transport
//! block arrives), no frequency-selective fading (one gain for all RBs of a TTI, so PF
//! gains nothing from frequency diversity), no uplink, no CQI reporting delay or
//! quantization error (the scheduler sees the current TTI's CQI exactly), no control
//! channel limits (any number of devices per TTI), no PSS/SSS/PBCH overhead, one
//! transport block per device per TTI (no MIMO layers), padding of a device's last RB is
//! lost. A scenario wires a cell in as a leg's downlink (`[legs.downlink.cell]`,
//! `config::CellLeg`, `engine::CellDirection`).

pub mod amc;
pub mod blockage;
pub mod capacity;
// The room and its main file share the name the issue gave them.
#[allow(clippy::module_inception)]
pub mod cell;
pub mod fading;
pub mod harq;
pub mod nr;
pub mod phy;
pub mod rlc;
pub mod scheduler;

pub use amc::{cqi_from_sinr_db, rbs_for_bandwidth, tb_bits};
pub use blockage::{Blockage, BlockageSpec};
pub use capacity::{mahimahi_opportunities, summarize, CapacitySummary, Opportunities, Summary};
pub use cell::{
    capacity_series, device_seed, phy_capacity_iter, phy_capacity_series, Cell, CellCounters,
    CellSpec, DeviceCounters, DeviceSpec, DEFAULT_QUEUE_BYTES,
};
pub use fading::{Fading, FadingModel};
pub use harq::{Failed, HarqSpec, Pending};
pub use nr::{McsTable, NrCarrier, NrSpec, TddPattern};
pub use phy::Phy;
pub use rlc::{Recovery, RlcError, RlcSpec};
pub use scheduler::{Demand, Scheduler, SchedulerSpec};

#[cfg(test)]
mod nr_cell_tests;
