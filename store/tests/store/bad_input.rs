//! Bad input is refused with a typed error, and a dead backend fails fast: never a hang, never a panic.

use std::collections::BTreeMap;

use crate::common::chain;
use toolgate_store::{
    ConfigError, IdError, IdKind, NewResult, ObjectResultStore, ResultId, ResultStore, SessionId,
    StoreError,
};

fn id_err(s: &str) -> StoreError {
    StoreError::from(ResultId::parse(s).unwrap_err())
}

fn session_err(s: &str) -> StoreError {
    StoreError::from(SessionId::parse(s).unwrap_err())
}

#[test]
fn an_id_with_path_traversal_is_an_invalid_id() {
    for s in ["../x", "a/b", "..", "a\\b", "r.1"] {
        assert_eq!(id_err(s).kind(), "invalid_id", "{s:?}");
    }
}

#[test]
fn an_empty_or_blank_id_is_an_invalid_id() {
    assert!(matches!(ResultId::parse(""), Err(IdError::Empty { .. })));
    assert!(matches!(
        ResultId::parse(" \t\n"),
        Err(IdError::Blank { .. })
    ));
    assert_eq!(id_err("").kind(), "invalid_id");
}

#[test]
fn an_id_with_surrounding_whitespace_is_an_invalid_id() {
    assert!(matches!(
        ResultId::parse(" r_1"),
        Err(IdError::SurroundingWhitespace { .. })
    ));
    assert!(matches!(
        ResultId::parse("r_1\n"),
        Err(IdError::SurroundingWhitespace { .. })
    ));
}

#[test]
fn a_10_kb_id_is_an_invalid_id_with_a_short_message() {
    let err = id_err(&"a".repeat(10_000));
    assert!(
        matches!(
            err,
            StoreError::InvalidId(IdError::TooLong {
                len: 10_000,
                max: 128,
                ..
            })
        ),
        "{err:?}"
    );
    let err = id_err(&format!("{}/", "a".repeat(100)));
    assert!(chain(&err).len() < 300, "{err:?}");
}

#[test]
fn a_padded_or_blank_session_id_is_an_invalid_session() {
    for s in [" s", "s ", "\ts", "", "   ", &"x".repeat(257)] {
        assert_eq!(session_err(s).kind(), "invalid_session", "{s:?}");
    }
    assert!(
        SessionId::parse(&"é".repeat(128)).is_ok(),
        "256 bytes is the limit, not 256 characters"
    );
}

#[test]
fn a_record_with_a_padded_session_cannot_be_deserialized() {
    let json = r#"{"id":"r_1","session":" s","tool":null,"content_type":"text/plain","bytes":1,"chars":1,"created_at_ms":0}"#;
    let err = serde_json::from_str::<toolgate_store::ResultMeta>(json).unwrap_err();
    assert!(err.to_string().contains("whitespace"), "{err}");
}

#[test]
fn a_store_url_with_an_unknown_scheme_or_a_relative_path_is_a_config_error() {
    let none = BTreeMap::<String, String>::new();
    for url in [
        "ftp://h/x",
        "file://relative",
        "not a url",
        "s3:///no-bucket",
    ] {
        let err = ObjectResultStore::from_url_opts(url, &none).unwrap_err();
        assert_eq!(err.kind(), "config", "{url}: {err}");
    }
    let err = ObjectResultStore::from_url_opts("s3://b/p", [("no_such_option", "1")]).unwrap_err();
    assert_eq!(err.kind(), "config");
    let err = ObjectResultStore::from_url_opts("memory://", [("endpoint", "x")]).unwrap_err();
    assert_eq!(err.kind(), "config");
}

#[test]
fn a_config_error_carries_what_was_wrong_as_typed_data() {
    let err = ObjectResultStore::from_url("ftp://h/x").unwrap_err();
    let StoreError::Config(ConfigError::UnsupportedScheme { scheme, url }) = &err else {
        panic!("expected an unsupported scheme, got {err:?}");
    };
    assert_eq!((scheme.as_str(), url.as_str()), ("ftp", "ftp://h/x"));
}

#[test]
fn a_session_id_error_is_an_invalid_session_by_its_kind() {
    let err = SessionId::parse("").unwrap_err();
    assert_eq!(err.id_kind(), IdKind::Session);
    assert!(matches!(
        StoreError::from(err),
        StoreError::InvalidSession(IdError::Empty {
            what: IdKind::Session
        })
    ));
}

#[test]
fn a_store_error_keeps_its_cause_in_its_source_and_not_in_its_text() {
    let errors = [
        ObjectResultStore::from_url("ftp://h/x").unwrap_err(),
        session_err(" s"),
        id_err("a/b"),
    ];
    for err in errors {
        let cause = std::error::Error::source(&err)
            .unwrap_or_else(|| panic!("no source: {err:?}"))
            .to_string();
        assert!(!err.to_string().contains(&cause), "{err}");
        assert_eq!(chain(&err), format!("{err}: {cause}"));
    }
}

#[cfg(not(feature = "s3"))]
#[test]
fn an_s3_url_in_a_build_without_the_s3_feature_is_a_config_error_saying_so() {
    let err = ObjectResultStore::from_url("s3://bucket/prefix").unwrap_err();
    assert!(
        matches!(&err, StoreError::Config(ConfigError::S3NotBuilt { url }) if url == "s3://bucket/prefix"),
        "{err:?}"
    );
    assert!(
        chain(&err).contains("this program was built without the s3 feature"),
        "{err:?}"
    );
}

/// A dead S3 server, with the `s3` feature.
#[cfg(feature = "s3")]
mod unreachable_s3 {
    use std::collections::BTreeMap;
    use std::time::{Duration, Instant};

    use toolgate_store::{NewResult, ObjectResultStore, ResultId, ResultStore, StoreError};

    /// A port that nothing listens on: bound, then released.
    fn closed_port() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }

    #[tokio::test]
    async fn an_unreachable_s3_store_fails_with_a_backend_error_within_seconds() {
        // No retry options: the store's own defaults must already fail fast.
        let options = BTreeMap::from([
            ("endpoint", format!("http://127.0.0.1:{}", closed_port())),
            ("allow_http", "true".into()),
            ("access_key_id", "k".into()),
            ("secret_access_key", "s".into()),
            ("region", "us-east-1".into()),
        ]);
        let store = ObjectResultStore::from_url_opts("s3://bucket/prefix", &options).unwrap();
        let started = Instant::now();
        let save = store.save(NewResult::new(None), "text");
        let err = tokio::time::timeout(Duration::from_secs(20), save)
            .await
            .expect("save hung")
            .unwrap_err();
        assert!(matches!(err, StoreError::Backend { .. }), "{err:?}");
        let err = tokio::time::timeout(
            Duration::from_secs(20),
            store.read_chars(&ResultId::generate(), 0, 1),
        )
        .await
        .expect("read hung")
        .unwrap_err();
        assert_eq!(err.kind(), "backend");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "took {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_corrupt_record_is_reported_as_corrupt_not_as_a_panic() {
    use object_store::{ObjectStoreExt, PutPayload};
    let store = ObjectResultStore::in_memory();
    let id = ResultId::generate();
    let key = store.prefix().clone().join("meta").join(id.as_str());
    store
        .backend()
        .put(&key, PutPayload::from("{not json"))
        .await
        .unwrap();
    assert_eq!(store.meta(&id).await.unwrap_err().kind(), "corrupt");
    let other = ResultId::generate();
    let meta = store
        .save(NewResult::new(None).with_id(other.clone()), "x")
        .await
        .unwrap();
    assert_eq!(meta.id, other);
    // The record of `other`, copied under `id`: a record must describe the id it is stored under.
    let raw = store
        .backend()
        .get(&store.prefix().clone().join("meta").join(other.as_str()))
        .await
        .unwrap();
    store
        .backend()
        .put(&key, PutPayload::from(raw.bytes().await.unwrap()))
        .await
        .unwrap();
    let err = store.meta(&id).await.unwrap_err();
    assert!(chain(&err).contains("is for"), "{err:?}");
}
