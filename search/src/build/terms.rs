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

    /// Writes the postings lists to `out`, in term order, each entry's
    /// frequencies turned into an impact by `impact`, and returns the fst
    /// mapping each term with postings to its list's offset, and the
    /// re-ranking vocabulary: `uses[id]` is how often term `id` occurs in the
    /// tools' re-ranking words. The lists are written by up to `workers`
    /// threads, each a contiguous run of terms, and joined in order: the
    /// bytes do not depend on the number of workers.
    pub(super) fn finish(
        self,
        out: &mut Vec<u8>,
        impact: impl Fn(&Posting) -> u16 + Sync,
        workers: usize,
        uses: &[u32],
    ) -> Result<Finished, IndexError> {
        let mut terms: Vec<(String, u32)> = self.ids.into_iter().collect();
        terms.sort_unstable();
        let postings = &self.postings;
        let rerank = RerankVocab::new(&terms, uses)?;
        // Terms met only in `enum` values the second stage scans for have no postings.
        let indexed: Vec<&(String, u32)> = terms
            .iter()
            .filter(|(_, id)| !postings[*id as usize].is_empty())
            .collect();
        let impact = &impact;
        // One run's lists, back to back, and where each starts in them.
        let write = |run: &[&(String, u32)]| -> (Vec<u8>, Vec<u64>) {
            let (mut bytes, mut starts) = (Vec::new(), Vec::with_capacity(run.len()));
            let mut list = Vec::new();
            for (_, id) in run {
                starts.push(bytes.len() as u64);
                list.clear();
                list.extend(postings[*id as usize].iter().map(|p| (p.doc, impact(p))));
                postings::put_postings(&mut bytes, &list);
            }
            (bytes, starts)
        };
        let runs = in_runs(&indexed, workers, |_, run| write(run));
        let mut builder = MapBuilder::memory();
        let mut keys = indexed.iter();
        for (bytes, starts) in runs {
            let base = out.len() as u64;
            for (start, (term, _)) in starts.into_iter().zip(&mut keys) {
                builder.insert(term, base + start)?;
            }
            out.extend_from_slice(&bytes);
        }
        Ok(Finished {
            stems: builder.into_inner()?,
            rerank,
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
    /// `terms` sorted, `uses` per term id.
    fn new(terms: &[(String, u32)], uses: &[u32]) -> Result<RerankVocab, IndexError> {
        let uses_of = |id: u32| uses.get(id as usize).copied().unwrap_or(0);
        // Positions in `terms` (term order), most used first.
        let mut by_use: Vec<usize> = (0..terms.len())
            .filter(|&i| uses_of(terms[i].1) > 0)
            .collect();
        by_use.sort_by_key(|&i| std::cmp::Reverse(uses_of(terms[i].1)));
        let mut number = vec![u32::MAX; terms.len()];
        for (n, &i) in by_use.iter().enumerate() {
            number[terms[i].1 as usize] = n as u32;
        }
        let mut builder = MapBuilder::memory();
        for (term, id) in terms {
            let n = number[*id as usize];
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
