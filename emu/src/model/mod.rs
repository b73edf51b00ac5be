//! Modelled endpoints for the simulation mode: what real QUIC and TCP senders, receivers
//! and receiving hosts do, as small sans-IO state machines. Like the rest of the core,
//! every model takes `now` and reports its next deadline; none reads a clock or a file.
//! The virtual-time driver (`crate::sim`) joins them to the unchanged engine.
//!
//! - [`rtt`]: the RTT estimator of RFC 9002 §5 (also used by the TCP model, with
//!   RFC 6298's constants where Linux differs).
//! - [`cc`]: congestion controllers behind one trait: NewReno, CUBIC, BBR.
//! - [`wire`]: how a modelled segment is written into (and read back from) the bytes of
//!   an IPv4 packet, so the engine classifies, splits, duplicates and delays it like any
//!   real packet.

pub mod cc;
pub mod host;
pub mod quic;
pub mod rtt;
pub mod tcp;
pub mod wire;

use crate::base::time::Nanos;
use wire::Segment;

/// One side of one modelled connection (a QUIC or TCP sender or receiver), as the
/// virtual-time driver sees it. After any event the driver calls `poll_transmit` until it
/// returns None, then sleeps until `next_deadline`.
pub trait Endpoint {
    /// The next segment that may leave now and the IPv4 total length of its packet.
    fn poll_transmit(&mut self, now: Nanos) -> Option<(Segment, usize)>;
    /// A segment of this connection arrived (after the receiving host's buffer).
    fn on_segment(&mut self, now: Nanos, seg: &Segment);
    /// When the endpoint next acts by itself (a timer, the pacer); None: only when a
    /// segment arrives.
    fn next_deadline(&self) -> Option<Nanos>;
    /// Handles every timer due by `now`.
    fn on_timeout(&mut self, now: Nanos);
    /// What the application has got so far (a receiver) or has had acknowledged (a sender).
    fn progress(&self) -> Progress;
}

/// A connection's progress, as the workload's measurements need it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// Stream bytes delivered in order to the application (receiver) or acknowledged (sender).
    pub bytes: u64,
    /// When the last of the object's bytes was delivered (receiver) or acknowledged.
    pub done_at: Option<Nanos>,
    /// Packets the sender declared lost, and sent in all (senders only).
    pub lost: u64,
    pub sent: u64,
    /// Data packets that arrived marked CE (receivers), window reductions for an ECN echo
    /// (senders); 0 for a model without ECN.
    pub ce_marks: u64,
    pub ecn_reductions: u64,
}
