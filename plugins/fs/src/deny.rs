//! The `deny` globs: paths under the root that no tool may touch.

use std::path::{Component, Path, PathBuf};

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
pub(crate) struct DenyList {
    /// Globs without `/`, matched against single names, and their text.
    names: Option<(globset::GlobSet, Vec<String>)>,
    /// Globs with `/`, matched against whole root-relative paths, and their text.
    paths: Option<(globset::GlobSet, Vec<String>)>,
}

impl DenyList {
    /// Compiles the globs, or says which one is bad and why.
    pub(crate) fn new(globs: &[String]) -> Result<DenyList, String> {
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

    /// Whether there are no globs: nothing is denied.
    pub(crate) fn is_empty(&self) -> bool {
        self.names.is_none() && self.paths.is_none()
    }

    /// The glob that denies `relative` (a path relative to the root, without `.` or `..`), if
    /// any.
    pub(crate) fn denies(&self, relative: &Path) -> Option<&str> {
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
