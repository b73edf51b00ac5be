//! The whole core in virtual time: classifier -> PDCP tx -> legs -> PDCP rx, with
//! scheduled changes and stats, driven by a fake clock.

mod harness;

use dcemu::base::time::{Nanos, NS_PER_MS, NS_PER_S, NS_PER_US};
use std::path::Path;

use dcemu::config::parse;
use dcemu::engine::{Dir, Engine};
use harness::{nr40_cell, udp, Harness};

const TWO_LEGS: &str = r#"
[split]
batch = 10
ratio = [1, 1]
[[legs]]
name = "a"
[legs.downlink]
rate = "10mbit"
queue_packets = 1000
delay = { distribution = "constant", ms = 5 }
[legs.uplink]
rate = "unlimited"
delay = { distribution = "constant", ms = 3 }
[[legs]]
name = "b"
[legs.downlink]
rate = "10mbit"
queue_packets = 1000
delay = { distribution = "constant", ms = 20 }
"#;

#[test]
fn split_over_unequal_delays_arrives_in_order_with_exact_timing() {
    let mut h = Harness::new(TWO_LEGS);
    // 100 packets of 1000 bytes, one every 0.5 ms (16 Mbit/s, below the 20 of both legs).
    for i in 0..100u32 {
        h.inject(
            i as Nanos * 500 * NS_PER_US,
            Dir::Down,
            &udp(4433, 5000, i, 1000, true),
        );
    }
    h.run_until(200 * NS_PER_MS);
    let seqs: Vec<u32> = h.written.iter().map(|w| w.2).collect();
    assert_eq!(seqs, (0..100).collect::<Vec<_>>(), "PDCP restores order");
    // Packet 0 goes to leg a: 1002 bytes at 10 Mbit/s = 801.6 us, then 5 ms.
    assert_eq!(h.written[0].1, 801_600 + 5 * NS_PER_MS);
    // Packet 5 is the first on leg b (batch 10 at 1:1 is 5 + 5): sent at 2.5 ms, 20 ms delay.
    let t5 = 2_500_000 + 801_600 + 20 * NS_PER_MS;
    assert_eq!(h.written[5].1, t5);
    // Packets 0..=4 queue on leg a (0.8016 ms each, arriving every 0.5 ms) and wait for
    // nothing in the receiver.
    assert_eq!(h.written[4].1, 5 * 801_600 + 5 * NS_PER_MS);
    // Packet 10 (leg a, there at 6.3 ms) waits in the reorder buffer for packet 9 (leg b:
    // queued behind 5..8, out of the rate stage at 2.5 + 5 x 0.8016 ms, then 20 ms).
    let t9 = 2_500_000 + 5 * 801_600 + 20 * NS_PER_MS;
    assert_eq!((h.written[9].1, h.written[10].1), (t9, t9));
    let rec = h.e.summary(h.now);
    assert_eq!(
        rec.bearers[0].tx_pdus,
        vec![("a".to_string(), 50), ("b".to_string(), 50)]
    );
    let rx = &rec.bearers[0].rx.as_ref().unwrap().counters;
    assert_eq!(
        (rx.delivered, rx.counts_given_up, rx.timer_expiries),
        (100, 0, 0)
    );
    assert_eq!(rec.bearers[0].delivered_bytes, 100 * 1000);
    assert_eq!(
        rec.legs[0].downlink.counters.bytes_out,
        50 * 1002,
        "the leg charges the PDCP header"
    );
}

#[test]
fn uplink_uses_its_own_leg_and_delay() {
    let mut h = Harness::new(TWO_LEGS);
    h.inject(NS_PER_MS, Dir::Up, &udp(5000, 4433, 7, 100, false));
    h.run_until(10 * NS_PER_MS);
    assert_eq!(h.written, vec![(Dir::Up, 4 * NS_PER_MS, 7, 100)]);
}

/// `pdcp.processing_ms`: every packet waits at the entity where it enters and at the one
/// where it leaves, each way; the timing of the rest (rate, delay, reordering) is the same,
/// shifted by the entry's delay.
#[test]
fn pdcp_processing_delays_each_way_at_both_entities() {
    let with = format!("[pdcp]\nprocessing_ms = 1\n{TWO_LEGS}");
    let mut plain = Harness::new(TWO_LEGS);
    let mut slow = Harness::new(&with);
    for h in [&mut plain, &mut slow] {
        for i in 0..20u32 {
            h.inject(
                i as Nanos * 500 * NS_PER_US,
                Dir::Down,
                &udp(4433, 5000, i, 1000, true),
            );
            if i == 2 {
                h.inject(NS_PER_MS, Dir::Up, &udp(5000, 4433, 99, 100, false));
            }
        }
        h.run_until(200 * NS_PER_MS);
    }
    assert_eq!(slow.written.len(), 21);
    for (p, s) in plain.written.iter().zip(&slow.written) {
        assert_eq!((p.0, p.2, p.3), (s.0, s.2, s.3));
        assert_eq!(s.1, p.1 + 2 * NS_PER_MS, "{p:?} {s:?}");
    }
    // The uplink packet: 1 ms in, 3 ms on the uplink, 1 ms out.
    assert!(slow.written.contains(&(Dir::Up, 6 * NS_PER_MS, 99, 100)));
    let bad = parse("[pdcp]\nprocessing_ms = -1", Path::new(".")).unwrap_err();
    assert!(
        format!("{bad:#}").contains("pdcp.processing_ms: must be between 0 and 1000"),
        "{bad:#}"
    );
}

#[test]
fn duplication_delivers_each_packet_once_and_loads_both_legs() {
    let text = format!("{TWO_LEGS}\n[[bearers]]\nname = \"dup\"\nmode = \"dup\"\n");
    let mut h = Harness::new(&text);
    for i in 0..50u32 {
        h.inject(
            i as Nanos * NS_PER_MS,
            Dir::Down,
            &udp(4433, 5000, i, 500, true),
        );
    }
    h.run_until(300 * NS_PER_MS);
    let seqs: Vec<u32> = h.written.iter().map(|w| w.2).collect();
    assert_eq!(seqs, (0..50).collect::<Vec<_>>());
    // Every packet arrives first over the 5 ms leg.
    assert!(h
        .written
        .iter()
        .enumerate()
        .all(|(i, w)| w.1 < (i as Nanos + 6) * NS_PER_MS));
    let rec = h.e.summary(h.now);
    assert_eq!(rec.legs[0].downlink.counters.packets_out, 50);
    assert_eq!(rec.legs[1].downlink.counters.packets_out, 50);
    // The second copies arrive after their COUNT was delivered: below RX_DELIV, so "late".
    let rx = &rec.bearers[0].rx.as_ref().unwrap().counters;
    assert_eq!(
        (rx.discarded_late, rx.discarded_duplicate, rx.delivered),
        (50, 0, 50)
    );
    assert_eq!(rec.engine.buffers_in_use, 0, "every buffer returned");
}

#[test]
fn bearers_classify_and_sc_pins_to_one_leg() {
    let text = format!(
        "{TWO_LEGS}
[[bearers]]
name = \"dc\"
mode = \"dc\"
match = [{{ server_port = 4433 }}]
[[bearers]]
name = \"sc2\"
mode = \"sc\"
legs = [\"b\"]
match = [{{ server_port = 9000 }}]
"
    );
    let mut h = Harness::new(&text);
    for i in 0..20u32 {
        h.inject(
            i as Nanos * NS_PER_MS,
            Dir::Down,
            &udp(9000, 5000, i, 500, true),
        );
    }
    h.run_until(100 * NS_PER_MS);
    let rec = h.e.summary(h.now);
    assert_eq!(rec.bearers[1].delivered_packets, 20);
    assert_eq!(rec.bearers[0].delivered_packets, 0);
    assert_eq!(rec.legs[0].downlink.counters.packets_in, 0);
    assert_eq!(rec.legs[1].downlink.counters.packets_in, 20);
}

#[test]
fn scheduled_rate_change_and_split_change_take_effect() {
    let text = format!(
        "{TWO_LEGS}
[[schedule]]
at_ms = 50
split = {{ ratio = [1, 0] }}
[[schedule]]
at_ms = 50
leg = \"a\"
rate = \"1mbit\"
"
    );
    let mut h = Harness::new(&text);
    for i in 0..40u32 {
        h.inject(
            i as Nanos * 2 * NS_PER_MS,
            Dir::Down,
            &udp(4433, 5000, i, 998, true),
        );
    }
    h.run_until(2000 * NS_PER_MS);
    let rec = h.e.summary(h.now);
    // 25 packets before 50 ms (batches of 5 + 5: 15 on a, 10 on b), the 15 after all on a.
    let (a, b) = (rec.bearers[0].tx_pdus[0].1, rec.bearers[0].tx_pdus[1].1);
    assert_eq!((a, b), (30, 10), "after the change nothing goes to leg b");
    // At 1 Mbit/s a 1000-byte PDU takes 8 ms: the 15 packets from 50 ms on leave the rate
    // stage back to back, the last at 50 + 15 x 8 = 170 ms, and arrive 5 ms later.
    assert_eq!(h.written.last().unwrap().1, 175 * NS_PER_MS);
}

#[test]
fn stats_records_come_every_interval() {
    let text = format!("{TWO_LEGS}\n[stats]\ninterval_ms = 10\n");
    let mut h = Harness::new(&text);
    h.run_until(100 * NS_PER_MS);
    let recs = h.e.take_records();
    assert_eq!(recs.len(), 10);
    assert_eq!(recs[0].t_ms, 10.0);
    assert_eq!(recs[9].t_ms, 100.0);
    assert!(recs.iter().all(|r| r.kind == "interval" && r.dt_ms == 10.0));
}

#[test]
fn queue_limit_drops_are_counted_and_buffers_freed() {
    let text = r#"
[[legs]]
name = "a"
[legs.downlink]
rate = "1mbit"
queue_packets = 5
delay = { distribution = "constant", ms = 0 }
"#;
    let mut h = Harness::new(text);
    for i in 0..20u32 {
        h.inject(0, Dir::Down, &udp(4433, 5000, i, 1000, true));
    }
    h.run_until(1000 * NS_PER_MS);
    let rec = h.e.summary(h.now);
    assert_eq!(rec.legs[0].downlink.counters.dropped_queue_packets, 15);
    assert_eq!(h.written.len(), 5);
    assert_eq!(rec.engine.buffers_in_use, 0);
}

#[test]
fn an_initial_count_at_the_top_of_the_space_drops_instead_of_panicking() {
    let text = r#"
[pdcp]
initial_count = 4294967294
[[legs]]
name = "a"
[legs.downlink]
rate = "unlimited"
delay = { distribution = "constant", ms = 1 }
"#;
    let mut h = Harness::new(text);
    for i in 0..5u32 {
        h.inject(
            i as Nanos * NS_PER_MS,
            Dir::Down,
            &udp(4433, 5000, i, 100, true),
        );
    }
    h.run_until(100 * NS_PER_MS);
    let rec = h.e.summary(h.now);
    // COUNTs 2^32 - 2 and 2^32 - 1 go out; the rest are dropped and their buffers freed.
    assert_eq!(h.written.iter().map(|w| w.2).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(rec.engine.dropped_count_exhausted, 3);
    assert_eq!(rec.engine.buffers_in_use, 0);
    let json = serde_json::to_string(&rec).unwrap();
    assert!(json.contains("\"dropped_count_exhausted\":3"), "{json}");
    // While nothing is dropped the field is left out, so records stay as they were.
    let mut h = Harness::new(TWO_LEGS);
    let json = serde_json::to_string(&h.e.summary(0)).unwrap();
    assert!(!json.contains("dropped_count_exhausted"), "{json}");
}

#[test]
fn csv_trace_from_the_shipped_data_drives_the_leg() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let csv = root.join("data/traces/raca4g/4G_A_2018.01.27_13.58.29.csv");
    let text = format!(
        r#"
[[legs]]
name = "a"
[legs.downlink]
trace = {{ path = "{}" }}
queue_packets = 1000
delay = {{ distribution = "constant", ms = 0 }}
"#,
        csv.display()
    );
    let s = parse(&text, &root).unwrap();
    let mut e = Engine::new(&s, 2048).unwrap();
    // Offer 1000-byte packets every 0.2 ms (40 Mbit/s, above the trace) for 5 s.
    let mut t = 0;
    while t < 5 * 1000 * NS_PER_MS {
        e.advance(t);
        while let Some(o) = e.outputs().pop_front() {
            e.release(o.id);
        }
        if let Some(id) = e.alloc_buffer() {
            let p = udp(4433, 5000, 0, 998, true);
            e.pool_mut().slot_mut(id)[..p.len()].copy_from_slice(&p);
            e.ingress(t, Dir::Down, id, p.len());
        }
        t += 200 * NS_PER_US;
    }
    let rec = e.summary(t);
    // Expected: the sum of the first five rows' kbit/s, in bytes.
    let rows: Vec<u64> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .skip(1)
        .take(5)
        .map(|l| l.split(',').nth(12).unwrap().parse().unwrap())
        .collect();
    let expected: u64 = rows.iter().map(|kbps| kbps * 1000 / 8).sum();
    let got = rec.legs[0].downlink.counters.bytes_out;
    assert!(
        expected.abs_diff(got) <= 1000,
        "trace allows {expected} bytes in 5 s, leg sent {got}"
    );
}

/// One cell leg, two devices (one bearer each) at fixed CQIs 15 and 7, round robin.
fn cell_scenario(scheduler: &str, fading: &str) -> String {
    use dcemu::cell::amc::sinr_threshold_db;
    format!(
        r#"
[stats]
interval_ms = 500
# The queues overflow; each hole would hold the PDCP receiver for t-Reordering.
[pdcp]
reordering = false
[[legs]]
name = "lte"
[legs.downlink]
delay = {{ distribution = "constant", ms = 12 }}
[legs.downlink.cell]
bandwidth_mhz = 5
scheduler = "{scheduler}"
[[legs.downlink.cell.devices]]
mean_sinr_db = {s0}
fading = "{fading}"
[[legs.downlink.cell.devices]]
mean_sinr_db = {s1}
fading = "{fading}"
[legs.uplink]
rate = "unlimited"
delay = {{ distribution = "constant", ms = 12 }}
[[bearers]]
name = "near"
mode = "sc"
match = [{{ server_port = 4433 }}]
[[bearers]]
name = "far"
mode = "sc"
match = [{{ server_port = 4434 }}]
"#,
        s0 = sinr_threshold_db(15) + 1.0,
        s1 = sinr_threshold_db(7) + 0.5,
    )
}

/// Offers 32 Mbit/s to each bearer for 2 s (far above the 5 MHz cell); returns the
/// harness and the bits each bearer delivered in [0.5 s, 2 s] (PDCP header included).
fn saturate_cell(text: &str) -> (Harness, [f64; 2]) {
    let mut h = Harness::new(text);
    let mut seq = 0;
    for i in 0..8000u64 {
        for port in [4433, 4434] {
            h.inject(
                i * 250 * NS_PER_US,
                Dir::Down,
                &udp(port, 5000, seq, 1000, true),
            );
            seq += 1;
        }
    }
    h.run_until(2 * NS_PER_S);
    let mut bits = [0.0; 2];
    for w in &h.written {
        if w.1 > NS_PER_S / 2 && w.1 <= 2 * NS_PER_S {
            // Even sequence numbers went to port 4433.
            bits[(w.2 % 2) as usize] += (w.3 + 2) as f64 * 8.0;
        }
    }
    (h, bits)
}

#[test]
fn a_cell_leg_gives_each_device_its_scheduled_share() {
    use dcemu::cell::amc::bits_per_rb;
    let (mut h, bits) = saturate_cell(&cell_scenario("rr", "none"));
    // Round robin: 12.5 of the 25 RBs each per TTI, at CQI 15 and CQI 7, for 1500 TTIs.
    for (d, cqi) in [(0, 15u8), (1, 7)] {
        let want = 12.5 * bits_per_rb(cqi) * 1500.0;
        assert!(
            (bits[d] / want - 1.0).abs() < 0.01,
            "device {d}: {} vs {want}",
            bits[d]
        );
    }
    // Every packet leaves the cell at the end of a TTI, then 12 ms of delay: exact instants.
    assert!(h.written.iter().all(|w| w.1 % NS_PER_MS == 0));
    let first = h.written[0];
    assert_eq!(first.1, NS_PER_MS + 12 * NS_PER_MS, "{first:?}");
    let rec = h.e.summary(h.now);
    let cell = rec.legs[0].cell.as_ref().expect("a cell record");
    assert_eq!((cell.bandwidth_mhz, cell.rbs_per_tti), (5.0, 25));
    let (a, b) = (&cell.devices[0], &cell.devices[1]);
    assert_eq!((a.bearer.as_str(), b.bearer.as_str()), ("near", "far"));
    assert_eq!((a.counters.cqi, b.counters.cqi), (15, 7));
    assert_eq!(a.counters.rbs + b.counters.rbs, 25 * cell.ttis);
    assert!(a.counters.rbs.abs_diff(b.counters.rbs) <= 1);
    // The 512 kB queues overflow; the leg's counters add up the devices'.
    assert!(a.counters.dropped_packets > 1000 && b.counters.dropped_packets > 1000);
    let dl = &rec.legs[0].downlink;
    assert_eq!(
        dl.counters.dropped_queue_packets,
        a.counters.dropped_packets + b.counters.dropped_packets
    );
    assert_eq!(
        dl.queue_bytes,
        a.counters.queue_bytes + b.counters.queue_bytes
    );
    assert_eq!(
        rec.bearers[0].delivered_packets + rec.bearers[1].delivered_packets,
        dl.counters.packets_out
    );
    let json = serde_json::to_value(&rec).unwrap();
    let dev = &json["legs"][0]["cell"]["devices"][1];
    for key in [
        "bytes_out",
        "packets_out",
        "dropped_packets",
        "queue_bytes",
        "cqi",
        "rbs",
    ] {
        assert!(dev.get(key).is_some(), "{key} in {dev}");
    }
    assert!(dev["capacity_bits"].as_u64().unwrap() > 0);
    // A leg without a cell has no cell record.
    let plain = Harness::new(TWO_LEGS).e.summary(0);
    assert!(serde_json::to_value(&plain).unwrap()["legs"][0]
        .get("cell")
        .is_none());
}

#[test]
fn a_pf_cell_with_fading_shares_time_and_is_reproducible() {
    let text = cell_scenario("pf", "rayleigh");
    let (h, bits) = saturate_cell(&text);
    let rec = Harness::new(&text).e.summary(0);
    assert_eq!(rec.legs[0].cell.as_ref().unwrap().devices.len(), 2);
    // The far device gets about half the time but far fewer bits.
    assert!(bits[0] > 1.5 * bits[1], "{bits:?}");
    let (h2, _) = saturate_cell(&text);
    assert_eq!(h.written, h2.written, "same seed, same output");
}

#[test]
fn leg_taps_see_each_packet_leave_its_leg_before_the_receiver_reorders() {
    let mut h = Harness::new(TWO_LEGS);
    h.e.tap_legs();
    let mut exits = vec![];
    for i in 0..20u32 {
        h.inject(
            i as Nanos * 500 * NS_PER_US,
            Dir::Down,
            &udp(4433, 5000, i, 1000, true),
        );
        exits.extend(h.e.take_leg_exits());
    }
    h.run_until(200 * NS_PER_MS);
    exits.extend(h.e.take_leg_exits());
    let seq = |b: &[u8]| u32::from_be_bytes(b[28..32].try_into().unwrap());
    let on = |leg: usize| -> Vec<(u32, Nanos)> {
        exits
            .iter()
            .filter(|e| e.leg == leg)
            .map(|e| (seq(&e.bytes), e.at))
            .collect()
    };
    // Batch 10 at 1:1: 0-4 and 10-14 on leg a, 5-9 and 15-19 on leg b, the bytes as sent.
    let a: Vec<u32> = on(0).iter().map(|x| x.0).collect();
    let b: Vec<u32> = on(1).iter().map(|x| x.0).collect();
    assert_eq!(a, [0, 1, 2, 3, 4, 10, 11, 12, 13, 14]);
    assert_eq!(b, [5, 6, 7, 8, 9, 15, 16, 17, 18, 19]);
    assert!(exits.iter().all(|e| e.bytes.len() == 1000));
    // Each leaves its leg at the rate and delay stages' instant, as in the test above.
    assert_eq!(on(0)[0].1, 801_600 + 5 * NS_PER_MS);
    assert_eq!(on(1)[0].1, 2_500_000 + 801_600 + 20 * NS_PER_MS);
    // Packet 10 left leg a before 9 left leg b; the receiver still delivered 9 first.
    assert!(on(0)[5].1 < on(1)[4].1);
    let order: Vec<u32> = h.written.iter().map(|w| w.2).collect();
    assert_eq!(order, (0..20).collect::<Vec<_>>());
    // Without the tap the engine notes nothing.
    let mut quiet = Harness::new(TWO_LEGS);
    quiet.inject(0, Dir::Down, &udp(4433, 5000, 0, 1000, true));
    quiet.run_until(50 * NS_PER_MS);
    assert!(quiet.e.take_leg_exits().is_empty());
}

/// A UDP packet between the server (198.18.0.1) and the client address 198.18.0.`client`.
fn udp_from(client: u8, seq: u32, total: usize, down: bool) -> Vec<u8> {
    let mut p = udp(4433, 5000, seq, total, down);
    let at = if down { 16 } else { 12 };
    p[at + 3] = client;
    p
}

/// Two legs, each with its own uplink, and a path bearer per client address.
const TWO_PATHS: &str = r#"
[[legs]]
name = "a"
[legs.downlink]
rate = "unlimited"
delay = { distribution = "constant", ms = 5 }
[legs.uplink]
rate = "unlimited"
delay = { distribution = "constant", ms = 3 }
[[legs]]
name = "b"
[legs.downlink]
rate = "unlimited"
delay = { distribution = "constant", ms = 20 }
[legs.uplink]
rate = "unlimited"
delay = { distribution = "constant", ms = 7 }
[[bearers]]
name = "path-a"
mode = "path"
legs = ["a"]
match = [{ client_addr = "198.18.0.2" }]
[[bearers]]
name = "path-b"
mode = "path"
legs = ["b"]
match = [{ client_addr = "198.18.0.3" }]
"#;

#[test]
fn path_bearers_pin_each_client_address_to_one_leg_both_ways() {
    let mut h = Harness::new(TWO_PATHS);
    h.inject(NS_PER_MS, Dir::Down, &udp_from(2, 1, 100, true));
    h.inject(NS_PER_MS, Dir::Down, &udp_from(3, 2, 100, true));
    h.inject(NS_PER_MS, Dir::Up, &udp_from(2, 3, 100, false));
    h.inject(NS_PER_MS, Dir::Up, &udp_from(3, 4, 100, false));
    h.run_until(50 * NS_PER_MS);
    let mut got = h.written.clone();
    got.sort_by_key(|w| w.2);
    assert_eq!(
        got,
        vec![
            (Dir::Down, 6 * NS_PER_MS, 1, 100),
            (Dir::Down, 21 * NS_PER_MS, 2, 100),
            (Dir::Up, 4 * NS_PER_MS, 3, 100),
            (Dir::Up, 8 * NS_PER_MS, 4, 100),
        ],
        "each address's packets cross its own leg's downlink and uplink"
    );
    let rec = h.e.summary(h.now);
    let modes: Vec<(&str, &str, bool)> = rec
        .bearers
        .iter()
        .map(|b| (b.name.as_str(), b.mode, b.rx.is_some()))
        .collect();
    assert_eq!(
        modes,
        vec![("path-a", "path", false), ("path-b", "path", false)],
        "a path has no PDCP reordering"
    );
    assert_eq!(
        rec.legs
            .iter()
            .map(|l| (
                l.downlink.counters.packets_out,
                l.uplink.as_ref().unwrap().counters.packets_out
            ))
            .collect::<Vec<_>>(),
        vec![(1, 1), (1, 1)]
    );
}

/// On a leg whose jitter reorders, a path hands packets over as they arrive (the transport
/// sees the reordering), where a single-connectivity bearer's PDCP puts them back in order.
#[test]
fn a_path_delivers_as_its_leg_does_where_pdcp_would_reorder() {
    let jittery = |mode: &str| {
        format!(
            r#"
[[legs]]
name = "a"
[legs.downlink]
rate = "unlimited"
delay = {{ distribution = "normal", mean_ms = 10, std_ms = 4 }}
[legs.uplink]
rate = "unlimited"
[[bearers]]
name = "one"
mode = "{mode}"
legs = ["a"]
"#
        )
    };
    let mut orders = vec![];
    for mode in ["path", "sc"] {
        let mut h = Harness::new(&jittery(mode));
        for i in 0..200u32 {
            h.inject(
                i as Nanos * 100 * NS_PER_US,
                Dir::Down,
                &udp(4433, 5000, i, 200, true),
            );
        }
        h.run_until(NS_PER_S);
        let seqs: Vec<u32> = h.written.iter().map(|w| w.2).collect();
        assert_eq!(seqs.len(), 200, "{mode}: every packet is delivered once");
        let out_of_order = seqs.windows(2).filter(|w| w[1] < w[0]).count();
        orders.push(out_of_order);
    }
    assert!(
        orders[0] >= 20,
        "path: the jitter's reordering reaches the receiver ({orders:?})"
    );
    assert_eq!(orders[1], 0, "sc: PDCP restores order ({orders:?})");
}

#[test]
fn a_path_bearer_is_one_leg_with_its_own_uplink() {
    let cases = [
        (
            TWO_PATHS.replace("legs = [\"a\"]", "legs = [\"a\", \"b\"]"),
            "bearers[0].legs: a path bearer takes exactly 1 leg (got 2)",
        ),
        (
            TWO_PATHS.replace(
                "legs = [\"b\"]",
                "legs = [\"b\"]\nuplink_leg = \"a\"",
            ),
            "bearers[1].uplink_leg: a path bearer's uplink is its own leg's (b), got \"a\"",
        ),
        (
            TWO_PATHS.replacen(
                "[legs.uplink]\nrate = \"unlimited\"\ndelay = { distribution = \"constant\", ms = 7 }\n",
                "",
                1,
            ),
            "bearers[1].legs: a path bearer needs its leg to have an uplink (leg b has none)",
        ),
    ];
    for (text, want) in cases {
        let err = parse(&text, Path::new(".")).unwrap_err();
        assert!(format!("{err:#}").contains(want), "{err:#}");
    }
}

#[test]
fn extra_client_addresses_are_bench_addresses_of_their_own() {
    let with = |addrs: &str| format!("[topology]\nclient_extra_addrs = {addrs}\n{TWO_PATHS}");
    let ok = parse(&with(r#"["198.18.0.3"]"#), Path::new(".")).unwrap();
    assert_eq!(
        ok.topology.client_extra_addrs,
        vec![std::net::Ipv4Addr::new(198, 18, 0, 3)]
    );
    let cases = [
        (
            r#"["10.0.0.3"]"#,
            "topology.client_extra_addrs[0]: must be in 198.18.0.0/15 (got 10.0.0.3)",
        ),
        (
            r#"["198.18.0.2"]"#,
            "topology.client_extra_addrs[0]: 198.18.0.2 is already an address",
        ),
        (
            r#"["198.18.0.3", "198.18.0.3"]"#,
            "topology.client_extra_addrs[1]: 198.18.0.3 is already an address",
        ),
        (
            r#"["198.18.0.3", "198.18.0.4", "198.18.0.5", "198.18.0.6", "198.18.0.7", "198.18.0.8", "198.18.0.9", "198.18.0.10"]"#,
            "topology.client_extra_addrs: must list at most 7 addresses (got 8)",
        ),
    ];
    for (addrs, want) in cases {
        let err = parse(&with(addrs), Path::new(".")).unwrap_err();
        assert!(format!("{err:#}").contains(want), "{addrs}: {err:#}");
    }
}

#[test]
fn packets_lost_on_a_leg_return_their_buffers() {
    let text = r#"
[pdcp]
t_reordering_ms = 10
[[legs]]
name = "a"
[legs.downlink]
rate = "unlimited"
delay = { distribution = "constant", ms = 1 }
loss = { model = "bernoulli", percent = 50 }
"#;
    let mut h = Harness::new(text);
    for i in 0..200u32 {
        h.inject(
            i as Nanos * NS_PER_MS,
            Dir::Down,
            &udp(4433, 5000, i, 100, true),
        );
    }
    h.run_until(400 * NS_PER_MS);
    let rec = h.e.summary(h.now);
    let lost = rec.legs[0].downlink.counters.dropped_loss_packets;
    assert!(lost > 50 && lost < 150, "{lost}");
    assert_eq!(h.written.len() as u64, 200 - lost);
    assert_eq!(
        rec.engine.buffers_in_use, 0,
        "every lost packet's buffer is free again"
    );
}

/// One NR cell leg (numerology 1, 40 MHz, 2 layers, DDDSU) with one device at CQI 15.
fn nr_scenario(harq: &str) -> String {
    let cell = nr40_cell(harq);
    format!(
        r#"
[stats]
interval_ms = 500
[pdcp]
t_reordering_ms = 20
[[legs]]
name = "nr"
[legs.downlink]
delay = {{ distribution = "constant", ms = 5 }}
{cell}
[legs.uplink]
rate = "unlimited"
delay = {{ distribution = "constant", ms = 5 }}
"#
    )
}

#[test]
fn an_nr_cell_leg_carries_its_slots_blocks_and_hands_back_what_harq_loses() {
    use dcemu::cell::{NrCarrier, NrSpec, TddPattern};
    let mut spec = NrSpec::new(1, 40.0, 2);
    spec.tdd = Some(TddPattern::parse("DDDSU").unwrap());
    let carrier = NrCarrier::new(&spec).unwrap();
    // 1 Gbit/s offered for 1 s, above the carrier's 106 PRBs at MCS 27 on 2 layers.
    let capacity_mbps = carrier.mean_bits_per_slot(15) * 2000.0 / 1e6;
    assert!(
        capacity_mbps > 250.0 && capacity_mbps < 400.0,
        "{capacity_mbps}"
    );
    let lossy_um = "harq = { bler = 0.2, max_tx = 1 }\nrlc = { mode = \"um\" }";
    for (harq, lossy) in [("", false), (lossy_um, true)] {
        let mut h = Harness::new(&nr_scenario(harq));
        h.offer_udp(83_000, 12_000);
        h.run_until(1200 * NS_PER_MS);
        let rec = h.e.summary(h.now);
        let cell = rec.legs[0].cell.as_ref().expect("a cell record");
        assert_eq!(
            (cell.rat, cell.tti_us, cell.rbs_per_tti),
            ("nr", 500.0, 106)
        );
        let d = &cell.devices[0].counters;
        assert_eq!(d.cqi, 15);
        // Packets leave at the end of a downlink or special slot, plus 5 ms.
        assert!(h
            .written
            .iter()
            .all(|w| (w.1 - 5 * NS_PER_MS) % 500_000 == 0
                && ((w.1 - 5 * NS_PER_MS) / 500_000) % 5 != 0));
        let bits: f64 = h
            .written
            .iter()
            .filter(|w| w.1 > 200 * NS_PER_MS && w.1 <= 1000 * NS_PER_MS)
            .map(|w| (w.3 + 2) as f64 * 8.0)
            .sum();
        let mbps = bits / 0.8 / 1e6;
        // Default HARQ (BLER 0.1, 4 transmissions): a tenth of the slots resend; with
        // BLER 0.2, no retransmission and RLC UM a fifth of the blocks is lost instead.
        let share = if lossy { 0.8 } else { 0.9 };
        assert!(
            (mbps / (capacity_mbps * share) - 1.0).abs() < 0.03,
            "{harq}: {mbps} of {capacity_mbps}"
        );
        if lossy {
            assert!(d.harq_lost_packets > 1000 && d.harq_retx == 0);
        } else {
            assert!(d.harq_retx > 100 && d.harq_lost_packets < 10);
        }
        // Lost or not, every buffer comes back once the queue drains.
        h.run_until(3000 * NS_PER_MS);
        assert_eq!(h.e.summary(h.now).engine.buffers_in_use, 0, "{harq}");
        let json = serde_json::to_value(&rec).unwrap();
        assert_eq!(json["legs"][0]["cell"]["rat"], "nr");
        assert!(
            json["legs"][0]["cell"]["devices"][0]["harq_failed"]
                .as_u64()
                .unwrap()
                > 0
        );
    }
}

/// What PDCP's reordering sees of the blocks HARQ gives up on (BLER 0.2, one
/// transmission; 150 Mbit/s offered for 1 s, half the carrier): under RLC AM (the
/// default) each comes back about 22 ms later (t-Reassembly 20 ms and a 4-slot round
/// trip), within t-Reordering (100 ms), so nothing is lost and the timer never expires;
/// under RLC UM each is a gap the timer waits out.
#[test]
fn rlc_am_turns_what_harq_gives_up_on_into_late_packets_not_reordering_gaps() {
    let base = "harq = { bler = 0.2, max_tx = 1 }";
    let mut seen = Vec::new();
    for rlc in ["", "rlc = { mode = \"um\" }"] {
        let scenario = nr_scenario(&format!("{base}\n{rlc}"))
            .replace("t_reordering_ms = 20", "t_reordering_ms = 100");
        let mut h = Harness::new(&scenario);
        let n = 12_500u32;
        h.offer_udp(n, 80_000);
        h.run_until(2000 * NS_PER_MS);
        let rec = h.e.summary(h.now);
        let d = rec.legs[0].cell.as_ref().unwrap().devices[0]
            .counters
            .clone();
        let json = serde_json::to_value(&rec).unwrap();
        let expiries = json["bearers"][0]["rx"]["timer_expiries"].as_u64().unwrap();
        seen.push((
            h.written.len() as u32,
            n,
            d.harq_lost_packets,
            d.rlc_retx_packets,
            expiries,
        ));
        assert_eq!(rec.engine.buffers_in_use, 0, "{rlc}");
    }
    let (am, um) = (seen[0], seen[1]);
    assert_eq!(
        (am.0, am.2, am.4),
        (am.1, 0, 0),
        "AM: all delivered, no expiry: {am:?}"
    );
    assert!(am.3 > 2000, "AM resent what HARQ gave up on: {am:?}");
    assert!(
        um.2 > 1000 && um.0 == um.1 - um.2 as u32,
        "UM: lost: {um:?}"
    );
    // A gap every few slots: each expiry (every 100 ms while losses go on) ends many.
    assert!(um.4 >= 8, "UM: t-Reordering waits out the gaps: {um:?}");
}

#[test]
fn split_packets_cross_the_x2_hop_to_a_secondary_leg_and_its_own_bearers_do_not() {
    let text = r#"
[pdcp]
reordering = false
[split]
batch = 2
ratio = [1, 1]
[[legs]]
name = "master"
[legs.downlink]
rate = "unlimited"
delay = { distribution = "constant", ms = 5 }
[[legs]]
name = "secondary"
[legs.downlink]
rate = "unlimited"
delay = { distribution = "constant", ms = 5 }
[legs.x2]
rate = "unlimited"
delay = { distribution = "constant", ms = 7 }
[[bearers]]
name = "dc"
mode = "dc"
match = [{ server_port = 4433 }]
[[bearers]]
name = "sn"
mode = "sc"
legs = ["secondary"]
match = [{ server_port = 4434 }]
"#;
    let mut h = Harness::new(text);
    for i in 0..10u32 {
        h.inject(
            i as Nanos * NS_PER_MS,
            Dir::Down,
            &udp(4433, 5000, i, 100, true),
        );
    }
    h.inject(20 * NS_PER_MS, Dir::Down, &udp(4434, 5000, 100, 100, true));
    h.run_until(100 * NS_PER_MS);
    // A batch of 2 at 1:1 alternates: even sequence numbers on the master (5 ms), odd ones over X2
    // and the secondary (12 ms); the secondary's own bearer takes 5 ms.
    for w in &h.written {
        let sent = if w.2 == 100 { 20 } else { w.2 as Nanos };
        let delay = if w.2 % 2 == 1 && w.2 != 100 { 12 } else { 5 };
        assert_eq!(w.1, (sent + delay) * NS_PER_MS, "{w:?}");
    }
    assert_eq!(h.written.len(), 11);
    let rec = h.e.summary(h.now);
    let x2 = rec.legs[1].x2.as_ref().expect("an X2 record");
    assert_eq!((x2.counters.packets_in, x2.counters.packets_out), (5, 5));
    assert!(rec.legs[0].x2.is_none());
    let json = serde_json::to_value(&rec).unwrap();
    assert!(json["legs"][0].get("x2").is_none() && json["legs"][1]["x2"]["packets_out"] == 5);
    assert_eq!(rec.engine.buffers_in_use, 0);
}
