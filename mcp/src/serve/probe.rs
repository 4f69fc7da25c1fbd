//! `server/discover` over stdio, answered before anything is started.
//!
//! A client on protocol 2026-07-28 learns what a server speaks by asking `server/discover`.
//! Over stdio the official TypeScript client (`@modelcontextprotocol/client` 2.4,
//! `versionNegotiation: auto`) asks a throw-away copy of the server, which it starts only
//! for that question and stops at once; then it starts the server it keeps. A `serve` that
//! built its engine first (loading plugins, starting every upstream MCP server) did all of
//! that twice, and the client waited for both.
//!
//! So `serve` over stdio reads its first messages itself ([`answer_probes`]): it answers
//! `server/discover` and `ping` from what it knows without a policy ([`super::handler`]'s
//! `server_config` and `supported_versions`), and builds the engine only when another
//! message comes, which then goes to rmcp first ([`Replayed`]). A probe copy of `serve` starts
//! nothing and ends as soon as its stdin closes or it is signalled.
//!
//! rmcp (3.11) answers `server/discover` before the lifecycle too, but only from a service
//! that exists already, that is after the engine is built; see `docs/rmcp-upstream.md`.

use std::io;

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, DiscoverResult, EmptyResult, ErrorData, GetMeta,
    ProtocolVersion, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use super::handler::{server_config, supported_versions};

/// Answers `server/discover` and `ping` on `transport` until another message comes; answers
/// that message, or `None` when the client left first.
///
/// # Errors
///
/// An answer cannot be written.
pub(crate) async fn answer_probes<T>(
    transport: &mut T,
) -> Result<Option<ClientJsonRpcMessage>, T::Error>
where
    T: Transport<RoleServer>,
{
    loop {
        let Some(message) = transport.receive().await else {
            return Ok(None);
        };
        let ClientJsonRpcMessage::Request(request) = &message else {
            return Ok(Some(message));
        };
        let answer = match &request.request {
            ClientRequest::DiscoverRequest(_) => discover_answer(request.request.get_meta()),
            ClientRequest::PingRequest(_) => Ok(ServerResult::EmptyResult(EmptyResult {})),
            _ => return Ok(Some(message)),
        };
        tracing::debug!("answered a probe before starting");
        let id = request.id.clone();
        let reply = match answer {
            Ok(result) => ServerJsonRpcMessage::response(result, id),
            Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
        };
        transport.send(reply).await?;
    }
}

/// The answer to `server/discover`, with the checks rmcp makes on it: the request's `_meta`
/// carries the protocol version and client capabilities (`-32602` otherwise), and names a
/// version this server speaks (`-32022` with the supported ones otherwise).
fn discover_answer(meta: &rmcp::model::RequestMetaObject) -> Result<ServerResult, ErrorData> {
    let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
    let requested = match meta.protocol_version() {
        Some(version) if missing.is_empty() => version,
        _ => {
            return Err(ErrorData::invalid_params(
                format!(
                    "request _meta is missing or has malformed required fields: {}",
                    missing.join(", ")
                ),
                None,
            ));
        }
    };
    let supported = supported_versions();
    if !supported.contains(&requested) {
        return Err(ErrorData::unsupported_protocol_version(
            requested, supported,
        ));
    }
    Ok(ServerResult::DiscoverResult(
        DiscoverResult::from_server_info(supported.to_vec(), server_config()),
    ))
}

/// A transport that gives `first` before anything it reads.
pub(crate) struct Replayed<T> {
    first: Option<ClientJsonRpcMessage>,
    inner: T,
}

impl<T> Replayed<T> {
    pub(crate) fn new(first: ClientJsonRpcMessage, inner: T) -> Self {
        Replayed {
            first: Some(first),
            inner,
        }
    }
}

impl<T> Transport<RoleServer> for Replayed<T>
where
    T: Transport<RoleServer, Error = io::Error>,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        match self.first.take() {
            Some(first) => Some(first),
            None => self.inner.receive().await,
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ClientCapabilities, Implementation, RequestMetaObject};

    fn meta(version: ProtocolVersion) -> RequestMetaObject {
        RequestMetaObject::with_client_context(
            version,
            Implementation::new("test", "1"),
            ClientCapabilities::default(),
        )
    }

    #[test]
    fn discover_names_every_revision_up_to_2026_07_28() {
        let Ok(ServerResult::DiscoverResult(found)) =
            discover_answer(&meta(ProtocolVersion::V_2026_07_28))
        else {
            panic!("not a discover result");
        };
        for version in [
            ProtocolVersion::V_2025_03_26,
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2026_07_28,
        ] {
            assert!(found.supported_versions.contains(&version), "{version}");
        }
        assert!(found.capabilities.tools.is_some());
    }

    #[test]
    fn discover_without_the_required_meta_is_invalid_params() {
        let err = discover_answer(&RequestMetaObject::new()).unwrap_err();
        assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(err.message.contains("protocolVersion"), "{err:?}");
    }

    #[test]
    fn discover_of_an_unknown_revision_names_the_supported_ones() {
        let err = discover_answer(&meta(
            serde_json::from_value(serde_json::json!("2099-01-01")).unwrap(),
        ))
        .unwrap_err();
        assert_eq!(
            err.code,
            rmcp::model::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        );
        assert!(err.data.unwrap().to_string().contains("2026-07-28"));
    }
}
