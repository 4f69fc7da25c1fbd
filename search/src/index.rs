//! [`SearchIndex`]: the public face of the index. It builds ([`crate::build`]), opens and
//! writes ([`crate::file`]) and searches: the query's terms ([`crate::terms`]) are looked up
//! ([`crate::lookup`]), scored ([`crate::score`]), re-scored ([`crate::rerank`]) and explained
//! ([`crate::explain`]).

use std::path::Path;

use crate::build;
use crate::catalog::{Catalog, ToolDoc};
use crate::error::{IndexError, Section};
use crate::explain::explain;
use crate::field::Field;
use crate::file::IndexFile;
use crate::format::{SECTION_ORDER, SECTIONS};
use crate::hits::{Hit, Match, MatchKind, SearchResults};
use crate::lookup::{Lookup, lookup_all};
use crate::query::Query;
use crate::ranking::Ranking;
use crate::ranking::{ImpactParams, RERANK_DEPTH};
use crate::record::ToolDocRef;
use crate::rerank::rerank;
use crate::score::{by_rank, first_stage, keep_best};
use crate::terms::query_terms;

/// What [`SearchIndex::write_catalog`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrittenIndex {
    /// How many tools the index holds.
    pub tools: usize,
    /// The length of the index file in bytes.
    pub bytes: u64,
}

/// An immutable, searchable index over a tool catalog.
///
/// Build it from [`ToolDoc`]s with [`SearchIndex::build`], save it with
/// [`SearchIndex::write`] and load it again with [`SearchIndex::open`] (read
/// into memory) or [`SearchIndex::open_mapped`] (memory-mapped). A built and
/// an opened index behave identically: building serialises to the file format
/// in memory and reads that back.
///
/// Tools are numbered in name order, so "ties by name" and "ties by tool
/// number" are the same thing.
pub struct SearchIndex {
    file: IndexFile,
    /// The ranking in use; its `k1`, `weight` and `b` are those the stored
    /// impacts were computed with.
    ranking: Ranking,
    /// A second ranking (the semantic stage), fused with the lexical one when present.
    stage: Option<std::sync::Arc<dyn crate::stage::FusedStage>>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("len", &self.file.len())
            .field("terms", &self.file.stems().len())
            .field("bytes", &self.file.bytes().len())
            .finish()
    }
}

impl SearchIndex {
    /// Indexes `docs` (a `Vec`, a slice, ...) with the default [`Ranking`].
    /// Tool names must be non-empty and unique. The index keeps its own
    /// copy of every tool, so the documents can be borrowed.
    pub fn build(docs: impl AsRef<[ToolDoc]>) -> Result<SearchIndex, IndexError> {
        SearchIndex::build_with(docs, Ranking::default())
    }

    /// Indexes `docs` for `ranking`: its `k1`, `weight` and `b` are baked
    /// into the stored impacts (and recorded in the file); its other
    /// parameters apply at query time and can be changed with
    /// [`SearchIndex::with_ranking`].
    pub fn build_with(
        docs: impl AsRef<[ToolDoc]>,
        ranking: Ranking,
    ) -> Result<SearchIndex, IndexError> {
        let built = build::serialize(docs.as_ref(), ImpactParams::of(&ranking))?;
        // Freshly serialised: the checksum was just computed from these bytes.
        let file = IndexFile::built(built.bytes, built.checksum)?;
        Ok(SearchIndex {
            file,
            ranking,
            stage: None,
        })
    }

    /// Indexes a [`Catalog`] with the default [`Ranking`]: the same index as
    /// [`SearchIndex::build`] of the [`ToolDoc`]s read from the same lines,
    /// built without holding every parsed schema at once. The catalog is
    /// dropped as soon as its tools are split into terms and records.
    pub fn build_catalog(catalog: Catalog) -> Result<SearchIndex, IndexError> {
        let ranking = Ranking::default();
        let built = build::serialize_owned(catalog.tools, ImpactParams::of(&ranking))?;
        let file = IndexFile::built(built.bytes, built.checksum)?;
        Ok(SearchIndex {
            file,
            ranking,
            stage: None,
        })
    }

    /// Indexes a [`Catalog`] as [`SearchIndex::build_catalog`] does and writes the index to
    /// `path` as [`SearchIndex::write`] would (the same bytes, written beside `path`, synced
    /// and renamed into place), without putting the file together in memory first: its
    /// sections are written where they go, on several threads, while the checksum is
    /// computed. For a build whose index is only written (`toolgate index build`).
    pub fn write_catalog(catalog: Catalog, path: &Path) -> Result<WrittenIndex, IndexError> {
        let ranking = Ranking::default();
        let written = build::write_owned(catalog.tools, ImpactParams::of(&ranking), path)?;
        Ok(WrittenIndex {
            tools: written.tools as usize,
            bytes: written.bytes,
        })
    }

    /// Writes the index to `path` as a single file (replacing it). The file
    /// is written beside `path` first and renamed into place, so a reader
    /// never sees a half-written index, and an index mapped from the old
    /// file by [`SearchIndex::open_mapped`] keeps its bytes.
    pub fn write(&self, path: &Path) -> Result<(), IndexError> {
        self.file.write(path)
    }

    /// Opens an index file written by [`SearchIndex::write`], read into
    /// memory. This is the safe way to open an index, and the one to use
    /// unless the index is large and the file is known never to change in
    /// place (see [`SearchIndex::open_mapped`]).
    ///
    /// The header, every section bound and a checksum over the whole file
    /// are verified, so a truncated, corrupted or foreign file is refused
    /// with an [`IndexError`] saying which (another format version, for
    /// example, is [`IndexError::UnsupportedVersion`]: rebuild the index).
    ///
    /// A checksum does not stop a crafted file (its author recomputes it), so
    /// the term dictionary and postings are then checked in full (see
    /// `check.rs`): every fst node is decoded once, with a panic inside
    /// `fst` caught and reported as [`IndexError::Damaged`], and the postings
    /// lists must tile their section with ascending tool numbers below the
    /// tool count. With 100,000 tools (a 64.5 MB file, 108,088 terms, a
    /// 167 KB dictionary, 13.6 MB of postings in format 4) this took 6-28 ms
    /// for the dictionary and 12-55 ms for the postings in a release build on
    /// a busy two-core machine; format 5's 7.2 MB of postings are decoded
    /// block by block to be checked (not measured again). Searches read
    /// records, name lengths and postings with bounds checks, so nothing in
    /// the file can make them panic.
    ///
    /// The whole file becomes resident in this process (as large as the
    /// file: about 65 MB for 100,000 tools).
    pub fn open(path: &Path) -> Result<SearchIndex, IndexError> {
        Ok(SearchIndex::opened(IndexFile::read(path)?))
    }

    /// Opens an index file written by [`SearchIndex::write`], memory-mapped:
    /// the same checks as [`SearchIndex::open`], but only the pages that
    /// searches touch become resident, and processes mapping the same file
    /// share them through the page cache.
    ///
    /// The checksum is computed by reading the file through a 1 MiB buffer,
    /// not through the map: opening still reads every byte once (tens of
    /// milliseconds for a 100,000-tool index, mostly from the page cache),
    /// but those pages do not become resident in this process. The postings
    /// pages the check reads stay mapped, as the first searches would map
    /// them anyway. The trade-off against verifying lazily is deliberate: an
    /// index is opened rarely and searched often, and a corrupted file is
    /// refused up front instead of failing some searches.
    ///
    /// # Safety
    ///
    /// The file must not be modified or truncated, by this or any other
    /// process, while the returned index (or a clone of an `Arc` holding it,
    /// such as a [`crate::LiveIndex`]'s) is alive: the bytes would change
    /// under searches, which is undefined behaviour, and a read past a new
    /// end of the file kills the process with `SIGBUS`. The checks at open
    /// cannot guard against a change after them. [`SearchIndex::write`] (and
    /// so `toolgate index build`) replaces a file by renaming a new one over
    /// it, which leaves a mapped file intact; copying over it or editing it in
    /// place does not.
    pub unsafe fn open_mapped(path: &Path) -> Result<SearchIndex, IndexError> {
        // SAFETY: the caller upholds the contract above, which is `IndexFile::map`'s.
        let file = unsafe { IndexFile::map(path) }?;
        Ok(SearchIndex::opened(file))
    }

    /// An index over an opened file, with the ranking its impacts were
    /// computed with and the default query-time parameters.
    fn opened(file: IndexFile) -> SearchIndex {
        let impacts = file.impacts();
        SearchIndex {
            file,
            ranking: Ranking {
                k1: impacts.k1,
                weight: impacts.weight,
                b: impacts.b,
                ..Ranking::default()
            },
            stage: None,
        }
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
        let docs: Vec<ToolDoc> = self.file.docs().map(|d| d.to_tool_doc_lossy()).collect();
        match SearchIndex::build_with(docs, ranking) {
            // Tools keep their numbers (name order), so the fused stage still fits.
            Ok(index) => SearchIndex {
                stage: self.stage,
                ..index
            },
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
        self.file.len()
    }

    /// True if the index holds no tools.
    pub fn is_empty(&self) -> bool {
        self.file.len() == 0
    }

    /// The size of the index in bytes (the file size).
    pub fn size_bytes(&self) -> usize {
        self.file.bytes().len()
    }

    /// The size in bytes of each section of the index file, in file order: the term
    /// dictionary, the postings, the tool offsets, the tool records, the name lengths and the
    /// re-ranking vocabulary. The header is the rest of [`SearchIndex::size_bytes`].
    pub fn section_sizes(&self) -> [(Section, usize); SECTIONS] {
        let lens = self.file.section_lens();
        std::array::from_fn(|i| (SECTION_ORDER[i], lens[i]))
    }

    /// All tool names, in name order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.file.len()).filter_map(|i| self.file.name_of(i))
    }

    /// The tool called exactly `name`.
    pub fn get(&self, name: &str) -> Option<ToolDocRef<'_>> {
        let id = self.file.id_of(name)?;
        self.file.doc(id)
    }

    /// Runs a query and returns at most `max_results` hits, best first,
    /// without saying why each matched ([`Hit::why`] is empty): what
    /// `tool_search` needs. [`SearchIndex::search_explained`] ranks the same
    /// and explains.
    ///
    /// Free-text queries are ranked as described on [`Ranking`]; equal scores
    /// are ordered by name, so results are deterministic. `select:` queries
    /// return every named tool that exists, in the order named (ignoring
    /// `max_results`), and list the others in
    /// [`SearchResults::not_found`].
    pub fn search(&self, query: &Query, max_results: usize) -> SearchResults {
        self.run(query, max_results, false)
    }

    /// [`SearchIndex::search`], and each hit says why it matched
    /// ([`Hit::why`]): which query word matched which term of which field,
    /// and how. Explaining splits the few returned tools into terms again, so
    /// it costs more than the search; ask for it only to show it.
    pub fn search_explained(&self, query: &Query, max_results: usize) -> SearchResults {
        self.run(query, max_results, true)
    }

    /// [`SearchIndex::search`] by the lexical ranking alone, semantic stage or not: what the
    /// fusion takes from the lexical side (`toolgate search --explain` shows where each hit
    /// stands in it).
    pub fn search_lexical(&self, query: &Query, max_results: usize) -> SearchResults {
        match query {
            Query::Select(names) => self.select(names, false),
            Query::Terms { text, required } => SearchResults {
                hits: self.search_terms(text, required, max_results, false),
                not_found: Vec::new(),
            },
        }
    }

    /// The name of tool number `tool`: tools are numbered from 0 in name order, as the
    /// semantic stage's rankings name them.
    pub fn tool_name(&self, tool: u32) -> Option<&str> {
        self.file.name_of(usize::try_from(tool).ok()?)
    }

    fn run(&self, query: &Query, max_results: usize, explains: bool) -> SearchResults {
        match query {
            Query::Select(names) => self.select(names, explains),
            Query::Terms { text, required } if self.stage.is_some() => SearchResults {
                hits: self.search_hybrid(text, required, max_results, explains),
                not_found: Vec::new(),
            },
            Query::Terms { text, required } => SearchResults {
                hits: self.search_terms(text, required, max_results, explains),
                not_found: Vec::new(),
            },
        }
    }

    fn select(&self, names: &[String], explains: bool) -> SearchResults {
        let mut out = SearchResults::default();
        for name in names {
            if self.file.id_of(name).is_some() {
                let why = if explains {
                    vec![Match {
                        term: name.clone(),
                        matched: name.to_lowercase(),
                        field: Field::Name,
                        kind: MatchKind::Exact,
                    }]
                } else {
                    Vec::new()
                };
                out.hits.push(Hit {
                    name: name.clone(),
                    score: 1.0,
                    why,
                });
            } else {
                out.not_found.push(name.clone());
            }
        }
        out
    }

    /// The query's terms are looked up (by stem, else by prefix and typo),
    /// the first stage ([`crate::score`]) finds the best 50 tools by the
    /// score described on [`Ranking`], the second ([`crate::rerank`]) orders
    /// them, and the best `max_results` are explained if `explains`.
    fn search_terms(
        &self,
        free: &str,
        required: &[String],
        max_results: usize,
        explains: bool,
    ) -> Vec<Hit> {
        if max_results == 0 || self.file.len() == 0 {
            return Vec::new();
        }
        let r = &self.ranking;
        let (terms, words) = query_terms(free, required);
        let lookups = lookup_all(self.file.stems(), self.file.words(), &terms);
        // A required word must match exactly or by stem.
        if (terms.iter().zip(&lookups)).any(|(t, l)| t.required && matches!(l, Lookup::Missing)) {
            return Vec::new();
        }

        let reranks = r.bigram != 0.0
            || r.enum_match != 0.0
            || r.name_substring != 0.0
            || r.diversity != 0.0
            || r.desc_coverage != 0.0;
        let depth = if reranks {
            max_results.max(RERANK_DEPTH)
        } else {
            max_results
        };
        let (mut ranked, term_w) = first_stage(&self.file, r, &terms, &lookups, depth);
        if reranks {
            // Leaves `ranked` in its final order.
            rerank(
                &self.file,
                r,
                &words,
                &terms,
                &term_w[..terms.len()],
                &mut ranked,
            );
            ranked.truncate(max_results);
        } else {
            keep_best(&mut ranked, max_results);
            ranked.sort_unstable_by(by_rank);
        }
        if explains {
            return explain(&self.file, &terms, &lookups, ranked);
        }
        ranked
            .into_iter()
            .filter_map(|(score, d)| {
                Some(Hit {
                    name: self.file.name_of(d as usize)?.to_string(),
                    score,
                    why: Vec::new(),
                })
            })
            .collect()
    }
}

/// A fused stage ([`crate::FusedStage`]): attaching it, and the hybrid search.
impl SearchIndex {
    /// The same index with `stage` fused with the lexical ranking of every free-text query.
    /// The stage must have been computed for this index's tools, in tool-number order (the
    /// semantic stage's crate checks that when it attaches one).
    pub fn with_stage(self, stage: std::sync::Arc<dyn crate::stage::FusedStage>) -> SearchIndex {
        SearchIndex {
            stage: Some(stage),
            ..self
        }
    }

    /// The same index without a fused stage: lexical search only.
    pub fn without_stage(self) -> SearchIndex {
        SearchIndex {
            stage: None,
            ..self
        }
    }

    /// The fused stage, if one is attached.
    pub fn stage(&self) -> Option<&std::sync::Arc<dyn crate::stage::FusedStage>> {
        self.stage.as_ref()
    }

    /// The name of tool number `tool` (tools are numbered in name order).
    pub fn name_of(&self, tool: u32) -> Option<&str> {
        self.file.name_of(tool as usize)
    }

    /// The tool numbered `tool`.
    pub fn doc(&self, tool: u32) -> Option<ToolDocRef<'_>> {
        self.file.doc(tool as usize)
    }

    /// The lexical search's best [`crate::FusedStage::depth`] fused with the stage's
    /// ranking. With `+required` words, only tools the lexical stage admitted (they
    /// have every required word) can be found. Tools found only by meaning have no `why`.
    fn search_hybrid(
        &self,
        free: &str,
        required: &[String],
        max_results: usize,
        explains: bool,
    ) -> Vec<Hit> {
        let Some(sem) = self.stage.as_deref() else {
            return self.search_terms(free, required, max_results, explains);
        };
        if max_results == 0 || self.file.len() == 0 {
            return Vec::new();
        }
        let depth = max_results.max(sem.depth());
        let (mut lexical, lex): (Vec<Option<Hit>>, Vec<(f32, u32)>) = self
            .search_terms(free, required, depth, explains)
            .into_iter()
            .filter_map(|h| {
                let tool = u32::try_from(self.file.id_of(&h.name)?).ok()?;
                let score = h.score;
                Some((Some(h), (score, tool)))
            })
            .unzip();
        let fused = sem.fused(free, &lex, depth, !required.is_empty());
        let mut out = Vec::with_capacity(max_results);
        for (score, tool) in fused.into_iter().take(max_results) {
            let found = lex.iter().position(|(_, t)| *t == tool);
            let hit = match found.and_then(|i| lexical.get_mut(i)?.take()) {
                Some(hit) => Hit { score, ..hit },
                None => match self.file.name_of(tool as usize) {
                    Some(name) => Hit {
                        name: name.to_string(),
                        score,
                        why: Vec::new(),
                    },
                    None => continue,
                },
            };
            out.push(hit);
        }
        out
    }
}
