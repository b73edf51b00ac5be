//! The rate stage: a drop-tail queue in front of a server that serializes packets like a
//! real link (netem `rate ... limit N`, mahimahi `mm-link`).
//!
//! # Exactness
//! Service is counted in integer *work units* of bit·1e9, so a server at `bps` bit/s does
//! exactly `bps` units per nanosecond and a packet of `len` bytes needs `len·8e9` units.
//! A departure happens at the first whole nanosecond by which the work is done (ceil); the
//! little extra service in that last nanosecond is *carried* to the next packet if it starts
//! right then (back to back). Hence, while the queue stays busy, the k-th departure is at
//! exactly the first nanosecond at which the cumulative capacity covers the cumulative
//! bytes: the stage is exact to the byte over any horizon, at any rate, with no drift.
//!
//! Piecewise-constant rates (step traces, [`RateStage::set_spec`]) stay exact because the
//! head's remaining work is reduced by exactly `rate × elapsed` at every rate boundary.
//!
//! # Timing model
//! The head starts service at max(its arrival, previous departure). A packet counts in the
//! depth (and against the limits) until it departs, the one in service included — netem's
//! `rate` + `limit` semantics. `enqueue` first advances the server to `now`, so the limit
//! check sees the exact depth at `now` even when `poll` was last called long ago; packets
//! that departed meanwhile wait in an output buffer for the next `poll`, which emits them
//! with their exact departure instants.
//!
//! # Traces
//! `start_offset` is the clock instant at which the trace's time 0 falls; before it the
//! trace offers no capacity. At the end of a non-looping trace, a step trace holds its last
//! rate forever and an opportunity trace stops serving (queued packets then wait forever and
//! `next_deadline` is `None`). A rate of 0 serves nothing until the next step.
//!
//! Opportunity traces follow mahimahi: each opportunity may carry [`OPPORTUNITY_BYTES`] to
//! the packets queued at that instant; a packet larger than the remaining credit keeps what
//! it got and completes at a later opportunity (bytes carry over within a busy period); the
//! unused part of an opportunity is lost once no packet is waiting for it.
//!
//! # FQ-CoDel
//! With [`Aqm::FqCodel`] the waiting packets sit in FQ-CoDel's flow queues
//! (`qdisc/fq_codel.rs`), not in the FIFO, which then holds only the packet in service:
//! each time the server frees, the next packet is chosen among the flows at that instant
//! (the previous departure, or the arrival that ends an idle spell), and the stage's
//! packet limit is FQ-CoDel's, which drops from the fattest flow's head
//! ([`RateStage::take_evicted`]) instead of refusing the arrival.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::Arc;

use super::trace::{RateTrace, OPPORTUNITY_BYTES};
use crate::base::histogram::Histogram;
use crate::base::packet::Pkt;
use crate::base::time::{Nanos, NS_PER_MS};
use crate::qdisc::{Aqm, AqmCounters, Managed, Refused};

/// Work units per byte (bit·1e9 per byte).
pub(crate) const UNITS_PER_BYTE: u128 = 8 * 1_000_000_000;
/// Work one mahimahi opportunity provides.
const OPPORTUNITY_UNITS: u128 = OPPORTUNITY_BYTES as u128 * UNITS_PER_BYTE;

/// What drives the server.
#[derive(Debug, Clone)]
pub enum RateSpec {
    /// No serialization: a packet departs at its arrival instant.
    Unlimited,
    /// Constant rate in bit/s (0 = nothing is ever served).
    Fixed { bps: u64 },
    /// Trace-driven; see the module docs for `looping` and `start_offset`.
    Trace {
        trace: Arc<RateTrace>,
        looping: bool,
        start_offset: Nanos,
    },
}

/// The server's schedule, prepared from a [`RateSpec`] (allocation happens only here).
#[derive(Debug)]
enum Sched {
    Unlimited,
    Fixed(u64),
    /// `segs[i] = (end of step i relative to origin, bit/s)`; `total` = one pass.
    Steps {
        segs: Vec<(Nanos, u64)>,
        /// The step found last: the server asks about the same or the next step for
        /// nearly every packet, so a search over the whole trace is seldom needed.
        hint: Cell<usize>,
        total: Nanos,
        looping: bool,
        origin: Nanos,
    },
    /// Opportunity `k` is at `origin + ms(k)·1e6` (see [`Sched::opp_ms`]).
    Opps {
        trace: Arc<RateTrace>,
        looping: bool,
        origin: Nanos,
    },
}

impl Sched {
    fn new(spec: RateSpec) -> Self {
        match spec {
            RateSpec::Unlimited => Sched::Unlimited,
            RateSpec::Fixed { bps } => Sched::Fixed(bps),
            RateSpec::Trace {
                trace,
                looping,
                start_offset,
            } => match &*trace {
                RateTrace::Steps { steps } => {
                    let mut end: Nanos = 0;
                    let segs = steps
                        .iter()
                        .map(|&(d, bps)| {
                            end = end.saturating_add(d);
                            (end, bps)
                        })
                        .collect();
                    Sched::Steps {
                        segs,
                        hint: Cell::new(0),
                        total: end,
                        looping,
                        origin: start_offset,
                    }
                }
                RateTrace::Opportunities { .. } => Sched::Opps {
                    trace,
                    looping,
                    origin: start_offset,
                },
            },
        }
    }

    /// Rate in force at `t` and the instant it may change (`None` = never).
    /// Only meaningful for `Fixed` and `Steps`.
    fn fluid_at(&self, t: Nanos) -> (u64, Option<Nanos>) {
        match self {
            Sched::Fixed(bps) => (*bps, None),
            Sched::Steps {
                segs,
                hint,
                total,
                looping,
                origin,
            } => {
                if t < *origin {
                    return (0, Some(*origin));
                }
                let last = segs.last().map_or(0, |s| s.1);
                if *total == 0 {
                    return (last, None);
                }
                let tau = t - origin;
                let (base, w) = if *looping {
                    (t - tau % total, tau % total)
                } else if tau >= *total {
                    return (last, None); // non-looping: hold the last rate
                } else {
                    (*origin, tau)
                };
                // First step whose end is after `w` (zero-length steps are skipped): the
                // one found last or the next, else searched for.
                let found = |i: usize| {
                    segs.get(i).is_some_and(|s| s.0 > w) && (i == 0 || segs[i - 1].0 <= w)
                };
                let i = match hint.get() {
                    h if found(h) => h,
                    h if found(h + 1) => h + 1,
                    _ => segs.partition_point(|s| s.0 <= w),
                };
                hint.set(i);
                let (end, bps) = segs[i];
                (bps, Some(base.saturating_add(end)))
            }
            Sched::Unlimited | Sched::Opps { .. } => unreachable!("not a fluid schedule"),
        }
    }

    /// Opportunity trace contents: (times, period, looping, origin).
    fn opps(&self) -> (&[u64], u64, bool, Nanos) {
        match self {
            Sched::Opps {
                trace,
                looping,
                origin,
            } => match &**trace {
                RateTrace::Opportunities {
                    times_ms,
                    period_ms,
                } => {
                    // A zero period cannot loop (it would be infinitely fast).
                    (times_ms, *period_ms, *looping && *period_ms > 0, *origin)
                }
                RateTrace::Steps { .. } => unreachable!(),
            },
            _ => unreachable!("not an opportunity schedule"),
        }
    }

    /// Trace millisecond of opportunity `k`, or `None` past the end of a non-looping trace.
    fn opp_ms(&self, k: u64) -> Option<u64> {
        let (times, period, looping, _) = self.opps();
        let n = times.len() as u64;
        if n == 0 || (!looping && k >= n) {
            return None;
        }
        Some(
            (k / n)
                .saturating_mul(period)
                .saturating_add(times[(k % n) as usize]),
        )
    }

    fn opp_time(&self, k: u64) -> Option<Nanos> {
        let origin = self.opps().3;
        self.opp_ms(k)
            .map(|ms| origin.saturating_add(ms.saturating_mul(NS_PER_MS)))
    }

    /// Index of the first opportunity at or after `t` (may be past the end).
    fn first_opp_at_or_after(&self, t: Nanos) -> u64 {
        let (times, period, looping, origin) = self.opps();
        if t <= origin || times.is_empty() {
            return 0;
        }
        let want_ms = (t - origin).div_ceil(NS_PER_MS);
        let n = times.len() as u64;
        if !looping {
            return times.partition_point(|&x| x < want_ms) as u64;
        }
        let lap = want_ms / period;
        let within = want_ms % period;
        let mut k = lap * n + times.partition_point(|&x| x < within) as u64;
        // The previous lap's last entries sit at lap·period too (times end at `period`);
        // opportunity times are non-decreasing in k, so step back over those.
        while k > 0 && self.opp_ms(k - 1).is_some_and(|ms| ms >= want_ms) {
            k -= 1;
        }
        k
    }
}

/// Outcome of serving the head up to `now`.
enum Served {
    /// The head departed at this instant.
    Departed(Nanos),
    /// Not done by `now`; the next instant something changes (`None` = stalled forever).
    Pending(Option<Nanos>),
}

/// A rate-limited FIFO link; see the module docs for the exact semantics.
#[derive(Debug)]
pub struct RateStage {
    sched: Sched,
    /// The queue, its discipline and its packets' waits.
    q: Managed,
    /// Departed packets not yet handed out by `poll`, in departure order.
    ready: VecDeque<(Nanos, Pkt)>,
    /// Whether the queue head has started service (its `work` is then meaningful).
    in_service: bool,
    /// Remaining work of the head, in units.
    work: u128,
    /// The instant up to which the head's service is accounted (or the last departure).
    cursor: Nanos,
    /// Service done but not used, available to a packet starting at exactly `carry_at`.
    carry: u128,
    carry_at: Nanos,
    /// Next unused opportunity index (opportunity traces only).
    opp_next: u64,
    /// When the head next needs attention (departure, rate boundary, opportunity).
    next_event: Option<Nanos>,
    /// Bytes that departed, and the time the stage had a packet in service: the rate a
    /// flow-controlled split reads (`pdcp/service_rate.rs`).
    served_bytes: u64,
    busy_done: Nanos,
    /// Start of the busy period in progress.
    busy_since: Option<Nanos>,
}

impl RateStage {
    pub fn new(spec: RateSpec, limit_packets: Option<u32>, limit_bytes: Option<u64>) -> Self {
        RateStage {
            sched: Sched::new(spec),
            q: Managed::new(limit_packets, limit_bytes),
            ready: VecDeque::with_capacity(64),
            in_service: false,
            work: 0,
            cursor: 0,
            carry: 0,
            carry_at: 0,
            opp_next: 0,
            next_event: None,
            served_bytes: 0,
            busy_done: 0,
            busy_since: None,
        }
    }

    /// Each served packet's wait in the queue before its service started, ns (cumulative).
    pub fn sojourn(&self) -> &Histogram {
        self.q.sojourn()
    }

    /// The stage with `aqm` managing its queue ([`Managed::with_aqm`]).
    pub fn with_aqm(mut self, aqm: Aqm) -> Self {
        self.q = self.q.with_aqm(aqm);
        self
    }

    pub fn aqm(&self) -> &Aqm {
        self.q.aqm()
    }

    /// What the AQM dropped and marked (`None` for tail drop alone).
    pub fn aqm_counters(&self) -> Option<AqmCounters> {
        self.q.aqm_counters()
    }

    /// Moves the packets the AQM dropped at dequeue since the last call into `out`.
    pub fn take_aqm_dropped(&mut self, out: &mut Vec<Pkt>) {
        self.q.take_dropped(out);
    }

    /// Moves the queued packets FQ-CoDel dropped at its packet limit since the last call
    /// into `out` ([`Managed::take_evicted`]).
    pub fn take_evicted(&mut self, out: &mut Vec<Pkt>) {
        self.q.take_evicted(out);
    }

    /// Whether the AQM dropped packets that `take_aqm_dropped` or `take_evicted` has not
    /// taken.
    pub fn has_aqm_dropped(&self) -> bool {
        self.q.has_dropped()
    }

    /// The queue's limit in bytes: its byte limit, or its packet limit at `mtu` bytes
    /// each, whichever is lower (`None`: unlimited).
    pub fn limit_bytes(&self, mtu: u64) -> Option<u64> {
        self.q.limit_bytes(mtu)
    }

    /// Bytes served so far.
    pub fn served_bytes(&self) -> u64 {
        self.served_bytes
    }

    /// Time with a packet in service up to `now` (served up to the last `advance`).
    pub fn busy(&self, now: Nanos) -> Nanos {
        self.busy_done + self.busy_since.map_or(0, |b| now.saturating_sub(b))
    }

    /// Queues `p` arriving at `now`, or says why not: a limit would be exceeded (tail
    /// drop), or PIE dropped it.
    pub fn enqueue(&mut self, now: Nanos, p: Pkt) -> Result<(), Refused> {
        self.advance(now);
        if self.q.enqueue(now, p)? {
            self.advance(now); // it is the head: start it and learn its next event
        }
        Ok(())
    }

    /// The earliest instant at which `poll` has something to do; `None` = idle (or stalled
    /// on a zero rate / an exhausted non-looping opportunity trace).
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.ready.front().map(|r| r.0).or(self.next_event)
    }

    /// Emits, in order, every packet whose departure is `<= now`, with its departure instant.
    pub fn poll(&mut self, now: Nanos, out: &mut impl FnMut(Nanos, Pkt)) {
        self.advance(now);
        // Only up to `now`: an earlier `enqueue` may have released later departures.
        while let Some(&(t, p)) = self.ready.front().filter(|r| r.0 <= now) {
            self.ready.pop_front();
            out(t, p);
        }
    }

    /// Changes the rate at `now`. The packet in service keeps the service it already got;
    /// the rest of it is served under the new spec. An opportunity trace starts with its
    /// first opportunity at or after `now`.
    pub fn set_spec(&mut self, now: Nanos, spec: RateSpec) {
        self.advance(now);
        let now = now.max(self.cursor);
        if self.in_service && self.work > 0 {
            // Everything up to `now` is processed, so one rate held over [cursor, now].
            if let Sched::Fixed(_) | Sched::Steps { .. } = self.sched {
                let (r, _) = self.sched.fluid_at(self.cursor);
                let done = (now - self.cursor) as u128 * r as u128;
                self.work = self.work.saturating_sub(done);
            }
        }
        self.cursor = now;
        self.sched = Sched::new(spec);
        if let Sched::Opps { .. } = self.sched {
            self.opp_next = self.sched.first_opp_at_or_after(now);
        }
        self.advance(now);
    }

    /// Takes the queued packets `take` selects at `now`, the one in service too (its
    /// service is lost; the next starts at `now`).
    pub fn take_where(&mut self, now: Nanos, take: impl Fn(&Pkt) -> bool) -> Vec<Pkt> {
        self.advance(now);
        let head_taken = self.in_service && self.q.head().is_some_and(|(p, _)| take(&p));
        let out = self.q.take_where(take);
        if head_taken {
            self.in_service = false;
            self.work = 0;
            self.carry = 0;
            self.cursor = self.cursor.max(now);
        }
        if self.q.is_empty() {
            if let Some(b) = self.busy_since.take() {
                self.busy_done += now.saturating_sub(b);
            }
        }
        self.advance(now);
        out
    }

    /// Packets queued, including the one in service.
    pub fn depth_packets(&self) -> u32 {
        self.q.packets()
    }

    /// Bytes queued, including the packet in service (whole, however much is served).
    pub fn depth_bytes(&self) -> u64 {
        self.q.bytes()
    }

    /// Serves the queue up to `now`, moving departed packets to `ready`.
    fn advance(&mut self, now: Nanos) {
        self.next_event = None;
        loop {
            let Some((mut p, arrived)) = self.q.head() else {
                // FQ-CoDel chooses the next packet when the server is free
                if self.q.refill(self.cursor) {
                    continue;
                }
                return;
            };
            if !self.in_service {
                let start = arrived.max(self.cursor);
                if start > now {
                    self.next_event = Some(start);
                    return;
                }
                match self.q.start(start) {
                    Some(head) => p = head,
                    None => {
                        // CoDel dropped every packet queued: the busy period ends at `start`
                        if let Some(b) = self.busy_since.take() {
                            self.busy_done += start.saturating_sub(b);
                        }
                        self.cursor = self.cursor.max(start);
                        continue;
                    }
                }
                self.start_head(start, p.len);
            }
            match self.serve_head(now) {
                Served::Departed(t) => {
                    self.q.pop();
                    self.in_service = false;
                    self.ready.push_back((t, p));
                    self.served_bytes += p.len as u64;
                    if !self.q.head_arrived_by(t) {
                        if let Some(b) = self.busy_since.take() {
                            self.busy_done += t.saturating_sub(b);
                        }
                    }
                }
                Served::Pending(t) => {
                    self.next_event = t;
                    return;
                }
            }
        }
    }

    fn start_head(&mut self, start: Nanos, len: u32) {
        self.busy_since.get_or_insert(start);
        self.cursor = start;
        self.work = len as u128 * UNITS_PER_BYTE;
        if self.carry_at == start {
            let used = self.carry.min(self.work);
            self.work -= used;
            self.carry -= used;
        } else {
            self.carry = 0; // the link idled: unused service is gone
        }
        if let Sched::Opps { .. } = self.sched {
            self.opp_next = self.opp_next.max(self.sched.first_opp_at_or_after(start));
        }
        self.in_service = true;
    }

    /// Serves the head from `cursor` up to at most `now`.
    fn serve_head(&mut self, now: Nanos) -> Served {
        loop {
            if self.work == 0 {
                return Served::Departed(self.cursor);
            }
            match &self.sched {
                Sched::Unlimited => {
                    self.work = 0;
                    return Served::Departed(self.cursor);
                }
                Sched::Fixed(_) | Sched::Steps { .. } => {
                    let (r, until) = self.sched.fluid_at(self.cursor);
                    let r = r as u128;
                    let fin = if r == 0 {
                        None
                    } else {
                        let d = self.work.div_ceil(r);
                        let fin = self.cursor as u128 + d;
                        (fin <= until.map_or(u64::MAX, |u| u) as u128).then_some((fin, d))
                    };
                    if let Some((fin, d)) = fin {
                        // Finishes within this constant-rate span.
                        if fin > now as u128 {
                            return Served::Pending(Some(fin as Nanos));
                        }
                        let fin = fin as Nanos;
                        self.carry = d * r - self.work;
                        self.carry_at = fin;
                        self.work = 0;
                        self.cursor = fin;
                        return Served::Departed(fin);
                    }
                    // Crosses a rate boundary (or the rate is 0): serve up to it.
                    let Some(u) = until else {
                        return Served::Pending(None);
                    };
                    if u > now {
                        return Served::Pending(Some(u));
                    }
                    self.work -= (u - self.cursor) as u128 * r;
                    self.cursor = u;
                }
                Sched::Opps { .. } => {
                    let Some(o) = self.sched.opp_time(self.opp_next) else {
                        return Served::Pending(None);
                    };
                    if o > now {
                        return Served::Pending(Some(o));
                    }
                    self.opp_next += 1;
                    self.cursor = o;
                    if self.carry_at != o {
                        self.carry = 0;
                        self.carry_at = o;
                    }
                    self.carry += OPPORTUNITY_UNITS;
                    let used = self.carry.min(self.work);
                    self.work -= used;
                    self.carry -= used;
                }
            }
        }
    }
}

/// Helpers are `pub(crate)` for the shipped-trace tests in `config/trace_file.rs`, which
/// load real trace files (the link itself reads no files).
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::base::time::NS_PER_S;

    fn pkt(id: u32, len: u32) -> Pkt {
        Pkt::new(id, len, 0)
    }

    /// Deterministic mixed sizes in 40..=1500.
    pub(crate) fn mixed_len(i: u32) -> u32 {
        40 + (i.wrapping_mul(7919) % 1461)
    }

    /// Queues `n` packets at t=0 (unlimited queue) and polls once at `until`.
    pub(crate) fn saturated(
        spec: RateSpec,
        n: u32,
        len: impl Fn(u32) -> u32,
        until: Nanos,
    ) -> Vec<(Nanos, Pkt)> {
        let mut s = RateStage::new(spec, None, None);
        for i in 0..n {
            s.enqueue(0, pkt(i, len(i))).unwrap();
        }
        let mut out = Vec::new();
        s.poll(until, &mut |t, p| out.push((t, p)));
        out
    }

    /// Cumulative capacity (work units) of a piecewise-constant rate:
    /// `segs[i] = (start instant, bit/s)`, starts increasing, `segs[0].0 == 0`.
    pub(crate) struct Cap {
        segs: Vec<(Nanos, u64)>,
        before: Vec<u128>,
    }

    impl Cap {
        pub(crate) fn new(segs: Vec<(Nanos, u64)>) -> Self {
            let mut before = vec![0u128];
            for w in segs.windows(2) {
                let last = *before.last().unwrap();
                before.push(last + (w[1].0 - w[0].0) as u128 * w[0].1 as u128);
            }
            Cap { segs, before }
        }
        pub(crate) fn at(&self, t: Nanos) -> u128 {
            let i = self.segs.partition_point(|s| s.0 <= t) - 1;
            self.before[i] + (t - self.segs[i].0) as u128 * self.segs[i].1 as u128
        }
    }

    /// Every departure of a stage busy since 0 is at exactly the first nanosecond at which
    /// the cumulative capacity covers the cumulative bytes. Returns the bytes delivered.
    pub(crate) fn assert_exact(out: &[(Nanos, Pkt)], cap: &Cap) -> u64 {
        let mut bytes = 0u64;
        for (k, &(t, p)) in out.iter().enumerate() {
            bytes += p.len as u64;
            let need = bytes as u128 * UNITS_PER_BYTE;
            assert!(cap.at(t) >= need, "departure {k} at {t} is early");
            assert!(
                t == 0 || cap.at(t - 1) < need,
                "departure {k} at {t} is late"
            );
            assert_eq!(p.id as usize, k, "FIFO order");
        }
        bytes
    }

    #[test]
    fn fixed_rates_are_exact_to_the_byte() {
        // (bit/s, horizon): include rates that do not divide a packet into whole ns.
        let cases = [
            (20_000_000, 10 * NS_PER_S),
            (1_000_000_000, NS_PER_S),
            (33_330_000, 5 * NS_PER_S),
            (7_777_777, 10 * NS_PER_S),
        ];
        for (bps, horizon) in cases {
            let ideal = bps as u128 * horizon as u128 / UNITS_PER_BYTE;
            let cap = Cap::new(vec![(0, bps)]);
            // MTU packets, then mixed sizes (mean ~770 bytes, so /700 keeps it saturated).
            for (mtu, n) in [(true, ideal / 1500 + 10), (false, ideal / 700 + 50)] {
                let len = |i| if mtu { 1500 } else { mixed_len(i) };
                let out = saturated(RateSpec::Fixed { bps }, n as u32, len, horizon);
                assert!((out.len() as u128) < n, "not saturated");
                let bytes = assert_exact(&out, &cap);
                // Hence over the whole horizon: exactly rate·T/8 within one packet.
                assert!(
                    bytes as u128 <= ideal && ideal - (bytes as u128) < 1500,
                    "{bps}: {bytes} vs {ideal}"
                );
            }
        }
    }

    #[test]
    fn fixed_rate_serialization_times() {
        let mut s = RateStage::new(RateSpec::Fixed { bps: 20_000_000 }, None, None);
        s.enqueue(0, pkt(0, 1500)).unwrap();
        s.enqueue(0, pkt(1, 1500)).unwrap();
        assert_eq!(s.next_deadline(), Some(600_000));
        // An idle gap: the third starts at its own arrival, not at the previous departure.
        s.enqueue(5 * NS_PER_MS, pkt(2, 100)).unwrap();
        let mut out = Vec::new();
        s.poll(NS_PER_S, &mut |t, p| out.push((t, p.id)));
        assert_eq!(
            out,
            vec![(600_000, 0), (1_200_000, 1), (5 * NS_PER_MS + 40_000, 2)]
        );
        assert_eq!(s.next_deadline(), None);
    }

    #[test]
    fn set_spec_mid_packet_keeps_served_bits() {
        let mut s = RateStage::new(RateSpec::Fixed { bps: 10_000_000 }, None, None);
        s.enqueue(0, pkt(0, 1500)).unwrap(); // 1.2 ms at 10 Mbit/s
        s.enqueue(0, pkt(1, 1500)).unwrap();
        // After 0.3 ms, 3000 of 12000 bits are done; 9000 bits at 20 Mbit/s = 0.45 ms.
        s.set_spec(300_000, RateSpec::Fixed { bps: 20_000_000 });
        assert_eq!(s.next_deadline(), Some(750_000));
        // Stopping the link freezes the next packet; resuming continues it.
        let mut out = Vec::new();
        s.poll(800_000, &mut |t, p| out.push((t, p.id)));
        s.set_spec(800_000, RateSpec::Fixed { bps: 0 });
        assert_eq!(s.next_deadline(), None);
        s.set_spec(2 * NS_PER_MS, RateSpec::Fixed { bps: 20_000_000 });
        // Packet 1 got 50 us (1000 bits) before the stop; 11000 bits remain = 0.55 ms.
        s.poll(NS_PER_S, &mut |t, p| out.push((t, p.id)));
        assert_eq!(out, vec![(750_000, 0), (2_550_000, 1)]);
        // Switching to unlimited releases the queue at once.
        for i in 0..3 {
            s.enqueue(3 * NS_PER_MS, pkt(10 + i, 1500)).unwrap();
        }
        s.set_spec(3 * NS_PER_MS + 1, RateSpec::Unlimited);
        out.clear();
        s.poll(3 * NS_PER_MS + 1, &mut |t, p| out.push((t, p.id)));
        assert_eq!(out, vec![(3_000_001, 10), (3_000_001, 11), (3_000_001, 12)]);
    }

    #[test]
    fn many_set_spec_changes_stay_exact() {
        // Rate changes at pseudo-random instants, mid-packet; the exactness criterion
        // holds against the integral of the piecewise rate.
        let horizon = 4 * NS_PER_S;
        let mut s = RateStage::new(RateSpec::Fixed { bps: 20_000_000 }, None, None);
        for i in 0..40_000 {
            s.enqueue(0, pkt(i, mixed_len(i))).unwrap();
        }
        let mut segs = vec![(0, 20_000_000u64)];
        let mut out = Vec::new();
        let mut t: Nanos = 0;
        let mut x: u64 = 12345;
        loop {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            t += 1 + (x >> 33) % (37 * NS_PER_MS);
            if t >= horizon {
                break;
            }
            let bps = [0, 1_000_000, 20_000_000, 33_330_000, 123_456_789][(x >> 20) as usize % 5];
            // Poll at some changes but not others: must not matter.
            if x & 1 == 0 {
                s.poll(t, &mut |t, p| out.push((t, p)));
            }
            s.set_spec(t, RateSpec::Fixed { bps });
            segs.push((t, bps));
        }
        s.poll(horizon, &mut |t, p| out.push((t, p)));
        let cap = Cap::new(segs);
        let bytes = assert_exact(&out, &cap);
        let ideal = cap.at(horizon) / UNITS_PER_BYTE;
        assert!(bytes as u128 <= ideal && ideal - bytes as u128 <= 1500);
    }

    fn steps_trace(steps: Vec<(Nanos, u64)>) -> Arc<RateTrace> {
        Arc::new(RateTrace::Steps { steps })
    }

    #[test]
    fn steps_trace_is_exact_with_looping_zero_rates_and_offset() {
        let ms = NS_PER_MS;
        let steps = vec![
            (300 * ms, 8_000_000),
            (0, 99),
            (200 * ms, 0),
            (500 * ms + 7, 16_000_001),
        ];
        let trace = steps_trace(steps.clone());
        let offset = 50 * ms;
        let horizon = 5 * NS_PER_S;
        let spec = RateSpec::Trace {
            trace,
            looping: true,
            start_offset: offset,
        };
        let out = saturated(spec, 10_000, mixed_len, horizon);
        // Capacity: nothing before the offset, then the steps repeated.
        let mut segs = vec![(0, 0)];
        let mut t = offset;
        while t < horizon {
            for &(d, bps) in &steps {
                if d > 0 {
                    segs.push((t, bps));
                    t += d;
                }
            }
        }
        let cap = Cap::new(segs);
        let bytes = assert_exact(&out, &cap);
        assert!(cap.at(horizon) / UNITS_PER_BYTE - bytes as u128 <= 1500);
        assert!(out[0].0 > offset);
        // Nothing departs during the zero-rate steps (open interval).
        for &(t, _) in &out {
            let w = (t - offset) % (1000 * ms + 7);
            assert!(
                !(w > 300 * ms && w < 500 * ms),
                "departure at {t} during a zero step"
            );
        }
    }

    #[test]
    fn non_looping_steps_hold_the_last_rate() {
        let trace = steps_trace(vec![(NS_PER_MS, 12_000_000), (NS_PER_MS, 24_000_000)]);
        let spec = RateSpec::Trace {
            trace,
            looping: false,
            start_offset: 0,
        };
        let out = saturated(spec, 10, |_| 1500, NS_PER_S);
        let t: Vec<Nanos> = out.iter().map(|o| o.0).collect();
        // 1 ms per packet, then 0.5 ms per packet, held after the trace ends at 2 ms.
        assert_eq!(
            t,
            vec![
                1_000_000, 1_500_000, 2_000_000, 2_500_000, 3_000_000, 3_500_000, 4_000_000,
                4_500_000, 5_000_000, 5_500_000
            ]
        );
    }

    #[test]
    fn step_boundaries_are_deadlines_only_while_busy() {
        let trace = steps_trace(vec![(NS_PER_MS, 0), (NS_PER_MS, 12_000_000)]);
        let mut s = RateStage::new(
            RateSpec::Trace {
                trace,
                looping: true,
                start_offset: 0,
            },
            None,
            None,
        );
        assert_eq!(s.next_deadline(), None);
        s.enqueue(100, pkt(0, 1500)).unwrap();
        assert_eq!(s.next_deadline(), Some(NS_PER_MS)); // the zero step ends
        let mut out = Vec::new();
        s.poll(NS_PER_MS, &mut |t, p| out.push((t, p.id)));
        assert_eq!(s.next_deadline(), Some(2 * NS_PER_MS)); // 12000 bits at 12 Mbit/s
        s.poll(2 * NS_PER_MS, &mut |t, p| out.push((t, p.id)));
        assert_eq!(out, vec![(2 * NS_PER_MS, 0)]);
        assert_eq!(s.next_deadline(), None);
    }

    fn opps(times_ms: Vec<u64>) -> Arc<RateTrace> {
        let period_ms = *times_ms.last().unwrap();
        Arc::new(RateTrace::Opportunities {
            times_ms,
            period_ms,
        })
    }

    #[test]
    fn opportunities_follow_mahimahi() {
        let spec = |looping| RateSpec::Trace {
            trace: opps(vec![0, 0, 3, 7]),
            looping,
            start_offset: 0,
        };
        let ms = |v: &[u64]| v.iter().map(|x| x * NS_PER_MS).collect::<Vec<_>>();
        // Saturated with MTU packets: one per opportunity, the trace looping with period 7.
        let out = saturated(spec(true), 12, |_| 1500, NS_PER_S);
        let t: Vec<Nanos> = out.iter().map(|o| o.0).collect();
        assert_eq!(t, ms(&[0, 0, 3, 7, 7, 7, 10, 14, 14, 14, 17, 21]));
        // Small packets share an opportunity; big ones span several (credit carries over).
        let out = saturated(spec(true), 7, |_| 500, NS_PER_S);
        assert_eq!(
            out.iter().map(|o| o.0).collect::<Vec<_>>(),
            ms(&[0, 0, 0, 0, 0, 0, 3])
        );
        let out = saturated(spec(true), 4, |_| 4000, NS_PER_S);
        // Cumulative credit 1500·j must cover 4000·k: k=1 at j=3, k=2 at j=6, 3 at 8, 4 at 11.
        assert_eq!(
            out.iter().map(|o| o.0).collect::<Vec<_>>(),
            ms(&[3, 7, 14, 17])
        );
        // Non-looping: serving stops at the end of the trace.
        let mut s = RateStage::new(spec(false), None, None);
        for i in 0..6 {
            s.enqueue(0, pkt(i, 1500)).unwrap();
        }
        let mut out = Vec::new();
        s.poll(NS_PER_S, &mut |t, _| out.push(t));
        assert_eq!(out, ms(&[0, 0, 3, 7]));
        assert_eq!((s.depth_packets(), s.next_deadline()), (2, None));
    }

    #[test]
    fn idle_opportunities_are_lost_and_leftover_credit_is_instantaneous() {
        let trace = opps(vec![0, 0, 3, 7]);
        let mut s = RateStage::new(
            RateSpec::Trace {
                trace,
                looping: true,
                start_offset: 0,
            },
            None,
            None,
        );
        let mut out = Vec::new();
        s.enqueue(0, pkt(0, 500)).unwrap(); // first opportunity at 0: 1000 bytes left
        s.enqueue(0, pkt(1, 500)).unwrap(); // same instant: uses the leftover
        s.enqueue(0, pkt(2, 2000)).unwrap(); // 500 left + second opportunity at 0
        s.poll(0, &mut |t, p| out.push((t, p.id)));
        assert_eq!(out, vec![(0, 0), (0, 1), (0, 2)]);
        // At 1 ms the leftover is gone; the next opportunity is at 3 ms.
        s.enqueue(NS_PER_MS, pkt(3, 100)).unwrap();
        assert_eq!(s.next_deadline(), Some(3 * NS_PER_MS));
        // Opportunity at 7 and 7 (wrap) pass unused while idle; arriving at 8 waits for 10.
        s.enqueue(8 * NS_PER_MS, pkt(4, 100)).unwrap();
        s.poll(NS_PER_S, &mut |t, p| out.push((t, p.id)));
        assert_eq!(out[3..], [(3 * NS_PER_MS, 3), (10 * NS_PER_MS, 4)]);
        // An arrival exactly at an opportunity instant uses it.
        s.enqueue(14 * NS_PER_MS, pkt(5, 1500)).unwrap();
        s.poll(NS_PER_S, &mut |t, p| out.push((t, p.id)));
        assert_eq!(out[5], (14 * NS_PER_MS, 5));
    }

    #[test]
    fn unlimited_departs_at_arrival() {
        let mut s = RateStage::new(RateSpec::Unlimited, Some(1), None);
        for i in 0..5 {
            s.enqueue(i as Nanos * 10, pkt(i, 9000)).unwrap();
        }
        let mut out = Vec::new();
        s.poll(1000, &mut |t, p| out.push((t, p.id)));
        assert_eq!(
            out,
            (0..5).map(|i| (i as Nanos * 10, i)).collect::<Vec<_>>()
        );
        assert_eq!(s.depth_packets(), 0);
    }

    #[test]
    fn limits_count_the_packet_in_service() {
        let mut s = RateStage::new(RateSpec::Fixed { bps: 12_000_000 }, Some(3), None); // 1 ms per MTU
        for i in 0..3 {
            s.enqueue(0, pkt(i, 1500)).unwrap();
        }
        assert_eq!(s.enqueue(0, pkt(3, 1500)), Err(Refused::Full(pkt(3, 1500))));
        assert_eq!((s.depth_packets(), s.depth_bytes()), (3, 4500));
        // Just before the head departs it still counts; at its departure it frees a slot,
        // even though nobody polled in between.
        assert!(s.enqueue(NS_PER_MS - 1, pkt(4, 1500)).is_err());
        s.enqueue(NS_PER_MS, pkt(5, 1500)).unwrap();
        assert_eq!(s.depth_packets(), 3);
        let mut out = Vec::new();
        s.poll(10 * NS_PER_MS, &mut |t, p| out.push((t, p.id)));
        assert_eq!(
            out,
            vec![
                (NS_PER_MS, 0),
                (2 * NS_PER_MS, 1),
                (3 * NS_PER_MS, 2),
                (4 * NS_PER_MS, 5)
            ]
        );

        let mut s = RateStage::new(RateSpec::Fixed { bps: 12_000_000 }, None, Some(3000));
        s.enqueue(0, pkt(0, 1500)).unwrap();
        s.enqueue(0, pkt(1, 1000)).unwrap();
        assert!(s.enqueue(0, pkt(2, 501)).is_err());
        s.enqueue(0, pkt(3, 500)).unwrap();
        assert_eq!(s.depth_bytes(), 3000);
    }

    #[test]
    fn busy_time_covers_service_and_not_idling() {
        // 1250 bytes at 10 Mbit/s: 1 ms each.
        let mut s = RateStage::new(RateSpec::Fixed { bps: 10_000_000 }, None, None);
        let mut out = Vec::new();
        s.enqueue(0, pkt(0, 1250)).unwrap();
        s.enqueue(0, pkt(1, 1250)).unwrap();
        s.poll(NS_PER_S / 1000, &mut |t, p| out.push((t, p)));
        assert_eq!(s.busy(NS_PER_S / 1000), NS_PER_S / 1000);
        s.poll(10 * NS_PER_S / 1000, &mut |t, p| out.push((t, p)));
        // Busy 2 ms, idle since.
        assert_eq!(s.busy(10 * NS_PER_S / 1000), 2 * NS_PER_S / 1000);
        assert_eq!(s.served_bytes(), 2500);
        s.enqueue(20 * NS_PER_S / 1000, pkt(2, 1250)).unwrap();
        s.poll(20 * NS_PER_S / 1000 + NS_PER_S / 2000, &mut |t, p| {
            out.push((t, p))
        });
        assert_eq!(s.busy(20 * NS_PER_S / 1000 + NS_PER_S / 2000), 2_500_000);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn taking_packets_keeps_the_rest_in_order_and_restarts_service() {
        // 1250 bytes at 10 Mbit/s: 1 ms each; bearers 0 and 1 alternate.
        let mut s = RateStage::new(RateSpec::Fixed { bps: 10_000_000 }, None, None);
        for i in 0..6u32 {
            let mut p = pkt(i, 1250);
            p.bearer = (i % 2) as u16;
            s.enqueue(0, p).unwrap();
        }
        let mut out = Vec::new();
        s.poll(NS_PER_S / 2000, &mut |t, p| out.push((t, p.id)));
        // Half-way through packet 0 (bearer 0, in service): take bearer 0.
        let taken = s.take_where(NS_PER_S / 2000, |p| p.bearer == 0);
        assert_eq!(taken.iter().map(|p| p.id).collect::<Vec<_>>(), [0, 2, 4]);
        assert_eq!((s.depth_packets(), s.depth_bytes()), (3, 3750));
        s.poll(NS_PER_S, &mut |t, p| out.push((t, p.id)));
        // Packet 1 starts at 0.5 ms: done at 1.5, 2.5, 3.5 ms.
        let ms = NS_PER_S / 1000;
        assert_eq!(out, [(3 * ms / 2, 1), (5 * ms / 2, 3), (7 * ms / 2, 5)]);
        assert_eq!(s.busy(NS_PER_S), 7 * ms / 2);
    }

    #[test]
    fn the_step_found_is_the_search_s_in_any_order_of_questions() {
        // Zero-length steps, a zero rate, equal ends: the remembered step must give what a
        // search over the whole trace gives, asked forwards, backwards and at random.
        let steps = vec![
            (5, 1),
            (0, 2),
            (3, 0),
            (0, 4),
            (0, 5),
            (7, 6),
            (1, 7),
            (4, 8),
        ];
        let sched = Sched::new(RateSpec::Trace {
            trace: steps_trace(steps),
            looping: true,
            start_offset: 2,
        });
        let Sched::Steps { segs, total, .. } = &sched else {
            unreachable!()
        };
        let searched = |t: Nanos| {
            let w = (t - 2) % total;
            let (end, bps) = segs[segs.partition_point(|s| s.0 <= w)];
            (bps, Some(t - w + end))
        };
        let mut ts: Vec<Nanos> = (2..100).collect();
        ts.extend((2..100).rev());
        ts.extend((0..500u64).map(|i| 2 + i.wrapping_mul(7919) % 97));
        for t in ts {
            assert_eq!(sched.fluid_at(t), searched(t), "at {t}");
        }
    }

    // -- AQM on the stage ------------------------------------------------------------------

    use crate::base::packet::{CE, ECT0, NOT_ECT};
    use crate::qdisc::codel::{Codel, CodelParams, DEFAULT_INTERVAL, DEFAULT_TARGET};
    use crate::qdisc::fq_codel::{FqCodel, FqCodelParams};
    use crate::qdisc::pie::{Pie, PieParams};

    const MBIT20: RateSpec = RateSpec::Fixed { bps: 20_000_000 };

    fn codel_stage(ecn: bool) -> RateStage {
        RateStage::new(MBIT20, Some(1000), None).with_aqm(Aqm::Codel(Codel::new(CodelParams::new(
            DEFAULT_TARGET,
            DEFAULT_INTERVAL,
            1500,
            ecn,
        ))))
    }

    /// `n` packets of 1500 bytes queued at 0 and served at 20 Mbit/s (0.6 ms each): the
    /// departures (instant, packet), the packets CoDel dropped.
    fn burst(s: &mut RateStage, n: u32, ecn: u8) -> (Vec<(Nanos, Pkt)>, Vec<Pkt>) {
        for i in 0..n {
            let mut p = pkt(i, 1500);
            p.ecn = ecn;
            s.enqueue(0, p).unwrap();
        }
        let (mut out, mut dropped) = (Vec::new(), Vec::new());
        for t in 0..3_000u64 {
            s.poll(t * NS_PER_MS / 10, &mut |at, p| out.push((at, p)));
            s.take_aqm_dropped(&mut dropped);
        }
        (out, dropped)
    }

    #[test]
    fn codel_drops_heads_once_a_burst_has_waited_over_target_for_an_interval() {
        let mut s = codel_stage(false);
        let (out, dropped) = burst(&mut s, 400, NOT_ECT);
        assert_eq!(
            out.len() + dropped.len(),
            400,
            "every packet leaves or is dropped"
        );
        assert!(!dropped.is_empty());
        // The head first waits 5 ms or more at the 10th start (5.4 ms): the first drop is
        // an interval later, at a start at or after 105.4 ms (packet 176 would start then).
        let first = dropped[0].id;
        assert!((170..=180).contains(&first), "first dropped: {first}");
        let c = s.aqm_counters().unwrap();
        assert_eq!(
            (c.dropped_packets, c.dropped_bytes),
            (dropped.len() as u64, dropped.len() as u64 * 1500)
        );
        // Departures stay back to back at the rate: nothing idles for a dropped head.
        assert!(
            out.windows(2).all(|w| w[1].0 - w[0].0 == 600_000),
            "0.6 ms apart"
        );
        assert_eq!(s.served_bytes(), out.len() as u64 * 1500);
        assert_eq!(s.depth_packets(), 0);
    }

    #[test]
    fn codel_marks_an_ecn_capable_burst_instead_and_drops_none() {
        let mut plain = codel_stage(true);
        let (_, dropped) = burst(&mut plain, 400, NOT_ECT);
        let mut ect = codel_stage(true);
        let (out, none) = burst(&mut ect, 400, ECT0);
        assert!(none.is_empty());
        assert_eq!(out.len(), 400);
        let marked: Vec<u32> = out
            .iter()
            .filter(|(_, p)| p.ecn == CE)
            .map(|(_, p)| p.id)
            .collect();
        assert!(!marked.is_empty());
        assert_eq!(
            ect.aqm_counters().unwrap().marked_packets,
            marked.len() as u64
        );
        assert_eq!(
            marked[0], dropped[0].id,
            "the first mark where the first drop was"
        );
        assert!(out
            .iter()
            .filter(|(_, p)| p.ecn != CE)
            .all(|(_, p)| p.ecn == ECT0));
    }

    #[test]
    fn sojourn_is_each_packets_wait_before_its_service() {
        // Ten 1250-byte packets at once into 20 Mbit/s: each is served in 0.5 ms, so the
        // k-th waits k x 0.5 ms; one more, after the queue drained, waits nothing.
        let mut s = RateStage::new(MBIT20, None, None);
        for i in 0..10 {
            s.enqueue(0, pkt(i, 1250)).unwrap();
        }
        s.enqueue(20 * NS_PER_MS, pkt(10, 1250)).unwrap();
        let mut out = Vec::new();
        s.poll(30 * NS_PER_MS, &mut |t, p| out.push((t, p)));
        assert_eq!(out.len(), 11);
        let h = s.sojourn();
        assert_eq!((h.count(), h.max()), (11, 9 * NS_PER_MS / 2));
        assert_eq!(
            h.mean(),
            (0..10).map(|k| k as f64 * 0.5e6).sum::<f64>() / 11.0
        );
        // the 6th of 11 (0, 0, 0.5, ..., 2 ms), as the middle of its bucket (about 12 % wide)
        let p50 = h.quantile(0.5) as f64;
        assert!((p50 - 2e6).abs() < 0.07 * 2e6, "p50 {p50}");
    }

    #[test]
    fn tail_drop_alone_is_the_default_and_reports_no_aqm() {
        let mut s = RateStage::new(MBIT20, Some(1000), None);
        let (out, dropped) = burst(&mut s, 400, NOT_ECT);
        assert_eq!((out.len(), dropped.len()), (400, 0));
        assert!(s.aqm_counters().is_none());
    }

    #[test]
    fn pie_holds_an_overloaded_stage_near_its_target_delay() {
        // 20 Mbit/s served, 30 Mbit/s offered without reacting to drops, for 20 s.
        let mut s = RateStage::new(MBIT20, Some(1000), None).with_aqm(Aqm::Pie(Pie::new(
            PieParams::new(1500, false),
            0,
            3,
        )));
        let gap = 400_000; // 1500 B every 0.4 ms
        let (mut refused_aqm, mut refused_full) = (0, 0);
        let mut waits = Vec::new();
        let mut born = std::collections::HashMap::new();
        let mut t = 0;
        let mut id = 0u32;
        while t < 20 * NS_PER_S {
            s.poll(t, &mut |at, p| {
                if at > 10 * NS_PER_S {
                    waits.push(at - born[&p.id] - 600_000); // less its own service
                }
            });
            match s.enqueue(t, pkt(id, 1500)) {
                Ok(()) => {
                    born.insert(id, t);
                }
                Err(Refused::Aqm(_)) => refused_aqm += 1,
                Err(Refused::Full(_)) => refused_full += 1,
            }
            id += 1;
            t += gap;
        }
        let mean_ms = waits.iter().sum::<u64>() as f64 / waits.len() as f64 / 1e6;
        assert!((10.0..20.0).contains(&mean_ms), "mean wait {mean_ms:.1} ms");
        assert_eq!(refused_full, 0, "PIE keeps the queue far below its limit");
        assert_eq!(s.aqm_counters().unwrap().dropped_packets, refused_aqm);
        let share = refused_aqm as f64 / id as f64;
        assert!(
            (0.30..0.36).contains(&share),
            "dropped {share:.3} (a third is the excess)"
        );
    }

    fn fq_stage(limit: u32, ecn: bool) -> RateStage {
        let p = FqCodelParams::new(CodelParams::new(
            DEFAULT_TARGET,
            DEFAULT_INTERVAL,
            1500,
            ecn,
        ));
        RateStage::new(MBIT20, Some(limit), None).with_aqm(Aqm::FqCodel(FqCodel::new(p)))
    }

    fn flow_pkt(id: u32, len: u32, flow: u16) -> Pkt {
        Pkt {
            flow,
            ..pkt(id, len)
        }
    }

    #[test]
    fn fq_codel_serves_one_flow_exactly_as_the_fifo_does() {
        // One flow, mixed sizes, arrivals bunched and spread, queues under CoDel's target:
        // the same departures, to the nanosecond, as tail drop's.
        let mut fifo = RateStage::new(MBIT20, Some(1000), None);
        let mut fq = fq_stage(1000, false);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for i in 0..400u32 {
            let at = u64::from(i / 4) * 1_700_000 + u64::from(i % 4) * 1000; // bursts of 4
            let p = flow_pkt(i, mixed_len(i), 7);
            fifo.enqueue(at, p).unwrap();
            fq.enqueue(at, p).unwrap();
            fifo.poll(at, &mut |t, p| a.push((t, p)));
            fq.poll(at, &mut |t, p| b.push((t, p)));
            assert_eq!(fifo.depth_bytes(), fq.depth_bytes());
        }
        fifo.poll(NS_PER_S, &mut |t, p| a.push((t, p)));
        fq.poll(NS_PER_S, &mut |t, p| b.push((t, p)));
        assert_eq!(a.len(), 400);
        assert_eq!(a, b);
        assert_eq!(fifo.busy(NS_PER_S), fq.busy(NS_PER_S));
        assert_eq!(fq.aqm_counters(), Some(AqmCounters::default()));
    }

    #[test]
    fn fq_codel_lets_a_sparse_flow_pass_a_bulk_flows_standing_queue() {
        // 300 packets of a bulk flow at 0 (a 180 ms queue at 0.6 ms each), then one packet
        // of another flow at 50 ms: FQ-CoDel serves it next (a new flow), the FIFO last.
        let run = |mut s: RateStage| {
            for i in 0..300 {
                s.enqueue(0, flow_pkt(i, 1500, 1)).unwrap();
            }
            s.enqueue(50 * NS_PER_MS, flow_pkt(300, 1500, 2)).unwrap();
            let mut out = Vec::new();
            s.poll(NS_PER_S, &mut |t, p| out.push((t, p)));
            let sparse = out.iter().find(|(_, p)| p.id == 300).unwrap().0;
            (sparse - 50 * NS_PER_MS, s.sojourn().max())
        };
        let (fifo_wait, _) = run(RateStage::new(MBIT20, Some(1000), None));
        let (fq_wait, fq_max) = run(fq_stage(1000, true));
        assert!(fifo_wait > 120 * NS_PER_MS, "fifo {fifo_wait}");
        // the packet in service at 50 ms finishes by 50.6 ms, then the new flow's
        assert!(fq_wait <= 1_200_000, "fq {fq_wait}");
        assert!(
            fq_max >= 170 * NS_PER_MS,
            "the bulk flow still waits: {fq_max}"
        );
    }

    #[test]
    fn fq_codel_drops_a_bulk_flows_standing_queue_and_marks_it_with_ecn() {
        let mut s = fq_stage(1000, false);
        let (out, dropped) = burst(&mut s, 400, NOT_ECT);
        assert_eq!(out.len() + dropped.len(), 400);
        assert!(!dropped.is_empty());
        let first = dropped[0].id;
        assert!(
            (170..=180).contains(&first),
            "first dropped: {first}, as CoDel alone"
        );
        assert_eq!(
            s.aqm_counters().unwrap().dropped_packets,
            dropped.len() as u64
        );
        let mut ect = fq_stage(1000, true);
        let (out, none) = burst(&mut ect, 400, ECT0);
        assert!(none.is_empty() && out.len() == 400);
        let marked = out.iter().filter(|(_, p)| p.ecn == CE).count() as u64;
        assert!(marked > 0 && ect.aqm_counters().unwrap().marked_packets == marked);
    }

    #[test]
    fn fq_codels_limit_drops_from_the_fattest_flow_and_take_where_reaches_every_flow() {
        // 10 packets in all: 8 of flow 1, then 4 of flow 2; the limit evicts flow 1's heads.
        let mut s = fq_stage(10, false);
        for i in 0..8 {
            s.enqueue(0, flow_pkt(i, 1500, 1)).unwrap();
        }
        for i in 8..12 {
            s.enqueue(0, flow_pkt(i, 1000, 2)).unwrap();
        }
        let mut evicted = Vec::new();
        assert!(s.has_aqm_dropped());
        s.take_evicted(&mut evicted);
        let ids: Vec<u32> = evicted.iter().map(|p| p.id).collect();
        assert_eq!(
            ids,
            vec![1, 2],
            "flow 1's oldest waiting packets (0 is in service)"
        );
        assert_eq!(s.depth_packets(), 10);
        assert_eq!(s.depth_bytes(), 6 * 1500 + 4 * 1000);
        assert_eq!(s.limit_bytes(1500), Some(10 * 1500));
        let taken = s.take_where(0, |p| p.flow == 2);
        assert_eq!(taken.len(), 4);
        assert_eq!((s.depth_packets(), s.depth_bytes()), (6, 6 * 1500));
        let mut out = Vec::new();
        s.poll(NS_PER_S, &mut |t, p| out.push((t, p)));
        let ids: Vec<u32> = out.iter().map(|(_, p)| p.id).collect();
        assert_eq!(ids, vec![0, 3, 4, 5, 6, 7]);
        assert_eq!(out.last().unwrap().0, 6 * 600_000, "back to back from 0");
        assert_eq!((s.depth_packets(), s.depth_bytes()), (0, 0));
    }
}
