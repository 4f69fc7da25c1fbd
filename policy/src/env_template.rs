//! Strings that take values from environment variables: `"Bearer ${API_TOKEN}"`.
//!
//! The policy names a variable instead of holding a secret. The loader parses each template
//! once ([`EnvTemplate::parse`]); the program that uses it fills it in when it needs the value
//! ([`EnvTemplate::expand`]), so a missing variable is reported then, by name, and the policy
//! file itself never holds the secret.
//!
//! Syntax: `${NAME}` is the value of the variable `NAME` (letters, digits and `_`, not starting
//! with a digit); `$$` is one `$`; any other `$` is an error.

use std::fmt;

use crate::error::DiagnosticKind;
use crate::shape::de::checked;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplatePart {
    /// Text taken as it is.
    Literal(String),
    /// The value of this environment variable.
    Var(String),
}

/// A string with `${NAME}` references to environment variables, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvTemplate {
    text: String,
    parts: Vec<TemplatePart>,
}

/// Why a template does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `$` that starts neither `${NAME}` nor `$$`, at this byte offset.
    #[error(
        "a `$` at byte {at} starts neither ${{NAME}} nor $$ (write $$ for a `$`, ${{NAME}} for the variable NAME)"
    )]
    StrayDollar {
        /// Byte offset of the `$`.
        at: usize,
    },
    /// `${` without a valid name and a closing `}`.
    #[error(
        "`${{` at byte {at} is not followed by a variable name (letters, digits, _; not starting with a digit) and `}}`"
    )]
    BadReference {
        /// Byte offset of the `$`.
        at: usize,
    },
}

/// A variable a template names is not set (or not valid Unicode).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the environment variable {name} is not set")]
pub struct MissingVar {
    /// The variable's name.
    pub name: String,
}

impl EnvTemplate {
    /// Parses `text`.
    ///
    /// ```
    /// use toolgate_policy::{EnvTemplate, TemplatePart};
    ///
    /// let t = EnvTemplate::parse("Bearer ${TOKEN}")?;
    /// assert_eq!(t.vars().collect::<Vec<_>>(), ["TOKEN"]);
    /// assert_eq!(t.expand(|_| Some("abc".into()))?, "Bearer abc");
    /// assert!(EnvTemplate::parse("cost: $5").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A `$` that starts neither `${NAME}` nor `$$`.
    pub fn parse(text: &str) -> Result<EnvTemplate, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        let mut offset = 0;
        while let Some(i) = rest.find('$') {
            literal.push_str(&rest[..i]);
            let at = offset + i;
            let after = &rest[i + 1..];
            let consumed = if after.starts_with('$') {
                literal.push('$');
                2
            } else if let Some(body) = after.strip_prefix('{') {
                let end = body.find('}').ok_or(TemplateError::BadReference { at })?;
                let name = &body[..end];
                if !is_var_name(name) {
                    return Err(TemplateError::BadReference { at });
                }
                if !literal.is_empty() {
                    parts.push(TemplatePart::Literal(std::mem::take(&mut literal)));
                }
                parts.push(TemplatePart::Var(name.to_owned()));
                // `$`, `{`, the name, `}`
                name.len() + 3
            } else {
                return Err(TemplateError::StrayDollar { at });
            };
            rest = &rest[i + consumed..];
            offset = at + consumed;
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(TemplatePart::Literal(literal));
        }
        Ok(EnvTemplate {
            text: text.to_owned(),
            parts,
        })
    }

    /// A template that is exactly `text`, with no variables (`$` included as it is).
    pub fn literal(text: impl Into<String>) -> EnvTemplate {
        let text = text.into();
        EnvTemplate {
            parts: if text.is_empty() {
                Vec::new()
            } else {
                vec![TemplatePart::Literal(text.clone())]
            },
            text: text.replace('$', "$$"),
        }
    }

    /// The template as written in the policy.
    pub fn as_written(&self) -> &str {
        &self.text
    }

    /// Its pieces, in order.
    pub fn parts(&self) -> &[TemplatePart] {
        &self.parts
    }

    /// The variables it names, in order (repeats included).
    pub fn vars(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            TemplatePart::Var(name) => Some(name.as_str()),
            TemplatePart::Literal(_) => None,
        })
    }

    /// The text with no variables, when it names none.
    pub fn as_literal(&self) -> Option<String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                TemplatePart::Literal(text) => out.push_str(text),
                TemplatePart::Var(_) => return None,
            }
        }
        Some(out)
    }

    /// Fills in every variable with `lookup` (usually `std::env::var(name).ok()`).
    ///
    /// # Errors
    ///
    /// The first variable `lookup` has no value for.
    pub fn expand(&self, lookup: impl Fn(&str) -> Option<String>) -> Result<String, MissingVar> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                TemplatePart::Literal(text) => out.push_str(text),
                TemplatePart::Var(name) => match lookup(name) {
                    Some(value) => out.push_str(&value),
                    None => return Err(MissingVar { name: name.clone() }),
                },
            }
        }
        Ok(out)
    }

    /// [`EnvTemplate::expand`] from the process environment.
    ///
    /// # Errors
    ///
    /// The first variable that is not set (or is not valid Unicode).
    pub fn expand_env(&self) -> Result<String, MissingVar> {
        self.expand(|name| std::env::var(name).ok())
    }
}

/// A template in a policy file, parsed as it is read; a bad one is reported at its line and
/// column (the schema's pattern refuses it first).
impl<'de> serde::Deserialize<'de> for EnvTemplate {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let parsed = checked(EnvTemplate::parse(&text), DiagnosticKind::Template)?;
        Ok(parsed.unwrap_or_else(|| EnvTemplate::literal(text)))
    }
}

impl fmt::Display for EnvTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn a_reference_is_replaced_by_the_variable() {
        let t = EnvTemplate::parse("Bearer ${TOKEN}").unwrap();
        assert_eq!(t.expand(env).unwrap(), "Bearer s3cret");
    }

    #[test]
    fn text_without_references_is_kept() {
        let t = EnvTemplate::parse("plain {braces} too").unwrap();
        assert_eq!(t.as_literal().as_deref(), Some("plain {braces} too"));
        assert_eq!(t.vars().count(), 0);
    }

    #[test]
    fn a_doubled_dollar_is_one_dollar() {
        let t = EnvTemplate::parse("$$5 and $${TOKEN}").unwrap();
        assert_eq!(t.expand(env).unwrap(), "$5 and ${TOKEN}");
    }

    #[test]
    fn adjacent_references_and_an_empty_value_expand() {
        let t = EnvTemplate::parse("${TOKEN}${EMPTY}${TOKEN}").unwrap();
        assert_eq!(t.expand(env).unwrap(), "s3crets3cret");
    }

    #[test]
    fn a_missing_variable_is_named() {
        let t = EnvTemplate::parse("x ${NOPE} ${TOKEN}").unwrap();
        assert_eq!(t.expand(env).unwrap_err().name, "NOPE");
    }

    #[test]
    fn a_stray_dollar_is_refused_with_its_offset() {
        assert_eq!(
            EnvTemplate::parse("cost $5").unwrap_err(),
            TemplateError::StrayDollar { at: 5 }
        );
        assert_eq!(
            EnvTemplate::parse("end$").unwrap_err(),
            TemplateError::StrayDollar { at: 3 }
        );
    }

    #[test]
    fn a_bad_reference_is_refused() {
        for bad in ["${}", "${1A}", "${A-B}", "${OPEN", "a${ B}"] {
            assert!(
                matches!(
                    EnvTemplate::parse(bad),
                    Err(TemplateError::BadReference { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_literal_round_trips_a_dollar() {
        let t = EnvTemplate::literal("/opt/$weird/bin");
        assert_eq!(t.as_literal().as_deref(), Some("/opt/$weird/bin"));
        assert_eq!(EnvTemplate::parse(t.as_written()).unwrap(), t);
    }
}
