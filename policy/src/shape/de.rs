//! `serde` straight from the positioned tree: the policy's types are deserialized from the
//! [`Node`]s the YAML was read into, so every value knows where it was written.
//!
//! [`from_tree`] runs one deserialization inside a *loading context*: the policy file, its
//! directory, the trail of keys and items from the root to the value being read (each with
//! its position), and the problems found so far. The context lives in a thread-local for the
//! duration of that one call, because `serde` gives a type's `Deserialize` no other way to
//! learn where its value is. The value kinds use it through three functions:
//!
//! - [`checked`]: a conversion that can fail (a glob that does not compile, a script file that
//!   cannot be read) reports its problem at the value's line and column, under the value's key
//!   path (`rules.deny[0].args.path: ...`), and deserialization *goes on*, so every such
//!   problem in the file is reported in one pass; the value read is a stand-in that is never
//!   used, since the load then fails;
//! - [`resolve`]: a relative path is resolved against the policy file's directory;
//! - [`here`] and [`key`]: where the mapping or item being read is, and the key it is under
//!   (for fields such as `position`, which the file does not write).
//!
//! Outside [`from_tree`] (a test deserializing a type from JSON, say) there is no context:
//! [`checked`] returns the error, [`resolve`] keeps the path as written and [`here`] is `None`.
//!
//! The tree is schema-valid when it gets here, so a type mismatch is a disagreement between
//! the types and the schema (the `schema_generated` test rules it out); it is still reported
//! at the value it concerns, with its path.

use std::cell::RefCell;
use std::fmt::{self, Display};
use std::path::{Path, PathBuf};

use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;

use crate::error::{Diagnostic, DiagnosticKind, Diagnostics};
use serde_saphyr::granit_parser::ScalarStyle;

use crate::yaml::{Entry, Kind, Node, Pos};

/// The largest whole number JSON tools read exactly (2^53 - 1): the upper bound of counts.
pub(crate) const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// One step from the root to the value being read.
enum Step {
    Root,
    Key(String),
    Index(usize),
}

/// A step, where a problem with its value is reported (the key, or the alias when the value
/// is one; the item itself in a list), and where the entry starts (the key; the item).
struct Frame {
    step: Step,
    report: Pos,
    anchor: Pos,
    /// The value's own position and, for a string, how it was written (for inline scripts,
    /// whose code's lines and columns map into the policy file).
    scalar: Option<(Pos, ScalarStyle)>,
}

struct Context {
    file: PathBuf,
    dir: PathBuf,
    trail: Vec<Frame>,
    problems: Diagnostics,
}

thread_local! {
    static CONTEXT: RefCell<Option<Context>> = const { RefCell::new(None) };
}

/// Deserializes `T` from `root`, the tree of the policy file `file`: the value, or every
/// problem found, each at its line and column.
pub(crate) fn from_tree<T: de::DeserializeOwned>(
    root: &Node,
    file: &Path,
) -> Result<T, Diagnostics> {
    let dir = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let context = Context {
        file: file.to_path_buf(),
        dir,
        trail: vec![Frame {
            step: Step::Root,
            report: root.pos,
            anchor: root.pos,
            scalar: None,
        }],
        problems: Diagnostics::default(),
    };
    // Restores the previous context (none, unless a load runs inside a load) even on panic.
    struct Installed(Option<Context>);
    impl Drop for Installed {
        fn drop(&mut self) {
            let previous = self.0.take();
            CONTEXT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let installed = Installed(CONTEXT.with(|c| c.borrow_mut().replace(context)));
    let result = T::deserialize(NodeDe(root));
    let context = CONTEXT.with(|c| c.borrow_mut().take());
    drop(installed);
    let mut problems = context.map(|c| c.problems).unwrap_or_default();
    match result {
        Ok(value) if problems.is_empty() => Ok(value),
        Ok(_) => Err(problems),
        Err(error) => {
            let (pos, path) = error.at.unwrap_or((root.pos, String::new()));
            problems.push(Diagnostic {
                file: file.to_path_buf(),
                at: Some(pos),
                message: format!(
                    "{}the policy does not fit the policy's types: {}",
                    prefix(&path),
                    error.message
                ),
                kind: DiagnosticKind::Schema {
                    keyword: "type".to_owned(),
                },
            });
            Err(problems)
        }
    }
}

/// The value of a conversion, or `None` when it failed and the failure was reported at the
/// value being read (the load then fails). Without a loading context, the failure is the
/// error.
///
/// # Errors
///
/// `E` as a deserialization error, when no policy is being loaded.
pub(crate) fn checked<T, P: Display, E: de::Error>(
    conversion: Result<T, P>,
    kind: DiagnosticKind,
) -> Result<Option<T>, E> {
    let problem = match conversion {
        Ok(value) => return Ok(Some(value)),
        Err(problem) => problem,
    };
    let reported = CONTEXT.with(|c| match c.borrow_mut().as_mut() {
        Some(context) => {
            let message = format!("{}{problem}", prefix(&context.path()));
            let at = context.trail.last().map(|f| f.report);
            context.problems.push(Diagnostic {
                file: context.file.clone(),
                at,
                message,
                kind,
            });
            true
        }
        None => false,
    });
    if reported {
        Ok(None)
    } else {
        Err(E::custom(problem))
    }
}

/// `path` resolved against the policy file's directory (as written when it is absolute, or
/// when no policy is being loaded).
pub(crate) fn resolve(path: &str) -> PathBuf {
    let written = Path::new(path);
    if written.is_absolute() {
        return written.to_path_buf();
    }
    CONTEXT.with(|c| match c.borrow().as_ref() {
        Some(context) => context.dir.join(written),
        None => written.to_path_buf(),
    })
}

/// The policy file's directory (`.` when no policy is being loaded).
pub(crate) fn policy_dir() -> PathBuf {
    CONTEXT.with(|c| {
        c.borrow()
            .as_ref()
            .map_or_else(|| PathBuf::from("."), |context| context.dir.clone())
    })
}

/// The policy file, and where the mapping or list item being read starts: its key, or the
/// item. For a field the file does not write, such as a rule's position.
pub(crate) fn here() -> Option<(PathBuf, Pos)> {
    CONTEXT.with(|c| {
        let context = c.borrow();
        let context = context.as_ref()?;
        let frame = context.trail.last()?;
        Some((context.file.clone(), frame.anchor))
    })
}

/// Where the string being read is written, and in which style (plain, quoted, block).
pub(crate) fn scalar_here() -> Option<(Pos, ScalarStyle)> {
    CONTEXT.with(|c| c.borrow().as_ref()?.trail.last()?.scalar)
}

fn scalar(node: &Node) -> Option<(Pos, ScalarStyle)> {
    match &node.kind {
        Kind::Str(_, style) => Some((node.pos, *style)),
        _ => None,
    }
}

/// The key the mapping being read is under (`fs.*` for `tools: {"fs.*": {...}}`).
pub(crate) fn key() -> Option<String> {
    CONTEXT.with(|c| {
        let context = c.borrow();
        match &context.as_ref()?.trail.last()?.step {
            Step::Key(key) => Some(key.clone()),
            Step::Root | Step::Index(_) => None,
        }
    })
}

impl Context {
    /// `dispatch.timeout`, `tools."fs.*".rules.deny[0].args`.
    fn path(&self) -> String {
        let mut out = String::new();
        for frame in &self.trail {
            match &frame.step {
                Step::Root => {}
                Step::Index(i) => out.push_str(&format!("[{i}]")),
                Step::Key(key) => out = join_key(&out, key),
            }
        }
        out
    }
}

/// `parent.key`, quoting a key that is not a plain word (`tools."fs.*"`).
pub(crate) fn join_key(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if plain {
        key.to_owned()
    } else {
        format!("{key:?}")
    };
    if parent.is_empty() {
        key
    } else {
        format!("{parent}.{key}")
    }
}

fn prefix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("{path}: ")
    }
}

/// While it lives, `frame` is the last step of the trail.
struct Enter;

impl Enter {
    fn new(frame: Frame) -> Enter {
        CONTEXT.with(|c| {
            if let Some(context) = c.borrow_mut().as_mut() {
                context.trail.push(frame);
            }
        });
        Enter
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        CONTEXT.with(|c| {
            if let Some(context) = c.borrow_mut().as_mut() {
                context.trail.pop();
            }
        });
    }
}

/// A deserialization error: its message, and where it happened (the value being read when it
/// was made) and that value's path.
#[derive(Debug)]
pub(crate) struct DeError {
    message: String,
    at: Option<(Pos, String)>,
}

impl Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: Display>(message: T) -> Self {
        let at = CONTEXT.with(|c| {
            let context = c.borrow();
            let context = context.as_ref()?;
            Some((context.trail.last()?.report, context.path()))
        });
        DeError {
            message: message.to_string(),
            at,
        }
    }
}

/// A whole number written as a float (`5.0`, `1e3`), which JSON Schema also counts as an
/// integer; the schema has bounded it to at most 2^53 - 1, up to which a float is exact.
fn whole(f: f64) -> Option<i64> {
    // Exact: |f| <= 2^53 - 1 fits an i64 with no rounding.
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    (f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64).then_some(f as i64)
}

struct NodeDe<'a>(&'a Node);

impl<'de> Deserializer<'de> for NodeDe<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.kind {
            Kind::Null => visitor.visit_unit(),
            Kind::Bool(b) => visitor.visit_bool(*b),
            Kind::Int(i) => visitor.visit_i64(*i),
            Kind::Float(f) => visitor.visit_f64(*f),
            Kind::Str(s, _) => visitor.visit_str(s),
            Kind::Seq(items) => visitor.visit_seq(SeqDe {
                items: items.iter().enumerate(),
            }),
            Kind::Map(_) => visitor.visit_map(MapDe {
                entries: self.0.entries().iter(),
                current: None,
            }),
        }
    }

    /// A number asked for as an integer may be a whole float.
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.kind {
            Kind::Float(f) => match whole(*f) {
                Some(i) => visitor.visit_i64(i),
                None => visitor.visit_f64(*f),
            },
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0.kind {
            Kind::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    /// Unit variants, written as their names (`on_error: fail`).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match &self.0.kind {
            Kind::Str(s, _) => {
                let name: StrDeserializer<'_, DeError> = s.as_str().into_deserializer();
                visitor.visit_enum(name)
            }
            _ => self.deserialize_any(visitor),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i128 u8 u16 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

struct SeqDe<'a> {
    items: std::iter::Enumerate<std::slice::Iter<'a, Node>>,
}

impl<'de> de::SeqAccess<'de> for SeqDe<'_> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        let Some((i, item)) = self.items.next() else {
            return Ok(None);
        };
        let _entered = Enter::new(Frame {
            step: Step::Index(i),
            report: item.pos,
            anchor: item.pos,
            scalar: scalar(item),
        });
        seed.deserialize(NodeDe(item)).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct MapDe<'a> {
    entries: std::slice::Iter<'a, Entry>,
    current: Option<&'a Entry>,
}

impl<'de> de::MapAccess<'de> for MapDe<'_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        self.current = Some(entry);
        let _entered = Enter::new(Frame {
            step: Step::Key(entry.key.clone()),
            report: entry.key_pos,
            anchor: entry.key_pos,
            scalar: None,
        });
        let key: StrDeserializer<'_, DeError> = entry.key.as_str().into_deserializer();
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let Some(entry) = self.current.take() else {
            return Err(de::Error::custom("a value without its key"));
        };
        let _entered = Enter::new(Frame {
            step: Step::Key(entry.key.clone()),
            report: entry.value_pos(),
            anchor: entry.key_pos,
            scalar: scalar(&entry.value),
        });
        seed.deserialize(NodeDe(&entry.value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde::Deserialize;

    use super::from_tree;
    use crate::yaml;

    #[derive(Debug, Deserialize)]
    struct Section {
        #[expect(dead_code, reason = "read to see that it fails")]
        count: u32,
    }

    #[derive(Debug, Deserialize)]
    struct Root {
        #[expect(dead_code, reason = "read to see that it fails")]
        section: Section,
    }

    #[test]
    fn a_value_the_types_do_not_expect_is_reported_at_its_key_with_its_path() {
        let tree = yaml::parse("section:\n  count: many\n")
            .ok()
            .flatten()
            .expect("a tree");
        let problems = from_tree::<Root>(&tree, Path::new("p.yaml")).expect_err("a string");
        let text = problems.into_error().to_string();
        assert!(
            text.starts_with(
                "p.yaml:2:3: section.count: the policy does not fit the policy's types: invalid type: string \"many\""
            ),
            "{text}"
        );
    }

    #[test]
    fn a_whole_float_is_read_as_an_integer() {
        #[derive(Deserialize)]
        struct Count {
            count: u32,
        }
        let tree = yaml::parse("count: 5.0\n").ok().flatten().expect("a tree");
        let read = from_tree::<Count>(&tree, Path::new("p.yaml")).map(|c| c.count);
        assert_eq!(read.ok(), Some(5));
    }
}
