//! Loading the `mcp_servers:` section: upstream MCP servers, each reached by a child process
//! (`command`) or over Streamable HTTP (`url`).
//!
//! The schema has checked the shape (a name of `[A-Za-z0-9_-]`, exactly one of `command` and
//! `url`, `env` and `cwd` only with `command`, `headers` only with `url`, template syntax); this
//! step builds the typed [`McpServerSpec`]s, parses every template once, resolves paths against
//! the policy's directory, and reports what the schema cannot see: two servers with one name.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::Deserialize;

use super::build::{Build, child, item, value_pos};
use super::values::{DurationText, EnvTemplateText, Flag, PathText, names_only};
use crate::env_template::EnvTemplate;
use crate::error::DiagnosticKind;
use crate::model::{McpProtocol, McpServerSpec, McpTransport};
use crate::yaml::{Node, Pos};

/// One upstream MCP server: a name and exactly one of command (a child process speaking MCP on
/// stdio) or url (Streamable HTTP).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    inline,
    extend(
        "oneOf" = [
            {
                "required": ["command"],
                "not": { "anyOf": [{ "required": ["url"] }, { "required": ["headers"] }] }
            },
            {
                "required": ["url"],
                "not": {
                    "anyOf": [{ "required": ["command"] }, { "required": ["env"] }, { "required": ["cwd"] }]
                }
            }
        ],
        "x-expected" = "a name and exactly one of command (a child process, with optional env and cwd) or url (Streamable HTTP, with optional headers)"
    )
)]
pub(crate) struct McpServer {
    /// The first part of the server's tool names (time gives time.get_current_time): letters,
    /// digits, _ and -, at most 64 bytes, unique among the servers.
    #[schemars(
        regex(pattern = r"^[A-Za-z0-9_-]{1,64}$"),
        extend("x-expected" = "a server name of 1 to 64 letters, digits, _ and -")
    )]
    pub name: String,
    /// The program and its arguments, run as a child process that speaks MCP on its standard input
    /// and output. A relative program path containing / is resolved against the policy file's
    /// directory; a bare name is looked up in PATH.
    #[schemars(
        length(min = 1),
        extend("x-expected" = "a list: the program, then its arguments")
    )]
    pub command: Option<Vec<EnvTemplateText>>,
    /// Environment variables set for the child process, on top of the environment it inherits.
    #[schemars(extend("propertyNames" = { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" }))]
    pub env: Option<BTreeMap<String, EnvValue>>,
    /// The child process's working directory, relative to the policy file's directory. Default:
    /// toolgate's own.
    pub cwd: Option<PathText>,
    /// The server's Streamable HTTP endpoint, an http:// or https:// URL.
    #[schemars(
        regex(pattern = r"^https?://[^\s$]*(\$\$[^\s$]*|\$\{[A-Za-z_][A-Za-z0-9_]*\}[^\s$]*)*$"),
        extend(
            "x-expected" = "an http:// or https:// URL (${NAME} takes the value of an environment variable, $$ is a $)"
        )
    )]
    pub url: Option<String>,
    /// HTTP headers sent with every request to the url.
    #[schemars(extend("propertyNames" = { "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }))]
    pub headers: Option<BTreeMap<String, HeaderValue>>,
    /// Put this server's tools in the search catalog (needs search) instead of always showing them.
    /// Default false.
    pub searchable: Option<Flag>,
    /// How long starting the server may take: spawning or connecting, the MCP handshake and the
    /// first tool list. none = no bound. Default 30s.
    pub startup_timeout: Option<DurationText>,
    /// The protocol revision toolgate speaks to the server: auto (the initialize handshake of
    /// the 2025 revisions, at the newest one the server agrees to; server/discover and
    /// 2026-07-28 for a server that has no handshake) or 2026-07-28 (server/discover only).
    /// Default auto.
    pub protocol: Option<ProtocolKey>,
}

// `mcp_servers[].protocol`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[schemars(inline, transform = names_only)]
pub(crate) enum ProtocolKey {
    #[serde(rename = "auto")]
    Auto,
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
}

/// The variable's value.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(inline, extend("x-key" = "variable"))]
pub(crate) struct EnvValue(pub EnvTemplateText);

/// The header's value.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(inline, extend("x-key" = "header"))]
pub(crate) struct HeaderValue(pub EnvTemplateText);

// ---- From the file's shape to the model -------------------------------------------------

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
                    super::build::item(command_node, i).pos,
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
        protocol: match shape.protocol {
            None | Some(ProtocolKey::Auto) => McpProtocol::Auto,
            Some(ProtocolKey::V2026_07_28) => McpProtocol::V2026_07_28,
        },
        position: cx.position(item.pos),
    })
}
