//! SDUs waiting in the master's PDCP before they are numbered: a flow-controlled split
//! whose every leg is at its limit holds what arrives here (`engine/flow_control.rs`).
//!
//! TS 38.323 §5.2.1 numbers an SDU when it is sent, and §5.3 lets the transmitter discard
//! an SDU whose discard timer expired: one discarded here never had a COUNT, so overload
//! costs the transport a loss, never a gap the receiver waits on with t-Reordering. The
//! hold is bounded twice: by a byte limit (the entity's buffer) and by the discard timer
//! (how long an SDU may wait); each has its own counter.

use std::collections::VecDeque;

use serde::Serialize;

use crate::base::histogram::Histogram;
use crate::base::time::Nanos;

/// The hold's counters (cumulative).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HoldCounters {
    /// SDUs that entered the hold, and those that left it to be numbered and sent.
    pub admitted: u64,
    pub released: u64,
    /// SDUs refused because the hold was full, and their bytes.
    pub dropped_full: u64,
    pub dropped_full_bytes: u64,
    /// SDUs discarded when their discard timer expired, and their bytes.
    pub discarded_timer: u64,
    pub discarded_timer_bytes: u64,
    /// The most bytes held at once.
    pub peak_bytes: u64,
}

/// A FIFO of unnumbered SDUs (`T`: the packet), each with the instant it arrived and its
/// length.
#[derive(Debug)]
pub struct SduHold<T> {
    queue: VecDeque<(Nanos, u32, T)>,
    bytes: u64,
    limit_bytes: u64,
    discard_after: Nanos,
    counters: HoldCounters,
    /// How long each released SDU waited, in ns.
    waits: Histogram,
}

impl<T> SduHold<T> {
    /// A hold of at most `limit_bytes` whose SDUs are discarded `discard_after` after
    /// they arrived.
    pub fn new(limit_bytes: u64, discard_after: Nanos) -> Self {
        SduHold {
            queue: VecDeque::new(),
            bytes: 0,
            limit_bytes,
            discard_after,
            counters: HoldCounters::default(),
            waits: Histogram::default(),
        }
    }

    /// The SDU `item` of `len` bytes arrived at `now`; given back when it does not fit
    /// (tail drop: the SDUs already held are older and nearer their turn).
    pub fn admit(&mut self, now: Nanos, len: u32, item: T) -> Result<(), T> {
        if self.bytes + len as u64 > self.limit_bytes {
            self.counters.dropped_full += 1;
            self.counters.dropped_full_bytes += len as u64;
            return Err(item);
        }
        self.queue.push_back((now, len, item));
        self.bytes += len as u64;
        self.counters.admitted += 1;
        self.counters.peak_bytes = self.counters.peak_bytes.max(self.bytes);
        Ok(())
    }

    /// Discards, into `discard`, every SDU whose timer expired by `now`.
    pub fn expire(&mut self, now: Nanos, mut discard: impl FnMut(T)) {
        while let Some(&(at, len, _)) = self.queue.front() {
            if at + self.discard_after > now {
                break;
            }
            let (_, _, item) = self.queue.pop_front().expect("front");
            self.bytes -= len as u64;
            self.counters.discarded_timer += 1;
            self.counters.discarded_timer_bytes += len as u64;
            discard(item);
        }
    }

    /// The length of the SDU next in line.
    pub fn front_len(&self) -> Option<u32> {
        self.queue.front().map(|f| f.1)
    }

    /// Takes the SDU next in line at `now`, to be numbered and sent.
    pub fn release(&mut self, now: Nanos) -> Option<T> {
        let (at, len, item) = self.queue.pop_front()?;
        self.bytes -= len as u64;
        self.counters.released += 1;
        self.waits.record(now.saturating_sub(at));
        Some(item)
    }

    /// When the next discard timer expires.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.queue.front().map(|f| f.0 + self.discard_after)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn counters(&self) -> &HoldCounters {
        &self.counters
    }

    /// How long released SDUs waited (ns).
    pub fn waits(&self) -> &Histogram {
        &self.waits
    }

    /// Every SDU still held, oldest first (at the end of a run, to free their buffers).
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.bytes = 0;
        self.queue.drain(..).map(|(_, _, item)| item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::NS_PER_MS;

    const MS: Nanos = NS_PER_MS;

    #[test]
    fn what_does_not_fit_is_given_back_and_counted() {
        let mut h = SduHold::new(3000, 100 * MS);
        assert_eq!(h.admit(0, 1500, 'a'), Ok(()));
        assert_eq!(h.admit(0, 1500, 'b'), Ok(()));
        assert_eq!(h.admit(0, 1, 'c'), Err('c'));
        assert_eq!((h.bytes(), h.len()), (3000, 2));
        let c = h.counters();
        assert_eq!(
            (
                c.admitted,
                c.dropped_full,
                c.dropped_full_bytes,
                c.peak_bytes
            ),
            (2, 1, 1, 3000)
        );
        // Room again once one leaves, in arrival order.
        assert_eq!(h.release(5 * MS), Some('a'));
        assert_eq!(h.admit(6 * MS, 1500, 'd'), Ok(()));
        assert_eq!(h.front_len(), Some(1500));
        assert_eq!(h.release(7 * MS), Some('b'));
        assert_eq!(h.release(8 * MS), Some('d'));
        assert_eq!(h.release(9 * MS), None);
        assert_eq!(h.counters().released, 3);
        // Waits: 5, 7 and 2 ms.
        assert_eq!(h.waits().count(), 3);
        assert_eq!(h.waits().max(), 7 * MS);
    }

    #[test]
    fn the_discard_timer_drops_the_old_and_keeps_the_young() {
        let mut h = SduHold::new(u64::MAX, 20 * MS);
        for (i, at) in [0, 5, 30].into_iter().enumerate() {
            h.admit(at * MS, 100, i).unwrap();
        }
        assert_eq!(h.next_deadline(), Some(20 * MS));
        let mut gone = Vec::new();
        h.expire(19 * MS, |i| gone.push(i));
        assert!(gone.is_empty());
        // At 25 ms the first two have waited 25 and 20 ms: both expired.
        h.expire(25 * MS, |i| gone.push(i));
        assert_eq!(gone, [0, 1]);
        assert_eq!(h.next_deadline(), Some(50 * MS));
        let c = h.counters();
        assert_eq!((c.discarded_timer, c.discarded_timer_bytes), (2, 200));
        assert_eq!((h.bytes(), h.len()), (100, 1));
        assert_eq!(h.drain().collect::<Vec<_>>(), [2]);
        assert!(h.is_empty() && h.bytes() == 0 && h.next_deadline().is_none());
    }
}
