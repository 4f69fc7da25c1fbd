//! `toolgate key ...`: API keys for `toolgate serve --http` (the policy's `auth.api_keys`).

use clap::{Args, Subcommand};

use super::EXIT_CODES;

/// `toolgate key ...`.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Make an API key for a principal: prints the key once, and the entry to paste under
    /// `auth.api_keys` in the policy (which keeps only the key's SHA-256).
    #[command(after_help = format!("\
Examples:
  toolgate key new alice --group dev --group ops

Prints the key (`tgk_` and 64 hex digits) on the first line: give it to the client, which sends
it as `Authorization: Bearer <key>`. It is shown once; toolgate keeps only its SHA-256, in the
entry printed after it. Paste the entry under `auth.api_keys:`; a reload of the policy (serve
watches it) lets the key in, and deleting the entry revokes it for the next request.

{EXIT_CODES}"))]
    New(KeyNewArgs),
}

#[derive(Debug, Args)]
pub struct KeyNewArgs {
    /// The principal the key proves: its name in rules, clients, hooks and the audit log.
    #[arg(value_name = "PRINCIPAL")]
    pub principal: String,

    /// A group the principal belongs to with this key (repeat for more).
    #[arg(long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
}
