//! Why a command failed, the exit code each failure maps to, and how it is printed.
//!
//! Each [`CliError`] variant wraps the typed error it comes from (a policy error with its
//! diagnostics, an engine build error with its positions, a store, index, query or I/O error)
//! and the context the command adds (the file, the policy, the option). Its `Display` is that
//! context only; [`CliError::report`] prints the context and the chain of sources the way a
//! user reads them (`error: cannot read conv.json: No such file or directory (os error 2)`).
//!
//! The exit codes and the printed texts are a public contract (documented in `--help` and the
//! README, checked by the end-to-end tests); keep them stable.

use std::error::Error as StdError;
use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;

use toolgate::store::{IdError, ResultId, StoreError};
use toolgate::{BuildError, TurnError};
use toolgate_mcp::serve::ServeError;
use toolgate_policy::{MAX_DIAGNOSTICS, PolicyError};
use toolgate_search::{CatalogError, IndexError, QueryError};

/// Everything went well.
pub const EXIT_OK: u8 = 0;
/// `call` only: the call ran, and its outcome is an error result (timeout, denied, ...).
pub const EXIT_CALL_ERROR: u8 = 1;
/// Bad command-line usage (also used by clap for unknown flags and missing arguments).
pub const EXIT_USAGE: u8 = 2;
/// The policy could not be loaded, or the engine could not be built from it.
pub const EXIT_POLICY: u8 = 3;
/// An input could not be read or is not what it should be (a conversation file, bad JSON).
pub const EXIT_INPUT: u8 = 4;
/// `run` only: the turn was aborted under `on_error: fail`.
pub const EXIT_TURN_ABORTED: u8 = 5;
/// `results` only: the result store failed (unreachable, an I/O error, inconsistent data).
pub const EXIT_STORE: u8 = 6;

/// Where an input came from, as messages name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Standard input: `standard input` in "cannot read" messages, `<stdin>` in positions.
    Stdin,
    /// A file, as given on the command line.
    File(PathBuf),
}

impl Input {
    /// How a `file:line:col:` position names this input.
    pub fn position_name(&self) -> String {
        match self {
            Input::Stdin => "<stdin>".into(),
            Input::File(path) => path.display().to_string(),
        }
    }
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Input::Stdin => f.write_str("standard input"),
            Input::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// What a conversation had to be, for a JSON error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonStage {
    /// The text is not JSON at all.
    Syntax,
    /// The JSON is not a list of chat-completions messages.
    Messages,
}

/// A JSON input that does not parse, at serde_json's line and column
/// (`conv.json:2:12: invalid JSON: expected value`).
///
/// serde_json's own message ends with ` at line L column C`; this error puts the position in
/// front, compiler-style, and so shows serde_json's message itself rather than returning the
/// serde_json error as its `source()` (which would print the position twice).
#[derive(Debug)]
pub struct JsonError {
    /// The input's name in the position (a path, or `<stdin>`).
    pub input: String,
    /// What was being read.
    pub stage: JsonStage,
    /// serde_json's error, with its line, column and category.
    pub error: serde_json::Error,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.stage {
            JsonStage::Syntax if self.error.is_eof() => "unexpected end of input: ",
            JsonStage::Syntax => "invalid JSON: ",
            JsonStage::Messages => "not a valid message list: ",
        };
        // serde_json offers its message only with the position appended; take that off.
        let text = self.error.to_string();
        let suffix = format!(
            " at line {} column {}",
            self.error.line(),
            self.error.column()
        );
        let message = text.strip_suffix(&suffix).unwrap_or(&text);
        write!(
            f,
            "{}:{}:{}: {what}{message}",
            self.input,
            self.error.line(),
            self.error.column()
        )
    }
}

impl StdError for JsonError {}

/// A failure that ends the command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    // ---- usage (exit 2)
    /// `--session` given to the result store is not a session id.
    #[error("--session")]
    SessionId(#[source] IdError),
    /// An argument clap lets through alone that the command needs with another.
    #[error("give {0}")]
    Missing(&'static str),
    /// `man` for a command that does not exist.
    #[error("there is no command `toolgate {0}`")]
    UnknownCommand(String),
    /// `upstream pin --server NAME` for a server the policy does not have.
    #[error("{policy} has no MCP server called {server:?} (mcp_servers:)")]
    UnknownServer {
        /// The policy's name.
        policy: String,
        /// The name given.
        server: String,
    },
    /// `index build --policy` for a policy without `search.index_file`, and no `-o`.
    #[error(
        "--dense-only needs the semantic stage: give a --policy whose search.embeddings names a model"
    )]
    NoSemanticStage,

    #[error("{policy} has no search.index_file: give the index file to write with -o INDEX")]
    NoIndexFile {
        /// The policy's name.
        policy: String,
    },

    // ---- policy (exit 3; printed as compiler-style lines, without `error: `)
    /// The policy file could not be loaded.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The engine could not be built from the policy.
    #[error("the engine cannot be built from {policy}")]
    Build {
        /// The policy's name, for the problems the engine knows no position of.
        policy: String,
        /// What the engine said.
        #[source]
        source: Box<BuildError>,
    },
    /// The default folder for offloaded results cannot be created.
    #[error("cannot create the result folder {} for reduction", .dir.display())]
    ResultsDir {
        /// The folder.
        dir: PathBuf,
        /// The environment variable that chooses another folder.
        env: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The default folder for offloaded results has no `file://` URL.
    #[error("the result folder {} is not a usable path", .dir.display())]
    ResultsDirUrl {
        /// The folder.
        dir: PathBuf,
    },
    /// The policy lacks the section the command needs.
    #[error("{policy}: the policy has no {section}: section, so it has no {what}")]
    NoSection {
        /// The policy's name.
        policy: String,
        /// `reduction` or `search`.
        section: &'static str,
        /// What the section would have given the command.
        what: &'static str,
    },
    /// `serve` could not start, or stopped on a failure of its own (the address, the token,
    /// the MCP connection, watching the policy).
    #[error("cannot serve")]
    Serve(#[source] Box<toolgate_mcp::serve::ServeError>),
    /// `validate`: upstream MCP servers of the policy that did not start, tools of theirs
    /// left out, or aliases of their tools that are not there.
    #[error("{policy}: {} upstream MCP server problem(s)", .problems.len())]
    Upstreams {
        /// The policy's name, for a server entry without a position.
        policy: String,
        /// One per server or tool.
        problems: Vec<toolgate_mcp::upstream::Problem>,
    },
    /// `validate`: every policy that failed, in the order given.
    #[error("{} policies failed", .0.len())]
    Policies(Vec<CliError>),

    // ---- input (exit 4)
    /// A file or standard input cannot be read.
    #[error("cannot read {input}")]
    Read {
        /// What was being read.
        input: Input,
        /// Why it cannot be.
        #[source]
        source: std::io::Error,
    },
    /// A conversation is not JSON, or not a message list.
    #[error(transparent)]
    Json(JsonError),
    /// A conversation is an object without a `messages` field.
    #[error(
        "{input}: expected a JSON array of messages, or an object with a \"messages\" array; \
         this object has no \"messages\" field"
    )]
    NoMessages {
        /// The input's name.
        input: String,
    },
    /// A conversation is JSON of another kind.
    #[error(
        "{input}: expected a JSON array of messages, or an object with a \"messages\" array, \
         found {found}"
    )]
    NotAConversation {
        /// The input's name.
        input: String,
        /// What it is instead (`a number`, `null`, ...).
        found: &'static str,
    },
    /// A result id argument that is not UTF-8.
    #[error("the result id {0:?} is not valid UTF-8")]
    ResultIdNotUtf8(String),
    /// A result id argument that is not a result id (a path, say).
    #[error("not a result id")]
    ResultId(#[source] IdError),
    /// The result store failed, or refused what the operator asked; the variant decides the
    /// exit code (see [`CliError::code`]).
    #[error(transparent)]
    Store(StoreError),
    /// A store page that does not move forward.
    #[error(
        "the result store returned no characters at offset {at} of \"{id}\", which has {total}"
    )]
    EmptyPage {
        /// The result.
        id: ResultId,
        /// The offset asked for.
        at: u64,
        /// The result's length in characters.
        total: u64,
    },
    /// `plugin-host`: the engine that started this worker broke the protocol, or the pipe.
    #[error("plugin worker")]
    PluginHost(#[source] toolgate::plugin_host::ServeError),
    /// `plugin hash`: the library cannot be read.
    #[error("cannot read the plugin library {}", .path.display())]
    PluginHash {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A query argument that is not UTF-8.
    #[error("the query is not valid UTF-8: {0:?}")]
    QueryNotUtf8(String),
    /// A query the index cannot run.
    #[error("bad query")]
    Query(#[source] QueryError),
    /// A JSON Lines catalog cannot be read.
    #[error(transparent)]
    Catalog(CatalogError),
    /// An index file cannot be opened.
    #[error(transparent)]
    OpenIndex(IndexError),
    /// Catalogs given with `--catalog` cannot be indexed.
    #[error("cannot index {files}")]
    IndexCatalogs {
        /// The catalog files, comma-separated.
        files: String,
        /// Why.
        #[source]
        source: IndexError,
    },
    /// A policy's search catalog cannot be indexed.
    #[error("{policy}: cannot index the search catalog")]
    IndexPolicyCatalog {
        /// The policy's name.
        policy: String,
        /// Why (the search index error, or the engine's text of it).
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The index file cannot be written.
    #[error("cannot write the index")]
    WriteIndex(#[source] IndexError),
    /// The semantic stage's tool vectors cannot be written beside the index.
    #[error("cannot write the tool vectors")]
    WriteVectors(#[source] toolgate_search_semantic::SemanticError),
    /// The manual pages cannot be written into a folder.
    #[error("cannot write the manual pages into {}", .dir.display())]
    WriteMan {
        /// The folder.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `search --queries`: some lines could not be run (each has its `error` output line).
    #[error(
        "{failed} of {total} queries in {input} could not be run; their output lines have an \
         \"error\" field"
    )]
    QueriesFailed {
        /// Lines that failed.
        failed: usize,
        /// Lines run.
        total: usize,
        /// The queries file (`<stdin>` for standard input).
        input: String,
    },
    /// `upstream pin`: a pins file cannot be read or written.
    #[error(transparent)]
    Pins(toolgate_mcp::upstream::PinsError),
    /// `upstream pin`: the policy file cannot be given the `pins:` line of a server.
    #[error(
        "{}: cannot add `{line}` to the entry of {server} ({why}); add it by hand",
        .policy.display()
    )]
    PinsEdit {
        /// The policy file.
        policy: PathBuf,
        /// The server (or servers, comma-separated).
        server: String,
        /// The line to add.
        line: String,
        /// Why it could not be added.
        why: String,
    },
    /// A file cannot be written.
    #[error("cannot write {}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Standard output cannot be written (a closed pipe is not reported: see
    /// [`CliError::is_closed_pipe`]).
    #[error("cannot write to standard output")]
    Output(#[source] std::io::Error),
    /// `key new`: the system's random source failed.
    #[error("cannot make a key: the system's random source failed")]
    Key(#[source] std::io::Error),

    // ---- the turn (exit 5)
    /// `run` under `on_error: fail`: a call failed.
    #[error("turn aborted (on_error: fail)")]
    TurnAborted(#[source] TurnError),
}

/// How a failure is printed and which exit code it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Usage,
    /// Printed without `error: `, as compiler-style lines editors can jump to.
    Policy,
    Input,
    TurnAborted,
    Store,
}

impl CliError {
    fn class(&self) -> Class {
        match self {
            CliError::SessionId(_)
            | CliError::Missing(_)
            | CliError::UnknownCommand(_)
            | CliError::NoIndexFile { .. }
            | CliError::NoSemanticStage
            | CliError::UnknownServer { .. } => Class::Usage,
            CliError::Policy(_)
            | CliError::Build { .. }
            | CliError::ResultsDir { .. }
            | CliError::ResultsDirUrl { .. }
            | CliError::NoSection { .. }
            | CliError::Upstreams { .. }
            | CliError::Policies(_) => Class::Policy,
            CliError::Serve(e) => match **e {
                ServeError::TokenRequired { .. }
                | ServeError::TokenFile { .. }
                | ServeError::TokenEnv { .. } => Class::Usage,
                ServeError::Auth { .. } => Class::Policy,
                _ => Class::Input,
            },
            CliError::Store(e) => match e {
                // What the operator typed is wrong.
                StoreError::NotFound { .. }
                | StoreError::OffsetOutOfRange { .. }
                | StoreError::InvalidId(_)
                | StoreError::InvalidSession(_) => Class::Input,
                StoreError::Config(_) => Class::Policy,
                // The store itself failed.
                _ => Class::Store,
            },
            CliError::EmptyPage { .. } => Class::Store,
            CliError::TurnAborted(_) => Class::TurnAborted,
            CliError::Read { .. }
            | CliError::Json(_)
            | CliError::NoMessages { .. }
            | CliError::NotAConversation { .. }
            | CliError::ResultIdNotUtf8(_)
            | CliError::ResultId(_)
            | CliError::QueryNotUtf8(_)
            | CliError::Query(_)
            | CliError::Catalog(_)
            | CliError::OpenIndex(_)
            | CliError::IndexCatalogs { .. }
            | CliError::IndexPolicyCatalog { .. }
            | CliError::WriteIndex(_)
            | CliError::WriteVectors(_)
            | CliError::WriteMan { .. }
            | CliError::QueriesFailed { .. }
            | CliError::PluginHost(_)
            | CliError::PluginHash { .. }
            | CliError::Pins(_)
            | CliError::PinsEdit { .. }
            | CliError::Write { .. }
            | CliError::Output(_)
            | CliError::Key(_) => Class::Input,
        }
    }

    /// The exit code, as documented.
    pub fn code(&self) -> u8 {
        match self.class() {
            Class::Usage => EXIT_USAGE,
            Class::Policy => EXIT_POLICY,
            Class::Input => EXIT_INPUT,
            Class::TurnAborted => EXIT_TURN_ABORTED,
            Class::Store => EXIT_STORE,
        }
    }

    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.code())
    }

    /// Standard output was closed by its reader (`toolgate ... | head -1`): a normal end, not a
    /// failure to report.
    pub fn is_closed_pipe(&self) -> bool {
        matches!(self, CliError::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// The text for standard error, without a final newline: `error: ` and the message with
    /// its sources for most failures; `file:line:col: message` lines for policy problems.
    pub fn report(&self) -> String {
        match self {
            CliError::Policies(errors) => errors
                .iter()
                .map(CliError::report)
                .collect::<Vec<_>>()
                .join("\n"),
            // At most MAX_DIAGNOSTICS lines, then how many more there were.
            CliError::Policy(e) => e.to_string(),
            CliError::Build { policy, source } => {
                let mut omitted = 0;
                let lines = build_lines(source, policy, &mut omitted);
                capped_lines(lines, omitted)
            }
            CliError::Upstreams { policy, problems } => problems
                .iter()
                .map(|p| match p.position {
                    Some(_) => p.to_string(),
                    None => format!("{policy}: {p}"),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            _ => {
                let message = format!("{}{}", chain(self), self.hint());
                match self.class() {
                    Class::Policy => message,
                    _ => format!("error: {message}"),
                }
            }
        }
    }

    /// What to do about it, after the message and its sources.
    fn hint(&self) -> String {
        match self {
            CliError::ResultsDir { env, .. } => format!(" (set {env})"),
            CliError::Store(StoreError::Corrupt { id: Some(id), .. }) => {
                format!("; `toolgate results delete {id}` removes it")
            }
            _ => String::new(),
        }
    }
}

/// `error` and each of its sources, joined with `: ` ([`toolgate::error::Chain`]; no error of
/// the workspace repeats its source in its own message).
fn chain(error: &(dyn StdError + 'static)) -> String {
    toolgate::error::Chain(error).to_string()
}

/// The first [`MAX_DIAGNOSTICS`] of `lines`, then how many more problems there were (those
/// beyond them and `omitted` others not even listed).
fn capped_lines(mut lines: Vec<String>, omitted: usize) -> String {
    let more = lines.len().saturating_sub(MAX_DIAGNOSTICS) + omitted;
    lines.truncate(MAX_DIAGNOSTICS);
    if more > 0 {
        let errors = if more == 1 { "error" } else { "errors" };
        lines.push(format!(
            "... and {more} more {errors} (the first {MAX_DIAGNOSTICS} are listed)"
        ));
    }
    lines.join("\n")
}

/// The lines of an engine build error: each problem with its `file:line:col: ` position, or
/// prefixed with the policy's name when the engine knows no position.
fn build_lines(error: &BuildError, policy: &str, omitted: &mut usize) -> Vec<String> {
    let mut lines = Vec::new();
    let unplaced = |text: String, lines: &mut Vec<String>| {
        lines.extend(text.lines().map(|line| format!("{policy}: {line}")));
    };
    match error {
        BuildError::Several { errors } => {
            for e in errors {
                lines.extend(build_lines(e, policy, omitted));
            }
        }
        BuildError::Policy(e) => {
            for d in e.diagnostics() {
                if d.at.is_none() {
                    unplaced(d.to_string(), &mut lines);
                } else {
                    lines.push(d.to_string());
                }
            }
            *omitted += e.omitted();
        }
        // Each of these starts with its policy position when it has one.
        BuildError::InvalidName { at, .. }
        | BuildError::NameCollision { at, .. }
        | BuildError::Alias { at, .. }
        | BuildError::Setting { at, .. }
        | BuildError::Plugin { at, .. } => {
            if at.0.is_some() {
                lines.push(chain(error));
            } else {
                unplaced(chain(error), &mut lines);
            }
        }
        // A script error starts with the script's own `file:line:col` (or file).
        BuildError::Script { .. } => lines.push(chain(error)),
        // The rest (a duplicate name, a catalog, the index, the embedding model, the store,
        // and any later variant) has no position: prefixed with the policy's name.
        _ => unplaced(chain(error), &mut lines),
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate::error::At;
    use toolgate_policy::Position;

    fn build_error(source: BuildError) -> CliError {
        CliError::Build {
            policy: "p.yaml".into(),
            source: Box::new(source),
        }
    }

    #[test]
    fn a_build_error_without_a_position_is_prefixed_with_the_policy_file() {
        let e = build_error(BuildError::DuplicateName {
            name: "echo".into(),
            first: "a".into(),
            second: "b".into(),
        });
        assert_eq!(
            e.report(),
            "p.yaml: duplicate tool name \"echo\": provided by a and by b"
        );
        assert_eq!(e.code(), EXIT_POLICY);
    }

    #[test]
    fn a_build_error_with_a_position_is_printed_at_it() {
        let e = build_error(BuildError::Setting {
            message: "bad pattern".into(),
            at: At(Some(Position {
                file: "q.yaml".into(),
                line: 3,
                column: 7,
            })),
        });
        assert_eq!(e.report(), "q.yaml:3:7: bad pattern");
    }

    #[test]
    fn several_build_errors_give_one_line_each() {
        let e = build_error(BuildError::Several {
            errors: vec![
                BuildError::Setting {
                    message: "bad pattern".into(),
                    at: At(Some(Position {
                        file: "p.yaml".into(),
                        line: 4,
                        column: 5,
                    })),
                },
                BuildError::Setting {
                    message: "no store".into(),
                    at: At(None),
                },
            ],
        });
        assert_eq!(e.report(), "p.yaml:4:5: bad pattern\np.yaml: no store");
    }

    #[test]
    fn a_source_is_printed_after_its_context() {
        let e = CliError::Read {
            input: Input::File("conv.json".into()),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        };
        assert_eq!(e.report(), "error: cannot read conv.json: gone");
        assert_eq!(e.code(), EXIT_INPUT);
    }

    #[test]
    fn an_index_error_is_printed_with_its_source_once() {
        let e = CliError::OpenIndex(IndexError::Io {
            path: "x.idx".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        });
        assert_eq!(e.report(), "error: index file x.idx: gone");
    }

    #[test]
    fn a_closed_pipe_is_a_normal_end() {
        let closed = CliError::Output(std::io::ErrorKind::BrokenPipe.into());
        assert!(closed.is_closed_pipe());
        let full = CliError::Output(std::io::ErrorKind::StorageFull.into());
        assert!(!full.is_closed_pipe());
    }

    #[test]
    fn store_failures_and_operator_mistakes_exit_differently() {
        let id = ResultId::parse("abc").unwrap();
        let missing = CliError::Store(StoreError::NotFound { id: id.clone() });
        assert_eq!(missing.code(), EXIT_INPUT);
        let corrupt = CliError::Store(StoreError::Corrupt {
            id: Some(id),
            what: toolgate::store::Corruption::ImpossibleSizes,
        });
        assert_eq!(corrupt.code(), EXIT_STORE);
        assert!(
            corrupt
                .report()
                .ends_with("; `toolgate results delete abc` removes it"),
            "{}",
            corrupt.report()
        );
    }

    #[test]
    fn a_json_error_puts_its_position_in_front() {
        let error = serde_json::from_str::<serde_json::Value>("[\n  {\"role\": }\n]").unwrap_err();
        let e = CliError::Json(JsonError {
            input: "conv.json".into(),
            stage: JsonStage::Syntax,
            error,
        });
        assert_eq!(
            e.report(),
            "error: conv.json:2:12: invalid JSON: expected value"
        );
    }
}
