//! Fixtures shared by the tests: one store per backend, test text, the S3 test server's settings.

use std::collections::BTreeMap;
use std::sync::Arc;

use toolgate_store::ObjectResultStore;
#[cfg(feature = "s3")]
use toolgate_store::ResultId;

/// The backends every behaviour runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Memory,
    File,
    #[cfg(feature = "s3")]
    S3,
}

/// A store under test, and what it takes to open a second, independent instance over the same data.
pub struct Fixture {
    pub kind: Kind,
    pub store: ObjectResultStore,
    pub url: String,
    pub options: BTreeMap<String, String>,
    _dir: Option<tempfile::TempDir>,
}

impl Fixture {
    /// A fresh, empty store of `kind`, or `None` (after saying so) when the S3 server is not configured.
    pub fn new(kind: Kind) -> Option<Fixture> {
        match kind {
            Kind::Memory => Some(Fixture {
                kind,
                store: ObjectResultStore::from_url("memory://").unwrap(),
                url: "memory://".into(),
                options: BTreeMap::new(),
                _dir: None,
            }),
            Kind::File => {
                let dir = tempfile::tempdir().unwrap();
                let url = format!("file://{}/results", dir.path().display());
                Some(Fixture {
                    kind,
                    store: ObjectResultStore::from_url(&url).unwrap(),
                    url,
                    options: BTreeMap::new(),
                    _dir: Some(dir),
                })
            }
            #[cfg(feature = "s3")]
            Kind::S3 => {
                let options = s3_options()?;
                let bucket = s3_bucket();
                // Every test gets its own prefix, so tests never see each other's results.
                let url = format!("s3://{bucket}/t/{}", ResultId::generate());
                Some(Fixture {
                    kind,
                    store: ObjectResultStore::from_url_opts(&url, &options).unwrap(),
                    url,
                    options,
                    _dir: None,
                })
            }
        }
    }

    /// A second store instance over the same data, as another process would open it. For `memory://`,
    /// where a URL names no shared data, it shares the first instance's backend.
    pub fn reopen(&self) -> ObjectResultStore {
        match self.kind {
            Kind::Memory => ObjectResultStore::new(
                Arc::clone(self.store.backend()),
                self.store.prefix().as_ref(),
            )
            .unwrap(),
            #[cfg(feature = "s3")]
            Kind::S3 => ObjectResultStore::from_url_opts(&self.url, &self.options).unwrap(),
            Kind::File => ObjectResultStore::from_url_opts(&self.url, &self.options).unwrap(),
        }
    }
}

/// The options for the S3 test server of `scripts/s3-server.sh` ([`s3_server`]); always
/// `Some`: a missing server fails the test or is started, never skipped.
#[cfg(feature = "s3")]
pub fn s3_options() -> Option<BTreeMap<String, String>> {
    let server = s3_server();
    Some(BTreeMap::from([
        (
            "endpoint".to_owned(),
            server["TOOLGATE_TEST_S3_ENDPOINT"].clone(),
        ),
        (
            "access_key_id".to_owned(),
            server["TOOLGATE_TEST_S3_ACCESS_KEY_ID"].clone(),
        ),
        (
            "secret_access_key".to_owned(),
            server["TOOLGATE_TEST_S3_SECRET_ACCESS_KEY"].clone(),
        ),
        (
            "region".to_owned(),
            server["TOOLGATE_TEST_S3_REGION"].clone(),
        ),
        ("allow_http".to_owned(), "true".to_owned()),
    ]))
}

/// The bucket of the S3 test server.
#[cfg(feature = "s3")]
pub fn s3_bucket() -> String {
    s3_server()["TOOLGATE_TEST_S3_BUCKET"].clone()
}

/// The settings (`TOOLGATE_TEST_S3_*`) of the S3 test server of `scripts/s3-server.sh`: the
/// environment's when `scripts/test.sh` started it. Otherwise, under `scripts/test.sh`
/// (`TOOLGATE_TEST_SUITE` set) or on CI, the test fails with the script to run, since a green
/// run must not hide that the S3 backend went untested; run alone, the test starts the server
/// through the script, which leaves it running (`bash scripts/s3-server.sh stop`).
#[cfg(feature = "s3")]
pub fn s3_server() -> std::collections::BTreeMap<String, String> {
    static SETTINGS: std::sync::OnceLock<std::collections::BTreeMap<String, String>> =
        std::sync::OnceLock::new();
    SETTINGS
        .get_or_init(|| {
            if std::env::var_os("TOOLGATE_TEST_S3_ENDPOINT").is_some() {
                return std::env::vars()
                    .filter(|(name, _)| name.starts_with("TOOLGATE_TEST_S3_"))
                    .collect();
            }
            assert!(
                std::env::var_os("TOOLGATE_TEST_SUITE").is_none()
                    && std::env::var_os("CI").is_none(),
                "TOOLGATE_TEST_S3_ENDPOINT is unset: the S3 test server is not running. Start it \
                 with `eval \"$(bash scripts/s3-server.sh start)\"` (scripts/test.sh does)"
            );
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .expect("the crate is one level below the repository root");
            let out = std::process::Command::new("bash")
                .arg(root.join("scripts/s3-server.sh"))
                .arg("start")
                .current_dir(root)
                .stderr(std::process::Stdio::inherit())
                .output()
                .expect("bash runs scripts/s3-server.sh");
            assert!(
                out.status.success(),
                "`bash scripts/s3-server.sh start` failed ({}): see its messages above",
                out.status
            );
            let settings: std::collections::BTreeMap<String, String> =
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter_map(|line| {
                        let (name, value) = line.strip_prefix("export ")?.split_once('=')?;
                        Some((name.to_owned(), value.to_owned()))
                    })
                    .collect();
            assert!(
                settings.contains_key("TOOLGATE_TEST_S3_ENDPOINT"),
                "`bash scripts/s3-server.sh start` printed no settings: {settings:?}"
            );
            eprintln!(
                "started the S3 test server of scripts/s3-server.sh; it keeps running \
                 (`bash scripts/s3-server.sh stop`)"
            );
            settings
        })
        .clone()
}

/// 1000 characters of ASCII, Latin, CJK and emoji (1 to 4 bytes each), repeated to build big texts.
pub fn block() -> String {
    let mut s = String::new();
    let pieces = ["plain ascii ", "Grüße ", "中文字符 ", "😀🦀 ", "\n"];
    let mut i = 0;
    while s.chars().count() < 1000 {
        s.push_str(pieces[i % pieces.len()]);
        i += 1;
    }
    s.chars().take(1000).collect()
}

/// A text of at least `bytes` bytes made of whole [`block`]s.
pub fn big_text(bytes: usize) -> String {
    let b = block();
    b.repeat(bytes.div_ceil(b.len()))
}

/// Characters `from..to` of `text`, the slow, obviously right way.
pub fn chars_slice(text: &str, from: u64, to: u64) -> String {
    text.chars()
        .skip(from as usize)
        .take((to - from) as usize)
        .collect()
}

/// An error and its sources, joined by `: `, as a person or the model reads it.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(err), |e| e.source())
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}
