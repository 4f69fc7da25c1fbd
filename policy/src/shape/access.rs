//! The `resources` and `prompts` sections (issue 26): what a host that offers its upstream
//! servers' resources and prompts (`toolgate serve`) is told about them. Their rules are the
//! `resources` and `prompts` lists of a rule under `rules`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::build::{Build, child};
use super::values::Name;
use crate::model;
use crate::yaml::Node;

// `resources` and `prompts`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub(crate) struct Access {
    /// Other names a client may use. Each key is the real name (a resource URI, or a prompt's
    /// <server>.<prompt>); its value lists the other names. A name a server lists is never taken
    /// for an alias.
    pub aliases: Option<BTreeMap<String, AccessNames>>,
}

/// The other names of this resource or prompt.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(inline, extend("x-key" = "target"))]
pub(crate) struct AccessNames(pub Vec<Name>);

impl Access {
    pub(crate) fn build(self, node: &Node, cx: &Build<'_>) -> model::AccessSettings {
        let node = child(node, "aliases");
        model::AccessSettings {
            aliases: self
                .aliases
                .unwrap_or_default()
                .into_iter()
                .map(|(real, names)| {
                    let spec = model::AliasSpec {
                        names: super::sections::names(names.0),
                        arguments: BTreeMap::new(),
                        position: cx.position(super::build::key_pos(node, &real)),
                    };
                    (real, spec)
                })
                .collect(),
        }
    }
}
