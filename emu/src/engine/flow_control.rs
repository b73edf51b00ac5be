//! A flow-controlled split bearer in the engine: the secondary legs' reports (TS 38.425 DL
//! DATA DELIVERY STATUS, `pdcp/ddds.rs`) made every period from what each leg holds for
//! the bearer and how fast it serves it (`pdcp/service_rate.rs`), carried back over the
//! X2/Xn hop's delay, and the master's choice of a leg for each PDU by the bearer's policy
//! (`ddds`: the secondaries' credit first, the rest on the master's leg; `delay-aware`:
//! the leg of the earliest expected delivery, `pdcp/delay_aware.rs`; `delay-target`: the
//! earliest leg whose queue stays within the delay target, or none, and the PDU waits
//! unnumbered, `pdcp/delay_target.rs`).
//!
//! The bearer's first leg is the master's, its own (no hop): the master knows its queue
//! now and its rate from the same estimator, renewed every period.
//!
//! With `outage_after` set, a secondary that holds PDUs and serves none for that long
//! reports a radio link outage at once, and the master sends its copies of what it sent
//! there again on its own leg (`pdcp/outage.rs`).

use std::collections::BTreeSet;
use std::collections::VecDeque;

use serde::Serialize;

use super::cell_leg::Service;
use crate::base::packet::Pkt;
use crate::base::time::Nanos;
use crate::config::{FlowSpec, SplitPolicy};
use crate::pdcp::ddds::{desired_buffer_bytes, Ddds, DddsCredit};
use crate::pdcp::delay_aware::{earliest, secondary_backlog, LegView};
use crate::pdcp::delay_target::{Predicted, Target, TargetView};
use crate::pdcp::outage::{Copies, Stall};
use crate::pdcp::service_rate::ServiceRate;

/// How the master places PDUs.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Policy {
    Ddds,
    DelayAware,
    DelayTarget(Target),
}

/// One leg of the bearer as flow control sees it.
#[derive(Debug, Clone, Copy)]
pub struct FlowLeg {
    /// Index into the engine's legs.
    pub leg: usize,
    /// One way over the X2/Xn hop (0 for the master, or a secondary without a hop).
    pub hop: Nanos,
    /// The leg's mean downlink delay after its queue.
    pub delay: Nanos,
    /// The leg's rate where it is fixed and known before any service.
    pub known_bps: Option<f64>,
}

#[derive(Debug)]
struct Secondary {
    at: FlowLeg,
    /// False while its node is released or changing (secondary node events).
    active: bool,
    /// The secondary's side: its rate estimate and the highest COUNT it has received.
    rate: ServiceRate,
    highest_arrived: Option<u32>,
    made: u64,
    /// The master's side: what it may send, and the last report with when it was made.
    credit: DddsCredit,
    last: Option<(Nanos, Ddds)>,
    /// `delay-target`: its queue as the master predicts it from the last report.
    predicted: Predicted,
    /// Outage fallback (`outage_after` set).
    fb: Fallback,
}

impl Secondary {
    /// Whether the master may send it new PDUs.
    fn usable(&self) -> bool {
        self.active && !self.fb.outage
    }
}

/// One leg's outage fallback: the stall its node sees, and the master's copies of what it
/// sent there and what it did about outages.
#[derive(Debug)]
struct Fallback {
    stall: Stall,
    /// A secondary's last report said it is in an outage (the master's own leg: unused).
    outage_reported: bool,
    /// The master holds the leg in an outage: nothing new is sent there.
    outage: bool,
    copies: Copies<Pkt>,
    /// The COUNTs sent again elsewhere whose originals the leg still holds: stranded. A
    /// network re-establishes a failed leg's RLC and discards them; dcemu lets them take
    /// their time on the leg (their service is the sign it is back) and discards them as
    /// they leave it, before the receiver, which a PDU back after more than half the SN
    /// space would desynchronise (docs/endc.md, "The SN length").
    stranded: BTreeSet<u32>,
    /// Outages acted on, and the copies sent again on another leg (cumulative).
    outages: u64,
    resent_packets: u64,
    resent_bytes: u64,
    /// Stranded originals discarded as they left the leg (cumulative).
    stranded_discarded: u64,
}

impl Fallback {
    fn new() -> Self {
        Fallback {
            stall: Stall::default(),
            outage_reported: false,
            outage: false,
            copies: Copies::new(COPIES_LIMIT_BYTES),
            stranded: BTreeSet::new(),
            outages: 0,
            resent_packets: 0,
            resent_bytes: 0,
            stranded_discarded: 0,
        }
    }

    /// An outage begins: every copy not yet served is to be sent again on leg `to`.
    fn start(&mut self, to: usize, out: &mut Vec<CopyFate>) {
        self.outages += 1;
        self.outage = true;
        for (count, p) in self.copies.take_all() {
            self.resent_packets += 1;
            self.resent_bytes += p.len as u64;
            self.stranded.insert(count);
            out.push(CopyFate::Resend(p, to));
        }
        // Bounded whatever the leg does with its originals (a queue may drop them): the
        // oldest are forgotten first.
        while self.stranded.len() > STRANDED_LIMIT {
            self.stranded.pop_first();
        }
    }

    /// Whether the original of `count`, leaving the leg, was sent again elsewhere: then it
    /// is discarded (and forgotten).
    fn take_stranded(&mut self, count: u32) -> bool {
        let hit = self.stranded.remove(&count);
        self.stranded_discarded += hit as u64;
        hit
    }

    /// A new node serves the leg: no stall, no outage, and the copies go to `free`.
    fn restart(&mut self, free: &mut impl FnMut(Pkt)) {
        for (_, p) in self.copies.take_all() {
            free(p);
        }
        self.stranded.clear(); // a new node's RLC: what the old one held is gone
        self.stall.restart();
        self.outage = false;
        self.outage_reported = false;
    }
}

/// What the master keeps of the PDUs it sent a secondary, to send them again on an outage.
pub const COPIES_LIMIT_BYTES: u64 = 4_000_000;
/// Stranded COUNTs remembered per leg at most: the copies of a few outages' worth.
const STRANDED_LIMIT: usize = 100_000;

/// A copy of a PDU sent to a secondary, at the end of its keeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFate {
    /// No longer needed: its buffer goes back to the pool.
    Free(Pkt),
    /// To be sent again on this leg: the master's (a secondary is in an outage), or a
    /// secondary (the master's own leg is).
    Resend(Pkt, usize),
}

#[derive(Debug)]
pub struct FlowControl {
    policy: Policy,
    spec: FlowSpec,
    master: FlowLeg,
    master_rate: ServiceRate,
    /// What the master leg's queue can hold, as of the last report instant.
    master_limit: Option<u64>,
    /// The master's own leg's outage fallback: the master sees its stall at once.
    master_fb: Fallback,
    secondaries: Vec<Secondary>,
    next_report: Nanos,
    /// Reports on their way to the master: (arrival, secondary, made at, report).
    in_flight: VecDeque<(Nanos, usize, Nanos, Ddds)>,
}

impl FlowControl {
    /// Flow control of `policy` over `legs` (the master's first); `None` for a static one.
    pub fn new(policy: SplitPolicy, legs: &[FlowLeg]) -> Option<Self> {
        let spec = *policy.flow()?;
        let (master, rest) = legs.split_first()?;
        Some(FlowControl {
            policy: match policy {
                SplitPolicy::Static | SplitPolicy::Ddds(_) => Policy::Ddds,
                SplitPolicy::DelayAware(_) => Policy::DelayAware,
                SplitPolicy::DelayTarget(f, _) => Policy::DelayTarget(Target {
                    max_delay: f.target_delay,
                    min_bytes: f.min_bytes,
                }),
            },
            spec,
            master: *master,
            master_rate: ServiceRate::new(master.known_bps),
            master_limit: None,
            master_fb: Fallback::new(),
            secondaries: rest
                .iter()
                .map(|&at| Secondary {
                    at,
                    active: true,
                    rate: ServiceRate::new(at.known_bps),
                    highest_arrived: None,
                    made: 0,
                    credit: DddsCredit::new(spec.min_bytes),
                    last: None,
                    predicted: Predicted::default(),
                    fb: Fallback::new(),
                })
                .collect(),
            next_report: spec.period,
            in_flight: VecDeque::new(),
        })
    }

    pub fn master_leg(&self) -> usize {
        self.master.leg
    }

    /// The next report to make or to arrive, or outage to check.
    pub fn next_deadline(&self) -> Nanos {
        let report = self
            .in_flight
            .front()
            .map_or(self.next_report, |r| r.0.min(self.next_report));
        self.next_stall().map_or(report, |(t, _)| t.min(report))
    }

    /// The earliest instant a leg not yet in an outage would be in one: (instant, the
    /// secondary's index, or `None` for the master's own leg).
    fn next_stall(&self) -> Option<(Nanos, Option<usize>)> {
        let after = self.spec.outage_after?;
        let master = (!self.master_fb.outage)
            .then(|| self.master_fb.stall.outage_at(after))
            .flatten()
            .map(|t| (t, None));
        self.secondaries
            .iter()
            .enumerate()
            .filter(|(_, s)| s.active && !s.fb.outage_reported)
            .filter_map(|(i, s)| s.fb.stall.outage_at(after).map(|t| (t, Some(i))))
            .chain(master)
            .min()
    }

    /// Whether the master keeps copies of what it sends the secondaries (outage fallback).
    pub fn keeps_copies(&self) -> bool {
        self.spec.outage_after.is_some()
    }

    /// Makes and delivers the reports due by `now`, and checks the secondaries for an
    /// outage; `service(leg)` is the leg's service of the bearer at the report's instant.
    /// What becomes of the master's copies (outage fallback) is pushed to `copies`.
    pub fn poll(
        &mut self,
        now: Nanos,
        service: impl Fn(usize, Nanos) -> Service,
        copies: &mut Vec<CopyFate>,
    ) {
        loop {
            let arrival = self.in_flight.front().map(|r| r.0).filter(|&a| a <= now);
            let stall = self.next_stall().filter(|s| s.0 <= now);
            match (arrival, stall) {
                // A report arriving at the instant another is made is read first.
                (Some(a), _) if a <= self.next_report && stall.is_none_or(|s| a <= s.0) => {
                    let (_, i, made, r) = self.in_flight.pop_front().expect("front");
                    self.on_report(i, made, r, copies);
                }
                (_, Some((t, Some(i)))) if t <= self.next_report => {
                    // Holding PDUs it has not served for `outage_after`, if it still holds
                    // some: it says so at once.
                    if service(self.secondaries[i].at.leg, t).queued_bytes > 0 {
                        self.make_report(i, t, &service);
                    } else {
                        self.secondaries[i].fb.stall.idle();
                    }
                }
                (_, Some((t, None))) if t <= self.next_report => {
                    // The master's own leg: what it sent there goes to a secondary.
                    if service(self.master.leg, t).queued_bytes > 0 {
                        self.master_outage(t, copies);
                    } else {
                        self.master_fb.stall.idle();
                    }
                }
                _ if self.next_report <= now => {
                    let t = self.next_report;
                    let m = service(self.master.leg, t);
                    self.master_rate.update(m.capacity_bytes, m.busy);
                    self.master_limit = m.limit_bytes;
                    self.master_check(t, m.queued_bytes, copies);
                    for i in 0..self.secondaries.len() {
                        if self.secondaries[i].active {
                            self.make_report(i, t, &service);
                        }
                    }
                    self.next_report += self.spec.period;
                }
                _ => break,
            }
        }
    }

    /// The master reads secondary `i`'s report, made at `made`.
    fn on_report(&mut self, i: usize, made: Nanos, r: Ddds, copies: &mut Vec<CopyFate>) {
        let s = &mut self.secondaries[i];
        s.credit.on_report(&r);
        s.last = Some((made, r));
        // Its queue then, and what was sent since as it reaches it.
        let bps = r.desired_rate as f64 * 8.0;
        s.predicted = Predicted::restart(r.queued_bytes, made);
        for (_, len, at) in s.credit.unseen() {
            s.predicted.arrive(at + s.at.hop, len, bps);
        }
        if let Some(h) = r.highest_served {
            s.fb.copies
                .served_upto(h, |p| copies.push(CopyFate::Free(p)));
        }
        if r.outage && !s.fb.outage {
            s.fb.start(self.master.leg, copies);
        }
        s.fb.outage = r.outage;
    }

    /// The master's own leg has held PDUs and served none for `outage_after` (at `t`):
    /// its copies go to the first secondary that may take PDUs, and it gets nothing new
    /// until it serves again. With no such secondary it is only marked.
    fn master_outage(&mut self, t: Nanos, copies: &mut Vec<CopyFate>) {
        let Some(to) = self
            .secondaries
            .iter()
            .find(|s| s.usable())
            .map(|s| s.at.leg)
        else {
            self.master_fb.outage = true;
            return;
        };
        if let Some(h) = self.master_fb.stall.highest_served() {
            self.master_fb
                .copies
                .served_upto(h, |p| copies.push(CopyFate::Free(p)));
        }
        let from = copies.len();
        self.master_fb.start(to, copies);
        // The secondary's credit and predicted queue count what is sent there again.
        let resent: Vec<(u32, u32)> = copies[from..]
            .iter()
            .filter_map(|c| match c {
                CopyFate::Resend(p, _) => Some((p.count, p.len)),
                CopyFate::Free(_) => None,
            })
            .collect();
        for (count, len) in resent {
            self.sent(t, to, count, len);
        }
    }

    /// Every period: the master frees its copies of what its own leg served, and ends its
    /// leg's outage once the leg serves again (or holds nothing).
    fn master_check(&mut self, t: Nanos, queued_bytes: u64, copies: &mut Vec<CopyFate>) {
        let fb = &mut self.master_fb;
        if let Some(h) = fb.stall.highest_served() {
            fb.copies.served_upto(h, |p| copies.push(CopyFate::Free(p)));
        }
        if queued_bytes == 0 {
            fb.stall.idle();
        }
        let stalled = self
            .spec
            .outage_after
            .and_then(|a| fb.stall.outage_at(a))
            .is_some_and(|o| o <= t);
        if fb.outage && !stalled {
            fb.outage = false;
        }
    }

    /// Secondary `i` makes a report at `t`.
    fn make_report(&mut self, i: usize, t: Nanos, service: &impl Fn(usize, Nanos) -> Service) {
        let s = &mut self.secondaries[i];
        let v = service(s.at.leg, t);
        let rate = s.rate.update(v.capacity_bytes, v.busy).unwrap_or(0.0);
        // What reaches the secondary after this report was asked for one period later
        // plus the hop both ways: it must last that long, and a target queue beyond.
        let horizon = self.spec.target_delay + self.spec.period + 2 * s.at.hop;
        // Never more than its queue has room for.
        let room = v
            .limit_bytes
            .map_or(u64::MAX, |l| l.saturating_sub(v.queued_bytes));
        if v.queued_bytes == 0 {
            s.fb.stall.idle();
        }
        let outage = self
            .spec
            .outage_after
            .and_then(|a| s.fb.stall.outage_at(a))
            .is_some_and(|o| o <= t);
        s.fb.outage_reported = outage;
        let report = Ddds {
            desired_buffer_bytes: desired_buffer_bytes(
                rate,
                horizon,
                self.spec.min_bytes,
                v.queued_bytes,
            )
            .min(room),
            highest_transmitted: s.highest_arrived,
            desired_rate: (rate / 8.0) as u64,
            queued_bytes: v.queued_bytes,
            limit_bytes: v.limit_bytes,
            highest_served: s.fb.stall.highest_served(),
            outage,
        };
        s.made += 1;
        let arrival = t + s.at.hop;
        // Every secondary's hop is fixed, so arrivals stay in order per secondary; keep
        // the queue in arrival order across them.
        let pos = self.in_flight.partition_point(|r| r.0 <= arrival);
        self.in_flight.insert(pos, (arrival, i, t, report));
    }

    /// The secondary on `leg` leaves (false) or a new one is there (true): it starts
    /// afresh, with `min_bytes` of credit and no report; reports on their way from the old
    /// one are dropped, and the master's copies of what it sent the old one go to `free`
    /// (what the old node held is forwarded or lost with it: `engine/secondary.rs`).
    pub fn set_active(&mut self, leg: usize, active: bool, mut free: impl FnMut(Pkt)) {
        let Some(i) = self.secondaries.iter().position(|s| s.at.leg == leg) else {
            return;
        };
        let s = &mut self.secondaries[i];
        s.fb.restart(&mut free);
        s.active = active;
        s.credit = DddsCredit::new(if active { self.spec.min_bytes } else { 0 });
        s.last = None;
        s.predicted = Predicted::default();
        s.highest_arrived = None;
        s.rate.restart(s.at.known_bps);
        self.in_flight.retain(|r| r.1 != i);
    }

    /// The secondary on `leg` received the PDU `count` from the master at `now`, its queue
    /// for the bearer then empty or not.
    pub fn arrived(&mut self, leg: usize, count: u32, now: Nanos, queue_was_empty: bool) {
        if leg == self.master.leg {
            self.master_fb.stall.arrived(now, queue_was_empty);
        } else if let Some(s) = self.secondaries.iter_mut().find(|s| s.at.leg == leg) {
            s.highest_arrived = Some(s.highest_arrived.map_or(count, |h| h.max(count)));
            s.fb.stall.arrived(now, queue_was_empty);
        }
    }

    /// The leg `leg` (the master's or a secondary) served the PDU `count` at `at` (outage
    /// fallback).
    pub fn served(&mut self, leg: usize, count: u32, at: Nanos) {
        if leg == self.master.leg {
            self.master_fb.stall.served(count, at);
        } else if let Some(s) = self.secondaries.iter_mut().find(|s| s.at.leg == leg) {
            s.fb.stall.served(count, at);
        }
    }

    /// Whether PDU `count`, leaving `leg`, is an original whose copy was sent again on
    /// another leg in an outage: the engine then discards it instead of handing it to the
    /// receiver.
    pub fn take_stranded(&mut self, leg: usize, count: u32) -> bool {
        if !self.keeps_copies() {
            return false; // nothing is ever stranded: no search per packet
        }
        if leg == self.master.leg {
            return self.master_fb.take_stranded(count);
        }
        self.secondaries
            .iter_mut()
            .find(|s| s.at.leg == leg)
            .is_some_and(|s| s.fb.take_stranded(count))
    }

    /// The copy of PDU `count` sent again could not be taken (its leg's queue full): its
    /// original is no longer stranded, the only one left to deliver.
    pub fn unstrand(&mut self, count: u32) {
        self.master_fb.stranded.remove(&count);
        for s in &mut self.secondaries {
            s.fb.stranded.remove(&count);
        }
    }

    /// Keeps `p`, the copy of PDU `count` sent on `leg` (the master's or a secondary);
    /// given back when it is not kept (no fallback, not the bearer's leg, or the copies
    /// are at their limit).
    pub fn keep_copy(&mut self, leg: usize, count: u32, p: Pkt) -> Result<(), Pkt> {
        if !self.keeps_copies() {
            return Err(p);
        }
        if leg == self.master.leg {
            return self.master_fb.copies.keep(count, p.len, p);
        }
        match self.secondaries.iter_mut().find(|s| s.at.leg == leg) {
            Some(s) => s.fb.copies.keep(count, p.len, p),
            None => Err(p),
        }
    }

    /// The leg for PDU `count` of `len` bytes at `now`, the master's leg holding
    /// `master_queued` bytes of the bearer.
    pub fn steer(&mut self, now: Nanos, count: u32, len: u32, master_queued: u64) -> usize {
        let leg = match self.policy {
            Policy::Ddds => self
                .secondaries
                .iter()
                .position(|s| s.usable() && s.credit.fits(len))
                .map_or(self.master.leg, |i| self.secondaries[i].at.leg),
            Policy::DelayAware => self
                .earliest_delivery(now, len, master_queued)
                .map_or(self.master.leg, |i| self.secondaries[i].at.leg),
            // Numbered already: it must go somewhere.
            Policy::DelayTarget(_) => self
                .place(now, len, master_queued)
                .unwrap_or(self.master.leg),
        };
        self.sent(now, leg, count, len);
        leg
    }

    /// The PDU `count` of `len` bytes went to `leg` at `now`.
    pub fn sent(&mut self, now: Nanos, leg: usize, count: u32, len: u32) {
        if let Some(s) = self.secondaries.iter_mut().find(|s| s.at.leg == leg) {
            s.credit.sent(count, len, now);
            let bps = s.last.map_or(0.0, |(_, r)| r.desired_rate as f64 * 8.0);
            s.predicted.arrive(now + s.at.hop, len, bps);
        }
    }

    /// A secondary's view at `now`: its last report's queue, aged by its rate and grown by
    /// what the master sent that the report had not seen; of unknown rate before a report
    /// with one.
    fn secondary_view(s: &Secondary, now: Nanos) -> LegView {
        match s.last.filter(|(_, r)| r.desired_rate > 0) {
            Some((made, r)) => {
                let bps = r.desired_rate as f64 * 8.0;
                LegView {
                    backlog_bytes: secondary_backlog(
                        r.queued_bytes,
                        bps,
                        now.saturating_sub(made),
                        s.credit.unseen_bytes(),
                    ),
                    rate_bps: Some(bps),
                    hop: s.at.hop,
                    delay: s.at.delay,
                }
            }
            None => LegView {
                backlog_bytes: 0,
                rate_bps: None,
                hop: s.at.hop,
                delay: s.at.delay,
            },
        }
    }

    /// `delay-target`: a secondary's view at `now`: the queue a PDU sent now finds there,
    /// as predicted from its last report; before a report with a rate, what it held then
    /// and everything sent since (none drained).
    fn target_view(s: &Secondary, now: Nanos) -> TargetView {
        let last = s.last.map(|(_, r)| r);
        let rate = last.map(|r| r.desired_rate).filter(|&r| r > 0);
        TargetView {
            ahead_bytes: match rate {
                Some(r) => s.predicted.bytes_at(now + s.at.hop, r as f64 * 8.0),
                None => last.map_or(0, |r| r.queued_bytes) + s.credit.unseen_bytes(),
            },
            rate_bps: rate.map(|r| r as f64 * 8.0),
            hop: s.at.hop,
            delay: s.at.delay,
            limit_bytes: last.and_then(|r| r.limit_bytes),
        }
    }

    /// `delay-target`: the leg for a PDU of `len` bytes at `now` (the master's leg holding
    /// `master_queued` bytes of the bearer), or `None`: it fits no leg and waits. The engine
    /// asks before it numbers the PDU, and reports [`FlowControl::sent`] after, where the
    /// other policies number first and ask [`FlowControl::steer`].
    pub fn place(&self, now: Nanos, len: u32, master_queued: u64) -> Option<usize> {
        let Policy::DelayTarget(target) = self.policy else {
            return Some(self.master.leg);
        };
        let (mut legs, mut views) = (Vec::new(), Vec::new());
        // The master's own leg in an outage takes nothing new.
        if !self.master_fb.outage {
            legs.push(self.master.leg);
            views.push(TargetView {
                ahead_bytes: master_queued,
                rate_bps: self.master_rate.bps(),
                hop: 0,
                delay: self.master.delay,
                limit_bytes: self.master_limit,
            });
        }
        for s in self.secondaries.iter().filter(|s| s.usable()) {
            legs.push(s.at.leg);
            views.push(Self::target_view(s, now));
        }
        target.place(&views, now, len).map(|i| legs[i])
    }

    /// `delay-target`: the instant a PDU of `len` bytes next fits a secondary, its queue
    /// drained as predicted since its report (`None`: only a report, or the master's own
    /// queue draining, can make room).
    pub fn next_room(&self, now: Nanos, len: u32) -> Option<Nanos> {
        let Policy::DelayTarget(target) = self.policy else {
            return None;
        };
        self.secondaries
            .iter()
            .filter(|s| s.usable())
            .filter_map(|s| target.until_fits(&Self::target_view(s, now), len))
            .min()
            .map(|d| now + d)
    }

    /// Delay-aware: the secondary to send to (`None`: the master). A secondary with no
    /// rate reported yet gets its credit, so that it can be measured.
    fn earliest_delivery(&self, now: Nanos, len: u32, master_queued: u64) -> Option<usize> {
        if let Some(i) = self.secondaries.iter().position(|s| {
            s.usable() && s.last.filter(|(_, r)| r.desired_rate > 0).is_none() && s.credit.fits(len)
        }) {
            return Some(i);
        }
        // The master of unknown rate is taken as serving at once while its queue is
        // empty, and passed over while not, until its estimate exists.
        let master_bps = match self.master_rate.bps() {
            Some(r) => Some(r),
            None if master_queued == 0 => Some(f64::INFINITY),
            None => None,
        };
        let mut views = vec![LegView {
            backlog_bytes: master_queued,
            rate_bps: master_bps,
            hop: 0,
            delay: self.master.delay,
        }];
        for s in &self.secondaries {
            let v = Self::secondary_view(s, now);
            // Inactive, in an outage or unmeasured: never the earliest.
            views.push(LegView {
                rate_bps: v.rate_bps.filter(|_| s.usable()),
                ..v
            });
        }
        earliest(&views, now, len).and_then(|i| i.checked_sub(1))
    }

    /// The counters of a stats record; `leg_name(i)` names leg `i`.
    pub fn record(&self, leg_name: impl Fn(usize) -> String) -> FlowRecord {
        let mbps = |bps: Option<f64>| bps.map(|r| r / 1e6);
        FlowRecord {
            policy: match self.policy {
                Policy::Ddds => "ddds",
                Policy::DelayAware => "delay-aware",
                Policy::DelayTarget(_) => "delay-target",
            },
            master_rate_mbps: mbps(self.master_rate.bps()),
            master_fallback: self.master_fb.record(),
            secondaries: self
                .secondaries
                .iter()
                .map(|s| {
                    let last = s.last.map(|(_, r)| r);
                    FlowLegRecord {
                        leg: leg_name(s.at.leg),
                        reports_made: s.made,
                        reports_received: s.credit.reports(),
                        desired_bytes: last.map(|r| r.desired_buffer_bytes),
                        reported_queue_bytes: last.map(|r| r.queued_bytes),
                        reported_rate_mbps: last.map(|r| r.desired_rate as f64 * 8.0 / 1e6),
                        credit_bytes: s.credit.credit(),
                        unseen_bytes: s.credit.unseen_bytes(),
                        fallback: s.fb.record(),
                    }
                })
                .collect(),
        }
    }
}

/// A flow-controlled bearer in a stats record: per secondary leg, its reports and the
/// last one the master received, and the master's credit for it now.
#[derive(Clone, Debug, Serialize)]
pub struct FlowRecord {
    pub policy: &'static str,
    /// The master leg's service rate estimate (none before it was busy for 1 ms).
    pub master_rate_mbps: Option<f64>,
    /// The master's own leg's outage fallback (its copies sent again on a secondary).
    pub master_fallback: FallbackRecord,
    pub secondaries: Vec<FlowLegRecord>,
}

#[derive(Clone, Debug, Serialize)]
pub struct FlowLegRecord {
    pub leg: String,
    /// Cumulative: reports the secondary made, and those that reached the master.
    pub reports_made: u64,
    pub reports_received: u64,
    pub desired_bytes: Option<u64>,
    pub reported_queue_bytes: Option<u64>,
    pub reported_rate_mbps: Option<f64>,
    pub credit_bytes: u64,
    /// Bytes sent that no report had seen yet.
    pub unseen_bytes: u64,
    /// The outage fallback's counters for the leg (its copies sent again on the master's).
    #[serde(flatten)]
    pub fallback: FallbackRecord,
}

/// A leg's outage fallback in a record (`pdcp/outage.rs`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FallbackRecord {
    /// Whether the master holds the leg in an outage now.
    pub outage: bool,
    /// Cumulative: the outages acted on, and the copies sent again on another leg.
    pub outages: u64,
    pub resent_packets: u64,
    pub resent_bytes: u64,
    /// The bytes of copies the master keeps now, and the copies it could not keep
    /// (cumulative).
    pub copies_bytes: u64,
    pub copies_refused: u64,
    /// Originals sent again elsewhere, discarded as they left the leg (cumulative).
    pub stranded_discarded: u64,
}

impl Fallback {
    fn record(&self) -> FallbackRecord {
        FallbackRecord {
            outage: self.outage,
            outages: self.outages,
            resent_packets: self.resent_packets,
            resent_bytes: self.resent_bytes,
            copies_bytes: self.copies.bytes(),
            copies_refused: self.copies.refused(),
            stranded_discarded: self.stranded_discarded,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::NS_PER_MS;

    const MS: Nanos = NS_PER_MS;

    fn spec() -> FlowSpec {
        FlowSpec {
            period: 10 * MS,
            target_delay: 10 * MS,
            min_bytes: 15_000,
            outage_after: None,
        }
    }

    fn legs(hop: Nanos) -> [FlowLeg; 2] {
        [
            FlowLeg {
                leg: 0,
                hop: 0,
                delay: 10 * MS,
                known_bps: None,
            },
            FlowLeg {
                leg: 1,
                hop,
                delay: 10 * MS,
                known_bps: None,
            },
        ]
    }

    #[test]
    fn a_static_split_has_no_flow_control() {
        assert!(FlowControl::new(SplitPolicy::Static, &legs(0)).is_none());
    }

    #[test]
    fn reports_cross_the_hop_and_set_the_credit() {
        let mut fc = FlowControl::new(SplitPolicy::Ddds(spec()), &legs(5 * MS)).unwrap();
        // Before any report: min_bytes of credit, then the master.
        let sent: Vec<usize> = (0..12).map(|c| fc.steer(0, c, 1500, 0)).collect();
        assert_eq!(sent, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0]);
        for c in 0..10 {
            fc.arrived(1, c, 0, false);
        }
        // The secondary served 25 kB over 2 ms busy (100 Mbit/s) and holds 10 kB.
        let service = |leg: usize, _t: Nanos| Service {
            queued_bytes: if leg == 1 { 10_000 } else { 0 },
            capacity_bytes: 25_000,
            busy: 2 * MS,
            limit_bytes: None,
        };
        fc.poll(10 * MS, service, &mut Vec::new());
        assert_eq!(fc.next_deadline(), 15 * MS, "the report is on the hop");
        assert_eq!(fc.steer(12 * MS, 12, 1500, 0), 0, "no credit yet");
        fc.poll(15 * MS, service, &mut Vec::new());
        // 100 Mbit/s over 10 + 10 + 2·5 ms = 375 kB, less the 10 kB held.
        let r = fc.record(|l| format!("leg{l}"));
        assert_eq!(r.secondaries[0].desired_bytes, Some(365_000));
        assert_eq!(r.secondaries[0].reported_rate_mbps, Some(100.0));
        // Every PDU sent to it had arrived when it reported: the whole size is credit.
        assert_eq!(r.secondaries[0].credit_bytes, 365_000);
        assert_eq!(r.secondaries[0].unseen_bytes, 0);
        assert_eq!(fc.next_deadline(), 20 * MS);
    }

    #[test]
    fn a_report_asks_for_no_more_than_the_queue_has_room_for() {
        let mut fc = FlowControl::new(SplitPolicy::Ddds(spec()), &legs(0)).unwrap();
        fc.poll(
            10 * MS,
            |_, _| Service {
                queued_bytes: 10_000,
                capacity_bytes: 25_000,
                busy: 2 * MS,
                limit_bytes: Some(100_000),
            },
            &mut Vec::new(),
        );
        let r = fc.record(|l| format!("leg{l}"));
        assert_eq!(r.secondaries[0].desired_bytes, Some(90_000));
    }

    #[test]
    fn delay_target_fills_each_leg_to_its_target_and_then_holds() {
        use crate::config::HoldSpec;
        let hold = HoldSpec {
            limit_bytes: 1_000_000,
            discard_after: 100 * MS,
        };
        let mut fc =
            FlowControl::new(SplitPolicy::DelayTarget(spec(), hold), &legs(5 * MS)).unwrap();
        // No rate yet: each leg takes up to min_bytes (15 kB), the first that fits first.
        assert_eq!(fc.place(0, 1500, 0), Some(0));
        assert_eq!(fc.place(0, 1500, 15_000), Some(1));
        for c in 0..10 {
            fc.sent(0, 1, c, 1500);
        }
        assert_eq!(fc.place(0, 1500, 15_000), None, "both at min_bytes");
        assert_eq!(fc.next_room(0, 1500), None, "no rate to predict a drain by");
        for c in 0..10 {
            fc.arrived(1, c, 0, false);
        }
        // The master serves 10 Mbit/s and holds 15 kB; the secondary 100 Mbit/s, 10 kB.
        let service = |leg: usize, _t: Nanos| match leg {
            0 => Service {
                queued_bytes: 15_000,
                capacity_bytes: 12_500,
                busy: 10 * MS,
                limit_bytes: None,
            },
            _ => Service {
                queued_bytes: 10_000,
                capacity_bytes: 125_000,
                busy: 10 * MS,
                limit_bytes: None,
            },
        };
        fc.poll(10 * MS, service, &mut Vec::new());
        fc.poll(15 * MS, service, &mut Vec::new());
        // The master's 10 ms is 12.5 kB (min_bytes: 15 kB): full. The secondary's 10 kB
        // drained by the time a PDU sent at 15 ms gets there (20 ms); its 10 ms is 125 kB.
        assert_eq!(fc.place(15 * MS, 1500, 15_000), Some(1));
        let mut n = 0;
        while fc.place(15 * MS, 1500, 15_000) == Some(1) {
            fc.sent(15 * MS, 1, 10 + n, 1500);
            n += 1;
        }
        assert_eq!(n, 83, "124.5 kB, and one more would pass 125 kB");
        assert_eq!(fc.place(15 * MS, 1500, 15_000), None);
        // 1 kB over: 80 µs at 100 Mbit/s.
        assert_eq!(fc.next_room(15 * MS, 1500), Some(15 * MS + 80_000));
        assert_eq!(fc.record(|l| format!("leg{l}")).policy, "delay-target");
    }

    #[test]
    fn delay_aware_follows_the_reported_queue() {
        let mut fc = FlowControl::new(SplitPolicy::DelayAware(spec()), &legs(0)).unwrap();
        // Unmeasured secondary: its credit first, then the idle master.
        let first: Vec<usize> = (0..11).map(|c| fc.steer(0, c, 1500, 0)).collect();
        assert_eq!(first, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
        // Master 10 Mbit/s holding 30 kB (24 ms); secondary 100 Mbit/s holding 100 kB (8 ms).
        let service = |leg: usize, _t: Nanos| match leg {
            0 => Service {
                queued_bytes: 30_000,
                capacity_bytes: 1250,
                busy: MS,
                limit_bytes: None,
            },
            _ => Service {
                queued_bytes: 100_000,
                capacity_bytes: 12_500,
                busy: MS,
                limit_bytes: None,
            },
        };
        fc.poll(10 * MS, service, &mut Vec::new());
        assert_eq!(fc.steer(10 * MS, 11, 1500, 30_000), 1);
        // An empty master beats a secondary 8 ms deep.
        assert_eq!(fc.steer(10 * MS, 12, 1500, 0), 0);
    }

    /// Outage fallback at 5 ms over a 5 ms hop: the secondary holds PDUs and serves none
    /// from 2 ms, so it reports an outage at 7 ms, not at the 10 ms period; at 12 ms the
    /// master sends every copy not yet served again and sends it nothing new; a report
    /// saying it serves again lets it back in.
    #[test]
    fn an_outage_is_reported_at_once_and_the_copies_are_sent_again() {
        let spec = FlowSpec {
            outage_after: Some(5 * MS),
            ..spec()
        };
        let mut fc = FlowControl::new(SplitPolicy::Ddds(spec), &legs(5 * MS)).unwrap();
        assert!(fc.keeps_copies());
        let mut fates = Vec::new();
        for c in 0..4 {
            assert_eq!(fc.steer(0, c, 1500, 0), 1);
            assert_eq!(fc.keep_copy(1, c, Pkt::new(c, 1500, 0)), Ok(()));
        }
        assert_eq!(
            fc.keep_copy(7, 9, Pkt::new(9, 1500, 0)).map_err(|p| p.id),
            Err(9),
            "not a leg of the bearer"
        );
        for c in 0..4 {
            fc.arrived(1, c, 2 * MS, c == 0);
        }
        fc.served(1, 0, 2 * MS);
        let holding = |_: usize, _: Nanos| Service {
            queued_bytes: 4500,
            capacity_bytes: 0,
            busy: 0,
            limit_bytes: None,
        };
        assert_eq!(fc.next_deadline(), 7 * MS, "the stall, before the period");
        fc.poll(7 * MS, holding, &mut fates);
        assert_eq!(
            fc.next_deadline(),
            10 * MS,
            "reported: the next is the period's"
        );
        fc.poll(10 * MS, holding, &mut fates);
        assert!(fates.is_empty());
        fc.poll(12 * MS, holding, &mut fates);
        // COUNT 0 was served: its copy is freed, the other three sent again, in order.
        assert_eq!(
            fates,
            [
                CopyFate::Free(Pkt::new(0, 1500, 0)),
                CopyFate::Resend(Pkt::new(1, 1500, 0), 0),
                CopyFate::Resend(Pkt::new(2, 1500, 0), 0),
                CopyFate::Resend(Pkt::new(3, 1500, 0), 0),
            ]
        );
        // Their originals, when the secondary serves them, are discarded once each; what
        // was not sent again (COUNT 0) and the master's own leg are not.
        assert!(fc.take_stranded(1, 2) && !fc.take_stranded(1, 2));
        assert!(!fc.take_stranded(1, 0) && !fc.take_stranded(0, 3));
        // A copy its new leg could not take leaves the original the one to deliver.
        fc.unstrand(3);
        assert!(!fc.take_stranded(1, 3));
        let f = fc.record(|l| format!("leg{l}")).secondaries[0]
            .fallback
            .clone();
        assert_eq!(f.stranded_discarded, 1);
        assert_eq!(
            (f.outage, f.outages, f.resent_packets, f.resent_bytes),
            (true, 1, 3, 4500)
        );
        assert_eq!(fc.steer(12 * MS, 4, 1500, 0), 0, "nothing new for it");
        // The 10 ms report (on its way) arrives at 15 ms, still in the outage: nothing more.
        fates.clear();
        fc.poll(15 * MS, holding, &mut fates);
        assert!(fates.is_empty());
        // The fade ends: it serves what it held at 18 ms; the 20 ms report lets it back.
        for c in 1..4 {
            fc.served(1, c, 18 * MS);
        }
        let drained = |_: usize, _: Nanos| Service {
            queued_bytes: 0,
            capacity_bytes: 4500,
            busy: MS,
            limit_bytes: None,
        };
        fc.poll(25 * MS, drained, &mut fates);
        assert!(fates.is_empty(), "the copies were sent again already");
        let r = fc.record(|l| format!("leg{l}")).secondaries[0].clone();
        assert_eq!((r.fallback.outage, r.fallback.outages), (false, 1));
        assert_eq!(fc.steer(25 * MS, 5, 1500, 0), 1);
        // A stall that ends by itself (the queue found empty) is no outage.
        fc.arrived(1, 5, 30 * MS, true);
        assert_eq!(fc.next_deadline(), 30 * MS, "the period comes first");
        fc.poll(36 * MS, drained, &mut fates);
        assert_eq!(fc.next_deadline(), 40 * MS);
        assert!(
            !fc.record(|l| format!("leg{l}")).secondaries[0]
                .fallback
                .outage
        );
    }

    /// The master's own leg stalls (delay-target, outage fallback at 5 ms): the master sees
    /// it at once, sends its copies of what the leg has not served to the secondary (over
    /// its hop, counted in its predicted queue), and places nothing new on its own leg
    /// until the leg serves again.
    #[test]
    fn the_masters_own_leg_in_an_outage_sends_its_copies_to_a_secondary() {
        use crate::config::HoldSpec;
        let spec = FlowSpec {
            outage_after: Some(5 * MS),
            ..spec()
        };
        let hold = HoldSpec {
            limit_bytes: 1_000_000,
            discard_after: 100 * MS,
        };
        let mut fc = FlowControl::new(SplitPolicy::DelayTarget(spec, hold), &legs(5 * MS)).unwrap();
        let mut fates = Vec::new();
        for c in 0..3 {
            fc.sent(0, 0, c, 1500);
            fc.arrived(0, c, 0, c == 0);
            fc.keep_copy(0, c, Pkt::new(c, 1500, 0)).unwrap();
        }
        fc.served(0, 0, MS);
        assert_eq!(fc.next_deadline(), 6 * MS, "served at 1 ms, stalled since");
        let holding = |leg: usize, _: Nanos| Service {
            queued_bytes: if leg == 0 { 3000 } else { 0 },
            capacity_bytes: 0,
            busy: 0,
            limit_bytes: None,
        };
        fc.poll(6 * MS, holding, &mut fates);
        // COUNT 0 was served: freed; 1 and 2 go to the secondary (leg 1).
        assert_eq!(
            fates,
            [
                CopyFate::Free(Pkt::new(0, 1500, 0)),
                CopyFate::Resend(Pkt::new(1, 1500, 0), 1),
                CopyFate::Resend(Pkt::new(2, 1500, 0), 1),
            ]
        );
        let r = fc.record(|l| format!("leg{l}"));
        let m = &r.master_fallback;
        assert_eq!((m.outage, m.outages, m.resent_packets), (true, 1, 2));
        assert_eq!(
            r.secondaries[0].unseen_bytes, 3000,
            "the secondary's credit counts them"
        );
        // Nothing new on the master's leg: the secondary (no rate yet: min_bytes, 15 kB,
        // of which 3 kB are taken) or the hold.
        assert_eq!(fc.place(6 * MS, 1500, 3000), Some(1));
        // It serves again at 8 ms; the 10 ms period ends the outage and frees the copies.
        fc.served(0, 1, 8 * MS);
        fates.clear();
        fc.poll(10 * MS, holding, &mut fates);
        assert!(!fc.record(|l| format!("leg{l}")).master_fallback.outage);
        assert_eq!(fc.place(10 * MS, 1500, 0), Some(0));
    }
}
