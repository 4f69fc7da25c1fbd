//! The sections that say how calls run and what they may do: `dispatch`, `tools`, `aliases`,
//! `rules`, `scripts` and `sessions`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};

use super::{Position, here};
use crate::glob::{Glob, PathGlob};
use crate::shape::de;
use crate::shape::values::{
    self, ArgGlobs, CharCapValue, Count, DurationText, Flag, GlobList, MAX_SAFE_INTEGER, Name,
    PathGlobs, names_only,
};

/// What a failed call does to its turn (D6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = names_only)]
pub enum OnError {
    /// The failure becomes that call's tool message, marked as an error.
    #[default]
    Model,
    /// The turn aborts with the typed error.
    Fail,
}

/// Dispatch defaults (`dispatch:`).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct DispatchSettings {
    /// Run a turn's calls one by one, in the model's order, instead of in parallel. Default false.
    ///
    /// D1.
    #[schemars(with = "Flag")]
    pub sequential: bool,
    /// In parallel mode, at most this many calls of one turn run at once. Absent = no cap.
    #[schemars(
        with = "Count",
        range(min = 1, max = MAX_SAFE_INTEGER),
        extend("x-expected" = "a whole number from 1 to 9007199254740991")
    )]
    pub concurrency: Option<usize>,
    /// Per-call timeout, starting once the call runs (after any wait for a concurrency slot or
    /// group lock) and covering the before hook, the tool and the result handling. A duration
    /// (500ms, 30s, 2m, 1h, 1m30s) or none. Default 60s.
    ///
    /// `None` = no timeout (G2).
    #[serde(deserialize_with = "values::duration_or_none")]
    #[schemars(with = "DurationText")]
    pub timeout: Option<Duration>,
    /// Cap on a text result, in Unicode characters; a longer result is cut and marked. -1 = no cap.
    /// Default 100000. Ignored while reduction is on.
    ///
    /// G3.
    pub max_result_chars: CharCap,
    /// What a failed call does to its turn: model (the failure becomes that call's tool message,
    /// marked as an error; the other calls keep their results) or fail (the turn aborts with the
    /// error). Default model.
    ///
    /// D6.
    pub on_error: OnError,
    /// Sequential mode only: after a failed call, skip the rest of the turn; each skipped call gets
    /// an error result saying why. Default false.
    ///
    /// D7.
    #[schemars(with = "Flag")]
    pub stop_on_error: bool,
    /// Wall-clock bound of each policy script run (rewrite, before, after, `unknown_tool`), also
    /// when the call's timeout is none. A duration above zero (500ms, 1s). Default 1s.
    #[serde(deserialize_with = "values::duration")]
    #[schemars(
        with = "String",
        regex(pattern = r"^([0-9]+(ms|h|m|s))+$"),
        extend(
            "x-expected" = "a duration like 1s or 500ms (units ms, s, m, h); none is not allowed"
        )
    )]
    pub script_timeout: Duration,
}

impl Default for DispatchSettings {
    fn default() -> Self {
        DispatchSettings {
            sequential: false,
            concurrency: None,
            timeout: Some(Duration::from_secs(60)),
            max_result_chars: CharCap::Chars(100_000),
            on_error: OnError::Model,
            stop_on_error: false,
            script_timeout: Duration::from_secs(1),
        }
    }
}

/// A cap on the Unicode characters of a text result (G3). A policy file writes
/// [`CharCap::Unlimited`] as `-1` and [`CharCap::Chars`] as the number; `Display` prints
/// `unlimited` or the number, and serde writes it as the policy file does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CharCap {
    /// No cap.
    Unlimited,
    /// At most this many characters.
    Chars(u64),
}

impl CharCap {
    /// The most characters allowed, or `None` for no cap.
    ///
    /// ```
    /// use toolgate_policy::CharCap;
    ///
    /// assert_eq!(CharCap::Chars(10).limit(), Some(10));
    /// assert_eq!(CharCap::Unlimited.limit(), None);
    /// ```
    pub fn limit(self) -> Option<u64> {
        match self {
            CharCap::Unlimited => None,
            CharCap::Chars(n) => Some(n),
        }
    }
}

impl std::fmt::Display for CharCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CharCap::Unlimited => f.write_str("unlimited"),
            CharCap::Chars(n) => write!(f, "{n}"),
        }
    }
}

/// As the policy file writes it: `-1` or the number.
impl serde::Serialize for CharCap {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CharCap::Unlimited => serializer.serialize_i64(-1),
            CharCap::Chars(n) => serializer.serialize_u64(*n),
        }
    }
}

/// As the policy file writes it: `-1` (the schema refuses anything below it) or the number.
impl<'de> Deserialize<'de> for CharCap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(deserializer)?;
        Ok(u64::try_from(n).map_or(CharCap::Unlimited, CharCap::Chars))
    }
}

/// The schema's `char_cap`: a whole number from -1 (no cap).
impl JsonSchema for CharCap {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        CharCapValue::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        CharCapValue::json_schema(generator)
    }
}

/// The settings for the tools this key matches. Every key is optional; an absent key inherits
/// from dispatch.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(inline, deny_unknown_fields, extend("x-key" = "pattern"))]
pub struct ToolOverride {
    /// Exact tool name or glob pattern (`*`, `?`, `[abc]`): the override's key. When several
    /// match a tool, [`Glob::specificity`] orders them.
    #[serde(skip_deserializing, default = "pattern_from_key")]
    #[schemars(skip)]
    pub pattern: Glob,
    /// Timeout for the matched tools: a duration, or none for no timeout at all (even if dispatch
    /// has one).
    ///
    /// `Some(None)` = explicitly no timeout; `None` = inherit.
    #[serde(default, deserialize_with = "values::override_duration")]
    #[schemars(with = "DurationText")]
    pub timeout: Option<Option<Duration>>,
    /// Result cap for the matched tools, in Unicode characters; -1 = no cap.
    ///
    /// `None` = inherit.
    #[serde(default)]
    pub max_result_chars: Option<CharCap>,
    /// A group name: calls to tools of the same group never run at the same time, even in parallel
    /// mode.
    #[serde(default)]
    #[schemars(length(min = 1), extend("x-expected" = "a non-empty group name"))]
    pub sequential_group: Option<String>,
    /// Allow and deny rules that apply to the matched tools only. Their rules have no tools key:
    /// the override's key is the tool list.
    #[serde(default)]
    #[schemars(with = "ToolRules")]
    pub rules: Rules,
    /// Principal names or globs whose calls the override applies to (its settings and its
    /// rules); for them it is more specific than every override that names no principals or
    /// groups. Absent or empty = every caller.
    ///
    /// C8.
    #[serde(default)]
    #[schemars(with = "GlobList")]
    pub principals: Vec<Glob>,
    /// Groups whose members' calls the override applies to: the caller must belong to one of
    /// them. Absent or empty = every caller.
    ///
    /// C8.
    #[serde(default)]
    pub groups: Vec<String>,
    /// Where the override's key is in the policy file.
    #[serde(skip_deserializing, default = "here")]
    #[schemars(skip)]
    pub position: Option<Position>,
}

impl ToolOverride {
    /// Whether the override names principals or groups: it applies to some callers only (C8).
    pub fn is_scoped(&self) -> bool {
        !self.principals.is_empty() || !self.groups.is_empty()
    }
}

/// The override's key, compiled; a bad glob is reported at the key.
fn pattern_from_key() -> Glob {
    let key = de::key().unwrap_or_default();
    let compiled: Result<_, serde::de::value::Error> =
        de::checked(Glob::new(&key), crate::DiagnosticKind::Glob);
    compiled
        .ok()
        .flatten()
        .unwrap_or_else(|| Glob::literal(&key))
}

/// The aliases of one real tool.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields, extend("x-key" = "tool"))]
pub struct AliasSpec {
    /// Other tool names the model may call the tool by. Each must be a valid, unused tool name.
    #[schemars(with = "Vec<Name>")]
    pub names: Vec<String>,
    /// Argument aliases: real argument name -> the names the model may use instead. Renamed at the
    /// top level of the arguments, only when the real name is absent.
    #[schemars(with = "BTreeMap<String, ArgumentAliases>")]
    pub arguments: BTreeMap<String, Vec<String>>,
    /// Where the real tool's key is in the policy file.
    #[serde(skip_deserializing, default = "here")]
    #[schemars(skip)]
    pub position: Option<Position>,
}

/// The alternative names for this argument.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(inline, extend("x-key" = "argument"))]
struct ArgumentAliases(Vec<Name>);

/// Allow and deny rules. A call is denied when any deny rule matches; otherwise, when there is
/// at least one allow rule, it must match one of them. Deny wins.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct Rules {
    /// When present and non-empty, every call must match one of these rules.
    pub allow: Vec<Rule>,
    /// A call that matches any of these rules is denied, with the rule's reason. Deny wins over
    /// allow.
    pub deny: Vec<Rule>,
}

// `tools.<pattern>.rules`: the rules of an override, whose key is their tool list. Only the
// schema differs from `rules`; they are read as [`Rules`].
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(inline, deny_unknown_fields)]
struct ToolRules {
    /// When present and non-empty, a call to a matched tool must match one of these rules.
    allow: Option<Vec<ToolRule>>,
    /// A call to a matched tool that matches any of these rules is denied. Deny wins over allow.
    deny: Option<Vec<ToolRule>>,
}

/// A rule under `tools.<pattern>.rules`: a [`Rule`] without its `tools` key.
struct ToolRule;

impl JsonSchema for ToolRule {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "tool_rule".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = Rule::json_schema(generator);
        if let Some(serde_json::Value::Object(properties)) = schema.get_mut("properties") {
            // An override's rules judge its tools' calls only.
            for key in ["tools", "resources", "prompts"] {
                properties.remove(key);
            }
        }
        schema.insert(
            "x-expected".to_owned(),
            "a rule mapping with args, paths, sessions, principals, groups and reason".into(),
        );
        schema
    }
}

impl Rules {
    /// Whether there are no rules at all (every call passes).
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }
}

/// One declarative rule. Every condition given must hold for the rule to match.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(
    rename = "rule",
    deny_unknown_fields,
    transform = values::no_description,
    extend(
        "x-expected" = "a rule mapping with tools, resources, prompts, args, paths, sessions, principals, groups and reason"
    )
)]
pub struct Rule {
    /// Real tool names or globs the rule applies to. A rule that names none of tools, resources
    /// and prompts judges every call (tool calls, resource reads, prompt gets); one that names
    /// some judges those kinds only.
    ///
    /// Under an override, its tools (A2).
    #[schemars(with = "GlobList")]
    pub tools: Vec<Glob>,
    /// Resource URIs or globs (* crosses /) whose reads the rule judges, compared with the URI
    /// in normal form (scheme and host in lower case, escapes of unreserved characters decoded,
    /// . and .. segments removed). A read's arguments are {uri}.
    ///
    /// Reads of the upstream servers' resources through `toolgate serve` (A2).
    #[schemars(with = "GlobList")]
    pub resources: Vec<Glob>,
    /// Prompt names (`<server>.<prompt>`) or globs whose gets the rule judges; the prompt's
    /// arguments are its args.
    ///
    /// Gets of the upstream servers' prompts through `toolgate serve` (A2).
    #[schemars(with = "GlobList")]
    pub prompts: Vec<Glob>,
    /// Top-level argument name -> glob its value must match. Every listed argument must match.
    ///
    /// A string value is matched as is, a number or boolean by its JSON text. A missing argument
    /// does not match.
    #[schemars(with = "ArgGlobs")]
    pub args: BTreeMap<String, Glob>,
    /// Top-level argument name -> path glob its normalised, root-relative path must match. Every
    /// listed argument must match.
    ///
    /// See [`crate::glob::PathGlob`] and [`crate::glob::normalize_path`]. A path that cannot be
    /// normalised (absolute, climbing above the root, holding a NUL byte, not a string) makes
    /// the call denied whenever a rule with such a condition applies to it.
    #[schemars(with = "PathGlobs")]
    pub paths: BTreeMap<String, PathGlob>,
    /// Session ids or globs; absent or empty = any session (calls without a session match only an
    /// empty list).
    #[schemars(with = "GlobList")]
    pub sessions: Vec<Glob>,
    /// Principal names or globs (the caller toolgate serve --http authenticated; local for the
    /// CLI and stdio); absent or empty = any caller.
    ///
    /// C5.
    #[schemars(with = "GlobList")]
    pub principals: Vec<Glob>,
    /// Groups: the caller must belong to one of them; absent or empty = any caller.
    ///
    /// C5.
    pub groups: Vec<String>,
    /// For a deny rule, the reason told to the model.
    #[schemars(extend("x-expected" = "a string"))]
    pub reason: Option<String>,
    /// Where the rule is in the policy file.
    #[serde(skip_deserializing, default = "here")]
    #[schemars(skip)]
    pub position: Option<Position>,
}

/// Which hook a script serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hook {
    /// Rewrites the arguments (D2-D3).
    Rewrite,
    /// Authorises a call (G1).
    Before,
    /// Audits a call after it finished (G7).
    After,
    /// Answers a call to an unknown tool (D4).
    UnknownTool,
}

/// The scripts, at most one per hook.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct Scripts {
    /// Rewrites a tool call's arguments (not a resource read's or a prompt get's). Sees the
    /// variables kind, tool, `model_name`, args, `call_id` and session; returns a new args map,
    /// or () to keep them.
    ///
    /// See [`Hook::Rewrite`].
    pub rewrite: Option<ScriptSource>,
    /// Authorises a call. Sees kind ("tool", "resource" or "prompt"), tool (for a resource, its
    /// URI in normal form), `model_name`, args, `call_id` and session; returns () or true to
    /// allow, false or a string (the reason told to the model) to deny.
    ///
    /// See [`Hook::Before`].
    pub before: Option<ScriptSource>,
    /// Audits a finished call. Sees kind, tool, `model_name`, args, `call_id`, session and outcome =
    /// #{`duration_ms`, `is_error`, `error_kind`, error, chars, truncated}; its return value is
    /// ignored.
    ///
    /// See [`Hook::After`].
    pub after: Option<ScriptSource>,
    /// Answers a call to a tool that does not exist. Sees tool, `model_name`, args, `call_id`,
    /// session and suggestions (the closest tool names); returns the text the model gets, or ()
    /// for the default message.
    ///
    /// See [`Hook::UnknownTool`].
    pub unknown_tool: Option<ScriptSource>,
}

/// A script's text and where it came from, so compile errors point into the right file.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptSource {
    /// The Rhai code.
    pub code: String,
    /// The file holding the code (the policy for inline scripts, else the `.rhai` file).
    pub file: PathBuf,
    /// 1-based line in `file` where `code`'s first line is (1 for a `.rhai` file).
    pub line_offset: u32,
    /// Characters before the code on each of its lines in `file`: the indentation of an inline
    /// block script, the position after the key (and quote) of a one-line inline script, 0 for
    /// a `.rhai` file. A script's column plus this is the column in `file`.
    pub column_offset: u32,
}

/// Session state kept in a store (issue 12): the catalog tools a session found, shared by every
/// process that uses the same store.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct SessionSettings {
    /// A session's state expires this long after its last change (a duration such as 24h or 30m),
    /// or none for never. Default 24h.
    #[serde(deserialize_with = "values::duration_or_none")]
    #[schemars(with = "DurationText")]
    pub ttl: Option<Duration>,
}

/// The default [`SessionSettings::ttl`].
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(24 * 60 * 60);

impl Default for SessionSettings {
    fn default() -> Self {
        SessionSettings {
            ttl: Some(DEFAULT_SESSION_TTL),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_char_cap_serialises_as_the_policy_file_writes_it() {
        assert_eq!(
            serde_json::to_value(CharCap::Unlimited).ok(),
            Some(serde_json::json!(-1))
        );
        assert_eq!(
            serde_json::to_value(CharCap::Chars(20_000)).ok(),
            Some(serde_json::json!(20_000))
        );
    }

    #[test]
    fn a_char_cap_displays_as_a_number_or_unlimited() {
        assert_eq!(CharCap::Unlimited.to_string(), "unlimited");
        assert_eq!(CharCap::Chars(7).to_string(), "7");
    }
}
