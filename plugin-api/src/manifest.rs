//! [`Manifest`]: what a plugin says about itself.

use serde::{Deserialize, Serialize};

/// What a plugin says about itself: the JSON that [`PluginVTable::manifest`](crate::abi::PluginVTable::manifest) returns.
///
/// ```json
/// {"name": "fs", "version": "0.1.0",
///  "tools": [{"name": "fs.stat", "description": "...", "parameters": {"type": "object"}}]}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The plugin's name, such as `fs`.
    pub name: String,
    /// The plugin's own version, such as `0.1.0`.
    pub version: String,
    /// The tools it offers.
    pub tools: Vec<ToolManifest>,
    /// What it needs from the host; a host refuses to load it unless the policy grants all of
    /// it. Absent = nothing.
    #[serde(default, skip_serializing_if = "Capabilities::is_empty")]
    pub capabilities: Capabilities,
    /// The keys of its configuration whose values are file paths (`["root"]` for the fs
    /// plugin). A host resolves a relative one against the folder of the policy that gives the
    /// configuration, as it does every other relative path of a policy, before `init`; see
    /// [`resolve_config_paths`](crate::resolve_config_paths). Added in ABI 1's third JSON
    /// revision; an older host ignores it. Absent = none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_paths: Vec<String>,
}

/// What a plugin needs (in its [`Manifest`]), or what a policy grants it (`grants:`, which the
/// plugin receives in its configuration under `"grants"` in this same shape):
///
/// ```json
/// {"fs_read": ["/srv/data"], "fs_write": [], "env": ["HOME"], "net": ["api.example.com:443"], "subprocess": false}
/// ```
///
/// In a manifest, [`ANY_GRANTED`] (`"*"`) in `fs_read`, `fs_write` or `net` asks for "whatever the
/// operator grants of this kind": a plugin that works on roots or hosts its user chooses (an
/// HTTP client, a database reader) declares `"net": ["*"]` or `"fs_read": ["*"]`. It is
/// covered by any grant of that kind (at least one root or host) and missing when the policy
/// grants none, so such a plugin does not load where it could do nothing. In a grant, `"*"`
/// names no host or root and covers nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    /// Files and directories it reads (a directory covers everything below it).
    pub fs_read: Vec<String>,
    /// Files and directories it writes.
    pub fs_write: Vec<String>,
    /// Environment variables it reads.
    pub env: Vec<String>,
    /// Network hosts it reaches: `host` (any port) or `host:port`.
    pub net: Vec<String>,
    /// Whether it starts processes.
    pub subprocess: bool,
}

/// The manifest's "any granted root or host" (see [`Capabilities`]).
pub const ANY_GRANTED: &str = "*";

impl Capabilities {
    /// Nothing at all.
    pub fn is_empty(&self) -> bool {
        self == &Capabilities::default()
    }

    /// What `self` asks for that `granted` does not cover, one item a line such as
    /// `fs_read /etc`, `env HOME`, `net example.com:443`, `subprocess`; empty when all is
    /// granted.
    ///
    /// A path is covered by a granted path it equals or lies under (compared by components;
    /// `fs_write` covers reading too); a variable by the same name; `host:port` by `host:port`
    /// or by `host`, and `host` only by `host`. [`ANY_GRANTED`] is covered by any granted root (or
    /// host) but `"*"` itself, and listed as `fs_read (any granted root)` or
    /// `net (any granted host)` when there is none.
    pub fn missing_from(&self, granted: &Capabilities) -> Vec<String> {
        use std::path::Path;
        let some = |lists: &[&Vec<String>]| {
            lists
                .iter()
                .flat_map(|l| l.iter())
                .any(|g| g != ANY_GRANTED)
        };
        let under = |path: &str, roots: &[&Vec<String>]| {
            if path == ANY_GRANTED {
                return some(roots);
            }
            roots
                .iter()
                .flat_map(|r| r.iter())
                .filter(|root| *root != ANY_GRANTED)
                .any(|root| Path::new(path).starts_with(Path::new(root)))
        };
        let named = |kind: &str, item: &str, any: &str| {
            if item == ANY_GRANTED {
                format!("{kind} ({any})")
            } else {
                format!("{kind} {item}")
            }
        };
        let mut missing = Vec::new();
        for path in &self.fs_read {
            if !under(path, &[&granted.fs_read, &granted.fs_write]) {
                missing.push(named("fs_read", path, "any granted root"));
            }
        }
        for path in &self.fs_write {
            if !under(path, &[&granted.fs_write]) {
                missing.push(named("fs_write", path, "any granted root"));
            }
        }
        for name in &self.env {
            if !granted.env.contains(name) {
                missing.push(format!("env {name}"));
            }
        }
        for host in &self.net {
            let covered = if host == ANY_GRANTED {
                some(&[&granted.net])
            } else {
                let bare = host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h);
                granted.net.iter().any(|g| g == host || g == bare)
            };
            if !covered {
                missing.push(named("net", host, "any granted host"));
            }
        }
        if self.subprocess && !granted.subprocess {
            missing.push("subprocess".to_string());
        }
        missing
    }
}

/// One tool in a [`Manifest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolManifest {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of its arguments object.
    #[serde(default = "empty_object_schema")]
    pub parameters: serde_json::Value,
    /// A name for people (MCP's `title`). Added in ABI 1's second JSON revision; a host of the
    /// first revision ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Hints about the tool's behaviour, a JSON object in MCP's `annotations` shape
    /// (`{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
    /// "openWorldHint": false}`). Second JSON revision; ignored by older hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<serde_json::Value>,
    /// The JSON Schema of the tool's structured result (MCP's `outputSchema`, an object
    /// schema). A tool that declares one returns a [`Part::Structured`](crate::Part::Structured)
    /// matching it with every success; the host refuses a success that does not. Second JSON
    /// revision; ignored by older hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
}

fn empty_object_schema() -> serde_json::Value {
    serde_json::json!({"type": "object"})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(f: impl FnOnce(&mut Capabilities)) -> Capabilities {
        let mut c = Capabilities::default();
        f(&mut c);
        c
    }

    #[test]
    fn a_path_under_a_granted_root_is_covered_and_a_sibling_is_not() {
        let granted = caps(|c| c.fs_read = vec!["/srv/data".into()]);
        assert!(
            caps(|c| c.fs_read = vec!["/srv/data/a".into()])
                .missing_from(&granted)
                .is_empty()
        );
        assert_eq!(
            caps(|c| c.fs_read = vec!["/srv/database".into()]).missing_from(&granted),
            ["fs_read /srv/database"]
        );
    }

    #[test]
    fn a_write_grant_covers_reading_but_a_read_grant_does_not_cover_writing() {
        let granted = caps(|c| c.fs_write = vec!["/tmp/out".into()]);
        assert!(
            caps(|c| c.fs_read = vec!["/tmp/out".into()])
                .missing_from(&granted)
                .is_empty()
        );
        let granted = caps(|c| c.fs_read = vec!["/tmp/out".into()]);
        assert_eq!(
            caps(|c| c.fs_write = vec!["/tmp/out".into()]).missing_from(&granted),
            ["fs_write /tmp/out"]
        );
    }

    #[test]
    fn a_bare_host_grant_covers_every_port_but_not_the_reverse() {
        let any_port = caps(|c| c.net = vec!["example.com".into()]);
        assert!(
            caps(|c| c.net = vec!["example.com:443".into()])
                .missing_from(&any_port)
                .is_empty()
        );
        let one_port = caps(|c| c.net = vec!["example.com:443".into()]);
        assert_eq!(
            caps(|c| c.net = vec!["example.com".into()]).missing_from(&one_port),
            ["net example.com"]
        );
    }

    #[test]
    fn any_host_is_covered_by_one_granted_host() {
        let asked = caps(|c| c.net = vec![ANY_GRANTED.into()]);
        let granted = caps(|c| c.net = vec!["127.0.0.1:8080".into()]);
        assert!(asked.missing_from(&granted).is_empty());
    }

    #[test]
    fn any_host_is_missing_when_no_host_is_granted() {
        let asked = caps(|c| c.net = vec![ANY_GRANTED.into()]);
        let granted = caps(|c| c.fs_read = vec!["/srv".into()]);
        assert_eq!(asked.missing_from(&granted), ["net (any granted host)"]);
    }

    #[test]
    fn a_star_grant_covers_neither_any_host_nor_a_named_one() {
        let granted = caps(|c| c.net = vec![ANY_GRANTED.into()]);
        let asked = caps(|c| c.net = vec![ANY_GRANTED.into(), "example.com".into()]);
        assert_eq!(
            asked.missing_from(&granted),
            ["net (any granted host)", "net example.com"]
        );
    }

    #[test]
    fn any_root_to_read_is_covered_by_a_read_or_a_write_grant() {
        let asked = caps(|c| c.fs_read = vec![ANY_GRANTED.into()]);
        assert!(
            asked
                .missing_from(&caps(|c| c.fs_read = vec!["/srv/db".into()]))
                .is_empty()
        );
        assert!(
            asked
                .missing_from(&caps(|c| c.fs_write = vec!["/tmp".into()]))
                .is_empty()
        );
        assert_eq!(
            asked.missing_from(&Capabilities::default()),
            ["fs_read (any granted root)"]
        );
    }

    #[test]
    fn a_named_root_is_not_covered_by_a_star_grant() {
        let granted = caps(|c| c.fs_read = vec![ANY_GRANTED.into()]);
        assert_eq!(
            caps(|c| c.fs_read = vec!["/etc".into()]).missing_from(&granted),
            ["fs_read /etc"]
        );
    }

    #[test]
    fn everything_missing_is_listed_in_order() {
        let asked = caps(|c| {
            c.env = vec!["HOME".into(), "TOKEN".into()];
            c.subprocess = true;
        });
        let granted = caps(|c| c.env = vec!["HOME".into()]);
        assert_eq!(asked.missing_from(&granted), ["env TOKEN", "subprocess"]);
    }

    #[test]
    fn a_manifest_without_capabilities_asks_for_nothing() {
        let m: Manifest =
            serde_json::from_str(r#"{"name": "p", "version": "1", "tools": []}"#).expect("parses");
        assert!(m.capabilities.is_empty());
    }

    #[test]
    fn tool_manifest_without_parameters_gets_an_empty_object_schema() {
        let tool: ToolManifest = serde_json::from_str(r#"{"name": "t"}"#).unwrap();
        assert_eq!(tool.parameters, serde_json::json!({"type": "object"}));
        assert_eq!(tool.description, "");
        assert_eq!(
            (tool.title, tool.annotations, tool.output_schema),
            (None, None, None)
        );
    }

    #[test]
    fn a_first_revision_manifest_writes_no_new_fields() {
        let tool: ToolManifest = serde_json::from_str(r#"{"name": "t"}"#).unwrap();
        let json = serde_json::to_value(&tool).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"name": "t", "description": "", "parameters": {"type": "object"}})
        );
    }
}
