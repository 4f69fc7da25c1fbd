//! The sections that say how calls run and what they may do: `dispatch`, `tools`, `aliases`,
//! `rules`, `scripts` and `sessions`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_saphyr::granit_parser::ScalarStyle;

use super::build::{Build, child, item, join_key, key_pos, value_pos};
use crate::error::DiagnosticKind;
use crate::file::{MAX_POLICY_FILE_BYTES, read_text_file};
use crate::model::{self, DispatchSettings};
use crate::yaml::{Kind, Node};

use super::values::{
    ArgGlobs, CharCapValue, Count, DurationText, Flag, GlobList, MAX_SAFE_INTEGER, Name, PathGlobs,
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
    pub concurrency: Option<Count>,
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
    extend(
        "x-expected" = "a rule mapping with tools, resources, prompts, args, paths, sessions and reason"
    )
)]
pub(crate) struct Rule {
    /// Real tool names or globs the rule applies to. A rule that names none of tools, resources
    /// and prompts judges every call (tool calls, resource reads, prompt gets); one that names
    /// some judges those kinds only.
    pub tools: Option<GlobList>,
    /// Resource URIs or globs (* crosses /) whose reads the rule judges, compared with the URI in
    /// normal form (scheme and host in lower case, escapes of unreserved characters decoded, . and
    /// .. segments removed). A read's arguments are {uri}.
    pub resources: Option<GlobList>,
    /// Prompt names (<server>.<prompt>) or globs whose gets the rule judges; the prompt's arguments
    /// are its args.
    pub prompts: Option<GlobList>,
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
    /// Rewrites a tool call's arguments (not a resource read's or a prompt get's). Sees the
    /// variables kind, tool, model_name, args, call_id and session; returns a new args map, or ()
    /// to keep them.
    pub rewrite: Option<Script>,
    /// Authorises a call. Sees kind ("tool", "resource" or "prompt"), tool (for a resource, its URI
    /// in normal form), model_name, args, call_id and session; returns () or true to allow, false
    /// or a string (the reason told to the model) to deny.
    pub before: Option<Script>,
    /// Audits a finished call. Sees kind, tool, model_name, args, call_id, session and outcome =
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

// ---- From the file's shape to the model -------------------------------------------------

impl Dispatch {
    pub(crate) fn build(self, node: &Node, cx: &mut Build<'_>) -> DispatchSettings {
        let mut dispatch = DispatchSettings::default();
        if let Some(flag) = self.sequential {
            dispatch.sequential = flag.0;
        }
        dispatch.concurrency = self.concurrency.and_then(|c| usize::try_from(c.0).ok());
        if let Some(timeout) = self.timeout {
            let pos = value_pos(node, "timeout");
            if let Some(timeout) = cx.duration(&timeout, pos, "dispatch.timeout") {
                dispatch.timeout = timeout;
            }
        }
        if let Some(cap) = self.max_result_chars {
            dispatch.max_result_chars = cap.cap();
        }
        if let Some(on_error) = self.on_error {
            dispatch.on_error = match on_error {
                OnError::Model => model::OnError::Model,
                OnError::Fail => model::OnError::Fail,
            };
        }
        if let Some(flag) = self.stop_on_error {
            dispatch.stop_on_error = flag.0;
        }
        if let Some(bound) = self.script_timeout {
            // The schema refuses `none` and zero: a script always has a bound.
            let pos = value_pos(node, "script_timeout");
            let text = DurationText(bound);
            if let Some(Some(bound)) = cx.duration(&text, pos, "dispatch.script_timeout") {
                dispatch.script_timeout = bound;
            }
        }
        dispatch
    }
}

/// The overrides in the order the file writes them (the tree's order).
pub(crate) fn tools(
    mut tools: BTreeMap<String, ToolOverride>,
    node: &Node,
    cx: &mut Build<'_>,
) -> Vec<model::ToolOverride> {
    let mut out = Vec::new();
    for entry in node.entries() {
        let Some(shape) = tools.remove(&entry.key) else {
            continue;
        };
        let path = join_key("tools", &entry.key);
        let pattern = cx.glob(&entry.key, entry.key_pos, &path);
        // The settings are read even under a bad pattern, so their problems are reported too.
        let settings = &entry.value;
        let timeout = shape.timeout.and_then(|t| {
            cx.duration(
                &t,
                value_pos(settings, "timeout"),
                &format!("{path}.timeout"),
            )
        });
        let rules = shape.rules.map_or_else(model::Rules::default, |rules| {
            rules.build(child(settings, "rules"), &format!("{path}.rules"), cx)
        });
        if let Some(pattern) = pattern {
            out.push(model::ToolOverride {
                pattern,
                timeout,
                max_result_chars: shape.max_result_chars.map(CharCapValue::cap),
                sequential_group: shape.sequential_group,
                rules,
                position: cx.position(entry.key_pos),
            });
        }
    }
    out
}

impl ToolRules {
    fn build(self, node: &Node, path: &str, cx: &mut Build<'_>) -> model::Rules {
        let list = |rules: Option<Vec<ToolRule>>, key: &str, cx: &mut Build<'_>| {
            let list_node = child(node, key);
            rules
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(i, r)| {
                    let rule = Rule {
                        tools: None,
                        resources: None,
                        prompts: None,
                        args: r.args,
                        paths: r.paths,
                        sessions: r.sessions,
                        reason: r.reason,
                    };
                    rule.build(item(list_node, i), &format!("{path}.{key}[{i}]"), cx)
                })
                .collect()
        };
        model::Rules {
            allow: list(self.allow, "allow", cx),
            deny: list(self.deny, "deny", cx),
        }
    }
}

impl Rules {
    pub(crate) fn build(self, node: &Node, path: &str, cx: &mut Build<'_>) -> model::Rules {
        let list = |rules: Option<Vec<Rule>>, key: &str, cx: &mut Build<'_>| {
            let list_node = child(node, key);
            rules
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(i, rule)| rule.build(item(list_node, i), &format!("{path}.{key}[{i}]"), cx))
                .collect()
        };
        model::Rules {
            allow: list(self.allow, "allow", cx),
            deny: list(self.deny, "deny", cx),
        }
    }
}

impl Rule {
    fn build(self, node: &Node, path: &str, cx: &mut Build<'_>) -> model::Rule {
        let mut rule = model::Rule {
            position: cx.position(node.pos),
            ..model::Rule::default()
        };
        rule.tools = cx.glob_list(self.tools, child(node, "tools"), &format!("{path}.tools"));
        rule.resources = cx.glob_list(
            self.resources,
            child(node, "resources"),
            &format!("{path}.resources"),
        );
        rule.prompts = cx.glob_list(
            self.prompts,
            child(node, "prompts"),
            &format!("{path}.prompts"),
        );
        rule.sessions = cx.glob_list(
            self.sessions,
            child(node, "sessions"),
            &format!("{path}.sessions"),
        );
        let field = format!("{path}.args");
        let args_node = child(node, "args");
        for (name, glob) in self.args.map(|a| a.0).unwrap_or_default() {
            let at = join_key(&field, &name);
            if let Some(glob) = cx.glob(&glob.0, value_pos(args_node, &name), &at) {
                rule.args.insert(name, glob);
            }
        }
        let field = format!("{path}.paths");
        let paths_node = child(node, "paths");
        for (name, glob) in self.paths.map(|p| p.0).unwrap_or_default() {
            let at = join_key(&field, &name);
            if let Some(glob) = cx.path_glob(&glob.0, key_pos(paths_node, &name), &at) {
                rule.paths.insert(name, glob);
            }
        }
        rule.reason = self.reason;
        rule
    }
}

pub(crate) fn aliases(
    aliases: BTreeMap<String, Alias>,
    node: &Node,
    cx: &Build<'_>,
) -> BTreeMap<String, model::AliasSpec> {
    aliases
        .into_iter()
        .map(|(tool, alias)| {
            let spec = model::AliasSpec {
                names: names(alias.names.unwrap_or_default()),
                arguments: alias
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(argument, others)| (argument, names(others.0)))
                    .collect(),
                position: cx.position(key_pos(node, &tool)),
            };
            (tool, spec)
        })
        .collect()
}

pub(crate) fn names(list: Vec<Name>) -> Vec<String> {
    list.into_iter().map(|n| n.0).collect()
}

impl Scripts {
    pub(crate) fn build(self, node: &Node, cx: &mut Build<'_>) -> model::Scripts {
        let one = |script: Option<Script>, hook: &str, cx: &mut Build<'_>| {
            script.and_then(|s| s.build(child(node, hook), &format!("scripts.{hook}"), cx))
        };
        model::Scripts {
            rewrite: one(self.rewrite, "rewrite", cx),
            before: one(self.before, "before", cx),
            after: one(self.after, "after", cx),
            unknown_tool: one(self.unknown_tool, "unknown_tool", cx),
        }
    }
}

impl Script {
    /// An inline script keeps the policy file and the line its code starts on; a file script
    /// is read now, so a missing file is reported at its `file:` key.
    fn build(self, node: &Node, path: &str, cx: &mut Build<'_>) -> Option<model::ScriptSource> {
        if let Some(code) = self.code {
            let (line_offset, column_offset) = code_offsets(child(node, "code"), &code);
            return Some(model::ScriptSource {
                code,
                file: cx.file.to_path_buf(),
                line_offset,
                column_offset,
            });
        }
        let written = self.file?.0;
        let resolved = cx.resolve(&written);
        match read_text_file(&resolved, MAX_POLICY_FILE_BYTES) {
            Ok(code) => Some(model::ScriptSource {
                code,
                file: resolved,
                line_offset: 1,
                column_offset: 0,
            }),
            Err(error) => {
                let error = error.problem;
                cx.report(
                    key_pos(node, "file"),
                    format!(
                        "{path}.file: cannot read script {written:?} (looked for {}): {error}",
                        resolved.display()
                    ),
                    DiagnosticKind::MissingFile,
                );
                None
            }
        }
    }
}

/// Where inline code starts in the policy file: the line of its first line, and the column
/// offset of its text.
fn code_offsets(code: &Node, text: &str) -> (u32, u32) {
    let style = match &code.kind {
        Kind::Str(_, style) => *style,
        _ => ScalarStyle::Plain,
    };
    // The parser places a block scalar (`code: |`) at its first non-blank line; the code's own
    // first line is earlier by the blank lines it starts with.
    let block = matches!(style, ScalarStyle::Literal | ScalarStyle::Folded);
    let leading_blank_lines = if block {
        u32::try_from(text.chars().take_while(|c| *c == '\n').count()).unwrap_or(0)
    } else {
        0
    };
    let line_offset = code.pos.line.saturating_sub(leading_blank_lines).max(1);
    // Rhai columns count from the start of each code line. In a block scalar every line is
    // indented alike; a flow scalar maps exactly only while it stays on one line (`code:
    // "..."`), where its text starts after the quote. The parser places a scalar at its text,
    // or at the opening quote of a quoted one.
    let column_offset = match style {
        ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => code.pos.column,
        _ => code.pos.column.saturating_sub(1),
    };
    (line_offset, column_offset)
}

impl Sessions {
    pub(crate) fn build(self, node: &Node, cx: &mut Build<'_>) -> model::SessionSettings {
        let mut sessions = model::SessionSettings::default();
        if let Some(ttl) = self.ttl
            && let Some(ttl) = cx.duration(&ttl, value_pos(node, "ttl"), "sessions.ttl")
        {
            sessions.ttl = ttl;
        }
        sessions
    }
}
