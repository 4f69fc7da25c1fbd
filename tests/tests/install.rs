//! toolgate installed anywhere (issue 31): the program carries its first-party plugins, so a copy
//! of it alone (what `cargo install`, the pip wheel or a release archive gives) runs the default
//! policy in an empty folder; a library of the same name still wins; a built-in cannot be
//! pinned; `isolation: process` serves a built-in from the program itself; `--version` tells the
//! commit, the plugin ABI and the features; and a policy's relative plugin paths mean the policy
//! file's folder wherever the host starts toolgate, never `/` by accident.

mod anywhere;

use std::path::{Path, PathBuf};
use std::process::Command;

use anywhere::{assert_runs_the_readme_turn, folder_with_turn, program_in, serve_listing};
use toolgate_e2e::{Toolgate, repo_path, toolgate_exe, toolgate_in};

/// The built program copied alone into a fresh folder: no plugin library beside it or in its
/// parent folder, as after `cargo install`.
fn lone_toolgate() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin/");
    let program = bin.join("toolgate");
    std::fs::copy(toolgate_exe(), &program).expect("the program copies");
    (dir, program)
}

#[test]
fn a_lone_program_runs_the_readme_turn_with_its_built_in_fs_plugin() {
    let (_keep, program) = lone_toolgate();
    let work = folder_with_turn();
    let run = assert_runs_the_readme_turn(&program, work.path(), &["-v"]);
    assert!(
        run.stderr.contains("built-in plugin used"),
        "the log says the built-in is used: {}",
        run.stderr
    );
}

#[test]
fn a_library_on_the_plugin_path_wins_over_the_built_in_and_the_log_says_so() {
    let (_keep, program) = lone_toolgate();
    let work = folder_with_turn();
    let libraries = toolgate_exe()
        .parent()
        .expect("the build folder")
        .to_path_buf();
    let run = program_in(
        &program,
        work.path(),
        &["-v", "tools"],
        &[("TOOLGATE_PLUGIN_PATH", libraries.as_os_str())],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("fs_list_dir"), "{run:?}");
    assert!(
        run.stderr
            .contains("plugin library used instead of the built-in plugin of the same name")
            && run.stderr.contains("libtoolgate_plugin_fs"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_pin_on_a_built_in_plugin_is_refused_and_says_why() {
    let (_keep, program) = lone_toolgate();
    let work = tempfile::tempdir().expect("a folder");
    std::fs::write(
        work.path().join("pinned.yaml"),
        format!(
            "version: 1\nplugins:\n  - name: fs\n    sha256: \"{}\"\n    config: {{root: .}}\n",
            "0".repeat(64)
        ),
    )
    .expect("policy written");
    let run = program_in(&program, work.path(), &["validate", "pinned.yaml"], &[]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.contains(
            "plugin fs is built into this toolgate program, and a built-in plugin cannot be pinned"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_built_in_plugin_runs_in_a_worker_process_under_isolation_process() {
    let (_keep, program) = lone_toolgate();
    let work = tempfile::tempdir().expect("a folder");
    std::fs::write(work.path().join("note.txt"), "from the worker\n").expect("note");
    std::fs::write(
        work.path().join("isolated.yaml"),
        "version: 1\nplugins:\n  - name: fs\n    isolation: process\n    grants: {fs_read: [.]}\n    config: {root: .}\n",
    )
    .expect("policy written");
    let run = program_in(
        &program,
        work.path(),
        &[
            "call",
            "--policy",
            "isolated.yaml",
            "fs.read_file",
            r#"{"path": "note.txt"}"#,
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("from the worker"), "{run:?}");
}

#[test]
fn version_tells_the_commit_the_plugin_abi_the_features_and_the_built_ins() {
    let run = Toolgate::new(&["--version"]).run();
    run.assert_code(0);
    let text = &run.stdout;
    assert!(
        text.starts_with(&format!("toolgate {}\n", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(repo_path("."))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match commit {
        // Built from this checkout: the commit of the build (HEAD may have moved since).
        Some(_) => assert!(
            text.lines().any(|l| l
                .strip_prefix("commit: ")
                .is_some_and(|c| c.len() == 12 && c.chars().all(|c| c.is_ascii_hexdigit()))),
            "{text}"
        ),
        None => assert!(text.contains("commit: unknown"), "{text}"),
    }
    assert!(text.contains("\nplugin ABI: 1 "), "{text}");
    assert!(
        text.contains("\nfeatures: builtin-plugins, ") && text.contains("s3, semantic"),
        "{text}"
    );
    assert!(
        text.contains("\nbuilt-in plugins: fs, http, sqlite"),
        "{text}"
    );
}

#[test]
fn validate_warns_about_a_plugin_built_for_the_older_abi_table() {
    let build = toolgate_exe().parent().expect("build folder").to_path_buf();
    let library = build.join(toolgate_plugin_api_file("toolgate_test_abi_v1"));
    assert!(
        library.is_file(),
        "{} is not built: run `cargo build --workspace`",
        library.display()
    );
    let work = tempfile::tempdir().expect("a folder");
    std::fs::write(
        work.path().join("old.yaml"),
        format!("version: 1\nplugins:\n  - path: {}\n", library.display()),
    )
    .expect("policy written");
    let run = toolgate_in(work.path(), &["validate", "old.yaml"], "");
    run.assert_code(0);
    assert!(
        run.stderr.contains("was built for an older plugin ABI"),
        "{}",
        run.stderr
    );
    // A plugin of today's SDK gets no such warning.
    let run = toolgate_in(
        work.path(),
        &[
            "validate",
            repo_path("policies/testkit.yaml").to_str().unwrap(),
        ],
        "",
    );
    run.assert_code(0);
    assert!(!run.stderr.contains("older plugin ABI"), "{}", run.stderr);
}

fn toolgate_plugin_api_file(lib: &str) -> String {
    format!(
        "{}{lib}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

#[test]
fn serve_started_in_the_root_folder_lists_the_shipped_policys_folder_not_the_filesystem() {
    let policy = repo_path("policies/examples/agent.yaml");
    let listing = serve_listing(
        &toolgate_exe(),
        Path::new("/"),
        &["--policy", policy.to_str().unwrap()],
    );
    assert!(listing.contains("agent.yaml"), "{listing}");
    for system in ["etc/", "proc/", "usr/"] {
        assert!(!listing.contains(system), "{system} listed:\n{listing}");
    }
}

#[test]
fn a_relative_root_that_would_reach_the_filesystem_root_is_refused() {
    // The built-in default policy has no file: its `root: "."` is the working directory, here
    // `/`, which a policy must write as `/` to mean it.
    let run = toolgate_in(Path::new("/"), &["validate"], "");
    run.assert_code(3);
    assert!(
        run.stderr
            .contains("`root: .` resolves to / (the whole filesystem) from the policy's folder /"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_grant_that_would_reach_the_filesystem_root_by_a_relative_path_is_refused() {
    let work = tempfile::tempdir().expect("a folder");
    let depth = work.path().components().count();
    let up = vec![".."; depth].join("/");
    std::fs::write(
        work.path().join("grants.yaml"),
        format!(
            "version: 1\nplugins:\n  - name: fs\n    grants: {{fs_read: [\"{up}\"]}}\n    config: {{root: .}}\n"
        ),
    )
    .expect("policy written");
    let run = toolgate_in(work.path(), &["validate", "grants.yaml"], "");
    run.assert_code(3);
    assert!(
        run.stderr.contains("resolves to / (the whole filesystem)"),
        "{}",
        run.stderr
    );
}
