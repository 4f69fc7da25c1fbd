//! A stored tool: how the builder writes its record and how a search reads it back.
//!
//! A tool is stored in two parts (see `format.rs`, tool records). Its hot record holds what a
//! search reads of every tool it ranks: the name (front-coded, read once at open: see
//! `names.rs`), then the stems of the name's words, of the
//! description's terms and of the schema's `enum` values, each as a number of the re-ranking
//! vocabulary, which the second stage reads instead of splitting and stemming that text again
//! on every query. Its text (description, parameter schema as compact JSON, aliases, keywords),
//! which only the tools a search returns need, lies in a block of [`BLOCK_TOOLS`] tools'
//! texts compressed together with LZ4, against a dictionary stored once in the section
//! (sampled from the tools' texts at build time, see [`dictionary`]).

use std::borrow::Cow;

use crate::catalog::ToolDoc;
use crate::format::{self, Reader};
use crate::text;

/// How many consecutive tools' texts a block holds (the last block may hold fewer).
pub(crate) const BLOCK_TOOLS: usize = 32;

/// A view of one tool stored in an index: the name borrowed from the index, the rest decoded
/// from its compressed block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolDocRef<'a> {
    /// The tool name.
    pub name: &'a str,
    /// The description.
    pub description: Cow<'a, str>,
    /// The parameter schema as JSON text.
    pub parameters_json: Cow<'a, str>,
    /// The aliases.
    pub aliases: Vec<Cow<'a, str>>,
    /// The keywords.
    pub keywords: Vec<Cow<'a, str>>,
}

impl ToolDocRef<'_> {
    /// The parameter schema, parsed.
    pub fn parameters(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_str(&self.parameters_json)
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

/// Why a stored tool could not be read: the index file is damaged (or crafted) where its
/// records lie. Opening checks the checksum, so this takes a file altered with a recomputed
/// checksum, or a bug.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecordError {
    /// No tool has this number, or its hot record does not fit the section.
    #[error("the record of tool {tool} does not fit the tool records")]
    Record {
        /// The tool number.
        tool: usize,
    },
    /// The block table does not fit the section, or names a block outside it.
    #[error("block {block} of the tool records lies outside the section")]
    BlockBounds {
        /// The block number.
        block: usize,
    },
    /// A block states a decompressed length its compressed bytes cannot hold.
    #[error("block {block} of the tool records states {stated} bytes from {compressed}")]
    BlockSize {
        /// The block number.
        block: usize,
        /// The decompressed length it states.
        stated: u64,
        /// Its compressed length.
        compressed: usize,
    },
    /// A block is not LZ4 data of the length it states.
    #[error("block {block} of the tool records does not decompress")]
    Decompress {
        /// The block number.
        block: usize,
        /// What the decoder found.
        #[source]
        source: lz4_flex::block::DecompressError,
    },
    /// The texts' dictionary does not fit the section.
    #[error("the dictionary of the tool records ({len} bytes) lies outside the section")]
    Dictionary {
        /// Its stated length.
        len: u64,
    },
    /// A tool's text does not fit its decompressed block, or is not UTF-8.
    #[error("the text of tool {tool} does not fit its block")]
    Text {
        /// The tool number.
        tool: usize,
    },
}

/// Appends a tool's name whole, behind its varint length, as a build worker keeps it until the
/// hot records are written: there each name is front-coded against the previous tool's
/// (`names::put_coded`), and the re-ranking words ([`put_rerank`]) follow it.
pub(crate) fn put_name(out: &mut Vec<u8>, name: &str) {
    format::put_short_str(out, name);
}

/// Appends a tool's text to the raw bytes of its block (compressed with [`put_block`] once
/// full, read with [`Block::text`]): description, parameter schema as compact JSON, aliases and
/// keywords, as length-prefixed strings and counted lists. Returns where the
/// schema's JSON text lies in `out`.
pub(crate) fn put_text(
    out: &mut Vec<u8>,
    description: &str,
    parameters: &serde_json::Value,
    aliases: &[String],
    keywords: &[String],
) -> std::ops::Range<usize> {
    let written = put_text_with(out, description, aliases, keywords, |out| {
        // Writing a JSON value into a vector cannot fail.
        let _ = serde_json::to_writer(&mut *out, parameters);
        true
    });
    written.unwrap_or_default()
}

/// [`put_text`] with the schema's compact JSON written by `schema`, which appends it to the
/// vector it is given and says whether it could. If it could not, `out` is left as it was and
/// the result is `None`.
pub(crate) fn put_text_with(
    out: &mut Vec<u8>,
    description: &str,
    aliases: &[String],
    keywords: &[String],
    schema: impl FnOnce(&mut Vec<u8>) -> bool,
) -> Option<std::ops::Range<usize>> {
    let before = out.len();
    format::put_str(out, description);
    // The schema is written in place, then its length put before it.
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    if !schema(out) {
        out.truncate(before);
        return None;
    }
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    let schema = at + 4..out.len();
    for list in [aliases, keywords] {
        out.extend_from_slice(&(list.len() as u32).to_le_bytes());
        for s in list {
            format::put_str(out, s);
        }
    }
    Some(schema)
}

/// Appends a record's re-ranking words: the vocabulary numbers of the stems
/// of the name's words and of the description's terms, in text order, and
/// of the schema's `enum` value terms (ascending, each once).
///
/// The name's list is a varint count, then varints. The description's and the `enum` values'
/// lists follow as a pair, written once per distinct pair: `seen` remembers where each pair
/// was written (keyed by the description's numbers, [`u32::MAX`], then the `enum` values'),
/// and a later tool with the same pair refers back to it when that takes fewer bytes. The
/// pair starts with a varint `v`: even, the description's count is `v / 2` and its numbers
/// follow, then the `enum` values' count and numbers; odd, the pair is the one whose `v`
/// starts `(v >> 1) + 1` bytes before this `v` (always an even one: a reference never
/// leads to another).
pub(crate) fn put_rerank(
    out: &mut Vec<u8>,
    name: &[u32],
    description: &[u32],
    enums: &[u32],
    seen: &mut SharedLists,
) {
    put_list(out, name);
    let here = out.len();
    let key = seen.key(description, enums);
    if let Some(&at) = seen.at.get(&key.0) {
        let back = (here - at - 1) as u64;
        if let Ok(v) = u32::try_from((back << 1) | 1) {
            let inline = varint_len(description.len() as u32 * 2)
                + list_len(description)
                + list_len(enums)
                + varint_len(enums.len() as u32);
            if varint_len(v) < inline {
                format::put_varint(out, v);
                seen.give_back(key);
                return;
            }
        }
    }
    format::put_varint(out, (description.len() as u32) << 1);
    for &v in description {
        format::put_varint(out, v);
    }
    put_list(out, enums);
    seen.at.insert(key.0, here);
}

/// A list of [`put_rerank`]: a varint count, then varints.
fn put_list(out: &mut Vec<u8>, list: &[u32]) {
    format::put_varint(out, list.len() as u32);
    for &v in list {
        format::put_varint(out, v);
    }
}

/// The bytes of `v` as a varint.
fn varint_len(v: u32) -> usize {
    (32 - v.leading_zeros() as usize).div_ceil(7).max(1)
}

/// The bytes of `list`'s numbers as varints (without the count).
fn list_len(list: &[u32]) -> usize {
    list.iter().map(|&v| varint_len(v)).sum()
}

/// Where each distinct pair of description and `enum` lists was written (see [`put_rerank`]).
#[derive(Default)]
pub(crate) struct SharedLists {
    at: std::collections::HashMap<Vec<u32>, usize, crate::hash::FxBuild>,
    /// A key's buffer to reuse, when the last pair was a repeat.
    spare: Vec<u32>,
}

/// A key of [`SharedLists`].
struct Key(Vec<u32>);

impl SharedLists {
    fn key(&mut self, description: &[u32], enums: &[u32]) -> Key {
        let mut key = std::mem::take(&mut self.spare);
        key.clear();
        key.extend_from_slice(description);
        key.push(u32::MAX);
        key.extend_from_slice(enums);
        Key(key)
    }

    fn give_back(&mut self, key: Key) {
        self.spare = key.0;
    }
}

/// A tool's hot record as a search reads it: its name (decoded at open, see `names.rs`) and a
/// reader at the record's start, its front-coded name.
pub(crate) struct HotRecord<'a> {
    pub(crate) name: &'a str,
    pub(crate) r: Reader<'a>,
}

/// What the second stage reads of a hot record: the name, and a reader at the
/// re-ranking words (past the front-coded name). `None` if the record does not fit.
pub(crate) fn rerank_of(hot: HotRecord<'_>) -> Option<(&str, RerankWords<'_>)> {
    let HotRecord { name, mut r } = hot;
    crate::names::skip_coded(&mut r)?;
    Some((name, RerankWords { r, read: 0 }))
}

/// The re-ranking words of a record, read in order: [`RerankWords::list`]
/// three times gives the name's, the description's and the `enum` values'.
pub(crate) struct RerankWords<'a> {
    r: Reader<'a>,
    /// How many lists were read.
    read: u8,
}

impl RerankWords<'_> {
    /// Calls `f` with each number of the next list, and returns how many
    /// there were; stops early (returning what was read) at a list that
    /// does not fit. Inlined, so that the caller's closure keeps what it gathers in registers
    /// rather than in memory behind a reference, written again at every number.
    #[inline(always)]
    pub(crate) fn list(&mut self, f: impl FnMut(u32)) -> usize {
        match self.begin() {
            Some(n) => self.numbers(n, f),
            None => 0,
        }
    }

    /// The length of the next list, the reader left at its first number; `None` for a list
    /// that does not fit (then [`RerankWords::numbers`] reads nothing more of this record as
    /// the list).
    #[inline(always)]
    pub(crate) fn begin(&mut self) -> Option<usize> {
        let count = if self.read == 1 {
            self.shared_count()
        } else {
            self.r.varint()
        };
        self.read = self.read.saturating_add(1);
        count.map(|n| n as usize)
    }

    /// Calls `f` with each of the `n` numbers of the list [`RerankWords::begin`] started, and
    /// returns how many were read (fewer than `n` at a list that does not fit).
    ///
    /// Numbers of one or two bytes (below 16,384: the vocabulary is numbered most frequent
    /// first, so nearly all of them) are read here without a branch on their length (about
    /// half of them take one byte, half two, in no order a branch predictor could learn), the
    /// rest by `varint`: reading every number through `varint`, a bounds check and a checked
    /// shift a byte, was half of reading a tool's words (callgrind, the 195 slowest queries at
    /// 2,723 tools).
    #[inline(always)]
    pub(crate) fn numbers(&mut self, n: usize, mut f: impl FnMut(u32)) -> usize {
        let bytes = self.r.bytes;
        let mut pos = self.r.pos;
        for k in 0..n {
            let v = match bytes.get(pos..pos + 2) {
                // Not both bytes continued: a number of one byte, or of two.
                Some(&[b0, b1]) if (b0 & b1) < 0x80 => {
                    let two = u32::from(b0 >> 7);
                    pos += 1 + two as usize;
                    u32::from(b0 & 0x7f) | ((u32::from(b1) << 7) & two.wrapping_neg())
                }
                _ => {
                    self.r.pos = pos;
                    let Some(v) = self.r.varint() else {
                        return k;
                    };
                    pos = self.r.pos;
                    v
                }
            };
            f(v);
        }
        self.r.pos = pos;
        n
    }

    /// The description's count, following a reference to an earlier pair (see
    /// [`put_rerank`]); `None` for a reference out of the section or to another reference.
    fn shared_count(&mut self) -> Option<u32> {
        let count = self.follow();
        if count.is_none() {
            // Nothing more of this record reads as a list.
            self.r.pos = self.r.bytes.len();
        }
        count
    }

    /// The count of [`RerankWords::shared_count`], the reader left at the first number.
    fn follow(&mut self) -> Option<u32> {
        let at = self.r.pos;
        let v = self.r.varint()?;
        if v & 1 == 0 {
            return Some(v >> 1);
        }
        self.r.pos = at.checked_sub((v >> 1) as usize + 1)?;
        let v = self.r.varint()?;
        (v & 1 == 0).then_some(v >> 1)
    }
}

/// Calls `f` with the terms of the `enum` values of a parameter schema
/// stored as compact JSON (as [`put_text`] stores it), found by scanning the
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

/// The most bytes of the texts' dictionary (see `format.rs`).
pub(crate) const DICT_MAX: usize = 16 * 1024;
/// How many tools' texts the dictionary samples, evenly spaced in tool order.
pub(crate) const DICT_SAMPLES: usize = 32;

/// The texts' dictionary from the texts of sampled tools (see [`put_text`]): the first
/// `DICT_MAX / DICT_SAMPLES` bytes of each, back to back, at most [`DICT_MAX`] bytes.
pub(crate) fn dictionary<'a>(samples: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let each = DICT_MAX / DICT_SAMPLES;
    let mut dict = Vec::with_capacity(DICT_MAX);
    for text in samples {
        let room = DICT_MAX - dict.len();
        dict.extend_from_slice(&text[..text.len().min(each).min(room)]);
    }
    dict
}

/// The length of the records section's head for `blocks` blocks and a dictionary of
/// `dict` bytes: the tools per block, the block count, the dictionary's length and bytes, and
/// `blocks + 1` block offsets.
pub(crate) fn head_len(blocks: usize, dict: usize) -> usize {
    12 + dict + 4 * (blocks + 1)
}

/// Appends the records section's head (see `format.rs`): the dictionary `dict` the blocks were
/// compressed with, and where each block ends in the blocks as they follow the head, back to
/// back (`block_ends`). Offsets are `u32`: records of 4 GiB or more are an error.
pub(crate) fn put_head(
    out: &mut Vec<u8>,
    dict: &[u8],
    block_ends: &[u64],
) -> Result<(), crate::IndexError> {
    let head = head_len(block_ends.len(), dict.len()) as u64;
    let offset =
        |v: u64| u32::try_from(v).map_err(|_| crate::IndexError::RecordsTooLarge { bytes: v });
    out.extend_from_slice(&(BLOCK_TOOLS as u32).to_le_bytes());
    out.extend_from_slice(&(block_ends.len() as u32).to_le_bytes());
    out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    out.extend_from_slice(dict);
    out.extend_from_slice(&offset(head)?.to_le_bytes());
    for &end in block_ends {
        out.extend_from_slice(&offset(head + end)?.to_le_bytes());
    }
    Ok(())
}

/// Appends a block: the length of `raw` (the texts of its tools, see [`put_text`]) as a `u32`,
/// then `raw` compressed as one LZ4 block against the dictionary `dict`.
pub(crate) fn put_block(out: &mut Vec<u8>, raw: &[u8], dict: &[u8]) {
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    out.extend_from_slice(&lz4_flex::block::compress_with_dict(raw, dict));
}

/// The most an LZ4 block decompresses to per compressed byte: a match's length grows by at
/// most 255 per byte of input.
const LZ4_MAX_RATIO: usize = 255;

/// The decompressed texts of one block of tools.
pub(crate) struct Block {
    raw: Vec<u8>,
    /// The number of the block's first tool.
    first: usize,
    /// How many tools a block holds.
    per_block: usize,
}

/// The text of one tool, read from its block.
pub(crate) struct ToolText<'a> {
    pub(crate) description: &'a str,
    pub(crate) parameters_json: &'a str,
    pub(crate) aliases: Vec<&'a str>,
    pub(crate) keywords: Vec<&'a str>,
}

impl Block {
    /// Decompresses the block that holds tool `tool`'s text from the records section
    /// `section`; every read is bounds-checked, and a block that does not fit, states a length
    /// it cannot hold or does not decompress is an error.
    pub(crate) fn of_tool(section: &[u8], tool: usize) -> Result<Block, RecordError> {
        let mut r = Reader::new(section, 0);
        let bounds = |block| RecordError::BlockBounds { block };
        let per_block = r.u32().ok_or(bounds(0))? as usize;
        let count = r.u32().ok_or(bounds(0))? as usize;
        let dict_len = r.u32().ok_or(bounds(0))?;
        let dict = r.take(dict_len as usize).ok_or(RecordError::Dictionary {
            len: u64::from(dict_len),
        })?;
        let block = tool.checked_div(per_block).ok_or(bounds(0))?;
        if block >= count {
            return Err(RecordError::Record { tool });
        }
        let mut at = Reader::new(section, r.pos + 4 * block);
        let start = at.u32().and_then(|v| usize::try_from(v).ok());
        let end = at.u32().and_then(|v| usize::try_from(v).ok());
        let bytes = start
            .zip(end)
            .and_then(|(start, end)| section.get(start..end))
            .ok_or(bounds(block))?;
        let mut r = Reader::new(bytes, 0);
        let stated = r.u32().ok_or(bounds(block))?;
        let compressed = &bytes[4..];
        let len = stated as usize;
        if len > compressed.len().saturating_mul(LZ4_MAX_RATIO) {
            return Err(RecordError::BlockSize {
                block,
                stated: u64::from(stated),
                compressed: compressed.len(),
            });
        }
        let mut raw = vec![0; len];
        let got = lz4_flex::block::decompress_into_with_dict(compressed, &mut raw, dict)
            .map_err(|source| RecordError::Decompress { block, source })?;
        if got != len {
            return Err(RecordError::BlockSize {
                block,
                stated: u64::from(stated),
                compressed: compressed.len(),
            });
        }
        Ok(Block {
            raw,
            first: block * per_block,
            per_block,
        })
    }

    /// Whether this block holds tool `tool`'s text.
    pub(crate) fn holds(&self, tool: usize) -> bool {
        tool >= self.first && tool - self.first < self.per_block
    }

    /// The text of tool `tool`, found by stepping over the texts of the block's tools before it.
    pub(crate) fn text(&self, tool: usize) -> Result<ToolText<'_>, RecordError> {
        let fail = || RecordError::Text { tool };
        if !self.holds(tool) {
            return Err(fail());
        }
        let mut r = Reader::new(&self.raw, 0);
        for _ in self.first..tool {
            skip_text(&mut r).ok_or_else(fail)?;
        }
        read_text(r).ok_or_else(fail)
    }
}

/// Steps over one tool's text (as [`put_text`] wrote it).
fn skip_text(r: &mut Reader<'_>) -> Option<()> {
    r.skip_str()?;
    r.skip_str()?;
    for _ in 0..2 {
        for _ in 0..r.u32()? {
            r.skip_str()?;
        }
    }
    Some(())
}

/// Reads the tool text `r` is at (as [`put_text`] wrote it); `None` if it does not fit or is not
/// UTF-8.
fn read_text(mut r: Reader<'_>) -> Option<ToolText<'_>> {
    let (description, parameters_json) = (r.str()?, r.str()?);
    let mut lists = [Vec::new(), Vec::new()];
    for list in &mut lists {
        for _ in 0..r.u32()? {
            list.push(r.str()?);
        }
    }
    let [aliases, keywords] = lists;
    Some(ToolText {
        description,
        parameters_json,
        aliases,
        keywords,
    })
}

impl<'a> ToolDocRef<'a> {
    /// The tool called `name` (borrowed from the index) with its text copied out of its block.
    pub(crate) fn with_text(name: &'a str, text: ToolText<'_>) -> ToolDocRef<'a> {
        let own = |s: &str| Cow::Owned(s.to_string());
        ToolDocRef {
            name,
            description: own(text.description),
            parameters_json: own(text.parameters_json),
            aliases: text.aliases.into_iter().map(own).collect(),
            keywords: text.keywords.into_iter().map(own).collect(),
        }
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
