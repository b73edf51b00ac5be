//! dcemu never panics on input: every bad option, scenario, trace file or replay line
//! gets a one-line error naming the option, field or line and what is allowed.
//!
//! Two parts: a table of known bad inputs run through the built binary (exit status,
//! the exact message, no panic), and bounded deterministic random inputs fed to the
//! scenario parser (then the engine, in virtual time) and to the replay driver, which
//! must answer with a `Result`, never a panic.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dcemu::base::time::{Nanos, NS_PER_MS};
use dcemu::engine::{Dir, Engine, Output};
use dcemu::replay::{run_replay, ReplayOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// A scratch directory for scenario and trace files, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("dcemu-bad-input-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs dcemu with `args` and `stdin`; returns (exit status, stderr).
fn dcemu(args: &[&str], stdin: &str) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dcemu"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dcemu starts");
    use std::io::Write;
    // dcemu may exit before reading its input (a bad option): ignore a broken pipe.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().expect("exited, not killed by a signal"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Checks one bad input: status, no panic, and the message (exact for dcemu's own errors,
/// which are one line; the first line for clap's, which add a hint below).
fn check(args: &[&str], stdin: &str, status: i32, want: &str) {
    let (code, err) = dcemu(args, stdin);
    let what = format!("dcemu {args:?} <<< {stdin:?}: {err}");
    assert!(!err.contains("panicked"), "{what}");
    assert_eq!(code, status, "{what}");
    if status == 1 {
        assert_eq!(err, format!("dcemu: error: {want}\n"), "{what}");
    } else {
        assert_eq!(err.lines().next(), Some(want), "{what}");
    }
}

#[test]
fn bad_run_options_are_refused() {
    let dir = Scratch::new("run");
    let s = dir.file("ok.toml", "");
    let s = s.to_str().unwrap();
    let dur = "--duration: must be a number of seconds above 0 and at most 315360000 (10 years)";
    for (d, got) in [
        ("1e20", "1e20"),
        ("315360000.5", "315360000.5"),
        ("inf", "inf"),
        ("nan", "NaN"),
        ("-1", "-1"),
        ("0", "0"),
        ("1e-400", "0"),
    ] {
        check(
            &["run", s, "--duration", d],
            "",
            1,
            &format!("{dur} (got {got})"),
        );
    }
    for v in ["10001", "99999999999", "-1", "x"] {
        check(
            &["run", s, "--spin-us", v],
            "",
            2,
            &format!(
                "error: invalid value '{v}' for '--spin-us <SPIN_US>': \
                 must be an integer between 0 and 10000 (got {v:?})"
            ),
        );
    }
}

#[test]
fn bad_cell_options_are_refused() {
    for (args, want) in [
        (
            vec!["cell-capacity", "--sinr-db", "99"],
            "--sinr-db: must be between -30 and 60 (got 99)",
        ),
        (
            vec!["cell-capacity", "--sinr-db", "nan"],
            "--sinr-db: must be between -30 and 60 (got NaN)",
        ),
        (
            vec!["cell-capacity", "--sinr-db", "10", "--doppler", "-1"],
            "--doppler: must be between 0 and 2000 (got -1)",
        ),
        (
            vec!["cell-capacity", "--sinr-db", "10", "--seconds", "1e9"],
            "--seconds: must be above 0 and at most 86400 (got 1000000000)",
        ),
        (
            vec!["cell-capacity", "--sinr-db", "10", "--bandwidth-mhz", "7"],
            "--bandwidth-mhz: must be 1.4, 3, 5, 10, 15 or 20 (got 7)",
        ),
        (
            vec![
                "cell-trace",
                "--sinr-db",
                "-30",
                "--seconds",
                "0.01",
                "--out",
                "-",
            ],
            "--sinr-db: the channel carries not one 1500-byte packet in 0.01 s; a trace \
             needs at least one",
        ),
        (
            vec![
                "cell-trace",
                "--sinr-db",
                "10",
                "--out",
                "/nonexistent/dir/t",
            ],
            "--out: cannot write /nonexistent/dir/t: No such file or directory (os error 2)",
        ),
    ] {
        check(&args, "", 1, want);
    }
    let (code, out) = dcemu(&["cell-capacity", "--sinr-db", "200", "--fading", "x"], "");
    assert_eq!(code, 2, "{out}");
}

#[test]
fn bad_replay_options_and_lines_are_refused() {
    let t = "--t-reordering: must be a number of ms between 0 and 3600000 (1 hour), or \"inf\"";
    for v in ["1e300", "-5", "nan", "3600000.001", "inf5", ""] {
        check(
            &["pdcp-replay", "--t-reordering", v],
            "0 1\n",
            1,
            &format!("{t} (got {v:?})"),
        );
    }
    for v in ["4294967296", "-1", "1.5"] {
        check(
            &["pdcp-replay", "--initial-count", v],
            "0 1\n",
            2,
            &format!(
                "error: invalid value '{v}' for '--initial-count <INITIAL_COUNT>': \
                 must be a COUNT between 0 and 4294967295 (2^32 - 1) (got {v:?})"
            ),
        );
    }
    check(
        &["pdcp-replay", "--sn-bits", "15"],
        "",
        2,
        "error: invalid value '15' for '--sn-bits <SN_BITS>': must be 12, 16 or 18 (got \"15\")",
    );
    let ten_years = "must be at most 315360000000 ms (10 years)";
    let form = "expected milliseconds like 12 or 12.345 (no sign, no exponent)";
    for (input, want) in [
        ("1e300 5\n", format!("line 1: bad time \"1e300\": {form}")),
        (
            "0 1\n18446744073709551615 1\n",
            format!("line 2: bad time \"18446744073709551615\": {ten_years}"),
        ),
        ("9.3e15 1\n", format!("line 1: bad time \"9.3e15\": {form}")),
        (
            "9300000000000000 1\n",
            format!("line 1: bad time \"9300000000000000\": {ten_years}"),
        ),
        (
            "0 99999999999999999999\n",
            "line 1: SN 99999999999999999999 does not fit in 12 bits (must be < 4096)".into(),
        ),
        (
            "5 1\n4 2\n",
            "line 2: time 4 ms is before the previous arrival at 5 ms".into(),
        ),
    ] {
        check(&["pdcp-replay", "--sn-bits", "12"], input, 1, &want);
    }
}

#[test]
fn bad_scenarios_and_traces_are_refused() {
    let dir = Scratch::new("check");
    let d = dir.0.to_str().unwrap().to_string();
    dir.file("ok.csv", "DL_bitrate\n1000\n");
    let cases: Vec<(String, String)> = vec![
        (
            "batch = [".into(),
            "line 1, column 10: invalid array, expected `]`".into(),
        ),
        (
            "[topology]\nserver_netns = \"abc".into(),
            "line 2, column 20: invalid basic string".into(),
        ),
        (
            "seed = 18446744073709551616".into(),
            "line 1, column 8: seed: integer out of range: TOML integers are between \
             -9223372036854775808 and 9223372036854775807 (got 18446744073709551616)"
                .into(),
        ),
        (
            "[[legs]]\nname = 'a'\n[legs.downlink]\nqueue_packets = 99999999999999999999".into(),
            "line 4, column 17: legs[0].downlink.queue_packets: integer out of range: TOML \
             integers are between -9223372036854775808 and 9223372036854775807 \
             (got 99999999999999999999)"
                .into(),
        ),
        (
            "[[legs]]\nname = 'a'\n[legs.downlink]\ndelay_limit = 4294967296".into(),
            "line 4, column 15: legs[0].downlink.delay_limit: must be an integer between 0 \
             and 4294967295 (got 4294967296)"
                .into(),
        ),
        (
            "[[schedule]]\nat_ms = 1e30\nsplit = { batch = 5 }".into(),
            "schedule[0].at_ms: must be between 0 and 1000000000 (got 1e30)".into(),
        ),
        (
            "[[legs]]\nname = 'a'\n[legs.downlink]\n\
             delay = { distribution = 'constant', ms = 1e300 }"
                .into(),
            "legs[0].downlink.delay.ms: must be between 0 and 100000 (got 1e300)".into(),
        ),
        (
            "[[legs]]\nname = 'a'\n[legs.downlink]\nrate = '1e30 Gbit/s'".into(),
            "legs[0].downlink.rate: must be between 1kbit and 1000gbit per second, or \
             \"unlimited\" (got 1e39 bit/s)"
                .into(),
        ),
        (
            "[stats]\ninterval_ms = 1e-9".into(),
            "stats.interval_ms: must be between 1 and 3600000 (got 1e-9)".into(),
        ),
        (
            "[[legs]]\nname = 'a'\n[legs.downlink.trace]\npath = 'ok.csv'\nrow_ms = 0".into(),
            "legs[0].downlink.trace.row_ms: must be between 1 and 3600000 (got 0)".into(),
        ),
        (
            "[[legs]]\nname = 'a'\n[legs.downlink.trace]\npath = 'ok.csv'\n\
             row_ms = 9223372036854775807"
                .into(),
            "legs[0].downlink.trace.row_ms: must be between 1 and 3600000 \
             (got 9223372036854775807)"
                .into(),
        ),
    ];
    // Trace files: the scenario field, the file and the line.
    let traces: [(&str, &str, String); 9] = [
        ("t.down", "", "empty trace: no timestamps".into()),
        ("t.down", "1\n-5\n", "line 2: \"-5\" is not a whole number of ms between 0 and 315360000000 (10 years)".into()),
        ("t.down", "NaN\n", "line 1: \"NaN\" is not a whole number of ms between 0 and 315360000000 (10 years)".into()),
        ("t.down", "5\n3\n", "line 2: timestamp 3 ms goes back in time (previous 5 ms)".into()),
        ("t.csv", "", "empty file: no header row".into()),
        ("t.csv", "time,UL\n1,5\n", "line 1: no column named \"DL_bitrate\" in header (have: time, UL)".into()),
        ("t.csv", "DL_bitrate\n5\nabc\n", "line 3, column \"DL_bitrate\": \"abc\" is not a kbit/s value between 0 and 1000000000 (1000 gbit/s)".into()),
        ("t.csv", "DL_bitrate\ninf\n", "line 2, column \"DL_bitrate\": \"inf\" is not a kbit/s value between 0 and 1000000000 (1000 gbit/s)".into()),
        ("t.csv", "DL_bitrate\n1e30\n", "line 2, column \"DL_bitrate\": \"1e30\" is not a kbit/s value between 0 and 1000000000 (1000 gbit/s)".into()),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let s = dir.file(&format!("s{i}.toml"), text);
        let s = s.to_str().unwrap();
        check(
            &["check", s],
            "",
            1,
            &format!("invalid scenario {s}: {want}"),
        );
    }
    for (i, (name, content, want)) in traces.iter().enumerate() {
        let name = format!("{i}-{name}");
        dir.file(&name, content);
        let text = format!("[[legs]]\nname = 'a'\n[legs.downlink.trace]\npath = '{name}'\n");
        let s = dir.file(&format!("t{i}.toml"), &text);
        let s = s.to_str().unwrap();
        let kind = if name.ends_with(".csv") {
            "CSV"
        } else {
            "mahimahi"
        };
        check(
            &["check", s],
            "",
            1,
            &format!(
                "invalid scenario {s}: legs[0].downlink.trace.path: {kind} trace {d}/{name}: {want}"
            ),
        );
    }
}

/// Deterministic runner: the same cases on every run, nothing written to disk.
fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

/// A TOML value as text: mostly numbers of every size and form, some strings.
fn toml_value() -> impl Strategy<Value = String> {
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

/// A scenario with a slot for every numeric field; `v(i)` fills slot `i`.
fn scenario(v: &dyn Fn(usize) -> String, csv: &str, mahimahi: &str) -> String {
    format!(
        r#"
seed = {}
[topology]
mtu = {}
[pdcp]
sn_bits = {}
header_bytes = {}
t_reordering_ms = {}
initial_count = {}
[split]
batch = {}
ratio = [{}, {}]
[stats]
interval_ms = {}
[[legs]]
name = "leg1"
[legs.downlink]
rate = {}
queue_packets = {}
queue_bytes = {}
delay_limit = {}
delay = {{ distribution = "normal", mean_ms = {}, std_ms = {} }}
loss = {{ model = "gilbert-elliott", p_percent = {}, r_percent = {}, loss_good_percent = {}, loss_bad_percent = {} }}
[legs.uplink]
trace = {{ path = "{csv}", row_ms = {} }}
delay = {{ distribution = "uniform", min_ms = {}, max_ms = {} }}
loss = {{ model = "bernoulli", percent = {} }}
[[legs]]
name = "leg2"
[legs.downlink]
trace = {{ path = "{mahimahi}" }}
delay = {{ distribution = "pareto-normal", mean_ms = {}, std_ms = {} }}
[[bearers]]
name = "dc"
mode = "dc"
match = [{{ protocol = "udp", server_port = {}, client_port = {} }}]
[[bearers]]
name = "sc"
mode = "sc"
legs = ["leg2"]
split = {{ batch = {}, ratio = [{}] }}
[[schedule]]
at_ms = {}
leg = "leg1"
rate = {}
delay = {{ distribution = "pareto", mean_ms = {}, std_ms = {} }}
[[schedule]]
at_ms = {}
split = {{ batch = {}, ratio = [{}, {}] }}
[[schedule]]
at_ms = {}
leg = "leg2"
trace = {{ path = "{csv}", row_ms = {} }}
loss = {{ model = "bernoulli", percent = {} }}
"#,
        v(0),
        v(1),
        v(2),
        v(3),
        v(4),
        v(5),
        v(6),
        v(7),
        v(8),
        v(9),
        v(10),
        v(11),
        v(12),
        v(13),
        v(14),
        v(15),
        v(16),
        v(17),
        v(18),
        v(19),
        v(20),
        v(21),
        v(22),
        v(23),
        v(24),
        v(25),
        v(26),
        v(27),
        v(28),
        v(29),
        v(30),
        v(31),
        v(32),
        v(33),
        v(34),
        v(35),
        v(36),
        v(37),
        v(38),
        v(39),
        v(40)
    )
}

/// Slots in [`scenario`].
const SLOTS: usize = 41;

/// Valid values for the slots of [`scenario`].
const DEFAULTS: [&str; SLOTS] = [
    "1",
    "1500",
    "16",
    "2",
    "200",
    "0",
    "10",
    "1",
    "1",
    "100",
    "'20mbit'",
    "100",
    "1000000",
    "1000",
    "10",
    "1",
    "1",
    "50",
    "0",
    "100",
    "1000",
    "0",
    "5",
    "0",
    "20",
    "5",
    "4433",
    "'1000-2000'",
    "7",
    "1",
    "100",
    "'5mbit'",
    "10",
    "2",
    "50",
    "3",
    "2",
    "1",
    "150",
    "500",
    "1",
];

/// Runs a parsed scenario's engine for a while in virtual time, with traffic both ways.
fn drive(s: &dcemu::config::Scenario) {
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

#[test]
fn random_numbers_in_every_scenario_field_never_panic() {
    let dir = Scratch::new("fuzz");
    let csv = dir.file("t.csv", "DL_bitrate\n1000\n0\n25000.5\n");
    let mm = dir.file("t.down", "0\n0\n3\n7\n");
    let (csv, mm) = (csv.to_str().unwrap(), mm.to_str().unwrap());
    // The template is valid as it stands.
    let ok = scenario(&|i| DEFAULTS[i].to_string(), csv, mm);
    let s = dcemu::config::parse(&ok, Path::new(".")).unwrap();
    drive(&s);

    // A few bad values per scenario (most cases), or many.
    let slots = prop_oneof![
        3 => proptest::collection::vec(proptest::option::weighted(0.04, toml_value()), SLOTS),
        1 => proptest::collection::vec(proptest::option::weighted(0.3, toml_value()), SLOTS),
    ];
    let accepted = std::cell::Cell::new(0);
    runner(256)
        .run(&slots, |slots| {
            let text = scenario(
                &|i| slots[i].clone().unwrap_or_else(|| DEFAULTS[i].to_string()),
                csv,
                mm,
            );
            match dcemu::config::parse(&text, Path::new(".")) {
                Ok(s) => {
                    accepted.set(accepted.get() + 1);
                    drive(&s);
                }
                Err(e) => {
                    let msg = format!("{e:#}");
                    prop_assert!(!msg.is_empty() && !msg.contains('\n'), "{msg}");
                }
            }
            Ok(())
        })
        .unwrap();
    eprintln!("{} of 256 random scenarios valid", accepted.get());
    assert!(
        accepted.get() > 0,
        "no random scenario was valid: the engine went untested"
    );
}

/// One replay line: mostly arrivals, some with times or SNs out of range, some junk.
fn replay_line() -> impl Strategy<Value = String> {
    let ms = prop_oneof![
        (0u64..1000).prop_map(|v| v.to_string()),
        (315_359_999_000u64..315_360_001_000).prop_map(|v| v.to_string()),
        any::<u64>().prop_map(|v| v.to_string()),
        (any::<u32>(), 0u32..1_000_000_000).prop_map(|(a, b)| format!("{a}.{b}")),
        "[0-9]{0,30}(\\.[0-9]{0,12})?",
        prop::sample::select(vec![
            "1e300", "9.3e15", "-1", "inf", "NaN", "+5", ".5", "5."
        ])
        .prop_map(|s| s.to_string()),
    ];
    let sn = prop_oneof![
        (0u32..300_000).prop_map(|v| v.to_string()),
        any::<u64>().prop_map(|v| v.to_string()),
        "-?[0-9]{1,45}",
    ];
    prop_oneof![
        8 => (ms, sn).prop_map(|(t, s)| format!("{t} {s}")),
        1 => "[ -~]{0,20}",
        1 => any::<String>(),
    ]
}

#[test]
fn random_replay_input_never_panics() {
    let opts = (
        prop::sample::select(vec![12u8, 16, 18]),
        prop::option::of(prop_oneof![
            0u64..1_000 * NS_PER_MS,
            Just(3_600_000 * NS_PER_MS),
        ]),
        prop_oneof![any::<u32>(), (u32::MAX - 300_000)..=u32::MAX],
        any::<bool>(),
    );
    // Arrivals that are valid, but for times near the limit and SNs beyond 12 bits.
    let arrival = (
        prop_oneof![0u64..5_000, 315_359_990_000u64..=315_360_000_000],
        0u32..1_000_000,
        prop_oneof![99 => 0u32..4096, 1 => 0u32..262_144],
    );
    let valid = (
        proptest::collection::vec(arrival, 0..60),
        proptest::option::weighted(0.3, (any::<prop::sample::Index>(), replay_line())),
    )
        .prop_map(|(mut a, junk)| {
            a.sort();
            let mut lines: Vec<String> = a
                .iter()
                .map(|(ms, ns, sn)| format!("{ms}.{ns:06} {sn}"))
                .collect();
            if let Some((at, l)) = junk {
                lines.insert(at.index(lines.len() + 1), l);
            }
            (lines, false)
        });
    let input = prop_oneof![
        valid,
        (
            proptest::collection::vec(replay_line(), 0..40),
            any::<bool>()
        ),
    ];
    let (ok, events) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    runner(256)
        .run(
            &(opts, input),
            |((sn_bits, t, init, ooo), (lines, sorted))| {
                let o = ReplayOptions {
                    sn_bits,
                    t_reordering: t,
                    initial_count: init,
                    out_of_order: ooo,
                };
                let mut lines = lines;
                if sorted {
                    // Non-decreasing numeric times, so the receiver sees more than one line.
                    let key = |l: &String| {
                        let t = l.split(' ').next().unwrap_or("");
                        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
                        (int.parse::<u128>().unwrap_or(0), format!("{frac:0<12}"))
                    };
                    lines.sort_by_key(key);
                }
                let text = lines.join("\n");
                let (mut out, mut err) = (Vec::new(), Vec::new());
                match run_replay(&o, text.as_bytes(), &mut out, &mut err) {
                    Ok(()) => {
                        ok.set(ok.get() + 1);
                        events.set(events.get() + out.iter().filter(|&&b| b == b'\n').count());
                    }
                    Err(e) => {
                        let msg = format!("{e:#}");
                        prop_assert!(msg.starts_with("line ") && !msg.contains('\n'), "{msg}");
                    }
                }
                Ok(())
            },
        )
        .unwrap();
    eprintln!(
        "{} of 256 random replays ran through, {} events",
        ok.get(),
        events.get()
    );
    assert!(ok.get() > 0, "no random replay input was valid");
}
