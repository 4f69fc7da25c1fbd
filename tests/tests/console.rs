//! The live console of `toolgate serve --http` (`serve.console: true`), used as a person
//! would: Debian's Chromium, headless, driven by Selenium while an agent (the official MCP
//! Python SDK) makes calls. Scenarios in tests/mcp/console_browser.py; docs/console.md.
//!
//! Chromium and chromedriver come from `scripts/chromium.sh` (scripts/test.sh runs it);
//! without them these tests fail and say so. The screenshots go to
//! `target/console-screenshots/`; `TOOLGATE_BLESS=1` also writes the ones the docs show to
//! docs/img/.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use toolgate_e2e::{repo_path, repo_root, test_tools_path, toolgate_exe, venv_python};

/// Where the screenshots go: beside the build, out of the source tree.
fn screenshots() -> PathBuf {
    toolgate_exe()
        .parent()
        .and_then(|p| p.parent())
        .expect("the program is in target/<profile>")
        .join("console-screenshots")
}

/// Fails, naming the script that installs them, when Chromium or chromedriver is missing.
fn chromium_installed() {
    let found = |name: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let overridden = |var: &str| std::env::var_os(var).is_some();
    assert!(
        (found("chromium") || overridden("TOOLGATE_CHROMIUM"))
            && (found("chromedriver") || overridden("TOOLGATE_CHROMEDRIVER")),
        "Chromium or chromedriver is not installed: run `bash scripts/chromium.sh` \
         (scripts/test.sh does) first"
    );
}

/// Runs one scenario of tests/mcp/console_browser.py and fails with its output when it does
/// not hold. Answers what it printed.
fn scenario(name: &str) -> String {
    chromium_installed();
    let script = repo_path("tests/mcp/console_browser.py");
    let mut child = Command::new(venv_python())
        .arg(&script)
        .arg("--toolgate")
        .arg(toolgate_exe())
        .arg("--screenshots")
        .arg(screenshots())
        .arg(name)
        .current_dir(repo_root())
        // The upstream MCP server of the scenarios' policy is found on PATH.
        .env("PATH", test_tools_path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the venv's python starts");
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let limit = Duration::from_secs(240);
    let status = toolgate_e2e::wait_within(child, limit)
        .unwrap_or_else(|| panic!("scenario {name} did not end within {limit:?}"));
    let (stdout, stderr) = (
        stdout.join().expect("stdout drained"),
        stderr.join().expect("stderr drained"),
    );
    assert!(
        status.success() && stdout.trim_end().ends_with("ok"),
        "scenario {name} failed ({status}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    stdout
}

#[test]
fn v1_calls_appear_within_a_second_with_the_rule_that_denied_them() {
    let said = scenario("calls_appear_live");
    // The figure the docs quote: from sending a call to its finished row on the page.
    eprintln!("{}", said.lines().next().unwrap_or(""));
}

#[test]
fn v1_the_filters_narrow_the_list_by_tool_session_principal_and_outcome() {
    scenario("the_filters_narrow_the_list");
}

#[test]
fn v2_explain_shows_where_each_setting_comes_from() {
    scenario("explain_shows_the_source_of_each_setting");
}

#[test]
fn v2_the_tools_view_shows_upstream_health_and_search_says_why_a_tool_ranked() {
    scenario("tools_upstreams_and_search");
}

#[test]
fn v3_every_view_of_data_asks_for_the_token_and_streams_are_bounded() {
    scenario("the_api_asks_for_the_token_and_bounds_streams");
}

#[test]
fn v3_the_console_is_off_unless_the_policy_turns_it_on() {
    scenario("the_console_is_off_by_default");
}

#[test]
fn v4_a_slow_stream_loses_rows_and_is_told_while_calls_and_other_streams_go_on() {
    let said = scenario("a_slow_stream_loses_rows_and_is_told");
    // The figures: how long the calls took, how many rows the slow stream got and lost.
    eprintln!("{}", said.lines().next().unwrap_or(""));
}
