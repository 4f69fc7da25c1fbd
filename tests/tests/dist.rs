//! The release archive (issue 31, item 4): `scripts/dist.sh` packs the program, the plugin
//! libraries, the policies, the schemas, the manual pages and completions, the README and the
//! licences into `toolgate-<version>-<target>.tar.gz` with a SHA-256 file. Unpacked in an empty
//! folder, the program runs the README's main command and `toolgate serve` from there.
//!
//! The test packs the build under test (`--no-build`: the workspace's dev build, so the CI
//! builds nothing more); a release archive is `bash scripts/dist.sh`.

mod anywhere;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anywhere::{assert_runs_the_readme_turn, build_dir, run_within, serve_listing};
use toolgate_e2e::repo_path;

/// Packs the build under test into `out`; returns the archive's path.
fn pack(out: &Path) -> std::path::PathBuf {
    let (_, dev) = build_dir();
    let mut command = Command::new("bash");
    command
        .arg(repo_path("scripts/dist.sh"))
        .args(["--profile", if dev { "dev" } else { "release" }])
        .arg("--no-build")
        .arg("--out")
        .arg(out);
    let run = run_within(&mut command, Duration::from_secs(300));
    assert_eq!(run.code, 0, "scripts/dist.sh failed: {run:?}");
    std::path::PathBuf::from(run.stdout.trim())
}

#[test]
fn the_archive_unpacked_in_an_empty_folder_runs_the_readme_turn_and_serve() {
    let out = tempfile::tempdir().expect("an output folder");
    let archive = pack(out.path());
    let name = archive
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a file name")
        .to_string();
    let triple = String::from_utf8(
        Command::new("rustc")
            .arg("-vV")
            .output()
            .expect("rustc runs")
            .stdout,
    )
    .expect("UTF-8")
    .lines()
    .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
    .expect("a host triple");
    assert_eq!(
        name,
        format!("toolgate-{}-{triple}.tar.gz", env!("CARGO_PKG_VERSION"))
    );

    // The SHA-256 file checks the archive.
    let mut check = Command::new("sha256sum");
    check
        .arg("-c")
        .arg(format!("{name}.sha256"))
        .current_dir(out.path());
    let checked = run_within(&mut check, Duration::from_secs(60));
    assert_eq!(checked.code, 0, "{checked:?}");

    let empty = tempfile::tempdir().expect("an empty folder");
    let mut untar = Command::new("tar");
    untar.arg("-xzf").arg(&archive).current_dir(empty.path());
    let untarred = run_within(&mut untar, Duration::from_secs(60));
    assert_eq!(untarred.code, 0, "{untarred:?}");
    let root = empty.path().join(name.trim_end_matches(".tar.gz"));
    for file in [
        "toolgate",
        "plugins/libtoolgate_plugin_fs.so",
        "plugins/libtoolgate_plugin_http.so",
        "plugins/libtoolgate_plugin_sqlite.so",
        "policies/default.yaml",
        "policies/examples/agent.yaml",
        "schemas/policy.schema.json",
        "examples/turn.json",
        "man/man1/toolgate.1",
        "man/man1/toolgate-serve.1",
        "completions/toolgate.bash",
        "completions/_toolgate",
        "completions/toolgate.fish",
        "README.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
    ] {
        assert!(root.join(file).is_file(), "{file} is not in the archive");
    }

    // The README's main command, from the unpacked folder: the program alone, its fs built in.
    let program = root.join("toolgate");
    std::fs::copy(root.join("examples/turn.json"), root.join("turn.json")).expect("copy");
    let run = assert_runs_the_readme_turn(&program, &root, &[]);
    assert!(run.stdout.contains("README.md"), "{}", run.stdout);

    // serve, as an MCP host starts it, with the archive's agent policy.
    let listing = serve_listing(
        &program,
        &root,
        &["--policy", "policies/examples/agent.yaml"],
    );
    assert!(listing.contains("agent.yaml"), "{listing}");
}
