//! NR link adaptation tables: the PDSCH MCS tables and the CQI tables of TS 38.214, the
//! SINR -> CQI mapping, and the MCS a CQI selects.
//!
//! - [`McsTable::Qam64`]: MCS index Table 5.1.3.1-1 (MCS 0-28) with CQI Table 5.2.2.1-2.
//! - [`McsTable::Qam256`]: MCS index Table 5.1.3.1-2 (MCS 0-27) with CQI Table 5.2.2.1-3.
//!
//! Code rates are kept × 2048 (Table 5.1.3.1-2 has 682.5/1024 and 916.5/1024), so every
//! transport block size is exact integer arithmetic.
//!
//! SINR -> CQI is the LTE cell's (`amc`): the PiroEW2010 Shannon-gap efficiency
//! `log2(1 + SINR / Γ)`, and the highest CQI whose efficiency `Qm · R` does not exceed it.
//! A CQI is by definition the entry a device could receive at a transport block error rate
//! of at most 0.1 (TS 38.214 §5.2.2.1); the cell's HARQ model applies that rate. The CQI
//! selects the highest MCS whose efficiency does not exceed the CQI's (as 5G-LENA's
//! `NrAmc` does), so MCS and CQI agree on modulation and differ only in code-rate steps.

use crate::cell::amc::cqi_within;

/// Which pair of MCS and CQI tables a cell uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum McsTable {
    /// Up to 64QAM.
    Qam64,
    /// Up to 256QAM.
    #[default]
    Qam256,
}

/// Modulation order `Qm` (bits per symbol) and code rate × 2048.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mcs {
    pub qm: u8,
    pub rate_x2048: u16,
}

impl Mcs {
    /// Bits per resource element: `Qm · R`.
    pub fn efficiency(&self) -> f64 {
        self.qm as f64 * self.rate_x2048 as f64 / 2048.0
    }

    /// `R <= 1/4` (TS 38.214 §5.1.3.2 step 4 then segments into code blocks of 3816).
    pub fn low_rate(&self) -> bool {
        self.rate_x2048 <= 512
    }
}

const fn m(qm: u8, rate_x1024_x2: u16) -> Mcs {
    Mcs {
        qm,
        rate_x2048: rate_x1024_x2,
    }
}

/// TS 38.214 Table 5.1.3.1-1, MCS 0-28 (rates × 2048).
pub const MCS_QAM64: [Mcs; 29] = [
    m(2, 240),
    m(2, 314),
    m(2, 386),
    m(2, 502),
    m(2, 616),
    m(2, 758),
    m(2, 898),
    m(2, 1052),
    m(2, 1204),
    m(2, 1358),
    m(4, 680),
    m(4, 756),
    m(4, 868),
    m(4, 980),
    m(4, 1106),
    m(4, 1232),
    m(4, 1316),
    m(6, 876),
    m(6, 932),
    m(6, 1034),
    m(6, 1134),
    m(6, 1232),
    m(6, 1332),
    m(6, 1438),
    m(6, 1544),
    m(6, 1644),
    m(6, 1746),
    m(6, 1820),
    m(6, 1896),
];

/// TS 38.214 Table 5.1.3.1-2, MCS 0-27 (rates × 2048).
pub const MCS_QAM256: [Mcs; 28] = [
    m(2, 240),
    m(2, 386),
    m(2, 616),
    m(2, 898),
    m(2, 1204),
    m(4, 756),
    m(4, 868),
    m(4, 980),
    m(4, 1106),
    m(4, 1232),
    m(4, 1316),
    m(6, 932),
    m(6, 1034),
    m(6, 1134),
    m(6, 1232),
    m(6, 1332),
    m(6, 1438),
    m(6, 1544),
    m(6, 1644),
    m(6, 1746),
    m(8, 1365),
    m(8, 1422),
    m(8, 1508),
    m(8, 1594),
    m(8, 1682),
    m(8, 1770),
    m(8, 1833),
    m(8, 1896),
];

/// TS 38.214 Table 5.2.2.1-2, CQI 0-15 (0 = out of range; rates × 2048).
pub const CQI_QAM64: [Mcs; 16] = [
    m(0, 0),
    m(2, 156),
    m(2, 240),
    m(2, 386),
    m(2, 616),
    m(2, 898),
    m(2, 1204),
    m(4, 756),
    m(4, 980),
    m(4, 1232),
    m(6, 932),
    m(6, 1134),
    m(6, 1332),
    m(6, 1544),
    m(6, 1746),
    m(6, 1896),
];

/// TS 38.214 Table 5.2.2.1-3, CQI 0-15 (0 = out of range; rates × 2048).
pub const CQI_QAM256: [Mcs; 16] = [
    m(0, 0),
    m(2, 156),
    m(2, 386),
    m(2, 898),
    m(4, 756),
    m(4, 980),
    m(4, 1232),
    m(6, 932),
    m(6, 1134),
    m(6, 1332),
    m(6, 1544),
    m(6, 1746),
    m(8, 1422),
    m(8, 1594),
    m(8, 1770),
    m(8, 1896),
];

impl McsTable {
    pub fn mcs(self) -> &'static [Mcs] {
        match self {
            McsTable::Qam64 => &MCS_QAM64,
            McsTable::Qam256 => &MCS_QAM256,
        }
    }

    pub fn cqi(self) -> &'static [Mcs; 16] {
        match self {
            McsTable::Qam64 => &CQI_QAM64,
            McsTable::Qam256 => &CQI_QAM256,
        }
    }

    /// The CQI for a linear SINR (0 = out of range, also for 0 or NaN).
    pub fn cqi_from_sinr(self, sinr: f64) -> u8 {
        cqi_within(sinr, self.cqi()[1..].iter().map(Mcs::efficiency))
    }

    /// The MCS index a CQI (1-15) selects: the highest whose efficiency does not exceed the
    /// CQI's; `None` for CQI 0.
    pub fn mcs_for_cqi(self, cqi: u8) -> Option<u8> {
        if cqi == 0 {
            return None;
        }
        let want = self.cqi()[cqi as usize].efficiency();
        let n = self
            .mcs()
            .iter()
            .take_while(|m| m.efficiency() <= want + 1e-12)
            .count();
        Some(n.saturating_sub(1) as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efficiencies_match_the_printed_tables() {
        // The spectral efficiency columns as TS 38.214 prints them (4 decimals).
        let mcs64 = [
            0.2344, 0.3066, 0.3770, 0.4902, 0.6016, 0.7402, 0.8770, 1.0273, 1.1758, 1.3262, 1.3281,
            1.4766, 1.6953, 1.9141, 2.1602, 2.4063, 2.5703, 2.5664, 2.7305, 3.0293, 3.3223, 3.6094,
            3.9023, 4.2129, 4.5234, 4.8164, 5.1152, 5.3320, 5.5547,
        ];
        let mcs256 = [
            0.2344, 0.3770, 0.6016, 0.8770, 1.1758, 1.4766, 1.6953, 1.9141, 2.1602, 2.4063, 2.5703,
            2.7305, 3.0293, 3.3223, 3.6094, 3.9023, 4.2129, 4.5234, 4.8164, 5.1152, 5.3320, 5.5547,
            5.8906, 6.2266, 6.5703, 6.9141, 7.1602, 7.4063,
        ];
        let cqi256 = [
            0.0, 0.1523, 0.3770, 0.8770, 1.4766, 1.9141, 2.4063, 2.7305, 3.3223, 3.9023, 4.5234,
            5.1152, 5.5547, 6.2266, 6.9141, 7.4063,
        ];
        for (t, printed) in [
            (&MCS_QAM64[..], &mcs64[..]),
            (&MCS_QAM256[..], &mcs256[..]),
            (&CQI_QAM256[..], &cqi256[..]),
        ] {
            assert_eq!(t.len(), printed.len());
            for (i, (e, p)) in t.iter().zip(printed).enumerate() {
                assert!((e.efficiency() - p).abs() < 0.0001, "{i}: {e:?} vs {p}");
            }
        }
        // The 64QAM CQI table is LTE's (TS 36.213 Table 7.2.3-1).
        for (nr, lte) in CQI_QAM64.iter().zip(crate::cell::amc::CQI_TABLE) {
            assert_eq!(nr.qm, lte.modulation_bits);
            assert_eq!(nr.rate_x2048, lte.code_rate_x1024 * 2);
        }
    }

    #[test]
    fn cqi_selects_the_mcs_of_its_modulation_and_rate() {
        // 256QAM: CQI 15 (256QAM, 948) is MCS 27; CQI 12 (256QAM, 711) is MCS 21; CQI 4
        // (16QAM, 378) is MCS 5; CQI 1 (QPSK, 78) is below MCS 0 and still takes MCS 0.
        let t = McsTable::Qam256;
        let got: Vec<_> = [1, 4, 7, 12, 15]
            .iter()
            .map(|&c| t.mcs_for_cqi(c).unwrap())
            .collect();
        assert_eq!(got, [0, 5, 11, 21, 27]);
        let t = McsTable::Qam64;
        let got: Vec<_> = [1, 6, 9, 10, 15]
            .iter()
            .map(|&c| t.mcs_for_cqi(c).unwrap())
            .collect();
        assert_eq!(got, [0, 8, 15, 18, 28]);
        assert_eq!(t.mcs_for_cqi(0), None);
        for t in [McsTable::Qam64, McsTable::Qam256] {
            for c in 1..=15 {
                let mcs = t.mcs()[t.mcs_for_cqi(c).unwrap() as usize];
                assert_eq!(mcs.qm, t.cqi()[c as usize].qm.max(2), "{t:?} CQI {c}");
            }
        }
    }

    #[test]
    fn cqi_grows_with_sinr_and_256qam_needs_more() {
        use crate::cell::amc::db_to_linear;
        for t in [McsTable::Qam64, McsTable::Qam256] {
            let mut prev = 0;
            for tenth in -200..=400 {
                let c = t.cqi_from_sinr(db_to_linear(tenth as f64 / 10.0));
                assert!(c >= prev);
                prev = c;
            }
            assert_eq!(prev, 15);
            assert_eq!(t.cqi_from_sinr(0.0), 0);
            assert_eq!(t.cqi_from_sinr(f64::NAN), 0);
        }
        // CQI 15 of the 256QAM table needs Γ(2^7.41 - 1) = 29.7 dB; of the 64QAM one 24.1.
        assert_eq!(McsTable::Qam256.cqi_from_sinr(db_to_linear(29.8)), 15);
        assert_eq!(McsTable::Qam256.cqi_from_sinr(db_to_linear(29.6)), 14);
        assert_eq!(McsTable::Qam64.cqi_from_sinr(db_to_linear(24.1)), 15);
    }
}
