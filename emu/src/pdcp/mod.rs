//! PDCP: sequence numbering and leg selection on the transmit side, duplicate removal and
//! t-Reordering on the receive side (TS 38.323), plus the offline `pdcp-replay` driver.
//!
//! Everything here is clock-free: functions take `now` and report deadlines.

pub mod count;
pub mod replay;
pub mod rx;
pub mod tx;

pub use count::SnSpace;
pub use replay::{run_replay, ReplayOptions};
pub use rx::{DiscardReason, PdcpRx, RxConfig, RxCounters, RxEvent};
pub use tx::{LegSet, PdcpTx, SplitPattern, TxCounters, TxMode};
