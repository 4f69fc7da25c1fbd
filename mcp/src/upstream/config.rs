//! From a policy's server entry to what is started: `${VAR}` filled in from the environment,
//! headers checked, and a description for messages that never shows a filled-in secret.

use std::collections::HashMap;
use std::path::PathBuf;

use http::{HeaderName, HeaderValue};
use toolgate_policy::{EnvTemplate, McpServerSpec, McpTransport};

use super::error::UpstreamError;

/// A child process to spawn.
#[derive(Debug, Clone)]
pub(crate) struct StdioLaunch {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
}

/// A Streamable HTTP endpoint to connect to.
#[derive(Debug, Clone)]
pub(crate) struct HttpLaunch {
    pub url: String,
    pub headers: HashMap<HeaderName, HeaderValue>,
}

/// What starting a server means, with every variable filled in.
#[derive(Debug, Clone)]
pub(crate) enum Launch {
    Stdio(StdioLaunch),
    Http(HttpLaunch),
}

/// Headers the MCP transport sets itself; a policy cannot override them.
const TRANSPORT_HEADERS: &[&str] = &["accept", "mcp-session-id", "last-event-id", "content-type"];

/// Fills in the server's settings from the process environment.
pub(crate) fn launch(spec: &McpServerSpec) -> Result<Launch, UpstreamError> {
    launch_with(spec, &|name| std::env::var(name).ok())
}

/// [`launch`] with variables from `lookup`.
pub(crate) fn launch_with(
    spec: &McpServerSpec,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Launch, UpstreamError> {
    let fill = |template: &EnvTemplate, setting: String| {
        template
            .expand(lookup)
            .map_err(|source| UpstreamError::MissingVar { setting, source })
    };
    match &spec.transport {
        McpTransport::Stdio { command, env, cwd } => {
            let mut words = Vec::with_capacity(command.len());
            for (i, word) in command.iter().enumerate() {
                words.push(fill(word, format!("command[{i}]"))?);
            }
            let mut words = words.into_iter();
            // The schema requires at least the program.
            let program = words.next().unwrap_or_default();
            let mut vars = Vec::with_capacity(env.len());
            for (name, value) in env {
                vars.push((name.clone(), fill(value, format!("env.{name}"))?));
            }
            Ok(Launch::Stdio(StdioLaunch {
                program,
                args: words.collect(),
                env: vars,
                cwd: cwd.clone(),
            }))
        }
        McpTransport::Http { url, headers } => {
            let url = fill(url, "url".to_owned())?;
            let mut out = HashMap::with_capacity(headers.len());
            for (name, value) in headers {
                let value = fill(value, format!("headers.{name}"))?;
                let bad = |reason: String| UpstreamError::BadHeader {
                    name: name.clone(),
                    reason,
                };
                let header = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|e| bad(format!("not a header name ({e})")))?;
                if TRANSPORT_HEADERS.contains(&header.as_str()) {
                    return Err(bad("the MCP transport sets it itself".to_owned()));
                }
                let mut value = HeaderValue::from_str(&value).map_err(|_| {
                    bad("its value holds a character a header cannot carry (a line break or a control character)".to_owned())
                })?;
                // Kept out of debug output: header values are usually credentials.
                value.set_sensitive(true);
                out.insert(header, value);
            }
            Ok(Launch::Http(HttpLaunch { url, headers: out }))
        }
    }
}

/// How messages name the server: its name and how it is reached, as the policy writes it
/// (variables unexpanded, so no secret is shown).
pub(crate) fn describe(spec: &McpServerSpec) -> String {
    let how = match &spec.transport {
        McpTransport::Stdio { command, .. } => format!(
            "stdio: {}",
            command
                .iter()
                .map(EnvTemplate::as_written)
                .collect::<Vec<_>>()
                .join(" ")
        ),
        McpTransport::Http { url, .. } => format!("http: {}", url.as_written()),
    };
    format!("MCP server {} ({how})", spec.name)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn spec(transport: McpTransport) -> McpServerSpec {
        McpServerSpec {
            name: "s".into(),
            transport,
            searchable: false,
            startup_timeout: None,
            protocol: Default::default(),
            client_requests: Default::default(),
            pins: None,
            position: None,
        }
    }

    fn t(text: &str) -> EnvTemplate {
        EnvTemplate::parse(text).expect("a valid template")
    }

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "s3cret".to_owned())
    }

    #[test]
    fn a_command_is_filled_in_from_the_environment() {
        let s = spec(McpTransport::Stdio {
            command: vec![t("srv"), t("--key=${TOKEN}")],
            env: BTreeMap::from([("K".to_owned(), t("${TOKEN}"))]),
            cwd: None,
        });
        let Launch::Stdio(l) = launch_with(&s, &env).unwrap() else {
            panic!("stdio");
        };
        assert_eq!(l.program, "srv");
        assert_eq!(l.args, ["--key=s3cret"]);
        assert_eq!(l.env, [("K".to_owned(), "s3cret".to_owned())]);
    }

    #[test]
    fn a_missing_variable_names_the_setting_and_the_variable() {
        let s = spec(McpTransport::Http {
            url: t("http://127.0.0.1:1/mcp"),
            headers: BTreeMap::from([("Authorization".to_owned(), t("Bearer ${NOPE}"))]),
        });
        let e = launch_with(&s, &env).unwrap_err();
        assert_eq!(
            e.report(),
            "headers.Authorization needs the environment variable: the environment variable NOPE is not set"
        );
    }

    #[test]
    fn a_header_the_transport_sets_is_refused() {
        let s = spec(McpTransport::Http {
            url: t("http://127.0.0.1:1/mcp"),
            headers: BTreeMap::from([("Mcp-Session-Id".to_owned(), t("x"))]),
        });
        let e = launch_with(&s, &env).unwrap_err();
        assert!(e.to_string().contains("sets it itself"), "{e}");
    }

    #[test]
    fn a_header_value_with_a_line_break_is_refused() {
        let s = spec(McpTransport::Http {
            url: t("http://127.0.0.1:1/mcp"),
            headers: BTreeMap::from([("X-A".to_owned(), t("a\r\nInjected: yes"))]),
        });
        assert!(matches!(
            launch_with(&s, &env),
            Err(UpstreamError::BadHeader { .. })
        ));
    }

    #[test]
    fn the_description_shows_variables_unexpanded() {
        let s = spec(McpTransport::Stdio {
            command: vec![t("srv"), t("--key=${TOKEN}")],
            env: BTreeMap::new(),
            cwd: None,
        });
        assert_eq!(describe(&s), "MCP server s (stdio: srv --key=${TOKEN})");
    }
}
