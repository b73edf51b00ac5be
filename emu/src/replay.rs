//! Offline receiver for `dcemu pdcp-replay`: feeds a text trace of arrivals through
//! `PdcpRx` in virtual time and prints what it delivers and discards.
//!
//! Input, one arrival per line: `<time_ms> <sn>`. Times may have up to 6 decimals (exact
//! nanoseconds, no float rounding), must not decrease and are at most 10 years
//! ([`MAX_TIME_MS`]), so a timer started at the last arrival still expires at an instant
//! that exists. Blank lines and `#` comments are ignored. The input is streamed, each line
//! at most [`LINE_LIMIT`](crate::config::input::LINE_LIMIT) bytes of UTF-8 (so
//! `/dev/zero` is refused at its first line). Output, one line per event in time order:
//!
//! ```text
//! deliver <time_ms> <count>
//! discard <time_ms> <sn> <late|duplicate|hfn>
//! ```
//!
//! After the last arrival the running timer fires (repeatedly, if it restarts) until it
//! stops; an infinite timer never fires. The final counters go to `err` as one JSON line.

use crate::base::time::{fmt_ms, Nanos, MAX_TIME_MS, NS_PER_MS};
use crate::base::HistSummary;
use crate::config::input::{clip, clip_plain, read_line};
use crate::pdcp::{PdcpRx, RxConfig, RxCounters, RxEvent, SnSpace};
use anyhow::{anyhow, bail, Context};
use serde::Serialize;
use std::io::{BufRead, BufWriter, Write};

/// Receiver settings for a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayOptions {
    pub sn_bits: u8,
    /// t-Reordering; `None` is infinity.
    pub t_reordering: Option<Nanos>,
    pub initial_count: u32,
    pub out_of_order: bool,
}

/// Final JSON summary: the counters plus where the window ended.
#[derive(Serialize)]
struct Summary<'a> {
    #[serde(flatten)]
    counters: &'a RxCounters,
    wait: HistSummary,
    rx_next: u64,
    rx_deliv: u64,
}

/// Runs the receiver over `input`, writing events to `out` and the summary to `err`.
pub fn run_replay(
    opts: &ReplayOptions,
    mut input: impl BufRead,
    out: impl Write,
    mut err: impl Write,
) -> anyhow::Result<()> {
    let space = SnSpace::new(opts.sn_bits).map_err(|e| anyhow!(e))?;
    let mut rx = PdcpRx::<()>::new(RxConfig {
        sn_bits: opts.sn_bits,
        t_reordering: opts.t_reordering,
        out_of_order: opts.out_of_order,
        initial_count: opts.initial_count,
    });
    let mut out = BufWriter::new(out);
    // The receiver reports through a closure that cannot fail; keep the first write error.
    let mut write_err: Option<std::io::Error> = None;
    let mut sink = |e: RxEvent<()>| {
        if write_err.is_some() {
            return;
        }
        let r = match e {
            RxEvent::Deliver { at, count, .. } => writeln!(out, "deliver {} {count}", fmt_ms(at)),
            RxEvent::Discard { at, sn, reason, .. } => {
                writeln!(out, "discard {} {sn} {}", fmt_ms(at), reason.as_str())
            }
        };
        write_err = r.err();
    };

    let mut prev: Option<Nanos> = None;
    let mut line = String::new();
    for n in 1.. {
        if !read_line(&mut input, &mut line).map_err(|e| anyhow!("line {n}: {e}"))? {
            break;
        }
        let Some((now, sn)) = parse_line(&line, space).map_err(|e| anyhow!("line {n}: {e}"))?
        else {
            continue;
        };
        if let Some(p) = prev.filter(|&p| now < p) {
            bail!(
                "line {n}: time {} ms is before the previous arrival at {} ms",
                fmt_ms(now),
                fmt_ms(p)
            );
        }
        prev = Some(now);
        rx.receive(now, sn, (), &mut sink);
    }
    while let Some(deadline) = rx.next_deadline() {
        rx.poll(deadline, &mut sink);
    }
    if let Some(e) = write_err {
        return Err(e).context("writing replay output");
    }
    out.flush().context("writing replay output")?;

    let (rx_next, rx_deliv, _) = rx.state_wide();
    let summary = Summary {
        counters: rx.counters(),
        wait: rx.counters().wait.summary_us(),
        rx_next,
        rx_deliv,
    };
    serde_json::to_writer(&mut err, &summary)?;
    writeln!(err)?;
    Ok(())
}

/// Why an input line was refused (the caller adds its number).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LineError {
    #[error("expected `<time_ms> <sn>`, got {0}")]
    Shape(String),
    #[error("bad time {time}: {source}")]
    Time { time: String, source: MsError },
    #[error("bad SN {0}: not a non-negative integer")]
    Sn(String),
    #[error("SN {sn} does not fit in {bits} bits (must be < {modulus})")]
    SnRange { sn: String, bits: u8, modulus: u32 },
}

/// Why a millisecond value was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MsError {
    #[error("expected milliseconds like 12 or 12.345 (no sign, no exponent)")]
    NotDecimal,
    #[error("more than 6 decimals (nanosecond resolution)")]
    TooPrecise,
    #[error("must be at most {MAX_TIME_MS} ms (10 years)")]
    TooLarge,
}

/// One input line: `None` for blank lines and comments, else (time in ns, SN).
fn parse_line(line: &str, space: SnSpace) -> Result<Option<(Nanos, u32)>, LineError> {
    let body = line.split('#').next().unwrap_or("").trim();
    if body.is_empty() {
        return Ok(None);
    }
    let fields: Vec<&str> = body.split_whitespace().collect();
    let [time, sn] = fields[..] else {
        return Err(LineError::Shape(clip(line.trim())));
    };
    let now = parse_ms(time).map_err(|source| LineError::Time {
        time: clip(time),
        source,
    })?;
    if sn.is_empty() || !sn.bytes().all(|b| b.is_ascii_digit()) {
        return Err(LineError::Sn(clip(sn)));
    }
    match sn.parse::<u32>() {
        Ok(v) if v < space.modulus() => Ok(Some((now, v))),
        _ => Err(LineError::SnRange {
            sn: clip_plain(sn),
            bits: space.bits(),
            modulus: space.modulus(),
        }),
    }
}

/// Parses a non-negative decimal millisecond value ("12", "0.5", "3.000001") into exact
/// nanoseconds. At most 6 decimals, unless the extra ones are zeros; at most
/// [`MAX_TIME_MS`] (10 years).
pub fn parse_ms(s: &str) -> Result<Nanos, MsError> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) {
        return Err(MsError::NotDecimal);
    }
    let (frac, extra) = frac.split_at(frac.len().min(6));
    if extra.bytes().any(|b| b != b'0') {
        return Err(MsError::TooPrecise);
    }
    let whole: u64 = int.parse().map_err(|_| MsError::TooLarge)?;
    // Right-pad the fraction to 6 digits: "5" -> 500000 ns.
    let frac_ns = frac
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(6)
        .fold(0u64, |a, b| a * 10 + (b - b'0') as u64);
    whole
        .checked_mul(NS_PER_MS)
        .and_then(|ns| ns.checked_add(frac_ns))
        .filter(|&ns| ns <= MAX_TIME_MS * NS_PER_MS)
        .ok_or(MsError::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(
        sn_bits: u8,
        t_ms: Option<u64>,
        initial_count: u32,
        out_of_order: bool,
    ) -> ReplayOptions {
        ReplayOptions {
            sn_bits,
            t_reordering: t_ms.map(|t| t * NS_PER_MS),
            initial_count,
            out_of_order,
        }
    }

    fn replay(o: &ReplayOptions, input: &str) -> anyhow::Result<(String, String)> {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        run_replay(o, input.as_bytes(), &mut out, &mut err)?;
        Ok((
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        ))
    }

    #[test]
    fn scenario_6_with_comments_and_a_duplicate() {
        let input = "# scenario 6 plus a duplicate and a late PDU\n\
                     0 2\n\
                     \n\
                     50 5   # starts nothing new\n\
                     120.5 5\n\
                     150 3\n\
                     250.000001 0\n";
        let (out, err) = replay(&opts(12, Some(100), 0, false), input).unwrap();
        assert_eq!(
            out,
            "deliver 100 2\n\
             discard 120.5 5 duplicate\n\
             deliver 150 3\n\
             deliver 200 5\n\
             discard 250.000001 0 late\n"
        );
        let v: serde_json::Value = serde_json::from_str(err.trim_end()).unwrap();
        assert!(err.ends_with('\n') && err.lines().count() == 1);
        assert_eq!(v["pdus_received"], 5);
        assert_eq!(v["delivered"], 3);
        assert_eq!(v["discarded_duplicate"], 1);
        assert_eq!(v["discarded_late"], 1);
        assert_eq!(v["timer_expiries"], 2);
        assert_eq!(v["counts_given_up"], 3);
        assert_eq!(v["rx_next"], 6);
        assert_eq!(v["rx_deliv"], 6);
        assert_eq!(v["wait"]["count"], 3);
    }

    #[test]
    fn other_scenarios_as_text() {
        let cases: &[(ReplayOptions, &str, &str)] = &[
            (
                opts(12, Some(0), 0, false),
                "0 1\n5 0\n6 2\n",
                "deliver 0 1\ndiscard 5 0 late\ndeliver 6 2\n",
            ),
            (opts(12, None, 0, false), "0 1\n", ""), // an infinite timer never fires
            (
                opts(12, Some(100), 0, false),
                "0 2048\n1 0\n",
                "discard 0 2048 hfn\ndeliver 1 0\n",
            ),
            (
                opts(18, Some(40), 262_143, false),
                "0 1\n50 262143\n60 0\n",
                "deliver 40 262145\ndiscard 50 262143 late\ndiscard 60 0 late\n",
            ),
            (
                opts(12, Some(100), 0, true),
                "0 2\n5 0\n10 1\n12 1\n",
                "deliver 0 2\ndeliver 5 0\ndeliver 10 1\ndiscard 12 1 late\n",
            ),
            (
                opts(16, Some(200), 65_535, false),
                "0.25 0\n0.75 65535\n",
                "deliver 0.75 65535\ndeliver 0.75 65536\n",
            ),
        ];
        for (o, input, want) in cases {
            assert_eq!(replay(o, input).unwrap().0, *want, "{o:?} {input:?}");
        }
        let (_, err) = replay(&opts(12, None, 0, false), "0 1\n").unwrap();
        let v: serde_json::Value = serde_json::from_str(&err).unwrap();
        assert_eq!(
            (v["rx_next"].as_u64(), v["rx_deliv"].as_u64()),
            (Some(2), Some(0))
        );
    }

    #[test]
    fn errors_name_the_line_and_problem() {
        let o = opts(12, Some(100), 0, false);
        let msg = |input: &str| replay(&o, input).unwrap_err().to_string();
        assert_eq!(
            msg("0 1\n\nfoo\n"),
            "line 3: expected `<time_ms> <sn>`, got \"foo\""
        );
        assert_eq!(
            msg("0 1 2\n"),
            "line 1: expected `<time_ms> <sn>`, got \"0 1 2\""
        );
        assert!(msg("# c\n-1 0\n").starts_with("line 2: bad time \"-1\""));
        assert!(msg("1e3 0\n").starts_with("line 1: bad time"));
        assert!(msg("0.1234567 0\n").contains("more than 6 decimals"));
        assert_eq!(
            msg("0 1\n5 x\n"),
            "line 2: bad SN \"x\": not a non-negative integer"
        );
        assert_eq!(
            msg("0 4096\n"),
            "line 1: SN 4096 does not fit in 12 bits (must be < 4096)"
        );
        assert_eq!(
            msg("5 1\n4.5 2\n"),
            "line 2: time 4.5 ms is before the previous arrival at 5 ms"
        );
        assert!(replay(&opts(13, None, 0, false), "").is_err());
    }

    #[test]
    fn times_and_sns_near_the_integer_limits_are_refused() {
        let o = opts(12, Some(100), 0, false);
        let msg = |input: &str| replay(&o, input).unwrap_err().to_string();
        let ten_years = "must be at most 315360000000 ms (10 years)";
        let bad_form = "expected milliseconds like 12 or 12.345 (no sign, no exponent)";
        for (input, want) in [
            ("1e300 5", format!("line 1: bad time \"1e300\": {bad_form}")),
            (
                "9.3e15 1",
                format!("line 1: bad time \"9.3e15\": {bad_form}"),
            ),
            ("inf 1", format!("line 1: bad time \"inf\": {bad_form}")),
            ("NaN 1", format!("line 1: bad time \"NaN\": {bad_form}")),
            (
                "18446744073709551615 1",
                format!("line 1: bad time \"18446744073709551615\": {ten_years}"),
            ),
            (
                "18446744073709.551615 1",
                format!("line 1: bad time \"18446744073709.551615\": {ten_years}"),
            ),
            (
                "# c\n9300000000000000 1",
                format!("line 2: bad time \"9300000000000000\": {ten_years}"),
            ),
            (
                "315360000000.000001 1",
                format!("line 1: bad time \"315360000000.000001\": {ten_years}"),
            ),
            (
                "0 99999999999",
                "line 1: SN 99999999999 does not fit in 12 bits (must be < 4096)".into(),
            ),
            (
                "0 340282366920938463463374607431768211456",
                "line 1: SN 340282366920938463463374607431768211456 does not fit in 12 bits \
                 (must be < 4096)"
                    .into(),
            ),
            (
                "0 -1",
                "line 1: bad SN \"-1\": not a non-negative integer".into(),
            ),
            (
                "0 +1",
                "line 1: bad SN \"+1\": not a non-negative integer".into(),
            ),
        ] {
            assert_eq!(msg(input), want, "{input:?}");
        }
        // The last instant allowed still has room for the timer: it expires 100 ms later.
        let (out, _) = replay(&o, "315360000000 1\n").unwrap();
        assert_eq!(out, "deliver 315360000100 1\n");
        let o = opts(18, Some(3_600_000), u32::MAX, false);
        let (out, err) = replay(&o, "315360000000 0\n315360000000 262143\n").unwrap();
        assert_eq!(
            out,
            "discard 315360000000 0 hfn\ndeliver 315360000000 4294967295\n"
        );
        assert!(err.contains("\"rx_next\":4294967296"), "{err}");
    }

    #[test]
    fn ms_parsing_is_exact() {
        assert_eq!(parse_ms("0"), Ok(0));
        assert_eq!(parse_ms("12"), Ok(12_000_000));
        assert_eq!(parse_ms("0.5"), Ok(500_000));
        assert_eq!(parse_ms("3.000001"), Ok(3_000_001));
        assert_eq!(parse_ms("3.1000000"), Ok(3_100_000));
        assert_eq!(parse_ms("7."), Ok(7_000_000));
        assert_eq!(parse_ms("123456789.123456"), Ok(123_456_789_123_456));
        for bad in [
            "",
            ".5",
            "-1",
            "+1",
            "1.2.3",
            "1e3",
            "0x10",
            "1.0000001",
            "99999999999999999999",
            "315360000001",
        ] {
            assert!(parse_ms(bad).is_err(), "{bad:?}");
        }
    }
}
