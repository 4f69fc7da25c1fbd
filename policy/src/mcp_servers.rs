//! Loading the `mcp_servers:` section: upstream MCP servers, each reached by a child process
//! (`command`) or over Streamable HTTP (`url`).
//!
//! The schema has checked the shape (a name of `[A-Za-z0-9_-]`, exactly one of `command` and
//! `url`, `env` and `cwd` only with `command`, `headers` only with `url`, template syntax); this
//! step builds the typed [`McpServerSpec`]s, parses every template once, resolves paths against
//! the policy's directory, and reports what the schema cannot see: two servers with one name.

use std::collections::{BTreeMap, HashMap};

use crate::env_template::EnvTemplate;
use crate::error::DiagnosticKind;
use crate::model::{McpServerSpec, McpTransport};
use crate::shape::{Build, McpServer, child, item, value_pos};
use crate::yaml::{Node, Pos};

fn template(cx: &mut Build<'_>, text: &str, pos: Pos, key: &str) -> EnvTemplate {
    EnvTemplate::parse(text).unwrap_or_else(|e| {
        // The schema's pattern refuses these first; kept for a policy built another way.
        cx.report(pos, format!("{key}: {e}"), DiagnosticKind::Template);
        EnvTemplate::literal(text)
    })
}

fn templates<V>(
    cx: &mut Build<'_>,
    values: Option<BTreeMap<String, V>>,
    text: impl Fn(&V) -> &str,
    node: &Node,
    key: &str,
) -> BTreeMap<String, EnvTemplate> {
    values
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| {
            let parsed = template(
                cx,
                text(&value),
                value_pos(node, &name),
                &format!("{key}.{name}"),
            );
            (name, parsed)
        })
        .collect()
}

/// The servers of an `mcp_servers:` list, in order.
pub(crate) fn load(servers: Vec<McpServer>, node: &Node, cx: &mut Build<'_>) -> Vec<McpServerSpec> {
    let mut out = Vec::new();
    let mut seen: HashMap<String, Pos> = HashMap::new();
    for (i, shape) in servers.into_iter().enumerate() {
        let path = format!("mcp_servers[{i}]");
        let item = item(node, i);
        let Some(server) = server(shape, item, &path, cx) else {
            continue;
        };
        if let Some(first) = seen.get(&server.name) {
            let pos = value_pos(item, "name");
            cx.report(
                pos,
                format!(
                    "{path}.name: another server is already called {:?} (at line {}); names must be unique, they prefix the tools' names",
                    server.name, first.line
                ),
                DiagnosticKind::DuplicateName,
            );
            continue;
        }
        seen.insert(server.name.clone(), item.pos);
        out.push(server);
    }
    out
}

fn server(shape: McpServer, item: &Node, path: &str, cx: &mut Build<'_>) -> Option<McpServerSpec> {
    let command = shape.command.map(|parts| {
        let key = format!("{path}.command");
        let command_node = child(item, "command");
        let mut parts: Vec<EnvTemplate> = parts
            .iter()
            .enumerate()
            .map(|(i, part)| {
                template(
                    cx,
                    &part.0,
                    crate::shape::item(command_node, i).pos,
                    &format!("{key}[{i}]"),
                )
            })
            .collect();
        // A relative program path is the policy's, as plugin paths are; a bare name is looked
        // up in PATH when the server starts.
        if let Some(program) = parts.first_mut()
            && let Some(text) = program.as_literal()
            && text.contains('/')
        {
            *program = EnvTemplate::literal(cx.resolve(&text).display().to_string());
        }
        parts
    });
    let env = templates(
        cx,
        shape.env,
        |v| v.0.0.as_str(),
        child(item, "env"),
        &format!("{path}.env"),
    );
    let cwd = shape.cwd.map(|c| cx.resolve(&c.0));
    let url = shape
        .url
        .map(|url| template(cx, &url, value_pos(item, "url"), &format!("{path}.url")));
    let headers = templates(
        cx,
        shape.headers,
        |v| v.0.0.as_str(),
        child(item, "headers"),
        &format!("{path}.headers"),
    );
    let mut startup_timeout = Some(McpServerSpec::DEFAULT_STARTUP_TIMEOUT);
    if let Some(timeout) = shape.startup_timeout {
        let pos = value_pos(item, "startup_timeout");
        if let Some(timeout) = cx.duration(&timeout, pos, &format!("{path}.startup_timeout")) {
            startup_timeout = timeout;
        }
    }
    // The schema requires a name and exactly one of command and url.
    let transport = match (command, url) {
        (Some(command), None) => McpTransport::Stdio { command, env, cwd },
        (None, Some(url)) => McpTransport::Http { url, headers },
        _ => return None,
    };
    Some(McpServerSpec {
        name: shape.name,
        transport,
        searchable: shape.searchable.is_some_and(|f| f.0),
        startup_timeout,
        position: cx.position(item.pos),
    })
}
