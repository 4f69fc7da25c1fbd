//! `toolgate serve` under abuse (issue 25, items 17 to 21): slow and half-open HTTP clients,
//! abandoned and restored sessions, clients that do not read their progress, over-long stdio
//! requests, and a policy behind swapped symbolic links. Each test runs one scenario of
//! tests/mcp/serve_abuse.py (the official MCP Python SDK, raw sockets where the client is the
//! one misbehaving), against 127.0.0.1 only, bounded in connections and time.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use toolgate_e2e::{repo_path, repo_root, toolgate_exe, venv_python};

/// Runs `program args` from the repository root; kills it and fails after `limit`.
fn run_bounded(program: &PathBuf, args: &[&str], limit: Duration) -> (i32, String, String) {
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the program starts");
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let status = loop {
        if let Some(status) = child.try_wait().expect("the program can be waited for") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} {args:?} did not end within {limit:?}",
                program.display()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (
        status.code().unwrap_or(-1),
        stdout.join().expect("stdout drained"),
        stderr.join().expect("stderr drained"),
    )
}

/// Runs one scenario of tests/mcp/serve_abuse.py over `transport`; fails with its output when
/// the scenario does not hold.
fn scenario(transport: &str, name: &str) {
    let toolgate = toolgate_exe().display().to_string();
    let script = repo_path("tests/mcp/serve_abuse.py").display().to_string();
    let (code, stdout, stderr) = run_bounded(
        &venv_python(),
        &[
            &script,
            "--toolgate",
            &toolgate,
            "--transport",
            transport,
            name,
        ],
        Duration::from_secs(300),
    );
    assert!(
        code == 0 && stdout.trim_end().ends_with("ok"),
        "scenario {name} over {transport} failed (exit {code}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
}

// --- 17: slow clients, file descriptors, accept errors ----------------------------------------

#[test]
fn a_request_head_sent_too_slowly_is_cut_off() {
    scenario("http", "a_request_head_sent_too_slowly_is_cut_off");
}

#[test]
fn a_flood_of_half_open_connections_neither_spins_nor_locks_out_clients() {
    scenario("http", "half_open_flood");
}

// --- 18: sessions -----------------------------------------------------------------------------

#[test]
fn sessions_brought_back_from_the_store_count_against_max_sessions() {
    scenario("http", "restored_sessions_count_against_max_sessions");
}

#[test]
fn an_abandoned_session_frees_its_place_after_the_idle_timeout() {
    scenario(
        "http",
        "an_abandoned_session_is_closed_after_the_idle_timeout",
    );
}

#[test]
fn results_prune_deletes_abandoned_mcp_sessions() {
    scenario("http", "results_prune_deletes_abandoned_mcp_sessions");
}

// --- 19: progress -----------------------------------------------------------------------------

#[test]
fn a_client_that_reads_no_progress_does_not_grow_the_server() {
    scenario("http", "a_client_that_reads_no_progress_costs_no_memory");
}

#[test]
fn a_timeout_reaches_a_stdio_client_despite_millions_of_progress_updates() {
    scenario("stdio", "a_timeout_is_not_held_up_by_progress");
}

#[test]
fn a_timeout_reaches_an_http_client_despite_millions_of_progress_updates() {
    scenario("http", "a_timeout_is_not_held_up_by_progress");
}

// --- 20: stdio --------------------------------------------------------------------------------

#[test]
fn a_stdio_request_over_the_limit_gets_a_json_rpc_error() {
    scenario("stdio", "a_request_over_the_limit_gets_an_error");
}

// --- 21: reload through symbolic links --------------------------------------------------------

#[test]
fn a_policy_behind_a_swapped_configmap_link_is_reloaded() {
    scenario("http", "reload_follows_a_swapped_symlink");
}
