//! Writing an index to a file and opening it again.

use serde_json::json;
use toolgate_search::{IndexError, Query, Ranking, SearchIndex, Section, ToolDoc};

fn built() -> SearchIndex {
    let mut a = ToolDoc::new("get_weather", "Current weather for a city.");
    a.parameters = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    a.aliases = vec!["forecast".into()];
    a.keywords = vec!["rain".into()];
    let b = ToolDoc::new("send_email", "Send an email message.");
    SearchIndex::build(vec![a, b]).expect("builds")
}

fn written(index: &SearchIndex) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tools.idx");
    index.write(&path).expect("writes");
    (dir, path)
}

#[test]
fn written_index_opens_and_searches_the_same() {
    let index = built();
    let (_dir, path) = written(&index);
    let opened = SearchIndex::open(&path).expect("opens");
    assert_eq!(opened.len(), index.len());
    assert_eq!(
        opened.names().collect::<Vec<_>>(),
        index.names().collect::<Vec<_>>()
    );
    for q in [
        "weather",
        "wether city",
        "rain",
        "email +send",
        "select:send_email,nope",
    ] {
        let q = Query::parse(q).unwrap();
        assert_eq!(
            opened.search_explained(&q, 5),
            index.search_explained(&q, 5)
        );
    }
    assert_eq!(opened.get("get_weather"), index.get("get_weather"));
}

#[test]
fn a_mapped_index_searches_as_a_read_one() {
    let index = built();
    let (_dir, path) = written(&index);
    let read = SearchIndex::open(&path).expect("opens");
    // SAFETY: the file is this test's own, and nothing changes it while mapped.
    let mapped = unsafe { SearchIndex::open_mapped(&path) }.expect("maps");
    assert_eq!(mapped.size_bytes(), read.size_bytes());
    for q in [
        "weather",
        "wether city",
        "email +send",
        "select:get_weather",
    ] {
        let q = Query::parse(q).unwrap();
        assert_eq!(mapped.search_explained(&q, 5), read.search_explained(&q, 5));
    }
    assert_eq!(mapped.get("send_email"), read.get("send_email"));
}

#[test]
fn a_mapped_open_checks_the_file_as_a_read_one_does() {
    let (_dir, path) = written(&built());
    let mut bytes = std::fs::read(&path).unwrap();
    let version = bytes[8];
    bytes[8] = 99;
    std::fs::write(&path, &bytes).unwrap();
    // SAFETY: the file is this test's own, and nothing changes it while mapped.
    let err = unsafe { SearchIndex::open_mapped(&path) }.unwrap_err();
    assert!(
        matches!(err, IndexError::UnsupportedVersion { found: 99, .. }),
        "{err}"
    );
    let last = bytes.len() - 1;
    bytes[8] = version;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    // SAFETY: as above.
    let err = unsafe { SearchIndex::open_mapped(&path) }.unwrap_err();
    assert!(matches!(err, IndexError::ChecksumMismatch { .. }), "{err}");
}

#[test]
fn an_opened_index_keeps_the_ranking_it_was_built_with() {
    let docs = vec![
        ToolDoc::new("get_weather", "Current weather for a city."),
        ToolDoc::new("send_email", "Send an email message about the weather."),
    ];
    let ranking = Ranking {
        k1: 0.9,
        weight: [5.0, 0.5, 0.6, 0.4, 2.5, 2.0],
        ..Ranking::default()
    };
    let index = SearchIndex::build_with(docs, ranking).expect("builds");
    let (_dir, path) = written(&index);
    let opened = SearchIndex::open(&path).expect("opens");
    assert_eq!(opened.ranking().k1, 0.9);
    assert_eq!(opened.ranking().weight, ranking.weight);
    let q = Query::parse("weather email").unwrap();
    assert_eq!(
        opened.search_explained(&q, 5),
        index.search_explained(&q, 5)
    );
}

#[test]
fn with_ranking_that_changes_term_weights_equals_building_with_it() {
    let docs = vec![
        ToolDoc::new("get_weather", "Current weather for a city."),
        ToolDoc::new("send_email", "Send an email message about the weather."),
        ToolDoc::new("weather_alerts", "Storm and weather alerts for a region."),
    ];
    let ranking = Ranking {
        k1: 0.5,
        b: [0.0; 6],
        name_coverage: 0.1,
        ..Ranking::default()
    };
    let direct = SearchIndex::build_with(docs.clone(), ranking).expect("builds");
    let changed = SearchIndex::build(docs)
        .expect("builds")
        .with_ranking(ranking);
    assert_eq!(changed.ranking(), direct.ranking());
    for q in ["weather", "weather alerts email", "storm"] {
        let q = Query::parse(q).unwrap();
        assert_eq!(
            changed.search_explained(&q, 5),
            direct.search_explained(&q, 5)
        );
    }
}

#[test]
fn truncated_index_file_is_an_error_naming_the_file() {
    let (_dir, path) = written(&built());
    let bytes = std::fs::read(&path).unwrap();
    for len in [0, 7, 100, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..len]).unwrap();
        let err = SearchIndex::open(&path).unwrap_err();
        assert!(
            matches!(
                err,
                IndexError::TooShort { .. }
                    | IndexError::SectionOutOfBounds { .. }
                    | IndexError::LengthMismatch { .. }
            ),
            "len {len}: {err}"
        );
        assert_eq!(err.path(), Some(path.as_path()));
        assert!(err.to_string().contains("tools.idx"));
    }
}

#[test]
fn a_file_shorter_than_the_header_says_how_short() {
    let (_dir, path) = written(&built());
    std::fs::write(&path, b"TGSEARCH").unwrap();
    let err = SearchIndex::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            IndexError::TooShort {
                len: 8,
                header: 204,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_section_past_the_end_is_an_error_with_its_bounds() {
    let (_dir, path) = written(&built());
    let bytes = std::fs::read(&path).unwrap();
    let cut = bytes.len() - 1;
    std::fs::write(&path, &bytes[..cut]).unwrap();
    let err = SearchIndex::open(&path).unwrap_err();
    let IndexError::SectionOutOfBounds {
        section,
        offset,
        len,
        file_len,
        ..
    } = err
    else {
        panic!("{err}");
    };
    // The last section, the re-ranking vocabulary, ends where the file ended.
    assert_eq!(section, Section::RerankTerms);
    assert_eq!(offset + len, bytes.len() as u64);
    assert_eq!(file_len, cut as u64);
}

#[test]
fn every_flipped_byte_is_detected() {
    let (_dir, path) = written(&built());
    let bytes = std::fs::read(&path).unwrap();
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x20;
        std::fs::write(&path, &bad).unwrap();
        assert!(
            SearchIndex::open(&path).is_err(),
            "flip at byte {i} went unnoticed"
        );
    }
}

#[test]
fn a_flipped_byte_after_the_header_is_a_checksum_mismatch() {
    let (_dir, path) = written(&built());
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let err = SearchIndex::open(&path).unwrap_err();
    assert!(
        matches!(err, IndexError::ChecksumMismatch { stored, computed, .. } if stored != computed),
        "{err}"
    );
}

#[test]
fn foreign_file_is_a_bad_magic_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not-an-index");
    std::fs::write(&path, vec![b'x'; 4096]).unwrap();
    let err = SearchIndex::open(&path).unwrap_err();
    assert!(matches!(err, IndexError::BadMagic { .. }), "{err}");
    assert!(err.to_string().contains("magic"), "{err}");
}

#[test]
fn other_format_version_is_an_error_asking_for_a_rebuild() {
    let (_dir, path) = written(&built());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8] = 99;
    std::fs::write(&path, &bytes).unwrap();
    let err = SearchIndex::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            IndexError::UnsupportedVersion {
                expected: 9,
                found: 99,
                ..
            }
        ),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("version 99") && text.contains("rebuild"),
        "{text}"
    );
}

/// Version 2 had a sixth section (an always empty fst of unstemmed terms); version 3 dropped
/// it; version 4 stores the re-ranking words and added a section for their vocabulary; version
/// 5 stores the postings in bit-packed blocks; version 6 quantises the impacts and keeps one
/// name length a tool instead of six field lengths; version 7 has another checksum (XXH3);
/// version 8 stores a description's re-ranking words once for the tools that share it; version
/// 9 front-codes the names. The
/// version is read before anything else of the layout, so an older header is refused as such,
/// whatever follows it.
#[test]
fn an_older_index_is_refused_with_the_version_found_and_expected() {
    let (_dir, path) = written(&built());
    let bytes = std::fs::read(&path).unwrap();
    for old in [2u32, 3, 4, 5, 6, 7, 8] {
        let mut bytes = bytes.clone();
        bytes[8..12].copy_from_slice(&old.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let err = SearchIndex::open(&path).unwrap_err();
        assert!(
            matches!(
                err,
                IndexError::UnsupportedVersion {
                    expected: 9,
                    found,
                    ..
                } if found == old
            ),
            "{err}"
        );
    }
}

#[test]
fn missing_index_file_is_an_io_error() {
    let err = SearchIndex::open(std::path::Path::new("/nonexistent/x.idx")).unwrap_err();
    assert!(matches!(err, IndexError::Io { .. }));
}

#[test]
fn an_io_error_names_the_file_and_leaves_the_cause_to_its_source() {
    let err = SearchIndex::open(std::path::Path::new("/nonexistent/x.idx")).unwrap_err();
    let source = std::error::Error::source(&err).expect("the I/O error");
    assert_eq!(err.to_string(), "index file /nonexistent/x.idx");
    assert!(!err.to_string().contains(&source.to_string()));
}

#[test]
fn write_replaces_an_existing_file() {
    let (_dir, path) = written(&built());
    SearchIndex::build(vec![ToolDoc::new("only", "one")])
        .unwrap()
        .write(&path)
        .unwrap();
    assert_eq!(
        SearchIndex::open(&path)
            .unwrap()
            .names()
            .collect::<Vec<_>>(),
        ["only"]
    );
}
