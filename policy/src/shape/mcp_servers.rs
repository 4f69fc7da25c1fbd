//! An `mcp_servers:` entry as the file writes it, read into a [`McpServerSpec`]: the file writes
//! the transport as keys beside the others (`command` with `env` and `cwd`, or `url` with
//! `headers`), the model holds one [`McpTransport`].
//!
//! The schema has checked the shape (a name of `[A-Za-z0-9_-]`, exactly one of `command` and
//! `url`, `env` and `cwd` only with `command`, `headers` only with `url`, template syntax);
//! reading parses every template once and resolves paths against the policy's directory.
//! [`check_unique_names`] reports what the schema cannot see: two servers with one name.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};

use super::de::resolve;
use super::values::{self, DurationText, EnvTemplateText, Flag, PathText};
use crate::env_template::EnvTemplate;
use crate::error::{Diagnostic, DiagnosticKind, Diagnostics};
use crate::model::{McpClientRequests, McpProtocol, McpServerSpec, McpTransport, Position, here};
use crate::yaml::{Kind, Node, Pos};

/// One upstream MCP server: a name and exactly one of command (a child process speaking MCP on
/// stdio) or url (Streamable HTTP).
#[derive(Deserialize, JsonSchema)]
#[schemars(
    inline,
    deny_unknown_fields,
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
struct McpServer {
    /// The first part of the server's tool names (time gives time.get_current_time): letters,
    /// digits, _ and -, at most 64 bytes, unique among the servers.
    #[schemars(
        regex(pattern = r"^[A-Za-z0-9_-]{1,64}$"),
        extend("x-expected" = "a server name of 1 to 64 letters, digits, _ and -")
    )]
    name: String,
    /// The program and its arguments, run as a child process that speaks MCP on its standard input
    /// and output. A relative program path containing / is resolved against the policy file's
    /// directory; a bare name is looked up in PATH.
    #[schemars(
        length(min = 1),
        extend("x-expected" = "a list: the program, then its arguments")
    )]
    #[serde(default)]
    #[schemars(with = "Vec<EnvTemplateText>")]
    command: Option<Vec<EnvTemplate>>,
    /// Environment variables set for the child process, on top of the environment it inherits.
    #[schemars(extend("propertyNames" = { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" }))]
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, EnvValue>")]
    env: BTreeMap<String, EnvTemplate>,
    /// The child process's working directory, relative to the policy file's directory. Default:
    /// toolgate's own.
    #[serde(default, deserialize_with = "values::optional_path")]
    #[schemars(with = "PathText")]
    cwd: Option<PathBuf>,
    /// The server's Streamable HTTP endpoint, an http:// or https:// URL.
    #[schemars(
        with = "String",
        regex(pattern = r"^https?://[^\s$]*(\$\$[^\s$]*|\$\{[A-Za-z_][A-Za-z0-9_]*\}[^\s$]*)*$"),
        extend(
            "x-expected" = "an http:// or https:// URL (${NAME} takes the value of an environment variable, $$ is a $)"
        )
    )]
    #[serde(default)]
    url: Option<EnvTemplate>,
    /// HTTP headers sent with every request to the url.
    #[schemars(extend("propertyNames" = { "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }))]
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, HeaderValue>")]
    headers: BTreeMap<String, EnvTemplate>,
    /// Put this server's tools in the search catalog (needs search) instead of always showing them.
    /// Default false.
    #[serde(default)]
    #[schemars(with = "Flag")]
    searchable: bool,
    /// How long starting the server may take: spawning or connecting, the MCP handshake and the
    /// first tool list. none = no bound. Default 30s.
    #[serde(
        default = "default_startup_timeout",
        deserialize_with = "values::duration_or_none"
    )]
    #[schemars(with = "DurationText")]
    startup_timeout: Option<Duration>,
    /// What the server may ask the client that made a call (sampling, elicitation, roots) while
    /// the call runs. Default: nothing.
    #[serde(default)]
    client_requests: McpClientRequests,
    /// A pins file (relative to the policy file's directory) holding the hashes of this server's
    /// tool definitions as they were approved; toolgate upstream pin POLICY writes it. A tool
    /// whose definition differs from its pin, or that has none, is held back (left out, with a
    /// warning naming what changed) until it is pinned again; the other tools keep working.
    #[serde(default, deserialize_with = "values::optional_path")]
    #[schemars(with = "PathText")]
    pins: Option<PathBuf>,
    /// The protocol revision toolgate speaks to the server: auto (the initialize handshake of
    /// the 2025 revisions, at the newest one the server agrees to; server/discover and
    /// 2026-07-28 for a server that has no handshake) or 2026-07-28 (server/discover only).
    /// Default auto.
    #[serde(default)]
    protocol: McpProtocol,
    #[serde(skip_deserializing, default = "here")]
    #[schemars(skip)]
    position: Option<Position>,
}

/// The variable's value.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(inline, extend("x-key" = "variable"))]
struct EnvValue(EnvTemplateText);

/// The header's value.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(inline, extend("x-key" = "header"))]
struct HeaderValue(EnvTemplateText);

fn default_startup_timeout() -> Option<Duration> {
    Some(McpServerSpec::DEFAULT_STARTUP_TIMEOUT)
}

impl<'de> Deserialize<'de> for McpServerSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let server = McpServer::deserialize(deserializer)?;
        // A relative program path is the policy's, as plugin paths are; a bare name is looked
        // up in PATH when the server starts.
        let command = server.command.map(|mut parts| {
            if let Some(program) = parts.first_mut()
                && let Some(text) = program.as_literal()
                && text.contains('/')
            {
                *program = EnvTemplate::literal(resolve(&text).display().to_string());
            }
            parts
        });
        // The schema requires exactly one of command and url.
        let transport = match (command, server.url) {
            (Some(command), None) => McpTransport::Stdio {
                command,
                env: server.env,
                cwd: server.cwd,
            },
            (None, Some(url)) => McpTransport::Http {
                url,
                headers: server.headers,
            },
            _ => return Err(serde::de::Error::missing_field("command")),
        };
        Ok(McpServerSpec {
            name: server.name,
            transport,
            searchable: server.searchable,
            startup_timeout: server.startup_timeout,
            client_requests: server.client_requests,
            pins: server.pins,
            protocol: server.protocol,
            position: server.position,
        })
    }
}

/// The schema of an `mcp_servers:` entry.
impl JsonSchema for McpServerSpec {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        McpServer::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        McpServer::json_schema(generator)
    }
}

/// Two servers with one name: the second is reported at its name, naming the line of the
/// first (names prefix the tools' names, so they must be unique). `node` is the schema-valid
/// `mcp_servers:` list.
pub(crate) fn check_unique_names(node: &Node, file: &Path, problems: &mut Diagnostics) {
    let mut seen: HashMap<&str, Pos> = HashMap::new();
    for (i, item) in node.items().iter().enumerate() {
        let Some(entry) = item.get("name") else {
            continue;
        };
        let Kind::Str(name, _) = &entry.value.kind else {
            continue;
        };
        if let Some(first) = seen.get(name.as_str()) {
            problems.push(Diagnostic {
                file: file.to_path_buf(),
                at: Some(entry.value_pos()),
                message: format!(
                    "mcp_servers[{i}].name: another server is already called {name:?} (at line {}); names must be unique, they prefix the tools' names",
                    first.line
                ),
                kind: DiagnosticKind::DuplicateName,
            });
            continue;
        }
        seen.insert(name, item.pos);
    }
}
