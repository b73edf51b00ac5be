//! FQ-CoDel (RFC 8290): packets hashed into flow queues, each with its own CoDel, served by
//! deficit round robin with a byte `quantum`; a flow that has just become active goes on the
//! new-flows list, served before the old flows, so sparse flows (a DNS query, an ACK
//! stream, a game) pass a bulk flow's standing queue.
//!
//! Sans-IO: the caller classifies each packet (`flow`, a hash of its 5-tuple; its
//! `% flows` picks the queue) and calls [`FqCodel::enqueue`] and [`FqCodel::dequeue`] with
//! the instant of each. Following the RFC (section 4) and where it leaves a choice Linux's
//! `sch_fq_codel`:
//! - enqueue: a flow queue that was empty joins the tail of the new flows with a deficit
//!   of one quantum; beyond `limit_packets` in all (or `limit_bytes`, as Linux's
//!   `memory_limit`), a packet is dropped from the head of the
//!   queue holding the most bytes (RFC section 4.1; Linux drops up to half of it at once);
//! - dequeue: the head of the new flows, else of the old; a flow whose deficit is spent gets
//!   another quantum and goes to the tail of the old flows; a flow CoDel leaves empty goes
//!   from the new list to the old (once, so it cannot starve the old ones) or, from the old
//!   list, leaves the lists;
//! - each flow's CoDel sees the whole backlog in its one-MTU rule, as in Linux.

use std::collections::VecDeque;

use super::codel::{Codel, CodelParams, Fifo, Queued};
use super::AqmCounters;
use crate::base::packet::Pkt;
use crate::base::time::Nanos;

/// RFC 8290's defaults (section 5, and Linux's): 1024 flow queues, a quantum of 1514
/// bytes (an Ethernet frame), 10240 packets in all.
pub const DEFAULT_FLOWS: u32 = 1024;
pub const DEFAULT_QUANTUM: u32 = 1514;
pub const DEFAULT_LIMIT_PACKETS: u32 = 10_240;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FqCodelParams {
    pub flows: u32,
    pub quantum: u32,
    pub limit_packets: u32,
    /// Bytes queued in all (`None`: no byte limit; Linux's `memory_limit` counts memory).
    pub limit_bytes: Option<u64>,
    pub codel: CodelParams,
}

impl FqCodelParams {
    pub fn new(codel: CodelParams) -> Self {
        FqCodelParams {
            flows: DEFAULT_FLOWS,
            quantum: DEFAULT_QUANTUM,
            limit_packets: DEFAULT_LIMIT_PACKETS,
            limit_bytes: None,
            codel,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Clone, Debug)]
struct FlowQueue {
    q: VecDeque<Queued>,
    bytes: u64,
    deficit: i64,
    codel: Codel,
    list: List,
}

/// What FQ-CoDel did, cumulative: CoDel's drops and marks over every flow, and the drops
/// at the packet limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FqCodelCounters {
    pub codel: AqmCounters,
    pub overlimit_packets: u64,
    pub overlimit_bytes: u64,
}

#[derive(Clone, Debug)]
pub struct FqCodel {
    p: FqCodelParams,
    queues: Vec<FlowQueue>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    packets: u32,
    bytes: u64,
    overlimit_packets: u64,
    overlimit_bytes: u64,
}

/// One flow's queue as its CoDel pops it, the whole backlog counted.
struct FlowFifo<'a> {
    flow: &'a mut VecDeque<Queued>,
    flow_bytes: &'a mut u64,
    total_packets: &'a mut u32,
    total_bytes: &'a mut u64,
}

impl Fifo for FlowFifo<'_> {
    fn pop(&mut self) -> Option<Queued> {
        let h = self.flow.pop_front()?;
        let len = u64::from(h.pkt.len);
        *self.flow_bytes -= len;
        *self.total_bytes -= len;
        *self.total_packets -= 1;
        Some(h)
    }

    fn backlog_bytes(&self) -> u64 {
        *self.total_bytes
    }
}

impl FqCodel {
    pub fn new(p: FqCodelParams) -> Self {
        let queues = (0..p.flows.max(1))
            .map(|_| FlowQueue {
                q: VecDeque::new(),
                bytes: 0,
                deficit: 0,
                codel: Codel::new(p.codel),
                list: List::None,
            })
            .collect();
        FqCodel {
            p,
            queues,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            packets: 0,
            bytes: 0,
            overlimit_packets: 0,
            overlimit_bytes: 0,
        }
    }

    pub fn packets(&self) -> u32 {
        self.packets
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Packets queued in all, beyond which the fattest flow's head is dropped.
    pub fn limit_packets(&self) -> u32 {
        self.p.limit_packets
    }

    /// Bytes queued in all, beyond which the fattest flow's head is dropped.
    pub fn limit_bytes(&self) -> Option<u64> {
        self.p.limit_bytes
    }

    pub fn set_limits(&mut self, packets: u32, bytes: Option<u64>) {
        self.p.limit_packets = packets;
        self.p.limit_bytes = bytes;
    }

    /// Removes every queued packet `take` selects, keeping each flow's order; a flow left
    /// empty stays on its list until `dequeue` finds it so (as one CoDel emptied).
    pub fn take_where(&mut self, take: impl Fn(&Pkt) -> bool) -> Vec<Pkt> {
        let mut out = Vec::new();
        for f in &mut self.queues {
            if f.q.is_empty() {
                continue;
            }
            f.q.retain(|h| {
                if take(&h.pkt) {
                    out.push(h.pkt);
                    false
                } else {
                    true
                }
            });
            let bytes: u64 = f.q.iter().map(|h| u64::from(h.pkt.len)).sum();
            self.bytes -= f.bytes - bytes;
            f.bytes = bytes;
        }
        self.packets -= out.len() as u32;
        out
    }

    pub fn counters(&self) -> FqCodelCounters {
        let mut c = FqCodelCounters {
            overlimit_packets: self.overlimit_packets,
            overlimit_bytes: self.overlimit_bytes,
            ..Default::default()
        };
        for f in &self.queues {
            c.codel += f.codel.counters;
        }
        c
    }

    fn index(&self, flow: u32) -> usize {
        (flow % self.p.flows.max(1)) as usize
    }

    /// Queues `q` (of flow `flow`); the packets dropped to stay within the limit, from the
    /// fattest flow (possibly `q` itself).
    pub fn enqueue(&mut self, q: Queued, flow: u32) -> Vec<Queued> {
        let i = self.index(flow);
        let f = &mut self.queues[i];
        f.q.push_back(q);
        f.bytes += u64::from(q.pkt.len);
        if f.list == List::None {
            f.list = List::New;
            f.deficit = i64::from(self.p.quantum);
            self.new_flows.push_back(i);
        }
        self.packets += 1;
        self.bytes += u64::from(q.pkt.len);
        let mut dropped = Vec::new();
        while self.packets > self.p.limit_packets
            || self.p.limit_bytes.is_some_and(|l| self.bytes > l)
        {
            let fattest = (0..self.queues.len())
                .max_by_key(|&k| (self.queues[k].bytes, std::cmp::Reverse(k)));
            let Some(k) = fattest else { break };
            let f = &mut self.queues[k];
            let Some(h) = f.q.pop_front() else { break };
            let len = u64::from(h.pkt.len);
            f.bytes -= len;
            self.packets -= 1;
            self.bytes -= len;
            self.overlimit_packets += 1;
            self.overlimit_bytes += len;
            dropped.push(h);
        }
        dropped
    }

    /// The next packet to send at `now` (with whether its CoDel marked it CE); every packet a
    /// flow's CoDel dropped on the way handed to `drop`.
    pub fn dequeue(&mut self, now: Nanos, mut drop: impl FnMut(Queued)) -> Option<(Queued, bool)> {
        loop {
            let (i, from_new) = if let Some(&i) = self.new_flows.front() {
                (i, true)
            } else if let Some(&i) = self.old_flows.front() {
                (i, false)
            } else {
                return None;
            };
            let quantum = i64::from(self.p.quantum);
            let f = &mut self.queues[i];
            if f.deficit <= 0 {
                f.deficit += quantum;
                f.list = List::Old;
                self.pop_list(from_new);
                self.old_flows.push_back(i);
                continue;
            }
            let mut fifo = FlowFifo {
                flow: &mut f.q,
                flow_bytes: &mut f.bytes,
                total_packets: &mut self.packets,
                total_bytes: &mut self.bytes,
            };
            match f.codel.dequeue(now, &mut fifo, &mut drop) {
                Some((h, marked)) => {
                    f.deficit -= i64::from(h.pkt.len);
                    return Some((h, marked));
                }
                None => {
                    self.pop_list(from_new);
                    if from_new && !self.old_flows.is_empty() {
                        self.queues[i].list = List::Old;
                        self.old_flows.push_back(i);
                    } else {
                        self.queues[i].list = List::None;
                    }
                }
            }
        }
    }

    fn pop_list(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::codel::{DEFAULT_INTERVAL, DEFAULT_TARGET};
    use super::*;
    use crate::base::time::NS_PER_MS;

    const MS: Nanos = NS_PER_MS;

    fn fq() -> FqCodel {
        FqCodel::new(FqCodelParams::new(CodelParams::new(
            DEFAULT_TARGET,
            DEFAULT_INTERVAL,
            1514,
            false,
        )))
    }

    fn pkt(id: u32, len: u32, at: Nanos) -> Queued {
        Queued {
            pkt: Pkt::new(id, len, at),
            arrived: at,
            ect: false,
        }
    }

    #[test]
    fn a_sparse_flow_passes_a_bulk_flows_standing_queue() {
        let mut q = fq();
        // The bulk flow (1) keeps 200 packets queued; a packet of the sparse flow (2)
        // arrives every 20 ms. The link sends a packet every ms.
        let mut id = 0;
        for _ in 0..200 {
            q.enqueue(pkt(id, 1500, 0), 1);
            id += 1;
        }
        let mut sparse_waits = Vec::new();
        let mut bulk_waits = Vec::new();
        for t in 0..2_000u64 {
            let now = t * MS;
            q.enqueue(pkt(id, 1500, now), 1); // bulk keeps its backlog
            id += 1;
            if t % 20 == 0 {
                q.enqueue(pkt(1_000_000 + id, 200, now), 2);
            }
            if let Some((h, _)) = q.dequeue(now, |_| {}) {
                if h.pkt.id >= 1_000_000 {
                    sparse_waits.push(now - h.arrived);
                } else {
                    bulk_waits.push(now - h.arrived);
                }
            }
        }
        assert_eq!(sparse_waits.len(), 100);
        // The first waits behind the bulk flow's quantum (both are new flows at 0); every
        // later one is a new flow among old ones and goes next.
        assert!(
            sparse_waits[1..].iter().all(|&w| w == 0),
            "{sparse_waits:?}"
        );
        let late_bulk = &bulk_waits[bulk_waits.len() / 2..];
        assert!(
            late_bulk.iter().all(|&w| w > 20 * MS),
            "the bulk flow keeps its queue"
        );
    }

    #[test]
    fn two_backlogged_flows_get_equal_bytes_whatever_their_packet_sizes() {
        let mut q = fq();
        for k in 0..3_000 {
            q.enqueue(pkt(k, 1500, 0), 10);
            q.enqueue(pkt(10_000 + k, 300, 0), 11);
            q.enqueue(pkt(20_000 + k, 300, 0), 11);
            q.enqueue(pkt(30_000 + k, 300, 0), 11);
        }
        let (mut big, mut small) = (0u64, 0u64);
        // all queued at 0 and dequeued at 0: no sojourn, so no CoDel drops
        for _ in 0..4_000 {
            let (h, _) = q
                .dequeue(0, |_| panic!("no CoDel drop at zero sojourn"))
                .unwrap();
            if h.pkt.id < 10_000 {
                big += u64::from(h.pkt.len);
            } else {
                small += u64::from(h.pkt.len);
            }
        }
        let diff = big.abs_diff(small);
        assert!(
            diff <= 2 * u64::from(DEFAULT_QUANTUM),
            "{big} against {small}"
        );
    }

    #[test]
    fn over_the_byte_limit_the_fattest_flow_loses_its_head_too() {
        let mut q = FqCodel::new(FqCodelParams {
            limit_bytes: Some(10_000),
            ..FqCodelParams::new(CodelParams::new(
                DEFAULT_TARGET,
                DEFAULT_INTERVAL,
                1514,
                false,
            ))
        });
        for k in 0..6 {
            assert!(q.enqueue(pkt(k, 1500, 0), 1).is_empty()); // 9,000 bytes
        }
        let dropped = q.enqueue(pkt(6, 1200, 0), 2); // 10,200 > 10,000
        assert_eq!(
            dropped.iter().map(|d| d.pkt.id).collect::<Vec<_>>(),
            vec![0]
        );
        assert_eq!((q.packets(), q.bytes()), (6, 8_700));
        assert_eq!(q.counters().overlimit_bytes, 1500);
    }

    #[test]
    fn over_the_limit_the_fattest_flow_loses_its_head() {
        let mut q = FqCodel::new(FqCodelParams {
            limit_packets: 100,
            ..FqCodelParams::new(CodelParams::new(
                DEFAULT_TARGET,
                DEFAULT_INTERVAL,
                1514,
                false,
            ))
        });
        for k in 0..102 {
            assert!(q.enqueue(pkt(k, 1500, 0), 1).is_empty());
            if k < 2 {
                q.dequeue(0, |_| {}); // its quantum spent: an old flow from the next dequeue
            }
        }
        let dropped = q.enqueue(pkt(500, 100, 0), 2);
        assert_eq!(
            dropped.iter().map(|d| d.pkt.id).collect::<Vec<_>>(),
            vec![2],
            "the bulk flow's head"
        );
        assert_eq!(q.packets(), 100);
        assert_eq!(q.counters().overlimit_packets, 1);
        // the sparse packet is the next one sent (a new flow)
        assert_eq!(q.dequeue(0, |_| {}).unwrap().0.pkt.id, 500);
    }

    #[test]
    fn codel_drops_in_the_flow_that_keeps_a_standing_queue_only() {
        let mut q = fq();
        let mut id = 0;
        let mut dropped_flows = Vec::new();
        // Flow 1 arrives at 1.5 packets a ms into a 1 packet a ms link; flow 2 at 0.2 a ms.
        for t in 0..3_000u64 {
            let now = t * MS;
            for k in 0..(1 + t % 2) {
                q.enqueue(pkt(id, 1000, now + k), 1);
                id += 1;
            }
            if t % 5 == 0 {
                q.enqueue(pkt(1_000_000 + id, 1000, now), 2);
                id += 1;
            }
            q.dequeue(now, |d| dropped_flows.push(d.pkt.id >= 1_000_000));
        }
        assert!(!dropped_flows.is_empty(), "the standing queue meets CoDel");
        assert!(
            dropped_flows.iter().all(|&sparse| !sparse),
            "none of the sparse flow's"
        );
        assert_eq!(
            q.counters().codel.dropped_packets,
            dropped_flows.len() as u64
        );
    }

    #[test]
    fn a_new_flow_emptied_goes_to_the_old_list_once_so_old_flows_are_not_starved() {
        let mut q = fq();
        // An old, backlogged flow ...
        for k in 0..10 {
            q.enqueue(pkt(k, 1500, 0), 1);
        }
        assert_eq!(q.dequeue(0, |_| {}).unwrap().0.pkt.id, 0);
        assert_eq!(q.dequeue(0, |_| {}).unwrap().0.pkt.id, 1);
        // ... and a sparse flow: its packet goes first (a new flow, after flow 1 moves to the
        // old list with its deficit spent) ...
        q.enqueue(pkt(100, 100, 0), 2);
        assert_eq!(q.dequeue(0, |_| {}).unwrap().0.pkt.id, 100);
        assert_eq!(q.new_flows, [2]);
        // ... and once found empty on the new list it moves to the old one, behind flow 1,
        // instead of leaving the lists: its next packet is no new flow's.
        assert_eq!(q.dequeue(0, |_| {}).unwrap().0.pkt.id, 2);
        assert_eq!((q.queues[2].list, q.new_flows.len()), (List::Old, 0));
        q.enqueue(pkt(101, 100, 0), 2);
        assert!(q.new_flows.is_empty(), "still an old flow");
        // With no old flow left, an emptied new flow leaves the lists.
        let mut r = fq();
        r.enqueue(pkt(0, 100, 0), 3);
        assert_eq!(r.dequeue(0, |_| {}).unwrap().0.pkt.id, 0);
        assert!(r.dequeue(0, |_| {}).is_none());
        assert_eq!(r.queues[3].list, List::None);
        r.enqueue(pkt(1, 100, 0), 3);
        assert_eq!(r.new_flows, [3], "back as a new flow");
    }
}
