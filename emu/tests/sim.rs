//! The simulation driver: the unchanged engine with modelled endpoints, in virtual time.
//! The controllers here are small stand-ins; the real ones (aioquic's, Linux's) are
//! tested beside their code in src/model/cc/.

use std::path::Path;

use dcemu::base::time::Nanos;
use dcemu::config::{default_toml, parse};
use dcemu::model::cc::{Acked, CcKind, Controller};
use dcemu::model::rtt::RttEstimator;
use dcemu::sim::{parse_workload, run, SimSummary, Transport, DEFAULT_HORIZON_S};

/// A fixed window: no reaction to loss (what the sender does is then the model alone).
struct Fixed(u64);

impl Controller for Fixed {
    fn on_sent(&mut self, _: Nanos, _: u64, _: u64) {}
    fn on_acked(&mut self, _: Nanos, _: &Acked, _: &RttEstimator, _: u64) {}
    fn on_lost(&mut self, _: Nanos, _: Nanos, _: u64, _: u64) {}
    fn on_persistent_congestion(&mut self, _: Nanos) {}
    fn window(&self) -> u64 {
        self.0
    }
    fn in_slow_start(&self) -> bool {
        false
    }
}

fn fixed(window: u64) -> impl Fn(CcKind, Transport, u64) -> Box<dyn Controller> {
    move |_, _, _| Box::new(Fixed(window))
}

fn simulate(seed: u64, workload: &str, window: u64) -> (SimSummary, Vec<u8>) {
    let text = default_toml().replacen("seed = 1\n", &format!("seed = {seed}\n"), 1);
    let s = parse(&text, Path::new(".")).expect("scenario");
    let w = parse_workload(workload).expect("workload");
    let mut out = Vec::new();
    let c = fixed(window);
    let sum = run(&s, &w, &c, &mut out).expect("simulation");
    (sum, out)
}

const ONE_FLOW: &str = "[[flow]]\nname = \"dc\"\ntransport = \"quic\"\nserver_port = 4433\nsize = 5000000\nrmem = 33554432\n";

#[test]
fn a_quic_download_fills_both_legs_and_the_records_say_so() {
    // Default scenario: two 20 Mbit/s legs, 10 ms each way, batch 100. A window of 120
    // packets covers the path (about 80 packets) without overflowing a leg's queue of 100:
    // goodput near the 40 Mbit/s minus QUIC's and IP's overhead (1215 stream bytes per
    // 1280-byte packet).
    let (sum, out) = simulate(1, ONE_FLOW, 120 * 1252);
    let f = &sum.flows[0];
    assert_eq!(f.bytes, 5_000_000);
    assert!(f.done_ms.is_some());
    assert!(
        f.goodput_mbps > 30.0 && f.goodput_mbps < 40.0 * 1215.0 / 1280.0,
        "{}",
        f.goodput_mbps
    );
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines.iter().filter(|l| l["type"] == "interval").count() >= 5,
        "a record per interval"
    );
    let summary = lines
        .iter()
        .find(|l| l["type"] == "summary")
        .expect("the engine's summary");
    let legs = summary["legs"].as_array().unwrap();
    let bytes: Vec<f64> = legs
        .iter()
        .map(|l| l["downlink"]["bytes_out"].as_f64().unwrap_or(0.0))
        .collect();
    assert!(
        bytes.iter().all(|&b| b > 2.0e6),
        "both legs carried the flow: {bytes:?}"
    );
    assert_eq!(lines.last().unwrap()["type"], "sim");
    // The reorder-wait histogram is cumulative: its buckets only in the summary record.
    let wait = |l: &serde_json::Value| l["bearers"][0]["rx"]["wait"].clone();
    let interval = lines.iter().find(|l| l["type"] == "interval").unwrap();
    assert!(wait(interval)["p99_us"].is_number());
    assert!(wait(interval).get("buckets").is_none());
    assert!(!wait(summary)["buckets"].as_array().unwrap().is_empty());
}

#[test]
fn a_flow_acts_on_its_own_events_only() {
    // Ten times more stats records give the engine ten times more instants; a sender
    // polled at those (as a loop polling every endpoint at every instant does) would
    // pace differently. aioquic transmits after a datagram or its own timer, so the flow
    // must not change. A window of 400 packets is above the path's, so the pacer, not
    // the window, decides when packets leave (with 200 both loops agree).
    let run_with = |interval_ms: &str| {
        let text = default_toml().replacen(
            "interval_ms = 100.0",
            &format!("interval_ms = {interval_ms}"),
            1,
        );
        let s = parse(&text, Path::new(".")).expect("scenario");
        let w = parse_workload(ONE_FLOW).expect("workload");
        let mut out = Vec::new();
        run(&s, &w, &fixed(400 * 1252), &mut out).expect("simulation")
    };
    let (a, b) = (run_with("100.0"), run_with("10.0"));
    assert!(b.instants > a.instants, "{} {}", a.instants, b.instants);
    let f = |s: &SimSummary| {
        let f = &s.flows[0];
        (f.bytes, f.done_ms, f.packets_sent, f.packets_lost)
    };
    assert_eq!(f(&a), f(&b));
}

#[test]
fn the_same_seed_gives_the_same_records() {
    let (_, a) = simulate(1, ONE_FLOW, 300 * 1252);
    let (_, b) = simulate(1, ONE_FLOW, 300 * 1252);
    let strip = |v: &[u8]| -> Vec<String> {
        // The summary line's wall time is the one thing that may differ.
        String::from_utf8(v.to_vec())
            .unwrap()
            .lines()
            .filter(|l| !l.contains("\"type\":\"sim\""))
            .map(String::from)
            .collect()
    };
    assert_eq!(strip(&a), strip(&b));
    let (_, c) = simulate(99, ONE_FLOW, 300 * 1252);
    assert_ne!(strip(&a), strip(&c), "jitter draws depend on the seed");
}

#[test]
fn a_small_receive_buffer_drops_packets_a_slow_application_has_not_read() {
    // 40 kB of buffer read at 400 µs per packet (about 25 Mbit/s) behind 40 Mbit/s of
    // legs: the host drops, the sender detects the losses and still delivers everything.
    let w = "[[flow]]\nname = \"dc\"\ntransport = \"quic\"\nserver_port = 4433\nsize = 2000000\nrmem = 40000\napp_packet_us = 400\n";
    let (sum, _) = simulate(1, w, 200 * 1252);
    let f = &sum.flows[0];
    assert!(f.host_drops > 0, "{f:?}");
    assert!(
        f.packets_lost >= f.host_drops / 2,
        "the sender saw them as losses: {f:?}"
    );
    assert_eq!(f.bytes, 2_000_000);
    assert!(
        f.goodput_mbps < 26.0,
        "the application's rate bounds it: {}",
        f.goodput_mbps
    );
}

#[test]
fn a_tcp_download_with_linux_reno_completes_over_both_legs() {
    // The real Linux Reno and the TCP model: 5 MB over the default scenario.
    let text = default_toml();
    let s = parse(&text, Path::new(".")).expect("scenario");
    let w = parse_workload("[[flow]]\nname = \"dc\"\ntransport = \"tcp\"\ncc = \"reno\"\nserver_port = 4433\nsize = 5000000\nmss = 1268\nrmem = 6291456\n")
        .expect("workload");
    let controllers =
        |kind, _t, mss| dcemu::model::cc::build(kind, dcemu::model::cc::Flavor::Linux, mss);
    let mut out = Vec::new();
    let sum = run(&s, &w, &controllers, &mut out).expect("simulation");
    let f = &sum.flows[0];
    assert_eq!((f.transport, f.bytes), ("tcp", 5_000_000));
    assert!(
        f.goodput_mbps > 20.0 && f.goodput_mbps < 40.0 * 1268.0 / 1320.0,
        "{f:?}"
    );
}

#[test]
fn without_a_duration_a_flow_that_cannot_finish_stops_at_the_horizon() {
    // Every downlink packet lost: no flow can complete. Without a duration `sim` used to
    // run on forever (the stats timer always had a next deadline).
    let lossy = "[[legs]]\nname = 'leg1'\n[legs.downlink]\n\
                 loss = { model = 'bernoulli', percent = 100 }\n[legs.uplink]\n";
    let s = parse(lossy, Path::new(".")).expect("scenario");
    let c = fixed(120 * 1252);
    let horizon_ms = DEFAULT_HORIZON_S as f64 * 1e3;
    for (transport, start_s) in [("quic", 0.0), ("tcp", 0.0), ("quic", 100.0)] {
        let text = format!(
            "[[flow]]\nname = \"x\"\ntransport = \"{transport}\"\nserver_port = 4433\n\
             size = 100000\nstart_s = {start_s}\n"
        );
        let w = parse_workload(&text).expect("workload");
        assert_eq!(w.duration, None);
        let sum = run(&s, &w, &c, &mut std::io::sink()).expect("simulation");
        // The horizon counts from the last flow's start.
        assert_eq!(sum.ended, "horizon", "{transport}");
        assert_eq!(sum.t_ms, start_s * 1e3 + horizon_ms, "{transport}");
        assert_eq!(sum.flows[0].done_ms, None);
        assert_eq!(sum.flows[0].bytes, 0);
        // A duration given ends it there, as before.
        let w = parse_workload(&format!("duration_s = 2\n{text}")).expect("workload");
        let sum = run(&s, &w, &c, &mut std::io::sink()).expect("simulation");
        assert_eq!((sum.ended, sum.t_ms), ("duration", 2000.0));
    }
    // A flow that completes ends the simulation before any horizon.
    let (sum, _) = simulate(1, ONE_FLOW, 120 * 1252);
    assert_eq!(sum.ended, "done");
    assert!(sum.t_ms < 10_000.0, "{}", sum.t_ms);
}

#[test]
fn a_segment_larger_than_the_mtu_is_refused_before_anything_runs() {
    let s = parse(&default_toml(), Path::new(".")).expect("scenario");
    let controllers =
        |kind, _t, mss| dcemu::model::cc::build(kind, dcemu::model::cc::Flavor::Linux, mss);
    for (transport, field, want) in [
        (
            "tcp",
            "mss = 1449",
            "mss 1449 + 52 (IP, TCP and timestamps) exceeds the scenario's MTU 1500",
        ),
        (
            "quic",
            "datagram = 1473",
            "datagram 1473 + 28 exceeds the scenario's MTU 1500",
        ),
    ] {
        let w = parse_workload(&format!(
            "[[flow]]\nname = \"dc\"\ntransport = \"{transport}\"\nserver_port = 4433\nsize = 1000\n{field}\n"
        ))
        .expect("workload");
        let mut out = Vec::new();
        let e = run(&s, &w, &controllers, &mut out).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
        assert!(out.is_empty(), "nothing written");
    }
    // The largest that fit run.
    let w = parse_workload(
        "[[flow]]\nname = \"dc\"\ntransport = \"tcp\"\nserver_port = 4433\nsize = 1000\nmss = 1448\n",
    )
    .expect("workload");
    run(&s, &w, &controllers, &mut Vec::new()).expect("mss 1448 fits 1500");
}
