//! Where a search index comes from, for `search` and `index build`: a prebuilt index file,
//! JSON Lines catalogs, or a policy's `search:` catalog.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use toolgate::Engine;
use toolgate_search::{Catalog, IndexError, SearchIndex, ToolDoc, WrittenIndex};

use crate::error::CliError;

/// Opens an index file written by `toolgate index build`.
pub fn open_index(path: &Path) -> Result<SearchIndex, CliError> {
    SearchIndex::open(path).map_err(CliError::OpenIndex)
}

/// Reads and indexes catalogs; also returns how long the indexing itself took. The catalogs
/// are read as [`Catalog`]s, each schema kept as its JSON text until it is indexed.
pub fn build_from_catalogs(paths: &[PathBuf]) -> Result<(SearchIndex, Duration), CliError> {
    let docs = read_catalogs(paths)?;
    let started = Instant::now();
    let index =
        SearchIndex::build_catalog(docs).map_err(|source| index_catalogs_error(paths, source))?;
    Ok((index, started.elapsed()))
}

/// Reads and indexes catalogs as [`build_from_catalogs`] does, and writes the index to
/// `output` without holding it in memory ([`SearchIndex::write_catalog`]); also returns how
/// long indexing and writing took.
pub fn write_from_catalogs(
    paths: &[PathBuf],
    output: &Path,
) -> Result<(WrittenIndex, Duration), CliError> {
    let docs = read_catalogs(paths)?;
    let started = Instant::now();
    let written = SearchIndex::write_catalog(docs, output).map_err(|e| match e {
        // Building reads no file: an I/O error is the index file's.
        e @ IndexError::Io { .. } => CliError::WriteIndex(e),
        e => index_catalogs_error(paths, e),
    })?;
    Ok((written, started.elapsed()))
}

/// The catalogs at `paths`, read in order into one.
fn read_catalogs(paths: &[PathBuf]) -> Result<Catalog, CliError> {
    let mut docs = Catalog::default();
    for path in paths {
        let read = Catalog::read_jsonl(path).map_err(CliError::Catalog)?;
        tracing::debug!(catalog = %path.display(), tools = read.len(), "catalog read");
        docs.append(read);
    }
    Ok(docs)
}

/// The catalogs at `paths` could not be indexed.
fn index_catalogs_error(paths: &[PathBuf], source: IndexError) -> CliError {
    CliError::IndexCatalogs {
        files: paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        source,
    }
}

/// The policy's semantic stage (`search.embeddings`) attached to `index`, as the engine does;
/// `index_file` is where its tool vectors may already be (beside the index).
pub fn with_embeddings(
    index: SearchIndex,
    engine: &Engine,
    name: &str,
    index_file: Option<&Path>,
) -> Result<SearchIndex, CliError> {
    with_embeddings_counted(index, engine, name, index_file).map(|(index, _)| index)
}

/// [`with_embeddings`], and how many tool vectors were embedded and how many reused.
pub fn with_embeddings_counted(
    index: SearchIndex,
    engine: &Engine,
    name: &str,
    index_file: Option<&Path>,
) -> Result<(SearchIndex, Option<toolgate::search::VectorCounts>), CliError> {
    let embeddings = engine
        .policy()
        .search
        .as_ref()
        .and_then(|s| s.embeddings.as_ref());
    toolgate::search::attach_embeddings_counted(index, embeddings, index_file).map_err(|e| {
        CliError::IndexPolicyCatalog {
            policy: name.to_string(),
            source: e.into(),
        }
    })
}

/// The documents the engine indexes for `tool_search` under this policy: every searchable tool
/// of the registry (JSONL catalogs, searchable plugins, `searchable_tools`), with its aliases
/// and the policy's keywords; and the policy's `search.index_file`.
pub fn policy_catalog(
    engine: &Engine,
    name: &str,
) -> Result<(Vec<ToolDoc>, Option<PathBuf>), CliError> {
    let Some(search) = &engine.policy().search else {
        return Err(CliError::NoSection {
            policy: name.to_string(),
            section: "search",
            what: "tool catalog",
        });
    };
    let docs = engine.search_docs().unwrap_or_default();
    if docs.is_empty() {
        tracing::warn!("{name}: the search catalog is empty");
    }
    Ok((docs, search.index_file.clone()))
}
