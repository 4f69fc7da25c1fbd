//! [`Validated`]: the boundary check around any [`ResultStore`].

use async_trait::async_trait;

use crate::error::{Corruption, StoreError};
use crate::id::{ResultId, SessionId};
use crate::store::ResultStore;
use crate::types::{ListFilter, Listing, NewResult, Page, PruneReport, ResultMeta, Scope};

/// Wraps any [`ResultStore`] and checks every answer against the trait's rules (SPEC R7: "checked at
/// every boundary, custom stores included").
///
/// Malformed ids and session ids cannot cross this boundary at all: [`ResultId`] and [`SessionId`] are
/// checked when built, including when deserialized. What the types cannot rule out, this wrapper checks,
/// turning a broken answer into [`StoreError::Corrupt`] instead of letting it reach the model or the
/// access check:
///
/// - [`save`](ResultStore::save) and [`meta`](ResultStore::meta) must describe the id asked for, and a
///   saved result must report the session, tool, sizes it was given;
/// - a [`Page`] must be exactly the characters asked for: `end == min(offset + limit, total)`, and the
///   text must have `end - offset` characters;
/// - a listing must obey its filter, hold each id once, and be newest first.
///
/// ```
/// use toolgate_store::{ObjectResultStore, Validated};
/// let store = Validated::new(ObjectResultStore::in_memory());
/// ```
#[derive(Debug, Clone)]
pub struct Validated<S>(S);

impl<S: ResultStore> Validated<S> {
    /// Wraps `store`.
    pub fn new(store: S) -> Self {
        Validated(store)
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.0
    }

    /// Unwraps the store.
    pub fn into_inner(self) -> S {
        self.0
    }
}

fn check_meta_is_for(meta: &ResultMeta, id: &ResultId) -> Result<(), StoreError> {
    if &meta.id != id {
        return Err(StoreError::corrupt(
            id,
            Corruption::MetaForAnother {
                found: meta.id.clone(),
            },
        ));
    }
    if meta.chars > meta.bytes {
        return Err(StoreError::corrupt(
            id,
            Corruption::MoreCharsThanBytes {
                chars: meta.chars,
                bytes: meta.bytes,
            },
        ));
    }
    Ok(())
}

#[async_trait]
impl<S: ResultStore> ResultStore for Validated<S> {
    async fn save(&self, new: NewResult, content: &str) -> Result<ResultMeta, StoreError> {
        let expected = new.clone();
        let meta = self.0.save(new, content).await?;
        check_meta_is_for(&meta, &expected.id)?;
        let wrong = if meta.session != expected.session {
            Some("session")
        } else if meta.tool != expected.tool {
            Some("tool")
        } else if meta.content_type != expected.content_type {
            Some("content type")
        } else if meta.bytes != content.len() as u64 || meta.chars != content.chars().count() as u64
        {
            Some("size")
        } else {
            None
        };
        match wrong {
            Some(field) => Err(StoreError::corrupt(
                &expected.id,
                Corruption::SavedMetaDiffers { field },
            )),
            None => Ok(meta),
        }
    }

    async fn meta(&self, id: &ResultId) -> Result<ResultMeta, StoreError> {
        let meta = self.0.meta(id).await?;
        check_meta_is_for(&meta, id)?;
        Ok(meta)
    }

    async fn read_chars(&self, id: &ResultId, offset: u64, limit: u64) -> Result<Page, StoreError> {
        let page = self.0.read_chars(id, offset, limit).await?;
        let expected_end = offset.saturating_add(limit).min(page.total_chars);
        if offset > page.total_chars {
            return Err(StoreError::corrupt(
                id,
                Corruption::PageShouldBeRefused {
                    offset,
                    total: page.total_chars,
                },
            ));
        }
        if page.offset != offset || page.end != expected_end {
            return Err(StoreError::corrupt(
                id,
                Corruption::PageOutOfPlace {
                    offset,
                    end: expected_end,
                    total: page.total_chars,
                    got_offset: page.offset,
                    got_end: page.end,
                },
            ));
        }
        let got = page.text.chars().count() as u64;
        if got != page.end - page.offset {
            return Err(StoreError::corrupt(
                id,
                Corruption::PageLength {
                    offset: page.offset,
                    end: page.end,
                    got,
                },
            ));
        }
        Ok(page)
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<ResultMeta>, StoreError> {
        let metas = self.0.list(filter).await?;
        check_listing(filter, &metas)?;
        Ok(metas)
    }

    async fn listing(&self, filter: &ListFilter) -> Result<Listing, StoreError> {
        let listing = self.0.listing(filter).await?;
        check_listing(filter, &listing.results)?;
        Ok(listing)
    }

    async fn delete(&self, id: &ResultId) -> Result<(), StoreError> {
        self.0.delete(id).await
    }

    async fn delete_session(&self, session: &SessionId) -> Result<u64, StoreError> {
        self.0.delete_session(session).await
    }

    async fn prune(
        &self,
        created_before_ms: u64,
        scope: &Scope,
    ) -> Result<PruneReport, StoreError> {
        self.0.prune(created_before_ms, scope).await
    }
}

/// A listing must obey its filter, hold each id once, and be newest first.
fn check_listing(filter: &ListFilter, metas: &[ResultMeta]) -> Result<(), StoreError> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, meta) in metas.iter().enumerate() {
        if !filter.matches(meta) {
            return Err(StoreError::corrupt(
                &meta.id,
                Corruption::ListingOutsideFilter,
            ));
        }
        if !seen.insert(&meta.id) {
            return Err(StoreError::corrupt(&meta.id, Corruption::ListingDuplicate));
        }
        if i > 0 && metas[i - 1].created_at_ms < meta.created_at_ms {
            return Err(StoreError::corrupt(&meta.id, Corruption::ListingOrder));
        }
    }
    Ok(())
}
