//! `toolgate`: run LLM tool calls through a policy from the command line.
//!
//! The layout follows the work: [`args`] is the command line (clap), [`cmd`] has one module per
//! command, [`app`] what the commands share (the policy, the engine, the session, the input),
//! [`catalog`] where a search index comes from, [`conversation`] the message list `run` and
//! `prepare` read and write, [`output`] standard output, [`error`] the failures and their exit
//! codes. This file is the process: parse, log, run, print the error, exit.

#![forbid(unsafe_code)]

mod app;
mod args;
mod builtins;
mod catalog;
mod cmd;
mod conversation;
mod error;
#[cfg(test)]
mod error_convention;
mod output;
mod stored_session;
mod upstream;
mod version;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::output::{Out, stderr_line};

/// Counts the memory each policy script run holds, so that `ScriptLimits::max_memory` holds.
#[global_allocator]
static ALLOCATOR: toolgate::script::ScriptMemory = toolgate::script::ScriptMemory;

fn main() -> ExitCode {
    // Before anything builds an engine or serves a plugin worker.
    builtins::install();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version exit 0 on stdout; usage errors exit 2 on stderr.
        Err(e) => e.exit(),
    };
    // Kept to the end: dropping it exports the spans still waiting.
    let _telemetry = match init_logging(&cli) {
        Ok(installed) => installed,
        Err(e) => {
            stderr_line(&format!("error: {}", toolgate::error::Chain(&e)));
            return ExitCode::FAILURE;
        }
    };
    toolgate::process::ignore_file_size_signal();

    let mut out = Out::stdout();
    let result = match cli.command {
        // A plugin worker serves its pipe on plain threads: it starts (and restarts after a
        // crash) without building a runtime it would not use.
        Command::PluginHost => cmd::plugin_host(),
        command => {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    stderr_line(&format!("error: cannot start the async runtime: {e}"));
                    return ExitCode::FAILURE;
                }
            };
            let result = runtime.block_on(cmd::run(command, &mut out));
            // A tool that ignores cancellation may still be sleeping on a blocking thread
            // after its deadline; do not wait for it on the way out.
            runtime.shutdown_background();
            result
        }
    };

    // What was printed goes out before the error, so the two are in order on a terminal.
    let result = match (result, out.flush()) {
        (Ok(code), Ok(())) => Ok(code),
        (Err(e), _) | (Ok(_), Err(e)) => Err(e),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        // The reader of our output is gone (`| head -1`): it has what it wanted.
        Err(e) if e.is_closed_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            stderr_line(&e.report());
            e.exit_code()
        }
    }
}

/// Logs go to stderr only; stdout is for results. `serve` also exports traces and metrics when
/// its policy's `telemetry:` section or the `OTEL_*` variables say so (O4, O7); the policy is read
/// here, before the async runtime starts, because the exporter's HTTP client owns a runtime of
/// its own. A policy that does not load is reported by `serve` itself, as ever.
fn init_logging(
    cli: &Cli,
) -> Result<toolgate_telemetry::Installed, toolgate_telemetry::TelemetryError> {
    use tracing_subscriber::EnvFilter;
    let filter = if cli.quiet {
        EnvFilter::new("error")
    } else if cli.verbose > 0 {
        EnvFilter::new(match cli.verbose {
            1 => "info",
            2 => "debug",
            _ => "trace",
        })
    } else {
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"))
    };
    let format = match cli.log_format.as_str() {
        "json" => toolgate_telemetry::LogFormat::Json,
        _ => toolgate_telemetry::LogFormat::Text,
    };
    let (traces, metrics) = match &cli.command {
        Command::Serve(args) => {
            let policy = toolgate_policy::load_file(&args.policy).ok();
            let section = policy.as_ref().map(|p| &p.telemetry);
            (
                toolgate_telemetry::traces_wanted(section)?,
                toolgate_telemetry::metrics_wanted(section)?,
            )
        }
        _ => (None, None),
    };
    toolgate_telemetry::install(
        toolgate_telemetry::LogOptions { filter, format },
        traces.as_ref(),
        metrics.as_ref(),
    )
}
