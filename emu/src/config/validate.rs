//! Validation: range and cross-reference checks on a parsed [`ScenarioFile`], producing the
//! [`Scenario`] model. Every error names the offending field and what is allowed.

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;

use super::input::clip;
use super::model::{Bearer, CellLeg, Change, ChangeKind, Leg, Pdcp, Rule, Scenario, Split};
use super::schema::{
    BearerFile, BearerMode, CellDeviceFile, CellFile, DelayFile, DirectionFile, DirectionName,
    LossAt, LossFile, MatchFile, MsOrInf, PortValue, RateValue, ScenarioFile, SplitFile, TraceFile,
};
use super::trace_file;
use crate::base::time::from_ms;
use crate::cell::{rbs_for_bandwidth, CellSpec, DeviceSpec, FadingModel, SchedulerSpec};
use crate::link::{DelayDist, LinkSpec, LossModel, RateSpec, RateTrace};

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
    let t = &file.topology;
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
    in_range("topology.mtu", t.mtu as f64, 576.0, 9000.0)?;
    check_ifname("topology.server_tun", &t.server_tun)?;
    check_ifname("topology.client_tun", &t.client_tun)?;
    if t.server_tun == t.client_tun {
        bad(
            "topology.client_tun",
            "must differ from topology.server_tun",
        )?;
    }

    let p = &file.pdcp;
    if ![12u8, 16, 18].contains(&p.sn_bits) {
        bad(
            "pdcp.sn_bits",
            format!("must be 12, 16 or 18 (got {})", p.sn_bits),
        )?;
    }
    in_range("pdcp.header_bytes", p.header_bytes as f64, 0.0, 64.0)?;
    let t_reordering = match p.t_reordering_ms {
        MsOrInf::Word(_) => None,
        MsOrInf::Ms(ms) => {
            in_range("pdcp.t_reordering_ms", ms, 0.0, MAX_T_REORDERING_MS)?;
            Some(from_ms(ms))
        }
    };
    if p.out_of_order && !p.reordering {
        bad(
            "pdcp.out_of_order",
            "needs pdcp.reordering = true (bypass already delivers in arrival order)",
        )?;
    }
    in_range(
        "pdcp.processing_ms",
        p.processing_ms,
        0.0,
        MAX_PROCESSING_MS,
    )?;
    let pdcp = Pdcp {
        sn_bits: p.sn_bits,
        header_bytes: p.header_bytes,
        t_reordering,
        reordering: p.reordering,
        out_of_order: p.out_of_order,
        initial_count: p.initial_count,
        processing: from_ms(p.processing_ms),
    };

    in_range(
        "stats.interval_ms",
        file.stats.interval_ms,
        1.0,
        3_600_000.0,
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
    let mut traces = TraceCache::default();
    let mut names = HashSet::new();
    let mut legs = Vec::new();
    for (i, l) in file.legs.iter().enumerate() {
        let f = format!("legs[{i}]");
        check_name(&format!("{f}.name"), &l.name)?;
        if !names.insert(l.name.clone()) {
            bad(
                format!("{f}.name"),
                format!("must be unique (got {} twice)", clip(&l.name)),
            )?;
        }
        let downlink = direction_spec(&format!("{f}.downlink"), &l.downlink, base, &mut traces)?;
        let uplink = match &l.uplink {
            Some(u) => {
                if u.cell.is_some() {
                    bad(
                        format!("{f}.uplink.cell"),
                        "a cell models the downlink only (give it in the leg's downlink)",
                    )?;
                }
                Some(direction_spec(
                    &format!("{f}.uplink"),
                    u,
                    base,
                    &mut traces,
                )?)
            }
            None => None,
        };
        let cell = match &l.downlink.cell {
            Some(c) => Some(CellLeg {
                spec: cell_spec(&format!("{f}.downlink"), &l.downlink, c)?,
                device_of_bearer: vec![],
            }),
            None => None,
        };
        legs.push(Leg {
            name: l.name.clone(),
            downlink,
            uplink,
            cell,
        });
    }
    let leg_index = |field: &str, name: &str| -> Result<usize> {
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
    };
    let first_uplink = legs.iter().position(|l| l.uplink.is_some());

    in_range("split.batch", file.split.batch as f64, 1.0, 1_000_000.0)?;
    let mut bearers = Vec::new();
    let bearer_files = if file.bearers.is_empty() {
        vec![BearerFile {
            name: "dc".into(),
            mode: BearerMode::Dc,
            legs: None,
            uplink_leg: None,
            rules: vec![],
            split: None,
        }]
    } else {
        file.bearers.clone()
    };
    let mut bnames = HashSet::new();
    for (i, b) in bearer_files.iter().enumerate() {
        let f = format!("bearers[{i}]");
        check_name(&format!("{f}.name"), &b.name)?;
        if !bnames.insert(b.name.clone()) {
            bad(
                format!("{f}.name"),
                format!("must be unique (got {} twice)", clip(&b.name)),
            )?;
        }
        let leg_ids: Vec<usize> = match &b.legs {
            None => (0..legs.len()).collect(),
            Some(names) => {
                let mut v = Vec::new();
                for (j, n) in names.iter().enumerate() {
                    let id = leg_index(&format!("{f}.legs[{j}]"), n)?;
                    if v.contains(&id) {
                        bad(
                            format!("{f}.legs[{j}]"),
                            format!("leg {} listed twice", clip(n)),
                        )?;
                    }
                    v.push(id);
                }
                v
            }
        };
        match b.mode {
            BearerMode::Sc if leg_ids.len() != 1 => bad(
                format!("{f}.legs"),
                format!("an sc bearer takes exactly 1 leg (got {})", leg_ids.len()),
            )?,
            BearerMode::Dc | BearerMode::Dup if leg_ids.is_empty() => {
                bad(format!("{f}.legs"), "must list at least 1 leg")?
            }
            _ => {}
        }
        // Only DC bearers split; the others ignore the global split.
        let split = match (&b.split, b.mode) {
            (Some(s), _) => split_spec(&format!("{f}.split"), s, leg_ids.len())?,
            (None, BearerMode::Dc) => split_spec("split", &file.split, leg_ids.len())?,
            (None, _) => Split {
                batch: file.split.batch,
                ratio: vec![1.0; leg_ids.len()],
            },
        };
        let uplink_leg = match &b.uplink_leg {
            None => first_uplink,
            Some(n) => {
                let id = leg_index(&format!("{f}.uplink_leg"), n)?;
                if legs[id].uplink.is_none() {
                    bad(
                        format!("{f}.uplink_leg"),
                        format!("leg {} has no uplink", clip(n)),
                    )?;
                }
                Some(id)
            }
        };
        if b.rules.len() > MAX_MATCH_RULES {
            bad(
                format!("{f}.match"),
                format!(
                    "must list at most {MAX_MATCH_RULES} rules (got {})",
                    b.rules.len()
                ),
            )?;
        }
        let mut rules = Vec::new();
        for (j, r) in b.rules.iter().enumerate() {
            rules.push(rule_spec(&format!("{f}.match[{j}]"), r)?);
        }
        bearers.push(Bearer {
            name: b.name.clone(),
            mode: b.mode,
            legs: leg_ids,
            uplink_leg,
            rules,
            split,
        });
    }
    // Device k of a cell is the k-th bearer (in file order) whose legs include the leg.
    let mut device_maps = Vec::new();
    for (i, leg) in legs.iter().enumerate() {
        let Some(cell) = leg.cell.as_ref() else {
            continue;
        };
        let users: Vec<usize> = (0..bearers.len())
            .filter(|&b| bearers[b].legs.contains(&i))
            .collect();
        if users.len() != cell.spec.devices.len() {
            let names: Vec<&str> = users.iter().map(|&b| bearers[b].name.as_str()).collect();
            bad(
                format!("legs[{i}].downlink.cell.devices"),
                format!(
                    "needs one device per bearer on leg {:?}, in bearer order ({} bearer{}: {}), \
                     got {}",
                    leg.name,
                    users.len(),
                    if users.len() == 1 { "" } else { "s" },
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    },
                    cell.spec.devices.len()
                ),
            )?;
        }
        let map: Vec<Option<usize>> = (0..bearers.len())
            .map(|b| users.iter().position(|&u| u == b))
            .collect();
        device_maps.push((i, map));
    }
    let default_bearer = match &file.default_bearer {
        None => 0,
        Some(n) => match bearers.iter().position(|b| &b.name == n) {
            Some(i) => i,
            None => bad("default_bearer", format!("no bearer named {}", clip(n)))?,
        },
    };

    let mut schedule = Vec::new();
    for (i, c) in file.schedule.iter().enumerate() {
        let f = format!("schedule[{i}]");
        in_range(&format!("{f}.at_ms"), c.at_ms, 0.0, 1e9)?;
        let at = from_ms(c.at_ms);
        let link_change =
            c.rate.is_some() || c.trace.is_some() || c.delay.is_some() || c.loss.is_some();
        if !link_change && c.split.is_none() {
            bad(
                &f,
                "changes nothing: give rate, trace, delay, loss or split",
            )?;
        }
        if link_change {
            let Some(name) = &c.leg else {
                return bad(
                    format!("{f}.leg"),
                    "required to change rate, trace, delay or loss",
                );
            };
            let leg = leg_index(&format!("{f}.leg"), name)?;
            let uplink = c.direction == DirectionName::Uplink;
            if uplink && legs[leg].uplink.is_none() {
                bad(
                    format!("{f}.direction"),
                    format!("leg {} has no uplink", clip(name)),
                )?;
            }
            if c.rate.is_some() && c.trace.is_some() {
                bad(format!("{f}.trace"), "give rate or trace, not both")?;
            }
            if !uplink && legs[leg].cell.is_some() && (c.rate.is_some() || c.trace.is_some()) {
                bad(
                    format!("{f}.{}", if c.rate.is_some() { "rate" } else { "trace" }),
                    format!(
                        "leg {name:?}'s downlink is a cell (its capacity follows the channel); \
                         only delay and loss can change"
                    ),
                )?;
            }
            if let Some(r) = &c.rate {
                schedule.push(Change {
                    at,
                    what: ChangeKind::Rate {
                        leg,
                        uplink,
                        rate: rate_spec(&format!("{f}.rate"), r)?,
                    },
                });
            }
            if let Some(t) = &c.trace {
                schedule.push(Change {
                    at,
                    what: ChangeKind::Rate {
                        leg,
                        uplink,
                        rate: trace_spec(&format!("{f}.trace"), t, base, &mut traces)?,
                    },
                });
            }
            if let Some(d) = &c.delay {
                schedule.push(Change {
                    at,
                    what: ChangeKind::Delay {
                        leg,
                        uplink,
                        delay: delay_spec(&format!("{f}.delay"), d)?,
                    },
                });
            }
            if let Some(l) = &c.loss {
                schedule.push(Change {
                    at,
                    what: ChangeKind::Loss {
                        leg,
                        uplink,
                        loss: loss_spec(&format!("{f}.loss"), l)?,
                    },
                });
            }
        }
        if let Some(s) = &c.split {
            let bearer = match &c.bearer {
                None => None,
                Some(n) => match bearers.iter().position(|b| &b.name == n) {
                    Some(i) => Some(i),
                    None => bad(
                        format!("{f}.bearer"),
                        format!("no bearer named {}", clip(n)),
                    )?,
                },
            };
            if let Some(b) = s.batch {
                in_range(&format!("{f}.split.batch"), b as f64, 1.0, 1_000_000.0)?;
            }
            if let Some(r) = &s.ratio {
                let targets: Vec<&Bearer> = match bearer {
                    Some(i) => vec![&bearers[i]],
                    None => bearers
                        .iter()
                        .filter(|b| b.mode == BearerMode::Dc)
                        .collect(),
                };
                for b in targets {
                    check_ratio(&format!("{f}.split.ratio"), r, b.legs.len())?;
                }
            }
            schedule.push(Change {
                at,
                what: ChangeKind::Split {
                    bearer,
                    batch: s.batch,
                    ratio: s.ratio.clone(),
                },
            });
        }
    }
    schedule.sort_by_key(|c| c.at);
    for (i, map) in device_maps {
        if let Some(c) = legs[i].cell.as_mut() {
            c.device_of_bearer = map;
        }
    }

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

fn check_name(field: &str, s: &str) -> Result<()> {
    if !is_name(s) {
        bad(field, format!("must be {NAME_RULE} (got {})", clip(s)))?;
    }
    Ok(())
}

fn check_ns_name(field: &str, s: &str) -> Result<()> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !s.starts_with('.');
    if !ok {
        bad(
            field,
            format!(
                "must be a network namespace name of 1-64 letters, digits, '-', '_' or '.' \
                 (got {})",
                clip(s)
            ),
        )?;
    }
    Ok(())
}

fn check_ifname(field: &str, s: &str) -> Result<()> {
    let ok = !s.is_empty()
        && s.len() <= 15
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        bad(
            field,
            format!(
                "must be an interface name of 1-15 letters, digits, '-' or '_' (got {})",
                clip(s)
            ),
        )?;
    }
    Ok(())
}

/// Emulated hosts live in the benchmarking range only (RFC 2544), so nothing can leak.
fn check_bench_addr(field: &str, a: Ipv4Addr) -> Result<()> {
    let o = a.octets();
    if !(o[0] == 198 && (o[1] == 18 || o[1] == 19)) {
        bad(field, format!("must be in 198.18.0.0/15 (got {a})"))?;
    }
    Ok(())
}

/// Parses "20mbit", "1.5 Gbit/s", "500kbit", "unlimited" or a number of bit/s.
pub fn parse_rate(v: &RateValue) -> std::result::Result<Option<u64>, String> {
    let (num, mult) = match v {
        RateValue::Bps(b) => (*b, 1.0),
        RateValue::Text(s) => {
            let t = s.trim().to_ascii_lowercase().replace(' ', "");
            if t == "unlimited" || t == "inf" {
                return Ok(None);
            }
            let t = t
                .strip_suffix("/s")
                .or_else(|| t.strip_suffix("ps"))
                .unwrap_or(&t)
                .to_string();
            // The unit is the trailing run of letters (any script's: "µbit" is a unit, if
            // an unknown one), so an exponent ("1e3mbit") stays with the number.
            let n = t.trim_end_matches(char::is_alphabetic);
            let unit = &t[n.len()..];
            let mult = match unit {
                "" | "bit" | "b" => 1.0,
                "kbit" | "k" | "kb" => 1e3,
                "mbit" | "m" | "mb" => 1e6,
                "gbit" | "g" | "gb" => 1e9,
                _ => {
                    return Err(format!(
                        "unknown unit {} in {}; use bit, kbit, mbit or gbit (per second)",
                        clip(unit),
                        clip(s)
                    ))
                }
            };
            let n: f64 = n
                .parse()
                .map_err(|_| format!("cannot read a number in {}", clip(s)))?;
            (n, mult)
        }
    };
    let bps = num * mult;
    if !(1000.0..=1e12).contains(&bps) {
        return Err(format!(
            "must be between 1kbit and 1000gbit per second, or \"unlimited\" (got {} bit/s)",
            fmt_num(bps)
        ));
    }
    Ok(Some(bps.round() as u64))
}

fn rate_spec(field: &str, v: &RateValue) -> Result<RateSpec> {
    match parse_rate(v) {
        Ok(Some(bps)) => Ok(RateSpec::Fixed { bps }),
        Ok(None) => Ok(RateSpec::Unlimited),
        Err(m) => bad(field, m),
    }
}

/// The traces a scenario has read, by file and reading: one copy of each, however often
/// the legs and the schedule name it, and at most [`MAX_TRACES`] of them.
#[derive(Default)]
struct TraceCache(HashMap<(PathBuf, String, String, u64), Arc<RateTrace>>);

fn trace_spec(
    field: &str,
    t: &TraceFile,
    base: &Path,
    traces: &mut TraceCache,
) -> Result<RateSpec> {
    let path = if t.path.is_absolute() {
        t.path.clone()
    } else {
        base.join(&t.path)
    };
    let format = match t.format.as_deref() {
        Some(f) => f.to_string(),
        None if path.extension().is_some_and(|e| e == "csv") => "csv".into(),
        None => "mahimahi".into(),
    };
    if !(1..=trace_file::MAX_ROW_MS).contains(&t.row_ms) {
        bad(
            format!("{field}.row_ms"),
            format!(
                "must be between 1 and {} (got {})",
                trace_file::MAX_ROW_MS,
                t.row_ms
            ),
        )?;
    }
    // A mahimahi trace ignores the CSV fields: the same file read once.
    let key = match format.as_str() {
        "csv" => (path.clone(), format.clone(), t.column.clone(), t.row_ms),
        _ => (path.clone(), format.clone(), String::new(), 0),
    };
    let trace = match traces.0.get(&key) {
        Some(trace) => trace.clone(),
        None => {
            let trace: RateTrace = match format.as_str() {
                "mahimahi" | "csv" if traces.0.len() >= MAX_TRACES => {
                    return bad(
                        format!("{field}.path"),
                        format!(
                            "a scenario reads at most {MAX_TRACES} different trace files \
                             (this is file {})",
                            MAX_TRACES + 1
                        ),
                    )
                }
                "mahimahi" => trace_file::load_mahimahi(&path),
                "csv" => trace_file::load_csv(&path, &t.column, t.row_ms),
                other => {
                    return bad(
                        format!("{field}.format"),
                        format!("must be \"mahimahi\" or \"csv\" (got {})", clip(other)),
                    )
                }
            }
            .map_err(|e| FieldError {
                field: format!("{field}.path"),
                msg: format!("{e:#}"),
            })?;
            let trace = Arc::new(trace);
            traces.0.insert(key, trace.clone());
            trace
        }
    };
    // Trace time 0 is the start of forwarding; a scheduled change moves it to the change.
    Ok(RateSpec::Trace {
        trace,
        looping: t.looping,
        start_offset: 0,
    })
}

fn delay_spec(field: &str, d: &DelayFile) -> Result<DelayDist> {
    let lim = 100_000.0; // ms
    Ok(match *d {
        DelayFile::Constant { ms } => {
            in_range(&format!("{field}.ms"), ms, 0.0, lim)?;
            DelayDist::Constant { ms }
        }
        DelayFile::Normal { mean_ms, std_ms } => {
            in_range(&format!("{field}.mean_ms"), mean_ms, 0.0, lim)?;
            in_range(&format!("{field}.std_ms"), std_ms, 0.0, lim)?;
            DelayDist::Normal { mean_ms, std_ms }
        }
        DelayFile::Uniform { min_ms, max_ms } => {
            in_range(&format!("{field}.min_ms"), min_ms, 0.0, lim)?;
            in_range(&format!("{field}.max_ms"), max_ms, min_ms, lim)?;
            DelayDist::Uniform { min_ms, max_ms }
        }
        DelayFile::Pareto { mean_ms, std_ms } => {
            in_range(&format!("{field}.mean_ms"), mean_ms, 0.0, lim)?;
            in_range(&format!("{field}.std_ms"), std_ms, 0.0, lim)?;
            DelayDist::Pareto { mean_ms, std_ms }
        }
        DelayFile::ParetoNormal { mean_ms, std_ms } => {
            in_range(&format!("{field}.mean_ms"), mean_ms, 0.0, lim)?;
            in_range(&format!("{field}.std_ms"), std_ms, 0.0, lim)?;
            DelayDist::ParetoNormal { mean_ms, std_ms }
        }
    })
}

fn loss_spec(field: &str, l: &LossFile) -> Result<LossModel> {
    let pct = |name: &str, v: f64| -> Result<f64> {
        in_range(&format!("{field}.{name}"), v, 0.0, 100.0)?;
        Ok(v / 100.0)
    };
    Ok(match *l {
        LossFile::None => LossModel::None,
        LossFile::Bernoulli { percent } => LossModel::Bernoulli {
            p: pct("percent", percent)?,
        },
        LossFile::GilbertElliott {
            p_percent,
            r_percent,
            loss_good_percent,
            loss_bad_percent,
        } => LossModel::GilbertElliott {
            p: pct("p_percent", p_percent)?,
            r: pct("r_percent", r_percent)?,
            loss_good: pct("loss_good_percent", loss_good_percent)?,
            loss_bad: pct("loss_bad_percent", loss_bad_percent)?,
        },
    })
}

fn direction_spec(
    field: &str,
    d: &DirectionFile,
    base: &Path,
    traces: &mut TraceCache,
) -> Result<LinkSpec> {
    let rate = match &d.trace {
        Some(t) => trace_spec(&format!("{field}.trace"), t, base, traces)?,
        None => rate_spec(&format!("{field}.rate"), &d.rate)?,
    };
    if let Some(q) = d.queue_packets {
        in_range(
            &format!("{field}.queue_packets"),
            q as f64,
            1.0,
            10_000_000.0,
        )?;
    }
    if let Some(q) = d.queue_bytes {
        in_range(&format!("{field}.queue_bytes"), q as f64, 1500.0, 1e11)?;
    }
    if let Some(q) = d.delay_limit {
        in_range(&format!("{field}.delay_limit"), q as f64, 1.0, 10_000_000.0)?;
    }
    Ok(LinkSpec {
        rate,
        queue_packets: d.queue_packets,
        queue_bytes: d.queue_bytes,
        delay: delay_spec(&format!("{field}.delay"), &d.delay)?,
        delay_limit: d.delay_limit,
        jitter_reorders: d.jitter_reorders,
        loss: loss_spec(&format!("{field}.loss"), &d.loss)?,
        loss_before_rate: d.loss_at == LossAt::BeforeRate,
    })
}

/// The cell of a downlink `d` (`field` is the downlink's path). The cell replaces the rate
/// stage, so the rate-stage fields must keep their defaults.
fn cell_spec(field: &str, d: &DirectionFile, c: &CellFile) -> Result<CellSpec> {
    let defaults = DirectionFile::default();
    if d.trace.is_some() {
        bad(
            format!("{field}.trace"),
            "a cell replaces the rate stage: give cell or trace, not both",
        )?;
    }
    if d.rate != defaults.rate {
        bad(
            format!("{field}.rate"),
            "a cell replaces the rate stage (its capacity follows the channel): remove rate",
        )?;
    }
    if d.queue_packets != defaults.queue_packets || d.queue_bytes != defaults.queue_bytes {
        bad(
            format!(
                "{field}.{}",
                if d.queue_bytes.is_some() {
                    "queue_bytes"
                } else {
                    "queue_packets"
                }
            ),
            "a cell has a queue per device: give queue_bytes or queue_packets in \
             cell.devices instead",
        )?;
    }
    if d.loss_at == LossAt::BeforeRate {
        bad(
            format!("{field}.loss_at"),
            "a cell has no rate stage to put loss before: use \"after-rate\" (the default)",
        )?;
    }
    let f = format!("{field}.cell");
    if rbs_for_bandwidth(c.bandwidth_mhz).is_none() {
        bad(
            format!("{f}.bandwidth_mhz"),
            format!(
                "must be 1.4, 3, 5, 10, 15 or 20 (MHz) (got {})",
                fmt_num(c.bandwidth_mhz)
            ),
        )?;
    }
    in_range(&format!("{f}.tc_ttis"), c.tc_ttis, 1.0, 1e6)?;
    let scheduler = match c.scheduler.as_str() {
        "rr" => SchedulerSpec::RoundRobin,
        "pf" => SchedulerSpec::ProportionalFair {
            tc_ttis: c.tc_ttis,
            rbg: None,
        },
        other => bad(
            format!("{f}.scheduler"),
            format!(
                "must be \"rr\" (round robin) or \"pf\" (proportional fair) (got {})",
                clip(other)
            ),
        )?,
    };
    if c.devices.is_empty() || c.devices.len() > 1000 {
        bad(
            format!("{f}.devices"),
            format!(
                "must list 1 to 1000 devices, one per bearer on the leg (got {})",
                c.devices.len()
            ),
        )?;
    }
    let devices = c
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| device_spec(&format!("{f}.devices[{i}]"), d))
        .collect::<Result<Vec<_>>>()?;
    Ok(CellSpec::new(c.bandwidth_mhz, scheduler, devices))
}

fn device_spec(f: &str, d: &CellDeviceFile) -> Result<DeviceSpec> {
    in_range(&format!("{f}.mean_sinr_db"), d.mean_sinr_db, -30.0, 60.0)?;
    in_range(&format!("{f}.doppler_hz"), d.doppler_hz, 0.0, 2000.0)?;
    let fading = match d.fading.as_str() {
        "rayleigh" => FadingModel::Rayleigh,
        "none" => FadingModel::None,
        other => bad(
            format!("{f}.fading"),
            format!("must be \"rayleigh\" or \"none\" (got {})", clip(other)),
        )?,
    };
    if let Some(q) = d.queue_bytes {
        in_range(&format!("{f}.queue_bytes"), q as f64, 1500.0, 1e11)?;
    }
    if let Some(q) = d.queue_packets {
        in_range(&format!("{f}.queue_packets"), q as f64, 1.0, 10_000_000.0)?;
    }
    Ok(DeviceSpec {
        mean_sinr_db: d.mean_sinr_db,
        doppler_hz: d.doppler_hz,
        fading,
        queue_bytes: d.queue_bytes,
        queue_packets: d.queue_packets,
    })
}

fn check_ratio(field: &str, r: &[f64], legs: usize) -> Result<()> {
    if r.len() != legs {
        bad(
            field,
            format!(
                "needs one share per leg of the bearer ({legs}), got {}",
                r.len()
            ),
        )?;
    }
    for (i, v) in r.iter().enumerate() {
        in_range(&format!("{field}[{i}]"), *v, 0.0, 1e6)?;
    }
    if r.iter().sum::<f64>() <= 0.0 {
        bad(field, "at least one share must be above 0")?;
    }
    Ok(())
}

/// The split of a bearer with `legs` legs: one share per leg.
fn split_spec(field: &str, s: &SplitFile, legs: usize) -> Result<Split> {
    in_range(&format!("{field}.batch"), s.batch as f64, 1.0, 1_000_000.0)?;
    let ratio = s.ratio.clone().unwrap_or_else(|| vec![1.0; legs]);
    check_ratio(&format!("{field}.ratio"), &ratio, legs)?;
    Ok(Split {
        batch: s.batch,
        ratio,
    })
}

fn port_range(field: &str, p: &PortValue) -> Result<(u16, u16)> {
    match p {
        PortValue::One(v) => Ok((*v, *v)),
        PortValue::Range(s) => {
            let parsed = s
                .split_once('-')
                .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
            match parsed {
                Some((a, b)) if a <= b => Ok((a, b)),
                _ => bad(
                    field,
                    format!(
                        "must be a port 0-65535 or a range \"lo-hi\" (got {})",
                        clip(s)
                    ),
                ),
            }
        }
    }
}

fn net(field: &str, s: &str) -> Result<(u32, u32)> {
    let (a, len) = match s.split_once('/') {
        Some((a, l)) => (a, l.parse::<u32>().ok().filter(|l| *l <= 32)),
        None => (s, Some(32)),
    };
    match (a.parse::<Ipv4Addr>(), len) {
        (Ok(addr), Some(len)) => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            Ok((u32::from(addr) & mask, mask))
        }
        _ => bad(
            field,
            format!(
                "must be an IPv4 address or prefix like 198.18.0.0/15 (got {})",
                clip(s)
            ),
        ),
    }
}

fn rule_spec(field: &str, m: &MatchFile) -> Result<Rule> {
    let protocol = match m.protocol.as_deref() {
        None => None,
        Some("tcp") => Some(6),
        Some("udp") => Some(17),
        Some("icmp") => Some(1),
        Some(other) => match other.parse::<u8>() {
            Ok(n) => Some(n),
            Err(_) => bad(
                format!("{field}.protocol"),
                format!("must be tcp, udp, icmp or 0-255 (got {})", clip(other)),
            )?,
        },
    };
    Ok(Rule {
        protocol,
        server_ports: m
            .server_port
            .as_ref()
            .map(|p| port_range(&format!("{field}.server_port"), p))
            .transpose()?,
        client_ports: m
            .client_port
            .as_ref()
            .map(|p| port_range(&format!("{field}.client_port"), p))
            .transpose()?,
        server_net: m
            .server_addr
            .as_deref()
            .map(|s| net(&format!("{field}.server_addr"), s))
            .transpose()?,
        client_net: m
            .client_addr
            .as_deref()
            .map(|s| net(&format!("{field}.client_addr"), s))
            .transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(r("20 furlongs").unwrap_err().contains("unknown unit"));
        assert!(r("0mbit").is_err());
        // An exponent belongs to the number, not the unit.
        assert_eq!(r("1.5e3 kbit"), Ok(Some(1_500_000)));
        assert_eq!(
            r("1e30 Gbit/s").unwrap_err(),
            "must be between 1kbit and 1000gbit per second, or \"unlimited\" (got 1e39 bit/s)"
        );
        assert!(r("nan mbit").unwrap_err().contains("unknown unit"));
        assert!(r("mbit").unwrap_err().contains("cannot read a number"));
    }

    #[test]
    fn rates_with_any_characters_are_refused_not_a_panic() {
        // Units used to be cut at a byte index: a multi-byte character there panicked.
        let r = |s: &str| parse_rate(&RateValue::Text(s.into())).unwrap_err();
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
