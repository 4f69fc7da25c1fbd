//! [`Engine`]: built once from a [`Policy`], then used for every call of every session.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use toolgate_policy::{Hook, Policy};

use crate::error::{At, BuildError, TurnError};
use crate::events::{Event, Events, Listener};
use crate::guard::{
    AfterHookLayer, ArgumentsLayer, BeforeLayer, Endpoint, GroupLayer, Guard, Invocation, Layer,
    LimitLayer, Outcome, RewriteLayer, RulesLayer, TimeoutLayer,
};
use crate::history::{ByteEstimator, Message, Prepared, TokenEstimator, ToolCall, Turn};
use crate::registry::{Registry, ToolSource};
use crate::script::{ScriptLimits, ScriptSet};
use crate::session::{Session, SessionError};
use crate::settings::{Explanation, SettingsResolver, ToolSettings};
use crate::tool::{Tool, ToolSpec};
use toolgate_store::ResultStore;

/// Builds an [`Engine`]: the policy, plus native tools, listeners and extra layers.
pub struct EngineBuilder {
    policy: Policy,
    store: Option<Arc<dyn ResultStore>>,
    default_store_url: Option<String>,
    natives: Vec<(Arc<dyn Tool>, bool)>,
    /// Tools of named sources ([`EngineBuilder::tools_from`]), with their source and whether
    /// they are searchable.
    external: Vec<(ToolSource, Arc<dyn Tool>, bool)>,
    listeners: Vec<Listener>,
    layers: Vec<Arc<dyn Layer>>,
    script_limits: ScriptLimits,
}

impl EngineBuilder {
    pub fn new(policy: Policy) -> Self {
        EngineBuilder {
            policy,
            store: None,
            default_store_url: None,
            natives: Vec::new(),
            external: Vec::new(),
            listeners: Vec::new(),
            layers: Vec::new(),
            script_limits: ScriptLimits::default(),
        }
    }

    /// Registers a native tool, always visible.
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.natives.push((Arc::new(tool), false));
        self
    }

    /// Registers a native tool already in an `Arc`.
    pub fn tool_arc(mut self, tool: Arc<dyn Tool>) -> Self {
        self.natives.push((tool, false));
        self
    }

    /// Registers the tools of one named source that the host program brings (the tools of an
    /// upstream MCP server, say), checked like every other tool (N1-N3, N6). `source` names
    /// them in errors and summaries ("MCP server time (stdio: mcp-server-time)"); `searchable`
    /// puts them in the search catalog behind `tool_search` (S1) instead of always showing them.
    pub fn tools_from(
        mut self,
        source: impl Into<String>,
        searchable: bool,
        tools: impl IntoIterator<Item = Arc<dyn Tool>>,
    ) -> Self {
        let source = ToolSource::External {
            name: source.into(),
        };
        for tool in tools {
            self.external.push((source.clone(), tool, searchable));
        }
        self
    }

    /// Listens to every event (E1).
    pub fn on_event(mut self, f: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        self.listeners.push(Arc::new(f));
        self
    }

    /// Adds a layer of your own, run after the before hook, just before the tool.
    pub fn layer(mut self, layer: impl Layer) -> Self {
        self.layers.push(Arc::new(layer));
        self
    }

    /// The result store for reduction, instead of the one the policy names. Any implementation
    /// works; the id and session rules (R7) are enforced around it.
    pub fn result_store(mut self, store: impl ResultStore) -> Self {
        self.store = Some(Arc::new(toolgate_store::Validated::new(store)));
        self
    }

    /// The store URL used when reduction is on and the policy names no store (the library's
    /// own default is `memory://`; the command line passes a folder of the user's).
    pub fn default_store_url(mut self, url: impl Into<String>) -> Self {
        self.default_store_url = Some(url.into());
        self
    }

    pub fn script_limits(mut self, limits: ScriptLimits) -> Self {
        self.script_limits = limits;
        self
    }

    /// Loads plugins, checks every name and alias, compiles the scripts and assembles the guard.
    pub fn build(self) -> Result<Engine, BuildError> {
        let policy = self.policy;
        let mut registry = Registry::new(policy.name_profile);
        for (tool, searchable) in self.natives {
            registry.insert(tool, ToolSource::Native, searchable)?;
        }
        for (source, tool, searchable) in self.external {
            registry.insert(tool, source, searchable)?;
        }
        // Every plugin is tried, so one build reports all that do not load (each at its entry).
        let mut plugin_errors = Vec::new();
        for spec in &policy.plugins {
            let plugin = match crate::plugin::load(spec) {
                Ok(plugin) => plugin,
                Err(e) => {
                    plugin_errors.push(e);
                    continue;
                }
            };
            let source = ToolSource::Plugin {
                plugin: plugin.name().to_string(),
                path: plugin.path().display().to_string(),
            };
            for tool in crate::plugin::tools(&plugin, spec.max_threads) {
                let inserted = registry
                    .insert(tool, source.clone(), spec.searchable)
                    .map_err(|e| match e {
                        BuildError::InvalidName {
                            name,
                            source_desc,
                            reason,
                            ..
                        } => BuildError::InvalidName {
                            name,
                            source_desc,
                            reason,
                            at: At(spec.position.clone()),
                        },
                        BuildError::NameCollision {
                            model_name,
                            profile,
                            first,
                            second,
                            ..
                        } => BuildError::NameCollision {
                            model_name,
                            profile,
                            first,
                            second,
                            at: At(spec.position.clone()),
                        },
                        other => other,
                    });
                if let Err(e) = inserted {
                    plugin_errors.push(e);
                    break;
                }
            }
        }
        match plugin_errors.len() {
            0 => {}
            1 => return Err(plugin_errors.remove(0)),
            _ => {
                return Err(BuildError::Several {
                    errors: plugin_errors,
                });
            }
        }
        if let Some(search) = &policy.search {
            for file in &search.catalogs {
                // Through the policy crate's reader: a catalog path may be a FIFO or a device.
                let text =
                    toolgate_policy::read_text_file(file, toolgate_policy::MAX_CATALOG_FILE_BYTES)
                        .map_err(|e| BuildError::Other {
                            message: format!("search: cannot read catalog {e}"),
                        })?;
                let docs = toolgate_search::read_catalog_jsonl_from(text.as_bytes(), file)
                    .map_err(|e| BuildError::Other {
                        message: format!("search: {e}"),
                    })?;
                let source = ToolSource::Catalog {
                    file: file.display().to_string(),
                };
                for doc in docs {
                    let spec = ToolSpec::new(doc.name, doc.description, doc.parameters);
                    registry.insert(
                        Arc::new(crate::search::CatalogOnly { spec }),
                        source.clone(),
                        true,
                    )?;
                }
            }
            let globs = search
                .searchable_tools
                .iter()
                .map(|p| {
                    globset::Glob::new(p)
                        .map(|g| g.compile_matcher())
                        .map_err(|e| BuildError::Setting {
                            message: format!("search.searchable_tools: bad pattern {p:?}: {e}"),
                            at: At(None),
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            registry.mark_searchable(|name| globs.iter().any(|g| g.is_match(name)));
        }
        let reserved = reserved_names(&policy);
        for name in &reserved {
            // Reserved names are model-facing: `read.tool.result` is `read_tool_result` under
            // `openai`, and would be taken for the built-in.
            if let Some(found) = registry.resolve(name) {
                return Err(BuildError::InvalidName {
                    name: found.name.to_string(),
                    source_desc: found.entry.source.to_string(),
                    reason: format!(
                        "{name} is reserved for the built-in tool while {} is on",
                        if *name == READ_TOOL_RESULT {
                            "reduction"
                        } else {
                            "search"
                        }
                    ),
                    at: At(None),
                });
            }
        }
        let store = match &policy.reduction {
            Some(settings) => Some(match self.store {
                Some(s) => s,
                None => crate::reduction::open_store(settings, self.default_store_url.as_deref())
                    .map_err(|e| BuildError::Other {
                    message: format!("reduction: cannot open the result store: {e}"),
                })?,
            }),
            None => None,
        };
        if let (Some(store), Some(settings)) = (&store, &policy.reduction) {
            registry.insert(
                Arc::new(crate::reduction::ReadToolResult::new(
                    store.clone(),
                    settings.hide_foreign_results,
                )),
                ToolSource::Builtin,
                false,
            )?;
        }
        registry.add_aliases(&policy.aliases, &reserved)?;

        let sessions = Arc::new(crate::session::Sessions::default());
        let mut visibility = None;
        if let Some(search) = &policy.search {
            let docs = crate::search::catalog_docs(&registry, search);
            // Real name -> model-facing name of every catalog tool.
            let catalog: HashMap<String, String> = registry
                .entries()
                .filter(|(_, e)| e.searchable)
                .map(|(name, e)| (name.to_string(), e.model_name.clone()))
                .collect();
            if !search.use_model_native {
                let index = crate::search::build_index(docs, search.index_file.as_deref())
                    .map_err(|message| BuildError::Other {
                        message: format!("search: cannot build the index: {message}"),
                    })?;
                registry.insert(
                    Arc::new(crate::search::ToolSearch::new(
                        toolgate_search::LiveIndex::new(index),
                        sessions.clone(),
                        search.default_max_results.max(1) as usize,
                        catalog
                            .iter()
                            .map(|(real, model)| (model.clone(), real.clone()))
                            .collect(),
                    )),
                    ToolSource::Builtin,
                    false,
                )?;
                if !search.allow_direct_calls {
                    visibility = Some(crate::search::VisibilityLayer {
                        catalog,
                        sessions: sessions.clone(),
                    });
                }
            }
        }

        let resolver = SettingsResolver::new(&policy.dispatch, &policy.rules, &policy.tools)?
            .with_reduction(policy.reduction.as_ref().map(|r| r.max_result_bytes));
        let scripts = Arc::new(
            ScriptSet::compile(&policy.scripts, &self.script_limits)?
                .with_timeout(policy.dispatch.script_timeout)?,
        );

        let mut settings = HashMap::new();
        let mut arg_aliases = HashMap::new();
        for (name, entry) in registry.entries() {
            let builtin = entry.source == ToolSource::Builtin;
            settings.insert(
                name.to_string(),
                Arc::new(resolver.resolve_for(name, builtin)),
            );
            if !entry.arg_aliases.is_empty() {
                arg_aliases.insert(name.to_string(), entry.arg_aliases.clone());
            }
        }

        let events = Events::default();
        for l in self.listeners {
            events.add(l);
        }

        let mut layers: Vec<Arc<dyn Layer>> = Vec::new();
        if scripts.has(Hook::After) {
            layers.push(Arc::new(AfterHookLayer {
                scripts: scripts.clone(),
                events: events.clone(),
            }));
        }
        if let (Some(store), Some(settings)) = (&store, &policy.reduction) {
            layers.push(Arc::new(crate::reduction::ReduceLayer {
                store: store.clone(),
                settings: settings.clone(),
                fallback_chars: u64::try_from(policy.dispatch.max_result_chars).ok(),
                events: events.clone(),
            }));
        }
        // The wait for a group's lock is queue time, outside the timeout (G2).
        if settings.values().any(|s| s.sequential_group.is_some()) {
            layers.push(Arc::new(GroupLayer));
        }
        layers.push(Arc::new(TimeoutLayer));
        layers.push(Arc::new(LimitLayer {
            reduction: policy.reduction.is_some(),
        }));
        layers.push(Arc::new(ArgumentsLayer {
            aliases: arg_aliases,
        }));
        if let Some(v) = visibility {
            layers.push(Arc::new(v));
        }
        // G1: the rules judge the arguments the tool will receive, so they come after the
        // rewrite (a rewrite can never turn a denied call into an allowed one unseen).
        if scripts.has(Hook::Rewrite) {
            layers.push(Arc::new(RewriteLayer {
                scripts: scripts.clone(),
            }));
        }
        layers.push(Arc::new(RulesLayer));
        if scripts.has(Hook::Before) {
            layers.push(Arc::new(BeforeLayer {
                scripts: scripts.clone(),
            }));
        }
        layers.extend(self.layers);

        let suggest_registry = registry.clone();
        let endpoint = Endpoint {
            scripts: scripts.clone(),
            suggest: Arc::new(move |name: &str| {
                suggest_registry.suggestions(name, |n| {
                    suggest_registry
                        .resolve(n)
                        .is_some_and(|r| !r.entry.searchable)
                })
            }),
            unknown_hint: if policy.search.as_ref().is_some_and(|s| !s.use_model_native) {
                ", or find more with tool_search".to_string()
            } else {
                String::new()
            },
        };
        let guard = Guard::new(layers, endpoint, events.clone());
        Ok(Engine {
            inner: Arc::new(Inner {
                policy,
                registry,
                resolver,
                settings,
                guard,
                events,
                store,
                sessions,
            }),
        })
    }
}

/// The built-in tool that pages through offloaded results (reserved while reduction is on).
pub const READ_TOOL_RESULT: &str = "read_tool_result";
/// The built-in search meta-tool (reserved while search is on).
pub const TOOL_SEARCH: &str = "tool_search";

/// N3: the names reserved by the policy's features.
fn reserved_names(policy: &Policy) -> Vec<&'static str> {
    let mut r = Vec::new();
    if policy.reduction.is_some() {
        r.push(READ_TOOL_RESULT);
    }
    if policy.search.is_some() {
        r.push(TOOL_SEARCH);
    }
    r
}

struct Inner {
    policy: Policy,
    registry: Registry,
    resolver: SettingsResolver,
    settings: HashMap<String, Arc<ToolSettings>>,
    guard: Guard,
    events: Events,
    store: Option<Arc<dyn ResultStore>>,
    sessions: Arc<crate::session::Sessions>,
}

/// The engine. Cheap to clone; share one across tasks.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("tools", &self.inner.registry.entries().count())
            .finish()
    }
}

impl Engine {
    /// Starts building an engine from a policy.
    pub fn builder(policy: Policy) -> EngineBuilder {
        EngineBuilder::new(policy)
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
    pub fn session(&self, id: Option<&str>) -> Result<Session, SessionError> {
        self.inner.sessions.get(id)
    }

    /// The tools the model sees now in this session, under their model-facing names (N6): the
    /// ordinary tools (and `tool_search` while search is on) plus the catalog tools the session
    /// has found (S1, S3, S5).
    pub fn visible_tools(&self, session: &Session) -> Vec<ToolSpec> {
        self.inner
            .registry
            .entries()
            .filter(|(name, e)| !e.searchable || session.state().is_revealed(name))
            .map(|(_, e)| e.model_spec())
            .collect()
    }

    /// The documents `tool_search` indexes under this policy (`None` when search is off), for
    /// tools that build or inspect the index outside the engine.
    pub fn search_docs(&self) -> Option<Vec<toolgate_search::ToolDoc>> {
        self.inner
            .policy
            .search
            .as_ref()
            .map(|s| crate::search::catalog_docs(&self.inner.registry, s))
    }

    /// With `use_model_native`, the catalog tools to hand to the provider's own tool search
    /// (for example as deferred tools); otherwise empty (S5).
    pub fn deferred_tools(&self) -> Vec<ToolSpec> {
        match &self.inner.policy.search {
            Some(s) if s.use_model_native => self
                .inner
                .registry
                .entries()
                .filter(|(_, e)| e.searchable)
                .map(|(_, e)| e.model_spec())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Which settings apply to a tool, and where each came from (G8): exactly the settings a
    /// call to it runs under. `tool` may be a model-facing name, an alias or a real name.
    pub fn explain(&self, tool: &str) -> Explanation {
        match self.inner.registry.lookup(tool) {
            Some(r) => match self.inner.settings.get(r.name) {
                Some(s) => s.explanation.clone(),
                None => self.inner.resolver.resolve(r.name).explanation,
            },
            None => {
                // D4: an unknown name takes the unknown-tool path, which no rule judges.
                let mut e = self.inner.resolver.resolve(tool).explanation;
                e.rules_from.clear();
                e
            }
        }
    }

    /// Warnings about the policy that do not stop it from working: rules that can refuse a
    /// built-in tool a feature relies on (the offload notices tell the model to call
    /// `read_tool_result`; search needs `tool_search`).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for name in reserved_names(&self.inner.policy) {
            if self.inner.registry.get(name).is_none() {
                continue;
            }
            for at in self.inner.resolver.rules_blocking_builtin(name) {
                out.push(format!(
                    "{at} can refuse calls to the built-in {name}, which {} relies on",
                    if name == READ_TOOL_RESULT {
                        "reduction"
                    } else {
                        "search"
                    }
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

    pub(crate) fn invocation(
        &self,
        session: &Session,
        call: &ToolCall,
        cancel: CancellationToken,
    ) -> Invocation {
        let started = Instant::now();
        let model_name = call.function.name.clone();
        let (tool_name, tool, settings) = match self.inner.registry.resolve(&model_name) {
            Some(r) => (
                r.name.to_string(),
                Some(r.entry.tool.clone()),
                self.inner
                    .settings
                    .get(r.name)
                    .cloned()
                    .unwrap_or_else(|| Arc::new(self.inner.resolver.resolve(r.name))),
            ),
            None => (
                model_name.clone(),
                None,
                Arc::new(self.inner.resolver.resolve(&model_name)),
            ),
        };
        Invocation {
            call_id: call.id.clone(),
            model_name,
            tool_name,
            tool,
            raw_arguments: call.function.arguments.clone(),
            args: serde_json::Value::Null,
            session: session.id().map(str::to_string),
            deadline: settings.timeout.map(|t| started + t),
            settings,
            started,
            queued: std::time::Duration::ZERO,
            hold: None,
            error_sizing: Default::default(),
            cancel,
            progress: None,
        }
    }

    /// Runs one call through the whole guard.
    pub async fn call(&self, session: &Session, call: &ToolCall) -> Outcome {
        let inv = self.invocation(session, call, CancellationToken::new());
        self.inner.guard.run(inv).await
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
        crate::dispatch::dispatch(self, session, calls, cancel).await
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
        let pending = crate::history::pending(history);
        if pending.calls.is_empty() {
            return Ok(Turn {
                pending,
                messages: Vec::new(),
            });
        }
        let outcomes = self.dispatch(session, &pending.calls).await?;
        let messages = crate::history::answer_messages(&outcomes, self.inner.policy.name_profile);
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
        let (repaired, repair) = crate::history::repair_for(history, profile);
        let (messages, offload) = match (&self.inner.store, &self.inner.policy.reduction) {
            (Some(store), Some(settings)) => {
                let tools = self.visible_tools(session);
                crate::history::budget::offload_rounds(
                    repaired,
                    &tools,
                    session.id(),
                    settings,
                    store,
                    estimator,
                    profile,
                )
                .await
            }
            _ => {
                let tokens = ByteEstimator.tools(&self.visible_tools(session))
                    + repaired.iter().map(|m| estimator.message(m)).sum::<u64>();
                let report = crate::history::OffloadReport {
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

    pub(crate) fn guard(&self) -> &Guard {
        &self.inner.guard
    }

    pub(crate) fn dispatch_settings(&self) -> &toolgate_policy::DispatchSettings {
        &self.inner.policy.dispatch
    }
}
