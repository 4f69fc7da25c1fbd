//! The dictionary's words in tables built when an index is opened ([`Words`]): finding a
//! query word, the words it is a prefix of, the words a typo away from it, and its number in
//! the re-ranking vocabulary, without walking an fst.
//!
//! Each of those was an fst walk, which decodes every node on the way (fst's nodes are packed;
//! nothing of one is kept). For the long queries at BFCL's 2,723 tools, most of whose words are
//! not in its dictionary, the typo walk alone was half of a search (callgrind, the slowest 1%
//! of the 19,514 bench queries: 0.80 M instructions a query in lookups), and each query word was
//! looked up once more, in the re-ranking vocabulary.
//!
//! * **Exact, and the re-ranking number**: the single words of the term dictionary (keys
//!   without a name separator) and every key of the re-ranking vocabulary, in one hash table
//!   (seeded at random when it is built: its keys come from the file, and a fixed hash would let
//!   a crafted file make every key collide).
//!   A stem with a separator (a whole name, `get_weather`) is still looked up in the fst.
//! * **Prefix**: the same words in key order; the words a stem is a prefix of are a run of
//!   them, found by binary search.
//! * **Typo**: the single words grouped by their first byte and their length in characters,
//!   each with the set of its characters as bits. A word within `d` edits of the query word
//!   starts with the same character (the automaton requires it), has a length within `d` of
//!   it, has at most `d` characters the query word lacks (each comes from an insertion or a
//!   substitution) and lacks at most `d` of the query word's (each goes by a deletion or a
//!   substitution): sets of bits can only undercount those, so a word failing a test cannot
//!   match. The few words that pass are run through the same automaton the walk ran, and the
//!   matches sorted into key order: the expansions are the walk's, in the walk's order.
//!
//! Memory: per word, its bytes and 24 bytes, 36 more for a single word of the dictionary (its
//! typo entry and mask, and hash slots), and a table of 256 × 48 group starts (48 KiB). The
//! peak resident memory of an open grew 0.4 MiB at BFCL's 2,723 tools and 1.1 MiB at the speed
//! bench's 100,000 (12,501 single words); building the tables streams the two dictionaries once
//! (see `docs/search.md` for the open's cost).

use fst::{IntoStreamer, Map, Streamer};

use crate::automata::{SingleWord, WordLevenshtein};
use crate::simd::Avx2;

/// Lengths (in characters) told apart; words of this many characters less one or more share
/// the last group, which no lookup reads: a query word has under 40 characters
/// ([`WordLevenshtein::new`]) and the distance is at most 2.
const LENGTHS: usize = 48;

/// No postings list: a word only of the re-ranking vocabulary.
const NO_POSTINGS: u64 = u64::MAX;

/// No number: a word not in the re-ranking vocabulary.
const NO_NUMBER: u64 = u64::MAX;

/// A word of either dictionary.
#[derive(Clone, Copy, Debug)]
struct Word {
    /// Where its bytes start in [`Words::keys`].
    start: u32,
    /// Its length in bytes.
    len: u32,
    /// The offset of its postings list, or [`NO_POSTINGS`].
    postings: u64,
    /// Its number in the re-ranking vocabulary, or [`NO_NUMBER`].
    number: u64,
}

impl Word {
    /// The word `key` with its postings and number, its bytes appended to `keys`; `None` past
    /// 4 GiB of keys.
    fn put(keys: &mut Vec<u8>, key: &[u8], postings: u64, number: u64) -> Option<Word> {
        let (start, len) = (
            u32::try_from(keys.len()).ok()?,
            u32::try_from(key.len()).ok()?,
        );
        keys.extend_from_slice(key);
        Some(Word {
            start,
            len,
            postings,
            number,
        })
    }

    /// Its bytes, in `keys`.
    fn bytes<'k>(&self, keys: &'k [u8]) -> &'k [u8] {
        let start = self.start as usize;
        keys.get(start..start + self.len as usize).unwrap_or(&[])
    }
}

/// A single word of the term dictionary, for the typo scan.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Its characters as bits ([`char_bit`]).
    mask: u64,
    /// The offset of its postings list.
    value: u64,
    /// Where its bytes start in [`Words::keys`].
    start: u32,
    /// Its length in bytes.
    len: u32,
}

/// The single words of the term dictionary and the words of the re-ranking vocabulary (see
/// the module's docs).
pub(crate) struct Words {
    /// The words' bytes, one after another.
    keys: Vec<u8>,
    /// Every word, in key order.
    sorted: Vec<Word>,
    /// An open-addressed hash table of `sorted`: per slot, an index into it plus one, or 0.
    /// At most half full.
    slots: Vec<u32>,
    /// The seed of `slots`' hash, drawn at random when the table is built.
    seed: foldhash::fast::RandomState,
    /// The single words of the term dictionary, grouped by first byte and length in
    /// characters, each group in key order.
    entries: Vec<Entry>,
    /// The entries' masks apart, in the same order: the scan reads only these, eight to a
    /// cache line.
    masks: Vec<u64>,
    /// Per group (`first byte * LENGTHS + length`), where its entries start in `entries`; one
    /// more at the end.
    starts: Vec<u32>,
    /// Words of the term dictionary that are not UTF-8 (no index this crate builds has one):
    /// their characters cannot be counted as the automaton counts them, so every typo lookup
    /// tries each.
    odd: Vec<Entry>,
}

/// The bit of character `c` in a key's set of characters: its own for `a`-`z`, a shared one
/// for the others. Any mapping keeps the tests sound (a key's characters the word lacks can
/// only map to fewer bits the word's do not have).
#[inline]
fn char_bit(c: char) -> u64 {
    let c = c as u32;
    if (u32::from(b'a')..=u32::from(b'z')).contains(&c) {
        1 << (c - u32::from(b'a'))
    } else {
        1 << (26 + c % 38)
    }
}

/// The characters of `s` as bits, and how many there are.
fn chars_of(s: &str) -> (u64, usize) {
    s.chars().fold((0, 0), |(m, n), c| (m | char_bit(c), n + 1))
}

/// True if `bits` has at most `d` bits set, told by clearing the lowest `d`.
#[inline(always)]
fn at_most(mut bits: u64, d: usize) -> bool {
    for _ in 0..d {
        bits &= bits.wrapping_sub(1);
    }
    bits == 0
}

/// Bit `i` set for each of `masks` (at most 64) with at most `d` bits outside `word` and at
/// most `d` of `word`'s bits missing ([`at_most`]), 4 at a time with AVX2: the scan of the
/// masks, one by one, was half of the typo lookups (14 instructions a word).
fn close_masks(simd: Option<Avx2>, masks: &[u64], word: u64, d: usize) -> u64 {
    let masks = &masks[..masks.len().min(64)];
    let mut bits = 0u64;
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if let Some(_proof) = simd {
        // SAFETY: `_proof` shows AVX2 was detected.
        bits = unsafe { close_masks_avx2(masks, word, d) };
        done = masks.len() / 4 * 4;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    for (i, &m) in masks.iter().enumerate().skip(done) {
        if at_most(m & !word, d) && at_most(word & !m, d) {
            bits |= 1 << i;
        }
    }
    bits
}

/// [`close_masks`] for the whole groups of 4 of `masks`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn close_masks_avx2(masks: &[u64], word: u64, d: usize) -> u64 {
    use std::arch::x86_64::{
        _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256, _mm256_castsi256_pd,
        _mm256_cmpeq_epi64, _mm256_loadu_si256, _mm256_movemask_pd, _mm256_or_si256,
        _mm256_set1_epi64x, _mm256_setzero_si256,
    };
    let (w, ones, zero) = (
        _mm256_set1_epi64x(word as i64),
        _mm256_set1_epi64x(-1),
        _mm256_setzero_si256(),
    );
    let mut bits = 0u64;
    for (g, four) in masks.chunks_exact(4).enumerate() {
        // SAFETY: `four` is 4 `u64`s, 32 bytes; the load is unaligned.
        let m = unsafe { _mm256_loadu_si256(four.as_ptr().cast()) };
        // Outside the word's characters, and the word's missing.
        let (mut a, mut b) = (_mm256_andnot_si256(w, m), _mm256_andnot_si256(m, w));
        for _ in 0..d {
            a = _mm256_and_si256(a, _mm256_add_epi64(a, ones));
            b = _mm256_and_si256(b, _mm256_add_epi64(b, ones));
        }
        let none = _mm256_cmpeq_epi64(_mm256_or_si256(a, b), zero);
        bits |= (_mm256_movemask_pd(_mm256_castsi256_pd(none)) as u64) << (g * 4);
    }
    bits
}

/// The hash of `key` in a table seeded with `seed`.
///
/// The keys come from the index file, so they could be crafted to collide under a fixed hash
/// and turn every probe into a walk over the table: the seed is drawn at random for each table
/// (foldhash's `RandomState`), which a file cannot know.
#[inline]
fn hash_of(seed: &foldhash::fast::RandomState, key: &[u8]) -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut h = seed.build_hasher();
    h.write(key);
    h.finish()
}

impl Words {
    /// The tables of the single words of `stems` (keys without a name separator, each to the
    /// offset of its postings list) and of every word of `numbers` (each to its number in the
    /// re-ranking vocabulary).
    pub(crate) fn new<D: AsRef<[u8]>, E: AsRef<[u8]>>(stems: &Map<D>, numbers: &Map<E>) -> Words {
        // Each key is copied once, straight from its stream (collecting them as vectors
        // first took a third of building the tables).
        let mut keys = Vec::new();
        let mut single: Vec<Word> = Vec::new();
        let mut stream = stems.search(SingleWord).into_stream();
        while let Some((key, postings)) = stream.next() {
            let Some(word) = Word::put(&mut keys, key, postings, NO_NUMBER) else {
                break;
            };
            single.push(word);
        }
        let mut vocabulary = Vec::new();
        let mut numbered: Vec<Word> = Vec::new();
        let mut stream = numbers.stream();
        // A built vocabulary numbers its words from 0 up, so each number is below their count.
        // One that is not (only a damaged or crafted file has it) is no number: the re-ranking
        // sizes a per-thread table by the largest number a query looks up, and a crafted
        // number near 2^32 would make that table gigabytes.
        let count = numbers.len() as u64;
        while let Some((key, number)) = stream.next() {
            let number = if number < count { number } else { NO_NUMBER };
            let Some(word) = Word::put(&mut vocabulary, key, NO_POSTINGS, number) else {
                break;
            };
            numbered.push(word);
        }
        // The two in key order; a word only of the vocabulary has its bytes copied over.
        let mut sorted = Vec::with_capacity(single.len() + numbered.len());
        let mut theirs = numbered.iter().peekable();
        for &ours in &single {
            while let Some(&w) = theirs.next_if(|w| w.bytes(&vocabulary) < ours.bytes(&keys)) {
                sorted.extend(Word::put(
                    &mut keys,
                    w.bytes(&vocabulary),
                    NO_POSTINGS,
                    w.number,
                ));
            }
            let number = theirs
                .next_if(|w| w.bytes(&vocabulary) == ours.bytes(&keys))
                .map_or(NO_NUMBER, |w| w.number);
            sorted.push(Word { number, ..ours });
        }
        for &w in theirs {
            sorted.extend(Word::put(
                &mut keys,
                w.bytes(&vocabulary),
                NO_POSTINGS,
                w.number,
            ));
        }
        drop(vocabulary);
        keys.shrink_to_fit();
        // The single words of the term dictionary by group (a counting sort: each group stays
        // in key order), and those that are not UTF-8 apart.
        let mut odd = Vec::new();
        let mut grouped: Vec<(usize, Entry)> = Vec::with_capacity(single.len());
        for w in sorted.iter().filter(|w| w.postings != NO_POSTINGS) {
            let key = w.bytes(&keys);
            let Some(&first) = key.first() else { continue };
            let (start, len, value) = (w.start, w.len, w.postings);
            match std::str::from_utf8(key) {
                Ok(s) => {
                    let (mask, chars) = chars_of(s);
                    let group = usize::from(first) * LENGTHS + chars.min(LENGTHS - 1);
                    grouped.push((
                        group,
                        Entry {
                            mask,
                            value,
                            start,
                            len,
                        },
                    ));
                }
                Err(_) => odd.push(Entry {
                    mask: 0,
                    value,
                    start,
                    len,
                }),
            }
        }
        let mut starts = vec![0u32; 256 * LENGTHS + 1];
        for &(g, _) in &grouped {
            starts[g + 1] += 1;
        }
        for g in 0..256 * LENGTHS {
            starts[g + 1] += starts[g];
        }
        let mut at = starts.clone();
        let mut entries = vec![
            Entry {
                mask: 0,
                value: 0,
                start: 0,
                len: 0
            };
            grouped.len()
        ];
        for (g, e) in grouped {
            entries[at[g] as usize] = e;
            at[g] += 1;
        }
        let n = (sorted.len() * 2).next_power_of_two().max(2);
        let mut slots = vec![0u32; n];
        let seed = foldhash::fast::RandomState::default();
        for (i, w) in sorted.iter().enumerate() {
            let mut at = hash_of(&seed, w.bytes(&keys)) as usize & (n - 1);
            while slots[at] != 0 {
                at = (at + 1) & (n - 1);
            }
            slots[at] = i as u32 + 1;
        }
        Words {
            keys,
            sorted,
            slots,
            seed,
            masks: entries.iter().map(|e| e.mask).collect(),
            entries,
            starts,
            odd,
        }
    }

    fn bytes(&self, start: u32, len: u32) -> &[u8] {
        let start = start as usize;
        self.keys.get(start..start + len as usize).unwrap_or(&[])
    }

    fn key(&self, e: &Entry) -> &[u8] {
        self.bytes(e.start, e.len)
    }

    /// The word `key`, if either dictionary has it.
    #[inline]
    fn get(&self, key: &[u8]) -> Option<&Word> {
        let mask = self.slots.len().wrapping_sub(1);
        let mut at = hash_of(&self.seed, key) as usize & mask;
        loop {
            let i = *self.slots.get(at)?;
            let w = self.sorted.get(i.checked_sub(1)? as usize)?;
            if self.bytes(w.start, w.len) == key {
                return Some(w);
            }
            at = (at + 1) & mask;
        }
    }

    /// The offset of the postings list of `key`, a single word (no name separator), if the
    /// term dictionary has it.
    #[inline]
    pub(crate) fn postings(&self, key: &[u8]) -> Option<u64> {
        self.get(key)
            .map(|w| w.postings)
            .filter(|&p| p != NO_POSTINGS)
    }

    /// The number of `key` in the re-ranking vocabulary, if it has it.
    #[inline]
    pub(crate) fn number(&self, key: &[u8]) -> Option<u64> {
        self.get(key).map(|w| w.number).filter(|&n| n != NO_NUMBER)
    }

    /// Calls `f` with each single word of the term dictionary that `prefix` is a proper prefix
    /// of, and the offset of its postings list, in key order, until `f` returns false: the
    /// words a walk of the dictionary from `prefix` with [`SingleWord`] finds, for a `prefix`
    /// without a name separator.
    pub(crate) fn prefixed(&self, prefix: &[u8], mut f: impl FnMut(&[u8], u64) -> bool) {
        let from = self
            .sorted
            .partition_point(|w| self.bytes(w.start, w.len) <= prefix);
        for w in &self.sorted[from..] {
            let key = self.bytes(w.start, w.len);
            if !key.starts_with(prefix) {
                return;
            }
            if w.postings != NO_POSTINGS && !f(key, w.postings) {
                return;
            }
        }
    }

    /// Calls `f` with each single word of the term dictionary that `lev` (made for `stem`, at
    /// `distance`) accepts and the offset of its postings list, in key order, until `f`
    /// returns false: the words and order of a walk of the dictionary with `lev`.
    pub(crate) fn typos(
        &self,
        stem: &str,
        distance: u8,
        lev: &WordLevenshtein,
        mut f: impl FnMut(&[u8], u64) -> bool,
    ) {
        let (Some(&first), (mask, chars)) = (stem.as_bytes().first(), chars_of(stem)) else {
            return;
        };
        let d = usize::from(distance);
        let accepts = |key: &[u8]| lev.accepts(key);
        let mut found: Vec<&Entry> = Vec::new();
        let group = usize::from(first) * LENGTHS;
        let lengths = chars.saturating_sub(d)..(chars + d + 1).min(LENGTHS - 1);
        let range = self.starts.get(group + lengths.start).copied().unwrap_or(0) as usize
            ..self.starts.get(group + lengths.end).copied().unwrap_or(0) as usize;
        let (entries, masks) = (
            self.entries.get(range.clone()).unwrap_or(&[]),
            self.masks.get(range).unwrap_or(&[]),
        );
        let simd = Avx2::detect();
        for (at, chunk) in masks.chunks(64).enumerate() {
            let mut bits = close_masks(simd, chunk, mask, d);
            while bits != 0 {
                let i = at * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if let Some(e) = entries.get(i)
                    && accepts(self.key(e))
                {
                    found.push(e);
                }
            }
        }
        for e in &self.odd {
            if accepts(self.key(e)) {
                found.push(e);
            }
        }
        found.sort_unstable_by(|a, b| self.key(a).cmp(self.key(b)));
        for e in found {
            if !f(self.key(e), e.value) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fst::automaton::Automaton;

    /// The keys and values a walk of `stems` with `lev` finds, in key order.
    fn walked(stems: &Map<Vec<u8>>, lev: &WordLevenshtein) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::new();
        let mut stream = stems.search(lev).into_stream();
        while let Some((k, v)) = stream.next() {
            out.push((k.to_vec(), v));
        }
        out
    }

    #[test]
    fn a_vocabulary_number_at_or_past_the_word_count_is_no_number() {
        let stems = Map::from_iter([("weather", 0u64)]).unwrap();
        let numbers =
            Map::from_iter([("city", 1u64), ("forecast", 4_000_000_000), ("weather", 2)]).unwrap();
        let words = Words::new(&stems, &numbers);
        assert_eq!(words.number(b"city"), Some(1));
        assert_eq!(words.number(b"weather"), Some(2));
        // Three words, so 3 and up cannot be one of their numbers.
        assert_eq!(words.number(b"forecast"), None);
    }

    proptest::proptest! {
        #[test]
        fn words_postings_numbers_and_prefixes_are_those_of_the_dictionaries(
            stems in proptest::collection::btree_set("[abé]{0,4}[_]?[ab]{0,2}", 0..80),
            numbers in proptest::collection::btree_set("[abé_]{1,5}", 0..40),
            probes in proptest::collection::vec("[abé]{0,5}", 1..20),
        ) {
            let stems = Map::from_iter(stems.into_iter().zip(0u64..));
            // Numbered as a build numbers them: 0 up to their count, here in reverse key order.
            let count = numbers.len() as u64;
            let numbers = Map::from_iter(numbers.into_iter().zip((0..count).rev()));
            proptest::prop_assert!(stems.is_ok() && numbers.is_ok());
            if let (Ok(stems), Ok(numbers)) = (stems, numbers) {
                let words = Words::new(&stems, &numbers);
                for probe in probes.iter().map(String::as_bytes) {
                    proptest::prop_assert_eq!(words.postings(probe), stems.get(probe));
                    proptest::prop_assert_eq!(words.number(probe), numbers.get(probe));
                    let mut found = Vec::new();
                    words.prefixed(probe, |k, v| {
                        found.push((k.to_vec(), v));
                        true
                    });
                    let mut expected = Vec::new();
                    let below = fst::automaton::Str::new(std::str::from_utf8(probe).unwrap_or(""))
                        .starts_with()
                        .intersection(SingleWord);
                    let mut stream = stems.search(below).into_stream();
                    while let Some((k, v)) = stream.next() {
                        if k != probe {
                            expected.push((k.to_vec(), v));
                        }
                    }
                    proptest::prop_assert_eq!(found, expected);
                }
            }
        }

        #[test]
        fn a_tables_matches_are_those_of_a_dictionary_walk_in_key_order(
            word in "[abé]{1,9}",
            keys in proptest::collection::btree_set("[abé]{1,9}[é_]?[ab]{0,2}", 0..150),
            distance in 0u8..=2,
        ) {
            let stems = Map::from_iter(keys.into_iter().zip(0u64..));
            proptest::prop_assert!(stems.is_ok());
            if let (Ok(stems), Some(lev)) = (stems, WordLevenshtein::new(&word, distance)) {
                let table = Words::new(&stems, &Map::default());
                let mut found = Vec::new();
                table.typos(&word, distance, &lev, |k, v| {
                    found.push((k.to_vec(), v));
                    true
                });
                proptest::prop_assert_eq!(found, walked(&stems, &lev));
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn the_simd_mask_test_is_the_scalar_one(
            masks in proptest::collection::vec(0u64..1 << 12, 0..70),
            word in 0u64..1 << 12,
            d in 0usize..=2,
        ) {
            let simd = close_masks(Avx2::detect(), &masks, word, d);
            let scalar = close_masks(None, &masks, word, d);
            proptest::prop_assert_eq!(simd, scalar);
            for (i, &m) in masks.iter().take(64).enumerate() {
                let close = (m & !word).count_ones() as usize <= d
                    && (word & !m).count_ones() as usize <= d;
                proptest::prop_assert_eq!(scalar >> i & 1 == 1, close);
            }
        }
    }

    #[test]
    fn keys_that_are_not_utf8_are_tried_by_every_lookup() {
        // `a\xc1b` is `ab` with its `b` overlong-encoded: the automaton reads it as `ab`.
        let stems = Map::from_iter([(b"abc".to_vec(), 8u64), (b"a\xc1b".to_vec(), 7)]).unwrap();
        let table = Words::new(&stems, &Map::default());
        let lev = WordLevenshtein::new("ab", 1).unwrap();
        let mut found = Vec::new();
        table.typos("ab", 1, &lev, |k, v| {
            found.push((k.to_vec(), v));
            true
        });
        assert_eq!(found, [(b"abc".to_vec(), 8), (b"a\xc1b".to_vec(), 7)]);
        assert_eq!(found, walked(&stems, &lev));
    }
}
