//! The accumulator of the first stage ([`crate::score`]): each query term's postings lists
//! decoded block by block ([`crate::postings`]) and added into a per-thread array indexed by
//! tool, term at a time, with each tool's coverage, name and required-word counts beside it.
//!
//! The loop over a term's postings is the hottest of a search (70% of the instructions of
//! long requests over 100,000 tools). It is written once for a term found by stem, with the
//! tests of the term's kind (counts for the name bonus, is required, lists new tools) taken out
//! of it as constant parameters, and the contributions multiplied out beforehand in a loop the
//! compiler makes vector code of. A term expanded by prefix or typo keeps each tool's best
//! expansion first, then adds those through the same [`add`].
//!
//! On a CPU with AVX-512 (F and VL, detected at run time), a block of a term found by stem is
//! added 8 entries at a time instead ([`Avx512::add_block`]): a block's tool numbers are
//! distinct, so the 8 entries gathered at once never overlap, and one scatter writes them back.
//! Per-query least time, 200 slowest queries at 100,000 tools: 6% less than the scalar loop;
//! at 2,723 tools no worse. Two variants measured slower and were dropped: gathering a whole
//! block before any scatter (7% slower at 100,000 tools), and name counts of 4 bytes gathered
//! and scattered beside the scores instead of the scalar loop over the name bits (2-3% slower).

use crate::postings::{BLOCK, Block, PostingList};
use crate::simd::Avx512;

/// One postings list of a query term.
pub(crate) struct Cursor<'a> {
    pub(crate) list: PostingList<'a>,
    /// Contribution per unit of impact: the (penalised) IDF over the scale.
    weight: f32,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(list: PostingList<'a>, weight: f32) -> Cursor<'a> {
        Cursor { list, weight }
    }
}

/// The lists of one query term: one for a word found by stem, one per
/// expansion for a word matched by prefix or typo (a tool gets the best of
/// them, not their sum). A view of the query's cursors, which are gathered in one vector
/// (a vector per term cost an allocation and a free each).
pub(crate) struct Group<'c, 'a> {
    pub(crate) cursors: &'c [Cursor<'a>],
    /// The query term's index.
    pub(crate) term: usize,
    /// Found by exact or stem match (counts for the name bonus).
    exact: bool,
}

impl<'c, 'a> Group<'c, 'a> {
    pub(crate) fn new(cursors: &'c [Cursor<'a>], term: usize, exact: bool) -> Group<'c, 'a> {
        Group {
            cursors,
            term,
            exact,
        }
    }
}

/// A `best` entry no expansion of the current term has written.
const UNSET: f32 = f32::NEG_INFINITY;

/// Per-thread first-stage buffers, indexed by tool number, reused across
/// searches so a query allocates nothing proportional to the catalog. Only
/// the entries of touched tools are non-zero, and they are reset after each
/// search.
pub(crate) struct Scratch {
    /// What each tool has gathered, in one array so that adding a posting
    /// touches one cache line.
    pub(crate) acc: Vec<Acc>,
    /// Query words found, exactly or by stem, in the name.
    pub(crate) name: Vec<u8>,
    /// Required query words found.
    pub(crate) required: Vec<u8>,
    /// Best expansion contribution of the current term; [`UNSET`] where no expansion of it
    /// has the tool.
    best: Vec<f32>,
    /// Tools with a non-zero entry.
    pub(crate) touched: Vec<u32>,
    /// Tools with a `best` entry, each once.
    best_touched: Vec<u32>,
    /// The block of a postings list being added.
    block: Box<Block>,
    /// Each entry's contribution to the score, for the block being added.
    contrib: [f32; BLOCK],
    /// The number of tools of the current search: entries from here on are not used, and a
    /// tool number at or past it (which only a damaged file holds) is passed over.
    n: usize,
    /// Whether `name` may have a non-zero entry (an exact term was added).
    name_set: bool,
    /// Whether `required` may have a non-zero entry (a required term was added).
    required_set: bool,
}

impl Default for Scratch {
    fn default() -> Scratch {
        Scratch {
            acc: Vec::new(),
            name: Vec::new(),
            required: Vec::new(),
            best: Vec::new(),
            touched: Vec::new(),
            best_touched: Vec::new(),
            block: Box::new(Block::new()),
            contrib: [0.0; BLOCK],
            n: 0,
            name_set: false,
            required_set: false,
        }
    }
}

impl Scratch {
    /// Readies the scratch to add the `n` tools of a search.
    pub(crate) fn prepare(&mut self, n: usize) {
        self.n = n;
        if self.acc.len() < n {
            self.acc.resize(n, Acc::default());
            self.name.resize(n, 0);
            self.required.resize(n, 0);
            self.best.resize(n, UNSET);
        }
        self.touched.clear();
    }

    /// Clears the touched entries: one by one; or (`dense`) after a selection that scanned
    /// every tool in order and cleared the accumulator as it went ([`Scratch::acc`]), `name`
    /// and `required` whole. `name` and `required` only if a term was added to them.
    pub(crate) fn reset(&mut self, dense: bool) {
        let n = self.n.min(self.acc.len());
        if dense {
            if self.name_set {
                self.name[..n].fill(0);
            }
            if self.required_set {
                self.required[..n].fill(0);
            }
        } else {
            // One pass over the touched tools, the arrays to clear chosen outside it: three
            // passes took 18 instructions a touched tool, this one 13 (callgrind, 100,000 tools).
            match (self.name_set, self.required_set) {
                (false, false) => self.clear_touched::<false, false>(),
                (true, false) => self.clear_touched::<true, false>(),
                (false, true) => self.clear_touched::<false, true>(),
                (true, true) => self.clear_touched::<true, true>(),
            }
        }
        self.touched.clear();
        self.name_set = false;
        self.required_set = false;
    }

    /// Clears the accumulator entries of the touched tools, and their `name` (if `NAME`) and
    /// `required` (if `REQUIRED`) counts.
    fn clear_touched<const NAME: bool, const REQUIRED: bool>(&mut self) {
        let Scratch {
            acc,
            name,
            required,
            touched,
            ..
        } = self;
        let (acc, name, required) = (&mut acc[..], &mut name[..], &mut required[..]);
        for &d in touched.iter() {
            let d = d as usize;
            if let Some(a) = acc.get_mut(d) {
                *a = Acc::default();
            }
            if NAME && let Some(m) = name.get_mut(d) {
                *m = 0;
            }
            if REQUIRED && let Some(m) = required.get_mut(d) {
                *m = 0;
            }
        }
    }

    /// Adds one term's contribution to every tool in its lists (for an
    /// expanded term, each tool's best expansion), touching new tools.
    /// Tools touched for the first time are listed in `touched` if `LIST`.
    pub(crate) fn accumulate<const LIST: bool>(
        &mut self,
        group: &Group<'_, '_>,
        share: f32,
        required: bool,
    ) {
        if let [c] = group.cursors {
            self.name_set |= group.exact;
            self.required_set |= required;
            // The tests of a term's kind are taken out of the loop over its postings.
            match (group.exact, required) {
                (false, false) => self.add_list::<LIST, false, false>(c, share),
                (true, false) => self.add_list::<LIST, true, false>(c, share),
                (false, true) => self.add_list::<LIST, false, true>(c, share),
                (true, true) => self.add_list::<LIST, true, true>(c, share),
            }
            return;
        }
        let Scratch {
            acc,
            best,
            touched,
            best_touched,
            block,
            n,
            ..
        } = self;
        let (acc, best) = (&mut acc[..], &mut best[..]);
        best_touched.clear();
        for c in group.cursors {
            let mut blocks = c.list.blocks();
            while let Ok(true) = blocks.next_into(block) {
                let block = &**block;
                let to = in_range(block, *n);
                for (&d, &q) in block.docs[..to].iter().zip(&block.impacts) {
                    let d = d as usize;
                    let s = c.weight * f32::from(q);
                    let Some(b) = best.get_mut(d) else {
                        continue;
                    };
                    if *b == UNSET {
                        best_touched.push(d as u32);
                    }
                    // The best of 0 and the expansions' contributions, as if `best` started at 0.
                    *b = b.max(0.0).max(s);
                }
                // The rest of the list is past the tools (a damaged file).
                if to < block.len {
                    break;
                }
            }
        }
        // In the order first touched: each tool's sums do not depend on the order tools are
        // added in, and the selection keeps the best by score and tool number whatever order
        // it sees them in.
        for &d in best_touched.iter() {
            let d = d as usize;
            let Some(b) = best.get_mut(d) else {
                continue;
            };
            let s = std::mem::replace(b, UNSET);
            if let Some(a) = acc.get_mut(d) {
                add::<LIST>(a, touched, d, s, share);
            }
        }
    }

    /// Adds the list of `c` (a term found by stem) to every tool in it: `NAMES` if the term
    /// counts for the name bonus, `REQUIRED` if it is a required one.
    fn add_list<const LIST: bool, const NAMES: bool, const REQUIRED: bool>(
        &mut self,
        c: &Cursor<'_>,
        share: f32,
    ) {
        let mut blocks = c.list.blocks();
        // The arrays as local slices, borrowed apart: written through in the loop, they could
        // otherwise be the vectors' own fields, which would be read again for every posting.
        let Scratch {
            acc,
            name,
            required,
            touched,
            block,
            contrib,
            n,
            ..
        } = self;
        let (acc, name, required) = (&mut acc[..], &mut name[..], &mut required[..]);
        let mut fresh = [0u32; BLOCK];
        let wide = Avx512::detect();
        // A block that does not decode ends the list (only a damaged file has one).
        while let Ok(true) = blocks.next_into(block) {
            let block = &**block;
            let len = in_range(block, *n);
            if let Some(k) = wide {
                let added = k.add_block::<LIST>(acc, block, len, c.weight, share, &mut fresh);
                if LIST {
                    touched.extend_from_slice(&fresh[..added.min(BLOCK)]);
                }
                if REQUIRED {
                    for &d in &block.docs[..len] {
                        if let Some(m) = required.get_mut(d as usize) {
                            *m = m.saturating_add(1);
                        }
                    }
                }
            } else {
                // Apart, in a loop the compiler makes vector code of: the same products.
                for (w, &q) in contrib.iter_mut().zip(&block.impacts) {
                    *w = c.weight * f32::from(q);
                }
                // Tools touched for the first time are written to `fresh` without a branch (the
                // test is as likely one way as the other, and a push keeps the vector's length
                // in memory), then listed in one go: in the same order as pushed one by one.
                let mut k = 0;
                for (&d, &s) in block.docs[..len].iter().zip(contrib.iter()) {
                    let i = d as usize;
                    if let Some(a) = acc.get_mut(i) {
                        if LIST {
                            // `k` counts entries before this one, so stays below `BLOCK`.
                            fresh[k & (BLOCK - 1)] = d;
                            k += usize::from(a.coverage == 0.0);
                        }
                        a.score += s;
                        a.coverage += share;
                    }
                    if REQUIRED && let Some(m) = required.get_mut(i) {
                        *m = m.saturating_add(1);
                    }
                }
                if LIST {
                    touched.extend_from_slice(&fresh[..k.min(BLOCK)]);
                }
            }
            if NAMES && block.has_names {
                // Set bits only, a word of 64 entries at a time.
                for (h, half) in block.names.chunks_exact(8).enumerate() {
                    let mut word = [0u8; 8];
                    word.copy_from_slice(half);
                    let mut bits = u64::from_le_bytes(word);
                    // Entries past the tools are not counted.
                    let keep = len.saturating_sub(h * 64);
                    if keep < 64 {
                        bits &= (1u64 << keep) - 1;
                    }
                    while bits != 0 {
                        let i = h * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        if let Some(m) = block.docs.get(i).and_then(|&d| name.get_mut(d as usize)) {
                            *m = m.saturating_add(1);
                        }
                    }
                }
            }
            // The rest of the list is past the tools (a damaged file).
            if len < block.len {
                break;
            }
        }
    }
}

/// Adds a term's contribution `s` and coverage `share` to tool `d`'s entry `a`, listing the
/// tool in `touched` if `LIST` and this is its first term.
#[inline(always)]
fn add<const LIST: bool>(a: &mut Acc, touched: &mut Vec<u32>, d: usize, s: f32, share: f32) {
    if LIST && a.coverage == 0.0 {
        touched.push(d as u32);
    }
    a.score += s;
    a.coverage += share;
}

/// How many entries of `block` name a tool below `n`: tool numbers ascend in a block, so they
/// are its first ones (all of them but in a damaged file).
#[inline(always)]
fn in_range(block: &Block, n: usize) -> usize {
    let docs = &block.docs[..block.len.min(block.docs.len())];
    match docs.last() {
        Some(&last) if (last as usize) >= n => docs.partition_point(|&d| (d as usize) < n),
        _ => docs.len(),
    }
}

/// What one tool has gathered in the first stage: 8 bytes, so that the
/// accumulator of 100,000 tools (800 KB) stays in a core's L2 cache. `repr(C)`: the selection's
/// SIMD kernels read 8 entries as 16 `f32`, score then coverage ([`crate::select_avx2`]).
#[derive(Clone, Copy, Default)]
#[repr(C)]
pub(crate) struct Acc {
    /// Sum of term contributions.
    pub(crate) score: f32,
    /// Sum of the matched terms' coverage shares (0: not touched).
    pub(crate) coverage: f32,
}

impl Acc {
    /// [`Acc::floor_bucket`] takes the bits of a positive `f32` shifted right by this much:
    /// its exponent and top two mantissa bits.
    pub(crate) const FLOOR_SHIFT: u32 = 21;

    /// The shifted bits of 2^-32, [`Acc::floor_bucket`]'s bucket 0: smaller products are not
    /// counted.
    pub(crate) const FLOOR_LOW: i32 = (127 - 32) << 2;

    /// The buckets of [`Acc::floor_bucket`]: quarter binades from 2^-32 up, the last holding
    /// every product from about 2^31.75 up.
    pub(crate) const FLOOR_BUCKETS: usize = 256;

    /// The bucket of the selection's starting-cut histogram (`Select::floor` in `score.rs`)
    /// this entry falls in: `score * coverage`'s bits shifted right by [`Acc::FLOOR_SHIFT`],
    /// less [`Acc::FLOOR_LOW`], within `0..FLOOR_BUCKETS`, if the product is positive (else 0).
    /// A positive float's bits order as its value, so every product in a bucket `b` above 0
    /// is at least [`Acc::floor_value`] of `b`. The scalar rule of the SIMD kernel
    /// (`select_avx2.rs`), which must agree.
    #[inline(always)]
    pub(crate) fn floor_bucket(self) -> usize {
        let x = self.score * self.coverage;
        if x > 0.0 {
            // Below 2^31, as a positive float's bits are.
            let shifted = (x.to_bits() >> Acc::FLOOR_SHIFT) as i32;
            (shifted - Acc::FLOOR_LOW).clamp(0, Acc::FLOOR_BUCKETS as i32 - 1) as usize
        } else {
            0
        }
    }

    /// The smallest product [`Acc::floor_bucket`] puts in bucket `b` (for `b` above 0).
    pub(crate) fn floor_value(b: usize) -> f32 {
        let b = b.min(Acc::FLOOR_BUCKETS - 1) as u32;
        f32::from_bits((b + Acc::FLOOR_LOW as u32) << Acc::FLOOR_SHIFT)
    }

    /// The selection's stand-in for a tool number past the accumulator: it passes every test
    /// (the selection then passes over it).
    const PAST: Acc = Acc {
        score: 1.0,
        coverage: 1.0,
    };

    /// The entry of tool `d` in `acc`, or [`Acc::PAST`].
    #[inline(always)]
    pub(crate) fn listed(acc: &[Acc], d: u32) -> Acc {
        acc.get(d as usize).copied().unwrap_or(Acc::PAST)
    }

    /// Whether the entry can still make the selection's cut: `score * factor` (with `EXACT`,
    /// `score * coverage * factor`) is not below `cut`, and the score is not at or below 0 (an
    /// unordered comparison passes). The one rule of the scalar selection (`score.rs`) and of
    /// its SIMD kernels' leftover entries (`select_avx2.rs`), which must agree to the bit.
    #[inline(always)]
    pub(crate) fn passes<const EXACT: bool>(self, factor: f32, cut: f32) -> bool {
        let x = if EXACT {
            self.score * self.coverage * factor
        } else {
            self.score * factor
        };
        !((x < cut) | (self.score <= 0.0))
    }
}

impl Avx512 {
    /// Adds the first `len` entries of `block` to `acc`, as the scalar loop of
    /// [`Scratch::add_list`] does, 8 at a time: each entry's tool gets `weight` times its
    /// impact added to its score and `share` to its coverage; with `LIST`, the tools whose
    /// coverage was 0 are written to the start of `fresh` in block order, and their number
    /// returned (0 without `LIST`).
    ///
    /// The tool numbers of a block are distinct, so the 8 entries gathered at once never
    /// overlap and a scatter writes each back once; the products and sums are the scalar
    /// loop's IEEE operations on the same values, so the same bits. If the block's tools are
    /// not all in `acc` (a damaged file, which `in_range` has cut off already), nothing is
    /// added.
    #[inline]
    pub(crate) fn add_block<const LIST: bool>(
        self,
        acc: &mut [Acc],
        block: &Block,
        len: usize,
        weight: f32,
        share: f32,
        fresh: &mut [u32; BLOCK],
    ) -> usize {
        let len = len.min(BLOCK);
        // Tool numbers ascend in a block, so the last is the largest; a gather's indices are
        // signed 32-bit.
        let fits = match block.docs[..len].last() {
            None => return 0,
            Some(&last) => (last as usize) < acc.len() && i32::try_from(last).is_ok(),
        };
        if !fits {
            return 0;
        }
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: `self` proves AVX-512F and VL were detected; every tool number of the
            // first `len` entries is below `acc.len()` (the last is the largest) and below
            // 2^31.
            unsafe { add_block_avx512::<LIST>(acc, block, len, weight, share, fresh) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        match self {}
    }
}

/// [`Avx512::add_block`].
///
/// # Safety
///
/// The CPU has AVX-512F and VL; `len` is at most [`BLOCK`], and each of the first `len` tool
/// numbers of `block` is below `acc.len()` and 2^31.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,popcnt")]
unsafe fn add_block_avx512<const LIST: bool>(
    acc: &mut [Acc],
    block: &Block,
    len: usize,
    weight: f32,
    share: f32,
    fresh: &mut [u32; BLOCK],
) -> usize {
    use std::arch::x86_64::{
        __m256i, _mm_loadu_si128, _mm256_cvtepi32_ps, _mm256_cvtepu16_epi32, _mm256_loadu_si256,
        _mm256_mask_compressstoreu_epi32, _mm256_mul_ps, _mm256_set1_ps, _mm512_add_ps,
        _mm512_castps_si512, _mm512_castps256_ps512, _mm512_castsi512_ps,
        _mm512_mask_i32gather_epi64, _mm512_mask_i32scatter_epi64, _mm512_mask_testn_epi64_mask,
        _mm512_permutex2var_ps, _mm512_set1_epi64, _mm512_set1_ps, _mm512_setr_epi32,
        _mm512_setzero_si512,
    };
    let base = acc.as_mut_ptr().cast::<i64>();
    let w = _mm256_set1_ps(weight);
    let shares = _mm512_set1_ps(share);
    // Lane 2i takes product i, lane 2i + 1 the share (index 16: the first lane of `shares`):
    // 8 (score, coverage) pairs in the layout of `Acc`.
    let pairs = _mm512_setr_epi32(0, 16, 1, 16, 2, 16, 3, 16, 4, 16, 5, 16, 6, 16, 7, 16);
    // The coverage half of each pair, but its sign: `coverage == 0.0` holds for both zeros.
    let coverage_bits = _mm512_set1_epi64(0x7fff_ffff_0000_0000);
    let mut k = 0usize;
    let mut i = 0;
    while i < len {
        let lanes = (len - i).min(8);
        let mask = (0xffu16 >> (8 - lanes)) as u8;
        // SAFETY: `docs` and `impacts` hold `BLOCK` entries and `i + 8 <= BLOCK` (`BLOCK` is a
        // multiple of 8), so the loads stay in the arrays; the gather and scatter touch only
        // the `mask` lanes, whose tool numbers are in `acc` (the caller's promise), each once.
        unsafe {
            let docs = _mm256_loadu_si256(block.docs.as_ptr().add(i).cast::<__m256i>());
            let impacts = _mm_loadu_si128(block.impacts.as_ptr().add(i).cast());
            let s = _mm256_mul_ps(w, _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(impacts)));
            let add = _mm512_permutex2var_ps(_mm512_castps256_ps512(s), pairs, shares);
            let old = _mm512_mask_i32gather_epi64::<8>(_mm512_setzero_si512(), mask, docs, base);
            if LIST {
                let first = _mm512_mask_testn_epi64_mask(mask, old, coverage_bits);
                _mm256_mask_compressstoreu_epi32(
                    fresh.as_mut_ptr().add(k).cast::<i32>(),
                    first,
                    docs,
                );
                k += first.count_ones() as usize;
            }
            let new = _mm512_add_ps(_mm512_castsi512_ps(old), add);
            _mm512_mask_i32scatter_epi64::<8>(base, mask, docs, _mm512_castps_si512(new));
        }
        i += 8;
    }
    k
}

/// The counts of [`Acc::floor_bucket`]s, in 8 tables that [`floor_counts`] adds up: the `i`th
/// entry counted goes to table `i % 8` (the SIMD kernel: lane `i`), so that a run of entries in
/// one bucket (the untouched tools of a dense pass all are in bucket 0) does not make each
/// count wait for the one before (in one table, the histogram took as long as adding the
/// postings, on the 195 slowest queries at 2,723 tools). Counts of at most
/// `8 * u16::MAX` entries.
pub(crate) type FloorTables = [[u16; Acc::FLOOR_BUCKETS]; 8];

/// Each bucket's count over the 8 tables.
pub(crate) fn floor_counts(tables: &FloorTables) -> [u32; Acc::FLOOR_BUCKETS] {
    let mut counts = [0u32; Acc::FLOOR_BUCKETS];
    for table in tables {
        for (c, &t) in counts.iter_mut().zip(table) {
            *c += u32::from(t);
        }
    }
    counts
}

thread_local! {
    pub(crate) static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format;
    use crate::postings::put_postings;

    /// A scratch after one required, exact term in the name of tools 1, 5 and 9 of 12.
    fn accumulated(listed: bool) -> Scratch {
        let mut bytes = Vec::new();
        let name = format::NAME_BIT;
        put_postings(&mut bytes, &[(1, 7 | name), (5, 3), (9, 2 | name)]);
        let cursors = [Cursor::new(PostingList::new(&bytes, 0), 1.0)];
        let group = Group::new(&cursors, 0, true);
        let mut sc = Scratch::default();
        sc.prepare(12);
        if listed {
            sc.accumulate::<true>(&group, 0.5, true);
        } else {
            sc.accumulate::<false>(&group, 0.5, true);
        }
        sc
    }

    fn all_clear(sc: &Scratch) -> bool {
        sc.acc.iter().all(|a| a.score == 0.0 && a.coverage == 0.0)
            && sc.name.iter().all(|&m| m == 0)
            && sc.required.iter().all(|&m| m == 0)
    }

    /// A block of `len` entries with ascending tools (every third or so, up to 390) and
    /// impacts of many sizes.
    fn block(len: usize) -> Block {
        let mut block = Block::new();
        for i in 0..BLOCK {
            block.docs[i] = (i * 3 + i % 2) as u32;
            block.impacts[i] = ((i * 7919) % 32768) as u16;
        }
        block.len = len;
        block
    }

    /// An accumulator of 400 tools, every fifth already touched.
    fn touched_every_fifth() -> Vec<Acc> {
        (0..400)
            .map(|d| match d % 5 {
                0 => Acc {
                    score: 1.5 + d as f32 * 0.01,
                    coverage: 0.25,
                },
                _ => Acc::default(),
            })
            .collect()
    }

    fn bits(acc: &[Acc]) -> Vec<(u32, u32)> {
        acc.iter()
            .map(|a| (a.score.to_bits(), a.coverage.to_bits()))
            .collect()
    }

    #[test]
    fn the_avx512_block_adds_and_lists_as_the_scalar_loop_does() {
        let Some(k) = Avx512::detect() else {
            return;
        };
        let (weight, share) = (0.37, 0.125);
        for len in [0, 1, 7, 8, 9, 63, 100, BLOCK] {
            let block = block(len);
            let mut simd = touched_every_fifth();
            let mut fresh = [0u32; BLOCK];
            let listed = k.add_block::<true>(&mut simd, &block, len, weight, share, &mut fresh);
            let mut scalar = touched_every_fifth();
            let mut first = Vec::new();
            for (&d, &q) in block.docs[..len].iter().zip(&block.impacts) {
                let a = &mut scalar[d as usize];
                if a.coverage == 0.0 {
                    first.push(d);
                }
                a.score += weight * f32::from(q);
                a.coverage += share;
            }
            assert_eq!(&fresh[..listed], &first[..], "{len} entries");
            assert_eq!(bits(&simd), bits(&scalar), "{len} entries");
        }
    }

    #[test]
    fn the_avx512_block_adds_nothing_when_a_tool_is_past_the_accumulator() {
        let Some(k) = Avx512::detect() else {
            return;
        };
        let mut acc = vec![Acc::default(); 100];
        let mut fresh = [0u32; BLOCK];
        assert_eq!(
            k.add_block::<true>(&mut acc, &block(BLOCK), BLOCK, 1.0, 1.0, &mut fresh),
            0
        );
        assert!(acc.iter().all(|a| a.score == 0.0 && a.coverage == 0.0));
    }

    #[test]
    fn accumulating_sets_score_name_and_required_of_listed_tools() {
        let sc = accumulated(true);
        assert_eq!(sc.touched, [1, 5, 9]);
        assert_eq!(sc.acc[1].score, 7.0);
        assert_eq!((sc.name[1], sc.name[5], sc.required[9]), (1, 0, 1));
    }

    #[test]
    fn a_sparse_reset_clears_every_entry_of_the_touched_tools() {
        let mut sc = accumulated(true);
        sc.reset(false);
        assert!(all_clear(&sc));
    }

    #[test]
    fn a_dense_reset_clears_every_name_and_required_count() {
        let mut sc = accumulated(false);
        sc.acc.fill(Acc::default());
        sc.reset(true);
        assert!(all_clear(&sc));
    }
}
