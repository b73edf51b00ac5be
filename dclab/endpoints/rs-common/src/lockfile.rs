//! The locked versions of chosen crates, for a program's build script to put into its
//! binary (`version`, the `stack` object of the client's JSON line), so that they always
//! say what was built.

use std::{env, fs, path::Path};

/// Reads the package's Cargo.lock and sets each `(crate, variable)`'s variable to the
/// crate's locked version ("unknown" when it is not there), for `env!` in the program.
pub fn emit_versions(crates: &[(&str, &str)]) {
    let lock = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("run by cargo")).join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = fs::read_to_string(&lock).unwrap_or_default();
    for (var, version) in versions(&text, crates) {
        println!("cargo:rustc-env={var}={version}");
    }
}

/// Each crate's variable and the version the lock file gives it (the first entry of that
/// name), in the order asked.
pub fn versions<'a>(lock: &str, crates: &[(&str, &'a str)]) -> Vec<(&'a str, String)> {
    let mut found: Vec<(&str, String)> = Vec::new();
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .strip_prefix("name = \"")
            .and_then(|s| s.strip_suffix('"'))
        else {
            continue;
        };
        let Some(&(_, var)) = crates.iter().find(|(c, _)| *c == name) else {
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
    crates
        .iter()
        .map(|&(_, var)| {
            let v = found
                .iter()
                .find(|(f, _)| *f == var)
                .map_or("unknown", |(_, v)| v.as_str());
            (var, v.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_locked_version_of_each_crate_and_unknown_for_a_missing_one() {
        let lock = "[[package]]\nname = \"quinn\"\nversion = \"0.11.12\"\n\n[[package]]\nname = \"rustls\"\nversion = \"0.23.46\"\n\n[[package]]\nname = \"quinn\"\nversion = \"0.10.0\"\n";
        let got = versions(
            lock,
            &[("quinn", "V_QUINN"), ("h3", "V_H3"), ("rustls", "V_RUSTLS")],
        );
        assert_eq!(
            got,
            [
                ("V_QUINN", "0.11.12".to_string()),
                ("V_H3", "unknown".to_string()),
                ("V_RUSTLS", "0.23.46".to_string())
            ]
        );
    }
}
