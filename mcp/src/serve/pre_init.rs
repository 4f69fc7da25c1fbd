//! Requests that come before `initialize`, answered as the README says: `serve` offers the MCP
//! revisions with sessions (up to 2025-11-25), which open with the `initialize` handshake, and a
//! toolgate session is an MCP session. So a request of those revisions that comes before
//! `initialize` is not served outside any session: it gets a JSON-RPC error (`-32600`) that
//! says to send `initialize` first, over stdio and (without an `Mcp-Session-Id`) over HTTP.
//!
//! What passes on: `initialize` itself; `ping`, which MCP allows before it; `server/discover`;
//! and a request whose `_meta` names a revision without the handshake (2026-07-28 and later),
//! which `rmcp` answers (today with "unsupported protocol version" and the versions offered, so
//! a client of that revision falls back, as the official SDKs do). Notifications and responses
//! pass too: `rmcp` ends a stdio handshake that opens with one.

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, GetMeta, RequestId,
    ServerJsonRpcMessage,
};

/// The error a request gets when it comes before `initialize`, and the id to answer, or
/// `None` when `message` may go on.
pub(crate) fn before_initialize(message: &ClientJsonRpcMessage) -> Option<(RequestId, ErrorData)> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    match &request.request {
        ClientRequest::InitializeRequest(_)
        | ClientRequest::PingRequest(_)
        | ClientRequest::DiscoverRequest(_) => return None,
        other => {
            let sessionless = other
                .get_meta()
                .protocol_version()
                .is_some_and(|version| !version.has_initialize());
            if sessionless {
                return None;
            }
        }
    }
    let method = request.request.method();
    Some((
        request.id.clone(),
        ErrorData::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "send initialize first: {method} came before it. toolgate serves the MCP \
                 revisions with sessions (up to 2025-11-25), which open with initialize"
            ),
            None,
        ),
    ))
}

/// The first requests of one stdio connection: until `initialize` has passed, each is checked
/// with [`before_initialize`].
#[derive(Debug, Default)]
pub(crate) struct Handshake {
    initialized: bool,
}

impl Handshake {
    /// The answer to send in place of passing `message` on, or `None` to pass it.
    pub(crate) fn check(&mut self, message: &ClientJsonRpcMessage) -> Option<ServerJsonRpcMessage> {
        if self.initialized {
            return None;
        }
        if let ClientJsonRpcMessage::Request(request) = message
            && matches!(request.request, ClientRequest::InitializeRequest(_))
        {
            self.initialized = true;
            return None;
        }
        let (id, error) = before_initialize(message)?;
        Some(ServerJsonRpcMessage::error(error, Some(id)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(value: serde_json::Value) -> ClientJsonRpcMessage {
        serde_json::from_value(value).expect("a JSON-RPC message")
    }

    fn refused(value: serde_json::Value) -> Option<String> {
        before_initialize(&message(value)).map(|(_, e)| e.message.into_owned())
    }

    #[test]
    fn a_tool_list_before_initialize_is_told_to_initialize_first() {
        let e = refused(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).unwrap();
        assert!(
            e.starts_with("send initialize first: tools/list came before it"),
            "{e}"
        );
    }

    #[test]
    fn a_session_revision_named_in_meta_is_refused_too() {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2025-11-25",
            "io.modelcontextprotocol/clientCapabilities": {}});
        let e = refused(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": meta}}));
        assert!(e.is_some());
    }

    #[test]
    fn initialize_ping_discover_and_the_sessionless_revision_pass() {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}});
        for passing in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "server/discover", "params": {"_meta": meta}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": meta}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ] {
            assert_eq!(refused(passing.clone()), None, "{passing}");
        }
    }

    #[test]
    fn after_initialize_everything_passes() {
        let mut handshake = Handshake::default();
        let list = message(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
        assert!(handshake.check(&list).is_some());
        let init = message(
            json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"}}}),
        );
        assert!(handshake.check(&init).is_none());
        assert!(handshake.check(&list).is_none());
    }
}
