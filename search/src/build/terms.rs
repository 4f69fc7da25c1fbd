//! Terms interned to numbers while tools are added, with their postings; written out at the
//! end as postings lists and the term fst.

use std::collections::HashMap;

use fst::MapBuilder;

use super::runs::in_runs;
use crate::error::IndexError;
use crate::field::FIELDS;
use crate::hash::FxBuild;
use crate::postings;

/// One entry of a postings list while building: a tool and how often the
/// term occurs in each of its fields.
#[derive(Clone, Copy)]
pub(super) struct Posting {
    pub(super) doc: u32,
    pub(super) tf: [u8; FIELDS],
}

/// Interns terms and collects their postings while tools are added in order.
#[derive(Default)]
pub(super) struct TermTable {
    pub(super) ids: HashMap<String, u32, FxBuild>,
    pub(super) postings: Vec<Vec<Posting>>,
}

impl TermTable {
    /// The id of `term`.
    pub(super) fn id(&mut self, term: &str) -> u32 {
        match self.ids.get(term) {
            Some(&id) => id,
            None => self.id_owned(term.to_string()),
        }
    }

    /// The id of `term`, taking the string if it is new.
    pub(super) fn id_owned(&mut self, term: String) -> u32 {
        if let Some(&id) = self.ids.get(&term) {
            return id;
        }
        let id = self.postings.len() as u32;
        self.ids.insert(term, id);
        self.postings.push(Vec::new());
        id
    }

    /// Adds one tool's `(term id, field)` occurrences.
    pub(super) fn add(&mut self, doc: u32, occurrences: &mut [(u32, u8)]) {
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

    /// The terms in byte order with their postings, and each term id's position among them.
    pub(super) fn into_sorted(self) -> (SortedTerms, Vec<u32>) {
        let mut terms: Vec<(String, u32)> = self.ids.into_iter().collect();
        terms.sort_unstable();
        let mut by_id = self.postings;
        let mut position = vec![0u32; terms.len()];
        let mut sorted = SortedTerms {
            terms: Vec::with_capacity(terms.len()),
            postings: Vec::with_capacity(terms.len()),
        };
        for (at, (term, id)) in (0..).zip(terms) {
            position[id as usize] = at;
            sorted
                .postings
                .push(std::mem::take(&mut by_id[id as usize]));
            sorted.terms.push(term);
        }
        (sorted, position)
    }
}

/// Terms in byte order, each with its postings (`postings[i]` are `terms[i]`'s): a shard's
/// once its tools are added ([`TermTable::into_sorted`]), or the shards' merged.
#[derive(Default)]
pub(super) struct SortedTerms {
    pub(super) terms: Vec<String>,
    pub(super) postings: Vec<Vec<Posting>>,
}

impl SortedTerms {
    /// Merges `parts`, whose tools follow each other in this order: each term once, its
    /// postings those of the parts in order. Also returns, per part, where each of its terms
    /// went. A term in one part only keeps its postings list (no copy).
    pub(super) fn merge(parts: Vec<SortedTerms>) -> (SortedTerms, Vec<Vec<u32>>) {
        let mut maps: Vec<Vec<u32>> = parts
            .iter()
            .map(|p| Vec::with_capacity(p.terms.len()))
            .collect();
        let total = parts.iter().map(|p| p.terms.len()).max().unwrap_or(0);
        let mut merged = SortedTerms {
            terms: Vec::with_capacity(total),
            postings: Vec::with_capacity(total),
        };
        let mut heads: Vec<_> = parts
            .into_iter()
            .map(|p| p.terms.into_iter().zip(p.postings).peekable())
            .collect();
        loop {
            // The least term at the head of a part (parts are few: a scan).
            let mut least: Option<&str> = None;
            for head in &mut heads {
                if let Some((term, _)) = head.peek()
                    && least.is_none_or(|l| term.as_str() < l)
                {
                    least = Some(term.as_str());
                }
            }
            let Some(least) = least.map(str::to_owned) else {
                break;
            };
            let at = merged.terms.len() as u32;
            let mut postings: Option<Vec<Posting>> = None;
            for (head, map) in heads.iter_mut().zip(&mut maps) {
                if let Some((_, more)) = head.next_if(|(term, _)| *term == least) {
                    map.push(at);
                    match &mut postings {
                        None => postings = Some(more),
                        Some(list) => list.extend_from_slice(&more),
                    }
                }
            }
            merged.terms.push(least);
            merged.postings.push(postings.unwrap_or_default());
        }
        (merged, maps)
    }

    /// Writes the postings lists to `out`, in term order, each entry's
    /// frequencies turned into an impact by `impact`, and returns the fst
    /// mapping each term with postings to its list's offset, and the
    /// re-ranking vocabulary: `uses[i]` is how often term `i` occurs in the
    /// tools' re-ranking words. The lists are written by up to `workers`
    /// threads, each a contiguous run of terms, and joined in order, while another numbers the
    /// re-ranking vocabulary: the bytes do not depend on the number of workers.
    pub(super) fn finish(
        self,
        out: &mut Vec<u8>,
        impact: impl Fn(&Posting) -> u16 + Sync,
        workers: usize,
        uses: &[u32],
    ) -> Result<Finished, IndexError> {
        let terms = &self.terms;
        let postings = &self.postings;
        // Terms met only in `enum` values the second stage scans for have no postings.
        let indexed: Vec<u32> = (0..terms.len() as u32)
            .filter(|&i| !postings[i as usize].is_empty())
            .collect();
        let impact = &impact;
        // One run's lists, back to back, and where each starts in them.
        let write = |run: &[u32]| -> (Vec<u8>, Vec<u64>) {
            let (mut bytes, mut starts) = (Vec::new(), Vec::with_capacity(run.len()));
            let mut list = Vec::new();
            for &i in run {
                starts.push(bytes.len() as u64);
                list.clear();
                list.extend(postings[i as usize].iter().map(|p| (p.doc, impact(p))));
                postings::put_postings(&mut bytes, &list);
            }
            (bytes, starts)
        };
        let (rerank, stems) = std::thread::scope(|scope| {
            let rerank = scope.spawn(|| RerankVocab::new(terms, uses));
            let stems = (|| {
                let runs = in_runs(&indexed, workers, |_, run| write(run));
                let mut builder = MapBuilder::memory();
                let mut keys = indexed.iter();
                for (bytes, starts) in runs {
                    let base = out.len();
                    for (start, &i) in starts.into_iter().zip(&mut keys) {
                        builder.insert(&terms[i as usize], base as u64 + start)?;
                    }
                    out.extend_from_slice(&bytes);
                }
                Ok::<_, IndexError>(builder.into_inner()?)
            })();
            let rerank = rerank
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (rerank, stems)
        });
        Ok(Finished {
            stems: stems?,
            rerank: rerank?,
        })
    }
}

/// What [`TermTable::finish`] makes besides the postings.
pub(super) struct Finished {
    /// The term fst: each stem with postings to its list's offset.
    pub(super) stems: Vec<u8>,
    pub(super) rerank: RerankVocab,
}

/// The re-ranking vocabulary: every stem of the tools' re-ranking words,
/// numbered by how often it occurs there (the most frequent first, ties in
/// term order), so that the commonest words take one byte as varints.
pub(super) struct RerankVocab {
    /// The fst from stem to number.
    pub(super) fst: Vec<u8>,
    /// Per term id, its number (`u32::MAX` for a term without uses).
    pub(super) number: Vec<u32>,
}

impl RerankVocab {
    /// `terms` sorted, `uses` per term (by position).
    fn new(terms: &[String], uses: &[u32]) -> Result<RerankVocab, IndexError> {
        let uses_of = |i: usize| uses.get(i).copied().unwrap_or(0);
        // Positions in `terms` (term order), most used first.
        let mut by_use: Vec<usize> = (0..terms.len()).filter(|&i| uses_of(i) > 0).collect();
        by_use.sort_by_key(|&i| std::cmp::Reverse(uses_of(i)));
        let mut number = vec![u32::MAX; terms.len()];
        for (n, &i) in by_use.iter().enumerate() {
            number[i] = n as u32;
        }
        let mut builder = MapBuilder::memory();
        for (term, &n) in terms.iter().zip(&number) {
            if n != u32::MAX {
                builder.insert(term, u64::from(n))?;
            }
        }
        Ok(RerankVocab {
            fst: builder.into_inner()?,
            number,
        })
    }
}
