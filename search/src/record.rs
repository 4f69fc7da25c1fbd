//! A stored tool: how the builder writes its record and how a search reads it back.

use crate::catalog::ToolDoc;
use crate::format::{self, Reader};

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

/// Appends the stored record of `doc` to `out`: name, description,
/// parameter schema as compact JSON, aliases and keywords.
pub(crate) fn put(out: &mut Vec<u8>, doc: &ToolDoc) {
    format::put_str(out, &doc.name);
    format::put_str(out, &doc.description);
    // The schema is written in place, then its length put before it.
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    // Writing a JSON value into a vector cannot fail.
    let _ = serde_json::to_writer(&mut *out, &doc.parameters);
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    for list in [&doc.aliases, &doc.keywords] {
        out.extend_from_slice(&(list.len() as u32).to_le_bytes());
        for s in list {
            format::put_str(out, s);
        }
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
