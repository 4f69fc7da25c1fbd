//! The per-call pipeline.
//!
//! Every call, built-in tools and unknown names included, passes through one chain of
//! [`Layer`]s, outermost first, and ends at the endpoint (the tool, or the unknown-tool answer):
//!
//! ```text
//! after hook ─ reduce ─ group ─ timeout ─ limit ─ arguments ─ visibility ─ rewrite ─ rules ─ before ─ endpoint
//! ```
//!
//! * **after hook** (G6, G7) sees the final outcome; its failure is an `error` event.
//! * **reduce** (R1, R2, R9; when reduction is on) offloads large results to the store.
//! * **group** serialises calls that share a `sequential_group`; its wait is queue time, so it
//!   sits outside the timeout, and a member holds the lock until it really returns.
//! * **timeout** (G2) starts once the call runs (after any wait for a concurrency slot or group
//!   lock, reported as `queued`), covers everything inside, cancels the call's token and drops
//!   the tool's future at the deadline.
//! * **limit** (G3-G5) reads streams and caps text by Unicode characters.
//! * **arguments** (D2) parses the JSON arguments and renames argument aliases.
//! * **visibility** (S4) refuses catalog tools that were not found yet.
//! * **rewrite** (D2, D3) runs the rewrite script; its output is what the tool receives.
//! * **rules** (G1) checks the declarative allow/deny rules on those final arguments (path
//!   arguments in normalised form), so a rewrite cannot turn a denied call into an allowed one.
//!   Unknown names pass on to the unknown-tool answer; built-ins meet only rules naming them.
//! * **before** (G1) runs the before script, also on the final arguments.
//!
//! A feature that needs to see a call is a layer here, not an `if` in the dispatcher. The
//! [`Guard`] wraps the chain with the `tracing` span, the start and end events (E1), the
//! duration and the panic capture (G6).

mod layers;
mod limit;

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use layers::{
    AfterHookLayer, ArgAliases, ArgumentsLayer, BeforeLayer, Endpoint, GroupLayer, GroupLock,
    RewriteLayer, Suggest, TimeoutLayer,
};
pub use limit::{LimitLayer, TRUNCATION_MARKER, cap_parts, cap_text};
pub use crate::rules::{CHECK_ORDER, CompiledRules, RulesLayer};

use crate::error::CallError;
use crate::events::{Event, EventKind, Events};
use crate::settings::ToolSettings;
use crate::tool::{BoxFuture, ContentPart, ProgressFn, Tool, ToolOutput};

/// One call as it travels through the guard.
pub struct Invocation {
    pub call_id: String,
    /// The name the model used.
    pub model_name: String,
    /// The real tool name (the model's name when the tool is unknown).
    pub tool_name: String,
    /// `None` when the name is unknown.
    pub tool: Option<Arc<dyn Tool>>,
    /// The arguments exactly as the model sent them.
    pub raw_arguments: String,
    /// The parsed arguments (after the arguments layer).
    pub args: serde_json::Value,
    pub session: Option<String>,
    pub settings: Arc<ToolSettings>,
    /// When the call started running: after any wait for a concurrency slot or its group's
    /// lock (G2).
    pub started: Instant,
    /// `started` + the timeout, if any.
    pub deadline: Option<Instant>,
    /// Time spent waiting for a concurrency slot and the group's lock, apart from the run.
    pub queued: Duration,
    /// The group lock the call holds (set by the group layer, handed to the tool).
    pub hold: Option<crate::tool::Hold>,
    /// Set when the error text was cut or offloaded (G3, R1).
    pub error_sizing: ErrorSizing,
    /// Fires on timeout or when the turn is cancelled.
    pub cancel: CancellationToken,
    pub progress: Option<ProgressFn>,
}

impl Invocation {
    pub fn is_known(&self) -> bool {
        self.tool.is_some()
    }

    /// The call waited `waited` (for a slot or a lock) and starts running now: the wait is
    /// reported as queue time and the timeout starts from here (G2).
    pub fn start_after_wait(&mut self, waited: Duration) {
        self.queued += waited;
        self.started = Instant::now();
        self.deadline = self.settings.timeout.map(|t| self.started + t);
    }
}

/// What happened to an error's text on its way out (G3, R1).
#[derive(Debug, Clone, Default)]
pub struct ErrorSizing {
    /// The text was cut at the cap and marked.
    pub truncated: bool,
    /// The text was offloaded whole under this id; the error carries the notice.
    pub result_id: Option<String>,
}

/// What the chain produces on success.
#[derive(Debug)]
pub struct Reply {
    /// Never a stream once the limit layer has run.
    pub output: ToolOutput,
    pub truncated: bool,
    /// Unicode characters of text kept (marker excluded).
    pub chars: u64,
    /// The stored result's id when the output was offloaded.
    pub result_id: Option<String>,
}

impl Reply {
    pub fn new(output: ToolOutput) -> Self {
        Reply {
            output,
            truncated: false,
            chars: 0,
            result_id: None,
        }
    }
}

pub type CallResult = Result<Reply, CallError>;

/// One stage of the pipeline. A layer does its work and calls `next.run(inv)` (or does not, to
/// short-circuit).
pub trait Layer: Send + Sync + 'static {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult>;
}

/// The rest of the chain after a layer.
#[derive(Clone, Copy)]
pub struct Next<'a> {
    rest: &'a [Arc<dyn Layer>],
    endpoint: &'a Endpoint,
}

impl<'a> Next<'a> {
    pub fn run<'b>(self, inv: &'b mut Invocation) -> BoxFuture<'b, CallResult>
    where
        'a: 'b,
    {
        match self.rest.split_first() {
            Some((layer, rest)) => layer.call(
                inv,
                Next {
                    rest,
                    endpoint: self.endpoint,
                },
            ),
            None => self.endpoint.call(inv),
        }
    }
}

/// The final result of one call.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub call_id: String,
    /// The name the model used (D8).
    pub model_name: String,
    /// The real tool name (D8); the model's name when the tool is unknown.
    pub tool_name: String,
    pub known_tool: bool,
    /// What the model gets: the tool's text or parts, or the error message.
    pub content: Content,
    pub error: Option<CallError>,
    pub truncated: bool,
    /// Unicode characters of text kept (marker excluded).
    pub output_chars: u64,
    /// From the start of the run to the final result (G7), queue time excluded.
    pub duration: Duration,
    /// Time spent waiting for a concurrency slot and a group lock before the run (G2).
    pub queued: Duration,
    /// The stored result's id when the output was offloaded (R1).
    pub result_id: Option<String>,
}

impl Outcome {
    pub fn is_error(&self) -> bool {
        self.error.is_some()
    }

    pub fn error_kind(&self) -> Option<&'static str> {
        self.error.as_ref().map(CallError::kind)
    }
}

/// The content of a tool message: plain text, or parts (text and images).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl Content {
    /// All text, parts joined by newlines (images skipped).
    pub fn text(&self) -> String {
        match self {
            Content::Text(t) => t.clone(),
            Content::Parts(p) => p
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text } => Some(text.as_str()),
                    ContentPart::Image { .. } => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// The text the model reads for a failed call.
pub fn error_text(err: &CallError) -> String {
    format!("Error: {err}")
}

/// The assembled pipeline.
pub struct Guard {
    layers: Vec<Arc<dyn Layer>>,
    endpoint: Endpoint,
    events: Events,
}

impl Guard {
    pub fn new(layers: Vec<Arc<dyn Layer>>, endpoint: Endpoint, events: Events) -> Self {
        Guard {
            layers,
            endpoint,
            events,
        }
    }

    /// Runs one call through the whole chain. Never panics: a panic anywhere inside becomes a
    /// `tool_execution_panic` outcome (policy scripts report `tool_policy_panic` themselves).
    pub async fn run(&self, mut inv: Invocation) -> Outcome {
        let span = tracing::info_span!(
            "tool_call",
            tool = %inv.tool_name,
            model_name = %inv.model_name,
            call_id = %inv.call_id,
            session = inv.session.as_deref().unwrap_or(""),
        );
        async move {
            if self.events.active() {
                self.events.emit(Event::new(EventKind::Start, &inv));
                let events = self.events.clone();
                let base = Event::new(EventKind::Start, &inv);
                let inner = inv.progress.take();
                inv.progress = Some(Arc::new(move |msg: &str| {
                    let mut e = base.clone();
                    e.kind = EventKind::Update {
                        message: msg.to_string(),
                    };
                    events.emit(e);
                    if let Some(p) = &inner {
                        p(msg);
                    }
                }));
            }
            let next = Next {
                rest: &self.layers,
                endpoint: &self.endpoint,
            };
            let result = AssertUnwindSafe(next.run(&mut inv)).catch_unwind().await;
            let result = match result {
                Ok(r) => r,
                Err(panic) => Err(CallError::ToolExecutionPanic {
                    tool: inv.tool_name.clone(),
                    message: panic_message(&*panic),
                }),
            };
            let outcome = outcome_of(&inv, result);
            if let Some(err) = &outcome.error {
                tracing::debug!(kind = err.kind(), "tool call failed: {err}");
            }
            if self.events.active() {
                self.events.emit(Event::end(&inv, &outcome));
            }
            outcome
        }
        .instrument(span)
        .await
    }
}

impl Guard {
    /// Records a call that does not run (D7): its outcome carries `err` and an `end` event is
    /// emitted like for any other call.
    pub fn skip(&self, inv: Invocation, err: CallError) -> Outcome {
        let outcome = outcome_of(&inv, Err(err));
        if self.events.active() {
            self.events.emit(Event::end(&inv, &outcome));
        }
        outcome
    }
}

/// Turns the chain's result into the outcome.
pub(crate) fn outcome_of(inv: &Invocation, result: CallResult) -> Outcome {
    let duration = inv.started.elapsed();
    let queued = inv.queued;
    let base = |content, error, truncated, chars, result_id| Outcome {
        call_id: inv.call_id.clone(),
        model_name: inv.model_name.clone(),
        tool_name: inv.tool_name.clone(),
        known_tool: inv.is_known(),
        content,
        error,
        truncated,
        output_chars: chars,
        duration,
        queued,
        result_id,
    };
    match result {
        Ok(reply) => {
            let content = match reply.output {
                ToolOutput::Text(t) => Content::Text(t),
                ToolOutput::Parts(p) => Content::Parts(p),
                // The limit layer always collects streams; reaching here means a custom chain
                // without it. Say so rather than lose the output silently.
                ToolOutput::Stream(_) => {
                    return base(
                        Content::Text(error_text(&CallError::ToolExecutionPanic {
                            tool: inv.tool_name.clone(),
                            message: "a stream reached the end of the guard unread".into(),
                        })),
                        Some(CallError::ToolExecutionPanic {
                            tool: inv.tool_name.clone(),
                            message: "a stream reached the end of the guard unread".into(),
                        }),
                        false,
                        0,
                        None,
                    );
                }
            };
            base(content, None, reply.truncated, reply.chars, reply.result_id)
        }
        Err(err) => {
            let text = error_text(&err);
            let sizing = &inv.error_sizing;
            let mut chars = text.chars().count() as u64;
            if sizing.truncated {
                chars = chars.saturating_sub(TRUNCATION_MARKER.chars().count() as u64);
            }
            base(
                Content::Text(text),
                Some(err),
                sizing.truncated,
                chars,
                sizing.result_id.clone(),
            )
        }
    }
}

/// The message of a caught panic payload.
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_string()
    }
}
