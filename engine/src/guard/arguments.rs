//! Argument parsing and argument aliases (D2).

use std::collections::{BTreeMap, HashMap};

use crate::access::{CallKind, normalize_uri};
use crate::call::{CallResult, Invocation};
use crate::error::{CallError, cut_name};
use crate::guard::{Layer, Next};
use crate::tool::BoxFuture;

/// Argument aliases of each tool: real tool name -> (alias -> real argument name).
pub(crate) type ArgAliases = HashMap<String, BTreeMap<String, String>>;

/// Parses the arguments and renames argument aliases (D2): at the top level of a JSON object,
/// only when the real name is absent. Empty arguments mean `{}`.
pub(crate) struct ArgumentsLayer {
    pub(crate) aliases: ArgAliases,
}

impl ArgumentsLayer {
    pub(crate) fn parse(raw: &str, tool: &str) -> Result<serde_json::Value, CallError> {
        if raw.trim().is_empty() {
            return Ok(serde_json::Value::Object(Default::default()));
        }
        let v: serde_json::Value =
            serde_json::from_str(raw).map_err(|e| CallError::InvalidArguments {
                tool: tool.to_string(),
                reason: format!("the arguments are not valid JSON ({e}); send a JSON object"),
            })?;
        if !v.is_object() {
            return Err(CallError::InvalidArguments {
                tool: tool.to_string(),
                reason: format!("the arguments must be a JSON object, not {}", json_type(&v)),
            });
        }
        Ok(v)
    }

    pub(crate) fn rename(args: &mut serde_json::Value, aliases: &BTreeMap<String, String>) {
        let Some(obj) = args.as_object_mut() else {
            return;
        };
        if aliases.is_empty() {
            return;
        }
        let present: Vec<String> = obj.keys().cloned().collect();
        for key in present {
            if let Some(real) = aliases.get(&key)
                && !obj.contains_key(real)
                && let Some(v) = obj.remove(&key)
            {
                obj.insert(real.clone(), v);
            }
        }
    }
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

impl Layer for ArgumentsLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            // An unknown name is the model's, of any length: the message echoes it cut.
            inv.args = ArgumentsLayer::parse(&inv.raw_arguments, &cut_name(&inv.tool_name))?;
            match inv.kind {
                CallKind::Tool => {
                    if inv.is_known()
                        && let Some(aliases) = self.aliases.get(&inv.tool_name)
                    {
                        ArgumentsLayer::rename(&mut inv.args, aliases);
                    }
                }
                // A1: the rules and hooks judge the URI in normal form.
                CallKind::Resource => {
                    if let Some(uri) = inv.args.get_mut("uri")
                        && let Some(text) = uri.as_str()
                    {
                        let normal =
                            normalize_uri(text).map_err(|e| CallError::InvalidArguments {
                                tool: cut_name(text).into_owned(),
                                reason: format!("the URI has no normal form to judge: {e}"),
                            })?;
                        *uri = serde_json::Value::String(normal);
                    }
                }
                CallKind::Prompt => {}
            }
            next.run(inv).await
        })
    }
}
