//! The template plugin through the toolgate engine, from a YAML policy as `toolgate` reads it.
//! This test runs inside the toolgate repository only (it needs the engine's source);
//! `cargo generate` leaves it out of a new plugin.

use std::path::Path;

use toolgate::Engine;
use toolgate::history::ToolCall;

fn library() -> std::path::PathBuf {
    let file = toolgate_plugin_api::library_file_name("toolgate_plugin_template");
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

#[tokio::test]
async fn the_engine_loads_the_template_and_runs_its_tool() {
    let yaml = format!(
        "version: 1\nplugins:\n  - path: {}\n    config: {{max_chars: 50}}\n",
        library().display()
    );
    let policy = toolgate_policy::load_str(&yaml, &std::env::temp_dir().join("template.yaml"))
        .unwrap_or_else(|e| panic!("policy loads:\n{e}"));
    let engine = Engine::builder(policy)
        .build()
        .expect("the engine loads the template");
    let session = engine.session(None).expect("session");
    let call = ToolCall::new("c1", "template.word_count", r#"{"text": "one two three"}"#);
    let outcome = engine.call(&session, &call).await;
    assert!(!outcome.is_error(), "{:?}", outcome.error);
    assert_eq!(outcome.content.text(), "3 words");
}
