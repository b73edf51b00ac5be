//! CoDel, the Controlled Delay queue discipline (RFC 8289): drops (or, for an ECN-capable
//! packet, marks CE) at dequeue when packets have waited longer than `target` for at least
//! `interval`, and then ever more often, `interval / sqrt(count)` apart, until the sojourn
//! falls below `target` again.
//!
//! Sans-IO: the caller owns the FIFO and hands it in through [`Fifo`] at each dequeue with
//! the instant of that dequeue (for the rate stage, the instant the head starts service).
//! The state machine is the RFC's pseudocode (section 5): `dodequeue`'s `ok_to_drop` with
//! `first_above_time`, the dropping state with `drop_next`, and on re-entry the count kept
//! from the last dropping state when it ended less than 16 intervals ago. A packet is not
//! dropped while the bytes left behind it are at most one maximum-size packet (`mtu`).
//! ECN-capable packets are marked instead of dropped as Linux's `codel_dequeue` does
//! (`include/net/codel_impl.h`): the marked packet is delivered and the schedule advances
//! as for a drop. The square root is taken exactly (the RFC allows Newton's step).

use super::AqmCounters;
use crate::base::packet::Pkt;
use crate::base::time::{Nanos, NS_PER_MS};

/// RFC 8289's defaults (section 4.2/4.3): 5 ms and 100 ms.
pub const DEFAULT_TARGET: Nanos = 5 * NS_PER_MS;
pub const DEFAULT_INTERVAL: Nanos = 100 * NS_PER_MS;
/// The RFC's 16 intervals: re-entering the dropping state within them resumes the count.
const RESUME_INTERVALS: Nanos = 16;

/// A queued packet as CoDel sees it at dequeue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    pub pkt: Pkt,
    /// When it entered the queue.
    pub arrived: Nanos,
    /// ECT(0) or ECT(1): it may be marked CE instead of dropped.
    pub ect: bool,
}

/// The queue CoDel dequeues from.
pub trait Fifo {
    /// The head, removed.
    fn pop(&mut self) -> Option<Queued>;
    /// Bytes still queued (after the pops so far).
    fn backlog_bytes(&self) -> u64;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelParams {
    /// Acceptable standing queue delay.
    pub target: Nanos,
    /// The window over which the sojourn must stay above `target` (about a worst-case RTT).
    pub interval: Nanos,
    /// The largest packet: a backlog of at most this many bytes is never dropped from.
    pub mtu: u64,
    /// Mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
}

impl CodelParams {
    pub fn new(target: Nanos, interval: Nanos, mtu: u64, ecn: bool) -> Self {
        CodelParams {
            target,
            interval,
            mtu,
            ecn,
        }
    }
}

/// One CoDel instance (one queue, or one flow queue of FQ-CoDel).
#[derive(Clone, Debug)]
pub struct Codel {
    p: CodelParams,
    /// When the sojourn may first count as persistently above target (RFC `first_above_time`;
    /// `None` for its 0).
    first_above: Option<Nanos>,
    dropping: bool,
    drop_next: Nanos,
    count: u32,
    lastcount: u32,
    pub counters: AqmCounters,
}

/// The outcome of one `dodequeue`: the packet and whether it may be dropped.
struct Head {
    q: Option<Queued>,
    ok_to_drop: bool,
}

impl Codel {
    pub fn new(p: CodelParams) -> Self {
        Codel {
            p,
            first_above: None,
            dropping: false,
            drop_next: 0,
            count: 0,
            lastcount: 0,
            counters: AqmCounters::default(),
        }
    }

    pub fn params(&self) -> CodelParams {
        self.p
    }

    /// Whether it is in the dropping state.
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// Drops (or marks) since the dropping state was entered, as the control law counts them.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The RFC's `control_law`: `t + interval / sqrt(count)`.
    fn control_law(&self, t: Nanos, count: u32) -> Nanos {
        t + (self.p.interval as f64 / f64::from(count.max(1)).sqrt()).round() as Nanos
    }

    fn dodequeue(&mut self, now: Nanos, q: &mut impl Fifo) -> Head {
        let Some(h) = q.pop() else {
            self.first_above = None;
            return Head {
                q: None,
                ok_to_drop: false,
            };
        };
        let sojourn = now.saturating_sub(h.arrived);
        let mut ok_to_drop = false;
        if sojourn < self.p.target || q.backlog_bytes() <= self.p.mtu {
            self.first_above = None;
        } else {
            match self.first_above {
                None => self.first_above = Some(now + self.p.interval),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        Head {
            q: Some(h),
            ok_to_drop,
        }
    }

    fn mark(&mut self, h: &Queued) -> bool {
        if self.p.ecn && h.ect {
            self.counters.marked_packets += 1;
            return true;
        }
        false
    }

    fn drop_it(&mut self, h: Queued, drop: &mut impl FnMut(Queued)) {
        self.counters.dropped_packets += 1;
        self.counters.dropped_bytes += u64::from(h.pkt.len);
        drop(h);
    }

    /// Dequeues at `now`: the packet to send (with whether CoDel marked it CE), every
    /// packet it dropped on the way handed to `drop`. `None` when the queue is empty.
    pub fn dequeue(
        &mut self,
        now: Nanos,
        q: &mut impl Fifo,
        mut drop: impl FnMut(Queued),
    ) -> Option<(Queued, bool)> {
        let mut r = self.dodequeue(now, q);
        let Some(mut h) = r.q else {
            self.dropping = false;
            return None;
        };
        let mut marked = false;
        if self.dropping {
            if !r.ok_to_drop {
                self.dropping = false;
            } else {
                while self.dropping && now >= self.drop_next {
                    self.count += 1;
                    if self.mark(&h) {
                        marked = true;
                        self.drop_next = self.control_law(self.drop_next, self.count);
                        break;
                    }
                    self.drop_it(h, &mut drop);
                    r = self.dodequeue(now, q);
                    match r.q {
                        None => {
                            self.dropping = false;
                            return None;
                        }
                        Some(next) => h = next,
                    }
                    if !r.ok_to_drop {
                        self.dropping = false;
                    } else {
                        self.drop_next = self.control_law(self.drop_next, self.count);
                    }
                }
            }
        } else if r.ok_to_drop {
            if self.mark(&h) {
                marked = true;
            } else {
                self.drop_it(h, &mut drop);
                r = self.dodequeue(now, q);
                match r.q {
                    Some(next) => h = next,
                    None => {
                        self.enter_dropping(now);
                        return None;
                    }
                }
            }
            self.enter_dropping(now);
        }
        Some((h, marked))
    }

    /// Into the dropping state after its first drop (or mark) at `now`: the count resumes
    /// from the last dropping state when that one was recent and dropped more than once.
    fn enter_dropping(&mut self, now: Nanos) {
        self.dropping = true;
        let delta = self.count.saturating_sub(self.lastcount);
        self.count = if delta > 1
            && now.saturating_sub(self.drop_next) < RESUME_INTERVALS * self.p.interval
        {
            delta
        } else {
            1
        };
        self.lastcount = self.count;
        self.drop_next = self.control_law(now, self.count);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    const MS: Nanos = NS_PER_MS;
    const LEN: u32 = 1500;
    const DEEP: u64 = 10;

    /// A FIFO of 1500-byte packets with their arrival times.
    struct Q(VecDeque<Queued>);

    impl Fifo for Q {
        fn pop(&mut self) -> Option<Queued> {
            self.0.pop_front()
        }
        fn backlog_bytes(&self) -> u64 {
            self.0.iter().map(|q| u64::from(q.pkt.len)).sum()
        }
    }

    fn q_of(arrivals: impl IntoIterator<Item = Nanos>, ect: bool) -> Q {
        Q(arrivals
            .into_iter()
            .enumerate()
            .map(|(i, t)| Queued {
                pkt: Pkt::new(i as u32, LEN, t),
                arrived: t,
                ect,
            })
            .collect())
    }

    fn codel(ecn: bool) -> Codel {
        Codel::new(CodelParams::new(
            DEFAULT_TARGET,
            DEFAULT_INTERVAL,
            u64::from(LEN),
            ecn,
        ))
    }

    /// A standing queue: every packet has waited `wait` when it is dequeued, one every
    /// `every`, with `DEEP - 1` packets queued behind it. Returns the dequeue
    /// instants of the drops (or marks).
    fn standing(c: &mut Codel, wait: Nanos, every: Nanos, until: Nanos, ect: bool) -> Vec<Nanos> {
        let mut hits = Vec::new();
        let mut now = wait; // from the first instant a packet has waited `wait`
        let mut next_id = 0u32;
        while now <= until {
            // each dequeue sees packets that arrived `wait` ago, DEEP of them: more than the
            // one packet behind the head under which CoDel never drops
            let mut q = q_of((0..DEEP).map(|k| now.saturating_sub(wait) + k), ect);
            for x in q.0.iter_mut() {
                x.pkt.id = next_id;
                next_id += 1;
            }
            let before = c.counters;
            let out = c.dequeue(now, &mut q, |_| {});
            let after = c.counters;
            let hit = after.dropped_packets > before.dropped_packets || out.is_some_and(|(_, m)| m);
            if hit {
                hits.push(now);
            }
            now += every;
        }
        hits
    }

    #[test]
    fn below_target_nothing_is_dropped() {
        let mut c = codel(false);
        let hits = standing(&mut c, DEFAULT_TARGET - 1, MS, 2_000 * MS, false);
        assert!(hits.is_empty());
        assert!(!c.dropping());
    }

    #[test]
    fn the_first_drop_comes_one_interval_after_the_sojourn_first_exceeds_target() {
        let mut c = codel(false);
        let hits = standing(&mut c, 20 * MS, MS, 300 * MS, false);
        // first above target at the first dequeue, at 20 ms: first_above_time = 120 ms; the
        // drop is at the first dequeue at or after it.
        assert_eq!(hits[0], 120 * MS);
        assert!(c.dropping());
    }

    #[test]
    fn drops_follow_the_control_law_interval_over_sqrt_count() {
        let mut c = codel(false);
        // dequeues every 0.1 ms: the drop instants land within 0.1 ms of the law's.
        let every = MS / 10;
        let hits = standing(&mut c, 50 * MS, every, 1_000 * MS, false);
        assert!(hits.len() > 10, "{hits:?}");
        // After the first drop at t0 (count 1), drop_next = t0 + 100 ms; each later drop
        // at drop_next advances it by interval / sqrt(count).
        let mut expect = hits[0] + DEFAULT_INTERVAL;
        for (k, &t) in hits.iter().enumerate().skip(1) {
            assert!(
                t >= expect && t < expect + every,
                "drop {k} at {t} expected at {expect}"
            );
            let count = k as f64 + 1.0;
            expect += (DEFAULT_INTERVAL as f64 / count.sqrt()).round() as Nanos;
        }
    }

    #[test]
    fn leaving_the_dropping_state_when_the_sojourn_falls_below_target() {
        let mut c = codel(false);
        standing(&mut c, 30 * MS, MS, 400 * MS, false);
        assert!(c.dropping());
        let mut q = q_of([1_000 * MS - MS], false); // waited 1 ms
        q.0.push_back(Queued {
            pkt: Pkt::new(99, LEN, 0),
            arrived: 1_000 * MS,
            ect: false,
        });
        q.0.push_back(Queued {
            pkt: Pkt::new(100, LEN, 0),
            arrived: 1_000 * MS,
            ect: false,
        });
        let (h, marked) = c
            .dequeue(1_000 * MS, &mut q, |_| panic!("no drop"))
            .unwrap();
        assert_eq!((h.pkt.id, marked), (0, false));
        assert!(!c.dropping());
    }

    #[test]
    fn a_backlog_of_one_packet_is_never_dropped_from() {
        let mut c = codel(false);
        let mut dropped = 0;
        for k in 0..500u64 {
            let now = k * MS;
            let mut q = q_of([now.saturating_sub(200 * MS)], false); // alone, waited 200 ms
            let out = c.dequeue(now, &mut q, |_| dropped += 1);
            assert!(out.is_some());
        }
        assert_eq!(dropped, 0);
    }

    #[test]
    fn an_empty_queue_ends_the_dropping_state() {
        let mut c = codel(false);
        standing(&mut c, 30 * MS, MS, 300 * MS, false);
        assert!(c.dropping());
        assert!(c.dequeue(301 * MS, &mut q_of([], false), |_| {}).is_none());
        assert!(!c.dropping());
    }

    #[test]
    fn re_entering_soon_resumes_the_count_and_later_starts_over() {
        // A dropping state with several drops, a short pause below target, then above again.
        let mut c = codel(false);
        standing(&mut c, 50 * MS, MS / 10, 600 * MS, false);
        let n = c.count();
        assert!(n > 3, "{n}");
        let pause_end = 700 * MS;
        // below target for a while: leaves the dropping state
        standing_from(&mut c, MS, 600 * MS + MS, pause_end, false);
        assert!(!c.dropping());
        // above target again: at the first drop, one interval later, the count resumes as
        // count - lastcount (lastcount was 1: n - 1)
        let hits = standing_from(&mut c, 50 * MS, pause_end + MS, pause_end + 200 * MS, true);
        assert_eq!(hits.len(), 1);
        assert!(c.dropping());
        assert_eq!(c.count(), n - 1, "resumed: count - lastcount");
        // Below target for longer than 16 intervals, then above: it starts from 1.
        standing_from(&mut c, MS, hits[0] + MS, 4_000 * MS, false);
        assert!(!c.dropping());
        let hits = standing_from(&mut c, 50 * MS, 4_000 * MS + MS, 4_300 * MS, true);
        assert_eq!(hits.len(), 1);
        assert_eq!(c.count(), 1);
    }

    /// Dequeues every 0.1 ms from `from` to `until` (stopping at the first drop with
    /// `first_only`), each packet having waited `wait`; the drop instants.
    fn standing_from(
        c: &mut Codel,
        wait: Nanos,
        from: Nanos,
        until: Nanos,
        first_only: bool,
    ) -> Vec<Nanos> {
        let mut hits = Vec::new();
        let mut now = from;
        while now <= until {
            let mut q = q_of((0..DEEP).map(|k| now.saturating_sub(wait) + k), false);
            let before = c.counters.dropped_packets;
            c.dequeue(now, &mut q, |_| {});
            if c.counters.dropped_packets > before {
                hits.push(now);
                if first_only {
                    break;
                }
            }
            now += MS / 10;
        }
        hits
    }

    #[test]
    fn ecn_capable_packets_are_marked_on_the_same_schedule_and_none_dropped() {
        let mut dropping = codel(false);
        let mut marking = codel(true);
        let every = MS / 10;
        let drops = standing(&mut dropping, 50 * MS, every, 1_000 * MS, false);
        let marks = standing(&mut marking, 50 * MS, every, 1_000 * MS, true);
        assert_eq!(marks, drops);
        assert_eq!(marking.counters.dropped_packets, 0);
        assert_eq!(marking.counters.marked_packets, marks.len() as u64);
        // Not ECN-capable: dropped even with ECN on.
        let mut on = codel(true);
        let plain = standing(&mut on, 50 * MS, every, 1_000 * MS, false);
        assert_eq!(plain, drops);
        assert_eq!(on.counters.marked_packets, 0);
    }

    #[test]
    fn dropped_packets_are_handed_back_with_their_bytes_counted() {
        let mut c = codel(false);
        standing(&mut c, 30 * MS, MS, 150 * MS, false);
        assert!(c.dropping());
        // A long queue all above target at drop_next: the loop drops while now >= drop_next.
        let now = 10_000 * MS;
        let mut q = q_of((0..50).map(|k| now - 500 * MS + k), false);
        let mut got = Vec::new();
        let out = c.dequeue(now, &mut q, |d| got.push(d.pkt.id));
        assert!(out.is_some());
        assert!(!got.is_empty());
        assert_eq!(
            c.counters.dropped_bytes,
            c.counters.dropped_packets * u64::from(LEN)
        );
        // The packets are handed back in queue order.
        assert!(got.windows(2).all(|w| w[0] < w[1]));
    }
}
