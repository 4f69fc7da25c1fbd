//! The plugin's configuration and `init`, which turns it into the [`FsState`] every call sees.

use std::path::PathBuf;

use serde::Deserialize;

use crate::root::FsState;

/// The plugin's configuration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FsConfig {
    /// The directory the tools are confined to.
    pub(crate) root: Option<PathBuf>,
    /// Globs of paths under the root that no tool may touch (see `DenyList`).
    #[serde(default)]
    pub(crate) deny: Vec<String>,
    /// The policy's `grants:`, which the host adds when the policy has them: read by no tool
    /// (the root is the plugin's confinement), accepted so that an entry with grants, as
    /// `isolation: process` wants for its sandbox, loads.
    #[serde(default)]
    #[allow(dead_code)]
    pub(crate) grants: Option<serde::de::IgnoredAny>,
}

pub(crate) fn init(config: Option<FsConfig>) -> Result<FsState, String> {
    let (root, deny) = config
        .and_then(|config| Some((config.root?, config.deny)))
        .ok_or_else(|| {
            "the fs plugin needs a `root` directory in its config, e.g. {\"root\": \"/srv/docs\"}"
                .to_string()
        })?;
    FsState::with_deny(&root, &deny)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_without_a_root_says_the_root_is_needed() {
        let err = init(None).expect_err("fails");
        assert!(err.contains("needs a `root` directory"), "{err}");
    }
}
