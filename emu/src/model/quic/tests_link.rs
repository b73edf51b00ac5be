//! The QUIC models against each other over a small in-test link: a fixed one-way delay,
//! a serialization rate, and chosen downlink packets dropped or held back.

use std::collections::BTreeMap;

use super::receiver::QuicReceiver;
use super::sender::QuicSender;
use super::QuicConfig;
use crate::base::time::{Nanos, NS_PER_MS, NS_PER_S};
use crate::model::cc::{Acked, Controller};
use crate::model::rtt::RttEstimator;
use crate::model::wire::Segment;
use crate::model::Endpoint;

/// A fixed window that halves on a congestion event (enough to see what the sender tells it).
struct Halving {
    w: u64,
}

impl Controller for Halving {
    fn on_sent(&mut self, _: Nanos, _: u64, _: u64) {}
    fn on_acked(&mut self, _: Nanos, _: &Acked, _: &RttEstimator, _: u64) {}
    fn on_lost(&mut self, _: Nanos, _: Nanos, _: u64, _: u64) {
        self.w /= 2;
    }
    fn on_persistent_congestion(&mut self, _: Nanos) {}
    fn window(&self) -> u64 {
        self.w
    }
    fn in_slow_start(&self) -> bool {
        false
    }
}

struct Link {
    delay: Nanos,
    /// Downlink serialization, ns per byte (0: infinite rate).
    ns_per_byte: Nanos,
    down_free: Nanos,
    /// Data packet numbers dropped once, and held back by this long, on the downlink.
    drop: Vec<u64>,
    hold: BTreeMap<u64, Nanos>,
    drop_acks_until: Nanos,
}

struct Run {
    end: Nanos,
    sender_lost: u64,
    sender_sent: u64,
    acks: u64,
    sender: QuicSender,
}

fn run(cfg: QuicConfig, window: u64, mut link: Link, limit: Nanos) -> Run {
    let mut s = QuicSender::new(cfg.clone(), Box::new(Halving { w: window }));
    let mut r = QuicReceiver::new(cfg.clone());
    // (arrival time, sequence, to_server, segment)
    let mut wire: BTreeMap<(Nanos, u64), (bool, Segment)> = BTreeMap::new();
    let mut seq = 0u64;
    let mut now: Nanos = 0;
    let mut acks = 0;
    loop {
        for (to_server, ep) in [
            (false, &mut s as &mut dyn Endpoint),
            (true, &mut r as &mut dyn Endpoint),
        ] {
            if ep.next_deadline().is_some_and(|t| t <= now) {
                ep.on_timeout(now);
            }
            while let Some((seg, size)) = ep.poll_transmit(now) {
                seq += 1;
                let mut at = now + link.delay;
                if !to_server {
                    link.down_free = link.down_free.max(now) + size as Nanos * link.ns_per_byte;
                    at = link.down_free + link.delay;
                    if let Segment::QuicData { pn, .. } = seg {
                        if let Some(i) = link.drop.iter().position(|&p| p == pn) {
                            link.drop.remove(i);
                            continue;
                        }
                        at += link.hold.remove(&pn).unwrap_or(0);
                    }
                } else {
                    if matches!(seg, Segment::QuicAck { .. }) {
                        acks += 1;
                        if now < link.drop_acks_until {
                            continue;
                        }
                    }
                }
                wire.insert((at, seq), (to_server, seg));
            }
        }
        if r.progress().done_at.is_some() && s.progress().done_at.is_some() {
            break;
        }
        let next = [
            wire.keys().next().map(|k| k.0),
            s.next_deadline(),
            r.next_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
        .expect("something is always pending before the end");
        assert!(next >= now, "time never runs back");
        now = next;
        assert!(now < limit, "the transfer ends within {limit} ns");
        while let Some(entry) = wire.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let (to_server, seg) = entry.remove();
            if to_server {
                s.on_segment(now, &seg);
            } else {
                r.on_segment(now, &seg);
            }
        }
    }
    let p = s.progress();
    Run {
        end: r.progress().done_at.unwrap(),
        sender_lost: p.lost,
        sender_sent: p.sent,
        acks,
        sender: s,
    }
}

fn cfg(size: u64) -> QuicConfig {
    QuicConfig {
        size,
        ..QuicConfig::default()
    }
}

fn link(delay_ms: u64) -> Link {
    Link {
        delay: delay_ms * NS_PER_MS,
        ns_per_byte: 0,
        down_free: 0,
        drop: vec![],
        hold: BTreeMap::new(),
        drop_acks_until: 0,
    }
}

#[test]
fn a_window_limited_transfer_takes_size_over_window_round_trips() {
    // 1 MB at a fixed window of 40 full packets over 50 ms RTT, unlimited rate: about
    // size / window round trips, plus the handshake (2 RTT) and the last ACK.
    let size = 1_000_000;
    let r = run(cfg(size), 40 * 1252, link(25), 30 * NS_PER_S);
    let per_rtt = 40 * (1252 - 35) as u64; // stream bytes per window
    let rtts = size.div_ceil(per_rtt);
    let expect = (rtts + 2) * 50 * NS_PER_MS;
    assert!(
        r.end > expect - 60 * NS_PER_MS && r.end < expect + 60 * NS_PER_MS,
        "end {} vs {}",
        r.end,
        expect
    );
    assert_eq!(r.sender_lost, 0);
    assert!(r.sender_sent >= rtts * 40 - 40);
}

#[test]
fn reordering_below_the_packet_threshold_is_not_loss_and_above_it_is() {
    // Packet 100 held back 1 ms at 5 µs per byte (~6 packet times: 3 or more later packets
    // are acknowledged first) is declared lost and sent again; held back 0.3 ms (2 packet
    // times, and well inside 9/8 RTT) it is not.
    let mut shallow = link(10);
    shallow.ns_per_byte = 400; // 1280-byte packet: 0.5 ms
    shallow.hold.insert(100, 900_000);
    let r = run(cfg(300_000), 30 * 1252, shallow, 30 * NS_PER_S);
    assert_eq!(
        r.sender_lost, 0,
        "1.8 packet times late: reordered, not lost"
    );
    let mut deep = link(10);
    deep.ns_per_byte = 400;
    deep.hold.insert(100, 3_000_000);
    let r = run(cfg(300_000), 30 * 1252, deep, 30 * NS_PER_S);
    assert_eq!(
        r.sender_lost, 1,
        "6 packet times late: 3 later packets acknowledged first"
    );
    assert!(r.sender.window() < 30 * 1252, "a congestion event");
}

#[test]
fn a_dropped_packet_is_sent_again_and_the_transfer_completes() {
    let mut l = link(10);
    l.ns_per_byte = 400;
    l.drop = vec![5, 50, 51];
    let size = 500_000;
    let r = run(cfg(size), 30 * 1252, l, 30 * NS_PER_S);
    assert_eq!(r.sender_lost, 3);
    assert_eq!(r.sender.progress().bytes, size);
}

#[test]
fn a_pto_resends_the_oldest_packet_without_a_congestion_event() {
    // Every ACK for 300 ms is lost: the PTO fires (more than once), each time declaring
    // the oldest packet lost without telling the controller, and the window stays.
    let mut l = link(10);
    l.ns_per_byte = 400;
    l.drop_acks_until = 600 * NS_PER_MS;
    let window = 20 * 1252;
    let r = run(cfg(200_000), window, l, 30 * NS_PER_S);
    assert!(r.sender_lost >= 1, "the PTO declared packets lost");
    assert_eq!(
        r.sender.window(),
        window,
        "no congestion event for PTO retransmissions"
    );
    assert!(r.acks > 0);
}
