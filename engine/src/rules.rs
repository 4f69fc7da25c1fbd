//! Declarative allow/deny rules (G1), checked on the arguments the tool will receive: after
//! argument aliases and the rewrite script, before the before hook.
//!
//! Rules come in groups: the policy's top-level `rules`, and the `rules` of each per-tool
//! override that matches the tool. Every group is a gate of its own: a call is denied when a
//! deny rule of any group matches (deny wins), or when a group has allow rules and none of them
//! matches.
//!
//! A `paths` condition reads its argument as a path relative to the tool's root and judges its
//! normalised form ([`normalize_path`]); a path that cannot be normalised denies the call
//! whenever a rule with such a condition applies to it, so no spelling of a path slips past.
//!
//! Each rule is judged in time linear in the arguments it reads (a path is at most
//! [`toolgate_policy::glob::MAX_PATH_BYTES`] long and matched in one pass), and the call's
//! deadline is checked before each rule: rules run inside the call's timeout.
//!
//! Built-in tools that a feature turns on (`read_tool_result`, `tool_search`) are judged only by
//! rules that name them exactly ([`CompiledRules::naming`]); unknown names are not judged at
//! all and go on to the unknown-tool answer (D4).

use std::time::Instant;

use serde_json::Value;
use toolgate_policy::glob::{Glob, PathGlob, normalize_path};
use toolgate_policy::{Rule, Rules};

use crate::error::At;

/// A rule with its globs (compiled by the policy loader) and its position.
#[derive(Debug, Clone)]
struct CompiledRule {
    tools: Vec<Glob>,
    args: Vec<(String, Glob)>,
    paths: Vec<(String, PathGlob)>,
    sessions: Vec<Glob>,
    reason: Option<String>,
    at: At,
}

impl CompiledRule {
    fn new(rule: &Rule) -> Self {
        CompiledRule {
            tools: rule.tools.clone(),
            args: rule
                .args
                .iter()
                .map(|(k, g)| (k.clone(), g.clone()))
                .collect(),
            paths: rule
                .paths
                .iter()
                .map(|(k, g)| (k.clone(), g.clone()))
                .collect(),
            sessions: rule.sessions.clone(),
            reason: rule.reason.clone(),
            at: At(rule.position.clone()),
        }
    }

    fn has_conditions(&self) -> bool {
        !(self.args.is_empty() && self.paths.is_empty() && self.sessions.is_empty())
    }

    /// Whether the rule lists `tool` by its exact name.
    fn names(&self, tool: &str) -> bool {
        self.tools
            .iter()
            .any(|g| g.is_literal() && g.as_str() == tool)
    }

    /// Whether the rule matches the call. `Err(reason)` when the rule applies to the call but
    /// one of its path arguments cannot be normalised: the call is then denied.
    fn matches(&self, tool: &str, args: &Value, session: Option<&str>) -> Result<bool, String> {
        if !self.tools.is_empty() && !self.tools.iter().any(|g| g.is_match(tool)) {
            return Ok(false);
        }
        if !self.sessions.is_empty() {
            match session {
                Some(s) if self.sessions.iter().any(|g| g.is_match(s)) => {}
                _ => return Ok(false),
            }
        }
        let args_match = self.args.iter().all(|(name, g)| match args.get(name) {
            Some(Value::String(s)) => g.is_match(s),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => g.is_match(&v.to_string()),
            _ => false,
        });
        if !args_match {
            return Ok(false);
        }
        for (name, g) in &self.paths {
            let path = match args.get(name) {
                None | Some(Value::Null) => return Ok(false),
                Some(Value::String(s)) => s,
                Some(other) => {
                    return Err(format!(
                        "the {name:?} argument must be a path (a string), not {other}"
                    ));
                }
            };
            match normalize_path(path) {
                Ok(normal) => {
                    if !g.is_match(&normal) {
                        return Ok(false);
                    }
                }
                Err(e) => {
                    return Err(format!(
                        "the {name:?} argument {:?} cannot be checked against the policy's \
                         path rules: {e}",
                        Shown(path)
                    ));
                }
            }
        }
        Ok(true)
    }
}

/// A path as an error message shows it: whole up to [`SHOWN_PATH_CHARS`] characters, else its
/// start and `...` (a path too long to judge can be as long as the request).
struct Shown<'a>(&'a str);

/// How much of a path an error message shows.
const SHOWN_PATH_CHARS: usize = 200;

impl std::fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.char_indices().nth(SHOWN_PATH_CHARS) {
            None => write!(f, "{:?}", self.0),
            Some((end, _)) => write!(f, "{:?}...", &self.0[..end]),
        }
    }
}

/// Why [`CompiledRules::check`] refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A rule denies the call, for this reason.
    Denied(String),
    /// The call's deadline passed before every rule was judged.
    PastDeadline,
}

/// One group of rules.
#[derive(Debug, Clone, Default)]
pub struct CompiledRules {
    allow: Vec<CompiledRule>,
    deny: Vec<CompiledRule>,
}

impl CompiledRules {
    pub fn compile(rules: &Rules) -> Self {
        CompiledRules {
            allow: rules.allow.iter().map(CompiledRule::new).collect(),
            deny: rules.deny.iter().map(CompiledRule::new).collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// The rules of this group that list `tool` by its exact name, for a built-in tool: globs
    /// and rules without `tools` do not reach it, so an allow list such as `tools: ["fs.*"]`
    /// does not hide it. `None` when no rule names it.
    pub fn naming(&self, tool: &str) -> Option<CompiledRules> {
        let pick = |rules: &[CompiledRule]| -> Vec<CompiledRule> {
            rules.iter().filter(|r| r.names(tool)).cloned().collect()
        };
        let only = CompiledRules {
            allow: pick(&self.allow),
            deny: pick(&self.deny),
        };
        (!only.is_empty()).then_some(only)
    }

    /// Where the rules of this group are that list `tool` by its exact name and can refuse a
    /// call to it (deny rules, and allow rules with conditions), for warnings.
    pub fn rules_refusing(&self, tool: &str) -> Vec<String> {
        let deny = self
            .deny
            .iter()
            .filter(|r| r.names(tool))
            .map(|r| format!("{}deny rule", r.at));
        let allow = self
            .allow
            .iter()
            .filter(|r| r.names(tool) && r.has_conditions())
            .map(|r| format!("{}allow rule with conditions", r.at));
        deny.chain(allow).collect()
    }

    /// `Err` when the call is denied, or when `deadline` passes before the rules are judged
    /// (it is checked before each rule).
    #[cfg(test)]
    pub fn check(
        &self,
        tool: &str,
        args: &Value,
        session: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<(), Refusal> {
        self.decide(tool, args, session, deadline)
            .map(|_| ())
            .map_err(|(refusal, _)| refusal)
    }

    /// Like [`CompiledRules::check`], and says which rule decided, as
    /// `<file>:<line>:<col>: deny[i]` or `allow[i]` (its index in its list): `Ok(Some(_))` is
    /// the allow rule that admitted the call (`None` when the group has no allow rules), the
    /// refusal's label the deny rule that matched (`None` when no allow rule matched, or past
    /// the deadline).
    pub fn decide(
        &self,
        tool: &str,
        args: &Value,
        session: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<Option<String>, (Refusal, Option<String>)> {
        let label = |rule: &CompiledRule, list: &str, i: usize| format!("{}{list}[{i}]", rule.at);
        let judge = |rule: &CompiledRule| {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(Refusal::PastDeadline);
            }
            rule.matches(tool, args, session).map_err(Refusal::Denied)
        };
        for (i, rule) in self.deny.iter().enumerate() {
            let which = || Some(label(rule, "deny", i));
            if judge(rule).map_err(|r| (r, which()))? {
                return Err((
                    Refusal::Denied(match &rule.reason {
                        Some(r) => r.clone(),
                        None => format!(
                            "a deny rule of the policy matches this call ({}rule)",
                            rule.at
                        ),
                    }),
                    which(),
                ));
            }
        }
        if self.allow.is_empty() {
            return Ok(None);
        }
        for (i, rule) in self.allow.iter().enumerate() {
            if judge(rule).map_err(|r| (r, None))? {
                return Ok(Some(label(rule, "allow", i)));
            }
        }
        Err((
            Refusal::Denied(format!(
                "the policy's allow rules do not allow {tool} with these arguments"
            )),
            None,
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;
    use toolgate_policy::glob::PathGlob;

    use super::*;

    fn deny_pem() -> CompiledRules {
        let mut rule = Rule::default();
        rule.paths
            .insert("path".into(), PathGlob::new("*.pem").expect("valid"));
        CompiledRules::compile(&Rules {
            allow: Vec::new(),
            deny: vec![rule],
        })
    }

    #[test]
    fn a_deadline_already_past_stops_the_rules_before_they_are_judged() {
        let past = Instant::now().checked_sub(Duration::from_millis(1));
        let checked = deny_pem().check("fs.read_file", &json!({"path": "a.txt"}), None, past);
        assert_eq!(checked, Err(Refusal::PastDeadline));
    }

    #[test]
    fn before_the_deadline_the_rules_are_judged() {
        let later = Some(Instant::now() + Duration::from_secs(60));
        let rules = deny_pem();
        assert_eq!(
            rules.check("fs.read_file", &json!({"path": "a.txt"}), None, later),
            Ok(())
        );
        assert!(matches!(
            rules.check("fs.read_file", &json!({"path": "k.pem"}), None, later),
            Err(Refusal::Denied(_))
        ));
    }

    #[test]
    fn a_path_too_long_to_judge_is_shown_cut_in_the_reason() {
        let path = "a/".repeat(20_000);
        let Err(Refusal::Denied(reason)) =
            deny_pem().check("fs.read_file", &json!({ "path": path }), None, None)
        else {
            panic!("a 40,000-byte path is refused");
        };
        assert!(reason.contains("at most 4096 bytes"), "{reason}");
        assert!(reason.len() < 500, "{reason}");
    }
}
