//! Writing an index to a file and opening it again.

use serde_json::json;
use toolgate_search::{IndexError, Query, Ranking, SearchIndex, ToolDoc};

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
        assert_eq!(opened.search(&q, 5), index.search(&q, 5));
    }
    assert_eq!(opened.get("get_weather"), index.get("get_weather"));
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
    assert_eq!(opened.search(&q, 5), index.search(&q, 5));
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
        assert_eq!(changed.search(&q, 5), direct.search(&q, 5));
    }
}

#[test]
fn truncated_index_file_is_an_error() {
    let (_dir, path) = written(&built());
    let bytes = std::fs::read(&path).unwrap();
    for len in [0, 7, 100, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..len]).unwrap();
        let err = SearchIndex::open(&path).unwrap_err();
        assert!(
            matches!(err, IndexError::Invalid { .. }),
            "len {len}: {err}"
        );
        assert!(err.to_string().contains("tools.idx"));
    }
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
fn foreign_file_is_an_error_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not-an-index");
    std::fs::write(&path, vec![b'x'; 4096]).unwrap();
    let err = SearchIndex::open(&path).unwrap_err().to_string();
    assert!(err.contains("magic"), "{err}");
}

#[test]
fn other_format_version_is_an_error_asking_for_a_rebuild() {
    let (_dir, path) = written(&built());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8] = 99;
    std::fs::write(&path, &bytes).unwrap();
    let err = SearchIndex::open(&path).unwrap_err().to_string();
    assert!(
        err.contains("version 99") && err.contains("rebuild"),
        "{err}"
    );
}

#[test]
fn missing_index_file_is_an_io_error() {
    let err = SearchIndex::open(std::path::Path::new("/nonexistent/x.idx")).unwrap_err();
    assert!(matches!(err, IndexError::Io { .. }));
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
