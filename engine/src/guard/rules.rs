//! Declarative allow/deny rules (G1), checked before any script.
//!
//! Rules come in groups: the policy's top-level `rules`, and the `rules` of each per-tool
//! override that matches the tool. Every group is a gate of its own: a call is denied when a
//! deny rule of any group matches (deny wins), or when a group has allow rules and none of them
//! matches.

use globset::{GlobBuilder, GlobMatcher};
use toolgate_policy::{Rule, Rules};

use super::{CallResult, Invocation, Layer, Next};
use crate::error::{At, BuildError, CallError, DeniedBy};
use crate::tool::BoxFuture;

fn glob(pattern: &str, at: &At) -> Result<GlobMatcher, BuildError> {
    GlobBuilder::new(pattern)
        .literal_separator(false)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| BuildError::Setting {
            message: format!("bad glob {pattern:?}: {e}"),
            at: at.clone(),
        })
}

#[derive(Debug, Clone)]
struct CompiledRule {
    tools: Vec<GlobMatcher>,
    args: Vec<(String, GlobMatcher)>,
    sessions: Vec<GlobMatcher>,
    reason: Option<String>,
    at: At,
}

impl CompiledRule {
    fn new(rule: &Rule) -> Result<Self, BuildError> {
        let at = At(rule.position.clone());
        Ok(CompiledRule {
            tools: rule
                .tools
                .iter()
                .map(|p| glob(p, &at))
                .collect::<Result<_, _>>()?,
            args: rule
                .args
                .iter()
                .map(|(k, p)| Ok((k.clone(), glob(p, &at)?)))
                .collect::<Result<_, BuildError>>()?,
            sessions: rule
                .sessions
                .iter()
                .map(|p| glob(p, &at))
                .collect::<Result<_, _>>()?,
            reason: rule.reason.clone(),
            at,
        })
    }

    fn matches(&self, tool: &str, args: &serde_json::Value, session: Option<&str>) -> bool {
        if !self.tools.is_empty() && !self.tools.iter().any(|g| g.is_match(tool)) {
            return false;
        }
        if !self.sessions.is_empty() {
            match session {
                Some(s) if self.sessions.iter().any(|g| g.is_match(s)) => {}
                _ => return false,
            }
        }
        self.args.iter().all(|(name, g)| match args.get(name) {
            Some(serde_json::Value::String(s)) => g.is_match(s),
            Some(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
                g.is_match(v.to_string())
            }
            _ => false,
        })
    }
}

/// One group of rules.
#[derive(Debug, Clone, Default)]
pub struct CompiledRules {
    allow: Vec<CompiledRule>,
    deny: Vec<CompiledRule>,
}

impl CompiledRules {
    pub fn compile(rules: &Rules) -> Result<Self, BuildError> {
        Ok(CompiledRules {
            allow: rules
                .allow
                .iter()
                .map(CompiledRule::new)
                .collect::<Result<_, _>>()?,
            deny: rules
                .deny
                .iter()
                .map(CompiledRule::new)
                .collect::<Result<_, _>>()?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// `Err(reason)` when the call is denied.
    pub fn check(
        &self,
        tool: &str,
        args: &serde_json::Value,
        session: Option<&str>,
    ) -> Result<(), String> {
        if let Some(rule) = self.deny.iter().find(|r| r.matches(tool, args, session)) {
            return Err(match &rule.reason {
                Some(r) => r.clone(),
                None => format!(
                    "a deny rule of the policy matches this call ({}rule)",
                    rule.at
                ),
            });
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|r| r.matches(tool, args, session)) {
            return Err(format!(
                "the policy's allow rules do not allow {tool} with these arguments"
            ));
        }
        Ok(())
    }
}

/// The rules layer.
pub struct RulesLayer;

impl Layer for RulesLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            for group in inv.settings.rules.iter() {
                if let Err(reason) = group.check(&inv.tool_name, &inv.args, inv.session.as_deref())
                {
                    return Err(CallError::Denied {
                        reason,
                        by: DeniedBy::Rule,
                    });
                }
            }
            next.run(inv).await
        })
    }
}
