//! [`ObjectResultStore`]: the [`ResultStore`] over any `object_store` backend.
//!
//! # Layout
//!
//! Under the store's prefix `P`, one result `ID` is made of three objects:
//!
//! | key | content | written |
//! |---|---|---|
//! | `P/data/ID/NONCE` | the UTF-8 bytes of the result, byte for byte, followed by the character index | first |
//! | `P/owner/none/ID` or `P/owner/s/HEX.../ids/ID` | nothing: a marker that lists the result under its owner | second |
//! | `P/meta/ID` | the JSON record: [`ResultMeta`] plus `NONCE` and the index stride | last, create-only |
//!
//! The record is the *commit point*. It is written with [`PutMode::Create`], so two saves of one id
//! cannot both win, and only after everything it points to is in place, so a reader that finds a record
//! finds a whole result, and a reader that finds none reports [`StoreError::NotFound`]. A save that dies
//! half-way leaves a data object or a marker with no record: garbage that [`ResultStore::prune`] removes.
//! On local disk (`file://`), a save killed while the backend writes an object leaves the file the backend
//! stages it in, `KEY#N`, which the backend's listing never shows; `prune` looks for those in the store's
//! directory and removes the ones last written before its cutoff. The random `NONCE` means a losing
//! duplicate save never overwrites the winner's data.
//!
//! A record that cannot be read (it does not parse, or describes another id or impossible sizes) makes
//! its result unreadable, but never the store: listings skip it and report it ([`ResultStore::listing`]),
//! and `delete` of its id, `delete_session` of the session whose marker lists it, and `prune` (by the age
//! of the record object) remove the record, the data and the marker.
//!
//! Markers let a session's results be listed and deleted without looking at any other session's
//! objects; the session id is hex-encoded into the key ([`SessionId::key_segments`]), so no session id
//! can reach outside its directory.
//!
//! # Paging in time proportional to the page
//!
//! The character index is a list of little-endian `u64`: entry `j` is the byte offset of character
//! `j * stride` (for every `j * stride <= chars`). To read characters `a..b`, the store reads the index
//! entries around `a` and `b` (one small range read) and then only the bytes between them (a second range
//! read): at most `(b - a + 2 * stride) * 4` bytes, whatever the size of the result.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    BackoffConfig, ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    RetryConfig,
};
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::id::{ResultId, SessionId};
use crate::staging;
use crate::store::ResultStore;
use crate::types::{
    ListFilter, Listing, NewResult, Page, PruneReport, ResultMeta, Scope, Unreadable,
};

/// Characters between two entries of the character index.
///
/// Smaller means less data read per page and a bigger index: 4096 gives at most ~32 KiB of extra reading
/// per page and an index of 0.2% of an ASCII result.
pub const INDEX_STRIDE_CHARS: u64 = 4096;

/// How many backend requests list, delete and prune keep in flight at once.
const CONCURRENCY: usize = 16;

/// The version of the JSON record this code writes and understands.
const RECORD_VERSION: u32 = 1;

/// The JSON record at `P/meta/ID`.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    version: u32,
    #[serde(flatten)]
    meta: ResultMeta,
    /// The `NONCE` of the data object.
    blob: String,
    /// [`INDEX_STRIDE_CHARS`] at the time of writing.
    stride: u64,
}

/// A [`ResultStore`] over any [`ObjectStore`]: memory, local disk, S3 and the rest.
///
/// Build one from a URL with [`ObjectResultStore::from_url`], or from a backend you configured yourself
/// with [`ObjectResultStore::new`]. Cloning is cheap and clones share the backend. Several instances,
/// in one process or many, may use the same backend and prefix at once: all coordination happens through
/// create-only writes.
#[derive(Debug, Clone)]
pub struct ObjectResultStore {
    backend: Arc<dyn ObjectStore>,
    prefix: Path,
    /// For a `file://` store, its directory: `prune` also looks there for the files the backend
    /// stages writes in, which its listing hides.
    local_dir: Option<PathBuf>,
}

/// Default client settings for S3, chosen so that an unreachable store fails a tool call within seconds
/// instead of the minutes of `object_store`'s defaults (SPEC R9 wants the failure reported, not a hang).
const S3_DEFAULTS: &[(&str, &str)] = &[("connect_timeout", "5s"), ("timeout", "60s")];
const DEFAULT_MAX_RETRIES: usize = 3;
const DEFAULT_RETRY_TIMEOUT: Duration = Duration::from_secs(15);

impl ObjectResultStore {
    /// A store over `backend`, keeping everything under `prefix` (`""` for the root).
    ///
    /// A local-disk backend given here is used through its `ObjectStore` face only, so
    /// [`ResultStore::prune`] cannot see the files it stages writes in; a store from a `file://` URL
    /// ([`ObjectResultStore::from_url`]) does.
    pub fn new(backend: Arc<dyn ObjectStore>, prefix: &str) -> Result<Self, StoreError> {
        let prefix = Path::parse(prefix.trim_matches('/'))
            .map_err(|e| StoreError::Config(format!("bad key prefix {prefix:?}: {e}")))?;
        Ok(ObjectResultStore {
            backend,
            prefix,
            local_dir: None,
        })
    }

    /// A fresh, empty store in memory, for tests and for runs that need nothing to outlive the process.
    pub fn in_memory() -> Self {
        ObjectResultStore {
            backend: Arc::new(InMemory::new()),
            prefix: Path::default(),
            local_dir: None,
        }
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
    /// - `s3://bucket/optional/prefix` — on S3 or a compatible server.
    ///
    /// For S3, `options` take the keys of `object_store`'s `AmazonS3ConfigKey` and `ClientConfigKey`
    /// (`endpoint`, `region`, `access_key_id`, `secret_access_key`, `allow_http`, `timeout`,
    /// `connect_timeout`, ...) plus `max_retries` and `retry_timeout` (e.g. `"500ms"`, `"15s"`). What
    /// they leave unset comes from the usual `AWS_*` environment variables, then from defaults that fail
    /// fast: 5 s to connect, 3 retries within 15 s. Other schemes take no options.
    ///
    /// ```
    /// use toolgate_store::ObjectResultStore;
    /// let options = [("endpoint", "http://127.0.0.1:9000"), ("allow_http", "true"), ("region", "us-east-1")];
    /// let store = ObjectResultStore::from_url_opts("s3://bucket/toolgate", options).unwrap();
    /// let err = ObjectResultStore::from_url_opts("s3://bucket", [("no_such_option", "1")]).unwrap_err();
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
        let parsed = url::Url::parse(url)
            .map_err(|e| StoreError::Config(format!("bad store URL {url:?}: {e}")))?;
        let no_options = |scheme: &str| match options.keys().next() {
            Some(key) => Err(StoreError::Config(format!(
                "a {scheme}:// store takes no options, got {key:?}"
            ))),
            None => Ok(()),
        };
        match parsed.scheme() {
            "memory" => {
                no_options("memory")?;
                let prefix = format!("{}/{}", parsed.host_str().unwrap_or(""), parsed.path());
                Self::new(Arc::new(InMemory::new()), &prefix)
            }
            "file" => {
                no_options("file")?;
                let dir = parsed.to_file_path().map_err(|()| {
                    StoreError::Config(format!(
                        "{url:?} is not an absolute local path (use file:///abs/dir)"
                    ))
                })?;
                std::fs::create_dir_all(&dir).map_err(|e| {
                    StoreError::Config(format!(
                        "cannot create the store directory {}: {e}",
                        dir.display()
                    ))
                })?;
                let fs = LocalFileSystem::new_with_prefix(&dir).map_err(|e| {
                    StoreError::Config(format!("cannot use {} as a store: {e}", dir.display()))
                })?;
                Ok(ObjectResultStore {
                    local_dir: Some(dir),
                    ..Self::new(Arc::new(fs), "")?
                })
            }
            "s3" | "s3a" => {
                let bucket = parsed.host_str().filter(|b| !b.is_empty()).ok_or_else(|| {
                    StoreError::Config(format!("{url:?} names no bucket (use s3://bucket/prefix)"))
                })?;
                let s3 = s3_from_options(bucket, &options)?;
                Self::new(Arc::new(s3), parsed.path())
            }
            other => Err(StoreError::Config(format!(
                "unsupported store URL scheme {other:?} in {url:?}; use memory://, file:///dir or s3://bucket/prefix"
            ))),
        }
    }

    /// The backend, for tools that need to look underneath (tests, migrations).
    pub fn backend(&self) -> &Arc<dyn ObjectStore> {
        &self.backend
    }

    /// The key prefix everything lives under.
    pub fn prefix(&self) -> &Path {
        &self.prefix
    }

    fn key(&self, parts: &[&str]) -> Path {
        let mut path = self.prefix.clone();
        for part in parts {
            path = path.join(*part);
        }
        path
    }

    fn meta_key(&self, id: &ResultId) -> Path {
        self.key(&["meta", id.as_str()])
    }

    fn data_dir(&self, id: &ResultId) -> Path {
        self.key(&["data", id.as_str()])
    }

    fn owner_dir(&self, session: Option<&SessionId>) -> Path {
        match session {
            None => self.key(&["owner", "none"]),
            Some(s) => {
                let mut path = self.key(&["owner", "s"]);
                for seg in s.key_segments() {
                    path = path.join(seg);
                }
                // A non-hex end segment, so that one session's directory never contains another's.
                path.join("ids")
            }
        }
    }

    async fn read_record(&self, id: &ResultId) -> Result<Record, StoreError> {
        let raw = match self.backend.get(&self.meta_key(id)).await {
            Ok(got) => got.bytes().await,
            Err(e) => Err(e),
        };
        let raw = raw.map_err(|e| not_found_or(e, id, "read the result record"))?;
        let record: Record = serde_json::from_slice(&raw)
            .map_err(|e| StoreError::corrupt(id, format!("the record does not parse: {e}")))?;
        if record.version != RECORD_VERSION {
            return Err(StoreError::corrupt(
                id,
                format!("unknown record version {}", record.version),
            ));
        }
        if &record.meta.id != id {
            return Err(StoreError::corrupt(
                id,
                format!("the record is for {:?}", record.meta.id.as_str()),
            ));
        }
        if record.stride == 0 || record.meta.chars > record.meta.bytes {
            return Err(StoreError::corrupt(id, "the record's sizes are impossible"));
        }
        Ok(record)
    }

    /// The ids that have a marker under `dir`, with the marker's location and age.
    async fn markers(&self, dir: &Path) -> Result<Vec<(ResultId, ObjectMeta)>, StoreError> {
        let objects: Vec<ObjectMeta> = self
            .backend
            .list(Some(dir))
            .try_collect()
            .await
            .map_err(backend("list result markers"))?;
        Ok(objects
            .into_iter()
            .filter_map(|o| {
                let id = ResultId::parse(o.location.filename()?).ok()?;
                Some((id, o))
            })
            .collect())
    }

    /// Reads the records of `ids`, skipping those deleted in the meantime; the records that cannot be
    /// read (corrupt ones) are returned apart. A backend failure fails the whole read.
    async fn records(
        &self,
        ids: impl IntoIterator<Item = ResultId>,
    ) -> Result<(Vec<Record>, Vec<Unreadable>), StoreError> {
        let found: Vec<Option<Result<Record, Unreadable>>> = futures::stream::iter(ids)
            .map(|id| async move {
                match self.read_record(&id).await {
                    Ok(r) => Ok(Some(Ok(r))),
                    Err(StoreError::NotFound { .. }) => Ok(None),
                    Err(error @ StoreError::Corrupt { .. }) => {
                        Ok(Some(Err(Unreadable { id, error })))
                    }
                    Err(e) => Err(e),
                }
            })
            .buffer_unordered(CONCURRENCY)
            .try_collect()
            .await?;
        let (mut good, mut bad) = (Vec::new(), Vec::new());
        for r in found.into_iter().flatten() {
            match r {
                Ok(record) => good.push(record),
                Err(unreadable) => bad.push(unreadable),
            }
        }
        bad.sort_by(|a, b| a.id.cmp(&b.id));
        Ok((good, bad))
    }

    /// The ids under `scope`: every record for [`Scope::All`], the owner's markers otherwise.
    async fn ids_in(&self, scope: &Scope) -> Result<Vec<ResultId>, StoreError> {
        match scope {
            Scope::All => {
                let objects: Vec<ObjectMeta> = self
                    .backend
                    .list(Some(&self.key(&["meta"])))
                    .try_collect()
                    .await
                    .map_err(backend("list result records"))?;
                Ok(objects
                    .iter()
                    .filter_map(|o| ResultId::parse(o.location.filename()?).ok())
                    .collect())
            }
            Scope::Unscoped => Ok(self
                .markers(&self.owner_dir(None))
                .await?
                .into_iter()
                .map(|(id, _)| id)
                .collect()),
            Scope::Session(s) => Ok(self
                .markers(&self.owner_dir(Some(s)))
                .await?
                .into_iter()
                .map(|(id, _)| id)
                .collect()),
        }
    }

    /// Deletes objects, treating "already gone" as success.
    async fn delete_all(&self, paths: Vec<Path>, op: &'static str) -> Result<(), StoreError> {
        if paths.is_empty() {
            return Ok(());
        }
        let stream = futures::stream::iter(paths.into_iter().map(Ok)).boxed();
        let mut results = self.backend.delete_stream(stream);
        while let Some(r) = results.next().await {
            match r {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(backend(op)(e)),
            }
        }
        Ok(())
    }

    /// Removes the data objects of `id`, all of them, or all but `keep`.
    async fn delete_blobs(&self, id: &ResultId, keep: Option<&str>) -> Result<u64, StoreError> {
        let blobs: Vec<ObjectMeta> = self
            .backend
            .list(Some(&self.data_dir(id)))
            .try_collect()
            .await
            .map_err(backend("list result data"))?;
        let doomed: Vec<Path> = blobs
            .into_iter()
            .map(|o| o.location)
            .filter(|p| keep.is_none_or(|k| p.filename() != Some(k)))
            .collect();
        let n = doomed.len() as u64;
        self.delete_all(doomed, "delete result data").await?;
        Ok(n)
    }

    /// Deletes one result whose record says it is owned by `owner`. Returns whether a record existed.
    async fn delete_known(
        &self,
        id: &ResultId,
        owner: Option<&SessionId>,
    ) -> Result<(), StoreError> {
        // The record goes first: from this moment on readers see NotFound, never a half-deleted result.
        self.delete_all(vec![self.meta_key(id)], "delete the result record")
            .await?;
        self.delete_blobs(id, None).await?;
        self.delete_all(
            vec![self.owner_dir(owner).join(id.as_str())],
            "delete the result marker",
        )
        .await
    }

    /// Deletes a result whose record cannot be read: the record, its data, and its marker. The owner
    /// is unknown, so unless the marker's location is given, every owner's markers are searched.
    async fn delete_unreadable(
        &self,
        id: &ResultId,
        marker: Option<Path>,
    ) -> Result<(), StoreError> {
        self.delete_all(vec![self.meta_key(id)], "delete the result record")
            .await?;
        self.delete_blobs(id, None).await?;
        let markers = match marker {
            Some(marker) => vec![marker],
            None => self
                .markers(&self.key(&["owner"]))
                .await?
                .into_iter()
                .filter(|(marked, _)| marked == id)
                .map(|(_, o)| o.location)
                .collect(),
        };
        self.delete_all(markers, "delete the result marker").await
    }

    /// Removes the files a local-disk backend stages a write in (`NAME#N` beside the object `NAME`)
    /// that were last written before `created_before_ms`, under `dir` (relative to the store), and
    /// returns how many. Such a file is what a save killed during its write leaves; the backend's own
    /// listing never shows it. A file still being written has a fresh modification time.
    async fn delete_stale_staging(
        &self,
        dir: &Path,
        created_before_ms: u64,
    ) -> Result<u64, StoreError> {
        let Some(root) = &self.local_dir else {
            return Ok(0);
        };
        let mut at = root.clone();
        for part in dir.parts() {
            at.push(part.as_ref());
        }
        // Past what the clock can hold: every staged file is older.
        let cutoff = UNIX_EPOCH.checked_add(Duration::from_millis(created_before_ms));
        tokio::task::spawn_blocking(move || staging::delete_stale(&at, cutoff))
            .await
            .map_err(|e| StoreError::Backend {
                op: "delete leftovers of interrupted writes",
                source: Box::new(e),
            })?
            .map_err(|e| StoreError::Backend {
                op: "delete leftovers of interrupted writes",
                source: Box::new(e),
            })
    }
}

fn parse_duration(key: &str, value: &str) -> Result<Duration, StoreError> {
    let bad = || {
        StoreError::Config(format!(
            "option {key:?}: {value:?} is not a duration like \"500ms\" or \"15s\""
        ))
    };
    let (number, unit) = match value.strip_suffix("ms") {
        Some(n) => (n, 1),
        None => (value.strip_suffix('s').unwrap_or(value), 1000),
    };
    let n: u64 = number.trim().parse().map_err(|_| bad())?;
    Ok(Duration::from_millis(n.checked_mul(unit).ok_or_else(bad)?))
}

fn s3_from_options(
    bucket: &str,
    options: &BTreeMap<String, String>,
) -> Result<object_store::aws::AmazonS3, StoreError> {
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
    let mut retry = RetryConfig {
        max_retries: DEFAULT_MAX_RETRIES,
        retry_timeout: DEFAULT_RETRY_TIMEOUT,
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(50),
            ..BackoffConfig::default()
        },
    };
    for (key, value) in S3_DEFAULTS {
        if !options.contains_key(*key)
            && std::env::var(format!("AWS_{}", key.to_uppercase())).is_err()
        {
            builder = builder.with_config(key_of(key)?, *value);
        }
    }
    for (key, value) in options {
        match key.as_str() {
            "max_retries" => {
                retry.max_retries = value.trim().parse().map_err(|_| {
                    StoreError::Config(format!(
                        "option \"max_retries\": {value:?} is not a whole number"
                    ))
                })?;
            }
            "retry_timeout" => retry.retry_timeout = parse_duration(key, value)?,
            _ => builder = builder.with_config(key_of(key)?, value),
        }
    }
    builder
        .with_retry(retry)
        .build()
        .map_err(|e| StoreError::Config(format!("cannot configure S3 bucket {bucket:?}: {e}")))
}

fn key_of(key: &str) -> Result<AmazonS3ConfigKey, StoreError> {
    key.parse()
        .map_err(|_| StoreError::Config(format!("unknown S3 store option {key:?}")))
}

fn backend(op: &'static str) -> impl Fn(object_store::Error) -> StoreError {
    move |e| StoreError::Backend {
        op,
        source: Box::new(e),
    }
}

fn not_found_or(e: object_store::Error, id: &ResultId, op: &'static str) -> StoreError {
    match e {
        object_store::Error::NotFound { .. } => StoreError::NotFound { id: id.clone() },
        e => backend(op)(e),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn nonce() -> Result<String, StoreError> {
    let mut bits = [0u8; 8];
    getrandom::fill(&mut bits).map_err(|e| StoreError::Backend {
        op: "draw a random name",
        source: e.to_string().into(),
    })?;
    Ok(bits.iter().map(|b| format!("{b:02x}")).collect())
}

/// Counts the characters of `text` and builds its index: the byte offset of every `stride`-th character,
/// from character 0 up to and including character `chars` when it falls on the stride.
fn char_index(text: &str, stride: u64) -> (u64, Vec<u64>) {
    let mut index = Vec::with_capacity(text.len() / stride as usize + 1);
    index.push(0);
    let mut chars: u64 = 0;
    let mut next = stride;
    for (at, &b) in text.as_bytes().iter().enumerate() {
        // Every byte that is not a UTF-8 continuation byte (0b10xx_xxxx) starts a character.
        if b & 0xC0 != 0x80 {
            if chars == next {
                index.push(at as u64);
                next += stride;
            }
            chars += 1;
        }
    }
    if chars == next {
        index.push(text.len() as u64);
    }
    (chars, index)
}

#[async_trait]
impl ResultStore for ObjectResultStore {
    async fn save(&self, new: NewResult, content: &str) -> Result<ResultMeta, StoreError> {
        let id = new.id;
        let meta_key = self.meta_key(&id);
        // Fail before uploading anything big when the id is already taken.
        match self.backend.head(&meta_key).await {
            Ok(_) => return Err(StoreError::AlreadyExists { id }),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(backend("check whether the id is free")(e)),
        }

        let (chars, index) = char_index(content, INDEX_STRIDE_CHARS);
        let mut blob = Vec::with_capacity(content.len() + index.len() * 8);
        blob.extend_from_slice(content.as_bytes());
        for entry in &index {
            blob.extend_from_slice(&entry.to_le_bytes());
        }
        let blob_name = nonce()?;
        let blob_key = self.data_dir(&id).join(blob_name.as_str());
        let marker_key = self.owner_dir(new.session.as_ref()).join(id.as_str());

        self.backend
            .put(&blob_key, PutPayload::from(Bytes::from(blob)))
            .await
            .map_err(backend("save the result data"))?;
        self.backend
            .put(&marker_key, PutPayload::new())
            .await
            .map_err(backend("save the result marker"))?;

        let meta = ResultMeta {
            id: id.clone(),
            session: new.session,
            tool: new.tool,
            content_type: new.content_type,
            bytes: content.len() as u64,
            chars,
            created_at_ms: now_ms(),
        };
        let record = Record {
            version: RECORD_VERSION,
            meta,
            blob: blob_name,
            stride: INDEX_STRIDE_CHARS,
        };
        let json = serde_json::to_vec(&record).map_err(|e| StoreError::Backend {
            op: "encode the result record",
            source: Box::new(e),
        })?;
        match self
            .backend
            .put_opts(
                &meta_key,
                PutPayload::from(json),
                PutOptions::from(PutMode::Create),
            )
            .await
        {
            Ok(_) => Ok(record.meta),
            Err(object_store::Error::AlreadyExists { .. }) => {
                // Another save won the race. Remove what only we wrote; the winner's objects stay.
                let _ = self
                    .delete_all(vec![blob_key], "remove the data of a losing save")
                    .await;
                if let Ok(winner) = self.read_record(&id).await
                    && winner.meta.session != record.meta.session
                {
                    let _ = self
                        .delete_all(vec![marker_key], "remove the marker of a losing save")
                        .await;
                }
                Err(StoreError::AlreadyExists { id })
            }
            // Anything else may or may not have written the record; cleaning up could break a committed
            // result, so the leftovers (if any) are left to `prune`.
            Err(e) => Err(backend("commit the result record")(e)),
        }
    }

    async fn meta(&self, id: &ResultId) -> Result<ResultMeta, StoreError> {
        Ok(self.read_record(id).await?.meta)
    }

    async fn read_chars(&self, id: &ResultId, offset: u64, limit: u64) -> Result<Page, StoreError> {
        let record = self.read_record(id).await?;
        let total = record.meta.chars;
        if offset > total {
            return Err(StoreError::OffsetOutOfRange {
                id: id.clone(),
                offset,
                total,
            });
        }
        let end = offset.saturating_add(limit).min(total);
        let page = |text: String| Page {
            text,
            offset,
            end,
            total_chars: total,
        };
        if end == offset {
            return Ok(page(String::new()));
        }
        let stride = record.stride;
        let blob_key = self.data_dir(id).join(record.blob.as_str());
        let data_len = record.meta.bytes;
        let entries = total / stride + 1;

        // Index entries first..=last bracket the page; past the last entry, the data's end does.
        let first = offset / stride;
        let last = end.div_ceil(stride);
        let last_in_index = last.min(entries - 1);
        let raw = self
            .backend
            .get_range(
                &blob_key,
                data_len + first * 8..data_len + (last_in_index + 1) * 8,
            )
            .await
            .map_err(|e| not_found_or(e, id, "read the character index"))?;
        let entry = |j: u64| -> Option<u64> {
            let at = usize::try_from((j - first) * 8).ok()?;
            let bytes: [u8; 8] = raw.get(at..at + 8)?.try_into().ok()?;
            Some(u64::from_le_bytes(bytes))
        };
        let start_byte =
            entry(first).ok_or_else(|| StoreError::corrupt(id, "the character index is short"))?;
        let end_byte = if last < entries {
            entry(last).ok_or_else(|| StoreError::corrupt(id, "the character index is short"))?
        } else {
            data_len
        };
        if start_byte > end_byte || end_byte > data_len {
            return Err(StoreError::corrupt(
                id,
                "the character index points outside the data",
            ));
        }
        let data = self
            .backend
            .get_range(&blob_key, start_byte..end_byte)
            .await
            .map_err(|e| not_found_or(e, id, "read the result data"))?;
        let text = std::str::from_utf8(&data).map_err(|_| {
            StoreError::corrupt(
                id,
                "the character index does not fall on character boundaries",
            )
        })?;
        let skip = usize::try_from(offset - first * stride).unwrap_or(usize::MAX);
        let take = usize::try_from(end - offset).unwrap_or(usize::MAX);
        let out: String = text.chars().skip(skip).take(take).collect();
        if out.chars().count() != take {
            return Err(StoreError::corrupt(
                id,
                "the data holds fewer characters than the record says",
            ));
        }
        Ok(page(out))
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<ResultMeta>, StoreError> {
        let listing = self.listing(filter).await?;
        for skipped in &listing.unreadable {
            tracing::warn!(id = %skipped.id, error = %skipped.error, "listing skipped an unreadable result");
        }
        Ok(listing.results)
    }

    async fn listing(&self, filter: &ListFilter) -> Result<Listing, StoreError> {
        let ids = self.ids_in(&filter.scope).await?;
        let (records, unreadable) = self.records(ids).await?;
        let mut results: Vec<ResultMeta> = records
            .into_iter()
            .map(|r| r.meta)
            .filter(|m| filter.matches(m))
            .collect();
        results.sort_by(|a, b| {
            b.created_at_ms
                .cmp(&a.created_at_ms)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(Listing {
            results,
            unreadable,
        })
    }

    async fn delete(&self, id: &ResultId) -> Result<(), StoreError> {
        match self.read_record(id).await {
            Ok(record) => self.delete_known(id, record.meta.session.as_ref()).await,
            // No record: nothing to delete but possibly the data of an interrupted save.
            Err(StoreError::NotFound { .. }) => self.delete_blobs(id, None).await.map(drop),
            Err(StoreError::Corrupt { .. }) => self.delete_unreadable(id, None).await,
            Err(e) => Err(e),
        }
    }

    async fn delete_session(&self, session: &SessionId) -> Result<u64, StoreError> {
        let dir = self.owner_dir(Some(session));
        let markers = self.markers(&dir).await?;
        let deleted: Vec<bool> = futures::stream::iter(markers)
            .map(|(id, marker)| async move {
                match self.read_record(&id).await {
                    Ok(r) if r.meta.session.as_ref() == Some(session) => {
                        self.delete_known(&id, Some(session)).await.map(|()| true)
                    }
                    // The marker says the session saved it; nobody can read it any more.
                    Err(StoreError::Corrupt { .. }) => self
                        .delete_unreadable(&id, Some(marker.location))
                        .await
                        .map(|()| true),
                    // A marker without a record (or with somebody else's record) is a leftover.
                    Ok(_) | Err(StoreError::NotFound { .. }) => self
                        .delete_all(vec![marker.location], "delete a stale marker")
                        .await
                        .map(|()| false),
                    Err(e) => Err(e),
                }
            })
            .buffer_unordered(CONCURRENCY)
            .try_collect()
            .await?;
        Ok(deleted.into_iter().filter(|&d| d).count() as u64)
    }

    async fn prune(
        &self,
        created_before_ms: u64,
        scope: &Scope,
    ) -> Result<PruneReport, StoreError> {
        let mut report = PruneReport::default();
        let old = |o: &ObjectMeta| {
            u64::try_from(o.last_modified.timestamp_millis()).unwrap_or(0) < created_before_ms
        };

        // Whole results.
        let doomed = self
            .listing(&ListFilter::scope(scope.clone()).created_before(created_before_ms))
            .await?;
        for meta in &doomed.results {
            self.delete_known(&meta.id, meta.session.as_ref()).await?;
        }
        report.results = doomed.results.len() as u64;

        // Results whose record cannot be read: their own times cannot be trusted, so the record
        // object's age decides.
        for skipped in &doomed.unreadable {
            match self.backend.head(&self.meta_key(&skipped.id)).await {
                Ok(record) if old(&record) => {
                    self.delete_unreadable(&skipped.id, None).await?;
                    report.unreadable += 1;
                }
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(backend("check the age of an unreadable record")(e)),
            }
        }

        // Markers of interrupted saves.
        let marker_dirs = match scope {
            Scope::All => vec![self.key(&["owner"])],
            Scope::Unscoped => vec![self.owner_dir(None)],
            Scope::Session(s) => vec![self.owner_dir(Some(s))],
        };
        for dir in marker_dirs {
            let stale: Vec<ObjectMeta> = self
                .markers(&dir)
                .await?
                .into_iter()
                .map(|(_, o)| o)
                .filter(old)
                .collect();
            for marker in stale {
                let Some(id) = marker
                    .location
                    .filename()
                    .and_then(|f| ResultId::parse(f).ok())
                else {
                    continue;
                };
                let orphan = match self.read_record(&id).await {
                    Err(StoreError::NotFound { .. }) => true,
                    Ok(r) => !marker
                        .location
                        .prefix_matches(&self.owner_dir(r.meta.session.as_ref())),
                    // Younger than the cutoff, or it would be gone by now: kept with its record.
                    Err(StoreError::Corrupt { .. }) => false,
                    Err(e) => return Err(e),
                };
                if orphan {
                    self.delete_all(vec![marker.location], "delete a stale marker")
                        .await?;
                    report.garbage += 1;
                }
            }
        }

        // Data of interrupted saves: only a full sweep can tell whose they were.
        if *scope == Scope::All {
            let committed: BTreeSet<ResultId> =
                self.ids_in(&Scope::All).await?.into_iter().collect();
            let blobs: Vec<ObjectMeta> = self
                .backend
                .list(Some(&self.key(&["data"])))
                .try_collect()
                .await
                .map_err(backend("list result data"))?;
            let data_dir = self.key(&["data"]);
            let mut by_id: BTreeMap<ResultId, Vec<ObjectMeta>> = BTreeMap::new();
            for blob in blobs.into_iter().filter(old) {
                let id = blob
                    .location
                    .prefix_match(&data_dir)
                    .and_then(|mut parts| parts.next())
                    .and_then(|p| ResultId::parse(p.as_ref()).ok());
                if let Some(id) = id {
                    by_id.entry(id).or_default().push(blob);
                }
            }
            for (id, blobs) in by_id {
                if !committed.contains(&id) {
                    report.garbage += blobs.len() as u64;
                    self.delete_all(
                        blobs.into_iter().map(|b| b.location).collect(),
                        "delete stale data",
                    )
                    .await?;
                } else if blobs.len() > 1 {
                    match self.read_record(&id).await {
                        Ok(r) => report.garbage += self.delete_blobs(&id, Some(&r.blob)).await?,
                        Err(StoreError::NotFound { .. } | StoreError::Corrupt { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }

        // Files a local-disk store staged writes in, left by processes killed while writing.
        let staged_in = match scope {
            Scope::All => self.prefix.clone(),
            Scope::Unscoped => self.owner_dir(None),
            Scope::Session(s) => self.owner_dir(Some(s)),
        };
        report.garbage += self
            .delete_stale_staging(&staged_in, created_before_ms)
            .await?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_marks_every_stride_th_character_and_the_end_when_it_falls_on_the_stride() {
        let text = "aé中😀"; // 1 + 2 + 3 + 4 bytes
        assert_eq!(char_index(text, 1), (4, vec![0, 1, 3, 6, 10]));
        assert_eq!(char_index(text, 2), (4, vec![0, 3, 10]));
        assert_eq!(char_index(text, 3), (4, vec![0, 6]));
        assert_eq!(char_index("", 3), (0, vec![0]));
    }

    #[test]
    fn durations_take_milliseconds_or_seconds() {
        assert_eq!(
            parse_duration("k", "250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(parse_duration("k", "2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("k", "3").unwrap(), Duration::from_secs(3));
        assert!(parse_duration("k", "soon").is_err());
    }
}
