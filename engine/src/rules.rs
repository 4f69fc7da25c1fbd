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
//! Built-in tools that a feature turns on (`read_tool_result`, `tool_search`) are judged only by
//! rules that name them exactly ([`CompiledRules::naming`]); unknown names are not judged at
//! all and go on to the unknown-tool answer (D4).

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
                        "the {name:?} argument {path:?} cannot be checked against the policy's \
                         path rules: {e}"
                    ));
                }
            }
        }
        Ok(true)
    }
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

    /// `Err(reason)` when the call is denied.
    pub fn check(&self, tool: &str, args: &Value, session: Option<&str>) -> Result<(), String> {
        for rule in &self.deny {
            if rule.matches(tool, args, session)? {
                return Err(match &rule.reason {
                    Some(r) => r.clone(),
                    None => format!(
                        "a deny rule of the policy matches this call ({}rule)",
                        rule.at
                    ),
                });
            }
        }
        if self.allow.is_empty() {
            return Ok(());
        }
        for rule in &self.allow {
            if rule.matches(tool, args, session)? {
                return Ok(());
            }
        }
        Err(format!(
            "the policy's allow rules do not allow {tool} with these arguments"
        ))
    }
}
