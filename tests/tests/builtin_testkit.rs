//! The test plugin built into the test builds of `toolgate` (issue 31, item 1): `scripts/test.sh`
//! builds the workspace with `--features toolgate-cli/builtin-testkit`, so `name: testkit` works
//! with the program alone, through the same ABI checks as a library; `isolation: process` serves
//! it from the program itself (`toolgate plugin-host`); and a library of the same name on the
//! plugin path still wins, with a log line that says so.

mod anywhere;

use std::path::PathBuf;

use anywhere::program_in;
use toolgate_e2e::toolgate_exe;

/// The program under test copied alone into a fresh folder (no plugin library beside it or in
/// its parent folder); fails, saying how to build it, when the test build has no built-in
/// testkit.
fn lone_test_build() -> (tempfile::TempDir, PathBuf) {
    let version = toolgate_e2e::toolgate(&["--version"]);
    assert!(
        version.stdout.contains("builtin-testkit"),
        "this toolgate has no built-in testkit (its --version says:\n{}): build it with \
         `cargo build --workspace --features toolgate-cli/builtin-testkit` (scripts/test.sh does)",
        version.stdout
    );
    let dir = tempfile::tempdir().expect("a temporary folder");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin/");
    let program = bin.join("toolgate");
    std::fs::copy(toolgate_exe(), &program).expect("the program copies");
    (dir, program)
}

/// A folder holding `policy.yaml` with `text`.
fn policy_folder(text: &str) -> tempfile::TempDir {
    let work = tempfile::tempdir().expect("a folder");
    std::fs::write(work.path().join("policy.yaml"), text).expect("policy written");
    work
}

#[test]
fn a_test_build_runs_name_testkit_with_no_library_on_the_path() {
    let (_keep, program) = lone_test_build();
    let work = policy_folder("version: 1\nplugins:\n  - name: testkit\n");
    let run = program_in(
        &program,
        work.path(),
        &[
            "-v",
            "call",
            "--policy",
            "policy.yaml",
            "echo",
            r#"{"text": "from the built-in"}"#,
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.trim_end(), "from the built-in", "{run:?}");
    assert!(
        run.stderr.contains("built-in plugin used") && run.stderr.contains("testkit"),
        "the log says the built-in is used: {}",
        run.stderr
    );
}

#[test]
fn the_built_in_testkit_runs_in_a_worker_under_isolation_process() {
    let (_keep, program) = lone_test_build();
    let work = policy_folder("version: 1\nplugins:\n  - name: testkit\n    isolation: process\n");
    // An abort in the plugin ends its worker, not the program: the call is answered.
    let run = program_in(
        &program,
        work.path(),
        &[
            "call",
            "--json",
            "--policy",
            "policy.yaml",
            "crash",
            r#"{"how": "abort"}"#,
        ],
        &[],
    );
    assert_eq!(run.code, 1, "{run:?}");
    let outcome: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"));
    assert_eq!(outcome["error_kind"], "plugin_crashed", "{run:?}");
}

#[test]
fn a_testkit_library_on_the_plugin_path_wins_over_the_built_in_and_the_log_says_so() {
    let (_keep, program) = lone_test_build();
    let work = policy_folder("version: 1\nplugins:\n  - name: testkit\n");
    let libraries = toolgate_exe()
        .parent()
        .expect("the build folder")
        .to_path_buf();
    let run = program_in(
        &program,
        work.path(),
        &[
            "-v",
            "call",
            "--policy",
            "policy.yaml",
            "echo",
            r#"{"text": "lib"}"#,
        ],
        &[("TOOLGATE_PLUGIN_PATH", libraries.as_os_str())],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("plugin library used instead of the built-in plugin of the same name")
            && run.stderr.contains("libtoolgate_plugin_testkit"),
        "{}",
        run.stderr
    );
}
