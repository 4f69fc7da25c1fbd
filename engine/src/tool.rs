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

/// What the model is told about a tool, and what an MCP client is shown of it.
///
/// The first three fields are all a model provider gets. The others are what MCP adds to a
/// tool's definition; toolgate does not read them (except `output_schema`, which the guard
/// checks every success against) and passes them to MCP clients exactly as the tool's source
/// gave them (an upstream MCP server's `tools/list`, a plugin's manifest). They are absent from
/// the JSON of a spec when unset, so a spec without them reads and writes as before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
    /// A name for people (MCP `title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// JSON Schema of the tool's structured result (MCP `outputSchema`). A tool that declares
    /// one returns [`FullOutput::structured`] with every success, and the guard refuses a
    /// success whose structured content is missing or does not match it
    /// (`invalid_structured_content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
    /// Hints about the tool's behaviour (MCP `annotations`: `readOnlyHint`, `destructiveHint`,
    /// `idempotentHint`, `openWorldHint`, `title`), as a JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<serde_json::Value>,
    /// Icons for people (MCP `icons`: a list of `{src, mimeType, sizes, theme}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<serde_json::Value>,
    /// Metadata for clients (MCP `_meta`), as a JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
}

impl ToolSpec {
    /// A spec from its three parts, with nothing else.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
    ) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
            title: None,
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
        }
    }

    /// The spec with a title for people.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The spec with the JSON Schema of its structured result.
    pub fn with_output_schema(mut self, schema: serde_json::Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// The spec with behaviour hints (a JSON object, MCP's `annotations`).
    pub fn with_annotations(mut self, annotations: serde_json::Value) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// One part of a multimodal result.
///
/// `extra` holds what a part carries besides its content, exactly as the tool's source sent
/// it: MCP's `annotations` (`audience`, `priority`, `lastModified`) and `_meta`, and for a
/// resource link its `title`, `description`, `mimeType`, `size` and `icons`. toolgate passes it
/// on to MCP clients unchanged; model providers do not see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// What the part carries besides its text.
        #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
        extra: serde_json::Map<String, serde_json::Value>,
    },
    /// An image, base64-encoded.
    Image {
        /// Its MIME type (`image/png`).
        mime_type: String,
        /// Its bytes, base64-encoded.
        data: String,
        /// What the part carries besides its image.
        #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
        extra: serde_json::Map<String, serde_json::Value>,
    },
    /// A sound, base64-encoded (MCP `audio`). Model providers get a line of text saying it is
    /// there and not shown.
    Audio {
        /// Its MIME type (`audio/wav`).
        mime_type: String,
        /// Its bytes, base64-encoded.
        data: String,
        /// What the part carries besides its sound.
        #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
        extra: serde_json::Map<String, serde_json::Value>,
    },
    /// A resource embedded in the result (MCP `resource`). Its text counts against the
    /// result's caps like a text part's; model providers get the text after a line naming the
    /// URI, or a line saying a binary resource is not shown.
    Resource {
        /// The resource's contents as MCP defines them: `uri`, `mimeType`, and `text` or
        /// `blob` (base64), and `_meta`.
        resource: serde_json::Map<String, serde_json::Value>,
        /// What the part carries besides the resource.
        #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
        extra: serde_json::Map<String, serde_json::Value>,
    },
    /// A link to a resource the client can read (MCP `resource_link`). Model providers get a
    /// line of text with its name, URI and description.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// The resource's name.
        name: String,
        /// The link's other fields (`title`, `description`, `mimeType`, `size`, `icons`,
        /// `annotations`, `_meta`).
        #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
        extra: serde_json::Map<String, serde_json::Value>,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text {
            text: text.into(),
            extra: serde_json::Map::new(),
        }
    }

    /// An image part: its MIME type and its bytes, base64-encoded.
    pub fn image(mime_type: impl Into<String>, data: impl Into<String>) -> Self {
        ContentPart::Image {
            mime_type: mime_type.into(),
            data: data.into(),
            extra: serde_json::Map::new(),
        }
    }

    /// The text a model reads of this part and the caps count: a text part's text, an
    /// embedded resource's text; `None` for the other parts, which are kept whole.
    pub fn text_content(&self) -> Option<&str> {
        match self {
            ContentPart::Text { text, .. } => Some(text),
            ContentPart::Resource { resource, .. } => {
                resource.get("text").and_then(serde_json::Value::as_str)
            }
            _ => None,
        }
    }

    /// The counted text of this part, to cut it in place (see [`ContentPart::text_content`]).
    pub fn text_content_mut(&mut self) -> Option<&mut String> {
        match self {
            ContentPart::Text { text, .. } => Some(text),
            ContentPart::Resource { resource, .. } => match resource.get_mut("text") {
                Some(serde_json::Value::String(text)) => Some(text),
                _ => None,
            },
            _ => None,
        }
    }

    /// What the part carries besides its content (see [`ContentPart`]), to change it in place.
    pub fn extra_mut(&mut self) -> &mut serde_json::Map<String, serde_json::Value> {
        match self {
            ContentPart::Text { extra, .. }
            | ContentPart::Image { extra, .. }
            | ContentPart::Audio { extra, .. }
            | ContentPart::Resource { extra, .. }
            | ContentPart::ResourceLink { extra, .. } => extra,
        }
    }

    /// Whether this is a text part with nothing besides its text.
    pub fn is_plain_text(&self) -> bool {
        matches!(self, ContentPart::Text { extra, .. } if extra.is_empty())
    }
}

/// Everything a result can carry (an MCP `CallToolResult`): content parts, a structured
/// result, and metadata for the client.
///
/// The guard caps and offloads it like parts, and the structured content too: see
/// `docs/spec.md` (G9, R10) for what a client and a model get when it is over a cap.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FullOutput {
    /// The content parts, in order.
    pub content: Vec<ContentPart>,
    /// The structured result (MCP `structuredContent`), which matches the tool's
    /// [`ToolSpec::output_schema`] when it declares one.
    pub structured: Option<serde_json::Value>,
    /// Metadata for the client (MCP `_meta`), passed on as it is. toolgate's own key,
    /// `toolgate`, is added when `toolgate serve` answers a call.
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
}

/// What a tool returns.
pub enum ToolOutput {
    /// Plain text.
    Text(String),
    /// Parts, in order.
    Parts(Vec<ContentPart>),
    /// Parts with a structured result or metadata beside them (an MCP tool's result, a
    /// plugin's structured result).
    Full(FullOutput),
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
            ToolOutput::Full(o) => f.debug_tuple("Full").field(o).finish(),
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
    /// Who makes the call (the local caller outside `serve --http`'s authentication).
    pub caller: Arc<crate::caller::Caller>,
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
            caller: crate::caller::Caller::local(),
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
            .field("caller", &self.caller.name())
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
        FnTool::from_spec(ToolSpec::new(name, description, parameters), f)
    }

    /// A tool described by `spec` (with a title, an output schema, ...) that runs `f`.
    pub fn from_spec(spec: ToolSpec, f: F) -> Self {
        FnTool { spec, f }
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
