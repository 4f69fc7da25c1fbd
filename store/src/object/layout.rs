//! [`ObjectResultStore`] and its keys: where each object of a result lives, and reading the records
//! and markers back.

use std::path::PathBuf;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use serde::{Deserialize, Serialize};

use crate::error::{Corruption, StoreError};
use crate::id::{ResultId, SessionId};
use crate::types::{ListFilter, Listing, ResultMeta, Scope, Unreadable};

/// How many backend requests list, delete and prune keep in flight at once.
pub(super) const CONCURRENCY: usize = 16;

/// The version of the JSON record this code writes and understands.
pub(super) const RECORD_VERSION: u32 = 1;

/// The JSON record at `P/meta/ID`.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Record {
    pub(super) version: u32,
    #[serde(flatten)]
    pub(super) meta: ResultMeta,
    /// The `NONCE` of the data object.
    pub(super) blob: String,
    /// [`super::INDEX_STRIDE_CHARS`] at the time of writing.
    pub(super) stride: u64,
}

/// A [`ResultStore`](crate::ResultStore) over any [`ObjectStore`]: memory, local disk, S3 (with the
/// `s3` feature) and the rest.
///
/// Build one from a URL with [`ObjectResultStore::from_url`], or from a backend you configured yourself
/// with [`ObjectResultStore::new`]. Cloning is cheap and clones share the backend. Several instances,
/// in one process or many, may use the same backend and prefix at once: all coordination happens through
/// create-only writes.
#[derive(Debug, Clone)]
pub struct ObjectResultStore {
    pub(super) backend: Arc<dyn ObjectStore>,
    pub(super) prefix: Path,
    /// For a `file://` store, its directory: `prune` also looks there for the files the backend
    /// stages writes in, which its listing hides.
    pub(super) local_dir: Option<PathBuf>,
}

impl Record {
    /// How long the data object is: the result's bytes, then one 8-byte index entry for every
    /// `stride` characters and one more. `None` when that does not fit in 64 bits.
    pub(super) fn data_len(&self) -> Option<u64> {
        let entries = (self.meta.chars / self.stride.max(1)).checked_add(1)?;
        entries.checked_mul(8)?.checked_add(self.meta.bytes)
    }
}

/// Whether `name` is a data object's name as the store draws it: 16 lowercase hex digits.
pub(super) fn is_nonce(name: &str) -> bool {
    name.len() == 16 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl ObjectResultStore {
    /// The backend, for tools that need to look underneath (tests, migrations).
    pub fn backend(&self) -> &Arc<dyn ObjectStore> {
        &self.backend
    }

    /// The key prefix everything lives under.
    pub fn prefix(&self) -> &Path {
        &self.prefix
    }

    pub(super) fn key(&self, parts: &[&str]) -> Path {
        let mut path = self.prefix.clone();
        for part in parts {
            path = path.join(*part);
        }
        path
    }

    pub(super) fn meta_key(&self, id: &ResultId) -> Path {
        self.key(&["meta", id.as_str()])
    }

    pub(super) fn data_dir(&self, id: &ResultId) -> Path {
        self.key(&["data", id.as_str()])
    }

    pub(super) fn owner_dir(&self, session: Option<&SessionId>) -> Path {
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

    pub(super) async fn read_record(&self, id: &ResultId) -> Result<Record, StoreError> {
        let key = self.meta_key(id);
        self.check_inside(id, &key)?;
        let raw = match self.backend.get(&key).await {
            Ok(got) => got.bytes().await,
            Err(e) => Err(e),
        };
        let raw = raw.map_err(|e| not_found_or(e, id, "read the result record"))?;
        let record: Record = serde_json::from_slice(&raw)
            .map_err(|error| StoreError::corrupt(id, Corruption::RecordUnparsable { error }))?;
        if record.version != RECORD_VERSION {
            return Err(StoreError::corrupt(
                id,
                Corruption::RecordVersion {
                    found: record.version,
                },
            ));
        }
        if &record.meta.id != id {
            return Err(StoreError::corrupt(
                id,
                Corruption::RecordForAnother {
                    found: record.meta.id,
                },
            ));
        }
        if record.stride == 0
            || record.meta.chars > record.meta.bytes
            || record.data_len().is_none()
        {
            return Err(StoreError::corrupt(id, Corruption::ImpossibleSizes));
        }
        if !is_nonce(&record.blob) {
            return Err(StoreError::corrupt(
                id,
                Corruption::DataName { name: record.blob },
            ));
        }
        Ok(record)
    }

    /// For a store on local disk, refuses an object whose file is a link (or lies under one)
    /// to a file outside the store's directory: the backend would follow it. A file that does
    /// not exist is left to the read to report.
    pub(super) fn check_inside(&self, id: &ResultId, key: &Path) -> Result<(), StoreError> {
        let Some(dir) = &self.local_dir else {
            return Ok(());
        };
        // Keys of records and data hold only `[A-Za-z0-9_-]` names, written to disk as they are.
        let object = dir.join(key.as_ref());
        let (Ok(target), Ok(root)) = (std::fs::canonicalize(&object), std::fs::canonicalize(dir))
        else {
            return Ok(());
        };
        if target.starts_with(&root) {
            Ok(())
        } else {
            Err(StoreError::corrupt(
                id,
                Corruption::OutsideStore { object, target },
            ))
        }
    }

    /// The ids that have a marker under `dir`, with the marker's location and age.
    pub(super) async fn markers(
        &self,
        dir: &Path,
    ) -> Result<Vec<(ResultId, ObjectMeta)>, StoreError> {
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
    pub(super) async fn records(
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
    pub(super) async fn ids_in(&self, scope: &Scope) -> Result<Vec<ResultId>, StoreError> {
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

    /// See [`ResultStore::listing`](crate::ResultStore::listing).
    pub(super) async fn listing_of(&self, filter: &ListFilter) -> Result<Listing, StoreError> {
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
}

/// The error of a failed backend request made while doing `op`.
pub(super) fn backend(op: &'static str) -> impl Fn(object_store::Error) -> StoreError {
    move |e| StoreError::Backend {
        op,
        error: Box::new(e),
    }
}

/// [`StoreError::NotFound`] for a missing object, the error of a failed `op` otherwise.
pub(super) fn not_found_or(e: object_store::Error, id: &ResultId, op: &'static str) -> StoreError {
    match e {
        object_store::Error::NotFound { .. } => StoreError::NotFound { id: id.clone() },
        e => backend(op)(e),
    }
}
