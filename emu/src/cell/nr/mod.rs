//! The physical layer of an NR (5G) carrier's downlink, as the cell's scheduler sees it:
//! slots of a numerology, PRBs of a bandwidth, TS 38.214 MCS and CQI tables, transport
//! block sizes per slot for a number of MIMO layers, and an optional TDD pattern.
//!
//! - [`numerology`]: slot length, PRBs per bandwidth (TS 38.101-1/-2), RBG size.
//! - [`mcs`]: MCS and CQI tables, SINR -> CQI -> MCS.
//! - [`tbs`]: the transport block size of TS 38.214 §5.1.3.2.
//! - [`tdd`]: the slot pattern.
//!
//! [`NrCarrier`] puts them together for the cell (`super::phy::Phy`). What is 3GPP and what
//! is simplified is said in `docs/endc.md`.

pub mod mcs;
pub mod numerology;
pub mod tbs;
pub mod tdd;

use anyhow::{bail, ensure};

use crate::base::time::Nanos;
pub use mcs::{Mcs, McsTable};
pub use tdd::{SlotKind, TddPattern};

/// An NR carrier's downlink.
#[derive(Debug, Clone, PartialEq)]
pub struct NrSpec {
    /// µ: 0 (15 kHz, 1 ms slots) to 3 (120 kHz, 0.125 ms).
    pub numerology: u8,
    pub bandwidth_mhz: f64,
    pub mcs_table: McsTable,
    /// MIMO layers per device, 1 to 4 (a fixed rank: no rank adaptation).
    pub layers: u8,
    /// PDSCH symbols of a downlink slot (of 14; the rest is the PDCCH's CORESET).
    pub pdsch_symbols: u32,
    /// PDSCH symbols of a special slot of the TDD pattern.
    pub special_pdsch_symbols: u32,
    /// DMRS resource elements per PRB (12 = one symbol of type 1, no data beside it).
    pub dmrs_re: u32,
    /// `xOverhead`: 0, 6, 12 or 18 REs per PRB (CSI-RS and the like).
    pub overhead_re: u32,
    /// `None` = FDD: every slot is a downlink slot.
    pub tdd: Option<TddPattern>,
}

impl NrSpec {
    /// A carrier with the defaults: 256QAM table, 12 PDSCH symbols, 8 in a special slot,
    /// one DMRS symbol (12 REs), no xOverhead, FDD.
    pub fn new(numerology: u8, bandwidth_mhz: f64, layers: u8) -> Self {
        NrSpec {
            numerology,
            bandwidth_mhz,
            mcs_table: McsTable::Qam256,
            layers,
            pdsch_symbols: 12,
            special_pdsch_symbols: 8,
            dmrs_re: 12,
            overhead_re: 0,
            tdd: None,
        }
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        ensure!(
            self.numerology <= numerology::MAX_NUMEROLOGY,
            "numerology {} (0 to 3)",
            self.numerology
        );
        if numerology::prbs_for_bandwidth(self.numerology, self.bandwidth_mhz).is_none() {
            bail!(
                "bandwidth {} MHz: numerology {} has {:?} MHz",
                self.bandwidth_mhz,
                self.numerology,
                numerology::bandwidths(self.numerology)
            );
        }
        ensure!(
            (1..=4).contains(&self.layers),
            "{} layers (1 to 4)",
            self.layers
        );
        ensure!(
            (1..=14).contains(&self.pdsch_symbols) && self.special_pdsch_symbols <= 14,
            "PDSCH symbols {} and {} in a special slot (1 to 14, 0 to 14)",
            self.pdsch_symbols,
            self.special_pdsch_symbols
        );
        ensure!(
            [0, 6, 12, 18].contains(&self.overhead_re),
            "xOverhead {} (0, 6, 12 or 18)",
            self.overhead_re
        );
        ensure!(
            tbs::re_per_prb(self.pdsch_symbols, self.dmrs_re, self.overhead_re) > 0,
            "{} DMRS REs leave nothing of {} PDSCH symbols",
            self.dmrs_re,
            self.pdsch_symbols
        );
        if let Some(t) = &self.tdd {
            let (d, s, _) = t.counts();
            let special =
                tbs::re_per_prb(self.special_pdsch_symbols, self.dmrs_re, self.overhead_re) > 0;
            ensure!(
                d > 0 || (s > 0 && special),
                "TDD pattern with no downlink slot, and its special slots carry no data \
                 ({} PDSCH symbols): the carrier would never send",
                self.special_pdsch_symbols
            );
        }
        Ok(())
    }
}

/// A validated carrier, with what every slot needs precomputed.
#[derive(Debug, Clone)]
pub struct NrCarrier {
    spec: NrSpec,
    n_prb: u32,
    /// REs per PRB in a downlink slot and in a special one.
    re_downlink: u32,
    re_special: u32,
}

impl NrCarrier {
    pub fn new(spec: &NrSpec) -> anyhow::Result<Self> {
        spec.validate()?;
        Ok(NrCarrier {
            n_prb: numerology::prbs_for_bandwidth(spec.numerology, spec.bandwidth_mhz)
                .expect("validated"),
            re_downlink: tbs::re_per_prb(spec.pdsch_symbols, spec.dmrs_re, spec.overhead_re),
            re_special: tbs::re_per_prb(spec.special_pdsch_symbols, spec.dmrs_re, spec.overhead_re),
            spec: spec.clone(),
        })
    }

    pub fn spec(&self) -> &NrSpec {
        &self.spec
    }

    pub fn n_prb(&self) -> u32 {
        self.n_prb
    }

    pub fn slot(&self) -> Nanos {
        numerology::slot_duration(self.spec.numerology)
    }

    pub fn rbg(&self) -> u32 {
        numerology::rbg_size(self.n_prb)
    }

    /// REs per PRB the PDSCH has in slot `n` (0 in an uplink slot).
    pub fn re_per_prb(&self, n: u64) -> u32 {
        match self
            .spec
            .tdd
            .as_ref()
            .map_or(SlotKind::Downlink, |t| t.kind(n))
        {
            SlotKind::Downlink => self.re_downlink,
            SlotKind::Special => self.re_special,
            SlotKind::Uplink => 0,
        }
    }

    pub fn cqi(&self, sinr: f64) -> u8 {
        self.spec.mcs_table.cqi_from_sinr(sinr)
    }

    fn mcs(&self, cqi: u8) -> Option<Mcs> {
        let i = self.spec.mcs_table.mcs_for_cqi(cqi)?;
        Some(self.spec.mcs_table.mcs()[i as usize])
    }

    /// The TBS of `n_prb` PRBs at `cqi` in slot `n`.
    pub fn tb_bits(&self, cqi: u8, n_prb: u32, n: u64) -> u64 {
        self.mcs(cqi).map_or(0, |m| {
            tbs::tbs_bits(m, self.re_per_prb(n), n_prb, self.spec.layers)
        })
    }

    /// The fewest PRBs whose TBS at `cqi` in slot `n` covers `bits` (all of them if none
    /// does); `None` where no PRB carries anything (CQI 0, an uplink slot).
    pub fn prbs_needed(&self, cqi: u8, bits: u64, n: u64) -> Option<u32> {
        let m = self.mcs(cqi)?;
        let re = self.re_per_prb(n);
        if re == 0 {
            return None;
        }
        if bits == 0 {
            return Some(0);
        }
        let l = self.spec.layers;
        // The TBS grows with the PRBs: the first count that covers `bits`.
        let (mut lo, mut hi) = (1, self.n_prb);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if tbs::tbs_bits(m, re, mid, l) >= bits {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(lo)
    }

    /// Bits per PRB at `cqi` in slot `n` with every PRB allocated (the PF metric's rate).
    pub fn bits_per_prb(&self, cqi: u8, n: u64) -> f64 {
        self.tb_bits(cqi, self.n_prb, n) as f64 / self.n_prb as f64
    }

    /// Mean bits per slot over a TDD period with every PRB at `cqi`.
    pub fn mean_bits_per_slot(&self, cqi: u8) -> f64 {
        let period = self.spec.tdd.as_ref().map_or(1, |t| t.period()) as u64;
        (0..period)
            .map(|n| self.tb_bits(cqi, self.n_prb, n) as f64)
            .sum::<f64>()
            / period as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Peak rates worked by hand from the TBS of `tbs::tests::hand_computed_sizes`.
    #[test]
    fn peak_rates_of_a_100_mhz_carrier() {
        let c = NrCarrier::new(&NrSpec::new(1, 100.0, 4)).unwrap();
        assert_eq!((c.n_prb(), c.slot(), c.rbg()), (273, 500_000, 16));
        // CQI 15 -> MCS 27: 1 081 512 bits per 0.5 ms slot = 2163.0 Mbit/s.
        assert_eq!(c.tb_bits(15, 273, 0), 1_081_512);
        assert!((c.mean_bits_per_slot(15) * 2000.0 / 1e6 - 2163.024).abs() < 1e-6);
        // DDDSU: three slots of 1 081 512, a special one of 8 symbols (84 REs per PRB:
        // N_info = 22932·8·4·948/1024 = 679 360.5, n = 14, N'_info = 16384·round(41.46)
        // = 671 744, C = 80, 640·⌈1049.63⌉ - 24 = 671 976), one uplink: 3 916 512 bits
        // per 2.5 ms = 1566.6 Mbit/s.
        let mut s = NrSpec::new(1, 100.0, 4);
        s.tdd = Some(TddPattern::parse("DDDSU").unwrap());
        let c = NrCarrier::new(&s).unwrap();
        assert_eq!(c.tb_bits(15, 273, 3), 671_976);
        assert_eq!(c.tb_bits(15, 273, 4), 0);
        assert_eq!(c.prbs_needed(15, 100, 4), None);
        assert!((c.mean_bits_per_slot(15) * 2000.0 / 1e6 - 1566.6048).abs() < 1e-6);
    }

    #[test]
    fn prbs_needed_is_the_fewest_that_cover() {
        let c = NrCarrier::new(&NrSpec::new(0, 20.0, 2)).unwrap();
        for cqi in 1..=15 {
            for bits in [1, 24, 25, 1000, 12_000, 100_000, 10_000_000] {
                let n = c.prbs_needed(cqi, bits, 0).unwrap();
                assert!(n >= 1 && n <= c.n_prb());
                let covers = c.tb_bits(cqi, n, 0) >= bits;
                assert!(covers || n == c.n_prb(), "CQI {cqi}, {bits} bits: {n}");
                assert!(n == 1 || c.tb_bits(cqi, n - 1, 0) < bits);
            }
            assert_eq!(c.prbs_needed(cqi, 0, 0), Some(0));
        }
        assert_eq!(c.prbs_needed(0, 10, 0), None);
    }

    #[test]
    fn invalid_carriers_are_refused() {
        let bad = |f: fn(&mut NrSpec)| {
            let mut s = NrSpec::new(1, 100.0, 2);
            f(&mut s);
            NrCarrier::new(&s).unwrap_err().to_string()
        };
        assert!(bad(|s| s.numerology = 4).contains("numerology 4"));
        assert!(bad(|s| s.bandwidth_mhz = 120.0).contains("120 MHz"));
        assert!(bad(|s| s.numerology = 0).contains("[5, 10, 15, 20, 25, 30, 40, 50]"));
        assert!(bad(|s| s.layers = 5).contains("5 layers"));
        assert!(bad(|s| s.layers = 0).contains("0 layers"));
        assert!(bad(|s| s.overhead_re = 5).contains("xOverhead 5"));
        assert!(bad(|s| s.pdsch_symbols = 0).contains("PDSCH symbols"));
        assert!(bad(|s| {
            s.pdsch_symbols = 1;
            s.dmrs_re = 12
        })
        .contains("leave nothing"));
    }
}
