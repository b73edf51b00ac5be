//! What the engine keeps per leg and per bearer: the engine moves packets through them
//! (`engine.rs`) and the stats records read them (`record.rs`).

use super::cell_leg::Downlink;
use super::flow_control::FlowControl;
use super::secondary::SecondaryNode;
use crate::base::packet::Pkt;
use crate::base::time::Nanos;
use crate::config::BearerMode;
use crate::link::LinkDirection;
use crate::pdcp::hold::SduHold;
use crate::pdcp::{PdcpRx, PdcpTx};

pub(super) struct LegState {
    pub(super) name: String,
    pub(super) down: Downlink,
    pub(super) up: Option<LinkDirection>,
    /// The X2/Xn hop split and duplicated PDUs cross before `down`, and its mean delay.
    pub(super) x2: Option<LinkDirection>,
    pub(super) x2_hop: Nanos,
    /// The secondary node on this leg, once an event happened to it.
    pub(super) sn: Option<SecondaryNode>,
    pub(super) prev_x2_bytes: u64,
    pub(super) prev_down_bytes: u64,
    pub(super) prev_up_bytes: u64,
    /// Cell legs: per device, bytes out of the cell at the last record; its bearer's name.
    pub(super) prev_device_bytes: Vec<u64>,
    pub(super) device_bearers: Vec<String>,
}

pub(super) struct BearerState {
    pub(super) name: String,
    pub(super) mode: BearerMode,
    pub(super) legs: Vec<usize>,
    pub(super) tx: PdcpTx,
    /// A flow-controlled split's reports and policy (None: static).
    pub(super) flow: Option<FlowControl>,
    /// `delay-target`: SDUs waiting unnumbered until a leg has room, and when room is next
    /// predicted on a secondary (`FlowControl::next_room`).
    pub(super) hold: Option<SduHold<Pkt>>,
    pub(super) hold_wake: Option<Nanos>,
    /// None: reordering off, PDUs bypass the receiver.
    pub(super) rx: Option<PdcpRx<Pkt>>,
    pub(super) sn_mask: u32,
    pub(super) uplink_leg: Option<usize>,
    pub(super) delivered_bytes: u64,
    pub(super) delivered_packets: u64,
    pub(super) prev_delivered_bytes: u64,
    pub(super) uplink_bytes: u64,
    pub(super) uplink_packets: u64,
}
