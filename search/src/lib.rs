//! Tool search for toolgate: find the few tools an agent needs among
//! thousands.
//!
//! An agent with a large tool catalog cannot put every tool's schema in its
//! context. Instead the model calls a `tool_search` meta-tool with a few
//! words, and only the tools found become visible. This crate is that
//! search: an index over tool names, descriptions, parameters, aliases and
//! keywords, and a ranking that puts the tool the model means first.
//!
//! # Overview
//!
//! * [`ToolDoc`] is what is indexed; [`read_catalog_jsonl`] reads a catalog.
//! * [`SearchIndex::build`] indexes documents. The term dictionary is an
//!   [`fst::Map`] from term to postings; [`SearchIndex::write`] stores the
//!   whole index as one checksummed file and [`SearchIndex::open`] maps it
//!   back into memory.
//! * [`Query::parse`] reads what the model wrote: free text with optional
//!   `+required` words, or `select:name_a,name_b` for exact names.
//! * [`SearchIndex::search`] ranks tools with a field-weighted BM25 (see
//!   [`Ranking`]), re-scores the best few dozen by query word pairs found
//!   adjacent in their name or description, and explains each hit
//!   ([`Hit::why`]).
//! * [`LiveIndex`] holds the current index for concurrent readers and swaps
//!   in a rebuilt one atomically.
//! * [`eval`] has the retrieval metrics and the baselines used by the
//!   quality benchmark.
//!
//! # Matching
//!
//! Text is split and normalised by [`text`]: names break at `_`, `-`, `.`,
//! `__`, camelCase humps and letter/digit boundaries, everything is
//! lowercased, stop words are dropped and words are stemmed. A query word
//! matches a tool's term exactly or by stem; only if the word is nowhere in
//! the dictionary is it expanded to the terms it is a prefix of (words of 4+
//! characters) or within a small edit distance of (1 for 4-7 characters, 2
//! beyond; the first letter must be right), and those matches are scored
//! with a penalty. A typo therefore never outranks an exact match of the
//! same strength. Expansions are single words: a word never expands into a
//! whole name such as `get_weather`.
//!
//! ```
//! use toolgate_search::{Query, SearchIndex, ToolDoc};
//!
//! let index = SearchIndex::build(vec![
//!     ToolDoc::new("get_weather", "Current weather for a city."),
//!     ToolDoc::new("send_email", "Send an email message."),
//! ])?;
//! let found = index.search(&Query::parse("wether in Paris")?, 5);
//! assert_eq!(found.hits[0].name, "get_weather");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod catalog;
mod check;
pub mod eval;
mod format;
mod index;
mod live;
mod query;
pub mod text;

pub use catalog::{CatalogError, ToolDoc, read_catalog_jsonl, read_catalog_jsonl_from};
pub use index::{
    Hit, IndexError, Match, MatchKind, RERANK_DEPTH, Ranking, SearchIndex, SearchResults,
    ToolDocRef,
};
pub use live::LiveIndex;
pub use query::{MAX_NAME_BYTES, MAX_QUERY_BYTES, Query, QueryError, is_valid_name};

/// The number of indexed fields.
pub const FIELDS: usize = 6;

/// A part of a tool document that terms are indexed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    /// The tool name, split into parts, plus the whole name.
    Name = 0,
    /// The description.
    Description = 1,
    /// Parameter (property) names, nested ones included.
    ParamName = 2,
    /// Parameter descriptions and `enum` values.
    ParamDescription = 3,
    /// Aliases, split like names.
    Alias = 4,
    /// Keywords.
    Keyword = 5,
}

impl Field {
    /// Every field, in index order.
    pub const ALL: [Field; FIELDS] = [
        Field::Name,
        Field::Description,
        Field::ParamName,
        Field::ParamDescription,
        Field::Alias,
        Field::Keyword,
    ];

    /// The field's name as written in explanations: `name`, `description`,
    /// `param_name`, `param_description`, `alias`, `keyword`.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Description => "description",
            Field::ParamName => "param_name",
            Field::ParamDescription => "param_description",
            Field::Alias => "alias",
            Field::Keyword => "keyword",
        }
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
