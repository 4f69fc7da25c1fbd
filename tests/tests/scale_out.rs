//! Two `toolgate serve --http` instances behind a plain round-robin (issue 27, item 7; spec
//! C7, L4, L9, L10), through the official MCP Python SDK and raw HTTP (scenarios in
//! tests/mcp/scale_out.py), on real servers: moto's S3 of `scripts/s3-server.sh` (results,
//! sessions, their owners, the audit prefix) and Debian's redis-server of `scripts/redis.sh`
//! (limits). A session opened on one instance goes on on the other, a limit counts both
//! instances' calls, the audit prefix holds every call once, an instance killed mid-call loses
//! nothing it answered, and Redis going down gets the policy's answer on both.
//!
//! The servers are those `scripts/test.sh` started; a test run alone starts them through the
//! same scripts ([`toolgate_e2e::test_server`]).

use std::process::Command;

use toolgate_e2e::{repo_path, repo_root, test_server, toolgate_exe, venv_python};

/// Runs one scenario of tests/mcp/scale_out.py and fails with its output when it does not
/// hold; passes its `figure:` lines on. The script bounds itself (180 s).
fn scenario(name: &str) {
    let mut command = Command::new(venv_python());
    command
        .arg(repo_path("tests/mcp/scale_out.py"))
        .arg("--toolgate")
        .arg(toolgate_exe())
        .arg(name)
        .current_dir(repo_root())
        .env_remove("RUST_LOG");
    for (script, variable) in [
        ("s3-server.sh", "TOOLGATE_TEST_S3_ENDPOINT"),
        ("redis.sh", "TOOLGATE_TEST_REDIS_URL"),
    ] {
        command.envs(test_server(script, variable));
    }
    let output = command.output().expect("the venv's python starts");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(
        output.status.success() && stdout.trim_end().ends_with("ok"),
        "scenario {name} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    for figure in stdout.lines().filter(|l| l.starts_with("figure:")) {
        eprintln!("{name}: {figure}");
    }
}

#[test]
fn l10_a_session_opened_on_one_instance_keeps_its_found_tools_on_the_other() {
    scenario("a_session_opened_on_one_instance_keeps_its_found_tools_on_the_other");
}

#[test]
fn l10_a_result_offloaded_on_one_instance_is_read_back_on_the_other() {
    scenario("a_result_offloaded_on_one_instance_is_read_back_on_the_other");
}

#[test]
fn c7_another_principal_presenting_a_session_id_is_refused_on_every_instance() {
    scenario("another_principal_presenting_a_session_id_is_refused_on_every_instance");
}

#[test]
fn l10_a_rate_limit_counts_the_calls_of_both_instances_together() {
    scenario("a_rate_limit_counts_the_calls_of_both_instances_together");
}

#[test]
fn l4_with_redis_down_an_open_policy_lets_calls_through_on_both_instances() {
    scenario("with_redis_down_an_open_policy_lets_calls_through_on_both_instances");
}

#[test]
fn l4_with_redis_down_a_closed_policy_refuses_calls_on_both_instances() {
    scenario("with_redis_down_a_closed_policy_refuses_calls_on_both_instances");
}

#[test]
fn l10_the_audit_prefix_holds_one_line_per_call_of_both_instances() {
    scenario("the_audit_prefix_holds_one_line_per_call_of_both_instances");
}

#[test]
fn l9_a_graceful_stop_writes_every_buffered_line_and_empties_the_spool() {
    scenario("a_graceful_stop_writes_every_buffered_line_and_empties_the_spool");
}

#[test]
fn l10_a_client_whose_instance_is_killed_mid_call_retries_on_the_other_and_keeps_its_session() {
    scenario(
        "a_client_whose_instance_is_killed_mid_call_retries_on_the_other_and_keeps_its_session",
    );
}

#[test]
fn l9_the_audit_lines_of_a_killed_instance_are_shipped_by_the_next_start() {
    scenario("the_audit_lines_of_a_killed_instance_are_shipped_by_the_next_start");
}
