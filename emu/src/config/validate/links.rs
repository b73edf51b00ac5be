//! The legs: each direction's link (rate or trace, queue, delay, loss) and a downlink's
//! LTE cell with its devices; the traces a scenario reads, each once.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;

use super::names::check_name;
use super::{bad, fmt_num, in_range, limit, within, FieldError, MAX_TRACES};
use crate::base::time::{from_ms, Nanos};
use crate::cell::blockage::BlockageError;
use crate::cell::harq::HarqError;
use crate::cell::nr::numerology::{bandwidths as nr_bandwidths, prbs_for_bandwidth};
use crate::cell::{
    rbs_for_bandwidth, BlockageSpec, CellSpec, DeviceSpec, FadingModel, HarqSpec, McsTable, NrSpec,
    RlcError, RlcSpec, SchedulerSpec, TddPattern,
};
use crate::config::input::clip;
use crate::config::scenario::{CellLeg, Leg};
use crate::config::schema::{
    AqmFile, BlockageFile, CellDeviceFile, CellFile, DelayFile, DirectionFile, HarqFile, LossAt,
    LossFile, NrFile, RateValue, RlcFile, ScenarioFile, TraceFile,
};
use crate::config::trace_file;
use crate::link::{DelayDist, LinkSpec, LossModel, RateSpec, RateTrace};
use crate::qdisc::AqmSpec;
use crate::qdisc::{codel, pie};

/// Every leg of the file, in order (names unique, traces read through `traces`).
pub(super) fn legs(file: &ScenarioFile, base: &Path, traces: &mut TraceCache) -> Result<Vec<Leg>> {
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
        let downlink = direction_spec(&format!("{f}.downlink"), &l.downlink, base, traces)?;
        let uplink = match &l.uplink {
            Some(u) => {
                if u.cell.is_some() {
                    bad(
                        format!("{f}.uplink.cell"),
                        "a cell models the downlink only (give it in the leg's downlink)",
                    )?;
                }
                Some(direction_spec(&format!("{f}.uplink"), u, base, traces)?)
            }
            None => None,
        };
        let x2 = match &l.x2 {
            Some(x) => {
                if x.cell.is_some() {
                    bad(
                        format!("{f}.x2.cell"),
                        "the X2 hop is a wire between base stations, not a cell",
                    )?;
                }
                Some(direction_spec(&format!("{f}.x2"), x, base, traces)?)
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
            x2,
        });
    }
    Ok(legs)
}

/// Why a rate cannot be read (the strings are the input as clipped for a message).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateError {
    #[error("unknown unit {unit} in {text}; use bit, kbit, mbit or gbit (per second)")]
    UnknownUnit { unit: String, text: String },
    #[error("cannot read a number in {0}")]
    NotANumber(String),
    #[error("must be between 1kbit and 1000gbit per second, or \"unlimited\" (got {} bit/s)", fmt_num(*.0))]
    OutOfRange(f64),
}

/// Parses "20mbit", "1.5 Gbit/s", "500kbit", "unlimited" or a number of bit/s.
pub fn parse_rate(v: &RateValue) -> std::result::Result<Option<u64>, RateError> {
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
                    return Err(RateError::UnknownUnit {
                        unit: clip(unit),
                        text: clip(s),
                    })
                }
            };
            let n: f64 = n.parse().map_err(|_| RateError::NotANumber(clip(s)))?;
            (n, mult)
        }
    };
    let bps = num * mult;
    let (lo, hi) = limit("direction.rate_bps");
    if !(lo..=hi).contains(&bps) {
        return Err(RateError::OutOfRange(bps));
    }
    Ok(Some(bps.round() as u64))
}

pub(super) fn rate_spec(field: &str, v: &RateValue) -> Result<RateSpec> {
    match parse_rate(v) {
        Ok(Some(bps)) => Ok(RateSpec::Fixed { bps }),
        Ok(None) => Ok(RateSpec::Unlimited),
        Err(m) => bad(field, m.to_string()),
    }
}

/// The traces a scenario has read, by file and reading: one copy of each, however often
/// the legs and the schedule name it, and at most [`MAX_TRACES`] of them.
#[derive(Default)]
pub(super) struct TraceCache(HashMap<(PathBuf, String, String, u64), Arc<RateTrace>>);

pub(super) fn trace_spec(
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

pub(super) fn delay_spec(field: &str, d: &DelayFile) -> Result<DelayDist> {
    let (_, lim) = limit("direction.delay_ms");
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

pub(super) fn loss_spec(field: &str, l: &LossFile) -> Result<LossModel> {
    let pct = |name: &str, v: f64| -> Result<f64> {
        within(&format!("{field}.{name}"), "direction.loss_percent", v)?;
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

pub(super) fn direction_spec(
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
        within(
            &format!("{field}.queue_packets"),
            "direction.queue_packets",
            q as f64,
        )?;
    }
    if let Some(q) = d.queue_bytes {
        within(
            &format!("{field}.queue_bytes"),
            "direction.queue_bytes",
            q as f64,
        )?;
    }
    if let Some(q) = d.delay_limit {
        within(
            &format!("{field}.delay_limit"),
            "direction.delay_limit",
            q as f64,
        )?;
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
        aqm: d
            .aqm
            .as_ref()
            .map(|a| aqm_spec(&format!("{field}.aqm"), a))
            .transpose()?,
    })
}

/// `[...aqm]`: the kind, and its target and interval within [`super::LIMITS`].
pub(super) fn aqm_spec(field: &str, a: &AqmFile) -> Result<AqmSpec> {
    for (name, v) in [("target_ms", a.target_ms), ("interval_ms", a.interval_ms)] {
        if let Some(v) = v {
            within(&format!("{field}.{name}"), &format!("aqm.{name}"), v)?;
        }
    }
    let ms = |v: Option<f64>, default: Nanos| v.map_or(default, from_ms);
    match a.kind.as_str() {
        "codel" => Ok(AqmSpec::Codel {
            target: ms(a.target_ms, codel::DEFAULT_TARGET),
            interval: ms(a.interval_ms, codel::DEFAULT_INTERVAL),
            ecn: a.ecn,
        }),
        "pie" => Ok(AqmSpec::Pie {
            target: ms(a.target_ms, pie::DEFAULT_TARGET),
            t_update: ms(a.interval_ms, pie::DEFAULT_T_UPDATE),
            ecn: a.ecn,
        }),
        "fq-codel" => Ok(AqmSpec::FqCodel {
            target: ms(a.target_ms, codel::DEFAULT_TARGET),
            interval: ms(a.interval_ms, codel::DEFAULT_INTERVAL),
            ecn: a.ecn,
        }),
        other => bad(
            format!("{field}.kind"),
            format!("codel, pie or fq-codel (got {other:?})"),
        ),
    }
}

/// The cell of a downlink `d` (`field` is the downlink's path). The cell replaces the rate
/// stage, so the rate-stage fields must keep their defaults.
pub(super) fn cell_spec(field: &str, d: &DirectionFile, c: &CellFile) -> Result<CellSpec> {
    let defaults = DirectionFile::default();
    // The downlink's AQM manages each device's queue.
    let aqm = d
        .aqm
        .as_ref()
        .map(|a| aqm_spec(&format!("{field}.aqm"), a))
        .transpose()?;
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
    let nr = match c.rat.as_str() {
        "lte" => {
            if c.nr.is_some() {
                bad(
                    format!("{f}.nr"),
                    "an LTE cell has no NR carrier: set rat = \"nr\"",
                )?;
            }
            None
        }
        "nr" => Some(nr_spec(&f, c)?),
        other => bad(
            format!("{f}.rat"),
            format!("must be \"lte\" or \"nr\" (got {})", clip(other)),
        )?,
    };
    if nr.is_none() && rbs_for_bandwidth(c.bandwidth_mhz).is_none() {
        bad(
            format!("{f}.bandwidth_mhz"),
            format!(
                "must be 1.4, 3, 5, 10, 15 or 20 (MHz) (got {})",
                fmt_num(c.bandwidth_mhz)
            ),
        )?;
    }
    within(&format!("{f}.tc_ttis"), "cell.tc_ttis", c.tc_ttis)?;
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
        .map(|(i, d)| device_spec(&format!("{f}.devices[{i}]"), d, aqm))
        .collect::<Result<Vec<_>>>()?;
    let harq = match (&c.harq, nr.is_some()) {
        (Some(h), _) => Some(harq_spec(&format!("{f}.harq"), h)?),
        (None, true) => Some(harq_spec(&format!("{f}.harq"), &HarqFile::default())?),
        (None, false) => None,
    };
    let rlc = rlc_spec(
        &format!("{f}.rlc"),
        c.rlc.as_ref().unwrap_or(&RlcFile::default()),
    )?;
    let spec = match nr {
        Some(nr) => CellSpec::nr(nr, scheduler, devices, harq),
        None => CellSpec {
            harq,
            ..CellSpec::new(c.bandwidth_mhz, scheduler, devices)
        },
    };
    Ok(CellSpec { rlc, ..spec })
}

fn rlc_spec(f: &str, r: &RlcFile) -> Result<RlcSpec> {
    let spec = match r.mode.as_str() {
        "um" => RlcSpec::Um,
        "am" => {
            within(
                &format!("{f}.t_reassembly_ms"),
                "cell.rlc_t_reassembly_ms",
                r.t_reassembly_ms,
            )?;
            RlcSpec::Am {
                t_reassembly: from_ms(r.t_reassembly_ms),
                max_retx: r.max_retx,
            }
        }
        other => bad(
            format!("{f}.mode"),
            format!(
                "must be \"am\" (acknowledged: resent) or \"um\" (unacknowledged: lost) (got {})",
                clip(other)
            ),
        )?,
    };
    spec.validate().or_else(|e| {
        let field = match e {
            RlcError::TReassembly(_) => "t_reassembly_ms",
            RlcError::MaxRetx(_) => "max_retx",
        };
        bad(format!("{f}.{field}"), e.to_string())
    })?;
    Ok(spec)
}

/// The NR carrier of cell `c` (`f` its path).
fn nr_spec(f: &str, c: &CellFile) -> Result<NrSpec> {
    let n =
        c.nr.clone()
            .unwrap_or_else(|| toml::from_str::<NrFile>("").expect("every NR field has a default"));
    let g = format!("{f}.nr");
    let Ok(numerology @ 0..=3) = u8::try_from(n.numerology) else {
        return bad(
            format!("{g}.numerology"),
            format!("must be 0 to 3 (got {})", n.numerology),
        );
    };
    if prbs_for_bandwidth(numerology, c.bandwidth_mhz).is_none() {
        bad(
            format!("{f}.bandwidth_mhz"),
            format!(
                "numerology {} has {} MHz (got {})",
                numerology,
                nr_bandwidths(numerology)
                    .iter()
                    .map(|b| b.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                fmt_num(c.bandwidth_mhz)
            ),
        )?;
    }
    let mcs_table = match n.mcs_table.as_str() {
        "qam256" => McsTable::Qam256,
        "qam64" => McsTable::Qam64,
        other => bad(
            format!("{g}.mcs_table"),
            format!("must be \"qam256\" or \"qam64\" (got {})", clip(other)),
        )?,
    };
    let Ok(layers @ 1..=4) = u8::try_from(n.layers) else {
        return bad(
            format!("{g}.layers"),
            format!("must be 1 to 4 (got {})", n.layers),
        );
    };
    if !(1..=14).contains(&n.pdsch_symbols) {
        bad(
            format!("{g}.pdsch_symbols"),
            format!("must be 1 to 14 (got {})", n.pdsch_symbols),
        )?;
    }
    if n.special_pdsch_symbols > 14 {
        bad(
            format!("{g}.special_pdsch_symbols"),
            format!("must be 0 to 14 (got {})", n.special_pdsch_symbols),
        )?;
    }
    if n.dmrs_re > 48 || n.dmrs_re >= 12 * n.pdsch_symbols {
        bad(
            format!("{g}.dmrs_re"),
            format!(
                "must be 0 to 48 and leave data in {} PDSCH symbols (got {})",
                n.pdsch_symbols, n.dmrs_re
            ),
        )?;
    }
    if ![0, 6, 12, 18].contains(&n.overhead_re) {
        bad(
            format!("{g}.overhead_re"),
            format!("must be 0, 6, 12 or 18 (got {})", n.overhead_re),
        )?;
    }
    let tdd = match &n.tdd {
        None => None,
        Some(t) => Some(TddPattern::parse(t).or_else(|e| bad(format!("{g}.tdd"), e.to_string()))?),
    };
    let spec = NrSpec {
        numerology,
        bandwidth_mhz: c.bandwidth_mhz,
        mcs_table,
        layers,
        pdsch_symbols: n.pdsch_symbols,
        special_pdsch_symbols: n.special_pdsch_symbols,
        dmrs_re: n.dmrs_re,
        overhead_re: n.overhead_re,
        tdd,
    };
    // Whatever is left (overheads that eat a slot) the carrier itself refuses.
    spec.validate().or_else(|e| bad(g.clone(), e.to_string()))?;
    Ok(spec)
}

fn harq_spec(f: &str, h: &HarqFile) -> Result<HarqSpec> {
    let spec = HarqSpec {
        bler: h.bler,
        rtt_slots: h.rtt_slots,
        max_tx: h.max_tx,
    };
    spec.validate().or_else(|e| {
        let field = match e {
            HarqError::Bler(_) => "bler",
            HarqError::Rtt(_) => "rtt_slots",
            HarqError::MaxTx(_) => "max_tx",
        };
        bad(format!("{f}.{field}"), e.to_string())
    })?;
    Ok(spec)
}

fn blockage_spec(f: &str, b: &BlockageFile) -> Result<BlockageSpec> {
    let spec = match b {
        BlockageFile::Markov {
            mean_clear_ms,
            mean_blocked_ms,
            loss_db,
        } => BlockageSpec::Markov {
            mean_clear_ms: *mean_clear_ms,
            mean_blocked_ms: *mean_blocked_ms,
            loss_db: *loss_db,
        },
        BlockageFile::Periods { periods, loss_db } => {
            let mut out = Vec::with_capacity(periods.len());
            for (i, &[start, dur]) in periods.iter().enumerate() {
                if !(start.is_finite()
                    && dur.is_finite()
                    && start >= 0.0
                    && dur > 0.0
                    && start + dur <= 1e6)
                {
                    bad(
                        format!("{f}.periods[{i}]"),
                        format!(
                            "[START_S, DURATION_S] with START_S >= 0, DURATION_S > 0, both within \
                             1000000 s (got [{}, {}])",
                            fmt_num(start),
                            fmt_num(dur)
                        ),
                    )?;
                }
                out.push((from_s(start), from_s(dur)));
            }
            BlockageSpec::Periods {
                periods: out,
                loss_db: *loss_db,
            }
        }
    };
    spec.validate().or_else(|e| {
        let field = match e {
            BlockageError::Loss(_) => "loss_db".to_string(),
            BlockageError::Mean(..) => "mean_clear_ms".to_string(),
            BlockageError::Overlap(i) => format!("periods[{i}]"),
            BlockageError::Count(_) => "periods".to_string(),
        };
        bad(format!("{f}.{field}"), e.to_string())
    })?;
    Ok(spec)
}

fn from_s(s: f64) -> crate::base::time::Nanos {
    (s * 1e9).round() as crate::base::time::Nanos
}

fn device_spec(f: &str, d: &CellDeviceFile, aqm: Option<AqmSpec>) -> Result<DeviceSpec> {
    within(
        &format!("{f}.mean_sinr_db"),
        "device.mean_sinr_db",
        d.mean_sinr_db,
    )?;
    within(
        &format!("{f}.doppler_hz"),
        "device.doppler_hz",
        d.doppler_hz,
    )?;
    let fading = match d.fading.as_str() {
        "rayleigh" => FadingModel::Rayleigh,
        "none" => FadingModel::None,
        other => bad(
            format!("{f}.fading"),
            format!("must be \"rayleigh\" or \"none\" (got {})", clip(other)),
        )?,
    };
    if let Some(q) = d.queue_bytes {
        within(&format!("{f}.queue_bytes"), "device.queue_bytes", q as f64)?;
    }
    if let Some(q) = d.queue_packets {
        within(
            &format!("{f}.queue_packets"),
            "device.queue_packets",
            q as f64,
        )?;
    }
    let blockage = match &d.blockage {
        None => None,
        Some(b) => Some(blockage_spec(&format!("{f}.blockage"), b)?),
    };
    Ok(DeviceSpec {
        mean_sinr_db: d.mean_sinr_db,
        doppler_hz: d.doppler_hz,
        fading,
        queue_bytes: d.queue_bytes,
        queue_packets: d.queue_packets,
        blockage,
        aqm,
    })
}
