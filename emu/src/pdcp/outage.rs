//! A secondary leg in a radio link outage, and the master's PDCP sending again, on its own
//! leg, what it had sent there: what a network does when its secondary cell fades (an MCG
//! fallback of the split bearer's undelivered PDUs).
//!
//! TS 38.425 gives the pieces: a DL DATA DELIVERY STATUS report may carry the cause value
//! "radio link outage" (and "radio link resume") and the highest NR PDCP SN the secondary
//! has delivered; the node hosting PDCP may send PDUs again, through another node. When a
//! secondary declares an outage, and what the master sends again, 3GPP leaves open.
//! dcemu's rule:
//!
//! - the secondary ([`Stall`]) is in an outage when it has held the bearer's PDUs and
//!   served none of them for `outage_after` (a cell in a deep fade schedules nothing), and
//!   says so in a report made at once, not at the next period;
//! - the master keeps a copy of every PDU it sends the secondary ([`Copies`]) until a
//!   report says the secondary served it; on an outage report it sends every copy left on
//!   its own leg, and sends the secondary nothing new until a report says it serves again.
//!   What the secondary still holds it serves when the fade ends: the first sign that the
//!   leg is back. Those originals of what was sent again are discarded as they leave the leg
//!   (`FlowControl::take_stranded`), as re-establishing the failed leg's RLC would discard
//!   them: one served more than half the SN space late would desynchronise the receiver.
//!
//! "Served" is a PDU leaving the secondary's queueing stage (a cell's PDU on the air and
//! acknowledged by HARQ), which the secondary knows at once; PDUs are served in the order
//! they arrived but for RLC retransmissions, so the highest COUNT served stands for the
//! report's "highest delivered".

use std::collections::VecDeque;

use crate::base::time::Nanos;

/// The secondary's side: when it last served the bearer and since when it has held PDUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stall {
    /// When the bearer's queue last went from empty to holding a PDU (`None`: found
    /// empty since).
    busy_since: Option<Nanos>,
    last_served: Option<Nanos>,
    highest_served: Option<u32>,
}

impl Stall {
    /// A PDU reached the secondary at `now`, finding the bearer's queue empty or not.
    pub fn arrived(&mut self, now: Nanos, queue_was_empty: bool) {
        if queue_was_empty || self.busy_since.is_none() {
            self.busy_since = Some(now);
        }
    }

    /// The PDU `count` left the secondary's queue at `at`.
    pub fn served(&mut self, count: u32, at: Nanos) {
        self.last_served = Some(self.last_served.map_or(at, |l| l.max(at)));
        self.highest_served = Some(self.highest_served.map_or(count, |h| h.max(count)));
    }

    /// The queue was found empty: no stall until the next PDU arrives.
    pub fn idle(&mut self) {
        self.busy_since = None;
    }

    /// Since when the secondary has held PDUs without serving one (`None`: not holding).
    pub fn stalled_since(&self) -> Option<Nanos> {
        let busy = self.busy_since?;
        Some(self.last_served.map_or(busy, |l| l.max(busy)))
    }

    /// The instant it is in an outage if nothing is served before (`None`: not holding).
    pub fn outage_at(&self, after: Nanos) -> Option<Nanos> {
        self.stalled_since().map(|s| s + after)
    }

    pub fn highest_served(&self) -> Option<u32> {
        self.highest_served
    }

    /// A new secondary node: nothing held, nothing served.
    pub fn restart(&mut self) {
        *self = Stall::default();
    }
}

/// The master's copies of the PDUs it sent one secondary (`T`: the packet), in COUNT
/// order, at most `limit_bytes` of them.
#[derive(Debug)]
pub struct Copies<T> {
    queue: VecDeque<(u32, u32, T)>,
    bytes: u64,
    limit_bytes: u64,
    /// Copies not kept because the buffer was full (those PDUs cannot be sent again).
    refused: u64,
}

impl<T> Copies<T> {
    pub fn new(limit_bytes: u64) -> Self {
        Copies {
            queue: VecDeque::new(),
            bytes: 0,
            limit_bytes,
            refused: 0,
        }
    }

    /// Keeps `item`, the copy of PDU `count` of `len` bytes; given back when it does not
    /// fit (the older copies are nearer an outage's gap, so they stay).
    pub fn keep(&mut self, count: u32, len: u32, item: T) -> Result<(), T> {
        if self.bytes + len as u64 > self.limit_bytes {
            self.refused += 1;
            return Err(item);
        }
        debug_assert!(self.queue.back().is_none_or(|b| b.0 < count));
        self.queue.push_back((count, len, item));
        self.bytes += len as u64;
        Ok(())
    }

    /// The secondary served every PDU up to `count`: their copies go to `free`.
    pub fn served_upto(&mut self, count: u32, mut free: impl FnMut(T)) {
        while self.queue.front().is_some_and(|f| f.0 <= count) {
            let (_, len, item) = self.queue.pop_front().expect("front");
            self.bytes -= len as u64;
            free(item);
        }
    }

    /// Every copy left, oldest first (to be sent again, or freed).
    pub fn take_all(&mut self) -> impl Iterator<Item = (u32, T)> + '_ {
        self.bytes = 0;
        self.queue.drain(..).map(|(c, _, item)| (c, item))
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

    pub fn refused(&self) -> u64 {
        self.refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::NS_PER_MS;

    const MS: Nanos = NS_PER_MS;

    #[test]
    fn a_stall_runs_from_the_later_of_the_last_service_and_the_first_arrival() {
        let mut s = Stall::default();
        assert_eq!(s.outage_at(10 * MS), None, "holding nothing");
        s.arrived(5 * MS, true);
        s.arrived(6 * MS, false);
        assert_eq!(s.outage_at(10 * MS), Some(15 * MS));
        // Served at 8 ms: the clock restarts there.
        s.served(0, 8 * MS);
        assert_eq!(s.outage_at(10 * MS), Some(18 * MS));
        // An old service does not pull it back; the highest COUNT is kept.
        s.served(3, 7 * MS);
        s.served(2, 9 * MS);
        assert_eq!(
            (s.outage_at(10 * MS), s.highest_served()),
            (Some(19 * MS), Some(3))
        );
        // Found empty: nothing to stall on, until a PDU arrives at an empty queue at 50 ms.
        s.idle();
        assert_eq!(s.stalled_since(), None);
        s.arrived(50 * MS, true);
        assert_eq!(s.outage_at(10 * MS), Some(60 * MS));
        s.restart();
        assert_eq!((s.stalled_since(), s.highest_served()), (None, None));
    }

    #[test]
    fn a_pdu_arriving_at_a_queue_thought_idle_starts_the_clock() {
        // After `idle`, an arrival that finds others queued (they came since) still starts it.
        let mut s = Stall::default();
        s.arrived(0, true);
        s.idle();
        s.arrived(30 * MS, false);
        assert_eq!(s.stalled_since(), Some(30 * MS));
    }

    #[test]
    fn copies_are_freed_when_served_and_all_taken_at_an_outage() {
        let mut c = Copies::new(4500);
        for count in [3, 5, 8] {
            c.keep(count, 1500, count).unwrap();
        }
        assert_eq!(c.keep(9, 1, 9), Err(9));
        assert_eq!((c.len(), c.bytes(), c.refused()), (3, 4500, 1));
        let mut freed = Vec::new();
        c.served_upto(4, |x| freed.push(x));
        assert_eq!(freed, [3]);
        c.served_upto(4, |x| freed.push(x));
        assert_eq!(freed, [3], "served twice frees once");
        c.keep(10, 1500, 10).unwrap();
        assert_eq!(c.take_all().collect::<Vec<_>>(), [(5, 5), (8, 8), (10, 10)]);
        assert!(c.is_empty() && c.bytes() == 0);
    }
}
