//! `mcp_servers[].client_requests`: what an upstream MCP server may ask the client that made a
//! call while the call runs (sampling, elicitation, roots), how many sampling requests one call
//! may make, and how long the client has to answer.

use schemars::JsonSchema;
use serde::Deserialize;

use super::build::{Build, value_pos};
use super::values::{Count, DurationText, names_only};
use crate::error::DiagnosticKind;
use crate::model::McpClientRequests;
use crate::yaml::Node;

/// What the server may ask the client that made a call, while the call runs. A request the
/// policy refuses never reaches the client: the server gets an error saying so. Default:
/// nothing is allowed.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub(crate) struct ClientRequests {
    /// sampling/createMessage: the server asks the client's model for a completion, which the
    /// client pays for and which steers its model outside the policy's view. allow or refuse.
    /// Default refuse.
    pub sampling: Option<Access>,
    /// elicitation/create: the server asks the client's user for input (a form, or a URL to
    /// open). allow or refuse. Default refuse.
    pub elicitation: Option<Access>,
    /// roots/list: the server asks the client for its roots (the folders it works in, as file://
    /// URIs). allow or refuse. Default refuse.
    pub roots: Option<Access>,
    /// At most this many sampling requests per tool call; the next is refused. Default 10.
    #[schemars(
        range(min = 1, max = 1_000_000),
        extend("x-expected" = "a whole number from 1 to 1000000")
    )]
    pub max_sampling_per_call: Option<Count>,
    /// How long the client has to answer one request; then the server gets an error and the
    /// client is told the request is cancelled. The call's own timeout still applies. A duration
    /// above zero (30s, 5m). Default 60s.
    #[schemars(
        regex(pattern = r"^([0-9]+(ms|h|m|s))+$"),
        extend(
            "x-expected" = "a duration like 60s or 5m (units ms, s, m, h); none is not allowed"
        )
    )]
    pub timeout: Option<String>,
}

// allow or refuse.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = names_only)]
pub(crate) enum Access {
    Allow,
    Refuse,
}

impl ClientRequests {
    /// The model's value; `node` is the `client_requests` mapping, `path` its key path.
    pub(crate) fn build(self, node: &Node, path: &str, cx: &mut Build<'_>) -> McpClientRequests {
        let allowed = |access: Option<Access>| matches!(access, Some(Access::Allow));
        let mut out = McpClientRequests {
            sampling: allowed(self.sampling),
            elicitation: allowed(self.elicitation),
            roots: allowed(self.roots),
            ..McpClientRequests::default()
        };
        if let Some(Count(cap)) = self.max_sampling_per_call {
            // The schema bounds it to 1..=1000000.
            out.max_sampling_per_call = u32::try_from(cap).unwrap_or(u32::MAX);
        }
        if let Some(timeout) = self.timeout {
            let pos = value_pos(node, "timeout");
            let key = format!("{path}.timeout");
            match cx.duration(&DurationText(timeout), pos, &key) {
                Some(Some(limit)) if !limit.is_zero() => out.timeout = limit,
                Some(_) => cx.report(
                    pos,
                    format!("{key}: must be above zero: a client request always has a bound"),
                    DiagnosticKind::Duration,
                ),
                None => {}
            }
        }
        out
    }
}
