//! The validated scenario the engine is built from: names resolved to indices, times in
//! nanoseconds, and the link specs ready to use.

use std::path::PathBuf;

use super::schema::{BearerMode, ScenarioFile, TopologyFile};
use crate::base::time::Nanos;
use crate::cell::CellSpec;
use crate::link::{DelayDist, LinkSpec, LossModel, RateSpec};

#[derive(Debug, Clone)]
pub struct Scenario {
    pub seed: u64,
    pub topology: TopologyFile,
    pub pdcp: Pdcp,
    pub stats_interval: Nanos,
    pub stats_path: Option<PathBuf>,
    pub pcap_path: Option<PathBuf>,
    pub legs: Vec<Leg>,
    pub bearers: Vec<Bearer>,
    pub default_bearer: usize,
    /// Sorted by time.
    pub schedule: Vec<Change>,
    /// The file as parsed with defaults filled in, for `dcemu check` and run records.
    pub file: ScenarioFile,
}

#[derive(Debug, Clone)]
pub struct Pdcp {
    pub sn_bits: u8,
    pub header_bytes: u32,
    /// None: infinity.
    pub t_reordering: Option<Nanos>,
    pub reordering: bool,
    pub out_of_order: bool,
    pub initial_count: u32,
    /// Each PDCP entity's processing delay (`pdcp.processing_ms`); 0: none.
    pub processing: Nanos,
}

#[derive(Debug, Clone)]
pub struct Leg {
    pub name: String,
    /// With `cell`, only its delay and loss apply (the cell replaces the rate stage).
    pub downlink: LinkSpec,
    pub uplink: Option<LinkSpec>,
    pub cell: Option<CellLeg>,
    /// The X2/Xn hop before the leg, for split and duplicated PDUs.
    pub x2: Option<LinkSpec>,
}

/// A leg whose downlink rate stage is an LTE cell.
#[derive(Debug, Clone)]
pub struct CellLeg {
    pub spec: CellSpec,
    /// Per bearer (index into `Scenario::bearers`): its device on this cell, if the bearer
    /// uses the leg.
    pub device_of_bearer: Vec<Option<usize>>,
}

#[derive(Debug, Clone)]
pub struct Split {
    pub batch: u32,
    pub ratio: Vec<f64>,
    pub policy: SplitPolicy,
}

/// How a DC bearer places its PDUs (see docs/endc.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SplitPolicy {
    /// By the batch and ratio.
    Static,
    /// Each secondary leg gets what its reports ask for (TS 38.425), the rest the master's.
    Ddds(FlowSpec),
    /// Each PDU on the leg with the earliest expected delivery.
    DelayAware(FlowSpec),
    /// Every leg's queue, the master's included, within `target_delay`; what fits none
    /// waits unnumbered in the master's PDCP.
    DelayTarget(FlowSpec, HoldSpec),
}

/// The master PDCP's hold of unnumbered SDUs (`delay-target`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HoldSpec {
    pub limit_bytes: u64,
    /// An SDU held this long is discarded (TS 38.323's discard timer).
    pub discard_after: Nanos,
}

/// The flow control of a split bearer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowSpec {
    /// A report from each secondary every `period`.
    pub period: Nanos,
    /// `ddds`: the secondary's queue target beyond its feedback loop; `delay-target`: the
    /// queue delay no leg may exceed.
    pub target_delay: Nanos,
    /// The least a secondary asks for, and its credit before its first report.
    pub min_bytes: u64,
    /// Outage fallback (`pdcp/outage.rs`): a secondary that holds PDUs and serves none for
    /// this long is in an outage, and the master sends what it sent there again on its
    /// own leg. `None`: off.
    pub outage_after: Option<Nanos>,
}

impl SplitPolicy {
    pub fn flow(&self) -> Option<&FlowSpec> {
        match self {
            SplitPolicy::Static => None,
            SplitPolicy::Ddds(f) | SplitPolicy::DelayAware(f) | SplitPolicy::DelayTarget(f, _) => {
                Some(f)
            }
        }
    }

    /// As the scenario file spells it.
    pub fn name(&self) -> &'static str {
        match self {
            SplitPolicy::Static => "static",
            SplitPolicy::Ddds(_) => "ddds",
            SplitPolicy::DelayAware(_) => "delay-aware",
            SplitPolicy::DelayTarget(..) => "delay-target",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Bearer {
    pub name: String,
    pub mode: BearerMode,
    /// Indices into `Scenario::legs`.
    pub legs: Vec<usize>,
    /// Index of the leg whose uplink carries this bearer; None: uplink not emulated
    /// (packets pass straight through).
    pub uplink_leg: Option<usize>,
    pub rules: Vec<Rule>,
    pub split: Split,
}

/// A classifier rule; None fields match anything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rule {
    pub protocol: Option<u8>,
    pub server_ports: Option<(u16, u16)>,
    pub client_ports: Option<(u16, u16)>,
    pub server_net: Option<(u32, u32)>, // (address, mask)
    pub client_net: Option<(u32, u32)>,
}

#[derive(Debug, Clone)]
pub struct Change {
    pub at: Nanos,
    pub what: ChangeKind,
}

#[derive(Debug, Clone)]
pub enum ChangeKind {
    Rate {
        leg: usize,
        uplink: bool,
        rate: RateSpec,
    },
    Delay {
        leg: usize,
        uplink: bool,
        delay: DelayDist,
    },
    Loss {
        leg: usize,
        uplink: bool,
        loss: LossModel,
    },
    Split {
        bearer: Option<usize>,
        batch: Option<u32>,
        ratio: Option<Vec<f64>>,
    },
    Secondary {
        leg: usize,
        event: SnEvent,
    },
}

/// A secondary node event (docs/endc.md): `forward` keeps the split bearers' packets the
/// secondary held (to the master's leg on a release, to the leg again after a change).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnEvent {
    Release { forward: bool },
    Add,
    Change { interruption: Nanos, forward: bool },
}
