//! Events of each call (E1): `start`, `update` (progress from a tool), `end` (with the outcome)
//! and `error` (problems that do not fail the call, such as a failing after hook or a store
//! that could not keep a large result).
//!
//! Subscribe with [`crate::Engine::subscribe`] (an unbounded channel: nothing is dropped) or
//! register a listener with [`crate::EngineBuilder::on_event`]. When nobody listens, no event
//! is built at all.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, RwLock};

use serde::Serialize;

use crate::access::CallKind;
use crate::call::{Content, Invocation, Outcome};
use crate::caller::Caller;

/// What happened.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// The call starts running through the guard.
    Start,
    /// A running tool reported progress.
    Update {
        /// What the tool said.
        message: String,
    },
    /// The call ended.
    End {
        /// How it ended.
        outcome: Arc<OutcomeSummary>,
    },
    /// A problem that does not fail the call (a failing after hook, a store that could not
    /// keep a large result, a limits store that did not answer under `on_store_error: open`).
    Error {
        /// What went wrong.
        message: String,
        /// Its stable snake_case kind.
        kind: &'static str,
    },
    /// An attempt of an idempotent tool failed and the call runs it again after `backoff_ms`
    /// (`retries:`, L5).
    Retry {
        /// The attempt that failed (1 for the first).
        attempt: u32,
        /// Its error kind.
        error_kind: &'static str,
        /// The wait before the next attempt.
        backoff_ms: f64,
    },
    /// The circuit breaker of a tool's source changed state (`circuit_breaker:`, L6): `open`
    /// (calls are refused), `half_open` (one trial call goes through) or `closed` (calls go
    /// through again). The call is the one that made the change.
    Breaker {
        /// The source: `plugin NAME`, or the upstream MCP server's description.
        source: String,
        /// `open`, `half_open` or `closed`.
        state: &'static str,
        /// Failures in a row when it changed.
        failures: u32,
    },
}

/// The outcome as events report it.
#[derive(Debug, Clone, Serialize)]
pub struct OutcomeSummary {
    /// What the model gets.
    pub content: Content,
    /// Whether the call failed.
    pub is_error: bool,
    /// The failure's stable kind, if the call failed.
    pub error_kind: Option<&'static str>,
    /// The failure's message, if the call failed.
    pub error: Option<String>,
    /// Whether the text was cut at its cap.
    pub truncated: bool,
    /// Unicode characters of text kept (marker excluded).
    pub output_chars: u64,
    /// The run's duration, queue time excluded.
    pub duration_ms: f64,
    /// Time spent waiting for a concurrency slot, group lock or plugin thread.
    pub queued_ms: f64,
    /// The stored result's id when the output was offloaded.
    pub result_id: Option<String>,
    /// Secrets masked in the content (`redact:`).
    pub redactions: u64,
    /// What the rules and the before hook decided.
    pub decision: crate::call::Decision,
    /// Bytes of text saved whole to the result store; 0 (and left out) when nothing was.
    #[serde(skip_serializing_if = "is_zero")]
    pub offloaded_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl From<&Outcome> for OutcomeSummary {
    fn from(o: &Outcome) -> Self {
        OutcomeSummary {
            content: o.content.clone(),
            is_error: o.is_error(),
            error_kind: o.error_kind(),
            error: o.error.as_ref().map(|e| e.to_string()),
            truncated: o.truncated,
            output_chars: o.output_chars,
            duration_ms: o.duration.as_secs_f64() * 1000.0,
            queued_ms: o.queued.as_secs_f64() * 1000.0,
            result_id: o.result_id.clone(),
            redactions: o.redactions,
            decision: o.decision.clone(),
            offloaded_bytes: o.offloaded_bytes,
        }
    }
}

impl OutcomeSummary {
    /// The outcome of a call whose future was dropped before it ended (its client cancelled,
    /// its connection closed): `cancelled`, after `duration`.
    pub(crate) fn abandoned(duration: std::time::Duration) -> Self {
        let err = crate::error::CallError::Cancelled;
        let text = crate::call::error_text(&err);
        OutcomeSummary {
            output_chars: text.chars().count() as u64,
            content: crate::call::Content::Text(text),
            is_error: true,
            error_kind: Some(err.kind()),
            error: Some(err.to_string()),
            truncated: false,
            duration_ms: duration.as_secs_f64() * 1000.0,
            queued_ms: 0.0,
            result_id: None,
            redactions: 0,
            decision: crate::call::Decision::default(),
            offloaded_bytes: 0,
        }
    }
}

/// One event.
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
    /// What the call reaches: `tool`, `resource`, `prompt` (A1).
    pub call_kind: CallKind,
    /// The model's id for the call.
    pub call_id: String,
    /// The call's session, if any.
    pub session: Option<String>,
    /// Who made the call; serialized as its name, `principal`.
    #[serde(rename = "principal", serialize_with = "caller_name")]
    pub caller: Arc<Caller>,
    /// The name the model used (D8).
    pub model_name: String,
    /// The real tool name (D8); a resource's URI in normal form, a prompt's name (A1).
    pub tool_name: String,
    /// The arguments as the model sent them.
    pub arguments: String,
}

impl Event {
    pub(crate) fn new(kind: EventKind, inv: &Invocation) -> Self {
        Event {
            kind,
            call_kind: inv.kind,
            call_id: inv.call_id.clone(),
            session: inv.session.as_ref().map(ToString::to_string),
            caller: Arc::clone(&inv.caller),
            model_name: inv.model_name.clone(),
            tool_name: inv.tool_name.clone(),
            arguments: inv.raw_arguments.clone(),
        }
    }

    pub(crate) fn end(inv: &Invocation, outcome: &Outcome) -> Self {
        Event::new(
            EventKind::End {
                outcome: Arc::new(OutcomeSummary::from(outcome)),
            },
            inv,
        )
    }
}

fn caller_name<S: serde::Serializer>(caller: &Arc<Caller>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(caller.name())
}

/// A listener: called with every event, on the thread that emits it.
pub type Listener = Arc<dyn Fn(&Event) + Send + Sync>;

/// The subscribers; cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct Events {
    listeners: Arc<RwLock<Vec<Listener>>>,
}

impl Events {
    /// Adds a listener.
    pub(crate) fn add(&self, listener: Listener) {
        if let Ok(mut l) = self.listeners.write() {
            l.push(listener);
        }
    }

    /// Whether anyone listens.
    pub(crate) fn active(&self) -> bool {
        self.listeners
            .read()
            .map(|l| !l.is_empty())
            .unwrap_or(false)
    }

    /// Delivers an event to every listener. A panicking listener is logged and skipped.
    pub(crate) fn emit(&self, event: &Event) {
        let Ok(listeners) = self.listeners.read() else {
            return;
        };
        for l in listeners.iter() {
            if catch_unwind(AssertUnwindSafe(|| l(event))).is_err() {
                tracing::error!("an event listener panicked; the event was skipped for it");
            }
        }
    }
}
