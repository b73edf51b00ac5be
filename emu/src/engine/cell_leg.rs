//! A leg's downlink whose rate stage is an LTE cell: cell (per-device queues, TTI
//! scheduler) -> loss -> delay stage, the stage order of [`LinkDirection`] with the cell in
//! place of the rate stage. A packet goes to the device of its bearer (see
//! `config::CellLeg`); a packet the cell serves at `t` is judged by the loss model and
//! enters the delay stage at `t`, so the output does not depend on how often `poll` runs.
//!
//! [`Downlink`] is what the engine drives: a plain [`LinkDirection`] or a [`CellDirection`].

use crate::base::histogram::Histogram;
use crate::base::packet::{Pkt, PktId};
use crate::base::time::Nanos;
use crate::cell::{Cell, CellCounters, DeviceCounters};
use crate::config::CellLeg;
use crate::link::{
    sub_seed, DelayDist, LinkCounters, LinkDirection, LinkSpec, LinkTail, LossModel, Served,
};
use crate::qdisc::{AqmCounters, Refused};

#[derive(Debug)]
pub struct CellDirection {
    cell: Cell,
    bandwidth_mhz: f64,
    device_of_bearer: Vec<Option<usize>>,
    tail: LinkTail,
    counters: LinkCounters,
}

impl CellDirection {
    /// `spec` gives the delay and loss stages (its rate and queue fields are unused).
    pub fn new(spec: &LinkSpec, cell: &CellLeg, seed: u64) -> anyhow::Result<Self> {
        Ok(CellDirection {
            cell: Cell::new(&cell.spec, sub_seed(seed, 3))?,
            bandwidth_mhz: cell.spec.bandwidth_mhz,
            device_of_bearer: cell.device_of_bearer.clone(),
            tail: LinkTail::new(spec, seed),
            counters: LinkCounters::default(),
        })
    }

    /// Offers `p` (to its bearer's device) at `now`; `false` = tail-dropped at the
    /// device's queue, or its bearer has no device here (counted as a queue drop), or the
    /// queue's AQM dropped it (counted by the AQM). What FQ-CoDel's limit dropped of the
    /// queued packets counts as the queue's drops.
    pub fn enqueue(&mut self, now: Nanos, p: Pkt) -> bool {
        self.advance(now);
        self.counters.packets_in += 1;
        self.counters.bytes_in += p.len as u64;
        let device = self
            .device_of_bearer
            .get(p.bearer as usize)
            .copied()
            .flatten();
        let r = match device {
            Some(d) => self.cell.enqueue(now, d, p),
            None => Err(Refused::Full(p)),
        };
        let (packets, bytes) = self.cell.take_evicted();
        self.counters.dropped_queue_packets += packets;
        self.counters.dropped_queue_bytes += bytes;
        self.counters.offered(r)
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.tail.next_deadline(self.cell.next_deadline())
    }

    /// Emits, in order, every packet leaving the link by `now`, with its exact instant.
    pub fn poll(&mut self, now: Nanos, out: &mut impl FnMut(Nanos, Pkt)) {
        self.advance(now);
        self.tail.poll(now, &mut self.counters, out);
    }

    /// Hands the buffers of packets lost on the link to `free`.
    pub fn reclaim(&mut self, free: &mut impl FnMut(PktId)) {
        self.tail.reclaim(free);
        self.cell.reclaim(&mut |p| free(p.id));
    }

    /// Takes `bearer`'s queued packets at `now` (see [`Cell::take_queue`]).
    pub fn take_bearer(&mut self, now: Nanos, bearer: u16) -> Vec<Pkt> {
        self.advance(now);
        match self
            .device_of_bearer
            .get(bearer as usize)
            .copied()
            .flatten()
        {
            Some(d) => self.cell.take_queue(now, d),
            None => Vec::new(),
        }
    }

    pub fn set_delay(&mut self, now: Nanos, dist: DelayDist) {
        self.advance(now);
        self.tail.set_delay(dist);
    }

    pub fn set_loss(&mut self, now: Nanos, model: LossModel) {
        self.advance(now);
        self.tail.set_loss(model);
    }

    pub fn counters(&self) -> &LinkCounters {
        &self.counters
    }

    pub fn cell(&self) -> &Cell {
        &self.cell
    }

    pub fn bandwidth_mhz(&self) -> f64 {
        self.bandwidth_mhz
    }

    pub fn device_counters(&self, device: usize) -> &DeviceCounters {
        self.cell.counters(device)
    }

    pub fn cell_counters(&self) -> &CellCounters {
        self.cell.cell_counters()
    }

    /// Packets queued in the cell, over all devices.
    pub fn queue_packets(&self) -> u32 {
        (0..self.cell.n_devices())
            .map(|d| self.cell.counters(d).queue_packets)
            .sum::<u64>() as u32
    }

    pub fn queue_bytes(&self) -> u64 {
        (0..self.cell.n_devices())
            .map(|d| self.cell.counters(d).queue_bytes)
            .sum()
    }

    /// Moves every packet the cell served by `now` through loss into the delay stage, each
    /// at its own instant.
    fn advance(&mut self, now: Nanos) {
        let (tail, c) = (&mut self.tail, &mut self.counters);
        self.cell.poll(now, &mut |t, _d, p| tail.offer(t, p, c));
    }
}

/// What a leg's queue holds for one bearer and how fast it can serve it: what flow
/// control reads of a leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Service {
    pub queued_bytes: u64,
    /// Bytes the leg could serve the bearer while it had data queued: a link's served
    /// bytes, a cell's blocks including the idle resource blocks it could have had.
    pub capacity_bytes: u64,
    /// Time the queue had data to serve.
    pub busy: Nanos,
    /// What the queue can hold, in bytes (a packet limit at 1500 bytes a packet).
    pub limit_bytes: Option<u64>,
}

/// Bytes a packet limit stands for in `Service::limit_bytes`.
const LIMIT_PACKET_BYTES: u64 = 1500;

/// A leg's downlink: the rate-stage pipeline or a cell.
// The common rate-stage pipeline stays inline (no indirection on its hot path).
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Downlink {
    Link(LinkDirection),
    Cell(Box<CellDirection>),
}

impl Downlink {
    pub fn enqueue(&mut self, now: Nanos, p: Pkt) -> bool {
        match self {
            Downlink::Link(l) => l.enqueue(now, p),
            Downlink::Cell(c) => c.enqueue(now, p),
        }
    }

    pub fn reclaim(&mut self, free: &mut impl FnMut(PktId)) {
        match self {
            Downlink::Link(l) => l.reclaim(free),
            Downlink::Cell(c) => c.reclaim(free),
        }
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        match self {
            Downlink::Link(l) => l.next_deadline(),
            Downlink::Cell(c) => c.next_deadline(),
        }
    }

    pub fn poll(&mut self, now: Nanos, out: &mut impl FnMut(Nanos, Pkt)) {
        match self {
            Downlink::Link(l) => l.poll(now, out),
            Downlink::Cell(c) => c.poll(now, out),
        }
    }

    pub fn counters(&self) -> &LinkCounters {
        match self {
            Downlink::Link(l) => l.counters(),
            Downlink::Cell(c) => c.counters(),
        }
    }

    /// What the leg's AQM dropped and marked: a cell's, its device queues' together.
    pub fn aqm_counters(&self) -> Option<AqmCounters> {
        match self {
            Downlink::Link(l) => l.aqm_counters(),
            Downlink::Cell(c) => {
                let cell = c.cell();
                (0..cell.n_devices())
                    .filter_map(|d| cell.aqm_counters(d))
                    .reduce(|mut a, b| {
                        a += b;
                        a
                    })
            }
        }
    }

    /// The rate stage's sojourn histogram (a cell's per-device queues have none yet).
    pub fn sojourn(&self) -> Option<&Histogram> {
        match self {
            Downlink::Link(l) => Some(l.sojourn()),
            Downlink::Cell(_) => None,
        }
    }

    pub fn queue_packets(&self) -> u32 {
        match self {
            Downlink::Link(l) => l.queue_packets(),
            Downlink::Cell(c) => c.queue_packets(),
        }
    }

    pub fn queue_bytes(&self) -> u64 {
        match self {
            Downlink::Link(l) => l.queue_bytes(),
            Downlink::Cell(c) => c.queue_bytes(),
        }
    }

    pub fn in_flight(&self) -> u32 {
        match self {
            Downlink::Link(l) => l.in_flight(),
            Downlink::Cell(c) => c.tail.in_flight(),
        }
    }

    /// Takes `bearer`'s packets still queued at `now` (a secondary node's, at its
    /// release or change).
    pub fn take_bearer(&mut self, now: Nanos, bearer: u16) -> Vec<Pkt> {
        match self {
            Downlink::Link(l) => l.take_bearer(now, bearer),
            Downlink::Cell(c) => c.take_bearer(now, bearer),
        }
    }

    /// Notes from now on every packet that leaves the queueing stage (the rate stage, or
    /// the cell), for [`Downlink::take_served`].
    pub fn track_served(&mut self) {
        match self {
            Downlink::Link(l) => l.tail_mut().track_served(),
            Downlink::Cell(c) => c.tail.track_served(),
        }
    }

    /// Moves what left the queueing stage since the last call into `out`.
    pub fn take_served(&mut self, out: &mut Vec<Served>) {
        match self {
            Downlink::Link(l) => l.tail_mut().take_served(out),
            Downlink::Cell(c) => c.tail.take_served(out),
        }
    }

    /// Bytes queued for `bearer`: its device's queue in a cell (none without one here), a
    /// link's whole queue. All a packet's placement needs, so cheaper than `service`.
    pub fn queued_bytes(&self, bearer: usize) -> u64 {
        match self {
            Downlink::Link(l) => l.queue_bytes(),
            Downlink::Cell(c) => c
                .device_of_bearer
                .get(bearer)
                .copied()
                .flatten()
                .map_or(0, |d| c.cell.counters(d).queue_bytes),
        }
    }

    /// The leg's service of `bearer` as of `now`: a cell's for the bearer's device (a
    /// bearer without one here has none), a link's for everything it carries.
    pub fn service(&self, bearer: usize, now: Nanos) -> Service {
        match self {
            Downlink::Link(l) => {
                let (capacity_bytes, busy) = l.service(now);
                Service {
                    queued_bytes: l.queue_bytes(),
                    capacity_bytes,
                    busy,
                    limit_bytes: l.queue_limit_bytes(LIMIT_PACKET_BYTES),
                }
            }
            Downlink::Cell(c) => match c.device_of_bearer.get(bearer).copied().flatten() {
                Some(d) => {
                    let k = c.cell.counters(d);
                    Service {
                        queued_bytes: k.queue_bytes,
                        capacity_bytes: k.busy_capacity_bits / 8,
                        busy: k.busy_ttis * c.cell.tti(),
                        limit_bytes: c.cell.queue_limit_bytes(d, LIMIT_PACKET_BYTES),
                    }
                }
                None => Service {
                    queued_bytes: 0,
                    capacity_bytes: 0,
                    busy: 0,
                    limit_bytes: None,
                },
            },
        }
    }
}
