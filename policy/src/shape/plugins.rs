//! A `plugins:` entry as the file writes it, read into a [`PluginSpec`]. The file writes the
//! library as one of two keys (`name` or `path`), the model holds one [`PluginLocation`]; every
//! other key is read into its final form here and moved over.

use std::borrow::Cow;
use std::path::PathBuf;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};

use super::values::{self, Count, Flag};
use crate::model::{
    Grants, Isolation, PluginLocation, PluginSpec, Position, here, parse_memory_limit,
};

/// One plugin: exactly one of name or path, plus optional config, searchable, max_threads,
/// max_queued, isolation, memory_limit, sha256 and grants.
#[derive(Deserialize, JsonSchema)]
#[schemars(
    inline,
    deny_unknown_fields,
    extend(
        "oneOf" = [{ "required": ["name"] }, { "required": ["path"] }],
        "x-expected" = "exactly one of name (an installed plugin) or path (a library file)"
    )
)]
struct Plugin {
    /// An installed plugin, found as libtoolgate_plugin_<name>.so (platform file name) in the
    /// directories of TOOLGATE_PLUGIN_PATH, then beside the toolgate program and in its parent
    /// directory; without such a library, the plugin of that name built into the program (fs,
    /// http and sqlite are).
    #[serde(default)]
    #[schemars(
        regex(pattern = r"^[A-Za-z0-9_-]+$"),
        extend("x-expected" = "a plugin name of letters, digits, _ and -")
    )]
    name: Option<String>,
    /// The plugin library file; a relative path is resolved against the policy file's directory.
    #[serde(default, deserialize_with = "values::optional_path")]
    #[schemars(
        with = "String",
        length(min = 1),
        extend("x-expected" = "a non-empty file path")
    )]
    path: Option<PathBuf>,
    /// Any value (mapping, list, scalar), handed to the plugin as JSON when it is loaded; a
    /// relative path at a key the plugin's manifest lists as a path (config_paths: the fs
    /// plugin's root) is resolved against the policy file's directory, and one that would reach
    /// / is refused (write / to mean it). Default {}.
    #[serde(default = "empty_object")]
    config: serde_json::Value,
    /// Put this plugin's tools in the search catalog (needs search) instead of always showing them.
    /// Default false.
    #[serde(default)]
    #[schemars(with = "Flag")]
    searchable: bool,
    /// At most this many calls of this plugin hold a thread at once, calls that ignored a
    /// cancellation and still run included; more wait in the queue (max_queued). Default 16.
    #[serde(default = "default_max_threads")]
    #[schemars(
        with = "Count",
        range(min = 1),
        extend("x-expected" = "a whole number >= 1")
    )]
    max_threads: usize,
    /// At most this many calls of this plugin wait for a thread when all max_threads are taken;
    /// waiting calls are served fairly across sessions (in turn, oldest first within a session),
    /// and their wait counts against their timeout. One more fails at once with the error kind
    /// overloaded. 0: no queue. Default 16384.
    #[serde(default = "default_max_queued")]
    #[schemars(
        with = "Count",
        range(min = 0),
        extend("x-expected" = "a whole number >= 0")
    )]
    max_queued: usize,
    /// Where the plugin runs: in_process (default; loaded into the host, for plugins you trust) or
    /// process (loaded by a worker process, toolgate plugin-host: a segfault, abort, out-of-memory
    /// or endless loop costs the calls on that worker an error, plugin_crashed or timeout, and the
    /// worker restarts).
    #[serde(default)]
    isolation: Isolation,
    /// Under isolation: process, the memory the worker writes to (its data limit, RLIMIT_DATA:
    /// heap, anonymous mappings, thread stacks; not reserved address space): a whole number of KiB,
    /// MiB or GiB, like 512MiB. A plugin that allocates past it crashes its worker, and the call's
    /// error names the limit. Default: no limit.
    #[serde(default, deserialize_with = "memory_limit")]
    #[schemars(
        with = "String",
        regex(pattern = r"^[1-9][0-9]{0,5}(KiB|MiB|GiB)$"),
        extend("x-expected" = "a size like 512MiB or 2GiB (units KiB, MiB, GiB)")
    )]
    memory_limit: Option<u64>,
    /// The SHA-256 of the library file, 64 hex digits; a library whose hash differs is refused at
    /// load. toolgate plugin hash PATH prints the line to paste. A plugin built into the program
    /// has no library file and cannot be pinned: install its library to pin it.
    #[serde(default, deserialize_with = "lower_case")]
    #[schemars(
        with = "String",
        regex(pattern = r"^[0-9a-fA-F]{64}$"),
        extend("x-expected" = "64 hex digits (toolgate plugin hash PATH prints them)")
    )]
    sha256: Option<String>,
    /// What the plugin may use; a plugin whose manifest declares capabilities beyond these fails to
    /// load. The plugin receives them in its config under grants. Under isolation: process some are
    /// enforced (see docs/plugins.md).
    #[serde(default)]
    grants: Option<Grants>,
    #[serde(skip_deserializing, default = "here")]
    #[schemars(skip)]
    position: Option<Position>,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

fn default_max_threads() -> usize {
    PluginSpec::DEFAULT_MAX_THREADS
}

fn default_max_queued() -> usize {
    PluginSpec::DEFAULT_MAX_QUEUED
}

/// The schema checked the form; the largest it allows fits a u64.
fn memory_limit<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    Ok(parse_memory_limit(&String::deserialize(deserializer)?))
}

fn lower_case<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(Some(
        String::deserialize(deserializer)?.to_ascii_lowercase(),
    ))
}

impl<'de> Deserialize<'de> for PluginSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let plugin = Plugin::deserialize(deserializer)?;
        // The schema requires exactly one of name and path.
        let location = match (plugin.name, plugin.path) {
            (Some(name), _) => PluginLocation::Name(name),
            (None, Some(path)) => PluginLocation::Path(path),
            (None, None) => return Err(serde::de::Error::missing_field("name")),
        };
        Ok(PluginSpec {
            location,
            config: plugin.config,
            searchable: plugin.searchable,
            max_threads: plugin.max_threads,
            max_queued: plugin.max_queued,
            isolation: plugin.isolation,
            memory_limit: plugin.memory_limit,
            sha256: plugin.sha256,
            grants: plugin.grants,
            position: plugin.position,
            base_dir: super::de::policy_dir(),
        })
    }
}

/// The schema of a `plugins:` entry.
impl JsonSchema for PluginSpec {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Plugin::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Plugin::json_schema(generator)
    }
}
