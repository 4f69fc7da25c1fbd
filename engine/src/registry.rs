//! Every tool the engine knows, where it came from, and how a model-facing name resolves to it.
//!
//! The registry checks the name rules once, when the engine is built (N1-N6): a name is 1 to
//! 128 bytes of `[A-Za-z0-9_.-]`, unique across sources, not one of the reserved built-in names,
//! and every alias points at a real tool without colliding with anything.
//!
//! Each tool has two names. Its *real* name is the one its source gives it (`fs.read_file`);
//! the policy speaks real names (per-tool overrides, rules, aliases keys, keywords, scripts'
//! `tool`). Its *model-facing* name is what the model sees and calls: the real name mapped
//! through the policy's name profile (`model_name` below), so a provider that refuses `.` gets
//! `fs_read_file`. Two names that map to the same model-facing name fail the build, naming
//! both tools. A call resolves model-facing names and aliases only; an unmapped real name that
//! differs from its model-facing name is unknown (never silently rerouted, D4), and the
//! unknown-tool suggestions put the mapped name first.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use toolgate_policy::{AliasSpec, NameProfile, Policy, Position, check_tool_name};

use crate::error::{At, BuildError};
use crate::structured::OutputCheck;
use crate::tool::{Tool, ToolSpec};

mod catalog;

/// Where a tool came from; named in errors such as duplicate names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSource {
    /// Registered in Rust by the host program.
    Native,
    /// From a plugin library.
    Plugin {
        /// The plugin's name.
        plugin: String,
        /// Its library file.
        path: String,
    },
    /// From a JSONL catalog (search only, no implementation).
    Catalog {
        /// The catalog file.
        file: String,
    },
    /// Built into the engine (`read_tool_result`, `tool_search`).
    Builtin,
    /// Added by the host program as one named source
    /// ([`EngineBuilder::tools_from`](crate::EngineBuilder::tools_from)): the tools of an
    /// upstream MCP server, say. `name` says where they come from in errors and summaries.
    External {
        /// Where the tools come from ("MCP server time (stdio: mcp-server-time)").
        name: String,
    },
}

impl fmt::Display for ToolSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolSource::Native => f.write_str("a native tool"),
            ToolSource::Plugin { plugin, path } => write!(f, "plugin {plugin} ({path})"),
            ToolSource::Catalog { file } => write!(f, "catalog {file}"),
            ToolSource::Builtin => f.write_str("the engine (built-in)"),
            ToolSource::External { name } => f.write_str(name),
        }
    }
}

/// A tool built into the engine, turned on by a feature of the policy; its name is reserved
/// while the feature is on (N3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BuiltinTool {
    /// Pages through offloaded results (reduction).
    ReadToolResult,
    /// Searches the catalog (search).
    ToolSearch,
}

impl BuiltinTool {
    /// The tool's name (the same under every name profile).
    pub(crate) const fn name(self) -> &'static str {
        match self {
            BuiltinTool::ReadToolResult => "read_tool_result",
            BuiltinTool::ToolSearch => "tool_search",
        }
    }

    /// The policy feature that turns it on.
    pub(crate) const fn feature(self) -> &'static str {
        match self {
            BuiltinTool::ReadToolResult => "reduction",
            BuiltinTool::ToolSearch => "search",
        }
    }

    /// The built-in tool named `name`, whether or not its feature is on.
    pub(crate) fn named(name: &str) -> Option<BuiltinTool> {
        [BuiltinTool::ReadToolResult, BuiltinTool::ToolSearch]
            .into_iter()
            .find(|b| b.name() == name)
    }

    /// The built-in tools the features of `policy` turn on, whose names are reserved (N3).
    pub(crate) fn enabled_by(policy: &Policy) -> Vec<BuiltinTool> {
        let mut on = Vec::new();
        if policy.reduction.is_some() {
            on.push(BuiltinTool::ReadToolResult);
        }
        if policy.search.is_some() {
            on.push(BuiltinTool::ToolSearch);
        }
        on
    }
}

/// One registered tool.
#[derive(Clone)]
pub struct Entry {
    tool: Arc<dyn Tool>,
    source: ToolSource,
    /// Hidden behind `tool_search` until found (S1).
    searchable: bool,
    /// Argument alias -> real argument name.
    arg_aliases: BTreeMap<String, String>,
    /// The name the model sees and calls: the real name mapped by the name profile (N6).
    model_name: String,
    /// The tool's output schema, when it declares one, to check its results against (G10).
    output_check: Option<Arc<OutputCheck>>,
}

impl Entry {
    /// The tool itself.
    pub fn tool(&self) -> &Arc<dyn Tool> {
        &self.tool
    }

    /// Where the tool came from.
    pub fn source(&self) -> &ToolSource {
        &self.source
    }

    /// Whether the tool is in the search catalog, hidden behind `tool_search` until found (S1).
    pub fn is_searchable(&self) -> bool {
        self.searchable
    }

    /// A built-in tool that a feature turned on (`read_tool_result`, `tool_search`): only rules
    /// that name it judge it, and its output is never reduced again (R2).
    pub fn is_builtin(&self) -> bool {
        self.source == ToolSource::Builtin
    }

    /// The name the model sees and calls: the real name mapped by the name profile (N6).
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// The check of the tool's structured results, when it declares an output schema (G10).
    pub(crate) fn output_check(&self) -> Option<&Arc<OutputCheck>> {
        self.output_check.as_ref()
    }

    /// The tool's argument aliases: alias -> real argument name (D2).
    pub(crate) fn arg_aliases(&self) -> &BTreeMap<String, String> {
        &self.arg_aliases
    }

    /// The tool's spec as the model sees it: under its model-facing name.
    pub fn model_spec(&self) -> ToolSpec {
        let mut spec = self.tool.spec().clone();
        spec.name.clone_from(&self.model_name);
        spec
    }
}

/// What a model-facing name resolves to.
#[derive(Clone)]
pub struct Resolved<'a> {
    /// The real tool name.
    pub name: &'a str,
    /// The tool.
    pub entry: &'a Entry,
}

/// A tool of a named source, or an alias of one, that the build left out rather than fail
/// (see [`Registry::left_out`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The tool's real name, or the alias's target.
    pub tool: String,
    /// Where it came from ("MCP server time (stdio: mcp-server-time)", or "aliases").
    pub source: String,
    /// Where the alias is written, for an alias.
    pub position: Option<Position>,
    /// Why, naming the other side of a collision.
    pub reason: String,
    /// An entry of a JSONL catalog (S7): data, not a tool the policy's author runs, so
    /// `toolgate validate` reports it as a warning rather than an error.
    pub catalog: bool,
}

impl fmt::Display for LeftOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(at) = &self.position {
            write!(f, "{at}: ")?;
        }
        write!(f, "{}: {}", self.source, self.reason)
    }
}

/// The set of tools, checked.
#[derive(Clone, Default)]
pub struct Registry {
    profile: NameProfile,
    /// Real name -> tool.
    entries: BTreeMap<String, Entry>,
    /// Model-facing name -> real name.
    by_model_name: HashMap<String, String>,
    /// Model-facing name alias -> real name.
    aliases: HashMap<String, String>,
    /// Tools of named sources and aliases of theirs the build left out.
    left_out: Vec<LeftOut>,
}

impl Registry {
    /// An empty registry whose names are mapped by `profile` (N6).
    pub(crate) fn new(profile: NameProfile) -> Self {
        Registry {
            profile,
            ..Registry::default()
        }
    }

    /// The name profile the model-facing names follow.
    pub fn profile(&self) -> NameProfile {
        self.profile
    }

    /// Adds a tool, checking its name (N1), uniqueness (N2) and that its model-facing name
    /// (N6) is not already another tool's.
    pub(crate) fn insert(
        &mut self,
        tool: Arc<dyn Tool>,
        source: ToolSource,
        searchable: bool,
    ) -> Result<(), BuildError> {
        let name = tool.spec().name.clone();
        check_tool_name(&name).map_err(|reason| BuildError::InvalidName {
            name: name.clone(),
            source_desc: source.to_string(),
            reason: reason.to_string(),
            at: At(None),
        })?;
        if let Some(existing) = self.entries.get(&name) {
            return Err(BuildError::DuplicateName {
                name,
                first: existing.source.to_string(),
                second: source.to_string(),
            });
        }
        let model_name = model_name(&name, self.profile);
        if let Some(other) = self.by_model_name.get(&model_name) {
            return Err(BuildError::NameCollision {
                model_name,
                profile: profile_name(self.profile),
                first: format!("{other} ({})", self.entries[other].source),
                second: format!("{name} ({source})"),
                at: At(None),
            });
        }
        self.by_model_name.insert(model_name.clone(), name.clone());
        let output_check = tool
            .spec()
            .output_schema
            .clone()
            .map(|schema| Arc::new(OutputCheck::new(schema)));
        self.entries.insert(
            name,
            Entry {
                tool,
                source,
                searchable,
                arg_aliases: BTreeMap::new(),
                model_name,
                output_check,
            },
        );
        Ok(())
    }

    /// Adds the tools of named sources ([`EngineBuilder::tools_from`](crate::EngineBuilder::tools_from)),
    /// after every other tool is in, without ever failing: such a source (an upstream MCP
    /// server) is not the policy's to fix, so it costs only its own tools. A tool is left out
    /// (see [`Registry::left_out`]) when its name breaks N1, when its model-facing name is
    /// another tool's, an alias's (`taken`) or a reserved built-in's (also `taken`), or when
    /// another tool of these sources maps to the same model-facing name: then every one of
    /// them is left out, whatever order they came in.
    pub(crate) fn insert_external(
        &mut self,
        tools: Vec<(ToolSource, Arc<dyn Tool>, bool)>,
        taken: &HashMap<String, String>,
    ) {
        let mut claims: HashMap<String, Vec<String>> = HashMap::new();
        for (_, tool, _) in &tools {
            let name = &tool.spec().name;
            if check_tool_name(name).is_ok() {
                claims
                    .entry(model_name(name, self.profile))
                    .or_default()
                    .push(name.clone());
            }
        }
        for (source, tool, searchable) in tools {
            let name = tool.spec().name.clone();
            let reason = match self.external_conflict(&name, &claims, taken) {
                Some(reason) => reason,
                None => match self.insert(tool, source.clone(), searchable) {
                    Ok(()) => continue,
                    Err(e) => e.to_string(),
                },
            };
            self.leave_out(&source, name, &reason, false);
        }
    }

    /// Why the tool of a named source called `name` cannot join (see
    /// [`Registry::insert_external`]); `claims` are the real names of those tools by
    /// model-facing name.
    fn external_conflict(
        &self,
        name: &str,
        claims: &HashMap<String, Vec<String>>,
        taken: &HashMap<String, String>,
    ) -> Option<String> {
        let profile = profile_name(self.profile);
        if let Err(reason) = check_tool_name(name) {
            return Some(format!("its name is not a valid tool name: {reason}"));
        }
        let mapped = model_name(name, self.profile);
        let others: Vec<&str> = claims
            .get(&mapped)
            .into_iter()
            .flatten()
            .filter(|n| *n != name)
            .map(String::as_str)
            .collect();
        if !others.is_empty() {
            return Some(format!(
                "its model-facing name {mapped:?} (name_profile {profile}) is also that of {}; all of them are left out",
                others.join(", ")
            ));
        }
        let existing = self
            .by_model_name
            .get(&mapped)
            .or_else(|| self.entries.get_key_value(name).map(|(k, _)| k));
        if let Some(other) = existing {
            return Some(format!(
                "its model-facing name {mapped:?} (name_profile {profile}) is already that of {other} ({})",
                self.entries[other].source
            ));
        }
        taken.get(&mapped).map(|what| {
            format!("its model-facing name {mapped:?} (name_profile {profile}) is {what}")
        })
    }

    /// Tools of named sources, and aliases of theirs, that the build left out, each with why:
    /// `toolgate validate` reports them as errors, the other commands as warnings.
    pub fn left_out(&self) -> &[LeftOut] {
        &self.left_out
    }

    /// Adds the policy's aliases (N4), after every tool is in. An alias is a model-facing name,
    /// mapped by the profile like a tool's name; `reserved` are model-facing names too. An
    /// alias of a tool that is not there but `optional` (a tool of an upstream MCP server,
    /// which may not have started) is left out with a warning: calls to it are unknown tools.
    pub(crate) fn add_aliases(
        &mut self,
        aliases: &BTreeMap<String, AliasSpec>,
        reserved: &[&str],
        optional: impl Fn(&str) -> bool,
    ) -> Result<(), BuildError> {
        for (tool, spec) in aliases {
            let at = || At(spec.position.clone());
            let Some(entry) = self.entries.get(tool) else {
                if optional(tool) {
                    let names = spec.names.join(", ");
                    let reason = format!(
                        "aliases: {tool} is not there (its MCP server did not start, or does not list it, or it was left out), so its aliases ({names}) are unknown tools until it is"
                    );
                    let note = LeftOut {
                        tool: tool.clone(),
                        source: "aliases".to_owned(),
                        position: spec.position.clone(),
                        reason,
                        catalog: false,
                    };
                    tracing::warn!("{note}");
                    self.left_out.push(note);
                    continue;
                }
                return Err(BuildError::Alias {
                    message: format!(
                        "aliases: {tool:?} is not a registered tool, so it cannot have aliases{}",
                        suggest(tool, self.entries.keys().map(String::as_str))
                    ),
                    at: at(),
                });
            };
            for written in &spec.names {
                check_alias_text(written, "tool-name alias", tool, &spec.position)?;
                check_tool_name(written).map_err(|reason| BuildError::InvalidName {
                    name: written.clone(),
                    source_desc: format!("alias of {tool}"),
                    reason: reason.to_string(),
                    at: at(),
                })?;
                let alias = model_name(written, self.profile);
                let shown = if alias == *written {
                    format!("{written:?}")
                } else {
                    format!(
                        "{written:?} (model-facing {alias:?} under name_profile {})",
                        profile_name(self.profile)
                    )
                };
                if reserved.contains(&alias.as_str()) {
                    return Err(BuildError::Alias {
                        message: format!(
                            "alias {shown} of {tool} is the reserved built-in name {alias:?}"
                        ),
                        at: at(),
                    });
                }
                if let Some(real) = self
                    .by_model_name
                    .get(&alias)
                    .or_else(|| self.entries.get_key_value(written).map(|(k, _)| k))
                {
                    return Err(BuildError::Alias {
                        message: format!(
                            "alias {shown} of {tool} is already the name of a tool ({real}, {})",
                            self.entries[real].source
                        ),
                        at: at(),
                    });
                }
                if let Some(other) = self.aliases.get(&alias) {
                    return Err(BuildError::Alias {
                        message: format!("alias {shown} of {tool} is already an alias of {other}"),
                        at: at(),
                    });
                }
                self.aliases.insert(alias, tool.clone());
            }
            let params = param_names(&entry.tool.spec().parameters);
            let mut arg_aliases = BTreeMap::new();
            for (real, alts) in &spec.arguments {
                for alt in alts {
                    check_alias_text(alt, "argument alias", tool, &spec.position)?;
                    if params.iter().any(|p| p == alt) {
                        return Err(BuildError::Alias {
                            message: format!(
                                "argument alias {alt:?} of {tool}.{real} is itself a parameter of {tool}"
                            ),
                            at: at(),
                        });
                    }
                    if let Some(prev) = arg_aliases.insert(alt.clone(), real.clone()) {
                        return Err(BuildError::Alias {
                            message: format!(
                                "argument alias {alt:?} of {tool} is given for both {prev} and {real}"
                            ),
                            at: at(),
                        });
                    }
                }
            }
            if let Some(entry) = self.entries.get_mut(tool) {
                entry.arg_aliases = arg_aliases;
            }
        }
        Ok(())
    }

    /// Resolves a name the model called, through model-facing names and explicit aliases only:
    /// a name is never routed to a tool it does not name (D4), so an unmapped real name
    /// (`fs.read_file` under `openai`) does not resolve.
    pub fn resolve(&self, model_name: &str) -> Option<Resolved<'_>> {
        let real = self
            .by_model_name
            .get(model_name)
            .or_else(|| self.aliases.get(model_name))?;
        let (name, entry) = self.entries.get_key_value(real.as_str())?;
        Some(Resolved { name, entry })
    }

    /// For people rather than models (`toolgate explain`): a model-facing name or alias as
    /// [`Registry::resolve`] does, else a real tool name.
    pub fn lookup(&self, name: &str) -> Option<Resolved<'_>> {
        self.resolve(name).or_else(|| {
            self.entries
                .get_key_value(name)
                .map(|(name, entry)| Resolved { name, entry })
        })
    }

    /// Moves the tools whose real name matches into the search catalog.
    pub(crate) fn mark_searchable(&mut self, matches: impl Fn(&str) -> bool) {
        for (name, entry) in self.entries.iter_mut() {
            if matches(name) {
                entry.searchable = true;
            }
        }
    }

    /// The model-facing name aliases of one tool (by real name).
    pub fn aliases_of(&self, tool: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .aliases
            .iter()
            .filter(|(_, real)| real.as_str() == tool)
            .map(|(a, _)| a.clone())
            .collect();
        v.sort();
        v
    }

    /// A tool by its real name.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.get(name)
    }

    /// Every tool, by real name.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Name aliases, model-facing alias -> real name.
    pub fn aliases(&self) -> impl Iterator<Item = (&str, &str)> {
        self.aliases.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The model-facing names closest to `name`, for "did you mean" messages; `visible` is
    /// asked with each model-facing name. When `name` maps (by the profile) to a name that
    /// resolves, as an unmapped real name does, that name comes first.
    pub(crate) fn suggestions(&self, name: &str, visible: impl Fn(&str) -> bool) -> Vec<String> {
        let names = self
            .by_model_name
            .keys()
            .chain(self.aliases.keys())
            .map(String::as_str)
            .filter(|n| visible(n));
        let mut found = closest(name, names, 3);
        if check_tool_name(name).is_ok() {
            let mapped = model_name(name, self.profile);
            if mapped != name && self.resolve(&mapped).is_some() && visible(&mapped) {
                found.retain(|n| *n != mapped);
                found.insert(0, mapped);
                found.truncate(3);
            }
        }
        found
    }
}

/// The longest model-facing name the `openai` profile allows, in bytes.
pub(crate) const OPENAI_MAX_NAME_BYTES: usize = 64;

/// Hex digits of the hash that ends a shortened name.
const HASH_DIGITS: usize = 8;

/// N6: the model-facing name of a name (that passed [`check_tool_name`]) under a profile.
///
/// * `mcp`: the name itself.
/// * `anthropic`: every `.` becomes `_`.
/// * `openai`: every `.` becomes `_`; a result over 64 bytes keeps its first 55 bytes, then `_`
///   and 8 hex digits of the FNV-1a hash of the whole real name, so it is stable across builds
///   and machines and two long names that share a prefix stay apart.
pub(crate) fn model_name(name: &str, profile: NameProfile) -> String {
    match profile {
        NameProfile::Mcp => name.to_string(),
        NameProfile::Anthropic => name.replace('.', "_"),
        NameProfile::Openai => {
            let mapped = name.replace('.', "_");
            if mapped.len() <= OPENAI_MAX_NAME_BYTES {
                return mapped;
            }
            let mut hasher = fnv::FnvHasher::default();
            std::hash::Hasher::write(&mut hasher, name.as_bytes());
            let hash = std::hash::Hasher::finish(&hasher);
            let mut keep = OPENAI_MAX_NAME_BYTES - HASH_DIGITS - 1;
            while !mapped.is_char_boundary(keep) {
                keep -= 1;
            }
            format!(
                "{}_{:0width$x}",
                &mapped[..keep],
                hash & 0xffff_ffff,
                width = HASH_DIGITS
            )
        }
    }
}

/// The lower-case name of a profile, for messages.
pub(crate) fn profile_name(profile: NameProfile) -> &'static str {
    match profile {
        NameProfile::Mcp => "mcp",
        NameProfile::Openai => "openai",
        NameProfile::Anthropic => "anthropic",
    }
}

fn check_alias_text(
    alias: &str,
    what: &str,
    tool: &str,
    pos: &Option<Position>,
) -> Result<(), BuildError> {
    if alias.trim().is_empty() {
        return Err(BuildError::Alias {
            message: format!("a {what} of {tool} is blank"),
            at: At(pos.clone()),
        });
    }
    if alias.trim() != alias {
        return Err(BuildError::Alias {
            message: format!("{what} {alias:?} of {tool} has surrounding whitespace"),
            at: At(pos.clone()),
        });
    }
    Ok(())
}

/// The top-level parameter names of a JSON Schema object.
pub(crate) fn param_names(schema: &serde_json::Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

fn suggest<'a>(name: &str, names: impl Iterator<Item = &'a str>) -> String {
    let c = closest(name, names, 3);
    if c.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", c.join(", "))
    }
}

/// Up to `n` names within a small edit distance of `name`, closest first, ties by name. The
/// distance is optimal string alignment (Damerau-Levenshtein without repeated edits of one
/// substring): a swap of two neighbouring letters (`ehco` for `echo`) counts as one edit.
pub(crate) fn closest<'a>(
    name: &str,
    names: impl Iterator<Item = &'a str>,
    n: usize,
) -> Vec<String> {
    let lname = name.to_ascii_lowercase();
    let max = (lname.chars().count() / 3).clamp(1, 4);
    let mut scored: Vec<(usize, &str)> = names
        .filter_map(|cand| {
            let lc = cand.to_ascii_lowercase();
            let d = strsim::osa_distance(&lname, &lc);
            let contains = lname.len() >= 3 && (lc.contains(&lname) || lname.contains(&lc));
            if d <= max {
                Some((d, cand))
            } else if contains {
                Some((max + 1, cand))
            } else {
                None
            }
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(n)
        .map(|(_, s)| s.to_string())
        .collect()
}

#[cfg(test)]
mod tests;
