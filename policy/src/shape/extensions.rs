//! The sections that add tools and change results: `plugins`, `reduction` and `search`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::build::{Build, child, item};
use super::sections::names;
use crate::error::DiagnosticKind;
use crate::file::{MAX_CATALOG_FILE_BYTES, check_text_file};
use crate::model::{self, parse_memory_limit};
use crate::yaml::Node;

use super::values::{Count, Flag, GlobText, MAX_SAFE_INTEGER, Name, PathText, Size};

/// One plugin: exactly one of name or path, plus optional config, searchable, max_threads,
/// max_queued, isolation, memory_limit, sha256 and grants.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    inline,
    extend(
        "oneOf" = [{ "required": ["name"] }, { "required": ["path"] }],
        "x-expected" = "exactly one of name (an installed plugin) or path (a library file)"
    )
)]
pub(crate) struct Plugin {
    /// An installed plugin, found as libtoolgate_plugin_<name>.so (platform file name) in the
    /// directories of TOOLGATE_PLUGIN_PATH, then beside the toolgate program and in its parent
    /// directory.
    #[schemars(
        regex(pattern = r"^[A-Za-z0-9_-]+$"),
        extend("x-expected" = "a plugin name of letters, digits, _ and -")
    )]
    pub name: Option<String>,
    /// The plugin library file; a relative path is resolved against the policy file's directory.
    #[schemars(length(min = 1), extend("x-expected" = "a non-empty file path"))]
    pub path: Option<String>,
    /// Any value (mapping, list, scalar), handed to the plugin as JSON when it is loaded. Default
    /// {}.
    #[expect(
        dead_code,
        reason = "describes the key; build() reads the value from the tree, which keeps a null"
    )]
    pub config: Option<serde_json::Value>,
    /// Put this plugin's tools in the search catalog (needs search) instead of always showing them.
    /// Default false.
    pub searchable: Option<Flag>,
    /// At most this many calls of this plugin hold a thread at once, calls that ignored a
    /// cancellation and still run included; more wait in the queue (max_queued). Default 16.
    #[schemars(range(min = 1), extend("x-expected" = "a whole number >= 1"))]
    pub max_threads: Option<Count>,
    /// At most this many calls of this plugin wait for a thread when all max_threads are taken;
    /// waiting calls are served fairly across sessions (in turn, oldest first within a session),
    /// and their wait counts against their timeout. One more fails at once with the error kind
    /// overloaded. 0: no queue. Default 16384.
    #[schemars(range(min = 0), extend("x-expected" = "a whole number >= 0"))]
    pub max_queued: Option<Count>,
    /// Where the plugin runs: in_process (default; loaded into the host, for plugins you trust) or
    /// process (loaded by a worker process, toolgate plugin-host: a segfault, abort, out-of-memory
    /// or endless loop costs the calls on that worker an error, plugin_crashed or timeout, and the
    /// worker restarts).
    pub isolation: Option<Isolation>,
    /// Under isolation: process, the memory the worker writes to (its data limit, RLIMIT_DATA:
    /// heap, anonymous mappings, thread stacks; not reserved address space): a whole number of KiB,
    /// MiB or GiB, like 512MiB. A plugin that allocates past it crashes its worker, and the call's
    /// error names the limit. Default: no limit.
    #[schemars(
        regex(pattern = r"^[1-9][0-9]{0,5}(KiB|MiB|GiB)$"),
        extend("x-expected" = "a size like 512MiB or 2GiB (units KiB, MiB, GiB)")
    )]
    pub memory_limit: Option<String>,
    /// The SHA-256 of the library file, 64 hex digits; a library whose hash differs is refused at
    /// load. toolgate plugin hash PATH prints the line to paste.
    #[schemars(
        regex(pattern = r"^[0-9a-fA-F]{64}$"),
        extend("x-expected" = "64 hex digits (toolgate plugin hash PATH prints them)")
    )]
    pub sha256: Option<String>,
    /// What the plugin may use; a plugin whose manifest declares capabilities beyond these fails to
    /// load. The plugin receives them in its config under grants. Under isolation: process some are
    /// enforced (see docs/plugins.md).
    pub grants: Option<Grants>,
}

// `plugins[].isolation`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, extend("x-expected" = "in_process or process"))]
pub(crate) enum Isolation {
    InProcess,
    Process,
}

// `plugins[].grants`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    inline,
    extend("x-expected" = "a mapping with fs_read, fs_write, env, net, subprocess")
)]
pub(crate) struct Grants {
    /// Files and directories the plugin may read; relative paths are resolved against the policy
    /// file's directory.
    #[schemars(extend("x-expected" = "a list of paths"))]
    pub fs_read: Option<Vec<PathText>>,
    /// Files and directories the plugin may write; relative paths are resolved against the policy
    /// file's directory.
    #[schemars(extend("x-expected" = "a list of paths"))]
    pub fs_write: Option<Vec<PathText>>,
    /// Environment variables the plugin may read.
    #[schemars(extend("x-expected" = "a list of variable names"))]
    pub env: Option<Vec<Name>>,
    /// Network hosts the plugin may reach: host or host:port. Under isolation: process, a plugin
    /// granted none has no network at all (Linux).
    #[schemars(extend("x-expected" = "a list of host or host:port"))]
    pub net: Option<Vec<Name>>,
    /// Whether the plugin may start processes. Default false.
    pub subprocess: Option<Flag>,
}

// `reduction`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    inline,
    extend("x-expected" = "a mapping (write reduction: {} for every default)")
)]
pub(crate) struct Reduction {
    /// Where results are stored, as a URL: memory://, file:///absolute/dir, file://relative/dir
    /// (resolved against the policy file's directory) or s3://bucket/prefix. Absent = a local
    /// folder chosen by the host program.
    #[schemars(
        regex(pattern = "^(memory|file|s3|s3a)://"),
        extend(
            "x-expected" = "a store URL starting with memory://, file:// or s3:// (such as file:///var/lib/toolgate or s3://bucket/prefix)"
        )
    )]
    pub store: Option<String>,
    /// Options for the store builder, such as endpoint, region, access_key_id, secret_access_key
    /// for s3.
    pub store_options: Option<BTreeMap<String, StoreOption>>,
    /// A text result strictly larger than this many bytes is offloaded. Default 50000.
    pub max_result_bytes: Option<Size>,
    /// Characters from the start of an offloaded result shown in its notice. Default 1000.
    pub preview_head_chars: Option<Size>,
    /// Characters from the end of an offloaded result shown in its notice. Default 500.
    pub preview_tail_chars: Option<Size>,
    /// When the estimated history reaches this many tokens, the tool results of older rounds are
    /// offloaded. Default 160000.
    pub max_context_tokens: Option<Size>,
    /// The most recent tool rounds kept as they are when older rounds are offloaded. Default 1.
    pub keep_recent_tool_rounds: Option<Size>,
    /// When rounds are offloaded, tool results under this many bytes are left in place. Default
    /// 1024.
    pub min_offload_bytes: Option<Size>,
    /// Answer a read of another session's result with not found instead of access denied, so ids
    /// cannot be probed. Default false.
    pub hide_foreign_results: Option<Flag>,
}

/// One store option's value.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(
    inline,
    extend(
        "x-key" = "option",
        "x-expected" = "a string (quote numbers and booleans)"
    )
)]
pub(crate) struct StoreOption(pub String);

// `search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    inline,
    extend("x-expected" = "a mapping (write search: {} for every default)")
)]
pub(crate) struct Search {
    /// JSONL catalog files, one {"name", "description", "parameters"} object per line; relative
    /// paths are resolved against the policy file's directory and must exist.
    pub catalogs: Option<Vec<PathText>>,
    /// Names or globs of plugin and native tools to move into the catalog.
    pub searchable_tools: Option<Vec<GlobText>>,
    /// Extra search keywords per tool name.
    pub keywords: Option<BTreeMap<String, Keywords>>,
    /// Allow calling a catalog tool the model has not found yet. Default false: such a call gets an
    /// error saying to search first.
    pub allow_direct_calls: Option<Flag>,
    /// Hand the catalog to the provider's own tool search instead of tool_search. Default false.
    pub use_model_native: Option<Flag>,
    /// A prebuilt index (toolgate index build), memory-mapped at start; relative to the policy
    /// file's directory. Absent = built in memory at start.
    pub index_file: Option<PathText>,
    /// tool_search says why each tool matched (a why list per tool). Default false: explaining
    /// costs more than the search.
    pub explain: Option<Flag>,
    /// The optional semantic search stage: a local static embedding model whose tool vectors are
    /// fused with the lexical ranking. Absent = lexical search only.
    pub embeddings: Option<Embeddings>,
    /// How many tools tool_search returns when the model gives no max_results. Default 5.
    #[schemars(
        range(min = 1, max = MAX_SAFE_INTEGER),
        extend("x-expected" = "a whole number from 1 to 9007199254740991")
    )]
    pub default_max_results: Option<Count>,
}

/// The extra keywords of this tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(inline, extend("x-key" = "tool"))]
pub(crate) struct Keywords(pub Vec<Keyword>);

// One search keyword.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(inline, extend("x-expected" = "a keyword string"))]
pub(crate) struct Keyword(pub String);

// `search.embeddings`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    inline,
    extend("x-expected" = "a mapping with model (a model directory)")
)]
pub(crate) struct Embeddings {
    /// A static embedding model directory (model2vec layout: model.safetensors, tokenizer.json of a
    /// BERT WordPiece tokenizer); relative to the policy file's directory. Read from disk, never
    /// downloaded.
    pub model: PathText,
}

// ---- From the file's shape to the model -------------------------------------------------

impl Plugin {
    pub(crate) fn build(self, node: &Node, cx: &mut Build<'_>) -> Option<model::PluginSpec> {
        // The schema requires exactly one of name and path.
        let location = match (self.name, self.path) {
            (Some(name), _) => model::PluginLocation::Name(name),
            (None, Some(path)) => model::PluginLocation::Path(cx.resolve(&path)),
            (None, None) => return None,
        };
        Some(model::PluginSpec {
            location,
            // From the tree, not `self.config`: serde reads `config:` (null) as an absent
            // `Option`, while the plugin is handed the null as written.
            config: node.get("config").map_or_else(
                || serde_json::Value::Object(serde_json::Map::new()),
                |entry| entry.value.to_json(),
            ),
            searchable: self.searchable.is_some_and(|f| f.0),
            max_threads: self
                .max_threads
                .and_then(|n| usize::try_from(n.0).ok())
                .unwrap_or(model::PluginSpec::DEFAULT_MAX_THREADS),
            max_queued: self
                .max_queued
                .and_then(|n| usize::try_from(n.0).ok())
                .unwrap_or(model::PluginSpec::DEFAULT_MAX_QUEUED),
            isolation: match self.isolation {
                Some(Isolation::Process) => model::Isolation::Process,
                Some(Isolation::InProcess) | None => model::Isolation::InProcess,
            },
            // The schema checked the form; the largest it allows fits a u64.
            memory_limit: self.memory_limit.as_deref().and_then(parse_memory_limit),
            sha256: self.sha256.map(|s| s.to_ascii_lowercase()),
            grants: self.grants.map(|g| g.build(cx)),
            position: cx.position(node.pos),
        })
    }
}

impl Grants {
    fn build(self, cx: &Build<'_>) -> model::Grants {
        let paths = |list: Option<Vec<PathText>>| -> Vec<std::path::PathBuf> {
            list.unwrap_or_default()
                .iter()
                .map(|p| cx.resolve(&p.0))
                .collect()
        };
        model::Grants {
            fs_read: paths(self.fs_read),
            fs_write: paths(self.fs_write),
            env: names(self.env.unwrap_or_default()),
            net: names(self.net.unwrap_or_default()),
            subprocess: self.subprocess.is_some_and(|f| f.0),
        }
    }
}

impl Reduction {
    pub(crate) fn build(self, cx: &Build<'_>) -> model::ReductionSettings {
        let mut reduction = model::ReductionSettings::default();
        let set = |target: &mut u64, value: Option<Size>| {
            if let Some(value) = value {
                *target = value.0;
            }
        };
        reduction.store = self.store.map(|url| store_url(&url, cx));
        reduction.store_options = self
            .store_options
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        set(&mut reduction.max_result_bytes, self.max_result_bytes);
        set(&mut reduction.preview_head_chars, self.preview_head_chars);
        set(&mut reduction.preview_tail_chars, self.preview_tail_chars);
        set(&mut reduction.max_context_tokens, self.max_context_tokens);
        set(
            &mut reduction.keep_recent_tool_rounds,
            self.keep_recent_tool_rounds,
        );
        set(&mut reduction.min_offload_bytes, self.min_offload_bytes);
        if let Some(flag) = self.hide_foreign_results {
            reduction.hide_foreign_results = flag.0;
        }
        reduction
    }
}

/// `file://relative/dir` is resolved against the policy's directory and made absolute
/// (`file:///abs/dir`); every other URL is kept as written.
fn store_url(url: &str, cx: &Build<'_>) -> String {
    let Some(rest) = url.strip_prefix("file://") else {
        return url.to_owned();
    };
    if rest.starts_with('/') {
        return url.to_owned();
    }
    let joined = cx.dir.join(rest);
    let absolute = std::path::absolute(&joined).unwrap_or(joined);
    format!("file://{}", absolute.display())
}

impl Search {
    pub(crate) fn build(self, node: &Node, cx: &mut Build<'_>) -> model::SearchSettings {
        let mut search = model::SearchSettings::default();
        let catalogs = child(node, "catalogs");
        for (i, written) in self.catalogs.unwrap_or_default().into_iter().enumerate() {
            let written = written.0;
            let resolved = cx.resolve(&written);
            if let Err(error) = check_text_file(&resolved, MAX_CATALOG_FILE_BYTES) {
                let error = error.problem;
                cx.report(
                    item(catalogs, i).pos,
                    format!(
                        "search.catalogs[{i}]: cannot read catalog {written:?} \
                         (looked for {}): {error}",
                        resolved.display()
                    ),
                    DiagnosticKind::MissingFile,
                );
            }
            search.catalogs.push(resolved);
        }
        search.searchable_tools = cx.globs(
            &self.searchable_tools.unwrap_or_default(),
            child(node, "searchable_tools"),
            "search.searchable_tools",
        );
        search.keywords = self
            .keywords
            .unwrap_or_default()
            .into_iter()
            .map(|(tool, words)| (tool, words.0.into_iter().map(|w| w.0).collect()))
            .collect();
        search.allow_direct_calls = self.allow_direct_calls.is_some_and(|f| f.0);
        search.use_model_native = self.use_model_native.is_some_and(|f| f.0);
        search.index_file = self.index_file.map(|p| cx.resolve(&p.0));
        search.explain = self.explain.is_some_and(|f| f.0);
        search.embeddings = self.embeddings.map(|e| model::EmbeddingsSettings {
            model: cx.resolve(&e.model.0),
        });
        if let Some(n) = self.default_max_results {
            search.default_max_results = n.0;
        }
        search
    }
}
