//! toolgate policy files: YAML in, a typed, validated [`Policy`] out, and errors that point at
//! the line and column of the mistake.
//!
//! A policy is how a user tells toolgate what to do with the tools an LLM agent calls: time
//! limits, result caps, allow/deny rules, aliases, Rhai hooks, plugins, large-result reduction
//! and tool search. This crate reads the file; the engine (crate `toolgate`) consumes the
//! [`Policy`] and never sees YAML.
//!
//! # Loading
//!
//! ```
//! use std::path::Path;
//! use std::time::Duration;
//!
//! let yaml = "\
//! version: 1
//! dispatch:
//!   timeout: 30s
//! tools:
//!   \"fs.*\": { timeout: 5s }
//! ";
//! let policy = toolgate_policy::load_str(yaml, Path::new("policy.yaml"))?;
//! assert_eq!(policy.dispatch.timeout, Some(Duration::from_secs(30)));
//! assert_eq!(policy.tools[0].pattern, "fs.*");
//! # Ok::<(), toolgate_policy::PolicyError>(())
//! ```
//!
//! # The pipeline
//!
//! 1. **YAML to a positioned tree**: built from the events of
//!    the parser under `serde-saphyr`, so every key and value keeps its line and column. Only
//!    `true`/`false` are booleans (`yes`/`no`/`on`/`off` are strings), duplicate keys are
//!    errors, and syntax errors carry their position.
//! 2. **JSON Schema** ([`SCHEMA`], draft 2020-12, generated from the policy's types by
//!    [`generated_schema`]): the tree, as JSON, is validated against the schema, which rejects
//!    unknown keys everywhere. Every violation is reported, each mapped
//!    back to the line and column of the offending key.
//! 3. **Typed policy and semantic checks**: `serde` reads the tree into the [`Policy`] types,
//!    each value into its final form: durations are parsed ([`parse_duration`]), globs
//!    compiled ([`glob::Glob`]), script files read and catalogs looked for, with relative
//!    paths resolved against the policy file's directory. A value that cannot be converted is
//!    reported at its line and column, and reading goes on to find the others.
//!
//! Any problem makes a [`PolicyError`], whose `Display` prints one `file:line:col: message`
//! per [`Diagnostic`], like a compiler; each diagnostic is also typed data (file,
//! [`LineColumn`], [`DiagnosticKind`], message) for a program that reports them its own way.
//!
//! # The model
//!
//! [`Policy`] and its parts are plain data, parsed once: patterns are compiled
//! [`glob::Glob`]s (with the one specificity rule for overrides), result caps are
//! [`CharCap`]s, durations are [`std::time::Duration`]s. Nothing downstream parses them again.
//! A Rust user may also build a [`Policy`] in code, starting from [`Policy::default`].
//!
//! The crate also owns the rules shared with the engine and the command line: the tool-name
//! rule N1 ([`check_tool_name`]), and reading and writing durations ([`parse_duration`],
//! [`parse_age`], [`format_duration`]).
//!
//! The reference for every key is `docs/policy.md`; a test keeps it in step with the schema.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod duration;
mod env_template;
mod error;
mod file;
pub mod glob;
mod load;
mod model;
mod name;
mod schema;
mod shape;
mod yaml;

pub use duration::{format_duration, parse_age, parse_duration};
pub use env_template::{EnvTemplate, MissingVar, TemplateError, TemplatePart};
pub use error::{
    Diagnostic, DiagnosticKind, DurationError, GlobError, LineColumn, MAX_DIAGNOSTICS, PolicyError,
};
pub use file::{
    FileError, FileProblem, MAX_CATALOG_FILE_BYTES, MAX_POLICY_FILE_BYTES, read_text_file,
};
pub use load::{load_file, load_str};
pub use model::*;
pub use name::{MAX_TOOL_NAME_BYTES, ToolNameError, check_tool_name};
pub use shape::generated_schema;

/// The policy JSON Schema (draft 2020-12), as shipped in `schemas/policy.schema.json`: the text
/// [`generated_schema`] produces (a test checks it).
///
/// Editors that speak the YAML language server protocol use it when a policy starts with
/// `# yaml-language-server: $schema=../schemas/policy.schema.json`.
pub const SCHEMA: &str = include_str!("../policy.schema.json");
