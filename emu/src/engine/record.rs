//! One JSON line per stats interval, and a final summary with the same shape.
//!
//! Counters are cumulative since start (so a lost line loses nothing); gauges (queue
//! depths, buffer occupancy) are instantaneous; `*_mbps` fields are rates over the
//! interval that ends at `t_ms`.

use serde::Serialize;

use super::cell_leg::{CellDirection, Downlink};
use super::delivered::{FlowEcn, FlowEcnRecord};
use super::flow_control::FlowRecord;
use super::secondary::SnRecord;
use super::state::{BearerState, LegState};
use crate::base::histogram::Histogram;
use crate::base::time::{Nanos, NS_PER_MS};
use crate::base::HistSummary;
use crate::cell::DeviceCounters;
use crate::link::{LinkCounters, LinkDirection};
use crate::pdcp::hold::{HoldCounters, SduHold};
use crate::pdcp::{PdcpRx, RxCounters};
use crate::qdisc::AqmCounters;

/// The version of these records' shape, written in each: a change to any struct here
/// (a field added, renamed or removed) raises it, and the harness's typed reader
/// (`dclab/dcemu/records.py`, `STATS_VERSION`) refuses versions it does not know.
pub const STATS_VERSION: u32 = 9;

#[derive(Clone, Debug, Serialize)]
pub struct Record {
    /// "interval" or "summary".
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `STATS_VERSION`.
    pub version: u32,
    /// End of the interval, ms since dcemu started forwarding.
    pub t_ms: f64,
    /// Length of the interval.
    pub dt_ms: f64,
    pub legs: Vec<LegRecord>,
    pub bearers: Vec<BearerRecord>,
    pub engine: EngineCounters,
    /// Summary record only (version 9): per flow, the downlink packets handed to the client,
    /// those ECN-capable and those marked CE, in the order the flows first delivered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowEcnRecord>,
    /// Summary record only: flows past `delivered::MAX_FLOWS` and non-IPv4 packets together
    /// (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows_beyond: Option<FlowEcn>,
    /// Filled in by the real-time runtime (absent in virtual time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeRecord>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LegRecord {
    pub name: String,
    pub downlink: DirRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uplink: Option<DirRecord>,
    /// The downlink's LTE or NR cell, on a cell leg only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<CellRecord>,
    /// The X2/Xn hop before the leg, where it has one (version 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x2: Option<DirRecord>,
    /// The leg's secondary node, once an event (release, addition, change) happened to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secondary: Option<SnRecord>,
}

/// A cell: its TTIs and one entry per device.
#[derive(Clone, Debug, Serialize)]
pub struct CellRecord {
    /// "lte" or "nr".
    pub rat: &'static str,
    /// TTI (NR: slot) length in µs.
    pub tti_us: f64,
    pub bandwidth_mhz: f64,
    /// Resource blocks per TTI.
    pub rbs_per_tti: u32,
    /// TTIs run (some queue held data) and TTIs skipped while idle, cumulative.
    pub ttis: u64,
    pub idle_ttis: u64,
    pub devices: Vec<DeviceRecord>,
}

/// One device of a cell: counters cumulative, `queue_*` and `cqi` instantaneous.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceRecord {
    pub device: usize,
    /// The bearer the device carries.
    pub bearer: String,
    /// bytes_in, packets_in, bytes_out, packets_out (out of the cell, before loss and
    /// delay), dropped_bytes, dropped_packets (queue full), queue_bytes, queue_packets,
    /// capacity_bits and rbs (allocated by the scheduler), cqi (of the last TTI run); with
    /// HARQ or blockage, harq_failed, harq_retx, harq_lost_packets, harq_lost_bytes and
    /// blocked_ttis (each left out while 0).
    #[serde(flatten)]
    pub counters: DeviceCounters,
    /// Bytes out of the cell over the interval, Mbit/s.
    pub out_mbps: f64,
    /// What the device queue's AQM dropped and marked, cumulative (version 8; absent for
    /// tail drop alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aqm: Option<AqmCounters>,
    /// How long the device's packets waited in its queue before their service started (the
    /// first TTI that gave them bits), over the run, with buckets: in the summary record
    /// only (version 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sojourn: Option<HistSummary>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DirRecord {
    #[serde(flatten)]
    pub counters: LinkCounters,
    /// Packets and bytes waiting in the rate stage (including the one being sent).
    pub queue_packets: u32,
    pub queue_bytes: u64,
    /// Packets in the delay stage.
    pub in_flight: u32,
    /// Bytes out of the leg over the interval (PDCP header included on downlink), Mbit/s.
    pub out_mbps: f64,
    /// What the rate stage's AQM dropped and marked, cumulative (version 6; absent for
    /// tail drop alone); for a cell's downlink, its devices' queues' together (version 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aqm: Option<AqmCounters>,
    /// How long the packets that started service waited in the rate stage's queue, over
    /// the run, with buckets: in the summary record only (version 7; absent for a cell's
    /// downlink, whose queues are per device). Interval records leave it out: `queue_bytes`
    /// already traces the queue, and summarising every interval would cost a simulated
    /// run a tenth of its time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sojourn: Option<HistSummary>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BearerRecord {
    pub name: String,
    pub mode: &'static str,
    /// PDUs sent per downlink leg of the bearer, by leg name.
    pub tx_pdus: Vec<(String, u64)>,
    /// PDCP receiver counters (absent when reordering is off: PDUs bypass the receiver).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rx: Option<RxRecord>,
    pub reorder_buffer: u32,
    /// IP bytes and packets handed to the client.
    pub delivered_bytes: u64,
    pub delivered_packets: u64,
    pub delivered_mbps: f64,
    pub uplink_bytes: u64,
    pub uplink_packets: u64,
    /// A flow-controlled split's reports and credit (absent for a static split).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowRecord>,
    /// `delay-target`: the SDUs held unnumbered in the master's PDCP (version 3; absent
    /// for the other policies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold: Option<HoldRecord>,
}

/// The master PDCP's hold (`pdcp/hold.rs`): its counters, what it holds now, and how long
/// the SDUs it released had waited (cumulative, buckets in the summary only).
#[derive(Clone, Debug, Serialize)]
pub struct HoldRecord {
    #[serde(flatten)]
    pub counters: HoldCounters,
    pub held_bytes: u64,
    pub held_packets: u64,
    pub wait: HistSummary,
}

impl HoldRecord {
    pub fn of<T>(h: &SduHold<T>, with_buckets: bool) -> HoldRecord {
        let wait = h.waits().summary_us_with(with_buckets);
        HoldRecord {
            counters: h.counters().clone(),
            held_bytes: h.bytes(),
            held_packets: h.len() as u64,
            wait,
        }
    }
}

/// A PDCP receiver's counters and its reorder-wait histogram. The histogram is cumulative,
/// so the summary record's buckets hold every wait of the run; interval records give only
/// its count, mean and quantiles (the buckets made up 60 % of a stats file).
#[derive(Clone, Debug, Serialize)]
pub struct RxRecord {
    #[serde(flatten)]
    pub counters: RxCounters,
    pub wait: HistSummary,
}

/// Things the engine itself counts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EngineCounters {
    pub packets_in_down: u64,
    pub packets_in_up: u64,
    /// Arrivals dropped because every packet buffer was in use (should stay 0).
    pub dropped_no_buffer: u64,
    /// Packets delivered to the client and to the server.
    pub packets_out_down: u64,
    pub packets_out_up: u64,
    /// Uplink packets of bearers whose uplink is not emulated (forwarded at once).
    pub uplink_unshaped: u64,
    pub buffers_in_use: u64,
    /// Downlink packets dropped because their bearer had used all 2^32 PDCP COUNTs
    /// (possible with `pdcp.initial_count` near 2^32); absent while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped_count_exhausted: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Real-time runtime figures.
#[derive(Clone, Debug, Serialize)]
pub struct RuntimeRecord {
    /// Departure (the write to the TUN device starts) minus scheduled departure, for
    /// every packet written. A burst released by PDCP at one instant is written one
    /// packet after the other, so later packets of a burst wait for earlier writes.
    pub lateness: HistSummary,
    /// For each batch of writes, how late the earliest packet due was when the loop got
    /// to it: the timer's and the loop's precision.
    pub service_lateness: HistSummary,
    /// Duration of each TUN write, which runs the receiving namespace's stack inline
    /// (with --pcap, also the buffered copy into the capture).
    pub write_cost: HistSummary,
    pub tun_read_packets: u64,
    pub tun_write_packets: u64,
    pub tun_write_errors: u64,
    /// Packets read but not IPv4/IPv6 (dropped).
    pub malformed: u64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub wakeups: u64,
    /// Packets the kernel dropped before dcemu could read them (TUN queue overflow);
    /// summary only.
    pub tun_kernel_drops: u64,
    /// TUN offloads in use: "read: <what the kernel accepted>", "write: join" (empty: none).
    pub tun_offload: String,
    /// Read calls that returned a packet, and those that held a super-packet split into
    /// more than one wire packet.
    pub tun_read_calls: u64,
    pub tun_super_reads: u64,
    /// Write calls, and those that carried a run of more than one wire packet.
    pub tun_write_calls: u64,
    pub tun_joined_writes: u64,
}

// How the records are made from the engine's parts (the engine keeps the counters of the
// previous interval, from which the rates are computed).

impl Record {
    /// The record of the `dt` ns ending at `t`: each leg's and bearer's state, read and
    /// their interval counters moved on.
    pub(super) fn of(
        kind: &'static str,
        t: Nanos,
        dt: Nanos,
        legs: &mut [LegState],
        bearers: &mut [BearerState],
        engine: EngineCounters,
    ) -> Record {
        let mbps = |bytes: u64| {
            if dt == 0 {
                0.0
            } else {
                bytes as f64 * 8.0 / dt as f64 * 1e3
            }
        };
        let leg_names: Vec<String> = legs.iter().map(|l| l.name.clone()).collect();
        let summary = kind == "summary";
        Record {
            kind,
            version: STATS_VERSION,
            t_ms: t as f64 / NS_PER_MS as f64,
            dt_ms: dt as f64 / NS_PER_MS as f64,
            legs: legs
                .iter_mut()
                .map(|l| LegRecord::of(l, summary, mbps))
                .collect(),
            bearers: bearers
                .iter_mut()
                .map(|b| BearerRecord::of(b, &leg_names, summary, mbps))
                .collect(),
            engine,
            flows: Vec::new(),
            flows_beyond: None,
            runtime: None,
        }
    }
}

impl LegRecord {
    fn of(l: &mut LegState, summary: bool, mbps: impl Fn(u64) -> f64) -> LegRecord {
        let down_bytes = l.down.counters().bytes_out;
        let downlink =
            DirRecord::of_downlink(&l.down, mbps(down_bytes - l.prev_down_bytes), summary);
        l.prev_down_bytes = down_bytes;
        let uplink = l.up.as_ref().map(|u| {
            let b = u.counters().bytes_out;
            let r = DirRecord::of_link(u, mbps(b - l.prev_up_bytes), summary);
            l.prev_up_bytes = b;
            r
        });
        let x2 = l.x2.as_ref().map(|x| {
            let b = x.counters().bytes_out;
            let r = DirRecord::of_link(x, mbps(b - l.prev_x2_bytes), summary);
            l.prev_x2_bytes = b;
            r
        });
        let cell = match &l.down {
            Downlink::Link(_) => None,
            Downlink::Cell(c) => Some(CellRecord::of(
                c,
                &l.device_bearers,
                &mut l.prev_device_bytes,
                &mbps,
                summary,
            )),
        };
        LegRecord {
            name: l.name.clone(),
            downlink,
            uplink,
            cell,
            x2,
            secondary: l.sn.as_ref().map(|s| s.record()),
        }
    }
}

impl BearerRecord {
    fn of(
        b: &mut BearerState,
        leg_names: &[String],
        summary: bool,
        mbps: impl Fn(u64) -> f64,
    ) -> BearerRecord {
        let r = BearerRecord {
            name: b.name.clone(),
            mode: b.mode.as_str(),
            tx_pdus: b
                .legs
                .iter()
                .map(|&l| (leg_names[l].clone(), b.tx.counters().per_leg[l]))
                .collect(),
            rx: b.rx.as_ref().map(|rx| RxRecord::of(rx, summary)),
            reorder_buffer: b.rx.as_ref().map_or(0, |rx| rx.occupancy()),
            delivered_bytes: b.delivered_bytes,
            delivered_packets: b.delivered_packets,
            delivered_mbps: mbps(b.delivered_bytes - b.prev_delivered_bytes),
            uplink_bytes: b.uplink_bytes,
            uplink_packets: b.uplink_packets,
            flow: b.flow.as_ref().map(|f| f.record(|l| leg_names[l].clone())),
            hold: b.hold.as_ref().map(|h| HoldRecord::of(h, summary)),
        };
        b.prev_delivered_bytes = b.delivered_bytes;
        r
    }
}

impl DirRecord {
    /// A leg's downlink (a link or a cell), `out_mbps` over the interval.
    pub fn of_downlink(d: &Downlink, out_mbps: f64, summary: bool) -> DirRecord {
        DirRecord {
            counters: d.counters().clone(),
            queue_packets: d.queue_packets(),
            queue_bytes: d.queue_bytes(),
            in_flight: d.in_flight(),
            out_mbps,
            aqm: d.aqm_counters(),
            sojourn: d.sojourn().filter(|_| summary).map(Histogram::summary_us),
        }
    }

    /// A leg's uplink.
    pub fn of_link(d: &LinkDirection, out_mbps: f64, summary: bool) -> DirRecord {
        DirRecord {
            counters: d.counters().clone(),
            queue_packets: d.queue_packets(),
            queue_bytes: d.queue_bytes(),
            in_flight: d.in_flight(),
            out_mbps,
            aqm: d.aqm_counters(),
            sojourn: summary.then(|| d.sojourn().summary_us()),
        }
    }
}

impl CellRecord {
    /// A cell leg's downlink: device `d` carries bearer `bearers[d]`; `prev_bytes[d]` holds
    /// its bytes out at the previous record and is moved on; `mbps` turns bytes over the
    /// interval into Mbit/s; the devices' sojourns only in the `summary` record.
    pub fn of(
        c: &CellDirection,
        bearers: &[String],
        prev_bytes: &mut [u64],
        mbps: impl Fn(u64) -> f64,
        summary: bool,
    ) -> CellRecord {
        CellRecord {
            rat: match c.cell().phy() {
                crate::cell::Phy::Lte { .. } => "lte",
                crate::cell::Phy::Nr(_) => "nr",
            },
            tti_us: c.cell().tti() as f64 / 1e3,
            bandwidth_mhz: c.bandwidth_mhz(),
            rbs_per_tti: c.cell().n_rb(),
            ttis: c.cell_counters().ttis,
            idle_ttis: c.cell_counters().idle_ttis,
            devices: (0..bearers.len())
                .map(|d| {
                    let counters = c.device_counters(d).clone();
                    let out_mbps = mbps(counters.bytes_out - prev_bytes[d]);
                    prev_bytes[d] = counters.bytes_out;
                    DeviceRecord {
                        device: d,
                        bearer: bearers[d].clone(),
                        counters,
                        out_mbps,
                        aqm: c.cell().aqm_counters(d),
                        sojourn: summary.then(|| c.cell().sojourn(d).summary_us()),
                    }
                })
                .collect(),
        }
    }
}

impl RxRecord {
    /// A receiver's counters and wait; the histogram's buckets only `with_buckets` (the
    /// summary record's).
    pub fn of<T: Copy>(rx: &PdcpRx<T>, with_buckets: bool) -> RxRecord {
        let wait = rx.counters().wait.summary_us_with(with_buckets);
        RxRecord {
            counters: rx.counters().clone(),
            wait,
        }
    }
}
