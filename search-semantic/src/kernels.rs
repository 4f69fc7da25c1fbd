//! The numeric kernels of the BERT encoder ([`crate::bert`]): the strided matrix product on
//! `matrixmultiply`'s `sgemm` (the one `unsafe` call, its bounds checked first), softmax and
//! GELU. Kept apart from the model code so that each can be tested against known values.

/// `c = alpha a b + beta c` with `(m, k, n)` the sizes and each matrix given as `(slice, row
/// stride, column stride)`; panics (a bug here, not bad input) if a matrix does not fit its
/// slice.
pub(crate) fn gemm(
    (m, k, n): (usize, usize, usize),
    alpha: f32,
    a: (&[f32], usize, usize),
    b: (&[f32], usize, usize),
    beta: f32,
    c: (&mut [f32], usize, usize),
) {
    if m == 0 || n == 0 {
        return;
    }
    let last = |rows: usize, cols: usize, rs: usize, cs: usize| {
        (rows.max(1) - 1) * rs + (cols.max(1) - 1) * cs
    };
    assert!(
        k == 0 || last(m, k, a.1, a.2) < a.0.len(),
        "A out of bounds"
    );
    assert!(
        k == 0 || last(k, n, b.1, b.2) < b.0.len(),
        "B out of bounds"
    );
    assert!(last(m, n, c.1, c.2) < c.0.len(), "C out of bounds");
    assert!(c.1 >= n * c.2 && c.2 >= 1, "C's elements must not alias");
    // SAFETY: the asserts above keep every element of A (m x k), B (k x n) and C (m x n), as
    // addressed through their strides, inside their slices; C's strides do not alias (each
    // row starts past the previous row's last element); `c` is borrowed mutably, so it
    // overlaps neither `a` nor `b`.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            a.0.as_ptr(),
            a.1 as isize,
            a.2 as isize,
            b.0.as_ptr(),
            b.1 as isize,
            b.2 as isize,
            beta,
            c.0.as_mut_ptr(),
            c.1 as isize,
            c.2 as isize,
        );
    }
}

/// Softmax of one row, in place (shifted by the row's maximum, so no `exp` overflows); with
/// AVX-512, 16 lanes at a time with the kernel's vector `exp` (the same to 5e-7 of each value).
pub(crate) fn softmax(row: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if avx512() {
        // SAFETY: the CPU has AVX-512F, the feature the function is compiled for.
        unsafe { softmax16(row) };
        return;
    }
    let max = row.iter().fold(f32::NEG_INFINITY, |a, b| a.max(*b));
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in row.iter_mut() {
        *v /= sum;
    }
}

/// BERT's GELU, `x Φ(x)`, with `erf` by Abramowitz and Stegun 7.1.26 (error below 1.5e-7; the
/// standard library has no `erf`).
pub(crate) fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The error function (see [`gelu`]).
pub(crate) fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let y = 1.0
        - (((((1.061_405_4 * t - 1.453_152_1) * t) + 1.421_413_8) * t - 0.284_496_72) * t
            + 0.254_829_6)
            * t
            * (-a * a).exp();
    y.copysign(x)
}

/// True if the AVX-512 kernels run (the CPU has AVX-512F, and no test asked for the portable
/// ones on this thread).
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx512() -> bool {
    #[cfg(test)]
    if PORTABLE_ONLY.with(std::cell::Cell::get) {
        return false;
    }
    std::arch::is_x86_feature_detected!("avx512f")
}

/// [`softmax`] on 16 lanes at a time.
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
            let e = _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(v, max)));
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

#[cfg(test)]
thread_local! {
    /// Set by a test to run the portable paths on this thread.
    pub(crate) static PORTABLE_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `exp(v)` on 16 lanes for `v <= 0`: `v = n ln 2 + g` with `n` a whole number and `|g| <=
/// ln 2 / 2`, `exp(g)` by its Taylor series to `g^7` (error below 1e-8), times `2^n`
/// (`vscalefps`, which gives 0 where that underflows).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn exp16(v: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::{
        _mm512_fmadd_ps, _mm512_max_ps, _mm512_mul_ps, _mm512_roundscale_ps, _mm512_scalef_ps,
        _mm512_set1_ps,
    };
    let v = _mm512_max_ps(v, _mm512_set1_ps(-104.0));
    let n = _mm512_roundscale_ps::<0>(_mm512_mul_ps(v, _mm512_set1_ps(std::f32::consts::LOG2_E)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
        ] {
            assert!((erf(x) - want).abs() < 1e-6, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn a_strided_product_matches_the_plain_one() {
        // A is 2 x 3, B^T is stored 2 x 3 (so B is 3 x 2), read through strides.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let bt = [1.0, 0.0, -1.0, 2.0, 1.0, 0.0];
        let mut c = [0.0f32; 4];
        gemm((2, 3, 2), 1.0, (&a, 3, 1), (&bt, 1, 3), 0.0, (&mut c, 2, 1));
        assert_eq!(c, [-2.0, 4.0, -2.0, 13.0]);
    }

    #[test]
    fn softmax_rows_sum_to_one_and_keep_order() {
        let mut r = [1.0f32, 3.0, 2.0];
        softmax(&mut r);
        assert!((r.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(r[1] > r[2] && r[2] > r[0]);
    }
}
