//! The schedule: changes of a leg's rate, trace, delay or loss, of a bearer's split, and
//! secondary node events, at given times (sorted by time).

use std::path::Path;

use anyhow::Result;

use super::bearers::check_ratio;
use super::links::{delay_spec, loss_spec, rate_spec, trace_spec, TraceCache};
use super::{bad, leg_index, within};
use crate::base::time::{from_ms, Nanos};
use crate::config::input::clip;
use crate::config::scenario::{Bearer, Change, ChangeKind, Leg, SnEvent};
use crate::config::schema::{
    BearerMode, BufferedName, ChangeFile, DirectionName, ScenarioFile, SecondaryEventName,
    SecondaryFile, SplitChangeFile,
};

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
        if !link_change && c.split.is_none() && c.secondary.is_none() {
            bad(
                &f,
                "changes nothing: give rate, trace, delay, loss, split or secondary",
            )?;
        }
        if link_change {
            link_changes(&f, c, at, legs, base, traces, &mut schedule)?;
        }
        if let Some(s) = &c.split {
            schedule.push(split_change(&f, c, s, at, bearers)?);
        }
        if let Some(s) = &c.secondary {
            schedule.push(secondary_event(&f, c, s, at, legs, bearers)?);
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

/// A secondary node event on `c.leg`, which must be a split bearer's leg other than its
/// first (the master's).
fn secondary_event(
    f: &str,
    c: &ChangeFile,
    s: &SecondaryFile,
    at: Nanos,
    legs: &[Leg],
    bearers: &[Bearer],
) -> Result<Change> {
    let Some(name) = &c.leg else {
        return bad(format!("{f}.leg"), "required: the secondary's leg");
    };
    let leg = leg_index(legs, &format!("{f}.leg"), name)?;
    let split = |b: &&Bearer| matches!(b.mode, BearerMode::Dc | BearerMode::Dup);
    if let Some(b) = bearers.iter().filter(split).find(|b| b.legs[0] == leg) {
        bad(
            format!("{f}.leg"),
            format!(
                "leg {} is bearer {}'s master (its first leg), not a secondary",
                clip(name),
                b.name
            ),
        )?;
    }
    if !bearers.iter().filter(split).any(|b| b.legs.contains(&leg)) {
        bad(
            format!("{f}.leg"),
            format!("no dc or dup bearer uses leg {}", clip(name)),
        )?;
    }
    within(
        &format!("{f}.secondary.interruption_ms"),
        "schedule.interruption_ms",
        s.interruption_ms,
    )?;
    let forward = s.buffered == BufferedName::Forward;
    let event = match s.event {
        SecondaryEventName::Release => SnEvent::Release { forward },
        SecondaryEventName::Add => SnEvent::Add,
        SecondaryEventName::Change => SnEvent::Change {
            interruption: from_ms(s.interruption_ms),
            forward,
        },
    };
    Ok(Change {
        at,
        what: ChangeKind::Secondary { leg, event },
    })
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
    let targets =
        |b: &&Bearer| bearer.map_or(b.mode == BearerMode::Dc, |i| b.name == bearers[i].name);
    if let Some(b) = bearers
        .iter()
        .filter(targets)
        .find(|b| b.split.policy.flow().is_some())
    {
        bad(
            format!("{f}.split"),
            format!(
                "bearer {}'s split is flow-controlled (policy {}): only a static split's batch \
                 and ratio change",
                b.name,
                b.split.policy.name()
            ),
        )?;
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
