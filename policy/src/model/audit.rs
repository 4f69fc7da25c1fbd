//! The `audit:` section: one JSON line per call, for a SIEM or a reviewer.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::shape::values::{self, Count, DurationText, PathText, Size, names_only};

/// Where audit lines go (`audit.sink`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = names_only)]
pub enum AuditSink {
    /// Standard output (not with `toolgate serve` over stdio, whose stdout is the MCP channel).
    Stdout,
    /// Standard error.
    Stderr,
    /// The file `audit.path`, rotated by size.
    #[default]
    File,
    /// Objects under the `audit.store` URL, one JSON-lines object per batch.
    ObjectStore,
}

/// What a line says of the call's arguments (`audit.arguments`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = names_only)]
pub enum AuditArguments {
    /// Only their SHA-256 (arguments_sha256).
    #[default]
    Digest,
    /// Their SHA-256 and the arguments, with the fields of secret_arguments and the secrets
    /// redact: finds masked.
    Redacted,
}

/// The audit log (`audit:`).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct AuditSettings {
    /// Where the lines go: file (audit.path, rotated by size), stdout, stderr, or object_store
    /// (batches of lines as objects under audit.store). Default file.
    pub sink: AuditSink,
    /// The audit file (sink file), relative to the policy file. It is opened when the policy is
    /// loaded: one that cannot be opened fails the start. Default audit.jsonl.
    ///
    /// Resolved against the policy's folder as it is read; `None` is `audit.jsonl` in that
    /// folder (the current one for a policy built in code).
    #[serde(deserialize_with = "values::optional_path")]
    #[schemars(with = "PathText")]
    pub path: Option<PathBuf>,
    /// Rotate the file before a line would take it over this many bytes: it becomes path.1,
    /// path.1 becomes path.2, and so on. Default 104857600 (100 MiB).
    #[schemars(with = "Size")]
    pub max_file_bytes: u64,
    /// Rotated files kept besides the current one (the oldest is deleted). Default 5.
    #[schemars(with = "Count", range(min = 0, max = 1000))]
    pub max_files: usize,
    /// What a line says of the arguments: digest (only their SHA-256) or redacted (also the
    /// arguments, with secret fields and secrets masked). Default digest.
    pub arguments: AuditArguments,
    /// Argument field names (at any depth, case-insensitive) whose values a redacted line masks.
    /// Default password, secret, token, api_key, authorization.
    pub secret_arguments: Vec<String>,
    /// Sink object_store: where the batches go, as a URL: `memory://`, `file:///absolute/dir`,
    /// `file://relative/dir` (resolved against the policy file's directory) or
    /// `s3://bucket/prefix`. Each batch is one object, `<prefix>/YYYY/MM/DD/<time>-<host
    /// id>-<sequence>.jsonl`.
    #[serde(deserialize_with = "values::store_url")]
    #[schemars(
        with = "String",
        regex(pattern = "^(memory|file|s3|s3a)://"),
        extend(
            "x-expected" = "a store URL starting with memory://, file:// or s3:// (such as s3://bucket/audit)"
        )
    )]
    pub store: Option<String>,
    /// Sink object_store: options for the store builder, as for reduction.store_options
    /// (endpoint, region, access_key_id, secret_access_key, allow_http for s3).
    #[schemars(with = "BTreeMap<String, super::extensions::StoreOption>")]
    pub store_options: BTreeMap<String, String>,
    /// Sink object_store: a batch is written once it holds this many lines. Default 1000.
    #[schemars(with = "Count", range(min = 1, max = 1000000))]
    pub batch_lines: usize,
    /// Sink object_store: a batch is written once it holds this many bytes. Default 1048576
    /// (1 MiB).
    #[schemars(with = "Size")]
    pub batch_bytes: u64,
    /// Sink object_store: a batch that is not full is written this long after its first line.
    /// Default 5s.
    #[serde(deserialize_with = "values::positive_duration")]
    #[schemars(with = "DurationText")]
    pub batch_interval: Duration,
    /// Sink object_store: while the store cannot take a batch, at most this many lines wait
    /// (the oldest are dropped beyond, and a lost_lines record in the next batch says how
    /// many). Default 100000.
    #[schemars(with = "Count", range(min = 1, max = 100000000))]
    pub max_buffered_lines: usize,
    /// Sink object_store: a local folder where each line is also written as its call ends,
    /// and kept until its batch is in the store, so that the lines of a process that is
    /// killed are shipped by the next one that starts with the same folder. Relative to the
    /// policy file. Default audit-spool beside the policy (given up, with a warning, where that
    /// folder cannot be made).
    ///
    /// Resolved against the policy's folder as it is read; `None` is `audit-spool` in that
    /// folder, and no spool for a policy built in code.
    #[serde(deserialize_with = "values::optional_path")]
    #[schemars(with = "PathText")]
    pub spool: Option<PathBuf>,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings {
            sink: AuditSink::File,
            path: None,
            max_file_bytes: 100 * 1024 * 1024,
            max_files: 5,
            arguments: AuditArguments::Digest,
            secret_arguments: ["password", "secret", "token", "api_key", "authorization"]
                .map(String::from)
                .to_vec(),
            store: None,
            store_options: BTreeMap::new(),
            batch_lines: 1000,
            batch_bytes: 1024 * 1024,
            batch_interval: Duration::from_secs(5),
            max_buffered_lines: 100_000,
            spool: None,
        }
    }
}
