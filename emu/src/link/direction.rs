//! One direction of one leg: rate stage (with its queue) -> loss -> delay stage (with its
//! own limit), the stage order of the reference testbed's two stacked netem qdiscs.
//!
//! A packet leaving the rate stage at `t` is judged by the loss model and enters the delay
//! stage *at `t`*, not at the `now` of the `poll` that noticed it, and every scheduled
//! change first brings the pipeline up to its instant. So the output is the same whether
//! `poll` runs at every deadline or once, late.

use serde::Serialize;

use super::delay::{DelayDist, DelayStage};
use super::loss::{Loss, LossModel};
use super::rate::{RateSpec, RateStage};
use crate::base::histogram::Histogram;
use crate::base::packet::{Pkt, PktId};
use crate::base::time::Nanos;
use crate::qdisc::{AqmCounters, AqmSpec, Refused, AQM_MTU};

/// Everything that shapes one direction of one leg.
#[derive(Debug, Clone)]
pub struct LinkSpec {
    pub rate: RateSpec,
    /// Rate-stage queue limits (the packet in service counts).
    pub queue_packets: Option<u32>,
    pub queue_bytes: Option<u64>,
    pub delay: DelayDist,
    /// Packets waiting in the delay stage (netem `limit`).
    pub delay_limit: Option<u32>,
    /// netem-style reordering jitter (true) or order-preserving jitter (false).
    pub jitter_reorders: bool,
    pub loss: LossModel,
    /// Loss judges packets as they are offered to the rate stage (true) or as they leave it.
    pub loss_before_rate: bool,
    /// The rate stage's active queue management (`None`: tail drop alone).
    pub aqm: Option<AqmSpec>,
}

impl LinkSpec {
    /// The reference testbed's leg: 20 Mbit/s, `queue_packets` (100 on downlink, 10000 on
    /// uplink), 10 ms normal delay with 1 ms std, delay limit 10000, no loss.
    pub fn reference(queue_packets: u32) -> Self {
        LinkSpec {
            rate: RateSpec::Fixed { bps: 20_000_000 },
            queue_packets: Some(queue_packets),
            queue_bytes: None,
            delay: DelayDist::Normal {
                mean_ms: 10.0,
                std_ms: 1.0,
            },
            delay_limit: Some(10_000),
            jitter_reorders: true,
            loss: LossModel::None,
            loss_before_rate: false,
            aqm: None,
        }
    }
}

/// Packet and byte counts of one direction. `*_in` counts every packet offered, including
/// those then dropped; bytes are `Pkt::len`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LinkCounters {
    pub bytes_in: u64,
    pub packets_in: u64,
    pub bytes_out: u64,
    pub packets_out: u64,
    pub dropped_queue_packets: u64,
    pub dropped_queue_bytes: u64,
    pub dropped_delay_limit_packets: u64,
    pub dropped_loss_packets: u64,
    pub dropped_loss_bytes: u64,
}

impl LinkCounters {
    /// Counts a packet the queue dropped at its limit (tail drop, or FQ-CoDel's eviction).
    pub fn queue_drop(&mut self, p: &Pkt) {
        self.dropped_queue_packets += 1;
        self.dropped_queue_bytes += u64::from(p.len);
    }

    /// Counts what the queue did with an offered packet; `true` if it took it. An AQM's
    /// drop is counted by the AQM (`aqm_counters`).
    pub fn offered(&mut self, r: Result<(), Refused>) -> bool {
        match r {
            Ok(()) => true,
            Err(Refused::Full(p)) => {
                self.queue_drop(&p);
                false
            }
            Err(Refused::Aqm(_)) => false,
        }
    }
}

#[derive(Debug)]
pub struct LinkDirection {
    rate: RateStage,
    tail: LinkTail,
    counters: LinkCounters,
    /// Reused for the packets the AQM dropped (no allocation on the hot path).
    aqm_dropped: Vec<Pkt>,
}

/// The stages after a direction's queueing stage (a rate stage, or a cell): loss, then
/// delay. A packet offered at `t` (when it left the queueing stage) is judged and enters
/// the delay stage at `t`.
#[derive(Debug)]
pub struct LinkTail {
    loss: Loss,
    /// The loss model is applied by `lose_before` (before the queueing stage), not `offer`.
    loss_before: bool,
    delay: DelayStage,
    /// Buffers of packets lost or dropped at the delay limit, for the owner of the packet
    /// pool to take back ([`LinkTail::reclaim`]); reused, so the hot path does not allocate.
    dropped: Vec<PktId>,
    /// Some: every packet that left the queueing stage, as (instant, bearer, COUNT), for
    /// a split bearer's outage fallback to read (`pdcp/outage.rs`).
    served: Option<Vec<Served>>,
}

/// A packet that left a queueing stage: (instant, bearer, COUNT).
pub type Served = (Nanos, u16, u32);

impl LinkTail {
    /// The loss and delay stages of `spec`, seeded from streams 1 and 2 of `seed`.
    pub fn new(spec: &LinkSpec, seed: u64) -> Self {
        LinkTail {
            loss: Loss::new(spec.loss, sub_seed(seed, 1)),
            loss_before: spec.loss_before_rate,
            delay: DelayStage::new(
                spec.delay,
                spec.delay_limit,
                spec.jitter_reorders,
                sub_seed(seed, 2),
            ),
            dropped: Vec::new(),
            served: None,
        }
    }

    /// Notes from now on every packet that leaves the queueing stage ([`LinkTail::take_served`]).
    pub fn track_served(&mut self) {
        self.served.get_or_insert_with(Vec::new);
    }

    /// Moves what left the queueing stage since the last call into `out`.
    pub fn take_served(&mut self, out: &mut Vec<Served>) {
        if let Some(s) = self.served.as_mut() {
            out.append(s);
        }
    }

    /// Keeps a buffer a stage before this one dropped, for [`LinkTail::reclaim`].
    pub fn discard(&mut self, id: PktId) {
        self.dropped.push(id);
    }

    /// Hands every dropped packet's buffer to `free` (the stages themselves never free).
    pub fn reclaim(&mut self, free: &mut impl FnMut(PktId)) {
        for id in self.dropped.drain(..) {
            free(id);
        }
    }

    /// `p` left the queueing stage at `t`: lost, dropped at the delay limit, or delayed.
    pub fn offer(&mut self, t: Nanos, p: Pkt, c: &mut LinkCounters) {
        if let Some(s) = self.served.as_mut() {
            s.push((t, p.bearer, p.count));
        }
        if !self.loss_before && self.loss.lose() {
            c.dropped_loss_packets += 1;
            c.dropped_loss_bytes += p.len as u64;
            self.dropped.push(p.id);
        } else if self.delay.enqueue(t, p).is_err() {
            c.dropped_delay_limit_packets += 1;
            self.dropped.push(p.id);
        }
    }

    /// With loss before the queueing stage: whether `p`, offered to it, is lost (counted).
    pub fn lose_before(&mut self, p: &Pkt, c: &mut LinkCounters) -> bool {
        let lost = self.loss_before && self.loss.lose();
        if lost {
            c.dropped_loss_packets += 1;
            c.dropped_loss_bytes += p.len as u64;
        }
        lost
    }

    /// The earlier of `queued` (the queueing stage's deadline) and the delay stage's.
    pub fn next_deadline(&self, queued: Option<Nanos>) -> Option<Nanos> {
        match (queued, self.delay.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Emits every packet whose delay is over by `now`, counting it out.
    pub fn poll(&mut self, now: Nanos, c: &mut LinkCounters, out: &mut impl FnMut(Nanos, Pkt)) {
        self.delay.poll(now, &mut |t, p| {
            c.packets_out += 1;
            c.bytes_out += p.len as u64;
            out(t, p);
        });
    }

    pub fn set_delay(&mut self, dist: DelayDist) {
        self.delay.set_dist(dist);
    }

    pub fn set_loss(&mut self, model: LossModel) {
        self.loss.set_model(model);
    }

    /// Packets waiting out their delay.
    pub fn in_flight(&self) -> u32 {
        self.delay.len()
    }
}

/// Derives independent stage seeds from one seed (splitmix64), so the loss and delay
/// streams are uncorrelated even for neighbouring seeds.
pub fn sub_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed.wrapping_add(stream.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl LinkDirection {
    pub fn new(spec: &LinkSpec, seed: u64) -> Self {
        let mut rate = RateStage::new(spec.rate.clone(), spec.queue_packets, spec.queue_bytes);
        if let Some(a) = spec.aqm {
            rate = rate.with_aqm(a.build(AQM_MTU, sub_seed(seed, 3)));
        }
        LinkDirection {
            rate,
            tail: LinkTail::new(spec, seed),
            counters: LinkCounters::default(),
            aqm_dropped: Vec::new(),
        }
    }

    /// Offers `p` at `now`; `false` = dropped (counted): tail-dropped at the rate-stage
    /// queue, or lost there with `loss_before_rate`.
    pub fn enqueue(&mut self, now: Nanos, p: Pkt) -> bool {
        self.advance(now);
        self.counters.packets_in += 1;
        self.counters.bytes_in += p.len as u64;
        if self.tail.lose_before(&p, &mut self.counters) {
            return false;
        }
        let r = self.rate.enqueue(now, p);
        self.collect_aqm_drops();
        self.counters.offered(r)
    }

    /// What the queue's AQM dropped and marked (`None` for tail drop alone).
    pub fn aqm_counters(&self) -> Option<AqmCounters> {
        self.rate.aqm_counters()
    }

    /// How long each packet that started service waited in the rate stage's queue, ns.
    pub fn sojourn(&self) -> &Histogram {
        self.rate.sojourn()
    }

    /// The buffers of packets the AQM dropped at dequeue, for `reclaim`.
    fn collect_aqm_drops(&mut self) {
        if !self.rate.has_aqm_dropped() {
            return;
        }
        self.rate.take_aqm_dropped(&mut self.aqm_dropped);
        for p in self.aqm_dropped.drain(..) {
            self.tail.discard(p.id);
        }
        self.rate.take_evicted(&mut self.aqm_dropped); // FQ-CoDel's limit: the queue's drops
        for p in self.aqm_dropped.drain(..) {
            self.counters.queue_drop(&p);
            self.tail.discard(p.id);
        }
    }

    /// The earliest instant at which `poll` has work (a packet moving between stages or
    /// leaving the link).
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.tail.next_deadline(self.rate.next_deadline())
    }

    /// Emits, in order, every packet leaving the link by `now`, with its exact instant.
    pub fn poll(&mut self, now: Nanos, out: &mut impl FnMut(Nanos, Pkt)) {
        self.advance(now);
        self.tail.poll(now, &mut self.counters, out);
    }

    /// Hands the buffers of packets lost on the link to `free`.
    pub fn reclaim(&mut self, free: &mut impl FnMut(PktId)) {
        self.tail.reclaim(free);
    }

    /// The stages after the rate stage (to note what leaves it: [`LinkTail::track_served`]).
    pub fn tail_mut(&mut self) -> &mut LinkTail {
        &mut self.tail
    }

    /// Changes the rate at `now` (see [`RateStage::set_spec`]).
    pub fn set_rate(&mut self, now: Nanos, spec: RateSpec) {
        self.advance(now);
        self.rate.set_spec(now, spec);
    }

    /// Changes the delay distribution for packets entering the delay stage after `now`.
    pub fn set_delay(&mut self, now: Nanos, dist: DelayDist) {
        self.advance(now);
        self.tail.set_delay(dist);
    }

    /// Changes the loss model for packets leaving the rate stage after `now`.
    pub fn set_loss(&mut self, now: Nanos, model: LossModel) {
        self.advance(now);
        self.tail.set_loss(model);
    }

    pub fn counters(&self) -> &LinkCounters {
        &self.counters
    }

    /// Packets in the rate stage (queued or in service).
    pub fn queue_packets(&self) -> u32 {
        self.rate.depth_packets()
    }

    pub fn queue_bytes(&self) -> u64 {
        self.rate.depth_bytes()
    }

    /// The rate stage's queue limit in bytes (a packet limit at `mtu` bytes a packet).
    pub fn queue_limit_bytes(&self, mtu: u64) -> Option<u64> {
        self.rate.limit_bytes(mtu)
    }

    /// Takes `bearer`'s packets from the rate stage at `now` (those past it are sent).
    pub fn take_bearer(&mut self, now: Nanos, bearer: u16) -> Vec<Pkt> {
        self.advance(now);
        self.rate.take_where(now, |p| p.bearer == bearer)
    }

    /// Bytes served by the rate stage, and its busy time up to `now`.
    pub fn service(&self, now: Nanos) -> (u64, Nanos) {
        (self.rate.served_bytes(), self.rate.busy(now))
    }

    /// Packets waiting out their delay.
    pub fn in_flight(&self) -> u32 {
        self.tail.in_flight()
    }

    /// Moves every packet that left the rate stage by `now` through loss into the delay
    /// stage, each at its own departure instant (the delay stage releases its own due
    /// packets up to that instant first, so its limit sees the right occupancy).
    fn advance(&mut self, now: Nanos) {
        let (tail, c) = (&mut self.tail, &mut self.counters);
        self.rate.poll(now, &mut |t, p| tail.offer(t, p, c));
        self.collect_aqm_drops();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::base::time::{NS_PER_MS, NS_PER_S};
    use crate::link::trace::RateTrace;

    fn pkt(id: u32, len: u32) -> Pkt {
        Pkt::new(id, len, 0)
    }

    #[test]
    fn stages_compose_in_order() {
        let spec = LinkSpec {
            rate: RateSpec::Fixed { bps: 12_000_000 }, // 1 ms per 1500 bytes
            queue_packets: Some(4),
            queue_bytes: None,
            delay: DelayDist::Constant { ms: 10.0 },
            delay_limit: None,
            jitter_reorders: true,
            loss: LossModel::None,
            loss_before_rate: false,
            aqm: None,
        };
        let mut l = LinkDirection::new(&spec, 1);
        for i in 0..5 {
            assert_eq!(l.enqueue(0, pkt(i, 1500)), i < 4);
        }
        assert_eq!(l.next_deadline(), Some(NS_PER_MS));
        let mut out = Vec::new();
        l.poll(NS_PER_S, &mut |t, p| out.push((t, p.id)));
        let ms = NS_PER_MS;
        assert_eq!(
            out,
            vec![(11 * ms, 0), (12 * ms, 1), (13 * ms, 2), (14 * ms, 3)]
        );
        let c = l.counters();
        assert_eq!(
            (c.packets_in, c.bytes_in, c.packets_out, c.bytes_out),
            (5, 7500, 4, 6000)
        );
        assert_eq!((c.dropped_queue_packets, c.dropped_queue_bytes), (1, 1500));
        assert_eq!(
            (l.queue_packets(), l.in_flight(), l.next_deadline()),
            (0, 0, None)
        );
    }

    #[test]
    fn delay_limit_and_loss_are_counted() {
        let spec = LinkSpec {
            rate: RateSpec::Unlimited,
            queue_packets: None,
            queue_bytes: None,
            delay: DelayDist::Constant { ms: 5.0 },
            delay_limit: Some(2),
            jitter_reorders: false,
            loss: LossModel::None,
            loss_before_rate: false,
            aqm: None,
        };
        let mut l = LinkDirection::new(&spec, 1);
        for i in 0..4 {
            assert!(l.enqueue(0, pkt(i, 100)));
        }
        // All four leave the rate stage at 0; the delay stage keeps two.
        let mut out = Vec::new();
        l.poll(0, &mut |t, p| out.push((t, p.id)));
        assert_eq!(
            (l.in_flight(), l.counters().dropped_delay_limit_packets),
            (2, 2)
        );
        l.set_loss(NS_PER_MS, LossModel::Bernoulli { p: 1.0 });
        l.enqueue(NS_PER_MS, pkt(9, 100));
        l.poll(NS_PER_S, &mut |t, p| out.push((t, p.id)));
        assert_eq!(out, vec![(5 * NS_PER_MS, 0), (5 * NS_PER_MS, 1)]);
        let c = l.counters();
        assert_eq!(
            (c.dropped_loss_packets, c.dropped_loss_bytes, c.packets_out),
            (1, 100, 2)
        );
    }

    /// Loss after the rate stage: a lost packet still used its transmission time (the
    /// survivors keep their 1 ms slots). Before it: the lost packet never queues, so the
    /// survivors leave back to back and the queue limit counts only them.
    #[test]
    fn loss_before_or_after_the_rate_stage() {
        let run = |before: bool| {
            let spec = LinkSpec {
                rate: RateSpec::Fixed { bps: 12_000_000 }, // 1 ms per 1500 bytes
                queue_packets: Some(10),
                queue_bytes: None,
                delay: DelayDist::Constant { ms: 0.0 },
                delay_limit: None,
                jitter_reorders: false,
                loss: LossModel::Bernoulli { p: 0.5 },
                loss_before_rate: before,
                aqm: None,
            };
            let mut l = LinkDirection::new(&spec, 7);
            let accepted: Vec<bool> = (0..20).map(|i| l.enqueue(0, pkt(i, 1500))).collect();
            let mut out = Vec::new();
            l.poll(NS_PER_S, &mut |t, p| out.push((t / NS_PER_MS, p.id)));
            (accepted, out, l.counters().clone())
        };
        let (acc, out, c) = run(false);
        // Ten queue, ten are tail-dropped; loss then takes some of the ten in their slots.
        assert_eq!(acc.iter().filter(|a| **a).count(), 10);
        assert_eq!(c.dropped_queue_packets, 10);
        assert_eq!(out.len() as u64 + c.dropped_loss_packets, 10);
        assert!(c.dropped_loss_packets > 0 && !out.is_empty());
        assert!(out.iter().all(|&(t, id)| t == id as u64 + 1), "{out:?}");
        assert!(out.iter().enumerate().any(|(k, &(t, _))| t != k as u64 + 1));

        let (acc, out, c) = run(true);
        // Lost packets are refused at the door and take no queue room: more than ten of
        // the twenty offered are either lost or sent, and the sent leave 1 ms apart.
        assert_eq!(
            acc.iter().filter(|a| !**a).count() as u64,
            c.dropped_loss_packets + c.dropped_queue_packets
        );
        assert_eq!(out.len(), 10);
        assert!(c.dropped_loss_packets > 0);
        let times: Vec<u64> = out.iter().map(|o| o.0).collect();
        assert_eq!(times, (1..=10).collect::<Vec<u64>>());
    }

    /// A reproducible workload: bursty arrivals of mixed sizes plus scheduled changes.
    enum Ev {
        Pkt(Pkt),
        Rate(RateSpec),
        Delay(DelayDist),
        Loss(LossModel),
    }

    fn workload() -> Vec<(Nanos, Ev)> {
        let mut evs = Vec::new();
        let mut x: u64 = 99;
        let mut rnd = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        let mut t = 0;
        for i in 0..30_000 {
            // Bursts of back-to-back packets, then gaps: overloads the 20 Mbit/s queue.
            t += if rnd() % 8 == 0 {
                rnd() % (2 * NS_PER_MS)
            } else {
                rnd() % 50_000
            };
            let len = 40 + (rnd() % 1461) as u32;
            evs.push((t, Ev::Pkt(Pkt::new(i, len, t))));
        }
        let steps = Arc::new(RateTrace::Steps {
            steps: vec![
                (70 * NS_PER_MS, 5_000_000),
                (30 * NS_PER_MS, 0),
                (100 * NS_PER_MS + 3, 40_000_000),
            ],
        });
        let opps = Arc::new(RateTrace::Opportunities {
            times_ms: vec![0, 0, 1, 1, 1, 3],
            period_ms: 3,
        });
        let changes = [
            (
                t / 5,
                Ev::Rate(RateSpec::Trace {
                    trace: steps,
                    looping: true,
                    start_offset: t / 5,
                }),
            ),
            (
                t / 4 + 7,
                Ev::Delay(DelayDist::Pareto {
                    mean_ms: 8.0,
                    std_ms: 3.0,
                }),
            ),
            (
                t / 3,
                Ev::Loss(LossModel::GilbertElliott {
                    p: 0.05,
                    r: 0.3,
                    loss_good: 0.0,
                    loss_bad: 1.0,
                }),
            ),
            (
                t / 2,
                Ev::Rate(RateSpec::Trace {
                    trace: opps,
                    looping: true,
                    start_offset: 0,
                }),
            ),
            (2 * t / 3, Ev::Rate(RateSpec::Fixed { bps: 33_330_000 })),
            (
                3 * t / 4,
                Ev::Delay(DelayDist::Uniform {
                    min_ms: 0.0,
                    max_ms: 20.0,
                }),
            ),
        ];
        for c in changes {
            let at = evs.partition_point(|e: &(Nanos, Ev)| e.0 <= c.0);
            evs.insert(at, c);
        }
        evs
    }

    fn spec() -> LinkSpec {
        LinkSpec {
            rate: RateSpec::Fixed { bps: 20_000_000 },
            queue_packets: Some(100),
            queue_bytes: Some(100_000),
            delay: DelayDist::Normal {
                mean_ms: 10.0,
                std_ms: 3.0,
            },
            delay_limit: Some(30),
            jitter_reorders: true,
            loss: LossModel::Bernoulli { p: 0.02 },
            loss_before_rate: false,
            aqm: None,
        }
    }

    /// Replays the workload, polling at every deadline (mode 0), every 3 ms (mode 1) or
    /// only at the end (mode 2).
    fn replay(mode: u8) -> (Vec<(Nanos, Pkt)>, LinkCounters) {
        let mut l = LinkDirection::new(&spec(), 7);
        let mut out = Vec::new();
        let mut last_poll = 0;
        let sink = |now: Nanos, l: &mut LinkDirection, out: &mut Vec<(Nanos, Pkt)>| {
            let before = out.len();
            l.poll(now, &mut |t, p| out.push((t, p)));
            assert!(
                out[before..].iter().all(|o| o.0 <= now),
                "emitted from the future: mode {mode} now {now} {:?}",
                &out[before..]
            );
            let c = l.counters();
            let held = l.queue_packets() as u64 + l.in_flight() as u64;
            let gone = c.packets_out
                + c.dropped_queue_packets
                + c.dropped_loss_packets
                + c.dropped_delay_limit_packets;
            assert_eq!(c.packets_in, gone + held, "conservation");
        };
        let mut last = 0;
        for (t, ev) in workload() {
            last = t;
            match mode {
                // At every deadline before the event.
                0 => {
                    while let Some(d) = l.next_deadline().filter(|&d| d <= t) {
                        sink(d, &mut l, &mut out);
                    }
                }
                // Every ~3 ms, regardless of deadlines.
                1 => {
                    while last_poll + 3 * NS_PER_MS <= t {
                        last_poll += 3 * NS_PER_MS;
                        sink(last_poll, &mut l, &mut out);
                    }
                }
                // Never until the end.
                _ => {}
            }
            match ev {
                Ev::Pkt(p) => {
                    l.enqueue(t, p);
                }
                Ev::Rate(s) => l.set_rate(t, s),
                Ev::Delay(d) => l.set_delay(t, d),
                Ev::Loss(m) => l.set_loss(t, m),
            }
        }
        // `now` never goes back, as with a real driver.
        while let Some(d) = l.next_deadline() {
            sink(d.max(last), &mut l, &mut out);
        }
        (out, l.counters().clone())
    }

    #[test]
    fn polling_schedule_does_not_change_results() {
        let (a, ca) = replay(0);
        let (b, cb) = replay(1);
        let (c, cc) = replay(2);
        // The workload exercises every drop path and reordering.
        assert!(ca.dropped_queue_packets > 100, "{ca:?}");
        assert!(ca.dropped_delay_limit_packets > 100, "{ca:?}");
        assert!(ca.dropped_loss_packets > 100, "{ca:?}");
        assert!(a.windows(2).filter(|w| w[1].1.id < w[0].1.id).count() > 100);
        assert!(a.windows(2).all(|w| w[0].0 <= w[1].0), "departures sorted");
        assert_eq!(ca.packets_out as usize, a.len());
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(ca, cb);
        assert_eq!(ca, cc);
    }

    #[test]
    fn reference_leg_delivers_20_mbit_and_reorders() {
        let mut l = LinkDirection::new(&LinkSpec::reference(100), 3);
        // Offer 30 Mbit/s of 1282-byte packets (1280 + 2-byte PDCP header) for 2 s.
        let len = 1282u32;
        let gap = len as u64 * 8 * NS_PER_S / 30_000_000;
        let mut out = Vec::new();
        let mut t = 0;
        let mut i = 0;
        while t < 2 * NS_PER_S {
            l.poll(t, &mut |d, p| out.push((d, p.id)));
            l.enqueue(t, pkt(i, len));
            i += 1;
            t += gap;
        }
        l.poll(u64::MAX, &mut |d, p| out.push((d, p.id)));
        // Within [0.5 s, 1.5 s] the link is saturated: 20 Mbit/s = 2.5 MB/s, and jitter
        // shifts the window edges by only a couple of packets.
        let win = out
            .iter()
            .filter(|o| o.0 > NS_PER_S / 2 && o.0 <= 3 * NS_PER_S / 2)
            .count() as i64;
        let want = (2_500_000 / len) as i64;
        assert!((win - want).abs() <= 12, "{win} vs {want}");
        assert!(l.counters().dropped_queue_packets > 1000);
        // 1282 bytes take 0.51 ms at 20 Mbit/s < 1 ms jitter std: reordering happens.
        assert!(out.windows(2).any(|w| w[1].1 < w[0].1));
    }

    #[test]
    fn fq_codels_limit_drops_count_as_the_queues_and_free_their_buffers() {
        let spec = LinkSpec {
            aqm: Some(AqmSpec::FqCodel {
                target: 5 * NS_PER_MS,
                interval: 100 * NS_PER_MS,
                ecn: false,
            }),
            ..LinkSpec::reference(10)
        };
        let mut l = LinkDirection::new(&spec, 1);
        for i in 0..30 {
            assert!(
                l.enqueue(
                    0,
                    Pkt {
                        flow: 1,
                        ..pkt(i, 1500)
                    }
                ),
                "taken, then maybe evicted"
            );
        }
        assert_eq!(
            l.queue_packets(),
            10,
            "the packet limit holds, the one in service counted"
        );
        assert_eq!(l.counters().dropped_queue_packets, 20);
        assert_eq!(l.counters().dropped_queue_bytes, 20 * 1500);
        let mut freed = Vec::new();
        l.reclaim(&mut |id| freed.push(id));
        assert_eq!(
            freed,
            (1..=20).collect::<Vec<u32>>(),
            "the oldest waiting, not the arrivals"
        );
        assert_eq!(l.aqm_counters().map(|c| c.dropped_packets), Some(0));
    }
}
