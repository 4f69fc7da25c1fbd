//! The `serve:` section: how `toolgate serve` answers MCP clients.

use std::path::Path;

use toolgate_policy::{Policy, PolicyError, ServeSettings, load_str};

fn load(yaml: &str) -> Result<Policy, PolicyError> {
    load_str(yaml, Path::new("bad.yaml"))
}

#[test]
fn the_page_size_is_100_unless_the_policy_sets_it() {
    let default = load("version: 1\n").expect("loads");
    assert_eq!(default.serve.page_size.get(), 100);
    assert_eq!(default.serve, ServeSettings::default());
    let set = load("version: 1\nserve: {page_size: 25}\n").expect("loads");
    assert_eq!(set.serve.page_size.get(), 25);
}

#[test]
fn a_page_size_below_one_is_refused_at_its_position() {
    for bad in ["0", "-3", "1.5", "lots"] {
        let error = load(&format!("version: 1\nserve:\n  page_size: {bad}\n"))
            .expect_err("a page size below one")
            .to_string();
        assert!(
            error.starts_with("bad.yaml:3:3: serve.page_size: expected a whole number from 1"),
            "{bad}: {error}"
        );
    }
}

#[test]
fn an_unknown_key_under_serve_is_refused() {
    let error = load("version: 1\nserve: {page_sise: 5}\n")
        .expect_err("a typo")
        .to_string();
    assert!(error.contains("unknown key \"page_sise\""), "{error}");
    assert!(error.contains("did you mean \"page_size\""), "{error}");
}

#[test]
fn the_console_is_off_unless_the_policy_turns_it_on() {
    assert!(!load("version: 1\n").expect("loads").serve.console);
    let on = load("version: 1\nserve: {console: true}\n").expect("loads");
    assert!(on.serve.console);
    let error = load("version: 1\nserve:\n  console: yes please\n")
        .expect_err("not a boolean")
        .to_string();
    assert!(error.starts_with("bad.yaml:3:3: serve.console:"), "{error}");
}
