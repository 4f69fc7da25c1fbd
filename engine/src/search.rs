//! Tool search (S1-S6): a large catalog hides behind the `tool_search` meta-tool.
//!
//! * The catalog is every tool marked searchable (plugins with `searchable: true`, tools matched
//!   by `search.searchable_tools`) plus the JSONL catalogs of the policy. Catalog-only entries
//!   (no implementation in this engine) can be found and shown, and a call to one says so.
//! * The model first sees the ordinary tools and `tool_search`, whose description reminds it of
//!   the catalog's names (S1).
//! * `tool_search {query, max_results?}` ranks the catalog with the [`toolgate_search`] index
//!   (S2, S6); the tools it returns become visible for the rest of the session (S3). The visible
//!   set lives in the session's state, not in the history.
//! * A catalog tool that was not found yet cannot be called (S4), unless the policy allows
//!   direct calls; the guard's visibility layer refuses it with a message that says to search first.
//! * With `use_model_native`, there is no `tool_search`: the catalog is handed to the provider's
//!   own search through [`crate::Engine::deferred_tools`] and its tools may be called (S5).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use toolgate_search::{IndexError, LiveIndex, Query, SearchIndex, ToolDoc};

use crate::access::CallKind;
use crate::clients::ClientTable;
use crate::registry::{BuiltinTool, Registry};
use crate::session::Sessions;
use crate::tool::{BoxFuture, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Names listed in the reminder before "and N more".
const REMINDER_NAMES: usize = 60;

/// A catalog entry with no implementation in this engine.
pub(crate) struct CatalogOnly {
    pub(crate) spec: ToolSpec,
}

impl Tool for CatalogOnly {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        _ctx: ToolContext,
        _args: Value,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let name = self.spec.name.clone();
        Box::pin(async move {
            Err(ToolError::coded(
                "not_implemented",
                format!(
                    "{name} is described in a catalog but has no implementation in this engine"
                ),
            ))
        })
    }
}

/// The `tool_search` meta-tool. The index holds model-facing names (N6): they are what the
/// model reads in results and writes after `select:`; the session records the real names found.
pub(crate) struct ToolSearch {
    spec: ToolSpec,
    index: Arc<LiveIndex>,
    sessions: Arc<Sessions>,
    default_max: usize,
    /// Model-facing name -> real name, for every catalog tool.
    real_names: Arc<HashMap<String, String>>,
    /// Each found tool says why it matched (`search.explain`).
    explain: bool,
    /// What each principal may see (C4): a caller finds only those tools.
    clients: Option<Arc<ClientTable>>,
}

impl ToolSearch {
    pub(crate) fn new(
        index: Arc<LiveIndex>,
        sessions: Arc<Sessions>,
        default_max: usize,
        real_names: HashMap<String, String>,
        explain: bool,
        clients: Option<Arc<ClientTable>>,
    ) -> Self {
        let current = index.current();
        let mut names: Vec<&str> = current.names().collect();
        names.sort_unstable();
        let mut reminder = names
            .iter()
            .take(REMINDER_NAMES)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if names.len() > REMINDER_NAMES {
            reminder.push_str(&format!(" and {} more", names.len() - REMINDER_NAMES));
        }
        let description = format!(
            "Search the catalog of {} more tools that are not shown yet, by what you want to do. \
             Found tools become available to call. Use \"select:name1,name2\" to load tools by exact \
             name, and \"+word\" for a word that must match. Catalog: {reminder}.",
            names.len()
        );
        ToolSearch {
            spec: ToolSpec::new(
                BuiltinTool::ToolSearch.name(),
                description,
                json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What the tool should do, or select:name1,name2."},
                        "max_results": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many tools to return (default 5)."}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
            ),
            index,
            sessions,
            default_max,
            real_names: Arc::new(real_names),
            explain,
            clients,
        }
    }
}

impl Tool for ToolSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        ctx: ToolContext,
        args: Value,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let index = self.index.current();
        let sessions = self.sessions.clone();
        let default_max = self.default_max;
        let real_names = self.real_names.clone();
        let explain = self.explain;
        let clients = self.clients.clone();
        Box::pin(async move {
            let query = match args.get("query") {
                Some(Value::String(q)) => q.clone(),
                Some(other) => {
                    return Err(ToolError::invalid_arguments(format!(
                        "query must be a string, not {other}"
                    )));
                }
                None => return Err(ToolError::invalid_arguments("query is required")),
            };
            let max = match args.get("max_results") {
                None | Some(Value::Null) => default_max,
                Some(v) => match v.as_u64() {
                    Some(n) if (1..=50).contains(&n) => n as usize,
                    _ => {
                        return Err(ToolError::invalid_arguments(format!(
                            "max_results must be a whole number from 1 to 50, not {v}"
                        )));
                    }
                },
            };
            let parsed =
                Query::parse(&query).map_err(|e| ToolError::invalid_arguments(e.to_string()))?;
            // C4: a caller finds only what it may see; search deeper so that `max` of those
            // can come back.
            let deeper = if clients.is_some() {
                max.saturating_mul(4)
            } else {
                max
            };
            let mut results = if explain {
                index.search_explained(&parsed, deeper)
            } else {
                index.search(&parsed, deeper)
            };
            if let Some(clients) = &clients {
                results.hits.retain(|h| {
                    let real = real_names.get(&h.name).unwrap_or(&h.name);
                    clients.sees(&ctx.caller, CallKind::Tool, real)
                });
            }
            results.hits.truncate(max);
            let found: Vec<String> = results.hits.iter().map(|h| h.name.clone()).collect();
            sessions.of(ctx.session.as_ref()).state().reveal(
                found
                    .iter()
                    .map(|name| real_names.get(name).unwrap_or(name).clone()),
            );
            let tools: Vec<Value> = results
                .hits
                .iter()
                .map(|h| {
                    let doc = index.get(&h.name);
                    let mut tool = json!({
                        "name": h.name,
                        "description": doc.as_ref().map(|d| d.description.to_string()).unwrap_or_default(),
                        "parameters": doc.as_ref().and_then(|d| d.parameters().ok()).unwrap_or(Value::Null),
                    });
                    if explain {
                        let why: Vec<String> = h
                            .why
                            .iter()
                            .map(|m| format!("{} ~ {} in {} ({:?})", m.term, m.matched, m.field.as_str(), m.kind).to_lowercase())
                            .collect();
                        tool["why"] = json!(why);
                    }
                    tool
                })
                .collect();
            let mut out = json!({ "tools": tools });
            if !results.not_found.is_empty() {
                out["not_found"] = json!(results.not_found);
            }
            out["note"] = Value::String(if found.is_empty() {
                "No tool matched. Try other words, or fewer of them.".into()
            } else {
                "These tools are now available to call.".into()
            });
            Ok(ToolOutput::Text(out.to_string()))
        })
    }
}

/// The documents the index holds: every searchable tool of the registry (JSONL catalogs,
/// searchable plugins, `searchable_tools`) under its model-facing name, with its model-facing
/// aliases and the policy's keywords (keyed by real name).
pub(crate) fn catalog_docs(
    registry: &Registry,
    settings: &toolgate_policy::SearchSettings,
) -> Vec<ToolDoc> {
    registry
        .entries()
        .filter(|(_, e)| e.is_searchable())
        .map(|(name, e)| {
            let spec = e.tool().spec();
            ToolDoc {
                name: e.model_name().to_string(),
                description: spec.description.clone(),
                parameters: spec.parameters.clone(),
                aliases: registry.aliases_of(name),
                keywords: settings.keywords.get(name).cloned().unwrap_or_default(),
            }
        })
        .collect()
}

/// Where the tool vectors of the semantic stage are kept beside an index file: `INDEX.vectors`.
pub fn vectors_path(index_file: &std::path::Path) -> std::path::PathBuf {
    let mut name = index_file.as_os_str().to_owned();
    name.push(".vectors");
    std::path::PathBuf::from(name)
}

/// How the tool vectors of an index were had: computed with the model, or taken from the vectors
/// file of an earlier build (same model, same tool text).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VectorCounts {
    /// Tools embedded with the model.
    pub embedded: usize,
    /// Tools whose vector was taken from the earlier vectors file.
    pub reused: usize,
}

/// Attaches the semantic stage of `search.embeddings` to `index` (none: `index` as it is). The
/// model is loaded from its directory (never downloaded). The tool vectors are computed, except
/// that a tool whose text did not change since the vectors file beside `index_file`
/// ([`vectors_path`]) was written (with the same model) takes its vector from there: a rebuild
/// embeds only the tools that changed. A vectors file that cannot be read is logged and ignored.
///
/// # Errors
///
/// The model cannot be loaded, or this build has no `semantic` feature.
pub fn attach_embeddings(
    index: SearchIndex,
    embeddings: Option<&toolgate_policy::EmbeddingsSettings>,
    index_file: Option<&std::path::Path>,
) -> Result<SearchIndex, crate::error::BuildError> {
    attach_embeddings_counted(index, embeddings, index_file).map(|(index, _)| index)
}

/// [`attach_embeddings`], and how many tool vectors were embedded and reused (none without
/// `search.embeddings`).
///
/// # Errors
///
/// As [`attach_embeddings`].
pub fn attach_embeddings_counted(
    index: SearchIndex,
    embeddings: Option<&toolgate_policy::EmbeddingsSettings>,
    index_file: Option<&std::path::Path>,
) -> Result<(SearchIndex, Option<VectorCounts>), crate::error::BuildError> {
    let Some(settings) = embeddings else {
        return Ok((index, None));
    };
    #[cfg(not(feature = "semantic"))]
    {
        let _ = (index, index_file);
        Err(crate::error::BuildError::SemanticUnavailable {
            path: settings.model.clone(),
        })
    }
    #[cfg(feature = "semantic")]
    {
        use toolgate_search_semantic::{EmbeddingModel, Semantic, ToolVectors};
        let model = EmbeddingModel::load(&settings.model).map_err(|source| {
            crate::error::BuildError::EmbeddingModel {
                path: settings.model.clone(),
                source,
            }
        })?;
        let previous = index_file
            .map(vectors_path)
            .filter(|p| p.is_file())
            .and_then(|path| match ToolVectors::open(&path) {
                Ok(v) => Some(v),
                Err(e) => {
                    tracing::warn!(
                        "cannot use tool vectors {}: {}; computing them (run `toolgate index build` again)",
                        path.display(),
                        crate::error::Chain(&e)
                    );
                    None
                }
            });
        let (stage, computed) = Semantic::compute(Arc::new(model), &index, previous.as_ref());
        let counts = VectorCounts {
            embedded: computed.embedded,
            reused: computed.reused,
        };
        tracing::debug!(
            embedded = counts.embedded,
            reused = counts.reused,
            "tool vectors"
        );
        Ok((index.with_stage(Arc::new(stage)), Some(counts)))
    }
}

/// Builds the search index over `docs` (see [`Engine::search_docs`](crate::Engine::search_docs)),
/// or opens the prebuilt `index_file` when it holds exactly those names; a prebuilt file that
/// is missing, is not a regular file (a FIFO, a device), does not match or does not open is
/// logged (a warning; `info` when it does not exist yet) and the index is built in memory.
///
/// The prebuilt file is read into memory ([`SearchIndex::open`]), not memory-mapped: a mapped
/// file truncated or rewritten in place while the engine runs would kill the process with
/// `SIGBUS` on the next search, and nothing the engine checks at open can prevent that. Read,
/// the index is this process's own copy (about 65 MB resident for 100,000 tools), and a file
/// changed on disk later changes nothing until the engine is built again. Opening costs about
/// the same either way: the mapped open also reads every byte, to verify the checksum.
///
/// # Errors
///
/// The index cannot be built from `docs`.
pub fn build_index(
    docs: Vec<ToolDoc>,
    index_file: Option<&std::path::Path>,
) -> Result<SearchIndex, IndexError> {
    if let Some(path) = index_file {
        match SearchIndex::open(path) {
            Ok(idx) => {
                let mut a: Vec<&str> = idx.names().collect();
                let mut b: Vec<&str> = docs.iter().map(|d| d.name.as_str()).collect();
                a.sort_unstable();
                b.sort_unstable();
                if a == b {
                    return Ok(idx);
                }
                tracing::warn!(
                    "index file {} does not match the catalog; building the index in memory (run `toolgate index build` again)",
                    path.display()
                );
            }
            Err(IndexError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                tracing::info!(
                    "index file {} does not exist; building the index in memory (`toolgate index build` writes it)",
                    path.display()
                );
            }
            Err(e) => tracing::warn!(
                "cannot open index file {}: {}; building the index in memory",
                path.display(),
                crate::error::Chain(&e)
            ),
        }
    }
    SearchIndex::build(docs)
}
