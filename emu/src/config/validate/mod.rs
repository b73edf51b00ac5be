//! Validation: range and cross-reference checks on a parsed [`ScenarioFile`], producing the
//! [`Scenario`] model. Every error names the offending field and what is allowed.
//!
//! [`validate()`] goes section by section: the topology and PDCP here, the legs and
//! their links in [`links`], the bearers, their splits, match rules and cell devices in
//! [`bearers`], the schedule in [`schedule`]; [`names`] holds the name and address rules.

mod bearers;
mod links;
mod names;
mod schedule;

use std::path::Path;

use anyhow::Result;

use super::input::clip;
use super::scenario::{Leg, Pdcp, Scenario};
use super::schema::{MsOrInf, PdcpFile, ScenarioFile, TopologyFile};
use crate::base::time::from_ms;

pub use links::{parse_rate, RateError};
use names::{check_bench_addr, check_ifname, check_ns_name};

/// Largest finite t-Reordering, ms (1 hour; `pdcp.t_reordering_ms`, `--t-reordering`).
pub const MAX_T_REORDERING_MS: f64 = 3_600_000.0;

/// Largest PDCP processing delay, ms (`pdcp.processing_ms`).
pub const MAX_PROCESSING_MS: f64 = 1_000.0;

/// Most legs (`legs`): the split patterns and records are per leg; dual connectivity has 2.
pub const MAX_LEGS: usize = 8;
/// Most bearers (`bearers`): a cell leg has one device per bearer and takes at most 1000;
/// the experiments use up to 32.
pub const MAX_BEARERS: usize = 1_000;
/// Most match rules per bearer (`bearers[i].match`): the classifier tries every rule of
/// every bearer for each packet; a flow needs one.
pub const MAX_MATCH_RULES: usize = 1_000;
/// Most schedule entries (`schedule`): a change every 100 ms for over 15 minutes.
pub const MAX_SCHEDULE: usize = 10_000;
/// Most distinct trace files in a scenario (each is held in memory, up to 64 MiB of text);
/// a leg's two directions and a few scheduled switches need a handful.
pub const MAX_TRACES: usize = 32;

/// Every numeric bound the validation applies, by field (a leg direction's fields under
/// `direction.`, a cell device's under `device.`): the one place each is written.
/// `dcemu limits` prints them, and the harness's tests hold its own bounds within them
/// (a value the harness takes is never refused here).
pub const LIMITS: &[(&str, f64, f64)] = &[
    ("topology.mtu", 576.0, 9000.0),
    ("pdcp.header_bytes", 0.0, 64.0),
    ("pdcp.t_reordering_ms", 0.0, MAX_T_REORDERING_MS),
    ("pdcp.processing_ms", 0.0, MAX_PROCESSING_MS),
    ("stats.interval_ms", 1.0, 3_600_000.0),
    ("split.batch", 1.0, 1_000_000.0),
    ("split.ratio", 0.0, 1e6),
    ("split.period_ms", 1.0, 1000.0),
    ("split.target_delay_ms", 0.0, 10_000.0),
    ("split.min_bytes", 1500.0, 1e9),
    // At least one full-size SDU; at most what the packet pool could hold.
    ("split.hold_bytes", 9000.0, 1e10),
    // TS 38.331's discardTimer runs from 10 ms to 1500 ms (or infinity).
    ("split.discard_ms", 1.0, 1500.0),
    // 0: off; beyond a second a fade is a failure the secondary node events model.
    ("split.fallback_ms", 0.0, 1000.0),
    ("direction.rate_bps", 1e3, 1e12),
    ("direction.queue_packets", 1.0, 10_000_000.0),
    ("direction.queue_bytes", 1500.0, 1e11),
    ("direction.delay_limit", 1.0, 10_000_000.0),
    // An AQM's target and interval: from a tenth of a millisecond to ten seconds.
    ("aqm.target_ms", 0.1, 10_000.0),
    ("aqm.interval_ms", 0.1, 10_000.0),
    ("direction.delay_ms", 0.0, 100_000.0),
    ("direction.loss_percent", 0.0, 100.0),
    ("cell.tc_ttis", 1.0, 1e6),
    (
        "cell.rlc_t_reassembly_ms",
        0.0,
        crate::cell::rlc::MAX_T_REASSEMBLY_MS,
    ),
    ("device.mean_sinr_db", -30.0, 60.0),
    ("device.doppler_hz", 0.0, 2000.0),
    ("device.queue_bytes", 1500.0, 1e11),
    ("device.queue_packets", 1.0, 10_000_000.0),
    ("schedule.at_ms", 0.0, 1e9),
    ("schedule.interruption_ms", 0.0, 60_000.0),
];

/// The bounds of `name` in [`LIMITS`].
pub fn limit(name: &str) -> (f64, f64) {
    LIMITS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, lo, hi)| (lo, hi))
        .unwrap_or_else(|| panic!("no limit named {name}"))
}

/// `v` within the bounds of `name` in [`LIMITS`]; the error names `field`.
fn within(field: &str, name: &str, v: f64) -> Result<()> {
    let (lo, hi) = limit(name);
    in_range(field, v, lo, hi)
}

/// Leg and bearer names: they become file names (`--pcap-legs DIR/<leg>.pcap`) and keys
/// in every record, so nothing that needs quoting or could leave DIR (the Python side's
/// grammar).
pub const NAME_RULE: &str = "1-64 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit";

/// Whether `s` follows [`NAME_RULE`].
pub fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

/// An invalid scenario: `field` is the path inside the file, `msg` says what is allowed.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {msg}")]
pub struct FieldError {
    pub field: String,
    pub msg: String,
}

fn bad<T>(field: impl Into<String>, msg: impl Into<String>) -> Result<T> {
    Err(FieldError {
        field: field.into(),
        msg: msg.into(),
    }
    .into())
}

/// Checks a parsed file; `base` resolves relative trace paths (the traces are loaded here).
pub fn validate(file: ScenarioFile, base: &Path) -> Result<Scenario> {
    topology(&file.topology)?;
    let pdcp = pdcp(&file.pdcp)?;
    limits(&file)?;
    let mut traces = links::TraceCache::default();
    let mut legs = links::legs(&file, base, &mut traces)?;
    let bearers = bearers::bearers(&file, &legs)?;
    bearers::assign_devices(&mut legs, &bearers)?;
    let default_bearer = bearers::default_bearer(&file, &bearers)?;
    let schedule = schedule::schedule(&file, &legs, &bearers, base, &mut traces)?;
    Ok(Scenario {
        seed: file.seed,
        topology: file.topology.clone(),
        pdcp,
        stats_interval: from_ms(file.stats.interval_ms),
        stats_path: file.stats.path.clone(),
        pcap_path: file.stats.pcap.clone(),
        legs,
        bearers,
        default_bearer,
        schedule,
        file,
    })
}

/// One more client address per leg beyond the first, at most.
const MAX_EXTRA_ADDRS: usize = MAX_LEGS - 1;

fn topology(t: &TopologyFile) -> Result<()> {
    check_ns_name("topology.server_netns", &t.server_netns)?;
    check_ns_name("topology.client_netns", &t.client_netns)?;
    if t.server_netns == t.client_netns {
        bad(
            "topology.client_netns",
            "must differ from topology.server_netns",
        )?;
    }
    check_bench_addr("topology.server_addr", t.server_addr)?;
    check_bench_addr("topology.client_addr", t.client_addr)?;
    if t.server_addr == t.client_addr {
        bad(
            "topology.client_addr",
            "must differ from topology.server_addr",
        )?;
    }
    if t.client_extra_addrs.len() > MAX_EXTRA_ADDRS {
        bad(
            "topology.client_extra_addrs",
            format!(
                "must list at most {MAX_EXTRA_ADDRS} addresses (got {})",
                t.client_extra_addrs.len()
            ),
        )?;
    }
    for (i, &a) in t.client_extra_addrs.iter().enumerate() {
        let field = format!("topology.client_extra_addrs[{i}]");
        check_bench_addr(&field, a)?;
        if a == t.server_addr || a == t.client_addr || t.client_extra_addrs[..i].contains(&a) {
            bad(field, format!("{a} is already an address of the topology"))?;
        }
    }
    within("topology.mtu", "topology.mtu", t.mtu as f64)?;
    check_ifname("topology.server_tun", &t.server_tun)?;
    check_ifname("topology.client_tun", &t.client_tun)?;
    if t.server_tun == t.client_tun {
        bad(
            "topology.client_tun",
            "must differ from topology.server_tun",
        )?;
    }

    Ok(())
}

fn pdcp(p: &PdcpFile) -> Result<Pdcp> {
    if ![12u8, 16, 18].contains(&p.sn_bits) {
        bad(
            "pdcp.sn_bits",
            format!("must be 12, 16 or 18 (got {})", p.sn_bits),
        )?;
    }
    within(
        "pdcp.header_bytes",
        "pdcp.header_bytes",
        p.header_bytes as f64,
    )?;
    let t_reordering = match p.t_reordering_ms {
        MsOrInf::Word(_) => None,
        MsOrInf::Ms(ms) => {
            within("pdcp.t_reordering_ms", "pdcp.t_reordering_ms", ms)?;
            Some(from_ms(ms))
        }
    };
    if p.out_of_order && !p.reordering {
        bad(
            "pdcp.out_of_order",
            "needs pdcp.reordering = true (bypass already delivers in arrival order)",
        )?;
    }
    within("pdcp.processing_ms", "pdcp.processing_ms", p.processing_ms)?;
    Ok(Pdcp {
        sn_bits: p.sn_bits,
        header_bytes: p.header_bytes,
        t_reordering,
        reordering: p.reordering,
        out_of_order: p.out_of_order,
        initial_count: p.initial_count,
        processing: from_ms(p.processing_ms),
    })
}

/// The stats interval and the counts a scenario may list.
fn limits(file: &ScenarioFile) -> Result<()> {
    within(
        "stats.interval_ms",
        "stats.interval_ms",
        file.stats.interval_ms,
    )?;

    if file.legs.is_empty() || file.legs.len() > MAX_LEGS {
        bad(
            "legs",
            format!("must list 1 to {MAX_LEGS} legs (got {})", file.legs.len()),
        )?;
    }
    if file.bearers.len() > MAX_BEARERS {
        bad(
            "bearers",
            format!(
                "must list at most {MAX_BEARERS} bearers (got {})",
                file.bearers.len()
            ),
        )?;
    }
    if file.schedule.len() > MAX_SCHEDULE {
        bad(
            "schedule",
            format!(
                "must list at most {MAX_SCHEDULE} changes (got {})",
                file.schedule.len()
            ),
        )?;
    }
    Ok(())
}

/// The index of the leg named `name` (`field` names where it was given).
fn leg_index(legs: &[Leg], field: &str, name: &str) -> Result<usize> {
    match legs.iter().position(|l| l.name == name) {
        Some(i) => Ok(i),
        None => {
            let known: Vec<_> = legs.iter().map(|l| l.name.as_str()).collect();
            bad(
                field,
                format!("no leg named {} (legs: {})", clip(name), known.join(", ")),
            )
        }
    }
}

fn in_range(field: &str, v: f64, lo: f64, hi: f64) -> Result<()> {
    if !(v.is_finite() && v >= lo && v <= hi) {
        bad(
            field,
            format!(
                "must be between {} and {} (got {})",
                fmt_num(lo),
                fmt_num(hi),
                fmt_num(v)
            ),
        )?;
    }
    Ok(())
}

/// A number for a message: plain ("1500", "0.25") unless so large or small that plain
/// notation would run to dozens of digits ("1e300", "1e-9").
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a.is_finite() && a != 0.0 && !(1e-6..1e15).contains(&a) {
        // 7 significant digits at most: "1e39", not "1.0000000000000001e39".
        let s = format!("{v:.6e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        format!("{mantissa}e{exp}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::schema::RateValue;

    #[test]
    fn rates_parse_with_units() {
        let r = |s: &str| parse_rate(&RateValue::Text(s.into()));
        assert_eq!(r("20mbit"), Ok(Some(20_000_000)));
        assert_eq!(r("1.5 Gbit/s"), Ok(Some(1_500_000_000)));
        assert_eq!(r("500kbit"), Ok(Some(500_000)));
        assert_eq!(r("unlimited"), Ok(None));
        assert_eq!(
            parse_rate(&RateValue::Bps(33_330_000.0)),
            Ok(Some(33_330_000))
        );
        assert!(r("20 furlongs")
            .unwrap_err()
            .to_string()
            .contains("unknown unit"));
        assert!(r("0mbit").is_err());
        // An exponent belongs to the number, not the unit.
        assert_eq!(r("1.5e3 kbit"), Ok(Some(1_500_000)));
        assert_eq!(
            r("1e30 Gbit/s").unwrap_err().to_string(),
            "must be between 1kbit and 1000gbit per second, or \"unlimited\" (got 1e39 bit/s)"
        );
        assert!(matches!(r("nan mbit"), Err(RateError::UnknownUnit { .. })));
        assert!(matches!(r("mbit"), Err(RateError::NotANumber(_))));
    }

    #[test]
    fn rates_with_any_characters_are_refused_not_a_panic() {
        // Units used to be cut at a byte index: a multi-byte character there panicked.
        let r = |s: &str| {
            parse_rate(&RateValue::Text(s.into()))
                .unwrap_err()
                .to_string()
        };
        let unit = |u: &str, s: &str| {
            format!("unknown unit \"{u}\" in \"{s}\"; use bit, kbit, mbit or gbit (per second)")
        };
        assert_eq!(r("20µbit"), unit("µbit", "20µbit"));
        assert_eq!(r("20 Mbit/s€"), "cannot read a number in \"20 Mbit/s€\"");
        assert_eq!(r("é"), unit("é", "é"));
        // A combining accent is no letter: not a unit, and no number either.
        assert_eq!(r("5e\u{301}"), "cannot read a number in \"5e\\u{301}\"");
        assert_eq!(r("😀mbit"), "cannot read a number in \"😀mbit\"");
        assert_eq!(r("1€0"), "cannot read a number in \"1€0\"");
        assert_eq!(r(""), "cannot read a number in \"\"");
        assert_eq!(r("µ"), unit("µ", "µ"));
        let long = format!("1{}", "ü".repeat(500));
        let e = r(&long);
        assert!(
            e.contains("(500 characters)") && e.contains("(501 characters)"),
            "{e}"
        );
        assert!(e.chars().count() < 400, "{e}");
    }

    #[test]
    fn names_follow_one_grammar() {
        for ok in ["leg1", "a", "LTE-1.b_2", &"x".repeat(64)] {
            assert!(is_name(ok), "{ok}");
        }
        for bad in [
            "",
            "-a",
            ".a",
            "_a",
            "a b",
            "a/b",
            "..",
            "lé",
            "a\0",
            &"x".repeat(65),
        ] {
            assert!(!is_name(bad), "{bad}");
        }
    }

    #[test]
    fn big_and_tiny_numbers_are_short_in_messages() {
        assert_eq!(fmt_num(1e300), "1e300");
        assert_eq!(fmt_num(-1e20), "-1e20");
        assert_eq!(fmt_num(1e30 * 1e9), "1e39");
        assert_eq!(fmt_num(1.5e30), "1.5e30");
        assert_eq!(fmt_num(1.23456789e20), "1.234568e20");
        assert_eq!(fmt_num(1e-9), "1e-9");
        assert_eq!(fmt_num(3_600_000.0), "3600000");
        assert_eq!(fmt_num(0.25), "0.25");
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(f64::NAN), "NaN");
        assert_eq!(fmt_num(f64::INFINITY), "inf");
    }
}
