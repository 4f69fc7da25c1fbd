//! Session state beside the results: shared by every instance on one backend, no lost update,
//! expiry, deletion, and no interference with the results.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use toolgate_store::{
    Corruption, ObjectSessionStore, ResultStore, Scope, SessionId, SessionState, SessionStore,
    StoreError,
};

use crate::common::{Fixture, Kind};

const DAY: Option<Duration> = Some(Duration::from_secs(24 * 3600));

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

fn each_backend(test: impl Fn(&Fixture)) {
    let kinds = [
        Kind::Memory,
        Kind::File,
        #[cfg(feature = "s3")]
        Kind::S3,
    ];
    for kind in kinds {
        if let Some(fixture) = Fixture::new(kind) {
            test(&fixture);
        }
    }
}

#[test]
fn names_revealed_through_one_instance_load_through_another() {
    each_backend(|f| {
        rt().block_on(async {
            let first = ObjectSessionStore::beside(&f.store, DAY);
            let second = ObjectSessionStore::beside(&f.reopen(), DAY);
            first.reveal(&sid("s1"), &names(&["echo"])).await.unwrap();
            let loaded = second.load(&sid("s1")).await.unwrap().unwrap();
            assert_eq!(loaded.revealed, names(&["echo"]), "{:?}", f.kind);
        })
    });
}

#[test]
fn concurrent_reveals_from_many_instances_lose_no_name() {
    each_backend(|f| {
        rt().block_on(async {
            let mut tasks = Vec::new();
            for i in 0..16 {
                let store = ObjectSessionStore::beside(&f.reopen(), DAY);
                tasks.push(tokio::spawn(async move {
                    store
                        .reveal(&sid("shared"), &names(&[&format!("tool_{i}")]))
                        .await
                        .unwrap()
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            let state = ObjectSessionStore::beside(&f.store, DAY)
                .load(&sid("shared"))
                .await
                .unwrap()
                .unwrap();
            let want: BTreeSet<String> = (0..16).map(|i| format!("tool_{i}")).collect();
            assert_eq!(state.revealed, want, "{:?}", f.kind);
        })
    });
}

#[test]
fn revealing_only_known_names_writes_nothing() {
    rt().block_on(async {
        let store = ObjectSessionStore::in_memory(DAY);
        let saved = store.reveal(&sid("s"), &names(&["a", "b"])).await.unwrap();
        let again = store.reveal(&sid("s"), &names(&["a"])).await.unwrap();
        assert_eq!(again.updated_at_ms, saved.updated_at_ms);
        assert_eq!(again.revealed, names(&["a", "b"]));
    });
}

#[test]
fn old_versions_are_removed_after_a_write() {
    let f = Fixture::new(Kind::File).unwrap();
    rt().block_on(async {
        let store = ObjectSessionStore::beside(&f.store, DAY);
        for i in 0..6 {
            store
                .reveal(&sid("s"), &names(&[&format!("t{i}")]))
                .await
                .unwrap();
        }
        let prefix = Path::from("sessions");
        let objects = f.store.backend().list(Some(&prefix));
        let count = objects.count().await;
        assert_eq!(count, 2, "the newest version and the one it replaced");
    });
}

#[test]
fn a_state_past_its_ttl_loads_as_none_and_the_next_reveal_starts_empty() {
    rt().block_on(async {
        let backend: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        ObjectSessionStore::new(backend.clone(), Path::default(), DAY)
            .reveal(&sid("s"), &names(&["old"]))
            .await
            .unwrap();
        // The same data seen with a time to live of zero: everything has expired.
        let expired = ObjectSessionStore::new(backend, Path::default(), Some(Duration::ZERO));
        assert_eq!(expired.load(&sid("s")).await.unwrap(), None);
        let fresh = expired.reveal(&sid("s"), &names(&["new"])).await.unwrap();
        assert_eq!(fresh.revealed, names(&["new"]));
    });
}

#[test]
fn without_a_ttl_a_state_never_expires() {
    rt().block_on(async {
        let store = ObjectSessionStore::in_memory(None);
        store.reveal(&sid("s"), &names(&["kept"])).await.unwrap();
        assert!(store.load(&sid("s")).await.unwrap().is_some());
    });
}

#[test]
fn delete_forgets_the_state_and_is_idempotent() {
    each_backend(|f| {
        rt().block_on(async {
            let store = ObjectSessionStore::beside(&f.store, DAY);
            store.reveal(&sid("gone"), &names(&["x"])).await.unwrap();
            assert!(store.delete(&sid("gone")).await.unwrap());
            assert_eq!(store.load(&sid("gone")).await.unwrap(), None);
            assert!(!store.delete(&sid("gone")).await.unwrap());
        })
    });
}

#[test]
fn a_session_whose_id_extends_another_does_not_share_its_state() {
    rt().block_on(async {
        let store = ObjectSessionStore::in_memory(DAY);
        // 64 bytes encode to one 128-character key segment; 65 bytes add a second segment.
        let short = "a".repeat(64);
        let long = "a".repeat(65);
        store
            .reveal(&sid(&long), &names(&["long_only"]))
            .await
            .unwrap();
        assert_eq!(store.load(&sid(&short)).await.unwrap(), None);
        assert!(!store.delete(&sid(&short)).await.unwrap());
        assert!(store.load(&sid(&long)).await.unwrap().is_some());
    });
}

#[test]
fn a_record_that_does_not_parse_is_a_corrupt_error() {
    let f = Fixture::new(Kind::Memory).unwrap();
    rt().block_on(async {
        let store = ObjectSessionStore::beside(&f.store, DAY);
        store.reveal(&sid("s"), &names(&["x"])).await.unwrap();
        let prefix = Path::from("sessions");
        let objects: Vec<_> = f
            .store
            .backend()
            .list(Some(&prefix))
            .try_collect()
            .await
            .unwrap();
        let key = &objects[0].location;
        f.store.backend().put(key, "not json".into()).await.unwrap();
        let err = store.load(&sid("s")).await.unwrap_err();
        match err {
            StoreError::Corrupt {
                id: None,
                what: Corruption::SessionUnparsable { session, .. },
            } => assert_eq!(session, sid("s")),
            other => panic!("expected an unparsable session state, got {other:?}"),
        }
    });
}

#[test]
fn the_state_of_another_session_under_this_name_is_a_corrupt_error() {
    let f = Fixture::new(Kind::Memory).unwrap();
    rt().block_on(async {
        let store = ObjectSessionStore::beside(&f.store, DAY);
        store.reveal(&sid("a"), &names(&["x"])).await.unwrap();
        store.reveal(&sid("b"), &names(&["y"])).await.unwrap();
        let objects: Vec<_> = f
            .store
            .backend()
            .list(Some(&Path::from("sessions")))
            .try_collect()
            .await
            .unwrap();
        // The session id is hex-encoded in the key: "a" is 61, "b" is 62.
        let of = |hex: &str| {
            objects
                .iter()
                .find(|o| o.location.as_ref().contains(&format!("/{hex}/")))
                .map(|o| o.location.clone())
                .unwrap_or_else(|| panic!("no state object under {hex} in {objects:?}"))
        };
        let b_state = f
            .store
            .backend()
            .get(&of("62"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        f.store
            .backend()
            .put(&of("61"), b_state.into())
            .await
            .unwrap();
        match store.load(&sid("a")).await.unwrap_err() {
            StoreError::Corrupt {
                what: Corruption::SessionRecordMismatch { session, found, .. },
                ..
            } => assert_eq!((session, found), (sid("a"), sid("b"))),
            other => panic!("expected a record of another session, got {other:?}"),
        }
    });
}

#[test]
fn pruning_and_deleting_results_leave_session_state_alone() {
    each_backend(|f| {
        rt().block_on(async {
            let sessions = ObjectSessionStore::beside(&f.store, DAY);
            sessions.reveal(&sid("s"), &names(&["x"])).await.unwrap();
            f.store.delete_session(&sid("s")).await.unwrap();
            f.store.prune(u64::MAX, &Scope::All).await.unwrap();
            let state: Option<SessionState> = sessions.load(&sid("s")).await.unwrap();
            assert_eq!(
                state.map(|s| s.revealed),
                Some(names(&["x"])),
                "{:?}",
                f.kind
            );
        })
    });
}

/// Writes a state for `session` whose last change was at 1 s past the epoch: long expired.
async fn write_stale(backend: &Arc<dyn ObjectStore>, prefix: &Path, session: &str) {
    let mut path = prefix.clone().join("sessions");
    for segment in sid(session).key_segments() {
        path = path.join(segment);
    }
    let record = serde_json::json!({
        "version": 1, "session": session, "revealed": ["old"], "updated_at_ms": 1000
    });
    backend
        .put(
            &path.join("state").join(format!("{:020}", 1)),
            serde_json::to_vec(&record).unwrap().into(),
        )
        .await
        .unwrap();
}

#[test]
fn prune_expired_deletes_only_the_states_past_their_ttl() {
    each_backend(|f| {
        rt().block_on(async {
            let store = ObjectSessionStore::beside(&f.store, DAY);
            store.reveal(&sid("live"), &names(&["echo"])).await.unwrap();
            write_stale(f.store.backend(), f.store.prefix(), "stale").await;

            assert_eq!(store.prune_expired().await.unwrap(), 1, "{:?}", f.kind);
            let left: Vec<_> = f
                .store
                .backend()
                .list(Some(&f.store.prefix().clone().join("sessions")))
                .try_collect()
                .await
                .unwrap();
            let stale_dir = sid("stale").key_segments().join("/");
            assert!(
                left.iter()
                    .all(|o| !o.location.as_ref().contains(&stale_dir)),
                "{left:?}"
            );
            assert!(store.load(&sid("live")).await.unwrap().is_some());
            assert_eq!(
                store.prune_expired().await.unwrap(),
                0,
                "nothing left to prune"
            );
        })
    });
}

#[test]
fn prune_expired_without_a_ttl_deletes_nothing() {
    rt().block_on(async {
        let backend: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        write_stale(&backend, &Path::default(), "stale").await;
        let store = ObjectSessionStore::new(backend, Path::default(), None);
        assert_eq!(store.prune_expired().await.unwrap(), 0);
        assert!(store.load(&sid("stale")).await.unwrap().is_some());
    });
}
