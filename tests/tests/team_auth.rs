//! `toolgate serve --http` for a team (issue 27, items 1 and 2; spec C3-C7), through the
//! official MCP Python SDK and raw HTTP (scenarios in tests/mcp/team_auth.py): API keys made by
//! `toolgate key new`, JWT bearer tokens against a JWKS file or URL, the RFC 9728 metadata,
//! per-principal tools and rules, sessions that belong to their principal, and a real OAuth
//! flow against npm's oidc-provider (tests/oidc/provider.mjs, installed by scripts/npm.sh).

use std::process::Command;

use toolgate_e2e::{repo_path, repo_root, toolgate_exe, venv_python};

/// Runs one scenario of tests/mcp/team_auth.py and fails with its output when it does not
/// hold. The script bounds itself (120 s).
fn scenario(name: &str) {
    let output = Command::new(venv_python())
        .arg(repo_path("tests/mcp/team_auth.py"))
        .arg("--toolgate")
        .arg(toolgate_exe())
        .arg(name)
        .current_dir(repo_root())
        .output()
        .expect("the venv's python starts");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(
        output.status.success() && stdout.trim_end().ends_with("ok"),
        "scenario {name} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
}

#[test]
fn c3_an_api_key_proves_its_principal_to_the_tools_and_the_audit() {
    scenario("c3_an_api_key_proves_its_principal_to_the_tools_and_the_audit");
}

#[test]
fn c3_a_request_without_credentials_gets_401_that_points_at_the_metadata() {
    scenario("c3_a_request_without_credentials_gets_401_that_points_at_the_metadata");
}

#[test]
fn c3_an_unknown_key_gets_401_invalid_token_with_the_reason() {
    scenario("c3_an_unknown_key_gets_401_invalid_token_with_the_reason");
}

#[test]
fn c3_a_key_revoked_by_a_reload_gets_401_on_the_next_request() {
    scenario("c3_a_key_revoked_by_a_reload_gets_401_on_the_next_request");
}

#[test]
fn c3_jwt_bad_tokens_get_401_with_their_reason_and_good_ones_pass() {
    scenario("c3_jwt_bad_tokens_get_401_with_their_reason_and_good_ones_pass");
}

#[test]
fn c3_an_unreachable_jwks_gets_401_and_the_server_keeps_serving() {
    scenario("c3_an_unreachable_jwks_gets_401_and_the_server_keeps_serving");
}

#[test]
fn c3_a_jwks_url_is_fetched_cached_and_fetched_again_for_a_new_key() {
    scenario("c3_a_jwks_url_is_fetched_cached_and_fetched_again_for_a_new_key");
}

#[test]
fn c4_a_principal_sees_only_its_tools_and_one_with_none_is_denied() {
    scenario("c4_a_principal_sees_only_its_tools_and_one_with_none_is_denied");
}

#[test]
fn c5_a_rule_naming_a_principal_judges_its_calls_only() {
    scenario("c5_a_rule_naming_a_principal_judges_its_calls_only");
}

#[test]
fn c7_another_principal_presenting_a_session_id_is_refused() {
    scenario("c7_another_principal_presenting_a_session_id_is_refused");
}

#[test]
fn c6_an_mcp_client_does_its_oauth_flow_against_a_real_provider_and_calls_a_tool() {
    scenario("c6_an_mcp_client_does_its_oauth_flow_against_a_real_provider_and_calls_a_tool");
}

/// The complete example of docs/team.md loads and builds (`toolgate validate`), with its
/// folders moved into a temporary one.
#[test]
fn the_example_policy_of_the_team_guide_is_valid() {
    let guide = std::fs::read_to_string(repo_path("docs/team.md")).expect("docs/team.md");
    let start = guide
        .find("```yaml\nversion: 1")
        .expect("the guide has its example")
        + "```yaml\n".len();
    let end = start + guide[start..].find("```").expect("the example ends");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let text = guide[start..end]
        .replace("/srv/shared", &dir.path().display().to_string())
        .replace(
            "/var/log/toolgate/audit.jsonl",
            &dir.path().join("audit.jsonl").display().to_string(),
        );
    let policy = dir.path().join("team.yaml");
    std::fs::write(&policy, text).expect("the policy is written");
    let run = toolgate_e2e::toolgate(&["validate", policy.to_str().expect("UTF-8")]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
}

/// `toolgate explain --as PRINCIPAL`: whether the principal sees the tool under `clients:`, its
/// groups taken from its API keys in the policy, or from `--group` (C4).
#[test]
fn c4_explain_as_a_principal_says_whether_it_sees_the_tool() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = dir.path().join("team.yaml");
    std::fs::write(
        &policy,
        "version: 1\nplugins:\n  - name: testkit\nauth:\n  api_keys:\n    - {principal: carol, groups: [ops], sha256: 9b71d224bd62f3785d96d46ad3ea3d73319bfbc2890caadae2dff72519673ca7}\nclients:\n  - groups: [ops]\n    tools: [echo]\n",
    )
    .expect("the policy is written");
    let policy = policy.to_str().expect("UTF-8");
    let explain = |extra: &[&str]| {
        let mut args = vec!["explain", "--policy", policy, "--json"];
        args.extend_from_slice(extra);
        let run = toolgate_e2e::toolgate(&args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.json()["as"].clone()
    };
    let carol = explain(&["--as", "carol", "echo"]);
    assert_eq!(carol["sees"], true, "{carol}");
    assert_eq!(carol["groups"], serde_json::json!(["ops"]), "{carol}");
    assert_eq!(explain(&["--as", "carol", "fail"])["sees"], false);
    let bob = explain(&["--as", "bob", "echo"]);
    assert_eq!(bob["sees"], false, "{bob}");
    assert_eq!(bob["clients"], serde_json::json!([]), "{bob}");
    assert_eq!(
        explain(&["--as", "bob", "--group", "ops", "echo"])["sees"],
        true
    );
}
