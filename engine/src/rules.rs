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

use crate::access::CallKind;
use crate::caller::Caller;
use crate::error::At;

/// A rule with its globs (compiled by the policy loader) and its position, for one kind of call.
#[derive(Debug, Clone)]
struct CompiledRule {
    /// The names of the kind the rule judges (its `tools`, `resources` or `prompts`); empty =
    /// every name.
    tools: Vec<Glob>,
    args: Vec<(String, Glob)>,
    paths: Vec<(String, PathGlob)>,
    sessions: Vec<Glob>,
    /// The callers the rule judges (C5); empty = any.
    principals: Vec<Glob>,
    groups: Vec<String>,
    reason: Option<String>,
    at: At,
    /// Its place in its list (`allow` or `deny`) in the policy, for the label that says which
    /// rule decided: the rules of one kind are some of the list.
    index: usize,
}

impl CompiledRule {
    /// `rule` as it judges calls of `kind`, or `None` when it does not judge them (A2): a rule
    /// that names none of tools, resources and prompts judges every kind; one that names some
    /// judges those kinds only.
    fn for_kind(rule: &Rule, index: usize, kind: CallKind) -> Option<Self> {
        let names = match kind {
            CallKind::Tool => &rule.tools,
            CallKind::Resource => &rule.resources,
            CallKind::Prompt => &rule.prompts,
        };
        let names_any =
            !(rule.tools.is_empty() && rule.resources.is_empty() && rule.prompts.is_empty());
        if names_any && names.is_empty() {
            return None;
        }
        Some(CompiledRule {
            tools: names.clone(),
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
            principals: rule.principals.clone(),
            groups: rule.groups.clone(),
            reason: rule.reason.clone(),
            at: At(rule.position.clone()),
            index,
        })
    }

    fn has_conditions(&self) -> bool {
        !(self.args.is_empty()
            && self.paths.is_empty()
            && self.sessions.is_empty()
            && self.principals.is_empty()
            && self.groups.is_empty())
    }

    /// Whether the rule lists `tool` by its exact name.
    fn names(&self, tool: &str) -> bool {
        self.tools
            .iter()
            .any(|g| g.is_literal() && g.as_str() == tool)
    }

    /// Whether the rule matches the call. `Err(reason)` when the rule applies to the call but
    /// one of its path arguments cannot be normalised: the call is then denied.
    fn matches(
        &self,
        tool: &str,
        args: &Value,
        session: Option<&str>,
        caller: &Caller,
    ) -> Result<bool, String> {
        if !self.tools.is_empty() && !self.tools.iter().any(|g| g.is_match(tool)) {
            return Ok(false);
        }
        // C5: a rule naming principals or groups judges their calls only.
        if !self.principals.is_empty() && !self.principals.iter().any(|g| g.is_match(caller.name()))
        {
            return Ok(false);
        }
        if !self.groups.is_empty() && !self.groups.iter().any(|g| caller.in_group(g)) {
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
    /// The group had allow rules before they were picked for one kind of call: a call that
    /// none of the picked ones lets through is denied, also when none was picked (A2).
    gated: bool,
    /// The kind of call the rules were picked for.
    kind: CallKind,
}

impl CompiledRules {
    /// The rules of the group that judge tool calls.
    pub fn compile(rules: &Rules) -> Self {
        Self::compile_for(rules, CallKind::Tool)
    }

    /// The rules of the group that judge calls of `kind` (A2; see [`CompiledRule::for_kind`]).
    /// A group with allow rules stays a gate for every kind: if none of its allow rules judges
    /// the kind, the kind is denied.
    pub fn compile_for(rules: &Rules, kind: CallKind) -> Self {
        let pick = |list: &[Rule]| -> Vec<CompiledRule> {
            list.iter()
                .enumerate()
                .filter_map(|(i, r)| CompiledRule::for_kind(r, i, kind))
                .collect()
        };
        CompiledRules {
            allow: pick(&rules.allow),
            deny: pick(&rules.deny),
            gated: !rules.allow.is_empty(),
            kind,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty() && !self.gated
    }

    /// The rules of this group that list `tool` by its exact name, for a built-in tool: globs
    /// and rules without `tools` do not reach it, so an allow list such as `tools: ["fs.*"]`
    /// does not hide it. `None` when no rule names it.
    pub fn naming(&self, tool: &str) -> Option<CompiledRules> {
        let pick = |rules: &[CompiledRule]| -> Vec<CompiledRule> {
            rules.iter().filter(|r| r.names(tool)).cloned().collect()
        };
        let allow = pick(&self.allow);
        let only = CompiledRules {
            kind: self.kind,
            gated: !allow.is_empty(),
            allow,
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
        self.decide(tool, args, session, &Caller::local(), deadline)
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
        caller: &Caller,
        deadline: Option<Instant>,
    ) -> Result<Option<String>, (Refusal, Option<String>)> {
        let label = |rule: &CompiledRule, list: &str| format!("{}{list}[{}]", rule.at, rule.index);
        let judge = |rule: &CompiledRule| {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(Refusal::PastDeadline);
            }
            rule.matches(tool, args, session, caller)
                .map_err(Refusal::Denied)
        };
        for rule in &self.deny {
            let which = || Some(label(rule, "deny"));
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
            if !self.gated {
                return Ok(None);
            }
            return Err((
                Refusal::Denied(format!(
                    "the policy has allow rules, and none of them judges a {} (name them in an \
                 allow rule's {}, or write one that names none of tools, resources and prompts)",
                    match self.kind {
                        CallKind::Tool => "tool call",
                        CallKind::Resource => "resource read",
                        CallKind::Prompt => "prompt get",
                    },
                    match self.kind {
                        CallKind::Tool => "tools",
                        CallKind::Resource => "resources",
                        CallKind::Prompt => "prompts",
                    }
                )),
                None,
            ));
        }
        for rule in &self.allow {
            if judge(rule).map_err(|r| (r, None))? {
                return Ok(Some(label(rule, "allow")));
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

    #[test]
    fn a_rule_is_labelled_by_its_place_in_the_policy_when_one_kind_is_picked() {
        let for_reads = Rule {
            resources: vec![Glob::new("demo://*").expect("valid")],
            ..Default::default()
        };
        let for_tools = Rule {
            tools: vec![Glob::new("echo").expect("valid")],
            ..Default::default()
        };
        let rules = Rules {
            allow: Vec::new(),
            deny: vec![for_reads, for_tools],
        };
        let tools = CompiledRules::compile_for(&rules, CallKind::Tool);
        let Err((_, label)) =
            tools.decide("echo", &serde_json::json!({}), None, &Caller::local(), None)
        else {
            panic!("echo is denied");
        };
        assert_eq!(label.as_deref(), Some("deny[1]"));
        let reads = CompiledRules::compile_for(&rules, CallKind::Resource);
        let Err((_, label)) = reads.decide(
            "demo://a",
            &serde_json::json!({}),
            None,
            &Caller::local(),
            None,
        ) else {
            panic!("the read is denied");
        };
        assert_eq!(label.as_deref(), Some("deny[0]"));
    }
}
