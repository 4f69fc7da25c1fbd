//! The settings that apply to one tool (G8): the dispatch defaults, overridden field by field by
//! the per-tool overrides that match its name, least specific first, so each field comes from
//! the most specific override that sets it. An exact name beats any glob; among globs, more
//! literal characters beat fewer; on a tie, the later override in the file wins.
//!
//! Rules are the exception: they do not replace each other. The top-level rules and the rules
//! of every matching override all apply, each group a gate of its own, so a more specific
//! override can add rules but never drop a deny rule of a less specific one.
//!
//! Built-in tools that a feature turns on (`read_tool_result`, `tool_search`) are judged only by
//! rules that name them exactly: a top-level rule whose `tools` lists the name, or the rules of
//! an override whose key is the name.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use toolgate_policy::{CharCap, DispatchSettings, ToolOverride};

use crate::error::{At, BuildError};
use crate::guard::CompiledRules;

/// The effective settings of one tool.
#[derive(Debug)]
pub struct ToolSettings {
    pub timeout: Option<Duration>,
    pub max_result_chars: CharCap,
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
    /// The configured character cap (`-1` in JSON for none); see `max_result_chars_applies`.
    pub max_result_chars: CharCap,
    pub max_result_chars_from: String,
    /// `false` while reduction is on: results are offloaded by size instead (R2).
    pub max_result_chars_applies: bool,
    /// While reduction is on: the size over which a result of this tool is offloaded (`None`
    /// for the built-ins, whose output is never reduced again).
    pub max_result_bytes: Option<u64>,
    pub max_result_bytes_from: Option<String>,
    pub sequential_group: Option<String>,
    pub sequential_group_from: String,
    /// Rule groups that apply: "rules", "tools.\"fs.*\".rules"...
    pub rules_from: Vec<String>,
}

struct CompiledOverride {
    spec: ToolOverride,
    index: usize,
    rules: Option<Arc<CompiledRules>>,
}

/// Resolves settings for tool names.
pub struct SettingsResolver {
    defaults: DispatchSettings,
    global_rules: Option<Arc<CompiledRules>>,
    overrides: Vec<CompiledOverride>,
    groups: HashMap<String, Arc<crate::guard::GroupLock>>,
    /// `reduction.max_result_bytes` while reduction is on.
    reduction_bytes: Option<u64>,
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
            if let Some(g) = &o.sequential_group {
                groups.entry(g.clone()).or_insert_with(Default::default);
            }
            let rules = if o.rules.is_empty() {
                None
            } else {
                Some(Arc::new(CompiledRules::compile(&o.rules)))
            };
            compiled.push(CompiledOverride {
                spec: o.clone(),
                index,
                rules,
            });
        }
        let global_rules = if global_rules.is_empty() {
            None
        } else {
            Some(Arc::new(CompiledRules::compile(global_rules)))
        };
        Ok(SettingsResolver {
            defaults: defaults.clone(),
            global_rules,
            overrides: compiled,
            groups,
            reduction_bytes: None,
        })
    }

    /// Reduction is on and offloads results over `max_result_bytes` (R1, R2): the character
    /// cap no longer applies, and `explain` says so.
    pub fn with_reduction(mut self, max_result_bytes: Option<u64>) -> Self {
        self.reduction_bytes = max_result_bytes;
        self
    }

    /// The effective settings of the ordinary tool `tool`.
    pub fn resolve(&self, tool: &str) -> ToolSettings {
        self.resolve_for(tool, false)
    }

    /// The effective settings of `tool`; `builtin` for a built-in tool that a feature turned on,
    /// which only rules naming it exactly reach.
    pub fn resolve_for(&self, tool: &str, builtin: bool) -> ToolSettings {
        let mut matching: Vec<&CompiledOverride> = self
            .overrides
            .iter()
            .filter(|o| o.spec.pattern.is_match(tool))
            .collect();
        matching.sort_by_key(|o| (o.spec.pattern.specificity(), o.index));

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
            let r = if builtin {
                r.naming(tool).map(Arc::new)
            } else {
                Some(r.clone())
            };
            if let Some(r) = r {
                rules.push(r);
                rules_from.push("rules".to_string());
            }
        }
        for o in &matching {
            let key = format!("tools.{:?}", o.spec.pattern.as_str());
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
            if let Some(r) = &o.rules
                && (!builtin || o.spec.pattern.is_literal())
            {
                rules.push(r.clone());
                rules_from.push(format!("{key}.rules"));
            }
        }
        let offload_bytes = self.reduction_bytes.filter(|_| !builtin);
        let explanation = Explanation {
            tool: tool.to_string(),
            matched: matching
                .iter()
                .map(|o| o.spec.pattern.to_string())
                .collect(),
            timeout: timeout.map(|t| toolgate_policy::format_duration(Some(t))),
            timeout_from,
            max_result_chars: cap,
            max_result_chars_from: cap_from,
            max_result_chars_applies: self.reduction_bytes.is_none(),
            max_result_bytes: offload_bytes,
            max_result_bytes_from: offload_bytes.map(|_| "reduction.max_result_bytes".to_string()),
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

    /// Where the rules are that can refuse calls to the built-in `tool`, for `validate` to warn
    /// about: top-level rules naming it, and overrides keyed by its exact name that have rules.
    pub fn rules_blocking_builtin(&self, tool: &str) -> Vec<String> {
        let mut found = Vec::new();
        if let Some(r) = &self.global_rules {
            found.extend(r.rules_refusing(tool));
        }
        for o in &self.overrides {
            if o.rules.is_some() && o.spec.pattern.is_literal() && o.spec.pattern == tool {
                found.push(format!(
                    "{}tools.{:?}.rules",
                    At(o.spec.position.clone()),
                    tool
                ));
            }
        }
        found
    }
}

/// N5: limits that make no sense fail the build, also for policies built in code.
fn check_limits(d: &DispatchSettings) -> Result<(), BuildError> {
    if d.concurrency == Some(0) {
        return Err(BuildError::Setting {
            message: "dispatch.concurrency must be at least 1".into(),
            at: At(None),
        });
    }
    Ok(())
}
