//! A PDCP entity's processing time (`pdcp.processing_ms`): a fixed delay that keeps order.
//! The reference study's PDCP entities were NFQUEUE proxies that took about 1 ms per
//! packet; the engine puts one line where packets enter the emulated network and one where
//! they leave it, so that the proxies' cost can be measured instead of assumed.

use std::collections::VecDeque;

use crate::base::time::Nanos;

/// Items wait `delay` each and leave in the order they came (FIFO, no limit).
#[derive(Debug)]
pub struct FixedDelay<T> {
    delay: Nanos,
    waiting: VecDeque<(Nanos, T)>,
}

impl<T> FixedDelay<T> {
    pub fn new(delay: Nanos) -> Self {
        FixedDelay {
            delay,
            waiting: VecDeque::new(),
        }
    }

    /// `item` arrives at `at`; it leaves at `at + delay`, never before an earlier arrival.
    pub fn push(&mut self, at: Nanos, item: T) {
        let due = self
            .waiting
            .back()
            .map_or(at + self.delay, |&(last, _)| last.max(at + self.delay));
        self.waiting.push_back((due, item));
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.waiting.front().map(|w| w.0)
    }

    /// The next item due by `now`, with the instant it was due (items leave in order).
    pub fn pop_due(&mut self, now: Nanos) -> Option<(Nanos, T)> {
        if self.waiting.front()?.0 <= now {
            self.waiting.pop_front()
        } else {
            None
        }
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::NS_PER_MS;

    #[test]
    fn delays_each_item_and_keeps_order() {
        let ms = NS_PER_MS;
        let mut d = FixedDelay::new(ms);
        assert_eq!(d.next_deadline(), None);
        d.push(0, 'a');
        d.push(ms / 2, 'b');
        d.push(ms / 2, 'c');
        assert_eq!(d.next_deadline(), Some(ms));
        assert_eq!(d.pop_due(ms - 1), None);
        assert_eq!(d.pop_due(ms), Some((ms, 'a')));
        assert_eq!(d.pop_due(ms), None);
        // Polled late: each leaves with its own instant.
        assert_eq!(d.pop_due(10 * ms), Some((3 * ms / 2, 'b')));
        assert_eq!(d.pop_due(10 * ms), Some((3 * ms / 2, 'c')));
        assert!(d.is_empty());
    }

    #[test]
    fn an_arrival_stamped_earlier_still_leaves_after_those_ahead() {
        let mut d = FixedDelay::new(5);
        d.push(10, 1);
        d.push(8, 2); // stamped before the first: waits behind it
        assert_eq!(d.pop_due(100), Some((15, 1)));
        assert_eq!(d.pop_due(100), Some((15, 2)));
    }
}
