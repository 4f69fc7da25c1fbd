//! What one build worker makes of a contiguous run of tools, and how runs are joined.

use std::collections::HashMap;

use super::doc::Doc;
use super::terms::{SortedTerms, TermTable};
use crate::field::{FIELDS, Field};
use crate::fields::DocFields;
use crate::hash::FxBuild;
use crate::{record, text};

/// What one build worker makes of a contiguous run of tools.
#[derive(Default)]
pub(super) struct Shard {
    /// The terms in byte order with their postings.
    pub(super) stems: SortedTerms,
    /// Six `u16` per tool.
    pub(super) field_lens: Vec<u8>,
    pub(super) total_len: [f64; FIELDS],
    /// One `u64` per tool into `names`.
    pub(super) doc_offsets: Vec<u8>,
    /// The tools' hot records without their re-ranking words, which need the whole
    /// vocabulary: their names.
    pub(super) names: Vec<u8>,
    /// The tools' texts in compressed blocks of [`record::BLOCK_TOOLS`] tools, back to back.
    pub(super) blocks: Vec<u8>,
    /// Where each block ends in `blocks`.
    pub(super) block_ends: Vec<u64>,
    /// Per tool, the re-ranking words as positions in `stems`: the name's, the description's
    /// and the `enum` values' (each id once), each list its length and then the ids.
    pub(super) rerank: Vec<u32>,
}

impl Shard {
    /// Splits and interns `docs`, numbering them from `first`, and compresses their texts in
    /// blocks against the dictionary `dict`: `first` is a multiple of [`record::BLOCK_TOOLS`],
    /// so that blocks hold the same tools however the catalog is split.
    pub(super) fn build<'a, D: Doc + 'a>(
        docs: impl Iterator<Item = &'a D>,
        first: u32,
        dict: &[u8],
    ) -> Shard {
        debug_assert_eq!(first as usize % record::BLOCK_TOOLS, 0);
        let mut shard = Shard::default();
        let mut stems = TermTable::default();
        // The texts of the block being filled, and how many tools they are.
        let mut raw = Vec::new();
        let mut in_block = 0;
        // Each distinct surface word is stemmed once.
        let mut stem_of: HashMap<String, u32, FxBuild> = HashMap::default();
        let mut occ = Vec::new();
        let mut fields = DocFields::default();
        let mut enums: Vec<u32> = Vec::new();
        // The description's stems in text order: its re-ranking words.
        let mut described: Vec<u32> = Vec::new();
        for (id, doc) in (first..).zip(docs) {
            let offset = shard.names.len() as u64;
            shard.doc_offsets.extend_from_slice(&offset.to_le_bytes());
            record::put_name(&mut shard.names, doc.name());
            let schema = doc.split(&mut fields, &mut raw);
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
                            let s = stems.id(&text::stem(t));
                            stem_of.insert(t.to_string(), s);
                            s
                        }
                    };
                    occ.push((stem, f as u8));
                }
            }
            // The description field holds the description's terms, in order.
            described.clear();
            described.extend(
                occ.iter()
                    .filter(|&&(_, f)| f == Field::Description as u8)
                    .map(|&(stem, _)| stem),
            );
            stems.add(id, &mut occ);
            let stems = &mut stems;
            let mut id_of = |w: &str| match stem_of.get(w) {
                Some(&s) => s,
                None => {
                    let s = stems.id(&text::stem(w));
                    stem_of.insert(w.to_string(), s);
                    s
                }
            };
            let rerank = &mut shard.rerank;
            rerank.push(0);
            let at = rerank.len();
            text::for_each_word(doc.name(), |w| rerank.push(id_of(w)));
            rerank[at - 1] = (rerank.len() - at) as u32;
            rerank.push(described.len() as u32);
            rerank.extend_from_slice(&described);
            // The text was written from strings: the schema's text is UTF-8.
            let json = std::str::from_utf8(&raw[schema]).unwrap_or("");
            enums.clear();
            record::for_each_enum_term(json, |w| enums.push(id_of(w)));
            enums.sort_unstable();
            enums.dedup();
            rerank.push(enums.len() as u32);
            rerank.extend_from_slice(&enums);
            in_block += 1;
            if in_block == record::BLOCK_TOOLS {
                shard.end_block(&raw, dict);
                raw.clear();
                in_block = 0;
            }
        }
        if in_block > 0 {
            shard.end_block(&raw, dict);
        }
        // Sorted here, on the worker's thread, so that joining shards is a merge.
        let (sorted, position) = stems.into_sorted();
        shard.stems = sorted;
        for_each_id(&mut shard.rerank, |id| *id = position[*id as usize]);
        shard
    }

    /// Compresses a full block's texts (or the last one's) onto the blocks.
    fn end_block(&mut self, raw: &[u8], dict: &[u8]) {
        record::put_block(&mut self.blocks, raw, dict);
        self.block_ends.push(self.blocks.len() as u64);
    }

    /// Joins `shards`, whose tools follow each other in this order.
    pub(super) fn join(shards: Vec<Shard>) -> Shard {
        let mut stems = Vec::with_capacity(shards.len());
        let mut rest = Vec::with_capacity(shards.len());
        for mut shard in shards {
            stems.push(std::mem::take(&mut shard.stems));
            rest.push(shard);
        }
        let (merged, maps) = SortedTerms::merge(stems);
        let mut all = Shard {
            stems: merged,
            ..Shard::default()
        };
        for (mut next, map) in rest.into_iter().zip(maps) {
            for_each_id(&mut next.rerank, |id| *id = map[*id as usize]);
            all.append(next);
        }
        all
    }

    /// Adds `next`, whose tools follow this shard's and whose re-ranking words are already
    /// positions in this shard's terms.
    fn append(&mut self, next: Shard) {
        if self.field_lens.is_empty() {
            // The first shard: taken over, not copied.
            let stems = std::mem::take(&mut self.stems);
            *self = Shard { stems, ..next };
            return;
        }
        self.rerank.extend_from_slice(&next.rerank);
        self.field_lens.extend_from_slice(&next.field_lens);
        for (t, n) in self.total_len.iter_mut().zip(next.total_len) {
            *t += n;
        }
        let base = self.names.len() as u64;
        for o in next.doc_offsets.chunks_exact(8) {
            let o = u64::from_le_bytes([o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]]);
            self.doc_offsets
                .extend_from_slice(&(base + o).to_le_bytes());
        }
        self.names.extend_from_slice(&next.names);
        let base = self.blocks.len() as u64;
        self.block_ends
            .extend(next.block_ends.iter().map(|&end| base + end));
        self.blocks.extend_from_slice(&next.blocks);
    }
}

/// Calls `f` on each term id of flat re-ranking lists (each its length, then its ids).
fn for_each_id(words: &mut [u32], mut f: impl FnMut(&mut u32)) {
    let mut at = 0;
    while at < words.len() {
        let count = words[at] as usize;
        let end = (at + 1 + count).min(words.len());
        for id in &mut words[at + 1..end] {
            f(id);
        }
        at = end;
    }
}
