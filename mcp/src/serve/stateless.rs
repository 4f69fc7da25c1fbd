//! The toolgate session of a request that comes without an MCP session.
//!
//! toolgate keeps state per session: the catalog tools a session found with `tool_search`
//! (S3), the large results it offloaded, which only it may read back with `read_tool_result`
//! (R4), and its turn in a plugin's queue (waiting calls are served fairly across sessions).
//! Protocol 2026-07-28 has no session: every request stands alone, and Streamable HTTP sends
//! no `Mcp-Session-Id`. Here is how such a request gets its session:
//!
//! | how the client connects | its toolgate session |
//! |---|---|
//! | stdio, any revision | the connection's: one per `serve` process (`--session` names it) |
//! | HTTP, 2025 revisions | the MCP session (`Mcp-Session-Id`), as before |
//! | HTTP, 2026-07-28, `_meta["toolgate/session"]` given | its id, within the client's principal |
//! | HTTP, 2026-07-28, no id | the principal's default session |
//!
//! The **principal** is who the request comes from, as far as `serve` can tell: the bearer
//! token it carried (its SHA-256, never the token itself), or `local` when `serve` asks for no
//! token (loopback, where any local program could connect anyway). A session belongs to its
//! principal (C2): the stored id is derived from the principal and the client's id,
//! `mcp-` and 32 hex digits of `SHA-256("toolgate stateless session" 0 principal 0 id)`, so
//! a client of another principal that presents the same id gets another session, and can
//! neither list what this one found nor read what it offloaded ("access denied"). Session
//! rules (`rules.*.sessions`) see the derived id: `mcp-*` matches every such session.
//!
//! Without an id, every request of one principal shares that principal's default session:
//! tools found stay found, and an offloaded result can be read back, for a client that sends
//! no id at all (the official SDKs send none). Clients sharing a token then share what they
//! found, and each can read what another offloaded **if it knows the result's id** (128
//! random bits, shown only to the client whose call made the result). Clients that must not
//! share send their own `toolgate/session` (an unguessable one), or connect with a 2025
//! revision, whose sessions are per connection.
//!
//! The engine keeps the state of every session it has seen in memory; the state also lives in
//! the session store, so [`Recent`] bounds how many stateless sessions stay in memory and lets
//! the engine forget the one used longest ago (its next request reads it back from the store).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use rmcp::ErrorData as McpError;
use rmcp::model::RequestMetaObject;
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolgate_store::SessionId;

/// The `_meta` key under which a 2026-07-28 client names its toolgate session.
pub(crate) const SESSION_META_KEY: &str = "toolgate/session";

/// The most stateless sessions whose state an engine keeps in memory at once.
pub(crate) const MAX_IN_MEMORY: usize = 4096;

/// Who a request comes from, as far as `serve` can tell (see the module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Principal(Arc<str>);

impl Principal {
    /// No token is asked for: every client is the local principal.
    pub(crate) fn local() -> Self {
        Principal(Arc::from("local"))
    }

    /// The clients that present `token`.
    pub(crate) fn bearer(token: &str) -> Self {
        let digest = Sha256::digest(token.as_bytes());
        Principal(Arc::from(format!("bearer:{}", hex(&digest[..16])).as_str()))
    }

    /// The principal an authenticated caller named `name` is (C3).
    pub(crate) fn named(name: &str) -> Self {
        Principal(Arc::from(name))
    }

    /// The principal's name, as the engine's caller carries it.
    pub(crate) fn name(&self) -> &str {
        &self.0
    }
}

/// The toolgate session of a request without an MCP session, from `principal` and the id in
/// `meta` (see the module).
///
/// # Errors
///
/// `-32602` (invalid params) when `_meta["toolgate/session"]` is there but not a string that
/// makes a session id (non-blank, no surrounding whitespace, at most 256 bytes).
pub(crate) fn session_of(
    principal: &Principal,
    meta: &RequestMetaObject,
) -> Result<SessionId, McpError> {
    let named = match meta.get(SESSION_META_KEY) {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => {
            // The client's id follows the rule of every session id, so that what it is told
            // about a bad one is what it would be told anywhere else.
            SessionId::parse(id).map_err(|e| {
                McpError::invalid_params(format!("bad _meta[\"{SESSION_META_KEY}\"]: {e}"), None)
            })?;
            Some(id.as_str())
        }
        Some(other) => {
            return Err(McpError::invalid_params(
                format!("_meta[\"{SESSION_META_KEY}\"] must be a string, not {other}"),
                None,
            ));
        }
    };
    let mut hash = Sha256::new();
    hash.update(b"toolgate stateless session\0");
    hash.update(principal.0.as_bytes());
    hash.update(b"\0");
    match named {
        Some(id) => {
            hash.update(b"id:");
            hash.update(id.as_bytes());
        }
        None => hash.update(b"default"),
    }
    let digest = hash.finalize();
    SessionId::parse(&format!("mcp-{}", hex(&digest[..16])))
        .map_err(|e| McpError::internal_error(format!("a derived session id broke: {e}"), None))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The stateless sessions used most recently, at most `capacity` of them.
#[derive(Debug)]
pub(crate) struct Recent {
    capacity: usize,
    inner: Mutex<RecentInner>,
}

#[derive(Debug, Default)]
struct RecentInner {
    tick: u64,
    by_id: HashMap<SessionId, u64>,
    by_tick: BTreeMap<u64, SessionId>,
}

impl Recent {
    pub(crate) fn new(capacity: usize) -> Self {
        Recent {
            capacity: capacity.max(1),
            inner: Mutex::default(),
        }
    }

    /// Marks `id` used now; answers the session to forget when that makes one too many.
    pub(crate) fn touch(&self, id: &SessionId) -> Option<SessionId> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.tick += 1;
        let tick = inner.tick;
        if let Some(old) = inner.by_id.insert(id.clone(), tick) {
            inner.by_tick.remove(&old);
        }
        inner.by_tick.insert(tick, id.clone());
        if inner.by_id.len() <= self.capacity {
            return None;
        }
        let (_, oldest) = inner.by_tick.pop_first()?;
        inner.by_id.remove(&oldest);
        Some(oldest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(value: Value) -> RequestMetaObject {
        match value {
            Value::Object(map) => RequestMetaObject::from(map),
            _ => unreachable!(),
        }
    }

    #[test]
    fn one_id_of_one_principal_is_one_session() {
        let alice = Principal::bearer("alice-token");
        let a = session_of(&alice, &meta(json!({SESSION_META_KEY: "chat-1"}))).unwrap();
        let again = session_of(&alice, &meta(json!({SESSION_META_KEY: "chat-1"}))).unwrap();
        assert_eq!(a, again);
        assert!(
            a.as_str().starts_with("mcp-") && a.as_str().len() == 36,
            "{a:?}"
        );
        let other = session_of(&alice, &meta(json!({SESSION_META_KEY: "chat-2"}))).unwrap();
        assert_ne!(a, other);
    }

    #[test]
    fn c2_another_principal_with_the_same_id_gets_another_session() {
        let id = meta(json!({SESSION_META_KEY: "chat-1"}));
        let alice = session_of(&Principal::bearer("alice-token"), &id).unwrap();
        let bob = session_of(&Principal::bearer("bob-token"), &id).unwrap();
        let local = session_of(&Principal::local(), &id).unwrap();
        assert_ne!(alice, bob);
        assert_ne!(alice, local);
    }

    #[test]
    fn without_an_id_a_principal_has_one_default_session_of_its_own() {
        let alice = Principal::bearer("alice-token");
        let none = session_of(&alice, &RequestMetaObject::new()).unwrap();
        let null = session_of(&alice, &meta(json!({SESSION_META_KEY: null}))).unwrap();
        assert_eq!(none, null);
        // Not the session of a client that names itself "default".
        let named = session_of(&alice, &meta(json!({SESSION_META_KEY: "default"}))).unwrap();
        assert_ne!(none, named);
        let bob = session_of(&Principal::bearer("bob-token"), &RequestMetaObject::new()).unwrap();
        assert_ne!(none, bob);
    }

    #[test]
    fn a_bad_session_id_in_meta_is_invalid_params() {
        for bad in [
            json!(""),
            json!(" padded"),
            json!(7),
            json!({"id": 1}),
            json!("x".repeat(300)),
        ] {
            let err =
                session_of(&Principal::local(), &meta(json!({SESSION_META_KEY: bad}))).unwrap_err();
            assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{bad}");
            assert!(err.message.contains(SESSION_META_KEY), "{err:?}");
        }
    }

    #[test]
    fn the_session_used_longest_ago_is_forgotten_first() {
        let recent = Recent::new(2);
        let id = |s: &str| SessionId::parse(s).unwrap();
        assert_eq!(recent.touch(&id("a")), None);
        assert_eq!(recent.touch(&id("b")), None);
        assert_eq!(recent.touch(&id("a")), None, "a is used again");
        assert_eq!(recent.touch(&id("c")), Some(id("b")));
        assert_eq!(recent.touch(&id("d")), Some(id("a")));
    }
}
