//! The ground floor: plain nanosecond time, the packet descriptor the stages pass around,
//! the buffer pool behind it, the latency histogram and a queue's limit in bytes. Imports nothing from the crate.

pub mod ecn;
pub mod histogram;
#[cfg(test)]
pub(crate) mod ks;
pub mod limit;
pub mod packet;
pub mod pool;
pub mod time;

pub use histogram::{HistSummary, Histogram};
pub use limit::limit_in_bytes;
pub use packet::{Pkt, PktId};
pub use pool::PacketPool;
pub use time::Nanos;
