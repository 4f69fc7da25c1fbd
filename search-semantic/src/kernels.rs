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
    if crate::linear::avx512() {
        // SAFETY: the CPU has AVX-512F, the feature the function is compiled for.
        unsafe { crate::linear::softmax16(row) };
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
