//! Congestion controllers behind one trait, driven by a modelled sender (QUIC or TCP):
//! the sender tells the controller what it sent, what was acknowledged (with what the
//! acknowledgment says about the delivery rate) and what it declared lost; the controller
//! answers with a window and, if it paces by itself, a pacing rate.
//!
//! Each implementation says whose behaviour it reproduces (aioquic's, Linux's, dclab's
//! BBR) and follows it exactly where that changes what goes on the wire.

pub mod bbr;
pub mod cubic;
pub mod reno;

use super::rtt::RttEstimator;
use crate::base::time::Nanos;

/// One acknowledged packet, as the sender saw it when it was sent and when its ACK came.
#[derive(Clone, Copy, Debug, Default)]
pub struct Acked {
    pub sent_at: Nanos,
    /// Bytes it counted in flight (a QUIC packet's size; a TCP segment's payload + headers).
    pub bytes: u64,
    /// The sender's delivered-bytes count and its time when this packet was sent, and
    /// whether the sender was application-limited then (the rate sample of
    /// draft-cheng-iccrg-delivery-rate-estimation).
    pub delivered_at_send: u64,
    pub delivered_time_at_send: Nanos,
    pub first_sent_time_at_send: Nanos,
    pub app_limited: bool,
    /// The delivered count including this packet, at the ACK.
    pub delivered_now: u64,
}

pub trait Controller {
    /// A packet of `bytes` left; `in_flight` includes it.
    fn on_sent(&mut self, now: Nanos, bytes: u64, in_flight: u64);
    /// One packet acknowledged (newly, in packet order within one ACK); `in_flight` no
    /// longer includes it.
    fn on_acked(&mut self, now: Nanos, acked: &Acked, rtt: &RttEstimator, in_flight: u64);
    /// Called once after all packets of one ACK were passed to `on_acked`.
    fn on_ack_end(&mut self, _now: Nanos, _rtt: &RttEstimator, _in_flight: u64) {}
    /// A new RTT sample was taken (aioquic's slow-start exit on increasing RTT uses it).
    fn on_rtt_sample(&mut self, _now: Nanos, _rtt: &RttEstimator) {}
    /// Packets declared lost at `now`, the newest of them sent at `newest_sent_at`;
    /// `in_flight` no longer includes them.
    fn on_lost(&mut self, now: Nanos, newest_sent_at: Nanos, lost_bytes: u64, in_flight: u64);
    /// RFC 9002 §7.6 persistent congestion (or a TCP RTO): back to the minimum window.
    fn on_persistent_congestion(&mut self, now: Nanos);
    /// Bytes that may be in flight.
    fn window(&self) -> u64;
    /// Bytes per second the controller paces at, if it sets its own rate (BBR); None: the
    /// sender paces from the window and the smoothed RTT as its stack does.
    fn pacing_rate(&self) -> Option<f64> {
        None
    }
    fn in_slow_start(&self) -> bool;
    /// Whether a packet sent now is to be marked application-limited on the controller's
    /// behalf (asked right after `on_sent`); the sender ORs it into its own mark for the
    /// packet's [`Acked::app_limited`]. BBR marks packets sent while the pipe was empty and
    /// during PROBE_RTT, so that their low rate samples do not pull its bandwidth filter
    /// down (dclab/endpoints/aioquic/bbr.py keeps that mark itself).
    fn app_limited(&self) -> bool {
        false
    }
}

/// The congestion controllers a modelled sender can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcKind {
    Reno,
    Cubic,
    Bbr,
}

impl CcKind {
    pub fn parse(s: &str) -> Option<CcKind> {
        match s {
            "reno" | "newreno" => Some(CcKind::Reno),
            "cubic" => Some(CcKind::Cubic),
            "bbr" => Some(CcKind::Bbr),
            _ => None,
        }
    }
}

/// Whose behaviour a controller reproduces: aioquic 1.7.2's (in bytes; dclab's BBR for
/// [`CcKind::Bbr`]) or the Linux kernel's (in segments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Aioquic,
    Linux,
}

/// A controller of `kind` as `flavor` does it. `mss`: the bytes one full-sized packet
/// counts in flight (aioquic's max_datagram_size; for Linux, the segment the window is
/// counted in). Linux BBR is dclab's BBR (bbr.rs) with Linux's 1 % pacing margin.
pub fn build(kind: CcKind, flavor: Flavor, mss: u64) -> Box<dyn Controller> {
    match (kind, flavor) {
        (CcKind::Reno, Flavor::Aioquic) => Box::new(reno::NewReno::new(mss)),
        (CcKind::Reno, Flavor::Linux) => Box::new(reno::LinuxReno::new(mss)),
        (CcKind::Cubic, Flavor::Aioquic) => Box::new(cubic::Cubic::new(mss)),
        (CcKind::Cubic, Flavor::Linux) => Box::new(cubic::LinuxCubic::new(mss)),
        (CcKind::Bbr, Flavor::Aioquic) => Box::new(bbr::Bbr::new(mss)),
        (CcKind::Bbr, Flavor::Linux) => Box::new(bbr::Bbr::linux(mss)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(cc: &mut dyn Controller, now: Nanos, sent_at: Nanos, bytes: u64) {
        let a = Acked {
            sent_at,
            bytes,
            ..Default::default()
        };
        cc.on_acked(now, &a, &RttEstimator::default(), 0);
        cc.on_ack_end(now, &RttEstimator::default(), 0);
    }

    #[test]
    fn the_factory_builds_each_flavour() {
        for kind in [CcKind::Reno, CcKind::Cubic, CcKind::Bbr] {
            for flavor in [Flavor::Aioquic, Flavor::Linux] {
                let cc = build(kind, flavor, 1200);
                assert_eq!(cc.window(), 12_000, "{kind:?} {flavor:?}");
                assert!(cc.in_slow_start());
                assert_eq!(cc.pacing_rate().is_some(), kind == CcKind::Bbr);
            }
        }
        // aioquic counts acknowledged bytes, Linux acknowledged segments
        let mut q = build(CcKind::Reno, Flavor::Aioquic, 1200);
        let mut t = build(CcKind::Reno, Flavor::Linux, 1200);
        ack(q.as_mut(), 10, 1, 600);
        ack(t.as_mut(), 10, 1, 600);
        assert_eq!((q.window(), t.window()), (12_600, 13_200));
        // after a loss: aioquic CUBIC takes 0.7 x the bytes in flight, Linux 717/1024 x cwnd
        let mut q = build(CcKind::Cubic, Flavor::Aioquic, 1000);
        let mut t = build(CcKind::Cubic, Flavor::Linux, 1000);
        q.on_lost(10, 5, 1000, 5000);
        t.on_lost(10, 5, 1000, 5000);
        assert_eq!((q.window(), t.window()), (3500, 7000));
        assert_eq!(CcKind::parse("newreno"), Some(CcKind::Reno));
    }
}
