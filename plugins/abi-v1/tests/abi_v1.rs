//! ABI stability: the testkit plugin as it was in the commit that introduced plugin ABI
//! version 1, built against the SDK of that same commit (`sdk/`, kept verbatim by
//! `vendor.sh`), loads and runs in today's host and engine.
//!
//! Only one Rust toolchain is installed where these tests run, so the old SDK is compiled by
//! today's compiler: what this proves is that the ABI did not change meaning while the SDK and
//! the host were rewritten, not that two compilers agree (the C plugin in `plugins/c-abi`
//! covers a second compiler).

use std::path::{Path, PathBuf};
use std::time::Duration;

use host_api::{CancelFlag, LoadedPlugin, Part, PluginOutcome, library_file_name};

fn library() -> PathBuf {
    let file = library_file_name("toolgate_test_abi_v1");
    let exe = std::env::current_exe().expect("the test executable has a path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/");
    [profile.join(&file), profile.join("deps").join(&file)]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{file} is not built in {}", profile.display()))
}

fn load() -> LoadedPlugin {
    // SAFETY: this workspace's own build of the old testkit with the old SDK, which keeps the
    // ABI contract by construction.
    unsafe { LoadedPlugin::load(&library(), &serde_json::Value::Null) }
        .unwrap_or_else(|e| panic!("the ABI v1 plugin loads in today's host: {e}"))
}

fn call(plugin: &LoadedPlugin, tool: &str, args: &str) -> PluginOutcome {
    plugin.call(tool, args, &CancelFlag::new(), &mut |_| {})
}

#[test]
fn the_first_abi_v1_testkit_loads_with_its_manifest() {
    let plugin = load();
    assert_eq!(plugin.name(), "testkit");
    let names: Vec<&str> = plugin.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "echo",
            "sleep",
            "stubborn_sleep",
            "panic",
            "fail",
            "big_output",
            "multimodal",
            "progress"
        ]
    );
}

#[test]
fn its_echo_returns_the_text() {
    assert_eq!(
        call(&load(), "echo", r#"{"text": "héllo"}"#),
        PluginOutcome::Ok(vec![Part::Text("héllo".into())])
    );
}

#[test]
fn its_failure_is_an_error_outcome() {
    assert_eq!(
        call(&load(), "fail", r#"{"message": "no"}"#),
        PluginOutcome::Error("no".into())
    );
}

#[test]
fn its_panic_is_caught_and_reported_as_a_panic() {
    // The old SDK also prints the panic to stderr (the quiet hook came later): expected noise.
    let outcome = call(&load(), "panic", "{}");
    assert!(
        matches!(&outcome, PluginOutcome::Panic(m) if m.contains("deliberate panic")),
        "{outcome:?}"
    );
}

#[test]
fn its_bad_arguments_are_invalid_arguments() {
    let outcome = call(&load(), "echo", r#"{"txt": 1}"#);
    assert!(
        matches!(&outcome, PluginOutcome::InvalidArguments(m) if m.contains("echo")),
        "{outcome:?}"
    );
}

#[test]
fn its_progress_reaches_today_s_host() {
    let mut seen = Vec::new();
    let outcome = load().call(
        "progress",
        r#"{"steps": 2}"#,
        &CancelFlag::new(),
        &mut |m| seen.push(m.to_string()),
    );
    assert_eq!(
        outcome,
        PluginOutcome::Ok(vec![Part::Text("done: 2 steps".into())])
    );
    assert_eq!(seen, ["step 1 of 2", "step 2 of 2"]);
}

#[test]
fn its_sleep_sees_today_s_cancellation_flag() {
    let plugin = load();
    let cancel = CancelFlag::new();
    let canceller = cancel.clone();
    let timer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        canceller.cancel();
    });
    let outcome = plugin.call("sleep", r#"{"ms": 10000}"#, &cancel, &mut |_| {});
    timer.join().expect("timer thread");
    assert_eq!(outcome, PluginOutcome::Error("cancelled".into()));
}

#[test]
fn its_image_part_arrives_as_an_image() {
    let outcome = call(&load(), "multimodal", "{}");
    let PluginOutcome::Ok(parts) = outcome else {
        panic!("expected success, got {outcome:?}");
    };
    assert!(
        matches!(&parts[1], Part::Image { mime_type, .. } if mime_type == "image/png"),
        "{parts:?}"
    );
}

#[tokio::test]
async fn the_engine_runs_a_tool_of_the_abi_v1_plugin() {
    let dir = std::env::temp_dir();
    let yaml = format!("version: 1\nplugins:\n  - path: {}\n", library().display());
    let policy = toolgate_policy::load_str(&yaml, &dir.join("abi-v1.yaml"))
        .unwrap_or_else(|e| panic!("policy loads:\n{e}"));
    let engine = toolgate::Engine::builder(policy)
        .build()
        .expect("the engine loads the ABI v1 plugin");
    let session = engine.session(None).expect("session");
    let call = toolgate::history::ToolCall::new("c1", "echo", r#"{"text":"old"}"#);
    let outcome = engine.call(&session, &call).await;
    assert!(!outcome.is_error(), "{:?}", outcome.error);
    assert_eq!(outcome.content.text(), "old");
}
