//! PDCP receiver: duplicate/late detection and in-order delivery with t-Reordering
//! (TS 38.323 clause 5.2.2, as written down in `docs/pdcp-reordering.md`).
//!
//! The receiver never reads a clock. `receive` and `poll` take `now`; the running timer is
//! reported by `next_deadline` and fired by `poll` (or by the next `receive`). Events go to
//! a caller-supplied closure, so the hot path does not allocate: the reception buffer is a
//! ring of W = 2^(L-1) slots created up front.

use super::count::SnSpace;
use super::PdcpError;
use crate::base::time::Nanos;
use crate::base::Histogram;
use serde::Serialize;

/// Receiver configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxConfig {
    /// SN length L: 12, 16 or 18.
    pub sn_bits: u8,
    /// t-Reordering; `None` is "infinity" (the timer never expires).
    pub t_reordering: Option<Nanos>,
    /// Deliver every new PDU on arrival (outOfOrderDelivery) instead of in COUNT order.
    pub out_of_order: bool,
    /// Initial value of RX_NEXT, RX_DELIV and RX_REORD.
    pub initial_count: u32,
}

impl RxConfig {
    pub fn validate(&self) -> Result<(), PdcpError> {
        SnSpace::new(self.sn_bits).map(|_| ())
    }
}

/// Why a PDU was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscardReason {
    /// RCVD_COUNT < RX_DELIV: already delivered or given up.
    Late,
    /// The same COUNT is already in the buffer.
    Duplicate,
    /// The HFN would be negative or beyond the COUNT space (or the SN is out of range).
    Hfn,
}

impl DiscardReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DiscardReason::Late => "late",
            DiscardReason::Duplicate => "duplicate",
            DiscardReason::Hfn => "hfn",
        }
    }
}

/// What the receiver tells its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxEvent<T> {
    /// Hand `item` (COUNT `count`) to the upper layer at instant `at`.
    Deliver { at: Nanos, count: u32, item: T },
    /// `item`, received with SN `sn`, was dropped at `at`.
    Discard {
        at: Nanos,
        sn: u32,
        reason: DiscardReason,
        item: T,
    },
}

/// Per-entity statistics.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RxCounters {
    pub pdus_received: u64,
    pub delivered: u64,
    pub discarded_late: u64,
    pub discarded_duplicate: u64,
    pub discarded_hfn: u64,
    pub timer_starts: u64,
    pub timer_stops: u64,
    pub timer_expiries: u64,
    /// COUNTs never received that an expiry skipped over.
    pub counts_given_up: u64,
    /// PDUs whose COUNT the receiver rebuilt wrongly from their SN: sent more than half the
    /// SN space before RX_DELIV (HFN desynchronisation), so taken for a later COUNT. The
    /// receiver sees only the SN; the testbed knows the COUNT sent (`receive_sent`).
    pub counts_misread: u64,
    /// Most SDUs held in the buffer at once.
    pub buffer_high_water: u32,
    /// Time each delivered SDU spent in the buffer (0 for out-of-order delivery). Records
    /// write it beside the counters, as a summary with or without its buckets
    /// (`engine::record::RxRecord`).
    #[serde(skip_serializing)]
    pub wait: Histogram,
}

/// One buffered PDU. `count` tells a live entry from a stale one sharing the ring index.
#[derive(Clone, Copy)]
struct Slot<T> {
    count: u32,
    arrived: Nanos,
    item: T,
    /// Not yet delivered (always true unless in out-of-order mode, where the slot only
    /// remembers that the COUNT was received).
    pending: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timer {
    Stopped,
    /// Running; `None` means an infinite timer that never expires.
    Running(Option<Nanos>),
}

/// A PDCP receiving entity carrying a `Copy` item (a packet descriptor) per PDU.
pub struct PdcpRx<T: Copy> {
    cfg: RxConfig,
    space: SnSpace,
    /// Ring indexed by COUNT mod W. Live COUNTs lie in [RX_DELIV, RX_NEXT) and that range
    /// is at most W wide, so they never collide.
    ring: Vec<Option<Slot<T>>>,
    // State variables are u64 so that RX_NEXT = last COUNT + 1 cannot wrap to 0.
    rx_next: u64,
    rx_deliv: u64,
    rx_reord: u64,
    timer: Timer,
    /// Slots in use (pending or merely remembered).
    stored: u32,
    /// Slots holding an undelivered SDU.
    held: u32,
    counters: RxCounters,
}

impl<T: Copy> PdcpRx<T> {
    /// Creates a receiver. Panics if `cfg.sn_bits` is not 12, 16 or 18 (see `try_new`).
    pub fn new(cfg: RxConfig) -> Self {
        Self::try_new(cfg).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Creates a receiver, or explains why the configuration is invalid.
    pub fn try_new(cfg: RxConfig) -> Result<Self, PdcpError> {
        let space = SnSpace::new(cfg.sn_bits)?;
        let init = cfg.initial_count as u64;
        Ok(PdcpRx {
            cfg,
            space,
            ring: vec![None; space.window() as usize],
            rx_next: init,
            rx_deliv: init,
            rx_reord: init,
            timer: Timer::Stopped,
            stored: 0,
            held: 0,
            counters: RxCounters::default(),
        })
    }

    pub fn config(&self) -> &RxConfig {
        &self.cfg
    }

    pub fn counters(&self) -> &RxCounters {
        &self.counters
    }

    /// SDUs currently waiting in the buffer for in-order delivery.
    pub fn occupancy(&self) -> u32 {
        self.held
    }

    /// (RX_NEXT, RX_DELIV, RX_REORD). A value of 2^32 (COUNT space used up) reads as
    /// `u32::MAX`; `state_wide` gives the exact values.
    pub fn state(&self) -> (u32, u32, u32) {
        let n = |x: u64| x.min(u32::MAX as u64) as u32;
        (n(self.rx_next), n(self.rx_deliv), n(self.rx_reord))
    }

    /// (RX_NEXT, RX_DELIV, RX_REORD) without saturation.
    pub fn state_wide(&self) -> (u64, u64, u64) {
        (self.rx_next, self.rx_deliv, self.rx_reord)
    }

    /// Whether t-Reordering is running (an infinite timer counts as running).
    pub fn timer_running(&self) -> bool {
        self.timer != Timer::Stopped
    }

    /// The instant t-Reordering expires, if it is running and finite.
    pub fn next_deadline(&self) -> Option<Nanos> {
        match self.timer {
            Timer::Running(d) => d,
            Timer::Stopped => None,
        }
    }

    /// Fires every timer expiry due at or before `now`, in order. Each expiry's events
    /// carry its own instant, and a restarted timer counts from that instant.
    pub fn poll(&mut self, now: Nanos, out: &mut impl FnMut(RxEvent<T>)) {
        while let Timer::Running(Some(deadline)) = self.timer {
            if deadline > now {
                break;
            }
            self.expire(deadline, out);
        }
    }

    /// `receive`, and counts a PDU whose COUNT the receiver rebuilds other than `sent`, the
    /// COUNT it was sent with (`counts_misread`). What the receiver does is `receive`'s: it
    /// acts on the SN alone.
    pub fn receive_sent(
        &mut self,
        now: Nanos,
        sn: u32,
        sent: u32,
        item: T,
        out: &mut impl FnMut(RxEvent<T>),
    ) {
        self.accept(now, sn, Some(sent), item, out);
    }

    /// Processes one PDU arriving at `now` (clause 5.2.2.1). Expiries due at or before
    /// `now` are fired first, so a caller that never polls is still correct.
    pub fn receive(&mut self, now: Nanos, sn: u32, item: T, out: &mut impl FnMut(RxEvent<T>)) {
        self.accept(now, sn, None, item, out);
    }

    /// [`Self::receive`], counting a misread when the COUNT rebuilt is not `sent`.
    fn accept(
        &mut self,
        now: Nanos,
        sn: u32,
        sent: Option<u32>,
        item: T,
        out: &mut impl FnMut(RxEvent<T>),
    ) {
        // The COUNT is rebuilt against RX_DELIV after the expiries due.
        self.poll(now, out);
        self.counters.pdus_received += 1;

        // Step 1: rebuild the COUNT. An SN outside the space cannot be mapped either.
        let count = (sn < self.space.modulus())
            .then(|| self.space.rcvd_count(sn, self.rx_deliv))
            .flatten();
        if sent.is_some_and(|sent| count != Some(sent)) {
            self.counters.counts_misread += 1;
        }
        let Some(count) = count else {
            return self.discard(now, sn, DiscardReason::Hfn, item, out);
        };
        let c = count as u64;

        // Step 2: late or duplicate.
        if c < self.rx_deliv {
            return self.discard(now, sn, DiscardReason::Late, item, out);
        }
        let idx = self.index(c);
        if let Some(slot) = &self.ring[idx] {
            debug_assert_eq!(slot.count, count, "stale ring slot");
            return self.discard(now, sn, DiscardReason::Duplicate, item, out);
        }

        // Step 3: store.
        let pending = !self.cfg.out_of_order;
        self.ring[idx] = Some(Slot {
            count,
            arrived: now,
            item,
            pending,
        });
        self.stored += 1;
        if c >= self.rx_next {
            self.rx_next = c + 1;
        }

        if pending {
            self.held += 1;
            self.counters.buffer_high_water = self.counters.buffer_high_water.max(self.held);
        } else {
            // Step 4: out-of-order delivery; the slot only remembers the reception.
            self.deliver(now, count, now, item, out);
        }

        // Step 5: in-order flush from RX_DELIV.
        if c == self.rx_deliv {
            self.flush_consecutive(now, out);
        }

        // Step 6: stop once RX_DELIV has caught up with RX_REORD (>=, not >).
        if self.timer_running() && self.rx_deliv >= self.rx_reord {
            self.timer = Timer::Stopped;
            self.counters.timer_stops += 1;
        }
        // Step 7: start if there is still a gap. RX_REORD is only set here or at expiry.
        if !self.timer_running() && self.rx_deliv < self.rx_next {
            self.start_timer(now);
        }
        // A zero timer expires at the instant it started.
        self.poll(now, out);
    }

    /// t-Reordering expiry at instant `at` (clause 5.2.2.2).
    fn expire(&mut self, at: Nanos, out: &mut impl FnMut(RxEvent<T>)) {
        self.timer = Timer::Stopped;
        self.counters.timer_expiries += 1;
        let reord = self.rx_reord.max(self.rx_deliv);

        // Step 1a: deliver whatever is stored below RX_REORD; the gaps are given up.
        let mut received = 0u64;
        let mut c = self.rx_deliv;
        while c < reord && self.stored > 0 {
            if self.take(c, at, out) {
                received += 1;
            }
            c += 1;
        }
        self.counters.counts_given_up += (reord - self.rx_deliv) - received;

        // Steps 1b and 2: move RX_DELIV to RX_REORD first, then flush from there, or SDUs
        // just after RX_REORD would stay stuck.
        self.rx_deliv = reord;
        self.flush_consecutive(at, out);

        // Step 3: restart from the expiry instant if a gap remains.
        if self.rx_deliv < self.rx_next {
            self.start_timer(at);
        }
    }

    fn start_timer(&mut self, at: Nanos) {
        self.rx_reord = self.rx_next;
        self.timer = Timer::Running(self.cfg.t_reordering.map(|t| at.saturating_add(t)));
        self.counters.timer_starts += 1;
    }

    /// Delivers stored SDUs with consecutive COUNTs from RX_DELIV and advances RX_DELIV to
    /// the first COUNT not received.
    fn flush_consecutive(&mut self, at: Nanos, out: &mut impl FnMut(RxEvent<T>)) {
        // Stored COUNTs are below RX_NEXT, which also keeps RX_DELIV <= 2^32.
        while self.rx_deliv < self.rx_next && self.take(self.rx_deliv, at, out) {
            self.rx_deliv += 1;
        }
    }

    /// Removes COUNT `c` from the ring if stored, delivering it if still pending.
    /// Returns whether it was stored.
    fn take(&mut self, c: u64, at: Nanos, out: &mut impl FnMut(RxEvent<T>)) -> bool {
        let idx = self.index(c);
        match self.ring[idx] {
            Some(slot) if slot.count as u64 == c => {
                self.ring[idx] = None;
                self.stored -= 1;
                if slot.pending {
                    self.held -= 1;
                    self.deliver(at, slot.count, slot.arrived, slot.item, out);
                }
                true
            }
            _ => false,
        }
    }

    fn deliver(
        &mut self,
        at: Nanos,
        count: u32,
        arrived: Nanos,
        item: T,
        out: &mut impl FnMut(RxEvent<T>),
    ) {
        self.counters.delivered += 1;
        self.counters.wait.record(at.saturating_sub(arrived));
        out(RxEvent::Deliver { at, count, item });
    }

    fn discard(
        &mut self,
        at: Nanos,
        sn: u32,
        reason: DiscardReason,
        item: T,
        out: &mut impl FnMut(RxEvent<T>),
    ) {
        let c = &mut self.counters;
        match reason {
            DiscardReason::Late => c.discarded_late += 1,
            DiscardReason::Duplicate => c.discarded_duplicate += 1,
            DiscardReason::Hfn => c.discarded_hfn += 1,
        }
        out(RxEvent::Discard {
            at,
            sn,
            reason,
            item,
        });
    }

    fn index(&self, c: u64) -> usize {
        (c % self.ring.len() as u64) as usize
    }

    /// Checks the state invariants of the spec's pitfalls section (tests only).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let w = self.space.window() as u64;
        assert!(self.rx_deliv <= self.rx_next, "RX_DELIV > RX_NEXT");
        assert!(self.rx_next - self.rx_deliv <= w, "RX_NEXT - RX_DELIV > W");
        assert!(self.rx_next <= 1 << 32);
        if self.timer_running() {
            assert!(self.rx_deliv < self.rx_reord && self.rx_reord <= self.rx_next);
        } else {
            assert!(self.rx_deliv == self.rx_next, "gap but no timer");
        }
        // Everything stored lies in [RX_DELIV, RX_NEXT) (a window scan, cheap enough
        // to run after every step), and the slot counters match.
        let (mut stored, mut held) = (0, 0);
        for c in self.rx_deliv..self.rx_next {
            if let Some(s) = &self.ring[self.index(c)] {
                if s.count as u64 == c {
                    stored += 1;
                    held += s.pending as u32;
                }
            }
        }
        assert_eq!((stored, held), (self.stored, self.held));
        // RX_DELIV itself is never stored: it would have been flushed.
        let at_deliv = self.ring[self.index(self.rx_deliv)];
        assert!(
            at_deliv.is_none_or(|s| s.count as u64 != self.rx_deliv),
            "RX_DELIV stored"
        );
    }

    /// Full ring scan: no slot holds a COUNT outside [RX_DELIV, RX_NEXT) (tests only).
    #[cfg(test)]
    pub(crate) fn check_ring(&self) {
        self.check_invariants();
        let live = self.ring.iter().filter(|s| s.is_some()).count() as u32;
        assert_eq!(live, self.stored, "stale slot left in the ring");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::NS_PER_MS as MS;
    use DiscardReason::*;

    /// An event without its item: `D(at, count)` or `X(at, sn, reason)`, times in ns.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Ev {
        D(Nanos, u32),
        X(Nanos, u32, DiscardReason),
    }

    fn d(ms: u64, count: u32) -> Ev {
        Ev::D(ms * MS, count)
    }
    fn x(ms: u64, sn: u32, r: DiscardReason) -> Ev {
        Ev::X(ms * MS, sn, r)
    }

    fn cfg(sn_bits: u8, t_ms: Option<u64>, initial_count: u32) -> RxConfig {
        RxConfig {
            sn_bits,
            t_reordering: t_ms.map(|t| t * MS),
            out_of_order: false,
            initial_count,
        }
    }

    /// Feeds `(sn, ms)` arrivals, then fires the remaining timers. The item is the SN, so
    /// each delivery can be checked against its COUNT.
    fn run(cfg: RxConfig, arrivals: &[(u32, u64)]) -> (PdcpRx<u32>, Vec<Ev>) {
        let mut rx = PdcpRx::new(cfg);
        let modulus = 1u32 << cfg.sn_bits;
        let mut evs = Vec::new();
        let mut sink = |e: RxEvent<u32>| {
            evs.push(match e {
                RxEvent::Deliver { at, count, item } => {
                    assert_eq!(count % modulus, item, "delivered the wrong SDU");
                    Ev::D(at, count)
                }
                RxEvent::Discard {
                    at,
                    sn,
                    reason,
                    item,
                } => {
                    assert_eq!(sn, item);
                    Ev::X(at, sn, reason)
                }
            })
        };
        for &(sn, ms) in arrivals {
            rx.receive(ms * MS, sn, sn, &mut sink);
            rx.check_invariants();
        }
        while let Some(dl) = rx.next_deadline() {
            rx.poll(dl, &mut sink);
            rx.check_invariants();
        }
        rx.check_ring();
        (rx, evs)
    }

    #[test]
    fn scenario_01_gap_filled_before_timer() {
        let (rx, evs) = run(cfg(12, Some(100), 0), &[(1, 0), (0, 5)]);
        assert_eq!(evs, [d(5, 0), d(5, 1)]);
        let c = rx.counters();
        assert_eq!((c.timer_starts, c.timer_stops, c.timer_expiries), (1, 1, 0));
        // COUNT 1 waited 5 ms, COUNT 0 not at all.
        assert_eq!(c.wait.count(), 2);
        assert_eq!(c.wait.quantile(0.5), 0);
        assert_eq!(c.wait.max(), 5 * MS);
        assert_eq!(rx.state(), (2, 2, 2));
    }

    #[test]
    fn scenario_02_expiry_then_late() {
        let (rx, evs) = run(cfg(12, Some(100), 0), &[(1, 0), (0, 150)]);
        assert_eq!(evs, [d(100, 1), x(150, 0, Late)]);
        let c = rx.counters();
        assert_eq!(
            (c.timer_expiries, c.counts_given_up, c.discarded_late),
            (1, 1, 1)
        );
    }

    #[test]
    fn scenario_03_two_waiting_then_fill() {
        let (_, evs) = run(cfg(12, Some(100), 0), &[(1, 0), (2, 10), (0, 20)]);
        assert_eq!(evs, [d(20, 0), d(20, 1), d(20, 2)]);
    }

    #[test]
    fn scenario_04_partial_fill_restarts_timer() {
        let (rx, evs) = run(cfg(12, Some(100), 0), &[(1, 0), (3, 10), (0, 20)]);
        assert_eq!(evs, [d(20, 0), d(20, 1), d(120, 3)]);
        let c = rx.counters();
        assert_eq!((c.timer_starts, c.timer_stops, c.timer_expiries), (2, 1, 1));
        assert_eq!(c.counts_given_up, 1);
    }

    #[test]
    fn scenario_05_two_expiries() {
        let (rx, evs) = run(cfg(12, Some(100), 0), &[(2, 0), (5, 50)]);
        assert_eq!(evs, [d(100, 2), d(200, 5)]);
        let c = rx.counters();
        assert_eq!((c.timer_expiries, c.counts_given_up), (2, 4));
        assert_eq!(rx.state(), (6, 6, 6));
    }

    #[test]
    fn scenario_06_fill_between_expiries() {
        let (_, evs) = run(cfg(12, Some(100), 0), &[(2, 0), (5, 50), (3, 150)]);
        assert_eq!(evs, [d(100, 2), d(150, 3), d(200, 5)]);
    }

    #[test]
    fn scenario_07_expiry_flushes_past_rx_reord() {
        // RX_DELIV must move to RX_REORD before the consecutive flush.
        let (_, evs) = run(cfg(12, Some(50), 0), &[(1, 0), (2, 10), (3, 20)]);
        assert_eq!(evs, [d(50, 1), d(50, 2), d(50, 3)]);
    }

    #[test]
    fn scenario_08_duplicate() {
        let (rx, evs) = run(cfg(12, Some(100), 0), &[(1, 0), (1, 5), (0, 10)]);
        assert_eq!(evs, [x(5, 1, Duplicate), d(10, 0), d(10, 1)]);
        assert_eq!(rx.counters().discarded_duplicate, 1);
    }

    #[test]
    fn scenario_09_sn_wrap_in_order() {
        let (_, evs) = run(
            cfg(12, Some(100), 4094),
            &[(4094, 0), (4095, 1), (0, 2), (1, 3)],
        );
        assert_eq!(evs, [d(0, 4094), d(1, 4095), d(2, 4096), d(3, 4097)]);
    }

    #[test]
    fn scenario_10_sn_wrap_reordered() {
        let (_, evs) = run(cfg(12, Some(100), 4094), &[(0, 0), (4095, 5), (4094, 10)]);
        assert_eq!(evs, [d(10, 4094), d(10, 4095), d(10, 4096)]);
    }

    #[test]
    fn scenario_11_eighteen_bit_wrap() {
        let arr = [(1, 0), (262_143, 50), (0, 60)];
        let (_, evs) = run(cfg(18, Some(40), 262_143), &arr);
        assert_eq!(evs, [d(40, 262_145), x(50, 262_143, Late), x(60, 0, Late)]);
    }

    /// HFN desynchronisation: with 12-bit SNs (a window of 2048), COUNT 5 held back while
    /// t-Reordering gives up on it and 2,055 later ones arrive comes back as COUNT 4101 (its
    /// SN rebuilt against RX_DELIV 2061, more than 2048 past it). The receiver acts on the
    /// SN alone and stores it as new; the test bed counts the misreading. Then the expiry
    /// skips RX_DELIV to 4102, and every PDU sent after (COUNT 2061 on) is discarded as late.
    #[test]
    fn a_pdu_held_past_half_the_sn_space_is_misread_and_counted() {
        let mut rx = PdcpRx::new(cfg(12, Some(10), 0));
        let mut evs = Vec::new();
        // Within the window of RX_DELIV (5) until t-Reordering gives up on COUNT 5 ...
        for c in (0..2053u32).filter(|&c| c != 5) {
            rx.receive_sent(MS, c % 4096, c, c, &mut |e| evs.push(e));
        }
        rx.poll(20 * MS, &mut |e| evs.push(e));
        // ... and of RX_DELIV (2053) after.
        for c in 2053..2061u32 {
            rx.receive_sent(25 * MS, c % 4096, c, c, &mut |e| evs.push(e));
        }
        assert_eq!(
            (rx.counters().counts_misread, rx.counters().counts_given_up),
            (0, 1)
        );
        rx.receive_sent(30 * MS, 5, 5, 5, &mut |e| evs.push(e));
        assert_eq!(rx.counters().counts_misread, 1, "COUNT 5 taken for 4101");
        rx.poll(50 * MS, &mut |e| evs.push(e)); // ... and waited for up to it
        let last = evs.iter().rev().find_map(|e| match e {
            RxEvent::Deliver { count, .. } => Some(*count),
            _ => None,
        });
        assert_eq!(last, Some(4101));
        evs.clear();
        for c in 2061..2070u32 {
            rx.receive_sent(60 * MS, c % 4096, c, c, &mut |e| evs.push(e));
        }
        let late = evs
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    RxEvent::Discard {
                        reason: DiscardReason::Late,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(late, 9, "every PDU sent after it is late");
        assert_eq!(
            rx.counters().counts_misread,
            1,
            "they are read right, and late"
        );
    }

    #[test]
    fn scenario_12_negative_hfn() {
        let want = [x(0, 2048, Hfn), d(1, 0)];
        for t in [Some(100), Some(0), None] {
            let (rx, evs) = run(cfg(12, t, 0), &[(2048, 0), (0, 1)]);
            assert_eq!(evs, want, "t-Reordering {t:?}");
            assert_eq!(rx.counters().discarded_hfn, 1);
        }
        let ooo = RxConfig {
            out_of_order: true,
            ..cfg(12, Some(100), 0)
        };
        assert_eq!(run(ooo, &[(2048, 0), (0, 1)]).1, want);
    }

    #[test]
    fn scenario_13_zero_timer() {
        let (rx, evs) = run(cfg(12, Some(0), 0), &[(1, 0), (0, 5), (2, 6)]);
        assert_eq!(evs, [d(0, 1), x(5, 0, Late), d(6, 2)]);
        assert_eq!(rx.next_deadline(), None);
        assert_eq!(rx.counters().timer_expiries, 1);
    }

    #[test]
    fn scenario_14_infinite_timer() {
        let (rx, evs) = run(cfg(12, None, 0), &[(1, 0), (0, 6000)]);
        assert_eq!(evs, [d(6000, 0), d(6000, 1)]);
        assert_eq!(rx.counters().timer_expiries, 0);
    }

    #[test]
    fn scenario_15_out_of_order() {
        let want = [d(0, 2), d(5, 0), d(10, 1), x(12, 1, Late)];
        for t in [Some(100), None] {
            let c = RxConfig {
                out_of_order: true,
                ..cfg(12, t, 0)
            };
            let (rx, evs) = run(c, &[(2, 0), (0, 5), (1, 10), (1, 12)]);
            assert_eq!(evs, want, "t-Reordering {t:?}");
            assert_eq!(rx.state(), (3, 3, 3));
            assert_eq!(rx.occupancy(), 0);
        }
    }

    #[test]
    fn infinite_timer_has_no_deadline_but_runs() {
        let mut rx = PdcpRx::new(cfg(12, None, 0));
        rx.receive(0, 1, (), &mut |_| {});
        assert!(rx.timer_running());
        assert_eq!(rx.next_deadline(), None);
        assert_eq!(rx.occupancy(), 1);
    }

    #[test]
    fn late_poll_fires_each_expiry_at_its_own_instant() {
        let mut rx = PdcpRx::new(cfg(12, Some(100), 0));
        let mut evs = Vec::new();
        rx.receive(0, 2, (), &mut |e| evs.push(e));
        rx.receive(50 * MS, 5, (), &mut |e| evs.push(e));
        assert_eq!(rx.next_deadline(), Some(100 * MS));
        rx.poll(99 * MS, &mut |e| evs.push(e));
        assert!(evs.is_empty());
        rx.poll(1000 * MS, &mut |e| evs.push(e));
        let got: Vec<_> = evs
            .iter()
            .map(|e| match *e {
                RxEvent::Deliver { at, count, .. } => (at, count),
                _ => panic!("{e:?}"),
            })
            .collect();
        assert_eq!(got, [(100 * MS, 2), (200 * MS, 5)]);
        assert_eq!(rx.next_deadline(), None);
    }

    #[test]
    fn expiry_at_arrival_instant_comes_first() {
        let (_, evs) = run(cfg(12, Some(100), 0), &[(1, 0), (0, 100)]);
        assert_eq!(evs, [d(100, 1), x(100, 0, Late)]);
    }

    #[test]
    fn wait_histogram_counts_expiry_wait() {
        let (rx, _) = run(cfg(12, Some(100), 0), &[(1, 0)]);
        let w = &rx.counters().wait;
        assert_eq!(w.count(), 1);
        assert_eq!(w.max(), 100 * MS);
        assert_eq!(rx.counters().buffer_high_water, 1);
    }

    #[test]
    fn last_count_of_the_space_does_not_wrap() {
        let init = u32::MAX - 1;
        let (rx, evs) = run(
            cfg(16, Some(10), init),
            &[(65535, 0), (65534, 1), (0, 2), (65535, 3)],
        );
        assert_eq!(
            evs,
            [
                d(1, u32::MAX - 1),
                d(1, u32::MAX),
                x(2, 0, Hfn),
                x(3, 65535, Late)
            ]
        );
        assert_eq!(rx.state_wide(), (1 << 32, 1 << 32, 1 << 32));
        assert_eq!(rx.state(), (u32::MAX, u32::MAX, u32::MAX));
    }

    #[test]
    fn out_of_range_sn_is_discarded() {
        let (_, evs) = run(cfg(12, Some(10), 0), &[(4096, 0)]);
        assert_eq!(evs, [x(0, 4096, Hfn)]);
    }

    #[test]
    fn rejects_bad_sn_length() {
        assert!(PdcpRx::<()>::try_new(cfg(15, None, 0)).is_err());
    }

    #[test]
    fn discard_reason_names() {
        assert_eq!(Late.as_str(), "late");
        assert_eq!(Duplicate.as_str(), "duplicate");
        assert_eq!(Hfn.as_str(), "hfn");
    }

    mod props {
        use super::*;
        use proptest::prelude::*;
        use std::collections::HashSet;

        fn arb_sn_bits() -> impl Strategy<Value = u8> {
            prop_oneof![Just(12u8), Just(16), Just(18)]
        }

        /// Initial COUNTs: zero, just before an SN wrap, anywhere, and near the end.
        fn pick_init(sel: u8, bits: u8, any: u32, span: u32) -> u32 {
            match sel % 4 {
                0 => 0,
                1 => (1u32 << bits) - (any % 8) - 1,
                2 => any % (u32::MAX - span),
                _ => u32::MAX - (any % span),
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(400))]

            /// Random arrivals (mostly near the window, with duplicates, same-instant
            /// arrivals and arbitrary SNs) against every invariant we can state.
            #[test]
            fn random_arrivals_keep_invariants(
                bits in arb_sn_bits(),
                ooo in any::<bool>(),
                timer in prop_oneof![Just(None), Just(Some(0u64)), (1u64..200).prop_map(Some)],
                init_sel in any::<u8>(),
                init_any in any::<u32>(),
                arrivals in proptest::collection::vec((0u32..80, 0u64..40, 0u8..12, any::<u32>()), 0..150),
            ) {
                let modulus = 1u32 << bits;
                let init = pick_init(init_sel, bits, init_any, 100);
                let cfg = RxConfig {
                    sn_bits: bits, out_of_order: ooo, initial_count: init,
                    t_reordering: timer.map(|t| t * MS),
                };
                let mut rx = PdcpRx::<u32>::new(cfg);
                let mut delivered = HashSet::new();
                let mut last: Option<u32> = None;
                let mut last_at = 0;
                let mut now = 0;
                let mut discards = 0u64;

                let mut step = |rx: &mut PdcpRx<u32>, now: Nanos, arrival: Option<u32>| {
                    let expiries0 = rx.counters().timer_expiries;
                    let (_, deliv0, _) = rx.state_wide();
                    let mut evs = Vec::new();
                    match arrival {
                        Some(sn) => rx.receive(now, sn, sn, &mut |e| evs.push(e)),
                        None => rx.poll(now, &mut |e| evs.push(e)),
                    }
                    rx.check_invariants();
                    let no_expiry = rx.counters().timer_expiries == expiries0;
                    let mut expect = deliv0;
                    for e in evs {
                        match e {
                            RxEvent::Deliver { at, count, item } => {
                                assert!(at >= last_at && at <= now, "event time out of order");
                                last_at = at;
                                assert_eq!(count % modulus, item);
                                assert!(delivered.insert(count), "COUNT {count} delivered twice");
                                if !ooo {
                                    assert!(last.is_none_or(|l| count > l), "not increasing");
                                    if no_expiry {
                                        // Without an expiry nothing may be skipped.
                                        assert_eq!(count as u64, expect, "gap without expiry");
                                        expect += 1;
                                    }
                                }
                                last = Some(count);
                            }
                            RxEvent::Discard { at, sn, item, .. } => {
                                assert!(at >= last_at && at <= now);
                                last_at = at;
                                assert_eq!(sn, item);
                                discards += 1;
                            }
                        }
                    }
                };

                for (off, dt, kind, rnd) in arrivals {
                    now += dt * MS / 4; // quarter-ms steps, many equal instants
                    let sn = if kind == 0 { rnd % modulus } else { init.wrapping_add(off) % modulus };
                    step(&mut rx, now, Some(sn));
                }
                let at_end = rx.next_deadline();
                while let Some(dl) = rx.next_deadline() {
                    step(&mut rx, dl, None);
                }

                rx.check_ring();
                let c = rx.counters().clone();
                let (next, deliv, _) = rx.state_wide();
                assert_eq!(c.delivered as usize, delivered.len());
                assert_eq!(discards, c.discarded_late + c.discarded_duplicate + c.discarded_hfn);
                let held = if ooo { 0 } else { rx.occupancy() as u64 };
                assert_eq!(c.pdus_received, c.delivered + held + discards);
                // Every COUNT below RX_DELIV was delivered or given up by an expiry.
                let below = delivered.iter().filter(|&&n| (n as u64) < deliv).count() as u64;
                assert_eq!(deliv - init as u64, below + c.counts_given_up);
                if !ooo {
                    assert_eq!(below, c.delivered, "delivered a COUNT at or above RX_DELIV");
                }
                match timer {
                    Some(_) => {
                        assert_eq!(deliv, next, "finite timer left a gap");
                        assert_eq!(rx.occupancy(), 0);
                    }
                    None => {
                        assert_eq!(c.counts_given_up, 0);
                        assert_eq!(at_end, None);
                    }
                }
            }

            /// With an infinite timer, every COUNT of a window arriving in any order (with
            /// duplicates) is delivered exactly once, in order, by the last arrival.
            #[test]
            fn complete_window_is_delivered_in_order(
                bits in arb_sn_bits(),
                init_sel in any::<u8>(),
                init_any in any::<u32>(),
                (order, dups) in (1u32..300).prop_flat_map(|n| (
                    Just((0..n).collect::<Vec<u32>>()).prop_shuffle(),
                    proptest::collection::vec((0..n, 0..=n as usize), 0..20),
                )),
            ) {
                let n = order.len() as u32;
                let modulus = 1u32 << bits;
                let init = match init_sel % 4 {
                    3 => u32::MAX - n + 1, // the last COUNT of the space is the last one sent
                    _ => pick_init(init_sel, bits, init_any, 300),
                };
                let mut offs = order.clone();
                for &(v, pos) in &dups {
                    offs.insert(pos.min(offs.len()), v);
                }
                let cfg = RxConfig { sn_bits: bits, t_reordering: None, out_of_order: false, initial_count: init };
                let mut rx = PdcpRx::<u32>::new(cfg);
                let mut got = Vec::new();
                let mut dropped = 0;
                for (i, off) in offs.iter().enumerate() {
                    let count = init + off;
                    rx.receive(i as u64, count % modulus, count, &mut |e| match e {
                        RxEvent::Deliver { count: c, item, .. } => { assert_eq!(c, item); got.push(c) }
                        RxEvent::Discard { reason, .. } => {
                            assert!(matches!(reason, Late | Duplicate), "{reason:?}");
                            dropped += 1;
                        }
                    });
                    rx.check_invariants();
                }
                let want: Vec<u32> = (0..n).map(|o| init + o).collect();
                assert_eq!(got, want);
                assert_eq!(dropped, dups.len());
                assert_eq!(rx.state_wide().1, init as u64 + n as u64);
                assert!(!rx.timer_running());
                assert_eq!(rx.occupancy(), 0);
                rx.check_ring();
            }
        }
    }
}
