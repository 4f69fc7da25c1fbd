//! Resources, resource templates, prompts and completion, from the policy's upstream MCP
//! servers, offered under the policy (A1-A4).
//!
//! * Capabilities: `resources` (with `subscribe` when a server has it), `prompts` and
//!   `completions` are declared when some upstream server declared them, and only then.
//! * Lists: every server's resources, templates and prompts (the upstream catalog); a prompt is named
//!   `<server>.<prompt>`, a resource keeps its URI. One page; a cursor is refused, as no list
//!   hands one out.
//! * `resources/read` and `prompts/get` run through the engine's guard
//!   ([`toolgate::Engine::access`]): rules, hooks, timeout, cap or offload, events. A refused or
//!   failed one is a JSON-RPC error whose `data.toolgate.error_kind` says why (codes below); an
//!   offloaded one is a text item holding the notice, with `_meta.toolgate.result_id` for
//!   `read_tool_result`.
//! * `completion/complete` and `resources/subscribe` go to the owning server once the rules
//!   let the prompt or the URI through ([`toolgate::Engine::judge`]).
//!
//! | error kind | JSON-RPC code |
//! |---|---|
//! | `denied` | [`DENIED`] (-32001) |
//! | `unknown_resource` | -32002 (the MCP code for a resource not found) |
//! | `unknown_prompt`, `invalid_arguments` | -32602 |
//! | any other (`timeout`, `upstream_error`, ...) | -32603 |

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ErrorCode, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, Prompt, PromptsCapability,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Reference, Resource,
    ResourceTemplate, ResourcesCapability, ServerCapabilities, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use std::sync::Arc;

use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use toolgate::access::{Access, CallKind};
use toolgate::error::CallError;
use toolgate::{Content, Outcome, Session};

use super::content::META_KEY;
use super::engines::Loaded;
use super::paging;
use super::shared::Shared;
use super::subscriptions::{MAX_PER_CLIENT, Refused};
use crate::upstream::{Slot, nowhere};

/// Who asks, in which session of which engine: what the connection's handler hands over.
pub(crate) struct Caller {
    pub(crate) shared: Arc<Shared>,
    /// The engine the request runs on, to its end.
    pub(crate) loaded: Arc<Loaded>,
    pub(crate) session: Session,
    /// The connection (its subscriptions are kept by it).
    pub(crate) client: u64,
}

/// The JSON-RPC code of a read, get, completion or subscription the policy refuses.
pub(crate) const DENIED: ErrorCode = ErrorCode(-32001);

/// Declares what some upstream server declared.
pub(crate) fn declare(shared: &Shared, capabilities: &mut ServerCapabilities) {
    let catalog = shared.engines.current().upstreams.upstreams.catalog();
    let declared = catalog.declared;
    if declared.resources {
        let mut resources = ResourcesCapability::default();
        resources.subscribe = declared.subscribe.then_some(true);
        resources.list_changed = Some(true);
        capabilities.resources = Some(resources);
    }
    if declared.prompts {
        let mut prompts = PromptsCapability::default();
        prompts.list_changed = Some(true);
        capabilities.prompts = Some(prompts);
    }
    if declared.completions {
        capabilities.completions = Some(Default::default());
    }
}

pub(crate) fn list_resources(
    shared: &Shared,
    request: Option<PaginatedRequestParams>,
    caller: &toolgate::Caller,
) -> Result<ListResourcesResult, McpError> {
    let loaded = shared.engines.current();
    let catalog = loaded.upstreams.upstreams.catalog();
    // C4: what the caller may see.
    let items = catalog
        .resources
        .iter()
        .filter(|(_, r)| loaded.engine.sees(caller, CallKind::Resource, &r.uri))
        .map(|(_, r)| r.clone())
        .collect();
    let page = paging::page(
        "resources",
        items,
        request.as_ref(),
        loaded.page_size,
        |r: &Resource| r.uri.as_str(),
    )?;
    let mut result = ListResourcesResult::with_all_items(page.items);
    result.next_cursor = page.next_cursor;
    Ok(result)
}

pub(crate) fn list_templates(
    shared: &Shared,
    request: Option<PaginatedRequestParams>,
) -> Result<ListResourceTemplatesResult, McpError> {
    let loaded = shared.engines.current();
    let catalog = loaded.upstreams.upstreams.catalog();
    let items = catalog
        .templates
        .iter()
        .map(|(_, t, _)| t.clone())
        .collect();
    let page = paging::page(
        "resources/templates",
        items,
        request.as_ref(),
        loaded.page_size,
        |t: &ResourceTemplate| t.uri_template.as_str(),
    )?;
    let mut result = ListResourceTemplatesResult::with_all_items(page.items);
    result.next_cursor = page.next_cursor;
    Ok(result)
}

pub(crate) fn list_prompts(
    shared: &Shared,
    request: Option<PaginatedRequestParams>,
    caller: &toolgate::Caller,
) -> Result<ListPromptsResult, McpError> {
    let loaded = shared.engines.current();
    let catalog = loaded.upstreams.upstreams.catalog();
    // C4: what the caller may see.
    let items = catalog
        .prompts
        .iter()
        .filter(|(_, p, _)| loaded.engine.sees(caller, CallKind::Prompt, &p.name))
        .map(|(_, p, _)| p.clone())
        .collect();
    let page = paging::page(
        "prompts",
        items,
        request.as_ref(),
        loaded.page_size,
        |p: &Prompt| p.name.as_str(),
    )?;
    let mut result = ListPromptsResult::with_all_items(page.items);
    result.next_cursor = page.next_cursor;
    Ok(result)
}

/// The real name of what a client asked for by `name`, and the alias when it used one: a name
/// a server lists is never an alias (A3); another is looked up in the policy's aliases.
fn resolve(loaded: &Loaded, kind: CallKind, name: String) -> (String, Option<String>) {
    let catalog = loaded.upstreams.upstreams.catalog();
    let listed = match kind {
        CallKind::Resource => catalog.lists_uri(&name),
        _ => catalog.route_prompt(&name).is_some(),
    };
    match loaded.engine.alias_target(kind, &name).filter(|_| !listed) {
        Some(real) => (real.to_owned(), Some(name)),
        None => (name, None),
    }
}

/// `resources/read` through the guard.
pub(crate) async fn read(
    caller: Caller,
    request: ReadResourceRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<ReadResourceResponse, McpError> {
    let Caller {
        shared,
        loaded,
        session,
        ..
    } = caller;
    let upstreams = &loaded.upstreams.upstreams;
    let (uri, alias) = resolve(&loaded, CallKind::Resource, request.uri);
    let (target, slot) = match upstreams.catalog().route_uri(&uri, &upstreams.names()) {
        Ok(server) => upstreams.reader(server, &uri),
        Err(why) => (nowhere(&uri, "unknown_resource", why), Slot::default()),
    };
    let mut access = Access::resource(shared.next_call_id(), &uri, Some(target));
    if let Some(alias) = alias {
        access = access.asked_as(alias);
    }
    let outcome = loaded.engine.access(&session, access, &context.ct).await;
    let value = answer(outcome, &slot, "resources/read", &uri)?;
    let result: ReadResourceResult = serde_json::from_value(value).map_err(|e| {
        McpError::internal_error(format!("the read result cannot be sent: {e}"), None)
    })?;
    Ok(ReadResourceResponse::Complete(result))
}

/// `prompts/get` through the guard.
pub(crate) async fn get(
    caller: Caller,
    request: GetPromptRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<GetPromptResponse, McpError> {
    let Caller {
        shared,
        loaded,
        session,
        ..
    } = caller;
    let upstreams = &loaded.upstreams.upstreams;
    let (name, alias) = resolve(&loaded, CallKind::Prompt, request.name);
    let (target, slot) = match upstreams.catalog().route_prompt(&name) {
        Some((server, remote)) => upstreams.getter(server, &name, remote),
        None => (
            nowhere(
                &name,
                "unknown_prompt",
                "no MCP server of the policy has this prompt (prompts are named <server>.<prompt>)"
                    .to_owned(),
            ),
            Slot::default(),
        ),
    };
    let arguments = request.arguments.unwrap_or_default();
    let mut access = Access::prompt(shared.next_call_id(), &name, arguments, Some(target));
    if let Some(alias) = alias {
        access = access.asked_as(alias);
    }
    let outcome = loaded.engine.access(&session, access, &context.ct).await;
    let value = answer(outcome, &slot, "prompts/get", &name)?;
    let result: GetPromptResult = serde_json::from_value(value)
        .map_err(|e| McpError::internal_error(format!("the prompt cannot be sent: {e}"), None))?;
    Ok(GetPromptResponse::Complete(result))
}

/// The result of a read or get from its outcome and its slot, with `_meta.toolgate`; or the
/// error for a refused or failed one.
fn answer(outcome: Outcome, slot: &Slot, method: &str, name: &str) -> Result<Value, McpError> {
    let meta = json!({
        "error_kind": outcome.error.as_ref().map(CallError::kind),
        "truncated": outcome.truncated,
        "result_id": outcome.result_id,
        "name": outcome.tool_name,
    });
    if let Some(error) = &outcome.error {
        let message = match error {
            CallError::Denied { reason, .. } => {
                format!("the policy refuses this {method} of {name}: {reason}")
            }
            _ => {
                let text = outcome.content.text();
                text.strip_prefix("Error: ").unwrap_or(&text).to_owned()
            }
        };
        return Err(McpError::new(
            code_of(error),
            message,
            Some(json!({ META_KEY: meta })),
        ));
    }
    let texts = match outcome.content {
        Content::Text(text) => vec![text],
        Content::Parts(parts) => parts
            .into_iter()
            .filter_map(|p| match p {
                toolgate::tool::ContentPart::Text { text, .. } => Some(text),
                _ => None,
            })
            .collect(),
    };
    let mut value = slot
        .rebuild(texts, outcome.result_id.is_some())
        .ok_or_else(|| McpError::internal_error("the server's answer was lost", None))?;
    if let Value::Object(result) = &mut value {
        let meta_slot = result
            .entry("_meta")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(m) = meta_slot {
            m.insert(META_KEY.to_owned(), meta);
        }
    }
    Ok(value)
}

/// The JSON-RPC code of a failed read or get (see the module docs).
fn code_of(error: &CallError) -> ErrorCode {
    match error.kind() {
        "denied" => DENIED,
        "unknown_resource" => ErrorCode::RESOURCE_NOT_FOUND,
        "unknown_prompt" | "invalid_arguments" => ErrorCode::INVALID_PARAMS,
        _ => ErrorCode::INTERNAL_ERROR,
    }
}

/// A refusal by the rules as a JSON-RPC error.
fn refused(error: CallError, what: &str) -> McpError {
    let kind = error.kind();
    let message = match &error {
        CallError::Denied { reason, .. } => format!("the policy refuses {what}: {reason}"),
        other => other.to_string(),
    };
    McpError::new(
        code_of(&error),
        message,
        Some(json!({ META_KEY: {"error_kind": kind} })),
    )
}

/// `completion/complete`: the prompt or template's server completes it, once the rules let the
/// prompt (with the arguments given so far) or the template through.
pub(crate) async fn complete(
    caller: Caller,
    mut request: CompleteRequestParams,
) -> Result<CompleteResult, McpError> {
    let Caller {
        loaded, session, ..
    } = caller;
    let upstreams = &loaded.upstreams.upstreams;
    let catalog = upstreams.catalog();
    let (server, access) = match &request.r#ref {
        Reference::Prompt(prompt) => {
            let (name, _) = resolve(&loaded, CallKind::Prompt, prompt.name.clone());
            let Some((server, remote)) = catalog.route_prompt(&name) else {
                return Err(McpError::invalid_params(
                    format!(
                        "no MCP server of the policy has the prompt {:?} (prompts are named <server>.<prompt>)",
                        toolgate::error::cut_name(&prompt.name)
                    ),
                    None,
                ));
            };
            let given = request
                .context
                .as_ref()
                .and_then(|c| c.arguments.clone())
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            let access = Access::prompt("complete", &name, given, None);
            let remote = remote.to_owned();
            request.r#ref = Reference::for_prompt(remote);
            (server, access)
        }
        Reference::Resource(template) => {
            let server = match catalog.route_template(&template.uri) {
                Some(server) => server,
                None => catalog
                    .route_uri(&template.uri, &upstreams.names())
                    .map_err(|why| McpError::resource_not_found(why, None))?,
            };
            (server, Access::resource("complete", &template.uri, None))
        }
        _ => {
            return Err(McpError::invalid_params(
                "toolgate completes the arguments of prompts (ref/prompt) and resource templates (ref/resource) only",
                None,
            ));
        }
    };
    loaded
        .engine
        .judge(&session, &access)
        .map_err(|e| refused(e, &format!("completing {}", access.name())))?;
    let mut result = upstreams
        .complete(server, request)
        .await
        .map_err(|e| McpError::internal_error(e.message, None))?;
    // The most values a completion may hold (MCP).
    result
        .completion
        .values
        .truncate(CompletionInfo::MAX_VALUES);
    Ok(result)
}

/// `resources/subscribe`: kept with this connection; the server is asked once per URI.
pub(crate) async fn subscribe(
    caller: Caller,
    request: SubscribeRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<(), McpError> {
    let Caller {
        shared,
        loaded,
        session,
        client,
    } = caller;
    let upstreams = &loaded.upstreams.upstreams;
    let (uri, _) = resolve(&loaded, CallKind::Resource, request.uri);
    let catalog = upstreams.catalog();
    let server = catalog
        .route_uri(&uri, &upstreams.names())
        .map_err(|why| McpError::resource_not_found(why, None))?;
    let names = upstreams.names();
    if !upstreams.declared(server).subscribe {
        return Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "the MCP server {} that has this resource does not take subscriptions",
                names[server]
            ),
            None,
        ));
    }
    let access = Access::resource("subscribe", &uri, None);
    loaded
        .engine
        .judge(&session, &access)
        .map_err(|e| refused(e, &format!("watching {uri}")))?;
    let subscriptions = &shared.subscriptions;
    match subscriptions.add(client, &context.peer, upstreams, server, &uri) {
        Ok(true) => {}
        Ok(false) => return Ok(()),
        Err(Refused::TooMany) => {
            return Err(McpError::invalid_request(
                format!(
                    "this connection holds {MAX_PER_CLIENT} subscriptions already, the most toolgate keeps for one; unsubscribe from one first"
                ),
                None,
            ));
        }
    }
    if let Err(e) = upstreams.subscribe(server, &uri).await {
        subscriptions.remove(client, upstreams, &uri);
        return Err(McpError::internal_error(e.message, None));
    }
    Ok(())
}

/// `resources/unsubscribe`: the server is told once no connection holds the URI.
pub(crate) async fn unsubscribe(
    caller: Caller,
    request: UnsubscribeRequestParams,
) -> Result<(), McpError> {
    let Caller {
        shared,
        loaded,
        client,
        ..
    } = caller;
    let upstreams = &loaded.upstreams.upstreams;
    let (uri, _) = resolve(&loaded, CallKind::Resource, request.uri);
    if let Some(server) = shared.subscriptions.remove(client, upstreams, &uri) {
        upstreams.unsubscribe(server, &uri).await;
    }
    Ok(())
}
