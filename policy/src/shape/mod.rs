//! The policy file's shape, defined once: one Rust type per section, one field per key, each
//! key's doc comment being its description. From these types come both
//! - the JSON Schema (`schemas/policy.schema.json`, embedded as [`crate::SCHEMA`]), generated
//!   with `schemars` ([`generated_schema`]); a test fails when the committed file differs, and
//! - the typed values: after the schema check, the tree is deserialized into [`PolicyFile`]
//!   with `serde`, and each section's `build` turns it into the model ([`crate::Policy`]),
//!   running the checks the schema cannot make (durations, globs, files) and taking positions
//!   from the positioned tree by the same keys ([`build`]). Every problem is collected.
//!
//! Conventions the error messages rely on (see `schema.rs`):
//! - `x-expected` (an `extend` on a field or a type) holds the words for "expected ...";
//! - `x-key` on a map's value type names its key in the reference (`tools.<pattern>`);
//! - value kinds many keys share (durations, counts, names, paths, globs) are the `$defs`
//!   types of `values.rs`, so their words are written once.
//!
//! Adding a key: add a field with its doc comment to its section's type (and `x-expected`
//! words if its type's are not the right ones), copy it into the model in that section's
//! `build` (and the model's field, if the engine needs it), run `TOOLGATE_BLESS=1 cargo test -p
//! toolgate-policy --test schema_generated`, and add its row to `docs/policy.md`. A new section
//! is a field of [`PolicyFile`] and a line in [`PolicyFile::build`].

mod build;
mod extensions;
mod mcp_servers;
mod sections;
mod serve;
mod values;

use std::collections::BTreeMap;

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema};
use serde::Deserialize;
use serde_json::Value;

use crate::model::{NameProfile, Policy};
use crate::yaml::Node;

pub(crate) use build::Build;
use build::{child, item};
use extensions::{Plugin, Reduction, Search};
use mcp_servers::McpServer;
use sections::{Alias, Dispatch, Rules, Scripts, Sessions, ToolOverride};
use serve::Serve;
use values::{Version, names_only};

/// A toolgate policy: how the tools an LLM agent calls are dispatched, guarded, limited,
/// reduced and searched. Reference: docs/policy.md.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "toolgate policy",
    extend(
        "$id" = "https://example.invalid/toolgate/policy.schema.json",
        "x-expected" = "a mapping of policy sections (version, dispatch, tools, ...)"
    )
)]
pub(crate) struct PolicyFile {
    /// Format version of the policy file. Only 1 exists.
    pub version: Version,
    /// How tool names (1-128 bytes of [A-Za-z0-9_.-]) map to the names the model sees and calls,
    /// for a provider's rules: mcp (unchanged), openai ('.' becomes '_'; a name over 64 bytes is
    /// shortened to 64 with a stable hash suffix), anthropic ('.' becomes '_'). Two tools that map
    /// to one name fail the build. The policy itself keeps using the real names. Default mcp. Also
    /// the provider tool messages are shaped for: under openai they have no name and only text
    /// (images go to a user message after them).
    pub name_profile: Option<NameProfileKey>,
    /// Defaults for how the calls of one assistant turn run. Every key is optional.
    pub dispatch: Option<Dispatch>,
    /// Per-tool overrides. Each key is an exact tool name or a glob (fs.*, *_search); when several
    /// match a tool, they merge field by field: each setting comes from the most specific key that
    /// sets it (an exact name beats a glob, a glob with more literal characters beats one with
    /// fewer), while the rules of every matching key apply.
    pub tools: Option<BTreeMap<String, ToolOverride>>,
    /// Other names the model may use for a tool and its arguments. Each key is the real tool name.
    pub aliases: Option<BTreeMap<String, Alias>>,
    /// Declarative allow and deny rules, checked on the final arguments (after aliases and the
    /// rewrite script, before the before hook); built-in tools only meet rules naming them exactly,
    /// unknown names get the unknown-tool answer. A call is denied when any deny rule matches;
    /// otherwise, when there is at least one allow rule, it must match one of them.
    pub rules: Option<Rules>,
    /// Rhai scripts, at most one per hook. Each is inline (code) or in a file (file, relative to
    /// the policy file).
    pub scripts: Option<Scripts>,
    /// Plugin libraries to load, in order.
    pub plugins: Option<Vec<Plugin>>,
    /// Large-result reduction: big results are stored whole and the model sees a preview and an id
    /// it can page through with read_tool_result. Absent = off; reduction: {} = on with every
    /// default.
    pub reduction: Option<Reduction>,
    /// Tool search: catalog tools are hidden until the model finds them with tool_search. Absent =
    /// off; search: {} = on with every default.
    pub search: Option<Search>,
    /// Upstream MCP servers whose tools join the registry as <name>.<tool> and are governed like
    /// every tool (aliases, rules, hooks, timeouts, caps, offload, search).
    pub mcp_servers: Option<Vec<McpServer>>,
    /// Session state (the catalog tools a session found with tool_search) as hosts that keep it in
    /// a store see it: toolgate call/run/tools --session and toolgate serve keep it beside the
    /// results (reduction.store, else the local results folder), so later runs and other serve
    /// instances on the same store share it. Every key is optional.
    pub sessions: Option<Sessions>,
    /// How toolgate serve answers MCP clients. Every key is optional.
    pub serve: Option<Serve>,
}

impl PolicyFile {
    /// The typed policy, checked; `root` is the tree `self` was read from.
    pub(crate) fn build(self, root: &Node, cx: &mut Build<'_>) -> Policy {
        let mut policy = Policy {
            source: Some(cx.file.to_path_buf()),
            version: u32::try_from(self.version.0).unwrap_or(1),
            ..Policy::default()
        };
        if let Some(profile) = self.name_profile {
            policy.name_profile = match profile {
                NameProfileKey::Mcp => NameProfile::Mcp,
                NameProfileKey::Openai => NameProfile::Openai,
                NameProfileKey::Anthropic => NameProfile::Anthropic,
            };
        }
        if let Some(dispatch) = self.dispatch {
            policy.dispatch = dispatch.build(child(root, "dispatch"), cx);
        }
        if let Some(tools) = self.tools {
            policy.tools = sections::tools(tools, child(root, "tools"), cx);
        }
        if let Some(aliases) = self.aliases {
            policy.aliases = sections::aliases(aliases, child(root, "aliases"), cx);
        }
        if let Some(rules) = self.rules {
            policy.rules = rules.build(child(root, "rules"), "rules", cx);
        }
        if let Some(scripts) = self.scripts {
            policy.scripts = scripts.build(child(root, "scripts"), cx);
        }
        if let Some(plugins) = self.plugins {
            let node = child(root, "plugins");
            policy.plugins = plugins
                .into_iter()
                .enumerate()
                .filter_map(|(i, plugin)| plugin.build(item(node, i), cx))
                .collect();
        }
        if let Some(reduction) = self.reduction {
            policy.reduction = Some(reduction.build(cx));
        }
        if let Some(search) = self.search {
            policy.search = Some(search.build(child(root, "search"), cx));
        }
        if let Some(servers) = self.mcp_servers {
            policy.mcp_servers = mcp_servers::load(servers, child(root, "mcp_servers"), cx);
        }
        if let Some(sessions) = self.sessions {
            policy.sessions = sessions.build(child(root, "sessions"), cx);
        }
        if let Some(serve) = self.serve {
            policy.serve = serve.build();
        }
        policy
    }
}

// `name_profile`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = names_only)]
pub(crate) enum NameProfileKey {
    Mcp,
    Openai,
    Anthropic,
}

/// The policy JSON Schema generated from the policy's types, as pretty-printed JSON with a
/// final newline: what `schemas/policy.schema.json` must hold.
pub fn generated_schema() -> String {
    let schema = SchemaSettings::draft2020_12()
        .with_transform(RecursiveTransform(not_nullable))
        .with_transform(RecursiveTransform(no_number_format))
        .with_transform(RecursiveTransform(one_line_description))
        .into_generator()
        .into_root_schema_for::<PolicyFile>();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// An absent key is written by leaving it out, never as `null`: `Option` fields keep the
/// schema of what they hold, so `timeout: ~` is refused like any other wrong value.
fn not_nullable(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if let [single] = types.as_slice() {
            let single = single.clone();
            object.insert("type".to_owned(), single);
        }
    }
    if let Some(Value::Array(options)) = object.get_mut("enum") {
        options.retain(|o| !o.is_null());
    }
    let is_null = |s: &Value| s.get("type").and_then(Value::as_str) == Some("null");
    let collapsible = object
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|options| options.len() == 2 && options.iter().any(is_null));
    if collapsible && let Some(Value::Array(options)) = object.remove("anyOf") {
        for option in options.into_iter().filter(|o| !is_null(o)) {
            if let Value::Object(inner) = option {
                for (key, value) in inner {
                    object.entry(key).or_insert(value);
                }
            }
        }
    }
}

/// `schemars` marks Rust integer widths (`uint64`, `int64`); the policy's numbers are bounded
/// with `minimum`/`maximum` instead, and validators do not check these formats.
fn no_number_format(schema: &mut Schema) {
    if schema.get("type").and_then(Value::as_str) == Some("integer") {
        schema.remove("format");
    }
}

/// Doc comments are wrapped at 100 columns; a description is one line of text.
fn one_line_description(schema: &mut Schema) {
    if let Some(Value::String(text)) = schema.get_mut("description") {
        *text = text.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    }
}
