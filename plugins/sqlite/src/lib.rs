//! `sqlite`: a toolgate plugin that lets an agent run read-only SQL queries on the SQLite
//! database files the policy grants, and nothing else.
//!
//! # Configuration
//!
//! ```yaml
//! plugins:
//!   - name: sqlite
//!     grants: {fs_read: ["/srv/data/shop.db", "/srv/reports"]}
//!     config:
//!       max_rows: 500      # optional, default 500
//!       timeout_ms: 5000   # optional, default 5000
//!       max_result_bytes: 1048576  # optional, default 1 MiB
//! ```
//!
//! `grants.fs_read` lists the database files, or folders of them, a query may open (a relative
//! path is resolved against the policy's folder). The engine hands the entry's `grants:` to the
//! plugin in its configuration, under `grants` (the whole shape is `{"fs_read", "fs_write",
//! "env", "net", "subprocess"}`, see the `toolgate-plugin-grants` crate); this plugin uses
//! `fs_read` only.
//!
//! Its manifest asks for `fs_read: ["*"]`, "any root the policy grants": an engine refuses to
//! load it when the entry grants nothing to read, and loads it with one root or more. A host
//! that loads it without grants (its configuration without `grants`) gets a plugin that refuses
//! every query.
//!
//! # Tools
//!
//! | tool | arguments | result |
//! |---|---|---|
//! | `sqlite.query` | `{database, sql, params?, max_rows?}` | a JSON object `{"columns": [names], "rows": [[values]], "truncated": bool}` |
//!
//! `database` is a path to the file: absolute, or relative to a granted folder (the first
//! `fs_read` folder that holds it, in the policy's order; never the host program's working
//! directory, which an MCP host may set to `/`). `params` binds `?` placeholders in order (strings, numbers, booleans as 0/1,
//! null). Integers and reals come back as JSON numbers, text as strings, NULL as null, and a
//! BLOB as `{"blob_base64": "..."}`; an infinite real comes back as the string `"inf"` or `"-inf"`.
//!
//! # Confinement
//!
//! - **Granted files only**: the path is canonicalized (every symbolic link resolved) and must
//!   be equal to, or lie under, an `fs_read` entry (itself canonicalized). The canonical path is
//!   what is opened, so it cannot be read as an SQLite URI (`file:...?mode=rw`).
//! - **Read only, twice**: the file is opened with `SQLITE_OPEN_READ_ONLY` (SQLite itself refuses
//!   every write), and a statement for which `sqlite3_stmt_readonly` is false (`INSERT`,
//!   `CREATE`, `VACUUM`, ...) is refused before it runs, with `not_read_only:`. One statement
//!   per call: a second one after `;` is refused.
//! - **No other files**: the connection allows no attached database (`ATTACH` would open a file
//!   no grant names), and SQLite's extension loading stays off.
//!
//! # Bounds
//!
//! - **Rows**: at most `max_rows` rows come back (the argument can only lower the configured
//!   bound); when the query has more, the result says `"truncated": true`.
//! - **Time**: SQLite's progress handler interrupts a query that runs past `timeout_ms` (it is
//!   checked every 1000 virtual machine steps, so a single long step such as a big sort may
//!   overrun a little), and the call fails with `timeout:`. The host's cancellation is checked
//!   between rows.
//! - **Bytes**: the result's JSON text may be at most `max_result_bytes` long; once the next
//!   value would pass that, the call fails with `too_large:` naming the row (rows are not cut
//!   silently: a partial row would mislead). The same number is SQLite's length limit
//!   (`SQLITE_LIMIT_LENGTH`) on the connection, so no string or blob longer than it is ever made
//!   or loaded while the query runs (`SELECT replace(zeroblob(900000000), ...)` fails at once
//!   with `too_large:` instead of allocating gigabytes; a stored value longer than it cannot be
//!   read, though its `length()` can).
//!
//! # Errors
//!
//! Every failure is an error result whose message starts with its kind: `not_found:`,
//! `not_granted:`, `not_read_only:`, `timeout:`, `too_large:`, `cancelled`, `bad_param:` or
//! `sql_error:`
//! (see [`SqliteError`]).

#![warn(missing_docs)]

mod query;

use serde::Deserialize;
use toolgate_plugin_api::{
    ANY_GRANTED, CallContext, Capabilities, Tool, ToolError, ToolOutput, json,
};
use toolgate_plugin_grants::Grants;

pub use query::SqliteError;

/// The row bound when the configuration gives none.
pub const DEFAULT_MAX_ROWS: u64 = 500;

/// The time bound of a query when the configuration gives none: 5 seconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 5_000;

/// The byte bound of a result (and of one value) when the configuration gives none: 1 MiB.
pub const DEFAULT_MAX_RESULT_BYTES: u64 = 1024 * 1024;

/// The plugin's configuration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    grants: Grants,
    #[serde(default = "default_max_rows")]
    max_rows: u64,
    #[serde(default = "default_timeout_ms")]
    timeout_ms: u64,
    #[serde(default = "default_max_result_bytes")]
    max_result_bytes: u64,
}

fn default_max_rows() -> u64 {
    DEFAULT_MAX_ROWS
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

fn default_max_result_bytes() -> u64 {
    DEFAULT_MAX_RESULT_BYTES
}

fn init(config: Option<Config>) -> Result<query::Databases, String> {
    let config = config.unwrap_or(Config {
        grants: Grants::default(),
        max_rows: DEFAULT_MAX_ROWS,
        timeout_ms: DEFAULT_TIMEOUT_MS,
        max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
    });
    if config.timeout_ms == 0 {
        return Err("`timeout_ms` must be at least 1".to_string());
    }
    if config.max_result_bytes == 0 {
        return Err("`max_result_bytes` must be at least 1".to_string());
    }
    Ok(query::Databases {
        grants: config.grants,
        max_rows: config.max_rows,
        timeout: std::time::Duration::from_millis(config.timeout_ms),
        max_result_bytes: config.max_result_bytes,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryArgs {
    database: std::path::PathBuf,
    sql: String,
    #[serde(default)]
    params: Vec<toolgate_plugin_api::serde_json::Value>,
    #[serde(default)]
    max_rows: Option<u64>,
}

fn run_query(
    ctx: &CallContext<query::Databases>,
    args: QueryArgs,
) -> Result<ToolOutput, ToolError> {
    let result = ctx.state().query(
        &args.database,
        &args.sql,
        &args.params,
        args.max_rows,
        &|| ctx.is_cancelled(),
    )?;
    Ok(ToolOutput::text(result))
}

/// What it asks the host for: reading, under whichever roots the policy grants.
fn capabilities() -> Capabilities {
    Capabilities {
        fs_read: vec![ANY_GRANTED.to_string()],
        ..Capabilities::default()
    }
}

toolgate_plugin_api::export_plugin! {
    name: "sqlite",
    version: env!("CARGO_PKG_VERSION"),
    capabilities: capabilities(),
    init: init,
    tools: [
        Tool::new("sqlite.query", run_query)
            .description(
                "Run one read-only SQL statement (SELECT) on an SQLite database file the policy \
                 grants. Returns JSON: columns, rows (at most max_rows) and whether rows were cut.",
            )
            .parameters(json!({
                "type": "object",
                "properties": {
                    "database": {"type": "string", "description": "The database file's path: absolute, or relative to a granted folder."},
                    "sql": {"type": "string", "description": "One SELECT statement; `?` marks a parameter."},
                    "params": {"type": "array", "description": "Values for the `?` placeholders, in order.",
                               "items": {"type": ["string", "number", "boolean", "null"]}},
                    "max_rows": {"type": "integer", "minimum": 0,
                                 "description": "At most this many rows (never more than the configured bound)."}
                },
                "required": ["database", "sql"],
                "additionalProperties": false
            })),
    ],
}
