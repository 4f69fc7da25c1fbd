//! Removing objects: whole results, unreadable ones, stray data, and the files a local disk stages
//! writes in.

use std::time::{Duration, UNIX_EPOCH};

use futures::StreamExt;
use futures::TryStreamExt;
use object_store::ObjectMeta;
use object_store::path::Path;

use super::layout::{ObjectResultStore, backend};
use crate::error::StoreError;
use crate::id::{ResultId, SessionId};
use crate::staging;

impl ObjectResultStore {
    /// Deletes objects, treating "already gone" as success.
    pub(super) async fn delete_all(
        &self,
        paths: Vec<Path>,
        op: &'static str,
    ) -> Result<(), StoreError> {
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
    pub(super) async fn delete_blobs(
        &self,
        id: &ResultId,
        keep: Option<&str>,
    ) -> Result<u64, StoreError> {
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
    pub(super) async fn delete_known(
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
    pub(super) async fn delete_unreadable(
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
    pub(super) async fn delete_stale_staging(
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
                error: Box::new(e),
            })?
            .map_err(|e| StoreError::Backend {
                op: "delete leftovers of interrupted writes",
                error: Box::new(e),
            })
    }
}
