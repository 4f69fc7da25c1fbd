//! `mcp_servers[].client_requests`: what an upstream MCP server may ask the client that made a
//! call while the call runs (sampling, elicitation, roots), how many sampling requests one call
//! may make, and how long the client has to answer.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::shape::values::{self, Count, names_only};

/// What the server may ask the client that made a call, while the call runs. A request the
/// policy refuses never reaches the client: the server gets an error saying so. Default:
/// nothing is allowed.
///
/// toolgate declares to the server only the capabilities of the kinds allowed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct McpClientRequests {
    /// sampling/createMessage: the server asks the client's model for a completion, which the
    /// client pays for and which steers its model outside the policy's view. allow or refuse.
    /// Default refuse.
    pub sampling: RequestAccess,
    /// elicitation/create: the server asks the client's user for input (a form, or a URL to
    /// open). allow or refuse. Default refuse.
    pub elicitation: RequestAccess,
    /// roots/list: the server asks the client for its roots (the folders it works in, as file://
    /// URIs). allow or refuse. Default refuse.
    pub roots: RequestAccess,
    /// At most this many sampling requests per tool call; the next is refused. Default 10.
    #[schemars(
        with = "Count",
        range(min = 1, max = 1_000_000),
        extend("x-expected" = "a whole number from 1 to 1000000")
    )]
    pub max_sampling_per_call: u32,
    /// How long the client has to answer one request; then the server gets an error and the
    /// client is told the request is cancelled. The call's own timeout still applies. A duration
    /// above zero (30s, 5m). Default 60s.
    #[serde(deserialize_with = "values::positive_duration")]
    #[schemars(
        with = "String",
        regex(pattern = r"^([0-9]+(ms|h|m|s))+$"),
        extend(
            "x-expected" = "a duration like 60s or 5m (units ms, s, m, h); none is not allowed"
        )
    )]
    pub timeout: Duration,
}

impl Default for McpClientRequests {
    fn default() -> Self {
        McpClientRequests {
            sampling: RequestAccess::Refuse,
            elicitation: RequestAccess::Refuse,
            roots: RequestAccess::Refuse,
            max_sampling_per_call: 10,
            timeout: Duration::from_secs(60),
        }
    }
}

impl McpClientRequests {
    /// Whether any kind of request is allowed.
    pub fn any(&self) -> bool {
        [self.sampling, self.elicitation, self.roots]
            .iter()
            .any(|a| a.allowed())
    }
}

/// Whether a kind of request to the client passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = names_only)]
pub enum RequestAccess {
    /// Passed on to the client of the call.
    Allow,
    /// Answered by toolgate with an error; the client never sees it.
    #[default]
    Refuse,
}

impl RequestAccess {
    /// Whether requests of this kind pass.
    pub fn allowed(self) -> bool {
        self == RequestAccess::Allow
    }
}
