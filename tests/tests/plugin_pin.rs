//! `sha256:` pins in a policy and `toolgate plugin hash PATH`.

use std::path::PathBuf;

use toolgate_e2e::{Run, toolgate, toolgate_exe};

/// The testkit library beside the built program.
fn testkit_library() -> PathBuf {
    toolgate_exe()
        .parent()
        .expect("the program is in a folder")
        .join(format!(
            "{}toolgate_plugin_testkit{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ))
}

fn hash_line() -> String {
    let library = testkit_library();
    let run = toolgate(&["plugin", "hash", &library.display().to_string()]);
    run.assert_code(0);
    run.stdout.trim_end().to_string()
}

/// `toolgate validate` of a policy that loads testkit with `pin` (a `sha256: ...` line).
fn validate_with(pin: &str) -> Run {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = dir.path().join("pinned.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nplugins:\n  - path: {}\n    {pin}\n",
            testkit_library().display()
        ),
    )
    .expect("policy written");
    toolgate(&["validate", &policy.display().to_string()])
}

#[test]
fn plugin_hash_prints_one_sha256_line_to_paste() {
    let line = hash_line();
    let hex = line
        .strip_prefix("sha256: ")
        .expect("the line starts with sha256: ");
    assert_eq!(hex.len(), 64, "{line:?}");
    assert!(
        hex.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
}

#[test]
fn a_library_matching_its_pin_loads() {
    validate_with(&hash_line()).assert_code(0);
}

#[test]
fn a_library_whose_hash_differs_from_its_pin_is_refused_naming_both_hashes() {
    let actual = hash_line();
    let actual = actual.trim_start_matches("sha256: ");
    let pinned = "f".repeat(64);
    let run = validate_with(&format!("sha256: {pinned}"));
    run.assert_code(3);
    assert!(run.stderr.contains(&pinned), "{run:#?}");
    assert!(run.stderr.contains(actual), "{run:#?}");
}

#[test]
fn plugin_hash_of_a_missing_file_fails_with_its_path() {
    let run = toolgate(&["plugin", "hash", "no/such/library.so"]);
    run.assert_code(4);
    assert!(run.stderr.contains("no/such/library.so"), "{run:#?}");
}
