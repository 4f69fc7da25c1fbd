//! Terms interned to numbers while tools are added, with their postings; written out at the
//! end as postings lists and the term fst.

use std::collections::HashMap;

use fst::MapBuilder;

use super::runs::in_runs;
use crate::error::IndexError;
use crate::field::FIELDS;
use crate::format;
use crate::hash::FxBuild;

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

    /// Writes all postings lists to `out`, in term order, each entry's
    /// frequencies turned into an impact by `impact`, and returns the fst
    /// mapping each term to its list's offset. The lists are written by up
    /// to `workers` threads, each a contiguous run of terms, and joined in
    /// order: the bytes do not depend on the number of workers.
    pub(super) fn finish(
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
