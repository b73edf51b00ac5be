//! What the cell's TTI loop asks of its radio: resource blocks per TTI, SINR -> CQI, and
//! the bits `n` RBs carry at a CQI in TTI (slot) `n`. LTE ([`amc`](super::amc): 1 ms TTIs,
//! 120 data REs per RB, one layer) or NR ([`nr`](super::nr): slots of a numerology, TBS of
//! TS 38.214, layers, TDD).

use super::amc;
use super::nr::NrCarrier;

#[derive(Debug, Clone)]
pub enum Phy {
    Lte { n_rb: u32 },
    Nr(NrCarrier),
}

impl Phy {
    pub fn n_rb(&self) -> u32 {
        match self {
            Phy::Lte { n_rb } => *n_rb,
            Phy::Nr(c) => c.n_prb(),
        }
    }

    /// The RBG size proportional fair allocates by when the spec gives none.
    pub fn rbg(&self) -> u32 {
        match self {
            Phy::Lte { n_rb } => amc::rbg_size(*n_rb),
            Phy::Nr(c) => c.rbg(),
        }
    }

    pub fn cqi(&self, sinr: f64) -> u8 {
        match self {
            Phy::Lte { .. } => amc::cqi_from_sinr(sinr),
            Phy::Nr(c) => c.cqi(sinr),
        }
    }

    /// Whether TTI `n` carries downlink data at all (not an uplink slot).
    pub fn has_downlink(&self, n: u64) -> bool {
        match self {
            Phy::Lte { .. } => true,
            Phy::Nr(c) => c.re_per_prb(n) > 0,
        }
    }

    pub fn tb_bits(&self, cqi: u8, n_rb: u32, n: u64) -> u64 {
        match self {
            Phy::Lte { .. } => amc::tb_bits(cqi, n_rb),
            Phy::Nr(c) => c.tb_bits(cqi, n_rb, n),
        }
    }

    /// The fewest RBs that carry `bits` in TTI `n` (LTE: possibly more than the cell
    /// has; NR: at most all of them); `None` if no RB carries anything.
    pub fn rbs_needed(&self, cqi: u8, bits: u64, n: u64) -> Option<u32> {
        match self {
            Phy::Lte { .. } => amc::rbs_needed(cqi, bits),
            Phy::Nr(c) => c.prbs_needed(cqi, bits, n),
        }
    }

    pub fn bits_per_rb(&self, cqi: u8, n: u64) -> f64 {
        match self {
            Phy::Lte { .. } => amc::bits_per_rb(cqi),
            Phy::Nr(c) => c.bits_per_prb(cqi, n),
        }
    }
}
