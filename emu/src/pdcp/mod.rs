//! PDCP: sequence numbering and leg selection on the transmit side, duplicate removal and
//! t-Reordering on the receive side (TS 38.323). The offline `pdcp-replay` driver that
//! runs the receiver on a text trace sits a level up, in `src/replay.rs`.
//!
//! Everything here is clock-free: functions take `now` and report deadlines.

pub mod count;
pub mod ddds;
pub mod delay_aware;
pub mod delay_target;
pub mod hold;
pub mod outage;
pub mod rx;
pub mod service_rate;
pub mod tx;

/// What a PDCP entity refuses to be built with (the scenario's validation names the
/// field; these say what is wrong with the value).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PdcpError {
    #[error("PDCP SN length must be 12, 16 or 18 bits, got {0}")]
    SnBits(u8),
    #[error("split batch must be at least 1")]
    ZeroBatch,
    #[error("split ratio needs 1 to {max} weights, got {got}")]
    RatioLength { max: usize, got: usize },
    #[error("split weight {0} is not a finite number >= 0")]
    BadWeight(f64),
    #[error("split ratio has no positive weight")]
    NoPositiveWeight,
    #[error("split has {legs} legs but a ratio of {weights} weights")]
    LegsAndWeights { legs: usize, weights: usize },
    #[error("a bearer needs at least one leg")]
    NoLeg,
    #[error("leg index {leg} >= {max}")]
    LegIndex { leg: usize, max: usize },
    #[error("leg listed twice in {0:?}")]
    LegTwice(Vec<usize>),
    #[error("set_split on a bearer that is not split")]
    NotSplit,
}

pub use count::SnSpace;

pub use rx::{DiscardReason, PdcpRx, RxConfig, RxCounters, RxEvent};
pub use tx::{LegSet, PdcpTx, SplitPattern, TxCounters, TxMode};
