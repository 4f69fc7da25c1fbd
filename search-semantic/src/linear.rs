//! The transformer's linear layers, `y = x W^T + b` (optionally followed by GELU), on weights
//! packed at load for the product.
//!
//! # Why packed weights and a kernel of our own
//!
//! A query is a few dozen tokens, so each product is a short, wide one: 10-80 rows of
//! activations against a weight of 384 x 384 to 1,536 x 384. Every weight is read once a query,
//! 87 MiB for all-MiniLM-L6-v2, and that reading is most of a query's time. `matrixmultiply`'s
//! `sgemm` copies ("packs") the weight into its own panel layout on every call, so a query read
//! the weights and wrote them again. Here the weight is packed once, at load, in the layout the
//! kernel reads: column blocks of [`BLOCK`] outputs, each stored `[inputs][BLOCK]`, so a block is
//! one sequential stream the kernel reads once for all the rows.
//!
//! With AVX-512 (detected at run time) the kernel is a tile of up to 8 rows by 32 outputs kept
//! in 16 registers, the bias as their start and GELU applied to the registers before the store
//! (no second pass over the activations). Elsewhere each block is one `matrixmultiply` product
//! over the same packed layout ([`crate::kernels::gemm`] reads it through strides), then the
//! scalar GELU: the same result to float rounding.

use std::ops::Range;

use crate::kernels::{gelu, gemm};

/// Outputs in one column block of a packed weight.
pub(crate) const BLOCK: usize = 32;

/// What follows the product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Activation {
    /// Nothing: `x W^T + b`.
    None,
    /// BERT's GELU (`x Φ(x)`, erf-based) of `x W^T + b`.
    Gelu,
}

/// A linear layer with its weight packed (see the module documentation).
pub(crate) struct Linear {
    /// `[blocks][inputs][BLOCK]`; outputs past `outputs` in the last block are zero.
    packed: Vec<f32>,
    bias: Vec<f32>,
    pub(crate) inputs: usize,
    pub(crate) outputs: usize,
}

impl Linear {
    /// The layer of `weight` (`[outputs, inputs]` row-major, as in the model file) and `bias`
    /// (`[outputs]`).
    pub(crate) fn new(weight: &[f32], bias: Vec<f32>, outputs: usize, inputs: usize) -> Linear {
        assert_eq!(weight.len(), outputs * inputs, "weight shape");
        assert_eq!(bias.len(), outputs, "bias shape");
        let blocks = outputs.div_ceil(BLOCK);
        let mut packed = vec![0.0f32; blocks * inputs * BLOCK];
        for (o, row) in weight.chunks_exact(inputs.max(1)).enumerate() {
            let (b, j) = (o / BLOCK, o % BLOCK);
            let block = &mut packed[b * inputs * BLOCK..(b + 1) * inputs * BLOCK];
            for (k, w) in row.iter().enumerate() {
                block[k * BLOCK + j] = *w;
            }
        }
        Linear {
            packed,
            bias,
            inputs,
            outputs,
        }
    }

    /// The number of column blocks (what [`Linear::apply`]'s `blocks` ranges over).
    pub(crate) fn blocks(&self) -> usize {
        self.outputs.div_ceil(BLOCK)
    }

    /// `out = act(x W^T + b)` for the `n` rows of `x` (`[n, inputs]`) into `out` (`[n,
    /// outputs]`), all column blocks.
    pub(crate) fn apply(&self, x: &[f32], n: usize, out: &mut [f32], act: Activation) {
        self.apply_blocks(x, n, out, act, 0..self.blocks());
    }

    /// [`Linear::apply`] for the outputs of column blocks `blocks` only; the other columns of
    /// `out` are left as they are.
    pub(crate) fn apply_blocks(
        &self,
        x: &[f32],
        n: usize,
        out: &mut [f32],
        act: Activation,
        blocks: Range<usize>,
    ) {
        assert!(x.len() >= n * self.inputs, "x shape");
        assert!(out.len() >= n * self.outputs, "out shape");
        assert!(blocks.end <= self.blocks(), "blocks");
        if n == 0 || self.inputs == 0 {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if avx512() {
            // SAFETY: the CPU has AVX-512F (checked above), the only feature the function is
            // compiled for; the asserts above are the shapes it relies on.
            unsafe { x86::apply(self, x, n, out, act, blocks) };
            return;
        }
        self.apply_portable(x, n, out, act, blocks);
    }

    /// The kernel without AVX-512: one `matrixmultiply` product a block.
    fn apply_portable(
        &self,
        x: &[f32],
        n: usize,
        out: &mut [f32],
        act: Activation,
        blocks: Range<usize>,
    ) {
        let (k, o) = (self.inputs, self.outputs);
        for b in blocks {
            let col = b * BLOCK;
            let width = (o - col).min(BLOCK);
            for r in out[..n * o].chunks_exact_mut(o) {
                r[col..col + width].copy_from_slice(&self.bias[col..col + width]);
            }
            gemm(
                (n, k, width),
                1.0,
                (x, k, 1),
                (&self.packed[b * k * BLOCK..(b + 1) * k * BLOCK], BLOCK, 1),
                1.0,
                (&mut out[col..], o, 1),
            );
            if act == Activation::Gelu {
                for r in out[..n * o].chunks_exact_mut(o) {
                    r[col..col + width].iter_mut().for_each(|v| *v = gelu(*v));
                }
            }
        }
    }
}

/// True if the AVX-512 kernel runs (the CPU has AVX-512F, and no test asked for the portable
/// one on this thread).
#[cfg(target_arch = "x86_64")]
fn avx512() -> bool {
    #[cfg(test)]
    if PORTABLE_ONLY.with(std::cell::Cell::get) {
        return false;
    }
    std::arch::is_x86_feature_detected!("avx512f")
}

#[cfg(test)]
thread_local! {
    static PORTABLE_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m512, _MM_HINT_T1, _mm_prefetch, _mm512_abs_ps, _mm512_add_ps, _mm512_and_si512,
        _mm512_castps_si512, _mm512_castsi512_ps, _mm512_div_ps, _mm512_fmadd_ps, _mm512_loadu_ps,
        _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_max_ps, _mm512_mul_ps,
        _mm512_or_si512, _mm512_roundscale_ps, _mm512_scalef_ps, _mm512_set1_epi32, _mm512_set1_ps,
        _mm512_sub_ps,
    };
    use std::ops::Range;

    use super::{Activation, BLOCK, Linear};

    /// Rows of a tile: 8 rows x 32 outputs is 16 accumulator registers of the 32.
    const ROWS: usize = 8;

    /// [`Linear::apply_blocks`] with AVX-512.
    ///
    /// # Safety
    ///
    /// The CPU has AVX-512F; `x` holds `n * l.inputs` floats, `out` `n * l.outputs`, and
    /// `blocks` are blocks of `l`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn apply(
        l: &Linear,
        x: &[f32],
        n: usize,
        out: &mut [f32],
        act: Activation,
        blocks: Range<usize>,
    ) {
        let (k, o) = (l.inputs, l.outputs);
        let gelu = act == Activation::Gelu;
        let end = blocks.end;
        for b in blocks {
            let col = b * BLOCK;
            let width = (o - col).min(BLOCK);
            let mask = if width == BLOCK {
                u32::MAX
            } else {
                (1u32 << width) - 1
            };
            let masks = (mask as u16, (mask >> 16) as u16);
            // SAFETY: (the whole block) the panel is `k * BLOCK` floats of `l.packed`, which holds
            // `blocks * k * BLOCK`; the bias loads and the stores are masked to the `width`
            // outputs of this block, which exist; rows `r..r + R` are below `n`.
            unsafe {
                let panel = l.packed.as_ptr().add(b * k * BLOCK);
                let bias = (
                    _mm512_maskz_loadu_ps(masks.0, l.bias.as_ptr().add(col)),
                    _mm512_maskz_loadu_ps(masks.1, l.bias.as_ptr().add(col + 16)),
                );
                let mut r = 0;
                let xp = x.as_ptr();
                let op = out.as_mut_ptr().add(col);
                // The next block's panel is fetched into L2 while this one's first tile runs
                // (the weights come from memory: without it, the first tile of each block
                // waited for them).
                let next = if b + 1 < end {
                    panel.add(k * BLOCK)
                } else {
                    panel
                };
                if n >= ROWS {
                    tile::<ROWS, true>(xp, k, panel, bias, op, o, masks, gelu, next);
                    r = ROWS;
                } else {
                    prefetch(next, k);
                }
                while r + ROWS <= n {
                    let (xr, or) = (xp.add(r * k), op.add(r * o));
                    tile::<ROWS, false>(xr, k, panel, bias, or, o, masks, gelu, next);
                    r += ROWS;
                }
                let (xr, or) = (xp.add(r * k), op.add(r * o));
                match n - r {
                    1 => tile::<1, false>(xr, k, panel, bias, or, o, masks, gelu, next),
                    2 => tile::<2, false>(xr, k, panel, bias, or, o, masks, gelu, next),
                    3 => tile::<3, false>(xr, k, panel, bias, or, o, masks, gelu, next),
                    4 => tile::<4, false>(xr, k, panel, bias, or, o, masks, gelu, next),
                    5 => tile::<5, false>(xr, k, panel, bias, or, o, masks, gelu, next),
                    6 => tile::<6, false>(xr, k, panel, bias, or, o, masks, gelu, next),
                    7 => tile::<7, false>(xr, k, panel, bias, or, o, masks, gelu, next),
                    _ => {}
                }
            }
        }
    }

    /// `R` rows by one block: `out[i][..32] = act(bias + sum_k x[i][k] panel[k][..32])`.
    ///
    /// # Safety
    ///
    /// AVX-512F; `x` points at `R` rows of `k` floats (stride `k`), `panel` at `k * BLOCK`
    /// floats, `out` at `R` rows of stride `o` whose masked lanes may be written.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn tile<const R: usize, const PREFETCH: bool>(
        x: *const f32,
        k: usize,
        panel: *const f32,
        bias: (__m512, __m512),
        out: *mut f32,
        o: usize,
        masks: (u16, u16),
        gelu: bool,
        next: *const f32,
    ) {
        let mut acc0 = [bias.0; R];
        let mut acc1 = [bias.1; R];
        // SAFETY: the caller's contract: every address below is inside `x`, `panel`, `out`
        // (prefetches may point anywhere; `next` points at a panel of `k * BLOCK` floats).
        unsafe {
            for j in 0..k {
                if PREFETCH {
                    _mm_prefetch::<_MM_HINT_T1>(next.add(j * BLOCK).cast());
                    _mm_prefetch::<_MM_HINT_T1>(next.add(j * BLOCK + 16).cast());
                }
                let w0 = _mm512_loadu_ps(panel.add(j * BLOCK));
                let w1 = _mm512_loadu_ps(panel.add(j * BLOCK + 16));
                for i in 0..R {
                    let a = _mm512_set1_ps(*x.add(i * k + j));
                    acc0[i] = _mm512_fmadd_ps(a, w0, acc0[i]);
                    acc1[i] = _mm512_fmadd_ps(a, w1, acc1[i]);
                }
            }
            for i in 0..R {
                let (mut v0, mut v1) = (acc0[i], acc1[i]);
                if gelu {
                    v0 = gelu16(v0);
                    v1 = gelu16(v1);
                }
                _mm512_mask_storeu_ps(out.add(i * o), masks.0, v0);
                _mm512_mask_storeu_ps(out.add(i * o + 16), masks.1, v1);
            }
        }
    }

    /// Fetches the `k * BLOCK` floats at `panel` into L2.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn prefetch(panel: *const f32, k: usize) {
        for j in 0..k * BLOCK / 16 {
            // SAFETY: a prefetch reads nothing the program sees; the address is in the panel.
            unsafe { _mm_prefetch::<_MM_HINT_T1>(panel.add(j * 16).cast()) };
        }
    }

    /// [`crate::kernels::gelu`] on 16 lanes: the same Abramowitz and Stegun `erf`, with
    /// [`exp16`] for `exp`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) fn gelu16(x: __m512) -> __m512 {
        let one = _mm512_set1_ps(1.0);
        let z = _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::FRAC_1_SQRT_2));
        let a = _mm512_abs_ps(z);
        let t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.327_591_1), a, one));
        let mut p = _mm512_set1_ps(1.061_405_4);
        for c in [-1.453_152_1f32, 1.421_413_8, -0.284_496_72, 0.254_829_6] {
            p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(c));
        }
        let e = exp16(_mm512_sub_ps(_mm512_set1_ps(0.0), _mm512_mul_ps(a, a)));
        let y = _mm512_sub_ps(one, _mm512_mul_ps(_mm512_mul_ps(p, t), e));
        // erf = y with z's sign.
        let sign = _mm512_set1_epi32(i32::MIN);
        let erf = _mm512_castsi512_ps(_mm512_or_si512(
            _mm512_castps_si512(y),
            _mm512_and_si512(_mm512_castps_si512(z), sign),
        ));
        _mm512_mul_ps(
            _mm512_mul_ps(_mm512_set1_ps(0.5), x),
            _mm512_add_ps(one, erf),
        )
    }

    /// `exp(v)` on 16 lanes for `v <= 0`: `v = n ln 2 + g` with `n` a whole number and `|g| <=
    /// ln 2 / 2`, `exp(g)` by its Taylor series to `g^7` (error below 1e-8), times `2^n`
    /// (`vscalefps`, which gives 0 where that underflows).
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) fn exp16(v: __m512) -> __m512 {
        let v = _mm512_max_ps(v, _mm512_set1_ps(-104.0));
        let n =
            _mm512_roundscale_ps::<0>(_mm512_mul_ps(v, _mm512_set1_ps(std::f32::consts::LOG2_E)));
        // ln 2 in two parts, so that n * ln2_hi is exact.
        let g = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693_145_75), v);
        let g = _mm512_fmadd_ps(n, _mm512_set1_ps(-1.428_606_8e-6), g);
        let mut p = _mm512_set1_ps(1.0 / 5040.0);
        for c in [
            1.0f32 / 720.0,
            1.0 / 120.0,
            1.0 / 24.0,
            1.0 / 6.0,
            0.5,
            1.0,
            1.0,
        ] {
            p = _mm512_fmadd_ps(p, g, _mm512_set1_ps(c));
        }
        _mm512_scalef_ps(p, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `act(x W^T + b)` the plain way, in f64.
    fn reference(
        w: &[f32],
        b: &[f32],
        x: &[f32],
        n: usize,
        o: usize,
        k: usize,
        act: Activation,
    ) -> Vec<f32> {
        let mut out = vec![0.0f32; n * o];
        for r in 0..n {
            for c in 0..o {
                let mut s = f64::from(b[c]);
                for j in 0..k {
                    s += f64::from(x[r * k + j]) * f64::from(w[c * k + j]);
                }
                let v = s as f32;
                out[r * o + c] = if act == Activation::Gelu { gelu(v) } else { v };
            }
        }
        out
    }

    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len)
            .map(|i| ((((i * 7919 + seed * 104_729) % 2003) as f32) / 1001.5 - 1.0) * 1.5)
            .collect()
    }

    fn check(n: usize, o: usize, k: usize, act: Activation) {
        let (w, b, x) = (values(o * k, 1), values(o, 2), values(n * k, 3));
        let l = Linear::new(&w, b.clone(), o, k);
        let want = reference(&w, &b, &x, n, o, k, act);
        for portable in [false, true] {
            PORTABLE_ONLY.with(|p| p.set(portable));
            let mut out = vec![f32::NAN; n * o];
            l.apply(&x, n, &mut out, act);
            for (i, (g, w)) in out.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                    "{n}x{k} -> {o} {act:?} portable {portable}: [{i}] {g} != {w}"
                );
            }
        }
        PORTABLE_ONLY.with(|p| p.set(false));
    }

    #[test]
    fn the_packed_product_matches_the_plain_one_for_every_row_count_and_a_partial_block() {
        for n in [1, 2, 7, 8, 9, 17, 30] {
            check(n, 70, 19, Activation::None);
        }
        check(13, 64, 40, Activation::Gelu);
        check(3, 5, 3, Activation::Gelu);
    }

    #[test]
    fn only_the_named_blocks_are_written() {
        let (n, o, k) = (3, 96, 8);
        let l = Linear::new(&values(o * k, 4), values(o, 5), o, k);
        let x = values(n * k, 6);
        let mut all = vec![0.0f32; n * o];
        l.apply(&x, n, &mut all, Activation::None);
        let mut part = vec![7.0f32; n * o];
        l.apply_blocks(&x, n, &mut part, Activation::None, 1..2);
        for r in 0..n {
            for c in 0..o {
                let want = if (32..64).contains(&c) {
                    all[r * o + c]
                } else {
                    7.0
                };
                assert_eq!(part[r * o + c], want, "row {r} column {c}");
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_vector_gelu_and_exp_match_the_scalar_ones() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        use std::arch::x86_64::{_mm512_loadu_ps, _mm512_storeu_ps};
        for start in [-12.0f32, -3.0, -0.5, 0.0, 2.5] {
            let xs: Vec<f32> = (0..16).map(|i| start + i as f32 * 0.37).collect();
            let mut g = [0.0f32; 16];
            let mut e = [0.0f32; 16];
            // SAFETY: AVX-512F was detected; each load and store is of 16 floats of 16.
            unsafe {
                let v = _mm512_loadu_ps(xs.as_ptr());
                _mm512_storeu_ps(g.as_mut_ptr(), x86::gelu16(v));
                _mm512_storeu_ps(
                    e.as_mut_ptr(),
                    x86::exp16(std::arch::x86_64::_mm512_min_ps(
                        v,
                        std::arch::x86_64::_mm512_set1_ps(0.0),
                    )),
                );
            }
            for (i, x) in xs.iter().enumerate() {
                assert!(
                    (g[i] - gelu(*x)).abs() < 1e-6,
                    "gelu({x}) {} != {}",
                    g[i],
                    gelu(*x)
                );
                let want = x.min(0.0).exp();
                assert!(
                    (e[i] - want).abs() <= 5e-7 * want,
                    "exp({x}) {} != {want}",
                    e[i]
                );
            }
        }
    }
}
