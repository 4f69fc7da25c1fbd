//! Every way a policy can be wrong gives `file:line:col: message`, pointing at the mistake
//! and saying what was expected.

use std::path::Path;

use toolgate_policy::{DiagnosticKind, PolicyError, load_str};

/// Loads `yaml` as `bad.yaml`, expecting it to fail; returns the error.
fn error_of(yaml: &str) -> PolicyError {
    match load_str(yaml, Path::new("bad.yaml")) {
        Ok(policy) => panic!("expected an error, loaded {policy:#?}"),
        Err(error) => error,
    }
}

/// The error's lines, as printed.
fn lines_of(yaml: &str) -> Vec<String> {
    error_of(yaml)
        .to_string()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The single line of the error.
fn line_of(yaml: &str) -> String {
    let lines = lines_of(yaml);
    assert_eq!(lines.len(), 1, "expected one diagnostic, got {lines:#?}");
    lines[0].clone()
}

// --- YAML syntax -------------------------------------------------------------------------

#[test]
fn an_unclosed_quote_points_at_the_quote() {
    assert_eq!(
        line_of("version: 1\ndispatch:\n  timeout: \"30s\n"),
        "bad.yaml:3:12: invalid YAML: unclosed quote"
    );
}

#[test]
fn a_tab_in_indentation_is_a_syntax_error_at_the_tab() {
    let line = line_of("version: 1\ndispatch:\n\ttimeout: 30s\n");
    assert!(line.starts_with("bad.yaml:3:"), "{line}");
    assert!(line.contains("invalid YAML: tabs"), "{line}");
}

#[test]
fn bad_indentation_is_a_syntax_error_with_its_position() {
    let line = line_of("version: 1\ndispatch:\n  timeout: 1s\n   sequential: true\n");
    assert!(line.starts_with("bad.yaml:4:"), "{line}");
    assert!(line.contains("invalid YAML"), "{line}");
}

#[test]
fn syntax_errors_have_the_syntax_kind() {
    let error = error_of("a: [1, 2\n");
    assert_eq!(error.diagnostics()[0].kind, DiagnosticKind::Syntax);
}

#[test]
fn an_empty_file_asks_for_a_version() {
    assert_eq!(
        line_of(""),
        "bad.yaml:1:1: the policy file is empty; it needs at least `version: 1`"
    );
}

#[test]
fn a_second_document_is_refused() {
    let line = line_of("version: 1\n---\nversion: 1\n");
    assert!(
        line.starts_with("bad.yaml:2:1: a policy file holds a single YAML document"),
        "{line}"
    );
}

#[test]
fn a_custom_tag_is_refused() {
    let line = line_of("version: 1\nname_profile: !env PROFILE\n");
    assert!(
        line.starts_with("bad.yaml:2:15: unsupported YAML tag `!env`"),
        "{line}"
    );
}

// --- duplicate keys ----------------------------------------------------------------------

#[test]
fn a_duplicate_top_level_key_is_an_error_at_the_second_one() {
    let error = error_of("version: 1\ndispatch: {timeout: 1s}\ndispatch: {}\n");
    assert_eq!(
        error.to_string(),
        "bad.yaml:3:1: duplicate key \"dispatch\" (first defined at line 2); each key may appear \
         once per mapping"
    );
    assert_eq!(error.diagnostics()[0].kind, DiagnosticKind::DuplicateKey);
}

#[test]
fn a_duplicate_nested_key_is_an_error_at_the_second_one() {
    let line = line_of("version: 1\ndispatch:\n  timeout: 1s\n  timeout: 2s\n");
    assert!(
        line.starts_with("bad.yaml:4:3: duplicate key \"timeout\" (first defined at line 3)"),
        "{line}"
    );
}

// --- unknown keys ------------------------------------------------------------------------

#[test]
fn an_unknown_top_level_key_lists_the_known_ones_and_guesses_the_typo() {
    let error = error_of("version: 1\ndispatchh: {}\n");
    assert_eq!(
        error.to_string(),
        "bad.yaml:2:1: unknown key \"dispatchh\" (did you mean \"dispatch\"? expected one of: \
         aliases, audit, auth, circuit_breaker, clients, dispatch, limits, mcp_servers, \
         name_profile, plugins, prompts, redact, reduction, resources, retries, rules, scripts, \
         search, serve, sessions, tools, version)"
    );
    assert_eq!(
        error.diagnostics()[0].kind,
        DiagnosticKind::Schema {
            keyword: "additionalProperties".to_owned()
        }
    );
}

#[test]
fn an_unknown_nested_key_names_its_section() {
    assert_eq!(
        line_of("version: 1\nreduction:\n  max_bytes: 10\n"),
        "bad.yaml:3:3: reduction: unknown key \"max_bytes\" (expected one of: \
         hide_foreign_results, keep_recent_tool_rounds, max_context_tokens, max_result_bytes, \
         min_offload_bytes, preview_head_chars, preview_tail_chars, store, store_options)"
    );
}

#[test]
fn an_unknown_key_in_a_rule_points_at_the_key() {
    assert_eq!(
        line_of("version: 1\nrules:\n  deny:\n    - tools: [a]\n      reasn: no\n"),
        "bad.yaml:5:7: rules.deny[0]: unknown key \"reasn\" (did you mean \"reason\"? expected \
         one of: args, groups, paths, principals, prompts, reason, resources, sessions, tools)"
    );
}

#[test]
fn a_tool_override_rule_has_no_tools_key() {
    let line = line_of("version: 1\ntools:\n  echo:\n    rules: {deny: [{tools: [x]}]}\n");
    assert!(
        line.starts_with("bad.yaml:4:21: tools.echo.rules.deny[0]: unknown key \"tools\""),
        "{line}"
    );
}

// --- types, enums, limits ----------------------------------------------------------------

#[test]
fn yes_is_not_a_boolean() {
    assert_eq!(
        line_of("version: 1\ndispatch:\n  sequential: yes\n"),
        "bad.yaml:3:3: dispatch.sequential: expected true or false, found \"yes\" (YAML 1.1 \
         words like yes, no, on, off are not booleans in a policy; write true or false)"
    );
}

#[test]
fn on_is_not_a_boolean_either() {
    let line = line_of("version: 1\nreduction:\n  hide_foreign_results: on\n");
    assert!(
        line.starts_with(
            "bad.yaml:3:3: reduction.hide_foreign_results: expected true or false, found \"on\""
        ),
        "{line}"
    );
}

#[test]
fn a_wrong_type_says_what_was_expected_and_found() {
    assert_eq!(
        line_of("version: 1\nplugins: {name: testkit}\n"),
        "bad.yaml:2:1: plugins: expected a list, found a mapping"
    );
}

#[test]
fn a_bad_enum_value_lists_the_allowed_ones() {
    assert_eq!(
        line_of("version: 1\nname_profile: gemini\n"),
        "bad.yaml:2:1: name_profile: expected mcp, openai or anthropic, found \"gemini\""
    );
}

#[test]
fn an_unknown_version_is_refused() {
    assert_eq!(
        line_of("version: 2\n"),
        "bad.yaml:1:1: version: expected 1 (the only policy format version), found 2"
    );
}

#[test]
fn a_missing_version_is_reported() {
    assert_eq!(
        line_of("dispatch: {}\n"),
        "bad.yaml:1:1: missing key \"version\""
    );
}

#[test]
fn a_bad_duration_says_what_a_duration_looks_like() {
    assert_eq!(
        line_of("version: 1\ndispatch:\n  timeout: 30 seconds\n"),
        "bad.yaml:3:3: dispatch.timeout: expected a duration like 30s or 500ms (units ms, s, m, \
         h; combined like 1m30s) or none, found \"30 seconds\""
    );
}

#[test]
fn a_negative_timeout_is_refused() {
    let line = line_of("version: 1\ntools:\n  \"fs.*\":\n    timeout: -5s\n");
    assert!(
        line.starts_with("bad.yaml:4:5: tools.\"fs.*\".timeout: expected a duration like 30s"),
        "{line}"
    );
    assert!(line.ends_with("found \"-5s\""), "{line}");
}

#[test]
fn a_timeout_given_as_a_bare_number_is_refused() {
    let line = line_of("version: 1\ndispatch: {timeout: 30}\n");
    assert!(
        line.starts_with("bad.yaml:2:12: dispatch.timeout: expected a duration"),
        "{line}"
    );
    assert!(line.ends_with("found 30"), "{line}");
}

#[test]
fn duration_units_out_of_order_are_refused_at_the_key() {
    let error = error_of("version: 1\ndispatch:\n  timeout: 30s1m\n");
    assert_eq!(
        error.to_string(),
        "bad.yaml:3:3: dispatch.timeout: \"30s1m\": units must go from largest to smallest, \
         each at most once (like 1h2m3s)"
    );
    assert_eq!(error.diagnostics()[0].kind, DiagnosticKind::Duration);
}

#[test]
fn max_result_chars_below_minus_one_is_refused() {
    assert_eq!(
        line_of("version: 1\ndispatch:\n  max_result_chars: -2\n"),
        "bad.yaml:3:3: dispatch.max_result_chars: expected a whole number of characters from -1 \
         (no cap) to 9007199254740991, found -2"
    );
}

#[test]
fn a_negative_reduction_size_is_refused() {
    assert_eq!(
        line_of("version: 1\nreduction:\n  preview_tail_chars: -1\n"),
        "bad.yaml:3:3: reduction.preview_tail_chars: expected a whole number from 0 to 9007199254740991, found -1"
    );
}

#[test]
fn a_concurrency_of_zero_is_refused() {
    assert_eq!(
        line_of("version: 1\ndispatch: {concurrency: 0}\n"),
        "bad.yaml:2:12: dispatch.concurrency: expected a whole number from 1 to 9007199254740991, found 0"
    );
}

#[test]
fn a_fraction_is_not_a_whole_number() {
    assert_eq!(
        line_of("version: 1\nreduction: {max_result_bytes: 1.5}\n"),
        "bad.yaml:2:13: reduction.max_result_bytes: expected a whole number from 0 to 9007199254740991, found 1.5"
    );
}

#[test]
fn an_empty_reduction_key_suggests_the_empty_mapping() {
    assert_eq!(
        line_of("version: 1\nreduction:\n"),
        "bad.yaml:2:1: reduction: expected a mapping (write reduction: {} for every default), \
         found nothing (an empty value)"
    );
}

#[test]
fn a_policy_that_is_not_a_mapping_is_refused() {
    let line = line_of("just some text\n");
    assert!(
        line.starts_with("bad.yaml:1:1: expected a mapping of policy sections"),
        "{line}"
    );
}

#[test]
fn a_plugin_needs_a_name_or_a_path() {
    assert_eq!(
        line_of("version: 1\nplugins:\n  - config: {}\n"),
        "bad.yaml:3:5: plugins[0]: expected exactly one of name (an installed plugin) or path \
         (a library file)"
    );
}

#[test]
fn a_plugin_cannot_have_both_a_name_and_a_path() {
    assert_eq!(
        line_of("version: 1\nplugins:\n  - name: a\n    path: b.so\n"),
        "bad.yaml:3:5: plugins[0]: expected exactly one of name (an installed plugin) or path \
         (a library file)"
    );
}

#[test]
fn a_script_needs_code_or_a_file() {
    assert_eq!(
        line_of("version: 1\nscripts:\n  before: {}\n"),
        "bad.yaml:3:3: scripts.before: expected exactly one of code (inline Rhai) or file (a \
         .rhai file)"
    );
}

#[test]
fn every_schema_error_is_reported_in_file_order() {
    let lines = lines_of(
        "version: 1\n\
         dispatch:\n  sequential: no\n  timeout: soon\n\
         reduction: {max_result_bytes: -5}\n\
         typo: 1\n",
    );
    let places: Vec<&str> = lines
        .iter()
        .map(|l| l.split(": ").next().unwrap_or(""))
        .collect();
    assert_eq!(
        places,
        [
            "bad.yaml:3:3",
            "bad.yaml:4:3",
            "bad.yaml:5:13",
            "bad.yaml:6:1"
        ]
    );
}

// --- semantic checks ---------------------------------------------------------------------

#[test]
fn a_bad_glob_in_a_tool_key_is_an_error_at_the_key() {
    let error = error_of("version: 1\ntools:\n  \"fs.[\": {timeout: 1s}\n");
    assert_eq!(
        error.to_string(),
        "bad.yaml:3:3: tools.\"fs.[\": \"fs.[\" is not a valid glob: unclosed character class; \
         missing ']'"
    );
    assert_eq!(error.diagnostics()[0].kind, DiagnosticKind::Glob);
}

#[test]
fn a_bad_glob_in_a_rule_list_is_an_error_at_the_item() {
    let line = line_of("version: 1\nrules:\n  allow:\n    - sessions: [ok, \"a{\"]\n");
    assert!(
        line.starts_with(
            "bad.yaml:4:22: rules.allow[0].sessions[1]: \"a{\" is not a valid glob: unclosed alternate group"
        ),
        "{line}"
    );
}

#[test]
fn a_bad_glob_in_rule_args_is_an_error_at_the_argument() {
    let line = line_of("version: 1\nrules:\n  deny:\n    - args:\n        path: \"[\"\n");
    assert!(
        line.starts_with("bad.yaml:5:9: rules.deny[0].args.path: \"[\" is not a valid glob"),
        "{line}"
    );
}

#[test]
fn a_missing_script_file_is_an_error_at_its_file_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("p.yaml");
    let error = load_str(
        "version: 1\nscripts:\n  before:\n    file: hooks/nope.rhai\n",
        &policy,
    )
    .expect_err("missing script");
    let text = error.to_string();
    let expected_start = format!(
        "{}:4:5: scripts.before.file: cannot read script \"hooks/nope.rhai\" (looked for {}): ",
        policy.display(),
        dir.path().join("hooks/nope.rhai").display()
    );
    assert!(text.starts_with(&expected_start), "{text}");
    assert_eq!(error.diagnostics()[0].kind, DiagnosticKind::MissingFile);
}

#[test]
fn a_missing_catalog_is_an_error_at_its_item() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("p.yaml");
    let error = load_str(
        "version: 1\nsearch:\n  catalogs:\n    - gone.jsonl\n",
        &policy,
    )
    .expect_err("missing catalog");
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "{}:4:7: search.catalogs[0]: cannot read catalog \"gone.jsonl\"",
            policy.display()
        )),
        "{text}"
    );
}

#[test]
fn semantic_errors_are_all_reported() {
    let error = error_of(
        "version: 1\ntools:\n  \"[\": {}\n  \"{\": {}\nrules: {deny: [{tools: [\"a[\"]}]}\n",
    );
    let places: Vec<(u32, u32)> = error
        .diagnostics()
        .iter()
        .map(|d| d.at.map_or((0, 0), |at| (at.line, at.column)))
        .collect();
    assert_eq!(places, [(3, 3), (4, 3), (5, 25)]);
}

#[test]
fn the_rules_under_a_tool_key_with_a_bad_glob_are_still_checked() {
    let error =
        error_of("version: 1\ntools:\n  \"[\":\n    rules: {deny: [{sessions: [\"a{\"]}]}\n");
    let places: Vec<(u32, u32)> = error
        .diagnostics()
        .iter()
        .map(|d| d.at.map_or((0, 0), |at| (at.line, at.column)))
        .collect();
    assert_eq!(places, [(3, 3), (4, 32)], "{error}");
}

#[test]
fn an_unreadable_policy_file_names_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("absent.yaml");
    let error = toolgate_policy::load_file(&path).expect_err("absent file");
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "{}: cannot read the policy file: ",
            path.display()
        )),
        "{text}"
    );
    assert_eq!(error.diagnostics()[0].kind, DiagnosticKind::Io);
}

#[test]
fn a_script_timeout_of_none_is_refused_where_it_is_written() {
    let line = line_of("version: 1\ndispatch:\n  script_timeout: none\n");
    assert!(line.starts_with("bad.yaml:3:"), "{line}");
    assert!(line.contains("script_timeout"), "{line}");
}

#[test]
fn a_plugin_max_threads_of_zero_is_refused_where_it_is_written() {
    let line = line_of("version: 1\nplugins:\n  - name: a\n    max_threads: 0\n");
    assert!(line.starts_with("bad.yaml:4:"), "{line}");
    assert!(line.contains(">= 1"), "{line}");
}

// --- hostile YAML: alias bombs, huge mappings, tags, merge keys ----------------------------

/// The classic "billion laughs": nine levels of nine aliases, about 10^9 nodes when expanded.
const BILLION_LAUGHS: &str = "\
version: 1
a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
";

#[test]
fn a_billion_laughs_policy_is_refused_before_it_expands() {
    let line = line_of(BILLION_LAUGHS);
    // Anchors a to d and the aliases of b to e copy 83,020 nodes; keeping the value anchored
    // at e (66,430 more) would cross 100,000.
    assert!(
        line.starts_with(
            "bad.yaml:6:7: anchors and aliases copy too much: this anchored value copies 66430 \
             nodes"
        ),
        "{line}"
    );
    assert!(
        line.contains("at most 100000 together (83020 so far)"),
        "{line}"
    );
    assert_eq!(
        error_of(BILLION_LAUGHS).diagnostics()[0].kind,
        DiagnosticKind::Unsupported
    );
}

#[test]
fn nested_anchors_over_a_large_value_are_refused() {
    // Each of 200 nested anchors keeps a copy of the 1,000-item list inside it.
    let items = vec!["x"; 1_000].join(", ");
    let yaml = format!(
        "version: 1\nx: {}[{items}]{}\n",
        (0..200).map(|i| format!("&a{i} [")).collect::<String>(),
        "]".repeat(200)
    );
    let line = line_of(&yaml);
    assert!(
        line.contains("anchors and aliases copy too much: this anchored value copies"),
        "{line}"
    );
}

#[test]
fn aliases_within_the_expansion_budget_still_work() {
    let yaml =
        "version: 1\nrules:\n  deny:\n    - &r {tools: [a, b], reason: no}\n    - *r\n    - *r\n";
    let policy = load_str(yaml, Path::new("ok.yaml")).expect("loads");
    assert_eq!(policy.rules.deny.len(), 3);
    assert_eq!(policy.rules.deny[2].tools, ["a", "b"]);
}

/// `n` distinct keys under `search.keywords`, plus `extra` lines at the end.
fn many_keywords(n: usize, extra: &str) -> String {
    let mut yaml = String::from("version: 1\nsearch:\n  keywords:\n");
    for i in 0..n {
        yaml.push_str(&format!("    k{i}: [a]\n"));
    }
    yaml.push_str(extra);
    yaml
}

#[test]
fn a_mapping_of_100000_distinct_keys_loads() {
    let yaml = many_keywords(100_000, "");
    let policy = load_str(&yaml, Path::new("big.yaml")).expect("loads");
    assert_eq!(policy.search.expect("search").keywords.len(), 100_000);
}

#[test]
fn a_duplicate_after_100000_keys_is_found_and_names_the_first_line() {
    let yaml = many_keywords(100_000, "    k5: [b]\n");
    assert_eq!(
        line_of(&yaml),
        "bad.yaml:100004:5: duplicate key \"k5\" (first defined at line 9); each key may appear \
         once per mapping"
    );
}

#[test]
fn a_map_tag_is_refused() {
    assert_eq!(
        line_of("version: 1\ndispatch: !!map\n  concurrency: 3\n"),
        "bad.yaml:2:11: unsupported YAML tag `!!map`; policy files use no tags except !!str on a \
         scalar"
    );
}

#[test]
fn a_seq_tag_is_refused() {
    let line = line_of("version: 1\nrules:\n  deny: !!seq\n    - reason: no\n");
    assert!(
        line.starts_with("bad.yaml:3:9: unsupported YAML tag `!!seq`"),
        "{line}"
    );
}

#[test]
fn a_str_tag_on_a_scalar_is_accepted() {
    let policy = load_str(
        "version: 1\ntools:\n  t: {sequential_group: !!str 42}\n",
        Path::new("ok.yaml"),
    )
    .expect("loads");
    assert_eq!(policy.tools[0].sequential_group.as_deref(), Some("42"));
}

#[test]
fn a_merge_key_is_refused_at_the_merge_key() {
    let yaml = "version: 1\ntools:\n  a: &base {timeout: 5s}\n  b:\n    <<: *base\n    max_result_chars: 10\n";
    let line = line_of(yaml);
    assert!(
        line.starts_with("bad.yaml:5:5: merge keys (`<<`) are YAML 1.1"),
        "{line}"
    );
}

#[test]
fn a_schema_error_in_an_aliased_value_points_at_the_alias() {
    // The anchored value is fine where it is written (dispatch), wrong where it is reused.
    let yaml =
        "version: 1\ndispatch: &d\n  timeout: 5s\n  concurrency: 2\ntools:\n  \"fs.*\": *d\n";
    let line = line_of(yaml);
    assert!(
        line.starts_with("bad.yaml:6:11: tools.\"fs.*\": unknown key \"concurrency\""),
        "{line}"
    );
}

#[test]
fn a_wrong_type_through_an_alias_points_at_the_alias_not_the_key() {
    let yaml = "version: 1\ndispatch:\n  concurrency: &n 3\ntools:\n  \"fs.*\": *n\n";
    let line = line_of(yaml);
    assert!(
        line.starts_with("bad.yaml:5:11: tools.\"fs.*\": expected a mapping"),
        "{line}"
    );
}

#[test]
fn a_bad_duration_through_an_alias_points_at_the_alias() {
    let yaml = "version: 1\ndispatch:\n  timeout: &t 30s1m\ntools:\n  \"fs.*\":\n    timeout: *t\n";
    let lines = lines_of(yaml);
    assert!(
        lines[0].starts_with("bad.yaml:3:3: dispatch.timeout"),
        "{lines:#?}"
    );
    assert!(
        lines[1].starts_with("bad.yaml:6:14: tools.\"fs.*\".timeout"),
        "{lines:#?}"
    );
}

// --- booleans and numbers ----------------------------------------------------------------

#[test]
fn capitalised_true_is_not_a_boolean() {
    assert_eq!(
        line_of("version: 1\ndispatch:\n  sequential: True\n"),
        "bad.yaml:3:3: dispatch.sequential: expected true or false, found \"True\" (booleans are \
         written in lower case: true or false)"
    );
}

#[test]
fn a_fractional_limit_is_refused() {
    let line = line_of("version: 1\ndispatch:\n  max_result_chars: 5.5\n");
    assert!(
        line.starts_with("bad.yaml:3:3: dispatch.max_result_chars: expected a whole number"),
        "{line}"
    );
}

#[test]
fn an_integer_above_the_largest_whole_number_is_refused() {
    for (key, section) in [
        ("max_result_chars", "dispatch"),
        ("concurrency", "dispatch"),
        ("max_result_bytes", "reduction"),
        ("default_max_results", "search"),
    ] {
        for number in ["99999999999999999999", "9007199254740992", "1e300"] {
            let yaml = format!("version: 1\n{section}:\n  {key}: {number}\n");
            let line = line_of(&yaml);
            assert!(
                line.starts_with(&format!(
                    "bad.yaml:3:3: {section}.{key}: expected a whole number"
                )),
                "{line}"
            );
            assert!(line.contains("to 9007199254740991"), "{line}");
        }
    }
}

#[test]
fn an_unsupported_store_scheme_is_an_error_at_its_line() {
    let line = line_of("version: 1\nreduction:\n  store: ftp://x\n");
    assert!(
        line.starts_with("bad.yaml:3:3: reduction.store: expected a store URL starting with"),
        "{line}"
    );
}

#[test]
fn a_duration_number_of_more_than_12_digits_is_refused() {
    let error = error_of("version: 1\ndispatch:\n  timeout: 99999999999999999999h\n");
    assert_eq!(
        error.to_string(),
        "bad.yaml:3:3: dispatch.timeout: \"99999999999999999999h\" is too large a duration (at \
         most 12 digits per unit, and at most 213503982334d in all)"
    );
    assert_eq!(error.diagnostics()[0].kind, DiagnosticKind::Duration);
    assert!(toolgate_policy::parse_duration("1000000000000ms").is_err());
    assert!(toolgate_policy::parse_duration("999999999999h59m59s999ms").is_ok());
}
