//! `isolation: process` through the binary: a plugin that segfaults, aborts, runs out of
//! memory, overflows its stack, spins or never returns costs its call an error, never the
//! host, and the next call of the same run works on a restarted worker.

use std::time::Duration;

use toolgate_e2e::{Run, Toolgate, conversation, repo_path};

/// The isolation example policy: testkit in a worker with 256 MiB of memory, calls one
/// after another, 5 s per call (500 ms for `stubborn_sleep`).
fn policy() -> String {
    repo_path("policies/examples/isolation.yaml")
        .display()
        .to_string()
}

/// Runs `echo`, then `tool ARGS`, then `echo` in one turn; returns the three tool messages'
/// contents. The host must end normally (exit 0, no signal) within a minute.
fn around(tool: &str, args: &str) -> (Run, Vec<String>) {
    let input = conversation(&[
        ("c1", "echo", r#"{"text": "before"}"#),
        ("c2", tool, args),
        ("c3", "echo", r#"{"text": "after"}"#),
    ]);
    let run = Toolgate::new(&["run", "--policy", &policy(), "-"])
        .stdin(input)
        .run_within(Duration::from_secs(60));
    run.assert_code(0).assert_no_panic();
    let contents = run
        .json()
        .as_array()
        .expect("a message list")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    (run, contents)
}

/// The call in the middle failed as `expected` says, and the calls around it worked.
#[track_caller]
fn assert_only_the_middle_call_failed(tool: &str, args: &str, expected: &[&str]) {
    let (run, contents) = around(tool, args);
    assert_eq!(contents.len(), 3, "{run:#?}");
    assert_eq!(contents[0], "before", "{run:#?}");
    for part in expected {
        assert!(
            contents[1].contains(part),
            "the failed call's message {:?} lacks {part:?}",
            contents[1]
        );
    }
    assert_eq!(contents[2], "after", "the next call works: {run:#?}");
}

#[test]
fn a_segfault_in_an_isolated_plugin_fails_only_its_call_naming_sigsegv() {
    assert_only_the_middle_call_failed(
        "crash",
        r#"{"how": "segfault"}"#,
        &["Error:", "killed by signal 11 (SIGSEGV)"],
    );
}

#[test]
fn an_abort_in_an_isolated_plugin_fails_only_its_call_naming_sigabrt() {
    assert_only_the_middle_call_failed(
        "crash",
        r#"{"how": "abort"}"#,
        &["Error:", "killed by signal 6 (SIGABRT)"],
    );
}

#[test]
fn running_out_of_the_memory_limit_fails_only_the_call_with_the_allocation_failure() {
    assert_only_the_middle_call_failed(
        "crash",
        r#"{"how": "oom"}"#,
        &["SIGABRT", "memory allocation of 16777216 bytes failed"],
    );
}

#[test]
fn a_stack_overflow_in_an_isolated_plugin_fails_only_its_call() {
    assert_only_the_middle_call_failed(
        "crash",
        r#"{"how": "stack_overflow"}"#,
        &["SIGABRT", "has overflowed its stack"],
    );
}

#[test]
fn a_stubborn_call_times_out_and_the_next_call_runs_on_a_new_worker() {
    assert_only_the_middle_call_failed(
        "stubborn_sleep",
        r#"{"ms": 600000}"#,
        &["timed out after 500ms"],
    );
}

#[test]
fn an_endless_loop_times_out_and_the_host_ends_without_waiting_for_it() {
    // `spin` ignores cancellation for a minute; the worker is killed instead.
    let run = Toolgate::new(&[
        "call",
        "--policy",
        &policy(),
        "--json",
        "--timeout",
        "300ms",
        "crash",
        r#"{"how": "spin"}"#,
    ])
    .run_within(Duration::from_secs(20));
    run.assert_code(1).assert_no_panic();
    // Within the guard's 20 s, not after the spin's minute.
    assert_eq!(run.json()["error_kind"], "timeout", "{run:#?}");
}

#[test]
fn a_crash_is_reported_with_the_error_kind_plugin_crashed() {
    let run = Toolgate::new(&[
        "call",
        "--policy",
        &policy(),
        "--json",
        "crash",
        r#"{"how": "segfault"}"#,
    ])
    .run_within(Duration::from_secs(30));
    run.assert_code(1).assert_no_panic();
    let outcome = run.json();
    assert_eq!(outcome["error_kind"], "plugin_crashed", "{run:#?}");
    assert_eq!(outcome["is_error"], true);
}

#[test]
fn an_isolated_plugin_answers_like_an_in_process_one() {
    let run = Toolgate::new(&["call", "--policy", &policy(), "--json", "multimodal", "{}"])
        .run_within(Duration::from_secs(30));
    run.assert_code(0).assert_no_panic();
    let parts = run.json()["content"].clone();
    assert_eq!(parts[0]["type"], "text", "{run:#?}");
    assert_eq!(parts[1]["type"], "image_url", "{run:#?}");
    assert_eq!(parts[2]["type"], "text", "{run:#?}");
}

#[test]
fn every_call_in_flight_on_a_crashed_worker_gets_the_crash() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = dir.path().join("parallel.yaml");
    std::fs::write(
        &policy,
        "version: 1\n\
         dispatch:\n  timeout: 20s\n\
         plugins:\n  - name: testkit\n    isolation: process\n",
    )
    .expect("policy written");
    // In parallel: the sleep is sent first and is still running when the worker aborts.
    let input = conversation(&[
        ("c1", "sleep", r#"{"ms": 600000}"#),
        ("c2", "crash", r#"{"how": "abort"}"#),
    ]);
    let run = Toolgate::new(&["run", "--policy", &policy.display().to_string(), "-"])
        .stdin(input)
        .run_within(Duration::from_secs(60));
    run.assert_code(0).assert_no_panic();
    let messages = run.json();
    let contents: Vec<&str> = messages
        .as_array()
        .expect("a message list")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(contents.len(), 2, "{run:#?}");
    for content in contents {
        assert!(content.contains("SIGABRT"), "{content:?}");
    }
}

#[test]
fn an_isolated_plugin_streams_its_chunks_through_the_worker() {
    let run = Toolgate::new(&["call", "--policy", &policy(), "stream", r#"{"count": 3}"#])
        .run_within(Duration::from_secs(30));
    run.assert_code(0).assert_no_panic();
    assert_eq!(run.stdout, "chunk 1\nchunk 2\nchunk 3\nstreamed 3 chunks\n");
}

#[test]
fn an_isolated_stream_is_cut_at_the_cap_without_waiting_for_the_plugin() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = dir.path().join("capped.yaml");
    std::fs::write(
        &policy,
        "version: 1\n\
         dispatch:\n  timeout: 60s\n  max_result_chars: 40\n\
         plugins:\n  - name: testkit\n    isolation: process\n",
    )
    .expect("policy written");
    let run = Toolgate::new(&[
        "call",
        "--policy",
        &policy.display().to_string(),
        "--json",
        "stream",
        r#"{"count": 100000, "delay_ms": 1}"#,
    ])
    .run_within(Duration::from_secs(30));
    run.assert_code(0).assert_no_panic();
    let outcome = run.json();
    assert_eq!(outcome["truncated"], true, "{run:#?}");
    assert_eq!(outcome["output_chars"], 40, "{run:#?}");
}
