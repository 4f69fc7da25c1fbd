//! A call's parts, decoded from the buffer the plugin wrote, with a cap on the text kept: the
//! host decodes the plugin's JSON without copying the text past the cap. A text part's JSON
//! string is borrowed from the plugin's buffer as it is (checked, not copied); only its first
//! characters are unescaped into the part. Images and the structured part are always kept
//! whole (the engine's cap judges structured content on its own); text parts after the cap is
//! reached are dropped.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::Part;

/// One part on the wire with its text left as raw JSON. The two kinds share one struct (not a
/// tagged enum, which would buffer a copy of every string before it looks at the tag).
#[derive(Deserialize)]
struct RawPart<'a> {
    #[serde(rename = "type")]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
    #[serde(default)]
    mime_type: Option<String>,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    value: Option<serde_json::Value>,
}

/// Decodes a JSON list of parts, keeping at most `keep` characters of text across the text
/// parts (`None`: all of it).
pub(crate) fn parts(bytes: &[u8], keep: Option<u64>) -> Result<Vec<Part>, serde_json::Error> {
    match keep {
        None => serde_json::from_slice(bytes),
        Some(keep) => parts_kept(bytes, keep),
    }
}

/// Decodes a JSON list of parts, keeping at most `keep` characters of text across the text
/// parts: a text part that reaches it is cut there, and later text parts are dropped.
fn parts_kept(bytes: &[u8], keep: u64) -> Result<Vec<Part>, serde_json::Error> {
    let raw: Vec<RawPart<'_>> = serde_json::from_slice(bytes)?;
    let mut room = keep;
    let mut parts = Vec::with_capacity(raw.len());
    for part in raw {
        match part.kind.as_ref() {
            "text" => {
                let Some(text) = part.text else {
                    return Err(serde::de::Error::missing_field("text"));
                };
                if room == 0 {
                    continue;
                }
                let text = prefix(text.get(), room)?;
                room -= text.chars().count() as u64;
                parts.push(Part::Text(text));
            }
            "image" => match (part.mime_type, part.data) {
                (Some(mime_type), Some(data_base64)) => parts.push(Part::Image {
                    mime_type,
                    data_base64,
                }),
                (None, _) => return Err(serde::de::Error::missing_field("mime_type")),
                (_, None) => return Err(serde::de::Error::missing_field("data")),
            },
            "structured" => match part.value {
                Some(value) => parts.push(Part::Structured(value)),
                None => return Err(serde::de::Error::missing_field("value")),
            },
            other => {
                return Err(serde::de::Error::unknown_variant(
                    other,
                    &["text", "image", "structured"],
                ));
            }
        }
    }
    Ok(parts)
}

/// The most bytes of JSON one character takes: a surrogate pair, `\uD83D\uDE00`.
const MAX_ESCAPED_CHAR: usize = 12;

/// The first `chars` characters of the JSON string literal `raw` (quotes included, already
/// checked by the parser), unescaped.
fn prefix(raw: &str, chars: u64) -> Result<String, serde_json::Error> {
    let chars = usize::try_from(chars).unwrap_or(usize::MAX);
    // `chars` characters take at most this many bytes of JSON after the opening quote.
    let enough = chars.saturating_mul(MAX_ESCAPED_CHAR).saturating_add(1);
    if raw.len() <= enough {
        return Ok(cut(serde_json::from_str(raw)?, chars));
    }
    // Cut the literal, close it and unescape that. A cut inside an escape (or between the two
    // halves of a surrogate pair) does not parse: move the cut back, at most an escape's length.
    let mut end = enough;
    let mut last_err = None;
    for _ in 0..=MAX_ESCAPED_CHAR {
        while end > 1 && !raw.is_char_boundary(end) {
            end -= 1;
        }
        if end <= 1 {
            break;
        }
        let mut literal = String::with_capacity(end + 1);
        literal.push_str(&raw[..end]);
        literal.push('"');
        match serde_json::from_str::<String>(&literal) {
            Ok(text) => return Ok(cut(text, chars)),
            Err(err) => last_err = Some(err),
        }
        end -= 1;
    }
    Err(last_err.unwrap_or_else(|| serde::de::Error::custom("a text part could not be cut")))
}

/// `text` cut to at most `chars` characters.
fn cut(mut text: String, chars: usize) -> String {
    if let Some((at, _)) = text.char_indices().nth(chars) {
        text.truncate(at);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(parts: &[Part]) -> Vec<u8> {
        serde_json::to_vec(parts).expect("parts encode")
    }

    fn image() -> Part {
        Part::Image {
            mime_type: "image/png".into(),
            data_base64: "AAAA".into(),
        }
    }

    #[test]
    fn parts_under_the_cap_are_kept_as_they_are() {
        let parts = vec![Part::Text("ab\n\"c\"".into()), image()];
        assert_eq!(parts_kept(&wire(&parts), 100).unwrap(), parts);
    }

    #[test]
    fn the_cap_counts_across_text_parts_and_keeps_images() {
        let parts = vec![
            Part::Text("ab".into()),
            image(),
            Part::Text("cdef".into()),
            Part::Text("later".into()),
        ];
        assert_eq!(
            parts_kept(&wire(&parts), 3).unwrap(),
            vec![Part::Text("ab".into()), image(), Part::Text("c".into())]
        );
    }

    #[test]
    fn the_structured_part_is_kept_whole_under_a_cap_on_text() {
        let structured = Part::Structured(serde_json::json!({"rows": ["a".repeat(50)]}));
        let parts = vec![Part::Text("abcdef".into()), structured.clone()];
        assert_eq!(
            parts_kept(&wire(&parts), 2).unwrap(),
            vec![Part::Text("ab".into()), structured]
        );
    }

    #[test]
    fn a_structured_part_without_its_value_is_refused() {
        let e = parts_kept(br#"[{"type": "structured"}]"#, 10).unwrap_err();
        assert!(e.to_string().contains("missing field `value`"), "{e}");
    }

    #[test]
    fn a_long_text_with_escapes_is_cut_at_the_character_cap() {
        // Every character escaped, some as surrogate pairs: each cut position is tried.
        let text: String = "é\n\u{1F600}\"\u{1}a".repeat(50);
        for keep in 0..60u64 {
            let got = parts_kept(&wire(&[Part::Text(text.clone())]), keep).unwrap();
            let expected: String = text.chars().take(keep as usize).collect();
            let want = if keep == 0 {
                vec![]
            } else {
                vec![Part::Text(expected)]
            };
            assert_eq!(got, want, "keep {keep}");
        }
    }

    #[test]
    fn an_escaped_surrogate_pair_is_never_split() {
        let json = format!(
            "[{{\"type\":\"text\",\"text\":\"{}\"}}]",
            "\\ud83d\\ude00".repeat(20)
        );
        for keep in 1..10u64 {
            let got = parts_kept(json.as_bytes(), keep).unwrap();
            assert_eq!(got, vec![Part::Text("\u{1F600}".repeat(keep as usize))]);
        }
    }

    #[test]
    fn malformed_parts_are_an_error() {
        assert!(parts_kept(b"not json", 10).is_err());
        assert!(parts_kept(br#"[{"type":"video"}]"#, 10).is_err());
        assert!(parts_kept(br#"[{"type":"text"}]"#, 10).is_err());
        assert!(parts_kept(br#"[{"type":"text","text":"ab"#, 10).is_err());
    }
}
