//! AVX2 kernels of the block decoder ([`crate::postings`]): a group of 8 packed values at a
//! time, unpacked by a byte shuffle and a per-lane shift instead of 8 scalar shifts and masks,
//! the gaps prefix-summed into tool numbers in the same registers.
//!
//! A group of 8 values of `W` bits is `W` bytes. Its first 4 values lie in the 16 bytes from
//! the group's start, its last 4 in the 16 bytes from byte `4W / 8` (rounded down): both halves
//! are loaded into one 256-bit register, each lane's 4 bytes are gathered by `vpshufb` (which
//! stays within a 128-bit half, hence the two loads) and shifted right by the lane's own bit
//! offset (`vpsrlvd`), then masked. A lane's value must fit its 4 bytes after a shift of up to
//! 7 bits, so the kernels take widths up to [`MAX_WIDTH`]; wider blocks (tool-number gaps above
//! 16 million, which no catalog of 100,000 tools has) stay with the scalar decoder. No gather
//! (slow on the AMD EPYC of this project's machines), no table per call: the shuffle and shift
//! of each width are constants built at compile time.
//!
//! Chosen over a formulation the compiler vectorises: the release build targets baseline
//! x86_64 (SSE2), which has neither a byte shuffle nor per-lane shifts, so the scalar decoder
//! stays scalar there; AVX2 is detected at run time (`is_x86_feature_detected!` caches the
//! answer in a static; it is read once per postings list, and the kernels take the proof
//! of it, [`crate::simd::Avx2`]).
//!
//! Measured with callgrind over the 100,000-tool speed catalog: the decoding of the 400
//! slowest queries went from 13.8 to 7.3 instructions an entry (see `Blocks::next_into`).
//! The kernels are near their floor (about 23 and 17 instructions a group of 8); what is left is
//! the block's header, read in scalar code.

use std::arch::x86_64::{
    __m128i, __m256i, _mm_cvtsi32_si128, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_max_epu32,
    _mm_packus_epi32, _mm_shuffle_epi32, _mm_storeu_si128, _mm256_add_epi32, _mm256_and_si256,
    _mm256_castsi128_si256, _mm256_castsi256_si128, _mm256_cmpgt_epi32, _mm256_extracti128_si256,
    _mm256_inserti128_si256, _mm256_loadu_si256, _mm256_max_epu32, _mm256_permute2x128_si256,
    _mm256_permutevar8x32_epi32, _mm256_set1_epi32, _mm256_setr_epi32, _mm256_setzero_si256,
    _mm256_shuffle_epi8, _mm256_shuffle_epi32, _mm256_sll_epi32, _mm256_slli_si256,
    _mm256_srlv_epi32, _mm256_storeu_si256,
};

use crate::postings::BLOCK;
use crate::simd::Avx2;

/// The widest packed value the kernels unpack: with a lane's bit offset of up to 7, 25 bits
/// fit its 4 bytes; tool-number gaps are held to 24 so that a whole block's gaps (each plus
/// one) sum below `2^32` (128 x 2^24 = 2^31), which the decoder's overflow test relies on.
pub(crate) const MAX_WIDTH: u8 = 24;

/// Bytes the kernels may read past the last group's start plus its width (the second
/// 16-byte load of a group starts at most `W / 2` bytes in).
pub(crate) const SLACK: usize = 16;

impl Avx2 {
    /// Unpacks `groups` groups (at most `BLOCK / 8`) of `width`-bit gaps from `bytes` into
    /// tool numbers: entry `i` is `start + (gap_0 + 1) + ... + (gap_i + 1)`, wrapping. `None`
    /// (nothing written) if the width is above [`MAX_WIDTH`] or `bytes` is shorter than
    /// `groups * width + SLACK`.
    pub(crate) fn docs(
        self,
        bytes: &[u8],
        width: u8,
        groups: usize,
        start: u32,
        out: &mut [u32; BLOCK],
    ) -> Option<()> {
        let groups = groups.min(BLOCK / 8);
        if width > MAX_WIDTH || bytes.len() < groups * usize::from(width) + SLACK {
            return None;
        }
        // SAFETY: `self` proves AVX2 was detected.
        unsafe { docs_avx2(bytes, width, groups, start, out) }
    }

    /// Unpacks the `n` impacts (at most [`BLOCK`]) of `width` bits from `bytes`, each shifted
    /// left by `shift` and added to `base`, into `out` (then values of no meaning up to the
    /// next multiple of 8); gives the largest unpacked value of the `n`, before the shift, by
    /// which the caller tells whether an impact passes 32767 (an impact above 65535 is written
    /// as 65535). `None` (nothing written) if the width is above [`MAX_WIDTH`] or `bytes` is
    /// shorter than `ceil(n / 8) * width + SLACK`.
    pub(crate) fn impacts(
        self,
        bytes: &[u8],
        width: u8,
        n: usize,
        shift: u8,
        base: u16,
        out: &mut [u16; BLOCK],
    ) -> Option<u32> {
        let n = n.min(BLOCK);
        if width > MAX_WIDTH || bytes.len() < n.div_ceil(8) * usize::from(width) + SLACK {
            return None;
        }
        // SAFETY: `self` proves AVX2 was detected.
        unsafe { impacts_avx2(bytes, width, n, shift, base, out) }
    }
}

/// The `vpshufb` control, per-lane right shifts and value mask of one width.
#[repr(C, align(32))]
struct Plan {
    shuffle: [u8; 32],
    shifts: [u32; 8],
    mask: [u32; 8],
    /// Where the last 4 values' 16 bytes start in a group: `4W / 8`.
    high: usize,
}

const fn plan(width: usize) -> Plan {
    let high = 4 * width / 8;
    let mut shuffle = [0x80u8; 32];
    let mut shifts = [0u32; 8];
    let mut j = 0;
    while j < 8 {
        // The lane's bit offset from the start of its half's 16 bytes.
        let bit = j * width - if j < 4 { 0 } else { 8 * high };
        let byte = bit / 8;
        let mut k = 0;
        while k < 4 {
            // Bytes past the 16 of the half are never needed up to `MAX_WIDTH`.
            if byte + k < 16 {
                shuffle[j * 4 + k] = (byte + k) as u8;
            }
            k += 1;
        }
        shifts[j] = (bit % 8) as u32;
        j += 1;
    }
    let m = if width == 0 { 0 } else { (1u32 << width) - 1 };
    Plan {
        shuffle,
        shifts,
        mask: [m; 8],
        high,
    }
}

/// The plans of widths `0..=MAX_WIDTH`, built at compile time.
static PLANS: [Plan; MAX_WIDTH as usize + 1] = {
    let mut plans = [const {
        Plan {
            shuffle: [0; 32],
            shifts: [0; 8],
            mask: [0; 8],
            high: 0,
        }
    }; MAX_WIDTH as usize + 1];
    let mut w = 0;
    while w <= MAX_WIDTH as usize {
        plans[w] = plan(w);
        w += 1;
    }
    plans
};

/// A plan's constants in registers.
struct Loaded {
    shuffle: __m256i,
    shifts: __m256i,
    mask: __m256i,
    width: usize,
    high: usize,
}

impl Loaded {
    #[target_feature(enable = "avx2")]
    fn new(width: u8) -> Option<Loaded> {
        let p = PLANS.get(usize::from(width))?;
        // SAFETY: each array is 32 bytes (8 u32 or 32 u8), read unaligned from a live static.
        let (shuffle, shifts, mask) = unsafe {
            (
                _mm256_loadu_si256(p.shuffle.as_ptr().cast()),
                _mm256_loadu_si256(p.shifts.as_ptr().cast()),
                _mm256_loadu_si256(p.mask.as_ptr().cast()),
            )
        };
        Some(Loaded {
            shuffle,
            shifts,
            mask,
            width: usize::from(width),
            high: p.high,
        })
    }

    /// The 8 values of group `g` of `bytes`, which hold at least `(g + 1) * width + SLACK`
    /// bytes (the caller checks it for the last group).
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn group(&self, bytes: &[u8], g: usize) -> __m256i {
        if self.width == 0 {
            return _mm256_setzero_si256();
        }
        let at = g * self.width;
        // SAFETY: the caller guarantees `bytes.len() >= at + width + SLACK`; both loads end by
        // `at + high + 16 <= at + width + SLACK` (`high <= width / 2`), unaligned loads.
        let (lo, hi) = unsafe {
            let p = bytes.as_ptr().add(at);
            (
                _mm_loadu_si128(p.cast::<__m128i>()),
                _mm_loadu_si128(p.add(self.high).cast::<__m128i>()),
            )
        };
        let both = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(lo), hi);
        let gathered = _mm256_shuffle_epi8(both, self.shuffle);
        _mm256_and_si256(_mm256_srlv_epi32(gathered, self.shifts), self.mask)
    }
}

#[target_feature(enable = "avx2")]
fn docs_avx2(
    bytes: &[u8],
    width: u8,
    groups: usize,
    start: u32,
    out: &mut [u32; BLOCK],
) -> Option<()> {
    let plan = Loaded::new(width)?;
    let one = _mm256_set1_epi32(1);
    let last = _mm256_set1_epi32(7);
    let mut running = _mm256_set1_epi32(start as i32);
    for (g, to) in out.chunks_exact_mut(8).take(groups).enumerate() {
        // SAFETY: `bytes` holds `groups * width + SLACK` bytes (checked by `docs`).
        let x = unsafe { plan.group(bytes, g) };
        // Each gap plus one, summed within each 128-bit half, then the low half's total
        // added to the high half: the group's own prefix sums, which depend on no other
        // group. Only the running total carries from group to group, by one add: carried
        // through the group's sums instead (add, broadcast, add), the chain took 6 cycles a
        // group and the decoder stalled on it (`perf`).
        let mut x = _mm256_add_epi32(x, one);
        x = _mm256_add_epi32(x, _mm256_slli_si256::<4>(x));
        x = _mm256_add_epi32(x, _mm256_slli_si256::<8>(x));
        let low_total = _mm256_shuffle_epi32::<0xff>(x);
        x = _mm256_add_epi32(x, _mm256_permute2x128_si256::<0x08>(low_total, low_total));
        let total = _mm256_permutevar8x32_epi32(x, last);
        x = _mm256_add_epi32(x, running);
        running = _mm256_add_epi32(running, total);
        // SAFETY: `to` is 8 u32 (32 bytes) of `out`; an unaligned store.
        unsafe { _mm256_storeu_si256(to.as_mut_ptr().cast(), x) };
    }
    Some(())
}

#[target_feature(enable = "avx2")]
fn impacts_avx2(
    bytes: &[u8],
    width: u8,
    n: usize,
    shift: u8,
    base: u16,
    out: &mut [u16; BLOCK],
) -> Option<u32> {
    let plan = Loaded::new(width)?;
    let n = n.min(BLOCK);
    let base = _mm256_set1_epi32(i32::from(base));
    let shift = _mm_cvtsi32_si128(i32::from(shift));
    let mut top = _mm256_setzero_si256();
    // Whole groups, then the part of one that ends a list's last block: only there are
    // lanes left out of the largest value (a mask tested in every group cost 4 instructions
    // a group).
    let whole = n / 8;
    let mut groups = out.chunks_exact_mut(8).enumerate();
    for (g, to) in groups.by_ref().take(whole) {
        // SAFETY: `bytes` holds `ceil(n / 8) * width + SLACK` bytes (checked by `impacts`).
        let x = unsafe { plan.group(bytes, g) };
        top = _mm256_max_epu32(top, x);
        let x = _mm256_add_epi32(_mm256_sll_epi32(x, shift), base);
        // Values above 65535 saturate: the caller refuses the block by `top`.
        let packed = _mm_packus_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256::<1>(x));
        // SAFETY: `to` is 8 u16 (16 bytes) of `out`; an unaligned store.
        unsafe { _mm_storeu_si128(to.as_mut_ptr().cast(), packed) };
    }
    if let Some((g, to)) = groups.next().filter(|_| !n.is_multiple_of(8)) {
        // SAFETY: as above: this is group `ceil(n / 8) - 1`.
        let x = unsafe { plan.group(bytes, g) };
        // The lanes that are entries (1 to 7 of them).
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let in_list = _mm256_cmpgt_epi32(_mm256_set1_epi32((n % 8) as i32), lanes);
        top = _mm256_max_epu32(top, _mm256_and_si256(x, in_list));
        let x = _mm256_add_epi32(_mm256_sll_epi32(x, shift), base);
        let packed = _mm_packus_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256::<1>(x));
        // SAFETY: `to` is 8 u16 (16 bytes) of `out`; an unaligned store.
        unsafe { _mm_storeu_si128(to.as_mut_ptr().cast(), packed) };
    }
    // The largest of the 8 lanes.
    let top = _mm_max_epu32(
        _mm256_castsi256_si128(top),
        _mm256_extracti128_si256::<1>(top),
    );
    let top = _mm_max_epu32(top, _mm_shuffle_epi32::<0b01_00_11_10>(top));
    let top = _mm_max_epu32(top, _mm_shuffle_epi32::<0b10_11_00_01>(top));
    Some(_mm_cvtsi128_si32(top) as u32)
}
