//! One call on its way through the guard: the [`Invocation`] every layer works on, the
//! [`Reply`] a tool's success travels back as, and the [`Outcome`] a caller gets in the end.
//!
//! Every other module of the engine builds on these types; this one builds only on the error,
//! tool, settings and structured-result types.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use toolgate_store::SessionId;

use crate::access::CallKind;
use crate::caller::Caller;
use crate::error::CallError;
use crate::session::Session;
use crate::settings::ToolSettings;
use crate::structured::OutputCheck;
use crate::tool::{ContentPart, Hold, ProgressFn, Tool, ToolOutput, Waited};

/// Appended to a result (or an error's text) cut at its character cap (G3-G5).
pub const TRUNCATION_MARKER: &str = "\n...[tool result truncated]";

/// What a call's name resolved to in the registry.
pub(crate) struct Target {
    /// The real tool name.
    pub(crate) name: String,
    pub(crate) tool: Arc<dyn Tool>,
    /// A built-in tool that a feature turned on (`read_tool_result`, `tool_search`).
    pub(crate) builtin: bool,
    /// The tool's output schema, when it declares one (G10).
    pub(crate) output_check: Option<Arc<OutputCheck>>,
}

/// One call as it travels through the guard. A [`Layer`](crate::guard::Layer) reads it and may
/// change its arguments.
pub struct Invocation {
    /// What the call reaches: a tool, a resource, a prompt (A1).
    pub(crate) kind: CallKind,
    pub(crate) call_id: String,
    /// The name the model used.
    pub(crate) model_name: String,
    /// The real tool name (the model's name when the tool is unknown).
    pub(crate) tool_name: String,
    /// `None` when the name is unknown.
    pub(crate) tool: Option<Arc<dyn Tool>>,
    /// A built-in tool that a feature turned on: its output is never reduced again (R2).
    pub(crate) builtin: bool,
    /// The tool's output schema, when it declares one: its successes are checked (G10).
    pub(crate) output_check: Option<Arc<OutputCheck>>,
    /// The arguments exactly as the model sent them.
    pub(crate) raw_arguments: String,
    /// The parsed arguments (after the arguments layer).
    pub(crate) args: serde_json::Value,
    pub(crate) session: Option<SessionId>,
    /// Who makes the call (the session handle's caller).
    pub(crate) caller: Arc<Caller>,
    pub(crate) settings: Arc<ToolSettings>,
    /// When the call started running: after any wait for a concurrency slot or its group's
    /// lock (G2).
    pub(crate) started: Instant,
    /// `started` + the timeout, if any.
    pub(crate) deadline: Option<Instant>,
    /// Time spent waiting for a concurrency slot and the group's lock, apart from the run.
    pub(crate) queued: Duration,
    /// Time the tool waited for room to run (a plugin's thread): inside the timeout, but
    /// reported as queue time, apart from the run.
    pub(crate) waited: Waited,
    /// Text of the result beyond this many characters is dropped as it is received (the limit
    /// layer sets it from the cap; `None`: kept whole).
    pub(crate) keep_chars: Option<u64>,
    /// The group lock the call holds (set by the group layer, handed to the tool).
    pub(crate) hold: Option<Hold>,
    /// Set when the error text was cut or offloaded (G3, R1).
    pub(crate) error_sizing: ErrorSizing,
    /// Secrets masked in the result or the failure's text (the redact layer counts them).
    pub(crate) redactions: u64,
    /// What the rules and the before hook decided (set by their layers).
    pub(crate) decision: Decision,
    /// Fires on timeout or when the turn is cancelled.
    pub(crate) cancel: CancellationToken,
    pub(crate) progress: Option<ProgressFn>,
}

impl Invocation {
    /// A call that starts now in `session` (its id and caller): `target` is `None` for a name
    /// the registry does not know.
    pub(crate) fn new(
        call_id: String,
        model_name: String,
        target: Option<Target>,
        raw_arguments: String,
        session: &Session,
        settings: Arc<ToolSettings>,
        cancel: CancellationToken,
    ) -> Self {
        let started = Instant::now();
        let (tool_name, tool, builtin, output_check) = match target {
            Some(t) => (t.name, Some(t.tool), t.builtin, t.output_check),
            None => (model_name.clone(), None, false, None),
        };
        Invocation {
            kind: CallKind::Tool,
            call_id,
            model_name,
            tool_name,
            tool,
            builtin,
            output_check,
            raw_arguments,
            args: serde_json::Value::Null,
            session: session.id().cloned(),
            caller: Arc::clone(session.caller()),
            deadline: settings.timeout.map(|t| started + t),
            settings,
            started,
            queued: Duration::ZERO,
            waited: Waited::default(),
            keep_chars: None,
            hold: None,
            error_sizing: ErrorSizing::default(),
            redactions: 0,
            decision: Decision::default(),
            cancel,
            progress: None,
        }
    }

    /// What the call reaches: a tool, or (through [`crate::Engine::access`]) a resource or a
    /// prompt. A layer of your own that means tools only checks it.
    pub fn kind(&self) -> CallKind {
        self.kind
    }

    /// The model's id for this call.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The name the model used (a model-facing name or an alias, D8).
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// The real tool name (D8); the model's name when the tool is unknown.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// Whether the name resolved to a tool.
    pub fn is_known(&self) -> bool {
        self.tool.is_some()
    }

    /// The arguments exactly as the model sent them.
    pub fn raw_arguments(&self) -> &str {
        &self.raw_arguments
    }

    /// The parsed arguments: `null` before the arguments layer, then the JSON object the tool
    /// will receive (after argument aliases and, past the rewrite layer, the rewrite script).
    pub fn args(&self) -> &serde_json::Value {
        &self.args
    }

    /// The arguments, to change them before the tool sees them.
    pub fn args_mut(&mut self) -> &mut serde_json::Value {
        &mut self.args
    }

    /// The session the call belongs to, if any.
    pub fn session(&self) -> Option<&SessionId> {
        self.session.as_ref()
    }

    /// Who makes the call: the principal the host authenticated, or [`Caller::local`].
    pub fn caller(&self) -> &Arc<Caller> {
        &self.caller
    }

    /// When the call's timeout passes, if it has one.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Fires when the call is cancelled (its timeout, or the turn cancelled).
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The call waited `waited` (for a slot or a lock) and starts running now: the wait is
    /// reported as queue time and the timeout starts from here (G2).
    pub(crate) fn start_after_wait(&mut self, waited: Duration) {
        self.queued += waited;
        self.started = Instant::now();
        self.deadline = self.settings.timeout.map(|t| self.started + t);
    }

    /// All the call waited: for a slot or a lock before it started, and for a thread of its
    /// plugin after (reported as `queued_ms`).
    pub(crate) fn queue_time(&self) -> Duration {
        self.queued + self.waited.total()
    }

    /// The run so far, the wait for a thread of its plugin excluded (`duration_ms`).
    pub(crate) fn run_time(&self) -> Duration {
        self.started.elapsed().saturating_sub(self.waited.total())
    }

    /// A script stopped because the call's deadline passed is a timeout, not a policy failure:
    /// once the deadline has passed, `err` becomes `timeout` and the call's token fires.
    pub(crate) fn past_deadline(&self, err: CallError) -> CallError {
        match (self.deadline, self.settings.timeout) {
            (Some(deadline), Some(after)) if Instant::now() >= deadline => {
                self.cancel.cancel();
                CallError::Timeout { after }
            }
            _ => err,
        }
    }

    /// Turns the chain's result into the outcome.
    pub(crate) fn outcome(&self, result: CallResult) -> Outcome {
        let (duration, queued) = (self.run_time(), self.queue_time());
        let base = |content, error, truncated, output_chars, result_id| Outcome {
            call_id: self.call_id.clone(),
            model_name: self.model_name.clone(),
            tool_name: self.tool_name.clone(),
            known_tool: self.is_known(),
            content,
            structured_content: None,
            meta: None,
            error,
            truncated,
            output_chars,
            duration,
            queued,
            result_id,
            redactions: self.redactions,
            decision: self.decision.clone(),
        };
        match result {
            Ok(reply) => {
                let (mut structured, mut meta) = (None, None);
                let content = match reply.output {
                    ToolOutput::Text(t) => Content::Text(t),
                    ToolOutput::Parts(p) => Content::Parts(p),
                    ToolOutput::Full(mut full) => {
                        structured = full.structured;
                        meta = full.meta;
                        // One bare text part, the usual content beside structured content,
                        // reads as text, as it does without it.
                        match full.content.as_mut_slice() {
                            [ContentPart::Text { text, extra }] if extra.is_empty() => {
                                Content::Text(std::mem::take(text))
                            }
                            _ => Content::Parts(full.content),
                        }
                    }
                    // The limit layer always collects streams; reaching here means a custom
                    // chain without it. Say so rather than lose the output silently.
                    ToolOutput::Stream(_) => {
                        let err = CallError::ToolExecutionPanic {
                            tool: self.tool_name.clone(),
                            message: "a stream reached the end of the guard unread".into(),
                        };
                        return base(Content::Text(error_text(&err)), Some(err), false, 0, None);
                    }
                };
                let mut outcome =
                    base(content, None, reply.truncated, reply.chars, reply.result_id);
                outcome.structured_content = structured;
                outcome.meta = meta;
                outcome
            }
            Err(err) => {
                let text = error_text(&err);
                let sizing = &self.error_sizing;
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
}

/// What happened to an error's text on its way out (G3, R1).
#[derive(Debug, Clone, Default)]
pub(crate) struct ErrorSizing {
    /// The text was cut at the cap and marked.
    pub(crate) truncated: bool,
    /// The text was offloaded whole under this id; the error carries the notice.
    pub(crate) result_id: Option<String>,
}

/// A tool's success on its way back out through the layers.
#[derive(Debug)]
pub struct Reply {
    /// Never a stream once the limit layer has run.
    pub(crate) output: ToolOutput,
    pub(crate) truncated: bool,
    /// Unicode characters of text kept (marker excluded).
    pub(crate) chars: u64,
    /// The stored result's id when the output was offloaded.
    pub(crate) result_id: Option<String>,
}

impl Reply {
    /// A reply carrying `output` as it is (a layer that answers a call itself uses this).
    pub fn new(output: ToolOutput) -> Self {
        Reply {
            output,
            truncated: false,
            chars: 0,
            result_id: None,
        }
    }

    /// The output so far: the tool's, or what the layers inside made of it.
    pub fn output(&self) -> &ToolOutput {
        &self.output
    }
}

/// What a layer returns: the reply, or why the call failed.
pub type CallResult = Result<Reply, CallError>;

/// The final result of one call.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The model's id for this call.
    pub call_id: String,
    /// The name the model used (D8).
    pub model_name: String,
    /// The real tool name (D8); the model's name when the tool is unknown.
    pub tool_name: String,
    /// Whether the name resolved to a tool.
    pub known_tool: bool,
    /// What the model gets: the tool's text or parts, or the error message.
    pub content: Content,
    /// The tool's structured result (MCP `structuredContent`), when it returned one and it
    /// passed the caps (G9, R10); never set for a failed call.
    pub structured_content: Option<serde_json::Value>,
    /// The tool's metadata for the client (MCP `_meta`), as it returned it.
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
    /// Why the call failed, if it did.
    pub error: Option<CallError>,
    /// Whether the text was cut at its character cap.
    pub truncated: bool,
    /// Unicode characters of text kept (marker excluded).
    pub output_chars: u64,
    /// From the start of the run to the final result (G7), queue time excluded.
    pub duration: Duration,
    /// Time spent waiting for a concurrency slot and a group lock before the run (G2), and for
    /// a thread of its plugin (inside the timeout).
    pub queued: Duration,
    /// The stored result's id when the output was offloaded (R1).
    pub result_id: Option<String>,
    /// Secrets masked in what the model gets (`redact:`); 0 when redaction is off.
    pub redactions: u64,
    /// What the rules and the before hook decided, for the audit log.
    pub decision: Decision,
}

/// What the policy's checks decided about a call, for the audit log and events: the rule that
/// decided and the before hook's verdict. A call the rules never judged (an unknown name, bad
/// arguments) has every field `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Decision {
    /// The rule that decided, as `<file>:<line>:<col>: deny[i]` (the deny rule that matched)
    /// or `allow[i]` (the allow rule that admitted the call); `None` when no single rule
    /// decided (no rules, or no allow rule matched).
    pub rule: Option<String>,
    /// The rules' verdict: `allow` or `deny`; `None` when the rules did not judge the call.
    pub rules: Option<&'static str>,
    /// The before hook's verdict: `allow` or `deny`; `None` when there is no before hook or it
    /// did not run.
    pub before_hook: Option<&'static str>,
}

impl Outcome {
    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        self.error.is_some()
    }

    /// The stable snake_case kind of the failure ([`CallError::kind`]), if the call failed.
    pub fn error_kind(&self) -> Option<&'static str> {
        self.error.as_ref().map(CallError::kind)
    }
}

/// The content of a tool message: plain text, or parts.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Parts, in order.
    Parts(Vec<ContentPart>),
}

impl Content {
    /// All text, parts joined by newlines: text parts and the text of embedded resources
    /// ([`ContentPart::text_content`]); other parts are skipped.
    pub fn text(&self) -> String {
        match self {
            Content::Text(t) => t.clone(),
            Content::Parts(p) => p
                .iter()
                .filter_map(ContentPart::text_content)
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// The text the model reads for a failed call.
pub(crate) fn error_text(err: &CallError) -> String {
    format!("Error: {err}")
}

/// The message of a caught panic payload.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_string()
    }
}
