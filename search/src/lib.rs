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
//!   whole index as one checksummed file, which [`SearchIndex::open`] reads
//!   back into memory and [`SearchIndex::open_mapped`] (an `unsafe fn`: the
//!   file must not change while mapped) maps.
//! * [`Query::parse`] reads what the model wrote: free text with optional
//!   `+required` words, or `select:name_a,name_b` for exact names.
//! * [`SearchIndex::search`] ranks tools with a field-weighted BM25 (see
//!   [`Ranking`]), re-scores the best few dozen by query word pairs found
//!   adjacent in their name or description (from words stored at build, not
//!   re-read text). [`SearchIndex::search_explained`] also explains each hit
//!   ([`Hit::why`]); `search` leaves that out, as it costs more than the
//!   search.
//! * [`LiveIndex`] holds the current index for concurrent readers and swaps
//!   in a rebuilt one atomically.
//! * [`FusedStage`] is the hook of an optional second ranking fused with the lexical one
//!   ([`SearchIndex::with_stage`]): the semantic stage, in the `toolgate-search-semantic`
//!   crate, gives every tool a vector with an embedding model and fuses the tools nearest the
//!   query. Without a stage, search is lexical only. The retrieval metrics, baselines and
//!   quality benchmarks are in the development crate `toolgate-search-eval`.
//!
//! # Matching
//!
//! Text is split and normalised in one place for both sides: names break at `_`, `-`, `.`,
//! `__`, camelCase humps and letter/digit boundaries, everything is
//! lowercased, stop words are dropped and words are stemmed. A query word
//! matches a tool's term exactly or by stem; only if the word is nowhere in
//! the dictionary is it expanded to the terms it is a prefix of (words of 4+
//! characters) or within a small edit distance of (1 for 4-7 characters, 2
//! beyond; the first letter must be right), and those matches are scored
//! with a penalty. A typo therefore never outranks an exact match of the
//! same strength. Expansions are single words: a word never expands into a
//! whole name such as `get_weather`. Words of a token that cannot be a misspelling (an
//! e-mail address or URL, a token with digits, one over 24 bytes) are not expanded by typo
//! unless the query also has the word on its own.
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

#![warn(missing_docs)]

// The modules in layers, from the public face down: a module uses only
// modules of the layers below its own, never one of its layer or above
// (data flows one way; nothing uses this root).
mod live;

mod index;

mod accumulate;
mod build;
mod explain;
mod rerank;
mod score;
mod select_avx2;

mod file;

mod check;
mod lookup;
mod names;
mod ranking;
mod record;

mod fields;
mod format;
mod hits;
mod postings;
mod query;
mod terms;

mod automata;
mod catalog;
mod error;
mod field;
mod hash;
mod quotes;
mod simd;
mod stage;
mod text;
mod threads;
mod words;

pub use catalog::{Catalog, CatalogError, ToolDoc, read_catalog_jsonl, read_catalog_jsonl_from};
pub use error::{Damage, IndexError, Section};
pub use field::{FIELDS, Field};
pub use hits::{Hit, Match, MatchKind, SearchResults};
pub use index::{SearchIndex, WrittenIndex};
pub use live::LiveIndex;
pub use query::is_valid_name;
pub use query::{Query, QueryError};
pub use ranking::Ranking;
pub use record::ToolDocRef;
pub use stage::FusedStage;
/// How the index splits text into words and which it drops: the semantic stage embeds and
/// tokenizes a tool's text the same way, and the quality baselines split with them.
pub use text::{is_stop_word, words};
