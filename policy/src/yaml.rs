//! YAML text to a tree that remembers where every node came from.
//!
//! The tree is built from the events of `granit-parser` (the parser under `serde-saphyr`),
//! because a typed `serde` deserializer forgets positions and we need them for every error.
//! Building the tree is also where YAML's own surprises are defused:
//!
//! * **Strict scalars.** Plain scalars follow the YAML 1.2 core schema, so `yes`, `no`, `on`
//!   and `off` stay strings and the schema later says "expected true or false".
//! * **Duplicate keys** are errors, not "last one wins".
//! * **One document** per file; tags other than `!!str` on a scalar are refused, and so are
//!   YAML 1.1 merge keys (`<<`).
//! * **Bounded aliases.** An alias is a copy of its anchored value, so aliases of aliases grow
//!   the tree exponentially ("billion laughs"), and nested anchors copy a value once per level;
//!   all the copies of one file together may hold at most [`MAX_ALIAS_NODES`] nodes and
//!   [`MAX_ALIAS_BYTES`] bytes of scalar text (a few aliases of one long string are few
//!   nodes but many bytes), checked before copying.
//!
//! Duplicate keys are found with a hash index per mapping, so a mapping of n keys costs O(n).
//!
//! Positions are 1-based lines and columns, counted in characters.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use serde_saphyr::granit_parser::{Event, Marker, Parser, ScalarStyle, ScanError, Span, Tag};

/// Where a node is: the diagnostics' own position type.
pub(crate) use crate::error::LineColumn as Pos;

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

/// How many nodes the anchors and aliases of one policy file may copy together (each anchored
/// value is copied once to be kept, and once per alias). Far more than any real policy needs;
/// an 8-line "billion laughs" file asks for about 10^9.
pub(crate) const MAX_ALIAS_NODES: usize = 100_000;

/// How many bytes of scalar text (keys and values) the anchors and aliases of one policy file
/// may copy together: as much as the largest policy file holds
/// ([`crate::MAX_POLICY_FILE_BYTES`]), so a policy expands to at most about twice its size.
pub(crate) const MAX_ALIAS_BYTES: usize = 16 * 1024 * 1024;

/// How much a node holds, copies included: nodes, and bytes of scalar text.
#[derive(Debug, Clone, Copy, Default)]
struct Size {
    nodes: usize,
    bytes: usize,
}

impl Size {
    fn add(self, other: Size) -> Size {
        Size {
            nodes: self.nodes.saturating_add(other.nodes),
            bytes: self.bytes.saturating_add(other.bytes),
        }
    }

    /// This size plus the collection node itself.
    fn and_one(self) -> Size {
        self.add(Size { nodes: 1, bytes: 0 })
    }
}

/// A YAML node and where it starts.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// Where the node is written; for a copy made by an alias, where the alias is written
    /// (and so for everything inside the copy).
    pub pos: Pos,
    pub kind: Kind,
    /// Whether the node is an alias (`*name`): errors about it belong at the alias, not at
    /// the key in front of it.
    pub aliased: bool,
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
    Map(Mapping),
}

/// A mapping: its entries in file order, and an index from key to entry.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mapping {
    pub entries: Vec<Entry>,
    index: HashMap<String, usize>,
}

/// One `key: value` pair of a mapping.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub key: String,
    pub key_pos: Pos,
    pub value: Node,
}

impl Entry {
    /// Where a problem with this entry's value is reported: at the key (`timeout: 5x` is
    /// reported at `timeout`), or at the alias when the value is one.
    pub fn value_pos(&self) -> Pos {
        if self.value.aliased {
            self.value.pos
        } else {
            self.key_pos
        }
    }
}

impl Node {
    /// The value under `key`, when this node is a mapping that has it.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        match &self.kind {
            Kind::Map(mapping) => mapping.index.get(key).map(|&i| &mapping.entries[i]),
            _ => None,
        }
    }

    /// The entries of a mapping; none for any other node.
    pub fn entries(&self) -> &[Entry] {
        match &self.kind {
            Kind::Map(mapping) => &mapping.entries,
            _ => &[],
        }
    }

    /// The items of a sequence; none for any other node.
    pub fn items(&self) -> &[Node] {
        match &self.kind {
            Kind::Seq(items) => items,
            _ => &[],
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
            Kind::Map(mapping) => {
                let mut map = Map::new();
                for e in &mapping.entries {
                    map.insert(e.key.clone(), e.value.to_json());
                }
                Value::Object(map)
            }
        }
    }
}

/// The problems found while reading the YAML: the first [`crate::MAX_DIAGNOSTICS`] (they are
/// found in file order, so these are the first by position), and how many more there were.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct YamlProblems {
    pub list: Vec<YamlProblem>,
    pub omitted: usize,
}

impl YamlProblems {
    fn push(&mut self, problem: YamlProblem) {
        if self.list.len() < crate::MAX_DIAGNOSTICS {
            self.list.push(problem);
        } else {
            self.omitted = self.omitted.saturating_add(1);
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
pub(crate) fn parse(text: &str) -> Result<Option<Node>, YamlProblems> {
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
    if builder.problems.list.is_empty() {
        Ok(builder.root)
    } else {
        builder.problems.list.sort_by_key(|p| p.pos);
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

/// A collection being read. `size` counts what is inside it so far, copies included.
enum Frame {
    Seq {
        pos: Pos,
        anchor: usize,
        items: Vec<Node>,
        size: Size,
    },
    Map {
        pos: Pos,
        anchor: usize,
        mapping: Mapping,
        size: Size,
        /// The key just read, waiting for its value.
        key: Option<(String, Pos)>,
        /// Set after a duplicate key (reported, not kept): its value is read and dropped.
        skip_value: bool,
    },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    /// Each anchored node, with how much it holds.
    anchors: HashMap<usize, (Node, Size)>,
    /// What anchors and aliases copied so far.
    copied: Size,
    root: Option<Node>,
    documents: u32,
    problems: YamlProblems,
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
                let size = Size {
                    nodes: 1,
                    bytes: text.len(),
                };
                self.complete(
                    Node {
                        pos,
                        kind,
                        aliased: false,
                    },
                    anchor,
                    size,
                )?;
            }
            Event::Alias(id) => {
                let size = self
                    .anchors
                    .get(&id)
                    .map(|(_, size)| *size)
                    .ok_or_else(|| YamlProblem {
                        pos,
                        message: "this alias refers to an anchor that is not defined before it"
                            .to_owned(),
                        kind: YamlProblemKind::Syntax,
                    })?;
                // Checked before copying: a billion laughs never gets allocated.
                self.charge(size, pos, "alias")?;
                // An alias copies the anchored value, but errors about the copy belong here.
                let Some((anchored, _)) = self.anchors.get(&id) else {
                    return Ok(());
                };
                let mut copy = anchored.clone();
                relocate(&mut copy, pos);
                copy.aliased = true;
                self.complete(copy, 0, size)?;
            }
            Event::SequenceStart(_, anchor, tag) => {
                check_collection_tag(tag.as_deref(), tag_pos)?;
                self.stack.push(Frame::Seq {
                    pos,
                    anchor,
                    items: Vec::new(),
                    size: Size::default(),
                });
            }
            Event::MappingStart(_, anchor, tag) => {
                check_collection_tag(tag.as_deref(), tag_pos)?;
                self.stack.push(Frame::Map {
                    pos,
                    anchor,
                    mapping: Mapping::default(),
                    size: Size::default(),
                    key: None,
                    skip_value: false,
                });
            }
            Event::SequenceEnd => {
                if let Some(Frame::Seq {
                    pos,
                    anchor,
                    items,
                    size,
                }) = self.stack.pop()
                {
                    self.complete(
                        Node {
                            pos,
                            kind: Kind::Seq(items),
                            aliased: false,
                        },
                        anchor,
                        size.and_one(),
                    )?;
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Map {
                    pos,
                    anchor,
                    mapping,
                    size,
                    ..
                }) = self.stack.pop()
                {
                    self.complete(
                        Node {
                            pos,
                            kind: Kind::Map(mapping),
                            aliased: false,
                        },
                        anchor,
                        size.and_one(),
                    )?;
                }
            }
            // Stream and document boundaries, comments and anchor metadata carry no data.
            _ => {}
        }
        Ok(())
    }

    /// Places a finished node of `size` nodes: as the root, as a list item, or as a mapping
    /// key or value.
    fn complete(&mut self, node: Node, anchor: usize, size: Size) -> Result<(), YamlProblem> {
        if anchor != 0 {
            // The anchored value is kept as a copy for its aliases; nested anchors would
            // otherwise copy a large value once per level.
            self.charge(size, node.pos, "anchored value")?;
            self.anchors.insert(anchor, (node.clone(), size));
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq {
                items,
                size: inside,
                ..
            }) => {
                *inside = inside.add(size);
                items.push(node);
            }
            Some(Frame::Map {
                mapping,
                size: inside,
                key,
                skip_value,
                ..
            }) => {
                *inside = inside.add(size);
                match key.take() {
                    Some((name, key_pos)) => {
                        mapping.index.insert(name.clone(), mapping.entries.len());
                        mapping.entries.push(Entry {
                            key: name,
                            key_pos,
                            value: node,
                        });
                    }
                    None if *skip_value => *skip_value = false,
                    None => {
                        let name = key_text(&node)?;
                        let problem = if is_merge_key(&node) {
                            Some(YamlProblem {
                                pos: node.pos,
                                message: "merge keys (`<<`) are YAML 1.1, not part of policy \
                                          files; write the keys out, or alias a whole value"
                                    .to_owned(),
                                kind: YamlProblemKind::Unsupported,
                            })
                        } else {
                            mapping.index.get(&name).map(|&first| YamlProblem {
                                pos: node.pos,
                                message: format!(
                                    "duplicate key {name:?} (first defined at line {}); each \
                                     key may appear once per mapping",
                                    mapping.entries[first].key_pos.line
                                ),
                                kind: YamlProblemKind::DuplicateKey,
                            })
                        };
                        match problem {
                            Some(problem) => {
                                self.problems.push(problem);
                                *skip_value = true;
                            }
                            None => *key = Some((name, node.pos)),
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl Builder {
    /// Counts a copy of `size` against [`MAX_ALIAS_NODES`] and [`MAX_ALIAS_BYTES`], or refuses
    /// it at `pos`.
    fn charge(&mut self, size: Size, pos: Pos, what: &str) -> Result<(), YamlProblem> {
        let total = self.copied.add(size);
        let limit = if total.nodes > MAX_ALIAS_NODES {
            Some(format!(
                "this {what} copies {} nodes, and the anchors and aliases of a policy may copy \
                 at most {MAX_ALIAS_NODES} together ({} so far)",
                size.nodes, self.copied.nodes
            ))
        } else if total.bytes > MAX_ALIAS_BYTES {
            Some(format!(
                "this {what} copies {} bytes of text, and the anchors and aliases of a policy \
                 may copy at most {MAX_ALIAS_BYTES} bytes (16 MiB) together ({} so far)",
                size.bytes, self.copied.bytes
            ))
        } else {
            None
        };
        if let Some(limit) = limit {
            return Err(YamlProblem {
                pos,
                message: format!(
                    "anchors and aliases copy too much: {limit}; write the value out or use \
                     fewer aliases"
                ),
                kind: YamlProblemKind::Unsupported,
            });
        }
        self.copied = total;
        Ok(())
    }
}

/// A plain `<<` key: YAML 1.1's merge key (a quoted `"<<"` is an ordinary key).
fn is_merge_key(node: &Node) -> bool {
    matches!(&node.kind, Kind::Str(s, ScalarStyle::Plain) if s == "<<") && !node.aliased
}

/// Moves a copy made by an alias, and everything in it, to the alias's position.
fn relocate(node: &mut Node, pos: Pos) {
    node.pos = pos;
    match &mut node.kind {
        Kind::Seq(items) => items.iter_mut().for_each(|item| relocate(item, pos)),
        Kind::Map(mapping) => {
            for entry in &mut mapping.entries {
                entry.key_pos = pos;
                relocate(&mut entry.value, pos);
            }
        }
        _ => {}
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

/// Collections take no tag at all, not even their own `!!map` or `!!seq`.
fn check_collection_tag(tag: Option<&Tag>, pos: Pos) -> Result<(), YamlProblem> {
    match tag {
        None => Ok(()),
        Some(tag) => Err(unsupported_tag(tag, pos)),
    }
}

fn unsupported_tag(tag: &Tag, pos: Pos) -> YamlProblem {
    YamlProblem {
        pos,
        message: format!(
            "unsupported YAML tag `{}`; policy files use no tags except !!str on a scalar",
            tag.original()
        ),
        kind: YamlProblemKind::Unsupported,
    }
}

/// Resolves a scalar by the YAML 1.2 core schema, minus its wider spellings of booleans:
/// only `true` and `false` are booleans (`True` and `TRUE` are strings, so the schema refuses
/// them where a boolean is expected).
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
        "true" => Kind::Bool(true),
        "false" => Kind::Bool(false),
        _ => resolve_number(text).unwrap_or_else(|| Kind::Str(text.to_owned(), style)),
    })
}

fn resolve_number(text: &str) -> Option<Kind> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits(unsigned) {
        // Too large for i64: keep it as a number anyway, the schema says what is wrong.
        return match text.parse::<i64>() {
            Ok(i) => Some(Kind::Int(i)),
            Err(_) => finite(text).map(Kind::Float),
        };
    }
    if let Some(hex) = text.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).ok().map(Kind::Int);
    }
    if let Some(oct) = text.strip_prefix("0o") {
        return i64::from_str_radix(oct, 8).ok().map(Kind::Int);
    }
    if is_decimal_float(unsigned) {
        return finite(text).map(Kind::Float);
    }
    None
}

/// The number, unless it overflows to infinity (`1e400`), which JSON cannot hold: such a
/// scalar stays a string, so an error about it shows it as written.
fn finite(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|f| f.is_finite())
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
        assert!(matches!(kind_of("false"), Kind::Bool(false)));
    }

    #[test]
    fn capitalised_true_and_false_are_strings() {
        for word in ["True", "TRUE", "False", "FALSE"] {
            assert!(
                matches!(kind_of(word), Kind::Str(ref s, _) if s == word),
                "{word}"
            );
        }
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
    fn numbers_too_large_for_a_float_stay_strings() {
        assert!(matches!(kind_of("1e400"), Kind::Str(ref s, _) if s == "1e400"));
        let digits = "9".repeat(400);
        assert!(matches!(kind_of(&digits), Kind::Str(ref s, _) if *s == digits));
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
