//! A TDD slot pattern such as `DDDSU`: per slot of the period, downlink (`D`), uplink
//! (`U`) or special (`S`: downlink symbols, a guard, uplink symbols). The pattern repeats
//! from slot 0. Only the downlink is modelled, so a `U` slot carries nothing and an `S`
//! slot carries the PDSCH symbols the carrier gives it (TS 38.213 §11.1 configures the
//! same with `TDD-UL-DL-ConfigCommon`; one pattern, no second periodicity).

use thiserror::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotKind {
    Downlink,
    Special,
    Uplink,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TddPattern {
    slots: Vec<SlotKind>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TddError {
    #[error("a TDD pattern has 1 to 80 slots of D, S or U (got {0} slots)")]
    Length(usize),
    #[error("a TDD pattern has only D, S and U slots (got {0:?})")]
    Letter(char),
    #[error("a TDD pattern needs at least one D or S slot")]
    NoDownlink,
}

impl TddPattern {
    pub fn parse(text: &str) -> Result<Self, TddError> {
        let n = text.chars().count();
        if n == 0 || n > 80 {
            return Err(TddError::Length(n));
        }
        let slots = text
            .chars()
            .map(|c| match c.to_ascii_uppercase() {
                'D' => Ok(SlotKind::Downlink),
                'S' => Ok(SlotKind::Special),
                'U' => Ok(SlotKind::Uplink),
                other => Err(TddError::Letter(other)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if slots.iter().all(|&s| s == SlotKind::Uplink) {
            return Err(TddError::NoDownlink);
        }
        Ok(TddPattern { slots })
    }

    /// The kind of slot `n` (counted from 0).
    pub fn kind(&self, n: u64) -> SlotKind {
        self.slots[(n % self.slots.len() as u64) as usize]
    }

    pub fn period(&self) -> usize {
        self.slots.len()
    }

    /// How many slots of each kind one period has: (D, S, U).
    pub fn counts(&self) -> (usize, usize, usize) {
        let c = |k| self.slots.iter().filter(|&&s| s == k).count();
        (
            c(SlotKind::Downlink),
            c(SlotKind::Special),
            c(SlotKind::Uplink),
        )
    }
}

impl std::fmt::Display for TddPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for s in &self.slots {
            let c = match s {
                SlotKind::Downlink => 'D',
                SlotKind::Special => 'S',
                SlotKind::Uplink => 'U',
            };
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_repeat_and_bad_ones_are_named() {
        let p = TddPattern::parse("DDDSU").unwrap();
        let kinds: Vec<_> = (0..7).map(|n| p.kind(n)).collect();
        use SlotKind::*;
        assert_eq!(
            kinds,
            [Downlink, Downlink, Downlink, Special, Uplink, Downlink, Downlink]
        );
        assert_eq!((p.period(), p.counts()), (5, (3, 1, 1)));
        assert_eq!(p.to_string(), "DDDSU");
        assert_eq!(TddPattern::parse("dddsu").unwrap(), p);
        assert_eq!(TddPattern::parse(""), Err(TddError::Length(0)));
        assert_eq!(TddPattern::parse("DDXU"), Err(TddError::Letter('X')));
        assert_eq!(TddPattern::parse("UU"), Err(TddError::NoDownlink));
        assert_eq!(
            TddPattern::parse(&"D".repeat(81)),
            Err(TddError::Length(81))
        );
    }
}
