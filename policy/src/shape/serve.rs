//! The `serve:` section: how `toolgate serve` answers MCP clients.

use schemars::JsonSchema;
use serde::Deserialize;

use super::values::{Count, MAX_SAFE_INTEGER};
use crate::model;

// `serve`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub(crate) struct Serve {
    /// The most items one page of a list holds (tools/list, and the other lists serve answers);
    /// a longer list comes in pages, each with the cursor of the next. Clients that do not follow
    /// cursors see the first page only. Default 100.
    #[schemars(
        range(min = 1, max = MAX_SAFE_INTEGER),
        extend("x-expected" = "a whole number from 1 to 9007199254740991")
    )]
    pub page_size: Option<Count>,
}

impl Serve {
    pub(crate) fn build(self) -> model::ServeSettings {
        let mut serve = model::ServeSettings::default();
        if let Some(size) = self
            .page_size
            .and_then(|c| usize::try_from(c.0).ok())
            .and_then(std::num::NonZeroUsize::new)
        {
            serve.page_size = size;
        }
        serve
    }
}
