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
//!
//! # int8 weights where the CPU has VNNI
//!
//! At [`Precision::Fast`] (the default) on a CPU with AVX512_VNNI, each weight is stored as
//! int8 with one scale an output (its largest weight maps to 127), packed four inputs to a
//! 32-bit lane (`[blocks][inputs / 4][BLOCK][4]`). Each product rounds its activations to int8
//! with one scale a row (chosen from that row, so no calibration data is needed; stored as
//! unsigned `q + 128`, the form `VPDPBUSD` multiplies, the 128 taken back out by a per-output
//! constant the sums start from), and the tile sums four products a lane an instruction in
//! int32, exact, before scaling back to floats with the bias and GELU fused as above. A
//! quarter of the bytes of float32 weights, and a quarter of the multiply instructions: a
//! query's encoder time on one thread fell about threefold (figures and the quality check in
//! `docs/search.md`).
//!
//! Why int8 and not bfloat16: `VDPBF16PS` (two bfloat16 products a lane) was measured on the
//! machine this was written for at a quarter of `VFMADD`'s instruction rate (0.7-1.1 against
//! 3.3-5.0 billion a second on one core, 16 independent sums), so a bfloat16 kernel ran a
//! query slower than the float32 one (p50 7.0 against 5.9 ms), while `VPDPBUSD` runs at the
//! rate of `VFMADD` with four products a lane.

use std::ops::Range;

#[cfg(target_arch = "x86_64")]
use crate::kernels::avx512;
use crate::kernels::{gelu, gemm};

mod int8;

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

/// How a layer's weights are stored and multiplied, chosen once at load ([`Kernel::detect`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// float32 weights, the AVX-512 kernel where the CPU has AVX-512F, else `matrixmultiply`.
    F32,
    /// int8 weights (a scale an output) times int8 activations (a scale a row, chosen per
    /// product), summed in int32 by `VPDPBUSD` (four products a lane an instruction), where
    /// the CPU has AVX512_VNNI (see [`Kernel::detect`]).
    Int8,
}

impl Kernel {
    /// The fastest kernel this CPU runs at `precision`.
    pub(crate) fn detect(precision: Precision) -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            choose(precision, avx512(), vnni_detected())
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            choose(precision, false, false)
        }
    }
}

/// The precision a transformer's linear layers run at
/// ([`crate::Transformer::load_with`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// int8 weights and activations summed in int32 where the CPU has AVX-512 with VNNI (a
    /// quarter of the weight bytes, four products an instruction; a query's vector has a
    /// cosine of 0.99 or more with the float32 one, see `docs/search.md`), float32 elsewhere.
    #[default]
    Fast,
    /// float32 everywhere (the reference).
    F32,
}

/// The kernel for `precision` on a CPU with or without AVX-512 (F and BW) and AVX512_VNNI.
fn choose(precision: Precision, avx512: bool, vnni: bool) -> Kernel {
    if precision == Precision::Fast && avx512 && vnni {
        Kernel::Int8
    } else {
        Kernel::F32
    }
}

/// A packed weight (outputs past `outputs` in the last block are zero).
enum Packed {
    /// `[blocks][inputs][BLOCK]` floats.
    F32(Vec<f32>),
    /// `[blocks][inputs / 4][BLOCK][4]` int8 (each output's four consecutive inputs side by
    /// side, what `VPDPBUSD` reads; the last quad padded with zeros), each output scaled by
    /// `scale` (its largest weight is 127), and each output's sum of its int8 weights times
    /// -128 (`offset`: the activations are stored as unsigned `q + 128`, and this takes the
    /// 128 back out).
    Int8 {
        weights: Vec<i8>,
        scale: Vec<f32>,
        offset: Vec<i32>,
    },
}

/// A linear layer with its weight packed (see the module documentation).
pub(crate) struct Linear {
    packed: Packed,
    bias: Vec<f32>,
    pub(crate) inputs: usize,
    pub(crate) outputs: usize,
}

impl Linear {
    /// The layer of `weight` (`[outputs, inputs]` row-major, as in the model file) and `bias`
    /// (`[outputs]`), packed for `kernel`.
    pub(crate) fn new(
        weight: &[f32],
        bias: Vec<f32>,
        outputs: usize,
        inputs: usize,
        kernel: Kernel,
    ) -> Linear {
        assert_eq!(weight.len(), outputs * inputs, "weight shape");
        assert_eq!(bias.len(), outputs, "bias shape");
        let blocks = outputs.div_ceil(BLOCK);
        let packed = match kernel {
            Kernel::F32 => {
                let mut packed = vec![0.0f32; blocks * inputs * BLOCK];
                for (o, row) in weight.chunks_exact(inputs.max(1)).enumerate() {
                    let (b, j) = (o / BLOCK, o % BLOCK);
                    let block = &mut packed[b * inputs * BLOCK..(b + 1) * inputs * BLOCK];
                    for (k, w) in row.iter().enumerate() {
                        block[k * BLOCK + j] = *w;
                    }
                }
                Packed::F32(packed)
            }
            Kernel::Int8 => Packed::int8(weight, outputs, inputs),
        };
        Linear {
            packed,
            bias,
            inputs,
            outputs,
        }
    }

    /// The kernel the layer's weights are packed for.
    #[cfg(test)]
    pub(crate) fn kernel(&self) -> Kernel {
        match self.packed {
            Packed::F32(_) => Kernel::F32,
            Packed::Int8 { .. } => Kernel::Int8,
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
        match &self.packed {
            Packed::F32(packed) => {
                #[cfg(target_arch = "x86_64")]
                if avx512() {
                    // SAFETY: the CPU has AVX-512F (checked above), the only feature the
                    // function is compiled for; the asserts above are the shapes it relies on.
                    unsafe { x86::apply(self, packed, x, n, out, act, blocks) };
                    return;
                }
                self.apply_portable(packed, x, n, out, act, blocks);
            }
            Packed::Int8 {
                weights,
                scale,
                offset,
            } => self.apply_int8((weights, scale, offset), x, n, out, act, blocks),
        }
    }

    /// The kernel without AVX-512: one `matrixmultiply` product a block.
    fn apply_portable(
        &self,
        packed: &[f32],
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
                (&packed[b * k * BLOCK..(b + 1) * k * BLOCK], BLOCK, 1),
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

/// True if the CPU has AVX512_VNNI, AVX-512BW and AVX-512VL (what the int8 kernel needs with
/// AVX-512F).
#[cfg(target_arch = "x86_64")]
fn vnni_detected() -> bool {
    std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("avx512vnni")
}

/// The masks of a block's first `width` outputs (at most [`BLOCK`]) in its two 16-lane halves:
/// what the AVX-512 kernels load and store of a block that may be cut short at the last output.
#[cfg(target_arch = "x86_64")]
fn lane_masks(width: usize) -> (u16, u16) {
    let mask = if width >= BLOCK {
        u32::MAX
    } else {
        (1u32 << width) - 1
    };
    (mask as u16, (mask >> 16) as u16)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m512, _MM_HINT_T1, _mm_prefetch, _mm512_abs_ps, _mm512_add_ps, _mm512_and_si512,
        _mm512_castps_si512, _mm512_castsi512_ps, _mm512_div_ps, _mm512_fmadd_ps, _mm512_loadu_ps,
        _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_mul_ps, _mm512_or_si512,
        _mm512_set1_epi32, _mm512_set1_ps, _mm512_sub_ps,
    };
    use std::ops::Range;

    use super::{Activation, BLOCK, Linear, lane_masks};

    /// Rows of a tile: 8 rows x 32 outputs is 16 accumulator registers of the 32.
    pub(super) const ROWS: usize = 8;

    /// [`Linear::apply_blocks`] with AVX-512.
    ///
    /// # Safety
    ///
    /// The CPU has AVX-512F; `packed` is `l`'s float32 weight, `x` holds `n * l.inputs`
    /// floats, `out` `n * l.outputs`, and `blocks` are blocks of `l`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn apply(
        l: &Linear,
        packed: &[f32],
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
            let masks = lane_masks(width);
            // SAFETY: (the whole block) the panel is `k * BLOCK` floats of `packed`, which holds
            // `blocks * k * BLOCK`; the bias loads and the stores are masked to the `width`
            // outputs of this block, which exist; rows `r..r + R` are below `n`.
            unsafe {
                let panel = packed.as_ptr().add(b * k * BLOCK);
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
    pub(super) unsafe fn prefetch(panel: *const f32, k: usize) {
        for j in 0..k * BLOCK / 16 {
            // SAFETY: a prefetch reads nothing the program sees; the address is in the panel.
            unsafe { _mm_prefetch::<_MM_HINT_T1>(panel.add(j * 16).cast()) };
        }
    }

    /// [`crate::kernels::gelu`] on 16 lanes: the same Abramowitz and Stegun `erf`, with
    /// [`crate::kernels::exp16`] for `exp`.
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
        let e = crate::kernels::exp16(_mm512_sub_ps(_mm512_set1_ps(0.0), _mm512_mul_ps(a, a)));
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
}

#[cfg(test)]
mod tests;
