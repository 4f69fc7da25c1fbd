//! Errors: what is wrong with a policy file, and exactly where.
//!
//! Loading a policy never stops at the first problem it can recover from: a [`PolicyError`]
//! holds every [`Diagnostic`] found, sorted by position, and prints them one per line the way
//! a compiler does:
//!
//! ```text
//! policies/bad.yaml:3:1: unknown key "dispatchh" (did you mean "dispatch"? expected one of: version, name_profile, dispatch, ...)
//! policies/bad.yaml:12:5: tools."fs.*".timeout: expected a duration like 30s or 500ms (...), found "30 seconds"
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

/// A place in a file: 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineColumn {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

/// One problem in a policy file, as typed data: the file, the line and column, the rule
/// broken ([`DiagnosticKind`]) and the message. [`fmt::Display`] prints
/// `file:line:col: message`, or `file: message` for a problem without a position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The policy file (or the `.rhai` file) the problem is in, as given to the loader.
    pub file: PathBuf,
    /// Where in `file`; `None` when the problem concerns the file as a whole (it could not be
    /// read).
    pub at: Option<LineColumn>,
    /// What is wrong and what was expected, starting with the key path when there is one
    /// (`dispatch.timeout: expected ...`).
    pub message: String,
    /// Which rule was broken.
    pub kind: DiagnosticKind,
}

/// The rule a [`Diagnostic`] reports a breach of.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// The file could not be read.
    Io,
    /// Not well-formed YAML: bad indentation, an unclosed quote, a tab, ...
    Syntax,
    /// A key appears twice in one mapping.
    DuplicateKey,
    /// A YAML feature policy files do not use (several documents, tags).
    Unsupported,
    /// The JSON Schema rejected the value; `keyword` is the schema keyword that failed
    /// (`type`, `enum`, `pattern`, `minimum`, `additionalProperties`, `oneOf`, ...).
    Schema {
        /// The failing keyword, as the schema spells it.
        keyword: String,
    },
    /// A duration the schema accepted but that cannot be used (out of order units, overflow).
    Duration,
    /// A tool or session pattern that is not a valid glob.
    Glob,
    /// A file the policy refers to (a script, a catalog) cannot be read.
    MissingFile,
    /// Two entries of a list that must be told apart by name share one (two `mcp_servers`
    /// called `time`).
    DuplicateName,
    /// A string that takes values from environment variables is not a valid template
    /// (`$5` instead of `$$5`).
    Template,
    /// A `redact:` pattern that is not a valid regular expression, or that compiles to more
    /// than the size limit.
    Regex,
    /// A relative path that resolves to the filesystem root (`.` in a policy kept in `/`):
    /// the whole filesystem must be written as `/`.
    FilesystemRoot,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            None => write!(f, "{}: {}", self.file.display(), self.message),
            Some(LineColumn { line, column }) => write!(
                f,
                "{}:{line}:{column}: {}",
                self.file.display(),
                self.message
            ),
        }
    }
}

/// How many diagnostics a [`PolicyError`] keeps and prints: the first ones by position. The
/// rest are counted ([`PolicyError::omitted`]), so a file with a million mistakes costs
/// neither a million lines on a terminal nor the memory to hold them.
pub const MAX_DIAGNOSTICS: usize = 100;

/// Why a policy could not be loaded: one or more [`Diagnostic`]s, sorted by position: at most
/// [`MAX_DIAGNOSTICS`] of them, and a count of the others.
///
/// Its `Display` prints one diagnostic per line, ready for a terminal, and then
/// `... and K more errors` when some were left out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.diagnostics, *.omitted))]
pub struct PolicyError {
    diagnostics: Vec<Diagnostic>,
    omitted: usize,
}

fn render(diagnostics: &[Diagnostic], omitted: usize) -> String {
    let mut lines: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    lines.extend(omitted_line(omitted));
    lines.join("\n")
}

/// `... and K more errors (the first N are listed)`, when `omitted` is not zero.
fn omitted_line(omitted: usize) -> Option<String> {
    (omitted > 0).then(|| {
        let errors = if omitted == 1 { "error" } else { "errors" };
        format!("... and {omitted} more {errors} (the first {MAX_DIAGNOSTICS} are listed)")
    })
}

impl PolicyError {
    /// Builds an error from diagnostics, sorting them by file, line and column and dropping
    /// exact repeats. (The loader never builds one from an empty list.)
    pub(crate) fn new(diagnostics: Vec<Diagnostic>) -> PolicyError {
        let mut collected = Diagnostics::default();
        diagnostics.into_iter().for_each(|d| collected.push(d));
        collected.into_error()
    }

    /// The first [`MAX_DIAGNOSTICS`] problems found, sorted by position.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// How many more problems were found than [`PolicyError::diagnostics`] holds.
    pub fn omitted(&self) -> usize {
        self.omitted
    }

    /// The line that says how many problems were left out, when some were:
    /// `... and K more errors (the first 100 are listed)`.
    pub fn omitted_note(&self) -> Option<String> {
        omitted_line(self.omitted)
    }

    /// Consumes the error, giving its diagnostics (the first [`MAX_DIAGNOSTICS`]).
    pub fn into_diagnostics(self) -> Vec<Diagnostic> {
        self.diagnostics
    }

    pub(crate) fn io(file: &Path, error: &dyn fmt::Display) -> PolicyError {
        PolicyError::new(vec![Diagnostic {
            file: file.to_path_buf(),
            at: None,
            message: format!("cannot read the policy file: {error}"),
            kind: DiagnosticKind::Io,
        }])
    }
}

/// Diagnostics as the loader finds them, held in bounded memory: the first
/// [`MAX_DIAGNOSTICS`] by file, position and message (exact repeats dropped), and a count of
/// the others.
#[derive(Debug, Default)]
pub(crate) struct Diagnostics {
    kept: Vec<Diagnostic>,
    omitted: usize,
}

impl Diagnostics {
    pub(crate) fn push(&mut self, diagnostic: Diagnostic) {
        self.kept.push(diagnostic);
        // Trimmed in batches: sorting 2N items every N pushes keeps the cost O(log N) a push.
        if self.kept.len() >= 2 * MAX_DIAGNOSTICS {
            self.trim();
        }
    }

    /// Counts `n` problems found but not kept by whoever found them (they were past the first
    /// [`MAX_DIAGNOSTICS`] already).
    pub(crate) fn add_omitted(&mut self, n: usize) {
        self.omitted = self.omitted.saturating_add(n);
    }

    /// Whether nothing was found.
    pub(crate) fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.omitted == 0
    }

    fn trim(&mut self) {
        self.kept
            .sort_by(|a, b| (&a.file, a.at, &a.message).cmp(&(&b.file, b.at, &b.message)));
        self.kept.dedup();
        if self.kept.len() > MAX_DIAGNOSTICS {
            self.omitted += self.kept.len() - MAX_DIAGNOSTICS;
            self.kept.truncate(MAX_DIAGNOSTICS);
        }
    }

    pub(crate) fn into_error(mut self) -> PolicyError {
        self.trim();
        PolicyError {
            diagnostics: self.kept,
            omitted: self.omitted,
        }
    }
}

/// Why a duration string was refused by [`crate::parse_duration`] or [`crate::parse_age`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not of the form `<digits><unit>...` or `none`.
    #[error(
        "{text:?} is not a duration like 30s or 500ms (units ms, s, m, h; combined like 1m30s) or none"
    )]
    Invalid {
        /// The text as written.
        text: String,
    },
    /// Not an age like `7d`, `12h`, `30m` or `1d12h` (see [`crate::parse_age`]).
    #[error("{text:?} is not an age (examples: 7d, 12h, 30m, 1d12h)")]
    InvalidAge {
        /// The text as written.
        text: String,
    },
    /// Units must go from the largest to the smallest, each at most once (`1m30s`, not `30s1m`).
    #[error("{text:?}: units must go from largest to smallest, each at most once (like 1h2m3s)")]
    UnitOrder {
        /// The text as written.
        text: String,
    },
    /// A number has more than 12 digits, or the total does not fit in 64 bits of milliseconds
    /// (about 213 billion days).
    #[error(
        "{text:?} is too large a duration (at most 12 digits per unit, and at most \
         213503982334d in all)"
    )]
    Overflow {
        /// The text as written.
        text: String,
    },
}

/// Why a pattern was refused by [`crate::glob::Glob::new`] or [`crate::glob::PathGlob::new`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pattern:?} is not a valid glob: {reason}")]
pub struct GlobError {
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it, as the glob compiler says.
    pub reason: String,
}
