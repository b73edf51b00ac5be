//! dcemu never panics on input: every bad option, scenario, trace file or replay line
//! gets a one-line error naming the option, field or line and what is allowed.
//!
//! Two parts: a table of known bad inputs run through the built binary (exit status,
//! the exact message, no panic), and bounded deterministic random inputs fed to the
//! scenario parser (then the engine, in virtual time) and to the replay driver, which
//! must answer with a `Result`, never a panic.

mod fuzz;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dcemu::base::time::NS_PER_MS;
use dcemu::replay::{run_replay, ReplayOptions};
use fuzz::{drive, fill, parse_or_refuse, pick, runner, slot_value, text, toml_text, toml_value};
use proptest::prelude::*;

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

/// What dcemu gets on standard input.
enum Input<'a> {
    Text(&'a str),
    File(std::fs::File),
}

/// Longest a dcemu call in these tests may take: none reads more than a few MB, so one
/// that takes longer blocked (on a FIFO, on /dev/zero).
const CALL_LIMIT: Duration = Duration::from_secs(30);

/// Runs dcemu with `args` and `input`; returns (exit status, stdout, stderr). Fails the
/// test if dcemu does not finish within [`CALL_LIMIT`].
fn dcemu_io(args: &[&str], input: Input) -> (i32, String, String) {
    use std::io::{Read, Write};
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dcemu"));
    cmd.args(args)
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let text = match input {
        Input::Text(t) => {
            cmd.stdin(Stdio::piped());
            Some(t.to_string())
        }
        Input::File(f) => {
            cmd.stdin(Stdio::from(f));
            None
        }
    };
    let mut child = cmd.spawn().expect("dcemu starts");
    if let Some(t) = text {
        let mut stdin = child.stdin.take().unwrap();
        // dcemu may exit before reading its input (a bad option): ignore a broken pipe.
        std::thread::spawn(move || {
            let _ = stdin.write_all(t.as_bytes());
        });
    }
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = r.read_to_end(&mut b);
            String::from_utf8_lossy(&b).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > CALL_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("dcemu {args:?} did not finish in {CALL_LIMIT:?} (blocked on its input?)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    (
        status.code().expect("exited, not killed by a signal"),
        out.join().unwrap(),
        err.join().unwrap(),
    )
}

/// Runs dcemu with `args` and `stdin`; returns (exit status, stderr).
fn dcemu(args: &[&str], stdin: &str) -> (i32, String) {
    let (code, _, err) = dcemu_io(args, Input::Text(stdin));
    (code, err)
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
            vec!["cell-capacity", "--sinr-db", "10", "--layers", "4"],
            "--layers: an NR option; give --rat nr (an LTE cell has 1 ms TTIs, one layer, its own \
             CQI table and FDD)",
        ),
        (
            vec![
                "cell-trace",
                "--sinr-db",
                "10",
                "--tdd",
                "DDDSU",
                "--out",
                "-",
            ],
            "--tdd: an NR option; give --rat nr (an LTE cell has 1 ms TTIs, one layer, its own \
             CQI table and FDD)",
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
            "[[legs]]\nname = 'm'\n[legs.x2]\nrate = 'unlimited'\n[[legs]]\nname = 's'".into(),
            "legs[0].x2: leg m is bearer dc's master (its first leg): the X2/Xn hop is a \
             secondary's, from the master's PDCP"
                .into(),
        ),
        (
            "[split]\npolicy = 'ddds'\n[[legs]]\nname = 'm'\n[[legs]]\nname = 's'\n\
             [[bearers]]\nname = 'b'\nmode = 'dup'"
                .into(),
            "split.policy: a flow-controlled policy is for the dc bearers that take the \
             global split; this scenario has none (dup bearers send every packet on every leg; \
             a bearer with a split of its own takes that one)"
                .into(),
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
        trace_refused(&dir, &format!("{i}-{name}"), content, "", want);
    }
}

/// `dcemu check` of a scenario whose one leg replays the trace file `name` (holding
/// `content`; `extra` lines in its trace table) fails naming the field, the trace's kind
/// and path, and `want`.
fn trace_refused(dir: &Scratch, name: &str, content: &str, extra: &str, want: &str) {
    let d = dir.0.to_str().unwrap();
    dir.file(name, content);
    let text = format!("[[legs]]\nname = 'a'\n[legs.downlink.trace]\npath = '{name}'\n{extra}");
    let s = dir.file(&format!("{name}.toml"), &text);
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

/// Checks `dcemu args` with `input` on stdin: exit status 1, no panic, and stderr exactly
/// `dcemu: error: {want}`.
fn check_io(args: &[&str], input: Input, want: &str) {
    let (code, _, err) = dcemu_io(args, input);
    let what = format!("dcemu {args:?}: {err}");
    assert!(!err.contains("panicked"), "{what}");
    assert_eq!(code, 1, "{what}");
    assert_eq!(err, format!("dcemu: error: {want}\n"), "{what}");
}

const WORKLOAD: &str =
    "[[flow]]\nname = \"dc\"\ntransport = \"quic\"\nserver_port = 4433\nsize = 1000\n";

#[test]
fn every_input_file_must_be_a_regular_file_below_the_limit() {
    let dir = Scratch::new("files");
    let d = dir.0.to_str().unwrap().to_string();
    let ok = dir.file("ok.toml", "");
    let ok = ok.to_str().unwrap();
    let wl = dir.file("w.toml", WORKLOAD);
    let wl = wl.to_str().unwrap();
    let fifo = dir.0.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    // Sparse: one byte over 64 MiB without writing 64 MiB.
    let big = dir.0.join("big");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(64 * 1024 * 1024 + 1)
        .unwrap();
    dir.file("latin1", "");
    std::fs::write(dir.0.join("latin1"), b"seed = 1 # caf\xe9\n").unwrap();
    let limit = "at most 67108864 bytes (64 MiB) are read";
    let bad: [(String, String); 6] = [
        (
            "/dev/zero".into(),
            "/dev/zero is a character device, not a regular file".into(),
        ),
        (
            format!("{d}/fifo"),
            format!("{d}/fifo is a FIFO, not a regular file"),
        ),
        (d.clone(), format!("{d} is a directory, not a regular file")),
        (
            format!("{d}/big"),
            format!("{d}/big is 67108865 bytes; {limit}"),
        ),
        (
            format!("{d}/latin1"),
            format!("{d}/latin1 is not UTF-8 text (byte 14)"),
        ),
        (
            format!("{d}/missing"),
            format!("cannot read {d}/missing: No such file or directory (os error 2)"),
        ),
    ];
    // A TOML input (scenario, workload) is parsed whole: at most 16 MiB of it.
    let toml_limit = "at most 16777216 bytes (16 MiB) are read";
    let toml16 = dir.0.join("toml16");
    std::fs::File::create(&toml16)
        .unwrap()
        .set_len(16 * 1024 * 1024 + 1)
        .unwrap();
    let toml16 = toml16.to_str().unwrap().to_string();
    let over16 = format!("{toml16} is 16777217 bytes; {toml_limit}");
    check_io(
        &["check", &toml16],
        Input::Text(""),
        &format!("scenario: {over16}"),
    );
    check_io(
        &["sim", ok, "--workload", &toml16],
        Input::Text(""),
        &format!("workload: {over16}"),
    );
    for (i, (path, why)) in bad.iter().enumerate() {
        let p = path.as_str();
        let toml_why = why.replace(limit, toml_limit);
        check_io(
            &["check", p],
            Input::Text(""),
            &format!("scenario: {toml_why}"),
        );
        check_io(
            &["sim", p, "--workload", wl],
            Input::Text(""),
            &format!("scenario: {toml_why}"),
        );
        check_io(
            &["sim", ok, "--workload", p],
            Input::Text(""),
            &format!("workload: {toml_why}"),
        );
        for (format, kind) in [("mahimahi", "mahimahi trace"), ("csv", "CSV trace")] {
            let text = format!(
                "[[legs]]\nname = 'a'\n[legs.downlink.trace]\npath = '{p}'\nformat = '{format}'\n"
            );
            let s = dir.file(&format!("t{i}-{format}.toml"), &text);
            let s = s.to_str().unwrap();
            check_io(
                &["check", s],
                Input::Text(""),
                &format!("invalid scenario {s}: legs[0].downlink.trace.path: {kind}: {why}"),
            );
        }
    }
    // pdcp-replay streams its standard input: a directory or a file over the limit is
    // refused; /dev/zero at its first line (no newline in 64 KiB), not when memory is gone.
    let open = |p: &str| Input::File(std::fs::File::open(p).unwrap());
    check_io(
        &["pdcp-replay"],
        open(&d),
        "pdcp-replay: standard input is a directory, not a file or a stream",
    );
    check_io(
        &["pdcp-replay"],
        open(&format!("{d}/big")),
        &format!("pdcp-replay: standard input is a file of 67108865 bytes; {limit}"),
    );
    check_io(
        &["pdcp-replay"],
        open("/dev/zero"),
        "line 1: longer than 65536 bytes",
    );
    check_io(
        &["pdcp-replay"],
        Input::Text("0 1\n2 \u{e9}\n"),
        "line 2: bad SN \"\u{e9}\": not a non-negative integer",
    );
    check_io(
        &["pdcp-replay"],
        Input::File(std::fs::File::open(dir.0.join("latin1")).unwrap()),
        "line 1: not UTF-8 text (byte 14)",
    );
}

#[test]
fn non_ascii_text_in_any_string_is_refused_not_a_panic() {
    let dir = Scratch::new("utf8");
    let leg = "[[legs]]\nname = 'a'\n[legs.downlink]\n";
    let name_rule = "1-64 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit";
    let cases: Vec<(String, String)> = vec![
        (
            format!("{leg}rate = '20µbit'"),
            "legs[0].downlink.rate: unknown unit \"µbit\" in \"20µbit\"; use bit, kbit, mbit \
             or gbit (per second)"
                .into(),
        ),
        (
            format!("{leg}rate = '2€0mbit'"),
            "legs[0].downlink.rate: cannot read a number in \"2€0mbit\"".into(),
        ),
        (
            format!("{leg}rate = '😀'"),
            "legs[0].downlink.rate: cannot read a number in \"😀\"".into(),
        ),
        (
            // A combining accent: not a letter, so not part of a unit either.
            format!("{leg}rate = '5 e\u{301}'"),
            "legs[0].downlink.rate: cannot read a number in \"5 e\\u{301}\"".into(),
        ),
        (
            format!("{leg}rate = '5 Mbit/s\u{feff}'"),
            "legs[0].downlink.rate: cannot read a number in \"5 Mbit/s\\u{feff}\"".into(),
        ),
        (
            "[[legs]]\nname = 'lé'".into(),
            format!("legs[0].name: must be {name_rule} (got \"lé\")"),
        ),
        (
            "[[legs]]\nname = '../../etc/x'".into(),
            format!("legs[0].name: must be {name_rule} (got \"../../etc/x\")"),
        ),
        (
            "[[bearers]]\nname = 'dç'\nmode = 'dc'".into(),
            format!("bearers[0].name: must be {name_rule} (got \"dç\")"),
        ),
        (
            "[[bearers]]\nname = 'dc'\nmode = 'dc'\nmatch = [{ server_port = '80€-90' }]".into(),
            "bearers[0].match[0].server_port: must be a port 0-65535 or a range \"lo-hi\" \
             (got \"80€-90\")"
                .into(),
        ),
        (
            "[[bearers]]\nname = 'dc'\nmode = 'dc'\nmatch = [{ client_addr = '198.18.0.0/1é' }]"
                .into(),
            "bearers[0].match[0].client_addr: must be an IPv4 address or prefix like \
             198.18.0.0/15 (got \"198.18.0.0/1é\")"
                .into(),
        ),
        (
            "[[bearers]]\nname = 'dc'\nmode = 'dc'\nmatch = [{ protocol = 'üdp' }]".into(),
            "bearers[0].match[0].protocol: must be tcp, udp, icmp or 0-255 (got \"üdp\")".into(),
        ),
        (
            "[topology]\nserver_netns = 'dclab-sérver'".into(),
            "topology.server_netns: must be a network namespace name of 1-64 letters, digits, \
             '-', '_' or '.' (got \"dclab-sérver\")"
                .into(),
        ),
        (
            "[topology]\nserver_tun = 'tün'".into(),
            "topology.server_tun: must be an interface name of 1-15 letters, digits, '-' or \
             '_' (got \"tün\")"
                .into(),
        ),
        (
            "[topology]\nserver_addr = '198.18.0.1€'".into(),
            "line 2, column 15: topology.server_addr: invalid IPv4 address syntax".into(),
        ),
        (
            "[pdcp]\nt_reordering_ms = 'ïnf'".into(),
            "line 2, column 19: pdcp.t_reordering_ms: must be a number of ms or \"inf\"".into(),
        ),
        (
            format!("{leg}trace = {{ path = 't.csv', format = 'mähimahi' }}"),
            "legs[0].downlink.trace.format: must be \"mahimahi\" or \"csv\" (got \"mähimahi\")"
                .into(),
        ),
        (
            "default_bearer = 'dç'".into(),
            "default_bearer: no bearer named \"dç\"".into(),
        ),
        (
            "[[schedule]]\nat_ms = 5\nleg = 'lég'\nrate = '1mbit'".into(),
            "schedule[0].leg: no leg named \"lég\" (legs: leg1, leg2)".into(),
        ),
        (
            "[[legs]]\nname = 'lte'\n[legs.downlink.cell]\nscheduler = 'pf€'\n\
             devices = [{ mean_sinr_db = 1, fading = 'rayléigh' }]"
                .into(),
            "legs[0].downlink.cell.scheduler: must be \"rr\" (round robin) or \"pf\" \
             (proportional fair) (got \"pf€\")"
                .into(),
        ),
        (
            "[[legs]]\nname = 'lte'\n[legs.downlink.cell]\n\
             devices = [{ mean_sinr_db = 1, fading = 'rayléigh' }]"
                .into(),
            "legs[0].downlink.cell.devices[0].fading: must be \"rayleigh\" or \"none\" \
             (got \"rayléigh\")"
                .into(),
        ),
        (
            "\"sééd\" = 1".into(),
            "line 1, column 1: sééd: unknown field `sééd`, expected one of `seed`, `topology`, \
             `pdcp`, `split`, `stats`, `legs`, `bearers`, `default_bearer`, `schedule`"
                .into(),
        ),
    ];
    dir.file("t.csv", "DL_bitrate\n1000\n");
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
    // Trace files: the value on the line, and a column name, as written.
    for (name, content, column, want) in [
        (
            "u.down",
            "1\n2µ\n",
            "DL_bitrate",
            "line 2: \"2µ\" is not a whole number of ms between 0 and 315360000000 (10 years)",
        ),
        (
            "u.csv",
            "DL_bitrate\n5\n1€\n",
            "DL_bitrate",
            "line 3, column \"DL_bitrate\": \"1€\" is not a kbit/s value between 0 and \
             1000000000 (1000 gbit/s)",
        ),
        (
            "v.csv",
            "débit,x\n5,1\n",
            "débít",
            "line 1: no column named \"débít\" in header (have: débit, x)",
        ),
    ] {
        trace_refused(&dir, name, content, &format!("column = '{column}'\n"), want);
    }
    // The workload's strings.
    let ok = dir.file("ok.toml", "");
    let ok = ok.to_str().unwrap();
    let flow = "[[flow]]\ntransport = 'quic'\nserver_port = 4433\nsize = 1000\n";
    for (extra, want) in [
        (
            "name = 'dç'",
            format!("flow[0].name: must be {name_rule} (got \"dç\")"),
        ),
        (
            "name = 'x'\ncc = 'rénó'",
            "flow[0].cc: one of reno, cubic, bbr (got \"rénó\")".into(),
        ),
        (
            "name = 'x'\nquic = 'aioquic-1.7€'",
            "flow[0].quic: \"aioquic-1.7\" or \"aioquic-0.8\" (got \"aioquic-1.7€\")".into(),
        ),
        (
            "name = 'x'\ntransport = 'quïc'",
            "line 5, column 13: flow[0].transport: unknown variant `quïc`, expected `quic` or \
             `tcp`"
                .into(),
        ),
    ] {
        let text = if extra.contains("transport") {
            format!("[[flow]]\nserver_port = 4433\nsize = 1000\n{extra}\n")
        } else {
            format!("{flow}{extra}\n")
        };
        let w = dir.file("w.toml", &text);
        let w = w.to_str().unwrap();
        check(
            &["sim", ok, "--workload", w],
            "",
            1,
            &format!("workload {w}: {want}"),
        );
    }
    // Options: clap's own errors, and dcemu's.
    check(
        &["pdcp-replay", "--t-reordering", "10µ"],
        "",
        1,
        "--t-reordering: must be a number of ms between 0 and 3600000 (1 hour), or \"inf\" \
         (got \"10µ\")",
    );
    check(
        &["pdcp-replay", "--sn-bits", "1é"],
        "",
        2,
        "error: invalid value '1é' for '--sn-bits <SN_BITS>': must be 12, 16 or 18 (got \"1é\")",
    );
    for (line, want) in [
        ("0µ 1\n", "line 1: bad time \"0µ\": expected milliseconds like 12 or 12.345 (no sign, no exponent)"),
        ("0.5€ 1\n", "line 1: bad time \"0.5€\": expected milliseconds like 12 or 12.345 (no sign, no exponent)"),
        ("1 2 😀\n", "line 1: expected `<time_ms> <sn>`, got \"1 2 😀\""),
        ("\u{feff}0 1\n", "line 1: bad time \"\\u{feff}0\": expected milliseconds like 12 or 12.345 (no sign, no exponent)"),
    ] {
        check(&["pdcp-replay"], line, 1, want);
    }
}

#[test]
fn messages_cut_what_they_echo() {
    let dir = Scratch::new("echo");
    let ok = dir.file("ok.toml", "");
    let ok = ok.to_str().unwrap();
    let huge = "é".repeat(2_000_000); // 4 MB on one line
    let cut = |s: &str| format!("{}...", &s[..s.char_indices().nth(120).unwrap().0]);
    let scenarios = [
        format!("[[legs]]\nname = 'a'\n[legs.downlink]\nrate = '{huge}'\n"),
        format!("seed = '{huge}'\n"),
        format!("\"{huge}\" = 1\n"),
        format!("[[legs]]\nname = '{huge}'\n"),
        format!("[[bearers]]\nname = 'x'\nmode = '{huge}'\n"),
        format!("seed = {}\n", "9".repeat(3_000_000)),
    ];
    for (i, text) in scenarios.iter().enumerate() {
        let s = dir.file(&format!("s{i}.toml"), text);
        let (code, err) = dcemu(&["check", s.to_str().unwrap()], "");
        assert_eq!(code, 1, "{i}: {err}");
        assert!(
            err.len() < 1000 && err.ends_with('\n'),
            "{i}: {} bytes: {err}",
            err.len()
        );
        assert!(err.contains(" characters)"), "{i}: {err}");
        assert!(
            err.contains(&cut(&huge)) || err.contains(&cut(&"9".repeat(200))),
            "{i}: {err}"
        );
    }
    let trace = dir.file("t.down", &format!("1\n{huge}\n"));
    let s = dir.file(
        "t.toml",
        &format!(
            "[[legs]]\nname = 'a'\n[legs.downlink.trace]\npath = '{}'\n",
            trace.display()
        ),
    );
    let (_, err) = dcemu(&["check", s.to_str().unwrap()], "");
    assert!(
        err.ends_with(&format!(
            "line 2: \"{}\" (2000000 characters) is not a whole number of ms between 0 and \
             315360000000 (10 years)\n",
            cut(&huge)
        )),
        "{err}"
    );
    let w = dir.file("w.toml", &format!("{WORKLOAD}cc = '{huge}'\n"));
    let (_, err) = dcemu(&["sim", ok, "--workload", w.to_str().unwrap()], "");
    assert!(
        err.ends_with(&format!(
            "flow[0].cc: one of reno, cubic, bbr (got \"{}\" (2000000 characters))\n",
            cut(&huge)
        )),
        "{err}"
    );
    let w = dir.file("w.toml", &format!("{WORKLOAD}mss = '{huge}'\n"));
    let (_, err) = dcemu(&["sim", ok, "--workload", w.to_str().unwrap()], "");
    assert!(
        err.len() < 1000 && err.contains("(2000000 characters)"),
        "{err}"
    );
    // A replay line up to the line limit is read, and echoed cut.
    let line = format!("0 {}\n", "x".repeat(60_000));
    let (_, err) = dcemu(&["pdcp-replay"], &line);
    assert_eq!(
        err,
        format!(
            "dcemu: error: line 1: bad SN \"{}...\" (60000 characters): not a non-negative \
             integer\n",
            "x".repeat(120)
        )
    );
    let (_, err) = dcemu(&["pdcp-replay"], &huge);
    assert_eq!(err, "dcemu: error: line 1: longer than 65536 bytes\n");
}

#[test]
fn lists_have_a_maximum_named_with_the_field() {
    let dir = Scratch::new("counts");
    let many = |n: usize, item: &dyn Fn(usize) -> String| -> String {
        (0..n).map(item).collect::<Vec<_>>().join("")
    };
    dir.file("t.down", "1\n2\n");
    let cases: Vec<(String, String)> = vec![
        (
            many(1001, &|i| {
                format!("[[bearers]]\nname = 'b{i}'\nmode = 'dc'\n")
            }),
            "bearers: must list at most 1000 bearers (got 1001)".into(),
        ),
        (
            format!(
                "[[bearers]]\nname = 'b'\nmode = 'dc'\nmatch = [{}]\n",
                many(1001, &|i| format!("{{ server_port = {i} }},"))
            ),
            "bearers[0].match: must list at most 1000 rules (got 1001)".into(),
        ),
        (
            many(10_001, &|i| {
                format!("[[schedule]]\nat_ms = {i}\nsplit = {{ batch = 5 }}\n")
            }),
            "schedule: must list at most 10000 changes (got 10001)".into(),
        ),
        (
            "[[legs]]\nname = 'a'\n".repeat(9),
            "legs: must list 1 to 8 legs (got 9)".into(),
        ),
        (
            // The same file as often as wanted (read once); 33 different ones refused.
            format!(
                "[[legs]]\nname = 'a'\n[legs.downlink]\ntrace = {{ path = 't.down' }}\n{}{}",
                many(100, &|i| format!(
                    "[[schedule]]\nat_ms = {i}\nleg = 'a'\ntrace = {{ path = 't.down' }}\n"
                )),
                many(40, &|i| format!(
                    "[[schedule]]\nat_ms = {i}\nleg = 'a'\ntrace = {{ path = 't{i}.csv' }}\n"
                ))
            ),
            "schedule[131].trace.path: a scenario reads at most 32 different trace files \
             (this is file 33)"
                .into(),
        ),
    ];
    for i in 0..40 {
        dir.file(&format!("t{i}.csv"), "DL_bitrate\n1000\n");
    }
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
    let ok = dir.file("ok.toml", "");
    let ok = ok.to_str().unwrap();
    let flow = |i: usize| {
        format!("[[flow]]\nname = 'f{i}'\ntransport = 'tcp'\nserver_port = 1\nsize = 1\n")
    };
    for (text, want) in [
        (
            many(10_001, &flow),
            "flow: must list at most 10000 flows (got 10001)".to_string(),
        ),
        (
            format!(
                "{}app_packet_quantiles_us = [[0.0, 1.0], {}]\n",
                flow(0),
                many(1000, &|i| format!("[{}, 2.0],", (i + 1) as f64 / 1001.0))
            ),
            "flow[0].app_packet_quantiles_us: must list at most 1000 points (got 1001)".into(),
        ),
        (
            format!(
                "{}size = 1000000000001\n",
                flow(0).replace("size = 1\n", "")
            ),
            "flow[0].size: must be between 1 and 1000000000000 bytes (got 1000000000001)".into(),
        ),
        (
            format!(
                "{}size = 18446744073709551615\n",
                flow(0).replace("size = 1\n", "")
            ),
            "line 5, column 8: flow[0].size: integer out of range: TOML integers are between \
             -9223372036854775808 and 9223372036854775807 (got 18446744073709551615)"
                .into(),
        ),
    ] {
        let w = dir.file("w.toml", &text);
        let w = w.to_str().unwrap();
        check(
            &["sim", ok, "--workload", w],
            "",
            1,
            &format!("workload {w}: {want}"),
        );
    }
}

#[test]
fn sim_without_a_duration_stops_at_the_horizon_and_says_which_flows_are_not_done() {
    let dir = Scratch::new("horizon");
    let s = dir.file(
        "s.toml",
        "[[legs]]\nname = 'leg1'\n[legs.downlink]\nloss = { model = 'bernoulli', percent = 100 }\n\
         [legs.uplink]\n",
    );
    let w = dir.file("w.toml", WORKLOAD);
    let (code, out, err) = dcemu_io(
        &[
            "sim",
            s.to_str().unwrap(),
            "--workload",
            w.to_str().unwrap(),
        ],
        Input::Text(""),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err,
        "dcemu: sim: stopped at 3600 s of virtual time, 3600 s after the last flow's start \
         (no --duration or duration_s given); 1 of 1 flows not done: dc (0 of 1000 bytes)\n"
    );
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["ended"], "horizon");
    assert_eq!(v["t_ms"], 3_600_000.0);
    assert!(v["flows"][0]["done_ms"].is_null());
    // With a duration: no warning, ended by it.
    let (code, out, err) = dcemu_io(
        &[
            "sim",
            s.to_str().unwrap(),
            "--workload",
            w.to_str().unwrap(),
            "--duration",
            "1",
        ],
        Input::Text(""),
    );
    assert_eq!((code, err.as_str()), (0, ""));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (v["ended"].as_str(), v["t_ms"].as_f64()),
        (Some("duration"), Some(1000.0))
    );
}

#[test]
fn deep_toml_nesting_is_refused() {
    let dir = Scratch::new("deep");
    for text in [
        format!("seed = {}{}", "[".repeat(100_000), "]".repeat(100_000)),
        format!(
            "seed = {}1{}",
            "{ a = ".repeat(100_000),
            "}".repeat(100_000)
        ),
        format!("[{}]", vec!["a"; 100_000].join(".")),
    ] {
        let s = dir.file("s.toml", &text);
        let (code, err) = dcemu(&["check", s.to_str().unwrap()], "");
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("recursion limit exceeded") && err.len() < 1000,
            "{err}"
        );
    }
    let w = dir.file(
        "w.toml",
        &format!("x = {}{}", "[".repeat(100_000), "]".repeat(100_000)),
    );
    let ok = dir.file("ok.toml", "");
    let (code, err) = dcemu(
        &[
            "sim",
            ok.to_str().unwrap(),
            "--workload",
            w.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("recursion limit exceeded") && err.len() < 1000,
        "{err}"
    );
}

/// Slots of [`SCENARIO`] that hold strings (or take one: a rate, a port range, "inf").
fn is_text_slot(i: usize) -> bool {
    matches!(i, 4 | 10 | 27 | 31 | 41..=65 | 68 | 72 | 74..=76)
}

/// A scenario with a slot `@i@` for every numeric and string field, `defaults(..)[i]` valid.
const SCENARIO: &str = r#"
seed = @0@
default_bearer = @47@
[topology]
mtu = @1@
server_netns = @41@
client_netns = @42@
server_tun = @43@
client_tun = @44@
server_addr = @45@
client_addr = @46@
[pdcp]
sn_bits = @2@
header_bytes = @3@
t_reordering_ms = @4@
initial_count = @5@
[split]
batch = @6@
ratio = [@7@, @8@]
[stats]
interval_ms = @9@
path = @48@
pcap = @49@
[[legs]]
name = @50@
[legs.downlink]
rate = @10@
queue_packets = @11@
queue_bytes = @12@
delay_limit = @13@
delay = { distribution = @51@, mean_ms = @14@, std_ms = @15@ }
loss = { model = @52@, p_percent = @16@, r_percent = @17@, loss_good_percent = @18@, loss_bad_percent = @19@ }
loss_at = @53@
[legs.uplink]
trace = { path = @54@, format = @55@, column = @56@, row_ms = @20@ }
delay = { distribution = "uniform", min_ms = @21@, max_ms = @22@ }
loss = { model = "bernoulli", percent = @23@ }
[[legs]]
name = @57@
[legs.downlink]
trace = { path = @58@ }
delay = { distribution = "pareto-normal", mean_ms = @24@, std_ms = @25@ }
[[legs]]
name = "leg3"
[legs.downlink]
delay = { distribution = "constant", ms = @66@ }
[legs.downlink.cell]
bandwidth_mhz = @67@
scheduler = @68@
tc_ttis = @69@
[[legs.downlink.cell.devices]]
mean_sinr_db = @70@
doppler_hz = @71@
fading = @72@
queue_bytes = @73@
[[bearers]]
name = @59@
mode = @60@
legs = ["leg1", "leg2"]
match = [{ protocol = @61@, server_port = @26@, client_port = @27@, client_addr = @62@ }]
[[bearers]]
name = "sc"
mode = "sc"
legs = [@63@]
uplink_leg = @64@
split = { batch = @28@, ratio = [@29@] }
[[bearers]]
name = "cell"
mode = "sc"
legs = ["leg3"]
[[schedule]]
at_ms = @30@
leg = @65@
direction = @74@
rate = @31@
delay = { distribution = "pareto", mean_ms = @32@, std_ms = @33@ }
[[schedule]]
at_ms = @34@
bearer = @75@
split = { batch = @35@, ratio = [@36@, @37@] }
[[schedule]]
at_ms = @38@
leg = "leg2"
trace = { path = @76@, row_ms = @39@ }
loss = { model = "bernoulli", percent = @40@ }
"#;

/// Slots in [`SCENARIO`].
const SLOTS: usize = 77;

/// Valid values for the slots of [`SCENARIO`]; `csv` and `mahimahi` are trace files.
fn defaults(csv: &str, mahimahi: &str) -> Vec<String> {
    let q = |s: &str| toml::Value::String(s.into()).to_string();
    let mut d: Vec<String> = [
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
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for s in [
        "dclab-server",
        "dclab-client",
        "dcemu-s",
        "dcemu-c",
        "198.18.0.1",
        "198.18.0.2",
        "dc",
        "stats.jsonl",
        "client.pcap",
        "leg1",
        "normal",
        "gilbert-elliott",
        "after-rate",
        csv,
        "csv",
        "DL_bitrate",
        "leg2",
        mahimahi,
        "dc",
        "dc",
        "udp",
        "198.18.0.0/15",
        "leg2",
        "leg1",
        "leg1",
    ] {
        d.push(q(s));
    }
    d.extend(["12", "20", "'pf'", "100", "15", "5", "'rayleigh'", "512000"].map(String::from));
    d.extend([q("downlink"), q("dc"), q(csv)]);
    assert_eq!(d.len(), SLOTS);
    d
}

#[test]
fn random_values_in_every_scenario_field_never_panic() {
    let dir = Scratch::new("fuzz");
    let csv = dir.file("t.csv", "DL_bitrate\n1000\n0\n25000.5\n");
    let mm = dir.file("t.down", "0\n0\n3\n7\n");
    let defaults = defaults(csv.to_str().unwrap(), mm.to_str().unwrap());
    // The template is valid as it stands.
    let ok = fill(SCENARIO, &|i| defaults[i].clone());
    let s = dcemu::config::parse(&ok, Path::new(".")).unwrap();
    drive(&s);

    // A few bad values per scenario (most cases), or many; numbers and strings (with
    // non-ASCII characters) in every field, numeric or not.
    let slots = prop_oneof![
        3 => proptest::collection::vec(proptest::option::weighted(0.03, slot_value()), SLOTS),
        1 => proptest::collection::vec(proptest::option::weighted(0.2, slot_value()), SLOTS),
    ];
    let accepted = std::cell::Cell::new(0);
    runner(512)
        .run(&slots, |slots| {
            let text = fill(SCENARIO, &|i| {
                slots[i].as_ref().map_or_else(
                    || defaults[i].clone(),
                    |v| pick(is_text_slot(i), &defaults[i], v),
                )
            });
            if parse_or_refuse(&text)? {
                accepted.set(accepted.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    eprintln!("{} of 512 random scenarios valid", accepted.get());
    assert!(
        accepted.get() > 0,
        "no random scenario was valid: the engine went untested"
    );
}

/// A workload with a slot `@i@` for every field.
const WORKLOAD_TEMPLATE: &str = r#"
duration_s = @0@
[[flow]]
name = @1@
transport = @2@
cc = @3@
server_port = @4@
client_port = @5@
size = @6@
start_s = @7@
datagram = @8@
quic = @9@
mss = @10@
rmem = @11@
truesize = @12@
app_packet_us = @13@
send_packet_us = @14@
[[flow]]
name = "b"
transport = @15@
cc = @16@
server_port = 4434
size = @17@
app_packet_quantiles_us = [[0.0, @18@], [@19@, 100.0], [1.0, @20@]]
"#;

const WORKLOAD_DEFAULTS: [&str; 21] = [
    "0.3",
    "'a'",
    "'quic'",
    "'cubic'",
    "4433",
    "40000",
    "200000",
    "0.0",
    "1252",
    "'aioquic-1.7'",
    "1448",
    "212992",
    "2304",
    "0.0",
    "0.0",
    "'tcp'",
    "'bbr'",
    "100000",
    "10.0",
    "0.5",
    "400.0",
];

#[test]
fn random_workloads_never_panic_and_simulate() {
    let s = dcemu::config::parse("", Path::new(".")).unwrap();
    let fill = |v: &dyn Fn(usize) -> String| fill(WORKLOAD_TEMPLATE, v);
    let controllers = |kind, transport, mss| {
        let flavor = match transport {
            dcemu::sim::Transport::Quic => dcemu::model::cc::Flavor::Aioquic,
            dcemu::sim::Transport::Tcp => dcemu::model::cc::Flavor::Linux,
        };
        dcemu::model::cc::build(kind, flavor, mss)
    };
    let simulated = std::cell::Cell::new(0);
    let simulate = |text: &str| -> Result<(), String> {
        match dcemu::sim::parse_workload(text) {
            Ok(mut w) => {
                simulated.set(simulated.get() + 1);
                // At most 0.3 s of virtual time: this is about input, not long runs.
                w.duration = Some(w.duration.unwrap_or(u64::MAX).min(300 * NS_PER_MS));
                if let Err(e) = dcemu::sim::run(&s, &w, &controllers, &mut std::io::sink()) {
                    let msg = format!("{e:#}");
                    if msg.contains('\n') || msg.chars().count() >= 800 {
                        return Err(msg);
                    }
                }
                Ok(())
            }
            Err(e) => {
                let msg = format!("{e:#}");
                if msg.is_empty() || msg.contains('\n') || msg.chars().count() >= 800 {
                    return Err(msg);
                }
                Ok(())
            }
        }
    };
    simulate(&fill(&|i| WORKLOAD_DEFAULTS[i].to_string())).unwrap();
    assert!(dcemu::sim::parse_workload(&fill(&|i| WORKLOAD_DEFAULTS[i].to_string())).is_ok());
    let values = prop_oneof![
        2 => toml_value(),
        2 => toml_text(),
        1 => prop::sample::select(vec!["18446744073709551615", "1e12", "65535", "0", "1e300"])
            .prop_map(String::from),
    ];
    // Mostly one or two fields changed (most such workloads are valid and simulate).
    let slots = prop_oneof![
        3 => proptest::collection::vec(proptest::option::weighted(0.06, values.clone()), 21),
        1 => proptest::collection::vec(proptest::option::weighted(0.3, values), 21),
    ];
    runner(128)
        .run(&slots, |slots| {
            let text = fill(&|i| {
                slots[i]
                    .clone()
                    .unwrap_or_else(|| WORKLOAD_DEFAULTS[i].to_string())
            });
            let r = simulate(&text);
            prop_assert!(r.is_ok(), "{text}: {r:?}");
            Ok(())
        })
        .unwrap();
    eprintln!("{} of 129 workloads simulated", simulated.get());
    assert!(simulated.get() > 20, "too few random workloads were valid");
}

#[test]
fn random_trace_lines_and_rates_never_panic() {
    let line = prop_oneof![
        3 => (0u64..10_000).prop_map(|v| v.to_string()),
        1 => text(),
        1 => "[0-9]{1,25}(\\.[0-9]{0,5})?",
        1 => any::<String>(),
    ];
    let lines = proptest::collection::vec(line, 0..30);
    runner(512)
        .run(&(lines, text()), |(lines, column)| {
            let body = lines.join("\n");
            for r in [
                dcemu::config::parse_mahimahi(&body),
                dcemu::config::parse_csv(
                    &format!("DL_bitrate,{column}\n{body}"),
                    "DL_bitrate",
                    1000,
                ),
                dcemu::config::parse_csv(&body, &column, 7),
            ] {
                if let Err(e) = r {
                    let msg = format!("{e:#}");
                    prop_assert!(!msg.contains('\n') && msg.chars().count() < 800, "{msg}");
                }
            }
            Ok(())
        })
        .unwrap();
    runner(2048)
        .run(&text(), |t| {
            let r = dcemu::config::parse_rate(&dcemu::config::RateValue::Text(t.clone()));
            if let Err(e) = r {
                let msg = e.to_string();
                prop_assert!(msg.chars().count() < 800, "{t:?}: {msg}");
            }
            Ok(())
        })
        .unwrap();
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
        1 => (text(), text()).prop_map(|(t, s)| format!("{t} {s}")),
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

#[test]
fn bad_nr_cells_are_refused_naming_the_field() {
    let dir = Scratch::new("nr");
    let cell = "[[legs]]\nname = 'nr'\n[legs.downlink.cell]\n";
    let dev = "[[legs.downlink.cell.devices]]\nmean_sinr_db = 20\n";
    let f = "legs[0].downlink.cell";
    let cases = [
        (
            format!("{cell}rat = 'umts'\n{dev}"),
            format!("{f}.rat: must be \"lte\" or \"nr\" (got \"umts\")"),
        ),
        (
            format!("{cell}nr = {{ layers = 2 }}\n{dev}"),
            format!("{f}.nr: an LTE cell has no NR carrier: set rat = \"nr\""),
        ),
        (
            format!("{cell}rat = 'nr'\nbandwidth_mhz = 100\nnr = {{ numerology = 0 }}\n{dev}"),
            format!("{f}.bandwidth_mhz: numerology 0 has 5, 10, 15, 20, 25, 30, 40, 50 MHz (got 100)"),
        ),
        (
            format!("{cell}rat = 'nr'\nnr = {{ numerology = 5 }}\n{dev}"),
            format!("{f}.nr.numerology: must be 0 to 3 (got 5)"),
        ),
        // Below zero or past the field's type: still the field's own range.
        (
            format!("{cell}rat = 'nr'\nnr = {{ numerology = -1 }}\n{dev}"),
            format!("{f}.nr.numerology: must be 0 to 3 (got -1)"),
        ),
        (
            format!("{cell}rat = 'nr'\nnr = {{ layers = 300 }}\n{dev}"),
            format!("{f}.nr.layers: must be 1 to 4 (got 300)"),
        ),
        (
            format!("{cell}rat = 'nr'\nnr = {{ numerology = 1.5 }}\n{dev}"),
            format!("line 5, column 21: {f}.nr.numerology: must be a whole number (got 1.5)"),
        ),
        (
            format!("{cell}rat = 'nr'\n{dev}blockage = {{ periods = [[1]] }}\n"),
            format!(
                "line 7, column 12: {f}.devices[0].blockage: must be {{ periods = [[START_S, \
                 DURATION_S], ...] }} or {{ mean_clear_ms = MS, mean_blocked_ms = MS }}, either \
                 with an optional loss_db"
            ),
        ),
        (
            format!("{cell}rat = 'nr'\nnr = {{ tdd = 'DDXU' }}\n{dev}"),
            format!("{f}.nr.tdd: a TDD pattern has only D, S and U slots (got 'X')"),
        ),
        (
            format!("{cell}rat = 'nr'\nnr = {{ layers = 8 }}\n{dev}"),
            format!("{f}.nr.layers: must be 1 to 4 (got 8)"),
        ),
        (
            format!("{cell}rat = 'nr'\nnr = {{ mcs_table = 'qam1024' }}\n{dev}"),
            format!("{f}.nr.mcs_table: must be \"qam256\" or \"qam64\" (got \"qam1024\")"),
        ),
        (
            format!("{cell}rat = 'nr'\nharq = {{ bler = 0.7 }}\n{dev}"),
            format!("{f}.harq.bler: HARQ block error rate 0.7: must be between 0 and 0.5"),
        ),
        (
            format!("{cell}rat = 'nr'\nnr = {{ tdd = 'SU', special_pdsch_symbols = 0 }}\n{dev}"),
            format!(
                "{f}.nr: TDD pattern with no downlink slot, and its special slots carry no data \
                 (0 PDSCH symbols): the carrier would never send"
            ),
        ),
        (
            format!("{cell}rat = 'nr'\n{dev}blockage = {{ periods = [] }}\n"),
            format!("{f}.devices[0].blockage.periods: blockage periods: give 1 to 86400 (got 0)"),
        ),
        (
            format!("{cell}rat = 'nr'\nharq = {{ max_tx = 0 }}\n{dev}"),
            format!("{f}.harq.max_tx: HARQ transmissions 0: must be 1 to 8"),
        ),
        (
            format!("{cell}rat = 'nr'\nrlc = {{ mode = 'tm' }}\n{dev}"),
            format!(
                "{f}.rlc.mode: must be \"am\" (acknowledged: resent) or \"um\" \
                 (unacknowledged: lost) (got \"tm\")"
            ),
        ),
        (
            format!("{cell}rat = 'nr'\nrlc = {{ t_reassembly_ms = 250 }}\n{dev}"),
            format!("{f}.rlc.t_reassembly_ms: must be between 0 and 200 (got 250)"),
        ),
        (
            format!("{cell}rlc = {{ max_retx = 40 }}\n{dev}"),
            format!("{f}.rlc.max_retx: RLC retransmissions 40: must be 1 to 32"),
        ),
        (
            format!("{cell}rat = 'nr'\n{dev}blockage = {{ periods = [[1, 0]] }}\n"),
            format!(
                "{f}.devices[0].blockage.periods[0]: [START_S, DURATION_S] with START_S >= 0, \
                 DURATION_S > 0, both within 1000000 s (got [1, 0])"
            ),
        ),
        (
            format!("{cell}rat = 'nr'\n{dev}blockage = {{ periods = [[1, 2], [2, 1]] }}\n"),
            format!(
                "{f}.devices[0].blockage.periods[1]: blockage period 1 starts before the \
                 previous one ends, or lasts 0"
            ),
        ),
        (
            format!("{cell}rat = 'nr'\n{dev}blockage = {{ mean_clear_ms = 100, mean_blocked_ms = 0 }}\n"),
            format!(
                "{f}.devices[0].blockage.mean_clear_ms: mean blockage durations 100 and 0 ms: \
                 each must be between 1 and 3600000"
            ),
        ),
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
    // The X2 hop is a wire.
    let s = dir.file(
        "x2.toml",
        &format!("{cell}rat = 'nr'\n{dev}[legs.x2.cell]\ndevices = [{{ mean_sinr_db = 1 }}]\n"),
    );
    let (code, out) = dcemu(&["check", s.to_str().unwrap()], "");
    assert_eq!(code, 1);
    assert!(
        out.contains("legs[0].x2.cell: the X2 hop is a wire between base stations, not a cell"),
        "{out}"
    );
    // A valid NR cell passes, and `check` says so.
    let ok = dir.file(
        "ok.toml",
        &format!(
            "{cell}rat = 'nr'\nbandwidth_mhz = 100\nnr = {{ layers = 4, tdd = 'DDDSU' }}\n{dev}"
        ),
    );
    let (code, out) = dcemu(&["check", ok.to_str().unwrap()], "");
    assert_eq!(code, 0, "{out}");
}

#[test]
fn bad_flow_controlled_splits_are_refused_naming_the_field() {
    let dir = Scratch::new("flow");
    let legs = "[[legs]]\nname = 'a'\n[[legs]]\nname = 'b'\n";
    let cases = [
        (
            format!("[split]\npolicy = 'credit'\n{legs}"),
            "split.policy: unknown variant `credit`, expected one of `static`, `ddds`, \
             `delay-aware`, `delay-target`"
                .to_string(),
        ),
        (
            format!("[split]\npolicy = 'delay-target'\nhold_bytes = 100\n{legs}"),
            "split.hold_bytes: must be between 9000 and 10000000000 (got 100)".to_string(),
        ),
        (
            format!("[split]\npolicy = 'delay-target'\ndiscard_ms = 2000\n{legs}"),
            "split.discard_ms: must be between 1 and 1500 (got 2000)".to_string(),
        ),
        (
            format!("[split]\npolicy = 'delay-target'\nfallback_ms = -1\n{legs}"),
            "split.fallback_ms: must be between 0 and 1000 (got -1)".to_string(),
        ),
        (
            format!("[split]\npolicy = 'ddds'\nperiod_ms = 0\n{legs}"),
            "split.period_ms: must be between 1 and 1000 (got 0)".to_string(),
        ),
        (
            format!("[split]\npolicy = 'ddds'\nmin_bytes = 10\n{legs}"),
            "split.min_bytes: must be between 1500 and 1000000000 (got 10)".to_string(),
        ),
        (
            format!("[split]\npolicy = 'delay-aware'\ntarget_delay_ms = -1\n{legs}"),
            "split.target_delay_ms: must be between 0 and 10000 (got -1)".to_string(),
        ),
        (
            "[split]\npolicy = 'ddds'\n[[legs]]\nname = 'a'\n".to_string(),
            "split.policy: ddds needs a dc bearer over 2 legs or more (the first is the \
             master's), got dc over 1"
                .to_string(),
        ),
        (
            format!(
                "{legs}[[bearers]]\nname = 'x'\nmode = 'dup'\nsplit = {{ policy = 'ddds' }}\n"
            ),
            "bearers[0].split.policy: ddds needs a dc bearer over 2 legs or more (the first \
             is the master's), got dup over 2"
                .to_string(),
        ),
        (
            format!("{legs}[[schedule]]\nat_ms = 5\nsecondary = {{ event = 'change' }}\n"),
            "schedule[0].leg: required: the secondary's leg".to_string(),
        ),
        (
            format!("{legs}[[schedule]]\nat_ms = 5\nleg = 'a'\nsecondary = {{ event = 'release' }}\n"),
            "schedule[0].leg: leg \"a\" is bearer dc's master (its first leg), not a secondary"
                .to_string(),
        ),
        (
            format!(
                "{legs}[[bearers]]\nname = 's'\nmode = 'sc'\nlegs = ['b']\n[[schedule]]\nat_ms = 5\n\
                 leg = 'b'\nsecondary = {{ event = 'add' }}\n"
            ),
            "schedule[0].leg: no dc or dup bearer uses leg \"b\"".to_string(),
        ),
        (
            format!(
                "{legs}[[schedule]]\nat_ms = 5\nleg = 'b'\n\
                 secondary = {{ event = 'change', interruption_ms = 1e6 }}\n"
            ),
            "schedule[0].secondary.interruption_ms: must be between 0 and 60000 (got 1000000)"
                .to_string(),
        ),
        (
            format!("{legs}[[schedule]]\nat_ms = 5\nleg = 'b'\nsecondary = {{ event = 'swap' }}\n"),
            "unknown variant `swap`, expected one of `release`, `add`, `change`".to_string(),
        ),
        (
            format!("[split]\npolicy = 'ddds'\n{legs}[[schedule]]\nat_ms = 5\nsplit = {{ batch = 5 }}\n"),
            "schedule[0].split: bearer dc's split is flow-controlled (policy ddds): only a \
             static split's batch and ratio change"
                .to_string(),
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let s = dir.file(&format!("s{i}.toml"), text);
        let (code, out) = dcemu(&["check", s.to_str().unwrap()], "");
        assert_eq!(code, 1, "{text}: {out}");
        assert!(out.contains(want), "{text}: want {want}, got {out}");
    }
    let ok = dir.file(
        "ok.toml",
        &format!(
            "[split]\npolicy = 'delay-aware'\nperiod_ms = 5\n{legs}[[schedule]]\nat_ms = 5\n\
             leg = 'b'\nsecondary = {{ event = 'change', buffered = 'lose' }}\n"
        ),
    );
    let (code, out) = dcemu(&["check", ok.to_str().unwrap()], "");
    assert_eq!(code, 0, "{out}");
}
