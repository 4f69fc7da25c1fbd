//! The typed policy: what a policy file means once it has been parsed and validated.
//!
//! These types are plain data. They are produced by [`crate::load_file`] (YAML file, JSON Schema
//! check, semantic checks) and consumed by the engine, which never reads the file itself.
//! A Rust user may also build a [`Policy`] in code, starting from [`Policy::default`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::env_template::EnvTemplate;
use crate::glob::{Glob, PathGlob};

/// A place in a policy file, 1-based, for error messages that point at the line and column.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Position {
    /// The policy file, as given to the loader.
    pub file: PathBuf,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// The whole policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The file the policy came from (`None` when built in code); relative paths in the policy
    /// (scripts, plugins, catalogs, the local store) are resolved against its directory.
    pub source: Option<PathBuf>,
    /// Format version; only `1` exists.
    pub version: u32,
    /// How real tool names map to the names the model sees and calls, for a provider's
    /// tool-name rules (N6).
    pub name_profile: NameProfile,
    /// Dispatch defaults for every tool.
    pub dispatch: DispatchSettings,
    /// Per-tool overrides, in file order. They merge field by field, each setting from the most
    /// specific match that sets it; the rules of every match apply (G8).
    pub tools: Vec<ToolOverride>,
    /// Tool-name and argument-name aliases, keyed by the real tool name.
    pub aliases: BTreeMap<String, AliasSpec>,
    /// Declarative allow/deny rules, checked on the final arguments: after aliases and the
    /// rewrite script, before the before hook (G1).
    pub rules: Rules,
    /// Rhai scripts, one per hook.
    pub scripts: Scripts,
    /// Plugins to load, in order.
    pub plugins: Vec<PluginSpec>,
    /// Large-result reduction (issue 3); `None` = off.
    pub reduction: Option<ReductionSettings>,
    /// Tool search over a catalog (issue 4); `None` = off.
    pub search: Option<SearchSettings>,
    /// Upstream MCP servers whose tools join the registry as `<name>.<tool>`, in order.
    pub mcp_servers: Vec<McpServerSpec>,
    /// How long session state (the catalog tools a session found) is kept by hosts that keep
    /// it in a store (`toolgate call --session`, `toolgate serve`).
    pub sessions: SessionSettings,
    /// How `toolgate serve` answers MCP clients.
    pub serve: ServeSettings,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            source: None,
            version: 1,
            name_profile: NameProfile::Mcp,
            dispatch: DispatchSettings::default(),
            tools: Vec::new(),
            aliases: BTreeMap::new(),
            rules: Rules::default(),
            scripts: Scripts::default(),
            plugins: Vec::new(),
            reduction: None,
            search: None,
            mcp_servers: Vec::new(),
            sessions: SessionSettings::default(),
            serve: ServeSettings::default(),
        }
    }
}

/// N6: which provider's name rules the model-facing names follow. Every real name obeys N1
/// (1-128 bytes of `[A-Za-z0-9_.-]`); the profile maps it to the name the model sees and calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NameProfile {
    /// The real name itself.
    #[default]
    Mcp,
    /// `.` becomes `_`; a name still over 64 bytes keeps 55 bytes, then `_` and 8 hex digits
    /// of a stable hash of the real name.
    Openai,
    /// `.` becomes `_`.
    Anthropic,
}

/// What a failed call does to its turn (D6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// The failure becomes that call's tool message, marked as an error.
    #[default]
    Model,
    /// The turn aborts with the typed error.
    Fail,
}

/// Dispatch defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchSettings {
    /// Run a turn's calls one by one, in order (D1).
    pub sequential: bool,
    /// At most this many calls of one turn at once (`None` = no cap).
    pub concurrency: Option<usize>,
    /// Per-call timeout (`None` = no timeout). Default 60 s.
    pub timeout: Option<Duration>,
    /// Cap on text results in Unicode characters (`-1` in a policy file is
    /// [`CharCap::Unlimited`]). Default 100,000 (G3).
    pub max_result_chars: CharCap,
    /// What a failed call does to its turn (D6). Default [`OnError::Model`].
    pub on_error: OnError,
    /// Sequential mode only: skip the calls after a failure (D7).
    pub stop_on_error: bool,
    /// Wall-clock bound of each policy script run (rewrite, before, after, unknown_tool), also
    /// when the call has no timeout. Default 1 s.
    pub script_timeout: Duration,
}

impl Default for DispatchSettings {
    fn default() -> Self {
        DispatchSettings {
            sequential: false,
            concurrency: None,
            timeout: Some(Duration::from_secs(60)),
            max_result_chars: CharCap::Chars(100_000),
            on_error: OnError::Model,
            stop_on_error: false,
            script_timeout: Duration::from_secs(1),
        }
    }
}

/// A cap on the Unicode characters of a text result (G3). A policy file writes
/// [`CharCap::Unlimited`] as `-1` and [`CharCap::Chars`] as the number; `Display` prints
/// `unlimited` or the number, and serde writes it as the policy file does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CharCap {
    /// No cap.
    Unlimited,
    /// At most this many characters.
    Chars(u64),
}

impl CharCap {
    /// The most characters allowed, or `None` for no cap.
    ///
    /// ```
    /// use toolgate_policy::CharCap;
    ///
    /// assert_eq!(CharCap::Chars(10).limit(), Some(10));
    /// assert_eq!(CharCap::Unlimited.limit(), None);
    /// ```
    pub fn limit(self) -> Option<u64> {
        match self {
            CharCap::Unlimited => None,
            CharCap::Chars(n) => Some(n),
        }
    }
}

impl std::fmt::Display for CharCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CharCap::Unlimited => f.write_str("unlimited"),
            CharCap::Chars(n) => write!(f, "{n}"),
        }
    }
}

/// As the policy file writes it: `-1` or the number.
impl serde::Serialize for CharCap {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CharCap::Unlimited => serializer.serialize_i64(-1),
            CharCap::Chars(n) => serializer.serialize_u64(*n),
        }
    }
}

/// Per-tool settings, matched by exact name or glob (`fs.*`, `*_search`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOverride {
    /// Exact tool name or glob pattern (`*`, `?`, `[abc]`); when several match a tool,
    /// [`Glob::specificity`] orders them.
    pub pattern: Glob,
    /// `Some(None)` = explicitly no timeout; `None` = inherit.
    pub timeout: Option<Option<Duration>>,
    /// Result cap for the matched tools; `None` = inherit.
    pub max_result_chars: Option<CharCap>,
    /// Calls in the same group never run at the same time, even in parallel mode.
    pub sequential_group: Option<String>,
    /// Rules that apply to the matched tools only (their `tools` list is implied).
    pub rules: Rules,
    /// Where the override's key is in the policy file.
    pub position: Option<Position>,
}

/// Aliases for one real tool.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AliasSpec {
    /// Other names the model may use for the tool.
    pub names: Vec<String>,
    /// Real argument name -> names the model may use instead.
    pub arguments: BTreeMap<String, Vec<String>>,
    /// Where the real tool's key is in the policy file.
    pub position: Option<Position>,
}

/// Allow and deny rules. A call is denied when any deny rule matches; otherwise, when there is
/// at least one allow rule, it must match one of them. Deny wins.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rules {
    /// When non-empty, a call must match one of these.
    pub allow: Vec<Rule>,
    /// A call matching any of these is denied.
    pub deny: Vec<Rule>,
}

impl Rules {
    /// Whether there are no rules at all (every call passes).
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }
}

/// One declarative rule. Every condition given must hold for the rule to match.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rule {
    /// Real tool names or globs; empty = every tool (or the override's tools).
    pub tools: Vec<Glob>,
    /// Top-level argument name -> glob that the argument's value (a string, or a number or
    /// boolean in its JSON text) must match. A missing argument does not match.
    pub args: BTreeMap<String, Glob>,
    /// Top-level argument name -> path glob that the argument, read as a path relative to the
    /// tool's root and normalised (`.`, `..`, repeated and trailing slashes resolved), must
    /// match. See [`crate::glob::PathGlob`] and [`crate::glob::normalize_path`]. A path that
    /// cannot be normalised (absolute, climbing above the root, holding a NUL byte, not a
    /// string) makes the call denied whenever a rule with such a condition applies to it.
    pub paths: BTreeMap<String, PathGlob>,
    /// Session ids or globs; empty = any session.
    pub sessions: Vec<Glob>,
    /// Told to the model when a deny rule matches.
    pub reason: Option<String>,
    /// Where the rule is in the policy file.
    pub position: Option<Position>,
}

/// Which hook a script serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hook {
    /// Rewrites the arguments (D2-D3).
    Rewrite,
    /// Authorises a call (G1).
    Before,
    /// Audits a call after it finished (G7).
    After,
    /// Answers a call to an unknown tool (D4).
    UnknownTool,
}

/// The scripts, at most one per hook.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scripts {
    /// See [`Hook::Rewrite`].
    pub rewrite: Option<ScriptSource>,
    /// See [`Hook::Before`].
    pub before: Option<ScriptSource>,
    /// See [`Hook::After`].
    pub after: Option<ScriptSource>,
    /// See [`Hook::UnknownTool`].
    pub unknown_tool: Option<ScriptSource>,
}

/// A script's text and where it came from, so compile errors point into the right file.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptSource {
    /// The Rhai code.
    pub code: String,
    /// The file holding the code (the policy for inline scripts, else the `.rhai` file).
    pub file: PathBuf,
    /// 1-based line in `file` where `code`'s first line is (1 for a `.rhai` file).
    pub line_offset: u32,
    /// Characters before the code on each of its lines in `file`: the indentation of an inline
    /// block script, the position after the key (and quote) of a one-line inline script, 0 for
    /// a `.rhai` file. A script's column plus this is the column in `file`.
    pub column_offset: u32,
}

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
        }
    }
}

/// Where a plugin runs (`isolation:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grants {
    /// Directories (and files) it may read, resolved against the policy's directory.
    pub fs_read: Vec<PathBuf>,
    /// Directories (and files) it may write, resolved against the policy's directory.
    pub fs_write: Vec<PathBuf>,
    /// Environment variables it may read.
    pub env: Vec<String>,
    /// Network hosts it may reach: `host` or `host:port`.
    pub net: Vec<String>,
    /// Whether it may start processes.
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
#[derive(Debug, Clone, PartialEq)]
pub struct ReductionSettings {
    /// Store URL: `memory://`, `file:///path`, `s3://bucket/prefix`. `None` = the default
    /// local folder chosen by the host program.
    pub store: Option<String>,
    /// S3 options (endpoint, region, credentials...), passed to the store builder.
    pub store_options: BTreeMap<String, String>,
    /// Results strictly larger than this many bytes are offloaded. Default 50,000.
    pub max_result_bytes: u64,
    /// Characters of the start of an offloaded result shown in its notice. Default 1,000.
    pub preview_head_chars: u64,
    /// Characters of the end of an offloaded result shown in its notice. Default 500.
    pub preview_tail_chars: u64,
    /// Offload older tool rounds once the history reaches this estimate. Default 160,000.
    pub max_context_tokens: u64,
    /// Rounds kept as they are. Default 1.
    pub keep_recent_tool_rounds: u64,
    /// Tool results under this many bytes are left in place when rounds are offloaded.
    pub min_offload_bytes: u64,
    /// Answer a read of another session's result with "not found" instead of "access denied".
    pub hide_foreign_results: bool,
}

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
#[derive(Debug, Clone, PartialEq)]
pub struct SearchSettings {
    /// JSONL catalogs (`{"name","description","parameters"}` per line), resolved paths.
    pub catalogs: Vec<PathBuf>,
    /// Tool names or globs of plugin/native tools to move into the catalog.
    pub searchable_tools: Vec<Glob>,
    /// Extra search keywords per tool name.
    pub keywords: BTreeMap<String, Vec<String>>,
    /// Allow calling a catalog tool that has not been found yet (S4).
    pub allow_direct_calls: bool,
    /// Hand the catalog to the provider's native search (S5).
    pub use_model_native: bool,
    /// A prebuilt index file (`toolgate index build`), memory-mapped at start.
    pub index_file: Option<PathBuf>,
    /// Default `max_results` of `tool_search`. Default 5.
    pub default_max_results: u64,
    /// `tool_search` says why each tool matched (a `why` list per tool). Default false:
    /// explaining costs more than the search, and models act on names and descriptions.
    pub explain: bool,
    /// The optional semantic stage: a local static embedding model fused with the lexical
    /// ranking. Absent = lexical search only.
    pub embeddings: Option<EmbeddingsSettings>,
}

/// `search.embeddings`: the local embedding model of the semantic search stage. The model is
/// read from disk, never downloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingsSettings {
    /// The model directory (model2vec layout: `model.safetensors`, `tokenizer.json`), resolved
    /// against the policy file's directory.
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
    /// The protocol revision toolgate speaks to it.
    pub protocol: McpProtocol,
    /// Where the server's entry is in the policy file.
    pub position: Option<Position>,
}

/// The protocol revision toolgate speaks to an upstream MCP server (`mcp_servers[].protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum McpProtocol {
    /// The `initialize` handshake (2025 revisions, the newest the server agrees to); a server
    /// that has no handshake is spoken to with `server/discover` and 2026-07-28.
    #[default]
    Auto,
    /// `server/discover` and 2026-07-28 only.
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

/// Session state kept in a store (issue 12): the catalog tools a session found, shared by every
/// process that uses the same store.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSettings {
    /// A session's state expires this long after its last change; `None` = never. Default 24h.
    pub ttl: Option<Duration>,
}

/// How `toolgate serve` answers MCP clients (issue 26).
#[derive(Debug, Clone, PartialEq)]
pub struct ServeSettings {
    /// The most items one page of a list holds. Default [`ServeSettings::DEFAULT_PAGE_SIZE`].
    pub page_size: std::num::NonZeroUsize,
}

impl ServeSettings {
    /// The default page size.
    pub const DEFAULT_PAGE_SIZE: std::num::NonZeroUsize = match std::num::NonZeroUsize::new(100) {
        Some(n) => n,
        None => unreachable!(),
    };
}

impl Default for ServeSettings {
    fn default() -> Self {
        ServeSettings {
            page_size: Self::DEFAULT_PAGE_SIZE,
        }
    }
}

/// The default [`SessionSettings::ttl`].
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(24 * 60 * 60);

impl Default for SessionSettings {
    fn default() -> Self {
        SessionSettings {
            ttl: Some(DEFAULT_SESSION_TTL),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_char_cap_serialises_as_the_policy_file_writes_it() {
        assert_eq!(
            serde_json::to_value(CharCap::Unlimited).ok(),
            Some(serde_json::json!(-1))
        );
        assert_eq!(
            serde_json::to_value(CharCap::Chars(20_000)).ok(),
            Some(serde_json::json!(20_000))
        );
    }

    #[test]
    fn a_char_cap_displays_as_a_number_or_unlimited() {
        assert_eq!(CharCap::Unlimited.to_string(), "unlimited");
        assert_eq!(CharCap::Chars(7).to_string(), "7");
    }
}
