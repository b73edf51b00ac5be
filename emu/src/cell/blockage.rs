//! Blockage of a device's line of sight (a body, a vehicle, a building corner), as mmWave
//! bands see it: while blocked, the device's SINR drops by `loss_db`. Either a two-state
//! Markov process (clear and blocked periods exponentially distributed with the given
//! means, the model 3GPP TR 38.901 §7.6.4 calls for dynamic blockers, reduced to its time
//! behaviour) or fixed periods (from a measured trace).
//!
//! The state is a function of time and the seed only: the switching instants are drawn
//! one after another from the seed, however often or rarely the cell asks, so an idle cell
//! that skips slots sees the same blockage as a busy one.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use thiserror::Error;

use crate::base::time::{Nanos, NS_PER_MS};

#[derive(Debug, Clone, PartialEq)]
pub enum BlockageSpec {
    Markov {
        mean_clear_ms: f64,
        mean_blocked_ms: f64,
        loss_db: f64,
    },
    /// Blocked over `[start, start + duration)`, sorted, not overlapping.
    Periods {
        periods: Vec<(Nanos, Nanos)>,
        loss_db: f64,
    },
}

#[derive(Debug, Error, PartialEq)]
pub enum BlockageError {
    #[error("blockage loss {0} dB: must be between 0 and 100")]
    Loss(f64),
    #[error("mean blockage durations {0} and {1} ms: each must be between 1 and 3600000")]
    Mean(f64, f64),
    #[error("blockage period {0} starts before the previous one ends, or lasts 0")]
    Overlap(usize),
    #[error("blockage periods: give 1 to {MAX_PERIODS} (got {0})")]
    Count(usize),
}

/// Most blockage periods a device may list: a period a second for a day (each is kept in
/// memory; an unbounded list made a scenario under the input limit take gigabytes).
pub const MAX_PERIODS: usize = 86_400;

impl BlockageSpec {
    pub fn loss_db(&self) -> f64 {
        match self {
            BlockageSpec::Markov { loss_db, .. } | BlockageSpec::Periods { loss_db, .. } => {
                *loss_db
            }
        }
    }

    pub fn validate(&self) -> Result<(), BlockageError> {
        let loss = self.loss_db();
        if !(0.0..=100.0).contains(&loss) {
            return Err(BlockageError::Loss(loss));
        }
        match self {
            BlockageSpec::Markov {
                mean_clear_ms: c,
                mean_blocked_ms: b,
                ..
            } => {
                let ok = |v: &f64| (1.0..=3_600_000.0).contains(v);
                if !ok(c) || !ok(b) {
                    return Err(BlockageError::Mean(*c, *b));
                }
            }
            BlockageSpec::Periods { periods, .. } => {
                if !(1..=MAX_PERIODS).contains(&periods.len()) {
                    return Err(BlockageError::Count(periods.len()));
                }
                let mut end = 0;
                for (i, &(s, d)) in periods.iter().enumerate() {
                    if d == 0 || (i > 0 && s < end) {
                        return Err(BlockageError::Overlap(i));
                    }
                    end = s + d;
                }
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub struct Blockage {
    spec: BlockageSpec,
    /// Linear SINR factor while blocked.
    factor: f64,
    blocked: bool,
    /// When the state next changes (`Nanos::MAX`: never).
    next_switch: Nanos,
    /// Periods: the next one to enter.
    next_period: usize,
    rng: SmallRng,
}

impl Blockage {
    /// The state at time 0 (the Markov chain drawn from its stationary distribution).
    pub fn new(spec: &BlockageSpec, seed: u64) -> Self {
        let mut b = Blockage {
            factor: 10f64.powf(-spec.loss_db() / 10.0),
            spec: spec.clone(),
            blocked: false,
            next_switch: Nanos::MAX,
            next_period: 0,
            rng: SmallRng::seed_from_u64(seed),
        };
        match &b.spec {
            BlockageSpec::Markov {
                mean_clear_ms,
                mean_blocked_ms,
                ..
            } => {
                let p_blocked = mean_blocked_ms / (mean_clear_ms + mean_blocked_ms);
                b.blocked = b.rng.gen::<f64>() < p_blocked;
                b.next_switch = b.draw();
            }
            BlockageSpec::Periods { periods, .. } => {
                b.next_switch = periods.first().map_or(Nanos::MAX, |p| p.0);
            }
        }
        b
    }

    /// The length of the state just entered (Markov), as an instant from 0 on the first
    /// call and from the previous switch afterwards.
    fn draw(&mut self) -> Nanos {
        let BlockageSpec::Markov {
            mean_clear_ms,
            mean_blocked_ms,
            ..
        } = self.spec
        else {
            return Nanos::MAX;
        };
        let mean = if self.blocked {
            mean_blocked_ms
        } else {
            mean_clear_ms
        };
        let e: f64 = Exp1.sample(&mut self.rng);
        let base = if self.next_switch == Nanos::MAX {
            0
        } else {
            self.next_switch
        };
        base.saturating_add(((e * mean * NS_PER_MS as f64) as Nanos).max(1))
    }

    /// Moves to time `t` (never earlier than before) and says whether it is blocked.
    pub fn blocked_at(&mut self, t: Nanos) -> bool {
        while self.next_switch <= t {
            match &self.spec {
                BlockageSpec::Markov { .. } => {
                    self.blocked = !self.blocked;
                    self.next_switch = self.draw();
                }
                BlockageSpec::Periods { periods, .. } => {
                    if self.blocked {
                        self.blocked = false;
                        self.next_period += 1;
                        self.next_switch =
                            periods.get(self.next_period).map_or(Nanos::MAX, |p| p.0);
                    } else {
                        let (s, d) = periods[self.next_period];
                        self.blocked = true;
                        self.next_switch = s + d;
                    }
                }
            }
        }
        self.blocked
    }

    /// The SINR factor while blocked: `10^(-loss/10)`.
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// The SINR factor at `t`: 1 when clear, [`Blockage::factor`] when blocked.
    pub fn factor_at(&mut self, t: Nanos) -> f64 {
        if self.blocked_at(t) {
            self.factor
        } else {
            1.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = NS_PER_MS;

    #[test]
    fn periods_block_exactly_their_spans() {
        let spec = BlockageSpec::Periods {
            periods: vec![(10 * MS, 5 * MS), (30 * MS, MS)],
            loss_db: 30.0,
        };
        assert_eq!(spec.validate(), Ok(()));
        let mut b = Blockage::new(&spec, 1);
        let at: Vec<bool> = [0, 9, 10, 14, 15, 29, 30, 31, 1000]
            .iter()
            .map(|&ms| b.blocked_at(ms * MS))
            .collect();
        assert_eq!(
            at,
            [false, false, true, true, false, false, true, false, false]
        );
        assert!((Blockage::new(&spec, 1).factor_at(12 * MS) - 1e-3).abs() < 1e-12);
    }

    #[test]
    fn markov_time_shares_match_the_means_and_do_not_depend_on_sampling() {
        let spec = BlockageSpec::Markov {
            mean_clear_ms: 400.0,
            mean_blocked_ms: 100.0,
            loss_db: 25.0,
        };
        // One hour sampled every ms: blocked 100 / 500 of the time.
        let mut b = Blockage::new(&spec, 3);
        let blocked = (0..3_600_000u64)
            .filter(|&ms| b.blocked_at(ms * MS))
            .count();
        let share = blocked as f64 / 3.6e6;
        assert!((share - 0.2).abs() < 0.02, "{share}");
        // Sampled every ms or only every 7 ms, the states agree where both look.
        let mut dense = Blockage::new(&spec, 9);
        let mut sparse = Blockage::new(&spec, 9);
        let d: Vec<bool> = (0..100_000u64)
            .map(|ms| dense.blocked_at(ms * MS))
            .collect();
        for ms in (0..100_000u64).step_by(7) {
            assert_eq!(sparse.blocked_at(ms * MS), d[ms as usize], "at {ms} ms");
        }
    }

    #[test]
    fn bad_specs_are_named() {
        let p = |periods: Vec<(Nanos, Nanos)>| {
            BlockageSpec::Periods {
                periods,
                loss_db: 20.0,
            }
            .validate()
        };
        assert_eq!(
            p(vec![(0, MS), (MS / 2, MS)]),
            Err(BlockageError::Overlap(1))
        );
        assert_eq!(p(vec![(0, 0)]), Err(BlockageError::Overlap(0)));
        let m = BlockageSpec::Markov {
            mean_clear_ms: 0.5,
            mean_blocked_ms: 100.0,
            loss_db: 20.0,
        };
        assert_eq!(m.validate(), Err(BlockageError::Mean(0.5, 100.0)));
        assert_eq!(p(vec![]), Err(BlockageError::Count(0)));
        let many: Vec<(Nanos, Nanos)> =
            (0..=MAX_PERIODS as u64).map(|i| (i * MS, MS / 2)).collect();
        assert_eq!(p(many), Err(BlockageError::Count(MAX_PERIODS + 1)));
        let l = BlockageSpec::Periods {
            periods: vec![],
            loss_db: -1.0,
        };
        assert_eq!(l.validate(), Err(BlockageError::Loss(-1.0)));
    }
}
