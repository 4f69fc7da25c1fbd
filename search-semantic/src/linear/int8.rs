//! The int8 kernel of [`super::Linear`] (see the parent module's documentation): the weights
//! packed at load, the activations rounded to int8 a row at a time, and the VNNI tile.

use std::ops::Range;

use super::{Activation, BLOCK, Linear, Packed};
use crate::kernels::gelu;

impl Packed {
    /// `weight` (`[outputs, inputs]`) packed for the int8 kernel ([`Packed::Int8`]).
    pub(super) fn int8(weight: &[f32], outputs: usize, inputs: usize) -> Packed {
        let blocks = outputs.div_ceil(BLOCK);
        let quads = inputs.div_ceil(4);
        let mut weights = vec![0i8; blocks * quads * BLOCK * 4];
        let mut scale = vec![0.0f32; blocks * BLOCK];
        let mut offset = vec![0i32; blocks * BLOCK];
        for (o, row) in weight.chunks_exact(inputs.max(1)).enumerate() {
            let (b, j) = (o / BLOCK, o % BLOCK);
            let block = &mut weights[b * quads * BLOCK * 4..(b + 1) * quads * BLOCK * 4];
            let max = row.iter().fold(0.0f32, |m, w| m.max(w.abs()));
            let s = if max > 0.0 && max.is_finite() {
                max / 127.0
            } else {
                1.0
            };
            let mut sum = 0i32;
            for (k, w) in row.iter().enumerate() {
                let q = (w / s).round_ties_even().clamp(-127.0, 127.0) as i8;
                block[(k / 4) * BLOCK * 4 + j * 4 + k % 4] = q;
                sum += i32::from(q);
            }
            scale[o] = s;
            offset[o] = -128 * sum;
        }
        Packed::Int8 {
            weights,
            scale,
            offset,
        }
    }
}

impl Linear {
    /// [`Linear::apply_blocks`] on the int8 weight `(weights, scale, offset)`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply_int8(
        &self,
        (weights, scale, offset): (&[i8], &[f32], &[i32]),
        x: &[f32],
        n: usize,
        out: &mut [f32],
        act: Activation,
        blocks: Range<usize>,
    ) {
        let (xq, xs) = quantize(x, n, self.inputs);
        let q = Quantized {
            weights,
            scale,
            offset,
            x: &xq,
            x_scale: &xs,
        };
        #[cfg(target_arch = "x86_64")]
        if vnni() {
            // SAFETY: the CPU has AVX-512F, AVX-512BW and AVX512_VNNI (checked above), the
            // features the function is compiled for; `apply_blocks`'s asserts and `quantize`
            // give the shapes it relies on.
            unsafe { x86::apply_int8(self, &q, n, out, act, blocks) };
            return;
        }
        self.apply_int8_portable(&q, n, out, act, blocks);
    }

    /// The int8 product without AVX512_VNNI (weights packed for it, then a test asking for the
    /// portable path): the same integer sums, one output at a time.
    fn apply_int8_portable(
        &self,
        q: &Quantized<'_>,
        n: usize,
        out: &mut [f32],
        act: Activation,
        blocks: Range<usize>,
    ) {
        let o = self.outputs;
        let quads = self.inputs.div_ceil(4);
        for b in blocks {
            let panel = &q.weights[b * quads * BLOCK * 4..(b + 1) * quads * BLOCK * 4];
            for c in b * BLOCK..((b + 1) * BLOCK).min(o) {
                let j = c % BLOCK;
                for r in 0..n {
                    let mut sum = q.offset[c];
                    for p in 0..quads {
                        let xw = q.x[r * quads + p].to_le_bytes();
                        for (e, xe) in xw.iter().enumerate() {
                            let w = panel[p * BLOCK * 4 + j * 4 + e];
                            sum += i32::from(*xe) * i32::from(w);
                        }
                    }
                    let v = (sum as f32).mul_add(q.x_scale[r] * q.scale[c], self.bias[c]);
                    out[r * o + c] = if act == Activation::Gelu { gelu(v) } else { v };
                }
            }
        }
    }
}

/// True if the int8 kernel runs (the CPU has what it needs, and no test asked for the portable
/// one on this thread).
#[cfg(target_arch = "x86_64")]
pub(super) fn vnni() -> bool {
    crate::kernels::avx512() && super::vnni_detected()
}

/// An int8 layer's operands for one product.
pub(super) struct Quantized<'a> {
    weights: &'a [i8],
    scale: &'a [f32],
    offset: &'a [i32],
    /// `[n][inputs / 4]` words of four unsigned bytes, `q + 128` of each activation.
    x: &'a [u32],
    /// Each row's scale: its activation is `(byte - 128) * x_scale`.
    x_scale: &'a [f32],
}

/// The `n` rows of `x` (`[n, k]`) as int8 with a scale a row (its largest magnitude is 127),
/// stored as unsigned bytes `q + 128`, four to a word (the last word of a row padded with
/// 128, which meets zero weights): what [`Quantized`] holds.
pub(super) fn quantize(x: &[f32], n: usize, k: usize) -> (Vec<u32>, Vec<f32>) {
    let quads = k.div_ceil(4);
    #[cfg(target_arch = "x86_64")]
    if vnni() {
        let mut words = vec![0x8080_8080u32; n * quads];
        let mut scales = vec![0.0f32; n];
        assert!(x.len() >= n * k, "x shape");
        // SAFETY: the CPU has AVX-512F, BW and VL (`vnni` checked them); `x` holds `n`
        // rows of `k` floats (asserted), `words` `n` rows of `quads` words (`k` bytes or up
        // to three more), `scales` `n` floats.
        unsafe { x86::quantize(x, n, k, &mut words, &mut scales) };
        return (words, scales);
    }
    let mut bytes = vec![128u8; n * quads * 4];
    let mut scales = vec![0.0f32; n];
    for (r, row) in x[..n * k].chunks_exact(k).enumerate() {
        let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let (s, inv) = if max > 0.0 && max.is_finite() {
            (max / 127.0, 127.0 / max)
        } else {
            (1.0, 0.0)
        };
        scales[r] = s;
        let dst = &mut bytes[r * quads * 4..r * quads * 4 + k];
        for (d, v) in dst.iter_mut().zip(row) {
            *d = ((v * inv).round_ties_even().clamp(-127.0, 127.0) as i32 + 128) as u8;
        }
    }
    let words = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (words, scales)
}

#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    use std::arch::x86_64::{
        __m512, __m512i, _MM_HINT_T1, _mm_mask_storeu_epi8, _mm_prefetch, _mm512_abs_ps,
        _mm512_add_epi32, _mm512_cvtepi32_epi8, _mm512_cvtepi32_ps, _mm512_cvtps_epi32,
        _mm512_dpbusd_epi32, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_loadu_si512,
        _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_max_epi32, _mm512_max_ps,
        _mm512_min_epi32, _mm512_mul_ps, _mm512_reduce_max_ps, _mm512_set1_epi32, _mm512_set1_ps,
    };
    use std::ops::Range;

    use super::super::lane_masks;
    use super::super::x86::{gelu16, prefetch};
    use super::{Activation, BLOCK, Linear, Quantized};

    /// Rows of an int8 tile: 12 rows x 32 outputs is 24 accumulator registers of the 32.
    const ROWS: usize = 12;

    /// [`Linear::apply_blocks`] with AVX512_VNNI on int8 weights and activations: each tile
    /// multiplies four inputs by four weights in one `VPDPBUSD`, summing in int32, then scales
    /// the sums back to floats (the row's scale times the output's), adds the bias and applies
    /// the activation.
    ///
    /// # Safety
    ///
    /// The CPU has AVX-512F, AVX-512BW and AVX512_VNNI; `q` is `l`'s int8 weight with `n` rows
    /// of activations quantized by [`super::quantize`], `out` holds `n * l.outputs` floats,
    /// and `blocks` are blocks of `l`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn apply_int8(
        l: &Linear,
        q: &Quantized<'_>,
        n: usize,
        out: &mut [f32],
        act: Activation,
        blocks: Range<usize>,
    ) {
        let o = l.outputs;
        let quads = l.inputs.div_ceil(4);
        let gelu = act == Activation::Gelu;
        let end = blocks.end;
        let panel_len = quads * BLOCK * 4;
        for b in blocks {
            let col = b * BLOCK;
            let width = (o - col).min(BLOCK);
            let masks = lane_masks(width);
            // SAFETY: the panel is `panel_len` bytes of `q.weights`, which holds `blocks *
            // panel_len`; `scale` and `offset` hold `blocks * BLOCK` (every lane of a block
            // exists); bias loads and stores are masked to the block's `width` outputs; rows
            // `r..r + R` are below `n`, each `quads` words of `q.x` and one scale of
            // `q.x_scale`.
            unsafe {
                let panel = q.weights.as_ptr().add(b * panel_len);
                let epi = Epilogue {
                    bias: (
                        _mm512_maskz_loadu_ps(masks.0, l.bias.as_ptr().add(col)),
                        _mm512_maskz_loadu_ps(masks.1, l.bias.as_ptr().add(col + 16)),
                    ),
                    scale: (
                        _mm512_loadu_ps(q.scale.as_ptr().add(col)),
                        _mm512_loadu_ps(q.scale.as_ptr().add(col + 16)),
                    ),
                    offset: (
                        _mm512_loadu_si512(q.offset.as_ptr().add(col).cast()),
                        _mm512_loadu_si512(q.offset.as_ptr().add(col + 16).cast()),
                    ),
                    masks,
                    gelu,
                };
                let next = if b + 1 < end {
                    panel.add(panel_len)
                } else {
                    panel
                };
                let xp = q.x.as_ptr();
                let sp = q.x_scale.as_ptr();
                let op = out.as_mut_ptr().add(col);
                let mut r = 0;
                let tile = |r: usize| (xp.add(r * quads), sp.add(r), op.add(r * o));
                if n >= ROWS {
                    let (x, s, out) = tile(0);
                    tile_int8::<ROWS, true>(x, quads, s, panel, &epi, out, o, next);
                    r = ROWS;
                } else {
                    prefetch(next.cast(), quads);
                }
                while r + ROWS <= n {
                    let (x, s, out) = tile(r);
                    tile_int8::<ROWS, false>(x, quads, s, panel, &epi, out, o, next);
                    r += ROWS;
                }
                let (x, s, out) = tile(r);
                let (e, p) = (&epi, quads);
                match n - r {
                    1 => tile_int8::<1, false>(x, p, s, panel, e, out, o, next),
                    2 => tile_int8::<2, false>(x, p, s, panel, e, out, o, next),
                    3 => tile_int8::<3, false>(x, p, s, panel, e, out, o, next),
                    4 => tile_int8::<4, false>(x, p, s, panel, e, out, o, next),
                    5 => tile_int8::<5, false>(x, p, s, panel, e, out, o, next),
                    6 => tile_int8::<6, false>(x, p, s, panel, e, out, o, next),
                    7 => tile_int8::<7, false>(x, p, s, panel, e, out, o, next),
                    8 => tile_int8::<8, false>(x, p, s, panel, e, out, o, next),
                    9 => tile_int8::<9, false>(x, p, s, panel, e, out, o, next),
                    10 => tile_int8::<10, false>(x, p, s, panel, e, out, o, next),
                    11 => tile_int8::<11, false>(x, p, s, panel, e, out, o, next),
                    _ => {}
                }
            }
        }
    }

    /// [`super::quantize`] with AVX-512: the same bytes and scales (the largest magnitude is
    /// found exactly in any order; `vcvtps2dq` rounds to nearest even, as the scalar loop).
    ///
    /// # Safety
    ///
    /// AVX-512F and AVX-512BW; `x` holds `n * k` floats, `words` `n * k.div_ceil(4)` words
    /// (filled with `0x80808080` by the caller: the padding), `scales` `n` floats.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub(super) unsafe fn quantize(
        x: &[f32],
        n: usize,
        k: usize,
        words: &mut [u32],
        scales: &mut [f32],
    ) {
        let quads = k.div_ceil(4);
        for (r, scale) in scales.iter_mut().enumerate().take(n) {
            // SAFETY: the caller's contract; every load and store is masked to the `k`
            // floats and bytes of row `r`.
            unsafe {
                let src = x.as_ptr().add(r * k);
                let dst = words.as_mut_ptr().add(r * quads).cast::<u8>();
                let mask = |j: usize| {
                    if k - j >= 16 {
                        u16::MAX
                    } else {
                        (1u16 << (k - j)) - 1
                    }
                };
                let mut m = _mm512_set1_ps(0.0);
                let mut j = 0;
                while j < k {
                    let v = _mm512_maskz_loadu_ps(mask(j), src.add(j));
                    m = _mm512_max_ps(m, _mm512_abs_ps(v));
                    j += 16;
                }
                let max = _mm512_reduce_max_ps(m);
                let (s, inv) = if max > 0.0 && max.is_finite() {
                    (max / 127.0, 127.0 / max)
                } else {
                    (1.0, 0.0)
                };
                *scale = s;
                let inv = _mm512_set1_ps(inv);
                let (lo, hi, off) = (
                    _mm512_set1_epi32(-127),
                    _mm512_set1_epi32(127),
                    _mm512_set1_epi32(128),
                );
                let mut j = 0;
                while j < k {
                    let m = mask(j);
                    let v = _mm512_maskz_loadu_ps(m, src.add(j));
                    let q = _mm512_cvtps_epi32(_mm512_mul_ps(v, inv));
                    let q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi), off);
                    _mm_mask_storeu_epi8(dst.add(j).cast(), m, _mm512_cvtepi32_epi8(q));
                    j += 16;
                }
            }
        }
    }

    /// What turns a block's int32 sums into its outputs (two halves of 16 lanes each).
    struct Epilogue {
        bias: (__m512, __m512),
        scale: (__m512, __m512),
        offset: (__m512i, __m512i),
        masks: (u16, u16),
        gelu: bool,
    }

    /// [`tile`] on int8: `R` rows of `quads` words of unsigned bytes by one block of packed
    /// int8 weights (`[quads][BLOCK][4]`).
    ///
    /// # Safety
    ///
    /// AVX-512F and AVX512_VNNI; `x` points at `R` rows of `quads` words (stride `quads`),
    /// `x_scale` at `R` floats, `panel` at `quads * BLOCK * 4` bytes, `out` at `R` rows of
    /// stride `o` whose masked lanes may be written.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512vnni")]
    #[inline]
    unsafe fn tile_int8<const R: usize, const PREFETCH: bool>(
        x: *const u32,
        quads: usize,
        x_scale: *const f32,
        panel: *const i8,
        e: &Epilogue,
        out: *mut f32,
        o: usize,
        next: *const i8,
    ) {
        let mut acc0 = [e.offset.0; R];
        let mut acc1 = [e.offset.1; R];
        // SAFETY: the caller's contract: every address below is inside `x`, `x_scale`,
        // `panel`, `out` (prefetches may point anywhere).
        unsafe {
            for p in 0..quads {
                if PREFETCH {
                    _mm_prefetch::<_MM_HINT_T1>(next.add(p * BLOCK * 4));
                    _mm_prefetch::<_MM_HINT_T1>(next.add(p * BLOCK * 4 + 64));
                }
                let w0 = _mm512_loadu_si512(panel.add(p * BLOCK * 4).cast());
                let w1 = _mm512_loadu_si512(panel.add(p * BLOCK * 4 + 64).cast());
                for i in 0..R {
                    let a = _mm512_set1_epi32(*x.add(i * quads + p) as i32);
                    acc0[i] = _mm512_dpbusd_epi32(acc0[i], a, w0);
                    acc1[i] = _mm512_dpbusd_epi32(acc1[i], a, w1);
                }
            }
            for i in 0..R {
                let s = _mm512_set1_ps(*x_scale.add(i));
                let mut v0 = _mm512_fmadd_ps(
                    _mm512_cvtepi32_ps(acc0[i]),
                    _mm512_mul_ps(s, e.scale.0),
                    e.bias.0,
                );
                let mut v1 = _mm512_fmadd_ps(
                    _mm512_cvtepi32_ps(acc1[i]),
                    _mm512_mul_ps(s, e.scale.1),
                    e.bias.1,
                );
                if e.gelu {
                    v0 = gelu16(v0);
                    v1 = gelu16(v1);
                }
                _mm512_mask_storeu_ps(out.add(i * o), e.masks.0, v0);
                _mm512_mask_storeu_ps(out.add(i * o + 16), e.masks.1, v1);
            }
        }
    }
}
