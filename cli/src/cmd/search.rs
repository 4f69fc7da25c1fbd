//! `toolgate search`: rank a catalog as `tool_search` does, for one query or a file of them.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use toolgate_search::{Hit, MatchKind, Query, SearchIndex, SearchResults};
use toolgate_search_semantic::SemanticIndex;

use crate::app::load_engine;
use crate::args::SearchArgs;
use crate::catalog::{build_from_catalogs, open_index, policy_catalog, with_embeddings};
use crate::error::{CliError, EXIT_OK, Input};
use crate::output::Out;

/// How many characters of a description the human-readable output shows.
const DESCRIPTION_CHARS: usize = 160;

pub fn search(args: SearchArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let top_k = args.top_k as usize;
    // Check the query before loading anything: a bad query needs no catalog to be refused.
    let query = match &args.query {
        Some(q) => Some(parse_query(q)?),
        None => None,
    };
    let index = if let Some(path) = &args.index {
        Arc::new(open_index(path)?)
    } else if !args.catalog.is_empty() {
        Arc::new(build_from_catalogs(&args.catalog)?.0)
    } else {
        policy_index(args.policy.as_deref())?
    };
    tracing::info!(tools = index.len(), "index ready");
    match (query, &args.queries) {
        (Some((text, query)), _) => {
            let shown = Shown {
                json: args.json,
                explain: args.explain || args.json,
                dense_only: args.dense_only,
            };
            single(&index, &text, &query, top_k, shown, out)?
        }
        (None, Some(path)) => batch(&index, path, top_k, out)?,
        (None, None) => return Err(CliError::Missing("a QUERY or --queries FILE")),
    }
    Ok(EXIT_OK)
}

/// The index `tool_search` searches under the policy: the one the engine built, vectors
/// included (not built a second time); under `use_model_native`, where the engine has none, one
/// built from the same catalog.
fn policy_index(policy: Option<&Path>) -> Result<Arc<SearchIndex>, CliError> {
    let (engine, name) = load_engine(policy)?;
    if let Some(index) = engine.search_index() {
        return Ok(index);
    }
    let (docs, index_file) = policy_catalog(&engine, &name)?;
    let index = toolgate::search::build_index(docs, index_file.as_deref()).map_err(|e| {
        CliError::IndexPolicyCatalog {
            policy: name.clone(),
            source: e.into(),
        }
    })?;
    Ok(Arc::new(with_embeddings(
        index,
        &engine,
        &name,
        index_file.as_deref(),
    )?))
}

/// The query argument, checked: UTF-8, and a query the index can run.
fn parse_query(arg: &OsString) -> Result<(String, Query), CliError> {
    let Some(text) = arg.to_str() else {
        return Err(CliError::QueryNotUtf8(arg.to_string_lossy().into_owned()));
    };
    let query = Query::parse(text).map_err(CliError::Query)?;
    Ok((text.to_string(), query))
}

/// How one query's results are printed.
#[derive(Clone, Copy)]
struct Shown {
    /// As one JSON object (always with why each hit matched).
    json: bool,
    /// With why each hit matched: asked for, since explaining costs more than the search.
    explain: bool,
    /// Ranked by the semantic stage alone.
    dense_only: bool,
}

/// How deep `--explain` looks into each ranking the semantic stage fuses: as deep as the fusion.
const FUSED_DEPTH: usize = toolgate_search_semantic::FUSION_DEPTH;

/// Where each tool stands in the two rankings the semantic stage fuses, among the best
/// [`FUSED_DEPTH`] of each: its 1-based rank and that ranking's score.
struct Ranks {
    lexical: HashMap<String, (usize, f32)>,
    dense: HashMap<String, (usize, f32)>,
}

impl Ranks {
    /// The two rankings of a free-text query; `None` without a semantic stage (the hits are
    /// then the lexical ranking itself) or for a `select:` (not ranked).
    fn of(index: &SearchIndex, query: &Query) -> Option<Ranks> {
        let sem = index.semantic()?;
        let Query::Terms { text, .. } = query else {
            return None;
        };
        let ranked = |list: Vec<(String, f32)>| -> HashMap<String, (usize, f32)> {
            list.into_iter()
                .enumerate()
                .map(|(i, (name, score))| (name, (i + 1, score)))
                .collect()
        };
        let lexical = index.search_lexical(query, FUSED_DEPTH).hits;
        let dense = sem
            .nearest(text, FUSED_DEPTH)
            .into_iter()
            .filter_map(|(cosine, tool)| Some((index.tool_name(tool)?.to_string(), cosine)));
        Some(Ranks {
            lexical: ranked(lexical.into_iter().map(|h| (h.name, h.score)).collect()),
            dense: ranked(dense.collect()),
        })
    }

    /// `hit`'s ranks as JSON: `{"lexical": {"rank", "score"}, "dense": {"rank", "score"}}`,
    /// `null` for a ranking it is not in the best [`FUSED_DEPTH`] of.
    fn json(&self, hit: &str) -> Value {
        let one = |r: Option<&(usize, f32)>| match r {
            Some((rank, score)) => json!({"rank": rank, "score": score}),
            None => Value::Null,
        };
        json!({
            "lexical": one(self.lexical.get(hit)),
            "dense": one(self.dense.get(hit)),
        })
    }

    /// `lexical #2 (12.300), dense #7 (cosine 0.410) -> fused 0.0320`; a ranking the hit is
    /// not in the best [`FUSED_DEPTH`] of says so.
    fn text(&self, hit: &Hit) -> String {
        let lexical = match self.lexical.get(&hit.name) {
            Some((rank, score)) => format!("lexical #{rank} ({score:.3})"),
            None => format!("lexical: not in the best {FUSED_DEPTH}"),
        };
        let dense = match self.dense.get(&hit.name) {
            Some((rank, cosine)) => format!("dense #{rank} (cosine {cosine:.3})"),
            None => format!("dense: not in the best {FUSED_DEPTH}"),
        };
        format!("{lexical}, {dense} -> fused {:.4}", hit.score)
    }
}

/// The `top_k` tools nearest `query` in meaning, by the semantic stage alone (scored by
/// cosine); a `select:` query picks tools by name as always.
fn dense_only(index: &SearchIndex, query: &Query, top_k: usize) -> Result<SearchResults, CliError> {
    let Some(sem) = index.semantic() else {
        return Err(CliError::NoSemanticStage);
    };
    let Query::Terms { text, .. } = query else {
        return Ok(index.search(query, top_k));
    };
    let hits = sem
        .nearest(text, top_k)
        .into_iter()
        .filter_map(|(cosine, tool)| {
            Some(Hit {
                name: index.tool_name(tool)?.to_string(),
                score: cosine,
                why: Vec::new(),
            })
        })
        .collect();
    Ok(SearchResults {
        hits,
        not_found: Vec::new(),
    })
}

fn single(
    index: &SearchIndex,
    text: &str,
    query: &Query,
    top_k: usize,
    shown: Shown,
    out: &mut Out<'_>,
) -> Result<(), CliError> {
    let results = if shown.dense_only {
        dense_only(index, query, top_k)?
    } else if shown.explain {
        index.search_explained(query, top_k)
    } else {
        index.search(query, top_k)
    };
    let ranks = if shown.explain && !shown.dense_only {
        Ranks::of(index, query)
    } else {
        None
    };
    let description = |name: &str| {
        index
            .get(name)
            .map(|d| d.description.to_string())
            .unwrap_or_default()
    };
    if shown.json {
        let hits: Vec<Value> = results
            .hits
            .iter()
            .map(|h| {
                let mut hit = json!({
                    "name": h.name,
                    "score": h.score,
                    "description": description(&h.name),
                    "why": h.why.iter().map(|m| json!({
                        "term": m.term,
                        "matched": m.matched,
                        "field": m.field.as_str(),
                        "kind": kind(m.kind),
                    })).collect::<Vec<_>>(),
                });
                if let Some(ranks) = &ranks {
                    hit["ranks"] = ranks.json(&h.name);
                }
                hit
            })
            .collect();
        return out.json(
            &json!({"query": text, "results": hits, "not_found": results.not_found}),
            false,
        );
    }
    for (i, hit) in results.hits.iter().enumerate() {
        writeln!(out, "{}. {}  (score {:.3})", i + 1, hit.name, hit.score)?;
        let d = description(&hit.name);
        let d = d.lines().next().unwrap_or("");
        if !d.is_empty() {
            writeln!(out, "   {}", shorten(d, DESCRIPTION_CHARS))?;
        }
        if shown.dense_only {
            // Scored by cosine alone: the words were not looked at.
        } else if shown.explain && hit.why.is_empty() {
            // Found by the semantic stage alone: no query word is in the tool's text.
            writeln!(out, "   why: close in meaning (no word in common)")?;
        } else if shown.explain {
            writeln!(out, "   why: {}", why(hit))?;
        }
        if let Some(ranks) = &ranks {
            writeln!(out, "   ranks: {}", ranks.text(hit))?;
        }
    }
    if !results.not_found.is_empty() {
        writeln!(out, "not found: {}", results.not_found.join(", "))?;
    }
    if results.hits.is_empty() && results.not_found.is_empty() {
        writeln!(out, "no tool matched {text:?}")?;
    }
    Ok(())
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

/// Runs every query of a JSON Lines file as it reads it; one output line per non-blank input
/// line, in order, each sent on its way at once. Lines that cannot be run get an `error` line,
/// and the command fails (exit 4) once all have run.
fn batch(
    index: &SearchIndex,
    path: &Path,
    top_k: usize,
    out: &mut Out<'_>,
) -> Result<(), CliError> {
    let input = if path == Path::new("-") {
        Input::Stdin
    } else {
        Input::File(path.to_path_buf())
    };
    let mut reader: Box<dyn BufRead> = match &input {
        Input::Stdin => Box::new(std::io::stdin().lock()),
        Input::File(path) => match File::open(path) {
            Ok(file) => Box::new(BufReader::new(file)),
            Err(source) => return Err(CliError::Read { input, source }),
        },
    };
    let (mut total, mut failed) = (0usize, 0usize);
    let mut raw = Vec::new();
    for line in 1.. {
        raw.clear();
        match reader.read_until(b'\n', &mut raw) {
            Ok(0) => break,
            Ok(_) => {}
            Err(source) => return Err(CliError::Read { input, source }),
        }
        let text = raw.strip_suffix(b"\n").unwrap_or(&raw);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        total += 1;
        let result = match batch_line(index, text, top_k) {
            Ok((id, names)) => json!({"id": id, "results": names}),
            Err((id, error)) => {
                failed += 1;
                tracing::debug!(line, "{error}");
                json!({"id": id, "line": line, "error": error})
            }
        };
        out.json(&result, false)?;
        out.flush()?;
    }
    tracing::info!(queries = total, failed, "queries run");
    if failed == 0 {
        return Ok(());
    }
    Err(CliError::QueriesFailed {
        failed,
        total,
        input: input.position_name(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_search::ToolDoc;

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
    fn long_descriptions_are_shortened_on_a_character_boundary() {
        assert_eq!(shorten("héllo wörld", 5), "héllo...");
        assert_eq!(shorten("short", 10), "short");
    }
}
