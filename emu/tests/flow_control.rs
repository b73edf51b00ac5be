//! Flow-controlled splits in the whole core, in virtual time: an LTE master and an NR
//! secondary cell behind an X2 hop, loaded with UDP at a constant rate (no transport
//! reacting), so that where the split puts each packet is all that differs.

mod harness;

use dcemu::base::time::{Nanos, NS_PER_MS, NS_PER_S};
use dcemu::engine::{Dir, Record};
use harness::{nr40_cell, udp, Harness};

const MS: Nanos = NS_PER_MS;

fn endc(split: &str) -> String {
    endc_with("reordering = false", split)
}

/// The same cells with the `[pdcp]` table's lines given.
fn endc_with(pdcp: &str, split: &str) -> String {
    let nr = nr40_cell("");
    format!(
        r#"
[stats]
interval_ms = 10
[pdcp]
{pdcp}
[split]
batch = 20
{split}
[[legs]]
name = "lte"
[legs.downlink]
delay = {{ distribution = "constant", ms = 10 }}
[legs.downlink.cell]
bandwidth_mhz = 20
scheduler = "rr"
[[legs.downlink.cell.devices]]
mean_sinr_db = 25
fading = "none"
queue_bytes = 1000000
[legs.uplink]
rate = "unlimited"
[[legs]]
name = "nr"
[legs.downlink]
delay = {{ distribution = "constant", ms = 5 }}
{nr}
[legs.x2]
rate = "unlimited"
delay = {{ distribution = "constant", ms = 5 }}
"#
    )
}

/// What a run shows of each cell over its second half.
#[derive(Debug)]
struct Outcome {
    /// Per leg: Mbit/s out of the cell, packets dropped at its queue.
    mbps: [f64; 2],
    dropped: [u64; 2],
    /// The NR cell's queue: mean and peak bytes over the records.
    nr_queue_mean: f64,
    nr_queue_peak: u64,
    /// Of everything offered, the share delivered.
    delivered: f64,
    summary: Record,
    records: Vec<Record>,
}

/// Offers `mbps` of 1500-byte packets for 2 s.
fn run(split: &str, mbps: f64) -> Outcome {
    run_on(&endc(split), mbps)
}

fn run_on(scenario: &str, mbps: f64) -> Outcome {
    let mut h = Harness::new(scenario);
    let gap = (1500.0 * 8.0 / (mbps * 1e6) * NS_PER_S as f64) as Nanos;
    let n = (2 * NS_PER_S / gap) as u32;
    let mut records = Vec::new();
    for i in 0..n {
        h.inject(i as Nanos * gap, Dir::Down, &udp(4433, 5000, i, 1500, true));
        records.extend(h.e.take_records());
    }
    h.run_until(2500 * MS);
    records.extend(h.e.take_records());
    let half: Vec<&Record> = records
        .iter()
        .filter(|r| r.t_ms > 1000.0 && r.t_ms <= 2000.0)
        .collect();
    let dev = |r: &Record, leg: usize| {
        r.legs[leg].cell.as_ref().unwrap().devices[0]
            .counters
            .clone()
    };
    let (first, last) = (half[0], half[half.len() - 1]);
    let span_s = (last.t_ms - first.t_ms) / 1000.0;
    let rate = |leg: usize| {
        (dev(last, leg).bytes_out - dev(first, leg).bytes_out) as f64 * 8.0 / span_s / 1e6
    };
    let queues: Vec<u64> = half.iter().map(|r| dev(r, 1).queue_bytes).collect();
    let (nr_queue_mean, nr_queue_peak) = (
        queues.iter().sum::<u64>() as f64 / queues.len() as f64,
        *queues.iter().max().unwrap(),
    );
    let summary = h.e.summary(h.now);
    Outcome {
        mbps: [rate(0), rate(1)],
        dropped: [0, 1].map(|l| dev(&summary, l).dropped_packets),
        nr_queue_mean,
        nr_queue_peak,
        delivered: h.written.len() as f64 / n as f64,
        summary,
        records,
    }
}

/// Offered 300 Mbit/s against an LTE cell of 66.7 Mbit/s and an NR cell of about 270
/// (its 300 less a tenth resent by HARQ): `ddds` keeps the NR cell busy with its queue
/// near its target (10 ms at its rate) and loses nothing; a static half starves the NR
/// cell while the LTE cell's queue overflows; a static 5:95 overflows the NR cell's.
#[test]
fn ddds_keeps_the_secondary_busy_near_its_target_where_static_splits_starve_or_overflow_it() {
    let nr_heavy = run("ratio = [5, 95]", 300.0);
    // The NR cell's capacity as a saturated queue shows it.
    let nr_capacity = nr_heavy.mbps[1];
    assert!(nr_capacity > 250.0 && nr_capacity < 290.0, "{nr_heavy:?}");
    assert!(
        nr_heavy.dropped[1] > 100,
        "5:95 overflows the NR queue: {nr_heavy:?}"
    );
    assert!(nr_heavy.nr_queue_peak > 2_900_000, "{nr_heavy:?}");

    let ddds = run("policy = \"ddds\"", 300.0);
    assert_eq!(ddds.dropped, [0, 0], "{ddds:?}");
    assert!(ddds.delivered > 0.995, "{ddds:?}");
    assert!(
        ddds.mbps[1] > 0.97 * nr_capacity,
        "the NR cell stays busy: {ddds:?}"
    );
    let target = nr_capacity * 1e6 / 8.0 * 0.010;
    assert!(
        ddds.nr_queue_mean > 0.4 * target && ddds.nr_queue_mean < 1.5 * target,
        "the NR queue near {target} bytes: {ddds:?}"
    );
    assert!(ddds.nr_queue_peak < (3.0 * target) as u64, "{ddds:?}");
    // A report every 10 ms, the last still on the X2 hop.
    let json = serde_json::to_value(&ddds.summary).unwrap();
    let flow = &json["bearers"][0]["flow"];
    assert_eq!(flow["policy"], "ddds");
    let nr = &flow["secondaries"][0];
    assert_eq!(
        (nr["leg"].as_str(), nr["reports_made"].as_u64()),
        (Some("nr"), Some(250))
    );
    assert_eq!(nr["reports_received"], 249);

    let half = run("ratio = [1, 1]", 300.0);
    assert!(
        half.mbps[1] < 0.7 * nr_capacity,
        "a half starves the NR cell: {half:?}"
    );
    assert!(
        half.dropped[0] > 10_000,
        "and overflows the LTE cell: {half:?}"
    );
}

/// The same load under `delay-aware`: both cells carry (the LTE cell at its capacity) and
/// the NR queue stays short, with nothing lost.
#[test]
fn delay_aware_uses_both_cells_with_short_queues() {
    let o = run("policy = \"delay-aware\"", 300.0);
    assert_eq!(o.dropped, [0, 0], "{o:?}");
    assert!(o.delivered > 0.995, "{o:?}");
    assert!(o.mbps[0] > 60.0 && o.mbps[1] > 200.0, "{o:?}");
    assert!(o.nr_queue_mean < 100_000.0, "{o:?}");
    let json = serde_json::to_value(&o.summary).unwrap();
    assert_eq!(json["bearers"][0]["flow"]["policy"], "delay-aware");
}

/// A static split has no flow record, and refuses to change under flow control.
#[test]
fn a_static_split_has_no_flow_record() {
    let o = run("ratio = [1, 3]", 20.0);
    let json = serde_json::to_value(&o.summary).unwrap();
    assert!(json["bearers"][0].get("flow").is_none());
}

/// The NR cell's bytes out, and the PDUs the split sent it, between two instants (ms), from
/// the 10 ms records.
fn nr_between(o: &Outcome, from_ms: f64, to_ms: f64) -> (u64, u64) {
    let at = |t: f64| {
        let r = o
            .records
            .iter()
            .find(|r| (r.t_ms - t).abs() < 0.5)
            .expect("a record");
        let out = r.legs[1].cell.as_ref().unwrap().devices[0]
            .counters
            .bytes_out;
        (out, r.bearers[0].tx_pdus[1].1)
    };
    let (a, b) = (at(from_ms), at(to_ms));
    (b.0 - a.0, b.1 - a.1)
}

fn change(buffered: &str) -> String {
    format!(
        "policy = \"ddds\"\n[[schedule]]\nat_ms = 1000\nleg = \"nr\"\n\
         secondary = {{ event = \"change\", interruption_ms = 100, buffered = \"{buffered}\" }}\n"
    )
}

/// A secondary node change at 1 s interrupts the NR leg for 100 ms: the split sends it
/// nothing and it serves nothing (its queue went with the old node), then it resumes as a
/// new secondary; what it held is forwarded to the new node, or lost.
#[test]
fn a_secondary_change_interrupts_the_leg_and_resumes_it() {
    let o = run(&change("forward"), 300.0);
    let (before, sent_before) = nr_between(&o, 900.0, 1000.0);
    assert!(
        before > 3_000_000 && sent_before > 1500,
        "{before} {sent_before}"
    );
    // The blocks in the air when it left (HARQ) may land in the first slots.
    let (during, sent_during) = nr_between(&o, 1010.0, 1100.0);
    assert_eq!((during, sent_during), (0, 0));
    let (after, sent_after) = nr_between(&o, 1100.0, 1200.0);
    assert!(
        after > 3_000_000 && sent_after > 2000,
        "{after} {sent_after}"
    );
    let json = serde_json::to_value(&o.summary).unwrap();
    let sn = &json["legs"][1]["secondary"];
    assert_eq!(
        (sn["state"].as_str(), sn["changes"].as_u64()),
        (Some("active"), Some(1))
    );
    assert_eq!(sn["interrupted_ms"], 100.0);
    let forwarded = sn["forwarded_packets"].as_u64().unwrap();
    // It held its queue near its target, 10 ms at its rate (about 340 kB): hundreds.
    assert!(forwarded > 100, "{sn}");
    assert_eq!(sn["lost_packets"], 0);
    assert!(json["legs"][0].get("secondary").is_none());
    // Forwarded, nothing is lost on the NR side; the LTE cell alone overflowed meanwhile.
    assert_eq!(o.dropped[1], 0);

    let lost = run(&change("lose"), 300.0);
    let json = serde_json::to_value(&lost.summary).unwrap();
    let sn = &json["legs"][1]["secondary"];
    assert_eq!(sn["forwarded_packets"], 0);
    assert!(sn["lost_packets"].as_u64().unwrap() > 100, "{sn}");
    assert!(lost.delivered < o.delivered);
    assert_eq!(
        lost.summary.engine.buffers_in_use, 0,
        "lost packets' buffers come back"
    );
}

/// A release sends everything on the master's leg until the secondary is added again.
#[test]
fn a_released_secondary_carries_nothing_until_added() {
    let split = "ratio = [1, 1]\n[[schedule]]\nat_ms = 500\nleg = \"nr\"\n\
                 secondary = { event = \"release\" }\n[[schedule]]\nat_ms = 1500\nleg = \"nr\"\n\
                 secondary = { event = \"add\" }\n";
    let o = run(split, 50.0);
    assert!(nr_between(&o, 400.0, 500.0).1 > 100);
    assert_eq!(nr_between(&o, 510.0, 1500.0), (0, 0));
    assert!(nr_between(&o, 1500.0, 1600.0).1 > 100);
    let json = serde_json::to_value(&o.summary).unwrap();
    let sn = &json["legs"][1]["secondary"];
    assert_eq!(
        (sn["releases"].as_u64(), sn["additions"].as_u64()),
        (Some(1), Some(1))
    );
    // The split's tx_pdus count where PDUs went: the master took the secondary's half.
    let tx = &o.summary.bearers[0].tx_pdus;
    assert!(tx[0].1 > 3 * tx[1].1, "{tx:?}");
}

/// The PDCP receiver's and the hold's counters in a run's summary.
fn counters(o: &Outcome) -> (serde_json::Value, serde_json::Value) {
    let json = serde_json::to_value(&o.summary).unwrap();
    let b = &json["bearers"][0];
    (b["rx"].clone(), b["hold"].clone())
}

/// Offered 400 Mbit/s, more than the two cells' 337 together, with reordering on.
/// `delay-target` keeps both cells busy, each queue within its 10 ms (the LTE cell's too),
/// and drops the excess in the master's PDCP before it is numbered: the receiver never
/// waits on a gap. `ddds` sends the excess to the LTE cell, whose queue overflows after
/// numbering, and each drop there is a gap that t-Reordering waits out.
#[test]
fn delay_target_keeps_both_queues_within_target_and_drops_before_numbering() {
    let pdcp = "reordering = true\nt_reordering_ms = 100";
    let nr_capacity = run("ratio = [5, 95]", 300.0).mbps[1];
    let lte_capacity = run("ratio = [1, 1]", 300.0).mbps[0];
    let o = run_on(&endc_with(pdcp, "policy = \"delay-target\""), 400.0);
    assert_eq!(o.dropped, [0, 0], "no cell queue overflows");
    assert!(
        o.mbps[0] > 0.95 * lte_capacity && o.mbps[1] > 0.95 * nr_capacity,
        "both cells busy ({lte_capacity:.1}, {nr_capacity:.1}): {:?}",
        o.mbps
    );
    // Near 10 ms at the NR cell's rate. Above it by the spread of the per-period rate
    // estimate the prediction drains by (HARQ and TDD make one period's 253 where the
    // run's is 270): here a mean 17 % over, a peak 61 %.
    let target = nr_capacity * 1e6 / 8.0 * 0.010;
    let (mean, peak) = (o.nr_queue_mean, o.nr_queue_peak);
    assert!(
        mean > 0.5 * target && mean < 1.25 * target,
        "NR queue mean {mean} against {target}"
    );
    assert!(
        peak < (2.0 * target) as u64,
        "NR queue peak {peak} against {target}"
    );
    let lte_queue_peak = o
        .records
        .iter()
        .filter(|r| r.t_ms > 1000.0)
        .map(|r| {
            r.legs[0].cell.as_ref().unwrap().devices[0]
                .counters
                .queue_bytes
        })
        .max()
        .unwrap();
    let lte_target = lte_capacity * 1e6 / 8.0 * 0.010;
    assert!(
        lte_queue_peak < (1.5 * lte_target) as u64,
        "LTE queue {lte_queue_peak}"
    );
    let (rx, hold) = counters(&o);
    assert_eq!(rx["timer_expiries"], 0, "no gap to wait on: {rx}");
    let dropped =
        hold["dropped_full"].as_u64().unwrap() + hold["discarded_timer"].as_u64().unwrap();
    assert!(dropped > 5_000, "the excess dropped unnumbered: {hold}");
    // What was offered is what went out, what was dropped unnumbered, and what is still held.
    let offered = 2 * NS_PER_S / ((1500.0 * 8.0 / 400e6 * NS_PER_S as f64) as Nanos);
    let sent: u64 = o.summary.bearers[0].tx_pdus.iter().map(|t| t.1).sum();
    assert_eq!(
        sent + dropped + hold["held_packets"].as_u64().unwrap(),
        offered,
        "{hold}"
    );

    let ddds = run_on(&endc_with(pdcp, "policy = \"ddds\""), 400.0);
    let (rx, _) = counters(&ddds);
    assert!(
        ddds.dropped[0] > 1000,
        "ddds overflows the LTE queue: {:?}",
        ddds.dropped
    );
    assert!(
        rx["timer_expiries"].as_u64().unwrap() > 10,
        "and opens gaps: {rx}"
    );
}

/// The hold's two bounds: a small hold refuses what does not fit; a short discard timer
/// drops what waited too long. Each counts its own.
#[test]
fn the_hold_drops_by_size_and_by_age() {
    let small = run("policy = \"delay-target\"\nhold_bytes = 30000", 400.0);
    let (_, hold) = counters(&small);
    assert!(hold["dropped_full"].as_u64().unwrap() > 5_000, "{hold}");
    assert_eq!(hold["discarded_timer"], 0, "{hold}");
    assert!(hold["peak_bytes"].as_u64().unwrap() <= 30_000, "{hold}");
    let short = run("policy = \"delay-target\"\ndiscard_ms = 5", 400.0);
    let (_, hold) = counters(&short);
    assert!(hold["discarded_timer"].as_u64().unwrap() > 5_000, "{hold}");
    assert_eq!(hold["dropped_full"], 0, "{hold}");
    assert!(hold["wait"]["max_us"].as_f64().unwrap() <= 5000.0, "{hold}");
    // Below the cells' capacity nothing is dropped.
    let light = run("policy = \"delay-target\"", 200.0);
    let (_, hold) = counters(&light);
    assert_eq!(
        (
            hold["dropped_full"].as_u64(),
            hold["discarded_timer"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert!(light.delivered > 0.995, "{}", light.delivered);
    assert_eq!(
        serde_json::to_value(&light.summary).unwrap()["bearers"][0]["flow"]["policy"],
        "delay-target"
    );
}

/// The cells above under `delay-target` with reordering on (t-Reordering 200 ms), the
/// device whose line `device` (its queue's) names blocked by 40 dB from 1.0 s to 1.3 s.
fn blocked_endc(device: &str, fallback_ms: u32) -> String {
    let blocked = "\nblockage = { periods = [[1.0, 0.3]], loss_db = 40 }";
    endc_with(
        "reordering = true\nt_reordering_ms = 200",
        &format!("policy = \"delay-target\"\nfallback_ms = {fallback_ms}"),
    )
    .replace(device, &format!("{device}{blocked}"))
}

/// The NR cell's device blocked (40 dB: CQI 0, no block at all) from 1.0 s to 1.3 s, the
/// split `delay-target` at 250 Mbit/s offered (below the two cells' 337) with reordering
/// on. Without the outage fallback, what the NR cell held when the fade began is stranded
/// for 300 ms and every PDU the LTE cell delivers meanwhile waits for it until
/// t-Reordering (200 ms) gives up. With it (`outage_ms = 5`) the NR cell reports the
/// outage within 5 ms, the master sends its copies of those PDUs on the LTE cell, and the
/// wait ends within the X2 hop and the LTE queue: t-Reordering never expires. When the
/// fade ends the NR cell serves what it still held (duplicates the receiver discards),
/// reports that it serves again, and the split uses it again.
#[test]
fn an_outage_on_the_secondary_is_bridged_by_the_master_resending_its_copies() {
    let scenario = |fallback_ms: u32| blocked_endc("queue_bytes = 3000000", fallback_ms);
    let rx_of = |o: &Outcome| {
        let json = serde_json::to_value(&o.summary).unwrap();
        (
            json["bearers"][0]["rx"].clone(),
            json["bearers"][0]["flow"]["secondaries"][0].clone(),
        )
    };
    let off = run_on(&scenario(0), 250.0);
    let (rx, flow) = rx_of(&off);
    assert!(
        rx["timer_expiries"].as_u64().unwrap() >= 1
            && rx["wait"]["max_us"].as_f64().unwrap() > 150e3,
        "without the fallback the fade stalls the receiver: {rx}"
    );
    assert_eq!(
        (flow["outages"].as_u64(), flow["resent_packets"].as_u64()),
        (Some(0), Some(0))
    );

    let on = run_on(&scenario(5), 250.0);
    let (rx, flow) = rx_of(&on);
    assert_eq!(rx["timer_expiries"], 0, "{rx}");
    // The copies cross the LTE cell at its rate (what the NR cell held: 10 ms at its rate
    // is about 40 ms at the LTE cell's), after detection (5 ms), the X2 hop (5 ms), the LTE
    // cell's own queue (its 10 ms target, up to half over) and its 10 ms of delay against
    // the NR cell's 5 ms.
    let lte_mbps = run("ratio = [1, 1]", 300.0).mbps[0];
    let resent_ms = flow["resent_bytes"].as_f64().unwrap() * 8.0 / lte_mbps / 1e3;
    let max_ms = rx["wait"]["max_us"].as_f64().unwrap() / 1e3;
    assert!(
        max_ms < resent_ms + 30.0,
        "the wait ends once the copies cross the LTE cell ({resent_ms:.1} ms): {max_ms} ms"
    );
    assert_eq!(flow["outages"], 1, "one fade, one outage: {flow}");
    let resent = flow["resent_packets"].as_u64().unwrap();
    assert!(resent > 20, "{flow}");
    assert!(
        !flow["outage"].as_bool().unwrap(),
        "the NR cell is in use again: {flow}"
    );
    // What the NR cell still held, served when the fade ended, is discarded as it leaves
    // the leg: the originals of what was sent again never reach the receiver (one held past
    // half the SN space would desynchronise it), so it sees no duplicate and nothing late.
    let stranded = flow["stranded_discarded"].as_u64().unwrap();
    assert!(stranded > 0 && stranded <= resent, "{flow}");
    let dup = rx["discarded_duplicate"].as_u64().unwrap() + rx["discarded_late"].as_u64().unwrap();
    assert_eq!(dup, 0, "{rx}");
    // After the fade the NR cell carries again (1.4-2.0 s).
    let (bytes, _) = nr_between(&on, 1400.0, 2000.0);
    assert!(
        bytes as f64 * 8.0 / 0.6 / 1e6 > 100.0,
        "NR after the fade: {bytes} bytes"
    );
    // The copies take the LTE cell's time from new PDUs: the fallback buys the receiver's
    // wait, not throughput (here 0.931 of the offered load delivered against 0.935).
    assert!(
        (on.delivered - off.delivered).abs() < 0.02,
        "{} against {}",
        on.delivered,
        off.delivered
    );
    assert_eq!(
        on.summary.engine.buffers_in_use as usize, 0,
        "copies freed once served"
    );
}

/// The LTE master's own device blocked (40 dB) from 1.0 s to 1.3 s, otherwise as above.
/// The master sees its own leg stall at once: with the fallback it sends its copies of what
/// the LTE cell holds to the NR cell and places nothing new there until the LTE cell
/// serves again, so the receiver never waits for t-Reordering; without it, it does.
#[test]
fn an_outage_on_the_masters_own_leg_is_bridged_by_the_secondary() {
    let scenario = |fallback_ms: u32| blocked_endc("queue_bytes = 1000000", fallback_ms);
    let of = |o: &Outcome| {
        let json = serde_json::to_value(&o.summary).unwrap();
        let b = &json["bearers"][0];
        (b["rx"].clone(), b["flow"]["master_fallback"].clone())
    };
    let (rx, fb) = of(&run_on(&scenario(0), 250.0));
    assert!(
        rx["timer_expiries"].as_u64().unwrap() >= 1,
        "without the fallback the LTE fade stalls the receiver: {rx}"
    );
    assert_eq!(fb["outages"], 0, "{fb}");
    let on = run_on(&scenario(5), 250.0);
    let (rx, fb) = of(&on);
    assert_eq!(rx["timer_expiries"], 0, "{rx}");
    assert_eq!(fb["outages"], 1, "one fade, one outage: {fb}");
    // What the LTE cell held when it faded (the split keeps its queue within target).
    assert!(fb["resent_packets"].as_u64().unwrap() > 0, "{fb}");
    assert_eq!(fb["outage"], false, "the LTE cell is in use again: {fb}");
    // What the LTE cell held (its 10 ms target at 66.7 Mbit/s, about 83 kB) crosses the
    // X2 hop and the NR cell's short queue: the wait ends within tens of ms.
    let max_ms = rx["wait"]["max_us"].as_f64().unwrap() / 1e3;
    assert!(max_ms < 60.0, "{max_ms} ms: {rx}");
    assert_eq!(
        on.summary.engine.buffers_in_use, 0,
        "copies freed once served"
    );
}
