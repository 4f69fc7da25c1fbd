//! [`Engine`]: built once from a [`Policy`] (see [`crate::EngineBuilder`]), then used for every
//! call of every session.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolgate_policy::Policy;
use toolgate_store::{IdError, ResultStore, SessionId};

use crate::access::{Access, AccessAliases, CallKind};
use crate::call::Outcome;
use crate::caller::Caller;
use crate::clients::ClientTable;
use crate::dispatch::Dispatcher;
use crate::error::{CallError, DeniedBy, TurnError};
use crate::events::{Event, Events};
use crate::history::{
    ByteEstimator, Message, Offload, OffloadReport, Prepared, TokenEstimator, ToolCall, Turn,
    answer_messages, offload_rounds, pending, repair_for,
};
use crate::registry::{BuiltinTool, Registry};
use crate::search::catalog_docs;
use crate::session::{Session, Sessions};
use crate::settings::{Explanation, SettingsTable};
use crate::tool::ToolSpec;

/// What an engine is made of; assembled by [`crate::EngineBuilder::build`].
pub(crate) struct Parts {
    pub(crate) policy: Policy,
    pub(crate) registry: Arc<Registry>,
    pub(crate) settings: Arc<SettingsTable>,
    pub(crate) dispatcher: Dispatcher,
    pub(crate) events: Events,
    pub(crate) store: Option<Arc<dyn ResultStore>>,
    pub(crate) sessions: Arc<Sessions>,
    /// The index `tool_search` searches, if the policy has one.
    pub(crate) search_index: Option<Arc<toolgate_search::LiveIndex>>,
    /// The aliases of resources and prompts.
    pub(crate) access_aliases: AccessAliases,
    /// What each principal may see (`clients:`, C4); `None`: everything.
    pub(crate) clients: Option<Arc<ClientTable>>,
    /// The audit log, while the policy has one.
    pub(crate) audit: Option<Arc<crate::audit::AuditLog>>,
    /// `limits.requests` (L8), while the policy has any.
    pub(crate) requests: Option<crate::limits::RequestLimits>,
}

/// The engine. Cheap to clone; share one across tasks.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Parts>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("tools", &self.inner.registry.entries().count())
            .finish()
    }
}

impl Engine {
    /// The engine made of `parts`.
    pub(crate) fn from_parts(parts: Parts) -> Self {
        Engine {
            inner: Arc::new(parts),
        }
    }

    /// Writes out what the audit log still buffers (`audit.sink: object_store`) and waits
    /// until it is written or given up (L7); the lines of later calls are not written. Call it
    /// when the program stops: dropping the last clone of the engine does the same. Blocks.
    pub fn close_audit(&self) {
        if let Some(audit) = &self.inner.audit {
            audit.close();
        }
    }

    /// Whether `caller` may send one more HTTP request under the policy's `limits.requests`
    /// (L8), counting it when it may. A host that serves HTTP asks before it handles a request
    /// and answers a refusal itself (`toolgate serve --http`: 429 Too Many Requests with
    /// `Retry-After`, or 503 for [`crate::RequestRefused::Unavailable`]). Always `Ok` without
    /// that key.
    ///
    /// # Errors
    ///
    /// The request is over a limit, or the limits' store failed under `on_store_error: closed`.
    pub async fn admit_request(
        &self,
        caller: &Caller,
    ) -> Result<(), crate::limits::RequestRefused> {
        match &self.inner.requests {
            Some(requests) => requests.admit(caller).await,
            None => Ok(()),
        }
    }

    /// The policy the engine was built from.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// The result store, when reduction is on: for administration (listing, pruning). It is not
    /// scoped to a session; the model's reader is.
    pub fn result_store(&self) -> Option<&Arc<dyn ResultStore>> {
        self.inner.store.as_ref()
    }

    /// Every registered tool, with its source.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// A session handle: `Some(id)` for a named session (its state is shared by every handle of
    /// the same id), `None` for calls without a session.
    ///
    /// # Errors
    ///
    /// The id breaks the store's session-id rule (R7): blank, surrounding whitespace, too long.
    pub fn session(&self, id: Option<&str>) -> Result<Session, IdError> {
        self.inner.sessions.get(id)
    }

    /// The session `id`, whose id was checked when it was made (no second check).
    pub fn session_of(&self, id: &SessionId) -> Session {
        self.inner.sessions.of(Some(id))
    }

    /// Lets go of what this engine keeps in memory for the session `id` (the tools it found);
    /// answers whether it kept anything. A host that saves session state elsewhere (`serve`
    /// keeps it in a store) calls this to bound its memory; the next handle of `id` starts
    /// empty, and a handle still held keeps what it has.
    pub fn forget_session(&self, id: &SessionId) -> bool {
        self.inner.sessions.forget(id)
    }

    /// The tools the model sees now in this session, under their model-facing names (N6): the
    /// ordinary tools (and `tool_search` while search is on) plus the catalog tools the session
    /// has found (S1, S3, S5).
    ///
    /// Under the policy's `clients:`, only the tools the session's caller may see (C4); the
    /// built-in tools, which reach only the session's own state, always.
    pub fn visible_tools(&self, session: &Session) -> Vec<ToolSpec> {
        let caller = session.caller();
        self.inner
            .registry
            .entries()
            .filter(|(name, e)| !e.is_searchable() || session.state().is_revealed(name))
            .filter(|(name, e)| e.is_builtin() || self.sees(caller, CallKind::Tool, name))
            .map(|(_, e)| e.model_spec())
            .collect()
    }

    /// Whether `caller` may see the `kind` named `name` (a real tool name, a resource's URI, a
    /// prompt's `<server>.<prompt>`) under the policy's `clients:` (C4): always without that
    /// section, and always for the local caller. A host asks before it lists resources and
    /// prompts; calls to what the caller may not see are denied by the engine itself.
    pub fn sees(&self, caller: &Caller, kind: CallKind, name: &str) -> bool {
        self.inner
            .clients
            .as_ref()
            .is_none_or(|clients| clients.sees(caller, kind, name))
    }

    /// The `clients:` entries that apply to `caller`, as `<file>:<line>:<col>: clients[i]`
    /// (`explain --as`); empty without that section.
    pub fn client_entries(&self, caller: &Caller) -> Vec<String> {
        self.inner
            .clients
            .as_ref()
            .map(|clients| clients.entries_for(caller))
            .unwrap_or_default()
    }

    /// The documents `tool_search` indexes under this policy (`None` when search is off), for
    /// tools that build or inspect the index outside the engine.
    pub fn search_docs(&self) -> Option<Vec<toolgate_search::ToolDoc>> {
        self.inner
            .policy
            .search
            .as_ref()
            .map(|s| catalog_docs(&self.inner.registry, s))
    }

    /// The index the built-in `tool_search` searches, as it is now: built (or opened from
    /// `search.index_file`) when the engine was built, with the tool vectors of
    /// `search.embeddings` when the policy names a model. `None` without a `search` section
    /// and under `use_model_native` (there is no built-in `tool_search` then). Tools run
    /// a search here exactly as `tool_search` does, without building the index again.
    pub fn search_index(&self) -> Option<Arc<toolgate_search::SearchIndex>> {
        self.inner.search_index.as_ref().map(|live| live.current())
    }

    /// With `use_model_native`, the catalog tools to hand to the provider's own tool search
    /// (for example as deferred tools); otherwise empty (S5).
    pub fn deferred_tools(&self) -> Vec<ToolSpec> {
        match &self.inner.policy.search {
            Some(s) if s.use_model_native => self
                .inner
                .registry
                .entries()
                .filter(|(_, e)| e.is_searchable())
                .map(|(_, e)| e.model_spec())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Which settings apply to a tool, and where each came from (G8): exactly the settings a
    /// call to it runs under, for a caller no override naming principals or groups applies to.
    /// `tool` may be a model-facing name, an alias or a real name.
    pub fn explain(&self, tool: &str) -> Explanation {
        match self.inner.registry.lookup(tool) {
            Some(r) => self.inner.settings.of(r.name).explanation.clone(),
            // D4: an unknown name takes the unknown-tool path, which no rule judges.
            None => self.inner.settings.explain_unknown(tool),
        }
    }

    /// [`Engine::explain`] for the calls of `caller`: with the overrides that name it or its
    /// groups (C8).
    pub fn explain_as(&self, tool: &str, caller: &Caller) -> Explanation {
        match self.inner.registry.lookup(tool) {
            Some(r) => self
                .inner
                .settings
                .of_as(r.name, r.entry.is_builtin(), caller)
                .explanation
                .clone(),
            None => self.inner.settings.explain_unknown(tool),
        }
    }

    /// Warnings about the policy that do not stop it from working: rules that can refuse a
    /// built-in tool a feature relies on (the offload notices tell the model to call
    /// `read_tool_result`; search needs `tool_search`).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for builtin in BuiltinTool::enabled_by(&self.inner.policy) {
            let name = builtin.name();
            if self.inner.registry.get(name).is_none() {
                continue;
            }
            for at in self.inner.settings.resolver().rules_blocking_builtin(name) {
                out.push(format!(
                    "{at} can refuse calls to the built-in {name}, which {} relies on",
                    builtin.feature()
                ));
            }
        }
        out
    }

    /// A channel that receives every event from now on. Nothing is dropped: drain it.
    pub fn subscribe(&self) -> tokio::sync::mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.inner.events.add(Arc::new(move |e: &Event| {
            let _ = tx.send(e.clone());
        }));
        rx
    }

    /// Runs one call through the whole guard.
    pub async fn call(&self, session: &Session, call: &ToolCall) -> Outcome {
        self.inner.dispatcher.call(session, call).await
    }

    /// Reads a resource or gets a prompt through the whole guard (A1): the rules that judge its
    /// kind, the before and after hooks (scripts see `kind`), the timeout, the result cap or
    /// the offload, the events. The host resolved the target ([`Access`]); `cancel` fires the
    /// call's cancellation, as for a turn.
    pub async fn access(
        &self,
        session: &Session,
        access: Access,
        cancel: &CancellationToken,
    ) -> Outcome {
        self.inner
            .dispatcher
            .access(session, access, cancel.child_token())
            .await
    }

    /// The real name of the resource or prompt a client named `name`, when `name` is one of the
    /// policy's aliases (`resources.aliases`, `prompts.aliases`; a resource alias in any
    /// spelling of its URI); `None` otherwise. A host resolves an alias only for a name no
    /// source lists, and hands the engine the real name with the alias
    /// ([`Access::asked_as`]), so events and hooks see both.
    pub fn alias_target(&self, kind: CallKind, name: &str) -> Option<&str> {
        self.inner.access_aliases.target(kind, name)
    }

    /// Whether the rules let `access` through, without running it (A2): for what a host does
    /// on a resource or prompt besides reading or getting it (`resources/subscribe`,
    /// `completion/complete`), so that what the rules refuse to read cannot be watched or
    /// completed either. Hooks do not run and no event is emitted.
    ///
    /// # Errors
    ///
    /// `denied` with the rule's reason; `invalid_arguments` for a URI without a normal form or
    /// arguments that are not a JSON object.
    pub fn judge(&self, session: &Session, access: &Access) -> Result<(), CallError> {
        let args = match access.kind {
            CallKind::Resource => {
                let uri = crate::access::normalize_uri(&access.name).map_err(|e| {
                    CallError::InvalidArguments {
                        tool: crate::error::cut_name(&access.name).into_owned(),
                        reason: format!("the URI has no normal form to judge: {e}"),
                    }
                })?;
                serde_json::json!({ "uri": uri })
            }
            _ => serde_json::from_str(&access.arguments).map_err(|e| {
                CallError::InvalidArguments {
                    tool: access.name.clone(),
                    reason: format!("the arguments are not JSON: {e}"),
                }
            })?,
        };
        let settings = self.inner.settings.of_kind(access.kind, &access.name);
        let (id, caller) = (session.id().map(|s| s.as_str()), session.caller());
        for group in &settings.rules {
            if let Err((refusal, _)) = group.decide(&access.name, &args, id, caller, None) {
                let reason = match refusal {
                    crate::rules::Refusal::Denied(reason) => reason,
                    crate::rules::Refusal::PastDeadline => {
                        "the rules were not judged in time".into()
                    }
                };
                return Err(CallError::Denied {
                    reason,
                    by: DeniedBy::Rule,
                });
            }
        }
        Ok(())
    }

    /// Runs one assistant turn's calls (D1, D6, D7): in parallel unless the policy says
    /// `sequential`, results in the order of the calls. Under `on_error: fail` the first failure
    /// aborts the turn.
    pub async fn dispatch(
        &self,
        session: &Session,
        calls: &[ToolCall],
    ) -> Result<Vec<Outcome>, TurnError> {
        self.dispatch_with_cancel(session, calls, &CancellationToken::new())
            .await
    }

    /// Like [`Engine::dispatch`], with a token that cancels the whole turn.
    pub async fn dispatch_with_cancel(
        &self,
        session: &Session,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> Result<Vec<Outcome>, TurnError> {
        self.inner.dispatcher.dispatch(session, calls, cancel).await
    }

    /// The model-free core of an agent turn: runs the calls of the last assistant message that
    /// have no answer yet ([`crate::history::pending`]) and returns their answers, shaped for the
    /// policy's `name_profile` ([`crate::history::answer_messages`]), with where they go: right
    /// after the message's existing answers. Call ids repeated within the message are made
    /// unique first. [`Turn::apply`] puts them into the history.
    pub async fn run_turn(
        &self,
        session: &Session,
        history: &[Message],
    ) -> Result<Turn, TurnError> {
        let pending = pending(history);
        if pending.calls.is_empty() {
            return Ok(Turn {
                pending,
                messages: Vec::new(),
            });
        }
        let outcomes = self.dispatch(session, &pending.calls).await?;
        let messages = answer_messages(&outcomes, self.inner.policy.name_profile);
        Ok(Turn { pending, messages })
    }

    /// Prepares a history for the next model request, returning a new one and leaving the
    /// caller's untouched (P2): dangling calls get synthetic answers (P1), and with reduction
    /// on, the results of older tool rounds are offloaded once the estimate reaches
    /// `max_context_tokens` (R5, R6).
    pub async fn prepare(&self, session: &Session, history: &[Message]) -> Prepared {
        self.prepare_with(session, history, &ByteEstimator).await
    }

    /// [`Engine::prepare`] with a token estimator of your own (a real tokenizer).
    pub async fn prepare_with(
        &self,
        session: &Session,
        history: &[Message],
        estimator: &dyn TokenEstimator,
    ) -> Prepared {
        let profile = self.inner.policy.name_profile;
        let (repaired, repair) = repair_for(history, profile);
        let (messages, offload) = match (&self.inner.store, &self.inner.policy.reduction) {
            (Some(store), Some(settings)) => {
                let tools = self.visible_tools(session);
                // A history may hold calls of a built-in whose feature is off now; a call is
                // known by the name it was made under.
                let is_builtin = |name: &str| BuiltinTool::named(name).is_some();
                let with = Offload {
                    tools: &tools,
                    session: session.id(),
                    settings,
                    store,
                    estimator,
                    profile,
                    is_builtin: &is_builtin,
                };
                offload_rounds(repaired, with).await
            }
            _ => {
                let tokens = ByteEstimator.tools(&self.visible_tools(session))
                    + repaired.iter().map(|m| estimator.message(m)).sum::<u64>();
                let report = OffloadReport {
                    tokens_before: tokens,
                    tokens_after: tokens,
                    ..Default::default()
                };
                (repaired, report)
            }
        };
        Prepared {
            messages,
            repair,
            offload,
        }
    }
}
