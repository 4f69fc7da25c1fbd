//! Globs for tool names, session ids and argument values, and path globs for path arguments.
//!
//! A pattern is either a literal (`fs.read_file`), compared exactly, or a glob:
//!
//! | syntax   | matches                                              |
//! |----------|------------------------------------------------------|
//! | `*`      | any run of characters, including none (and `/`, `.`) |
//! | `?`      | any one character                                    |
//! | `[abc]`  | one of the listed characters; `[!abc]` negates       |
//! | `{a,b}`  | either alternative                                   |
//! | `\*`     | a literal `*`                                        |
//!
//! `*` crosses `/`, so the argument rule `path: "/etc/*"` also matches `/etc/ssl/cert.pem`:
//! a deny rule errs on the side of denying.
//!
//! When several patterns match one tool, [`Glob::specificity`] picks the winner: an exact name
//! beats any glob, and a glob with more literal characters beats one with fewer
//! (`fs.read_*` beats `fs.*` beats `*`).

use globset::{GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

use crate::error::{DiagnosticKind, GlobError};
use crate::shape::de::checked;

/// A compiled name pattern. See the [module docs](self) for the syntax.
#[derive(Debug, Clone)]
pub struct Glob {
    pattern: String,
    /// `None` for a literal: compared with `==`.
    matcher: Option<GlobMatcher>,
    literal_chars: usize,
}

/// Two globs are equal when they are written alike.
impl PartialEq for Glob {
    fn eq(&self, other: &Glob) -> bool {
        self.pattern == other.pattern
    }
}

impl Eq for Glob {}

/// A glob equals the text it was written as (`glob == "fs.*"`).
impl PartialEq<&str> for Glob {
    fn eq(&self, other: &&str) -> bool {
        self.pattern == *other
    }
}

impl std::str::FromStr for Glob {
    type Err = GlobError;

    fn from_str(pattern: &str) -> Result<Glob, GlobError> {
        Glob::new(pattern)
    }
}

impl Glob {
    /// Compiles `pattern`.
    ///
    /// # Errors
    ///
    /// [`GlobError`] when the pattern does not compile (an unclosed `[` or `{`, a dangling `\\`).
    ///
    /// ```
    /// use toolgate_policy::glob::Glob;
    ///
    /// let g = Glob::new("fs.*").unwrap();
    /// assert!(g.is_match("fs.read_file"));
    /// assert!(!g.is_match("web_search"));
    /// assert!(Glob::new("fs.[").is_err());
    /// ```
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        let literal_chars = count_literal_chars(pattern);
        if !has_meta(pattern) {
            return Ok(Glob {
                pattern: pattern.to_owned(),
                matcher: None,
                literal_chars,
            });
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(false)
            .backslash_escape(true)
            .build()
            .map_err(|e| GlobError {
                pattern: pattern.to_owned(),
                reason: e.kind().to_string(),
            })?;
        Ok(Glob {
            pattern: pattern.to_owned(),
            matcher: Some(glob.compile_matcher()),
            literal_chars,
        })
    }

    /// A pattern that matches exactly `text`, glob syntax included: what stands in for a
    /// pattern that did not compile while the policy's other problems are looked for.
    pub(crate) fn literal(text: &str) -> Glob {
        Glob {
            pattern: text.to_owned(),
            matcher: None,
            literal_chars: text.chars().count(),
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether `text` matches the whole pattern.
    pub fn is_match(&self, text: &str) -> bool {
        match &self.matcher {
            None => self.pattern == text,
            Some(matcher) => matcher.is_match(text),
        }
    }

    /// Whether the pattern has no glob syntax, so it matches exactly one string.
    pub fn is_literal(&self) -> bool {
        self.matcher.is_none()
    }

    /// How specific the pattern is, for choosing among several that match: compare with `>`.
    /// This is the only specificity rule; everything that picks among matching patterns (the
    /// per-tool overrides) sorts by it.
    ///
    /// The first part is `true` for a literal (an exact name beats every glob); the second
    /// counts the literal characters (`fs.read_*` has 8, `fs.*` has 3, `*` has 0).
    ///
    /// ```
    /// use toolgate_policy::glob::Glob;
    ///
    /// let spec = |p| Glob::new(p).unwrap().specificity();
    /// assert!(spec("fs.read_file") > spec("fs.read_*"));
    /// assert!(spec("fs.read_*") > spec("fs.*"));
    /// assert!(spec("fs.*") > spec("*"));
    /// ```
    pub fn specificity(&self) -> (bool, usize) {
        (self.is_literal(), self.literal_chars)
    }
}

impl std::fmt::Display for Glob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.pattern)
    }
}

/// A glob in a policy file: compiled as it is read; one that does not compile is reported at
/// its line and column (and the load fails).
impl<'de> serde::Deserialize<'de> for Glob {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let pattern = String::deserialize(deserializer)?;
        let compiled = checked(Glob::new(&pattern), DiagnosticKind::Glob)?;
        Ok(compiled.unwrap_or_else(|| Glob::literal(&pattern)))
    }
}

/// Why a path argument cannot be judged by a path glob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path starts with `/`.
    #[error(
        "it is an absolute path; path rules judge paths relative to the tool's root, so give one without the leading /"
    )]
    Absolute,
    /// A `..` climbs above the root.
    #[error("its `..` climbs above the tool's root")]
    EscapesRoot,
    /// The path holds a NUL byte.
    #[error("it holds a NUL byte")]
    Nul,
    /// The path holds a backslash, which some systems read as a separator.
    #[error("it holds a backslash; separate folders with /")]
    Backslash,
    /// The path is longer than any path the system opens ([`MAX_PATH_BYTES`]).
    #[error("it is {bytes} bytes long, and a path may be at most {MAX_PATH_BYTES} bytes")]
    TooLong {
        /// The path's length in bytes.
        bytes: usize,
    },
    /// One folder or file name in the path is longer than any name the system opens
    /// ([`MAX_NAME_BYTES`]).
    #[error(
        "one of its names is {bytes} bytes long, and a file or folder name may be at most \
         {MAX_NAME_BYTES} bytes"
    )]
    NameTooLong {
        /// The name's length in bytes.
        bytes: usize,
    },
}

/// The longest path [`normalize_path`] takes, in bytes: Linux's `PATH_MAX`. No system call
/// opens a longer one, so a longer path is refused before any rule looks at it.
pub const MAX_PATH_BYTES: usize = 4096;

/// The longest folder or file name [`normalize_path`] takes, in bytes: Linux's `NAME_MAX`.
pub const MAX_NAME_BYTES: usize = 255;

/// Normalises a path relative to a tool's root, by text alone: empty segments (repeated and
/// trailing slashes) and `.` are dropped, and `..` removes the segment before it. The root
/// itself is the empty string.
///
/// # Errors
///
/// [`PathError`] for what cannot be normalised: an absolute path, a `..` that climbs above
/// the root, a NUL byte or a backslash, a path longer than [`MAX_PATH_BYTES`] or a name in it
/// longer than [`MAX_NAME_BYTES`] (checked first, so the work is bounded).
///
/// ```
/// use toolgate_policy::glob::{PathError, normalize_path};
///
/// assert_eq!(normalize_path("./key.pem/.").unwrap(), "key.pem");
/// assert_eq!(normalize_path("docs/../secrets//x/").unwrap(), "secrets/x");
/// assert_eq!(normalize_path("../x"), Err(PathError::EscapesRoot));
/// assert_eq!(normalize_path("/etc/passwd"), Err(PathError::Absolute));
/// ```
pub fn normalize_path(path: &str) -> Result<String, PathError> {
    if path.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong { bytes: path.len() });
    }
    if path.contains('\0') {
        return Err(PathError::Nul);
    }
    if path.contains('\\') {
        return Err(PathError::Backslash);
    }
    if path.starts_with('/') {
        return Err(PathError::Absolute);
    }
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(PathError::EscapesRoot);
                }
            }
            s if s.len() > MAX_NAME_BYTES => {
                return Err(PathError::NameTooLong { bytes: s.len() });
            }
            s => parts.push(s),
        }
    }
    Ok(parts.join("/"))
}

/// A glob over normalised, root-relative paths (the `paths:` condition of a rule).
///
/// * `*` and `?` stay within one folder or file name; `**` spans any number of folders.
/// * A pattern without `/` is matched against every name in the path: `.env` matches `.env`,
///   `sub/.env` and `sub/.env/x`; `*.pem` matches `key.pem` and `a/b/key.pem`.
/// * A pattern with `/` is matched from the root: `secrets/*` matches `secrets/x`, not
///   `docs/secrets/x`.
/// * A path matches when the pattern matches it or one of the folders it lies in, so
///   `secrets/*` also matches `secrets/x/y`, and `secrets` matches everything under it.
///
/// The pattern itself is normalised like a path (`./a/` is `a`); a leading `/` or a `..` is an
/// error, since the paths it is compared with never have them.
///
/// Matching takes one pass over the path, in time linear in its length (the pattern and
/// the pattern followed by `/**`, in one [`GlobSet`] run by a finite automaton), not one
/// match per folder.
#[derive(Debug, Clone)]
pub struct PathGlob {
    pattern: String,
    matcher: GlobSet,
}

/// Two path globs are equal when they are written alike.
impl PartialEq for PathGlob {
    fn eq(&self, other: &PathGlob) -> bool {
        self.pattern == other.pattern
    }
}

impl Eq for PathGlob {}

/// A path glob equals the text it was written as.
impl PartialEq<&str> for PathGlob {
    fn eq(&self, other: &&str) -> bool {
        self.pattern == *other
    }
}

impl std::str::FromStr for PathGlob {
    type Err = GlobError;

    fn from_str(pattern: &str) -> Result<PathGlob, GlobError> {
        PathGlob::new(pattern)
    }
}

impl PathGlob {
    /// Compiles `pattern`.
    ///
    /// # Errors
    ///
    /// [`GlobError`] when the pattern does not compile, is absolute or holds `..`.
    ///
    /// ```
    /// use toolgate_policy::glob::PathGlob;
    ///
    /// let env = PathGlob::new(".env").unwrap();
    /// assert!(env.is_match(".env") && env.is_match("sub/.env") && !env.is_match("x.env"));
    /// let secrets = PathGlob::new("secrets/*").unwrap();
    /// assert!(secrets.is_match("secrets/x") && secrets.is_match("secrets/a/b"));
    /// assert!(!secrets.is_match("docs/secrets/x"));
    /// assert!(PathGlob::new("/etc/*").is_err());
    /// ```
    pub fn new(pattern: &str) -> Result<PathGlob, GlobError> {
        let error = |reason: &str| GlobError {
            pattern: pattern.to_owned(),
            reason: reason.to_owned(),
        };
        if pattern.starts_with('/') {
            return Err(error(
                "path globs are relative to the tool's root; drop the leading /",
            ));
        }
        let mut parts: Vec<&str> = Vec::new();
        for segment in pattern.split('/') {
            match segment {
                "" | "." => {}
                ".." => return Err(error("path globs cannot hold `..`")),
                s => parts.push(s),
            }
        }
        if parts.is_empty() {
            return Err(error("the pattern names no path"));
        }
        let anchored = parts.len() > 1;
        let body = parts.join("/");
        let full = if anchored { body } else { format!("**/{body}") };
        let glob = |text: &str| {
            GlobBuilder::new(text)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| error(&e.kind().to_string()))
        };
        // The path itself, or anything below it: `/**` matches one or more names.
        let matcher = GlobSetBuilder::new()
            .add(glob(&full)?)
            .add(glob(&format!("{full}/**"))?)
            .build()
            .map_err(|e| error(&e.kind().to_string()))?;
        Ok(PathGlob {
            pattern: pattern.to_owned(),
            matcher,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether the normalised path `path` (see [`normalize_path`]), or a folder it lies in,
    /// matches.
    pub fn is_match(&self, path: &str) -> bool {
        !path.is_empty() && self.matcher.is_match(path)
    }
}

/// A path glob in a policy file: compiled as it is read; one that does not compile is reported
/// at its line and column (and the load fails).
impl<'de> serde::Deserialize<'de> for PathGlob {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let pattern = String::deserialize(deserializer)?;
        let compiled = checked(PathGlob::new(&pattern), DiagnosticKind::Glob)?;
        // A stand-in that always compiles; it is never used, since the load fails.
        Ok(compiled.unwrap_or_else(|| PathGlob {
            pattern,
            matcher: GlobSet::empty(),
        }))
    }
}

impl std::fmt::Display for PathGlob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.pattern)
    }
}

fn has_meta(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// Characters that match only themselves: outside `[...]`, not `*?{},`, escapes counted once.
fn count_literal_chars(pattern: &str) -> usize {
    let mut count = 0;
    let mut in_class = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            _ if in_class => in_class = c != ']',
            '[' => in_class = true,
            '\\' => {
                if chars.next().is_some() {
                    count += 1;
                }
            }
            '*' | '?' | '{' | '}' | ',' => {}
            _ => count += 1,
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_read_outside_a_policy_is_an_error_not_a_report() {
        let read: Result<Glob, _> = serde_json::from_str("\"fs.[\"");
        let error = read.expect_err("an unclosed class");
        assert!(error.to_string().contains("is not a valid glob"), "{error}");
    }

    fn glob(p: &str) -> Glob {
        Glob::new(p).expect("valid glob")
    }

    #[test]
    fn a_literal_matches_only_itself() {
        let g = glob("fs.read_file");
        assert!(g.is_literal());
        assert!(g.is_match("fs.read_file"));
        assert!(!g.is_match("fs.read_files"));
    }

    #[test]
    fn star_matches_any_run_including_slashes() {
        let g = glob("/etc/*");
        assert!(g.is_match("/etc/passwd"));
        assert!(g.is_match("/etc/ssl/cert.pem"));
        assert!(!g.is_match("/home/etc/x"));
    }

    #[test]
    fn question_mark_and_classes_match_one_character() {
        assert!(glob("v?").is_match("v1"));
        assert!(glob("v[12]").is_match("v2"));
        assert!(!glob("v[12]").is_match("v3"));
    }

    #[test]
    fn alternatives_match_either() {
        let g = glob("{echo,sleep}");
        assert!(g.is_match("echo") && g.is_match("sleep") && !g.is_match("fail"));
    }

    #[test]
    fn escaped_star_is_literal() {
        let g = glob(r"a\*");
        assert!(g.is_match("a*"));
        assert!(!g.is_match("ab"));
    }

    #[test]
    fn unclosed_class_is_an_error_naming_the_pattern() {
        let err = Glob::new("fs.[").expect_err("invalid");
        assert_eq!(err.pattern, "fs.[");
        assert!(
            err.to_string().starts_with("\"fs.[\" is not a valid glob"),
            "{err}"
        );
    }

    #[test]
    fn exact_beats_glob_and_longer_literal_beats_shorter() {
        let mut patterns = [
            glob("*"),
            glob("fs.read_file"),
            glob("fs.*"),
            glob("fs.read_*"),
        ];
        patterns.sort_by_key(|g| std::cmp::Reverse(g.specificity()));
        let order: Vec<&str> = patterns.iter().map(Glob::as_str).collect();
        assert_eq!(order, ["fs.read_file", "fs.read_*", "fs.*", "*"]);
    }

    #[test]
    fn a_path_is_normalised_before_it_is_judged() {
        for (raw, normal) in [
            ("key.pem/", "key.pem"),
            ("./key.pem/.", "key.pem"),
            ("sub/.env/", "sub/.env"),
            ("docs/../secrets/x", "secrets/x"),
            ("./secrets/x", "secrets/x"),
            ("a//b///c", "a/b/c"),
            ("a/./b/../c", "a/c"),
            (".", ""),
            ("", ""),
        ] {
            assert_eq!(normalize_path(raw).as_deref(), Ok(normal), "{raw:?}");
        }
    }

    #[test]
    fn a_path_that_cannot_be_normalised_is_refused_with_its_reason() {
        assert_eq!(normalize_path("../x"), Err(PathError::EscapesRoot));
        assert_eq!(normalize_path("a/../../x"), Err(PathError::EscapesRoot));
        assert_eq!(normalize_path("/secrets/id.pem"), Err(PathError::Absolute));
        assert_eq!(normalize_path("a\0b"), Err(PathError::Nul));
        assert_eq!(normalize_path("secrets\\x"), Err(PathError::Backslash));
    }

    #[test]
    fn a_path_glob_without_a_slash_matches_any_name_in_the_path() {
        let env = PathGlob::new(".env").expect("valid");
        assert!(env.is_match(".env"));
        assert!(env.is_match("sub/.env"));
        assert!(env.is_match("sub/.env/inner"));
        assert!(!env.is_match("x.env"));
        assert!(!env.is_match(".envrc"));
        let pem = PathGlob::new("*.pem").expect("valid");
        assert!(pem.is_match("key.pem") && pem.is_match("a/b/key.pem"));
        assert!(!pem.is_match("key.pem.txt"));
    }

    #[test]
    fn a_path_glob_with_a_slash_is_anchored_at_the_root_and_covers_what_lies_below() {
        let g = PathGlob::new("secrets/*").expect("valid");
        assert!(g.is_match("secrets/x"));
        assert!(g.is_match("secrets/a/b"));
        assert!(!g.is_match("secrets"));
        assert!(!g.is_match("docs/secrets/x"));
        let deep = PathGlob::new("**/secrets/*").expect("valid");
        assert!(deep.is_match("docs/secrets/x") && deep.is_match("secrets/x"));
        let star = PathGlob::new("docs/*.md").expect("valid");
        assert!(star.is_match("docs/a.md") && !star.is_match("docs/sub/a.txt"));
    }

    #[test]
    fn a_path_glob_is_normalised_and_refuses_absolute_or_climbing_patterns() {
        assert!(
            PathGlob::new("./secrets/")
                .expect("valid")
                .is_match("secrets/x")
        );
        let abs = PathGlob::new("/etc/*").expect_err("absolute");
        assert!(abs.to_string().contains("leading /"), "{abs}");
        assert!(PathGlob::new("a/../b").is_err());
        assert!(PathGlob::new("secrets/[").is_err());
        assert!(PathGlob::new("./").is_err());
    }

    #[test]
    fn one_pass_matching_agrees_with_matching_each_folder_of_the_path() {
        // The rule as first written: the pattern against the path and each folder it lies in.
        let by_folder = |pattern: &str, path: &str| {
            let body = pattern.trim_start_matches("./").trim_end_matches('/');
            let full = if body.contains('/') {
                body.to_owned()
            } else {
                format!("**/{body}")
            };
            let m = GlobBuilder::new(&full)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .expect("valid")
                .compile_matcher();
            path.match_indices('/')
                .map(|(i, _)| &path[..i])
                .chain(std::iter::once(path))
                .any(|prefix| m.is_match(prefix))
        };
        let patterns = [
            ".env",
            "*.pem",
            "{.env,.env.*}",
            "secrets",
            "secrets/*",
            "secrets/**",
            "**",
            "**/a/**/b",
            "a/**",
            "docs/*.md",
            "a?c",
            "[ab]/x",
            "**/x/*",
        ];
        let paths = [
            "",
            ".env",
            "sub/.env",
            "sub/.env/x",
            "x.env",
            "key.pem",
            "a/b/key.pem",
            "key.pem.txt",
            "secrets",
            "secrets/x",
            "secrets/a/b",
            "docs/secrets/x",
            "a",
            "a/b",
            "a/x/b",
            "a/x/b/c",
            "docs/a.md",
            "docs/sub/a.md",
            "abc",
            "a/x",
            "b/x/y",
            "q/x/y/z",
            ".env.local",
            "x/.env.local/y",
        ];
        for pattern in patterns {
            let glob = PathGlob::new(pattern).expect("valid");
            for path in paths {
                assert_eq!(
                    glob.is_match(path),
                    !path.is_empty() && by_folder(pattern, path),
                    "{pattern:?} against {path:?}"
                );
            }
        }
    }

    #[test]
    fn a_path_longer_than_the_system_takes_is_refused_before_it_is_read() {
        let long = "a/".repeat(MAX_PATH_BYTES / 2) + "x";
        assert_eq!(
            normalize_path(&long),
            Err(PathError::TooLong { bytes: long.len() })
        );
        let fits = "a/".repeat(MAX_PATH_BYTES / 2 - 1) + "xy";
        assert_eq!(fits.len(), MAX_PATH_BYTES);
        assert!(normalize_path(&fits).is_ok());
    }

    #[test]
    fn a_name_longer_than_the_system_takes_is_refused() {
        let name = "n".repeat(MAX_NAME_BYTES + 1);
        assert_eq!(
            normalize_path(&format!("docs/{name}/x")),
            Err(PathError::NameTooLong {
                bytes: MAX_NAME_BYTES + 1
            })
        );
        assert!(normalize_path(&"n".repeat(MAX_NAME_BYTES)).is_ok());
    }
}
