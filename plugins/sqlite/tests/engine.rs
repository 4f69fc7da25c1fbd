//! The sqlite plugin through the whole engine, loaded from a YAML policy as `toolgate` loads it.

mod common;

use common::{database, library};
use toolgate::Engine;
use toolgate::history::ToolCall;

fn engine(granted: &std::path::Path) -> Engine {
    let yaml = format!(
        "version: 1\nplugins:\n  - path: {lib}\n    grants: {{fs_read: [\"{dir}\"]}}\n    config:\n      max_rows: 2\n",
        lib = library().display(),
        dir = granted.display()
    );
    let policy = toolgate_policy::load_str(&yaml, &granted.join("policy.yaml"))
        .unwrap_or_else(|e| panic!("policy loads:\n{e}"));
    Engine::builder(policy)
        .build()
        .expect("the engine loads the sqlite plugin")
}

#[tokio::test]
async fn a_query_through_the_engine_returns_the_rows_within_the_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path(), "shop.db", 5);
    let engine = engine(dir.path());
    let session = engine.session(None).expect("session");
    let args = serde_json::json!({"database": db, "sql": "SELECT id FROM items ORDER BY id"});
    let outcome = engine
        .call(
            &session,
            &ToolCall::new("c1", "sqlite.query", args.to_string()),
        )
        .await;
    assert!(!outcome.is_error(), "{:?}", outcome.error);
    assert_eq!(
        outcome.content.text(),
        r#"{"columns":["id"],"rows":[[1],[2]],"truncated":true}"#
    );
}

#[tokio::test]
async fn a_write_through_the_engine_is_an_error_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path(), "shop.db", 5);
    let engine = engine(dir.path());
    let session = engine.session(None).expect("session");
    let args = serde_json::json!({"database": db, "sql": "DELETE FROM items"});
    let outcome = engine
        .call(
            &session,
            &ToolCall::new("c1", "sqlite.query", args.to_string()),
        )
        .await;
    assert!(outcome.is_error());
    assert!(
        outcome
            .content
            .text()
            .contains("sqlite.query failed: not_read_only: "),
        "{}",
        outcome.content.text()
    );
}

/// What building an engine whose policy gives the plugin entry `extra` lines says, when it fails.
fn load_refusal(extra: &str) -> Option<Vec<String>> {
    let yaml = format!(
        "version: 1\nplugins:\n  - path: {lib}\n{extra}",
        lib = library().display()
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = toolgate_policy::load_str(&yaml, &dir.path().join("policy.yaml"))
        .unwrap_or_else(|e| panic!("policy loads:\n{e}"));
    match Engine::builder(policy).build() {
        Ok(_) => None,
        Err(toolgate::BuildError::Plugin { source, .. }) => match *source {
            toolgate::error::PluginError::NotGranted { plugin, missing } => {
                assert_eq!(plugin, "sqlite");
                Some(missing)
            }
            other => panic!("refused for another reason: {other:?}"),
        },
        Err(other) => panic!("refused for another reason: {other:?}"),
    }
}

#[test]
fn without_grants_the_plugin_is_refused_at_load_as_not_granted() {
    assert_eq!(
        load_refusal(""),
        Some(vec!["fs_read (any granted root)".to_string()])
    );
}

#[test]
fn grants_of_another_kind_only_do_not_let_the_plugin_load() {
    assert_eq!(
        load_refusal("    grants: {net: [example.com]}\n"),
        Some(vec!["fs_read (any granted root)".to_string()])
    );
}

#[test]
fn one_granted_root_lets_the_plugin_load() {
    assert_eq!(load_refusal("    grants: {fs_read: [/srv/data]}\n"), None);
}
