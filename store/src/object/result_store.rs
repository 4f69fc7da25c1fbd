//! The [`ResultStore`] operations of [`ObjectResultStore`]: save, read a page, list, delete.

use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::index::{INDEX_STRIDE_CHARS, char_index};
use super::layout::{
    CONCURRENCY, ObjectResultStore, RECORD_VERSION, Record, backend, not_found_or,
};
use crate::error::{Corruption, StoreError};
use crate::id::{ResultId, SessionId};
use crate::store::ResultStore;
use crate::types::{ListFilter, Listing, NewResult, Page, PruneReport, ResultMeta, Scope};

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
            error: Box::new(e),
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
        self.check_inside(id, &blob_key)?;
        // Checked when the record was read: it fits in 64 bits.
        let object_len = record.data_len().unwrap_or(u64::MAX);
        let data_len = record.meta.bytes;
        let entries = total / stride + 1;

        // Index entries first..=last bracket the page; past the last entry, the data's end does.
        let first = offset / stride;
        let last = end.div_ceil(stride);
        let last_in_index = last.min(entries - 1);
        let raw = self
            .read_range(
                id,
                &blob_key,
                data_len + first * 8..data_len + (last_in_index + 1) * 8,
                object_len,
                "read the character index",
            )
            .await?;
        let entry = |j: u64| -> Option<u64> {
            let at = usize::try_from((j - first) * 8).ok()?;
            let bytes: [u8; 8] = raw.get(at..at + 8)?.try_into().ok()?;
            Some(u64::from_le_bytes(bytes))
        };
        let start_byte =
            entry(first).ok_or_else(|| StoreError::corrupt(id, Corruption::IndexShort))?;
        let end_byte = if last < entries {
            entry(last).ok_or_else(|| StoreError::corrupt(id, Corruption::IndexShort))?
        } else {
            data_len
        };
        if start_byte > end_byte || end_byte > data_len {
            return Err(StoreError::corrupt(id, Corruption::IndexOutsideData));
        }
        let data = self
            .read_range(
                id,
                &blob_key,
                start_byte..end_byte,
                object_len,
                "read the result data",
            )
            .await?;
        let text = std::str::from_utf8(&data)
            .map_err(|_| StoreError::corrupt(id, Corruption::IndexOffBoundary))?;
        let skip = usize::try_from(offset - first * stride).unwrap_or(usize::MAX);
        let take = usize::try_from(end - offset).unwrap_or(usize::MAX);
        let out: String = text.chars().skip(skip).take(take).collect();
        if out.chars().count() != take {
            return Err(StoreError::corrupt(id, Corruption::DataShort));
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
        self.listing_of(filter).await
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
        self.prune_older(created_before_ms, scope).await
    }
}

impl ObjectResultStore {
    /// Reads `range` of the data object of `id`, which its record says is `object_len` bytes.
    /// A read the backend refuses because the object is shorter than that is
    /// [`Corruption::DataSize`], not a backend failure: asking again will not help.
    async fn read_range(
        &self,
        id: &ResultId,
        key: &object_store::path::Path,
        range: std::ops::Range<u64>,
        object_len: u64,
        op: &'static str,
    ) -> Result<Bytes, StoreError> {
        match self.backend.get_range(key, range).await {
            Ok(bytes) => Ok(bytes),
            Err(e @ object_store::Error::NotFound { .. }) => Err(not_found_or(e, id, op)),
            Err(e) => match self.backend.head(key).await {
                Ok(meta) if meta.size != object_len => Err(StoreError::corrupt(
                    id,
                    Corruption::DataSize {
                        expected: object_len,
                        found: meta.size,
                    },
                )),
                _ => Err(backend(op)(e)),
            },
        }
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
        error: Box::new(e),
    })?;
    Ok(bits.iter().map(|b| format!("{b:02x}")).collect())
}
