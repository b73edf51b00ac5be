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
    /// A hash of the packet's 5-tuple (`engine/classifier.rs`), the same for every packet
    /// of a connection: FQ-CoDel's flow queue (`qdisc/fq_codel.rs`).
    pub flow: u16,
    /// The IP header's ECN field (RFC 3168): `NOT_ECT`, `ECT1`, `ECT0` or `CE`; a queue's
    /// AQM sets `CE` on an ECN-capable packet instead of dropping it.
    pub ecn: u8,
}

pub const NOT_ECT: u8 = 0b00;
pub const ECT1: u8 = 0b01;
pub const ECT0: u8 = 0b10;
pub const CE: u8 = 0b11;

impl Pkt {
    pub fn new(id: PktId, len: u32, born: Nanos) -> Self {
        Pkt {
            id,
            len,
            born,
            count: 0,
            bearer: 0,
            flow: 0,
            ecn: NOT_ECT,
        }
    }

    /// ECN-capable (ECT(0) or ECT(1)): an AQM may mark it instead of dropping it.
    pub fn ect(&self) -> bool {
        self.ecn == ECT0 || self.ecn == ECT1
    }
}
