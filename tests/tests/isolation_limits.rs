//! `isolation: process` at its limits, through the binary: a frame over the worker protocol's
//! limit fails its call at once and says so, `memory_limit` bounds the plugin's memory (not
//! the address space its worker reserves), and a worker that does not load says why.

use std::path::PathBuf;
use std::time::Duration;

use toolgate_e2e::{Run, Toolgate, conversation, repo_path};

/// The worker protocol's frame limit, as the errors name it.
const FRAME_LIMIT: &str = "268435456 bytes (256 MiB)";

/// A policy with testkit in a worker: calls time out after `timeout` (which may carry more
/// `dispatch` lines after it), `plugin` is added to its entry.
fn policy(dir: &tempfile::TempDir, timeout: &str, plugin: &str) -> String {
    let path: PathBuf = dir.path().join("policy.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\n\
             dispatch:\n  timeout: {timeout}\n\
             plugins:\n  - name: testkit\n    isolation: process\n{plugin}"
        ),
    )
    .expect("policy written");
    path.display().to_string()
}

/// `toolgate call --json TOOL ARGS` under `policy`.
fn call(policy: &str, tool: &str, args: &str, within: Duration) -> Run {
    Toolgate::new(&["call", "--policy", policy, "--json", tool, args]).run_within(within)
}

#[test]
fn a_result_over_the_frame_limit_fails_its_call_at_once_naming_the_limit() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    // No timeout: a result that never comes would hang the call (and fail the test). No
    // result cap either: under a cap the worker cuts the result before it is framed (issue 25,
    // item 26), and the frame would fit.
    let policy = policy(&dir, "none\n  max_result_chars: -1", "");
    // The most a plugin may hand its host (256 MiB of encoded parts: 27 bytes of
    // `[{"type":"text","text":""}]` around the text); in its result frame, with the frame's
    // envelope, it is over the frame limit. A debug build takes a minute to encode it.
    let run = call(
        &policy,
        "huge_output",
        r#"{"bytes": 268435429}"#,
        Duration::from_secs(300),
    );
    run.assert_code(1).assert_no_panic();
    let outcome = run.json();
    let message = outcome["content"].as_str().unwrap_or_default();
    assert_ne!(outcome["error_kind"], "timeout", "{message}");
    assert!(message.contains(FRAME_LIMIT), "{message}");
    assert!(message.contains("cannot reach the host"), "{message}");
}

#[test]
fn arguments_over_the_frame_limit_fail_their_call_at_once_naming_the_limit() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, "60s", "");
    // `conversation`, written out: JSON-encoding 257 MiB in a debug build takes long.
    let input = format!(
        r#"[{{"role":"user","content":"go"}},{{"role":"assistant","content":null,"tool_calls":[{{"id":"c1","type":"function","function":{{"name":"echo","arguments":"{{\"text\":\"{}\"}}"}}}}]}}]"#,
        "a".repeat(257 * 1024 * 1024)
    );
    let run = Toolgate::new(&["run", "--policy", &policy, "-"])
        .stdin(input)
        .run_within(Duration::from_secs(300));
    // Not `{run:?}`: its output holds the 257 MiB of arguments.
    assert_eq!(run.code, 0, "{}", run.stderr);
    let at = run
        .stdout
        .find("the arguments cannot be sent to the plugin's worker")
        .unwrap_or_else(|| panic!("no such error; stderr: {}", run.stderr));
    let message = &run.stdout[at..run.stdout.len().min(at + 300)];
    assert!(message.contains(FRAME_LIMIT), "{message}");
}

#[test]
fn a_frame_announced_over_the_limit_by_the_worker_fails_its_call_naming_the_limit() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, "60s", "");
    let run = call(
        &policy,
        "forge_frame",
        r#"{"len": 300000000}"#,
        Duration::from_secs(60),
    );
    run.assert_code(1).assert_no_panic();
    let outcome = run.json();
    let message = outcome["content"].as_str().unwrap_or_default();
    assert_eq!(outcome["error_kind"], "plugin_crashed", "{message}");
    assert!(
        message.contains("a frame of 300000000 bytes was announced"),
        "{message}"
    );
    assert!(message.contains(FRAME_LIMIT), "{message}");
    assert!(run.elapsed < Duration::from_secs(50), "{:?}", run.elapsed);
}

#[test]
fn sixteen_parallel_calls_fit_in_the_memory_limit_of_the_docs_example() {
    // The example's 256 MiB, without its `sequential: true`: 16 calls at once (the default
    // `max_threads`), each making 2 MB.
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, "60s", "    memory_limit: 256MiB\n");
    let example =
        std::fs::read_to_string(repo_path("policies/examples/isolation.yaml")).expect("example");
    assert!(example.contains("memory_limit: 256MiB"), "{example}");
    let calls: Vec<(String, &str, &str)> = (0..16)
        .map(|i| (format!("c{i}"), "big_output", r#"{"bytes": 2000000}"#))
        .collect();
    let calls: Vec<(&str, &str, &str)> =
        calls.iter().map(|(i, t, a)| (i.as_str(), *t, *a)).collect();
    let run = Toolgate::new(&["run", "--policy", &policy, "-"])
        .stdin(conversation(&calls))
        .run_within(Duration::from_secs(60));
    run.assert_code(0).assert_no_panic();
    let messages = run.json();
    let answers: Vec<&str> = messages
        .as_array()
        .expect("a message list")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(answers.len(), 16, "{}", run.stderr);
    for answer in answers {
        // The text itself (cut at the result cap), not an error.
        assert!(
            answer.starts_with("line 000001 abc"),
            "{}",
            &answer[..answer.len().min(400)]
        );
    }
}

#[test]
fn an_allocation_past_the_memory_limit_fails_its_call_naming_memory_limit() {
    // Smaller than the example's, so that a loaded machine gets there within the timeout.
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, "60s", "    memory_limit: 64MiB\n");
    let run = call(
        &policy,
        "crash",
        r#"{"how": "oom"}"#,
        Duration::from_secs(90),
    );
    run.assert_code(1).assert_no_panic();
    let outcome = run.json();
    let message = outcome["content"].as_str().unwrap_or_default();
    assert_eq!(outcome["error_kind"], "plugin_crashed", "{message}");
    assert!(
        message.contains("past the plugin's memory_limit of 64MiB"),
        "{message}"
    );
}

#[test]
fn a_memory_limit_too_small_for_the_worker_names_memory_limit_and_the_worker_once() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, "60s", "    memory_limit: 1MiB\n");
    let run = call(&policy, "echo", r#"{"text": "x"}"#, Duration::from_secs(60));
    run.assert_code(3).assert_no_panic();
    assert!(
        run.stderr.contains("memory_limit of 1MiB"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("plugin worker").count(),
        1,
        "{}",
        run.stderr
    );
}

#[test]
fn a_plugin_whose_loading_hangs_is_killed_saying_loading_took_too_long() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, "60s", "    config:\n      init_sleep_ms: 600000\n");
    let run = call(&policy, "echo", r#"{"text": "x"}"#, Duration::from_secs(90));
    run.assert_code(3).assert_no_panic();
    assert!(
        run.stderr
            .contains("loading the plugin took longer than 30 s"),
        "{}",
        run.stderr
    );
}
