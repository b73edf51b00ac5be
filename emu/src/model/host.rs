//! The receiving host between the network and a modelled endpoint: a socket receive
//! buffer of `capacity` bytes (Linux's `rmem`, charged per packet with its `truesize`, the
//! packet plus the kernel's bookkeeping), drained by an application that spends
//! `service` per packet (a CPU-bound receiver such as aioquic). A packet that arrives
//! while the buffer holds more than `capacity` bytes is dropped, as Linux's
//! `__udp_enqueue_schedule_skb` drops it: the cause of the losses the study saw with the
//! default UDP buffer when PDCP releases a burst.

use std::collections::VecDeque;

use crate::base::time::Nanos;

#[derive(Clone, Debug)]
pub struct ReceiveBuffer<T> {
    capacity: u64,
    /// Bytes charged per packet beyond its length (skb and shared info).
    overhead: u64,
    service: Nanos,
    used: u64,
    queue: VecDeque<(T, u64)>,
    /// When the application finishes the packet at the head (None: idle).
    busy_until: Option<Nanos>,
    pub drops: u64,
    pub packets: u64,
    pub max_used: u64,
}

impl<T> ReceiveBuffer<T> {
    /// `capacity` 0 means unlimited (a TCP receiver, whose window bounds it instead).
    pub fn new(capacity: u64, overhead: u64, service: Nanos) -> Self {
        ReceiveBuffer {
            capacity,
            overhead,
            service,
            used: 0,
            queue: VecDeque::new(),
            busy_until: None,
            drops: 0,
            packets: 0,
            max_used: 0,
        }
    }

    /// A packet of `len` bytes arrives; false if it was dropped.
    pub fn offer(&mut self, now: Nanos, item: T, len: usize) -> bool {
        if self.capacity > 0 && self.used > self.capacity {
            self.drops += 1;
            return false;
        }
        let charge = len as u64 + self.overhead;
        self.used += charge;
        self.max_used = self.max_used.max(self.used);
        self.packets += 1;
        self.queue.push_back((item, charge));
        if self.busy_until.is_none() {
            self.busy_until = Some(now + self.service);
        }
        true
    }

    /// When the application next takes a packet.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.busy_until
    }

    /// The packet the application has finished by `now`, if any (call until None).
    pub fn take(&mut self, now: Nanos) -> Option<T> {
        let t = self.busy_until.filter(|&t| t <= now)?;
        let (item, charge) = self.queue.pop_front()?;
        self.used -= charge;
        self.busy_until = (!self.queue.is_empty()).then_some(t + self.service);
        Some(item)
    }

    pub fn used(&self) -> u64 {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_overflows_a_small_buffer_read_by_a_slow_application() {
        // 10 kB buffer, 1000-byte packets charged 1000 + 280: the 9th arrives over the limit
        // (8 x 1280 = 10240 > 10000) and is dropped, as is every later one of the burst.
        let mut b = ReceiveBuffer::new(10_000, 280, 100_000);
        let kept: Vec<bool> = (0..12).map(|i| b.offer(0, i, 1000)).collect();
        assert_eq!(kept.iter().filter(|&&k| k).count(), 8);
        assert_eq!(b.drops, 4);
        assert!(!kept[8] && kept[7]);
        // The application takes one every 100 µs.
        assert_eq!(b.take(50_000), None);
        assert_eq!(b.take(100_000), Some(0));
        assert_eq!(b.take(100_000), None);
        assert_eq!(b.next_deadline(), Some(200_000));
        assert_eq!(b.take(200_000), Some(1));
        // Room again: 6 left x 1280 = 7680 <= 10000.
        assert!(b.offer(200_000, 99, 1000));
    }

    #[test]
    fn an_immediate_application_and_an_unlimited_buffer_never_drop() {
        let mut b = ReceiveBuffer::new(0, 0, 0);
        for i in 0..10_000 {
            assert!(b.offer(5, i, 1500));
        }
        let n = std::iter::from_fn(|| b.take(5)).count();
        assert_eq!((n, b.drops, b.used()), (10_000, 0, 0));
    }
}
