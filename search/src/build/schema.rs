//! A catalog line's parameter schema indexed straight from its JSON text, without parsing it
//! into a [`serde_json::Value`] and printing that again.
//!
//! The index stores each schema as serde_json prints the parsed value (compact, its escapes,
//! its numbers, its key order), and takes terms from it as `fields.rs` walks the value. Most
//! catalogs are written by serde_json or alike, so their schema text already is what printing
//! its value gives, less the whitespace between tokens. [`scan`] writes that text without the
//! whitespace, in one pass that also hands out the terms `fields.rs` would find, and accepts
//! only a text it can prove prints so: strings whose only escapes are those serde_json writes
//! (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`), integers of at most 18 digits (no `-0`), no key
//! twice in an object (keys in byte order too when serde_json sorts them, as it does without
//! its `preserve_order` feature), nesting of at most [`MAX_NESTING`]. Anything else (a float,
//! a `\u` escape, keys out of order, ...) is refused, and the
//! builder then parses and prints the schema as before: the index bytes do not depend on which
//! way a schema went (tests compare both ways).

use std::sync::OnceLock;

use crate::field::Field;

/// How deep [`scan`] follows objects and arrays before it refuses a text (serde_json's own
/// limit is 128).
const MAX_NESTING: usize = 100;

/// How deep `fields.rs` walks nested schemas (`walk_schema`'s depth limit).
const MAX_SCHEMA_DEPTH: usize = 32;

/// Whether serde_json keeps an object's keys in the order written (its `preserve_order`
/// feature, which another crate of the build may turn on) rather than sorting them.
fn keys_keep_order() -> bool {
    static KEEP: OnceLock<bool> = OnceLock::new();
    *KEEP.get_or_init(|| {
        let text = r#"{"b":0,"a":0}"#;
        serde_json::from_str::<serde_json::Value>(text)
            .and_then(|v| serde_json::to_string(&v))
            .is_ok_and(|printed| printed == text)
    })
}

/// If printing the value `json` parses to gives `json` less its whitespace (see the module
/// doc), appends that text to `out`, calls `term` with each string `fields.rs` takes terms from
/// when walking the value as a tool's schema (the field and the unescaped string), and returns
/// true. Otherwise returns false, having possibly appended to `out` and called `term` for part
/// of the text: the caller truncates `out` and starts the tool over.
pub(super) fn scan(json: &str, out: &mut Vec<u8>, term: &mut impl FnMut(Field, &str)) -> bool {
    let mut s = Scanner {
        b: json.as_bytes(),
        at: 0,
        out,
        keep_order: keys_keep_order(),
        keys: Vec::new(),
        unescaped: String::new(),
        term,
    };
    s.value(Role::Schema(0), 0).is_some() && {
        s.skip_space();
        s.at == s.b.len()
    }
}

/// What a value means to the schema walk of `fields.rs`.
#[derive(Clone, Copy)]
enum Role {
    /// Nothing: only checked.
    Other,
    /// A schema at this depth (walked when it is an object).
    Schema(usize),
    /// A property's value in the `properties` of a schema: its `description` and `enum`
    /// strings are indexed, and it is walked as a schema at this depth if the walk goes there.
    Property(Option<usize>),
    /// The `properties` of a schema at this depth.
    Properties(usize),
    /// `anyOf`, `oneOf` or `allOf` of a schema at this depth: an array of schemas.
    Alternatives(usize),
    /// A parameter description, or an `enum` value: its terms when it is a string.
    Text,
    /// A property's `enum`: its string values are [`Role::Text`].
    Enum,
}

/// A schema one level below a schema at `depth`, if the walk goes that deep.
fn deeper(depth: usize) -> Role {
    if depth < MAX_SCHEMA_DEPTH {
        Role::Schema(depth + 1)
    } else {
        Role::Other
    }
}

struct Scanner<'a, 't, F> {
    b: &'a [u8],
    at: usize,
    out: &'t mut Vec<u8>,
    keep_order: bool,
    /// The keys of the objects being read, innermost last, to find a repeated one.
    keys: Vec<&'a [u8]>,
    unescaped: String,
    term: &'t mut F,
}

impl<'a, F: FnMut(Field, &str)> Scanner<'a, '_, F> {
    fn skip_space(&mut self) {
        while matches!(self.b.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The next byte that is not whitespace.
    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.b.get(self.at).copied()
    }

    /// Copies the next byte if it is `byte` (after whitespace).
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| {
            self.at += 1;
            self.out.push(byte);
        })
    }

    fn value(&mut self, role: Role, nesting: usize) -> Option<()> {
        if nesting > MAX_NESTING {
            return None;
        }
        match self.peek()? {
            b'{' => self.object(role, nesting + 1),
            b'[' => self.array(role, nesting + 1),
            b'"' => {
                let s = self.string()?;
                if let Role::Text = role {
                    self.text(Field::ParamDescription, s);
                }
                Some(())
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.integer(),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.b.get(self.at..end)? == word).then(|| {
            self.at = end;
            self.out.extend_from_slice(word);
        })
    }

    /// An integer as serde_json prints it: no leading zero, no `-0`, at most 18 digits (so it
    /// fits an `i64` and is not read as a float).
    fn integer(&mut self) -> Option<()> {
        let start = self.at;
        let negative = self.b.get(self.at) == Some(&b'-');
        if negative {
            self.at += 1;
        }
        let first = self.at;
        while self.b.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let digits = &self.b[first..self.at];
        let canonical = match digits {
            [] => false,
            [b'0'] => !negative,
            [b'0', ..] => false,
            _ => digits.len() <= 18,
        };
        // A fraction or exponent follows: a float, refused.
        let float = matches!(self.b.get(self.at), Some(b'.' | b'e' | b'E'));
        self.out.extend_from_slice(&self.b[start..self.at]);
        (canonical && !float).then_some(())
    }

    /// A string as serde_json prints it; returns its text between the quotes, still escaped.
    fn string(&mut self) -> Option<&'a [u8]> {
        if self.peek()? != b'"' {
            return None;
        }
        self.at += 1;
        let start = self.at;
        loop {
            match *self.b.get(self.at)? {
                b'"' => break,
                b'\\' => {
                    match self.b.get(self.at + 1)? {
                        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        _ => return None,
                    }
                    self.at += 2;
                }
                c if c < 0x20 => return None,
                _ => self.at += 1,
            }
        }
        let s = &self.b[start..self.at];
        self.at += 1;
        self.out.extend_from_slice(&self.b[start - 1..self.at]);
        Some(s)
    }

    /// Hands the terms of the (escaped) string `s` to the caller, unescaped.
    fn text(&mut self, field: Field, s: &[u8]) {
        // `s` lies between ASCII quotes of a `str`: it is UTF-8.
        let Ok(s) = std::str::from_utf8(s) else {
            return;
        };
        if !s.contains('\\') {
            (self.term)(field, s);
            return;
        }
        self.unescaped.clear();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                self.unescaped.push(c);
                continue;
            }
            // Only the escapes `string` accepts get here.
            self.unescaped.push(match chars.next() {
                Some('b') => '\u{8}',
                Some('f') => '\u{c}',
                Some('n') => '\n',
                Some('r') => '\r',
                Some('t') => '\t',
                Some(other) => other,
                None => break,
            });
        }
        (self.term)(field, &self.unescaped);
    }

    fn array(&mut self, role: Role, nesting: usize) -> Option<()> {
        self.eat(b'[')?;
        let item = match role {
            Role::Alternatives(depth) => deeper(depth),
            Role::Enum => Role::Text,
            _ => Role::Other,
        };
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.value(item, nesting)?;
            if self.eat(b']').is_some() {
                return Some(());
            }
            self.eat(b',')?;
        }
    }

    fn object(&mut self, role: Role, nesting: usize) -> Option<()> {
        self.eat(b'{')?;
        let first_key = self.keys.len();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let key = self.string()?;
            if !self.new_key(first_key, key) {
                return None;
            }
            self.eat(b':')?;
            let child = match (role, key) {
                (Role::Schema(d) | Role::Property(Some(d)), b"properties") => Role::Properties(d),
                (Role::Schema(d) | Role::Property(Some(d)), b"items") => deeper(d),
                (Role::Schema(d) | Role::Property(Some(d)), b"anyOf" | b"oneOf" | b"allOf") => {
                    Role::Alternatives(d)
                }
                (Role::Property(_), b"description") => Role::Text,
                (Role::Property(_), b"enum") => Role::Enum,
                (Role::Properties(d), _) => {
                    self.text(Field::ParamName, key);
                    Role::Property((d < MAX_SCHEMA_DEPTH).then_some(d + 1))
                }
                _ => Role::Other,
            };
            self.value(child, nesting)?;
            if self.eat(b'}').is_some() {
                self.keys.truncate(first_key);
                return Some(());
            }
            self.eat(b',')?;
        }
    }

    /// Whether `key` may follow the keys of this object (from `first`): not one of them, and
    /// after them in byte order when serde_json sorts keys.
    fn new_key(&mut self, first: usize, key: &'a [u8]) -> bool {
        let earlier = &self.keys[first..];
        let fits = if self.keep_order {
            !earlier.contains(&key)
        } else {
            // A sorted map orders keys by their unescaped bytes: compare only plain ones.
            !key.contains(&b'\\') && earlier.last().is_none_or(|last| *last < key)
        };
        self.keys.push(key);
        fits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::FIELDS;
    use crate::fields::DocFields;
    use serde_json::{Value, json};

    /// Each field's terms, sorted (the index counts them; their order within a field is not
    /// kept).
    fn sorted_terms(fields: &DocFields) -> Vec<Vec<String>> {
        (0..FIELDS)
            .map(|f| {
                let mut t: Vec<String> = fields.terms(f).map(str::to_string).collect();
                t.sort();
                t
            })
            .collect()
    }

    /// The terms `fields.rs` takes from the parsed schema.
    fn walked(schema: &Value) -> Vec<Vec<String>> {
        let mut fields = DocFields::default();
        fields.fill_parts("", "", schema, std::iter::empty(), std::iter::empty());
        sorted_terms(&fields)
    }

    /// What `scan` writes and the terms it hands out, if it accepts `text`.
    fn scanned(text: &str) -> Option<(String, Vec<Vec<String>>)> {
        let mut fields = DocFields::default();
        fields.fill_parts("", "", &Value::Null, std::iter::empty(), std::iter::empty());
        let mut out = Vec::new();
        if !scan(text, &mut out, &mut |f, s| fields.push_terms(f, s)) {
            return None;
        }
        Some((String::from_utf8(out).unwrap(), sorted_terms(&fields)))
    }

    /// A schema using every part of the walk: nested properties, `items`, the alternatives,
    /// descriptions and `enum` strings (with escapes), and keys the walk ignores.
    fn rich() -> Value {
        json!({
            "type": "object",
            "description": "top level, not indexed",
            "properties": {
                "filePath": {"type": "string", "description": "Where \"it\" goes\n(a path)\ttab"},
                "mode": {"enum": ["readOnly", "read_write", 3, null, ["nested"]], "description": 7},
                "items_list": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"innerName": {"description": "inner"}}}
                },
                "choice": {"anyOf": [
                    {"properties": {"alpha": {"description": "first alt"}}},
                    {"oneOf": [{"properties": {"beta": {}}}]},
                    "not a schema"
                ]},
                "count": {"type": "integer", "minimum": -5, "maximum": 100, "default": 0},
                "flag": {"type": "boolean", "default": false},
                "spaced key": {"description": "a \\ b"}
            },
            "allOf": [{"properties": {"gamma": {"enum": ["Red Car"]}}}],
            "required": ["filePath"]
        })
    }

    /// Properties nested `depth` levels deep, each level's property named after its depth.
    fn nested(depth: usize) -> Value {
        let mut v = json!({"description": "deepest"});
        for d in (0..depth).rev() {
            v = json!({"properties": {format!("level{d}"): v}, "description": format!("at {d}")});
        }
        v
    }

    #[test]
    fn a_schema_as_serde_json_prints_it_scans_to_the_same_text_and_terms() {
        for schema in [
            rich(),
            json!({}),
            json!(null),
            json!([1, 2]),
            json!("text"),
            nested(40),
        ] {
            let text = schema.to_string();
            let (out, terms) = scanned(&text).unwrap_or_else(|| panic!("refused {text}"));
            assert_eq!(out, text);
            assert_eq!(terms, walked(&schema), "{text}");
        }
    }

    #[test]
    fn whitespace_between_tokens_is_left_out_of_the_text() {
        let schema = rich();
        let text = serde_json::to_string_pretty(&schema).unwrap();
        let (out, terms) = scanned(&format!(" \r\n{text}\t ")).expect("accepted");
        assert_eq!(out, schema.to_string());
        assert_eq!(terms, walked(&schema));
    }

    #[test]
    fn the_walk_stops_at_the_same_depth_as_fields_rs() {
        for depth in [31, 32, 33, 34] {
            let schema = nested(depth);
            let (_, terms) = scanned(&schema.to_string()).expect("accepted");
            assert_eq!(terms, walked(&schema), "depth {depth}");
        }
    }

    #[test]
    fn texts_printing_would_change_are_refused() {
        for text in [
            r#"{"a":1.5}"#,
            r#"{"a":1e2}"#,
            r#"{"a":1E2}"#,
            r#"{"a":-0}"#,
            r#"{"a":01}"#,
            r#"{"a":1234567890123456789}"#,
            r#"{"a":"\u0041"}"#,
            r#"{"a":"\/"}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":1} x"#,
            r#"{"a":1"#,
            r#"{"a" 1}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":tru}"#,
            r#"{"a":+1}"#,
            "{\"a\":\"tab\there\"}",
            "",
        ] {
            assert!(scanned(text).is_none(), "accepted {text}");
        }
    }

    #[test]
    fn keys_out_of_order_are_refused_only_where_serde_json_sorts_them() {
        let text = r#"{"b":1,"a":2}"#;
        assert_eq!(scanned(text).is_some(), keys_keep_order());
    }

    #[test]
    fn nesting_past_the_limit_is_refused() {
        let deep = format!(
            "{}{}",
            "[".repeat(MAX_NESTING + 2),
            "]".repeat(MAX_NESTING + 2)
        );
        assert!(scanned(&deep).is_none());
        let fine = format!("{}{}", "[".repeat(MAX_NESTING), "]".repeat(MAX_NESTING));
        assert!(scanned(&fine).is_some());
    }

    proptest::proptest! {
        /// Whatever text `scan` accepts, serde_json parses, and printing that gives what `scan`
        /// wrote; the terms are those the walk finds.
        #[test]
        fn an_accepted_text_is_what_serde_json_prints_with_the_walks_terms(
            text in r#"[{}\[\]:, "a-z\\ntu0-9.eE+-]{0,40}|\{"properties":\{("[a-zA-Z\\n ]{1,6}":\{"(description|enum|items|x)":("[a-z \\"]{0,8}"|\["[a-z ]{0,5}"(,[0-9])?\]|-?[0-9]{1,3}(\.[0-9])?)\},?){0,3}\}\}"#
        ) {
            if let Some((out, terms)) = scanned(&text) {
                let value: Value = serde_json::from_str(&text).expect("serde_json parses it");
                proptest::prop_assert_eq!(out, value.to_string());
                proptest::prop_assert_eq!(terms, walked(&value));
            }
        }
    }
}
