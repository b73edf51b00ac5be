//! Reading bandwidth trace files into the link's in-memory [`RateTrace`].
//!
//! Two formats, because the sources differ in kind: mahimahi traces list delivery
//! opportunities (one millisecond per line), the UCC (Raca et al.) CSVs give a bit rate per
//! row. Loading lives here, not in `link/`, so the link level holds no file access.

use std::path::Path;

use anyhow::{bail, Context};

use super::input::{clip, clip_plain, read_input};
use crate::base::time::{MAX_TIME_MS, NS_PER_MS};
use crate::link::RateTrace;

/// Longest CSV row, ms (an hour).
pub const MAX_ROW_MS: u64 = 3_600_000;
/// Largest CSV rate, kbit/s (1000 gbit/s, as for a fixed rate).
pub const MAX_KBPS: f64 = 1e9;

/// Loads a mahimahi trace: one non-negative integer (ms) per line, non-decreasing, at
/// most [`MAX_TIME_MS`] (10 years). Blank lines are ignored. The last timestamp must be
/// > 0 (it is the loop period).
pub fn load_mahimahi(path: impl AsRef<Path>) -> anyhow::Result<RateTrace> {
    let path = path.as_ref();
    let text = read_input(path, "mahimahi trace")?;
    parse_mahimahi(&text).with_context(|| format!("mahimahi trace {}", path.display()))
}

/// Parses the text of a mahimahi trace (see [`load_mahimahi`]).
pub fn parse_mahimahi(text: &str) -> anyhow::Result<RateTrace> {
    let mut times_ms = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let s = line.trim();
        if s.is_empty() {
            continue;
        }
        let Some(t) = s.parse::<u64>().ok().filter(|t| *t <= MAX_TIME_MS) else {
            bail!(
                "line {}: {} is not a whole number of ms between 0 and {MAX_TIME_MS} \
                 (10 years)",
                i + 1,
                clip(s)
            );
        };
        if let Some(&prev) = times_ms.last() {
            if t < prev {
                bail!(
                    "line {}: timestamp {t} ms goes back in time (previous {prev} ms)",
                    i + 1
                );
            }
        }
        times_ms.push(t);
    }
    let Some(&period_ms) = times_ms.last() else {
        bail!("empty trace: no timestamps")
    };
    if period_ms == 0 {
        bail!("trace must last a nonzero time (its last timestamp is its loop period, here 0)");
    }
    Ok(RateTrace::Opportunities {
        times_ms,
        period_ms,
    })
}

/// Loads a UCC-style CSV: a header row naming the columns, then one row per `row_ms`
/// (1 to [`MAX_ROW_MS`]) whose `column` holds the rate in kbit/s (decimals allowed, 0 to
/// [`MAX_KBPS`]); all rows together last at most 10 years. Timestamps in the file are
/// ignored: rows are taken as consecutive `row_ms` slots (the 5G files repeat timestamps).
/// Callers without a preference pass `"DL_bitrate"` and `1000`.
pub fn load_csv(path: impl AsRef<Path>, column: &str, row_ms: u64) -> anyhow::Result<RateTrace> {
    let path = path.as_ref();
    let text = read_input(path, "CSV trace")?;
    parse_csv(&text, column, row_ms).with_context(|| format!("CSV trace {}", path.display()))
}

/// Parses CSV text (see [`load_csv`]). Fields are split on commas; surrounding quotes are
/// stripped (quoted commas are not supported: the datasets have none).
pub fn parse_csv(text: &str, column: &str, row_ms: u64) -> anyhow::Result<RateTrace> {
    if !(1..=MAX_ROW_MS).contains(&row_ms) {
        bail!("row duration must be between 1 and {MAX_ROW_MS} ms (got {row_ms})");
    }
    let field = |s: &str| s.trim().trim_matches('"').trim().to_string();
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((hline, header)) = lines.next() else {
        bail!("empty file: no header row")
    };
    let header = header.trim_start_matches('\u{feff}');
    let names: Vec<String> = header.split(',').map(field).collect();
    let Some(col) = names.iter().position(|n| n == column) else {
        bail!(
            "line {}: no column named {} in header (have: {})",
            hline + 1,
            clip(column),
            clip_plain(&names.join(", "))
        );
    };
    let mut steps = Vec::new();
    let mut total_ms: u64 = 0;
    for (i, line) in lines {
        let raw = line.split(',').nth(col).with_context(|| {
            format!(
                "line {}: row has no field for column {} (index {})",
                i + 1,
                clip(column),
                col + 1
            )
        })?;
        let v = field(raw);
        let kbps: f64 = v
            .parse()
            .ok()
            .filter(|x: &f64| (0.0..=MAX_KBPS).contains(x))
            .with_context(|| {
                format!(
                    "line {}, column {}: {} is not a kbit/s value between 0 and \
                     {MAX_KBPS} (1000 gbit/s)",
                    i + 1,
                    clip(column),
                    clip(&v)
                )
            })?;
        total_ms += row_ms;
        if total_ms > MAX_TIME_MS {
            bail!(
                "line {}: the trace lasts more than {MAX_TIME_MS} ms (10 years) at {row_ms} ms \
                 per row",
                i + 1
            );
        }
        steps.push((row_ms * NS_PER_MS, (kbps * 1000.0).round() as u64));
    }
    if steps.is_empty() {
        bail!("empty trace: header but no data rows");
    }
    Ok(RateTrace::Steps { steps })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::base::time::{Nanos, NS_PER_S};
    use crate::link::rate::tests::{assert_exact, mixed_len, saturated, Cap};
    use crate::link::rate::UNITS_PER_BYTE;
    use crate::link::RateSpec;

    /// A trace shipped in the repository's `data/traces/` (always present).
    fn shared(rel: &str) -> Option<String> {
        let p = format!("{}/../data/traces/{rel}", env!("CARGO_MANIFEST_DIR"));
        assert!(
            std::path::Path::new(&p).exists(),
            "shipped trace {p} is missing"
        );
        Some(p)
    }

    #[test]
    fn mahimahi_parses_repeats_and_period() {
        let t = parse_mahimahi("0\n0\n3\n\n7\n").unwrap();
        assert_eq!(
            t,
            RateTrace::Opportunities {
                times_ms: vec![0, 0, 3, 7],
                period_ms: 7
            }
        );
        assert_eq!(t.duration(), 7 * NS_PER_MS);
    }

    #[test]
    fn mahimahi_errors_are_clear() {
        let e = format!("{:#}", parse_mahimahi("1\n2\nx3\n").unwrap_err());
        assert!(e.contains("line 3") && e.contains("x3"), "{e}");
        let e = format!("{:#}", parse_mahimahi("5\n4\n").unwrap_err());
        assert!(e.contains("line 2") && e.contains("back in time"), "{e}");
        assert!(format!("{:#}", parse_mahimahi("\n\n").unwrap_err()).contains("empty"));
        assert!(format!("{:#}", parse_mahimahi("0\n0\n").unwrap_err()).contains("nonzero"));
        let e = format!("{:#}", load_mahimahi("/nonexistent/x.down").unwrap_err());
        assert!(e.contains("/nonexistent/x.down"), "{e}");
    }

    #[test]
    fn bad_mahimahi_values_name_the_line() {
        let range = "is not a whole number of ms between 0 and 315360000000 (10 years)";
        for (text, want) in [
            ("", "empty trace: no timestamps".to_string()),
            ("  \n\t\n", "empty trace: no timestamps".to_string()),
            ("1\nabc\n", format!("line 2: \"abc\" {range}")),
            ("1\n\n-5\n", format!("line 3: \"-5\" {range}")),
            ("1.5\n", format!("line 1: \"1.5\" {range}")),
            ("NaN\n", format!("line 1: \"NaN\" {range}")),
            ("inf\n", format!("line 1: \"inf\" {range}")),
            ("1e3\n", format!("line 1: \"1e3\" {range}")),
            (
                "99999999999999999999\n",
                format!("line 1: \"99999999999999999999\" {range}"),
            ),
            (
                "315360000001\n",
                format!("line 1: \"315360000001\" {range}"),
            ),
            (
                "5\n7\n6\n",
                "line 3: timestamp 6 ms goes back in time (previous 7 ms)".to_string(),
            ),
        ] {
            let e = format!("{:#}", parse_mahimahi(text).unwrap_err());
            assert_eq!(e, want, "{text:?}");
        }
        // The largest timestamp is allowed, and its duration fits.
        let t = parse_mahimahi("0\n315360000000\n").unwrap();
        assert_eq!(t.duration(), MAX_TIME_MS * NS_PER_MS);
    }

    #[test]
    fn bad_csv_values_name_the_line() {
        let range = "is not a kbit/s value between 0 and 1000000000 (1000 gbit/s)";
        for (text, row_ms, want) in [
            ("", 1000, "empty file: no header row".to_string()),
            (
                "DL\n",
                1000,
                "empty trace: header but no data rows".to_string(),
            ),
            (
                "a,b\n1,2\n",
                1000,
                "line 1: no column named \"DL\" in header (have: a, b)".to_string(),
            ),
            (
                "DL\n1\nx\n",
                1000,
                format!("line 3, column \"DL\": \"x\" {range}"),
            ),
            (
                "DL\n-1\n",
                1000,
                format!("line 2, column \"DL\": \"-1\" {range}"),
            ),
            (
                "DL\nNaN\n",
                1000,
                format!("line 2, column \"DL\": \"NaN\" {range}"),
            ),
            (
                "DL\ninf\n",
                1000,
                format!("line 2, column \"DL\": \"inf\" {range}"),
            ),
            (
                "DL\n1e30\n",
                1000,
                format!("line 2, column \"DL\": \"1e30\" {range}"),
            ),
            (
                "DL\n\"\"\n",
                1000,
                format!("line 2, column \"DL\": \"\" {range}"),
            ),
            (
                "DL\n1\n",
                0,
                "row duration must be between 1 and 3600000 ms (got 0)".to_string(),
            ),
            (
                "DL\n1\n",
                u64::MAX,
                "row duration must be between 1 and 3600000 ms (got 18446744073709551615)"
                    .to_string(),
            ),
        ] {
            let e = format!("{:#}", parse_csv(text, "DL", row_ms).unwrap_err());
            assert_eq!(e, want, "{text:?} {row_ms}");
        }
        // The largest rate and row are allowed; 10 years of rows fit, one more does not.
        let t = parse_csv("DL\n1000000000\n", "DL", MAX_ROW_MS).unwrap();
        assert_eq!(
            t,
            RateTrace::Steps {
                steps: vec![(MAX_ROW_MS * NS_PER_MS, 1_000_000_000_000)]
            }
        );
        let rows = (MAX_TIME_MS / MAX_ROW_MS) as usize;
        let text = format!("DL\n{}", "1\n".repeat(rows));
        assert_eq!(
            parse_csv(&text, "DL", MAX_ROW_MS).unwrap().duration(),
            MAX_TIME_MS * NS_PER_MS
        );
        let e = format!(
            "{:#}",
            parse_csv(&format!("{text}1\n"), "DL", MAX_ROW_MS).unwrap_err()
        );
        assert_eq!(
            e,
            format!(
                "line {}: the trace lasts more than 315360000000 ms (10 years) at 3600000 ms per row",
                rows + 2
            )
        );
    }

    #[test]
    fn shared_mahimahi_trace_loads() {
        let Some(p) = shared("mahimahi/ATT-LTE-driving-2016.down") else {
            return;
        };
        let t = load_mahimahi(p).unwrap();
        let RateTrace::Opportunities {
            times_ms,
            period_ms,
        } = &t
        else {
            panic!()
        };
        assert_eq!(times_ms.len(), 45604);
        assert_eq!(*period_ms, 120002);
        let mean = t.mean_bps();
        assert!((mean - 45604.0 * 12000.0 / 120.002).abs() < 1.0, "{mean}");
    }

    #[test]
    fn csv_parses_named_column() {
        let text = "a,DL_bitrate,c\n1,13577,x\n2,\"0\",y\n3,1.5,z\n";
        let t = parse_csv(text, "DL_bitrate", 1000).unwrap();
        let s = 1000 * NS_PER_MS;
        assert_eq!(
            t,
            RateTrace::Steps {
                steps: vec![(s, 13_577_000), (s, 0), (s, 1500)]
            }
        );
        let t = parse_csv(text, "DL_bitrate", 250).unwrap();
        assert_eq!(t.duration(), 750 * NS_PER_MS);
    }

    #[test]
    fn csv_errors_are_clear() {
        let e = format!(
            "{:#}",
            parse_csv("a,b\n1,2\n", "DL_bitrate", 1000).unwrap_err()
        );
        assert!(
            e.contains("line 1") && e.contains("DL_bitrate") && e.contains("a, b"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            parse_csv("a,DL\n1,2\n2,-\n", "DL", 1000).unwrap_err()
        );
        assert!(
            e.contains("line 3") && e.contains("\"DL\"") && e.contains("\"-\""),
            "{e}"
        );
        let e = format!("{:#}", parse_csv("a,DL\n1\n", "DL", 1000).unwrap_err());
        assert!(e.contains("line 2") && e.contains("no field"), "{e}");
        assert!(format!("{:#}", parse_csv("a,DL\n", "DL", 1000).unwrap_err()).contains("empty"));
        assert!(format!("{:#}", parse_csv("", "DL", 1000).unwrap_err()).contains("empty"));
        let e = format!(
            "{:#}",
            load_csv("/nonexistent/t.csv", "DL", 1000).unwrap_err()
        );
        assert!(e.contains("/nonexistent/t.csv"), "{e}");
    }

    #[test]
    fn shared_csv_traces_load() {
        let Some(p) = shared("raca4g/4G_A_2018.01.27_13.58.29.csv") else {
            return;
        };
        let t = load_csv(p, "DL_bitrate", 1000).unwrap();
        let RateTrace::Steps { steps } = &t else {
            panic!()
        };
        assert_eq!(steps.len(), 856);
        assert_eq!(steps[0], (1000 * NS_PER_MS, 13_577_000));
        assert_eq!(steps[2], (1000 * NS_PER_MS, 10_109_000));
        for f in [
            "Download_Driving_B_2019.12.16_14.23.32",
            "Download_Static_B_2020.02.13_13.57.29",
        ] {
            let Some(p) = shared(&format!("raca5g/{f}.csv")) else {
                return;
            };
            let t = load_csv(p, "DL_bitrate", 1000).unwrap();
            assert!(t.mean_bps() > 0.0);
        }
    }

    #[test]
    fn shared_csv_trace_delivers_its_integral() {
        let Some(p) = shared("raca4g/4G_A_2018.01.27_13.58.29.csv") else {
            return;
        };
        let trace = load_csv(p, "DL_bitrate", 1000).unwrap();
        let RateTrace::Steps { steps } = &trace else {
            panic!()
        };
        let horizon = 200 * NS_PER_S;
        let mut segs = Vec::new();
        let mut t = 0;
        for &(d, bps) in steps.iter().take(200) {
            segs.push((t, bps));
            t += d;
        }
        let cap = Cap::new(segs);
        let n = (cap.at(horizon) / UNITS_PER_BYTE / 700) as u32 + 50;
        let spec = RateSpec::Trace {
            trace: Arc::new(trace.clone()),
            looping: false,
            start_offset: 0,
        };
        let out = saturated(spec, n, mixed_len, horizon);
        assert!(out.len() < n as usize, "not saturated");
        let bytes = assert_exact(&out, &cap);
        assert!(cap.at(horizon) / UNITS_PER_BYTE - bytes as u128 <= 1500);
        // Per second, bytes delivered match the row's kbit/s within a packet either side.
        let mut per_s = vec![0i64; 200];
        for (t, p) in &out {
            per_s[((t - 1) / NS_PER_S) as usize] += p.len as i64;
        }
        for (i, b) in per_s.iter().enumerate() {
            let want = (steps[i].1 / 8) as i64;
            assert!((b - want).abs() <= 2 * 1500, "second {i}: {b} vs {want}");
        }
    }

    #[test]
    fn shared_mahimahi_trace_delivers_one_packet_per_opportunity() {
        let Some(p) = shared("mahimahi/ATT-LTE-driving-2016.down") else {
            return;
        };
        let trace = Arc::new(load_mahimahi(p).unwrap());
        let RateTrace::Opportunities {
            times_ms,
            period_ms,
        } = &*trace
        else {
            panic!()
        };
        let offset = 5 * NS_PER_S;
        let horizon = offset + (period_ms + 10_000) * NS_PER_MS; // past one loop

        // Opportunities in [offset, horizon] counted straight from the file, two laps.
        let count = |lim_ms: u64| -> usize {
            times_ms.iter().filter(|&&t| t <= lim_ms).count()
                + times_ms
                    .iter()
                    .filter(|&&t| lim_ms >= *period_ms && t <= lim_ms - period_ms)
                    .count()
        };
        let lim = (horizon - offset) / NS_PER_MS;
        let n = count(lim) as u32 + 100;
        let spec = RateSpec::Trace {
            trace: trace.clone(),
            looping: true,
            start_offset: offset,
        };
        let out = saturated(spec.clone(), n, |_| 1500, horizon);
        assert_eq!(out.len(), count(lim));
        assert!(out[0].0 >= offset);
        // Every window of the first lap: delivered bytes = opportunities · 1500.
        for w in [
            (0u64, 1000u64),
            (10_000, 11_000),
            (60_000, 70_000),
            (119_000, 120_001),
        ] {
            let got = out
                .iter()
                .filter(|o| o.0 > offset + w.0 * NS_PER_MS && o.0 <= offset + w.1 * NS_PER_MS)
                .count();
            let want = times_ms.iter().filter(|&&t| t > w.0 && t <= w.1).count();
            assert_eq!(got, want, "window {w:?}");
        }
        // Mixed sizes: the k-th packet leaves at the first opportunity by which the
        // cumulative credit (1500 per opportunity) covers the cumulative bytes.
        let laps: Vec<Nanos> = (0..2)
            .flat_map(|lap| {
                times_ms
                    .iter()
                    .map(move |&t| offset + (lap * period_ms + t) * NS_PER_MS)
            })
            .collect();
        let out = saturated(spec, n, mixed_len, horizon);
        assert!(out.len() > 40_000);
        let mut bytes = 0u64;
        for (t, p) in &out {
            bytes += p.len as u64;
            assert_eq!(*t, laps[(bytes.div_ceil(1500) - 1) as usize], "{bytes}");
        }
    }
}
