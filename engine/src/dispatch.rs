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
use toolgate_policy::OnError;

use crate::engine::Engine;
use crate::error::{CallError, TurnError};
use crate::guard::{Outcome, outcome_of};
use crate::history::ToolCall;
use crate::session::Session;

fn turn_error(o: &Outcome) -> Option<TurnError> {
    o.error.as_ref().map(|e| TurnError {
        call_id: o.call_id.clone(),
        tool: o.tool_name.clone(),
        error: e.clone(),
    })
}

pub(crate) async fn dispatch(
    engine: &Engine,
    session: &Session,
    calls: &[ToolCall],
    cancel: &CancellationToken,
) -> Result<Vec<Outcome>, TurnError> {
    let settings = engine.dispatch_settings();
    let fail_fast = settings.on_error == OnError::Fail;
    if settings.sequential || calls.len() <= 1 {
        return sequential(
            engine,
            session,
            calls,
            cancel,
            fail_fast,
            settings.stop_on_error,
        )
        .await;
    }

    let limit = settings.concurrency.map(|n| Arc::new(Semaphore::new(n)));
    let mut tasks = JoinSet::new();
    for (i, call) in calls.iter().enumerate() {
        let mut inv = engine.invocation(session, call, cancel.child_token());
        let engine = engine.clone();
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
            (i, engine.guard().run(inv).await)
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
            // The guard catches panics itself; a join error means the task was aborted or the
            // runtime is shutting down. The call is reported below as cancelled.
            Err(e) => tracing::error!("a tool call task ended abnormally: {e}"),
        }
    }
    let mut out = Vec::with_capacity(calls.len());
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Some(o) => out.push(o),
            None => {
                let inv = engine.invocation(session, &calls[i], cancel.child_token());
                let o = outcome_of(&inv, Err(CallError::Cancelled));
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
    engine: &Engine,
    session: &Session,
    calls: &[ToolCall],
    cancel: &CancellationToken,
    fail_fast: bool,
    stop_on_error: bool,
) -> Result<Vec<Outcome>, TurnError> {
    let mut out = Vec::with_capacity(calls.len());
    let mut failed: Option<String> = None;
    for call in calls {
        let inv = engine.invocation(session, call, cancel.child_token());
        let outcome = match &failed {
            Some(id) if stop_on_error => engine.guard().skip(
                inv,
                CallError::Skipped {
                    failed_call_id: id.clone(),
                },
            ),
            _ => engine.guard().run(inv).await,
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
