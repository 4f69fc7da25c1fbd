//! `toolgate plugin-host` (hidden): the worker process of a plugin under `isolation: process`.
//! The engine starts it; it serves one plugin over stdin and stdout until stdin ends.

use crate::error::{CliError, EXIT_OK};

pub fn plugin_host() -> Result<u8, CliError> {
    toolgate::plugin_host::serve_stdio().map_err(CliError::PluginHost)?;
    Ok(EXIT_OK)
}
