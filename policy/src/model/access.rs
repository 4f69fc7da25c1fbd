//! The sections of what `toolgate serve` offers besides tools: `resources` and `prompts` (issue
//! 26). Their rules are the `resources` and `prompts` lists of a rule under `rules`.

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};

use super::{Position, here};
use crate::shape::values::Name;

/// Settings of the reads of resources (`resources:`) or the gets of prompts (`prompts:`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct AccessSettings {
    /// Other names a client may use. Each key is the real name (a resource URI, or a prompt's
    /// `<server>.<prompt>`); its value lists the other names. A name a server lists is never taken
    /// for an alias.
    ///
    /// Checked when the engine is built (A3).
    pub aliases: BTreeMap<String, AccessAlias>,
}

/// The other names of one resource or prompt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AccessAlias {
    /// The other names.
    pub names: Vec<String>,
    /// Where the real name's key is in the policy file.
    pub position: Option<Position>,
}

impl<'de> Deserialize<'de> for AccessAlias {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Before the list is read: where its key is.
        let position = here();
        let names = Vec::<String>::deserialize(deserializer)?;
        Ok(AccessAlias { names, position })
    }
}

impl JsonSchema for AccessAlias {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "access_alias".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = Vec::<Name>::json_schema(generator);
        schema.insert(
            "description".to_owned(),
            "The other names of this resource or prompt.".into(),
        );
        schema.insert("x-key".to_owned(), "target".into());
        schema
    }
}
