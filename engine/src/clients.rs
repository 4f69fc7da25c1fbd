//! What each principal may see (`clients:`, C4): the tools, resources and prompts an entry
//! lists are visible to the callers it matches, and nothing else is. A caller that no entry
//! matches sees nothing (but the built-in tools, which only reach its own session's state).
//! The local caller (the CLI, stdio) is not filtered: it is the program's own user.
//!
//! The table is read by [`crate::Engine::visible_tools`] (what a list shows) and by the
//! visibility layer (a call to what the caller cannot see is denied, saying so), and hosts ask
//! [`crate::Engine::sees`] before they list resources and prompts.

use toolgate_policy::ClientSpec;

use crate::access::{CallKind, normalize_uri};
use crate::caller::Caller;

/// The policy's `clients:` entries, ready to judge callers.
#[derive(Debug, Clone)]
pub(crate) struct ClientTable {
    entries: Vec<ClientSpec>,
}

impl ClientTable {
    /// The table of `entries` (the policy's `clients:`).
    pub(crate) fn new(entries: &[ClientSpec]) -> Self {
        ClientTable {
            entries: entries.to_vec(),
        }
    }

    /// Whether `caller` may see the `kind` named `name` (a real tool name, a resource URI, a
    /// prompt's `<server>.<prompt>`).
    pub(crate) fn sees(&self, caller: &Caller, kind: CallKind, name: &str) -> bool {
        if caller.is_local() {
            return true;
        }
        // Resources are judged in normal form, as the rules judge them (A2).
        let normal;
        let name = match kind {
            CallKind::Resource => match normalize_uri(name) {
                Ok(uri) => {
                    normal = uri;
                    normal.as_str()
                }
                Err(_) => return false,
            },
            _ => name,
        };
        self.entries
            .iter()
            .filter(|entry| applies(entry, caller))
            .any(|entry| {
                let listed = match kind {
                    CallKind::Tool => &entry.tools,
                    CallKind::Resource => &entry.resources,
                    CallKind::Prompt => &entry.prompts,
                };
                listed.iter().any(|g| g.is_match(name))
            })
    }

    /// Where the entries are that apply to `caller`, for `explain --as`.
    pub(crate) fn entries_for(&self, caller: &Caller) -> Vec<String> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, entry)| applies(entry, caller))
            .map(|(i, entry)| match &entry.position {
                Some(at) => format!("{at}: clients[{i}]"),
                None => format!("clients[{i}]"),
            })
            .collect()
    }
}

/// Whether `entry` applies to `caller`: it names the caller or one of its groups, or names
/// neither principals nor groups (it applies to every authenticated caller).
fn applies(entry: &ClientSpec, caller: &Caller) -> bool {
    (entry.principals.is_empty() && entry.groups.is_empty())
        || entry.principals.iter().any(|g| g.is_match(caller.name()))
        || entry.groups.iter().any(|g| caller.in_group(g))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_policy::glob::Glob;

    fn globs(list: &[&str]) -> Vec<Glob> {
        list.iter().map(|g| Glob::new(g).unwrap()).collect()
    }

    fn table() -> ClientTable {
        ClientTable::new(&[
            ClientSpec {
                principals: globs(&["alice"]),
                tools: globs(&["fs.*"]),
                ..ClientSpec::default()
            },
            ClientSpec {
                groups: vec!["ops".into()],
                tools: globs(&["deploy"]),
                resources: globs(&["file:///logs/*"]),
                ..ClientSpec::default()
            },
        ])
    }

    #[test]
    fn c4_a_caller_sees_what_the_entries_naming_it_or_its_groups_list() {
        let t = table();
        let alice = Caller::new("alice", vec!["ops".into()]);
        assert!(t.sees(&alice, CallKind::Tool, "fs.read"));
        assert!(t.sees(&alice, CallKind::Tool, "deploy"));
        assert!(t.sees(&alice, CallKind::Resource, "FILE:///logs/./a.txt"));
        assert!(!t.sees(&alice, CallKind::Tool, "shell"));
        assert!(!t.sees(&alice, CallKind::Prompt, "fs.read"));
        let bob = Caller::new("bob", vec![]);
        assert!(!t.sees(&bob, CallKind::Tool, "fs.read"));
        assert!(!t.sees(&bob, CallKind::Tool, "deploy"));
    }

    #[test]
    fn c4_the_local_caller_is_not_filtered() {
        assert!(table().sees(&Caller::local(), CallKind::Tool, "shell"));
    }
}
