//! Globs for tool names, session ids and argument values.
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

use globset::{GlobBuilder, GlobMatcher};

use crate::error::GlobError;

/// A compiled name pattern. See the [module docs](self) for the syntax.
#[derive(Debug, Clone)]
pub struct Glob {
    pattern: String,
    /// `None` for a literal: compared with `==`.
    matcher: Option<GlobMatcher>,
    literal_chars: usize,
}

impl PartialEq for Glob {
    fn eq(&self, other: &Glob) -> bool {
        self.pattern == other.pattern
    }
}

impl Eq for Glob {}

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
}
