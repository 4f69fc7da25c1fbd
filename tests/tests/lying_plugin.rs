//! A plugin in process that reports a length its buffer does not have (1 TiB for two bytes),
//! in its manifest, its `init` error, a call's output or error, a progress message or a chunk:
//! each is refused with a message saying how long it claimed to be and the limit, before the
//! host reads or allocates a byte of it. The plugin is the test library `lying-lengths`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toolgate_e2e::{Run, Toolgate, toolgate_exe};

/// The lying plugin library of this build, beside the program.
fn library() -> PathBuf {
    let path = toolgate_exe().with_file_name(format!(
        "{}toolgate_test_lying_lengths{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        path.is_file(),
        "{} does not exist: run `cargo build -p toolgate-test-lying-lengths` first",
        path.display()
    );
    path
}

/// A policy in `dir` loading the lying plugin with `extra` lines under its entry.
fn policy(dir: &Path, extra: &str) -> PathBuf {
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nplugins:\n  - path: {}\n{extra}",
            toolgate_e2e::serde_json::Value::String(library().display().to_string())
        ),
    )
    .expect("write policy");
    policy
}

/// `toolgate call --json TOOL {}` on the lying plugin; fails the test if the program has not
/// ended within 60 s or died of a signal.
fn call(tool: &str) -> Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = policy(dir.path(), "");
    Toolgate::new(&[
        "call",
        "--policy",
        policy.to_str().expect("a UTF-8 path"),
        "--json",
        tool,
        "{}",
    ])
    .run_within(Duration::from_secs(60))
}

/// The call failed, and its error says `expected`.
#[track_caller]
fn assert_call_error(run: &Run, expected: &str) {
    run.assert_code(1);
    run.assert_no_panic();
    let outcome = run.json();
    let content = outcome["content"].as_str().expect("text content");
    assert!(
        content.contains(expected),
        "expected {expected:?} in {content:?}"
    );
}

/// What the plugin claims, as the host's messages say it.
const CLAIM: &str = "1099511627776 bytes, over the limit of";

#[test]
fn a_manifest_that_lies_about_its_length_is_refused_not_allocated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = policy(dir.path(), "");
    let run = Toolgate::new(&[std::ffi::OsStr::new("validate"), policy.as_os_str()])
        .env("TOOLGATE_TEST_LIE_IN_MANIFEST", "1")
        .run_within(Duration::from_secs(60));
    run.assert_code(3);
    run.assert_no_panic();
    assert!(
        run.stderr.contains(&format!(
            "has a bad manifest: the manifest is {CLAIM} 4194304 bytes; it was not read"
        )),
        "{run:#?}"
    );
}

#[test]
fn an_init_error_that_lies_about_its_length_is_refused_not_allocated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = policy(dir.path(), "    config: {lie_in_init: true}\n");
    let run = Toolgate::new(&[std::ffi::OsStr::new("validate"), policy.as_os_str()])
        .run_within(Duration::from_secs(60));
    run.assert_code(3);
    run.assert_no_panic();
    assert!(
        run.stderr.contains(&format!(
            "plugin lying ({}) failed to start: (a message of {CLAIM} 4194304 bytes, not read)",
            library().display()
        )),
        "{run:#?}"
    );
}

#[test]
fn call_output_that_lies_about_its_length_is_refused_unread() {
    let run = call("lie.output");
    assert_call_error(
        &run,
        &format!(
            "plugin lying returned {CLAIM} 268435456 bytes, for tool `lie.output`; none of it was read"
        ),
    );
}

#[test]
fn a_call_error_that_lies_about_its_length_is_refused_unread() {
    let run = call("lie.error");
    assert_call_error(
        &run,
        &format!(
            "plugin lying returned {CLAIM} 268435456 bytes, for tool `lie.error`; none of it was read"
        ),
    );
}

#[test]
fn a_progress_message_that_lies_about_its_length_is_left_out() {
    let run = call("lie.progress");
    run.assert_code(0);
    run.assert_no_panic();
}

#[test]
fn a_chunk_that_lies_about_its_length_stops_the_call_unread() {
    let run = call("lie.chunk");
    assert_call_error(
        &run,
        &format!(
            "plugin lying streamed a chunk of {CLAIM} 268435456 bytes, for tool `lie.chunk`; it was not read and the call was stopped"
        ),
    );
}
