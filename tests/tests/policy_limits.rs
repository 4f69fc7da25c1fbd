//! `toolgate validate` on hostile policy files: what one file can make the loader allocate,
//! and how much it can make the program print, are bounded.

use std::path::PathBuf;

use toolgate_e2e::{Run, toolgate};

/// Writes `text` as `policy.yaml` in a fresh folder and validates it.
fn validate_text(text: &str) -> (tempfile::TempDir, PathBuf, Run) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, text).unwrap();
    let run = toolgate(&["validate", path.to_str().unwrap()]);
    (dir, path, run)
}

#[test]
fn aliases_of_a_long_string_are_refused_at_the_alias_that_crosses_the_byte_cap() {
    // 50 aliases of a 64 KiB string are 3.2 MiB; ten aliases of those would be 32 MiB of text
    // from a 64 KiB file (the same shape at 1 MiB and 900 aliases asked for 90 GiB). Each
    // alias is one node, so the node cap alone lets it through.
    let long = "x".repeat(64 * 1024);
    let b = vec!["*a"; 50].join(", ");
    let c = ["*b"; 10].join(", ");
    let (_dir, path, run) = validate_text(&format!(
        "version: 1\na: &a \"{long}\"\nb: &b [{b}]\nc: [{c}]\n"
    ));
    run.assert_code(3);
    // The anchors a and b keep 3.2 MiB, and each alias of b copies 3.2 MiB more: the fourth
    // (line 4, column 17) crosses 16 MiB.
    let first = run.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!(
            "{}:4:17: anchors and aliases copy too much: this alias copies 3276800 bytes of text",
            path.display()
        )) && first.contains("at most 16777216 bytes (16 MiB) together"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn a_policy_with_many_errors_prints_the_first_hundred_and_counts_the_rest() {
    // 30,000 duplicate keys: one error each.
    let (_dir, path, run) = validate_text(&format!("version: 1\n{}", "x: 1\n".repeat(30_001)));
    run.assert_code(3);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        101,
        "{}",
        &run.stderr[..run.stderr.len().min(2000)]
    );
    // The first ones by position: the first duplicate is on line 3.
    assert!(
        lines[0].starts_with(&format!("{}:3:1: duplicate key \"x\"", path.display())),
        "{}",
        lines[0]
    );
    assert!(
        lines[99].starts_with(&format!("{}:102:1: duplicate key \"x\"", path.display())),
        "{}",
        lines[99]
    );
    assert_eq!(
        lines[100],
        "... and 29900 more errors (the first 100 are listed)"
    );
}

#[test]
fn schema_errors_past_the_first_hundred_are_counted_not_printed() {
    // 200 rules with a misspelt key: 200 schema errors.
    let rules = "    - {tools: [a], reasn: no}\n".repeat(200);
    let (_dir, _path, run) = validate_text(&format!("version: 1\nrules:\n  deny:\n{rules}"));
    run.assert_code(3);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 101, "{}", run.stderr);
    assert!(lines[0].contains("unknown key \"reasn\""), "{}", lines[0]);
    assert_eq!(
        lines[100],
        "... and 100 more errors (the first 100 are listed)"
    );
}
