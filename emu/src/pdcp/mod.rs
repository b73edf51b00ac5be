//! PDCP: sequence numbering and leg selection on the transmit side, duplicate removal and
//! t-Reordering on the receive side (TS 38.323). The offline `pdcp-replay` driver that
//! runs the receiver on a text trace sits a level up, in `src/replay.rs`.
//!
//! Everything here is clock-free: functions take `now` and report deadlines.

pub mod count;
pub mod rx;
pub mod tx;

pub use count::SnSpace;
pub use rx::{DiscardReason, PdcpRx, RxConfig, RxCounters, RxEvent};
pub use tx::{LegSet, PdcpTx, SplitPattern, TxCounters, TxMode};
