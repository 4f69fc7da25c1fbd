//! `fs`: a toolgate plugin that lets an agent read files under one directory, and nothing else.
//!
//! # Configuration
//!
//! ```yaml
//! plugins:
//!   - path: /usr/lib/toolgate/libtoolgate_plugin_fs.so
//!     config: {root: /srv/docs}
//! ```
//!
//! `root` is required and must be an existing directory; the plugin refuses to start otherwise.
//!
//! # Tools
//!
//! | tool | arguments | result |
//! |---|---|---|
//! | `fs.read_file` | `{path, offset?, limit?}` | the file's text, from line `offset` (1-based, default 1), at most `limit` lines (default 2000, at most 10000) and 1 MiB |
//! | `fs.list_dir` | `{path?}` | the entries of a directory (default: the root), sorted: `name/` for directories, `name@` for symbolic links, `name (N bytes)` for files |
//! | `fs.stat` | `{path}` | a JSON object: path, type, size, modified (Unix seconds), readonly |
//! | `fs.find` | `{pattern, path?}` | the paths under `path` (default: the root) whose file name matches `pattern` (`*` any run of characters, `?` one character), sorted, at most 1000 |
//!
//! Paths are relative to the root (an absolute path is accepted only if it lies under the
//! root), and every path in a result is relative to the root.
//!
//! # Confinement
//!
//! Every path is checked twice. First by its text: `..` may not climb above the root, and an
//! absolute path must lie under it. Then on disk: the path is canonicalized (every symbolic
//! link resolved) and must still lie under the canonical root, so a link that points outside
//! the root cannot be followed. `fs.find` never follows links while walking. Either failure is
//! the error "path escapes the root". The tools only read; none writes, creates or deletes.
//!
//! A check-then-open design cannot stop a process that swaps a directory for a link between the
//! check and the open; the root should not be writable by anyone the agent should not trust.

use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::{Component, Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::Deserialize;
use toolgate_plugin_api::{CallContext, Tool, ToolError, ToolOutput, json};

/// Lines `fs.read_file` returns when no `limit` is given.
pub const DEFAULT_READ_LINES: usize = 2000;
/// The most lines one `fs.read_file` call returns.
pub const MAX_READ_LINES: usize = 10_000;
/// The most bytes of file content one `fs.read_file` call returns.
pub const MAX_READ_BYTES: usize = 1024 * 1024;
/// The most entries `fs.list_dir` returns.
pub const MAX_LIST_ENTRIES: usize = 10_000;
/// The most paths `fs.find` returns.
pub const MAX_FIND_RESULTS: usize = 1000;
/// How deep `fs.find` descends below its starting directory.
pub const MAX_FIND_DEPTH: usize = 64;

/// The plugin's configuration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsConfig {
    /// The directory the tools are confined to.
    pub root: Option<PathBuf>,
}

/// The started plugin: the canonical root.
#[derive(Debug)]
pub struct FsState {
    root: PathBuf,
}

impl FsState {
    /// Starts the plugin on `root`, which must be an existing directory.
    pub fn new(root: &Path) -> Result<FsState, String> {
        let canonical = fs::canonicalize(root).map_err(|err| {
            if err.kind() == std::io::ErrorKind::NotFound {
                format!("root directory {} does not exist", root.display())
            } else {
                format!("root directory {} cannot be used: {err}", root.display())
            }
        })?;
        if !canonical.is_dir() {
            return Err(format!("root {} is not a directory", root.display()));
        }
        Ok(FsState { root: canonical })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path from the model to an existing location under the root, or says why not.
    pub fn resolve(&self, path: &str) -> Result<Resolved, ToolError> {
        if path.contains('\0') {
            return Err(ToolError::new("the path contains a NUL character"));
        }
        let lexical = lexical_join(&self.root, Path::new(path))
            .filter(|joined| joined.starts_with(&self.root))
            .ok_or_else(|| escapes(path))?;
        let canonical = fs::canonicalize(&lexical).map_err(|err| {
            if err.kind() == std::io::ErrorKind::NotFound {
                ToolError::new(format!("no such file or directory: {path}"))
            } else {
                ToolError::new(format!("cannot access {path}: {err}"))
            }
        })?;
        if !canonical.starts_with(&self.root) {
            return Err(ToolError::new(format!(
                "path escapes the root: {path} is a symbolic link (or passes through one) to a \
                 location outside the root directory"
            )));
        }
        let shown = self.show(&canonical);
        Ok(Resolved {
            path: canonical,
            shown,
        })
    }

    /// How a location under the root is shown to the model: relative to the root, `.` for it.
    fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }
}

/// A location under the root.
#[derive(Debug)]
pub struct Resolved {
    /// The canonical path on disk.
    pub path: PathBuf,
    /// The path relative to the root, as the model sees it.
    pub shown: String,
}

fn escapes(path: &str) -> ToolError {
    ToolError::new(format!(
        "path escapes the root: {path} is outside the root directory; give a path relative to it"
    ))
}

/// Joins `path` onto `root` by text alone, resolving `.` and `..`. `None` when `..` climbs
/// above the filesystem root. An absolute `path` replaces `root`.
fn lexical_join(root: &Path, path: &Path) -> Option<PathBuf> {
    let mut out = if path.is_absolute() {
        PathBuf::new()
    } else {
        root.to_path_buf()
    };
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
        }
    }
    Some(out)
}

fn init(config: Option<FsConfig>) -> Result<FsState, String> {
    let root = config.and_then(|config| config.root).ok_or_else(|| {
        "the fs plugin needs a `root` directory in its config, e.g. {\"root\": \"/srv/docs\"}"
            .to_string()
    })?;
    FsState::new(&root)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadFileArgs {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

fn read_file(ctx: &CallContext<FsState>, args: ReadFileArgs) -> Result<ToolOutput, ToolError> {
    let offset = args.offset.unwrap_or(1);
    if offset == 0 {
        return Err(ToolError::new("offset is a line number and starts at 1"));
    }
    let limit = args.limit.unwrap_or(DEFAULT_READ_LINES);
    if limit == 0 || limit > MAX_READ_LINES {
        return Err(ToolError::new(format!(
            "limit must be between 1 and {MAX_READ_LINES} lines"
        )));
    }
    let file = ctx.state().resolve(&args.path)?;
    if file.path.is_dir() {
        return Err(ToolError::new(format!(
            "{} is a directory; use fs.list_dir to see what it holds",
            file.shown
        )));
    }
    let mut reader = BufReader::new(File::open(&file.path)?);
    let mut content = Vec::new();
    let mut line = Vec::new();
    let mut line_no = 0_usize;
    let mut taken = 0_usize;
    let mut more = false;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        line_no += 1;
        if line_no < offset {
            continue;
        }
        if taken == limit {
            more = true;
            break;
        }
        let room = MAX_READ_BYTES - content.len();
        if line.len() > room {
            content.extend_from_slice(&line[..room]);
            more = true;
            break;
        }
        content.extend_from_slice(&line);
        taken += 1;
        if taken.is_multiple_of(1024) {
            ctx.check_cancelled()?;
        }
    }
    if taken == 0 && !more && offset > 1 {
        return Err(ToolError::new(format!(
            "offset {offset} is past the end of {}, which has {line_no} lines",
            file.shown
        )));
    }

    let mut text = match String::from_utf8(content) {
        Ok(text) => text,
        Err(err) => {
            let mut text = String::from_utf8_lossy(err.as_bytes()).into_owned();
            push_note(
                &mut text,
                "[note: the file is not valid UTF-8; invalid bytes are shown as U+FFFD]",
            );
            text
        }
    };
    if more {
        let last = offset + taken;
        push_note(
            &mut text,
            &format!(
                "[showing lines {offset}-{}; more follow: continue with offset={last}]",
                last - 1
            ),
        );
    }
    Ok(ToolOutput::text(text))
}

/// Appends a note on its own line.
fn push_note(text: &mut String, note: &str) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(note);
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListDirArgs {
    path: Option<String>,
}

fn list_dir(ctx: &CallContext<FsState>, args: ListDirArgs) -> Result<ToolOutput, ToolError> {
    let dir = ctx.state().resolve(args.path.as_deref().unwrap_or("."))?;
    if !dir.path.is_dir() {
        return Err(ToolError::new(format!("{} is not a directory", dir.shown)));
    }
    let mut entries = Vec::new();
    for entry in fs::read_dir(&dir.path)? {
        let entry = entry?;
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
struct StatArgs {
    path: String,
}

fn stat(ctx: &CallContext<FsState>, args: StatArgs) -> Result<ToolOutput, ToolError> {
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FindArgs {
    pattern: String,
    path: Option<String>,
}

fn find(ctx: &CallContext<FsState>, args: FindArgs) -> Result<ToolOutput, ToolError> {
    if args.pattern.is_empty() {
        return Err(ToolError::new(
            "pattern must not be empty; use * to match every name",
        ));
    }
    let pattern: Vec<char> = args.pattern.chars().collect();
    let start = ctx.state().resolve(args.path.as_deref().unwrap_or("."))?;
    if !start.path.is_dir() {
        return Err(ToolError::new(format!(
            "{} is not a directory",
            start.shown
        )));
    }
    let mut found = Vec::new();
    let mut truncated = false;
    let mut stack = vec![(start.path.clone(), 0_usize)];
    'walk: while let Some((dir, depth)) = stack.pop() {
        ctx.check_cancelled()?;
        // A directory we cannot read is skipped, not fatal: the rest of the tree still counts.
        let Ok(read) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if glob_match(&pattern, &name) {
                if found.len() == MAX_FIND_RESULTS {
                    truncated = true;
                    break 'walk;
                }
                found.push(ctx.state().show(&path));
            }
            // `file_type` does not follow symbolic links, so the walk never leaves the root.
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) && depth < MAX_FIND_DEPTH {
                stack.push((path, depth + 1));
            }
        }
    }
    found.sort();
    if found.is_empty() {
        return Ok(ToolOutput::text(format!(
            "no names match {} under {}",
            args.pattern, start.shown
        )));
    }
    let mut text = found.join("\n");
    if truncated {
        push_note(
            &mut text,
            &format!("[stopped at {MAX_FIND_RESULTS} matches; use a narrower pattern or path]"),
        );
    }
    Ok(ToolOutput::text(text))
}

/// Whether `name` matches the glob `pattern`: `*` matches any run of characters (none
/// included), `?` exactly one, anything else itself.
pub fn glob_match(pattern: &[char], name: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    let (mut p, mut n) = (0, 0);
    // Where the last `*` was, and where in the name it started matching.
    let mut backtrack: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                backtrack = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match backtrack {
                Some((star, from)) => {
                    p = star + 1;
                    n = from + 1;
                    backtrack = Some((star, from + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

toolgate_plugin_api::export_plugin! {
    name: "fs",
    version: env!("CARGO_PKG_VERSION"),
    init: init,
    tools: [
        Tool::new("fs.read_file", read_file)
            .description(
                "Read a text file under the root directory, by lines. Long files come in pages: \
                 the result ends with the offset to continue from.",
            )
            .parameters(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file, relative to the root."},
                    "offset": {"type": "integer", "minimum": 1,
                               "description": "The first line to read, from 1. Default 1."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_READ_LINES,
                              "description": "How many lines to read. Default 2000."}
                },
                "required": ["path"],
                "additionalProperties": false
            })),
        Tool::new("fs.list_dir", list_dir)
            .description(
                "List a directory under the root: `name/` for directories, `name@` for \
                 symbolic links, `name (N bytes)` for files.",
            )
            .parameters(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string",
                             "description": "The directory, relative to the root. Default: the root."}
                },
                "additionalProperties": false
            })),
        Tool::new("fs.stat", stat)
            .description("Describe a file or directory under the root: type, size, modification time.")
            .parameters(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The path, relative to the root."}
                },
                "required": ["path"],
                "additionalProperties": false
            })),
        Tool::new("fs.find", find)
            .description(
                "Find files and directories whose name matches a pattern (`*` any characters, \
                 `?` one character), searching a directory under the root recursively.",
            )
            .parameters(json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "A file name pattern, such as `*.md`."},
                    "path": {"type": "string",
                             "description": "Where to search, relative to the root. Default: the root."}
                },
                "required": ["pattern"],
                "additionalProperties": false
            })),
    ],
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, name: &str) -> bool {
        glob_match(&pattern.chars().collect::<Vec<_>>(), name)
    }

    #[test]
    fn star_matches_any_run_of_characters_including_none() {
        assert!(matches("*.md", "README.md"));
        assert!(matches("*.md", ".md"));
        assert!(matches("a*b*c", "aXXbYYc"));
        assert!(!matches("*.md", "README.mdx"));
    }

    #[test]
    fn question_mark_matches_exactly_one_character() {
        assert!(matches("?.rs", "a.rs"));
        assert!(!matches("?.rs", "ab.rs"));
        assert!(!matches("?.rs", ".rs"));
    }

    #[test]
    fn literal_patterns_match_only_themselves() {
        assert!(matches("Cargo.toml", "Cargo.toml"));
        assert!(!matches("Cargo.toml", "cargo.toml"));
    }

    #[test]
    fn lexical_join_resolves_dot_dot_within_the_path() {
        let joined = lexical_join(Path::new("/r"), Path::new("a/../b/./c")).expect("joins");
        assert_eq!(joined, Path::new("/r/b/c"));
    }

    #[test]
    fn lexical_join_lets_dot_dot_climb_out_so_the_prefix_check_catches_it() {
        let joined = lexical_join(Path::new("/r"), Path::new("../etc")).expect("joins");
        assert!(!joined.starts_with("/r"));
    }

    #[test]
    fn lexical_join_with_an_absolute_path_replaces_the_root() {
        let joined = lexical_join(Path::new("/r"), Path::new("/etc/passwd")).expect("joins");
        assert_eq!(joined, Path::new("/etc/passwd"));
    }

    #[test]
    fn init_without_a_root_says_the_root_is_needed() {
        let err = init(None).expect_err("fails");
        assert!(err.contains("needs a `root` directory"), "{err}");
    }

    #[test]
    fn init_with_a_file_as_root_says_it_is_not_a_directory() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        let err = FsState::new(file.path()).expect_err("fails");
        assert!(err.ends_with("is not a directory"), "{err}");
    }

    #[test]
    fn resolve_shows_paths_relative_to_the_root() {
        let dir = tempfile::tempdir().expect("temp dir");
        fs::create_dir(dir.path().join("sub")).expect("mkdir");
        let state = FsState::new(dir.path()).expect("starts");
        assert_eq!(state.resolve("sub/.").expect("resolves").shown, "sub");
        assert_eq!(state.resolve(".").expect("resolves").shown, ".");
    }

    #[test]
    fn resolve_rejects_dot_dot_that_leaves_the_root() {
        let dir = tempfile::tempdir().expect("temp dir");
        let state = FsState::new(dir.path()).expect("starts");
        let err = state.resolve("../x").expect_err("escapes");
        assert!(err.message().starts_with("path escapes the root"), "{err}");
    }
}
