//! The pip wheel (issue 31, item 3): built by maturin with binary bindings (`scripts/wheel.sh`),
//! installed offline into a fresh venv, it gives a `toolgate` command with its plugins built in
//! that runs the README's main command and `toolgate serve` for the official MCP Python client;
//! `uvx` (uv, from PyPI) runs it from the wheel file too.
//!
//! scripts/test.sh builds the wheel first, with the dev profile (`scripts/wheel.sh --profile
//! dev`, into `target/wheels`), so this test builds nothing itself.

mod anywhere;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anywhere::{
    assert_runs_the_readme_turn, build_dir, folder_with_turn, run_within, serve_listing,
};
use toolgate_e2e::{repo_path, venv_python};

/// The wheel scripts/wheel.sh built.
fn wheel() -> PathBuf {
    let (build, _) = build_dir();
    let wheels = build.parent().expect("the target folder").join("wheels");
    std::fs::read_dir(&wheels)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("toolgate-") && n.ends_with(".whl"))
        })
        .unwrap_or_else(|| {
            panic!(
                "no toolgate wheel in {}: run `bash scripts/wheel.sh --profile dev` \
                 (scripts/test.sh does) first",
                wheels.display()
            )
        })
}

/// A fresh venv in `dir` with the wheel installed by its own pip, offline; its `toolgate`.
fn installed(dir: &Path) -> PathBuf {
    let venv = dir.join("venv");
    let mut make = Command::new(venv_python());
    make.args(["-m", "venv"]).arg(&venv);
    let made = run_within(&mut make, Duration::from_secs(120));
    assert_eq!(made.code, 0, "{made:?}");
    let mut pip = Command::new(venv.join("bin/pip"));
    pip.args([
        "--disable-pip-version-check",
        "install",
        "--no-index",
        "--no-deps",
    ])
    .arg(wheel());
    let pipped = run_within(&mut pip, Duration::from_secs(300));
    assert_eq!(pipped.code, 0, "{pipped:?}");
    venv.join("bin/toolgate")
}

#[test]
fn the_wheel_installs_a_toolgate_that_runs_the_readme_turn_and_serve() {
    let dir = tempfile::tempdir().expect("a folder");
    let program = installed(dir.path());
    assert!(program.is_file(), "pip installed no {}", program.display());

    let version = anywhere::program_in(&program, dir.path(), &["--version"], &[]);
    assert_eq!(version.code, 0, "{version:?}");
    assert!(
        version
            .stdout
            .contains("built-in plugins: fs, http, sqlite"),
        "{}",
        version.stdout
    );

    let work = folder_with_turn();
    assert_runs_the_readme_turn(&program, work.path(), &[]);

    let policy = repo_path("policies/examples/agent.yaml");
    let listing = serve_listing(
        &program,
        Path::new("/"),
        &["--policy", policy.to_str().unwrap()],
    );
    assert!(listing.contains("agent.yaml"), "{listing}");
}

#[test]
fn uvx_runs_toolgate_from_the_wheel_offline() {
    let uvx = repo_path(".tools/venv/bin/uvx");
    assert!(
        uvx.is_file(),
        "{} does not exist: run `bash scripts/venv.sh` (scripts/test.sh does) first",
        uvx.display()
    );
    let cache = tempfile::tempdir().expect("a uv cache");
    let mut command = Command::new(&uvx);
    command
        .arg("--offline")
        .arg("--from")
        .arg(wheel())
        .args(["toolgate", "--version"])
        .env("UV_CACHE_DIR", cache.path())
        .env("UV_NO_CONFIG", "1");
    let run = run_within(&mut command, Duration::from_secs(300));
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.starts_with("toolgate ") && run.stdout.contains("plugin ABI: 1"),
        "{}",
        run.stdout
    );
}
