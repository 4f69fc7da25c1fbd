//! `toolgate explain`: which settings apply to a tool, and the policy key each comes from.

use serde_json::{Value, json};

use std::sync::Arc;

use toolgate::access::CallKind;
use toolgate::{Caller, Policy};

use crate::app::load_engine;
use crate::args::ExplainArgs;
use crate::error::{CliError, EXIT_OK};
use crate::output::Out;

pub fn explain(args: ExplainArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let (engine, _) = load_engine(args.policy.policy.as_deref())?;
    // A model-facing name, an alias, or a real name (which the model itself cannot call when
    // the name profile maps it).
    let resolved = engine.registry().lookup(&args.tool);
    let (real, source) = match &resolved {
        Some(r) => (Some(r.name.to_string()), Some(r.entry.source().to_string())),
        None => (None, None),
    };
    let is_alias = engine.registry().aliases().any(|(a, _)| a == args.tool);
    // The name the model calls: the alias or model-facing name given, else the tool's.
    let model_name = match &resolved {
        Some(r) if *r.name == args.tool => r.entry.model_name().to_string(),
        _ => args.tool.clone(),
    };
    // `--as`: the caller whose calls are explained, with the overrides naming it (C8).
    let caller = args
        .principal
        .as_deref()
        .map(|name| caller_as(engine.policy(), name, &args.groups));
    let e = match &caller {
        Some(caller) => engine.explain_as(&args.tool, caller),
        None => engine.explain(&args.tool),
    };
    if resolved.is_none() {
        tracing::warn!(
            tool = %args.tool,
            "no tool has this name; shown are the settings a call to it would run under \
             (the unknown-tool path)"
        );
    }
    // `--as`: the tool as that principal sees it (C4).
    let seen_as = caller.as_ref().map(|caller| {
        let builtin = resolved.as_ref().is_some_and(|r| r.entry.is_builtin());
        let tool = real.as_deref().unwrap_or(&args.tool);
        let sees = builtin || engine.sees(caller, CallKind::Tool, tool);
        let entries = engine.client_entries(caller);
        json!({
            "principal": caller.name(),
            "groups": caller.groups(),
            "sees": sees,
            "clients": entries,
            "restricted": engine.policy().clients.is_some(),
        })
    });
    if args.json {
        let mut value = serde_json::to_value(&e).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.insert("known_tool".into(), json!(resolved.is_some()));
            map.insert("model_name".into(), json!(model_name));
            map.insert(
                "tool_name".into(),
                json!(real.clone().unwrap_or_else(|| args.tool.clone())),
            );
            map.insert("source".into(), json!(source));
            map.insert("order".into(), json!(toolgate::guard::CHECK_ORDER));
            if let Some(seen) = &seen_as {
                map.insert("as".into(), seen.clone());
            }
        }
        out.json(&value, true)?;
        return Ok(EXIT_OK);
    }

    match (&real, &source) {
        (Some(real), Some(source)) if is_alias => {
            writeln!(out, "{} (alias of {real}, from {source})", args.tool)?;
        }
        (Some(real), Some(source)) if *real != args.tool => {
            writeln!(out, "{} (tool {real}, from {source})", args.tool)?;
        }
        (Some(_), Some(source)) if model_name != args.tool => {
            writeln!(
                out,
                "{} (the model calls it {model_name}; from {source})",
                args.tool
            )?;
        }
        (Some(_), Some(source)) => {
            writeln!(out, "{} (from {source})", args.tool)?;
        }
        _ => {
            writeln!(
                out,
                "{} (no such tool: calls to it take the unknown-tool path)",
                args.tool
            )?;
        }
    }
    if let Some(seen) = &seen_as {
        let entries: Vec<&str> = seen["clients"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let verdict = match (seen["sees"].as_bool(), seen["restricted"].as_bool()) {
            (Some(true), Some(false)) => "sees it (the policy has no clients: section)".to_owned(),
            (Some(true), _) => format!("sees it (listed by {})", entries.join(", ")),
            _ if entries.is_empty() => {
                "does not see it: no clients: entry names this principal or its groups".to_owned()
            }
            _ => format!(
                "does not see it: the clients: entries for it ({}) do not list it",
                entries.join(", ")
            ),
        };
        writeln!(
            out,
            "  {:<17} {} {}: {verdict}",
            "as",
            seen["principal"].as_str().unwrap_or(""),
            seen["groups"]
        )?;
    }
    row(
        out,
        "timeout",
        e.timeout.clone().unwrap_or_else(|| "none".into()),
        &e.timeout_from,
    )?;
    match (&e.max_result_bytes, &e.max_result_bytes_from) {
        (Some(bytes), Some(from)) => row(
            out,
            "max_result_bytes",
            bytes.to_string(),
            &format!(
                "{from} (reduction is on: larger results are offloaded; max_result_chars does not apply)"
            ),
        )?,
        _ if !e.max_result_chars_applies => {
            writeln!(
                out,
                "  {:<17} {:<12} (a built-in under reduction: its output is never reduced or cut)",
                "result size", "unlimited"
            )?;
        }
        _ => row(
            out,
            "max_result_chars",
            e.max_result_chars.to_string(),
            &e.max_result_chars_from,
        )?,
    }
    row(
        out,
        "sequential_group",
        e.sequential_group.clone().unwrap_or_else(|| "none".into()),
        if e.sequential_group.is_some() {
            &e.sequential_group_from
        } else {
            "-"
        },
    )?;
    writeln!(
        out,
        "  {:<17} {}",
        "rules",
        if e.rules_from.is_empty() {
            "none".to_string()
        } else {
            e.rules_from.join(", ")
        }
    )?;
    writeln!(out, "  {:<17} {}", "order", toolgate::guard::CHECK_ORDER)?;
    writeln!(
        out,
        "  {:<17} {}",
        "matched tools:",
        if e.matched.is_empty() {
            "none".to_string()
        } else {
            e.matched
                .iter()
                .map(|p| format!("{p:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    )?;
    Ok(EXIT_OK)
}

/// `  timeout           30s          from dispatch.timeout`
fn row(out: &mut Out<'_>, key: &str, value: String, from: &str) -> Result<(), CliError> {
    writeln!(out, "  {key:<17} {value:<12} from {from}")
}

/// The caller `--as NAME` stands for: with `groups` when given, else the groups of the
/// policy's API keys for `name`.
fn caller_as(policy: &Policy, name: &str, groups: &[String]) -> Arc<Caller> {
    let groups = if groups.is_empty() {
        let mut from_keys: Vec<String> = policy
            .auth
            .api_keys
            .iter()
            .filter(|k| k.principal == name)
            .flat_map(|k| k.groups.iter().cloned())
            .collect();
        from_keys.sort();
        from_keys.dedup();
        from_keys
    } else {
        groups.to_vec()
    };
    Arc::new(Caller::new(name, groups))
}
