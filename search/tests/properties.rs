//! Properties that hold for every query.

use proptest::prelude::*;
use toolgate_search::{Query, SearchIndex, ToolDoc};

fn index() -> SearchIndex {
    let docs = [
        ("get_weather", "Current weather for a city."),
        ("get_forecast", "Weather forecast for the next days."),
        ("send_email", "Send an email message to a recipient."),
        ("sendSms", "Send a text message to a phone."),
        ("fs.read_file", "Read a file from disk."),
        ("fs.write_file", "Write a file to disk."),
        ("a", "Same text."),
        ("b", "Same text."),
    ];
    SearchIndex::build(
        docs.iter()
            .map(|(n, d)| ToolDoc::new(*n, *d))
            .collect::<Vec<_>>(),
    )
    .expect("builds")
}

proptest! {
    #[test]
    fn any_string_query_never_panics(s in any::<String>()) {
        let index = index();
        if let Ok(q) = Query::parse(&s) {
            let _ = index.search(&q, 5);
        }
    }

    #[test]
    fn wordy_queries_give_sorted_deterministic_results(
        words in proptest::collection::vec(
            prop_oneof![
                Just("weather"), Just("wether"), Just("send"), Just("file"), Just("+file"),
                Just("message"), Just("text"), Just("same"), Just("fs.read_file"), Just("disk"),
            ],
            1..6,
        ),
        max in 0usize..10,
    ) {
        let index = index();
        let Ok(q) = Query::parse(&words.join(" ")) else { return Ok(()) };
        let first = index.search(&q, max);
        prop_assert!(first.hits.len() <= max);
        for pair in first.hits.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            prop_assert!(a.score > b.score || (a.score == b.score && a.name < b.name));
        }
        prop_assert_eq!(&first, &index.search(&q, max));
    }
}
