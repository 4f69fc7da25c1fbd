//! YAML text to a tree that remembers where every node came from.
//!
//! The tree is built from the events of `granit-parser` (the parser under `serde-saphyr`),
//! because a typed `serde` deserializer forgets positions and we need them for every error.
//! Building the tree is also where YAML's own surprises are defused:
//!
//! * **Strict scalars.** Plain scalars follow the YAML 1.2 core schema, so `yes`, `no`, `on`
//!   and `off` stay strings and the schema later says "expected true or false".
//! * **Duplicate keys** are errors, not "last one wins".
//! * **One document** per file; tags other than `!!str` are refused.
//!
//! Positions are 1-based lines and columns, counted in characters.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use serde_saphyr::granit_parser::{Event, Marker, Parser, ScalarStyle, ScanError, Span, Tag};

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Pos {
    pub line: u32,
    pub column: u32,
}

impl Pos {
    fn from_marker(marker: &Marker) -> Pos {
        Pos {
            line: saturate(marker.line().max(1)),
            column: saturate(marker.col().saturating_add(1)),
        }
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A YAML node and where it starts.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub pos: Pos,
    pub kind: Kind,
}

/// What a node holds, already resolved to JSON-like types.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// A string, with the style it was written in (block scalars start on the next line).
    Str(String, ScalarStyle),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

/// One `key: value` pair of a mapping.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub key: String,
    pub key_pos: Pos,
    pub value: Node,
}

impl Node {
    /// The value under `key`, when this node is a mapping that has it.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        match &self.kind {
            Kind::Map(entries) => entries.iter().find(|e| e.key == key),
            _ => None,
        }
    }

    /// The node as JSON, for schema validation and for plugin configuration.
    pub fn to_json(&self) -> Value {
        match &self.kind {
            Kind::Null => Value::Null,
            Kind::Bool(b) => Value::Bool(*b),
            Kind::Int(i) => Value::Number(Number::from(*i)),
            Kind::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Kind::Str(s, _) => Value::String(s.clone()),
            Kind::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Kind::Map(entries) => {
                let mut map = Map::new();
                for e in entries {
                    map.insert(e.key.clone(), e.value.to_json());
                }
                Value::Object(map)
            }
        }
    }
}

/// A problem found while reading the YAML itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct YamlProblem {
    pub pos: Pos,
    pub message: String,
    pub kind: YamlProblemKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum YamlProblemKind {
    Syntax,
    DuplicateKey,
    Unsupported,
}

/// Parses `text` into a positioned tree. `Ok(None)` means the file holds no document at all.
///
/// A syntax error stops parsing (the parser cannot recover), so it comes alone; duplicate keys
/// and unsupported constructs are all collected.
pub(crate) fn parse(text: &str) -> Result<Option<Node>, Vec<YamlProblem>> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(text);
    while let Some(next) = parser.next_event() {
        match next {
            Ok((event, span)) => {
                if let Err(problem) = builder.event(event, span) {
                    builder.problems.push(problem);
                    break;
                }
            }
            Err(error) => {
                builder.problems.push(syntax_problem(&error));
                break;
            }
        }
    }
    if builder.problems.is_empty() {
        Ok(builder.root)
    } else {
        builder.problems.sort_by_key(|p| p.pos);
        Err(builder.problems)
    }
}

fn syntax_problem(error: &ScanError) -> YamlProblem {
    let info = error.info();
    YamlProblem {
        pos: Pos::from_marker(error.marker()),
        message: if info.is_empty() {
            "invalid YAML".to_owned()
        } else {
            format!("invalid YAML: {info}")
        },
        kind: YamlProblemKind::Syntax,
    }
}

enum Frame {
    Seq {
        pos: Pos,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        pos: Pos,
        anchor: usize,
        entries: Vec<Entry>,
        /// The key just read, waiting for its value.
        key: Option<(String, Pos)>,
        /// Set after a duplicate key (reported, not kept): its value is read and dropped.
        skip_value: bool,
    },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    root: Option<Node>,
    documents: u32,
    problems: Vec<YamlProblem>,
}

impl Builder {
    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), YamlProblem> {
        let pos = Pos::from_marker(&span.start);
        // Where a tag is written, for errors about it (it may precede the node's content).
        let tag_pos = span.tag_start.as_ref().map_or(pos, Pos::from_marker);
        match event {
            Event::DocumentStart(..) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(YamlProblem {
                        pos,
                        message: "a policy file holds a single YAML document; remove this `---` \
                                  and what follows, or move it to its own file"
                            .to_owned(),
                        kind: YamlProblemKind::Unsupported,
                    });
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let kind = resolve_scalar(&text, style, tag.as_deref(), tag_pos)?;
                self.complete(Node { pos, kind }, anchor)?;
            }
            Event::Alias(id) => {
                let node = self.anchors.get(&id).cloned().ok_or_else(|| YamlProblem {
                    pos,
                    message: "this alias refers to an anchor that is not defined before it"
                        .to_owned(),
                    kind: YamlProblemKind::Syntax,
                })?;
                // An alias points at the anchored value, but errors about it belong here.
                self.complete(
                    Node {
                        pos,
                        kind: node.kind,
                    },
                    0,
                )?;
            }
            Event::SequenceStart(_, anchor, tag) => {
                check_collection_tag(tag.as_deref(), "seq", tag_pos)?;
                self.stack.push(Frame::Seq {
                    pos,
                    anchor,
                    items: Vec::new(),
                });
            }
            Event::MappingStart(_, anchor, tag) => {
                check_collection_tag(tag.as_deref(), "map", tag_pos)?;
                self.stack.push(Frame::Map {
                    pos,
                    anchor,
                    entries: Vec::new(),
                    key: None,
                    skip_value: false,
                });
            }
            Event::SequenceEnd => {
                if let Some(Frame::Seq { pos, anchor, items }) = self.stack.pop() {
                    self.complete(
                        Node {
                            pos,
                            kind: Kind::Seq(items),
                        },
                        anchor,
                    )?;
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Map {
                    pos,
                    anchor,
                    entries,
                    ..
                }) = self.stack.pop()
                {
                    self.complete(
                        Node {
                            pos,
                            kind: Kind::Map(entries),
                        },
                        anchor,
                    )?;
                }
            }
            // Stream and document boundaries, comments and anchor metadata carry no data.
            _ => {}
        }
        Ok(())
    }

    /// Places a finished node: as the root, as a list item, or as a mapping key or value.
    fn complete(&mut self, node: Node, anchor: usize) -> Result<(), YamlProblem> {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                key,
                skip_value,
                ..
            }) => match key.take() {
                Some((name, key_pos)) => entries.push(Entry {
                    key: name,
                    key_pos,
                    value: node,
                }),
                None if *skip_value => *skip_value = false,
                None => {
                    let name = key_text(&node)?;
                    if let Some(first) = entries.iter().find(|e| e.key == name) {
                        self.problems.push(YamlProblem {
                            pos: node.pos,
                            message: format!(
                                "duplicate key {name:?} (first defined at line {}); each key may \
                                 appear once per mapping",
                                first.key_pos.line
                            ),
                            kind: YamlProblemKind::DuplicateKey,
                        });
                        *skip_value = true;
                    } else {
                        *key = Some((name, node.pos));
                    }
                }
            },
        }
        Ok(())
    }
}

/// The text of a mapping key. Keys are scalars; their text is used as written (`1` is "1").
fn key_text(node: &Node) -> Result<String, YamlProblem> {
    match &node.kind {
        Kind::Str(s, _) => Ok(s.clone()),
        Kind::Int(i) => Ok(i.to_string()),
        Kind::Float(f) => Ok(f.to_string()),
        Kind::Bool(b) => Ok(b.to_string()),
        Kind::Null => Ok("null".to_owned()),
        Kind::Seq(_) | Kind::Map(_) => Err(YamlProblem {
            pos: node.pos,
            message: "a mapping key must be a plain name, not a list or a mapping".to_owned(),
            kind: YamlProblemKind::Unsupported,
        }),
    }
}

fn check_collection_tag(tag: Option<&Tag>, expected: &str, pos: Pos) -> Result<(), YamlProblem> {
    match tag {
        None => Ok(()),
        Some(tag) if tag.is_yaml_core_schema_tag(expected) => Ok(()),
        Some(tag) => Err(unsupported_tag(tag, pos)),
    }
}

fn unsupported_tag(tag: &Tag, pos: Pos) -> YamlProblem {
    YamlProblem {
        pos,
        message: format!(
            "unsupported YAML tag `{}`; policy files use no tags except !!str",
            tag.original()
        ),
        kind: YamlProblemKind::Unsupported,
    }
}

/// Resolves a scalar by the YAML 1.2 core schema, minus its wider spellings of booleans:
/// only `true` and `false` (any case as the schema allows: `True`, `TRUE`) are booleans.
fn resolve_scalar(
    text: &str,
    style: ScalarStyle,
    tag: Option<&Tag>,
    tag_pos: Pos,
) -> Result<Kind, YamlProblem> {
    if let Some(tag) = tag {
        return if tag.is_yaml_core_schema_tag("str") {
            Ok(Kind::Str(text.to_owned(), style))
        } else {
            Err(unsupported_tag(tag, tag_pos))
        };
    }
    if style != ScalarStyle::Plain {
        return Ok(Kind::Str(text.to_owned(), style));
    }
    Ok(match text {
        "" | "~" | "null" | "Null" | "NULL" => Kind::Null,
        "true" | "True" | "TRUE" => Kind::Bool(true),
        "false" | "False" | "FALSE" => Kind::Bool(false),
        _ => resolve_number(text).unwrap_or_else(|| Kind::Str(text.to_owned(), style)),
    })
}

fn resolve_number(text: &str) -> Option<Kind> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits(unsigned) {
        // Too large for i64: keep it as a number anyway, the schema says what is wrong.
        return Some(match text.parse::<i64>() {
            Ok(i) => Kind::Int(i),
            Err(_) => Kind::Float(text.parse::<f64>().ok()?),
        });
    }
    if let Some(hex) = text.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).ok().map(Kind::Int);
    }
    if let Some(oct) = text.strip_prefix("0o") {
        return i64::from_str_radix(oct, 8).ok().map(Kind::Int);
    }
    if is_decimal_float(unsigned) {
        return text.parse::<f64>().ok().map(Kind::Float);
    }
    None
}

/// `1.5`, `.5`, `1.`, `1e3`, `1.5E-3`: the core schema's float form (not `.inf`/`.nan`,
/// which JSON cannot hold; they stay strings).
fn is_decimal_float(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int_part, frac_part) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = all_digits(int_part)
        && frac_part.is_none_or(all_digits)
        && (!int_part.is_empty() || frac_part.is_some_and(|f| !f.is_empty()));
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && all_digits(e)
    });
    mantissa_ok && exponent_ok && (frac_part.is_some() || exponent.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(text: &str) -> Kind {
        match parse(&format!("k: {text}\n")) {
            Ok(Some(node)) => match node.get("k") {
                Some(entry) => entry.value.kind.clone(),
                None => panic!("no key k"),
            },
            other => panic!("unexpected parse result {other:?}"),
        }
    }

    #[test]
    fn yes_no_on_off_are_strings() {
        for word in ["yes", "no", "on", "off", "Yes", "NO"] {
            assert!(
                matches!(kind_of(word), Kind::Str(ref s, _) if s == word),
                "{word}"
            );
        }
    }

    #[test]
    fn true_and_false_are_booleans() {
        assert!(matches!(kind_of("true"), Kind::Bool(true)));
        assert!(matches!(kind_of("False"), Kind::Bool(false)));
    }

    #[test]
    fn numbers_resolve_by_the_core_schema() {
        assert!(matches!(kind_of("-2"), Kind::Int(-2)));
        assert!(matches!(kind_of("0x10"), Kind::Int(16)));
        assert!(matches!(kind_of("1.5"), Kind::Float(f) if f == 1.5));
        assert!(matches!(kind_of("1e3"), Kind::Float(f) if f == 1000.0));
        assert!(matches!(kind_of("30s"), Kind::Str(..)));
        assert!(matches!(kind_of(".inf"), Kind::Str(..)));
    }

    #[test]
    fn quoted_numbers_are_strings() {
        assert!(matches!(kind_of("\"42\""), Kind::Str(ref s, _) if s == "42"));
    }

    #[test]
    fn empty_values_are_null() {
        assert!(matches!(kind_of(""), Kind::Null));
        assert!(matches!(kind_of("~"), Kind::Null));
    }

    #[test]
    fn positions_are_one_based() {
        let root = parse("a:\n  bb: 1\n").ok().flatten().expect("a document");
        let a = root.get("a").expect("a");
        assert_eq!(a.key_pos, Pos { line: 1, column: 1 });
        let bb = a.value.get("bb").expect("bb");
        assert_eq!(bb.key_pos, Pos { line: 2, column: 3 });
        assert_eq!(bb.value.pos, Pos { line: 2, column: 7 });
    }

    #[test]
    fn aliases_copy_the_anchored_value() {
        let root = parse("a: &x [1, 2]\nb: *x\n")
            .ok()
            .flatten()
            .expect("a document");
        let b = root.get("b").expect("b");
        assert_eq!(b.value.to_json(), serde_json::json!([1, 2]));
    }
}
