//! Checks an opened index's term dictionary and postings before any search uses them, so that a
//! file whose checksum matches but whose content was crafted is refused at open with
//! [`crate::IndexError::Damaged`] instead of panicking in a search.
//!
//! The checksum only tells a damaged file from an intact one; it is no defence against a file
//! written to look valid. Everything a search reads is therefore either bounds-checked where it
//! is read (records, name lengths, postings lists, see `format::Reader`) or checked here once:
//!
//! * **The fst maps.** `fst` decodes nodes with unchecked arithmetic and slice indexing, and
//!   `Map::new` validates little, so crafted nodes can make it panic or, through a cycle, walk
//!   forever. [`fst_structure`] visits every node reachable from the root once, decoding each
//!   of its transitions as every later lookup or automaton walk would, and requires that each
//!   transition point to a lower address (as fst's builder writes them; this rules out cycles)
//!   and that every node without transitions be final (so every walk ends in a key). The walk
//!   runs under [`catch_quietly`]: a node that makes `fst` panic becomes an error.
//! * **The postings.** [`postings`] streams every `(term, offset)` of the stem map, in term
//!   order, and requires the lists to tile the postings section exactly as the builder writes
//!   them (first at 0, each next right after the last, the last ending at the section's end),
//!   each decoding block by block (see `postings.rs`: widths in range, no block past the
//!   section, impacts at most 32767) to strictly ascending tool numbers below the tool count.
//!   A search can then index its per-tool arrays by any tool number it reads.
//! * **The tool records' head.** [`records_head`] requires one block per `B` tools (`B` at
//!   least 1), a texts' dictionary inside the section, and block offsets that start right
//!   after the head and never decrease or leave the section. A block's content is checked
//!   where it is read (`record::Block::of_tool`): a bad one is a typed error for that tool.
//!
//! The cost at 100,000 tools is given on `SearchIndex::open`.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use fst::{Map, Streamer};

use crate::error::Damage;
use crate::postings::{Block, BlockError, PostingList};

thread_local! {
    /// Set while this thread runs [`catch_quietly`]: its panics are expected and reported as errors.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

static HOOK: Once = Once::new();

/// Runs `f`, turning a panic into `Err(message)`. While `f` runs, the panic hook stays silent
/// for this thread only (a panic here is a finding about the file, not a crash to report);
/// every other thread's panics, and this thread's outside `f`, reach the previous hook as
/// before. The wrapping hook is installed once, on first use.
pub(crate) fn catch_quietly<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    // Only reads of immutable data happen inside: nothing is left half-updated by a panic.
    let out = panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    out.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into())
    })
}

/// Checks that every node reachable from the root decodes, that every transition points to a
/// lower address inside the map, and that every node without transitions is final.
pub(crate) fn fst_structure<D: AsRef<[u8]>>(map: &Map<D>) -> Result<(), Damage> {
    let fst = map.as_fst();
    let size = fst.as_bytes().len();
    let root = fst.root().addr();
    // One bit per byte address: each node is decoded once, however many paths lead to it.
    let mut seen = vec![0u64; size.div_ceil(64)];
    let mut todo = vec![root];
    while let Some(addr) = todo.pop() {
        let node = fst.node(addr);
        // (The root of an empty map is the one node that may lead nowhere.)
        if node.is_empty() && !node.is_final() && addr != root {
            return Err(Damage::DeadEnd { node: addr });
        }
        for t in node.transitions() {
            // A target is written before the node that points to it.
            if t.addr >= addr {
                return Err(Damage::ForwardLink {
                    node: addr,
                    target: t.addr,
                });
            }
            let (word, bit) = (t.addr / 64, 1u64 << (t.addr % 64));
            if seen[word] & bit == 0 {
                seen[word] |= bit;
                todo.push(t.addr);
            }
        }
    }
    Ok(())
}

/// Checks that the stem map's offsets and the postings section agree exactly (see the module
/// docs), that every list's tool numbers ascend strictly and stay below `tools`, and that the
/// map holds as many terms as it says. `key_budget` bounds the total bytes of the terms, so
/// that a crafted map with a huge number of long keys is refused instead of walked.
pub(crate) fn postings<D: AsRef<[u8]>>(
    map: &Map<D>,
    postings: &[u8],
    tools: usize,
    key_budget: usize,
) -> Result<(), Damage> {
    let mut stream = map.stream();
    let mut expected = 0usize;
    let (mut terms, mut key_bytes) = (0usize, 0usize);
    while let Some((key, offset)) = stream.next() {
        terms += 1;
        key_bytes = key_bytes.saturating_add(key.len());
        if key_bytes > key_budget {
            return Err(Damage::TermsTooLong);
        }
        let term = || String::from_utf8_lossy(key).into_owned();
        if usize::try_from(offset).ok() != Some(expected) {
            return Err(Damage::Misplaced {
                term: term(),
                offset,
                expected: expected as u64,
            });
        }
        let list = PostingList::new(postings, expected);
        let count_len = varint_len(list.len());
        if list.len() == 0 && postings.get(expected) != Some(&0) {
            return Err(Damage::Overrun { term: term() });
        }
        let mut blocks = list.blocks();
        let mut block = Block::new();
        let mut index = 0usize;
        loop {
            match blocks.next_into(&mut block) {
                Ok(false) => break,
                Ok(true) => {}
                Err(BlockError::Overrun) => return Err(Damage::Overrun { term: term() }),
                Err(BlockError::DocOverflow) => {
                    return Err(Damage::ToolOutOfRange {
                        term: term(),
                        tool: u32::MAX,
                        tools,
                    });
                }
                Err(e @ (BlockError::Width | BlockError::ImpactOverflow)) => {
                    return Err(Damage::BadBlock {
                        term: term(),
                        block: index,
                        reason: match e {
                            BlockError::Width => "a width is out of range",
                            _ => "an impact is above 32767",
                        },
                    });
                }
            }
            // Decoded tool numbers ascend strictly: the last is the largest.
            let last = block.docs[block.len - 1];
            if last as usize >= tools {
                return Err(Damage::ToolOutOfRange {
                    term: term(),
                    tool: last,
                    tools,
                });
            }
            index += 1;
        }
        expected += count_len + blocks.consumed();
    }
    if expected != postings.len() {
        return Err(Damage::Tail {
            end: expected,
            len: postings.len(),
        });
    }
    if terms != map.len() {
        return Err(Damage::TermCount {
            found: terms,
            stated: map.len(),
        });
    }
    Ok(())
}

/// The bytes of the shortest LEB128 varint of `v` (as the builder writes counts).
fn varint_len(v: usize) -> usize {
    let bits = usize::BITS - (v | 1).leading_zeros();
    bits.div_ceil(7) as usize
}

/// Checks the head of the tool records section `section` of an index of `tools` tools (see
/// `format.rs`): the block count agrees with the tool count, the dictionary fits, and the block
/// offsets start after the head and never decrease or pass the section's end.
pub(crate) fn records_head(section: &[u8], tools: usize) -> Result<(), Damage> {
    let bad = |reason| Damage::RecordsHead { reason };
    let mut r = crate::format::Reader::new(section, 0);
    let per_block = r.u32().ok_or(bad("it is cut short"))? as usize;
    let blocks = r.u32().ok_or(bad("it is cut short"))? as usize;
    if per_block == 0 || blocks != tools.div_ceil(per_block) {
        return Err(bad("its block count does not fit the tools"));
    }
    let dict = r.u32().ok_or(bad("it is cut short"))? as usize;
    r.take(dict)
        .ok_or(bad("the texts' dictionary runs past the section"))?;
    let offsets_end = blocks
        .checked_add(1)
        .and_then(|n| n.checked_mul(4))
        .and_then(|n| n.checked_add(r.pos))
        .ok_or(bad("its block offsets run past the section"))?;
    let mut previous = offsets_end;
    for k in 0..=blocks {
        let offset = r
            .u32()
            .ok_or(bad("its block offsets run past the section"))? as usize;
        if (k == 0 && offset != offsets_end) || offset < previous || offset > section.len() {
            return Err(bad("a block offset is out of place"));
        }
        previous = offset;
    }
    Ok(())
}
