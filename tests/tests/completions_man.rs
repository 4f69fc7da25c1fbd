//! `toolgate completions SHELL` and `toolgate man`: generated from the command line's
//! definition, so they know every command.

use std::io::Write;
use std::process::{Command, Stdio};

use toolgate_e2e::toolgate;

/// Every command a user can type after `toolgate`.
const COMMANDS: [&str; 12] = [
    "validate",
    "tools",
    "call",
    "run",
    "explain",
    "prepare",
    "results",
    "search",
    "index",
    "completions",
    "man",
    "plugin",
];

#[test]
fn completions_for_bash_zsh_and_fish_name_every_command() {
    for shell in ["bash", "zsh", "fish"] {
        let run = toolgate(&["completions", shell]);
        run.assert_code(0);
        assert!(run.stderr.is_empty(), "{shell}: {}", run.stderr);
        for command in COMMANDS {
            assert!(
                run.stdout.contains(command),
                "the {shell} script does not mention {command}:\n{}",
                run.stdout
            );
        }
    }
}

#[test]
fn the_bash_completion_script_is_valid_bash() {
    let run = toolgate(&["completions", "bash"]);
    run.assert_code(0);
    let mut bash = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash starts");
    bash.stdin
        .take()
        .expect("stdin is piped")
        .write_all(run.stdout.as_bytes())
        .expect("bash reads the script");
    let checked = bash.wait_with_output().expect("bash -n ends");
    assert!(
        checked.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&checked.stderr)
    );
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let run = toolgate(&["completions", "cmd.exe"]);
    run.assert_code(2);
    assert!(run.stdout.is_empty());
}

#[test]
fn the_man_page_is_roff_with_a_title_and_every_command() {
    let run = toolgate(&["man"]);
    run.assert_code(0);
    let title = run
        .stdout
        .lines()
        .find(|l| l.starts_with(".TH "))
        .unwrap_or_else(|| panic!("no .TH line:\n{}", run.stdout));
    assert!(title.starts_with(".TH toolgate 1 "), "{title}");
    for section in ["NAME", "SYNOPSIS", "OPTIONS", "SUBCOMMANDS"] {
        assert!(
            run.stdout.contains(&format!(".SH {section}\n")),
            "no {section} section:\n{}",
            run.stdout
        );
    }
    for section in ["EXAMPLES", "EXIT STATUS"] {
        assert!(
            run.stdout.contains(&format!(".SH \"{section}\"\n")),
            "no {section} section:\n{}",
            run.stdout
        );
    }
    for command in COMMANDS {
        // roff writes a hyphen as `\-`.
        assert!(
            run.stdout.contains(&format!("toolgate\\-{command}(1)")),
            "the page does not list {command}:\n{}",
            run.stdout
        );
    }
}

#[test]
fn a_command_has_its_own_man_page() {
    let run = toolgate(&["man", "results", "list"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("\n.TH toolgate-results-list 1 "),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("\\-\\-older\\-than"), "{}", run.stdout);
}

#[test]
fn the_man_page_of_an_unknown_command_is_a_usage_error() {
    let run = toolgate(&["man", "results", "nope"]);
    run.assert_code(2);
    assert_eq!(
        run.stderr,
        "error: there is no command `toolgate results nope`\n"
    );
    assert!(run.stdout.is_empty());
}

#[test]
fn man_dir_writes_one_page_per_command() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let run = toolgate(&["man", "--dir", dir.path().to_str().expect("a UTF-8 path")]);
    run.assert_code(0);
    for page in [
        "toolgate.1",
        "toolgate-results-list.1",
        "toolgate-index-build.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join(page))
            .unwrap_or_else(|e| panic!("{page}: {e}; {run:#?}"));
        assert!(text.contains(".TH "), "{page}: {text}");
    }
}
