//! The bearers: their legs, split and uplink leg, the rules that classify packets into
//! them, and which device of a cell leg each one is.

use std::net::Ipv4Addr;

use crate::base::time::from_ms;

use anyhow::Result;

use super::names::check_name;
use super::{bad, leg_index, within, MAX_MATCH_RULES};
use crate::config::input::clip;
use crate::config::scenario::{Bearer, FlowSpec, HoldSpec, Leg, Rule, Split, SplitPolicy};
use crate::config::schema::{
    BearerFile, BearerMode, MatchFile, PortValue, ScenarioFile, SplitFile, SplitPolicyName,
};

/// Every bearer of the file (one DC bearer over all legs when it lists none).
pub(super) fn bearers(file: &ScenarioFile, legs: &[Leg]) -> Result<Vec<Bearer>> {
    let first_uplink = legs.iter().position(|l| l.uplink.is_some());
    within("split.batch", "split.batch", file.split.batch as f64)?;
    let mut bearers = Vec::new();
    let bearer_files = if file.bearers.is_empty() {
        vec![BearerFile {
            name: "dc".into(),
            mode: BearerMode::Dc,
            legs: None,
            uplink_leg: None,
            rules: vec![],
            split: None,
        }]
    } else {
        file.bearers.clone()
    };
    let mut bnames = std::collections::HashSet::new();
    for (i, b) in bearer_files.iter().enumerate() {
        let f = format!("bearers[{i}]");
        check_name(&format!("{f}.name"), &b.name)?;
        if !bnames.insert(b.name.clone()) {
            bad(
                format!("{f}.name"),
                format!("must be unique (got {} twice)", clip(&b.name)),
            )?;
        }
        let leg_ids: Vec<usize> = match &b.legs {
            None => (0..legs.len()).collect(),
            Some(names) => {
                let mut v = Vec::new();
                for (j, n) in names.iter().enumerate() {
                    let id = leg_index(legs, &format!("{f}.legs[{j}]"), n)?;
                    if v.contains(&id) {
                        bad(
                            format!("{f}.legs[{j}]"),
                            format!("leg {} listed twice", clip(n)),
                        )?;
                    }
                    v.push(id);
                }
                v
            }
        };
        match b.mode {
            BearerMode::Sc | BearerMode::Path if leg_ids.len() != 1 => bad(
                format!("{f}.legs"),
                format!(
                    "{} bearer takes exactly 1 leg (got {})",
                    if b.mode == BearerMode::Sc {
                        "an sc"
                    } else {
                        "a path"
                    },
                    leg_ids.len()
                ),
            )?,
            BearerMode::Dc | BearerMode::Dup if leg_ids.is_empty() => {
                bad(format!("{f}.legs"), "must list at least 1 leg")?
            }
            _ => {}
        }
        // Only DC bearers split; the others ignore the global split.
        let split = match (&b.split, b.mode) {
            (Some(s), _) => split_spec(&format!("{f}.split"), s, b.mode, leg_ids.len())?,
            (None, BearerMode::Dc) => split_spec("split", &file.split, b.mode, leg_ids.len())?,
            (None, _) => Split {
                batch: file.split.batch,
                ratio: vec![1.0; leg_ids.len()],
                policy: SplitPolicy::Static,
            },
        };
        let uplink_leg = match &b.uplink_leg {
            // A path's uplink is its own leg's: each path sees one leg, both ways.
            None if b.mode == BearerMode::Path => {
                let id = leg_ids[0];
                if legs[id].uplink.is_none() {
                    bad(
                        format!("{f}.legs"),
                        format!(
                            "a path bearer needs its leg to have an uplink (leg {} has none)",
                            legs[id].name
                        ),
                    )?;
                }
                Some(id)
            }
            None => first_uplink,
            Some(n) => {
                let id = leg_index(legs, &format!("{f}.uplink_leg"), n)?;
                if b.mode == BearerMode::Path && id != leg_ids[0] {
                    bad(
                        format!("{f}.uplink_leg"),
                        format!(
                            "a path bearer's uplink is its own leg's ({}), got {}",
                            legs[leg_ids[0]].name,
                            clip(n)
                        ),
                    )?;
                }
                if legs[id].uplink.is_none() {
                    bad(
                        format!("{f}.uplink_leg"),
                        format!("leg {} has no uplink", clip(n)),
                    )?;
                }
                Some(id)
            }
        };
        if b.rules.len() > MAX_MATCH_RULES {
            bad(
                format!("{f}.match"),
                format!(
                    "must list at most {MAX_MATCH_RULES} rules (got {})",
                    b.rules.len()
                ),
            )?;
        }
        let mut rules = Vec::new();
        for (j, r) in b.rules.iter().enumerate() {
            rules.push(rule_spec(&format!("{f}.match[{j}]"), r)?);
        }
        bearers.push(Bearer {
            name: b.name.clone(),
            mode: b.mode,
            legs: leg_ids,
            uplink_leg,
            rules,
            split,
        });
    }
    // A flow-controlled [split] that no bearer reads would be a policy the run never had.
    let global_readers = bearer_files
        .iter()
        .filter(|b| b.mode == BearerMode::Dc && b.split.is_none())
        .count();
    if file.split.policy != SplitPolicyName::Static && global_readers == 0 {
        bad(
            "split.policy",
            "a flow-controlled policy is for the dc bearers that take the global split; this \
             scenario has none (dup bearers send every packet on every leg; a bearer with a \
             split of its own takes that one)",
        )?;
    }
    // The X2/Xn hop leads from the master to a secondary: on a master's leg it means nothing.
    for b in &bearers {
        let master = b.legs[0];
        let split = matches!(b.mode, BearerMode::Dc | BearerMode::Dup) && b.legs.len() > 1;
        if split && legs[master].x2.is_some() {
            bad(
                format!("legs[{master}].x2"),
                format!(
                    "leg {} is bearer {}'s master (its first leg): the X2/Xn hop is a \
                     secondary's, from the master's PDCP",
                    legs[master].name, b.name
                ),
            )?;
        }
    }
    Ok(bearers)
}

/// Sets each cell leg's device per bearer, checking it lists one device per bearer on it.
pub(super) fn assign_devices(legs: &mut [Leg], bearers: &[Bearer]) -> Result<()> {
    // Device k of a cell is the k-th bearer (in file order) whose legs include the leg.
    let mut device_maps = Vec::new();
    for (i, leg) in legs.iter().enumerate() {
        let Some(cell) = leg.cell.as_ref() else {
            continue;
        };
        let users: Vec<usize> = (0..bearers.len())
            .filter(|&b| bearers[b].legs.contains(&i))
            .collect();
        if users.len() != cell.spec.devices.len() {
            let names: Vec<&str> = users.iter().map(|&b| bearers[b].name.as_str()).collect();
            bad(
                format!("legs[{i}].downlink.cell.devices"),
                format!(
                    "needs one device per bearer on leg {:?}, in bearer order ({} bearer{}: {}), \
                     got {}",
                    leg.name,
                    users.len(),
                    if users.len() == 1 { "" } else { "s" },
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    },
                    cell.spec.devices.len()
                ),
            )?;
        }
        let map: Vec<Option<usize>> = (0..bearers.len())
            .map(|b| users.iter().position(|&u| u == b))
            .collect();
        device_maps.push((i, map));
    }
    for (i, map) in device_maps {
        if let Some(c) = legs[i].cell.as_mut() {
            c.device_of_bearer = map;
        }
    }
    Ok(())
}

/// The bearer of packets no rule matches (the first unless `default_bearer` names one).
pub(super) fn default_bearer(file: &ScenarioFile, bearers: &[Bearer]) -> Result<usize> {
    Ok(match &file.default_bearer {
        None => 0,
        Some(n) => match bearers.iter().position(|b| &b.name == n) {
            Some(i) => i,
            None => bad("default_bearer", format!("no bearer named {}", clip(n)))?,
        },
    })
}

pub(super) fn check_ratio(field: &str, r: &[f64], legs: usize) -> Result<()> {
    if r.len() != legs {
        bad(
            field,
            format!(
                "needs one share per leg of the bearer ({legs}), got {}",
                r.len()
            ),
        )?;
    }
    for (i, v) in r.iter().enumerate() {
        within(&format!("{field}[{i}]"), "split.ratio", *v)?;
    }
    if r.iter().sum::<f64>() <= 0.0 {
        bad(field, "at least one share must be above 0")?;
    }
    Ok(())
}

/// The split of a `mode` bearer with `legs` legs: one share per leg, and its policy.
fn split_spec(field: &str, s: &SplitFile, mode: BearerMode, legs: usize) -> Result<Split> {
    within(&format!("{field}.batch"), "split.batch", s.batch as f64)?;
    let ratio = s.ratio.clone().unwrap_or_else(|| vec![1.0; legs]);
    check_ratio(&format!("{field}.ratio"), &ratio, legs)?;
    within(
        &format!("{field}.period_ms"),
        "split.period_ms",
        s.period_ms,
    )?;
    within(
        &format!("{field}.target_delay_ms"),
        "split.target_delay_ms",
        s.target_delay_ms,
    )?;
    within(
        &format!("{field}.min_bytes"),
        "split.min_bytes",
        s.min_bytes as f64,
    )?;
    within(
        &format!("{field}.fallback_ms"),
        "split.fallback_ms",
        s.fallback_ms,
    )?;
    let flow = FlowSpec {
        period: from_ms(s.period_ms),
        target_delay: from_ms(s.target_delay_ms),
        min_bytes: s.min_bytes,
        outage_after: (s.fallback_ms > 0.0).then(|| from_ms(s.fallback_ms)),
    };
    within(
        &format!("{field}.hold_bytes"),
        "split.hold_bytes",
        s.hold_bytes as f64,
    )?;
    within(
        &format!("{field}.discard_ms"),
        "split.discard_ms",
        s.discard_ms,
    )?;
    let policy = match s.policy {
        SplitPolicyName::Static => SplitPolicy::Static,
        SplitPolicyName::Ddds => SplitPolicy::Ddds(flow),
        SplitPolicyName::DelayAware => SplitPolicy::DelayAware(flow),
        SplitPolicyName::DelayTarget => SplitPolicy::DelayTarget(
            flow,
            HoldSpec {
                limit_bytes: s.hold_bytes,
                discard_after: from_ms(s.discard_ms),
            },
        ),
    };
    if policy.flow().is_some() && (mode != BearerMode::Dc || legs < 2) {
        bad(
            format!("{field}.policy"),
            format!(
                "{} needs a dc bearer over 2 legs or more (the first is the master's), got {} \
                 over {legs}",
                policy.name(),
                format!("{mode:?}").to_lowercase()
            ),
        )?;
    }
    Ok(Split {
        batch: s.batch,
        ratio,
        policy,
    })
}

fn port_range(field: &str, p: &PortValue) -> Result<(u16, u16)> {
    match p {
        PortValue::One(v) => Ok((*v, *v)),
        PortValue::Range(s) => {
            let parsed = s
                .split_once('-')
                .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
            match parsed {
                Some((a, b)) if a <= b => Ok((a, b)),
                _ => bad(
                    field,
                    format!(
                        "must be a port 0-65535 or a range \"lo-hi\" (got {})",
                        clip(s)
                    ),
                ),
            }
        }
    }
}

fn net(field: &str, s: &str) -> Result<(u32, u32)> {
    let (a, len) = match s.split_once('/') {
        Some((a, l)) => (a, l.parse::<u32>().ok().filter(|l| *l <= 32)),
        None => (s, Some(32)),
    };
    match (a.parse::<Ipv4Addr>(), len) {
        (Ok(addr), Some(len)) => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            Ok((u32::from(addr) & mask, mask))
        }
        _ => bad(
            field,
            format!(
                "must be an IPv4 address or prefix like 198.18.0.0/15 (got {})",
                clip(s)
            ),
        ),
    }
}

fn rule_spec(field: &str, m: &MatchFile) -> Result<Rule> {
    let protocol = match m.protocol.as_deref() {
        None => None,
        Some("tcp") => Some(6),
        Some("udp") => Some(17),
        Some("icmp") => Some(1),
        Some(other) => match other.parse::<u8>() {
            Ok(n) => Some(n),
            Err(_) => bad(
                format!("{field}.protocol"),
                format!("must be tcp, udp, icmp or 0-255 (got {})", clip(other)),
            )?,
        },
    };
    Ok(Rule {
        protocol,
        server_ports: m
            .server_port
            .as_ref()
            .map(|p| port_range(&format!("{field}.server_port"), p))
            .transpose()?,
        client_ports: m
            .client_port
            .as_ref()
            .map(|p| port_range(&format!("{field}.client_port"), p))
            .transpose()?,
        server_net: m
            .server_addr
            .as_deref()
            .map(|s| net(&format!("{field}.server_addr"), s))
            .transpose()?,
        client_net: m
            .client_addr
            .as_deref()
            .map(|s| net(&format!("{field}.client_addr"), s))
            .transpose()?,
    })
}
