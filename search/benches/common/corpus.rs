//! The speed bench's catalog and queries, shared with `examples/bench_corpus.rs` (which writes
//! them out for `scripts/bench-search.sh`, so that bm25s and tantivy see the same data).
//!
//! The catalog is the three real catalogs repeated with renamed tools (`name_r17`) up to the
//! size asked for; queries are the real labelled queries that parse.

use toolgate_search::{Query, ToolDoc};
use toolgate_search_eval::{self as eval, DATASETS};

/// The real catalogs (the first tool of each name kept) and the text of every labelled query
/// that parses.
pub fn real() -> (Vec<ToolDoc>, Vec<String>) {
    let dir = eval::datasets_dir();
    let (mut base, mut queries) = (Vec::new(), Vec::new());
    for name in DATASETS {
        let data = eval::load_dataset(&dir, name).unwrap_or_else(|e| {
            panic!("{e} (set {} to the data set directory)", eval::DATASETS_ENV)
        });
        base.extend(data.catalog);
        queries.extend(
            data.queries
                .into_iter()
                .map(|q| q.query)
                .filter(|q| Query::parse(q).is_ok()),
        );
    }
    // The catalogs share a few names; keep the first of each.
    let mut seen = std::collections::HashSet::new();
    base.retain(|d: &ToolDoc| seen.insert(d.name.clone()));
    (base, queries)
}

/// `base` repeated with renamed tools up to `tools` tools.
pub fn repeated(base: &[ToolDoc], tools: usize) -> Vec<ToolDoc> {
    let mut docs = Vec::with_capacity(tools);
    if base.is_empty() {
        return docs;
    }
    'fill: for round in 0.. {
        for d in base {
            if docs.len() == tools {
                break 'fill;
            }
            let mut d = d.clone();
            if round > 0 {
                d.name = format!("{}_r{round}", d.name);
            }
            docs.push(d);
        }
    }
    docs
}
