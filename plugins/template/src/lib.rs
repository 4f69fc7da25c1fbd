//! A minimal toolgate plugin to copy: one tool, `template.word_count`, and a configuration.
//!
//! The steps (write, build, hash, grant, load, test) are in the crate documentation of
//! `toolgate-plugin-api`. In short:
//!
//! ```sh
//! cargo build --release
//! toolgate plugin hash target/release/libtoolgate_plugin_template.so
//! toolgate validate policy.yaml
//! toolgate call --policy policy.yaml template.word_count '{"text": "one two three"}'
//! ```
//!
//! # Configuration
//!
//! ```yaml
//! plugins:
//!   - path: target/release/libtoolgate_plugin_template.so
//!     config: {max_chars: 100000}   # optional, default 1000000
//! ```

#![warn(missing_docs)]

mod name;

use serde::Deserialize;
use toolgate_plugin_api::{CallContext, Tool, ToolError, ToolOutput, json};

pub use name::PLUGIN_NAME;

/// The longest text `word_count` accepts when the configuration gives no `max_chars`.
pub const DEFAULT_MAX_CHARS: usize = 1_000_000;

/// The configuration the policy gives the plugin (`config:`), deserialized by the SDK.
/// `deny_unknown_fields`: a misspelt key stops the plugin at load time with a clear message.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The longest text a call may send.
    #[serde(default = "default_max_chars")]
    pub max_chars: usize,
}

fn default_max_chars() -> usize {
    DEFAULT_MAX_CHARS
}

/// What every call sees through `ctx.state()`: built once by [`init`].
#[derive(Debug)]
pub struct State {
    /// The longest text a call may send.
    pub max_chars: usize,
}

/// Checks the configuration and builds the state. An `Err` stops the plugin from loading; the
/// policy's author sees the message. `None` when the policy gives no `config`.
pub fn init(config: Option<Config>) -> Result<State, String> {
    let max_chars = config.map_or(DEFAULT_MAX_CHARS, |c| c.max_chars);
    if max_chars == 0 {
        return Err("`max_chars` must be at least 1".to_string());
    }
    Ok(State { max_chars })
}

/// The arguments of `word_count`, deserialized from the model's JSON by the SDK. Bad
/// arguments never reach the tool function: the model gets a message naming the tool.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WordCountArgs {
    /// The text to count the words of.
    pub text: String,
}

/// Counts the words (runs of non-whitespace) of a text. A tool function: it takes the call's
/// context and its arguments, and returns the output or an error message for the model.
pub fn word_count(ctx: &CallContext<State>, args: WordCountArgs) -> Result<ToolOutput, ToolError> {
    let chars = args.text.chars().count();
    if chars > ctx.state().max_chars {
        return Err(ToolError::new(format!(
            "the text has {chars} characters; at most {} are accepted",
            ctx.state().max_chars
        )));
    }
    let words = args.text.split_whitespace().count();
    Ok(ToolOutput::text(format!("{words} words")))
}

toolgate_plugin_api::export_plugin! {
    name: PLUGIN_NAME,
    version: env!("CARGO_PKG_VERSION"),
    init: init,
    tools: [
        Tool::new(format!("{PLUGIN_NAME}.word_count"), word_count)
            .description("Count the words in a text.")
            .parameters(json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "The text to count."}
                },
                "required": ["text"],
                "additionalProperties": false
            })),
    ],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_count_counts_runs_of_non_whitespace() {
        let state = State { max_chars: 100 };
        let ctx = CallContext::detached("template.word_count", &state);
        let args = WordCountArgs {
            text: "  one two\tthree\n".to_string(),
        };
        let out = word_count(&ctx, args).expect("counts");
        assert_eq!(
            out.parts(),
            [toolgate_plugin_api::Part::Text("3 words".to_string())]
        );
    }

    #[test]
    fn a_text_over_max_chars_is_refused() {
        let state = State { max_chars: 3 };
        let ctx = CallContext::detached("template.word_count", &state);
        let args = WordCountArgs {
            text: "four".to_string(),
        };
        let err = word_count(&ctx, args).expect_err("refused");
        assert_eq!(
            err.message(),
            "the text has 4 characters; at most 3 are accepted"
        );
    }

    #[test]
    fn init_refuses_a_max_chars_of_zero() {
        let err = init(Some(Config { max_chars: 0 })).expect_err("refused");
        assert_eq!(err, "`max_chars` must be at least 1");
    }
}
