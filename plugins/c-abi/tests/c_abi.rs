//! A plugin written in C, compiled here by the system C compiler against
//! `include/toolgate_plugin.h`, loads and runs in the current engine; and the header's layout is
//! the Rust ABI's layout.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::json;
use toolgate_plugin_api::abi::{
    self, CallContext, OwnedBuf, PluginVTable, StrRef, StreamContext, VTableHeader,
};
use toolgate_plugin_api::{CancelFlag, LoadedPlugin, Part, PluginOutcome};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The C compiler: `$CC`, or `cc`.
fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// Runs the C compiler with `args` (the include folder and strict warnings added).
fn compile(args: &[&str]) {
    let include = crate_dir().join("include");
    let output = Command::new(compiler())
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(&include)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("these tests compile C with `{}` ($CC): {e}", compiler()));
    assert!(
        output.status.success(),
        "the C compiler failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A folder that lives as long as the test process.
fn build_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("tempdir"))
        .path()
}

/// `c/plugin.c`, compiled once into a shared library.
fn c_library() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let out = build_dir().join(toolgate_plugin_api::library_file_name("toolgate_plugin_c"));
        let source = crate_dir().join("c/plugin.c");
        compile(&[
            "-shared",
            "-fPIC",
            "-o",
            out.to_str().expect("UTF-8 temp path"),
            source.to_str().expect("UTF-8 source path"),
        ]);
        out
    })
}

fn load(config: serde_json::Value) -> LoadedPlugin {
    // SAFETY: c/plugin.c, compiled just now: its entry returns a static table that keeps the
    // ABI contract (it allocates and frees its own buffers, never unwinds, is thread-safe as it
    // shares nothing mutable).
    unsafe { LoadedPlugin::load(c_library(), &config) }.unwrap_or_else(|e| panic!("loads: {e}"))
}

fn call(plugin: &LoadedPlugin, tool: &str, args: &str) -> PluginOutcome {
    plugin.call(tool, args, &CancelFlag::new(), &mut |_| {})
}

fn text(outcome: PluginOutcome) -> String {
    match outcome {
        PluginOutcome::Ok(parts) => match parts.as_slice() {
            [Part::Text(text)] => text.clone(),
            other => panic!("expected one text part, got {other:?}"),
        },
        other => panic!("expected success, got {other:?}"),
    }
}

/// What `c/layout.c` prints: `kind name value` lines.
fn c_layout() -> Vec<(String, String)> {
    let exe = build_dir().join("layout");
    let source = crate_dir().join("c/layout.c");
    compile(&[
        "-o",
        exe.to_str().expect("UTF-8 temp path"),
        source.to_str().expect("UTF-8 source path"),
    ]);
    let output = Command::new(&exe).output().expect("run the layout program");
    assert!(output.status.success());
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .lines()
        .map(|line| {
            let (key, value) = line.rsplit_once(' ').expect("`kind name value`");
            (key.to_string(), value.to_string())
        })
        .collect()
}

#[test]
fn the_c_header_lays_out_every_abi_type_as_rust_does() {
    use std::mem::{offset_of, size_of};
    let rust: Vec<(String, String)> = [
        ("size ToolgateStrRef", size_of::<StrRef>()),
        ("offset ToolgateStrRef.ptr", offset_of!(StrRef, ptr)),
        ("offset ToolgateStrRef.len", offset_of!(StrRef, len)),
        ("size ToolgateOwnedBuf", size_of::<OwnedBuf>()),
        ("offset ToolgateOwnedBuf.ptr", offset_of!(OwnedBuf, ptr)),
        ("offset ToolgateOwnedBuf.len", offset_of!(OwnedBuf, len)),
        ("size ToolgateCallContext", size_of::<CallContext>()),
        (
            "offset ToolgateCallContext.cancel_flag",
            offset_of!(CallContext, cancel_flag),
        ),
        (
            "offset ToolgateCallContext.progress",
            offset_of!(CallContext, progress),
        ),
        (
            "offset ToolgateCallContext.progress_context",
            offset_of!(CallContext, progress_context),
        ),
        ("size ToolgateVTableHeader", size_of::<VTableHeader>()),
        (
            "offset ToolgateVTableHeader.abi_version",
            offset_of!(VTableHeader, abi_version),
        ),
        (
            "offset ToolgateVTableHeader.struct_size",
            offset_of!(VTableHeader, struct_size),
        ),
        ("size ToolgatePluginVTable", size_of::<PluginVTable>()),
        (
            "offset ToolgatePluginVTable.header",
            offset_of!(PluginVTable, header),
        ),
        (
            "offset ToolgatePluginVTable.manifest",
            offset_of!(PluginVTable, manifest),
        ),
        (
            "offset ToolgatePluginVTable.init",
            offset_of!(PluginVTable, init),
        ),
        (
            "offset ToolgatePluginVTable.call",
            offset_of!(PluginVTable, call),
        ),
        (
            "offset ToolgatePluginVTable.destroy",
            offset_of!(PluginVTable, destroy),
        ),
        (
            "offset ToolgatePluginVTable.free_buf",
            offset_of!(PluginVTable, free_buf),
        ),
        (
            "offset ToolgatePluginVTable.call_streaming",
            offset_of!(PluginVTable, call_streaming),
        ),
        ("size ToolgateStreamContext", size_of::<StreamContext>()),
        (
            "offset ToolgateStreamContext.call",
            offset_of!(StreamContext, call),
        ),
        (
            "offset ToolgateStreamContext.chunk",
            offset_of!(StreamContext, chunk),
        ),
        (
            "offset ToolgateStreamContext.chunk_context",
            offset_of!(StreamContext, chunk_context),
        ),
        (
            "value TOOLGATE_CHUNK_CONTINUE",
            abi::CHUNK_CONTINUE as usize,
        ),
        ("value TOOLGATE_CHUNK_STOP", abi::CHUNK_STOP as usize),
        ("value TOOLGATE_ABI_VERSION", abi::ABI_VERSION as usize),
        ("value TOOLGATE_STATUS_OK", abi::STATUS_OK as usize),
        ("value TOOLGATE_STATUS_ERROR", abi::STATUS_ERROR as usize),
        ("value TOOLGATE_STATUS_PANIC", abi::STATUS_PANIC as usize),
        (
            "value TOOLGATE_STATUS_INVALID_ARGUMENTS",
            abi::STATUS_INVALID_ARGUMENTS as usize,
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain([(
        "name TOOLGATE_ENTRY_SYMBOL".to_string(),
        abi::ENTRY_SYMBOL.to_string(),
    )])
    .collect();
    assert_eq!(c_layout(), rust);
}

#[test]
fn a_plugin_written_in_c_loads_with_its_manifest() {
    let plugin = load(json!(null));
    assert_eq!(plugin.name(), "c-abi");
    assert_eq!(plugin.version(), "1.0.0");
    let names: Vec<&str> = plugin.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["c.echo", "c.fail", "c.progress", "c.cancelled", "c.config"]
    );
}

#[test]
fn a_c_tool_returns_a_text_part_escaped_as_json() {
    let plugin = load(json!(null));
    let args = r#"{"text": "a \"quoted\" word\n"}"#;
    assert_eq!(text(call(&plugin, "c.echo", args)), args);
}

#[test]
fn a_c_tool_failure_is_an_error_outcome() {
    let plugin = load(json!(null));
    assert_eq!(
        call(&plugin, "c.fail", "{}"),
        PluginOutcome::Error("deliberate failure from C".to_string())
    );
}

#[test]
fn the_configuration_reaches_the_c_init() {
    let plugin = load(json!({"grants": {"net": ["localhost"]}}));
    let config: serde_json::Value =
        serde_json::from_str(&text(call(&plugin, "c.config", "{}"))).expect("JSON");
    assert_eq!(config, json!({"grants": {"net": ["localhost"]}}));
}

#[test]
fn a_c_tool_reports_progress_through_the_host_callback() {
    let plugin = load(json!(null));
    let mut seen = Vec::new();
    let outcome = plugin.call("c.progress", "{}", &CancelFlag::new(), &mut |m| {
        seen.push(m.to_string())
    });
    assert_eq!(text(outcome), "done");
    assert_eq!(seen, ["half way"]);
}

#[test]
fn a_c_tool_reads_the_host_cancellation_flag() {
    let plugin = load(json!(null));
    assert_eq!(text(call(&plugin, "c.cancelled", "{}")), "cancelled: no");
    let cancel = CancelFlag::new();
    cancel.cancel();
    let outcome = plugin.call("c.cancelled", "{}", &cancel, &mut |_| {});
    assert_eq!(text(outcome), "cancelled: yes");
}

#[tokio::test]
async fn the_engine_runs_a_tool_of_the_c_plugin() {
    let yaml = format!(
        "version: 1\nplugins:\n  - path: {}\n",
        c_library().display()
    );
    let policy = toolgate_policy::load_str(&yaml, &build_dir().join("policy.yaml"))
        .unwrap_or_else(|e| panic!("policy loads:\n{e}"));
    let engine = toolgate::Engine::builder(policy)
        .build()
        .expect("the engine loads the C plugin");
    let session = engine.session(None).expect("session");
    let call = toolgate::history::ToolCall::new("c1", "c.echo", r#"{"x":1}"#);
    let outcome = engine.call(&session, &call).await;
    assert!(!outcome.is_error(), "{:?}", outcome.error);
    assert_eq!(outcome.content.text(), r#"{"x":1}"#);
}
