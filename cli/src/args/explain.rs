//! The arguments of `toolgate explain`.

use clap::Args;

use super::PolicyOpt;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub policy: PolicyOpt,

    /// Print a JSON object instead of text.
    #[arg(long)]
    pub json: bool,

    /// The tool name: model-facing, real, or an alias (explained as its tool).
    #[arg(value_name = "TOOL")]
    pub tool: String,

    /// Explain the tool as this principal sees it (the policy's `clients:`) and as its calls
    /// run (with the `tools:` overrides naming it or its groups); its groups are those of its
    /// API keys in the policy, unless --group is given.
    #[arg(long = "as", value_name = "PRINCIPAL")]
    pub principal: Option<String>,

    /// With --as, a group of the principal (repeat for more); replaces its keys' groups.
    #[arg(long = "group", value_name = "GROUP", requires = "principal")]
    pub groups: Vec<String>,
}
