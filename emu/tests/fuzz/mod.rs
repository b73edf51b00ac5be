//! Random input for dcemu's readers, shared by the fuzz passes (`bad_input.rs`,
//! `fuzz_endc.rs`): TOML values of every size and form, text with odd characters put in,
//! templates with numbered slots, and an engine driven for a while in virtual time.
#![allow(dead_code)]

use std::path::Path;

use dcemu::base::time::{Nanos, NS_PER_MS};
use dcemu::engine::{Dir, Engine, Output};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// Deterministic runner: the same cases on every run, nothing written to disk.
pub fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

/// A TOML value as text: mostly numbers of every size and form, some strings.
pub fn toml_value() -> impl Strategy<Value = String> {
    let float = any::<f64>().prop_map(|v| {
        if v.is_nan() {
            "nan".to_string()
        } else if v.is_infinite() {
            if v > 0.0 { "inf" } else { "-inf" }.to_string()
        } else {
            format!("{v:?}")
        }
    });
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        (-3i64..20).prop_map(|v| v.to_string()),
        float,
        (0.0f64..2000.0).prop_map(|v| format!("{v:?}")),
        "[0-9]{1,25}",
        "-[0-9]{1,25}",
        "[0-9]{1,3}e[0-9]{1,3}",
        prop::sample::select(vec![
            "18446744073709551615",
            "18446744073709551616",
            "9223372036854775807",
            "-9223372036854775809",
            "4294967295",
            "4294967296",
            "65536",
            "1e400",
            "1e-400",
            "5e-324",
            "1.7976931348623157e308",
            "3600000.000001",
            "0.0",
            "-0.0",
            "'inf'",
            "'unlimited'",
            "'1e30 Gbit/s'",
            "'1e3mbit'",
            "'-5 kbit'",
            "'nan mbit'",
            "'8000-8001'",
            "'9-1'",
            "''",
        ])
        .prop_map(|s| s.to_string()),
    ]
}

/// Characters put into valid values: multi-byte UTF-8 ('µ', 'é', '€', an emoji, a combining
/// accent, a byte-order mark, a right-to-left override, CJK), controls and punctuation.
pub const ODD: &[&str] = &[
    "µ", "é", "€", "😀", "\u{301}", "\u{feff}", "\u{202e}", "ß", "Ω", "中", "\u{0}", "\t", " ",
    "-", "/", ".", "%", "\\", "\"", "'",
];

/// Where to put which [`ODD`] characters into a value (1 to 3 of them).
pub fn insertions() -> impl Strategy<Value = Vec<(prop::sample::Index, &'static str)>> {
    proptest::collection::vec(
        (any::<prop::sample::Index>(), prop::sample::select(ODD)),
        1..4,
    )
}

/// `s` with the `ins` characters put in at character boundaries.
pub fn insert(s: &str, ins: &[(prop::sample::Index, &str)]) -> String {
    let mut s = s.to_string();
    for (at, c) in ins {
        let bounds: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
        s.insert_str(bounds[at.index(bounds.len())], c);
    }
    s
}

/// Text for a string field: valid words with [`ODD`] characters put in, random strings of
/// any characters, and the words themselves.
pub fn text() -> impl Strategy<Value = String> {
    const WORDS: &[&str] = &[
        "20mbit",
        "1.5 Gbit/s",
        "unlimited",
        "inf",
        "leg1",
        "leg2",
        "dc",
        "sc",
        "dup",
        "udp",
        "tcp",
        "6",
        "1000-2000",
        "198.18.0.0/15",
        "198.18.0.1",
        "csv",
        "mahimahi",
        "DL_bitrate",
        "uplink",
        "downlink",
        "normal",
        "pareto",
        "bernoulli",
        "none",
        "after-rate",
        "pf",
        "rr",
        "rayleigh",
        "dclab-server",
        "dcemu-s",
        "quic",
        "reno",
        "cubic",
        "bbr",
        "aioquic-1.7",
        "nr",
        "lte",
        "static",
        "ddds",
        "delay-aware",
        "delay-target",
        "qam256",
        "qam64",
        "DDDSU",
        "DDDDDDDSUU",
        "am",
        "um",
        "release",
        "add",
        "change",
        "forward",
        "lose",
        "1gbit",
        "",
    ];
    let word = prop::sample::select(WORDS);
    prop_oneof![
        4 => (word.clone(), insertions()).prop_map(|(w, ins)| insert(w, &ins)),
        2 => any::<String>(),
        2 => "[0-9a-zµé€😀\u{301}./-]{0,16}",
        1 => word.prop_map(str::to_string),
    ]
}

/// [`text`] as a TOML string (escaped as TOML needs).
pub fn toml_text() -> impl Strategy<Value = String> {
    text().prop_map(|s| toml::Value::String(s).to_string())
}

/// The makings of a value for a slot of a template; [`pick`] chooses.
pub type SlotValue = (String, String, Vec<(prop::sample::Index, &'static str)>, u8);

pub fn slot_value() -> impl Strategy<Value = SlotValue> {
    (toml_value(), toml_text(), insertions(), 0u8..10)
}

/// Runs a parsed scenario's engine for a while in virtual time, with traffic both ways.
pub fn drive(s: &dcemu::config::Scenario) {
    let Ok(mut e) = Engine::new(s, 2048) else {
        return;
    };
    let mut pkt = vec![0u8; 200];
    pkt[0] = 0x45;
    pkt[2..4].copy_from_slice(&200u16.to_be_bytes());
    pkt[9] = 17;
    pkt[12..16].copy_from_slice(&[198, 18, 0, 1]);
    pkt[16..20].copy_from_slice(&[198, 18, 0, 2]);
    pkt[20..22].copy_from_slice(&4433u16.to_be_bytes());
    let horizon: Nanos = 3_000 * NS_PER_MS;
    let mut steps = 0;
    let mut run_until = |e: &mut Engine, t: Nanos| {
        while let Some(d) = e.next_deadline().filter(|&d| d <= t) {
            e.advance(d);
            steps += 1;
            assert!(steps < 200_000, "engine does not settle");
            while let Some(Output { id, .. }) = e.outputs().pop_front() {
                e.release(id);
            }
        }
        e.advance(t);
        while let Some(Output { id, .. }) = e.outputs().pop_front() {
            e.release(id);
        }
    };
    for i in 0..40u64 {
        let now = i * 7 * NS_PER_MS;
        run_until(&mut e, now);
        let dir = if i % 4 == 3 { Dir::Up } else { Dir::Down };
        if let Some(id) = e.alloc_buffer() {
            e.pool_mut().slot_mut(id)[..pkt.len()].copy_from_slice(&pkt);
            e.ingress(now, dir, id, pkt.len());
        }
    }
    run_until(&mut e, horizon);
    let _ = e.summary(horizon);
}

/// The value of a slot (valid: `default`) from `v`. A string field (`is_text`) mostly gets
/// its own valid value with odd characters put in, or any text; a numeric one mostly a
/// number; now and then each gets the other kind.
pub fn pick(is_text: bool, default: &str, v: &SlotValue) -> String {
    let (number, text, ins, roll) = v;
    let mutated = || {
        let plain = default.trim_matches(|c| c == '\'' || c == '"');
        toml::Value::String(insert(plain, ins)).to_string()
    };
    match (is_text, roll) {
        (true, 0..=4) | (false, 8) => mutated(),
        (true, 5..=7) | (false, 9) => text.clone(),
        _ => number.clone(),
    }
}

/// `template` with each slot `@i@` filled by `v(i)`; each value is put in as it is, once.
pub fn fill(template: &str, v: &dyn Fn(usize) -> String) -> String {
    let mut out = String::new();
    let mut parts = template.split('@');
    out.push_str(parts.next().unwrap());
    while let (Some(i), Some(rest)) = (parts.next(), parts.next()) {
        out.push_str(&v(i.parse().unwrap()));
        out.push_str(rest);
    }
    out
}

/// Parses `text`: a valid scenario is driven (returns true), an invalid one must be refused
/// in one line of bounded length.
pub fn parse_or_refuse(text: &str) -> Result<bool, TestCaseError> {
    match dcemu::config::parse(text, Path::new(".")) {
        Ok(s) => {
            drive(&s);
            Ok(true)
        }
        Err(e) => {
            let msg = format!("{e:#}");
            prop_assert!(!msg.is_empty() && !msg.contains('\n'), "{msg}");
            prop_assert!(msg.chars().count() < 800, "{msg}");
            Ok(false)
        }
    }
}
