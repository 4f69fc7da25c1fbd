//! The `mcp_servers:` section: upstream MCP servers reached by a child process or over
//! Streamable HTTP, read into typed settings, with errors at their line and column.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toolgate_policy::{
    DiagnosticKind, EnvTemplate, McpClientRequests, McpServerSpec, McpTransport, Policy,
    PolicyError, RequestAccess, load_str,
};

fn load(yaml: &str) -> Policy {
    match load_str(yaml, Path::new("dir/policy.yaml")) {
        Ok(policy) => policy,
        Err(error) => panic!("policy should load:\n{error}"),
    }
}

fn error_of(yaml: &str) -> PolicyError {
    match load_str(yaml, Path::new("bad.yaml")) {
        Ok(policy) => panic!("expected an error, loaded {policy:#?}"),
        Err(error) => error,
    }
}

fn only_server(policy: &Policy) -> &McpServerSpec {
    assert_eq!(policy.mcp_servers.len(), 1, "{:#?}", policy.mcp_servers);
    &policy.mcp_servers[0]
}

fn literal(t: &EnvTemplate) -> String {
    t.as_literal().expect("no variables")
}

#[test]
fn a_policy_without_the_section_has_no_servers() {
    assert!(load("version: 1\n").mcp_servers.is_empty());
}

#[test]
fn a_command_server_is_read_with_its_defaults_and_position() {
    let policy = load(
        "version: 1\nmcp_servers:\n  - name: time\n    command: [mcp-server-time, --local-timezone, UTC]\n",
    );
    let server = only_server(&policy);
    assert_eq!(server.name, "time");
    assert!(!server.searchable);
    assert_eq!(
        server.startup_timeout,
        Some(McpServerSpec::DEFAULT_STARTUP_TIMEOUT)
    );
    let at = server.position.as_ref().expect("a position");
    assert_eq!((at.line, at.column), (3, 5));
    let McpTransport::Stdio { command, env, cwd } = &server.transport else {
        panic!("a stdio server: {server:#?}");
    };
    let words: Vec<String> = command.iter().map(literal).collect();
    assert_eq!(words, ["mcp-server-time", "--local-timezone", "UTC"]);
    assert!(env.is_empty());
    assert_eq!(*cwd, None);
}

#[test]
fn a_relative_program_path_and_cwd_are_the_policy_directorys() {
    let policy = load(
        "version: 1\nmcp_servers:\n  - name: local\n    command: [./servers/run.sh, ./arg]\n    cwd: work\n",
    );
    let McpTransport::Stdio { command, cwd, .. } = &only_server(&policy).transport else {
        panic!("a stdio server");
    };
    assert_eq!(
        PathBuf::from(literal(&command[0])),
        Path::new("dir").join("./servers/run.sh")
    );
    assert_eq!(
        literal(&command[1]),
        "./arg",
        "arguments are left as they are"
    );
    assert_eq!(cwd.as_deref(), Some(Path::new("dir/work")));
}

#[test]
fn a_bare_program_name_is_left_for_path_lookup() {
    let policy =
        load("version: 1\nmcp_servers:\n  - name: t\n    command: [uvx, mcp-server-time]\n");
    let McpTransport::Stdio { command, .. } = &only_server(&policy).transport else {
        panic!("a stdio server");
    };
    assert_eq!(literal(&command[0]), "uvx");
}

#[test]
fn env_values_may_name_environment_variables() {
    let policy = load(
        "version: 1\nmcp_servers:\n  - name: gh\n    command: [gh-mcp]\n    env: {GITHUB_TOKEN: \"${MY_TOKEN}\", MODE: \"cost $$5\"}\n",
    );
    let McpTransport::Stdio { env, .. } = &only_server(&policy).transport else {
        panic!("a stdio server");
    };
    assert_eq!(env["GITHUB_TOKEN"].vars().collect::<Vec<_>>(), ["MY_TOKEN"]);
    assert_eq!(literal(&env["MODE"]), "cost $5");
}

#[test]
fn a_url_server_is_read_with_its_headers_searchable_and_timeout() {
    let policy = load(
        "version: 1\nmcp_servers:\n  - name: docs\n    url: https://mcp.example.com/mcp\n    headers: {Authorization: \"Bearer ${DOCS_TOKEN}\"}\n    searchable: true\n    startup_timeout: 5s\n",
    );
    let server = only_server(&policy);
    assert!(server.searchable);
    assert_eq!(server.startup_timeout, Some(Duration::from_secs(5)));
    let McpTransport::Http { url, headers } = &server.transport else {
        panic!("an http server: {server:#?}");
    };
    assert_eq!(literal(url), "https://mcp.example.com/mcp");
    let auth = headers["Authorization"]
        .expand(|name| (name == "DOCS_TOKEN").then(|| "abc".to_owned()))
        .expect("the variable is given");
    assert_eq!(auth, "Bearer abc");
}

#[test]
fn a_startup_timeout_of_none_means_no_bound() {
    let policy =
        load("version: 1\nmcp_servers:\n  - {name: t, command: [x], startup_timeout: none}\n");
    assert_eq!(only_server(&policy).startup_timeout, None);
}

#[test]
fn two_servers_with_one_name_are_an_error_at_the_second() {
    let error = error_of(
        "version: 1\nmcp_servers:\n  - name: time\n    command: [a]\n  - name: time\n    url: http://127.0.0.1:1/mcp\n",
    );
    let d = &error.diagnostics()[0];
    assert_eq!(
        (d.at.map(|at| (at.line, at.column)), &d.kind),
        (Some((5, 5)), &DiagnosticKind::DuplicateName)
    );
    assert!(
        d.message
            .starts_with("mcp_servers[1].name: another server is already called \"time\""),
        "{}",
        d.message
    );
}

#[test]
fn a_server_with_both_command_and_url_is_an_error_saying_what_is_expected() {
    let error = error_of(
        "version: 1\nmcp_servers:\n  - name: t\n    command: [a]\n    url: http://127.0.0.1:1/mcp\n",
    );
    let text = error.to_string();
    assert!(
        text.starts_with(
            "bad.yaml:3:5: mcp_servers[0]: expected a name and exactly one of command"
        ),
        "{text}"
    );
}

#[test]
fn headers_belong_to_url_servers_only() {
    let text = error_of(
        "version: 1\nmcp_servers:\n  - name: t\n    command: [a]\n    headers: {X-A: b}\n",
    )
    .to_string();
    assert!(text.contains("exactly one of command"), "{text}");
}

#[test]
fn a_stray_dollar_is_an_error_at_its_value() {
    let text = error_of("version: 1\nmcp_servers:\n  - name: t\n    command: [a, \"cost $5\"]\n")
        .to_string();
    assert!(text.starts_with("bad.yaml:4:"), "{text}");
    assert!(text.contains("${NAME}"), "{text}");
}

#[test]
fn a_server_name_with_a_dot_is_refused() {
    let text = error_of("version: 1\nmcp_servers:\n  - name: a.b\n    command: [a]\n").to_string();
    assert!(
        text.contains("mcp_servers[0].name: expected a server name of 1 to 64 letters"),
        "{text}"
    );
}

#[test]
fn a_url_must_be_http() {
    let text =
        error_of("version: 1\nmcp_servers:\n  - name: t\n    url: ftp://x/mcp\n").to_string();
    assert!(text.contains("an http:// or https:// URL"), "{text}");
}

// ---- client_requests ----------------------------------------------------------------------

#[test]
fn a_server_may_ask_the_client_nothing_unless_the_policy_says() {
    let policy = load("version: 1\nmcp_servers:\n  - {name: t, command: [x]}\n");
    let asks = &only_server(&policy).client_requests;
    assert_eq!(*asks, McpClientRequests::default());
    assert!(!asks.any());
    assert_eq!(asks.max_sampling_per_call, 10);
    assert_eq!(asks.timeout, Duration::from_secs(60));
}

#[test]
fn client_requests_are_read_kind_by_kind() {
    let policy = load(
        "version: 1\nmcp_servers:\n  - name: t\n    command: [x]\n    client_requests:\n      sampling: allow\n      elicitation: refuse\n      roots: allow\n      max_sampling_per_call: 3\n      timeout: 5m\n",
    );
    assert_eq!(
        only_server(&policy).client_requests,
        McpClientRequests {
            sampling: RequestAccess::Allow,
            elicitation: RequestAccess::Refuse,
            roots: RequestAccess::Allow,
            max_sampling_per_call: 3,
            timeout: Duration::from_secs(300),
        }
    );
}

#[test]
fn a_client_request_kind_is_allow_or_refuse() {
    let text = error_of(
        "version: 1\nmcp_servers:\n  - name: t\n    command: [x]\n    client_requests: {sampling: yes}\n",
    )
    .to_string();
    assert!(text.starts_with("bad.yaml:5:"), "{text}");
    assert!(
        text.contains("mcp_servers[0].client_requests.sampling") && text.contains("allow"),
        "{text}"
    );
}

#[test]
fn a_client_request_timeout_must_be_above_zero() {
    let none = error_of(
        "version: 1\nmcp_servers:\n  - name: t\n    command: [x]\n    client_requests: {timeout: none}\n",
    )
    .to_string();
    assert!(none.contains("none is not allowed"), "{none}");
    let zero = error_of(
        "version: 1\nmcp_servers:\n  - name: t\n    command: [x]\n    client_requests: {timeout: 0s}\n",
    )
    .to_string();
    assert!(
        zero.contains("mcp_servers[0].client_requests.timeout: must be above zero"),
        "{zero}"
    );
}

#[test]
fn a_sampling_cap_of_zero_is_refused() {
    let text = error_of(
        "version: 1\nmcp_servers:\n  - name: t\n    command: [x]\n    client_requests: {max_sampling_per_call: 0}\n",
    )
    .to_string();
    assert!(text.contains("a whole number from 1 to 1000000"), "{text}");
}
