//! Tool documents and the JSON Lines catalog format.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
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
/// its text). When the tool is indexed, its schema is read from that text
/// (parsed only if the text is not what serde_json would print), one tool at
/// a time, so the index holds exactly what [`ToolDoc`]s read from the same
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
    /// (same lines accepted, same errors), one line at a time. A large file
    /// is read in as many parts as there are cores (up to eight), each on a
    /// thread of its own; the tools keep the file's order, and an error is
    /// the one a reading from the start would meet first.
    pub fn read_jsonl(path: &Path) -> Result<Catalog, CatalogError> {
        let io = |source| CatalogError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let parts = parts_for(len);
        if parts == 1 {
            return Ok(Catalog {
                tools: read_lines(BufReader::new(file), path)?,
            });
        }
        drop(file);
        read_in_parts(path, len, parts)
    }
    /// Adds the tools of `other` after these.
    pub fn append(&mut self, other: Catalog) {
        if self.tools.is_empty() {
            // The first catalog read becomes this one, not a copy of it.
            self.tools = other.tools;
            return;
        }
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

/// Reads the catalog at `path` (`len` bytes) in `parts` parts of about equal size, each on a
/// thread of its own, as [`read_lines`] reads the whole: the tools in the file's order, and the
/// error met first from the start.
fn read_in_parts(path: &Path, len: u64, parts: u64) -> Result<Catalog, CatalogError> {
    let io = |source| CatalogError::Io {
        path: path.to_path_buf(),
        source,
    };
    let parts = parts.max(1);
    let bounds: Vec<u64> = (0..=parts).map(|k| len * k / parts).collect();
    let read: Vec<Part> = std::thread::scope(|scope| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| scope.spawn(move || read_part(path, w[0], w[1])))
            .collect();
        crate::threads::join_resuming(handles)
    });
    let mut tools = Vec::with_capacity(read.iter().map(|p| p.tools.len()).sum());
    // Lines of the parts before this one.
    let mut before = 0;
    for part in read {
        match part.error {
            Some(PartError::Io(source)) => return Err(io(source)),
            Some(PartError::Line { line, error }) => return Err(error.at(path, before + line)),
            None => {}
        }
        before += part.lines;
        tools.extend(part.tools);
    }
    Ok(Catalog { tools })
}

/// How many threads read a catalog file of `len` bytes: one below 4 MiB, else one per core
/// (up to eight).
fn parts_for(len: u64) -> u64 {
    if len < 4 << 20 {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |p| p.get().min(8) as u64)
    }
}

/// What one thread read of a catalog file: the tools of the lines that start in its part, how
/// many lines those were, and the error that stopped it, if one did.
struct Part {
    tools: Vec<CatalogTool>,
    lines: usize,
    error: Option<PartError>,
}

/// Why a part stopped early; a bad line is counted from the part's first line (1).
enum PartError {
    Io(std::io::Error),
    Line { line: usize, error: LineError },
}

/// Reads the lines of the catalog at `path` that start at or after byte `start` and before
/// byte `end`, as [`read_lines`] does.
fn read_part(path: &Path, start: u64, end: u64) -> Part {
    let mut part = Part {
        tools: Vec::new(),
        lines: 0,
        error: None,
    };
    if let Err(e) = read_part_into(path, start, end, &mut part) {
        part.error = Some(e);
    }
    part
}

fn read_part_into(path: &Path, start: u64, end: u64, part: &mut Part) -> Result<(), PartError> {
    let mut file = File::open(path).map_err(PartError::Io)?;
    // A line starts the part if the byte before it ends a line: skip to the first such line
    // at or after `start`.
    let mut at = start.saturating_sub(1);
    file.seek(SeekFrom::Start(at)).map_err(PartError::Io)?;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    if start > 0 {
        let mut skipped = Vec::new();
        at += reader
            .read_until(b'\n', &mut skipped)
            .map_err(PartError::Io)? as u64;
    }
    while at < end {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(PartError::Io)?;
        if n == 0 {
            break;
        }
        at += n as u64;
        part.lines += 1;
        match parse_line(&line) {
            Ok(Some(tool)) => part.tools.push(tool),
            Ok(None) => {}
            Err(error) => {
                return Err(PartError::Line {
                    line: part.lines,
                    error,
                });
            }
        }
    }
    Ok(())
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
    /// A line is not UTF-8 text.
    #[error(
        "{path}:{line}:{column}: not UTF-8 text (the line's byte {column} starts an invalid sequence)"
    )]
    NotUtf8 {
        /// The catalog file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// The 1-based byte of the line where the invalid sequence starts.
        column: usize,
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
    let mut line = Vec::new();
    for i in 0.. {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io)? == 0 {
            break;
        }
        match parse_line(&line) {
            Ok(Some(doc)) => docs.push(doc),
            Ok(None) => {}
            Err(error) => return Err(error.at(path, i + 1)),
        }
    }
    Ok(docs)
}

/// Why one line of a catalog is not a tool: the one rule both readers (whole and in parts)
/// apply to a line, before they know its number in the file.
enum LineError {
    /// Not UTF-8: the 0-based byte of the line where the invalid sequence starts.
    NotUtf8 { byte: usize },
    /// UTF-8, but not a tool document.
    Parse(serde_json::Error),
}

impl LineError {
    /// The error of line `line` (1-based) of the catalog at `path`.
    fn at(self, path: &Path, line: usize) -> CatalogError {
        let path = path.to_path_buf();
        match self {
            LineError::NotUtf8 { byte } => CatalogError::NotUtf8 {
                path,
                line,
                column: byte + 1,
            },
            LineError::Parse(source) => CatalogError::Parse { path, line, source },
        }
    }
}

/// One line of a catalog (its newline included or not): `None` if it is blank, else the tool
/// it holds.
fn parse_line<T: serde::de::DeserializeOwned>(line: &[u8]) -> Result<Option<T>, LineError> {
    let text = std::str::from_utf8(line).map_err(|e| LineError::NotUtf8 {
        byte: e.valid_up_to(),
    })?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text)
        .map(Some)
        .map_err(LineError::Parse)
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

    /// A catalog of `n` tools with a blank line after every seventh, and its text.
    fn numbered_lines(n: usize) -> String {
        let mut text = String::new();
        for i in 0..n {
            text.push_str(&format!(
                r#"{{"name":"t{i}","description":"tool {i}","parameters":{{"type":"object"}}}}"#
            ));
            text.push('\n');
            if i % 7 == 0 {
                text.push('\n');
            }
        }
        text
    }

    fn names(catalog: &Catalog) -> Vec<&str> {
        catalog.tools.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn a_catalog_read_in_parts_has_every_tool_once_in_file_order() {
        let text = numbered_lines(300);
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let whole = Catalog::read_jsonl(f.path()).unwrap();
        assert_eq!(whole.len(), 300);
        for parts in [2, 3, 7, 64] {
            let read = read_in_parts(f.path(), text.len() as u64, parts).unwrap();
            assert_eq!(names(&read), names(&whole), "{parts} parts");
        }
    }

    #[test]
    fn a_catalog_without_a_final_newline_reads_its_last_line_in_parts() {
        let text = numbered_lines(50);
        let text = text.trim_end();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let read = read_in_parts(f.path(), text.len() as u64, 4).unwrap();
        assert_eq!(read.len(), 50);
        assert_eq!(read.tools[49].name, "t49");
    }

    #[test]
    fn a_bad_line_read_in_parts_is_named_by_its_line_in_the_file() {
        let good = numbered_lines(200);
        let lines: Vec<&str> = good.lines().collect();
        for bad in [0, 1, lines.len() / 2, lines.len() - 1] {
            let mut text = String::new();
            for (i, l) in lines.iter().enumerate() {
                text.push_str(if i == bad {
                    r#"{"description":"no name"}"#
                } else {
                    l
                });
                text.push('\n');
            }
            let mut f = tempfile::NamedTempFile::new().unwrap();
            f.write_all(text.as_bytes()).unwrap();
            for parts in [1, 2, 5] {
                let err = read_in_parts(f.path(), text.len() as u64, parts).unwrap_err();
                assert!(
                    matches!(err, CatalogError::Parse { line, .. } if line == bad + 1),
                    "bad line {}, {parts} parts: {err}",
                    bad + 1
                );
            }
        }
    }

    #[test]
    fn of_two_bad_lines_in_different_parts_the_first_is_named() {
        let mut text = numbered_lines(100);
        text.push_str("{not json\n");
        let first = text.lines().count();
        text.push_str(&numbered_lines(100));
        text.push_str("[1]\n");
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let err = read_in_parts(f.path(), text.len() as u64, 2).unwrap_err();
        assert!(
            matches!(err, CatalogError::Parse { line, .. } if line == first),
            "{err}"
        );
    }

    #[test]
    fn a_line_longer_than_a_part_is_read_whole_by_the_part_it_starts_in() {
        let huge = "word ".repeat(200_000);
        let text = format!(
            "{{\"name\":\"a\"}}\n{{\"name\":\"huge\",\"description\":\"{huge}\"}}\n{{\"name\":\"b\"}}\n"
        );
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let read = read_in_parts(f.path(), text.len() as u64, 8).unwrap();
        assert_eq!(names(&read), ["a", "huge", "b"]);
        assert_eq!(read.tools[1].description.len(), huge.len());
    }

    #[test]
    fn a_huge_bad_line_read_in_parts_is_named_by_its_line() {
        let huge = "x".repeat(1_000_000);
        let text = format!("{{\"name\":\"a\"}}\n{{\"name\":\"huge\",\"description\":{huge}}}\n");
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let err = read_in_parts(f.path(), text.len() as u64, 4).unwrap_err();
        assert!(matches!(err, CatalogError::Parse { line: 2, .. }), "{err}");
    }

    #[test]
    fn a_line_that_is_not_utf8_read_in_parts_is_named_by_its_line_and_byte() {
        let mut bytes = numbered_lines(40).into_bytes();
        bytes.extend_from_slice(b"{\"name\":\"\xff\"}\n");
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&bytes).unwrap();
        let err = read_in_parts(f.path(), bytes.len() as u64, 3).unwrap_err();
        assert!(
            matches!(
                err,
                CatalogError::NotUtf8 {
                    line: 47,
                    column: 10,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_line_that_is_not_utf8_is_named_by_its_line_and_byte() {
        let bytes = b"{\"name\":\"a\"}\n\n{\"name\":\"b\", \"description\":\"caf\xe9\"}\n";
        let err = read_catalog_jsonl_from(&bytes[..], Path::new("tools.jsonl")).unwrap_err();
        assert!(
            matches!(
                err,
                CatalogError::NotUtf8 {
                    line: 3,
                    column: 32,
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "tools.jsonl:3:32: not UTF-8 text (the line's byte 32 starts an invalid sequence)"
        );
    }

    #[test]
    fn a_line_ending_in_crlf_is_read_like_one_ending_in_lf() {
        let docs = read_catalog_jsonl_from(
            &b"{\"name\":\"a\"}\r\n{\"name\":\"b\"}\r\n"[..],
            Path::new("tools.jsonl"),
        )
        .unwrap();
        let names: Vec<_> = docs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }
}
