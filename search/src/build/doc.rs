//! What the builder reads of a tool, whichever form it was given in.

use std::ops::Range;

use super::schema;
use crate::catalog::{CatalogTool, ToolDoc};
use crate::fields::DocFields;
use crate::record;

/// A tool as the builder reads it: an owned [`ToolDoc`], or a catalog line
/// whose schema is read from its JSON text while the tool is indexed.
pub(crate) trait Doc: Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    fn aliases(&self) -> &[String];
    fn keywords(&self) -> &[String];
    /// Splits the tool into `fields` and appends its text to the raw bytes of its block
    /// (`record::put_text`); returns where the schema's JSON text lies in `raw`.
    fn split(&self, fields: &mut DocFields, raw: &mut Vec<u8>) -> Range<usize>;
}

/// [`Doc::split`] of a tool whose schema is `parameters`.
fn split_parsed<D: Doc>(
    doc: &D,
    parameters: &serde_json::Value,
    fields: &mut DocFields,
    raw: &mut Vec<u8>,
) -> Range<usize> {
    fields.fill_parts(
        doc.name(),
        doc.description(),
        parameters,
        doc.aliases().iter().map(String::as_str),
        doc.keywords().iter().map(String::as_str),
    );
    record::put_text(
        raw,
        doc.description(),
        parameters,
        doc.aliases(),
        doc.keywords(),
    )
}

impl Doc for ToolDoc {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn aliases(&self) -> &[String] {
        &self.aliases
    }
    fn keywords(&self) -> &[String] {
        &self.keywords
    }
    fn split(&self, fields: &mut DocFields, raw: &mut Vec<u8>) -> Range<usize> {
        split_parsed(self, &self.parameters, fields, raw)
    }
}

impl Doc for CatalogTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn aliases(&self) -> &[String] {
        &self.aliases
    }
    fn keywords(&self) -> &[String] {
        &self.keywords
    }
    /// The schema's text is read as it is ([`schema::scan`]) when that gives what parsing and
    /// printing it would; otherwise it is parsed, for as long as the tool takes.
    fn split(&self, fields: &mut DocFields, raw: &mut Vec<u8>) -> Range<usize> {
        if let Some(json) = &self.parameters {
            fields.fill_parts(
                self.name(),
                self.description(),
                &serde_json::Value::Null,
                self.aliases().iter().map(String::as_str),
                self.keywords().iter().map(String::as_str),
            );
            let text = record::put_text_with(
                raw,
                self.description(),
                self.aliases(),
                self.keywords(),
                |out| schema::scan(json.get(), out, &mut |f, s| fields.push_terms(f, s)),
            );
            if let Some(text) = text {
                return text;
            }
        }
        split_parsed(self, &self.parameters(), fields, raw)
    }
}
