//! The second stage of a search: the best first-stage tools re-scored from their stored
//! re-ranking words, the stems of their name, description and `enum` values written at build
//! (adjacent query word pairs, `enum` values, how much of the description the query explains),
//! then, for a query of several sentences, reordered so each sentence gets tools for it (see
//! [`Ranking`]). The query's words and sentences are those [`crate::terms::query_terms`] split
//! the free text into ([`FreeWords`]), not split again here.

use crate::file::IndexFile;
use crate::ranking::Ranking;
use crate::record;
use crate::terms::{FreeWords, MAX_QUERY_TERMS, QueryTerm};
use crate::text;
use crate::words::Words;

/// Multiplies the first-stage scores of `ranked` by
/// the phrase, enum-value and name-substring factors described on
/// [`Ranking`],
/// diversifies the order of a query of several sentences, and leaves
/// `ranked` in its final order.
pub(crate) fn rerank(
    file: &IndexFile,
    r: &Ranking,
    free: &FreeWords,
    terms: &[QueryTerm],
    term_idf: &[f32],
    ranked: &mut [(f32, u32)],
) {
    // The per-thread array of the query's stems by number, or (if this thread's is in use,
    // which no caller does) one of this search's own.
    SLOTS.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slots) => rescore(file, r, free, terms, term_idf, ranked, &mut slots),
        Err(_) => rescore(file, r, free, terms, term_idf, ranked, &mut Vec::new()),
    });
}

/// [`rerank`], with `slots` the array of its [`ByNumber`].
fn rescore(
    file: &IndexFile,
    r: &Ranking,
    free: &FreeWords,
    terms: &[QueryTerm],
    term_idf: &[f32],
    ranked: &mut [(f32, u32)],
    slots: &mut Vec<u16>,
) {
    // The free text's terms in order, numbered, so that a tool's words become numbers and its
    // phrases pairs of numbers.
    // Each pair as one integer ([`pair_key`]): sorted and searched as pairs of `u32`, they took
    // half again the instructions (callgrind, the 195 slowest queries at 2,723 tools).
    let mut pairs: Vec<u64> = free
        .seq
        .windows(2)
        .filter(|w| w[0] != w[1])
        .map(|w| pair_key(w[0], w[1]))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    // Only if they count (they do not by default).
    let long_words: Vec<&str> = if r.name_substring != 0.0 {
        terms
            .iter()
            .filter(|t| !t.required && t.word.chars().count() >= 4)
            .filter(|t| t.word.chars().all(char::is_alphabetic))
            .map(|t| t.word.as_str())
            .collect()
    } else {
        Vec::new()
    };
    let total = terms.len().max(1) as f32;
    let idf_total: f32 = term_idf.iter().sum::<f32>().max(f32::MIN_POSITIVE);
    // The query's stems by their number in the index's re-ranking vocabulary; a stem not
    // there is no word of any tool.
    let by_number = numbered(terms, &free.extra, file.words(), slots);
    let mut found: Vec<usize> = Vec::new();
    // The query's words in a list of a tool's (see [`scan`]).
    let mut hits: Vec<(u32, u32)> = Vec::new();
    // A tool's name, lowercased.
    let mut lower = String::new();
    let aspects = if r.diversity != 0.0 {
        sentence_masks(free, terms.len())
    } else {
        Vec::new()
    };
    let diversifies = aspects.len() >= DIVERSIFY_MIN_SENTENCES;
    let bigram = r.bigram != 0.0 && !pairs.is_empty();
    // Per ranked tool: which query terms its name or description holds.
    let mut masks: Vec<u64> = Vec::with_capacity(ranked.len());
    for (score, d) in ranked.iter_mut() {
        masks.push(0);
        let Some((name, mut words)) = file.record(*d as usize).and_then(record::rerank_of) else {
            continue;
        };
        // Each list's words that are the query's, with their places in it (see [`scan`]),
        // then what they hold: the query terms, and the adjacent pairs of query words (as
        // numbers) within the name and within the description (a pair across the two is not
        // one).
        found.clear();
        let mut pairs_of = |hits: &[(u32, u32)]| {
            if !bigram {
                return;
            }
            for w in hits.windows(2) {
                let ((at, prev), (next, id)) = (w[0], w[1]);
                if at + 1 == next
                    && let Ok(k) = pairs.binary_search(&pair_key(prev, id))
                {
                    found.push(k);
                }
            }
        };
        let mask_of = |hits: &[(u32, u32)]| hits.iter().fold(0u64, |m, &(_, id)| m | term_bit(id));
        scan(&mut words, by_number.table(), &mut hits);
        let name_mask = mask_of(&hits);
        pairs_of(&hits);
        // The query terms the description holds.
        let description = scan(&mut words, by_number.table(), &mut hits);
        let held = mask_of(&hits);
        pairs_of(&hits);
        scan(&mut words, by_number.table(), &mut hits);
        let enum_mask = mask_of(&hits);
        let mut factor = 1.0;
        if r.enum_match != 0.0 && enum_mask != 0 {
            let (mut bits, mut sum) = (enum_mask, 0.0);
            while bits != 0 {
                sum += term_idf[bits.trailing_zeros() as usize];
                bits &= bits - 1;
            }
            factor *= 1.0 + r.enum_match * sum / idf_total;
        }
        if diversifies && let Some(m) = masks.last_mut() {
            *m = name_mask | held;
        }
        if bigram {
            found.sort_unstable();
            found.dedup();
            factor *= 1.0 + r.bigram * found.len() as f32 / pairs.len() as f32;
        }
        if r.desc_coverage != 0.0 && description > 0 {
            // Over the description's length.
            let share = held.count_ones() as f32 / description as f32;
            factor *= 1.0 + r.desc_coverage * share;
        }
        if r.name_substring != 0.0 && !long_words.is_empty() {
            lower.clear();
            if name.is_ascii() {
                lower.push_str(name);
                lower.make_ascii_lowercase();
            } else {
                lower.push_str(&name.to_lowercase());
            }
            let hits = long_words
                .iter()
                .filter(|w| lower.contains(**w) && !is_word_of(name, w))
                .count();
            factor *= 1.0 + r.name_substring * hits as f32 / total;
        }
        *score *= factor;
    }
    let by_rank = |a: &(usize, (f32, u32)), b: &(usize, (f32, u32))| {
        b.1.0.total_cmp(&a.1.0).then(a.1.1.cmp(&b.1.1))
    };
    let mut order: Vec<(usize, (f32, u32))> = ranked.iter().copied().enumerate().collect();
    order.sort_unstable_by(by_rank);
    // The scores, best first, handed out in the final order: `order`'s, taken before it is
    // diversified (sorting them again after took a tenth of diversifying).
    let scores: Vec<f32> = order.iter().map(|o| o.1.0).collect();
    if aspects.len() >= DIVERSIFY_MIN_SENTENCES && r.diversity != 0.0 {
        diversify(r.diversity, &mut order, &masks, &aspects, term_idf);
    }
    for ((slot, (_, (_, d))), score) in ranked.iter_mut().zip(&order).zip(scores) {
        *slot = (score, *d);
    }
}

/// Reorders `order` (best first; each entry's index into `masks`)
/// greedily, as xQuAD does with query aspects: each next tool maximises
/// `(1 - diversity) * score / best score + diversity * novel / total`,
/// where `novel` is the IDF of the query words of each sentence that the
/// tool's name or description holds and no tool placed before it held
/// for that sentence, summed over sentences, and `total` the same sum
/// for all the sentences' words.
fn diversify(
    lambda: f32,
    order: &mut [(usize, (f32, u32))],
    masks: &[u64],
    aspects: &[u64],
    term_idf: &[f32],
) {
    let idf_of = |mut bits: u64| {
        let mut sum = 0.0;
        while bits != 0 {
            sum += term_idf
                .get(bits.trailing_zeros() as usize)
                .copied()
                .unwrap_or(0.0);
            bits &= bits - 1;
        }
        sum
    };
    let total: f32 = aspects.iter().map(|&a| idf_of(a)).sum();
    let best = order.first().map_or(0.0, |o| o.1.0);
    if total <= 0.0 || best <= 0.0 {
        return;
    }
    // Per sentence, its words no placed tool holds yet.
    let mut uncovered: Vec<u64> = aspects.to_vec();
    let novel_of =
        |mask: u64, uncovered: &[u64]| -> f32 { uncovered.iter().map(|&u| idf_of(mask & u)).sum() };
    // Per tool (by its index into `masks`), the IDF its words add to the placed tools'. A
    // tool's is computed again only when a placed tool shares a word with it: otherwise its
    // words not yet covered are the same, and so is the sum. Summing every tool's again at
    // each place cost `diversify` a third more (callgrind, the 200 slowest queries).
    let mut novel: Vec<f32> = masks.iter().map(|&m| novel_of(m, &uncovered)).collect();
    let k = order.len().min(DIVERSIFY_DEPTH);
    for placed in 0..k {
        let mut pick = placed;
        let mut pick_value = f32::NEG_INFINITY;
        for (j, &(i, (score, _))) in order.iter().enumerate().skip(placed) {
            let value = (1.0 - lambda) * score / best + lambda * novel[i] / total;
            if value > pick_value {
                pick = j;
                pick_value = value;
            }
        }
        order[placed..=pick].rotate_right(1);
        if placed + 1 == k {
            break;
        }
        // The words the placed tool covers that some sentence still lacked: a tool holding
        // none of them keeps the same uncovered words in every sentence, so the same sum
        // (recomputing every tool that shares any word with the placed one took a third of
        // diversifying the slowest queries: callgrind).
        let covered = masks[order[placed].0];
        let newly = covered & uncovered.iter().fold(0, |all, &u| all | u);
        for u in &mut uncovered {
            *u &= !covered;
        }
        if newly == 0 {
            continue;
        }
        for &(i, _) in &order[placed + 1..] {
            if masks[i] & newly != 0 {
                novel[i] = novel_of(masks[i], &uncovered);
            }
        }
    }
}

/// True if `word` is one of the [`text::words`] of `name`.
fn is_word_of(name: &str, word: &str) -> bool {
    let mut found = false;
    text::for_each_word(name, |p| found |= p == word);
    found
}

/// The number of a word no query term nor free-text word has.
const NONE: u32 = u32::MAX;

/// The [`FreeWords`] number of each stem of the query terms and of the free text's other words
/// (`extra`), keyed by its number in the index's re-ranking vocabulary `numbers` (stems not
/// there are no word of any tool, and are left out).
fn numbered<'s>(
    terms: &[QueryTerm],
    extra: &[String],
    numbers: &Words,
    slots: &'s mut Vec<u16>,
) -> ByNumber<'s> {
    let of_terms = terms
        .iter()
        .enumerate()
        .map(|(i, t)| (t.stem.as_str(), i as u32));
    let of_extra = extra
        .iter()
        .enumerate()
        .map(|(k, s)| (s.as_str(), (MAX_QUERY_TERMS + k) as u32));
    ByNumber::new(
        slots,
        of_terms.chain(of_extra).filter_map(|(stem, id)| {
            Some((u32::try_from(numbers.number(stem.as_bytes())?).ok()?, id))
        }),
    )
}

/// The query's stems by their number in the index's re-ranking vocabulary, looked up once per
/// word of every re-ranked tool (most of them not the query's): a per-thread array indexed by
/// number, as long as the largest of the query's numbers, holding each one's [`FreeWords`]
/// number plus one (0 for a number no query stem has). A number past it is no query stem's.
/// A hash table of the query's numbers cost a multiply, a probe and two tests a word; this is
/// a bounds test and a load.
///
/// Its memory is two bytes per vocabulary number up to the largest a query has looked up on
/// this thread (at most the vocabulary's size), kept for the next search; the entries a search
/// set are cleared when it is dropped.
struct ByNumber<'s> {
    slots: &'s mut Vec<u16>,
    /// The numbers set.
    set: Vec<u32>,
}

impl<'s> ByNumber<'s> {
    fn new(slots: &'s mut Vec<u16>, entries: impl Iterator<Item = (u32, u32)>) -> ByNumber<'s> {
        let mut set = Vec::new();
        for (number, id) in entries {
            // `id` is below `MAX_QUERY_TERMS` plus the free text's words, which a query of at
            // most `MAX_QUERY_BYTES` keeps far below `u16::MAX`; one that is not is left out.
            let Ok(value) = u16::try_from(id + 1) else {
                continue;
            };
            let at = number as usize;
            if at >= slots.len() {
                slots.resize(at + 1, 0);
            }
            slots[at] = value;
            set.push(number);
        }
        ByNumber { slots, set }
    }

    /// The array: by vocabulary number, the [`FreeWords`] number plus one, or 0.
    fn table(&self) -> &[u16] {
        self.slots
    }

    /// The [`FreeWords`] number of the stem numbered `number` in the vocabulary, or [`NONE`].
    #[cfg(test)]
    fn get(&self, number: u32) -> u32 {
        lookup(self.slots, number)
    }
}

impl Drop for ByNumber<'_> {
    fn drop(&mut self) {
        for &n in &self.set {
            if let Some(v) = self.slots.get_mut(n as usize) {
                *v = 0;
            }
        }
    }
}

/// Reads the next list of `words` (see [`record::RerankWords::list`]), putting in `hits`
/// (cleared first) each word the query has, as its place in the list and its [`FreeWords`]
/// number (by `table`, see [`ByNumber`]), in order; returns the list's length.
///
/// A function of its own, not inlined: in the re-ranking's large body, the reader and the
/// table were read from the stack at every word, and a word took twice the instructions
/// (callgrind, 3,000 queries at 2,723 tools). Reading a tool's three lists in one call, with
/// their hits told apart by place, took more.
#[inline(never)]
fn scan(words: &mut record::RerankWords<'_>, table: &[u16], hits: &mut Vec<(u32, u32)>) -> usize {
    hits.clear();
    let mut at = 0u32;
    words.list(|w| {
        let id = lookup(table, w);
        if id != NONE {
            hits.push((at, id));
        }
        at = at.wrapping_add(1);
    })
}

/// The [`FreeWords`] number of the vocabulary number `number` in the array of a [`ByNumber`],
/// or [`NONE`].
#[inline(always)]
fn lookup(table: &[u16], number: u32) -> u32 {
    match table.get(number as usize) {
        Some(&v) => u32::from(v).wrapping_sub(1),
        None => NONE,
    }
}

/// Two [`FreeWords`] numbers in a row as one integer, whose order is that of the pairs.
#[inline(always)]
fn pair_key(first: u32, second: u32) -> u64 {
    (u64::from(first) << 32) | u64::from(second)
}

/// The query-term bit of a [`FreeWords`] number: `1 << id` for a query term, 0 for another
/// word or [`NONE`].
#[inline(always)]
fn term_bit(id: u32) -> u64 {
    if (id as usize) < MAX_QUERY_TERMS {
        1u64 << id
    } else {
        0
    }
}

thread_local! {
    /// The array of [`ByNumber`], reused by every search on this thread.
    static SLOTS: std::cell::RefCell<Vec<u16>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How many of the first places [`diversify`] fills.
const DIVERSIFY_DEPTH: usize = 10;

/// The fewest sentences a query needs to be diversified: a request in
/// three or more sentences is usually a task of several steps, while one
/// or two sentences usually ask for one thing (perhaps with a greeting or
/// context). With two, diversifying lost on the tune halves of BFCL and
/// MetaTool what it gained on Seal-Tools.
const DIVERSIFY_MIN_SENTENCES: usize = 3;

/// The query terms (as bits of the `terms` query terms) of each sentence of the free text that
/// has any.
fn sentence_masks(free: &FreeWords, terms: usize) -> Vec<u64> {
    let mut out = Vec::new();
    let mut start = 0;
    for &end in &free.sentences {
        let mut mask = 0u64;
        for &id in free.seq.get(start..end).unwrap_or_default() {
            if (id as usize) < terms {
                mask |= 1u64 << id;
            }
        }
        start = end;
        if mask != 0 {
            out.push(mask);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_number_gives_each_query_number_its_word_and_every_other_number_none() {
        let mut slots = Vec::new();
        let table = ByNumber::new(&mut slots, [(7, 0), (3, 65), (1_000, 2)].into_iter());
        assert_eq!([table.get(7), table.get(3), table.get(1_000)], [0, 65, 2]);
        for other in [0, 4, 8, 999, 1_001, u32::MAX] {
            assert_eq!(table.get(other), NONE);
        }
    }

    #[test]
    fn by_number_leaves_the_array_clear_for_the_next_search() {
        let mut slots = Vec::new();
        drop(ByNumber::new(&mut slots, [(9, 1), (2, 3)].into_iter()));
        assert!(slots.len() >= 10 && slots.iter().all(|&v| v == 0));
        let table = ByNumber::new(&mut slots, [(4, 0)].into_iter());
        assert_eq!([table.get(9), table.get(2), table.get(4)], [NONE, NONE, 0]);
    }

    #[test]
    fn term_bits_are_those_of_query_terms_only() {
        assert_eq!(term_bit(0), 1);
        assert_eq!(term_bit(63), 1 << 63);
        assert_eq!(term_bit(MAX_QUERY_TERMS as u32), 0);
        assert_eq!(term_bit(NONE), 0);
    }
}
