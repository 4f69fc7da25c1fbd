//! `toolgate search` and `toolgate index build`: the tool search index from the command line,
//! over JSON Lines catalogs, a prebuilt index file, or a policy's `search:` catalog.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};
use toolgate::Engine;
use toolgate_search::{Hit, MatchKind, Query, SearchIndex, ToolDoc};

use crate::commands::{load_engine, ok, to_json_line};
use crate::error::{CliError, EXIT_INPUT, EXIT_OK};
use crate::{IndexArgs, IndexBuildArgs, IndexCommand, Output, SearchArgs};

/// How many characters of a description the human-readable output shows.
const DESCRIPTION_CHARS: usize = 160;

// ---------------------------------------------------------------------------------------------
// search

pub fn search(args: SearchArgs) -> Result<Output, CliError> {
    let top_k = args.top_k as usize;
    // Check the query before loading anything: a bad query needs no catalog to be refused.
    let query = match &args.query {
        Some(q) => Some(parse_query(q)?),
        None => None,
    };
    let index = if let Some(path) = &args.index {
        open_index(path)?
    } else if !args.catalog.is_empty() {
        build_from_catalogs(&args.catalog)?.0
    } else {
        let (engine, name) = load_engine(args.policy.as_deref())?;
        let (docs, index_file) = policy_catalog(&engine, &name)?;
        toolgate::search::build_index(docs, index_file.as_deref()).map_err(|e| {
            CliError::Input(format!(
                "{name}: cannot index the search catalog: {}",
                with_sources(&e)
            ))
        })?
    };
    tracing::info!(tools = index.len(), "index ready");
    match (query, &args.queries) {
        (Some((text, query)), _) => ok(single(&index, &text, &query, top_k, args.json)),
        (None, Some(path)) => batch(&index, path, top_k),
        (None, None) => Err(CliError::Usage("give a QUERY or --queries FILE".into())),
    }
}

/// The query argument, checked: UTF-8, and a query the index can run.
fn parse_query(arg: &OsString) -> Result<(String, Query), CliError> {
    let Some(text) = arg.to_str() else {
        return Err(CliError::Input(format!(
            "the query is not valid UTF-8: {:?}",
            arg.to_string_lossy()
        )));
    };
    let query = Query::parse(text).map_err(|e| CliError::Input(format!("bad query: {e}")))?;
    Ok((text.to_string(), query))
}

fn single(index: &SearchIndex, text: &str, query: &Query, top_k: usize, json: bool) -> String {
    let results = index.search(query, top_k);
    let description = |name: &str| {
        index
            .get(name)
            .map(|d| d.description.to_string())
            .unwrap_or_default()
    };
    if json {
        let hits: Vec<Value> = results
            .hits
            .iter()
            .map(|h| {
                json!({
                    "name": h.name,
                    "score": h.score,
                    "description": description(&h.name),
                    "why": h.why.iter().map(|m| json!({
                        "term": m.term,
                        "matched": m.matched,
                        "field": m.field.as_str(),
                        "kind": kind(m.kind),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        return to_json_line(
            &json!({"query": text, "results": hits, "not_found": results.not_found}),
            false,
        );
    }
    let mut s = String::new();
    for (i, hit) in results.hits.iter().enumerate() {
        let _ = writeln!(s, "{}. {}  (score {:.3})", i + 1, hit.name, hit.score);
        let d = description(&hit.name);
        let d = d.lines().next().unwrap_or("");
        if !d.is_empty() {
            let _ = writeln!(s, "   {}", shorten(d, DESCRIPTION_CHARS));
        }
        let _ = writeln!(s, "   why: {}", why(hit));
    }
    if !results.not_found.is_empty() {
        let _ = writeln!(s, "not found: {}", results.not_found.join(", "));
    }
    if results.hits.is_empty() && results.not_found.is_empty() {
        let _ = writeln!(s, "no tool matched {text:?}");
    }
    s
}

/// `area -> area in name (exact); triangle -> triangl in description (stem)`.
fn why(hit: &Hit) -> String {
    hit.why
        .iter()
        .map(|m| {
            if m.term == m.matched {
                format!("{} in {} ({})", m.term, m.field, kind(m.kind))
            } else {
                format!(
                    "{} -> {} in {} ({})",
                    m.term,
                    m.matched,
                    m.field,
                    kind(m.kind)
                )
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn kind(k: MatchKind) -> &'static str {
    match k {
        MatchKind::Exact => "exact",
        MatchKind::Stem => "stem",
        MatchKind::Prefix => "prefix",
        MatchKind::Typo => "typo",
    }
}

fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}...", s[..cut].trim_end()),
    }
}

/// Runs every query of a JSON Lines file; one output line per non-blank input line, in order.
/// Lines that cannot be run get an `error` line, and the exit code is 4 once all have run.
fn batch(index: &SearchIndex, path: &Path, top_k: usize) -> Result<Output, CliError> {
    let (bytes, name) = read_bytes(path)?;
    let mut stdout = String::new();
    let (mut total, mut failed) = (0usize, 0usize);
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        total += 1;
        let line = i + 1;
        let out = match batch_line(index, raw, top_k) {
            Ok((id, names)) => json!({"id": id, "results": names}),
            Err((id, error)) => {
                failed += 1;
                tracing::debug!(line, "{error}");
                json!({"id": id, "line": line, "error": error})
            }
        };
        stdout.push_str(&to_json_line(&out, false));
    }
    tracing::info!(queries = total, failed, "queries run");
    if failed == 0 {
        return Ok(Output {
            stdout,
            stderr: String::new(),
            code: EXIT_OK,
        });
    }
    Ok(Output {
        stdout,
        stderr: format!(
            "error: {failed} of {total} queries in {name} could not be run; their output lines have an \"error\" field\n"
        ),
        code: EXIT_INPUT,
    })
}

/// One query line: `{"id": ..., "query": "..."}` to its result names, or the id (if known) and
/// what is wrong.
fn batch_line(
    index: &SearchIndex,
    raw: &[u8],
    top_k: usize,
) -> Result<(Value, Vec<String>), (Value, String)> {
    let text = std::str::from_utf8(raw).map_err(|e| {
        (
            Value::Null,
            format!(
                "the line is not valid UTF-8 (bad byte at column {})",
                e.valid_up_to() + 1
            ),
        )
    })?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| (Value::Null, format!("the line is not valid JSON: {e}")))?;
    let Value::Object(object) = value else {
        return Err((
            Value::Null,
            "the line is not a JSON object with \"id\" and \"query\"".into(),
        ));
    };
    let id = object.get("id").cloned().unwrap_or(Value::Null);
    if id.is_null() {
        return Err((Value::Null, "the line has no \"id\"".into()));
    }
    let query = match object.get("query") {
        Some(Value::String(q)) => q,
        Some(other) => return Err((id, format!("\"query\" must be a string, not {other}"))),
        None => return Err((id, "the line has no \"query\"".into())),
    };
    let query = Query::parse(query).map_err(|e| (id.clone(), format!("bad query: {e}")))?;
    let names = index
        .search(&query, top_k)
        .hits
        .into_iter()
        .map(|h| h.name)
        .collect();
    Ok((id, names))
}

/// A whole file, or standard input for `-`, as bytes (their UTF-8 is checked line by line).
fn read_bytes(path: &Path) -> Result<(Vec<u8>, String), CliError> {
    if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
            .map_err(|e| CliError::Input(format!("cannot read standard input: {e}")))?;
        return Ok((bytes, "<stdin>".into()));
    }
    let name = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|e| CliError::Input(format!("cannot read {name}: {e}")))?;
    Ok((bytes, name))
}

// ---------------------------------------------------------------------------------------------
// where the index comes from

/// Reads the index file into memory rather than mapping it: this process lives for one search
/// (or one batch), opening reads every byte to check it either way, and a file rebuilt in
/// place meanwhile cannot affect a copy.
fn open_index(path: &Path) -> Result<SearchIndex, CliError> {
    SearchIndex::open(path).map_err(|e| CliError::Input(with_sources(&e)))
}

/// An error and its sources on one line, `error: source: ...` (errors' `Display` does not
/// repeat their source).
fn with_sources(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// Reads and indexes catalogs; also returns how long the indexing itself took.
fn build_from_catalogs(paths: &[PathBuf]) -> Result<(SearchIndex, std::time::Duration), CliError> {
    let mut docs = Vec::new();
    for path in paths {
        let read = toolgate_search::read_catalog_jsonl(path)
            .map_err(|e| CliError::Input(with_sources(&e)))?;
        tracing::debug!(catalog = %path.display(), tools = read.len(), "catalog read");
        docs.extend(read);
    }
    let started = Instant::now();
    let index = SearchIndex::build(docs).map_err(|e| {
        let files: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        CliError::Input(format!(
            "cannot index {}: {}",
            files.join(", "),
            with_sources(&e)
        ))
    })?;
    Ok((index, started.elapsed()))
}

/// The documents the engine indexes for `tool_search` under this policy: every searchable tool
/// of the registry (JSONL catalogs, searchable plugins, `searchable_tools`), with its aliases
/// and the policy's keywords; and the policy's `search.index_file`.
fn policy_catalog(
    engine: &Engine,
    name: &str,
) -> Result<(Vec<ToolDoc>, Option<PathBuf>), CliError> {
    let Some(search) = &engine.policy().search else {
        return Err(CliError::Policy(format!(
            "{name}: the policy has no search: section, so it has no tool catalog"
        )));
    };
    let docs = engine.search_docs().unwrap_or_default();
    if docs.is_empty() {
        tracing::warn!("{name}: the search catalog is empty");
    }
    Ok((docs, search.index_file.clone()))
}

// ---------------------------------------------------------------------------------------------
// index build

pub fn index(args: IndexArgs) -> Result<Output, CliError> {
    match args.command {
        IndexCommand::Build(a) => index_build(a),
    }
}

fn index_build(args: IndexBuildArgs) -> Result<Output, CliError> {
    let started = Instant::now();
    let (index, build_time, output) = if !args.catalog.is_empty() {
        let Some(output) = args.output else {
            return Err(CliError::Usage(
                "give the index file to write with -o INDEX".into(),
            ));
        };
        let (index, took) = build_from_catalogs(&args.catalog)?;
        (index, took, output)
    } else {
        let (engine, name) = load_engine(args.policy.as_deref())?;
        let (docs, index_file) = policy_catalog(&engine, &name)?;
        let Some(output) = args.output.or(index_file) else {
            return Err(CliError::Usage(format!(
                "{name} has no search.index_file: give the index file to write with -o INDEX"
            )));
        };
        let building = Instant::now();
        let index = SearchIndex::build(docs).map_err(|e| {
            CliError::Input(format!(
                "{name}: cannot index the search catalog: {}",
                with_sources(&e)
            ))
        })?;
        (index, building.elapsed(), output)
    };
    index
        .write(&output)
        .map_err(|e| CliError::Input(format!("cannot write the index: {}", with_sources(&e))))?;
    let size = std::fs::metadata(&output)
        .map(|m| m.len())
        .unwrap_or(index.size_bytes() as u64);
    ok(format!(
        "wrote {}: {} tools, {} ({size} bytes), indexed in {} ms ({} ms in all)\n",
        output.display(),
        index.len(),
        human_size(size),
        build_time.as_millis(),
        started.elapsed().as_millis(),
    ))
}

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> SearchIndex {
        SearchIndex::build(vec![
            ToolDoc::new("get_weather", "Current weather for a city."),
            ToolDoc::new("send_email", "Send an email message."),
        ])
        .unwrap()
    }

    #[test]
    fn a_query_line_gives_its_id_and_the_names_found() {
        let (id, names) =
            batch_line(&index(), br#"{"id": 7, "query": "weather in Paris"}"#, 5).unwrap();
        assert_eq!(id, json!(7));
        assert_eq!(names[0], "get_weather");
    }

    #[test]
    fn a_bad_query_line_says_why_and_keeps_its_id() {
        let bad = |line: &[u8]| batch_line(&index(), line, 5).unwrap_err();
        assert_eq!(bad(br#"{"id": "q1", "query": "  "}"#).0, json!("q1"));
        assert!(bad(br#"{"id": "q1", "query": "  "}"#).1.contains("empty"));
        assert!(bad(br#"{"id": "q1", "query": 3}"#).1.contains("string"));
        assert!(bad(br#"{"query": "weather"}"#).1.contains("\"id\""));
        assert!(bad(br#"[1, 2]"#).1.contains("object"));
        assert!(bad(b"{\"id\": 1, \"query\": \"\xff\"}").1.contains("UTF-8"));
        assert!(
            bad(br#"{"id": 1, "query": "select:no way"}"#)
                .1
                .contains("not a valid tool name")
        );
    }

    #[test]
    fn sizes_are_shown_in_binary_units() {
        assert_eq!(human_size(10), "10 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(3 * 1024 * 1024), "3.0 MiB");
    }

    #[test]
    fn long_descriptions_are_shortened_on_a_character_boundary() {
        assert_eq!(shorten("héllo wörld", 5), "héllo...");
        assert_eq!(shorten("short", 10), "short");
    }
}
