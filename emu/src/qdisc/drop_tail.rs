//! A drop-tail FIFO of packet descriptors, bounded in packets and/or bytes.
//!
//! This is the rate stage's queue (netem `limit`, mahimahi `droptail`). A packet is refused
//! when accepting it would exceed either limit; the caller owns the refused packet.

use std::collections::VecDeque;

use crate::base::packet::Pkt;

/// Capacity reserved up front so the hot path does not reallocate for typical limits.
const DEFAULT_CAPACITY: usize = 128;
/// Never reserve more than this up front, even for huge limits (the deque grows if needed).
const MAX_PREALLOC: usize = 16 * 1024;

#[derive(Debug, Clone)]
pub struct DropTail {
    /// Maximum packets held; `None` = unlimited.
    pub limit_packets: Option<u32>,
    /// Maximum bytes held (sum of `Pkt::len`); `None` = unlimited.
    pub limit_bytes: Option<u64>,
    q: VecDeque<Pkt>,
    bytes: u64,
}

impl DropTail {
    pub fn new(limit_packets: Option<u32>, limit_bytes: Option<u64>) -> Self {
        let cap = limit_packets.map_or(DEFAULT_CAPACITY, |l| (l as usize).min(MAX_PREALLOC));
        DropTail {
            limit_packets,
            limit_bytes,
            q: VecDeque::with_capacity(cap),
            bytes: 0,
        }
    }

    /// Appends `p`, or gives it back if either limit would be exceeded (tail drop).
    pub fn push(&mut self, p: Pkt) -> Result<(), Pkt> {
        if let Some(l) = self.limit_packets {
            if self.q.len() as u64 + 1 > l as u64 {
                return Err(p);
            }
        }
        if let Some(l) = self.limit_bytes {
            if self.bytes + p.len as u64 > l {
                return Err(p);
            }
        }
        self.bytes += p.len as u64;
        self.q.push_back(p);
        Ok(())
    }

    pub fn front(&self) -> Option<&Pkt> {
        self.q.front()
    }

    /// Puts `p` back at the head (a packet just popped: no limit applies).
    pub fn push_front(&mut self, p: Pkt) {
        self.bytes += p.len as u64;
        self.q.push_front(p);
    }

    pub fn pop(&mut self) -> Option<Pkt> {
        let p = self.q.pop_front()?;
        self.bytes -= p.len as u64;
        Some(p)
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// Sum of `len` over the packets held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Removes and returns the packets `take` selects; the others keep their order. `take`
    /// sees each packet once, in order.
    pub fn take_where(&mut self, mut take: impl FnMut(&Pkt) -> bool) -> Vec<Pkt> {
        let mut out = Vec::new();
        let mut kept = VecDeque::with_capacity(self.q.len());
        for p in self.q.drain(..) {
            if take(&p) {
                self.bytes -= p.len as u64;
                out.push(p);
            } else {
                kept.push_back(p);
            }
        }
        self.q = kept;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: u32, len: u32) -> Pkt {
        Pkt::new(id, len, 0)
    }

    #[test]
    fn unlimited_accepts_everything_in_order() {
        let mut q = DropTail::new(None, None);
        for i in 0..1000 {
            q.push(pkt(i, 100 + i)).unwrap();
        }
        assert_eq!(q.len(), 1000);
        assert_eq!(q.bytes(), (0..1000u64).map(|i| 100 + i).sum::<u64>());
        for i in 0..1000 {
            assert_eq!(q.front().unwrap().id, i);
            assert_eq!(q.pop().unwrap().id, i);
        }
        assert!(q.is_empty());
        assert_eq!(q.bytes(), 0);
        assert!(q.pop().is_none());
    }

    #[test]
    fn packet_limit_drops_at_tail() {
        let mut q = DropTail::new(Some(3), None);
        for i in 0..3 {
            q.push(pkt(i, 1500)).unwrap();
        }
        assert_eq!(q.push(pkt(3, 40)), Err(pkt(3, 40)));
        assert_eq!(q.len(), 3);
        q.pop();
        q.push(pkt(4, 40)).unwrap();
        assert_eq!(q.len(), 3);
        assert_eq!(q.bytes(), 1500 * 2 + 40);
    }

    #[test]
    fn byte_limit_is_inclusive_and_per_packet() {
        let mut q = DropTail::new(None, Some(4000));
        q.push(pkt(0, 1500)).unwrap();
        q.push(pkt(1, 1500)).unwrap();
        // 4500 > 4000: dropped, but a smaller packet that fits exactly is accepted.
        assert!(q.push(pkt(2, 1500)).is_err());
        q.push(pkt(3, 1000)).unwrap();
        assert_eq!(q.bytes(), 4000);
        assert!(q.push(pkt(4, 1)).is_err());
    }

    #[test]
    fn both_limits_apply() {
        let mut q = DropTail::new(Some(2), Some(100));
        q.push(pkt(0, 10)).unwrap();
        assert!(q.push(pkt(1, 91)).is_err()); // bytes
        q.push(pkt(2, 90)).unwrap();
        assert!(q.push(pkt(3, 0)).is_err()); // packets
    }
}
