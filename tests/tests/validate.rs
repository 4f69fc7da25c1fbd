//! `toolgate validate`: a policy is loaded and the engine built from it; problems come out as
//! `file:line:col: message` on stderr with a non-zero exit.

use std::path::{Path, PathBuf};

use toolgate_e2e::{Toolgate, repo_root, toolgate};

/// Every policy shipped in `policies/` and `policies/examples/`.
fn shipped_policies() -> Vec<PathBuf> {
    let mut all = Vec::new();
    for dir in ["policies", "policies/examples"] {
        for entry in std::fs::read_dir(repo_root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                all.push(path);
            }
        }
    }
    all.sort();
    assert!(!all.is_empty());
    all
}

/// Writes `text` as `policy.yaml` in a fresh folder and validates it.
fn validate_text(text: &str) -> (tempfile::TempDir, PathBuf, toolgate_e2e::Run) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, text).unwrap();
    (dir, path.clone(), validate_within_a_minute(&path))
}

/// `toolgate validate PATH`, killed (and the test failed) if it has not ended within a minute:
/// a guard against a hang (a FIFO, an input that expands), not a measure of speed.
fn validate_within_a_minute(path: &Path) -> toolgate_e2e::Run {
    Toolgate::new(&["validate", path.to_str().unwrap()])
        .run_within(std::time::Duration::from_secs(60))
}

/// The run failed with exit 3, and stderr has a `file:line:col: ` line for `file`.
#[track_caller]
fn assert_diagnostic_at(run: &toolgate_e2e::Run, file: &Path, line: u32, needle: &str) {
    run.assert_code(3);
    let prefix = format!("{}:{line}:", file.display());
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with(&prefix) && l.contains(needle)),
        "expected a line starting with {prefix:?} mentioning {needle:?} on stderr:\n{}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn every_shipped_policy_validates() {
    for policy in shipped_policies() {
        // mcp-upstream.yaml names the MCP servers the test scripts install.
        let run = Toolgate::new(&["validate", policy.to_str().unwrap()])
            .with_test_tools()
            .run();
        assert_eq!(
            run.code,
            0,
            "{} does not validate:\n{}",
            policy.display(),
            run.stderr
        );
        assert!(run.stdout.contains(": ok"), "{}", run.stdout);
    }
}

#[test]
fn validate_without_a_policy_checks_the_built_in_one() {
    let run = toolgate(&["validate"]);
    run.assert_code(0);
    assert!(
        run.stdout.starts_with("<embedded default policy>: ok"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("fs_read_file (fs.read_file)"),
        "the summary shows the model-facing and the real name: {}",
        run.stdout
    );
}

#[test]
fn the_summary_lists_tools_by_source_aliases_and_hooks() {
    let policy = repo_root().join("policies/examples/aliases.yaml");
    let run = toolgate(&["validate", policy.to_str().unwrap()]);
    run.assert_code(0);
    assert!(run.stdout.contains("plugin testkit"), "{}", run.stdout);
    assert!(run.stdout.contains("say -> echo"), "{}", run.stdout);
    assert!(run.stdout.contains("unknown_tool"), "{}", run.stdout);
}

#[test]
fn malformed_yaml_fails_at_its_line() {
    let (_d, path, run) = validate_text("version: 1\ndispatch:\n  timeout: [1s\n");
    run.assert_code(3);
    assert!(
        run.stderr.starts_with(&format!("{}:", path.display())),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unknown_key_fails_at_its_line_and_column() {
    let (_d, path, run) = validate_text("version: 1\ndispatchh: {}\n");
    assert_diagnostic_at(&run, &path, 2, "dispatchh");
}

#[test]
fn a_schema_violation_fails_at_its_line() {
    let (_d, path, run) = validate_text("version: 1\ndispatch:\n  concurrency: many\n");
    assert_diagnostic_at(&run, &path, 3, "concurrency");
}

#[test]
fn yes_is_not_a_boolean() {
    let (_d, path, run) = validate_text("version: 1\ndispatch:\n  sequential: yes\n");
    assert_diagnostic_at(&run, &path, 3, "sequential");
}

#[test]
fn a_script_that_does_not_compile_fails_at_its_line() {
    let (_d, path, run) = validate_text(
        "version: 1\nplugins: [{name: testkit}]\nscripts:\n  before:\n    code: |\n      let x = ;\n",
    );
    run.assert_code(3);
    assert!(
        run.stderr.starts_with(&format!("{}:", path.display())),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("before"), "{}", run.stderr);
}

#[test]
fn a_missing_plugin_file_fails_naming_the_file() {
    let (_d, path, run) = validate_text("version: 1\nplugins:\n  - path: ./no-such-plugin.so\n");
    assert_diagnostic_at(&run, &path, 3, "no-such-plugin.so");
}

#[test]
fn a_missing_policy_file_fails_with_exit_3() {
    let run = toolgate(&["validate", "no/such/policy.yaml"]);
    run.assert_code(3);
    assert!(run.stderr.contains("no/such/policy.yaml"), "{}", run.stderr);
}

#[test]
fn every_problem_of_a_policy_is_reported() {
    let (_d, path, run) = validate_text("version: 1\nfoo: 1\nbar: 2\n");
    run.assert_code(3);
    let at = |line: u32| format!("{}:{line}:", path.display());
    assert!(run.stderr.contains(&at(2)), "{}", run.stderr);
    assert!(run.stderr.contains(&at(3)), "{}", run.stderr);
}

#[test]
fn tools_and_call_refuse_a_bad_policy_with_exit_3() {
    let (_d, path, _) = validate_text("version: 1\ndispatchh: {}\n");
    let policy = path.to_str().unwrap();
    toolgate(&["tools", "--policy", policy]).assert_code(3);
    toolgate(&["call", "--policy", policy, "echo", "{}"]).assert_code(3);
}

#[test]
fn every_plugin_that_fails_to_load_is_reported_at_its_entry() {
    let (_d, path, run) = validate_text(
        "version: 1\nplugins:\n  - path: ./first-missing.so\n  - name: testkit\n  - path: ./second-missing.so\n  - name: no-such-plugin\n",
    );
    run.assert_code(3);
    let at = |line: u32, col: u32| format!("{}:{line}:{col}:", path.display());
    for (line, needle) in [
        (3, "first-missing.so"),
        (5, "second-missing.so"),
        (6, "no-such-plugin"),
    ] {
        assert!(
            run.stderr
                .lines()
                .any(|l| l.starts_with(&at(line, 5)) && l.contains(needle)),
            "expected {needle} at {}:\n{}",
            at(line, 5),
            run.stderr
        );
    }
    assert_eq!(run.stderr.lines().count(), 3, "{}", run.stderr);
}

#[test]
fn a_rhai_error_in_a_script_file_is_reported_at_its_line_and_column_in_that_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hook.rhai"),
        "let x = 1;\nlet y = x +* 2;\n",
    )
    .unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "version: 1\nscripts:\n  before:\n    file: hook.rhai\n",
    )
    .unwrap();
    let run = toolgate(&["validate", policy.to_str().unwrap()]);
    run.assert_code(3);
    let at = format!("{}:2:12:", dir.path().join("hook.rhai").display());
    assert!(
        run.stderr
            .lines()
            .any(|l| l.ends_with("Unexpected '*'") && l.contains(&at)),
        "expected {at}:\n{}",
        run.stderr
    );
}

/// `toolgate validate PATH` on a path that is not a regular policy file: exit 3 at once.
#[track_caller]
fn assert_refused_quickly(path: &Path, needle: &str) {
    let run = validate_within_a_minute(path);
    run.assert_code(3).assert_no_panic();
    let expected = format!("{}: cannot read the policy file: {needle}", path.display());
    assert!(
        run.stderr.contains(&expected),
        "{expected:?} not in:\n{}",
        run.stderr
    );
}

#[test]
fn validate_refuses_a_fifo_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("policy.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    assert_refused_quickly(&fifo, "it is a named pipe (FIFO), not a regular file");
}

#[test]
fn validate_refuses_dev_zero_at_once() {
    assert_refused_quickly(
        Path::new("/dev/zero"),
        "it is a character device, not a regular file",
    );
}

#[test]
fn a_rhai_error_in_an_inline_block_script_is_reported_at_its_column_in_the_policy() {
    // `*` is column 12 of the script's second line; the block is indented by 6.
    let (_d, path, run) = validate_text(
        "version: 1\nscripts:\n  before:\n    code: |\n      let x = 1;\n      let y = x +* 2;\n",
    );
    run.assert_code(3);
    let at = format!("{}:6:18:", path.display());
    assert!(
        run.stderr.starts_with(&at) && run.stderr.contains("Unexpected '*'"),
        "expected {at}:\n{}",
        run.stderr
    );
}

#[test]
fn validate_refuses_a_sparse_policy_over_16_mib() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::File::create(&path)
        .unwrap()
        .set_len(16 * 1024 * 1024 + 1)
        .unwrap();
    assert_refused_quickly(
        &path,
        "it is 16777217 bytes, more than the limit of 16777216 bytes (16 MiB)",
    );
}

#[test]
fn a_rhai_error_in_an_inline_one_line_script_is_reported_at_its_column_in_the_policy() {
    // The quoted script starts at column 12; its `*` is the script's column 12.
    let (_d, path, run) =
        validate_text("version: 1\nscripts:\n  before:\n    code: \"let y = 1 +* 2;\"\n");
    run.assert_code(3);
    let at = format!("{}:4:23:", path.display());
    assert!(
        run.stderr.starts_with(&at) && run.stderr.contains("Unexpected '*'"),
        "expected {at}:\n{}",
        run.stderr
    );
}

#[test]
fn validate_refuses_a_billion_laughs_policy_without_aborting() {
    let (_dir, path, run) = validate_text(
        "version: 1\n\
         a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n\
         b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
         c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n\
         d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
         e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n\
         f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n\
         g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
    );
    assert_diagnostic_at(&run, &path, 6, "anchors and aliases copy too much");
}

#[test]
fn validate_refuses_a_catalog_that_is_a_fifo_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("tools.jsonl"))
        .status()
        .unwrap();
    assert!(made.success());
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, "version: 1\nsearch:\n  catalogs: [tools.jsonl]\n").unwrap();
    let run = validate_within_a_minute(&path);
    assert_diagnostic_at(&run, &path, 3, "named pipe (FIFO)");
}

#[test]
fn validate_reports_an_integral_float_limit_as_the_integer() {
    let (_dir, _path, run) = validate_text("version: 1\ndispatch:\n  max_result_chars: 5.0\n");
    run.assert_code(0);
    assert!(run.stdout.contains("max_result_chars 5,"), "{}", run.stdout);
}
