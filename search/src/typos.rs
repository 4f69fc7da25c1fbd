//! The dictionary's single words grouped for typo lookups, built when an index is opened.
//!
//! A query word not in the dictionary is expanded to the single-word terms within one or two
//! edits of it ([`WordLevenshtein`]). Walking the fst for them decoded every node on the way
//! and ran the automaton on each byte: for the long queries at BFCL's 2,723 tools, most of
//! whose words are not in its dictionary, that walk was half of a search (callgrind, the
//! slowest 1% of the 19,514 bench queries, 0.80 M instructions a query in lookups).
//!
//! Here the single words are grouped by their first byte and their length in characters, and
//! each carries the set of its characters as bits. A word within `d` edits of the query word
//! starts with the same character (the automaton requires it), has a length within `d` of it,
//! and has at most `d` characters the query word lacks (each comes from an insertion or a
//! substitution) and lacks at most `d` of the query word's (each goes by a deletion or a
//! substitution): sets of bits can only undercount those, so a word failing a test cannot
//! match. The few words that pass are run through the same automaton the walk ran, and the
//! matches sorted into key order: the expansions are the walk's, in the walk's order.
//!
//! Memory: per single word, its bytes and 24 bytes, and a table of 256 × 48 group starts
//! (48 KiB): 0.3 MB at BFCL's 2,723 tools (4,826 single words), 0.7 MB at the speed bench's
//! 100,000 (12,501). Building it streams the dictionary's single words once at open: +7 M
//! instructions at 2,723 tools, +28 M at 100,000 (about 10 ms).

use fst::automaton::Automaton;
use fst::{IntoStreamer, Map, Streamer};

use crate::automata::{SingleWord, WordLevenshtein};

/// Lengths (in characters) told apart; words of this many characters less one or more share
/// the last group, which no lookup reads: a query word has under 40 characters
/// ([`WordLevenshtein::new`]) and the distance is at most 2.
const LENGTHS: usize = 48;

/// One single-word key of the dictionary.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Its characters as bits ([`char_bit`]).
    mask: u64,
    /// Its value: the offset of its postings list.
    value: u64,
    /// Where its bytes start in [`TypoTable::keys`].
    start: u32,
    /// Its length in bytes.
    len: u32,
}

/// The dictionary's single-word keys, grouped by first byte and length in characters, each
/// group in key order.
pub(crate) struct TypoTable {
    /// The keys' bytes, one after another.
    keys: Vec<u8>,
    entries: Vec<Entry>,
    /// Per group (`first byte * LENGTHS + length`), where its entries start in `entries`; one
    /// more at the end.
    starts: Vec<u32>,
    /// Keys that are not UTF-8 (no index this crate builds has one): their characters cannot
    /// be counted as the automaton counts them, so every lookup tries each.
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

impl TypoTable {
    /// The single-word keys of `stems` (keys without a name separator).
    pub(crate) fn new<D: AsRef<[u8]>>(stems: &Map<D>) -> TypoTable {
        let mut keys = Vec::new();
        let mut grouped: Vec<(usize, Entry)> = Vec::new();
        let mut odd = Vec::new();
        let mut stream = stems.search(SingleWord).into_stream();
        while let Some((key, value)) = stream.next() {
            let (Ok(start), Ok(len)) = (u32::try_from(keys.len()), u32::try_from(key.len())) else {
                break;
            };
            let Some(&first) = key.first() else { continue };
            keys.extend_from_slice(key);
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
        // Stable: each group stays in key order.
        grouped.sort_by_key(|&(g, _)| g);
        let mut starts = vec![0u32; 256 * LENGTHS + 1];
        for &(g, _) in &grouped {
            starts[g + 1] += 1;
        }
        for g in 0..256 * LENGTHS {
            starts[g + 1] += starts[g];
        }
        keys.shrink_to_fit();
        TypoTable {
            keys,
            entries: grouped.into_iter().map(|(_, e)| e).collect(),
            starts,
            odd,
        }
    }

    fn key(&self, e: &Entry) -> &[u8] {
        let start = e.start as usize;
        self.keys.get(start..start + e.len as usize).unwrap_or(&[])
    }

    /// Calls `f` with each key `lev` (made for `stem`, at `distance`) accepts and its value,
    /// in key order, until `f` returns false: the keys and order of a walk of the dictionary
    /// with `lev`.
    pub(crate) fn matches(
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
        let d_bits = u32::from(distance);
        let accepts = |key: &[u8]| {
            let mut state = lev.start();
            for &b in key {
                state = lev.accept(&state, b);
                if state.is_none() {
                    return false;
                }
            }
            lev.is_match(&state)
        };
        let mut found: Vec<&Entry> = Vec::new();
        let lengths = chars.saturating_sub(d)..(chars + d + 1).min(LENGTHS - 1);
        let groups = usize::from(first) * LENGTHS + lengths.start
            ..usize::from(first) * LENGTHS + lengths.end;
        let range = self.starts[groups.start] as usize..self.starts[groups.end] as usize;
        for e in self.entries.get(range).unwrap_or(&[]) {
            if (e.mask & !mask).count_ones() <= d_bits
                && (mask & !e.mask).count_ones() <= d_bits
                && accepts(self.key(e))
            {
                found.push(e);
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

    /// The keys and values a walk of `stems` with `lev` finds, in key order.
    fn walked(stems: &Map<Vec<u8>>, lev: &WordLevenshtein) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::new();
        let mut stream = stems.search(lev).into_stream();
        while let Some((k, v)) = stream.next() {
            out.push((k.to_vec(), v));
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn a_tables_matches_are_those_of_a_dictionary_walk_in_key_order(
            word in "[abé]{1,9}",
            keys in proptest::collection::btree_set("[abé]{1,9}[é_]?[ab]{0,2}", 0..150),
            distance in 0u8..=2,
        ) {
            let stems = Map::from_iter(keys.into_iter().zip(0u64..));
            proptest::prop_assert!(stems.is_ok());
            if let (Ok(stems), Some(lev)) = (stems, WordLevenshtein::new(&word, distance)) {
                let table = TypoTable::new(&stems);
                let mut found = Vec::new();
                table.matches(&word, distance, &lev, |k, v| {
                    found.push((k.to_vec(), v));
                    true
                });
                proptest::prop_assert_eq!(found, walked(&stems, &lev));
            }
        }
    }

    #[test]
    fn keys_that_are_not_utf8_are_tried_by_every_lookup() {
        // `a\xc1b` is `ab` with its `b` overlong-encoded: the automaton reads it as `ab`.
        let stems = Map::from_iter([(b"abc".to_vec(), 8u64), (b"a\xc1b".to_vec(), 7)]).unwrap();
        let table = TypoTable::new(&stems);
        let lev = WordLevenshtein::new("ab", 1).unwrap();
        let mut found = Vec::new();
        table.matches("ab", 1, &lev, |k, v| {
            found.push((k.to_vec(), v));
            true
        });
        assert_eq!(found, [(b"abc".to_vec(), 8), (b"a\xc1b".to_vec(), 7)]);
        assert_eq!(found, walked(&stems, &lev));
    }
}
