//! The search index: building, storing, opening and querying it.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fst::automaton::{Automaton, Str};
use fst::{IntoStreamer, Map, MapBuilder, Streamer};

use crate::check;
use crate::format::{self, PostingList, Reader};
use crate::query::Query;
use crate::text;
use crate::{FIELDS, Field};

/// An error building, writing or opening an index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Two tools have the same name.
    #[error("duplicate tool name '{0}': tool names must be unique")]
    DuplicateName(String),
    /// A tool has an empty name.
    #[error("a tool has an empty name")]
    EmptyName,
    /// Reading or writing the index file failed.
    #[error("index file {path}: {source}")]
    Io {
        /// The index file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not an index this version can read: too short, another
    /// format, another version, truncated, or corrupted.
    #[error("index file {path} is not a usable toolgate search index: {reason}")]
    Invalid {
        /// The index file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The term dictionary could not be built.
    #[error("building the term dictionary failed: {0}")]
    Fst(#[from] fst::Error),
}

/// How a query word matched an indexed term.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MatchKind {
    /// The same word.
    Exact,
    /// The same stem (`files` and `file`).
    Stem,
    /// The query word (4 characters or more) is a prefix of the term.
    Prefix,
    /// Within a small edit distance of the term.
    Typo,
}

/// One reason a tool was found: a query word matched a term in a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    /// The query word, lowercased.
    pub term: String,
    /// The indexed term it matched (a stem for stem, prefix and typo matches).
    pub matched: String,
    /// Where the term was found.
    pub field: Field,
    /// How it matched.
    pub kind: MatchKind,
}

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The tool name.
    pub name: String,
    /// The relevance score; only comparable within one search.
    pub score: f32,
    /// Why the tool matched, ordered by query word, then field.
    pub why: Vec<Match>,
}

/// What a search returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchResults {
    /// The hits, best first; ties are broken by name.
    pub hits: Vec<Hit>,
    /// For `select:` queries, the requested names that are not in the index,
    /// in query order. Always empty for free-text queries.
    pub not_found: Vec<String>,
}

/// The ranking parameters: a field-weighted BM25 (BM25F) with typo and
/// prefix penalties and a bonus for covering more of the query.
///
/// For each query term `t` and tool `d`, the field frequencies are first
/// combined into one pseudo frequency
///
/// ```text
/// tf(t, d) = sum over fields f of  weight[f] * tf_f / (1 - b[f] + b[f] * len_f / avg_len_f)
/// ```
///
/// and the tool's score is `sum over t of idf(t) * tf / (k1 + tf)`, with
/// `idf = ln(1 + (N - df + 0.5) / (df + 0.5))` over tools, multiplied by
/// `number_weight` for a query word made only of digits and by
/// `quote_weight` for a word the query has only inside quotes. A term reached
/// only by a prefix or a typo is multiplied by `prefix_factor` or
/// `typo_factor`. Finally the sum is multiplied by `coverage ^
/// coverage_exponent`, where `coverage` is the fraction of query terms the
/// tool matched at all (blended, by `idf_coverage`, with the fraction of the
/// query's total IDF it matched, so matching a rare word counts for more than
/// matching a common one), so a tool matching three different words beats
/// one matching a single rare word, and by `1 + name_coverage *
/// name_fraction`, where `name_fraction` is the fraction of the parts of the
/// tool's name that the query matched exactly or by stem: of
/// `get_current_weather`, a query with "current weather" explains two thirds.
///
/// A second stage re-scores the best [`RERANK_DEPTH`] tools of that first
/// stage from their stored name and description: a bonus for each pair of
/// adjacent query words (stop words removed, stemmed) that is also adjacent
/// in the name or the description (`bigram`), a bonus for query words that
/// are allowed values of a parameter (`enum_match`; the `enum` arrays are
/// found by scanning the stored parameter JSON text, not by parsing it), a
/// bonus for the share of the description's words that the query holds
/// (`desc_coverage`), and
/// optionally for query words hidden inside an unsplit name
/// (`name_substring`). Then, for a query of
/// three or more sentences (a task of several steps), the first ten places
/// are filled greedily so that each sentence gets tools for it (`diversity`,
/// an xQuAD-style diversification with the sentences as the query's
/// aspects): the next place goes to the tool maximising
///
/// ```text
/// (1 - diversity) * score / best score + diversity * novel / total
/// ```
///
/// where `novel` sums, over the sentences, the IDF of the sentence's query
/// words that the tool's name or description holds and that no tool placed
/// before it holds, and `total` is that sum for all the sentences' words.
/// The scores returned stay those of the second stage, handed out in the
/// new order.
///
/// The defaults were tuned on the *tune* half of the labelled data sets only
/// (see [`crate::eval::half_of`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ranking {
    /// Term frequency saturation.
    pub k1: f32,
    /// Weight of each field, indexed by [`Field`] as `usize`.
    pub weight: [f32; FIELDS],
    /// Length normalisation of each field (0 = none, 1 = full).
    pub b: [f32; FIELDS],
    /// Multiplier for prefix matches (less than 1).
    pub prefix_factor: f32,
    /// Multiplier for typo matches (less than `prefix_factor`).
    pub typo_factor: f32,
    /// Exponent of the query coverage factor (0 disables it).
    pub coverage_exponent: f32,
    /// Bonus for explaining the tool's name: the score is multiplied by
    /// `1 + name_coverage * (name parts matched / name parts)`.
    pub name_coverage: f32,
    /// Second stage, on the best [`RERANK_DEPTH`] tools: the score is
    /// multiplied by `1 + bigram * (adjacent query word pairs found adjacent
    /// in the name or description) / (query word pairs)`.
    pub bigram: f32,
    /// Second stage: the score is multiplied by `1 + name_substring *
    /// (query words of 4+ letters found inside the tool name without being
    /// one of its parts, e.g. `forecast` in `airqualityforecast`) / (query
    /// words)`.
    pub name_substring: f32,
    /// How much the coverage factor weighs query words by their IDF (0:
    /// every word counts the same, 1: a word counts its IDF's share of the
    /// query's total).
    pub idf_coverage: f32,
    /// Multiplier of the IDF of a query word made only of digits (`2023`,
    /// the `11` of `11th`): numbers in a request are usually argument
    /// values, not words that describe the tool.
    pub number_weight: f32,
    /// Second stage, for queries of three or more sentences: how much the
    /// first ten places go to tools covering sentences not yet covered
    /// rather than to the best scores (0: off, 1: coverage only).
    pub diversity: f32,
    /// Second stage: the score is multiplied by `1 + enum_match * (IDF of
    /// the query words that are one of the allowed (`enum`) values of a
    /// parameter) / (IDF of all query words)`: a request naming a value the
    /// tool accepts (`Pop`, `app balance`, `regular`).
    pub enum_match: f32,
    /// Second stage: the score is multiplied by `1 + desc_coverage *
    /// (query terms the description holds) / (terms in the description)`:
    /// how much of what the tool says of itself the request explains. Of
    /// two tools matching the same query words, the one whose description
    /// is mostly those words gains; a long description that mentions them
    /// in passing does not.
    pub desc_coverage: f32,
    /// Multiplier of the IDF of a query word found only inside quotes
    /// (`'BRCA1'`, `"Hotel California"`, `'I love the food here!'`): quoted
    /// text is usually an argument value (a name, a title, a message to
    /// send), not words that describe the tool. A quoted identifier
    /// (`'solve_quadratic'`, `'math.sqrt'`) names a tool and keeps its
    /// weight, as does a pair of quotes around the whole request.
    pub quote_weight: f32,
}

/// How many of the best first-stage tools the second stage re-scores.
pub const RERANK_DEPTH: usize = 50;

impl Default for Ranking {
    fn default() -> Ranking {
        Ranking {
            k1: 2.0,
            // name, description, parameter name, parameter description, alias, keyword
            weight: [3.0, 1.0, 1.6, 0.53, 2.5, 2.0],
            b: [0.75, 0.75, 0.5, 0.75, 0.5, 0.5],
            prefix_factor: 0.5,
            typo_factor: 0.11,
            coverage_exponent: 1.0,
            name_coverage: 0.7,
            bigram: 1.5,
            name_substring: 0.0,
            idf_coverage: 0.5,
            number_weight: 0.1,
            diversity: 0.7,
            enum_match: 0.75,
            desc_coverage: 0.3,
            quote_weight: 0.3,
        }
    }
}

/// The bytes behind an index: a memory map or, for a freshly built index,
/// a vector.
enum Storage {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl AsRef<[u8]> for Storage {
    fn as_ref(&self) -> &[u8] {
        match self {
            Storage::Mapped(m) => m,
            Storage::Owned(v) => v,
        }
    }
}

/// Where the bytes of an index come from, which decides how far they are checked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Content {
    /// Serialised by this process a moment ago: only the header is read back.
    Built,
    /// Read from a file: besides the header and checksum, the term dictionary and postings are
    /// checked in full (see [`check`]), since a checksum can be recomputed by whoever crafts a
    /// file.
    Untrusted,
}

/// A section of the storage, shared so the fst maps can own their bytes.
#[derive(Clone)]
struct Section {
    storage: Arc<Storage>,
    range: Range<usize>,
}

impl AsRef<[u8]> for Section {
    fn as_ref(&self) -> &[u8] {
        // The range was checked against the storage length when opening.
        AsRef::<[u8]>::as_ref(&*self.storage)
            .get(self.range.clone())
            .unwrap_or(&[])
    }
}

/// An immutable, searchable index over a tool catalog.
///
/// Build it from [`ToolDoc`](crate::ToolDoc)s with [`SearchIndex::build`],
/// save it with [`SearchIndex::write`] and load it again, memory-mapped, with
/// [`SearchIndex::open`]. A built and an opened index behave identically:
/// building serialises to the file format in memory and reads that back.
///
/// Tools are numbered in name order, so "ties by name" and "ties by tool
/// number" are the same thing.
pub struct SearchIndex {
    storage: Arc<Storage>,
    stems: Map<Section>,
    /// The unstemmed dictionary: written empty since explanations are
    /// computed from the returned tools' text; still opened and validated.
    #[allow(dead_code)]
    surfaces: Map<Section>,
    postings: Range<usize>,
    doc_offsets: Range<usize>,
    docs: Range<usize>,
    field_lens: Range<usize>,
    len: usize,
    /// The ranking in use; its `k1`, `weight` and `b` are those the stored
    /// impacts were computed with.
    ranking: Ranking,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("len", &self.len)
            .field("terms", &self.stems.len())
            .field("bytes", &self.storage.as_ref().as_ref().len())
            .finish()
    }
}

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
    pub fn to_tool_doc(&self) -> Result<crate::ToolDoc, serde_json::Error> {
        Ok(crate::ToolDoc {
            parameters: self.parameters()?,
            ..self.to_tool_doc_lossy()
        })
    }

    /// An owned copy, with `null` parameters if the stored schema does not
    /// parse. Every stored schema was written from a JSON value, so that
    /// takes a bug; it would only drop the tool's parameter terms.
    fn to_tool_doc_lossy(&self) -> crate::ToolDoc {
        crate::ToolDoc {
            name: self.name.to_string(),
            description: self.description.to_string(),
            parameters: self.parameters().unwrap_or(serde_json::Value::Null),
            aliases: self.aliases.iter().map(|s| s.to_string()).collect(),
            keywords: self.keywords.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// The surface terms of each field of a tool, each field's terms stored
/// back to back in one string (`ends` are the end offsets), so that
/// splitting a tool costs a dozen allocations rather than one per word.
#[derive(Default)]
struct DocFields {
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
    fn terms(&self, f: usize) -> impl Iterator<Item = &str> + '_ {
        let text = &self.text[f];
        let mut start = 0usize;
        self.ends[f].iter().map(move |&end| {
            let t = text.get(start..end as usize).unwrap_or("");
            start = end as usize;
            t
        })
    }

    fn len(&self, f: usize) -> usize {
        self.ends[f].len()
    }

    /// The terms of a name, as [`text::name_terms`].
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
    /// Replaces the terms with those of `doc`, keeping the buffers.
    fn fill(&mut self, doc: &crate::ToolDoc) {
        self.fill_parts(
            &doc.name,
            &doc.description,
            &doc.parameters,
            doc.aliases.iter().map(String::as_str),
            doc.keywords.iter().map(String::as_str),
        );
    }

    /// Replaces the terms with those of a tool given field by field (an
    /// owned document or one read back from an index), keeping the buffers.
    fn fill_parts<'a>(
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

/// Splits `items` into at most `workers` contiguous runs, calls `f` with
/// each run and the position of its first item on a thread of its own, and
/// returns the results in run order. A panic in `f` is resumed here.
fn in_runs<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(usize, &[T]) -> R + Sync,
) -> Vec<R> {
    let run = items.len().div_ceil(workers.max(1)).max(1);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(run)
            .enumerate()
            .map(|(i, chunk)| scope.spawn(move || f(i * run, chunk)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// Appends the stored record of `doc` to `out`: name, description,
/// parameter schema as compact JSON, aliases and keywords.
fn put_record(out: &mut Vec<u8>, doc: &crate::ToolDoc) {
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

/// A fast, non-cryptographic hasher (FxHash) for interning terms while
/// building: the keys are our own terms, so hash flooding is not a concern.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type FxBuild = std::hash::BuildHasherDefault<FxHasher>;

/// One entry of a postings list while building: a tool and how often the
/// term occurs in each of its fields.
#[derive(Clone, Copy)]
struct Posting {
    doc: u32,
    tf: [u8; FIELDS],
}

/// Interns terms and collects their postings while tools are added in order.
#[derive(Default)]
struct TermTable {
    ids: HashMap<String, u32, FxBuild>,
    postings: Vec<Vec<Posting>>,
}

impl TermTable {
    /// The id of `term`.
    fn id(&mut self, term: &str) -> u32 {
        match self.ids.get(term) {
            Some(&id) => id,
            None => self.id_owned(term.to_string()),
        }
    }

    /// The id of `term`, taking the string if it is new.
    fn id_owned(&mut self, term: String) -> u32 {
        if let Some(&id) = self.ids.get(&term) {
            return id;
        }
        let id = self.postings.len() as u32;
        self.ids.insert(term, id);
        self.postings.push(Vec::new());
        id
    }

    /// Adds one tool's `(term id, field)` occurrences.
    fn add(&mut self, doc: u32, occurrences: &mut [(u32, u8)]) {
        occurrences.sort_unstable();
        let mut i = 0;
        while i < occurrences.len() {
            let term = occurrences[i].0;
            let mut tf = [0u8; FIELDS];
            while i < occurrences.len() && occurrences[i].0 == term {
                let f = usize::from(occurrences[i].1);
                tf[f] = tf[f].saturating_add(1);
                i += 1;
            }
            self.postings[term as usize].push(Posting { doc, tf });
        }
    }

    /// Writes all postings lists to `out`, in term order, each entry's
    /// frequencies turned into an impact by `impact`, and returns the fst
    /// mapping each term to its list's offset. The lists are written by up
    /// to `workers` threads, each a contiguous run of terms, and joined in
    /// order: the bytes do not depend on the number of workers.
    fn finish(
        self,
        out: &mut Vec<u8>,
        impact: impl Fn(&Posting) -> u16 + Sync,
        workers: usize,
    ) -> Result<Vec<u8>, IndexError> {
        let mut terms: Vec<(String, u32)> = self.ids.into_iter().collect();
        terms.sort_unstable();
        let postings = &self.postings;
        let impact = &impact;
        // One run's lists, back to back, and where each starts in them.
        let write = |run: &[(String, u32)]| -> (Vec<u8>, Vec<u64>) {
            let (mut bytes, mut starts) = (Vec::new(), Vec::with_capacity(run.len()));
            let mut list = Vec::new();
            for (_, id) in run {
                starts.push(bytes.len() as u64);
                list.clear();
                list.extend(postings[*id as usize].iter().map(|p| (p.doc, impact(p))));
                format::put_postings(&mut bytes, &list);
            }
            (bytes, starts)
        };
        let runs = in_runs(&terms, workers, |_, run| write(run));
        let mut builder = MapBuilder::memory();
        let mut terms = terms.iter();
        for (bytes, starts) in runs {
            let base = out.len() as u64;
            for (start, (term, _)) in starts.into_iter().zip(&mut terms) {
                builder.insert(term, base + start)?;
            }
            out.extend_from_slice(&bytes);
        }
        Ok(builder.into_inner()?)
    }
}

/// The part of [`Ranking`] that is fixed when an index is built: the
/// stored impacts are computed from it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct ImpactParams {
    k1: f32,
    weight: [f32; FIELDS],
    b: [f32; FIELDS],
}

impl ImpactParams {
    fn of(r: &Ranking) -> ImpactParams {
        ImpactParams {
            k1: r.k1,
            weight: r.weight,
            b: r.b,
        }
    }

    /// Per field, `weight / (1 - b + b * len / avg_len)`.
    fn norms(&self, lens: &[u16], avg_len: &[f32; FIELDS]) -> [f32; FIELDS] {
        let mut norm = [0f32; FIELDS];
        for f in 0..FIELDS {
            let avg = avg_len[f];
            let rel = if avg > 0.0 {
                f32::from(lens.get(f).copied().unwrap_or(0)) / avg
            } else {
                1.0
            };
            norm[f] = self.weight[f] / (1.0 - self.b[f] + self.b[f] * rel);
        }
        norm
    }

    /// The stored impact of a term with frequencies `tf` in a tool with
    /// field norms `norm`: `tf / (k1 + tf)` of the weighted frequency,
    /// scaled to `0..=IMPACT_MAX`, plus the name bit.
    fn impact(&self, tf: &[u8; FIELDS], norm: &[f32; FIELDS]) -> u16 {
        let t: f32 = tf.iter().zip(norm).map(|(&t, w)| f32::from(t) * w).sum();
        let sat = if t > 0.0 && t.is_finite() {
            t / (self.k1.max(f32::MIN_POSITIVE) + t)
        } else {
            0.0
        };
        let q = (sat.clamp(0.0, 1.0) * f32::from(format::IMPACT_MAX)).round() as u16;
        let q = q.min(format::IMPACT_MAX);
        if tf[Field::Name as usize] > 0 {
            q | format::NAME_BIT
        } else {
            q
        }
    }
}

/// What one build worker makes of a contiguous run of tools.
#[derive(Default)]
struct Shard {
    stems: TermTable,
    /// Six `u16` per tool.
    field_lens: Vec<u8>,
    total_len: [f64; FIELDS],
    /// One `u64` per tool into `records`.
    doc_offsets: Vec<u8>,
    records: Vec<u8>,
}

impl Shard {
    /// Splits and interns `docs`, numbering them from `first`.
    fn build<'a>(docs: impl Iterator<Item = &'a crate::ToolDoc>, first: u32) -> Shard {
        let mut shard = Shard::default();
        // Each distinct surface word is stemmed once.
        let mut stem_of: HashMap<String, u32, FxBuild> = HashMap::default();
        let mut occ = Vec::new();
        let mut fields = DocFields::default();
        for (id, doc) in (first..).zip(docs) {
            fields.fill(doc);
            occ.clear();
            for (f, total) in shard.total_len.iter_mut().enumerate() {
                let count = fields.len(f);
                *total += count as f64;
                let len = u16::try_from(count).unwrap_or(u16::MAX);
                shard.field_lens.extend_from_slice(&len.to_le_bytes());
                for t in fields.terms(f) {
                    let stem = match stem_of.get(t) {
                        Some(&s) => s,
                        None => {
                            let s = shard.stems.id(&text::stem(t));
                            stem_of.insert(t.to_string(), s);
                            s
                        }
                    };
                    occ.push((stem, f as u8));
                }
            }
            shard.stems.add(id, &mut occ);
            let offset = shard.records.len() as u64;
            shard.doc_offsets.extend_from_slice(&offset.to_le_bytes());
            put_record(&mut shard.records, doc);
        }
        shard
    }

    /// Adds `next`, whose tools follow this shard's.
    fn append(&mut self, next: Shard) {
        for (term, id) in next.stems.ids {
            let postings = &next.stems.postings[id as usize];
            let to = self.stems.id_owned(term);
            self.stems.postings[to as usize].extend_from_slice(postings);
        }
        self.field_lens.extend_from_slice(&next.field_lens);
        for (t, n) in self.total_len.iter_mut().zip(next.total_len) {
            *t += n;
        }
        let base = self.records.len() as u64;
        for o in next.doc_offsets.chunks_exact(8) {
            let o = u64::from_le_bytes([o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]]);
            self.doc_offsets
                .extend_from_slice(&(base + o).to_le_bytes());
        }
        self.records.extend_from_slice(&next.records);
    }
}

impl SearchIndex {
    /// Indexes `docs` (a `Vec`, a slice, ...) with the default [`Ranking`].
    /// Tool names must be non-empty and unique. The index keeps its own
    /// copy of every tool, so the documents can be borrowed.
    pub fn build(docs: impl AsRef<[crate::ToolDoc]>) -> Result<SearchIndex, IndexError> {
        SearchIndex::build_with(docs, Ranking::default())
    }

    /// Indexes `docs` for `ranking`: its `k1`, `weight` and `b` are baked
    /// into the stored impacts (and recorded in the file); its other
    /// parameters apply at query time and can be changed with
    /// [`SearchIndex::with_ranking`].
    pub fn build_with(
        docs: impl AsRef<[crate::ToolDoc]>,
        ranking: Ranking,
    ) -> Result<SearchIndex, IndexError> {
        let docs = docs.as_ref();
        let workers = if docs.len() < 4096 {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |p| p.get().min(8))
        };
        SearchIndex::build_on(docs, ranking, workers)
    }

    /// [`SearchIndex::build_with`] on `workers` threads.
    fn build_on(
        docs: &[crate::ToolDoc],
        ranking: Ranking,
        workers: usize,
    ) -> Result<SearchIndex, IndexError> {
        let workers = workers.max(1);
        let params = ImpactParams::of(&ranking);
        let n = u32::try_from(docs.len()).map_err(|_| IndexError::Invalid {
            path: PathBuf::new(),
            reason: "more than 2^32 tools".into(),
        })?;
        // Tools are numbered in name order. Sorting numbers rather than
        // the documents themselves moves 4 bytes instead of a whole
        // document per step.
        let mut order: Vec<u32> = (0..n).collect();
        order.sort_unstable_by(|&a, &b| docs[a as usize].name.cmp(&docs[b as usize].name));
        for pair in order.windows(2) {
            let (a, b) = (&docs[pair[0] as usize], &docs[pair[1] as usize]);
            if a.name == b.name {
                return Err(IndexError::DuplicateName(a.name.clone()));
            }
        }
        if order
            .first()
            .is_some_and(|&d| docs[d as usize].name.is_empty())
        {
            return Err(IndexError::EmptyName);
        }

        // Split the tools, in name order, into one contiguous run per
        // worker; each splits and interns its run's text on its own, and
        // the runs are joined in order. The result does not depend on the
        // number of workers.
        let shards = in_runs(&order, workers, |first, ids| {
            Shard::build(ids.iter().map(|&d| &docs[d as usize]), first as u32)
        });
        let mut shards = shards.into_iter();
        let mut all = shards.next().unwrap_or_default();
        for shard in shards {
            all.append(shard);
        }
        let Shard {
            stems,
            field_lens,
            total_len,
            doc_offsets,
            records,
        } = all;
        debug_assert_eq!(doc_offsets.len(), docs.len() * 8);

        let avg_len: [f32; FIELDS] = std::array::from_fn(|f| {
            if n == 0 {
                0.0
            } else {
                (total_len[f] / f64::from(n)) as f32
            }
        });
        let lens_of = |doc: u32| {
            let at = doc as usize * FIELDS * 2;
            let mut lens = [0u16; FIELDS];
            for (f, l) in lens.iter_mut().enumerate() {
                let i = at + 2 * f;
                *l = u16::from_le_bytes([field_lens[i], field_lens[i + 1]]);
            }
            lens
        };
        let norms: Vec<[f32; FIELDS]> = (0..n)
            .map(|d| params.norms(&lens_of(d), &avg_len))
            .collect();
        let mut postings = Vec::new();
        let stem_fst = stems.finish(
            &mut postings,
            |p| params.impact(&p.tf, &norms[p.doc as usize]),
            workers,
        )?;
        // The surface (unstemmed) dictionary is not stored: hits are
        // explained by splitting the returned tools again. The section stays
        // in the format, as an empty map.
        let surface_fst = MapBuilder::memory().into_inner()?;
        let sections: [&[u8]; format::SECTIONS] = [
            &stem_fst,
            &surface_fst,
            &postings,
            &doc_offsets,
            &records,
            &field_lens,
        ];

        let mut out = Vec::with_capacity(
            format::HEADER_LEN + sections.iter().map(|s| s.len()).sum::<usize>(),
        );
        out.extend_from_slice(format::MAGIC);
        out.extend_from_slice(&format::VERSION.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
        for avg in avg_len {
            out.extend_from_slice(&avg.to_le_bytes());
        }
        for v in std::iter::once(params.k1)
            .chain(params.weight)
            .chain(params.b)
        {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let mut offset = format::HEADER_LEN as u64;
        for s in &sections {
            out.extend_from_slice(&offset.to_le_bytes());
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            offset += s.len() as u64;
        }
        out.extend_from_slice(&[0; 8]); // checksum, filled in below
        out.extend_from_slice(&offset.to_le_bytes());
        for s in &sections {
            out.extend_from_slice(s);
        }
        let sum = format::checksum(&[&out[..format::CHECKSUM_AT], &out[format::HEADER_LEN..]]);
        out[format::CHECKSUM_AT..format::CHECKSUM_AT + 8].copy_from_slice(&sum.to_le_bytes());
        // Freshly serialised: the checksum was just computed from these bytes.
        let index = SearchIndex::from_storage(
            Storage::Owned(out),
            Path::new("<memory>"),
            Some(sum),
            Content::Built,
        )?;
        Ok(SearchIndex { ranking, ..index })
    }

    /// Writes the index to `path` as a single file (replacing it). The file
    /// is written beside `path` first and renamed into place, so a reader
    /// never sees a half-written index.
    pub fn write(&self, path: &Path) -> Result<(), IndexError> {
        let io = |source| IndexError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut file = File::create(&tmp).map_err(io)?;
        file.write_all(self.storage.as_ref().as_ref()).map_err(io)?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Opens an index file written by [`SearchIndex::write`], memory-mapped.
    ///
    /// The header, every section bound and a checksum over the whole file
    /// are verified, so a truncated, corrupted or foreign file is reported
    /// as [`IndexError::Invalid`].
    ///
    /// The checksum is computed by reading the file through a 1 MiB buffer,
    /// not through the map: opening still reads every byte once (tens of
    /// milliseconds for a 100,000-tool index, mostly from the page cache),
    /// but those pages do not become resident in this process; only what
    /// searches touch later is. The trade-off against verifying lazily is
    /// deliberate: an index is opened rarely and searched often, and a
    /// corrupted file is refused up front instead of failing some searches.
    ///
    /// A checksum does not stop a crafted file (its author recomputes it), so
    /// the term dictionary and postings are then checked through the map
    /// (see `check.rs`): every fst node is decoded once, with a panic inside
    /// `fst` caught and reported as [`IndexError::Invalid`], and the postings
    /// lists must tile their section with ascending tool numbers below the
    /// tool count. With 100,000 tools (a 64.5 MB file, 108,088 terms, a
    /// 167 KB dictionary, 13.6 MB of postings) this took 6-28 ms for the
    /// dictionary and 12-55 ms for the postings in a release build on a busy
    /// two-core machine, against 30-120 ms for the rest of `open`; the
    /// postings pages it reads stay mapped, as the first searches would map
    /// them anyway. Searches read records, field lengths and postings with
    /// bounds checks, so nothing in the file can make them panic.
    ///
    /// As with any memory map, the file must not be modified while the index
    /// is open; [`SearchIndex::write`] replaces files by renaming, which is
    /// safe.
    pub fn open(path: &Path) -> Result<SearchIndex, IndexError> {
        let io = |source| IndexError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len < format::HEADER_LEN as u64 {
            // Too short to map usefully (and mapping an empty file fails).
            return Err(IndexError::Invalid {
                path: path.to_path_buf(),
                reason: format!(
                    "{len} bytes is shorter than the {} byte header",
                    format::HEADER_LEN
                ),
            });
        }
        // SAFETY: the map is read-only, and every read of it is bounds-checked
        // against its length. Modifying the file while it is mapped is
        // undefined behaviour; this is documented above, and `write` never
        // modifies a file in place.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        // The checksum is computed by reading the file through a small
        // buffer rather than through the map: the whole file is still
        // verified, but the pages it passes through stay in the page cache
        // instead of becoming resident in this process. Queries then fault
        // in only the parts of the map they touch.
        let sum = streamed_checksum(&file).map_err(io)?;
        SearchIndex::from_storage(Storage::Mapped(map), path, Some(sum), Content::Untrusted)
    }

    fn from_storage(
        storage: Storage,
        path: &Path,
        precomputed_sum: Option<u64>,
        content: Content,
    ) -> Result<SearchIndex, IndexError> {
        let invalid = |reason: String| IndexError::Invalid {
            path: path.to_path_buf(),
            reason,
        };
        let bytes = storage.as_ref();
        let mut r = Reader::new(bytes, 0);
        let header = || invalid("truncated header".into());
        if r.take(8).ok_or_else(header)? != format::MAGIC {
            return Err(invalid("wrong magic bytes (not an index file)".into()));
        }
        let version = r.u32().ok_or_else(header)?;
        if version != format::VERSION {
            return Err(invalid(format!(
                "format version {version}, this build reads version {}: rebuild the index",
                format::VERSION
            )));
        }
        let len = r.u32().ok_or_else(header)? as usize;
        // The average field lengths are only needed to compute impacts.
        r.take(4 * FIELDS).ok_or_else(header)?;
        let mut stored = [0f32; format::RANKING_PARAMS];
        for v in &mut stored {
            *v = r.f32().ok_or_else(header)?;
        }
        let impacts = ImpactParams {
            k1: stored[0],
            weight: std::array::from_fn(|f| stored[1 + f]),
            b: std::array::from_fn(|f| stored[1 + FIELDS + f]),
        };
        let mut sections = Vec::with_capacity(format::SECTIONS);
        for _ in 0..format::SECTIONS {
            let (off, n) = (r.u64().ok_or_else(header)?, r.u64().ok_or_else(header)?);
            let range = usize::try_from(off)
                .ok()
                .zip(usize::try_from(n).ok())
                .and_then(|(o, n)| Some(o..o.checked_add(n)?))
                .filter(|range| range.start >= format::HEADER_LEN && range.end <= bytes.len())
                .ok_or_else(|| invalid("a section lies outside the file (truncated?)".into()))?;
            sections.push(range);
        }
        let stored_sum = r.u64().ok_or_else(header)?;
        let stored_len = r.u64().ok_or_else(header)?;
        if stored_len != bytes.len() as u64 {
            return Err(invalid(format!(
                "file is {} bytes, header says {stored_len} (truncated or extended)",
                bytes.len()
            )));
        }
        let sum = match precomputed_sum {
            Some(sum) => sum,
            None => {
                format::checksum(&[&bytes[..format::CHECKSUM_AT], &bytes[format::HEADER_LEN..]])
            }
        };
        if sum != stored_sum {
            return Err(invalid("checksum mismatch (the file is corrupted)".into()));
        }
        if sections[format::SEC_DOC_OFFSETS].len() != len * 8
            || sections[format::SEC_FIELD_LENS].len() != len * FIELDS * 2
        {
            return Err(invalid("tool tables do not match the tool count".into()));
        }
        let storage = Arc::new(storage);
        let fst_at = |i: usize| {
            let section = Section {
                storage: Arc::clone(&storage),
                range: sections[i].clone(),
            };
            let map = check::catch_quietly(|| Map::new(section))
                .map_err(|panic| invalid(format!("bad term dictionary: {panic}")))?;
            map.map_err(|e| invalid(format!("bad term dictionary: {e}")))
        };
        let stems = fst_at(format::SEC_STEMS)?;
        let surfaces = fst_at(format::SEC_SURFACES)?;
        if content == Content::Untrusted {
            let postings = AsRef::<[u8]>::as_ref(&*storage)
                .get(sections[format::SEC_POSTINGS].clone())
                .unwrap_or(&[]);
            // Every distinct term comes from some tool's text, so all the terms together are
            // not much longer than the stored tools.
            let key_budget = sections[format::SEC_DOCS]
                .len()
                .saturating_mul(4)
                .saturating_add(1 << 20);
            let checked = check::catch_quietly(|| {
                check::fst_structure(&stems)?;
                check::fst_structure(&surfaces)?;
                check::postings(&stems, postings, len, key_budget)
            });
            match checked {
                Ok(Ok(())) => {}
                Ok(Err(reason)) | Err(reason) => {
                    return Err(invalid(format!(
                        "bad term dictionary or postings: {reason}"
                    )));
                }
            }
        }
        Ok(SearchIndex {
            stems,
            surfaces,
            postings: sections[format::SEC_POSTINGS].clone(),
            doc_offsets: sections[format::SEC_DOC_OFFSETS].clone(),
            docs: sections[format::SEC_DOCS].clone(),
            field_lens: sections[format::SEC_FIELD_LENS].clone(),
            storage,
            len,
            ranking: Ranking {
                k1: impacts.k1,
                weight: impacts.weight,
                b: impacts.b,
                ..Ranking::default()
            },
        })
    }

    /// The same index with other ranking parameters.
    ///
    /// The query-time parameters change at once. If `k1`, `weight` or `b`
    /// differ from those the index was built with, the index is rebuilt
    /// from its stored tools (as [`SearchIndex::build_with`] would), which
    /// costs as much as building it did.
    pub fn with_ranking(self, ranking: Ranking) -> SearchIndex {
        if ImpactParams::of(&ranking) == ImpactParams::of(&self.ranking) {
            return SearchIndex { ranking, ..self };
        }
        let docs: Vec<crate::ToolDoc> = (0..self.len)
            .filter_map(|i| self.doc(i))
            .map(|d| d.to_tool_doc_lossy())
            .collect();
        match SearchIndex::build_with(docs, ranking) {
            Ok(index) => index,
            // Names were unique and non-empty when this index was built.
            Err(_) => SearchIndex { ranking, ..self },
        }
    }

    /// The ranking parameters in use.
    pub fn ranking(&self) -> &Ranking {
        &self.ranking
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the index holds no tools.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The size of the index in bytes (the file size).
    pub fn size_bytes(&self) -> usize {
        self.bytes().len()
    }

    /// All tool names, in name order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len).filter_map(|i| self.name_of(i))
    }

    /// The tool called exactly `name`.
    pub fn get(&self, name: &str) -> Option<ToolDocRef<'_>> {
        let id = self.id_of(name)?;
        self.doc(id)
    }

    fn bytes(&self) -> &[u8] {
        self.storage.as_ref().as_ref()
    }

    fn section(&self, range: &Range<usize>) -> &[u8] {
        self.bytes().get(range.clone()).unwrap_or(&[])
    }

    fn record(&self, id: usize) -> Option<Reader<'_>> {
        let mut r = Reader::new(self.section(&self.doc_offsets), id.checked_mul(8)?);
        let offset = usize::try_from(r.u64()?).ok()?;
        Some(Reader::new(self.section(&self.docs), offset))
    }

    fn name_of(&self, id: usize) -> Option<&str> {
        self.record(id)?.str()
    }

    fn id_of(&self, name: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.name_of(mid)?.cmp(name) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    fn doc(&self, id: usize) -> Option<ToolDocRef<'_>> {
        let mut r = self.record(id)?;
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

    fn field_len(&self, id: usize, field: usize) -> f32 {
        let at = (id * FIELDS + field) * 2;
        let mut r = Reader::new(self.section(&self.field_lens), at);
        let lo = r.u8().unwrap_or(0);
        let hi = r.u8().unwrap_or(0);
        f32::from(u16::from_le_bytes([lo, hi]))
    }

    fn postings_at(&self, offset: u64) -> PostingList<'_> {
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        PostingList::new(self.section(&self.postings), offset)
    }

    /// Runs a query and returns at most `max_results` hits, best first.
    ///
    /// Free-text queries are ranked as described on [`Ranking`]; equal scores
    /// are ordered by name, so results are deterministic. `select:` queries
    /// return every named tool that exists, in the order named (ignoring
    /// `max_results`), and list the others in
    /// [`SearchResults::not_found`].
    pub fn search(&self, query: &Query, max_results: usize) -> SearchResults {
        match query {
            Query::Select(names) => self.select(names),
            Query::Terms { text, required } => SearchResults {
                hits: self.search_terms(text, required, max_results),
                not_found: Vec::new(),
            },
        }
    }

    fn select(&self, names: &[String]) -> SearchResults {
        let mut out = SearchResults::default();
        for name in names {
            if self.id_of(name).is_some() {
                out.hits.push(Hit {
                    name: name.clone(),
                    score: 1.0,
                    why: vec![Match {
                        term: name.clone(),
                        matched: name.to_lowercase(),
                        field: Field::Name,
                        kind: MatchKind::Exact,
                    }],
                });
            } else {
                out.not_found.push(name.clone());
            }
        }
        out
    }

    /// The query's terms are looked up (by stem, else by prefix and typo),
    /// the first stage ([`SearchIndex::first_stage`]) finds the best
    /// [`RERANK_DEPTH`] tools by the score described on [`Ranking`], the
    /// second ([`SearchIndex::rerank`]) orders them, and the best
    /// `max_results` are explained.
    fn search_terms(&self, free: &str, required: &[String], max_results: usize) -> Vec<Hit> {
        if max_results == 0 || self.len == 0 {
            return Vec::new();
        }
        let r = &self.ranking;
        let terms = query_terms(free, required);
        let mut lookups = Vec::with_capacity(terms.len());
        let mut groups: Vec<Group<'_>> = Vec::with_capacity(terms.len());
        // Each term's weight in the coverage factor: its IDF, times the
        // penalty of an expansion.
        let mut term_w = [0f32; MAX_QUERY_TERMS];
        let mut required_mask = 0u64;
        let scale = 1.0 / f32::from(format::IMPACT_MAX);
        for (i, term) in terms.iter().enumerate() {
            let bit = 1u64 << i;
            let lookup = self.lookup(term);
            match &lookup {
                Lookup::Found(offset) => {
                    let list = self.postings_at(*offset);
                    let idf = self.idf(list.len() as u64) * term_weight(r, term);
                    term_w[i] = idf;
                    if term.required {
                        required_mask |= bit;
                    }
                    groups.push(Group::new(vec![Cursor::new(list, idf * scale)], i, true));
                }
                Lookup::Expanded(expansions) => {
                    let cursors = expansions
                        .iter()
                        .map(|e| {
                            let list = self.postings_at(e.offset);
                            let idf = self.idf(list.len() as u64) * term_weight(r, term);
                            let factor = match e.kind {
                                MatchKind::Prefix => r.prefix_factor,
                                _ => r.typo_factor,
                            };
                            term_w[i] = term_w[i].max(factor * idf);
                            Cursor::new(list, factor * idf * scale)
                        })
                        .collect();
                    groups.push(Group::new(cursors, i, false));
                }
                // A required word must match exactly or by stem.
                Lookup::Missing if term.required => return Vec::new(),
                Lookup::Missing => {}
            }
            lookups.push(lookup);
        }

        let rerank = r.bigram != 0.0
            || r.enum_match != 0.0
            || r.name_substring != 0.0
            || r.diversity != 0.0
            || r.desc_coverage != 0.0;
        let depth = if rerank {
            max_results.max(RERANK_DEPTH)
        } else {
            max_results
        };
        let coverage = Coverage::new(r, terms.len(), &term_w);
        let mut ranked = self.first_stage(&mut groups, &coverage, required_mask, depth);
        let by_rank = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if rerank {
            // Leaves `ranked` in its final order.
            self.rerank(free, &terms, &term_w[..terms.len()], &mut ranked);
            ranked.truncate(max_results);
        } else {
            if ranked.len() > max_results {
                ranked.select_nth_unstable_by(max_results - 1, by_rank);
                ranked.truncate(max_results);
            }
            ranked.sort_unstable_by(by_rank);
        }
        self.explain(&terms, &lookups, ranked)
    }

    /// The best `depth` tools by first-stage score, as `(score, tool)`, in
    /// no particular order.
    ///
    /// Term at a time: each query term's lists are added into a per-thread
    /// accumulator indexed by tool (one multiply-add per posting, since the
    /// lists store ready impacts), then the touched tools are scored in
    /// full and the best kept in a small heap. Every tool sharing a word
    /// with the query is scored: bounds that would let whole lists be
    /// skipped (MaxScore) were tried and lost here, because the coverage
    /// factor makes a bound on many terms loose, and long queries are the
    /// slow ones.
    fn first_stage(
        &self,
        groups: &mut [Group<'_>],
        coverage: &Coverage,
        required_mask: u64,
        depth: usize,
    ) -> Vec<(f32, u32)> {
        let r = &self.ranking;
        let n = self.len;
        for g in groups.iter_mut() {
            g.limit(n as u32);
        }
        // The most the coverage factor and the name bonus can multiply a
        // score by, with a little slack so that rounding can never make this
        // bound smaller than the score it bounds.
        let boost_max = 1.0001 * (1.0 + r.name_coverage.max(0.0));
        let bound = 1.0001 * boost_max * coverage.max_factor();
        SCRATCH.with(|cell| {
            let mut guard = cell.borrow_mut();
            let sc = &mut *guard;
            sc.prepare(n);
            // With more postings than half the catalog, most tools will be
            // touched: the candidates are then found by one pass in tool
            // order, and the touched ones need not be listed.
            let postings: usize = groups.iter().flat_map(|g| &g.cursors).map(|c| c.end).sum();
            let listed = postings <= n / 2;
            for g in groups.iter() {
                let required = required_mask & (1 << g.term) != 0;
                if listed {
                    sc.accumulate::<true>(g, coverage.share[g.term], required);
                } else {
                    sc.accumulate::<false>(g, coverage.share[g.term], required);
                }
            }
            let cands = std::mem::take(&mut sc.touched);
            let select = Select {
                index: self,
                acc: &sc.acc[..n],
                name: &sc.name[..n],
                required: &sc.required[..n],
                required_count: required_mask.count_ones() as u8,
                coverage,
                depth,
                bound,
                boost_max,
            };
            // With most tools touched, one pass in tool order beats jumping
            // around the accumulator in the order they were touched.
            let dense = !listed || cands.len() > n / DENSE_FRACTION;
            let best = if dense {
                select.dense()
            } else {
                select.sparse(&cands)
            };
            sc.touched = cands;
            sc.reset(dense);
            best
        })
    }

    /// The second stage: multiplies the first-stage scores of `ranked` by
    /// the phrase, enum-value and name-substring factors described on
    /// [`Ranking`],
    /// diversifies the order of a query of several sentences, and leaves
    /// `ranked` in its final order.
    fn rerank(&self, free: &str, terms: &[QueryTerm], term_idf: &[f32], ranked: &mut [(f32, u32)]) {
        let r = &self.ranking;
        // The stems of the free text's words in order, numbered, so that a
        // tool's words become numbers and its phrases pairs of numbers.
        let seq: Vec<String> = text::terms(free)
            .iter()
            .map(|w| text::stem(w).into_owned())
            .collect();
        let vocab = Vocab::new(terms, &seq);
        let seq_ids: Vec<u32> = seq.iter().map(|s| vocab.id(s)).collect();
        let mut pairs: Vec<(u32, u32)> = seq_ids
            .windows(2)
            .filter(|w| w[0] != w[1])
            .map(|w| (w[0], w[1]))
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let long_words: Vec<&str> = terms
            .iter()
            .filter(|t| !t.required && t.word.chars().count() >= 4)
            .filter(|t| t.word.chars().all(char::is_alphabetic))
            .map(|t| t.word.as_str())
            .collect();
        let total = terms.len().max(1) as f32;
        let idf_total: f32 = term_idf.iter().sum::<f32>().max(f32::MIN_POSITIVE);
        // A tool's name and description words as vocabulary numbers
        // (`Vocab::NONE` for words the query does not have).
        let mut ids: Vec<u32> = Vec::new();
        let mut found: Vec<usize> = Vec::new();
        let aspects = if r.diversity != 0.0 {
            sentence_masks(free, &vocab)
        } else {
            Vec::new()
        };
        let diversify = aspects.len() >= DIVERSIFY_MIN_SENTENCES;
        let bigram = r.bigram != 0.0 && !pairs.is_empty();
        // Per ranked tool: which query terms its name or description holds.
        let mut masks: Vec<u64> = Vec::with_capacity(ranked.len());
        for (score, d) in ranked.iter_mut() {
            masks.push(0);
            let Some(mut rec) = self.record(*d as usize) else {
                continue;
            };
            let (Some(name), Some(description)) = (rec.str(), rec.str()) else {
                continue;
            };
            let mut factor = 1.0;
            if r.enum_match != 0.0
                && let Some(parameters) = rec.str()
            {
                let mut mask = 0u64;
                for_each_enum_term(parameters, |w| mask |= vocab.bit(&text::stem(w)));
                if mask != 0 {
                    let (mut bits, mut sum) = (mask, 0.0);
                    while bits != 0 {
                        sum += term_idf[bits.trailing_zeros() as usize];
                        bits &= bits - 1;
                    }
                    factor *= 1.0 + r.enum_match * sum / idf_total;
                }
            }
            if bigram || diversify || r.desc_coverage != 0.0 {
                ids.clear();
                let mut name_end = 0;
                let mut name_mask = 0u64;
                text::for_each_word(name, |w| {
                    let (id, bit) = vocab.get(&text::stem(w));
                    ids.push(id);
                    name_mask |= bit;
                    name_end += 1;
                });
                // The query terms the description holds.
                let mut held = 0u64;
                text::for_each_term(description, |w| {
                    let (id, bit) = vocab.get(&text::stem(w));
                    ids.push(id);
                    held |= bit;
                });
                if diversify && let Some(m) = masks.last_mut() {
                    *m = name_mask | held;
                }
                if bigram {
                    found.clear();
                    for (i, w) in ids.windows(2).enumerate() {
                        if i + 1 != name_end
                            && w[0] != Vocab::NONE
                            && w[1] != Vocab::NONE
                            && let Ok(k) = pairs.binary_search(&(w[0], w[1]))
                        {
                            found.push(k);
                        }
                    }
                    found.sort_unstable();
                    found.dedup();
                    factor *= 1.0 + r.bigram * found.len() as f32 / pairs.len() as f32;
                }
                if r.desc_coverage != 0.0 && ids.len() > name_end {
                    // Over the description's length.
                    let share = held.count_ones() as f32 / (ids.len() - name_end) as f32;
                    factor *= 1.0 + r.desc_coverage * share;
                }
            }
            if r.name_substring != 0.0 && !long_words.is_empty() {
                let lower = name.to_lowercase();
                let parts = text::words(name);
                let hits = long_words
                    .iter()
                    .filter(|w| lower.contains(**w) && !parts.iter().any(|p| p == *w))
                    .count();
                factor *= 1.0 + r.name_substring * hits as f32 / total;
            }
            *score *= factor;
        }
        let by_rank = |a: &(usize, (f32, u32)), b: &(usize, (f32, u32))| {
            b.1.0.total_cmp(&a.1.0).then(a.1.1.cmp(&b.1.1))
        };
        let mut order: Vec<(usize, (f32, u32))> = ranked.iter().copied().enumerate().collect();
        order.sort_unstable_by(by_rank);
        if aspects.len() >= DIVERSIFY_MIN_SENTENCES && r.diversity != 0.0 {
            self.diversify(&mut order, &masks, &aspects, term_idf);
        }
        // The scores, best first, handed out in the final order.
        let mut scores: Vec<f32> = order.iter().map(|o| o.1.0).collect();
        scores.sort_unstable_by(|a, b| b.total_cmp(a));
        for ((slot, (_, (_, d))), score) in ranked.iter_mut().zip(&order).zip(scores) {
            *slot = (score, *d);
        }
    }

    /// Reorders `order` (best first; each entry's index into `masks`)
    /// greedily, as xQuAD does with query aspects: each next tool maximises
    /// `(1 - diversity) * score / best score + diversity * novel / total`,
    /// where `novel` is the IDF of the query words of each sentence that the
    /// tool's name or description holds and no tool placed before it held
    /// for that sentence, summed over sentences, and `total` the same sum
    /// for all the sentences' words.
    fn diversify(
        &self,
        order: &mut [(usize, (f32, u32))],
        masks: &[u64],
        aspects: &[u64],
        term_idf: &[f32],
    ) {
        let lambda = self.ranking.diversity;
        let idf_of = |mut bits: u64| {
            let mut sum = 0.0;
            while bits != 0 {
                sum += term_idf
                    .get(bits.trailing_zeros() as usize)
                    .copied()
                    .unwrap_or(0.0);
                bits &= bits - 1;
            }
            sum
        };
        let total: f32 = aspects.iter().map(|&a| idf_of(a)).sum();
        let best = order.first().map_or(0.0, |o| o.1.0);
        if total <= 0.0 || best <= 0.0 {
            return;
        }
        // Per sentence, its words no placed tool holds yet.
        let mut uncovered: Vec<u64> = aspects.to_vec();
        let k = order.len().min(DIVERSIFY_DEPTH);
        for placed in 0..k {
            let mut pick = placed;
            let mut pick_value = f32::NEG_INFINITY;
            for (j, &(i, (score, _))) in order.iter().enumerate().skip(placed) {
                let novel: f32 = uncovered.iter().map(|&u| idf_of(masks[i] & u)).sum();
                let value = (1.0 - lambda) * score / best + lambda * novel / total;
                if value > pick_value {
                    pick = j;
                    pick_value = value;
                }
            }
            order[placed..=pick].rotate_right(1);
            let i = order[placed].0;
            for u in &mut uncovered {
                *u &= !masks[i];
            }
        }
    }

    fn idf(&self, df: u64) -> f32 {
        let (n, df) = (self.len as f32, df as f32);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// Finds a query term in the dictionary: by its stem, or failing that by
    /// prefix (terms of 4+ characters) and by edit distance (1 for 4-7
    /// characters, 2 for longer ones). Only words of letters are expanded:
    /// `1500` or `r2d2` are values, not misspellings.
    fn lookup(&self, term: &QueryTerm) -> Lookup {
        if let Some(offset) = self.stems.get(&term.stem) {
            return Lookup::Found(offset);
        }
        let mut expansions: Vec<Expansion> = Vec::new();
        let chars = term.word.chars().count();
        if chars >= 4 && !term.required && term.word.chars().all(char::is_alphabetic) {
            // Whole names (`get_weather`) are terms too; a single word is
            // never expanded into one, which also keeps the walk short.
            let word_prefix = Str::new(&term.stem).starts_with().intersection(SingleWord);
            self.expand(word_prefix, MatchKind::Prefix, &mut expansions);
            let distance = if chars <= 7 { 1 } else { 2 };
            if let Some(lev) = WordLevenshtein::new(&term.stem, distance) {
                self.expand(lev, MatchKind::Typo, &mut expansions);
            }
        }
        if expansions.is_empty() {
            Lookup::Missing
        } else {
            Lookup::Expanded(expansions)
        }
    }

    /// Adds the dictionary terms `automaton` accepts to `expansions` (up to
    /// [`MAX_EXPANSIONS`] in all), skipping terms already there.
    fn expand<A: Automaton>(&self, automaton: A, kind: MatchKind, expansions: &mut Vec<Expansion>) {
        let mut stream = self.stems.search(automaton).into_stream();
        while let Some((key, offset)) = stream.next() {
            if expansions.len() >= MAX_EXPANSIONS {
                break;
            }
            if !expansions.iter().any(|e| e.matched.as_bytes() == key) {
                expansions.push(Expansion {
                    matched: String::from_utf8_lossy(key).into_owned(),
                    offset,
                    kind,
                });
            }
        }
    }

    /// Turns ranked tool numbers into hits, saying which fields matched each
    /// query word and how. Rather than scanning the query terms' postings a
    /// second time, the few returned tools are split into terms again (the
    /// same way as when indexing), which gives the same answer: a tool is in
    /// a stem's postings exactly when one of its terms has that stem.
    fn explain(
        &self,
        terms: &[QueryTerm],
        lookups: &[Lookup],
        ranked: Vec<(f32, u32)>,
    ) -> Vec<Hit> {
        // What a match can be: a query term found by its stem, or one
        // expansion of a term, in the order the matches are listed.
        let mut wanted: Vec<(usize, Option<&Expansion>)> = Vec::new();
        for (i, lookup) in lookups.iter().enumerate() {
            match lookup {
                Lookup::Found(_) => wanted.push((i, None)),
                Lookup::Expanded(expansions) => {
                    wanted.extend(expansions.iter().map(|e| (i, Some(e))))
                }
                Lookup::Missing => {}
            }
        }
        let mut by_stem: HashMap<&str, Vec<usize>, FxBuild> = HashMap::default();
        for (k, (i, e)) in wanted.iter().enumerate() {
            let stem = e.map_or(terms[*i].stem.as_str(), |e| e.matched.as_str());
            by_stem.entry(stem).or_default().push(k);
        }
        // Per wanted match and field: 1 = a term with the stem, 2 = also a
        // term equal to the query word.
        let mut seen: Vec<[u8; FIELDS]> = vec![[0; FIELDS]; wanted.len()];
        let mut fields = DocFields::default();
        ranked
            .into_iter()
            .filter_map(|(score, d)| {
                let doc = self.doc(d as usize)?;
                // Every stored schema was written from a JSON value; one
                // that does not parse (a damaged file) only loses its terms.
                let parameters = doc.parameters().unwrap_or(serde_json::Value::Null);
                fields.fill_parts(
                    doc.name,
                    doc.description,
                    &parameters,
                    doc.aliases.iter().copied(),
                    doc.keywords.iter().copied(),
                );
                seen.iter_mut().for_each(|s| *s = [0; FIELDS]);
                for field in Field::ALL {
                    let f = field as usize;
                    for t in fields.terms(f) {
                        let Some(ks) = by_stem.get(&*text::stem(t)) else {
                            continue;
                        };
                        for &k in ks {
                            let (i, e) = wanted[k];
                            seen[k][f] |= if e.is_none() && t == terms[i].word {
                                3
                            } else {
                                1
                            };
                        }
                    }
                }
                let mut why = Vec::new();
                for (k, &(i, e)) in wanted.iter().enumerate() {
                    let term = &terms[i];
                    for field in Field::ALL {
                        let s = seen[k][field as usize];
                        if s == 0 {
                            continue;
                        }
                        why.push(match e {
                            None => Match {
                                term: term.word.clone(),
                                matched: term.stem.clone(),
                                field,
                                kind: if s & 2 != 0 {
                                    MatchKind::Exact
                                } else {
                                    MatchKind::Stem
                                },
                            },
                            Some(e) => Match {
                                term: term.word.clone(),
                                matched: e.matched.clone(),
                                field,
                                kind: e.kind,
                            },
                        });
                    }
                }
                Some(Hit {
                    name: doc.name.to_string(),
                    score,
                    why,
                })
            })
            .collect()
    }
}

/// The checksum of an index file (see [`format::checksum`]), read through a
/// fixed buffer. A short file gives some value that cannot match.
fn streamed_checksum(file: &File) -> std::io::Result<u64> {
    use std::io::Read;
    let mut reader = file;
    let mut state = format::Checksum::new();
    let mut header = [0u8; format::HEADER_LEN];
    let mut got = 0;
    while got < header.len() {
        match reader.read(&mut header[got..])? {
            0 => return Ok(!0),
            k => got += k,
        }
    }
    state.update(&header[..format::CHECKSUM_AT]);
    state.finish_part();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let k = reader.read(&mut buf)?;
        if k == 0 {
            break;
        }
        state.update(&buf[..k]);
    }
    state.finish_part();
    Ok(state.value())
}

/// `x^e`, without calling `powf` for the usual exponents.
#[inline]
fn pow(x: f32, e: f32) -> f32 {
    if e == 1.0 {
        x
    } else if e == 0.0 {
        1.0
    } else if e == 2.0 {
        x * x
    } else {
        x.powf(e)
    }
}

/// Matches the keys without a name separator (`_`, `.`, `-`): single
/// words, not whole names.
#[derive(Clone, Copy, Debug)]
struct SingleWord;

impl SingleWord {
    fn is_separator(byte: u8) -> bool {
        matches!(byte, b'_' | b'.' | b'-')
    }
}

impl Automaton for SingleWord {
    type State = bool;

    fn start(&self) -> bool {
        true
    }

    fn is_match(&self, state: &bool) -> bool {
        *state
    }

    fn can_match(&self, state: &bool) -> bool {
        *state
    }

    fn accept(&self, state: &bool, byte: u8) -> bool {
        *state && !SingleWord::is_separator(byte)
    }
}

/// The most terms one query word expands to by prefix and typo.
const MAX_EXPANSIONS: usize = 32;

/// Longest word [`WordLevenshtein`] handles, in characters.
const LEV_MAX: usize = 40;

/// Matches the single-word keys within `distance` edits (insertions,
/// deletions, substitutions of characters) of a word, as fst's
/// `Levenshtein` does, but lazily: the state is the current row of the
/// edit-distance table, computed as the fst is walked, so nothing is built
/// up front. (fst's automaton builds its whole DFA first, which took
/// milliseconds for a long word, more than the rest of the query.) Keys
/// are UTF-8: the bytes of a multi-byte character are gathered and the
/// character compared whole. A name separator ends the walk: whole names
/// (`get_weather`) are not typo matches of a word.
#[derive(Clone, Debug)]
struct WordLevenshtein {
    word: [char; LEV_MAX],
    len: usize,
    distance: u8,
}

/// A [`WordLevenshtein`] state: the row, and a partly read character.
#[derive(Clone, Debug)]
struct LevState {
    row: [u8; LEV_MAX],
    /// The bits of the character read so far.
    pending: u32,
    /// Continuation bytes still to come.
    need: u8,
}

impl WordLevenshtein {
    fn new(word: &str, distance: u8) -> Option<WordLevenshtein> {
        let mut w = ['\0'; LEV_MAX];
        let mut len = 0;
        for c in word.chars() {
            // One slot is kept for the row's extra column.
            if len + 1 >= LEV_MAX {
                return None;
            }
            w[len] = c;
            len += 1;
        }
        (len > 0).then_some(WordLevenshtein {
            word: w,
            len,
            distance,
        })
    }

    /// The next row after reading character `c`, or `None` once no key
    /// going on from here can be within the distance.
    fn step(&self, prev: &[u8; LEV_MAX], c: u32) -> Option<[u8; LEV_MAX]> {
        // The first character must be right: slips at the start of a word
        // are rare, and this keeps the walk to one branch of the
        // dictionary instead of all of it.
        if prev[0] == 0 && self.word[0] as u32 != c {
            return None;
        }
        let mut row = [0u8; LEV_MAX];
        row[0] = prev[0].saturating_add(1);
        let mut best = row[0];
        for i in 1..=self.len {
            let cost = u8::from(self.word[i - 1] as u32 != c);
            let v = prev[i - 1]
                .saturating_add(cost)
                .min(prev[i].saturating_add(1))
                .min(row[i - 1].saturating_add(1));
            row[i] = v;
            best = best.min(v);
        }
        (best <= self.distance).then_some(row)
    }
}

impl Automaton for WordLevenshtein {
    /// `None` once no key going on from here can match.
    type State = Option<LevState>;

    fn start(&self) -> Self::State {
        let mut row = [0u8; LEV_MAX];
        for (i, slot) in row.iter_mut().enumerate().take(self.len + 1) {
            *slot = i as u8;
        }
        Some(LevState {
            row,
            pending: 0,
            need: 0,
        })
    }

    fn is_match(&self, state: &Self::State) -> bool {
        state
            .as_ref()
            .is_some_and(|s| s.need == 0 && s.row[self.len] <= self.distance)
    }

    fn can_match(&self, state: &Self::State) -> bool {
        state.is_some()
    }

    fn accept(&self, state: &Self::State, byte: u8) -> Self::State {
        let s = state.as_ref()?;
        if s.need > 0 {
            // A continuation byte of the character being read.
            let pending = (s.pending << 6) | u32::from(byte & 0x3F);
            if s.need > 1 {
                return Some(LevState {
                    row: s.row,
                    pending,
                    need: s.need - 1,
                });
            }
            let row = self.step(&s.row, pending)?;
            return Some(LevState {
                row,
                pending: 0,
                need: 0,
            });
        }
        let (pending, need) = match byte {
            b'_' | b'.' | b'-' => return None,
            0x00..=0x7F => {
                let row = self.step(&s.row, u32::from(byte))?;
                return Some(LevState {
                    row,
                    pending: 0,
                    need: 0,
                });
            }
            0xC0..=0xDF => (u32::from(byte & 0x1F), 1),
            0xE0..=0xEF => (u32::from(byte & 0x0F), 2),
            // 0xF0 and up; a stray continuation byte cannot start a key
            // character of valid UTF-8, so treat it like a lead byte.
            _ => (u32::from(byte & 0x07), 3),
        };
        Some(LevState {
            row: s.row,
            pending,
            need,
        })
    }
}

/// A first-stage result ordered so that a max-heap keeps the worst on
/// top: the lowest score, and among equal scores the highest tool number.
#[derive(Clone, Copy, Debug)]
struct Worst(f32, u32);

impl PartialEq for Worst {
    fn eq(&self, other: &Worst) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Worst {}

impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Worst) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Worst {
    fn cmp(&self, other: &Worst) -> std::cmp::Ordering {
        other.0.total_cmp(&self.0).then(self.1.cmp(&other.1))
    }
}

/// The coverage factor of [`Ranking`]: `coverage ^ exponent`, where
/// coverage blends the fraction of query terms matched with the fraction
/// of their weight matched. Both fractions are sums over the matched
/// terms, so the coverage is too: each term has a share, added up while
/// its postings are, and a tool's coverage is the sum of its terms' shares.
struct Coverage {
    /// Per query term: `(1 - idf_coverage) / terms + idf_coverage * w /
    /// total w`, at least the smallest positive float (an accumulator entry
    /// with a share of 0 is one no term touched).
    share: [f32; MAX_QUERY_TERMS],
    exponent: f32,
}

impl Coverage {
    fn new(r: &Ranking, terms: usize, term_w: &[f32; MAX_QUERY_TERMS]) -> Coverage {
        let a = r.idf_coverage;
        let per_term = (1.0 - a) / terms.max(1) as f32;
        let total = term_w.iter().sum::<f32>().max(f32::MIN_POSITIVE);
        let share = std::array::from_fn(|i| {
            let w = if a != 0.0 { a * term_w[i] / total } else { 0.0 };
            (per_term + w).max(f32::MIN_POSITIVE)
        });
        Coverage {
            share,
            exponent: r.coverage_exponent,
        }
    }

    /// The factor of a tool whose matched terms' shares sum to `coverage`.
    #[inline]
    fn factor(&self, coverage: f32) -> f32 {
        pow(coverage, self.exponent)
    }

    /// The largest factor any tool can get: that of matching every term.
    fn max_factor(&self) -> f32 {
        if self.exponent < 0.0 {
            return f32::INFINITY;
        }
        self.factor(self.share.iter().sum::<f32>().max(1.0))
    }
}

/// One postings list of a query term.
struct Cursor<'a> {
    list: PostingList<'a>,
    /// Entries at or past this position are ignored.
    end: usize,
    /// Contribution per unit of impact: the (penalised) IDF over the scale.
    weight: f32,
}

impl<'a> Cursor<'a> {
    fn new(list: PostingList<'a>, weight: f32) -> Cursor<'a> {
        Cursor {
            end: list.len(),
            list,
            weight,
        }
    }
}

/// The lists of one query term: one for a word found by stem, one per
/// expansion for a word matched by prefix or typo (a tool gets the best of
/// them, not their sum).
struct Group<'a> {
    cursors: Vec<Cursor<'a>>,
    /// The query term's index.
    term: usize,
    /// Found by exact or stem match (counts for the name bonus).
    exact: bool,
}

impl<'a> Group<'a> {
    fn new(cursors: Vec<Cursor<'a>>, term: usize, exact: bool) -> Group<'a> {
        Group {
            cursors,
            term,
            exact,
        }
    }

    /// Stops each list at the first tool number past the catalog (only a
    /// damaged file has any).
    fn limit(&mut self, n: u32) {
        for c in &mut self.cursors {
            c.end = c.list.seek(0, n);
        }
    }
}

/// Per-thread first-stage buffers, indexed by tool number, reused across
/// searches so a query allocates nothing proportional to the catalog. Only
/// the entries of touched tools are non-zero, and they are reset after each
/// search.
#[derive(Default)]
struct Scratch {
    /// What each tool has gathered, in one array so that adding a posting
    /// touches one cache line.
    acc: Vec<Acc>,
    /// Query words found, exactly or by stem, in the name.
    name: Vec<u8>,
    /// Required query words found.
    required: Vec<u8>,
    /// Best expansion contribution of the current term.
    best: Vec<f32>,
    /// Tools with a non-zero entry.
    touched: Vec<u32>,
    /// Tools with a `best` entry.
    best_touched: Vec<u32>,
    /// The number of tools of the current search: entries from here on are not used, and a
    /// tool number at or past it (which only a damaged file holds) is passed over.
    n: usize,
}

impl Scratch {
    fn prepare(&mut self, n: usize) {
        self.n = n;
        if self.acc.len() < n {
            self.acc.resize(n, Acc::default());
            self.name.resize(n, 0);
            self.required.resize(n, 0);
            self.best.resize(n, 0.0);
        }
        self.touched.clear();
    }

    /// Clears the touched entries: one by one, or (`dense`) the whole
    /// catalog's worth at once when most of it was touched.
    fn reset(&mut self, dense: bool) {
        if dense {
            self.acc.fill(Acc::default());
            self.name.fill(0);
            self.required.fill(0);
        } else {
            for &d in &self.touched {
                let d = d as usize;
                self.acc[d] = Acc::default();
                self.name[d] = 0;
                self.required[d] = 0;
            }
        }
        self.touched.clear();
    }

    /// Adds one term's contribution to every tool in its lists (for an
    /// expanded term, each tool's best expansion), touching new tools.
    /// Tools touched for the first time are listed in `touched` if `LIST`.
    fn accumulate<const LIST: bool>(&mut self, group: &Group<'_>, share: f32, required: bool) {
        if let [c] = group.cursors.as_slice() {
            let (docs, impacts) = c.list.entries(c.end);
            for (d, q) in docs.chunks_exact(4).zip(impacts.chunks_exact(2)) {
                let d = u32::from_le_bytes([d[0], d[1], d[2], d[3]]) as usize;
                if d >= self.n {
                    continue;
                }
                let q = u16::from_le_bytes([q[0], q[1]]);
                let a = &mut self.acc[d];
                if LIST && a.coverage == 0.0 {
                    self.touched.push(d as u32);
                }
                a.score += c.weight * f32::from(q & format::IMPACT_MAX);
                a.coverage += share;
                if group.exact && q & format::NAME_BIT != 0 {
                    self.name[d] = self.name[d].saturating_add(1);
                }
                if required {
                    self.required[d] = self.required[d].saturating_add(1);
                }
            }
            return;
        }
        self.best_touched.clear();
        for c in &group.cursors {
            for i in 0..c.end {
                let d = c.list.doc(i) as usize;
                if d >= self.n {
                    continue;
                }
                let s = c.weight * f32::from(c.list.impact(i) & format::IMPACT_MAX);
                self.best_touched.push(d as u32);
                self.best[d] = self.best[d].max(s);
            }
        }
        self.best_touched.sort_unstable();
        self.best_touched.dedup();
        for k in 0..self.best_touched.len() {
            let d = self.best_touched[k] as usize;
            let s = std::mem::take(&mut self.best[d]);
            let a = &mut self.acc[d];
            if LIST && a.coverage == 0.0 {
                self.touched.push(d as u32);
            }
            a.score += s;
            a.coverage += share;
        }
    }
}

/// The last step of the first stage: the best `depth` touched tools by
/// final score. Most touched tools cannot make the cut even with the
/// largest factors, which one multiply tells; only the others get their
/// coverage factor and name bonus computed.
struct Select<'a> {
    index: &'a SearchIndex,
    acc: &'a [Acc],
    name: &'a [u8],
    /// Per tool, how many required terms it matched.
    required: &'a [u8],
    /// How many required terms the query has.
    required_count: u8,
    coverage: &'a Coverage,
    depth: usize,
    /// The most the coverage factor and name bonus together multiply by.
    bound: f32,
    /// The most the name bonus multiplies by.
    boost_max: f32,
}

/// The best tools so far (the worst on top) and the score a tool must
/// reach to enter once there are `depth` of them.
struct Best {
    heap: std::collections::BinaryHeap<Worst>,
    cut: f32,
}

impl Select<'_> {
    /// The best of the touched `tools`, as `(score, tool)` in no
    /// particular order.
    fn sparse(&self, tools: &[u32]) -> Vec<(f32, u32)> {
        let mut best = self.start();
        for &d in tools {
            self.consider(d as usize, &mut best);
        }
        Self::finish(best)
    }

    /// The best of all tools, in tool order (those not touched have a
    /// score of 0 and are passed over).
    fn dense(&self) -> Vec<(f32, u32)> {
        let mut best = self.start();
        for d in 0..self.acc.len() {
            self.consider(d, &mut best);
        }
        Self::finish(best)
    }

    fn start(&self) -> Best {
        Best {
            heap: std::collections::BinaryHeap::with_capacity(self.depth + 1),
            cut: f32::NEG_INFINITY,
        }
    }

    fn finish(best: Best) -> Vec<(f32, u32)> {
        best.heap.into_iter().map(|Worst(s, d)| (s, d)).collect()
    }

    #[inline(always)]
    fn consider(&self, d: usize, best: &mut Best) {
        let Some(&Acc { score, coverage }) = self.acc.get(d) else {
            return;
        };
        if score * self.bound < best.cut
            || score <= 0.0
            || (self.required_count != 0
                && self.required.get(d).copied() != Some(self.required_count))
        {
            return;
        }
        let score = score * self.coverage.factor(coverage);
        if score * self.boost_max < best.cut {
            return;
        }
        let name_len = self.index.field_len(d, Field::Name as usize);
        let parts = if name_len > 1.0 { name_len - 1.0 } else { 1.0 };
        let matched = self.name.get(d).copied().unwrap_or(0);
        let name_fraction = (f32::from(matched) / parts).min(1.0);
        let name_coverage = self.index.ranking.name_coverage;
        let entry = Worst(score * (1.0 + name_coverage * name_fraction), d as u32);
        if best.heap.len() < self.depth {
            best.heap.push(entry);
        } else if best.heap.peek().is_some_and(|w| entry < *w) {
            best.heap.pop();
            best.heap.push(entry);
        } else {
            return;
        }
        if best.heap.len() == self.depth {
            best.cut = best.heap.peek().map_or(f32::NEG_INFINITY, |w| w.0);
        }
    }
}

/// A first stage scans every tool in order, rather than the touched ones,
/// when more than one in this many tools was touched.
const DENSE_FRACTION: usize = 4;

/// What one tool has gathered in the first stage: 8 bytes, so that the
/// accumulator of 100,000 tools (800 KB) stays in a core's L2 cache.
#[derive(Clone, Copy, Default)]
struct Acc {
    /// Sum of term contributions.
    score: f32,
    /// Sum of the matched terms' coverage shares (0: not touched).
    coverage: f32,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Calls `f` with the terms of the `enum` values of a parameter schema
/// stored as compact JSON (as [`SearchIndex::build`] stores it), found by
/// scanning the text for `"enum":[` rather than parsing it.
fn for_each_enum_term(json: &str, mut f: impl FnMut(&str)) {
    const KEY: &str = "\"enum\":[";
    let mut rest = json;
    while let Some(at) = rest.find(KEY) {
        rest = &rest[at + KEY.len()..];
        let end = rest.find(']').unwrap_or(rest.len());
        text::for_each_term(&rest[..end], &mut f);
        rest = &rest[end..];
    }
}

/// The stems the second stage looks a tool's words up in: the query terms'
/// stems and the stems of the free text's words, each with a number and
/// the bit of the query term with that stem (`1 << index`, or 0).
struct Vocab<'a> {
    map: HashMap<&'a str, (u32, u64), FxBuild>,
}

impl<'a> Vocab<'a> {
    /// The number of a stem that is not in the vocabulary.
    const NONE: u32 = u32::MAX;

    fn new(terms: &'a [QueryTerm], seq: &'a [String]) -> Vocab<'a> {
        let mut map: HashMap<&str, (u32, u64), FxBuild> = HashMap::default();
        for (i, t) in terms.iter().enumerate() {
            let id = map.len() as u32;
            map.entry(t.stem.as_str()).or_insert((id, 1u64 << i));
        }
        for s in seq {
            let id = map.len() as u32;
            map.entry(s.as_str()).or_insert((id, 0));
        }
        Vocab { map }
    }

    /// The number and query-term bit of `stem`, or `(NONE, 0)`.
    fn get(&self, stem: &str) -> (u32, u64) {
        self.map.get(stem).copied().unwrap_or((Self::NONE, 0))
    }

    fn id(&self, stem: &str) -> u32 {
        self.get(stem).0
    }

    /// The bit of the query term with this stem, or 0.
    fn bit(&self, stem: &str) -> u64 {
        self.get(stem).1
    }
}

/// How many of the first places [`SearchIndex::diversify`] fills.
const DIVERSIFY_DEPTH: usize = 10;

/// The fewest sentences a query needs to be diversified: a request in
/// three or more sentences is usually a task of several steps, while one
/// or two sentences usually ask for one thing (perhaps with a greeting or
/// context). With two, diversifying lost on the tune halves of BFCL and
/// MetaTool what it gained on Seal-Tools.
const DIVERSIFY_MIN_SENTENCES: usize = 3;

/// The query terms (as bits of `terms`) of each sentence of `free` that has
/// any: sentences end at `.`, `!`, `?` or `;` followed by a space or the end.
fn sentence_masks(free: &str, vocab: &Vocab) -> Vec<u64> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = free.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let end = i + 1 == bytes.len();
        let boundary = matches!(b, b'.' | b'!' | b'?' | b';')
            && bytes.get(i + 1).is_none_or(|c| c.is_ascii_whitespace());
        if boundary || end {
            let mut mask = 0u64;
            text::for_each_term(&free[start..=i], |w| mask |= vocab.bit(&text::stem(w)));
            if mask != 0 {
                out.push(mask);
            }
            start = i + 1;
        }
    }
    out
}

/// The weight of a query term's IDF (see [`Ranking::number_weight`] and
/// [`Ranking::quote_weight`]).
fn term_weight(r: &Ranking, term: &QueryTerm) -> f32 {
    let w = if term.quoted { r.quote_weight } else { 1.0 };
    if !term.required && term.word.bytes().all(|b| b.is_ascii_digit()) {
        r.number_weight * w
    } else {
        w
    }
}

/// The byte ranges of `free` inside quotes (`'...'`, `"..."`, and the
/// typographic pairs): an opening quote starts the text or follows a space
/// or an opening bracket, colon or comma; its closing quote is followed by
/// the end, a space or punctuation, so the apostrophes of `it's` or
/// `Adriel's` neither open nor close. A pair around the whole text is not
/// counted (a request pasted with its quotes), nor is a quoted identifier
/// (`'get_weather'`, `'math.sqrt'`): that names a tool.
fn quoted_spans(free: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let trimmed = free.trim();
    let lead = free.len() - free.trim_start().len();
    let mut prev: Option<char> = None;
    let mut unclosed: Vec<char> = Vec::new();
    let mut iter = free.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let close = match c {
            '\'' => '\'',
            '"' => '"',
            '\u{2018}' => '\u{2019}',
            '\u{201C}' => '\u{201D}',
            _ => {
                prev = Some(c);
                continue;
            }
        };
        let opens =
            prev.is_none_or(|p| p.is_whitespace() || matches!(p, '(' | '[' | '{' | ':' | ','));
        prev = Some(c);
        if !opens {
            continue;
        }
        if unclosed.contains(&close) {
            continue;
        }
        let start = i + c.len_utf8();
        let rest = &free[start..];
        let mut end = None;
        for (j, d) in rest.char_indices() {
            if d == close {
                let next = rest[j + d.len_utf8()..].chars().next();
                if next.is_none_or(|n| !n.is_alphanumeric()) {
                    end = Some(start + j);
                    break;
                }
            }
        }
        let Some(end) = end else {
            // No later quote of this kind can close either: do not scan
            // the rest again for each of them.
            unclosed.push(close);
            continue;
        };
        let inner = &free[start..end];
        let whole = i == lead && end + close.len_utf8() == lead + trimmed.len();
        let identifier = inner.contains(['_', '.'])
            && inner.chars().any(char::is_alphabetic)
            && inner
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !whole && !identifier && !inner.trim().is_empty() {
            out.push(start..end);
        }
        if !whole {
            // Skip to the closing quote.
            while iter.peek().is_some_and(|&(k, _)| k <= end) {
                iter.next();
            }
            prev = Some(close);
        }
    }
    out
}

/// A normalised query term.
#[derive(Clone, Debug)]
struct QueryTerm {
    /// The lowercased word.
    word: String,
    /// Its stem, the dictionary key.
    stem: String,
    /// From a `+word`.
    required: bool,
    /// Found in the free text only inside quotes (see [`quoted_spans`]).
    quoted: bool,
}

enum Lookup {
    Found(u64),
    Expanded(Vec<Expansion>),
    Missing,
}

struct Expansion {
    matched: String,
    offset: u64,
    kind: MatchKind,
}

/// The most distinct terms a query is searched with; the rest are ignored.
const MAX_QUERY_TERMS: usize = 64;

/// Required terms first (all their parts, stop words kept), then the free
/// text's terms and any whole identifiers in it (`get_weather`), each stem
/// once.
fn query_terms(free: &str, required: &[String]) -> Vec<QueryTerm> {
    let mut out: Vec<QueryTerm> = Vec::new();
    // The stems of the text outside quotes (and that text, lowercased),
    // if anything is quoted.
    let spans = quoted_spans(free);
    let outside: Option<(Vec<String>, String)> = (!spans.is_empty()).then(|| {
        let mut text = free.to_string();
        for sp in &spans {
            text.replace_range(sp.clone(), &" ".repeat(sp.len()));
        }
        let mut stems: Vec<String> = text::terms(&text)
            .iter()
            .map(|w| text::stem(w).into_owned())
            .collect();
        stems.sort_unstable();
        (stems, text.to_lowercase())
    });
    let mut push = |word: String, required: bool| {
        let stem = text::stem(&word).into_owned();
        if out.len() < MAX_QUERY_TERMS && !out.iter().any(|t| t.stem == stem) {
            // A whole identifier is not split into terms: look for it
            // as it is written.
            let quoted = !required
                && outside.as_ref().is_some_and(|(stems, lower)| {
                    stems.binary_search(&stem).is_err()
                        && !(word.contains(['_', '.', '-']) && lower.contains(word.as_str()))
                });
            out.push(QueryTerm {
                word,
                stem,
                required,
                quoted,
            });
        }
    };
    for r in required {
        for w in text::words(r) {
            push(w, true);
        }
    }
    for w in text::terms(free) {
        push(w, false);
    }
    for token in free.split_whitespace() {
        let token = token.trim_matches(|c: char| !c.is_alphanumeric());
        if text::words(token).len() > 1 && !token.contains(char::is_whitespace) {
            let whole = token.to_lowercase();
            if whole
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
            {
                push(whole, false);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(n: usize) -> Vec<crate::ToolDoc> {
        (0..n)
            .map(|i| {
                let mut d = crate::ToolDoc::new(
                    format!("tool_{i}_{}", ["get", "set", "list"][i % 3]),
                    format!("Does thing {} with {} files quickly", i % 7, i % 11),
                );
                d.parameters = serde_json::json!({
                    "type": "object",
                    "properties": {"path": {"type": "string", "description": format!("path {}", i % 5)}}
                });
                d
            })
            .collect()
    }

    #[test]
    fn index_bytes_do_not_depend_on_the_number_of_workers() {
        let docs = catalog(1000);
        let one = SearchIndex::build_on(&docs, Ranking::default(), 1).unwrap();
        for workers in [2, 3, 7] {
            let many = SearchIndex::build_on(&docs, Ranking::default(), workers).unwrap();
            assert!(one.bytes() == many.bytes(), "{workers} workers");
        }
    }

    fn quoted(free: &str) -> Vec<&str> {
        quoted_spans(free).into_iter().map(|r| &free[r]).collect()
    }

    #[test]
    fn quotes_around_values_are_found() {
        assert_eq!(quoted("the gene 'BRCA1' of a human"), ["BRCA1"]);
        assert_eq!(
            quoted("play \"Hotel California\" now"),
            ["Hotel California"]
        );
        assert_eq!(quoted("topic: 'charts', in Spanish"), ["charts"]);
    }

    #[test]
    fn apostrophes_are_not_quotes() {
        assert!(quoted("it's Adriel's project, isn't it").is_empty());
        assert_eq!(
            quoted("a review 'I love it! It's fresh.' please"),
            ["I love it! It's fresh."]
        );
    }

    #[test]
    fn identifiers_and_whole_requests_are_not_payload() {
        assert!(quoted("use the 'solve_quadratic' function").is_empty());
        assert!(quoted("call 'math.sqrt' on it").is_empty());
        assert!(quoted("\"Find the roots of x^2 = 4.\"").is_empty());
        assert_eq!(quoted("\"Say 'hi' to Bob.\""), ["hi"]);
        assert_eq!(quoted("version '1.0.0' please"), ["1.0.0"]);
    }

    #[test]
    fn unclosed_quotes_are_not_spans() {
        assert!(quoted(&" 'a".repeat(1000)).is_empty());
        assert_eq!(quoted("it 'rains today"), Vec::<&str>::new());
        assert_eq!(quoted("'a 'b 'c' d"), ["a 'b 'c"]);
    }

    #[test]
    fn only_words_never_outside_quotes_are_quoted() {
        let terms = query_terms("find the food review 'I love the food here'", &[]);
        let quoted: Vec<&str> = terms
            .iter()
            .filter(|t| t.quoted)
            .map(|t| t.word.as_str())
            .collect();
        assert_eq!(quoted, ["love"]);
    }
}
