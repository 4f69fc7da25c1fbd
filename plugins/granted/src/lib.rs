//! `granted`: a test plugin that declares capabilities, so that a host must grant them before it
//! loads, and whose tools show what it was given.
//!
//! It asks for: reading [`READ_ROOT`], the variable [`SECRET_VAR`], the host [`NET_HOST`].
//!
//! Its `init` writes the file named by the configuration's `init_marker`, when there is one.
//!
//! | tool | arguments | behaviour |
//! |---|---|---|
//! | `config` | `{}` | returns the configuration it was started with, as JSON text |
//! | `env` | `{name}` | returns the variable's value, or `(unset)` |
//! | `read` | `{path}` | returns the file's text, or fails with the system's error |

use serde::Deserialize;
use toolgate_plugin_api::serde_json::Value;
use toolgate_plugin_api::{CallContext, Capabilities, NoArgs, Tool, ToolError, ToolOutput, json};

/// The directory it asks to read.
pub const READ_ROOT: &str = "/etc";
/// The environment variable it asks for.
pub const SECRET_VAR: &str = "TOOLGATE_TEST_SECRET";
/// The host it asks to reach.
pub const NET_HOST: &str = "example.com:443";

fn capabilities() -> Capabilities {
    Capabilities {
        fs_read: vec![READ_ROOT.to_string()],
        env: vec![SECRET_VAR.to_string()],
        net: vec![NET_HOST.to_string()],
        ..Capabilities::default()
    }
}

/// Writes the file named by the configuration's `init_marker`, if any, so a test can tell
/// whether `init` ran.
fn init(config: Value) -> Result<Value, String> {
    if let Some(marker) = config.get("init_marker").and_then(Value::as_str) {
        std::fs::write(marker, "init ran\n")
            .map_err(|err| format!("cannot write the init marker {marker}: {err}"))?;
    }
    Ok(config)
}

fn config(ctx: &CallContext<Value>, _args: NoArgs) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(ctx.state().to_string()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvArgs {
    name: String,
}

fn env(_ctx: &CallContext<Value>, args: EnvArgs) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(
        std::env::var(&args.name).unwrap_or_else(|_| "(unset)".to_string()),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
}

fn read(_ctx: &CallContext<Value>, args: ReadArgs) -> Result<ToolOutput, ToolError> {
    std::fs::read_to_string(&args.path)
        .map(ToolOutput::text)
        .map_err(|err| ToolError::new(format!("cannot read {}: {err}", args.path)))
}

toolgate_plugin_api::export_plugin! {
    name: "granted",
    version: env!("CARGO_PKG_VERSION"),
    capabilities: capabilities(),
    init: init,
    tools: [
        Tool::new("config", config)
            .description("Return the configuration this plugin was started with.")
            .parameters(json!({"type": "object", "properties": {}, "additionalProperties": false})),
        Tool::new("env", env)
            .description("Return an environment variable's value, or (unset).")
            .parameters(json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
                "additionalProperties": false
            })),
        Tool::new("read", read)
            .description("Return a file's text.")
            .parameters(json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": false
            })),
    ],
}
