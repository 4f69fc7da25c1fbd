//! `Validated` turns a custom store's broken answers into `Corrupt` errors instead of passing them on.

use async_trait::async_trait;
use toolgate_store::{
    Corruption, ListFilter, NewResult, ObjectResultStore, Page, PruneReport, ResultId, ResultMeta,
    ResultStore, Scope, SessionId, StoreError, Validated,
};

/// How a custom store misbehaves.
#[derive(Clone, Copy)]
enum Fault {
    None,
    /// Answers `meta` with the metadata of another result.
    WrongId,
    /// Saves under the wrong session.
    WrongSession,
    /// Returns one character less than asked for.
    ShortPage,
    /// Reports a page that starts elsewhere than asked.
    ShiftedPage,
    /// Ignores the scope of a listing.
    IgnoresScope,
    /// Lists oldest first.
    OldestFirst,
}

/// A custom store: a real in-memory store behind a faulty adapter.
struct Custom {
    inner: ObjectResultStore,
    fault: Fault,
}

#[async_trait]
impl ResultStore for Custom {
    async fn save(&self, mut new: NewResult, content: &str) -> Result<ResultMeta, StoreError> {
        if let Fault::WrongSession = self.fault {
            new.session = Some(SessionId::parse("somebody else").unwrap());
        }
        self.inner.save(new, content).await
    }
    async fn meta(&self, id: &ResultId) -> Result<ResultMeta, StoreError> {
        let mut meta = self.inner.meta(id).await?;
        if let Fault::WrongId = self.fault {
            meta.id = ResultId::generate();
        }
        Ok(meta)
    }
    async fn read_chars(&self, id: &ResultId, offset: u64, limit: u64) -> Result<Page, StoreError> {
        let mut page = self.inner.read_chars(id, offset, limit).await?;
        match self.fault {
            Fault::ShortPage => {
                page.text.pop();
            }
            Fault::ShiftedPage => page.offset += 1,
            _ => {}
        }
        Ok(page)
    }
    async fn list(&self, filter: &ListFilter) -> Result<Vec<ResultMeta>, StoreError> {
        match self.fault {
            Fault::IgnoresScope => self.inner.list(&ListFilter::all()).await,
            Fault::OldestFirst => {
                let mut all = self.inner.list(filter).await?;
                all.reverse();
                Ok(all)
            }
            _ => self.inner.list(filter).await,
        }
    }
    async fn delete(&self, id: &ResultId) -> Result<(), StoreError> {
        self.inner.delete(id).await
    }
    async fn delete_session(&self, session: &SessionId) -> Result<u64, StoreError> {
        self.inner.delete_session(session).await
    }
    async fn prune(&self, before: u64, scope: &Scope) -> Result<PruneReport, StoreError> {
        self.inner.prune(before, scope).await
    }
}

fn custom(fault: Fault) -> Validated<Custom> {
    Validated::new(Custom {
        inner: ObjectResultStore::in_memory(),
        fault,
    })
}

fn session(name: &str) -> SessionId {
    SessionId::parse(name).unwrap()
}

/// The result is a `Corrupt` error naming the broken rule `$rule`.
macro_rules! assert_corrupt {
    ($result:expr, $rule:pat) => {
        match $result.unwrap_err() {
            StoreError::Corrupt { what: $rule, .. } => {}
            other => panic!("expected {}, got {other:?}", stringify!($rule)),
        }
    };
}

#[tokio::test]
async fn a_well_behaved_custom_store_passes_unchanged() {
    let store = custom(Fault::None);
    let meta = store
        .save(NewResult::new(Some(session("s"))), "héllo wörld")
        .await
        .unwrap();
    assert_eq!(store.meta(&meta.id).await.unwrap(), meta);
    assert_eq!(store.read_chars(&meta.id, 1, 4).await.unwrap().text, "éllo");
    assert_eq!(store.list(&ListFilter::all()).await.unwrap(), vec![meta]);
}

#[tokio::test]
async fn metadata_of_another_id_is_corrupt() {
    let store = custom(Fault::WrongId);
    let id = store
        .inner()
        .inner
        .save(NewResult::new(None), "x")
        .await
        .unwrap()
        .id;
    assert_corrupt!(store.meta(&id).await, Corruption::MetaForAnother { .. });
}

#[tokio::test]
async fn a_save_under_another_session_is_corrupt() {
    let store = custom(Fault::WrongSession);
    assert_corrupt!(
        store.save(NewResult::new(Some(session("mine"))), "x").await,
        Corruption::SavedMetaDiffers { field: "session" }
    );
}

#[tokio::test]
async fn a_page_shorter_than_its_range_is_corrupt() {
    let store = custom(Fault::ShortPage);
    let id = store.save(NewResult::new(None), "abcdef").await.unwrap().id;
    assert_corrupt!(
        store.read_chars(&id, 1, 3).await,
        Corruption::PageLength { .. }
    );
}

#[tokio::test]
async fn a_page_at_another_offset_is_corrupt() {
    let store = custom(Fault::ShiftedPage);
    let id = store.save(NewResult::new(None), "abcdef").await.unwrap().id;
    assert_corrupt!(
        store.read_chars(&id, 1, 3).await,
        Corruption::PageOutOfPlace { .. }
    );
}

#[tokio::test]
async fn a_listing_that_ignores_its_scope_is_corrupt() {
    let store = custom(Fault::IgnoresScope);
    store
        .save(NewResult::new(Some(session("a"))), "x")
        .await
        .unwrap();
    store
        .save(NewResult::new(Some(session("b"))), "y")
        .await
        .unwrap();
    assert_corrupt!(
        store
            .list(&ListFilter::scope(Scope::Session(session("a"))))
            .await,
        Corruption::ListingOutsideFilter
    );
}

#[tokio::test]
async fn a_listing_oldest_first_is_corrupt() {
    let store = custom(Fault::OldestFirst);
    store.save(NewResult::new(None), "x").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    store.save(NewResult::new(None), "y").await.unwrap();
    assert_corrupt!(
        store.list(&ListFilter::all()).await,
        Corruption::ListingOrder
    );
}
