//! What a search returns: hits, best first, each with why it matched.

use crate::field::Field;

/// How a query word matched an indexed term.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MatchKind {
    /// The same word.
    Exact,
    /// The same stem (`files` and `file`).
    Stem,
    /// The query word (4 characters or more) is a prefix of the term.
    Prefix,
    /// Within a small edit distance of the term.
    Typo,
}

/// One reason a tool was found: a query word matched a term in a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    /// The query word, lowercased.
    pub term: String,
    /// The indexed term it matched (a stem for stem, prefix and typo matches).
    pub matched: String,
    /// Where the term was found.
    pub field: Field,
    /// How it matched.
    pub kind: MatchKind,
}

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The tool name.
    pub name: String,
    /// The relevance score; only comparable within one search.
    pub score: f32,
    /// Why the tool matched, ordered by query word, then field; empty unless
    /// the search was asked to explain (`SearchIndex::search_explained`).
    pub why: Vec<Match>,
}

/// What a search returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchResults {
    /// The hits, best first; ties are broken by name.
    pub hits: Vec<Hit>,
    /// For `select:` queries, the requested names that are not in the index,
    /// in query order. Always empty for free-text queries.
    pub not_found: Vec<String>,
}
