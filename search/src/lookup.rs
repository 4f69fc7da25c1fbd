//! Finding a query term in the term dictionary: by its stem, or failing that by the terms it is
//! a prefix of or within a small edit distance of.

use fst::Map;

use crate::automata::WordLevenshtein;
use crate::hits::MatchKind;
use crate::terms::{QueryTerm, TermStr};
use crate::words::Words;

/// The most terms one query word expands to by prefix and typo.
const MAX_EXPANSIONS: usize = 32;

/// How a query term was found in the dictionary.
pub(crate) enum Lookup {
    /// By its stem: the offset of its postings list.
    Found(u64),
    /// Only by prefix or typo: the dictionary terms it expands to.
    Expanded(Vec<Expansion>),
    /// Not at all.
    Missing,
}

/// A dictionary term a query word expands to.
pub(crate) struct Expansion {
    /// The term (a stem).
    pub(crate) matched: TermStr,
    /// The offset of its postings list.
    pub(crate) offset: u64,
    /// [`MatchKind::Prefix`] or [`MatchKind::Typo`].
    pub(crate) kind: MatchKind,
}

/// Finds a query term in the dictionary `stems`: by its stem, or failing that by prefix (terms
/// of 4+ characters) and by edit distance (1 for 4-7 characters, 2 for longer ones). Only words
/// of letters are expanded: `1500` or `r2d2` are values, not misspellings; and only a term
/// whose [`QueryTerm::typos`] allows it by typo. Whole names (`get_weather`) are terms too; a
/// single word is never expanded into one.
///
/// A stem without a name separator is looked up in `words`, the single words of `stems`, and
/// expanded from them ([`Words`]: what walks of `stems` found, in the same order, without
/// decoding its nodes); a stem with one, in `stems`.
pub(crate) fn lookup<D: AsRef<[u8]>>(stems: &Map<D>, words: &Words, term: &QueryTerm) -> Lookup {
    let stem = term.stem.as_bytes();
    let single = !stem.iter().any(|&b| matches!(b, b'_' | b'.' | b'-'));
    let found = if single {
        words.postings(stem)
    } else {
        stems.get(stem)
    };
    if let Some(offset) = found {
        return Lookup::Found(offset);
    }
    let mut expansions: Vec<Expansion> = Vec::new();
    let chars = term.word.chars().count();
    // A word of letters has a stem of letters, so `single` holds.
    if single && chars >= 4 && !term.required && term.word.chars().all(char::is_alphabetic) {
        words.prefixed(stem, |key, offset| {
            add(&mut expansions, key, offset, MatchKind::Prefix)
        });
        let distance = if chars <= 7 { 1 } else { 2 };
        if expansions.len() < MAX_EXPANSIONS
            && term.typos
            && let Some(lev) = WordLevenshtein::new(&term.stem, distance)
        {
            words.typos(&term.stem, distance, &lev, |key, offset| {
                add(&mut expansions, key, offset, MatchKind::Typo)
            });
        }
    }
    if expansions.is_empty() {
        Lookup::Missing
    } else {
        Lookup::Expanded(expansions)
    }
}

/// Adds the term `key` (with the postings list at `offset`) to `expansions` unless it is there;
/// false once there are [`MAX_EXPANSIONS`].
fn add(expansions: &mut Vec<Expansion>, key: &[u8], offset: u64, kind: MatchKind) -> bool {
    if !expansions.iter().any(|e| e.matched.as_bytes() == key) {
        expansions.push(Expansion {
            matched: match std::str::from_utf8(key) {
                Ok(key) => TermStr::new(key),
                Err(_) => String::from_utf8_lossy(key).into_owned().into(),
            },
            offset,
            kind,
        });
    }
    expansions.len() < MAX_EXPANSIONS
}

/// Each of `terms` found as [`lookup`] finds it, in order.
pub(crate) fn lookup_all<D: AsRef<[u8]>>(
    stems: &Map<D>,
    words: &Words,
    terms: &[QueryTerm],
) -> Vec<Lookup> {
    terms.iter().map(|t| lookup(stems, words, t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automata::SingleWord;
    use fst::automaton::{Automaton, Str};
    use fst::{IntoStreamer, Streamer};

    /// The expansions as fst's own streams find them: the prefix walk, then the typo walk.
    fn streamed(stems: &Map<Vec<u8>>, term: &QueryTerm) -> Vec<(String, u64, MatchKind)> {
        let chars = term.word.chars().count();
        let mut out: Vec<(String, u64, MatchKind)> = Vec::new();
        let prefix = Str::new(&term.stem).starts_with().intersection(SingleWord);
        add(
            stems.search(prefix).into_stream(),
            MatchKind::Prefix,
            &mut out,
        );
        if let Some(lev) = WordLevenshtein::new(&term.stem, if chars <= 7 { 1 } else { 2 }) {
            add(stems.search(lev).into_stream(), MatchKind::Typo, &mut out);
        }
        out
    }

    fn add<A: Automaton>(
        mut stream: fst::map::Stream<'_, A>,
        kind: MatchKind,
        out: &mut Vec<(String, u64, MatchKind)>,
    ) {
        while let Some((key, offset)) = stream.next() {
            if out.len() >= MAX_EXPANSIONS {
                break;
            }
            let key = String::from_utf8_lossy(key).into_owned();
            if !out.iter().any(|e| e.0 == key) {
                out.push((key, offset, kind));
            }
        }
    }

    fn expanded(term: &QueryTerm) -> Vec<(String, MatchKind)> {
        let stems = Map::from_iter([("forcasting", 1u64), ("forecast", 2)]).unwrap();
        match lookup(&stems, &Words::new(&stems, &Map::default()), term) {
            Lookup::Expanded(e) => e
                .into_iter()
                .map(|e| (e.matched.to_string(), e.kind))
                .collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn a_term_kept_from_typos_is_expanded_by_prefix_only() {
        let mut term = QueryTerm {
            word: "forcast".into(),
            stem: "forcast".into(),
            required: false,
            quoted: false,
            typos: true,
        };
        assert_eq!(
            expanded(&term),
            [
                ("forcasting".to_string(), MatchKind::Prefix),
                ("forecast".to_string(), MatchKind::Typo)
            ]
        );
        term.typos = false;
        assert_eq!(
            expanded(&term),
            [("forcasting".to_string(), MatchKind::Prefix)]
        );
    }

    proptest::proptest! {
        #[test]
        fn expansions_are_those_of_fsts_streams_in_the_same_order(
            word in "[ab]{4,8}é?",
            keys in proptest::collection::btree_set("[ab]{1,9}[é_]?[ab]{0,2}", 0..120),
        ) {
            let stem = crate::text::stem(&word).into_owned();
            let keys: Vec<(String, u64)> =
                keys.into_iter().filter(|k| *k != stem).zip(0u64..).collect();
            let stems = Map::from_iter(keys);
            proptest::prop_assert!(stems.is_ok());
            if let Ok(stems) = stems {
                let term = QueryTerm { word: word.into(), stem: stem.into(), required: false, quoted: false, typos: true };
                let expected = streamed(&stems, &term);
                let words = Words::new(&stems, &Map::default());
                let found: Vec<(String, u64, MatchKind)> = match lookup(&stems, &words, &term) {
                    Lookup::Expanded(e) => e.into_iter().map(|e| (e.matched.to_string(), e.offset, e.kind)).collect(),
                    Lookup::Missing => Vec::new(),
                    Lookup::Found(_) => vec![(String::new(), 0, MatchKind::Exact)],
                };
                proptest::prop_assert_eq!(found, expected);
            }
        }
    }
}
