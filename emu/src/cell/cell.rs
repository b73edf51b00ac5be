//! One LTE cell's downlink: a queue per device at the base station (drop-tail, or under an
//! AQM: `qdisc/managed.rs`), a scheduler every TTI, and per device a capacity that follows
//! its fading channel.
//!
//! # Timing
//! TTI `n` covers `[n·tti, (n+1)·tti)`. A packet enqueued at `t` can first be scheduled
//! in TTI `ceil(t / tti)` (one arriving exactly on a boundary makes that TTI). TTI `n` is
//! run once the clock has passed its start (`now > n·tti`): every device's channel is
//! moved to TTI `n`, its CQI read, the scheduler splits the RBs, and each device's
//! allocated bits are served from the head of its queue. A packet may take several TTIs
//! (RLC segmentation: the head keeps the bits it already got); it leaves the queue in the
//! TTI that serves its last byte and is emitted at that TTI's end, `(n+1)·tti`. Bits left
//! over in a TTI (the last RB of a device is rarely full) are lost, as padding.
//!
//! A packet's service starts at the start of the first TTI that gives it bits: that is
//! when its wait (sojourn) is measured and when an AQM sees it (CoDel may drop it and the
//! heads behind it, the TTI's bits then serving what follows or going to padding; PIE
//! judges at arrival; FQ-CoDel chooses which flow's packet starts).
//!
//! `enqueue` first runs every TTI the clock has passed, so the queue limits see the exact
//! depth, and `poll` emits packets with their exact instants: the output does not depend
//! on how often `poll` is called. `now` must never decrease.
//!
//! # Idle cells
//! TTIs run only while some queue holds data. When all queues are empty the cell skips
//! ahead: the next TTI run is the first one after the next arrival, and the channels and
//! PF averages jump over the idle TTIs exactly (see `fading` and `scheduler`). So
//! [`Cell::next_deadline`] is `None` while idle and an idle cell costs nothing.
//!
//! # Randomness
//! Device `d` of a cell seeded with `seed` draws its fading from [`device_seed`]`(seed, d)`.
//! The realization depends on which TTIs the cell ran (see `fading`), not its statistics.

use std::collections::VecDeque;

use anyhow::{bail, ensure};
use serde::Serialize;

use super::amc::{self, db_to_linear};
use super::blockage::{Blockage, BlockageSpec};
use super::fading::{Fading, FadingModel};
use super::harq::{Failed, Harq, HarqSpec, Pending};
use super::nr::{NrCarrier, NrSpec};
use super::phy::Phy;
use super::rlc::RlcSpec;
use super::scheduler::{Demand, Scheduler, SchedulerSpec};
use crate::base::histogram::Histogram;
use crate::base::packet::Pkt;
use crate::base::time::{Nanos, NS_PER_MS};
use crate::qdisc::{AqmCounters, AqmSpec, Managed, Refused, AQM_MTU};

/// Default per-device queue limit at the base station: 512 kB (512 000 bytes).
pub const DEFAULT_QUEUE_BYTES: u64 = 512_000;

/// One device (UE) of the cell.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceSpec {
    /// Mean downlink SINR in dB (the SINR without fading).
    pub mean_sinr_db: f64,
    /// Maximum Doppler shift in Hz (speed / wavelength), for the fading's time correlation.
    pub doppler_hz: f64,
    pub fading: FadingModel,
    /// Queue limits at the base station (`None` = unlimited); the head counts whole.
    pub queue_bytes: Option<u64>,
    pub queue_packets: Option<u32>,
    /// Line-of-sight blockage (`None`: never blocked).
    pub blockage: Option<BlockageSpec>,
    /// The queue's active queue management (`None`: tail drop alone).
    pub aqm: Option<AqmSpec>,
}

impl DeviceSpec {
    /// A device with the default queue limit ([`DEFAULT_QUEUE_BYTES`], no packet limit).
    pub fn new(mean_sinr_db: f64, doppler_hz: f64, fading: FadingModel) -> Self {
        DeviceSpec {
            mean_sinr_db,
            doppler_hz,
            fading,
            queue_bytes: Some(DEFAULT_QUEUE_BYTES),
            queue_packets: None,
            blockage: None,
            aqm: None,
        }
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        ensure!(
            self.mean_sinr_db.is_finite(),
            "mean SINR {} dB is not a number",
            self.mean_sinr_db
        );
        ensure!(
            self.doppler_hz.is_finite() && self.doppler_hz >= 0.0,
            "Doppler {} Hz must be >= 0",
            self.doppler_hz
        );
        if let Some(b) = &self.blockage {
            b.validate()?;
        }
        Ok(())
    }
}

/// The cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CellSpec {
    /// Channel bandwidth: LTE 1.4, 3, 5, 10, 15 or 20 MHz (6 to 100 RBs); NR that of `nr`.
    pub bandwidth_mhz: f64,
    pub scheduler: SchedulerSpec,
    pub devices: Vec<DeviceSpec>,
    /// TTI length (1 ms in LTE; NR's slot).
    pub tti: Nanos,
    /// An NR carrier (`None`: LTE).
    pub nr: Option<NrSpec>,
    /// HARQ retransmissions (`None`: every transport block arrives).
    pub harq: Option<HarqSpec>,
    /// What RLC does with a block HARQ gave up on (default AM: it is sent again).
    pub rlc: RlcSpec,
}

impl CellSpec {
    /// An LTE cell with a 1 ms TTI and no HARQ.
    pub fn new(bandwidth_mhz: f64, scheduler: SchedulerSpec, devices: Vec<DeviceSpec>) -> Self {
        CellSpec {
            bandwidth_mhz,
            scheduler,
            devices,
            tti: NS_PER_MS,
            nr: None,
            harq: None,
            rlc: RlcSpec::default(),
        }
    }

    /// An NR cell: TTIs of the carrier's slot, HARQ at the spec given.
    pub fn nr(
        carrier: NrSpec,
        scheduler: SchedulerSpec,
        devices: Vec<DeviceSpec>,
        harq: Option<HarqSpec>,
    ) -> Self {
        CellSpec {
            bandwidth_mhz: carrier.bandwidth_mhz,
            scheduler,
            devices,
            tti: super::nr::numerology::slot_duration(carrier.numerology.min(3)),
            nr: Some(carrier),
            harq,
            rlc: RlcSpec::default(),
        }
    }

    /// The radio this spec describes (errors: an invalid carrier).
    pub fn phy(&self) -> anyhow::Result<Phy> {
        match &self.nr {
            None => amc::rbs_for_bandwidth(self.bandwidth_mhz)
                .map(|n_rb| Phy::Lte { n_rb })
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "bandwidth {} MHz: LTE has 1.4, 3, 5, 10, 15 and 20 MHz",
                        self.bandwidth_mhz
                    )
                }),
            Some(nr) => Ok(Phy::Nr(NrCarrier::new(nr)?)),
        }
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        if let Some(nr) = &self.nr {
            NrCarrier::new(nr)?;
            ensure!(
                self.tti == super::nr::numerology::slot_duration(nr.numerology)
                    && self.bandwidth_mhz == nr.bandwidth_mhz,
                "an NR cell's TTI and bandwidth are its carrier's"
            );
        } else if amc::rbs_for_bandwidth(self.bandwidth_mhz).is_none() {
            bail!(
                "bandwidth {} MHz: LTE has 1.4, 3, 5, 10, 15 and 20 MHz",
                self.bandwidth_mhz
            );
        }
        ensure!(!self.devices.is_empty(), "a cell needs at least one device");
        ensure!(self.tti > 0, "a TTI of 0 ns");
        self.scheduler.validate()?;
        if let Some(h) = &self.harq {
            h.validate()?;
        }
        self.rlc.validate()?;
        for (i, d) in self.devices.iter().enumerate() {
            d.validate()
                .map_err(|e| anyhow::anyhow!("device {i}: {e}"))?;
        }
        Ok(())
    }
}

/// Per-device counters. `*_in` counts every packet offered, dropped ones included; bytes are
/// `Pkt::len`. `capacity_bits` and `rbs` sum what the scheduler allocated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeviceCounters {
    pub bytes_in: u64,
    pub packets_in: u64,
    pub bytes_out: u64,
    pub packets_out: u64,
    pub dropped_bytes: u64,
    pub dropped_packets: u64,
    /// Now queued (the partly served head counts whole).
    pub queue_bytes: u64,
    pub queue_packets: u64,
    pub capacity_bits: u64,
    pub rbs: u64,
    /// CQI in the last TTI run.
    pub cqi: u8,
    /// HARQ: transport blocks that failed, retransmissions sent (their RBs are in `rbs`,
    /// their bits not in `capacity_bits`), and packets lost with a block that failed its
    /// last transmission (RLC UM, or AM after its last retransmission). Left out of
    /// records while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub harq_failed: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub harq_retx: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub harq_lost_packets: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub harq_lost_bytes: u64,
    /// RLC AM: blocks HARQ gave up on that RLC sent again (each sending counted; its RBs
    /// are in `rbs`), and their packets. Left out of records while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub rlc_retx: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub rlc_retx_packets: u64,
    /// TTIs run while the device's line of sight was blocked.
    #[serde(skip_serializing_if = "is_zero")]
    pub blocked_ttis: u64,
    /// TTIs run while the device had data queued, and the bits it could have had in them
    /// (its block plus one on the resource blocks left idle): over the busy time, the rate
    /// a flow-controlled split reads (`pdcp/service_rate.rs`). A device whose queue a slot
    /// empties was given less than it could take; its served bytes would say only that.
    pub busy_ttis: u64,
    pub busy_capacity_bits: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CellCounters {
    /// TTIs run (those with data queued).
    pub ttis: u64,
    /// TTIs skipped while the cell was idle.
    pub idle_ttis: u64,
}

/// Derives device `device`'s fading seed from the cell's seed (splitmix64), so devices
/// are uncorrelated even for neighbouring seeds.
pub fn device_seed(cell_seed: u64, device: usize) -> u64 {
    let mut z = cell_seed.wrapping_add((device as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The bits per TTI a device would get with all `rbs_for_bandwidth(bandwidth_mhz)` RBs of
/// an LTE cell, TTI by TTI for `n_ttis` TTIs from index 0, its fading seeded with `seed`
/// (pass [`device_seed`] to follow device `d` of a cell that is busy in every TTI): a
/// capacity trace of the channel.
pub fn capacity_series(
    bandwidth_mhz: f64,
    device: &DeviceSpec,
    tti: Nanos,
    seed: u64,
    n_ttis: usize,
) -> anyhow::Result<Vec<u64>> {
    let Some(n_rb) = amc::rbs_for_bandwidth(bandwidth_mhz) else {
        bail!("bandwidth {bandwidth_mhz} MHz: LTE has 1.4, 3, 5, 10, 15 and 20 MHz");
    };
    phy_capacity_series(&Phy::Lte { n_rb }, device, tti, seed, n_ttis)
}

/// As [`capacity_series`], for any radio: all RBs of `phy` in each TTI, blockage included,
/// HARQ not (the bits sent, not those received).
pub fn phy_capacity_series(
    phy: &Phy,
    device: &DeviceSpec,
    tti: Nanos,
    seed: u64,
    n_ttis: usize,
) -> anyhow::Result<Vec<u64>> {
    Ok(phy_capacity_iter(phy, device, tti, seed, n_ttis as u64)?.collect())
}

/// [`phy_capacity_series`] TTI by TTI, without holding it.
pub fn phy_capacity_iter<'a>(
    phy: &'a Phy,
    device: &DeviceSpec,
    tti: Nanos,
    seed: u64,
    n_ttis: u64,
) -> anyhow::Result<impl Iterator<Item = u64> + 'a> {
    device.validate()?;
    ensure!(tti > 0, "a TTI of 0 ns");
    let mut f = Fading::new(device.fading, device.doppler_hz, tti, seed);
    let mut block = device
        .blockage
        .as_ref()
        .map(|b| Blockage::new(b, blockage_seed(seed)));
    let mean = db_to_linear(device.mean_sinr_db);
    let n_rb = phy.n_rb();
    Ok((0..n_ttis).map(move |n| {
        f.advance_to(n);
        let g = block.as_mut().map_or(1.0, |b| b.factor_at(n * tti));
        phy.tb_bits(phy.cqi(mean * f.power() * g), n_rb, n)
    }))
}

/// A device's blockage seed, from its fading seed (a stream of its own).
fn blockage_seed(fading_seed: u64) -> u64 {
    device_seed(fading_seed, 7)
}

/// A device's AQM seed (PIE's draws), from its fading seed (a stream of its own).
fn aqm_seed(fading_seed: u64) -> u64 {
    device_seed(fading_seed, 11)
}

/// The HARQ draws' seed: a stream past every device's (a cell has at most 1000).
fn harq_seed(cell_seed: u64) -> u64 {
    device_seed(cell_seed, 1 << 20)
}

#[derive(Debug)]
struct Device {
    mean_sinr: f64,
    /// The queue at the base station, under its discipline.
    q: Managed,
    /// Whether the head's service has started (the AQM has seen it).
    in_service: bool,
    /// Bits of the head already served.
    head_sent_bits: u64,
    /// Bits queued at the start of the TTI being run.
    need_bits: u64,
    fading: Fading,
    blockage: Option<Blockage>,
    counters: DeviceCounters,
}

/// The cell; see the module docs.
#[derive(Debug)]
pub struct Cell {
    tti: Nanos,
    phy: Phy,
    n_rb: u32,
    devices: Vec<Device>,
    scheduler: Scheduler,
    harq: Option<Harq>,
    /// Scratch: the HARQ blocks due in the TTI being run.
    due: Vec<Pending>,
    /// Packets lost with a block that failed its last transmission, or dropped by a queue's
    /// AQM or its FQ-CoDel limit, for the owner of the packet pool ([`Cell::reclaim`]).
    lost: Vec<Pkt>,
    /// Packets FQ-CoDel's limit dropped since [`Cell::take_evicted`] last asked.
    evicted: (u64, u64),
    /// Index of the next TTI to run.
    next_tti: u64,
    /// The TTI index the scheduler's averages are at.
    sched_tti: u64,
    /// Devices with a non-empty queue.
    backlogged: usize,
    /// Served packets not yet handed out by `poll`: (instant, device, packet).
    ready: VecDeque<(Nanos, usize, Pkt)>,
    demand: Vec<Demand>,
    rbs: Vec<u32>,
    bits: Vec<u64>,
    counters: CellCounters,
}

impl Cell {
    /// A cell at time 0 (errors: an invalid spec, see [`CellSpec::validate`]).
    pub fn new(spec: &CellSpec, seed: u64) -> anyhow::Result<Self> {
        spec.validate()?;
        let phy = spec.phy()?;
        let n_rb = phy.n_rb();
        let n = spec.devices.len();
        let devices = spec
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| Device {
                mean_sinr: db_to_linear(d.mean_sinr_db),
                q: match d.aqm {
                    None => Managed::new(d.queue_packets, d.queue_bytes),
                    Some(a) => Managed::new(d.queue_packets, d.queue_bytes)
                        .with_aqm(a.build(AQM_MTU, aqm_seed(device_seed(seed, i)))),
                },
                in_service: false,
                head_sent_bits: 0,
                need_bits: 0,
                fading: Fading::new(d.fading, d.doppler_hz, spec.tti, device_seed(seed, i)),
                blockage: d
                    .blockage
                    .as_ref()
                    .map(|b| Blockage::new(b, blockage_seed(device_seed(seed, i)))),
                counters: DeviceCounters::default(),
            })
            .collect();
        let scheduler = match spec.scheduler {
            SchedulerSpec::ProportionalFair { tc_ttis, rbg: None } => {
                SchedulerSpec::ProportionalFair {
                    tc_ttis,
                    rbg: Some(phy.rbg()),
                }
            }
            other => other,
        };
        Ok(Cell {
            tti: spec.tti,
            n_rb,
            devices,
            scheduler: Scheduler::new(scheduler, n_rb, n),
            harq: spec.harq.map(|h| {
                let recovery = spec.rlc.recovery(spec.tti, h.rtt_slots);
                Harq::new(h, recovery, harq_seed(seed))
            }),
            due: Vec::new(),
            lost: Vec::new(),
            evicted: (0, 0),
            phy,
            next_tti: 0,
            sched_tti: 0,
            backlogged: 0,
            ready: VecDeque::with_capacity(64),
            demand: vec![Demand::default(); n],
            rbs: vec![0; n],
            bits: vec![0; n],
            counters: CellCounters::default(),
        })
    }

    /// Queues `p` for `device` at `now`, or says why not: a limit would be exceeded (tail
    /// drop, counted as the device's drop), or PIE dropped it (counted by the AQM). Under
    /// FQ-CoDel the limit drops the fattest flow's head instead ([`Cell::take_evicted`]).
    /// Panics if `device` is out of range.
    pub fn enqueue(&mut self, now: Nanos, device: usize, p: Pkt) -> Result<(), Refused> {
        self.advance(now);
        let d = &mut self.devices[device];
        let c = &mut d.counters;
        c.packets_in += 1;
        c.bytes_in += p.len as u64;
        let was_empty = d.q.is_empty();
        match d.q.enqueue(now, p) {
            Ok(_) => {}
            Err(r) => {
                if let Refused::Full(p) = r {
                    c.dropped_packets += 1;
                    c.dropped_bytes += p.len as u64;
                }
                return Err(r);
            }
        }
        if d.q.has_dropped() {
            let mut evicted = Vec::new();
            d.q.take_evicted(&mut evicted);
            for p in evicted {
                c.dropped_packets += 1;
                c.dropped_bytes += p.len as u64;
                self.evicted.0 += 1;
                self.evicted.1 += p.len as u64;
                self.lost.push(p);
            }
        }
        c.queue_packets = d.q.packets() as u64;
        c.queue_bytes = d.q.bytes();
        if was_empty {
            if !self.busy() {
                // The cell wakes up: the first TTI that starts at or after `now`.
                let first = now.div_ceil(self.tti);
                self.counters.idle_ttis += first.saturating_sub(self.next_tti);
                self.next_tti = self.next_tti.max(first);
            }
            self.backlogged += 1;
        }
        Ok(())
    }

    /// The packets (and bytes) FQ-CoDel's limit dropped from the devices' queues since the
    /// last call: queue drops of packets the queue had taken.
    pub fn take_evicted(&mut self) -> (u64, u64) {
        std::mem::take(&mut self.evicted)
    }

    /// What `device`'s AQM dropped and marked (`None` for tail drop alone).
    pub fn aqm_counters(&self, device: usize) -> Option<AqmCounters> {
        self.devices[device].q.aqm_counters()
    }

    /// How long each of `device`'s packets waited before its service started, ns.
    pub fn sojourn(&self, device: usize) -> &Histogram {
        self.devices[device].q.sojourn()
    }

    /// The end of the next TTI to run while any queue holds data (or the instant of a
    /// packet served but not yet polled); `None` when idle.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.ready.front().map(|r| r.0).or_else(|| {
            self.busy()
                .then(|| self.next_tti.saturating_add(1).saturating_mul(self.tti))
        })
    }

    /// Whether TTIs must run: data queued, or a HARQ block waiting to be sent again.
    fn busy(&self) -> bool {
        self.backlogged > 0 || self.harq.as_ref().is_some_and(|h| !h.is_empty())
    }

    /// Hands the packets HARQ lost to `free` (the cell never frees a buffer).
    pub fn reclaim(&mut self, free: &mut impl FnMut(Pkt)) {
        for p in self.lost.drain(..) {
            free(p);
        }
    }

    /// Runs every TTI the clock has passed and emits, in order, every packet served by
    /// `now`: `out(instant, device, packet)`, the instant the end of the TTI that carried
    /// its last byte.
    pub fn poll(&mut self, now: Nanos, out: &mut impl FnMut(Nanos, usize, Pkt)) {
        self.advance(now);
        while let Some(&(t, d, p)) = self.ready.front().filter(|r| r.0 <= now) {
            self.ready.pop_front();
            out(t, d, p);
        }
    }

    /// `device`'s queue limit in bytes (a packet limit at `mtu` bytes a packet).
    pub fn queue_limit_bytes(&self, device: usize, mtu: u64) -> Option<u64> {
        self.devices[device].q.limit_bytes(mtu)
    }

    /// Takes every packet queued for `device` at `now` (a head partly sent is taken
    /// whole); blocks HARQ holds stay in the air.
    pub fn take_queue(&mut self, now: Nanos, device: usize) -> Vec<Pkt> {
        self.advance(now);
        let d = &mut self.devices[device];
        if d.q.is_empty() {
            return Vec::new();
        }
        self.backlogged -= 1;
        d.head_sent_bits = 0;
        d.in_service = false;
        d.counters.queue_bytes = 0;
        d.counters.queue_packets = 0;
        d.q.take_where(|_| true)
    }

    pub fn counters(&self, device: usize) -> &DeviceCounters {
        &self.devices[device].counters
    }

    pub fn cell_counters(&self) -> &CellCounters {
        &self.counters
    }

    pub fn n_devices(&self) -> usize {
        self.devices.len()
    }

    /// Resource blocks per TTI.
    pub fn n_rb(&self) -> u32 {
        self.n_rb
    }

    /// The bits `device` would get with all RBs at its CQI of the last TTI run.
    pub fn capacity_bits(&self, device: usize) -> u64 {
        let last = self.next_tti.saturating_sub(1);
        self.phy
            .tb_bits(self.devices[device].counters.cqi, self.n_rb, last)
    }

    /// The radio (LTE or NR).
    pub fn phy(&self) -> &Phy {
        &self.phy
    }

    /// TTI (slot) length.
    pub fn tti(&self) -> Nanos {
        self.tti
    }

    /// PF: `device`'s average throughput in bits per TTI as of the last TTI run.
    pub fn average_bits(&self, device: usize) -> f64 {
        self.scheduler.average_bits(device)
    }

    /// Runs the TTIs that start before `now` while data is queued.
    fn advance(&mut self, now: Nanos) {
        while self.busy() && self.next_tti.saturating_mul(self.tti) < now {
            self.run_tti(self.next_tti);
            self.next_tti += 1;
        }
    }

    fn run_tti(&mut self, n: u64) {
        self.scheduler.skip(n - self.sched_tti);
        let start = n.saturating_mul(self.tti);
        let end = (n + 1).saturating_mul(self.tti);
        let phy = &self.phy;
        for (d, dev) in self.devices.iter_mut().enumerate() {
            dev.fading.advance_to(n);
            let mut sinr = dev.mean_sinr * dev.fading.power();
            if let Some(b) = dev.blockage.as_mut() {
                if b.blocked_at(start) {
                    sinr *= b.factor();
                    dev.counters.blocked_ttis += 1;
                }
            }
            let cqi = phy.cqi(sinr);
            dev.counters.cqi = cqi;
            let need_bits = (dev.counters.queue_bytes * 8).saturating_sub(dev.head_sent_bits);
            dev.need_bits = need_bits;
            self.demand[d] = Demand {
                need_rb: phy.rbs_needed(cqi, need_bits, n).unwrap_or(0),
                bits_per_rb: phy.bits_per_rb(cqi, n),
            };
        }
        let free = self.retransmit(n, end);
        self.scheduler
            .allocate_within(free, &self.demand, &mut self.rbs);
        let idle = free.saturating_sub(self.rbs.iter().sum());
        for (d, dev) in self.devices.iter_mut().enumerate() {
            let c = &mut dev.counters;
            let bits = self.phy.tb_bits(c.cqi, self.rbs[d], n);
            self.bits[d] = bits;
            c.capacity_bits += bits;
            c.rbs += self.rbs[d] as u64;
            if dev.need_bits > 0 {
                c.busy_ttis += 1;
                c.busy_capacity_bits += if idle > 0 {
                    self.phy.tb_bits(c.cqi, self.rbs[d] + idle, n)
                } else {
                    bits
                };
            }
            // Whether this TTI's block fails: its packets then wait for the retransmission.
            let failed = bits > 0 && self.harq.as_mut().is_some_and(|h| h.fails());
            let mut held = match (&mut self.harq, failed) {
                (Some(h), true) => {
                    c.harq_failed += 1;
                    Some(h.list())
                }
                _ => None,
            };
            // Serve the head, segment by segment; a head whose service starts in this TTI
            // meets the AQM at the TTI's start.
            let mut credit = bits;
            while credit > 0 || dev.in_service {
                let Some((mut p, _)) = dev.q.head() else {
                    if dev.q.refill(start) {
                        continue; // FQ-CoDel chose the next packet
                    }
                    break;
                };
                if !dev.in_service {
                    match dev.q.start(start) {
                        Some(h) => p = h,
                        None => break, // CoDel dropped every packet queued
                    }
                    dev.in_service = true;
                }
                let rest = p.len as u64 * 8 - dev.head_sent_bits;
                if credit < rest {
                    dev.head_sent_bits += credit;
                    break;
                }
                credit -= rest;
                dev.head_sent_bits = 0;
                dev.in_service = false;
                dev.q.pop();
                match held.as_mut() {
                    Some(list) => list.push(p),
                    None => {
                        c.packets_out += 1;
                        c.bytes_out += p.len as u64;
                        self.ready.push_back((end, d, p));
                    }
                }
            }
            if dev.q.has_dropped() {
                dev.q.take_dropped(&mut self.lost); // counted by the AQM
            }
            c.queue_packets = dev.q.packets() as u64;
            c.queue_bytes = dev.q.bytes();
            if dev.need_bits > 0 && dev.q.is_empty() {
                self.backlogged -= 1;
            }
            if let (Some(h), Some(pkts)) = (self.harq.as_mut(), held) {
                let block = Pending {
                    due: 0,
                    device: d,
                    prbs: self.rbs[d],
                    tx: 1,
                    rlc_retx: 0,
                    pkts,
                };
                if let Failed::Lost(pkts) = h.failed(n, block) {
                    // One transmission allowed and RLC UM: the block is lost.
                    lose(c, &mut self.lost, &pkts);
                    h.recycle(pkts);
                }
            }
        }
        self.scheduler.update(&self.bits);
        self.sched_tti = n + 1;
        self.counters.ttis += 1;
    }

    /// Sends the HARQ blocks due in TTI `n` (ending at `end`) first, each on the RBs it had;
    /// returns the RBs left for new data. A block that finds no room (or an uplink slot)
    /// waits for the next TTI.
    fn retransmit(&mut self, n: u64, end: Nanos) -> u32 {
        let Some(h) = self.harq.as_mut().filter(|h| !h.is_empty()) else {
            return self.n_rb;
        };
        let mut free = self.n_rb;
        h.take_due(n, &mut self.due);
        for mut block in self.due.drain(..) {
            if !self.phy.has_downlink(n) || block.prbs > free {
                h.defer(n, block);
                continue;
            }
            free -= block.prbs;
            let c = &mut self.devices[block.device].counters;
            if block.tx == 0 {
                c.rlc_retx += 1;
                c.rlc_retx_packets += block.pkts.len() as u64;
            } else {
                c.harq_retx += 1;
            }
            block.tx += 1;
            c.rbs += block.prbs as u64;
            if h.fails() {
                c.harq_failed += 1;
                if let Failed::Lost(pkts) = h.failed(n, block) {
                    lose(c, &mut self.lost, &pkts);
                    h.recycle(pkts);
                }
            } else {
                for &p in &block.pkts {
                    c.packets_out += 1;
                    c.bytes_out += p.len as u64;
                    self.ready.push_back((end, block.device, p));
                }
                h.recycle(block.pkts);
            }
        }
        free
    }
}

/// Counts `pkts` lost by HARQ and keeps them for [`Cell::reclaim`].
fn lose(c: &mut DeviceCounters, lost: &mut Vec<Pkt>, pkts: &[Pkt]) {
    for &p in pkts {
        c.harq_lost_packets += 1;
        c.harq_lost_bytes += p.len as u64;
        lost.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::packet::NOT_ECT;
    use crate::base::time::NS_PER_S;

    const MS: Nanos = NS_PER_MS;

    /// An emitted packet: (instant, device, packet).
    type Out = (Nanos, usize, Pkt);

    fn pkt(id: u32, len: u32) -> Pkt {
        Pkt::new(id, len, 0)
    }

    fn flat(sinr_db: f64) -> DeviceSpec {
        DeviceSpec::new(sinr_db, 0.0, FadingModel::None)
    }

    fn rayleigh(sinr_db: f64) -> DeviceSpec {
        DeviceSpec::new(sinr_db, 50.0, FadingModel::Rayleigh)
    }

    fn unlimited(mut d: DeviceSpec) -> DeviceSpec {
        d.queue_bytes = None;
        d
    }

    /// Keeps every device's queue above `bytes` for `ttis` TTIs, polling every TTI;
    /// returns the emitted packets and the per-TTI RBs of each device.
    fn saturate(cell: &mut Cell, ttis: u64) -> (Vec<Out>, Vec<Vec<u64>>) {
        let mut out = Vec::new();
        let mut rbs = Vec::new();
        let mut id = 0;
        for n in 0..ttis {
            let now = n * MS;
            for d in 0..cell.n_devices() {
                while cell.counters(d).queue_bytes < 100_000 {
                    cell.enqueue(now, d, pkt(id, 1500)).unwrap();
                    id += 1;
                }
            }
            let before: Vec<u64> = (0..cell.n_devices())
                .map(|d| cell.counters(d).rbs)
                .collect();
            cell.poll(now + MS, &mut |t, d, p| out.push((t, d, p)));
            rbs.push(
                (0..cell.n_devices())
                    .map(|d| cell.counters(d).rbs - before[d])
                    .collect(),
            );
        }
        (out, rbs)
    }

    /// What flow control reads: saturated, a device's busy capacity is its blocks; lightly
    /// loaded (each TTI empties its queue), it is what the whole cell would have carried,
    /// not the little it served.
    #[test]
    fn busy_capacity_is_what_the_device_could_have_had() {
        let sinr = amc::sinr_threshold_db(15) + 0.01;
        let spec = CellSpec::new(5.0, SchedulerSpec::RoundRobin, vec![unlimited(flat(sinr))]);
        let mut cell = Cell::new(&spec, 1).unwrap();
        saturate(&mut cell, 100);
        let c = cell.counters(0);
        assert_eq!((c.busy_ttis, c.busy_capacity_bits), (100, c.capacity_bits));
        assert_eq!(c.busy_capacity_bits, 100 * 16664);
        let mut cell = Cell::new(&spec, 1).unwrap();
        let mut out = Vec::new();
        // One 1500-byte packet every 4 TTIs: 100 busy TTIs of 400.
        for n in 0..400u64 {
            if n % 4 == 0 {
                cell.enqueue(n * MS, 0, pkt(n as u32, 1500)).unwrap();
            }
            cell.poll((n + 1) * MS, &mut |t, d, p| out.push((t, d, p)));
        }
        let c = cell.counters(0);
        assert_eq!(c.busy_ttis, 100);
        assert_eq!(c.bytes_out, 100 * 1500);
        assert_eq!(
            c.busy_capacity_bits,
            100 * 16664,
            "all 25 RBs, not the packet's"
        );
        assert!(c.capacity_bits < 100 * 13_000);
    }

    #[test]
    fn taking_a_queue_empties_it_and_the_cell_idles() {
        let spec = CellSpec::new(5.0, SchedulerSpec::RoundRobin, vec![unlimited(flat(20.0))]);
        let mut cell = Cell::new(&spec, 1).unwrap();
        for i in 0..100 {
            cell.enqueue(0, 0, pkt(i, 1500)).unwrap();
        }
        let mut out = Vec::new();
        cell.poll(2 * MS, &mut |t, d, p| out.push((t, d, p)));
        let left = cell.counters(0).queue_packets;
        let taken = cell.take_queue(2 * MS, 0);
        assert_eq!(taken.len() as u64, left);
        assert_eq!(taken[0].id as usize, out.len(), "the rest, in order");
        let c = cell.counters(0);
        assert_eq!((c.queue_packets, c.queue_bytes), (0, 0));
        assert_eq!(cell.next_deadline(), None, "nothing left to serve");
        assert!(cell.take_queue(3 * MS, 0).is_empty());
        cell.enqueue(5 * MS, 0, pkt(999, 1500)).unwrap();
        cell.poll(20 * MS, &mut |t, d, p| out.push((t, d, p)));
        assert_eq!(out.last().unwrap().2.id, 999);
    }

    #[test]
    fn exact_bits_per_tti_without_fading() {
        // (CQI, expected bits per TTI at 25 RBs: floor(25·Qm·rate·120/1024)).
        for (cqi, want) in [(1u8, 457u64), (7, 4429), (10, 8191), (15, 16664)] {
            let sinr = amc::sinr_threshold_db(cqi) + 0.01;
            let spec = CellSpec::new(5.0, SchedulerSpec::RoundRobin, vec![unlimited(flat(sinr))]);
            let mut cell = Cell::new(&spec, 1).unwrap();
            let (out, _) = saturate(&mut cell, 200);
            let c = cell.counters(0);
            assert_eq!(c.cqi, cqi);
            assert_eq!(c.capacity_bits, 200 * want, "CQI {cqi}");
            assert_eq!(c.rbs, 200 * 25);
            assert_eq!(cell.capacity_bits(0), want);
            // What left is what the capacity covered, to within one packet.
            let sent = out.len() as u64 * 1500 * 8;
            assert!(sent <= 200 * want && 200 * want - sent < 1500 * 8);
            assert_eq!(cell.cell_counters().ttis, 200);
        }
    }

    #[test]
    fn a_big_packet_leaves_in_the_right_tti() {
        // CQI 7 at 25 RBs: 4429 bits per TTI. A 1500-byte packet (12000 bits) arriving at
        // 0.3 ms is served in TTIs 1, 2, 3 (8858 < 12000 <= 13287) and leaves at 4 ms; the
        // 100-byte packet behind it fits in the rest of TTI 3 (3942 bits need 23 RBs).
        let sinr = amc::sinr_threshold_db(7) + 0.5;
        let spec = CellSpec::new(5.0, SchedulerSpec::RoundRobin, vec![flat(sinr)]);
        let mut cell = Cell::new(&spec, 1).unwrap();
        assert_eq!(cell.next_deadline(), None);
        cell.enqueue(300_000, 0, pkt(0, 1500)).unwrap();
        cell.enqueue(300_000, 0, pkt(1, 100)).unwrap();
        assert_eq!(cell.next_deadline(), Some(2 * MS), "the end of TTI 1");
        let mut out = Vec::new();
        while let Some(t) = cell.next_deadline() {
            cell.poll(t, &mut |t, d, p| out.push((t, d, p.id)));
        }
        assert_eq!(out, [(4 * MS, 0, 0), (4 * MS, 0, 1)]);
        let c = cell.counters(0);
        assert_eq!((c.rbs, c.capacity_bits), (25 + 25 + 23, 4429 * 2 + 4075));
        // A packet arriving exactly on a boundary makes that TTI: TTI 10, out at 11 ms.
        cell.enqueue(10 * MS, 0, pkt(2, 100)).unwrap();
        cell.poll(NS_PER_S, &mut |t, d, p| out.push((t, d, p.id)));
        assert_eq!(out[2], (11 * MS, 0, 2));
        assert_eq!(cell.next_deadline(), None);
        let cc = cell.cell_counters();
        assert_eq!((cc.ttis, cc.idle_ttis), (4, 7));
    }

    #[test]
    fn round_robin_halves_between_equal_devices() {
        let spec = CellSpec::new(
            5.0,
            SchedulerSpec::RoundRobin,
            vec![unlimited(flat(12.0)), unlimited(flat(12.0))],
        );
        let mut cell = Cell::new(&spec, 1).unwrap();
        let (_, rbs) = saturate(&mut cell, 1000);
        for r in &rbs {
            assert_eq!(r[0] + r[1], 25);
            assert!(r[0].abs_diff(r[1]) <= 1, "{r:?}");
        }
        let (a, b) = (cell.counters(0), cell.counters(1));
        assert_eq!(a.rbs, b.rbs);
        assert_eq!(a.capacity_bits, b.capacity_bits);
    }

    /// RB (time) shares and bits of two saturated devices under PF over `ttis` TTIs.
    fn pf_shares(devices: Vec<DeviceSpec>, ttis: u64) -> ([f64; 2], [u64; 2]) {
        let spec = CellSpec::new(10.0, SchedulerSpec::proportional_fair(), devices);
        let mut cell = Cell::new(&spec, 5).unwrap();
        saturate(&mut cell, ttis);
        let total = (ttis * 50) as f64;
        let (a, b) = (cell.counters(0), cell.counters(1));
        (
            [a.rbs as f64 / total, b.rbs as f64 / total],
            [a.capacity_bits, b.capacity_bits],
        )
    }

    #[test]
    fn proportional_fair_shares_time_equally() {
        // Equal devices: about half each, in RBs and in bits.
        let (share, bits) = pf_shares(
            vec![unlimited(rayleigh(10.0)), unlimited(rayleigh(10.0))],
            20_000,
        );
        assert!((share[0] - 0.5).abs() < 0.03, "{share:?}");
        // Unused only when both are in a fade below CQI 1 (about 6 % of the time each).
        assert!(share[0] + share[1] > 0.99, "{share:?}");
        let r = bits[0] as f64 / bits[1] as f64;
        assert!((r - 1.0).abs() < 0.1, "bits {bits:?}");
        // Unequal mean SINRs: about equal time, very unequal bits. The weaker device gets a
        // little less than half (seed 5: 0.475 at 12 vs 18 dB, 0.425 at 5 vs 20 dB): it is
        // out of range (CQI 0) more often (4 % and 18 % of TTIs), when the other gets all.
        let (share, bits) = pf_shares(
            vec![unlimited(rayleigh(12.0)), unlimited(rayleigh(18.0))],
            20_000,
        );
        assert!((share[0] - 0.5).abs() < 0.05, "{share:?}");
        assert!(bits[1] as f64 > 1.5 * bits[0] as f64, "bits {bits:?}");
        let (share, bits) = pf_shares(
            vec![unlimited(rayleigh(5.0)), unlimited(rayleigh(20.0))],
            20_000,
        );
        assert!((share[0] - 0.5).abs() < 0.1, "{share:?}");
        assert!(bits[1] > 5 * bits[0], "bits {bits:?}");
        // Without fading too (the devices alternate).
        let (share, _) = pf_shares(vec![unlimited(flat(5.0)), unlimited(flat(20.0))], 2_000);
        assert!((share[0] - 0.5).abs() < 0.02, "{share:?}");
    }

    #[test]
    fn empty_queues_get_nothing_and_leftovers_go_to_others() {
        for sched in [
            SchedulerSpec::RoundRobin,
            SchedulerSpec::proportional_fair(),
        ] {
            let sinr = amc::sinr_threshold_db(7) + 0.5; // 181440/1024 = 177.2 bits per RB
            let spec = CellSpec::new(
                5.0,
                sched,
                vec![flat(sinr), unlimited(flat(sinr)), flat(sinr)],
            );
            let mut cell = Cell::new(&spec, 1).unwrap();
            // Device 0 needs 100 bytes: 800 bits = 5 RBs (PF: two RBGs and half of the
            // third, whose other RB goes to device 1); device 2 has nothing.
            cell.enqueue(0, 0, pkt(1000, 100)).unwrap();
            for i in 0..100 {
                cell.enqueue(0, 1, pkt(i, 1500)).unwrap();
            }
            let mut out = Vec::new();
            cell.poll(MS, &mut |t, d, p| out.push((t, d, p.id)));
            let rbs: Vec<u64> = (0..3).map(|d| cell.counters(d).rbs).collect();
            assert_eq!(rbs, [5, 20, 0], "{sched:?}");
            assert_eq!(out[0], (MS, 0, 1000));
            assert_eq!(cell.counters(2).capacity_bits, 0);
        }
    }

    #[test]
    fn queue_limits_drop_at_the_tail() {
        let mut d = flat(10.0);
        d.queue_bytes = Some(3000);
        let spec = CellSpec::new(1.4, SchedulerSpec::RoundRobin, vec![d]);
        let mut cell = Cell::new(&spec, 1).unwrap();
        cell.enqueue(0, 0, pkt(0, 1500)).unwrap();
        cell.enqueue(0, 0, pkt(1, 1000)).unwrap();
        assert_eq!(
            cell.enqueue(0, 0, pkt(2, 501)),
            Err(Refused::Full(pkt(2, 501)))
        );
        cell.enqueue(0, 0, pkt(3, 500)).unwrap();
        let c = cell.counters(0);
        assert_eq!(
            (
                c.queue_bytes,
                c.packets_in,
                c.dropped_packets,
                c.dropped_bytes
            ),
            (3000, 4, 1, 501)
        );
        // Once the head has left, there is room again (no poll needed in between).
        let mut out = Vec::new();
        cell.poll(0, &mut |t, d, p| out.push((t, d, p.id)));
        assert!(out.is_empty());
        cell.enqueue(NS_PER_S, 0, pkt(4, 1500)).unwrap();
        cell.poll(NS_PER_S, &mut |t, d, p| out.push((t, d, p.id)));
        assert_eq!(out.iter().map(|o| o.2).collect::<Vec<_>>(), [0, 1, 3]);
        // A packet limit, too.
        let mut d = flat(10.0);
        d.queue_packets = Some(2);
        let spec = CellSpec::new(1.4, SchedulerSpec::RoundRobin, vec![d]);
        let mut cell = Cell::new(&spec, 1).unwrap();
        cell.enqueue(0, 0, pkt(0, 10)).unwrap();
        cell.enqueue(0, 0, pkt(1, 10)).unwrap();
        assert!(cell.enqueue(0, 0, pkt(2, 10)).is_err());
    }

    /// One device at a flat 10 dB in 1.4 MHz, its queue 512 kB under `aqm`, offered
    /// 1500-byte packets at `load` times what it serves (unresponsive) for `ttis` TTIs:
    /// the packets out, what the AQM dropped and the p99 sojourn, ms.
    fn overload(aqm: Option<AqmSpec>, ecn: u8, load: f64, ttis: u64) -> (u64, u64, f64) {
        let mut d = flat(10.0);
        d.aqm = aqm;
        let spec = CellSpec::new(1.4, SchedulerSpec::RoundRobin, vec![d]);
        let mut cell = Cell::new(&spec, 1).unwrap();
        let phy = cell.phy();
        let bits = phy.tb_bits(phy.cqi(db_to_linear(10.0)), cell.n_rb(), 0);
        let per_tti = load * bits as f64 / (1500.0 * 8.0);
        let (mut id, mut credit) = (0, 0.0);
        for n in 0..ttis {
            credit += per_tti;
            while credit >= 1.0 {
                let mut p = pkt(id, 1500);
                p.ecn = ecn;
                let _ = cell.enqueue(n * MS, 0, p);
                id += 1;
                credit -= 1.0;
            }
            cell.poll((n + 1) * MS, &mut |_, _, _| {});
        }
        let mut dropped = 0;
        cell.reclaim(&mut |_| dropped += 1);
        let aqm_dropped = cell.aqm_counters(0).map_or(0, |a| a.dropped_packets);
        assert_eq!(dropped, aqm_dropped, "every AQM drop's buffer handed back");
        let p99 = cell.sojourn(0).quantile(0.99) as f64 / 1e6;
        (cell.counters(0).packets_out, aqm_dropped, p99)
    }

    fn codel() -> AqmSpec {
        AqmSpec::Codel {
            target: 5 * MS,
            interval: 100 * MS,
            ecn: true,
        }
    }

    #[test]
    fn codel_on_a_device_queue_holds_its_sojourn_where_tail_drop_lets_it_fill() {
        // About 1.06 Mbit/s served (a 1500-byte packet every 11.3 ms), 25 % more offered:
        // tail drop fills the 512 kB queue (341 packets, 3.8 s); CoDel holds the p99 wait
        // under twice its 5 ms target plus an interval (it measured 48 ms: a packet's own
        // service time is twice the target).
        let (out_td, _, p99_td) = overload(None, NOT_ECT, 1.25, 20_000);
        let (out_codel, dropped, p99_codel) = overload(Some(codel()), NOT_ECT, 1.25, 20_000);
        assert!(p99_td > 3000.0, "tail drop p99 {p99_td} ms");
        assert!(p99_codel < 2.0 * 5.0 + 100.0, "CoDel p99 {p99_codel} ms");
        assert!(dropped > 0);
        // the cell stays busy: CoDel costs it (almost) nothing
        assert!(
            out_codel as f64 > 0.97 * out_td as f64,
            "{out_codel} against {out_td}"
        );
    }

    #[test]
    fn codel_on_a_device_queue_marks_ecn_capable_packets_instead() {
        let (_, dropped, p99) = overload(Some(codel()), crate::base::packet::ECT0, 1.25, 20_000);
        assert_eq!(dropped, 0);
        // Marks do not slow an unresponsive sender: the queue still fills, now with
        // marked packets (a responsive one would slow down).
        assert!(p99 > 3000.0, "{p99}");
    }

    #[test]
    fn a_packets_sojourn_ends_at_the_first_tti_that_gives_it_bits() {
        let spec = CellSpec::new(1.4, SchedulerSpec::RoundRobin, vec![unlimited(flat(10.0))]);
        let mut cell = Cell::new(&spec, 1).unwrap();
        cell.enqueue(300_000, 0, pkt(0, 100)).unwrap(); // first TTI: 1 ms
        cell.poll(3 * MS, &mut |_, _, _| {});
        let h = cell.sojourn(0);
        assert_eq!((h.count(), h.max()), (1, 700_000));
        assert!(cell.aqm_counters(0).is_none());
    }

    #[test]
    fn fq_codel_on_a_device_queue_takes_its_queue_whole_and_limits_in_bytes() {
        let mut d = flat(10.0);
        d.queue_bytes = Some(6000);
        d.aqm = Some(AqmSpec::FqCodel {
            target: 5 * MS,
            interval: 100 * MS,
            ecn: true,
        });
        let spec = CellSpec::new(1.4, SchedulerSpec::RoundRobin, vec![d]);
        let mut cell = Cell::new(&spec, 1).unwrap();
        for i in 0..6 {
            let p = Pkt {
                flow: 1,
                ..pkt(i, 1500)
            };
            assert!(
                cell.enqueue(0, 0, p).is_ok(),
                "taken; the limit evicts from the flow"
            );
        }
        // 6,000 bytes waiting is the limit: the fifth and sixth evict the oldest
        assert_eq!(cell.take_evicted(), (2, 3000));
        assert_eq!(cell.counters(0).dropped_packets, 2);
        assert_eq!(cell.counters(0).queue_bytes, 6000);
        let taken: Vec<u32> = cell.take_queue(0, 0).iter().map(|p| p.id).collect();
        assert_eq!(taken, vec![2, 3, 4, 5]);
        assert_eq!(cell.counters(0).queue_packets, 0);
        assert!(cell.next_deadline().is_none(), "the cell idles");
    }

    /// A reproducible workload: bursts of mixed sizes to three devices, with idle gaps.
    fn workload() -> Vec<Out> {
        let mut x: u64 = 4242;
        let mut rnd = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        let mut t = 0;
        (0..40_000)
            .map(|i| {
                t += match rnd() % 1000 {
                    0..=1 => rnd() % (2 * NS_PER_S), // the cell drains and idles
                    2..=21 => rnd() % (30 * MS),
                    _ => rnd() % 200_000, // bursts far above capacity
                };
                if i % 7 == 0 {
                    t = t.next_multiple_of(MS); // on a TTI boundary: makes that TTI
                }
                let len = 40 + (rnd() % 1461) as u32;
                (t, (rnd() % 3) as usize, Pkt::new(i, len, t))
            })
            .collect()
    }

    fn mixed_cell(sched: SchedulerSpec) -> CellSpec {
        let mut d0 = rayleigh(3.0);
        d0.queue_bytes = Some(60_000);
        let mut d2 = DeviceSpec::new(15.0, 300.0, FadingModel::Rayleigh);
        d2.queue_packets = Some(50);
        let mut d1 = flat(8.0);
        d1.queue_bytes = Some(30_000);
        CellSpec::new(3.0, sched, vec![d0, d1, d2])
    }

    /// Replays the workload, polling at every deadline (mode 0), every 3.7 ms (mode 1)
    /// or only at the end (mode 2).
    fn replay(spec: &CellSpec, seed: u64, mode: u8) -> (Vec<Out>, Vec<DeviceCounters>) {
        let mut cell = Cell::new(spec, seed).unwrap();
        let mut out = Vec::new();
        let mut last_poll = 0;
        let mut drops = 0;
        for (t, d, p) in workload() {
            match mode {
                0 => {
                    while let Some(dl) = cell.next_deadline().filter(|&dl| dl <= t) {
                        cell.poll(dl, &mut |t, d, p| out.push((t, d, p)));
                    }
                }
                1 => {
                    while last_poll + 3_700_000 <= t {
                        last_poll += 3_700_000;
                        cell.poll(last_poll, &mut |t, d, p| out.push((t, d, p)));
                    }
                }
                _ => {}
            }
            if cell.enqueue(t, d, p).is_err() {
                drops += 1;
            }
        }
        cell.poll(Nanos::MAX / 2, &mut |t, d, p| out.push((t, d, p)));
        assert!(drops > 100, "the workload overloads the queues: {drops}");
        assert!(
            cell.cell_counters().idle_ttis > 1000,
            "and lets the cell idle"
        );
        assert_eq!(cell.next_deadline(), None);
        let counters = (0..3).map(|d| cell.counters(d).clone()).collect();
        (out, counters)
    }

    #[test]
    fn output_does_not_depend_on_polling() {
        for sched in [
            SchedulerSpec::RoundRobin,
            SchedulerSpec::proportional_fair(),
        ] {
            let spec = mixed_cell(sched);
            let (out, c) = replay(&spec, 11, 0);
            // Sanity: everything not dropped left, in order per device, never early.
            for (d, dc) in c.iter().enumerate() {
                assert_eq!(dc.packets_in, dc.packets_out + dc.dropped_packets);
                assert_eq!(dc.queue_bytes, 0);
                let ids: Vec<u32> = out.iter().filter(|o| o.1 == d).map(|o| o.2.id).collect();
                assert!(ids.windows(2).all(|w| w[0] < w[1]));
            }
            assert!(out.windows(2).all(|w| w[0].0 <= w[1].0));
            assert!(out.iter().all(|o| o.0 > o.2.born && o.0 % MS == 0));
            for mode in [1, 2] {
                let (o, cm) = replay(&spec, 11, mode);
                assert!(o == out, "{sched:?}: mode {mode} differs");
                assert_eq!(cm, c);
            }
        }
    }

    #[test]
    fn same_seed_same_output() {
        let spec = mixed_cell(SchedulerSpec::proportional_fair());
        let a = replay(&spec, 3, 1);
        assert!(a == replay(&spec, 3, 1));
        assert!(a.0 != replay(&spec, 4, 1).0, "the seed matters");
    }

    #[test]
    fn idle_cells_cost_nothing() {
        let spec = mixed_cell(SchedulerSpec::proportional_fair());
        let mut cell = Cell::new(&spec, 1).unwrap();
        // Device 1 has no fading: its 100 bytes leave in one TTI.
        cell.enqueue(0, 1, pkt(0, 100)).unwrap();
        let mut out = Vec::new();
        cell.poll(10 * MS, &mut |t, d, p| out.push((t, d, p.id)));
        assert_eq!(cell.next_deadline(), None);
        // A year later: a handful of TTIs run, the rest are skipped in one jump.
        let year = 365 * 86_400 * NS_PER_S;
        cell.enqueue(year, 1, pkt(1, 100)).unwrap();
        assert_eq!(cell.next_deadline(), Some(year + MS));
        cell.poll(year + 10 * MS, &mut |t, d, p| out.push((t, d, p.id)));
        assert_eq!(out.len(), 2);
        let cc = cell.cell_counters();
        assert!(cc.ttis < 50, "{cc:?}");
        assert!(cc.idle_ttis > year / MS - 50, "{cc:?}");
        assert_eq!(cc.ttis + cc.idle_ttis, cell.next_tti);
    }

    #[test]
    fn capacity_series_follows_the_channel() {
        let d = rayleigh(10.0);
        let s = capacity_series(20.0, &d, MS, device_seed(9, 0), 10_000).unwrap();
        assert_eq!(s.len(), 10_000);
        assert_eq!(
            s,
            capacity_series(20.0, &d, MS, device_seed(9, 0), 10_000).unwrap()
        );
        assert!(s.iter().all(|&b| b <= amc::tb_bits(15, 100)));
        assert!(s.contains(&0), "deep fades reach CQI 0");
        // The mean capacity is near that at the mean SINR (Jensen: somewhat below).
        let mean = s.iter().sum::<u64>() as f64 / s.len() as f64;
        let at_mean = amc::tb_bits(amc::cqi_from_sinr_db(10.0), 100) as f64;
        assert!(
            mean < at_mean && mean > 0.6 * at_mean,
            "{mean} vs {at_mean}"
        );
        // Without fading: constant.
        let s = capacity_series(5.0, &flat(10.0), MS, 1, 100).unwrap();
        assert!(s
            .iter()
            .all(|&b| b == amc::tb_bits(amc::cqi_from_sinr_db(10.0), 25)));
        // A busy cell's device sees the same channel as the series of its device seed.
        let spec = CellSpec::new(
            20.0,
            SchedulerSpec::RoundRobin,
            vec![unlimited(rayleigh(10.0))],
        );
        let mut cell = Cell::new(&spec, 9).unwrap();
        let mut caps = Vec::new();
        for n in 0..200u64 {
            cell.enqueue(n * MS, 0, pkt(n as u32, 1500)).unwrap();
            cell.poll(n * MS + 1, &mut |_, _, _| {});
            caps.push(cell.capacity_bits(0));
        }
        let s = capacity_series(20.0, &rayleigh(10.0), MS, device_seed(9, 0), 200).unwrap();
        assert_eq!(caps, s);
        assert!(capacity_series(7.0, &d, MS, 1, 10).is_err());
    }

    #[test]
    fn invalid_specs_are_refused() {
        let ok = CellSpec::new(5.0, SchedulerSpec::RoundRobin, vec![flat(1.0)]);
        assert!(Cell::new(&ok, 0).is_ok());
        let mut s = ok.clone();
        s.bandwidth_mhz = 4.0;
        assert!(Cell::new(&s, 0).is_err());
        let mut s = ok.clone();
        s.devices.clear();
        assert!(Cell::new(&s, 0).is_err());
        let mut s = ok.clone();
        s.devices[0].doppler_hz = -1.0;
        assert!(Cell::new(&s, 0).is_err());
        let mut s = ok.clone();
        s.scheduler = SchedulerSpec::ProportionalFair {
            tc_ttis: 0.5,
            rbg: None,
        };
        assert!(Cell::new(&s, 0).is_err());
    }
}
