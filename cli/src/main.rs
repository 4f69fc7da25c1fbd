//! `toolgate`: run LLM tool calls through a policy from the command line.
//!
//! This file holds the command-line interface (clap) and the process plumbing: logging,
//! the tokio runtime, exit codes. What each command does is in [`commands`].

mod commands;
mod conversation;
mod error;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  `call` only: the call ran and its result is an error (timeout, denied, unknown_tool, ...)
  2  usage error: unknown option, missing argument, bad value
  3  the policy could not be loaded or the engine could not be built from it
  4  input error: a file cannot be read, or is not valid JSON of the expected shape
  5  `run` only: the turn was aborted because the policy says `on_error: fail`";

const MAIN_EXAMPLES: &str = "\
Examples:
  toolgate validate policies/testkit.yaml
  toolgate tools --policy policies/testkit.yaml
  toolgate call --policy policies/testkit.yaml echo '{\"text\": \"hello\"}'
  toolgate run examples/turn.json
  toolgate explain --policy policies/testkit.yaml sleep

Without --policy, the default policy built into the program is used: the fs plugin, read-only
on the current directory, with the default limits.

Logs go to stderr; set their level with -v/-q or RUST_LOG (e.g. RUST_LOG=toolgate=debug).";

/// Runs an LLM agent's tool calls through a policy: aliases, rules, hooks, timeouts, result
/// limits and panic isolation, as the engine would in an agent.
#[derive(Debug, Parser)]
#[command(
    name = "toolgate",
    version,
    about,
    after_help = format!("{MAIN_EXAMPLES}\n\n{EXIT_CODES}"),
    propagate_version = true,
    disable_help_subcommand = true
)]
struct Cli {
    /// More logging on stderr: -v info, -vv debug, -vvv trace (overrides RUST_LOG).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,

    /// Only errors on stderr (overrides RUST_LOG).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check policies: load each one and build the engine from it (plugins load, scripts
    /// compile, names are checked), then print a summary.
    #[command(after_help = format!("\
Examples:
  toolgate validate policies/default.yaml
  toolgate validate policies/*.yaml policies/examples/*.yaml
  toolgate validate            # the built-in default policy

Problems are printed on stderr as `file:line:col: message`, one per line.

{EXIT_CODES}"))]
    Validate(ValidateArgs),

    /// List the tools a model would see, with their argument schemas.
    #[command(after_help = format!("\
Examples:
  toolgate tools --policy policies/testkit.yaml
  toolgate tools --policy policies/testkit.yaml --json   # the OpenAI `tools` array

{EXIT_CODES}"))]
    Tools(ToolsArgs),

    /// Make one tool call through the whole guard and print what the model would get.
    #[command(after_help = format!("\
Examples:
  toolgate call --policy policies/testkit.yaml echo '{{\"text\": \"hello\"}}'
  toolgate call --policy policies/testkit.yaml --json --timeout 100ms sleep '{{\"ms\": 5000}}'
  toolgate call fs.read_file '{{\"path\": \"README.md\", \"limit\": 5}}'

The call goes through everything a model's call would: aliases, rules, hooks, the timeout,
the result cap. ARGS_JSON that is not valid JSON is passed on too; the result then says
`invalid_arguments`, as the model would be told.

Exit code 1 means the call ran and its result is an error; with --json, `error_kind` says
which (timeout, denied, unknown_tool, invalid_arguments, tool_error, tool_execution_panic,
tool_policy_panic, ...).

{EXIT_CODES}"))]
    Call(CallArgs),

    /// Run the tool calls of the last assistant message of a conversation and print the
    /// conversation with the tool messages appended.
    #[command(after_help = format!("\
Examples:
  toolgate run examples/turn.json
  toolgate run --policy policies/testkit.yaml examples/testkit-turn.json
  cat conversation.json | toolgate run --policy my-policy.yaml --session user-42 -

The input is a chat-completions message list: a JSON array of messages, or an object with a
`messages` array (a request body; its other fields are kept). Calls that already have a tool
message are not run again. Failed calls become error tool messages (exit 0) unless the
policy says `on_error: fail`, which aborts the turn (exit 5, nothing on stdout).

{EXIT_CODES}"))]
    Run(RunArgs),

    /// Show which settings apply to a tool and where each one comes from.
    #[command(after_help = format!("\
Examples:
  toolgate explain --policy policies/testkit.yaml sleep
  toolgate explain --policy policies/examples/fs-readonly.yaml fs.read_file --json

Each setting (timeout, result cap, sequential group, rules) is shown with the policy key it
comes from: the dispatch defaults, or the most specific matching entry under `tools:`.

{EXIT_CODES}"))]
    Explain(ExplainArgs),
}

/// The policy option shared by every command.
#[derive(Debug, Args)]
struct PolicyOpt {
    /// The policy file (YAML). Default: the policy built into the program.
    #[arg(short, long, value_name = "POLICY")]
    policy: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ValidateArgs {
    /// Policy files to check. Default: the policy built into the program.
    #[arg(value_name = "POLICY")]
    policies: Vec<PathBuf>,
}

#[derive(Debug, Args)]
struct ToolsArgs {
    #[command(flatten)]
    policy: PolicyOpt,

    /// The session whose view to show (tools found by tool search are per session).
    #[arg(long, value_name = "ID")]
    session: Option<String>,

    /// Print a JSON array in the OpenAI `tools` format.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct CallArgs {
    #[command(flatten)]
    policy: PolicyOpt,

    /// Run the call in this session (results and found tools are per session).
    #[arg(long, value_name = "ID")]
    session: Option<String>,

    /// Print one JSON object: content, is_error, error_kind, truncated, output_chars, ...
    #[arg(long)]
    json: bool,

    /// The call's timeout, instead of the policy's (e.g. 500ms, 30s, 1m30s, none).
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    timeout: Option<Timeout>,

    /// The call id the tool and the hooks see.
    #[arg(long, value_name = "ID", default_value = "call_1")]
    call_id: String,

    /// The tool name, as a model would write it (aliases work).
    #[arg(value_name = "TOOL")]
    tool: String,

    /// The arguments, a JSON object as a string.
    #[arg(value_name = "ARGS_JSON", default_value = "{}")]
    args: String,
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    policy: PolicyOpt,

    /// Run the turn in this session.
    #[arg(long, value_name = "ID")]
    session: Option<String>,

    /// Print the conversation on one line instead of indented.
    #[arg(long)]
    compact: bool,

    /// The conversation (JSON); `-` or nothing reads standard input.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ExplainArgs {
    #[command(flatten)]
    policy: PolicyOpt,

    /// Print a JSON object instead of text.
    #[arg(long)]
    json: bool,

    /// The tool name (an alias is explained as its tool).
    #[arg(value_name = "TOOL")]
    tool: String,
}

/// A `--timeout` value: `None` means no timeout at all.
#[derive(Debug, Clone, Copy)]
struct Timeout(Option<Duration>);

fn parse_timeout(text: &str) -> Result<Timeout, String> {
    toolgate_policy::parse_duration(text)
        .map(Timeout)
        .map_err(|e| format!("{e} (examples: 500ms, 30s, 1m30s, none)"))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version exit 0 on stdout; usage errors exit 2 on stderr.
        Err(e) => e.exit(),
    };
    init_logging(cli.verbose, cli.quiet);

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(commands::run(cli.command));
    // A tool that ignores cancellation may still be sleeping on a blocking thread after its
    // deadline; do not wait for it on the way out.
    runtime.shutdown_background();

    match result {
        Ok(output) => {
            if let Err(e) = write_stdout(&output.stdout)
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                eprintln!("error: cannot write to standard output: {e}");
                return ExitCode::from(error::EXIT_INPUT);
            }
            ExitCode::from(output.code)
        }
        Err(e) => {
            eprintln!("{e}");
            e.exit_code()
        }
    }
}

/// What a command prints on stdout, and its exit code (0, or 1 for a failed `call`).
pub struct Output {
    pub stdout: String,
    pub code: u8,
}

impl Command {
    fn name(&self) -> &'static str {
        match self {
            Command::Validate(_) => "validate",
            Command::Tools(_) => "tools",
            Command::Call(_) => "call",
            Command::Run(_) => "run",
            Command::Explain(_) => "explain",
        }
    }
}

fn write_stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Logs go to stderr only; stdout is for results.
fn init_logging(verbose: u8, quiet: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = if quiet {
        EnvFilter::new("error")
    } else if verbose > 0 {
        EnvFilter::new(match verbose {
            1 => "info",
            2 => "debug",
            _ => "trace",
        })
    } else {
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"))
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_timeout_accepts_policy_durations_and_none() {
        assert_eq!(
            parse_timeout("100ms").unwrap().0,
            Some(Duration::from_millis(100))
        );
        assert_eq!(parse_timeout("none").unwrap().0, None);
        assert!(parse_timeout("1.5s").is_err());
    }

    #[test]
    fn each_command_has_a_name() {
        let cli = Cli::try_parse_from(["toolgate", "tools"]).unwrap();
        assert_eq!(cli.command.name(), "tools");
    }
}
