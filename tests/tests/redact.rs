//! Secret masking (`redact:`) through the binary: secrets in results never reach the model —
//! not in the tool message, not across the result cap, not in an offloaded result's preview or
//! its pages — and each call's count of masks is reported.

use std::path::{Path, PathBuf};

use toolgate_e2e::{Run, toolgate, toolgate_with_results};

const AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
const GITHUB_TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

/// Writes `policy` (the testkit plugin plus `extra`) as `policy.yaml` in a fresh folder.
fn policy_with(extra: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(
        &path,
        format!("version: 1\nplugins: [{{name: testkit}}]\n{extra}"),
    )
    .unwrap();
    (dir, path)
}

/// `toolgate call --policy POLICY --json echo {"text": TEXT}`.
fn echo(policy: &Path, text: &str) -> serde_json::Value {
    let args = serde_json::json!({ "text": text }).to_string();
    let run = toolgate(&[
        "call",
        "--policy",
        policy.to_str().unwrap(),
        "--json",
        "echo",
        &args,
    ]);
    run.assert_code(0);
    run.json()
}

#[test]
fn builtin_secrets_in_a_result_are_masked_and_counted() {
    let (_dir, policy) = policy_with("redact: {}\n");
    let o = echo(
        &policy,
        &format!("aws {AWS_KEY} gh {GITHUB_TOKEN} db password=hunter2 done"),
    );
    let content = o["content"].as_str().unwrap();
    assert_eq!(
        content,
        "aws [REDACTED:aws_access_key_id] gh [REDACTED:github_token] db \
         password=[REDACTED:key_value] done"
    );
    assert_eq!(o["redactions"], 3);
}

#[test]
fn without_a_redact_section_results_are_left_as_they_are() {
    let (_dir, policy) = policy_with("");
    let o = echo(&policy, &format!("aws {AWS_KEY}"));
    assert_eq!(o["content"], format!("aws {AWS_KEY}"));
    assert_eq!(o["redactions"], 0);
}

#[test]
fn a_disabled_builtin_is_left_unmasked_while_the_others_apply() {
    let (_dir, policy) = policy_with("redact: {disable: [key_value]}\n");
    let o = echo(&policy, &format!("password=hunter2 {AWS_KEY}"));
    assert_eq!(
        o["content"],
        "password=hunter2 [REDACTED:aws_access_key_id]"
    );
    assert_eq!(o["redactions"], 1);
}

#[test]
fn a_policy_pattern_masks_only_its_secret_group() {
    let (_dir, policy) = policy_with(
        "redact:\n  builtin: false\n  patterns:\n    - name: db_password\n      \
         regex: 'postgres://[^:/]+:(?P<secret>[^@]+)@'\n",
    );
    let o = echo(
        &policy,
        "url postgres://app:s3cr3t-pw@db:5432/x and password=visible",
    );
    assert_eq!(
        o["content"],
        "url postgres://app:[REDACTED:db_password]@db:5432/x and password=visible"
    );
    assert_eq!(o["redactions"], 1);
}

#[test]
fn a_secret_in_a_failure_text_is_masked() {
    let (_dir, policy) = policy_with("redact: {}\n");
    let args = serde_json::json!({ "message": format!("cannot log in with {GITHUB_TOKEN}") });
    let run = toolgate(&[
        "call",
        "--policy",
        policy.to_str().unwrap(),
        "--json",
        "fail",
        &args.to_string(),
    ]);
    run.assert_code(1);
    let o = run.json();
    assert!(!run.stdout.contains(GITHUB_TOKEN), "{}", run.stdout);
    assert!(
        o["content"]
            .as_str()
            .unwrap()
            .contains("[REDACTED:github_token]"),
        "{o}"
    );
    assert_eq!(o["redactions"], 1);
}

#[test]
fn a_secret_straddling_the_result_cap_is_masked_whole_before_the_cut() {
    // The cap (30 characters) falls inside the key: cut first, its first ten characters would
    // reach the model and no pattern would know them for a key.
    let (_dir, policy) = policy_with("dispatch: {max_result_chars: 30}\nredact: {}\n");
    let o = echo(&policy, &format!("{} {AWS_KEY} and more", "x".repeat(19)));
    let content = o["content"].as_str().unwrap();
    assert!(!content.contains("AKIAIOSFOD"), "{content}");
    assert!(
        content.starts_with(&format!("{} [REDACTED:", "x".repeat(19))),
        "{content}"
    );
    assert_eq!(o["truncated"], true);
    assert_eq!(o["redactions"], 1);
}

/// Calls `read_tool_result` for `id` from `offset` in session `S`.
fn read_page(results: &Path, policy: &Path, id: &str, offset: u64) -> Run {
    let args = format!(r#"{{"id":"{id}","offset":{offset}}}"#);
    let run = toolgate_with_results(
        results,
        &[
            "call",
            "--policy",
            policy.to_str().unwrap(),
            "--session",
            "S",
            "read_tool_result",
            &args,
        ],
    );
    run.assert_code(0);
    run
}

#[test]
fn secrets_in_an_offloaded_result_are_masked_in_its_preview_its_pages_and_its_store() {
    let (_dir, policy) = policy_with(
        "reduction: {max_result_bytes: 1000, preview_head_chars: 200, preview_tail_chars: 100}\n\
         redact: {}\n",
    );
    let results = tempfile::tempdir().unwrap();
    // One key in the preview's head, one in the middle (only in the pages), one in the tail.
    let text = format!(
        "head {AWS_KEY} {}middle {GITHUB_TOKEN} {}tail api_key: zzTopSecret",
        "a".repeat(3000),
        "b".repeat(3000)
    );
    let args = serde_json::json!({ "text": text }).to_string();
    let run = toolgate_with_results(
        results.path(),
        &[
            "call",
            "--policy",
            policy.to_str().unwrap(),
            "--session",
            "S",
            "--json",
            "echo",
            &args,
        ],
    );
    run.assert_code(0);
    let o = run.json();
    let id = o["result_id"].as_str().expect("the result is offloaded");
    assert_eq!(o["redactions"], 3);
    let preview = o["content"].as_str().unwrap();
    assert!(
        preview.contains("head [REDACTED:aws_access_key_id]"),
        "{preview}"
    );
    assert!(
        preview.contains("api_key: [REDACTED:key_value]"),
        "{preview}"
    );

    let mut paged = String::new();
    let mut offset = 0;
    while offset < 10_000 {
        let page = read_page(results.path(), &policy, id, offset).stdout;
        paged.push_str(&page);
        offset += 20_000;
    }
    assert!(paged.contains("middle [REDACTED:github_token]"), "{paged}");
    for secret in [AWS_KEY, GITHUB_TOKEN, "zzTopSecret"] {
        assert!(!preview.contains(secret), "{secret} in the preview");
        assert!(!paged.contains(secret), "{secret} in a page");
        for file in walk(results.path()) {
            let stored = std::fs::read(&file).unwrap();
            assert!(
                !String::from_utf8_lossy(&stored).contains(secret),
                "{secret} stored in {}",
                file.display()
            );
        }
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// `toolgate validate` of a policy whose one pattern is `regex` (its key on line 6, column 7).
fn validate_pattern(regex: &str) -> (tempfile::TempDir, PathBuf, Run) {
    let (dir, path) = policy_with(&format!(
        "redact:\n  patterns:\n    - name: mine\n      regex: '{regex}'\n"
    ));
    let run = toolgate(&["validate", path.to_str().unwrap()]);
    (dir, path, run)
}

#[test]
fn a_pattern_that_is_not_a_regular_expression_fails_the_load_at_its_line_and_column() {
    let (_dir, path, run) = validate_pattern("a(b");
    run.assert_code(3);
    let first = run.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("{}:6:7: ", path.display()))
            && first.ends_with("not a usable regular expression: unclosed group (at character 2)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_pattern_that_compiles_too_large_is_refused_at_load() {
    let (_dir, path, run) = validate_pattern(r"(?:\w{500}){500}");
    run.assert_code(3);
    let first = run.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("{}:6:7: ", path.display()))
            && first.contains("exceeds size limit of 1048576 bytes"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_huge_result_is_scanned_whole_in_time_linear_in_its_length() {
    // 4 MiB of text with a key every 4 KiB, no cap: every key is masked, and the scan (the
    // regex crate's, linear in the text) takes a small part of the run.
    let (_dir, policy) = policy_with("dispatch: {max_result_chars: -1}\nredact: {}\n");
    let chunk = format!("{} {AWS_KEY} password: hunter2\n", "z".repeat(4000));
    let text = chunk.repeat(1024);
    let input = toolgate_e2e::conversation(&[(
        "c1",
        "echo",
        &serde_json::json!({ "text": text }).to_string(),
    )]);
    let run =
        toolgate_e2e::toolgate_with_stdin(&["run", "--policy", policy.to_str().unwrap()], &input);
    run.assert_code(0);
    // The output is the conversation: the assistant's call (with the secrets the model sent),
    // then the tool message.
    let messages = run.json();
    let tool = messages.as_array().unwrap().last().unwrap();
    assert_eq!(tool["role"], "tool");
    let content = tool["content"].as_str().unwrap();
    assert!(!content.contains(AWS_KEY) && !content.contains("hunter2"));
    assert_eq!(
        content.matches("[REDACTED:aws_access_key_id]").count(),
        1024
    );
    assert_eq!(content.matches("[REDACTED:key_value]").count(), 1024);
    assert!(
        run.elapsed < std::time::Duration::from_secs(30),
        "4 MiB took {:?}",
        run.elapsed
    );
    eprintln!("4 MiB result with 2048 secrets: run took {:?}", run.elapsed);
}
