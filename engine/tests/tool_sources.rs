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
fn a_name_taken_by_another_tool_leaves_the_sources_tool_out_naming_both() {
    let engine = Engine::builder(Policy::default())
        .tool(echo("time.now"))
        .tools_from(
            "MCP server time",
            false,
            source_tools(&["time.now", "time.zone"]),
        )
        .build()
        .expect("a source's tool never fails the build");
    assert_eq!(
        engine.registry().get("time.now").unwrap().source(),
        &ToolSource::Native
    );
    assert!(engine.registry().get("time.zone").is_some());
    let left_out: Vec<String> = engine
        .registry()
        .left_out()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(left_out.len(), 1, "{left_out:?}");
    assert!(
        left_out[0].starts_with("MCP server time: tool time.now is left out")
            && left_out[0].contains("already that of time.now (a native tool)"),
        "{left_out:?}"
    );
}

#[test]
fn a_bad_name_from_a_source_leaves_that_tool_out_naming_the_source() {
    let engine = Engine::builder(Policy::default())
        .tools_from(
            "MCP server odd",
            false,
            source_tools(&["odd.get time", "odd.fine"]),
        )
        .build()
        .expect("a source's tool never fails the build");
    assert!(engine.registry().get("odd.fine").is_some());
    let left_out = engine.registry().left_out();
    assert_eq!(left_out.len(), 1, "{left_out:?}");
    assert_eq!(left_out[0].source, "MCP server odd");
    assert!(
        left_out[0].reason.contains("odd.get time")
            && left_out[0].reason.contains("not a valid tool name"),
        "{left_out:?}"
    );
}
