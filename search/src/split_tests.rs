//! A first stage split over two threads (`score.rs`, `worker.rs`) finds what one thread finds,
//! to the bit.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use proptest::prelude::*;

use crate::catalog::ToolDoc;
use crate::index::SearchIndex;
use crate::query::Query;
use crate::score::tests::PANIC_IN_UPPER_HALF_OF;

/// Words of the generated catalogs: the first few are in most tools (lists of two or more
/// blocks), the last few in a handful.
const WORDS: [&str; 24] = [
    "file",
    "read",
    "write",
    "user",
    "list",
    "create",
    "delete",
    "update",
    "search",
    "email",
    "message",
    "calendar",
    "event",
    "weather",
    "forecast",
    "invoice",
    "payment",
    "refund",
    "ticket",
    "flight",
    "hotel",
    "translate",
    "summarize",
    "quantum",
];

/// `n` tools of 4-9 words each, drawn (by a fixed generator) more often from the front of
/// [`WORDS`], so that the commonest words are in more than 128 tools of 300.
fn catalog(n: usize) -> Vec<ToolDoc> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    (0..n)
        .map(|i| {
            let words = 4 + next(6);
            let text: Vec<&str> = (0..words)
                .map(|_| {
                    let upto = next(WORDS.len()) + 1;
                    WORDS[next(upto)]
                })
                .collect();
            let name = format!("{}_{}_{i:04}", text[0], text[1]);
            ToolDoc::new(name, text.join(" "))
        })
        .collect()
}

/// Each hit's name and score bits.
fn found(index: &SearchIndex, query: &str, k: usize) -> Vec<(String, u32)> {
    let Ok(q) = Query::parse(query) else {
        return Vec::new();
    };
    index
        .search(&q, k)
        .hits
        .into_iter()
        .map(|h| (h.name, h.score.to_bits()))
        .collect()
}

/// The catalog's index searching on one thread, and splitting every search.
fn pair(docs: &[ToolDoc]) -> (SearchIndex, SearchIndex) {
    let one = SearchIndex::build(docs).expect("builds").with_threads(1);
    let split = SearchIndex::build(docs).expect("builds").with_split_from(0);
    (one, split)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_split_search_finds_what_one_thread_finds_to_the_bit(
        words in proptest::collection::vec(
            prop_oneof![
                (0..WORDS.len()).prop_map(|i| WORDS[i].to_string()),
                // Prefixes and typos: terms expanded to several lists.
                Just("quant".to_string()), Just("calender".to_string()),
                Just("+file".to_string()), Just("+email".to_string()),
            ],
            1..12,
        ),
        k in 1usize..60,
    ) {
        let (one, split) = SPLIT_PAIR.with(|p| p.clone());
        let query = words.join(" ");
        prop_assert_eq!(found(&one, &query, k), found(&split, &query, k));
    }
}

thread_local! {
    /// Built once per test thread: 300 tools.
    static SPLIT_PAIR: (std::sync::Arc<SearchIndex>, std::sync::Arc<SearchIndex>) = {
        let (one, split) = pair(&catalog(300));
        (std::sync::Arc::new(one), std::sync::Arc::new(split))
    };
}

#[test]
fn the_commonest_words_of_the_test_catalog_have_lists_of_two_or_more_blocks() {
    let index = SearchIndex::build(catalog(300)).expect("builds");
    assert!(index.file.cuts().len() >= 2);
}

#[test]
fn an_opened_index_has_the_middle_table_of_the_built_one() {
    let built = SearchIndex::build(catalog(300)).expect("builds");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("split.idx");
    built.write(&path).expect("writes");
    let opened = SearchIndex::open(&path).expect("opens");
    assert_eq!(opened.file.cuts(), built.file.cuts());
}

#[test]
fn a_catalog_of_one_tool_splits_into_an_empty_lower_half_and_finds_it() {
    let (one, split) = pair(&catalog(1));
    let query = WORDS.join(" ");
    assert_eq!(found(&split, &query, 5), found(&one, &query, 5));
    assert_eq!(found(&split, &query, 5).len(), 1);
}

#[test]
fn a_catalog_of_two_tools_splits_one_tool_a_half() {
    let (one, split) = pair(&catalog(2));
    let query = WORDS.join(" ");
    assert_eq!(found(&split, &query, 5), found(&one, &query, 5));
}

#[test]
fn a_list_whose_single_block_straddles_the_middle_is_shared_by_the_halves() {
    // Every tool has "shared": one list of 100 tools, one block across tool 50.
    let docs: Vec<ToolDoc> = (0..100)
        .map(|i| ToolDoc::new(format!("tool_{i:03}"), format!("shared word{}", i % 7)))
        .collect();
    let (one, split) = pair(&docs);
    let all = found(&split, "shared word3", 100);
    assert_eq!(all, found(&one, "shared word3", 100));
    assert_eq!(all.len(), 100);
}

#[test]
fn one_thread_never_splits_whatever_the_query() {
    let index = SearchIndex::build(catalog(300))
        .expect("builds")
        .with_threads(1);
    assert_eq!(index.threads(), 1);
    assert!(!index.split.may_split(usize::MAX));
}

#[test]
fn a_panic_in_the_workers_half_becomes_the_callers_panic() {
    // A size no other test uses: only this index's searches panic.
    const TOOLS: usize = 257;
    let index = SearchIndex::build(catalog(TOOLS))
        .expect("builds")
        .with_split_from(0);
    PANIC_IN_UPPER_HALF_OF.store(TOOLS, Ordering::Relaxed);
    let caught = panic::catch_unwind(AssertUnwindSafe(|| found(&index, "file read", 5)));
    PANIC_IN_UPPER_HALF_OF.store(0, Ordering::Relaxed);
    let message = caught
        .err()
        .and_then(|p| p.downcast_ref::<String>().cloned());
    assert_eq!(message.as_deref(), Some("the upper half of 257 tools"));
    // And the next search works.
    assert!(!found(&index, "file read", 5).is_empty());
}

#[test]
fn the_worker_is_reused_across_searches() {
    let index = SearchIndex::build(catalog(300))
        .expect("builds")
        .with_split_from(0);
    for query in WORDS {
        found(&index, query, 5);
    }
    assert_eq!(crate::worker::worker().threads_started(), 1);
}
