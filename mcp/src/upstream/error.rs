//! Why an upstream MCP server could not be started or reached, and how a failed call is
//! reported to the model.

use std::time::Duration;

use rmcp::transport::streamable_http_client::StreamableHttpError;
use toolgate::tool::ToolError;

/// The error kind of a call whose server is not running or cannot be reached.
pub const UPSTREAM_UNAVAILABLE: &str = "upstream_unavailable";
/// The error kind of a call the server answered with an error, or with something that is not
/// a tool result.
pub const UPSTREAM_ERROR: &str = "upstream_error";

/// Why an upstream server did not start (or stopped). `Display` says what went wrong in this
/// step; the cause, where there is one, is its [`source`](std::error::Error::source), and
/// [`UpstreamError::report`] joins them into one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// A string of the server's settings names an environment variable that is not set.
    #[error("{setting} needs the environment variable")]
    MissingVar {
        /// Which setting (`command[2]`, `headers.Authorization`, ...).
        setting: String,
        /// The variable.
        #[source]
        source: toolgate_policy::MissingVar,
    },
    /// A header the policy gives cannot be sent.
    #[error("header {name:?} cannot be sent: {reason}")]
    BadHeader {
        /// The header's name as written.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The program could not be started.
    #[error("cannot start {program}")]
    Spawn {
        /// The program as it was run.
        program: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The child process exited before it was ready.
    #[error("{program} exited ({status}) before the MCP handshake was done{}", stderr_note(.stderr))]
    ExitedEarly {
        /// The program as it was run.
        program: String,
        /// Its exit status, as the system words it.
        status: String,
        /// Its last lines on stderr.
        stderr: String,
    },
    /// The MCP handshake (`initialize`) failed.
    #[error("the MCP handshake failed: {reason}{}", stderr_note(.stderr))]
    Handshake {
        /// What failed, down to the first cause (`send initialize request: error sending
        /// request for url (...): ...: Connection refused`).
        reason: String,
        /// Its last lines on stderr (empty for a URL server).
        stderr: String,
    },
    /// `tools/list` failed.
    #[error("listing its tools failed")]
    ListTools {
        /// What failed.
        #[source]
        source: rmcp::ServiceError,
    },
    /// Starting took longer than `startup_timeout`.
    #[error("it did not start within {} (startup_timeout){}", toolgate_policy::format_duration(Some(*.after)), stderr_note(.stderr))]
    StartupTimeout {
        /// The bound.
        after: Duration,
        /// Its last lines on stderr (empty for a URL server).
        stderr: String,
    },
}

impl UpstreamError {
    /// The error and every cause below it, on one line: `a: b: c`.
    pub fn report(&self) -> String {
        chain(self)
    }
}

/// `error` and its sources, joined with `": "`.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        // rmcp's errors (`ServiceError::TransportSend`, `DynamicTransportError`) repeat their
        // source in their own text; say it once. toolgate's own errors never do (see
        // `toolgate::error::Chain`, which skips nothing).
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

/// `; its stderr ended with: ...`, or nothing when there is no stderr. For the log only.
pub(crate) fn stderr_note(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr ended with: {stderr}")
    }
}

/// What a failed handshake says: the transport's failure and its causes, without the
/// transport's type name.
pub(crate) fn handshake_reason(error: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as E;
    match error {
        E::TransportError { error, context } => {
            // The HTTP client's own error keeps its causes (`Connection refused`) where the
            // transport's wrapper does not name them as sources.
            let http = error
                .error
                .downcast_ref::<StreamableHttpError<reqwest::Error>>();
            match http {
                Some(StreamableHttpError::Client(e)) => format!("{context}: {}", chain(e)),
                _ => format!("{context}: {}", chain(&*error.error)),
            }
        }
        E::ConnectionClosed(when) => format!("the connection closed ({when})"),
        other => chain(other),
    }
}

/// A call that could not reach its server.
pub(crate) fn unavailable(message: impl Into<String>) -> ToolError {
    ToolError::coded(UPSTREAM_UNAVAILABLE, message)
}

/// A call the server answered badly.
pub(crate) fn upstream_error(message: impl Into<String>) -> ToolError {
    ToolError::coded(UPSTREAM_ERROR, message)
}

/// How a failed request is told to the model. `server` names the server.
pub(crate) fn call_error(server: &str, error: &rmcp::ServiceError) -> ToolError {
    use rmcp::ServiceError;
    match error {
        ServiceError::McpError(data) if super::frame::too_large(data) => upstream_error(format!(
            "the MCP server {server} answered with a message over {}, the most toolgate reads from an MCP server; the answer was dropped",
            super::frame::limit_text()
        )),
        ServiceError::McpError(data) if data.code == rmcp::model::ErrorCode::INVALID_PARAMS => {
            ToolError::invalid_arguments(format!(
                "the MCP server {server} refused the arguments: {}",
                data.message
            ))
        }
        ServiceError::McpError(data) => upstream_error(format!(
            "the MCP server {server} answered with error {}: {}",
            data.code.0, data.message
        )),
        // A URL server's answer over rmcp's limit: answering again would not help.
        ServiceError::TransportSend(e)
            if matches!(
                e.error
                    .downcast_ref::<StreamableHttpError<reqwest::Error>>(),
                Some(StreamableHttpError::ResponseBodyTooLarge { .. })
            ) =>
        {
            upstream_error(format!(
                "the MCP server {server} answered with a message over {}, the most toolgate reads from an MCP server; the answer was dropped",
                super::frame::limit_text()
            ))
        }
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => unavailable(format!(
            "the connection to the MCP server {server} broke during the call ({}); it is being restarted, try again",
            chain(error)
        )),
        ServiceError::UnexpectedResponse => upstream_error(format!(
            "the MCP server {server} answered with something that is not a tool result"
        )),
        other => upstream_error(format!(
            "the call to the MCP server {server} failed: {}",
            chain(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn a_report_joins_the_causes_once() {
        let e = UpstreamError::Spawn {
            program: "nope".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "not found"),
        };
        assert_eq!(e.report(), "cannot start nope: not found");
        assert!(e.source().is_some());
    }

    #[test]
    fn stderr_is_quoted_only_when_there_is_some() {
        let e = UpstreamError::ExitedEarly {
            program: "srv".into(),
            status: "exit status: 3".into(),
            stderr: String::new(),
        };
        assert_eq!(
            e.to_string(),
            "srv exited (exit status: 3) before the MCP handshake was done"
        );
        let e = UpstreamError::ExitedEarly {
            program: "srv".into(),
            status: "exit status: 3".into(),
            stderr: "boom".into(),
        };
        assert!(e.to_string().ends_with("; its stderr ended with: boom"));
    }

    #[test]
    fn refused_arguments_are_invalid_arguments() {
        let e = rmcp::ServiceError::McpError(rmcp::ErrorData::invalid_params("no such zone", None));
        let t = call_error("time", &e);
        assert_eq!(t.kind, toolgate::tool::ToolErrorKind::InvalidArguments);
        assert!(t.message.contains("no such zone"), "{}", t.message);
    }

    #[test]
    fn a_closed_connection_is_unavailable() {
        let t = call_error("time", &rmcp::ServiceError::TransportClosed);
        assert_eq!(
            t.kind,
            toolgate::tool::ToolErrorKind::Coded(UPSTREAM_UNAVAILABLE)
        );
    }

    #[test]
    fn another_json_rpc_error_is_an_upstream_error() {
        let e = rmcp::ServiceError::McpError(rmcp::ErrorData::internal_error("kaput", None));
        let t = call_error("time", &e);
        assert_eq!(t.kind, toolgate::tool::ToolErrorKind::Coded(UPSTREAM_ERROR));
        assert!(t.message.contains("kaput"), "{}", t.message);
    }
}
