//! The proof that this CPU runs AVX2 code, which the SIMD kernels of the block decoder
//! ([`crate::postings`]) and of the first stage's selection take, so that their `unsafe` calls
//! into `#[target_feature(enable = "avx2")]` functions rest on one check.
//!
//! The release build targets baseline x86_64 (SSE2: no byte shuffle, no per-lane shifts, 4
//! lanes), so the kernels are chosen at run time; elsewhere no proof can be made and the
//! scalar code runs.

/// Proof that this CPU runs AVX2 (and so SSE4.1) instructions: only [`Avx2::detect`] makes one.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx2(());

/// No SIMD kernels off x86_64: a proof that can never be made.
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy, Debug)]
pub(crate) enum Avx2 {}

impl Avx2 {
    /// The proof, if the CPU has AVX2 (`is_x86_feature_detected!` caches the answer in a
    /// static: a load and a test).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn detect() -> Option<Avx2> {
        std::arch::is_x86_feature_detected!("avx2").then_some(Avx2(()))
    }

    /// Never a proof off x86_64.
    #[cfg(not(target_arch = "x86_64"))]
    pub(crate) fn detect() -> Option<Avx2> {
        None
    }
}
