//! AVX2 kernels of the first stage's selection ([`crate::score`]): which of up to 64 tools'
//! accumulator entries can still make the cut, 8 entries at a time (16 with AVX-512, whose
//! kernel is here too: 1-3% less time on the slowest queries at 100,000 tools, where the dense
//! pass tests every tool), and the histogram of the selection's starting cut.
//!
//! An entry is 8 bytes (score, coverage): two 256-bit loads hold 8 of them, `vshufps` parts
//! scores from coverages, the products and both tests of the scalar code are done on 8 lanes
//! at once with the same IEEE operations in the same order (so the same bits), and `vmovmskps`
//! gives the 8 answers as bits. Listed tools are first copied (with the scalar code's
//! stand-in for a number past the accumulator) into a buffer of 64.
//!
//! callgrind, 100,000 tools: the dense pass's test took 8.4 instructions a tool in the scalar
//! code compiled for baseline x86_64, now 2.5 (`Select::dense` 0.84 -> 0.62 M a slow query);
//! the listed pass took 38 a touched tool all told (the selection of those that pass
//! included), now 24 (`Select::sparse` 0.30 -> 0.19 M a random query).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    _CMP_GT_OQ, _CMP_NLE_UQ, _CMP_NLT_UQ, _mm256_and_ps, _mm256_and_si256, _mm256_castpd_ps,
    _mm256_castps_pd, _mm256_castps_si256, _mm256_cmp_ps, _mm256_loadu_ps, _mm256_max_epi32,
    _mm256_min_epi32, _mm256_movemask_ps, _mm256_mul_ps, _mm256_permute4x64_pd, _mm256_set1_epi32,
    _mm256_set1_ps, _mm256_setzero_ps, _mm256_setzero_si256, _mm256_shuffle_ps, _mm256_srli_epi32,
    _mm256_storeu_si256, _mm256_sub_epi32,
};

use crate::accumulate::{Acc, FloorTables};
use crate::simd::{Avx2, Avx512};

/// The most entries tested at once: one bit each of the `u64` answer (the selection's own
/// chunk, `score::CHUNK`, is this size).
const MOST: usize = u64::BITS as usize;

impl Avx2 {
    /// Bit `i` set for each entry `i` of `chunk` (at most 64) that passes: a score that, times
    /// `factor` (with `EXACT`, times its coverage, then `factor`), is not below `cut`, and is
    /// not at or below 0. The scalar selection's `survivors` (`factor` the bound) and
    /// `survivors_exact` (`factor` the largest name boost), bit for bit.
    pub(crate) fn survivors<const EXACT: bool>(self, chunk: &[Acc], factor: f32, cut: f32) -> u64 {
        let chunk = &chunk[..chunk.len().min(MOST)];
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: `self` proves AVX2 was detected.
            unsafe { survivors_avx2::<EXACT>(chunk, factor, cut) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        match self {}
    }

    /// [`Avx2::survivors`] of the entries of `acc` numbered in `tools` (at most 64); a
    /// number past `acc` is tested as an entry of score and coverage 1, as the scalar
    /// selection's `listed_survivors` does (the selection then passes over it).
    pub(crate) fn listed_survivors<const EXACT: bool>(
        self,
        acc: &[Acc],
        tools: &[u32],
        factor: f32,
        cut: f32,
    ) -> u64 {
        let mut copy = [Acc::default(); MOST];
        for (c, &d) in copy.iter_mut().zip(tools) {
            *c = Acc::listed(acc, d);
        }
        // Whole groups of 8: the entries past `tools` are zero, and a zero score never passes,
        // so no listed entry is left to the scalar loop.
        self.survivors::<EXACT>(
            &copy[..tools.len().min(MOST).next_multiple_of(8)],
            factor,
            cut,
        )
    }
}

impl Avx2 {
    /// Counts each entry of `entries` in `tables` at its [`Acc::floor_bucket`], as the scalar
    /// selection does (but for which table counts which entry): the products and buckets 8
    /// entries at a time, lane `i` counted in table `i`.
    pub(crate) fn floor_histogram(self, entries: &[Acc], tables: &mut FloorTables) {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: `self` proves AVX2 was detected.
            unsafe { floor_histogram_avx2(entries, tables) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        match self {}
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn floor_histogram_avx2(entries: &[Acc], tables: &mut FloorTables) {
    let zero = _mm256_setzero_ps();
    let (low, top) = (
        _mm256_set1_epi32(Acc::FLOOR_LOW),
        _mm256_set1_epi32(Acc::FLOOR_BUCKETS as i32 - 1),
    );
    let mut eights = entries.chunks_exact(8);
    let mut out = [0u32; 8];
    for eight in eights.by_ref() {
        let p = eight.as_ptr().cast::<f32>();
        // SAFETY: `eight` is 8 entries of two f32 each (`Acc` is `repr(C)`): 16 f32, read by
        // two unaligned loads of 8.
        let (a, b) = unsafe { (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))) };
        // The entries' order is lost (scores 0 1 4 5 | 2 3 6 7), which a histogram does not
        // mind.
        let score = _mm256_shuffle_ps::<0b10_00_10_00>(a, b);
        let coverage = _mm256_shuffle_ps::<0b11_01_11_01>(a, b);
        let x = _mm256_mul_ps(score, coverage);
        // `floor_bucket`: the shifted bits less the low bucket's, clamped to the buckets,
        // where the product is positive (an ordered comparison: NaN is not), else 0. Where it
        // is positive the bits are below 2^31, so signed comparisons order them.
        let positive = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GT_OQ>(x, zero));
        let shifted = _mm256_srli_epi32::<{ Acc::FLOOR_SHIFT as i32 }>(_mm256_castps_si256(x));
        let bucket = _mm256_min_epi32(
            _mm256_max_epi32(_mm256_sub_epi32(shifted, low), _mm256_setzero_si256()),
            top,
        );
        // SAFETY: `out` is 8 u32, 256 bits.
        unsafe {
            _mm256_storeu_si256(out.as_mut_ptr().cast(), _mm256_and_si256(bucket, positive));
        };
        for (table, &b) in tables.iter_mut().zip(&out) {
            // In range already (clamped).
            table[b as usize & (Acc::FLOOR_BUCKETS - 1)] += 1;
        }
    }
    for (table, &a) in tables.iter_mut().zip(eights.remainder()) {
        table[a.floor_bucket()] += 1;
    }
}

impl Avx512 {
    /// [`Avx2::survivors`], 16 entries at a time: the same products and tests, bit for bit.
    pub(crate) fn survivors<const EXACT: bool>(self, chunk: &[Acc], factor: f32, cut: f32) -> u64 {
        let chunk = &chunk[..chunk.len().min(MOST)];
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: `self` proves AVX-512F was detected.
            unsafe { survivors_avx512::<EXACT>(chunk, factor, cut) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        match self {}
    }
}

/// [`Avx512::survivors`]: two 512-bit loads hold 16 entries, one permute of the two takes
/// their scores and one their coverages (in entry order), and the comparisons give the 16
/// answers as a mask.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn survivors_avx512<const EXACT: bool>(chunk: &[Acc], factor: f32, cut: f32) -> u64 {
    use std::arch::x86_64::{
        _mm512_cmp_ps_mask, _mm512_loadu_ps, _mm512_mul_ps, _mm512_permutex2var_ps, _mm512_set1_ps,
        _mm512_setr_epi32, _mm512_setzero_ps,
    };
    let (f, c, zero) = (
        _mm512_set1_ps(factor),
        _mm512_set1_ps(cut),
        _mm512_setzero_ps(),
    );
    let scores = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let coverages = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    let mut live = 0u64;
    let mut sixteens = chunk.chunks_exact(16);
    for (g, sixteen) in sixteens.by_ref().enumerate() {
        let p = sixteen.as_ptr().cast::<f32>();
        // SAFETY: `sixteen` is 16 entries of two f32 each (`Acc` is `repr(C)`): 32 f32, read
        // by two unaligned loads of 16.
        let (a, b) = unsafe { (_mm512_loadu_ps(p), _mm512_loadu_ps(p.add(16))) };
        let score = _mm512_permutex2var_ps(a, scores, b);
        let x = if EXACT {
            let coverage = _mm512_permutex2var_ps(a, coverages, b);
            _mm512_mul_ps(_mm512_mul_ps(score, coverage), f)
        } else {
            _mm512_mul_ps(score, f)
        };
        let pass = _mm512_cmp_ps_mask::<_CMP_NLT_UQ>(x, c)
            & _mm512_cmp_ps_mask::<_CMP_NLE_UQ>(score, zero);
        live |= u64::from(pass) << (g * 16);
    }
    let whole = chunk.len() - sixteens.remainder().len();
    for (i, &a) in sixteens.remainder().iter().enumerate() {
        live |= u64::from(a.passes::<EXACT>(factor, cut)) << (whole + i);
    }
    live
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn survivors_avx2<const EXACT: bool>(chunk: &[Acc], factor: f32, cut: f32) -> u64 {
    let (f, c, zero) = (
        _mm256_set1_ps(factor),
        _mm256_set1_ps(cut),
        _mm256_setzero_ps(),
    );
    let mut live = 0u64;
    let mut eights = chunk.chunks_exact(8);
    for (g, eight) in eights.by_ref().enumerate() {
        let p = eight.as_ptr().cast::<f32>();
        // SAFETY: `eight` is 8 entries of two f32 each (`Acc` is `repr(C)`): 16 f32, read by
        // two unaligned loads of 8.
        let (a, b) = unsafe { (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))) };
        // Per 128-bit half: scores 0 1 4 5 | 2 3 6 7 (and the coverages alike).
        let score = _mm256_shuffle_ps::<0b10_00_10_00>(a, b);
        let x = if EXACT {
            let coverage = _mm256_shuffle_ps::<0b11_01_11_01>(a, b);
            _mm256_mul_ps(_mm256_mul_ps(score, coverage), f)
        } else {
            _mm256_mul_ps(score, f)
        };
        let pass = _mm256_and_ps(
            _mm256_cmp_ps::<_CMP_NLT_UQ>(x, c),
            _mm256_cmp_ps::<_CMP_NLE_UQ>(score, zero),
        );
        // Pairs of lanes back in entry order: 0 1, 2 3, 4 5, 6 7.
        let pass = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(
            pass,
        )));
        live |= u64::from(_mm256_movemask_ps(pass) as u8) << (g * 8);
    }
    let whole = chunk.len() - eights.remainder().len();
    for (i, &a) in eights.remainder().iter().enumerate() {
        live |= u64::from(a.passes::<EXACT>(factor, cut)) << (whole + i);
    }
    live
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries of every kind: zero, negative, NaN and infinite scores, coverages below 1.
    fn entries(n: usize) -> Vec<Acc> {
        let special = [0.0, -1.0, f32::NAN, f32::INFINITY, 1e-30];
        (0..n)
            .map(|i| Acc {
                score: if i % 7 == 3 {
                    special[i % special.len()]
                } else {
                    (i as f32 * 0.37) % 5.0
                },
                coverage: (i % 5) as f32 * 0.25,
            })
            .collect()
    }

    fn scalar<const EXACT: bool>(chunk: &[Acc], factor: f32, cut: f32) -> u64 {
        chunk.iter().enumerate().fold(0, |live, (i, &a)| {
            live | u64::from(a.passes::<EXACT>(factor, cut)) << i
        })
    }

    /// A survivors kernel under test, [`Avx2`] or [`Avx512`].
    trait Survivors: Copy {
        fn kernel<const EXACT: bool>(self, chunk: &[Acc], factor: f32, cut: f32) -> u64;
    }

    impl Survivors for Avx2 {
        fn kernel<const EXACT: bool>(self, chunk: &[Acc], factor: f32, cut: f32) -> u64 {
            self.survivors::<EXACT>(chunk, factor, cut)
        }
    }

    impl Survivors for Avx512 {
        fn kernel<const EXACT: bool>(self, chunk: &[Acc], factor: f32, cut: f32) -> u64 {
            self.survivors::<EXACT>(chunk, factor, cut)
        }
    }

    /// Checks that `simd` gives the scalar survivors for every chunk length up to [`MOST`] and
    /// a few cuts, exact and bound.
    fn survivors_are_the_scalar_ones(simd: impl Survivors) {
        let all = entries(MOST);
        for len in 0..=MOST {
            for cut in [f32::NEG_INFINITY, 0.5, 2.0, 7.5] {
                let chunk = &all[..len];
                assert_eq!(
                    simd.kernel::<true>(chunk, 1.3, cut),
                    scalar::<true>(chunk, 1.3, cut),
                    "exact, {len} entries, cut {cut}"
                );
                assert_eq!(
                    simd.kernel::<false>(chunk, 1.3, cut),
                    scalar::<false>(chunk, 1.3, cut),
                    "bound, {len} entries, cut {cut}"
                );
            }
        }
    }

    #[test]
    fn simd_survivors_are_the_scalar_ones_for_every_chunk_length() {
        let Some(simd) = Avx2::detect() else {
            return;
        };
        survivors_are_the_scalar_ones(simd);
    }

    #[test]
    fn the_simd_floor_histogram_counts_as_the_scalar_buckets_do() {
        let Some(simd) = Avx2::detect() else {
            return;
        };
        let mut all = entries(200);
        // Products past both ends of the buckets.
        all[5].score = 1e30;
        all[6] = Acc {
            score: 1e-20,
            coverage: 1e-20,
        };
        for len in [0, 1, 7, 8, 9, 63, 200] {
            let mut scalar = [0u32; Acc::FLOOR_BUCKETS];
            for a in &all[..len] {
                scalar[a.floor_bucket()] += 1;
            }
            let mut tables = [[0u16; Acc::FLOOR_BUCKETS]; 8];
            simd.floor_histogram(&all[..len], &mut tables);
            assert_eq!(
                crate::accumulate::floor_counts(&tables),
                scalar,
                "{len} entries"
            );
        }
    }

    #[test]
    fn avx512_survivors_are_the_scalar_ones_for_every_chunk_length() {
        let Some(simd) = Avx512::detect() else {
            return;
        };
        survivors_are_the_scalar_ones(simd);
    }

    #[test]
    fn listed_survivors_test_a_number_past_the_accumulator_as_score_and_coverage_one() {
        let Some(simd) = Avx2::detect() else {
            return;
        };
        let acc = entries(20);
        let tools = [3, 19, 500, 0, 7, 8, 9, 10, 11];
        let copy: Vec<Acc> = tools
            .iter()
            .map(|&d| {
                acc.get(d).copied().unwrap_or(Acc {
                    score: 1.0,
                    coverage: 1.0,
                })
            })
            .collect();
        let tools: Vec<u32> = tools.iter().map(|&d| d as u32).collect();
        assert_eq!(
            simd.listed_survivors::<true>(&acc, &tools, 1.3, 1.0),
            scalar::<true>(&copy, 1.3, 1.0)
        );
        // The stand-in passes a cut of 1 with a boost of 1.3.
        assert_ne!(
            simd.listed_survivors::<true>(&acc, &tools, 1.3, 1.0) & 1 << 2,
            0
        );
    }
}
