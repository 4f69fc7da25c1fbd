//! Every tool the engine knows, where it came from, and how a model-facing name resolves to it.
//!
//! The registry checks the name rules once, when the engine is built (N1-N6): a name is 1 to
//! 128 bytes of `[A-Za-z0-9_.-]` plus the policy's provider profile, unique across sources,
//! not one of the reserved built-in names, and every alias points at a real tool without
//! colliding with anything.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use toolgate_policy::{AliasSpec, NameProfile, Position};

use crate::error::{At, BuildError};
use crate::tool::Tool;

/// Where a tool came from; named in errors such as duplicate names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSource {
    /// Registered in Rust by the host program.
    Native,
    /// From a plugin library.
    Plugin { plugin: String, path: String },
    /// From a JSONL catalog (search only, no implementation).
    Catalog { file: String },
    /// Built into the engine (`read_tool_result`, `tool_search`).
    Builtin,
}

impl fmt::Display for ToolSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolSource::Native => f.write_str("a native tool"),
            ToolSource::Plugin { plugin, path } => write!(f, "plugin {plugin} ({path})"),
            ToolSource::Catalog { file } => write!(f, "catalog {file}"),
            ToolSource::Builtin => f.write_str("the engine (built-in)"),
        }
    }
}

/// One registered tool.
#[derive(Clone)]
pub struct Entry {
    pub tool: Arc<dyn Tool>,
    pub source: ToolSource,
    /// Hidden behind `tool_search` until found (S1).
    pub searchable: bool,
    /// Argument alias -> real argument name.
    pub arg_aliases: BTreeMap<String, String>,
}

/// What a model-facing name resolves to.
#[derive(Clone)]
pub struct Resolved<'a> {
    /// The real tool name.
    pub name: &'a str,
    pub entry: &'a Entry,
}

/// The set of tools, checked.
#[derive(Clone, Default)]
pub struct Registry {
    entries: BTreeMap<String, Entry>,
    /// Name alias -> real name.
    aliases: HashMap<String, String>,
}

/// N1 + N6: checks one model-facing name. Returns the reason it is invalid.
pub fn check_name(name: &str, profile: NameProfile) -> Result<(), String> {
    if name.is_empty() {
        return Err("a name must be 1 to 128 bytes; this one is empty".into());
    }
    if name.len() > 128 {
        return Err(format!(
            "a name must be at most 128 bytes; this one is {} bytes",
            name.len()
        ));
    }
    if let Some((i, c)) = name
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '.' || *c == '-'))
    {
        return Err(format!(
            "character {c:?} at byte {i} is not allowed (only A-Z, a-z, 0-9, '_', '.', '-')"
        ));
    }
    match profile {
        NameProfile::Mcp => {}
        NameProfile::Openai => {
            if name.len() > 64 {
                return Err(format!(
                    "the openai name profile allows at most 64 bytes; this one is {} bytes",
                    name.len()
                ));
            }
            if name.contains('.') {
                return Err("the openai name profile does not allow '.'".into());
            }
        }
        NameProfile::Anthropic => {
            if name.contains('.') {
                return Err("the anthropic name profile does not allow '.'".into());
            }
        }
    }
    Ok(())
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds a tool, checking its name (N1, N6) and uniqueness (N2).
    pub fn insert(
        &mut self,
        tool: Arc<dyn Tool>,
        source: ToolSource,
        searchable: bool,
        profile: NameProfile,
    ) -> Result<(), BuildError> {
        let name = tool.spec().name.clone();
        check_name(&name, profile).map_err(|reason| BuildError::InvalidName {
            name: name.clone(),
            source_desc: source.to_string(),
            reason,
            at: At(None),
        })?;
        if let Some(existing) = self.entries.get(&name) {
            return Err(BuildError::DuplicateName {
                name,
                first: existing.source.to_string(),
                second: source.to_string(),
            });
        }
        self.entries.insert(
            name,
            Entry {
                tool,
                source,
                searchable,
                arg_aliases: BTreeMap::new(),
            },
        );
        Ok(())
    }

    /// Adds the policy's aliases (N4), after every tool is in.
    pub fn add_aliases(
        &mut self,
        aliases: &BTreeMap<String, AliasSpec>,
        profile: NameProfile,
        reserved: &[&str],
    ) -> Result<(), BuildError> {
        for (tool, spec) in aliases {
            let at = || At(spec.position.clone());
            let Some(entry) = self.entries.get(tool) else {
                return Err(BuildError::Alias {
                    message: format!(
                        "aliases: {tool:?} is not a registered tool, so it cannot have aliases{}",
                        suggest(tool, self.entries.keys().map(String::as_str))
                    ),
                    at: at(),
                });
            };
            for alias in &spec.names {
                check_alias_text(alias, "tool-name alias", tool, &spec.position)?;
                if reserved.contains(&alias.as_str()) {
                    return Err(BuildError::Alias {
                        message: format!(
                            "alias {alias:?} of {tool} is the reserved built-in name {alias:?}"
                        ),
                        at: at(),
                    });
                }
                if self.entries.contains_key(alias) {
                    return Err(BuildError::Alias {
                        message: format!(
                            "alias {alias:?} of {tool} is already the name of a tool ({})",
                            self.entries[alias].source
                        ),
                        at: at(),
                    });
                }
                if let Some(other) = self.aliases.get(alias) {
                    return Err(BuildError::Alias {
                        message: format!(
                            "alias {alias:?} of {tool} is already an alias of {other}"
                        ),
                        at: at(),
                    });
                }
                check_name(alias, profile).map_err(|reason| BuildError::InvalidName {
                    name: alias.clone(),
                    source_desc: format!("alias of {tool}"),
                    reason,
                    at: at(),
                })?;
                self.aliases.insert(alias.clone(), tool.clone());
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

    /// Resolves a model-facing name through the explicit aliases only: a name is never routed
    /// to a tool it does not name (D4).
    pub fn resolve(&self, model_name: &str) -> Option<Resolved<'_>> {
        if let Some((name, entry)) = self.entries.get_key_value(model_name) {
            return Some(Resolved { name, entry });
        }
        let real = self.aliases.get(model_name)?;
        let (name, entry) = self.entries.get_key_value(real.as_str())?;
        Some(Resolved { name, entry })
    }

    /// Moves the tools whose name matches into the search catalog.
    pub fn mark_searchable(&mut self, matches: impl Fn(&str) -> bool) {
        for (name, entry) in self.entries.iter_mut() {
            if matches(name) {
                entry.searchable = true;
            }
        }
    }

    /// The name aliases of one tool.
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

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.get(name)
    }

    /// Every tool, by name.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Name aliases, alias -> real name.
    pub fn aliases(&self) -> impl Iterator<Item = (&str, &str)> {
        self.aliases.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The known names closest to `name`, for "did you mean" messages.
    pub fn suggestions(&self, name: &str, visible: impl Fn(&str) -> bool) -> Vec<String> {
        let names = self
            .entries
            .keys()
            .map(String::as_str)
            .chain(self.aliases.keys().map(String::as_str))
            .filter(|n| visible(n));
        closest(name, names, 3)
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
pub fn param_names(schema: &serde_json::Value) -> Vec<String> {
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

/// Up to `n` names within a small edit distance of `name`, closest first, ties by name.
pub fn closest<'a>(name: &str, names: impl Iterator<Item = &'a str>, n: usize) -> Vec<String> {
    let lname = name.to_ascii_lowercase();
    let max = (lname.chars().count() / 3).clamp(1, 4);
    let mut scored: Vec<(usize, &str)> = names
        .filter_map(|cand| {
            let lc = cand.to_ascii_lowercase();
            let d = levenshtein(&lname, &lc);
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

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_prefers_smaller_edit_distance() {
        let names = ["search", "web_search", "echo", "sleep"];
        assert_eq!(closest("serch", names.into_iter(), 3), vec!["search"]);
        assert_eq!(
            closest("websearch", names.into_iter(), 3),
            vec!["web_search", "search"]
        );
    }

    #[test]
    fn levenshtein_counts_edits() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "ab"), 2);
    }
}
