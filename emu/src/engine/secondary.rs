//! Secondary node events on a leg (a split bearer's leg other than its first, the
//! master's), at scheduled times: a release (the split bearers send everything on their
//! master's leg), an addition (they may use the leg again, as a new secondary), and a
//! change (the leg carries none of their packets for an interruption, then serves again
//! as a new secondary). What the secondary held of the split bearers, and what reaches it
//! over X2 meanwhile, is forwarded (back over X2 to the master's leg on a release, to the
//! new secondary when the interruption ends) or lost.
//!
//! Only the split bearers (dc, dup) are affected; a bearer pinned to the leg (the
//! secondary's own) carries on.

use std::collections::VecDeque;

use serde::Serialize;

use crate::base::packet::Pkt;
use crate::base::time::{Nanos, NS_PER_MS};

/// Where a forwarded packet goes when it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The master's leg of the packet's bearer.
    Master,
    /// This leg again (the new secondary).
    Leg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnState {
    Active,
    Released { forward: bool },
    Interrupted { until: Nanos, forward: bool },
}

/// One leg's secondary node, once an event has happened on it.
#[derive(Debug)]
pub struct SecondaryNode {
    state: SnState,
    /// Packets being forwarded: (arrival, target, packet), in arrival order.
    forwarding: VecDeque<(Nanos, Target, Pkt)>,
    counters: SnCounters,
    interrupted_since: Nanos,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SnCounters {
    pub releases: u64,
    pub additions: u64,
    pub changes: u64,
    /// Split bearers' packets forwarded, and lost, at the events.
    pub forwarded_packets: u64,
    pub lost_packets: u64,
    /// Time the leg spent interrupted by changes (cumulative, ms).
    pub interrupted_ms: f64,
}

/// What becomes of a split bearer's packet that finds the secondary away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Divert {
    /// Forward it, arriving at this instant.
    Forward(Nanos, Target),
    Lose,
}

impl SecondaryNode {
    pub fn new() -> Self {
        SecondaryNode {
            state: SnState::Active,
            forwarding: VecDeque::new(),
            counters: SnCounters::default(),
            interrupted_since: 0,
        }
    }

    /// Whether the split bearers may send on the leg now.
    pub fn is_active(&self) -> bool {
        self.state == SnState::Active
    }

    pub fn state(&self) -> SnState {
        self.state
    }

    pub fn release(&mut self, now: Nanos, forward: bool) {
        self.end_interruption_if_any(Some(now));
        self.state = SnState::Released { forward };
        self.counters.releases += 1;
    }

    pub fn add(&mut self, now: Nanos) {
        self.end_interruption_if_any(Some(now));
        self.state = SnState::Active;
        self.counters.additions += 1;
    }

    pub fn change(&mut self, now: Nanos, interruption: Nanos, forward: bool) {
        self.end_interruption_if_any(Some(now));
        self.state = SnState::Interrupted {
            until: now + interruption,
            forward,
        };
        self.interrupted_since = now;
        self.counters.changes += 1;
    }

    /// Counts the interruption in progress as over at `at` (or at its planned end).
    fn end_interruption_if_any(&mut self, at: Option<Nanos>) {
        if let SnState::Interrupted { until, .. } = self.state {
            let end = at.map_or(until, |a| a.min(until));
            self.counters.interrupted_ms +=
                end.saturating_sub(self.interrupted_since) as f64 / NS_PER_MS as f64;
        }
    }

    /// What becomes of a split bearer's packet reaching the leg at `now`: None while the
    /// secondary is active (the leg takes it); else held for the new node or the master, or
    /// lost. `hop` is the X2 hop's one-way delay (a release forwards back over it).
    pub fn divert(&self, now: Nanos, hop: Nanos) -> Option<Divert> {
        Some(match self.state {
            SnState::Active => return None,
            SnState::Released { forward: true } => Divert::Forward(now + hop, Target::Master),
            SnState::Interrupted {
                until,
                forward: true,
            } => Divert::Forward(until, Target::Leg),
            SnState::Released { forward: false } | SnState::Interrupted { .. } => Divert::Lose,
        })
    }

    /// Holds `p` until `at` (for `target`), or counts it lost (the caller frees it).
    pub fn hold(&mut self, p: Pkt, how: Divert) {
        match how {
            Divert::Forward(at, target) => {
                self.counters.forwarded_packets += 1;
                let pos = self.forwarding.partition_point(|f| f.0 <= at);
                self.forwarding.insert(pos, (at, target, p));
            }
            Divert::Lose => self.counters.lost_packets += 1,
        }
    }

    /// The next forwarded arrival or the end of an interruption.
    pub fn next_deadline(&self) -> Option<Nanos> {
        let end = match self.state {
            SnState::Interrupted { until, .. } => Some(until),
            _ => None,
        };
        match (self.forwarding.front().map(|f| f.0), end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// At `now`: ends an interruption that is over (true: the leg is active again), and
    /// hands out the forwarded packets due, in order.
    pub fn poll(&mut self, now: Nanos, out: &mut impl FnMut(Nanos, Target, Pkt)) -> bool {
        let mut resumed = false;
        if let SnState::Interrupted { until, .. } = self.state {
            if until <= now {
                self.end_interruption_if_any(None);
                self.state = SnState::Active;
                resumed = true;
            }
        }
        while let Some(&(at, target, p)) = self.forwarding.front().filter(|f| f.0 <= now) {
            self.forwarding.pop_front();
            out(at, target, p);
        }
        resumed
    }

    pub fn record(&self) -> SnRecord {
        SnRecord {
            state: match self.state {
                SnState::Active => "active",
                SnState::Released { .. } => "released",
                SnState::Interrupted { .. } => "interrupted",
            },
            forwarding_packets: self.forwarding.len() as u64,
            counters: self.counters.clone(),
        }
    }
}

impl Default for SecondaryNode {
    fn default() -> Self {
        Self::new()
    }
}

/// A leg's secondary node in a stats record (present once an event happened on it).
#[derive(Clone, Debug, Serialize)]
pub struct SnRecord {
    pub state: &'static str,
    /// Packets being forwarded now.
    pub forwarding_packets: u64,
    #[serde(flatten)]
    pub counters: SnCounters,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = NS_PER_MS;

    #[test]
    fn a_change_holds_packets_until_it_ends_and_counts_its_time() {
        let mut sn = SecondaryNode::new();
        assert!(sn.is_active() && sn.next_deadline().is_none());
        sn.change(100 * MS, 50 * MS, true);
        assert!(!sn.is_active());
        assert_eq!(SecondaryNode::new().divert(120 * MS, 5 * MS), None);
        let how = sn.divert(120 * MS, 5 * MS).unwrap();
        assert_eq!(how, Divert::Forward(150 * MS, Target::Leg));
        sn.hold(Pkt::new(1, 100, 0), how);
        assert_eq!(sn.next_deadline(), Some(150 * MS));
        let mut out = Vec::new();
        assert!(!sn.poll(149 * MS, &mut |t, to, p| out.push((t, to, p.id))));
        assert!(sn.poll(150 * MS, &mut |t, to, p| out.push((t, to, p.id))));
        assert_eq!(out, [(150 * MS, Target::Leg, 1)]);
        assert!(sn.is_active());
        let r = sn.record();
        assert_eq!(
            (r.state, r.counters.changes, r.counters.forwarded_packets),
            ("active", 1, 1)
        );
        assert_eq!(r.counters.interrupted_ms, 50.0);
    }

    #[test]
    fn a_release_forwards_back_over_the_hop_or_loses() {
        let mut sn = SecondaryNode::new();
        sn.release(0, true);
        assert_eq!(
            sn.divert(10 * MS, 5 * MS),
            Some(Divert::Forward(15 * MS, Target::Master))
        );
        sn.add(11 * MS);
        assert!(sn.is_active());
        sn.release(12 * MS, false);
        assert_eq!(sn.divert(10 * MS, 5 * MS), Some(Divert::Lose));
        sn.hold(Pkt::new(2, 100, 0), Divert::Lose);
        sn.change(20 * MS, 10 * MS, false);
        assert_eq!(sn.divert(25 * MS, 5 * MS), Some(Divert::Lose));
        // A release during a change ends the interruption there.
        sn.release(26 * MS, true);
        let c = sn.record().counters;
        assert_eq!(
            (c.releases, c.additions, c.changes, c.lost_packets),
            (3, 1, 1, 1)
        );
        assert_eq!(c.interrupted_ms, 6.0);
    }
}
