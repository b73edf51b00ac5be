//! Puts the locked versions of the QUIC crates into the binary (`version`, the `stack`
//! object of the client's JSON line), so that they always say what was built.

use std::{env, fs, path::Path};

const CRATES: [(&str, &str); 4] = [
    ("noq", "DCLAB_V_NOQ"),
    ("noq-proto", "DCLAB_V_NOQ_PROTO"),
    ("noq-udp", "DCLAB_V_NOQ_UDP"),
    ("rustls", "DCLAB_V_RUSTLS"),
];

fn main() {
    let lock = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = fs::read_to_string(&lock).unwrap_or_default();
    let mut lines = text.lines();
    let mut found: Vec<(&str, String)> = Vec::new();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .strip_prefix("name = \"")
            .and_then(|s| s.strip_suffix('"'))
        else {
            continue;
        };
        let Some(&(_, var)) = CRATES.iter().find(|(c, _)| *c == name) else {
            continue;
        };
        let version = lines
            .next()
            .and_then(|l| l.strip_prefix("version = \""))
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or("unknown");
        if !found.iter().any(|(v, _)| *v == var) {
            found.push((var, version.to_string()));
        }
    }
    for (_, var) in CRATES {
        let v = found
            .iter()
            .find(|(f, _)| *f == var)
            .map_or("unknown", |(_, v)| v.as_str());
        println!("cargo:rustc-env={var}={v}");
    }
}
