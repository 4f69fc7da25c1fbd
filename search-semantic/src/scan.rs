//! The kernels of the dense stage's search over a large catalog ([`crate::ToolVectors`]): the
//! Hamming distances of the query's sign sketch to every tool's, the pick of the nearest
//! sketches, and the exact (int8 row times float query) rescoring of those.
//!
//! Each kernel has a portable version and one for the instructions this machine class has,
//! chosen at run time ([`Kernels::detect`]): AVX-512 `VPOPCNTDQ` for the distances (eight
//! tools an instruction), AVX-512BW compares for the pick, and AVX2 for the dot products. The
//! fast versions give the same results bit for bit: the distances and the pick are integers,
//! and the AVX2 dot product adds in the same eight lanes, in the same order, without fused
//! multiply-adds, as the portable one, so a search ranks exactly as it would without them.
//!
//! # Sketch layout
//!
//! Sketches are stored in blocks of [`LANES`] tools, word by word: word `w` of tools `8b ..
//! 8b + 8` are the eight `u64`s at `(b * words + w) * 8`. One 512-bit load then holds the same
//! word of eight tools, and eight distances are summed without any shuffle. The last block is
//! padded with zero sketches, whose distances are never read.

/// Tools a block of sketches holds.
pub(crate) const LANES: usize = 8;

/// Which kernels this CPU can run; the portable ones when it lacks a feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kernels {
    /// AVX-512F and AVX-512 `VPOPCNTDQ`: the distances.
    pub(crate) popcnt512: bool,
    /// AVX-512BW: the pick.
    pub(crate) avx512bw: bool,
    /// AVX2: the dot products.
    pub(crate) avx2: bool,
    /// `POPCNT`: the portable distances compiled with it.
    pub(crate) popcnt: bool,
}

impl Kernels {
    /// The kernels this CPU runs (the check is a cached load after the first).
    pub(crate) fn detect() -> Kernels {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            Kernels::from_features(|f| match f {
                "avx512f" => has!("avx512f"),
                "avx512vpopcntdq" => has!("avx512vpopcntdq"),
                "avx512bw" => has!("avx512bw"),
                "avx2" => has!("avx2"),
                "popcnt" => has!("popcnt"),
                _ => false,
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        Kernels::PORTABLE
    }

    /// The kernels a CPU with the features `has` says yes to runs: each fast kernel only with
    /// every feature it is compiled for.
    pub(crate) fn from_features(has: impl Fn(&str) -> bool) -> Kernels {
        Kernels {
            popcnt512: has("avx512f") && has("avx512vpopcntdq"),
            avx512bw: has("avx512f") && has("avx512bw"),
            avx2: has("avx2"),
            popcnt: has("popcnt"),
        }
    }

    /// The portable kernels only.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) const PORTABLE: Kernels = Kernels {
        popcnt512: false,
        avx512bw: false,
        avx2: false,
        popcnt: false,
    };
}

/// The sign sketches of `n` rows of `dims` int8s (bit `i` set when component `i` is positive),
/// in blocks (see the module documentation).
pub(crate) fn sketch_blocks(rows: &[i8], dims: usize) -> Vec<u64> {
    let words = dims.div_ceil(64);
    let n = rows.len() / dims.max(1);
    let mut blocks = vec![0u64; n.div_ceil(LANES) * words * LANES];
    for (i, row) in rows.chunks_exact(dims.max(1)).enumerate() {
        let (b, lane) = (i / LANES, i % LANES);
        for (d, x) in row.iter().enumerate() {
            if *x > 0 {
                blocks[(b * words + d / 64) * LANES + lane] |= 1 << (d % 64);
            }
        }
    }
    blocks
}

/// The Hamming distance of each sketch of `blocks` (of `q.len()` words) to `q`, into `dist`
/// (resized to the number of blocks times [`LANES`]; the padding's distances included).
pub(crate) fn distances(k: Kernels, blocks: &[u64], q: &[u64], dist: &mut Vec<u16>) {
    let words = q.len().max(1);
    let count = blocks.len() / (words * LANES);
    if dist.len() != count * LANES {
        // Every distance is written below: a buffer of the right length is not cleared.
        dist.clear();
        dist.resize(count * LANES, 0);
    }
    let blocks = &blocks[..count * words * LANES];
    #[cfg(target_arch = "x86_64")]
    {
        if k.popcnt512 {
            // SAFETY: the CPU has AVX-512F and VPOPCNTDQ, the features the function is
            // compiled for; `dist` holds `LANES` distances for each block of `blocks`.
            unsafe { avx512::distances(blocks, q, dist) };
            return;
        }
        if k.popcnt {
            // SAFETY: the CPU has POPCNT, the only feature the function is compiled for.
            unsafe { distances_popcnt(blocks, q, dist) };
            return;
        }
    }
    let _ = k;
    distances_portable(blocks, q, dist);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn distances_popcnt(blocks: &[u64], q: &[u64], dist: &mut [u16]) {
    distances_portable(blocks, q, dist);
}

#[inline(always)]
fn distances_portable(blocks: &[u64], q: &[u64], dist: &mut [u16]) {
    let words = q.len().max(1);
    for (block, out) in blocks
        .chunks_exact(words * LANES)
        .zip(dist.chunks_exact_mut(LANES))
    {
        let mut d = [0u32; LANES];
        for (w, qw) in block.chunks_exact(LANES).zip(q) {
            for (d, s) in d.iter_mut().zip(w) {
                *d += (s ^ qw).count_ones();
            }
        }
        for (o, d) in out.iter_mut().zip(d) {
            *o = d as u16;
        }
    }
}

/// Every how many distances one is sampled to guess the cut (see [`nearest`]).
const SAMPLE_EVERY: usize = 32;

/// The `m` smallest of `dist` (the Hamming distances of the tools, in tool-number order) into
/// `out`, in tool-number order: every tool closer than the cut, the largest distance `cut` such
/// that fewer than `m` tools are closer, and the first of those at the cut until there are `m`
/// (all of them when there are fewer than `m` tools). `bins` is one more than the largest
/// distance there can be; `work` is scratch.
///
/// Counting every distance into a histogram costs as much as computing them; instead, one
/// distance in [`SAMPLE_EVERY`] is counted, which tells a distance `high` that probably has
/// twice `m` tools at or below it; one vectorised pass gathers those tools, and the cut is
/// found among them: exact, since every tool at or below `high` is there. If fewer than `m`
/// were gathered (the sample misled), every distance is counted after all.
pub(crate) fn nearest(
    k: Kernels,
    dist: &[u16],
    m: usize,
    bins: usize,
    work: &mut Vec<u32>,
    out: &mut Vec<u32>,
) {
    out.clear();
    work.clear();
    let mut hist = vec![0u32; bins];
    for d in dist.iter().step_by(SAMPLE_EVERY) {
        if let Some(h) = hist.get_mut(*d as usize) {
            *h += 1;
        }
    }
    let wanted = 2 * m;
    let mut seen = 0;
    let mut high = None;
    for (d, count) in hist.iter().enumerate() {
        seen += *count as usize * SAMPLE_EVERY;
        if seen >= wanted {
            high = Some(d);
            break;
        }
    }
    if let Some(high) = high.and_then(|h| u16::try_from(h + 1).ok()) {
        // Every tool at a distance below `high + 1`, in tool-number order.
        pick(k, dist, high, 0, work);
        if work.len() >= m {
            hist.fill(0);
            for &i in work.iter() {
                if let Some(h) = hist.get_mut(dist[i as usize] as usize) {
                    *h += 1;
                }
            }
            let (cut, mut at_cut) = cut(&hist, m);
            for &i in work.iter() {
                let d = dist[i as usize];
                if d < cut {
                    out.push(i);
                } else if d == cut && at_cut > 0 {
                    out.push(i);
                    at_cut -= 1;
                }
            }
            return;
        }
        work.clear();
    }
    histogram(dist, &mut hist);
    let (cut, at_cut) = cut(&hist, m);
    pick(k, dist, cut, at_cut, out);
}

/// The largest distance `cut` such that fewer than `m` tools are closer (the last bin if there
/// are fewer than `m` in all), and how many of those at `cut` are taken to make `m`.
fn cut(histogram: &[u32], m: usize) -> (u16, usize) {
    let mut below = 0;
    let mut cut = 0;
    for (d, &count) in histogram.iter().enumerate() {
        cut = d;
        if below + count as usize >= m {
            break;
        }
        below += count as usize;
    }
    (
        u16::try_from(cut).unwrap_or(u16::MAX),
        m.saturating_sub(below),
    )
}

/// Counts the distances of `dist` into `histogram` (cleared first; a distance past its end is
/// not counted), in four interleaved tables so that equal neighbours do not wait on each other.
pub(crate) fn histogram(dist: &[u16], histogram: &mut [u32]) {
    let bins = histogram.len();
    let mut tables = vec![0u32; 4 * bins];
    let (t0, rest) = tables.split_at_mut(bins);
    let (t1, rest) = rest.split_at_mut(bins);
    let (t2, t3) = rest.split_at_mut(bins);
    let chunks = dist.chunks_exact(4);
    let tail = chunks.remainder();
    for c in chunks {
        if let Some(h) = t0.get_mut(c[0] as usize) {
            *h += 1;
        }
        if let Some(h) = t1.get_mut(c[1] as usize) {
            *h += 1;
        }
        if let Some(h) = t2.get_mut(c[2] as usize) {
            *h += 1;
        }
        if let Some(h) = t3.get_mut(c[3] as usize) {
            *h += 1;
        }
    }
    for d in tail {
        if let Some(h) = t0.get_mut(*d as usize) {
            *h += 1;
        }
    }
    for (i, h) in histogram.iter_mut().enumerate() {
        *h = t0[i] + t1[i] + t2[i] + t3[i];
    }
}

/// The tools (indexes into `dist`) whose distance is below `cut`, and the first `at_cut` of
/// those at `cut`, in index order, appended to `out`.
pub(crate) fn pick(k: Kernels, dist: &[u16], cut: u16, at_cut: usize, out: &mut Vec<u32>) {
    #[cfg(target_arch = "x86_64")]
    if k.avx512bw {
        // SAFETY: the CPU has AVX-512F and AVX-512BW, the features the function is compiled
        // for.
        unsafe { avx512::pick(dist, cut, at_cut, out) };
        return;
    }
    let _ = k;
    pick_portable(dist, 0, cut, at_cut, out);
}

/// [`pick`] over `dist`, whose first element is tool `base`; returns what is left of `at_cut`.
fn pick_portable(
    dist: &[u16],
    base: usize,
    cut: u16,
    mut at_cut: usize,
    out: &mut Vec<u32>,
) -> usize {
    for (i, &d) in dist.iter().enumerate() {
        if d < cut {
            out.push((base + i) as u32);
        } else if d == cut && at_cut > 0 {
            out.push((base + i) as u32);
            at_cut -= 1;
        }
    }
    at_cut
}

/// The cosine of each of `tools` with the query `q` (a row of `rows`, `q.len()` int8s a tool,
/// times the tool's scale in `scales`; 0 for a tool out of range), appended to `out` as
/// `(cosine, tool)`: [`dot_i8`] of each, four rows at a time with AVX2 (the same sums).
pub(crate) fn rescore(
    k: Kernels,
    q: &[f32],
    rows: &[i8],
    scales: &[f32],
    tools: &[u32],
    out: &mut Vec<(f32, u32)>,
) {
    let dims = q.len();
    let row = |t: u32| {
        let start = t as usize * dims;
        rows.get(start..start + dims).zip(scales.get(t as usize))
    };
    let mut rest = tools;
    #[cfg(target_arch = "x86_64")]
    if k.avx2 && dims > 0 {
        let mut fours = tools.chunks_exact(4);
        for (i, four) in fours.by_ref().enumerate() {
            let picked = [row(four[0]), row(four[1]), row(four[2]), row(four[3])];
            let [Some(r0), Some(r1), Some(r2), Some(r3)] = picked else {
                for &t in four {
                    let c = row(t).map_or(0.0, |(r, s)| s * dot_i8(k, q, r));
                    out.push((c, t));
                }
                continue;
            };
            // The rows two groups ahead, to be in cache when their turn comes.
            for &t in tools.iter().skip(4 * i + 8).take(4) {
                if let Some((r, _)) = row(t) {
                    for line in r.chunks(64) {
                        // SAFETY: a prefetch of a valid address (and a prefetch never faults).
                        unsafe {
                            std::arch::x86_64::_mm_prefetch(
                                line.as_ptr(),
                                std::arch::x86_64::_MM_HINT_T0,
                            )
                        };
                    }
                }
            }
            // SAFETY: the CPU has AVX2, the only feature the function is compiled for.
            let dots = unsafe { avx2::dot_i8_x4(q, [r0.0, r1.0, r2.0, r3.0]) };
            for ((d, (_, s)), t) in dots.iter().zip([r0, r1, r2, r3]).zip(four) {
                out.push((s * d, *t));
            }
        }
        rest = fours.remainder();
    }
    for &t in rest {
        let c = row(t).map_or(0.0, |(r, s)| s * dot_i8(k, q, r));
        out.push((c, t));
    }
}

/// The dot product of floats and int8s: eight lanes, each adding the products of its
/// components in order, then the lanes summed in order and the tail's products added.
pub(crate) fn dot_i8(k: Kernels, a: &[f32], b: &[i8]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if k.avx2 {
        // SAFETY: the CPU has AVX2, the only feature the function is compiled for.
        return unsafe { avx2::dot_i8(a, b) };
    }
    let _ = k;
    dot_i8_portable(a, b)
}

#[inline(always)]
fn dot_i8_portable(a: &[f32], b: &[i8]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += x[l] * f32::from(y[l]);
        }
    }
    lanes_sum(acc, ra, rb)
}

/// The sum of `acc`'s lanes in order, plus the products of the tails `ra` and `rb`.
#[inline(always)]
fn lanes_sum(acc: [f32; 8], ra: &[f32], rb: &[i8]) -> f32 {
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * f32::from(*y)).sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m128i, _mm_loadl_epi64, _mm256_add_ps, _mm256_cvtepi8_epi32, _mm256_cvtepi32_ps,
        _mm256_loadu_ps, _mm256_mul_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };

    /// [`super::dot_i8_portable`] in one 256-bit register: the same lanes, the same order, a
    /// multiply then an add (no fused multiply-add, which would round once instead of twice).
    #[target_feature(enable = "avx2")]
    pub(super) fn dot_i8(a: &[f32], b: &[i8]) -> f32 {
        if a.len() != b.len() {
            return super::dot_i8_portable(a, b);
        }
        let n = a.len() / 8 * 8;
        let mut acc = _mm256_setzero_ps();
        let mut i = 0;
        while i < n {
            // SAFETY: `i + 8 <= n`, within both slices: eight floats of `a`, eight bytes of
            // `b` (an unaligned 64-bit load).
            unsafe {
                let x = _mm256_loadu_ps(a.as_ptr().add(i));
                let y = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(
                    b.as_ptr().add(i).cast::<__m128i>(),
                )));
                acc = _mm256_add_ps(acc, _mm256_mul_ps(x, y));
            }
            i += 8;
        }
        let mut lanes = [0.0f32; 8];
        // SAFETY: `lanes` holds eight floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
        super::lanes_sum(lanes, &a[n..], &b[n..])
    }

    /// [`dot_i8`] of `a` with each of four rows, interleaved so that the four chains of adds
    /// overlap: each row's sums are the same as alone.
    #[target_feature(enable = "avx2")]
    pub(super) fn dot_i8_x4(a: &[f32], rows: [&[i8]; 4]) -> [f32; 4] {
        let len = rows.iter().fold(a.len(), |l, r| l.min(r.len()));
        let n = len / 8 * 8;
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i < n {
            // SAFETY: `i + 8 <= n`, within `a` and every row.
            unsafe {
                let x = _mm256_loadu_ps(a.as_ptr().add(i));
                for (acc, r) in acc.iter_mut().zip(rows) {
                    let y = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(
                        r.as_ptr().add(i).cast::<__m128i>(),
                    )));
                    *acc = _mm256_add_ps(*acc, _mm256_mul_ps(x, y));
                }
            }
            i += 8;
        }
        let mut out = [0.0f32; 4];
        for ((o, acc), r) in out.iter_mut().zip(acc).zip(rows) {
            if a.len() != r.len() {
                // Rows of another length than the query: as the one-row product does.
                *o = dot_i8(a, r);
                continue;
            }
            let mut lanes = [0.0f32; 8];
            // SAFETY: `lanes` holds eight floats.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
            *o = super::lanes_sum(lanes, &a[n..], &r[n..]);
        }
        out
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::{
        __m128i, __m512i, _mm_storeu_si128, _mm512_add_epi64, _mm512_cmple_epu16_mask,
        _mm512_cvtepi64_epi16, _mm512_loadu_si512, _mm512_popcnt_epi64, _mm512_set1_epi16,
        _mm512_set1_epi64, _mm512_setzero_si512, _mm512_xor_si512,
    };

    use super::LANES;

    /// [`super::distances_portable`], eight tools a 512-bit register. `dist` holds `LANES`
    /// distances for each block of `blocks`.
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    pub(super) fn distances(blocks: &[u64], q: &[u64], dist: &mut [u16]) {
        let words = q.len().max(1);
        let count = (blocks.len() / (words * LANES)).min(dist.len() / LANES);
        if q.len() == 4 {
            // 256 dimensions, the common case: the query's words kept in registers.
            let qv = [
                _mm512_set1_epi64(q[0] as i64),
                _mm512_set1_epi64(q[1] as i64),
                _mm512_set1_epi64(q[2] as i64),
                _mm512_set1_epi64(q[3] as i64),
            ];
            for b in 0..count {
                // SAFETY: block `b < count` lies within `blocks` (`4 * LANES` words) and its
                // distances within `dist`.
                unsafe {
                    let p = blocks.as_ptr().add(b * 4 * LANES);
                    let mut acc = _mm512_setzero_si512();
                    for (w, qw) in qv.iter().enumerate() {
                        let s = _mm512_loadu_si512(p.add(w * LANES).cast::<__m512i>());
                        acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(_mm512_xor_si512(s, *qw)));
                    }
                    let d = _mm512_cvtepi64_epi16(acc);
                    _mm_storeu_si128(dist.as_mut_ptr().add(b * LANES).cast::<__m128i>(), d);
                }
            }
            return;
        }
        for b in 0..count {
            // SAFETY: as above, for `words` words a tool.
            unsafe {
                let p = blocks.as_ptr().add(b * words * LANES);
                let mut acc = _mm512_setzero_si512();
                for (w, qw) in q.iter().enumerate() {
                    let s = _mm512_loadu_si512(p.add(w * LANES).cast::<__m512i>());
                    let x = _mm512_xor_si512(s, _mm512_set1_epi64(*qw as i64));
                    acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(x));
                }
                let d = _mm512_cvtepi64_epi16(acc);
                _mm_storeu_si128(dist.as_mut_ptr().add(b * LANES).cast::<__m128i>(), d);
            }
        }
    }

    /// [`super::pick`]: 32 distances a compare; only the rare ones at or below the cut are
    /// looked at one by one.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) fn pick(dist: &[u16], cut: u16, mut at_cut: usize, out: &mut Vec<u32>) {
        let cutv = _mm512_set1_epi16(cut as i16);
        let whole = dist.len() / 32 * 32;
        let mut base = 0;
        while base < whole {
            // SAFETY: `base + 32 <= dist.len()`: 32 distances (64 bytes), an unaligned load.
            let mut near = unsafe {
                let v = _mm512_loadu_si512(dist.as_ptr().add(base).cast::<__m512i>());
                _mm512_cmple_epu16_mask(v, cutv)
            };
            while near != 0 {
                let i = base + near.trailing_zeros() as usize;
                near &= near - 1;
                if dist[i] < cut {
                    out.push(i as u32);
                } else if at_cut > 0 {
                    out.push(i as u32);
                    at_cut -= 1;
                }
            }
            base += 32;
        }
        super::pick_portable(&dist[whole..], whole, cut, at_cut, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of pseudo-random int8s (a fixed linear congruential sequence).
    fn rows(n: usize, dims: usize, seed: u64) -> Vec<i8> {
        let mut x = seed;
        (0..n * dims)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as i8
            })
            .collect()
    }

    fn naive_distance(a: &[i8], b: &[i8]) -> u16 {
        a.iter()
            .zip(b)
            .filter(|(x, y)| (**x > 0) != (**y > 0))
            .count() as u16
    }

    fn query_sketch(row: &[i8]) -> Vec<u64> {
        let blocks = sketch_blocks(row, row.len());
        // One tool: its words are at lanes 0 of each word group.
        blocks.chunks_exact(LANES).map(|w| w[0]).collect()
    }

    #[test]
    fn the_detected_kernels_give_the_portable_distances_for_every_width() {
        for dims in [256, 64, 100, 384] {
            let n = 8 * 37 + 5;
            let data = rows(n, dims, dims as u64);
            let blocks = sketch_blocks(&data, dims);
            let q = query_sketch(&rows(1, dims, 99));
            let (mut fast, mut portable) = (Vec::new(), Vec::new());
            distances(Kernels::detect(), &blocks, &q, &mut fast);
            distances(Kernels::PORTABLE, &blocks, &q, &mut portable);
            assert_eq!(fast, portable, "{dims} dimensions");
            let qrow = rows(1, dims, 99);
            for (i, row) in data.chunks_exact(dims).enumerate() {
                assert_eq!(portable[i], naive_distance(row, &qrow), "tool {i}");
            }
        }
    }

    #[test]
    fn the_detected_pick_gives_the_portable_one_ties_cut_in_index_order() {
        let dist: Vec<u16> = (0..1000u32).map(|i| ((i * 7919) % 23) as u16).collect();
        for (cut, at_cut) in [(0, 5), (3, 0), (3, 17), (10, 1000), (22, 2)] {
            let (mut fast, mut portable) = (Vec::new(), Vec::new());
            pick(Kernels::detect(), &dist, cut, at_cut, &mut fast);
            pick(Kernels::PORTABLE, &dist, cut, at_cut, &mut portable);
            assert_eq!(fast, portable, "cut {cut}, {at_cut} at the cut");
            let below = dist.iter().filter(|d| **d < cut).count();
            let at = dist.iter().filter(|d| **d == cut).count().min(at_cut);
            assert_eq!(portable.len(), below + at);
            assert!(portable.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn the_detected_dot_product_equals_the_portable_one_bit_for_bit() {
        for len in [256, 8, 13, 0, 385] {
            let b = rows(1, len, len as u64 + 3);
            let a: Vec<f32> = rows(1, len, 7)
                .iter()
                .map(|x| f32::from(*x) / 97.0)
                .collect();
            let fast = dot_i8(Kernels::detect(), &a, &b);
            let portable = dot_i8(Kernels::PORTABLE, &a, &b);
            assert_eq!(fast.to_bits(), portable.to_bits(), "length {len}");
        }
    }

    /// What [`nearest`] must give: every distance counted, then the pick.
    fn nearest_by_histogram(dist: &[u16], m: usize, bins: usize) -> Vec<u32> {
        let mut hist = vec![0u32; bins];
        histogram(dist, &mut hist);
        let (cut, at_cut) = cut(&hist, m);
        let mut out = Vec::new();
        pick(Kernels::PORTABLE, dist, cut, at_cut, &mut out);
        out
    }

    #[test]
    fn the_sampled_cut_picks_the_same_tools_as_counting_every_distance() {
        let spread: Vec<u16> = rows(20_000, 1, 11)
            .iter()
            .map(|x| (128 + i16::from(*x) / 4) as u16)
            .collect();
        // The nearest tools all where the sample does not look (no multiple of 16): the sample
        // misleads, and every distance is counted after all.
        let hidden: Vec<u16> = (0..20_000)
            .map(|i| if i % 16 == 5 { 10 } else { 100 })
            .collect();
        let tied = vec![7u16; 5000];
        let cases = [
            (&spread, 1024),
            (&spread, 1),
            (&spread, 19_999),
            (&spread, 50_000),
            (&hidden, 1000),
            (&tied, 1024),
        ];
        for (dist, m) in cases {
            for k in [Kernels::detect(), Kernels::PORTABLE] {
                let (mut work, mut out) = (Vec::new(), Vec::new());
                nearest(k, dist, m, 257, &mut work, &mut out);
                assert_eq!(out, nearest_by_histogram(dist, m, 257), "m {m}");
                assert_eq!(out.len(), m.min(dist.len()));
            }
        }
    }

    #[test]
    fn rescoring_four_rows_at_a_time_gives_each_rows_own_cosine() {
        let dims = 256;
        let data = rows(50, dims, 21);
        let scales: Vec<f32> = (0..50).map(|i| 0.001 + i as f32 * 1e-5).collect();
        let q: Vec<f32> = rows(1, dims, 8)
            .iter()
            .map(|x| f32::from(*x) / 300.0)
            .collect();
        let tools: Vec<u32> = vec![3, 9, 0, 49, 17, 17, 30, 2, 11, 40, 41, 77];
        for k in [Kernels::detect(), Kernels::PORTABLE] {
            let mut out = Vec::new();
            rescore(k, &q, &data, &scales, &tools, &mut out);
            let expected: Vec<(u32, u32)> = tools
                .iter()
                .map(|&t| {
                    let c = data
                        .get(t as usize * dims..(t as usize + 1) * dims)
                        .map_or(0.0, |r| scales[t as usize] * dot_i8_portable(&q, r));
                    (c.to_bits(), t)
                })
                .collect();
            let got: Vec<(u32, u32)> = out.iter().map(|(c, t)| (c.to_bits(), *t)).collect();
            assert_eq!(got, expected);
        }
    }

    #[test]
    fn the_histogram_counts_each_distance_and_drops_those_past_its_end() {
        let dist = [3u16, 3, 0, 7, 300, 3, 1];
        let mut h = vec![0u32; 8];
        histogram(&dist, &mut h);
        assert_eq!(h, vec![1, 1, 0, 3, 0, 0, 0, 1]);
    }

    #[test]
    fn a_kernel_missing_one_of_its_features_falls_back_to_the_portable_one() {
        let without = |missing: &'static str| Kernels::from_features(move |f| f != missing);
        assert!(!without("avx512vpopcntdq").popcnt512);
        assert!(without("avx512vpopcntdq").avx512bw);
        assert!(!without("avx512f").popcnt512 && !without("avx512f").avx512bw);
        assert!(!without("avx512bw").avx512bw && without("avx512bw").popcnt512);
        assert!(!without("avx2").avx2 && without("avx2").popcnt512);
        assert_eq!(Kernels::from_features(|_| false), Kernels::PORTABLE);
        // And a kernel set without a feature runs the portable code: the same distances.
        let data = rows(40, 256, 5);
        let blocks = sketch_blocks(&data, 256);
        let q = query_sketch(&rows(1, 256, 6));
        let (mut fallback, mut portable) = (Vec::new(), Vec::new());
        distances(without("avx512vpopcntdq"), &blocks, &q, &mut fallback);
        distances(Kernels::PORTABLE, &blocks, &q, &mut portable);
        assert_eq!(fallback, portable);
    }
}
