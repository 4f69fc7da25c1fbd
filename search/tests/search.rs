//! The search behaviours of SPEC S2 and S6, one per test.

use serde_json::json;
use toolgate_search::{
    Field, IndexError, MatchKind, Query, QueryError, Ranking, SearchIndex, SearchResults, ToolDoc,
};

fn doc(name: &str, description: &str) -> ToolDoc {
    ToolDoc::new(name, description)
}

/// The best 10, explained.
fn search(index: &SearchIndex, query: &str) -> SearchResults {
    index.search_explained(&Query::parse(query).expect("query parses"), 10)
}

fn names(results: &SearchResults) -> Vec<&str> {
    results.hits.iter().map(|h| h.name.as_str()).collect()
}

fn top(index: &SearchIndex, query: &str) -> String {
    let results = search(index, query);
    results
        .hits
        .first()
        .map(|h| h.name.clone())
        .unwrap_or_default()
}

fn catalog() -> SearchIndex {
    SearchIndex::build(vec![
        doc("get_weather", "Current conditions for a city."),
        doc("send-email", "Deliver a message to a recipient."),
        doc("math.factorial", "Compute n!"),
        doc("fs__readFile", "Return the bytes of a path."),
        doc("sha256sum", "Digest of some bytes."),
    ])
    .expect("catalog builds")
}

#[test]
fn name_split_on_underscore() {
    assert_eq!(top(&catalog(), "weather"), "get_weather");
}

#[test]
fn name_split_on_dash() {
    assert_eq!(top(&catalog(), "email"), "send-email");
}

#[test]
fn name_split_on_dot() {
    assert_eq!(top(&catalog(), "factorial"), "math.factorial");
}

#[test]
fn name_split_on_double_underscore_and_camel_case() {
    let index = catalog();
    assert_eq!(top(&index, "fs"), "fs__readFile");
    assert_eq!(top(&index, "read file"), "fs__readFile");
}

#[test]
fn name_split_on_letter_digit_boundary() {
    assert_eq!(top(&catalog(), "sha"), "sha256sum");
}

#[test]
fn whole_name_is_searchable() {
    let hits = search(&catalog(), "fs__readFile");
    assert_eq!(hits.hits[0].name, "fs__readFile");
    assert!(hits.hits[0].why.iter().any(|m| m.matched == "fs__readfile"));
}

#[test]
fn parameter_names_are_found() {
    let mut d = doc("convert", "Convert a value.");
    d.parameters = json!({"type": "object", "properties": {"currency_code": {"type": "string"}}});
    let index = SearchIndex::build(vec![d, doc("other", "Something else.")]).unwrap();
    let hits = search(&index, "currency");
    assert_eq!(hits.hits[0].name, "convert");
    assert_eq!(hits.hits[0].why[0].field, Field::ParamName);
}

#[test]
fn parameter_descriptions_are_found_also_when_nested() {
    let mut d = doc("book", "Make a booking.");
    d.parameters = json!({"type": "object", "properties": {"guest": {"type": "object",
        "properties": {"diet": {"type": "string", "description": "Vegetarian or vegan"}}}}});
    let index = SearchIndex::build(vec![d, doc("other", "Something else.")]).unwrap();
    let hits = search(&index, "vegan");
    assert_eq!(names(&hits), ["book"]);
    assert_eq!(hits.hits[0].why[0].field, Field::ParamDescription);
}

#[test]
fn array_item_properties_are_found() {
    let mut d = doc("bulk", "Many at once.");
    d.parameters = json!({"type": "object", "properties": {"rows": {"type": "array",
        "items": {"type": "object", "properties": {"sku": {"type": "string"}}}}}});
    let index = SearchIndex::build(vec![d]).unwrap();
    assert_eq!(top(&index, "sku"), "bulk");
}

#[test]
fn aliases_are_found() {
    let mut d = doc("get_weather", "Current conditions.");
    d.aliases = vec!["forecastNow".into()];
    let index = SearchIndex::build(vec![d, doc("other", "Something else.")]).unwrap();
    let hits = search(&index, "forecast");
    assert_eq!(hits.hits[0].name, "get_weather");
    assert_eq!(hits.hits[0].why[0].field, Field::Alias);
}

#[test]
fn keywords_are_found() {
    let mut d = doc("x1", "Opaque.");
    d.keywords = vec!["invoice".into()];
    let index = SearchIndex::build(vec![d]).unwrap();
    assert_eq!(
        search(&index, "invoice").hits[0].why[0].field,
        Field::Keyword
    );
}

#[test]
fn stemmed_forms_match() {
    let index =
        SearchIndex::build(vec![doc("list_files", "Lists the files in a folder.")]).unwrap();
    let hits = search(&index, "listing folders");
    assert_eq!(names(&hits), ["list_files"]);
    assert!(hits.hits[0].why.iter().any(|m| m.kind == MatchKind::Stem));
}

#[test]
fn exact_matches_are_reported_as_exact() {
    let hits = search(&catalog(), "weather");
    assert_eq!(hits.hits[0].why[0].kind, MatchKind::Exact);
}

#[test]
fn small_typos_are_tolerated() {
    let index = catalog();
    assert_eq!(top(&index, "wheather"), "get_weather");
    let hits = search(&index, "factorail");
    assert_eq!(hits.hits[0].name, "math.factorial");
    assert_eq!(hits.hits[0].why[0].kind, MatchKind::Typo);
}

#[test]
fn typos_keep_the_first_letter() {
    // "weather" with its first letter wrong is not a typo match: slips at
    // the start of a word are rare, and requiring it keeps typo lookups to
    // one branch of the dictionary.
    assert!(search(&catalog(), "veather").hits.is_empty());
    assert_eq!(top(&catalog(), "weathr"), "get_weather");
}

#[test]
fn typos_are_tolerated_in_other_scripts() {
    let index = SearchIndex::build(vec![
        doc("lebenslauf", "Analysiert einen Lebenslauf für Bewerbungen."),
        doc("wetter", "Das Wetter für eine Stadt."),
    ])
    .expect("builds");
    // One character off, the wrong one being non-ASCII.
    let hits = search(&index, "bewerbüngen");
    assert_eq!(hits.hits[0].name, "lebenslauf");
    assert_eq!(hits.hits[0].why[0].kind, MatchKind::Typo);
}

#[test]
fn a_word_is_not_expanded_into_a_whole_name() {
    // "getweather" is one edit from the whole-name term "get_weather"; a
    // single word only expands to single words ("weather" here is no
    // prefix or typo of it, so nothing matches).
    assert!(search(&catalog(), "getweather").hits.is_empty());
}

#[test]
fn short_words_get_no_typo_tolerance() {
    // "fz" is one edit from "fs", but words of three characters or fewer must match exactly.
    assert!(search(&catalog(), "fz").hits.is_empty());
}

#[test]
fn prefixes_of_four_or_more_characters_match() {
    let hits = search(&catalog(), "facto");
    assert_eq!(hits.hits[0].name, "math.factorial");
    assert_eq!(hits.hits[0].why[0].kind, MatchKind::Prefix);
}

#[test]
fn exact_match_ranks_ahead_of_typo_match() {
    let index = SearchIndex::build(vec![
        doc("colour_picker", "Pick a colour."),
        doc("color_picker", "Pick a color."),
    ])
    .unwrap();
    // "colour" is in the index, so the one-edit "color" must not even
    // compete; and the other way round.
    assert_eq!(names(&search(&index, "colour")), ["colour_picker"]);
    assert_eq!(names(&search(&index, "color")), ["color_picker"]);
}

#[test]
fn typo_match_ranks_below_exact_match_of_another_word() {
    let index = SearchIndex::build(vec![
        doc("alpha", "Handles invoices."),
        doc("beta", "Handles payments."),
    ])
    .unwrap();
    // "invoice" matches alpha exactly; "paymnets" is a typo for beta.
    assert_eq!(
        names(&search(&index, "invoice paymnets")),
        ["alpha", "beta"]
    );
}

#[test]
fn name_field_outweighs_description() {
    let index = SearchIndex::build(vec![
        doc("send_invoice", "Deliver a bill to a customer."),
        doc("deliver_bill", "Send an invoice to a customer."),
    ])
    .unwrap();
    assert_eq!(top(&index, "invoice"), "send_invoice");
}

#[test]
fn description_outweighs_parameter_description() {
    let mut in_params = doc("a_tool", "Does things.");
    in_params.parameters = json!({"type": "object", "properties": {"x": {"type": "string", "description": "a refund"}}});
    let in_description = doc("b_tool", "Issue a refund.");
    let index = SearchIndex::build(vec![in_params, in_description]).unwrap();
    assert_eq!(top(&index, "refund"), "b_tool");
}

#[test]
fn ties_are_broken_by_name() {
    let index = SearchIndex::build(vec![
        doc("zeta", "Resize an image."),
        doc("alpha", "Resize an image."),
        doc("mid", "Resize an image."),
    ])
    .unwrap();
    let hits = search(&index, "resize image");
    assert_eq!(names(&hits), ["alpha", "mid", "zeta"]);
    assert_eq!(hits.hits[0].score, hits.hits[2].score);
}

#[test]
fn building_from_a_borrowed_catalog_gives_the_same_index() {
    let docs = vec![
        doc("get_weather", "Current weather for a city."),
        doc("send_email", "Send an email."),
    ];
    let borrowed = SearchIndex::build(&docs).unwrap();
    let owned = SearchIndex::build(docs).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.idx"), dir.path().join("b.idx"));
    borrowed.write(&a).unwrap();
    owned.write(&b).unwrap();
    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
}

#[test]
fn max_results_limits_the_hits() {
    let index = SearchIndex::build(
        (0..20)
            .map(|i| doc(&format!("tool_{i:02}"), "Resize an image."))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let hits = index.search(&Query::parse("image").unwrap(), 3);
    assert_eq!(names(&hits), ["tool_00", "tool_01", "tool_02"]);
    assert!(
        index
            .search(&Query::parse("image").unwrap(), 0)
            .hits
            .is_empty()
    );
}

#[test]
fn empty_query_is_an_error_not_a_crash() {
    assert_eq!(Query::parse(""), Err(QueryError::Empty));
}

#[test]
fn hundred_kilobyte_query_is_an_error_not_a_crash() {
    let q = "x".repeat(100 * 1024);
    assert!(matches!(Query::parse(&q), Err(QueryError::TooLong { .. })));
}

#[test]
fn punctuation_only_query_is_an_error_not_a_crash() {
    assert_eq!(Query::parse("?!?!"), Err(QueryError::NoSearchableWords));
}

#[test]
fn select_returns_tools_in_the_given_order() {
    let hits = search(&catalog(), "select:sha256sum,get_weather");
    assert_eq!(names(&hits), ["sha256sum", "get_weather"]);
    assert!(hits.not_found.is_empty());
}

#[test]
fn select_reports_unknown_names() {
    let hits = search(&catalog(), "select:nope,get_weather,also_nope");
    assert_eq!(names(&hits), ["get_weather"]);
    assert_eq!(hits.not_found, ["nope", "also_nope"]);
}

#[test]
fn select_is_exact_and_case_sensitive() {
    let hits = search(&catalog(), "select:Get_Weather");
    assert!(hits.hits.is_empty());
    assert_eq!(hits.not_found, ["Get_Weather"]);
}

#[test]
fn required_word_filters_hits() {
    let index = SearchIndex::build(vec![
        doc("weather_paris", "Weather in Paris."),
        doc("weather_rome", "Weather in Rome."),
    ])
    .unwrap();
    assert_eq!(names(&search(&index, "weather +rome")), ["weather_rome"]);
}

#[test]
fn every_required_word_must_match() {
    let index = SearchIndex::build(vec![
        doc("weather_paris", "Weather in Paris."),
        doc("weather_rome", "Weather in Rome."),
        doc("rome_guide", "A guide to Rome, with weather-free tips."),
        doc("rome_history", "History of Rome."),
    ])
    .unwrap();
    let results = search(&index, "+weather +rome guide");
    let found = names(&results);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.contains(&"weather_rome"));
    assert!(found.contains(&"rome_guide"));
}

#[test]
fn required_word_matches_by_stem() {
    let index =
        SearchIndex::build(vec![doc("a", "Lists files."), doc("b", "Lists folders.")]).unwrap();
    assert_eq!(names(&search(&index, "list +file")), ["a"]);
}

#[test]
fn required_word_does_not_match_by_typo() {
    let index = SearchIndex::build(vec![doc("weather", "Weather now.")]).unwrap();
    assert!(search(&index, "+wheather").hits.is_empty());
}

#[test]
fn required_word_alone_is_a_query() {
    let index = catalog();
    assert_eq!(names(&search(&index, "+factorial")), ["math.factorial"]);
}

#[test]
fn duplicate_names_are_rejected() {
    let err = SearchIndex::build(vec![doc("a", "x"), doc("b", "y"), doc("a", "z")]).unwrap_err();
    assert!(matches!(err, IndexError::DuplicateName(n) if n == "a"));
}

#[test]
fn empty_names_are_rejected() {
    assert!(matches!(
        SearchIndex::build(vec![doc("", "x")]),
        Err(IndexError::EmptyName)
    ));
}

#[test]
fn an_empty_index_finds_nothing() {
    let index = SearchIndex::build(Vec::new()).unwrap();
    assert!(index.is_empty());
    assert!(search(&index, "anything").hits.is_empty());
}

#[test]
fn get_returns_the_stored_document() {
    let mut d = doc("get_weather", "Current conditions.");
    d.parameters = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    d.aliases = vec!["weather".into()];
    let index = SearchIndex::build(vec![d.clone()]).unwrap();
    let got = index.get("get_weather").unwrap();
    assert_eq!(got.to_tool_doc().unwrap(), d);
    assert!(index.get("get_weathe").is_none());
}

#[test]
fn names_are_listed_in_name_order() {
    let index = catalog();
    let listed: Vec<&str> = index.names().collect();
    assert_eq!(
        listed,
        [
            "fs__readFile",
            "get_weather",
            "math.factorial",
            "send-email",
            "sha256sum"
        ]
    );
    assert_eq!(index.len(), 5);
}

#[test]
fn a_plain_search_ranks_as_the_explained_one_without_explaining() {
    let index = catalog();
    for query in [
        "weather city",
        "wether",
        "send +email",
        "select:get_weather,nope",
    ] {
        let q = Query::parse(query).unwrap();
        let plain = index.search(&q, 10);
        let explained = index.search_explained(&q, 10);
        assert!(plain.hits.iter().all(|h| h.why.is_empty()), "{query}");
        assert!(explained.hits.iter().all(|h| !h.why.is_empty()), "{query}");
        let without_why: Vec<(String, f32)> = explained
            .hits
            .iter()
            .map(|h| (h.name.clone(), h.score))
            .collect();
        let plain_hits: Vec<(String, f32)> = plain
            .hits
            .iter()
            .map(|h| (h.name.clone(), h.score))
            .collect();
        assert_eq!(plain_hits, without_why, "{query}");
        assert_eq!(plain.not_found, explained.not_found, "{query}");
    }
}

#[test]
fn hits_explain_each_query_word() {
    let hits = search(&catalog(), "weather city");
    let why = &hits.hits[0].why;
    assert!(
        why.iter()
            .any(|m| m.term == "weather" && m.field == Field::Name)
    );
    assert!(
        why.iter()
            .any(|m| m.term == "city" && m.field == Field::Description)
    );
}

#[test]
fn quoted_values_weigh_less_than_the_request() {
    let tools = vec![
        doc("sentiment_analysis", "Analyze the sentiment of a text."),
        doc("food_reviews", "Collect reviews of the food you love."),
    ];
    let query = "Analyze the sentiment of this review: 'I love the food'";
    let index = SearchIndex::build(tools).expect("builds");
    assert_eq!(top(&index, query), "sentiment_analysis");
    // Counting the quoted words in full, the other tool explains more of
    // the request.
    let unweighted = index.with_ranking(Ranking {
        quote_weight: 1.0,
        ..Ranking::default()
    });
    assert_eq!(top(&unweighted, query), "food_reviews");
}

/// A search touching every tool (whose selection scans the scores in tool order and clears them
/// as it goes) leaves nothing behind for the next search.
#[test]
fn a_search_after_one_touching_every_tool_scores_as_before_it() {
    let docs: Vec<ToolDoc> = (0..8)
        .map(|i| {
            let description = if i < 2 {
                "alpha beta reader"
            } else {
                "alpha writer"
            };
            doc(&format!("alpha_{i}"), description)
        })
        .collect();
    let index = SearchIndex::build(docs).expect("catalog builds");
    let before = search(&index, "beta writer");
    search(&index, "+alpha writer");
    assert_eq!(search(&index, "beta writer"), before);
}
