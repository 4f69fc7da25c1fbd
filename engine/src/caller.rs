//! Who makes a call: the [`Caller`] every call carries, from the host that authenticated it to
//! the layers, the hooks, the tools and the audit log.
//!
//! The engine does not authenticate anyone: a host does (`toolgate serve --http` checks API
//! keys and bearer tokens) and hands the engine what it found, on the session handle it calls
//! through ([`crate::Session::with_caller`]). What is local needs no proof: `toolgate call`,
//! `run`, `serve` over stdio and HTTP without authentication are [`Caller::local`], the
//! program's own user (C1).

use std::sync::{Arc, LazyLock};

use serde::Serialize;
use serde_json::{Map, Value};

/// The name of the [`Caller::local`] caller.
pub const LOCAL_CALLER: &str = "local";

/// Who makes a call: a principal's name, the groups it belongs to, and the claims of the
/// credential that proved it (a JWT's claims; empty for an API key or a local caller).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Caller {
    name: String,
    groups: Vec<String>,
    claims: Map<String, Value>,
    #[serde(skip)]
    local: bool,
}

static LOCAL: LazyLock<Arc<Caller>> = LazyLock::new(|| {
    Arc::new(Caller {
        name: LOCAL_CALLER.to_owned(),
        groups: Vec::new(),
        claims: Map::new(),
        local: true,
    })
});

impl Caller {
    /// The principal `name`, member of `groups`, without claims.
    pub fn new(name: impl Into<String>, groups: Vec<String>) -> Self {
        Caller {
            name: name.into(),
            groups,
            claims: Map::new(),
            local: false,
        }
    }

    /// The same caller with the claims of its credential.
    pub fn with_claims(mut self, claims: Map<String, Value>) -> Self {
        self.claims = claims;
        self
    }

    /// The local caller (named `local`, no groups): the program's own user, over stdio or the
    /// CLI, or HTTP without authentication (C1). One shared instance.
    pub fn local() -> Arc<Caller> {
        Arc::clone(&LOCAL)
    }

    /// The principal's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The groups the principal belongs to.
    pub fn groups(&self) -> &[String] {
        &self.groups
    }

    /// Whether the principal belongs to `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// The claims of the credential that proved the caller (a JWT's); empty otherwise.
    pub fn claims(&self) -> &Map<String, Value> {
        &self.claims
    }

    /// Whether this is the local caller, which no credential proved (C1).
    pub fn is_local(&self) -> bool {
        self.local
    }
}

impl Default for Caller {
    fn default() -> Self {
        (*Caller::local()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_caller_is_named_local_and_has_no_groups() {
        let local = Caller::local();
        assert_eq!(local.name(), LOCAL_CALLER);
        assert!(local.is_local());
        assert!(local.groups().is_empty());
        // A principal that calls itself `local` is still not the local caller.
        assert!(!Caller::new(LOCAL_CALLER, vec![]).is_local());
    }

    #[test]
    fn a_caller_belongs_to_its_groups_only() {
        let alice = Caller::new("alice", vec!["dev".into(), "ops".into()]);
        assert!(alice.in_group("dev") && alice.in_group("ops"));
        assert!(!alice.in_group("admin"));
    }
}
