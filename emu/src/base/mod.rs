//! The ground floor: plain nanosecond time, the packet descriptor the stages pass around,
//! the buffer pool behind it, and the latency histogram. Imports nothing from the crate.

pub mod histogram;
pub mod packet;
pub mod pool;
pub mod time;

pub use histogram::{HistSummary, Histogram};
pub use packet::{Pkt, PktId};
pub use pool::PacketPool;
pub use time::Nanos;
