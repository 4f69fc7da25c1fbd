//! Confinement: [`FsState`] resolves a path from the model to a location under the root, or says
//! why not (it escapes the root, or a `deny` glob matches it).

use std::fs;
use std::path::{Component, Path, PathBuf};

use toolgate_plugin_api::ToolError;

use crate::deny::DenyList;

/// The started plugin: the canonical root and the paths under it that are off limits.
#[derive(Debug)]
pub(crate) struct FsState {
    root: PathBuf,
    deny: DenyList,
}

impl FsState {
    /// Starts the plugin on `root`, which must be an existing directory, with nothing denied.
    #[cfg(test)]
    pub(crate) fn new(root: &Path) -> Result<FsState, String> {
        FsState::with_deny(root, &[])
    }

    /// Starts the plugin on `root` with the `deny` globs of its configuration.
    pub(crate) fn with_deny(root: &Path, deny: &[String]) -> Result<FsState, String> {
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

    /// Resolves a path from the model to an existing location under the root, or says why not.
    pub(crate) fn resolve(&self, path: &str) -> Result<Resolved, ToolError> {
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
        if let Ok(meta) = fs::metadata(&canonical) {
            self.check_links(&meta, &shown)?;
        }
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

    /// An error when `meta` is a regular file with other names the deny globs cannot be checked
    /// on (see [`FsState::other_links`]).
    pub(crate) fn check_links(&self, meta: &fs::Metadata, shown: &str) -> Result<(), ToolError> {
        match self.other_links(meta) {
            Some(links) => Err(ToolError::new(format!(
                "access denied: {shown} is a file with {links} hard links; while deny patterns \
                 are set the fs plugin reads no file with more than one, since its other names \
                 may be denied and cannot be found to check"
            ))),
            None => Ok(()),
        }
    }

    /// The number of hard links of `meta` when it is a regular file with more than one and
    /// `deny` globs are set: a hard link is the same file under another name, perhaps a denied
    /// one (`notes.txt` linked to `key.pem`), and the other names cannot be found without
    /// searching the whole file system. Such a file is treated as denied. Directories cannot be
    /// hard-linked; a symbolic link is resolved and its target checked. Without `deny` globs
    /// nothing is denied, so links do not matter. (Unix; elsewhere links are not counted.)
    pub(crate) fn other_links(&self, meta: &fs::Metadata) -> Option<u64> {
        if self.deny.is_empty() || !meta.is_file() {
            return None;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(meta.nlink()).filter(|&links| links > 1)
        }
        #[cfg(not(unix))]
        {
            None
        }
    }

    /// Whether a directory entry is left out of listings: a deny glob matches it, or it is a
    /// file with other names ([`FsState::other_links`]). Its metadata is not followed through
    /// a symbolic link (a link is judged when it is resolved).
    pub(crate) fn hides(&self, entry: &fs::DirEntry) -> bool {
        self.denied(&entry.path()).is_some()
            || (!self.deny.is_empty()
                && entry
                    .metadata()
                    .is_ok_and(|meta| self.other_links(&meta).is_some()))
    }

    /// The deny glob that `path` (under the root) matches, if any.
    pub(crate) fn denied(&self, path: &Path) -> Option<&str> {
        let relative = path.strip_prefix(&self.root).ok()?;
        self.deny.denies(relative)
    }

    /// How a location under the root is shown to the model: relative to the root, `.` for it.
    pub(crate) fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }
}

/// A location under the root.
#[derive(Debug)]
pub(crate) struct Resolved {
    /// The canonical path on disk.
    pub(crate) path: PathBuf,
    /// The path relative to the root, as the model sees it.
    pub(crate) shown: String,
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

#[cfg(test)]
mod tests {
    use super::*;

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
