//! Typed errors. [`CallError`] is what one tool call can fail with; its [`CallError::kind`] is a
//! stable snake_case name that the command line prints and scripts see. [`BuildError`] is why an
//! engine could not be built from a policy. [`TurnError`] aborts a turn under `on_error: fail`.

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
}

/// Why one tool call failed. Every message is written for the model: what failed and what to do.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum CallError {
    #[error("tool call timed out after {}", format_duration(Some(*.after)))]
    Timeout { after: Duration },

    #[error("tool call denied: {reason}")]
    Denied { reason: String, by: DeniedBy },

    #[error("{message}")]
    UnknownTool {
        name: String,
        suggestions: Vec<String>,
        message: String,
    },

    #[error("invalid arguments for {tool}: {reason}")]
    InvalidArguments { tool: String, reason: String },

    #[error("{tool} failed: {message}")]
    ToolFailed { tool: String, message: String },

    #[error("tool execution panic in {tool}: {message}")]
    ToolExecutionPanic { tool: String, message: String },

    #[error("tool policy panic in the {} script: {message}", hook_name(*.hook))]
    ToolPolicyPanic { hook: Hook, message: String },

    #[error("tool call cancelled")]
    Cancelled,

    /// No room to run the call now: the plugin's threads or the call's sequential group are
    /// held by calls that ignored their cancellation and still run.
    #[error("{tool} is overloaded: {message}")]
    Overloaded { tool: String, message: String },

    #[error(
        "skipped: an earlier call of this turn ({failed_call_id}) failed and stop_on_error is set"
    )]
    Skipped { failed_call_id: String },

    /// A failure with a stable kind of its own, such as the result store's `not_found`,
    /// `access_denied` or `store_error`.
    #[error("{tool}: {message}")]
    Store {
        tool: String,
        kind: &'static str,
        message: String,
    },
}

impl CallError {
    /// The stable snake_case kind: `timeout`, `denied`, `unknown_tool`, `invalid_arguments`,
    /// `tool_error`, `tool_execution_panic`, `tool_policy_panic`, `cancelled`, `overloaded`,
    /// `skipped`, and
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
            CallError::Store { kind, .. } => kind,
        }
    }

    /// The free text of the error (a tool's message, a reason), which the guard caps and
    /// offloads like a result (G3); `None` for errors whose text is short and fixed.
    pub fn text_mut(&mut self) -> Option<&mut String> {
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
            CallError::Timeout { .. } | CallError::Cancelled | CallError::Skipped { .. } => None,
        }
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
pub fn hook_name(hook: Hook) -> &'static str {
    match hook {
        Hook::Rewrite => "rewrite",
        Hook::Before => "before",
        Hook::After => "after",
        Hook::UnknownTool => "unknown_tool",
    }
}

/// Why an engine could not be built. Each variant names what is wrong and, where the policy
/// says it, the file position.
#[derive(Debug, Error)]
pub enum BuildError {
    /// The policy itself is wrong; shown as its diagnostics (transparent: `source()` does not
    /// repeat them).
    #[error(transparent)]
    Policy(#[from] toolgate_policy::PolicyError),

    #[error("{at}invalid tool name {name:?} ({source_desc}): {reason}")]
    InvalidName {
        name: String,
        source_desc: String,
        reason: String,
        at: At,
    },

    #[error("duplicate tool name {name:?}: provided by {first} and by {second}")]
    DuplicateName {
        name: String,
        first: String,
        second: String,
    },

    /// Two tools whose names map to the same model-facing name under the name profile (N6).
    #[error(
        "{at}two tools have the model-facing name {model_name:?} under name_profile {profile}: {first} and {second}"
    )]
    NameCollision {
        model_name: String,
        profile: &'static str,
        first: String,
        second: String,
        /// The policy entry of the second tool's plugin, when it comes from one.
        at: At,
    },

    #[error("{at}{message}")]
    Alias { message: String, at: At },

    #[error("{at}{message}")]
    Setting { message: String, at: At },

    #[error("{message}")]
    Script { message: String },

    #[error("{at}plugin {path}: {message}")]
    Plugin {
        path: String,
        message: String,
        at: At,
    },

    #[error("{message}")]
    Other { message: String },

    /// Several problems found in one pass (for example every plugin that does not load), one
    /// per line, in policy order.
    #[error("{}", .errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Several { errors: Vec<BuildError> },
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
    pub call_id: String,
    pub tool: String,
    pub error: CallError,
}
