//! NR numerology: subcarrier spacing `15·2^µ` kHz, slot `1 ms / 2^µ` (14 OFDM symbols,
//! normal cyclic prefix), and the resource blocks a channel bandwidth holds.
//!
//! PRBs per bandwidth are the maximum transmission bandwidth configurations `N_RB` of
//! TS 38.101-1 Table 5.3.2-1 (FR1: µ 0, 1, 2) and TS 38.101-2 Table 5.3.2-1 (FR2: µ 3).
//! µ 2 (60 kHz) exists in both ranges with different `N_RB`; it is taken as FR1 here.
//! The RBG size of resource allocation type 0 is TS 38.214 Table 5.1.2.2.1-1,
//! configuration 1.

use crate::base::time::{Nanos, NS_PER_MS};

/// Highest numerology modelled (120 kHz, FR2).
pub const MAX_NUMEROLOGY: u8 = 3;

/// Slot length for numerology `mu`: 1 ms, 0.5, 0.25, 0.125 ms.
pub fn slot_duration(mu: u8) -> Nanos {
    NS_PER_MS >> mu
}

/// Subcarrier spacing in kHz.
pub fn scs_khz(mu: u8) -> u32 {
    15 << mu
}

/// (bandwidth MHz, N_RB at 15, 30, 60 kHz), FR1; 0 = not defined.
const FR1: [(u32, [u32; 3]); 13] = [
    (5, [25, 11, 0]),
    (10, [52, 24, 11]),
    (15, [79, 38, 18]),
    (20, [106, 51, 24]),
    (25, [133, 65, 31]),
    (30, [160, 78, 38]),
    (40, [216, 106, 51]),
    (50, [270, 133, 65]),
    (60, [0, 162, 79]),
    (70, [0, 189, 93]),
    (80, [0, 217, 107]),
    (90, [0, 245, 121]),
    (100, [0, 273, 135]),
];

/// (bandwidth MHz, N_RB at 120 kHz), FR2.
const FR2_120: [(u32, u32); 4] = [(50, 32), (100, 66), (200, 132), (400, 264)];

/// `N_RB` for a channel bandwidth (MHz) at numerology `mu`, or `None` where the tables
/// define none.
pub fn prbs_for_bandwidth(mu: u8, mhz: f64) -> Option<u32> {
    let whole = (mhz.fract() == 0.0 && mhz > 0.0 && mhz <= 400.0).then_some(mhz as u32)?;
    let n = match mu {
        0..=2 => FR1.iter().find(|(b, _)| *b == whole)?.1[mu as usize],
        3 => FR2_120.iter().find(|(b, _)| *b == whole)?.1,
        _ => 0,
    };
    (n > 0).then_some(n)
}

/// The bandwidths (MHz) numerology `mu` has, for error messages.
pub fn bandwidths(mu: u8) -> Vec<u32> {
    match mu {
        0..=2 => FR1
            .iter()
            .filter(|(_, n)| n[mu as usize] > 0)
            .map(|(b, _)| *b)
            .collect(),
        3 => FR2_120.iter().map(|(b, _)| *b).collect(),
        _ => Vec::new(),
    }
}

/// RBG size `P` for a bandwidth part of `n_prb` PRBs (configuration 1).
pub fn rbg_size(n_prb: u32) -> u32 {
    match n_prb {
        0..=36 => 2,
        37..=72 => 4,
        73..=144 => 8,
        _ => 16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_prbs_and_rbgs() {
        let slots: Vec<_> = (0..=3).map(slot_duration).collect();
        assert_eq!(slots, [1_000_000, 500_000, 250_000, 125_000]);
        assert_eq!((scs_khz(0), scs_khz(3)), (15, 120));
        assert_eq!(prbs_for_bandwidth(1, 100.0), Some(273));
        assert_eq!(prbs_for_bandwidth(0, 20.0), Some(106));
        assert_eq!(prbs_for_bandwidth(0, 50.0), Some(270));
        assert_eq!(prbs_for_bandwidth(2, 100.0), Some(135));
        assert_eq!(prbs_for_bandwidth(3, 100.0), Some(66));
        assert_eq!(prbs_for_bandwidth(3, 400.0), Some(264));
        assert_eq!(prbs_for_bandwidth(0, 100.0), None, "15 kHz stops at 50 MHz");
        assert_eq!(prbs_for_bandwidth(2, 5.0), None);
        assert_eq!(prbs_for_bandwidth(1, 12.5), None);
        assert_eq!(prbs_for_bandwidth(3, 20.0), None);
        assert_eq!(prbs_for_bandwidth(4, 100.0), None);
        assert_eq!(bandwidths(3), [50, 100, 200, 400]);
        assert_eq!(bandwidths(0).last(), Some(&50));
        let rbg: Vec<_> = [24, 36, 37, 106, 144, 273].map(rbg_size).to_vec();
        assert_eq!(rbg, [2, 2, 4, 8, 8, 16]);
    }
}
