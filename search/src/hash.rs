//! A fast hasher for maps keyed by the index's own terms.
//!
//! FxHash from `rustc-hash`: a fast, non-cryptographic hasher for interning terms while
//! building and looking up a query's stems. The keys are the index's and the query's own
//! terms, bounded in number (a query has at most `MAX_QUERY_TERMS` of them), so hash flooding
//! is not a concern. Nothing written to an index depends on the hash: terms are sorted before
//! they are written.

pub(crate) use rustc_hash::FxHasher;

/// `HashMap<K, V, FxBuild>`: a map with [`FxHasher`].
pub(crate) type FxBuild = std::hash::BuildHasherDefault<FxHasher>;
