//! The tests of `record.rs` (apart so that it stays under 800 lines): tool texts written in
//! compressed blocks and read back, the shared description and `enum` word lists, and every
//! kind of damage a records section can have, each a typed error.

use super::*;

/// The dictionary the tests' blocks are compressed with.
const DICT: &[u8] = br#"does things{"type":"object","properties":{"p":{"enum":["#;

/// A records section of `n` tools' texts, in blocks as the builder writes them.
fn section(n: usize) -> Vec<u8> {
    let (mut blocks, mut ends, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let schema = serde_json::json!({"type": "object", "properties": {"p": {"enum": [i]}}});
        let aliases = vec![format!("alias {i}")];
        put_text(
            &mut raw,
            &format!("tool {i} does things"),
            &schema,
            &aliases,
            &[],
        );
        if (i + 1) % BLOCK_TOOLS == 0 || i + 1 == n {
            put_block(&mut blocks, &raw, DICT);
            ends.push(blocks.len() as u64);
            raw.clear();
        }
    }
    let mut out = Vec::new();
    put_head(&mut out, DICT, &ends).unwrap();
    out.extend_from_slice(&blocks);
    out
}

/// A tool's name and its name, description and `enum` words.
type Hot<'a> = (&'a str, Vec<u32>, Vec<u32>, Vec<u32>);

/// Hot records of `tools`, back to back, and where each starts.
fn hot_records(tools: &[Hot<'_>]) -> (Vec<u8>, Vec<usize>) {
    let (mut out, mut starts) = (vec![0xee; 3], Vec::new());
    let mut seen = SharedLists::default();
    let mut previous = "";
    for (name, words, description, enums) in tools {
        starts.push(out.len());
        crate::names::put_coded(&mut out, previous.as_bytes(), name.as_bytes());
        put_rerank(&mut out, words, description, enums, &mut seen);
        previous = name;
    }
    (out, starts)
}

/// The re-ranking words of the hot record at `start`, read past its front-coded name.
fn read_back(out: &[u8], start: usize) -> [Vec<u32>; 3] {
    let hot = HotRecord {
        name: "",
        r: Reader::new(out, start),
    };
    let (_, mut words) = rerank_of(hot).unwrap();
    let mut lists: [Vec<u32>; 3] = Default::default();
    for list in &mut lists {
        let n = words.list(|v| list.push(v));
        assert_eq!(n, list.len());
    }
    lists
}

#[test]
fn a_repeated_description_and_enum_pair_is_stored_once_and_read_back_whole() {
    let description: Vec<u32> = (0..40).map(|i| i * 37 % 300).collect();
    let tools = vec![
        ("a", vec![1, 2], description.clone(), vec![5, 900]),
        ("b", vec![3], vec![7, 8, 9], vec![]),
        ("c", vec![1, 2, 4], description.clone(), vec![5, 900]),
        ("d", vec![], description.clone(), vec![5]),
        ("e", vec![6], description.clone(), vec![5, 900]),
    ];
    let (out, starts) = hot_records(&tools);
    for ((_, words, description, enums), &start) in tools.iter().zip(&starts) {
        let lists = read_back(&out, start);
        assert_eq!(lists, [words.clone(), description.clone(), enums.clone()]);
    }
    // "c" and "e" refer back to "a"'s pair: a few bytes each instead of "d"'s 40 numbers.
    let lens = [
        starts[3] - starts[2],
        starts[4] - starts[3],
        out.len() - starts[4],
    ];
    assert!(lens[0] < 10 && lens[1] > 40 && lens[2] < 10, "{lens:?}");
}

#[test]
fn a_reference_to_another_reference_or_out_of_the_section_reads_as_no_list() {
    let (mut out, starts) = hot_records(&[
        ("a", vec![1], vec![2; 30], vec![3]),
        ("b", vec![1], vec![2; 30], vec![3]),
    ]);
    // A third record whose pair refers to "b"'s, itself a reference.
    let third = out.len();
    crate::names::put_coded(&mut out, b"b", b"c");
    format::put_varint(&mut out, 0);
    // "b"'s pair: after its name (shared 0, length 1, "b") and its name words (1, 1).
    let at_b = starts[1] + 3 + 2;
    let back = out.len() - at_b - 1;
    format::put_varint(&mut out, ((back as u32) << 1) | 1);
    let lists = read_back(&out, third);
    assert!(lists.iter().all(Vec::is_empty), "{lists:?}");
    // One that reaches back before the section's start.
    let fourth = out.len();
    crate::names::put_coded(&mut out, b"c", b"d");
    format::put_varint(&mut out, 0);
    let back = out.len() as u32 + 5;
    format::put_varint(&mut out, (back << 1) | 1);
    let lists = read_back(&out, fourth);
    assert!(lists.iter().all(Vec::is_empty), "{lists:?}");
}

#[test]
fn each_tool_reads_back_the_text_its_block_was_given() {
    let bytes = section(70);
    for tool in 0..70 {
        let block = Block::of_tool(&bytes, tool).unwrap();
        let text = block.text(tool).unwrap();
        assert_eq!(text.description, format!("tool {tool} does things"));
        let schema = serde_json::json!({"type": "object", "properties": {"p": {"enum": [tool]}}});
        assert_eq!(text.parameters_json, schema.to_string());
        assert_eq!(text.aliases, [format!("alias {tool}")]);
        assert!(text.keywords.is_empty());
    }
}

#[test]
fn a_tool_past_the_blocks_is_a_record_error() {
    let bytes = section(40);
    assert!(matches!(
        Block::of_tool(&bytes, 64),
        Err(RecordError::Record { tool: 64 })
    ));
}

#[test]
fn a_truncated_section_gives_an_error_for_the_blocks_it_cuts() {
    let bytes = section(40);
    let end_of = |block: usize| {
        let at = 12 + DICT.len() + 4 * (block + 1);
        u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize
    };
    for cut in 0..bytes.len() {
        for (tool, block) in [(0, 0), (39, 39 / BLOCK_TOOLS)] {
            let read = Block::of_tool(&bytes[..cut], tool).and_then(|b| {
                b.text(tool)?;
                Ok(())
            });
            assert_eq!(
                read.is_err(),
                cut < end_of(block),
                "cut at {cut}, tool {tool}"
            );
        }
    }
}

#[test]
fn every_altered_byte_reads_as_some_text_or_a_typed_error_without_panicking() {
    let bytes = section(40);
    for at in 0..bytes.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[at] ^= flip;
            for tool in [0, 5, 33, 39] {
                // Either outcome is fine; what matters is that there is one.
                let _ = Block::of_tool(&bad, tool).and_then(|b| b.text(tool).map(|_| ()));
            }
        }
    }
}

#[test]
fn a_block_stating_more_than_its_bytes_can_hold_is_refused_before_decompressing() {
    let mut bytes = section(3);
    let start = head_len(1, DICT.len());
    bytes[start..start + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        Block::of_tool(&bytes, 0),
        Err(RecordError::BlockSize { block: 0, stated, .. }) if stated == u64::from(u32::MAX)
    ));
}

#[test]
fn a_block_that_is_not_lz4_is_a_decompress_error() {
    let mut bytes = section(3);
    let start = head_len(1, DICT.len()) + 4;
    // An LZ4 sequence whose match reaches back before the start of the output.
    bytes[start..start + 4].copy_from_slice(&[0x0f, 0xff, 0xff, 0x00]);
    assert!(matches!(
        Block::of_tool(&bytes, 1),
        Err(RecordError::Decompress { block: 0, .. })
    ));
}

#[test]
fn a_block_offset_outside_the_section_is_a_bounds_error() {
    let mut bytes = section(3);
    let end = 12 + DICT.len() + 4;
    bytes[end..end + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        Block::of_tool(&bytes, 2),
        Err(RecordError::BlockBounds { block: 0 })
    ));
}

#[test]
fn a_dictionary_longer_than_the_section_is_a_dictionary_error() {
    let mut bytes = section(3);
    bytes[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        Block::of_tool(&bytes, 0),
        Err(RecordError::Dictionary { len }) if len == u64::from(u32::MAX)
    ));
}

#[test]
fn a_changed_dictionary_reads_as_other_text_or_a_typed_error() {
    for at in 12..12 + DICT.len() {
        let mut bytes = section(20);
        bytes[at] ^= 0x80;
        for tool in [0, 7, 19] {
            match Block::of_tool(&bytes, tool).and_then(|b| Ok(b.text(tool)?.description.len())) {
                Ok(_) | Err(RecordError::Text { .. }) | Err(RecordError::Decompress { .. }) => {}
                Err(e) => panic!("byte {at}, tool {tool}: {e}"),
            }
        }
    }
}

#[test]
fn blocks_compressed_against_the_dictionary_are_smaller() {
    let with = section(40);
    let (mut plain, mut ends, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..40 {
        let schema = serde_json::json!({"type": "object", "properties": {"p": {"enum": [i]}}});
        put_text(
            &mut raw,
            &format!("tool {i} does things"),
            &schema,
            &[format!("alias {i}")],
            &[],
        );
        if (i + 1) % BLOCK_TOOLS == 0 || i + 1 == 40 {
            put_block(&mut plain, &raw, &[]);
            ends.push(plain.len() as u64);
            raw.clear();
        }
    }
    let blocks_with = with.len() - head_len(ends.len(), DICT.len());
    assert!(
        blocks_with < plain.len(),
        "{blocks_with} >= {}",
        plain.len()
    );
}

#[test]
fn a_block_whose_text_stops_short_is_a_text_error() {
    let (mut raw, mut blocks) = (Vec::new(), Vec::new());
    put_text(&mut raw, "whole", &serde_json::Value::Null, &[], &[]);
    raw.extend_from_slice(&100u32.to_le_bytes());
    put_block(&mut blocks, &raw, DICT);
    let mut bytes = Vec::new();
    put_head(&mut bytes, DICT, &[blocks.len() as u64]).unwrap();
    bytes.extend_from_slice(&blocks);
    let block = Block::of_tool(&bytes, 1).unwrap();
    assert!(block.text(0).is_ok());
    assert!(matches!(block.text(1), Err(RecordError::Text { tool: 1 })));
}

#[test]
fn numbers_of_every_varint_width_read_back_as_written() {
    // One, two, three, four and five bytes, at each width's edges.
    let numbers = vec![
        0,
        127,
        128,
        16_383,
        16_384,
        2_097_151,
        2_097_152,
        268_435_455,
        268_435_456,
        u32::MAX,
    ];
    let tools = vec![("a", numbers.clone(), numbers.clone(), numbers.clone())];
    let (out, starts) = hot_records(&tools);
    assert_eq!(
        read_back(&out, starts[0]),
        [numbers.clone(), numbers.clone(), numbers]
    );
}

#[test]
fn a_list_cut_short_by_the_section_end_gives_the_numbers_before_the_cut() {
    let tools = vec![("a", vec![5, 300, 7], vec![], vec![])];
    let (out, starts) = hot_records(&tools);
    // The record ends inside the two bytes of 300: only 5 is read, and the count says so.
    let end = out.len() - 4;
    let hot = HotRecord {
        name: "",
        r: Reader::new(&out[..end], starts[0]),
    };
    let (_, mut words) = rerank_of(hot).unwrap();
    let mut got = Vec::new();
    assert_eq!(words.list(|v| got.push(v)), 1);
    assert_eq!(got, [5]);
}
