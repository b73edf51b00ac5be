//! Transport block size of a PDSCH allocation, TS 38.214 §5.1.3.2, in exact integer
//! arithmetic.
//!
//! 1. `N'_RE = 12 · N_symb - N_DMRS - N_oh` per PRB; `N_RE = min(156, N'_RE) · n_PRB`.
//! 2. `N_info = N_RE · R · Qm · v` (`v` layers).
//! 3. `N_info <= 3824`: `n = max(3, ⌊log2 N_info⌋ - 6)`,
//!    `N'_info = max(24, 2^n ⌊N_info / 2^n⌋)`, and the TBS is the smallest entry of
//!    Table 5.1.3.2-1 not below `N'_info`.
//! 4. Otherwise `n = ⌊log2(N_info - 24)⌋ - 5`,
//!    `N'_info = max(3840, 2^n · round((N_info - 24) / 2^n))`; with `C` code blocks,
//!    `TBS = 8C ⌈(N'_info + 24) / 8C⌉ - 24`, where `C = ⌈(N'_info + 24) / 3816⌉` if
//!    `R <= 1/4`, `C = ⌈(N'_info + 24) / 8424⌉` if `N'_info > 8424`, else `C = 1`.
//!
//! `R` is kept × 2048 ([`Mcs`]), so `N_info = num / 2048` with `num` an integer, and every
//! floor, log and round above is taken on `num` exactly (`round` halves up, as `N_info - 24
//! >= 3800` is positive).

use super::mcs::Mcs;

/// TS 38.214 Table 5.1.3.2-1: the TBS for `N_info <= 3824`.
pub const SMALL_TBS: [u32; 93] = [
    24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176, 184,
    192, 208, 224, 240, 256, 272, 288, 304, 320, 336, 352, 368, 384, 408, 432, 456, 480, 504, 528,
    552, 576, 608, 640, 672, 704, 736, 768, 808, 848, 888, 928, 984, 1032, 1064, 1128, 1160, 1192,
    1224, 1256, 1288, 1320, 1352, 1416, 1480, 1544, 1608, 1672, 1736, 1800, 1864, 1928, 2024, 2088,
    2152, 2216, 2280, 2408, 2472, 2536, 2600, 2664, 2728, 2792, 2856, 2976, 3104, 3240, 3368, 3496,
    3624, 3752, 3824,
];

/// Resource elements per PRB available to the PDSCH: `min(156, 12·symbols - dmrs - oh)`
/// (0 if the overheads take everything).
pub fn re_per_prb(pdsch_symbols: u32, dmrs_re: u32, overhead_re: u32) -> u32 {
    (12 * pdsch_symbols)
        .saturating_sub(dmrs_re + overhead_re)
        .min(156)
}

fn floor_log2(x: u64) -> u32 {
    63 - x.leading_zeros()
}

/// The TBS in bits of `n_prb` PRBs of `re_per_prb` REs each at `mcs` on `layers` layers
/// (0 when nothing is allocated).
pub fn tbs_bits(mcs: Mcs, re_per_prb: u32, n_prb: u32, layers: u8) -> u64 {
    let n_re = re_per_prb as u64 * n_prb as u64;
    // 2048 · N_info.
    let num = n_re * mcs.qm as u64 * layers as u64 * mcs.rate_x2048 as u64;
    if num == 0 {
        return 0;
    }
    if num <= 3824 * 2048 {
        // ⌊log2 N_info⌋ = ⌊log2 num⌋ - 11; N_info may be below 1 (then n = 3 anyway).
        let n = (floor_log2(num) as i64 - 11 - 6).max(3) as u32;
        let n_info = ((num >> (n + 11)) << n).max(24);
        let i = SMALL_TBS.partition_point(|&t| (t as u64) < n_info);
        return SMALL_TBS[i.min(SMALL_TBS.len() - 1)] as u64;
    }
    let rest = num - 24 * 2048; // 2048 · (N_info - 24)
    let n = floor_log2(rest) - 11 - 5;
    let shift = n + 11;
    let rounded = (rest + (1 << (shift - 1))) >> shift;
    let n_info = (rounded << n).max(3840);
    let c = if mcs.low_rate() {
        (n_info + 24).div_ceil(3816)
    } else if n_info > 8424 {
        (n_info + 24).div_ceil(8424)
    } else {
        1
    };
    8 * c * (n_info + 24).div_ceil(8 * c) - 24
}

#[cfg(test)]
mod tests {
    use super::super::mcs::{MCS_QAM256, MCS_QAM64};
    use super::*;

    /// 12 PDSCH symbols, one DMRS symbol of type 1 (12 REs), no xOverhead: 132 REs.
    const RE: u32 = 132;

    #[test]
    fn hand_computed_sizes() {
        assert_eq!(re_per_prb(12, 12, 0), 132);
        assert_eq!(re_per_prb(14, 0, 0), 156, "capped at 156");
        assert_eq!(re_per_prb(1, 12, 6), 0);
        // 1 PRB, MCS 0 (QPSK, 120/1024), 1 layer: N_info = 132·2·120/1024 = 30.94;
        // n = max(3, 4 - 6) = 3; N'_info = max(24, 8·⌊3.87⌋) = 24 -> 24.
        assert_eq!(tbs_bits(MCS_QAM64[0], RE, 1, 1), 24);
        // 10 PRB, MCS 10 (16QAM, 340/1024): N_info = 1320·4·340/1024 = 1753.1; n = 4;
        // N'_info = 16·⌊109.57⌋ = 1744 -> the next table entry, 1800.
        assert_eq!(tbs_bits(MCS_QAM64[10], RE, 10, 1), 1800);
        // 25 PRB, MCS 9 (QPSK, 679/1024): N_info = 3300·2·679/1024 = 4376.4 > 3824;
        // n = ⌊log2 4352.4⌋ - 5 = 7; N'_info = 128·round(34.003) = 4352; R > 1/4 and
        // N'_info <= 8424: 8·⌈4376/8⌉ - 24 = 4352.
        assert_eq!(tbs_bits(MCS_QAM64[9], RE, 25, 1), 4352);
        // 273 PRB, MCS 0, R = 0.117 <= 1/4: N_info = 36036·2·120/1024 = 8446.0; n = 8;
        // N'_info = 256·round(32.898) = 8448; C = ⌈8472/3816⌉ = 3; 24·⌈8472/24⌉ - 24 = 8448.
        assert_eq!(tbs_bits(MCS_QAM64[0], RE, 273, 1), 8448);
        // 273 PRB, 256QAM MCS 27 (948/1024), 4 layers: N_info = 36036·8·4·948/1024 =
        // 1 067 566.1; n = ⌊log2 1 067 542.1⌋ - 5 = 15; N'_info = 32768·round(32.578) =
        // 1 081 344; C = ⌈1 081 368/8424⌉ = 129; 1032·⌈1047.84⌉ - 24 = 1 081 512.
        assert_eq!(tbs_bits(MCS_QAM256[27], RE, 273, 4), 1_081_512);
        // The same on 1 layer: N_info = 266 891.5; n = 13; N'_info = 8192·round(32.577)
        // = 270 336; C = ⌈270 360/8424⌉ = 33; 264·⌈1024.09⌉ - 24 = 270 576.
        assert_eq!(tbs_bits(MCS_QAM256[27], RE, 273, 1), 270_576);
        // 256QAM MCS 20 (682.5/1024), 51 PRB: N_info = 6732·8·682.5/1024 = 35 895.4;
        // n = 10; N'_info = 1024·round(35.031) = 35 840; C = ⌈35 864/8424⌉ = 5;
        // 40·⌈896.6⌉ - 24 = 35 856.
        assert_eq!(tbs_bits(MCS_QAM256[20], RE, 51, 1), 35_856);
        assert_eq!(tbs_bits(MCS_QAM256[27], RE, 0, 4), 0);
        assert_eq!(tbs_bits(MCS_QAM256[27], 0, 10, 4), 0);
    }

    #[test]
    fn sizes_grow_with_prbs_efficiency_and_layers_and_stay_near_n_info() {
        for table in [&MCS_QAM64[..], &MCS_QAM256[..]] {
            for layers in 1..=4u8 {
                for n in 1..=273 {
                    let mut prev: Option<(f64, u64)> = None;
                    for (i, &mcs) in table.iter().enumerate() {
                        let t = tbs_bits(mcs, RE, n, layers);
                        assert!(t % 8 == 0, "whole bytes");
                        assert!(t >= tbs_bits(mcs, RE, n - 1, layers), "MCS {i}, {n} PRB");
                        if layers > 1 {
                            assert!(t >= tbs_bits(mcs, RE, n, layers - 1));
                        }
                        // Within 6 % (and 24 bits) of N_info: the quantization's size.
                        let n_info = (RE * n) as f64 * mcs.efficiency() * layers as f64;
                        assert!(
                            (t as f64 - n_info).abs() <= 0.06 * n_info + 24.0,
                            "{t} vs {n_info}"
                        );
                        // N_info only grows with the efficiency, and the TBS with it (MCS
                        // 17 of table 1 is a little less efficient than 16).
                        if let Some((e, p)) = prev.filter(|(e, _)| mcs.efficiency() >= *e) {
                            assert!(t >= p, "MCS {i}, {n} PRB, {layers} layers: {t} < {p} ({e})");
                        }
                        prev = Some((mcs.efficiency(), t));
                    }
                }
            }
        }
    }
}
