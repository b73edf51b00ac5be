//! The engine's own promises, checked against its private state: the driver contract
//! (each event at its own instant however late the driver), the remembered earliest
//! deadline, and every buffer back in the pool once the network has emptied. The whole
//! path, packet by packet, is in `emu/tests/engine.rs`.

use std::path::Path;

use super::*;
use crate::base::time::{NS_PER_MS, NS_PER_US};
use crate::config::parse;

fn engine(text: &str) -> Engine {
    Engine::new(&parse(text, Path::new(".")).unwrap(), 2048).unwrap()
}

/// A downlink UDP packet of `total` bytes carrying `seq`.
fn udp(seq: u32, total: usize) -> Vec<u8> {
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[9] = 17;
    p[12..16].copy_from_slice(&[198, 18, 0, 1]);
    p[16..20].copy_from_slice(&[198, 18, 0, 2]);
    p[20..22].copy_from_slice(&4433u16.to_be_bytes());
    p[22..24].copy_from_slice(&5000u16.to_be_bytes());
    p[28..32].copy_from_slice(&seq.to_be_bytes());
    p
}

fn inject(e: &mut Engine, at: Nanos, seq: u32, total: usize) {
    let id = e.alloc_buffer().unwrap();
    e.pool_mut().slot_mut(id)[..total].copy_from_slice(&udp(seq, total));
    e.ingress(at, Dir::Down, id, total);
}

/// Takes what the engine wrote, (at, seq), and gives its buffers back as a driver does.
fn drain(e: &mut Engine, out: &mut Vec<(Nanos, u32)>) {
    while let Some(o) = e.outputs().pop_front() {
        let b = e.pool().get(o.id);
        out.push((o.at, u32::from_be_bytes(b[28..32].try_into().unwrap())));
        e.release(o.id);
    }
}

/// Two legs with jitter that reorders and 2 % loss: random stages, so a driver that
/// changed what the network did would change what comes out.
const JITTERY: &str = r#"
[stats]
interval_ms = 10
[split]
batch = 4
ratio = [1, 1]
[[legs]]
name = "a"
[legs.downlink]
rate = "20mbit"
queue_packets = 50
delay = { distribution = "uniform", min_ms = 2, max_ms = 12 }
loss = { model = "bernoulli", percent = 2 }
[legs.uplink]
rate = "unlimited"
[[legs]]
name = "b"
[legs.downlink]
rate = "10mbit"
queue_packets = 50
delay = { distribution = "normal", mean_ms = 20, std_ms = 4 }
"#;

/// `n` packets of 1200 bytes offered, one every `gap`, the clock moved by `step`.
fn offer(
    e: &mut Engine,
    n: u32,
    gap: Nanos,
    step: impl Fn(&mut Engine, Nanos, &mut Vec<(Nanos, u32)>),
) -> Vec<(Nanos, u32)> {
    let mut out = Vec::new();
    for i in 0..n {
        let at = i as Nanos * gap;
        step(e, at, &mut out);
        inject(e, at, i, 1200);
    }
    step(e, n as Nanos * gap + 2_000 * NS_PER_MS, &mut out);
    out
}

#[test]
fn a_late_driver_changes_when_packets_are_written_never_what_the_network_did() {
    // On time: the clock visits every deadline.
    // 32 Mbit/s offered, above the legs' 30: the queues fill.
    let (n, gap) = (400, 300 * NS_PER_US);
    let mut on_time = engine(JITTERY);
    let exact = offer(&mut on_time, n, gap, |e, t, out| {
        while let Some(d) = e.next_deadline().filter(|&d| d <= t) {
            e.advance(d);
            drain(e, out);
        }
        e.advance(t);
        drain(e, out);
    });
    // Late: the clock only moves when a packet arrives (every 0.3 ms, passing many
    // deadlines at once) and once at the end.
    let mut late = engine(JITTERY);
    let lazy = offer(&mut late, n, gap, |e, t, out| {
        e.advance(t);
        drain(e, out);
    });
    assert!(
        exact.len() > 300 && exact.len() < 400,
        "{} written",
        exact.len()
    );
    assert_eq!(exact, lazy, "the same packets at the same instants");
    let (a, b) = (on_time.take_records(), late.take_records());
    assert_eq!(a.len(), 212, "one record per 10 ms");
    // Buffers in use count what the driver has not yet written: the one gauge a late
    // driver may change.
    let json = |r: &[Record]| {
        let mut r = r.to_vec();
        r.iter_mut().for_each(|r| r.engine.buffers_in_use = 0);
        serde_json::to_string(&r).unwrap()
    };
    assert!(json(&a) == json(&b), "and the same records");
}

#[test]
fn the_remembered_earliest_deadline_is_forgotten_when_a_packet_enters() {
    let mut e = engine(JITTERY);
    // Idle: only the stats timer.
    assert_eq!(e.next_deadline(), Some(10 * NS_PER_MS));
    assert!(e.next_due.get().is_some(), "remembered after the first ask");
    inject(&mut e, NS_PER_MS, 0, 1250);
    // 1252 bytes (with the PDCP header) at 20 Mbit/s leave leg a's rate stage 500.8 us on.
    assert_eq!(e.next_deadline(), Some(NS_PER_MS + 500_800));
    e.advance(NS_PER_MS + 500_800);
    let next = e.next_deadline().unwrap();
    assert!(
        next > NS_PER_MS + 500_800 && next <= 10 * NS_PER_MS,
        "{next}"
    );
}

/// Leg b a secondary behind an X2 hop, the split `delay-target` with the outage fallback,
/// and leg b nearly stalled (8 kbit/s) from 200 to 500 ms.
const FALLBACK: &str = r#"
[stats]
interval_ms = 10
[pdcp]
reordering = true
t_reordering_ms = 100
[split]
policy = "delay-target"
fallback_ms = 5
[[legs]]
name = "a"
[legs.downlink]
rate = "30mbit"
queue_packets = 1000
delay = { distribution = "constant", ms = 10 }
[legs.uplink]
rate = "unlimited"
[[legs]]
name = "b"
[legs.downlink]
rate = "30mbit"
queue_packets = 1000
delay = { distribution = "constant", ms = 5 }
[legs.x2]
rate = "unlimited"
delay = { distribution = "constant", ms = 5 }
[[schedule]]
at_ms = 200
leg = "b"
rate = "8kbit"
[[schedule]]
at_ms = 500
leg = "b"
rate = "30mbit"
"#;

#[test]
fn every_buffer_returns_to_the_pool_once_the_network_is_empty() {
    // 16 Mbit/s for 1.2 s, across leg b's stall.
    for text in [JITTERY, FALLBACK] {
        let mut e = engine(text);
        let out = offer(&mut e, 2000, 600 * NS_PER_US, |e, t, out| {
            e.advance(t);
            drain(e, out);
        });
        assert!(!out.is_empty());
        // Long after the last packet: nothing queued, held, kept as a copy or written.
        e.advance(10_000 * NS_PER_MS);
        let mut rest = Vec::new();
        drain(&mut e, &mut rest);
        assert_eq!(e.pool.in_use(), 0, "buffers still taken");
        if text == FALLBACK {
            let flow = e.bearers[0]
                .flow
                .as_ref()
                .unwrap()
                .record(|l| l.to_string());
            let json = serde_json::to_value(&flow).unwrap();
            let b = &json["secondaries"][0];
            assert!(b["outages"].as_u64().unwrap() >= 1, "{json}");
            assert!(
                b["resent_packets"].as_u64().unwrap() > 0,
                "copies were in play: {json}"
            );
        }
    }
}

#[test]
fn a_secondary_sees_its_x2_hop_and_the_master_none() {
    let s = parse(FALLBACK, Path::new(".")).unwrap();
    let master = flow_leg(&s.legs[0], 0, true);
    let secondary = flow_leg(&s.legs[1], 1, false);
    assert_eq!((master.hop, master.delay), (0, 10 * NS_PER_MS));
    assert_eq!(
        (secondary.hop, secondary.delay),
        (5 * NS_PER_MS, 5 * NS_PER_MS)
    );
    assert_eq!(secondary.known_bps, Some(30e6));
    // Each leg and direction draws its own random stream.
    let seeds = [seed(7, 0, 0), seed(7, 0, 1), seed(7, 1, 0), seed(7, 1, 1)];
    for (i, a) in seeds.iter().enumerate() {
        assert!(seeds[i + 1..].iter().all(|b| a != b), "{seeds:?}");
    }
}
