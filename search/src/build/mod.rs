//! Building an index: tool documents in, the bytes of an index file out (see `format.rs`).
//!
//! Tools are numbered in name order and split into terms ([`crate::fields`]) by up to eight
//! threads, each a contiguous run of tools ([`shard`]); the runs are joined in order, the stored
//! impacts computed from the ranking's `k1`, `weight` and `b` ([`crate::ranking`]), and the
//! postings lists and the term fst written ([`terms`]). Each worker compresses its tools' texts
//! in blocks as it goes (runs start at block boundaries), so the build never holds the
//! catalog's text uncompressed beside the catalog itself. The bytes do not depend on the number
//! of threads.

mod doc;
mod parts;
mod runs;
mod schema;
mod shard;
mod terms;
mod write;

use doc::Doc;
pub(crate) use parts::Built;
use parts::Parts;
use runs::{in_aligned_runs, sorted};
use shard::Shard;
pub(crate) use write::Written;

use std::path::Path;

use crate::error::IndexError;
use crate::field::{FIELDS, Field};
use crate::ranking::ImpactParams;
use crate::{format, record};

/// Serialises an index of `docs` with impacts computed for `params`, on as many threads as
/// pays for the catalog's size. Tool names must be non-empty and unique.
pub(crate) fn serialize<D: Doc>(docs: &[D], params: ImpactParams) -> Result<Built, IndexError> {
    serialize_on(docs, params, workers_for(docs.len()))
}

/// [`serialize`] of documents the build may drop once their terms and records are taken,
/// before the index is put together (a catalog's text is as large as the index's records).
pub(crate) fn serialize_owned<D: Doc + Send>(
    docs: Vec<D>,
    params: ImpactParams,
) -> Result<Built, IndexError> {
    Ok(parts_owned(docs, params)?.into_built())
}

/// [`serialize_owned`] written to the file at `path` (replacing it, as
/// [`crate::SearchIndex::write`] does) without putting the file together in memory: the
/// sections are written where they go while the checksum is computed (see [`write`]).
pub(crate) fn write_owned<D: Doc + Send>(
    docs: Vec<D>,
    params: ImpactParams,
    path: &Path,
) -> Result<Written, IndexError> {
    write::write_parts(parts_owned(docs, params)?, path)
}

/// The index file of `docs` in parts. The documents are freed on a thread of their own while
/// the shards are joined and the index put together: a catalog's hundreds of thousands of
/// strings took 50 ms to free at 100,000 tools, with the other core idle.
fn parts_owned<D: Doc + Send>(docs: Vec<D>, params: ImpactParams) -> Result<Parts, IndexError> {
    let workers = workers_for(docs.len());
    let (n, shards, dict) = split(&docs, workers)?;
    std::thread::scope(|scope| {
        let freeing = scope.spawn(move || drop(docs));
        let parts = assemble(n, join(shards), &dict, params, workers);
        crate::threads::join_resuming(vec![freeing]);
        parts
    })
}

/// How many threads pay for a catalog of `len` tools.
fn workers_for(len: usize) -> usize {
    if len < 4096 {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |p| p.get().min(8))
    }
}

/// [`serialize`] on `workers` threads.
fn serialize_on<D: Doc>(
    docs: &[D],
    params: ImpactParams,
    workers: usize,
) -> Result<Built, IndexError> {
    let workers = workers.max(1);
    let (n, shards, dict) = split(docs, workers)?;
    Ok(assemble(n, join(shards), &dict, params, workers)?.into_built())
}

/// The tools' count and their terms, records and re-ranking words, numbered in name order and
/// split on `workers` threads, one shard per run of tools ([`join`] them in order), and the
/// dictionary their texts were compressed with. Tool names must be non-empty and unique.
fn split<D: Doc>(docs: &[D], workers: usize) -> Result<(u32, Vec<Shard>, Vec<u8>), IndexError> {
    let workers = workers.max(1);
    let n =
        u32::try_from(docs.len()).map_err(|_| IndexError::TooManyTools { count: docs.len() })?;
    // Tools are numbered in name order. Sorting (name, number) pairs rather than the
    // documents themselves moves 24 bytes instead of a whole document per step, and compares
    // names without looking each document up.
    let by_name: Vec<(&str, u32)> = (0..n).map(|d| (docs[d as usize].name(), d)).collect();
    let by_name = sorted(by_name, workers);
    for pair in by_name.windows(2) {
        if pair[0].0 == pair[1].0 {
            return Err(IndexError::DuplicateName(pair[0].0.to_string()));
        }
    }
    if by_name.first().is_some_and(|(name, _)| name.is_empty()) {
        return Err(IndexError::EmptyName);
    }
    let order: Vec<u32> = by_name.into_iter().map(|(_, d)| d).collect();
    let dict = dictionary(docs, &order);
    let dict = &dict;

    // Split the tools, in name order, into one contiguous run per
    // worker; each splits and interns its run's text on its own, and
    // the runs are joined in order. The result does not depend on the
    // number of workers.
    let shards = in_aligned_runs(&order, workers, record::BLOCK_TOOLS, |first, ids| {
        Shard::build(ids.iter().map(|&d| &docs[d as usize]), first as u32, dict)
    });
    Ok((n, shards, dict.clone()))
}

/// The dictionary the tools' texts are compressed with (see `record::dictionary`), from the
/// texts of [`record::DICT_SAMPLES`] tools evenly spaced in tool order `order`.
fn dictionary<D: Doc>(docs: &[D], order: &[u32]) -> Vec<u8> {
    let samples = record::DICT_SAMPLES.min(order.len());
    let mut fields = crate::fields::DocFields::default();
    let texts: Vec<Vec<u8>> = (0..samples)
        .map(|k| {
            let mut raw = Vec::new();
            docs[order[k * order.len() / samples] as usize].split(&mut fields, &mut raw);
            raw
        })
        .collect();
    record::dictionary(texts.iter().map(Vec::as_slice))
}

/// The shards of [`split`] joined in order.
fn join(shards: Vec<Shard>) -> Shard {
    Shard::join(shards)
}

/// The index file's bytes from the split tools (see [`split`]).
fn assemble(
    n: u32,
    all: Shard,
    dict: &[u8],
    params: ImpactParams,
    workers: usize,
) -> Result<Parts, IndexError> {
    let Shard {
        stems,
        field_lens,
        total_len,
        doc_offsets,
        names,
        blocks,
        block_ends,
        rerank,
    } = all;

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
    // The file keeps only the length a search reads: the name's (see `format.rs`).
    let name_lens: Vec<u8> = (0..n)
        .map(|d| format::name_len_byte(lens_of(d)[Field::Name as usize]))
        .collect();
    drop(field_lens);
    // How often each term occurs in the re-ranking words.
    let mut uses = vec![0u32; stems.postings.len()];
    for_each_rerank_list(&rerank, |list| {
        for &w in list {
            uses[w as usize] += 1;
        }
    });
    let mut postings = Vec::new();
    let finished = stems.finish(
        &mut postings,
        |p| params.impact(&p.tf, &norms[p.doc as usize]),
        workers,
        &uses,
    )?;
    drop(uses);
    // The records section: its head, the blocks of texts, then the hot records.
    let mut records = Vec::with_capacity(
        record::head_len(block_ends.len(), dict.len())
            + blocks.len()
            + names.len()
            + rerank.len() * 2,
    );
    record::put_head(&mut records, dict, &block_ends)?;
    records.extend_from_slice(&blocks);
    drop(blocks);
    let doc_offsets = with_rerank_words(
        &mut records,
        &names,
        &doc_offsets,
        &rerank,
        &finished.rerank.number,
    )?;
    drop((names, rerank));
    let sections: [Vec<u8>; format::SECTIONS] = [
        finished.stems,
        postings,
        doc_offsets,
        records,
        name_lens,
        finished.rerank.fst,
    ];
    let mut head = Vec::with_capacity(format::HEADER_LEN);
    head.extend_from_slice(format::MAGIC);
    head.extend_from_slice(&format::VERSION.to_le_bytes());
    head.extend_from_slice(&n.to_le_bytes());
    for avg in avg_len {
        head.extend_from_slice(&avg.to_le_bytes());
    }
    for v in std::iter::once(params.k1)
        .chain(params.weight)
        .chain(params.b)
    {
        head.extend_from_slice(&v.to_le_bytes());
    }
    let mut offset = format::HEADER_LEN as u64;
    for s in &sections {
        head.extend_from_slice(&offset.to_le_bytes());
        head.extend_from_slice(&(s.len() as u64).to_le_bytes());
        offset += s.len() as u64;
    }
    head.extend_from_slice(&[0; 8]); // checksum, filled in by whoever puts the parts together
    head.extend_from_slice(&offset.to_le_bytes());
    Ok(Parts { n, head, sections })
}

/// Calls `f` with each list of the shards' flat re-ranking words (three per tool, each its
/// length and then its term ids), in order.
fn for_each_rerank_list(words: &[u32], mut f: impl FnMut(&[u32])) {
    let mut rest = words;
    while let Some((&count, tail)) = rest.split_first() {
        let (list, tail) = tail.split_at((count as usize).min(tail.len()));
        f(list);
        rest = tail;
    }
}

/// Appends to `out` each tool's hot record: its name (from `names`, at `doc_offsets`),
/// front-coded against the previous tool's (`names::put_coded`), and its re-ranking words (as vocabulary numbers, see [`record::put_rerank`]); returns where each
/// starts in `out`, as the tool offsets section holds them ([`format::put_offsets`]: a records
/// section of 4 GiB or more is an error).
fn with_rerank_words(
    out: &mut Vec<u8>,
    names: &[u8],
    doc_offsets: &[u8],
    words: &[u32],
    number: &[u32],
) -> Result<Vec<u8>, IndexError> {
    let offsets: Vec<usize> = doc_offsets
        .chunks_exact(8)
        .map(|o| u64::from_le_bytes([o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]]) as usize)
        .collect();
    // One tool's three lists at a time, in buffers reused from tool to tool.
    let mut lists: [Vec<u32>; 3] = Default::default();
    let mut rest = words;
    let mut next_list = |list: &mut Vec<u32>| {
        list.clear();
        if let Some((&count, tail)) = rest.split_first() {
            let (ids, tail) = tail.split_at((count as usize).min(tail.len()));
            list.extend(ids.iter().map(|&w| number[w as usize]));
            rest = tail;
        }
    };
    let mut new_offsets = Vec::with_capacity(offsets.len());
    let mut shared = record::SharedLists::default();
    let mut previous: &[u8] = &[];
    for (i, &start) in offsets.iter().enumerate() {
        let end = offsets.get(i + 1).copied().unwrap_or(names.len());
        let at = u32::try_from(out.len()).map_err(|_| IndexError::RecordsTooLarge {
            bytes: out.len() as u64,
        })?;
        new_offsets.push(at);
        // The worker wrote the name whole, behind its varint length (`record::put_name`).
        let mut r = format::Reader::new(&names[..end], start);
        let name = r.varint().and_then(|n| r.take(n as usize)).unwrap_or(&[]);
        crate::names::put_coded(out, previous, name);
        previous = name;
        let [name, description, enums] = &mut lists;
        next_list(name);
        next_list(description);
        next_list(enums);
        enums.sort_unstable();
        record::put_rerank(out, name, description, enums, &mut shared);
    }
    Ok(format::put_offsets(&new_offsets))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ToolDoc;
    use crate::ranking::Ranking;

    fn catalog(n: usize) -> Vec<ToolDoc> {
        (0..n)
            .map(|i| {
                let mut d = ToolDoc::new(
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
    fn a_catalog_read_with_schemas_as_text_indexes_as_its_tool_docs_do() {
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for d in catalog(5000) {
            writeln!(f, "{}", serde_json::to_string(&d).unwrap()).unwrap();
        }
        // No schema, a null one, one with spaces, key order and numbers to normalise, and an
        // unknown key.
        writeln!(f, r#"{{"name":"zz_none","description":"no schema"}}"#).unwrap();
        writeln!(f, r#"{{"name":"zz_null","parameters":null}}"#).unwrap();
        writeln!(
            f,
            r#"{{"name":"zz_spaced", "parameters": {{ "type": "object", "properties": {{ "b": {{"enum": ["Red Car", 1.50, 1e2]}}, "a": {{"description": "first A"}} }} }}, "extra": [1]}}"#
        )
        .unwrap();
        // Schemas read as text ((un)sorted keys, escapes serde_json writes, pretty-printed) and
        // those parsed instead (a `\u` escape, `\/`, a repeated key, -0, a long integer).
        for (i, schema) in [
            r#"{"properties":{"zeta":{"description":"last"},"alpha":{"description":"Say \"hi\"\n\tnow"}}}"#,
            r#"{ "properties" : { "x" : { "enum" : [ "Dark Blue" , 2 , null ] } } , "required" : [ "x" ] }"#,
            r#"{"properties":{"u":{"description":"caf\u00e9 \/ bar"}}}"#,
            r#"{"properties":{"d":{"description":"one"},"d":{"description":"two words"}}}"#,
            r#"{"properties":{"n":{"default":-0,"maximum":123456789012345678901}}}"#,
            r#"{"properties":{"s":{"type":"string","minLength":-3}},"items":{"properties":{"t":{}}}}"#,
            r#"[{"properties":{"not":"a schema"}}]"#,
        ]
        .iter()
        .enumerate()
        {
            writeln!(f, r#"{{"name":"zz_text_{i}","parameters":{schema}}}"#).unwrap();
        }
        let params = ImpactParams::of(&Ranking::default());
        let docs = crate::catalog::read_catalog_jsonl(f.path()).unwrap();
        let lean = crate::catalog::Catalog::read_jsonl(f.path()).unwrap();
        assert_eq!(lean.len(), docs.len());
        let want = serialize(&docs, params).unwrap();
        let got = serialize_owned(lean.tools, params).unwrap();
        assert!(want.bytes == got.bytes);
    }

    #[test]
    fn a_catalog_naming_a_tool_twice_is_refused_naming_it() {
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for d in catalog(5000) {
            writeln!(f, "{}", serde_json::to_string(&d).unwrap()).unwrap();
        }
        writeln!(f, r#"{{"name":"tool_17_list","parameters":{{}}}}"#).unwrap();
        let lean = crate::catalog::Catalog::read_jsonl(f.path()).unwrap();
        let params = ImpactParams::of(&Ranking::default());
        assert!(matches!(
            serialize_owned(lean.tools, params),
            Err(IndexError::DuplicateName(name)) if name == "tool_17_list"
        ));
    }

    #[test]
    fn index_bytes_do_not_depend_on_the_number_of_workers() {
        let docs = catalog(1000);
        let params = ImpactParams::of(&Ranking::default());
        let one = serialize_on(&docs, params, 1).unwrap();
        for workers in [2, 3, 7] {
            let many = serialize_on(&docs, params, workers).unwrap();
            assert!(one.bytes == many.bytes, "{workers} workers");
        }
    }
}
