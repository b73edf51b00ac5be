//! COUNT / SN / HFN arithmetic (TS 38.323 clause 5.2.2).
//!
//! A COUNT is 32 bits: the HFN in the upper `32 - L` bits, the SN in the lower `L` bits.
//! The receiver only sees the SN and rebuilds the COUNT from its own `RX_DELIV`.
//!
//! Receiver state variables are handled as `u64` here: `RX_NEXT` is "last COUNT + 1" and
//! may legitimately reach 2^32 when the last COUNT of the space arrives. Using a wider type
//! avoids the "COUNT wraps to 0" pitfall without a special case.

use super::PdcpError;

/// SN lengths the emulator accepts: 12 and 18 (NR) and 16 (the reference testbed).
pub const SN_BITS_ALLOWED: [u8; 3] = [12, 16, 18];

/// The SN space for one SN length: modulus, window and COUNT split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnSpace {
    bits: u8,
}

impl SnSpace {
    /// An SN space of `bits` bits, or an error if `bits` is not 12, 16 or 18.
    pub fn new(bits: u8) -> Result<Self, PdcpError> {
        if SN_BITS_ALLOWED.contains(&bits) {
            Ok(SnSpace { bits })
        } else {
            Err(PdcpError::SnBits(bits))
        }
    }

    /// SN length L in bits.
    pub fn bits(self) -> u8 {
        self.bits
    }

    /// 2^L: number of distinct SNs.
    pub fn modulus(self) -> u32 {
        1 << self.bits
    }

    /// W = 2^(L-1): the reordering window size.
    pub fn window(self) -> u32 {
        1 << (self.bits - 1)
    }

    /// Largest HFN: 2^(32-L) - 1.
    pub fn max_hfn(self) -> u32 {
        u32::MAX >> self.bits
    }

    /// SN(x) = x mod 2^L.
    pub fn sn(self, count: u64) -> u32 {
        (count & (self.modulus() as u64 - 1)) as u32
    }

    /// HFN(x) = x >> L (may exceed `max_hfn` for the one-past-the-end value 2^32).
    pub fn hfn(self, count: u64) -> u64 {
        count >> self.bits
    }

    /// COUNT = HFN << L | SN, or `None` if the HFN is outside [0, max_hfn].
    pub fn count(self, hfn: i64, sn: u32) -> Option<u32> {
        debug_assert!(sn < self.modulus());
        if hfn < 0 || hfn > self.max_hfn() as i64 {
            return None;
        }
        Some(((hfn as u32) << self.bits) | sn)
    }

    /// RCVD_COUNT for a received SN, given `RX_DELIV` (step 1 of 5.2.2.1).
    ///
    /// Signed arithmetic on purpose: with unsigned math `SN(RX_DELIV) - W` underflows and
    /// almost every SN would look like it belongs to the next HFN. Returns `None` when the
    /// HFN would be negative or beyond the 32-bit COUNT space (a "bad HFN" discard).
    pub fn rcvd_count(self, rcvd_sn: u32, rx_deliv: u64) -> Option<u32> {
        let w = self.window() as i64;
        let sn = rcvd_sn as i64;
        let deliv_sn = self.sn(rx_deliv) as i64;
        let deliv_hfn = self.hfn(rx_deliv) as i64;
        let hfn = if sn < deliv_sn - w {
            deliv_hfn + 1
        } else if sn >= deliv_sn + w {
            deliv_hfn - 1
        } else {
            deliv_hfn
        };
        self.count(hfn, rcvd_sn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_unsupported_lengths() {
        assert!(SnSpace::new(12).is_ok());
        assert!(SnSpace::new(16).is_ok());
        assert!(SnSpace::new(18).is_ok());
        assert!(SnSpace::new(7).is_err());
        assert!(SnSpace::new(32).is_err());
    }

    #[test]
    fn sizes() {
        let s = SnSpace::new(12).unwrap();
        assert_eq!(
            (s.modulus(), s.window(), s.max_hfn()),
            (4096, 2048, (1 << 20) - 1)
        );
        let s = SnSpace::new(18).unwrap();
        assert_eq!((s.modulus(), s.window()), (262_144, 131_072));
        assert_eq!(s.sn(262_145), 1);
        assert_eq!(s.hfn(262_145), 1);
    }

    #[test]
    fn same_hfn_inside_window() {
        let s = SnSpace::new(12).unwrap();
        assert_eq!(s.rcvd_count(5, 0), Some(5));
        assert_eq!(s.rcvd_count(2047, 0), Some(2047));
        assert_eq!(s.rcvd_count(100, 4096 + 200), Some(4096 + 100));
    }

    #[test]
    fn next_hfn_when_far_below() {
        let s = SnSpace::new(12).unwrap();
        // RX_DELIV = 4094 (SN 4094): SN 0 is just past the wrap.
        assert_eq!(s.rcvd_count(0, 4094), Some(4096));
        assert_eq!(s.rcvd_count(2045, 4094), Some(4096 + 2045));
        // Exactly SN(RX_DELIV) - W stays in the current HFN.
        assert_eq!(s.rcvd_count(2046, 4094), Some(2046));
    }

    #[test]
    fn previous_hfn_when_far_above() {
        let s = SnSpace::new(12).unwrap();
        assert_eq!(s.rcvd_count(4095, 4096 + 1), Some(4095));
        assert_eq!(s.rcvd_count(2048 + 1, 4096 + 1), Some(2049));
        assert_eq!(s.rcvd_count(2048, 4096 + 1), Some(4096 + 2048));
    }

    #[test]
    fn bad_hfn_below_zero() {
        // Scenario 12: SN 2048 with RX_DELIV = 0 would need HFN -1.
        let s = SnSpace::new(12).unwrap();
        assert_eq!(s.rcvd_count(2048, 0), None);
        assert_eq!(s.rcvd_count(2047, 0), Some(2047));
    }

    #[test]
    fn bad_hfn_past_space() {
        let s = SnSpace::new(16).unwrap();
        let last = u32::MAX as u64; // HFN = max, SN = 65535
        assert_eq!(s.rcvd_count(65535, last), Some(u32::MAX));
        // SN 0 far below SN(RX_DELIV) needs HFN max + 1.
        assert_eq!(s.rcvd_count(0, last), None);
        // One past the end (RX_DELIV = 2^32): nothing new is representable.
        assert_eq!(s.rcvd_count(0, last + 1), None);
    }
}
