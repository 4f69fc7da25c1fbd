//! `toolgate serve --http` for a team, limits and per-principal settings (issue 27, items 2 and
//! 3; spec L1-L3, L8, C4, C8), through the official MCP Python SDK and raw HTTP (scenarios in
//! tests/mcp/team_limits.py), with two or more principals holding API keys made by `toolgate key
//! new`: the HTTP request limit (429 with `Retry-After` and the reason, locally and in a real
//! redis-server shared by two servers), a rate and the concurrency of one principal that leave
//! the other alone, an override for one principal, and `tool_search` by principal.

use std::process::Command;

use toolgate_e2e::{repo_path, repo_root, toolgate_exe, venv_python};

/// Runs one scenario of tests/mcp/team_limits.py and fails with its output when it does not
/// hold. The script bounds itself (150 s).
fn scenario(name: &str) {
    let output = Command::new(venv_python())
        .arg(repo_path("tests/mcp/team_limits.py"))
        .arg("--toolgate")
        .arg(toolgate_exe())
        .arg(name)
        .current_dir(repo_root())
        .output()
        .expect("the venv's python starts");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(
        output.status.success() && stdout.trim_end().ends_with("ok"),
        "scenario {name} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    // The figures a scenario measures (latencies, what a client saw), for the test log.
    eprintln!("{stderr}");
}

#[test]
fn l8_a_principal_over_its_request_limit_gets_429_with_retry_after_and_the_reason() {
    scenario("l8_a_principal_over_its_request_limit_gets_429_with_retry_after_and_the_reason");
}

#[test]
fn l8_the_python_sdk_reads_a_429_as_the_error_of_its_request_with_the_reason() {
    scenario("l8_the_python_sdk_reads_a_429_as_the_error_of_its_request_with_the_reason");
}

#[test]
fn l8_a_principal_at_429_does_not_slow_another() {
    scenario("l8_a_principal_at_429_does_not_slow_another");
}

#[test]
fn l8_request_limits_in_redis_are_shared_by_two_servers() {
    scenario("l8_request_limits_in_redis_are_shared_by_two_servers");
}

#[test]
fn l2_a_rate_for_one_principal_limits_its_calls_alone_with_retry_after() {
    scenario("l2_a_rate_for_one_principal_limits_its_calls_alone_with_retry_after");
}

#[test]
fn l3_one_principal_s_slow_calls_do_not_stop_another_s_over_http() {
    scenario("l3_one_principal_s_slow_calls_do_not_stop_another_s_over_http");
}

#[test]
fn c8_an_override_for_a_principal_applies_to_its_calls_only() {
    scenario("c8_an_override_for_a_principal_applies_to_its_calls_only");
}

#[test]
fn c4_two_principals_searching_one_catalog_find_only_their_tools() {
    scenario("c4_two_principals_searching_one_catalog_find_only_their_tools");
}

/// `toolgate explain --as`: the settings of the principal's calls, with the overrides that name
/// it or its groups (C8); without `--as`, those of every other caller.
#[test]
fn c8_explain_as_a_principal_shows_the_overrides_that_name_it() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = dir.path().join("team.yaml");
    std::fs::write(
        &policy,
        "version: 1\ndispatch: {timeout: 30s}\nplugins:\n  - name: testkit\ntools:\n  sleep:\n    \
         principals: [alice]\n    timeout: 100ms\n  \"sl*\":\n    groups: [ops]\n    \
         max_result_chars: 50\n",
    )
    .expect("the policy is written");
    let policy = policy.to_str().expect("UTF-8");
    let explain = |extra: &[&str]| {
        let mut args = vec!["explain", "--policy", policy, "--json"];
        args.extend_from_slice(extra);
        let run = toolgate_e2e::toolgate(&args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.json()
    };
    let alice = explain(&["--as", "alice", "sleep"]);
    assert_eq!(alice["timeout"], "100ms", "{alice}");
    assert_eq!(
        alice["timeout_from"], "tools.\"sleep\"[principals alice].timeout",
        "{alice}"
    );
    assert_eq!(alice["max_result_chars"], 100_000, "{alice}");
    let bob = explain(&["--as", "bob", "sleep"]);
    assert_eq!(bob["timeout"], "30s", "{bob}");
    assert_eq!(bob["timeout_from"], "dispatch.timeout", "{bob}");
    // A glob for a group is more specific, for its members, than no override at all.
    let ops = explain(&["--as", "bob", "--group", "ops", "sleep"]);
    assert_eq!(ops["max_result_chars"], 50, "{ops}");
    assert_eq!(
        ops["max_result_chars_from"], "tools.\"sl*\"[groups ops].max_result_chars",
        "{ops}"
    );
    let anyone = explain(&["sleep"]);
    assert_eq!(anyone["timeout"], "30s", "{anyone}");
    assert_eq!(anyone["matched"], serde_json::json!([]), "{anyone}");
}
