//! What the pipeline stages carry: a small `Copy` descriptor of a packet whose bytes live
//! in the runtime's buffer pool. Stages never touch packet bytes, so tests use fake ids.

use super::time::Nanos;

/// Index of a packet buffer in the runtime's pool.
pub type PktId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pkt {
    /// Buffer index (meaningless in unit tests).
    pub id: PktId,
    /// Bytes the rate stage charges: the IP packet plus the PDCP header on downlink.
    pub len: u32,
    /// When the packet entered the emulator.
    pub born: Nanos,
    /// PDCP COUNT assigned by the transmitter (0 on uplink).
    pub count: u32,
    /// Bearer index.
    pub bearer: u16,
}

impl Pkt {
    pub fn new(id: PktId, len: u32, born: Nanos) -> Self {
        Pkt {
            id,
            len,
            born,
            count: 0,
            bearer: 0,
        }
    }
}
