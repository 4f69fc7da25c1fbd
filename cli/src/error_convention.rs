//! The workspace's error convention, checked over one constructed error of each kind that has a
//! cause: a cause is either in the error's own message or in its `source()`, never both, so the
//! chain of messages a person or the model reads (`toolgate::error::Chain`) says it exactly once.
//!
//! Every error here is built with a cause whose text is distinctive (`disk on fire`, a JSON or
//! id error), and the test counts that text in the whole chain, walked without any
//! de-duplication. An error that keeps its cause in `source()` must not also say it in its own
//! message; one that says it (a plugin's message to the model, which crosses the ABI as text)
//! must return no source. The plugins' errors (http, sqlite) are checked the same way in their
//! own crates.

use std::error::Error;
use std::path::PathBuf;

use toolgate::error::{At, PluginError, WorkerError};
use toolgate::store::{ConfigError, Corruption, IdError, ResultId, SessionId, StoreError};
use toolgate::{BuildError, CallError, TurnError};
use toolgate_plugin_api::worker::{FrameError, ServeError as WorkerServeError};
use toolgate_plugin_api::{LoadError, ManifestProblem, OpenError};
use toolgate_policy::{FileError, FileProblem, MissingVar};
use toolgate_search::{CatalogError, IndexError, QueryError};
use toolgate_search_semantic::SemanticError;

use crate::error::{CliError, Input};

/// Where an error keeps its cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keeps {
    /// In `source()`; its own message says only what its layer knows.
    Source,
    /// In its own message; `source()` returns none.
    Message,
}

const CAUSE: &str = "disk on fire";

fn io() -> std::io::Error {
    std::io::Error::other(CAUSE)
}

fn json() -> serde_json::Error {
    serde_json::from_str::<serde_json::Value>("{").unwrap_err()
}

fn id_error() -> IdError {
    ResultId::parse("").unwrap_err()
}

fn session_error() -> IdError {
    SessionId::parse("").unwrap_err()
}

fn store_error() -> StoreError {
    StoreError::InvalidId(id_error())
}

fn worker_spawn() -> WorkerError {
    WorkerError::Spawn {
        program: "toolgate".into(),
        source: io(),
    }
}

fn index_io() -> IndexError {
    IndexError::Io {
        path: "x.idx".into(),
        source: io(),
    }
}

fn bind() -> toolgate_mcp::serve::ServeError {
    toolgate_mcp::serve::ServeError::Bind {
        addr: ([127, 0, 0, 1], 1).into(),
        source: io(),
    }
}

/// Each error, what it is, the text of its cause, and where it keeps it.
fn table() -> Vec<(&'static str, Box<dyn Error>, String, Keeps)> {
    use Keeps::{Message, Source};
    let json_text = json().to_string();
    let id_text = id_error().to_string();
    let session_text = session_error().to_string();
    let path = || PathBuf::from("p.so");
    vec![
        // ---- engine
        (
            "WorkerError::Spawn",
            Box::new(worker_spawn()),
            CAUSE.into(),
            Source,
        ),
        (
            "PluginError::Unreadable",
            Box::new(PluginError::Unreadable {
                path: path(),
                source: io(),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "PluginError::Sealing",
            Box::new(PluginError::Sealing {
                path: path(),
                source: io(),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "PluginError::Worker",
            Box::new(PluginError::Worker(worker_spawn())),
            CAUSE.into(),
            Source,
        ),
        (
            "BuildError::Plugin",
            Box::new(BuildError::Plugin {
                path: "p.so".into(),
                source: Box::new(PluginError::Worker(worker_spawn())),
                at: At(None),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "BuildError::Store",
            Box::new(BuildError::Store {
                source: store_error(),
            }),
            id_text.clone(),
            Source,
        ),
        (
            "BuildError::CatalogFile",
            Box::new(BuildError::CatalogFile {
                source: FileError {
                    path: "c.jsonl".into(),
                    problem: FileProblem::Io(io()),
                },
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "BuildError::Catalog",
            Box::new(BuildError::Catalog {
                source: CatalogError::Parse {
                    path: "c.jsonl".into(),
                    line: 3,
                    source: json(),
                },
            }),
            json_text.clone(),
            Source,
        ),
        (
            "BuildError::SearchIndex",
            Box::new(BuildError::SearchIndex { source: index_io() }),
            CAUSE.into(),
            Source,
        ),
        (
            "TurnError",
            Box::new(TurnError {
                call_id: "c1".into(),
                tool: "t".into(),
                error: CallError::ToolFailed {
                    tool: "t".into(),
                    message: CAUSE.into(),
                },
            }),
            CAUSE.into(),
            Message,
        ),
        // ---- plugin-api
        (
            "FrameError::Io",
            Box::new(FrameError::Io(io())),
            CAUSE.into(),
            Source,
        ),
        (
            "FrameError::Json",
            Box::new(FrameError::Json(json())),
            json_text.clone(),
            Source,
        ),
        (
            "worker ServeError::Frame",
            Box::new(WorkerServeError::Frame(FrameError::Io(io()))),
            CAUSE.into(),
            Source,
        ),
        (
            "LoadError::Open",
            Box::new(LoadError::Open {
                path: path(),
                error: OpenError::Metadata(io()),
            }),
            CAUSE.into(),
            Message,
        ),
        (
            "LoadError::BadManifest",
            Box::new(LoadError::BadManifest {
                path: path(),
                problem: ManifestProblem::Json(json()),
            }),
            json_text.clone(),
            Message,
        ),
        // ---- store
        (
            "StoreError::InvalidId",
            Box::new(store_error()),
            id_text.clone(),
            Source,
        ),
        (
            "StoreError::InvalidSession",
            Box::new(StoreError::from(session_error())),
            session_text.clone(),
            Source,
        ),
        (
            "StoreError::Config(CreateDir)",
            Box::new(StoreError::Config(ConfigError::CreateDir {
                dir: "/r".into(),
                error: io(),
            })),
            CAUSE.into(),
            Source,
        ),
        (
            "StoreError::Config(BadUrl)",
            Box::new(StoreError::Config(ConfigError::BadUrl {
                url: "x".into(),
                error: url::ParseError::RelativeUrlWithoutBase,
            })),
            url::ParseError::RelativeUrlWithoutBase.to_string(),
            Source,
        ),
        (
            "StoreError::Corrupt(RecordUnparsable)",
            Box::new(StoreError::Corrupt {
                id: None,
                what: Corruption::RecordUnparsable { error: json() },
            }),
            json_text.clone(),
            Source,
        ),
        (
            "Corruption::SessionUnparsable",
            Box::new(Corruption::SessionUnparsable {
                session: SessionId::parse("s").unwrap(),
                error: json(),
            }),
            json_text.clone(),
            Source,
        ),
        (
            "StoreError::Backend",
            Box::new(StoreError::Backend {
                op: "save the result data",
                error: Box::new(io()),
            }),
            CAUSE.into(),
            Message,
        ),
        // ---- policy
        (
            "FileError",
            Box::new(FileError {
                path: "c.jsonl".into(),
                problem: FileProblem::Io(io()),
            }),
            CAUSE.into(),
            Message,
        ),
        // ---- search
        ("IndexError::Io", Box::new(index_io()), CAUSE.into(), Source),
        (
            "CatalogError::Io",
            Box::new(CatalogError::Io {
                path: "c.jsonl".into(),
                source: io(),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "SemanticError::Io",
            Box::new(SemanticError::Io {
                path: "m".into(),
                source: io(),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "SemanticError::Json",
            Box::new(SemanticError::Json {
                path: "m".into(),
                source: json(),
            }),
            json_text.clone(),
            Source,
        ),
        // ---- mcp
        (
            "mcp ServeError::Store",
            Box::new(toolgate_mcp::serve::ServeError::Store(store_error())),
            id_text.clone(),
            Source,
        ),
        (
            "mcp ServeError::Session",
            Box::new(toolgate_mcp::serve::ServeError::Session(session_error())),
            session_text.clone(),
            Source,
        ),
        (
            "mcp ServeError::TokenFile",
            Box::new(toolgate_mcp::serve::ServeError::TokenFile {
                path: "t".into(),
                source: io(),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "mcp ServeError::Bind",
            Box::new(bind()),
            CAUSE.into(),
            Source,
        ),
        (
            "mcp ServeError::Io",
            Box::new(toolgate_mcp::serve::ServeError::Io {
                what: "cannot draw a random session id",
                source: io(),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "UpstreamError::MissingVar",
            Box::new(toolgate_mcp::upstream::UpstreamError::MissingVar {
                setting: "command[2]".into(),
                source: MissingVar {
                    name: "TOKEN".into(),
                },
            }),
            "the environment variable TOKEN is not set".into(),
            Source,
        ),
        (
            "UpstreamError::Spawn",
            Box::new(toolgate_mcp::upstream::UpstreamError::Spawn {
                program: "srv".into(),
                source: io(),
            }),
            CAUSE.into(),
            Source,
        ),
        // ---- cli
        (
            "CliError::Read",
            Box::new(CliError::Read {
                input: Input::File("conv.json".into()),
                source: io(),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "CliError::SessionId",
            Box::new(CliError::SessionId(session_error())),
            session_text.clone(),
            Source,
        ),
        (
            "CliError::ResultId",
            Box::new(CliError::ResultId(id_error())),
            id_text.clone(),
            Source,
        ),
        (
            "CliError::Build",
            Box::new(CliError::Build {
                policy: "p.yaml".into(),
                source: Box::new(BuildError::SearchIndex { source: index_io() }),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "CliError::ResultsDir",
            Box::new(CliError::ResultsDir {
                dir: "/r".into(),
                env: "TOOLGATE_RESULTS_DIR",
                source: io(),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "CliError::Serve",
            Box::new(CliError::Serve(Box::new(bind()))),
            CAUSE.into(),
            Source,
        ),
        (
            "CliError::Store",
            Box::new(CliError::Store(store_error())),
            id_text.clone(),
            Source,
        ),
        (
            "CliError::PluginHost",
            Box::new(CliError::PluginHost(WorkerServeError::Frame(
                FrameError::Io(io()),
            ))),
            CAUSE.into(),
            Source,
        ),
        (
            "CliError::PluginHash",
            Box::new(CliError::PluginHash {
                path: path(),
                source: io(),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "CliError::Query",
            Box::new(CliError::Query(QueryError::Empty)),
            QueryError::Empty.to_string(),
            Source,
        ),
        (
            "CliError::IndexCatalogs",
            Box::new(CliError::IndexCatalogs {
                files: "c.jsonl".into(),
                source: index_io(),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "CliError::IndexPolicyCatalog",
            Box::new(CliError::IndexPolicyCatalog {
                policy: "p.yaml".into(),
                source: Box::new(io()),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "CliError::WriteIndex",
            Box::new(CliError::WriteIndex(index_io())),
            CAUSE.into(),
            Source,
        ),
        (
            "CliError::WriteMan",
            Box::new(CliError::WriteMan {
                dir: "/m".into(),
                source: io(),
            }),
            CAUSE.into(),
            Source,
        ),
        (
            "CliError::Output",
            Box::new(CliError::Output(io())),
            CAUSE.into(),
            Source,
        ),
    ]
}

/// Each message of `error`'s chain, walked without skipping anything.
fn messages(error: &(dyn Error + 'static)) -> Vec<String> {
    let mut out = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        out.push(e.to_string());
        next = e.source();
    }
    out
}

#[test]
fn no_error_of_the_workspace_repeats_its_cause_in_its_own_message() {
    let mut wrong = Vec::new();
    for (what, error, cause, keeps) in table() {
        let chain = messages(&*error);
        let times = chain.join(": ").matches(cause.as_str()).count();
        let in_source = error.source().is_some();
        let in_message = error.to_string().contains(cause.as_str());
        let kept = match keeps {
            Keeps::Source => in_source && !in_message,
            Keeps::Message => in_message && !in_source,
        };
        if times != 1 || !kept {
            wrong.push(format!(
                "{what}: expected its cause in its {keeps:?}, found it {times} time(s) in {chain:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
