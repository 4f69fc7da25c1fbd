//! The second stage of a search: the best first-stage tools re-scored from their stored
//! re-ranking words, the stems of their name, description and `enum` values written at build
//! (adjacent query word pairs, `enum` values, how much of the description the query explains),
//! then, for a query of several sentences, reordered so each sentence gets tools for it (see
//! [`Ranking`]).

use std::collections::HashMap;

use fst::Map;

use crate::file::IndexFile;
use crate::hash::FxBuild;
use crate::ranking::Ranking;
use crate::record;
use crate::terms::QueryTerm;
use crate::text;

/// Multiplies the first-stage scores of `ranked` by
/// the phrase, enum-value and name-substring factors described on
/// [`Ranking`],
/// diversifies the order of a query of several sentences, and leaves
/// `ranked` in its final order.
pub(crate) fn rerank(
    file: &IndexFile,
    r: &Ranking,
    free: &str,
    terms: &[QueryTerm],
    term_idf: &[f32],
    ranked: &mut [(f32, u32)],
) {
    // The stems of the free text's words in order, numbered, so that a
    // tool's words become numbers and its phrases pairs of numbers.
    let seq = Stems::of(free);
    let vocab = Vocab::new(terms, &seq);
    let seq_ids: Vec<u32> = seq.iter().map(|s| vocab.id(s)).collect();
    let mut pairs: Vec<(u32, u32)> = seq_ids
        .windows(2)
        .filter(|w| w[0] != w[1])
        .map(|w| (w[0], w[1]))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    let long_words: Vec<&str> = terms
        .iter()
        .filter(|t| !t.required && t.word.chars().count() >= 4)
        .filter(|t| t.word.chars().all(char::is_alphabetic))
        .map(|t| t.word.as_str())
        .collect();
    let total = terms.len().max(1) as f32;
    let idf_total: f32 = term_idf.iter().sum::<f32>().max(f32::MIN_POSITIVE);
    // The query's stems by their number in the index's re-ranking vocabulary; a stem not
    // there is no word of any tool.
    let by_number = vocab.numbered(file.rerank_terms());
    let of = |n: u32| by_number.get(n);
    // A tool's name and description words as vocabulary numbers
    // (`Vocab::NONE` for words the query does not have).
    let mut ids: Vec<u32> = Vec::new();
    let mut found: Vec<usize> = Vec::new();
    // A tool's name, lowercased.
    let mut lower = String::new();
    let aspects = if r.diversity != 0.0 {
        sentence_masks(&seq, &vocab)
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
        ids.clear();
        let mut name_mask = 0u64;
        let name_end = words.list(|w| {
            let (id, bit) = of(w);
            ids.push(id);
            name_mask |= bit;
        });
        // The query terms the description holds.
        let mut held = 0u64;
        words.list(|w| {
            let (id, bit) = of(w);
            ids.push(id);
            held |= bit;
        });
        let mut enum_mask = 0u64;
        words.list(|w| enum_mask |= of(w).1);
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
            found.clear();
            for (i, w) in ids.windows(2).enumerate() {
                if i + 1 != name_end
                    && w[0] != Vocab::NONE
                    && w[1] != Vocab::NONE
                    && let Ok(k) = pairs.binary_search(&(w[0], w[1]))
                {
                    found.push(k);
                }
            }
            found.sort_unstable();
            found.dedup();
            factor *= 1.0 + r.bigram * found.len() as f32 / pairs.len() as f32;
        }
        if r.desc_coverage != 0.0 && ids.len() > name_end {
            // Over the description's length.
            let share = held.count_ones() as f32 / (ids.len() - name_end) as f32;
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
    if aspects.len() >= DIVERSIFY_MIN_SENTENCES && r.diversity != 0.0 {
        diversify(r.diversity, &mut order, &masks, &aspects, term_idf);
    }
    // The scores, best first, handed out in the final order.
    let mut scores: Vec<f32> = order.iter().map(|o| o.1.0).collect();
    scores.sort_unstable_by(|a, b| b.total_cmp(a));
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
    let k = order.len().min(DIVERSIFY_DEPTH);
    for placed in 0..k {
        let mut pick = placed;
        let mut pick_value = f32::NEG_INFINITY;
        for (j, &(i, (score, _))) in order.iter().enumerate().skip(placed) {
            let novel: f32 = uncovered.iter().map(|&u| idf_of(masks[i] & u)).sum();
            let value = (1.0 - lambda) * score / best + lambda * novel / total;
            if value > pick_value {
                pick = j;
                pick_value = value;
            }
        }
        order[placed..=pick].rotate_right(1);
        let i = order[placed].0;
        for u in &mut uncovered {
            *u &= !masks[i];
        }
    }
}

/// True if `word` is one of the [`text::words`] of `name`.
fn is_word_of(name: &str, word: &str) -> bool {
    let mut found = false;
    text::for_each_word(name, |p| found |= p == word);
    found
}

/// The stems of a text's terms, in order, in one buffer, and where its sentences end.
struct Stems {
    text: String,
    /// Where each stem ends in `text`.
    ends: Vec<usize>,
    /// Per sentence (see [`sentences`]), how many stems there are up to its end.
    sentences: Vec<usize>,
}

impl Stems {
    /// The stems of the [`text::terms`] of `free`, split once: sentences end between words,
    /// so the terms of the sentences, one after the other, are those of the text.
    fn of(free: &str) -> Stems {
        let mut stems = Stems {
            text: String::with_capacity(free.len()),
            ends: Vec::new(),
            sentences: Vec::new(),
        };
        for sentence in sentences(free) {
            text::for_each_term(sentence, |w| {
                stems.text.push_str(&text::stem(w));
                stems.ends.push(stems.text.len());
            });
            stems.sentences.push(stems.ends.len());
        }
        stems
    }

    fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .filter_map(|(start, &end)| self.text.get(start..end))
    }
}

/// The sentences of `free`: they end at `.`, `!`, `?` or `;` followed by a space or the end of
/// the text (the last one at the end of the text).
fn sentences(free: &str) -> impl Iterator<Item = &str> + '_ {
    let bytes = free.as_bytes();
    let mut start = 0;
    (0..bytes.len()).filter_map(move |i| {
        let end = i + 1 == bytes.len();
        let boundary = matches!(bytes[i], b'.' | b'!' | b'?' | b';')
            && bytes.get(i + 1).is_none_or(|c| c.is_ascii_whitespace());
        if boundary || end {
            let sentence = free.get(start..=i);
            start = i + 1;
            sentence
        } else {
            None
        }
    })
}

/// The stems the second stage looks a tool's words up in: the query terms'
/// stems and the stems of the free text's words, each with a number and
/// the bit of the query term with that stem (`1 << index`, or 0).
struct Vocab<'a> {
    map: HashMap<&'a str, (u32, u64), FxBuild>,
}

impl<'a> Vocab<'a> {
    /// The number of a stem that is not in the vocabulary.
    const NONE: u32 = u32::MAX;

    fn new(terms: &'a [QueryTerm], seq: &'a Stems) -> Vocab<'a> {
        let mut map: HashMap<&str, (u32, u64), FxBuild> = HashMap::default();
        for (i, t) in terms.iter().enumerate() {
            let id = map.len() as u32;
            map.entry(t.stem.as_str()).or_insert((id, 1u64 << i));
        }
        for s in seq.iter() {
            let id = map.len() as u32;
            map.entry(s).or_insert((id, 0));
        }
        Vocab { map }
    }

    /// The number and query-term bit of `stem`, or `(NONE, 0)`.
    fn get(&self, stem: &str) -> (u32, u64) {
        self.map.get(stem).copied().unwrap_or((Self::NONE, 0))
    }

    fn id(&self, stem: &str) -> u32 {
        self.get(stem).0
    }

    /// The bit of the query term with this stem, or 0.
    fn bit(&self, stem: &str) -> u64 {
        self.get(stem).1
    }

    /// The number and query-term bit of each stem, keyed by its number in the index's
    /// re-ranking vocabulary `numbers` (stems not there are left out).
    fn numbered<D: AsRef<[u8]>>(&self, numbers: &Map<D>) -> ByNumber {
        ByNumber::new(
            self.map
                .iter()
                .filter_map(|(stem, &v)| Some((u32::try_from(numbers.get(stem)?).ok()?, v))),
        )
    }
}

/// The query's stems by their number in the index's re-ranking vocabulary: a table
/// open-addressed by number, at most a quarter full, looked up once per word of every re-ranked
/// tool (most of them not the query's, so a miss should end at the first slot).
struct ByNumber {
    /// Per slot, the number held, or [`ByNumber::EMPTY`].
    keys: Vec<u64>,
    values: Vec<(u32, u64)>,
    /// Slots less one (a power of two less one).
    mask: usize,
    /// How far right a hash is shifted to give a slot.
    shift: u32,
}

impl ByNumber {
    /// A slot that holds no number (every number fits in 32 bits).
    const EMPTY: u64 = u64::MAX;

    fn new(entries: impl Iterator<Item = (u32, (u32, u64))>) -> ByNumber {
        let entries: Vec<(u32, (u32, u64))> = entries.collect();
        let slots = (entries.len() * 4).next_power_of_two().max(64);
        let mut table = ByNumber {
            keys: vec![Self::EMPTY; slots],
            values: vec![(Vocab::NONE, 0); slots],
            mask: slots - 1,
            shift: 64 - slots.trailing_zeros(),
        };
        for (number, value) in entries {
            let mut i = table.slot(number);
            while table.keys[i] != Self::EMPTY && table.keys[i] != u64::from(number) {
                i = (i + 1) & table.mask;
            }
            table.keys[i] = u64::from(number);
            table.values[i] = value;
        }
        table
    }

    /// The first slot to look for `number` in.
    #[inline]
    fn slot(&self, number: u32) -> usize {
        (u64::from(number).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The vocabulary number and query-term bit of the stem numbered `number`, or `(NONE, 0)`.
    #[inline]
    fn get(&self, number: u32) -> (u32, u64) {
        let mut i = self.slot(number);
        loop {
            match self.keys.get(i) {
                Some(&k) if k == u64::from(number) => return self.values[i],
                Some(&k) if k != Self::EMPTY => i = (i + 1) & self.mask,
                _ => return (Vocab::NONE, 0),
            }
        }
    }
}

/// How many of the first places [`diversify`] fills.
const DIVERSIFY_DEPTH: usize = 10;

/// The fewest sentences a query needs to be diversified: a request in
/// three or more sentences is usually a task of several steps, while one
/// or two sentences usually ask for one thing (perhaps with a greeting or
/// context). With two, diversifying lost on the tune halves of BFCL and
/// MetaTool what it gained on Seal-Tools.
const DIVERSIFY_MIN_SENTENCES: usize = 3;

/// The query terms (as bits of `terms`) of each sentence of the text `seq` holds the stems
/// of that has any (see [`sentences`]).
fn sentence_masks(seq: &Stems, vocab: &Vocab) -> Vec<u64> {
    let mut out = Vec::new();
    let mut stems = seq.iter();
    let mut done = 0;
    for &end in &seq.sentences {
        let mut mask = 0u64;
        for s in stems.by_ref().take(end - done) {
            mask |= vocab.bit(s);
        }
        done = end;
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
    fn sentences_end_at_punctuation_before_a_space_or_the_end() {
        let found: Vec<&str> = sentences("Book a flight. Then v1.2 hotels? Pay;x; ok!").collect();
        assert_eq!(
            found,
            ["Book a flight.", " Then v1.2 hotels?", " Pay;x;", " ok!"]
        );
    }

    proptest::proptest! {
        #[test]
        fn stems_split_by_sentence_are_the_texts_stems(free in "([a-zA-Zé0-9]{1,6}[ .;!?,_-]{0,2}){0,12}") {
            let mut expected = Vec::new();
            text::for_each_term(&free, |w| expected.push(text::stem(w).into_owned()));
            let stems = Stems::of(&free);
            let found: Vec<&str> = stems.iter().collect();
            proptest::prop_assert_eq!(found, expected);
            proptest::prop_assert_eq!(stems.sentences.last().copied(), (!free.is_empty()).then_some(stems.ends.len()));
        }
    }
}
