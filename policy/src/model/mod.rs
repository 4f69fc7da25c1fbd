//! The typed policy: what a policy file means once it has been parsed and validated, and the
//! one definition of the file's keys.
//!
//! These types are plain data, produced by [`crate::load_file`] and consumed by the engine,
//! which never reads the file itself. A Rust user may also build a [`Policy`] in code,
//! starting from [`Policy::default`].
//!
//! Each key of the policy file is a field of these types: `serde` reads the field from the file (through
//! `shape::de`, which knows where every value is), `schemars` writes it into the generated
//! JSON Schema, and the first paragraph of its doc comment is its description there (later
//! paragraphs are for Rust readers only). A field takes its value kind (a duration, a path
//! resolved against the policy's directory, a count with bounds) with the attributes of
//! `shape/values.rs`; see `shape/mod.rs` for the recipe. The sections whose typed form is not
//! the file's (`plugins`, `mcp_servers` and `scripts`) have their keys in `shape/`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::shape::de;
use crate::shape::values::{self, Version, names_only};

mod access;
mod audit;
mod auth;
mod calls;
mod client_requests;
mod extensions;
mod limits;
mod redact;
mod serve;

pub use access::*;
pub use audit::*;
pub use auth::*;
pub use calls::*;
pub use client_requests::*;
pub use extensions::*;
pub use limits::*;
pub use redact::*;
pub use serve::*;

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

/// Where the entry being read starts in the policy file: the `position` of rules, aliases,
/// overrides, plugins and servers (`#[serde(skip_deserializing, default = "here")]`).
pub(crate) fn here() -> Option<Position> {
    de::here().map(|(file, at)| Position {
        file,
        line: at.line,
        column: at.column,
    })
}

/// A toolgate policy: how the tools an LLM agent calls are dispatched, guarded, limited,
/// reduced and searched. Reference: docs/policy.md.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(
    deny_unknown_fields,
    title = "toolgate policy",
    extend(
        "$id" = "https://example.invalid/toolgate/policy.schema.json",
        "required" = ["version"],
        "x-expected" = "a mapping of policy sections (version, dispatch, tools, ...)"
    )
)]
pub struct Policy {
    /// The file the policy came from (`None` when built in code); relative paths in the policy
    /// (scripts, plugins, catalogs, the local store) are resolved against its directory.
    #[serde(skip)]
    pub source: Option<PathBuf>,
    /// Format version of the policy file. Only 1 exists.
    #[schemars(with = "Version")]
    pub version: u32,
    /// How tool names (1-128 bytes of `[A-Za-z0-9_.-]`) map to the names the model sees and
    /// calls, for a provider's rules: mcp (unchanged), openai ('.' becomes '_'; a name over 64
    /// bytes is shortened to 64 with a stable hash suffix), anthropic ('.' becomes '_'). Two tools
    /// that map to one name fail the build. The policy itself keeps using the real names. Default
    /// mcp. Also the provider tool messages are shaped for: under openai they have no name and
    /// only text (images go to a user message after them).
    ///
    /// N6.
    pub name_profile: NameProfile,
    /// Defaults for how the calls of one assistant turn run. Every key is optional.
    pub dispatch: DispatchSettings,
    /// Per-tool overrides. Each key is an exact tool name or a glob (`fs.*`, `*_search`); when
    /// several match a tool, they merge field by field: each setting comes from the most specific
    /// key that sets it (an exact name beats a glob, a glob with more literal characters beats
    /// one with fewer), while the rules of every matching key apply.
    ///
    /// In file order (G8).
    #[serde(deserialize_with = "values::map_values")]
    #[schemars(with = "BTreeMap<String, ToolOverride>")]
    pub tools: Vec<ToolOverride>,
    /// Other names the model may use for a tool and its arguments. Each key is the real tool name.
    pub aliases: BTreeMap<String, AliasSpec>,
    /// Declarative allow and deny rules, checked on the final arguments (after aliases and the
    /// rewrite script, before the before hook); built-in tools only meet rules naming them exactly,
    /// unknown names get the unknown-tool answer. A call is denied when any deny rule matches;
    /// otherwise, when there is at least one allow rule, it must match one of them.
    ///
    /// G1.
    pub rules: Rules,
    /// Rhai scripts, at most one per hook. Each is inline (code) or in a file (file, relative to
    /// the policy file).
    pub scripts: Scripts,
    /// Plugin libraries to load, in order.
    pub plugins: Vec<PluginSpec>,
    /// Large-result reduction: big results are stored whole and the model sees a preview and an id
    /// it can page through with `read_tool_result`. Absent = off; `reduction: {}` = on with every
    /// default.
    pub reduction: Option<ReductionSettings>,
    /// Tool search: catalog tools are hidden until the model finds them with `tool_search`. Absent
    /// = off; `search: {}` = on with every default.
    pub search: Option<SearchSettings>,
    /// Upstream MCP servers whose tools join the registry as `<name>.<tool>` and are governed like
    /// every tool (aliases, rules, hooks, timeouts, caps, offload, search).
    pub mcp_servers: Vec<McpServerSpec>,
    /// Session state (the catalog tools a session found with `tool_search`) as hosts that keep it
    /// in a store see it: `toolgate call/run/tools --session` and `toolgate serve` keep it beside
    /// the results (`reduction.store`, else the local results folder), so later runs and other
    /// serve instances on the same store share it. Every key is optional.
    pub sessions: SessionSettings,
    /// Secret masking: secrets in results (built-in shapes of API keys, tokens and private
    /// keys, plus the policy's own regular expressions) are replaced by `[REDACTED:name]` before
    /// the model sees them, also in offloaded results and their previews; each call's count is
    /// in its events. Absent = off; `redact: {}` = on with the built-in patterns.
    pub redact: Option<RedactSettings>,
    /// The audit log: one JSON line per call (its session, tool, arguments' digest, what the
    /// rules and the before hook decided, outcome, durations, result size) to a file rotated by
    /// size, stdout or stderr. Absent = off; `audit: {}` = on, to audit.jsonl beside the policy.
    pub audit: Option<AuditSettings>,
    /// Rate limits and quotas per principal, per tool and per principal and tool, concurrency
    /// per principal with fair queuing across principals and sessions, shared across replicas
    /// through Redis when configured. Absent = no limits.
    pub limits: Option<LimitsSettings>,
    /// Retries with backoff and jitter for idempotent tools (the policy's list, or the tool's
    /// idempotentHint annotation), within the call's timeout. Absent = no retries; `retries: {}`
    /// = on with every default.
    pub retries: Option<RetrySettings>,
    /// A circuit breaker per upstream MCP server and per plugin: opens after failures in a row,
    /// refuses calls at once while open, half-opens after a cool-down. Absent = no breakers;
    /// `circuit_breaker: {}` = on with every default.
    pub circuit_breaker: Option<BreakerSettings>,
    /// The resources of the upstream MCP servers, as toolgate serve offers them: a read is
    /// governed like a tool call (rules naming resources, hooks with kind = "resource", the
    /// dispatch timeout and cap, offload). Every key is optional.
    pub resources: AccessSettings,
    /// The prompts of the upstream MCP servers, named `<server>.<prompt>`, as toolgate serve offers
    /// them: a get is governed like a tool call (rules naming prompts, hooks with kind =
    /// "prompt", the dispatch timeout and cap, offload). Every key is optional.
    pub prompts: AccessSettings,
    /// How `toolgate serve` answers MCP clients. Every key is optional.
    pub serve: ServeSettings,
    /// How toolgate serve --http authenticates its clients: API keys (stored as their SHA-256)
    /// and JWT bearer tokens, and the RFC 9728 metadata that points OAuth clients at their
    /// authorization server. With any key or token configured, every HTTP request must carry
    /// one. Guide: docs/team.md.
    pub auth: AuthSettings,
    /// What each principal sees: a list of entries, each naming principals or groups and the
    /// tools, resources and prompts they may see and call. Absent = every caller sees
    /// everything; present = an authenticated caller sees only what an entry that matches it
    /// lists (the local caller of stdio and the CLI is not filtered).
    pub clients: Option<Vec<ClientSpec>>,
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
            redact: None,
            audit: None,
            limits: None,
            retries: None,
            circuit_breaker: None,
            resources: AccessSettings::default(),
            prompts: AccessSettings::default(),
            serve: ServeSettings::default(),
            auth: AuthSettings::default(),
            clients: None,
        }
    }
}

/// N6: which provider's name rules the model-facing names follow. Every real name obeys N1
/// (1-128 bytes of `[A-Za-z0-9_.-]`); the profile maps it to the name the model sees and calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = names_only)]
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
