//! The arguments of `toolgate upstream ...`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// The examples and explanations after `toolgate upstream pin --help`.
pub const PIN_HELP: &str = "\
Examples:
  toolgate upstream pin policy.yaml                 # pin every server's definitions
  toolgate upstream pin policy.yaml --server time   # pin one server
  toolgate upstream pin policy.yaml --check         # exit 3 when a definition changed

Starts each upstream MCP server of the policy (mcp_servers:) and records a SHA-256 of every
definition it offers (each tool's name, title, description, schemas, annotations; its
resources, resource templates and prompts when it has them) in the server's pins file. A server
without `pins:` gets the file <policy>.pins.json beside the policy, and a `pins:` line in its
entry (the rest of the policy, comments included, is left as it is). From then on, a tool whose
definition differs from its pin, or that has none, is held back (left out, with a warning
naming what changed) until it is pinned again; the server's other tools keep working. Review
what changed before pinning again: the pin is the approval.

With --check nothing is written: each difference is printed (a changed field, a new or a
removed definition), and the exit code is 3 when there is one.";

/// `toolgate upstream ...`.
#[derive(Debug, Subcommand)]
pub enum UpstreamCommand {
    /// Record (or check) the hashes of the upstream servers' definitions: a tool that changes
    /// after it was pinned is held back until pinned again.
    #[command(after_help = format!("{PIN_HELP}\n\n{}", super::EXIT_CODES))]
    Pin(UpstreamPinArgs),
}

#[derive(Debug, Args)]
pub struct UpstreamPinArgs {
    /// The policy file whose `mcp_servers:` to pin.
    #[arg(value_name = "POLICY")]
    pub policy: PathBuf,

    /// Pin only this server (repeat for several). Default: every server of the policy.
    #[arg(long = "server", value_name = "NAME")]
    pub servers: Vec<String>,

    /// Write nothing: print what differs from the pins, and exit 3 if anything does.
    #[arg(long)]
    pub check: bool,
}
