//! A JSONL catalog's entries joining the registry (S7): a catalog is data, so an entry that
//! cannot join is left out with a warning instead of failing the build.

use std::collections::HashMap;
use std::sync::Arc;

use toolgate_policy::check_tool_name;

use super::{LeftOut, Registry, ToolSource, model_name, profile_name};
use crate::tool::Tool;

impl Registry {
    /// Notes (and warns) that tool `name` of `source` is left out, and why.
    pub(super) fn leave_out(
        &mut self,
        source: &ToolSource,
        name: String,
        reason: &str,
        catalog: bool,
    ) {
        tracing::warn!("{source}: tool {name} is left out: {reason}");
        let reason = format!("tool {name} is left out: {reason}");
        let (source, position) = (source.to_string(), None);
        self.left_out.push(LeftOut {
            tool: name,
            source,
            position,
            reason,
            catalog,
        });
    }

    /// Adds a JSONL catalog's entries (no implementation) without ever failing (S7): an entry
    /// is left out when its name breaks N1, its model-facing name is already a tool's (the
    /// first one stays) or is `taken` by a built-in or an alias.
    pub(crate) fn insert_catalog(
        &mut self,
        tools: impl IntoIterator<Item = Arc<dyn Tool>>,
        source: &ToolSource,
        taken: &HashMap<String, String>,
    ) {
        let profile = profile_name(self.profile);
        for tool in tools {
            let name = tool.spec().name.clone();
            let mapped = model_name(&name, self.profile);
            let reason = match taken.get(&mapped) {
                Some(what) if check_tool_name(&name).is_ok() => {
                    format!("its model-facing name {mapped:?} (name_profile {profile}) is {what}")
                }
                _ => match self.insert(tool, source.clone(), true) {
                    Ok(()) => continue,
                    Err(e) => e.to_string(),
                },
            };
            self.leave_out(source, name, &reason, true);
        }
    }
}
