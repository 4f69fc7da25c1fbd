//! The behaviour suite: each function is one rule of the store, run against every backend by
//! `backends.rs`. The functions take a fresh [`Fixture`] and panic when the rule is broken.

use std::time::Duration;

use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use toolgate_store::{
    Corruption, INDEX_STRIDE_CHARS, ListFilter, NewResult, ResultId, ResultStore, Scope, SessionId,
    StoreError,
};

use crate::common::{Fixture, big_text, block, chain, chars_slice};

fn session(name: &str) -> SessionId {
    SessionId::parse(name).unwrap()
}

/// Saves one result after the clock moved on, so that creation times are distinct.
async fn save_later(store: &impl ResultStore, session: Option<&SessionId>, text: &str) -> ResultId {
    tokio::time::sleep(Duration::from_millis(3)).await;
    store
        .save(NewResult::new(session.cloned()), text)
        .await
        .unwrap()
        .id
}

fn ids(metas: &[toolgate_store::ResultMeta]) -> Vec<ResultId> {
    metas.iter().map(|m| m.id.clone()).collect()
}

pub async fn saved_content_reads_back_byte_for_byte(f: Fixture) {
    let text = "line 1\r\n\ttab Grüße 中文 😀\u{0} end";
    let new = NewResult::new(Some(session("s1"))).with_tool("grep");
    let meta = f.store.save(new.clone(), text).await.unwrap();
    assert_eq!(meta.id, new.id);
    assert_eq!(meta.session, new.session);
    assert_eq!(meta.tool.as_deref(), Some("grep"));
    assert_eq!(
        (meta.bytes, meta.chars),
        (text.len() as u64, text.chars().count() as u64)
    );
    assert_eq!(f.store.meta(&meta.id).await.unwrap(), meta);
    let page = f.store.read_chars(&meta.id, 0, u64::MAX).await.unwrap();
    assert_eq!(page.text.as_bytes(), text.as_bytes());
    assert_eq!(
        (page.offset, page.end, page.total_chars, page.next_offset()),
        (0, meta.chars, meta.chars, None)
    );
}

pub async fn saving_an_existing_id_fails_and_keeps_the_first_result(f: Fixture) {
    let new = NewResult::new(None);
    f.store.save(new.clone(), "first").await.unwrap();
    let err = f
        .store
        .save(new.clone(), "second, longer")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::AlreadyExists { id } if *id == new.id),
        "{err:?}"
    );
    assert_eq!(
        f.store.read_chars(&new.id, 0, 100).await.unwrap().text,
        "first"
    );
    assert_eq!(f.store.list(&ListFilter::all()).await.unwrap().len(), 1);
}

pub async fn a_missing_id_is_not_found(f: Fixture) {
    let id = ResultId::generate();
    assert_eq!(f.store.meta(&id).await.unwrap_err().kind(), "not_found");
    assert_eq!(
        f.store.read_chars(&id, 0, 10).await.unwrap_err().kind(),
        "not_found"
    );
}

pub async fn pages_count_unicode_characters(f: Fixture) {
    let stride = INDEX_STRIDE_CHARS;
    let text = block().repeat(((3 * stride) / 1000 + 2) as usize);
    let total = text.chars().count() as u64;
    let id = f.store.save(NewResult::new(None), &text).await.unwrap().id;
    // Pages inside one stride, across stride boundaries, starting and ending exactly on them, to the end.
    let cases = [
        (0, 1),
        (1, 7),
        (stride - 1, 2),
        (stride, stride),
        (stride - 3, 2 * stride + 6),
        (2 * stride, 1),
        (999, 20_000),
        (total - 5, 20_000),
        (total - 1, 1),
    ];
    for (offset, limit) in cases {
        let page = f.store.read_chars(&id, offset, limit).await.unwrap();
        let end = (offset + limit).min(total);
        assert_eq!(
            page.text,
            chars_slice(&text, offset, end),
            "page {offset}+{limit}"
        );
        assert_eq!(
            (page.offset, page.end, page.total_chars),
            (offset, end, total)
        );
        assert_eq!(page.next_offset(), (end < total).then_some(end));
    }
}

pub async fn an_offset_at_the_end_reads_empty_and_past_it_fails(f: Fixture) {
    let id = f
        .store
        .save(NewResult::new(None), "héllo")
        .await
        .unwrap()
        .id;
    let page = f.store.read_chars(&id, 5, 10).await.unwrap();
    assert_eq!(
        (page.text.as_str(), page.end, page.next_offset()),
        ("", 5, None)
    );
    let err = f.store.read_chars(&id, 6, 10).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::OffsetOutOfRange {
                offset: 6,
                total: 5,
                ..
            }
        ),
        "{err:?}"
    );
    let err = f
        .store
        .read_chars(&id, u64::MAX, u64::MAX)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "offset_out_of_range");
}

pub async fn an_empty_result_reads_as_an_empty_page(f: Fixture) {
    let meta = f.store.save(NewResult::new(None), "").await.unwrap();
    assert_eq!((meta.bytes, meta.chars), (0, 0));
    let page = f.store.read_chars(&meta.id, 0, 100).await.unwrap();
    assert_eq!((page.text.as_str(), page.end, page.total_chars), ("", 0, 0));
}

pub async fn delete_is_idempotent(f: Fixture) {
    let keep = f.store.save(NewResult::new(None), "keep").await.unwrap().id;
    let id = f.store.save(NewResult::new(None), "gone").await.unwrap().id;
    f.store.delete(&id).await.unwrap();
    f.store.delete(&id).await.unwrap();
    f.store.delete(&ResultId::generate()).await.unwrap();
    assert_eq!(f.store.meta(&id).await.unwrap_err().kind(), "not_found");
    assert_eq!(
        f.store.read_chars(&id, 0, 1).await.unwrap_err().kind(),
        "not_found"
    );
    assert_eq!(
        ids(&f.store.list(&ListFilter::all()).await.unwrap()),
        vec![keep]
    );
}

pub async fn list_is_newest_first(f: Fixture) {
    let s = session("s");
    let a = save_later(&f.store, None, "a").await;
    let b = save_later(&f.store, Some(&s), "b").await;
    let c = save_later(&f.store, None, "c").await;
    let all = f.store.list(&ListFilter::all()).await.unwrap();
    assert_eq!(ids(&all), vec![c, b, a]);
    assert!(
        all.windows(2)
            .all(|w| w[0].created_at_ms > w[1].created_at_ms)
    );
}

pub async fn list_filters_by_owner_and_age(f: Fixture) {
    let (s1, s2) = (session("one"), session("two"));
    let a = save_later(&f.store, Some(&s1), "a").await;
    let b = save_later(&f.store, Some(&s2), "b").await;
    let c = save_later(&f.store, None, "c").await;
    let d = save_later(&f.store, Some(&s1), "d").await;
    let list = |scope| async { ids(&f.store.list(&ListFilter::scope(scope)).await.unwrap()) };
    assert_eq!(
        list(Scope::Session(s1.clone())).await,
        vec![d.clone(), a.clone()]
    );
    assert_eq!(list(Scope::Session(s2)).await, vec![b]);
    assert_eq!(list(Scope::Unscoped).await, vec![c.clone()]);
    let d_time = f.store.meta(&d).await.unwrap().created_at_ms;
    let older = f
        .store
        .list(&ListFilter::all().created_before(d_time))
        .await
        .unwrap();
    assert_eq!(ids(&older).first(), Some(&c));
    assert!(!ids(&older).contains(&d));
}

pub async fn deleting_a_session_deletes_its_results_only(f: Fixture) {
    let (mine, other) = (session("mine"), session("other / ../ 😀"));
    let m1 = save_later(&f.store, Some(&mine), "m1").await;
    let m2 = save_later(&f.store, Some(&mine), "m2").await;
    let o = save_later(&f.store, Some(&other), "o").await;
    let n = save_later(&f.store, None, "n").await;
    assert_eq!(f.store.delete_session(&mine).await.unwrap(), 2);
    for id in [&m1, &m2] {
        assert_eq!(f.store.meta(id).await.unwrap_err().kind(), "not_found");
    }
    assert_eq!(
        ids(&f.store.list(&ListFilter::all()).await.unwrap()),
        vec![n, o]
    );
    assert_eq!(f.store.delete_session(&mine).await.unwrap(), 0);
}

pub async fn prune_removes_old_results_with_and_without_session(f: Fixture) {
    let s = session("s");
    let old_unscoped = save_later(&f.store, None, "old").await;
    let old_session = save_later(&f.store, Some(&s), "old").await;
    let new = save_later(&f.store, None, "new").await;
    let cutoff = f.store.meta(&new).await.unwrap().created_at_ms;
    let report = f.store.prune(cutoff, &Scope::Unscoped).await.unwrap();
    assert_eq!(report.results, 1);
    assert_eq!(
        f.store.meta(&old_unscoped).await.unwrap_err().kind(),
        "not_found"
    );
    let report = f.store.prune(cutoff, &Scope::All).await.unwrap();
    assert_eq!((report.results, report.garbage), (1, 0));
    assert_eq!(
        f.store.meta(&old_session).await.unwrap_err().kind(),
        "not_found"
    );
    assert_eq!(
        ids(&f.store.list(&ListFilter::all()).await.unwrap()),
        vec![new]
    );
}

/// The leftovers of a save that died before its record: data and a marker, no record.
pub async fn data_without_a_record_is_not_found_and_pruned(f: Fixture) {
    let backend = f.store.backend();
    let prefix = f.store.prefix().clone();
    let id = ResultId::generate();
    let s = session("s");
    let mut marker = prefix.clone().join("owner").join("s");
    for seg in s.key_segments() {
        marker = marker.join(seg);
    }
    let marker = marker.join("ids").join(id.as_str());
    backend
        .put(
            &prefix.clone().join("data").join(id.as_str()).join("0123"),
            PutPayload::from("partial"),
        )
        .await
        .unwrap();
    backend.put(&marker, PutPayload::new()).await.unwrap();

    assert_eq!(f.store.meta(&id).await.unwrap_err().kind(), "not_found");
    assert_eq!(
        f.store.read_chars(&id, 0, 10).await.unwrap_err().kind(),
        "not_found"
    );
    assert!(
        f.store
            .list(&ListFilter::scope(Scope::Session(s.clone())))
            .await
            .unwrap()
            .is_empty()
    );
    let kept = f
        .store
        .save(NewResult::new(Some(s)), "whole")
        .await
        .unwrap()
        .id;

    let report = f.store.prune(now_ms() + 60_000, &Scope::All).await.unwrap();
    assert_eq!((report.results, report.garbage), (1, 2));
    assert_eq!(f.store.meta(&kept).await.unwrap_err().kind(), "not_found");
    let left: Vec<Path> = backend
        .list(Some(&prefix))
        .map(|o| o.unwrap().location)
        .collect()
        .await;
    assert!(left.is_empty(), "prune left {left:?}");
}

pub async fn a_second_instance_reads_what_the_first_wrote(f: Fixture) {
    let s = session("shared");
    let text = big_text(300_000);
    let id = f
        .store
        .save(NewResult::new(Some(s.clone())), &text)
        .await
        .unwrap()
        .id;
    let other = f.reopen();
    let page = other.read_chars(&id, 12_345, 20_000).await.unwrap();
    assert_eq!(page.text, chars_slice(&text, 12_345, 32_345));
    assert_eq!(
        ids(&other
            .list(&ListFilter::scope(Scope::Session(s)))
            .await
            .unwrap()),
        vec![id]
    );
}

/// A writer task and a reader task on separate instances over the same data, at the same time: the reader
/// sees each result whole or not at all, and eventually all of them.
pub async fn a_reader_and_a_writer_on_separate_instances_never_see_a_partial_result(f: Fixture) {
    const N: usize = 12;
    let s = session("busy");
    let texts: Vec<String> = (0..N)
        .map(|i| format!("{i}:{}", big_text(20_000 + i * 7_919)))
        .collect();
    let writer = f.store.clone();
    let reader = f.reopen();
    let (s_w, texts_w) = (s.clone(), texts.clone());
    let write = tokio::spawn(async move {
        let mut ids = Vec::new();
        for t in &texts_w {
            ids.push(
                writer
                    .save(NewResult::new(Some(s_w.clone())), t)
                    .await
                    .unwrap()
                    .id,
            );
        }
        ids
    });
    let read = tokio::spawn(async move {
        let mut seen = std::collections::BTreeSet::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while seen.len() < N {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the reader saw only {} of {N}",
                seen.len()
            );
            for meta in reader
                .list(&ListFilter::scope(Scope::Session(s.clone())))
                .await
                .unwrap()
            {
                let page = reader.read_chars(&meta.id, 0, u64::MAX).await.unwrap();
                let i: usize = page.text.split(':').next().unwrap().parse().unwrap();
                assert_eq!(page.text, texts[i], "result {i} read partially");
                seen.insert(meta.id);
            }
            tokio::task::yield_now().await;
        }
        seen
    });
    let (written, seen) = (write.await.unwrap(), read.await.unwrap());
    assert_eq!(seen, written.into_iter().collect());
}

/// A big result of multi-byte text pages correctly at its start, across the index, and at its end.
/// 100 MB, as the issue asks, in every build.
pub async fn a_large_multibyte_result_pages_correctly(f: Fixture) {
    let size = 100 << 20;
    let text = big_text(size);
    let block_text = block();
    let total = (text.len() / block_text.len() * 1000) as u64;
    let block: Vec<char> = block_text.chars().collect();
    let meta = f.store.save(NewResult::new(None), &text).await.unwrap();
    drop(text);
    assert_eq!(meta.chars, total);
    let expected =
        |from: u64, to: u64| -> String { (from..to).map(|i| block[(i % 1000) as usize]).collect() };
    let mid = total / 2 - 7;
    for offset in [
        0,
        1,
        INDEX_STRIDE_CHARS * 100 - 1,
        mid,
        total - 20_000,
        total - 3,
        total,
    ] {
        let page = f.store.read_chars(&meta.id, offset, 20_000).await.unwrap();
        let end = (offset + 20_000).min(total);
        assert_eq!(page.end, end);
        assert_eq!(page.text, expected(offset, end), "page at {offset}");
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Create-only is enforced by the backend itself (for S3: the server honours `If-None-Match: *`), not
/// only by the store's check before uploading.
pub async fn the_backend_refuses_to_overwrite_a_record(f: Fixture) {
    use object_store::{ObjectStore, PutMode};
    let key = f.store.prefix().clone().join("meta").join("probe");
    let put = |text: &'static str| {
        f.store
            .backend()
            .put_opts(&key, PutPayload::from(text), PutMode::Create.into())
    };
    put("first").await.unwrap();
    let err = put("second").await.unwrap_err();
    assert!(
        matches!(err, object_store::Error::AlreadyExists { .. }),
        "{err:?}"
    );
    assert_eq!(&object_bytes(&f, &key).await[..], b"first");
}

/// Saves of one id racing each other: exactly one wins, and its content is what is read.
pub async fn racing_saves_of_one_id_have_exactly_one_winner(f: Fixture) {
    let id = ResultId::generate();
    let saves = (0..8).map(|i| {
        let store = f.reopen();
        let id = id.clone();
        tokio::spawn(async move {
            let text = format!("writer {i} {}", "x".repeat(50_000));
            store
                .save(NewResult::new(None).with_id(id), &text)
                .await
                .map(|_| text)
        })
    });
    let results: Vec<_> = futures::future::join_all(saves)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let winners: Vec<&String> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(
        winners.len(),
        1,
        "{} saves of one id succeeded",
        winners.len()
    );
    for r in &results {
        if let Err(e) = r {
            assert_eq!(e.kind(), "already_exists", "{e}");
        }
    }
    assert_eq!(
        &f.store.read_chars(&id, 0, u64::MAX).await.unwrap().text,
        winners[0]
    );
}

/// Saves a result of `owner` and overwrites its record with the first bytes of a record, as a
/// crash of a store without atomic writes or a hand edit could leave it.
async fn corrupt_result(f: &Fixture, owner: Option<&SessionId>) -> ResultId {
    let id = save_later(&f.store, owner, "soon unreadable").await;
    f.store
        .backend()
        .put(&record_key(f, &id), PutPayload::from(r#"{"version":1,"#))
        .await
        .unwrap();
    match f.store.meta(&id).await.unwrap_err() {
        StoreError::Corrupt {
            id: Some(named),
            what: Corruption::RecordUnparsable { .. },
        } => assert_eq!(named, id),
        other => panic!("expected an unparsable record, got {other:?}"),
    }
    id
}

/// Where the record of `id` is stored.
fn record_key(f: &Fixture, id: &ResultId) -> Path {
    f.store.prefix().clone().join("meta").join(id.as_str())
}

/// The whole content of the backend's object at `key`.
async fn object_bytes(f: &Fixture, key: &Path) -> bytes::Bytes {
    f.store
        .backend()
        .get(key)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
}

/// Rewrites the stored record of `id` with `edit` applied to its JSON.
async fn edit_record(f: &Fixture, id: &ResultId, edit: impl FnOnce(&mut serde_json::Value)) {
    let key = record_key(f, id);
    let mut record: serde_json::Value =
        serde_json::from_slice(&object_bytes(f, &key).await).unwrap();
    edit(&mut record);
    f.store
        .backend()
        .put(&key, PutPayload::from(serde_json::to_vec(&record).unwrap()))
        .await
        .unwrap();
}

pub async fn a_record_of_an_unknown_version_is_corrupt_and_names_the_version(f: Fixture) {
    let id = save_later(&f.store, None, "from the future").await;
    edit_record(&f, &id, |r| r["version"] = 99.into()).await;
    let err = f.store.meta(&id).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Corrupt {
                what: Corruption::RecordVersion { found: 99 },
                ..
            }
        ),
        "{err:?}"
    );
    assert!(chain(&err).contains("unknown record version 99"), "{err:?}");
}

pub async fn a_record_copied_from_another_result_is_corrupt(f: Fixture) {
    let id = save_later(&f.store, None, "mine").await;
    let other = save_later(&f.store, None, "theirs").await;
    let theirs = f.store.meta(&other).await.unwrap();
    edit_record(&f, &id, |r| {
        r["id"] = theirs.id.as_str().into();
    })
    .await;
    match f.store.meta(&id).await.unwrap_err() {
        StoreError::Corrupt {
            what: Corruption::RecordForAnother { found },
            ..
        } => assert_eq!(found, other),
        err => panic!("expected a record for another result, got {err:?}"),
    }
}

/// Every object left under the store's prefix.
async fn objects(f: &Fixture) -> Vec<Path> {
    f.store
        .backend()
        .list(Some(f.store.prefix()))
        .map(|o| o.unwrap().location)
        .collect()
        .await
}

pub async fn a_corrupt_record_is_reported_and_skipped_by_listings(f: Fixture) {
    let s = session("s");
    let good = save_later(&f.store, Some(&s), "fine").await;
    let bad = corrupt_result(&f, Some(&s)).await;
    let unscoped = save_later(&f.store, None, "fine too").await;
    for scope in [Scope::All, Scope::Session(s.clone())] {
        let listing = f
            .store
            .listing(&ListFilter::scope(scope.clone()))
            .await
            .unwrap();
        let expected = match scope {
            Scope::All => vec![unscoped.clone(), good.clone()],
            _ => vec![good.clone()],
        };
        assert_eq!(ids(&listing.results), expected, "{scope:?}");
        assert_eq!(listing.unreadable.len(), 1, "{scope:?}");
        assert_eq!(listing.unreadable[0].id, bad);
        assert_eq!(listing.unreadable[0].error.kind(), "corrupt");
        // The plain listing skips it too.
        let plain = f
            .store
            .list(&ListFilter::scope(scope.clone()))
            .await
            .unwrap();
        assert_eq!(ids(&plain), expected, "{scope:?}");
    }
    let listing = f
        .store
        .listing(&ListFilter::scope(Scope::Unscoped))
        .await
        .unwrap();
    assert_eq!(ids(&listing.results), [unscoped]);
    assert!(listing.unreadable.is_empty(), "not under this owner");
}

pub async fn deleting_a_result_with_a_corrupt_record_removes_all_of_it(f: Fixture) {
    let s = session("s");
    let bad = corrupt_result(&f, Some(&s)).await;
    let bad_unscoped = corrupt_result(&f, None).await;
    f.store.delete(&bad).await.unwrap();
    f.store.delete(&bad_unscoped).await.unwrap();
    assert_eq!(f.store.meta(&bad).await.unwrap_err().kind(), "not_found");
    let left = objects(&f).await;
    assert!(left.is_empty(), "left behind: {left:?}");
    let listing = f.store.listing(&ListFilter::all()).await.unwrap();
    assert!(listing.results.is_empty() && listing.unreadable.is_empty());
}

pub async fn deleting_a_session_with_a_corrupt_record_deletes_it_too(f: Fixture) {
    let (s, other) = (session("s"), session("other"));
    let good = save_later(&f.store, Some(&s), "fine").await;
    let bad = corrupt_result(&f, Some(&s)).await;
    let kept = save_later(&f.store, Some(&other), "other session").await;
    assert_eq!(f.store.delete_session(&s).await.unwrap(), 2);
    for id in [&good, &bad] {
        assert_eq!(f.store.meta(id).await.unwrap_err().kind(), "not_found");
    }
    let listing = f.store.listing(&ListFilter::all()).await.unwrap();
    assert_eq!(ids(&listing.results), [kept]);
    assert!(listing.unreadable.is_empty());
}

pub async fn prune_removes_corrupt_records_older_than_the_cutoff(f: Fixture) {
    let s = session("s");
    let bad = corrupt_result(&f, Some(&s)).await;
    let bad_unscoped = corrupt_result(&f, None).await;
    // Not old enough: stays, reported by listings.
    let report = f.store.prune(0, &Scope::All).await.unwrap();
    assert_eq!(report.unreadable, 0);
    assert_eq!(
        f.store
            .listing(&ListFilter::all())
            .await
            .unwrap()
            .unreadable
            .len(),
        2
    );

    // Scoped to the session: only its own.
    let report = f
        .store
        .prune(now_ms() + 60_000, &Scope::Session(s.clone()))
        .await
        .unwrap();
    assert_eq!((report.results, report.unreadable), (0, 1));
    assert_eq!(f.store.meta(&bad).await.unwrap_err().kind(), "not_found");
    assert_eq!(
        f.store.meta(&bad_unscoped).await.unwrap_err().kind(),
        "corrupt"
    );

    let report = f.store.prune(now_ms() + 60_000, &Scope::All).await.unwrap();
    assert_eq!((report.results, report.unreadable), (0, 1));
    let left = objects(&f).await;
    assert!(left.is_empty(), "left behind: {left:?}");
}
