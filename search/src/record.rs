//! A stored tool: how the builder writes its record and how a search reads it back.
//!
//! A record is the tool as given (name, description, parameter schema as compact JSON, aliases,
//! keywords), then what the second stage of a search reads instead of splitting and stemming
//! that text again on every query: the stems of the name's words, of the description's terms
//! and of the schema's `enum` values, each as a number of the re-ranking vocabulary (see
//! `format.rs`).

use crate::catalog::ToolDoc;
use crate::format::{self, Reader};
use crate::text;

/// A borrowed view of one tool stored in an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolDocRef<'a> {
    /// The tool name.
    pub name: &'a str,
    /// The description.
    pub description: &'a str,
    /// The parameter schema as JSON text.
    pub parameters_json: &'a str,
    /// The aliases.
    pub aliases: Vec<&'a str>,
    /// The keywords.
    pub keywords: Vec<&'a str>,
}

impl ToolDocRef<'_> {
    /// The parameter schema, parsed.
    pub fn parameters(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_str(self.parameters_json)
    }

    /// An owned copy of the document.
    pub fn to_tool_doc(&self) -> Result<ToolDoc, serde_json::Error> {
        Ok(ToolDoc {
            parameters: self.parameters()?,
            ..self.to_tool_doc_lossy()
        })
    }

    /// An owned copy, with `null` parameters if the stored schema does not
    /// parse. Every stored schema was written from a JSON value, so that
    /// takes a bug; it would only drop the tool's parameter terms.
    pub(crate) fn to_tool_doc_lossy(&self) -> ToolDoc {
        ToolDoc {
            name: self.name.to_string(),
            description: self.description.to_string(),
            parameters: self.parameters().unwrap_or(serde_json::Value::Null),
            aliases: self.aliases.iter().map(|s| s.to_string()).collect(),
            keywords: self.keywords.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// Appends the stored record of a tool to `out`: name, description,
/// parameter schema as compact JSON, aliases and keywords. The re-ranking
/// words ([`put_rerank`]) follow once the vocabulary is known. Returns where
/// the schema's JSON text lies in `out`.
pub(crate) fn put(
    out: &mut Vec<u8>,
    name: &str,
    description: &str,
    parameters: &serde_json::Value,
    aliases: &[String],
    keywords: &[String],
) -> std::ops::Range<usize> {
    format::put_str(out, name);
    format::put_str(out, description);
    // The schema is written in place, then its length put before it.
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    // Writing a JSON value into a vector cannot fail.
    let _ = serde_json::to_writer(&mut *out, parameters);
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    let schema = at + 4..out.len();
    for list in [aliases, keywords] {
        out.extend_from_slice(&(list.len() as u32).to_le_bytes());
        for s in list {
            format::put_str(out, s);
        }
    }
    schema
}

/// Appends a record's re-ranking words: the vocabulary numbers of the stems
/// of the name's words and of the description's terms, in text order, and
/// of the schema's `enum` value terms (ascending, each once); each list a
/// varint count, then varints.
pub(crate) fn put_rerank(out: &mut Vec<u8>, name: &[u32], description: &[u32], enums: &[u32]) {
    for list in [name, description, enums] {
        format::put_varint(out, list.len() as u32);
        for &v in list {
            format::put_varint(out, v);
        }
    }
}

/// What the second stage reads of a record: the name, and a reader at the
/// re-ranking words. `None` if the record does not fit.
pub(crate) fn rerank_of(mut r: Reader<'_>) -> Option<(&str, RerankWords<'_>)> {
    let name = r.str()?;
    r.skip_str()?;
    r.skip_str()?;
    for _ in 0..2 {
        for _ in 0..r.u32()? {
            r.skip_str()?;
        }
    }
    Some((name, RerankWords { r }))
}

/// The re-ranking words of a record, read in order: [`RerankWords::list`]
/// three times gives the name's, the description's and the `enum` values'.
pub(crate) struct RerankWords<'a> {
    r: Reader<'a>,
}

impl RerankWords<'_> {
    /// Calls `f` with each number of the next list, and returns how many
    /// there were; stops early (returning what was read) at a list that
    /// does not fit.
    pub(crate) fn list(&mut self, mut f: impl FnMut(u32)) -> usize {
        let Some(n) = self.r.varint() else {
            return 0;
        };
        for k in 0..n as usize {
            match self.r.varint() {
                Some(v) => f(v),
                None => return k,
            }
        }
        n as usize
    }
}

/// Calls `f` with the terms of the `enum` values of a parameter schema
/// stored as compact JSON (as [`put`] stores it), found by scanning the
/// text for `"enum":[` rather than parsing it.
pub(crate) fn for_each_enum_term(json: &str, mut f: impl FnMut(&str)) {
    const KEY: &str = "\"enum\":[";
    let mut rest = json;
    while let Some(at) = rest.find(KEY) {
        rest = &rest[at + KEY.len()..];
        let end = rest.find(']').unwrap_or(rest.len());
        text::for_each_term(&rest[..end], &mut f);
        rest = &rest[end..];
    }
}

/// Reads the record `r` is at (as [`put`] wrote it); `None` if it does not fit or is not UTF-8.
pub(crate) fn read<'a>(mut r: Reader<'a>) -> Option<ToolDocRef<'a>> {
    let (name, description, parameters_json) = (r.str()?, r.str()?, r.str()?);
    let mut lists = [Vec::new(), Vec::new()];
    for list in &mut lists {
        for _ in 0..r.u32()? {
            list.push(r.str()?);
        }
    }
    let [aliases, keywords] = lists;
    Some(ToolDocRef {
        name,
        description,
        parameters_json,
        aliases,
        keywords,
    })
}
