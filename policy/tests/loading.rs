//! What a valid policy means: defaults, paths, scripts, overrides.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toolgate_policy::glob::Glob;
use toolgate_policy::{
    CharCap, DispatchSettings, NameProfile, OnError, PluginLocation, Policy, ReductionSettings,
    SearchSettings, SessionSettings, load_file, load_str,
};

fn load(yaml: &str) -> Policy {
    match load_str(yaml, Path::new("dir/policy.yaml")) {
        Ok(policy) => policy,
        Err(error) => panic!("policy should load:\n{error}"),
    }
}

/// Writes `files` (name, content) into a fresh directory and loads `policy.yaml` from it.
fn load_in_dir(files: &[(&str, &str)]) -> (tempfile::TempDir, Policy) {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, content) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create dirs");
        }
        std::fs::write(&path, content).expect("write file");
    }
    let policy = match load_file(&dir.path().join("policy.yaml")) {
        Ok(policy) => policy,
        Err(error) => panic!("policy should load:\n{error}"),
    };
    (dir, policy)
}

#[test]
fn absent_sections_take_their_defaults() {
    let policy = load("version: 1\n");
    assert_eq!(policy.version, 1);
    assert_eq!(policy.name_profile, NameProfile::Mcp);
    assert_eq!(policy.dispatch, DispatchSettings::default());
    assert!(policy.tools.is_empty());
    assert!(policy.aliases.is_empty());
    assert!(policy.rules.is_empty());
    assert_eq!(policy.scripts, Default::default());
    assert!(policy.plugins.is_empty());
    assert_eq!(policy.reduction, None);
    assert_eq!(policy.search, None);
}

#[test]
fn the_source_is_the_file_given() {
    assert_eq!(
        load("version: 1\n").source,
        Some(PathBuf::from("dir/policy.yaml"))
    );
}

#[test]
fn absent_dispatch_keys_keep_their_defaults() {
    let policy = load("version: 1\ndispatch: {sequential: true}\n");
    assert!(policy.dispatch.sequential);
    assert_eq!(policy.dispatch.timeout, Some(Duration::from_secs(60)));
    assert_eq!(policy.dispatch.max_result_chars, CharCap::Chars(100_000));
}

#[test]
fn dispatch_keys_are_read() {
    let policy = load(
        "version: 1\nname_profile: openai\ndispatch:\n  sequential: true\n  concurrency: 3\n  \
         timeout: 1m30s\n  max_result_chars: -1\n  on_error: fail\n  stop_on_error: true\n",
    );
    assert_eq!(policy.name_profile, NameProfile::Openai);
    assert_eq!(
        policy.dispatch,
        DispatchSettings {
            sequential: true,
            concurrency: Some(3),
            timeout: Some(Duration::from_secs(90)),
            max_result_chars: CharCap::Unlimited,
            on_error: OnError::Fail,
            stop_on_error: true,
            script_timeout: Duration::from_secs(1),
        }
    );
}

#[test]
fn a_dispatch_timeout_of_none_means_no_timeout() {
    assert_eq!(
        load("version: 1\ndispatch: {timeout: none}\n")
            .dispatch
            .timeout,
        None
    );
}

#[test]
fn an_override_timeout_of_none_is_explicitly_none_and_absent_inherits() {
    let policy = load("version: 1\ntools:\n  slow: {timeout: none}\n  other: {}\n");
    assert_eq!(policy.tools[0].timeout, Some(None));
    assert_eq!(policy.tools[1].timeout, None);
}

#[test]
fn tool_overrides_keep_file_order_settings_and_positions() {
    let policy = load(
        "version: 1\ntools:\n  \"fs.*\":\n    timeout: 5s\n    max_result_chars: 20000\n    \
         sequential_group: disk\n  fs.read_file: {timeout: 10s}\n",
    );
    let patterns: Vec<&str> = policy.tools.iter().map(|t| t.pattern.as_str()).collect();
    assert_eq!(patterns, ["fs.*", "fs.read_file"]);
    let fs = &policy.tools[0];
    assert_eq!(fs.timeout, Some(Some(Duration::from_secs(5))));
    assert_eq!(fs.max_result_chars, Some(CharCap::Chars(20_000)));
    assert_eq!(fs.sequential_group.as_deref(), Some("disk"));
    let position = fs.position.as_ref().expect("a position");
    assert_eq!((position.line, position.column), (3, 3));
    assert_eq!(position.to_string(), "dir/policy.yaml:3:3");
}

#[test]
fn override_rules_are_read_without_a_tools_list() {
    let policy = load(
        "version: 1\ntools:\n  \"fs.*\":\n    rules:\n      deny:\n        - args: {path: \"*.pem\"}\n          reason: no keys\n",
    );
    let deny = &policy.tools[0].rules.deny;
    assert_eq!(deny.len(), 1);
    assert!(deny[0].tools.is_empty());
    assert_eq!(deny[0].args.get("path").map(Glob::as_str), Some("*.pem"));
    assert_eq!(deny[0].reason.as_deref(), Some("no keys"));
}

#[test]
fn patterns_come_compiled_and_match_as_the_file_says() {
    let policy = load(
        "version: 1\ntools:\n  \"fs.*\": {}\nrules:\n  deny:\n    - tools: [\"{a,b}\"]\n      \
         sessions: [\"guest-?\"]\n      args: {cmd: \"rm *\"}\n      paths: {path: \".env\"}\n\
         search:\n  searchable_tools: [\"web_*\"]\n",
    );
    assert!(policy.tools[0].pattern.is_match("fs.read_file"));
    let deny = &policy.rules.deny[0];
    assert!(deny.tools[0].is_match("b") && !deny.tools[0].is_match("c"));
    assert!(deny.sessions[0].is_match("guest-1"));
    assert!(deny.args["cmd"].is_match("rm -rf /"));
    assert!(deny.paths["path"].is_match("sub/.env"));
    let search = policy.search.expect("a search section");
    assert!(search.searchable_tools[0].is_match("web_search"));
}

#[test]
fn rules_are_read_with_their_positions() {
    let policy = load(
        "version: 1\nrules:\n  allow:\n    - tools: [echo, \"fs.*\"]\n  deny:\n    - tools: [fs.read_file]\n      args: {path: \"/etc/*\"}\n      sessions: [\"guest-*\"]\n      reason: system files are off limits\n",
    );
    assert_eq!(policy.rules.allow[0].tools, ["echo", "fs.*"]);
    let deny = &policy.rules.deny[0];
    assert_eq!(deny.tools, ["fs.read_file"]);
    assert_eq!(
        deny.args,
        BTreeMap::from([("path".to_owned(), Glob::new("/etc/*").expect("valid glob"))])
    );
    assert_eq!(deny.sessions, ["guest-*"]);
    assert_eq!(deny.reason.as_deref(), Some("system files are off limits"));
    assert_eq!(
        deny.position.as_ref().map(|p| (p.line, p.column)),
        Some((6, 7))
    );
}

#[test]
fn aliases_are_keyed_by_the_real_tool() {
    let policy = load(
        "version: 1\naliases:\n  web_search:\n    names: [search]\n    arguments:\n      query: [q, keywords]\n",
    );
    let alias = &policy.aliases["web_search"];
    assert_eq!(alias.names, ["search"]);
    assert_eq!(alias.arguments["query"], ["q", "keywords"]);
    assert_eq!(alias.position.as_ref().map(|p| p.line), Some(3));
}

#[test]
fn an_inline_block_script_starts_on_the_line_after_its_header() {
    let yaml = "version: 1\nscripts:\n  before:\n    code: |\n      let x = 1;\n      x\n";
    let before = load(yaml).scripts.before.expect("a before script");
    assert_eq!(before.code, "let x = 1;\nx\n");
    assert_eq!(before.file, PathBuf::from("dir/policy.yaml"));
    assert_eq!(before.line_offset, 5);
    // The first line of the code really is on that line of the file.
    let line = yaml
        .lines()
        .nth(before.line_offset as usize - 1)
        .unwrap_or("");
    assert_eq!(line.trim(), "let x = 1;");
}

#[test]
fn an_inline_block_script_with_a_header_comment_still_starts_on_the_next_line() {
    let yaml = "version: 1\nscripts:\n  after:\n    code: |  # audit\n      print(call.tool);\n";
    assert_eq!(load(yaml).scripts.after.expect("after").line_offset, 5);
}

#[test]
fn an_inline_block_script_that_starts_with_a_blank_line_counts_it() {
    let yaml = "version: 1\nscripts:\n  before:\n    code: |\n\n      x\n";
    let before = load(yaml).scripts.before.expect("before");
    assert_eq!(before.code, "\nx\n");
    assert_eq!(before.line_offset, 5);
}

#[test]
fn an_inline_one_line_script_starts_on_its_own_line() {
    let yaml = "version: 1\nscripts:\n\n  rewrite: { code: \"()\" }\n";
    let rewrite = load(yaml).scripts.rewrite.expect("a rewrite script");
    assert_eq!(rewrite.code, "()");
    assert_eq!(rewrite.line_offset, 4);
}

#[test]
fn a_script_file_is_read_and_resolved_against_the_policy_dir() {
    let (dir, policy) = load_in_dir(&[
        (
            "policy.yaml",
            "version: 1\nscripts:\n  unknown_tool: {file: hooks/unknown.rhai}\n",
        ),
        ("hooks/unknown.rhai", "\"no such tool\"\n"),
    ]);
    let script = policy.scripts.unknown_tool.expect("an unknown_tool script");
    assert_eq!(script.code, "\"no such tool\"\n");
    assert_eq!(script.file, dir.path().join("hooks/unknown.rhai"));
    assert_eq!(script.line_offset, 1);
}

#[test]
fn plugin_paths_resolve_against_the_policy_dir() {
    let policy = load("version: 1\nplugins:\n  - path: ../lib/libx.so\n  - path: /abs/liby.so\n");
    assert_eq!(
        policy.plugins[0].location,
        PluginLocation::Path(PathBuf::from("dir/../lib/libx.so"))
    );
    assert_eq!(
        policy.plugins[1].location,
        PluginLocation::Path(PathBuf::from("/abs/liby.so"))
    );
}

#[test]
fn a_policy_in_the_current_directory_resolves_against_dot() {
    let policy = match load_str(
        "version: 1\nplugins: [{path: libx.so}]\n",
        Path::new("p.yaml"),
    ) {
        Ok(policy) => policy,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(
        policy.plugins[0].location,
        PluginLocation::Path(PathBuf::from("./libx.so"))
    );
}

#[test]
fn a_named_plugin_gets_its_config_as_json() {
    let policy = load(
        "version: 1\nplugins:\n  - name: fs\n    config: {root: /srv, depth: 2, ro: true}\n    searchable: true\n",
    );
    let plugin = &policy.plugins[0];
    assert_eq!(plugin.location, PluginLocation::Name("fs".to_owned()));
    assert_eq!(
        plugin.config,
        serde_json::json!({"root": "/srv", "depth": 2, "ro": true})
    );
    assert!(plugin.searchable);
    assert_eq!(
        plugin.position.as_ref().map(|p| (p.line, p.column)),
        Some((3, 5))
    );
}

#[test]
fn a_plugin_without_config_gets_an_empty_object() {
    let policy = load("version: 1\nplugins: [{name: testkit}]\n");
    assert_eq!(policy.plugins[0].config, serde_json::json!({}));
    assert!(!policy.plugins[0].searchable);
}

#[test]
fn a_plugin_config_written_empty_is_handed_over_as_null() {
    let policy = load("version: 1\nplugins:\n  - name: fs\n    config:\n");
    assert_eq!(policy.plugins[0].config, serde_json::Value::Null);
}

#[test]
fn an_empty_reduction_section_turns_reduction_on_with_defaults() {
    assert_eq!(
        load("version: 1\nreduction: {}\n").reduction,
        Some(ReductionSettings::default())
    );
}

#[test]
fn reduction_keys_are_read() {
    let policy = load(
        "version: 1\nreduction:\n  store: s3://bucket/prefix\n  store_options: {region: eu-west-1, endpoint: \"http://localhost:9000\"}\n  max_result_bytes: 10\n  preview_head_chars: 2\n  preview_tail_chars: 3\n  max_context_tokens: 4\n  keep_recent_tool_rounds: 0\n  min_offload_bytes: 6\n  hide_foreign_results: true\n",
    );
    let expected = ReductionSettings {
        store: Some("s3://bucket/prefix".to_owned()),
        store_options: BTreeMap::from([
            ("endpoint".to_owned(), "http://localhost:9000".to_owned()),
            ("region".to_owned(), "eu-west-1".to_owned()),
        ]),
        max_result_bytes: 10,
        preview_head_chars: 2,
        preview_tail_chars: 3,
        max_context_tokens: 4,
        keep_recent_tool_rounds: 0,
        min_offload_bytes: 6,
        hide_foreign_results: true,
    };
    assert_eq!(policy.reduction, Some(expected));
}

#[test]
fn a_relative_file_store_resolves_against_the_policy_dir() {
    let (dir, policy) = load_in_dir(&[(
        "policy.yaml",
        "version: 1\nreduction: {store: \"file://results\"}\n",
    )]);
    let store = policy.reduction.and_then(|r| r.store).expect("a store");
    let expected = std::path::absolute(dir.path().join("results")).expect("absolute");
    assert_eq!(store, format!("file://{}", expected.display()));
}

#[test]
fn an_absolute_file_store_is_kept_as_written() {
    let policy = load("version: 1\nreduction: {store: \"file:///var/lib/toolgate\"}\n");
    assert_eq!(
        policy.reduction.and_then(|r| r.store).as_deref(),
        Some("file:///var/lib/toolgate")
    );
}

#[test]
fn an_empty_search_section_turns_search_on_with_defaults() {
    let search = load("version: 1\nsearch: {}\n").search.expect("search on");
    assert_eq!(search, SearchSettings::default());
    assert_eq!(search.default_max_results, 5);
}

#[test]
fn search_paths_resolve_against_the_policy_dir() {
    let (dir, policy) = load_in_dir(&[
        (
            "policy.yaml",
            "version: 1\nsearch:\n  catalogs: [cat/tools.jsonl]\n  index_file: tools.idx\n  searchable_tools: [\"fs.*\"]\n  keywords: {fs.read_file: [cat, open]}\n  allow_direct_calls: true\n  use_model_native: true\n  default_max_results: 7\n",
        ),
        ("cat/tools.jsonl", "{}\n"),
    ]);
    let search = policy.search.expect("search on");
    assert_eq!(search.catalogs, [dir.path().join("cat/tools.jsonl")]);
    // The index may not be built yet: it is resolved, not required.
    assert_eq!(search.index_file, Some(dir.path().join("tools.idx")));
    assert_eq!(search.searchable_tools, ["fs.*"]);
    assert_eq!(search.keywords["fs.read_file"], ["cat", "open"]);
    assert!(search.allow_direct_calls && search.use_model_native);
    assert_eq!(search.default_max_results, 7);
}

#[test]
fn quoted_yes_is_a_string_where_a_string_is_expected() {
    let policy = load("version: 1\ntools:\n  echo: {sequential_group: \"yes\"}\n");
    assert_eq!(policy.tools[0].sequential_group.as_deref(), Some("yes"));
}

#[test]
fn anchors_and_aliases_share_settings() {
    let policy = load("version: 1\ntools:\n  a: &quick {timeout: 1s}\n  b: *quick\n");
    assert_eq!(policy.tools[1].timeout, Some(Some(Duration::from_secs(1))));
}

#[test]
fn script_timeout_and_plugin_max_threads_load_with_their_defaults_when_absent() {
    let p = load(
        "version: 1\nplugins:\n  - name: a\n  - name: b\n    max_threads: 4\ndispatch: {script_timeout: 250ms}\n",
    );
    assert_eq!(p.dispatch.script_timeout, Duration::from_millis(250));
    assert_eq!(
        p.plugins[0].max_threads,
        toolgate_policy::PluginSpec::DEFAULT_MAX_THREADS
    );
    assert_eq!(p.plugins[1].max_threads, 4);
    assert_eq!(
        load("version: 1\n").dispatch.script_timeout,
        Duration::from_secs(1)
    );
}

#[test]
fn integral_floats_are_taken_as_whole_numbers() {
    let policy = load(
        "version: 1.0\ndispatch:\n  max_result_chars: 5.0\n  concurrency: 1e1\n\
         tools:\n  t: {max_result_chars: -1.0}\n\
         reduction:\n  max_result_bytes: 2.5e3\n  keep_recent_tool_rounds: 0.0\n\
         search:\n  default_max_results: 7.0\n",
    );
    assert_eq!(policy.version, 1);
    assert_eq!(policy.dispatch.max_result_chars, CharCap::Chars(5));
    assert_eq!(policy.dispatch.concurrency, Some(10));
    assert_eq!(policy.tools[0].max_result_chars, Some(CharCap::Unlimited));
    let reduction = policy.reduction.expect("reduction");
    assert_eq!(reduction.max_result_bytes, 2500);
    assert_eq!(reduction.keep_recent_tool_rounds, 0);
    assert_eq!(policy.search.expect("search").default_max_results, 7);
}

#[test]
fn the_largest_whole_number_is_taken_exactly() {
    let policy = load(
        "version: 1\ndispatch:\n  max_result_chars: 9007199254740991\nreduction:\n  max_result_bytes: 9.007199254740991e15\n",
    );
    assert_eq!(
        policy.dispatch.max_result_chars,
        CharCap::Chars(9_007_199_254_740_991)
    );
    assert_eq!(
        policy.reduction.expect("reduction").max_result_bytes,
        9_007_199_254_740_991
    );
}

#[test]
fn session_state_expires_after_a_day_by_default() {
    assert_eq!(
        load("version: 1\n").sessions,
        SessionSettings {
            ttl: Some(Duration::from_secs(24 * 3600))
        }
    );
}

#[test]
fn sessions_ttl_is_read_and_none_means_never() {
    assert_eq!(
        load("version: 1\nsessions: {ttl: 1h30m}\n").sessions.ttl,
        Some(Duration::from_secs(5400))
    );
    assert_eq!(
        load("version: 1\nsessions: {ttl: none}\n").sessions.ttl,
        None
    );
}
