//! Tools a host program brings from a named source (`EngineBuilder::tools_from`), such as the
//! tools of an upstream MCP server: checked like every tool, named by their source, searchable
//! or not.

mod common;

use std::sync::Arc;

use common::*;
use serde_json::json;
use toolgate::registry::ToolSource;
use toolgate::tool::Tool;
use toolgate::{Engine, Policy};
use toolgate_policy::SearchSettings;

fn source_tools(names: &[&str]) -> Vec<Arc<dyn Tool>> {
    names
        .iter()
        .map(|n| Arc::new(echo(n)) as Arc<dyn Tool>)
        .collect()
}

#[test]
fn tools_from_a_source_are_registered_under_its_name() {
    let engine = Engine::builder(Policy::default())
        .tools_from(
            "MCP server time",
            false,
            source_tools(&["time.now", "time.convert"]),
        )
        .build()
        .unwrap();
    let entry = engine.registry().get("time.now").expect("registered");
    assert_eq!(
        entry.source(),
        &ToolSource::External {
            name: "MCP server time".into()
        }
    );
    assert_eq!(entry.source().to_string(), "MCP server time");
    assert!(!entry.is_searchable());
}

#[tokio::test]
async fn tools_from_a_source_run_through_the_guard() {
    let engine = Engine::builder(policy_with(|p| {
        p.rules.deny.push(toolgate_policy::Rule {
            tools: vec![toolgate_policy::glob::Glob::new("time.*").unwrap()],
            reason: Some("no time today".into()),
            ..Default::default()
        })
    }))
    .tools_from("MCP server time", false, source_tools(&["time.now"]))
    .build()
    .unwrap();
    let session = engine.session(None).unwrap();
    let outcome = engine
        .call(&session, &call("c1", "time.now", json!({"text": "x"})))
        .await;
    assert_eq!(outcome.error.as_ref().map(|e| e.kind()), Some("denied"));
}

#[test]
fn a_searchable_source_is_hidden_until_found() {
    let engine = Engine::builder(Policy {
        search: Some(SearchSettings::default()),
        ..Default::default()
    })
    .tool(echo("echo"))
    .tools_from(
        "MCP server big",
        true,
        source_tools(&["big.one", "big.two"]),
    )
    .build()
    .unwrap();
    let session = engine.session(Some("s")).unwrap();
    let mut visible: Vec<String> = engine
        .visible_tools(&session)
        .into_iter()
        .map(|t| t.name)
        .collect();
    visible.sort();
    assert_eq!(visible, ["echo", "tool_search"]);
    assert!(engine.registry().get("big.one").unwrap().is_searchable());
}

#[test]
fn a_name_taken_by_another_source_fails_naming_both() {
    let err = Engine::builder(Policy::default())
        .tool(echo("time.now"))
        .tools_from("MCP server time", false, source_tools(&["time.now"]))
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("provided by a native tool and by MCP server time"),
        "{err}"
    );
}

#[test]
fn a_bad_name_from_a_source_fails_naming_the_source() {
    let err = Engine::builder(Policy::default())
        .tools_from("MCP server odd", false, source_tools(&["odd.get time"]))
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("invalid tool name \"odd.get time\""), "{err}");
    assert!(err.contains("MCP server odd"), "{err}");
}
