//! Tool documents and the JSON Lines catalog format.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

/// Everything the index knows about one tool.
///
/// Only `name` is required to be non-empty; every other field may be empty
/// and simply contributes no terms.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolDoc {
    /// The unique tool name, as the model will call it.
    pub name: String,
    /// Free-text description shown to the model.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of the arguments. Property names and descriptions
    /// (nested ones and array `items` too) are indexed.
    #[serde(default = "empty_object")]
    pub parameters: serde_json::Value,
    /// Other names the tool is known by.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Extra search words given by whoever registered the tool.
    #[serde(default)]
    pub keywords: Vec<String>,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

impl ToolDoc {
    /// A tool with a name and description and no parameters.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> ToolDoc {
        ToolDoc {
            name: name.into(),
            description: description.into(),
            parameters: empty_object(),
            aliases: Vec::new(),
            keywords: Vec::new(),
        }
    }
}

/// A catalog read for indexing ([`Catalog::read_jsonl`], then
/// [`SearchIndex::build_catalog`](crate::SearchIndex::build_catalog)): each tool's text, and
/// its parameter schema as the JSON text of its line rather than a parsed
/// [`serde_json::Value`] (a parsed schema takes several times the memory of
/// its text). The schema is parsed when the tool is indexed, one tool at a
/// time, so the index holds exactly what [`ToolDoc`]s read from the same
/// lines would give it.
#[derive(Debug, Default)]
pub struct Catalog {
    pub(crate) tools: Vec<CatalogTool>,
}

/// One tool of a [`Catalog`]: a [`ToolDoc`] whose schema is still JSON text.
#[derive(Debug, Deserialize)]
pub(crate) struct CatalogTool {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    /// The schema's JSON text as written in the catalog; `None` if the line
    /// has no `parameters` (an empty object, as for a [`ToolDoc`]).
    #[serde(default, deserialize_with = "present")]
    pub(crate) parameters: Option<Box<RawValue>>,
    #[serde(default)]
    pub(crate) aliases: Vec<String>,
    #[serde(default)]
    pub(crate) keywords: Vec<String>,
}

/// A key that is present, even as `null` (which `Option` alone reads as absent).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

impl CatalogTool {
    /// The schema parsed, as a [`ToolDoc`] read from the same line holds it.
    pub(crate) fn parameters(&self) -> serde_json::Value {
        match &self.parameters {
            None => empty_object(),
            // The text was checked to be JSON when the line was read, and
            // parsing on its own allows it more nesting than it had inside
            // the line, so this does not fail; were it to, the tool would
            // only lose its parameter terms.
            Some(raw) => serde_json::from_str(raw.get()).unwrap_or(serde_json::Value::Null),
        }
    }
}

impl Catalog {
    /// Reads a catalog in JSON Lines form, as [`read_catalog_jsonl`] does
    /// (same lines accepted, same errors), one line at a time.
    pub fn read_jsonl(path: &Path) -> Result<Catalog, CatalogError> {
        let io = |source| CatalogError::Io {
            path: path.to_path_buf(),
            source,
        };
        let reader = BufReader::new(File::open(path).map_err(io)?);
        Ok(Catalog {
            tools: read_lines(reader, path)?,
        })
    }

    /// Adds the tools of `other` after these.
    pub fn append(&mut self, other: Catalog) {
        self.tools.extend(other.tools);
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// An error reading a catalog file. Every variant names the file; parse
/// errors also name the 1-based line. `Display` does not repeat the cause:
/// it is the [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The file could not be opened or read.
    #[error("cannot read catalog {path}")]
    Io {
        /// The catalog file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A line is not a JSON object with at least a string `name`.
    #[error("{path}:{line}: not a tool document")]
    Parse {
        /// The catalog file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What serde_json did not like.
        #[source]
        source: serde_json::Error,
    },
}

/// Reads a catalog in JSON Lines form: one tool document per line, at least
/// `{"name": ..}` and usually `"description"` and `"parameters"`; `aliases`
/// and `keywords` are optional, unknown keys are ignored. Blank lines are
/// skipped.
pub fn read_catalog_jsonl(path: &Path) -> Result<Vec<ToolDoc>, CatalogError> {
    let io = |source| CatalogError::Io {
        path: path.to_path_buf(),
        source,
    };
    let reader = BufReader::new(File::open(path).map_err(io)?);
    read_catalog_jsonl_from(reader, path)
}

/// Reads a catalog in JSON Lines form from `reader` (text already read, say); `path` names it
/// in errors. See [`read_catalog_jsonl`].
pub fn read_catalog_jsonl_from(
    reader: impl BufRead,
    path: &Path,
) -> Result<Vec<ToolDoc>, CatalogError> {
    read_lines(reader, path)
}

/// Each non-blank line of `reader` read as a `T`, into one buffer reused
/// from line to line.
fn read_lines<T: serde::de::DeserializeOwned>(
    mut reader: impl BufRead,
    path: &Path,
) -> Result<Vec<T>, CatalogError> {
    let io = |source| CatalogError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut docs = Vec::new();
    let mut line = String::new();
    for i in 0.. {
        line.clear();
        if reader.read_line(&mut line).map_err(io)? == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let doc = serde_json::from_str(&line).map_err(|source| CatalogError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            source,
        })?;
        docs.push(doc);
    }
    Ok(docs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn catalog_lines_become_tool_docs() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(
            f,
            r#"{{"name":"a","description":"first","parameters":{{"type":"object"}}}}"#
        )
        .unwrap();
        writeln!(f).unwrap();
        writeln!(
            f,
            r#"{{"name":"b","aliases":["bee"],"category":"ignored"}}"#
        )
        .unwrap();
        let docs = read_catalog_jsonl(f.path()).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].description, "first");
        assert_eq!(docs[1].aliases, ["bee"]);
    }

    #[test]
    fn catalog_parse_error_names_file_and_line() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, r#"{{"name":"a"}}"#).unwrap();
        writeln!(f, r#"{{"description":"no name"}}"#).unwrap();
        let err = read_catalog_jsonl(f.path()).unwrap_err().to_string();
        assert!(err.contains(&format!("{}:2:", f.path().display())), "{err}");
    }

    #[test]
    fn a_catalog_with_schemas_as_text_refuses_the_lines_tool_docs_refuse() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, r#"{{"name":"a","parameters":{{"type":"object"}}}}"#).unwrap();
        writeln!(f).unwrap();
        writeln!(f, r#"{{"name":"b","parameters":{{"type":}}}}"#).unwrap();
        let err = Catalog::read_jsonl(f.path()).unwrap_err().to_string();
        assert!(err.contains(&format!("{}:3:", f.path().display())), "{err}");
    }

    #[test]
    fn missing_catalog_is_an_io_error_naming_the_file() {
        let err = read_catalog_jsonl(Path::new("/nonexistent/cat.jsonl")).unwrap_err();
        assert!(matches!(err, CatalogError::Io { .. }));
        assert!(err.to_string().contains("/nonexistent/cat.jsonl"));
    }
}
