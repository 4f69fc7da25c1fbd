//! Index files whose bytes were changed and whose checksum was then recomputed, as a crafted
//! file would be: opening one and searching it gives a result or a typed error, never a panic.
//!
//! The checksum is recomputed here the way the format describes it (`format.rs`): XXH3 (64 bits)
//! of the header's first 188 bytes followed by everything after the 204-byte header.

use std::path::Path;

use proptest::prelude::*;
use serde_json::json;
use toolgate_search::{Damage, IndexError, Query, SearchIndex, ToolDoc};

const CHECKSUM_AT: usize = 188;
const HEADER_LEN: usize = 204;
const SECTIONS_AT: usize = 92;
const SEC_STEMS: usize = 0;
const SEC_POSTINGS: usize = 1;
const SEC_RECORDS: usize = 3;
const SEC_RERANK_TERMS: usize = 5;

/// Writes the checksum the bytes now have into their header.
fn reseal(bytes: &mut [u8]) {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&bytes[..CHECKSUM_AT]);
    h.update(&bytes[HEADER_LEN..]);
    let h = h.digest();
    bytes[CHECKSUM_AT..CHECKSUM_AT + 8].copy_from_slice(&h.to_le_bytes());
}

/// The byte range of section `i` as the header states it.
fn section(bytes: &[u8], i: usize) -> std::ops::Range<usize> {
    let at = SECTIONS_AT + 16 * i;
    let word = |k: usize| u64::from_le_bytes(bytes[k..k + 8].try_into().unwrap()) as usize;
    let (offset, len) = (word(at), word(at + 8));
    offset..offset + len
}

/// A real small index, as file bytes.
fn index_bytes() -> Vec<u8> {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(build_index_bytes).clone()
}

fn build_index_bytes() -> Vec<u8> {
    let mut docs = Vec::new();
    for (name, description) in [
        ("get_weather", "Current weather for a city."),
        ("get_forecast", "Weather forecast for the next days."),
        ("send_email", "Send an email message to a recipient."),
        ("sendSms", "Send a text message to a phone."),
        ("fs.read_file", "Read a file from disk."),
        ("fs.write_file", "Write a file to disk."),
        (
            "calendar_add_event",
            "Add an event to the calendar at a time.",
        ),
    ] {
        let mut d = ToolDoc::new(name, description);
        d.parameters = json!({"type": "object", "properties": {
            "city": {"type": "string", "description": "The city name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
        }});
        d.aliases = vec![format!("{name}_alias")];
        d.keywords = vec!["daily".into()];
        docs.push(d);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.idx");
    SearchIndex::build(docs).unwrap().write(&path).unwrap();
    std::fs::read(&path).unwrap()
}

const QUERIES: &[&str] = &[
    "weather in Paris",
    "wether",
    "send a message +send",
    "file disk",
    "calendr evnt",
    "forecas",
    "select:get_weather,nope,fs.read_file",
    "celsius daily alias",
];

/// True for the errors that say a file is not a usable index (rather than that it could not be
/// read), naming the file.
fn unusable(e: &IndexError, path: &Path) -> bool {
    e.path() == Some(path)
        && !matches!(e, IndexError::Io { .. })
        && e.to_string()
            .contains("is not a usable toolgate search index")
}

/// Opens `bytes` as an index file, read and mapped, and runs the queries: every outcome but a
/// panic is fine, and an error must be a typed "not a usable index" one, naming the file.
fn open_and_search(bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tampered.idx");
    std::fs::write(&path, bytes).unwrap();
    // SAFETY: the file is this test's own, and nothing changes it while mapped.
    let mapped = unsafe { SearchIndex::open_mapped(&path) };
    for opened in [SearchIndex::open(&path), mapped] {
        match opened {
            Ok(index) => {
                for q in QUERIES {
                    let _ = index.search(&Query::parse(q).unwrap(), 5);
                    let _ = index.search_explained(&Query::parse(q).unwrap(), 5);
                }
                let _ = index.names().count();
                let _ = index.get("get_weather");
            }
            Err(e) => prop_assert!(unusable(&e, &path), "{e}"),
        }
    }
    Ok(())
}

fn expect_invalid(bytes: &[u8], what: &str) -> IndexError {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tampered.idx");
    std::fs::write(&path, bytes).unwrap();
    let err = SearchIndex::open(Path::new(&path)).expect_err(what);
    assert!(unusable(&err, &path), "{what}: {err}");
    err
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    /// Anywhere in the file after the header: a few bytes changed.
    #[test]
    fn a_resealed_index_with_changed_bytes_opens_or_is_refused_without_panicking(
        changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)
    ) {
        let mut bytes = index_bytes();
        let body = bytes.len() - HEADER_LEN;
        for (at, value) in changes {
            bytes[HEADER_LEN + at.index(body)] = value;
        }
        reseal(&mut bytes);
        open_and_search(&bytes)?;
    }

    /// In the term dictionary or the postings, where a changed byte is most likely to reach a
    /// decoder: one to three bytes set, or one flipped.
    #[test]
    fn a_resealed_index_with_a_changed_dictionary_or_postings_never_panics(
        sec in prop_oneof![Just(SEC_STEMS), Just(SEC_POSTINGS), Just(SEC_RERANK_TERMS)],
        changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), any::<bool>()), 1..4)
    ) {
        let mut bytes = index_bytes();
        let range = section(&bytes, sec);
        for (at, value, flip) in changes {
            let i = range.start + at.index(range.len());
            bytes[i] = if flip { bytes[i] ^ (1 << (value % 8)) } else { value };
        }
        reseal(&mut bytes);
        open_and_search(&bytes)?;
    }

    /// A section's offset or length in the header changed.
    #[test]
    fn a_resealed_index_with_changed_section_bounds_never_panics(
        field in 0usize..12,
        value in prop_oneof![0u64..4096, any::<u64>()],
    ) {
        let mut bytes = index_bytes();
        let at = SECTIONS_AT + 8 * field;
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
        reseal(&mut bytes);
        open_and_search(&bytes)?;
    }
}

#[test]
fn resealing_an_unchanged_index_keeps_it_valid() {
    let mut bytes = index_bytes();
    let before = bytes.clone();
    reseal(&mut bytes);
    assert_eq!(
        bytes, before,
        "the test computes the checksum as the format does"
    );
}

#[test]
fn a_dictionary_root_outside_the_dictionary_is_an_invalid_index() {
    let mut bytes = index_bytes();
    let stems = section(&bytes, SEC_STEMS);
    // An fst ends with the root address, the key count and a 4-byte checksum of its own.
    let root_at = stems.end - 4 - 8;
    bytes[root_at..root_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    reseal(&mut bytes);
    let err = expect_invalid(&bytes, "a root address past the end");
    assert!(
        matches!(
            err,
            IndexError::Dictionary { .. } | IndexError::Damaged { .. }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("term dictionary"), "{err}");
}

/// The bytes a list at `at` takes if its count is `count`: for a list of one tool, the count,
/// the tool number and the impact; else the count, one block's header and its packed gaps,
/// impacts (bits 0-3 of the flags: their width) and name bits.
fn list_len(bytes: &[u8], at: usize, count: usize) -> usize {
    if count == 1 {
        // No block: the tool number (one byte in these small indexes) and the impact.
        return 4;
    }
    let (doc_bits, flags) = (usize::from(bytes[at + 1]), bytes[at + 2]);
    let impact_bits = usize::from(flags & 0x0f);
    let names = if flags & 0x80 != 0 {
        count.div_ceil(8)
    } else {
        0
    };
    5 + (count * doc_bits).div_ceil(8) + (count * impact_bits).div_ceil(8) + names
}

/// The start of each postings list of the section `postings` (format v5: a varint count, then
/// blocks of a 4-byte header and bit-packed gaps, impacts and name bits; this small index has
/// no list of 128 tools or more, so one block a list).
fn lists(bytes: &[u8], postings: std::ops::Range<usize>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = postings.start;
    while at < postings.end {
        let count = usize::from(bytes[at]);
        assert!(count < 128, "one-byte count");
        out.push((at, count));
        at += list_len(bytes, at, count);
    }
    assert_eq!(at, postings.end, "the lists tile the section");
    out
}

/// Where the first list of more than one tool (one written in a block) starts.
fn first_block_list(bytes: &[u8]) -> usize {
    let postings = section(bytes, SEC_POSTINGS);
    lists(bytes, postings)
        .into_iter()
        .find(|&(_, count)| count >= 2)
        .expect("a term of two tools")
        .0
}

fn damage(err: &IndexError) -> Option<&Damage> {
    match err {
        IndexError::Damaged { damage, .. } => Some(damage),
        _ => None,
    }
}

#[test]
fn a_postings_list_naming_a_tool_past_the_catalog_is_an_invalid_index() {
    let mut bytes = index_bytes();
    let postings = section(&bytes, SEC_POSTINGS);
    let (at, _) = *lists(&bytes, postings)
        .iter()
        .find(|(_, count)| *count == 1)
        .expect("a term of one tool");
    // A list of one holds its tool number as a varint: one byte here.
    bytes[at + 1] = 100;
    reseal(&mut bytes);
    let err = expect_invalid(&bytes, "a tool number past the catalog");
    assert!(
        matches!(
            damage(&err),
            Some(Damage::ToolOutOfRange {
                tool: 100,
                tools: 7,
                ..
            })
        ),
        "{err}"
    );
}

#[test]
fn a_postings_block_with_gaps_wider_than_32_bits_is_an_invalid_index() {
    let mut bytes = index_bytes();
    let at = first_block_list(&bytes);
    bytes[at + 1] = 33;
    reseal(&mut bytes);
    let err = expect_invalid(&bytes, "a gap width of 33 bits");
    assert!(
        matches!(damage(&err), Some(Damage::BadBlock { block: 0, .. })),
        "{err}"
    );
}

#[test]
fn a_postings_block_with_an_impact_above_the_largest_is_an_invalid_index() {
    let mut bytes = index_bytes();
    let at = first_block_list(&bytes);
    // The block's smallest impact, 0xffff, is past 32767 whatever is added to it.
    bytes[at + 3..at + 5].copy_from_slice(&[0xff, 0xff]);
    reseal(&mut bytes);
    let err = expect_invalid(&bytes, "an impact above 32767");
    assert!(
        matches!(damage(&err), Some(Damage::BadBlock { block: 0, .. })),
        "{err}"
    );
}

#[test]
fn a_postings_list_whose_blocks_run_past_the_section_is_an_invalid_index() {
    let mut bytes = index_bytes();
    let postings = section(&bytes, SEC_POSTINGS);
    let (last, _) = *lists(&bytes, postings.clone()).last().expect("a list");
    // The last list says it holds 127 tools: its block needs more bytes than are left.
    bytes[last] = 127;
    reseal(&mut bytes);
    let err = expect_invalid(&bytes, "a block past the section");
    assert!(
        matches!(damage(&err), Some(Damage::Overrun { .. })),
        "{err}"
    );
}

#[test]
fn a_postings_list_cut_short_is_an_invalid_index() {
    let mut bytes = index_bytes();
    let postings = section(&bytes, SEC_POSTINGS);
    let (at, count) = *lists(&bytes, postings)
        .iter()
        .find(|&&(at, count)| {
            count >= 2 && list_len(&bytes, at, count - 1) < list_len(&bytes, at, count)
        })
        .expect("a term of two tools whose packed values take a byte more than one fewer would");
    // One tool fewer: the list ends before the next one starts.
    bytes[at] = (count - 1) as u8;
    reseal(&mut bytes);
    let err = expect_invalid(&bytes, "a list shorter than its bytes");
    assert!(
        matches!(
            damage(&err),
            Some(Damage::Misplaced { .. } | Damage::Tail { .. } | Damage::Overrun { .. })
        ),
        "{err}"
    );
}

/// Whether `err` is the damage of a wrong tool records head.
fn records_head_damage(err: &IndexError) -> bool {
    matches!(damage(err), Some(Damage::RecordsHead { .. }))
}

#[test]
fn a_texts_dictionary_longer_than_the_records_is_an_invalid_index() {
    let mut bytes = index_bytes();
    let records = section(&bytes, SEC_RECORDS);
    bytes[records.start + 8..records.start + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    reseal(&mut bytes);
    let err = expect_invalid(&bytes, "a dictionary past the section");
    assert!(records_head_damage(&err), "{err}");
}

#[test]
fn a_records_block_count_that_does_not_fit_the_tools_is_an_invalid_index() {
    let mut bytes = index_bytes();
    let records = section(&bytes, SEC_RECORDS);
    bytes[records.start + 4..records.start + 8].copy_from_slice(&1000u32.to_le_bytes());
    reseal(&mut bytes);
    let err = expect_invalid(&bytes, "a thousand blocks for seven tools");
    assert!(records_head_damage(&err), "{err}");
}

#[test]
fn a_records_block_offset_past_the_section_is_an_invalid_index() {
    let mut bytes = index_bytes();
    let records = section(&bytes, SEC_RECORDS);
    let dict = u32::from_le_bytes(
        bytes[records.start + 8..records.start + 12]
            .try_into()
            .unwrap(),
    );
    // The end of the first block, after the three u32 and the dictionary and the first start.
    let at = records.start + 12 + dict as usize + 4;
    bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    reseal(&mut bytes);
    let err = expect_invalid(&bytes, "a block ending past the section");
    assert!(records_head_damage(&err), "{err}");
}

#[test]
fn a_changed_texts_dictionary_reads_as_other_text_or_nothing_without_panicking() {
    let bytes = index_bytes();
    let records = section(&bytes, SEC_RECORDS);
    let dict = u32::from_le_bytes(
        bytes[records.start + 8..records.start + 12]
            .try_into()
            .unwrap(),
    );
    assert!(dict > 0, "the index has a dictionary");
    for at in (0..dict as usize).step_by(7) {
        let mut bad = bytes.clone();
        bad[records.start + 12 + at] ^= 0xa5;
        reseal(&mut bad);
        open_and_search(&bad).unwrap();
    }
}

#[test]
fn a_name_lengths_table_of_another_size_is_an_invalid_index() {
    let mut bytes = index_bytes();
    // The name lengths' (section 4) length, in the header.
    let at = SECTIONS_AT + 16 * 4 + 8;
    let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    bytes[at..at + 8].copy_from_slice(&(len - 1).to_le_bytes());
    reseal(&mut bytes);
    let err = expect_invalid(&bytes, "a name length short");
    assert!(matches!(err, IndexError::TableSize { .. }), "{err}");
}

#[test]
fn a_tool_offsets_table_whose_width_byte_does_not_fit_it_is_an_invalid_index() {
    let bytes = index_bytes();
    // The tool offsets (section 2): a width byte, then that many bytes a tool.
    let offsets = section(&bytes, 2);
    let width = bytes[offsets.start];
    assert!((1..=4).contains(&width), "{width}");
    for other in (0..=5).filter(|&w| w != width) {
        let mut bad = bytes.clone();
        bad[offsets.start] = other;
        reseal(&mut bad);
        let err = expect_invalid(&bad, "a tool offsets table of another width");
        assert!(matches!(err, IndexError::TableSize { .. }), "{err}");
    }
}
