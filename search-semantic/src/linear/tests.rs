use super::int8::quantize;
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
        crate::kernels::PORTABLE_ONLY.with(|p| p.set(portable));
        let mut out = vec![f32::NAN; n * o];
        l.apply(&x, n, &mut out, act);
        for (i, (g, w)) in out.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                "{n}x{k} -> {o} {act:?} portable {portable}: [{i}] {g} != {w}"
            );
        }
    }
    crate::kernels::PORTABLE_ONLY.with(|p| p.set(false));
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
        crate::kernels::PORTABLE_ONLY.with(|p| p.set(portable));
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
    crate::kernels::PORTABLE_ONLY.with(|p| p.set(false));
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
            crate::kernels::PORTABLE_ONLY.with(|p| p.set(portable));
            got.push(quantize(&x, n, k));
        }
        crate::kernels::PORTABLE_ONLY.with(|p| p.set(false));
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
            crate::kernels::PORTABLE_ONLY.with(|p| p.set(portable));
            let mut r = row.clone();
            crate::kernels::softmax(&mut r);
            got.push(r);
        }
        crate::kernels::PORTABLE_ONLY.with(|p| p.set(false));
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
            && std::arch::is_x86_feature_detected!("avx512vl")
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
                crate::kernels::exp16(std::arch::x86_64::_mm512_min_ps(
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
