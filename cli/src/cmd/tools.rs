//! `toolgate tools`: the tools a model would see, under the names it sees.

use serde_json::{Value, json};

use crate::app::load_engine;
use crate::args::ToolsArgs;
use crate::error::{CliError, EXIT_OK};
use crate::output::Out;
use crate::stored_session::StoredSession;

pub async fn tools(args: ToolsArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let (engine, _) = load_engine(args.policy.policy.as_deref())?;
    let stored = StoredSession::open(&engine, args.session.as_deref()).await?;
    let session = stored.session();
    let specs = engine.visible_tools(session);
    // The real name and source behind each model-facing name (N6).
    let real = |model_name: &str| {
        engine
            .registry()
            .resolve(model_name)
            .map(|r| (r.name.to_string(), r.entry.source().to_string()))
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
        out.json(&Value::Array(array), false)?;
        return Ok(EXIT_OK);
    }
    for (i, t) in specs.iter().enumerate() {
        if i > 0 {
            out.text("\n")?;
        }
        match real(&t.name) {
            Some((tool_name, _)) if tool_name != t.name => {
                writeln!(out, "{} (tool {tool_name})", t.name)?;
            }
            _ => writeln!(out, "{}", t.name)?,
        }
        for line in t.description.lines() {
            writeln!(out, "    {line}")?;
        }
        writeln!(out, "    parameters: {}", t.parameters)?;
    }
    if specs.is_empty() {
        tracing::warn!("the policy gives the model no tools");
    }
    Ok(EXIT_OK)
}
