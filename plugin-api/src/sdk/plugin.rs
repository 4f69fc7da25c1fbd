//! A plugin as Rust: [`Tool`]s, an `init`, and [`Plugin`], with the state type erased behind
//! [`ErasedPlugin`] for the exported functions.

use std::fmt;

use serde::de::DeserializeOwned;

use super::context::CallContext;
use super::output::{ToolError, ToolOutput};
use crate::abi::{self, STATUS_ERROR, STATUS_INVALID_ARGUMENTS, STATUS_OK};

/// Why a call failed, before it becomes a status code.
enum Failure {
    Tool(ToolError),
    InvalidArguments(String),
}

type Handler<S> =
    dyn Fn(&CallContext<'_, S>, &str) -> Result<ToolOutput, Failure> + Send + Sync + 'static;

/// One tool of a plugin: its name, description, JSON Schema, and the function that runs it.
///
/// The function takes the [`CallContext`] and the arguments, which the SDK deserializes from
/// the model's JSON with serde (blank arguments count as `{}`). When they do not fit, the
/// function is not called and the model gets
/// "invalid arguments for tool `NAME`: WHAT SERDE SAID".
pub struct Tool<S> {
    name: String,
    description: String,
    parameters: serde_json::Value,
    title: Option<String>,
    annotations: Option<serde_json::Value>,
    output_schema: Option<serde_json::Value>,
    handler: Box<Handler<S>>,
}

impl<S: 'static> Tool<S> {
    /// A tool called `name` that runs `function`. Its description is empty and its schema
    /// `{"type": "object"}` until you set them.
    pub fn new<A, F>(name: impl Into<String>, function: F) -> Tool<S>
    where
        A: DeserializeOwned,
        F: Fn(&CallContext<'_, S>, A) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
    {
        let handler = move |ctx: &CallContext<'_, S>, arguments: &str| {
            let arguments = if arguments.trim().is_empty() {
                "{}"
            } else {
                arguments
            };
            let args: A = serde_json::from_str(arguments).map_err(|err| {
                Failure::InvalidArguments(format!(
                    "invalid arguments for tool `{}`: {err}",
                    ctx.tool_name()
                ))
            })?;
            function(ctx, args).map_err(Failure::Tool)
        };
        Tool {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
            title: None,
            annotations: None,
            output_schema: None,
            handler: Box::new(handler),
        }
    }
}

impl<S> Tool<S> {
    /// Sets what the model reads about the tool.
    pub fn description(mut self, description: impl Into<String>) -> Tool<S> {
        self.description = description.into();
        self
    }

    /// Sets the JSON Schema of the arguments object.
    pub fn parameters(mut self, schema: serde_json::Value) -> Tool<S> {
        self.parameters = schema;
        self
    }

    /// Sets a name for people (MCP clients show it in place of the tool's name).
    pub fn title(mut self, title: impl Into<String>) -> Tool<S> {
        self.title = Some(title.into());
        self
    }

    /// Sets hints about the tool's behaviour, in MCP's `annotations` shape:
    /// `json!({"readOnlyHint": true, "openWorldHint": false})`. Hints only: a host does not
    /// rely on them.
    pub fn annotations(mut self, annotations: serde_json::Value) -> Tool<S> {
        self.annotations = Some(annotations);
        self
    }

    /// Sets the JSON Schema of the tool's structured result (an object schema). Every success
    /// must then carry a structured result that matches it
    /// ([`ToolOutput::with_structured`](crate::ToolOutput::with_structured)); the host turns a
    /// success that does not into an error of kind `invalid_structured_content`.
    pub fn output_schema(mut self, schema: serde_json::Value) -> Tool<S> {
        self.output_schema = Some(schema);
        self
    }
}

/// The arguments of a tool that takes none: accepts `{}` (or blank arguments) and rejects any
/// field.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

type InitFn<S> = dyn Fn(&str) -> Result<S, String> + Send + Sync + 'static;

/// A whole plugin: name, version, how to start it, and its tools. [`export_plugin!`](crate::export_plugin) builds one
/// for you; you only need this type to build it by hand.
pub struct Plugin<S> {
    name: String,
    version: String,
    init: Box<InitFn<S>>,
    tools: Vec<Tool<S>>,
    capabilities: crate::manifest::Capabilities,
    config_paths: Vec<String>,
}

impl Plugin<()> {
    /// A plugin without state: it accepts any configuration and its tools see `()`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Plugin<()> {
        Plugin {
            name: name.into(),
            version: version.into(),
            init: Box::new(|_| Ok(())),
            tools: Vec::new(),
            capabilities: crate::manifest::Capabilities::default(),
            config_paths: Vec::new(),
        }
    }

    /// Sets the function that starts the plugin: it takes the configuration from the policy,
    /// deserialized by serde into `C` (use `Option<C>` to accept a missing configuration,
    /// which arrives as `null`), and returns the state every call sees, or a message saying
    /// what is wrong with the configuration.
    ///
    /// # Panics
    ///
    /// If tools were added before: call `init` first.
    pub fn init<C, T, E, F>(self, function: F) -> Plugin<T>
    where
        C: DeserializeOwned,
        E: fmt::Display,
        F: Fn(C) -> Result<T, E> + Send + Sync + 'static,
    {
        assert!(
            self.tools.is_empty(),
            "Plugin::init must be called before Plugin::tool"
        );
        let init = move |config: &str| {
            let config: C = serde_json::from_str(config)
                .map_err(|err| format!("invalid configuration: {err}"))?;
            function(config).map_err(|err| err.to_string())
        };
        Plugin {
            name: self.name,
            version: self.version,
            init: Box::new(init),
            tools: Vec::new(),
            capabilities: self.capabilities,
            config_paths: self.config_paths,
        }
    }
}

impl<S> Plugin<S> {
    /// Declares what the plugin needs: a host loads it only if the policy grants all of it
    /// (`grants:`), and passes the grants in the configuration under `"grants"`.
    pub fn capabilities(mut self, capabilities: crate::manifest::Capabilities) -> Plugin<S> {
        self.capabilities = capabilities;
        self
    }

    /// Declares the top-level keys of the configuration that hold file paths: the host
    /// resolves a relative one against the policy file's folder before `init` (so `root: .`
    /// means the policy's folder wherever the host runs), and refuses one that would reach the
    /// filesystem root without saying `/`.
    pub fn config_paths<I, K>(mut self, keys: I) -> Plugin<S>
    where
        I: IntoIterator<Item = K>,
        K: Into<String>,
    {
        self.config_paths = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: Tool<S>) -> Plugin<S> {
        self.tools.push(tool);
        self
    }

    fn manifest(&self) -> crate::manifest::Manifest {
        crate::manifest::Manifest {
            name: self.name.clone(),
            version: self.version.clone(),
            tools: self
                .tools
                .iter()
                .map(|tool| crate::manifest::ToolManifest {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters: tool.parameters.clone(),
                    title: tool.title.clone(),
                    annotations: tool.annotations.clone(),
                    output_schema: tool.output_schema.clone(),
                })
                .collect(),
            capabilities: self.capabilities.clone(),
            config_paths: self.config_paths.clone(),
        }
    }
}

/// A plugin with its state type erased, so the exported functions need not name it.
#[doc(hidden)]
pub trait ErasedPlugin: Send + Sync + 'static {
    fn manifest_json(&self) -> Result<Vec<u8>, String>;
    fn instantiate(&'static self, config: &str) -> Result<Box<dyn ErasedInstance>, String>;
}

/// A started plugin instance with its state type erased.
#[doc(hidden)]
pub trait ErasedInstance: Send + Sync {
    fn call(
        &self,
        tool: &str,
        arguments: &str,
        context: &abi::CallContext,
        chunk: Option<(abi::ChunkFn, *mut std::ffi::c_void)>,
    ) -> (u32, Vec<u8>);
}

impl<S: Send + Sync + 'static> ErasedPlugin for Plugin<S> {
    fn manifest_json(&self) -> Result<Vec<u8>, String> {
        serde_json::to_vec(&self.manifest()).map_err(|err| format!("cannot encode manifest: {err}"))
    }

    fn instantiate(&'static self, config: &str) -> Result<Box<dyn ErasedInstance>, String> {
        let state = (self.init)(config)?;
        Ok(Box::new(Instance {
            plugin: self,
            state,
        }))
    }
}

struct Instance<S: 'static> {
    plugin: &'static Plugin<S>,
    state: S,
}

impl<S: Send + Sync + 'static> ErasedInstance for Instance<S> {
    fn call(
        &self,
        tool: &str,
        arguments: &str,
        context: &abi::CallContext,
        chunk: Option<(abi::ChunkFn, *mut std::ffi::c_void)>,
    ) -> (u32, Vec<u8>) {
        let Some(found) = self.plugin.tools.iter().find(|t| t.name == tool) else {
            let names: Vec<&str> = self.plugin.tools.iter().map(|t| t.name.as_str()).collect();
            let message = format!(
                "plugin `{}` has no tool named `{tool}`; its tools are: {}",
                self.plugin.name,
                names.join(", ")
            );
            return (STATUS_ERROR, message.into_bytes());
        };
        let ctx = CallContext::new(&found.name, &self.state, context, chunk);
        let result = (found.handler)(&ctx, arguments);
        let emitted = ctx.take_emitted();
        match result {
            Ok(output) => match serde_json::to_vec(&output.after_text(emitted)) {
                Ok(json) => (STATUS_OK, json),
                Err(err) => (
                    STATUS_ERROR,
                    format!("cannot encode the output of tool `{tool}`: {err}").into_bytes(),
                ),
            },
            Err(Failure::Tool(err)) => (STATUS_ERROR, err.into_message().into_bytes()),
            Err(Failure::InvalidArguments(message)) => {
                (STATUS_INVALID_ARGUMENTS, message.into_bytes())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_context() -> abi::CallContext {
        abi::CallContext {
            cancel_flag: std::ptr::null(),
            progress: None,
            progress_context: std::ptr::null_mut(),
        }
    }

    #[derive(serde::Deserialize)]
    struct AddArgs {
        a: i64,
        b: i64,
    }

    fn add(_ctx: &CallContext<'_, i64>, args: AddArgs) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text((args.a + args.b).to_string()))
    }

    fn leaked_adder() -> &'static Plugin<i64> {
        let plugin = Plugin::new("adder", "1.0.0")
            .init(|offset: i64| Ok::<_, String>(offset))
            .tool(Tool::new("add", add));
        Box::leak(Box::new(plugin))
    }

    fn call(plugin: &'static Plugin<i64>, tool: &str, arguments: &str) -> (u32, String) {
        let instance = plugin.instantiate("0").expect("instantiates");
        let (status, bytes) = instance.call(tool, arguments, &no_context(), None);
        (status, String::from_utf8(bytes).expect("utf-8"))
    }

    #[test]
    fn a_tool_gets_its_arguments_deserialized() {
        let (status, out) = call(leaked_adder(), "add", r#"{"a": 2, "b": 3}"#);
        assert_eq!(status, STATUS_OK);
        assert_eq!(out, r#"[{"type":"text","text":"5"}]"#);
    }

    #[test]
    fn arguments_of_the_wrong_shape_are_invalid_arguments_naming_the_tool() {
        let (status, out) = call(leaked_adder(), "add", r#"{"a": 2}"#);
        assert_eq!(status, STATUS_INVALID_ARGUMENTS);
        assert!(
            out.starts_with("invalid arguments for tool `add`: missing field `b`"),
            "{out}"
        );
    }

    #[test]
    fn an_unknown_tool_is_an_error_listing_the_tools() {
        let (status, out) = call(leaked_adder(), "sub", "{}");
        assert_eq!(status, STATUS_ERROR);
        assert_eq!(
            out,
            "plugin `adder` has no tool named `sub`; its tools are: add"
        );
    }

    #[test]
    fn init_with_a_config_of_the_wrong_type_says_the_configuration_is_invalid() {
        let err = leaked_adder()
            .instantiate(r#""seven""#)
            .err()
            .expect("init fails");
        assert!(
            err.starts_with("invalid configuration: invalid type: string"),
            "{err}"
        );
    }

    #[test]
    fn no_args_rejects_any_field() {
        assert!(serde_json::from_str::<NoArgs>("{}").is_ok());
        assert!(serde_json::from_str::<NoArgs>(r#"{"x": 1}"#).is_err());
    }
}
