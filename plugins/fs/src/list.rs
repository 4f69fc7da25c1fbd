//! `fs.list_dir` and `fs.stat`: what a directory holds, and what a path is.

use std::fs;
use std::time::UNIX_EPOCH;

use serde::Deserialize;
use toolgate_plugin_api::{CallContext, ToolError, ToolOutput, json};

use crate::root::FsState;

/// The most entries `fs.list_dir` returns.
pub const MAX_LIST_ENTRIES: usize = 10_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListDirArgs {
    path: Option<String>,
}

pub(crate) fn list_dir(
    ctx: &CallContext<FsState>,
    args: ListDirArgs,
) -> Result<ToolOutput, ToolError> {
    let dir = ctx.state().resolve(args.path.as_deref().unwrap_or("."))?;
    if !dir.path.is_dir() {
        return Err(ToolError::new(format!("{} is not a directory", dir.shown)));
    }
    let mut entries = Vec::new();
    for entry in fs::read_dir(&dir.path)? {
        let entry = entry?;
        // A denied entry is left out, as if it were not there.
        if ctx.state().hides(&entry) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type()?;
        let line = if kind.is_symlink() {
            format!("{name}@")
        } else if kind.is_dir() {
            format!("{name}/")
        } else {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            format!("{name} ({size} bytes)")
        };
        entries.push((name, line));
    }
    entries.sort();
    if entries.is_empty() {
        return Ok(ToolOutput::text(format!("{} is empty", dir.shown)));
    }
    let total = entries.len();
    let mut text: Vec<String> = entries
        .into_iter()
        .take(MAX_LIST_ENTRIES)
        .map(|(_, line)| line)
        .collect();
    if total > MAX_LIST_ENTRIES {
        text.push(format!(
            "[showing {MAX_LIST_ENTRIES} of {total} entries; use fs.find to narrow down]"
        ));
    }
    Ok(ToolOutput::text(text.join("\n")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatArgs {
    path: String,
}

pub(crate) fn stat(ctx: &CallContext<FsState>, args: StatArgs) -> Result<ToolOutput, ToolError> {
    let target = ctx.state().resolve(&args.path)?;
    let meta = fs::metadata(&target.path)?;
    let kind = if meta.is_dir() {
        "directory"
    } else if meta.is_file() {
        "file"
    } else {
        "other"
    };
    let modified = meta
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map(|since| since.as_secs());
    let info = json!({
        "path": target.shown,
        "type": kind,
        "size": meta.len(),
        "modified": modified,
        "readonly": meta.permissions().readonly(),
    });
    Ok(ToolOutput::text(info.to_string()))
}
