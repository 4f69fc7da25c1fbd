//! The `serve:` section: how `toolgate serve` answers MCP clients (issue 26).

use std::num::NonZeroUsize;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::shape::values::{Count, MAX_SAFE_INTEGER};

/// How `toolgate serve` answers MCP clients.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct ServeSettings {
    /// The most items one page of a list holds (tools/list, and the other lists serve answers);
    /// a longer list comes in pages, each with the cursor of the next. Clients that do not follow
    /// cursors see the first page only. Default 100.
    #[schemars(
        with = "Count",
        range(min = 1, max = MAX_SAFE_INTEGER),
        extend("x-expected" = "a whole number from 1 to 9007199254740991")
    )]
    pub page_size: NonZeroUsize,
    /// Serve the live console at /ui of the HTTP server (toolgate serve --http): the calls as
    /// they happen, a call's detail, the policy with explain, the tools and upstream servers,
    /// and search. Behind the same bearer token as MCP. Ignored over stdio. Default false.
    pub console: bool,
}

impl ServeSettings {
    /// The default page size.
    pub const DEFAULT_PAGE_SIZE: NonZeroUsize = match NonZeroUsize::new(100) {
        Some(n) => n,
        None => unreachable!(),
    };
}

impl Default for ServeSettings {
    fn default() -> Self {
        ServeSettings {
            page_size: Self::DEFAULT_PAGE_SIZE,
            console: false,
        }
    }
}
