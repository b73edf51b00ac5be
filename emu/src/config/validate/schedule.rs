//! The schedule: changes of a leg's rate, trace, delay or loss, and of a bearer's split,
//! at given times (sorted by time).

use std::path::Path;

use anyhow::Result;

use super::bearers::check_ratio;
use super::links::{delay_spec, loss_spec, rate_spec, trace_spec, TraceCache};
use super::{bad, leg_index, within};
use crate::base::time::{from_ms, Nanos};
use crate::config::input::clip;
use crate::config::scenario::{Bearer, Change, ChangeKind, Leg};
use crate::config::schema::{BearerMode, ChangeFile, DirectionName, ScenarioFile, SplitChangeFile};

pub(super) fn schedule(
    file: &ScenarioFile,
    legs: &[Leg],
    bearers: &[Bearer],
    base: &Path,
    traces: &mut TraceCache,
) -> Result<Vec<Change>> {
    let mut schedule = Vec::new();
    for (i, c) in file.schedule.iter().enumerate() {
        let f = format!("schedule[{i}]");
        within(&format!("{f}.at_ms"), "schedule.at_ms", c.at_ms)?;
        let at = from_ms(c.at_ms);
        let link_change =
            c.rate.is_some() || c.trace.is_some() || c.delay.is_some() || c.loss.is_some();
        if !link_change && c.split.is_none() {
            bad(
                &f,
                "changes nothing: give rate, trace, delay, loss or split",
            )?;
        }
        if link_change {
            link_changes(&f, c, at, legs, base, traces, &mut schedule)?;
        }
        if let Some(s) = &c.split {
            schedule.push(split_change(&f, c, s, at, bearers)?);
        }
    }
    schedule.sort_by_key(|c| c.at);
    Ok(schedule)
}

/// A change of one leg direction's rate or trace, delay and loss (one `Change` each).
fn link_changes(
    f: &str,
    c: &ChangeFile,
    at: Nanos,
    legs: &[Leg],
    base: &Path,
    traces: &mut TraceCache,
    schedule: &mut Vec<Change>,
) -> Result<()> {
    let Some(name) = &c.leg else {
        return bad(
            format!("{f}.leg"),
            "required to change rate, trace, delay or loss",
        );
    };
    let leg = leg_index(legs, &format!("{f}.leg"), name)?;
    let uplink = c.direction == DirectionName::Uplink;
    if uplink && legs[leg].uplink.is_none() {
        bad(
            format!("{f}.direction"),
            format!("leg {} has no uplink", clip(name)),
        )?;
    }
    if c.rate.is_some() && c.trace.is_some() {
        bad(format!("{f}.trace"), "give rate or trace, not both")?;
    }
    if !uplink && legs[leg].cell.is_some() && (c.rate.is_some() || c.trace.is_some()) {
        bad(
            format!("{f}.{}", if c.rate.is_some() { "rate" } else { "trace" }),
            format!(
                "leg {name:?}'s downlink is a cell (its capacity follows the channel); \
                 only delay and loss can change"
            ),
        )?;
    }
    let mut push = |what: ChangeKind| schedule.push(Change { at, what });
    if let Some(r) = &c.rate {
        push(ChangeKind::Rate {
            leg,
            uplink,
            rate: rate_spec(&format!("{f}.rate"), r)?,
        });
    }
    if let Some(t) = &c.trace {
        push(ChangeKind::Rate {
            leg,
            uplink,
            rate: trace_spec(&format!("{f}.trace"), t, base, traces)?,
        });
    }
    if let Some(d) = &c.delay {
        push(ChangeKind::Delay {
            leg,
            uplink,
            delay: delay_spec(&format!("{f}.delay"), d)?,
        });
    }
    if let Some(l) = &c.loss {
        push(ChangeKind::Loss {
            leg,
            uplink,
            loss: loss_spec(&format!("{f}.loss"), l)?,
        });
    }
    Ok(())
}

/// A change of a bearer's split (of every DC bearer's without `bearer`).
fn split_change(
    f: &str,
    c: &ChangeFile,
    s: &SplitChangeFile,
    at: Nanos,
    bearers: &[Bearer],
) -> Result<Change> {
    let bearer = match &c.bearer {
        None => None,
        Some(n) => match bearers.iter().position(|b| &b.name == n) {
            Some(i) => Some(i),
            None => bad(
                format!("{f}.bearer"),
                format!("no bearer named {}", clip(n)),
            )?,
        },
    };
    if let Some(b) = s.batch {
        within(&format!("{f}.split.batch"), "split.batch", b as f64)?;
    }
    if let Some(r) = &s.ratio {
        let targets: Vec<&Bearer> = match bearer {
            Some(i) => vec![&bearers[i]],
            None => bearers
                .iter()
                .filter(|b| b.mode == BearerMode::Dc)
                .collect(),
        };
        for b in targets {
            check_ratio(&format!("{f}.split.ratio"), r, b.legs.len())?;
        }
    }
    Ok(Change {
        at,
        what: ChangeKind::Split {
            bearer,
            batch: s.batch,
            ratio: s.ratio.clone(),
        },
    })
}
