//! [`EngineBuilder`]: from a [`Policy`] (plus native tools, listeners and extra layers) to an
//! [`Engine`], in steps: the registry (every tool, names checked), the result store, search,
//! the settings of each tool, and the guard.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate_policy::{Policy, ReductionSettings, SearchSettings};
use toolgate_search::LiveIndex;
use toolgate_store::ResultStore;

use crate::clients::ClientTable;
use crate::dispatch::Dispatcher;
use crate::engine::{Engine, Parts};
use crate::error::{At, BuildError};
use crate::events::{Event, Events, Listener};
use crate::guard::{ArgAliases, Endpoint, GuardParts, Layer, Reduction, VisibilityLayer};
use crate::reduction::ReadToolResult;
use crate::registry::{BuiltinTool, Registry, ToolSource};
use crate::script::{ScriptLimits, ScriptSet};
use crate::search::{CatalogOnly, ToolSearch};
use crate::session::Sessions;
use crate::settings::{SettingsResolver, SettingsTable};
use crate::tool::{Tool, ToolSpec};

/// Builds an [`Engine`]: the policy, plus native tools, listeners and extra layers.
pub struct EngineBuilder {
    policy: Policy,
    store: Option<Arc<dyn ResultStore>>,
    default_store_url: Option<String>,
    natives: Vec<Arc<dyn Tool>>,
    /// Tools of named sources ([`EngineBuilder::tools_from`]), with their source and whether
    /// they are searchable.
    external: Vec<(ToolSource, Arc<dyn Tool>, bool)>,
    listeners: Vec<Listener>,
    layers: Vec<Arc<dyn Layer>>,
    script_limits: ScriptLimits,
    plugin_host: Option<PathBuf>,
}

impl Engine {
    /// Starts building an engine from a policy.
    pub fn builder(policy: Policy) -> EngineBuilder {
        EngineBuilder::new(policy)
    }
}

impl EngineBuilder {
    /// Starts building an engine from a policy.
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
            plugin_host: None,
        }
    }

    /// The program that runs plugins under `isolation: process`: it is started as
    /// `PROGRAM plugin-host` and must be the `toolgate` program (or another that runs
    /// [`crate::plugin_host::serve_stdio`] for that command). Default: the running program
    /// ([`std::env::current_exe`]), which is right for the `toolgate` command line; a library
    /// user whose own program is not `toolgate` sets the path of an installed `toolgate`.
    pub fn plugin_host(mut self, program: impl Into<PathBuf>) -> Self {
        self.plugin_host = Some(program.into());
        self
    }

    /// Registers a native tool, always visible.
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.natives.push(Arc::new(tool));
        self
    }

    /// Registers a native tool already in an `Arc`.
    pub fn tool_arc(mut self, tool: Arc<dyn Tool>) -> Self {
        self.natives.push(tool);
        self
    }

    /// Registers the tools of one named source that the host program brings (the tools of an
    /// upstream MCP server, say), checked like every other tool (N1-N3, N6) but never failing
    /// the build: a tool that breaks a rule, or whose model-facing name another tool, an alias
    /// or a built-in has, is left out with a warning ([`Registry::left_out`](crate::registry::Registry::left_out)). `source` names
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

    /// The resource limits of the policy scripts (the defaults are the same in debug and
    /// release builds).
    pub fn script_limits(mut self, limits: ScriptLimits) -> Self {
        self.script_limits = limits;
        self
    }

    /// Loads plugins, checks every name and alias, opens the result store, builds the search
    /// index, compiles the scripts and assembles the guard.
    ///
    /// # Errors
    ///
    /// The first problem found; every plugin that does not load is reported at once
    /// ([`BuildError::Several`]).
    pub fn build(self) -> Result<Engine, BuildError> {
        let EngineBuilder {
            policy,
            store,
            default_store_url,
            natives,
            external,
            listeners,
            layers,
            script_limits,
            plugin_host,
        } = self;
        let reserved: Vec<&str> = BuiltinTool::enabled_by(&policy)
            .into_iter()
            .map(BuiltinTool::name)
            .collect();

        let program = match plugin_host {
            Some(program) => program,
            None => std::env::current_exe().unwrap_or_else(|_| PathBuf::from("toolgate")),
        };
        let mut registry = registry_of(&policy, natives, external, &program)?;
        check_reserved(&registry, &policy)?;
        let store = match &policy.reduction {
            Some(settings) => Some(reduction_store(
                settings,
                store,
                default_store_url.as_deref(),
                &mut registry,
            )?),
            None => None,
        };
        // An alias of an upstream server's tool that is not there (the server did not start,
        // or left the tool out) costs only the alias.
        let upstream = |tool: &str| {
            policy.mcp_servers.iter().any(|s| {
                tool.strip_prefix(s.name.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
            })
        };
        registry.add_aliases(&policy.aliases, &reserved, upstream)?;
        let sessions = Arc::new(Sessions::default());
        // C4: what each principal may see.
        let clients = policy
            .clients
            .as_deref()
            .map(|entries| Arc::new(ClientTable::new(entries)));
        let (mut visibility, search_index) = match &policy.search {
            Some(search) => search_step(search, &mut registry, &sessions, clients.as_ref())?,
            None => (None, None),
        };
        // C4: the visibility layer also refuses what the caller may not see.
        if let Some(table) = &clients {
            visibility
                .get_or_insert_with(|| VisibilityLayer {
                    catalog: Default::default(),
                    sessions: sessions.clone(),
                    clients: None,
                })
                .clients = Some(Arc::clone(table));
        }
        let registry = Arc::new(registry);

        let resolver = SettingsResolver::new(&policy.dispatch, &policy.rules, &policy.tools)?
            .with_reduction(policy.reduction.as_ref().map(|r| r.max_result_bytes));
        let settings = Arc::new(SettingsTable::new(
            resolver,
            registry.entries().map(|(name, e)| (name, e.is_builtin())),
        ));

        let scripts = Arc::new(
            ScriptSet::compile(&policy.scripts, &script_limits)?
                .with_timeout(policy.dispatch.script_timeout)?,
        );

        let events = Events::default();
        for l in listeners {
            events.add(l);
        }
        let mut audit = None;
        if let Some(settings) = &policy.audit {
            let masker = policy
                .redact
                .as_ref()
                .and_then(crate::guard::RedactLayer::new)
                .map(Arc::new);
            let base = policy.source.as_deref().and_then(std::path::Path::parent);
            let log = Arc::new(crate::audit::AuditLog::open(settings, base, masker)?);
            let listener = log.clone();
            events.add(Arc::new(move |e: &Event| listener.record(e)));
            audit = Some(log);
        }
        let requests = match &policy.limits {
            Some(limits) => crate::limits::RequestLimits::new(limits)?,
            None => None,
        };
        let guard = GuardParts {
            scripts: scripts.clone(),
            events: events.clone(),
            reduction: match (&store, &policy.reduction) {
                (Some(store), Some(settings)) => Some(Reduction {
                    store: store.clone(),
                    settings: settings.clone(),
                    fallback_chars: policy.dispatch.max_result_chars.limit(),
                }),
                _ => None,
            },
            groups: if settings.any_group() {
                settings.resolver().groups().map(str::to_string).collect()
            } else {
                Vec::new()
            },
            arg_aliases: arg_aliases(&registry),
            visibility,
            custom: layers,
            rate_limits: match &policy.limits {
                Some(limits) => crate::limits::RateLimits::new(limits)?,
                None => None,
            },
            breakers: if policy.circuit_breaker.is_some() {
                breakers_of(&registry)
            } else {
                HashMap::new()
            },
            endpoint: endpoint(&registry, &policy, scripts),
        }
        .build(&policy);

        let access_aliases = crate::access::AccessAliases::of(&policy)?;
        Ok(Engine::from_parts(Parts {
            access_aliases,
            dispatcher: Dispatcher::new(
                guard,
                registry.clone(),
                settings.clone(),
                policy.dispatch.clone(),
            ),
            policy,
            registry,
            settings,
            events,
            store,
            sessions,
            search_index,
            clients,
            audit,
            requests,
        }))
    }
}

/// One circuit breaker per plugin and per upstream server (an external source), shared by its
/// tools: real tool name -> breaker.
fn breakers_of(registry: &Registry) -> HashMap<String, Arc<crate::guard::Breaker>> {
    let mut by_source: HashMap<String, Arc<crate::guard::Breaker>> = HashMap::new();
    let mut out = HashMap::new();
    for (name, entry) in registry.entries() {
        let source = match entry.source() {
            ToolSource::Plugin { plugin, .. } => format!("plugin {plugin}"),
            ToolSource::External { name } => name.clone(),
            _ => continue,
        };
        let breaker = by_source
            .entry(source.clone())
            .or_insert_with(|| Arc::new(crate::guard::Breaker::new(source)))
            .clone();
        out.insert(name.to_string(), breaker);
    }
    out
}

/// The registry step: native tools, every plugin's tools, the JSONL catalogs, and the tools
/// `search.searchable_tools` moves into the catalog.
fn registry_of(
    policy: &Policy,
    natives: Vec<Arc<dyn Tool>>,
    external: Vec<(ToolSource, Arc<dyn Tool>, bool)>,
    program: &Path,
) -> Result<Registry, BuildError> {
    let mut registry = Registry::new(policy.name_profile);
    for tool in natives {
        registry.insert(tool, ToolSource::Native, false)?;
    }
    // Every plugin is tried, so one build reports all that do not load (each at its entry).
    let mut plugin_errors = Vec::new();
    for spec in &policy.plugins {
        let plugin = match crate::plugin::load(spec, program) {
            Ok(plugin) => plugin,
            Err(e) => {
                plugin_errors.push(e);
                continue;
            }
        };
        let source = ToolSource::Plugin {
            plugin: plugin.name,
            path: plugin.path.display().to_string(),
        };
        for tool in plugin.tools {
            if let Err(e) = registry.insert(tool, source.clone(), spec.searchable) {
                plugin_errors.push(e.at_entry(spec.position.as_ref()));
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
    let taken = taken_names(policy);
    if let Some(search) = &policy.search {
        for file in &search.catalogs {
            // Through the policy crate's reader: a catalog path may be a FIFO or a device.
            let text =
                toolgate_policy::read_text_file(file, toolgate_policy::MAX_CATALOG_FILE_BYTES)
                    .map_err(|source| BuildError::CatalogFile { source })?;
            let docs = toolgate_search::read_catalog_jsonl_from(text.as_bytes(), file)
                .map_err(|source| BuildError::Catalog { source })?;
            let source = ToolSource::Catalog {
                file: file.display().to_string(),
            };
            // A catalog is data (S7): an entry that cannot join costs only itself.
            let tools = docs.into_iter().map(|doc| {
                let spec = ToolSpec::new(doc.name, doc.description, doc.parameters);
                Arc::new(CatalogOnly { spec }) as Arc<dyn Tool>
            });
            registry.insert_catalog(tools, &source, &taken);
        }
    }
    // Last, so that a tool of an upstream server never takes a name from the policy's own
    // tools: one that collides is left out instead of failing the build.
    registry.insert_external(external, &taken);
    if let Some(search) = &policy.search {
        let globs = &search.searchable_tools;
        registry.mark_searchable(|name| globs.iter().any(|g| g.is_match(name)));
    }
    Ok(registry)
}

/// The model-facing names the policy itself claims besides its tools: the reserved built-in
/// names of the features it turns on and its aliases, each with what it is, for messages.
fn taken_names(policy: &Policy) -> HashMap<String, String> {
    let mut taken = HashMap::new();
    for builtin in BuiltinTool::enabled_by(policy) {
        taken.insert(
            builtin.name().to_owned(),
            format!(
                "reserved for the built-in tool while {} is on",
                builtin.feature()
            ),
        );
    }
    for (tool, spec) in &policy.aliases {
        for alias in &spec.names {
            taken.insert(
                crate::registry::model_name(alias, policy.name_profile),
                format!("the policy's alias {alias:?} of {tool}"),
            );
        }
    }
    taken
}

/// N3: no tool may take the name of a built-in a feature of the policy turns on. Reserved
/// names are model-facing: `read.tool.result` is `read_tool_result` under `openai`, and would
/// be taken for the built-in.
fn check_reserved(registry: &Registry, policy: &Policy) -> Result<(), BuildError> {
    for builtin in BuiltinTool::enabled_by(policy) {
        let name = builtin.name();
        if let Some(found) = registry.resolve(name) {
            return Err(BuildError::InvalidName {
                name: found.name.to_string(),
                source_desc: found.entry.source().to_string(),
                reason: format!(
                    "{name} is reserved for the built-in tool while {} is on",
                    builtin.feature()
                ),
                at: At(None),
            });
        }
    }
    Ok(())
}

/// The store step (reduction on): the store given to the builder, else the one the policy
/// names, else `default_url`; and the built-in `read_tool_result` that pages through it.
fn reduction_store(
    settings: &ReductionSettings,
    given: Option<Arc<dyn ResultStore>>,
    default_url: Option<&str>,
    registry: &mut Registry,
) -> Result<Arc<dyn ResultStore>, BuildError> {
    let store = match given {
        Some(s) => s,
        None => crate::reduction::open_store(settings, default_url)
            .map_err(|source| BuildError::Store { source })?,
    };
    registry.insert(
        Arc::new(ReadToolResult::new(
            store.clone(),
            settings.hide_foreign_results,
        )),
        ToolSource::Builtin,
        false,
    )?;
    Ok(store)
}

/// The search step: the index over the catalog and the built-in `tool_search` (unless the
/// provider's own search is used), and the gate that keeps catalog tools hidden until found
/// (unless direct calls are allowed). Returns the gate and the index `tool_search` searches.
fn search_step(
    search: &SearchSettings,
    registry: &mut Registry,
    sessions: &Arc<Sessions>,
    clients: Option<&Arc<ClientTable>>,
) -> Result<(Option<VisibilityLayer>, Option<Arc<LiveIndex>>), BuildError> {
    if search.use_model_native {
        return Ok((None, None));
    }
    let docs = crate::search::catalog_docs(registry, search);
    // Real name -> model-facing name of every catalog tool.
    let catalog: HashMap<String, String> = registry
        .entries()
        .filter(|(_, e)| e.is_searchable())
        .map(|(name, e)| (name.to_string(), e.model_name().to_string()))
        .collect();
    let index = crate::search::build_index(docs, search.index_file.as_deref())
        .map_err(|source| BuildError::SearchIndex { source })?;
    let index = crate::search::attach_embeddings(
        index,
        search.embeddings.as_ref(),
        search.index_file.as_deref(),
    )?;
    let live = toolgate_search::LiveIndex::new(index);
    registry.insert(
        Arc::new(ToolSearch::new(
            live.clone(),
            sessions.clone(),
            search.default_max_results.max(1) as usize,
            catalog
                .iter()
                .map(|(real, model)| (model.clone(), real.clone()))
                .collect(),
            search.explain,
            clients.cloned(),
        )),
        ToolSource::Builtin,
        false,
    )?;
    let visibility = (!search.allow_direct_calls).then(|| VisibilityLayer {
        catalog,
        sessions: sessions.clone(),
        clients: None,
    });
    Ok((visibility, Some(live)))
}

/// The argument aliases of every tool that has some.
fn arg_aliases(registry: &Registry) -> ArgAliases {
    registry
        .entries()
        .filter(|(_, e)| !e.arg_aliases().is_empty())
        .map(|(name, e)| (name.to_string(), e.arg_aliases().clone()))
        .collect()
}

/// The end of the guard: the tool, or the unknown-tool answer with suggestions among the tools
/// the model can see.
fn endpoint(registry: &Arc<Registry>, policy: &Policy, scripts: Arc<ScriptSet>) -> Endpoint {
    let suggest_registry = registry.clone();
    Endpoint {
        scripts,
        suggest: Arc::new(move |name: &str| {
            suggest_registry.suggestions(name, |n| {
                suggest_registry
                    .resolve(n)
                    .is_some_and(|r| !r.entry.is_searchable())
            })
        }),
        unknown_hint: if policy.search.as_ref().is_some_and(|s| !s.use_model_native) {
            ", or find more with tool_search".to_string()
        } else {
            String::new()
        },
    }
}
