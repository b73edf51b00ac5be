//! A queue under a discipline: the drop-tail FIFO with each packet's arrival instant, and
//! the AQM that manages it (tail drop alone, CoDel, PIE or FQ-CoDel). A server (a leg's
//! rate stage, `link/rate.rs`; a cell's per-device queue, `cell/cell.rs`) decides when the
//! head starts service and when it departs; this type decides which packet that is, what
//! the AQM drops or marks on the way, and how long each packet waited.
//!
//! The server's calls, in order: [`Managed::enqueue`] for each arrival; while it is free,
//! [`Managed::refill`] (FQ-CoDel moves its choice into the FIFO) and then
//! [`Managed::start`] at the instant the head's service starts (CoDel may drop heads and
//! mark the one it keeps, PIE learns the head's sojourn, the sojourn is recorded); and
//! [`Managed::pop`] when the head departs. Under FQ-CoDel the FIFO holds only the packet
//! in service and the others wait in its flow queues.

use std::collections::VecDeque;

use super::codel::{Codel, Fifo, Queued};
use super::fq_codel::FqCodel;
use super::pie::{Pie, Verdict};
use super::{AqmCounters, DropTail};
use crate::base::histogram::Histogram;
use crate::base::packet::{Pkt, CE};
use crate::base::time::Nanos;

/// The active queue management of a queue (tail drop at its limits applies with CoDel
/// and PIE; FQ-CoDel keeps its own packet limit). CoDel decides when the head would start
/// service, PIE when a packet arrives, FQ-CoDel which flow's head starts service and then
/// its CoDel as CoDel does; each marks an ECN-capable packet CE where it may
/// (`qdisc/codel.rs`, `qdisc/pie.rs`, `qdisc/fq_codel.rs`).
#[derive(Debug)]
pub enum Aqm {
    TailDrop,
    Codel(Codel),
    Pie(Pie),
    FqCodel(FqCodel),
}

/// Why a packet was refused at the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A limit would be exceeded (tail drop).
    Full(Pkt),
    /// The AQM dropped it on arrival (PIE).
    Aqm(Pkt),
}

/// The FIFO as CoDel pops it: packets with their arrival instants.
struct ArrivalFifo<'a> {
    fifo: &'a mut DropTail,
    arrivals: &'a mut VecDeque<Nanos>,
}

impl Fifo for ArrivalFifo<'_> {
    fn pop(&mut self) -> Option<Queued> {
        let pkt = self.fifo.pop()?;
        let arrived = self.arrivals.pop_front().unwrap_or(pkt.born);
        Some(Queued {
            pkt,
            arrived,
            ect: pkt.ect(),
        })
    }

    fn backlog_bytes(&self) -> u64 {
        self.fifo.bytes()
    }
}

/// A queue under its discipline; see the module docs.
#[derive(Debug)]
pub struct Managed {
    fifo: DropTail,
    /// Arrival instant of each packet in `fifo`, parallel to it.
    arrivals: VecDeque<Nanos>,
    aqm: Aqm,
    /// Packets the AQM dropped at dequeue ([`Managed::take_dropped`]).
    dropped: Vec<Pkt>,
    /// Queued packets FQ-CoDel dropped at its limit ([`Managed::take_evicted`]).
    evicted: Vec<Pkt>,
    /// FQ-CoDel: when the last packet arrived to an empty queue (service cannot start
    /// before it).
    fq_since: Nanos,
    /// How long each packet that started service had waited (ns), whatever the discipline.
    sojourn: Histogram,
}

impl Managed {
    /// A drop-tail queue with these limits (`None`: unlimited).
    pub fn new(limit_packets: Option<u32>, limit_bytes: Option<u64>) -> Self {
        let fifo = DropTail::new(limit_packets, limit_bytes);
        let cap = limit_packets.map_or(128, |l| (l as usize).min(16 * 1024));
        Managed {
            fifo,
            arrivals: VecDeque::with_capacity(cap),
            aqm: Aqm::TailDrop,
            dropped: Vec::new(),
            evicted: Vec::new(),
            fq_since: 0,
            sojourn: Histogram::default(),
        }
    }

    /// The queue with `aqm` managing it. FQ-CoDel takes over the FIFO's limits, and the
    /// FIFO then holds only the packet in service: the packet limit counted as the FIFO
    /// counts it (the packet in service included; without one, RFC 8290's 10,240), the
    /// byte limit over the packets waiting (so the queue may hold one packet more).
    pub fn with_aqm(mut self, mut aqm: Aqm) -> Self {
        if let Aqm::FqCodel(fq) = &mut aqm {
            let packets = self
                .fifo
                .limit_packets
                .map_or(fq.limit_packets(), |l| l.saturating_sub(1).max(1));
            fq.set_limits(packets, self.fifo.limit_bytes);
            self.fifo = DropTail::new(None, None);
        }
        self.aqm = aqm;
        self
    }

    pub fn aqm(&self) -> &Aqm {
        &self.aqm
    }

    /// What the AQM dropped and marked (`None` for tail drop alone).
    pub fn aqm_counters(&self) -> Option<AqmCounters> {
        match &self.aqm {
            Aqm::TailDrop => None,
            Aqm::Codel(c) => Some(c.counters),
            Aqm::Pie(p) => Some(p.counters),
            Aqm::FqCodel(f) => Some(f.counters().codel),
        }
    }

    /// Each packet's wait before its service started, ns (cumulative).
    pub fn sojourn(&self) -> &Histogram {
        &self.sojourn
    }

    /// Queues `p` arriving at `now`, or says why not: a limit would be exceeded (tail
    /// drop), or PIE dropped it. `Ok(true)`: the queue was empty (nothing waiting, nothing
    /// in service), so a free server may start at `now`.
    #[inline]
    pub fn enqueue(&mut self, now: Nanos, p: Pkt) -> Result<bool, Refused> {
        if let Aqm::TailDrop = self.aqm {
            self.fifo.push(p).map_err(Refused::Full)?;
            self.arrivals.push_back(now);
            return Ok(self.fifo.len() == 1);
        }
        self.enqueue_managed(now, p)
    }

    #[inline(never)] // off tail drop's path (each packet's)
    fn enqueue_managed(&mut self, now: Nanos, mut p: Pkt) -> Result<bool, Refused> {
        match &mut self.aqm {
            Aqm::Pie(pie) => match pie.on_enqueue(now, self.fifo.bytes(), p.len, p.ect()) {
                Verdict::Enqueue => {}
                Verdict::Mark => p.ecn = CE,
                Verdict::Drop => return Err(Refused::Aqm(p)),
            },
            Aqm::FqCodel(_) => return Ok(self.enqueue_flows(now, p)),
            Aqm::TailDrop | Aqm::Codel(_) => {}
        }
        self.fifo.push(p).map_err(Refused::Full)?;
        self.arrivals.push_back(now);
        Ok(self.fifo.len() == 1)
    }

    fn enqueue_flows(&mut self, now: Nanos, p: Pkt) -> bool {
        let Aqm::FqCodel(fq) = &mut self.aqm else {
            return false;
        };
        let empty = self.fifo.is_empty() && fq.packets() == 0;
        if empty {
            self.fq_since = now;
        }
        let q = Queued {
            pkt: p,
            arrived: now,
            ect: p.ect(),
        };
        self.evicted
            .extend(fq.enqueue(q, u32::from(p.flow)).iter().map(|q| q.pkt));
        empty
    }

    /// The packet at the FIFO's head (in service, or next to start) and its arrival.
    #[inline]
    pub fn head(&self) -> Option<(Pkt, Nanos)> {
        self.fifo.front().map(|&p| (p, self.arrivals[0]))
    }

    /// Whether the FIFO's head arrived by `t` (asked after a departure at `t`: whether
    /// the next packet's service starts at once).
    pub fn head_arrived_by(&self, t: Nanos) -> bool {
        self.arrivals.front().is_some_and(|&a| a <= t)
    }

    /// FQ-CoDel, with the FIFO empty: moves the packet it chooses at `at` (or at the last
    /// arrival to an empty queue, if later) into the FIFO, CE-marked if its flow's CoDel
    /// marked it; `false` when there is none (any other discipline, nothing queued, or
    /// CoDel dropped every packet queued).
    #[inline]
    pub fn refill(&mut self, at: Nanos) -> bool {
        matches!(self.aqm, Aqm::FqCodel(_)) && self.refill_from_flows(at)
    }

    #[inline(never)] // off the other disciplines' path (a smaller frame for their callers)
    fn refill_from_flows(&mut self, at: Nanos) -> bool {
        let Aqm::FqCodel(fq) = &mut self.aqm else {
            return false;
        };
        if !self.fifo.is_empty() || fq.packets() == 0 {
            return false;
        }
        let at = at.max(self.fq_since);
        let dropped = &mut self.dropped;
        match fq.dequeue(at, |q| dropped.push(q.pkt)) {
            Some((mut h, marked)) => {
                if marked {
                    h.pkt.ecn = CE;
                }
                // The FIFO is unlimited under FQ-CoDel (`with_aqm`): the push cannot fail.
                let _ = self.fifo.push(h.pkt);
                self.arrivals.push_back(h.arrived);
                true
            }
            None => false,
        }
    }

    /// The head's service starts at `start`: the packet that starts, once the AQM has seen
    /// it (tail drop and FQ-CoDel, which chose it in `refill`, serve it as it is; CoDel may
    /// drop heads, kept for [`Managed::take_dropped`], and mark the one it keeps; PIE
    /// learns its sojourn), with its wait recorded. `None`: nothing is queued, or CoDel
    /// dropped every packet queued.
    #[inline]
    pub fn start(&mut self, start: Nanos) -> Option<Pkt> {
        if let Aqm::TailDrop = self.aqm {
            let head = *self.fifo.front()?;
            self.sojourn.record(start.saturating_sub(self.arrivals[0]));
            return Some(head);
        }
        self.start_managed(start)
    }

    #[inline(never)] // off tail drop's path (each packet's)
    fn start_managed(&mut self, start: Nanos) -> Option<Pkt> {
        let head = match &mut self.aqm {
            Aqm::TailDrop | Aqm::FqCodel(_) => *self.fifo.front()?,
            Aqm::Pie(pie) => {
                let head = *self.fifo.front()?;
                let sojourn = start.saturating_sub(self.arrivals[0]);
                pie.on_dequeue(start, sojourn, self.fifo.bytes() - u64::from(head.len));
                head
            }
            Aqm::Codel(codel) => {
                let dropped = &mut self.dropped;
                let mut fifo = ArrivalFifo {
                    fifo: &mut self.fifo,
                    arrivals: &mut self.arrivals,
                };
                let (mut h, marked) = codel.dequeue(start, &mut fifo, |q| dropped.push(q.pkt))?;
                if marked {
                    h.pkt.ecn = CE;
                }
                self.fifo.push_front(h.pkt);
                self.arrivals.push_front(h.arrived);
                h.pkt
            }
        };
        self.sojourn.record(start.saturating_sub(self.arrivals[0]));
        Some(head)
    }

    /// The head departs (its service done): it leaves the FIFO.
    #[inline]
    pub fn pop(&mut self) -> Option<Pkt> {
        self.arrivals.pop_front();
        self.fifo.pop()
    }

    /// Takes every packet `take` selects, the FIFO's (in order) and then FQ-CoDel's.
    pub fn take_where(&mut self, take: impl Fn(&Pkt) -> bool) -> Vec<Pkt> {
        let mut taken_at = Vec::with_capacity(self.fifo.len());
        let mut out = self.fifo.take_where(|p| {
            let t = take(p);
            taken_at.push(t);
            t
        });
        let mut i = 0;
        self.arrivals.retain(|_| {
            i += 1;
            !taken_at[i - 1]
        });
        if let Aqm::FqCodel(fq) = &mut self.aqm {
            out.extend(fq.take_where(&take));
        }
        out
    }

    /// Packets queued, the one in service included.
    pub fn packets(&self) -> u32 {
        self.fifo.len() as u32
            + match &self.aqm {
                Aqm::FqCodel(f) => f.packets(),
                _ => 0,
            }
    }

    /// Bytes queued, the packet in service included (whole, however much is served).
    pub fn bytes(&self) -> u64 {
        self.fifo.bytes()
            + match &self.aqm {
                Aqm::FqCodel(f) => f.bytes(),
                _ => 0,
            }
    }

    pub fn is_empty(&self) -> bool {
        self.packets() == 0
    }

    /// The limit in bytes: the byte limit, or the packet limit at `mtu` bytes each,
    /// whichever is lower (`None`: unlimited).
    pub fn limit_bytes(&self, mtu: u64) -> Option<u64> {
        if let Aqm::FqCodel(f) = &self.aqm {
            return crate::base::limit_in_bytes(f.limit_bytes(), Some(f.limit_packets() + 1), mtu);
        }
        crate::base::limit_in_bytes(self.fifo.limit_bytes, self.fifo.limit_packets, mtu)
    }

    /// Moves the packets the AQM dropped at dequeue since the last call into `out`.
    pub fn take_dropped(&mut self, out: &mut Vec<Pkt>) {
        out.append(&mut self.dropped);
    }

    /// Moves the queued packets FQ-CoDel dropped at its packet limit since the last call
    /// into `out` (the limit's drops: tail drop's, for a queue that drops from the fattest
    /// flow).
    pub fn take_evicted(&mut self, out: &mut Vec<Pkt>) {
        out.append(&mut self.evicted);
    }

    /// Whether packets were dropped that `take_dropped` or `take_evicted` has not taken.
    #[inline]
    pub fn has_dropped(&self) -> bool {
        !self.dropped.is_empty() || !self.evicted.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::NS_PER_MS;
    use crate::qdisc::codel::{CodelParams, DEFAULT_INTERVAL, DEFAULT_TARGET};
    use crate::qdisc::fq_codel::FqCodelParams;

    const MS: Nanos = NS_PER_MS;

    fn pkt(id: u32, flow: u16) -> Pkt {
        Pkt {
            flow,
            ..Pkt::new(id, 1000, 0)
        }
    }

    #[test]
    fn a_fifo_says_when_it_was_empty_and_records_each_wait_at_its_start() {
        let mut q = Managed::new(Some(3), None);
        assert_eq!(q.enqueue(0, pkt(0, 0)), Ok(true));
        assert_eq!(q.enqueue(MS, pkt(1, 0)), Ok(false));
        assert_eq!(q.enqueue(2 * MS, pkt(2, 0)), Ok(false));
        assert_eq!(q.enqueue(2 * MS, pkt(3, 0)), Err(Refused::Full(pkt(3, 0))));
        assert_eq!((q.packets(), q.bytes()), (3, 3000));
        assert_eq!(q.start(0).map(|p| p.id), Some(0));
        assert_eq!(q.pop().map(|p| p.id), Some(0));
        assert!(q.head_arrived_by(MS) && !q.head_arrived_by(MS - 1));
        assert_eq!(q.head(), Some((pkt(1, 0), MS)));
        assert_eq!(q.start(5 * MS).map(|p| p.id), Some(1)); // waited 4 ms
        assert_eq!((q.sojourn().count(), q.sojourn().max()), (2, 4 * MS));
        assert!(!q.refill(5 * MS), "a FIFO has nothing to refill from");
        assert!(q.aqm_counters().is_none());
    }

    #[test]
    fn fq_codel_chooses_when_the_server_frees_never_before_the_arrival() {
        let p = FqCodelParams::new(CodelParams::new(
            DEFAULT_TARGET,
            DEFAULT_INTERVAL,
            1500,
            false,
        ));
        let mut q = Managed::new(Some(10), None).with_aqm(Aqm::FqCodel(FqCodel::new(p)));
        assert_eq!(q.enqueue(7 * MS, pkt(0, 1)), Ok(true));
        assert_eq!(
            q.head(),
            None,
            "it waits in its flow queue until the server asks"
        );
        assert!(
            q.refill(0),
            "asked as of 0, it chooses at the arrival, 7 ms"
        );
        assert_eq!(q.head(), Some((pkt(0, 1), 7 * MS)));
        for id in 1..4 {
            assert_eq!(q.enqueue(7 * MS, pkt(id, 1)), Ok(false));
        }
        assert!(!q.refill(8 * MS), "the FIFO holds the packet in service");
        let mut served = Vec::new();
        for at in [7 * MS, 8 * MS] {
            assert_eq!(q.start(at).map(|p| p.id), Some(served.len() as u32));
            served.push(q.pop().unwrap().id);
            assert!(q.refill(at));
        }
        // flow 1 spent its quantum (1514 bytes) on two packets and went to the old flows
        assert_eq!(q.head().map(|(p, _)| p.id), Some(2));
        assert_eq!(
            q.take_where(|p| p.id == 2).len(),
            1,
            "the FIFO's head taken"
        );
        assert_eq!(q.enqueue(9 * MS, pkt(9, 2)), Ok(false));
        assert!(q.refill(9 * MS));
        assert_eq!(
            q.head().map(|(p, _)| p.id),
            Some(9),
            "a new flow before flow 1's next"
        );
        assert_eq!((q.packets(), q.bytes()), (2, 2000));
        assert_eq!(
            q.limit_bytes(1500),
            Some(10 * 1500),
            "the packet in service counted"
        );
    }
}
