//! `fs`: a toolgate plugin that lets an agent read files under one directory, and nothing else.
//!
//! # Configuration
//!
//! ```yaml
//! plugins:
//!   - path: /usr/lib/toolgate/libtoolgate_plugin_fs.so
//!     config: {root: /srv/docs, deny: ["*.pem", ".env", "secrets"]}
//! ```
//!
//! `root` is required and must be an existing directory; the plugin refuses to start otherwise.
//!
//! `deny` (optional) lists globs of paths no tool may touch. They are matched against the path
//! relative to the root after resolution (`.`, `..`, a trailing slash and symbolic links
//! resolved), and against the path as written with `.` and `..` resolved, so every spelling
//! of a path meets them. A glob without `/` matches any name along the path (`.env` denies
//! `sub/.env`); a glob with `/` matches the whole path from the root (`config/*.key`). A path
//! is denied when a glob matches it or any directory above it. Denied entries are left out of
//! `fs.list_dir` and `fs.find`. See [`DenyList`] and `docs/policy.md`.
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
//! A path ending in `/` or `/.` must name a directory: `key.pem/` is refused, as the operating
//! system would refuse it. `fs.read_file` reads only regular files: the type is checked with
//! `stat` before opening (opening a FIFO would block) and again on the file opened
//! non-blocking. It reads in 64 KiB chunks up to its 1 MiB cap, checking for cancellation
//! between chunks, so a file with no newline costs the cap in memory, not the file.
//!
//! A check-then-open design cannot stop a process that swaps a directory for a link between the
//! check and the open; the root should not be writable by anyone the agent should not trust.

use std::fs::{self, File};
use std::io::Read;
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
    /// Globs of paths under the root that no tool may touch (see [`DenyList`]).
    #[serde(default)]
    pub deny: Vec<String>,
}

/// The started plugin: the canonical root and the paths under it that are off limits.
#[derive(Debug)]
pub struct FsState {
    root: PathBuf,
    deny: DenyList,
}

/// The `deny` globs of the configuration, matched against root-relative paths after `.`, `..`
/// and symbolic links are resolved, so that every spelling of a path meets the same globs.
///
/// A glob without `/` is matched against each name along the path: `.env` denies `.env`,
/// `sub/.env` and everything under a directory called `.env`; `*.pem` denies every `.pem`
/// file at any depth. A glob with `/` is matched against the whole path from the root (a
/// leading `/` is allowed and means the same): `secrets/*.key` denies only keys directly in
/// the top-level `secrets`. Either way a path is denied when the glob matches the path or any
/// directory above it, so denying a directory denies all it holds. `*` and `?` never match
/// `/`; `**` matches any number of directories; `[abc]` and `{a,b}` work as usual. On macOS
/// and Windows, whose file systems ignore case, the globs ignore case too.
#[derive(Debug, Default)]
pub struct DenyList {
    /// Globs without `/`, matched against single names, and their text.
    names: Option<(globset::GlobSet, Vec<String>)>,
    /// Globs with `/`, matched against whole root-relative paths, and their text.
    paths: Option<(globset::GlobSet, Vec<String>)>,
}

impl DenyList {
    /// Compiles the globs, or says which one is bad and why.
    pub fn new(globs: &[String]) -> Result<DenyList, String> {
        let mut names = (globset::GlobSetBuilder::new(), Vec::new());
        let mut paths = (globset::GlobSetBuilder::new(), Vec::new());
        for glob in globs {
            let bad = |why: &dyn std::fmt::Display| format!("deny pattern {glob:?}: {why}");
            // A trailing `/` only says "a directory"; a leading one anchors at the root, which
            // a pattern with `/` is anyway.
            let body = glob.trim_end_matches('/');
            let anchored = body.starts_with('/');
            let body = body.trim_start_matches('/');
            if body.is_empty() {
                return Err(bad(&"an empty pattern would deny the whole root"));
            }
            if body.split('/').any(|part| part == "." || part == "..") {
                return Err(bad(
                    &"`.` and `..` never appear in a resolved path; write the path from the root",
                ));
            }
            let compiled = globset::GlobBuilder::new(body)
                .literal_separator(true)
                .case_insensitive(cfg!(any(target_os = "macos", windows)))
                .backslash_escape(true)
                .build()
                .map_err(|err| bad(&err.kind()))?;
            let (set, texts) = if anchored || body.contains('/') {
                &mut paths
            } else {
                &mut names
            };
            set.add(compiled);
            texts.push(glob.clone());
        }
        let build = |(set, texts): (globset::GlobSetBuilder, Vec<String>)| {
            if texts.is_empty() {
                return Ok(None);
            }
            set.build()
                .map(|set| Some((set, texts)))
                .map_err(|err| format!("deny patterns: {err}"))
        };
        Ok(DenyList {
            names: build(names)?,
            paths: build(paths)?,
        })
    }

    /// The glob that denies `relative` (a path relative to the root, without `.` or `..`), if
    /// any.
    pub fn denies(&self, relative: &Path) -> Option<&str> {
        let mut prefix = PathBuf::new();
        for component in relative.components() {
            let Component::Normal(name) = component else {
                continue;
            };
            prefix.push(name);
            if let Some((set, texts)) = &self.names
                && let Some(&i) = set.matches(Path::new(name)).first()
            {
                return Some(&texts[i]);
            }
            if let Some((set, texts)) = &self.paths
                && let Some(&i) = set.matches(&prefix).first()
            {
                return Some(&texts[i]);
            }
        }
        None
    }
}

impl FsState {
    /// Starts the plugin on `root`, which must be an existing directory, with nothing denied.
    pub fn new(root: &Path) -> Result<FsState, String> {
        FsState::with_deny(root, &[])
    }

    /// Starts the plugin on `root` with the `deny` globs of its configuration.
    pub fn with_deny(root: &Path, deny: &[String]) -> Result<FsState, String> {
        let deny = DenyList::new(deny)?;
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
        Ok(FsState {
            root: canonical,
            deny,
        })
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
        // The spelling the model used, with `.` and `..` resolved, is checked before the disk is
        // asked anything, so a denied path is denied whether or not it exists.
        self.check_denied(&lexical)?;
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
        // And where it really leads, every symbolic link resolved.
        self.check_denied(&canonical)?;
        let shown = self.show(&canonical);
        if names_a_directory(path) && !canonical.is_dir() {
            return Err(ToolError::new(format!(
                "{path} ends with a slash (or `/.`), which names a directory, but {shown} is \
                 not a directory; drop the trailing slash to name the file"
            )));
        }
        Ok(Resolved {
            path: canonical,
            shown,
        })
    }

    /// An error when `path` (under the root) is denied by the configuration's `deny` globs.
    fn check_denied(&self, path: &Path) -> Result<(), ToolError> {
        match self.denied(path) {
            Some(glob) => Err(ToolError::new(format!(
                "access denied: {} matches the fs plugin's deny pattern {glob:?}",
                self.show(path)
            ))),
            None => Ok(()),
        }
    }

    /// The deny glob that `path` (under the root) matches, if any.
    fn denied(&self, path: &Path) -> Option<&str> {
        let relative = path.strip_prefix(&self.root).ok()?;
        self.deny.denies(relative)
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

/// Whether `path` ends the way only a directory can: with a separator, `/.` or `/..`. The
/// operating system refuses `key.pem/` for a file; lexical resolution would drop the slash.
fn names_a_directory(path: &str) -> bool {
    let trimmed = path.trim_end_matches(std::path::is_separator);
    if trimmed.len() != path.len() {
        return !trimmed.is_empty();
    }
    let last = trimmed
        .rsplit(std::path::is_separator)
        .next()
        .unwrap_or(trimmed);
    (last == "." || last == "..") && trimmed != last
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
    let (root, deny) = config
        .and_then(|config| Some((config.root?, config.deny)))
        .ok_or_else(|| {
            "the fs plugin needs a `root` directory in its config, e.g. {\"root\": \"/srv/docs\"}"
                .to_string()
        })?;
    FsState::with_deny(&root, &deny)
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
    let mut reader = open_regular(&file)?;
    let mut chunk = vec![0_u8; READ_CHUNK];
    let mut content = Vec::new();
    // Lines begun so far; the one being read is number `lines` when `in_line`.
    let mut lines = 0_usize;
    let mut in_line = false;
    // Whole lines kept; whether the cap cut the text, and whether more follows.
    let mut taken = 0_usize;
    let mut cut = false;
    let mut more = false;
    'read: loop {
        ctx.check_cancelled()?;
        let read = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err.into()),
        };
        let mut rest = &chunk[..read];
        while !rest.is_empty() {
            if !in_line {
                lines += 1;
                in_line = true;
                if lines >= offset && taken == limit {
                    more = true;
                    break 'read;
                }
            }
            let (piece, ends_line) = match rest.iter().position(|&b| b == b'\n') {
                Some(newline) => (&rest[..=newline], true),
                None => (rest, false),
            };
            rest = &rest[piece.len()..];
            if lines >= offset {
                let room = MAX_READ_BYTES - content.len();
                if piece.len() > room {
                    content.extend_from_slice(&piece[..room]);
                    cut = true;
                    more = true;
                    break 'read;
                }
                content.extend_from_slice(piece);
                if ends_line {
                    taken += 1;
                }
            }
            if ends_line {
                in_line = false;
            }
        }
    }
    if in_line && !more && lines >= offset {
        // The last line has no newline.
        taken += 1;
    }
    if taken == 0 && !more && offset > 1 {
        return Err(ToolError::new(format!(
            "offset {offset} is past the end of {}, which has {lines} lines",
            file.shown
        )));
    }
    if cut {
        // Do not leave half a character at the cut.
        if let Err(err) = std::str::from_utf8(&content)
            && err.error_len().is_none()
        {
            content.truncate(err.valid_up_to());
        }
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
    if cut && taken == 0 {
        push_note(
            &mut text,
            &format!(
                "[line {offset} is longer than the {MAX_READ_BYTES} bytes one call returns; this \
                 is its beginning]"
            ),
        );
    } else if more {
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

/// How many bytes `fs.read_file` reads at a time: memory stays bounded by the cap and this,
/// whatever the length of a line, and cancellation is checked between chunks.
const READ_CHUNK: usize = 64 * 1024;

/// Opens a file for reading if it is a regular file; a directory, FIFO, device or socket is
/// refused. The type is checked with `stat` before opening (opening a FIFO blocks until a
/// writer comes), the file is opened non-blocking, and checked again on the open file in case
/// the path was swapped in between.
fn open_regular(file: &Resolved) -> Result<File, ToolError> {
    let meta = fs::metadata(&file.path)?;
    not_regular(&meta.file_type(), &file.shown)?;
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let opened = options.open(&file.path)?;
    not_regular(&opened.metadata()?.file_type(), &file.shown)?;
    Ok(opened)
}

/// An error unless `kind` is a regular file.
fn not_regular(kind: &fs::FileType, shown: &str) -> Result<(), ToolError> {
    if kind.is_file() {
        return Ok(());
    }
    if kind.is_dir() {
        return Err(ToolError::new(format!(
            "{shown} is a directory; use fs.list_dir to see what it holds"
        )));
    }
    let what = toolgate_plugin_api::non_regular_kind(kind);
    Err(ToolError::new(format!(
        "{shown} is {what}; fs.read_file reads only regular files"
    )))
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
        // A denied entry is left out, as if it were not there.
        if ctx.state().denied(&entry.path()).is_some() {
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
            // A denied entry is neither listed nor searched.
            if ctx.state().denied(&path).is_some() {
                continue;
            }
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
