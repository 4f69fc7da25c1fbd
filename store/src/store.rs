//! The [`ResultStore`] trait and the scoping rule of SPEC R4.

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::StoreError;
use crate::id::{ResultId, SessionId};
use crate::types::{ListFilter, Listing, NewResult, Page, PruneReport, ResultMeta, Scope};

/// A place to keep large tool results and read them back a page at a time.
///
/// The engine talks to this trait only. [`crate::ObjectResultStore`] implements it over any
/// `object_store` backend; an application may bring its own implementation, and should then wrap it in
/// [`crate::Validated`], which checks every answer against the rules below.
///
/// The rules every implementation keeps (SPEC R3, R7, R8):
/// - [`save`](ResultStore::save) is create-only: a second save under the same id fails with
///   [`StoreError::AlreadyExists`] and leaves the first untouched. A result is either wholly saved or
///   not there at all, also when the process dies half-way.
/// - [`meta`](ResultStore::meta) and [`read_chars`](ResultStore::read_chars) of an unknown id fail with
///   [`StoreError::NotFound`].
/// - Offsets and limits count Unicode scalar values (`char`s). Reading a page costs time in proportion
///   to the page, not to the whole result.
/// - [`delete`](ResultStore::delete) is idempotent; [`list`](ResultStore::list) is newest first.
/// - A result whose record cannot be read (see [`crate::Unreadable`]) does not stop a listing, a
///   deletion or a pruning: listings skip it ([`listing`](ResultStore::listing) reports it), `delete`
///   of its id, `delete_session` of its owner and `prune` remove it.
/// - Scoping (who may read what) is *not* the store's job: use [`read_scoped`].
#[async_trait]
pub trait ResultStore: Send + Sync + 'static {
    /// Saves `content` under `new.id`, whole, and returns its metadata.
    async fn save(&self, new: NewResult, content: &str) -> Result<ResultMeta, StoreError>;

    /// The metadata of a saved result.
    async fn meta(&self, id: &ResultId) -> Result<ResultMeta, StoreError>;

    /// Characters `offset..offset + limit` of a result, cut at its end.
    ///
    /// `offset == total` gives an empty page; `offset > total` fails with
    /// [`StoreError::OffsetOutOfRange`].
    async fn read_chars(&self, id: &ResultId, offset: u64, limit: u64) -> Result<Page, StoreError>;

    /// The metadata of the results that pass `filter`, newest first (ties broken by id). Results whose
    /// record cannot be read are skipped; [`listing`](ResultStore::listing) reports them.
    async fn list(&self, filter: &ListFilter) -> Result<Vec<ResultMeta>, StoreError>;

    /// [`list`](ResultStore::list), plus the results under the filter's owner that were skipped
    /// because their record cannot be read. The default reports none.
    async fn listing(&self, filter: &ListFilter) -> Result<Listing, StoreError> {
        Ok(Listing {
            results: self.list(filter).await?,
            unreadable: Vec::new(),
        })
    }

    /// Deletes a result. Deleting a missing result succeeds.
    async fn delete(&self, id: &ResultId) -> Result<(), StoreError>;

    /// Deletes every result of `session` and returns how many there were. Results of other sessions and
    /// results without a session are untouched (SPEC R8).
    async fn delete_session(&self, session: &SessionId) -> Result<u64, StoreError>;

    /// The retention rule: deletes the results in `scope` saved strictly before `created_before_ms`, the
    /// results whose record cannot be read and was written before that time, and the leftovers of saves
    /// that were interrupted before that time.
    ///
    /// This is the only way results without a session ever go away (SPEC R8). Pick a cutoff well in the
    /// past (minutes, not milliseconds): a save still running at the cutoff looks like a leftover.
    async fn prune(&self, created_before_ms: u64, scope: &Scope)
    -> Result<PruneReport, StoreError>;
}

macro_rules! forward_result_store {
    ($($ty:ty),*) => {$(
        #[async_trait]
        impl<S: ResultStore + ?Sized> ResultStore for $ty {
            async fn save(&self, new: NewResult, content: &str) -> Result<ResultMeta, StoreError> {
                (**self).save(new, content).await
            }
            async fn meta(&self, id: &ResultId) -> Result<ResultMeta, StoreError> {
                (**self).meta(id).await
            }
            async fn read_chars(&self, id: &ResultId, offset: u64, limit: u64) -> Result<Page, StoreError> {
                (**self).read_chars(id, offset, limit).await
            }
            async fn list(&self, filter: &ListFilter) -> Result<Vec<ResultMeta>, StoreError> {
                (**self).list(filter).await
            }
            async fn listing(&self, filter: &ListFilter) -> Result<Listing, StoreError> {
                (**self).listing(filter).await
            }
            async fn delete(&self, id: &ResultId) -> Result<(), StoreError> {
                (**self).delete(id).await
            }
            async fn delete_session(&self, session: &SessionId) -> Result<u64, StoreError> {
                (**self).delete_session(session).await
            }
            async fn prune(&self, created_before_ms: u64, scope: &Scope) -> Result<PruneReport, StoreError> {
                (**self).prune(created_before_ms, scope).await
            }
        }
    )*};
}
forward_result_store!(Arc<S>, Box<S>);

/// What a caller who may not see a result is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForeignResult {
    /// [`StoreError::AccessDenied`]: honest, and the reference behaviour.
    #[default]
    Deny,
    /// [`StoreError::NotFound`], exactly as for an id that does not exist, so that ids cannot be probed
    /// (SPEC R4 fix).
    Hide,
}

/// Reads a page of a result on behalf of `caller`, enforcing SPEC R4.
///
/// A result saved by a session is readable only by that session; a result saved without a session only
/// by a caller without one. Any other read fails as `foreign` says. The metadata is checked before any
/// content is read.
///
/// ```
/// # tokio_test_shim::run(async {
/// use toolgate_store::{read_scoped, ForeignResult, NewResult, ObjectResultStore, ResultStore, SessionId};
///
/// let store = ObjectResultStore::in_memory();
/// let alice = SessionId::parse("alice").unwrap();
/// let bob = SessionId::parse("bob").unwrap();
/// let meta = store.save(NewResult::new(Some(alice.clone())), "hello").await.unwrap();
///
/// let page = read_scoped(&store, Some(&alice), &meta.id, 0, 100, ForeignResult::Deny).await.unwrap();
/// assert_eq!(page.text, "hello");
/// let err = read_scoped(&store, Some(&bob), &meta.id, 0, 100, ForeignResult::Hide).await.unwrap_err();
/// assert_eq!(err.kind(), "not_found");
/// # });
/// # mod tokio_test_shim { pub fn run<F: std::future::Future>(f: F) -> F::Output {
/// #   tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f) } }
/// ```
pub async fn read_scoped(
    store: &(impl ResultStore + ?Sized),
    caller: Option<&SessionId>,
    id: &ResultId,
    offset: u64,
    limit: u64,
    foreign: ForeignResult,
) -> Result<Page, StoreError> {
    let meta = store.meta(id).await?;
    if meta.session.as_ref() != caller {
        return Err(match foreign {
            ForeignResult::Deny => StoreError::AccessDenied { id: id.clone() },
            ForeignResult::Hide => StoreError::NotFound { id: id.clone() },
        });
    }
    store.read_chars(id, offset, limit).await
}
