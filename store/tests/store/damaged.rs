//! A result whose files were changed behind the store's back is `corrupt`, whatever the
//! backend: never `backend` ("may be unreachable, try again later"), never a panic.

use crate::common::chain;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use serde_json::Value;
use toolgate_store::{Corruption, NewResult, ObjectResultStore, ResultId, ResultStore, StoreError};

/// A store in memory holding one result of 10,000 characters.
async fn one_result() -> (ObjectResultStore, ResultId) {
    let store = ObjectResultStore::in_memory();
    let meta = store
        .save(NewResult::new(None), &"x".repeat(10_000))
        .await
        .unwrap();
    (store, meta.id)
}

fn record_key(store: &ObjectResultStore, id: &ResultId) -> Path {
    store.prefix().clone().join("meta").join(id.as_str())
}

async fn record(store: &ObjectResultStore, id: &ResultId) -> Value {
    let raw = store.backend().get(&record_key(store, id)).await.unwrap();
    serde_json::from_slice(&raw.bytes().await.unwrap()).unwrap()
}

async fn put_record(store: &ObjectResultStore, id: &ResultId, record: &Value) {
    store
        .backend()
        .put(&record_key(store, id), PutPayload::from(record.to_string()))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_data_object_cut_short_is_corrupt() {
    let (store, id) = one_result().await;
    let blob = record(&store, &id).await["blob"]
        .as_str()
        .unwrap()
        .to_owned();
    let key = store
        .prefix()
        .clone()
        .join("data")
        .join(id.as_str())
        .join(blob.as_str());
    store
        .backend()
        .put(&key, PutPayload::from("x".repeat(5_000)))
        .await
        .unwrap();
    let err = store.read_chars(&id, 0, 100).await.unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::Corrupt {
                what: Corruption::DataSize {
                    expected: 10_024,
                    found: 5_000
                },
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn sizes_too_large_to_add_up_are_impossible_not_a_panic() {
    let (store, id) = one_result().await;
    let mut lying = record(&store, &id).await;
    lying["bytes"] = Value::from(u64::MAX - 8);
    lying["chars"] = Value::from(u64::MAX - 8);
    put_record(&store, &id, &lying).await;
    let err = store.read_chars(&id, 0, 100).await.unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::Corrupt {
                what: Corruption::ImpossibleSizes,
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_record_naming_its_data_with_a_path_is_corrupt() {
    let (store, id) = one_result().await;
    let mut lying = record(&store, &id).await;
    lying["blob"] = Value::from("../../meta/x");
    put_record(&store, &id, &lying).await;
    let err = store.meta(&id).await.unwrap_err();
    assert_eq!(err.kind(), "corrupt", "{err}");
    assert!(chain(&err).contains("\"../../meta/x\""), "{err:?}");
}
