//! [`Manifest`]: what a plugin says about itself.

use serde::{Deserialize, Serialize};

/// What a plugin says about itself: the JSON that [`PluginVTable::manifest`](crate::abi::PluginVTable::manifest) returns.
///
/// ```json
/// {"name": "fs", "version": "0.1.0",
///  "tools": [{"name": "fs.stat", "description": "...", "parameters": {"type": "object"}}]}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The plugin's name, such as `fs`.
    pub name: String,
    /// The plugin's own version, such as `0.1.0`.
    pub version: String,
    /// The tools it offers.
    pub tools: Vec<ToolManifest>,
}

/// One tool in a [`Manifest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolManifest {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of its arguments object.
    #[serde(default = "empty_object_schema")]
    pub parameters: serde_json::Value,
}

fn empty_object_schema() -> serde_json::Value {
    serde_json::json!({"type": "object"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_manifest_without_parameters_gets_an_empty_object_schema() {
        let tool: ToolManifest = serde_json::from_str(r#"{"name": "t"}"#).unwrap();
        assert_eq!(tool.parameters, serde_json::json!({"type": "object"}));
        assert_eq!(tool.description, "");
    }
}
