//! The JSON each view of the console reads. Every answer is bounded: the ring's rows, one
//! call's detail (arguments at most [`ARGUMENT_BYTES`](super::hub::ARGUMENT_BYTES), a preview
//! at most [`PREVIEW_CHARS`](super::hub::PREVIEW_CHARS)), a page of at most
//! [`MAX_PAGE`] characters, the tools of the registry, at most 50 search hits.

use http::StatusCode;
use serde_json::{Value, json};
use toolgate::mask::ArgumentMasker;
use toolgate::policy::Rule;
use toolgate_search::{MatchKind, Query};
use toolgate_store::ResultId;

use super::hub::{Hub, RING};
use crate::serve::engines::Loaded;

/// What a view answers: JSON, or an HTTP status and what went wrong.
pub(crate) type Answer = Result<Value, (StatusCode, String)>;

/// The most characters of an offloaded result one page holds (as `read_tool_result`).
pub(crate) const MAX_PAGE: u64 = 20_000;
/// The most hits one search shows (as `tool_search`'s `max_results`).
const MAX_HITS: usize = 50;

/// The calls in the ring, oldest first.
pub(crate) fn calls(hub: &Hub) -> Value {
    let (calls, forgotten) = hub.rows();
    json!({"calls": calls, "capacity": RING, "forgotten": forgotten})
}

/// One call: its row, its arguments with secrets masked (by the current policy's
/// `audit.secret_arguments` and `redact:`), the start of its result.
pub(crate) fn call(hub: &Hub, loaded: &Loaded, call_id: &str) -> Answer {
    let masker = ArgumentMasker::for_policy(loaded.engine.policy());
    hub.with_record(call_id, |record| {
        json!({
            "row": record.row,
            "arguments": masker.arguments(&record.arguments),
            "arguments_cut": record.arguments_cut,
            "preview": record.preview,
            "preview_cut": record.preview_cut,
        })
    })
    .ok_or_else(|| {
        (
            StatusCode::NOT_FOUND,
            format!("no call {call_id} among the last {RING}"),
        )
    })
}

/// A page of the offloaded result `id`, as `read_tool_result` reads it; only the results of
/// calls in the ring.
pub(crate) async fn result_page(
    hub: &Hub,
    loaded: &Loaded,
    id: &str,
    offset: &str,
    limit: &str,
) -> Answer {
    let bad = |what: String| (StatusCode::BAD_REQUEST, what);
    let offset = number(offset, 0).map_err(bad)?;
    let limit = number(limit, MAX_PAGE).map_err(bad)?.clamp(1, MAX_PAGE);
    if !hub.knows_result(id) {
        return Err((
            StatusCode::NOT_FOUND,
            format!("no call among the last {RING} offloaded a result {id}"),
        ));
    }
    let parsed = ResultId::parse(id).map_err(|e| bad(format!("bad result id: {e}")))?;
    let Some(store) = loaded.engine.result_store() else {
        return Err((
            StatusCode::NOT_FOUND,
            "the policy in force keeps no results (no reduction:)".to_owned(),
        ));
    };
    let page = store
        .read_chars(&parsed, offset, limit)
        .await
        .map_err(|e| {
            (
                StatusCode::NOT_FOUND,
                toolgate::error::Chain(&e).to_string(),
            )
        })?;
    Ok(json!({
        "id": id,
        "text": page.text,
        "offset": page.offset,
        "end": page.end,
        "total_chars": page.total_chars,
        "next_offset": (page.end < page.total_chars).then_some(page.end),
    }))
}

fn number(text: &str, default: u64) -> Result<u64, String> {
    if text.is_empty() {
        return Ok(default);
    }
    text.parse()
        .map_err(|_| format!("expected a whole number of 0 or more, not {text:?}"))
}

/// The policy in force: where it came from, its defaults, its rules (each with its place in
/// the file), its overrides and which sections are on.
pub(crate) fn policy(loaded: &Loaded) -> Value {
    let policy = loaded.engine.policy();
    let rules = |rules: &[Rule], verdict: &str| -> Vec<Value> {
        rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                json!({
                    "rule": format!("{verdict}[{i}]"),
                    "at": r.position.as_ref().map(ToString::to_string),
                    "tools": r.tools.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "resources": r.resources.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "prompts": r.prompts.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "args": r.args.iter().map(|(k, v)| (k.clone(), Value::String(v.to_string()))).collect::<serde_json::Map<_, _>>(),
                    "paths": r.paths.iter().map(|(k, v)| (k.clone(), Value::String(v.to_string()))).collect::<serde_json::Map<_, _>>(),
                    "sessions": r.sessions.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "reason": r.reason,
                })
            })
            .collect()
    };
    let scripts: Vec<&str> = [
        ("rewrite", policy.scripts.rewrite.is_some()),
        ("before", policy.scripts.before.is_some()),
        ("after", policy.scripts.after.is_some()),
        ("unknown_tool", policy.scripts.unknown_tool.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect();
    json!({
        "file": policy.source.as_ref().map(|p| p.display().to_string()),
        "generation": loaded.generation,
        "name_profile": format!("{:?}", policy.name_profile).to_lowercase(),
        "dispatch": {
            "timeout": toolgate::policy::format_duration(policy.dispatch.timeout),
            "max_result_chars": policy.dispatch.max_result_chars.to_string(),
        },
        "rules": {
            "allow": rules(&policy.rules.allow, "allow"),
            "deny": rules(&policy.rules.deny, "deny"),
        },
        "overrides": policy.tools.iter().map(|o| json!({
            "key": o.pattern.to_string(),
            "at": o.position.as_ref().map(ToString::to_string),
        })).collect::<Vec<_>>(),
        "sections": {
            "reduction": policy.reduction.is_some(),
            "search": policy.search.is_some(),
            "redact": policy.redact.is_some(),
            "audit": policy.audit.is_some(),
            "scripts": scripts,
        },
        "mcp_servers": policy.mcp_servers.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
        "warnings": loaded.engine.warnings(),
    })
}

/// What `toolgate explain --json TOOL` prints: each setting and the policy key it comes from.
pub(crate) fn explain(loaded: &Loaded, tool: &str) -> Value {
    let engine = &loaded.engine;
    let resolved = engine.registry().lookup(tool);
    let explanation = engine.explain(tool);
    let mut value = serde_json::to_value(&explanation).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        let (real, source, model_name) = match &resolved {
            Some(r) => (
                r.name.to_string(),
                Some(r.entry.source().to_string()),
                if *r.name == *tool {
                    r.entry.model_name().to_owned()
                } else {
                    tool.to_owned()
                },
            ),
            None => (tool.to_owned(), None, tool.to_owned()),
        };
        map.insert("known_tool".into(), json!(resolved.is_some()));
        map.insert("model_name".into(), json!(model_name));
        map.insert("tool_name".into(), json!(real));
        map.insert("source".into(), json!(source));
        map.insert("order".into(), json!(toolgate::guard::CHECK_ORDER));
    }
    value
}

/// The tools of the registry, and the upstream servers with their health.
pub(crate) fn tools(loaded: &Loaded) -> Value {
    let engine = &loaded.engine;
    let tools: Vec<Value> = engine
        .registry()
        .entries()
        .map(|(name, entry)| {
            let spec = entry.tool().spec();
            json!({
                "name": name,
                "model_name": entry.model_name(),
                "source": entry.source().to_string(),
                "searchable": entry.is_searchable(),
                "builtin": entry.is_builtin(),
                "description": spec.description.lines().next().unwrap_or(""),
            })
        })
        .collect();
    let upstreams = &loaded.upstreams.upstreams;
    let problems = upstreams.problems();
    let servers: Vec<Value> = upstreams
        .servers()
        .iter()
        .map(|server| {
            let (state, detail) = server.health();
            json!({
                "name": server.name(),
                "description": server.description,
                "state": state,
                "detail": detail,
                "tools": server.tools().tools.len(),
                "problems": problems.iter().filter(|p| p.server == server.name()).map(|p| p.message.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({"tools": tools, "upstreams": servers})
}

/// What `tool_search` would answer `query`, with why each tool ranked; it ranks the same index
/// without making anything visible to any session.
pub(crate) fn search(loaded: &Loaded, query: &str, max: &str) -> Answer {
    let Some(index) = loaded.engine.search_index() else {
        return Err((
            StatusCode::NOT_FOUND,
            "the policy in force has no tool_search (no search:, or use_model_native)".to_owned(),
        ));
    };
    let default = loaded
        .engine
        .policy()
        .search
        .as_ref()
        .map_or(5, |s| s.default_max_results);
    let max = number(max, default)
        .map_err(|e| (StatusCode::BAD_REQUEST, e))?
        .clamp(1, MAX_HITS as u64);
    let parsed = Query::parse(query).map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))?;
    let max = usize::try_from(max).unwrap_or(MAX_HITS);
    let results = index.search_explained(&parsed, max);
    let hits: Vec<Value> = results
        .hits
        .iter()
        .map(|hit| {
            json!({
                "name": hit.name,
                "score": hit.score,
                "description": index.get(&hit.name).map(|d| d.description.lines().next().unwrap_or("").to_owned()),
                "why": hit.why.iter().map(|m| json!({
                    "term": m.term,
                    "matched": m.matched,
                    "field": m.field.as_str(),
                    "kind": match m.kind {
                        MatchKind::Exact => "exact",
                        MatchKind::Stem => "stem",
                        MatchKind::Prefix => "prefix",
                        MatchKind::Typo => "typo",
                    },
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(json!({"query": query, "results": hits, "not_found": results.not_found}))
}
