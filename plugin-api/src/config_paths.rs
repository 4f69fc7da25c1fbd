//! The paths in a plugin's configuration, resolved as every other relative path of a policy:
//! against the policy file's folder, not the folder the host happens to run in.
//!
//! A plugin names the keys that hold paths in its manifest (`config_paths`, the fs plugin's
//! `["root"]`), and the host calls [`resolve_config_paths`] on the configuration before `init`.
//! An MCP host may start `toolgate serve` in `/`: the policy's `root: .` must then still mean the
//! policy's folder, and the whole filesystem is given only to a policy that writes `/`.

use std::path::{Component, Path, PathBuf};

/// A relative path in a plugin's configuration that would give the plugin the filesystem root.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{key}: {written}` resolves to / (the whole filesystem) from the policy's folder {}; \
     write `{key}: /` if that is what you mean",
    base.display()
)]
pub struct ConfigPathError {
    /// The configuration key.
    pub key: String,
    /// The relative path as the policy writes it.
    pub written: String,
    /// The folder it was resolved against.
    pub base: PathBuf,
}

/// Resolves the relative paths of `config` at the top-level `keys` against `base` (the policy
/// file's folder), in place: each becomes an absolute path with `.` and `..` taken out. An
/// absolute path, a key that is not there and a value that is not a string are left for the
/// plugin to judge.
///
/// ```
/// # use std::path::Path;
/// use toolgate_plugin_api::resolve_config_paths;
/// let mut config = serde_json::json!({"root": "./docs", "deny": ["*.pem"]});
/// resolve_config_paths(&["root".to_string()], &mut config, Path::new("/srv/policies"))?;
/// assert_eq!(config["root"], "/srv/policies/docs");
/// # Ok::<(), toolgate_plugin_api::ConfigPathError>(())
/// ```
///
/// # Errors
///
/// [`ConfigPathError`] when a relative path resolves to the filesystem root (`.` in a policy
/// kept in `/`, `../..`): that root must be written as `/`.
pub fn resolve_config_paths(
    keys: &[String],
    config: &mut serde_json::Value,
    base: &Path,
) -> Result<(), ConfigPathError> {
    let Some(map) = config.as_object_mut() else {
        return Ok(());
    };
    for key in keys {
        let Some(serde_json::Value::String(written)) = map.get(key) else {
            continue;
        };
        if Path::new(written).is_absolute() {
            continue;
        }
        let resolved = normalized(&base.join(written));
        if resolved.parent().is_none() {
            return Err(ConfigPathError {
                key: key.clone(),
                written: written.clone(),
                base: normalized(base),
            });
        }
        map.insert(
            key.clone(),
            serde_json::Value::String(resolved.display().to_string()),
        );
    }
    Ok(())
}

/// `path` made absolute (against the working directory when it is relative) with `.` and `..`
/// removed by their meaning in the text (`..` at the root stays at the root).
fn normalized(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn root() -> Vec<String> {
        vec!["root".to_string()]
    }

    #[test]
    fn a_dot_root_is_the_policy_folder() {
        let mut config = json!({"root": "."});
        resolve_config_paths(&root(), &mut config, Path::new("/srv/policies")).unwrap();
        assert_eq!(config, json!({"root": "/srv/policies"}));
    }

    #[test]
    fn an_absolute_root_is_kept_as_written() {
        let mut config = json!({"root": "/data/./x"});
        resolve_config_paths(&root(), &mut config, Path::new("/srv")).unwrap();
        assert_eq!(config, json!({"root": "/data/./x"}));
    }

    #[test]
    fn a_written_slash_is_the_filesystem_root() {
        let mut config = json!({"root": "/"});
        resolve_config_paths(&root(), &mut config, Path::new("/")).unwrap();
        assert_eq!(config, json!({"root": "/"}));
    }

    #[test]
    fn a_relative_root_that_reaches_the_filesystem_root_is_refused() {
        let mut config = json!({"root": "."});
        let err = resolve_config_paths(&root(), &mut config, Path::new("/")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`root: .` resolves to / (the whole filesystem) from the policy's folder /; \
             write `root: /` if that is what you mean"
        );
        let mut config = json!({"root": "../.."});
        assert!(resolve_config_paths(&root(), &mut config, Path::new("/srv/p")).is_err());
    }

    #[test]
    fn other_keys_and_other_values_are_left_alone() {
        let mut config = json!({"root": 5, "deny": "."});
        resolve_config_paths(&root(), &mut config, Path::new("/srv")).unwrap();
        assert_eq!(config, json!({"root": 5, "deny": "."}));
        let mut config = json!(null);
        resolve_config_paths(&root(), &mut config, Path::new("/srv")).unwrap();
        assert_eq!(config, json!(null));
    }
}
