//! The sections that add tools and change results: `plugins`, `reduction`, `search` and
//! `mcp_servers` (the keys of `plugins` and `mcp_servers` are in `shape/`, whose types are
//! the file's).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{McpClientRequests, Position};
use crate::env_template::EnvTemplate;
use crate::glob::Glob;
use crate::shape::values::{self, Count, Flag, MAX_SAFE_INTEGER, Name, PathText, Size, names_only};

/// A plugin to load.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginSpec {
    /// Where the library is.
    pub location: PluginLocation,
    /// JSON configuration handed to the plugin when it is loaded.
    pub config: serde_json::Value,
    /// Put this plugin's tools in the search catalog instead of always showing them.
    pub searchable: bool,
    /// At most this many of the plugin's calls hold a thread at once, calls that ignored a
    /// cancellation and still run included; a call beyond it fails at once with `overloaded`.
    /// Default [`PluginSpec::DEFAULT_MAX_THREADS`].
    pub max_threads: usize,
    /// At most this many of the plugin's calls wait for a thread (beyond `max_threads`),
    /// served fairly across sessions; a call beyond it fails at once with `overloaded`.
    /// Default [`PluginSpec::DEFAULT_MAX_QUEUED`].
    pub max_queued: usize,
    /// Where the plugin runs: in the host's process (default) or in a worker process.
    pub isolation: Isolation,
    /// Under `isolation: process`, the worker's memory limit in bytes (`memory_limit: 512MiB`),
    /// set as its data limit (`RLIMIT_DATA`); `None` = no limit.
    pub memory_limit: Option<u64>,
    /// The SHA-256 of the library, 64 lowercase hex digits: a library with another hash is
    /// refused at load.
    pub sha256: Option<String>,
    /// What the plugin may use (`grants:`); a plugin whose manifest asks for more fails to
    /// load. When set, the plugin receives them in its configuration under `"grants"`.
    /// `None` (no `grants:` key) grants nothing and leaves the configuration as written.
    pub grants: Option<Grants>,
    /// Where the plugin's entry is in the policy file.
    pub position: Option<Position>,
    /// The folder the policy's relative paths are resolved against: the policy file's (`.`,
    /// the working directory, for a policy that is not read from a file). The relative paths
    /// of the configuration at the keys the plugin's manifest names (`config_paths`, the fs
    /// plugin's `root`) are resolved against it when the plugin is loaded.
    pub base_dir: PathBuf,
}

impl PluginSpec {
    /// The default `max_threads`: twice the default policy's concurrency, so a turn still runs
    /// while a few calls that ignored their timeout finish.
    pub const DEFAULT_MAX_THREADS: usize = 16;

    /// The default `max_queued`: room for a turn of 16,000 calls to one plugin. A waiting call
    /// costs the queue about a hundred bytes (its task is the caller's in any case).
    pub const DEFAULT_MAX_QUEUED: usize = 16_384;

    /// A plugin at `location` with every other setting at its default.
    pub fn new(location: PluginLocation) -> Self {
        PluginSpec {
            location,
            config: serde_json::Value::Object(serde_json::Map::new()),
            searchable: false,
            max_threads: Self::DEFAULT_MAX_THREADS,
            max_queued: Self::DEFAULT_MAX_QUEUED,
            isolation: Isolation::InProcess,
            memory_limit: None,
            sha256: None,
            grants: None,
            position: None,
            base_dir: PathBuf::from("."),
        }
    }
}

/// Where a plugin runs (`isolation:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    inline,
    transform = values::string_enum,
    extend("x-expected" = "in_process or process")
)]
pub enum Isolation {
    /// `in_process`: loaded into the host; fastest, but a crash of the plugin is a crash of
    /// the host. For plugins you trust.
    #[default]
    InProcess,
    /// `process`: loaded by a worker process (`toolgate plugin-host`); a crash, a runaway
    /// allocation or an endless loop costs that worker (restarted) and the calls on it.
    Process,
}

/// What a plugin may use (`grants:`), the same keys as a manifest's `capabilities`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(
    inline,
    deny_unknown_fields,
    extend("x-expected" = "a mapping with fs_read, fs_write, env, net, subprocess")
)]
pub struct Grants {
    /// Files and directories the plugin may read; relative paths are resolved against the policy
    /// file's directory (one that would reach / is refused: write / to mean it).
    #[serde(deserialize_with = "values::paths")]
    #[schemars(with = "Vec<PathText>", extend("x-expected" = "a list of paths"))]
    pub fs_read: Vec<PathBuf>,
    /// Files and directories the plugin may write; relative paths are resolved against the policy
    /// file's directory.
    #[serde(deserialize_with = "values::paths")]
    #[schemars(with = "Vec<PathText>", extend("x-expected" = "a list of paths"))]
    pub fs_write: Vec<PathBuf>,
    /// Environment variables the plugin may read.
    #[schemars(with = "Vec<Name>", extend("x-expected" = "a list of variable names"))]
    pub env: Vec<String>,
    /// Network hosts the plugin may reach: host or host:port. Under isolation: process, a plugin
    /// granted none has no network at all (Linux).
    #[schemars(with = "Vec<Name>", extend("x-expected" = "a list of host or host:port"))]
    pub net: Vec<String>,
    /// Whether the plugin may start processes. Default false.
    #[schemars(with = "Flag")]
    pub subprocess: bool,
}

impl Grants {
    /// The grants as the plugin receives them, under `"grants"` in its configuration:
    /// `{"fs_read": [..], "fs_write": [..], "env": [..], "net": [..], "subprocess": false}`.
    pub fn to_json(&self) -> serde_json::Value {
        let paths = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|p| serde_json::Value::String(p.display().to_string()))
                .collect::<Vec<_>>()
        };
        serde_json::json!({
            "fs_read": paths(&self.fs_read),
            "fs_write": paths(&self.fs_write),
            "env": self.env,
            "net": self.net,
            "subprocess": self.subprocess,
        })
    }
}

/// A `memory_limit` in bytes: a whole number of `KiB`, `MiB` or `GiB` (`512MiB`), as the schema
/// allows; `None` for anything else.
///
/// ```
/// use toolgate_policy::parse_memory_limit;
/// assert_eq!(parse_memory_limit("512MiB"), Some(512 * 1024 * 1024));
/// assert_eq!(parse_memory_limit("2GiB"), Some(2 * 1024 * 1024 * 1024));
/// assert_eq!(parse_memory_limit("512"), None);
/// ```
pub fn parse_memory_limit(text: &str) -> Option<u64> {
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
    let unit = match unit {
        "KiB" => 1u64 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// Where to find a plugin library.
#[derive(Debug, Clone, PartialEq)]
pub enum PluginLocation {
    /// `path:` in the policy, resolved against the policy's directory.
    Path(PathBuf),
    /// `name:` in the policy: the engine looks for the platform's file name for
    /// `toolgate_plugin_<name>` (`libtoolgate_plugin_<name>.so` on Linux) in the directories of
    /// `TOOLGATE_PLUGIN_PATH`, then beside the running program and in its parent directory.
    Name(String),
}

/// Large-result reduction (R1-R9).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(
    inline,
    deny_unknown_fields,
    extend("x-expected" = "a mapping (write reduction: {} for every default)")
)]
pub struct ReductionSettings {
    /// Where results are stored, as a URL: `memory://`, `file:///absolute/dir`,
    /// `file://relative/dir` (resolved against the policy file's directory) or
    /// `s3://bucket/prefix`. Absent = a local folder chosen by the host program.
    #[serde(deserialize_with = "values::store_url")]
    #[schemars(
        with = "String",
        regex(pattern = "^(memory|file|s3|s3a)://"),
        extend(
            "x-expected" = "a store URL starting with memory://, file:// or s3:// (such as file:///var/lib/toolgate or s3://bucket/prefix)"
        )
    )]
    pub store: Option<String>,
    /// Options for the store builder, such as endpoint, region, `access_key_id`,
    /// `secret_access_key` for s3.
    #[schemars(with = "BTreeMap<String, StoreOption>")]
    pub store_options: BTreeMap<String, String>,
    /// A text result strictly larger than this many bytes is offloaded. Default 50000.
    #[schemars(with = "Size")]
    pub max_result_bytes: u64,
    /// Characters from the start of an offloaded result shown in its notice. Default 1000.
    #[schemars(with = "Size")]
    pub preview_head_chars: u64,
    /// Characters from the end of an offloaded result shown in its notice. Default 500.
    #[schemars(with = "Size")]
    pub preview_tail_chars: u64,
    /// When the estimated history reaches this many tokens, the tool results of older rounds are
    /// offloaded. Default 160000.
    #[schemars(with = "Size")]
    pub max_context_tokens: u64,
    /// The most recent tool rounds kept as they are when older rounds are offloaded. Default 1.
    #[schemars(with = "Size")]
    pub keep_recent_tool_rounds: u64,
    /// When rounds are offloaded, tool results under this many bytes are left in place. Default
    /// 1024.
    #[schemars(with = "Size")]
    pub min_offload_bytes: u64,
    /// Answer a read of another session's result with not found instead of access denied, so ids
    /// cannot be probed. Default false.
    #[schemars(with = "Flag")]
    pub hide_foreign_results: bool,
}

/// One store option's value.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(
    inline,
    extend(
        "x-key" = "option",
        "x-expected" = "a string (quote numbers and booleans)"
    )
)]
pub(crate) struct StoreOption(String);

impl Default for ReductionSettings {
    fn default() -> Self {
        ReductionSettings {
            store: None,
            store_options: BTreeMap::new(),
            max_result_bytes: 50_000,
            preview_head_chars: 1_000,
            preview_tail_chars: 500,
            max_context_tokens: 160_000,
            keep_recent_tool_rounds: 1,
            min_offload_bytes: 1_024,
            hide_foreign_results: false,
        }
    }
}

/// Tool search over a catalog (S1-S6).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(
    inline,
    deny_unknown_fields,
    extend("x-expected" = "a mapping (write search: {} for every default)")
)]
pub struct SearchSettings {
    /// JSONL catalog files, one `{"name", "description", "parameters"}` object per line; relative
    /// paths are resolved against the policy file's directory and must exist.
    #[serde(deserialize_with = "values::catalogs")]
    #[schemars(with = "Vec<PathText>")]
    pub catalogs: Vec<PathBuf>,
    /// Names or globs of plugin and native tools to move into the catalog.
    #[schemars(with = "Vec<values::GlobText>")]
    pub searchable_tools: Vec<Glob>,
    /// Extra search keywords per tool name.
    #[schemars(with = "BTreeMap<String, Keywords>")]
    pub keywords: BTreeMap<String, Vec<String>>,
    /// Allow calling a catalog tool the model has not found yet. Default false: such a call gets an
    /// error saying to search first.
    ///
    /// S4.
    #[schemars(with = "Flag")]
    pub allow_direct_calls: bool,
    /// Hand the catalog to the provider's own tool search instead of `tool_search`. Default false.
    ///
    /// S5.
    #[schemars(with = "Flag")]
    pub use_model_native: bool,
    /// A prebuilt index (`toolgate index build`), read into memory when the engine is built;
    /// relative to the policy file's directory. Absent = built in memory at start.
    #[serde(deserialize_with = "values::optional_path")]
    #[schemars(with = "PathText")]
    pub index_file: Option<PathBuf>,
    /// How many tools `tool_search` returns when the model gives no `max_results`. Default 5.
    #[schemars(
        with = "Count",
        range(min = 1, max = MAX_SAFE_INTEGER),
        extend("x-expected" = "a whole number from 1 to 9007199254740991")
    )]
    pub default_max_results: u64,
    /// `tool_search` says why each tool matched (a why list per tool). Default false: explaining
    /// costs more than the search.
    ///
    /// Models act on names and descriptions.
    #[schemars(with = "Flag")]
    pub explain: bool,
    /// The optional semantic search stage: a local embedding model (static, or a BERT sentence
    /// encoder) whose tool vectors are fused with the lexical ranking. Absent = lexical search
    /// only.
    pub embeddings: Option<EmbeddingsSettings>,
}

/// The extra keywords of this tool.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(inline, extend("x-key" = "tool"))]
struct Keywords(Vec<Keyword>);

// One search keyword.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(inline, extend("x-expected" = "a keyword string"))]
struct Keyword(String);

/// `search.embeddings`: the local embedding model of the semantic search stage. The model is
/// read from disk, never downloaded.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[schemars(
    inline,
    deny_unknown_fields,
    extend("x-expected" = "a mapping with model (a model directory)")
)]
pub struct EmbeddingsSettings {
    /// An embedding model directory: a static model, in model2vec's layout (`model.safetensors`
    /// with an `embeddings` tensor, `tokenizer.json`, `config.json`) or sentence-transformers'
    /// static embedding layout (`modules.json` naming a `StaticEmbedding` module), or a BERT
    /// sentence encoder in sentence-transformers' layout (`modules.json` naming a `Transformer`
    /// module, e.g. all-MiniLM-L6-v2: `config.json`, `model.safetensors`, `tokenizer.json`);
    /// its tokenizer a BERT WordPiece one. Relative to the policy file's directory. Read from
    /// disk, never downloaded.
    #[serde(deserialize_with = "values::path")]
    #[schemars(with = "PathText")]
    pub model: PathBuf,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            catalogs: Vec::new(),
            searchable_tools: Vec::new(),
            keywords: BTreeMap::new(),
            allow_direct_calls: false,
            use_model_native: false,
            index_file: None,
            default_max_results: 5,
            embeddings: None,
            explain: false,
        }
    }
}

/// An upstream MCP server (`mcp_servers:`): its tools join the registry as `<name>.<tool>` and
/// are governed like every other tool. The program that hosts the engine connects to it; the
/// policy only says how.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerSpec {
    /// Letters, digits, `_` and `-`: the first part of its tools' names (`time` gives
    /// `time.get_current_time`). Unique among the policy's servers.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Put its tools in the search catalog instead of always showing them.
    pub searchable: bool,
    /// How long starting it may take: spawning or connecting, the MCP handshake and the first
    /// tool list. `None` = no bound. Default [`McpServerSpec::DEFAULT_STARTUP_TIMEOUT`].
    pub startup_timeout: Option<Duration>,
    /// What the server may ask the client that made a call.
    pub client_requests: McpClientRequests,
    /// The pins file (`pins:`, resolved against the policy file's directory): the approved
    /// definitions of its tools, whose changed or new tools are held back. `None` = not pinned.
    pub pins: Option<PathBuf>,
    /// The protocol revision toolgate speaks to it.
    pub protocol: McpProtocol,
    /// Where the server's entry is in the policy file.
    pub position: Option<Position>,
}

/// The protocol revision toolgate speaks to an upstream MCP server (`mcp_servers[].protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[schemars(inline, transform = names_only)]
pub enum McpProtocol {
    /// The `initialize` handshake (2025 revisions, the newest the server agrees to); a server
    /// that has no handshake is spoken to with `server/discover` and 2026-07-28.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// `server/discover` and 2026-07-28 only.
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
}

impl McpServerSpec {
    /// The default `startup_timeout`: long enough for a server started through a package
    /// runner that installs it on first use.
    pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
}

/// How an upstream MCP server is reached. Every string but the server's name may take values
/// from environment variables (`${NAME}`, see [`EnvTemplate`]), filled in when the server is
/// started.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    /// `command:` a child process that speaks MCP on its standard input and output.
    Stdio {
        /// The program and its arguments. A program path that contains `/` and is relative
        /// has been resolved against the policy file's directory; a bare name is looked up in
        /// `PATH` when it starts.
        command: Vec<EnvTemplate>,
        /// Variables set for the child, on top of the environment it inherits.
        env: BTreeMap<String, EnvTemplate>,
        /// The child's working directory, resolved against the policy file's directory;
        /// `None` = the host program's.
        cwd: Option<PathBuf>,
    },
    /// `url:` a server speaking Streamable HTTP.
    Http {
        /// `http://` or `https://` URL of the MCP endpoint.
        url: EnvTemplate,
        /// Headers sent with every request (`Authorization: "Bearer ${TOKEN}"`).
        headers: BTreeMap<String, EnvTemplate>,
    },
}
