//! `toolgate key new PRINCIPAL`: an API key for `toolgate serve --http`, printed once, and the
//! `auth.api_keys` entry that holds its SHA-256.

use crate::args::KeyCommand;
use crate::error::{CliError, EXIT_OK};
use crate::output::Out;

pub fn key(command: KeyCommand, out: &mut Out<'_>) -> Result<u8, CliError> {
    match command {
        KeyCommand::New(args) => {
            let (key, sha256) =
                toolgate_mcp::serve::new_api_key().map_err(|e| CliError::Key(e.into()))?;
            let groups = args
                .groups
                .iter()
                .map(|g| json_string(g))
                .collect::<Vec<_>>()
                .join(", ");
            writeln!(out, "{key}")?;
            writeln!(
                out,
                "# The key above is shown once: give it to the client (Authorization: Bearer \
                 <key>).\n# Paste this entry under auth.api_keys in the policy:\n  - {{principal: \
                 {}, groups: [{groups}], sha256: {sha256}}}",
                json_string(&args.principal)
            )?;
            Ok(EXIT_OK)
        }
    }
}

/// `text` as a YAML flow scalar that reads back as exactly `text` (a JSON string is one).
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}
