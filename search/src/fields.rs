//! A tool's text split into the terms of each field, as the index holds them: the name and
//! aliases split like names, the description and keywords split into words, and the parameter
//! names, descriptions and `enum` values found by walking the JSON Schema.

use crate::field::{FIELDS, Field};
use crate::text;

/// The surface terms of each field of a tool, each field's terms stored
/// back to back in one string (`ends` are the end offsets), so that
/// splitting a tool costs a dozen allocations rather than one per word.
#[derive(Default)]
pub(crate) struct DocFields {
    text: [String; FIELDS],
    ends: [Vec<u32>; FIELDS],
}

impl DocFields {
    fn push(&mut self, field: Field, term: &str) {
        let f = field as usize;
        self.text[f].push_str(term);
        self.ends[f].push(self.text[f].len() as u32);
    }

    /// The terms of field `f`.
    pub(crate) fn terms(&self, f: usize) -> impl Iterator<Item = &str> + '_ {
        let text = &self.text[f];
        let mut start = 0usize;
        self.ends[f].iter().map(move |&end| {
            let t = text.get(start..end as usize).unwrap_or("");
            start = end as usize;
            t
        })
    }

    pub(crate) fn len(&self, f: usize) -> usize {
        self.ends[f].len()
    }

    /// Adds the terms of `text` to `field`, as the schema walk adds those of a parameter's
    /// name, description or `enum` value.
    pub(crate) fn push_terms(&mut self, field: Field, text: &str) {
        text::for_each_term(text, |t| self.push(field, t));
    }

    /// The terms of a name, the same as `text::name_terms` gives (a test checks it) without
    /// a vector of its own.
    fn push_name(&mut self, field: Field, name: &str) {
        let before = self.len(field as usize);
        let mut single: Option<bool> = None;
        let whole = name.to_lowercase();
        text::for_each_word(name, |w| {
            single = Some(single.is_none() && w == whole);
            self.push(field, w);
        });
        let parts = self.len(field as usize) - before;
        if !(parts == 1 && single == Some(true)) {
            self.push(field, &whole);
        }
    }
}

impl DocFields {
    /// Replaces the terms with those of a tool given field by field (an
    /// owned document or one read back from an index), keeping the buffers.
    pub(crate) fn fill_parts<'a>(
        &mut self,
        name: &str,
        description: &str,
        parameters: &serde_json::Value,
        aliases: impl Iterator<Item = &'a str>,
        keywords: impl Iterator<Item = &'a str>,
    ) {
        for (text, ends) in self.text.iter_mut().zip(&mut self.ends) {
            text.clear();
            ends.clear();
        }
        let f = self;
        f.push_name(Field::Name, name);
        text::for_each_term(description, |t| f.push(Field::Description, t));
        walk_schema(parameters, f, 0);
        for a in aliases {
            f.push_name(Field::Alias, a);
        }
        for k in keywords {
            text::for_each_term(k, |t| f.push(Field::Keyword, t));
        }
    }
}

/// Collects property names and descriptions (and `enum` strings) from a JSON
/// Schema, descending into nested `properties`, `items` and the
/// `anyOf`/`oneOf`/`allOf` alternatives. Depth is bounded so a hostile schema
/// cannot overflow the stack.
fn walk_schema(schema: &serde_json::Value, out: &mut DocFields, depth: usize) {
    if depth > 32 {
        return;
    }
    if let serde_json::Value::Object(obj) = schema {
        SchemaKeys::of(obj).walk(out, depth);
    }
}

/// The keywords of one schema object that [`walk_schema`] reads, found in
/// one pass over its keys rather than one map lookup each.
#[derive(Default)]
struct SchemaKeys<'a> {
    properties: Option<&'a serde_json::Value>,
    description: Option<&'a serde_json::Value>,
    enumeration: Option<&'a serde_json::Value>,
    items: Option<&'a serde_json::Value>,
    /// `anyOf`, `oneOf`, `allOf`, in that order.
    alternatives: [Option<&'a serde_json::Value>; 3],
}

impl<'a> SchemaKeys<'a> {
    fn of(obj: &'a serde_json::Map<String, serde_json::Value>) -> SchemaKeys<'a> {
        let mut keys = SchemaKeys::default();
        for (k, v) in obj {
            match k.as_str() {
                "properties" => keys.properties = Some(v),
                "description" => keys.description = Some(v),
                "enum" => keys.enumeration = Some(v),
                "items" => keys.items = Some(v),
                "anyOf" => keys.alternatives[0] = Some(v),
                "oneOf" => keys.alternatives[1] = Some(v),
                "allOf" => keys.alternatives[2] = Some(v),
                _ => {}
            }
        }
        keys
    }

    /// [`walk_schema`] of the object these keys came from, at `depth`.
    fn walk(&self, out: &mut DocFields, depth: usize) {
        use serde_json::Value;
        if let Some(Value::Object(props)) = self.properties {
            for (name, sub) in props {
                text::for_each_term(name, |t| out.push(Field::ParamName, t));
                let Value::Object(sub) = sub else {
                    continue;
                };
                let sub = SchemaKeys::of(sub);
                if let Some(Value::String(d)) = sub.description {
                    text::for_each_term(d, |t| out.push(Field::ParamDescription, t));
                }
                if let Some(Value::Array(values)) = sub.enumeration {
                    for v in values {
                        if let Value::String(s) = v {
                            text::for_each_term(s, |t| out.push(Field::ParamDescription, t));
                        }
                    }
                }
                if depth < 32 {
                    sub.walk(out, depth + 1);
                }
            }
        }
        if let Some(items) = self.items {
            walk_schema(items, out, depth + 1);
        }
        for alts in self.alternatives.iter().flatten() {
            if let Value::Array(alts) = alts {
                for alt in alts {
                    walk_schema(alt, out, depth + 1);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_adds_the_terms_name_terms_gives() {
        for name in [
            "get_weather",
            "weather",
            "fs__readFile",
            "math.factorial",
            "HTTPServer",
            "Weather",
            "sha256",
            "",
        ] {
            let mut fields = DocFields::default();
            fields.push_name(Field::Alias, name);
            let got: Vec<&str> = fields.terms(Field::Alias as usize).collect();
            assert_eq!(got, text::name_terms(name), "{name}");
        }
    }
}
