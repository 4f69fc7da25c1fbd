//! The first stage of a search: every tool sharing a word with the query gets the BM25F score
//! described on [`Ranking`] (the stored impacts times each term's IDF, then the coverage factor
//! and the name bonus), and the best few are kept.

use crate::accumulate::{Acc, Cursor, FloorTables, Group, SCRATCH, floor_counts};
use crate::file::IndexFile;
use crate::format;
use crate::hits::MatchKind;
use crate::lookup::Lookup;
use crate::ranking::Ranking;
use crate::simd::{Avx2, Avx512};
use crate::terms::{MAX_QUERY_TERMS, QueryTerm};

/// The first-stage order: the higher score first, then the lower tool number.
pub(crate) fn by_rank(a: &(f32, u32), b: &(f32, u32)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// Keeps the best `k` of `ranked` by [`by_rank`], in no particular order (none for `k` 0).
pub(crate) fn keep_best(ranked: &mut Vec<(f32, u32)>, k: usize) {
    if ranked.len() <= k {
        return;
    }
    match k.checked_sub(1) {
        Some(last) => {
            ranked.select_nth_unstable_by(last, by_rank);
            ranked.truncate(k);
        }
        None => ranked.clear(),
    }
}

/// The best `depth` tools for the query `terms`, found in the dictionary as `lookups` (one per
/// term), as `(score, tool)` in no particular order; and each term's weight in the coverage
/// factor (its IDF, times the penalty of an expansion; 0 for a term not found), which the
/// second stage weighs query words by.
pub(crate) fn first_stage(
    file: &IndexFile,
    r: &Ranking,
    terms: &[QueryTerm],
    lookups: &[Lookup],
    depth: usize,
) -> (Vec<(f32, u32)>, [f32; MAX_QUERY_TERMS]) {
    // Every term's lists in one vector, and where each term's run of them ends: one
    // allocation a query (a vector of groups and one of cursors per group took 41, 2% of the
    // instructions of the slowest queries at 2,723 tools).
    let lists = lookups
        .iter()
        .map(|l| match l {
            Lookup::Found(_) => 1,
            Lookup::Expanded(e) => e.len(),
            Lookup::Missing => 0,
        })
        .sum();
    let mut cursors: Vec<Cursor<'_>> = Vec::with_capacity(lists);
    let mut spans = [Span::default(); MAX_QUERY_TERMS];
    let mut groups = 0;
    // Each term's weight in the coverage factor: its IDF, times the
    // penalty of an expansion.
    let mut term_w = [0f32; MAX_QUERY_TERMS];
    let mut required_mask = 0u64;
    let scale = 1.0 / f32::from(format::IMPACT_MAX);
    for (i, (term, lookup)) in terms.iter().zip(lookups).enumerate() {
        let bit = 1u64 << i;
        let exact = match lookup {
            Lookup::Found(offset) => {
                let list = file.postings_at(*offset);
                let idf = idf(file.len(), list.len() as u64) * term_weight(r, term);
                term_w[i] = idf;
                if term.required {
                    required_mask |= bit;
                }
                cursors.push(Cursor::new(list, idf * scale));
                true
            }
            Lookup::Expanded(expansions) => {
                cursors.extend(expansions.iter().map(|e| {
                    let list = file.postings_at(e.offset);
                    let idf = idf(file.len(), list.len() as u64) * term_weight(r, term);
                    let factor = match e.kind {
                        MatchKind::Prefix => r.prefix_factor,
                        _ => r.typo_factor,
                    };
                    term_w[i] = term_w[i].max(factor * idf);
                    Cursor::new(list, factor * idf * scale)
                }));
                false
            }
            Lookup::Missing => continue,
        };
        if let Some(span) = spans.get_mut(groups) {
            *span = Span {
                end: cursors.len(),
                term: i,
                exact,
            };
            groups += 1;
        }
    }
    let coverage = Coverage::new(r, terms.len(), &term_w);
    let spans = &spans[..groups];
    let ranked = best(file, r, &cursors, spans, &coverage, required_mask, depth);
    (ranked, term_w)
}

/// Where a query term's lists end in the query's cursors (they start where the term before's
/// end), and what [`Group`] they make.
#[derive(Clone, Copy, Default)]
struct Span {
    end: usize,
    term: usize,
    exact: bool,
}

/// The IDF of a term in `df` of `n` tools: `ln(1 + (n - df + 0.5) / (df + 0.5))`.
fn idf(n: usize, df: u64) -> f32 {
    let (n, df) = (n as f32, df as f32);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// The best `depth` tools by first-stage score, as `(score, tool)`, in
/// no particular order.
///
/// Term at a time: each query term's lists are added into a per-thread
/// accumulator indexed by tool (one multiply-add per posting, since the
/// lists store ready impacts), then the touched tools are scored in
/// full and the best kept in a small heap. Every tool sharing a word
/// with the query is scored: bounds that would let whole lists be
/// skipped (MaxScore) were tried and lost here, because the coverage
/// factor makes a bound on many terms loose, and long queries are the
/// slow ones.
///
fn best(
    file: &IndexFile,
    r: &Ranking,
    cursors: &[Cursor<'_>],
    spans: &[Span],
    coverage: &Coverage,
    required_mask: u64,
    depth: usize,
) -> Vec<(f32, u32)> {
    let n = file.len();
    let postings: usize = cursors.iter().map(|c| c.list.len()).sum();
    // The most the coverage factor and the name bonus can multiply a
    // score by, with a little slack so that rounding can never make this
    // bound smaller than the score it bounds.
    let boost_max = 1.0001 * (1.0 + r.name_coverage.max(0.0));
    let bound = 1.0001 * boost_max * coverage.max_factor();
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let sc = &mut *guard;
        sc.prepare(n);
        // With more postings than half the catalog, most tools will be
        // touched: the candidates are then found by one pass in tool
        // order, and the touched ones need not be listed.
        let listed = postings <= n / 2;
        let mut start = 0;
        for span in spans {
            let Some(lists) = cursors.get(start..span.end) else {
                break;
            };
            start = span.end;
            let g = Group::new(lists, span.term, span.exact);
            let required = required_mask & (1 << g.term) != 0;
            if listed {
                sc.accumulate::<true>(&g, coverage.share[g.term], required);
            } else {
                sc.accumulate::<false>(&g, coverage.share[g.term], required);
            }
        }
        let cands = std::mem::take(&mut sc.touched);
        let mut select = Select {
            file,
            name_coverage: r.name_coverage,
            acc: &mut sc.acc[..n],
            name: &sc.name[..n],
            required: &sc.required[..n],
            required_count: required_mask.count_ones() as u8,
            coverage,
            depth,
            bound,
            boost_max,
        };
        // With most tools touched, one pass in tool order beats jumping
        // around the accumulator in the order they were touched.
        let dense = !listed || cands.len() > n / DENSE_FRACTION;
        let best = if dense {
            select.dense()
        } else {
            select.sparse(&cands)
        };
        sc.touched = cands;
        sc.reset(dense);
        best
    })
}

/// The weight of a query term's IDF (see [`Ranking::number_weight`] and
/// [`Ranking::quote_weight`]).
fn term_weight(r: &Ranking, term: &QueryTerm) -> f32 {
    let w = if term.quoted { r.quote_weight } else { 1.0 };
    if !term.required && term.word.bytes().all(|b| b.is_ascii_digit()) {
        r.number_weight * w
    } else {
        w
    }
}

/// `x^e`, without calling `powf` for the usual exponents.
#[inline]
fn pow(x: f32, e: f32) -> f32 {
    if e == 1.0 {
        x
    } else if e == 0.0 {
        1.0
    } else if e == 2.0 {
        x * x
    } else {
        x.powf(e)
    }
}

/// The coverage factor of [`Ranking`]: `coverage ^ exponent`, where
/// coverage blends the fraction of query terms matched with the fraction
/// of their weight matched. Both fractions are sums over the matched
/// terms, so the coverage is too: each term has a share, added up while
/// its postings are, and a tool's coverage is the sum of its terms' shares.
struct Coverage {
    /// Per query term: `(1 - idf_coverage) / terms + idf_coverage * w /
    /// total w`, at least the smallest positive float (an accumulator entry
    /// with a share of 0 is one no term touched).
    share: [f32; MAX_QUERY_TERMS],
    exponent: f32,
}

impl Coverage {
    fn new(r: &Ranking, terms: usize, term_w: &[f32; MAX_QUERY_TERMS]) -> Coverage {
        let a = r.idf_coverage;
        let per_term = (1.0 - a) / terms.max(1) as f32;
        let total = term_w.iter().sum::<f32>().max(f32::MIN_POSITIVE);
        let share = std::array::from_fn(|i| {
            let w = if a != 0.0 { a * term_w[i] / total } else { 0.0 };
            (per_term + w).max(f32::MIN_POSITIVE)
        });
        Coverage {
            share,
            exponent: r.coverage_exponent,
        }
    }

    /// The factor of a tool whose matched terms' shares sum to `coverage`.
    #[inline]
    fn factor(&self, coverage: f32) -> f32 {
        pow(coverage, self.exponent)
    }

    /// The largest factor any tool can get: that of matching every term.
    fn max_factor(&self) -> f32 {
        if self.exponent < 0.0 {
            return f32::INFINITY;
        }
        self.factor(self.share.iter().sum::<f32>().max(1.0))
    }
}

/// The last step of the first stage: the best `depth` touched tools by
/// final score. Most touched tools cannot make the cut even with the
/// largest factors, which one multiply tells; only the others get their
/// coverage factor and name bonus computed.
struct Select<'a> {
    file: &'a IndexFile,
    /// [`Ranking::name_coverage`].
    name_coverage: f32,
    /// The accumulator of the tools scored (the dense selection clears it).
    acc: &'a mut [Acc],
    name: &'a [u8],
    /// Per tool, how many required terms it matched.
    required: &'a [u8],
    /// How many required terms the query has.
    required_count: u8,
    coverage: &'a Coverage,
    depth: usize,
    /// The most the coverage factor and name bonus together multiply by.
    bound: f32,
    /// The most the name bonus multiplies by.
    boost_max: f32,
}

/// The best tools so far and the score a tool must reach to be kept.
///
/// The tools that reach the cut are gathered in a buffer, and when it holds
/// [`BUFFER_DEPTHS`] times `depth` of them the best `depth` are kept
/// ([`keep_best`]) and the cut raised to the worst of those: a tool costs a push, and a
/// selection over the buffer now and then. (A heap of the best `depth`, the worst on top,
/// cost a sift at every tool that entered it: 4.2% of a search at BFCL's 2,723 tools.)
/// The best `depth` by [`by_rank`] are one set whatever order tools come in, so the result
/// is the same.
struct Best {
    kept: Vec<(f32, u32)>,
    cut: f32,
    depth: usize,
}

/// A [`Best`]'s buffer holds up to this many times its depth before it is cut down.
const BUFFER_DEPTHS: usize = 2;

impl Best {
    /// Keeps `(score, tool)`, whose score is not below the cut.
    #[inline(always)]
    fn push(&mut self, entry: (f32, u32)) {
        self.kept.push(entry);
        if self.kept.len() >= BUFFER_DEPTHS * self.depth {
            self.shrink();
        }
    }

    /// Keeps the best `depth` and raises the cut to the worst of them.
    fn shrink(&mut self) {
        keep_best(&mut self.kept, self.depth);
        if self.kept.len() == self.depth {
            self.cut = self
                .kept
                .iter()
                .map(|e| e.0)
                .min_by(f32::total_cmp)
                .unwrap_or(f32::NEG_INFINITY);
        }
    }
}

impl Select<'_> {
    /// The best of the touched `tools`, as `(score, tool)` in no
    /// particular order.
    ///
    /// As [`Select::dense`] does, 64 tools at a time are first tested without branches, so
    /// that their entries are loaded without waiting on the test of the one before.
    fn sparse(&self, tools: &[u32]) -> Vec<(f32, u32)> {
        let mut best = self.start(Some(tools));
        let exact = self.coverage.exponent == 1.0;
        let simd = Avx2::detect();
        for chunk in tools.chunks(CHUNK) {
            let acc = &*self.acc;
            let mut live = match (simd, exact) {
                (Some(k), true) => k.listed_survivors::<true>(acc, chunk, self.boost_max, best.cut),
                (Some(k), false) => k.listed_survivors::<false>(acc, chunk, self.bound, best.cut),
                (None, true) => listed_survivors_exact(acc, chunk, self.boost_max, best.cut),
                (None, false) => listed_survivors(acc, chunk, self.bound, best.cut),
            };
            while live != 0 {
                let i = live.trailing_zeros() as usize;
                live &= live - 1;
                if let Some(&d) = chunk.get(i) {
                    self.consider(d as usize, &mut best);
                }
            }
        }
        Self::finish(best)
    }

    /// The best of all tools, in tool order (those not touched have a
    /// score of 0 and are passed over), clearing the accumulator as it goes.
    ///
    /// A chunk of 64 tools at a time is first tested without branches
    /// against the cut as it stands (see [`survivors`]); only the tools
    /// that pass are considered one by one. The cut only rises, so a tool
    /// that fails the test would fail it when considered too. The chunk is then cleared while
    /// in cache: with 100,000 tools, clearing the 800 KB accumulator in a pass of its own
    /// took 7% of the instructions of long requests (callgrind).
    fn dense(&mut self) -> Vec<(f32, u32)> {
        let mut best = self.start(None);
        // With the coverage factor the coverage itself (exponent 1, the default), the test
        // can be `consider`'s second one, exact per tool: far fewer tools get through.
        let exact = self.coverage.exponent == 1.0;
        let (simd, wide) = (Avx2::detect(), Avx512::detect());
        let mut from = 0;
        while from < self.acc.len() {
            let to = (from + CHUNK).min(self.acc.len());
            let chunk = &self.acc[from..to];
            let mut live = match (wide, simd, exact) {
                (Some(k), _, true) => k.survivors::<true>(chunk, self.boost_max, best.cut),
                (Some(k), _, false) => k.survivors::<false>(chunk, self.bound, best.cut),
                (None, Some(k), true) => k.survivors::<true>(chunk, self.boost_max, best.cut),
                (None, Some(k), false) => k.survivors::<false>(chunk, self.bound, best.cut),
                (None, None, true) => survivors_exact(chunk, self.boost_max, best.cut),
                (None, None, false) => survivors(chunk, self.bound, best.cut),
            };
            while live != 0 {
                let i = live.trailing_zeros() as usize;
                live &= live - 1;
                self.consider(from + i, &mut best);
            }
            self.acc[from..to].fill(Acc::default());
            from = to;
        }
        Self::finish(best)
    }

    /// An empty [`Best`] whose cut starts at [`Select::floor`] of `tools` (of every tool if
    /// `None`).
    fn start(&self, tools: Option<&[u32]>) -> Best {
        Best {
            kept: Vec::with_capacity(BUFFER_DEPTHS * self.depth),
            cut: self.floor(tools),
            depth: self.depth,
        }
    }

    /// A score at least `depth` of the first [`FLOOR_SAMPLE`] of `tools` (of every tool if
    /// `None`) reach, found before any is considered, or minus infinity.
    ///
    /// Starting from minus infinity, the cut rose only as tools were kept: about 400 were
    /// kept and cut down six times a query in the slowest at 2,723 tools. With the default
    /// coverage exponent (1) and a name bonus that cannot lower a score, a tool's final score
    /// is at least `score * coverage` (in `f32` too: the bonus's factor is at least 1, and
    /// rounding is monotonic), so if `depth` tools have `score * coverage` of at least `t`,
    /// the best `depth` do not score below `t`, and a tool that does is not among them. The
    /// products go in a histogram by their float's exponent and top two mantissa bits (which
    /// orders positive floats as their values), and `t` is the lowest value of the highest
    /// bucket down to which `depth` are counted. Only tools that the selection would keep
    /// are counted: none with a required word (this does not count them), a score at or
    /// below 0 (its product is not positive), or a damaged number.
    fn floor(&self, tools: Option<&[u32]>) -> f32 {
        let name_lowers = !(self.name_coverage >= 0.0 && self.name_coverage.is_finite());
        if self.coverage.exponent != 1.0
            || name_lowers
            || self.required_count != 0
            || self.depth == 0
        {
            return f32::NEG_INFINITY;
        }
        let mut tables: FloorTables = [[0; Acc::FLOOR_BUCKETS]; 8];
        // Only the first tools: `depth` of them reaching a value is `depth` of all. Over
        // 100,000 tools a histogram of all took more than the cut saved (3,446 M -> 3,874 M
        // instructions for 2,000 queries; callgrind), while the selection's own cut, once
        // started, rises as fast.
        let acc = &self.acc[..self.acc.len().min(FLOOR_SAMPLE)];
        match (tools, Avx2::detect()) {
            (None, Some(k)) => k.floor_histogram(acc, &mut tables),
            (None, None) => {
                for (i, a) in acc.iter().enumerate() {
                    tables[i % 8][a.floor_bucket()] += 1;
                }
            }
            (Some(tools), _) => {
                for (i, &d) in tools[..tools.len().min(FLOOR_SAMPLE)].iter().enumerate() {
                    if let Some(a) = self.acc.get(d as usize) {
                        tables[i % 8][a.floor_bucket()] += 1;
                    }
                }
            }
        }
        lowest_reaching(&mut floor_counts(&tables), self.depth)
    }

    fn finish(mut best: Best) -> Vec<(f32, u32)> {
        keep_best(&mut best.kept, best.depth);
        best.kept
    }

    #[inline(always)]
    fn consider(&self, d: usize, best: &mut Best) {
        let Some(&Acc { score, coverage }) = self.acc.get(d) else {
            return;
        };
        if score * self.bound < best.cut
            || score <= 0.0
            || (self.required_count != 0
                && self.required.get(d).copied() != Some(self.required_count))
        {
            return;
        }
        let score = score * self.coverage.factor(coverage);
        if score * self.boost_max < best.cut {
            return;
        }
        let matched = self.name.get(d).copied().unwrap_or(0);
        // 0 matched of at least 1 part is 0 whatever the name's length: its (random, often
        // uncached) read is left out.
        let name_fraction = if matched == 0 {
            0.0
        } else {
            let name_len = self.file.name_len(d);
            let parts = if name_len > 1.0 { name_len - 1.0 } else { 1.0 };
            (f32::from(matched) / parts).min(1.0)
        };
        let score = score * (1.0 + self.name_coverage * name_fraction);
        // A score below the cut is below the best `depth` kept so far.
        if score < best.cut {
            return;
        }
        best.push((score, d as u32));
    }
}

/// The most tools [`Select::floor`] counts: the first so many (as the selection takes them).
/// (Each of the 8 tables of [`FloorTables`] then counts at most 512.)
const FLOOR_SAMPLE: usize = 4096;

/// The lowest value of the highest bucket of `hist` (counts by [`Acc::floor_bucket`]) down
/// to which `depth` products are counted, or minus infinity if fewer are positive: at least
/// `depth` products are at or above it. Bucket 0, which holds the products that are not
/// positive (and the tiniest ones), is not counted, and is cleared.
fn lowest_reaching(hist: &mut [u32; Acc::FLOOR_BUCKETS], depth: usize) -> f32 {
    hist[0] = 0;
    let depth = u32::try_from(depth).unwrap_or(u32::MAX);
    // From the top, 16 buckets at a time (most are empty), then one by one in the 16
    // where `depth` is reached.
    let mut seen = 0u32;
    for (c, sixteen) in hist.chunks_exact(16).enumerate().rev() {
        let sum = sixteen.iter().fold(0u32, |s, &h| s.saturating_add(h));
        if seen.saturating_add(sum) < depth {
            seen = seen.saturating_add(sum);
            continue;
        }
        for (i, &h) in sixteen.iter().enumerate().rev() {
            seen = seen.saturating_add(h);
            if seen >= depth {
                return Acc::floor_value(c * 16 + i);
            }
        }
    }
    f32::NEG_INFINITY
}

/// Tools tested at once by [`survivors`] (the bits of a `u64`).
const CHUNK: usize = 64;

/// Bit `i` set for each entry `i` of `chunk` (at most [`CHUNK`] entries)
/// that [`Select::consider`]'s first test lets through at the cut `cut`: a
/// positive score that, times `bound`, is not below the cut.
#[inline]
fn survivors(chunk: &[Acc], bound: f32, cut: f32) -> u64 {
    let mut pass = [0u8; CHUNK];
    for (p, a) in pass.iter_mut().zip(chunk) {
        *p = u8::from(a.passes::<false>(bound, cut));
    }
    bits(&pass)
}

/// Bit `i` set for each entry `i` of `pass` that is 1 (every entry is 0 or 1). The tests are
/// written to bytes first, a loop the compiler makes vector code of, then gathered 8 at a
/// time by one multiply: byte `j`'s low bit lands in bit `56 + j`, and no two products overlap.
#[inline]
fn bits(pass: &[u8; CHUNK]) -> u64 {
    let mut live = 0u64;
    for (g, eight) in pass.chunks_exact(8).enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(eight);
        let gathered = u64::from_le_bytes(word).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        live |= gathered << (g * 8);
    }
    live
}

/// [`survivors`] with [`Select::consider`]'s second test, for a coverage factor that is the
/// coverage itself (exponent 1): bit `i` set for each entry of `chunk` with a positive score
/// whose score times its coverage, times `boost_max`, is not below the cut. The products are
/// those `consider` computes, so it lets through exactly the tools `consider` would not reject
/// before their name bonus.
#[inline]
fn survivors_exact(chunk: &[Acc], boost_max: f32, cut: f32) -> u64 {
    let mut pass = [0u8; CHUNK];
    for (p, a) in pass.iter_mut().zip(chunk) {
        *p = u8::from(a.passes::<true>(boost_max, cut));
    }
    bits(&pass)
}

/// [`survivors`] of the entries of `acc` numbered in `tools` (at most [`CHUNK`]); a number
/// past `acc` passes ([`Select::consider`] passes over it).
#[inline]
fn listed_survivors(acc: &[Acc], tools: &[u32], bound: f32, cut: f32) -> u64 {
    let mut live = 0u64;
    for (i, &d) in tools.iter().take(CHUNK).enumerate() {
        live |= u64::from(Acc::listed(acc, d).passes::<false>(bound, cut)) << i;
    }
    live
}

/// [`survivors_exact`] of the entries of `acc` numbered in `tools` (at most [`CHUNK`]); a
/// number past `acc` passes ([`Select::consider`] passes over it).
#[inline]
fn listed_survivors_exact(acc: &[Acc], tools: &[u32], boost_max: f32, cut: f32) -> u64 {
    let mut live = 0u64;
    for (i, &d) in tools.iter().take(CHUNK).enumerate() {
        live |= u64::from(Acc::listed(acc, d).passes::<true>(boost_max, cut)) << i;
    }
    live
}

/// A first stage scans every tool in order, rather than the touched ones,
/// when more than one in this many tools was touched.
const DENSE_FRACTION: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(scores: &[f32]) -> Vec<Acc> {
        scores
            .iter()
            .map(|&score| Acc {
                score,
                coverage: if score > 0.0 { 0.5 } else { 0.0 },
            })
            .collect()
    }

    fn histogram(entries: &[Acc]) -> [u32; Acc::FLOOR_BUCKETS] {
        let mut hist = [0u32; Acc::FLOOR_BUCKETS];
        for a in entries {
            hist[a.floor_bucket()] += 1;
        }
        hist
    }

    /// Products spread over many binades, some not positive.
    fn spread(n: usize) -> Vec<Acc> {
        let mut seed = 3u64;
        (0..n)
            .map(|i| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                let r = (seed >> 40) as f32 / (1u64 << 24) as f32;
                Acc {
                    score: if i % 9 == 4 { -r } else { r * r * 40.0 },
                    coverage: if i % 13 == 0 { 0.0 } else { 0.05 + r },
                }
            })
            .collect()
    }

    #[test]
    fn at_least_depth_products_reach_the_floor_and_fewer_the_next_bucket() {
        let entries = spread(3000);
        let mut products: Vec<f32> = entries.iter().map(|a| a.score * a.coverage).collect();
        products.sort_by(|a, b| b.total_cmp(a));
        for depth in [1, 2, 50, 100, 999] {
            let floor = lowest_reaching(&mut histogram(&entries), depth);
            let reaching = |t: f32| products.iter().filter(|&&x| x >= t).count();
            assert!(reaching(floor) >= depth, "depth {depth}");
            let next = f32::from_bits(floor.to_bits() + (1 << Acc::FLOOR_SHIFT));
            // (All the products are within the buckets' range.)
            assert!(reaching(next) < depth, "depth {depth}");
            // Within a quarter binade of the `depth`-th product.
            assert!(floor <= products[depth - 1] && floor > products[depth - 1] * 0.75);
        }
    }

    #[test]
    fn there_is_no_floor_with_fewer_than_depth_positive_products() {
        let entries = acc(&[3.0, 0.0, -2.0, f32::NAN, 1.0]);
        assert_eq!(
            lowest_reaching(&mut histogram(&entries), 3),
            f32::NEG_INFINITY
        );
        assert_eq!(lowest_reaching(&mut histogram(&entries), 2), 0.5);
    }

    #[test]
    fn survivors_are_the_entries_whose_bound_reaches_the_cut() {
        let chunk = acc(&[1.0, 3.0, 2.0, 5.0]);
        assert_eq!(survivors(&chunk, 2.0, 6.0), 0b1010);
    }

    #[test]
    fn survivors_leave_out_untouched_tools_even_without_a_cut() {
        let chunk = acc(&[0.0, 1.0, 0.0, 0.0]);
        assert_eq!(survivors(&chunk, 2.0, f32::NEG_INFINITY), 0b0010);
    }

    #[test]
    fn survivors_of_a_full_chunk_use_all_64_bits() {
        let chunk = acc(&[1.0; CHUNK]);
        assert_eq!(survivors(&chunk, 1.0, 1.0), u64::MAX);
    }

    #[test]
    fn bits_are_set_where_the_bytes_are_one() {
        let mut pass = [0u8; CHUNK];
        for i in [0, 7, 8, 13, 63] {
            pass[i] = 1;
        }
        assert_eq!(bits(&pass), 1 | 1 << 7 | 1 << 8 | 1 << 13 | 1 << 63);
        assert_eq!(bits(&[1; CHUNK]), u64::MAX);
    }

    #[test]
    fn exact_survivors_weigh_each_score_by_its_own_coverage() {
        let chunk = [
            Acc {
                score: 4.0,
                coverage: 0.5,
            },
            Acc {
                score: 4.0,
                coverage: 1.0,
            },
            Acc {
                score: 3.0,
                coverage: 1.0,
            },
            Acc {
                score: 0.0,
                coverage: 0.0,
            },
        ];
        assert_eq!(survivors_exact(&chunk, 1.5, 4.5), 0b0110);
    }
}
