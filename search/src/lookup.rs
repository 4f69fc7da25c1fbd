//! Finding a query term in the term dictionary: by its stem, or failing that by the terms it is
//! a prefix of or within a small edit distance of.

use fst::Map;
use fst::raw::{Fst, Node, Output};

use crate::automata::{Narrow, SingleWord, WordLevenshtein};
use crate::hits::MatchKind;
use crate::terms::QueryTerm;
use crate::typos::TypoTable;

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
/// of letters are expanded: `1500` or `r2d2` are values, not misspellings; and only a term
/// whose [`QueryTerm::typos`] allows it by typo.
///
/// The stem is walked down the dictionary once, for both: the node it leads to is the term if
/// final (as [`Map::get`] finds it), and holds the terms it is a prefix of below it. (Walking
/// it twice, `get` and then for the prefixes, took a tenth of the lookups at BFCL's 2,723
/// tools, most of whose queries' words are not in its dictionary: callgrind.) The typo matches
/// come from `typos`, the single words of `stems` ([`TypoTable`]), in the order a walk of
/// `stems` would find them.
pub(crate) fn lookup<D: AsRef<[u8]>>(
    stems: &Map<D>,
    typos: &TypoTable,
    term: &QueryTerm,
) -> Lookup {
    let fst = stems.as_fst();
    let reached = descend(fst, term.stem.as_bytes());
    if let Some((node, out)) = reached
        && node.is_final()
    {
        return Lookup::Found(out.cat(node.final_output()).value());
    }
    let mut expansions: Vec<Expansion> = Vec::new();
    let chars = term.word.chars().count();
    if chars >= 4 && !term.required && term.word.chars().all(char::is_alphabetic) {
        // Whole names (`get_weather`) are terms too; a single word is
        // never expanded into one, which also keeps the walk short.
        if let Some((node, out)) = reached {
            let mut key = term.stem.as_bytes().to_vec();
            expand(
                fst,
                &SingleWord,
                node,
                out,
                &mut key,
                MatchKind::Prefix,
                &mut expansions,
            );
        }
        let distance = if chars <= 7 { 1 } else { 2 };
        if expansions.len() < MAX_EXPANSIONS
            && term.typos
            && let Some(lev) = WordLevenshtein::new(&term.stem, distance)
        {
            typos.matches(&term.stem, distance, &lev, |key, offset| {
                if !expansions.iter().any(|e| e.matched.as_bytes() == key) {
                    expansions.push(Expansion {
                        matched: String::from_utf8_lossy(key).into_owned(),
                        offset,
                        kind: MatchKind::Typo,
                    });
                }
                expansions.len() < MAX_EXPANSIONS
            });
        }
    }
    if expansions.is_empty() {
        Lookup::Missing
    } else {
        Lookup::Expanded(expansions)
    }
}

/// Each of `terms` found as [`lookup`] finds it, in order.
pub(crate) fn lookup_all<D: AsRef<[u8]>>(
    stems: &Map<D>,
    typos: &TypoTable,
    terms: &[QueryTerm],
) -> Vec<Lookup> {
    terms.iter().map(|t| lookup(stems, typos, t)).collect()
}

/// The node `prefix` leads to from the root, and the output gathered on the way.
fn descend<'f, D: AsRef<[u8]>>(fst: &'f Fst<D>, prefix: &[u8]) -> Option<(Node<'f>, Output)> {
    let mut node = fst.root();
    let mut out = Output::zero();
    for &b in prefix {
        let t = node.transition(node.find_input(b)?);
        out = out.cat(t.out);
        node = fst.node(t.addr);
    }
    Some((node, out))
}

/// Adds the dictionary terms below `node` (reached by `key`, with output `out`) whose rest
/// `automaton` accepts to `expansions`, in key order (up to [`MAX_EXPANSIONS`] in all), skipping
/// terms already there.
///
/// The walk is fst's stream, depth first in key order, except that a transition the automaton
/// rejects is passed over without decoding the node it leads to (the stream decodes every
/// child of a node it visits): the typo walk rejects all but one of the root's transitions.
/// Where the automaton names the only bytes that can lead on ([`Narrow::next_bytes`]), the
/// node's transitions for those bytes are looked up and the others not decoded at all.
/// `automaton` must not match in a state it says cannot match (true of this crate's automata).
fn expand<D: AsRef<[u8]>, A: Narrow>(
    fst: &Fst<D>,
    automaton: &A,
    node: Node<'_>,
    out: Output,
    key: &mut Vec<u8>,
    kind: MatchKind,
    expansions: &mut Vec<Expansion>,
) {
    let mut add = |key: &[u8], offset: Output| {
        if !expansions.iter().any(|e| e.matched.as_bytes() == key) {
            expansions.push(Expansion {
                matched: String::from_utf8_lossy(key).into_owned(),
                offset: offset.value(),
                kind,
            });
        }
        expansions.len() < MAX_EXPANSIONS
    };
    let start = automaton.start();
    if node.is_final() && automaton.is_match(&start) && !add(key, out.cat(node.final_output())) {
        return;
    }
    // Per node on the path: the node, its next transition, its output, the automaton's state
    // and the only bytes (ASCII, as bits) that can lead on from it, of which those not yet
    // tried.
    let only = automaton.next_bytes(&start);
    let mut stack = vec![(node, 0usize, out, start, only)];
    while let Some((node, next, out, state, only)) = stack.last_mut() {
        let i = match only {
            None => (*next < node.len()).then_some(*next),
            Some(0) => None,
            Some(bytes) => {
                let b = bytes.trailing_zeros() as u8;
                *bytes &= *bytes - 1;
                match node.find_input(b) {
                    Some(i) => Some(i),
                    // A byte the node has no transition for.
                    None => continue,
                }
            }
        };
        let Some(i) = i else {
            stack.pop();
            if !stack.is_empty() {
                key.pop();
            }
            continue;
        };
        *next += 1;
        let t = node.transition(i);
        let to = automaton.accept(state, t.inp);
        if !automaton.can_match(&to) {
            continue;
        }
        let out = out.cat(t.out);
        let child = fst.node(t.addr);
        key.push(t.inp);
        if child.is_final() && automaton.is_match(&to) && !add(key, out.cat(child.final_output())) {
            return;
        }
        let only = automaton.next_bytes(&to);
        stack.push((child, 0, out, to, only));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        match lookup(&stems, &TypoTable::new(&stems), term) {
            Lookup::Expanded(e) => e.into_iter().map(|e| (e.matched, e.kind)).collect(),
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
                let term = QueryTerm { word, stem, required: false, quoted: false, typos: true };
                let expected = streamed(&stems, &term);
                let typos = TypoTable::new(&stems);
                let found: Vec<(String, u64, MatchKind)> = match lookup(&stems, &typos, &term) {
                    Lookup::Expanded(e) => e.into_iter().map(|e| (e.matched, e.offset, e.kind)).collect(),
                    Lookup::Missing => Vec::new(),
                    Lookup::Found(_) => vec![(String::new(), 0, MatchKind::Exact)],
                };
                proptest::prop_assert_eq!(found, expected);
            }
        }
    }
}
