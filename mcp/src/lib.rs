//! # toolgate-mcp
//!
//! toolgate speaking the Model Context Protocol, both ways:
//! - [`serve`]: the governed tools of an [`toolgate::Engine`] offered to any MCP client (stdio,
//!   Streamable HTTP), every call through the whole guard;
//! - `upstream`: tools of other MCP servers adapted to the engine's tool trait, so a policy
//!   governs them like plugin tools.
//!
//! Data flows one way: `cli -> toolgate-mcp -> toolgate`. The engine knows nothing of MCP.
#![warn(missing_docs)]

pub mod serve;
mod shape;
pub mod upstream;
