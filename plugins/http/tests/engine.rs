//! The http plugin through the whole engine, loaded from a YAML policy as `toolgate` loads it.

mod common;

use common::{library, serve};
use toolgate::Engine;
use toolgate::history::ToolCall;

fn engine(port: u16) -> Engine {
    let yaml = format!(
        "version: 1\nplugins:\n  - path: {lib}\n    grants: {{net: [\"127.0.0.1:{port}\"]}}\n    config:\n      timeout_ms: 2000\n",
        lib = library().display()
    );
    let dir = std::env::temp_dir();
    let policy = toolgate_policy::load_str(&yaml, &dir.join("http-policy.yaml"))
        .unwrap_or_else(|e| panic!("policy loads:\n{e}"));
    Engine::builder(policy)
        .build()
        .expect("the engine loads the http plugin")
}

#[tokio::test]
async fn a_granted_get_through_the_engine_is_a_tool_result_with_the_body() {
    let port = serve();
    let engine = engine(port);
    let session = engine.session(None).expect("session");
    let args = serde_json::json!({"url": format!("http://127.0.0.1:{port}/hello")});
    let outcome = engine
        .call(&session, &ToolCall::new("c1", "http.get", args.to_string()))
        .await;
    assert!(!outcome.is_error(), "{:?}", outcome.error);
    assert!(
        outcome
            .content
            .text()
            .ends_with("hello from the test server"),
        "{}",
        outcome.content.text()
    );
}

#[tokio::test]
async fn a_host_not_granted_through_the_engine_is_an_error_result() {
    let port = serve();
    let engine = engine(port);
    let session = engine.session(None).expect("session");
    let args = serde_json::json!({"url": "http://192.0.2.1/"});
    let outcome = engine
        .call(&session, &ToolCall::new("c1", "http.get", args.to_string()))
        .await;
    assert!(outcome.is_error());
    assert!(
        outcome
            .content
            .text()
            .contains("not_granted: host 192.0.2.1:80 is not granted"),
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
    let policy = toolgate_policy::load_str(&yaml, &std::env::temp_dir().join("http-policy.yaml"))
        .unwrap_or_else(|e| panic!("policy loads:\n{e}"));
    match Engine::builder(policy).build() {
        Ok(_) => None,
        Err(toolgate::BuildError::Plugin { source, .. }) => match *source {
            toolgate::error::PluginError::NotGranted { plugin, missing } => {
                assert_eq!(plugin, "http");
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
        Some(vec!["net (any granted host)".to_string()])
    );
}

#[test]
fn grants_of_another_kind_only_do_not_let_the_plugin_load() {
    assert_eq!(
        load_refusal("    grants: {fs_read: [\"/srv\"]}\n"),
        Some(vec!["net (any granted host)".to_string()])
    );
}

#[test]
fn one_granted_host_lets_the_plugin_load() {
    assert_eq!(load_refusal("    grants: {net: [\"127.0.0.1:9\"]}\n"), None);
}
