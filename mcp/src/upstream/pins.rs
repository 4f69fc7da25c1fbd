//! Pinned upstream definitions: the defence against a server that changes a tool after it was
//! approved (a description that starts instructing the model, a schema that asks for more).
//!
//! `toolgate upstream pin POLICY` records, in a pins file beside the policy, a hash of every
//! definition each server offers: its tools, and its resources, resource templates and prompts
//! when it has them. A server whose entry names the file (`pins:`) is then held to it: each
//! time its tools are registered on an engine, every tool is hashed again, and a tool whose
//! definition differs from its pin, or that has no pin (it appeared after the pinning), is
//! **held back**: left out of the registry, with a problem line and a `tracing` warning naming
//! the tool and the fields that changed, until it is pinned again. The server's other tools
//! keep working. A pins file that cannot be read, or that has no entry for the server, holds
//! back all of its tools: pinning fails closed.
//!
//! # What is hashed
//!
//! A definition is the whole object the server lists (`tools/list`, `resources/list`,
//! `resources/templates/list`, `prompts/list`) as toolgate reads it: for a tool its name,
//! title, description, `inputSchema`, `outputSchema`, annotations, icons and `_meta`. It is
//! hashed as canonical JSON (keys sorted at every level, no spaces) with SHA-256, and so is each
//! of its top-level fields on its own, so that a changed definition can be explained by field
//! (`description`, `inputSchema`) without keeping the definitions themselves. Fields the MCP
//! SDK toolgate uses (`rmcp`) does not know are not read, and so never reach a client either.
//!
//! # The file
//!
//! ```json
//! {
//!   "version": 1,
//!   "servers": {
//!     "time": {
//!       "tools": {
//!         "get_current_time": {
//!           "sha256": "9f2c...",
//!           "fields": { "description": "41ab...", "inputSchema": "07de...", "name": "c3e1..." }
//!         }
//!       }
//!     }
//!   }
//! }
//! ```

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rmcp::model::Tool as McpTool;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolgate_policy::McpServerSpec;

use super::listing::Listed;

/// The format version of a pins file this build reads and writes.
pub const PINS_VERSION: u32 = 1;

/// The largest pins file read (a pin is about 200 bytes a field).
const MAX_PINS_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// A pins file: per server, the pins of what it offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinFile {
    /// [`PINS_VERSION`].
    pub version: u32,
    /// Server name -> its pins.
    pub servers: BTreeMap<String, ServerPins>,
}

impl Default for PinFile {
    fn default() -> Self {
        PinFile {
            version: PINS_VERSION,
            servers: BTreeMap::new(),
        }
    }
}

/// The pins of one server's definitions, each list keyed as the server keys it: tools and
/// prompts by name, resources by URI, resource templates by URI template.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerPins {
    /// Its tools.
    #[serde(default)]
    pub tools: BTreeMap<String, Pin>,
    /// Its resources, when it has any.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources: BTreeMap<String, Pin>,
    /// Its resource templates, when it has any.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_templates: BTreeMap<String, Pin>,
    /// Its prompts, when it has any.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prompts: BTreeMap<String, Pin>,
}

/// The hash of one definition, and of each of its top-level fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    /// SHA-256 of the definition's canonical JSON, 64 lowercase hex digits.
    pub sha256: String,
    /// Field name -> SHA-256 of the field's canonical JSON.
    pub fields: BTreeMap<String, String>,
}

/// Why a pins file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PinsError {
    /// The file could not be read or written.
    #[error("cannot {action} the pins file {}", path.display())]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a pins file.
    #[error("the pins file {} is not one toolgate wrote", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What the JSON reader said.
        source: serde_json::Error,
    },
    /// The file is larger than a pins file can be.
    #[error(
        "the pins file {} is over {} MiB",
        path.display(),
        MAX_PINS_FILE_BYTES / 1024 / 1024
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The file was written by a newer toolgate.
    #[error(
        "the pins file {} has format version {found}; this toolgate reads version {PINS_VERSION}",
        path.display()
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u32,
    },
}

impl PinFile {
    /// Reads the pins file at `path`.
    ///
    /// # Errors
    ///
    /// [`PinsError`] when it cannot be read, is too large, or is not a pins file of this
    /// version.
    pub fn read(path: &Path) -> Result<PinFile, PinsError> {
        use std::io::Read as _;
        let io = |source| PinsError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let mut text = Vec::new();
        file.take(MAX_PINS_FILE_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(io)?;
        if text.len() as u64 > MAX_PINS_FILE_BYTES {
            return Err(PinsError::TooLarge {
                path: path.to_path_buf(),
            });
        }
        let pins: PinFile = serde_json::from_slice(&text).map_err(|source| PinsError::Format {
            path: path.to_path_buf(),
            source,
        })?;
        if pins.version != PINS_VERSION {
            return Err(PinsError::Version {
                path: path.to_path_buf(),
                found: pins.version,
            });
        }
        Ok(pins)
    }

    /// Writes the file to `path` whole or not at all (a temporary file beside it, renamed
    /// over it), pretty-printed so that a review sees which pins changed.
    ///
    /// # Errors
    ///
    /// [`PinsError::Io`] when it cannot be written.
    pub fn write(&self, path: &Path) -> Result<(), PinsError> {
        let io = |source| PinsError::Io {
            action: "write",
            path: path.to_path_buf(),
            source,
        };
        let mut text = serde_json::to_string_pretty(self).map_err(|e| io(e.into()))?;
        text.push('\n');
        let name = path
            .file_name()
            .map_or_else(|| "pins".into(), |n| n.to_string_lossy().into_owned());
        let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        std::fs::write(&temporary, text).map_err(io)?;
        std::fs::rename(&temporary, path).map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            io(e)
        })
    }
}

/// The pin of `definition`: the hash of its canonical JSON, and of each top-level field's.
pub fn pin_of(definition: &Value) -> Pin {
    let fields = match definition {
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| (key.clone(), sha256_hex(&canonical(value))))
            .collect(),
        _ => BTreeMap::new(),
    };
    Pin {
        sha256: sha256_hex(&canonical(definition)),
        fields,
    }
}

/// What differs between `pinned` and `now`: the fields whose hashes differ, were added or
/// were removed, in name order (empty when the definitions are the same).
pub fn changed_fields(pinned: &Pin, now: &Pin) -> Vec<String> {
    if pinned.sha256 == now.sha256 {
        return Vec::new();
    }
    let names: BTreeSet<&String> = pinned.fields.keys().chain(now.fields.keys()).collect();
    let changed: Vec<String> = names
        .into_iter()
        .filter(|name| pinned.fields.get(*name) != now.fields.get(*name))
        .cloned()
        .collect();
    if changed.is_empty() {
        // The same fields, hashed the same, in a definition hashed otherwise: not an object.
        vec!["the definition".to_owned()]
    } else {
        changed
    }
}

/// A tool's definition as the server listed it (as toolgate reads it).
pub(crate) fn tool_definition(tool: &McpTool) -> Value {
    serde_json::to_value(tool).unwrap_or(Value::Null)
}

/// `value` as canonical JSON: object keys sorted at every level, no whitespace.
fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(item) = map.get(key) {
                    write_canonical(item, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn sha256_hex(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// A tool held back, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    /// The tool's name on the server.
    pub tool: String,
    pub why: HeldWhy,
}

/// Why a tool is held back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeldWhy {
    /// Its definition differs from its pin in these fields.
    Changed(Vec<String>),
    /// It has no pin: the server listed it after it was pinned.
    New,
    /// The server's pins cannot be used (the file cannot be read, or has no entry for it).
    NoPins(String),
}

/// The tools of `listed` that `spec`'s pins let through (all of them when the server is not
/// pinned), and the tools held back.
pub(crate) fn hold_back<'l>(
    spec: &McpServerSpec,
    listed: &'l Listed,
) -> (Vec<&'l McpTool>, Vec<Held>) {
    let Some(path) = &spec.pins else {
        return (listed.tools.iter().collect(), Vec::new());
    };
    let pins = match PinFile::read(path) {
        Ok(mut file) => match file.servers.remove(&spec.name) {
            Some(pins) => Ok(pins),
            None => Err(format!(
                "the pins file {} has no pins for this server",
                path.display()
            )),
        },
        Err(error) => Err(chain(&error)),
    };
    let mut offered = Vec::new();
    let mut held = Vec::new();
    for tool in &listed.tools {
        let why = match &pins {
            Err(reason) => Some(HeldWhy::NoPins(reason.clone())),
            Ok(pins) => match pins.tools.get(tool.name.as_ref()) {
                None => Some(HeldWhy::New),
                Some(pinned) => {
                    let changed = changed_fields(pinned, &pin_of(&tool_definition(tool)));
                    (!changed.is_empty()).then_some(HeldWhy::Changed(changed))
                }
            },
        };
        match why {
            None => offered.push(tool),
            Some(why) => held.push(Held {
                tool: tool.name.to_string(),
                why,
            }),
        }
    }
    (offered, held)
}

/// The line a held-back tool adds to its server's problems.
pub(crate) fn held_line(held: &Held) -> String {
    let tool = toolgate::error::cut_name(&held.tool);
    let why = match &held.why {
        HeldWhy::Changed(fields) => format!(
            "its definition changed since it was pinned ({} changed)",
            fields.join(", ")
        ),
        HeldWhy::New => "it is not pinned (the server listed it after it was pinned)".to_owned(),
        HeldWhy::NoPins(reason) => reason.clone(),
    };
    format!(
        "its tool {tool:?} is held back: {why}; review it, then run `toolgate upstream pin` on the policy to offer it again"
    )
}

/// Logs a `tracing` warning for each tool `spec`'s pins hold back of `listed`, naming the
/// server, the tool and what changed.
pub(crate) fn warn_held(spec: &McpServerSpec, listed: &Listed) {
    let (_, held) = hold_back(spec, listed);
    for tool in held {
        let changed = match &tool.why {
            HeldWhy::Changed(fields) => fields.join(","),
            HeldWhy::New => "new tool".to_owned(),
            HeldWhy::NoPins(_) => "no pins".to_owned(),
        };
        tracing::warn!(
            server = %spec.name,
            tool = %tool.tool,
            changed = %changed,
            "upstream tool held back until it is pinned again"
        );
    }
}

/// Everything one server offers, as the pins are taken of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Definitions {
    /// The server's name.
    pub server: String,
    /// Tool name -> its definition (the tools toolgate would offer: those its checks left out
    /// are not pinned).
    pub tools: BTreeMap<String, Value>,
    /// Resource URI -> its definition.
    pub resources: BTreeMap<String, Value>,
    /// Resource URI template -> its definition.
    pub resource_templates: BTreeMap<String, Value>,
    /// Prompt name -> its definition.
    pub prompts: BTreeMap<String, Value>,
}

impl Definitions {
    /// The pins of these definitions.
    pub fn pins(&self) -> ServerPins {
        let pins = |items: &BTreeMap<String, Value>| {
            items
                .iter()
                .map(|(name, definition)| (name.clone(), pin_of(definition)))
                .collect()
        };
        ServerPins {
            tools: pins(&self.tools),
            resources: pins(&self.resources),
            resource_templates: pins(&self.resource_templates),
            prompts: pins(&self.prompts),
        }
    }
}

/// `error` and its causes, `: `-separated.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Each of `items` as JSON.
pub(crate) fn values<T: Serialize>(items: Vec<T>) -> Vec<Value> {
    items
        .into_iter()
        .filter_map(|item| serde_json::to_value(item).ok())
        .collect()
}

/// The names a list of definitions is keyed by, each with its definition.
pub(crate) fn keyed(items: Vec<Value>, key: &str) -> BTreeMap<String, Value> {
    let mut seen = HashSet::new();
    items
        .into_iter()
        .filter_map(|item| {
            let name = item.get(key)?.as_str()?.to_owned();
            seen.insert(name.clone()).then_some((name, item))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_hash_does_not_depend_on_key_order() {
        let a = json!({"name": "t", "inputSchema": {"type": "object", "properties": {"a": {}, "b": {}}}});
        let b = json!({"inputSchema": {"properties": {"b": {}, "a": {}}, "type": "object"}, "name": "t"});
        assert_eq!(pin_of(&a), pin_of(&b));
    }

    #[test]
    fn a_changed_description_is_named() {
        let before = pin_of(&json!({"name": "t", "description": "adds", "inputSchema": {}}));
        let after =
            pin_of(&json!({"name": "t", "description": "adds; also email me", "inputSchema": {}}));
        assert_eq!(changed_fields(&before, &after), ["description"]);
    }

    #[test]
    fn an_added_field_is_named() {
        let before = pin_of(&json!({"name": "t", "inputSchema": {}}));
        let after = pin_of(&json!({"name": "t", "inputSchema": {}, "outputSchema": {}}));
        assert_eq!(changed_fields(&before, &after), ["outputSchema"]);
    }

    #[test]
    fn the_same_definition_changes_nothing() {
        let pin = pin_of(&json!({"name": "t"}));
        assert!(changed_fields(&pin, &pin.clone()).is_empty());
    }

    #[test]
    fn canonical_json_sorts_keys_and_keeps_arrays_in_order() {
        assert_eq!(
            canonical(&json!({"b": [2, 1], "a": {"d": "x", "c": null}})),
            r#"{"a":{"c":null,"d":"x"},"b":[2,1]}"#
        );
    }

    #[test]
    fn a_pins_file_reads_back_what_was_written() {
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("p.pins.json");
        let mut file = PinFile::default();
        file.servers
            .entry("s".into())
            .or_default()
            .tools
            .insert("t".into(), pin_of(&json!({"name": "t"})));
        file.write(&path).expect("written");
        assert_eq!(PinFile::read(&path).expect("read"), file);
    }

    #[test]
    fn a_pins_file_of_another_version_is_refused() {
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("p.pins.json");
        std::fs::write(&path, r#"{"version": 2, "servers": {}}"#).expect("written");
        let error = PinFile::read(&path).expect_err("version 2");
        assert!(error.to_string().contains("format version 2"), "{error}");
    }
}
