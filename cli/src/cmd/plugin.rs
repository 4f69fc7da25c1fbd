//! `toolgate plugin hash PATH`: the `sha256:` line that pins a plugin library in a policy.

use crate::args::PluginCommand;
use crate::error::{CliError, EXIT_OK};
use crate::output::Out;

pub fn plugin(command: PluginCommand, out: &mut Out<'_>) -> Result<u8, CliError> {
    match command {
        PluginCommand::Hash(args) => {
            let hash =
                toolgate::plugin_hash(&args.path).map_err(|source| CliError::PluginHash {
                    path: args.path.clone(),
                    source,
                })?;
            writeln!(out, "sha256: {hash}")?;
            Ok(EXIT_OK)
        }
    }
}
