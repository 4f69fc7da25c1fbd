//! `toolgate search` and `toolgate index build`: the tool search index from the command line,
//! over the public datasets' catalogs (S2, S6), a prebuilt index file, or a policy's catalog.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgate_e2e::{Run, Toolgate, datasets_dir, repo_path, testkit_policy, toolgate};

fn bfcl_catalog() -> String {
    datasets_dir()
        .join("bfcl/catalog.jsonl")
        .display()
        .to_string()
}

fn search_catalog(args: &[&str]) -> Run {
    let catalog = bfcl_catalog();
    let mut all = vec!["search", "--catalog", catalog.as_str()];
    all.extend_from_slice(args);
    toolgate(&all)
}

fn hit_names(run: &Run) -> Vec<String> {
    run.json()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap().to_string())
        .collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn s2_the_bfcl_question_about_a_triangle_finds_calculate_triangle_area_first() {
    let run = search_catalog(&[
        "--json",
        "Find the area of a triangle with a base of 10 units and height of 5 units.",
    ]);
    run.assert_code(0);
    assert_eq!(hit_names(&run)[0], "calculate_triangle_area");
}

#[test]
fn s2_area_of_a_triangle_finds_calculate_triangle_area() {
    let run = search_catalog(&["area of a triangle"]);
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains(". calculate_triangle_area  (score ")),
        "{}",
        run.stdout
    );
    // Each hit: a numbered line with its name and score, then its description; why it matched
    // only with --explain.
    assert!(lines[0].starts_with("1. "), "{}", run.stdout);
    assert!(lines[1].starts_with("   "), "{}", run.stdout);
    assert!(lines[2].starts_with("2. "), "{}", run.stdout);
    assert!(!run.stdout.contains("why: "), "{}", run.stdout);
}

#[test]
fn search_explain_says_why_each_hit_matched() {
    let run = search_catalog(&["--explain", "area of a triangle"]);
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("1. "), "{}", run.stdout);
    assert!(lines[1].starts_with("   "), "{}", run.stdout);
    assert!(
        lines[2].starts_with("   why: ") && lines[2].contains("triangle"),
        "{}",
        run.stdout
    );
}

#[test]
fn search_json_gives_each_hit_its_name_score_description_and_why() {
    let run = search_catalog(&["--json", "calculate triangle area"]);
    run.assert_code(0);
    let out = run.json();
    assert_eq!(out["query"], "calculate triangle area");
    let hits = out["results"].as_array().unwrap();
    assert_eq!(hits.len(), 5, "--top-k defaults to 5");
    let first = &hits[0];
    assert_eq!(first["name"], "calculate_triangle_area");
    assert!(first["score"].as_f64().unwrap() > 0.0);
    assert_eq!(
        first["description"],
        "Calculate the area of a triangle given its base and height."
    );
    let why = first["why"].as_array().unwrap();
    assert!(
        why.iter()
            .any(|m| m["field"] == "name" && m["term"] == "area"),
        "{why:?}"
    );
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "best first: {scores:?}"
    );
}

#[test]
fn search_top_k_sets_how_many_tools_are_returned() {
    let run = search_catalog(&["--json", "--top-k", "2", "weather forecast"]);
    run.assert_code(0);
    assert_eq!(hit_names(&run).len(), 2);
    search_catalog(&["--top-k", "0", "weather"]).assert_code(2);
}

#[test]
fn s2_select_picks_tools_by_exact_name_in_order_and_names_the_missing_ones() {
    let run = search_catalog(&[
        "--json",
        "select:math.factorial,no_such_tool,calculate_triangle_area",
    ]);
    run.assert_code(0);
    assert_eq!(
        hit_names(&run),
        ["math.factorial", "calculate_triangle_area"]
    );
    assert_eq!(run.json()["not_found"], serde_json::json!(["no_such_tool"]));
}

#[test]
fn search_queries_prints_one_json_line_per_query_with_its_id_and_names_best_first() {
    let dir = tempfile::tempdir().unwrap();
    let queries: String = std::fs::read_to_string(datasets_dir().join("bfcl/queries.jsonl"))
        .unwrap()
        .lines()
        .take(20)
        .map(|l| format!("{l}\n"))
        .collect();
    let file = write(dir.path(), "queries.jsonl", queries.as_bytes());
    let run = search_catalog(&["--top-k", "3", "--queries", file.to_str().unwrap()]);
    run.assert_code(0);
    let lines = run.json_lines();
    assert_eq!(lines.len(), 20);
    for (out, input) in lines.iter().zip(queries.lines()) {
        let input: Value = serde_json::from_str(input).unwrap();
        assert_eq!(out["id"], input["id"], "in input order");
        let results = out["results"].as_array().unwrap();
        assert!((1..=3).contains(&results.len()), "{out}");
        assert!(results.iter().all(Value::is_string), "{out}");
        assert_eq!(
            out.as_object().unwrap().len(),
            2,
            "only id and results: {out}"
        );
    }
    assert_eq!(lines[0]["results"][0], "calculate_triangle_area");
}

#[test]
fn search_queries_from_standard_input() {
    let catalog = bfcl_catalog();
    let run = Toolgate::new(&["search", "--catalog", &catalog, "--queries", "-"])
        .stdin(r#"{"id": "q", "query": "factorial of a number"}"#)
        .run();
    run.assert_code(0);
    assert_eq!(run.json_lines()[0]["id"], "q");
}

#[test]
fn s6_bad_queries_are_refused_with_a_clear_error_and_exit_4() {
    let huge = "weather ".repeat(100 * 1024 / 8);
    let cases: [(&str, &str); 6] = [
        ("", "empty"),
        ("   ", "empty"),
        (&huge, "bytes long"),
        ("?! ... ;;", "no searchable words"),
        ("select:bad name!", "not a valid tool name"),
        ("select:", "select: needs at least one tool name"),
    ];
    for (query, why) in cases {
        let run = search_catalog(&[query]);
        run.assert_code(4).assert_no_panic();
        assert!(
            run.stderr.starts_with("error: bad query: ") && run.stderr.contains(why),
            "{:?}: {}",
            &query[..query.len().min(20)],
            run.stderr
        );
        assert!(run.stdout.is_empty());
    }
}

#[test]
fn search_queries_with_bad_lines_prints_an_error_line_for_each_and_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "queries.jsonl",
        concat!(
            "{\"id\": 1, \"query\": \"factorial of a number\"}\n",
            "\n",
            "{\"id\": 2, \"query\": \"\"}\n",
            "{\"id\": 3, \"query\": \"select:not valid!\"}\n",
            "{\"id\": 4}\n",
            "not json\n",
            "{\"id\": 5, \"query\": \"triangle area\"}\n",
        )
        .as_bytes(),
    );
    let run = search_catalog(&["--queries", file.to_str().unwrap()]);
    run.assert_code(4).assert_no_panic();
    let lines = run.json_lines();
    assert_eq!(lines.len(), 6, "one line per non-blank input line");
    assert!(lines[0]["results"].is_array());
    for (line, id, input_line) in [(1, 2, 3), (2, 3, 4), (3, 4, 5)] {
        assert_eq!(lines[line]["id"], id);
        assert_eq!(lines[line]["line"], input_line);
        assert!(lines[line]["error"].is_string(), "{}", lines[line]);
    }
    assert!(lines[1]["error"].as_str().unwrap().contains("empty"));
    assert!(lines[4]["id"].is_null() && lines[4]["error"].as_str().unwrap().contains("JSON"));
    assert!(
        lines[5]["results"].is_array(),
        "the lines after a bad one still run"
    );
    assert!(run.stderr.contains("4 of 6 queries"), "{}", run.stderr);
}

#[test]
fn a_query_argument_that_is_not_utf8_is_an_input_error() {
    let catalog = bfcl_catalog();
    let args: [&OsStr; 4] = [
        OsStr::new("search"),
        OsStr::new("--catalog"),
        OsStr::new(&catalog),
        OsStr::from_bytes(b"area of a \xff triangle"),
    ];
    let run = Toolgate::new(&args).run();
    run.assert_code(4).assert_no_panic();
    assert!(run.stderr.contains("not valid UTF-8"), "{}", run.stderr);
}

#[test]
fn a_queries_file_that_is_not_utf8_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "queries.jsonl",
        b"{\"id\": 1, \"query\": \"area \xff\"}\n\xff\xfe\n",
    );
    let run = search_catalog(&["--queries", file.to_str().unwrap()]);
    run.assert_code(4).assert_no_panic();
    let lines = run.json_lines();
    assert_eq!(lines.len(), 2);
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["line"], i + 1);
        assert!(
            line["error"].as_str().unwrap().contains("not valid UTF-8"),
            "{line}"
        );
    }
}

#[test]
fn a_catalog_that_is_not_utf8_or_not_json_lines_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let binary = write(dir.path(), "binary.jsonl", b"{\"name\": \"a\xff\"}\n");
    let broken = write(
        dir.path(),
        "broken.jsonl",
        b"{\"name\": \"a\"}\n{\"description\": \"no name\"}\n",
    );
    for (file, why) in [
        (&binary, "binary.jsonl:1:12: not UTF-8"),
        (&broken, "broken.jsonl:2:"),
    ] {
        let run = toolgate(&["search", "--catalog", file.to_str().unwrap(), "anything"]);
        run.assert_code(4).assert_no_panic();
        assert!(run.stderr.contains(why), "{}", run.stderr);
    }
    let missing = toolgate(&["search", "--catalog", "/no/such/catalog.jsonl", "x"]);
    missing.assert_code(4);
    assert!(
        missing.stderr.contains("/no/such/catalog.jsonl"),
        "{}",
        missing.stderr
    );
}

#[test]
fn search_needs_exactly_one_catalog_and_one_query_source() {
    toolgate(&["search", "weather"]).assert_code(2);
    let catalog = bfcl_catalog();
    toolgate(&["search", "--catalog", &catalog]).assert_code(2);
    toolgate(&[
        "search",
        "--catalog",
        &catalog,
        "--index",
        "x.idx",
        "weather",
    ])
    .assert_code(2);
    toolgate(&[
        "search",
        "--catalog",
        &catalog,
        "--queries",
        "q.jsonl",
        "weather",
    ])
    .assert_code(2);
}

#[test]
fn search_a_policy_searches_the_engines_catalog_with_its_keywords() {
    let policy = repo_path("policies/examples/search.yaml");
    // `repeat` is only a keyword the policy gives echo (search.keywords).
    let run = toolgate(&[
        "search",
        "--policy",
        policy.to_str().unwrap(),
        "--json",
        "repeat",
    ]);
    run.assert_code(0);
    assert_eq!(hit_names(&run)[0], "echo");
}

/// BFCL's catalog has a tool called `tool_search`, the name of the built-in that searches it.
#[test]
fn s7_search_a_policy_whose_catalog_has_a_tool_named_tool_search() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "bfcl.yaml",
        format!(
            "version: 1\nsearch:\n  catalogs: [\"{}\"]\n",
            bfcl_catalog()
        )
        .as_bytes(),
    );
    let policy = policy.to_str().unwrap();
    let run = toolgate(&[
        "search",
        "--policy",
        policy,
        "--json",
        "select:calculate_triangle_area,tool_search",
    ]);
    run.assert_code(0);
    assert!(
        run.stderr.contains("tool tool_search is left out")
            && run
                .stderr
                .contains("reserved for the built-in tool while search is on"),
        "{}",
        run.stderr
    );
    // The rest of the catalog is there; the entry is not.
    assert_eq!(hit_names(&run), ["calculate_triangle_area"]);
    assert_eq!(run.json()["not_found"], serde_json::json!(["tool_search"]));
    let run = toolgate(&["search", "--policy", policy, "area of a triangle"]);
    run.assert_code(0);
    assert!(run.stdout.starts_with("1. "), "{}", run.stdout);
    // `toolgate validate` warns of it; the policy is fine.
    let run = toolgate(&["validate", policy]);
    run.assert_code(0);
    assert!(
        run.stderr.contains("tool tool_search is left out"),
        "{}",
        run.stderr
    );
    // Without a policy there is no built-in: the catalog keeps it.
    let run = search_catalog(&["--json", "select:tool_search"]);
    run.assert_code(0);
    assert_eq!(hit_names(&run), ["tool_search"]);
}

#[test]
fn search_a_policy_without_a_search_section_is_a_policy_error() {
    let policy = testkit_policy();
    let run = toolgate(&["search", "--policy", &policy, "weather"]);
    run.assert_code(3);
    assert!(run.stderr.contains("no search: section"), "{}", run.stderr);
}

#[test]
fn index_build_then_search_index_finds_what_the_catalog_finds() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("bfcl.idx");
    let catalog = bfcl_catalog();
    let build = toolgate(&[
        "index",
        "build",
        "--catalog",
        &catalog,
        "-o",
        index.to_str().unwrap(),
    ]);
    build.assert_code(0);
    assert!(build.stdout.contains("2723 tools"), "{}", build.stdout);
    assert!(
        build.stdout.contains(&format!(
            "({} bytes)",
            std::fs::metadata(&index).unwrap().len()
        )),
        "{}",
        build.stdout
    );
    assert!(
        build.stdout.contains(" ms"),
        "the build time: {}",
        build.stdout
    );

    for query in [
        "area of a triangle",
        "select:math.factorial",
        "send an emial",
    ] {
        let from_index = toolgate(&[
            "search",
            "--index",
            index.to_str().unwrap(),
            "--json",
            query,
        ]);
        from_index.assert_code(0);
        let from_catalog = search_catalog(&["--json", query]);
        assert_eq!(from_index.json(), from_catalog.json(), "{query}");
    }
}

#[test]
fn index_build_from_several_catalogs_indexes_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.jsonl",
        br#"{"name": "alpha", "description": "First tool."}"#,
    );
    let b = write(
        dir.path(),
        "b.jsonl",
        br#"{"name": "beta", "description": "Second tool."}"#,
    );
    let index = dir.path().join("ab.idx");
    let run = toolgate(&[
        "index",
        "build",
        "--catalog",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        index.to_str().unwrap(),
    ]);
    run.assert_code(0);
    assert!(run.stdout.contains("2 tools"), "{}", run.stdout);

    let dup = toolgate(&[
        "index",
        "build",
        "--catalog",
        a.to_str().unwrap(),
        a.to_str().unwrap(),
        "-o",
        index.to_str().unwrap(),
    ]);
    dup.assert_code(4);
    assert!(
        dup.stderr.contains("duplicate tool name 'alpha'"),
        "{}",
        dup.stderr
    );
}

#[test]
fn index_build_from_a_policy_writes_its_index_file_and_the_engine_opens_it() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = repo_path("policies/examples/catalog.jsonl");
    let policy = write(
        dir.path(),
        "p.yaml",
        format!(
            "version: 1\nsearch:\n  catalogs: [\"{}\"]\n  index_file: tools.idx\n",
            catalog.display()
        )
        .as_bytes(),
    );
    let run = toolgate(&["index", "build", "--policy", policy.to_str().unwrap()]);
    run.assert_code(0);
    let index = dir.path().join("tools.idx");
    assert!(index.is_file(), "{}", run.stdout);
    assert!(
        run.stdout
            .starts_with(&format!("wrote {}", index.display())),
        "{}",
        run.stdout
    );

    let name = std::fs::read_to_string(&catalog).unwrap();
    let first: Value = serde_json::from_str(name.lines().next().unwrap()).unwrap();
    let first = first["name"].as_str().unwrap();
    let select = format!("select:{first}");
    let from_policy = toolgate(&[
        "search",
        "--policy",
        policy.to_str().unwrap(),
        "--json",
        &select,
    ]);
    from_policy.assert_code(0);
    assert_eq!(hit_names(&from_policy), [first]);
    let from_index = toolgate(&[
        "search",
        "--index",
        index.to_str().unwrap(),
        "--json",
        &select,
    ]);
    assert_eq!(hit_names(&from_index), [first]);
    // The engine takes the prebuilt file: no warning that it does not match the catalog.
    let validate = toolgate(&["validate", policy.to_str().unwrap()]);
    validate.assert_code(0);
    assert!(
        !validate.stderr.contains("does not match"),
        "{}",
        validate.stderr
    );
}

#[test]
fn index_build_from_a_policy_without_index_file_needs_an_output() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = repo_path("policies/examples/catalog.jsonl");
    let policy = write(
        dir.path(),
        "p.yaml",
        format!(
            "version: 1\nsearch:\n  catalogs: [\"{}\"]\n",
            catalog.display()
        )
        .as_bytes(),
    );
    let run = toolgate(&["index", "build", "--policy", policy.to_str().unwrap()]);
    run.assert_code(2);
    assert!(run.stderr.contains("-o INDEX"), "{}", run.stderr);
}

#[test]
fn search_an_index_file_that_is_not_an_index_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let not_index = write(
        dir.path(),
        "x.idx",
        b"this is not an index, just some text......",
    );
    for path in [not_index.to_str().unwrap(), "/no/such/file.idx"] {
        let run = toolgate(&["search", "--index", path, "weather"]);
        run.assert_code(4).assert_no_panic();
        assert!(run.stderr.contains(path), "{}", run.stderr);
    }
}

/// Builds a small index file with `toolgate index build`, lets `tamper` change its bytes, then
/// writes them back with the checksum recomputed as the format describes (XXH3, 64 bits, of
/// header bytes 0..188 followed by everything from byte 204 (format v7)), as someone crafting a
/// file would.
fn tampered_index(dir: &Path, tamper: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let catalog = dir.join("small.jsonl");
    std::fs::write(
        &catalog,
        [
            r#"{"name": "get_weather", "description": "Current weather for a city."}"#,
            r#"{"name": "send_email", "description": "Send an email message."}"#,
            r#"{"name": "read_file", "description": "Read a file from disk."}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let index = dir.join("small.idx");
    toolgate(&[
        "index",
        "build",
        "--catalog",
        catalog.to_str().unwrap(),
        "-o",
        index.to_str().unwrap(),
    ])
    .assert_code(0);
    let mut bytes = std::fs::read(&index).unwrap();
    tamper(&mut bytes);
    let mut sum = xxhash_rust::xxh3::Xxh3::new();
    sum.update(&bytes[..188]);
    sum.update(&bytes[204..]);
    let sum = sum.digest();
    bytes[188..196].copy_from_slice(&sum.to_le_bytes());
    std::fs::write(&index, &bytes).unwrap();
    index
}

/// Section `i` of an index file (0: the term dictionary, 1: the postings), as its header says.
fn index_section(bytes: &[u8], i: usize) -> std::ops::Range<usize> {
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let (offset, len) = (word(92 + 16 * i), word(92 + 16 * i + 8));
    offset..offset + len
}

#[test]
fn a_crafted_index_with_a_valid_checksum_is_an_input_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    // The term dictionary's root node address (before its 4-byte checksum) far past its end.
    let root = tampered_index(dir.path(), |bytes| {
        let at = index_section(bytes, 0).end - 12;
        bytes[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    });
    let run = toolgate(&["search", "--index", root.to_str().unwrap(), "weather"]);
    run.assert_code(4).assert_no_panic();
    assert!(
        run.stderr.contains("is not a usable toolgate search index")
            && run.stderr.contains("term dictionary"),
        "{}",
        run.stderr
    );

    // The first postings list naming a tool the catalog does not have (format 5: a one-byte
    // count, a block header of gap width, impact width and base impact, then the packed gaps;
    // 32-bit gaps without impact bits make the first gap the first tool number).
    let postings = tampered_index(dir.path(), |bytes| {
        let at = index_section(bytes, 1).start;
        bytes[at + 1] = 32;
        bytes[at + 2] = 0;
        bytes[at + 5..at + 9].copy_from_slice(&77_777u32.to_le_bytes());
    });
    let run = toolgate(&["search", "--index", postings.to_str().unwrap(), "email"]);
    run.assert_code(4).assert_no_panic();
    assert!(run.stderr.contains("past the 3 tools"), "{}", run.stderr);
}

/// A tiny static model (model2vec's layout: `model.safetensors` and a WordPiece
/// `tokenizer.json`) in which "forecast" and "weather" have the same vector and "email",
/// "send" and "message" others; and a policy searching two tools with it.
fn semantic_policy(dir: &Path) -> PathBuf {
    let model = dir.join("model");
    std::fs::create_dir(&model).unwrap();
    let words = [
        "[UNK]", "weather", "forecast", "email", "city", "send", "message", "current",
    ];
    let rows: [[f32; 4]; 8] = [
        [0.0, 0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 0.0],
        [0.0, 0.2, 0.0, 1.0],
        [0.0, 0.2, 0.0, 1.0],
        [0.0, 0.0, 0.5, 0.5],
    ];
    let vocab: serde_json::Map<String, Value> = words
        .iter()
        .enumerate()
        .map(|(i, w)| (w.to_string(), Value::from(i)))
        .collect();
    let tokenizer = serde_json::json!({
        "normalizer": {"type": "BertNormalizer", "lowercase": true},
        "model": {"type": "WordPiece", "vocab": vocab}
    });
    write(&model, "tokenizer.json", tokenizer.to_string().as_bytes());
    let data: Vec<u8> = rows
        .iter()
        .flatten()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let header = serde_json::json!({"embeddings": {"dtype": "F32", "shape": [8, 4],
        "data_offsets": [0, data.len()]}})
    .to_string();
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&data);
    write(&model, "model.safetensors", &file);
    write(
        dir,
        "catalog.jsonl",
        concat!(
            r#"{"name": "get_weather", "description": "Current weather for a city."}"#,
            "\n",
            r#"{"name": "send_email", "description": "Send an email message."}"#,
        )
        .as_bytes(),
    );
    write(
        dir,
        "policy.yaml",
        b"version: 1\nsearch:\n  catalogs: [catalog.jsonl]\n  embeddings:\n    model: model\n",
    )
}

#[test]
fn search_explain_shows_each_hits_lexical_and_dense_rank_and_fused_score() {
    let dir = tempfile::tempdir().unwrap();
    let policy = semantic_policy(dir.path());
    let policy = policy.to_str().unwrap();
    let run = toolgate(&[
        "search",
        "--policy",
        policy,
        "--explain",
        "weather forecast",
    ]);
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("1. get_weather  (score "),
        "{}",
        run.stdout
    );
    assert!(lines[2].starts_with("   why: "), "{}", run.stdout);
    assert!(
        lines[3].starts_with("   ranks: lexical #1 (")
            && lines[3].contains(", dense #1 (cosine ")
            && lines[3].contains(") -> fused "),
        "{}",
        run.stdout
    );

    let run = toolgate(&["search", "--policy", policy, "--json", "weather forecast"]);
    run.assert_code(0);
    let first = &run.json()["results"][0];
    assert_eq!(first["name"], "get_weather");
    assert_eq!(first["ranks"]["lexical"]["rank"], 1, "{first}");
    assert_eq!(first["ranks"]["dense"]["rank"], 1, "{first}");
    assert!(
        first["ranks"]["dense"]["score"].as_f64().unwrap() > 0.0,
        "{first}"
    );

    // A word only the model knows: no lexical rank, a dense one.
    let run = toolgate(&["search", "--policy", policy, "--json", "forecast"]);
    run.assert_code(0);
    let first = &run.json()["results"][0];
    assert_eq!(first["name"], "get_weather");
    assert_eq!(first["ranks"]["lexical"], Value::Null, "{first}");
    assert_eq!(first["ranks"]["dense"]["rank"], 1, "{first}");
}

#[test]
fn search_dense_only_ranks_by_meaning_alone() {
    let dir = tempfile::tempdir().unwrap();
    let policy = semantic_policy(dir.path());
    let policy = policy.to_str().unwrap();
    for (query, first) in [
        ("forecast", "get_weather"),
        ("send a message", "send_email"),
    ] {
        let run = toolgate(&[
            "search",
            "--policy",
            policy,
            "--dense-only",
            "--json",
            query,
        ]);
        run.assert_code(0);
        let out = run.json();
        assert_eq!(out["results"][0]["name"], first, "{out}");
        // Scored by cosine, and not explained by words.
        let cosine = out["results"][0]["score"].as_f64().unwrap();
        assert!(cosine > 0.0 && cosine <= 1.0001, "{out}");
        assert_eq!(out["results"][0]["why"], serde_json::json!([]), "{out}");
    }
}

#[test]
fn search_dense_only_without_a_semantic_stage_is_a_usage_error() {
    let run = search_catalog(&["--dense-only", "weather"]);
    run.assert_code(2);
    assert!(
        run.stderr.contains("--dense-only needs the semantic stage"),
        "{}",
        run.stderr
    );
}
