//! PIE, the Proportional Integral controller Enhanced (RFC 8033): drops (or marks CE) at
//! enqueue with a probability that a PI controller updates every `t_update` from the
//! queueing delay's distance to `target` and its change since the last update.
//!
//! Sans-IO: the caller asks [`Pie::on_enqueue`] before queueing a packet and tells
//! [`Pie::on_dequeue`] each packet's sojourn as it leaves; the periodic update runs in
//! virtual time, caught up to each call's `now` (calls come in time order), so PIE needs
//! no deadline of its own. What the RFC fixes, this follows:
//! - the delay is measured by timestamps (section 4.3's alternative to the departure rate):
//!   the sojourn of the last packet dequeued, 0 once the queue is empty;
//! - the update (section 4.2): `p = alpha (qdelay - target) + beta (qdelay - qdelay_old)`
//!   in seconds, scaled down while the probability is small (by 2048 below 0.0001 %, ...,
//!   by 2 below 10 %), added to the probability, which decays by 2 % an update while the
//!   queue stays empty and is kept in [0, 1]; an increase is held to 2 % per update above a
//!   probability of 10 %, as Linux's `sch_pie` does;
//! - the burst allowance (section 4.4): no early drop for `max_burst` after the queue was
//!   quiet (delay below half the target twice running, probability 0);
//! - the early drop (section 4.1): none during the allowance, at probability 0, while the
//!   old delay is below half the target and the probability below 20 %, or with at most two
//!   packets queued; else with the probability, from a seeded generator. An ECN-capable
//!   packet is marked instead while the probability is at most `mark_ecn_max` (10 %).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::AqmCounters;
use crate::base::time::{Nanos, NS_PER_MS, NS_PER_S};

/// RFC 8033's defaults (section 5, "Implementation and Deployment"): 15 ms, 15 ms, 0.125 Hz,
/// 1.25 Hz, 150 ms, and 10 % for marking.
pub const DEFAULT_TARGET: Nanos = 15 * NS_PER_MS;
pub const DEFAULT_T_UPDATE: Nanos = 15 * NS_PER_MS;
pub const DEFAULT_ALPHA: f64 = 0.125;
pub const DEFAULT_BETA: f64 = 1.25;
pub const DEFAULT_MAX_BURST: Nanos = 150 * NS_PER_MS;
pub const DEFAULT_MARK_ECN_MAX: f64 = 0.1;
const DECAY: f64 = 0.98;
/// Above this probability an update raises it by at most `MAX_STEP`.
const STEP_LIMIT_ABOVE: f64 = 0.1;
const MAX_STEP: f64 = 0.02;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieParams {
    pub target: Nanos,
    pub t_update: Nanos,
    pub alpha: f64,
    pub beta: f64,
    pub max_burst: Nanos,
    /// The largest packet: with at most two of them queued nothing is dropped early.
    pub mtu: u64,
    /// Mark ECN-capable packets instead of dropping them, up to `mark_ecn_max`.
    pub ecn: bool,
    pub mark_ecn_max: f64,
}

impl PieParams {
    pub fn new(mtu: u64, ecn: bool) -> Self {
        PieParams {
            target: DEFAULT_TARGET,
            t_update: DEFAULT_T_UPDATE,
            alpha: DEFAULT_ALPHA,
            beta: DEFAULT_BETA,
            max_burst: DEFAULT_MAX_BURST,
            mtu,
            ecn,
            mark_ecn_max: DEFAULT_MARK_ECN_MAX,
        }
    }
}

/// What to do with an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Enqueue,
    /// Enqueue it marked CE.
    Mark,
    Drop,
}

#[derive(Clone, Debug)]
pub struct Pie {
    p: PieParams,
    drop_prob: f64,
    /// The current delay estimate and the one at the last update.
    qdelay: Nanos,
    qdelay_old: Nanos,
    burst_allowance: Nanos,
    /// The instant of the next periodic update.
    next_update: Nanos,
    rng: SmallRng,
    pub counters: AqmCounters,
}

impl Pie {
    /// A PIE queue that starts quiet at `now`, its early drops drawn from `seed`.
    pub fn new(p: PieParams, now: Nanos, seed: u64) -> Self {
        Pie {
            p,
            drop_prob: 0.0,
            qdelay: 0,
            qdelay_old: 0,
            burst_allowance: p.max_burst,
            next_update: now + p.t_update,
            rng: SmallRng::seed_from_u64(seed),
            counters: AqmCounters::default(),
        }
    }

    pub fn drop_prob(&self) -> f64 {
        self.drop_prob
    }

    pub fn burst_allowance(&self) -> Nanos {
        self.burst_allowance
    }

    /// A packet of `len` bytes arrives at `now` with `backlog_bytes` queued before it.
    pub fn on_enqueue(&mut self, now: Nanos, backlog_bytes: u64, len: u32, ect: bool) -> Verdict {
        self.catch_up(now);
        if !self.drop_early(backlog_bytes) {
            return Verdict::Enqueue;
        }
        if self.p.ecn && ect && self.drop_prob <= self.p.mark_ecn_max {
            self.counters.marked_packets += 1;
            return Verdict::Mark;
        }
        self.counters.dropped_packets += 1;
        self.counters.dropped_bytes += u64::from(len);
        Verdict::Drop
    }

    /// A packet leaves at `now` after `sojourn` in the queue, `backlog_bytes` left behind it.
    pub fn on_dequeue(&mut self, now: Nanos, sojourn: Nanos, backlog_bytes: u64) {
        self.catch_up(now);
        self.qdelay = if backlog_bytes == 0 { 0 } else { sojourn };
    }

    fn drop_early(&mut self, backlog_bytes: u64) -> bool {
        if self.burst_allowance > 0 || self.drop_prob == 0.0 {
            return false;
        }
        if self.qdelay_old < self.p.target / 2 && self.drop_prob < 0.2 {
            return false;
        }
        if backlog_bytes <= 2 * self.p.mtu {
            return false;
        }
        self.rng.gen::<f64>() < self.drop_prob
    }

    /// Runs every periodic update due by `now`. Once the queue has stayed empty long enough
    /// to be quiet with probability 0, later updates change nothing: skipped.
    fn catch_up(&mut self, now: Nanos) {
        while self.next_update <= now {
            let settled = self.qdelay == 0
                && self.qdelay_old == 0
                && self.drop_prob == 0.0
                && self.burst_allowance == self.p.max_burst;
            if settled {
                let skipped = (now - self.next_update) / self.p.t_update + 1;
                self.next_update += skipped * self.p.t_update;
                break;
            }
            self.update();
            self.next_update += self.p.t_update;
        }
    }

    /// One periodic update (RFC 8033 section 4.2, the burst allowance of 4.4).
    fn update(&mut self) {
        let s = |t: Nanos| t as f64 / NS_PER_S as f64;
        let mut p = self.p.alpha * (s(self.qdelay) - s(self.p.target))
            + self.p.beta * (s(self.qdelay) - s(self.qdelay_old));
        p /= match self.drop_prob {
            x if x < 0.000_001 => 2048.0,
            x if x < 0.000_01 => 512.0,
            x if x < 0.000_1 => 128.0,
            x if x < 0.001 => 32.0,
            x if x < 0.01 => 8.0,
            x if x < 0.1 => 2.0,
            _ => 1.0,
        };
        if self.drop_prob >= STEP_LIMIT_ABOVE && p > MAX_STEP {
            p = MAX_STEP;
        }
        self.drop_prob += p;
        if self.qdelay == 0 && self.qdelay_old == 0 {
            self.drop_prob *= DECAY;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        let quiet = self.qdelay < self.p.target / 2 && self.qdelay_old < self.p.target / 2;
        self.qdelay_old = self.qdelay;
        self.burst_allowance = self.burst_allowance.saturating_sub(self.p.t_update);
        if quiet && self.drop_prob == 0.0 && self.burst_allowance == 0 {
            self.burst_allowance = self.p.max_burst;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    const MS: Nanos = NS_PER_MS;
    const MTU: u64 = 1500;

    /// The RFC's update, restated, for the tests to follow by hand.
    fn rfc_update(prob: f64, qdelay_s: f64, old_s: f64) -> f64 {
        let mut p = DEFAULT_ALPHA * (qdelay_s - 0.015) + DEFAULT_BETA * (qdelay_s - old_s);
        let scale = [
            (1e-6, 2048.0),
            (1e-5, 512.0),
            (1e-4, 128.0),
            (1e-3, 32.0),
            (1e-2, 8.0),
            (1e-1, 2.0),
        ]
        .iter()
        .find(|(below, _)| prob < *below)
        .map_or(1.0, |(_, s)| *s);
        p /= scale;
        if prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        let mut out = prob + p;
        if qdelay_s == 0.0 && old_s == 0.0 {
            out *= 0.98;
        }
        out.clamp(0.0, 1.0)
    }

    #[test]
    fn each_update_follows_the_rfcs_pi_law_with_its_auto_tuning() {
        let mut pie = Pie::new(PieParams::new(MTU, false), 0, 1);
        // A delay of 30 ms from the first update on, then 10 ms, then an empty queue.
        let mut expect = 0.0;
        let mut old = 0.0;
        let mut now = 0;
        let mut seen = Vec::new();
        for (k, q) in [30.0, 30.0, 30.0, 40.0, 10.0, 10.0, 0.0, 0.0]
            .iter()
            .enumerate()
        {
            now += DEFAULT_T_UPDATE;
            let backlog = if *q == 0.0 { 0 } else { 10 * MTU };
            pie.on_dequeue(now - 1, (q * MS as f64) as Nanos, backlog); // the delay seen just before the update
            pie.on_dequeue(now, (q * MS as f64) as Nanos, backlog); // runs the update at `now`
            expect = rfc_update(expect, q / 1e3, old);
            old = q / 1e3;
            assert!(
                (pie.drop_prob() - expect).abs() < 1e-12,
                "update {k}: {} against {expect}",
                pie.drop_prob()
            );
            seen.push(pie.drop_prob());
        }
        // Up while the delay is above target, down (to 0: a falling delay pulls hard at so
        // small a probability) once it is below.
        assert!(
            seen[..4].windows(2).all(|w| w[1] > w[0]) && seen[0] > 0.0,
            "{seen:?}"
        );
        assert!(
            seen[4] < seen[3] && *seen.last().unwrap() == 0.0,
            "{seen:?}"
        );
    }

    #[test]
    fn no_early_drop_during_the_burst_allowance() {
        let mut pie = Pie::new(PieParams::new(MTU, false), 0, 1);
        pie.drop_prob = 0.5;
        pie.qdelay_old = 100 * MS;
        pie.qdelay = 100 * MS;
        // The allowance runs out after max_burst / t_update updates (10).
        let mut t = 0;
        loop {
            pie.catch_up(t);
            if pie.burst_allowance() == 0 {
                break;
            }
            assert_eq!(
                pie.on_enqueue(t, 100 * MTU, 1500, false),
                Verdict::Enqueue,
                "at {t}"
            );
            t += MS;
        }
        assert_eq!(t, DEFAULT_MAX_BURST);
        let drops = (0..1000)
            .filter(|_| pie.on_enqueue(t, 100 * MTU, 1500, false) == Verdict::Drop)
            .count();
        assert!(drops > 300, "{drops}");
    }

    #[test]
    fn early_drops_are_skipped_where_the_rfc_skips_them() {
        let mut pie = Pie::new(PieParams::new(MTU, false), 0, 1);
        pie.burst_allowance = 0;
        // probability 0
        assert_eq!(pie.on_enqueue(0, 100 * MTU, 1500, false), Verdict::Enqueue);
        // a small old delay and a probability below 20 %
        pie.drop_prob = 0.19;
        pie.qdelay_old = DEFAULT_TARGET / 2 - 1;
        assert!((0..1000).all(|_| pie.on_enqueue(0, 100 * MTU, 1500, false) == Verdict::Enqueue));
        // two packets queued at most
        pie.drop_prob = 0.9;
        pie.qdelay_old = DEFAULT_TARGET;
        assert!((0..1000).all(|_| pie.on_enqueue(0, 2 * MTU, 1500, false) == Verdict::Enqueue));
        // else with the probability
        let n = 100_000;
        let drops = (0..n)
            .filter(|_| pie.on_enqueue(0, 3 * MTU, 1500, false) == Verdict::Drop)
            .count();
        let share = drops as f64 / n as f64;
        assert!((share - 0.9).abs() < 0.01, "{share}");
        assert_eq!(pie.counters.dropped_packets, drops as u64);
        assert_eq!(pie.counters.dropped_bytes, drops as u64 * 1500);
    }

    #[test]
    fn ecn_capable_packets_are_marked_up_to_ten_percent_then_dropped() {
        let mut pie = Pie::new(PieParams::new(MTU, true), 0, 1);
        pie.burst_allowance = 0;
        pie.qdelay_old = DEFAULT_TARGET;
        pie.drop_prob = 0.1;
        let v: Vec<Verdict> = (0..10_000)
            .map(|_| pie.on_enqueue(0, 100 * MTU, 1500, true))
            .collect();
        assert!(v.contains(&Verdict::Mark) && !v.contains(&Verdict::Drop));
        pie.drop_prob = 0.3;
        let v: Vec<Verdict> = (0..10_000)
            .map(|_| pie.on_enqueue(0, 100 * MTU, 1500, true))
            .collect();
        assert!(v.contains(&Verdict::Drop) && !v.contains(&Verdict::Mark));
        // Not ECN-capable: dropped at 10 % too.
        pie.drop_prob = 0.1;
        let v: Vec<Verdict> = (0..10_000)
            .map(|_| pie.on_enqueue(0, 100 * MTU, 1500, false))
            .collect();
        assert!(v.contains(&Verdict::Drop) && !v.contains(&Verdict::Mark));
    }

    #[test]
    fn an_idle_queue_decays_to_zero_and_becomes_quiet_again_without_stepping_every_update() {
        let mut pie = Pie::new(PieParams::new(MTU, false), 0, 1);
        pie.drop_prob = 0.3;
        pie.burst_allowance = 0;
        pie.on_dequeue(0, 0, 0);
        // An hour later: the probability is 0 and the allowance back.
        pie.on_enqueue(3_600 * NS_PER_S, 0, 1500, false);
        assert_eq!(pie.drop_prob(), 0.0);
        assert_eq!(pie.burst_allowance(), DEFAULT_MAX_BURST);
        assert!(
            pie.next_update > 3_600 * NS_PER_S
                && pie.next_update <= 3_600 * NS_PER_S + DEFAULT_T_UPDATE
        );
    }

    /// A queue served at `rate_pps`, fed at `factor` times that by an unresponsive source
    /// (a packet every `1 / (factor rate)`), with PIE deciding at enqueue. The delay each
    /// packet saw, by its departure time.
    fn saturated(factor: f64, seconds: u64) -> (Vec<(Nanos, Nanos)>, Pie) {
        let rate_pps = 1_000.0; // 1500 B every ms: 12 Mbit/s
        let service = (NS_PER_S as f64 / rate_pps) as Nanos;
        let gap = (NS_PER_S as f64 / (rate_pps * factor)) as Nanos;
        let mut pie = Pie::new(PieParams::new(MTU, false), 0, 7);
        let mut q: VecDeque<Nanos> = VecDeque::new();
        let mut next_arrival = 0;
        let mut busy_until: Nanos = 0;
        let mut delays = Vec::new();
        let end = seconds * NS_PER_S;
        while next_arrival < end {
            // departures up to the next arrival
            while let Some(&arrived) = q.front() {
                let start = busy_until.max(arrived);
                if start > next_arrival {
                    break;
                }
                q.pop_front();
                busy_until = start + service;
                pie.on_dequeue(start, start - arrived, q.len() as u64 * MTU);
                delays.push((start, start - arrived));
            }
            if pie.on_enqueue(next_arrival, q.len() as u64 * MTU, MTU as u32, false)
                == Verdict::Enqueue
            {
                q.push_back(next_arrival);
            }
            next_arrival += gap;
        }
        (delays, pie)
    }

    #[test]
    fn an_overloaded_queue_is_held_near_the_target_delay() {
        // 50 % more than the link serves: without PIE the delay grows without bound (about
        // 0.5 s a second); PIE drops about a third and holds the delay near 15 ms.
        let (delays, pie) = saturated(1.5, 30);
        let late: Vec<f64> = delays
            .iter()
            .filter(|(t, _)| *t > 10 * NS_PER_S)
            .map(|(_, d)| *d as f64 / MS as f64)
            .collect();
        let mean = late.iter().sum::<f64>() / late.len() as f64;
        assert!((10.0..20.0).contains(&mean), "mean delay {mean:.1} ms");
        let share = pie.counters.dropped_packets as f64 / (30.0 * 1_500.0);
        assert!((0.30..0.37).contains(&share), "dropped {share:.3}");
    }

    #[test]
    fn an_underloaded_queue_is_left_alone() {
        let (delays, pie) = saturated(0.9, 30);
        assert_eq!(pie.counters.dropped_packets, 0);
        assert!(delays.iter().all(|(_, d)| *d < MS));
        assert_eq!(pie.drop_prob(), 0.0);
    }
}
