//! What the builder reads of a tool, whichever form it was given in.

use crate::catalog::{CatalogTool, ToolDoc};

/// A tool as the builder reads it: an owned [`ToolDoc`], or a catalog line
/// whose schema is parsed only while the tool is indexed.
pub(crate) trait Doc: Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    fn aliases(&self) -> &[String];
    fn keywords(&self) -> &[String];
    /// Calls `f` with the parameter schema.
    fn with_parameters<R>(&self, f: impl FnOnce(&serde_json::Value) -> R) -> R;
}

impl Doc for ToolDoc {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn aliases(&self) -> &[String] {
        &self.aliases
    }
    fn keywords(&self) -> &[String] {
        &self.keywords
    }
    fn with_parameters<R>(&self, f: impl FnOnce(&serde_json::Value) -> R) -> R {
        f(&self.parameters)
    }
}

impl Doc for CatalogTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn aliases(&self) -> &[String] {
        &self.aliases
    }
    fn keywords(&self) -> &[String] {
        &self.keywords
    }
    fn with_parameters<R>(&self, f: impl FnOnce(&serde_json::Value) -> R) -> R {
        f(&self.parameters())
    }
}
