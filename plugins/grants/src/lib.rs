//! The grants a toolgate policy gives a plugin, as the plugin reads them from its configuration,
//! and the two checks the `http` and `sqlite` plugins make against them.
//!
//! Until plugin manifests declare capabilities and the engine hands the granted ones over, a
//! plugin reads its grants from the config key `grants`, in exactly this shape (every key
//! optional):
//!
//! ```json
//! {"fs_read": ["/srv/data"], "fs_write": [], "env": ["HOME"],
//!  "net": ["api.example.com", "127.0.0.1:8080"], "subprocess": false}
//! ```
//!
//! A plugin puts `#[serde(default)] grants: Grants` in its configuration type, so a
//! configuration without `grants` grants nothing: every check is refused. An unknown key in
//! `grants` is an error, so a misspelt grant (`"fs_reads"`) stops the plugin at load time
//! instead of silently granting nothing.
//!
//! This crate is small on purpose and shared only by this workspace's `http` and `sqlite`
//! plugins; it is not part of the plugin API.

#![warn(missing_docs)]

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// What the policy granted a plugin: the value of its config key `grants`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    /// Files and directories the plugin may read (a directory grants everything under it).
    #[serde(default)]
    pub fs_read: Vec<PathBuf>,
    /// Files and directories the plugin may write.
    #[serde(default)]
    pub fs_write: Vec<PathBuf>,
    /// Environment variables the plugin may read.
    #[serde(default)]
    pub env: Vec<String>,
    /// Network hosts the plugin may connect to: `host` (any port) or `host:port`; an IPv6
    /// address is written in brackets, `[::1]:8080`.
    #[serde(default)]
    pub net: Vec<String>,
    /// Whether the plugin may start processes.
    #[serde(default)]
    pub subprocess: bool,
}

/// Why a request is refused by the grants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    /// The host (and port) is not in `net`.
    #[error(
        "host {host}:{port} is not granted (granted: {granted}); the policy must list it under the plugin's `grants.net`"
    )]
    HostNotGranted {
        /// The host asked for, lowercase.
        host: String,
        /// The port asked for.
        port: u16,
        /// The `net` entries, comma-separated, or `nothing`.
        granted: String,
    },
    /// The path, once resolved, is not under any `fs_read` entry.
    #[error(
        "{path} is not under a granted path (granted for reading: {granted}); the policy must list it, or a folder above it, under the plugin's `grants.fs_read`"
    )]
    PathNotGranted {
        /// The path as resolved.
        path: PathBuf,
        /// The `fs_read` entries, comma-separated, or `nothing`.
        granted: String,
    },
}

impl Grants {
    /// `Ok` when `net` grants a connection to `host` on `port`: an entry equal to `host`
    /// (any port) or to `host:port`. Host names compare without regard to case; no wildcard,
    /// no subdomain matching.
    ///
    /// # Errors
    ///
    /// [`GrantError::HostNotGranted`] otherwise.
    pub fn check_net(&self, host: &str, port: u16) -> Result<(), GrantError> {
        let host = host.to_ascii_lowercase();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let granted = self.net.iter().any(|entry| {
            let (entry_host, entry_port) = split_host_port(entry);
            entry_host.eq_ignore_ascii_case(host) && entry_port.is_none_or(|p| p == port)
        });
        if granted {
            Ok(())
        } else {
            Err(GrantError::HostNotGranted {
                host: host.to_string(),
                port,
                granted: list(self.net.iter().cloned()),
            })
        }
    }

    /// `Ok` when `path` (already canonicalized by the caller) is equal to or under an `fs_read`
    /// entry. Entries are canonicalized here, so a granted folder reached through a symbolic
    /// link still counts; an entry that does not exist grants nothing.
    ///
    /// # Errors
    ///
    /// [`GrantError::PathNotGranted`] otherwise.
    pub fn check_read(&self, path: &Path) -> Result<(), GrantError> {
        let granted = self
            .fs_read
            .iter()
            .any(|entry| std::fs::canonicalize(entry).is_ok_and(|entry| path.starts_with(&entry)));
        if granted {
            Ok(())
        } else {
            Err(GrantError::PathNotGranted {
                path: path.to_path_buf(),
                granted: list(self.fs_read.iter().map(|p| p.display().to_string())),
            })
        }
    }
}

/// `host:port` into its parts; `host` alone has no port. `[v6]:port` and `[v6]` lose their
/// brackets. A part after `:` that is not a port number is kept in the host, which then matches
/// nothing real.
fn split_host_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((host, "")) => (host, None),
            Some((host, port)) => match port.strip_prefix(':').map(str::parse) {
                Some(Ok(port)) => (host, Some(port)),
                _ => (entry, None),
            },
            None => (entry, None),
        };
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(port) => (host, Some(port)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "nothing".to_string()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn grants(value: serde_json::Value) -> Grants {
        serde_json::from_value(value).expect("valid grants")
    }

    #[test]
    fn empty_grants_grant_nothing() {
        let none = grants(json!({}));
        assert_eq!(none, Grants::default());
        assert!(none.check_net("localhost", 80).is_err());
        assert!(none.check_read(Path::new("/")).is_err());
    }

    #[test]
    fn every_documented_key_is_read() {
        let g = grants(
            json!({"fs_read": ["/a"], "fs_write": ["/b"], "env": ["HOME"],
                              "net": ["h"], "subprocess": true}),
        );
        assert_eq!(g.fs_read, [PathBuf::from("/a")]);
        assert_eq!(g.fs_write, [PathBuf::from("/b")]);
        assert_eq!(g.env, ["HOME"]);
        assert_eq!(g.net, ["h"]);
        assert!(g.subprocess);
    }

    #[test]
    fn a_misspelt_grant_key_is_an_error() {
        let err = serde_json::from_value::<Grants>(json!({"fs_reads": ["/a"]})).expect_err("bad");
        assert!(
            err.to_string().contains("unknown field `fs_reads`"),
            "{err}"
        );
    }

    #[test]
    fn a_host_entry_grants_every_port_of_that_host() {
        let g = grants(json!({"net": ["example.com"]}));
        assert!(g.check_net("example.com", 80).is_ok());
        assert!(g.check_net("EXAMPLE.com", 8443).is_ok());
    }

    #[test]
    fn a_host_port_entry_grants_only_that_port() {
        let g = grants(json!({"net": ["127.0.0.1:8080"]}));
        assert!(g.check_net("127.0.0.1", 8080).is_ok());
        let err = g.check_net("127.0.0.1", 8081).expect_err("other port");
        assert_eq!(
            err.to_string(),
            "host 127.0.0.1:8081 is not granted (granted: 127.0.0.1:8080); the policy must list \
             it under the plugin's `grants.net`"
        );
    }

    #[test]
    fn a_subdomain_is_not_granted_by_its_parent() {
        let g = grants(json!({"net": ["example.com"]}));
        assert!(g.check_net("api.example.com", 80).is_err());
        assert!(g.check_net("example.com.evil.test", 80).is_err());
    }

    #[test]
    fn ipv6_entries_are_written_in_brackets() {
        let g = grants(json!({"net": ["[::1]:8080", "[fe80::1]"]}));
        assert!(g.check_net("[::1]", 8080).is_ok());
        assert!(g.check_net("::1", 8080).is_ok());
        assert!(g.check_net("::1", 9090).is_err());
        assert!(g.check_net("fe80::1", 1).is_ok());
    }

    #[test]
    fn a_path_under_a_granted_folder_is_granted_and_one_beside_it_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let granted = dir.path().join("data");
        std::fs::create_dir(&granted).expect("mkdir");
        std::fs::write(granted.join("a.db"), b"").expect("write");
        std::fs::write(dir.path().join("b.db"), b"").expect("write");
        let g = grants(json!({ "fs_read": [granted] }));
        let inside = std::fs::canonicalize(granted.join("a.db")).expect("exists");
        let beside = std::fs::canonicalize(dir.path().join("b.db")).expect("exists");
        assert!(g.check_read(&inside).is_ok());
        assert!(matches!(
            g.check_read(&beside),
            Err(GrantError::PathNotGranted { .. })
        ));
    }

    #[test]
    fn a_granted_file_grants_itself() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("a.db");
        std::fs::write(&file, b"").expect("write");
        let g = grants(json!({ "fs_read": [file] }));
        assert!(
            g.check_read(&std::fs::canonicalize(&file).expect("exists"))
                .is_ok()
        );
    }

    #[test]
    fn a_path_that_only_shares_a_prefix_with_a_granted_folder_is_not_granted() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("data")).expect("mkdir");
        std::fs::create_dir(dir.path().join("data2")).expect("mkdir");
        let g = grants(json!({ "fs_read": [dir.path().join("data")] }));
        let other = std::fs::canonicalize(dir.path().join("data2")).expect("exists");
        assert!(g.check_read(&other).is_err());
    }
}
