//! From the file-shape types to the typed [`Policy`]: the checks the schema cannot make
//! (durations, globs, files, unique names), each problem reported at its line and column.
//!
//! Values come from the shape types (deserialized from the schema-valid tree); positions come
//! from the positioned tree, found by the same keys. Every problem is collected before the
//! load fails, so a user fixes a policy in one pass.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::duration::parse_duration;
use crate::error::{Diagnostic, DiagnosticKind, Diagnostics};
use crate::glob::{Glob, PathGlob};
use crate::model::Position;
use crate::yaml::{Node, Pos};

use super::values::{DurationText, GlobList, GlobText};

/// The policy file (for positions) and its directory (for relative paths), and the problems
/// found so far.
pub(crate) struct Build<'a> {
    pub file: &'a Path,
    pub dir: PathBuf,
    pub diagnostics: Diagnostics,
}

/// The tree node under `key` of a mapping node, or an empty node: only positions are read
/// from it, and a schema-valid tree has every node a value came from.
pub(crate) fn child<'n>(node: &'n Node, key: &str) -> &'n Node {
    node.get(key).map_or(&EMPTY, |entry| &entry.value)
}

/// Where a problem with the value under `key` is reported: at its key (`timeout: 5x` is
/// reported at `timeout`), or at the alias when the value is one.
pub(crate) fn value_pos(node: &Node, key: &str) -> Pos {
    node.get(key).map_or(node.pos, |entry| entry.value_pos())
}

/// Where the key `key` is written.
pub(crate) fn key_pos(node: &Node, key: &str) -> Pos {
    node.get(key).map_or(node.pos, |entry| entry.key_pos)
}

/// The `i`th item of a sequence node, or an empty node.
pub(crate) fn item(node: &Node, i: usize) -> &Node {
    node.items().get(i).unwrap_or(&EMPTY)
}

static EMPTY: Node = Node::EMPTY;

/// `parent.key`, quoting a key that is not a plain word (`tools."fs.*"`).
pub(crate) fn join_key(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}.{key:?}")
    }
}

impl<'a> Build<'a> {
    pub(crate) fn new(file: &'a Path) -> Build<'a> {
        let dir = match file.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Build {
            file,
            dir,
            diagnostics: Diagnostics::default(),
        }
    }

    pub(crate) fn report(&mut self, pos: Pos, message: String, kind: DiagnosticKind) {
        self.diagnostics.push(Diagnostic {
            file: self.file.to_path_buf(),
            at: Some(pos),
            message,
            kind,
        });
    }

    pub(crate) fn position(&self, pos: Pos) -> Option<Position> {
        Some(Position {
            file: self.file.to_path_buf(),
            line: pos.line,
            column: pos.column,
        })
    }

    pub(crate) fn resolve(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.dir.join(path)
        }
    }

    /// A duration value (`None` inside for `none`); `None` when it was reported as wrong.
    pub(crate) fn duration(
        &mut self,
        value: &DurationText,
        pos: Pos,
        path: &str,
    ) -> Option<Option<Duration>> {
        parse_duration(&value.0)
            .map_err(|error| self.report(pos, format!("{path}: {error}"), DiagnosticKind::Duration))
            .ok()
    }

    /// A compiled glob; `None` when it was reported as wrong.
    pub(crate) fn glob(&mut self, pattern: &str, pos: Pos, path: &str) -> Option<Glob> {
        Glob::new(pattern)
            .map_err(|error| self.report(pos, format!("{path}: {error}"), DiagnosticKind::Glob))
            .ok()
    }

    /// A compiled path glob; `None` when it was reported as wrong.
    pub(crate) fn path_glob(&mut self, pattern: &str, pos: Pos, path: &str) -> Option<PathGlob> {
        PathGlob::new(pattern)
            .map_err(|error| self.report(pos, format!("{path}: {error}"), DiagnosticKind::Glob))
            .ok()
    }

    /// A list of globs, each compiled; the bad ones are reported and left out.
    pub(crate) fn globs(&mut self, list: &[GlobText], node: &Node, path: &str) -> Vec<Glob> {
        let mut out = Vec::new();
        for (i, pattern) in list.iter().enumerate() {
            out.extend(self.glob(&pattern.0, item(node, i).pos, &format!("{path}[{i}]")));
        }
        out
    }

    pub(crate) fn glob_list(
        &mut self,
        list: Option<GlobList>,
        node: &Node,
        path: &str,
    ) -> Vec<Glob> {
        list.map(|l| self.globs(&l.0, node, path))
            .unwrap_or_default()
    }
}
