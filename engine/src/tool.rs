//! What a tool is: its [`ToolSpec`], the [`Tool`] trait every source implements (plugins,
//! Rust closures, built-ins), the [`ToolContext`] a call receives and the [`ToolOutput`] it
//! returns.
//!
//! A Rust user registers a native tool with [`FnTool`]:
//!
//! ```
//! use toolgate::tool::{FnTool, ToolOutput};
//! use serde_json::json;
//!
//! let add = FnTool::new(
//!     "add",
//!     "Add two integers.",
//!     json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
//!     |_ctx, args| async move {
//!         let a = args["a"].as_i64().unwrap_or(0);
//!         let b = args["b"].as_i64().unwrap_or(0);
//!         Ok(ToolOutput::text((a + b).to_string()))
//!     },
//! );
//! # let _ = add;
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use toolgate_store::SessionId;

/// A boxed, sendable future: the return type of [`Tool::call`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

impl ToolSpec {
    /// A spec from its three parts.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
    ) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// One part of a multimodal result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Its MIME type (`image/png`).
        mime_type: String,
        /// Its bytes, base64-encoded.
        data: String,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text { text: text.into() }
    }
}

/// What a tool returns.
pub enum ToolOutput {
    /// Plain text.
    Text(String),
    /// Text and image parts, in order.
    Parts(Vec<ContentPart>),
    /// Text chunks produced over time. The guard reads the stream under the call's timeout and
    /// result cap, and closes it as soon as the cap is reached (G5).
    Stream(BoxStream<'static, Result<String, ToolError>>),
}

impl ToolOutput {
    /// A text output.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput::Text(text.into())
    }
}

impl fmt::Debug for ToolOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolOutput::Text(t) => f.debug_tuple("Text").field(t).finish(),
            ToolOutput::Parts(p) => f.debug_tuple("Parts").field(p).finish(),
            ToolOutput::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// What kind of failure a [`ToolError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolErrorKind {
    /// The tool ran and failed (`tool_error`).
    Failed,
    /// The arguments do not fit the tool (`invalid_arguments`).
    InvalidArguments,
    /// The tool panicked (`tool_execution_panic`); set by adapters such as plugins, whose
    /// panics are caught on the other side of an FFI boundary.
    Panicked,
    /// A failure with a stable snake_case kind of its own (`not_found`, `access_denied`, ...).
    Coded(&'static str),
    /// No room to run the call now (`overloaded`): set by adapters whose threads are all held.
    Overloaded,
}

/// A tool's own failure, written for the model ("file not found: a.txt").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// What went wrong, written for the model.
    pub message: String,
    /// What kind of failure it is.
    pub kind: ToolErrorKind,
}

impl ToolError {
    /// A failure of the tool (`tool_error`).
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            kind: ToolErrorKind::Failed,
        }
    }

    /// Arguments the tool cannot use.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            kind: ToolErrorKind::InvalidArguments,
        }
    }

    /// A failure with a stable kind of its own, reported as that kind.
    pub fn coded(kind: &'static str, message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            kind: ToolErrorKind::Coded(kind),
        }
    }

    /// No room to run the call now; it did not start.
    pub fn overloaded(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            kind: ToolErrorKind::Overloaded,
        }
    }

    /// A panic caught by an adapter.
    pub fn panic(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            kind: ToolErrorKind::Panicked,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// Receives progress messages from a running tool (turned into `update` events).
pub type ProgressFn = Arc<dyn Fn(&str) + Send + Sync>;

/// What a tool knows about the call it serves.
#[derive(Clone)]
pub struct ToolContext {
    /// The session the call belongs to, if any.
    pub session: Option<SessionId>,
    /// The model's id for this call.
    pub call_id: String,
    /// The name the model used (an alias, perhaps); the tool's own name is in its spec.
    pub model_name: String,
    /// Fires when the call is cancelled (timeout, turn cancelled). Tools must stop promptly.
    pub cancel: CancellationToken,
    pub(crate) progress: Option<ProgressFn>,
    /// What the call holds until it really returns (its sequential group's lock): an adapter
    /// that runs the call on a thread of its own keeps this alive on that thread, so a call
    /// that ignores its cancellation keeps its group locked until it ends.
    pub(crate) hold: Option<Hold>,
    /// Where an adapter records the time the call waited for room to run (a plugin's thread).
    pub(crate) waited: Waited,
    /// Keep at most this many characters of text of the result: the rest is over the call's
    /// cap anyway, and an adapter that receives the result (a plugin's) drops it unread.
    /// `None`: keep it whole (no cap, or reduction is on and stores it whole).
    pub(crate) keep_chars: Option<u64>,
}

/// How long a call waited inside its tool for room to run (a thread of its plugin): reported
/// as queue time (`queued_ms`), apart from the run, while it counts against the call's timeout.
#[derive(Clone, Default)]
pub(crate) struct Waited(Arc<Mutex<WaitClock>>);

#[derive(Default)]
struct WaitClock {
    total: Duration,
    since: Option<Instant>,
}

impl Waited {
    fn clock(&self) -> std::sync::MutexGuard<'_, WaitClock> {
        // Two plain fields: valid after any panic.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The call waits from now until the returned guard is dropped.
    pub(crate) fn start(&self) -> Waiting<'_> {
        self.clock().since = Some(Instant::now());
        Waiting(self)
    }

    /// The time waited so far, a wait still going on included.
    pub(crate) fn total(&self) -> Duration {
        let clock = self.clock();
        clock.total + clock.since.map_or(Duration::ZERO, |s| s.elapsed())
    }
}

/// A wait in progress; see [`Waited::start`].
pub(crate) struct Waiting<'a>(&'a Waited);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut clock = self.0.clock();
        if let Some(since) = clock.since.take() {
            clock.total += since.elapsed();
        }
    }
}

/// Something a call holds until it really returns; see [`ToolContext`].
pub(crate) type Hold = Arc<dyn std::any::Any + Send + Sync>;

impl ToolContext {
    /// A context for calling a tool outside the guard (tests, benchmarks, direct use).
    pub fn detached(call_id: impl Into<String>) -> Self {
        ToolContext {
            session: None,
            call_id: call_id.into(),
            model_name: String::new(),
            cancel: CancellationToken::new(),
            progress: None,
            hold: None,
            waited: Waited::default(),
            keep_chars: None,
        }
    }

    /// Reports progress; it reaches event subscribers as an `update` event.
    pub fn progress(&self, message: &str) {
        if let Some(p) = &self.progress {
            p(message);
        }
    }

    /// Whether the call was cancelled (timeout, turn cancelled).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("session", &self.session)
            .field("call_id", &self.call_id)
            .field("model_name", &self.model_name)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish()
    }
}

/// A tool the engine can run. Implementations must be safe to call concurrently.
pub trait Tool: Send + Sync + 'static {
    /// What the model is told about the tool; its `name` is the tool's real name.
    fn spec(&self) -> &ToolSpec;
    /// Runs the tool. `args` is the JSON arguments object after aliases and the rewrite.
    fn call(
        &self,
        ctx: ToolContext,
        args: serde_json::Value,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;
}

/// A native tool made from an async closure.
pub struct FnTool<F> {
    spec: ToolSpec,
    f: F,
}

impl<F, Fut> FnTool<F>
where
    F: Fn(ToolContext, serde_json::Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    /// A tool named `name` that runs `f` with the call's context and arguments.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
        f: F,
    ) -> Self {
        FnTool {
            spec: ToolSpec::new(name, description, parameters),
            f,
        }
    }
}

impl<F, Fut> Tool for FnTool<F>
where
    F: Fn(ToolContext, serde_json::Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        ctx: ToolContext,
        args: serde_json::Value,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin((self.f)(ctx, args))
    }
}
