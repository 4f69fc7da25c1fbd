//! One assistant turn (D1, D5-D7).
//!
//! * Parallel by default: every call runs as its own task (so CPU-bound and blocking tools do
//!   not hold each other up), at most `concurrency` at once; results come back in call order.
//!   The wait for a slot is reported as the call's queue time and is not part of its timeout.
//! * `sequential: true`: one by one, in order; with `stop_on_error`, the calls after a failure
//!   are skipped, each with an error result saying why.
//! * `on_error: fail`: the first failure aborts the turn with a [`TurnError`]; the other calls
//!   are cancelled. `on_error: model` (the default): every call gets its own result.

use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use toolgate_policy::{DispatchSettings, OnError};

use crate::access::Access;
use crate::call::{Invocation, Outcome, Target};
use crate::error::{CallError, TurnError};
use crate::guard::Guard;
use crate::history::ToolCall;
use crate::registry::Registry;
use crate::session::Session;
use crate::settings::SettingsTable;

/// What running calls takes: the guard, the tools and their settings, and how a turn runs.
pub(crate) struct Dispatcher {
    guard: Arc<Guard>,
    registry: Arc<Registry>,
    settings: Arc<SettingsTable>,
    turn: DispatchSettings,
}

fn turn_error(o: &Outcome) -> Option<TurnError> {
    o.error.as_ref().map(|e| TurnError {
        call_id: o.call_id.clone(),
        tool: o.tool_name.clone(),
        error: e.clone(),
    })
}

impl Dispatcher {
    pub(crate) fn new(
        guard: Guard,
        registry: Arc<Registry>,
        settings: Arc<SettingsTable>,
        turn: DispatchSettings,
    ) -> Self {
        Dispatcher {
            guard: Arc::new(guard),
            registry,
            settings,
            turn,
        }
    }

    /// A call of the model, resolved: its tool (none for an unknown name) and settings.
    fn invocation(
        &self,
        session: &Session,
        call: &ToolCall,
        cancel: CancellationToken,
    ) -> Invocation {
        let model_name = call.function.name.clone();
        let (target, settings) = match self.registry.resolve(&model_name) {
            Some(r) => (
                Some(Target {
                    name: r.name.to_string(),
                    tool: r.entry.tool().clone(),
                    builtin: r.entry.is_builtin(),
                    output_check: r.entry.output_check().cloned(),
                }),
                self.settings
                    .of_as(r.name, r.entry.is_builtin(), session.caller()),
            ),
            None => (None, self.settings.of_unknown(&model_name)),
        };
        Invocation::new(
            call.id.clone(),
            model_name,
            target,
            call.function.arguments.clone(),
            session,
            settings,
            cancel,
        )
    }

    /// Runs one call through the whole guard.
    pub(crate) async fn call(&self, session: &Session, call: &ToolCall) -> Outcome {
        let inv = self.invocation(session, call, CancellationToken::new());
        self.guard.run(inv).await
    }

    /// Runs one read of a resource or get of a prompt through the whole guard (A1).
    pub(crate) async fn access(
        &self,
        session: &Session,
        access: Access,
        cancel: CancellationToken,
    ) -> Outcome {
        let Access {
            kind,
            call_id,
            asked,
            name,
            arguments,
            target,
        } = access;
        let settings = self.settings.of_kind(kind, &name);
        // A resource or a prompt declares no output schema.
        let target = target.map(|tool| Target {
            name: name.clone(),
            tool,
            builtin: false,
            output_check: None,
        });
        let mut inv = Invocation::new(call_id, asked, target, arguments, session, settings, cancel);
        inv.kind = kind;
        inv.tool_name = name;
        self.guard.run(inv).await
    }

    /// Runs one turn's calls (see the module docs).
    pub(crate) async fn dispatch(
        &self,
        session: &Session,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> Result<Vec<Outcome>, TurnError> {
        let settings = &self.turn;
        let fail_fast = settings.on_error == OnError::Fail;
        if settings.sequential || calls.len() <= 1 {
            return self
                .sequential(session, calls, cancel, fail_fast, settings.stop_on_error)
                .await;
        }

        let limit = settings.concurrency.map(|n| Arc::new(Semaphore::new(n)));
        let mut tasks = JoinSet::new();
        for (i, call) in calls.iter().enumerate() {
            let mut inv = self.invocation(session, call, cancel.child_token());
            let guard = self.guard.clone();
            let limit = limit.clone();
            tasks.spawn(async move {
                // The wait for a slot is queue time: the call's timeout starts after it (G2).
                let _permit = match &limit {
                    Some(s) => {
                        let asked = std::time::Instant::now();
                        let permit = s.clone().acquire_owned().await.ok();
                        inv.start_after_wait(asked.elapsed());
                        permit
                    }
                    None => None,
                };
                (i, guard.run(inv).await)
            });
        }
        let mut results: Vec<Option<Outcome>> = (0..calls.len()).map(|_| None).collect();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok((i, outcome)) => {
                    if fail_fast && let Some(err) = turn_error(&outcome) {
                        cancel.cancel();
                        tasks.abort_all();
                        return Err(err);
                    }
                    results[i] = Some(outcome);
                }
                // The guard catches panics itself; a join error means the task was aborted or
                // the runtime is shutting down. The call is reported below as cancelled.
                Err(e) => tracing::error!("a tool call task ended abnormally: {e}"),
            }
        }
        let mut out = Vec::with_capacity(calls.len());
        for (i, r) in results.into_iter().enumerate() {
            match r {
                Some(o) => out.push(o),
                None => {
                    let inv = self.invocation(session, &calls[i], cancel.child_token());
                    let o = inv.outcome(Err(CallError::Cancelled));
                    if fail_fast && let Some(err) = turn_error(&o) {
                        return Err(err);
                    }
                    out.push(o);
                }
            }
        }
        Ok(out)
    }

    async fn sequential(
        &self,
        session: &Session,
        calls: &[ToolCall],
        cancel: &CancellationToken,
        fail_fast: bool,
        stop_on_error: bool,
    ) -> Result<Vec<Outcome>, TurnError> {
        let mut out = Vec::with_capacity(calls.len());
        let mut failed: Option<String> = None;
        for call in calls {
            let inv = self.invocation(session, call, cancel.child_token());
            let outcome = match &failed {
                Some(id) if stop_on_error => self.guard.skip(
                    inv,
                    CallError::Skipped {
                        failed_call_id: id.clone(),
                    },
                ),
                _ => self.guard.run(inv).await,
            };
            if fail_fast && let Some(err) = turn_error(&outcome) {
                return Err(err);
            }
            if outcome.is_error() && failed.is_none() {
                failed = Some(outcome.call_id.clone());
            }
            out.push(outcome);
        }
        Ok(out)
    }
}
