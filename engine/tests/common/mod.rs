//! Native tools and helpers shared by the engine's specification tests.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::history::ToolCall;
use toolgate::tool::{FnTool, ToolError, ToolOutput};
use toolgate::{Engine, Outcome, Policy};

/// A policy glob written in a test; the pattern is known to be valid.
pub fn glob(pattern: &str) -> toolgate_policy::glob::Glob {
    toolgate_policy::glob::Glob::new(pattern).expect("a valid glob")
}

pub fn obj(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

/// `echo {text}`: returns the text.
pub fn echo(name: &str) -> impl toolgate::tool::Tool {
    FnTool::new(
        name,
        "Echo the text.",
        obj(json!({"text": {"type": "string"}})),
        |_ctx, args: Value| async move {
            Ok(ToolOutput::text(
                args["text"].as_str().unwrap_or("").to_string(),
            ))
        },
    )
}

pub fn script(code: &str) -> toolgate_policy::ScriptSource {
    toolgate_policy::ScriptSource {
        code: code.to_string(),
        file: "inline.rhai".into(),
        line_offset: 1,
        column_offset: 0,
    }
}

/// `show_args {..}`: returns its arguments as JSON text.
pub fn show_args(name: &str) -> impl toolgate::tool::Tool {
    FnTool::new(
        name,
        "Show the arguments.",
        obj(json!({"path": {"type": "string"}})),
        |_ctx, args: Value| async move { Ok(ToolOutput::text(args.to_string())) },
    )
}

/// `sleep {ms}`: sleeps; honours cancellation because its future is dropped.
pub fn sleeper(name: &str) -> impl toolgate::tool::Tool {
    FnTool::new(
        name,
        "Sleep.",
        obj(json!({"ms": {"type": "integer"}})),
        |_ctx, args: Value| async move {
            let ms = args["ms"].as_u64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(ToolOutput::text(format!("slept {ms}ms")))
        },
    )
}

/// `fail {message}`.
pub fn failer(name: &str) -> impl toolgate::tool::Tool {
    FnTool::new(
        name,
        "Fail.",
        obj(json!({"message": {"type": "string"}})),
        |_ctx, args: Value| async move {
            Err(ToolError::new(
                args["message"].as_str().unwrap_or("failed").to_string(),
            ))
        },
    )
}

/// `panic {}`.
pub fn panicker(name: &str) -> impl toolgate::tool::Tool {
    FnTool::new(
        name,
        "Panic.",
        obj(json!({})),
        |_ctx, _args: Value| async move {
            if true {
                panic!("the tool exploded");
            }
            Ok(ToolOutput::text("unreachable"))
        },
    )
}

/// `text {n}`: returns `n` copies of `é`.
pub fn texter(name: &str) -> impl toolgate::tool::Tool {
    FnTool::new(
        name,
        "Text.",
        obj(json!({"n": {"type": "integer"}})),
        |_ctx, args: Value| async move {
            Ok(ToolOutput::text(
                "é".repeat(args["n"].as_u64().unwrap_or(0) as usize),
            ))
        },
    )
}

/// A tool that counts its runs.
pub fn counter(name: &str, runs: Arc<AtomicUsize>) -> impl toolgate::tool::Tool {
    FnTool::new(name, "Count.", obj(json!({})), move |_ctx, _args: Value| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput::text("counted"))
        }
    })
}

/// A tool that sets `dropped` when its future is dropped before finishing, and `cancelled`
/// when it saw its token fire.
pub fn observer(
    name: &str,
    dropped: Arc<AtomicBool>,
    cancelled: Arc<AtomicBool>,
) -> impl toolgate::tool::Tool {
    FnTool::new(
        name,
        "Observe cancellation.",
        obj(json!({})),
        move |ctx, _args: Value| {
            let dropped = dropped.clone();
            let cancelled = cancelled.clone();
            async move {
                struct OnDrop(Arc<AtomicBool>, bool);
                impl Drop for OnDrop {
                    fn drop(&mut self) {
                        if !self.1 {
                            self.0.store(true, Ordering::SeqCst);
                        }
                    }
                }
                let mut guard = OnDrop(dropped, false);
                let token = ctx.cancel.clone();
                let watcher = cancelled.clone();
                tokio::spawn(async move {
                    token.cancelled().await;
                    watcher.store(true, Ordering::SeqCst);
                });
                tokio::time::sleep(Duration::from_secs(30)).await;
                guard.1 = true;
                Ok(ToolOutput::text("finished"))
            }
        },
    )
}

/// Runs `attempt` until `done` holds for its answer, or a minute has passed, and returns the
/// last answer. Only for a state that no event announces (a plugin thread that has returned
/// frees its thread permit and its group's lock on that thread): it looks every 10 ms.
pub async fn poll<T, F: std::future::Future<Output = T>>(
    mut attempt: impl FnMut() -> F,
    done: impl Fn(&T) -> bool,
) -> T {
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let answer = attempt().await;
        if done(&answer) || std::time::Instant::now() >= give_up {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

pub fn raw_call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall::new(id, name, args)
}

pub async fn one(engine: &Engine, name: &str, args: Value) -> Outcome {
    let session = engine.session(None).expect("session");
    engine.call(&session, &call("c1", name, args)).await
}

pub fn policy_with(f: impl FnOnce(&mut Policy)) -> Policy {
    let mut p = Policy::default();
    f(&mut p);
    p
}

/// Loads a policy from YAML text; relative files resolve against `dir`.
pub fn yaml_policy(text: &str, dir: &std::path::Path) -> Policy {
    toolgate_policy::load_str(text, &dir.join("policy.yaml"))
        .unwrap_or_else(|e| panic!("test policy does not load:\n{e}"))
}

/// The directory of the built workspace artefacts (target/debug or target/release).
pub fn target_dir() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("deps dir");
    deps.parent().expect("profile dir").to_path_buf()
}

/// The settings (`TOOLGATE_TEST_S3_*`) of the S3 test server of `scripts/s3-server.sh`: the
/// environment's when `scripts/test.sh` started it. Otherwise, under `scripts/test.sh`
/// (`TOOLGATE_TEST_SUITE` set) or on CI, the test fails with the script to run, since a green
/// run must not hide that the S3 backend went untested; run alone, the test starts the server
/// through the script, which leaves it running (`bash scripts/s3-server.sh stop`).
pub fn s3_server() -> std::collections::BTreeMap<String, String> {
    static SETTINGS: std::sync::OnceLock<std::collections::BTreeMap<String, String>> =
        std::sync::OnceLock::new();
    SETTINGS
        .get_or_init(|| {
            if std::env::var_os("TOOLGATE_TEST_S3_ENDPOINT").is_some() {
                return std::env::vars()
                    .filter(|(name, _)| name.starts_with("TOOLGATE_TEST_S3_"))
                    .collect();
            }
            assert!(
                std::env::var_os("TOOLGATE_TEST_SUITE").is_none()
                    && std::env::var_os("CI").is_none(),
                "TOOLGATE_TEST_S3_ENDPOINT is unset: the S3 test server is not running. Start it \
                 with `eval \"$(bash scripts/s3-server.sh start)\"` (scripts/test.sh does)"
            );
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .expect("the crate is one level below the repository root");
            let out = std::process::Command::new("bash")
                .arg(root.join("scripts/s3-server.sh"))
                .arg("start")
                .current_dir(root)
                .stderr(std::process::Stdio::inherit())
                .output()
                .expect("bash runs scripts/s3-server.sh");
            assert!(
                out.status.success(),
                "`bash scripts/s3-server.sh start` failed ({}): see its messages above",
                out.status
            );
            let settings: std::collections::BTreeMap<String, String> =
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter_map(|line| {
                        let (name, value) = line.strip_prefix("export ")?.split_once('=')?;
                        Some((name.to_owned(), value.to_owned()))
                    })
                    .collect();
            assert!(
                settings.contains_key("TOOLGATE_TEST_S3_ENDPOINT"),
                "`bash scripts/s3-server.sh start` printed no settings: {settings:?}"
            );
            eprintln!(
                "started the S3 test server of scripts/s3-server.sh; it keeps running \
                 (`bash scripts/s3-server.sh stop`)"
            );
            settings
        })
        .clone()
}
