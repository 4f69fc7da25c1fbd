//! SPEC "Tool search" (S1-S6) through the engine.

mod common;

use common::*;
use serde_json::{Value, json};
use toolgate::{Engine, Policy};
use toolgate_policy::SearchSettings;

fn catalog_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("catalog.jsonl");
    let lines = [
        json!({"name": "get_weather", "description": "Get the current weather for a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}}}),
        json!({"name": "sendEmailMessage", "description": "Send an email to a recipient.", "parameters": {"type": "object", "properties": {"to": {"type": "string"}}}}),
        json!({"name": "stock.quote", "description": "Latest price of a stock ticker.", "parameters": {"type": "object", "properties": {"ticker": {"type": "string"}}}}),
    ];
    std::fs::write(
        &path,
        lines
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    path
}

fn engine(dir: &std::path::Path, f: impl FnOnce(&mut SearchSettings)) -> Engine {
    let mut s = SearchSettings {
        catalogs: vec![catalog_file(dir)],
        default_max_results: 5,
        ..Default::default()
    };
    f(&mut s);
    Engine::builder(Policy {
        search: Some(s),
        ..Default::default()
    })
    .tool(echo("echo"))
    .tool(show_args("translate_text"))
    .build()
    .unwrap()
}

fn names(engine: &Engine, session: &toolgate::Session) -> Vec<String> {
    let mut n: Vec<String> = engine
        .visible_tools(session)
        .into_iter()
        .map(|t| t.name)
        .collect();
    n.sort();
    n
}

fn found(o: &toolgate::Outcome) -> Vec<String> {
    let v: Value =
        serde_json::from_str(&o.content.text()).unwrap_or_else(|_| panic!("{}", o.content.text()));
    v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn s1_the_model_first_sees_ordinary_tools_and_tool_search_with_a_reminder() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |_| {});
    let s = engine.session(Some("s")).unwrap();
    assert_eq!(
        names(&engine, &s),
        ["echo", "tool_search", "translate_text"]
    );
    let search = engine
        .visible_tools(&s)
        .into_iter()
        .find(|t| t.name == "tool_search")
        .unwrap();
    assert!(
        search
            .description
            .contains("get_weather, sendEmailMessage, stock.quote"),
        "{}",
        search.description
    );
}

#[tokio::test]
async fn s2_tool_search_returns_matches_best_first_with_name_and_description() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |_| {});
    let s = engine.session(Some("s")).unwrap();
    let o = engine
        .call(
            &s,
            &call(
                "1",
                "tool_search",
                json!({"query": "what is the weather in Paris"}),
            ),
        )
        .await;
    assert!(!o.is_error(), "{:?}", o.error);
    assert_eq!(found(&o)[0], "get_weather");
    let v: Value = serde_json::from_str(&o.content.text()).unwrap();
    assert_eq!(
        v["tools"][0]["description"],
        "Get the current weather for a city."
    );
    assert!(v["tools"][0].get("why").is_none(), "{v}");
}

#[tokio::test]
async fn s2_tool_search_says_why_each_tool_matched_when_the_policy_asks() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |s| s.explain = true);
    let s = engine.session(Some("s")).unwrap();
    let o = engine
        .call(
            &s,
            &call(
                "1",
                "tool_search",
                json!({"query": "what is the weather in Paris"}),
            ),
        )
        .await;
    assert!(!o.is_error(), "{:?}", o.error);
    let v: Value = serde_json::from_str(&o.content.text()).unwrap();
    let why = v["tools"][0]["why"].as_array().unwrap();
    assert!(
        why.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.starts_with("weather ~ weather in name"))),
        "{v}"
    );
}

#[tokio::test]
async fn s2_select_picks_tools_by_exact_name_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |_| {});
    let s = engine.session(Some("s")).unwrap();
    let o = engine
        .call(
            &s,
            &call(
                "1",
                "tool_search",
                json!({"query": "select:stock.quote,get_weather,nope"}),
            ),
        )
        .await;
    assert_eq!(found(&o), ["stock.quote", "get_weather"]);
    let v: Value = serde_json::from_str(&o.content.text()).unwrap();
    assert_eq!(v["not_found"], json!(["nope"]));
}

#[tokio::test]
async fn s2_max_results_limits_and_plus_words_must_match() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |_| {});
    let s = engine.session(Some("s")).unwrap();
    let o = engine
        .call(
            &s,
            &call(
                "1",
                "tool_search",
                json!({"query": "send weather stock email", "max_results": 1}),
            ),
        )
        .await;
    assert_eq!(found(&o).len(), 1);
    let o = engine
        .call(
            &s,
            &call("2", "tool_search", json!({"query": "get +email"})),
        )
        .await;
    assert_eq!(found(&o), ["sendEmailMessage"]);
}

#[tokio::test]
async fn s3_found_tools_stay_visible_for_the_rest_of_the_session_only() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |_| {});
    let s = engine.session(Some("a")).unwrap();
    engine
        .call(
            &s,
            &call("1", "tool_search", json!({"query": "select:get_weather"})),
        )
        .await;
    assert!(names(&engine, &s).contains(&"get_weather".to_string()));
    let again = engine.session(Some("a")).unwrap();
    assert!(
        names(&engine, &again).contains(&"get_weather".to_string()),
        "state lives in the session"
    );
    let other = engine.session(Some("b")).unwrap();
    assert!(!names(&engine, &other).contains(&"get_weather".to_string()));
}

#[tokio::test]
async fn s4_a_catalog_tool_not_found_yet_cannot_be_called() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |_| {});
    let s = engine.session(Some("s")).unwrap();
    let o = engine
        .call(&s, &call("1", "get_weather", json!({"city": "Oslo"})))
        .await;
    assert_eq!(o.error_kind(), Some("denied"));
    assert!(
        o.content.text().contains("call tool_search first"),
        "{}",
        o.content.text()
    );
    engine
        .call(
            &s,
            &call("2", "tool_search", json!({"query": "select:get_weather"})),
        )
        .await;
    let o = engine
        .call(&s, &call("3", "get_weather", json!({"city": "Oslo"})))
        .await;
    assert_eq!(
        o.error_kind(),
        Some("not_implemented"),
        "found, so it runs (a catalog-only entry): {:?}",
        o.error
    );
}

#[tokio::test]
async fn s4_the_policy_can_allow_direct_calls() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |s| s.allow_direct_calls = true);
    let s = engine.session(None).unwrap();
    let o = engine.call(&s, &call("1", "get_weather", json!({}))).await;
    assert_eq!(o.error_kind(), Some("not_implemented"));
}

#[tokio::test]
async fn s5_ordinary_tools_are_always_visible_and_searchable_natives_are_gated() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |s| {
        s.searchable_tools = vec![glob("translate_*")]
    });
    let s = engine.session(None).unwrap();
    assert_eq!(names(&engine, &s), ["echo", "tool_search"]);
    let o = engine
        .call(&s, &call("1", "tool_search", json!({"query": "translate"})))
        .await;
    assert_eq!(found(&o), ["translate_text"]);
    let o = engine
        .call(&s, &call("2", "translate_text", json!({"path": "p"})))
        .await;
    assert!(
        !o.is_error(),
        "found tools run under the same guard: {:?}",
        o.error
    );
}

#[tokio::test]
async fn s5_use_model_native_hands_the_catalog_to_the_provider() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |s| s.use_model_native = true);
    let s = engine.session(None).unwrap();
    assert_eq!(names(&engine, &s), ["echo", "translate_text"]);
    let mut deferred: Vec<String> = engine
        .deferred_tools()
        .into_iter()
        .map(|t| t.name)
        .collect();
    deferred.sort();
    assert_eq!(deferred, ["get_weather", "sendEmailMessage", "stock.quote"]);
}

#[tokio::test]
async fn s6_camel_case_names_and_parameter_words_are_found_and_typos_tolerated() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |_| {});
    let s = engine.session(None).unwrap();
    let o = engine
        .call(
            &s,
            &call("1", "tool_search", json!({"query": "email message"})),
        )
        .await;
    assert_eq!(found(&o)[0], "sendEmailMessage");
    let o = engine
        .call(&s, &call("2", "tool_search", json!({"query": "ticker"})))
        .await;
    assert_eq!(found(&o)[0], "stock.quote");
    let o = engine
        .call(&s, &call("3", "tool_search", json!({"query": "wether"})))
        .await;
    assert_eq!(found(&o)[0], "get_weather");
}

#[tokio::test]
async fn s6_bad_queries_are_error_results_never_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |_| {});
    let s = engine.session(None).unwrap();
    for args in [
        json!({"query": ""}),
        json!({"query": "   "}),
        json!({"query": "?!.,"}),
        json!({"query": "x".repeat(100_000)}),
        json!({"query": "select:"}),
        json!({"query": "select:bad name"}),
        json!({}),
        json!({"query": 5}),
        json!({"query": "a", "max_results": 0}),
    ] {
        let o = engine
            .call(&s, &call("1", "tool_search", args.clone()))
            .await;
        assert_eq!(
            o.error_kind(),
            Some("invalid_arguments"),
            "{args}: {:?}",
            o.content.text().chars().take(200).collect::<String>()
        );
    }
}

#[tokio::test]
async fn d5_tool_search_runs_under_the_same_guard() {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = Policy {
        search: Some(SearchSettings {
            catalogs: vec![catalog_file(dir.path())],
            ..Default::default()
        }),
        ..Default::default()
    };
    policy.scripts.before = Some(script(
        r#"if tool == "tool_search" { "no searching today" } else { () }"#,
    ));
    let engine = Engine::builder(policy).build().unwrap();
    let o = one(&engine, "tool_search", json!({"query": "weather"})).await;
    assert_eq!(o.error_kind(), Some("denied"));
}

#[tokio::test]
async fn n6_search_results_select_and_the_reminder_use_model_facing_names() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder(Policy {
        name_profile: toolgate_policy::NameProfile::Openai,
        search: Some(SearchSettings {
            catalogs: vec![catalog_file(dir.path())],
            searchable_tools: vec![glob("text.*")],
            default_max_results: 5,
            ..Default::default()
        }),
        ..Default::default()
    })
    .tool(show_args("text.translate"))
    .build()
    .unwrap();
    let s = engine.session(Some("names")).unwrap();
    let reminder = engine
        .visible_tools(&s)
        .into_iter()
        .find(|t| t.name == "tool_search")
        .unwrap()
        .description;
    assert!(reminder.contains("stock_quote"), "{reminder}");
    assert!(!reminder.contains("stock.quote"), "{reminder}");

    let o = engine
        .call(&s, &call("1", "text_translate", json!({"path": "a"})))
        .await;
    assert_eq!(o.error_kind(), Some("denied"));
    assert!(
        o.content.text().contains("select:text_translate"),
        "{}",
        o.content.text()
    );

    let o = engine
        .call(
            &s,
            &call(
                "2",
                "tool_search",
                json!({"query": "select:text_translate,stock_quote"}),
            ),
        )
        .await;
    assert_eq!(found(&o), ["text_translate", "stock_quote"]);
    assert!(names(&engine, &s).contains(&"text_translate".to_string()));
    let o = engine
        .call(&s, &call("3", "text_translate", json!({"path": "a"})))
        .await;
    assert!(!o.is_error(), "{}", o.content.text());
}

#[test]
fn a_catalog_that_is_a_fifo_fails_the_build_at_once_instead_of_hanging() {
    // A policy built in code skips the loader's checks: the engine's own read refuses it.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("tools.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let policy = Policy {
            search: Some(SearchSettings {
                catalogs: vec![fifo],
                ..SearchSettings::default()
            }),
            ..Policy::default()
        };
        let _ = tx.send(Engine::builder(policy).build().map(|_| ()));
    });
    let error = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the build finishes within 10 s")
        .unwrap_err();
    // The cause is the error's source: the whole chain says what the file is.
    let text = toolgate::error::Chain(&error).to_string();
    assert!(
        text.contains("named pipe (FIFO), not a regular file"),
        "{text}"
    );
}

#[tokio::test]
async fn search_index_is_the_index_tool_search_searches() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), |_| {});
    let index = engine
        .search_index()
        .expect("a search section gives an index");
    let mut names: Vec<&str> = index.names().collect();
    names.sort_unstable();
    assert_eq!(names, ["get_weather", "sendEmailMessage", "stock.quote"]);
    let query = toolgate_search::Query::parse("ticker").unwrap();
    let hits = index.search(&query, 5);
    let s = engine.session(None).unwrap();
    let o = engine
        .call(&s, &call("1", "tool_search", json!({"query": "ticker"})))
        .await;
    assert_eq!(found(&o)[0], hits.hits[0].name);
}

#[test]
fn search_index_is_none_under_use_model_native_and_without_a_search_section() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        engine(dir.path(), |s| s.use_model_native = true)
            .search_index()
            .is_none()
    );
    let engine = Engine::builder(Policy::default())
        .tool(echo("echo"))
        .build()
        .unwrap();
    assert!(engine.search_index().is_none());
}

/// A policy searching the catalog of `lines` (JSON objects, one per line), with the native
/// tool `echo` and the alias `mail` of it.
fn catalog_engine(dir: &std::path::Path, lines: &[Value]) -> Engine {
    let path = dir.join("data.jsonl");
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n")).unwrap();
    let mut policy = Policy {
        search: Some(SearchSettings {
            catalogs: vec![path],
            default_max_results: 5,
            ..Default::default()
        }),
        ..Default::default()
    };
    policy.aliases.insert(
        "echo".into(),
        toolgate_policy::AliasSpec {
            names: vec!["mail".into()],
            ..Default::default()
        },
    );
    Engine::builder(policy).tool(echo("echo")).build().unwrap()
}

/// The catalog entries the build left out, each as (tool, reason).
fn left_out(engine: &Engine) -> Vec<(String, String)> {
    engine
        .registry()
        .left_out()
        .iter()
        .map(|n| {
            assert!(n.catalog, "{n}");
            assert!(n.source.starts_with("catalog "), "{n}");
            (n.tool.clone(), n.reason.clone())
        })
        .collect()
}

#[tokio::test]
async fn s7_a_catalog_entry_named_like_a_built_in_is_left_out_and_the_rest_searched() {
    let dir = tempfile::tempdir().unwrap();
    // BFCL's catalog has a tool called tool_search.
    let engine = catalog_engine(
        dir.path(),
        &[
            json!({"name": "tool_search", "description": "Search a tool registry for tools."}),
            json!({"name": "get_weather", "description": "Get the current weather for a city."}),
        ],
    );
    let out = left_out(&engine);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].0, "tool_search");
    assert!(
        out[0]
            .1
            .contains("reserved for the built-in tool while search is on"),
        "{out:?}"
    );
    let index = engine.search_index().unwrap();
    let names: Vec<&str> = index.names().collect();
    assert_eq!(names, ["get_weather"]);
    // `tool_search` is the built-in, and finds the rest of the catalog.
    let s = engine.session(None).unwrap();
    let o = engine
        .call(&s, &call("1", "tool_search", json!({"query": "weather"})))
        .await;
    assert_eq!(found(&o), ["get_weather"]);
}

#[test]
fn s7_a_catalog_entry_with_a_bad_or_repeated_name_costs_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let engine = catalog_engine(
        dir.path(),
        &[
            json!({"name": "get weather", "description": "A space is not allowed (N1)."}),
            json!({"name": "echo", "description": "The native tool's name (N2)."}),
            json!({"name": "mail", "description": "An alias of the policy (N4)."}),
            json!({"name": "send_email", "description": "Send an email."}),
            json!({"name": "send_email", "description": "The same name again: the first stays."}),
            json!({"name": "read_file", "description": "Read a file."}),
        ],
    );
    let out = left_out(&engine);
    let tools: Vec<&str> = out.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        tools,
        ["get weather", "echo", "mail", "send_email"],
        "{out:?}"
    );
    assert!(out[0].1.contains("not allowed"), "{out:?}");
    assert!(out[1].1.contains("a native tool"), "{out:?}");
    assert!(out[2].1.contains("alias"), "{out:?}");
    assert!(out[3].1.contains("data.jsonl"), "{out:?}");
    let index = engine.search_index().unwrap();
    let names: Vec<&str> = index.names().collect();
    assert_eq!(names, ["read_file", "send_email"]);
    assert_eq!(
        index.get("send_email").unwrap().description,
        "Send an email."
    );
}
