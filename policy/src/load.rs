//! The loading pipeline: text, positioned tree, schema check, typed [`Policy`], semantic checks.
//!
//! Each stage reports every problem it can find before giving up, so a user fixes a policy in
//! one pass rather than one error at a time. A later stage runs only when the earlier ones
//! found nothing: a semantic check on a value of the wrong type would only add noise.

use std::path::Path;

use crate::error::{Diagnostic, DiagnosticKind, Diagnostics, PolicyError};
use crate::file::{MAX_POLICY_FILE_BYTES, read_text_file};
use crate::model::Policy;
use crate::schema;
use crate::shape;
use crate::yaml::{self, Pos, YamlProblemKind};

/// Reads and loads the policy file at `path`. Relative paths inside it are resolved against
/// the directory of `path`.
///
/// # Errors
///
/// A [`PolicyError`] listing every problem found: the file cannot be read, is not valid YAML,
/// breaks the schema, or refers to files that cannot be read.
///
/// ```no_run
/// let policy = toolgate_policy::load_file("policies/default.yaml".as_ref())?;
/// # Ok::<(), toolgate_policy::PolicyError>(())
/// ```
pub fn load_file(path: &Path) -> Result<Policy, PolicyError> {
    let text = read_text_file(path, MAX_POLICY_FILE_BYTES)
        .map_err(|e| PolicyError::io(path, &e.problem))?;
    load_str(&text, path)
}

/// Loads a policy from `text`. `file` names it in error messages, and relative paths inside
/// the policy (scripts, plugins, catalogs, the index, a `file://` store) are resolved against
/// its directory; the file itself is not read.
///
/// # Errors
///
/// A [`PolicyError`] listing every problem found, each at its line and column; see
/// [`load_file`].
///
/// ```
/// use std::path::Path;
///
/// let policy = toolgate_policy::load_str("version: 1\ndispatch: {timeout: 5s}\n", Path::new("p.yaml"))?;
/// assert_eq!(policy.dispatch.timeout, Some(std::time::Duration::from_secs(5)));
///
/// let err = toolgate_policy::load_str("version: 1\ndispatchh: {}\n", Path::new("p.yaml")).unwrap_err();
/// assert!(err.to_string().starts_with("p.yaml:2:1: unknown key \"dispatchh\""));
/// # Ok::<(), toolgate_policy::PolicyError>(())
/// ```
pub fn load_str(text: &str, file: &Path) -> Result<Policy, PolicyError> {
    let at = |pos: Pos, message: String, kind: DiagnosticKind| Diagnostic {
        file: file.to_path_buf(),
        at: Some(pos),
        message,
        kind,
    };
    let root = match yaml::parse(text) {
        Ok(Some(root)) => root,
        Ok(None) => {
            return Err(PolicyError::new(vec![at(
                Pos { line: 1, column: 1 },
                "the policy file is empty; it needs at least `version: 1`".to_owned(),
                DiagnosticKind::Schema {
                    keyword: "required".to_owned(),
                },
            )]));
        }
        Err(problems) => {
            let mut diagnostics = Diagnostics::default();
            for p in problems.list {
                let kind = match p.kind {
                    YamlProblemKind::Syntax => DiagnosticKind::Syntax,
                    YamlProblemKind::DuplicateKey => DiagnosticKind::DuplicateKey,
                    YamlProblemKind::Unsupported => DiagnosticKind::Unsupported,
                };
                diagnostics.push(at(p.pos, p.message, kind));
            }
            diagnostics.add_omitted(problems.omitted);
            return Err(diagnostics.into_error());
        }
    };

    let problems = schema::check(&root, file);
    if !problems.is_empty() {
        return Err(problems.into_error());
    }

    shape::read(&root, file).map_err(Diagnostics::into_error)
}
