//! One module per command. Each takes its parsed arguments and the output, prints as it goes,
//! and returns its exit code, or the [`CliError`] that ends it.

mod call;
mod completions;
mod explain;
mod index;
mod key;
mod man;
mod plugin;
mod plugin_host;
mod prepare;
mod results;
mod run;
mod search;
mod serve;
mod tools;
mod upstream_pin;
mod validate;

use crate::args::Command;
use crate::error::CliError;
use crate::output::Out;

pub use plugin_host::plugin_host;

/// Runs `command`; `Ok` carries the exit code (0, or 1 for a `call` whose result is an error).
pub async fn run(command: Command, out: &mut Out<'_>) -> Result<u8, CliError> {
    tracing::debug!(command = command.name(), "starting");
    let result = run_command(command, out).await;
    // No child process of an upstream MCP server outlives the command.
    crate::upstream::shutdown().await;
    result
}

async fn run_command(command: Command, out: &mut Out<'_>) -> Result<u8, CliError> {
    match command {
        Command::Validate(args) => validate::validate(args, out),
        Command::Tools(args) => tools::tools(args, out).await,
        Command::Call(args) => call::call(args, out).await,
        Command::Run(args) => run::run_turn(args, out).await,
        Command::Explain(args) => explain::explain(args, out),
        Command::Prepare(args) => prepare::prepare(args, out).await,
        Command::Results(args) => results::results(args, out).await,
        Command::Search(args) => search::search(args, out),
        Command::Index(args) => index::index(args, out),
        Command::Completions(args) => completions::completions(args, out),
        Command::Man(args) => man::man(args, out),
        Command::Serve(args) => serve::serve(args).await,
        Command::Plugin(command) => plugin::plugin(command, out),
        Command::Upstream(command) => upstream_pin::upstream(command, out).await,
        Command::Key(command) => key::key(command, out),
        // `main` runs it before any runtime exists; here for a caller that already has one.
        Command::PluginHost => plugin_host::plugin_host(),
    }
}
