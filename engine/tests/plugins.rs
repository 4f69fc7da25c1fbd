//! Plugin tools through the whole engine, with the real `testkit` plugin (built by
//! `cargo build --workspace`), and every way loading a plugin can go wrong.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use toolgate::events::EventKind;
use toolgate::{BuildError, Content, Engine, Policy};
use toolgate_policy::{PluginLocation, PluginSpec};

fn lib(name: &str) -> std::path::PathBuf {
    let path = target_dir().join(toolgate_plugin_api::library_file_name(name));
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace` first",
        path.display()
    );
    path
}

fn plugin_policy(location: PluginLocation, f: impl FnOnce(&mut Policy)) -> Policy {
    policy_with(|p| {
        p.plugins.push(PluginSpec::new(location));
        f(p)
    })
}

fn testkit(f: impl FnOnce(&mut Policy)) -> Engine {
    lib("toolgate_plugin_testkit");
    Engine::builder(plugin_policy(PluginLocation::Name("testkit".into()), f))
        .build()
        .expect("testkit loads")
}

fn build_error(location: PluginLocation) -> String {
    match Engine::builder(plugin_policy(location, |_| {})).build() {
        Ok(_) => panic!("the build should fail"),
        Err(e) => {
            assert!(matches!(e, BuildError::Plugin { .. }), "{e:?}");
            // The message names the plugin; its source says why.
            toolgate::error::Chain(&e).to_string()
        }
    }
}

#[tokio::test]
async fn plugin_tools_are_registered_by_name_from_the_plugin() {
    let engine = testkit(|_| {});
    let s = engine.session(None).unwrap();
    let mut names: Vec<String> = engine
        .visible_tools(&s)
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "big_output",
            "connect",
            "crash",
            "echo",
            "escape",
            "fail",
            "forge_frame",
            "huge_output",
            "multimodal",
            "panic",
            "progress",
            "sleep",
            "stream",
            "stubborn_sleep"
        ]
    );
}

#[tokio::test]
async fn plugin_echo_returns_its_text() {
    let engine = testkit(|_| {});
    assert_eq!(
        one(&engine, "echo", json!({"text": "héllo"}))
            .await
            .content
            .text(),
        "héllo"
    );
}

#[tokio::test]
async fn plugin_panic_becomes_tool_execution_panic_and_the_host_survives() {
    let engine = testkit(|_| {});
    let o = one(&engine, "panic", json!({})).await;
    assert_eq!(o.error_kind(), Some("tool_execution_panic"));
    assert_eq!(
        one(&engine, "echo", json!({"text": "still here"}))
            .await
            .content
            .text(),
        "still here"
    );
}

#[tokio::test]
async fn plugin_failure_becomes_tool_error() {
    let engine = testkit(|_| {});
    let o = one(&engine, "fail", json!({"message": "no disk"})).await;
    assert_eq!(o.error_kind(), Some("tool_error"));
    assert!(o.content.text().contains("no disk"));
}

#[tokio::test]
async fn plugin_arguments_of_the_wrong_shape_are_invalid_arguments() {
    let engine = testkit(|_| {});
    let o = one(&engine, "sleep", json!({"ms": "long"})).await;
    assert_eq!(o.error_kind(), Some("invalid_arguments"));
}

#[tokio::test]
async fn g2_plugin_sleep_is_cancelled_at_the_deadline() {
    let engine = testkit(|p| p.dispatch.timeout = Some(Duration::from_millis(100)));
    // Ten minutes of sleep: a turn that waited for it would run into the guard.
    let o = one(&engine, "sleep", json!({"ms": 600_000}));
    let o = tokio::time::timeout(Duration::from_secs(60), o)
        .await
        .expect("the turn ends at the deadline");
    assert_eq!(o.error_kind(), Some("timeout"));
}

#[tokio::test]
async fn g2_a_plugin_that_ignores_cancellation_does_not_hold_the_turn() {
    let engine = testkit(|p| p.dispatch.timeout = Some(Duration::from_millis(100)));
    let s = engine.session(None).unwrap();
    // The stubborn call runs until the test closes this listener (or for a minute).
    let release = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let until_closed = release.local_addr().unwrap().to_string();
    let calls = [
        call(
            "1",
            "stubborn_sleep",
            json!({"ms": 60_000, "until_closed": until_closed}),
        ),
        call("2", "echo", json!({"text": "x"})),
    ];
    // The turn ends while the stubborn call still runs: at the deadline.
    let out = tokio::time::timeout(Duration::from_secs(30), engine.dispatch(&s, &calls))
        .await
        .expect("the turn ends at the deadline, before the stubborn call")
        .unwrap();
    assert_eq!(out[0].error_kind(), Some("timeout"));
    assert_eq!(out[1].content.text(), "x");
    drop(release);
}

#[tokio::test]
async fn g3_plugin_big_output_is_capped_by_characters() {
    let engine = testkit(|_| {});
    let o = one(&engine, "big_output", json!({"bytes": 150_000})).await;
    assert_eq!((o.output_chars, o.truncated), (100_000, true));
}

#[tokio::test]
async fn g4_plugin_multimodal_output_keeps_its_parts_in_order() {
    let engine = testkit(|_| {});
    let o = one(&engine, "multimodal", json!({})).await;
    match &o.content {
        Content::Parts(parts) => {
            let kinds: Vec<&str> = parts
                .iter()
                .map(|p| match p {
                    toolgate::tool::ContentPart::Text { .. } => "text",
                    toolgate::tool::ContentPart::Image { .. } => "image",
                    other => panic!("a plugin part is text or an image: {other:?}"),
                })
                .collect();
            assert_eq!(kinds, ["text", "image", "text"]);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn e1_plugin_progress_becomes_update_events() {
    let engine = testkit(|_| {});
    let mut rx = engine.subscribe();
    one(&engine, "progress", json!({"steps": 3})).await;
    let updates = std::iter::from_fn(|| rx.try_recv().ok())
        .filter(|e| matches!(e.kind, EventKind::Update { .. }))
        .count();
    assert_eq!(updates, 3);
}

#[tokio::test]
async fn n2_a_plugin_tool_and_a_native_tool_with_the_same_name_fail_naming_both() {
    lib("toolgate_plugin_testkit");
    let e = Engine::builder(plugin_policy(
        PluginLocation::Name("testkit".into()),
        |_| {},
    ))
    .tool(echo("echo"))
    .build()
    .expect_err("duplicate");
    let text = e.to_string();
    assert!(
        text.contains("a native tool") && text.contains("plugin testkit"),
        "{text}"
    );
}

#[test]
fn a_missing_plugin_file_is_a_clear_build_error() {
    let e = build_error(PluginLocation::Path("/nonexistent/libnothing.so".into()));
    assert!(e.contains("/nonexistent/libnothing.so"), "{e}");
}

#[test]
fn an_unknown_plugin_name_says_where_it_looked() {
    let e = build_error(PluginLocation::Name("nosuchplugin".into()));
    assert!(
        e.contains(&format!(
            "plugin \"nosuchplugin\" not found: no file {} in ",
            toolgate_plugin_api::library_file_name("toolgate_plugin_nosuchplugin")
        )),
        "{e}"
    );
    assert!(e.contains("TOOLGATE_PLUGIN_PATH"), "{e}");
}

#[test]
fn an_unknown_plugin_name_suggests_no_crate_that_does_not_exist() {
    let e = build_error(PluginLocation::Name("nosuchplugin".into()));
    assert!(!e.contains("cargo build"), "{e}");
    assert!(!e.contains("toolgate-plugin-nosuchplugin"), "{e}");
}

#[test]
fn a_misspelt_plugin_name_suggests_the_installed_plugin_named_most_like_it() {
    let e = build_error(PluginLocation::Name("testkt".into()));
    let testkit = lib("toolgate_plugin_testkit");
    assert!(e.contains("did you mean `name: testkit` ("), "{e}");
    assert!(
        e.contains(
            testkit
                .file_name()
                .and_then(|f| f.to_str())
                .expect("a file name")
        ),
        "{e}"
    );
}

#[test]
fn a_library_that_is_not_a_toolgate_plugin_is_refused() {
    let e = build_error(PluginLocation::Path(lib("toolgate_test_not_a_plugin")));
    assert!(e.contains("is not a toolgate plugin"), "{e}");
}

#[test]
fn a_plugin_built_for_another_abi_version_is_refused() {
    let e = build_error(PluginLocation::Path(lib("toolgate_test_broken_abi")));
    assert!(e.contains("ABI 999"), "{e}");
}

#[test]
fn a_file_that_is_not_a_library_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("libfake.so");
    std::fs::write(&fake, "not a library").unwrap();
    let e = build_error(PluginLocation::Path(fake));
    assert!(e.contains("libfake.so"), "{e}");
}

#[tokio::test]
async fn g5_a_streaming_plugin_tool_gives_its_chunks_then_its_result() {
    let engine = testkit(|_| {});
    let o = one(&engine, "stream", json!({"count": 3})).await;
    assert!(o.error.is_none(), "{:?}", o.error);
    assert_eq!(
        o.content.text(),
        "chunk 1\nchunk 2\nchunk 3\nstreamed 3 chunks"
    );
}

#[tokio::test]
async fn g5_a_plugin_stream_is_cut_at_the_cap_and_the_plugin_stopped() {
    // One thread: the next call finds it free only if the stream's call really stopped.
    let engine = testkit(|p| {
        p.dispatch.max_result_chars = toolgate_policy::CharCap::Chars(40);
        p.plugins[0].max_threads = 1;
        // No queue: a call that finds the thread taken says so at once.
        p.plugins[0].max_queued = 0;
    });
    // A million chunks, 1 ms apart: uncut, the call would run for a quarter of an hour.
    let o = one(
        &engine,
        "stream",
        json!({"count": 1_000_000, "delay_ms": 1}),
    );
    // Half the default timeout of a minute: an uncut stream fails here, not by timing out.
    let o = tokio::time::timeout(Duration::from_secs(30), o)
        .await
        .expect("the stream is cut at the cap");
    assert!(o.truncated, "{o:?}");
    assert_eq!(o.output_chars, 40);
    let next = poll(
        || one(&engine, "echo", json!({"text": "x"})),
        |next| next.error_kind() != Some("overloaded"),
    )
    .await;
    assert!(
        next.error.is_none(),
        "the stream's plugin call stopped: {next:?}"
    );
}
