//! Typed errors. [`CallError`] is what one tool call can fail with; its [`CallError::kind`] is a
//! stable snake_case name that the command line prints and scripts see. [`BuildError`] is why an
//! engine could not be built from a policy. [`TurnError`] aborts a turn under `on_error: fail`.
//!
//! The workspace's one rule for causes: a cause is either in an error's message or in its
//! `source()`, never both. A typed cause is the `source()`, and `Display` says only what its
//! own layer knows; to show a person or the model the whole story, print the chain with
//! [`Chain`]. A message keeps its cause as text only where it must stand alone (a plugin's
//! error crosses the ABI as text; [`TurnError`] and [`CallError`] are messages for the model)
//! or where the cause repeats its own sources (`object_store`'s errors); then `source()`
//! returns none. The plugin loader's `LoadError` and the policy's `FileError` are still of the
//! second kind: their text says what is wrong with the file, cause included.

use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;
use toolgate_policy::format_duration;

pub use toolgate_policy::Hook;

/// Who denied a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeniedBy {
    /// A declarative `allow`/`deny` rule of the policy.
    Rule,
    /// The `before` script.
    Script,
    /// Tool search gating: the tool has not been found yet (S4).
    Search,
    /// The policy's `clients:` do not let the caller see it (C4).
    Client,
}

/// Why one tool call failed. Every message is written for the model: what failed and what to do.
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum CallError {
    /// The call ran past its timeout and was cancelled (G2).
    #[error("tool call timed out after {}", format_duration(Some(*.after)))]
    Timeout {
        /// The timeout.
        after: Duration,
    },

    /// A rule, the before script or search gating refused the call.
    #[error("tool call denied: {reason}")]
    Denied {
        /// Why, for the model.
        reason: String,
        /// Who refused it.
        by: DeniedBy,
    },

    /// No tool has the name the model called (D4).
    #[error("{message}")]
    UnknownTool {
        /// The name the model called.
        name: String,
        /// The closest names it may have meant.
        suggestions: Vec<String>,
        /// The whole answer, suggestions included.
        message: String,
    },

    /// The arguments are not a JSON object, or do not fit the tool.
    #[error("invalid arguments for {tool}: {reason}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What is wrong with them.
        reason: String,
    },

    /// The tool ran and failed.
    #[error("{tool} failed: {message}")]
    ToolFailed {
        /// The tool.
        tool: String,
        /// The tool's message.
        message: String,
    },

    /// The tool (or a layer) panicked (G6).
    #[error("tool execution panic in {tool}: {message}")]
    ToolExecutionPanic {
        /// The tool.
        tool: String,
        /// The panic's message.
        message: String,
    },

    /// A policy script failed (G6).
    #[error("tool policy panic in the {} script: {message}", hook_name(*.hook))]
    ToolPolicyPanic {
        /// The hook whose script failed.
        hook: Hook,
        /// Where and how.
        message: String,
    },

    /// The turn was cancelled.
    #[error("tool call cancelled")]
    Cancelled,

    /// No room to run the call now: the plugin's threads or the call's sequential group are
    /// held by calls that ignored their cancellation and still run.
    #[error("{tool} is overloaded: {message}")]
    Overloaded {
        /// The tool.
        tool: String,
        /// What is held, and what to do.
        message: String,
    },

    /// Not run: an earlier call of a sequential turn failed under `stop_on_error` (D7).
    #[error(
        "skipped: an earlier call of this turn ({failed_call_id}) failed and stop_on_error is set"
    )]
    Skipped {
        /// The call that failed.
        failed_call_id: String,
    },

    /// A rate limit, quota or concurrency limit of the policy (`limits:`) refused the call; it
    /// would pass after `retry_after` (L1, L2).
    #[error("rate limited: {message}; retry after {}", seconds(*.retry_after))]
    RateLimited {
        /// Which limit, for the model.
        message: String,
        /// When the call would pass.
        retry_after: Duration,
    },

    /// The store the rate limits are kept in (`limits.redis`) did not answer in time and the
    /// policy says `on_store_error: closed` (L4).
    #[error("limits unavailable: {message}; retry after {}", seconds(*.retry_after))]
    LimitsUnavailable {
        /// What failed.
        message: String,
        /// A hint for when to try again (the store's timeout, at least a second).
        retry_after: Duration,
    },

    /// The circuit breaker of the tool's source (an upstream MCP server, a plugin) is open
    /// after failures in a row (L6).
    #[error(
        "{source_name} is failing ({failures} failures in a row), so its calls are refused \
         for now; retry after {}",
        seconds(*.retry_after)
    )]
    CircuitOpen {
        /// The source whose breaker is open.
        source_name: String,
        /// The failures that opened it.
        failures: u32,
        /// When the breaker lets a trial call through.
        retry_after: Duration,
    },

    /// A failure with a stable kind of its own, such as the result store's `not_found`,
    /// `access_denied` or `store_error`.
    #[error("{tool}: {message}")]
    Store {
        /// The tool.
        tool: String,
        /// The stable snake_case kind.
        kind: &'static str,
        /// What failed.
        message: String,
    },
}

impl CallError {
    /// The stable snake_case kind: `timeout`, `denied`, `unknown_tool`, `invalid_arguments`,
    /// `tool_error`, `tool_execution_panic`, `tool_policy_panic`, `cancelled`, `overloaded`,
    /// `skipped`, `rate_limited`, `limits_unavailable`, `circuit_open`, and
    /// the result store's kinds (`not_found`, `access_denied`, `store_error`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::Timeout { .. } => "timeout",
            CallError::Denied { .. } => "denied",
            CallError::UnknownTool { .. } => "unknown_tool",
            CallError::InvalidArguments { .. } => "invalid_arguments",
            CallError::ToolFailed { .. } => "tool_error",
            CallError::ToolExecutionPanic { .. } => "tool_execution_panic",
            CallError::ToolPolicyPanic { .. } => "tool_policy_panic",
            CallError::Cancelled => "cancelled",
            CallError::Overloaded { .. } => "overloaded",
            CallError::Skipped { .. } => "skipped",
            CallError::RateLimited { .. } => "rate_limited",
            CallError::LimitsUnavailable { .. } => "limits_unavailable",
            CallError::CircuitOpen { .. } => "circuit_open",
            CallError::Store { kind, .. } => kind,
        }
    }

    /// When a refused call would pass (`rate_limited`, `limits_unavailable`, `circuit_open`):
    /// what `_meta.toolgate.retry_after_ms` and HTTP's `Retry-After` carry.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            CallError::RateLimited { retry_after, .. }
            | CallError::LimitsUnavailable { retry_after, .. }
            | CallError::CircuitOpen { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }

    /// The free text of the error (a tool's message, a reason), which the guard caps and
    /// offloads like a result (G3); `None` for errors whose text is short and fixed.
    pub(crate) fn text_mut(&mut self) -> Option<&mut String> {
        match self {
            CallError::Denied { reason, .. } | CallError::InvalidArguments { reason, .. } => {
                Some(reason)
            }
            CallError::UnknownTool { message, .. }
            | CallError::ToolFailed { message, .. }
            | CallError::ToolExecutionPanic { message, .. }
            | CallError::ToolPolicyPanic { message, .. }
            | CallError::Overloaded { message, .. }
            | CallError::Store { message, .. } => Some(message),
            CallError::Timeout { .. }
            | CallError::Cancelled
            | CallError::Skipped { .. }
            | CallError::RateLimited { .. }
            | CallError::LimitsUnavailable { .. }
            | CallError::CircuitOpen { .. } => None,
        }
    }
}

/// A wait as the model reads it: `2.3 s`, `0.05 s`, `1 s`.
pub(crate) fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 {
        format!("{} s", s.ceil() as u64)
    } else if s >= 0.1 {
        format!("{:.1} s", (s * 10.0).ceil() / 10.0)
    } else {
        format!("{:.2} s", ((s * 100.0).ceil() / 100.0).max(0.01))
    }
}

/// The most characters of a name (a tool name the model made up, say) that an error message
/// echoes; a longer name is cut and marked with `...`.
pub const ECHOED_NAME_CHARS: usize = 64;

/// `name` as an error message echoes it: at most [`ECHOED_NAME_CHARS`] characters, then
/// `...(N bytes)` when it was longer.
pub fn cut_name(name: &str) -> std::borrow::Cow<'_, str> {
    match name.char_indices().nth(ECHOED_NAME_CHARS) {
        None => std::borrow::Cow::Borrowed(name),
        Some((cut, _)) => {
            std::borrow::Cow::Owned(format!("{}...({} bytes)", &name[..cut], name.len()))
        }
    }
}

/// The name of a hook as written in the policy.
pub(crate) fn hook_name(hook: Hook) -> &'static str {
    match hook {
        Hook::Rewrite => "rewrite",
        Hook::Before => "before",
        Hook::After => "after",
        Hook::UnknownTool => "unknown_tool",
    }
}

/// Why an engine could not be built. Each variant names what is wrong and, where the policy
/// says it, the file position. Where another error is the cause, it is the [`source`]
/// (`std::error::Error::source`) and the message does not repeat it: print the whole chain with
/// [`Chain`].
///
/// [`source`]: std::error::Error::source
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The policy itself is wrong; shown as its diagnostics (transparent: `source()` does not
    /// repeat them).
    #[error(transparent)]
    Policy(#[from] toolgate_policy::PolicyError),

    /// A tool or alias name breaks the name rules (N1).
    #[error("{at}invalid tool name {name:?} ({source_desc}): {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// Where it came from.
        source_desc: String,
        /// Which rule it breaks.
        reason: String,
        /// The policy entry it comes from, if any.
        at: At,
    },

    /// Two sources offer a tool of the same name (N2).
    #[error("duplicate tool name {name:?}: provided by {first} and by {second}")]
    DuplicateName {
        /// The name.
        name: String,
        /// The source of the first tool.
        first: String,
        /// The source of the second tool.
        second: String,
    },

    /// Two tools whose names map to the same model-facing name under the name profile (N6).
    #[error(
        "{at}two tools have the model-facing name {model_name:?} under name_profile {profile}: {first} and {second}"
    )]
    NameCollision {
        /// The model-facing name both map to.
        model_name: String,
        /// The policy's name profile.
        profile: &'static str,
        /// The first tool and its source.
        first: String,
        /// The second tool and its source.
        second: String,
        /// The policy entry of the second tool's plugin, when it comes from one.
        at: At,
    },

    /// An alias that cannot be (N4).
    #[error("{at}{message}")]
    Alias {
        /// What is wrong.
        message: String,
        /// The policy entry.
        at: At,
    },

    /// A setting that makes no sense (N5).
    #[error("{at}{message}")]
    Setting {
        /// What is wrong.
        message: String,
        /// The policy entry, if known.
        at: At,
    },

    /// A policy script does not compile.
    #[error("{location}: the {} script does not compile", hook_name(*.hook))]
    Script {
        /// `file:line:col` of the problem.
        location: String,
        /// The hook the script is for.
        hook: Hook,
        /// What the script compiler said.
        source: ScriptSyntaxError,
    },

    /// A plugin that cannot be used.
    #[error("{at}plugin {path}")]
    Plugin {
        /// The library file (or, when none was found, the file name looked for).
        path: String,
        /// Why.
        source: Box<PluginError>,
        /// The policy entry.
        at: At,
    },

    /// The audit file (`audit.path`) cannot be opened for appending.
    #[error("audit: cannot open {} for appending", .path.display())]
    Audit {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },

    /// The store of `audit.sink: object_store` cannot be opened (or `audit.store` is missing).
    #[error("audit: cannot open the store {url:?}")]
    AuditStore {
        /// The store's URL as the policy gives it.
        url: String,
        /// Why (boxed: the URL beside it would make every build result large).
        source: Box<toolgate_store::StoreError>,
    },

    /// The spool folder of `audit.sink: object_store` (`audit.spool`) cannot be made or used.
    #[error("audit: cannot use the spool folder {}", .path.display())]
    AuditSpool {
        /// The folder.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },

    /// The thread that writes the audit batches (`audit.sink: object_store`) cannot start.
    #[error("audit: cannot start the batch writer")]
    AuditWriter {
        /// Why.
        source: std::io::Error,
    },

    /// A JSONL catalog of `search.catalogs` cannot be read.
    #[error("search: cannot read catalog")]
    CatalogFile {
        /// Why.
        source: toolgate_policy::FileError,
    },

    /// A JSONL catalog of `search.catalogs` does not parse.
    #[error("search")]
    Catalog {
        /// Where and why.
        source: toolgate_search::CatalogError,
    },

    /// The search index cannot be built.
    #[error("search: cannot build the index")]
    SearchIndex {
        /// Why.
        source: toolgate_search::IndexError,
    },

    /// The embedding model of `search.embeddings` cannot be loaded.
    #[cfg(feature = "semantic")]
    #[error("search.embeddings: cannot load the model {}", path.display())]
    EmbeddingModel {
        /// The model directory.
        path: std::path::PathBuf,
        /// Why.
        source: toolgate_search_semantic::SemanticError,
    },

    /// `search.embeddings` is set, but this build has no semantic search.
    #[cfg(not(feature = "semantic"))]
    #[error(
        "search.embeddings: this toolgate was built without the semantic feature (model {})",
        path.display()
    )]
    SemanticUnavailable {
        /// The model directory.
        path: std::path::PathBuf,
    },

    /// The result store of `reduction` cannot be opened.
    #[error("reduction: cannot open the result store")]
    Store {
        /// Why.
        source: toolgate_store::StoreError,
    },

    /// Several problems found in one pass (for example every plugin that does not load), one
    /// per line, in policy order, each with its causes.
    #[error("{}", .errors.iter().map(|e| Chain(e).to_string()).collect::<Vec<_>>().join("\n"))]
    Several {
        /// The problems.
        errors: Vec<BuildError>,
    },
}

impl BuildError {
    /// The error with `at` as its position when it is a name error of a tool without one (a
    /// plugin's tool, placed at its plugin's entry).
    pub(crate) fn at_entry(self, pos: Option<&toolgate_policy::Position>) -> Self {
        match self {
            BuildError::InvalidName {
                name,
                source_desc,
                reason,
                ..
            } => BuildError::InvalidName {
                name,
                source_desc,
                reason,
                at: At(pos.cloned()),
            },
            BuildError::NameCollision {
                model_name,
                profile,
                first,
                second,
                ..
            } => BuildError::NameCollision {
                model_name,
                profile,
                first,
                second,
                at: At(pos.cloned()),
            },
            other => other,
        }
    }
}

/// What the script compiler said about a script that does not compile, without the position
/// (the [`BuildError::Script`] gives it, in the policy file).
#[derive(Debug)]
pub struct ScriptSyntaxError(pub(crate) rhai::ParseError);

impl std::fmt::Display for ScriptSyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.err_type())
    }
}

impl std::error::Error for ScriptSyntaxError {}

/// Why a plugin named in the policy cannot be used.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PluginError {
    /// `name:` found no library.
    #[error(transparent)]
    NotFound(#[from] PluginNotFound),
    /// The library did not load.
    #[error(transparent)]
    Load(#[from] toolgate_plugin_api::LoadError),
    /// The library's SHA-256 is not the one the policy pins (`sha256:`).
    #[error(
        "its SHA-256 is {found}, but the policy pins sha256: {expected}; the library changed \
         since it was pinned: check it, then update the pin (toolgate plugin hash PATH)"
    )]
    HashMismatch {
        /// The policy's `sha256:`.
        expected: String,
        /// The library's.
        found: String,
    },
    /// The plugin's manifest asks for capabilities the policy does not grant.
    #[error(
        "plugin {plugin} asks for more than its grants allow; missing: {}; add them under the \
         plugin's grants: in the policy if you mean it to have them",
        .missing.join(", ")
    )]
    NotGranted {
        /// The plugin's name.
        plugin: String,
        /// What is missing, one item each (`fs_read /etc`, `env HOME`, `subprocess`).
        missing: Vec<String>,
    },
    /// `sha256:` on a plugin that is built into the program: a pin is a library file's hash.
    #[error(
        "plugin {plugin} is built into this toolgate program, and a built-in plugin cannot be \
         pinned: sha256: pins a library file. Install the plugin's library in a folder of \
         {PLUGIN_PATH_ENV} (or give it with path:) to pin it, or remove sha256:"
    )]
    BuiltinPinned {
        /// The plugin's name.
        plugin: String,
    },
    /// A relative path of the plugin's configuration (at a key its manifest lists in
    /// `config_paths`) would give it the whole filesystem.
    #[error(transparent)]
    ConfigPath(#[from] toolgate_plugin_api::ConfigPathError),
    /// The library could not be read to check its `sha256:`.
    #[error("cannot read {} to check its sha256", .path.display())]
    Unreadable {
        /// The library.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The pinned library's bytes could not be copied into the sealed memory they load from.
    #[error("cannot copy {} into sealed memory to load the bytes its sha256 checked", .path.display())]
    Sealing {
        /// The library.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Under `isolation: process`: the worker did not start, or did not load the library.
    #[error(transparent)]
    Worker(#[from] WorkerError),
}

/// Why a worker could not be started, or did not load its plugin.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// The program could not be run.
    #[error("cannot start the plugin worker {program}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The worker could not be talked to.
    #[error("the plugin worker {program} {what}")]
    Protocol {
        /// The program.
        program: PathBuf,
        /// What went wrong.
        what: String,
    },
    /// The worker could not load the library.
    #[error("{message}")]
    Load {
        /// The loader's message, from the worker.
        message: String,
    },
    /// The plugin's manifest asks for more than the policy grants; the worker did not start
    /// it.
    #[error("plugin {plugin} asks for more than its grants allow; missing: {}", .missing.join(", "))]
    NotGranted {
        /// The plugin's name.
        plugin: String,
        /// What is missing.
        missing: Vec<String>,
    },
}

/// A plugin given by `name:` whose library is in none of the directories searched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginNotFound {
    /// The `name:` of the policy.
    pub name: String,
    /// The library file looked for.
    pub file: String,
    /// The directories searched, in order.
    pub dirs: Vec<PathBuf>,
    /// The installed plugins named most like it (its `name:` and library), closest first.
    pub nearest: Vec<(String, PathBuf)>,
    /// Every plugin installed in those directories, by `name:`.
    pub installed: Vec<String>,
}

impl std::fmt::Display for PluginNotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let PluginNotFound {
            name,
            file,
            dirs,
            nearest,
            installed,
        } = self;
        let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        write!(
            f,
            "plugin {name:?} not found: no file {file} in {}",
            if shown.is_empty() {
                "any directory (none to search)".to_string()
            } else {
                shown.join(", ")
            }
        )?;
        if !nearest.is_empty() {
            let offers: Vec<String> = nearest
                .iter()
                .map(|(plugin, path)| format!("`name: {plugin}` ({})", path.display()))
                .collect();
            write!(f, "; did you mean {}?", offers.join(" or "))?;
        } else if installed.is_empty() {
            f.write_str("; there is no plugin library in those directories")?;
        } else {
            write!(f, "; the plugins there are {}", installed.join(", "))?;
        }
        f.write_str(if nearest.is_empty() {
            ". Put "
        } else {
            " Otherwise put "
        })?;
        write!(
            f,
            "{file} in one of them, add its directory to {PLUGIN_PATH_ENV}, or give the library \
             file with `path:`"
        )
    }
}

impl std::error::Error for PluginNotFound {}

/// Environment variable with extra directories to look for plugins named by `name:`.
pub const PLUGIN_PATH_ENV: &str = "TOOLGATE_PLUGIN_PATH";

/// An error and its causes on one line, `error: cause: cause`, for printing.
///
/// Every error of the workspace keeps its cause in `source()` and out of its own message
/// (`Display` says only what its layer knows), so this is how a person or the model sees the
/// whole story. An error whose message is empty (a wrapper that adds nothing) adds no `: `.
///
/// ```
/// use toolgate::error::Chain;
///
/// let err = std::io::Error::other("disk full");
/// assert_eq!(Chain(&err).to_string(), "disk full");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut wrote = false;
        let mut next = Some(self.0);
        while let Some(e) = next {
            let text = e.to_string();
            if !text.is_empty() {
                if wrote {
                    f.write_str(": ")?;
                }
                f.write_str(&text)?;
                wrote = true;
            }
            next = e.source();
        }
        Ok(())
    }
}

/// An optional `file:line:col: ` prefix for build errors that come from a policy position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct At(pub Option<toolgate_policy::Position>);

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(p) => write!(f, "{p}: "),
            None => Ok(()),
        }
    }
}

impl From<Option<toolgate_policy::Position>> for At {
    fn from(p: Option<toolgate_policy::Position>) -> Self {
        At(p)
    }
}

/// A turn aborted under `on_error: fail` (D6): which call failed and how.
#[derive(Debug, Clone, Error, PartialEq)]
#[error("tool call {call_id} ({tool}) failed: {error}")]
pub struct TurnError {
    /// The call that failed.
    pub call_id: String,
    /// Its real tool name.
    pub tool: String,
    /// How it failed.
    pub error: CallError,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with an optional cause, whose message is given.
    #[derive(Debug)]
    struct Layered(&'static str, Option<Box<Layered>>);

    impl std::fmt::Display for Layered {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layered {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn chain_writes_an_error_and_each_cause_after_a_colon() {
        let e = Layered(
            "cannot build",
            Some(Box::new(Layered(
                "cannot read x.jsonl",
                Some(Box::new(Layered("no such file", None))),
            ))),
        );
        assert_eq!(
            Chain(&e).to_string(),
            "cannot build: cannot read x.jsonl: no such file"
        );
    }
}
