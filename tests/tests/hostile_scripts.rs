//! Hostile policy scripts through the binary: each gets its exact, typed verdict. Every native
//! function a script can call keeps the size, operation and time limits, and a before hook past
//! a limit denies the call (issue 25, item 14).

use std::path::PathBuf;
use std::time::Duration;

use toolgate_e2e::{Run, Toolgate};

/// A policy file in a fresh folder, loading the testkit plugin, with `hook`'s script `code`
/// and `script_timeout`.
fn policy(dir: &tempfile::TempDir, script_timeout: &str, hook: &str, code: &str) -> PathBuf {
    let path = dir.path().join("policy.yaml");
    let code: String = code.lines().map(|l| format!("      {l}\n")).collect();
    std::fs::write(
        &path,
        format!(
            "version: 1\nplugins:\n  - name: testkit\ndispatch:\n  script_timeout: \
             {script_timeout}\nscripts:\n  {hook}:\n    code: |\n{code}"
        ),
    )
    .expect("the policy is written");
    path
}

/// `toolgate call --json echo {"text":"hi"}` under the policy; a run that does not end within
/// a minute fails the test.
fn call_echo(policy: &std::path::Path) -> Run {
    Toolgate::new(&[
        "call",
        "--policy",
        policy.to_str().expect("a UTF-8 path"),
        "--json",
        "echo",
        r#"{"text": "hi"}"#,
    ])
    .run_within(Duration::from_secs(60))
}

/// Two 1 MiB strings (the largest allowed): `s` of `a`s and `t` of `b`s.
const TWO_BIG_STRINGS: &str = "let s = \"a\";\nwhile s.len() < 1048576 { s += s; }\nlet t = \"b\";\nwhile t.len() < 1048576 { t += t; }\n";

/// Asserts that the before hook failed the call with `tool_policy_panic` and a message that
/// contains `says`.
#[track_caller]
fn assert_denied(run: &Run, says: &str) {
    run.assert_code(1);
    let o = run.json();
    assert_eq!(o["error_kind"], "tool_policy_panic", "{o}");
    let error = o["error"].as_str().expect("an error text");
    assert!(
        error.starts_with("tool policy panic in the before script: "),
        "{error}"
    );
    assert!(error.contains(says), "expected {says:?} in {error:?}");
}

#[test]
fn a_replace_that_would_build_a_terabyte_string_denies_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(
        &dir,
        "30s",
        "before",
        &format!("{TWO_BIG_STRINGS}s.replace(\"a\", t);\ntrue"),
    );
    assert_denied(
        &call_echo(&p),
        "The result of replace (1099511627776 bytes; max_string_size is 1048576) is too large",
    );
}

#[test]
fn a_replace_of_the_empty_string_that_would_build_a_terabyte_string_denies_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(
        &dir,
        "30s",
        "before",
        &format!("{TWO_BIG_STRINGS}s.replace(\"\", t);\ntrue"),
    );
    assert_denied(
        &call_echo(&p),
        "The result of replace (1099513724928 bytes; max_string_size is 1048576) is too large",
    );
}

#[test]
fn a_replace_in_an_after_hook_fails_the_hook_and_the_result_stands() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(
        &dir,
        "30s",
        "after",
        &format!("{TWO_BIG_STRINGS}s.replace('a', t);"),
    );
    let run = call_echo(&p);
    run.assert_code(0);
    assert_eq!(run.json()["content"], "hi");
    assert!(
        run.stderr.contains("after hook failed")
            && run
                .stderr
                .contains("The result of replace (1099511627776 bytes"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_sort_comparator_that_loops_forever_denies_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(
        &dir,
        "60s",
        "before",
        "let a = [3, 1, 2];\na.sort(|x, y| { loop {} });\ntrue",
    );
    assert_denied(
        &call_echo(&p),
        "the script ran too many operations (is there an endless loop?)",
    );
}

#[test]
fn a_sort_comparator_past_the_script_timeout_denies_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(
        &dir,
        "500ms",
        "before",
        "let a = [3, 1, 2];\na.sort(|x, y| { sleep(1); 0 });\ntrue",
    );
    assert_denied(
        &call_echo(&p),
        "sleep(1s) would run past the script's 500ms bound (dispatch.script_timeout)",
    );
}

#[test]
fn a_dedup_comparator_that_loops_forever_denies_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(
        &dir,
        "60s",
        "before",
        "let a = [1, 1, 2];\na.dedup(|x, y| { loop {} });\ntrue",
    );
    assert_denied(
        &call_echo(&p),
        "the script ran too many operations (is there an endless loop?)",
    );
}

#[test]
fn operations_inside_map_callbacks_count_against_the_operation_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 200 callbacks of about 30,000 operations each: none over the limit alone, 6 million
    // together.
    let p = policy(
        &dir,
        "60s",
        "before",
        "let a = [];\na.pad(200, 0);\na.map(|x| { let i = 0; while i < 10000 { i += 1; } x });\ntrue",
    );
    assert_denied(
        &call_echo(&p),
        "the script ran too many operations (is there an endless loop?)",
    );
}

#[test]
fn a_sleep_past_the_script_timeout_denies_the_call_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(&dir, "1s", "before", "sleep(100000);\ntrue");
    let run = call_echo(&p);
    assert_denied(
        &run,
        "would run past the script's 1s bound (dispatch.script_timeout)",
    );
}

/// The message of a run stopped at its memory limit.
const HELD_TOO_MUCH: &str =
    "the script held more than 64 MiB of memory (is it building ever larger values?)";

#[test]
fn a_map_that_collects_fresh_megabyte_strings_denies_the_call_at_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 10,000 results of 1 MiB each, every one within the string limit: 10 GB in all.
    let p = policy(
        &dir,
        "30s",
        "before",
        "let s = \"a\";\nwhile s.len() < 524288 { s += s; }\nlet a = [];\na.pad(10000, 0);\nlet b = a.map(|x| s + s);\ntrue",
    );
    assert_denied(&call_echo(&p), HELD_TOO_MUCH);
}

#[test]
fn a_for_each_that_grows_every_element_in_place_denies_the_call_at_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(
        &dir,
        "30s",
        "before",
        "let s = \"a\";\nwhile s.len() < 524288 { s += s; }\nlet a = [];\na.pad(10000, 0);\na.for_each(|| { this = s + s; });\ntrue",
    );
    assert_denied(&call_echo(&p), HELD_TOO_MUCH);
}

#[test]
fn many_variables_of_a_megabyte_each_deny_the_call_at_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let lets: String = (0..100).map(|i| format!("let v{i} = s + s;\n")).collect();
    let p = policy(
        &dir,
        "30s",
        "before",
        &format!("let s = \"a\";\nwhile s.len() < 524288 {{ s += s; }}\n{lets}true"),
    );
    assert_denied(&call_echo(&p), HELD_TOO_MUCH);
}

#[test]
fn print_lines_of_a_script_are_cut_and_counted_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    // 300 lines of 128 KiB: 39 MB of log uncut.
    let p = policy(
        &dir,
        "30s",
        "before",
        "let s = \"a\";\nwhile s.len() < 131072 { s += s; }\nfor i in 0..300 { print(s); }\ntrue",
    );
    let run = Toolgate::new(&[
        "-v",
        "call",
        "--policy",
        p.to_str().expect("a UTF-8 path"),
        "--json",
        "echo",
        r#"{"text": "hi"}"#,
    ])
    .run_within(Duration::from_secs(60));
    run.assert_code(0);
    assert!(
        run.stderr.contains("... (131072 bytes in all)")
            && run.stderr.contains(
                "(the script's further print/debug lines of this run are dropped: at most 100 a run)"
            ),
        "{}",
        &run.stderr[..run.stderr.len().min(2000)]
    );
    assert!(
        run.stderr.len() < 1 << 20,
        "{} bytes of log",
        run.stderr.len()
    );
}
