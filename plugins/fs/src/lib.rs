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
//! Its manifest lists `root` in `config_paths`, so a host resolves a relative root against the
//! policy file's folder (not the folder the host runs in), and refuses a relative root that
//! would reach `/`: the whole filesystem is given only to a policy that writes `root: /`.
//!
//! `deny` (optional) lists globs of paths no tool may touch. They are matched against the path
//! relative to the root after resolution (`.`, `..`, a trailing slash and symbolic links
//! resolved), and against the path as written with `.` and `..` resolved, so every spelling
//! of a path meets them. A glob without `/` matches any name along the path (`.env` denies
//! `sub/.env`); a glob with `/` matches the whole path from the root (`config/*.key`). A path
//! is denied when a glob matches it or any directory above it. Denied entries are left out of
//! `fs.list_dir` and `fs.find`. While any `deny` glob is set, a regular file with more than one
//! hard link is treated as denied (its other names, perhaps denied ones, cannot be found to
//! check). See `docs/policy.md`.
//!
//! # Tools
//!
//! | tool | arguments | result |
//! |---|---|---|
//! | `fs.read_file` | `{path, offset?, limit?}` | the file's text, from line `offset` (1-based, default 1), at most `limit` lines (default 2000, at most 10000) and 1 MiB |
//! | `fs.list_dir` | `{path?}` | the entries of a directory (default: the root), sorted: `name/` for directories, `name@` for symbolic links, `name (N bytes)` for files |
//! | `fs.stat` | `{path}` | a JSON object: path, type, size, modified (Unix seconds), readonly |
//! | `fs.find` | `{pattern, path?}` | the paths under `path` (default: the root) whose file name matches `pattern` (`*` any run of characters, `?` one character), sorted, at most 1000, at most 64 directories deep (a note says how many deeper or unreadable directories were not searched) |
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

#![warn(missing_docs)]

mod config;
mod deny;
mod find;
mod list;
mod note;
mod read;
mod root;

use toolgate_plugin_api::{Tool, json};

pub use find::{MAX_FIND_DEPTH, MAX_FIND_RESULTS};
pub use list::MAX_LIST_ENTRIES;
pub use read::{DEFAULT_READ_LINES, MAX_READ_BYTES, MAX_READ_LINES};

toolgate_plugin_api::export_plugin! {
    name: "fs",
    version: env!("CARGO_PKG_VERSION"),
    // A relative root is the policy file's folder, wherever the host runs.
    config_paths: ["root"],
    init: config::init,
    tools: [
        Tool::new("fs.read_file", read::read_file)
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
        Tool::new("fs.list_dir", list::list_dir)
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
        Tool::new("fs.stat", list::stat)
            .description("Describe a file or directory under the root: type, size, modification time.")
            .parameters(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The path, relative to the root."}
                },
                "required": ["path"],
                "additionalProperties": false
            })),
        Tool::new("fs.find", find::find)
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
