//! Congestion controllers behind one trait, driven by a modelled sender (QUIC or TCP):
//! the sender tells the controller what it sent, what was acknowledged (with what the
//! acknowledgment says about the delivery rate) and what it declared lost; the controller
//! answers with a window and, if it paces by itself, a pacing rate.
//!
//! Each implementation says whose behaviour it reproduces (aioquic's, Linux's, dclab's
//! BBR) and follows it exactly where that changes what goes on the wire:
//! - [`reno`]: aioquic's NewReno and its RTT monitor; Linux Reno and the segment window
//!   Linux's Reno and CUBIC share;
//! - [`cubic`]: aioquic's CUBIC; Linux CUBIC with HyStart;
//! - [`bbr`]: dclab's BBR v1 (dclab/endpoints/aioquic/bbr.py), also used for Linux BBR.
//!
//! [`build`] makes one by kind and [`Flavor`]. How a sender calls them: for each ACK,
//! `on_acked` per newly acknowledged packet, then (aioquic) `on_rtt_sample` if the ACK gave
//! an RTT sample, then `on_ack_end`; then losses the ACK revealed with `on_lost`. The
//! aioquic flavours act per packet as aioquic does; the Linux ones per ACK, in `on_ack_end`.

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

#[cfg(test)]
impl Acked {
    /// A packet of `bytes` sent at `sent_at`, without rate-sample state.
    pub(crate) fn sent(sent_at: Nanos, bytes: u64) -> Acked {
        Acked {
            sent_at,
            bytes,
            ..Default::default()
        }
    }
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

    /// The name `parse` reads.
    pub fn name(self) -> &'static str {
        match self {
            CcKind::Reno => "reno",
            CcKind::Cubic => "cubic",
            CcKind::Bbr => "bbr",
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

    /// One sender over one drop-tail bottleneck of `rate` bytes/s, 40 ms base RTT and a
    /// buffer of one BDP, one packet per ACK, a drop declared lost one RTT after it; keeps
    /// the delivery-rate state bbr.rs expects and paces only when the controller asks.
    /// Returns the bytes acknowledged in `secs` seconds.
    fn bulk(cc: &mut dyn Controller, rate: f64, secs: u64) -> u64 {
        use crate::base::time::{NS_PER_MS, NS_PER_S};
        use std::cmp::Reverse;
        use std::collections::{BinaryHeap, HashMap};
        const MSS: u64 = 1250;
        let (rtt0, end) = (40 * NS_PER_MS, secs * NS_PER_S);
        let buffer = (rate * 0.04) as u64;
        let tx = (MSS as f64 / rate * 1e9) as Nanos;
        let mut ev: BinaryHeap<Reverse<(Nanos, bool, u64)>> = BinaryHeap::new(); // (t, lost, pn)
        let mut sent: HashMap<u64, Acked> = HashMap::new();
        let (mut pn, mut in_flight, mut delivered, mut delivered_time, mut first_sent) =
            (0u64, 0u64, 0u64, 0, 0);
        let (mut link_free, mut next_send, mut now): (Nanos, Nanos, Nanos) = (0, 0, 0);
        let mut rtt = RttEstimator::default();
        while now < end {
            // send what the window (and the pacer, if any) allow now
            while in_flight + MSS <= cc.window() && next_send <= now {
                if in_flight == 0 {
                    first_sent = now;
                    delivered_time = now;
                }
                in_flight += MSS;
                cc.on_sent(now, MSS, in_flight);
                let a = Acked {
                    sent_at: now,
                    bytes: MSS,
                    delivered_at_send: delivered,
                    delivered_time_at_send: delivered_time,
                    first_sent_time_at_send: first_sent,
                    app_limited: cc.app_limited(),
                    delivered_now: 0,
                };
                sent.insert(pn, a);
                let backlog = link_free.saturating_sub(now) as f64 / 1e9 * rate;
                if backlog as u64 > buffer {
                    ev.push(Reverse((now + rtt0, true, pn)));
                } else {
                    link_free = link_free.max(now) + tx;
                    ev.push(Reverse((link_free + rtt0, false, pn)));
                }
                pn += 1;
                if let Some(r) = cc.pacing_rate() {
                    next_send = now + (MSS as f64 / r * 1e9) as Nanos;
                }
            }
            let wake = (next_send > now && in_flight + MSS <= cc.window()).then_some(next_send);
            let Some(Reverse((t, lost, p))) = ev.pop() else {
                break;
            };
            if wake.is_some_and(|w| w < t) {
                ev.push(Reverse((t, lost, p)));
                now = wake.unwrap();
                continue;
            }
            now = t;
            let mut a = sent.remove(&p).unwrap();
            in_flight -= a.bytes;
            if lost {
                cc.on_lost(now, a.sent_at, a.bytes, in_flight);
                continue;
            }
            delivered += a.bytes;
            delivered_time = now;
            first_sent = a.sent_at;
            a.delivered_now = delivered;
            rtt.update(now - a.sent_at, 0);
            cc.on_acked(now, &a, &rtt, in_flight);
            cc.on_rtt_sample(now, &rtt);
            cc.on_ack_end(now, &rtt, in_flight);
            assert!(cc.window() > 0);
        }
        delivered
    }

    #[test]
    fn every_controller_fills_a_bottleneck() {
        // 10 Mbit/s for 20 s: 25 MB; each controller gets at least 90 % of it
        for kind in [CcKind::Reno, CcKind::Cubic, CcKind::Bbr] {
            for flavor in [Flavor::Aioquic, Flavor::Linux] {
                let mut cc = build(kind, flavor, 1250);
                let got = bulk(cc.as_mut(), 1.25e6, 20);
                assert!(
                    got > 22_500_000 && got <= 25_000_000,
                    "{kind:?} {flavor:?}: {got}"
                );
            }
        }
        // BBR's bandwidth estimate finds the bottleneck
        let mut cc = bbr::Bbr::new(1250);
        bulk(&mut cc, 1.25e6, 20);
        assert!((cc.btlbw() / 1.25e6 - 1.0).abs() < 0.05, "{}", cc.btlbw());
        assert_eq!(cc.state(), bbr::State::ProbeBw);
    }
}
