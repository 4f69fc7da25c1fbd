//! The calls of one server in flight, and which of them something the server sends belongs to.
//!
//! A `tools/call` is entered before it is sent (so that nothing the server sends about it can
//! come before its entry) and leaves when its answer came or toolgate stopped waiting.
//!
//! A request from the server (`sampling/createMessage`, ...) belongs to a call by one of two
//! ways, the first that works:
//! 1. **Its stream.** Over Streamable HTTP a server sends the requests of a call on the
//!    response stream of that call's POST, and the transport says which request that was
//!    (SEP-2260). Exact, whatever else runs.
//! 2. **Who is waiting.** Over stdio nothing on the wire ties a request to a call, and a
//!    server may use its standalone stream over HTTP too. When every call of the server in
//!    flight was made by the same client, the request is that client's (charged to the
//!    oldest of its calls). When calls of several clients are in flight it could be any of
//!    theirs: it is [`Attribution::Ambiguous`] and refused, never guessed, so that no client
//!    is ever asked, or shown, what another client's call wanted.
// Sampling, roots and logging are deprecated by SEP-2577 (the 2026-07-28 revision asks for
// input in results instead), but they are how every revision with sessions works, and this
// passes them on.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::model::{ProgressToken, RequestId};
use rmcp::service::InboundStreamOrigin;
use tokio_util::sync::CancellationToken;
use toolgate::tool::ToolContext;

use super::callers::Caller;

/// One call in flight.
struct Entry {
    /// The `tools/call` request's id and progress token, once sent.
    sent: Option<(RequestId, ProgressToken)>,
    ctx: ToolContext,
    caller: Option<Arc<dyn Caller>>,
    /// Sampling requests charged to the call so far.
    sampled: u32,
}

/// The calls of one server in flight.
#[derive(Default)]
pub(crate) struct InFlight {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// By the order they were entered in.
    next: u64,
    calls: HashMap<u64, Entry>,
    /// Progress tokens to entries.
    tokens: HashMap<ProgressToken, u64>,
}

/// Which call something belongs to.
pub(crate) enum Attribution {
    /// This call (its entry's number), made by this client, cancelled by this token.
    Call {
        seq: u64,
        caller: Arc<dyn Caller>,
        cancel: CancellationToken,
    },
    /// A call made for no client (`toolgate call`).
    NoClient,
    /// No call of the server is in flight.
    NoCall,
    /// Calls of this many clients are in flight; it could be any of theirs.
    Ambiguous(usize),
}

impl InFlight {
    fn state(&self) -> MutexGuard<'_, State> {
        // Plain maps, consistent after any panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Enters a call about to be sent; it leaves when the returned number is passed to
    /// [`leave`](Self::leave).
    pub(crate) fn enter(&self, ctx: ToolContext, caller: Option<Arc<dyn Caller>>) -> u64 {
        let mut state = self.state();
        let seq = state.next;
        state.next += 1;
        state.calls.insert(
            seq,
            Entry {
                sent: None,
                ctx,
                caller,
                sampled: 0,
            },
        );
        seq
    }

    /// The call `seq` was sent as request `id` with progress `token`.
    pub(crate) fn sent(&self, seq: u64, id: RequestId, token: ProgressToken) {
        let mut state = self.state();
        if let Some(entry) = state.calls.get_mut(&seq) {
            entry.sent = Some((id, token.clone()));
            state.tokens.insert(token, seq);
        }
    }

    pub(crate) fn leave(&self, seq: u64) {
        let mut state = self.state();
        if let Some(Entry {
            sent: Some((_, token)),
            ..
        }) = state.calls.remove(&seq)
        {
            state.tokens.remove(&token);
        }
    }

    /// The context and caller of the call whose progress token is `token`.
    pub(crate) fn by_progress(
        &self,
        token: &ProgressToken,
    ) -> Option<(ToolContext, Option<Arc<dyn Caller>>)> {
        let state = self.state();
        let entry = state.calls.get(state.tokens.get(token)?)?;
        Some((entry.ctx.clone(), entry.caller.clone()))
    }

    /// Which call a request or notification that arrived by `origin` (none: the transport
    /// cannot tell) belongs to; see the module.
    pub(crate) fn attribute(&self, origin: Option<&InboundStreamOrigin>) -> Attribution {
        let state = self.state();
        if let Some(InboundStreamOrigin::OutboundRequest(id)) = origin {
            let sent_as = state
                .calls
                .iter()
                .find(|(_, e)| e.sent.as_ref().is_some_and(|(sent, _)| sent == id));
            if let Some((seq, entry)) = sent_as {
                return attribution(*seq, entry);
            }
        }
        let mut oldest: Option<(u64, &Entry)> = None;
        let mut clients: Vec<Option<u64>> = Vec::new();
        for (seq, entry) in &state.calls {
            let client = entry.caller.as_ref().map(|c| c.client());
            if !clients.contains(&client) {
                clients.push(client);
            }
            if oldest.is_none_or(|(o, _)| *seq < o) {
                oldest = Some((*seq, entry));
            }
        }
        match (clients.len(), oldest) {
            (0, _) | (_, None) => Attribution::NoCall,
            (1, Some((seq, entry))) => attribution(seq, entry),
            (n, _) => Attribution::Ambiguous(n),
        }
    }

    /// Charges a sampling request to the call `seq`; answers how many it has made with this
    /// one, or `Err` with how many it had made when that is `cap` already.
    pub(crate) fn charge_sampling(&self, seq: u64, cap: u32) -> Result<u32, u32> {
        let mut state = self.state();
        let Some(entry) = state.calls.get_mut(&seq) else {
            return Ok(1);
        };
        if entry.sampled >= cap {
            return Err(entry.sampled);
        }
        entry.sampled += 1;
        Ok(entry.sampled)
    }
}

fn attribution(seq: u64, entry: &Entry) -> Attribution {
    match &entry.caller {
        Some(caller) => Attribution::Call {
            seq,
            caller: caller.clone(),
            cancel: entry.ctx.cancel.clone(),
        },
        None => Attribution::NoClient,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::ErrorData;
    use rmcp::model::{
        ClientResult, LoggingMessageNotificationParam, NumberOrString, ProgressNotificationParam,
        ServerRequest,
    };
    use toolgate::tool::BoxFuture;

    struct Client(u64);

    impl Caller for Client {
        fn client(&self) -> u64 {
            self.0
        }
        fn request(
            &self,
            _request: ServerRequest,
        ) -> BoxFuture<'static, Result<ClientResult, ErrorData>> {
            Box::pin(async { Err(ErrorData::internal_error("not in this test", None)) })
        }
        fn progress(&self, _progress: &ProgressNotificationParam) {}
        fn log(&self, _message: LoggingMessageNotificationParam) {}
    }

    fn client(n: u64) -> Option<Arc<dyn Caller>> {
        Some(Arc::new(Client(n)))
    }

    fn id(n: i64) -> RequestId {
        NumberOrString::Number(n)
    }

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    fn client_of(a: Attribution) -> Option<u64> {
        match a {
            Attribution::Call { caller, .. } => Some(caller.client()),
            _ => None,
        }
    }

    #[test]
    fn a_request_on_a_calls_stream_is_that_calls_whatever_else_runs() {
        let calls = InFlight::default();
        let a = calls.enter(ToolContext::detached("a"), client(1));
        let b = calls.enter(ToolContext::detached("b"), client(2));
        calls.sent(a, id(10), token(10));
        calls.sent(b, id(11), token(11));
        let origin = InboundStreamOrigin::OutboundRequest(id(11));
        assert_eq!(client_of(calls.attribute(Some(&origin))), Some(2));
    }

    #[test]
    fn a_request_without_a_stream_is_the_one_waiting_clients() {
        let calls = InFlight::default();
        let first = calls.enter(ToolContext::detached("a"), client(7));
        calls.enter(ToolContext::detached("b"), client(7));
        match calls.attribute(None) {
            Attribution::Call { seq, caller, .. } => {
                assert_eq!((seq, caller.client()), (first, 7), "the oldest call");
            }
            _ => panic!("not attributed"),
        }
    }

    #[test]
    fn a_request_without_a_stream_while_two_clients_wait_is_ambiguous() {
        let calls = InFlight::default();
        calls.enter(ToolContext::detached("a"), client(1));
        calls.enter(ToolContext::detached("b"), client(2));
        let unassociated = InboundStreamOrigin::Unassociated;
        assert!(matches!(
            calls.attribute(Some(&unassociated)),
            Attribution::Ambiguous(2)
        ));
        // A stream naming a request no call was sent as does not pick one either.
        let unknown = InboundStreamOrigin::OutboundRequest(id(99));
        assert!(matches!(
            calls.attribute(Some(&unknown)),
            Attribution::Ambiguous(2)
        ));
    }

    #[test]
    fn nothing_in_flight_and_no_client_are_told_apart() {
        let calls = InFlight::default();
        assert!(matches!(calls.attribute(None), Attribution::NoCall));
        let seq = calls.enter(ToolContext::detached("cli"), None);
        assert!(matches!(calls.attribute(None), Attribution::NoClient));
        calls.leave(seq);
        assert!(matches!(calls.attribute(None), Attribution::NoCall));
    }

    #[test]
    fn sampling_is_charged_per_call_up_to_the_cap() {
        let calls = InFlight::default();
        let a = calls.enter(ToolContext::detached("a"), client(1));
        let b = calls.enter(ToolContext::detached("b"), client(1));
        assert_eq!(calls.charge_sampling(a, 2), Ok(1));
        assert_eq!(calls.charge_sampling(a, 2), Ok(2));
        assert_eq!(calls.charge_sampling(a, 2), Err(2));
        assert_eq!(
            calls.charge_sampling(b, 2),
            Ok(1),
            "another call has its own"
        );
    }

    #[test]
    fn progress_finds_its_call_until_it_leaves() {
        let calls = InFlight::default();
        let a = calls.enter(ToolContext::detached("a"), client(1));
        assert!(calls.by_progress(&token(5)).is_none(), "not sent yet");
        calls.sent(a, id(5), token(5));
        let (ctx, _) = calls.by_progress(&token(5)).expect("found");
        assert_eq!(ctx.call_id, "a");
        calls.leave(a);
        assert!(calls.by_progress(&token(5)).is_none());
    }
}
