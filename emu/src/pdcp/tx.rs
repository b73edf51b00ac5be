//! PDCP transmitter: COUNT/SN numbering and the choice of legs for each PDU.
//!
//! Split follows the reference testbed: a batch of B PDUs is divided by a ratio, and each
//! leg's share is sent as one contiguous run (B=100 at 9:1 is 90 PDUs on the first leg,
//! then 10 on the second, then again). Duplication sends every PDU on all legs.

use super::count::SnSpace;
use super::PdcpError;
use serde::Serialize;

/// Leg indices are bits of a `u32`, so at most 32 legs.
pub const MAX_LEGS: usize = 32;

/// A small set of leg indices (into the global legs array).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LegSet(u32);

impl LegSet {
    pub const EMPTY: LegSet = LegSet(0);

    /// The set holding only `leg`. Panics if `leg >= MAX_LEGS`.
    pub fn single(leg: usize) -> Self {
        LegSet::EMPTY.with(leg)
    }

    /// This set plus `leg`. Panics if `leg >= MAX_LEGS`.
    pub fn with(self, leg: usize) -> Self {
        assert!(leg < MAX_LEGS, "leg index {leg} >= {MAX_LEGS}");
        LegSet(self.0 | 1 << leg)
    }

    pub fn contains(self, leg: usize) -> bool {
        leg < MAX_LEGS && self.0 & (1 << leg) != 0
    }

    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The raw bitmask (bit i = leg i).
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Leg indices in increasing order.
    pub fn iter(self) -> LegIter {
        LegIter(self.0)
    }
}

impl IntoIterator for LegSet {
    type Item = usize;
    type IntoIter = LegIter;
    fn into_iter(self) -> LegIter {
        self.iter()
    }
}

impl FromIterator<usize> for LegSet {
    fn from_iter<I: IntoIterator<Item = usize>>(it: I) -> Self {
        it.into_iter().fold(LegSet::EMPTY, LegSet::with)
    }
}

/// Iterator over a `LegSet`, lowest index first.
#[derive(Clone, Copy, Debug)]
pub struct LegIter(u32);

impl Iterator for LegIter {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1; // clear the lowest set bit
        Some(i)
    }
}

/// Batch split: per-position PDU counts for one batch and the cursor inside it.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitPattern {
    batch: u32,
    ratio: Vec<f64>,
    /// PDUs per position in one batch; sums to `batch`.
    shares: Vec<u32>,
    pos: usize,
    sent_in_pos: u32,
}

impl SplitPattern {
    /// Divides a batch of `batch` PDUs by `ratio` (one weight per leg, any scale).
    ///
    /// Shares use largest-remainder rounding so they sum to exactly `batch`; ties go to
    /// the lower position and a zero weight always gets zero PDUs.
    pub fn new(batch: u32, ratio: &[f64]) -> Result<Self, PdcpError> {
        if batch == 0 {
            return Err(PdcpError::ZeroBatch);
        }
        if ratio.is_empty() || ratio.len() > MAX_LEGS {
            return Err(PdcpError::RatioLength {
                max: MAX_LEGS,
                got: ratio.len(),
            });
        }
        if let Some(w) = ratio.iter().find(|w| !w.is_finite() || **w < 0.0) {
            return Err(PdcpError::BadWeight(*w));
        }
        let total: f64 = ratio.iter().sum();
        if total <= 0.0 {
            return Err(PdcpError::NoPositiveWeight);
        }

        let quotas: Vec<f64> = ratio.iter().map(|w| batch as f64 * w / total).collect();
        let mut shares: Vec<u32> = quotas.iter().map(|q| q.floor() as u32).collect();
        let assigned: u32 = shares.iter().sum();
        let mut left = batch.saturating_sub(assigned);
        // Hand out the rest by largest fractional part, lower position first on ties.
        let mut order: Vec<usize> = (0..ratio.len()).filter(|&i| ratio[i] > 0.0).collect();
        order.sort_by(|&a, &b| {
            let (fa, fb) = (quotas[a] - quotas[a].floor(), quotas[b] - quotas[b].floor());
            fb.total_cmp(&fa).then(a.cmp(&b))
        });
        for &i in order.iter().cycle() {
            if left == 0 {
                break;
            }
            shares[i] += 1;
            left -= 1;
        }
        // Float error could in principle overshoot; trim from the largest share.
        while shares.iter().sum::<u32>() > batch {
            let i = (0..shares.len())
                .max_by_key(|&i| (shares[i], usize::MAX - i))
                .unwrap();
            shares[i] -= 1;
        }
        Ok(SplitPattern {
            batch,
            ratio: ratio.to_vec(),
            shares,
            pos: 0,
            sent_in_pos: 0,
        })
    }

    pub fn batch(&self) -> u32 {
        self.batch
    }

    pub fn ratio(&self) -> &[f64] {
        &self.ratio
    }

    /// PDUs per position in one batch.
    pub fn shares(&self) -> &[u32] {
        &self.shares
    }

    /// Number of positions (legs) in the ratio.
    pub fn positions(&self) -> usize {
        self.shares.len()
    }

    /// Goes back to the start of a batch.
    pub fn restart(&mut self) {
        self.pos = 0;
        self.sent_in_pos = 0;
    }

    /// Position (index into the ratio) of the next PDU.
    pub fn next_position(&mut self) -> usize {
        // Terminates: the shares sum to batch >= 1.
        while self.sent_in_pos >= self.shares[self.pos] {
            self.pos = (self.pos + 1) % self.shares.len();
            self.sent_in_pos = 0;
        }
        self.sent_in_pos += 1;
        self.pos
    }
}

/// How a bearer uses the legs. Leg numbers index the global legs array.
#[derive(Clone, Debug, PartialEq)]
pub enum TxMode {
    /// Single connectivity on one leg.
    Single { leg: usize },
    /// Batch split; `pattern` position i maps to `legs[i]`.
    Split {
        legs: Vec<usize>,
        pattern: SplitPattern,
    },
    /// Every PDU on every leg.
    Duplicate { legs: Vec<usize> },
    /// One leg per PDU, chosen by the caller (a flow-controlled split,
    /// `engine/flow_control.rs`); `legs[0]` is the master's.
    Steered { legs: Vec<usize> },
}

/// Transmit statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TxCounters {
    /// PDUs numbered.
    pub pdus: u64,
    /// Copies sent per global leg index (duplication counts each copy).
    pub per_leg: Vec<u64>,
}

/// A PDCP transmitting entity.
pub struct PdcpTx {
    space: SnSpace,
    mode: TxMode,
    /// Next COUNT; 2^32 once the COUNT space is used up (COUNT never wraps).
    next_count: u64,
    counters: TxCounters,
}

impl PdcpTx {
    pub fn new(mode: TxMode, sn_bits: u8, initial_count: u32) -> Result<Self, PdcpError> {
        let space = SnSpace::new(sn_bits)?;
        let legs: Vec<usize> = match &mode {
            TxMode::Single { leg } => vec![*leg],
            TxMode::Split { legs, pattern } => {
                if legs.len() != pattern.positions() {
                    return Err(PdcpError::LegsAndWeights {
                        legs: legs.len(),
                        weights: pattern.positions(),
                    });
                }
                legs.clone()
            }
            TxMode::Duplicate { legs } | TxMode::Steered { legs } => legs.clone(),
        };
        if legs.is_empty() {
            return Err(PdcpError::NoLeg);
        }
        if let Some(&l) = legs.iter().find(|&&l| l >= MAX_LEGS) {
            return Err(PdcpError::LegIndex {
                leg: l,
                max: MAX_LEGS,
            });
        }
        if legs.iter().copied().collect::<LegSet>().len() != legs.len() {
            return Err(PdcpError::LegTwice(legs));
        }
        let per_leg = vec![0; legs.iter().max().unwrap() + 1];
        Ok(PdcpTx {
            space,
            mode,
            next_count: initial_count as u64,
            counters: TxCounters { pdus: 0, per_leg },
        })
    }

    pub fn mode(&self) -> &TxMode {
        &self.mode
    }

    pub fn counters(&self) -> &TxCounters {
        &self.counters
    }

    /// The COUNT the next PDU will get (2^32 when the space is used up).
    pub fn next_count(&self) -> u64 {
        self.next_count
    }

    /// Changes the split batch and ratio at runtime; the new batch starts from its
    /// beginning. Only valid for a split bearer with one weight per leg.
    pub fn set_split(&mut self, batch: u32, ratio: &[f64]) -> Result<(), PdcpError> {
        let TxMode::Split { legs, pattern } = &mut self.mode else {
            return Err(PdcpError::NotSplit);
        };
        if ratio.len() != legs.len() {
            return Err(PdcpError::LegsAndWeights {
                legs: legs.len(),
                weights: ratio.len(),
            });
        }
        *pattern = SplitPattern::new(batch, ratio)?;
        Ok(())
    }

    /// Numbers the next PDU: (COUNT, SN, legs to send it on), or `None` once all 2^32
    /// COUNTs have been used (a COUNT must never repeat under the same key). A steered
    /// bearer sends it on its master's leg.
    pub fn try_next(&mut self) -> Option<(u32, u32, LegSet)> {
        self.try_next_steered(|_, legs| legs[0])
    }

    /// Like `try_next`; a steered bearer sends the PDU on `steer(count, legs)`, which must
    /// be one of its `legs` (anything else panics).
    pub fn try_next_steered(
        &mut self,
        steer: impl FnOnce(u32, &[usize]) -> usize,
    ) -> Option<(u32, u32, LegSet)> {
        if self.next_count > u32::MAX as u64 {
            return None;
        }
        let count = self.next_count as u32;
        self.next_count += 1;
        let legs = match &mut self.mode {
            TxMode::Single { leg } => LegSet::single(*leg),
            TxMode::Split { legs, pattern } => LegSet::single(legs[pattern.next_position()]),
            TxMode::Duplicate { legs } => legs.iter().copied().collect(),
            TxMode::Steered { legs } => {
                let leg = steer(count, legs);
                assert!(legs.contains(&leg), "steered to leg {leg}, not in {legs:?}");
                LegSet::single(leg)
            }
        };
        self.counters.pdus += 1;
        for l in legs {
            self.counters.per_leg[l] += 1;
        }
        Some((count, self.space.sn(count as u64), legs))
    }

    /// The last PDU went on `to` instead of `from` (its legs were away): its counts move.
    pub fn recount(&mut self, from: LegSet, to: LegSet) {
        for l in from {
            self.counters.per_leg[l] -= 1;
        }
        for l in to {
            self.counters.per_leg[l] += 1;
        }
    }

    /// Like `try_next`; panics once the COUNT space is used up (2^32 PDUs on a bearer,
    /// hours at any rate the emulator runs).
    #[allow(clippy::should_implement_trait)] // not an iterator: it never ends normally
    pub fn next(&mut self) -> (u32, u32, LegSet) {
        self.try_next().expect("PDCP COUNT space exhausted")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(legs: &[usize], batch: u32, ratio: &[f64]) -> PdcpTx {
        let pattern = SplitPattern::new(batch, ratio).unwrap();
        PdcpTx::new(
            TxMode::Split {
                legs: legs.to_vec(),
                pattern,
            },
            16,
            0,
        )
        .unwrap()
    }

    /// Leg of each of the next `n` PDUs (single-leg modes).
    fn legs_of(tx: &mut PdcpTx, n: usize) -> Vec<usize> {
        (0..n)
            .map(|_| {
                let (_, _, l) = tx.next();
                assert_eq!(l.len(), 1);
                l.iter().next().unwrap()
            })
            .collect()
    }

    /// Run-length encoding: [(leg, run length)].
    fn runs(v: &[usize]) -> Vec<(usize, usize)> {
        let mut r: Vec<(usize, usize)> = Vec::new();
        for &x in v {
            match r.last_mut() {
                Some((l, n)) if *l == x => *n += 1,
                _ => r.push((x, 1)),
            }
        }
        r
    }

    #[test]
    fn batch_100_at_9_to_1_is_90_then_10() {
        let mut tx = split(&[0, 1], 100, &[9.0, 1.0]);
        let v = legs_of(&mut tx, 300);
        assert_eq!(
            runs(&v),
            [(0, 90), (1, 10), (0, 90), (1, 10), (0, 90), (1, 10)]
        );
        assert_eq!(tx.counters().per_leg, [270, 30]);
        assert_eq!(tx.counters().pdus, 300);
    }

    #[test]
    fn batch_2_at_1_to_1_alternates() {
        let mut tx = split(&[0, 1], 2, &[1.0, 1.0]);
        assert_eq!(legs_of(&mut tx, 6), [0, 1, 0, 1, 0, 1]);
    }

    #[test]
    fn zero_weight_is_single_connectivity() {
        let mut tx = split(&[0, 1], 100, &[1.0, 0.0]);
        assert!(legs_of(&mut tx, 250).iter().all(|&l| l == 0));
        let mut tx = split(&[0, 1], 100, &[0.0, 1.0]);
        assert!(legs_of(&mut tx, 250).iter().all(|&l| l == 1));
        assert_eq!(tx.counters().per_leg, [0, 250]);
    }

    #[test]
    fn three_legs_use_global_indices() {
        let mut tx = split(&[2, 0, 5], 10, &[5.0, 3.0, 2.0]);
        let v = legs_of(&mut tx, 20);
        assert_eq!(runs(&v), [(2, 5), (0, 3), (5, 2), (2, 5), (0, 3), (5, 2)]);
        assert_eq!(tx.counters().per_leg, [6, 0, 10, 0, 0, 4]);
    }

    /// The table of tests/test_batch.py: dclab/batch.py says what a batch sends in run
    /// titles and warnings, so it must divide as this does.
    #[test]
    fn shares_match_dclab_batch_py() {
        let table: [(u32, &[f64], &[u32]); 9] = [
            (10, &[5.0, 95.0], &[1, 9]),
            (10, &[2.0, 98.0], &[0, 10]),
            (20, &[5.0, 95.0], &[1, 19]),
            (20, &[45.0, 55.0], &[9, 11]),
            (100, &[77.78, 22.22], &[78, 22]),
            (100, &[9.0, 1.0], &[90, 10]),
            (2, &[1.0, 1.0], &[1, 1]),
            (7, &[1.0, 1.0, 1.0], &[3, 2, 2]),
            (10, &[0.0, 3.0, 1.0], &[0, 8, 2]),
        ];
        for (batch, ratio, sent) in table {
            assert_eq!(
                SplitPattern::new(batch, ratio).unwrap().shares(),
                sent,
                "{batch} {ratio:?}"
            );
        }
    }

    #[test]
    fn largest_remainder_sums_to_batch() {
        let p = SplitPattern::new(10, &[1.0, 1.0, 1.0]).unwrap();
        assert_eq!(p.shares(), [4, 3, 3]); // tie goes to the first leg
        let p = SplitPattern::new(100, &[2.0, 1.0]).unwrap();
        assert_eq!(p.shares(), [67, 33]);
        let p = SplitPattern::new(7, &[0.5, 0.3, 0.2]).unwrap();
        assert_eq!(p.shares(), [4, 2, 1]); // quotas 3.5, 2.1, 1.4
        let p = SplitPattern::new(1, &[1.0, 1.0]).unwrap();
        assert_eq!(p.shares(), [1, 0]);
        for batch in [1, 2, 3, 7, 10, 50, 99, 100, 150, 500] {
            for ratio in [
                &[1.0, 1.0][..],
                &[9.0, 1.0],
                &[0.1, 0.2, 0.7],
                &[1.0, 0.0, 3.0],
                &[1e-9, 1.0],
            ] {
                let p = SplitPattern::new(batch, ratio).unwrap();
                assert_eq!(p.shares().iter().sum::<u32>(), batch, "{batch} {ratio:?}");
                for (s, w) in p.shares().iter().zip(ratio) {
                    if *w == 0.0 {
                        assert_eq!(*s, 0);
                    }
                }
            }
        }
        // Split sweep of the study: share on leg 1 from 0 to 100 % in 10 % steps.
        for pct in (0..=100).step_by(10) {
            let p = SplitPattern::new(100, &[pct as f64, (100 - pct) as f64]).unwrap();
            assert_eq!(p.shares(), [pct, 100 - pct]);
        }
    }

    #[test]
    fn bad_patterns_are_rejected() {
        assert!(SplitPattern::new(0, &[1.0, 1.0]).is_err());
        assert!(SplitPattern::new(10, &[]).is_err());
        assert!(SplitPattern::new(10, &[0.0, 0.0]).is_err());
        assert!(SplitPattern::new(10, &[-1.0, 2.0]).is_err());
        assert!(SplitPattern::new(10, &[f64::NAN, 2.0]).is_err());
        let p = SplitPattern::new(10, &[1.0, 1.0]).unwrap();
        let three = TxMode::Split {
            legs: vec![0, 1, 2],
            pattern: p.clone(),
        };
        assert!(PdcpTx::new(three, 16, 0).is_err());
        let twice = TxMode::Split {
            legs: vec![1, 1],
            pattern: p,
        };
        assert!(PdcpTx::new(twice, 16, 0).is_err());
        assert!(PdcpTx::new(TxMode::Duplicate { legs: vec![] }, 16, 0).is_err());
        assert!(PdcpTx::new(TxMode::Single { leg: 32 }, 16, 0).is_err());
        assert!(PdcpTx::new(TxMode::Single { leg: 0 }, 14, 0).is_err());
    }

    #[test]
    fn set_split_restarts_the_batch() {
        let mut tx = split(&[0, 1], 10, &[1.0, 1.0]);
        assert_eq!(legs_of(&mut tx, 3), [0, 0, 0]);
        tx.set_split(4, &[1.0, 3.0]).unwrap();
        assert_eq!(legs_of(&mut tx, 8), [0, 1, 1, 1, 0, 1, 1, 1]);
        assert!(tx.set_split(4, &[1.0]).is_err());
        let mut single = PdcpTx::new(TxMode::Single { leg: 1 }, 12, 0).unwrap();
        assert!(single.set_split(4, &[1.0, 1.0]).is_err());
        assert_eq!(legs_of(&mut single, 2), [1, 1]);
    }

    #[test]
    fn steering_sends_where_the_caller_says() {
        let mut tx = PdcpTx::new(TxMode::Steered { legs: vec![2, 0] }, 12, 0).unwrap();
        let (c, _, l) = tx.try_next_steered(|c, legs| legs[c as usize % 2]).unwrap();
        assert_eq!((c, l.iter().collect::<Vec<_>>()), (0, vec![2]));
        let (c, _, l) = tx.try_next_steered(|c, legs| legs[c as usize % 2]).unwrap();
        assert_eq!((c, l.iter().collect::<Vec<_>>()), (1, vec![0]));
        // Without a steer: the master's leg.
        assert_eq!(tx.next().2.iter().collect::<Vec<_>>(), [2]);
        assert_eq!(tx.counters().per_leg, [1, 0, 2]);
    }

    #[test]
    fn duplication_sends_on_all_legs() {
        let mut tx = PdcpTx::new(TxMode::Duplicate { legs: vec![0, 1] }, 12, 0).unwrap();
        for i in 0..5 {
            let (count, sn, legs) = tx.next();
            assert_eq!((count, sn), (i, i));
            assert_eq!(legs.iter().collect::<Vec<_>>(), [0, 1]);
        }
        assert_eq!(tx.counters().per_leg, [5, 5]);
        assert_eq!(tx.counters().pdus, 5);
    }

    #[test]
    fn numbering_wraps_sn_but_not_count() {
        let mut tx = PdcpTx::new(TxMode::Single { leg: 0 }, 12, 4094).unwrap();
        let got: Vec<_> = (0..4).map(|_| tx.next()).map(|(c, s, _)| (c, s)).collect();
        assert_eq!(got, [(4094, 4094), (4095, 4095), (4096, 0), (4097, 1)]);

        let mut tx = PdcpTx::new(TxMode::Single { leg: 0 }, 18, u32::MAX - 1).unwrap();
        assert_eq!(tx.try_next().map(|p| p.0), Some(u32::MAX - 1));
        assert_eq!(
            tx.try_next().map(|p| (p.0, p.1)),
            Some((u32::MAX, (1 << 18) - 1))
        );
        assert_eq!(tx.try_next(), None);
        assert_eq!(tx.try_next(), None);
        assert_eq!(tx.counters().pdus, 2);
    }

    #[test]
    fn legset_basics() {
        let s: LegSet = [3, 0, 3].into_iter().collect();
        assert_eq!(s.len(), 2);
        assert!(s.contains(0) && s.contains(3) && !s.contains(1) && !s.contains(40));
        assert_eq!(s.iter().collect::<Vec<_>>(), [0, 3]);
        assert_eq!(s.bits(), 0b1001);
        assert!(LegSet::EMPTY.is_empty());
        assert_eq!(LegSet::single(31).iter().collect::<Vec<_>>(), [31]);
    }

    use proptest::prelude::*;

    proptest! {
        /// Any batch and ratio: shares sum to the batch, zero weights get nothing, and
        /// each batch sends every leg's share as one run, in leg order.
        #[test]
        fn split_batches_are_contiguous_runs(
            batch in 1u32..300,
            ratio in proptest::collection::vec(prop_oneof![Just(0.0), 0.0f64..10.0], 1..5),
        ) {
            prop_assume!(ratio.iter().sum::<f64>() > 0.0);
            let p = SplitPattern::new(batch, &ratio).unwrap();
            let shares = p.shares().to_vec();
            assert_eq!(shares.iter().sum::<u32>(), batch);
            let legs: Vec<usize> = (0..ratio.len()).collect();
            let mut tx = split(&legs, batch, &ratio);
            let v = legs_of(&mut tx, 2 * batch as usize);
            let want: Vec<(usize, usize)> =
                shares.iter().enumerate().filter(|(_, &n)| n > 0).map(|(i, &n)| (i, n as usize)).collect();
            let mut want2 = want.clone();
            want2.extend(want.iter().copied());
            // Merge adjacent runs of the same leg (single-leg patterns form one long run).
            let expanded: Vec<usize> =
                want2.iter().flat_map(|&(l, n)| std::iter::repeat_n(l, n)).collect();
            assert_eq!(runs(&v), runs(&expanded));
            for (l, &n) in shares.iter().enumerate() {
                assert_eq!(tx.counters().per_leg[l], 2 * n as u64);
                if ratio[l] == 0.0 { assert_eq!(n, 0); }
            }
        }
    }
}
