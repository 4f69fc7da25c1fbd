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
//! quarter of the bytes of float32 weights, and a quarter of the instructions: a query's
//! encoder time fell by about 2.5x (figures and the quality check in `docs/search.md`).
//!
//! Why int8 and not bfloat16: `VDPBF16PS` (two bfloat16 products a lane) was measured on the
//! machine this was written for at a quarter of `VFMADD`'s instruction rate (0.7-1.1 against
//! 3.3-5.0 billion a second on one core, 16 independent sums), so a bfloat16 kernel ran a
//! query slower than the float32 one (p50 7.0 against 5.9 ms), while `VPDPBUSD` runs at the
//! rate of `VFMADD` with four products a lane.

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
            Kernel::Int8 => {
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
            } => {
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
                    // SAFETY: the CPU has AVX-512F, AVX-512BW and AVX512_VNNI (checked
                    // above), the features the function is compiled for; the asserts above and
                    // `quantize` give the shapes it relies on.
                    unsafe { x86::apply_int8(self, &q, n, out, act, blocks) };
                    return;
                }
                self.apply_int8_portable(&q, n, out, act, blocks);
            }
        }
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

/// True if the AVX-512 kernel runs (the CPU has AVX-512F, and no test asked for the portable
/// one on this thread).
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx512() -> bool {
    #[cfg(test)]
    if PORTABLE_ONLY.with(std::cell::Cell::get) {
        return false;
    }
    std::arch::is_x86_feature_detected!("avx512f")
}

/// [`crate::kernels::softmax`] on 16 lanes at a time.
///
/// # Safety
///
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn softmax16(row: &mut [f32]) {
    use std::arch::x86_64::{
        _mm512_add_ps, _mm512_mask_loadu_ps, _mm512_mask_storeu_ps, _mm512_maskz_mov_ps,
        _mm512_max_ps, _mm512_mul_ps, _mm512_reduce_add_ps, _mm512_reduce_max_ps, _mm512_set1_ps,
        _mm512_sub_ps,
    };
    let n = row.len();
    let p = row.as_mut_ptr();
    let mask = |j: usize| {
        if n - j >= 16 {
            u16::MAX
        } else {
            (1u16 << (n - j)) - 1
        }
    };
    // SAFETY: every load and store is masked to the row's `n` floats.
    unsafe {
        let low = _mm512_set1_ps(f32::NEG_INFINITY);
        let mut m = low;
        let mut j = 0;
        while j < n {
            m = _mm512_max_ps(m, _mm512_mask_loadu_ps(low, mask(j), p.add(j)));
            j += 16;
        }
        let max = _mm512_set1_ps(_mm512_reduce_max_ps(m));
        let mut sum = _mm512_set1_ps(0.0);
        let mut j = 0;
        while j < n {
            let k = mask(j);
            let v = _mm512_mask_loadu_ps(max, k, p.add(j));
            let e = _mm512_maskz_mov_ps(k, x86::exp16(_mm512_sub_ps(v, max)));
            sum = _mm512_add_ps(sum, e);
            _mm512_mask_storeu_ps(p.add(j), k, e);
            j += 16;
        }
        let inv = _mm512_set1_ps(1.0 / _mm512_reduce_add_ps(sum));
        let mut j = 0;
        while j < n {
            let k = mask(j);
            let v = _mm512_mask_loadu_ps(max, k, p.add(j));
            _mm512_mask_storeu_ps(p.add(j), k, _mm512_mul_ps(v, inv));
            j += 16;
        }
    }
}

/// True if the CPU has AVX512_VNNI and AVX-512BW (what the int8 kernel needs with AVX-512F).
#[cfg(target_arch = "x86_64")]
fn vnni_detected() -> bool {
    std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vnni")
}

/// True if the int8 kernel runs (the CPU has what it needs, and no test asked for the portable
/// one on this thread).
#[cfg(target_arch = "x86_64")]
fn vnni() -> bool {
    avx512() && vnni_detected()
}

/// An int8 layer's operands for one product.
struct Quantized<'a> {
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
fn quantize(x: &[f32], n: usize, k: usize) -> (Vec<u32>, Vec<f32>) {
    let quads = k.div_ceil(4);
    #[cfg(target_arch = "x86_64")]
    if vnni() {
        let mut words = vec![0x8080_8080u32; n * quads];
        let mut scales = vec![0.0f32; n];
        assert!(x.len() >= n * k, "x shape");
        // SAFETY: the CPU has AVX-512F and AVX-512BW (`vnni` checked them); `x` holds `n`
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

#[cfg(test)]
thread_local! {
    static PORTABLE_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m512, __m512i, _MM_HINT_T1, _mm_mask_storeu_epi8, _mm_prefetch, _mm512_abs_ps,
        _mm512_add_epi32, _mm512_add_ps, _mm512_and_si512, _mm512_castps_si512,
        _mm512_castsi512_ps, _mm512_cvtepi32_epi8, _mm512_cvtepi32_ps, _mm512_cvtps_epi32,
        _mm512_div_ps, _mm512_dpbusd_epi32, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_loadu_si512,
        _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_max_epi32, _mm512_max_ps,
        _mm512_min_epi32, _mm512_mul_ps, _mm512_or_si512, _mm512_reduce_max_ps,
        _mm512_roundscale_ps, _mm512_scalef_ps, _mm512_set1_epi32, _mm512_set1_ps, _mm512_sub_ps,
    };
    use std::ops::Range;

    use super::{Activation, BLOCK, Linear, Quantized};

    /// Rows of a tile: 8 rows x 32 outputs is 16 accumulator registers of the 32.
    const ROWS: usize = 8;

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
            let mask = if width == BLOCK {
                u32::MAX
            } else {
                (1u32 << width) - 1
            };
            let masks = (mask as u16, (mask >> 16) as u16);
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
            let mask = if width == BLOCK {
                u32::MAX
            } else {
                (1u32 << width) - 1
            };
            let masks = (mask as u16, (mask >> 16) as u16);
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
        let l = Linear::new(&w, b.clone(), o, k, Kernel::F32);
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

    /// The int8 kernel (VNNI where the CPU has it, and the portable loop): the same integer
    /// sums, so the same outputs to float rounding; and near the float32 product (each
    /// weight and activation off by at most half a step of its row's 255).
    fn check_int8(n: usize, o: usize, k: usize, act: Activation) {
        let (w, b, x) = (values(o * k, 1), values(o, 2), values(n * k, 3));
        let l = Linear::new(&w, b.clone(), o, k, Kernel::Int8);
        assert_eq!(l.kernel(), Kernel::Int8);
        let exact = reference(&w, &b, &x, n, o, k, act);
        let mut outs = Vec::new();
        for portable in [true, false] {
            PORTABLE_ONLY.with(|p| p.set(portable));
            let mut out = vec![f32::NAN; n * o];
            l.apply(&x, n, &mut out, act);
            for (i, (g, e)) in out.iter().zip(&exact).enumerate() {
                // |x|, |w| <= 1.5: each product off by about 1.5 * 1.5 / 127 at most.
                let bound = 0.03 * (k as f32).sqrt() + 0.002 * k as f32;
                assert!(
                    (g - e).abs() <= bound,
                    "int8 {n}x{k} -> {o} {act:?} portable {portable}: [{i}] {g} far from the \
                     float32 {e}"
                );
            }
            outs.push(out);
        }
        for (i, (p, v)) in outs[0].iter().zip(&outs[1]).enumerate() {
            assert!(
                (p - v).abs() <= 1e-5 * (1.0 + p.abs()),
                "int8 {n}x{k} -> {o} {act:?}: [{i}] vector {v} != portable {p}"
            );
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
    fn the_int8_product_matches_the_portable_one_and_is_near_float32_on_odd_shapes() {
        for n in [1, 2, 7, 8, 9, 17, 30] {
            check_int8(n, 70, 19, Activation::None);
        }
        check_int8(13, 64, 40, Activation::Gelu);
        check_int8(3, 5, 3, Activation::Gelu);
        check_int8(9, 33, 1, Activation::None);
        check_int8(11, 100, 385, Activation::Gelu);
    }

    #[test]
    fn the_vector_quantizer_gives_the_scalar_ones_bytes_and_scales() {
        for (n, k) in [(1, 1), (3, 5), (2, 16), (4, 17), (5, 385)] {
            let mut x = values(n * k, 9);
            x[0] = 0.0;
            if k > 2 {
                // A tie: 0.5 of a step rounds to even either way.
                x[1] = x[2] / 254.0;
            }
            let mut got = Vec::new();
            for portable in [true, false] {
                PORTABLE_ONLY.with(|p| p.set(portable));
                got.push(quantize(&x, n, k));
            }
            PORTABLE_ONLY.with(|p| p.set(false));
            assert_eq!(got[0], got[1], "{n} rows of {k}");
            let quads = k.div_ceil(4);
            for r in 0..n {
                let bytes: Vec<u8> = got[0].0[r * quads..(r + 1) * quads]
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .collect();
                let max = x[r * k..(r + 1) * k]
                    .iter()
                    .fold(0.0f32, |m, v| m.max(v.abs()));
                assert!(bytes[k..].iter().all(|b| *b == 128), "padding of row {r}");
                if max == 0.0 {
                    assert_eq!(got[0].1[r], 1.0, "an all-zero row's scale");
                    assert!(bytes.iter().all(|b| *b == 128), "an all-zero row");
                } else {
                    assert_eq!(got[0].1[r], max / 127.0, "row {r}'s scale");
                    let ends = bytes[..k].iter().filter(|b| **b == 1 || **b == 255);
                    assert!(ends.count() >= 1, "row {r} reaches 127");
                }
            }
        }
    }

    #[test]
    fn the_vector_softmax_matches_the_scalar_one() {
        for n in [1, 5, 16, 37] {
            let row: Vec<f32> = values(n, 10).iter().map(|v| v * 9.0).collect();
            let mut got = Vec::new();
            for portable in [true, false] {
                PORTABLE_ONLY.with(|p| p.set(portable));
                let mut r = row.clone();
                crate::kernels::softmax(&mut r);
                got.push(r);
            }
            PORTABLE_ONLY.with(|p| p.set(false));
            for (i, (s, v)) in got[0].iter().zip(&got[1]).enumerate() {
                assert!((s - v).abs() <= 1e-6 * (1.0 + s), "{n}: [{i}] {v} != {s}");
            }
        }
    }

    #[test]
    fn a_row_of_zeros_and_a_zero_weight_row_give_the_bias() {
        let (n, o, k) = (2, 3, 6);
        let mut w = values(o * k, 7);
        w[k..2 * k].fill(0.0);
        let b = vec![0.5, -0.25, 2.0];
        let l = Linear::new(&w, b.clone(), o, k, Kernel::Int8);
        let mut x = values(n * k, 8);
        x[..k].fill(0.0);
        let mut out = vec![f32::NAN; n * o];
        l.apply(&x, n, &mut out, Activation::None);
        assert_eq!(&out[..o], &b[..], "a zero row");
        assert_eq!(out[o + 1], b[1], "a zero weight row");
    }

    #[test]
    fn int8_is_chosen_only_where_the_cpu_has_vnni_and_fast_precision_is_asked() {
        assert_eq!(choose(Precision::Fast, true, true), Kernel::Int8);
        assert_eq!(choose(Precision::Fast, true, false), Kernel::F32);
        assert_eq!(choose(Precision::Fast, false, true), Kernel::F32);
        assert_eq!(choose(Precision::Fast, false, false), Kernel::F32);
        assert_eq!(choose(Precision::F32, true, true), Kernel::F32);
        assert_eq!(Kernel::detect(Precision::F32), Kernel::F32);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            Kernel::detect(Precision::Fast) == Kernel::Int8,
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vnni")
        );
    }

    #[test]
    fn only_the_named_blocks_are_written() {
        let (n, o, k) = (3, 96, 8);
        let l = Linear::new(&values(o * k, 4), values(o, 5), o, k, Kernel::F32);
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
