//! SPEC R4: who may read which result, through `read_scoped`.

use toolgate_store::{
    ForeignResult, NewResult, ObjectResultStore, ResultId, ResultStore, SessionId, read_scoped,
};

fn session(name: &str) -> SessionId {
    SessionId::parse(name).unwrap()
}

async fn saved(store: &ObjectResultStore, owner: Option<&SessionId>) -> ResultId {
    store
        .save(NewResult::new(owner.cloned()), "secret")
        .await
        .unwrap()
        .id
}

#[tokio::test]
async fn a_session_reads_its_own_result() {
    let store = ObjectResultStore::in_memory();
    let alice = session("alice");
    let id = saved(&store, Some(&alice)).await;
    let page = read_scoped(&store, Some(&alice), &id, 0, 10, ForeignResult::Deny)
        .await
        .unwrap();
    assert_eq!(page.text, "secret");
}

#[tokio::test]
async fn a_result_without_session_is_read_without_session() {
    let store = ObjectResultStore::in_memory();
    let id = saved(&store, None).await;
    assert_eq!(
        read_scoped(&store, None, &id, 0, 10, ForeignResult::Deny)
            .await
            .unwrap()
            .text,
        "secret"
    );
}

#[tokio::test]
async fn another_sessions_result_is_access_denied() {
    let store = ObjectResultStore::in_memory();
    let id = saved(&store, Some(&session("alice"))).await;
    let err = read_scoped(
        &store,
        Some(&session("bob")),
        &id,
        0,
        10,
        ForeignResult::Deny,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "access_denied");
}

#[tokio::test]
async fn a_sessions_result_read_without_session_is_access_denied() {
    let store = ObjectResultStore::in_memory();
    let id = saved(&store, Some(&session("alice"))).await;
    let err = read_scoped(&store, None, &id, 0, 10, ForeignResult::Deny)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "access_denied");
}

#[tokio::test]
async fn a_result_without_session_read_from_a_session_is_access_denied() {
    let store = ObjectResultStore::in_memory();
    let id = saved(&store, None).await;
    let err = read_scoped(
        &store,
        Some(&session("alice")),
        &id,
        0,
        10,
        ForeignResult::Deny,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "access_denied");
}

#[tokio::test]
async fn hidden_foreign_results_look_exactly_like_missing_ones() {
    let store = ObjectResultStore::in_memory();
    let id = saved(&store, Some(&session("alice"))).await;
    let missing = ResultId::generate();
    let foreign = read_scoped(
        &store,
        Some(&session("bob")),
        &id,
        0,
        10,
        ForeignResult::Hide,
    )
    .await
    .unwrap_err();
    let absent = read_scoped(
        &store,
        Some(&session("bob")),
        &missing,
        0,
        10,
        ForeignResult::Hide,
    )
    .await
    .unwrap_err();
    assert_eq!(foreign.kind(), "not_found");
    assert_eq!(
        foreign.to_string().replace(id.as_str(), "ID"),
        absent.to_string().replace(missing.as_str(), "ID")
    );
}

#[tokio::test]
async fn a_session_id_differing_only_by_case_is_another_session() {
    let store = ObjectResultStore::in_memory();
    let id = saved(&store, Some(&session("Alice"))).await;
    let err = read_scoped(
        &store,
        Some(&session("alice")),
        &id,
        0,
        10,
        ForeignResult::Deny,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "access_denied");
}
