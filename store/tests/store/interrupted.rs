//! A save interrupted after any of its writes leaves nothing readable, and `prune` removes what it left.
//!
//! The interruption is exact: the backend is a real in-memory store behind a wrapper that lets the first
//! `n` writes through and refuses every later one, as if the writing process had died at that point.
//! (`processes.rs` does the same with real SIGKILLs, at moments that cannot be chosen as precisely.)

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use toolgate_store::{
    ListFilter, NewResult, ObjectResultStore, ResultId, ResultStore, Scope, SessionId,
};

/// Lets `allowed` puts through, then fails every put.
#[derive(Debug)]
struct DiesAfter {
    inner: Arc<InMemory>,
    allowed: usize,
    done: AtomicUsize,
}

impl fmt::Display for DiesAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DiesAfter({})", self.allowed)
    }
}

#[async_trait]
impl ObjectStore for DiesAfter {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        if self.done.fetch_add(1, Ordering::SeqCst) >= self.allowed {
            return Err(object_store::Error::Generic {
                store: "DiesAfter",
                source: "the writer died".into(),
            });
        }
        self.inner.put_opts(location, payload, opts).await
    }
    async fn put_multipart_opts(
        &self,
        _location: &Path,
        _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(object_store::Error::NotImplemented {
            operation: "multipart".into(),
            implementer: "DiesAfter".into(),
        })
    }
    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[tokio::test]
async fn a_save_interrupted_after_any_write_leaves_nothing_readable() {
    let session = SessionId::parse("s").unwrap();
    let text = "é".repeat(10_000);
    let mut writes_of_a_whole_save = None;
    for allowed in 0.. {
        let memory = Arc::new(InMemory::new());
        let dying = Arc::new(DiesAfter {
            inner: Arc::clone(&memory),
            allowed,
            done: AtomicUsize::new(0),
        });
        let writer = ObjectResultStore::new(dying.clone(), "p").unwrap();
        let reader = ObjectResultStore::new(memory.clone(), "p").unwrap();
        let id = ResultId::generate();
        let saved = writer
            .save(
                NewResult::new(Some(session.clone())).with_id(id.clone()),
                &text,
            )
            .await;
        if saved.is_ok() {
            writes_of_a_whole_save = Some(allowed);
            assert_eq!(
                reader.read_chars(&id, 0, u64::MAX).await.unwrap().text,
                text
            );
            break;
        }
        assert_eq!(saved.unwrap_err().kind(), "backend");
        assert_eq!(
            reader.meta(&id).await.unwrap_err().kind(),
            "not_found",
            "after {allowed} writes"
        );
        assert_eq!(
            reader.read_chars(&id, 0, 1).await.unwrap_err().kind(),
            "not_found"
        );
        assert!(
            reader
                .list(&ListFilter::scope(Scope::Session(session.clone())))
                .await
                .unwrap()
                .is_empty()
        );

        let report = reader.prune(u64::MAX, &Scope::All).await.unwrap();
        assert_eq!((report.results, report.garbage), (0, allowed as u64));
        let left: Vec<ObjectMeta> = futures::TryStreamExt::try_collect(memory.list(None))
            .await
            .unwrap();
        assert!(
            left.is_empty(),
            "after {allowed} writes, prune left {left:?}"
        );
    }
    assert_eq!(
        writes_of_a_whole_save,
        Some(3),
        "a save is data, marker, record"
    );
}
