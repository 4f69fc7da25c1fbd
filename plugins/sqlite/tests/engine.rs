//! The sqlite plugin through the whole engine, loaded from a YAML policy as `toolgate` loads it.

mod common;

use common::{database, library};
use toolgate::Engine;
use toolgate::history::ToolCall;

fn engine(granted: &std::path::Path) -> Engine {
    let yaml = format!(
        "version: 1\nplugins:\n  - path: {lib}\n    config:\n      grants: {{fs_read: [\"{dir}\"]}}\n      max_rows: 2\n",
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
