//! Build script of the `toolgate` program:
//!
//! - the git commit it is built from (`TOOLGATE_GIT_COMMIT`, shown by `toolgate --version`),
//!   when it is built from a checkout with `git` on PATH; outside one (a crates.io package, a
//!   source archive) it says nothing and the build goes on;
//! - with the built-in plugins, the link flag that lets their crates sit side by side: each
//!   plugin crate defines the `toolgate_plugin_entry` symbol its shared library exports, unused
//!   in this program (the built-ins are found by their `TOOLGATE_BUILTIN` statics instead).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=TOOLGATE_GIT_COMMIT");
    if let Some(commit) = std::env::var("TOOLGATE_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
    {
        println!("cargo:rustc-env=TOOLGATE_GIT_COMMIT={}", commit.trim());
    }

    let builtins = std::env::var_os("CARGO_FEATURE_BUILTIN_PLUGINS").is_some()
        || std::env::var_os("CARGO_FEATURE_BUILTIN_TESTKIT").is_some();
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let elf = !matches!(target_os.as_str(), "macos" | "ios" | "windows");
    if builtins && elf {
        println!("cargo:rustc-link-arg=-Wl,--allow-multiple-definition");
    }
}

/// `git rev-parse --short=12 HEAD`, and the files whose change means a new commit; `None`
/// outside a git checkout or without git.
fn git_commit() -> Option<String> {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(&manifest_dir)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    // A new commit or a checkout moves HEAD or the branch it points to.
    let mut watched = vec![git(&[
        "rev-parse",
        "--path-format=absolute",
        "--git-path",
        "HEAD",
    ])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            &branch,
        ]));
    }
    for path in watched.into_iter().flatten() {
        // A missing file would rerun this script on every build (a packed branch).
        if std::path::Path::new(&path).is_file() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    Some(commit)
}
