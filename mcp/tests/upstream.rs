//! Upstream MCP servers behind an engine, against a small server written for these tests
//! (`fixtures/fake_mcp_server.py`, standard-library Python) that misbehaves on request.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate::history::ToolCall;
use toolgate::{Engine, Outcome};
use toolgate_mcp::upstream::Upstreams;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the mcp crate lives one level below the repository root")
        .to_path_buf()
}

/// The project's test Python when it is installed, else the system's (the fake server needs
/// only the standard library).
fn python() -> String {
    let venv = repo_root().join(".tools/venv/bin/python");
    if venv.is_file() {
        venv.display().to_string()
    } else {
        "python3".to_owned()
    }
}

fn fake_server() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fake_mcp_server.py")
        .display()
        .to_string()
}

/// `command: [python, fake_mcp_server.py, ARGS...]` as a YAML flow list.
fn command(args: &[&str]) -> String {
    let mut words = vec![python(), fake_server()];
    words.extend(args.iter().map(|a| a.to_string()));
    serde_json::to_string(&words).expect("strings serialize")
}

/// A started gate: the policy (with `servers` as its `mcp_servers:` items and `extra` above
/// them), its upstreams and the engine built with their tools.
struct Gate {
    engine: Engine,
    upstreams: Upstreams,
    _dir: tempfile::TempDir,
}

async fn gate(extra: &str, servers: &[String]) -> Gate {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut yaml = format!("version: 1\n{extra}\nmcp_servers:\n");
    for server in servers {
        yaml.push_str(&format!("  - {server}\n"));
    }
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, &yaml).expect("the policy is written");
    let policy = toolgate_policy::load_file(&path)
        .unwrap_or_else(|e| panic!("the policy loads:\n{e}\n{yaml}"));
    let upstreams = Upstreams::start(&policy.mcp_servers).await;
    let engine = upstreams
        .register(Engine::builder(policy))
        .build()
        .expect("the engine builds");
    Gate {
        engine,
        upstreams,
        _dir: dir,
    }
}

/// One fake server called `fake`, with `args`.
async fn fake(extra: &str, args: &[&str]) -> Gate {
    gate(
        extra,
        &[format!("{{name: fake, command: {}}}", command(args))],
    )
    .await
}

impl Gate {
    async fn call(&self, tool: &str, args: Value) -> Outcome {
        let session = self.engine.session(None).expect("no session");
        self.engine
            .call(&session, &ToolCall::new("c1", tool, args.to_string()))
            .await
    }

    async fn shutdown(self) {
        self.upstreams.shutdown().await;
    }
}

fn kind(o: &Outcome) -> Option<&'static str> {
    o.error.as_ref().map(|e| e.kind())
}

#[tokio::test]
async fn a_servers_tools_join_the_registry_as_server_dot_tool() {
    let g = fake("", &[]).await;
    let names: Vec<String> = g
        .engine
        .registry()
        .entries()
        .map(|(n, _)| n.to_owned())
        .collect();
    assert!(names.contains(&"fake.echo".to_owned()), "{names:?}");
    assert!(names.contains(&"fake.sleep".to_owned()), "{names:?}");
    let source = g
        .engine
        .registry()
        .get("fake.echo")
        .unwrap()
        .source()
        .to_string();
    assert!(source.starts_with("MCP server fake (stdio: "), "{source}");
    assert!(
        g.upstreams.problems().is_empty(),
        "{:?}",
        g.upstreams.problems()
    );
    g.shutdown().await;
}

#[tokio::test]
async fn a_call_reaches_the_server_and_its_text_comes_back() {
    let g = fake("", &[]).await;
    let o = g.call("fake.echo", json!({"text": "hello upstream"})).await;
    assert_eq!(kind(&o), None, "{o:?}");
    assert_eq!(o.content.text(), "hello upstream");
    g.shutdown().await;
}

#[tokio::test]
async fn env_and_cwd_of_the_entry_reach_the_child() {
    let work = tempfile::tempdir().unwrap();
    let server = format!(
        "{{name: fake, command: {}, env: {{GREETING: \"hi from ${{HOME}}\"}}, cwd: {}}}",
        command(&[]),
        serde_json::to_string(&work.path().display().to_string()).unwrap()
    );
    let g = gate("", &[server]).await;
    let o = g.call("fake.env", json!({"name": "GREETING"})).await;
    let home = std::env::var("HOME").unwrap_or_default();
    assert_eq!(o.content.text(), format!("hi from {home}"));
    let o = g.call("fake.cwd", json!({})).await;
    assert_eq!(
        std::fs::canonicalize(o.content.text()).unwrap(),
        std::fs::canonicalize(work.path()).unwrap()
    );
    g.shutdown().await;
}

#[tokio::test]
async fn a_server_that_exits_at_start_is_a_problem_with_its_status_and_stderr() {
    let g = fake("", &["--exit-at-start", "7"]).await;
    let problems = g.upstreams.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    let text = problems[0].to_string();
    assert!(
        text.contains("policy.yaml:4:5: MCP server fake: did not start"),
        "{text}"
    );
    assert!(text.contains("exit status: 7"), "{text}");
    assert!(text.contains("fake server: refusing to start"), "{text}");
    assert!(g.engine.registry().get("fake.echo").is_none());
    g.shutdown().await;
}

#[tokio::test]
async fn a_program_that_does_not_exist_is_a_problem_naming_it() {
    let g = gate(
        "",
        &["{name: ghost, command: [/nonexistent/mcp-server-ghost]}".to_owned()],
    )
    .await;
    let text = g.upstreams.problems()[0].to_string();
    assert!(
        text.contains("cannot start /nonexistent/mcp-server-ghost"),
        "{text}"
    );
    g.shutdown().await;
}

#[tokio::test]
async fn a_server_that_hangs_at_start_is_a_problem_after_its_startup_timeout() {
    // The server never answers: without its startup timeout the gate would not start.
    let servers = [format!(
        "{{name: fake, command: {}, startup_timeout: 300ms}}",
        command(&["--hang-at-start"])
    )];
    let g = tokio::time::timeout(Duration::from_secs(60), gate("", &servers))
        .await
        .expect("the gate starts once the server's startup timeout has passed");
    let text = g.upstreams.problems()[0].to_string();
    assert!(text.contains("did not start within 300ms"), "{text}");
    g.shutdown().await;
}

#[tokio::test]
async fn a_broken_server_costs_only_its_own_tools() {
    let g = gate(
        "",
        &[
            format!(
                "{{name: broken, command: {}}}",
                command(&["--exit-at-start", "1"])
            ),
            format!("{{name: good, command: {}}}", command(&[])),
        ],
    )
    .await;
    let o = g.call("good.echo", json!({"text": "still here"})).await;
    assert_eq!(o.content.text(), "still here");
    let o = g.call("broken.echo", json!({"text": "x"})).await;
    assert_eq!(kind(&o), Some("unknown_tool"), "{o:?}");
    g.shutdown().await;
}

#[tokio::test]
async fn a_timeout_sends_notifications_cancelled_for_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let g = fake(
        "dispatch: {timeout: 300ms}",
        &["--log", log.to_str().unwrap()],
    )
    .await;
    let o = g.call("fake.sleep", json!({"ms": 5000})).await;
    assert_eq!(kind(&o), Some("timeout"), "{o:?}");
    // No waiting here: shutting down waits until the notice is sent and the server has read
    // it, seen its stdin close and exited.
    g.shutdown().await;
    let read = || -> Vec<Value> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let received = read();
    let call = received
        .iter()
        .find(|m| m["method"] == "tools/call")
        .expect("the call reached the server");
    let cancelled = received
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no cancellation among {received:#?}"));
    assert_eq!(cancelled["params"]["requestId"], call["id"]);
}

// Multi-threaded, as in the CLI and `serve`: the supervisor closing the connection runs beside
// the caller of `shutdown`, which would otherwise go on (and a host exit) before the child exited.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_returns_only_after_the_server_has_exited() {
    shutdown_logs(&[], &["started", "stdin closed"]).await;
}

// A server may still be writing when its stdin closes (the answer to a request that crossed the
// shutdown, a last log message): its stdout is read until it exits, so the write does not fail
// with EPIPE and kill it (Python ends on the BrokenPipeError) before it sees its input end.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_may_still_write_to_stdout_after_its_stdin_closes() {
    shutdown_logs(&["--goodbye"], &["started", "goodbye sent", "stdin closed"]).await;
}

// MCP's stdio shutdown: close the input, wait, SIGTERM, wait, SIGKILL.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stays_after_its_stdin_closes_is_sent_sigterm() {
    shutdown_logs(&["--linger"], &["started", "stdin closed", "sigterm"]).await;
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_ignores_sigterm_is_killed() {
    shutdown_logs(
        &["--linger", "ignore-term"],
        &["started", "stdin closed", "sigterm ignored"],
    )
    .await;
}

/// Starts the fake server with `args` (and a log), shuts the gate down, and checks that the
/// server logged the `_event`s `expected` (the whole log is printed when not) and has exited.
///
/// It first fails, saying why, unless the server started: a shutdown test of a server that did
/// not start would watch the supervisor's restart instead.
#[cfg(target_os = "linux")]
async fn shutdown_logs(args: &[&str], expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let mut all = vec!["--log", log.to_str().unwrap()];
    all.extend_from_slice(args);
    let g = fake("", &all).await;
    let problems = g.upstreams.problems();
    assert!(
        problems.is_empty(),
        "the server did not start, so its shutdown cannot be watched: {problems:?}"
    );
    g.shutdown().await;
    let received = std::fs::read_to_string(&log).unwrap_or_default();
    let messages: Vec<Value> = received
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect();
    let pid = messages
        .iter()
        .find(|m| m["_event"] == "started")
        .and_then(|m| m["pid"].as_u64())
        .unwrap_or_else(|| panic!("the server logged no pid: {received}"));
    let events: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["_event"].as_str())
        .collect();
    assert_eq!(events, expected, "the server's log:\n{received}");
    // Exited and reaped: nothing is left for a host that exits now to kill.
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the server (pid {pid}) still runs after shutdown returned"
    );
}

#[tokio::test]
async fn a_crash_during_a_call_is_upstream_unavailable_and_the_server_comes_back() {
    let g = fake("", &[]).await;
    let o = g.call("fake.crash", json!({"code": 3})).await;
    assert_eq!(kind(&o), Some("upstream_unavailable"), "{o:?}");
    // The first restart is immediate, and a call made meanwhile waits for it.
    let o = g.call("fake.echo", json!({"text": "back"})).await;
    assert_eq!(o.content.text(), "back", "{o:?}");
    g.shutdown().await;
}

#[tokio::test]
async fn a_server_that_keeps_crashing_is_down_between_attempts() {
    let g = fake("", &[]).await;
    g.call("fake.crash", json!({"code": 3})).await;
    let o = g.call("fake.echo", json!({"text": "back"})).await;
    assert_eq!(o.content.text(), "back", "{o:?}");
    // A second crash soon after the restart: the next attempt waits.
    g.call("fake.crash", json!({"code": 4})).await;
    let o = g.call("fake.echo", json!({"text": "too soon"})).await;
    assert_eq!(kind(&o), Some("upstream_unavailable"), "{o:?}");
    let message = o.error.as_ref().unwrap().to_string();
    assert!(message.contains("is not running"), "{message}");
    assert!(message.contains("exit status: 4"), "{message}");
    assert!(
        message.contains("the next attempt to start it is in"),
        "{message}"
    );
    // It is back after the pause.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let o = g.call("fake.echo", json!({"text": "later"})).await;
        if o.content.text() == "later" {
            break;
        }
        assert!(Instant::now() < deadline, "never came back: {o:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    g.shutdown().await;
}

#[tokio::test]
async fn a_result_of_the_wrong_shape_is_an_upstream_error() {
    let g = fake("", &[]).await;
    let o = g.call("fake.garbage", json!({})).await;
    assert_eq!(kind(&o), Some("upstream_error"), "{o:?}");
    // The server still serves other calls.
    let o = g.call("fake.echo", json!({"text": "fine"})).await;
    assert_eq!(o.content.text(), "fine");
    g.shutdown().await;
}

#[tokio::test]
async fn lines_that_are_not_json_rpc_are_skipped() {
    let g = fake("", &[]).await;
    let o = g
        .call("fake.noisy_echo", json!({"text": "through the noise"}))
        .await;
    assert_eq!(o.content.text(), "through the noise", "{o:?}");
    g.shutdown().await;
}

#[tokio::test]
async fn a_result_marked_is_error_is_a_tool_error() {
    let g = fake("", &[]).await;
    let o = g.call("fake.fail", json!({})).await;
    assert_eq!(kind(&o), Some("tool_error"), "{o:?}");
    assert!(
        o.content.text().contains("the fake tool failed on purpose"),
        "{o:?}"
    );
    g.shutdown().await;
}

#[tokio::test]
async fn a_json_rpc_error_is_an_upstream_error() {
    let g = fake("", &[]).await;
    let o = g.call("fake.rpc_error", json!({})).await;
    assert_eq!(kind(&o), Some("upstream_error"), "{o:?}");
    assert!(o.content.text().contains("the fake server broke"), "{o:?}");
    g.shutdown().await;
}

#[tokio::test]
async fn refused_arguments_are_invalid_arguments() {
    let g = fake("", &[]).await;
    let o = g.call("fake.refuse", json!({})).await;
    assert_eq!(kind(&o), Some("invalid_arguments"), "{o:?}");
    g.shutdown().await;
}

#[tokio::test]
async fn image_parts_stay_images() {
    let g = fake("", &[]).await;
    let o = g.call("fake.image", json!({})).await;
    let parts = serde_json::to_value(&o.content).unwrap();
    assert!(parts.to_string().contains("iVBORw0KGgo="), "{parts}");
    assert!(parts.to_string().contains("image/png"), "{parts}");
    g.shutdown().await;
}

#[tokio::test]
async fn progress_from_the_server_becomes_update_events() {
    let g = fake("", &[]).await;
    let mut events = g.engine.subscribe();
    let o = g.call("fake.progress", json!({"steps": 3})).await;
    assert_eq!(o.content.text(), "done");
    let mut updates = Vec::new();
    while let Ok(event) = events.try_recv() {
        let event = serde_json::to_value(&event).unwrap_or_default();
        if event.to_string().contains("step ") {
            updates.push(event.to_string());
        }
    }
    assert_eq!(updates.len(), 3, "{updates:#?}");
    assert!(updates[2].contains("3/3: step 3"), "{updates:#?}");
    g.shutdown().await;
}

#[tokio::test]
async fn a_changed_tool_list_is_fetched_and_announced() {
    let g = fake("", &[]).await;
    let (announce, mut changed) = tokio::sync::mpsc::unbounded_channel::<String>();
    g.upstreams.on_change(move |server| {
        let _ = announce.send(server.to_owned());
    });
    let o = g.call("fake.add_tool", json!({"name": "fresh"})).await;
    assert_eq!(o.content.text(), "added");
    let server = tokio::time::timeout(Duration::from_secs(30), changed.recv())
        .await
        .expect("a change is announced within half a minute");
    assert_eq!(server.as_deref(), Some("fake"));
    assert!(changed.try_recv().is_err(), "announced once");
    // A rebuilt engine has the new tool; the old one is unchanged.
    let rebuilt = g
        .upstreams
        .register(Engine::builder(g.engine.policy().clone()))
        .build()
        .unwrap();
    assert!(rebuilt.registry().get("fake.fresh").is_some());
    assert!(g.engine.registry().get("fake.fresh").is_none());
    g.shutdown().await;
}

#[tokio::test]
async fn a_tool_with_a_bad_name_is_left_out_and_reported() {
    let g = fake("", &["--extra-tool", "get time"]).await;
    let problems = g.upstreams.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0]
            .message
            .contains("its tool \"get time\" is left out"),
        "{problems:?}"
    );
    assert!(g.engine.registry().get("fake.echo").is_some());
    g.shutdown().await;
}

#[tokio::test]
async fn calls_after_shutdown_are_upstream_unavailable() {
    let g = fake("", &[]).await;
    g.upstreams.shutdown().await;
    let o = g.call("fake.echo", json!({"text": "x"})).await;
    assert_eq!(kind(&o), Some("upstream_unavailable"), "{o:?}");
}

/// The fake server in HTTP mode on a free port, killed on drop.
struct HttpFake {
    child: std::process::Child,
    port: u16,
}

impl HttpFake {
    fn start(log: &Path) -> HttpFake {
        use std::io::BufRead;
        let mut child = std::process::Command::new(python())
            .arg(fake_server())
            .args(["--http", "0", "--log"])
            .arg(log)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the fake HTTP server starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("it prints its port");
        let port = line.trim().parse().expect("a port number");
        HttpFake { child, port }
    }
}

impl Drop for HttpFake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn a_url_server_gets_its_headers_with_values_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let server = HttpFake::start(&log);
    let g = gate(
        "",
        &[format!(
            "{{name: web, url: \"http://127.0.0.1:{}/mcp\", headers: {{Authorization: \"Bearer ${{HOME}}\", X-Plain: \"$$5\"}}}}",
            server.port
        )],
    )
    .await;
    assert!(
        g.upstreams.problems().is_empty(),
        "{:?}",
        g.upstreams.problems()
    );
    let o = g.call("web.echo", json!({"text": "over http"})).await;
    assert_eq!(o.content.text(), "over http", "{o:?}");
    g.shutdown().await;
    let received: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call = received
        .iter()
        .find(|m| m["method"] == "tools/call")
        .expect("the call reached the server");
    let home = std::env::var("HOME").unwrap_or_default();
    assert_eq!(call["_headers"]["authorization"], format!("Bearer {home}"));
    assert_eq!(call["_headers"]["x-plain"], "$5");
}

#[tokio::test]
async fn a_url_servers_answer_over_the_message_limit_is_an_upstream_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpFake::start(&dir.path().join("received.jsonl"));
    let g = gate(
        "dispatch: {timeout: none}",
        &[format!(
            "{{name: web, url: \"http://127.0.0.1:{}/mcp\"}}",
            server.port
        )],
    )
    .await;
    let text = "x".repeat(17 * 1024 * 1024);
    let o = g.call("web.echo", json!({ "text": text })).await;
    assert_eq!(kind(&o), Some("upstream_error"), "{:?}", o.error);
    let message = o.error.as_ref().unwrap().to_string();
    assert!(message.contains("over 16 MiB"), "{message}");
    g.shutdown().await;
}

#[tokio::test]
async fn a_searchable_server_hides_its_tools_behind_tool_search() {
    let g = gate(
        "search: {}",
        &[format!(
            "{{name: fake, command: {}, searchable: true}}",
            command(&[])
        )],
    )
    .await;
    let session = g.engine.session(Some("s1")).unwrap();
    let visible: Vec<String> = g
        .engine
        .visible_tools(&session)
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(visible, ["tool_search"]);
    let found = g
        .engine
        .call(
            &session,
            &ToolCall::new(
                "c1",
                "tool_search",
                json!({"query": "echo the text back"}).to_string(),
            ),
        )
        .await;
    assert!(found.content.text().contains("fake.echo"), "{found:?}");
    let o = g
        .engine
        .call(
            &session,
            &ToolCall::new("c2", "fake.echo", json!({"text": "found it"}).to_string()),
        )
        .await;
    assert_eq!(o.content.text(), "found it", "{o:?}");
    g.shutdown().await;
}

#[tokio::test]
async fn a_rewrite_hook_changes_what_the_server_receives() {
    let g = fake(
        "scripts:\n  rewrite:\n    code: |\n      if tool == \"fake.echo\" { let args = args; args.text = \"rewritten: \" + args.text; args } else { () }",
        &[],
    )
    .await;
    let o = g.call("fake.echo", json!({"text": "original"})).await;
    assert_eq!(o.content.text(), "rewritten: original", "{o:?}");
    g.shutdown().await;
}

#[tokio::test]
async fn the_result_cap_holds_an_upstream_result() {
    let g = fake("tools:\n  \"fake.*\": {max_result_chars: 100}", &[]).await;
    let o = g.call("fake.big", json!({"chars": 5000})).await;
    assert!(o.truncated, "{o:?}");
    assert!(
        o.content.text().starts_with(&"0123456789".repeat(10)),
        "{o:?}"
    );
    assert!(o.content.text().chars().count() < 400, "{o:?}");
    g.shutdown().await;
}
