//! What a server offers besides tools, for routing reads and gets: its resources, resource
//! templates and prompts, and the capabilities it declared for them. (What pinning reads of them
//! is in [`offered`](super::offered).) Listed page by page when it starts and again when it says
//! a list changed, each item checked on its own: an item toolgate cannot offer costs only
//! itself (W2), left out with a line saying why. A list the server fails to give is empty,
//! with a line saying why; it never stops the server's tools.

use std::collections::HashSet;
use std::sync::Arc;

use rmcp::model::{
    ClientRequest, ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest,
    PaginatedRequestParams, Prompt, Resource, ResourceTemplate, ServerCapabilities, ServerResult,
};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;

use toolgate_policy::McpServerSpec;

use super::listing::MAX_TOOL_BYTES;
use super::pins::{Pin, PinFile, changed_fields, pin_of};
use super::template::UriTemplate;

/// The most pages of one list read from one server.
const MAX_PAGES: usize = 100;
/// The most items of one list kept from one server.
pub(crate) const MAX_ITEMS: usize = 10_000;
/// The longest prompt name, in bytes.
const MAX_PROMPT_NAME_BYTES: usize = 128;

/// What a server declared it can do beyond tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Declared {
    pub resources: bool,
    pub subscribe: bool,
    pub prompts: bool,
    pub completions: bool,
}

impl Declared {
    fn of(capabilities: &ServerCapabilities) -> Self {
        let resources = capabilities.resources.as_ref();
        Declared {
            resources: resources.is_some(),
            subscribe: resources.and_then(|r| r.subscribe).unwrap_or(false),
            prompts: capabilities.prompts.is_some(),
            completions: capabilities.completions.is_some(),
        }
    }
}

/// A server's resources, templates and prompts as last listed, checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Offered {
    pub declared: Declared,
    pub resources: Vec<Resource>,
    pub templates: Vec<(ResourceTemplate, UriTemplate)>,
    pub prompts: Vec<Prompt>,
    /// A line for each item left out and each list that could not be read.
    pub left_out: Vec<String>,
}

/// The lists a server can be asked for.
#[derive(Debug, Clone, Copy)]
enum List {
    Resources,
    Templates,
    Prompts,
}

impl List {
    /// The key of the items in a page, and how messages name the list.
    fn key(self) -> (&'static str, &'static str) {
        match self {
            List::Resources => ("resources", "resources"),
            List::Templates => ("resourceTemplates", "resource templates"),
            List::Prompts => ("prompts", "prompts"),
        }
    }

    fn request(self, params: PaginatedRequestParams) -> ClientRequest {
        match self {
            List::Resources => {
                ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(params))
            }
            List::Templates => ClientRequest::ListResourceTemplatesRequest(
                ListResourceTemplatesRequest::with_param(params),
            ),
            List::Prompts => {
                ClientRequest::ListPromptsRequest(ListPromptsRequest::with_param(params))
            }
        }
    }
}

/// Lists what `peer` (the server `server`) offers besides tools, as far as it declared it.
pub(crate) async fn list_offered(peer: &Peer<RoleClient>, server: &str) -> Offered {
    let declared = peer
        .peer_info()
        .map(|info| Declared::of(&info.capabilities))
        .unwrap_or_default();
    let mut offered = Offered {
        declared,
        ..Offered::default()
    };
    if declared.resources {
        let mut seen = HashSet::new();
        for raw in items(peer, List::Resources, &mut offered.left_out).await {
            match check_resource(raw) {
                Ok(resource) if seen.insert(resource.uri.clone()) => {
                    offered.resources.push(resource);
                }
                Ok(resource) => offered.left_out.push(format!(
                    "its resource {:?} is listed twice; the second is left out",
                    toolgate::error::cut_name(&resource.uri)
                )),
                Err(line) => offered.left_out.push(line),
            }
        }
        let mut seen = HashSet::new();
        for raw in items(peer, List::Templates, &mut offered.left_out).await {
            match check_template(raw) {
                Ok((template, parsed)) if seen.insert(template.uri_template.clone()) => {
                    offered.templates.push((template, parsed));
                }
                Ok((template, _)) => offered.left_out.push(format!(
                    "its resource template {:?} is listed twice; the second is left out",
                    toolgate::error::cut_name(&template.uri_template)
                )),
                Err(line) => offered.left_out.push(line),
            }
        }
    }
    if declared.prompts {
        let mut seen = HashSet::new();
        for raw in items(peer, List::Prompts, &mut offered.left_out).await {
            match check_prompt(server, raw) {
                Ok(prompt) if seen.insert(prompt.name.clone()) => offered.prompts.push(prompt),
                Ok(prompt) => offered.left_out.push(format!(
                    "its prompt {:?} is listed twice; the second is left out",
                    toolgate::error::cut_name(&prompt.name)
                )),
                Err(line) => offered.left_out.push(line),
            }
        }
    }
    offered
}

/// Every item of one list, page by page, at most [`MAX_PAGES`] pages and [`MAX_ITEMS`] items.
/// A page that fails ends the list there, with a line in `left_out`; a server that does not
/// know the request (`-32601`: many have no templates) has an empty list, silently.
async fn items(peer: &Peer<RoleClient>, list: List, left_out: &mut Vec<String>) -> Vec<Value> {
    let (key, named) = list.key();
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let page = match peer.send_request(list.request(params)).await {
            Ok(page) => page,
            Err(rmcp::ServiceError::McpError(e))
                if e.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND =>
            {
                return out;
            }
            Err(e) => {
                left_out.push(format!(
                    "its {named} could not be listed ({}); they are left out",
                    super::error::chain(&e)
                ));
                return out;
            }
        };
        let Some(Value::Object(mut page)) = page_value(page) else {
            left_out.push(format!(
                "it answered a request for its {named} with something that is not a list; they are left out"
            ));
            return out;
        };
        if let Some(Value::Array(items)) = page.remove(key) {
            for item in items {
                if out.len() == MAX_ITEMS {
                    left_out.push(format!(
                        "it lists more than {MAX_ITEMS} {named}; the ones after those are left out"
                    ));
                    return out;
                }
                out.push(item);
            }
        }
        match page.remove("nextCursor") {
            Some(Value::String(next)) if !next.is_empty() => cursor = Some(next),
            _ => return out,
        }
    }
    left_out.push(format!(
        "it lists its {named} on more than {MAX_PAGES} pages; the ones after those are left out"
    ));
    out
}

/// A page as JSON, whether rmcp read it as the list it asked for or (one item not being what
/// rmcp expects) as a custom result: each item is then checked on its own.
fn page_value(page: ServerResult) -> Option<Value> {
    match page {
        ServerResult::ListResourcesResult(p) => serde_json::to_value(p).ok(),
        ServerResult::ListResourceTemplatesResult(p) => serde_json::to_value(p).ok(),
        ServerResult::ListPromptsResult(p) => serde_json::to_value(p).ok(),
        ServerResult::CustomResult(p) => Some(p.0),
        _ => None,
    }
}

/// How a line names an item: by `field` when it has one.
fn shown(raw: &Value, field: &str) -> String {
    match raw.get(field).and_then(Value::as_str) {
        Some(name) => format!("{:?}", toolgate::error::cut_name(name)),
        None => format!("without a {field}"),
    }
}

/// The item's size as compact JSON, checked against [`MAX_TOOL_BYTES`].
fn check_size(raw: &Value, what: &str, field: &str) -> Result<(), String> {
    let bytes = raw.to_string().len();
    if bytes > MAX_TOOL_BYTES {
        return Err(format!(
            "its {what} {} is left out: its definition is {bytes} bytes of JSON, over the {} KiB toolgate offers",
            shown(raw, field),
            MAX_TOOL_BYTES / 1024
        ));
    }
    Ok(())
}

fn check_resource(raw: Value) -> Result<Resource, String> {
    check_size(&raw, "resource", "uri")?;
    let name = shown(&raw, "uri");
    let resource: Resource = serde_json::from_value(raw)
        .map_err(|e| format!("its resource {name} is left out: it is not an MCP resource: {e}"))?;
    toolgate::access::normalize_uri(&resource.uri).map_err(|e| {
        format!("its resource {name} is left out: its URI cannot be judged by the policy: {e}")
    })?;
    Ok(resource)
}

fn check_template(raw: Value) -> Result<(ResourceTemplate, UriTemplate), String> {
    check_size(&raw, "resource template", "uriTemplate")?;
    let name = shown(&raw, "uriTemplate");
    let template: ResourceTemplate = serde_json::from_value(raw).map_err(|e| {
        format!("its resource template {name} is left out: it is not an MCP resource template: {e}")
    })?;
    let parsed = UriTemplate::parse(&template.uri_template).map_err(|e| {
        format!("its resource template {name} is left out: it is not a URI template: {e}")
    })?;
    Ok((template, parsed))
}

fn check_prompt(server: &str, raw: Value) -> Result<Prompt, String> {
    check_size(&raw, "prompt", "name")?;
    let name = shown(&raw, "name");
    let prompt: Prompt = serde_json::from_value(raw)
        .map_err(|e| format!("its prompt {name} is left out: it is not an MCP prompt: {e}"))?;
    let full = format!("{server}.{}", prompt.name);
    if prompt.name.is_empty() {
        return Err("its prompt without a name is left out".to_owned());
    }
    if full.len() > MAX_PROMPT_NAME_BYTES {
        return Err(format!(
            "its prompt {name} is left out: {:?} is over {MAX_PROMPT_NAME_BYTES} bytes",
            toolgate::error::cut_name(&full)
        ));
    }
    if prompt.name.chars().any(char::is_control) {
        return Err(format!(
            "its prompt {name} is left out: its name holds a control character"
        ));
    }
    Ok(prompt)
}

/// `offered` as `spec`'s pins let it through (all of it when the server is not pinned), and a
/// line for each item held back: a resource, template or prompt whose definition differs from
/// its pin, or that has no pin, is held back until it is pinned again, as a tool is (see
/// [`pins`](super::pins)); a pins file that cannot be used holds back everything.
pub(crate) fn pinned(spec: &McpServerSpec, offered: &Arc<Offered>) -> (Arc<Offered>, Vec<String>) {
    let Some(path) = &spec.pins else {
        return (offered.clone(), Vec::new());
    };
    let pins = match PinFile::read(path) {
        Ok(mut file) => file.servers.remove(&spec.name).ok_or_else(|| {
            format!(
                "the pins file {} has no pins for this server",
                path.display()
            )
        }),
        Err(e) => Err(super::error::chain(&e)),
    };
    let mut held = Vec::new();
    let mut check = |what: &str, key: &str, definition: Value, pinned: Option<&Pin>| -> bool {
        let why = match (&pins, pinned) {
            (Err(reason), _) => reason.clone(),
            (Ok(_), None) => "it is not pinned (the server listed it after it was pinned)".into(),
            (Ok(_), Some(pin)) => {
                let changed = changed_fields(pin, &pin_of(&definition));
                if changed.is_empty() {
                    return true;
                }
                format!(
                    "its definition changed since it was pinned ({} changed)",
                    changed.join(", ")
                )
            }
        };
        held.push(format!(
            "its {what} {:?} is held back: {why}; review it, then run `toolgate upstream pin` on the policy to offer it again",
            toolgate::error::cut_name(key)
        ));
        false
    };
    let server = pins.as_ref().ok();
    let mut kept = Offered {
        declared: offered.declared,
        left_out: offered.left_out.clone(),
        ..Offered::default()
    };
    for resource in &offered.resources {
        let pin = server.and_then(|p| p.resources.get(&resource.uri));
        let definition = serde_json::to_value(resource).unwrap_or_default();
        if check("resource", &resource.uri, definition, pin) {
            kept.resources.push(resource.clone());
        }
    }
    for (template, parsed) in &offered.templates {
        let key = &template.uri_template;
        let pin = server.and_then(|p| p.resource_templates.get(key));
        let definition = serde_json::to_value(template).unwrap_or_default();
        if check("resource template", key, definition, pin) {
            kept.templates.push((template.clone(), parsed.clone()));
        }
    }
    for prompt in &offered.prompts {
        let pin = server.and_then(|p| p.prompts.get(&prompt.name));
        let definition = serde_json::to_value(prompt).unwrap_or_default();
        if check("prompt", &prompt.name, definition, pin) {
            kept.prompts.push(prompt.clone());
        }
    }
    (Arc::new(kept), held)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_resource_whose_uri_cannot_be_judged_is_left_out() {
        let e = check_resource(json!({"uri": "not a uri", "name": "x"})).unwrap_err();
        assert!(e.contains("cannot be judged by the policy"), "{e}");
    }

    #[test]
    fn a_template_that_does_not_parse_is_left_out() {
        let e = check_template(json!({"uriTemplate": "demo://{open", "name": "x"})).unwrap_err();
        assert!(e.contains("not a URI template"), "{e}");
    }

    #[test]
    fn a_prompt_with_a_control_character_is_left_out() {
        let e = check_prompt("s", json!({"name": "a\nb"})).unwrap_err();
        assert!(e.contains("control character"), "{e}");
    }

    #[test]
    fn a_good_prompt_is_kept() {
        let p = check_prompt(
            "s",
            json!({"name": "hello", "arguments": [{"name": "who"}]}),
        );
        assert_eq!(p.unwrap().name, "hello");
    }
}
