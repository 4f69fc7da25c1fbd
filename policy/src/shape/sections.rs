//! The sections that say how calls run and what they may do: `dispatch`, `tools`, `aliases`,
//! `rules`, `scripts` and `sessions`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::values::{
    ArgGlobs, CharCapValue, DurationText, Flag, GlobList, MAX_SAFE_INTEGER, Name, PathGlobs,
    PathText, names_only,
};

// `dispatch`: the description is the field's, in `PolicyFile`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub(crate) struct Dispatch {
    /// Run a turn's calls one by one, in the model's order, instead of in parallel. Default false.
    pub sequential: Option<Flag>,
    /// In parallel mode, at most this many calls of one turn run at once. Absent = no cap.
    #[schemars(
        range(min = 1, max = MAX_SAFE_INTEGER),
        extend("x-expected" = "a whole number from 1 to 9007199254740991")
    )]
    pub concurrency: Option<u64>,
    /// Per-call timeout, starting once the call runs (after any wait for a concurrency slot or
    /// group lock) and covering the before hook, the tool and the result handling. A duration
    /// (500ms, 30s, 2m, 1h, 1m30s) or none. Default 60s.
    pub timeout: Option<DurationText>,
    /// Cap on a text result, in Unicode characters; a longer result is cut and marked. -1 = no cap.
    /// Default 100000. Ignored while reduction is on.
    pub max_result_chars: Option<CharCapValue>,
    /// What a failed call does to its turn: model (the failure becomes that call's tool message,
    /// marked as an error; the other calls keep their results) or fail (the turn aborts with the
    /// error). Default model.
    pub on_error: Option<OnError>,
    /// Sequential mode only: after a failed call, skip the rest of the turn; each skipped call gets
    /// an error result saying why. Default false.
    pub stop_on_error: Option<Flag>,
    /// Wall-clock bound of each policy script run (rewrite, before, after, unknown_tool), also when
    /// the call's timeout is none. A duration above zero (500ms, 1s). Default 1s.
    #[schemars(
        regex(pattern = r"^([0-9]+(ms|h|m|s))+$"),
        extend(
            "x-expected" = "a duration like 1s or 500ms (units ms, s, m, h); none is not allowed"
        )
    )]
    pub script_timeout: Option<String>,
}

// `dispatch.on_error`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = names_only)]
pub(crate) enum OnError {
    Model,
    Fail,
}

/// The settings for the tools this key matches. Every key is optional; an absent key inherits
/// from dispatch.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline, extend("x-key" = "pattern"))]
pub(crate) struct ToolOverride {
    /// Timeout for the matched tools: a duration, or none for no timeout at all (even if dispatch
    /// has one).
    pub timeout: Option<DurationText>,
    /// Result cap for the matched tools, in Unicode characters; -1 = no cap.
    pub max_result_chars: Option<CharCapValue>,
    /// A group name: calls to tools of the same group never run at the same time, even in parallel
    /// mode.
    #[schemars(length(min = 1), extend("x-expected" = "a non-empty group name"))]
    pub sequential_group: Option<String>,
    /// Allow and deny rules that apply to the matched tools only. Their rules have no tools key:
    /// the override's key is the tool list.
    pub rules: Option<ToolRules>,
}

// `tools.<pattern>.rules`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub(crate) struct ToolRules {
    /// When present and non-empty, a call to a matched tool must match one of these rules.
    pub allow: Option<Vec<ToolRule>>,
    /// A call to a matched tool that matches any of these rules is denied. Deny wins over allow.
    pub deny: Option<Vec<ToolRule>>,
}

// A rule under `tools.<pattern>.rules`: the override's key is its tool list.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    rename = "tool_rule",
    extend("x-expected" = "a rule mapping with args, paths, sessions and reason")
)]
pub(crate) struct ToolRule {
    /// Top-level argument name -> glob its value must match. Every listed argument must match.
    pub args: Option<ArgGlobs>,
    /// Top-level argument name -> path glob its normalised, root-relative path must match. Every
    /// listed argument must match.
    pub paths: Option<PathGlobs>,
    /// Session ids or globs; absent or empty = any session.
    pub sessions: Option<GlobList>,
    /// For a deny rule, the reason told to the model.
    #[schemars(extend("x-expected" = "a string"))]
    pub reason: Option<String>,
}

/// The aliases of one real tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline, extend("x-key" = "tool"))]
pub(crate) struct Alias {
    /// Other tool names the model may call the tool by. Each must be a valid, unused tool name.
    pub names: Option<Vec<Name>>,
    /// Argument aliases: real argument name -> the names the model may use instead. Renamed at the
    /// top level of the arguments, only when the real name is absent.
    pub arguments: Option<BTreeMap<String, ArgumentAliases>>,
}

/// The alternative names for this argument.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(inline, extend("x-key" = "argument"))]
pub(crate) struct ArgumentAliases(pub Vec<Name>);

// `rules`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub(crate) struct Rules {
    /// When present and non-empty, every call must match one of these rules.
    pub allow: Option<Vec<Rule>>,
    /// A call that matches any of these rules is denied, with the rule's reason. Deny wins over
    /// allow.
    pub deny: Option<Vec<Rule>>,
}

// A rule under `rules`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    rename = "rule",
    extend("x-expected" = "a rule mapping with tools, args, paths, sessions and reason")
)]
pub(crate) struct Rule {
    /// Real tool names or globs the rule applies to; absent or empty = every tool.
    pub tools: Option<GlobList>,
    /// Top-level argument name -> glob its value must match. Every listed argument must match.
    pub args: Option<ArgGlobs>,
    /// Top-level argument name -> path glob its normalised, root-relative path must match. Every
    /// listed argument must match.
    pub paths: Option<PathGlobs>,
    /// Session ids or globs; absent or empty = any session (calls without a session match only an
    /// empty list).
    pub sessions: Option<GlobList>,
    /// For a deny rule, the reason told to the model.
    #[schemars(extend("x-expected" = "a string"))]
    pub reason: Option<String>,
}

// `scripts`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub(crate) struct Scripts {
    /// Rewrites a call's arguments. Sees the variables tool, model_name, args, call_id and session;
    /// returns a new args map, or () to keep them.
    pub rewrite: Option<Script>,
    /// Authorises a call. Sees tool, model_name, args, call_id and session; returns () or true to
    /// allow, false or a string (the reason told to the model) to deny.
    pub before: Option<Script>,
    /// Audits a finished call. Sees tool, model_name, args, call_id, session and outcome =
    /// #{duration_ms, is_error, error_kind, error, chars, truncated}; its return value is ignored.
    pub after: Option<Script>,
    /// Answers a call to a tool that does not exist. Sees tool, model_name, args, call_id, session
    /// and suggestions (the closest tool names); returns the text the model gets, or () for the
    /// default message.
    pub unknown_tool: Option<Script>,
}

// One hook's Rhai script: inline or in a file.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    rename = "script",
    extend(
        "oneOf" = [{ "required": ["code"] }, { "required": ["file"] }],
        "x-expected" = "exactly one of code (inline Rhai) or file (a .rhai file)"
    )
)]
pub(crate) struct Script {
    /// The Rhai code, inline; use a block scalar (code: |) for several lines. Error line numbers
    /// point into the policy file.
    #[schemars(extend("x-expected" = "a string of Rhai code"))]
    pub code: Option<String>,
    /// A .rhai file holding the code, relative to the policy file's directory. It must exist.
    pub file: Option<PathText>,
}

// `sessions`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub(crate) struct Sessions {
    /// A session's state expires this long after its last change (a duration such as 24h or 30m),
    /// or none for never. Default 24h.
    pub ttl: Option<DurationText>,
}
