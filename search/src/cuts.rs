//! Where each postings list crosses the middle tool, so that a split first stage (see
//! `score.rs` and `worker.rs`) can start scoring the upper half of the tools in the middle of a
//! list without decoding its lower blocks.
//!
//! The file format has no such index (the index must not grow: 11.95 MiB of a 12 MiB cap at
//! 100,000 tools), and a block's position depends on the widths of all the blocks before it.
//! But every list is decoded once anyway when an index is opened (`check::postings`): that
//! pass records, for every list of two or more blocks, where the first block holding a tool
//! numbered `n / 2` or above starts (its byte position, its number, and the tool number
//! before it), or where the list ends if none does. The builder records the same table as it
//! writes the lists (`postings::put_postings_into` tells it where each block starts), so an
//! index built in memory does not walk its lists again; both feed the one [`CutsBuilder`],
//! which owns the rule. A list of one block (128 tools at most) has no entry: both halves
//! decode it, each keeping its own tools.
//!
//! The entries are in list order, which is term order and offset order (lists tile the
//! postings section), and looked up by binary search on the offset: 16 bytes a list of two
//! or more blocks. At 100,000 tools (the speed bench's catalog), 1,889 of the 108,088 lists
//! have two or more blocks: 30,224 bytes; at BFCL's 2,723 tools, 91 lists, 1,456 bytes.
//! Recording the table while writing saves a built index the walk: at 100,000 tools, opening
//! a file, which runs the whole check of it, takes 8.6 ms, and an in-memory build took 370 ms
//! against 377 before (criterion medians; within their noise).

use crate::postings::{BLOCK, BlockSink, BlockStart};

/// The table of where each list of two or more blocks reaches the middle tool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cuts {
    /// The first tool of the upper half: `n / 2`.
    mid: u32,
    /// Each entry's list offset, ascending.
    lists: Vec<u32>,
    /// Each entry's start of the upper half.
    starts: Vec<BlockStart>,
}

impl Cuts {
    /// The first tool of the upper half.
    pub(crate) fn mid(&self) -> usize {
        self.mid as usize
    }

    /// Where the upper half of the list at `offset` starts, if the list has two or more blocks.
    pub(crate) fn upper(&self, offset: u64) -> Option<BlockStart> {
        let offset = u32::try_from(offset).ok()?;
        let i = self.lists.binary_search(&offset).ok()?;
        self.starts.get(i).copied()
    }

    /// The bytes the table holds (its vectors' capacity).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.lists.capacity() * size_of::<u32>() + self.starts.capacity() * size_of::<BlockStart>()
    }

    /// Entries: lists of two or more blocks.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lists.len()
    }
}

/// Builds [`Cuts`] from the lists decoded in order, block by block.
pub(crate) struct CutsBuilder {
    cuts: Cuts,
    /// The list being decoded: its offset, if it has two or more blocks and no entry yet.
    open: Option<u32>,
}

impl CutsBuilder {
    /// A table for an index of `tools` tools.
    pub(crate) fn new(tools: usize) -> CutsBuilder {
        CutsBuilder {
            cuts: Cuts {
                mid: u32::try_from(tools / 2).unwrap_or(u32::MAX),
                ..Cuts::default()
            },
            open: None,
        }
    }

    /// A list of `count` tools starts at `offset` of the section.
    pub(crate) fn list(&mut self, offset: usize, count: usize) {
        // (Offsets past 4 GiB have no entry: their upper halves are decoded from the start.)
        self.open = match u32::try_from(offset) {
            Ok(offset) if count > BLOCK => Some(offset),
            _ => None,
        };
    }

    /// Adds the entries of `run`, a table of lists written `base` bytes into the section (an
    /// entry whose offset would pass 4 GiB is left out, as [`CutsBuilder::list`] leaves it).
    pub(crate) fn append(&mut self, run: Cuts, base: usize) {
        for (list, start) in run.lists.into_iter().zip(run.starts) {
            let offset = usize::try_from(list)
                .ok()
                .and_then(|l| l.checked_add(base))
                .and_then(|o| u32::try_from(o).ok());
            if let Some(offset) = offset {
                self.cuts.lists.push(offset);
                self.cuts.starts.push(start);
            }
        }
    }

    fn record(&mut self, block: usize, pos: usize, next_doc: u64) {
        let start = (
            u32::try_from(block),
            u32::try_from(pos),
            u32::try_from(next_doc),
        );
        if let (Some(list), (Ok(block), Ok(pos), Ok(next_doc))) = (self.open.take(), start) {
            self.cuts.lists.push(list);
            self.cuts.starts.push(BlockStart {
                pos,
                block,
                next_doc,
            });
        }
    }

    pub(crate) fn finish(mut self) -> Cuts {
        self.cuts.lists.shrink_to_fit();
        self.cuts.starts.shrink_to_fit();
        self.cuts
    }
}

/// The blocks of the current list (opened with [`CutsBuilder::list`]), as they are decoded
/// (`check.rs`) or written (`postings::put_postings_into`).
impl BlockSink for CutsBuilder {
    fn block(&mut self, block: usize, pos: usize, next_doc: u64, last: u32) {
        if self.open.is_some() && last >= self.cuts.mid {
            self.record(block, pos, next_doc);
        }
    }

    fn end(&mut self, blocks: usize, end: usize, next_doc: u64) {
        if self.open.is_some() {
            self.record(blocks, end, next_doc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_two_or_more_blocks_gets_the_first_block_reaching_the_middle() {
        let mut b = CutsBuilder::new(1000);
        b.list(40, 300);
        b.block(0, 0, 0, 300);
        b.block(1, 90, 301, 620);
        b.block(2, 170, 621, 900);
        b.end(3, 200, 901);
        let cuts = b.finish();
        let want = BlockStart {
            pos: 90,
            block: 1,
            next_doc: 301,
        };
        assert_eq!(cuts.upper(40), Some(want));
    }

    #[test]
    fn a_list_wholly_below_the_middle_has_its_upper_half_at_its_end() {
        let mut b = CutsBuilder::new(1000);
        b.list(0, 200);
        b.block(0, 0, 0, 300);
        b.block(1, 90, 301, 400);
        b.end(2, 130, 401);
        let want = BlockStart {
            pos: 130,
            block: 2,
            next_doc: 401,
        };
        assert_eq!(b.finish().upper(0), Some(want));
    }

    #[test]
    fn a_list_of_one_block_has_no_entry() {
        let mut b = CutsBuilder::new(1000);
        b.list(0, 128);
        b.block(0, 0, 0, 900);
        b.end(1, 60, 901);
        let cuts = b.finish();
        assert_eq!((cuts.len(), cuts.upper(0)), (0, None));
    }
}
