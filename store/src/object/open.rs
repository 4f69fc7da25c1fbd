//! Building an [`ObjectResultStore`]: over a backend you configured, in memory, or from a URL.

use std::collections::BTreeMap;
use std::sync::Arc;

use object_store::ObjectStore;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;

use super::layout::ObjectResultStore;
use crate::error::{ConfigError, StoreError};

impl ObjectResultStore {
    /// A store over `backend`, keeping everything under `prefix` (`""` for the root).
    ///
    /// A local-disk backend given here is used through its `ObjectStore` face only, so
    /// [`ResultStore::prune`](crate::ResultStore::prune) cannot see the files it stages writes in; a
    /// store from a `file://` URL ([`ObjectResultStore::from_url`]) does.
    pub fn new(backend: Arc<dyn ObjectStore>, prefix: &str) -> Result<Self, StoreError> {
        Ok(Self::over(backend, key_prefix(prefix)?))
    }

    /// A fresh, empty store in memory, for tests and for runs that need nothing to outlive the process.
    pub fn in_memory() -> Self {
        Self::over(Arc::new(InMemory::new()), Path::default())
    }

    /// A store chosen by URL (SPEC R7), with default settings; see [`ObjectResultStore::from_url_opts`].
    ///
    /// ```
    /// use toolgate_store::ObjectResultStore;
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = ObjectResultStore::from_url(&format!("file://{}/results", dir.path().display())).unwrap();
    /// assert_eq!(ObjectResultStore::from_url("ftp://host/x").unwrap_err().kind(), "config");
    /// ```
    pub fn from_url(url: &str) -> Result<Self, StoreError> {
        Self::from_url_opts(url, std::iter::empty::<(&str, &str)>())
    }

    /// A store chosen by URL (SPEC R7):
    ///
    /// - `memory://` — in this process only; every call makes a new, empty store.
    /// - `file:///absolute/dir` — on local disk; the directory is created if missing.
    /// - `s3://bucket/optional/prefix` — on S3 or a compatible server, in a build with the `s3`
    ///   feature; without it, such a URL fails with [`ConfigError::S3NotBuilt`].
    ///
    /// For S3, `options` take the keys of `object_store`'s `AmazonS3ConfigKey` and `ClientConfigKey`
    /// (`endpoint`, `region`, `access_key_id`, `secret_access_key`, `allow_http`, `timeout`,
    /// `connect_timeout`, ...) plus `max_retries` and `retry_timeout` (e.g. `"500ms"`, `"15s"`, in
    /// object_store's own duration grammar). What
    /// they leave unset comes from the usual `AWS_*` environment variables, then from defaults that fail
    /// fast: 5 s to connect, 3 retries within 15 s. Other schemes take no options.
    ///
    /// ```
    /// use toolgate_store::ObjectResultStore;
    /// let options = [("endpoint", "http://127.0.0.1:9000"), ("allow_http", "true"), ("region", "us-east-1")];
    /// let opened = ObjectResultStore::from_url_opts("s3://bucket/toolgate", options);
    /// assert_eq!(opened.is_ok(), cfg!(feature = "s3"));
    /// let err = ObjectResultStore::from_url_opts("memory://", [("no_such_option", "1")]).unwrap_err();
    /// assert_eq!(err.kind(), "config");
    /// ```
    pub fn from_url_opts<I, K, V>(url: &str, options: I) -> Result<Self, StoreError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let options: BTreeMap<String, String> = options
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned()))
            .collect();
        Self::open(url, options).map_err(StoreError::Config)
    }

    fn over(backend: Arc<dyn ObjectStore>, prefix: Path) -> Self {
        ObjectResultStore {
            backend,
            prefix,
            local_dir: None,
        }
    }

    fn open(url: &str, options: BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let parsed = url::Url::parse(url).map_err(|error| ConfigError::BadUrl {
            url: url.to_owned(),
            error,
        })?;
        let no_options = |scheme: &'static str| match options.keys().next() {
            Some(key) => Err(ConfigError::NoOptions {
                scheme,
                key: key.clone(),
            }),
            None => Ok(()),
        };
        match parsed.scheme() {
            "memory" => {
                no_options("memory")?;
                let prefix = format!("{}/{}", parsed.host_str().unwrap_or(""), parsed.path());
                Ok(Self::over(Arc::new(InMemory::new()), key_prefix(&prefix)?))
            }
            "file" => {
                no_options("file")?;
                let dir = parsed
                    .to_file_path()
                    .map_err(|()| ConfigError::NotAbsolutePath {
                        url: url.to_owned(),
                    })?;
                if let Err(error) = std::fs::create_dir_all(&dir) {
                    return Err(ConfigError::CreateDir { dir, error });
                }
                let fs = match LocalFileSystem::new_with_prefix(&dir) {
                    Ok(fs) => fs,
                    Err(error) => return Err(ConfigError::LocalDir { dir, error }),
                };
                Ok(ObjectResultStore {
                    backend: Arc::new(fs),
                    prefix: Path::default(),
                    local_dir: Some(dir),
                })
            }
            "s3" | "s3a" => open_s3(url, &parsed, &options),
            other => Err(ConfigError::UnsupportedScheme {
                scheme: other.to_owned(),
                url: url.to_owned(),
            }),
        }
    }
}

/// The key prefix a store keeps everything under; surrounding slashes do not count.
fn key_prefix(prefix: &str) -> Result<Path, ConfigError> {
    Path::parse(prefix.trim_matches('/')).map_err(|error| ConfigError::BadPrefix {
        prefix: prefix.to_owned(),
        error,
    })
}

#[cfg(feature = "s3")]
fn open_s3(
    url: &str,
    parsed: &url::Url,
    options: &BTreeMap<String, String>,
) -> Result<ObjectResultStore, ConfigError> {
    let bucket =
        parsed
            .host_str()
            .filter(|b| !b.is_empty())
            .ok_or_else(|| ConfigError::NoBucket {
                url: url.to_owned(),
            })?;
    let s3 = super::s3::from_options(bucket, options)?;
    Ok(ObjectResultStore::over(
        Arc::new(s3),
        key_prefix(parsed.path())?,
    ))
}

/// Without the `s3` feature there is no S3 backend to open: say so instead of "unsupported scheme".
#[cfg(not(feature = "s3"))]
fn open_s3(
    url: &str,
    _parsed: &url::Url,
    _options: &BTreeMap<String, String>,
) -> Result<ObjectResultStore, ConfigError> {
    Err(ConfigError::S3NotBuilt {
        url: url.to_owned(),
    })
}
