//! Finding a query term in the term dictionary: by its stem, or failing that by the terms it is
//! a prefix of or within a small edit distance of.

use fst::automaton::{Automaton, Str};
use fst::{IntoStreamer, Map, Streamer};

use crate::automata::{SingleWord, WordLevenshtein};
use crate::hits::MatchKind;
use crate::terms::QueryTerm;

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
    pub(crate) matched: String,
    /// The offset of its postings list.
    pub(crate) offset: u64,
    /// [`MatchKind::Prefix`] or [`MatchKind::Typo`].
    pub(crate) kind: MatchKind,
}

/// Finds a query term in the dictionary `stems`: by its stem, or failing that by prefix (terms
/// of 4+ characters) and by edit distance (1 for 4-7 characters, 2 for longer ones). Only words
/// of letters are expanded: `1500` or `r2d2` are values, not misspellings.
pub(crate) fn lookup<D: AsRef<[u8]>>(stems: &Map<D>, term: &QueryTerm) -> Lookup {
    if let Some(offset) = stems.get(&term.stem) {
        return Lookup::Found(offset);
    }
    let mut expansions: Vec<Expansion> = Vec::new();
    let chars = term.word.chars().count();
    if chars >= 4 && !term.required && term.word.chars().all(char::is_alphabetic) {
        // Whole names (`get_weather`) are terms too; a single word is
        // never expanded into one, which also keeps the walk short.
        let word_prefix = Str::new(&term.stem).starts_with().intersection(SingleWord);
        expand(stems, word_prefix, MatchKind::Prefix, &mut expansions);
        let distance = if chars <= 7 { 1 } else { 2 };
        if let Some(lev) = WordLevenshtein::new(&term.stem, distance) {
            expand(stems, lev, MatchKind::Typo, &mut expansions);
        }
    }
    if expansions.is_empty() {
        Lookup::Missing
    } else {
        Lookup::Expanded(expansions)
    }
}

/// Adds the dictionary terms `automaton` accepts to `expansions` (up to [`MAX_EXPANSIONS`] in
/// all), skipping terms already there.
fn expand<D: AsRef<[u8]>, A: Automaton>(
    stems: &Map<D>,
    automaton: A,
    kind: MatchKind,
    expansions: &mut Vec<Expansion>,
) {
    let mut stream = stems.search(automaton).into_stream();
    while let Some((key, offset)) = stream.next() {
        if expansions.len() >= MAX_EXPANSIONS {
            break;
        }
        if !expansions.iter().any(|e| e.matched.as_bytes() == key) {
            expansions.push(Expansion {
                matched: String::from_utf8_lossy(key).into_owned(),
                offset,
                kind,
            });
        }
    }
}
