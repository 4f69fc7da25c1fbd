//! Large results from the command line: a big result is offloaded by one `toolgate call`, and
//! later processes page through it with `read_tool_result`, in its session only (R1, R3, R4, R8).

use toolgate_e2e::{repo_path, toolgate_with_results};
use toolgate_plugin_testkit::big_text;

fn offload_policy() -> String {
    repo_path("policies/offload.yaml").display().to_string()
}

/// `toolgate call --policy policies/offload.yaml --session SESSION --json big_output` with
/// 200,000 bytes; returns the call's JSON.
fn offload_big_output(results: &std::path::Path, session: &str) -> serde_json::Value {
    let policy = offload_policy();
    let run = toolgate_with_results(
        results,
        &[
            "call",
            "--policy",
            &policy,
            "--session",
            session,
            "--json",
            "big_output",
            r#"{"bytes":200000}"#,
        ],
    );
    run.assert_code(0);
    run.json()
}

fn read_tool_result(results: &std::path::Path, session: &str, args: &str) -> toolgate_e2e::Run {
    let policy = offload_policy();
    toolgate_with_results(
        results,
        &[
            "call",
            "--policy",
            &policy,
            "--session",
            session,
            "read_tool_result",
            args,
        ],
    )
}

#[test]
fn r1_a_result_over_max_result_bytes_is_replaced_by_a_notice_with_its_id() {
    let results = tempfile::tempdir().unwrap();
    let o = offload_big_output(results.path(), "S");
    let id = o["result_id"].as_str().expect("result_id is not null");
    let notice = o["content"].as_str().unwrap();
    assert!(notice.contains(id), "{notice}");
    assert!(notice.contains("200000 bytes"), "{notice}");
    assert!(notice.contains("read_tool_result"), "{notice}");
    assert!(
        notice.len() < 5_000,
        "the model sees a notice, not the result"
    );
    assert_eq!(o["is_error"], false);
}

#[test]
fn r3_r8_a_second_process_pages_through_the_result_the_first_one_saved() {
    let results = tempfile::tempdir().unwrap();
    let o = offload_big_output(results.path(), "S");
    let id = o["result_id"].as_str().unwrap();
    let whole = big_text(200_000);

    let first = read_tool_result(results.path(), "S", &format!(r#"{{"id":"{id}"}}"#));
    first.assert_code(0);
    let footer =
        format!("\n\n[tool result \"{id}\": characters 0-20000 of 200000; next_offset=20000]\n");
    assert!(
        first.stdout.ends_with(&footer),
        "{}",
        &first.stdout[first.stdout.len().saturating_sub(200)..]
    );
    assert_eq!(
        &first.stdout[..first.stdout.len() - footer.len()],
        &whole[..20_000]
    );

    let last = read_tool_result(
        results.path(),
        "S",
        &format!(r#"{{"id":"{id}","offset":180000}}"#),
    );
    last.assert_code(0);
    let footer = format!("\n\n[tool result \"{id}\": characters 180000-200000 of 200000]\n");
    assert!(
        last.stdout.ends_with(&footer),
        "the last page has no next_offset"
    );
    assert_eq!(
        &last.stdout[..last.stdout.len() - footer.len()],
        &whole[180_000..]
    );
}

#[test]
fn r4_reading_the_result_from_another_session_is_access_denied() {
    let results = tempfile::tempdir().unwrap();
    let o = offload_big_output(results.path(), "S");
    let id = o["result_id"].as_str().unwrap();
    let policy = offload_policy();
    let run = toolgate_with_results(
        results.path(),
        &[
            "call",
            "--policy",
            &policy,
            "--session",
            "OTHER",
            "--json",
            "read_tool_result",
            &format!(r#"{{"id":"{id}"}}"#),
        ],
    );
    run.assert_code(1);
    let o = run.json();
    assert_eq!(o["is_error"], true);
    assert_eq!(o["error_kind"], "access_denied");
    assert!(
        !o["content"].as_str().unwrap().contains("line 000001"),
        "no content leaks: {o}"
    );
}

#[test]
fn r4_reading_a_session_result_without_a_session_is_access_denied() {
    let results = tempfile::tempdir().unwrap();
    let o = offload_big_output(results.path(), "S");
    let id = o["result_id"].as_str().unwrap();
    let policy = offload_policy();
    let run = toolgate_with_results(
        results.path(),
        &[
            "call",
            "--policy",
            &policy,
            "--json",
            "read_tool_result",
            &format!(r#"{{"id":"{id}"}}"#),
        ],
    );
    run.assert_code(1);
    assert_eq!(run.json()["error_kind"], "access_denied");
}
