//! Reading a scenario: file to text, text to [`ScenarioFile`] (serde, errors carry the
//! field path and the line and column), then [`validate`] to the [`Scenario`].

use std::ops::Range;
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use serde::de::DeserializeOwned;

use super::input::{clip, clip_echoes, clip_plain, read_toml_input};
use super::scenario::Scenario;
use super::schema::ScenarioFile;
use super::validate::{validate, FieldError};

/// Reads, parses and validates a scenario file. Relative trace paths are resolved against
/// the file's directory.
pub fn load(path: &Path) -> Result<Scenario> {
    let text = read_toml_input(path, "scenario")?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&text, base).with_context(|| format!("invalid scenario {}", path.display()))
}

/// Parses and validates scenario text; `base` resolves relative trace paths.
pub fn parse(text: &str, base: &Path) -> Result<Scenario> {
    let file: ScenarioFile = parse_toml(text)?;
    validate(file, base)
}

/// Reads TOML text into `T` (a scenario, a workload); an error is one line with the line,
/// the column and the field, every echoed value cut (see [`syntax_error`]).
pub fn parse_toml<T: DeserializeOwned>(text: &str) -> Result<T> {
    deserialize::<T>(text).map_err(|e| syntax_error::<T>(text, e))
}

type DeError = serde_path_to_error::Error<toml::de::Error>;

fn deserialize<T: DeserializeOwned>(text: &str) -> std::result::Result<T, DeError> {
    serde_path_to_error::deserialize(toml::Deserializer::new(text))
}

/// A TOML or schema error as "line L, column C: FIELD: what is wrong", FIELD being the
/// path inside the file (omitted when the text does not parse as TOML there).
fn syntax_error<T: DeserializeOwned>(text: &str, e: DeError) -> anyhow::Error {
    // A key (in the path) or a value (in the message) may be an input's whole line: cut.
    let mut path = clip_plain(&e.path().to_string());
    let inner = e.into_inner();
    let span = inner.span();
    let mut msg = clip_echoes(&inner.message().trim().replace('\n', ", "));
    if let Some(span) = span.clone().filter(|_| path == ".") {
        // A number TOML cannot represent is a syntax error with no field path: find the
        // field by putting a value no field accepts in its place and parsing again.
        let token = token_at(text, span.start);
        if !token.is_empty() {
            let infinite = || token.replace('_', "").parse().is_ok_and(f64::is_infinite);
            msg = match msg.as_str() {
                "number too large to fit in target type"
                | "number too small to fit in target type" => {
                    format!(
                        "integer out of range: TOML integers are between {} and {} (got {})",
                        i64::MIN,
                        i64::MAX,
                        clip_plain(token)
                    )
                }
                "invalid floating-point number" if infinite() => format!(
                    "number out of range: TOML floats are at most about 1.8e308 (got {})",
                    clip_plain(token)
                ),
                _ => format!("{msg} (at {})", clip(token)),
            };
            if let Some(p) = field_at::<T>(text, span.start, token.len()) {
                path = p;
            }
        }
    }
    msg = friendly_int_range(&msg)
        .or_else(|| friendly_type(&msg))
        .unwrap_or(msg);
    let err = if path == "." {
        anyhow!(msg)
    } else {
        FieldError { field: path, msg }.into()
    };
    match span {
        Some(span) => {
            let (line, column) = line_column(text, span);
            err.context(format!("line {line}, column {column}"))
        }
        None => err,
    }
}

/// 1-based line and column (in characters) of the start of `span` in `text`.
fn line_column(text: &str, span: Range<usize>) -> (usize, usize) {
    let mut at = span.start.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// The bare value (number, date, word) starting at byte `at`, or "".
fn token_at(text: &str, at: usize) -> &str {
    let rest = text.get(at..).unwrap_or("");
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || "+-._:".contains(c)))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The field path of the value at `at..at + len`: the text parsed again with a date there
/// (no field takes one), if that makes the error fall on this very spot.
fn field_at<T: DeserializeOwned>(text: &str, at: usize, len: usize) -> Option<String> {
    let probe = format!(
        "{}1979-05-27T07:32:00Z{}",
        text.get(..at)?,
        text.get(at + len..)?
    );
    let e = deserialize::<T>(&probe).err()?;
    let path = e.path().to_string();
    // The value itself, or the inline table around it (an internally tagged enum).
    let hit = e.inner().span().is_some_and(|s| s.contains(&at));
    (hit && path != ".").then_some(path)
}

/// serde's "invalid value: integer `N`, expected u32" as the range it means.
fn friendly_int_range(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("invalid value: integer `")?;
    let (got, ty) = rest.split_once("`, expected ")?;
    let max = match ty {
        "u8" => u8::MAX as u64,
        "u16" => u16::MAX as u64,
        "u32" => u32::MAX as u64,
        "u64" => u64::MAX,
        _ => return None,
    };
    Some(format!(
        "must be an integer between 0 and {max} (got {got})"
    ))
}

/// serde's "invalid type: floating point `1.5`, expected u8" as what the field takes.
fn friendly_type(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("invalid type: ")?;
    let (got, ty) = rest.rsplit_once(", expected ")?;
    let want = match ty {
        "u8" | "u16" | "u32" | "u64" | "i64" => "a whole number",
        "f64" => "a number",
        "a boolean" => "true or false",
        "a string" => "a string",
        _ => return None,
    };
    // "floating point `1.5`" -> 1.5, "string \"x\"" -> "x"; anything else as serde put it.
    let value = got
        .split_once('`')
        .and_then(|(_, v)| v.strip_suffix('`'))
        .or_else(|| got.strip_prefix("string "))
        .unwrap_or(got);
    Some(format!("must be {want} (got {value})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{default_toml, ChangeKind};
    use crate::link::{DelayDist, RateSpec};

    fn err(text: &str) -> String {
        format!("{:#}", parse(text, Path::new(".")).unwrap_err())
    }

    #[test]
    fn empty_file_is_the_reference_testbed() {
        let s = parse("", Path::new(".")).unwrap();
        assert_eq!(s.legs.len(), 2);
        assert!(matches!(
            s.legs[0].downlink.rate,
            RateSpec::Fixed { bps: 20_000_000 }
        ));
        assert_eq!(s.legs[0].downlink.queue_packets, Some(100));
        assert_eq!(s.legs[0].downlink.delay_limit, Some(10_000));
        assert!(
            matches!(s.legs[0].downlink.delay, DelayDist::Normal { mean_ms, std_ms } if mean_ms == 10.0 && std_ms == 1.0)
        );
        assert!(s.legs[0].uplink.is_some() && s.legs[1].uplink.is_none());
        assert_eq!(
            s.legs[0].uplink.as_ref().unwrap().queue_packets,
            Some(10_000)
        );
        assert_eq!(s.pdcp.sn_bits, 16);
        assert_eq!(s.pdcp.header_bytes, 2);
        assert_eq!(
            s.pdcp.t_reordering,
            Some(200 * crate::base::time::NS_PER_MS)
        );
        assert_eq!(s.bearers.len(), 1);
        assert_eq!(s.bearers[0].legs, vec![0, 1]);
        assert_eq!(s.bearers[0].uplink_leg, Some(0));
        assert_eq!(s.bearers[0].split.batch, 100);
        assert_eq!(s.stats_interval, 100 * crate::base::time::NS_PER_MS);
    }

    #[test]
    fn default_toml_round_trips() {
        let text = default_toml();
        let s = parse(&text, Path::new(".")).unwrap();
        assert_eq!(s.legs.len(), 2);
    }

    #[test]
    fn a_directions_aqm_is_read_with_the_rfcs_defaults_and_checked() {
        use crate::qdisc::AqmSpec;
        let leg = "[[legs]]\nname='a'\n[legs.downlink.aqm]\n";
        let s = parse(&format!("{leg}kind = 'codel'"), Path::new(".")).unwrap();
        assert_eq!(
            s.legs[0].downlink.aqm,
            Some(AqmSpec::Codel {
                target: 5 * crate::base::time::NS_PER_MS,
                interval: 100 * crate::base::time::NS_PER_MS,
                ecn: true
            })
        );
        let s = parse(
            &format!("{leg}kind = 'pie'\ntarget_ms = 20\necn = false"),
            Path::new("."),
        )
        .unwrap();
        assert_eq!(
            s.legs[0].downlink.aqm,
            Some(AqmSpec::Pie {
                target: 20 * crate::base::time::NS_PER_MS,
                t_update: 15 * crate::base::time::NS_PER_MS,
                ecn: false
            })
        );
        assert_eq!(
            parse("", Path::new(".")).unwrap().legs[0].downlink.aqm,
            None
        );
        assert!(err(&format!("{leg}kind = 'red'"))
            .contains("legs[0].downlink.aqm.kind: codel, pie or fq-codel (got \"red\")"));
        let s = parse(&format!("{leg}kind = 'fq-codel'"), Path::new(".")).unwrap();
        assert_eq!(
            s.legs[0].downlink.aqm,
            Some(AqmSpec::FqCodel {
                target: 5 * crate::base::time::NS_PER_MS,
                interval: 100 * crate::base::time::NS_PER_MS,
                ecn: true
            })
        );
        assert!(err(&format!("{leg}kind = 'codel'\ntarget_ms = 0"))
            .contains("legs[0].downlink.aqm.target_ms: must be between 0.1"));
        assert!(
            err(&format!("{leg}kind = 'codel'\nquantum = 3")).contains("unknown field `quantum`")
        );
        // on a cell's downlink, it manages every device's queue
        let cell = "[[legs]]\nname='a'\n[legs.downlink.cell]\ndevices = [{ mean_sinr_db = 10 }]\n[legs.downlink.aqm]\nkind = 'pie'";
        let s = parse(cell, Path::new(".")).unwrap();
        let devices = &s.legs[0].cell.as_ref().unwrap().spec.devices;
        assert!(devices
            .iter()
            .all(|d| matches!(d.aqm, Some(AqmSpec::Pie { .. }))));
    }

    #[test]
    fn errors_name_the_field_and_range() {
        assert!(err("[pdcp]\nsn_bits = 15").contains("pdcp.sn_bits: must be 12, 16 or 18 (got 15)"));
        assert!(
            err("[[legs]]\nname='a'\n[legs.downlink]\nqueue_packets = 0")
                .contains("legs[0].downlink.queue_packets: must be between 1")
        );
        assert!(err("[[legs]]\nname='a'\n[legs.downlink]\nrate = 'fast'")
            .contains("legs[0].downlink.rate"));
        assert!(err("[topology]\nserver_addr = '10.0.0.1'")
            .contains("topology.server_addr: must be in 198.18.0.0/15"));
        assert!(err("[pdcp]\nsn_bits = 'x'").contains("pdcp.sn_bits"));
        assert!(err("[pdcp]\nbogus = 1").contains("unknown field `bogus`"));
        assert!(err("[split]\nratio = [1, 1, 1]")
            .contains("split.ratio: needs one share per leg of the bearer (2), got 3"));
        assert!(
            err("[[legs]]\nname='a'\n[legs.downlink.loss]\nmodel='bernoulli'\npercent=120")
                .contains("legs[0].downlink.loss.percent: must be between 0 and 100")
        );
        assert!(
            err("[[bearers]]\nname='x'\nmode='sc'\nlegs=['leg1','leg2']")
                .contains("bearers[0].legs: an sc bearer takes exactly 1 leg")
        );
        assert!(err("[[bearers]]\nname='x'\nmode='sc'\nlegs=['leg9']")
            .contains("bearers[0].legs[0]: no leg named \"leg9\""));
        assert!(err("[[schedule]]\nat_ms = 10").contains("schedule[0]: changes nothing"));
        assert!(
            err("[[legs]]\nname='a'\n[legs.downlink.trace]\npath='/nonexistent.csv'")
                .contains("legs[0].downlink.trace.path")
        );
    }

    #[test]
    fn syntax_errors_give_line_and_column() {
        assert_eq!(
            err("batch = ["),
            "line 1, column 10: invalid array, expected `]`"
        );
        assert_eq!(
            err("[topology]\nserver_netns = \"abc"),
            "line 2, column 20: invalid basic string"
        );
        assert_eq!(
            err("seed = 1\nseed = 2"),
            "line 2, column 1: duplicate key `seed` in document root (at \"seed\")"
        );
        // Columns count characters, not bytes.
        assert_eq!(
            err("[topology]\nserver_netns = \"é\" x"),
            "line 2, column 20: expected newline, `#` (at \"x\")"
        );
        assert_eq!(err("é = 1"), "line 1, column 1: invalid key");
    }

    #[test]
    fn out_of_range_numbers_name_the_field() {
        let toml_int = "integer out of range: TOML integers are between \
                        -9223372036854775808 and 9223372036854775807";
        assert_eq!(
            err("seed = 18446744073709551616"),
            format!("line 1, column 8: seed: {toml_int} (got 18446744073709551616)")
        );
        assert_eq!(
            err("seed = -1"),
            "line 1, column 8: seed: must be an integer between 0 and 18446744073709551615 (got -1)"
        );
        let leg = "[[legs]]\nname = 'a'\n[[legs]]\nname = 'b'\n[legs.downlink]\n";
        assert_eq!(
            err(&format!("{leg}queue_packets = 99999999999999999999")),
            format!(
                "line 6, column 17: legs[1].downlink.queue_packets: {toml_int} \
                 (got 99999999999999999999)"
            )
        );
        assert_eq!(
            err(&format!("{leg}delay_limit = 9999999999")),
            "line 6, column 15: legs[1].downlink.delay_limit: \
             must be an integer between 0 and 4294967295 (got 9999999999)"
        );
        assert_eq!(
            err(&format!(
                "{leg}delay = {{ distribution = 'constant', ms = 99999999999999999999 }}"
            )),
            format!(
                "line 6, column 43: legs[1].downlink.delay: {toml_int} (got 99999999999999999999)"
            )
        );
        assert_eq!(
            err(&format!(
                "{leg}delay = {{ distribution = 'constant', ms = 1e400 }}"
            )),
            "line 6, column 43: legs[1].downlink.delay: \
             number out of range: TOML floats are at most about 1.8e308 (got 1e400)"
        );
        assert_eq!(
            err("[split]\nratio = [1, -99999999999999999999]"),
            format!("line 2, column 13: split.ratio[1]: {toml_int} (got -99999999999999999999)")
        );
        assert_eq!(
            err("[pdcp]\ninitial_count = 4294967296"),
            "line 2, column 17: pdcp.initial_count: \
             must be an integer between 0 and 4294967295 (got 4294967296)"
        );
        assert_eq!(
            err("[pdcp]\nsn_bits = 300"),
            "line 2, column 11: pdcp.sn_bits: must be an integer between 0 and 255 (got 300)"
        );
        assert_eq!(
            err("[pdcp]\nt_reordering_ms = 'x'"),
            "line 2, column 19: pdcp.t_reordering_ms: must be a number of ms or \"inf\""
        );
        assert_eq!(
            err("[[bearers]]\nname = 'a'\nmode = 'dc'\nmatch = [{ server_port = 70000 }]"),
            "line 4, column 26: bearers[0].match[0].server_port: \
             must be a port 0-65535 or a range \"lo-hi\" as a string"
        );
        // Values TOML reads but the ranges refuse: checked after parsing, by field.
        for (text, want) in [
            (
                "[[schedule]]\nat_ms = 1e30\nsplit = { batch = 5 }",
                "schedule[0].at_ms: must be between 0 and 1000000000 (got 1e30)",
            ),
            (
                "[stats]\ninterval_ms = 1e-9",
                "stats.interval_ms: must be between 1 and 3600000 (got 1e-9)",
            ),
            (
                "[pdcp]\nt_reordering_ms = inf",
                "pdcp.t_reordering_ms: must be between 0 and 3600000 (got inf)",
            ),
            (
                "[[legs]]\nname = 'a'\n[legs.downlink]\nrate = '1e30 Gbit/s'",
                "legs[0].downlink.rate: must be between 1kbit and 1000gbit per second, \
                 or \"unlimited\" (got 1e39 bit/s)",
            ),
            (
                "[[legs]]\nname = 'a'\n[legs.downlink]\nrate = nan",
                "legs[0].downlink.rate: must be between 1kbit and 1000gbit per second, \
                 or \"unlimited\" (got NaN bit/s)",
            ),
            (
                "[[legs]]\nname = 'a'\n[legs.downlink]\n\
                 delay = { distribution = 'constant', ms = 1e300 }",
                "legs[0].downlink.delay.ms: must be between 0 and 100000 (got 1e300)",
            ),
            (
                "[[legs]]\nname = 'a'\n[legs.downlink]\nqueue_bytes = 9223372036854775807",
                "legs[0].downlink.queue_bytes: must be between 1500 and 100000000000 \
                 (got 9.223372e18)",
            ),
            (
                "[split]\nratio = [1e308, 1e308]",
                "split.ratio[0]: must be between 0 and 1000000 (got 1e308)",
            ),
        ] {
            assert_eq!(err(text), want, "{text}");
        }
    }

    #[test]
    fn bearers_rules_and_schedule() {
        let s = parse(
            r#"
            [[bearers]]
            name = "dc"
            mode = "dc"
            match = [{ protocol = "udp", server_port = 4433 }]
            [[bearers]]
            name = "sc1"
            mode = "sc"
            legs = ["leg1"]
            match = [{ server_port = "8000-8001", client_addr = "198.18.0.0/15" }]
            [[schedule]]
            at_ms = 2000
            leg = "leg2"
            rate = "5mbit"
            [[schedule]]
            at_ms = 1000
            split = { ratio = [9, 1] }
            "#,
            Path::new("."),
        )
        .unwrap();
        assert_eq!(s.bearers[0].rules[0].protocol, Some(17));
        assert_eq!(s.bearers[0].rules[0].server_ports, Some((4433, 4433)));
        assert_eq!(s.bearers[1].rules[0].server_ports, Some((8000, 8001)));
        assert_eq!(
            s.bearers[1].rules[0].client_net,
            Some((0xC612_0000, 0xFFFE_0000))
        );
        assert_eq!(s.schedule.len(), 2);
        assert_eq!(s.schedule[0].at, crate::base::time::NS_PER_S);
        assert!(matches!(
            s.schedule[1].what,
            ChangeKind::Rate {
                leg: 1,
                uplink: false,
                rate: RateSpec::Fixed { bps: 5_000_000 }
            }
        ));
    }

    const CELL_LEG: &str = r#"
        [[legs]]
        name = "lte"
        [legs.downlink]
        delay = { distribution = "constant", ms = 12 }
        [legs.downlink.cell]
        bandwidth_mhz = 20
        scheduler = "pf"
        [[legs.downlink.cell.devices]]
        mean_sinr_db = 20
        [[legs.downlink.cell.devices]]
        mean_sinr_db = 3
        doppler_hz = 0
        fading = "none"
        queue_bytes = 100000
        [[legs]]
        name = "wifi"
        [[bearers]]
        name = "a"
        mode = "sc"
        legs = ["wifi"]
        [[bearers]]
        name = "b"
        mode = "dc"
        [[bearers]]
        name = "c"
        mode = "sc"
        legs = ["lte"]
        "#;

    #[test]
    fn cell_legs_map_bearers_to_devices_in_order() {
        use crate::cell::{FadingModel, SchedulerSpec};
        let s = parse(CELL_LEG, Path::new(".")).unwrap();
        let c = s.legs[0].cell.as_ref().unwrap();
        assert!(s.legs[1].cell.is_none());
        assert_eq!(c.spec.bandwidth_mhz, 20.0);
        assert_eq!(c.spec.scheduler, SchedulerSpec::proportional_fair());
        // Bearer "a" does not use the leg; "b" (dc over both legs) is device 0, "c" 1.
        assert_eq!(c.device_of_bearer, [None, Some(0), Some(1)]);
        let d = &c.spec.devices;
        assert_eq!(d[0].mean_sinr_db, 20.0);
        assert_eq!((d[0].doppler_hz, d[0].fading), (5.0, FadingModel::Rayleigh));
        assert_eq!(d[0].queue_bytes, Some(512_000));
        assert_eq!(
            (d[1].fading, d[1].queue_bytes),
            (FadingModel::None, Some(100_000))
        );
        // `dcemu check` prints the cell with its defaults, and that parses again.
        let text = toml::to_string_pretty(&s.file).unwrap();
        assert!(text.contains("[legs.downlink.cell]"), "{text}");
        let again = parse(&text, Path::new(".")).unwrap();
        assert_eq!(again.legs[0].cell.as_ref().unwrap().spec, c.spec);
        // One leg, no bearers: the default bearer is the one device.
        let one = "[[legs]]\nname = 'lte'\n[legs.downlink.cell]\n\
                   devices = [{ mean_sinr_db = 10 }]";
        let s = parse(one, Path::new(".")).unwrap();
        assert_eq!(s.legs[0].cell.as_ref().unwrap().device_of_bearer, [Some(0)]);
    }

    #[test]
    fn bad_cells_name_the_field() {
        let cell = "[[legs]]\nname = 'lte'\n[legs.downlink.cell]\n";
        let dev = "[[legs.downlink.cell.devices]]\nmean_sinr_db = 10\n";
        for (text, want) in [
            (
                format!("{cell}bandwidth_mhz = 7\n{dev}"),
                "legs[0].downlink.cell.bandwidth_mhz: must be 1.4, 3, 5, 10, 15 or 20 (MHz) \
                 (got 7)",
            ),
            (
                format!("{cell}scheduler = 'fifo'\n{dev}"),
                "legs[0].downlink.cell.scheduler: must be \"rr\" (round robin) or \"pf\" \
                 (proportional fair) (got \"fifo\")",
            ),
            (
                format!("{cell}tc_ttis = 0.5\n{dev}"),
                "legs[0].downlink.cell.tc_ttis: must be between 1 and 1000000 (got 0.5)",
            ),
            (
                format!("{cell}devices = []"),
                "legs[0].downlink.cell.devices: must list 1 to 1000 devices, one per bearer \
                 on the leg (got 0)",
            ),
            (
                format!("{cell}{dev}fading = 'rician'"),
                "legs[0].downlink.cell.devices[0].fading: must be \"rayleigh\" or \"none\" \
                 (got \"rician\")",
            ),
            (
                format!("{cell}{dev}doppler_hz = -1"),
                "legs[0].downlink.cell.devices[0].doppler_hz: must be between 0 and 2000 \
                 (got -1)",
            ),
            (
                format!("{cell}[[legs.downlink.cell.devices]]\nmean_sinr_db = 99"),
                "legs[0].downlink.cell.devices[0].mean_sinr_db: must be between -30 and 60 \
                 (got 99)",
            ),
            (
                format!("{cell}{dev}queue_bytes = 10"),
                "legs[0].downlink.cell.devices[0].queue_bytes: must be between 1500 and \
                 100000000000 (got 10)",
            ),
            (
                format!("{cell}{dev}{dev}"),
                "legs[0].downlink.cell.devices: needs one device per bearer on leg \"lte\", \
                 in bearer order (1 bearer: dc), got 2",
            ),
            (
                format!(
                    "[[legs]]\nname = 'lte'\n[legs.downlink]\nrate = '5mbit'\n\
                         [legs.downlink.cell]\n{dev}"
                ),
                "legs[0].downlink.rate: a cell replaces the rate stage (its capacity follows \
                 the channel): remove rate",
            ),
            (
                format!(
                    "[[legs]]\nname = 'lte'\n[legs.downlink]\nqueue_bytes = 5000\n\
                         [legs.downlink.cell]\n{dev}"
                ),
                "legs[0].downlink.queue_bytes: a cell has a queue per device: give \
                 queue_bytes or queue_packets in cell.devices instead",
            ),
            (
                "[[legs]]\nname = 'lte'\n[legs.uplink.cell]\ndevices = [{ mean_sinr_db = 1 }]"
                    .into(),
                "legs[0].uplink.cell: a cell models the downlink only (give it in the leg's \
                 downlink)",
            ),
            (
                format!(
                    "[[legs]]\nname = 'lte'\n[legs.downlink]\nloss_at = 'before-rate'\n\
                         [legs.downlink.cell]\n{dev}"
                ),
                "legs[0].downlink.loss_at: a cell has no rate stage to put loss before: use \
                 \"after-rate\" (the default)",
            ),
            (
                "[[legs]]\nname = 'a'\n[legs.downlink]\nloss_at = 'middle'".into(),
                "line 4, column 11: legs[0].downlink.loss_at: unknown variant `middle`, \
                 expected `after-rate` or `before-rate`",
            ),
            (
                format!("{cell}{dev}[[schedule]]\nat_ms = 5\nleg = 'lte'\nrate = '1mbit'"),
                "schedule[0].rate: leg \"lte\"'s downlink is a cell (its capacity follows \
                 the channel); only delay and loss can change",
            ),
        ] {
            assert_eq!(err(&text), want, "{text}");
        }
        // Delay and loss of a cell leg may change.
        let ok = format!("{cell}{dev}[[schedule]]\nat_ms = 5\nleg = 'lte'\nloss = {{ model = 'bernoulli', percent = 1 }}");
        assert!(parse(&ok, Path::new(".")).is_ok());
    }

    #[test]
    fn infinite_t_reordering() {
        let s = parse("[pdcp]\nt_reordering_ms = 'inf'", Path::new(".")).unwrap();
        assert_eq!(s.pdcp.t_reordering, None);
    }
}
