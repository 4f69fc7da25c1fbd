//! The settings that apply to one tool (G8): the dispatch defaults, overridden field by field by
//! the per-tool overrides that match its name, least specific first, so each field comes from
//! the most specific override that sets it. An exact name beats any glob; among globs, more
//! literal characters beat fewer; on a tie, the later override in the file wins.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use globset::{GlobBuilder, GlobMatcher};
use serde::Serialize;
use toolgate_policy::{DispatchSettings, ToolOverride};

use crate::error::{At, BuildError, fmt_duration};
use crate::guard::CompiledRules;

/// The effective settings of one tool.
#[derive(Debug)]
pub struct ToolSettings {
    pub timeout: Option<Duration>,
    /// `-1` = no cap.
    pub max_result_chars: i64,
    pub sequential_group: Option<(String, Arc<crate::guard::GroupLock>)>,
    /// Rule groups: the policy's, then each matching override's.
    pub rules: Vec<Arc<CompiledRules>>,
    /// Where each setting came from, for `toolgate explain`.
    pub explanation: Explanation,
}

/// Where each effective setting came from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Explanation {
    pub tool: String,
    /// Matching overrides, least specific first.
    pub matched: Vec<String>,
    pub timeout: Option<String>,
    pub timeout_from: String,
    pub max_result_chars: i64,
    pub max_result_chars_from: String,
    pub sequential_group: Option<String>,
    pub sequential_group_from: String,
    /// Rule groups that apply: "policy rules", "tools.\"fs.*\".rules"...
    pub rules_from: Vec<String>,
}

struct CompiledOverride {
    spec: ToolOverride,
    matcher: GlobMatcher,
    literal: bool,
    literal_chars: usize,
    index: usize,
    rules: Option<Arc<CompiledRules>>,
}

/// Resolves settings for tool names.
pub struct SettingsResolver {
    defaults: DispatchSettings,
    global_rules: Option<Arc<CompiledRules>>,
    overrides: Vec<CompiledOverride>,
    groups: HashMap<String, Arc<crate::guard::GroupLock>>,
}

impl SettingsResolver {
    pub fn new(
        defaults: &DispatchSettings,
        global_rules: &toolgate_policy::Rules,
        overrides: &[ToolOverride],
    ) -> Result<Self, BuildError> {
        check_limits(defaults)?;
        let mut compiled = Vec::with_capacity(overrides.len());
        let mut groups = HashMap::new();
        for (index, o) in overrides.iter().enumerate() {
            let at = At(o.position.clone());
            if let Some(v) = o.max_result_chars
                && v < -1
            {
                return Err(BuildError::Setting {
                    message: format!(
                        "tools.{:?}.max_result_chars is {v}; it must be -1 (no cap) or more",
                        o.pattern
                    ),
                    at,
                });
            }
            let matcher = GlobBuilder::new(&o.pattern)
                .literal_separator(false)
                .build()
                .map_err(|e| BuildError::Setting {
                    message: format!("tools: bad pattern {:?}: {e}", o.pattern),
                    at: at.clone(),
                })?
                .compile_matcher();
            let literal = !o.pattern.contains(['*', '?', '[', '{']);
            let literal_chars = o
                .pattern
                .chars()
                .filter(|c| !matches!(c, '*' | '?' | '[' | ']' | '{' | '}'))
                .count();
            if let Some(g) = &o.sequential_group {
                groups.entry(g.clone()).or_insert_with(Default::default);
            }
            let rules = if o.rules.is_empty() {
                None
            } else {
                Some(Arc::new(CompiledRules::compile(&o.rules)?))
            };
            compiled.push(CompiledOverride {
                spec: o.clone(),
                matcher,
                literal,
                literal_chars,
                index,
                rules,
            });
        }
        let global_rules = if global_rules.is_empty() {
            None
        } else {
            Some(Arc::new(CompiledRules::compile(global_rules)?))
        };
        Ok(SettingsResolver {
            defaults: defaults.clone(),
            global_rules,
            overrides: compiled,
            groups,
        })
    }

    /// The effective settings of `tool`.
    pub fn resolve(&self, tool: &str) -> ToolSettings {
        let mut matching: Vec<&CompiledOverride> = self
            .overrides
            .iter()
            .filter(|o| {
                if o.literal {
                    o.spec.pattern == tool
                } else {
                    o.matcher.is_match(tool)
                }
            })
            .collect();
        matching.sort_by_key(|o| (o.literal, o.literal_chars, o.index));

        let d = &self.defaults;
        let mut timeout = d.timeout;
        let mut timeout_from = "dispatch.timeout".to_string();
        let mut cap = d.max_result_chars;
        let mut cap_from = "dispatch.max_result_chars".to_string();
        let mut group: Option<String> = None;
        let mut group_from = "none".to_string();
        let mut rules = Vec::new();
        let mut rules_from = Vec::new();
        if let Some(r) = &self.global_rules {
            rules.push(r.clone());
            rules_from.push("rules".to_string());
        }
        for o in &matching {
            let key = format!("tools.{:?}", o.spec.pattern);
            if let Some(t) = o.spec.timeout {
                timeout = t;
                timeout_from = format!("{key}.timeout");
            }
            if let Some(c) = o.spec.max_result_chars {
                cap = c;
                cap_from = format!("{key}.max_result_chars");
            }
            if let Some(g) = &o.spec.sequential_group {
                group = Some(g.clone());
                group_from = format!("{key}.sequential_group");
            }
            if let Some(r) = &o.rules {
                rules.push(r.clone());
                rules_from.push(format!("{key}.rules"));
            }
        }
        let explanation = Explanation {
            tool: tool.to_string(),
            matched: matching.iter().map(|o| o.spec.pattern.clone()).collect(),
            timeout: timeout.map(fmt_duration),
            timeout_from,
            max_result_chars: cap,
            max_result_chars_from: cap_from,
            sequential_group: group.clone(),
            sequential_group_from: group_from,
            rules_from,
        };
        ToolSettings {
            timeout,
            max_result_chars: cap,
            sequential_group: group.map(|g| {
                let lock = self.groups.get(&g).cloned().unwrap_or_default();
                (g, lock)
            }),
            rules,
            explanation,
        }
    }
}

/// N5: limits that make no sense fail the build, also for policies built in code.
fn check_limits(d: &DispatchSettings) -> Result<(), BuildError> {
    if d.max_result_chars < -1 {
        return Err(BuildError::Setting {
            message: format!(
                "dispatch.max_result_chars is {}; it must be -1 (no cap) or more",
                d.max_result_chars
            ),
            at: At(None),
        });
    }
    if d.concurrency == Some(0) {
        return Err(BuildError::Setting {
            message: "dispatch.concurrency must be at least 1".into(),
            at: At(None),
        });
    }
    Ok(())
}
