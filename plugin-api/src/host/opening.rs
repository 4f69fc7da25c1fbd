//! Reading what a plugin says while it loads: its manifest, and `init`'s answer. Every buffer
//! the plugin fills is checked against [`MAX_MANIFEST_BYTES`] before a byte of it is read.

use std::ffi::c_void;
use std::path::Path;
use std::ptr::NonNull;

use crate::abi::{OwnedBuf, PluginVTable, STATUS_OK, STATUS_PANIC, StrRef};
use crate::bounds::{self, MAX_MANIFEST_BYTES, TooLong};
use crate::load_error::{LoadError, ManifestProblem, TableProblem};
use crate::manifest::Manifest;

/// Calls a table function that fills one buffer, and returns its status and bytes, or only
/// the length it reported when that is over [`MAX_MANIFEST_BYTES`] (nothing is read then).
fn fill(
    table: &PluginVTable,
    call: impl FnOnce(*mut OwnedBuf) -> u32,
) -> (u32, Result<Vec<u8>, TooLong>) {
    let mut out = OwnedBuf::EMPTY;
    let status = call(&mut out);
    // SAFETY: the plugin wrote `out` (or left it empty); it is copied, then freed by the plugin.
    let bytes = unsafe { bounds::owned_bytes(&out, MAX_MANIFEST_BYTES) }.map(<[u8]>::to_vec);
    // SAFETY: written by this plugin, not used again.
    unsafe { (table.free_buf)(out) };
    (status, bytes)
}

/// A message from the plugin as text, or what it was when it was too long to read.
fn message(bytes: &Result<Vec<u8>, TooLong>) -> String {
    match bytes {
        Ok(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Err(too_long) => format!("(a message of {too_long}, not read)"),
    }
}

pub(super) fn read_manifest(table: &PluginVTable, path: &Path) -> Result<Manifest, LoadError> {
    // SAFETY: `out` is a valid out-parameter for the duration of the call.
    let (status, bytes) = fill(table, |out| unsafe { (table.manifest)(out) });
    let text = || message(&bytes);
    match status {
        STATUS_OK => {}
        STATUS_PANIC => {
            return Err(LoadError::Panicked {
                path: path.to_path_buf(),
                plugin: "(unknown)".to_string(),
                during: "describing itself",
                message: text(),
            });
        }
        other => {
            return Err(LoadError::BadManifest {
                path: path.to_path_buf(),
                problem: ManifestProblem::Failed {
                    status: other,
                    message: text(),
                },
            });
        }
    }
    let bad = |problem: ManifestProblem| LoadError::BadManifest {
        path: path.to_path_buf(),
        problem,
    };
    let bytes = bytes.map_err(|too_long| bad(ManifestProblem::TooLong(too_long)))?;
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|err| bad(ManifestProblem::Json(err)))?;
    validate_manifest(&manifest).map_err(bad)?;
    Ok(manifest)
}

/// Checks what the host relies on: a name, and tools with distinct non-blank names and object
/// schemas. (The engine checks the model-facing name rules itself.)
fn validate_manifest(manifest: &Manifest) -> Result<(), ManifestProblem> {
    if manifest.name.trim().is_empty() {
        return Err(ManifestProblem::BlankName);
    }
    let mut seen = std::collections::HashSet::new();
    for tool in &manifest.tools {
        if tool.name.trim().is_empty() {
            return Err(ManifestProblem::BlankToolName);
        }
        if !seen.insert(tool.name.as_str()) {
            return Err(ManifestProblem::DuplicateTool {
                name: tool.name.clone(),
            });
        }
        if !tool.parameters.is_object() {
            return Err(ManifestProblem::ParametersNotObject {
                tool: tool.name.clone(),
            });
        }
        if tool.output_schema.as_ref().is_some_and(|s| !s.is_object()) {
            return Err(ManifestProblem::NotAnObject {
                tool: tool.name.clone(),
                field: "output_schema",
            });
        }
        if tool.annotations.as_ref().is_some_and(|a| !a.is_object()) {
            return Err(ManifestProblem::NotAnObject {
                tool: tool.name.clone(),
                field: "annotations",
            });
        }
    }
    Ok(())
}

pub(super) fn start(
    table: &PluginVTable,
    path: &Path,
    plugin: &str,
    config: &serde_json::Value,
) -> Result<NonNull<c_void>, LoadError> {
    let config = config.to_string();
    let mut instance: *mut c_void = std::ptr::null_mut();
    // SAFETY: every pointer passed lives until the call returns.
    let (status, bytes) = fill(table, |error| unsafe {
        (table.init)(StrRef::new(&config), &mut instance, error)
    });
    let message = || message(&bytes);
    match status {
        STATUS_OK => NonNull::new(instance).ok_or_else(|| LoadError::BadTable {
            path: path.to_path_buf(),
            problem: TableProblem::NullInstance,
        }),
        STATUS_PANIC => Err(LoadError::Panicked {
            path: path.to_path_buf(),
            plugin: plugin.to_string(),
            during: "starting",
            message: message(),
        }),
        _ => Err(LoadError::InitFailed {
            path: path.to_path_buf(),
            plugin: plugin.to_string(),
            message: message(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{Capabilities, ToolManifest};

    fn manifest(tools: &[(&str, serde_json::Value)]) -> Manifest {
        Manifest {
            capabilities: Capabilities::default(),
            config_paths: Vec::new(),
            name: "p".into(),
            version: "1".into(),
            tools: tools
                .iter()
                .map(|(name, parameters)| ToolManifest {
                    name: (*name).into(),
                    description: String::new(),
                    parameters: parameters.clone(),
                    title: None,
                    annotations: None,
                    output_schema: None,
                })
                .collect(),
        }
    }

    #[test]
    fn a_manifest_listing_a_tool_twice_is_rejected() {
        let m = manifest(&[("a", serde_json::json!({})), ("a", serde_json::json!({}))]);
        assert!(matches!(
            validate_manifest(&m),
            Err(ManifestProblem::DuplicateTool { name }) if name == "a"
        ));
    }

    #[test]
    fn a_manifest_with_a_non_object_schema_is_rejected() {
        let m = manifest(&[("a", serde_json::json!("string"))]);
        assert!(matches!(
            validate_manifest(&m),
            Err(ManifestProblem::ParametersNotObject { tool }) if tool == "a"
        ));
    }

    #[test]
    fn a_manifest_with_an_output_schema_that_is_not_an_object_is_rejected() {
        let mut m = manifest(&[("a", serde_json::json!({}))]);
        m.tools[0].output_schema = Some(serde_json::json!(["not", "a", "schema"]));
        assert!(matches!(
            validate_manifest(&m),
            Err(ManifestProblem::NotAnObject { tool, field: "output_schema" }) if tool == "a"
        ));
    }
}
