//! The emulator core: classifier, PDCP transmit, the legs, PDCP receive, scheduled
//! changes and stats, driven by an outside clock.
//!
//! The driver calls `ingress` for each packet it reads and `advance(now)`; the engine
//! processes every event due by `now` in time order, each at its own instant (so a late
//! driver changes when packets are written, never what the emulated network did), and
//! queues packets to write in `outputs`. `next_deadline` says when to call again.

use std::cell::Cell;
use std::collections::VecDeque;

use super::cell_leg::{CellDirection, Downlink};
use super::classifier::{Classifier, Dir};
use super::delivered::DeliveredFlows;
use super::flow_control::{CopyFate, FlowControl, FlowLeg};
use super::processing::FixedDelay;
use super::record::{EngineCounters, Record};
use super::secondary::{Divert, SecondaryNode, Target};
use super::state::{BearerState, LegState};
use crate::base::ecn::{ecn_of, set_ce};
use crate::base::packet::{Pkt, PktId, CE};
use crate::base::pool::PacketPool;
use crate::base::time::from_ms;
use crate::base::time::Nanos;
use crate::config::{BearerMode, ChangeKind, Scenario, SnEvent, SplitPolicy};
use crate::link::{LinkDirection, LinkSpec, RateSpec};
use crate::pdcp::hold::SduHold;
use crate::pdcp::{LegSet, PdcpRx, PdcpTx, RxConfig, RxEvent, SplitPattern, TxMode};

/// A packet ready to be written: to the client (`Down`) or to the server (`Up`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Output {
    pub dir: Dir,
    pub id: PktId,
    /// The instant the emulated network delivers it.
    pub at: Nanos,
}

/// A downlink packet leaving a leg (after its rate, loss and delay stages, before the PDCP
/// receiver): what a per-leg capture records, when the driver asks for it (`tap_legs`).
/// The bytes are a copy: the receiver may discard the packet and its slot be reused
/// within the same `advance`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LegExit {
    pub leg: usize,
    pub at: Nanos,
    pub bytes: Vec<u8>,
}

/// Components that have deadlines, in tie-break order: at the same instant a reordering
/// timer fires before anything arrives (see docs/pdcp-reordering.md).
#[derive(Clone, Copy, Debug)]
enum Due {
    Rx(usize),
    Exit,
    Entry,
    Change,
    Flow(usize),
    Hold(usize),
    Sn(usize),
    X2(usize),
    Down(usize),
    Up(usize),
    Stats,
}

pub struct Engine {
    pool: PacketPool,
    classifier: Classifier,
    legs: Vec<LegState>,
    bearers: Vec<BearerState>,
    schedule: Vec<(Nanos, ChangeKind)>,
    next_change: usize,
    header_bytes: u32,
    stats_interval: Nanos,
    next_stats: Nanos,
    /// The earliest event, remembered until a packet enters or a step runs: a driver asks
    /// for it several times per instant and finding it visits every stage.
    next_due: Cell<Option<Option<(Nanos, Due)>>>,
    last_stats: Nanos,
    outputs: VecDeque<Output>,
    /// The PDCP entities' processing (`pdcp.processing_ms` > 0): where packets enter the
    /// emulated network (either way) and where they leave it.
    entry: Option<FixedDelay<(Dir, Pkt)>>,
    exit: Option<FixedDelay<Output>>,
    records: Vec<Record>,
    counters: EngineCounters,
    /// The downlink's deliveries per flow (the summary record's `flows`).
    delivered_flows: DeliveredFlows,
    /// Some: every downlink packet leaving a leg is noted here (`take_leg_exits`).
    leg_exits: Option<Vec<LegExit>>,
}

/// Packets the pool may hold at most; far beyond any sane queue configuration.
const MAX_BUFFERS: usize = 1 << 20;

impl Engine {
    /// Builds the engine; `slot_size` must hold the largest packet the driver reads.
    pub fn new(s: &Scenario, slot_size: usize) -> anyhow::Result<Engine> {
        let mut legs = Vec::new();
        for (i, l) in s.legs.iter().enumerate() {
            let (down, device_bearers) = match &l.cell {
                None => (
                    Downlink::Link(LinkDirection::new(&l.downlink, seed(s.seed, i, 0))),
                    vec![],
                ),
                Some(c) => {
                    let mut names = vec![String::new(); c.spec.devices.len()];
                    for (b, d) in c.device_of_bearer.iter().enumerate() {
                        if let Some(d) = d {
                            names[*d] = s.bearers[b].name.clone();
                        }
                    }
                    let cell = CellDirection::new(&l.downlink, c, seed(s.seed, i, 0))
                        .map_err(|e| anyhow::anyhow!("leg {}: {e}", l.name))?;
                    (Downlink::Cell(Box::new(cell)), names)
                }
            };
            legs.push(LegState {
                name: l.name.clone(),
                down,
                up: l
                    .uplink
                    .as_ref()
                    .map(|u| LinkDirection::new(u, seed(s.seed, i, 1))),
                x2: l
                    .x2
                    .as_ref()
                    .map(|x| LinkDirection::new(x, seed(s.seed, i, 2))),
                x2_hop: l.x2.as_ref().map_or(0, mean_delay),
                sn: None,
                prev_x2_bytes: 0,
                prev_down_bytes: 0,
                prev_up_bytes: 0,
                prev_device_bytes: vec![0; device_bearers.len()],
                device_bearers,
            });
        }
        let mut bearers = Vec::new();
        for b in &s.bearers {
            let mode = match b.mode {
                BearerMode::Sc | BearerMode::Path => TxMode::Single { leg: b.legs[0] },
                BearerMode::Dup => TxMode::Duplicate {
                    legs: b.legs.clone(),
                },
                BearerMode::Dc if b.split.policy.flow().is_some() => TxMode::Steered {
                    legs: b.legs.clone(),
                },
                BearerMode::Dc => TxMode::Split {
                    legs: b.legs.clone(),
                    pattern: SplitPattern::new(b.split.batch, &b.split.ratio)
                        .map_err(|e| anyhow::anyhow!("bearer {}: {e}", b.name))?,
                },
            };
            let flow_legs: Vec<FlowLeg> = b
                .legs
                .iter()
                .enumerate()
                .map(|(k, &l)| flow_leg(&s.legs[l], l, k == 0))
                .collect();
            let flow = FlowControl::new(b.split.policy, &flow_legs);
            // A path delivers as its leg does: the transport above sees any reordering.
            let rx = (s.pdcp.reordering && b.mode != BearerMode::Path).then(|| {
                PdcpRx::new(RxConfig {
                    sn_bits: s.pdcp.sn_bits,
                    t_reordering: s.pdcp.t_reordering,
                    out_of_order: s.pdcp.out_of_order,
                    initial_count: s.pdcp.initial_count,
                })
            });
            bearers.push(BearerState {
                name: b.name.clone(),
                mode: b.mode,
                legs: b.legs.clone(),
                tx: PdcpTx::new(mode, s.pdcp.sn_bits, s.pdcp.initial_count)
                    .map_err(|e| anyhow::anyhow!("bearer {}: {e}", b.name))?,
                flow,
                hold: match b.split.policy {
                    SplitPolicy::DelayTarget(_, h) => {
                        Some(SduHold::new(h.limit_bytes, h.discard_after))
                    }
                    _ => None,
                },
                hold_wake: None,
                rx,
                sn_mask: (1u32 << s.pdcp.sn_bits) - 1,
                uplink_leg: b.uplink_leg,
                delivered_bytes: 0,
                delivered_packets: 0,
                prev_delivered_bytes: 0,
                uplink_bytes: 0,
                uplink_packets: 0,
            });
        }
        // Outage fallback: every leg of the bearer notes what it serves.
        for b in &bearers {
            if b.flow.as_ref().is_some_and(|f| f.keeps_copies()) {
                for &l in &b.legs {
                    legs[l].down.track_served();
                }
            }
        }
        let rules: Vec<_> = s.bearers.iter().map(|b| b.rules.clone()).collect();
        Ok(Engine {
            pool: PacketPool::new(slot_size, 4096, MAX_BUFFERS),
            classifier: Classifier::new(&rules, s.default_bearer),
            legs,
            bearers,
            schedule: s.schedule.iter().map(|c| (c.at, c.what.clone())).collect(),
            next_change: 0,
            header_bytes: s.pdcp.header_bytes,
            stats_interval: s.stats_interval,
            next_stats: s.stats_interval,
            next_due: Cell::new(None),
            last_stats: 0,
            outputs: VecDeque::with_capacity(4096),
            entry: (s.pdcp.processing > 0).then(|| FixedDelay::new(s.pdcp.processing)),
            exit: (s.pdcp.processing > 0).then(|| FixedDelay::new(s.pdcp.processing)),
            records: Vec::new(),
            counters: EngineCounters::default(),
            delivered_flows: DeliveredFlows::default(),
            leg_exits: None,
        })
    }

    /// Buffer pool: the driver reads a packet into `pool_mut().slot_mut(id)` of an id from
    /// `alloc_buffer`, then hands it over with `ingress`.
    pub fn pool(&self) -> &PacketPool {
        &self.pool
    }

    pub fn pool_mut(&mut self) -> &mut PacketPool {
        &mut self.pool
    }

    /// A free buffer, or None (counted) when every buffer is in use.
    pub fn alloc_buffer(&mut self) -> Option<PktId> {
        let id = self.pool.alloc();
        if id.is_none() {
            self.counters.dropped_no_buffer += 1;
        }
        id
    }

    /// A packet of `len` bytes in buffer `id` arrived at `now` travelling `dir`.
    pub fn ingress(&mut self, now: Nanos, dir: Dir, id: PktId, len: usize) {
        self.advance(now);
        self.pool.set_len(id, len);
        self.next_due.set(None);
        let bytes = self.pool.get(id);
        let (b, flow) = self.classifier.classify_flow(bytes, dir);
        let pkt = Pkt {
            id,
            len: len as u32,
            born: now,
            count: 0,
            bearer: b as u16,
            flow,
            ecn: ecn_of(bytes),
        };
        match dir {
            Dir::Down => self.counters.packets_in_down += 1,
            Dir::Up => self.counters.packets_in_up += 1,
        }
        match self.entry.as_mut() {
            Some(entry) => entry.push(now, (dir, pkt)),
            None => self.send(now, dir, pkt),
        }
    }

    /// `pkt` enters the emulated network at `now` (after the entry's processing, if any).
    fn send(&mut self, now: Nanos, dir: Dir, pkt: Pkt) {
        let first_new = self.outputs.len();
        match dir {
            Dir::Down => self.send_down(now, pkt),
            Dir::Up => self.send_up(now, pkt),
        }
        self.reclaim();
        self.hand_to_exit(first_new);
    }

    /// Moves the outputs from index `from` on into the exit's processing, if there is one.
    fn hand_to_exit(&mut self, from: usize) {
        if let Some(exit) = self.exit.as_mut() {
            for o in self.outputs.drain(from..) {
                exit.push(o.at, o);
            }
        }
    }

    /// Takes back the buffers of packets the legs lost (their stages never free).
    fn reclaim(&mut self) {
        let Engine { legs, pool, .. } = self;
        for leg in legs.iter_mut() {
            if let Some(x2) = leg.x2.as_mut() {
                x2.reclaim(&mut |id| pool.free(id));
            }
            leg.down.reclaim(&mut |id| pool.free(id));
            if let Some(up) = leg.up.as_mut() {
                up.reclaim(&mut |id| pool.free(id));
            }
        }
    }

    fn send_down(&mut self, now: Nanos, pkt: Pkt) {
        let b = pkt.bearer as usize;
        if let Some(hold) = self.bearers[b].hold.as_mut() {
            // Numbered only when a leg has room (`delay-target`).
            if hold.admit(now, pkt.len + self.header_bytes, pkt).is_err() {
                self.pool.free(pkt.id);
            }
            self.release_held(now, b);
            return;
        }
        let bearer = &mut self.bearers[b];
        let len = pkt.len + self.header_bytes;
        let legs_now = &self.legs;
        let BearerState { tx, flow, .. } = bearer;
        let next = match flow.as_mut() {
            Some(fc) => tx.try_next_steered(|count, _| {
                let queued = legs_now[fc.master_leg()].down.queued_bytes(b);
                fc.steer(now, count, len, queued)
            }),
            None => tx.try_next(),
        };
        self.dispatch(now, pkt, next);
    }

    /// Bearer `b`'s held SDUs at `now`: those whose discard timer expired are dropped, then
    /// each in turn is numbered and sent while one of the legs has room for it.
    fn release_held(&mut self, now: Nanos, b: usize) {
        let hdr = self.header_bytes;
        loop {
            let Engine {
                bearers,
                legs,
                pool,
                ..
            } = &mut *self;
            let BearerState { hold, flow, tx, .. } = &mut bearers[b];
            let (Some(hold), Some(fc)) = (hold.as_mut(), flow.as_mut()) else {
                return;
            };
            hold.expire(now, |p| pool.free(p.id));
            let Some(len) = hold.front_len() else {
                self.bearers[b].hold_wake = None;
                return;
            };
            let queued = legs[fc.master_leg()].down.queued_bytes(b);
            let Some(leg) = fc.place(now, len, queued) else {
                // Room comes with a report, the master's queue draining (both step this
                // bearer) or a secondary's predicted drain.
                let wake = fc.next_room(now, len).map(|t| t.max(now + 1));
                self.bearers[b].hold_wake = wake;
                return;
            };
            let pkt = hold.release(now).expect("front");
            let next = tx.try_next_steered(|_, _| leg);
            if let Some((count, _, _)) = next {
                fc.sent(now, leg, count, len);
            }
            debug_assert_eq!(len, pkt.len + hdr);
            self.dispatch(now, pkt, next);
        }
    }

    /// Sends the numbered PDU `pkt` (COUNT, SN, legs from its bearer's transmitter) on its
    /// legs.
    fn dispatch(&mut self, now: Nanos, mut pkt: Pkt, next: Option<(u32, u32, LegSet)>) {
        let b = pkt.bearer as usize;
        // All 2^32 COUNTs used (soon, with pdcp.initial_count near the top): a COUNT must
        // never repeat, so the bearer sends nothing more.
        let Some((count, _sn, legs)) = next else {
            self.counters.dropped_count_exhausted += 1;
            self.pool.free(pkt.id);
            return;
        };
        let legs = self.usable(b, legs);
        pkt.count = count;
        pkt.len += self.header_bytes;
        // The master's PDCP reaches a secondary node's leg over X2 (an SC or path bearer
        // on that leg is the secondary's own).
        let via_x2 = matches!(self.bearers[b].mode, BearerMode::Dc | BearerMode::Dup);
        let mut first = true;
        for leg in legs.iter() {
            let mut p = pkt;
            if !first {
                match self.pool.clone_packet(pkt.id) {
                    Some(id) => p.id = id,
                    None => {
                        self.counters.dropped_no_buffer += 1;
                        continue;
                    }
                }
            }
            first = false;
            let l = &mut self.legs[leg];
            let taken = match l.x2.as_mut() {
                Some(x2) if via_x2 => x2.enqueue(now, p),
                _ => {
                    if let Some(fc) = self.bearers[b].flow.as_mut() {
                        fc.arrived(leg, count, now, l.down.queued_bytes(b) == 0);
                    }
                    l.down.enqueue(now, p)
                }
            };
            if !taken {
                self.pool.free(p.id);
            } else {
                self.keep_copy(b, leg, p);
            }
        }
        if first {
            // No leg took it (cannot happen with a validated scenario); do not leak it.
            self.pool.free(pkt.id);
        }
    }

    /// Outage fallback: the master keeps a copy of `p`, sent on `leg`.
    fn keep_copy(&mut self, b: usize, leg: usize, p: Pkt) {
        let Some(fc) = self.bearers[b].flow.as_mut().filter(|f| f.keeps_copies()) else {
            return;
        };
        let Some(id) = self.pool.clone_packet(p.id) else {
            self.counters.dropped_no_buffer += 1;
            return;
        };
        if let Err(c) = fc.keep_copy(leg, p.count, Pkt { id, ..p }) {
            self.pool.free(c.id);
        }
    }

    fn send_up(&mut self, now: Nanos, pkt: Pkt) {
        let bearer = &mut self.bearers[pkt.bearer as usize];
        bearer.uplink_bytes += pkt.len as u64;
        bearer.uplink_packets += 1;
        match bearer.uplink_leg.and_then(|l| self.legs[l].up.as_mut()) {
            Some(up) => {
                if !up.enqueue(now, pkt) {
                    self.pool.free(pkt.id);
                }
            }
            None => {
                self.counters.uplink_unshaped += 1;
                self.counters.packets_out_up += 1;
                self.outputs.push_back(Output {
                    dir: Dir::Up,
                    id: pkt.id,
                    at: now,
                });
            }
        }
    }

    /// The earliest pending event, with its component.
    fn earliest(&self) -> Option<(Nanos, Due)> {
        if let Some(due) = self.next_due.get() {
            return due;
        }
        let due = self.find_earliest();
        self.next_due.set(Some(due));
        due
    }

    fn find_earliest(&self) -> Option<(Nanos, Due)> {
        let mut best: Option<(Nanos, Due)> = None;
        let mut consider = |t: Option<Nanos>, d: Due| {
            if let Some(t) = t {
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, d));
                }
            }
        };
        for (i, b) in self.bearers.iter().enumerate() {
            consider(b.rx.as_ref().and_then(|rx| rx.next_deadline()), Due::Rx(i));
        }
        consider(
            self.exit.as_ref().and_then(|e| e.next_deadline()),
            Due::Exit,
        );
        consider(
            self.entry.as_ref().and_then(|e| e.next_deadline()),
            Due::Entry,
        );
        consider(
            self.schedule.get(self.next_change).map(|c| c.0),
            Due::Change,
        );
        for (i, b) in self.bearers.iter().enumerate() {
            consider(b.flow.as_ref().map(|f| f.next_deadline()), Due::Flow(i));
        }
        for (i, b) in self.bearers.iter().enumerate() {
            if let Some(hold) = b.hold.as_ref() {
                let wake = match (hold.next_deadline(), b.hold_wake) {
                    (Some(a), Some(w)) => Some(a.min(w)),
                    (a, w) => a.or(w),
                };
                consider(wake, Due::Hold(i));
            }
        }
        for (i, l) in self.legs.iter().enumerate() {
            consider(l.sn.as_ref().and_then(|s| s.next_deadline()), Due::Sn(i));
        }
        for (i, l) in self.legs.iter().enumerate() {
            consider(l.x2.as_ref().and_then(|x| x.next_deadline()), Due::X2(i));
        }
        for (i, l) in self.legs.iter().enumerate() {
            consider(l.down.next_deadline(), Due::Down(i));
        }
        for (i, l) in self.legs.iter().enumerate() {
            consider(l.up.as_ref().and_then(|u| u.next_deadline()), Due::Up(i));
        }
        consider(Some(self.next_stats), Due::Stats);
        best
    }

    /// When the engine next needs `advance` (a stats boundary at the latest).
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.earliest().map(|(t, _)| t)
    }

    /// Processes every event due at or before `now`, in time order.
    pub fn advance(&mut self, now: Nanos) {
        while let Some((t, due)) = self.earliest() {
            if t > now {
                break;
            }
            self.step(t, due);
        }
    }

    fn step(&mut self, t: Nanos, due: Due) {
        self.next_due.set(None);
        match due {
            Due::Exit => {
                if let Some(exit) = self.exit.as_mut() {
                    while let Some((at, o)) = exit.pop_due(t) {
                        self.outputs.push_back(Output { at, ..o });
                    }
                }
                return;
            }
            Due::Entry => {
                while let Some((at, (dir, pkt))) = self.entry.as_mut().and_then(|e| e.pop_due(t)) {
                    self.send(at, dir, pkt);
                }
                return;
            }
            _ => {}
        }
        let first_new = self.outputs.len();
        match due {
            Due::Rx(b) => self.poll_rx(t, b),
            Due::Flow(b) => {
                self.poll_flow(t, b);
                self.release_held(t, b);
            }
            Due::Hold(b) => self.release_held(t, b),
            Due::Sn(l) => {
                self.poll_sn(t, l);
                self.release_all_held(t, None);
            }
            Due::X2(l) => self.poll_x2(t, l),
            Due::Down(l) => {
                self.poll_down(t, l);
                // The master's queue drained: room for what waits on it.
                self.release_all_held(t, Some(l));
            }
            Due::Up(l) => self.poll_up(t, l),
            Due::Change => {
                let what = self.schedule[self.next_change].1.clone();
                self.next_change += 1;
                self.apply(t, what);
                self.release_all_held(t, None);
            }
            Due::Stats => {
                let rec = self.record("interval", t);
                self.records.push(rec);
                self.last_stats = t;
                self.next_stats = t + self.stats_interval;
            }
            Due::Exit | Due::Entry => unreachable!("handled above"),
        }
        self.reclaim();
        self.hand_to_exit(first_new);
    }

    /// The held SDUs at `t` of every bearer, or of those whose master is on leg
    /// `master` (after something that may have made room).
    fn release_all_held(&mut self, t: Nanos, master: Option<usize>) {
        for b in 0..self.bearers.len() {
            let x = &self.bearers[b];
            if master.is_none_or(|l| x.legs[0] == l)
                && x.hold.as_ref().is_some_and(|h| !h.is_empty())
            {
                self.release_held(t, b);
            }
        }
    }

    /// Bearer `b`'s receiver at `t`: t-Reordering expiries release what they may.
    fn poll_rx(&mut self, t: Nanos, b: usize) {
        let Engine {
            bearers,
            pool,
            outputs,
            counters,
            delivered_flows,
            header_bytes,
            ..
        } = self;
        let BearerState {
            rx,
            delivered_bytes,
            delivered_packets,
            ..
        } = &mut bearers[b];
        let mut to_client = ToClient {
            outputs,
            counters,
            flows: delivered_flows,
        };
        if let Some(rx) = rx.as_mut() {
            rx.poll(t, &mut |ev| {
                on_rx_event(
                    ev,
                    pool,
                    &mut to_client,
                    delivered_bytes,
                    delivered_packets,
                    *header_bytes,
                )
            });
        }
    }

    /// Bearer `b`'s flow control at `t`: the secondaries' reports made and received; on an
    /// outage, the master's copies of what it sent there go on its own leg.
    fn poll_flow(&mut self, t: Nanos, b: usize) {
        let Engine {
            legs,
            bearers,
            pool,
            ..
        } = self;
        let Some(fc) = bearers[b].flow.as_ref() else {
            return;
        };
        if fc.keeps_copies() {
            // What the bearer's legs served since (of any bearer they carry), each with its leg.
            let (mut served, mut tagged) = (Vec::new(), Vec::new());
            for &l in &bearers[b].legs {
                let from = served.len();
                legs[l].down.take_served(&mut served);
                tagged.extend(std::iter::repeat_n(l, served.len() - from));
            }
            for (&(at, bearer, count), &l) in served.iter().zip(&tagged) {
                if let Some(f) = bearers[bearer as usize].flow.as_mut() {
                    f.served(l, count, at);
                }
            }
        }
        let mut fates = Vec::new();
        let fc = bearers[b].flow.as_mut().expect("checked above");
        fc.poll(t, |leg, at| legs[leg].down.service(b, at), &mut fates);
        let master = fc.master_leg();
        for fate in fates {
            match fate {
                CopyFate::Free(p) => pool.free(p.id),
                CopyFate::Resend(p, to) => {
                    let l = &mut legs[to];
                    // A secondary is reached over its X2/Xn hop, as the split's PDUs are.
                    let taken = match l.x2.as_mut() {
                        Some(x2) if to != master => x2.enqueue(t, p),
                        _ => {
                            let empty = l.down.queued_bytes(b) == 0;
                            if let Some(fc) = bearers[b].flow.as_mut() {
                                fc.arrived(to, p.count, t, empty);
                            }
                            l.down.enqueue(t, p)
                        }
                    };
                    if !taken {
                        if let Some(fc) = bearers[b].flow.as_mut() {
                            fc.unstrand(p.count);
                        }
                        pool.free(p.id);
                    }
                }
            }
        }
    }

    /// The legs a PDU of bearer `b` may take now: a leg whose secondary node is away is
    /// left out (a PDU left with none goes on the bearer's master's leg).
    fn usable(&mut self, b: usize, legs: LegSet) -> LegSet {
        let away = |l: usize| self.legs[l].sn.as_ref().is_some_and(|s| !s.is_active());
        if !legs.iter().any(away) {
            return legs;
        }
        let kept: LegSet = legs.iter().filter(|&l| !away(l)).collect();
        let out = if kept.is_empty() {
            LegSet::single(self.bearers[b].legs[0])
        } else {
            kept
        };
        self.bearers[b].tx.recount(legs, out);
        out
    }

    /// The split bearers (dc, dup) that use leg `l` as a secondary.
    fn split_bearers_on(&self, l: usize) -> Vec<usize> {
        (0..self.bearers.len())
            .filter(|&b| {
                let x = &self.bearers[b];
                matches!(x.mode, BearerMode::Dc | BearerMode::Dup)
                    && x.legs[0] != l
                    && x.legs.contains(&l)
            })
            .collect()
    }

    /// A secondary node event on leg `l` at `now` (see `engine/secondary.rs`).
    fn secondary_event(&mut self, now: Nanos, l: usize, event: SnEvent) {
        let split = self.split_bearers_on(l);
        let hop = self.legs[l].x2_hop;
        let sn = self.legs[l].sn.get_or_insert_with(SecondaryNode::new);
        match event {
            SnEvent::Release { forward } => sn.release(now, forward),
            SnEvent::Add => sn.add(now),
            SnEvent::Change {
                interruption,
                forward,
            } => sn.change(now, interruption, forward),
        }
        let active = sn.is_active();
        if let Some(how) = sn.divert(now, hop) {
            // What the leaving node holds of the split bearers.
            let LegState { down, sn, .. } = &mut self.legs[l];
            let sn = sn.as_mut().expect("set above");
            for &b in &split {
                for p in down.take_bearer(now, b as u16) {
                    sn.hold(p, how);
                    if how == Divert::Lose {
                        self.pool.free(p.id);
                    }
                }
            }
        }
        for &b in &split {
            if let Some(fc) = self.bearers[b].flow.as_mut() {
                let pool = &mut self.pool;
                fc.set_active(l, active, |p| pool.free(p.id));
            }
        }
    }

    /// Leg `l`'s secondary node at `t`: an interruption ends, forwarded packets arrive.
    fn poll_sn(&mut self, t: Nanos, l: usize) {
        let mut due = Vec::new();
        let resumed = match self.legs[l].sn.as_mut() {
            Some(sn) => sn.poll(t, &mut |at, target, p| due.push((at, target, p))),
            None => false,
        };
        if resumed {
            for b in self.split_bearers_on(l) {
                if let Some(fc) = self.bearers[b].flow.as_mut() {
                    let pool = &mut self.pool;
                    fc.set_active(l, true, |p| pool.free(p.id));
                }
            }
        }
        for (at, target, p) in due {
            let bearer = &mut self.bearers[p.bearer as usize];
            let to = match target {
                Target::Leg => {
                    if let Some(fc) = bearer.flow.as_mut() {
                        let empty = self.legs[l].down.queued_bytes(p.bearer as usize) == 0;
                        fc.arrived(l, p.count, at, empty);
                    }
                    l
                }
                Target::Master => bearer.legs[0],
            };
            if !self.legs[to].down.enqueue(at, p) {
                self.pool.free(p.id);
            }
        }
    }

    /// Leg `l`'s X2 hop at `t`: what crosses it enters the leg at its own instant.
    fn poll_x2(&mut self, t: Nanos, l: usize) {
        let Engine {
            legs,
            bearers,
            pool,
            ..
        } = self;
        let LegState {
            x2,
            down,
            sn,
            x2_hop,
            ..
        } = &mut legs[l];
        if let Some(x2) = x2.as_mut() {
            x2.poll(t, &mut |at, pkt| {
                // The secondary is away: what reaches it is forwarded or lost.
                if let Some((sn, how)) = sn
                    .as_mut()
                    .and_then(|s| s.divert(at, *x2_hop).map(|how| (s, how)))
                {
                    sn.hold(pkt, how);
                    if how == Divert::Lose {
                        pool.free(pkt.id);
                    }
                    return;
                }
                if let Some(fc) = bearers[pkt.bearer as usize].flow.as_mut() {
                    fc.arrived(
                        l,
                        pkt.count,
                        at,
                        down.queued_bytes(pkt.bearer as usize) == 0,
                    );
                }
                if !down.enqueue(at, pkt) {
                    pool.free(pkt.id);
                }
            });
        }
    }

    /// Leg `l`'s downlink at `t`: what leaves it goes to its bearer's receiver (or, in
    /// bypass, straight to the client).
    fn poll_down(&mut self, t: Nanos, l: usize) {
        let Engine {
            legs,
            bearers,
            pool,
            outputs,
            counters,
            delivered_flows,
            header_bytes,
            leg_exits,
            ..
        } = self;
        let hdr = *header_bytes;
        let mut to_client = ToClient {
            outputs,
            counters,
            flows: delivered_flows,
        };
        legs[l].down.poll(t, &mut |at, pkt| {
            apply_mark(pool, &pkt);
            if let Some(taps) = leg_exits.as_mut() {
                taps.push(LegExit {
                    leg: l,
                    at,
                    bytes: pool.get(pkt.id).to_vec(),
                });
            }
            let BearerState {
                rx,
                flow,
                delivered_bytes,
                delivered_packets,
                sn_mask,
                ..
            } = &mut bearers[pkt.bearer as usize];
            // An original whose copy went on another leg in an outage: discarded here, as
            // the failed leg's RLC would have (FlowControl::take_stranded).
            if flow.as_mut().is_some_and(|f| f.take_stranded(l, pkt.count)) {
                pool.free(pkt.id);
                return;
            }
            match rx.as_mut() {
                Some(rx) => {
                    let sn = pkt.count & *sn_mask;
                    rx.receive_sent(at, sn, pkt.count, pkt, &mut |ev| {
                        on_rx_event(
                            ev,
                            pool,
                            &mut to_client,
                            delivered_bytes,
                            delivered_packets,
                            hdr,
                        )
                    });
                }
                None => {
                    *delivered_bytes += (pkt.len - hdr) as u64;
                    *delivered_packets += 1;
                    to_client.deliver(at, pkt.id, pool.get(pkt.id));
                }
            }
        });
    }

    /// Leg `l`'s uplink at `t`: what leaves it goes to the server.
    fn poll_up(&mut self, t: Nanos, l: usize) {
        let Engine {
            legs,
            outputs,
            counters,
            pool,
            ..
        } = self;
        if let Some(up) = legs[l].up.as_mut() {
            up.poll(t, &mut |at, pkt| {
                apply_mark(pool, &pkt);
                counters.packets_out_up += 1;
                outputs.push_back(Output {
                    dir: Dir::Up,
                    id: pkt.id,
                    at,
                });
            });
        }
    }

    fn apply(&mut self, now: Nanos, what: ChangeKind) {
        match what {
            ChangeKind::Rate {
                leg,
                uplink,
                mut rate,
            } => {
                // A trace switched on mid-run starts from its beginning.
                if let RateSpec::Trace { start_offset, .. } = &mut rate {
                    *start_offset = now;
                }
                match self.direction(leg, uplink) {
                    Dl::Link(l) => l.set_rate(now, rate),
                    // Validated: a cell's capacity is not scheduled.
                    Dl::Cell(_) => {}
                }
            }
            ChangeKind::Delay { leg, uplink, delay } => match self.direction(leg, uplink) {
                Dl::Link(l) => l.set_delay(now, delay),
                Dl::Cell(c) => c.set_delay(now, delay),
            },
            ChangeKind::Loss { leg, uplink, loss } => match self.direction(leg, uplink) {
                Dl::Link(l) => l.set_loss(now, loss),
                Dl::Cell(c) => c.set_loss(now, loss),
            },
            ChangeKind::Secondary { leg, event } => self.secondary_event(now, leg, event),
            ChangeKind::Split {
                bearer,
                batch,
                ratio,
            } => {
                for (i, b) in self.bearers.iter_mut().enumerate() {
                    if bearer.map_or(b.mode == BearerMode::Dc, |x| x == i) {
                        if let TxMode::Split { pattern, .. } = b.tx.mode() {
                            let batch = batch.unwrap_or(pattern.batch());
                            let ratio = ratio.clone().unwrap_or_else(|| pattern.ratio().to_vec());
                            // Validated with the scenario, so this cannot fail.
                            let _ = b.tx.set_split(batch, &ratio);
                        }
                    }
                }
            }
        }
    }

    fn direction(&mut self, leg: usize, uplink: bool) -> Dl<'_> {
        let l = &mut self.legs[leg];
        if uplink {
            Dl::Link(l.up.as_mut().expect("validated: leg has an uplink"))
        } else {
            match &mut l.down {
                Downlink::Link(d) => Dl::Link(d),
                Downlink::Cell(c) => Dl::Cell(c),
            }
        }
    }

    /// Packets to write, in delivery order. The driver writes each and then calls
    /// `release(id)`.
    pub fn outputs(&mut self) -> &mut VecDeque<Output> {
        &mut self.outputs
    }

    pub fn release(&mut self, id: PktId) {
        self.pool.free(id);
    }

    /// From now on, note every downlink packet that leaves a leg (a per-leg capture).
    pub fn tap_legs(&mut self) {
        self.leg_exits.get_or_insert_with(Vec::new);
    }

    /// The leg exits noted since the last call, in the order they happened per leg.
    pub fn take_leg_exits(&mut self) -> Vec<LegExit> {
        self.leg_exits
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Stats records produced so far (drained by the caller).
    pub fn take_records(&mut self) -> Vec<Record> {
        std::mem::take(&mut self.records)
    }

    /// The final record, covering the time since the last interval record.
    pub fn summary(&mut self, now: Nanos) -> Record {
        self.advance(now);
        self.record("summary", now)
    }

    fn record(&mut self, kind: &'static str, t: Nanos) -> Record {
        let dt = t.saturating_sub(self.last_stats);
        let mut engine = self.counters.clone();
        engine.buffers_in_use = self.pool.in_use() as u64;
        let mut r = Record::of(kind, t, dt, &mut self.legs, &mut self.bearers, engine);
        if kind == "summary" {
            r.flows = self.delivered_flows.records();
            r.flows_beyond = Some(self.delivered_flows.beyond()).filter(|b| b.packets > 0);
        }
        r
    }

    pub fn counters(&self) -> &EngineCounters {
        &self.counters
    }
}

/// One direction of a leg, for scheduled changes.
enum Dl<'a> {
    Link(&'a mut LinkDirection),
    Cell(&'a mut CellDirection),
}

/// A direction's mean delay.
fn mean_delay(spec: &LinkSpec) -> Nanos {
    from_ms(spec.delay.mean_ms().max(0.0))
}

/// Leg `l` as a flow-controlled split sees it; the master (`first`) has no hop.
fn flow_leg(leg: &crate::config::Leg, l: usize, first: bool) -> FlowLeg {
    FlowLeg {
        leg: l,
        hop: match &leg.x2 {
            Some(x2) if !first => mean_delay(x2),
            _ => 0,
        },
        delay: mean_delay(&leg.downlink),
        known_bps: match (&leg.cell, &leg.downlink.rate) {
            (None, RateSpec::Fixed { bps }) => Some(*bps as f64),
            _ => None,
        },
    }
}

fn seed(base: u64, leg: usize, dir: u64) -> u64 {
    base.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((leg as u64) << 8 | dir)
}

/// A packet a queue's AQM marked CE (`Pkt::ecn`) carries the mark in its IP header from
/// here on (its buffer was read as ECN-capable at ingress).
fn apply_mark(pool: &mut PacketPool, pkt: &Pkt) {
    if pkt.ecn == CE && ecn_of(pool.get(pkt.id)) != CE {
        set_ce(pool.get_mut(pkt.id));
    }
}

fn on_rx_event(
    ev: RxEvent<Pkt>,
    pool: &mut PacketPool,
    to_client: &mut ToClient,
    delivered_bytes: &mut u64,
    delivered_packets: &mut u64,
    hdr: u32,
) {
    match ev {
        RxEvent::Deliver { at, item, .. } => {
            *delivered_bytes += (item.len - hdr) as u64;
            *delivered_packets += 1;
            to_client.deliver(at, item.id, pool.get(item.id));
        }
        RxEvent::Discard { item, .. } => pool.free(item.id),
    }
}

/// Where a downlink packet leaves the emulated network for the client: the driver's
/// outputs, counted in all and per flow.
struct ToClient<'a> {
    outputs: &'a mut VecDeque<Output>,
    counters: &'a mut EngineCounters,
    flows: &'a mut DeliveredFlows,
}

impl ToClient<'_> {
    fn deliver(&mut self, at: Nanos, id: PktId, ip: &[u8]) {
        self.counters.packets_out_down += 1;
        self.flows.delivered(ip);
        self.outputs.push_back(Output {
            dir: Dir::Down,
            id,
            at,
        });
    }
}

#[cfg(test)]
mod tests;
