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
        #[cfg(test)]
        if SCALAR_ONLY.with(std::cell::Cell::get) {
            return None;
        }
        std::arch::is_x86_feature_detected!("avx2").then_some(Avx2(()))
    }

    /// Never a proof off x86_64.
    #[cfg(not(target_arch = "x86_64"))]
    pub(crate) fn detect() -> Option<Avx2> {
        None
    }
}

/// Proof that this CPU runs the AVX-512 instructions of the first stage's accumulation
/// (AVX-512F and VL: 8-lane gathers, scatters and compressing stores): only
/// [`Avx512::detect`] makes one.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx512(());

/// No AVX-512 off x86_64: a proof that can never be made.
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy, Debug)]
pub(crate) enum Avx512 {}

impl Avx512 {
    /// The proof, if the CPU has AVX-512F and AVX-512VL (not under [`scalar_only`]).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn detect() -> Option<Avx512> {
        #[cfg(test)]
        if SCALAR_ONLY.with(std::cell::Cell::get) {
            return None;
        }
        (std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl"))
        .then_some(Avx512(()))
    }

    /// Never a proof off x86_64.
    #[cfg(not(target_arch = "x86_64"))]
    pub(crate) fn detect() -> Option<Avx512> {
        None
    }
}

#[cfg(test)]
thread_local! {
    /// Set while this thread runs [`scalar_only`]: [`Avx2::detect`] and [`Avx512::detect`] then
    /// make no proof.
    static SCALAR_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` on this thread as on a CPU without AVX2 or AVX-512: every kernel takes its scalar
/// path.
#[cfg(test)]
pub(crate) fn scalar_only<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            SCALAR_ONLY.with(|s| s.set(self.0));
        }
    }
    let _reset = Reset(SCALAR_ONLY.with(|s| s.replace(true)));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Query, SearchIndex, ToolDoc};

    /// Words of a few letters from a small generator, so that lists of every length (one tool
    /// to most of the catalog) and blocks of many widths occur.
    fn word(seed: &mut u64) -> String {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        // A skewed draw: low numbers (common words) far more often than high ones.
        let r = (*seed >> 33) as f64 / f64::from(1u32 << 31);
        let n = (r * r * r * 3000.0) as u32;
        format!("w{n}x")
    }

    fn catalog(tools: usize) -> Vec<ToolDoc> {
        let mut seed = 7;
        (0..tools)
            .map(|i| ToolDoc {
                name: format!("tool_{}_{i}", word(&mut seed)),
                description: (0..12)
                    .map(|_| word(&mut seed))
                    .collect::<Vec<_>>()
                    .join(" "),
                ..ToolDoc::default()
            })
            .collect()
    }

    /// Each query's top 50 as names and score bits.
    fn results(index: &SearchIndex, queries: &[Query]) -> Vec<Vec<(String, u32)>> {
        queries
            .iter()
            .map(|q| {
                index
                    .search(q, 50)
                    .hits
                    .into_iter()
                    .map(|h| (h.name, h.score.to_bits()))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_search_without_avx2_gives_the_same_results_as_with_it() {
        let index = SearchIndex::build(catalog(5_000)).unwrap();
        let mut seed = 11;
        let queries: Vec<Query> = (0..300)
            .map(|i| {
                // Short queries (sparse selection) to long ones (most tools touched: dense).
                let words: Vec<String> = (0..1 + i % 40).map(|_| word(&mut seed)).collect();
                Query::parse(&words.join(" ")).unwrap()
            })
            .collect();
        let simd = results(&index, &queries);
        let scalar = scalar_only(|| {
            assert!(Avx2::detect().is_none());
            results(&index, &queries)
        });
        assert!(simd.iter().any(|hits| hits.len() == 50));
        assert_eq!(simd, scalar);
    }

    #[test]
    fn scalar_only_ends_with_its_closure() {
        let before = Avx2::detect().is_some();
        scalar_only(|| assert!(Avx2::detect().is_none()));
        assert_eq!(Avx2::detect().is_some(), before);
    }
}
