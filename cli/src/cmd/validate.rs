//! `toolgate validate`: load each policy, build its engine, and print a summary of each.

use std::path::PathBuf;

use toolgate::Engine;

use crate::app::{build_reporting, load_policy};
use crate::args::ValidateArgs;
use crate::error::{CliError, EXIT_OK};
use crate::output::Out;

/// Prints the summary of each policy that is good as it goes; the problems of the others come
/// after them, one per line (exit 3).
pub fn validate(args: ValidateArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let paths: Vec<Option<PathBuf>> = if args.policies.is_empty() {
        vec![None]
    } else {
        args.policies.into_iter().map(Some).collect()
    };
    let mut printed = false;
    let mut errors = Vec::new();
    for path in &paths {
        let built = load_policy(path.as_deref()).and_then(|(policy, name)| {
            let (engine, mut problems) = build_reporting(policy, &name)?;
            problems.extend(left_out(&engine));
            Ok(((engine, problems), name))
        });
        match built {
            // An upstream MCP server that does not start, or a tool of one left out.
            Ok(((_, problems), name)) if !problems.is_empty() => errors.push(CliError::Upstreams {
                policy: name,
                problems,
            }),
            Ok(((engine, _), name)) => {
                for warning in engine.warnings() {
                    tracing::warn!("{name}: {warning}");
                }
                if printed {
                    out.text("\n")?;
                }
                summary(&engine, &name, out)?;
                printed = true;
            }
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(EXIT_OK)
    } else {
        Err(CliError::Policies(errors))
    }
}

/// Upstream tools the build left out (a model-facing name another tool has) and aliases of
/// upstream tools that are not there, as problems of their server's entry. Catalog entries left
/// out are not problems (S7): the build warned of them.
fn left_out(engine: &Engine) -> Vec<toolgate_mcp::upstream::Problem> {
    let servers = &engine.policy().mcp_servers;
    engine
        .registry()
        .left_out()
        .iter()
        .filter(|note| !note.catalog)
        .map(|note| {
            let server = note.tool.split('.').next().unwrap_or_default();
            let entry = servers.iter().find(|s| s.name == server);
            toolgate_mcp::upstream::Problem {
                server: server.to_owned(),
                position: note
                    .position
                    .clone()
                    .or_else(|| entry.and_then(|s| s.position.clone())),
                message: note.reason.clone(),
            }
        })
        .collect()
}

/// The one-screen summary of a built engine.
fn summary(engine: &Engine, name: &str, out: &mut Out<'_>) -> Result<(), CliError> {
    let policy = engine.policy();
    let d = &policy.dispatch;
    writeln!(out, "{name}: ok")?;

    writeln!(
        out,
        "  dispatch: {}, timeout {}, max_result_chars {}, on_error {}",
        if d.sequential {
            format!(
                "sequential{}",
                if d.stop_on_error {
                    " (stop_on_error)"
                } else {
                    ""
                }
            )
        } else {
            match d.concurrency {
                Some(n) => format!("parallel (at most {n} at once)"),
                None => "parallel".to_string(),
            }
        },
        toolgate_policy::format_duration(d.timeout),
        d.max_result_chars,
        match d.on_error {
            toolgate_policy::OnError::Model => "model",
            toolgate_policy::OnError::Fail => "fail",
        }
    )?;

    // Tools grouped by where they come from, in registry order.
    // Model-facing names, with the real name beside a name the profile maps (N6).
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut count = 0;
    for (tool, entry) in engine.registry().entries() {
        count += 1;
        let source = if entry.is_searchable() {
            format!("{} (searchable)", entry.source())
        } else {
            entry.source().to_string()
        };
        let shown = if entry.model_name() == tool {
            tool.to_string()
        } else {
            format!("{} ({tool})", entry.model_name())
        };
        match groups.iter_mut().find(|(s, _)| *s == source) {
            Some((_, names)) => names.push(shown),
            None => groups.push((source, vec![shown])),
        }
    }
    writeln!(
        out,
        "  tools ({count}):{}",
        if count == 0 { " none" } else { "" }
    )?;
    for (source, names) in &groups {
        writeln!(out, "    from {source}: {}", names.join(", "))?;
    }

    let aliases: Vec<String> = engine
        .registry()
        .aliases()
        .map(|(alias, real)| format!("{alias} -> {real}"))
        .collect();
    let arg_aliases: usize = policy.aliases.values().map(|a| a.arguments.len()).sum();
    writeln!(
        out,
        "  aliases: {}{}",
        if aliases.is_empty() {
            "none".to_string()
        } else {
            aliases.join(", ")
        },
        if arg_aliases > 0 {
            format!(" (+ argument aliases for {arg_aliases} parameter(s))")
        } else {
            String::new()
        }
    )?;

    let sc = &policy.scripts;
    let hooks: Vec<String> = [
        ("rewrite", &sc.rewrite),
        ("before", &sc.before),
        ("after", &sc.after),
        ("unknown_tool", &sc.unknown_tool),
    ]
    .into_iter()
    .filter_map(|(hook, src)| {
        src.as_ref()
            .map(|src| format!("{hook} ({}:{})", src.file.display(), src.line_offset.max(1)))
    })
    .collect();
    writeln!(
        out,
        "  hooks: {}",
        if hooks.is_empty() {
            "none".to_string()
        } else {
            hooks.join(", ")
        }
    )?;

    writeln!(
        out,
        "  rules: {} allow, {} deny; per-tool overrides: {}",
        policy.rules.allow.len(),
        policy.rules.deny.len(),
        if policy.tools.is_empty() {
            "none".to_string()
        } else {
            policy
                .tools
                .iter()
                .map(|o| o.pattern.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    )?;
    writeln!(
        out,
        "  reduction: {}; search: {}",
        match &policy.reduction {
            Some(r) => format!(
                "on (results over {} bytes offloaded to {})",
                r.max_result_bytes,
                r.store.as_deref().unwrap_or("the default local store")
            ),
            None => "off".to_string(),
        },
        match &policy.search {
            Some(sr) => format!("on ({} catalog(s))", sr.catalogs.len()),
            None => "off".to_string(),
        }
    )?;
    Ok(())
}
