//! The plugin's name: the prefix of its tool names, and what the policy's `name:` finds it by.
//! `cargo generate` rewrites this file with the new crate's name.

/// The plugin's name.
pub const PLUGIN_NAME: &str = "template";
