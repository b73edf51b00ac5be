//! Names and addresses: legs and bearers (they become file names and record keys),
//! network namespaces, interfaces, and the emulated hosts' addresses.

use std::net::Ipv4Addr;

use anyhow::Result;

use super::{bad, is_name, NAME_RULE};
use crate::config::input::clip;

pub(super) fn check_name(field: &str, s: &str) -> Result<()> {
    if !is_name(s) {
        bad(field, format!("must be {NAME_RULE} (got {})", clip(s)))?;
    }
    Ok(())
}

pub(super) fn check_ns_name(field: &str, s: &str) -> Result<()> {
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

pub(super) fn check_ifname(field: &str, s: &str) -> Result<()> {
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
pub(super) fn check_bench_addr(field: &str, a: Ipv4Addr) -> Result<()> {
    let o = a.octets();
    if !(o[0] == 198 && (o[1] == 18 || o[1] == 19)) {
        bad(field, format!("must be in 198.18.0.0/15 (got {a})"))?;
    }
    Ok(())
}
