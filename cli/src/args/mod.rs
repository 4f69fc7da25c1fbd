//! The command line's shape: every command, option and help text (clap), and the parsers for
//! the values clap cannot check alone (durations, ages). Nothing here runs a command.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args, Parser, Subcommand};

mod explain;
mod key;
mod serve;
mod upstream;

pub use explain::ExplainArgs;
pub use key::KeyCommand;
pub use serve::{AFTER_HELP as SERVE_HELP, ServeArgs};
pub use upstream::{UpstreamCommand, UpstreamPinArgs};

pub const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  `call` only: the call ran and its result is an error (timeout, denied, unknown_tool, ...)
  2  usage error: unknown option, missing argument, bad value
  3  the policy could not be loaded or the engine could not be built from it, or it lacks
     the section a command needs (`reduction:` for `results`, `search:` for `search --policy`);
     for `validate`, also an upstream MCP server (`mcp_servers:`) that does not start
  4  input error: a file cannot be read or written, or is not valid JSON (or UTF-8) of the
     expected shape; a bad or unknown result id; a bad search query
  5  `run` only: the turn was aborted because the policy says `on_error: fail`
  6  `results` only: the result store failed (unreachable, I/O error, inconsistent data)";

const MAIN_EXAMPLES: &str = "\
Examples:
  toolgate validate policies/testkit.yaml
  toolgate tools --policy policies/testkit.yaml
  toolgate call --policy policies/testkit.yaml echo '{\"text\": \"hello\"}'
  toolgate run examples/turn.json
  toolgate explain --policy policies/testkit.yaml sleep
  toolgate prepare --policy policies/offload.yaml --session s1 --report conversation.json
  toolgate results list --policy policies/offload.yaml --older-than 7d
  toolgate search --catalog catalog.jsonl \"area of a triangle\"
  toolgate index build --catalog catalog.jsonl -o catalog.idx
  toolgate completions bash > ~/.local/share/bash-completion/completions/toolgate
  toolgate man | man -l -

Without --policy, the default policy built into the program is used: the fs plugin, read-only
on the current directory, with the default limits.

Logs go to stderr; set their level with -v/-q or RUST_LOG (e.g. RUST_LOG=toolgate=debug).";

/// Runs an LLM agent's tool calls through a policy: aliases, rules, hooks, timeouts, result
/// limits and panic isolation, as the engine would in an agent.
#[derive(Debug, Parser)]
#[command(
    name = "toolgate",
    version = crate::version::short(),
    long_version = crate::version::long(),
    about,
    after_help = format!("{MAIN_EXAMPLES}\n\n{EXIT_CODES}"),
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// More logging on stderr: -v info, -vv debug, -vvv trace (overrides RUST_LOG).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// Only errors on stderr (overrides RUST_LOG).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check policies: load each one and build the engine from it (plugins load, scripts
    /// compile, upstream MCP servers start, names are checked), then print a summary.
    #[command(after_help = format!("\
Examples:
  toolgate validate policies/default.yaml
  toolgate validate policies/*.yaml policies/examples/*.yaml
  toolgate validate            # the built-in default policy

Problems are printed on stderr as `file:line:col: message`, one per line. Warnings (the policy
still works, exit 0) go to stderr too: a rule that can refuse a built-in tool a feature relies on
(`read_tool_result` under reduction, `tool_search` under search) is named with its position.

{EXIT_CODES}"))]
    Validate(ValidateArgs),

    /// List the tools a model would see, with their argument schemas.
    #[command(after_help = format!("\
Examples:
  toolgate tools --policy policies/testkit.yaml
  toolgate tools --policy policies/testkit.yaml --json   # the OpenAI `tools` array
  toolgate tools --json --annotate   # plus the real tool name behind each model-facing name

Names are the model-facing ones: under `name_profile: openai` or `anthropic` (the built-in
policy uses openai), `fs.read_file` is shown and called as `fs_read_file`; the text output
and --annotate give the real name beside it.

{EXIT_CODES}"))]
    Tools(ToolsArgs),

    /// Make one tool call through the whole guard and print what the model would get.
    #[command(after_help = format!("\
Examples:
  toolgate call --policy policies/testkit.yaml echo '{{\"text\": \"hello\"}}'
  toolgate call --policy policies/testkit.yaml --json --timeout 100ms sleep '{{\"ms\": 5000}}'
  toolgate call fs_read_file '{{\"path\": \"README.md\", \"limit\": 5}}'

TOOL is the name as the model sees it (`toolgate tools`): under the built-in policy's
`name_profile: openai`, `fs_read_file`, not `fs.read_file`. The call goes through everything a
model's call would: aliases, rules, hooks, the timeout, the result cap. ARGS_JSON that is not valid JSON is passed on too; the result then says
`invalid_arguments`, as the model would be told.

Exit code 1 means the call ran and its result is an error; with --json, `error_kind` says
which (timeout, denied, unknown_tool, invalid_arguments, tool_error, tool_execution_panic,
tool_policy_panic, ...).

{EXIT_CODES}"))]
    Call(CallArgs),

    /// Run the tool calls of the last assistant message of a conversation and print the
    /// conversation with their tool messages added after the message's existing answers.
    #[command(after_help = format!("\
Examples:
  toolgate run examples/turn.json
  toolgate run --policy policies/testkit.yaml examples/testkit-turn.json
  cat conversation.json | toolgate run --policy my-policy.yaml --session user-42 -

The input is a chat-completions message list: a JSON array of messages, or an object with a
`messages` array (a request body; its other fields are kept). Calls that already have a tool
message are not run again. Failed calls become error tool messages (exit 0) unless the
policy says `on_error: fail`, which aborts the turn (exit 5, nothing on stdout).

The new tool messages go right after the assistant message's existing answers, before any
later message. Everything read comes back as it was (key order, \"content\": null); only
call ids repeated within the assistant message change, to <id>_2, <id>_3, ..., so that each
call gets its own answer. Under `name_profile: openai` tool messages have no `name` and only
text; a result's images follow the tool messages in one user message.

{EXIT_CODES}"))]
    Run(RunArgs),

    /// Show which settings apply to a tool and where each one comes from.
    #[command(after_help = format!("\
Examples:
  toolgate explain --policy policies/testkit.yaml sleep
  toolgate explain --policy policies/examples/fs-readonly.yaml fs.read_file --json

TOOL may be the model-facing name, an alias or the real tool name; the first line shows both
names when a name profile maps one to the other. Each setting (timeout, result cap, sequential group) is shown with the policy key it comes
from: the dispatch defaults, or the most specific entry under `tools:` that sets it (entries
merge field by field). Every matching rule group applies and is listed. Under reduction the
result cap shown is the offload size (`reduction.max_result_bytes`), since `max_result_chars`
does not apply. The `order` line says when arguments are rewritten and judged:
argument aliases, rewrite script, rules, before hook, tool.

{EXIT_CODES}"))]
    Explain(ExplainArgs),

    /// Prepare a conversation for the next model request: repair dangling tool calls and,
    /// with reduction on, offload the results of older tool rounds; print the history to send.
    #[command(after_help = format!("\
Examples:
  toolgate prepare conversation.json
  toolgate prepare --policy policies/offload.yaml --session user-42 conversation.json
  cat request.json | toolgate prepare --policy my-policy.yaml --report -

The input is read like `run` reads it: a JSON array of messages, or an object with a
`messages` array (its other fields are kept). Every assistant tool call without an answer
gets a synthetic error answer right after the existing answers of its message; an answer
found further down (after a later message) is moved up to its call; call ids repeated within
one assistant message are made unique as `run` does, their answers matched in order; tool
messages that answer no earlier call, and extra answers to a call, are removed (always on).

With `reduction:` in the policy, once the estimated context reaches
`reduction.max_context_tokens`, the results of tool rounds older than the last
`keep_recent_tool_rounds` are saved in the result store and replaced by a notice with their
id, readable in the same session with read_tool_result. Preparing the same history again
reuses the same ids. Give the --session the conversation runs in: results are per session.

--report prints {{\"messages\": [...], \"repair\": {{added, removed_orphans,
removed_duplicates, moved, renamed: [{{from, to}}]}}, \"offload\": {{tokens_before, tokens_after, offloaded: [{{call_id,
result_id}}], failed: [{{call_id, error}}]}}}} instead of the history alone.

{EXIT_CODES}"))]
    Prepare(PrepareArgs),

    /// Look after the result store of a policy with `reduction:`: list, show, read, delete
    /// and prune offloaded results.
    #[command(after_help = format!("\
Examples:
  toolgate results list --policy policies/offload.yaml
  toolgate results list --policy policies/offload.yaml --session user-42 --json
  toolgate results show --policy policies/offload.yaml h_0123abcd
  toolgate results read --policy policies/offload.yaml h_0123abcd --offset 0 --limit 2000
  toolgate results delete --policy policies/offload.yaml --session user-42
  toolgate results prune --policy policies/offload.yaml --older-than 7d --unscoped

The store is the one the policy's `reduction.store` names or, without one, the local folder
the program uses by default ($TOOLGATE_RESULTS_DIR, else $XDG_DATA_HOME/toolgate/results,
else ~/.local/share/toolgate/results). These commands are for the operator: they see every
session's results.

{EXIT_CODES}"))]
    Results(ResultsArgs),

    /// Search a tool catalog the way `tool_search` does, and print the best matches.
    #[command(after_help = format!("\
Examples:
  toolgate search --catalog catalog.jsonl \"area of a triangle\"
  toolgate search --catalog catalog.jsonl --explain \"area of a triangle\"
  toolgate search --catalog catalog.jsonl --top-k 10 --json \"send +email\"
  toolgate search --catalog catalog.jsonl \"select:get_weather,send_email\"
  toolgate search --policy policies/examples/search.yaml \"repeat some text\"
  toolgate search --policy with-embeddings.yaml --explain \"forecast for tomorrow\"
  toolgate search --policy with-embeddings.yaml --dense-only \"forecast for tomorrow\"
  toolgate search --index catalog.idx --queries queries.jsonl > results.jsonl

The catalog comes from exactly one of: --catalog (JSON Lines, one {{\"name\", \"description\",
\"parameters\"}} per line; repeat the option to search several), --index (a file written by
`toolgate index build`), or --policy (its `search:` catalog: catalogs, searchable plugins and
tools, aliases and keywords, exactly as the engine's tool_search sees it).

A query is a few words; `+word` must match, `select:a,b` picks tools by exact name. Empty
queries, queries over 4096 bytes, queries with no searchable word, bad `select:` names and
queries that are not UTF-8 are refused (exit 4).

Under a policy whose search.embeddings names a model, a free-text query fuses the lexical
ranking with the tools nearest it in meaning: --explain shows each hit's rank in both (among
the best 50 of each, what the fusion sees) beside its fused score, and --dense-only ranks by
meaning alone.

--queries reads JSON Lines with `id` and `query` (`-` for standard input) and prints one line
per query, in order: {{\"id\": ..., \"results\": [names, best first]}}. A line that cannot be
run prints {{\"id\": ..., \"line\": N, \"error\": \"...\"}} instead (id null if unknown); the
other lines still run, and the exit code is 4 at the end.

{EXIT_CODES}"))]
    Search(SearchArgs),

    /// Build the search index file that a policy's `search.index_file` memory-maps at start.
    #[command(after_help = format!("\
Examples:
  toolgate index build --catalog catalog.jsonl -o catalog.idx
  toolgate index build --catalog a.jsonl b.jsonl -o tools.idx
  toolgate index build --policy policies/examples/search.yaml   # writes search.index_file

Search it with `toolgate search --index INDEX QUERY`.

{EXIT_CODES}"))]
    Index(IndexArgs),

    /// Print a shell completion script for toolgate.
    #[command(after_help = format!("\
Examples:
  toolgate completions bash > ~/.local/share/bash-completion/completions/toolgate
  toolgate completions zsh > ~/.zfunc/_toolgate      # a folder on your $fpath
  toolgate completions fish > ~/.config/fish/completions/toolgate.fish
  toolgate completions powershell >> $PROFILE

The script completes commands, options and the values clap knows (shells, --policy files).

{EXIT_CODES}"))]
    Completions(CompletionsArgs),

    /// Print the manual page (roff) of toolgate or of one of its commands.
    #[command(after_help = format!("\
Examples:
  toolgate man | man -l -
  toolgate man results list | man -l -
  toolgate man > ~/.local/share/man/man1/toolgate.1
  toolgate man --dir ~/.local/share/man/man1      # toolgate.1 and one page per command

Pages are named like git's: toolgate(1), toolgate-results(1), toolgate-results-list(1).

{EXIT_CODES}"))]
    Man(ManArgs),

    /// Serve the tools the policy lets a model see to any MCP client (an agent, an IDE), over
    /// stdio or Streamable HTTP; every call runs through the whole guard.
    #[command(after_help = format!("{SERVE_HELP}\n\n{EXIT_CODES}"))]
    Serve(ServeArgs),

    /// Plugin tools for a policy's author: `toolgate plugin hash PATH`.
    #[command(subcommand)]
    Plugin(PluginCommand),

    /// Upstream MCP servers: `toolgate upstream pin POLICY` approves their definitions.
    #[command(subcommand)]
    Upstream(UpstreamCommand),

    /// API keys for `toolgate serve --http`: `toolgate key new PRINCIPAL` makes one.
    #[command(subcommand)]
    Key(KeyCommand),

    /// The worker of a plugin under `isolation: process`: loads one plugin library and runs its
    /// calls for the engine that started it, over stdin and stdout. Not for people.
    #[command(hide = true)]
    PluginHost,
}

/// The policy option shared by every command.
#[derive(Debug, Args)]
pub struct PolicyOpt {
    /// The policy file (YAML). Default: the policy built into the program.
    #[arg(short, long, value_name = "POLICY")]
    pub policy: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Policy files to check. Default: the policy built into the program.
    #[arg(value_name = "POLICY")]
    pub policies: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ToolsArgs {
    #[command(flatten)]
    pub policy: PolicyOpt,

    /// The session whose view to show (tools found by tool search are per session).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// Print a JSON array in the OpenAI `tools` format.
    #[arg(long)]
    pub json: bool,

    /// With --json, add `"x-toolgate": {tool_name, source}` to each entry: the real tool name
    /// behind the model-facing one, and where it comes from. Providers refuse unknown keys, so
    /// do not send this output to a model as is.
    #[arg(long, requires = "json")]
    pub annotate: bool,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    #[command(flatten)]
    pub policy: PolicyOpt,

    /// Run the call in this session (results and found tools are per session).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// Print one JSON object: content, is_error, error_kind, truncated, output_chars,
    /// duration_ms (the run), queued_ms (waiting for a slot or group lock), ...
    #[arg(long)]
    pub json: bool,

    /// The call's timeout, instead of the policy's (e.g. 500ms, 30s, 1m30s, none).
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    pub timeout: Option<Timeout>,

    /// The call id the tool and the hooks see.
    #[arg(long, value_name = "ID", default_value = "call_1")]
    pub call_id: String,

    /// The tool name, as a model would write it (aliases work).
    #[arg(value_name = "TOOL")]
    pub tool: String,

    /// The arguments, a JSON object as a string.
    #[arg(value_name = "ARGS_JSON", default_value = "{}")]
    pub args: String,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub policy: PolicyOpt,

    /// Run the turn in this session.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// Print the conversation on one line instead of indented.
    #[arg(long)]
    pub compact: bool,

    /// The conversation (JSON); `-` or nothing reads standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PrepareArgs {
    #[command(flatten)]
    pub policy: PolicyOpt,

    /// The session the conversation runs in (offloaded results are readable only in it).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// Print {"messages", "repair", "offload"}: the history and what was done to it.
    #[arg(long)]
    pub report: bool,

    /// Print on one line instead of indented.
    #[arg(long)]
    pub compact: bool,

    /// The conversation (JSON); `-` or nothing reads standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ResultsArgs {
    /// The policy whose result store to use; it needs a `reduction:` section.
    /// Default: the policy built into the program (its store is the default local folder).
    #[arg(short, long, value_name = "POLICY", global = true)]
    pub policy: Option<PathBuf>,

    #[command(subcommand)]
    pub command: ResultsCommand,
}

#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// List saved results, newest first: id, session, tool, size, age.
    #[command(after_help = format!("\
Examples:
  toolgate results list --policy policies/offload.yaml
  toolgate results list --policy policies/offload.yaml --session user-42
  toolgate results list --policy policies/offload.yaml --unscoped --older-than 30d --json

Control characters in session ids and tool names are shown escaped (\\u{{1b}}, \\n; a backslash
is doubled); --json gives the exact strings. A result whose record cannot be read is skipped
with a warning on stderr; `toolgate results delete ID` removes it.

{EXIT_CODES}"))]
    List(ResultsListArgs),

    /// Show what the store knows about one result (not its content).
    #[command(after_help = format!("\
Examples:
  toolgate results show --policy policies/offload.yaml h_0123abcd
  toolgate results show --policy policies/offload.yaml h_0123abcd --json

{EXIT_CODES}"))]
    Show(ResultsShowArgs),

    /// Print the characters of a result, exactly as saved (no newline is added).
    #[command(after_help = format!("\
Examples:
  toolgate results read --policy policies/offload.yaml h_0123abcd > result.txt
  toolgate results read --policy policies/offload.yaml h_0123abcd --offset 20000 --limit 20000

This is the operator's read: it is NOT scoped to a session, so it reads any session's result
(the model's read_tool_result reads only its own session's). Offsets and limits count
Unicode characters, as read_tool_result does.

{EXIT_CODES}"))]
    Read(ResultsReadArgs),

    /// Delete one result, or every result of a session. Deleting a missing result succeeds.
    #[command(after_help = format!("\
Examples:
  toolgate results delete --policy policies/offload.yaml h_0123abcd
  toolgate results delete --policy policies/offload.yaml --session user-42

Results saved without a session are removed only by `toolgate results prune`. A result whose
record cannot be read is deleted too: its record, its data and its marker.

{EXIT_CODES}"))]
    #[command(group(ArgGroup::new("target").required(true).args(["id", "session"])))]
    Delete(ResultsDeleteArgs),

    /// Delete the results saved before a given age, and the leftovers of interrupted saves.
    #[command(after_help = format!("\
Examples:
  toolgate results prune --policy policies/offload.yaml --older-than 7d
  toolgate results prune --policy policies/offload.yaml --older-than 12h --unscoped --dry-run

DURATION is a number with a unit: d (days), h, m, s or ms, and may combine units from the
largest down (1d12h). Keep it well in the past: a save still running at the cutoff looks like
a leftover of an interrupted save. Leftovers are data and markers without a record and, in a
local folder, the partly written NAME#N file of a save killed mid-write (by its modification
time). Results whose record cannot be read go when that record is older than DURATION.

{EXIT_CODES}"))]
    Prune(ResultsPruneArgs),
}

/// Which owners a listing or a pruning looks at.
#[derive(Debug, Args)]
pub struct ScopeArgs {
    /// Only the results of this session.
    #[arg(long, value_name = "ID", conflicts_with = "unscoped")]
    pub session: Option<String>,

    /// Only the results saved without a session.
    #[arg(long)]
    pub unscoped: bool,
}

#[derive(Debug, Args)]
pub struct ResultsListArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,

    /// Only results saved longer ago than this (e.g. 7d, 12h, 30m).
    #[arg(long, value_name = "DURATION", value_parser = parse_age)]
    pub older_than: Option<Age>,

    /// Print a JSON array of {id, session, tool, content_type, bytes, chars, created_at_ms}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ResultsShowArgs {
    /// The result id, as the notice gave it.
    #[arg(value_name = "ID")]
    pub id: OsString,

    /// Print a JSON object: id, session, tool, content_type, bytes, chars, created_at_ms.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ResultsReadArgs {
    /// The result id, as the notice gave it.
    #[arg(value_name = "ID")]
    pub id: OsString,

    /// The first character to print (0 is the start).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: u64,

    /// How many characters to print at most. Default: up to the end.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ResultsDeleteArgs {
    /// The result id to delete.
    #[arg(value_name = "ID")]
    pub id: Option<OsString>,

    /// Delete every result of this session instead.
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
}

#[derive(Debug, Args)]
pub struct ResultsPruneArgs {
    /// Delete results saved longer ago than this (e.g. 7d, 12h, 1d12h).
    #[arg(long, value_name = "DURATION", value_parser = parse_age)]
    pub older_than: Age,

    #[command(flatten)]
    pub scope: ScopeArgs,

    /// Only print what would be deleted.
    #[arg(long)]
    pub dry_run: bool,

    /// Print {"dry_run", "removed": [ids], "results": N, "unreadable": N, "garbage": N} instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["policy", "catalog", "index"])))]
#[command(group(ArgGroup::new("input").required(true).args(["query", "queries"])))]
pub struct SearchArgs {
    /// Search the catalog of this policy's `search:` section.
    #[arg(short, long, value_name = "POLICY")]
    pub policy: Option<PathBuf>,

    /// Search this JSON Lines catalog (repeat to search several as one).
    #[arg(long, value_name = "FILE.jsonl")]
    pub catalog: Vec<PathBuf>,

    /// Search this index file, written by `toolgate index build`.
    #[arg(long, value_name = "INDEX")]
    pub index: Option<PathBuf>,

    /// How many tools to return per query.
    #[arg(short = 'k', long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub top_k: u32,

    /// Print one JSON object: the query, and each hit's name, score, description and why.
    #[arg(long)]
    pub json: bool,

    /// Say why each tool matched (which query word matched which term of which field) and,
    /// with the semantic stage, where it stands in the lexical and the dense ranking that were
    /// fused into its score; the JSON output always does.
    #[arg(long, conflicts_with = "queries")]
    pub explain: bool,

    /// Rank by the semantic stage alone (the tools nearest the query in meaning, scored by
    /// cosine), to see what the model contributes; needs a --policy with search.embeddings.
    #[arg(long, conflicts_with = "queries")]
    pub dense_only: bool,

    /// Run every query of this JSON Lines file ({"id", "query"} per line; `-` for stdin).
    #[arg(long, value_name = "FILE.jsonl")]
    pub queries: Option<PathBuf>,

    /// What the tool should do, in a few words (or `select:name_a,name_b`).
    #[arg(value_name = "QUERY")]
    pub query: Option<OsString>,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    #[command(subcommand)]
    pub command: IndexCommand,
}

#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Build an index file from JSON Lines catalogs, or from a policy's search catalog.
    #[command(after_help = format!("\
Examples:
  toolgate index build --catalog catalog.jsonl -o catalog.idx
  toolgate index build --catalog a.jsonl b.jsonl -o tools.idx
  toolgate index build --policy my-policy.yaml          # writes its search.index_file

The file is written beside its destination and renamed into place, so an engine or a search
that has the old file open never sees half a file.

{EXIT_CODES}"))]
    #[command(group(ArgGroup::new("source").required(true).args(["policy", "catalog"])))]
    Build(IndexBuildArgs),
}

#[derive(Debug, Args)]
pub struct IndexBuildArgs {
    /// Index this policy's search catalog (catalogs, searchable tools, aliases, keywords).
    #[arg(short, long, value_name = "POLICY")]
    pub policy: Option<PathBuf>,

    /// Index these JSON Lines catalogs.
    #[arg(long, value_name = "FILE.jsonl", num_args = 1..)]
    pub catalog: Vec<PathBuf>,

    /// Where to write the index. Default with --policy: its `search.index_file`.
    #[arg(short, long, value_name = "INDEX", required_unless_present = "policy")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_name = "SHELL", value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print, as typed after `toolgate` (`results list`).
    /// Default: the page of toolgate itself.
    #[arg(value_name = "COMMAND", conflicts_with = "dir")]
    pub command: Vec<String>,

    /// Write every page (toolgate.1, toolgate-validate.1, ...) into this folder instead.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `toolgate plugin ...`.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Print the `sha256:` line that pins a plugin library in a policy.
    #[command(after_help = format!("\
Examples:
  toolgate plugin hash target/release/libtoolgate_plugin_fs.so

Prints one line, `sha256: <64 hex digits>`, to paste under the plugin's entry in the policy.
A library whose hash differs is then refused when the engine loads it.

{EXIT_CODES}"))]
    Hash(PluginHashArgs),
}

#[derive(Debug, Args)]
pub struct PluginHashArgs {
    /// The plugin library file.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
}

/// A `--older-than` value.
#[derive(Debug, Clone, Copy)]
pub struct Age(pub Duration);

/// A policy duration (`ms`, `s`, `m`, `h`, combined from the largest down), which may start
/// with a number of days: `7d`, `1d12h`.
pub fn parse_age(text: &str) -> Result<Age, String> {
    // The parser's own words: "is not an age (examples: ...)" for a text of another form, and
    // what is wrong with one of this form (units out of order, too large).
    toolgate_policy::parse_age(text)
        .map(Age)
        .map_err(|e| e.to_string())
}

/// A `--timeout` value: `None` means no timeout at all.
#[derive(Debug, Clone, Copy)]
pub struct Timeout(pub Option<Duration>);

pub fn parse_timeout(text: &str) -> Result<Timeout, String> {
    toolgate_policy::parse_duration(text)
        .map(Timeout)
        .map_err(|e| format!("{e} (examples: 500ms, 30s, 1m30s, none)"))
}

impl Command {
    pub fn name(&self) -> &'static str {
        match self {
            Command::Validate(_) => "validate",
            Command::Tools(_) => "tools",
            Command::Call(_) => "call",
            Command::Run(_) => "run",
            Command::Explain(_) => "explain",
            Command::Prepare(_) => "prepare",
            Command::Results(_) => "results",
            Command::Search(_) => "search",
            Command::Index(_) => "index",
            Command::Completions(_) => "completions",
            Command::Man(_) => "man",
            Command::Serve(_) => "serve",
            Command::Plugin(_) => "plugin",
            Command::Upstream(_) => "upstream",
            Command::Key(_) => "key",
            Command::PluginHost => "plugin-host",
        }
    }
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
    fn an_age_accepts_days_and_the_policy_units() {
        let ms = |text| parse_age(text).map(|a| a.0.as_millis());
        assert_eq!(ms("7d"), Ok(7 * 86_400_000));
        assert_eq!(ms("1d12h"), Ok(36 * 3_600_000));
        assert_eq!(ms("12h"), Ok(12 * 3_600_000));
        assert_eq!(ms("30m"), Ok(30 * 60_000));
        assert_eq!(ms("0s"), Ok(0));
        assert_eq!(ms("1500ms"), Ok(1500));
        for bad in [
            "",
            "d",
            "7",
            "none",
            "7days",
            "-1d",
            "1h1d",
            "1d1d",
            "99999999999999999999d",
        ] {
            assert!(parse_age(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn each_command_has_a_name() {
        let cli = Cli::try_parse_from(["toolgate", "tools"]).unwrap();
        assert_eq!(cli.command.name(), "tools");
    }
}
