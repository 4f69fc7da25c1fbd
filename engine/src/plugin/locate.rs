//! Where a plugin of a policy comes from: a library file (`path:`, or `name:` found in the
//! plugin directories) or, when no library of that name is installed, the plugin of that name
//! built into this program ([`toolgate_plugin_api::builtin`]). A library always wins over a
//! built-in, and the log says which one is used.

use std::path::PathBuf;

use toolgate_plugin_api::{Builtin, builtin, library_file_name};
use toolgate_policy::{PluginLocation, PluginSpec};

use crate::error::{At, BuildError, PLUGIN_PATH_ENV, PluginNotFound};

/// A plugin spec's library, or its built-in (then `path` is `built-in:NAME`, for messages).
pub(crate) struct Located {
    pub path: PathBuf,
    pub builtin: Option<&'static Builtin>,
}

/// Where a plugin named `name` may be: the directories of `TOOLGATE_PLUGIN_PATH`, then beside
/// the running program and in its parent directory (test binaries live in `target/*/deps`).
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os(PLUGIN_PATH_ENV)
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        dirs.push(dir.to_path_buf());
        if let Some(parent) = dir.parent() {
            dirs.push(parent.to_path_buf());
        }
    }
    dirs
}

/// The library or built-in of a plugin spec.
pub(crate) fn locate(spec: &PluginSpec) -> Result<Located, BuildError> {
    let name = match &spec.location {
        PluginLocation::Path(path) => {
            tracing::info!(path = %path.display(), "plugin library named by path:");
            return Ok(Located {
                path: path.clone(),
                builtin: None,
            });
        }
        PluginLocation::Name(name) => name,
    };
    let lib_name = format!("toolgate_plugin_{}", name.replace('-', "_"));
    let file = library_file_name(&lib_name);
    let dirs = search_dirs();
    let library = dirs.iter().map(|d| d.join(&file)).find(|p| p.is_file());
    match (library, builtin::find(name)) {
        (Some(path), built_in) => {
            if built_in.is_some() {
                tracing::info!(
                    plugin = %name,
                    path = %path.display(),
                    "plugin library used instead of the built-in plugin of the same name"
                );
            } else {
                tracing::info!(plugin = %name, path = %path.display(), "plugin library");
            }
            Ok(Located {
                path,
                builtin: None,
            })
        }
        (None, Some(built_in)) => {
            tracing::info!(
                plugin = %name,
                "built-in plugin used (no {file} in the plugin directories)"
            );
            Ok(Located {
                path: PathBuf::from(format!("built-in:{}", built_in.name())),
                builtin: Some(built_in),
            })
        }
        (None, None) => Err(BuildError::Plugin {
            path: file.clone(),
            source: Box::new(not_found(name, &file, dirs).into()),
            at: At(spec.position.clone()),
        }),
    }
}

/// Why `name:` found no library and no built-in: the file looked for, where, and the plugins
/// that are there or built in, the ones named most like it first.
fn not_found(name: &str, file: &str, dirs: Vec<PathBuf>) -> PluginNotFound {
    let mut installed = installed_plugins(&dirs);
    for built_in in builtin::installed() {
        if !installed.iter().any(|(known, _)| known == built_in.name()) {
            installed.push((built_in.name().to_string(), PathBuf::from("built in")));
        }
    }
    installed.sort();
    let nearest = crate::registry::closest(name, installed.iter().map(|(p, _)| p.as_str()), 3)
        .iter()
        .filter_map(|near| installed.iter().find(|(plugin, _)| plugin == near))
        .cloned()
        .collect();
    PluginNotFound {
        name: name.to_string(),
        file: file.to_string(),
        dirs,
        nearest,
        installed: installed.into_iter().map(|(plugin, _)| plugin).collect(),
    }
}

/// The plugin libraries in `dirs`: each as the `name:` that loads it and its path, by name.
/// A plugin in several directories is listed once, from the first (the one `name:` loads).
fn installed_plugins(dirs: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let prefix = format!("{}toolgate_plugin_", std::env::consts::DLL_PREFIX);
    let suffix = std::env::consts::DLL_SUFFIX;
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(plugin) = file_name
                .to_str()
                .and_then(|f| f.strip_prefix(&prefix))
                .and_then(|f| f.strip_suffix(suffix))
                .filter(|p| !p.is_empty())
            else {
                continue;
            };
            let path = entry.path();
            if path.is_file() && !found.iter().any(|(known, _)| known == plugin) {
                found.push((plugin.to_string(), path));
            }
        }
    }
    found.sort();
    found
}
