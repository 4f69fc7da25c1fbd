//! The small layers of the guard and its endpoint.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use super::{CallResult, Invocation, Layer, Next, Reply, panic_message};
use crate::error::{CallError, DeniedBy, cut_name};
use crate::events::{Event, EventKind, Events};
use crate::script::{CallView, OutcomeView, ScriptSet, Verdict};
use crate::tool::{BoxFuture, ToolContext, ToolErrorKind, ToolOutput};
use futures::FutureExt;

fn view(inv: &Invocation) -> CallView<'_> {
    CallView {
        tool: &inv.tool_name,
        model_name: &inv.model_name,
        args: &inv.args,
        call_id: &inv.call_id,
        session: inv.session.as_deref(),
    }
}

/// Runs the `after` script on the final outcome (G6, G7). Panics from inside the chain are
/// turned into `tool_execution_panic` here, so the hook sees them too.
pub struct AfterHookLayer {
    pub scripts: Arc<ScriptSet>,
    pub events: Events,
}

impl Layer for AfterHookLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let result = match AssertUnwindSafe(next.run(inv)).catch_unwind().await {
                Ok(r) => r,
                Err(panic) => Err(CallError::ToolExecutionPanic {
                    tool: inv.tool_name.clone(),
                    message: panic_message(&*panic),
                }),
            };
            let (chars, truncated) = match &result {
                Ok(r) => (r.chars, r.truncated),
                Err(e) => (super::error_text(e).chars().count() as u64, false),
            };
            let err = result.as_ref().err();
            let outcome = OutcomeView {
                duration_ms: inv.started.elapsed().as_secs_f64() * 1000.0,
                queued_ms: inv.queued.as_secs_f64() * 1000.0,
                is_error: err.is_some(),
                error_kind: err.map(CallError::kind),
                error: err.map(|e| e.to_string()),
                chars,
                truncated,
            };
            if let Err(e) = self.scripts.after(view(inv), &outcome).await {
                tracing::warn!("after hook failed: {e}");
                if self.events.active() {
                    let mut ev = Event::new(EventKind::Start, inv);
                    ev.kind = EventKind::Error {
                        message: e.to_string(),
                        kind: e.kind(),
                    };
                    self.events.emit(ev);
                }
            }
            result
        })
    }
}

/// The call's deadline (G2): it started with the guard and covers every layer inside. At the
/// deadline the call's cancellation token fires and the inner future is dropped, so a result
/// that arrives later is discarded.
pub struct TimeoutLayer;

impl Layer for TimeoutLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let (Some(deadline), Some(after)) = (inv.deadline, inv.settings.timeout) else {
                return next.run(inv).await;
            };
            let result = tokio::time::timeout_at(deadline.into(), next.run(&mut *inv)).await;
            match result {
                Ok(r) => r,
                Err(_) => {
                    inv.cancel.cancel();
                    Err(CallError::Timeout { after })
                }
            }
        })
    }
}

/// Argument aliases of each tool: real tool name -> (alias -> real argument name).
pub type ArgAliases = std::collections::HashMap<String, BTreeMap<String, String>>;

/// Parses the arguments and renames argument aliases (D2): at the top level of a JSON object,
/// only when the real name is absent. Empty arguments mean `{}`.
pub struct ArgumentsLayer {
    pub aliases: ArgAliases,
}

impl ArgumentsLayer {
    pub fn parse(raw: &str, tool: &str) -> Result<serde_json::Value, CallError> {
        if raw.trim().is_empty() {
            return Ok(serde_json::Value::Object(Default::default()));
        }
        let v: serde_json::Value =
            serde_json::from_str(raw).map_err(|e| CallError::InvalidArguments {
                tool: tool.to_string(),
                reason: format!("the arguments are not valid JSON ({e}); send a JSON object"),
            })?;
        if !v.is_object() {
            return Err(CallError::InvalidArguments {
                tool: tool.to_string(),
                reason: format!("the arguments must be a JSON object, not {}", json_type(&v)),
            });
        }
        Ok(v)
    }

    pub fn rename(args: &mut serde_json::Value, aliases: &BTreeMap<String, String>) {
        let Some(obj) = args.as_object_mut() else {
            return;
        };
        if aliases.is_empty() {
            return;
        }
        let present: Vec<String> = obj.keys().cloned().collect();
        for key in present {
            if let Some(real) = aliases.get(&key)
                && !obj.contains_key(real)
                && let Some(v) = obj.remove(&key)
            {
                obj.insert(real.clone(), v);
            }
        }
    }
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

impl Layer for ArgumentsLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            // An unknown name is the model's, of any length: the message echoes it cut.
            inv.args = ArgumentsLayer::parse(&inv.raw_arguments, &cut_name(&inv.tool_name))?;
            if inv.is_known()
                && let Some(aliases) = self.aliases.get(&inv.tool_name)
            {
                ArgumentsLayer::rename(&mut inv.args, aliases);
            }
            next.run(inv).await
        })
    }
}

/// The argument rewrite script (D2, D3). It sees the real tool name and the renamed arguments;
/// its output replaces the arguments. A failure fails this call only.
pub struct RewriteLayer {
    pub scripts: Arc<ScriptSet>,
}

impl Layer for RewriteLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            if inv.is_known()
                && let Some(args) = self
                    .scripts
                    .rewrite(view(inv), inv.deadline, &inv.cancel)
                    .await
                    .map_err(|e| past_deadline(inv, e))?
            {
                inv.args = args;
            }
            next.run(inv).await
        })
    }
}

/// A script stopped because the call's deadline passed is a timeout, not a policy failure.
fn past_deadline(inv: &Invocation, err: CallError) -> CallError {
    match (inv.deadline, inv.settings.timeout) {
        (Some(deadline), Some(after)) if std::time::Instant::now() >= deadline => {
            inv.cancel.cancel();
            CallError::Timeout { after }
        }
        _ => err,
    }
}

/// The before script (G1): may deny the call with a reason.
pub struct BeforeLayer {
    pub scripts: Arc<ScriptSet>,
}

impl Layer for BeforeLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let verdict = self
                .scripts
                .before(view(inv), inv.deadline, &inv.cancel)
                .await
                .map_err(|e| past_deadline(inv, e))?;
            match verdict {
                Verdict::Allow => next.run(inv).await,
                Verdict::Deny(reason) => Err(CallError::Denied {
                    reason,
                    by: DeniedBy::Script,
                }),
            }
        })
    }
}

/// The lock of one `sequential_group`.
///
/// A member holds the lock until it really returns: a plugin call that ignores its cancellation
/// keeps the lock on its own thread after its timeout. While such an abandoned member still
/// runs, the other members fail at once with `overloaded` instead of queueing behind it.
#[derive(Default)]
pub struct GroupLock {
    lock: Arc<tokio::sync::Mutex<()>>,
    state: std::sync::Mutex<GroupState>,
    /// Wakes the waiters when the holder is abandoned.
    abandoned: tokio::sync::Notify,
}

impl std::fmt::Debug for GroupLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupLock")
            .field("abandoned", &self.is_abandoned())
            .finish()
    }
}

#[derive(Default)]
struct GroupState {
    /// Which hold has the lock (each hold gets a fresh number).
    held_by: Option<u64>,
    next: u64,
    /// The holder's call ended (timeout, cancellation) while it still runs.
    abandoned: bool,
}

impl GroupLock {
    fn state(&self) -> std::sync::MutexGuard<'_, GroupState> {
        // The state is a few plain fields, valid after any panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_abandoned(&self) -> bool {
        self.state().abandoned
    }

    /// Marks the hold `id` abandoned if it still has the lock.
    fn abandon(&self, id: u64) {
        let mut st = self.state();
        if st.held_by == Some(id) {
            st.abandoned = true;
            drop(st);
            self.abandoned.notify_waiters();
        }
    }
}

/// The lock of a group, held by one call. Dropping it releases the lock.
struct GroupHold {
    group: Arc<GroupLock>,
    id: u64,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl GroupHold {
    fn new(group: Arc<GroupLock>, guard: tokio::sync::OwnedMutexGuard<()>) -> Self {
        let id = {
            let mut st = group.state();
            st.next += 1;
            st.held_by = Some(st.next);
            st.abandoned = false;
            st.next
        };
        GroupHold {
            group,
            id,
            _guard: guard,
        }
    }
}

impl Drop for GroupHold {
    fn drop(&mut self) {
        // Cleared before the guard field releases the lock.
        let mut st = self.group.state();
        if st.held_by == Some(self.id) {
            st.held_by = None;
            st.abandoned = false;
        }
    }
}

/// Calls of the same `sequential_group` never run at the same time, not even a call that
/// ignored its timeout and still runs. The wait for the lock is queue time: the call's timeout
/// starts once it has the lock (G2), so this layer sits outside the timeout layer.
pub struct GroupLayer;

impl GroupLayer {
    async fn acquire(
        group: &Arc<GroupLock>,
        name: &str,
        inv: &Invocation,
    ) -> Result<GroupHold, CallError> {
        let overloaded = || CallError::Overloaded {
            tool: inv.tool_name.clone(),
            message: format!(
                "its sequential group {name:?} is still held by a call that passed its timeout \
                 and ignores cancellation; try again later"
            ),
        };
        loop {
            let notified = group.abandoned.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Ok(guard) = group.lock.clone().try_lock_owned() {
                return Ok(GroupHold::new(group.clone(), guard));
            }
            if group.is_abandoned() {
                return Err(overloaded());
            }
            tokio::select! {
                guard = group.lock.clone().lock_owned() => {
                    return Ok(GroupHold::new(group.clone(), guard));
                }
                () = &mut notified => continue,
                () = inv.cancel.cancelled() => return Err(CallError::Cancelled),
            }
        }
    }
}

impl Layer for GroupLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let Some((name, group)) = inv.settings.sequential_group.clone() else {
                return next.run(inv).await;
            };
            let asked = std::time::Instant::now();
            let hold = GroupLayer::acquire(&group, &name, inv).await?;
            let id = hold.id;
            inv.start_after_wait(asked.elapsed());
            let hold: crate::tool::Hold = Arc::new(hold);
            let alive = Arc::downgrade(&hold);
            inv.hold = Some(hold);
            let result = next.run(inv).await;
            // Released here unless the tool still holds it on its own thread.
            inv.hold = None;
            if alive.strong_count() > 0 {
                group.abandon(id);
            }
            result
        })
    }
}

/// Names suggested for an unknown name.
pub type Suggest = Arc<dyn Fn(&str) -> Vec<String> + Send + Sync>;

/// The end of the chain: the tool, or the unknown-tool answer (D4).
pub struct Endpoint {
    pub scripts: Arc<ScriptSet>,
    pub suggest: Suggest,
    /// Appended to the default unknown-tool message (for example how to search).
    pub unknown_hint: String,
}

impl Endpoint {
    pub(crate) fn call<'b>(&'b self, inv: &'b mut Invocation) -> BoxFuture<'b, CallResult> {
        Box::pin(async move {
            let Some(tool) = inv.tool.clone() else {
                return self.unknown(inv).await;
            };
            let ctx = ToolContext {
                session: inv.session.clone(),
                call_id: inv.call_id.clone(),
                model_name: inv.model_name.clone(),
                cancel: inv.cancel.clone(),
                progress: inv.progress.clone(),
                // The group layer keeps its own handle until the future ends; an adapter that
                // runs the call on a thread keeps this one there until the call returns.
                hold: inv.hold.clone(),
            };
            let args = std::mem::take(&mut inv.args);
            let started = std::panic::catch_unwind(AssertUnwindSafe(|| tool.call(ctx, args)));
            let fut = match started {
                Ok(f) => f,
                Err(panic) => {
                    return Err(CallError::ToolExecutionPanic {
                        tool: inv.tool_name.clone(),
                        message: panic_message(&*panic),
                    });
                }
            };
            match AssertUnwindSafe(fut).catch_unwind().await {
                Ok(Ok(output)) => Ok(Reply::new(output)),
                Ok(Err(e)) => Err(match e.kind {
                    ToolErrorKind::Failed => CallError::ToolFailed {
                        tool: inv.tool_name.clone(),
                        message: e.message,
                    },
                    ToolErrorKind::InvalidArguments => CallError::InvalidArguments {
                        tool: inv.tool_name.clone(),
                        reason: e.message,
                    },
                    ToolErrorKind::Panicked => CallError::ToolExecutionPanic {
                        tool: inv.tool_name.clone(),
                        message: e.message,
                    },
                    ToolErrorKind::Overloaded => CallError::Overloaded {
                        tool: inv.tool_name.clone(),
                        message: e.message,
                    },
                    ToolErrorKind::Coded(kind) => CallError::Store {
                        tool: inv.tool_name.clone(),
                        kind,
                        message: e.message,
                    },
                }),
                Err(panic) => Err(CallError::ToolExecutionPanic {
                    tool: inv.tool_name.clone(),
                    message: panic_message(&*panic),
                }),
            }
        })
    }

    async fn unknown(&self, inv: &mut Invocation) -> CallResult {
        let suggestions = (self.suggest)(&inv.model_name);
        let view = view(inv);
        if let Some(text) = self
            .scripts
            .unknown_tool(view, &suggestions, inv.deadline, &inv.cancel)
            .await
            .map_err(|e| past_deadline(inv, e))?
        {
            return Ok(Reply::new(ToolOutput::Text(text)));
        }
        let mut message = format!("unknown tool {:?}.", cut_name(&inv.model_name));
        if !suggestions.is_empty() {
            message.push_str(&format!(" Did you mean: {}?", suggestions.join(", ")));
        }
        message.push_str(" Call only the tools you were given");
        message.push_str(&self.unknown_hint);
        message.push('.');
        Err(CallError::UnknownTool {
            name: inv.model_name.clone(),
            suggestions,
            message,
        })
    }
}
