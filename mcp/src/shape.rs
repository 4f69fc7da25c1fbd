//! MCP's shapes and the engine's, both ways, with nothing lost: a tool's definition
//! (`title`, `annotations`, `icons`, `_meta`, `outputSchema` beside name, description and
//! input schema) and a result's content blocks (text, image, audio, embedded resource,
//! resource link, each with its `annotations` and `_meta`).
//!
//! The upstream side reads MCP into the engine's [`ToolSpec`] and [`ContentPart`]; `serve`
//! writes them back. What the engine has no field for travels in the part's `extra` map, so a
//! block read from an upstream server is written to a client as it came (within what `rmcp`'s
//! types carry: the fields of MCP 2025-11-25).

use std::sync::Arc;

use rmcp::model::{ContentBlock, JsonObject, MetaObject, Tool as McpTool};
use serde_json::{Map, Value};
use toolgate::history::part_as_text;
use toolgate::tool::{ContentPart, ToolSpec};

/// An upstream tool's definition as the engine's spec named `name`: everything the server
/// declared. A tool without a description is described by its title, if it has one (the model
/// needs words; the title is passed on as it is too).
pub(crate) fn spec_of(name: String, tool: &McpTool) -> ToolSpec {
    let description = tool
        .description
        .as_deref()
        .or(tool.title.as_deref())
        .unwrap_or_default();
    let mut spec = ToolSpec::new(
        name,
        description,
        Value::Object((*tool.input_schema).clone()),
    );
    spec.title.clone_from(&tool.title);
    spec.output_schema = tool
        .output_schema
        .as_ref()
        .map(|s| Value::Object((**s).clone()));
    spec.annotations = tool
        .annotations
        .as_ref()
        .and_then(|a| serde_json::to_value(a).ok());
    spec.icons = tool
        .icons
        .as_ref()
        .and_then(|i| serde_json::to_value(i).ok());
    spec.meta = tool.meta.as_ref().map(|m| m.0.clone());
    spec
}

/// The key of toolgate's own entry in a `_meta` object.
pub(crate) const META_KEY: &str = "toolgate";

/// A spec as `tools/list` shows it: the model-facing name, the description, the arguments'
/// schema (an object schema; anything else is wrapped so clients can read it) and what the
/// tool's source declared besides. When the model-facing name is not the tool's real name
/// (`name_profile: openai` or `anthropic`), `_meta.toolgate.tool_name` holds the real one,
/// beside the source's own `_meta` keys.
pub(crate) fn tool_of(spec: ToolSpec, real_name: Option<&str>) -> McpTool {
    let schema: JsonObject = match spec.parameters {
        Value::Object(map) => map,
        other => {
            let mut map = JsonObject::new();
            map.insert("type".to_owned(), Value::from("object"));
            if !other.is_null() {
                map.insert("x-toolgate-parameters".to_owned(), other);
            }
            map
        }
    };
    let mut meta = spec.meta;
    if let Some(real) = real_name.filter(|real| *real != spec.name) {
        let toolgate = serde_json::json!({ "tool_name": real });
        meta.get_or_insert_with(Map::new)
            .insert(META_KEY.to_owned(), toolgate);
    }
    let mut tool = McpTool::new(spec.name, spec.description, Arc::new(schema));
    tool.title = spec.title;
    tool.output_schema = match spec.output_schema {
        Some(Value::Object(schema)) => Some(Arc::new(schema)),
        _ => None,
    };
    tool.annotations = spec
        .annotations
        .and_then(|a| serde_json::from_value(a).ok());
    tool.icons = spec.icons.and_then(|i| serde_json::from_value(i).ok());
    tool.meta = meta.map(MetaObject);
    tool
}

/// An MCP content block as an engine part; its `annotations`, `_meta` and other fields go to
/// the part's `extra`.
pub(crate) fn part_of(block: ContentBlock) -> ContentPart {
    // The usual blocks, bare: no copy through JSON.
    match block {
        ContentBlock::Text(t) if t.annotations.is_none() && t.meta.is_none() => {
            ContentPart::text(t.text)
        }
        ContentBlock::Image(i) if i.annotations.is_none() && i.meta.is_none() => {
            ContentPart::image(i.mime_type, i.data)
        }
        // Through the JSON text, not `to_value`: rmcp keeps an annotation's `priority` as an
        // `f32`, which the text writes as the server sent it (0.7) and a `Value` widens
        // (0.699999988...).
        block => match serde_json::to_string(&block).and_then(|t| serde_json::from_str(&t)) {
            Ok(Value::Object(map)) => part_of_json(map),
            // rmcp's blocks always serialize to an object.
            _ => ContentPart::text(format!("[content toolgate could not read: {block:?}]")),
        },
    }
}

/// The string `key` of `map`, taken out of it (empty when it is not a string).
fn take(map: &mut Map<String, Value>, key: &str) -> String {
    match map.remove(key) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    }
}

fn part_of_json(mut map: Map<String, Value>) -> ContentPart {
    let kind = take(&mut map, "type");
    match kind.as_str() {
        "text" => {
            let text = take(&mut map, "text");
            ContentPart::Text { text, extra: map }
        }
        "image" | "audio" => {
            let (mime_type, data) = (take(&mut map, "mimeType"), take(&mut map, "data"));
            if kind == "image" {
                ContentPart::Image {
                    mime_type,
                    data,
                    extra: map,
                }
            } else {
                ContentPart::Audio {
                    mime_type,
                    data,
                    extra: map,
                }
            }
        }
        "resource" => {
            let resource = match map.remove("resource") {
                Some(Value::Object(resource)) => resource,
                _ => Map::new(),
            };
            ContentPart::Resource {
                resource,
                extra: map,
            }
        }
        "resource_link" => {
            let (uri, name) = (take(&mut map, "uri"), take(&mut map, "name"));
            ContentPart::ResourceLink {
                uri,
                name,
                extra: map,
            }
        }
        other => ContentPart::text(format!(
            "[content of a kind toolgate does not know: {other}]"
        )),
    }
}

/// An engine part as an MCP content block, with its `extra` fields back in place.
pub(crate) fn block_of(part: ContentPart) -> ContentBlock {
    let (kind, mut map, extra) = match part {
        ContentPart::Text { text, extra } if extra.is_empty() => return ContentBlock::text(text),
        ContentPart::Image {
            mime_type,
            data,
            extra,
        } if extra.is_empty() => return ContentBlock::image(data, mime_type),
        ContentPart::Text { text, extra } => ("text", fields([("text", text)]), extra),
        ContentPart::Image {
            mime_type,
            data,
            extra,
        } => (
            "image",
            fields([("mimeType", mime_type), ("data", data)]),
            extra,
        ),
        ContentPart::Audio {
            mime_type,
            data,
            extra,
        } => (
            "audio",
            fields([("mimeType", mime_type), ("data", data)]),
            extra,
        ),
        ContentPart::Resource { resource, extra } => {
            let mut map = Map::new();
            map.insert("resource".to_owned(), Value::Object(resource));
            ("resource", map, extra)
        }
        ContentPart::ResourceLink { uri, name, extra } => (
            "resource_link",
            fields([("uri", uri), ("name", name)]),
            extra,
        ),
    };
    for (key, value) in extra {
        map.entry(key).or_insert(value);
    }
    map.insert("type".to_owned(), Value::from(kind));
    let json = Value::Object(map);
    match serde_json::from_value::<ContentBlock>(json.clone()) {
        Ok(block) => block,
        // A part MCP cannot carry as it is (a plugin's bad annotations, say): the client gets
        // what a model would, not nothing.
        Err(e) => {
            tracing::warn!("a {kind} part is not an MCP content block ({e}); sent as text");
            match serde_json::from_value::<ContentPart>(json) {
                Ok(part) => ContentBlock::text(part_as_text(&part)),
                Err(_) => ContentBlock::text(format!("[a {kind} part toolgate could not send]")),
            }
        }
    }
}

fn fields<const N: usize>(pairs: [(&str, String); N]) -> Map<String, Value> {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::String(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn block(value: Value) -> ContentBlock {
        serde_json::from_value(value).expect("an MCP content block")
    }

    /// What a client reads: the block as JSON text.
    fn sent(block: ContentBlock) -> Value {
        serde_json::from_str(&serde_json::to_string(&block).unwrap()).unwrap()
    }

    fn round_trip(value: Value) {
        assert_eq!(sent(block_of(part_of(block(value.clone())))), value);
    }

    #[test]
    fn annotated_text_round_trips() {
        round_trip(json!({"type": "text", "text": "hi",
            "annotations": {"audience": ["user"], "priority": 0.7}, "_meta": {"k": 1}}));
    }

    #[test]
    fn audio_round_trips() {
        round_trip(
            json!({"type": "audio", "mimeType": "audio/wav", "data": "UklGRg==",
            "annotations": {"audience": ["assistant"]}}),
        );
    }

    #[test]
    fn an_embedded_resource_round_trips() {
        round_trip(json!({"type": "resource", "resource":
            {"uri": "test://static/resource/1", "mimeType": "text/plain", "text": "Resource 1"}}));
        round_trip(json!({"type": "resource", "resource":
            {"uri": "test://b", "mimeType": "application/octet-stream", "blob": "AAEC"}}));
    }

    #[test]
    fn a_resource_link_round_trips() {
        round_trip(
            json!({"type": "resource_link", "uri": "test://r/2", "name": "r2",
            "title": "Resource 2", "description": "the second", "mimeType": "text/plain", "size": 12}),
        );
    }

    #[test]
    fn a_plain_text_part_stays_plain() {
        assert!(part_of(ContentBlock::text("x")).is_plain_text());
    }

    #[test]
    fn an_upstream_tool_keeps_everything_it_declared() {
        let declared = json!({
            "name": "weather", "title": "Weather", "description": "Get the weather.",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"celsius": {"type": "number"}}},
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
            "icons": [{"src": "https://example.com/w.png", "mimeType": "image/png"}],
            "_meta": {"example.com/x": 1}
        });
        let mcp: McpTool = serde_json::from_value(declared.clone()).unwrap();
        let spec = spec_of("w.weather".into(), &mcp);
        let mut shown = serde_json::to_value(tool_of(spec, Some("w.weather"))).unwrap();
        shown["name"] = json!("weather");
        assert_eq!(shown, declared);
    }

    #[test]
    fn a_mapped_name_keeps_the_real_one_in_meta_beside_the_sources_keys() {
        let mut spec = ToolSpec::new("w_weather", "d", json!({"type": "object"}));
        spec.meta = Some(json!({"example.com/x": 1}).as_object().unwrap().clone());
        let shown = serde_json::to_value(tool_of(spec, Some("w.weather"))).unwrap();
        assert_eq!(
            shown["_meta"],
            json!({"example.com/x": 1, "toolgate": {"tool_name": "w.weather"}})
        );
    }
}
