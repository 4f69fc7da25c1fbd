//! What each command does: load the policy, build the engine, run, format the result.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolgate::history::{ToolCall, content_json};
use toolgate::{Engine, Outcome, Policy};

use crate::conversation::Conversation;
use crate::error::{CliError, EXIT_CALL_ERROR, EXIT_OK};
use crate::stored_session::StoredSession;
use crate::{
    CallArgs, Command, ExplainArgs, Output, PrepareArgs, RunArgs, ToolsArgs, ValidateArgs,
};

/// The policy used when `--policy` is not given.
pub const DEFAULT_POLICY: &str = include_str!("../../policies/default.yaml");
/// How errors and the summary name the built-in policy.
pub const DEFAULT_POLICY_NAME: &str = "<embedded default policy>";

pub async fn run(command: Command) -> Result<Output, CliError> {
    tracing::debug!(command = command.name(), "starting");
    match command {
        Command::Validate(args) => validate(args),
        Command::Tools(args) => tools(args).await,
        Command::Call(args) => call(args).await,
        Command::Run(args) => run_turn(args).await,
        Command::Explain(args) => explain(args),
        Command::Prepare(args) => prepare(args).await,
        Command::Results(args) => crate::results::run(args).await,
        Command::Search(args) => crate::search::search(args),
        Command::Index(args) => crate::search::index(args),
        Command::Serve(args) => {
            crate::serve::serve(args, default_store_url()?).await?;
            ok(String::new())
        }
    }
}

pub(crate) fn ok(stdout: String) -> Result<Output, CliError> {
    Ok(Output {
        stdout,
        stderr: String::new(),
        code: EXIT_OK,
    })
}

/// Loads the policy at `path`, or the built-in one; returns it with the name errors use.
pub(crate) fn load_policy(path: Option<&Path>) -> Result<(Policy, String), CliError> {
    match path {
        Some(path) => {
            let name = path.display().to_string();
            tracing::info!(policy = %name, "loading policy");
            let policy =
                toolgate_policy::load_file(path).map_err(|e| CliError::Policy(e.to_string()))?;
            Ok((policy, name))
        }
        None => {
            tracing::info!("loading the built-in default policy");
            let policy = toolgate_policy::load_str(DEFAULT_POLICY, Path::new(DEFAULT_POLICY_NAME))
                .map_err(|e| CliError::Policy(e.to_string()))?;
            Ok((policy, DEFAULT_POLICY_NAME.to_string()))
        }
    }
}

/// Builds the engine; build errors come out as `file:line:col: message` lines, or
/// `file: message` when the engine knows no position.
pub(crate) fn build(policy: Policy, name: &str) -> Result<Engine, CliError> {
    let needs_store = policy.reduction.as_ref().is_some_and(|r| r.store.is_none());
    let mut builder = Engine::builder(policy);
    if needs_store {
        builder = builder.default_store_url(default_store_url()?);
    }
    builder
        .build()
        .map_err(|e| CliError::Policy(locate(&e.to_string(), name)))
}

/// Where offloaded results go when the policy turns reduction on without naming a store: a
/// folder of the user's, so that a result saved by one `toolgate` process can be read by the
/// next (R8). `$TOOLGATE_RESULTS_DIR`, else `$XDG_DATA_HOME/toolgate/results`, else
/// `~/.local/share/toolgate/results`, else the temporary directory.
pub const RESULTS_DIR_ENV: &str = "TOOLGATE_RESULTS_DIR";

pub(crate) fn default_store_url() -> Result<String, CliError> {
    let env_dir = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = env_dir(RESULTS_DIR_ENV)
        .or_else(|| env_dir("XDG_DATA_HOME").map(|d| d.join("toolgate").join("results")))
        .or_else(|| {
            env_dir("HOME").map(|d| {
                d.join(".local")
                    .join("share")
                    .join("toolgate")
                    .join("results")
            })
        })
        .unwrap_or_else(|| std::env::temp_dir().join("toolgate-results"));
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    std::fs::create_dir_all(&dir).map_err(|e| {
        CliError::Policy(format!(
            "cannot create the result folder {} for reduction: {e} (set {RESULTS_DIR_ENV})",
            dir.display()
        ))
    })?;
    tracing::debug!(dir = %dir.display(), "offloaded results go to this folder");
    url::Url::from_directory_path(&dir)
        .map(String::from)
        .map_err(|()| {
            CliError::Policy(format!(
                "the result folder {} is not a usable path",
                dir.display()
            ))
        })
}

pub(crate) fn load_engine(path: Option<&Path>) -> Result<(Engine, String), CliError> {
    let (policy, name) = load_policy(path)?;
    Ok((build(policy, &name)?, name))
}

/// Prefixes every line that has no `:line:col: ` position with `file: `.
fn locate(message: &str, file: &str) -> String {
    message
        .lines()
        .map(|line| {
            if has_position(line) {
                line.to_string()
            } else {
                format!("{file}: {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `line` contains `:<digits>:<digits>:`, a compiler-style position.
fn has_position(line: &str) -> bool {
    let b = line.as_bytes();
    let digits = |mut i: usize| {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i > start).then_some(i)
    };
    (0..b.len()).any(|i| {
        b[i] == b':'
            && digits(i + 1)
                .filter(|&j| j < b.len() && b[j] == b':')
                .and_then(|j| digits(j + 1))
                .is_some_and(|k| k < b.len() && b[k] == b':')
    })
}

// ---------------------------------------------------------------------------------------------
// validate

fn validate(args: ValidateArgs) -> Result<Output, CliError> {
    let paths: Vec<Option<PathBuf>> = if args.policies.is_empty() {
        vec![None]
    } else {
        args.policies.into_iter().map(Some).collect()
    };
    let mut stdout = String::new();
    let mut errors = Vec::new();
    for path in &paths {
        match load_engine(path.as_deref()) {
            Ok((engine, name)) => {
                for warning in engine.warnings() {
                    tracing::warn!("{name}: {warning}");
                }
                if !stdout.is_empty() {
                    stdout.push('\n');
                }
                stdout.push_str(&summary(&engine, &name));
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    if errors.is_empty() {
        ok(stdout)
    } else {
        // Print the summaries of the good ones before failing on the bad ones.
        if !stdout.is_empty() {
            let _ = crate::write_stdout(&stdout);
        }
        Err(CliError::Policy(errors.join("\n")))
    }
}

/// The one-screen summary of a built engine.
fn summary(engine: &Engine, name: &str) -> String {
    let policy = engine.policy();
    let d = &policy.dispatch;
    let mut s = String::new();
    let _ = writeln!(s, "{name}: ok");

    let _ = writeln!(
        s,
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
        if d.max_result_chars < 0 {
            "unlimited".to_string()
        } else {
            d.max_result_chars.to_string()
        },
        match d.on_error {
            toolgate_policy::OnError::Model => "model",
            toolgate_policy::OnError::Fail => "fail",
        }
    );

    // Tools grouped by where they come from, in registry order.
    // Model-facing names, with the real name beside a name the profile maps (N6).
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut count = 0;
    for (tool, entry) in engine.registry().entries() {
        count += 1;
        let source = if entry.searchable {
            format!("{} (searchable)", entry.source)
        } else {
            entry.source.to_string()
        };
        let shown = if entry.model_name == tool {
            tool.to_string()
        } else {
            format!("{} ({tool})", entry.model_name)
        };
        match groups.iter_mut().find(|(s, _)| *s == source) {
            Some((_, names)) => names.push(shown),
            None => groups.push((source, vec![shown])),
        }
    }
    let _ = writeln!(
        s,
        "  tools ({count}):{}",
        if count == 0 { " none" } else { "" }
    );
    for (source, names) in &groups {
        let _ = writeln!(s, "    from {source}: {}", names.join(", "));
    }

    let aliases: Vec<String> = engine
        .registry()
        .aliases()
        .map(|(alias, real)| format!("{alias} -> {real}"))
        .collect();
    let arg_aliases: usize = policy.aliases.values().map(|a| a.arguments.len()).sum();
    let _ = writeln!(
        s,
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
    );

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
    let _ = writeln!(
        s,
        "  hooks: {}",
        if hooks.is_empty() {
            "none".to_string()
        } else {
            hooks.join(", ")
        }
    );

    let _ = writeln!(
        s,
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
    );
    let _ = writeln!(
        s,
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
    );
    s
}

// ---------------------------------------------------------------------------------------------
// tools

async fn tools(args: ToolsArgs) -> Result<Output, CliError> {
    let (engine, _) = load_engine(args.policy.policy.as_deref())?;
    let stored = StoredSession::open(&engine, args.session.as_deref(), default_store_url).await?;
    let specs = engine.visible_tools(stored.session());
    // The real name and source behind each model-facing name (N6).
    let real = |model_name: &str| {
        engine
            .registry()
            .resolve(model_name)
            .map(|r| (r.name.to_string(), r.entry.source.to_string()))
    };
    if args.json {
        let array: Vec<Value> = specs
            .iter()
            .map(|t| {
                let mut entry = json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                });
                if args.annotate
                    && let Some((tool_name, source)) = real(&t.name)
                {
                    entry["x-toolgate"] = json!({"tool_name": tool_name, "source": source});
                }
                entry
            })
            .collect();
        return ok(to_json_line(&Value::Array(array), false));
    }
    let mut s = String::new();
    for (i, t) in specs.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        match real(&t.name) {
            Some((tool_name, _)) if tool_name != t.name => {
                let _ = writeln!(s, "{} (tool {tool_name})", t.name);
            }
            _ => {
                let _ = writeln!(s, "{}", t.name);
            }
        }
        for line in t.description.lines() {
            let _ = writeln!(s, "    {line}");
        }
        let _ = writeln!(s, "    parameters: {}", t.parameters);
    }
    if specs.is_empty() {
        tracing::warn!("the policy gives the model no tools");
    }
    ok(s)
}

// ---------------------------------------------------------------------------------------------
// call

async fn call(args: CallArgs) -> Result<Output, CliError> {
    let (mut policy, name) = load_policy(args.policy.policy.as_deref())?;
    if let Some(crate::Timeout(timeout)) = args.timeout {
        // --timeout wins over the dispatch default and over every per-tool override.
        policy.dispatch.timeout = timeout;
        for o in &mut policy.tools {
            o.timeout = None;
        }
    }
    let engine = build(policy, &name)?;
    let stored = StoredSession::open(&engine, args.session.as_deref(), default_store_url).await?;
    let call = ToolCall::new(args.call_id, args.tool, args.args);
    let outcome = engine.call(stored.session(), &call).await;
    stored.save().await;
    tracing::info!(
        tool = %outcome.tool_name,
        error_kind = outcome.error_kind().unwrap_or("none"),
        duration_ms = outcome.duration.as_millis() as u64,
        "call finished"
    );
    let stdout = if args.json {
        to_json_line(&outcome_json(&outcome), false)
    } else {
        match content_json(&outcome.content) {
            Value::String(mut text) => {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text
            }
            parts => to_json_line(&parts, true),
        }
    };
    Ok(Output {
        stdout,
        stderr: String::new(),
        code: if outcome.is_error() {
            EXIT_CALL_ERROR
        } else {
            EXIT_OK
        },
    })
}

/// The `call --json` object.
fn outcome_json(o: &Outcome) -> Value {
    json!({
        "call_id": o.call_id,
        "model_name": o.model_name,
        "tool_name": o.tool_name,
        "known_tool": o.known_tool,
        "content": content_json(&o.content),
        "is_error": o.is_error(),
        "error_kind": o.error_kind(),
        "error": o.error.as_ref().map(|e| e.to_string()),
        "truncated": o.truncated,
        "output_chars": o.output_chars,
        "duration_ms": o.duration.as_secs_f64() * 1000.0,
        "queued_ms": o.queued.as_secs_f64() * 1000.0,
        "result_id": o.result_id,
    })
}

// ---------------------------------------------------------------------------------------------
// run

async fn run_turn(args: RunArgs) -> Result<Output, CliError> {
    let (text, input_name) = read_input(args.file.as_deref())?;
    let mut conversation = Conversation::parse(&text, &input_name)?;
    let (engine, _) = load_engine(args.policy.policy.as_deref())?;
    let stored = StoredSession::open(&engine, args.session.as_deref(), default_store_url).await?;

    let turn = engine
        .run_turn(stored.session(), &conversation.messages)
        .await;
    stored.save().await;
    let turn = turn.map_err(|e| CliError::TurnAborted(e.to_string()))?;
    if turn.pending.calls.is_empty() {
        tracing::warn!(
            "nothing to run: the last assistant message has no tool calls waiting for an answer"
        );
    } else {
        tracing::info!(
            calls = turn.pending.calls.len(),
            renamed_call_ids = turn.pending.renamed_calls.len(),
            "turn finished"
        );
    }
    conversation.apply(&turn);
    ok(to_json_line(&conversation.to_json(), !args.compact))
}

/// Reads the conversation from a file, or stdin for `-` or nothing.
pub(crate) fn read_input(file: Option<&Path>) -> Result<(String, String), CliError> {
    match file {
        Some(path) if path != Path::new("-") => {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError::Input(format!("cannot read {name}: {e}")))?;
            Ok((text, name))
        }
        _ => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| CliError::Input(format!("cannot read standard input: {e}")))?;
            Ok((text, "<stdin>".to_string()))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// prepare

async fn prepare(args: PrepareArgs) -> Result<Output, CliError> {
    let (text, input_name) = read_input(args.file.as_deref())?;
    let mut conversation = Conversation::parse(&text, &input_name)?;
    let (engine, _) = load_engine(args.policy.policy.as_deref())?;
    let stored = StoredSession::open(&engine, args.session.as_deref(), default_store_url).await?;

    let prepared = engine
        .prepare(stored.session(), &conversation.messages)
        .await;
    let (repair, offload) = (&prepared.repair, &prepared.offload);
    tracing::info!(
        synthetic_answers = repair.added.len(),
        removed_orphans = repair.removed_orphans.len(),
        removed_duplicates = repair.removed_duplicates.len(),
        moved_answers = repair.moved.len(),
        renamed_call_ids = repair.renamed.len(),
        offloaded = offload.offloaded.len(),
        tokens_before = offload.tokens_before,
        tokens_after = offload.tokens_after,
        "history prepared"
    );
    for (call_id, why) in &offload.failed {
        tracing::warn!(call_id = %call_id, "a result could not be offloaded and stays in the history: {why}");
    }
    if engine.policy().reduction.is_none() {
        tracing::debug!("the policy has no reduction: section; only repair was done");
    }

    let pretty = !args.compact;
    if args.report {
        let pairs = |list: &[(String, String)], second: &str| -> Value {
            list.iter()
                .map(|(call_id, other)| json!({"call_id": call_id, second: other}))
                .collect()
        };
        let report = json!({
            "messages": prepared.messages,
            "repair": {
                "added": repair.added,
                "removed_orphans": repair.removed_orphans,
                "removed_duplicates": repair.removed_duplicates,
                "moved": repair.moved,
                "renamed": repair
                    .renamed
                    .iter()
                    .map(|(from, to)| json!({"from": from, "to": to}))
                    .collect::<Vec<_>>(),
            },
            "offload": {
                "tokens_before": offload.tokens_before,
                "tokens_after": offload.tokens_after,
                "offloaded": pairs(&offload.offloaded, "result_id"),
                "failed": pairs(&offload.failed, "error"),
            },
        });
        return ok(to_json_line(&report, pretty));
    }
    conversation.replace_messages(prepared.messages);
    ok(to_json_line(&conversation.to_json(), pretty))
}

// ---------------------------------------------------------------------------------------------
// explain

fn explain(args: ExplainArgs) -> Result<Output, CliError> {
    let (engine, _) = load_engine(args.policy.policy.as_deref())?;
    // A model-facing name, an alias, or a real name (which the model itself cannot call when
    // the name profile maps it).
    let resolved = engine.registry().lookup(&args.tool);
    let (real, source) = match &resolved {
        Some(r) => (Some(r.name.to_string()), Some(r.entry.source.to_string())),
        None => (None, None),
    };
    let is_alias = engine.registry().aliases().any(|(a, _)| a == args.tool);
    // The name the model calls: the alias or model-facing name given, else the tool's.
    let model_name = match &resolved {
        Some(r) if *r.name == args.tool => r.entry.model_name.clone(),
        _ => args.tool.clone(),
    };
    let e = engine.explain(&args.tool);
    if resolved.is_none() {
        tracing::warn!(
            tool = %args.tool,
            "no tool has this name; shown are the settings a call to it would run under \
             (the unknown-tool path)"
        );
    }
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
        }
        return ok(to_json_line(&value, true));
    }

    let mut s = String::new();
    match (&real, &source) {
        (Some(real), Some(source)) if is_alias => {
            let _ = writeln!(s, "{} (alias of {real}, from {source})", args.tool);
        }
        (Some(real), Some(source)) if *real != args.tool => {
            let _ = writeln!(s, "{} (tool {real}, from {source})", args.tool);
        }
        (Some(_), Some(source)) if model_name != args.tool => {
            let _ = writeln!(
                s,
                "{} (the model calls it {model_name}; from {source})",
                args.tool
            );
        }
        (Some(_), Some(source)) => {
            let _ = writeln!(s, "{} (from {source})", args.tool);
        }
        _ => {
            let _ = writeln!(
                s,
                "{} (no such tool: calls to it take the unknown-tool path)",
                args.tool
            );
        }
    }
    let row = |s: &mut String, key: &str, value: String, from: &str| {
        let _ = writeln!(s, "  {key:<17} {value:<12} from {from}");
    };
    row(
        &mut s,
        "timeout",
        e.timeout.clone().unwrap_or_else(|| "none".into()),
        &e.timeout_from,
    );
    match (&e.max_result_bytes, &e.max_result_bytes_from) {
        (Some(bytes), Some(from)) => row(
            &mut s,
            "max_result_bytes",
            bytes.to_string(),
            &format!(
                "{from} (reduction is on: larger results are offloaded; max_result_chars does not apply)"
            ),
        ),
        _ if !e.max_result_chars_applies => {
            let _ = writeln!(
                s,
                "  {:<17} {:<12} (a built-in under reduction: its output is never reduced or cut)",
                "result size", "unlimited"
            );
        }
        _ => row(
            &mut s,
            "max_result_chars",
            if e.max_result_chars < 0 {
                "unlimited".into()
            } else {
                e.max_result_chars.to_string()
            },
            &e.max_result_chars_from,
        ),
    }
    row(
        &mut s,
        "sequential_group",
        e.sequential_group.clone().unwrap_or_else(|| "none".into()),
        if e.sequential_group.is_some() {
            &e.sequential_group_from
        } else {
            "-"
        },
    );
    let _ = writeln!(
        s,
        "  {:<17} {}",
        "rules",
        if e.rules_from.is_empty() {
            "none".to_string()
        } else {
            e.rules_from.join(", ")
        }
    );
    let _ = writeln!(s, "  {:<17} {}", "order", toolgate::guard::CHECK_ORDER);
    let _ = writeln!(
        s,
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
    );
    ok(s)
}

// ---------------------------------------------------------------------------------------------

pub(crate) fn to_json_line(value: &Value, pretty: bool) -> String {
    let mut s = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .unwrap_or_else(|_| "null".into());
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_is_recognised_anywhere_in_a_line() {
        assert!(has_position("p.yaml:3:7: unknown key"));
        assert!(has_position(
            "hooks/before.rhai:12:1: the before script does not compile"
        ));
        assert!(!has_position(
            "duplicate tool name \"echo\": provided by a:b"
        ));
    }

    #[test]
    fn a_build_error_without_a_position_is_prefixed_with_the_policy_file() {
        assert_eq!(
            locate("duplicate tool name", "p.yaml"),
            "p.yaml: duplicate tool name"
        );
        assert_eq!(locate("p.yaml:1:2: bad", "p.yaml"), "p.yaml:1:2: bad");
    }

    #[test]
    fn the_built_in_policy_loads() {
        toolgate_policy::load_str(DEFAULT_POLICY, Path::new(DEFAULT_POLICY_NAME)).unwrap();
    }
}
