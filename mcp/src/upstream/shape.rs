//! A resource's contents or a prompt's messages on their way through the guard.
//!
//! The guard caps, offloads and shows hooks and events text. So the texts of a read or a get
//! (a text content's `text`; a message's text, or the text of the resource it embeds) go
//! through it as text parts, in order, and the rest of the result (URIs, MIME types, roles,
//! `_meta`, binary contents, images) waits beside it in a [`Shape`]. What comes out of the
//! guard is put back in its place:
//!
//! * each text in its item, the cut one with the truncation marker; items whose text the cap
//!   dropped are dropped too;
//! * an offloaded result becomes one text item holding the notice (its preview, the id and
//!   how to page it with `read_tool_result`), in the place of the first text item: a content
//!   `{uri, mimeType: "text/plain", text}`, or a message `{role, content: {type: text, text}}`;
//!   the other text items are dropped; the non-text items stay.
//!
//! Binary contents (`blob`) and images are not text: they pass whole, as images do through a
//! tool's result cap (G4), bounded by the largest message toolgate reads from a server.

use serde_json::{Map, Value, json};

/// Which result a shape holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `resources/read`: `{contents: [...]}`.
    Resource,
    /// `prompts/get`: `{description?, messages: [...]}`.
    Prompt,
}

impl Kind {
    fn key(self) -> &'static str {
        match self {
            Kind::Resource => "contents",
            Kind::Prompt => "messages",
        }
    }
}

/// Where in its item a text was taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// A content's `text`.
    Text,
    /// A message's `content.text`.
    MessageText,
    /// A message's `content.resource.text`.
    MessageResourceText,
}

/// A result with its texts taken out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shape {
    kind: Kind,
    value: Value,
    /// For each text taken out, in order: its item's index and where in the item it was.
    holes: Vec<(usize, Field)>,
}

impl Shape {
    /// Takes the texts out of `value`; they come back in order.
    pub(crate) fn take(kind: Kind, mut value: Value) -> (Shape, Vec<String>) {
        let mut holes = Vec::new();
        let mut texts = Vec::new();
        if let Some(Value::Array(items)) = value.get_mut(kind.key()) {
            for (i, item) in items.iter_mut().enumerate() {
                let found = match kind {
                    Kind::Resource => take_at(item, &["text"]).map(|t| (t, Field::Text)),
                    Kind::Prompt => take_at(item, &["content", "text"])
                        .map(|t| (t, Field::MessageText))
                        .or_else(|| {
                            take_at(item, &["content", "resource", "text"])
                                .map(|t| (t, Field::MessageResourceText))
                        }),
                };
                if let Some((text, field)) = found {
                    holes.push((i, field));
                    texts.push(text);
                }
            }
        }
        (Shape { kind, value, holes }, texts)
    }

    /// The result with `texts` (what came out of the guard) in place; `offloaded` when the
    /// guard replaced them with an offload notice.
    pub(crate) fn rebuild(mut self, texts: Vec<String>, offloaded: bool) -> Value {
        let kind = self.kind;
        let Some(Value::Array(items)) = self.value.get_mut(kind.key()) else {
            return self.value;
        };
        let mut keep = vec![true; items.len()];
        if offloaded {
            let notice = texts.join("\n");
            if let Some(&(first, _)) = self.holes.first() {
                items[first] = notice_item(kind, &items[first], notice);
            }
            for &(i, _) in self.holes.iter().skip(1) {
                keep[i] = false;
            }
        } else {
            let mut texts = texts.into_iter();
            for &(i, field) in &self.holes {
                match texts.next() {
                    Some(text) => put(&mut items[i], field, text),
                    None => keep[i] = false,
                }
            }
        }
        let mut keep = keep.into_iter();
        items.retain(|_| keep.next().unwrap_or(true));
        self.value
    }
}

/// Takes the string at `path` in `item` out, leaving an empty string.
fn take_at(item: &mut Value, path: &[&str]) -> Option<String> {
    let mut at = item;
    for key in path {
        at = at.get_mut(*key)?;
    }
    match at {
        Value::String(s) => Some(std::mem::take(s)),
        _ => None,
    }
}

fn put(item: &mut Value, field: Field, text: String) {
    let path: &[&str] = match field {
        Field::Text => &["text"],
        Field::MessageText => &["content", "text"],
        Field::MessageResourceText => &["content", "resource", "text"],
    };
    let mut at = item;
    for key in path {
        match at.get_mut(*key) {
            Some(next) => at = next,
            None => return,
        }
    }
    *at = Value::String(text);
}

/// The item that carries an offload notice in the place of `item`.
fn notice_item(kind: Kind, item: &Value, notice: String) -> Value {
    match kind {
        Kind::Resource => {
            let mut out = Map::new();
            out.insert(
                "uri".to_owned(),
                item.get("uri").cloned().unwrap_or(Value::Null),
            );
            out.insert("mimeType".to_owned(), json!("text/plain"));
            out.insert("text".to_owned(), Value::String(notice));
            Value::Object(out)
        }
        Kind::Prompt => json!({
            "role": item.get("role").cloned().unwrap_or(json!("user")),
            "content": {"type": "text", "text": notice},
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read() -> Value {
        json!({"contents": [
            {"uri": "a://1", "mimeType": "text/markdown", "text": "one"},
            {"uri": "a://2", "blob": "AAAA"},
            {"uri": "a://3", "text": "three"},
        ]})
    }

    #[test]
    fn texts_come_out_in_order_and_go_back_in_place() {
        let (shape, texts) = Shape::take(Kind::Resource, read());
        assert_eq!(texts, ["one", "three"]);
        let back = shape.rebuild(texts, false);
        assert_eq!(back, read());
    }

    #[test]
    fn an_item_whose_text_the_cap_dropped_is_dropped() {
        let (shape, _) = Shape::take(Kind::Resource, read());
        let back = shape.rebuild(vec!["on…".into()], false);
        assert_eq!(
            back,
            json!({"contents": [
                {"uri": "a://1", "mimeType": "text/markdown", "text": "on…"},
                {"uri": "a://2", "blob": "AAAA"},
            ]})
        );
    }

    #[test]
    fn an_offloaded_read_is_one_text_item_and_the_binary_ones() {
        let (shape, _) = Shape::take(Kind::Resource, read());
        let back = shape.rebuild(vec!["[saved as r1]".into()], true);
        assert_eq!(
            back,
            json!({"contents": [
                {"uri": "a://1", "mimeType": "text/plain", "text": "[saved as r1]"},
                {"uri": "a://2", "blob": "AAAA"},
            ]})
        );
    }

    #[test]
    fn a_prompts_texts_include_embedded_resources() {
        let get = json!({"description": "d", "messages": [
            {"role": "user", "content": {"type": "text", "text": "hi"}},
            {"role": "user", "content": {"type": "image", "data": "AA", "mimeType": "image/png"}},
            {"role": "assistant", "content": {"type": "resource",
                "resource": {"uri": "a://1", "text": "body"}}},
        ]});
        let (shape, texts) = Shape::take(Kind::Prompt, get.clone());
        assert_eq!(texts, ["hi", "body"]);
        assert_eq!(shape.clone().rebuild(texts, false), get);
        let offloaded = shape.rebuild(vec!["notice".into()], true);
        assert_eq!(
            offloaded["messages"],
            json!([
                {"role": "user", "content": {"type": "text", "text": "notice"}},
                {"role": "user", "content": {"type": "image", "data": "AA", "mimeType": "image/png"}},
            ])
        );
    }
}
