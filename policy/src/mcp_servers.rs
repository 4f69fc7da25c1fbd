//! Loading the `mcp_servers:` section: upstream MCP servers, each reached by a child process
//! (`command`) or over Streamable HTTP (`url`).
//!
//! The schema has checked the shape (a name of `[A-Za-z0-9_-]`, exactly one of `command` and
//! `url`, `env` and `cwd` only with `command`, `headers` only with `url`, template syntax); this
//! step builds the typed [`McpServerSpec`]s, parses every template once, resolves paths against
//! the policy's directory, and reports what the schema cannot see: two servers with one name.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::duration::parse_duration;
use crate::env_template::EnvTemplate;
use crate::error::{Diagnostic, DiagnosticKind, Diagnostics, LineColumn};
use crate::model::{McpServerSpec, McpTransport, Position};
use crate::yaml::{Entry, Node, Pos};

/// Where the section is read from: the policy file (for positions) and its directory (for
/// relative paths), and where problems go.
pub(crate) struct Context<'a> {
    pub file: &'a Path,
    pub dir: &'a Path,
    pub diagnostics: &'a mut Diagnostics,
}

impl Context<'_> {
    fn report(&mut self, pos: Pos, message: String, kind: DiagnosticKind) {
        self.diagnostics.push(Diagnostic {
            file: self.file.to_path_buf(),
            at: Some(LineColumn {
                line: pos.line,
                column: pos.column,
            }),
            message,
            kind,
        });
    }

    fn position(&self, pos: Pos) -> Position {
        Position {
            file: self.file.to_path_buf(),
            line: pos.line,
            column: pos.column,
        }
    }

    fn resolve(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.dir.join(path)
        }
    }

    fn template(&mut self, node: &Node, pos: Pos, key: &str) -> EnvTemplate {
        EnvTemplate::parse(node.str()).unwrap_or_else(|e| {
            // The schema's pattern refuses these first; kept for a policy built another way.
            self.report(pos, format!("{key}: {e}"), DiagnosticKind::Template);
            EnvTemplate::literal(node.str())
        })
    }

    fn templates(&mut self, node: &Node, key: &str) -> BTreeMap<String, EnvTemplate> {
        node.entries()
            .iter()
            .map(|e| {
                let value = self.template(&e.value, e.value_pos(), &format!("{key}.{}", e.key));
                (e.key.clone(), value)
            })
            .collect()
    }
}

/// The servers of an `mcp_servers:` list, in order.
pub(crate) fn load(node: &Node, cx: &mut Context<'_>) -> Vec<McpServerSpec> {
    let mut servers = Vec::new();
    let mut seen: HashMap<String, Pos> = HashMap::new();
    for (i, item) in node.items().iter().enumerate() {
        let path = format!("mcp_servers[{i}]");
        let Some(server) = server(item, &path, cx) else {
            continue;
        };
        if let Some(first) = seen.get(&server.name) {
            let pos = item.get("name").map_or(item.pos, Entry::value_pos);
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
        servers.push(server);
    }
    servers
}

fn server(item: &Node, path: &str, cx: &mut Context<'_>) -> Option<McpServerSpec> {
    let mut name = None;
    let mut command = None;
    let mut env = BTreeMap::new();
    let mut cwd = None;
    let mut url = None;
    let mut headers = BTreeMap::new();
    let mut searchable = false;
    let mut startup_timeout = Some(McpServerSpec::DEFAULT_STARTUP_TIMEOUT);
    for entry in item.entries() {
        let value = &entry.value;
        let key = format!("{path}.{}", entry.key);
        match entry.key.as_str() {
            "name" => name = Some(value.str().to_owned()),
            "command" => {
                let mut parts: Vec<EnvTemplate> = value
                    .items()
                    .iter()
                    .enumerate()
                    .map(|(i, n)| cx.template(n, n.pos, &format!("{key}[{i}]")))
                    .collect();
                // A relative program path is the policy's, as plugin paths are; a bare name is
                // looked up in PATH when the server starts.
                if let Some(program) = parts.first_mut()
                    && let Some(text) = program.as_literal()
                    && text.contains('/')
                {
                    *program = EnvTemplate::literal(cx.resolve(&text).display().to_string());
                }
                command = Some(parts);
            }
            "env" => env = cx.templates(value, &key),
            "cwd" => cwd = Some(cx.resolve(value.str())),
            "url" => url = Some(cx.template(value, entry.value_pos(), &key)),
            "headers" => headers = cx.templates(value, &key),
            "searchable" => searchable = value.is_true(),
            "startup_timeout" => match parse_duration(value.str()) {
                Ok(d) => startup_timeout = d,
                Err(e) => cx.report(
                    entry.value_pos(),
                    format!("{key}: {e}"),
                    DiagnosticKind::Duration,
                ),
            },
            _ => {}
        }
    }
    // The schema requires a name and exactly one of command and url.
    let transport = match (command, url) {
        (Some(command), None) => McpTransport::Stdio { command, env, cwd },
        (None, Some(url)) => McpTransport::Http { url, headers },
        _ => return None,
    };
    Some(McpServerSpec {
        name: name?,
        transport,
        searchable,
        startup_timeout,
        position: Some(cx.position(item.pos)),
    })
}
