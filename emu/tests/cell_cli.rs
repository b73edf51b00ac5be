//! `dcemu cell-capacity` and `cell-trace` over long channels: their memory does not grow
//! with the length (each TTI is summarized or written as it is made). Run under an address
//! space limit of 128 MiB: holding 20 M TTIs (160 MB) or a trace of 10 M opportunities
//! (80 MB of times and as much text) in memory fails within it.

use std::process::Command;

const LIMIT_KB: u32 = 128 * 1024;

/// dcemu `args` with its address space limited to [`LIMIT_KB`]: (status, stdout, stderr).
fn limited(args: &[&str]) -> (i32, String, String) {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KB} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_dcemu"))
        .args(args)
        .output()
        .expect("bash runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_long_capacity_summary_is_made_in_little_memory() {
    // 20 000 s of 1 ms TTIs.
    let (code, out, err) = limited(&["cell-capacity", "--sinr-db", "20", "--seconds", "20000"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ttis"], 20_000_000);
    let (p10, p50, p90) = (
        v["p10_mbps"].as_f64().unwrap(),
        v["p50_mbps"].as_f64().unwrap(),
        v["p90_mbps"].as_f64().unwrap(),
    );
    assert!(p10 > 0.0 && p10 < p50 && p50 < p90, "{v}");
}

/// An empty directory of the test's own.
fn scratch(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dcemu-cell-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_long_trace_is_written_as_it_is_made() {
    let dir = scratch("long");
    let path = dir.join("trace");
    // 2 000 s at about 60 Mbit/s: about 10 M opportunities of 1500 bytes.
    let (code, _, err) = limited(&[
        "cell-trace",
        "--sinr-db",
        "30",
        "--seconds",
        "2000",
        "--out",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&path).unwrap();
    let times: Vec<u64> = text.lines().map(|l| l.parse().unwrap()).collect();
    assert!(times.len() > 8_000_000, "{}", times.len());
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
    assert!(*times.last().unwrap() <= 2_000_000 && times[0] >= 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A channel without one opportunity is refused and writes nothing: `--out` is not even
/// made.
#[test]
fn no_trace_no_file() {
    let dir = scratch("none");
    let path = dir.join("trace");
    let (code, _, err) = limited(&[
        "cell-trace",
        "--sinr-db",
        "-30",
        "--seconds",
        "0.01",
        "--out",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err,
        "dcemu: error: --sinr-db: the channel carries not one 1500-byte packet in 0.01 s; a \
         trace needs at least one\n"
    );
    assert!(!path.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
