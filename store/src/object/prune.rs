//! The retention rule ([`ResultStore::prune`](crate::ResultStore::prune)): old results, old
//! unreadable records, and the leftovers of interrupted saves.

use std::collections::{BTreeMap, BTreeSet};

use futures::TryStreamExt;
use object_store::{ObjectMeta, ObjectStoreExt};

use super::layout::{ObjectResultStore, backend};
use crate::error::StoreError;
use crate::id::ResultId;
use crate::types::{ListFilter, PruneReport, Scope};

impl ObjectResultStore {
    /// See [`ResultStore::prune`](crate::ResultStore::prune).
    pub(super) async fn prune_older(
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
            .listing_of(&ListFilter::scope(scope.clone()).created_before(created_before_ms))
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
