//! The settings that apply to one tool (G8): the dispatch defaults, overridden field by field by
//! the per-tool overrides that match its name, least specific first, so each field comes from
//! the most specific override that sets it. An exact name beats any glob; among globs, more
//! literal characters beat fewer; on a tie, the later override in the file wins.
//!
//! Rules are the exception: they do not replace each other. The top-level rules and the rules
//! of every matching override all apply, each group a gate of its own, so a more specific
//! override can add rules but never drop a deny rule of a less specific one.
//!
//! An override that names `principals` or `groups` applies to the calls of those callers only
//! (C8), and for them it is more specific than every override that names neither: its settings
//! win, its rules apply. The settings of a tool are resolved once for the callers no such
//! override names, and per call for the others.
//!
//! Built-in tools that a feature turns on (`read_tool_result`, `tool_search`) are judged only by
//! rules that name them exactly: a top-level rule whose `tools` lists the name, or the rules of
//! an override whose key is the name.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use toolgate_policy::{CharCap, DispatchSettings, ToolOverride};

use crate::access::CallKind;
use crate::caller::Caller;
use crate::error::{At, BuildError};
use crate::rules::CompiledRules;

/// The effective settings of one tool.
#[derive(Debug)]
pub struct ToolSettings {
    pub timeout: Option<Duration>,
    /// The character cap.
    pub max_result_chars: CharCap,
    /// The `sequential_group` the tool is in, if any.
    pub sequential_group: Option<String>,
    /// Rule groups: the policy's, then each matching override's.
    pub rules: Vec<Arc<CompiledRules>>,
    /// Where each setting came from, for `toolgate explain`.
    pub explanation: Explanation,
}

/// Where each effective setting came from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Explanation {
    /// The tool explained (a real name, or the unknown name as given).
    pub tool: String,
    /// Matching overrides, least specific first.
    pub matched: Vec<String>,
    /// The effective timeout (`None`: no timeout).
    pub timeout: Option<String>,
    /// The policy key it comes from.
    pub timeout_from: String,
    /// The configured character cap (`-1` in JSON for none); see `max_result_chars_applies`.
    pub max_result_chars: CharCap,
    /// The policy key it comes from.
    pub max_result_chars_from: String,
    /// `false` while reduction is on: results are offloaded by size instead (R2).
    pub max_result_chars_applies: bool,
    /// While reduction is on: the size over which a result of this tool is offloaded (`None`
    /// for the built-ins, whose output is never reduced again).
    pub max_result_bytes: Option<u64>,
    /// The policy key it comes from.
    pub max_result_bytes_from: Option<String>,
    /// The tool's sequential group, if any.
    pub sequential_group: Option<String>,
    /// The policy key it comes from (`none` without a group).
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
    /// The top-level rules that judge resource reads, and prompt gets (A2).
    resource_rules: Option<Arc<CompiledRules>>,
    prompt_rules: Option<Arc<CompiledRules>>,
    overrides: Vec<CompiledOverride>,
    /// Every `sequential_group` an override names.
    groups: BTreeSet<String>,
    /// `reduction.max_result_bytes` while reduction is on.
    reduction_bytes: Option<u64>,
    /// Whether some override names principals or groups (C8).
    any_scoped: bool,
}

/// Whether the override `o` applies to the calls of `caller` (`None`: a caller no override
/// naming principals or groups applies to).
fn applies(o: &ToolOverride, caller: Option<&Caller>) -> bool {
    if !o.is_scoped() {
        return true;
    }
    caller.is_some_and(|caller| {
        (o.principals.is_empty() || o.principals.iter().any(|g| g.is_match(caller.name())))
            && (o.groups.is_empty() || o.groups.iter().any(|g| caller.in_group(g)))
    })
}

/// How the key of an override is written in `explain`: `tools."fs.*"`, and for one naming
/// principals or groups, which (`tools."fs.*"[principals alice]`).
fn key_of(o: &ToolOverride) -> String {
    let mut key = format!("tools.{:?}", o.pattern.as_str());
    if !o.principals.is_empty() {
        let names: Vec<&str> = o.principals.iter().map(|g| g.as_str()).collect();
        key.push_str(&format!("[principals {}]", names.join(", ")));
    }
    if !o.groups.is_empty() {
        key.push_str(&format!("[groups {}]", o.groups.join(", ")));
    }
    key
}

impl SettingsResolver {
    pub fn new(
        defaults: &DispatchSettings,
        global_rules: &toolgate_policy::Rules,
        overrides: &[ToolOverride],
    ) -> Result<Self, BuildError> {
        check_limits(defaults)?;
        let mut compiled = Vec::with_capacity(overrides.len());
        let mut groups = BTreeSet::new();
        for (index, o) in overrides.iter().enumerate() {
            if let Some(g) = &o.sequential_group {
                groups.insert(g.clone());
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
        let for_kind = |kind| {
            let rules = CompiledRules::compile_for(global_rules, kind);
            (!rules.is_empty()).then(|| Arc::new(rules))
        };
        Ok(SettingsResolver {
            defaults: defaults.clone(),
            global_rules: for_kind(CallKind::Tool),
            resource_rules: for_kind(CallKind::Resource),
            prompt_rules: for_kind(CallKind::Prompt),
            any_scoped: overrides.iter().any(ToolOverride::is_scoped),
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

    /// Every `sequential_group` the policy names.
    pub fn groups(&self) -> impl Iterator<Item = &str> {
        self.groups.iter().map(String::as_str)
    }

    /// The effective settings of the ordinary tool `tool`.
    pub fn resolve(&self, tool: &str) -> ToolSettings {
        self.resolve_for(tool, false)
    }

    /// The effective settings of `tool`; `builtin` for a built-in tool that a feature turned on,
    /// which only rules naming it exactly reach.
    pub fn resolve_for(&self, tool: &str, builtin: bool) -> ToolSettings {
        self.resolve_as(tool, builtin, None)
    }

    /// [`SettingsResolver::resolve_for`] for the calls of `caller` (`None`: a caller no
    /// override naming principals or groups applies to), C8.
    pub fn resolve_as(&self, tool: &str, builtin: bool, caller: Option<&Caller>) -> ToolSettings {
        let mut matching: Vec<&CompiledOverride> = self
            .overrides
            .iter()
            .filter(|o| o.spec.pattern.is_match(tool) && applies(&o.spec, caller))
            .collect();
        // An override for some callers is more specific than every override for all.
        matching.sort_by_key(|o| (o.spec.is_scoped(), o.spec.pattern.specificity(), o.index));

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
            let key = key_of(&o.spec);
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
            sequential_group: group,
            rules,
            explanation,
        }
    }

    /// The effective settings of a resource read or a prompt get (A1, A2): the `dispatch`
    /// timeout and cap (`tools:` overrides name tools only), and the top-level rules that
    /// judge the kind. For [`CallKind::Tool`], [`SettingsResolver::resolve`].
    pub fn resolve_kind(&self, kind: CallKind, name: &str) -> ToolSettings {
        let rules = match kind {
            CallKind::Tool => return self.resolve(name),
            CallKind::Resource => &self.resource_rules,
            CallKind::Prompt => &self.prompt_rules,
        };
        let d = &self.defaults;
        let offload_bytes = self.reduction_bytes;
        ToolSettings {
            timeout: d.timeout,
            max_result_chars: d.max_result_chars,
            sequential_group: None,
            rules: rules.iter().cloned().collect(),
            explanation: Explanation {
                tool: name.to_string(),
                matched: Vec::new(),
                timeout: d.timeout.map(|t| toolgate_policy::format_duration(Some(t))),
                timeout_from: "dispatch.timeout".to_string(),
                max_result_chars: d.max_result_chars,
                max_result_chars_from: "dispatch.max_result_chars".to_string(),
                max_result_chars_applies: self.reduction_bytes.is_none(),
                max_result_bytes: offload_bytes,
                max_result_bytes_from: offload_bytes
                    .map(|_| "reduction.max_result_bytes".to_string()),
                sequential_group: None,
                sequential_group_from: "none".to_string(),
                rules_from: rules.iter().map(|_| "rules".to_string()).collect(),
            },
        }
    }

    /// Whether an override naming principals or groups applies to the calls of `caller` to
    /// `tool` (then its settings are resolved for the call, C8).
    fn scoped_for(&self, tool: &str, caller: &Caller) -> bool {
        self.any_scoped
            && self.overrides.iter().any(|o| {
                o.spec.is_scoped()
                    && o.spec.pattern.is_match(tool)
                    && applies(&o.spec, Some(caller))
            })
    }

    /// Whether an override naming principals or groups sets a `sequential_group`.
    fn scoped_group(&self) -> bool {
        self.overrides
            .iter()
            .any(|o| o.spec.is_scoped() && o.spec.sequential_group.is_some())
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

/// The settings of every registered tool, resolved once when the engine is built, and the
/// resolver for names the registry does not know.
pub(crate) struct SettingsTable {
    resolver: SettingsResolver,
    /// Real tool name -> its settings.
    tools: HashMap<String, Arc<ToolSettings>>,
    /// The settings of every resource read, and of every prompt get (the same for each).
    resources: Arc<ToolSettings>,
    prompts: Arc<ToolSettings>,
}

impl SettingsTable {
    /// Resolves the settings of `tools`: each a real name, and whether it is a built-in tool
    /// that a feature turned on.
    pub(crate) fn new<'a>(
        resolver: SettingsResolver,
        tools: impl IntoIterator<Item = (&'a str, bool)>,
    ) -> Self {
        let tools = tools
            .into_iter()
            .map(|(name, builtin)| {
                (
                    name.to_string(),
                    Arc::new(resolver.resolve_for(name, builtin)),
                )
            })
            .collect();
        SettingsTable {
            resources: Arc::new(resolver.resolve_kind(CallKind::Resource, "*")),
            prompts: Arc::new(resolver.resolve_kind(CallKind::Prompt, "*")),
            resolver,
            tools,
        }
    }

    /// The settings of a call of `kind` to `name` (a real tool name, a URI or a prompt).
    pub(crate) fn of_kind(&self, kind: CallKind, name: &str) -> Arc<ToolSettings> {
        match kind {
            CallKind::Tool => self.of(name),
            CallKind::Resource => self.resources.clone(),
            CallKind::Prompt => self.prompts.clone(),
        }
    }

    /// The settings of the registered tool `tool` (a real name).
    pub(crate) fn of(&self, tool: &str) -> Arc<ToolSettings> {
        self.tools
            .get(tool)
            .cloned()
            .unwrap_or_else(|| Arc::new(self.resolver.resolve(tool)))
    }

    /// The settings of the registered tool `tool` (a real name; `builtin` for a built-in tool
    /// a feature turned on) for a call of `caller`: with the overrides that name it or its
    /// groups (C8).
    pub(crate) fn of_as(&self, tool: &str, builtin: bool, caller: &Caller) -> Arc<ToolSettings> {
        if self.resolver.scoped_for(tool, caller) {
            return Arc::new(self.resolver.resolve_as(tool, builtin, Some(caller)));
        }
        self.of(tool)
    }

    /// The settings a call to `name`, which no tool has, runs under.
    pub(crate) fn of_unknown(&self, name: &str) -> Arc<ToolSettings> {
        Arc::new(self.resolver.resolve(name))
    }

    /// Why a call to the unknown `name` runs under the settings it does: no rule judges it
    /// (D4), so no rule group is listed.
    pub(crate) fn explain_unknown(&self, name: &str) -> Explanation {
        let mut e = self.resolver.resolve(name).explanation;
        e.rules_from.clear();
        e
    }

    /// Whether some registered tool is in a `sequential_group`.
    pub(crate) fn any_group(&self) -> bool {
        self.tools.values().any(|s| s.sequential_group.is_some()) || self.resolver.scoped_group()
    }

    /// The resolver behind the table.
    pub(crate) fn resolver(&self) -> &SettingsResolver {
        &self.resolver
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

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_policy::glob::Glob;

    fn over(pattern: &str) -> ToolOverride {
        ToolOverride {
            pattern: Glob::new(pattern).unwrap(),
            timeout: None,
            max_result_chars: None,
            sequential_group: None,
            rules: toolgate_policy::Rules::default(),
            principals: Vec::new(),
            groups: Vec::new(),
            position: None,
        }
    }

    #[test]
    fn c8_an_override_for_some_principals_wins_for_them_and_leaves_the_others_alone() {
        let mut everyone = over("fs.read_file");
        everyone.timeout = Some(Some(Duration::from_secs(5)));
        let mut alice = over("fs.*");
        alice.principals = vec![Glob::new("alice").unwrap()];
        alice.timeout = Some(Some(Duration::from_millis(100)));
        let mut ops = over("fs.*");
        ops.groups = vec!["ops".into()];
        ops.principals = vec![Glob::new("a*").unwrap()];
        ops.max_result_chars = Some(CharCap::Chars(10));
        let resolver = SettingsResolver::new(
            &DispatchSettings::default(),
            &toolgate_policy::Rules::default(),
            &[everyone, alice, ops],
        )
        .unwrap();
        let table = SettingsTable::new(resolver, [("fs.read_file", false)]);
        let as_alice = table.of_as("fs.read_file", false, &Caller::new("alice", vec![]));
        // A glob for alice beats the exact name for everyone, for alice.
        assert_eq!(as_alice.timeout, Some(Duration::from_millis(100)));
        // Every condition must hold: alice is not in ops.
        assert_eq!(as_alice.max_result_chars, CharCap::Chars(100_000));
        let as_anna = table.of_as(
            "fs.read_file",
            false,
            &Caller::new("anna", vec!["ops".into()]),
        );
        assert_eq!(as_anna.max_result_chars, CharCap::Chars(10));
        assert_eq!(as_anna.timeout, Some(Duration::from_secs(5)));
        let as_bob = table.of_as(
            "fs.read_file",
            false,
            &Caller::new("bob", vec!["ops".into()]),
        );
        assert_eq!(as_bob.timeout, Some(Duration::from_secs(5)));
        assert_eq!(
            as_bob.explanation.timeout_from,
            "tools.\"fs.read_file\".timeout"
        );
        assert_eq!(
            as_alice.explanation.timeout_from,
            "tools.\"fs.*\"[principals alice].timeout"
        );
    }
}
