//! The `redact:` section: secrets masked in results before the model sees them.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

use super::{Position, here};
use crate::DiagnosticKind;
use crate::shape::de;
use crate::shape::values::{Flag, Name, names_only};

/// The most bytes a compiled `redact:` pattern may take (the `regex` crate's size limit): a
/// pattern that compiles to more, such as a large counted repetition, is refused at load.
pub const MAX_PATTERN_PROGRAM_BYTES: usize = 1 << 20;

/// The most characters a `redact:` pattern may be written with.
pub const MAX_PATTERN_CHARS: usize = 1000;

/// Secret masking (`redact:`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct RedactSettings {
    /// Mask the built-in secret shapes: aws_access_key_id, github_token, slack_token, jwt,
    /// private_key (PEM private key blocks) and key_value (the value of password=, api_key:,
    /// secret=, token= style pairs). Default true.
    #[schemars(with = "Flag")]
    pub builtin: bool,
    /// Built-in patterns to leave off while builtin is true, by name. Default none.
    pub disable: Vec<BuiltinSecret>,
    /// The policy's own patterns, masked after the built-in ones. Each is a name (shown in the
    /// mask, `[REDACTED:name]`) and a regular expression (Rust regex syntax, linear-time; at most
    /// 1000 characters and 1 MiB compiled). When the expression has a group named secret, only
    /// that group is masked.
    pub patterns: Vec<RedactPattern>,
}

impl Default for RedactSettings {
    fn default() -> Self {
        RedactSettings {
            builtin: true,
            disable: Vec::new(),
            patterns: Vec::new(),
        }
    }
}

/// A built-in secret shape (`redact.disable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = names_only)]
pub enum BuiltinSecret {
    /// AWS access key ids (`AKIA...`, `ASIA...`).
    AwsAccessKeyId,
    /// GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`).
    GithubToken,
    /// Slack tokens (`xoxb-`, `xoxp-`, ...).
    SlackToken,
    /// JSON Web Tokens (`eyJ...` three dot-separated parts).
    Jwt,
    /// `-----BEGIN ... PRIVATE KEY-----` blocks, to their END line (or to the end of the text).
    PrivateKey,
    /// The value of `password=`, `api_key:`, `secret=`, `token:` style pairs.
    KeyValue,
}

impl BuiltinSecret {
    /// Every built-in, in the order they are masked.
    pub const ALL: [BuiltinSecret; 6] = [
        BuiltinSecret::PrivateKey,
        BuiltinSecret::AwsAccessKeyId,
        BuiltinSecret::GithubToken,
        BuiltinSecret::SlackToken,
        BuiltinSecret::Jwt,
        BuiltinSecret::KeyValue,
    ];

    /// The name the policy and the mask use.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinSecret::AwsAccessKeyId => "aws_access_key_id",
            BuiltinSecret::GithubToken => "github_token",
            BuiltinSecret::SlackToken => "slack_token",
            BuiltinSecret::Jwt => "jwt",
            BuiltinSecret::PrivateKey => "private_key",
            BuiltinSecret::KeyValue => "key_value",
        }
    }

    /// The regular expression; when it has a group named `secret`, only that group is masked.
    pub fn pattern(self) -> &'static str {
        match self {
            BuiltinSecret::AwsAccessKeyId => r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
            BuiltinSecret::GithubToken => {
                r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"
            }
            BuiltinSecret::SlackToken => r"\bxox[abposr]-[A-Za-z0-9-]{10,250}",
            BuiltinSecret::Jwt => {
                r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{8,}"
            }
            BuiltinSecret::PrivateKey => {
                r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----(?s:.*?-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----|.*)"
            }
            BuiltinSecret::KeyValue => {
                r#"(?i)\b(?:password|passwd|pwd|secret|client_secret|api[_-]?key|access[_-]?key|auth[_-]?token|access[_-]?token|token)\b["']?\s{0,8}[:=]\s{0,8}["']?(?P<secret>[^\s"',;&\[\]{}<>][^\s"',;&<>]*)"#
            }
        }
    }
}

/// A pattern of the policy's own (`redact.patterns`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RedactPattern {
    /// The pattern's name, shown in the mask (`[REDACTED:name]`) and in events.
    #[schemars(with = "Name")]
    pub name: String,
    /// The regular expression (Rust regex syntax). When it has a group named secret, only that
    /// group is masked; otherwise the whole match is.
    #[schemars(with = "RegexText")]
    pub regex: SecretRegex,
    /// Where the entry is in the policy file.
    #[serde(skip_deserializing, default = "here")]
    #[schemars(skip)]
    pub position: Option<Position>,
}

/// A compiled `redact:` expression: at most [`MAX_PATTERN_CHARS`] characters and
/// [`MAX_PATTERN_PROGRAM_BYTES`] compiled. One that does not compile is reported at its line
/// and column, and the load fails.
#[derive(Debug, Clone)]
pub struct SecretRegex(pub regex::Regex);

// A regular expression in the policy file; `SecretRegex` reads it.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(
    rename = "regex",
    extend("x-expected" = "a regular expression of at most 1000 characters")
)]
struct RegexText(#[schemars(length(min = 1, max = 1000))] String);

impl SecretRegex {
    /// Compiles `pattern` within the size bounds.
    ///
    /// # Errors
    ///
    /// The `regex` crate's error: bad syntax, or a program over the size limit.
    pub fn new(pattern: &str) -> Result<Self, regex::Error> {
        regex::RegexBuilder::new(pattern)
            .size_limit(MAX_PATTERN_PROGRAM_BYTES)
            .dfa_size_limit(MAX_PATTERN_PROGRAM_BYTES)
            .build()
            .map(SecretRegex)
    }
}

impl<'de> Deserialize<'de> for SecretRegex {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let pattern = String::deserialize(deserializer)?;
        let compiled = de::checked(
            SecretRegex::new(&pattern).map_err(|e| RegexProblem::new(&e)),
            DiagnosticKind::Regex,
        )?;
        // A refused pattern has been reported; this value is never used (the load fails).
        Ok(compiled.unwrap_or_else(never_matching))
    }
}

/// The stand-in for a refused pattern (the load fails, so it is never used).
fn never_matching() -> SecretRegex {
    #[expect(clippy::expect_used, reason = "a constant pattern, checked by a test")]
    SecretRegex(regex::Regex::new(r"[^\s\S]").expect("a constant pattern compiles"))
}

/// The `regex` crate's message, on one line, for a file:line:col diagnostic: a syntax error's
/// own words and the character of the pattern it points at.
struct RegexProblem(String);

impl RegexProblem {
    fn new(error: &regex::Error) -> Self {
        let text = error.to_string();
        let lines: Vec<&str> = text.lines().collect();
        // A syntax error reads "regex parse error:", the pattern, a caret line, "error: ...".
        let words = lines.iter().find_map(|l| l.strip_prefix("error: "));
        let caret = lines.iter().find_map(|l| {
            let t = l.trim_start();
            (t.starts_with('^') && t.chars().all(|c| c == '^')).then(|| l.len() - t.len())
        });
        let pattern_indent = lines
            .get(1)
            .map(|l| l.len() - l.trim_start().len())
            .unwrap_or(0);
        let message = match (words, caret) {
            (Some(words), Some(at)) => {
                format!(
                    "{words} (at character {})",
                    at.saturating_sub(pattern_indent) + 1
                )
            }
            (Some(words), None) => words.to_owned(),
            _ => lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" "),
        };
        RegexProblem(message)
    }
}

impl std::fmt::Display for RegexProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a usable regular expression: {}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stand_in_for_a_refused_pattern_compiles() {
        assert!(!never_matching().0.is_match("anything"));
    }

    #[test]
    fn every_builtin_pattern_compiles_within_the_size_limit() {
        for b in BuiltinSecret::ALL {
            SecretRegex::new(b.pattern()).unwrap_or_else(|e| panic!("{}: {e}", b.name()));
        }
    }
}
